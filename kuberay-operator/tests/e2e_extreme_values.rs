//! End to end: values the CRD schema allows but no cluster can run. Next to one ordinary sample cluster, kube-sim
//! stores a RayCluster whose worker group asks for 2,147,483,647 replicas (maxReplicas left to its default of the
//! same), one with 5,000 worker groups, one whose head `rayStartParams` carries a 1 MiB value, one whose name is
//! 63 characters long (KubeRay allows 53) and one with a 53-character name and a 63-character group name. For a
//! bounded window the test samples the operator's resident memory and the API requests it sends, and checks that
//! both stay bounded, that the ordinary cluster stays ready, and that each extreme resource is either reconciled
//! as KubeRay would (with bounded progress) or reported by an Event naming the field. See
//! `docs/operator.md#extreme-values` for the figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, PostParams};
use kube_sim::{AgentConfig, SimConfig};
use ray_api::RayCluster;
use serde_json::{Value, json};

mod common;
use common::{Operator, SimEnv, free_port, http_get_response, resident_memory_bytes};
use ray_reconcile::config::DEFAULT_MAX_UNSCHEDULED_WORKERS;
use ray_reconcile::raycluster::plan::MAX_WORKER_CREATES_PER_PASS;

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(90);
/// How long the extreme resources are watched after they are stored.
const WINDOW: Duration = Duration::from_secs(25);
/// Seconds at the start of the window left out of the request-rate bound (the initial burst of creates).
const WARM_UP_SECONDS: usize = 5;
/// Hollow nodes and pods per node: 300 pods fit, the rest stay Pending like on a full real cluster.
const NODES: usize = 2;
const PODS_PER_NODE: u64 = 150;
const MANY_GROUPS: usize = 5_000;
const ONE_MIB: usize = 1 << 20;
/// The operator's resident memory may not exceed this while the extreme resources exist.
const RSS_BOUND_BYTES: f64 = 512.0 * 1024.0 * 1024.0;
/// Mean API requests per second the operator may send after the warm-up. Nearly all of them are pod creates
/// for the two clusters that still miss workers (each pass creates at most 200) until each has 1,000 pods
/// waiting for a node (`--max-unscheduled-worker-pods`), then hardly any.
const REQUEST_RATE_BOUND: f64 = 400.0;
/// Mean requests per second over the whole window other than pod creates: no hot loop of reads, status
/// writes, retries or events.
const OTHER_REQUEST_RATE_BOUND: f64 = 10.0;

const HUGE: &str = "huge-replicas";
const MANY: &str = "many-groups";
const BIG_PARAMS: &str = "big-start-params";

/// A 63-character cluster name: a valid Kubernetes label, over KubeRay's 53-character limit for RayClusters.
fn name_63() -> String {
    format!("long-{}", "n".repeat(58))
}

/// A cluster name at KubeRay's 53-character limit.
fn name_53() -> String {
    format!("edge-{}", "e".repeat(48))
}

/// A group name at the 63-character label limit.
fn group_63() -> String {
    format!("group-{}", "g".repeat(57))
}

fn sample(name: &str) -> Value {
    let mut doc = common::sample_documents("ray-cluster.sample.yaml")
        .into_iter()
        .find(|d| d["kind"] == "RayCluster")
        .unwrap();
    doc["metadata"] = json!({"name": name, "namespace": NS});
    doc
}

fn huge_replicas() -> Value {
    let mut doc = sample(HUGE);
    let group = &mut doc["spec"]["workerGroupSpecs"][0];
    group["replicas"] = json!(i32::MAX);
    group["minReplicas"] = json!(0);
    // The CRD's default for maxReplicas; kube-sim does not apply CRD defaults, so it is written out.
    group["maxReplicas"] = json!(i32::MAX);
    doc
}

fn many_groups() -> Value {
    let mut doc = sample(MANY);
    let groups: Vec<Value> = (0..MANY_GROUPS)
        .map(|i| {
            json!({
                "groupName": format!("g{i}"),
                "replicas": 1, "minReplicas": 0, "maxReplicas": 1,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{
                    "name": "ray-worker", "image": "rayproject/ray:2.52.0",
                    "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}
                }]}}
            })
        })
        .collect();
    doc["spec"]["workerGroupSpecs"] = Value::Array(groups);
    doc
}

fn big_start_params() -> Value {
    let mut doc = sample(BIG_PARAMS);
    doc["spec"]["headGroupSpec"]["rayStartParams"] = json!({"big-value": "x".repeat(ONE_MIB)});
    doc
}

fn long_cluster_name() -> Value {
    sample(&name_63())
}

fn long_group_name() -> Value {
    let mut doc = sample(&name_53());
    doc["spec"]["workerGroupSpecs"][0]["groupName"] = json!(group_63());
    doc
}

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(200), check).await
}

async fn state(client: &Client, name: &str) -> Value {
    let api: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    let cluster = api.get(name).await.unwrap();
    serde_json::to_value(cluster.status).unwrap()["state"].clone()
}

async fn pods_of(client: &Client, cluster: &str) -> Vec<Pod> {
    common::live_cluster_pods(client, NS, cluster).await
}

async fn events(client: &Client) -> Vec<Event> {
    common::namespace_events(client, NS).await
}

fn regarding(event: &Event) -> &str {
    event
        .regarding
        .as_ref()
        .and_then(|r| r.name.as_deref())
        .unwrap_or_default()
}

/// The operator's resident memory, or `None` once its metrics endpoint no longer answers.
async fn rss(metrics_port: u16) -> Option<f64> {
    let response = http_get_response(metrics_port, "/metrics").await.ok()?;
    let body = response.split_once("\r\n\r\n")?.1;
    Some(resident_memory_bytes(body))
}

/// `METHOD resource` of a logged request path (`/api/v1/namespaces/default/pods/x` → `pods`).
fn resource_of(method: &str, path: &str) -> String {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let resource = match parts.iter().position(|p| *p == "namespaces") {
        Some(i) if parts.len() > i + 2 => parts[i + 2],
        _ => parts.get(parts.len().saturating_sub(1)).copied().unwrap_or_default(),
    };
    format!("{method} {resource}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_values_keep_memory_and_request_rate_bounded() {
    let config = SimConfig {
        agents: AgentConfig {
            nodes: NODES,
            node_pods: PODS_PER_NODE,
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    };
    let env = SimEnv::start("extremes", config).await;
    let metrics_port = free_port();
    let _operator = Operator::start(
        &env.dir,
        &env.kubeconfig,
        NS,
        metrics_port,
        free_port(),
        &["--enable-metrics"],
    );
    let clusters: Api<RayCluster> = Api::namespaced(env.client.clone(), NS);
    let create = |doc: Value| {
        let clusters = clusters.clone();
        async move {
            let cluster: RayCluster = serde_json::from_value(doc).unwrap();
            clusters.create(&PostParams::default(), &cluster).await.unwrap();
        }
    };

    // The ordinary cluster first: the baseline memory is that of an operator with one ready cluster.
    create(sample("ordinary")).await;
    wait_for("ordinary: state ready", || async {
        (state(&env.client, "ordinary").await == "ready").then_some(())
    })
    .await;
    let rss_before = rss(metrics_port).await.expect("operator metrics");

    // The small extremes first, the valid one reconciled to ready before the two that keep the controller busy
    // creating pods: with the default concurrency of one, a cluster stored right after the 5,000-group cluster
    // was once not reached within the window (see docs/operator.md#extreme-values).
    let stored = Instant::now();
    for doc in [big_start_params(), long_cluster_name(), long_group_name()] {
        create(doc).await;
    }
    let edge = name_53();
    wait_for(&format!("{edge}: state ready"), || async {
        (state(&env.client, &edge).await == "ready").then_some(())
    })
    .await;
    for doc in [huge_replicas(), many_groups()] {
        create(doc).await;
    }
    println!(
        "stored the extreme resources in {:.1} s",
        stored.elapsed().as_secs_f64()
    );

    // The window: only the operator talks to kube-sim (the hollow agents work in-process), so the request log
    // grows by the operator's requests alone.
    let mut logged = env.sim.request_log().len();
    let window_start = Instant::now();
    let mut per_second = Vec::new();
    let mut rss_max = rss_before;
    let mut rss_last = rss_before;
    while window_start.elapsed() < WINDOW {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = env.sim.request_log().len();
        per_second.push(now - logged);
        logged = now;
        let current = rss(metrics_port).await.expect("the operator stays alive");
        rss_max = rss_max.max(current);
        rss_last = current;
    }
    let log = env.sim.request_log();
    let window_requests = &log[log.len() - per_second.iter().sum::<usize>()..];
    let mut by_resource: BTreeMap<String, usize> = BTreeMap::new();
    for entry in window_requests {
        *by_resource.entry(resource_of(&entry.method, &entry.path)).or_default() += 1;
    }
    let steady = &per_second[WARM_UP_SECONDS.min(per_second.len())..];
    let steady_rate = steady.iter().sum::<usize>() as f64 / steady.len().max(1) as f64;
    let mib = |b: f64| b / (1024.0 * 1024.0);
    println!(
        "operator RSS: {:.1} MiB with the ordinary cluster, {:.1} MiB max / {:.1} MiB at the end with the extreme \
         resources",
        mib(rss_before),
        mib(rss_max),
        mib(rss_last)
    );
    println!("requests per second over the window: {per_second:?}; mean after {WARM_UP_SECONDS} s: {steady_rate:.1}");
    println!("requests in the window by verb and resource: {by_resource:?}");

    // Bounded memory and no hot loop.
    assert!(
        rss_max < RSS_BOUND_BYTES,
        "RSS {:.1} MiB over {:.0} MiB",
        mib(rss_max),
        mib(RSS_BOUND_BYTES)
    );
    assert!(
        steady_rate < REQUEST_RATE_BOUND,
        "{steady_rate:.1} requests/s after the warm-up: {per_second:?} {by_resource:?}"
    );

    let others: usize = by_resource
        .iter()
        .filter(|(k, _)| k.as_str() != "POST pods")
        .map(|(_, n)| n)
        .sum();
    let other_rate = others as f64 / per_second.len().max(1) as f64;
    println!("requests per second other than pod creates: {other_rate:.1}");
    assert!(
        other_rate < OTHER_REQUEST_RATE_BOUND,
        "{other_rate:.1} requests/s other than pod creates: {by_resource:?}"
    );

    // The ordinary cluster is unaffected.
    assert_eq!(state(&env.client, "ordinary").await, "ready");

    // 2,147,483,647 replicas: created a slice per pass; the pods beyond the nodes' capacity stay Pending
    // until 1,000 wait for a node. The desired count in the status is KubeRay's.
    let huge_pods = pods_of(&env.client, HUGE).await;
    let huge_status = serde_json::to_value(clusters.get(HUGE).await.unwrap().status).unwrap();
    println!(
        "{HUGE}: {} pods after the window; status desiredWorkerReplicas {}",
        huge_pods.len(),
        huge_status["desiredWorkerReplicas"]
    );
    assert!(huge_pods.len() > 1, "{HUGE} makes progress");
    assert_eq!(huge_status["desiredWorkerReplicas"], json!(i32::MAX));
    // Creation stops once the limit's worth of a cluster's workers wait for a node: the pods that fit
    // plus at most the limit (and one pass's slice), then a Warning, and no further creates.
    let ceiling = NODES * PODS_PER_NODE as usize + DEFAULT_MAX_UNSCHEDULED_WORKERS + MAX_WORKER_CREATES_PER_PASS;
    for cluster in [HUGE, MANY] {
        let pods = pods_of(&env.client, cluster).await.len();
        assert!(pods <= ceiling, "{cluster}: {pods} pods, over {ceiling}");
    }
    let waiting = |cluster: &str, events: &[Event]| {
        events
            .iter()
            .find(|e| regarding(e) == cluster && e.reason.as_deref() == Some("WaitingForNodes"))
            .and_then(|e| e.note.clone())
    };
    for cluster in [HUGE, MANY] {
        let note = wait_for(&format!("{cluster}: a WaitingForNodes event"), || async {
            waiting(cluster, &events(&env.client).await)
        })
        .await;
        println!("{cluster}: {note}");
        assert!(note.contains("--max-unscheduled-worker-pods=1000"), "{note}");
    }
    let counts = || async {
        (
            pods_of(&env.client, HUGE).await.len(),
            pods_of(&env.client, MANY).await.len(),
        )
    };
    let before = counts().await;
    let requests_before = env.sim.request_log().len();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after_limit = env.sim.request_log().len() - requests_before;
    assert_eq!(
        counts().await,
        before,
        "pods are still being created after the limit was reached"
    );
    let rss_at_limit = rss(metrics_port).await.expect("the operator stays alive");
    println!(
        "at the limit: pods (huge, many) {before:?}, {after_limit} operator requests in 3 s, RSS {:.1} MiB",
        mib(rss_at_limit)
    );
    assert!(after_limit < 30, "{after_limit} requests in 3 s at the limit");
    assert!(
        before.0 <= ceiling && before.1 <= ceiling,
        "{before:?} pods, over {ceiling}"
    );

    // 5,000 worker groups: reconciled, every group counted.
    let many_pods = pods_of(&env.client, MANY).await;
    let many_status = serde_json::to_value(clusters.get(MANY).await.unwrap().status).unwrap();
    println!(
        "{MANY}: {} pods after the window; status desiredWorkerReplicas {}",
        many_pods.len(),
        many_status["desiredWorkerReplicas"]
    );
    assert_eq!(many_status["desiredWorkerReplicas"], json!(MANY_GROUPS));
    assert!(many_pods.len() > 1, "{MANY} makes progress");

    // A 1 MiB rayStartParams value: kube-sim (like a real API server, whose limit is about 1.5 MiB a request)
    // stores the head pod carrying it.
    let all_events = events(&env.client).await;
    let big_head = pods_of(&env.client, BIG_PARAMS)
        .await
        .into_iter()
        .find(|p| common::node_type(p) == "head");
    let big_event = all_events
        .iter()
        .find(|e| regarding(e) == BIG_PARAMS && e.type_.as_deref() == Some("Warning"));
    println!(
        "{BIG_PARAMS}: head pod {}; warning event: {:?}",
        if big_head.is_some() { "created" } else { "not created" },
        big_event.and_then(|e| e.note.as_deref().map(|n| n.chars().take(200).collect::<String>()))
    );
    assert!(
        big_head.is_some()
            || big_event.is_some_and(|e| e.note.as_deref().unwrap_or_default().contains("rayStartParams")),
        "{BIG_PARAMS}: neither a head pod nor an event naming rayStartParams"
    );

    // A 63-character RayCluster name: KubeRay's metadata validation refuses it with an Event naming the name.
    let long = name_63();
    let invalid = all_events
        .iter()
        .find(|e| regarding(e) == long && e.reason.as_deref() == Some("InvalidRayClusterMetadata"))
        .unwrap_or_else(|| panic!("no InvalidRayClusterMetadata event for {long}"));
    let note = invalid.note.as_deref().unwrap_or_default();
    println!("{long}: {note}");
    assert!(note.contains("name should be no more than 53 characters"), "{note}");
    assert!(pods_of(&env.client, &long).await.is_empty());

    // A 53-character cluster name with a 63-character group name: valid, reconciled to ready, and stays so.
    assert_eq!(state(&env.client, &edge).await, "ready");
    let group = group_63();
    assert!(
        pods_of(&env.client, &edge).await.iter().any(|p| p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("ray.io/group"))
            == Some(&group))
    );

    // Events stay few: one per object and reason, not one per pass.
    let per_object = all_events.iter().fold(BTreeMap::<&str, usize>::new(), |mut m, e| {
        *m.entry(regarding(e)).or_default() += 1;
        m
    });
    println!(
        "events by object: {} objects, {} events",
        per_object.len(),
        all_events.len()
    );
    assert!(all_events.len() < 20_000, "{} events", all_events.len());
    assert!(rss(metrics_port).await.is_some(), "the operator is alive at the end");
}
