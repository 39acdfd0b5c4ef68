//! The hollow Ray autoscaler: what the `autoscaler` sidecar KubeRay adds to the head pod
//! (`enableInTreeAutoscaling: true`) does in a real cluster, for every cluster whose Running head pod has that
//! container.
//!
//! Every [`HollowAutoscalerOptions::interval`] (Ray's default is 5 s) one iteration per cluster:
//! 1. re-reads the RayCluster (the autoscaler derives its whole configuration from the CR each time: groups,
//!    `minReplicas` / `maxReplicas`, `autoscalerOptions.upscalingMode` / `idleTimeoutSeconds`, per-group
//!    `idleTimeoutSeconds`) and lists the cluster's worker pods;
//! 2. asks the hollow head for the pending demand (actors no node has room for) and for what each Ray node
//!    holds, and updates each worker's idle-since instant ([`ray_autoscale::IdleTracker`]);
//! 3. runs [`ray_autoscale::plan`] and, when a group's `replicas` or `scaleStrategy.workersToDelete` changes,
//!    patches the RayCluster as Ray's KubeRay node provider does: one JSON patch replacing
//!    `/spec/workerGroupSpecs/<i>/replicas` and `/spec/workerGroupSpecs/<i>/scaleStrategy`
//!    (`{"workersToDelete": [...]}`; `add` instead of `replace` when the field is absent, which a strict JSON
//!    patch requires).
//!
//! The patch goes through the simulator's store, like the other hollow agents' writes, so the operator sees an
//! ordinary RayCluster update on its watch. The clock is injected ([`AutoscalerClock`]); there is no randomness:
//! the planner is deterministic.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use ray_api::RayCluster;
use ray_api::constants::{AUTOSCALER_CONTAINER_NAME, RAY_NODE_GROUP_LABEL, RAY_WORKER_REPLICA_NAME_LABEL};
use ray_autoscale::planner::{Plan, PlannerInput, WorkerPod, WorkerState};
use ray_autoscale::{IdleTracker, LogicalResourceError, plan, planner_input};
use serde_json::{Value, json};

use crate::manager::{CLUSTER_LABEL, NODE_TYPE_LABEL, Shared, rayclusters_gvr};
use kube_sim::error::ApiError;
use kube_sim::kinds::Gvr;
use kube_sim::select::{LabelRequirement, LabelSelector};
use kube_sim::store::{ListOptions, PatchKind};

/// Ray's autoscaler iteration period (`AUTOSCALER_UPDATE_INTERVAL_S`, 5 s).
pub const DEFAULT_AUTOSCALER_INTERVAL: Duration = Duration::from_secs(5);
/// How many [`ScaleEvent`]s [`crate::HollowRay::scale_events`] keeps (oldest dropped first).
pub const SCALE_EVENT_HISTORY: usize = 1000;
/// `ray.io/node-type` of a head pod.
const HEAD_NODE_TYPE: &str = "head";
/// `ray.io/node-type` of a worker pod.
const WORKER_NODE_TYPE: &str = "worker";
/// The pod phase in which a Ray node is up.
const RUNNING_PHASE: &str = "Running";

/// The clock the hollow autoscaler reads: the time since an arbitrary, fixed origin. Idle times are measured
/// on it, so tests can substitute their own.
#[derive(Clone)]
pub struct AutoscalerClock(Arc<dyn Fn() -> Duration + Send + Sync>);

impl AutoscalerClock {
    /// A clock from a function (the time since any fixed origin).
    pub fn new(now: impl Fn() -> Duration + Send + Sync + 'static) -> Self {
        Self(Arc::new(now))
    }

    /// Monotonic time since this clock was made.
    pub fn monotonic() -> Self {
        let origin = std::time::Instant::now();
        Self::new(move || origin.elapsed())
    }

    /// The current instant.
    pub fn now(&self) -> Duration {
        (self.0)()
    }
}

impl Default for AutoscalerClock {
    fn default() -> Self {
        Self::monotonic()
    }
}

impl std::fmt::Debug for AutoscalerClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AutoscalerClock")
    }
}

impl PartialEq for AutoscalerClock {
    /// Two clocks are equal when they are the same clock.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How the hollow autoscaler runs.
#[derive(Debug, Clone, PartialEq)]
pub struct HollowAutoscalerOptions {
    /// Whether autoscaler sidecars are played at all.
    pub enabled: bool,
    /// Time between two iterations.
    pub interval: Duration,
    /// The clock idle times are measured on.
    pub clock: AutoscalerClock,
}

impl Default for HollowAutoscalerOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            interval: DEFAULT_AUTOSCALER_INTERVAL,
            clock: AutoscalerClock::default(),
        }
    }
}

/// One scale request the hollow autoscaler patched into a RayCluster (one per changed group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleEvent {
    /// [`AutoscalerClock`] instant of the patch.
    pub at: Duration,
    /// The RayCluster's namespace.
    pub namespace: String,
    /// The RayCluster.
    pub cluster: String,
    /// `groupName`.
    pub group: String,
    /// `replicas` before the patch.
    pub replicas_before: Option<i32>,
    /// `replicas` written.
    pub replicas: Option<i32>,
    /// `scaleStrategy.workersToDelete` written.
    pub workers_to_delete: Vec<String>,
}

/// Why one autoscaler iteration failed (logged; the next iteration starts afresh).
#[derive(Debug, thiserror::Error)]
pub enum AutoscalerError {
    /// Reading or patching through the API server failed.
    #[error("API server: {0}")]
    Api(#[from] ApiError),
    /// The stored RayCluster does not decode.
    #[error("RayCluster does not decode: {0}")]
    Decode(#[from] serde_json::Error),
    /// A group's logical resources cannot be derived.
    #[error(transparent)]
    Resources(#[from] LogicalResourceError),
}

/// What the autoscaler of one cluster remembers between iterations.
#[derive(Debug, Default)]
pub(crate) struct ClusterState {
    /// The head pod it runs in (a new head pod is a new autoscaler).
    head_uid: String,
    /// Idle-since instants of the cluster's Ray nodes.
    idle: IdleTracker,
}

/// Scale events of every cluster, newest last.
#[derive(Debug, Default)]
pub(crate) struct ScaleLog(Mutex<VecDeque<ScaleEvent>>);

impl ScaleLog {
    fn push(&self, event: ScaleEvent) {
        let mut log = self.0.lock();
        if log.len() >= SCALE_EVENT_HISTORY {
            log.pop_front();
        }
        log.push_back(event);
    }

    /// The events of one cluster, oldest first.
    pub(crate) fn of(&self, namespace: &str, cluster: &str) -> Vec<ScaleEvent> {
        self.0
            .lock()
            .iter()
            .filter(|e| e.namespace == namespace && e.cluster == cluster)
            .cloned()
            .collect()
    }
}

fn label<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod["metadata"]["labels"][key].as_str()
}

fn is_deleting(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
}

fn is_running(pod: &Value) -> bool {
    pod["status"]["phase"] == RUNNING_PHASE && !is_deleting(pod)
}

/// Whether a pod runs KubeRay's autoscaler sidecar.
pub fn has_autoscaler_sidecar(pod: &Value) -> bool {
    pod["spec"]["containers"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["name"] == AUTOSCALER_CONTAINER_NAME))
}

/// The JSON patch operations that write a plan's changed groups into a RayCluster, as Ray's KubeRay node
/// provider sends them (`replace`, or `add` where the field is absent).
pub fn scale_patch(cluster: &Value, input: &PlannerInput, plan: &Plan) -> Vec<Value> {
    let groups = cluster["spec"]["workerGroupSpecs"].as_array();
    let mut ops = Vec::new();
    for decision in plan.changes(input) {
        let Some((index, group)) = groups
            .into_iter()
            .flatten()
            .enumerate()
            .find(|(_, g)| g["groupName"] == decision.name.as_str())
        else {
            continue;
        };
        let op = |field: &str| if group.get(field).is_some() { "replace" } else { "add" };
        let before = input.groups.iter().find(|g| g.name == decision.name);
        if let Some(replicas) = decision.replicas
            && before.is_none_or(|g| g.replicas.replicas != Some(replicas))
        {
            ops.push(json!({
                "op": op("replicas"),
                "path": format!("/spec/workerGroupSpecs/{index}/replicas"),
                "value": replicas,
            }));
        }
        if before.is_none_or(|g| g.workers_to_delete != decision.workers_to_delete) {
            ops.push(json!({
                "op": op("scaleStrategy"),
                "path": format!("/spec/workerGroupSpecs/{index}/scaleStrategy"),
                "value": {"workersToDelete": decision.workers_to_delete},
            }));
        }
    }
    ops
}

/// Runs one autoscaler iteration for a cluster at `now`; returns the scale events it patched (empty when
/// nothing changed, or when the cluster has no Running head pod with the sidecar, or no live hollow head).
// `AutoscalerError::Api` carries kube-sim's `ApiError` (a whole Kubernetes `Status`) by value; an iteration
// fails rarely, so its size is not worth boxing.
#[allow(clippy::result_large_err)]
pub(crate) fn iterate(
    shared: &Shared,
    namespace: &str,
    cluster: &str,
    now: Duration,
    state: &mut ClusterState,
) -> Result<Vec<ScaleEvent>, AutoscalerError> {
    let stored = shared.store.get(&rayclusters_gvr(), Some(namespace), cluster)?;
    if is_deleting(&stored.value()) {
        return Ok(Vec::new());
    }
    let opts = ListOptions {
        label_selector: LabelSelector(vec![LabelRequirement::Equal(CLUSTER_LABEL.into(), cluster.into())]),
        ..ListOptions::default()
    };
    let pods = shared.store.list(&Gvr::pods(), Some(namespace), &opts)?;
    let Some(head_pod) = pods
        .items
        .iter()
        .find(|p| label(&p.value(), NODE_TYPE_LABEL) == Some(HEAD_NODE_TYPE) && is_running(&p.value()))
    else {
        return Ok(Vec::new());
    };
    if !has_autoscaler_sidecar(&head_pod.value()) {
        return Ok(Vec::new());
    }
    let Some(head) = shared.head(namespace, cluster) else {
        return Ok(Vec::new());
    };
    if state.head_uid != head_pod.uid() {
        *state = ClusterState {
            head_uid: head_pod.uid().to_string(),
            idle: IdleTracker::new(),
        };
    }
    let ray_cluster: RayCluster = crate::manager::stored_ray_cluster(&stored)?;

    // Ray nodes the head knows; a Running pod it has not heard of yet has not joined.
    let joined: Vec<String> = head.ray_nodes().into_iter().map(|n| n.name).collect();
    let pod_values: Vec<Value> = pods.items.iter().map(|p| p.value()).collect();
    let workers: Vec<&Value> = pod_values
        .iter()
        .filter(|p| label(p, NODE_TYPE_LABEL) == Some(WORKER_NODE_TYPE) && !is_deleting(p))
        .collect();
    let up = |pod: &Value| {
        is_running(pod)
            && pod["metadata"]["name"]
                .as_str()
                .is_some_and(|n| joined.iter().any(|j| j == n))
    };
    state.idle.observe(
        now,
        workers
            .iter()
            .filter(|p| up(p))
            .filter_map(|p| p["metadata"]["name"].as_str())
            .map(|name| (name, head.node_busy(name))),
    );
    let mut by_group: BTreeMap<String, Vec<WorkerPod>> = BTreeMap::new();
    for pod in &workers {
        let (Some(name), Some(group)) = (pod["metadata"]["name"].as_str(), label(pod, RAY_NODE_GROUP_LABEL)) else {
            continue;
        };
        let worker_state = if up(pod) {
            WorkerState::Running {
                used: head.node_used(name),
                idle_since: state.idle.idle_since(name),
            }
        } else {
            WorkerState::Pending
        };
        by_group.entry(group.to_string()).or_default().push(WorkerPod {
            name: name.to_string(),
            state: worker_state,
            replica_name: label(pod, RAY_WORKER_REPLICA_NAME_LABEL).map(str::to_string),
        });
    }
    let head_used = head.node_used(head_pod.name());
    let input = planner_input(&ray_cluster.spec, now, by_group, head_used, head.pending_demands())?;
    let plan = plan(&input);
    if !plan.infeasible.is_empty() {
        tracing::debug!(
            namespace,
            cluster,
            infeasible = plan.infeasible.len(),
            "hollow autoscaler: infeasible demands"
        );
    }
    let ops = scale_patch(&stored.value(), &input, &plan);
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    shared.store.patch(
        &rayclusters_gvr(),
        Some(namespace),
        cluster,
        &PatchKind::Json,
        &Value::Array(ops),
        None,
    )?;
    let events: Vec<ScaleEvent> = plan
        .changes(&input)
        .map(|d| ScaleEvent {
            at: now,
            namespace: namespace.to_string(),
            cluster: cluster.to_string(),
            group: d.name.clone(),
            replicas_before: input
                .groups
                .iter()
                .find(|g| g.name == d.name)
                .and_then(|g| g.replicas.replicas),
            replicas: d.replicas,
            workers_to_delete: d.workers_to_delete.clone(),
        })
        .collect();
    for e in &events {
        tracing::info!(
            namespace,
            cluster,
            group = %e.group,
            replicas_before = ?e.replicas_before,
            replicas = ?e.replicas,
            workers_to_delete = ?e.workers_to_delete,
            "hollow autoscaler: scale request"
        );
    }
    Ok(events)
}

/// The autoscaler loop of a [`crate::HollowRay`]: one iteration per live head every interval, until the
/// manager is dropped.
pub(crate) async fn run(shared: Weak<Shared>, log: Arc<ScaleLog>, options: HollowAutoscalerOptions) {
    let mut states: HashMap<(String, String), ClusterState> = HashMap::new();
    let mut ticker = tokio::time::interval(options.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else { return };
        let clusters = shared.live_clusters();
        states.retain(|k, _| clusters.contains(k));
        for key in clusters {
            let now = options.clock.now();
            let state = states.entry(key.clone()).or_default();
            match iterate(&shared, &key.0, &key.1, now, state) {
                Ok(events) => events.into_iter().for_each(|e| log.push(e)),
                Err(e) => {
                    tracing::warn!(namespace = %key.0, cluster = %key.1, error = %e, "hollow autoscaler iteration failed")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ray_autoscale::planner::ResourceSet;
    use ray_autoscale::planner::resources::CPU;

    fn cluster_value(replicas: Option<i32>, scale_strategy: bool) -> Value {
        let mut group = json!({
            "groupName": "small-group", "minReplicas": 0, "maxReplicas": 10, "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "ray",
                "resources": {"limits": {"cpu": "1"}}}]}}
        });
        if let Some(r) = replicas {
            group["replicas"] = json!(r);
        }
        if scale_strategy {
            group["scaleStrategy"] = json!({"workersToDelete": []});
        }
        json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"}, "spec": {
            "headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "ray"}]}}},
            "workerGroupSpecs": [{"groupName": "other", "replicas": 0, "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}}}, group]}})
    }

    fn plan_for(value: &Value, pods: Vec<WorkerPod>, demands: Vec<ResourceSet>, now: u64) -> (PlannerInput, Plan) {
        let rc: RayCluster = serde_json::from_value(value.clone()).unwrap();
        let by_group = BTreeMap::from([("small-group".to_string(), pods)]);
        let input = planner_input(
            &rc.spec,
            Duration::from_secs(now),
            by_group,
            ResourceSet::new(),
            demands,
        )
        .unwrap();
        let plan = plan(&input);
        (input, plan)
    }

    #[test]
    fn scale_up_replaces_replicas_of_the_right_group() {
        let value = cluster_value(Some(0), true);
        let (input, plan) = plan_for(&value, vec![], vec![ResourceSet::new().with(CPU, 1.0)], 0);
        let ops = scale_patch(&value, &input, &plan);
        assert_eq!(
            ops,
            vec![json!({"op": "replace", "path": "/spec/workerGroupSpecs/1/replicas", "value": 1})]
        );
        // Applying the patch and planning again: nothing more to write.
        let mut patched = value.clone();
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
        json_patch::patch(&mut patched, &patch).unwrap();
        let (input, plan) = plan_for(&patched, vec![], vec![ResourceSet::new().with(CPU, 1.0)], 1);
        assert!(scale_patch(&patched, &input, &plan).is_empty());
    }

    #[test]
    fn scale_down_names_idle_workers_and_adds_missing_fields() {
        let value = cluster_value(Some(2), false);
        let pods = vec![
            WorkerPod::idle("w-a", Duration::from_secs(0)),
            WorkerPod::busy("w-b", ResourceSet::new().with(CPU, 1.0)),
        ];
        // Default idle timeout 60 s: at 60 s nothing, at 61 s w-a goes.
        let (input, plan) = plan_for(&value, pods.clone(), vec![], 60);
        assert!(scale_patch(&value, &input, &plan).is_empty());
        let (input, plan) = plan_for(&value, pods, vec![], 61);
        let ops = scale_patch(&value, &input, &plan);
        assert_eq!(
            ops,
            vec![
                json!({"op": "replace", "path": "/spec/workerGroupSpecs/1/replicas", "value": 1}),
                json!({"op": "add", "path": "/spec/workerGroupSpecs/1/scaleStrategy",
                    "value": {"workersToDelete": ["w-a"]}}),
            ]
        );
        let mut patched = value.clone();
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).unwrap();
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(
            patched["spec"]["workerGroupSpecs"][1]["scaleStrategy"]["workersToDelete"],
            json!(["w-a"])
        );
    }

    /// The loop against a live simulator without an operator: only the cluster whose head pod has the sidecar
    /// is scaled, and a worker goes only once idle for longer than `idleTimeoutSeconds` on the injected clock.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn loop_scales_only_sidecar_clusters_on_the_injected_clock() {
        use crate::{ActorRequest, HollowRay, HollowRayOptions};
        use std::sync::atomic::{AtomicU64, Ordering};

        let crd = kuberay_reference::crd_path("ray.io_rayclusters.yaml");
        let sim = kube_sim::SimServer::start(kube_sim::SimConfig {
            crd_files: vec![crd],
            ..kube_sim::SimConfig::default()
        })
        .await
        .unwrap();
        let now_ms = Arc::new(AtomicU64::new(100_000));
        let clock = {
            let now_ms = now_ms.clone();
            AutoscalerClock::new(move || Duration::from_millis(now_ms.load(Ordering::SeqCst)))
        };
        let ray = HollowRay::attach(
            &sim,
            HollowRayOptions {
                autoscaler: HollowAutoscalerOptions {
                    interval: Duration::from_millis(20),
                    clock,
                    ..HollowAutoscalerOptions::default()
                },
                ..HollowRayOptions::default()
            },
        );
        let store = sim.store().clone();
        let ns = Some("default");
        let make = |name: &str, sidecar: bool| {
            let mut rc = cluster_value(Some(0), false);
            rc["metadata"]["name"] = json!(name);
            rc["spec"]["autoscalerOptions"] = json!({"idleTimeoutSeconds": 10});
            store.create(&rayclusters_gvr(), ns, rc).unwrap();
            let mut containers = vec![json!({"name": "ray-head", "image": "ray"})];
            if sidecar {
                containers.push(json!({"name": AUTOSCALER_CONTAINER_NAME, "image": "ray"}));
            }
            let labels =
                json!({CLUSTER_LABEL: name, NODE_TYPE_LABEL: HEAD_NODE_TYPE, RAY_NODE_GROUP_LABEL: "headgroup"});
            let pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{name}-head"), "labels": labels},
                "spec": {"containers": containers}});
            store.create(&Gvr::pods(), ns, pod).unwrap();
        };
        make("auto", true);
        make("plain", false);
        let cpu1 = || ActorRequest {
            name: Some("a1".into()),
            resources: Some(BTreeMap::from([(CPU.to_string(), 1.0)])),
        };
        let wait = Duration::from_secs(10);
        let auto = ray.wait_for_head("default", "auto", wait).await.unwrap();
        let plain = ray.wait_for_head("default", "plain", wait).await.unwrap();
        auto.create_actor(cpu1()).unwrap();
        plain.create_actor(cpu1()).unwrap();

        let group = |name: &str| {
            store.get(&rayclusters_gvr(), ns, name).unwrap().value()["spec"]["workerGroupSpecs"][1].clone()
        };
        let until = |what: &str, f: &dyn Fn() -> bool| {
            let deadline = std::time::Instant::now() + wait;
            while !f() {
                assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        until("auto scaled to 1", &|| group("auto")["replicas"] == 1);
        // Many iterations later the cluster without the sidecar is untouched.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(group("plain")["replicas"], 0);
        assert!(ray.scale_events("default", "plain").is_empty());

        // The worker the operator would create joins; the actor runs there; then it ends at t = 100 s.
        let labels =
            json!({CLUSTER_LABEL: "auto", NODE_TYPE_LABEL: WORKER_NODE_TYPE, RAY_NODE_GROUP_LABEL: "small-group"});
        let worker = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "auto-w1", "labels": labels},
            "spec": {"containers": [{"name": "ray-worker", "image": "ray"}]}});
        store.create(&Gvr::pods(), ns, worker).unwrap();
        until("a1 placed", &|| {
            auto.actor("a1").is_some_and(|a| a.node.as_deref() == Some("auto-w1"))
        });
        auto.kill_actor("a1").unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Idle for exactly the timeout: kept.
        now_ms.store(110_000, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(group("auto")["replicas"], 1);
        // Longer than the timeout: named in workersToDelete, replicas down.
        now_ms.store(110_001, Ordering::SeqCst);
        until("auto-w1 listed", &|| {
            group("auto")["scaleStrategy"]["workersToDelete"] == json!(["auto-w1"])
        });
        assert_eq!(group("auto")["replicas"], 0);
        // Gone: the list is cleared.
        store
            .delete(&Gvr::pods(), ns, "auto-w1", &kube_sim::store::DeleteOptions::default())
            .unwrap();
        until("list cleared", &|| {
            group("auto")["scaleStrategy"]["workersToDelete"] == json!([])
        });
        // The scale event is recorded after its patch lands, so it can trail what the store shows.
        until("three scale events", &|| ray.scale_events("default", "auto").len() >= 3);
        let events: Vec<_> = ray
            .scale_events("default", "auto")
            .into_iter()
            .map(|e| (e.at, e.replicas, e.workers_to_delete))
            .collect();
        assert_eq!(events[0].1, Some(1));
        assert_eq!(
            events[1],
            (Duration::from_millis(110_001), Some(0), vec!["auto-w1".to_string()])
        );
        assert_eq!(events[2].2, Vec::<String>::new());
    }

    #[test]
    fn sidecar_detection_and_clock() {
        assert!(has_autoscaler_sidecar(
            &json!({"spec": {"containers": [{"name": "ray-head"}, {"name": AUTOSCALER_CONTAINER_NAME}]}})
        ));
        assert!(!has_autoscaler_sidecar(
            &json!({"spec": {"containers": [{"name": "ray-head"}]}})
        ));
        let clock = AutoscalerClock::new(|| Duration::from_secs(7));
        assert_eq!(clock.now(), Duration::from_secs(7));
        assert_eq!(clock, clock.clone());
        assert_ne!(clock, AutoscalerClock::new(|| Duration::from_secs(7)));
    }
}
