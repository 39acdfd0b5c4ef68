//! Per-worker-group decisions of `reconcilePods` (docs/autoscaling.md#a-worker-groups-pass):
//! suspension, unhealthy pods, `workersToDelete`, surplus deletion and scale-up.
//!
//! The functions return decisions; the controller performs the API calls, records expectations
//! and events, and maps the outcomes to errors using the message helpers here.

use crate::multi_host::{MultiHostPlan, plan_multi_host_group};
use crate::observed::ObservedPod;
use crate::pod_health::{UnhealthyReason, should_delete_pod};
use crate::replicas::{GroupReplicas, desired_pods};
use std::collections::{BTreeSet, HashSet};

/// Lower-cased value of `ENABLE_RANDOM_POD_DELETE` that enables surplus deletion with autoscaling.
pub const ENABLE_RANDOM_POD_DELETE_TRUE: &str = "true";

/// `true` when the operator itself deletes surplus pods (`diff < 0`): always without autoscaling,
/// and with autoscaling only when `ENABLE_RANDOM_POD_DELETE` is `true` (case-insensitive).
pub fn surplus_deletion_enabled(autoscaling_enabled: bool, enable_random_pod_delete: bool) -> bool {
    !autoscaling_enabled || enable_random_pod_delete
}

/// Interpret the raw `ENABLE_RANDOM_POD_DELETE` value (read by the binary) as a flag.
pub fn random_pod_delete_flag(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case(ENABLE_RANDOM_POD_DELETE_TRUE))
}

/// The error text the pass ends with after deleting unhealthy worker pods.
pub fn unhealthy_workers_error(count: usize) -> String {
    format!("delete {count} unhealthy worker Pods")
}

/// Why a worker pod is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeletionReason {
    /// It can never run Ray again (`shouldDeletePod`).
    Unhealthy(UnhealthyReason),
    /// It is named (or, multi-host, its replica is named) in `scaleStrategy.workersToDelete`.
    WorkersToDelete,
    /// The group has more pods than desired and surplus deletion is enabled.
    Surplus,
    /// Multi-host: its replica has fewer pods than `numOfHosts`.
    IncompleteReplica,
}

/// One pod the controller should delete, with the reason for its event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDeletion {
    /// Pod name (in the cluster's namespace).
    pub name: String,
    /// Why it is deleted.
    pub reason: DeletionReason,
}

/// One worker pod to create.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewWorker {
    /// Value of the `ray.io/worker-group-replica-index` label (gate `RayMultiHostIndexing` on), or
    /// `None` when the gate is off.
    pub replica_index: Option<i32>,
}

/// Inputs of one worker group's reconcile step.
#[derive(Clone, Copy, Debug)]
pub struct WorkerGroupInput<'a> {
    /// The group's replica fields.
    pub replicas: &'a GroupReplicas,
    /// `scaleStrategy.workersToDelete` as in the spec.
    pub workers_to_delete: &'a [String],
    /// Pods listed with `ray.io/cluster=<name>,ray.io/group=<group>` (terminating ones included),
    /// in list order.
    pub pods: &'a [ObservedPod],
    /// From [`surplus_deletion_enabled`].
    pub surplus_deletion: bool,
    /// Feature gate `RayMultiHostIndexing` (default on).
    pub multi_host_indexing: bool,
    /// Most pods this step lists to create; the rest of the difference is reported as deferred. A group
    /// may ask for up to 2,147,483,647 replicas, so the list is bounded by what the caller will create
    /// this pass rather than by the spec.
    pub create_limit: usize,
}

/// Scale decision of a single-host group: `workersToDelete`, then create or delete the difference.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScalePlan {
    /// Every name in `workersToDelete`, in spec order: delete each by name (NotFound ignored, no
    /// ownership check, as in KubeRay).
    pub delete_by_name: Vec<String>,
    /// Surplus pods to delete (the first `-diff` of the remaining pods in list order).
    pub surplus: Vec<String>,
    /// Pods to create (at most the step's `create_limit`).
    pub create: Vec<NewWorker>,
    /// Pods still missing beyond `create`, left for a later step.
    pub deferred: i64,
    /// Desired pod count.
    pub desired: i64,
    /// Pods counted as running after the `workersToDelete` deletions.
    pub running: usize,
}

/// What the controller does with one worker group this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerGroupPlan {
    /// `suspend == true`: delete all pods of the group (`DeleteAllOf`), emit the suspension event.
    DeleteAll,
    /// Delete these unhealthy pods, then end the whole pass with [`unhealthy_workers_error`]
    /// (remaining groups are not reconciled, nothing is created).
    DeleteUnhealthy(Vec<PodDeletion>),
    /// Single-host scaling.
    Scale(ScalePlan),
    /// `numOfHosts > 1` with gate `RayMultiHostIndexing`: whole-replica decisions.
    MultiHost(MultiHostPlan),
}

/// Decide one worker group's step (expectations are the caller's business: skip the group while
/// they are unsatisfied).
pub fn plan_worker_group(input: &WorkerGroupInput<'_>) -> WorkerGroupPlan {
    if input.replicas.suspend {
        return WorkerGroupPlan::DeleteAll;
    }
    if input.replicas.num_of_hosts > 1 && input.multi_host_indexing {
        return WorkerGroupPlan::MultiHost(plan_multi_host_group(input));
    }
    let unhealthy: Vec<PodDeletion> = input
        .pods
        .iter()
        .filter_map(|pod| {
            should_delete_pod(pod).map(|reason| PodDeletion {
                name: pod.name.clone(),
                reason: DeletionReason::Unhealthy(reason),
            })
        })
        .collect();
    if !unhealthy.is_empty() {
        return WorkerGroupPlan::DeleteUnhealthy(unhealthy);
    }
    // KubeRay deletes each listed name; a name matching a listed pod is assumed deleted (any other
    // name is NotFound or belongs elsewhere, neither of which changes this group's count).
    let listed: HashSet<&str> = input.workers_to_delete.iter().map(String::as_str).collect();
    let running: Vec<&ObservedPod> = input
        .pods
        .iter()
        .filter(|p| !listed.contains(p.name.as_str()))
        .collect();
    let step = scale_step(
        desired_pods(input.replicas),
        &running,
        input.surplus_deletion,
        input.multi_host_indexing,
        input.create_limit,
    );
    WorkerGroupPlan::Scale(ScalePlan {
        delete_by_name: input.workers_to_delete.to_vec(),
        ..step
    })
}

/// The create-or-delete-the-difference step alone, for a controller that performed the `workersToDelete`
/// deletions itself and knows which really succeeded: `running` = listed pods minus those deleted this pass.
/// At most `create_limit` creates are listed; the rest of the difference is [`ScalePlan::deferred`].
pub fn scale_step(
    desired: i64,
    running: &[&ObservedPod],
    surplus_deletion: bool,
    multi_host_indexing: bool,
    create_limit: usize,
) -> ScalePlan {
    let count = running.len();
    let diff = desired - i64::try_from(count).unwrap_or(i64::MAX);
    let mut plan = ScalePlan {
        desired,
        running: count,
        ..ScalePlan::default()
    };
    if diff > 0 {
        let mut used: BTreeSet<i32> = running.iter().filter_map(|p| p.replica_index).collect();
        let mut next_free = free_indices(&mut used);
        let listed = usize::try_from(diff).unwrap_or(usize::MAX).min(create_limit);
        plan.create = (0..listed)
            .map(|_| NewWorker {
                replica_index: if multi_host_indexing { next_free() } else { None },
            })
            .collect();
        plan.deferred = diff - i64::try_from(listed).unwrap_or(i64::MAX);
    } else if diff < 0 && surplus_deletion {
        // KubeRay takes the first pods in list order (no age or readiness ranking).
        let surplus = usize::try_from(-diff).unwrap_or(usize::MAX);
        plan.surplus = running.iter().take(surplus).map(|p| p.name.clone()).collect();
    }
    plan
}

/// A generator of the smallest non-negative indices not in `used` (each returned index becomes used).
pub(crate) fn free_indices(used: &mut BTreeSet<i32>) -> impl FnMut() -> Option<i32> + '_ {
    let mut candidate = 0i32;
    move || {
        while used.contains(&candidate) {
            candidate = candidate.checked_add(1)?;
        }
        used.insert(candidate);
        Some(candidate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::PodPhase;

    /// KubeRay's `reconcilePods` test fixture: 5 running workers `pod1..pod5`, group `small-group`.
    fn fixture_pods() -> Vec<ObservedPod> {
        (1..=5).map(|i| ObservedPod::running(format!("pod{i}"))).collect()
    }

    fn group(replicas: i32) -> GroupReplicas {
        GroupReplicas {
            replicas: Some(replicas),
            min_replicas: Some(0),
            max_replicas: Some(10000),
            ..Default::default()
        }
    }

    /// Apply a plan to a pod list the way the controller would (deletes succeed, creates get
    /// fresh names) and return the names left.
    fn apply(pods: &[ObservedPod], plan: &WorkerGroupPlan) -> Vec<String> {
        let mut names: Vec<String> = pods.iter().map(|p| p.name.clone()).collect();
        match plan {
            WorkerGroupPlan::DeleteAll => names.clear(),
            WorkerGroupPlan::DeleteUnhealthy(dels) => names.retain(|n| !dels.iter().any(|d| &d.name == n)),
            WorkerGroupPlan::Scale(s) => {
                names.retain(|n| !s.delete_by_name.contains(n) && !s.surplus.contains(n));
                names.extend((0..s.create.len()).map(|i| format!("new{i}")));
            }
            WorkerGroupPlan::MultiHost(_) => unreachable!("single-host fixture"),
        }
        names
    }

    fn plan(replicas: i32, wtd: &[&str], pods: &[ObservedPod], surplus: bool) -> WorkerGroupPlan {
        let g = group(replicas);
        let wtd: Vec<String> = wtd.iter().map(|s| s.to_string()).collect();
        plan_worker_group(&WorkerGroupInput {
            replicas: &g,
            workers_to_delete: &wtd,
            pods,
            surplus_deletion: surplus,
            multi_host_indexing: true,
            create_limit: usize::MAX,
        })
    }

    #[test]
    fn golden_r20_workers_to_delete_with_random_delete_on() {
        let pods = fixture_pods();
        let surplus = surplus_deletion_enabled(true, random_pod_delete_flag(Some("true")));
        let cases: [(&[&str], usize); 5] = [
            (&["pod1", "pod2"], 0),
            (&["pod3", "pod4"], 0),
            (&["pod1", "pod5"], 0),
            (&["pod2", "NonExistentPod"], 1),
            (&["NonExistentPod1", "NonExistentPod2"], 2),
        ];
        for (wtd, extra) in cases {
            let p = plan(3, wtd, &pods, surplus);
            let WorkerGroupPlan::Scale(s) = &p else {
                panic!("expected scale plan, got {p:?}")
            };
            assert_eq!(s.surplus.len(), extra, "{wtd:?}");
            let left = apply(&pods, &p);
            assert_eq!(left.len(), 3, "{wtd:?}");
            assert!(
                wtd.iter().all(|n| !left.iter().any(|l| l == n)),
                "{wtd:?} left {left:?}"
            );
        }
    }

    #[test]
    fn golden_r22_autoscaling_off_honours_workers_to_delete_and_surplus() {
        let pods = fixture_pods();
        let p = plan(2, &["pod1", "pod2"], &pods, surplus_deletion_enabled(false, false));
        let left = apply(&pods, &p);
        assert_eq!(left.len(), 2);
        assert!(!left.contains(&"pod1".to_string()) && !left.contains(&"pod2".to_string()));
    }

    #[test]
    fn golden_r23_externally_deleted_pods_are_replaced() {
        let pods: Vec<ObservedPod> = fixture_pods().into_iter().skip(2).collect();
        let p = plan(3, &[], &pods, true);
        assert_eq!(apply(&pods, &p).len(), 3);
        let WorkerGroupPlan::Scale(s) = p else { panic!() };
        assert!(s.create.is_empty() && s.surplus.is_empty());
    }

    #[test]
    fn golden_r25_autoscaling_on_workers_to_delete() {
        let pods = fixture_pods();
        let p = plan(3, &["pod3", "pod4"], &pods, surplus_deletion_enabled(true, false));
        assert_eq!(apply(&pods, &p).len(), 3);
    }

    #[test]
    fn golden_r26_random_delete_env_decides_surplus() {
        let pods = fixture_pods();
        let on = plan(
            3,
            &["pod3"],
            &pods,
            surplus_deletion_enabled(true, random_pod_delete_flag(Some("true"))),
        );
        assert_eq!(apply(&pods, &on).len(), 3);
        let off = plan(
            3,
            &["pod3"],
            &pods,
            surplus_deletion_enabled(true, random_pod_delete_flag(Some("false"))),
        );
        assert_eq!(apply(&pods, &off).len(), 4);
    }

    #[test]
    fn golden_r28_terminal_pods_are_deleted_before_scaling() {
        for terminal in [PodPhase::Failed, PodPhase::Succeeded] {
            let pods = fixture_pods();
            let surplus = surplus_deletion_enabled(false, false);
            let left = apply(&pods, &plan(3, &[], &pods, surplus));
            assert_eq!(left.len(), 3);
            let mut pods: Vec<ObservedPod> = left.iter().map(ObservedPod::running).collect();
            pods[0].phase = terminal;
            let p = plan(3, &[], &pods, surplus);
            let WorkerGroupPlan::DeleteUnhealthy(dels) = &p else {
                panic!("{p:?}")
            };
            assert_eq!(dels.len(), 1);
            assert_eq!(unhealthy_workers_error(dels.len()), "delete 1 unhealthy worker Pods");
            let left = apply(&pods, &p);
            assert_eq!(left.len(), 2);
            let pods: Vec<ObservedPod> = left.iter().map(ObservedPod::running).collect();
            assert_eq!(apply(&pods, &plan(3, &[], &pods, surplus)).len(), 3);
        }
    }

    #[test]
    fn golden_r31_multi_host_gate_off_counts_pods() {
        let pods = fixture_pods();
        let run = |replicas: Option<i32>, max: i32| {
            let g = GroupReplicas {
                replicas,
                min_replicas: Some(1),
                max_replicas: Some(max),
                num_of_hosts: 4,
                suspend: false,
            };
            let p = plan_worker_group(&WorkerGroupInput {
                replicas: &g,
                workers_to_delete: &[],
                pods: &pods,
                surplus_deletion: true,
                multi_host_indexing: false,
                create_limit: usize::MAX,
            });
            apply(&pods, &p).len()
        };
        assert_eq!(run(None, 5), 4);
        assert_eq!(run(Some(0), 5), 4);
        assert_eq!(run(Some(4), 3), 12);
    }

    #[test]
    fn golden_r32_only_head_creates_replicas_times_hosts() {
        for (hosts, expected) in [(1, 1), (4, 4)] {
            let g = GroupReplicas {
                replicas: Some(1),
                num_of_hosts: hosts,
                ..Default::default()
            };
            let p = plan_worker_group(&WorkerGroupInput {
                replicas: &g,
                workers_to_delete: &[],
                pods: &[],
                surplus_deletion: true,
                multi_host_indexing: false,
                create_limit: usize::MAX,
            });
            assert_eq!(apply(&[], &p).len(), expected);
        }
    }

    #[test]
    fn golden_r35_zero_hosts_deletes_everything() {
        let pods = fixture_pods();
        let g = GroupReplicas {
            replicas: Some(3),
            num_of_hosts: 0,
            ..Default::default()
        };
        let p = plan_worker_group(&WorkerGroupInput {
            replicas: &g,
            workers_to_delete: &[],
            pods: &pods,
            surplus_deletion: true,
            multi_host_indexing: true,
            create_limit: usize::MAX,
        });
        assert!(apply(&pods, &p).is_empty());
    }

    #[test]
    fn suspended_group_deletes_all() {
        let g = GroupReplicas {
            suspend: true,
            ..group(3)
        };
        let p = plan_worker_group(&WorkerGroupInput {
            replicas: &g,
            workers_to_delete: &[],
            pods: &fixture_pods(),
            surplus_deletion: false,
            multi_host_indexing: true,
            create_limit: usize::MAX,
        });
        assert_eq!(p, WorkerGroupPlan::DeleteAll);
    }

    #[test]
    fn the_largest_replica_count_lists_only_the_create_limit() {
        // 2,147,483,647 replicas (maxReplicas defaulted to the same): the step lists 200 creates and
        // reports the rest as deferred instead of allocating two billion entries.
        let g = GroupReplicas {
            replicas: Some(i32::MAX),
            ..Default::default()
        };
        let pods = fixture_pods();
        let p = plan_worker_group(&WorkerGroupInput {
            replicas: &g,
            workers_to_delete: &[],
            pods: &pods,
            surplus_deletion: true,
            multi_host_indexing: true,
            create_limit: 200,
        });
        let WorkerGroupPlan::Scale(s) = p else { panic!() };
        assert_eq!(s.desired, i64::from(i32::MAX));
        assert_eq!(s.create.len(), 200);
        assert_eq!(s.deferred, i64::from(i32::MAX) - 5 - 200);
        assert_eq!(s.create.last().and_then(|w| w.replica_index), Some(199));
    }

    #[test]
    fn a_zero_create_limit_defers_every_create() {
        let s = scale_step(3, &[], true, true, 0);
        assert!(s.create.is_empty());
        assert_eq!(s.deferred, 3);
    }

    #[test]
    fn new_workers_fill_replica_index_holes() {
        let pods: Vec<ObservedPod> = [0, 2, 3]
            .into_iter()
            .map(|i| ObservedPod {
                replica_index: Some(i),
                ..ObservedPod::running(format!("p{i}"))
            })
            .collect();
        let p = plan(6, &[], &pods, true);
        let WorkerGroupPlan::Scale(s) = p else { panic!() };
        let indices: Vec<Option<i32>> = s.create.iter().map(|w| w.replica_index).collect();
        assert_eq!(indices, vec![Some(1), Some(4), Some(5)]);
    }

    #[test]
    fn terminating_pods_count_as_running() {
        let mut pods = fixture_pods();
        pods[0].deletion_timestamp_set = true;
        let p = plan(5, &[], &pods, true);
        let WorkerGroupPlan::Scale(s) = p else { panic!() };
        assert_eq!((s.running, s.create.len(), s.surplus.len()), (5, 0, 0));
    }

    #[test]
    fn random_pod_delete_flag_is_case_insensitive() {
        assert!(random_pod_delete_flag(Some("TRUE")));
        assert!(!random_pod_delete_flag(Some("yes")));
        assert!(!random_pod_delete_flag(None));
    }
}
