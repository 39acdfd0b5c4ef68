//! The RayService controller (job-service spec §2): [`plan`] holds the pure decisions of a pass
//! (cluster create / in-place update, blue/green preparation and promotion, serve config
//! submission, services, status and conditions), [`serve_api`] the dashboard serve API client and
//! [`controller`] the executor and kube-runtime controller. `NewClusterWithIncrementalUpgrade`
//! (§2.11) adds [`incremental`] (traffic / `target_capacity` steps, rollback) and [`gateway`]
//! (the Gateway API objects it writes).

pub mod controller;
pub mod gateway;
pub mod incremental;
pub mod plan;
pub mod serve_api;

pub use plan::{ClusterAction, RayServicePlanConfig, ServiceSync, StatusInputs};
