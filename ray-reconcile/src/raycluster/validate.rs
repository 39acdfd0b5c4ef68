//! The validation the RayCluster reconcile runs before doing anything: metadata, spec, upgrade
//! options and status; a failure stops the pass with an event.
//!
//! Thin adapters over [`ray_api::validation`]: they map the controller's [`FeatureGates`] to
//! [`ValidationOptions`](validation::ValidationOptions) and return KubeRay's message verbatim, as
//! the controller puts it in events.

use crate::config::FeatureGates;
use ray_api::RayCluster;
use ray_api::validation;

/// `ValidateRayClusterMetadata`.
pub fn validate_metadata(cluster: &RayCluster) -> Result<(), String> {
    validation::validate_ray_cluster_metadata(&cluster.metadata).map_err(|e| e.message)
}

/// `ValidateRayClusterSpec`.
pub fn validate_spec(cluster: &RayCluster, gates: &FeatureGates) -> Result<(), String> {
    validation::validate_ray_cluster_spec(
        &cluster.spec,
        cluster.metadata.annotations.as_ref(),
        &gates.validation_options(),
    )
    .map_err(|e| e.message)
}

/// `ValidateRayClusterUpgradeOptions`.
pub fn validate_upgrade_options(cluster: &RayCluster) -> Result<(), String> {
    validation::validate_ray_cluster_upgrade_options(cluster).map_err(|e| e.message)
}

/// `ValidateRayClusterStatus`.
pub fn validate_status(cluster: &RayCluster) -> Result<(), String> {
    validation::validate_ray_cluster_status(cluster).map_err(|e| e.message)
}
