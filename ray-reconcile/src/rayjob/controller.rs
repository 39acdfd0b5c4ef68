//! The RayJob executor and kube-runtime controller: observes the RayCluster, the submitter Job, the
//! head pod's submitter container (SidecarMode) and the dashboard, runs [`plan_ray_job`] and carries
//! its actions out (HTTPMode submission, the RayJob-owned head service, `DeleteWorkers`, ...),
//! publishing KubeRay's events on the RayJob and recording the `kuberay_job_*` metrics. The controller owns RayClusters
//! and batch/v1 Jobs, so their changes (e.g. the cluster becoming `ready`) trigger the RayJob.
//!
//! With a batch scheduler (Volcano) the controller runs KubeRay's RayJob hooks: the submission hook
//! syncs the job's PodGroup on every `Initializing` pass before the cluster is created, the
//! RayCluster (K8sJobMode) and the submitter pod template are decorated, and the completion hook
//! shrinks the PodGroup when the job is suspended, retried or finished.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::{reflector, watcher};
use kube::{Api, Client, ResourceExt};
use ray_api::constants::{
    KUBERAY_CONTROLLER, NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_JOB_STOP_JOB_FINALIZER, RAY_NODE_TYPE_LABEL,
};
use ray_api::{JobDeploymentStatus, JobSubmissionMode, RayCluster, RayJob, RayJobStatus};
use ray_gang::constants::SUBMITTER_GROUP_NAME;
use ray_gang::scheduler::{
    CLEANED_UP_EVENT_REASON, CLEANUP_FAILED_EVENT_REASON, cleaned_up_event_message, cleanup_failed_event_message,
};
use ray_gang::{BatchScheduler, CleanupStep, GangLog, GangLogLevel, LiveCluster, Parent};
use ray_podgen::PodGenConfig;
use ray_podgen::random::SeededSuffix;
use ray_podgen::rayjob::{build_ray_cluster_for_job, build_rayjob_head_service, build_submitter_job};
use serde_json::json;
use tracing::{debug, info, warn};

use super::dashboard::{DashboardClient, DashboardTarget, job_submit_request};
use super::events::{self, RAYJOB_CONTROLLER, reason};
use super::metrics::RayJobMetrics;
use super::plan::{
    DashboardObservation, RayJobAction, RayJobObservation, RayJobPlanConfig, RayJobPlanError, SidecarObservation,
    SidecarObservationError, SubmitterObservation, execution_duration, plan_ray_job, status_changed,
};
use crate::cluster_feed::ClusterFeed;
use crate::events::{EventSpec, Severity, action};
use crate::finalizers::{FinalizerGuard, add_finalizer, remove_finalizer};
use crate::kube_errors::{is_conflict, is_not_found, ok_if_not_found};
use crate::metrics::ClusterLabels;
use crate::pod_group_sync::{pod_group_name, sync_pod_group};
use crate::runtime_util::{custom_resource_changes, note_failed_passes, owned_changes, publish_event, run_per_scope};
use crate::status_writer::{MergeShape, StatusWrite, StatusWriteError, write_status};

/// Field manager of the RayJob controller's writes.
pub const FIELD_MANAGER: &str = "kuberay-operator";

/// Why a RayJob reconcile failed (requeue after backoff).
#[derive(Debug, thiserror::Error)]
pub enum RayJobError {
    /// An API call failed.
    #[error("kubernetes API error: {0}")]
    Kube(#[from] kube::Error),
    /// The plan reported a KubeRay error return.
    #[error("{0}")]
    Plan(#[from] RayJobPlanError),
    /// Building the cluster or submitter failed.
    #[error("{0}")]
    PodGen(#[from] ray_podgen::PodGenError),
    /// The RayJob has no namespace.
    #[error("RayJob {0} has no namespace")]
    NoNamespace(String),
    /// The SidecarMode head pods could not be read.
    #[error("{0}")]
    Sidecar(#[from] SidecarObservationError),
    /// The batch scheduler refused the job or could not size its PodGroup.
    #[error("{0}")]
    Gang(#[from] ray_gang::GangError),
    /// The status could not be serialised.
    #[error("status serialisation failed: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl From<StatusWriteError> for RayJobError {
    fn from(error: StatusWriteError) -> Self {
        match error {
            StatusWriteError::Api(e) => Self::Kube(e),
            StatusWriteError::Serialize(e) => Self::Serialize(e),
        }
    }
}

/// Settings of [`run`].
#[derive(Clone, Debug)]
pub struct RayJobControllerConfig {
    /// Plan settings.
    pub plan: RayJobPlanConfig,
    /// Object generation settings.
    pub podgen: PodGenConfig,
    /// `--use-kubernetes-proxy`: reach dashboards through the API server's service proxy.
    pub use_kubernetes_proxy: bool,
    /// Namespaces to watch; empty watches all.
    pub watch_namespaces: Vec<String>,
    /// Maximum concurrent reconciles (0 = unbounded).
    pub concurrency: u16,
    /// The `kuberay_job_*` metrics (`None` records nothing).
    pub metrics: Option<Arc<RayJobMetrics>>,
    /// The operator's batch scheduler (`--batch-scheduler`), whose RayJob hooks the controller runs.
    pub scheduler: BatchScheduler,
    /// The RayCluster changes the RayCluster controller's watch publishes (one RayCluster watch for all).
    pub cluster_feed: ClusterFeed,
}

/// Shared state of the reconciles.
pub struct RayJobContext {
    client: Client,
    config: RayJobControllerConfig,
    dashboard: DashboardClient,
    suffixes: Mutex<SeededSuffix>,
    recorder: Recorder,
}

impl RayJobContext {
    /// Publishes an event on the RayJob (failures to publish are only logged).
    async fn publish(&self, job: &RayJob, event: EventSpec) {
        match event.severity {
            Severity::Normal => info!(rayjob = %job.name_any(), reason = event.reason, note = %event.note, "event"),
            Severity::Warning => warn!(rayjob = %job.name_any(), reason = event.reason, note = %event.note, "event"),
        }
        let regarding = job.object_ref(&());
        publish_event(&self.recorder, &regarding, event).await;
    }
}

/// Run the RayJob controller until `shutdown` resolves.
pub async fn run(client: Client, config: RayJobControllerConfig, shutdown: impl Future<Output = ()> + Send + 'static) {
    let seed = u64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(0) ^ u64::from(std::process::id());
    let ctx = Arc::new(RayJobContext {
        client: client.clone(),
        dashboard: DashboardClient::new(client.clone()),
        config: config.clone(),
        suffixes: Mutex::new(SeededSuffix::new(seed)),
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: RAYJOB_CONTROLLER.to_owned(),
                instance: std::env::var("POD_NAME").ok(),
            },
        ),
    });
    run_per_scope(&config.watch_namespaces, shutdown, |namespace, stop| {
        let ns = namespace.as_deref();
        info!(namespace = ns.unwrap_or("<all>"), "starting RayJob controller");
        let (reader, writer) = reflector::store();
        let rayjobs = custom_resource_changes::<RayJob>(client.clone(), ns, writer);
        Controller::for_stream(rayjobs, reader)
            .reconcile_on(config.cluster_feed.owners_of_kind::<RayJob>(namespace.clone()))
            .owns_stream(owned_changes::<Job>(client.clone(), ns, watcher::Config::default()))
            .with_config(kube::runtime::controller::Config::default().concurrency(config.concurrency))
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(note_failed_passes("rayjob"))
    })
    .await;
}

fn error_policy(job: Arc<RayJob>, error: &RayJobError, _ctx: Arc<RayJobContext>) -> Action {
    warn!(rayjob = %job.name_any(), error = %error, "rayjob reconcile failed");
    Action::requeue(Duration::from_secs(3))
}

fn managed_externally(job: &RayJob) -> bool {
    job.spec.managed_by.as_deref().is_some_and(|m| m != KUBERAY_CONTROLLER)
}

#[tracing::instrument(skip_all, fields(rayjob = %job.name_any(), namespace = job.namespace().unwrap_or_default()))]
async fn reconcile(job: Arc<RayJob>, ctx: Arc<RayJobContext>) -> Result<Action, RayJobError> {
    if managed_externally(&job) {
        return Ok(Action::await_change());
    }
    let name = job.name_any();
    let ns = job.namespace().ok_or_else(|| RayJobError::NoNamespace(name.clone()))?;
    let clusters: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &ns);
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &ns);
    let rayjobs: Api<RayJob> = Api::namespaced(ctx.client.clone(), &ns);
    let old = job.status.clone().unwrap_or_default();
    let labels = job_labels(&job, &ns);

    let cluster_name = old.ray_cluster_name.clone().unwrap_or_default();
    let cluster = if cluster_name.is_empty() {
        None
    } else {
        clusters.get_opt(&cluster_name).await?
    };
    let submitter = jobs.get_opt(&name).await?;
    let target = cluster.as_ref().map(|c| dashboard_target(&ctx, c, &old));
    let running = old.job_deployment_status == Some(JobDeploymentStatus::Running);
    let job_id = old.job_id.clone().unwrap_or_default();
    let dashboard = match (&target, running && !job_id.is_empty()) {
        (Some(target), true) => ctx.dashboard.job_info(target, &job_id).await,
        _ => DashboardObservation::NotQueried,
    };
    let sidecar = match (
        &cluster,
        running && job.spec.submission_mode() == JobSubmissionMode::SidecarMode,
    ) {
        (Some(_), true) => Some(observe_sidecar(&ctx, &job, &ns, &cluster_name).await?),
        _ => None,
    };
    let now = Timestamp::now();
    let observed = RayJobObservation {
        cluster: cluster.as_ref(),
        submitter: submitter.as_ref().map(SubmitterObservation::from_job),
        sidecar,
        dashboard,
        now,
    };
    let planned = {
        let mut suffixes = ctx.suffixes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        plan_ray_job(&job, &observed, &ctx.config.plan, &mut *suffixes)
    };
    let mut plan = match planned {
        Ok(plan) => plan,
        Err(e) => {
            if let RayJobPlanError::SelectedClusterNotFound {
                namespace,
                name: cluster,
            } = &e
            {
                ctx.publish(
                    &job,
                    EventSpec::warning(
                        reason::RAY_CLUSTER_NOT_FOUND,
                        action::CREATE,
                        events::selected_cluster_not_found(namespace, cluster),
                    ),
                )
                .await;
            }
            return Err(e.into());
        }
    };
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let mut with_status = (*job).clone();
    with_status.status = Some(plan.status.clone());
    if batch_scheduling_due(&job, &old, &plan.status) {
        submit_to_batch_scheduler(&ctx, &job, &ns).await?;
    }
    // Complete / Failed run the completion hook after the pass (KubeRay defers it); its errors
    // are only reported.
    let finished = cleanup_deferred(&old);
    let mut deferred_cleanup = false;
    for action in &plan.actions {
        debug!(rayjob = %name, ?action, "rayjob action");
        match action {
            RayJobAction::AddFinalizer | RayJobAction::RemoveFinalizer => {
                let removing = matches!(action, RayJobAction::RemoveFinalizer);
                let written = if removing {
                    remove_finalizer(&rayjobs, &job, RAY_JOB_STOP_JOB_FINALIZER, FinalizerGuard::Unguarded).await
                } else {
                    add_finalizer(&rayjobs, &job, RAY_JOB_STOP_JOB_FINALIZER, FinalizerGuard::Unguarded).await
                };
                match written {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => return Ok(Action::await_change()),
                    Err(e) => return Err(e.into()),
                }
                if removing && let Some(metrics) = &ctx.config.metrics {
                    metrics.forget_job(&labels);
                }
            }
            RayJobAction::StopJob { job_id, .. } => {
                if let Some(target) = &target
                    && let Err(e) = ctx.dashboard.stop_job(target, job_id).await
                {
                    warn!(rayjob = %name, error = %e, "failed to stop the Ray job");
                }
            }
            RayJobAction::ValidationFailedEvent { reason, message } => {
                ctx.publish(&job, EventSpec::warning(reason, action::VALIDATE, message.clone()))
                    .await;
            }
            RayJobAction::CreateRayCluster { name: cluster } => {
                let mut object = build_ray_cluster_for_job(&job, cluster, &ctx.config.podgen)?;
                if job.spec.submission_mode() == JobSubmissionMode::K8sJobMode {
                    log_gang(&name, ctx.config.scheduler.decorate_cluster(&job, &mut object));
                }
                match clusters.create(&pp, &object).await {
                    Ok(_) => {
                        let note = events::created_cluster(&ns, cluster);
                        ctx.publish(
                            &job,
                            EventSpec::normal(reason::CREATED_RAY_CLUSTER, action::CREATE, note),
                        )
                        .await;
                    }
                    Err(e) if is_conflict(&e) => {}
                    Err(e) => {
                        let note = events::failed_to_create_cluster(&ns, cluster, &e);
                        ctx.publish(
                            &job,
                            EventSpec::warning(reason::FAILED_TO_CREATE_RAY_CLUSTER, action::CREATE, note),
                        )
                        .await;
                        return Err(e.into());
                    }
                }
            }
            RayJobAction::DeleteRayCluster { name: cluster } => {
                match clusters.delete(cluster, &DeleteParams::background()).await {
                    Ok(_) => {
                        let note = events::deleted_cluster(&ns, cluster);
                        ctx.publish(
                            &job,
                            EventSpec::normal(reason::DELETED_RAY_CLUSTER, action::DELETE, note),
                        )
                        .await;
                    }
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => {
                        let note = events::failed_to_delete_cluster(&ns, cluster, &e);
                        ctx.publish(
                            &job,
                            EventSpec::warning(reason::FAILED_TO_DELETE_RAY_CLUSTER, action::DELETE, note),
                        )
                        .await;
                        return Err(e.into());
                    }
                }
            }
            RayJobAction::SuspendWorkerGroups { name: cluster_name } => {
                if let Some(live) = cluster.as_ref() {
                    suspend_worker_groups(&clusters, live).await?;
                    let note = events::suspended_worker_groups(&ns, cluster_name);
                    ctx.publish(
                        &job,
                        EventSpec::normal(reason::UPDATED_RAY_CLUSTER, action::UPDATE, note),
                    )
                    .await;
                }
            }
            RayJobAction::EnsureHeadService { .. } => {
                if let Some(live) = cluster.as_ref() {
                    ensure_head_service(&ctx, &job, live, &pp).await?;
                }
            }
            RayJobAction::CreateSubmitterJob => {
                let Some(cluster) = cluster.as_ref() else {
                    continue;
                };
                let mut object = build_submitter_job(&with_status, cluster, &ctx.config.podgen)?;
                if let Some(template) = object.spec.as_mut().map(|spec| &mut spec.template) {
                    let logs =
                        ctx.config
                            .scheduler
                            .decorate_pod_template(Parent::Job(&job), template, SUBMITTER_GROUP_NAME);
                    log_gang(&name, logs);
                }
                match jobs.create(&pp, &object).await {
                    Ok(_) => {
                        let note = events::created_submitter(&ns, &name);
                        ctx.publish(
                            &job,
                            EventSpec::normal(reason::CREATED_RAY_JOB_SUBMITTER, action::CREATE, note),
                        )
                        .await;
                    }
                    Err(e) if is_conflict(&e) => {}
                    Err(e) => {
                        let note = events::failed_to_create_submitter(&ns, &name, &e);
                        ctx.publish(
                            &job,
                            EventSpec::warning(reason::FAILED_TO_CREATE_RAY_JOB_SUBMITTER, action::CREATE, note),
                        )
                        .await;
                        return Err(e.into());
                    }
                }
            }
            RayJobAction::DeleteSubmitterJob => match jobs.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {
                    let note = events::deleted_submitter(&ns, &name);
                    ctx.publish(
                        &job,
                        EventSpec::normal(reason::DELETED_RAY_JOB_SUBMITTER, action::DELETE, note),
                    )
                    .await;
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    let note = events::failed_to_delete_submitter(&ns, &name, &e);
                    ctx.publish(
                        &job,
                        EventSpec::warning(reason::FAILED_TO_DELETE_RAY_JOB_SUBMITTER, action::DELETE, note),
                    )
                    .await;
                    return Err(e.into());
                }
            },
            RayJobAction::SubmitJob { job_id, .. } => {
                let Some(target) = &target else { continue };
                let outcome = match job_submit_request(&with_status) {
                    Ok(request) => ctx.dashboard.submit_job(target, &request).await,
                    Err(e) => Err(e),
                };
                match outcome {
                    Ok(id) => {
                        info!(rayjob = %name, job_id = %id, "submitted the Ray job through the dashboard");
                        plan.status.job_status_check_failure_start_time = None;
                    }
                    Err(e) => {
                        warn!(rayjob = %name, %job_id, error = %e, "failed to submit the Ray job");
                        if plan.status.job_status_check_failure_start_time.is_none() {
                            plan.status.job_status_check_failure_start_time = Some(Time(now));
                        }
                    }
                }
                plan.persist = plan.persist || status_changed(&old, &plan.status);
            }
            RayJobAction::DeleteSelf => {
                if let Some(metrics) = &ctx.config.metrics {
                    metrics.forget_job(&labels);
                }
                match rayjobs.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {
                        info!(rayjob = %name, "deleted the RayJob after it finished");
                        return Ok(Action::await_change());
                    }
                    Err(e) if is_not_found(&e) => return Ok(Action::await_change()),
                    Err(e) => return Err(e.into()),
                }
            }
            RayJobAction::CleanupBatchScheduler if finished => deferred_cleanup = true,
            RayJobAction::CleanupBatchScheduler => cleanup_batch_scheduler(&ctx, &job, &clusters).await?,
        }
    }
    if deferred_cleanup && let Err(e) = cleanup_batch_scheduler(&ctx, &job, &clusters).await {
        warn!(rayjob = %name, error = %e, "batch scheduler cleanup failed");
    }
    if plan.persist {
        match write_status(&rayjobs, &job, &plan.status, StatusWrite::Merge(MergeShape::Whole)).await {
            Ok(()) => {}
            Err(StatusWriteError::Api(e)) if is_not_found(&e) => return Ok(Action::await_change()),
            Err(e) => return Err(e.into()),
        }
        if let Some(metrics) = &ctx.config.metrics
            && let Some(observation) = execution_duration(&old, &plan.status, now)
        {
            metrics.observe_execution(&labels, &observation);
        }
    }
    if let Some(metrics) = &ctx.config.metrics
        && job.metadata.deletion_timestamp.is_none()
    {
        let status = plan
            .status
            .job_deployment_status
            .clone()
            .unwrap_or(JobDeploymentStatus::New);
        metrics.observe_job(&labels, status.as_str());
    }
    Ok(plan.requeue.map_or_else(Action::await_change, Action::requeue))
}

/// Whether this pass runs the batch scheduler's submission hook: every `Initializing` pass that
/// KubeRay's switch reaches the hook in, i.e. not when the job is being suspended or has just
/// failed (deadline or validation) instead.
pub fn batch_scheduling_due(job: &RayJob, old: &RayJobStatus, planned: &RayJobStatus) -> bool {
    old.job_deployment_status == Some(JobDeploymentStatus::Initializing)
        && !job.spec.suspend()
        && !matches!(
            planned.job_deployment_status,
            Some(JobDeploymentStatus::Suspending | JobDeploymentStatus::Failed)
        )
}

/// Whether the completion hook runs after the pass with its errors only reported (KubeRay's deferred
/// call in `Complete` / `Failed`) rather than in place, failing the pass (`Suspending` / `Retrying`).
pub fn cleanup_deferred(old: &RayJobStatus) -> bool {
    matches!(
        old.job_deployment_status,
        Some(JobDeploymentStatus::Complete | JobDeploymentStatus::Failed)
    )
}

/// The job with the CRD's `submissionMode` default (`K8sJobMode`) filled in when unset, as an API
/// server that applies schema defaults would store it: the gang's size depends on the mode.
pub fn with_mode_default(job: &RayJob) -> RayJob {
    let mut job = job.clone();
    job.spec.submission_mode.get_or_insert(JobSubmissionMode::K8sJobMode);
    job
}

/// The submission hook: create or resize the job's PodGroup before its cluster is created. An
/// error fails the pass (requeue).
async fn submit_to_batch_scheduler(ctx: &RayJobContext, job: &RayJob, namespace: &str) -> Result<(), RayJobError> {
    let Some(desired) = ctx.config.scheduler.pod_group_for_job(&with_mode_default(job))? else {
        return Ok(());
    };
    if sync_pod_group(&ctx.client, namespace, &desired).await? {
        debug!(rayjob = %job.name_any(), podgroup = %pod_group_name(&desired), "synced the RayJob's PodGroup");
    }
    Ok(())
}

/// The completion hook with its events: `BatchSchedulerCleanedUp` when it changed the PodGroup,
/// `FailedToCleanupBatchScheduler` (and the error) when it failed.
async fn cleanup_batch_scheduler(
    ctx: &RayJobContext,
    job: &RayJob,
    clusters: &Api<RayCluster>,
) -> Result<(), RayJobError> {
    let namespace = job.namespace().unwrap_or_default();
    let name = job.name_any();
    match shrink_pod_group(ctx, job, clusters, &namespace).await {
        Ok(false) => Ok(()),
        Ok(true) => {
            let note = cleaned_up_event_message(&namespace, &name);
            ctx.publish(job, EventSpec::normal(CLEANED_UP_EVENT_REASON, action::CLEANUP, note))
                .await;
            Ok(())
        }
        Err(e) => {
            let note = cleanup_failed_event_message(&namespace, &name, &e.to_string());
            ctx.publish(
                job,
                EventSpec::warning(CLEANUP_FAILED_EVENT_REASON, action::CLEANUP, note),
            )
            .await;
            Err(e)
        }
    }
}

/// KubeRay's `CleanupOnCompletion`: resize the PodGroup to what the job's cluster still holds
/// (nothing once it is gone). Returns whether the PodGroup was written.
async fn shrink_pod_group(
    ctx: &RayJobContext,
    job: &RayJob,
    clusters: &Api<RayCluster>,
    namespace: &str,
) -> Result<bool, RayJobError> {
    let scheduler = ctx.config.scheduler;
    let CleanupStep::ReadCluster { name } = scheduler.cleanup_step(Parent::Job(job)) else {
        return Ok(false);
    };
    let live = clusters.get_opt(&name).await?;
    let cluster = live.as_ref().map_or(LiveCluster::NotFound, LiveCluster::Found);
    let Some(desired) = scheduler.cleanup_pod_group(job, cluster)? else {
        return Ok(false);
    };
    Ok(sync_pod_group(&ctx.client, namespace, &desired).await?)
}

/// Logs what a batch scheduler's decoration reported.
fn log_gang(rayjob: &str, logs: Vec<GangLog>) {
    for log in logs {
        match log.level {
            GangLogLevel::Info => info!(rayjob, message = %log.message, "batch scheduler"),
            GangLogLevel::Error => warn!(rayjob, message = %log.message, "batch scheduler"),
        }
    }
}

/// The metric labels of a RayJob.
fn job_labels(job: &RayJob, namespace: &str) -> ClusterLabels {
    ClusterLabels {
        name: job.name_any(),
        namespace: namespace.to_owned(),
        uid: job.uid().unwrap_or_default(),
    }
}

/// Reads the SidecarMode submitter container from the cluster's head pod(s).
async fn observe_sidecar(
    ctx: &RayJobContext,
    job: &RayJob,
    namespace: &str,
    cluster_name: &str,
) -> Result<SidecarObservation, RayJobError> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = format!("{RAY_CLUSTER_LABEL}={cluster_name},{RAY_NODE_TYPE_LABEL}={NODE_TYPE_HEAD}");
    let heads = pods.list(&ListParams::default().labels(&selector)).await?;
    let backoff_limit = job.spec.submitter_config.as_ref().and_then(|c| c.backoff_limit);
    Ok(SidecarObservation::from_head_pods(
        &heads.items,
        ctx.config.podgen.feature_gates.sidecar_submitter_restart,
        backoff_limit,
    )?)
}

/// `DeleteWorkers`: sets `suspend: true` on every worker group of `cluster`.
async fn suspend_worker_groups(clusters: &Api<RayCluster>, cluster: &RayCluster) -> Result<(), RayJobError> {
    let mut updated = cluster.clone();
    for group in updated.spec.worker_group_specs.iter_mut().flatten() {
        group.suspend = Some(true);
    }
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    ok_if_not_found(clusters.replace(&cluster.name_any(), &pp, &updated).await)?;
    Ok(())
}

/// Creates the RayJob-owned head service `<rayjob>-head-svc`, or points it at `cluster` when its
/// selector still names another cluster (its ClusterIP is kept).
async fn ensure_head_service(
    ctx: &RayJobContext,
    job: &RayJob,
    cluster: &RayCluster,
    pp: &PostParams,
) -> Result<(), RayJobError> {
    let namespace = job.namespace().unwrap_or_default();
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &namespace);
    let desired = build_rayjob_head_service(job, cluster, &ctx.config.podgen)?;
    let name = desired.name_any();
    let selector = desired
        .spec
        .as_ref()
        .and_then(|s| s.selector.clone())
        .unwrap_or_default();
    match services.get_opt(&name).await? {
        None => match services.create(pp, &desired).await {
            Ok(_) => info!(rayjob = %job.name_any(), service = %name, "created the RayJob head service"),
            Err(e) if is_conflict(&e) => {}
            Err(e) => return Err(e.into()),
        },
        Some(existing) => {
            let current = existing
                .spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .and_then(|s| s.get(RAY_CLUSTER_LABEL).cloned());
            if current.as_ref() != selector.get(RAY_CLUSTER_LABEL) {
                let patch = json!({ "spec": { "selector": selector } });
                services
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                info!(rayjob = %job.name_any(), service = %name, "pointed the RayJob head service at the new cluster");
            }
        }
    }
    Ok(())
}

fn dashboard_target(ctx: &RayJobContext, cluster: &RayCluster, status: &RayJobStatus) -> DashboardTarget {
    if ctx.config.use_kubernetes_proxy {
        let service = cluster
            .status
            .as_ref()
            .and_then(|s| s.head.as_ref())
            .and_then(|h| h.service_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| ray_podgen::cluster::head_service_name(cluster));
        DashboardTarget::Proxy {
            namespace: cluster.namespace().unwrap_or_default(),
            service,
        }
    } else {
        DashboardTarget::Direct {
            address: status.dashboard_url.clone().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(deployment: JobDeploymentStatus) -> RayJobStatus {
        RayJobStatus {
            job_deployment_status: Some(deployment),
            ..RayJobStatus::default()
        }
    }

    fn job(suspend: bool) -> RayJob {
        let mut job = RayJob::new("rayjob-sample", Default::default());
        job.spec.suspend = Some(suspend);
        job
    }

    #[test]
    fn submission_hook_runs_on_initializing_passes_only() {
        use JobDeploymentStatus::*;
        let initializing = status(Initializing);
        // Every Initializing pass, also the one that moves on to Running.
        assert!(batch_scheduling_due(&job(false), &initializing, &status(Initializing)));
        assert!(batch_scheduling_due(&job(false), &initializing, &status(Running)));
        // Not when the pass suspends or fails the job instead.
        assert!(!batch_scheduling_due(&job(true), &initializing, &status(Suspending)));
        assert!(!batch_scheduling_due(&job(false), &initializing, &status(Failed)));
        // Not in any other state.
        for other in [New, Running, Complete, Failed, Suspending, Suspended, Retrying, Waiting] {
            assert!(!batch_scheduling_due(
                &job(false),
                &status(other.clone()),
                &status(other)
            ));
        }
    }

    #[test]
    fn completion_hook_is_deferred_only_for_finished_jobs() {
        use JobDeploymentStatus::*;
        assert!(cleanup_deferred(&status(Complete)));
        assert!(cleanup_deferred(&status(Failed)));
        assert!(!cleanup_deferred(&status(Suspending)));
        assert!(!cleanup_deferred(&status(Retrying)));
        assert!(!cleanup_deferred(&RayJobStatus::default()));
    }

    #[test]
    fn unset_submission_mode_sizes_the_gang_as_k8s_job_mode() {
        let mut job: RayJob = serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-sample", "namespace": "default"},
            "spec": {"rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
                "containers": [{"name": "ray-head", "resources": {"requests": {"cpu": "1"}}}]
            }}}}}
        }))
        .unwrap();
        let cpu = |job: &RayJob| match BatchScheduler::Volcano.pod_group_for_job(job).unwrap() {
            Some(ray_gang::DesiredPodGroup::Volcano(pg)) => pg.spec.min_resources.unwrap()["cpu"].0.clone(),
            other => panic!("expected a Volcano PodGroup, got {other:?}"),
        };
        // The default submitter's 500m joins the head's CPU, as for an explicit K8sJobMode.
        let defaulted = cpu(&with_mode_default(&job));
        job.spec.submission_mode = Some(JobSubmissionMode::K8sJobMode);
        assert_eq!(defaulted, cpu(&job));
        assert_ne!(defaulted, "1");
        // An explicit mode is kept.
        job.spec.submission_mode = Some(JobSubmissionMode::HttpMode);
        assert_eq!(cpu(&with_mode_default(&job)), "1");
    }
}
