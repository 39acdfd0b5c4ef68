//! One RayJob pass: observes the RayCluster, the submitter Job, the head pod's submitter container
//! (SidecarMode) and the dashboard, runs [`plan_ray_job`] and carries its actions out (the objects
//! the job owns in [`super::children`], HTTPMode submission, finalizer, self-deletion), then
//! writes the status, publishing KubeRay's events on the RayJob and recording the `kuberay_job_*`
//! metrics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use crate::fair_controller::Action;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use ray_api::constants::{
    KUBERAY_CONTROLLER, NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_JOB_STOP_JOB_FINALIZER, RAY_NODE_TYPE_LABEL,
};
use ray_api::{JobDeploymentStatus, JobSubmissionMode, RayCluster, RayJob, RayJobStatus};
use tracing::{debug, info, warn};

use super::batch_scheduling::{
    batch_scheduling_due, cleanup_batch_scheduler, cleanup_deferred, submit_to_batch_scheduler,
};
use super::controller::RayJobContext;
use super::dashboard::{DashboardTarget, job_submit_request};
use super::error::RayJobError;
use super::events::{self, reason};
use super::job_info::AWAITING_ANSWER_REQUEUE;
use super::plan::{DEFAULT_REQUEUE, RayJobPlan};
use super::plan::{
    DashboardObservation, RayJobAction, RayJobObservation, RayJobPlanError, SidecarObservation, SubmitterObservation,
    execution_duration, plan_ray_job, status_changed,
};
use crate::events::{EventSpec, action};
use crate::finalizers::{FinalizerGuard, add_finalizer, remove_finalizer};
use crate::kube_errors::is_not_found;
use crate::metrics::ClusterLabels;
use crate::runtime_util::ObjectKey;
use crate::status_writer::{MergeShape, StatusWrite, StatusWriteError, write_status};

/// How a pass goes on after one of its steps.
pub(super) enum Flow {
    /// On to the next step.
    Continue,
    /// The pass ends here with this action.
    Stop(Action),
}

/// What a pass read before planning.
struct Observed {
    /// The job's RayCluster (`status.rayClusterName`), when it exists.
    cluster: Option<RayCluster>,
    /// The submitter Job named like the RayJob, when it exists.
    submitter: Option<SubmitterObservation>,
    /// Where the cluster's dashboard answers, once there is a cluster.
    target: Option<DashboardTarget>,
    /// The Ray job as the dashboard reports it (queried only while `Running`).
    dashboard: DashboardObservation,
    /// The job-info answer is not in yet: the pass waits for the query in flight.
    awaiting_answer: bool,
    /// The SidecarMode submitter container (read only while `Running`).
    sidecar: Option<SidecarObservation>,
    /// The submitter (Job or sidecar container) had finished when the pass looked.
    submission_finished: bool,
    /// When the pass observed.
    now: Timestamp,
}

/// One pass over a RayJob: the job, its namespace's APIs and the status it started from.
pub(super) struct Pass<'a> {
    /// Shared controller state.
    pub(super) ctx: &'a RayJobContext,
    /// The RayJob.
    pub(super) job: &'a RayJob,
    /// Its name.
    pub(super) name: String,
    /// Its namespace.
    pub(super) namespace: String,
    /// RayClusters in the namespace.
    pub(super) clusters: Api<RayCluster>,
    /// batch/v1 Jobs in the namespace.
    pub(super) jobs: Api<Job>,
    /// RayJobs in the namespace.
    pub(super) rayjobs: Api<RayJob>,
    /// The status the pass started from.
    pub(super) old: RayJobStatus,
    /// The job's metric labels.
    pub(super) labels: ClusterLabels,
    /// The `resourceVersion` the pass's own finalizer write gave the RayJob: the status write's precondition
    /// must be that one, not the version the pass read, or the pass would conflict with itself.
    pub(super) written_version: OnceLock<String>,
}

/// `spec.managedBy` names another controller.
fn managed_externally(job: &RayJob) -> bool {
    job.spec.managed_by.as_deref().is_some_and(|m| m != KUBERAY_CONTROLLER)
}

/// How long a released RayJob is remembered: far longer than its deletion takes to reach the store.
const RELEASE_MEMORY: Duration = Duration::from_secs(600);

/// The RayJobs (by uid) whose finalizer a pass removed, so that a stale stored copy of one being deleted gets
/// no second deletion pass.
#[derive(Debug, Default)]
pub(super) struct ReleasedRayJobs {
    released_at: Mutex<HashMap<String, Instant>>,
}

impl ReleasedRayJobs {
    /// Remembers `uid` as released at `now`, forgetting those released longer than [`RELEASE_MEMORY`] ago.
    pub(super) fn insert(&self, uid: Option<&str>, now: Instant) {
        let Some(uid) = uid else { return };
        let mut released = self.released_at.lock().unwrap_or_else(PoisonError::into_inner);
        released.retain(|_, at| now.saturating_duration_since(*at) < RELEASE_MEMORY);
        released.insert(uid.to_owned(), now);
    }

    /// Whether a pass released the RayJob `uid`.
    pub(super) fn contains(&self, uid: Option<&str>) -> bool {
        uid.is_some_and(|uid| {
            self.released_at
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(uid)
        })
    }
}

/// One RayJob pass: observe, plan, carry the plan's actions out, write the status.
#[tracing::instrument(skip_all, fields(rayjob = %job.name_any(), namespace = job.namespace().unwrap_or_default()))]
pub(super) async fn reconcile(job: Arc<RayJob>, ctx: Arc<RayJobContext>) -> Result<Action, RayJobError> {
    if managed_externally(&job) {
        return Ok(Action::await_change());
    }
    if job.metadata.deletion_timestamp.is_some() && ctx.released.contains(job.metadata.uid.as_deref()) {
        // A pass already stopped its Ray job and removed the finalizer: this is the store's copy from before
        // the deletion reached it, and stopping the job again would be one dashboard call too many.
        return Ok(Action::await_change());
    }
    Pass::new(&job, &ctx)?.run().await
}

impl<'a> Pass<'a> {
    /// A pass over `job` (which must have a namespace).
    fn new(job: &'a RayJob, ctx: &'a RayJobContext) -> Result<Self, RayJobError> {
        let name = job.name_any();
        let namespace = job.namespace().ok_or_else(|| RayJobError::NoNamespace(name.clone()))?;
        Ok(Self {
            ctx,
            job,
            clusters: Api::namespaced(ctx.client.clone(), &namespace),
            jobs: Api::namespaced(ctx.client.clone(), &namespace),
            rayjobs: Api::namespaced(ctx.client.clone(), &namespace),
            old: job.status.clone().unwrap_or_default(),
            labels: job_labels(job, &namespace),
            name,
            namespace,
            written_version: OnceLock::new(),
        })
    }

    /// The pass: observe, plan, the batch scheduler's submission hook, the actions, the status.
    async fn run(&self) -> Result<Action, RayJobError> {
        let observed = self.observe().await?;
        let mut plan = self.plan(&observed).await?;
        if batch_scheduling_due(self.job, &self.old, &plan.status) {
            submit_to_batch_scheduler(self.ctx, self.job, &self.namespace).await?;
        }
        if let Flow::Stop(action) = self.act(&observed, &mut plan).await? {
            return Ok(action);
        }
        if let Flow::Stop(action) = self.persist(&plan, observed.now).await? {
            return Ok(action);
        }
        self.record_deployment_status(&plan);
        let query_scheduled = self.follow_job_info(&observed, &plan.status, plan.requeue.unwrap_or(DEFAULT_REQUEUE));
        debug!(
            awaiting_answer = observed.awaiting_answer,
            query_scheduled,
            planned_requeue = ?plan.requeue,
            "rayjob pass"
        );
        let requeue = match plan.requeue {
            // The answer of the scheduled query triggers the next pass; this only covers a skipped trigger
            // (even when the plan itself would wait for a change: the query was scheduled for 3 s).
            planned if query_scheduled => Some(
                planned
                    .unwrap_or(DEFAULT_REQUEUE)
                    .saturating_add(AWAITING_ANSWER_REQUEUE),
            ),
            Some(after) if observed.awaiting_answer => Some(after.max(AWAITING_ANSWER_REQUEUE)),
            other => other,
        };
        Ok(requeue.map_or_else(Action::await_change, Action::requeue))
    }

    /// The key of the RayJob's background job-info queries.
    fn key(&self) -> ObjectKey {
        (self.namespace.clone(), self.name.clone())
    }

    /// After the pass: a RayJob that stays Running gets its next job-info query scheduled `after` from now
    /// (its answer triggers the next pass); any other forgets its queries. Whether a query was scheduled.
    fn follow_job_info(&self, observed: &Observed, status: &RayJobStatus, after: Duration) -> bool {
        let running = status.job_deployment_status == Some(JobDeploymentStatus::Running);
        let job_id = status.job_id.clone().unwrap_or_default();
        match &observed.cluster {
            Some(cluster) if running && !job_id.is_empty() && self.job.metadata.deletion_timestamp.is_none() => {
                let target = dashboard_target(self.ctx, cluster, status);
                self.ctx
                    .job_info
                    .prefetch(&self.key(), &job_id, &target, observed.submission_finished, after)
            }
            _ => {
                self.ctx.job_info.forget(&self.key());
                false
            }
        }
    }

    /// Reads the cluster, the submitter Job and, while `Running`, the dashboard's job and the
    /// SidecarMode submitter container.
    async fn observe(&self) -> Result<Observed, RayJobError> {
        let cluster_name = self.old.ray_cluster_name.clone().unwrap_or_default();
        let cluster = if cluster_name.is_empty() {
            None
        } else {
            // From the RayCluster controller's store, as KubeRay reads its informer cache; one the store has
            // not seen (just created, or gone) is asked of the API server.
            match self
                .ctx
                .config
                .cluster_feed
                .cached_cluster(&self.namespace, &cluster_name)
            {
                Some(cached) => Some(cached),
                None => self.clusters.get_opt(&cluster_name).await?,
            }
        };
        // From the controller's store of submitter Jobs; one it has not seen is asked of the API server.
        let submitter = match self.ctx.submitters.get(&self.namespace, &self.name) {
            Some(cached) => Some(SubmitterObservation::from_job(&cached)),
            None => self
                .jobs
                .get_opt(&self.name)
                .await?
                .as_ref()
                .map(SubmitterObservation::from_job),
        };
        let target = cluster.as_ref().map(|c| dashboard_target(self.ctx, c, &self.old));
        let running = self.old.job_deployment_status == Some(JobDeploymentStatus::Running);
        let job_id = self.old.job_id.clone().unwrap_or_default();
        let deleting = self.job.metadata.deletion_timestamp.is_some();
        if deleting {
            self.ctx.job_info.forget(&self.key());
        }
        let sidecar = match (
            &cluster,
            running && self.job.spec.submission_mode() == JobSubmissionMode::SidecarMode,
        ) {
            (Some(_), true) => Some(observe_sidecar(self.ctx, self.job, &self.namespace, &cluster_name).await?),
            _ => None,
        };
        // Read before the job info, so that an answer older than the submitter's finish is recognised.
        let submission_finished = submitter.as_ref().is_some_and(|job| job.finished_at.is_some())
            || matches!(
                sidecar,
                Some(SidecarObservation::Submitter {
                    finished_at: Some(_),
                    ..
                })
            );
        let answer = match (&target, running && !job_id.is_empty() && !deleting) {
            (Some(target), true) => Some(
                self.ctx
                    .job_info
                    .take(&self.key(), &job_id, target, submission_finished),
            ),
            _ => None,
        };
        let awaiting_answer = matches!(answer, Some(None));
        let dashboard = answer.flatten().unwrap_or_default();
        Ok(Observed {
            cluster,
            submitter,
            target,
            dashboard,
            awaiting_answer,
            sidecar,
            submission_finished,
            now: Timestamp::now(),
        })
    }

    /// Runs the pure plan; a selector naming a missing cluster is also reported as an event.
    async fn plan(&self, observed: &Observed) -> Result<RayJobPlan, RayJobError> {
        let observation = RayJobObservation {
            cluster: observed.cluster.as_ref(),
            submitter: observed.submitter.clone(),
            sidecar: observed.sidecar.clone(),
            dashboard: observed.dashboard.clone(),
            now: observed.now,
        };
        let planned = {
            let mut suffixes = self
                .ctx
                .suffixes
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            plan_ray_job(self.job, &observation, &self.ctx.config.plan, &mut *suffixes)
        };
        let error = match planned {
            Ok(plan) => return Ok(plan),
            Err(error) => error,
        };
        if let RayJobPlanError::SelectedClusterNotFound { namespace, name } = &error {
            let note = events::selected_cluster_not_found(namespace, name);
            self.ctx
                .publish(
                    self.job,
                    EventSpec::warning(reason::RAY_CLUSTER_NOT_FOUND, action::CREATE, note),
                )
                .await;
        }
        Err(error.into())
    }

    /// Carries the plan's actions out in order. Complete / Failed run the completion hook after
    /// the pass (KubeRay defers it), and its errors are only reported.
    async fn act(&self, observed: &Observed, plan: &mut RayJobPlan) -> Result<Flow, RayJobError> {
        // Objects built from the job (the submitter, the submission request) see the planned
        // status as it was before any action ran.
        let mut with_status = self.job.clone();
        with_status.status = Some(plan.status.clone());
        let finished = cleanup_deferred(&self.old);
        let mut deferred_cleanup = false;
        for action in &plan.actions {
            debug!(rayjob = %self.name, ?action, "rayjob action");
            if finished && matches!(action, RayJobAction::CleanupBatchScheduler) {
                deferred_cleanup = true;
                continue;
            }
            let flow = self
                .execute(action, observed, &with_status, &mut plan.status, &mut plan.persist)
                .await?;
            if let Flow::Stop(action) = flow {
                return Ok(Flow::Stop(action));
            }
        }
        if deferred_cleanup && let Err(e) = cleanup_batch_scheduler(self.ctx, self.job, &self.clusters).await {
            warn!(rayjob = %self.name, error = %e, "batch scheduler cleanup failed");
        }
        Ok(Flow::Continue)
    }

    /// Carries one action out. `status` and `persist` are the plan's: a dashboard submission
    /// records its failure time there.
    async fn execute(
        &self,
        action: &RayJobAction,
        observed: &Observed,
        with_status: &RayJob,
        status: &mut RayJobStatus,
        persist: &mut bool,
    ) -> Result<Flow, RayJobError> {
        let cluster = observed.cluster.as_ref();
        match action {
            RayJobAction::AddFinalizer => return self.set_finalizer(true).await,
            RayJobAction::RemoveFinalizer => return self.set_finalizer(false).await,
            RayJobAction::StopJob { job_id, .. } => self.stop_job(observed.target.as_ref(), job_id).await,
            RayJobAction::ValidationFailedEvent { reason, message } => {
                let event = EventSpec::warning(reason, action::VALIDATE, message.clone());
                self.ctx.publish(self.job, event).await;
            }
            RayJobAction::CreateRayCluster { name } => self.create_cluster(name).await?,
            RayJobAction::DeleteRayCluster { name } => self.delete_cluster(name).await?,
            RayJobAction::SuspendWorkerGroups { name } => {
                if let Some(live) = cluster {
                    self.suspend_worker_groups(live, name).await?;
                }
            }
            RayJobAction::EnsureHeadService { .. } => {
                if let Some(live) = cluster {
                    self.ensure_head_service(live).await?;
                }
            }
            RayJobAction::CreateSubmitterJob => {
                if let Some(live) = cluster {
                    self.create_submitter(with_status, live).await?;
                }
            }
            RayJobAction::DeleteSubmitterJob => self.delete_submitter().await?,
            RayJobAction::SubmitJob { job_id, .. } => {
                if let Some(target) = &observed.target {
                    self.submit_job(target, with_status, job_id, status, observed.now).await;
                    *persist = *persist || status_changed(&self.old, status);
                }
            }
            RayJobAction::DeleteSelf => return self.delete_self().await,
            RayJobAction::CleanupBatchScheduler => {
                cleanup_batch_scheduler(self.ctx, self.job, &self.clusters).await?;
            }
        }
        Ok(Flow::Continue)
    }

    /// Adds (`present`) or removes the stop-job finalizer; a RayJob already gone ends the pass.
    async fn set_finalizer(&self, present: bool) -> Result<Flow, RayJobError> {
        let written = if present {
            add_finalizer(
                &self.rayjobs,
                self.job,
                RAY_JOB_STOP_JOB_FINALIZER,
                FinalizerGuard::Unguarded,
            )
            .await
        } else {
            remove_finalizer(
                &self.rayjobs,
                self.job,
                RAY_JOB_STOP_JOB_FINALIZER,
                FinalizerGuard::Unguarded,
            )
            .await
        };
        match written {
            Ok(version) => {
                if let Some(version) = version {
                    let _ = self.written_version.set(version);
                }
            }
            Err(e) if is_not_found(&e) => return Ok(Flow::Stop(Action::await_change())),
            Err(e) => return Err(e.into()),
        }
        if !present {
            self.ctx
                .released
                .insert(self.job.metadata.uid.as_deref(), Instant::now());
            if let Some(metrics) = &self.ctx.config.metrics {
                metrics.forget_job(&self.labels);
            }
        }
        Ok(Flow::Continue)
    }

    /// Asks the dashboard to stop the Ray job; a failure is only logged.
    async fn stop_job(&self, target: Option<&DashboardTarget>, job_id: &str) {
        if let Some(target) = target
            && let Err(e) = self.ctx.dashboard.stop_job(target, job_id).await
        {
            warn!(rayjob = %self.name, error = %e, "failed to stop the Ray job");
        }
    }

    /// HTTPMode: submits the Ray job through the dashboard. A failure is not an error of the pass:
    /// it starts (or keeps) the status-check failure clock, which the plan's timeout reads.
    async fn submit_job(
        &self,
        target: &DashboardTarget,
        with_status: &RayJob,
        job_id: &str,
        status: &mut RayJobStatus,
        now: Timestamp,
    ) {
        let outcome = match job_submit_request(with_status) {
            Ok(request) => self.ctx.dashboard.submit_job(target, &request).await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(id) => {
                info!(rayjob = %self.name, job_id = %id, "submitted the Ray job through the dashboard");
                status.job_status_check_failure_start_time = None;
            }
            Err(e) => {
                warn!(rayjob = %self.name, %job_id, error = %e, "failed to submit the Ray job");
                if status.job_status_check_failure_start_time.is_none() {
                    status.job_status_check_failure_start_time = Some(Time(now));
                }
            }
        }
    }

    /// Deletes the finished RayJob itself; the pass ends either way.
    async fn delete_self(&self) -> Result<Flow, RayJobError> {
        self.ctx.job_info.forget(&self.key());
        if let Some(metrics) = &self.ctx.config.metrics {
            metrics.forget_job(&self.labels);
        }
        match self.rayjobs.delete(&self.name, &DeleteParams::background()).await {
            Ok(_) => {
                info!(rayjob = %self.name, "deleted the RayJob after it finished");
                Ok(Flow::Stop(Action::await_change()))
            }
            Err(e) if is_not_found(&e) => Ok(Flow::Stop(Action::await_change())),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the planned status when the plan says so (a RayJob already gone ends the pass) and
    /// records the job's execution time once it finished.
    async fn persist(&self, plan: &RayJobPlan, now: Timestamp) -> Result<Flow, RayJobError> {
        if !plan.persist {
            return Ok(Flow::Continue);
        }
        let rewritten;
        let job = match self.written_version.get() {
            Some(version) => {
                let mut job = self.job.clone();
                job.metadata.resource_version = Some(version.clone());
                rewritten = job;
                &rewritten
            }
            None => self.job,
        };
        match write_status(&self.rayjobs, job, &plan.status, StatusWrite::Merge(MergeShape::Whole)).await {
            Ok(_) => {}
            Err(StatusWriteError::Api(e)) if is_not_found(&e) => return Ok(Flow::Stop(Action::await_change())),
            Err(e) => return Err(e.into()),
        }
        if let Some(metrics) = &self.ctx.config.metrics
            && let Some(observation) = execution_duration(&self.old, &plan.status, now)
        {
            metrics.observe_execution(&self.labels, &observation);
        }
        Ok(Flow::Continue)
    }

    /// The `kuberay_job_info` series of a RayJob that is not being deleted.
    fn record_deployment_status(&self, plan: &RayJobPlan) {
        if let Some(metrics) = &self.ctx.config.metrics
            && self.job.metadata.deletion_timestamp.is_none()
        {
            let status = plan
                .status
                .job_deployment_status
                .clone()
                .unwrap_or(JobDeploymentStatus::New);
            metrics.observe_job(&self.labels, status.as_str());
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

/// Where the cluster's dashboard answers: through the API server's service proxy, or at the
/// status's `dashboardURL`.
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

    #[test]
    fn released_rayjobs_are_remembered_for_a_while_by_uid() {
        let released = ReleasedRayJobs::default();
        let start = Instant::now();
        released.insert(Some("uid-a"), start);
        released.insert(None, start);
        assert!(released.contains(Some("uid-a")));
        assert!(!released.contains(Some("uid-b")));
        assert!(
            !released.contains(None),
            "a RayJob without uid is never taken for a released one"
        );
        released.insert(Some("uid-b"), start + RELEASE_MEMORY);
        assert!(!released.contains(Some("uid-a")), "forgotten once its memory ran out");
        assert!(released.contains(Some("uid-b")));
    }
}
