//! Hollow agents (docs/kube-sim.md#what-it-simulates): nodes, scheduler (with Volcano gang emulation), kubelet,
//! Job controller, the `apps/v1` controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet), the EndpointSlice
//! and Endpoints controllers and a hollow cert-manager.
//!
//! They run in-process as tasks and act only through [`crate::store::Store`] (never HTTP), so every change they
//! make gets a resourceVersion and a watch event and passes the same validation as client writes. Their
//! settings arrive as [`crate::config::AgentConfig`] (in `SimConfig::agents`). The garbage collector and the
//! namespace controller live with the store (`store/gc.rs`) and always run.
//!
//! Each agent is level-triggered but incremental: it keeps a local copy of the objects it cares about from the
//! store's change feed ([`crate::store::Store::change_feed`]) with indexes (per-node usage, pending pods,
//! PodGroup members, pods by controller uid), and a pass makes one step towards the desired state for the
//! objects that changed, whose timer (a deadline map) fell due, or whose last write failed. It runs again when its
//! feed delivers a change (or after a timer it asked for, or [`AgentConfig::resync`]): commits to resources it
//! does not watch (Events, custom resources, ...) do not wake it. Writes carry the `resourceVersion` they were
//! computed from, so a racing write makes them fail with a conflict and the next pass retries.
//!
//! Per-pod behaviour is driven by annotations (see the `ANN_*` constants):
//!
//! | Annotation | Effect |
//! |---|---|
//! | `kube-sim.io/start-delay: 250ms` | delay between binding and Running |
//! | `kube-sim.io/run-duration: 30s` | containers exit after this long (exit code below, default 0) |
//! | `kube-sim.io/exit-code: "3"` | containers exit with this code (after the run duration, default at once) |
//! | `kube-sim.io/failure: image-pull` | Pending with `ErrImagePull`, then `ImagePullBackOff` |
//! | `kube-sim.io/failure: crash` | containers exit with the exit code (default 1) |
//! | `kube-sim.io/failure: oom` | containers exit 137 `OOMKilled` |
//! | `kube-sim.io/failure: never-ready` | Running with `Ready=False` |
//!
//! Non-zero exits give `phase: Failed` with `restartPolicy: Never`, else a CrashLoopBackOff cycle.

pub mod cert_manager;
mod daemonset;
pub mod deployment;
mod endpoint_pod;
pub mod endpoints;
mod hooks;
mod job;
mod kubelet;
mod nodes;
mod pod_facts;
mod process_status;
pub mod quantity;
mod replicaset;
mod scheduler;
mod service_selection;
pub mod statefulset;
mod workload;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube_compat::go_duration;
use serde_json::{Map, Value, json};

pub use hooks::{PodExit, PodExitHook, PodHooks};

use crate::config::AgentConfig;
use crate::kinds::Gvr;
use crate::store::{EventType, Store, StoreEvent, StoredObject};

/// Annotation: delay between binding and Running.
pub const ANN_START_DELAY: &str = "kube-sim.io/start-delay";
/// Annotation: how long the containers run before exiting.
pub const ANN_RUN_DURATION: &str = "kube-sim.io/run-duration";
/// Annotation: the containers' exit code.
pub const ANN_EXIT_CODE: &str = "kube-sim.io/exit-code";
/// Annotation: injected failure (`image-pull`, `crash`, `oom`, `never-ready`).
pub const ANN_FAILURE: &str = "kube-sim.io/failure";
/// Volcano's pod annotation naming the pod's PodGroup (`KubeGroupNameAnnotationKey`).
pub const ANN_GROUP_NAME: &str = "scheduling.k8s.io/group-name";
/// Volcano's alternative PodGroup annotation.
pub const ANN_VOLCANO_GROUP_NAME: &str = "scheduling.volcano.sh/group-name";
/// The Job controller's pod finalizer.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The scheduler name Volcano pods use.
pub const VOLCANO_SCHEDULER: &str = "volcano";

/// Longest pause after a pass that changed the store, to batch bursts of commits.
const BATCH_PAUSE: Duration = Duration::from_millis(1);

/// A duration annotation value that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {0:?}")]
pub struct DurationError(pub String);

/// Starts the enabled agents on `store`; the server aborts the returned tasks when it stops. Nodes are
/// created before this returns. With a `runtime`, the kubelet runs pods with mapped images as processes.
pub fn spawn(
    store: &Store,
    config: &AgentConfig,
    runtime: Option<Arc<crate::runtime::ProcessRuntime>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    if !config.enabled {
        return tasks;
    }
    nodes::create_nodes(store, config);
    if config.scheduler {
        let s = scheduler::Scheduler::new(config.clone(), store);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, s)));
    }
    if config.kubelet {
        let k = kubelet::Kubelet::new(config.clone(), store.config().seed, store, runtime);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, k)));
    }
    if config.job_controller {
        let j = job::JobController::new(store);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, j)));
    }
    if config.workload_controllers {
        use workload::OwnerController;
        let d = OwnerController::new(store, deployment::DeploymentController);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, d)));
        let r = OwnerController::new(store, replicaset::ReplicaSetController);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, r)));
        let s = OwnerController::new(store, statefulset::StatefulSetController);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, s)));
        let ds = OwnerController::new(store, daemonset::DaemonSetController);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, ds)));
    }
    if config.cert_manager {
        let c = cert_manager::CertManager::new(store);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, c)));
    }
    if config.endpoints {
        let e = endpoints::EndpointsController::new(store);
        tasks.push(tokio::spawn(run_loop(store.clone(), config.resync, e)));
    }
    tasks
}

/// An agent driven by [`run_loop`].
trait Agent: Send {
    /// One pass; returns the delay until a timer it needs.
    fn pass(&mut self, store: &Store) -> Option<Duration>;
    /// The agent's change feed, which [`run_loop`] waits on between passes.
    fn feed(&mut self) -> &mut Cache;
}

/// Runs the agent's pass whenever its feed delivers a change, when the delay it returned elapses, or every
/// `resync`.
///
/// Waiting on the agent's own feed rather than on every store commit matters under load: an operator's Events
/// and custom-resource status writes would otherwise wake every agent for a pass with nothing to do.
async fn run_loop<A: Agent>(store: Store, resync: Duration, mut agent: A) {
    let resync = resync.max(Duration::from_millis(1));
    loop {
        let before = store.current_rv();
        let next = agent.pass(&store);
        if store.current_rv() != before {
            tokio::time::sleep(BATCH_PAUSE).await;
            continue;
        }
        let wait = next.map_or(resync, |d| d.min(resync));
        if wait.is_zero() || agent.feed().has_pending() {
            tokio::task::yield_now().await;
        } else {
            agent.feed().wait(wait).await;
        }
    }
}

/// The store key of an object: (namespace or "", name).
type Key = (String, String);

fn key_of(o: &StoredObject) -> Key {
    (o.namespace().unwrap_or_default().to_string(), o.name().to_string())
}

/// A local copy of some resources, kept current from the store's [`crate::store::ChangeFeed`].
struct Cache {
    rx: tokio::sync::mpsc::UnboundedReceiver<(usize, Arc<StoreEvent>)>,
    /// Objects per resource (in the order the resources were given), by key.
    maps: Vec<BTreeMap<Key, Arc<StoredObject>>>,
    /// The snapshot, handed out by the first [`Cache::sync`].
    initial: Vec<(usize, Arc<StoredObject>)>,
    /// A change [`Cache::wait`] took from the feed, applied first by the next [`Cache::sync`].
    received: Option<(usize, Arc<StoreEvent>)>,
}

/// One change seen by [`Cache::sync`]: the resource's index, the key, the state before and after.
struct Change {
    kind: usize,
    key: Key,
    old: Option<Arc<StoredObject>>,
    new: Option<Arc<StoredObject>>,
}

impl Cache {
    fn new(store: &Store, gvrs: &[Gvr]) -> Self {
        let feed = store.change_feed(gvrs);
        Self {
            rx: feed.rx,
            maps: vec![BTreeMap::new(); gvrs.len()],
            initial: feed.snapshot,
            received: None,
        }
    }

    fn has_pending(&self) -> bool {
        !self.initial.is_empty() || self.received.is_some() || !self.rx.is_empty()
    }

    /// Waits until the feed holds a change [`Cache::sync`] has not applied, or `timeout` passes.
    async fn wait(&mut self, timeout: Duration) {
        if self.has_pending() {
            return;
        }
        match tokio::time::timeout(timeout, self.rx.recv()).await {
            Ok(Some(change)) => self.received = Some(change),
            // The store is gone (its agents are aborted with it): wait out the timeout instead of spinning.
            Ok(None) => tokio::time::sleep(timeout).await,
            Err(_) => {}
        }
    }

    /// Applies every event received so far, returning the changes in order.
    fn sync(&mut self) -> Vec<Change> {
        let mut out = Vec::new();
        for (kind, obj) in std::mem::take(&mut self.initial) {
            let key = key_of(&obj);
            let old = self.maps[kind].insert(key.clone(), obj.clone());
            out.push(Change {
                kind,
                key,
                old,
                new: Some(obj),
            });
        }
        while let Some((kind, ev)) = self.received.take().or_else(|| self.rx.try_recv().ok()) {
            let key = key_of(&ev.object);
            let (old, new) = if ev.kind == EventType::Deleted {
                (self.maps[kind].remove(&key), None)
            } else {
                (
                    self.maps[kind].insert(key.clone(), ev.object.clone()),
                    Some(ev.object.clone()),
                )
            };
            out.push(Change { kind, key, old, new });
        }
        out
    }
}

/// Removes and returns the keys whose timer fell due by `now`.
fn take_due(timers: &mut BTreeMap<Key, std::time::Instant>, now: std::time::Instant) -> Vec<Key> {
    let due: Vec<Key> = timers
        .iter()
        .filter(|(_, at)| **at <= now)
        .map(|(k, _)| k.clone())
        .collect();
    for k in &due {
        timers.remove(k);
    }
    due
}

/// Parses an annotation's duration: Go duration text (`250ms`, `30s`, `1.5m`, `2h`, `100us`) or a bare
/// number of seconds (`2`, `0.5`); surrounding whitespace is ignored.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let err = || DurationError(s.to_string());
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| err())?;
        return Duration::try_from_secs_f64(secs).map_err(|_| err());
    }
    go_duration::parse(t).map_err(|_| err())
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

fn is_terminating(obj: &Value) -> bool {
    obj["metadata"].get("deletionTimestamp").is_some_and(|v| !v.is_null())
}

fn phase(obj: &Value) -> &str {
    obj["status"]["phase"].as_str().unwrap_or("Pending")
}

fn is_terminal(obj: &Value) -> bool {
    matches!(phase(obj), "Succeeded" | "Failed")
}

fn node_name(pod: &Value) -> Option<&str> {
    pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
}

/// The uid of the object's controller owner reference.
fn controller_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
        .and_then(|r| r["uid"].as_str())
}

fn now() -> String {
    crate::store::now_rfc3339()
}

/// Sets the condition `ty` in `conds`, keeping `lastTransitionTime` when the status does not change. Returns
/// true when something changed.
fn set_condition(conds: &mut Vec<Value>, ty: &str, status: &str, reason: Option<&str>, message: Option<&str>) -> bool {
    let mut c = Map::new();
    c.insert("type".into(), json!(ty));
    c.insert("status".into(), json!(status));
    if let Some(r) = reason {
        c.insert("reason".into(), json!(r));
    }
    if let Some(m) = message {
        c.insert("message".into(), json!(m));
    }
    match conds.iter_mut().find(|x| x["type"] == ty) {
        Some(old) => {
            let same_status = old["status"] == status;
            let mut next = c;
            for k in ["lastProbeTime", "lastHeartbeatTime"] {
                if let Some(v) = old.get(k) {
                    next.insert(k.into(), v.clone());
                }
            }
            let ltt = if same_status {
                old["lastTransitionTime"].clone()
            } else {
                json!(now())
            };
            next.insert(
                "lastTransitionTime".into(),
                if ltt.is_null() { json!(now()) } else { ltt },
            );
            let next = Value::Object(next);
            if *old == next {
                false
            } else {
                *old = next;
                true
            }
        }
        None => {
            c.insert("lastTransitionTime".into(), json!(now()));
            conds.push(Value::Object(c));
            true
        }
    }
}

fn condition_true(obj: &Value, ty: &str) -> bool {
    obj["status"]["conditions"]
        .as_array()
        .is_some_and(|a| a.iter().any(|c| c["type"] == ty && c["status"] == "True"))
}

/// A merge patch that replaces `status` wholesale with `desired` (removed keys become `null`), guarded by the
/// resourceVersion of `obj`.
fn status_patch(obj: &StoredObject, desired: &Value) -> Value {
    status_patch_over(obj.rv, &obj.value()["status"], desired)
}

/// [`status_patch`] from the object's resourceVersion and its current status (already decoded).
fn status_patch_over(rv: u64, current: &Value, desired: &Value) -> Value {
    let mut status = desired.clone();
    null_removed(current, &mut status);
    json!({"metadata": {"resourceVersion": rv.to_string()}, "status": status})
}

/// Turns `new` into a merge patch over `old`: keys of `old` objects missing from `new` become `null`,
/// recursively.
fn null_removed(old: &Value, new: &mut Value) {
    if let (Some(old), Some(new)) = (old.as_object(), new.as_object_mut()) {
        for (k, ov) in old {
            match new.get_mut(k) {
                None => {
                    new.insert(k.clone(), Value::Null);
                }
                Some(nv) => null_removed(ov, nv),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts its passes; watches pods only.
    struct CountingAgent {
        cache: Cache,
        passes: Arc<AtomicUsize>,
    }

    impl Agent for CountingAgent {
        fn pass(&mut self, _store: &Store) -> Option<Duration> {
            self.cache.sync();
            self.passes.fetch_add(1, Ordering::SeqCst);
            None
        }

        fn feed(&mut self) -> &mut Cache {
            &mut self.cache
        }
    }

    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn commits_outside_the_feed_do_not_wake_an_agent() {
        let store = Store::new(crate::store::StoreConfig::default());
        let passes = Arc::new(AtomicUsize::new(0));
        let agent = CountingAgent {
            cache: Cache::new(&store, &[Gvr::pods()]),
            passes: passes.clone(),
        };
        let task = tokio::spawn(run_loop(store.clone(), Duration::from_secs(600), agent));
        settle().await;
        let after_start = passes.load(Ordering::SeqCst);
        for i in 0..20 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
            store.create(&Gvr::core("configmaps"), Some("default"), cm).unwrap();
            settle().await;
        }
        assert_eq!(
            passes.load(Ordering::SeqCst),
            after_start,
            "ConfigMap commits ran passes"
        );
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}});
        store.create(&Gvr::pods(), Some("default"), pod).unwrap();
        settle().await;
        assert!(passes.load(Ordering::SeqCst) > after_start, "a pod commit ran no pass");
        task.abort();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration(" 100us "), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn conditions_keep_transition_time() {
        let mut c = vec![json!({"type": "Ready", "status": "True", "lastTransitionTime": "t0"})];
        assert!(!set_condition(&mut c, "Ready", "True", None, None));
        assert_eq!(c[0]["lastTransitionTime"], "t0");
        assert!(set_condition(&mut c, "Ready", "False", Some("X"), None));
        assert_ne!(c[0]["lastTransitionTime"], "t0");
    }
}
