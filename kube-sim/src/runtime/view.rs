//! What the runtime reports of a pod: its phase and each container's state, in the shape of the pod
//! status' `containerStatuses` (the kubelet adds conditions and writes it).

use serde_json::{Value, json};

/// How a container run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminated {
    /// The exit code (128 + signal for a signalled process).
    pub exit_code: i32,
    /// `Completed`, `Error` or `OOMKilled`.
    pub reason: String,
    /// A message, when there is one.
    pub message: Option<String>,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 end time.
    pub finished_at: String,
    /// The run's container id.
    pub container_id: String,
}

/// A container's current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateView {
    /// Not running: `ContainerCreating`, `CrashLoopBackOff`, `CreateContainerError`, `ErrImagePull`, ...
    Waiting {
        /// The reason.
        reason: String,
        /// The message, when there is one.
        message: Option<String>,
    },
    /// Running since `started_at`.
    Running {
        /// RFC 3339 start time.
        started_at: String,
    },
    /// Exited and not restarting.
    Terminated(Terminated),
}

/// One container as the pod status shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerView {
    /// Container name.
    pub name: String,
    /// `image` of the spec.
    pub image: String,
    /// Current run's id, once one started.
    pub container_id: Option<String>,
    /// Restarts so far.
    pub restart_count: u32,
    /// Passing its readiness probe (or running without one).
    pub ready: bool,
    /// Passed its startup probe (or running without one).
    pub started: bool,
    /// Current state.
    pub state: StateView,
    /// The previous run's end, after a restart.
    pub last: Option<Terminated>,
}

/// A pod as the runtime sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// `Pending`, `Running`, `Succeeded` or `Failed`.
    pub phase: &'static str,
    /// The pod IP.
    pub pod_ip: String,
    /// Init containers (sidecars included), in spec order.
    pub init: Vec<ContainerView>,
    /// App containers, in spec order.
    pub main: Vec<ContainerView>,
    /// Every init container completed (or, for sidecars, started).
    pub initialized: bool,
}

fn terminated_json(t: &Terminated) -> Value {
    let mut v = json!({"exitCode": t.exit_code, "reason": t.reason, "startedAt": t.started_at,
                       "finishedAt": t.finished_at, "containerID": t.container_id});
    if let Some(m) = &t.message {
        v["message"] = json!(m);
    }
    v
}

/// A deterministic stand-in for the image digest (no registry is involved).
fn image_id(image: &str) -> String {
    format!("kube-sim.io/process-image/{image}")
}

impl ContainerView {
    /// The `containerStatuses[]` entry.
    pub fn to_json(&self) -> Value {
        let state = match &self.state {
            StateView::Waiting { reason, message } => {
                let mut w = json!({"reason": reason});
                if let Some(m) = message {
                    w["message"] = json!(m);
                }
                json!({"waiting": w})
            }
            StateView::Running { started_at } => json!({"running": {"startedAt": started_at}}),
            StateView::Terminated(t) => json!({"terminated": terminated_json(t)}),
        };
        let last = self
            .last
            .as_ref()
            .map_or(json!({}), |t| json!({"terminated": terminated_json(t)}));
        let mut v = json!({"name": self.name, "image": self.image, "imageID": image_id(&self.image),
            "ready": self.ready, "started": self.started, "restartCount": self.restart_count,
            "state": state, "lastState": last});
        if let Some(id) = &self.container_id {
            v["containerID"] = json!(id);
        }
        v
    }
}
