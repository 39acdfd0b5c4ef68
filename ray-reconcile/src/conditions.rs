//! apimachinery's `SetStatusCondition` / `RemoveStatusCondition` semantics, so conditions only
//! change (and `lastTransitionTime` only moves) when KubeRay's would.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Condition type: the head pod is running and ready.
pub const HEAD_POD_READY: &str = "HeadPodReady";
/// Condition type: every pod was running and ready once.
pub const RAY_CLUSTER_PROVISIONED: &str = "RayClusterProvisioned";
/// Condition type: pods are being deleted for suspension.
pub const RAY_CLUSTER_SUSPENDING: &str = ray_api::constants::RAY_CLUSTER_SUSPENDING_CONDITION;
/// Condition type: the cluster is suspended.
pub const RAY_CLUSTER_SUSPENDED: &str = ray_api::constants::RAY_CLUSTER_SUSPENDED_CONDITION;
/// Condition type: a pod create/delete failed.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// Reason: no head pod exists.
pub const REASON_HEAD_POD_NOT_FOUND: &str = "HeadPodNotFound";
/// Reason: head pod Ready without its own reason.
pub const REASON_HEAD_POD_RUNNING_AND_READY: &str = "HeadPodRunningAndReady";
/// Reason: all pods ready for the first time.
pub const REASON_ALL_POD_RUNNING_AND_READY_FIRST_TIME: &str = "AllPodRunningAndReadyFirstTime";
/// Reason: pods still provisioning.
pub const REASON_RAY_CLUSTER_PODS_PROVISIONING: &str = "RayClusterPodsProvisioning";
/// Reason of the head condition when the pod reports no Ready condition.
pub const REASON_UNKNOWN: &str = "Unknown";
/// Pod reason that gets replaced by the first failing container's reason.
pub const REASON_CONTAINERS_NOT_READY: &str = "ContainersNotReady";

/// `True`.
pub const TRUE: &str = "True";
/// `False`.
pub const FALSE: &str = "False";

/// Find a condition by type.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// A RayCluster's status conditions (none while it has no status).
pub fn cluster_conditions(cluster: &ray_api::RayCluster) -> &[Condition] {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
}

/// Whether the condition exists with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// `meta.SetStatusCondition`: add, or update in place; the transition time moves only when the
/// status flips. Reason, message and observedGeneration are overwritten.
pub fn set(conditions: &mut Vec<Condition>, type_: &str, status: &str, reason: &str, message: &str, now: &Time) {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            if existing.status != status {
                existing.status = status.to_owned();
                existing.last_transition_time = now.clone();
            }
            existing.reason = reason.to_owned();
            existing.message = message.to_owned();
            existing.observed_generation = None;
        }
        None => conditions.push(Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }),
    }
}

/// `meta.RemoveStatusCondition`.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.type_ != type_);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn transition_time_moves_only_on_status_flip() {
        let mut c = Vec::new();
        set(&mut c, HEAD_POD_READY, FALSE, "A", "m", &t(1));
        set(&mut c, HEAD_POD_READY, FALSE, "B", "n", &t(2));
        assert_eq!(c[0].last_transition_time, t(1));
        assert_eq!(c[0].reason, "B");
        set(&mut c, HEAD_POD_READY, TRUE, "C", "", &t(3));
        assert_eq!(c[0].last_transition_time, t(3));
        assert!(is_true(&c, HEAD_POD_READY));
        remove(&mut c, HEAD_POD_READY);
        assert!(c.is_empty());
    }
}
