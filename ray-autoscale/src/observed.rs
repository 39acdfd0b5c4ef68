//! A compact view of a Ray pod as observed by the RayCluster controller: just the facts the
//! replica math needs (phase, restart policy, Ray container state, deletion, multi-host labels).

use k8s_openapi::api::core::v1::Pod;
use ray_api::constants::{
    RAY_CONTAINER_INDEX, RAY_HOST_INDEX_LABEL, RAY_WORKER_REPLICA_INDEX_LABEL, RAY_WORKER_REPLICA_NAME_LABEL,
};

/// Kubernetes pod phase (`status.phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PodPhase {
    /// `Pending`.
    Pending,
    /// `Running`.
    Running,
    /// `Succeeded` (terminal).
    Succeeded,
    /// `Failed` (terminal).
    Failed,
    /// `Unknown`, an empty phase or any unrecognised value.
    Unknown,
}

impl PodPhase {
    /// Parse a `status.phase` string; anything unrecognised (including `""`) is `Unknown`.
    pub fn parse(phase: &str) -> Self {
        match phase {
            "Pending" => Self::Pending,
            "Running" => Self::Running,
            "Succeeded" => Self::Succeeded,
            "Failed" => Self::Failed,
            _ => Self::Unknown,
        }
    }

    /// The Kubernetes spelling of the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Unknown => "Unknown",
        }
    }

    /// `Failed` or `Succeeded`: the pod will never run again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Failed | Self::Succeeded)
    }
}

/// Pod `spec.restartPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RestartPolicy {
    /// `Always`.
    Always,
    /// `OnFailure`.
    OnFailure,
    /// `Never`.
    Never,
    /// Unset (`""`) or unrecognised; Kubernetes defaults it to `Always`.
    #[default]
    Unset,
}

impl RestartPolicy {
    /// Parse a `restartPolicy` string; unknown values are `Unset`.
    pub fn parse(policy: &str) -> Self {
        match policy {
            "Always" => Self::Always,
            "OnFailure" => Self::OnFailure,
            "Never" => Self::Never,
            _ => Self::Unset,
        }
    }

    /// The Kubernetes spelling (`""` for unset).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "Always",
            Self::OnFailure => "OnFailure",
            Self::Never => "Never",
            Self::Unset => "",
        }
    }
}

/// One observed head or worker pod, reduced to what the replica math reads.
///
/// Pods are passed per group (the controller lists them by `ray.io/group`), in list order; that
/// order matters only for KubeRay's "random" surplus deletion, which takes the first pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedPod {
    /// `metadata.name`.
    pub name: String,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `spec.restartPolicy`.
    pub restart_policy: RestartPolicy,
    /// The Ray container (`spec.containers[0]`, status matched by name) has a `terminated` state.
    pub ray_container_terminated: bool,
    /// `metadata.deletionTimestamp` is set (the pod is terminating; it still counts as running).
    pub deletion_timestamp_set: bool,
    /// Label `ray.io/worker-group-replica-index`, if present and an integer.
    pub replica_index: Option<i32>,
    /// Label `ray.io/worker-group-replica-name` (multi-host groups).
    pub replica_name: Option<String>,
    /// Label `ray.io/replica-host-index` (multi-host groups).
    pub host_index: Option<i32>,
}

impl ObservedPod {
    /// A healthy `Running` pod with the given name and no labels (handy in tests and benches).
    pub fn running(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            phase: PodPhase::Running,
            restart_policy: RestartPolicy::Unset,
            ray_container_terminated: false,
            deletion_timestamp_set: false,
            replica_index: None,
            replica_name: None,
            host_index: None,
        }
    }

    /// Reduce a full Kubernetes pod to its observed facts.
    pub fn from_pod(pod: &Pod) -> Self {
        let labels = pod.metadata.labels.as_ref();
        let label = |key: &str| labels.and_then(|l| l.get(key)).cloned();
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        let ray_container_name = spec
            .and_then(|s| s.containers.get(RAY_CONTAINER_INDEX))
            .map(|c| c.name.as_str());
        let ray_container_terminated = match (ray_container_name, status) {
            (Some(name), Some(status)) => status
                .container_statuses
                .iter()
                .flatten()
                .find(|cs| cs.name == name)
                .and_then(|cs| cs.state.as_ref())
                .is_some_and(|state| state.terminated.is_some()),
            _ => false,
        };
        Self {
            name: pod.metadata.name.clone().unwrap_or_default(),
            phase: PodPhase::parse(status.and_then(|s| s.phase.as_deref()).unwrap_or_default()),
            restart_policy: RestartPolicy::parse(spec.and_then(|s| s.restart_policy.as_deref()).unwrap_or_default()),
            ray_container_terminated,
            deletion_timestamp_set: pod.metadata.deletion_timestamp.is_some(),
            replica_index: label(RAY_WORKER_REPLICA_INDEX_LABEL).and_then(|v| v.parse().ok()),
            replica_name: label(RAY_WORKER_REPLICA_NAME_LABEL),
            host_index: label(RAY_HOST_INDEX_LABEL).and_then(|v| v.parse().ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Container, ContainerState, ContainerStateTerminated, ContainerStatus, PodSpec, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use std::collections::BTreeMap;

    #[test]
    fn from_pod_reads_phase_policy_container_state_and_labels() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("w-1".into()),
                labels: Some(BTreeMap::from([
                    (RAY_WORKER_REPLICA_INDEX_LABEL.to_string(), "2".to_string()),
                    (RAY_WORKER_REPLICA_NAME_LABEL.to_string(), "g-abcde".to_string()),
                    (RAY_HOST_INDEX_LABEL.to_string(), "1".to_string()),
                ])),
                deletion_timestamp: Some(Time(Default::default())),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "ray-worker".into(),
                    ..Default::default()
                }],
                restart_policy: Some("Never".into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                container_statuses: Some(vec![
                    ContainerStatus {
                        name: "sidecar".into(),
                        ..Default::default()
                    },
                    ContainerStatus {
                        name: "ray-worker".into(),
                        state: Some(ContainerState {
                            terminated: Some(ContainerStateTerminated::default()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
        };
        let observed = ObservedPod::from_pod(&pod);
        assert_eq!(observed.name, "w-1");
        assert_eq!(observed.phase, PodPhase::Running);
        assert_eq!(observed.restart_policy, RestartPolicy::Never);
        assert!(observed.ray_container_terminated);
        assert!(observed.deletion_timestamp_set);
        assert_eq!(observed.replica_index, Some(2));
        assert_eq!(observed.replica_name.as_deref(), Some("g-abcde"));
        assert_eq!(observed.host_index, Some(1));
    }

    #[test]
    fn from_pod_without_status_is_unknown_and_not_terminated() {
        let observed = ObservedPod::from_pod(&Pod::default());
        assert_eq!(observed.phase, PodPhase::Unknown);
        assert!(!observed.ray_container_terminated);
        assert_eq!(observed.restart_policy, RestartPolicy::Unset);
    }
}
