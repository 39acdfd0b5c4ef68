//! The validation the RayCluster reconcile runs before doing anything (reconcile spec §6).
//!
//! TEMPORARY: `ray_api` is getting KubeRay's full validation; until it lands this module checks
//! the rules the controller cannot work without (names, containers, replica bounds, suspension,
//! status, upgrade strategy) with KubeRay's messages. Swapping only touches this file.

use crate::conditions::{self, RAY_CLUSTER_SUSPENDED, RAY_CLUSTER_SUSPENDING};
use crate::config::FeatureGates;
use ray_api::RayCluster;
use ray_api::constants::{
    CRD_KIND_RAY_JOB, CRD_KIND_RAY_SERVICE, MAX_RAY_CLUSTER_NAME_LENGTH, RAY_ORIGINATED_FROM_CRD_LABEL,
};

const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn is_dns1035(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `ValidateRayClusterMetadata`.
pub fn validate_metadata(cluster: &RayCluster) -> Result<(), String> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_RAY_CLUSTER_NAME_LENGTH {
        return Err(format!(
            "RayCluster name should be no more than {MAX_RAY_CLUSTER_NAME_LENGTH} characters"
        ));
    }
    if !is_dns1035(name) {
        return Err(format!(
            "RayCluster name should be a valid DNS1035 label: [{DNS1035_MESSAGE}]"
        ));
    }
    Ok(())
}

fn autoscaling(cluster: &RayCluster) -> bool {
    cluster.spec.enable_in_tree_autoscaling == Some(true)
}

/// `ValidateRayClusterSpec` (subset, see module docs).
pub fn validate_spec(cluster: &RayCluster, gates: &FeatureGates) -> Result<(), String> {
    let spec = &cluster.spec;
    if spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .is_none_or(|s| s.containers.is_empty())
    {
        return Err("headGroupSpec should have at least one container".into());
    }
    for group in spec.worker_group_specs.iter().flatten() {
        let g = &group.group_name;
        if group.template.spec.as_ref().is_none_or(|s| s.containers.is_empty()) {
            return Err("workerGroupSpec should have at least one container".into());
        }
        if !autoscaling(cluster) && (group.min_replicas.is_none() || group.max_replicas.is_none()) {
            return Err(format!(
                "worker group {g} must set both minReplicas and maxReplicas when autoscaling is disabled"
            ));
        }
        if let Some(min) = group.min_replicas.filter(|m| *m < 0) {
            return Err(format!("worker group {g} has negative minReplicas {min}"));
        }
        if let Some(max) = group.max_replicas.filter(|m| *m < 0) {
            return Err(format!("worker group {g} has negative maxReplicas {max}"));
        }
        if let (Some(min), Some(max)) = (group.min_replicas, group.max_replicas)
            && min > max
        {
            return Err(format!(
                "worker group {g} has minReplicas {min} greater than maxReplicas {max}"
            ));
        }
    }
    for group in spec
        .worker_group_specs
        .iter()
        .flatten()
        .filter(|g| g.suspend == Some(true))
    {
        if !gates.ray_job_deletion_policy {
            return Err(format!(
                "worker group {} can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
                group.group_name
            ));
        }
        if autoscaling(cluster) {
            return Err(format!(
                "worker group {} cannot be suspended with Autoscaler enabled",
                group.group_name
            ));
        }
    }
    Ok(())
}

/// `ValidateRayClusterUpgradeOptions`.
pub fn validate_upgrade_options(cluster: &RayCluster) -> Result<(), String> {
    let Some(type_) = cluster.spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_ref()) else {
        return Ok(());
    };
    let value = type_.to_string();
    if value != "Recreate" && value != "None" {
        return Err(format!(
            "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {value} is invalid, valid options are Recreate or None"
        ));
    }
    let origin = cluster
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(RAY_ORIGINATED_FROM_CRD_LABEL));
    match origin.map(String::as_str) {
        Some(kind @ (CRD_KIND_RAY_JOB | CRD_KIND_RAY_SERVICE)) => Err(format!(
            "upgradeStrategy cannot be set when RayCluster is created by {kind}"
        )),
        _ => Ok(()),
    }
}

/// `ValidateRayClusterStatus`.
pub fn validate_status(cluster: &RayCluster) -> Result<(), String> {
    let conds = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    if conditions::is_true(conds, RAY_CLUSTER_SUSPENDING) && conditions::is_true(conds, RAY_CLUSTER_SUSPENDED) {
        return Err("invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true".into());
    }
    Ok(())
}
