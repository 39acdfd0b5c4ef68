//! The pure part of a RayCluster pass: from the cluster, what was observed and the settings, decide
//! whether to reconcile at all (management, validation, status checks) and which pod operations to
//! run (head, then each worker group), in order, with the events and errors KubeRay attaches to
//! each outcome. The executor performs the operations; nothing here talks to a server.

use super::error::{ErrorMarker, PassError};
use super::observed::{ObservedState, PodInfo, PodRole};
use super::podgen::{ClusterPods, PodGenSettings, WorkerPlacement};
use super::recreate::{self, RecreateDecision};
use super::rolling;
use super::status::{group_replicas, suspend_status};
use super::validate;
use crate::conditions;
use crate::config::ReconcileConfig;
use crate::events::{EventSpec, action, reason};
use k8s_openapi::api::core::v1::Pod;
use ray_api::RayCluster;
use ray_api::constants::{DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION, KUBERAY_CONTROLLER};
use ray_autoscale::multi_host::{incomplete_replica_error, scale_strategy_error};
use ray_autoscale::{
    DeletionReason, GroupReplicas, HeadPlan, MultiHostOutcome, NodeType, ObservedPod, WorkerGroupInput,
    WorkerGroupPlan, head_restart_disabled, plan_head, plan_worker_group, surplus_deletion_enabled,
};

/// Whether a pass goes on past its preflight checks.
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

/// Spec validation: mTLS requested while cert-manager's API was not discovered at start-up.
pub const TLS_REQUIRES_CERT_MANAGER: &str = "tlsOptions requires cert-manager, but cert-manager is not installed";

/// The preflight of `rayClusterReconcile`: `managedBy`, metadata / spec / upgrade-option validation
/// (with the mTLS check) and status validation, before the finalizer and the children.
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
    if config.gates.ray_cluster_mtls && crate::mtls::tls_requested(cluster) && !config.cert_manager_available {
        return Preflight::Invalid(EventSpec::warning(
            reason::INVALID_RAY_CLUSTER_SPEC,
            action::VALIDATE,
            format!("The RayCluster spec is invalid {ns}/{name}: {TLS_REQUIRES_CERT_MANAGER}"),
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
    /// An outdated pod a rolling upgrade replaces; the text is the event (NotFound still counts as deleted).
    RollingUpgrade(String),
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
        /// Warning text on failure (the API error follows after `, `).
        fail_note: String,
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
    /// Merge these annotations into a pod (failures are logged, never fail the pass).
    PatchAnnotations {
        /// Pod name.
        name: String,
        /// Annotations to set.
        annotations: std::collections::BTreeMap<String, String>,
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
    /// Worker creates beyond [`MAX_WORKER_CREATES_PER_PASS`] were left for the next pass.
    pub deferred_creates: bool,
    /// Worker creates were held back because this many of the cluster's worker pods wait for a node,
    /// the configured limit ([`ReconcileConfig::max_unscheduled_workers`]); they resume when pods get
    /// scheduled (a pod event starts the next pass).
    pub waiting_for_nodes: Option<usize>,
}

/// Most worker pods one pass builds and creates (a multi-host replica wider than what is left is still
/// created whole). A pass builds every pod it creates before the first request, so a 5,000-worker scale-up
/// in one pass held 5,000 decoded pods (about 25 KB each) at once, and the allocator kept that peak as
/// resident memory; in slices the peak stays at a few MB, and other clusters get their turn between slices.
/// The bound also reaches the replica math, so `replicas: 2147483647` lists 200 creates rather than two
/// billion. The next pass follows as soon as the watch has seen the slice.
pub const MAX_WORKER_CREATES_PER_PASS: usize = 200;

/// A pod that cannot be generated fails the pass like a failed create (KubeRay returns the
/// builder's error from `createHeadPod` / `createWorkerPod`).
fn generation_failure(marker: ErrorMarker, error: &ray_podgen::PodGenError) -> PassError {
    PassError::marked(marker, format!("{}: {error}", marker.as_str()))
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
    let mut generator = ClusterPods::new(cluster, podgen_settings);
    plan_pods_from(cluster, observed, config, &mut generator, random_suffix)
}

/// [`plan_pods`] with the pass's pod generator (the one of its
/// [`DesiredChildren`](super::desired::DesiredChildren)), so the pods come from the same build as
/// the other children.
pub fn plan_pods_from(
    cluster: &RayCluster,
    observed: &ObservedState,
    config: &ReconcileConfig,
    generator: &mut ClusterPods<'_>,
    random_suffix: &mut dyn FnMut() -> String,
) -> PodPlan {
    let mut plan = PodPlan::default();
    let mut worker_creates = 0;
    let (ns, name) = ns_name(cluster);
    let conds = conditions::cluster_conditions(cluster);
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
            fail_note: format!("Failed deleting Pods for RayCluster {ns}/{name}"),
            marker: ErrorMarker::FailedDeleteAllPods,
        });
        return plan;
    }
    if gate && (suspend == Some(conditions::RAY_CLUSTER_SUSPENDED) || spec_suspend) {
        return plan;
    }

    match recreate::decide(cluster, observed) {
        RecreateDecision::Keep => {}
        RecreateDecision::RefreshAnnotations { pod, annotations } => {
            plan.actions
                .push(PodAction::PatchAnnotations { name: pod, annotations });
        }
        RecreateDecision::Recreate => {
            plan.actions.push(PodAction::DeleteCollection {
                group: None,
                issue: observed.pods.iter().any(|p| !p.pod.deletion_timestamp_set),
                ok: EventSpec::normal(
                    reason::DELETED_POD,
                    action::DELETE,
                    format!(
                        "Deleted all Pods for RayCluster {ns}/{name} due to spec change with Recreate upgradeStrategy"
                    ),
                ),
                fail_reason: reason::FAILED_TO_DELETE_POD_COLLECTION,
                fail_note: format!(
                    "Failed deleting Pods due to spec change with Recreate upgradeStrategy for RayCluster {ns}/{name}"
                ),
                marker: ErrorMarker::FailedDeleteAllPods,
            });
            return plan;
        }
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
            HeadPlan::Create if observed.tls_block.is_some() => {
                plan.error_after = observed.tls_block.clone().map(PassError::plain);
                return plan;
            }
            HeadPlan::Create => match generator.head_pod() {
                Ok(pod) => plan.actions.push(PodAction::CreatePod {
                    pod: Box::new(pod),
                    group: HEAD_GROUP_KEY.into(),
                }),
                Err(e) => {
                    plan.error_after = Some(generation_failure(ErrorMarker::FailedCreateHeadPod, &e));
                    return plan;
                }
            },
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
    let unscheduled_limit = config.max_unscheduled_workers;
    // Pods created by earlier passes that the watch has not delivered yet count too: their groups are
    // skipped until it does, but a cluster with many groups would otherwise fill the room again from the
    // others on every pass while the watch lags.
    let awaiting_node = observed
        .pods
        .iter()
        .filter(|p| p.role == PodRole::Worker && p.awaiting_node && !p.pod.deletion_timestamp_set)
        .count()
        + observed.unobserved_worker_creates;
    // What may still be created this pass, and whether the unscheduled-pod limit (rather than the pass
    // budget) is what binds.
    let room = |worker_creates: usize| {
        let pass_room = MAX_WORKER_CREATES_PER_PASS.saturating_sub(worker_creates);
        match unscheduled_limit.map(|limit| limit.saturating_sub(awaiting_node + worker_creates)) {
            Some(limit_room) if limit_room <= pass_room => (limit_room, true),
            _ => (pass_room, false),
        }
    };
    // A rolling-update setting that fails its checks stops only the upgrade (the status reports it).
    let rollout_options = rolling::rollout_options(&cluster.spec).and_then(Result::ok);
    for (group_index, group) in cluster.spec.worker_group_specs.iter().flatten().enumerate() {
        let g = group.group_name.as_str();
        if observed.unsatisfied_groups.contains(g) {
            continue;
        }
        let mut replicas = group_replicas(group);
        let mut group_pods: Vec<&PodInfo> = observed.group_pods(g).collect();
        // The clock only changes the reported state of an upgrade, never what a pass does.
        let rollout = rollout_options
            .as_ref()
            .and_then(|o| rolling::group_step(o, group, &group_pods, config.gates.ray_multi_host_indexing, 0))
            .and_then(Result::ok);
        if let Some(step) = &rollout {
            replicas = with_surge(&replicas, step.surge, config.gates.ray_multi_host_indexing);
            // A surplus (scale-down) takes terminating pods first, then outdated ones.
            let hash = ray_podgen::hash::worker_group_hash(group);
            group_pods.sort_by_key(|p| (!p.pod.deletion_timestamp_set, !rolling::is_outdated(p, &hash)));
        }
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
            create_limit: room(worker_creates).0,
        };
        let limited_by_nodes = room(worker_creates).1;
        let defer = |plan: &mut PodPlan| {
            if limited_by_nodes {
                plan.waiting_for_nodes = Some(awaiting_node);
            } else {
                plan.deferred_creates = true;
            }
        };
        let mut new_worker = |placement: WorkerPlacement| -> Result<PodAction, PassError> {
            match generator.worker_pod(group_index, &placement) {
                Ok(pod) => Ok(PodAction::CreatePod {
                    pod: Box::new(pod),
                    group: g.to_owned(),
                }),
                Err(e) => Err(generation_failure(ErrorMarker::FailedCreateWorkerPod, &e)),
            }
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
                fail_note: format!("Failed deleting worker Pods for suspended group {g} in RayCluster {ns}/{name}"),
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
                let scale_deletes = !scale.delete_by_name.is_empty() || !scale.surplus.is_empty();
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
                if !scale_deletes && let Some(step) = &rollout {
                    push_rolling_deletes(&mut plan, step, g, ns);
                }
                if !scale.create.is_empty()
                    && let Some(block) = &observed.tls_block
                {
                    plan.error_after = Some(PassError::plain(block.clone()));
                    return plan;
                }
                if scale.deferred > 0 {
                    defer(&mut plan);
                }
                worker_creates += scale.create.len();
                for w in scale.create {
                    match new_worker(WorkerPlacement {
                        replica_index: w.replica_index,
                        ..Default::default()
                    }) {
                        Ok(a) => plan.actions.push(a),
                        Err(e) => {
                            plan.error_after = Some(e);
                            return plan;
                        }
                    }
                }
            }
            WorkerGroupPlan::MultiHost(mh) => {
                let scale_deletes = !mh.deletions.is_empty();
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
                    MultiHostOutcome::Scaled {
                        create,
                        deferred_replicas,
                        ..
                    } => {
                        if !scale_deletes && let Some(step) = &rollout {
                            push_rolling_deletes(&mut plan, step, g, ns);
                        }
                        if !create.is_empty()
                            && let Some(block) = &observed.tls_block
                        {
                            plan.error_after = Some(PassError::plain(block.clone()));
                            return plan;
                        }
                        if deferred_replicas > 0 {
                            defer(&mut plan);
                        }
                        for replica in create {
                            worker_creates += usize::try_from(replica.hosts).unwrap_or(0);
                            let replica_name = format!("{g}-{}", random_suffix());
                            for host in 0..replica.hosts {
                                match new_worker(WorkerPlacement {
                                    replica_index: Some(replica.replica_index),
                                    replica_name: Some(replica_name.clone()),
                                    host_index: Some(host),
                                }) {
                                    Ok(a) => plan.actions.push(a),
                                    Err(e) => {
                                        plan.error_after = Some(e);
                                        return plan;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    plan
}

/// The group's replica fields with `surge` replicas added to what the scale step works towards. A
/// multi-host group without replica indexing is scaled pod by pod, so it gets no surge.
fn with_surge(replicas: &GroupReplicas, surge: i64, multi_host_indexing: bool) -> GroupReplicas {
    if surge <= 0 || (replicas.num_of_hosts > 1 && !multi_host_indexing) {
        return replicas.clone();
    }
    GroupReplicas {
        replicas: Some(
            replicas
                .clamped_replicas()
                .saturating_add(i32::try_from(surge).unwrap_or(i32::MAX)),
        ),
        min_replicas: None,
        max_replicas: None,
        ..replicas.clone()
    }
}

/// Deletes the outdated replicas a rolling step chose, each pod with its event.
fn push_rolling_deletes(plan: &mut PodPlan, step: &rolling::RollingStep, group: &str, ns: &str) {
    let progress = step.progress;
    for replica in &step.delete {
        for pod in replica {
            plan.actions.push(PodAction::DeletePod {
                name: pod.clone(),
                group: group.to_owned(),
                kind: DeleteKind::RollingUpgrade(format!(
                    "Deleted outdated worker Pod {ns}/{pod} of group {group} for the rolling upgrade \
                     ({} of {} replicas updated)",
                    progress.updated, progress.desired
                )),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RayCluster {
        let yaml = r#"
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: demo, namespace: ns, uid: u-1}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - {name: ray-head, image: "rayproject/ray:2.46.0", ports: [{containerPort: 6379, name: gcs-server}]}
  workerGroupSpecs:
  - groupName: small
    replicas: 2
    minReplicas: 0
    maxReplicas: 5
    rayStartParams: {}
    template:
      spec:
        containers:
        - {name: ray-worker, image: "rayproject/ray:2.46.0"}
"#;
        ray_api::yaml::from_yaml_documents::<RayCluster>(yaml)
            .unwrap()
            .remove(0)
    }

    fn plan(cluster: &RayCluster) -> PodPlan {
        let settings = PodGenSettings::default();
        let mut suffix = || "abcde".to_owned();
        plan_pods(
            cluster,
            &ObservedState::default(),
            &ReconcileConfig::default(),
            &settings,
            &mut suffix,
        )
    }

    #[test]
    fn empty_cluster_creates_ray_podgen_pods() {
        let cluster = sample();
        let p = plan(&cluster);
        assert!(p.error_after.is_none());
        let created: Vec<(&str, &Pod)> = p
            .actions
            .iter()
            .map(|a| match a {
                PodAction::CreatePod { pod, group } => (group.as_str(), pod.as_ref()),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(created.len(), 3);
        let settings = ray_podgen::PodGenConfig::default();
        let generator = ray_podgen::PodGenerator::new(&cluster, &settings);
        assert_eq!(created[0], (HEAD_GROUP_KEY, &generator.head_pod().unwrap()));
        let worker = generator.worker_template(0).unwrap();
        for (i, (group, pod)) in created[1..].iter().enumerate() {
            assert_eq!(*group, "small");
            let expected = worker.pod(&ray_podgen::WorkerReplica::single(u32::try_from(i).unwrap()));
            assert_eq!(*pod, &expected);
        }
    }

    #[test]
    fn ungeneratable_head_fails_the_pass_like_a_create() {
        let mut cluster = sample();
        if let Some(spec) = cluster.spec.head_group_spec.template.spec.as_mut() {
            spec.containers.clear();
        }
        let p = plan(&cluster);
        assert!(p.actions.is_empty());
        let err = p.error_after.unwrap();
        assert_eq!(err.marker, Some(ErrorMarker::FailedCreateHeadPod));
        assert!(err.message.starts_with("FailedCreateHeadPod: "), "{}", err.message);
    }

    fn tls_sample() -> RayCluster {
        let mut cluster = sample();
        cluster.spec.tls_options = Some(ray_api::TlsOptions { enabled: Some(true) });
        cluster
    }

    fn mtls_config(cert_manager_available: bool) -> ReconcileConfig {
        let mut config = ReconcileConfig {
            cert_manager_available,
            ..ReconcileConfig::default()
        };
        config.gates.ray_cluster_mtls = true;
        config
    }

    #[test]
    fn r46_tls_without_cert_manager_is_an_invalid_spec() {
        let cluster = tls_sample();
        match preflight(&cluster, &mtls_config(false)) {
            Preflight::Invalid(event) => {
                assert_eq!(event.reason, reason::INVALID_RAY_CLUSTER_SPEC);
                assert_eq!(
                    event.note,
                    "The RayCluster spec is invalid ns/demo: tlsOptions requires cert-manager, but cert-manager is not installed"
                );
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
        assert_eq!(preflight(&cluster, &mtls_config(true)), Preflight::Proceed(Vec::new()));
        // TLS not requested: cert-manager does not matter.
        assert_eq!(
            preflight(&sample(), &mtls_config(false)),
            Preflight::Proceed(Vec::new())
        );
    }

    #[test]
    fn tls_block_stops_head_and_worker_creation() {
        let cluster = tls_sample();
        let settings = PodGenSettings {
            config: ray_podgen::PodGenConfig {
                feature_gates: mtls_config(true).gates,
                ..ray_podgen::PodGenConfig::default()
            },
            ..PodGenSettings::default()
        };
        let run = |observed: &ObservedState| {
            let mut suffix = || "abcde".to_owned();
            plan_pods(&cluster, observed, &mtls_config(true), &settings, &mut suffix)
        };
        let blocked = ObservedState {
            tls_block: Some("mTLS certificate ns/ray-head-cert-demo is not ready".to_owned()),
            ..ObservedState::default()
        };
        let p = run(&blocked);
        assert!(p.actions.is_empty());
        assert_eq!(
            p.error_after.unwrap().message,
            "mTLS certificate ns/ray-head-cert-demo is not ready"
        );
        // With a head already there, the workers wait too.
        let mut head_only = blocked.clone();
        head_only
            .pods
            .push(std::sync::Arc::new(crate::raycluster::observed::PodInfo {
                pod: ObservedPod::running("demo-head-x"),
                role: crate::raycluster::observed::PodRole::Head,
                group: "headgroup".to_owned(),
                pod_ip: "10.0.0.1".to_owned(),
                ready: None,
                container_problem: None,
                awaiting_node: false,
                upgrade: Default::default(),
            }));
        let p = run(&head_only);
        assert!(p.actions.is_empty(), "{:?}", p.actions);
        assert!(p.error_after.is_some());
        // Ready: head and two workers, all with the ray-tls volume.
        let p = run(&ObservedState::default());
        assert_eq!(p.actions.len(), 3);
        for a in &p.actions {
            let PodAction::CreatePod { pod, .. } = a else {
                panic!("{a:?}")
            };
            let volumes = pod.spec.as_ref().unwrap().volumes.as_ref().unwrap();
            assert!(volumes.iter().any(|v| v.name == "ray-tls"));
        }
    }

    #[test]
    fn a_large_scale_up_is_created_in_slices() {
        let creates = |cluster: &RayCluster| {
            let p = plan(cluster);
            let workers = p
                .actions
                .iter()
                .filter(|a| matches!(a, PodAction::CreatePod { group, .. } if group != HEAD_GROUP_KEY))
                .count();
            (workers, p.deferred_creates)
        };
        let mut cluster = sample();
        let group = &mut cluster.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(450);
        group.max_replicas = Some(450);
        assert_eq!(creates(&cluster), (MAX_WORKER_CREATES_PER_PASS, true));
        let group = &mut cluster.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(MAX_WORKER_CREATES_PER_PASS as i32);
        group.max_replicas = Some(MAX_WORKER_CREATES_PER_PASS as i32);
        assert_eq!(creates(&cluster), (MAX_WORKER_CREATES_PER_PASS, false));
        // The largest replica count the schema allows, maxReplicas defaulted: one slice, the rest deferred.
        let group = &mut cluster.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(i32::MAX);
        group.max_replicas = None;
        assert_eq!(creates(&cluster), (MAX_WORKER_CREATES_PER_PASS, true));
        // Multi-host replicas count against the same budget.
        let group = &mut cluster.spec.worker_group_specs.as_mut().unwrap()[0];
        group.num_of_hosts = Some(4);
        assert_eq!(creates(&cluster), (MAX_WORKER_CREATES_PER_PASS, true));
    }

    /// A `replicas` far beyond what the nodes can place: once the limit's worth of worker pods wait for a
    /// node, the pass creates no more and says so (no immediate requeue: a pod being scheduled starts the
    /// next pass); the pass budget still binds below the limit; no limit means KubeRay's behaviour.
    #[test]
    fn worker_creation_stops_while_the_limit_of_pods_wait_for_a_node() {
        let mut cluster = sample();
        let group = &mut cluster.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(i32::MAX);
        group.max_replicas = None;
        let group_name = group.group_name.clone();
        let observed = |waiting: usize, scheduled: usize| {
            let mut state = ObservedState::default();
            state.pods.push(std::sync::Arc::new(PodInfo {
                pod: ObservedPod::running("demo-head"),
                role: PodRole::Head,
                group: "headgroup".to_owned(),
                pod_ip: "10.0.0.1".to_owned(),
                ready: None,
                container_problem: None,
                awaiting_node: false,
                upgrade: Default::default(),
            }));
            for i in 0..waiting + scheduled {
                let mut pod = ObservedPod::running(format!("demo-w-{i}"));
                pod.phase = ray_autoscale::PodPhase::Pending;
                state.pods.push(std::sync::Arc::new(PodInfo {
                    pod,
                    role: PodRole::Worker,
                    group: group_name.clone(),
                    pod_ip: String::new(),
                    ready: None,
                    container_problem: None,
                    awaiting_node: i < waiting,
                    upgrade: Default::default(),
                }));
            }
            state
        };
        let run = |limit: Option<usize>, state: &ObservedState| {
            let config = ReconcileConfig {
                max_unscheduled_workers: limit,
                ..ReconcileConfig::default()
            };
            let mut suffix = || "abcde".to_owned();
            let p = plan_pods(&cluster, state, &config, &PodGenSettings::default(), &mut suffix);
            let creates = p
                .actions
                .iter()
                .filter(|a| matches!(a, PodAction::CreatePod { .. }))
                .count();
            (creates, p.deferred_creates, p.waiting_for_nodes)
        };
        // Far below the limit: the pass budget binds.
        assert_eq!(
            run(Some(1000), &observed(10, 0)),
            (MAX_WORKER_CREATES_PER_PASS, true, None)
        );
        // Near the limit: only the room left, then wait for nodes.
        assert_eq!(run(Some(1000), &observed(950, 40)), (50, false, Some(950)));
        // At the limit: nothing; scheduled pods do not count against it.
        assert_eq!(run(Some(1000), &observed(1000, 500)), (0, false, Some(1000)));
        // No limit (KubeRay): the pass budget again.
        assert_eq!(run(None, &observed(1000, 0)), (MAX_WORKER_CREATES_PER_PASS, true, None));
        // Creates the watch has not delivered yet count as waiting: 900 seen and 80 in flight leave room
        // for 20, and 900 + 100 for none.
        let in_flight = |unobserved: usize| ObservedState {
            unobserved_worker_creates: unobserved,
            ..observed(900, 0)
        };
        assert_eq!(run(Some(1000), &in_flight(80)), (20, false, Some(980)));
        assert_eq!(run(Some(1000), &in_flight(100)), (0, false, Some(1000)));
    }
}
