//! KubeRay's `shouldDeletePod` (docs/autoscaling.md#unhealthy-pods): which head/worker pods the operator
//! deletes because they can never run Ray again.

use crate::observed::{ObservedPod, PodPhase, RestartPolicy};
use std::fmt;

/// Why a pod is deleted as unhealthy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnhealthyReason {
    /// Phase `Failed` or `Succeeded`: the pod will never restart.
    TerminalPhase(PodPhase),
    /// Phase `Running`, Ray container terminated, `restartPolicy: Never`: it cannot restart.
    RayContainerTerminatedNoRestart,
}

/// Ray node type named in deletion messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    /// The head pod.
    Head,
    /// A worker pod.
    Worker,
}

impl fmt::Display for NodeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Head => "head",
            Self::Worker => "worker",
        })
    }
}

impl UnhealthyReason {
    /// Human-readable reason used in the `DeletedHeadPod` / `DeletedWorkerPod` event notes.
    pub fn message(&self, node_type: NodeType, pod: &ObservedPod) -> String {
        match self {
            Self::TerminalPhase(phase) => format!(
                "The {node_type} Pod {} status is {} which is a terminal state. KubeRay will delete the Pod \
                 and create new Pods in the next reconciliation if necessary.",
                pod.name,
                phase.as_str()
            ),
            Self::RayContainerTerminatedNoRestart => format!(
                "The Pod status of the {node_type} Pod {} is {}, and the Ray container terminated. The \
                 container is unable to restart due to its restart policy {}, so KubeRay will delete it.",
                pod.name,
                pod.phase.as_str(),
                pod.restart_policy.as_str()
            ),
        }
    }
}

/// Decide whether the operator deletes a pod as unhealthy; `None` keeps it.
///
/// | phase | Ray container | restartPolicy | delete |
/// |---|---|---|---|
/// | Failed / Succeeded | any | any | yes |
/// | Running | terminated | Never | yes |
/// | Running | terminated | other | no (kubelet restarts it) |
/// | anything else | | | no |
pub fn should_delete_pod(pod: &ObservedPod) -> Option<UnhealthyReason> {
    if pod.phase.is_terminal() {
        return Some(UnhealthyReason::TerminalPhase(pod.phase));
    }
    if pod.phase == PodPhase::Running && pod.ray_container_terminated && pod.restart_policy == RestartPolicy::Never {
        return Some(UnhealthyReason::RayContainerTerminatedNoRestart);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(policy: RestartPolicy, phase: PodPhase, terminated: bool) -> ObservedPod {
        ObservedPod {
            restart_policy: policy,
            phase,
            ray_container_terminated: terminated,
            ..ObservedPod::running("p")
        }
    }

    #[test]
    fn golden_r19_should_delete_pod_table() {
        use PodPhase::*;
        use RestartPolicy::*;
        let cases = [
            (Always, Failed, false, true),
            (Always, Running, false, false),
            (Always, Running, true, false),
            (Never, Failed, false, true),
            (Never, Succeeded, false, true),
            (Never, Running, false, false),
            (Never, Running, true, true),
        ];
        for (policy, phase, terminated, expected) in cases {
            assert_eq!(
                should_delete_pod(&pod(policy, phase, terminated)).is_some(),
                expected,
                "{policy:?} {phase:?} terminated={terminated}"
            );
        }
    }

    #[test]
    fn pending_and_unknown_pods_are_kept_even_when_terminated() {
        for phase in [PodPhase::Pending, PodPhase::Unknown] {
            assert_eq!(should_delete_pod(&pod(RestartPolicy::Never, phase, true)), None);
        }
    }

    #[test]
    fn reasons_name_the_pod_and_node_type() {
        let p = pod(RestartPolicy::Never, PodPhase::Failed, false);
        let reason = should_delete_pod(&p).unwrap();
        let text = reason.message(NodeType::Worker, &p);
        assert!(
            text.starts_with("The worker Pod p status is Failed which is a terminal state."),
            "{text}"
        );
        let p = pod(RestartPolicy::Never, PodPhase::Running, true);
        let text = should_delete_pod(&p).unwrap().message(NodeType::Head, &p);
        assert!(
            text.contains("head Pod p is Running") && text.contains("restart policy Never"),
            "{text}"
        );
    }
}
