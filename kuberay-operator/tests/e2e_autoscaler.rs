//! End to end: KubeRay's `ray-cluster.autoscaler.yaml` through the real operator binary against an in-process
//! kube-sim with a hollow Ray head and the hollow autoscaler (the head pod's `autoscaler` sidecar).
//!
//! 1. The operator adds the autoscaler sidecar with KubeRay's command, args, env and the sample's resources,
//!    and creates the ServiceAccount, Role and RoleBinding (docs/podgen.md#autoscaler-sidecar-and-rbac).
//! 2. The autoscaling guide's scenario (head `num-cpus: 0`, 1-CPU workers, `minReplicas` 0), with
//!    `idleTimeoutSeconds` shortened to 5: actor1 → 1 worker; actor2 → 2 workers; ending actor1 removes the
//!    worker it ran on, ending actor2 the other one, each after the idle timeout and each named in
//!    `workersToDelete`. Actors are created and ended through the hollow head's `/api/hollow/actors`, reached
//!    through the API server's service proxy.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use kube_sim::{SimConfig, WatchEvent, WatchOptions};
use ray_api::RayCluster;
use ray_sim::{HollowAutoscalerOptions, HollowRay, HollowRayOptions, rayclusters_gvr};
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port, running};

const NS: &str = "default";
const CLUSTER: &str = "raycluster-autoscaler";
const GROUP: &str = "small-group";
/// The test's `autoscalerOptions.idleTimeoutSeconds` (the sample says 60).
const IDLE_TIMEOUT_SECONDS: i32 = 5;
/// The hollow autoscaler's iteration period in this test (Ray's is 5 s).
const AUTOSCALER_INTERVAL: Duration = Duration::from_millis(500);
const WAIT: Duration = Duration::from_secs(60);

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(50), check).await
}

/// The RayCluster and ConfigMap documents of KubeRay's sample.
fn sample() -> (RayCluster, ConfigMap) {
    const FILE: &str = "ray-cluster.autoscaler.yaml";
    let mut cluster: RayCluster = common::sample_document(FILE, "RayCluster");
    cluster.metadata.namespace = Some(NS.into());
    let config_map: ConfigMap = common::sample_document(FILE, "ConfigMap");
    (cluster, config_map)
}

/// A request to the hollow head's API through the API server's service proxy.
async fn head_api(client: &Client, method: http::Method, path: &str, body: Option<Value>) -> Value {
    let uri = format!("/api/v1/namespaces/{NS}/services/{CLUSTER}-head-svc:dashboard/proxy{path}");
    let body = body.map(|b| serde_json::to_vec(&b).unwrap()).unwrap_or_default();
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let text = client.request_text(request).await.unwrap();
    serde_json::from_str(&text).unwrap()
}

async fn create_actor(client: &Client, name: &str) -> Value {
    head_api(
        client,
        http::Method::POST,
        "/api/hollow/actors",
        Some(json!({"name": name, "resources": {"CPU": 1}})),
    )
    .await
}

async fn kill_actor(client: &Client, name: &str) {
    let answer = head_api(
        client,
        http::Method::DELETE,
        &format!("/api/hollow/actors/{name}"),
        None,
    )
    .await;
    assert_eq!(answer, json!({"killed": true}));
}

/// The node an actor runs on, once it is `ALIVE`.
async fn actor_node(client: &Client, name: &str) -> Option<String> {
    let actor = head_api(client, http::Method::GET, &format!("/api/hollow/actors/{name}"), None).await;
    (actor["state"] == "ALIVE").then(|| actor["node"].as_str().unwrap().to_string())
}

/// Names of the worker pods that exist (any phase, deleting or not), sorted.
async fn worker_pods(pods: &Api<Pod>) -> Vec<Pod> {
    let selector = format!("ray.io/cluster={CLUSTER},ray.io/node-type=worker");
    let mut v = pods.list(&ListParams::default().labels(&selector)).await.unwrap().items;
    v.sort_by_key(|p| p.name_any());
    v
}

/// Waits until exactly `n` worker pods exist and all are Running; returns their names.
async fn wait_for_running_workers(pods: &Api<Pod>, n: usize) -> Vec<String> {
    wait_for(&format!("{n} Running worker pods"), || async {
        let workers = worker_pods(pods).await;
        let all_running = workers
            .iter()
            .all(|p| p.metadata.deletion_timestamp.is_none() && running(p));
        (workers.len() == n && all_running).then(|| workers.iter().map(|p| p.name_any()).collect())
    })
    .await
}

fn group_spec(cluster: &RayCluster) -> &ray_api::WorkerGroupSpec {
    cluster
        .spec
        .worker_group_specs
        .as_ref()
        .unwrap()
        .iter()
        .find(|g| g.group_name == GROUP)
        .unwrap()
}

fn workers_to_delete(cluster: &RayCluster) -> Vec<String> {
    group_spec(cluster)
        .scale_strategy
        .as_ref()
        .and_then(|s| s.workers_to_delete.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn autoscaler_sample_scales_with_actors() {
    let SimEnv {
        sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("autoscaler", SimConfig::default()).await;
    let ray = HollowRay::attach(
        &sim,
        HollowRayOptions {
            autoscaler: HollowAutoscalerOptions {
                interval: AUTOSCALER_INTERVAL,
                ..HollowAutoscalerOptions::default()
            },
            ..HollowRayOptions::default()
        },
    );

    // Every `workersToDelete` value the RayCluster ever had, straight from the store's watch.
    let seen_to_delete: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let mut rc_watch = sim
        .store()
        .watch(&rayclusters_gvr(), Some(NS), WatchOptions::default())
        .unwrap();
    let recorder = {
        let seen = seen_to_delete.clone();
        tokio::spawn(async move {
            while let Some(ev) = rc_watch.next().await {
                let (WatchEvent::Added(o) | WatchEvent::Modified(o)) = ev else {
                    continue;
                };
                let Ok(rc) = serde_json::from_value::<RayCluster>(o.value()) else {
                    continue;
                };
                let list = workers_to_delete(&rc);
                let mut seen = seen.lock().unwrap();
                if seen.last() != Some(&list) {
                    seen.push(list);
                }
            }
        })
    };

    let _operator = Operator::start(&dir, &kubeconfig, NS, free_port(), free_port(), &[]);

    let (mut cluster, config_map) = sample();
    cluster.spec.autoscaler_options.as_mut().unwrap().idle_timeout_seconds = Some(IDLE_TIMEOUT_SECONDS);
    Api::<ConfigMap>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    clusters.create(&PostParams::default(), &cluster).await.unwrap();

    // --- The head pod and its autoscaler sidecar.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let head = wait_for("the Running head pod", || async {
        let selector = format!("ray.io/cluster={CLUSTER},ray.io/node-type=head");
        let list = pods.list(&ListParams::default().labels(&selector)).await.unwrap();
        list.items.into_iter().find(running)
    })
    .await;
    let spec = head.spec.as_ref().unwrap();
    assert_eq!(spec.service_account_name.as_deref(), Some(CLUSTER));
    let names: Vec<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["ray-head", "autoscaler"]);
    let sidecar = &spec.containers[1];
    assert_eq!(sidecar.image.as_deref(), Some("rayproject/ray:2.52.0"));
    assert_eq!(sidecar.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(sidecar.command.as_deref().unwrap(), ["/bin/bash", "-c", "--"]);
    let start =
        "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)";
    assert_eq!(sidecar.args.as_deref().unwrap(), [start]);
    let env = serde_json::to_value(sidecar.env.as_ref().unwrap()).unwrap();
    assert_eq!(
        env,
        json!([
            {"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
            {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "RAY_HEAD_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
            {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": start},
        ])
    );
    let resources = serde_json::to_value(sidecar.resources.as_ref().unwrap()).unwrap();
    let fixed = json!({"cpu": "500m", "memory": "512Mi"});
    assert_eq!(resources, json!({"limits": fixed, "requests": fixed}));

    // --- Autoscaler RBAC: ServiceAccount, Role and RoleBinding.
    let sa = Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .get(CLUSTER)
        .await
        .unwrap();
    assert_eq!(sa.labels().get("ray.io/cluster").map(String::as_str), Some(CLUSTER));
    assert_eq!(
        sa.labels().get("app.kubernetes.io/created-by").map(String::as_str),
        Some("kuberay-operator")
    );
    let role = Api::<Role>::namespaced(client.clone(), NS).get(CLUSTER).await.unwrap();
    assert_eq!(
        serde_json::to_value(role.rules.unwrap()).unwrap(),
        json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
            {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
        ])
    );
    let binding = Api::<RoleBinding>::namespaced(client.clone(), NS)
        .get(CLUSTER)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(binding.subjects.unwrap()).unwrap(),
        json!([{"kind": "ServiceAccount", "name": CLUSTER, "namespace": NS}])
    );
    assert_eq!(
        serde_json::to_value(&binding.role_ref).unwrap(),
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CLUSTER})
    );

    // --- The guide's scenario. The head has `num-cpus: 0`: no actor can run there.
    ray.wait_for_head(NS, CLUSTER, WAIT).await.expect("hollow head up");
    assert!(worker_pods(&pods).await.is_empty());
    let t0 = Instant::now();
    let actor1 = create_actor(&client, "actor1").await;
    assert_eq!(actor1["state"], "PENDING_CREATION", "{actor1}");
    let first = wait_for_running_workers(&pods, 1).await;
    let node1 = wait_for("actor1 ALIVE", || actor_node(&client, "actor1")).await;
    let t_one_worker = t0.elapsed();
    assert_eq!(node1, first[0]);

    let t1 = Instant::now();
    let actor2 = create_actor(&client, "actor2").await;
    assert_eq!(actor2["state"], "PENDING_CREATION", "the only worker is full: {actor2}");
    let both = wait_for_running_workers(&pods, 2).await;
    let node2 = wait_for("actor2 ALIVE", || actor_node(&client, "actor2")).await;
    let t_two_workers = t1.elapsed();
    assert_ne!(node1, node2);
    assert!(both.contains(&node2));
    assert_eq!(group_spec(&clusters.get(CLUSTER).await.unwrap()).replicas, Some(2));

    // Ending actor1: its worker goes after the idle timeout; actor2's stays.
    let t2 = Instant::now();
    kill_actor(&client, "actor1").await;
    let left = wait_for_running_workers(&pods, 1).await;
    let t_first_removed = t2.elapsed();
    assert_eq!(left, vec![node2.clone()]);
    let timeout = Duration::from_secs(IDLE_TIMEOUT_SECONDS as u64);
    assert!(
        t_first_removed > timeout,
        "removed after {t_first_removed:?}, before the idle timeout"
    );

    // Ending actor2: back to no workers.
    let t3 = Instant::now();
    kill_actor(&client, "actor2").await;
    wait_for("no worker pods", || async {
        worker_pods(&pods).await.is_empty().then_some(())
    })
    .await;
    let t_all_removed = t3.elapsed();
    assert!(
        t_all_removed > timeout,
        "removed after {t_all_removed:?}, before the idle timeout"
    );

    // The autoscaler clears `workersToDelete` once the listed pods are gone; replicas ends at 0.
    let last = wait_for("workersToDelete cleared", || async {
        let rc = clusters.get(CLUSTER).await.unwrap();
        workers_to_delete(&rc).is_empty().then_some(rc)
    })
    .await;
    assert_eq!(group_spec(&last).replicas, Some(0));

    // Each removed pod was named in `workersToDelete` (and nothing else was).
    let seen = seen_to_delete.lock().unwrap().clone();
    let named: BTreeSet<String> = seen.iter().flatten().cloned().collect();
    assert_eq!(named, BTreeSet::from([node1.clone(), node2.clone()]), "{seen:?}");
    assert!(seen.contains(&vec![node1.clone()]), "{seen:?}");
    assert!(seen.contains(&vec![node2.clone()]), "{seen:?}");

    // The autoscaler's own record: 0→1, 1→2, 2→1 [node1], clear, 1→0 [node2], clear.
    let events: Vec<(Option<i32>, Option<i32>, Vec<String>)> = ray
        .scale_events(NS, CLUSTER)
        .into_iter()
        .map(|e| (e.replicas_before, e.replicas, e.workers_to_delete))
        .collect();
    assert_eq!(
        events,
        vec![
            (Some(0), Some(1), vec![]),
            (Some(1), Some(2), vec![]),
            (Some(2), Some(1), vec![node1.clone()]),
            (Some(1), Some(1), vec![]),
            (Some(1), Some(0), vec![node2.clone()]),
            (Some(0), Some(0), vec![]),
        ]
    );
    recorder.abort();
    eprintln!(
        "autoscaler timings (interval {AUTOSCALER_INTERVAL:?}, idleTimeoutSeconds {IDLE_TIMEOUT_SECONDS}): \
         actor1 -> 1 worker Running + actor ALIVE in {t_one_worker:?}; actor2 -> 2 workers in {t_two_workers:?}; \
         actor1 ended -> its worker gone in {t_first_removed:?}; actor2 ended -> 0 workers in {t_all_removed:?}"
    );
}
