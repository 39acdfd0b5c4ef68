//! The RayService controller (behaviour: `docs/rayservice.md`), in the same shape as the RayCluster
//! and RayJob controllers:
//!
//! - [`plan`] holds the pure decisions of a pass (cluster create / in-place update, blue/green
//!   preparation and promotion, serve config submission, services, status and conditions);
//!   `NewClusterWithIncrementalUpgrade` adds [`incremental`] (traffic / `target_capacity` steps,
//!   rollback) and [`gateway`] (the Gateway API objects it writes).
//! - [`executor`] runs one pass in KubeRay's order; the I/O of its steps lives in [`cluster_sync`]
//!   (RayClusters), [`serve_sync`] (head pod serve label, serve config), [`gateway_sync`] (Gateway
//!   and HTTPRoute) and [`service_sync`] (head and serve Services), with [`serve_api`] as the
//!   dashboard serve API client.
//! - [`controller`] wires kube-runtime's `Controller` and holds the state passes share; [`error`]
//!   says why a pass failed.

pub mod cluster_sync;
pub mod controller;
pub mod error;
pub mod executor;
pub mod gateway;
pub mod gateway_sync;
pub mod incremental;
pub mod plan;
pub mod serve_api;
pub mod serve_sync;
pub mod service_sync;

pub use plan::{ClusterAction, RayServicePlanConfig, ServiceSync, StatusInputs};
