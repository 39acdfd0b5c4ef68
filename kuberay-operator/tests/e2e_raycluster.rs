//! End to end: the real operator binary against an in-process kube-sim (hollow scheduler and
//! kubelet), driving KubeRay's `ray-cluster.sample.yaml` through create, scale up, scale down,
//! `workersToDelete` and deletion.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::crd::CustomResourceExt as _;
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port, http_get, one_head_and_running_workers, resident_memory_bytes};

const NS: &str = "default";
const NAME: &str = "raycluster-kuberay";
const WAIT: Duration = Duration::from_secs(60);

fn start_operator(dir: &Path, kubeconfig: &Path, metrics_port: u16, probe_port: u16, extra: &[&str]) -> Operator {
    let flags: Vec<&str> = ["--enable-metrics"].into_iter().chain(extra.iter().copied()).collect();
    Operator::start(dir, kubeconfig, NS, metrics_port, probe_port, &flags)
}

/// Poll `check` every 100 ms until it yields `Some`, failing after [`WAIT`].
async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

/// Live (not terminating) pods of the cluster.
async fn cluster_pods(client: &Client, ns: &str) -> Vec<Pod> {
    common::live_cluster_pods(client, ns, NAME).await
}

/// Waits until the cluster has one running head and `workers` running workers; returns the worker names.
async fn wait_for_workers(client: &Client, ns: &str, workers: usize) -> Vec<String> {
    wait_for(&format!("1 head + {workers} running workers"), || async {
        let pods = cluster_pods(client, ns).await;
        one_head_and_running_workers(&pods, workers).then(|| {
            pods.iter()
                .filter(|p| common::node_type(p) == "worker")
                .map(|p| p.name_any())
                .collect()
        })
    })
    .await
}

async fn status(client: &Client, ns: &str) -> Value {
    let api: Api<RayCluster> = Api::namespaced(client.clone(), ns);
    serde_json::to_value(api.get(NAME).await.unwrap().status).unwrap()
}

async fn wait_for_ready_workers(client: &Client, ns: &str, workers: i64) -> Value {
    wait_for(&format!("status ready with {workers} ready workers"), || async {
        let s = status(client, ns).await;
        (s["state"] == "ready" && s["readyWorkerReplicas"] == workers && s["desiredWorkerReplicas"] == workers)
            .then_some(s)
    })
    .await
}

fn condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

/// Change the first worker group (`replicas`, `workersToDelete`) with a merge patch of the whole list.
async fn patch_group(client: &Client, replicas: i32, workers_to_delete: Option<Vec<String>>) {
    let api: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    let mut groups = api.get(NAME).await.unwrap().spec.worker_group_specs.unwrap();
    groups[0].replicas = Some(replicas);
    if let Some(names) = workers_to_delete {
        let mut strategy = groups[0].scale_strategy.clone().unwrap_or_default();
        strategy.workers_to_delete = Some(names);
        groups[0].scale_strategy = Some(strategy);
    }
    let patch = json!({"spec": {"workerGroupSpecs": groups}});
    api.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// Write requests to `resource` (`events`, `rayclusters/status`) the simulator received, of every client.
fn writes_to(sim: &kube_sim::SimHandle, resource: &str) -> u64 {
    sim.writes_by_client()
        .into_iter()
        .filter(|((_, written), _)| written == resource)
        .map(|(_, n)| n)
        .sum()
}

/// Creates the sample cluster with `workers` workers (and as many at most).
async fn create_sample_with_workers(client: &Client, workers: i32) {
    let mut cluster = sample(NS);
    let group = &mut cluster.spec.worker_group_specs.as_mut().unwrap()[0];
    group.replicas = Some(workers);
    group.max_replicas = Some(workers);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
}

fn sample(ns: &str) -> RayCluster {
    let doc = common::sample_documents("ray-cluster.sample.yaml").remove(0);
    let mut cluster: RayCluster = serde_json::from_value(doc).unwrap();
    cluster.metadata.namespace = Some(ns.into());
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raycluster_sample_lifecycle() {
    let SimEnv {
        sim: _sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("raycluster", kube_sim::SimConfig::default()).await;
    assert_eq!(RayCluster::crd_name(), "rayclusters.ray.io");

    let (metrics_port, probe_port) = (free_port(), free_port());
    let mut operator = start_operator(&dir, &kubeconfig, metrics_port, probe_port, &[]);

    // Probes come up.
    wait_for("/readyz", || async {
        let ok = tokio::net::TcpStream::connect(("127.0.0.1", probe_port)).await.is_ok();
        if !ok {
            return None;
        }
        (http_get(probe_port, "/readyz").await.0 == 200).then_some(())
    })
    .await;
    assert_eq!(http_get(probe_port, "/healthz").await.0, 200);

    // Create the sample.
    let cluster = sample(NS);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    clusters.create(&PostParams::default(), &cluster).await.unwrap();

    // Head + 1 worker, running; status ready with KubeRay's conditions.
    let workers = wait_for_workers(&client, NS, 1).await;
    assert_eq!(workers.len(), 1);
    let s = wait_for_ready_workers(&client, NS, 1).await;
    assert_eq!(s["availableWorkerReplicas"], 1);
    let head_ready = condition(&s, "HeadPodReady").expect("HeadPodReady");
    assert_eq!(head_ready["status"], "True");
    assert_eq!(head_ready["reason"], "HeadPodRunningAndReady");
    let provisioned = condition(&s, "RayClusterProvisioned").expect("RayClusterProvisioned");
    assert_eq!(provisioned["status"], "True", "{s}");
    assert_eq!(provisioned["reason"], "AllPodRunningAndReadyFirstTime");
    assert_eq!(
        condition(&s, "RayClusterSuspended").expect("RayClusterSuspended")["status"],
        "False"
    );
    assert_eq!(
        condition(&s, "RayClusterSuspending").expect("RayClusterSuspending")["status"],
        "False"
    );
    assert!(condition(&s, "ReplicaFailure").is_none(), "no ReplicaFailure: {s}");
    assert!(
        s["head"]["podName"]
            .as_str()
            .is_some_and(|n| n.starts_with("raycluster-kuberay-head-"))
    );
    assert_eq!(s["head"]["serviceName"], "raycluster-kuberay-head-svc");
    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    assert!(services.get_opt("raycluster-kuberay-head-svc").await.unwrap().is_some());

    // Scale up to 3, then down to 1.
    patch_group(&client, 3, None).await;
    wait_for_workers(&client, NS, 3).await;
    wait_for_ready_workers(&client, NS, 3).await;
    patch_group(&client, 1, None).await;
    wait_for_workers(&client, NS, 1).await;
    wait_for_ready_workers(&client, NS, 1).await;

    // workersToDelete removes exactly the listed pod (as the autoscaler asks: replicas 2 -> 1).
    patch_group(&client, 2, None).await;
    let two = wait_for_workers(&client, NS, 2).await;
    let (victim, keeper) = (two[0].clone(), two[1].clone());
    patch_group(&client, 1, Some(vec![victim.clone()])).await;
    let left = wait_for_workers(&client, NS, 1).await;
    assert_eq!(left, vec![keeper], "only {victim} should have been deleted");

    // Suspend: every pod goes, state `suspended`, Suspended=True; resume brings them back.
    let suspend = |on: bool| {
        let api: Api<RayCluster> = Api::namespaced(client.clone(), NS);
        async move {
            let patch = json!({"spec": {"suspend": on}});
            api.patch(NAME, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    };
    suspend(true).await;
    let s = wait_for("suspended", || async {
        let s = status(&client, NS).await;
        let suspended = condition(&s, "RayClusterSuspended").is_some_and(|c| c["status"] == "True");
        (suspended && s["state"] == "suspended" && cluster_pods(&client, NS).await.is_empty()).then_some(s)
    })
    .await;
    assert_eq!(condition(&s, "RayClusterSuspending").unwrap()["status"], "False");
    assert_eq!(condition(&s, "RayClusterProvisioned").unwrap()["status"], "False");
    suspend(false).await;
    wait_for_workers(&client, NS, 1).await;
    wait_for("resumed and provisioned", || async {
        let s = status(&client, NS).await;
        let provisioned = condition(&s, "RayClusterProvisioned").is_some_and(|c| c["status"] == "True");
        let suspended = condition(&s, "RayClusterSuspended").is_some_and(|c| c["status"] == "True");
        (provisioned && !suspended && s["state"] == "ready" && s["readyWorkerReplicas"] == 1).then_some(())
    })
    .await;

    // Metrics, before deletion (the cluster series are dropped with the cluster).
    let (code, metrics) = http_get(metrics_port, "/metrics").await;
    assert_eq!(code, 200);
    assert!(metrics.contains("controller_runtime_reconcile_total"), "{metrics}");
    assert!(metrics.contains("kuberay_cluster_info"), "{metrics}");
    let rss = resident_memory_bytes(&metrics);
    assert!(rss > 0.0);
    eprintln!("operator RSS after e2e: {rss} bytes ({:.1} MiB)", rss / 1048576.0);

    // Deleting the RayCluster garbage-collects every child.
    clusters.delete(NAME, &DeleteParams::default()).await.unwrap();
    wait_for("children garbage-collected", || async {
        let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
        let selector = ListParams::default().labels(&format!("ray.io/cluster={NAME}"));
        let p: Vec<String> = pods
            .list(&selector)
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| o.name_any())
            .collect();
        let s: Vec<String> = services
            .list(&selector)
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| o.name_any())
            .collect();
        if !(p.is_empty() && s.is_empty()) {
            eprintln!("left: pods {p:?} services {s:?}");
        }
        (p.is_empty() && s.is_empty()).then_some(())
    })
    .await;

    // Graceful shutdown on SIGTERM (the lease is released, the process exits 0).
    let exit = operator.terminate();
    assert!(exit.success(), "operator exited with {exit}");
    let log = std::fs::read_to_string(&operator.log).unwrap();
    assert!(log.contains("operator stopped"), "no clean stop in the log");
    drop(operator);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--watch-namespace` scopes the operator: a cluster outside the watched namespaces is never touched;
/// several clusters in the watched namespace reconcile concurrently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_namespace_scopes_the_operator() {
    let config = kube_sim::SimConfig {
        extra_namespaces: vec!["team-a".into(), "team-b".into()],
        ..kube_sim::SimConfig::default()
    };
    let SimEnv {
        sim: _sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("raycluster", config).await;
    let (metrics_port, probe_port) = (free_port(), free_port());
    let file_log = dir.join("file.log");
    let mut operator = start_operator(
        &dir,
        &kubeconfig,
        metrics_port,
        probe_port,
        &[
            "--watch-namespace",
            "team-a",
            "--enable-leader-election=false",
            "--reconcile-concurrency",
            "2",
            "--log-file-path",
            file_log.to_str().unwrap(),
        ],
    );

    for ns in ["team-a", "team-b"] {
        let api: Api<RayCluster> = Api::namespaced(client.clone(), ns);
        for i in 0..3 {
            let mut cluster = sample(ns);
            cluster.metadata.name = Some(format!("rc-{i}"));
            api.create(&PostParams::default(), &cluster).await.unwrap();
        }
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team-a");
    wait_for("3 clusters ready in team-a", || async {
        let api: Api<RayCluster> = Api::namespaced(client.clone(), "team-a");
        let ready = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.state.as_ref())
                    .is_some_and(|s| s.to_string() == "ready")
            })
            .count();
        (ready == 3).then_some(())
    })
    .await;
    assert_eq!(pods.list(&ListParams::default()).await.unwrap().items.len(), 6);

    let other: Api<RayCluster> = Api::namespaced(client.clone(), "team-b");
    let untouched = other.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(untouched.len(), 3);
    assert!(
        untouched.iter().all(|c| c.status.is_none()),
        "team-b clusters got a status"
    );
    let team_b_pods: Api<Pod> = Api::namespaced(client.clone(), "team-b");
    assert!(team_b_pods.list(&ListParams::default()).await.unwrap().items.is_empty());

    let file_text = std::fs::read_to_string(&file_log).unwrap();
    assert!(
        file_text.contains("starting RayCluster controller"),
        "--log-file-path got: {file_text}"
    );

    let exit = operator.terminate();
    assert!(exit.success(), "operator exited with {exit}");
    drop(operator);
    let _ = std::fs::remove_dir_all(&dir);
}

/// GCS FT with external Redis: the finalizer is added, and deleting the cluster runs the Redis
/// cleanup Job (the hollow Job controller completes it) before the finalizer goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcs_ft_redis_cleanup_finalizer() {
    let SimEnv {
        sim: _sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("raycluster", kube_sim::SimConfig::default()).await;
    let (metrics_port, probe_port) = (free_port(), free_port());
    let mut operator = start_operator(
        &dir,
        &kubeconfig,
        metrics_port,
        probe_port,
        &["--enable-leader-election=false"],
    );

    let mut cluster = sample(NS);
    cluster.spec.gcs_fault_tolerance_options =
        Some(serde_json::from_value(json!({"redisAddress": "redis:6379"})).unwrap());
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    clusters.create(&PostParams::default(), &cluster).await.unwrap();

    wait_for_ready_workers(&client, NS, 1).await;
    let live = clusters.get(NAME).await.unwrap();
    assert!(
        live.finalizers()
            .iter()
            .any(|f| f == "ray.io/gcs-ft-redis-cleanup-finalizer"),
        "finalizer missing: {:?}",
        live.finalizers()
    );

    clusters.delete(NAME, &DeleteParams::default()).await.unwrap();
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), NS);
    let job = wait_for("the Redis cleanup Job", || async {
        jobs.get_opt("raycluster-kuberay-redis-cleanup").await.unwrap()
    })
    .await;
    assert_eq!(job.labels()["ray.io/node-type"], "redis-cleanup");
    // Pods were deleted before the Job was created.
    wait_for("cluster gone after the cleanup Job", || common::gone(&clusters, NAME)).await;

    let exit = operator.terminate();
    assert!(exit.success(), "operator exited with {exit}");
    drop(operator);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scale-up's `CreatedWorkerPod` events are one Event series whose count is the number of workers created, and
/// the operator sends fewer event requests than occurrences: occurrences that wait while their series is being
/// sent are folded into its next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_up_publishes_one_event_series_in_fewer_requests_than_workers() {
    // With the head pod's and the head service's events, within the 25 events an object gets at once.
    const WORKERS: i32 = 20;
    let SimEnv {
        sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("raycluster-event-series", kube_sim::SimConfig::default()).await;
    let mut operator = start_operator(&dir, &kubeconfig, free_port(), free_port(), &[]);
    create_sample_with_workers(&client, WORKERS).await;
    wait_for_workers(&client, NS, WORKERS as usize).await;

    // Events are published in the background: wait until every occurrence is counted.
    let series = wait_for("every CreatedWorkerPod occurrence published", || async {
        let events = common::events_about(&client, NS, "CreatedWorkerPod", NAME).await;
        let occurrences: i32 = events.iter().map(|e| e.series.as_ref().map_or(1, |s| s.count)).sum();
        (occurrences == WORKERS).then_some(events)
    })
    .await;
    assert_eq!(series.len(), 1, "one Event for the series: {series:?}");
    let event_writes = writes_to(&sim, "events");
    // The head pod's and the services' events are in this count too.
    assert!(
        event_writes < WORKERS as u64,
        "{event_writes} event requests for {WORKERS} worker creates and the head's events"
    );

    let exit = operator.terminate();
    assert!(exit.success(), "operator exited with {exit}");
    drop(operator);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pass whose copy of the cluster predates the operator's own last status write (the watch cache is behind;
/// pod events trigger passes sooner) leaves the status to a later pass instead of sending a write bound to
/// conflict: with the RayCluster watch held back, the cluster still gets to `ready` and no status write is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_writes_wait_for_a_lagging_cache_instead_of_conflicting() {
    const WORKERS: i32 = 4;
    let faults = kube_sim::FaultConfig::parse("watch-lag=500ms/rayclusters").unwrap();
    let SimEnv {
        sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start(
        "raycluster-lagging-cache",
        kube_sim::SimConfig {
            faults,
            ..kube_sim::SimConfig::default()
        },
    )
    .await;
    let mut operator = start_operator(&dir, &kubeconfig, free_port(), free_port(), &[]);
    create_sample_with_workers(&client, WORKERS).await;
    wait_for_ready_workers(&client, NS, i64::from(WORKERS)).await;
    // Stopped before the counts are read, so that a write refused after `ready` is counted too.
    let exit = operator.terminate();
    assert!(exit.success(), "operator exited with {exit}");

    let status_writes = writes_to(&sim, "rayclusters/status");
    let refused: Vec<_> = sim
        .write_refusals_by_client()
        .into_iter()
        .filter(|((_, resource, _), _)| resource == "rayclusters/status")
        .collect();
    assert!(status_writes >= 2, "{status_writes} status writes");
    assert!(
        refused.is_empty(),
        "status writes refused (by client, resource, code): {refused:?} of {status_writes}"
    );
    drop(operator);
    let _ = std::fs::remove_dir_all(&dir);
}
