//! Multi-host worker groups (`numOfHosts > 1` with gate `RayMultiHostIndexing`,
//! docs/autoscaling.md#multi-host-groups): pods are created and deleted as whole replicas identified by the
//! `ray.io/worker-group-replica-name` label.
//!
//! KubeRay iterates replicas in Go map order; here replicas are visited in name order so the same
//! inputs always give the same decision.

use crate::observed::ObservedPod;
use crate::pod_health::should_delete_pod;
use crate::replicas::desired_replica_groups;
use crate::worker_group::{DeletionReason, PodDeletion, WorkerGroupInput, free_indices};
use std::collections::{BTreeMap, BTreeSet};

/// Error text after deleting an incomplete replica.
pub fn incomplete_replica_error(replica_name: &str) -> String {
    format!("cleaned up incomplete replica group {replica_name}, requeueing")
}

/// Error text after deleting replicas named in `workersToDelete`.
pub fn scale_strategy_error(deleted_pods: usize) -> String {
    format!("deleted {deleted_pods} worker Pods based on ScaleStrategy, requeueing")
}

/// One multi-host replica to create: `numOfHosts` pods sharing a fresh replica name
/// `<group>-<5 random chars>` (chosen by the caller), this replica index, and host indices
/// `0..hosts`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewReplica {
    /// Value of `ray.io/worker-group-replica-index` for every pod of the replica.
    pub replica_index: i32,
    /// Number of pods (hosts) to create, with `ray.io/replica-host-index` `0..hosts`.
    pub hosts: i32,
}

/// How the multi-host step ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiHostOutcome {
    /// An incomplete replica was deleted: end the pass with [`incomplete_replica_error`].
    IncompleteReplicaCleaned {
        /// Name of the replica cleaned up.
        replica_name: String,
    },
    /// Replicas named in `workersToDelete` were deleted: end the pass with [`scale_strategy_error`].
    ScaleStrategyApplied {
        /// Number of pods deleted for `workersToDelete`.
        deleted_pods: usize,
    },
    /// Scaling done: create these replicas (surplus replicas are in the deletions).
    Scaled {
        /// Replicas to create (at most `create_limit` pods' worth, and at least one replica when the
        /// limit is not zero, so a replica wider than the limit still progresses).
        create: Vec<NewReplica>,
        /// Replicas still missing beyond `create`, left for a later step.
        deferred_replicas: i64,
        /// Desired replica count (`desired pods / numOfHosts`).
        expected_replicas: i64,
        /// Replicas counted as running.
        running_replicas: usize,
    },
}

/// Multi-host decision: delete these pods (in order), then act on the outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiHostPlan {
    /// Pods to delete, in order, with their reasons.
    pub deletions: Vec<PodDeletion>,
    /// What follows the deletions.
    pub outcome: MultiHostOutcome,
}

/// Decide a multi-host group's step (the caller has already handled suspension).
pub(crate) fn plan_multi_host_group(input: &WorkerGroupInput<'_>) -> MultiHostPlan {
    let hosts = usize::try_from(input.replicas.num_of_hosts).unwrap_or(0);
    // Pods without a replica name are ignored entirely.
    let mut replicas: BTreeMap<&str, Vec<&ObservedPod>> = BTreeMap::new();
    for pod in input.pods {
        if let Some(name) = pod.replica_name.as_deref() {
            replicas.entry(name).or_default().push(pod);
        }
    }
    let replica_deletions = |pods: &[&ObservedPod], reason: &DeletionReason| -> Vec<PodDeletion> {
        pods.iter()
            .map(|p| PodDeletion {
                name: p.name.clone(),
                reason: reason.clone(),
            })
            .collect()
    };

    // 1. An incomplete replica is removed before anything else.
    if let Some((name, pods)) = replicas.iter().find(|(_, pods)| pods.len() < hosts) {
        return MultiHostPlan {
            deletions: replica_deletions(pods, &DeletionReason::IncompleteReplica),
            outcome: MultiHostOutcome::IncompleteReplicaCleaned {
                replica_name: (*name).to_string(),
            },
        };
    }

    // 2. A replica with an unhealthy pod is removed whole; the step continues.
    let mut deletions = Vec::new();
    let mut removed: BTreeSet<&str> = BTreeSet::new();
    for (name, pods) in &replicas {
        if let Some(reason) = pods.iter().find_map(|p| should_delete_pod(p)) {
            deletions.extend(replica_deletions(pods, &DeletionReason::Unhealthy(reason)));
            removed.insert(name);
        }
    }

    // 3. workersToDelete names expand to their whole replica.
    let listed: BTreeSet<&str> = input.workers_to_delete.iter().map(String::as_str).collect();
    let mut scale_strategy_pods = 0usize;
    for (name, pods) in &replicas {
        if !removed.contains(name) && pods.iter().any(|p| listed.contains(p.name.as_str())) {
            let dels = replica_deletions(pods, &DeletionReason::WorkersToDelete);
            scale_strategy_pods += dels.len();
            deletions.extend(dels);
            removed.insert(name);
        }
    }
    if scale_strategy_pods > 0 {
        return MultiHostPlan {
            deletions,
            outcome: MultiHostOutcome::ScaleStrategyApplied {
                deleted_pods: scale_strategy_pods,
            },
        };
    }

    // 4. Scale whole replicas.
    let running: Vec<(&str, &Vec<&ObservedPod>)> = replicas
        .iter()
        .filter(|(name, _)| !removed.contains(*name))
        .map(|(n, p)| (*n, p))
        .collect();
    let expected = desired_replica_groups(input.replicas);
    let diff = expected - i64::try_from(running.len()).unwrap_or(i64::MAX);
    let mut create = Vec::new();
    let mut deferred_replicas = 0;
    if diff > 0 {
        let mut used: BTreeSet<i32> = running
            .iter()
            .filter_map(|(_, pods)| pods.iter().find_map(|p| p.replica_index))
            .collect();
        let mut next_free = free_indices(&mut used);
        let hosts = usize::try_from(input.replicas.num_of_hosts.max(1)).unwrap_or(1);
        let limit = match input.create_limit {
            0 => 0,
            pods => (pods / hosts).max(1),
        };
        let listed = usize::try_from(diff).unwrap_or(usize::MAX).min(limit);
        deferred_replicas = diff - i64::try_from(listed).unwrap_or(i64::MAX);
        for _ in 0..listed {
            let Some(replica_index) = next_free() else { break };
            create.push(NewReplica {
                replica_index,
                hosts: input.replicas.num_of_hosts,
            });
        }
    } else if diff < 0 && input.surplus_deletion {
        let surplus = usize::try_from(-diff).unwrap_or(usize::MAX);
        for (_, pods) in running.iter().take(surplus) {
            deletions.extend(replica_deletions(pods, &DeletionReason::Surplus));
        }
    }
    MultiHostPlan {
        deletions,
        outcome: MultiHostOutcome::Scaled {
            create,
            deferred_replicas,
            expected_replicas: expected,
            running_replicas: running.len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::PodPhase;
    use crate::replicas::{GroupReplicas, cluster_desired_replicas, cluster_max_replicas, cluster_min_replicas};
    use crate::worker_group::{WorkerGroupPlan, plan_worker_group};

    /// A tiny simulated group: pods by name, replica naming by counter.
    struct Sim {
        pods: Vec<ObservedPod>,
        next_replica: usize,
    }

    impl Sim {
        fn step(&mut self, g: &GroupReplicas, wtd: &[String], surplus: bool) -> MultiHostOutcome {
            let plan = plan_worker_group(&WorkerGroupInput {
                replicas: g,
                workers_to_delete: wtd,
                pods: &self.pods,
                surplus_deletion: surplus,
                multi_host_indexing: true,
                create_limit: usize::MAX,
            });
            let WorkerGroupPlan::MultiHost(plan) = plan else {
                panic!("expected multi-host plan")
            };
            self.pods.retain(|p| !plan.deletions.iter().any(|d| d.name == p.name));
            if let MultiHostOutcome::Scaled { create, .. } = &plan.outcome {
                for r in create {
                    let replica_name = format!("g-{}", self.next_replica);
                    self.next_replica += 1;
                    for host in 0..r.hosts {
                        self.pods.push(ObservedPod {
                            replica_index: Some(r.replica_index),
                            replica_name: Some(replica_name.clone()),
                            host_index: Some(host),
                            ..ObservedPod::running(format!("{replica_name}-h{host}"))
                        });
                    }
                }
            }
            plan.outcome
        }

        fn indices(&self) -> BTreeMap<i32, Vec<i32>> {
            let mut m: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for p in &self.pods {
                m.entry(p.replica_index.unwrap())
                    .or_default()
                    .push(p.host_index.unwrap());
            }
            for v in m.values_mut() {
                v.sort();
            }
            m
        }
    }

    #[test]
    fn golden_r38_multi_host_replicas_scale_as_units() {
        let mut g = GroupReplicas {
            replicas: Some(3),
            min_replicas: Some(0),
            max_replicas: Some(4),
            num_of_hosts: 4,
            suspend: false,
        };
        let mut sim = Sim {
            pods: vec![],
            next_replica: 0,
        };
        sim.step(&g, &[], false);
        assert_eq!(sim.pods.len(), 12);
        let idx = sim.indices();
        assert_eq!(idx.keys().copied().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert!(idx.values().all(|hosts| hosts == &vec![0, 1, 2, 3]));
        let groups = [g.clone()];
        assert_eq!(
            (
                cluster_desired_replicas(&groups),
                cluster_min_replicas(&groups),
                cluster_max_replicas(&groups)
            ),
            (12, 0, 16)
        );

        // replicas 2 + workersToDelete naming 4 pods (one whole replica) -> 8 pods.
        g.replicas = Some(2);
        let wtd: Vec<String> = sim
            .pods
            .iter()
            .filter(|p| p.replica_index == Some(1))
            .map(|p| p.name.clone())
            .collect();
        assert_eq!(
            sim.step(&g, &wtd, false),
            MultiHostOutcome::ScaleStrategyApplied { deleted_pods: 4 }
        );
        assert_eq!(
            scale_strategy_error(4),
            "deleted 4 worker Pods based on ScaleStrategy, requeueing"
        );
        assert_eq!(sim.pods.len(), 8);
        sim.step(&g, &[], false);
        assert_eq!(sim.pods.len(), 8);

        // replicas 4 -> 16 pods, the freed index 1 is reused.
        g.replicas = Some(4);
        sim.step(&g, &[], false);
        assert_eq!(sim.pods.len(), 16);
        assert_eq!(sim.indices().keys().copied().collect::<Vec<_>>(), vec![0, 1, 2, 3]);

        // One pod deleted externally -> its replica is incomplete and cleaned, then recreated.
        let gone = sim.pods.remove(0);
        let outcome = sim.step(&g, &[], false);
        assert_eq!(
            outcome,
            MultiHostOutcome::IncompleteReplicaCleaned {
                replica_name: gone.replica_name.clone().unwrap()
            }
        );
        assert_eq!(sim.pods.len(), 12);
        sim.step(&g, &[], false);
        assert_eq!(sim.pods.len(), 16);
    }

    #[test]
    fn multi_host_creates_are_bounded_by_the_create_limit() {
        let g = GroupReplicas {
            replicas: Some(i32::MAX),
            num_of_hosts: 4,
            ..Default::default()
        };
        let scaled = |create_limit| match plan_worker_group(&WorkerGroupInput {
            replicas: &g,
            workers_to_delete: &[],
            pods: &[],
            surplus_deletion: true,
            multi_host_indexing: true,
            create_limit,
        }) {
            WorkerGroupPlan::MultiHost(MultiHostPlan {
                outcome:
                    MultiHostOutcome::Scaled {
                        create,
                        deferred_replicas,
                        ..
                    },
                ..
            }) => (create.len(), deferred_replicas),
            other => panic!("{other:?}"),
        };
        let expected = i64::from(i32::MAX);
        assert_eq!(scaled(200), (50, expected - 50));
        // A replica wider than the limit is still created whole.
        assert_eq!(scaled(3), (1, expected - 1));
        assert_eq!(scaled(0), (0, expected));
    }

    #[test]
    fn unhealthy_pod_removes_its_replica_and_scaling_continues() {
        let g = GroupReplicas {
            replicas: Some(2),
            num_of_hosts: 2,
            ..Default::default()
        };
        let mut sim = Sim {
            pods: vec![],
            next_replica: 0,
        };
        sim.step(&g, &[], true);
        sim.pods[0].phase = PodPhase::Failed;
        let outcome = sim.step(&g, &[], true);
        assert!(
            matches!(outcome, MultiHostOutcome::Scaled { ref create, running_replicas: 1, .. } if create.len() == 1)
        );
        assert_eq!(sim.pods.len(), 4);
    }

    #[test]
    fn surplus_replicas_follow_the_random_delete_rule() {
        let mut g = GroupReplicas {
            replicas: Some(3),
            num_of_hosts: 2,
            ..Default::default()
        };
        let mut sim = Sim {
            pods: vec![],
            next_replica: 0,
        };
        sim.step(&g, &[], true);
        g.replicas = Some(1);
        sim.step(&g, &[], false);
        assert_eq!(sim.pods.len(), 6, "autoscaler decides: nothing deleted");
        sim.step(&g, &[], true);
        assert_eq!(sim.pods.len(), 2);
    }

    #[test]
    fn pods_without_replica_name_are_ignored() {
        let g = GroupReplicas {
            replicas: Some(1),
            num_of_hosts: 2,
            ..Default::default()
        };
        let mut sim = Sim {
            pods: vec![ObservedPod::running("stray")],
            next_replica: 0,
        };
        sim.step(&g, &[], true);
        assert_eq!(sim.pods.len(), 3);
    }
}
