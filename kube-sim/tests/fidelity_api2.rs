//! Fidelity tests F26, F27, F29–F36, F38, F43–F47, F49, F50 (docs/kube-sim.md#how-its-fidelity-is-tested), run
//! with the real kube 5 client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
    WatchEvent, WatchParams,
};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{Controller, conditions, wait::await_condition, watcher};
use kube::{Client, ResourceExt};
use kube_sim::{AgentConfig, FaultConfig, SimConfig, SimHandle, SimServer};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------- helpers

fn crd_path(file: &str) -> PathBuf {
    let p = kuberay_reference::crd_path(file);
    assert!(p.exists(), "missing KubeRay CRD {}", p.display());
    p
}

fn config(with_crd: bool) -> SimConfig {
    SimConfig {
        agents: AgentConfig {
            enabled: false,
            ..AgentConfig::default()
        },
        crd_files: if with_crd {
            vec![crd_path("ray.io_rayclusters.yaml")]
        } else {
            vec![]
        },
        ..SimConfig::default()
    }
}

async fn sim() -> SimHandle {
    SimServer::start(config(true)).await.unwrap()
}

fn rc_resource() -> ApiResource {
    ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: "RayCluster".into(),
        plural: "rayclusters".into(),
    }
}

fn rc_api(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &rc_resource())
}

fn raycluster(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}
            }
        }
    }))
    .unwrap()
}

fn pod(name: &str, labels: Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap()
}

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str, controller: bool, block: bool) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": controller, "blockOwnerDeletion": block})
}

fn owned_pod(name: &str, owners: Vec<Value>) -> Pod {
    let mut p = pod(name, json!({"ray.io/cluster": "rc"}));
    p.metadata.owner_references = Some(serde_json::from_value(Value::Array(owners)).unwrap());
    p
}

async fn within<F: Future>(secs: u64, what: &str, f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("timed out after {secs}s waiting for {what}"))
}

/// Polls `check` every 20 ms until it returns true, at most `secs` seconds.
async fn eventually<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    within(secs, what, async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn expect_api_err<T: std::fmt::Debug>(r: Result<T, kube::Error>, code: u16, reason: &str) -> kube::core::Status {
    let s = api_err(r.expect_err("expected an error"));
    assert_eq!((s.code, s.reason.as_str()), (code, reason), "status: {s:?}");
    s
}

fn rv_of<K: kube::Resource>(o: &K) -> u64 {
    o.meta().resource_version.as_deref().unwrap().parse().unwrap()
}

async fn list_rv<K>(api: &Api<K>) -> String
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

// ---------------------------------------------------------------------------------------------- F26

#[tokio::test]
async fn f26_timeout_seconds_honoured() {
    let sim = sim().await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let rv = list_rv(&pods).await;
    let started = Instant::now();
    let mut stream = pods
        .watch(&WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .boxed();
    let mut events = Vec::new();
    within(5, "the watch to end", async {
        while let Some(ev) = stream.next().await {
            events.push(ev.unwrap());
        }
    })
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    assert!((1.5..=2.5).contains(&elapsed), "watch lasted {elapsed}s");
    assert!(
        matches!(events.last(), Some(WatchEvent::Bookmark(_))),
        "last event should be a bookmark: {events:?}"
    );
}

// ---------------------------------------------------------------------------------------------- F27

#[tokio::test]
async fn f27_selector_transitions() {
    let sim = sim().await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    let mut w = watcher(pods.clone(), watcher::Config::default().labels("app=x")).boxed();
    within(5, "InitDone", async {
        loop {
            if let watcher::Event::InitDone = w.try_next().await.unwrap().unwrap() {
                break;
            }
        }
    })
    .await;
    let created = pods
        .create(&PostParams::default(), &pod("p", json!({"app": "x"})))
        .await
        .unwrap();
    match within(5, "a watcher event", w.try_next()).await.unwrap().unwrap() {
        watcher::Event::Apply(p) => assert_eq!(p.resource_version(), created.resource_version()),
        other => panic!("expected Apply, got {other:?}"),
    }
    let moved = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
        )
        .await
        .unwrap();
    match within(5, "a watcher event", w.try_next()).await.unwrap().unwrap() {
        watcher::Event::Delete(p) => {
            assert_eq!(p.labels().get("app").map(String::as_str), Some("x"), "old labels");
            assert_eq!(p.resource_version(), moved.resource_version(), "new RV");
            assert!(rv_of(&p) > rv_of(&created));
        }
        other => panic!("expected Delete, got {other:?}"),
    }
    let back = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "x"}}})),
        )
        .await
        .unwrap();
    match within(5, "a watcher event", w.try_next()).await.unwrap().unwrap() {
        watcher::Event::Apply(p) => {
            assert_eq!(p.labels().get("app").map(String::as_str), Some("x"));
            assert_eq!(p.resource_version(), back.resource_version());
        }
        other => panic!("expected Apply, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------- F29

#[tokio::test]
async fn f29_label_selector_grammar() {
    let sim = sim().await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    for (name, labels) in [
        ("p-ax", json!({"a": "x"})),
        ("p-ay-b1", json!({"a": "y", "b": "1"})),
        ("p-cd", json!({"c": "d"})),
        ("p-none", json!({})),
    ] {
        pods.create(&PostParams::default(), &pod(name, labels)).await.unwrap();
    }
    let names = |sel: &'static str| {
        let pods = pods.clone();
        async move {
            let mut n: Vec<String> = pods
                .list(&ListParams::default().labels(sel))
                .await
                .unwrap()
                .items
                .iter()
                .map(ResourceExt::name_any)
                .collect();
            n.sort();
            n
        }
    };
    assert_eq!(names("a in (x,y),!b").await, ["p-ax"]);
    assert_eq!(names("c!=d").await, ["p-ax", "p-ay-b1", "p-none"]);
    assert_eq!(names("a notin (x)").await, ["p-ay-b1", "p-cd", "p-none"]);
    expect_api_err(
        pods.list(&ListParams::default().labels("a in (x")).await,
        400,
        "BadRequest",
    );
}

// ---------------------------------------------------------------------------------------------- F30

#[derive(Default)]
struct Counter {
    reconciles: AtomicUsize,
    errors: parking_lot::Mutex<Vec<String>>,
}

async fn count_reconcile(_o: Arc<DynamicObject>, ctx: Arc<Counter>) -> Result<Action, kube::Error> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    Ok(Action::await_change())
}

fn count_error(_o: Arc<DynamicObject>, e: &kube::Error, ctx: Arc<Counter>) -> Action {
    ctx.errors.lock().push(format!("{e:?}"));
    Action::await_change()
}

async fn reconciles_at_least(ctx: &Counter, n: usize, what: &str) {
    eventually(10, what, || async { ctx.reconciles.load(Ordering::SeqCst) >= n }).await;
}

#[tokio::test]
async fn f30_metadata_only_owns() {
    let sim = sim().await;
    let client = sim.client();
    let rcs = rc_api(&client);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let rc = rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    let uid = rc.uid().unwrap();
    pods.create(
        &PostParams::default(),
        &owned_pod(
            "child",
            vec![owner_ref("ray.io/v1", "RayCluster", "rc", &uid, true, true)],
        ),
    )
    .await
    .unwrap();
    let ctx = Arc::new(Counter::default());
    let controller = Controller::new_with(rcs.clone(), watcher::Config::default(), rc_resource())
        .owns(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .run(count_reconcile, count_error, ctx.clone())
        .for_each(|_| async {});
    let task = tokio::spawn(controller);
    reconciles_at_least(&ctx, 1, "the initial reconcile").await;
    let before = ctx.reconciles.load(Ordering::SeqCst);
    pods.patch(
        "child",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    reconciles_at_least(&ctx, before + 1, "the owner to reconcile after the child changed").await;
    task.abort();

    let log = sim.request_log();
    let pod_reqs: Vec<_> = log.iter().filter(|e| e.path == "/api/v1/pods").collect();
    let list = pod_reqs
        .iter()
        .find(|e| !e.query.contains("watch=true"))
        .expect("a pod list");
    assert!(
        list.accept.contains("as=PartialObjectMetadataList"),
        "list accept: {}",
        list.accept
    );
    let watch = pod_reqs
        .iter()
        .find(|e| e.query.contains("watch=true"))
        .expect("a pod watch");
    assert!(
        watch.accept.contains("as=PartialObjectMetadata"),
        "watch accept: {}",
        watch.accept
    );

    // The metadata-only responses themselves, with the exact Accept headers kube sends.
    let raw = |uri: &str, accept: &str| {
        http::Request::get(uri)
            .header("Accept", accept)
            .body(Vec::new())
            .unwrap()
    };
    let list_body: Value = client
        .request(raw(
            "/api/v1/pods",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        ))
        .await
        .unwrap();
    assert_eq!(list_body["kind"], "PartialObjectMetadataList");
    assert_eq!(list_body["apiVersion"], "meta.k8s.io/v1");
    let item = &list_body["items"][0];
    assert_eq!(item["metadata"]["namespace"], "default");
    assert_eq!(item["metadata"]["ownerReferences"][0]["uid"], json!(uid));
    assert!(item.get("spec").is_none());
    let mut stream = client
        .request_events::<kube::core::PartialObjectMeta<Pod>>(raw(
            "/api/v1/pods?watch=true&timeoutSeconds=1&resourceVersion=0",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        ))
        .await
        .unwrap()
        .boxed();
    // A raw look at the first line: kind and contents.
    match within(5, "a metadata watch event", stream.next()).await {
        Some(Ok(WatchEvent::Added(p))) => {
            let types = p.types.clone().unwrap();
            assert_eq!(
                (types.kind.as_str(), types.api_version.as_str()),
                ("PartialObjectMetadata", "meta.k8s.io/v1")
            );
            assert_eq!(p.metadata.namespace.as_deref(), Some("default"));
            assert_eq!(p.metadata.owner_references.unwrap()[0].uid, uid);
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
    assert!(ctx.errors.lock().clone().is_empty());
}

// ---------------------------------------------------------------------------------------------- F31, F32

async fn deleting_raycluster(sim: &SimHandle) -> (Api<DynamicObject>, DynamicObject, DynamicObject) {
    let rcs = rc_api(&sim.client());
    let mut rc = raycluster("rc");
    rc.metadata.finalizers = Some(vec!["x/y".into()]);
    let created = rcs.create(&PostParams::default(), &rc).await.unwrap();
    let res = rcs.delete("rc", &DeleteParams::default()).await.unwrap();
    assert!(res.is_left(), "expected the object back, got {res:?}");
    let deleted = res.left().unwrap();
    (rcs, created, deleted)
}

#[tokio::test]
async fn f31_finalizers_and_deletion() {
    let sim = sim().await;
    let rcs = rc_api(&sim.client());
    let rv = list_rv(&rcs).await;
    let mut events = rcs.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let (rcs, created, deleted) = deleting_raycluster(&sim).await;
    assert!(deleted.metadata.deletion_timestamp.is_some());
    assert_eq!(deleted.metadata.generation, created.metadata.generation.map(|g| g + 1));
    let mut seen = Vec::new();
    let mut next_type = async || loop {
        match within(5, "a watch event", events.next()).await.unwrap().unwrap() {
            WatchEvent::Added(_) => seen.push("ADDED"),
            WatchEvent::Modified(o) => {
                seen.push("MODIFIED");
                return ("MODIFIED", o);
            }
            WatchEvent::Deleted(o) => {
                seen.push("DELETED");
                return ("DELETED", o);
            }
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    };
    let (t, o) = next_type().await;
    assert_eq!(t, "MODIFIED");
    assert!(o.metadata.deletion_timestamp.is_some());
    rcs.patch(
        "rc",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let (t, _) = next_type().await;
    assert_eq!(t, "DELETED");
    expect_api_err(rcs.get("rc").await, 404, "NotFound");
}

#[tokio::test]
async fn f32_no_finalizer_additions_while_deleting() {
    let sim = sim().await;
    let (rcs, _, _) = deleting_raycluster(&sim).await;
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "z/w"}])).unwrap();
    expect_api_err(
        rcs.patch("rc", &PatchParams::default(), &Patch::<()>::Json(patch))
            .await,
        422,
        "Invalid",
    );
    assert_eq!(
        rcs.get("rc").await.unwrap().metadata.finalizers,
        Some(vec!["x/y".to_string()])
    );
}

// ---------------------------------------------------------------------------------------------- F33

#[tokio::test]
async fn f33_delete_preconditions() {
    let sim = sim().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(sim.client());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "cm"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let s = expect_api_err(cms.delete("cm", &dp).await, 409, "Conflict");
    assert!(s.is_conflict());
    assert!(cms.get_opt("cm").await.unwrap().is_some());
}

// ---------------------------------------------------------------------------------------------- F34

/// Creates the RayCluster `rc` and the ConfigMap `other`; returns owner references to them (the RayCluster's
/// as controller).
async fn two_owners(client: &Client) -> (Value, Value) {
    let rc = rc_api(client)
        .create(&PostParams::default(), &raycluster("rc"))
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let other = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "other"}})).unwrap(),
        )
        .await
        .unwrap();
    (
        owner_ref("ray.io/v1", "RayCluster", "rc", &rc.uid().unwrap(), true, true),
        owner_ref("v1", "ConfigMap", "other", &other.uid().unwrap(), false, false),
    )
}

#[tokio::test]
async fn f34_background_gc() {
    let sim = sim().await;
    let client = sim.client();
    let rcs = rc_api(&client);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    let (rc_ref, other_ref) = two_owners(&client).await;
    for i in 0..3 {
        pods.create(
            &PostParams::default(),
            &owned_pod(&format!("p{i}"), vec![rc_ref.clone()]),
        )
        .await
        .unwrap();
    }
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "rc-head-svc", "ownerReferences": [rc_ref]},
        "spec": {"ports": [{"port": 6379}], "selector": {"ray.io/cluster": "rc"}}
    }))
    .unwrap();
    svcs.create(&PostParams::default(), &svc).await.unwrap();
    let mut shared_ref = rc_ref.clone();
    shared_ref["controller"] = json!(false);
    pods.create(
        &PostParams::default(),
        &owned_pod("shared", vec![shared_ref, other_ref]),
    )
    .await
    .unwrap();

    let rv = list_rv(&pods).await;
    let mut pod_events = pods.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    rcs.delete("rc", &DeleteParams::background()).await.unwrap();
    let mut deleted = Vec::new();
    within(2, "3 pod DELETED events within the GC latency", async {
        while deleted.len() < 3 {
            if let WatchEvent::Deleted(p) = pod_events.next().await.unwrap().unwrap() {
                deleted.push(p.name_any());
            }
        }
    })
    .await;
    deleted.sort();
    assert_eq!(deleted, ["p0", "p1", "p2"]);
    eventually(5, "the service to be collected", || async {
        svcs.get_opt("rc-head-svc").await.unwrap().is_none()
    })
    .await;
    eventually(5, "the dangling reference to be removed", || async {
        pods.get("shared").await.unwrap().owner_references().len() == 1
    })
    .await;
    let shared = pods.get("shared").await.unwrap();
    assert_eq!(shared.owner_references()[0].name, "other");
    assert!(shared.metadata.deletion_timestamp.is_none());
}

/// A dependent created after its owner was deleted (a controller's pass racing the deletion) is collected, as kube's
/// garbage collector collects dependents of an absent owner; one with another live owner only loses the dangling
/// reference.
#[tokio::test]
async fn f34_dependents_created_after_their_owner_is_gone_are_collected() {
    let sim = sim().await;
    let client = sim.client();
    let rcs = rc_api(&client);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let (rc_ref, other_ref) = two_owners(&client).await;
    rcs.delete("rc", &DeleteParams::background()).await.unwrap();
    eventually(5, "the RayCluster to be gone", || async {
        rcs.get_opt("rc").await.unwrap().is_none()
    })
    .await;

    pods.create(&PostParams::default(), &owned_pod("late", vec![rc_ref.clone()]))
        .await
        .unwrap();
    let mut shared_ref = rc_ref;
    shared_ref["controller"] = json!(false);
    pods.create(
        &PostParams::default(),
        &owned_pod("late-shared", vec![shared_ref, other_ref]),
    )
    .await
    .unwrap();
    eventually(5, "the late dependent to be collected", || async {
        pods.get_opt("late").await.unwrap().is_none()
    })
    .await;
    eventually(5, "the dangling reference to be removed", || async {
        pods.get("late-shared").await.unwrap().owner_references().len() == 1
    })
    .await;
    let shared = pods.get("late-shared").await.unwrap();
    assert_eq!(shared.owner_references()[0].name, "other");
    assert!(shared.metadata.deletion_timestamp.is_none());
}

// ---------------------------------------------------------------------------------------------- F35

#[tokio::test]
async fn f35_orphan_and_foreground() {
    let sim = sim().await;
    let client = sim.client();
    let rcs = rc_api(&client);
    let pods: Api<Pod> = Api::default_namespaced(client.clone());

    // Orphan.
    let rc = rcs
        .create(&PostParams::default(), &raycluster("orphaner"))
        .await
        .unwrap();
    let r = owner_ref("ray.io/v1", "RayCluster", "orphaner", &rc.uid().unwrap(), true, true);
    pods.create(&PostParams::default(), &owned_pod("orphan-0", vec![r.clone()]))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &owned_pod("orphan-1", vec![r]))
        .await
        .unwrap();
    rcs.delete("orphaner", &DeleteParams::orphan()).await.unwrap();
    eventually(5, "the owner to go away", || async {
        rcs.get_opt("orphaner").await.unwrap().is_none()
    })
    .await;
    for name in ["orphan-0", "orphan-1"] {
        eventually(5, "the owner reference to be removed", || async {
            pods.get(name).await.unwrap().owner_references().is_empty()
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(pods.get_opt("orphan-0").await.unwrap().is_some());

    // Foreground: the owner waits for its blocking dependents.
    let rc = rcs.create(&PostParams::default(), &raycluster("fg")).await.unwrap();
    let r = owner_ref("ray.io/v1", "RayCluster", "fg", &rc.uid().unwrap(), true, true);
    pods.create(&PostParams::default(), &owned_pod("fg-0", vec![r.clone()]))
        .await
        .unwrap();
    let mut held = owned_pod("fg-held", vec![r]);
    held.metadata.finalizers = Some(vec!["test/hold".into()]);
    pods.create(&PostParams::default(), &held).await.unwrap();
    rcs.delete("fg", &DeleteParams::foreground()).await.unwrap();
    eventually(5, "fg-0 to be deleted", || async {
        pods.get_opt("fg-0").await.unwrap().is_none()
    })
    .await;
    eventually(5, "fg-held to be terminating", || async {
        pods.get("fg-held").await.unwrap().metadata.deletion_timestamp.is_some()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let owner = rcs.get("fg").await.unwrap();
    assert!(owner.metadata.deletion_timestamp.is_some());
    assert!(
        owner.finalizers().contains(&"foregroundDeletion".to_string()),
        "{:?}",
        owner.finalizers()
    );
    pods.patch(
        "fg-held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(5, "the foreground owner to go away", || async {
        rcs.get_opt("fg").await.unwrap().is_none()
    })
    .await;
    assert!(pods.get_opt("fg-held").await.unwrap().is_none());
}

// ---------------------------------------------------------------------------------------------- F36

fn job(name: &str, image: &str) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": image}]}}}
    }))
    .unwrap()
}

async fn job_with_running_pod(client: &Client, name: &str) {
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let j = jobs
        .create(&PostParams::default(), &job(name, "busybox"))
        .await
        .unwrap();
    let pod_name = format!("{name}-pod");
    let mut p = owned_pod(
        &pod_name,
        vec![owner_ref("batch/v1", "Job", name, &j.uid().unwrap(), true, true)],
    );
    p.metadata.labels = Some([("job-name".to_string(), name.to_string())].into());
    // Bound and Running (no kubelet runs in these tests, so a delete of it stays graceful).
    p.spec.as_mut().unwrap().node_name = Some("kube-sim-node-0".into());
    pods.create(&PostParams::default(), &p).await.unwrap();
    pods.patch_status(
        &pod_name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn f36_job_default_orphan() {
    let sim = sim().await;
    let client = sim.client();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());

    job_with_running_pod(&client, "j1").await;
    // The exact request `Api::delete(&DeleteParams::default())` sends, so that the response headers are visible.
    let req = kube::core::Request::new(jobs.resource_url())
        .delete("j1", &DeleteParams::default())
        .unwrap();
    let resp = client.send(req.map(kube::client::Body::from)).await.unwrap();
    assert!(resp.status().is_success(), "{:?}", resp.status());
    let warning = resp
        .headers()
        .get("Warning")
        .expect("a Warning header")
        .to_str()
        .unwrap()
        .to_string();
    assert!(warning.contains("child pods are preserved by default"), "{warning}");
    eventually(5, "the job to go away", || async {
        jobs.get_opt("j1").await.unwrap().is_none()
    })
    .await;
    eventually(5, "the pod's owner reference to be removed", || async {
        pods.get("j1-pod").await.unwrap().owner_references().is_empty()
    })
    .await;
    let p = pods.get("j1-pod").await.unwrap();
    assert!(p.metadata.deletion_timestamp.is_none(), "the pod survives");

    job_with_running_pod(&client, "j2").await;
    jobs.delete("j2", &DeleteParams::background()).await.unwrap();
    eventually(5, "the job's pod to be deleted", || async {
        // The GC deleted it: a running pod terminates gracefully (the kubelet would finish it).
        match pods.get_opt("j2-pod").await.unwrap() {
            None => true,
            Some(p) => p.metadata.deletion_timestamp.is_some() && p.metadata.deletion_grace_period_seconds == Some(30),
        }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------- F38

#[tokio::test]
async fn f38_delete_collection() {
    let sim = sim().await;
    let pods: Api<Pod> = Api::default_namespaced(sim.client());
    for i in 0..5 {
        let labels = if i < 2 {
            json!({"app": "x"})
        } else {
            json!({"app": "z"})
        };
        pods.create(&PostParams::default(), &pod(&format!("p{i}"), labels))
            .await
            .unwrap();
    }
    let rv = list_rv(&pods).await;
    let mut events = pods.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let res = pods
        .delete_collection(
            &DeleteParams::default().grace_period(0),
            &ListParams::default().labels("app=x"),
        )
        .await
        .unwrap();
    if res.is_left() {
        let mut n: Vec<_> = res.left().unwrap().items.iter().map(ResourceExt::name_any).collect();
        n.sort();
        assert_eq!(n, ["p0", "p1"]);
    } else {
        let status = res.right().unwrap();
        assert!(status.is_success(), "{status:?}");
    }
    let mut deleted = Vec::new();
    // Collect every event for a while; exactly two DELETED must arrive.
    let _ = tokio::time::timeout(Duration::from_millis(700), async {
        while let Some(ev) = events.next().await {
            if let WatchEvent::Deleted(p) = ev.unwrap() {
                deleted.push(p.name_any());
            }
        }
    })
    .await;
    deleted.sort();
    assert_eq!(deleted, ["p0", "p1"]);
    assert_eq!(pods.list(&ListParams::default()).await.unwrap().items.len(), 3);
}

// ---------------------------------------------------------------------------------------------- F43

#[tokio::test]
async fn f43_crd_lifecycle() {
    let sim = SimServer::start(config(false)).await.unwrap();
    let client = sim.client();
    let rcs = rc_api(&client);
    let s = expect_api_err(rcs.list(&ListParams::default()).await, 404, "NotFound");
    assert_eq!(s.message, "the server could not find the requested resource");

    let text = std::fs::read_to_string(crd_path("ray.io_rayclusters.yaml")).unwrap();
    let doc: Value = serde_saphyr::from_str(&text).unwrap();
    let crd: CustomResourceDefinition = serde_json::from_value(doc).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();
    within(
        5,
        "the CRD to be established",
        await_condition(crds, "rayclusters.ray.io", conditions::is_crd_established()),
    )
    .await
    .unwrap();
    let created = rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
}

// ---------------------------------------------------------------------------------------------- F44

#[tokio::test]
async fn f44_events_recorder() {
    let sim = sim().await;
    let client = sim.client();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "subject"}})).unwrap(),
        )
        .await
        .unwrap();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: cm.metadata.name.clone(),
        namespace: cm.metadata.namespace.clone(),
        uid: cm.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "kube-sim-test".into(),
            instance: None,
        },
    );
    let ev = Event {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("twice".into()),
        action: "Test".into(),
        secondary: None,
    };
    sim.clear_request_log();
    recorder.publish(&ev, &reference).await.unwrap();
    recorder.publish(&ev, &reference).await.unwrap();
    let log = sim.request_log();
    let writes: Vec<_> = log
        .iter()
        .filter(|e| e.path.starts_with("/apis/events.k8s.io/v1/namespaces/default/events"))
        .map(|e| (e.method.as_str(), e.content_type.as_str(), e.status))
        .collect();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert_eq!(writes[0].0, "POST");
    assert_eq!(writes[0].2, 201);
    assert_eq!(
        (writes[1].0, writes[1].1, writes[1].2),
        ("PATCH", "application/merge-patch+json", 200)
    );
    let events: Api<K8sEvent> = Api::default_namespaced(client);
    let stored = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].series.as_ref().map(|s| s.count), Some(2));
}

// ---------------------------------------------------------------------------------------------- F45

#[tokio::test]
async fn f45_lease_semantics() {
    let sim = sim().await;
    let leases: Api<Lease> = Api::default_namespaced(sim.client());
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}
    }))
    .unwrap();
    let first = leases.create(&PostParams::default(), &lease).await.unwrap();
    let mut second = first.clone();
    second.spec.as_mut().unwrap().holder_identity = Some("b".into());
    leases.replace("leader", &PostParams::default(), &second).await.unwrap();
    let mut stale = first.clone();
    stale.spec.as_mut().unwrap().holder_identity = Some("c".into());
    let s = expect_api_err(
        leases.replace("leader", &PostParams::default(), &stale).await,
        409,
        "Conflict",
    );
    assert!(s.is_conflict());
    stale.metadata.resource_version = None;
    expect_api_err(
        leases.replace("leader", &PostParams::default(), &stale).await,
        422,
        "Invalid",
    );
}

// ---------------------------------------------------------------------------------------------- F46

#[tokio::test]
async fn f46_watch_sever_resume() {
    let sim = sim().await;
    let client = sim.client();
    let rcs = rc_api(&client);
    rcs.create(&PostParams::default(), &raycluster("a")).await.unwrap();
    rcs.create(&PostParams::default(), &raycluster("b")).await.unwrap();
    let ctx = Arc::new(Counter::default());
    let task = tokio::spawn(
        Controller::new_with(rcs.clone(), watcher::Config::default(), rc_resource())
            .run(count_reconcile, count_error, ctx.clone())
            .for_each(|_| async {}),
    );
    reconciles_at_least(&ctx, 2, "the initial reconciles").await;
    let changed = rcs
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    reconciles_at_least(&ctx, 3, "the reconcile of the change").await;
    let last_rv = changed.resource_version().unwrap();
    let is_rc = |e: &&kube_sim::http::RequestLogEntry| e.path == "/apis/ray.io/v1/namespaces/default/rayclusters";
    let watches = |log: &[kube_sim::http::RequestLogEntry]| {
        log.iter()
            .filter(is_rc)
            .filter(|e| e.query.contains("watch=true"))
            .count()
    };
    let lists_before = sim
        .request_log()
        .iter()
        .filter(is_rc)
        .filter(|e| !e.query.contains("watch=true"))
        .count();
    let watches_before = watches(&sim.request_log());
    let settled = ctx.reconciles.load(Ordering::SeqCst);

    sim.sever_watches();
    eventually(5, "a re-watch", || async {
        watches(&sim.request_log()) > watches_before
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = sim.request_log();
    let rewatch = log
        .iter()
        .filter(is_rc)
        .filter(|e| e.query.contains("watch=true"))
        .nth(watches_before)
        .unwrap();
    assert!(
        rewatch.query.contains(&format!("resourceVersion={last_rv}&"))
            || rewatch.query.ends_with(&format!("resourceVersion={last_rv}")),
        "re-watch {} should resume at {last_rv}",
        rewatch.query
    );
    let lists_after = log
        .iter()
        .filter(is_rc)
        .filter(|e| !e.query.contains("watch=true"))
        .count();
    assert_eq!(lists_after, lists_before, "no relist");
    assert_eq!(ctx.reconciles.load(Ordering::SeqCst), settled, "no reconcile storm");
    task.abort();
}

// ---------------------------------------------------------------------------------------------- F47

struct PodMaker {
    pods: Api<Pod>,
    attempts: AtomicUsize,
    errors: parking_lot::Mutex<Vec<String>>,
}

async fn make_pod(o: Arc<ConfigMap>, ctx: Arc<PodMaker>) -> Result<Action, kube::Error> {
    ctx.attempts.fetch_add(1, Ordering::SeqCst);
    let name = format!("{}-pod", o.name_any());
    match ctx.pods.create(&PostParams::default(), &pod(&name, json!({}))).await {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(Action::await_change()),
        Err(e) => Err(e),
    }
}

fn pod_maker_error(_o: Arc<ConfigMap>, e: &kube::Error, ctx: Arc<PodMaker>) -> Action {
    let reason = match e {
        kube::Error::Api(s) => s.reason.clone(),
        other => format!("{other:?}"),
    };
    ctx.errors.lock().push(reason);
    Action::requeue(Duration::from_millis(50))
}

#[tokio::test]
async fn f47_injected_errors() {
    let sim = sim().await;
    let client = sim.client();
    sim.set_faults(FaultConfig::parse("error=3x:500@create/pods").unwrap());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "cm"}})).unwrap(),
    )
    .await
    .unwrap();
    let ctx = Arc::new(PodMaker {
        pods: pods.clone(),
        attempts: AtomicUsize::new(0),
        errors: parking_lot::Mutex::default(),
    });
    let task = tokio::spawn(
        Controller::new(cms.clone(), watcher::Config::default())
            .run(make_pod, pod_maker_error, ctx.clone())
            .for_each(|_| async {}),
    );
    eventually(10, "the pod to be created after 3 failures", || async {
        pods.get_opt("cm-pod").await.unwrap().is_some()
    })
    .await;
    task.abort();
    assert_eq!(
        ctx.errors.lock().clone(),
        ["InternalError", "InternalError", "InternalError"]
    );
    assert_eq!(ctx.attempts.load(Ordering::SeqCst), 4);

    // 429 with Retry-After: 1 on one request: kube retries it transparently.
    sim.set_faults(FaultConfig::parse("error=1x:429@get/configmaps").unwrap());
    sim.clear_request_log();
    let started = Instant::now();
    let got = cms.get("cm").await.unwrap();
    assert_eq!(got.name_any(), "cm");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "retried after Retry-After"
    );
    let attempts: Vec<u16> = sim
        .request_log()
        .iter()
        .filter(|e| e.path == "/api/v1/namespaces/default/configmaps/cm")
        .map(|e| e.status)
        .collect();
    assert_eq!(attempts, [429, 200]);
}

// ---------------------------------------------------------------------------------------------- F49

#[tokio::test]
async fn f49_service_account_admission() {
    let sim = sim().await;
    let client = sim.client();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut p = pod("uses-sa", json!({}));
    p.spec.as_mut().unwrap().service_account_name = Some("op-sa".into());
    let s = expect_api_err(pods.create(&PostParams::default(), &p).await, 403, "Forbidden");
    assert!(s.message.contains("op-sa"), "{}", s.message);
    let sas: Api<ServiceAccount> = Api::default_namespaced(client);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "op-sa"}})).unwrap(),
    )
    .await
    .unwrap();
    let created = pods.create(&PostParams::default(), &p).await.unwrap();
    assert_eq!(created.spec.unwrap().service_account_name.as_deref(), Some("op-sa"));
}

// ---------------------------------------------------------------------------------------------- F50

#[tokio::test]
async fn f50_job_template_immutability() {
    let sim = sim().await;
    let jobs: Api<Job> = Api::default_namespaced(sim.client());
    let mut j = jobs
        .create(&PostParams::default(), &job("j", "busybox:1"))
        .await
        .unwrap();
    j.spec.as_mut().unwrap().template.spec.as_mut().unwrap().containers[0].image = Some("busybox:2".into());
    let s = expect_api_err(jobs.replace("j", &PostParams::default(), &j).await, 422, "Invalid");
    assert!(s.message.contains("field is immutable"), "{}", s.message);
}

// ---------------------------------------------------------------------------------------------- OpenAPI v3 (kubectl)

/// kubectl's `--validate=strict` checks that the PATCH operation of a kind declares `fieldValidation`.
#[tokio::test]
async fn openapi_v3_declares_field_validation_for_kubectl() {
    let sim = sim().await;
    let client = sim.client();
    let get = |uri: String| {
        let client = client.clone();
        async move {
            let req = http::Request::get(uri).body(Vec::new()).unwrap();
            client.request::<Value>(req).await.unwrap()
        }
    };
    let root = get("/openapi/v3".into()).await;
    let url = root["paths"]["apis/ray.io/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(url.starts_with("/openapi/v3/apis/ray.io/v1?hash="), "{url}");
    assert!(root["paths"]["api/v1"]["serverRelativeURL"].is_string());
    let doc = get(url).await;
    let patch = &doc["paths"]["/apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "ray.io", "version": "v1", "kind": "RayCluster"})
    );
    let params = patch["parameters"].as_array().unwrap();
    assert!(
        params
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );
    // Unknown group-versions are 404, as upstream.
    let req = http::Request::get("/openapi/v3/apis/nope.io/v1")
        .body(Vec::new())
        .unwrap();
    let s = api_err(client.request::<Value>(req).await.unwrap_err());
    assert_eq!(s.code, 404);
}
