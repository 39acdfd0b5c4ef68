//! Head pod decision of `reconcilePods` (docs/autoscaling.md#the-head-pod).

use crate::observed::ObservedPod;
use crate::pod_health::{UnhealthyReason, should_delete_pod};

/// Value of the `ray.io/disable-provisioned-head-restart` annotation that disables recreation.
pub const DISABLE_PROVISIONED_HEAD_RESTART_TRUE: &str = "true";

/// What the controller does with the head pod this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadPlan {
    /// Exactly one healthy head: nothing to do, continue with the worker groups.
    Keep,
    /// Exactly one head that can never run again: delete it, record a delete expectation, emit
    /// `DeletedHeadPod` and end the pass with an error (no worker work this pass).
    DeleteUnhealthy {
        /// The head pod's name.
        name: String,
        /// Why it is deleted.
        reason: UnhealthyReason,
    },
    /// No head: create one, then continue with the worker groups.
    Create,
    /// No head, cluster already provisioned and head restart disabled: reconcile neither head nor
    /// workers this pass (return without error).
    SkipProvisioned,
    /// More than one head: error `%d head pods found ...`.
    TooMany {
        /// Number of head pods found.
        count: usize,
    },
}

/// `true` when the annotation value disables head recreation (exact, case-sensitive `"true"`).
pub fn head_restart_disabled(annotation: Option<&str>) -> bool {
    annotation == Some(DISABLE_PROVISIONED_HEAD_RESTART_TRUE)
}

/// Decide the head action from the listed head pods.
///
/// `provisioned` is condition `RayClusterProvisioned == True`; `restart_disabled` comes from
/// [`head_restart_disabled`].
pub fn plan_head(heads: &[ObservedPod], provisioned: bool, restart_disabled: bool) -> HeadPlan {
    match heads {
        [] if provisioned && restart_disabled => HeadPlan::SkipProvisioned,
        [] => HeadPlan::Create,
        [head] => match should_delete_pod(head) {
            Some(reason) => HeadPlan::DeleteUnhealthy {
                name: head.name.clone(),
                reason,
            },
            None => HeadPlan::Keep,
        },
        many => HeadPlan::TooMany { count: many.len() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::{PodPhase, RestartPolicy};

    #[test]
    fn golden_r29_unhealthy_head_is_deleted_then_recreated() {
        // Pass 1: Always + Failed -> deleted (the pass errors out).
        let failed = ObservedPod {
            phase: PodPhase::Failed,
            restart_policy: RestartPolicy::Always,
            ..ObservedPod::running("headNode")
        };
        assert_eq!(
            plan_head(std::slice::from_ref(&failed), false, false),
            HeadPlan::DeleteUnhealthy {
                name: "headNode".into(),
                reason: UnhealthyReason::TerminalPhase(PodPhase::Failed)
            }
        );
        // Pass 2: the head is gone -> a new head is created.
        assert_eq!(plan_head(&[], false, false), HeadPlan::Create);
        // Never + Running + Ray container terminated -> deleted as well.
        let terminated = ObservedPod {
            restart_policy: RestartPolicy::Never,
            ray_container_terminated: true,
            ..ObservedPod::running("headNode")
        };
        assert!(matches!(
            plan_head(&[terminated], true, false),
            HeadPlan::DeleteUnhealthy { .. }
        ));
    }

    #[test]
    fn healthy_head_is_kept_and_extra_heads_are_an_error() {
        let head = ObservedPod::running("h");
        assert_eq!(plan_head(std::slice::from_ref(&head), true, true), HeadPlan::Keep);
        assert_eq!(
            plan_head(&[head.clone(), head], false, false),
            HeadPlan::TooMany { count: 2 }
        );
    }

    #[test]
    fn provisioned_cluster_with_restart_disabled_is_not_given_a_new_head() {
        assert!(head_restart_disabled(Some("true")));
        assert!(!head_restart_disabled(Some("True")));
        assert!(!head_restart_disabled(None));
        assert_eq!(plan_head(&[], true, true), HeadPlan::SkipProvisioned);
        assert_eq!(plan_head(&[], false, true), HeadPlan::Create);
        assert_eq!(plan_head(&[], true, false), HeadPlan::Create);
    }
}
