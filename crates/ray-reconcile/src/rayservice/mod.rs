//! The RayService controller (job-service spec §2): [`plan`] holds the pure decisions of a pass
//! (cluster create / in-place update, blue/green preparation and promotion, serve config
//! submission, services, status and conditions), [`serve_api`] the dashboard serve API client and
//! [`controller`] the executor and kube-runtime controller.
//!
//! Not carried out: `NewClusterWithIncrementalUpgrade` (treated as `NewCluster` when its gate is
//! on) and rollbacks (`RollbackInProgress` is only ever set `False`, by suspension).

pub mod controller;
pub mod gateway;
pub mod incremental;
pub mod plan;
pub mod serve_api;

pub use plan::{ClusterAction, RayServicePlanConfig, ServiceSync, StatusInputs};
