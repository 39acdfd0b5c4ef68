//! The pure RayJob plan: one reconcile pass of KubeRay's `RayJobReconciler` (see `docs/rayjob.md`)
//! as a function of the RayJob, what was observed (RayCluster, submitter Job, dashboard job info)
//! and the current time, returning the operations to perform and the new status.
//!
//! All four submission modes are handled: `K8sJobMode` (submitter Job), `HTTPMode` (submission
//! through [`RayJobAction::SubmitJob`]), `SidecarMode` (the submitter container of the head pod,
//! observed as a [`SidecarObservation`]) and `InteractiveMode` (Waiting). Cleanup after a finished
//! job covers `deletionStrategy.deletionRules`, the legacy `onSuccess`/`onFailure` policies and
//! `shutdownAfterJobFinishes`. [`execution_duration`] decides the `kuberay_job_execution_duration_seconds`
//! observation of a pass.

use std::ops::ControlFlow;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ray_api::constants::{
    DASHBOARD_PORT_NAME, DEFAULT_SUBMITTER_JOB_BACKOFF_LIMIT, RAY_JOB_STOP_JOB_FINALIZER, SUBMITTER_CONTAINER_NAME,
};
use ray_api::validation::{
    ValidationOptions, validate_ray_job_metadata, validate_ray_job_spec, validate_ray_job_status,
};
use ray_api::{
    ClusterState, DeletionPolicyType, DeletionRule, JobDeploymentStatus, JobFailedReason, JobStatus, JobSubmissionMode,
    RayCluster, RayJob, RayJobStatus, RayJobStatusInfo,
};
use ray_podgen::cluster::head_service_name;

use super::events::reason;
use ray_podgen::names::fqdn;
use ray_podgen::random::SuffixSource;
use ray_podgen::rayjob::{initial_job_id, initial_ray_cluster_name};
use ray_podgen::service::service_ports;

/// KubeRay's `RayJobDefaultRequeueDuration`.
pub const DEFAULT_REQUEUE: Duration = Duration::from_secs(3);
/// Extra delay added to TTL-based cleanup requeues.
pub const CLEANUP_REQUEUE_SLACK: Duration = Duration::from_secs(2);
/// Seconds a finished submitter may wait for the Ray job to become terminal.
pub const SUBMITTER_FINISHED_TIMEOUT_SECONDS: i64 = 30;
/// Default of `RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS`.
pub const DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS: i64 = 300;
/// Default of `RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS`.
pub const DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS: i64 = 300;

/// Message of the grace-period failure.
pub const GRACE_PERIOD_MESSAGE: &str = "JobDeploymentStatus does not transition to Complete or Failed within the grace period after JobStatus reaches a terminal state.";
/// Message when the submitter finished but the Ray job is unknown to the cluster.
pub const SUBMITTER_COMPLETED_JOB_NOT_FOUND: &str = "Submitter completed but Ray job not found in RayCluster.";
/// Message when the head pod of a SidecarMode RayJob's cluster is gone.
pub const SIDECAR_HEAD_POD_NOT_FOUND: &str = "Ray head pod not found.";

/// Operator settings the plan reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RayJobPlanConfig {
    /// `RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS`.
    pub transition_grace_period_seconds: i64,
    /// `RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS`.
    pub status_check_timeout_seconds: i64,
    /// `DELETE_RAYJOB_CR_AFTER_JOB_FINISHES`.
    pub delete_ray_job_cr_after_job_finishes: bool,
    /// `CLUSTER_DOMAIN` (empty = `cluster.local`).
    pub cluster_domain: String,
    /// Validation switches (incl. gate `RayJobDeletionPolicy`).
    pub validation: ValidationOptions,
}

impl Default for RayJobPlanConfig {
    fn default() -> Self {
        Self {
            transition_grace_period_seconds: DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS,
            status_check_timeout_seconds: DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
            delete_ray_job_cr_after_job_finishes: false,
            cluster_domain: String::new(),
            validation: ValidationOptions::default(),
        }
    }
}

/// KubeRay's `getJobStatusCheckTimeoutSeconds`: the env value when a positive integer, else 300.
pub fn status_check_timeout_from_env(value: Option<&str>) -> i64 {
    value
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|v| *v > 0)
        .unwrap_or(DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS)
}

/// The observed submitter batch/v1 Job (K8sJobMode).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubmitterObservation {
    /// `(reason, message)` of a `Failed=True` condition.
    pub failed: Option<(String, String)>,
    /// LastTransitionTime of the first `Complete=True` or `Failed=True` condition.
    pub finished_at: Option<Timestamp>,
    /// Whether the Job has a deletion timestamp.
    pub deleting: bool,
}

impl SubmitterObservation {
    /// Reads the finished/failed conditions of a submitter Job.
    pub fn from_job(job: &Job) -> Self {
        let conditions = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut observation = SubmitterObservation {
            deleting: job.metadata.deletion_timestamp.is_some(),
            ..SubmitterObservation::default()
        };
        for condition in conditions.iter().filter(|c| c.status == "True") {
            if observation.finished_at.is_none() && (condition.type_ == "Complete" || condition.type_ == "Failed") {
                observation.finished_at = condition.last_transition_time.as_ref().map(|t| t.0);
            }
            if condition.type_ == "Failed" && observation.failed.is_none() {
                observation.failed = Some((
                    condition.reason.clone().unwrap_or_default(),
                    condition.message.clone().unwrap_or_default(),
                ));
            }
        }
        observation
    }
}

/// What the head pod says about the SidecarMode submitter container `ray-job-submitter`.
#[derive(Clone, Debug, PartialEq)]
pub enum SidecarObservation {
    /// The cluster has no head pod: the RayJob fails with `Ray head pod not found.` (`AppFailed`).
    HeadPodNotFound,
    /// The head pod exists.
    Submitter {
        /// `state.terminated.finishedAt` of the submitter container.
        finished_at: Option<Timestamp>,
        /// The `SubmissionFailed` message when the submitter failed for good.
        failure: Option<String>,
    },
}

/// Why [`SidecarObservation::from_head_pods`] could not decide.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SidecarObservationError {
    /// More than one pod carries the head labels of the cluster.
    #[error("found {0} head pods for the RayCluster; expected at most one")]
    MultipleHeadPods(usize),
}

impl SidecarObservation {
    /// Reads the submitter container of the cluster's head pods (`checkSidecarContainerAndUpdateStatusIfNeeded`).
    ///
    /// `restart_gate` is the `SidecarSubmitterRestart` feature gate; `backoff_limit` is
    /// `submitterConfig.backoffLimit` (default 2), used only with the gate on.
    pub fn from_head_pods(
        pods: &[Pod],
        restart_gate: bool,
        backoff_limit: Option<i32>,
    ) -> Result<Self, SidecarObservationError> {
        let pod = match pods {
            [] => return Ok(Self::HeadPodNotFound),
            [pod] => pod,
            _ => return Err(SidecarObservationError::MultipleHeadPods(pods.len())),
        };
        let Some(container) = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|all| all.iter().find(|c| c.name == SUBMITTER_CONTAINER_NAME))
        else {
            return Ok(Self::Submitter {
                finished_at: None,
                failure: None,
            });
        };
        let terminated = container.state.as_ref().and_then(|s| s.terminated.as_ref());
        let finished_at = terminated.and_then(|t| t.finished_at.as_ref()).map(|t| t.0);
        let failure = if restart_gate {
            let limit = backoff_limit.unwrap_or(DEFAULT_SUBMITTER_JOB_BACKOFF_LIMIT);
            restart_count_exceeded(container, limit).then(|| {
                format!(
                    "Ray head pod submitter container {SUBMITTER_CONTAINER_NAME} terminated after exceeding the maximum restart count"
                )
            })
        } else {
            terminated.filter(|t| t.exit_code != 0).map(|t| {
                format!(
                    "Ray head pod container {SUBMITTER_CONTAINER_NAME} terminated with exit code {}: {}",
                    t.exit_code,
                    t.reason.clone().unwrap_or_default()
                )
            })
        };
        Ok(Self::Submitter { finished_at, failure })
    }
}

/// `checkIsRestartCountExceeded`: with `SidecarSubmitterRestart`, a submitter container that has
/// restarted (`lastState.terminated`) and is not now a clean exit has failed for good once its
/// `restartCount` reaches `limit`.
pub fn restart_count_exceeded(container: &ContainerStatus, limit: i32) -> bool {
    let restarted = container
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some();
    let clean_exit = container
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code == 0);
    restarted && !clean_exit && container.restart_count >= limit
}

/// The dashboard's answer to `GET /api/jobs/<id>` (only the fields the controller copies).
#[derive(Clone, Debug, PartialEq)]
pub struct DashboardJobInfo {
    /// `status`.
    pub status: JobStatus,
    /// `message`.
    pub message: String,
    /// `start_time` in milliseconds since the epoch (0 = unset).
    pub start_time_ms: u64,
    /// `end_time` in milliseconds since the epoch (0 = unset).
    pub end_time_ms: u64,
}

/// What the dashboard said about `status.jobId`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum DashboardObservation {
    /// Not asked (the RayJob was not `Running`, or no dashboard URL yet).
    #[default]
    NotQueried,
    /// 404: `Job <id> does not exist on the cluster`.
    NotFound,
    /// Any other failure (transport, bad JSON).
    Error(String),
    /// The job's info.
    Info(DashboardJobInfo),
}

/// Everything the plan reads besides the RayJob itself.
#[derive(Clone, Debug)]
pub struct RayJobObservation<'a> {
    /// The RayCluster named `status.rayClusterName`, if it exists.
    pub cluster: Option<&'a RayCluster>,
    /// The submitter Job named like the RayJob, if it exists.
    pub submitter: Option<SubmitterObservation>,
    /// The SidecarMode submitter container (observed only for a `Running` SidecarMode RayJob).
    pub sidecar: Option<SidecarObservation>,
    /// The dashboard's job info (queried by the caller when the RayJob is `Running`).
    pub dashboard: DashboardObservation,
    /// The current time.
    pub now: Timestamp,
}

/// One operation of a RayJob reconcile pass, in execution order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RayJobAction {
    /// Add the finalizer `ray.io/rayjob-finalizer`.
    AddFinalizer,
    /// Remove the finalizer (deletion).
    RemoveFinalizer,
    /// Stop the Ray job through the dashboard (errors only logged).
    StopJob {
        /// `status.dashboardURL`.
        dashboard_url: String,
        /// `status.jobId`.
        job_id: String,
    },
    /// Emit a Warning event for a validation failure.
    ValidationFailedEvent {
        /// `InvalidRayJobMetadata` / `InvalidRayJobSpec` / `InvalidRayJobStatus`.
        reason: &'static str,
        /// `<ns>/<name>: <err>`.
        message: String,
    },
    /// Create the RayCluster (`build_ray_cluster_for_job`).
    CreateRayCluster {
        /// Its name.
        name: String,
    },
    /// Delete the RayCluster (background propagation).
    DeleteRayCluster {
        /// Its name.
        name: String,
    },
    /// Set `suspend: true` on every worker group (`DeleteWorkers`).
    SuspendWorkerGroups {
        /// The cluster's name.
        name: String,
    },
    /// Create or update the RayJob-owned head service `<rayjob>-head-svc` for the cluster.
    EnsureHeadService {
        /// The cluster's name.
        cluster_name: String,
    },
    /// Create the submitter Job (`build_submitter_job`), with the new status already applied.
    CreateSubmitterJob,
    /// Delete the submitter Job (background propagation).
    DeleteSubmitterJob,
    /// `POST /api/jobs/` (HTTPMode); success clears, failure sets `jobStatusCheckFailureStartTime`.
    SubmitJob {
        /// `status.dashboardURL`.
        dashboard_url: String,
        /// `status.jobId`.
        job_id: String,
    },
    /// Delete the RayJob itself (`DeleteSelf` / `DELETE_RAYJOB_CR_AFTER_JOB_FINISHES`).
    DeleteSelf,
    /// Batch-scheduler cleanup (`CleanupOnCompletion` / suspend cleanup).
    CleanupBatchScheduler,
}

/// The result of one pass.
#[derive(Clone, Debug, PartialEq)]
pub struct RayJobPlan {
    /// Operations, in order.
    pub actions: Vec<RayJobAction>,
    /// The new status.
    pub status: RayJobStatus,
    /// Whether the status must be written ([`status_changed`]).
    pub persist: bool,
    /// When to reconcile again (`None` = only on events).
    pub requeue: Option<Duration>,
}

/// Conditions under which KubeRay's reconcile returns an error (requeue after 3 s).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RayJobPlanError {
    /// clusterSelector names a RayCluster that does not exist.
    #[error("clusterSelector mode is enabled, but RayCluster {namespace}/{name} is not found")]
    SelectedClusterNotFound {
        /// Namespace.
        namespace: String,
        /// Cluster name.
        name: String,
    },
    /// The RayCluster of a Running RayJob is gone.
    #[error("RayCluster {namespace}/{name} not found")]
    ClusterNotFound {
        /// Namespace.
        namespace: String,
        /// Cluster name.
        name: String,
    },
    /// The submitter Job of a Running K8sJobMode RayJob is gone.
    #[error("submitter Job {namespace}/{name} not found")]
    SubmitterNotFound {
        /// Namespace.
        namespace: String,
        /// Job name.
        name: String,
    },
    /// The cluster's head service has no `dashboard` port.
    #[error("dashboard port is not found")]
    DashboardPortNotFound,
}

/// Go's `time.Time.String()` for a UTC second-precision time: `2006-01-02 15:04:05 +0000 UTC`.
pub fn go_time_string(t: Timestamp) -> String {
    format!("{} +0000 UTC", go_time_seconds(t))
}

/// `Format("2006-01-02 15:04:05")` in UTC.
pub fn go_time_seconds(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

fn add_secs(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(secs)).unwrap_or(t)
}

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

fn has_cluster_selector(job: &RayJob) -> bool {
    job.spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty())
}

/// `FetchHeadServiceURL(cluster, "dashboard")`: `<head svc>.<ns>.svc.<domain>:<dashboard port>`.
pub fn dashboard_url(cluster: &RayCluster, cluster_domain: &str) -> Result<String, RayJobPlanError> {
    let port = service_ports(cluster)
        .get(DASHBOARD_PORT_NAME)
        .copied()
        .ok_or(RayJobPlanError::DashboardPortNotFound)?;
    let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
    Ok(format!(
        "{}:{port}",
        fqdn(&head_service_name(cluster), &namespace, cluster_domain)
    ))
}

fn ms_to_time(ms: u64) -> Option<Time> {
    if ms == 0 {
        return None;
    }
    let ms = i64::try_from(ms).ok()?;
    Timestamp::from_millisecond(ms).ok().map(Time)
}

/// Working state of one pass.
struct Pass<'a> {
    job: &'a RayJob,
    observed: &'a RayJobObservation<'a>,
    config: &'a RayJobPlanConfig,
    status: RayJobStatus,
    actions: Vec<RayJobAction>,
}

/// What the submitter reported while the job runs.
#[derive(Debug, Default)]
struct SubmitterReport {
    /// When the submitter finished.
    finished_at: Option<Timestamp>,
    /// Why it failed, as the `SubmissionFailed` message.
    failure: Option<String>,
}

/// How a branch of the switch ended.
enum Flow {
    /// KubeRay's `break`: backoff accounting, then persist and requeue 3 s.
    Break,
    /// KubeRay's early `return` with this requeue (status written only if `persist`).
    Return { requeue: Option<Duration>, persist: bool },
}

impl Pass<'_> {
    fn deployment(&self) -> JobDeploymentStatus {
        self.status
            .job_deployment_status
            .clone()
            .unwrap_or(JobDeploymentStatus::New)
    }

    fn job_status(&self) -> JobStatus {
        self.status.job_status.clone().unwrap_or(JobStatus::New)
    }

    fn set_deployment(&mut self, to: JobDeploymentStatus) {
        self.status.job_deployment_status = Some(to);
    }

    fn fail(&mut self, reason: JobFailedReason, message: String) {
        self.set_deployment(JobDeploymentStatus::Failed);
        self.status.reason = Some(reason);
        self.status.message = Some(message);
    }

    fn cluster_name(&self) -> String {
        self.status.ray_cluster_name.clone().unwrap_or_default()
    }

    fn namespace(&self) -> String {
        self.job.metadata.namespace.clone().unwrap_or_default()
    }

    fn start_time(&self) -> Option<Timestamp> {
        self.status.start_time.as_ref().map(|t| t.0)
    }

    /// `checkActiveDeadlineAndUpdateStatusIfNeeded`.
    fn active_deadline_exceeded(&mut self) -> bool {
        let (Some(secs), Some(start)) = (self.job.spec.active_deadline_seconds, self.start_time()) else {
            return false;
        };
        if self.observed.now < add_secs(start, i64::from(secs)) {
            return false;
        }
        self.fail(
            JobFailedReason::DeadlineExceeded,
            format!(
                "The RayJob has passed the activeDeadlineSeconds. StartTime: {}. ActiveDeadlineSeconds: {secs}",
                go_time_string(start)
            ),
        );
        true
    }

    /// `checkPreRunningDeadlineAndUpdateStatusIfNeeded`.
    fn pre_running_deadline_exceeded(&mut self) -> bool {
        let (Some(secs), Some(start)) = (self.job.spec.pre_running_deadline_seconds, self.start_time()) else {
            return false;
        };
        if self.observed.now < add_secs(start, i64::from(secs)) {
            return false;
        }
        self.fail(
            JobFailedReason::PreRunningDeadlineExceeded,
            format!(
                "The RayJob has passed the preRunningDeadlineSeconds. StartTime: {}. PreRunningDeadlineSeconds: {secs}",
                go_time_string(start)
            ),
        );
        true
    }

    /// `checkTransitionGracePeriodAndUpdateStatusIfNeeded`.
    fn transition_grace_period_exceeded(&mut self) -> bool {
        let job_status = self.job_status();
        if !job_status.is_terminal() {
            return false;
        }
        let Some(end) = self
            .status
            .ray_job_info
            .as_ref()
            .and_then(|i| i.end_time.as_ref())
            .map(|t| t.0)
        else {
            return false;
        };
        if self.observed.now < add_secs(end, self.config.transition_grace_period_seconds) {
            return false;
        }
        let to = if job_status == JobStatus::Failed {
            JobDeploymentStatus::Failed
        } else {
            JobDeploymentStatus::Complete
        };
        self.set_deployment(to);
        self.status.reason = Some(JobFailedReason::JobDeploymentStatusTransitionGracePeriodExceeded);
        self.status.message = Some(GRACE_PERIOD_MESSAGE.to_owned());
        true
    }

    /// `checkJobStatusCheckTimeoutAndUpdateStatusIfNeeded`.
    fn status_check_timed_out(&mut self) -> bool {
        let Some(since) = self.status.job_status_check_failure_start_time.as_ref().map(|t| t.0) else {
            return false;
        };
        let timeout = self.config.status_check_timeout_seconds;
        if self.observed.now < add_secs(since, timeout) {
            return false;
        }
        self.fail(
            JobFailedReason::JobStatusCheckTimeoutExceeded,
            format!(
                "Job status checks have been failing since {}; exceeded timeout of {timeout}s",
                go_time_seconds(since)
            ),
        );
        true
    }

    fn new_branch(&mut self, suffixes: &mut dyn SuffixSource) -> Flow {
        let has_finalizer = self
            .job
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == RAY_JOB_STOP_JOB_FINALIZER));
        if !has_finalizer {
            self.actions.push(RayJobAction::AddFinalizer);
        }
        // initRayJobStatusIfNeed: skipped only when all three are already set.
        let all_set = non_empty(self.status.job_id.as_ref()).is_some()
            && non_empty(self.status.ray_cluster_name.as_ref()).is_some()
            && self.job_status() != JobStatus::New;
        if all_set {
            return Flow::Break;
        }
        if non_empty(self.status.job_id.as_ref()).is_none()
            && let Some(id) = initial_job_id(self.job, suffixes)
        {
            self.status.job_id = Some(id);
        }
        if non_empty(self.status.ray_cluster_name.as_ref()).is_none() {
            self.status.ray_cluster_name = Some(initial_ray_cluster_name(self.job, suffixes));
        }
        self.status.job_status = Some(JobStatus::New);
        self.set_deployment(JobDeploymentStatus::Initializing);
        self.status.start_time = Some(Time(self.observed.now));
        Flow::Break
    }

    fn initializing_branch(&mut self) -> Result<Flow, RayJobPlanError> {
        if self.job.spec.suspend() {
            self.set_deployment(JobDeploymentStatus::Suspending);
            return Ok(Flow::Break);
        }
        if self.active_deadline_exceeded() || self.pre_running_deadline_exceeded() {
            return Ok(Flow::Break);
        }
        let Some(cluster) = self.observed.cluster else {
            if has_cluster_selector(self.job) {
                return Err(RayJobPlanError::SelectedClusterNotFound {
                    namespace: self.namespace(),
                    name: self.cluster_name(),
                });
            }
            self.actions.push(RayJobAction::CreateRayCluster {
                name: self.cluster_name(),
            });
            return Ok(Flow::Break);
        };
        self.status.ray_cluster_status = cluster.status.clone();
        let dashboard_missing = non_empty(self.status.dashboard_url.as_ref()).is_none();
        if dashboard_missing {
            let ready = cluster.status.as_ref().and_then(|s| s.state.as_ref()) == Some(&ClusterState::Ready);
            if !ready {
                return Ok(Flow::Break);
            }
            self.status.dashboard_url = Some(dashboard_url(cluster, &self.config.cluster_domain)?);
        }
        match self.job.spec.submission_mode() {
            JobSubmissionMode::InteractiveMode => self.set_deployment(JobDeploymentStatus::Waiting),
            JobSubmissionMode::K8sJobMode => {
                if self.observed.submitter.is_none() {
                    self.actions.push(RayJobAction::CreateSubmitterJob);
                }
                self.set_deployment(JobDeploymentStatus::Running);
            }
            _ => self.set_deployment(JobDeploymentStatus::Running),
        }
        Ok(Flow::Break)
    }

    fn waiting_branch(&mut self) -> Flow {
        if self.pre_running_deadline_exceeded() {
            return Flow::Break;
        }
        match non_empty(self.job.spec.job_id.as_ref()) {
            None => Flow::Return {
                requeue: Some(DEFAULT_REQUEUE),
                persist: false,
            },
            Some(id) => {
                self.status.job_id = Some(id.to_owned());
                self.set_deployment(JobDeploymentStatus::Running);
                Flow::Break
            }
        }
    }

    fn running_branch(&mut self) -> Result<Flow, RayJobPlanError> {
        if self.job.spec.suspend() {
            self.set_deployment(JobDeploymentStatus::Suspending);
            return Ok(Flow::Break);
        }
        if self.active_deadline_exceeded() || self.transition_grace_period_exceeded() || self.status_check_timed_out() {
            return Ok(Flow::Break);
        }
        let Some(cluster) = self.observed.cluster else {
            return Err(RayJobPlanError::ClusterNotFound {
                namespace: self.namespace(),
                name: self.cluster_name(),
            });
        };
        if !has_cluster_selector(self.job) {
            self.actions.push(RayJobAction::EnsureHeadService {
                cluster_name: self.cluster_name(),
            });
        }
        let mode = self.job.spec.submission_mode();
        let has_submitter = matches!(mode, JobSubmissionMode::K8sJobMode | JobSubmissionMode::SidecarMode);
        let report = match self.submitter_report(&mode)? {
            ControlFlow::Continue(report) => report,
            ControlFlow::Break(flow) => return Ok(flow),
        };
        let finished_at = report.finished_at;
        if has_submitter && let ControlFlow::Break(flow) = self.judge_submitter(report) {
            return Ok(flow);
        }
        Ok(self.follow_dashboard(cluster, &mode, has_submitter, finished_at))
    }

    /// What the submitter reports while the job runs: the submitter Job (K8sJobMode) or the head
    /// pod's submitter container (SidecarMode; a cluster without head pod fails the job). Other
    /// modes have no submitter.
    fn submitter_report(
        &mut self,
        mode: &JobSubmissionMode,
    ) -> Result<ControlFlow<Flow, SubmitterReport>, RayJobPlanError> {
        match mode {
            JobSubmissionMode::K8sJobMode => {
                let Some(submitter) = self.observed.submitter.as_ref() else {
                    return Err(RayJobPlanError::SubmitterNotFound {
                        namespace: self.namespace(),
                        name: self.job.metadata.name.clone().unwrap_or_default(),
                    });
                };
                Ok(ControlFlow::Continue(SubmitterReport {
                    finished_at: submitter.finished_at,
                    failure: submitter.failed.as_ref().map(|(reason, message)| {
                        format!("Job submission has failed. Reason: {reason}. Message: {message}")
                    }),
                }))
            }
            JobSubmissionMode::SidecarMode => match self.observed.sidecar.clone() {
                Some(SidecarObservation::HeadPodNotFound) => {
                    self.fail(JobFailedReason::AppFailed, SIDECAR_HEAD_POD_NOT_FOUND.to_owned());
                    Ok(ControlFlow::Break(Flow::Break))
                }
                Some(SidecarObservation::Submitter { finished_at, failure }) => {
                    Ok(ControlFlow::Continue(SubmitterReport { finished_at, failure }))
                }
                None => Ok(ControlFlow::Continue(SubmitterReport::default())),
            },
            _ => Ok(ControlFlow::Continue(SubmitterReport::default())),
        }
    }

    /// A failed submitter fails the job (keeping the dashboard's verdict when the Ray job itself
    /// failed), and so does a submitter that finished long ago while the Ray job is not terminal.
    fn judge_submitter(&mut self, report: SubmitterReport) -> ControlFlow<Flow> {
        let submitter_failed = report.failure.is_some();
        if let Some(message) = report.failure {
            if self.job_status() == JobStatus::Failed {
                // The Ray job itself failed: keep the dashboard's message.
                self.set_deployment(JobDeploymentStatus::Failed);
                self.status.reason = Some(JobFailedReason::AppFailed);
            } else {
                self.fail(JobFailedReason::SubmissionFailed, message);
            }
        }
        if let Some(at) = report.finished_at
            && self.observed.now > add_secs(at, SUBMITTER_FINISHED_TIMEOUT_SECONDS)
        {
            self.status.job_status = Some(JobStatus::Failed);
            self.fail(
                JobFailedReason::JobDeploymentStatusTransitionGracePeriodExceeded,
                format!(
                    "The RayJob submitter finished at {} but the ray job did not reach terminal state within {SUBMITTER_FINISHED_TIMEOUT_SECONDS}s",
                    go_time_seconds(at)
                ),
            );
            return ControlFlow::Break(Flow::Break);
        }
        if submitter_failed {
            return ControlFlow::Break(Flow::Break);
        }
        ControlFlow::Continue(())
    }

    /// What the dashboard's answer about the Ray job means for the RayJob: submit it (HTTPMode),
    /// wait, count a failed query, or take over its status.
    fn follow_dashboard(
        &mut self,
        cluster: &RayCluster,
        mode: &JobSubmissionMode,
        has_submitter: bool,
        finished_at: Option<Timestamp>,
    ) -> Flow {
        let wait = Flow::Return {
            requeue: Some(DEFAULT_REQUEUE),
            persist: false,
        };
        match self.observed.dashboard.clone() {
            DashboardObservation::NotQueried => wait,
            DashboardObservation::NotFound => {
                if *mode == JobSubmissionMode::HttpMode {
                    self.actions.push(RayJobAction::SubmitJob {
                        dashboard_url: self.status.dashboard_url.clone().unwrap_or_default(),
                        job_id: self.status.job_id.clone().unwrap_or_default(),
                    });
                    return Flow::Break;
                }
                if finished_at.is_some() {
                    self.fail(JobFailedReason::AppFailed, SUBMITTER_COMPLETED_JOB_NOT_FOUND.to_owned());
                    return Flow::Break;
                }
                wait
            }
            DashboardObservation::Error(_) => {
                let first = self.status.job_status_check_failure_start_time.is_none();
                if first {
                    self.status.job_status_check_failure_start_time = Some(Time(self.observed.now));
                }
                Flow::Return {
                    requeue: Some(DEFAULT_REQUEUE),
                    persist: first,
                }
            }
            DashboardObservation::Info(info) => {
                let terminal = info.status.is_terminal() && (!has_submitter || finished_at.is_some());
                self.take_job_info(cluster, &info, terminal);
                Flow::Break
            }
        }
    }

    /// Takes the dashboard's job info into the status; a terminal Ray job completes or fails the
    /// RayJob, any other keeps it Running.
    fn take_job_info(&mut self, cluster: &RayCluster, info: &DashboardJobInfo, terminal: bool) {
        self.status.job_status_check_failure_start_time = None;
        self.status.ray_cluster_status = cluster.status.clone();
        self.status.job_status = Some(info.status.clone());
        self.status.message = Some(info.message.clone());
        let mut ray_job_info = self.status.ray_job_info.clone().unwrap_or_default();
        if let Some(t) = ms_to_time(info.start_time_ms) {
            ray_job_info.start_time = Some(t);
        }
        if let Some(t) = ms_to_time(info.end_time_ms) {
            ray_job_info.end_time = Some(t);
        }
        self.status.ray_job_info = Some(RayJobStatusInfo { ..ray_job_info });
        if terminal {
            if info.status == JobStatus::Failed {
                self.set_deployment(JobDeploymentStatus::Failed);
                self.status.reason = Some(JobFailedReason::AppFailed);
            } else {
                self.set_deployment(JobDeploymentStatus::Complete);
                self.status.reason = None;
            }
        } else {
            self.set_deployment(JobDeploymentStatus::Running);
            self.status.reason = None;
        }
    }

    /// Suspending / Retrying: delete cluster and submitter, wait until both are gone, reset.
    fn teardown_branch(&mut self, to: JobDeploymentStatus) -> Flow {
        let mut gone = true;
        if !has_cluster_selector(self.job)
            && let Some(cluster) = self.observed.cluster
        {
            gone = false;
            if cluster.metadata.deletion_timestamp.is_none() {
                self.actions.push(RayJobAction::DeleteRayCluster {
                    name: self.cluster_name(),
                });
            }
        }
        let mode = self.job.spec.submission_mode();
        if matches!(mode, JobSubmissionMode::K8sJobMode | JobSubmissionMode::InteractiveMode)
            && let Some(submitter) = self.observed.submitter.as_ref()
        {
            gone = false;
            if !submitter.deleting {
                self.actions.push(RayJobAction::DeleteSubmitterJob);
            }
        }
        if !gone {
            return Flow::Return {
                requeue: Some(DEFAULT_REQUEUE),
                persist: false,
            };
        }
        self.actions.push(RayJobAction::CleanupBatchScheduler);
        self.status.ray_cluster_status = None;
        self.status.ray_cluster_name = None;
        self.status.dashboard_url = None;
        self.status.job_id = None;
        self.status.message = None;
        self.status.reason = None;
        self.status.ray_job_info = None;
        self.status.job_status_check_failure_start_time = None;
        self.status.job_status = Some(JobStatus::New);
        self.set_deployment(to);
        Flow::Break
    }

    fn suspended_branch(&mut self) -> Flow {
        if self.job.spec.suspend() {
            return Flow::Return {
                requeue: None,
                persist: false,
            };
        }
        self.set_deployment(JobDeploymentStatus::New);
        self.status.job_status = Some(JobStatus::New);
        Flow::Break
    }

    /// Complete / Failed: the cleanup of a finished job (legacy deletion strategy and
    /// shutdownAfterJobFinishes).
    fn finished_branch(&mut self) -> Flow {
        self.actions.push(RayJobAction::CleanupBatchScheduler);
        let done = Flow::Return {
            requeue: None,
            persist: false,
        };
        if has_cluster_selector(self.job) {
            return done;
        }
        let strategy = self
            .job
            .spec
            .deletion_strategy
            .as_ref()
            .filter(|_| self.config.validation.ray_job_deletion_policy);
        let policy = if let Some(strategy) = strategy {
            if let Some(rules) = strategy.deletion_rules.as_ref() {
                return self.deletion_rules(rules);
            }
            let legacy = match self.job_status() {
                JobStatus::Succeeded => strategy.on_success.as_ref(),
                JobStatus::Failed => strategy.on_failure.as_ref(),
                _ => None,
            };
            match legacy.and_then(|p| p.policy) {
                None | Some(DeletionPolicyType::DeleteNone) => return done,
                Some(policy) => policy,
            }
        } else if self.job.spec.shutdown_after_job_finishes() {
            if self.config.delete_ray_job_cr_after_job_finishes {
                DeletionPolicyType::DeleteSelf
            } else {
                DeletionPolicyType::DeleteCluster
            }
        } else {
            return done;
        };
        let ttl = i64::from(self.job.spec.ttl_seconds_after_finished.unwrap_or(0));
        let end = self.status.end_time.as_ref().map_or(self.observed.now, |t| t.0);
        let deadline = add_secs(end, ttl);
        if self.observed.now < deadline {
            let remaining = self.observed.now.duration_until(deadline).unsigned_abs();
            return Flow::Return {
                requeue: Some(remaining + CLEANUP_REQUEUE_SLACK),
                persist: false,
            };
        }
        let cluster_live = self
            .observed
            .cluster
            .is_some_and(|c| c.metadata.deletion_timestamp.is_none());
        match policy {
            DeletionPolicyType::DeleteCluster if cluster_live => {
                self.actions.push(RayJobAction::DeleteRayCluster {
                    name: self.cluster_name(),
                });
            }
            DeletionPolicyType::DeleteWorkers if cluster_live => {
                self.actions.push(RayJobAction::SuspendWorkerGroups {
                    name: self.cluster_name(),
                });
            }
            DeletionPolicyType::DeleteSelf => self.actions.push(RayJobAction::DeleteSelf),
            _ => {}
        }
        done
    }

    /// Whether the effect of `policy` is already in place (`isDeletionActionCompleted`).
    fn deletion_done(&self, policy: DeletionPolicyType) -> bool {
        let live_cluster = self
            .observed
            .cluster
            .filter(|c| c.metadata.deletion_timestamp.is_none());
        match policy {
            DeletionPolicyType::DeleteNone => true,
            DeletionPolicyType::DeleteSelf => false,
            DeletionPolicyType::DeleteCluster => live_cluster.is_none(),
            DeletionPolicyType::DeleteWorkers => live_cluster.is_none_or(|c| {
                c.spec
                    .worker_group_specs
                    .iter()
                    .flatten()
                    .all(|g| g.suspend == Some(true))
            }),
        }
    }

    /// `deletionRules` mode of the cleanup: among the matching rules whose `endTime + ttlSeconds` has
    /// passed and whose effect is not in place yet, carry out only the most impactful one; requeue
    /// for the earliest rule still in the future.
    fn deletion_rules(&mut self, rules: &[DeletionRule]) -> Flow {
        let job_status = self.job_status();
        let deployment = self.deployment();
        let end = self.status.end_time.as_ref().map_or(self.observed.now, |t| t.0);
        let mut overdue: Option<DeletionPolicyType> = None;
        let mut next: Option<Timestamp> = None;
        for rule in rules {
            let condition = &rule.condition;
            let matched = condition.job_status.as_ref() == Some(&job_status)
                || condition.job_deployment_status.as_ref() == Some(&deployment);
            if !matched {
                continue;
            }
            let deadline = add_secs(end, i64::from(condition.ttl_seconds.unwrap_or(0)));
            if self.observed.now >= deadline {
                if !self.deletion_done(rule.policy) && overdue.is_none_or(|o| impact(rule.policy) > impact(o)) {
                    overdue = Some(rule.policy);
                }
            } else if next.is_none_or(|n| deadline < n) {
                next = Some(deadline);
            }
        }
        if let Some(policy) = overdue {
            self.push_deletion(policy);
        }
        let requeue = match next {
            Some(deadline) => Some(self.observed.now.duration_until(deadline).unsigned_abs() + CLEANUP_REQUEUE_SLACK),
            // One action per pass: look again for rules that are still overdue.
            None => overdue.map(|_| DEFAULT_REQUEUE),
        };
        Flow::Return {
            requeue,
            persist: false,
        }
    }

    /// Pushes the action carrying out `policy`.
    fn push_deletion(&mut self, policy: DeletionPolicyType) {
        let name = self.cluster_name();
        match policy {
            DeletionPolicyType::DeleteCluster => self.actions.push(RayJobAction::DeleteRayCluster { name }),
            DeletionPolicyType::DeleteWorkers => self.actions.push(RayJobAction::SuspendWorkerGroups { name }),
            DeletionPolicyType::DeleteSelf => self.actions.push(RayJobAction::DeleteSelf),
            DeletionPolicyType::DeleteNone => {}
        }
    }

    /// `checkBackoffLimitAndUpdateStatusIfNeeded`.
    fn backoff_accounting(&mut self) {
        let mut failed = self.status.failed.unwrap_or(0);
        let mut succeeded = self.status.succeeded.unwrap_or(0);
        let deployment = self.deployment();
        if deployment == JobDeploymentStatus::Failed {
            failed += 1;
        }
        if self.job_status() == JobStatus::Succeeded && deployment == JobDeploymentStatus::Complete {
            succeeded += 1;
        }
        self.status.failed = Some(failed);
        self.status.succeeded = Some(succeeded);
        let Some(limit) = self.job.spec.backoff_limit else {
            return;
        };
        if deployment != JobDeploymentStatus::Failed || failed >= limit.saturating_add(1) {
            return;
        }
        if matches!(
            self.status.reason,
            Some(JobFailedReason::DeadlineExceeded | JobFailedReason::JobStatusCheckTimeoutExceeded)
        ) {
            return;
        }
        self.set_deployment(JobDeploymentStatus::Retrying);
    }
}

/// How far-reaching a deletion policy is (`selectMostImpactfulRule`): `DeleteSelf` > `DeleteCluster` >
/// `DeleteWorkers` > `DeleteNone`.
pub fn impact(policy: DeletionPolicyType) -> u8 {
    match policy {
        DeletionPolicyType::DeleteSelf => 4,
        DeletionPolicyType::DeleteCluster => 3,
        DeletionPolicyType::DeleteWorkers => 2,
        DeletionPolicyType::DeleteNone => 1,
    }
}

/// One `kuberay_job_execution_duration_seconds` observation.
#[derive(Clone, Debug, PartialEq)]
pub struct ExecutionDuration {
    /// The new `jobDeploymentStatus` (`Complete`, `Failed` or `Retrying`).
    pub job_deployment_status: JobDeploymentStatus,
    /// `status.failed` before the pass.
    pub retry_count: i32,
    /// Seconds since `status.startTime`.
    pub seconds: f64,
}

/// `emitRayJobExecutionDuration`: a pass that moves a RayJob from a non-terminal deployment status
/// to `Complete`, `Failed` or `Retrying` observes the time since `startTime`.
pub fn execution_duration(old: &RayJobStatus, new: &RayJobStatus, now: Timestamp) -> Option<ExecutionDuration> {
    let was = old.job_deployment_status.clone().unwrap_or(JobDeploymentStatus::New);
    let is = new.job_deployment_status.clone().unwrap_or(JobDeploymentStatus::New);
    if was.is_terminal() || !(is.is_terminal() || is == JobDeploymentStatus::Retrying) {
        return None;
    }
    let start = new.start_time.as_ref().or(old.start_time.as_ref())?.0;
    Some(ExecutionDuration {
        job_deployment_status: is,
        retry_count: old.failed.unwrap_or(0),
        seconds: start.duration_until(now).as_secs_f64(),
    })
}

/// `isJobStatusChanged` + cluster-status comparison: whether `new` must be written.
pub fn status_changed(old: &RayJobStatus, new: &RayJobStatus) -> bool {
    old.job_status.clone().unwrap_or(JobStatus::New) != new.job_status.clone().unwrap_or(JobStatus::New)
        || old.job_deployment_status.clone().unwrap_or(JobDeploymentStatus::New)
            != new.job_deployment_status.clone().unwrap_or(JobDeploymentStatus::New)
        || old.job_status_check_failure_start_time != new.job_status_check_failure_start_time
        || cluster_status_differs(old, new)
}

fn cluster_status_differs(old: &RayJobStatus, new: &RayJobStatus) -> bool {
    let (a, b) = (
        old.ray_cluster_status.clone().unwrap_or_default(),
        new.ray_cluster_status.clone().unwrap_or_default(),
    );
    a.state != b.state
        || a.reason != b.reason
        || a.ready_worker_replicas != b.ready_worker_replicas
        || a.available_worker_replicas != b.available_worker_replicas
        || a.desired_worker_replicas != b.desired_worker_replicas
        || a.min_worker_replicas != b.min_worker_replicas
        || a.max_worker_replicas != b.max_worker_replicas
        || a.endpoints != b.endpoints
        || a.head != b.head
        || a.conditions != b.conditions
}

fn validation_failure(job: &RayJob, options: &ValidationOptions) -> Option<(&'static str, String)> {
    if let Err(e) = validate_ray_job_metadata(&job.metadata) {
        return Some((reason::INVALID_RAY_JOB_METADATA, e.message));
    }
    if let Err(e) = validate_ray_job_spec(job, options) {
        return Some((reason::INVALID_RAY_JOB_SPEC, e.message));
    }
    if let Err(e) = validate_ray_job_status(job) {
        return Some((reason::INVALID_RAY_JOB_STATUS, e.message));
    }
    None
}

/// One reconcile pass of the RayJob `job` (KubeRay's `RayJobReconciler.Reconcile`, minus I/O).
///
/// `suffixes` supplies the random `-xxxxx` suffixes of a new cluster name / job id. The caller
/// queries the dashboard (into `observed.dashboard`) only when the stored status is `Running` with
/// a dashboard URL and job id. Errors mirror KubeRay's error returns (requeue after 3 s).
pub fn plan_ray_job(
    job: &RayJob,
    observed: &RayJobObservation<'_>,
    config: &RayJobPlanConfig,
    suffixes: &mut dyn SuffixSource,
) -> Result<RayJobPlan, RayJobPlanError> {
    let old = job.status.clone().unwrap_or_default();
    let mut pass = Pass {
        job,
        observed,
        config,
        status: old.clone(),
        actions: Vec::new(),
    };

    if job.metadata.deletion_timestamp.is_some() {
        if !pass.job_status().is_terminal() {
            pass.actions.push(RayJobAction::StopJob {
                dashboard_url: old.dashboard_url.clone().unwrap_or_default(),
                job_id: old.job_id.clone().unwrap_or_default(),
            });
        }
        pass.actions.push(RayJobAction::RemoveFinalizer);
        return Ok(RayJobPlan {
            actions: pass.actions,
            status: old,
            persist: false,
            requeue: Some(DEFAULT_REQUEUE),
        });
    }

    if let Some((reason, message)) = validation_failure(job, &config.validation) {
        pass.actions.push(RayJobAction::ValidationFailedEvent {
            reason,
            message: format!(
                "{}/{}: {message}",
                pass.namespace(),
                job.metadata.name.as_deref().unwrap_or_default()
            ),
        });
        pass.set_deployment(JobDeploymentStatus::ValidationFailed);
        pass.status.reason = Some(JobFailedReason::ValidationFailed);
        pass.status.message = Some(message);
        return Ok(RayJobPlan {
            actions: pass.actions,
            persist: true,
            status: pass.status,
            requeue: None,
        });
    }

    let flow = match pass.deployment() {
        JobDeploymentStatus::New => pass.new_branch(suffixes),
        JobDeploymentStatus::Initializing => pass.initializing_branch()?,
        JobDeploymentStatus::Waiting => pass.waiting_branch(),
        JobDeploymentStatus::Running => pass.running_branch()?,
        JobDeploymentStatus::Suspending => pass.teardown_branch(JobDeploymentStatus::Suspended),
        JobDeploymentStatus::Retrying => pass.teardown_branch(JobDeploymentStatus::New),
        JobDeploymentStatus::Suspended => pass.suspended_branch(),
        JobDeploymentStatus::Complete | JobDeploymentStatus::Failed => pass.finished_branch(),
        _ => Flow::Return {
            requeue: Some(DEFAULT_REQUEUE),
            persist: false,
        },
    };

    let (requeue, persist) = match flow {
        Flow::Break => {
            pass.backoff_accounting();
            (Some(DEFAULT_REQUEUE), status_changed(&old, &pass.status))
        }
        Flow::Return { requeue, persist } => (requeue, persist),
    };
    if persist && pass.deployment().is_terminal() {
        pass.status.end_time = Some(Time(observed.now));
    }
    Ok(RayJobPlan {
        actions: pass.actions,
        status: pass.status,
        persist,
        requeue,
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
