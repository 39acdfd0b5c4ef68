//! The hollow kubelet: runs pods bound to existing nodes — Running status after the start delay,
//! completion and failure injection by annotation or [`super::PodHooks`], CrashLoopBackOff, and graceful
//! deletion.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{
    ANN_EXIT_CODE, ANN_FAILURE, ANN_RUN_DURATION, ANN_START_DELAY, Agent, Cache, Key, PodExit, annotation,
    controller_uid, is_terminal, is_terminating, node_name, now, parse_duration, phase, set_condition,
    status_patch_over,
};
use crate::config::AgentConfig;
use crate::kinds::Gvr;
use crate::patch::PatchKind;
use crate::runtime::{Placement, ProcessRuntime};
use crate::store::{DeleteOptions, Store, StoredObject};

/// Exit code of an OOM-killed container.
const OOM_EXIT_CODE: i32 = 137;
/// Longest CrashLoopBackOff multiplier (2^5).
const MAX_BACKOFF_DOUBLINGS: u32 = 5;
/// Order of the pod conditions the kubelet writes.
const CONDITION_ORDER: &[&str] = &[
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
];

/// Per-pod timers (in memory; rebuilt from "now" if the agent restarts).
#[derive(Debug, Clone)]
struct Track {
    /// When the kubelet first saw the pod bound.
    seen: Instant,
    /// When the containers last started.
    started: Option<Instant>,
    /// When the containers last crashed, or an image pull last failed.
    failed_at: Option<Instant>,
    /// When the kubelet first saw the pod terminating.
    terminating: Option<Instant>,
    /// The final delete was sent.
    killed: bool,
}

/// A node as the kubelet sees it.
#[derive(Debug, Clone)]
struct NodeNet {
    ip: String,
    pod_prefix: String,
}

/// How a running pod's containers end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ExitPlan {
    after: Duration,
    code: i32,
    oom: bool,
}

/// The kubelet's state between passes.
pub(super) struct Kubelet {
    config: AgentConfig,
    rng: fastrand::Rng,
    /// Per-pod timers by uid, for the pods bound to existing nodes.
    tracks: HashMap<String, Track>,
    next_ip: HashMap<String, u32>,
    cache: Cache,
    nodes: HashMap<String, NodeNet>,
    /// Pods to step in the next pass.
    dirty: BTreeSet<Key>,
    /// Deadlines of the pods' next steps, and the deadline of each pod.
    timers: BTreeSet<(Instant, Key)>,
    timer_of: HashMap<Key, Instant>,
    /// Running pods without a timer: re-asked every pass while pod hooks are registered.
    parked: BTreeSet<Key>,
    /// Pods whose last write failed.
    retry: BTreeSet<Key>,
    /// Set by a failed write during a step.
    write_failed: bool,
    /// Runs pods with mapped images as processes.
    runtime: Option<Arc<ProcessRuntime>>,
}

const NODES: usize = 0;
const PODS: usize = 1;

fn node_net(n: &StoredObject) -> NodeNet {
    let n = n.value();
    let ip = n["status"]["addresses"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
        .and_then(|x| x["address"].as_str())
        .unwrap_or("172.18.0.2")
        .to_string();
    let cidr = n["spec"]["podCIDR"].as_str().unwrap_or("10.244.0.0/24");
    let pod_prefix = cidr
        .rsplit_once('.')
        .map(|(p, _)| format!("{p}."))
        .unwrap_or_else(|| "10.244.0.".into());
    NodeNet { ip, pod_prefix }
}

/// One version of a pod with its JSON decoded once for the whole step: the store keeps objects only as JSON,
/// and a step reads the pod in several places.
struct DecodedPod<'a> {
    stored: &'a StoredObject,
    value: Value,
}

impl<'a> DecodedPod<'a> {
    /// Decodes `stored`.
    fn new(stored: &'a StoredObject) -> Self {
        Self {
            stored,
            value: stored.value(),
        }
    }

    /// The decoded object (shadows [`StoredObject::value`], which decodes again).
    fn value(&self) -> &Value {
        &self.value
    }
}

impl std::ops::Deref for DecodedPod<'_> {
    type Target = StoredObject;

    fn deref(&self) -> &StoredObject {
        self.stored
    }
}

impl Agent for Kubelet {
    fn pass(&mut self, store: &Store) -> Option<Duration> {
        Kubelet::pass(self, store)
    }

    fn feed(&mut self) -> &mut super::Cache {
        &mut self.cache
    }
}

fn hex(rng: &mut fastrand::Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[rng.usize(..16)]))
        .collect()
}

/// A stable fake digest of an image name.
fn image_id(image: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::new();
    for round in 0..4u64 {
        for b in image.bytes().chain(round.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    let repo = if image.contains('/') {
        image.to_string()
    } else {
        format!("docker.io/library/{image}")
    };
    let repo = repo.split(['@']).next().unwrap_or_default().to_string();
    let repo = match repo.rsplit_once(':') {
        Some((r, tag)) if !tag.contains('/') => r.to_string(),
        _ => repo,
    };
    format!("{repo}@sha256:{out}")
}

fn containers(pod: &Value, list: &str) -> Vec<Value> {
    pod["spec"][list].as_array().cloned().unwrap_or_default()
}

/// Sorts pod conditions in the order the kubelet writes them.
pub(super) fn order_conditions(conds: &mut [Value]) {
    conds.sort_by_key(|c| {
        let t = c["type"].as_str().unwrap_or_default();
        CONDITION_ORDER
            .iter()
            .position(|x| *x == t)
            .unwrap_or(CONDITION_ORDER.len())
    });
}

/// The first container's state name (`running`, `waiting`, `terminated`) and its waiting reason.
fn container_state(pod: &Value) -> (Option<String>, Option<String>) {
    let st = &pod["status"]["containerStatuses"][0]["state"];
    let Some(m) = st.as_object() else {
        return (None, None);
    };
    let name = m.keys().next().cloned();
    let reason = st["waiting"]["reason"].as_str().map(str::to_string);
    (name, reason)
}

fn restart_count(pod: &Value) -> u64 {
    pod["status"]["containerStatuses"][0]["restartCount"]
        .as_u64()
        .unwrap_or(0)
}

/// Whether every readiness gate's condition is True.
pub(super) fn readiness_gates_ok(pod: &Value, conds: &[Value]) -> bool {
    pod["spec"]["readinessGates"].as_array().into_iter().flatten().all(|g| {
        conds
            .iter()
            .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
    })
}

impl Kubelet {
    pub(super) fn new(config: AgentConfig, seed: u64, store: &Store, runtime: Option<Arc<ProcessRuntime>>) -> Self {
        Self {
            config,
            rng: fastrand::Rng::with_seed(seed ^ 0x6b75_6265_6c65_7400),
            tracks: HashMap::new(),
            next_ip: HashMap::new(),
            cache: Cache::new(store, &[Gvr::nodes(), Gvr::pods()]),
            nodes: HashMap::new(),
            dirty: BTreeSet::new(),
            timers: BTreeSet::new(),
            timer_of: HashMap::new(),
            parked: BTreeSet::new(),
            retry: BTreeSet::new(),
            write_failed: false,
            runtime,
        }
    }

    /// One kubelet pass over the pods bound to an existing node that changed, whose timer fell due, whose last
    /// write failed, or (while [`super::PodHooks`] are registered) that run without an exit plan; returns the
    /// time until the next timer.
    pub(super) fn pass(&mut self, store: &Store) -> Option<Duration> {
        let mut nodes_changed = false;
        for ch in self.cache.sync() {
            if ch.kind == NODES {
                nodes_changed = true;
                continue;
            }
            if let Some(old) = &ch.old
                && ch.new.as_ref().is_none_or(|n| n.uid() != old.uid())
            {
                self.tracks.remove(old.uid());
                self.config.pod_logs.forget_pod(old.uid());
                if let Some(rt) = &self.runtime {
                    rt.remove(old.uid());
                }
            }
            self.dirty.insert(ch.key);
        }
        if nodes_changed {
            self.nodes = self.cache.maps[NODES]
                .values()
                .map(|n| (n.name().to_string(), node_net(n)))
                .collect();
            self.dirty.extend(self.cache.maps[PODS].keys().cloned());
        }
        let now_i = Instant::now();
        while let Some((at, key)) = self.timers.first().cloned() {
            if at > now_i {
                break;
            }
            self.timers.pop_first();
            self.timer_of.remove(&key);
            self.dirty.insert(key);
        }
        if !self.config.pod_hooks.is_empty() {
            self.dirty.extend(self.parked.iter().cloned());
        }
        let retry = std::mem::take(&mut self.retry);
        self.dirty.extend(retry);
        for key in std::mem::take(&mut self.dirty) {
            self.parked.remove(&key);
            if let Some(at) = self.timer_of.remove(&key) {
                self.timers.remove(&(at, key.clone()));
            }
            let Some(pod) = self.cache.maps[PODS].get(&key).cloned() else {
                continue;
            };
            let pod = DecodedPod::new(&pod);
            let value = pod.value();
            let Some(net) = node_name(value).and_then(|n| self.nodes.get(n)).cloned() else {
                self.tracks.remove(pod.uid());
                continue;
            };
            let uid = pod.uid().to_string();
            let mut tr = self.tracks.get(&uid).cloned().unwrap_or(Track {
                seen: now_i,
                started: None,
                failed_at: None,
                terminating: None,
                killed: false,
            });
            self.write_failed = false;
            match self.step(store, &pod, &net, &mut tr, now_i) {
                Some(at) => {
                    self.timers.insert((at, key.clone()));
                    self.timer_of.insert(key.clone(), at);
                }
                None if phase(value) == "Running" && !is_terminating(value) => {
                    self.parked.insert(key.clone());
                }
                None => {}
            }
            if self.write_failed {
                self.retry.insert(key);
            }
            self.tracks.insert(uid, tr);
        }
        self.timers.first().map(|(at, _)| at.saturating_duration_since(now_i))
    }

    /// Advances one pod; returns when it next needs attention.
    fn step(
        &mut self,
        store: &Store,
        pod: &DecodedPod<'_>,
        net: &NodeNet,
        tr: &mut Track,
        now_i: Instant,
    ) -> Option<Instant> {
        let v = pod.value();
        let placement = self.runtime.as_ref().map_or(Placement::Hollow, |rt| rt.placement(v));
        if placement == Placement::Process
            && let Some(rt) = self.runtime.clone()
        {
            return self.step_process(store, pod, net, tr, &rt, now_i);
        }
        if is_terminating(v) {
            return self.kill(store, pod, tr, now_i);
        }
        if is_terminal(v) {
            return None;
        }
        let failure = match placement {
            Placement::Unmapped(_) => "image-pull",
            _ => annotation(v, ANN_FAILURE).unwrap_or_default(),
        };
        let (state, waiting) = container_state(v);
        match (phase(v), state.as_deref()) {
            ("Pending", _) => {
                let delay = annotation(v, ANN_START_DELAY)
                    .and_then(|s| parse_duration(s).ok())
                    .unwrap_or(self.config.pod_start_delay);
                let at = tr.seen + delay;
                if now_i < at {
                    return Some(at);
                }
                if failure == "image-pull" {
                    match waiting.as_deref() {
                        Some("ErrImagePull") => {
                            let failed = *tr.failed_at.get_or_insert(now_i);
                            let at = failed + self.config.crash_backoff;
                            if now_i < at {
                                return Some(at);
                            }
                            let st = self.pull_failed(pod, net, "ImagePullBackOff");
                            self.write(store, pod, st);
                        }
                        Some("ImagePullBackOff") => {}
                        _ => {
                            let st = self.pull_failed(pod, net, "ErrImagePull");
                            if self.write(store, pod, st) {
                                tr.failed_at = Some(now_i);
                                return Some(now_i + self.config.crash_backoff);
                            }
                        }
                    }
                    return None;
                }
                let st = self.running(pod, net, failure != "never-ready");
                if self.write(store, pod, st) {
                    self.log_started(pod);
                    tr.started = Some(now_i);
                    return Some(now_i);
                }
                None
            }
            ("Running", Some("waiting")) if waiting.as_deref() == Some("CrashLoopBackOff") => {
                let crashed = *tr.failed_at.get_or_insert(now_i);
                let doublings = (restart_count(v).saturating_sub(1) as u32).min(MAX_BACKOFF_DOUBLINGS);
                let at = crashed + self.config.crash_backoff * 2u32.pow(doublings);
                if now_i < at {
                    return Some(at);
                }
                let st = self.running(pod, net, failure != "never-ready");
                if self.write(store, pod, st) {
                    self.log_started(pod);
                    tr.started = Some(now_i);
                    return Some(now_i);
                }
                None
            }
            ("Running", _) => {
                let started = *tr.started.get_or_insert(now_i);
                let plan = match self.config.pod_hooks.decide(v) {
                    Some(PodExit::KeepRunning) => return None,
                    Some(PodExit::Exit(code)) => Some(ExitPlan {
                        after: Duration::ZERO,
                        code,
                        oom: false,
                    }),
                    None => self.exit_plan(v),
                };
                let plan = plan?;
                let at = started + plan.after;
                if now_i < at {
                    return Some(at);
                }
                let restart_policy = v["spec"]["restartPolicy"].as_str().unwrap_or("Always");
                let reason = match (plan.code, plan.oom) {
                    (0, _) => "Completed",
                    (_, true) => "OOMKilled",
                    _ => "Error",
                };
                if plan.code == 0 {
                    let st = self.terminated(pod, "Succeeded", 0, reason);
                    if self.write(store, pod, st) {
                        self.log_stopped(pod, 0, reason);
                    }
                } else if restart_policy == "Never" {
                    let st = self.terminated(pod, "Failed", plan.code, reason);
                    if self.write(store, pod, st) {
                        self.log_stopped(pod, plan.code, reason);
                    }
                } else {
                    let st = self.crashed(pod, plan.code, plan.oom);
                    if self.write(store, pod, st) {
                        self.log_stopped(pod, plan.code, reason);
                        tr.failed_at = Some(now_i);
                        return Some(now_i + self.config.crash_backoff);
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// Advances a process pod through the runtime and writes its status; deletes it once a graceful deletion
    /// has stopped every process.
    fn step_process(
        &mut self,
        store: &Store,
        pod: &DecodedPod<'_>,
        net: &NodeNet,
        tr: &mut Track,
        rt: &ProcessRuntime,
        now_i: Instant,
    ) -> Option<Instant> {
        let v = pod.value();
        if tr.killed {
            return None;
        }
        if is_terminating(v) {
            let (view, next) = rt.terminate(v);
            let mut st = self.base_status(v, net);
            super::process_status::apply(&mut st, v, &view);
            if let Some(at) = next {
                self.write(store, pod, Value::Object(st));
                return Some(at);
            }
            if !self.write(store, pod, Value::Object(st)) {
                return Some(now_i);
            }
            return self.delete_now(store, pod, tr);
        }
        if is_terminal(v) && !rt.has_pod(pod.uid()) {
            return None;
        }
        let (view, next) = rt.sync(v);
        let mut st = self.base_status(v, net);
        super::process_status::apply(&mut st, v, &view);
        self.write(store, pod, Value::Object(st));
        if super::process_status::is_terminal_phase(view.phase) {
            return None;
        }
        Some(next)
    }

    /// The final `DELETE` (grace 0) of a pod whose containers stopped.
    fn delete_now(&mut self, store: &Store, pod: &DecodedPod<'_>, tr: &mut Track) -> Option<Instant> {
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            precondition_uid: Some(pod.uid().to_string()),
            ..DeleteOptions::default()
        };
        match store.delete(&Gvr::pods(), pod.namespace(), pod.name(), &opts) {
            Ok(_) => tr.killed = true,
            Err(e) if e.code == 404 => tr.killed = true,
            Err(e) => {
                self.write_failed = true;
                tracing::debug!(error = %e, pod = pod.name(), "kubelet: delete failed");
            }
        }
        None
    }

    /// When and how the containers of a running pod exit, from its annotations (or the Job default).
    fn exit_plan(&self, pod: &Value) -> Option<ExitPlan> {
        let failure = annotation(pod, ANN_FAILURE).unwrap_or_default();
        let code_ann = annotation(pod, ANN_EXIT_CODE).and_then(|c| c.trim().parse::<i32>().ok());
        let run = annotation(pod, ANN_RUN_DURATION).and_then(|s| parse_duration(s).ok());
        let owned_by_job = pod["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r["kind"] == "Job" && r["controller"] == true))
            && controller_uid(pod).is_some();
        let (code, oom) = match failure {
            "oom" => (OOM_EXIT_CODE, true),
            "crash" => (code_ann.unwrap_or(1), false),
            _ => (code_ann.unwrap_or(0), false),
        };
        let after = match run {
            Some(d) => d,
            None if failure == "oom" || failure == "crash" || code_ann.is_some() => Duration::ZERO,
            None if owned_by_job => self.config.job_pod_run_duration,
            None => return None,
        };
        Some(ExitPlan { after, code, oom })
    }

    /// Graceful deletion: after `min(grace, kill_delay)`, terminal status, then `DELETE` with grace 0.
    fn kill(&mut self, store: &Store, pod: &DecodedPod<'_>, tr: &mut Track, now_i: Instant) -> Option<Instant> {
        if tr.killed {
            return None;
        }
        let first = *tr.terminating.get_or_insert(now_i);
        let value = pod.value();
        let grace = Duration::from_secs(value["metadata"]["deletionGracePeriodSeconds"].as_u64().unwrap_or(0));
        let at = first + grace.min(self.config.pod_kill_delay);
        if now_i < at {
            return Some(at);
        }
        if !is_terminal(value) {
            let code = annotation(value, ANN_EXIT_CODE)
                .and_then(|c| c.trim().parse::<i32>().ok())
                .unwrap_or(0);
            let reason = if code == 0 { "Completed" } else { "Error" };
            let st = if code == 0 {
                self.terminated(pod, "Succeeded", 0, reason)
            } else {
                self.terminated(pod, "Failed", code, reason)
            };
            if !self.write(store, pod, st) {
                return Some(now_i);
            }
            self.log_stopped(pod, code, reason);
        }
        self.delete_now(store, pod, tr)
    }

    /// Records the start of every app container in its log.
    fn log_started(&self, pod: &DecodedPod<'_>) {
        for c in containers(pod.value(), "containers") {
            let name = c["name"].as_str().unwrap_or_default();
            let image = c["image"].as_str().unwrap_or_default();
            let line = format!("kube-sim: started container {name} (image {image:?}, hollow: no process runs)");
            self.config.pod_logs.container_started(pod.uid(), name, &line);
        }
    }

    /// Records how every app container exited in its log.
    fn log_stopped(&self, pod: &DecodedPod<'_>, code: i32, reason: &str) {
        for c in containers(pod.value(), "containers") {
            let name = c["name"].as_str().unwrap_or_default();
            let line = format!("kube-sim: container {name} exited with code {code} ({reason})");
            self.config.pod_logs.container_stopped(pod.uid(), name, &line);
        }
    }

    /// Writes `status` (merge patch on `/status`, guarded by the RV); true on success.
    fn write(&mut self, store: &Store, pod: &DecodedPod<'_>, status: Value) -> bool {
        let current = pod.value();
        if status == current["status"] {
            return true;
        }
        match store.patch(
            &Gvr::pods(),
            pod.namespace(),
            pod.name(),
            &PatchKind::Merge,
            &status_patch_over(pod.rv, &current["status"], &status),
            Some("status"),
        ) {
            Ok(_) => true,
            Err(e) => {
                self.write_failed = true;
                tracing::debug!(error = %e, pod = pod.name(), "kubelet: status write failed");
                false
            }
        }
    }

    fn alloc_ip(&mut self, pod: &Value, net: &NodeNet) -> String {
        if let Some(ip) = pod["status"]["podIP"].as_str() {
            return ip.to_string();
        }
        if pod["spec"]["hostNetwork"].as_bool() == Some(true) {
            return net.ip.clone();
        }
        let n = self.next_ip.entry(net.pod_prefix.clone()).or_insert(1);
        *n = if *n >= 254 { 2 } else { *n + 1 };
        format!("{}{}", net.pod_prefix, n)
    }

    /// The status fields every started pod has: IPs, start time, base conditions.
    fn base_status(&mut self, pod: &Value, net: &NodeNet) -> Map<String, Value> {
        let mut st = pod["status"].as_object().cloned().unwrap_or_default();
        let ip = self.alloc_ip(pod, net);
        st.insert("hostIP".into(), json!(net.ip));
        st.insert("hostIPs".into(), json!([{"ip": net.ip}]));
        st.insert("podIP".into(), json!(ip));
        st.insert("podIPs".into(), json!([{"ip": ip}]));
        if st.get("startTime").is_none_or(Value::is_null) {
            st.insert("startTime".into(), json!(now()));
        }
        if st.get("qosClass").is_none_or(Value::is_null) {
            st.insert("qosClass".into(), json!("BestEffort"));
        }
        st
    }

    fn set_conditions(st: &mut Map<String, Value>, pod: &Value, ready: bool, reason: &str, message: Option<&str>) {
        let mut conds: Vec<Value> = st
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        set_condition(&mut conds, "PodReadyToStartContainers", "True", None, None);
        set_condition(&mut conds, "Initialized", "True", None, None);
        set_condition(&mut conds, "PodScheduled", "True", None, None);
        if ready {
            set_condition(&mut conds, "ContainersReady", "True", None, None);
            if readiness_gates_ok(pod, &conds) {
                set_condition(&mut conds, "Ready", "True", None, None);
            } else {
                set_condition(
                    &mut conds,
                    "Ready",
                    "False",
                    Some("ReadinessGatesNotReady"),
                    Some("the status of pod readiness gate is not \"True\""),
                );
            }
        } else {
            set_condition(&mut conds, "ContainersReady", "False", Some(reason), message);
            set_condition(&mut conds, "Ready", "False", Some(reason), message);
        }
        order_conditions(&mut conds);
        st.insert("conditions".into(), json!(conds));
    }

    fn not_ready_message(pod: &Value) -> String {
        let names: Vec<String> = containers(pod, "containers")
            .iter()
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect();
        format!("containers with unready status: [{}]", names.join(" "))
    }

    fn init_statuses(&mut self, pod: &Value) -> Option<Value> {
        let inits = containers(pod, "initContainers");
        if inits.is_empty() {
            return None;
        }
        let ts = now();
        let out: Vec<Value> = inits
            .iter()
            .map(|c| {
                let image = c["image"].as_str().unwrap_or_default();
                let id = format!("containerd://{}", hex(&mut self.rng, 64));
                let sidecar = c["restartPolicy"] == "Always";
                let state = if sidecar {
                    json!({"running": {"startedAt": ts}})
                } else {
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": ts, "finishedAt": ts, "containerID": id}})
                };
                json!({"name": c["name"], "image": image, "imageID": image_id(image), "containerID": id,
                       "ready": sidecar, "started": sidecar, "restartCount": 0, "state": state, "lastState": {}})
            })
            .collect();
        Some(json!(out))
    }

    /// Status of a pod whose containers are (re)started and running.
    fn running(&mut self, pod: &DecodedPod<'_>, net: &NodeNet, ready: bool) -> Value {
        let v = pod.value();
        let mut st = self.base_status(v, net);
        st.insert("phase".into(), json!("Running"));
        let ts = now();
        let old: Vec<Value> = v["status"]["containerStatuses"].as_array().cloned().unwrap_or_default();
        let statuses: Vec<Value> = containers(v, "containers")
            .iter()
            .map(|c| {
                let prev = old.iter().find(|o| o["name"] == c["name"]);
                let image = c["image"].as_str().unwrap_or_default();
                json!({
                    "name": c["name"],
                    "image": image,
                    "imageID": image_id(image),
                    "containerID": format!("containerd://{}", hex(&mut self.rng, 64)),
                    "ready": ready,
                    "started": true,
                    "restartCount": prev.and_then(|p| p["restartCount"].as_u64()).unwrap_or(0),
                    "state": {"running": {"startedAt": ts}},
                    "lastState": prev.map(|p| p["lastState"].clone()).filter(|l| !l.is_null()).unwrap_or(json!({})),
                })
            })
            .collect();
        st.insert("containerStatuses".into(), json!(statuses));
        if let Some(inits) = self.init_statuses(v) {
            st.insert("initContainerStatuses".into(), inits);
        }
        let msg = Self::not_ready_message(v);
        Self::set_conditions(&mut st, v, ready, "ContainersNotReady", Some(&msg));
        Value::Object(st)
    }

    /// Status of a pod whose image cannot be pulled (`ErrImagePull` / `ImagePullBackOff`).
    fn pull_failed(&mut self, pod: &DecodedPod<'_>, net: &NodeNet, reason: &str) -> Value {
        let v = pod.value();
        let mut st = self.base_status(v, net);
        st.insert("phase".into(), json!("Pending"));
        let statuses: Vec<Value> = containers(v, "containers")
            .iter()
            .map(|c| {
                let image = c["image"].as_str().unwrap_or_default();
                let message = if reason == "ErrImagePull" {
                    format!("failed to pull and unpack image \"{image}\": not found")
                } else {
                    format!("Back-off pulling image \"{image}\"")
                };
                json!({"name": c["name"], "image": image, "imageID": "", "ready": false, "started": false,
                       "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}, "lastState": {}})
            })
            .collect();
        st.insert("containerStatuses".into(), json!(statuses));
        let msg = Self::not_ready_message(v);
        Self::set_conditions(&mut st, v, false, "ContainersNotReady", Some(&msg));
        Value::Object(st)
    }

    /// Status of a pod whose containers crashed and wait in CrashLoopBackOff.
    fn crashed(&mut self, pod: &DecodedPod<'_>, code: i32, oom: bool) -> Value {
        let v = pod.value();
        let mut st = v["status"].as_object().cloned().unwrap_or_default();
        let ts = now();
        let old: Vec<Value> = v["status"]["containerStatuses"].as_array().cloned().unwrap_or_default();
        let reason = if oom { "OOMKilled" } else { "Error" };
        let statuses: Vec<Value> = old
            .iter()
            .map(|o| {
                let mut o = o.clone();
                let started_at = o["state"]["running"]["startedAt"].clone();
                let restarts = o["restartCount"].as_u64().unwrap_or(0) + 1;
                let name = o["name"].as_str().unwrap_or_default().to_string();
                o["lastState"] = json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": started_at,
                                          "finishedAt": ts, "containerID": o["containerID"]}});
                o["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                    "message": format!("back-off restarting failed container={name} pod={}", pod.name())}});
                o["restartCount"] = json!(restarts);
                o["ready"] = json!(false);
                o["started"] = json!(false);
                o
            })
            .collect();
        st.insert("containerStatuses".into(), json!(statuses));
        let msg = Self::not_ready_message(v);
        Self::set_conditions(&mut st, v, false, "ContainersNotReady", Some(&msg));
        Value::Object(st)
    }

    /// Status of a pod whose containers all exited: `phase` Succeeded or Failed.
    fn terminated(&mut self, pod: &DecodedPod<'_>, phase: &str, code: i32, reason: &str) -> Value {
        let v = pod.value();
        let mut st = v["status"].as_object().cloned().unwrap_or_default();
        st.insert("phase".into(), json!(phase));
        let ts = now();
        let old: Vec<Value> = v["status"]["containerStatuses"].as_array().cloned().unwrap_or_default();
        let statuses: Vec<Value> = containers(v, "containers")
            .iter()
            .map(|c| {
                let prev = old.iter().find(|o| o["name"] == c["name"]);
                let image = c["image"].as_str().unwrap_or_default();
                let id = prev
                    .and_then(|p| p["containerID"].as_str().map(str::to_string))
                    .unwrap_or_else(|| format!("containerd://{}", hex(&mut self.rng, 64)));
                let started_at = prev
                    .map(|p| p["state"]["running"]["startedAt"].clone())
                    .filter(|s| !s.is_null())
                    .unwrap_or(json!(ts));
                json!({
                    "name": c["name"], "image": image, "imageID": image_id(image), "containerID": id,
                    "ready": false, "started": false,
                    "restartCount": prev.and_then(|p| p["restartCount"].as_u64()).unwrap_or(0),
                    "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": started_at,
                                             "finishedAt": ts, "containerID": id}},
                    "lastState": prev.map(|p| p["lastState"].clone()).filter(|l| !l.is_null()).unwrap_or(json!({})),
                })
            })
            .collect();
        st.insert("containerStatuses".into(), json!(statuses));
        let mut conds: Vec<Value> = st
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        set_condition(&mut conds, "PodReadyToStartContainers", "False", None, None);
        set_condition(&mut conds, "ContainersReady", "False", Some("PodCompleted"), None);
        set_condition(&mut conds, "Ready", "False", Some("PodCompleted"), None);
        order_conditions(&mut conds);
        st.insert("conditions".into(), json!(conds));
        Value::Object(st)
    }
}
