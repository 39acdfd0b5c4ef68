//! Hollow agents live here: nodes, scheduler, kubelet, Job controller, Volcano emulation (spec §4).
//!
//! They run in-process as tasks and act only through [`crate::store::Store`] (never HTTP), so every change they
//! make gets a resourceVersion and a watch event and passes the same validation as client writes. Their
//! settings arrive as [`crate::config::AgentConfig`] (in `SimConfig::agents`).

use crate::config::AgentConfig;
use crate::store::Store;

/// Starts the enabled agents on `store`; the server aborts the returned tasks when it stops.
/// (Placeholder until the agents are written: starts nothing.)
pub fn spawn(store: &Store, config: &AgentConfig) -> Vec<tokio::task::JoinHandle<()>> {
    let _ = (store, config);
    Vec::new()
}
