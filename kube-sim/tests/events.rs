//! Events are one storage served as core `v1` and as `events.k8s.io/v1`: what kube's `Recorder` writes through
//! events.k8s.io shows as core Events (what `kubectl get events` / `kubectl describe` read), and the reverse.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference, Pod};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Resource, ResourceExt};
use kube_sim::{AgentConfig, SimConfig, SimHandle, SimServer};
use serde_json::json;

/// Upper bound for any single wait in these tests.
const WAIT: Duration = Duration::from_secs(10);
/// The controller name the recorder reports as.
const CONTROLLER: &str = "kuberay-operator";
/// The instance name the recorder reports as.
const INSTANCE: &str = "kuberay-operator-0";

async fn sim() -> SimHandle {
    let config = SimConfig {
        agents: AgentConfig {
            enabled: false,
            ..AgentConfig::default()
        },
        ..SimConfig::default()
    };
    tokio::time::timeout(WAIT, SimServer::start(config))
        .await
        .expect("sim start timed out")
        .expect("sim start")
}

/// Creates a pod and returns its object reference (with the server-assigned uid).
async fn pod_ref(s: &SimHandle, name: &str) -> ObjectReference {
    let pods: Api<Pod> = Api::default_namespaced(s.client());
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    assert!(created.uid().is_some());
    created.object_ref(&())
}

fn recorder(s: &SimHandle) -> Recorder {
    Recorder::new(
        s.client(),
        Reporter {
            controller: CONTROLLER.into(),
            instance: Some(INSTANCE.into()),
        },
    )
}

fn started(note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: "FailedToCreate".into(),
        note: Some(note.into()),
        action: "Reconcile".into(),
        secondary: None,
    }
}

/// The field selector `kubectl describe` sends for an object's events.
fn describe_selector(r: &ObjectReference) -> String {
    format!(
        "involvedObject.name={},involvedObject.namespace={},involvedObject.kind={},involvedObject.uid={}",
        r.name.as_deref().unwrap(),
        r.namespace.as_deref().unwrap(),
        r.kind.as_deref().unwrap(),
        r.uid.as_deref().unwrap()
    )
}

#[tokio::test]
async fn recorder_event_is_listed_as_core_event_by_involved_object() {
    let s = sim().await;
    let pod = pod_ref(&s, "p1").await;
    let other = pod_ref(&s, "p2").await;
    recorder(&s).publish(&started("cannot create"), &pod).await.unwrap();

    let core: Api<CoreEvent> = Api::default_namespaced(s.client());
    let listed = core
        .list(&ListParams::default().fields(&describe_selector(&pod)))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1, "{listed:?}");
    let e = &listed.items[0];
    assert_eq!(e.involved_object.uid, pod.uid);
    assert_eq!(e.involved_object.kind.as_deref(), Some("Pod"));
    assert_eq!(e.message.as_deref(), Some("cannot create"));
    assert_eq!(e.reason.as_deref(), Some("FailedToCreate"));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.action.as_deref(), Some("Reconcile"));
    assert_eq!(e.reporting_component.as_deref(), Some(CONTROLLER));
    assert_eq!(e.reporting_instance.as_deref(), Some(INSTANCE));
    assert!(e.event_time.is_some());
    assert!(e.series.is_none());

    // The same event is one object: same name, uid and resourceVersion in both versions.
    let v1: Api<EventsV1Event> = Api::default_namespaced(s.client());
    let same = v1.get(&e.name_any()).await.unwrap();
    assert_eq!(same.uid(), e.uid());
    assert_eq!(same.resource_version(), e.resource_version());
    assert_eq!(same.note.as_deref(), Some("cannot create"));

    // Selectors that do not match the event.
    for selector in [
        describe_selector(&other),
        "involvedObject.kind=Service".to_string(),
        "reason=Other".to_string(),
    ] {
        let none = core.list(&ListParams::default().fields(&selector)).await.unwrap();
        assert!(none.items.is_empty(), "{selector}: {none:?}");
    }
    // Upstream's other core Event field labels.
    let by_component = core
        .list(&ListParams::default().fields(&format!("reportingComponent={CONTROLLER},type=Warning")))
        .await
        .unwrap();
    assert_eq!(by_component.items.len(), 1);
    // `source` falls back to the reporting controller when there is no `source.component`.
    let by_source = core
        .list(&ListParams::default().fields(&format!("source={CONTROLLER}")))
        .await
        .unwrap();
    assert_eq!(by_source.items.len(), 1);
    // All namespaces, as `kubectl get events -A` lists.
    let all: Api<CoreEvent> = Api::all(s.client());
    assert_eq!(all.list(&ListParams::default()).await.unwrap().items.len(), 1);
}

#[tokio::test]
async fn core_event_is_listed_as_events_v1_by_regarding() {
    let s = sim().await;
    let pod = pod_ref(&s, "p1").await;
    let core: Api<CoreEvent> = Api::default_namespaced(s.client());
    let event: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "p1.legacy"},
        "involvedObject": pod,
        "message": "Pulled image",
        "reason": "Pulled",
        "type": "Normal",
        "count": 3,
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-11-22T10:00:00Z",
        "lastTimestamp": "2026-11-22T10:05:00Z",
    }))
    .unwrap();
    core.create(&PostParams::default(), &event).await.unwrap();

    let v1: Api<EventsV1Event> = Api::default_namespaced(s.client());
    let selector = format!(
        "regarding.name=p1,regarding.kind=Pod,regarding.uid={}",
        pod.uid.as_deref().unwrap()
    );
    let listed = v1.list(&ListParams::default().fields(&selector)).await.unwrap();
    assert_eq!(listed.items.len(), 1, "{listed:?}");
    let e = &listed.items[0];
    assert_eq!(e.regarding.as_ref().and_then(|r| r.uid.clone()), pod.uid);
    assert_eq!(e.note.as_deref(), Some("Pulled image"));
    assert_eq!(e.reason.as_deref(), Some("Pulled"));
    assert_eq!(e.deprecated_count, Some(3));
    let source = e.deprecated_source.as_ref().unwrap();
    assert_eq!(source.component.as_deref(), Some("kubelet"));
    assert_eq!(source.host.as_deref(), Some("node-1"));
    assert!(e.deprecated_first_timestamp.is_some());
    assert!(e.deprecated_last_timestamp.is_some());

    let by_source = v1.list(&ListParams::default().fields("source=kubelet")).await.unwrap();
    assert_eq!(by_source.items.len(), 1);
    let none = v1
        .list(&ListParams::default().fields("regarding.name=p2"))
        .await
        .unwrap();
    assert!(none.items.is_empty());
    // events.k8s.io has no `involvedObject`.
    let err = v1
        .list(&ListParams::default().fields("involvedObject.name=p1"))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 400), "{err:?}");

    // Errors name the events.k8s.io resource; deletes through either version remove the one object.
    let err = v1.get("missing").await.unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 404);
            assert_eq!(status.message, "events.events.k8s.io \"missing\" not found");
        }
        other => panic!("unexpected {other:?}"),
    }
    v1.delete("p1.legacy", &DeleteParams::default()).await.unwrap();
    assert!(core.list(&ListParams::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn watches_see_recorder_events_in_both_versions() {
    let s = sim().await;
    let pod = pod_ref(&s, "p1").await;
    let core: Api<CoreEvent> = Api::default_namespaced(s.client());
    let v1: Api<EventsV1Event> = Api::default_namespaced(s.client());
    let core_watch = core
        .watch(&WatchParams::default().fields(&describe_selector(&pod)), "0")
        .await
        .unwrap();
    let v1_watch = v1
        .watch(&WatchParams::default().fields("regarding.name=p1"), "0")
        .await
        .unwrap();
    let mut core_watch = core_watch.boxed();
    let mut v1_watch = v1_watch.boxed();

    let recorder = recorder(&s);
    recorder.publish(&started("first"), &pod).await.unwrap();
    recorder.publish(&started("first"), &pod).await.unwrap();

    let next = |e: Option<Result<WatchEvent<CoreEvent>, kube::Error>>| e.expect("core watch ended").unwrap();
    match next(
        tokio::time::timeout(WAIT, core_watch.try_next())
            .await
            .unwrap()
            .transpose(),
    ) {
        WatchEvent::Added(e) => {
            assert_eq!(e.message.as_deref(), Some("first"));
            assert_eq!(e.involved_object.name.as_deref(), Some("p1"));
        }
        other => panic!("unexpected {other:?}"),
    }
    match next(
        tokio::time::timeout(WAIT, core_watch.try_next())
            .await
            .unwrap()
            .transpose(),
    ) {
        WatchEvent::Modified(e) => assert_eq!(e.series.and_then(|s| s.count), Some(2)),
        other => panic!("unexpected {other:?}"),
    }
    let next_v1 = |e: Option<Result<WatchEvent<EventsV1Event>, kube::Error>>| e.expect("v1 watch ended").unwrap();
    match next_v1(
        tokio::time::timeout(WAIT, v1_watch.try_next())
            .await
            .unwrap()
            .transpose(),
    ) {
        WatchEvent::Added(e) => {
            assert_eq!(e.note.as_deref(), Some("first"));
            assert_eq!(e.reporting_controller.as_deref(), Some(CONTROLLER));
        }
        other => panic!("unexpected {other:?}"),
    }
    match next_v1(
        tokio::time::timeout(WAIT, v1_watch.try_next())
            .await
            .unwrap()
            .transpose(),
    ) {
        WatchEvent::Modified(e) => assert_eq!(e.series.map(|s| s.count), Some(2)),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn repeated_recorder_publish_shows_as_series_count_in_core() {
    let s = sim().await;
    let pod = pod_ref(&s, "p1").await;
    let recorder = recorder(&s);
    for _ in 0..3 {
        recorder.publish(&started("again"), &pod).await.unwrap();
    }
    let core: Api<CoreEvent> = Api::default_namespaced(s.client());
    let listed = core
        .list(&ListParams::default().fields(&describe_selector(&pod)))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1, "the series patches the one event: {listed:?}");
    let e = &listed.items[0];
    let series = e.series.as_ref().unwrap();
    assert_eq!(series.count, Some(3));
    assert!(series.last_observed_time.as_ref().unwrap().0 >= e.event_time.as_ref().unwrap().0);
    assert_eq!(e.message.as_deref(), Some("again"));
    // Upstream's conversion leaves the legacy `count` alone; readers (kubectl describe) use `series`.
    assert_eq!(e.count, None);

    // A core update is seen through events.k8s.io, and a merge patch through events.k8s.io in core.
    let mut edited = e.clone();
    edited.message = Some("edited".into());
    core.replace(&e.name_any(), &PostParams::default(), &edited)
        .await
        .unwrap();
    let v1: Api<EventsV1Event> = Api::default_namespaced(s.client());
    assert_eq!(v1.get(&e.name_any()).await.unwrap().note.as_deref(), Some("edited"));
    v1.patch(
        &e.name_any(),
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"apiVersion": "events.k8s.io/v1", "note": "patched", "deprecatedCount": 7})),
    )
    .await
    .unwrap();
    let after = core.get(&e.name_any()).await.unwrap();
    assert_eq!(after.message.as_deref(), Some("patched"));
    assert_eq!(after.count, Some(7));
}
