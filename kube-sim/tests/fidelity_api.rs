//! Fidelity tests F01-F25 (docs/kube-sim.md#how-its-fidelity-is-tested): each starts its own in-process kube-sim
//! and drives it with the real kube 5 client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;
use std::path::PathBuf;
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::core::Status;
use kube::runtime::controller::Action;
use kube::runtime::watcher::{self, Event};
use kube_sim::http::RequestLogEntry;
use kube_sim::{AgentConfig, Gvr, SimConfig, SimHandle, SimServer};
use serde_json::json;

/// Upper bound for any single wait in these tests.
const WAIT: Duration = Duration::from_secs(10);

fn raycluster_crd() -> PathBuf {
    let p = kuberay_reference::crd_path("ray.io_rayclusters.yaml");
    assert!(p.exists(), "KubeRay CRD file missing: {}", p.display());
    p
}

fn config() -> SimConfig {
    SimConfig {
        crd_files: vec![raycluster_crd()],
        agents: AgentConfig {
            enabled: false,
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    }
}

async fn sim() -> SimHandle {
    sim_with(config()).await
}

async fn sim_with(config: SimConfig) -> SimHandle {
    tokio::time::timeout(WAIT, SimServer::start(config))
        .await
        .expect("sim start timed out")
        .expect("sim start")
}

fn pods(s: &SimHandle) -> Api<Pod> {
    Api::default_namespaced(s.client())
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap()
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"}
    }))
    .unwrap()
}

fn rc_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"), "rayclusters")
}

fn rayclusters(s: &SimHandle) -> Api<DynamicObject> {
    Api::default_namespaced_with(s.client(), &rc_resource())
}

fn raycluster(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.46.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.46.0"}]}}
            }
        }
    }))
    .unwrap()
}

/// The `Status` of an `Err(kube::Error::Api(..))`; panics on success or on another error.
fn api_err<T: Debug>(r: Result<T, kube::Error>) -> Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn rv_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// Collects items from `stream` until `idle` passes without one (or the stream ends).
async fn drain<S: Stream + Unpin>(stream: &mut S, idle: Duration) -> Vec<S::Item> {
    let mut out = Vec::new();
    while let Ok(Some(item)) = tokio::time::timeout(idle, stream.next()).await {
        out.push(item);
    }
    out
}

fn event_name<K: kube::Resource>(e: &Event<K>) -> String {
    match e {
        Event::Apply(o) => format!("Apply({})", o.meta().name.clone().unwrap_or_default()),
        Event::Delete(o) => format!("Delete({})", o.meta().name.clone().unwrap_or_default()),
        Event::Init => "Init".into(),
        Event::InitApply(o) => format!("InitApply({})", o.meta().name.clone().unwrap_or_default()),
        Event::InitDone => "InitDone".into(),
    }
}

fn is_watch(e: &RequestLogEntry) -> bool {
    e.query.split('&').any(|p| p == "watch=true")
}

fn query_param<'a>(e: &'a RequestLogEntry, key: &str) -> Option<&'a str> {
    e.query.split('&').find_map(|p| p.strip_prefix(key)?.strip_prefix('='))
}

/// GET requests on `path` (lists and watches), in order.
fn gets_on(s: &SimHandle, path: &str) -> Vec<RequestLogEntry> {
    s.request_log()
        .into_iter()
        .filter(|e| e.method == "GET" && e.path == path)
        .collect()
}

const PODS_PATH: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn f01_duplicate_create() {
    let s = sim().await;
    let api = pods(&s);
    api.create(&PostParams::default(), &pod("p")).await.unwrap();
    let st = api_err(api.create(&PostParams::default(), &pod("p")).await);
    assert_eq!(st.code, 409);
    assert_eq!(st.reason, "AlreadyExists");
    assert!(st.is_already_exists());
    assert_eq!(st.message, r#"pods "p" already exists"#);
}

#[tokio::test]
async fn f02_missing_get() {
    let s = sim().await;
    let api = pods(&s);
    let st = api_err(api.get("nope").await);
    assert_eq!(st.code, 404);
    assert_eq!(st.reason, "NotFound");
    assert!(st.is_not_found());
    assert_eq!(st.message, r#"pods "nope" not found"#);
    assert!(api.get_opt("nope").await.unwrap().is_none());
}

#[tokio::test]
async fn f03_missing_namespace() {
    let s = sim().await;
    let api: Api<Pod> = Api::namespaced(s.client(), "ghost");
    let st = api_err(api.create(&PostParams::default(), &pod("p")).await);
    assert_eq!(st.code, 404);
    assert_eq!(st.reason, "NotFound");
    assert!(st.is_not_found());
    let d = st.details.expect("details");
    assert_eq!(d.kind, "namespaces");
    assert_eq!(d.name, "ghost");
    assert_eq!(st.message, r#"namespaces "ghost" not found"#);
}

#[tokio::test]
async fn f04_stale_replace() {
    let s = sim().await;
    let api = pods(&s);
    api.create(&PostParams::default(), &pod("p")).await.unwrap();
    let first = api.get("p").await.unwrap();
    api.patch(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .unwrap();
    let st = api_err(api.replace("p", &PostParams::default(), &first).await);
    assert_eq!(st.code, 409);
    assert_eq!(st.reason, "Conflict");
    assert!(st.is_conflict());
    assert_eq!(
        st.message,
        r#"Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again"#
    );
}

#[tokio::test]
async fn f05_unconditional_update_per_kind() {
    let s = sim().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    cms.create(&PostParams::default(), &configmap("cm")).await.unwrap();
    let mut cm = cms.get("cm").await.unwrap();
    cm.metadata.resource_version = None;
    cm.data = Some([("k".to_string(), "v2".to_string())].into());
    let out = cms.replace("cm", &PostParams::default(), &cm).await.unwrap();
    assert_eq!(out.data.unwrap()["k"], "v2");

    let rcs = rayclusters(&s);
    rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    let mut rc = rcs.get("rc").await.unwrap();
    rc.metadata.resource_version = None;
    rc.data["spec"]["rayVersion"] = json!("2.47.0");
    let st = api_err(rcs.replace("rc", &PostParams::default(), &rc).await);
    assert_eq!(st.code, 422);
    assert_eq!(st.reason, "Invalid");
    assert!(st.is_invalid());
    assert_eq!(
        st.message,
        r#"rayclusters.ray.io "rc" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"#
    );
    let d = st.details.expect("details");
    assert_eq!(
        (d.name.as_str(), d.group.as_str(), d.kind.as_str()),
        ("rc", "ray.io", "rayclusters")
    );
    assert_eq!(d.causes[0].field, "metadata.resourceVersion");
    assert_eq!(d.causes[0].reason, "FieldValueInvalid");
    assert_eq!(rcs.get("rc").await.unwrap().data["spec"]["rayVersion"], "2.46.0");
}

#[tokio::test]
async fn f06_rv_on_create() {
    let s = sim().await;
    let api = pods(&s);
    api.create(&PostParams::default(), &pod("p")).await.unwrap();
    let fetched = api.get("p").await.unwrap();
    assert!(fetched.metadata.resource_version.is_some());
    // As fetched (same name) and under a new name: the storage layer refuses a set resourceVersion first.
    let mut renamed = fetched.clone();
    renamed.metadata.name = Some("p2".into());
    for obj in [fetched, renamed] {
        let st = api_err(api.create(&PostParams::default(), &obj).await);
        assert_eq!(st.code, 500);
        assert_eq!(st.reason, "InternalError");
        assert!(
            st.message
                .contains("resourceVersion should not be set on objects to be created"),
            "{}",
            st.message
        );
    }
    assert!(api.get_opt("p2").await.unwrap().is_none());
}

#[tokio::test]
async fn f07_generate_name() {
    const ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";
    let s = sim().await;
    let api = pods(&s);
    let mut p = pod("");
    p.metadata.name = None;
    p.metadata.generate_name = Some("rc-head-".into());
    let mut names = std::collections::HashSet::new();
    for _ in 0..5 {
        let created = api.create(&PostParams::default(), &p).await.unwrap();
        let name = created.metadata.name.unwrap();
        let suffix = name
            .strip_prefix("rc-head-")
            .unwrap_or_else(|| panic!("bad name {name}"));
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(suffix.chars().all(|c| ALPHABET.contains(c)), "{name}");
        assert!(names.insert(name));
    }

    let prefix: String = std::iter::repeat_n("abcdefghij", 7).collect();
    assert_eq!(prefix.len(), 70);
    p.metadata.generate_name = Some(prefix.clone());
    let created = api.create(&PostParams::default(), &p).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert_eq!(name.len(), 63, "{name}");
    assert_eq!(&name[..58], &prefix[..58]);
    assert!(name[58..].chars().all(|c| ALPHABET.contains(c)), "{name}");
}

#[tokio::test]
async fn f08_name_validation() {
    let s = sim().await;
    let check = |st: Status| {
        assert_eq!(st.code, 422, "{st:?}");
        assert_eq!(st.reason, "Invalid");
        assert!(st.is_invalid());
        let d = st.details.expect("details");
        assert_eq!(d.causes[0].field, "metadata.name", "{d:?}");
        assert_eq!(d.causes[0].reason, "FieldValueInvalid", "{d:?}");
    };
    check(api_err(pods(&s).create(&PostParams::default(), &pod("Bad_Name")).await));

    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"},
        "spec": {"ports": [{"port": 80}]}
    }))
    .unwrap();
    let svcs: Api<Service> = Api::default_namespaced(s.client());
    check(api_err(svcs.create(&PostParams::default(), &svc).await));

    let ns: Namespace =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})).unwrap();
    let nss: Api<Namespace> = Api::all(s.client());
    check(api_err(nss.create(&PostParams::default(), &ns).await));
}

#[tokio::test]
async fn f09_rv_monotonic_and_list_rv() {
    let s = sim().await;
    let pp = PostParams::default();
    let podapi = pods(&s);
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    let secrets: Api<Secret> = Api::default_namespaced(s.client());
    let rcs = rayclusters(&s);
    let mut rvs = Vec::new();
    for i in 0..4 {
        rvs.push(rv_of(
            &podapi.create(&pp, &pod(&format!("p{i}"))).await.unwrap().metadata,
        ));
        rvs.push(rv_of(
            &cms.create(&pp, &configmap(&format!("c{i}"))).await.unwrap().metadata,
        ));
        let secret: Secret = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": format!("s{i}")}, "stringData": {"a": "b"}
        }))
        .unwrap();
        rvs.push(rv_of(&secrets.create(&pp, &secret).await.unwrap().metadata));
        rvs.push(rv_of(
            &rcs.create(&pp, &raycluster(&format!("rc{i}"))).await.unwrap().metadata,
        ));
        let label = Patch::Merge(json!({"metadata": {"labels": {"i": i.to_string()}}}));
        rvs.push(rv_of(
            &cms.patch(&format!("c{i}"), &PatchParams::default(), &label)
                .await
                .unwrap()
                .metadata,
        ));
    }
    assert_eq!(rvs.len(), 20);
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "not strictly increasing: {rvs:?}");

    let lp = ListParams::default();
    let check = |list_rv: Option<String>, items: Vec<u64>| {
        let list_rv: u64 = list_rv.unwrap().parse().unwrap();
        assert!(!items.is_empty());
        assert!(
            items.iter().all(|rv| *rv <= list_rv),
            "list RV {list_rv} < an item RV {items:?}"
        );
        assert!(list_rv >= *rvs.last().unwrap());
    };
    let l = podapi.list(&lp).await.unwrap();
    check(
        l.metadata.resource_version,
        l.items.iter().map(|o| rv_of(&o.metadata)).collect(),
    );
    let l = cms.list(&lp).await.unwrap();
    check(
        l.metadata.resource_version,
        l.items.iter().map(|o| rv_of(&o.metadata)).collect(),
    );
    let l = secrets.list(&lp).await.unwrap();
    check(
        l.metadata.resource_version,
        l.items.iter().map(|o| rv_of(&o.metadata)).collect(),
    );
    let l = rcs.list(&lp).await.unwrap();
    check(
        l.metadata.resource_version,
        l.items.iter().map(|o| rv_of(&o.metadata)).collect(),
    );
}

#[tokio::test]
async fn f10_noop_write() {
    let s = sim().await;
    let rcs = rayclusters(&s);
    let created = rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    let rv0 = created.metadata.resource_version.clone().unwrap();
    let mut stream = rcs.watch(&WatchParams::default(), &rv0).await.unwrap().boxed();

    let patch = Patch::Merge(json!({"status": {"state": "ready", "readyWorkerReplicas": 0}}));
    let first = rcs.patch_status("rc", &PatchParams::default(), &patch).await.unwrap();
    let second = rcs.patch_status("rc", &PatchParams::default(), &patch).await.unwrap();
    assert_ne!(first.metadata.resource_version.as_deref(), Some(rv0.as_str()));
    assert_eq!(first.metadata.resource_version, second.metadata.resource_version);

    let events = drain(&mut stream, Duration::from_millis(500)).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e.as_ref().unwrap() {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        })
        .collect();
    assert_eq!(kinds, ["MODIFIED"]);
}

#[tokio::test]
async fn f11_generation_rules() {
    let s = sim().await;
    let rcs = rayclusters(&s);
    let gen_of = |o: &DynamicObject| o.metadata.generation;
    let created = rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    assert_eq!(gen_of(&created), Some(1));
    let pp = PatchParams::default();
    let o = rcs
        .patch("rc", &pp, &Patch::Merge(json!({"spec": {"rayVersion": "2.47.0"}})))
        .await
        .unwrap();
    assert_eq!(gen_of(&o), Some(2));
    let o = rcs
        .patch_status("rc", &pp, &Patch::Merge(json!({"status": {"state": "ready"}})))
        .await
        .unwrap();
    assert_eq!(gen_of(&o), Some(2));
    assert_eq!(o.data["status"]["state"], "ready");
    let o = rcs
        .patch("rc", &pp, &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})))
        .await
        .unwrap();
    assert_eq!(gen_of(&o), Some(2));
    assert_eq!(rcs.get("rc").await.unwrap().metadata.generation, Some(2));

    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    let cm = cms.create(&PostParams::default(), &configmap("cm")).await.unwrap();
    assert_eq!(cm.metadata.generation, None);
    let cm = cms
        .patch("cm", &pp, &Patch::Merge(json!({"data": {"k": "changed"}})))
        .await
        .unwrap();
    assert_eq!(cm.metadata.generation, None);
    let mut cm = cms.get("cm").await.unwrap();
    cm.data = Some([("z".to_string(), "1".to_string())].into());
    let cm = cms.replace("cm", &PostParams::default(), &cm).await.unwrap();
    assert_eq!(cm.metadata.generation, None);
}

#[tokio::test]
async fn f12_status_splitting() {
    let s = sim().await;
    let rcs = rayclusters(&s);
    let pp = PatchParams::default();
    rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    rcs.patch_status("rc", &pp, &Patch::Merge(json!({"status": {"state": "ready"}})))
        .await
        .unwrap();

    // Main endpoint: the status change is ignored, the spec change is kept.
    let mut rc = rcs.get("rc").await.unwrap();
    rc.data["status"]["state"] = json!("failed");
    rc.data["spec"]["rayVersion"] = json!("2.47.0");
    let out = rcs.replace("rc", &PostParams::default(), &rc).await.unwrap();
    assert_eq!(out.data["status"]["state"], "ready");
    assert_eq!(out.data["spec"]["rayVersion"], "2.47.0");

    // /status: the spec change is ignored, the status change is kept.
    let out = rcs
        .patch_status(
            "rc",
            &pp,
            &Patch::Merge(json!({"spec": {"rayVersion": "9.9.9"}, "status": {"state": "suspended"}})),
        )
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["rayVersion"], "2.47.0");
    assert_eq!(out.data["status"]["state"], "suspended");
    let stored = rcs.get("rc").await.unwrap();
    assert_eq!(stored.data["spec"]["rayVersion"], "2.47.0");
    assert_eq!(stored.data["status"]["state"], "suspended");
}

#[tokio::test]
async fn f13_podgroup_has_no_status() {
    let s = sim().await;
    // Volcano's PodGroup CRD (scheduling.volcano.sh/v1beta1) declares `subresources: {}`.
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "podgroups.scheduling.volcano.sh"},
        "spec": {
            "group": "scheduling.volcano.sh",
            "names": {"kind": "PodGroup", "listKind": "PodGroupList", "plural": "podgroups", "singular": "podgroup", "shortNames": ["pg", "podgroup-v1beta1"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1beta1", "served": true, "storage": true, "subresources": {},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(s.client());
    if s.store().resource(&Gvr::volcano_podgroups()).is_none() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let established = kube::runtime::wait::await_condition(
        crds,
        "podgroups.scheduling.volcano.sh",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    within("PodGroup CRD established", established).await.unwrap();
    let info = s.store().resource(&Gvr::volcano_podgroups()).expect("podgroups served");
    assert!(!info.status_subresource);

    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("scheduling.volcano.sh", "v1beta1", "PodGroup"),
        "podgroups",
    );
    let pgs: Api<DynamicObject> = Api::default_namespaced_with(s.client(), &ar);
    let pg: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "pg"}, "spec": {"minMember": 3, "queue": "default"}
    }))
    .unwrap();
    let created = pgs.create(&PostParams::default(), &pg).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let st = api_err(pgs.get_status("pg").await);
    assert_eq!(st.code, 404);
    assert_eq!(st.reason, "NotFound");
    assert!(st.is_not_found());
    assert_eq!(st.message, "the server could not find the requested resource");

    let out = pgs
        .patch(
            "pg",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(out.data["status"]["phase"], "Running");
    assert_eq!(out.metadata.generation, Some(2));
    assert_eq!(pgs.get("pg").await.unwrap().data["status"]["phase"], "Running");
}

#[tokio::test]
async fn f14_merge_vs_strategic_finalizers() {
    let s = sim().await;
    let api = pods(&s);
    let pp = PatchParams::default();
    let mut p = pod("p");
    p.metadata.finalizers = Some(vec!["b".into()]);
    api.create(&PostParams::default(), &p).await.unwrap();
    let fin = json!({"metadata": {"finalizers": ["a"]}});

    let out = api.patch("p", &pp, &Patch::Merge(fin.clone())).await.unwrap();
    assert_eq!(out.metadata.finalizers, Some(vec!["a".to_string()]));

    let out = api
        .patch("p", &pp, &Patch::Merge(json!({"metadata": {"finalizers": ["b"]}})))
        .await
        .unwrap();
    assert_eq!(out.metadata.finalizers, Some(vec!["b".to_string()]));

    let out = api.patch("p", &pp, &Patch::Strategic(fin.clone())).await.unwrap();
    assert_eq!(out.metadata.finalizers, Some(vec!["b".to_string(), "a".to_string()]));

    let rcs = rayclusters(&s);
    rcs.create(&PostParams::default(), &raycluster("rc")).await.unwrap();
    let st = api_err(rcs.patch("rc", &pp, &Patch::Strategic(fin)).await);
    assert_eq!(st.code, 415);
    assert_eq!(st.reason, "UnsupportedMediaType");
    assert!(
        st.message.starts_with("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
        "{}",
        st.message
    );
    assert_eq!(rcs.get("rc").await.unwrap().metadata.finalizers, None);
}

#[tokio::test]
async fn f15_finalizer_helper() {
    let s = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let obj = api.create(&PostParams::default(), &configmap("cm")).await.unwrap();
    assert!(obj.metadata.finalizers.is_none());
    let action = kube::runtime::finalizer(&api, "x/y", std::sync::Arc::new(obj), |_ev| async {
        Ok::<_, std::io::Error>(Action::await_change())
    });
    let action = within("finalizer()", action).await;
    assert!(action.is_ok(), "{action:?}");
    let stored = api.get("cm").await.unwrap();
    assert_eq!(stored.metadata.finalizers, Some(vec!["x/y".to_string()]));

    let mismatch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/finalizers/0", "value": "other"},
        {"op": "remove", "path": "/metadata/finalizers/0"}
    ]))
    .unwrap();
    let st = api_err(
        api.patch("cm", &PatchParams::default(), &Patch::<()>::Json(mismatch))
            .await,
    );
    assert_eq!(st.code, 422);
    assert_eq!(st.reason, "Invalid");
    assert!(st.is_invalid());
    assert_eq!(
        st.message,
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(
        api.get("cm").await.unwrap().metadata.finalizers,
        Some(vec!["x/y".to_string()])
    );
}

#[tokio::test]
async fn f16_server_side_apply_basics() {
    let s = sim().await;
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"k": "v"}});

    let st = api_err(api.patch("cm", &PatchParams::apply(""), &Patch::Apply(&body)).await);
    assert_eq!(st.code, 422);
    assert_eq!(st.reason, "Invalid");
    assert_eq!(
        st.message,
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
    let d = st.details.expect("details");
    assert_eq!(d.causes[0].field, "fieldManager");
    assert_eq!(d.causes[0].reason, "FieldValueRequired");
    assert!(api.get_opt("cm").await.unwrap().is_none());

    s.clear_request_log();
    let created = api
        .patch("cm", &PatchParams::apply("op").force(), &Patch::Apply(&body))
        .await
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("cm"));
    assert_eq!(created.data.as_ref().unwrap()["k"], "v");
    let log = s.request_log();
    let patch = log.iter().find(|e| e.method == "PATCH").expect("PATCH logged");
    assert_eq!(patch.status, 201);
    assert!(
        patch.content_type.starts_with("application/apply-patch+yaml"),
        "{patch:?}"
    );

    let rv = created.metadata.resource_version.clone().unwrap();
    let mut stream = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let again = api
        .patch("cm", &PatchParams::apply("op").force(), &Patch::Apply(&body))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version.as_deref(), Some(rv.as_str()));
    let events = drain(&mut stream, Duration::from_millis(500)).await;
    assert!(events.is_empty(), "re-apply produced {} event(s)", events.len());
}

#[tokio::test]
async fn f17_ssa_conflict() {
    let s = sim().await;
    let rcs = rayclusters(&s);
    let mut applied = serde_json::to_value(raycluster("rc")).unwrap();
    // A field the schema declares: an unknown one would be pruned before it could conflict.
    applied["spec"]["rayVersion"] = json!("1");
    rcs.patch("rc", &PatchParams::apply("op"), &Patch::Apply(&applied))
        .await
        .unwrap();

    let by_op2 = PatchParams {
        field_manager: Some("op2".into()),
        ..PatchParams::default()
    };
    rcs.patch("rc", &by_op2, &Patch::Merge(json!({"spec": {"rayVersion": "2"}})))
        .await
        .unwrap();

    applied["spec"]["rayVersion"] = json!("3");
    let st = api_err(
        rcs.patch("rc", &PatchParams::apply("op"), &Patch::Apply(&applied))
            .await,
    );
    assert_eq!(st.code, 409);
    assert_eq!(st.reason, "Conflict");
    assert!(st.is_conflict());
    let d = st.details.expect("details");
    assert!(!d.causes.is_empty());
    assert_eq!(d.causes[0].reason, "FieldManagerConflict");
    assert_eq!(d.causes[0].field, ".spec.rayVersion");
    assert!(st.message.contains("op2"), "{}", st.message);
    assert_eq!(rcs.get("rc").await.unwrap().data["spec"]["rayVersion"], "2");

    let out = rcs
        .patch("rc", &PatchParams::apply("op").force(), &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["rayVersion"], "3");
}

#[tokio::test]
async fn f18_patch_with_rv_precondition() {
    let s = sim().await;
    let api = pods(&s);
    let created = api.create(&PostParams::default(), &pod("p")).await.unwrap();
    let stale = created.metadata.resource_version.unwrap();
    api.patch(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"a": "1"}}})),
    )
    .await
    .unwrap();
    let st = api_err(
        api.patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": stale, "labels": {"a": "2"}}})),
        )
        .await,
    );
    assert_eq!(st.code, 409);
    assert_eq!(st.reason, "Conflict");
    assert!(st.is_conflict());
    assert_eq!(api.get("p").await.unwrap().metadata.labels.unwrap()["a"], "1");
}

/// Waits on a `watcher` stream for `InitDone`, returning the events seen (including it).
async fn until_init_done<S>(stream: &mut S) -> Vec<String>
where
    S: Stream<Item = Result<Event<Pod>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    within("InitDone", async {
        loop {
            match stream.next().await {
                Some(Ok(e)) => {
                    let done = matches!(e, Event::InitDone);
                    seen.push(event_name(&e));
                    if done {
                        break;
                    }
                }
                Some(Err(e)) => seen.push(format!("Err({e})")),
                None => panic!("watcher ended"),
            }
        }
    })
    .await;
    seen
}

#[tokio::test]
async fn f19_list_then_watch_continuity() {
    let s = sim().await;
    let api = pods(&s);
    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    let init = until_init_done(&mut w).await;
    assert_eq!(init, ["Init", "InitDone"]);
    let list_rv = s.store().current_rv();
    for i in 0..3 {
        api.create(&PostParams::default(), &pod(&format!("p{i}")))
            .await
            .unwrap();
    }
    let mut events = Vec::new();
    within("3 Apply events", async {
        while events.len() < 3 {
            events.push(event_name(&w.next().await.unwrap().unwrap()));
        }
    })
    .await;
    for e in drain(&mut w, Duration::from_millis(500)).await {
        events.push(event_name(&e.unwrap()));
    }
    assert_eq!(events, ["Apply(p0)", "Apply(p1)", "Apply(p2)"]);

    let gets = gets_on(&s, PODS_PATH);
    assert_eq!(gets.len(), 2, "{gets:#?}");
    assert!(!is_watch(&gets[0]), "{gets:#?}");
    assert_eq!(query_param(&gets[0], "resourceVersion"), None);
    assert!(is_watch(&gets[1]), "{gets:#?}");
    assert_eq!(
        query_param(&gets[1], "resourceVersion"),
        Some(list_rv.to_string().as_str())
    );
}

fn watcher<K>(api: Api<K>, cfg: watcher::Config) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + Debug + Send + 'static,
{
    watcher::watcher(api, cfg)
}

#[tokio::test]
async fn f20_pagination() {
    let s = sim().await;
    let gvr = Gvr::core("configmaps");
    for i in 0..1234 {
        s.store()
            .create(
                &gvr,
                Some("default"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i:04}")}}),
            )
            .unwrap();
    }
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut init_applies = 0;
    let mut names = Vec::new();
    within("InitDone after 1,234 objects", async {
        loop {
            match w.next().await.unwrap().unwrap() {
                Event::Init => names.push("Init".to_string()),
                Event::InitApply(_) => init_applies += 1,
                Event::InitDone => break,
                other => panic!("unexpected {}", event_name(&other)),
            }
        }
    })
    .await;
    assert_eq!(names, ["Init"]);
    assert_eq!(init_applies, 1234);
    let path = "/api/v1/namespaces/default/configmaps";
    let lists: Vec<_> = gets_on(&s, path).into_iter().filter(|e| !is_watch(e)).collect();
    assert_eq!(lists.len(), 3, "{lists:#?}");
    assert_eq!(lists.iter().filter(|e| query_param(e, "continue").is_some()).count(), 2);
    assert!(lists.iter().all(|e| query_param(e, "limit") == Some("500")));
    let list_rv = s.store().current_rv().to_string();
    // Polling the watcher makes it open its watch, from the (first page's) list RV.
    assert!(drain(&mut w, Duration::from_millis(300)).await.is_empty());
    let watches: Vec<_> = gets_on(&s, path).into_iter().filter(is_watch).collect();
    assert_eq!(watches.len(), 1, "{watches:#?}");
    assert_eq!(query_param(&watches[0], "resourceVersion"), Some(list_rv.as_str()));

    // Every page reports the first page's RV, even with writes between pages.
    let first = api.list(&ListParams::default().limit(500)).await.unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();
    assert_eq!(first.items.len(), 500);
    api.create(&PostParams::default(), &configmap("zz-late")).await.unwrap();
    let mut token = first.metadata.continue_.clone();
    let mut total = first.items.len();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = api
            .list(&ListParams::default().limit(500).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(page.metadata.resource_version.as_deref(), Some(rv.as_str()));
        total += page.items.len();
        token = page.metadata.continue_;
    }
    assert!(total >= 1234);
}

#[tokio::test]
async fn f21_expired_continue() {
    let s = sim().await;
    let gvr = Gvr::core("configmaps");
    for i in 0..15 {
        s.store()
            .create(
                &gvr,
                Some("default"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i:02}")}}),
            )
            .unwrap();
    }
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let page = api.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(page.items.len(), 10);
    let token = page
        .metadata
        .continue_
        .clone()
        .filter(|t| !t.is_empty())
        .expect("continue token");
    s.compact();
    let st = api_err(api.list(&ListParams::default().limit(10).continue_token(&token)).await);
    assert_eq!(st.code, 410);
    assert_eq!(st.reason, "Expired");
    let fresh = st.metadata.and_then(|m| m.continue_).expect("metadata.continue");
    assert!(!fresh.is_empty());
    assert_ne!(fresh, token);
    // The fresh token continues after the last key served.
    let rest = api
        .list(&ListParams::default().limit(10).continue_token(&fresh))
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 5);
    assert_eq!(rest.items[0].metadata.name.as_deref(), Some("cm-10"));

    // Tokens also expire with age (etcd's compaction interval, configurable).
    let s = sim_with(SimConfig {
        continue_ttl: Duration::from_millis(200),
        ..config()
    })
    .await;
    for i in 0..3 {
        s.store()
            .create(
                &gvr,
                Some("default"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i:02}")}}),
            )
            .unwrap();
    }
    let api: Api<ConfigMap> = Api::default_namespaced(s.client());
    let page = api.list(&ListParams::default().limit(2)).await.unwrap();
    let token = page
        .metadata
        .continue_
        .clone()
        .filter(|t| !t.is_empty())
        .expect("continue token");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let st = api_err(api.list(&ListParams::default().limit(2).continue_token(&token)).await);
    assert_eq!((st.code, st.reason.as_str()), (410, "Expired"));
    assert!(st.metadata.and_then(|m| m.continue_).is_some_and(|t| !t.is_empty()));
}

#[tokio::test]
async fn f22_watch_too_old() {
    let s = sim().await;
    let api = pods(&s);
    let created = api.create(&PostParams::default(), &pod("p")).await.unwrap();
    let old = created.metadata.resource_version.unwrap();
    for i in 0..3 {
        api.create(&PostParams::default(), &pod(&format!("q{i}")))
            .await
            .unwrap();
    }
    s.compact();
    s.clear_request_log();
    let mut stream = within("watch start", api.watch(&WatchParams::default(), &old))
        .await
        .unwrap()
        .boxed();
    let first = within("first event", stream.next()).await.expect("an event").unwrap();
    match first {
        WatchEvent::Error(st) => {
            assert_eq!(st.code, 410);
            assert_eq!(st.reason, "Expired");
            assert!(
                st.message.starts_with(&format!("too old resource version: {old} (")),
                "{}",
                st.message
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    assert!(within("stream end", stream.next()).await.is_none());
    let watches: Vec<_> = gets_on(&s, PODS_PATH).into_iter().filter(is_watch).collect();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].status, 200);
}

#[tokio::test]
async fn f23_watcher_relists_on_410() {
    let s = sim().await;
    let api = pods(&s);
    for i in 0..2 {
        api.create(&PostParams::default(), &pod(&format!("p{i}")))
            .await
            .unwrap();
    }
    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    let init = until_init_done(&mut w).await;
    assert_eq!(init, ["Init", "InitApply(p0)", "InitApply(p1)", "InitDone"]);
    // Polling the watcher makes it open its watch.
    assert!(drain(&mut w, Duration::from_millis(300)).await.is_empty());
    assert_eq!(gets_on(&s, PODS_PATH).iter().filter(|e| is_watch(e)).count(), 1);
    s.compact();
    s.sever_watches();
    let mut seen = Vec::new();
    within("relist", async {
        loop {
            match w.next().await.unwrap() {
                Ok(e) => {
                    let done = matches!(e, Event::InitDone);
                    seen.push(event_name(&e));
                    if done {
                        break;
                    }
                }
                Err(watcher::Error::WatchError(st)) => seen.push(format!("WatchError({})", st.code)),
                Err(e) => seen.push(format!("Err({e})")),
            }
        }
    })
    .await;
    assert_eq!(
        seen,
        ["WatchError(410)", "Init", "InitApply(p0)", "InitApply(p1)", "InitDone"]
    );
    let lists = gets_on(&s, PODS_PATH).into_iter().filter(|e| !is_watch(e)).count();
    assert_eq!(lists, 2);
}

#[tokio::test]
async fn f24_streaming_list() {
    let s = sim().await;
    let api = pods(&s);
    for i in 0..5 {
        api.create(&PostParams::default(), &pod(&format!("p{i}")))
            .await
            .unwrap();
    }
    s.clear_request_log();
    let mut w = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let seen = until_init_done(&mut w).await;
    assert_eq!(
        seen,
        [
            "Init",
            "InitApply(p0)",
            "InitApply(p1)",
            "InitApply(p2)",
            "InitApply(p3)",
            "InitApply(p4)",
            "InitDone"
        ]
    );
    let gets = gets_on(&s, PODS_PATH);
    assert!(gets.iter().all(is_watch), "{gets:#?}");
    let first = &gets[0];
    assert_eq!(query_param(first, "sendInitialEvents"), Some("true"));
    assert_eq!(query_param(first, "resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(query_param(first, "resourceVersion"), Some("0"));
    assert!(
        first
            .query
            .contains("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0"),
        "{}",
        first.query
    );
}

#[tokio::test]
async fn f25_bookmarks_and_resume() {
    let s = sim_with(SimConfig {
        bookmark_interval: Duration::from_millis(200),
        max_watch_timeout: Duration::from_secs(1),
        ..config()
    })
    .await;
    let api = pods(&s);
    api.create(&PostParams::default(), &pod("p0")).await.unwrap();

    // Raw watch: bookmarks carry apiVersion/kind; the stream ends at the 1 s cap.
    let rv = s.store().current_rv().to_string();
    let started = std::time::Instant::now();
    let raw = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .try_collect::<Vec<_>>();
    let raw = within("raw watch ends", raw).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let bookmarks: Vec<_> = raw
        .iter()
        .filter_map(|e| match e {
            WatchEvent::Bookmark(b) => Some(b),
            _ => None,
        })
        .collect();
    assert!(bookmarks.len() >= 2, "{} bookmark(s)", bookmarks.len());
    for b in &bookmarks {
        assert_eq!(b.types.api_version, "v1");
        assert_eq!(b.types.kind, "Pod");
        assert!(!b.metadata.resource_version.is_empty());
    }

    // Idle watcher: re-watches resume from the newest bookmark RV (advanced by writes to another kind), no relist.
    s.clear_request_log();
    let mut w = watcher(api.clone(), watcher::Config::default()).boxed();
    until_init_done(&mut w).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    cms.create(&PostParams::default(), &configmap("bump")).await.unwrap();
    let newest = s.store().current_rv().to_string();
    let extra = drain(&mut w, Duration::from_secs(3)).await;
    assert!(extra.is_empty(), "idle watcher emitted {} item(s)", extra.len());
    let gets = gets_on(&s, PODS_PATH);
    let lists = gets.iter().filter(|e| !is_watch(e)).count();
    assert_eq!(lists, 1, "{gets:#?}");
    let watches: Vec<_> = gets.iter().filter(|e| is_watch(e)).collect();
    assert!(watches.len() >= 3, "{watches:#?}");
    assert!(
        watches
            .iter()
            .all(|e| query_param(e, "allowWatchBookmarks") == Some("true"))
    );
    let last = watches.last().unwrap();
    assert_eq!(
        query_param(last, "resourceVersion"),
        Some(newest.as_str()),
        "{watches:#?}"
    );
}
