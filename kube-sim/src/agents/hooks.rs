//! The extension point through which other simulated parties decide when a running pod's containers exit.
//!
//! The hollow kubelet asks the registered hooks about every running pod on each pass, before it looks at the
//! pod's annotations and the Job default run time. Another simulated party, such as a hollow application head
//! that accepts work from a client pod, registers a hook that answers [`PodExit::KeepRunning`] for that client
//! pod until the work it submitted finishes, then [`PodExit::Exit`] with the client's exit code; the Job
//! controller then counts the pod as usual. (The `ray-sim` crate's submitter hook is one.)
//!
//! ```
//! use std::sync::Arc;
//! use kube_sim::agents::{PodExit, PodExitHook, PodHooks};
//!
//! #[derive(Debug)]
//! struct Clients;
//! impl PodExitHook for Clients {
//!     fn decide(&self, pod: &serde_json::Value) -> Option<PodExit> {
//!         let is_client = pod["metadata"]["labels"]["app.example.com/role"] == "client";
//!         is_client.then_some(PodExit::KeepRunning)
//!     }
//! }
//! let hooks = PodHooks::default();
//! hooks.register(Arc::new(Clients));
//! assert_eq!(hooks.decide(&serde_json::json!({})), None);
//! ```

use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

/// What a hook says about a running pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodExit {
    /// Keep the pod's containers running (ask again later).
    KeepRunning,
    /// The containers exit now with this code (0: the pod succeeds; otherwise it fails or crash-loops
    /// according to its `restartPolicy`).
    Exit(i32),
}

/// Decides the fate of running pods; see the module documentation.
pub trait PodExitHook: Send + Sync + std::fmt::Debug {
    /// Called for each running pod (its stored JSON) on every kubelet pass. `None` leaves the pod to the
    /// other hooks and the default rules.
    fn decide(&self, pod: &Value) -> Option<PodExit>;
}

/// A shared registry of [`PodExitHook`]s. Clones share the same registry.
#[derive(Debug, Clone, Default)]
pub struct PodHooks(Arc<RwLock<Vec<Arc<dyn PodExitHook>>>>);

impl PodHooks {
    /// Adds a hook; hooks are asked in registration order.
    pub fn register(&self, hook: Arc<dyn PodExitHook>) {
        self.0.write().push(hook);
    }

    /// Removes every hook.
    pub fn clear(&self) {
        self.0.write().clear();
    }

    /// True when no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.0.read().is_empty()
    }

    /// The first decision of a registered hook about `pod`.
    pub fn decide(&self, pod: &Value) -> Option<PodExit> {
        let hooks: Vec<Arc<dyn PodExitHook>> = self.0.read().clone();
        hooks.iter().find_map(|h| h.decide(pod))
    }
}

impl PartialEq for PodHooks {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
