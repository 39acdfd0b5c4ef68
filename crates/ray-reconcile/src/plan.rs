//! The pure part of a RayCluster pass: from the cluster, what was observed and the settings, decide
//! whether to reconcile at all (reconcile spec §1.2 steps 1-8) and which pod operations to run
//! (§1.5, §3), in order, with the events and errors KubeRay attaches to each outcome.
//! The executor performs the operations; nothing here talks to a server.

use crate::config::ReconcileConfig;
use crate::error::{ErrorMarker, PassError};
use crate::events::{EventSpec, action, reason};
use crate::observed::{ObservedState, PodInfo};
use crate::podgen::{self, PodGenSettings, WorkerPlacement};
use crate::status::{group_replicas, suspend_status};
use crate::{conditions, validate};
use k8s_openapi::api::core::v1::Pod;
use ray_api::RayCluster;
use ray_api::constants::{DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION, KUBERAY_CONTROLLER};
use ray_autoscale::multi_host::{incomplete_replica_error, scale_strategy_error};
use ray_autoscale::{
    DeletionReason, HeadPlan, MultiHostOutcome, NodeType, ObservedPod, WorkerGroupInput, WorkerGroupPlan,
    head_restart_disabled, plan_head, plan_worker_group, surplus_deletion_enabled,
};

/// The decision of steps 1-8.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Preflight {
    /// `spec.managedBy` names another controller: do nothing, no requeue.
    NotManaged,
    /// Validation failed: emit the event, no requeue.
    Invalid(EventSpec),
    /// The status is invalid: emit the event and retry in 2 s.
    InvalidStatus(EventSpec),
    /// Go on, after emitting these warnings.
    Proceed(Vec<EventSpec>),
}

fn ns_name(cluster: &RayCluster) -> (&str, &str) {
    (
        cluster.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Steps 1-8 of `rayClusterReconcile`.
pub fn preflight(cluster: &RayCluster, config: &ReconcileConfig) -> Preflight {
    if cluster
        .spec
        .managed_by
        .as_deref()
        .is_some_and(|m| m != KUBERAY_CONTROLLER)
    {
        return Preflight::NotManaged;
    }
    let (ns, name) = ns_name(cluster);
    if let Err(e) = validate::validate_metadata(cluster) {
        return Preflight::Invalid(EventSpec::warning(
            reason::INVALID_RAY_CLUSTER_METADATA,
            action::VALIDATE,
            format!("The RayCluster metadata is invalid {ns}/{name}: {e}"),
        ));
    }
    if let Err(e) = validate::validate_spec(cluster, &config.gates) {
        return Preflight::Invalid(EventSpec::warning(
            reason::INVALID_RAY_CLUSTER_SPEC,
            action::VALIDATE,
            format!("The RayCluster spec is invalid {ns}/{name}: {e}"),
        ));
    }
    let mut warnings = Vec::new();
    if let Some(note) = autoscaler_v1_restart_policy_warning(cluster) {
        warnings.push(EventSpec::warning(
            reason::INVALID_RAY_CLUSTER_SPEC,
            action::VALIDATE,
            format!("RayCluster spec warning {ns}/{name}: {note}"),
        ));
    }
    if let Err(e) = validate::validate_upgrade_options(cluster) {
        return Preflight::Invalid(EventSpec::warning(
            reason::INVALID_RAY_CLUSTER_SPEC,
            action::VALIDATE,
            format!("The RayCluster UpgradeStrategy is invalid {ns}/{name}: {e}"),
        ));
    }
    if let Err(e) = validate::validate_status(cluster) {
        return Preflight::InvalidStatus(EventSpec::warning(
            reason::INVALID_RAY_CLUSTER_STATUS,
            action::VALIDATE,
            format!("The RayCluster status is invalid {ns}/{name}, {e}"),
        ));
    }
    Preflight::Proceed(warnings)
}

fn autoscaler_v1_restart_policy_warning(cluster: &RayCluster) -> Option<String> {
    let spec = &cluster.spec;
    let v1 = spec
        .autoscaler_options
        .as_ref()
        .and_then(|o| o.version.as_ref())
        .is_some_and(|v| v.to_string() == "v1");
    if spec.enable_in_tree_autoscaling != Some(true) || !v1 {
        return None;
    }
    let bad: Vec<&str> = spec
        .worker_group_specs
        .iter()
        .flatten()
        .filter(|g| {
            g.template
                .spec
                .as_ref()
                .and_then(|s| s.restart_policy.as_deref())
                .is_some_and(|p| !p.is_empty() && p != "Never")
        })
        .map(|g| g.group_name.as_str())
        .collect();
    (!bad.is_empty()).then(|| {
        format!(
            "restartPolicy for worker groups [{}] should be Never or unset when using autoscaler V1",
            bad.join(", ")
        )
    })
}

/// What a pod deletion is for (decides its events and error handling).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteKind {
    /// The head pod can never run again; the note explains why.
    UnhealthyHead(String),
    /// A worker pod can never run again; the note explains why.
    UnhealthyWorker(String),
    /// Listed in `workersToDelete` (NotFound is silently ignored).
    WorkersToDelete,
    /// Surplus pod of a scale-down (NotFound still counts as deleted).
    Surplus,
    /// A multi-host replica pod; the text is the reason.
    MultiHost(String),
}

/// One pod operation, in execution order.
#[derive(Clone, Debug, PartialEq)]
pub enum PodAction {
    /// Delete every pod of the cluster (`group: None`) or of a worker group with one collection
    /// delete; `issue` is false when only terminating pods remain (the event is still emitted).
    DeleteCollection {
        /// Worker group, or all pods.
        group: Option<String>,
        /// Whether a delete call is needed.
        issue: bool,
        /// Event on success.
        ok: EventSpec,
        /// Warning reason on failure.
        fail_reason: &'static str,
        /// Error marker on failure.
        marker: ErrorMarker,
    },
    /// Delete one pod by name.
    DeletePod {
        /// Pod name.
        name: String,
        /// Expectation group (`""` = head).
        group: String,
        /// Why.
        kind: DeleteKind,
    },
    /// Create a pod.
    CreatePod {
        /// The pod.
        pod: Box<Pod>,
        /// Expectation group (`""` = head).
        group: String,
    },
}

/// The pod operations of a pass, then the error the pass ends with (if the operations succeed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodPlan {
    /// Operations, in order; the first failure ends the pass.
    pub actions: Vec<PodAction>,
    /// Error returned after all operations succeeded (e.g. `delete 2 unhealthy worker Pods`).
    pub error_after: Option<PassError>,
}

/// Group key of the head pod in expectations.
pub const HEAD_GROUP_KEY: &str = "";

/// `reconcilePods` as a plan. `random_suffix` yields 5-char suffixes for new multi-host replicas.
pub fn plan_pods(
    cluster: &RayCluster,
    observed: &ObservedState,
    config: &ReconcileConfig,
    podgen_settings: &PodGenSettings,
    random_suffix: &mut dyn FnMut() -> String,
) -> PodPlan {
    let mut plan = PodPlan::default();
    let (ns, name) = ns_name(cluster);
    let conds = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let suspend = suspend_status(conds);
    let gate = config.gates.ray_cluster_status_conditions;
    let spec_suspend = cluster.spec.suspend == Some(true);

    if suspend == Some(conditions::RAY_CLUSTER_SUSPENDING) || (!gate && spec_suspend) {
        plan.actions.push(PodAction::DeleteCollection {
            group: None,
            issue: observed.pods.iter().any(|p| !p.pod.deletion_timestamp_set),
            ok: EventSpec::normal(
                reason::DELETED_POD,
                action::DELETE,
                format!("Deleted Pods for RayCluster {ns}/{name} due to suspension"),
            ),
            fail_reason: reason::FAILED_TO_DELETE_POD_COLLECTION,
            marker: ErrorMarker::FailedDeleteAllPods,
        });
        return plan;
    }
    if gate && (suspend == Some(conditions::RAY_CLUSTER_SUSPENDED) || spec_suspend) {
        return plan;
    }

    if !observed.unsatisfied_groups.contains(HEAD_GROUP_KEY) {
        let heads: Vec<ObservedPod> = observed.heads().map(|p| p.pod.clone()).collect();
        let provisioned = conditions::is_true(conds, conditions::RAY_CLUSTER_PROVISIONED);
        let annotation = cluster
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION));
        match plan_head(
            &heads,
            provisioned,
            head_restart_disabled(annotation.map(String::as_str)),
        ) {
            HeadPlan::Keep => {}
            HeadPlan::DeleteUnhealthy { name: pod, reason: why } => {
                let note = heads
                    .first()
                    .map(|h| why.message(NodeType::Head, h))
                    .unwrap_or_default();
                plan.actions.push(PodAction::DeletePod {
                    name: pod,
                    group: HEAD_GROUP_KEY.into(),
                    kind: DeleteKind::UnhealthyHead(note.clone()),
                });
                plan.error_after = Some(PassError::plain(note));
                return plan;
            }
            HeadPlan::Create => plan.actions.push(PodAction::CreatePod {
                pod: Box::new(podgen::head_pod(cluster, podgen_settings)),
                group: HEAD_GROUP_KEY.into(),
            }),
            HeadPlan::SkipProvisioned => return plan,
            HeadPlan::TooMany { count } => {
                let names: Vec<&str> = heads.iter().map(|h| h.name.as_str()).collect();
                plan.error_after = Some(PassError::plain(format!(
                    "{count} head pods found {names:?}. Please delete extra head pods"
                )));
                return plan;
            }
        }
    }

    let autoscaling = cluster.spec.enable_in_tree_autoscaling == Some(true);
    let surplus = surplus_deletion_enabled(autoscaling, config.enable_random_pod_delete);
    for group in cluster.spec.worker_group_specs.iter().flatten() {
        let g = group.group_name.as_str();
        if observed.unsatisfied_groups.contains(g) {
            continue;
        }
        let replicas = group_replicas(group);
        let group_pods: Vec<&PodInfo> = observed.group_pods(g).collect();
        let pods: Vec<ObservedPod> = group_pods.iter().map(|p| p.pod.clone()).collect();
        let workers_to_delete: Vec<String> = group
            .scale_strategy
            .as_ref()
            .and_then(|s| s.workers_to_delete.clone())
            .unwrap_or_default();
        let input = WorkerGroupInput {
            replicas: &replicas,
            workers_to_delete: &workers_to_delete,
            pods: &pods,
            surplus_deletion: surplus,
            multi_host_indexing: config.gates.ray_multi_host_indexing,
        };
        let new_worker = |placement: WorkerPlacement| PodAction::CreatePod {
            pod: Box::new(podgen::worker_pod(cluster, group, &placement)),
            group: g.to_owned(),
        };
        match plan_worker_group(&input) {
            WorkerGroupPlan::DeleteAll => plan.actions.push(PodAction::DeleteCollection {
                group: Some(g.to_owned()),
                issue: pods.iter().any(|p| !p.deletion_timestamp_set),
                ok: EventSpec::normal(
                    reason::DELETED_WORKER_POD,
                    action::DELETE,
                    format!("Deleted all pods for suspended worker group {g} in RayCluster {ns}/{name}"),
                ),
                fail_reason: reason::FAILED_TO_DELETE_WORKER_POD_COLLECTION,
                marker: ErrorMarker::FailedDeleteWorkerPod,
            }),
            WorkerGroupPlan::DeleteUnhealthy(deletions) => {
                let count = deletions.len();
                for d in deletions {
                    let note = match (&d.reason, pods.iter().find(|p| p.name == d.name)) {
                        (DeletionReason::Unhealthy(why), Some(p)) => why.message(NodeType::Worker, p),
                        _ => String::new(),
                    };
                    plan.actions.push(PodAction::DeletePod {
                        name: d.name,
                        group: g.to_owned(),
                        kind: DeleteKind::UnhealthyWorker(note),
                    });
                }
                plan.error_after = Some(PassError::plain(ray_autoscale::worker_group::unhealthy_workers_error(
                    count,
                )));
                return plan;
            }
            WorkerGroupPlan::Scale(scale) => {
                for pod in scale.delete_by_name {
                    plan.actions.push(PodAction::DeletePod {
                        name: pod,
                        group: g.to_owned(),
                        kind: DeleteKind::WorkersToDelete,
                    });
                }
                for pod in scale.surplus {
                    plan.actions.push(PodAction::DeletePod {
                        name: pod,
                        group: g.to_owned(),
                        kind: DeleteKind::Surplus,
                    });
                }
                for w in scale.create {
                    plan.actions.push(new_worker(WorkerPlacement {
                        replica_index: w.replica_index,
                        ..Default::default()
                    }));
                }
            }
            WorkerGroupPlan::MultiHost(mh) => {
                for d in mh.deletions {
                    let why = match &d.reason {
                        DeletionReason::Unhealthy(u) => pods
                            .iter()
                            .find(|p| p.name == d.name)
                            .map(|p| u.message(NodeType::Worker, p))
                            .unwrap_or_default(),
                        DeletionReason::WorkersToDelete => "autoscaler scale-down request".into(),
                        DeletionReason::Surplus => "scaling down".into(),
                        DeletionReason::IncompleteReplica => "cleanup of incomplete multi-host group".into(),
                    };
                    plan.actions.push(PodAction::DeletePod {
                        name: d.name,
                        group: g.to_owned(),
                        kind: DeleteKind::MultiHost(why),
                    });
                }
                match mh.outcome {
                    MultiHostOutcome::IncompleteReplicaCleaned { replica_name } => {
                        plan.error_after = Some(PassError::plain(incomplete_replica_error(&replica_name)));
                        return plan;
                    }
                    MultiHostOutcome::ScaleStrategyApplied { deleted_pods } => {
                        plan.error_after = Some(PassError::plain(scale_strategy_error(deleted_pods)));
                        return plan;
                    }
                    MultiHostOutcome::Scaled { create, .. } => {
                        for replica in create {
                            let replica_name = format!("{g}-{}", random_suffix());
                            for host in 0..replica.hosts {
                                plan.actions.push(new_worker(WorkerPlacement {
                                    replica_index: Some(replica.replica_index),
                                    replica_name: Some(replica_name.clone()),
                                    host_index: Some(host),
                                }));
                            }
                        }
                    }
                }
            }
        }
    }
    plan
}
