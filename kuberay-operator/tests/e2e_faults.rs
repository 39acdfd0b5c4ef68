//! Fault tolerance of the RayCluster controller, end to end: the real operator binary against an in-process
//! kube-sim that injects API errors and drops and expires watches (`converges_exactly_under_api_faults`), an
//! operator SIGKILLed in the middle of a scale-up and restarted (`kill_9_mid_scale_up_converges_exactly`), and
//! two leader-elected operators of which the leader is SIGKILLed (`only_the_leader_writes_and_a_follower_takes_over`).
//!
//! A [`PodSampler`] follows every pod write through the simulator's store (no HTTP, so no faults) and records
//! each moment a cluster, its head or its worker group has more live pods than desired; every test asserts that
//! never happened. The tests set up clusters through the store too, so only the operator's requests see faults.
//! Figures are printed with `eprintln!` (run with `--nocapture` to see them).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube_sim::auth::GROUP_MASTERS;
use kube_sim::{FaultConfig, Gvr, ListOptions, PatchKind, SimConfig, SimHandle, Store, WatchEvent};
use ray_api::ClusterState;
use ray_api::constants::{NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_NODE_GROUP_LABEL, RAY_NODE_TYPE_LABEL};
use ray_reconcile::raycluster::controller::WATCH_LIST_LOG;
use serde_json::{Value, json};

mod common;
use common::{Operator, free_port, http_get, resident_memory_bytes, temp_dir};

const NS: &str = "default";
/// The one worker group of every test cluster.
const GROUP: &str = "small-group";
/// Key of the head in the sampler's per-group counts (no worker group can be named like a node type label).
const HEAD_KEY: &str = NODE_TYPE_HEAD;
/// Upper bound of the worker group (scale-ups stay below it).
const MAX_WORKERS: i64 = 50;
/// The fault mix of the first test: 5 % 500s, 2 % conflicts on writes, every watch severed every 2 s, the next
/// watch answered with an in-stream 410, a fixed seed.
const FAULTS: &str = "error=5%:500,conflict=2%,watch-drop=2s,expire-watch,seed=7";
/// The operator's leader-election Lease (`run::LEADER_ELECTION_ID`) and its duration (`with_duration(15)`).
const LEASE: &str = "ray-operator-leader";
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long any one convergence may take on a loaded two-core machine.
const CONVERGE: Duration = Duration::from_secs(100);
const POLL: Duration = Duration::from_millis(100);
/// The RayCluster controller's watches list once each at startup (RayClusters, Ray pods, head services);
/// every further [`WATCH_LIST_LOG`] line is a relist.
const INITIAL_WATCH_LISTS: usize = 3;

/// The operators of the tests in this file run one at a time: each starts 1–2 operator processes and hundreds
/// of hollow pods, which side by side on two cores would only slow each other past their timeouts.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn rayclusters() -> Gvr {
    Gvr::new("ray.io", "v1", "rayclusters")
}

fn leases() -> Gvr {
    Gvr::new("coordination.k8s.io", "v1", "leases")
}

/// A Ray container with small requests, so hundreds of pods fit on the simulator's default nodes.
fn container(name: &str) -> Value {
    let small = json!({"cpu": "100m", "memory": "128Mi"});
    json!({"name": name, "image": "rayproject/ray:2.52.0", "resources": {"requests": small, "limits": small}})
}

fn worker_groups(workers: i64) -> Value {
    json!([{
        "groupName": GROUP,
        "replicas": workers,
        "minReplicas": 0,
        "maxReplicas": MAX_WORKERS,
        "rayStartParams": {},
        "template": {"spec": {"containers": [container("ray-worker")]}},
    }])
}

fn raycluster(name: &str, workers: i64) -> Value {
    json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container("ray-head")]}}},
            "workerGroupSpecs": worker_groups(workers),
        },
    })
}

/// Creates a cluster through the store (never faulted).
fn create_cluster(store: &Store, name: &str, workers: i64) {
    store
        .create(&rayclusters(), Some(NS), raycluster(name, workers))
        .unwrap();
}

/// Sets the worker group's replicas through the store (never faulted).
fn scale_cluster(store: &Store, name: &str, workers: i64) {
    let patch = json!({"spec": {"workerGroupSpecs": worker_groups(workers)}});
    store
        .patch(&rayclusters(), Some(NS), name, &PatchKind::Merge, &patch, None)
        .unwrap();
}

fn is_live(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
}

fn is_running(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
}

/// The sampler's group key of a pod: [`HEAD_KEY`] for heads, else its `ray.io/group`.
fn group_key(pod: &Value) -> String {
    let labels = &pod["metadata"]["labels"];
    if labels[RAY_NODE_TYPE_LABEL] == NODE_TYPE_HEAD {
        HEAD_KEY.to_owned()
    } else {
        labels[RAY_NODE_GROUP_LABEL].as_str().unwrap_or_default().to_owned()
    }
}

fn cluster_pods(store: &Store, cluster: &str) -> Vec<Value> {
    let opts = ListOptions::labels(&format!("{RAY_CLUSTER_LABEL}={cluster}")).unwrap();
    store
        .list(&kube_sim::Gvr::pods(), Some(NS), &opts)
        .unwrap()
        .items
        .iter()
        .map(|o| o.value())
        .collect()
}

/// Live (not terminating) Ray pods in the namespace.
fn live_ray_pods(store: &Store) -> usize {
    let opts = ListOptions::labels(RAY_CLUSTER_LABEL).unwrap();
    store
        .list(&kube_sim::Gvr::pods(), Some(NS), &opts)
        .unwrap()
        .items
        .iter()
        .filter(|o| is_live(&o.value()))
        .count()
}

/// Exactly one head and `workers` workers, all Running, none terminating, and status `ready` with `workers`
/// desired and ready workers. `Err` says what is still missing.
fn converged(store: &Store, cluster: &str, workers: i64) -> Result<(), String> {
    let pods = cluster_pods(store, cluster);
    let live: Vec<&Value> = pods.iter().filter(|p| is_live(p)).collect();
    let running = |key: &str| live.iter().filter(|p| group_key(p) == key && is_running(p)).count();
    let (heads, running_workers) = (running(HEAD_KEY), running(GROUP));
    let expected = usize::try_from(workers).unwrap();
    if live.len() != expected + 1 || heads != 1 || running_workers != expected {
        return Err(format!(
            "{cluster}: {} live pods, {heads} running heads, {running_workers} running workers",
            live.len()
        ));
    }
    let status = store.get(&rayclusters(), Some(NS), cluster).unwrap().value()["status"].clone();
    let ready = status["state"] == ClusterState::Ready.as_str()
        && status["desiredWorkerReplicas"] == workers
        && status["readyWorkerReplicas"] == workers;
    if ready {
        Ok(())
    } else {
        Err(format!("{cluster}: status {status}"))
    }
}

/// Waits until every `(cluster, workers)` has converged; returns how long that took.
async fn wait_converged(store: &Store, clusters: &[(String, i64)], timeout: Duration) -> Duration {
    let started = Instant::now();
    let mut last = String::new();
    while started.elapsed() < timeout {
        match clusters
            .iter()
            .map(|(name, workers)| converged(store, name, *workers))
            .collect::<Result<Vec<()>, String>>()
        {
            Ok(_) => return started.elapsed(),
            Err(e) => last = e,
        }
        tokio::time::sleep(POLL).await;
    }
    panic!("clusters did not converge within {timeout:?}; first lagging: {last}");
}

/// What the sampler saw.
#[derive(Clone, Debug, Default)]
struct Overshoot {
    /// Largest (live pods − desired pods) of any one cluster at any moment (0 when never above).
    max_per_cluster: i64,
    /// Largest sum over all clusters of their live pods above desired at any moment.
    max_total: i64,
    /// Every moment the head or a worker group had more live pods than desired.
    violations: Vec<String>,
    /// Pod watch events seen.
    events: u64,
    /// Times the sampler's own store watch lagged and was restarted.
    restarts: u64,
}

/// Follows every pod write through a store watch and checks live pods against the desired counts.
struct PodSampler {
    /// Desired workers per cluster (the head is always 1); clusters not in the map are not checked.
    desired: Arc<Mutex<HashMap<String, i64>>>,
    seen: Arc<Mutex<Overshoot>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PodSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PodSampler {
    fn start(store: Store) -> Self {
        let desired = Arc::new(Mutex::new(HashMap::new()));
        let seen = Arc::new(Mutex::new(Overshoot::default()));
        let (d, s) = (Arc::clone(&desired), Arc::clone(&seen));
        let task = tokio::spawn(async move {
            loop {
                // Starting from "now" replays the current pods as ADDED events; counts only grow during the
                // replay, so it cannot report a false overshoot.
                let mut watch = store
                    .watch(&kube_sim::Gvr::pods(), Some(NS), Default::default())
                    .unwrap();
                // Live Ray pods: name -> (cluster, group key).
                let mut live: HashMap<String, (String, String)> = HashMap::new();
                while let Some(event) = watch.next().await {
                    let (pod, deleted) = match &event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
                        WatchEvent::Deleted(o) => (o, true),
                        _ => continue,
                    };
                    let Some(cluster) = pod.label(RAY_CLUSTER_LABEL) else {
                        continue;
                    };
                    if deleted || !is_live(&pod.value()) {
                        live.remove(pod.name());
                    } else {
                        live.insert(pod.name().to_owned(), (cluster.to_owned(), group_key(&pod.value())));
                    }
                    Self::check(&live, cluster, &d.lock().unwrap(), &mut s.lock().unwrap());
                }
                s.lock().unwrap().restarts += 1;
            }
        });
        Self { desired, seen, task }
    }

    fn check(
        live: &HashMap<String, (String, String)>,
        touched: &str,
        desired: &HashMap<String, i64>,
        seen: &mut Overshoot,
    ) {
        seen.events += 1;
        let mut per_group: BTreeMap<(&str, &str), i64> = BTreeMap::new();
        for (cluster, group) in live.values() {
            *per_group.entry((cluster, group)).or_default() += 1;
        }
        let mut per_cluster: BTreeMap<&str, i64> = BTreeMap::new();
        for ((cluster, group), n) in &per_group {
            let Some(&workers) = desired.get(*cluster) else {
                continue;
            };
            let want = if *group == HEAD_KEY { 1 } else { workers };
            *per_cluster.entry(cluster).or_insert(-1 - workers) += n;
            if *n > want && *cluster == touched && seen.violations.len() < 20 {
                seen.violations.push(format!(
                    "{cluster}/{group}: {n} live pods, {want} desired (event {})",
                    seen.events
                ));
            }
        }
        let over: Vec<i64> = per_cluster.values().map(|v| (*v).max(0)).collect();
        seen.max_per_cluster = seen.max_per_cluster.max(over.iter().copied().max().unwrap_or(0));
        seen.max_total = seen.max_total.max(over.iter().sum());
    }

    fn set_desired(&self, cluster: &str, workers: i64) {
        self.desired.lock().unwrap().insert(cluster.to_owned(), workers);
    }

    fn seen(&self) -> Overshoot {
        self.seen.lock().unwrap().clone()
    }

    fn assert_never_over(&self) -> Overshoot {
        let seen = self.seen();
        assert!(seen.events > 0, "the sampler saw no pod events");
        assert!(
            seen.violations.is_empty(),
            "pods beyond desired: {:#?}",
            seen.violations
        );
        assert_eq!(seen.max_per_cluster, 0, "{seen:?}");
        seen
    }
}

/// `process_resident_memory_bytes` from the operator's `/metrics`.
async fn operator_rss(metrics_port: u16) -> f64 {
    let (code, metrics) = http_get(metrics_port, "/metrics").await;
    assert_eq!(code, 200, "{metrics}");
    resident_memory_bytes(&metrics)
}

/// The current holder of the leader-election Lease, if any.
fn lease_holder(store: &Store) -> Option<String> {
    let lease = store.get(&leases(), Some(NS), LEASE).ok()?;
    lease.value()["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
}

/// A timestamp of the leader-election Lease's spec (`renewTime`, `acquireTime`).
fn lease_time(store: &Store, field: &str) -> k8s_openapi::jiff::Timestamp {
    let lease = store.get(&leases(), Some(NS), LEASE).unwrap();
    lease.value()["spec"][field]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("Lease spec.{field}: {}", lease.value()))
}

async fn wait_for_holder(store: &Store, other_than: Option<&str>, timeout: Duration) -> String {
    common::wait_for("a leader-election Lease holder", timeout, POLL, || async {
        lease_holder(store).filter(|h| Some(h.as_str()) != other_than)
    })
    .await
}

/// Log lines of the operator announcing a watch list (the initial ones and every relist).
fn watch_lists(log: &Path) -> usize {
    let marker = format!("\"message\":\"{WATCH_LIST_LOG}\"");
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&marker))
        .count()
}

/// Writes so far by a client (its kubeconfig identity), leaving out the leader-election Lease.
fn writes_of(sim: &SimHandle, client: &str) -> (u64, u64) {
    let mut other = 0;
    let mut lease = 0;
    for ((c, resource), n) in sim.writes_by_client() {
        if c == client {
            if resource == "leases" {
                lease += n;
            } else {
                other += n;
            }
        }
    }
    (other, lease)
}

fn pod_writes_of(sim: &SimHandle, client: &str) -> u64 {
    sim.writes_by_client()
        .get(&(client.to_owned(), "pods".to_owned()))
        .copied()
        .unwrap_or(0)
}

/// A simulator with our CRDs and, under `dir`, a kubeconfig per client: each its own all-powerful identity
/// named after the client, which is how the simulator tells their writes apart.
async fn start_sim(dir: &Path, clients: &[&str]) -> SimHandle {
    let sim = common::start_sim(SimConfig::default()).await;
    for client in clients {
        std::fs::write(
            dir.join(format!("kubeconfig-{client}")),
            sim.kubeconfig_for(client, &[GROUP_MASTERS]),
        )
        .unwrap();
    }
    sim
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_exactly_under_api_faults() {
    const CLUSTERS: usize = 20;
    const WORKERS: i64 = 10;
    let _serial = SERIAL.lock().await;
    let dir = temp_dir("faults");
    let sim = start_sim(&dir, &["operator"]).await;
    let store = sim.store().clone();
    let metrics_port = free_port();
    let operator = Operator::start(
        &dir,
        &dir.join("kubeconfig-operator"),
        NS,
        metrics_port,
        free_port(),
        &["--enable-metrics", "--reconcile-concurrency", "5"],
    );
    // Faults start once the operator leads: the Lease is created at startup and a failure there ends the
    // process (that path is not what this test is about).
    wait_for_holder(&store, None, Duration::from_secs(30)).await;
    sim.set_faults(FaultConfig::parse(FAULTS).unwrap());

    let sampler = PodSampler::start(store.clone());
    let clusters: Vec<(String, i64)> = (0..CLUSTERS).map(|i| (format!("faults-{i:02}"), WORKERS)).collect();
    for (name, workers) in &clusters {
        sampler.set_desired(name, *workers);
    }
    let started = Instant::now();
    for (name, workers) in &clusters {
        create_cluster(&store, name, *workers);
    }
    // Mid-way, every open watch gets an in-stream 410 and must relist.
    let total = CLUSTERS * (usize::try_from(WORKERS).unwrap() + 1);
    common::wait_for("a quarter of the pods", CONVERGE, Duration::from_millis(20), || async {
        (live_ray_pods(&store) >= total / 4).then_some(())
    })
    .await;
    // A watch that is between a drop and its re-watch (possibly in error backoff) misses the 410, so repeat
    // until at least one of the controller's watches relisted.
    common::wait_for(
        "a relist after in-stream 410s",
        CONVERGE,
        Duration::from_millis(300),
        || {
            sim.expire_watches();
            let relisted = watch_lists(&operator.log) > INITIAL_WATCH_LISTS;
            async move { relisted.then_some(()) }
        },
    )
    .await;
    wait_converged(&store, &clusters, CONVERGE).await;
    let converge = started.elapsed();
    // A late duplicate (a stale cache acting after convergence) would show within a few reconciles.
    tokio::time::sleep(Duration::from_secs(3)).await;
    wait_converged(&store, &clusters, Duration::from_secs(1)).await;
    let seen = sampler.assert_never_over();

    let injected = sim.injected_faults();
    let (errors, conflicts) = (
        injected.get(&500).copied().unwrap_or(0),
        injected.get(&409).copied().unwrap_or(0),
    );
    assert!(errors > 0 && conflicts > 0, "faults did not fire: {injected:?}");
    let expired = sim.expired_watches();
    assert!(expired >= 1, "no watch was expired");
    let lists = watch_lists(&operator.log);
    let pod_lists = sim
        .request_log()
        .iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/pods") && !r.query.contains("watch=true"))
        .count();
    let rss = operator_rss(metrics_port).await;
    eprintln!("faults: {FAULTS}; {CLUSTERS} RayClusters x (1 head + {WORKERS} workers)");
    eprintln!("faults: converged in {converge:.2?}");
    eprintln!("faults: injected 500s {errors}, 409s {conflicts}; in-stream 410s sent {expired}");
    eprintln!(
        "faults: operator watch lists {lists} ({INITIAL_WATCH_LISTS} initial, {} relists); pod list requests {pod_lists}",
        lists - INITIAL_WATCH_LISTS
    );
    eprintln!(
        "faults: max pods over desired: per cluster {}, summed {}; pod events sampled {}",
        seen.max_per_cluster, seen.max_total, seen.events
    );
    eprintln!("faults: operator RSS {rss} bytes ({:.1} MiB)", rss / 1_048_576.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_scale_up_converges_exactly() {
    const CLUSTERS: usize = 4;
    const FROM: i64 = 2;
    const TO: i64 = 30;
    /// Kill once this many of the new pods exist.
    const KILL_AFTER_NEW_PODS: usize = 8;
    let _serial = SERIAL.lock().await;
    let dir = temp_dir("kill9");
    let sim = start_sim(&dir, &["operator"]).await;
    let store = sim.store().clone();
    let kubeconfig = dir.join("kubeconfig-operator");
    let first_dir = dir.join("first");
    std::fs::create_dir_all(&first_dir).unwrap();
    let operator = Operator::start(&first_dir, &kubeconfig, NS, free_port(), free_port(), &[]);

    let sampler = PodSampler::start(store.clone());
    let mut clusters: Vec<(String, i64)> = (0..CLUSTERS).map(|i| (format!("kill9-{i}"), FROM)).collect();
    for (name, workers) in &clusters {
        sampler.set_desired(name, *workers);
        create_cluster(&store, name, *workers);
    }
    wait_converged(&store, &clusters, CONVERGE).await;
    let before = live_ray_pods(&store);

    // Slow every operator request a little so the kill lands while pods are still being created.
    sim.set_faults(FaultConfig::parse("latency=50ms").unwrap());
    for (name, workers) in &mut clusters {
        *workers = TO;
        sampler.set_desired(name, TO);
        scale_cluster(&store, name, TO);
    }
    common::wait_for(
        "the scale-up under way",
        CONVERGE,
        Duration::from_millis(10),
        || async { (live_ray_pods(&store) >= before + KILL_AFTER_NEW_PODS).then_some(()) },
    )
    .await;
    drop(operator); // SIGKILL
    let killed = Instant::now();
    let at_kill = live_ray_pods(&store);
    let target = CLUSTERS * (usize::try_from(TO).unwrap() + 1);
    assert!(
        at_kill < target,
        "the scale-up finished before the kill ({at_kill} pods)"
    );
    sim.set_faults(FaultConfig::default());
    // Pods the dead operator had in flight still land (the server finishes requests it received).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after_kill = live_ray_pods(&store);

    let second_dir = dir.join("second");
    std::fs::create_dir_all(&second_dir).unwrap();
    let _restarted = Operator::start(&second_dir, &kubeconfig, NS, free_port(), free_port(), &[]);
    wait_converged(&store, &clusters, CONVERGE).await;
    let converge = killed.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    wait_converged(&store, &clusters, Duration::from_secs(1)).await;
    let seen = sampler.assert_never_over();
    eprintln!(
        "kill-9: {CLUSTERS} clusters scaled {FROM} -> {TO} workers; killed at {at_kill}/{target} pods \
         ({after_kill} half a second later)"
    );
    eprintln!(
        "kill-9: converged {converge:.2?} after the kill (includes waiting out the dead leader's {LEASE_DURATION:?} Lease)"
    );
    eprintln!(
        "kill-9: max pods over desired: per cluster {}, summed {}; pod events sampled {}",
        seen.max_per_cluster, seen.max_total, seen.events
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_writes_and_a_follower_takes_over() {
    let _serial = SERIAL.lock().await;
    let dir = temp_dir("leader");
    let tokens = ["operator-a", "operator-b"];
    let sim = start_sim(&dir, &tokens).await;
    let store = sim.store().clone();
    let mut operators: HashMap<&str, Operator> = HashMap::new();
    for token in tokens {
        let own_dir = dir.join(token);
        std::fs::create_dir_all(&own_dir).unwrap();
        let kubeconfig = dir.join(format!("kubeconfig-{token}"));
        let flags = ["--enable-leader-election"];
        let op = Operator::start(&own_dir, &kubeconfig, NS, free_port(), free_port(), &flags);
        operators.insert(token, op);
    }
    let sampler = PodSampler::start(store.clone());
    let first_holder = wait_for_holder(&store, None, Duration::from_secs(30)).await;
    sampler.set_desired("leader-1", 2);
    create_cluster(&store, "leader-1", 2);
    wait_converged(&store, &[("leader-1".to_owned(), 2)], CONVERGE).await;

    let writes: HashMap<&str, (u64, u64)> = tokens.iter().map(|t| (*t, writes_of(&sim, t))).collect();
    let leaders: Vec<&str> = tokens.iter().copied().filter(|t| writes[t].0 > 0).collect();
    assert_eq!(leaders.len(), 1, "exactly one operator writes: {writes:?}");
    let (leader, follower) = if leaders[0] == tokens[0] {
        (tokens[0], tokens[1])
    } else {
        (tokens[1], tokens[0])
    };
    assert!(
        pod_writes_of(&sim, leader) >= 3,
        "the leader created the pods: {writes:?}"
    );

    // SIGKILL the leader; the follower takes the Lease once it expires and reconciles a new cluster.
    drop(operators.remove(leader));
    let killed = Instant::now();
    let last_renewal = lease_time(&store, "renewTime");
    let dead_writes = writes_of(&sim, leader);
    sampler.set_desired("leader-2", 2);
    create_cluster(&store, "leader-2", 2);
    let new_holder = wait_for_holder(&store, Some(&first_holder), LEASE_DURATION * 2).await;
    let takeover = killed.elapsed();
    // The Lease is free `LEASE_DURATION` after the dead leader's last renewal; the follower sleeps until then
    // and takes it after a random pause of up to 1 s.
    let acquired_after_renewal = lease_time(&store, "acquireTime").duration_since(last_renewal);
    wait_converged(&store, &[("leader-2".to_owned(), 2)], CONVERGE).await;
    let converge = killed.elapsed();
    wait_converged(&store, &[("leader-1".to_owned(), 2)], Duration::from_secs(1)).await;
    let seen = sampler.assert_never_over();

    assert_eq!(
        writes_of(&sim, leader),
        dead_writes,
        "the dead leader wrote after SIGKILL"
    );
    assert!(pod_writes_of(&sim, follower) >= 3, "the new leader created the pods");
    assert!(
        acquired_after_renewal.as_secs_f64() <= LEASE_DURATION.as_secs_f64() + 3.0,
        "the Lease was taken {acquired_after_renewal:?} after the last renewal (lease {LEASE_DURATION:?})"
    );
    assert!(
        takeover <= LEASE_DURATION + Duration::from_secs(5),
        "takeover took {takeover:?} after SIGKILL (lease {LEASE_DURATION:?})"
    );
    let after = writes_of(&sim, follower);
    eprintln!(
        "leader: before the kill, writes (non-Lease, Lease) {leader}: {:?}, {follower}: {:?}",
        writes[leader], writes[follower]
    );
    eprintln!(
        "leader: {first_holder} -> {new_holder} {takeover:.2?} after SIGKILL, {:.2}s after the dead leader's last \
         renewal (lease {LEASE_DURATION:?})",
        acquired_after_renewal.as_secs_f64()
    );
    eprintln!("leader: new cluster converged {converge:.2?} after the kill; new leader's writes now {after:?}");
    eprintln!("leader: max pods over desired: per cluster {}", seen.max_per_cluster);
}

/// The sampler's arithmetic, so the e2e assertions above can fail: one worker beyond desired is flagged.
#[test]
fn sampler_flags_pods_beyond_desired() {
    let desired = HashMap::from([("c".to_owned(), 2), ("d".to_owned(), 0)]);
    let mut live: HashMap<String, (String, String)> = HashMap::new();
    let mut add = |pod: &str, cluster: &str, group: &str| {
        live.insert(pod.to_owned(), (cluster.to_owned(), group.to_owned()));
    };
    add("c-head", "c", HEAD_KEY);
    add("c-w1", "c", GROUP);
    add("c-w2", "c", GROUP);
    add("d-head", "d", HEAD_KEY);
    add("untracked-head", "untracked", HEAD_KEY);
    let mut seen = Overshoot::default();
    PodSampler::check(&live, "c", &desired, &mut seen);
    assert_eq!((seen.max_per_cluster, seen.max_total), (0, 0));
    assert!(seen.violations.is_empty());

    live.insert("c-w3".to_owned(), ("c".to_owned(), GROUP.to_owned()));
    live.insert("d-head-2".to_owned(), ("d".to_owned(), HEAD_KEY.to_owned()));
    PodSampler::check(&live, "c", &desired, &mut seen);
    assert_eq!((seen.max_per_cluster, seen.max_total), (1, 2));
    assert_eq!(seen.violations.len(), 1, "{:?}", seen.violations);
    assert!(seen.violations[0].starts_with("c/small-group: 3 live pods, 2 desired"));
}
