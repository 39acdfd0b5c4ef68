//! End to end, the real operator binary against an in-process kube-sim: the RayCluster children
//! besides pods (Volcano PodGroup, Ingress, serve / headless services, auth Secret), validation
//! events, and pod replacement.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use ray_gang::volcano::{PodGroup, Queue};
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port, node_type, running};

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(60);

/// Poll `check` every 100 ms until it yields `Some`, failing after [`WAIT`].
async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

/// One simulated cluster with the operator running against it.
struct Env {
    /// Keeps the simulated API server alive.
    _sim: kube_sim::SimHandle,
    client: Client,
    operator: Operator,
    probe_port: u16,
    dir: PathBuf,
}

impl Env {
    /// kube-sim with our CRDs (plus `extra_crds`), then the operator with `flags`.
    async fn start(tag: &str, extra_crds: &[Value], flags: &[&str]) -> Env {
        let SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        } = SimEnv::start(tag, kube_sim::SimConfig::default()).await;
        common::install_extra_crds(&client, extra_crds).await;
        let probe_port = free_port();
        let operator = Operator::start(&dir, &kubeconfig, NS, free_port(), probe_port, flags);
        Env {
            _sim: sim,
            client,
            operator,
            probe_port,
            dir,
        }
    }

    fn clusters(&self) -> Api<RayCluster> {
        Api::namespaced(self.client.clone(), NS)
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Live (not terminating) pods of a cluster.
    async fn pods(&self, cluster: &str) -> Vec<Pod> {
        common::live_cluster_pods(&self.client, NS, cluster).await
    }

    /// Waits until `cluster` has 1 running head and `workers` running workers; returns its pods.
    async fn wait_running(&self, cluster: &str, workers: usize) -> Vec<Pod> {
        wait_for(&format!("{cluster}: 1 head + {workers} running workers"), || async {
            let pods = self.pods(cluster).await;
            common::one_head_and_running_workers(&pods, workers).then_some(pods)
        })
        .await
    }

    /// Waits for `status.state == ready`.
    async fn wait_ready(&self, cluster: &str) {
        wait_for(&format!("{cluster}: state ready"), || async {
            (self.state(cluster).await == "ready").then_some(())
        })
        .await;
    }

    /// `status.state` as written (`Null` when unset).
    async fn state(&self, cluster: &str) -> Value {
        let status = self.clusters().get(cluster).await.unwrap().status;
        serde_json::to_value(status).unwrap()["state"].clone()
    }

    /// The first event with `reason` about the object named `regarding`, if any yet.
    async fn event(&self, reason: &str, regarding: &str) -> Option<Event> {
        self.api::<Event>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
            })
    }

    /// The operator still answers its liveness probe.
    async fn assert_operator_alive(&self) {
        let response = common::http_get_response(self.probe_port, "/healthz")
            .await
            .expect("operator probe port closed");
        assert!(response.starts_with("HTTP/1.1 200"), "healthz: {response}");
    }

    fn finish(self) {
        let dir = self.dir.clone();
        drop(self.operator);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// `ray-cluster.sample.yaml` renamed to `name`.
fn sample_cluster(name: &str) -> RayCluster {
    let doc = common::sample_documents("ray-cluster.sample.yaml").remove(0);
    let mut cluster: RayCluster = serde_json::from_value(doc).unwrap();
    cluster.metadata.name = Some(name.into());
    cluster.metadata.namespace = Some(NS.into());
    cluster
}

fn crd(group: &str, plural: &str, kind: &str, namespaced: bool, status: bool) -> Value {
    let mut version = json!({
        "name": "v1beta1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    });
    if status {
        version["subresources"] = json!({"status": {}});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [version]
        }
    })
}

/// Volcano's PodGroup and Queue CRDs (as Volcano installs them: PodGroup without, Queue with a status
/// subresource).
fn volcano_crds() -> Vec<Value> {
    vec![
        crd("scheduling.volcano.sh", "podgroups", "PodGroup", true, false),
        crd("scheduling.volcano.sh", "queues", "Queue", false, true),
    ]
}

fn pod_group_condition<'a>(pg: &'a PodGroup, type_: &str) -> Option<&'a ray_gang::volcano::PodGroupCondition> {
    pg.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some(type_))
}

fn pod_group_phase(pg: &PodGroup) -> &str {
    pg.status.as_ref().map(|s| s.phase.as_str()).unwrap_or_default()
}

/// The Volcano guide's gang-scheduling walkthrough: a queue of 4 CPU / 6Gi fits one 3 CPU / 4Gi
/// cluster; an identical second cluster waits, none of its pods placed, until the first is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volcano_gang_scheduling_walkthrough() {
    let env = Env::start("volcano", &volcano_crds(), &["--batch-scheduler", "volcano"]).await;
    let docs = common::sample_documents("ray-cluster.volcano-scheduler-queue.yaml");
    let queue_doc = docs.iter().find(|d| d["kind"] == "Queue").unwrap().clone();
    let cluster_doc = docs.iter().find(|d| d["kind"] == "RayCluster").unwrap().clone();

    let queues: Api<Queue> = Api::all(env.client.clone());
    let queue: Queue = serde_json::from_value(queue_doc).unwrap();
    assert_eq!(queue.name_any(), "kuberay-test-queue");
    queues.create(&PostParams::default(), &queue).await.unwrap();

    let cluster_named = |name: &str| {
        let mut cluster: RayCluster = serde_json::from_value(cluster_doc.clone()).unwrap();
        cluster.metadata.name = Some(name.into());
        cluster.metadata.namespace = Some(NS.into());
        // The guide (written for KubeRay 1.0) also labels the cluster; KubeRay 1.7 ignores the label.
        cluster
            .metadata
            .labels
            .get_or_insert_default()
            .insert("ray.io/scheduler-name".into(), "volcano".into());
        cluster
    };
    let pgs: Api<PodGroup> = env.api();

    // First cluster: PodGroup with the gang's size, Running; the pods run under Volcano.
    env.clusters()
        .create(&PostParams::default(), &cluster_named("test-cluster-0"))
        .await
        .unwrap();
    let pg0 = wait_for("ray-test-cluster-0-pg Running", || async {
        let pg = pgs.get_opt("ray-test-cluster-0-pg").await.unwrap()?;
        (pod_group_phase(&pg) == "Running").then_some(pg)
    })
    .await;
    assert_eq!(pg0.spec.min_member, 3);
    assert_eq!(pg0.spec.queue, "kuberay-test-queue");
    let min = pg0.spec.min_resources.clone().unwrap();
    assert_eq!(min["cpu"].0, "3");
    assert_eq!(min["memory"].0, "4Gi");
    let owner = &pg0.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("RayCluster", "test-cluster-0")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(
        pod_group_condition(&pg0, "Scheduled").and_then(|c| c.status.as_deref()),
        Some("True")
    );
    let pods0 = env.wait_running("test-cluster-0", 2).await;
    for pod in &pods0 {
        assert_eq!(pod.spec.as_ref().unwrap().scheduler_name.as_deref(), Some("volcano"));
        assert_eq!(
            pod.annotations()["scheduling.k8s.io/group-name"],
            "ray-test-cluster-0-pg"
        );
        assert_eq!(pod.labels()["volcano.sh/queue-name"], "kuberay-test-queue");
    }
    env.wait_ready("test-cluster-0").await;
    // The typed Queue has no status; read it untyped.
    let queue_status: Api<DynamicObject> = Api::all_with(env.client.clone(), &ApiResource::erase::<Queue>(&()));
    let q = wait_for("queue running 1", || async {
        let q = queue_status.get("kuberay-test-queue").await.unwrap();
        (q.data["status"]["running"] == 1).then_some(q)
    })
    .await;
    assert_eq!(q.data["status"]["state"], "Open");

    // Second, identical cluster: its gang does not fit the queue; no pod is placed.
    env.clusters()
        .create(&PostParams::default(), &cluster_named("test-cluster-1"))
        .await
        .unwrap();
    let pg1 = wait_for("ray-test-cluster-1-pg Unschedulable", || async {
        let pg = pgs.get_opt("ray-test-cluster-1-pg").await.unwrap()?;
        pod_group_condition(&pg, "Unschedulable")
            .is_some_and(|c| c.status.as_deref() == Some("True"))
            .then_some(pg)
    })
    .await;
    assert_eq!(pod_group_phase(&pg1), "Pending");
    assert_eq!(pg1.spec.min_member, 3);
    assert_eq!(
        pod_group_condition(&pg1, "Unschedulable").and_then(|c| c.reason.as_deref()),
        Some("NotEnoughResources")
    );
    // The operator creates all three pods (head first, then the workers); Volcano holds them.
    wait_for("test-cluster-1: 3 pods created", || async {
        (env.pods("test-cluster-1").await.len() == 3).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for pod in env.pods("test-cluster-1").await {
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name, None, "{} must not be placed", pod.name_any());
        assert_eq!(pod.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Pending"));
    }
    assert_ne!(env.state("test-cluster-1").await, "ready");

    // Deleting the first cluster frees the queue: the second gang is scheduled as a whole.
    env.clusters()
        .delete("test-cluster-0", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("ray-test-cluster-1-pg Running", || async {
        let pg = pgs.get_opt("ray-test-cluster-1-pg").await.unwrap()?;
        (pod_group_phase(&pg) == "Running").then_some(())
    })
    .await;
    env.wait_running("test-cluster-1", 2).await;
    env.wait_ready("test-cluster-1").await;
    // The first cluster's PodGroup went with it (owner reference).
    wait_for("ray-test-cluster-0-pg garbage-collected", || {
        common::gone(&pgs, "ray-test-cluster-0-pg")
    })
    .await;
    env.finish();
}

/// An invalid spec gets KubeRay's Warning event and no pods; the operator keeps serving the valid
/// cluster next to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_spec_is_reported_and_does_not_block_others() {
    let env = Env::start("invalid", &[], &[]).await;
    let mut bad = sample_cluster("bad-cluster");
    {
        let group = &mut bad.spec.worker_group_specs.as_mut().unwrap()[0];
        group.min_replicas = Some(5);
        group.max_replicas = Some(1);
    }
    env.clusters().create(&PostParams::default(), &bad).await.unwrap();
    env.clusters()
        .create(&PostParams::default(), &sample_cluster("good-cluster"))
        .await
        .unwrap();

    let event = wait_for("InvalidRayClusterSpec event", || {
        env.event("InvalidRayClusterSpec", "bad-cluster")
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.action.as_deref(), Some("Validate"));
    assert_eq!(
        event.note.as_deref(),
        Some(
            "The RayCluster spec is invalid default/bad-cluster: worker group workergroup has minReplicas 5 greater than maxReplicas 1"
        )
    );
    let regarding = event.regarding.as_ref().unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("RayCluster"));

    env.wait_running("good-cluster", 1).await;
    env.wait_ready("good-cluster").await;
    assert!(
        env.pods("bad-cluster").await.is_empty(),
        "no pods for the invalid cluster"
    );
    assert_eq!(
        env.state("bad-cluster").await,
        Value::Null,
        "the invalid cluster gets no state"
    );
    env.assert_operator_alive().await;
    env.finish();
}

/// A deleted worker comes back under a new name in the same group; a head whose phase becomes
/// `Failed` is replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_worker_and_failed_head_are_replaced() {
    let env = Env::start("replace", &[], &[]).await;
    let name = "replace-cluster";
    env.clusters()
        .create(&PostParams::default(), &sample_cluster(name))
        .await
        .unwrap();
    let pods = env.wait_running(name, 1).await;
    env.wait_ready(name).await;
    let worker = pods.iter().find(|p| node_type(p) == "worker").unwrap().name_any();
    let head = pods.iter().find(|p| node_type(p) == "head").unwrap().name_any();

    let pod_api: Api<Pod> = env.api();
    pod_api.delete(&worker, &DeleteParams::default()).await.unwrap();
    let replacement = wait_for("a new running worker", || async {
        env.pods(name)
            .await
            .into_iter()
            .find(|p| node_type(p) == "worker" && p.name_any() != worker && running(p))
    })
    .await;
    assert_eq!(replacement.labels()["ray.io/group"], "workergroup");
    assert!(
        replacement
            .name_any()
            .starts_with(&format!("{name}-workergroup-worker-"))
    );

    let failed = json!({"status": {"phase": "Failed"}});
    pod_api
        .patch_status(&head, &PatchParams::default(), &Patch::Merge(&failed))
        .await
        .unwrap();
    let new_head = wait_for("a new running head", || async {
        env.pods(name)
            .await
            .into_iter()
            .find(|p| node_type(p) == "head" && p.name_any() != head && running(p))
    })
    .await;
    assert!(new_head.name_any().starts_with(&format!("{name}-head-")));
    wait_for("the failed head is gone", || common::gone(&pod_api, &head)).await;
    env.wait_ready(name).await;
    // Events are published in the background, a moment after what they report.
    wait_for("a DeletedHeadPod event", || async {
        common::namespace_events(&env.client, NS)
            .await
            .into_iter()
            .any(|e| e.reason.as_deref() == Some("DeletedHeadPod"))
            .then_some(())
    })
    .await;
    env.finish();
}

/// `enableIngress`, `ray.io/enable-serve-service`, a multi-host group and token auth give an Ingress,
/// a serve Service, a headless worker Service and a token Secret; all go with the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_serve_headless_and_auth_children_follow_the_cluster() {
    let env = Env::start("children", &[], &[]).await;
    let name = "children-cluster";
    let mut cluster = sample_cluster(name);
    cluster.spec.head_group_spec.enable_ingress = Some(true);
    cluster
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("ray.io/enable-serve-service".into(), "true".into());
    let head = &mut cluster.spec.head_group_spec.template.spec.as_mut().unwrap().containers[0];
    head.ports
        .get_or_insert_default()
        .push(serde_json::from_value(json!({"containerPort": 8000, "name": "serve"})).unwrap());
    cluster.spec.auth_options = Some(serde_json::from_value(json!({"mode": "token"})).unwrap());
    let mut multi_host = cluster.spec.worker_group_specs.as_ref().unwrap()[0].clone();
    multi_host.group_name = "multihost".into();
    multi_host.num_of_hosts = Some(2);
    cluster.spec.worker_group_specs.as_mut().unwrap().push(multi_host);
    env.clusters().create(&PostParams::default(), &cluster).await.unwrap();

    // One head, one single-host worker, one two-host replica.
    env.wait_running(name, 3).await;
    env.wait_ready(name).await;

    let ingresses: Api<Ingress> = env.api();
    let services: Api<Service> = env.api();
    let secrets: Api<Secret> = env.api();
    let owned = |refs: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>| {
        refs.into_iter()
            .flatten()
            .any(|r| r.kind == "RayCluster" && r.name == name && r.controller == Some(true))
    };

    let ingress = ingresses.get(&format!("{name}-head-ingress")).await.unwrap();
    assert!(owned(ingress.metadata.owner_references.as_ref()));
    let backend = ingress.spec.as_ref().unwrap().rules.as_ref().unwrap()[0]
        .http
        .as_ref()
        .unwrap()
        .paths[0]
        .backend
        .service
        .clone()
        .unwrap();
    assert_eq!(backend.name, format!("{name}-head-svc"));
    assert_eq!(backend.port.unwrap().number, Some(8265));

    let serve = services.get(&format!("{name}-serve-svc")).await.unwrap();
    assert!(owned(serve.metadata.owner_references.as_ref()));
    let serve_ports = serve.spec.as_ref().unwrap().ports.clone().unwrap();
    assert_eq!(serve_ports.iter().map(|p| p.port).collect::<Vec<_>>(), [8000]);

    let headless = services.get(&format!("{name}-headless")).await.unwrap();
    assert!(owned(headless.metadata.owner_references.as_ref()));
    assert_eq!(headless.spec.as_ref().unwrap().cluster_ip.as_deref(), Some("None"));

    let secret = secrets.get(name).await.unwrap();
    assert!(owned(secret.metadata.owner_references.as_ref()));
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("auth_token"))
        .map(|b| b.0.clone())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get("auth_token"))
                .map(|s| s.clone().into_bytes())
        })
        .expect("auth_token in the Secret");
    assert_eq!(token.len(), 44, "base64 of 32 random bytes");

    let events: Api<Event> = env.api();
    // The operator's recorder folds repeats of a reason into one event's series; events are sent in the background and
    // a series' later occurrences a moment after its first: wait for both services' occurrences.
    let occurrences = |all_events: &[Event], reason: &str| -> i32 {
        all_events
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| e.series.as_ref().map_or(1, |s| s.count))
            .sum()
    };
    let all_events = wait_for("both CreatedService occurrences published", || async {
        let all_events = events.list(&ListParams::default()).await.unwrap().items;
        (occurrences(&all_events, "CreatedService") >= 2).then_some(all_events)
    })
    .await;
    let reasons: Vec<String> = all_events.iter().filter_map(|e| e.reason.clone()).collect();
    assert_eq!(
        occurrences(&all_events, "CreatedService"),
        2,
        "head and headless services: {reasons:?}"
    );
    assert!(reasons.iter().any(|r| r == "CreatedIngress"), "{reasons:?}");

    env.clusters().delete(name, &DeleteParams::default()).await.unwrap();
    wait_for("children garbage-collected", || async {
        let gone = ingresses
            .get_opt(&format!("{name}-head-ingress"))
            .await
            .unwrap()
            .is_none()
            && services.get_opt(&format!("{name}-serve-svc")).await.unwrap().is_none()
            && services.get_opt(&format!("{name}-headless")).await.unwrap().is_none()
            && services.get_opt(&format!("{name}-head-svc")).await.unwrap().is_none()
            && secrets.get_opt(name).await.unwrap().is_none()
            && env.pods(name).await.is_empty();
        gone.then_some(())
    })
    .await;
    env.finish();
}

/// The embedded (RocksDB) GCS backend: the operator creates and owns `<cluster>-gcs-pvc`, which
/// the head mounts and which goes with the cluster; a missing user claim is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcs_storage_pvc_for_the_rocksdb_backend() {
    let env = Env::start(
        "gcs-pvc",
        &[],
        &["--feature-gates", "GCSFaultToleranceEmbeddedStorage=true"],
    )
    .await;
    let name = "rocksdb-cluster";
    let mut cluster = sample_cluster(name);
    cluster.spec.gcs_fault_tolerance_options =
        Some(serde_json::from_value(json!({"backend": "rocksdb", "storage": {"size": "2Gi"}})).unwrap());
    env.clusters().create(&PostParams::default(), &cluster).await.unwrap();
    let mut byo = sample_cluster("byo-cluster");
    byo.spec.gcs_fault_tolerance_options =
        Some(serde_json::from_value(json!({"backend": "rocksdb", "storage": {"claimName": "missing-claim"}})).unwrap());
    env.clusters().create(&PostParams::default(), &byo).await.unwrap();

    let pods = env.wait_running(name, 1).await;
    let pvcs: Api<PersistentVolumeClaim> = env.api();
    let pvc = pvcs.get(&format!("{name}-gcs-pvc")).await.unwrap();
    let owner = &pvc.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("RayCluster", name));
    let spec = pvc.spec.as_ref().unwrap();
    assert_eq!(spec.access_modes.as_deref(), Some(&["ReadWriteOnce".to_owned()][..]));
    assert_eq!(
        spec.resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0,
        "2Gi"
    );
    let head = pods.iter().find(|p| node_type(p) == "head").unwrap();
    let claim = head
        .spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find_map(|v| v.persistent_volume_claim.as_ref().map(|c| c.claim_name.clone()));
    assert_eq!(claim, Some(format!("{name}-gcs-pvc")));

    let created = wait_for("CreatedPVC", || env.event("CreatedPVC", "rocksdb-cluster")).await;
    assert_eq!(created.type_.as_deref(), Some("Normal"));
    let missing = wait_for("FailedToCreatePVC", || env.event("FailedToCreatePVC", "byo-cluster")).await;
    assert_eq!(missing.type_.as_deref(), Some("Warning"));
    assert_eq!(missing.action.as_deref(), Some("Validate"));
    assert!(
        missing.note.as_deref().unwrap_or_default().contains("missing-claim"),
        "{missing:?}"
    );
    assert!(
        pvcs.get_opt("byo-cluster-gcs-pvc").await.unwrap().is_none(),
        "no PVC for a user claim"
    );
    // A missing user claim is only reported: the cluster still gets its pods.
    env.wait_running("byo-cluster", 1).await;

    env.clusters().delete(name, &DeleteParams::default()).await.unwrap();
    let pvc_name = format!("{name}-gcs-pvc");
    wait_for("the PVC is garbage-collected", || common::gone(&pvcs, &pvc_name)).await;
    env.finish();
}
