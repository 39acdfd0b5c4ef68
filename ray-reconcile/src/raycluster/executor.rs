//! Carries a RayCluster pass out against the API server: builds the pass's desired children once
//! ([`desired_children`]) and hands them to [`children`] to converge, runs the pure [`plan`] for
//! the pods and performs its operations in order with KubeRay's error/event handling, records
//! scale expectations, and writes the status only when it changed.

use super::desired::desired_children;
use super::error::{ErrorMarker, PassError, ReconcileError};
use super::expectations::{EXPECTATIONS_TIMEOUT, ScaleAction, ScaleExpectations};
use super::index::{ClusterIndex, ClusterKey};
use super::observed::{ObservedState, PodInfo, ServiceInfo};
use super::plan::{self, DeleteKind, PodAction, PodPlan, Preflight};
use super::podgen::PodGenSettings;
use super::{children, gcs_ft, status, upgrade_status};
use crate::conditions;
use crate::config::ReconcileConfig;
use crate::event_filter::EventSpamFilter;
use crate::events::{EventSpec, Severity, action, reason};
use crate::fair_controller::Action;
use crate::kube_errors::{is_conflict, is_not_found};
use crate::metrics::{ClusterLabels, ControllerMetrics};
use crate::recorder::EventRecorder;
use crate::runtime_util::{backoff_delay, publish_event};
use crate::stale_status::StaleStatusGuard;
use crate::status_writer::{self, MergeShape, StatusWrite, StatusWriteError};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use ray_api::RayCluster;
use ray_api::constants::{
    CRD_KIND_RAY_CLUSTER, NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_NODE_GROUP_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{debug, info, warn};

/// Requeue after a pass that changed status or needs another look (`DefaultRequeueDuration`).
pub const SHORT_REQUEUE: Duration = Duration::from_secs(ray_api::constants::DEFAULT_REQUEUE_SECONDS);

/// Requeue after a pass that left worker creates for later (`plan::MAX_WORKER_CREATES_PER_PASS`). The watch
/// events of the slice just created usually trigger the next pass sooner; this is the fallback.
pub const DEFERRED_CREATES_REQUEUE: Duration = Duration::from_millis(200);

/// Requeue of a pass that found the cache still behind its own last status write (see
/// [`StaleStatusGuard`]). The RayCluster watch starts the next pass as soon as it delivers that write (see
/// the controller); this is the fallback should it not, so it need not be short. A pass that left worker
/// creates for later still comes back after [`DEFERRED_CREATES_REQUEUE`].
pub const STALE_CACHE_REQUEUE: Duration = SHORT_REQUEUE;

/// Requeue while a rolling worker upgrade is in progress, so a replacement that never gets ready is reported
/// once its progress deadline passes even when no pod changes.
pub const UPGRADE_CHECK_REQUEUE: Duration = Duration::from_secs(5);

/// Shared state of the RayCluster controller.
pub struct Context {
    /// API client.
    pub client: Client,
    /// Settings.
    pub config: ReconcileConfig,
    /// Object generation switches.
    pub podgen: PodGenSettings,
    /// Compact pods of every cluster.
    pub pods: ClusterIndex<PodInfo>,
    /// Compact head services of every cluster.
    pub services: ClusterIndex<ServiceInfo>,
    /// Scale expectations.
    pub expectations: ScaleExpectations,
    /// Clusters whose last status write the cache has not shown yet.
    pub stale_status: StaleStatusGuard<ClusterKey>,
    /// Event recorder (`raycluster-controller`).
    pub recorder: EventRecorder,
    /// Per-cluster event budget (client-go's spam filter), applied before the recorder.
    pub event_filter: EventSpamFilter,
    /// Metrics.
    pub metrics: Arc<ControllerMetrics>,
    /// Consecutive failures per cluster, for the error backoff.
    failures: Mutex<HashMap<ClusterKey, u32>>,
    /// Clusters whose worker creation waits for nodes and has been announced with an Event.
    waiting_for_nodes: Mutex<std::collections::HashSet<ClusterKey>>,
}

impl Context {
    /// Build a context.
    pub fn new(
        client: Client,
        config: ReconcileConfig,
        podgen: PodGenSettings,
        metrics: Arc<ControllerMetrics>,
    ) -> Self {
        let reporter = kube::runtime::events::Reporter {
            controller: crate::metrics::RAYCLUSTER_CONTROLLER.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: EventRecorder::new(client.clone(), reporter),
            event_filter: EventSpamFilter::default(),
            client,
            config,
            podgen,
            pods: ClusterIndex::default(),
            services: ClusterIndex::default(),
            expectations: ScaleExpectations::new(),
            stale_status: StaleStatusGuard::default(),
            metrics,
            failures: Mutex::default(),
            waiting_for_nodes: Mutex::default(),
        }
    }

    /// Records whether the cluster's worker creation waits for nodes; true when it starts to (the moment
    /// to say so with an Event: once per episode, so it needs no share of the spam budget).
    fn starts_waiting_for_nodes(&self, key: &ClusterKey, waiting: bool) -> bool {
        let Ok(mut clusters) = self.waiting_for_nodes.lock() else {
            return waiting;
        };
        if waiting {
            clusters.insert(key.clone())
        } else {
            clusters.remove(key);
            false
        }
    }

    /// The next backoff of a failing cluster (controller-runtime: 5 ms doubling up to 1000 s).
    pub fn backoff(&self, key: &ClusterKey) -> Duration {
        let Ok(mut failures) = self.failures.lock() else {
            return SHORT_REQUEUE;
        };
        let n = failures.entry(key.clone()).or_insert(0);
        let delay = backoff_delay(*n);
        *n = n.saturating_add(1);
        delay
    }

    fn reset_backoff(&self, key: &ClusterKey) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }

    /// Forget everything about a deleted cluster.
    pub fn forget_cluster(&self, cluster: &RayCluster) {
        let key = cluster_key(cluster);
        self.expectations.forget_cluster(&key.namespace, &key.name);
        self.reset_backoff(&key);
        self.stale_status.forget(&key);
        self.starts_waiting_for_nodes(&key, false);
        self.event_filter.forget(&event_budget_key(&key));
        self.metrics.forget_cluster(&cluster_labels(cluster));
    }

    pub(crate) async fn publish(&self, cluster: &RayCluster, event: EventSpec) {
        match event.severity {
            Severity::Normal => info!(reason = event.reason, note = %event.note, "event"),
            Severity::Warning => warn!(reason = event.reason, note = %event.note, "event"),
        }
        if !self
            .event_filter
            .allow(&event_budget_key(&cluster_key(cluster)), Instant::now())
        {
            debug!(reason = event.reason, "event budget spent; not sent to the API server");
            return;
        }
        let regarding = cluster.object_ref(&());
        publish_event(&self.recorder, &regarding, event).await;
    }

    /// Publishes an event the caller already limits to one per episode, outside the spam budget (which a
    /// large scale-up spends on `CreatedWorkerPod`).
    async fn publish_once(&self, cluster: &RayCluster, event: EventSpec) {
        match event.severity {
            Severity::Normal => info!(reason = event.reason, note = %event.note, "event"),
            Severity::Warning => warn!(reason = event.reason, note = %event.note, "event"),
        }
        publish_event(&self.recorder, &cluster.object_ref(&()), event).await;
    }

    fn observe(&self, cluster: &RayCluster, now: Instant) -> ObservedState {
        let key = cluster_key(cluster);
        let identifier = format!("{}-{}", key.name, NODE_TYPE_HEAD);
        let mut unsatisfied = std::collections::HashSet::new();
        let groups = std::iter::once(plan::HEAD_GROUP_KEY.to_owned()).chain(
            cluster
                .spec
                .worker_group_specs
                .iter()
                .flatten()
                .map(|g| g.group_name.clone()),
        );
        for group in groups {
            let exists = |name: &str| self.pods.contains(&key.namespace, name);
            if !self
                .expectations
                .is_satisfied(&key.namespace, &key.name, &group, now, exists)
            {
                unsatisfied.insert(group);
            }
        }
        // Counted before the snapshot: a pod that reaches the index in between is then counted twice, which
        // errs towards creating fewer pods, never more.
        let unobserved_worker_creates =
            self.expectations
                .unobserved_creates(&key.namespace, &key.name, plan::HEAD_GROUP_KEY, now, |name| {
                    self.pods.contains(&key.namespace, name)
                });
        // Snapshot the pods only after the expectations were checked: a pod that reached the index
        // between an earlier snapshot and the check would satisfy its create expectation while missing
        // from the snapshot, and the plan would create it a second time.
        let pods = self.pods.cluster(&key);
        ObservedState {
            pods,
            head_services: self
                .services
                .cluster(&key)
                .into_iter()
                .filter(|s| s.identifier.is_empty() || s.identifier.ends_with(&identifier))
                .collect(),
            unsatisfied_groups: unsatisfied,
            unobserved_worker_creates,
            tls_block: None,
        }
    }
}

/// Namespace and name of a cluster.
pub fn cluster_key(cluster: &RayCluster) -> ClusterKey {
    ClusterKey::new(cluster.namespace().unwrap_or_default(), cluster.name_any())
}

fn cluster_labels(cluster: &RayCluster) -> ClusterLabels {
    ClusterLabels {
        name: cluster.name_any(),
        namespace: cluster.namespace().unwrap_or_default(),
        uid: cluster.metadata.uid.clone().unwrap_or_default(),
    }
}

/// One RayCluster pass (KubeRay's `Reconcile` + `rayClusterReconcile`).
#[tracing::instrument(skip_all, fields(raycluster = %cluster.name_any(), namespace = cluster.namespace().unwrap_or_default()))]
pub async fn reconcile(cluster: Arc<RayCluster>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = Instant::now();
    let result = reconcile_inner(&cluster, &ctx).await;
    let key = cluster_key(&cluster);
    let label = match &result {
        Ok(_) => {
            ctx.reset_backoff(&key);
            "requeue_after"
        }
        Err(_) => "error",
    };
    ctx.metrics.observe_reconcile(label, started.elapsed().as_secs_f64());
    result
}

/// The spam-filter key of a cluster's events.
fn event_budget_key(key: &ClusterKey) -> String {
    format!("{}/{}", key.namespace, key.name)
}

/// What the controller does after a failed pass (`cluster` as the store keeps it: only its name is read).
pub fn error_policy<K: Resource>(cluster: Arc<K>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let key = ClusterKey::new(cluster.namespace().unwrap_or_default(), cluster.name_any());
    let delay = ctx.backoff(&key);
    if matches!(error, ReconcileError::Kube(e) if is_conflict(e)) {
        // Expected while the cache is behind the cluster's last write; the backoff waits it out.
        debug!(raycluster = %key.name, error = %error, retry_in = ?delay, "status write conflicted; retrying");
    } else {
        warn!(raycluster = %key.name, error = %error, retry_in = ?delay, "reconcile failed");
    }
    Action::requeue(delay)
}

async fn reconcile_inner(cluster: &RayCluster, ctx: &Context) -> Result<Action, ReconcileError> {
    let await_change = Action::await_change();
    match plan::preflight(cluster, &ctx.config) {
        Preflight::NotManaged => return Ok(await_change),
        Preflight::Invalid(event) => {
            ctx.publish(cluster, event).await;
            return Ok(await_change);
        }
        Preflight::InvalidStatus(event) => {
            let note = event.note.clone();
            ctx.publish(cluster, event).await;
            return Err(PassError::plain(note).into());
        }
        Preflight::Proceed(warnings) => {
            for w in warnings {
                ctx.publish(cluster, w).await;
            }
        }
    }

    if let Some(action) = gcs_ft::reconcile_finalizer(cluster, ctx).await? {
        return Ok(action);
    }
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(await_change);
    }

    let mut desired = desired_children(cluster, &ctx.podgen, &ctx.config);
    let mut pass_error = children::reconcile(cluster, ctx, &desired).await.err();
    let mut deferred_creates = false;
    // Worker creation waits at the unscheduled-pod limit and counts creates the watch has not delivered yet.
    let mut limit_counts_unobserved_creates = false;
    if pass_error.is_none() {
        let mut observed = ctx.observe(cluster, Instant::now());
        if ctx.config.gates.ray_cluster_mtls && crate::mtls::tls_requested(cluster) {
            observed.tls_block = crate::mtls::readiness::check(&ctx.client, cluster).await.err();
        }
        let mut suffix = random_suffix_source();
        let pod_plan = plan::plan_pods_from(cluster, &observed, &ctx.config, &mut desired.pods, &mut suffix);
        deferred_creates = pod_plan.deferred_creates;
        let waiting_for_nodes = pod_plan.waiting_for_nodes;
        limit_counts_unobserved_creates = waiting_for_nodes.is_some() && observed.unobserved_worker_creates > 0;
        pass_error = execute_pod_plan(cluster, ctx, pod_plan).await;
        let starts_waiting = ctx.starts_waiting_for_nodes(&cluster_key(cluster), waiting_for_nodes.is_some());
        if let (true, Some(waiting), Some(limit)) =
            (starts_waiting, waiting_for_nodes, ctx.config.max_unscheduled_workers)
        {
            ctx.publish_once(cluster, waiting_for_nodes_event(cluster, waiting, limit))
                .await;
        }
    }

    let key = cluster_key(cluster);
    if ctx
        .stale_status
        .cache_is_behind(&key, cluster.metadata.resource_version.as_deref())
    {
        // This copy predates the pass's own last status write: a status computed from it would conflict,
        // and its transitions were already acted on. A later pass, from a newer copy, does the status.
        debug!("the cache has not shown the last status write yet; status left to a later pass");
        if let Some(e) = pass_error {
            return Err(e.into());
        }
        let outcome = PassOutcome {
            deferred_creates,
            limit_counts_unobserved_creates,
            ..PassOutcome::default()
        };
        let requeue = requeue_after(&outcome, ctx.config.default_requeue)
            .map_or(STALE_CACHE_REQUEUE, |d| d.min(STALE_CACHE_REQUEUE));
        return Ok(Action::requeue(requeue));
    }
    let observed = ctx.observe(cluster, Instant::now());
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let mut inconsistent = false;
    let mut upgrading = false;
    let calc = status::calculate_status(cluster, &observed, pass_error.as_ref(), &ctx.config.gates, &now);
    let calc_error = match calc {
        Ok(new_status) => {
            let old_conditions = conditions::cluster_conditions(cluster);
            let new_conditions = new_status.conditions.as_deref().unwrap_or_default();
            if let Some(event) = upgrade_status::transition_event(old_conditions, new_conditions, cluster) {
                ctx.publish_once(cluster, event).await;
            }
            upgrading = conditions::find(new_conditions, upgrade_status::WORKER_UPGRADE_IN_PROGRESS)
                .is_some_and(|c| c.status == conditions::TRUE);
            if status::status_changed(cluster.status.as_ref(), &new_status) {
                // A 409 (the pass read the cluster before a newer write reached the cache) goes to the error
                // policy: the status is computed again from a newer copy rather than written over that write.
                let written = write_status(cluster, ctx, &new_status).await?;
                ctx.stale_status
                    .wrote(key, cluster.metadata.resource_version.as_deref(), written.as_deref());
                inconsistent = true;
                record_provisioned(cluster, ctx, &new_status, &now);
            }
            None
        }
        Err(e) => Some(e),
    };
    if let Some(e) = pass_error.or(calc_error) {
        return Err(e.into());
    }
    let outcome = PassOutcome {
        deferred_creates,
        status_written: inconsistent,
        upgrading,
        limit_counts_unobserved_creates,
    };
    Ok(requeue_after(&outcome, ctx.config.default_requeue).map_or(await_change, Action::requeue))
}

/// What a finished pass found that decides when it runs again.
#[derive(Clone, Copy, Debug, Default)]
struct PassOutcome {
    /// Worker creates were left for a later pass.
    deferred_creates: bool,
    /// The status was written.
    status_written: bool,
    /// A rolling worker upgrade is in progress.
    upgrading: bool,
    /// Worker creation waits at the unscheduled-pod limit, and creates the watch has not delivered count.
    limit_counts_unobserved_creates: bool,
}

/// When a pass that went through runs again without a change (None: only on a change).
fn requeue_after(outcome: &PassOutcome, default_requeue: Option<Duration>) -> Option<Duration> {
    if outcome.deferred_creates {
        return Some(DEFERRED_CREATES_REQUEUE);
    }
    if outcome.status_written {
        return Some(SHORT_REQUEUE);
    }
    if outcome.upgrading {
        return Some(UPGRADE_CHECK_REQUEUE);
    }
    if outcome.limit_counts_unobserved_creates {
        // A create whose pod never reaches the watch stops counting when its expectation times out, and no
        // pod event may come to say so: look again then, not only at the default requeue.
        return Some(default_requeue.map_or(EXPECTATIONS_TIMEOUT, |d| d.min(EXPECTATIONS_TIMEOUT)));
    }
    default_requeue
}

/// The Warning that worker creation waits for pods to be scheduled, sent when the wait starts.
fn waiting_for_nodes_event(cluster: &RayCluster, waiting: usize, limit: usize) -> EventSpec {
    let (ns, name) = (cluster.namespace().unwrap_or_default(), cluster.name_any());
    tracing::debug!(waiting, limit, "worker creation waits for nodes");
    EventSpec::warning(
        reason::WAITING_FOR_NODES,
        action::CREATE,
        format!(
            "Creating no more worker Pods for RayCluster {ns}/{name}: {limit} or more of its worker Pods wait for a \
             node (--max-unscheduled-worker-pods={limit}); creation resumes as they are scheduled"
        ),
    )
}

fn record_provisioned(cluster: &RayCluster, ctx: &Context, new: &ray_api::RayClusterStatus, now: &Time) {
    let was = conditions::is_true(
        conditions::cluster_conditions(cluster),
        conditions::RAY_CLUSTER_PROVISIONED,
    );
    let is = new
        .conditions
        .as_deref()
        .is_some_and(|c| conditions::is_true(c, conditions::RAY_CLUSTER_PROVISIONED));
    let labels = cluster_labels(cluster);
    let owner = cluster
        .labels()
        .get(RAY_ORIGINATED_FROM_CRD_LABEL)
        .cloned()
        .unwrap_or_else(|| CRD_KIND_RAY_CLUSTER.to_owned());
    ctx.metrics.observe_cluster(&labels, &owner, is);
    if is
        && !was
        && let Some(created) = &cluster.metadata.creation_timestamp
    {
        let seconds = now.0.duration_since(created.0).as_secs_f64();
        ctx.metrics.observe_provisioned(&labels, seconds.max(0.0));
    }
}

/// Writes the cluster's new status: a merge patch of only what changed, conditional on the version read
/// (409 Conflict when the cluster changed since).
async fn write_status(
    cluster: &RayCluster,
    ctx: &Context,
    new: &ray_api::RayClusterStatus,
) -> Result<Option<String>, StatusWriteError> {
    let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    status_writer::write_status(&api, cluster, new, StatusWrite::Merge(MergeShape::Changes)).await
}

fn random_suffix_source() -> impl FnMut() -> String {
    use std::hash::{BuildHasher, Hasher};
    let state = std::collections::hash_map::RandomState::new();
    let alphabet = ray_api::constants::RANDOM_SUFFIX_ALPHABET.as_bytes();
    let mut counter = 0u64;
    move || {
        (0..ray_api::constants::RANDOM_SUFFIX_LENGTH)
            .map(|_| {
                let mut h = state.build_hasher();
                h.write_u64(counter);
                counter = counter.wrapping_add(1);
                let i = usize::try_from(h.finish() % alphabet.len() as u64).unwrap_or(0);
                char::from(alphabet[i])
            })
            .collect()
    }
}

fn pass_failure(marker: ErrorMarker, text: String) -> PassError {
    PassError::marked(marker, format!("{}: {text}", marker.as_str()))
}

/// Run a pod plan; the first failing operation ends it.
pub async fn execute_pod_plan(cluster: &RayCluster, ctx: &Context, pod_plan: PodPlan) -> Option<PassError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &cluster_key(cluster).namespace);
    let mut actions = pod_plan.actions.into_iter().peekable();
    while let Some(step) = actions.next() {
        let done = match step {
            PodAction::DeleteCollection {
                group,
                issue,
                ok,
                fail_reason,
                fail_note,
                marker,
            } => {
                let failure = PodFailure {
                    fail_reason,
                    fail_note,
                    marker,
                };
                delete_pod_collection(cluster, ctx, &pods, group, issue, ok, failure).await
            }
            PodAction::DeletePod { name, group, kind } => delete_pod(cluster, ctx, &pods, name, group, kind).await,
            PodAction::PatchAnnotations { name, annotations } => {
                let patch = serde_json::json!({"metadata": {"annotations": annotations}});
                if let Err(e) = pods.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                    warn!(pod = %name, error = %e, "failed to refresh the upgrade annotations");
                }
                Ok(())
            }
            PodAction::CreatePod { pod, group } => {
                // Consecutive creates go out together, in slow-start batches.
                let mut batch = vec![(pod, group)];
                while matches!(actions.peek(), Some(PodAction::CreatePod { .. })) {
                    if let Some(PodAction::CreatePod { pod, group }) = actions.next() {
                        batch.push((pod, group));
                    }
                }
                create_pods_slow_start(cluster, ctx, &pods, batch)
                    .await
                    .map_or(Ok(()), Err)
            }
        };
        if let Err(error) = done {
            return Some(error);
        }
    }
    pod_plan.error_after
}

/// The event and `ReplicaFailure` marker of a failed pod collection delete.
struct PodFailure {
    fail_reason: &'static str,
    fail_note: String,
    marker: ErrorMarker,
}

/// Deletes the pods of the cluster, or of one suspended worker `group` (only when `issue`: some
/// are not terminating yet), then publishes `ok`. Deleting all pods forgets the cluster's scale
/// expectations.
async fn delete_pod_collection(
    cluster: &RayCluster,
    ctx: &Context,
    pods: &Api<Pod>,
    group: Option<String>,
    issue: bool,
    ok: EventSpec,
    failure: PodFailure,
) -> Result<(), PassError> {
    let key = cluster_key(cluster);
    let (ns, name) = (key.namespace.as_str(), key.name.as_str());
    if issue {
        let mut selector = format!("{RAY_CLUSTER_LABEL}={name}");
        if let Some(g) = &group {
            selector.push_str(&format!(",{RAY_NODE_GROUP_LABEL}={g}"));
        }
        let params = ListParams::default().labels(&selector);
        if let Err(e) = pods.delete_collection(&DeleteParams::default(), &params).await {
            let note = format!("{}, {e}", failure.fail_note);
            ctx.publish(
                cluster,
                EventSpec::warning(failure.fail_reason, action::DELETE, note.clone()),
            )
            .await;
            return Err(pass_failure(failure.marker, note));
        }
    }
    if group.is_none() {
        ctx.expectations.forget_cluster(ns, name);
    }
    ctx.publish(cluster, ok).await;
    Ok(())
}

/// Deletes one pod with KubeRay's events for `kind` and records the delete expectation. A pod
/// already gone counts as deleted for surplus and multi-host deletes only.
async fn delete_pod(
    cluster: &RayCluster,
    ctx: &Context,
    pods: &Api<Pod>,
    pod: String,
    group: String,
    kind: DeleteKind,
) -> Result<(), PassError> {
    let key = cluster_key(cluster);
    let (ns, name) = (key.namespace.as_str(), key.name.as_str());
    let result = pods.delete(&pod, &DeleteParams::default()).await;
    let (ok_reason, fail_reason, marker) = match &kind {
        DeleteKind::UnhealthyHead(_) => (
            reason::DELETED_HEAD_POD,
            reason::FAILED_TO_DELETE_HEAD_POD,
            ErrorMarker::FailedDeleteHeadPod,
        ),
        _ => (
            reason::DELETED_WORKER_POD,
            reason::FAILED_TO_DELETE_WORKER_POD,
            ErrorMarker::FailedDeleteWorkerPod,
        ),
    };
    let ok_note = match &kind {
        DeleteKind::UnhealthyHead(n) | DeleteKind::UnhealthyWorker(n) => n.clone(),
        DeleteKind::WorkersToDelete => format!("Deleted pod {ns}/{pod}"),
        DeleteKind::Surplus => format!("Deleted Pod {ns}/{pod}"),
        DeleteKind::MultiHost(why) => format!("Deleted worker Pod {ns}/{pod} for group {group}: {why}"),
        DeleteKind::RollingUpgrade(note) => note.clone(),
    };
    let deleted = match result {
        Ok(_) => true,
        Err(e) if is_not_found(&e) => matches!(
            kind,
            DeleteKind::Surplus | DeleteKind::MultiHost(_) | DeleteKind::RollingUpgrade(_)
        ),
        Err(e) => {
            let note = match &kind {
                DeleteKind::UnhealthyHead(_) => format!("Failed deleting head Pod {ns}/{pod}, {e}"),
                DeleteKind::UnhealthyWorker(_) => format!("Failed deleting worker Pod {ns}/{pod}, {e}"),
                DeleteKind::WorkersToDelete => format!("Failed deleting pod {ns}/{pod}, {e}"),
                DeleteKind::Surplus | DeleteKind::MultiHost(_) | DeleteKind::RollingUpgrade(_) => {
                    format!("Failed deleting Pod {ns}/{pod}, {e}")
                }
            };
            ctx.publish(cluster, EventSpec::warning(fail_reason, action::DELETE, note.clone()))
                .await;
            return Err(pass_failure(marker, note));
        }
    };
    if deleted {
        ctx.expectations
            .expect(ns, name, &group, &pod, ScaleAction::Delete, Instant::now());
        ctx.publish(cluster, EventSpec::normal(ok_reason, action::DELETE, ok_note))
            .await;
    }
    Ok(())
}

/// Most pod creates a pass has in flight at once.
pub const MAX_CONCURRENT_POD_CREATES: usize = 32;

/// Creates `batch` in slow-start rounds of 1, 2, 4, … concurrent requests, the way Kubernetes' ReplicaSet
/// controller does, then as a sliding window of [`MAX_CONCURRENT_POD_CREATES`]: a large scale-up is not
/// serialized on the round-trip time, and a systematic failure (quota, admission) costs one request, not
/// thousands. Stops after the first round with a failure and returns that failure.
async fn create_pods_slow_start(
    cluster: &RayCluster,
    ctx: &Context,
    pods: &Api<Pod>,
    batch: Vec<(Box<Pod>, String)>,
) -> Option<PassError> {
    let mut remaining = batch.into_iter();
    let mut round = 1;
    loop {
        let this_round: Vec<(Box<Pod>, String)> = remaining.by_ref().take(round).collect();
        if this_round.is_empty() {
            return None;
        }
        let results = futures::future::join_all(
            this_round
                .into_iter()
                .map(|(pod, group)| create_pod(cluster, ctx, pods, pod, group)),
        )
        .await;
        if let Some(error) = results.into_iter().find_map(Result::err) {
            return Some(error);
        }
        round = (round * 2).min(MAX_CONCURRENT_POD_CREATES);
        if round == MAX_CONCURRENT_POD_CREATES {
            return create_pods_windowed(cluster, ctx, pods, remaining).await;
        }
    }
}

/// Past the slow start: keep [`MAX_CONCURRENT_POD_CREATES`] creates in flight as a sliding window, so one
/// slow request does not hold up the next round. After a failure no new create starts; those in flight finish
/// (and record their expectations) before the first failure is returned.
async fn create_pods_windowed(
    cluster: &RayCluster,
    ctx: &Context,
    pods: &Api<Pod>,
    remaining: impl Iterator<Item = (Box<Pod>, String)>,
) -> Option<PassError> {
    use futures::StreamExt as _;
    let failed = std::sync::atomic::AtomicBool::new(false);
    let failed = &failed;
    let mut in_flight = futures::stream::iter(remaining.map(|(pod, group)| async move {
        if failed.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let result = create_pod(cluster, ctx, pods, pod, group).await;
        if result.is_err() {
            failed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        result
    }))
    .buffer_unordered(MAX_CONCURRENT_POD_CREATES);
    let mut first_error = None;
    while let Some(result) = in_flight.next().await {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    first_error
}

/// Creates one head or worker pod, records the expectation and publishes KubeRay's event.
async fn create_pod(
    cluster: &RayCluster,
    ctx: &Context,
    pods: &Api<Pod>,
    pod: Box<Pod>,
    group: String,
) -> Result<(), PassError> {
    let key = cluster_key(cluster);
    let (ns, name) = (key.namespace.as_str(), key.name.as_str());
    let head = group == plan::HEAD_GROUP_KEY;
    match pods.create(&PostParams::default(), &pod).await {
        Ok(created) => {
            let pod_name = created.name_any();
            ctx.expectations
                .expect(ns, name, &group, &pod_name, ScaleAction::Create, Instant::now());
            let (r, note) = if head {
                (reason::CREATED_HEAD_POD, format!("Created head Pod {ns}/{pod_name}"))
            } else {
                (
                    reason::CREATED_WORKER_POD,
                    format!("Created worker Pod {ns}/{pod_name}"),
                )
            };
            ctx.publish(cluster, EventSpec::normal(r, action::CREATE, note)).await;
            Ok(())
        }
        Err(e) => {
            let pod_name = pod
                .metadata
                .name
                .clone()
                .or(pod.metadata.generate_name.clone())
                .unwrap_or_default();
            let (r, marker, note) = if head {
                (
                    reason::FAILED_TO_CREATE_HEAD_POD,
                    ErrorMarker::FailedCreateHeadPod,
                    format!("Failed to create head Pod {ns}/{pod_name}, {e}"),
                )
            } else {
                (
                    reason::FAILED_TO_CREATE_WORKER_POD,
                    ErrorMarker::FailedCreateWorkerPod,
                    format!("Failed to create worker Pod for the cluster {ns}/{name}, {e}"),
                )
            };
            ctx.publish(cluster, EventSpec::warning(r, action::CREATE, note.clone()))
                .await;
            Err(pass_failure(marker, note))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Option<Duration> = Some(Duration::from_secs(300));

    #[test]
    fn a_quiet_pass_runs_again_at_the_default_requeue_or_on_a_change() {
        assert_eq!(requeue_after(&PassOutcome::default(), DEFAULT), DEFAULT);
        assert_eq!(requeue_after(&PassOutcome::default(), None), None);
    }

    #[test]
    fn unobserved_creates_at_the_limit_are_looked_at_again_when_they_expire() {
        let waiting = PassOutcome {
            limit_counts_unobserved_creates: true,
            ..PassOutcome::default()
        };
        assert_eq!(requeue_after(&waiting, DEFAULT), Some(EXPECTATIONS_TIMEOUT));
        assert_eq!(requeue_after(&waiting, None), Some(EXPECTATIONS_TIMEOUT));
        // A shorter default requeue stays.
        let short = Some(Duration::from_secs(10));
        assert_eq!(requeue_after(&waiting, short), short);
    }

    #[test]
    fn the_most_urgent_reason_wins() {
        let all = PassOutcome {
            deferred_creates: true,
            status_written: true,
            upgrading: true,
            limit_counts_unobserved_creates: true,
        };
        assert_eq!(requeue_after(&all, DEFAULT), Some(DEFERRED_CREATES_REQUEUE));
        let written = PassOutcome {
            deferred_creates: false,
            ..all
        };
        assert_eq!(requeue_after(&written, DEFAULT), Some(SHORT_REQUEUE));
        let upgrading = PassOutcome {
            status_written: false,
            ..written
        };
        assert_eq!(requeue_after(&upgrading, DEFAULT), Some(UPGRADE_CHECK_REQUEUE));
    }
}
