//! `upgradeStrategy.type: Recreate`: whether a pass deletes every pod of the cluster because the spec changed
//! (docs/operator.md#upgrade-strategy-recreate).
//!
//! The head pod carries, from its creation, the hash of the spec it was built from and the operator version
//! that built it. A different hash means the spec changed since; a different (non-empty) version means an
//! operator upgrade, which only refreshes the annotations so that upgrading the operator never recreates pods.

use super::observed::ObservedState;
use ray_api::constants::{KUBERAY_VERSION, KUBERAY_VERSION_ANNOTATION, UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION};
use ray_api::{RayCluster, RayClusterUpgradeType};
use std::collections::BTreeMap;

/// What the Recreate strategy decides for a pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecreateDecision {
    /// Nothing to do: another strategy, no head pod, an unmarked head or an unchanged spec.
    Keep,
    /// The head pod was created by another operator version: rewrite its annotations to this version's
    /// hash and version, and recreate nothing.
    RefreshAnnotations {
        /// The head pod.
        pod: String,
        /// The annotations to write.
        annotations: BTreeMap<String, String>,
    },
    /// The spec changed: delete every pod of the cluster.
    Recreate,
}

/// The Recreate decision for `cluster` given its pods (the spec's hash is
/// [`ray_podgen::hash::recreate_hash`], the one every head pod is stamped with).
pub fn decide(cluster: &RayCluster, observed: &ObservedState) -> RecreateDecision {
    let recreate =
        cluster.spec.upgrade_strategy.as_ref().and_then(|u| u.type_) == Some(RayClusterUpgradeType::Recreate);
    if !recreate {
        return RecreateDecision::Keep;
    }
    // Terminating head pods count: while the old head goes away the decision stays "recreate".
    let Some(head) = observed.heads().next() else {
        return RecreateDecision::Keep;
    };
    let marks = &head.upgrade;
    let expected_hash = ray_podgen::hash::recreate_hash(&cluster.spec);
    if !marks.kuberay_version.is_empty() && marks.kuberay_version != KUBERAY_VERSION {
        return RecreateDecision::RefreshAnnotations {
            pod: head.pod.name.clone(),
            annotations: [
                (UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.to_owned(), expected_hash),
                (KUBERAY_VERSION_ANNOTATION.to_owned(), KUBERAY_VERSION.to_owned()),
            ]
            .into(),
        };
    }
    if !marks.recreate_hash.is_empty() && marks.recreate_hash != expected_hash {
        return RecreateDecision::Recreate;
    }
    RecreateDecision::Keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReconcileConfig;
    use crate::events::reason;
    use crate::raycluster::observed::{PodInfo, PodRole, ReadyCondition, UpgradeMarks};
    use crate::raycluster::plan::{PodAction, plan_pods};
    use crate::raycluster::podgen::PodGenSettings;
    use crate::raycluster::test_fixtures;
    use ray_autoscale::ObservedPod;
    use std::sync::Arc;

    fn recreate_cluster() -> RayCluster {
        test_fixtures::cluster("  upgradeStrategy: {type: Recreate}\n")
    }

    fn pod(name: &str, role: PodRole, marks: UpgradeMarks, terminating: bool) -> Arc<PodInfo> {
        let mut pod = ObservedPod::running(name);
        pod.deletion_timestamp_set = terminating;
        Arc::new(PodInfo {
            pod,
            role,
            group: if role == PodRole::Head { "headgroup" } else { "small" }.to_owned(),
            pod_ip: "10.0.0.1".to_owned(),
            ready: Some(ReadyCondition {
                status: "True".to_owned(),
                ..ReadyCondition::default()
            }),
            container_problem: None,
            awaiting_node: false,
            upgrade: marks,
        })
    }

    /// A head stamped from `stamped_from` (hash and this operator's version) and one worker.
    fn running(stamped_from: &RayCluster, terminating: bool) -> ObservedState {
        let marks = UpgradeMarks {
            recreate_hash: ray_podgen::hash::recreate_hash(&stamped_from.spec),
            kuberay_version: KUBERAY_VERSION.to_owned(),
            ..UpgradeMarks::default()
        };
        ObservedState {
            pods: vec![
                pod("demo-head", PodRole::Head, marks, terminating),
                pod(
                    "demo-small-worker-a",
                    PodRole::Worker,
                    UpgradeMarks::default(),
                    terminating,
                ),
            ],
            ..ObservedState::default()
        }
    }

    fn actions(cluster: &RayCluster, observed: &ObservedState) -> Vec<PodAction> {
        let mut suffix = || "abcde".to_owned();
        let config = ReconcileConfig::default();
        plan_pods(cluster, observed, &config, &PodGenSettings::default(), &mut suffix).actions
    }

    fn edit_image(cluster: &mut RayCluster) {
        if let Some(groups) = cluster.spec.worker_group_specs.as_mut() {
            groups[0].template.spec.as_mut().unwrap().containers[0].image = Some("rayproject/ray:2.53.0".into());
        }
    }

    #[test]
    fn golden_s3_5_a_template_change_deletes_every_pod_with_kuberays_event() {
        let before = recreate_cluster();
        let mut after = before.clone();
        edit_image(&mut after);
        assert_eq!(decide(&after, &running(&before, false)), RecreateDecision::Recreate);
        let planned = actions(&after, &running(&before, false));
        let [
            PodAction::DeleteCollection {
                group: None,
                issue: true,
                ok,
                fail_reason,
                fail_note,
                ..
            },
        ] = planned.as_slice()
        else {
            panic!("{planned:?}")
        };
        assert_eq!((ok.reason, ok.action), (reason::DELETED_POD, "Delete"));
        assert_eq!(
            ok.note,
            "Deleted all Pods for RayCluster ns/demo due to spec change with Recreate upgradeStrategy"
        );
        assert_eq!(*fail_reason, reason::FAILED_TO_DELETE_POD_COLLECTION);
        assert_eq!(
            fail_note,
            "Failed deleting Pods due to spec change with Recreate upgradeStrategy for RayCluster ns/demo"
        );
        // While the old pods terminate the decision holds, but no second delete is issued.
        let planned = actions(&after, &running(&before, true));
        assert!(
            matches!(planned.as_slice(), [PodAction::DeleteCollection { issue: false, .. }]),
            "{planned:?}"
        );
    }

    #[test]
    fn golden_s3_5_scaling_workers_to_delete_and_kueue_fields_never_recreate() {
        let before = recreate_cluster();
        let mut after = before.clone();
        let group = &mut after.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(4);
        group.min_replicas = Some(0);
        group.max_replicas = Some(9);
        group.scale_strategy = Some(ray_api::ScaleStrategy {
            workers_to_delete: Some(vec!["demo-small-worker-a".into()]),
        });
        group.template.spec.as_mut().unwrap().tolerations = Some(vec![Default::default()]);
        after
            .spec
            .head_group_spec
            .template
            .spec
            .as_mut()
            .unwrap()
            .scheduling_gates = Some(vec![Default::default()]);
        assert_eq!(decide(&after, &running(&before, false)), RecreateDecision::Keep);
        assert!(
            !actions(&after, &running(&before, false))
                .iter()
                .any(|a| matches!(a, PodAction::DeleteCollection { .. })),
        );
    }

    #[test]
    fn golden_s3_5_other_strategies_and_unmarked_heads_keep_pods() {
        let before = recreate_cluster();
        let mut after = before.clone();
        edit_image(&mut after);
        for strategy in [None, Some(RayClusterUpgradeType::None)] {
            let mut other = after.clone();
            other.spec.upgrade_strategy = strategy.map(|t| ray_api::RayClusterUpgradeStrategy {
                type_: Some(t),
                rolling_update: None,
            });
            assert_eq!(decide(&other, &running(&before, false)), RecreateDecision::Keep);
        }
        // No head pod, or a head without the hash annotation: nothing to compare.
        assert_eq!(decide(&after, &ObservedState::default()), RecreateDecision::Keep);
        let mut unmarked = running(&before, false);
        unmarked.pods[0] = pod(
            "demo-head",
            PodRole::Head,
            UpgradeMarks {
                kuberay_version: KUBERAY_VERSION.to_owned(),
                ..UpgradeMarks::default()
            },
            false,
        );
        assert_eq!(decide(&after, &unmarked), RecreateDecision::Keep);
    }

    #[test]
    fn golden_s3_5_another_operator_version_refreshes_annotations_instead() {
        let before = recreate_cluster();
        let mut after = before.clone();
        edit_image(&mut after);
        let mut observed = running(&before, false);
        observed.pods[0] = pod(
            "demo-head",
            PodRole::Head,
            UpgradeMarks {
                recreate_hash: "OLD".to_owned(),
                kuberay_version: "v1.6.0".to_owned(),
                ..UpgradeMarks::default()
            },
            false,
        );
        let expected: BTreeMap<String, String> = [
            (
                UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.to_owned(),
                ray_podgen::hash::recreate_hash(&after.spec),
            ),
            (KUBERAY_VERSION_ANNOTATION.to_owned(), KUBERAY_VERSION.to_owned()),
        ]
        .into();
        assert_eq!(
            decide(&after, &observed),
            RecreateDecision::RefreshAnnotations {
                pod: "demo-head".to_owned(),
                annotations: expected.clone()
            }
        );
        let planned = actions(&after, &observed);
        assert_eq!(
            planned.first(),
            Some(&PodAction::PatchAnnotations {
                name: "demo-head".to_owned(),
                annotations: expected
            })
        );
        assert!(!planned.iter().any(|a| matches!(a, PodAction::DeleteCollection { .. })));
    }

    #[test]
    fn golden_s3_6_suspend_comes_first() {
        let before = recreate_cluster();
        let mut after = before.clone();
        edit_image(&mut after);
        after.spec.suspend = Some(true);
        // Gate RayClusterStatusConditions on: a suspended cluster's pass stops before the hash check.
        assert!(actions(&after, &running(&before, false)).is_empty());
        // Gate off: suspension deletes with its own event, never the Recreate one.
        let mut config = ReconcileConfig::default();
        config.gates.ray_cluster_status_conditions = false;
        let mut suffix = || "abcde".to_owned();
        let planned = plan_pods(
            &after,
            &running(&before, false),
            &config,
            &PodGenSettings::default(),
            &mut suffix,
        )
        .actions;
        let [PodAction::DeleteCollection { ok, .. }] = planned.as_slice() else {
            panic!("{planned:?}")
        };
        assert_eq!(ok.note, "Deleted Pods for RayCluster ns/demo due to suspension");
    }

    #[test]
    fn golden_s3_6_switching_to_recreate_after_earlier_edits_recreates() {
        let mut before = recreate_cluster();
        before.spec.upgrade_strategy = None;
        let mut after = before.clone();
        edit_image(&mut after);
        // Under no strategy the edit keeps the pods.
        assert_eq!(decide(&after, &running(&before, false)), RecreateDecision::Keep);
        // A strategy-only edit does not change the hash...
        let switched = recreate_cluster();
        assert_eq!(
            ray_podgen::hash::recreate_hash(&switched.spec),
            ray_podgen::hash::recreate_hash(&before.spec)
        );
        // ...but the head still carries the hash from before the image edit.
        let mut switched_after = switched;
        edit_image(&mut switched_after);
        assert_eq!(
            decide(&switched_after, &running(&before, false)),
            RecreateDecision::Recreate
        );
    }
}
