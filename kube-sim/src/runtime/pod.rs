//! One process pod: its sandbox, init containers in order (sidecars kept running), app containers together,
//! the pod phase, and graceful termination.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::Shared;
use super::container::{Container, Restart};
use super::pod_sandbox::{PodSandbox, SandboxState};
use super::view::PodView;

/// How often a pod whose sandbox is being created is looked at.
const SANDBOX_POLL: Duration = Duration::from_millis(20);

/// A process pod.
pub struct PodRun {
    uid: String,
    sandbox: Option<PodSandbox>,
    /// When the next sandbox creation may be tried, after a failure.
    sandbox_retry: Instant,
    sandbox_failures: u32,
    inits: Vec<Container>,
    mains: Vec<Container>,
    /// Init containers completed (or, for sidecars, started), in order.
    init_done: usize,
    phase: &'static str,
    /// Set when the pod is being deleted.
    terminating: Option<Instant>,
}

fn restart_policy(pod: &Value) -> &str {
    pod["spec"]["restartPolicy"].as_str().unwrap_or("Always")
}

impl PodRun {
    /// A pod whose containers are all mapped, before its sandbox exists.
    pub fn new(pod: &Value, now: Instant) -> Self {
        let list = |k: &str| pod["spec"][k].as_array().cloned().unwrap_or_default();
        Self {
            uid: pod["metadata"]["uid"].as_str().unwrap_or_default().to_string(),
            sandbox: None,
            sandbox_retry: now,
            sandbox_failures: 0,
            inits: list("initContainers")
                .iter()
                .map(|c| Container::new(c, c["restartPolicy"] == "Always", now))
                .collect(),
            mains: list("containers")
                .iter()
                .map(|c| Container::new(c, false, now))
                .collect(),
            init_done: 0,
            phase: "Pending",
            terminating: None,
        }
    }

    /// The pod as the status shows it.
    pub fn view(&self) -> PodView {
        PodView {
            phase: self.phase,
            pod_ip: self.sandbox.as_ref().map_or_else(String::new, |s| s.net.ip.to_string()),
            init: self.inits.iter().map(Container::view).collect(),
            main: self.mains.iter().map(Container::view).collect(),
            initialized: self.init_done == self.inits.len(),
        }
    }

    /// Whether the pod reached `Succeeded` or `Failed`.
    pub fn is_terminal(&self) -> bool {
        matches!(self.phase, "Succeeded" | "Failed")
    }

    /// The sandbox, when it exists.
    pub fn sandbox(&self) -> Option<&PodSandbox> {
        self.sandbox.as_ref()
    }

    /// Container `name` (app or init).
    pub fn container(&self, name: &str) -> Option<&Container> {
        self.mains.iter().chain(&self.inits).find(|c| c.name == name)
    }

    /// Advances the pod; returns when to look again.
    pub fn step(&mut self, shared: &Shared, pod: &Value, now: Instant) -> Instant {
        if self.is_terminal() {
            return now + Duration::from_secs(3600);
        }
        if self.ensure_sandbox(shared, pod, now).is_none() {
            return if self.sandbox.is_some() {
                now + SANDBOX_POLL
            } else {
                self.sandbox_retry.max(now + SANDBOX_POLL)
            };
        }
        let mut next = now + Duration::from_secs(3600);
        let policy = restart_policy(pod);
        let init_restart = if policy == "Never" {
            Restart::Never
        } else {
            Restart::OnFailure
        };
        let Some(sandbox) = self.sandbox.as_ref() else {
            return now + SANDBOX_POLL;
        };
        // Sidecars already past keep running (and restart) while later containers start.
        for c in self.inits.iter_mut().take(self.init_done).filter(|c| c.sidecar) {
            next = next.min(c.step(shared, sandbox, pod, Restart::Always, now));
        }
        while self.init_done < self.inits.len() {
            let c = &mut self.inits[self.init_done];
            let restart = if c.sidecar { Restart::Always } else { init_restart };
            next = next.min(c.step(shared, sandbox, pod, restart, now));
            if c.sidecar && c.is_started() {
                self.init_done += 1;
                continue;
            }
            match c.exited() {
                Some(0) => self.init_done += 1,
                Some(_) => {
                    self.phase = "Failed";
                    self.finish(shared, pod);
                    return now;
                }
                None => break,
            }
        }
        if self.init_done < self.inits.len() {
            return next;
        }
        let main_restart = match policy {
            "Never" => Restart::Never,
            "OnFailure" => Restart::OnFailure,
            _ => Restart::Always,
        };
        for c in &mut self.mains {
            next = next.min(c.step(shared, sandbox, pod, main_restart, now));
        }
        let codes: Vec<Option<i32>> = self.mains.iter().map(Container::exited).collect();
        if !codes.is_empty() && codes.iter().all(Option::is_some) {
            self.phase = if codes.iter().all(|c| *c == Some(0)) {
                "Succeeded"
            } else {
                "Failed"
            };
            self.finish(shared, pod);
            return now;
        }
        // Running once a container has been started; before that (config or create errors) still Pending.
        if self.mains.iter().any(Container::has_run) {
            self.phase = "Running";
        }
        next
    }

    /// Creates or polls the sandbox; `Some` once it is ready.
    fn ensure_sandbox(&mut self, shared: &Shared, pod: &Value, now: Instant) -> Option<&PodSandbox> {
        if self.sandbox.is_none() {
            if now < self.sandbox_retry {
                return None;
            }
            let dir = shared.state.pod_dir(&self.uid);
            match PodSandbox::create(shared, pod, &dir) {
                Ok(s) => self.sandbox = Some(s),
                Err(e) => {
                    self.sandbox_failed(shared, "CreateContainerConfigError", e.0, now);
                    return None;
                }
            }
        }
        let state = self.sandbox.as_mut().map(PodSandbox::poll)?;
        match state {
            SandboxState::Ready => self.sandbox.as_ref(),
            SandboxState::Creating => None,
            SandboxState::Failed(msg) => {
                if let Some(s) = self.sandbox.take() {
                    s.teardown(shared);
                }
                self.sandbox_failed(shared, "ContainerCreating", msg, now);
                None
            }
        }
    }

    fn sandbox_failed(&mut self, shared: &Shared, reason: &str, message: String, now: Instant) {
        tracing::info!(pod_uid = %self.uid, %reason, %message, "process runtime: pod sandbox not created");
        self.sandbox_failures += 1;
        self.sandbox_retry = now + super::container::backoff(shared.config.crash_backoff, self.sandbox_failures + 1);
        for c in self.inits.iter_mut().chain(&mut self.mains) {
            c.set_waiting(reason, Some(message.clone()), self.sandbox_retry);
        }
    }

    /// Stops what still runs (sidecars) and removes the sandbox once the pod is terminal.
    fn finish(&mut self, shared: &Shared, pod: &Value) {
        self.release(shared, pod);
    }

    /// Kills and reaps every container and removes the sandbox (the containers' views stay).
    fn release(&mut self, shared: &Shared, pod: &Value) {
        for c in self.inits.iter_mut().chain(&mut self.mains) {
            c.reap(shared, pod);
        }
        if let Some(s) = self.sandbox.take() {
            s.teardown(shared);
        }
    }

    /// Graceful deletion: SIGTERM to every container, SIGKILL after the grace period; returns `None` once
    /// everything is gone (sandbox removed), else when to look again.
    pub fn terminate(&mut self, shared: &Shared, pod: &Value, now: Instant) -> Option<Instant> {
        let first = *self.terminating.get_or_insert(now);
        if first == now {
            for c in self.inits.iter_mut().chain(&mut self.mains) {
                c.stop(now);
            }
        }
        let grace = super::container::grace(pod);
        let mut running = false;
        if let Some(sandbox) = self.sandbox.as_ref() {
            for c in self.inits.iter_mut().chain(&mut self.mains) {
                c.step(shared, sandbox, pod, Restart::Never, now);
                running |= c.is_running();
            }
        }
        if running && now < first + grace {
            return Some((now + shared.config.poll).min(first + grace));
        }
        if running {
            for c in self.inits.iter_mut().chain(&mut self.mains) {
                c.reap(shared, pod);
            }
        }
        if !self.is_terminal() {
            let codes: Vec<Option<i32>> = self.mains.iter().map(Container::exited).collect();
            self.phase = if codes.iter().all(|c| *c == Some(0)) {
                "Succeeded"
            } else {
                "Failed"
            };
        }
        self.release(shared, pod);
        None
    }

    /// Kills everything at once (forced deletion, shutdown).
    pub fn destroy(&mut self, shared: &Shared, pod: &Value) {
        self.release(shared, pod);
    }
}
