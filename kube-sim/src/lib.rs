//! A simulated Kubernetes control plane over HTTP — API server, hollow scheduler, kubelet, Job
//! controller, garbage collector, fault injection — for tests, demos and benchmarks.
//!
//! Start one in-process with [`SimServer::start`]; talk to it with [`SimHandle::client`] (a real `kube::Client`)
//! or directly through [`SimHandle::store`]. See `docs/kube-sim.md` for what is simulated.
//!
//! Other simulated parties (such as a hollow application head serving an HTTP API behind a Service) plug in
//! from outside through two extension points: a [`ProxyBackend`] registered with [`SimHandle::register_proxy`]
//! answers the service proxy for the Services it targets, and an [`agents::PodExitHook`] registered in
//! [`AgentConfig::pod_hooks`] decides when running pods exit. The workspace's hollow Ray (the `ray-sim` crate)
//! is built this way.

// `ApiError` carries the whole Kubernetes `Status` (details, list metadata, Retry-After) by value because it
// is rendered on the wire as is; errors are the rare path of a simulator, so their size is not worth boxing.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

pub mod agents;
pub mod auth;
pub mod config;
pub mod crd_schema;
pub mod error;
pub mod faults;
pub mod http;
pub mod kinds;
pub mod logs;
pub mod network;
pub mod patch;
pub mod runtime;
pub mod sandbox;
pub mod scale;
pub mod select;
pub mod server;
pub mod store;
pub mod validate;
pub mod webhooks;

pub use config::{AgentConfig, SimConfig};
pub use error::ApiError;
pub use faults::FaultConfig;
pub use http::proxy::{ProxyBackend, ProxyRequest, ProxyResponse};
pub use kinds::{Gvr, ResourceInfo};
pub use logs::PodLogs;
pub use server::{SimHandle, SimServer};
pub use store::{DeleteOptions, ListOptions, PatchKind, Propagation, Store, StoredObject, WatchEvent, WatchOptions};
