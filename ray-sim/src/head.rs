//! One hollow Ray head: job and serve-application state, and the dashboard HTTP API over it.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::HollowRayOptions;
use crate::actors::ActorTable;
use kube_sim::http::proxy::{ProxyBackend, ProxyFuture, ProxyRequest, ProxyResponse};

/// Default dashboard port (`dashboard`).
pub const DEFAULT_DASHBOARD_PORT: i64 = 8265;
/// Default serve port (`serve`).
pub const DEFAULT_SERVE_PORT: i64 = 8000;

/// Why the head refused a request. The `Display` text is what Ray puts in the response body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RayHeadError {
    /// The request body could not be parsed (HTTP 400).
    #[error("Failed to parse request: {0}")]
    BadRequest(String),
    /// A job with this submission id exists (HTTP 500, Ray's text, which KubeRay matches on).
    #[error("Job with submission_id {0} already exists. Please use a different submission_id.")]
    DuplicateSubmissionId(String),
    /// No job with this id (HTTP 404).
    #[error("Job {0} does not exist")]
    JobNotFound(String),
    /// Deleting a job that has not finished (HTTP 400).
    #[error("Attempted to delete job with id '{0}', but it is in a non-terminal state {1}.")]
    NotTerminal(String, JobStatus),
    /// An invalid serve config (HTTP 400).
    #[error("{0}")]
    InvalidServeConfig(String),
}

impl RayHeadError {
    /// The HTTP status Ray's dashboard answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) | Self::NotTerminal(..) | Self::InvalidServeConfig(_) => StatusCode::BAD_REQUEST,
            Self::DuplicateSubmissionId(_) => StatusCode::INTERNAL_SERVER_ERROR,
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

/// A job as `GET /api/jobs/{id}` shows it (Ray's `JobDetails`; KubeRay reads `error_type`, `metadata`,
/// `runtime_env`, `status`, `entrypoint`, `job_id`, `submission_id`, `message`, `start_time`, `end_time`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    /// Always `SUBMISSION`.
    #[serde(rename = "type")]
    pub job_type: String,
    /// The driver's Ray job id (hex), `null` until the driver starts.
    pub job_id: Option<String>,
    /// The submission id.
    pub submission_id: String,
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
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// Runtime environment.
    pub runtime_env: Value,
    /// The entrypoint's exit code once it exited, else `null`.
    pub driver_exit_code: Option<i32>,
    /// CPUs reserved for the entrypoint.
    pub entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint.
    pub entrypoint_num_gpus: Option<f64>,
    /// Memory reserved for the entrypoint.
    pub entrypoint_memory: Option<u64>,
    /// Custom resources reserved for the entrypoint.
    pub entrypoint_resources: Option<BTreeMap<String, f64>>,
}

struct Job {
    request: JobSubmitRequest,
    submission_id: String,
    driver_id: String,
    submitted_ms: i64,
    pending_ms: i64,
    run_ms: i64,
    exit_code: i32,
    stopped_ms: Option<i64>,
    /// Whether the head's log already says how the job ended.
    end_logged: bool,
}

impl Job {
    fn status(&self, now: i64) -> JobStatus {
        if self.stopped_ms.is_some() {
            JobStatus::Stopped
        } else if now < self.submitted_ms + self.pending_ms {
            JobStatus::Pending
        } else if now < self.submitted_ms + self.pending_ms + self.run_ms {
            JobStatus::Running
        } else if self.exit_code == 0 {
            JobStatus::Succeeded
        } else {
            JobStatus::Failed
        }
    }

    fn logs(&self, now: i64) -> String {
        let status = self.status(now);
        let mut out = String::new();
        let started = self.stopped_ms.is_none_or(|s| s >= self.submitted_ms + self.pending_ms);
        if status == JobStatus::Pending || !started {
            return out;
        }
        out.push_str(&format!(
            "hollow-ray: running entrypoint: {}\n",
            self.request.entrypoint
        ));
        match status {
            JobStatus::Succeeded => out.push_str("hollow-ray: entrypoint exited with code 0\n"),
            JobStatus::Failed => out.push_str(&format!("hollow-ray: entrypoint exited with code {}\n", self.exit_code)),
            JobStatus::Stopped => out.push_str("hollow-ray: job stopped\n"),
            _ => {}
        }
        out
    }

    fn info(&self, now: i64) -> JobInfo {
        let status = self.status(now);
        let end_time = match status {
            JobStatus::Stopped => self.stopped_ms,
            JobStatus::Succeeded | JobStatus::Failed => Some(self.submitted_ms + self.pending_ms + self.run_ms),
            _ => None,
        };
        let driver_started = match status {
            JobStatus::Pending => false,
            JobStatus::Stopped => self
                .stopped_ms
                .is_some_and(|s| s >= self.submitted_ms + self.pending_ms),
            _ => true,
        };
        let message = match status {
            JobStatus::Pending => {
                "Job has not started yet. It may be waiting for resources (CPUs, GPUs, memory, custom \
                                  resources) to become available. It may be waiting for the runtime environment to \
                                  be set up."
                    .to_string()
            }
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
            job_id: driver_started.then(|| self.driver_id.clone()),
            submission_id: self.submission_id.clone(),
            status,
            entrypoint: self.request.entrypoint.clone(),
            message,
            error_type: (status == JobStatus::Failed).then(|| "JOB_ENTRYPOINT_COMMAND_ERROR".to_string()),
            start_time: self.submitted_ms,
            end_time,
            metadata: self.request.metadata.clone().unwrap_or_default(),
            runtime_env: self.request.runtime_env.clone().unwrap_or_else(|| json!({})),
            driver_exit_code: match status {
                JobStatus::Succeeded | JobStatus::Failed => Some(self.exit_code),
                _ => None,
            },
            entrypoint_num_cpus: self.request.entrypoint_num_cpus,
            entrypoint_num_gpus: self.request.entrypoint_num_gpus,
            entrypoint_memory: self.request.entrypoint_memory,
            entrypoint_resources: self.request.entrypoint_resources.clone(),
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
    /// A fresh head (no jobs, no serve applications).
    pub fn new(options: HollowRayOptions) -> Self {
        Self {
            options,
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

    /// Submits a job (`POST /api/jobs/`); returns the submission id.
    pub fn submit_job(&self, request: JobSubmitRequest) -> Result<JobSubmitResponse, RayHeadError> {
        let entrypoint = request.entrypoint.clone();
        if request.entrypoint.trim().is_empty() {
            return Err(RayHeadError::BadRequest("entrypoint must be a non-empty string".into()));
        }
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
            stopped_ms: None,
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
    /// had already finished.
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
        job.stopped_ms = Some(now);
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
        let invalid = |m: String| RayHeadError::InvalidServeConfig(m);
        let obj = config
            .as_object()
            .ok_or_else(|| invalid("the serve config must be a JSON object".into()))?;
        let apps = match obj.get("applications") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err(invalid("'applications' must be a list".into())),
        };
        let mut parsed: BTreeMap<String, Value> = BTreeMap::new();
        let mut prefixes: BTreeMap<String, String> = BTreeMap::new();
        for app in apps {
            let Some(a) = app.as_object() else {
                return Err(invalid("each application must be an object".into()));
            };
            let name = a.get("name").and_then(Value::as_str).unwrap_or("default").to_string();
            if !a.get("import_path").is_some_and(Value::is_string) {
                return Err(invalid(format!(
                    "application '{name}': field 'import_path' is required"
                )));
            }
            if let Some(prefix) = a.get("route_prefix").and_then(Value::as_str)
                && let Some(other) = prefixes.insert(prefix.to_string(), name.clone())
            {
                return Err(invalid(format!(
                    "Found duplicate route prefix '{prefix}' in applications '{other}' and '{name}'."
                )));
            }
            if parsed.insert(name.clone(), app.clone()).is_some() {
                return Err(invalid(format!("Found multiple configs for application '{name}'.")));
            }
        }
        let now = now_ms();
        let mut s = self.state.lock();
        let serve = &mut s.serve;
        serve.started = true;
        serve.http_options = obj.get("http_options").cloned().unwrap_or(Value::Null);
        serve.proxy_location = obj.get("proxy_location").cloned().unwrap_or(Value::Null);
        serve.target_capacity = obj.get("target_capacity").cloned().unwrap_or(Value::Null);
        serve.apps.retain(|name, _| parsed.contains_key(name));
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

    /// Removes every serve application (`DELETE /api/serve/applications/`).
    pub fn delete_serve_applications(&self) {
        self.state.lock().serve.apps.clear();
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
            .map(|(n, a)| (n.clone(), self.app_status(a, now).0))
            .collect()
    }

    fn app_status(&self, app: &App, now: i64) -> (AppStatus, String) {
        if let Some((st, msg)) = &app.forced {
            return (*st, msg.clone());
        }
        if now < app.deployed_ms + ms(self.options.serve_deploy) {
            (AppStatus::Deploying, String::new())
        } else {
            (AppStatus::Running, String::new())
        }
    }

    /// The serve details document (`GET /api/serve/applications/`, Ray's `ServeInstanceDetails`).
    pub fn serve_details(&self) -> Value {
        let now = now_ms();
        let s = self.state.lock();
        let serve = &s.serve;
        let mut apps = Map::new();
        for app in serve.apps.values() {
            let (status, message) = self.app_status(app, now);
            let (dep_status, trigger) = match status {
                AppStatus::Running => (DeploymentStatus::Healthy, "CONFIG_UPDATE_COMPLETED"),
                AppStatus::Unhealthy => (DeploymentStatus::Unhealthy, "HEALTH_CHECK_FAILED"),
                AppStatus::DeployFailed => (DeploymentStatus::DeployFailed, "REPLICA_STARTUP_FAILED"),
                _ => (DeploymentStatus::Updating, "CONFIG_UPDATE_STARTED"),
            };
            let mut deployments = Map::new();
            for d in app.config["deployments"].as_array().into_iter().flatten() {
                let Some(name) = d["name"].as_str() else { continue };
                let replicas = d["num_replicas"].as_u64().unwrap_or(1);
                deployments.insert(
                    name.to_string(),
                    json!({
                        "name": name,
                        "status": dep_status,
                        "status_trigger": trigger,
                        "message": if status == AppStatus::Running { String::new() } else { message.clone() },
                        "route_prefix": Value::Null,
                        "deployment_config": d,
                        "target_num_replicas": replicas,
                        "required_resources": d["ray_actor_options"].get("num_cpus")
                            .map_or_else(|| json!({"CPU": 1}), |c| json!({"CPU": c})),
                        "replicas": [],
                    }),
                );
            }
            apps.insert(
                app.name.clone(),
                json!({
                    "name": app.name,
                    "route_prefix": app.config.get("route_prefix").cloned().unwrap_or_else(|| json!("/")),
                    "docs_path": Value::Null,
                    "status": status,
                    "message": message,
                    "last_deployed_time_s": app.deployed_ms as f64 / 1000.0,
                    "deployed_app_config": app.config,
                    "source": "declarative",
                    "deployments": deployments,
                }),
            );
        }
        json!({
            "controller_info": {
                "node_id": "hollow-head-node",
                "node_ip": "127.0.0.1",
                "actor_id": "hollow-serve-controller",
                "actor_name": "SERVE_CONTROLLER_ACTOR",
                "worker_id": "hollow-worker",
                "log_file_path": "/serve/controller.log",
            },
            "proxy_location": if serve.proxy_location.is_null() { json!("EveryNode") } else { serve.proxy_location.clone() },
            "http_options": if serve.http_options.is_null() { json!({"host": "0.0.0.0", "port": DEFAULT_SERVE_PORT}) } else { serve.http_options.clone() },
            "grpc_options": {"port": 9000, "grpc_servicer_functions": []},
            "proxies": {},
            "deploy_mode": if serve.started { "MULTI_APP" } else { "UNSET" },
            "target_capacity": serve.target_capacity,
            "applications": apps,
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
            (Method::GET, ["api", "gcs_healthz"]) => Ok(text(StatusCode::OK, "success")),
            (_, ["api", "hollow", rest @ ..]) => Ok(self.handle_hollow(method, rest, body)),
            (Method::GET, ["api", "version"]) => Ok(ProxyResponse::json(&json!({
                "version": "4",
                "ray_version": self.options.ray_version,
                "ray_commit": "hollow",
                "session_name": "session_hollow",
            }))),
            (Method::POST, ["api", "jobs"]) => serde_json::from_slice::<JobSubmitRequest>(body)
                .map_err(|e| RayHeadError::BadRequest(e.to_string()))
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
                .map_err(|e| RayHeadError::InvalidServeConfig(format!("Failed to parse request: {e}")))
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
                    .filter(|a| self.app_status(a, now).0 == AppStatus::Running)
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
                self.handle_dashboard(&request.method, path, &request.body)
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
