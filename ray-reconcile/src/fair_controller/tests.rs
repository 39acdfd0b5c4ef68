//! [`FairController`] driven with paused time: order, folding, latest reads, limits, requeues, shutdown.

use std::convert::Infallible;
use std::sync::Mutex;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::ObjectMeta;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{WatchStreamExt, reflector};
use tokio::sync::Semaphore;

use super::*;

fn config_map(name: &str, version: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            resource_version: Some(version.to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

fn key(name: &str) -> ObjectRef<ConfigMap> {
    ObjectRef::new(name).within("default")
}

/// Every pass, in order: the object's name and the version it read.
type Passes = Arc<Mutex<Vec<(String, String)>>>;

fn names(passes: &Passes) -> Vec<String> {
    passes
        .lock()
        .expect("no pass panicked")
        .iter()
        .map(|(name, _)| name.clone())
        .collect()
}

/// A store holding `objects`, listed (so passes may start).
fn listed_store(objects: &[ConfigMap]) -> (Store<ConfigMap>, Writer<ConfigMap>) {
    let (reader, mut writer) = reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(object.clone()));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    (reader, writer)
}

/// A pass of 10 ms; `busy-` objects fall due again at once, others on a change only.
async fn record_pass(object: Arc<ConfigMap>, passes: Passes) -> Result<Action, Infallible> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let version = object.metadata.resource_version.clone().unwrap_or_default();
    let busy = name.starts_with("busy-");
    passes.lock().expect("no pass panicked").push((name, version));
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(if busy {
        Action::requeue(Duration::from_millis(1))
    } else {
        Action::await_change()
    })
}

fn no_retry(_: Arc<ConfigMap>, _: &Infallible, _: Passes) -> Action {
    Action::await_change()
}

/// 20 `busy-` objects that requeue themselves at once keep the one slot full; `late` objects (name,
/// version) arrive through the watch 100 ms in, 5 ms apart. The passes of the first 2 s.
async fn passes_with_one_slot(late: &[(&str, &str)]) -> Vec<(String, String)> {
    let (reader, writer) = reflector::store::<ConfigMap>();
    let (events, watch) = mpsc::unbounded::<watcher::Event<ConfigMap>>();
    let send = |event| events.unbounded_send(event).expect("controller listens");
    send(watcher::Event::Init);
    for i in 0..20 {
        send(watcher::Event::InitApply(config_map(&format!("busy-{i:02}"), "1")));
    }
    send(watcher::Event::InitDone);
    let objects = reflector(writer, watch.map(Ok)).applied_objects();
    let passes: Passes = Arc::default();
    let controller = FairController::for_stream(objects, reader, 1)
        .run(record_pass, no_retry, Arc::clone(&passes))
        .for_each(|_| futures::future::ready(()));
    let feed = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for (name, version) in late {
            send(watcher::Event::Apply(config_map(name, version)));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(1900)).await;
    };
    tokio::select! {
        () = controller => {}
        () = feed => {}
    }
    passes.lock().expect("no pass panicked").clone()
}

#[tokio::test(start_paused = true)]
async fn objects_that_fall_due_are_served_in_order_while_others_requeue_themselves() {
    let late = ["late-0", "late-1", "late-2", "late-3", "late-4"].map(|name| (name, "1"));
    let passes = passes_with_one_slot(&late).await;
    let late_passes: Vec<&str> = passes
        .iter()
        .filter(|(name, _)| name.starts_with("late-"))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        late_passes,
        ["late-0", "late-1", "late-2", "late-3", "late-4"],
        "one pass each, in the order they arrived"
    );
    // Passes are 10 ms, so the late objects arrived during the 11th to 13th. The busy objects already
    // waiting then go first, once each; a busy object that falls due later waits behind the late ones.
    let last_late = passes
        .iter()
        .rposition(|(name, _)| name.starts_with("late-"))
        .expect("late");
    assert!(
        last_late <= 13 + 20 + 5,
        "late passes within one round of the busy ones: {passes:?}"
    );
    // The one slot keeps serving everybody.
    let busy_passes = passes.iter().filter(|(name, _)| name.starts_with("busy-")).count();
    assert!(busy_passes > 150, "{busy_passes} busy passes in 2 s of 10 ms passes");
}

#[tokio::test(start_paused = true)]
async fn changes_while_a_pass_waits_make_one_pass_of_the_latest_version() {
    let passes = passes_with_one_slot(&[("late", "1"), ("late", "2"), ("late", "3")]).await;
    let late: Vec<&(String, String)> = passes.iter().filter(|(name, _)| name == "late").collect();
    assert_eq!(late, [&("late".to_owned(), "3".to_owned())], "{passes:?}");
}

/// Passes that wait for `gate` before returning `await_change`, recording the name they read.
fn gated_pass(
    gate: Arc<Semaphore>,
) -> impl FnMut(Arc<ConfigMap>, Passes) -> BoxFuture<'static, Result<Action, Infallible>> {
    move |object, passes| {
        let gate = Arc::clone(&gate);
        async move {
            let name = object.metadata.name.clone().unwrap_or_default();
            let version = object.metadata.resource_version.clone().unwrap_or_default();
            passes.lock().expect("no pass panicked").push((name, version));
            let _open = gate.acquire().await;
            Ok(Action::await_change())
        }
        .boxed()
    }
}

#[tokio::test(start_paused = true)]
async fn a_waiting_object_is_read_when_its_turn_comes_and_a_deleted_one_is_reported_gone() {
    let (reader, mut writer) = listed_store(&[
        config_map("first", "1"),
        config_map("changes", "1"),
        config_map("goes", "1"),
    ]);
    let (refs, triggers) = mpsc::unbounded();
    let gate = Arc::new(Semaphore::new(0));
    let passes: Passes = Arc::default();
    let mut results = FairController::for_stream(futures::stream::pending(), reader, 1)
        .reconcile_on(triggers)
        .run(gated_pass(Arc::clone(&gate)), no_retry, Arc::clone(&passes))
        .boxed();
    for name in ["first", "changes", "goes"] {
        refs.unbounded_send(key(name)).expect("listening");
    }
    let first = tokio::time::timeout(Duration::from_millis(50), results.next()).await;
    assert!(first.is_err(), "the first pass holds the one slot");
    assert_eq!(names(&passes), ["first"]);
    writer.apply_watcher_event(&watcher::Event::Apply(config_map("changes", "2")));
    writer.apply_watcher_event(&watcher::Event::Delete(config_map("goes", "1")));
    gate.add_permits(10);
    let mut reported = Vec::new();
    for _ in 0..3 {
        match results.next().await.expect("running") {
            Ok((object, _)) => reported.push(format!("done {}", object.name)),
            Err(controller::Error::ObjectNotFound(object)) => reported.push(format!("gone {}", object.name)),
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(reported, ["done first", "done changes", "gone goes"]);
    let read = passes.lock().expect("no pass panicked").clone();
    assert_eq!(
        read,
        [
            ("first".to_owned(), "1".to_owned()),
            ("changes".to_owned(), "2".to_owned())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn no_more_passes_run_at_once_than_the_limit_and_none_before_the_store_is_listed() {
    let objects: Vec<ConfigMap> = (0..12).map(|i| config_map(&format!("o{i}"), "1")).collect();
    let (reader, mut writer) = reflector::store::<ConfigMap>();
    let (refs, triggers) = mpsc::unbounded();
    let (running, most) = (Arc::new(Mutex::new(0usize)), Arc::new(Mutex::new(0usize)));
    let (running_in_pass, most_in_pass) = (Arc::clone(&running), Arc::clone(&most));
    let mut results = FairController::for_stream(futures::stream::pending(), reader, 3)
        .reconcile_on(triggers)
        .run(
            move |_: Arc<ConfigMap>, _: Arc<()>| {
                let (running, most) = (Arc::clone(&running_in_pass), Arc::clone(&most_in_pass));
                async move {
                    {
                        let mut now = running.lock().expect("counter");
                        *now += 1;
                        let mut most = most.lock().expect("counter");
                        *most = (*most).max(*now);
                    }
                    tokio::time::sleep(Duration::from_millis(7)).await;
                    *running.lock().expect("counter") -= 1;
                    Ok::<_, Infallible>(Action::await_change())
                }
            },
            |_, _: &Infallible, _| Action::await_change(),
            Arc::new(()),
        )
        .boxed();
    for object in &objects {
        refs.unbounded_send(key(object.metadata.name.as_deref().expect("named")))
            .expect("listening");
    }
    let early = tokio::time::timeout(Duration::from_secs(1), results.next()).await;
    assert!(early.is_err(), "nothing runs before the first list");
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in &objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(object.clone()));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    for _ in 0..12 {
        assert!(matches!(results.next().await, Some(Ok(_))));
    }
    assert_eq!(*most.lock().expect("counter"), 3);
}

#[tokio::test(start_paused = true)]
async fn a_failed_pass_runs_again_when_the_error_policy_says_and_a_success_when_it_asks() {
    let (reader, _writer) = listed_store(&[config_map("fails", "1"), config_map("polls", "1")]);
    let (refs, triggers) = mpsc::unbounded();
    let started = Instant::now();
    let passes: Arc<Mutex<Vec<(String, Duration)>>> = Arc::default();
    let recorded = Arc::clone(&passes);
    let mut results = FairController::for_stream(futures::stream::pending(), reader, 0)
        .reconcile_on(triggers)
        .run(
            move |object: Arc<ConfigMap>, _: Arc<()>| {
                let recorded = Arc::clone(&recorded);
                async move {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    recorded.lock().expect("passes").push((name.clone(), started.elapsed()));
                    if name == "fails" {
                        Err("dashboard unreachable")
                    } else {
                        Ok(Action::requeue(Duration::from_secs(2)))
                    }
                }
            },
            |_, _: &&str, _| Action::requeue(Duration::from_secs(3)),
            Arc::new(()),
        )
        .boxed();
    refs.unbounded_send(key("fails")).expect("listening");
    refs.unbounded_send(key("polls")).expect("listening");
    let mut failures = 0;
    while failures < 3 {
        if let Some(Err(controller::Error::ReconcilerFailed(e, _))) = results.next().await {
            assert_eq!(e, "dashboard unreachable");
            failures += 1;
        }
    }
    let at = |wanted: &str| -> Vec<u64> {
        let passes = passes.lock().expect("passes");
        passes
            .iter()
            .filter(|(name, _)| name == wanted)
            .map(|(_, at)| at.as_secs())
            .collect()
    };
    assert_eq!(at("fails"), [0, 3, 6]);
    assert_eq!(at("polls"), [0, 2, 4, 6]);
}

#[tokio::test(start_paused = true)]
async fn changes_of_owned_objects_trigger_their_owner() {
    let (reader, _writer) = listed_store(&[config_map("owner", "1"), config_map("not-owner", "1")]);
    let (children, changes) = mpsc::unbounded::<Result<Pod, watcher::Error>>();
    let passes: Passes = Arc::default();
    let mut results = FairController::for_stream(futures::stream::pending(), reader, 1)
        .owns_stream(changes)
        .run(record_pass, no_retry, Arc::clone(&passes))
        .boxed();
    let owner_ref = |kind: &str, name: &str| k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "v1".to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: format!("uid-{name}"),
        ..Default::default()
    };
    let child = |owners| Pod {
        metadata: ObjectMeta {
            name: Some("child".to_owned()),
            namespace: Some("default".to_owned()),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    };
    children
        .unbounded_send(Ok(child(vec![owner_ref("Secret", "not-owner")])))
        .expect("listening");
    children
        .unbounded_send(Ok(child(vec![owner_ref("ConfigMap", "owner")])))
        .expect("listening");
    let reported = results.next().await.expect("running").expect("a pass");
    assert_eq!(reported.0, key("owner"));
    let more = tokio::time::timeout(Duration::from_secs(1), results.next()).await;
    assert!(more.is_err(), "no other pass: {more:?}");
    assert_eq!(
        names(&passes),
        ["owner"],
        "owners are matched by kind, not only by name"
    );
}

#[tokio::test(start_paused = true)]
async fn on_shutdown_waiting_objects_are_dropped_and_the_running_pass_finishes() {
    let (reader, _writer) = listed_store(&[config_map("running", "1"), config_map("waiting", "1")]);
    let (refs, triggers) = mpsc::unbounded();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gate = Arc::new(Semaphore::new(0));
    let passes: Passes = Arc::default();
    let mut results = FairController::for_stream(futures::stream::pending(), reader, 1)
        .reconcile_on(triggers)
        .graceful_shutdown_on(async move {
            let _ = stopped.await;
        })
        .run(gated_pass(Arc::clone(&gate)), no_retry, Arc::clone(&passes))
        .boxed();
    refs.unbounded_send(key("running")).expect("listening");
    refs.unbounded_send(key("waiting")).expect("listening");
    let nothing = tokio::time::timeout(Duration::from_millis(50), results.next()).await;
    assert!(nothing.is_err(), "the first pass holds the slot");
    stop.send(()).expect("listening");
    let nothing = tokio::time::timeout(Duration::from_millis(50), results.next()).await;
    assert!(nothing.is_err(), "the running pass is not cut short");
    gate.add_permits(10);
    let last = results.next().await.expect("the running pass reports").expect("a pass");
    assert_eq!(last.0, key("running"));
    assert!(results.next().await.is_none(), "the stream ends after the running pass");
    assert_eq!(names(&passes), ["running"], "the waiting object got no pass");
}

#[tokio::test(start_paused = true)]
async fn triggers_while_a_pass_runs_make_exactly_one_more_pass_after_it() {
    let (reader, _writer) = listed_store(&[config_map("a", "1")]);
    let (refs, triggers) = mpsc::unbounded();
    let gate = Arc::new(Semaphore::new(0));
    let passes: Passes = Arc::default();
    let mut results = FairController::for_stream(futures::stream::pending(), reader, 4)
        .reconcile_on(triggers)
        .run(gated_pass(Arc::clone(&gate)), no_retry, Arc::clone(&passes))
        .boxed();
    refs.unbounded_send(key("a")).expect("listening");
    let nothing = tokio::time::timeout(Duration::from_millis(50), results.next()).await;
    assert!(nothing.is_err(), "the first pass waits for the gate");
    refs.unbounded_send(key("a")).expect("listening");
    refs.unbounded_send(key("a")).expect("listening");
    let nothing = tokio::time::timeout(Duration::from_millis(50), results.next()).await;
    assert!(nothing.is_err(), "no second pass of the object while its first runs");
    assert_eq!(names(&passes), ["a"]);
    gate.add_permits(10);
    for pass in ["first", "second"] {
        let reported = tokio::time::timeout(Duration::from_secs(5), results.next()).await;
        assert!(matches!(reported, Ok(Some(Ok(_)))), "the {pass} pass: {reported:?}");
    }
    let more = tokio::time::timeout(Duration::from_secs(1), results.next()).await;
    assert!(more.is_err(), "two passes in all: {more:?}");
    assert_eq!(names(&passes), ["a", "a"]);
}
