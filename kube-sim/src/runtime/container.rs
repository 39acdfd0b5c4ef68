//! One container of a process pod: starting its process in the pod sandbox, noticing its exit, probes,
//! restarts with back-off, and stopping it.

use std::io::BufRead as _;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cgroups::Cgroup;
use super::compose::{Composed, compose};
use super::launcher::{shell_quote, with_pdeathsig};
use super::pod_sandbox::PodSandbox;
use super::probes::{ExecRunner, ProbeSpec, Prober, Verdict};
use super::view::{ContainerView, StateView, Terminated};
use super::volumes::resolve_in_root;
use super::{Shared, signals};

/// The `PATH` a container gets when neither the image nor the spec sets one.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Longest wait for a stopped container's output to reach its log.
const LOG_DRAIN: Duration = Duration::from_millis(200);
/// Longest CrashLoopBackOff delay (the kubelet's 5 minutes).
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// A running process.
struct Process {
    child: Child,
    started: Instant,
    started_at: String,
    cgroup: Option<Cgroup>,
    oom_before: u64,
    composed: Composed,
    user: Option<(u32, u32)>,
    startup: Option<Prober>,
    liveness: Option<Prober>,
    readiness: Option<Prober>,
    /// Set once the process was asked to stop (liveness failure, pod deletion).
    stopping: Option<Instant>,
    /// The threads copying stdout and stderr into the log.
    log_readers: Vec<std::thread::JoinHandle<()>>,
}

/// What the container is doing.
enum Run {
    /// Never started, or waiting to start again (`reason`), not before `until`.
    Waiting {
        reason: String,
        message: Option<String>,
        until: Instant,
    },
    Running(Box<Process>),
    /// Exited for good.
    Exited(Terminated),
}

/// One container.
pub struct Container {
    /// Container name.
    pub name: String,
    spec: Value,
    image: String,
    /// A sidecar (init container with `restartPolicy: Always`).
    pub sidecar: bool,
    restart_count: u32,
    /// Exits that led to a restart, for the back-off (reset after a long run).
    crashes: u32,
    /// Failed attempts to create the process (config errors, missing command), for their back-off.
    create_failures: u32,
    run: Run,
    last: Option<Terminated>,
    container_id: Option<String>,
    ready: bool,
    started: bool,
}

/// When a container restarts after exiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Always (app containers under `Always`, sidecars).
    Always,
    /// After a non-zero exit (`OnFailure`; init containers unless the pod's policy is `Never`).
    OnFailure,
    /// Never.
    Never,
}

/// The back-off before restart number `n` (1-based): the first restart is immediate, then `base`, doubling,
/// capped at five minutes, as the kubelet's CrashLoopBackOff.
pub fn backoff(base: Duration, n: u32) -> Duration {
    if n <= 1 {
        return Duration::ZERO;
    }
    let doublings = (n - 2).min(16);
    (base * 2u32.pow(doublings)).min(MAX_BACKOFF)
}

fn now_rfc3339() -> String {
    crate::store::now_rfc3339()
}

fn new_container_id() -> String {
    format!("containerd://{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

impl Container {
    /// A container of `spec`, waiting to be created.
    pub fn new(spec: &Value, sidecar: bool, now: Instant) -> Self {
        Self {
            name: spec["name"].as_str().unwrap_or_default().to_string(),
            image: spec["image"].as_str().unwrap_or_default().to_string(),
            spec: spec.clone(),
            sidecar,
            restart_count: 0,
            crashes: 0,
            create_failures: 0,
            run: Run::Waiting {
                reason: "ContainerCreating".into(),
                message: None,
                until: now,
            },
            last: None,
            container_id: None,
            ready: false,
            started: false,
        }
    }

    /// Sets the waiting reason of a container that has not started (sandbox creation, image pull).
    pub fn set_waiting(&mut self, reason: &str, message: Option<String>, until: Instant) {
        if !matches!(self.run, Run::Running(_)) {
            self.run = Run::Waiting {
                reason: reason.to_string(),
                message,
                until,
            };
        }
    }

    /// Is the process running?
    pub fn is_running(&self) -> bool {
        matches!(self.run, Run::Running(_))
    }

    /// Running and past its startup probe.
    pub fn is_started(&self) -> bool {
        self.is_running() && self.started
    }

    /// Whether a process was ever started for it.
    pub fn has_run(&self) -> bool {
        self.container_id.is_some()
    }

    /// The exit code when it exited for good.
    pub fn exited(&self) -> Option<i32> {
        match &self.run {
            Run::Exited(t) => Some(t.exit_code),
            _ => None,
        }
    }

    /// Advances the container: starts it when due, notices its exit, runs its probes. Returns when to look
    /// again.
    pub fn step(
        &mut self,
        shared: &Shared,
        sandbox: &PodSandbox,
        pod: &Value,
        restart: Restart,
        now: Instant,
    ) -> Instant {
        let poll = now + shared.config.poll;
        match &mut self.run {
            Run::Exited(_) => now + Duration::from_secs(3600),
            Run::Waiting { until, .. } if now < *until => *until,
            Run::Waiting { .. } => {
                self.start(shared, sandbox, pod, now);
                poll
            }
            Run::Running(p) => {
                let exited = match p.child.try_wait() {
                    Ok(Some(status)) => Some(status),
                    Ok(None) => None,
                    Err(e) => {
                        tracing::warn!(error = %e, container = %self.name, "process runtime: wait failed");
                        None
                    }
                };
                if let Some(status) = exited {
                    self.on_exit(shared, pod, status, restart, now);
                    return poll;
                }
                let next = self.probe(shared, sandbox, now);
                if let Run::Running(p) = &self.run
                    && let Some(since) = p.stopping
                    && now >= since + grace(pod)
                {
                    kill_process(p);
                }
                next.min(poll)
            }
        }
    }

    fn probe(&mut self, shared: &Shared, sandbox: &PodSandbox, now: Instant) -> Instant {
        let Run::Running(p) = &mut self.run else {
            return now + shared.config.poll;
        };
        let exec = exec_runner(sandbox, &self.name, &p.composed, p.user);
        let mut next = now + Duration::from_secs(3600);
        if let Some(s) = &mut p.startup {
            let (v, at) = s.tick(now, &exec);
            next = next.min(at);
            match v {
                Verdict::Success => {
                    p.startup = None;
                    self.started = true;
                }
                Verdict::Failure if p.stopping.is_none() => {
                    tracing::info!(container = %self.name, "process runtime: startup probe failed; restarting");
                    stop_process(p, now);
                }
                _ => {}
            }
            if p.startup.is_some() {
                return next;
            }
        }
        self.started = true;
        if let Some(l) = &mut p.liveness {
            let (v, at) = l.tick(now, &exec);
            next = next.min(at);
            if v == Verdict::Failure && p.stopping.is_none() {
                tracing::info!(container = %self.name, "process runtime: liveness probe failed; restarting");
                l.reset(now);
                stop_process(p, now);
            }
        }
        match &mut p.readiness {
            Some(r) => {
                let (v, at) = r.tick(now, &exec);
                next = next.min(at);
                match v {
                    Verdict::Success => self.ready = true,
                    Verdict::Failure => self.ready = false,
                    Verdict::Unknown => {}
                }
            }
            None => self.ready = true,
        }
        next
    }

    fn on_exit(
        &mut self,
        shared: &Shared,
        pod: &Value,
        status: std::process::ExitStatus,
        restart: Restart,
        now: Instant,
    ) {
        let Run::Running(p) = std::mem::replace(
            &mut self.run,
            Run::Waiting {
                reason: String::new(),
                message: None,
                until: now,
            },
        ) else {
            return;
        };
        let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
        let oom = p.cgroup.as_ref().is_some_and(|c| c.oom_kills() > p.oom_before);
        if let Some(cg) = &p.cgroup {
            // The container's other processes die with its main process, as in a pid namespace.
            cg.kill_all();
            cg.remove();
        }
        signals::signal_group(p.child.id(), true);
        // Let the last lines reach this run's log before a restart starts the next one.
        let deadline = Instant::now() + LOG_DRAIN;
        while p.log_readers.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let pod_uid = pod["metadata"]["uid"].as_str().unwrap_or_default();
        shared.ctx.pod_logs.process_stopped(pod_uid, &self.name);
        let reason = if oom {
            "OOMKilled"
        } else if code == 0 {
            "Completed"
        } else {
            "Error"
        };
        let term = Terminated {
            exit_code: code,
            reason: reason.into(),
            message: None,
            started_at: p.started_at.clone(),
            finished_at: now_rfc3339(),
            container_id: self.container_id.clone().unwrap_or_default(),
        };
        self.ready = false;
        self.started = false;
        let again = p.stopping.is_none()
            && match restart {
                Restart::Always => true,
                Restart::OnFailure => code != 0,
                Restart::Never => false,
            }
            || p.stopping.is_some() && restart != Restart::Never && !is_deleting(pod);
        if !again {
            self.run = Run::Exited(term);
            return;
        }
        // A run that lasted long enough resets the back-off, as the kubelet forgets it after 10 minutes.
        if now.duration_since(p.started) > MAX_BACKOFF * 2 {
            self.crashes = 0;
        }
        self.crashes += 1;
        let delay = backoff(shared.config.crash_backoff, self.crashes);
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
        self.last = Some(term);
        self.run = Run::Waiting {
            reason: "CrashLoopBackOff".into(),
            message: Some(format!(
                "back-off {} restarting failed container={} pod={pod_name}_{ns}({pod_uid})",
                kube_compat::go_duration::format_secs(delay),
                self.name
            )),
            until: now + delay,
        };
    }

    /// Composes and starts the process.
    fn start(&mut self, shared: &Shared, sandbox: &PodSandbox, pod: &Value, now: Instant) {
        match self.try_start(shared, sandbox, pod, now) {
            Ok(p) => {
                // `restartCount` counts restarts that happened, not exits waiting for one.
                if self.last.is_some() {
                    self.restart_count += 1;
                }
                self.create_failures = 0;
                self.started = p.startup.is_none();
                self.ready = false;
                self.run = Run::Running(Box::new(p));
            }
            Err((reason, message)) => {
                self.create_failures += 1;
                let delay = backoff(shared.config.crash_backoff, self.create_failures + 1);
                tracing::info!(container = %self.name, %reason, %message, "process runtime: container not created");
                self.run = Run::Waiting {
                    reason: reason.into(),
                    message: Some(message),
                    until: now + delay,
                };
            }
        }
    }

    fn try_start(
        &mut self,
        shared: &Shared,
        sandbox: &PodSandbox,
        pod: &Value,
        now: Instant,
    ) -> Result<Process, (&'static str, String)> {
        let config_err = |m: String| ("CreateContainerConfigError", m);
        let mapping = shared
            .mapping(&self.image)
            .ok_or_else(|| config_err(format!("image {:?} has no mapping", self.image)))?;
        let image_config = mapping.root.config();
        let facts = shared.node_facts(pod, &sandbox.net);
        let mut composed =
            compose(pod, &self.spec, &image_config, &shared.objects(), &facts).map_err(|e| config_err(e.0))?;
        finish_env(&mut composed, mapping.root.bin_dir(), pod);
        let user = user_of(pod, &self.spec, image_config.user);
        let root = sandbox
            .root_via_proc(&self.name)
            .ok_or_else(|| config_err("the container has no root in the sandbox".into()))?;
        let program = &composed.argv[0];
        if !executable_exists(&root, program, &composed.env) {
            return Err((
                "CreateContainerError",
                format!(
                    "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc \
                     create failed: unable to start container process: exec: \"{program}\": executable file not \
                     found in $PATH: unknown"
                ),
            ));
        }
        let wd = resolve_in_root(&root, &composed.working_dir);
        let _ = std::fs::create_dir_all(root.join(wd.trim_start_matches('/')));
        let cgroup = match &shared.cgroups {
            Some(cg) => {
                let pod_uid = pod["metadata"]["uid"].as_str().unwrap_or_default();
                let c = cg
                    .container(pod_uid, &self.name)
                    .map_err(|e| config_err(format!("creating the container's cgroup: {e}")))?;
                let limits = &self.spec["resources"]["limits"];
                let milli = |v: &Value| crate::agents::quantity::parse_value(v).ok();
                let memory = milli(&limits["memory"]).map(|m| m / 1000);
                if let Err(e) = c.limit(memory, milli(&limits["cpu"])) {
                    tracing::warn!(error = %e, "process runtime: could not apply resource limits");
                }
                Some(c)
            }
            None => None,
        };
        let mut argv = sandbox
            .nsenter_args(&self.name, &wd, user)
            .ok_or_else(|| config_err("the container has no root in the sandbox".into()))?;
        argv.extend(composed.argv.iter().cloned());
        let argv = with_pdeathsig(argv);
        let join: String = cgroup
            .iter()
            .flat_map(Cgroup::procs_files)
            .map(|f| format!("echo $$ > {}; ", shell_quote(&f.to_string_lossy())))
            .collect();
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("{join}exec \"$@\""))
            .arg("sh")
            .args(&argv)
            .env_clear()
            .envs(composed.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let oom_before = cgroup.as_ref().map_or(0, Cgroup::oom_kills);
        let mut child = shared
            .launcher
            .spawn(cmd)
            .map_err(|e| ("RunContainerError", format!("starting the container process: {e}")))?;
        let pod_uid = pod["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        shared.ctx.pod_logs.process_started(&pod_uid, &self.name);
        let mut log_readers = Vec::new();
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let logs = shared.ctx.pod_logs.clone();
            let (uid, name) = (pod_uid.clone(), self.name.clone());
            let reader = std::thread::Builder::new().name("kube-sim-logs".into()).spawn(move || {
                let mut reader = std::io::BufReader::new(stream);
                let mut line = Vec::new();
                while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    let text = String::from_utf8_lossy(&line);
                    logs.append(&uid, &name, text.trim_end_matches(['\n', '\r']));
                    line.clear();
                }
            });
            match reader {
                Ok(h) => log_readers.push(h),
                Err(e) => tracing::warn!(error = %e, "process runtime: no log reader thread"),
            }
        }
        self.container_id = Some(new_container_id());
        let pod_ip = sandbox.net.ip;
        let prober = |field: &str| ProbeSpec::parse(&self.spec, field, pod_ip).map(|s| Prober::new(s, now));
        Ok(Process {
            child,
            started: now,
            started_at: now_rfc3339(),
            cgroup,
            oom_before,
            composed,
            user,
            startup: prober("startupProbe"),
            liveness: prober("livenessProbe"),
            readiness: prober("readinessProbe"),
            stopping: None,
            log_readers,
        })
    }

    /// Asks the process to stop (SIGTERM to its process group and cgroup); [`Container::step`] sends SIGKILL
    /// after the grace period.
    pub fn stop(&mut self, now: Instant) {
        match &mut self.run {
            Run::Running(p) if p.stopping.is_none() => stop_process(p, now),
            Run::Running(_) | Run::Exited(_) => {}
            Run::Waiting { .. } => {
                let started_at = now_rfc3339();
                self.run = Run::Exited(Terminated {
                    exit_code: 0,
                    reason: "Completed".into(),
                    message: None,
                    started_at: started_at.clone(),
                    finished_at: started_at,
                    container_id: self.container_id.clone().unwrap_or_default(),
                });
            }
        }
    }

    /// Sends SIGKILL to everything the container runs and waits for its process, recording the exit.
    pub fn reap(&mut self, shared: &Shared, pod: &Value) {
        let status = match &mut self.run {
            Run::Running(p) => {
                if p.stopping.is_none() {
                    p.stopping = Some(Instant::now());
                }
                kill_process(p);
                p.child.wait()
            }
            _ => return,
        };
        match status {
            Ok(status) => self.on_exit(shared, pod, status, Restart::Never, Instant::now()),
            Err(e) => tracing::warn!(error = %e, container = %self.name, "process runtime: reaping failed"),
        }
    }

    /// The container as the pod status shows it.
    pub fn view(&self) -> ContainerView {
        let state = match &self.run {
            Run::Waiting { reason, message, .. } => StateView::Waiting {
                reason: reason.clone(),
                message: message.clone(),
            },
            Run::Running(p) => StateView::Running {
                started_at: p.started_at.clone(),
            },
            Run::Exited(t) => StateView::Terminated(t.clone()),
        };
        ContainerView {
            name: self.name.clone(),
            image: self.image.clone(),
            container_id: self.container_id.clone(),
            restart_count: self.restart_count,
            ready: self.ready && self.is_running(),
            started: self.is_started(),
            state,
            last: self.last.clone(),
        }
    }

    /// The running process' environment, working directory and user, for `kubectl exec`.
    pub fn exec_context(&self) -> Option<(Composed, Option<(u32, u32)>)> {
        match &self.run {
            Run::Running(p) => Some((p.composed.clone(), p.user)),
            _ => None,
        }
    }
}

fn is_deleting(pod: &Value) -> bool {
    pod["metadata"].get("deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// `terminationGracePeriodSeconds` (default 30).
pub fn grace(pod: &Value) -> Duration {
    let secs = pod["metadata"]["deletionGracePeriodSeconds"]
        .as_u64()
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_u64())
        .unwrap_or(30);
    Duration::from_secs(secs)
}

fn stop_process(p: &mut Process, now: Instant) {
    p.stopping = Some(now);
    signals::signal_group(p.child.id(), false);
    if let Some(cg) = &p.cgroup {
        cg.terminate_all();
    }
}

fn kill_process(p: &Process) {
    signals::signal_group(p.child.id(), true);
    if let Some(cg) = &p.cgroup {
        cg.kill_all();
    }
}

/// `PATH` (the image's `bin` first for host images, the default when unset), `HOSTNAME` and `HOME`.
fn finish_env(c: &mut Composed, bin_dir: Option<std::path::PathBuf>, pod: &Value) {
    let get = |env: &[(String, String)], k: &str| env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let path = get(&c.env, "PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    let path = match bin_dir {
        Some(b) => format!("{}:{path}", b.display()),
        None => path,
    };
    c.env.retain(|(k, _)| k != "PATH");
    c.env.insert(0, ("PATH".into(), path));
    let hostname = pod["spec"]["hostname"]
        .as_str()
        .or_else(|| pod["metadata"]["name"].as_str())
        .unwrap_or_default()
        .to_string();
    if get(&c.env, "HOSTNAME").is_none() {
        c.env.insert(1, ("HOSTNAME".into(), hostname));
    }
    if get(&c.env, "HOME").is_none() {
        c.env.push(("HOME".into(), "/root".into()));
    }
}

/// `securityContext.runAsUser/runAsGroup` (container over pod), else the image's `User`.
fn user_of(pod: &Value, container: &Value, image: Option<(u32, Option<u32>)>) -> Option<(u32, u32)> {
    let field = |k: &str| {
        container["securityContext"][k]
            .as_u64()
            .or_else(|| pod["spec"]["securityContext"][k].as_u64())
            .and_then(|n| u32::try_from(n).ok())
    };
    match (field("runAsUser"), field("runAsGroup")) {
        (Some(u), g) => Some((u, g.unwrap_or(u))),
        (None, g) => image.map(|(u, ig)| (u, g.or(ig).unwrap_or(u))),
    }
}

/// Whether `program` resolves to a file inside the container root `root` (through `PATH` unless it has a
/// slash).
fn executable_exists(root: &std::path::Path, program: &str, env: &[(String, String)]) -> bool {
    let exists = |container_path: &str| {
        let resolved = resolve_in_root(root, container_path);
        root.join(resolved.trim_start_matches('/')).is_file()
    };
    if program.contains('/') {
        return exists(program);
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or(DEFAULT_PATH, |(_, v)| v.as_str());
    path.split(':')
        .filter(|d| !d.is_empty())
        .any(|d| exists(&format!("{d}/{program}")))
}

/// Runs a command inside the container to completion with a timeout (exec probes).
fn exec_runner(sandbox: &PodSandbox, name: &str, composed: &Composed, user: Option<(u32, u32)>) -> ExecRunner {
    let prefix = sandbox.nsenter_args(name, &composed.working_dir, user);
    let env = composed.env.clone();
    Arc::new(move |cmd: &[String], timeout: Duration| {
        let Some(prefix) = &prefix else {
            return false;
        };
        let mut c = Command::new(&prefix[0]);
        c.args(&prefix[1..])
            .args(cmd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        let Ok(mut child) = c.spawn() else {
            return false;
        };
        let deadline = Instant::now() + timeout;
        loop {
            match child.try_wait() {
                Ok(Some(s)) => return s.success(),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    signals::signal_group(child.id(), true);
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_loop_backoff_doubles_to_five_minutes() {
        let base = Duration::from_secs(10);
        assert_eq!(backoff(base, 1), Duration::ZERO);
        assert_eq!(backoff(base, 2), Duration::from_secs(10));
        assert_eq!(backoff(base, 3), Duration::from_secs(20));
        assert_eq!(backoff(base, 7), Duration::from_secs(300));
        assert_eq!(backoff(base, 40), Duration::from_secs(300));
    }
}
