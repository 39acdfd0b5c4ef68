//! One hollow Ray head: job and serve-application state, and the dashboard HTTP API over it.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use std::sync::Arc;

use crate::HollowRayOptions;
use crate::actors::ActorTable;
use crate::dashboard_load::{DashboardCall, DashboardLoad, InFlight};
use kube_sim::http::proxy::{ProxyBackend, ProxyFuture, ProxyRequest, ProxyResponse};
use ray_api::constants::DEFAULT_DASHBOARD_AGENT_LISTEN_PORT;

/// Default dashboard port (`dashboard`).
pub const DEFAULT_DASHBOARD_PORT: i64 = 8265;
/// Default serve port (`serve`).
pub const DEFAULT_SERVE_PORT: i64 = 8000;

/// Why the head refused a request. The `Display` text is what Ray's dashboard ends its response body with (Ray
/// answers a Python traceback whose last line is this; docs/ray-fidelity.md).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RayHeadError {
    /// The request body is not JSON (HTTP 500, the web server's own answer).
    #[error("{}", crate::wire::SERVER_TROUBLE)]
    MalformedBody,
    /// The job submission does not fit Ray's `JobSubmitRequest` (HTTP 400): the `TypeError` line.
    #[error("{0}")]
    BadRequest(String),
    /// A job with this submission id exists (HTTP 500, Ray's text, which KubeRay matches on).
    #[error("ValueError: Job with submission_id {0} already exists. Please use a different submission_id.")]
    DuplicateSubmissionId(String),
    /// No job with this id (HTTP 404).
    #[error("Job {0} does not exist")]
    JobNotFound(String),
    /// Deleting a job that has not finished (HTTP 500).
    #[error("RuntimeError: Attempted to delete job '{0}', but it is in a non-terminal state {1}.")]
    NotTerminal(String, JobStatus),
    /// A serve config that is not JSON (HTTP 500): Python's `JSONDecodeError` line.
    #[error("json.decoder.JSONDecodeError: {0}")]
    ServeConfigNotJson(String),
    /// An invalid serve config (HTTP 400): pydantic's validation report.
    #[error("{0}")]
    InvalidServeConfig(String),
}

impl RayHeadError {
    /// The HTTP status Ray's dashboard answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) | Self::InvalidServeConfig(_) => StatusCode::BAD_REQUEST,
            Self::MalformedBody
            | Self::DuplicateSubmissionId(_)
            | Self::NotTerminal(..)
            | Self::ServeConfigNotJson(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::JobNotFound(_) => StatusCode::NOT_FOUND,
        }
    }
}

/// A Ray job's status (`status` field; Ray's `JobStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    /// Submitted, the driver has not started.
    Pending,
    /// The entrypoint is running.
    Running,
    /// Stopped through the stop API.
    Stopped,
    /// The entrypoint exited 0.
    Succeeded,
    /// The entrypoint exited non-zero.
    Failed,
}

impl JobStatus {
    /// The wire string (`PENDING`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Running => "RUNNING",
            Self::Stopped => "STOPPED",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
        }
    }

    /// `STOPPED`, `SUCCEEDED` or `FAILED`.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Stopped | Self::Succeeded | Self::Failed)
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A serve application's status (Ray's `ApplicationStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AppStatus {
    /// Not deployed yet.
    NotStarted,
    /// Being deployed or updated.
    Deploying,
    /// The deployment failed.
    DeployFailed,
    /// All deployments are healthy.
    Running,
    /// A deployment is unhealthy.
    Unhealthy,
    /// Being deleted.
    Deleting,
}

/// A serve deployment's status (Ray's `DeploymentStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeploymentStatus {
    /// Replicas are being started or updated.
    Updating,
    /// All replicas are healthy.
    Healthy,
    /// Some replica is unhealthy.
    Unhealthy,
    /// The deployment failed.
    DeployFailed,
    /// Scaling up.
    Upscaling,
    /// Scaling down.
    Downscaling,
}

/// Body of `POST /api/jobs/` (Ray's `JobSubmitRequest`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobSubmitRequest {
    /// The shell command to run.
    pub entrypoint: String,
    /// The submission id; generated (`raysubmit_…`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
    /// Deprecated alias of `submission_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// Runtime environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_env: Option<Value>,
    /// User metadata (string → string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// CPUs reserved for the entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_gpus: Option<f64>,
    /// Memory (bytes) reserved for the entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_memory: Option<u64>,
    /// Custom resources reserved for the entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_resources: Option<BTreeMap<String, f64>>,
}

/// Answer to `POST /api/jobs/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSubmitResponse {
    /// The submission id (Ray answers it under `job_id` for backward compatibility).
    pub job_id: String,
    /// The submission id.
    pub submission_id: String,
}

/// A job as `GET /api/jobs/{id}` shows it (Ray's `JobDetails`, field for field; KubeRay reads `error_type`,
/// `metadata`, `runtime_env`, `status`, `entrypoint`, `job_id`, `submission_id`, `message`, `start_time`,
/// `end_time`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    /// Always `SUBMISSION`.
    #[serde(rename = "type")]
    pub job_type: String,
    /// The driver's Ray job id (hex), `null` until the driver starts.
    pub job_id: Option<String>,
    /// The submission id.
    pub submission_id: String,
    /// The driver (`id`, `node_ip_address`, `pid`) once it runs, else `null`.
    pub driver_info: Option<Value>,
    /// Status.
    pub status: JobStatus,
    /// The entrypoint command.
    pub entrypoint: String,
    /// Human-readable status message.
    pub message: String,
    /// `JOB_ENTRYPOINT_COMMAND_ERROR` when the entrypoint failed, else `null`.
    pub error_type: Option<String>,
    /// Submission time, ms since the epoch.
    pub start_time: i64,
    /// End time (ms since the epoch) once terminal, else `null`.
    pub end_time: Option<i64>,
    /// User metadata, `null` when none was given.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Runtime environment, `null` when none was given.
    pub runtime_env: Option<Value>,
    /// The job agent that runs the entrypoint (`http://<node ip>:<agent port>`), once it started.
    pub driver_agent_http_address: Option<String>,
    /// The Ray node the entrypoint runs on, once it started.
    pub driver_node_id: Option<String>,
    /// The entrypoint's exit code once it exited, else `null`.
    pub driver_exit_code: Option<i32>,
}

/// The hollow head's Ray node id (56 hex digits, as Ray's node ids are).
const HEAD_NODE_ID: &str = "686f6c6c6f772d686561642d6e6f6465000000000000000000000000";
/// The address the hollow head's node reports (Ray's `node_ip_address`).
const HEAD_NODE_IP: &str = "127.0.0.1";

/// The job agent's address on the head node: the dashboard agent's default listen port.
fn job_agent_address() -> String {
    format!("http://{HEAD_NODE_IP}:{DEFAULT_DASHBOARD_AGENT_LISTEN_PORT}")
}

struct Job {
    request: JobSubmitRequest,
    submission_id: String,
    driver_id: String,
    submitted_ms: i64,
    pending_ms: i64,
    run_ms: i64,
    exit_code: i32,
    /// When the stop API was called.
    stop_requested_ms: Option<i64>,
    /// How long a stop takes to end the entrypoint.
    stop_ms: i64,
    /// Whether the head's log already says how the job ended.
    end_logged: bool,
}

impl Job {
    /// When the entrypoint starts running.
    fn started_ms(&self) -> i64 {
        self.submitted_ms + self.pending_ms
    }

    /// When a requested stop takes effect.
    fn stopped_ms(&self) -> Option<i64> {
        self.stop_requested_ms.map(|s| s + self.stop_ms)
    }

    /// The status the job would have without a stop.
    fn natural_status(&self, now: i64) -> JobStatus {
        if now < self.started_ms() {
            JobStatus::Pending
        } else if now < self.started_ms() + self.run_ms {
            JobStatus::Running
        } else if self.exit_code == 0 {
            JobStatus::Succeeded
        } else {
            JobStatus::Failed
        }
    }

    fn status(&self, now: i64) -> JobStatus {
        match self.stopped_ms() {
            Some(stopped) if now >= stopped => JobStatus::Stopped,
            _ => self.natural_status(now),
        }
    }

    /// Whether the entrypoint has started by `now` (a job stopped while pending never starts).
    fn entrypoint_started(&self, now: i64) -> bool {
        let until = self.stopped_ms().map_or(now, |s| s.min(now));
        until >= self.started_ms()
    }

    /// The job's log as Ray's job manager writes it (without the timestamp Ray puts on its own line and
    /// without the entrypoint's output, which the hollow head does not run).
    fn logs(&self, now: i64) -> String {
        if !self.entrypoint_started(now) {
            return String::new();
        }
        format!(
            "Runtime env is setting up.\nRunning entrypoint for job {}: {}\n",
            self.submission_id, self.request.entrypoint
        )
    }

    /// The `message` Ray shows while a job is pending: what it may be waiting for.
    fn pending_message(&self) -> String {
        let r = &self.request;
        let positive = |v: Option<f64>| v.is_some_and(|v| v > 0.0);
        let waits_for_resources = positive(r.entrypoint_num_cpus)
            || positive(r.entrypoint_num_gpus)
            || r.entrypoint_memory.is_some_and(|m| m > 0)
            || r.entrypoint_resources.as_ref().is_some_and(|m| !m.is_empty());
        let waits_for_runtime_env = r
            .runtime_env
            .as_ref()
            .is_some_and(|e| !(e.is_null() || e.as_object().is_some_and(Map::is_empty)));
        let mut message = String::from("Job has not started yet.");
        if waits_for_resources {
            message.push_str(
                " It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available.",
            );
        }
        if waits_for_runtime_env {
            message.push_str(" It may be waiting for the runtime environment to be set up.");
        }
        message
    }

    fn info(&self, now: i64) -> JobInfo {
        let status = self.status(now);
        let end_time = match status {
            JobStatus::Stopped => self.stopped_ms(),
            JobStatus::Succeeded | JobStatus::Failed => Some(self.started_ms() + self.run_ms),
            _ => None,
        };
        let started = self.entrypoint_started(now);
        let message = match status {
            JobStatus::Pending => self.pending_message(),
            JobStatus::Running => "Job is currently running.".into(),
            JobStatus::Stopped => "Job was intentionally stopped.".into(),
            JobStatus::Succeeded => "Job finished successfully.".into(),
            JobStatus::Failed => format!(
                "Job entrypoint command failed with exit code {}, last available logs (truncated to 20,000 chars):\n{}",
                self.exit_code,
                self.logs(now)
            ),
        };
        JobInfo {
            job_type: "SUBMISSION".into(),
            job_id: started.then(|| self.driver_id.clone()),
            submission_id: self.submission_id.clone(),
            driver_info: started.then(|| json!({"id": self.driver_id, "node_ip_address": HEAD_NODE_IP, "pid": "0"})),
            status,
            entrypoint: self.request.entrypoint.clone(),
            message,
            error_type: (status == JobStatus::Failed).then(|| "JOB_ENTRYPOINT_COMMAND_ERROR".to_string()),
            start_time: self.submitted_ms,
            end_time,
            metadata: self.request.metadata.clone(),
            runtime_env: self.request.runtime_env.clone(),
            driver_agent_http_address: started.then(job_agent_address),
            driver_node_id: started.then(|| HEAD_NODE_ID.to_string()),
            driver_exit_code: match status {
                JobStatus::Succeeded | JobStatus::Failed => Some(self.exit_code),
                _ => None,
            },
        }
    }
}

struct App {
    name: String,
    config: Value,
    deployed_ms: i64,
    forced: Option<(AppStatus, String)>,
}

#[derive(Default)]
struct Serve {
    /// Whether a config has ever been applied (`deploy_mode` `MULTI_APP` vs `UNSET`).
    started: bool,
    apps: BTreeMap<String, App>,
    http_options: Value,
    proxy_location: Value,
    target_capacity: Value,
}

/// The container log a head writes to.
struct HeadLog {
    logs: kube_sim::PodLogs,
    pod_uid: String,
    container: String,
}

#[derive(Default)]
struct State {
    /// Jobs in submission order.
    jobs: Vec<Job>,
    next_driver: u64,
    serve: Serve,
}

/// One simulated Ray head (see the [crate documentation](crate)).
pub struct HollowRayHead {
    options: HollowRayOptions,
    /// Where the head's own log goes: the Ray container of its pod (see [`HollowRayHead::attach_log`]).
    log: Mutex<Option<HeadLog>>,
    state: Mutex<State>,
    /// Actors and the Ray nodes they run on (`/api/hollow/...`, see [`crate::actors`]).
    pub(crate) actors: Mutex<ActorTable>,
    /// How long each dashboard request is held before its answer goes out.
    dashboard_delay: Duration,
    /// This head's dashboard requests in flight.
    load: Arc<DashboardLoad>,
    /// The gauge shared by every head of a [`crate::HollowRay`], when the head belongs to one.
    shared_load: Option<Arc<DashboardLoad>>,
}

impl std::fmt::Debug for HollowRayHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("HollowRayHead")
            .field("jobs", &s.jobs.len())
            .field("applications", &s.serve.apps.len())
            .finish()
    }
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// The exit code an entrypoint's shell would end with: the first `exit N` (also `exit(N)`, `sys.exit(N)`)
/// decides; none means 0.
pub fn entrypoint_exit_code(entrypoint: &str) -> i32 {
    let bytes = entrypoint.as_bytes();
    let mut from = 0;
    while let Some(pos) = entrypoint[from..].find("exit") {
        let at = from + pos;
        from = at + 4;
        let boundary_before = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        if !boundary_before {
            continue;
        }
        let rest = entrypoint[at + 4..].trim_start_matches([' ', '\t', '(']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(code) = digits.parse::<i32>() {
            return code;
        }
    }
    0
}

/// Seconds of the first `sleep N` in an entrypoint (a run-time override), if any.
pub fn entrypoint_sleep(entrypoint: &str) -> Option<Duration> {
    let words: Vec<&str> = entrypoint.split(|c: char| c.is_whitespace() || c == ';').collect();
    words
        .windows(2)
        .find(|w| w[0] == "sleep")
        .and_then(|w| w[1].trim_end_matches('s').parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    (0..n)
        .map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())]))
        .collect()
}

impl HollowRayHead {
    /// A fresh head (no jobs, no serve applications) whose dashboard holds requests for
    /// [`HollowRayOptions::dashboard_delay`].
    pub fn new(options: HollowRayOptions) -> Self {
        let delay = options.dashboard_delay;
        Self::for_cluster(options, delay, None)
    }

    /// A fresh head whose dashboard holds requests for `dashboard_delay` and also counts them in
    /// `shared_load`.
    pub(crate) fn for_cluster(
        options: HollowRayOptions,
        dashboard_delay: Duration,
        shared_load: Option<Arc<DashboardLoad>>,
    ) -> Self {
        Self {
            options,
            dashboard_delay,
            load: Arc::default(),
            shared_load,
            log: Mutex::new(None),
            state: Mutex::new(State {
                next_driver: 2,
                ..State::default()
            }),
            actors: Mutex::new(ActorTable::default()),
        }
    }

    /// Sends the head's log (start, jobs submitted and finished, serve deployments) to a container of its pod,
    /// where `kubectl logs` reads it, and writes the start-up lines.
    pub fn attach_log(&self, logs: kube_sim::PodLogs, pod_uid: &str, container: &str) {
        *self.log.lock() = Some(HeadLog {
            logs,
            pod_uid: pod_uid.to_string(),
            container: container.to_string(),
        });
        self.log(&format!(
            "hollow-ray: Ray {} head started (GCS, dashboard on :8265, serve on :8000)\nRay runtime started.",
            self.options.ray_version
        ));
    }

    /// Appends lines to the head's log, when one is attached.
    fn log(&self, text: &str) {
        if let Some(l) = &*self.log.lock() {
            l.logs.append(&l.pod_uid, &l.container, text);
        }
    }

    /// Logs the end of every job that finished since the last look (jobs end by the clock, so on reading).
    fn log_finished_jobs(&self, s: &mut State, now: i64) {
        let mut lines = Vec::new();
        for j in s.jobs.iter_mut().filter(|j| !j.end_logged) {
            let status = j.status(now);
            if status.is_terminal() {
                j.end_logged = true;
                lines.push(format!(
                    "hollow-ray: job {} finished: {}",
                    j.submission_id,
                    status.as_str()
                ));
            }
        }
        if !lines.is_empty() {
            self.log(&lines.join("\n"));
        }
    }

    /// The options this head runs with.
    pub fn options(&self) -> &HollowRayOptions {
        &self.options
    }

    /// How long this head's dashboard holds each request before answering.
    pub fn dashboard_delay(&self) -> Duration {
        self.dashboard_delay
    }

    /// This head's dashboard requests in flight, by kind.
    pub fn dashboard_load(&self) -> &DashboardLoad {
        &self.load
    }

    /// Answers a dashboard request after the head's delay, counting it as in flight until answered (or
    /// abandoned). The answer is computed when the request arrives: a slow network, not a slow head.
    fn delayed_dashboard(&self, method: &Method, path: &str, body: &[u8]) -> ProxyFuture {
        let call = DashboardCall::classify(method, path);
        let gauges = std::iter::once(self.load.clone())
            .chain(self.shared_load.clone())
            .collect();
        let in_flight = InFlight::enter(call, gauges);
        let response = self.handle_dashboard(method, path, body);
        let delay = self.dashboard_delay;
        Box::pin(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            drop(in_flight);
            response
        })
    }

    /// Submits a job (`POST /api/jobs/`); returns the submission id.
    pub fn submit_job(&self, request: JobSubmitRequest) -> Result<JobSubmitResponse, RayHeadError> {
        let entrypoint = request.entrypoint.clone();
        let mut s = self.state.lock();
        let id = match request.submission_id.clone().or_else(|| request.job_id.clone()) {
            Some(id) if !id.is_empty() => id,
            _ => format!("raysubmit_{}", random_suffix(16)),
        };
        if s.jobs.iter().any(|j| j.submission_id == id) {
            return Err(RayHeadError::DuplicateSubmissionId(id));
        }
        let driver_id = format!("{:02x}000000", s.next_driver);
        s.next_driver += 1;
        let run = entrypoint_sleep(&request.entrypoint).unwrap_or(self.options.job_run);
        let exit_code = entrypoint_exit_code(&request.entrypoint);
        s.jobs.push(Job {
            request,
            submission_id: id.clone(),
            driver_id,
            submitted_ms: now_ms(),
            pending_ms: ms(self.options.job_pending),
            run_ms: ms(run),
            exit_code,
            stop_requested_ms: None,
            stop_ms: ms(self.options.job_stop),
            end_logged: false,
        });
        drop(s);
        self.log(&format!("hollow-ray: job {id} submitted, entrypoint: {entrypoint}"));
        Ok(JobSubmitResponse {
            job_id: id.clone(),
            submission_id: id,
        })
    }

    /// A job by submission id or driver job id (`GET /api/jobs/{id}`).
    pub fn job(&self, id: &str) -> Option<JobInfo> {
        let now = now_ms();
        let mut s = self.state.lock();
        self.log_finished_jobs(&mut s, now);
        s.jobs
            .iter()
            .find(|j| j.submission_id == id || j.driver_id == id)
            .map(|j| j.info(now))
    }

    /// Every job, in submission order (`GET /api/jobs/`).
    pub fn jobs(&self) -> Vec<JobInfo> {
        let now = now_ms();
        let mut s = self.state.lock();
        self.log_finished_jobs(&mut s, now);
        s.jobs.iter().map(|j| j.info(now)).collect()
    }

    /// Stops a job (`POST /api/jobs/{id}/stop`): `Ok(true)` when it was pending or running, `Ok(false)` when it
    /// had already finished. The job turns `STOPPED` [`HollowRayOptions::job_stop`] later, as Ray's job
    /// supervisor takes a moment to end the entrypoint.
    pub fn stop_job(&self, id: &str) -> Result<bool, RayHeadError> {
        let now = now_ms();
        let mut s = self.state.lock();
        let job = s
            .jobs
            .iter_mut()
            .find(|j| j.submission_id == id || j.driver_id == id)
            .ok_or_else(|| RayHeadError::JobNotFound(id.to_string()))?;
        if job.status(now).is_terminal() {
            return Ok(false);
        }
        job.stop_requested_ms.get_or_insert(now);
        Ok(true)
    }

    /// Deletes a finished job (`DELETE /api/jobs/{id}`).
    pub fn delete_job(&self, id: &str) -> Result<bool, RayHeadError> {
        let now = now_ms();
        let mut s = self.state.lock();
        let idx = s
            .jobs
            .iter()
            .position(|j| j.submission_id == id || j.driver_id == id)
            .ok_or_else(|| RayHeadError::JobNotFound(id.to_string()))?;
        let status = s.jobs[idx].status(now);
        if !status.is_terminal() {
            return Err(RayHeadError::NotTerminal(id.to_string(), status));
        }
        s.jobs.remove(idx);
        Ok(true)
    }

    /// A job's logs (`GET /api/jobs/{id}/logs`).
    pub fn job_logs(&self, id: &str) -> Option<String> {
        let now = now_ms();
        let s = self.state.lock();
        s.jobs
            .iter()
            .find(|j| j.submission_id == id || j.driver_id == id)
            .map(|j| j.logs(now))
    }

    /// Applies a serve config (`PUT /api/serve/applications/`): a `serveConfigV2`-style object with an
    /// `applications` list. Applications whose config changed (or that are new) go back to `DEPLOYING`;
    /// applications no longer listed are removed.
    pub fn apply_serve_config(&self, config: &Value) -> Result<(), RayHeadError> {
        let parsed = crate::wire::check_serve_config(config)
            .map_err(|problem| RayHeadError::InvalidServeConfig(problem.report()))?;
        let obj = config.as_object().cloned().unwrap_or_default();
        let now = now_ms();
        let mut s = self.state.lock();
        let serve = &mut s.serve;
        serve.started = true;
        serve.http_options = obj.get("http_options").cloned().unwrap_or(Value::Null);
        serve.proxy_location = obj.get("proxy_location").cloned().unwrap_or(Value::Null);
        serve.target_capacity = obj.get("target_capacity").cloned().unwrap_or(Value::Null);
        serve.apps.retain(|name, _| parsed.iter().any(|(n, _)| n == name));
        let mut deployed = Vec::new();
        for (name, cfg) in parsed {
            match serve.apps.get_mut(&name) {
                Some(app) if app.config == cfg => {}
                Some(app) => {
                    deployed.push(name.clone());
                    app.config = cfg;
                    app.deployed_ms = now;
                    app.forced = None;
                }
                None => {
                    deployed.push(name.clone());
                    serve.apps.insert(
                        name.clone(),
                        App {
                            name,
                            config: cfg,
                            deployed_ms: now,
                            forced: None,
                        },
                    );
                }
            }
        }
        drop(s);
        if !deployed.is_empty() {
            self.log(&format!(
                "hollow-ray: serve: deploying applications {}",
                deployed.join(", ")
            ));
        }
        Ok(())
    }

    /// Shuts Serve down (`DELETE /api/serve/applications/`): every application goes, and the details read as
    /// before the first deploy.
    pub fn delete_serve_applications(&self) {
        let mut s = self.state.lock();
        s.serve = Serve::default();
    }

    /// Test control: pins an application's status and message (e.g. `UNHEALTHY`, `DEPLOY_FAILED`) until its
    /// config next changes. Returns false when there is no such application.
    pub fn force_app_status(&self, app: &str, status: AppStatus, message: &str) -> bool {
        let mut s = self.state.lock();
        match s.serve.apps.get_mut(app) {
            Some(a) => {
                a.forced = Some((status, message.to_string()));
                true
            }
            None => false,
        }
    }

    /// Status of each serve application, by name.
    pub fn app_statuses(&self) -> BTreeMap<String, AppStatus> {
        let now = now_ms();
        let s = self.state.lock();
        s.serve
            .apps
            .iter()
            .map(|(n, a)| (n.clone(), self.app_phase(a, now).status()))
            .collect()
    }

    /// Where an application is in its deployment.
    fn app_phase(&self, app: &App, now: i64) -> AppPhase {
        if let Some((status, message)) = &app.forced {
            return AppPhase::Forced(*status, message.clone());
        }
        let built = app.deployed_ms + ms(self.options.serve_build);
        if now < built {
            AppPhase::Building
        } else if now < built + ms(self.options.serve_deploy) {
            AppPhase::Deploying
        } else {
            AppPhase::Running
        }
    }

    /// The serve details document (`GET /api/serve/applications/`, Ray's `ServeInstanceDetails`), with the
    /// fields Ray 2.60 sends; before the first deploy (and after a delete) only the four Ray sends then.
    pub fn serve_details(&self) -> Value {
        let now = now_ms();
        let s = self.state.lock();
        let serve = &s.serve;
        if !serve.started {
            return json!({"controller_info": {}, "proxies": {}, "applications": {}, "target_capacity": null});
        }
        let apps: Map<String, Value> = serve
            .apps
            .values()
            .map(|app| (app.name.clone(), app_details(app, &self.app_phase(app, now))))
            .collect();
        let mut http_options = json!({
            "host": "0.0.0.0", "port": DEFAULT_SERVE_PORT, "root_path": "", "request_timeout_s": null,
            "keep_alive_timeout_s": 90, "ssl_keyfile": null, "ssl_certfile": null, "ssl_keyfile_password": null,
            "ssl_ca_certs": null,
        });
        if let (Some(given), Some(all)) = (serve.http_options.as_object(), http_options.as_object_mut()) {
            all.extend(given.clone());
        }
        let proxy_name = format!("SERVE_PROXY_ACTOR-{HEAD_NODE_ID}");
        json!({
            "controller_info": actor_info("SERVE_CONTROLLER_ACTOR", "/serve/controller.log"),
            "proxy_location": if serve.proxy_location.is_null() { json!("EveryNode") } else { serve.proxy_location.clone() },
            "grpc_options": {"port": 9000, "grpc_servicer_functions": [], "request_timeout_s": null, "enable_reflection": true},
            "proxies": {
                HEAD_NODE_ID: with_field(
                    actor_info(&proxy_name, &format!("/serve/proxy_{HEAD_NODE_IP}.log")),
                    "status",
                    json!("HEALTHY"),
                ),
            },
            "applications": apps,
            "target_capacity": serve.target_capacity,
            // Where the serve proxies listen: one HTTP group for every route.
            "target_groups": [{
                "targets": [{"ip": HEAD_NODE_IP, "port": http_options["port"], "instance_id": "", "name": proxy_name}],
                "route_prefix": "/", "protocol": "HTTP", "app_name": "", "ingress_request_router_targets": [],
                "ingress_deployment_name": "",
            }],
            // Ray reports its controller loop's metrics here; the hollow head has none.
            "controller_health_metrics": {},
            "restores_unset_config_options": true,
            "http_options": http_options,
        })
    }

    /// Whether a serve config has ever been applied (the serve proxy answers `/-/healthz` then).
    pub fn serve_started(&self) -> bool {
        self.state.lock().serve.started
    }

    /// Answers one dashboard request (`path` after the proxy prefix, without the query).
    pub fn handle_dashboard(&self, method: &Method, path: &str, body: &[u8]) -> ProxyResponse {
        let trimmed = path.trim_end_matches('/');
        let segments: Vec<&str> = trimmed.split('/').filter(|s| !s.is_empty()).collect();
        let result: Result<ProxyResponse, RayHeadError> = match (method.clone(), segments.as_slice()) {
            // The dashboard's web UI: clients such as `kubectl ray job submit` wait for `/` to answer 200.
            (Method::GET, []) => Ok(ProxyResponse {
                status: StatusCode::OK,
                content_type: "text/html".into(),
                body: Bytes::from_static(
                    b"<!doctype html><html><head><title>Ray Dashboard</title></head><body></body></html>",
                ),
            }),
            (Method::GET, ["api", "gcs_healthz"]) => Ok(text(StatusCode::OK, "success")),
            (_, ["api", "hollow", rest @ ..]) => Ok(self.handle_hollow(method, rest, body)),
            (Method::GET, ["api", "version"]) => Ok(ProxyResponse::json(&json!({
                "version": "4",
                "ray_version": self.options.ray_version,
                "ray_commit": "hollow",
                "session_name": "session_hollow",
            }))),
            (Method::POST, ["api", "jobs"]) => parse_job_submit(body)
                .and_then(|req| self.submit_job(req))
                .map(|r| ProxyResponse::json(&json!(r))),
            (Method::GET, ["api", "jobs"]) => Ok(ProxyResponse::json(&json!(self.jobs()))),
            (Method::GET, ["api", "jobs", id]) => self
                .job(id)
                .map(|j| ProxyResponse::json(&json!(j)))
                .ok_or_else(|| RayHeadError::JobNotFound((*id).to_string())),
            (Method::GET, ["api", "jobs", id, "logs"]) => self
                .job_logs(id)
                .map(|l| ProxyResponse::json(&json!({"logs": l})))
                .ok_or_else(|| RayHeadError::JobNotFound((*id).to_string())),
            (Method::POST, ["api", "jobs", id, "stop"]) => self
                .stop_job(id)
                .map(|stopped| ProxyResponse::json(&json!({"stopped": stopped}))),
            (Method::DELETE, ["api", "jobs", id]) => self
                .delete_job(id)
                .map(|deleted| ProxyResponse::json(&json!({"deleted": deleted}))),
            (Method::PUT, ["api", "serve", "applications"]) => serde_json::from_slice::<Value>(body)
                .map_err(|e| RayHeadError::ServeConfigNotJson(e.to_string()))
                .and_then(|cfg| self.apply_serve_config(&cfg))
                .map(|()| text(StatusCode::OK, "")),
            (Method::GET, ["api", "serve", "applications"]) => Ok(ProxyResponse::json(&self.serve_details())),
            (Method::DELETE, ["api", "serve", "applications"]) => {
                self.delete_serve_applications();
                Ok(text(StatusCode::OK, ""))
            }
            (_, ["api", "jobs", ..] | ["api", "serve", "applications"] | ["api", "gcs_healthz" | "version"]) => {
                Ok(text(StatusCode::METHOD_NOT_ALLOWED, "405: Method Not Allowed"))
            }
            _ => Ok(text(StatusCode::NOT_FOUND, "404: Not Found")),
        };
        result.unwrap_or_else(|e| text(e.status(), &e.to_string()))
    }

    /// Answers one request to the serve proxy port (`/-/healthz`, `/-/routes`).
    pub fn handle_serve(&self, path: &str) -> ProxyResponse {
        if !self.serve_started() {
            return text(
                StatusCode::BAD_GATEWAY,
                "error trying to reach service: dial tcp: connect: connection refused",
            );
        }
        match path {
            "/-/healthz" => text(StatusCode::OK, "success"),
            "/-/routes" => {
                let now = now_ms();
                let s = self.state.lock();
                let routes: Map<String, Value> = s
                    .serve
                    .apps
                    .values()
                    .filter(|a| self.app_phase(a, now).status() == AppStatus::Running)
                    .map(|a| {
                        let prefix = a.config["route_prefix"].as_str().unwrap_or("/").to_string();
                        (prefix, json!(a.name))
                    })
                    .collect();
                ProxyResponse::json(&Value::Object(routes))
            }
            _ => text(StatusCode::OK, "hollow-ray serve"),
        }
    }
}

/// Reads a job submission as Ray's dashboard does: a body that is not a JSON object is the web server's 500,
/// one that does not fit `JobSubmitRequest` a 400 naming the field.
fn parse_job_submit(body: &[u8]) -> Result<JobSubmitRequest, RayHeadError> {
    let value: Value = serde_json::from_slice(body).map_err(|_| RayHeadError::MalformedBody)?;
    let fields = value.as_object().ok_or(RayHeadError::MalformedBody)?;
    crate::wire::check_job_submit(fields).map_err(RayHeadError::BadRequest)?;
    serde_json::from_value(value).map_err(|e| RayHeadError::BadRequest(format!("TypeError: {e}")))
}

/// Where a serve application is in its deployment.
enum AppPhase {
    /// Ray imports and builds the application: no deployments listed yet, no route prefix.
    Building,
    /// Its deployments' replicas start (`UPDATING`).
    Deploying,
    /// Every deployment is healthy.
    Running,
    /// Pinned by a test through [`HollowRayHead::force_app_status`].
    Forced(AppStatus, String),
}

impl AppPhase {
    fn status(&self) -> AppStatus {
        match self {
            Self::Building | Self::Deploying => AppStatus::Deploying,
            Self::Running => AppStatus::Running,
            Self::Forced(status, _) => *status,
        }
    }
}

/// The identity Ray shows for one of Serve's actors on the head node (`controller_info`, a proxy).
fn actor_info(actor_name: &str, log_file_path: &str) -> Value {
    json!({
        "node_id": HEAD_NODE_ID,
        "node_ip": HEAD_NODE_IP,
        "node_instance_id": "",
        "actor_id": "686f6c6c6f772d73657276652d61637400000000",
        "actor_name": actor_name,
        "worker_id": "686f6c6c6f772d776f726b65720000000000000000000000000000000000",
        "log_file_path": log_file_path,
    })
}

/// `value` with one more field.
fn with_field(mut value: Value, key: &str, field: Value) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.insert(key.to_string(), field);
    }
    value
}

/// One application as the serve details show it (Ray's `ApplicationDetails`). The hollow head knows only the
/// deployments its config lists (Ray would also list those the application's code declares).
fn app_details(app: &App, phase: &AppPhase) -> Value {
    let status = phase.status();
    let message = match phase {
        AppPhase::Forced(_, message) => message.clone(),
        _ => String::new(),
    };
    let (dep_status, trigger) = match status {
        AppStatus::Running => (DeploymentStatus::Healthy, "CONFIG_UPDATE_COMPLETED"),
        AppStatus::Unhealthy => (DeploymentStatus::Unhealthy, "HEALTH_CHECK_FAILED"),
        AppStatus::DeployFailed => (DeploymentStatus::DeployFailed, "REPLICA_STARTUP_FAILED"),
        _ => (DeploymentStatus::Updating, "CONFIG_UPDATE_STARTED"),
    };
    let listed: Vec<&Value> = match phase {
        AppPhase::Building => Vec::new(),
        _ => app.config["deployments"].as_array().into_iter().flatten().collect(),
    };
    let mut deployments = Map::new();
    let mut nodes = Map::new();
    for d in &listed {
        let Some(name) = d["name"].as_str() else { continue };
        let replicas = d["num_replicas"].as_u64().unwrap_or(1);
        let cpus = d["ray_actor_options"]
            .get("num_cpus")
            .cloned()
            .unwrap_or_else(|| json!(1));
        deployments.insert(
            name.to_string(),
            json!({
                "name": name,
                "status": dep_status,
                "status_trigger": trigger,
                "message": if status == AppStatus::Running { String::new() } else { message.clone() },
                "deployment_config": d,
                "target_num_replicas": replicas,
                "required_resources": {"CPU": cpus},
                "replicas": [],
                "recent_dead_replicas": [],
            }),
        );
        nodes.insert(
            name.to_string(),
            json!({"name": name, "app_name": app.name, "outbound_deployments": [], "is_ingress": false}),
        );
    }
    // Ray's ingress is the deployment the application's code binds last; the config lists it last by convention.
    let ingress = listed.last().and_then(|d| d["name"].as_str());
    if let Some(node) = ingress.and_then(|i| nodes.get_mut(i)) {
        node["is_ingress"] = json!(true);
    }
    let topology = ingress.map_or(
        Value::Null,
        |i| json!({"app_name": app.name, "nodes": nodes, "ingress_deployment": i}),
    );
    let route_prefix = match phase {
        AppPhase::Building => Value::Null,
        _ => app.config.get("route_prefix").cloned().unwrap_or_else(|| json!("/")),
    };
    json!({
        "name": app.name,
        "route_prefix": route_prefix,
        "docs_path": Value::Null,
        "status": status,
        "message": message,
        "last_deployed_time_s": app.deployed_ms as f64 / 1000.0,
        "deployed_app_config": app.config,
        "source": "declarative",
        "deployments": deployments,
        "external_scaler_enabled": false,
        "deployment_topology": topology,
    })
}

/// Which of the head's servers a proxied request's port addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortRole {
    /// The dashboard (HTTP API).
    Dashboard,
    /// The serve proxy.
    Serve,
    /// Another port of the Service (GCS, client, metrics): not answered here (502, like a connection refused).
    Other,
    /// Not a port of the Service (503, like the API server's "no endpoints available").
    Unknown,
}

/// Resolves the `{port}` of a proxy URL against the Service: a port name or number; empty means the first port.
/// The dashboard is the Service port named `dashboard` (8265 when there is none), the serve proxy the one named
/// `serve` (8000).
pub(crate) fn port_role(service: &Value, port: &str) -> PortRole {
    let ports: Vec<&Value> = service["spec"]["ports"]
        .as_array()
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    let named = |n: &str| ports.iter().find(|p| p["name"] == n).and_then(|p| p["port"].as_i64());
    let dashboard = named("dashboard").unwrap_or(DEFAULT_DASHBOARD_PORT);
    let serve = named("serve").unwrap_or(DEFAULT_SERVE_PORT);
    let number = if port.is_empty() {
        ports.first().and_then(|p| p["port"].as_i64()).unwrap_or(dashboard)
    } else if let Ok(n) = port.parse::<i64>() {
        n
    } else {
        match named(port) {
            Some(n) => n,
            None => return PortRole::Unknown,
        }
    };
    let declared = ports.iter().any(|p| p["port"].as_i64() == Some(number));
    if !declared && !ports.is_empty() {
        PortRole::Unknown
    } else if number == dashboard {
        PortRole::Dashboard
    } else if number == serve {
        PortRole::Serve
    } else {
        PortRole::Other
    }
}

/// What the API server's proxy answers when nothing listens on the port (HTTP 502).
pub(crate) fn refused(request: &ProxyRequest) -> ProxyResponse {
    text(
        StatusCode::BAD_GATEWAY,
        &format!(
            "error trying to reach service: dial tcp {}:{}: connect: connection refused",
            request.service, request.port
        ),
    )
}

/// A plain-text response.
pub(crate) fn text(status: StatusCode, body: &str) -> ProxyResponse {
    ProxyResponse {
        status,
        content_type: "text/plain; charset=utf-8".into(),
        body: Bytes::from(body.to_string()),
    }
}

impl ProxyBackend for HollowRayHead {
    fn handle(&self, request: ProxyRequest) -> ProxyFuture {
        let resp = match port_role(&request.service_object, &request.port) {
            PortRole::Dashboard => {
                let path = request.path.split('?').next().unwrap_or_default();
                return self.delayed_dashboard(&request.method, path, &request.body);
            }
            PortRole::Serve => self.handle_serve(request.path.split('?').next().unwrap_or_default()),
            PortRole::Other => refused(&request),
            PortRole::Unknown => text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("no endpoints available for service \"{}\"", request.service),
            ),
        };
        Box::pin(std::future::ready(resp))
    }
}
