//! Publishing Kubernetes Events (`events.k8s.io/v1`) with a bounded memory of recent ones.
//!
//! An event that repeats (same object, type, reason and action, within six minutes of the last time) is
//! not created again: the existing Event's `series` is bumped, as kube-runtime's `Recorder` and client-go's
//! correlator do. kube-runtime's `Recorder` remembers every event it published for six minutes, each as a
//! whole Event object, and scans all of them on every publish: with 10,000 RayClusters that is tens of
//! thousands of objects (about 6.6 KiB of heap per RayCluster measured with heaptrack) and quadratic work.
//! [`EventRecorder`] publishes the same Events but remembers at most [`EVENT_CACHE_ENTRIES`] series, each
//! as a few names and a count, and forgets the oldest first, as client-go's LRU-bounded correlator does.
//!
//! Controllers do not wait for their events either: [`EventRecorder::enqueue`] hands an event to a background
//! task and returns, as client-go's recorder (and so KubeRay's) does. A pass that creates a service and three
//! pods would otherwise spend half its API round trips on events; with thousands of clusters reconciled one at
//! a time that doubles the time to create them. The task folds the occurrences of a series that wait into one
//! request, holds a new series a quarter of a second for the occurrences right behind its first, and holds a
//! series for a second after each request ([`queue`]): the events of a pass's pod creates (its slow-start
//! rounds) usually cost one request, not one per pod or per round. At most [`EVENT_QUEUE_LENGTH`] series
//! wait in the task and as many events in the channel to it; beyond that new events are dropped with a log
//! line, as client-go drops them.

mod queue;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tracing::{debug, warn};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};

/// How many event series are remembered at most (client-go's event correlator keeps an LRU cache of 4,096).
pub const EVENT_CACHE_ENTRIES: usize = 4_096;

/// How many events may wait to be published (client-go's `maxQueuedEvents`); as many series may wait to be
/// sent besides.
pub const EVENT_QUEUE_LENGTH: usize = 1_000;

/// How many requests for queued events are in flight at once. Each new series is a request of its own, so
/// this bounds how fast new series can go: sixteen RayClusters reconciled at once start about 400 series a
/// second against an API server that then takes tens of milliseconds a request, more than four senders sent,
/// and the queue filled and dropped events.
const EVENT_SENDERS: usize = 16;

/// How long after its last occurrence an event is still folded into its series (kube-runtime's and the
/// events API's six minutes).
pub const EVENT_SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);

/// What makes two events the same series: their type, reason and action and the objects they are about (every
/// field of each reference), written into one string. Thousands of series are remembered, and one allocation per
/// key instead of seven (with an inline copy of the related object's five fields) keeps each small.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SeriesKey(Box<str>);

impl SeriesKey {
    /// The series `event` about `regarding` belongs to.
    fn of(event: &Event, regarding: &ObjectReference) -> Self {
        let mut key = String::with_capacity(128);
        key.push(match event.type_ {
            EventType::Warning => 'W',
            EventType::Normal => 'N',
        });
        push_key_field(&mut key, Some(&event.reason));
        push_key_field(&mut key, Some(&event.action));
        push_key_object(&mut key, Some(regarding));
        push_key_object(&mut key, event.secondary.as_ref());
        Self(key.into_boxed_str())
    }
}

/// Appends one field to a series key so that different fields never give the same key: a NUL separator (no
/// Kubernetes name, reason or action contains one), then `-` for an absent field or `+` and the value.
fn push_key_field(key: &mut String, value: Option<&str>) {
    key.push('\0');
    match value {
        None => key.push('-'),
        Some(value) => {
            key.push('+');
            key.push_str(value);
        }
    }
}

/// Appends an object reference (or its absence) to a series key: its API version, kind, namespace, name and uid.
fn push_key_object(key: &mut String, object: Option<&ObjectReference>) {
    let Some(object) = object else {
        push_key_field(key, None);
        return;
    };
    for field in [
        &object.api_version,
        &object.kind,
        &object.namespace,
        &object.name,
        &object.uid,
    ] {
        push_key_field(key, field.as_deref());
    }
}

/// What is remembered of a published Event: enough to bump its series.
#[derive(Clone, Debug, PartialEq)]
struct SeriesState {
    /// The Event object's namespace and name.
    namespace: String,
    name: String,
    /// Occurrences so far (1 before the series starts).
    count: i32,
    /// When it last occurred.
    last_seen: Timestamp,
    /// Which entry of the eviction order is current for this series.
    generation: u64,
}

/// The remembered series, oldest-first eviction.
#[derive(Debug, Default)]
struct SeriesCache {
    /// The key is shared with `order` rather than copied: an operator creating many clusters keeps thousands of
    /// series.
    entries: HashMap<Arc<SeriesKey>, SeriesState>,
    /// Keys in the order they were last touched, with the generation that touch gave them; entries whose
    /// generation is no longer current are skipped when they reach the front.
    order: VecDeque<(Arc<SeriesKey>, u64)>,
    next_generation: u64,
}

impl SeriesCache {
    /// The series `key` continues at `now`, if it was seen within the window.
    fn current(&mut self, key: &SeriesKey, now: Timestamp) -> Option<&SeriesState> {
        self.expire(now);
        self.entries.get(key)
    }

    /// Remembers that `key`'s Event occurred at `now`.
    fn touch(&mut self, key: SeriesKey, mut state: SeriesState, now: Timestamp) {
        self.next_generation += 1;
        state.generation = self.next_generation;
        // A series seen before keeps its key: `insert` would keep the map's copy and drop this one.
        let key = match self.entries.get_key_value(&key) {
            Some((existing, _)) => Arc::clone(existing),
            None => Arc::new(key),
        };
        self.order.push_back((Arc::clone(&key), state.generation));
        self.entries.insert(key, state);
        while self.entries.len() > EVENT_CACHE_ENTRIES {
            self.pop_oldest();
        }
        self.expire(now);
        // Stale order entries of keys touched again pile up only behind live ones; drop them wholesale
        // when they outnumber the live series.
        if self.order.len() > 2 * EVENT_CACHE_ENTRIES.max(self.entries.len()) {
            let live = &self.entries;
            self.order
                .retain(|(key, generation)| live.get(&**key).is_some_and(|s| s.generation == *generation));
        }
    }

    /// Forgets series whose last occurrence is outside the window, oldest first.
    fn expire(&mut self, now: Timestamp) {
        while let Some((key, generation)) = self.order.front() {
            match self.entries.get(&**key) {
                Some(state) if state.generation == *generation => {
                    if state.last_seen + EVENT_SERIES_WINDOW > now {
                        return;
                    }
                    self.pop_oldest();
                }
                _ => {
                    self.order.pop_front();
                }
            }
        }
    }

    /// Forgets the least recently touched series.
    fn pop_oldest(&mut self) {
        while let Some((key, generation)) = self.order.pop_front() {
            if self.entries.get(&*key).is_some_and(|s| s.generation == generation) {
                self.entries.remove(&*key);
                return;
            }
        }
    }
}

/// An event waiting to be published, and what it is about.
type QueuedEvent = (Event, ObjectReference);

/// Publishes Events for one controller (its `reportingController` and `reportingInstance`).
#[derive(Clone)]
pub struct EventRecorder {
    publisher: Publisher,
    /// The background sender's queue, started by the first [`EventRecorder::enqueue`] (which runs inside the
    /// operator's runtime, unlike construction in tests). The task ends when the last recorder is dropped.
    queue: Arc<OnceLock<mpsc::Sender<QueuedEvent>>>,
}

/// What sends Events and keeps their series.
#[derive(Clone)]
struct Publisher {
    client: kube::Client,
    reporter: Reporter,
    cache: Arc<Mutex<SeriesCache>>,
}

impl EventRecorder {
    /// A recorder reporting as `reporter`.
    pub fn new(client: kube::Client, reporter: Reporter) -> Self {
        Self {
            publisher: Publisher {
                client,
                reporter,
                cache: Arc::default(),
            },
            queue: Arc::default(),
        }
    }

    /// Publishes `event` about `regarding` and waits for the API server: a new Event, or the next occurrence
    /// of its series.
    pub async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        self.publisher.publish(event, regarding).await
    }

    /// Queues `event` about `regarding` to be published in the background and returns at once; false when it
    /// was dropped (the queue is full, or there is no runtime to publish from).
    pub fn enqueue(&self, event: Event, regarding: ObjectReference) -> bool {
        let queue = match self.queue.get() {
            Some(queue) => queue,
            None => {
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    warn!(reason = %event.reason, "no runtime to publish events from; event dropped");
                    return false;
                };
                self.queue.get_or_init(|| {
                    let (sender, receiver) = mpsc::channel(EVENT_QUEUE_LENGTH);
                    runtime.spawn(self.publisher.clone().drain(receiver));
                    sender
                })
            }
        };
        match queue.try_send((event, regarding)) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full((event, regarding))) => {
                warn!(
                    reason = %event.reason,
                    object = regarding.name.as_deref().unwrap_or_default(),
                    "event queue full ({EVENT_QUEUE_LENGTH}); event dropped"
                );
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Series remembered now (for tests and metrics).
    pub fn remembered_series(&self) -> usize {
        self.publisher.lock().entries.len()
    }
}

/// Waits until `at` (forever without one).
async fn linger_over(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Publisher {
    /// Publishes queued events until every recorder is gone, folding the waiting occurrences of a series into
    /// one request and sending at most one request per series at a time, none before a quarter of a second
    /// after its first waiting occurrence and none within a second of the last.
    async fn drain(self, mut receiver: mpsc::Receiver<QueuedEvent>) {
        let mut waiting = queue::SeriesQueue::default();
        let mut sending = FuturesUnordered::new();
        let mut open = true;
        loop {
            // Once every recorder is gone nothing more can fold into a lingering series: send what waits now.
            let now = tokio::time::Instant::now();
            let next_release = waiting.release_lingering(if open { now } else { now + queue::SERIES_LINGER });
            while sending.len() < EVENT_SENDERS
                && let Some((key, occurrences)) = waiting.next()
            {
                let publisher = self.clone();
                sending.push(async move {
                    let queue::Occurrences {
                        event,
                        regarding,
                        count,
                    } = occurrences;
                    if let Err(e) = publisher.publish_occurrences(&event, &regarding, count).await {
                        debug!(error = %e, reason = %event.reason, "failed to publish event");
                    }
                    key
                });
            }
            // A full queue stops taking events from the channel, which then fills and drops new ones.
            let room = waiting.len() < EVENT_QUEUE_LENGTH;
            tokio::select! {
                received = receiver.recv(), if open && room => match received {
                    Some((event, regarding)) => waiting.push(event, regarding, tokio::time::Instant::now()),
                    None => open = false,
                },
                Some(key) = sending.next(), if !sending.is_empty() => waiting.sent(key, tokio::time::Instant::now()),
                () = linger_over(next_release), if next_release.is_some() => {}
                else => break,
            }
        }
    }

    /// Publishes one occurrence of `event` about `regarding`.
    async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        self.publish_occurrences(event, regarding, 1).await
    }

    /// Publishes `occurrences` occurrences of `event` about `regarding` in one request: a new Event (with a
    /// series of that count when there is more than one), or the series of the last one bumped by them.
    async fn publish_occurrences(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        occurrences: u32,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let occurrences = i32::try_from(occurrences.max(1)).unwrap_or(i32::MAX);
        let key = SeriesKey::of(event, regarding);
        let previous = self.lock().current(&key, now).cloned();
        let state = match previous {
            Some(mut series) => {
                series.count = series.count.saturating_add(occurrences);
                series.last_seen = now;
                let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &series.namespace);
                let patch = serde_json::json!({"series": EventSeries {
                    count: series.count,
                    last_observed_time: MicroTime(now),
                }});
                api.patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                series
            }
            None => {
                let object = self.new_event(event, regarding, now, occurrences);
                let namespace = object
                    .metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_owned());
                let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), &namespace);
                api.create(&PostParams::default(), &object).await?;
                SeriesState {
                    namespace,
                    name: object.metadata.name.unwrap_or_default(),
                    count: occurrences,
                    last_seen: now,
                    generation: 0,
                }
            }
        };
        self.lock().touch(key, state, now);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SeriesCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The Event object of a series' first `occurrences` (named `<object>.<time in hex nanoseconds>`, as
    /// kube-runtime names them). More than one is a series from the start (the events API wants a series count
    /// of at least 2).
    fn new_event(&self, event: &Event, regarding: &ObjectReference, now: Timestamp, occurrences: i32) -> K8sEvent {
        let controller = &self.reporter.controller;
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: Some(regarding.namespace.clone().unwrap_or_else(|| "default".to_owned())),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_ref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(self.reporter.instance.clone().unwrap_or_else(|| controller.clone())),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            related: event.secondary.clone(),
            series: (occurrences > 1).then_some(EventSeries {
                count: occurrences,
                last_observed_time: MicroTime(now),
            }),
            ..K8sEvent::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference to the RayCluster `name` of namespace `ns` (also for the queue's tests).
    pub(super) fn reference(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("ray.io/v1".into()),
            kind: Some("RayCluster".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }
    }

    /// A Normal `Create` event with `reason` and `note` (also for the queue's tests).
    pub(super) fn event_with_note(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Create".into(),
            secondary: None,
        }
    }

    fn event(reason: &str) -> Event {
        event_with_note(reason, "")
    }

    fn key(name: &str, reason: &str) -> SeriesKey {
        SeriesKey::of(&event(reason), &reference(name))
    }

    /// What the stand-in API server received: each request's method, when (tokio's clock) and its body.
    type Received = Arc<Mutex<Vec<(http::Method, tokio::time::Instant, serde_json::Value)>>>;

    /// A recorder whose client talks to a stand-in API server that records every request and answers each with
    /// an Event.
    fn recorder_with_stand_in_server() -> (EventRecorder, Received) {
        recorder_with_stand_in_server_taking(std::time::Duration::ZERO)
    }

    /// [`recorder_with_stand_in_server`] whose server takes `delay` to answer each request.
    fn recorder_with_stand_in_server_taking(delay: std::time::Duration) -> (EventRecorder, Received) {
        use http_body_util::BodyExt;
        let received = Received::default();
        let log = Arc::clone(&received);
        let server = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let log = Arc::clone(&log);
            async move {
                tokio::time::sleep(delay).await;
                let method = request.method().clone();
                let body = request.into_body().collect().await?.to_bytes();
                let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                log.lock().unwrap().push((method, tokio::time::Instant::now(), body));
                let event = serde_json::json!({
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": {"name": "a.1", "namespace": "ns"},
                    "eventTime": "2026-12-05T00:00:00.000000Z",
                });
                let response =
                    http::Response::new(http_body_util::Full::new(hyper::body::Bytes::from(event.to_string())));
                Ok::<_, kube::Error>(response)
            }
        });
        let client = kube::Client::new(server, "ns");
        let reporter = Reporter {
            controller: "test-controller".into(),
            instance: None,
        };
        (EventRecorder::new(client, reporter), received)
    }

    /// Waits (on tokio's clock) until the stand-in server has received `count` requests.
    async fn requests(
        received: &Received,
        count: usize,
    ) -> Vec<(http::Method, tokio::time::Instant, serde_json::Value)> {
        for _ in 0..1_000 {
            if received.lock().unwrap().len() >= count {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        received.lock().unwrap().clone()
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_s_occurrences_go_as_one_new_event_and_later_ones_as_one_bump_after_the_linger() {
        let (recorder, received) = recorder_with_stand_in_server();
        let enqueued_at = tokio::time::Instant::now();
        for pod in ["w-1", "w-2", "w-3"] {
            assert!(recorder.enqueue(event_with_note("CreatedWorkerPod", pod), reference("a")));
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        }
        let sent = requests(&received, 1).await;
        let (create, created_at, event) = &sent[0];
        assert_eq!(*create, http::Method::POST);
        assert_eq!(event["note"], "w-1");
        assert_eq!(event["series"]["count"], 3, "{event}");
        assert!(
            *created_at >= enqueued_at + queue::SERIES_GATHER,
            "the first occurrence waited for the rest"
        );
        for pod in ["w-4", "w-5"] {
            assert!(recorder.enqueue(event_with_note("CreatedWorkerPod", pod), reference("a")));
        }
        let sent = requests(&received, 2).await;
        assert_eq!(sent.len(), 2, "{sent:?}");
        let (bump, bumped_at, patch) = &sent[1];
        assert_eq!(*bump, http::Method::PATCH);
        assert_eq!(patch["series"]["count"], 5, "{patch}");
        assert!(
            *bumped_at >= *created_at + queue::SERIES_LINGER,
            "the bump waited out the linger"
        );
        // Nothing else was sent.
        tokio::time::sleep(3 * queue::SERIES_LINGER).await;
        assert_eq!(received.lock().unwrap().len(), 2);
    }

    /// Sixteen concurrent reconciles start about 400 series a second, against an API server then busy enough to
    /// take tens of milliseconds a request. A thousand new series a second against 10 ms a request is the same
    /// load: none may be dropped (with four senders the queue filled within three seconds).
    #[tokio::test(start_paused = true)]
    async fn a_thousand_new_series_a_second_against_a_slow_server_are_all_sent() {
        let (recorder, received) = recorder_with_stand_in_server_taking(std::time::Duration::from_millis(10));
        const EVENTS: usize = 4_000;
        for cluster in 0..EVENTS {
            let name = format!("c-{cluster}");
            assert!(
                recorder.enqueue(event_with_note("CreatedService", &name), reference(&name)),
                "event {cluster} was dropped"
            );
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let sent = requests(&received, EVENTS).await;
        assert_eq!(sent.len(), EVENTS);
        assert!(sent.iter().all(|(method, _, _)| *method == http::Method::POST));
    }

    #[tokio::test(start_paused = true)]
    async fn when_the_last_recorder_goes_what_waits_is_sent_without_lingering() {
        let (recorder, received) = recorder_with_stand_in_server();
        assert!(recorder.enqueue(event_with_note("CreatedWorkerPod", "w-1"), reference("a")));
        let created_at = requests(&received, 1).await[0].1;
        assert!(recorder.enqueue(event_with_note("CreatedWorkerPod", "w-2"), reference("a")));
        drop(recorder);
        let sent = requests(&received, 2).await;
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[1].2["series"]["count"], 2);
        assert!(
            sent[1].1 < created_at + queue::SERIES_LINGER,
            "sent at once, not after the linger"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn when_the_last_recorder_goes_a_gathering_series_is_sent_at_once() {
        let (recorder, received) = recorder_with_stand_in_server();
        let enqueued_at = tokio::time::Instant::now();
        assert!(recorder.enqueue(event_with_note("CreatedWorkerPod", "w-1"), reference("a")));
        assert!(recorder.enqueue(event_with_note("CreatedWorkerPod", "w-2"), reference("a")));
        drop(recorder);
        let sent = requests(&received, 1).await;
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0].2["series"]["count"], 2);
        assert!(
            sent[0].1 < enqueued_at + queue::SERIES_GATHER,
            "sent at once, not after the gather"
        );
    }

    #[test]
    fn series_keys_tell_apart_every_field_of_the_event_and_its_objects() {
        let base = key("a", "Created");
        assert_eq!(base, key("a", "Created"));
        assert_ne!(base, key("b", "Created"));
        assert_ne!(base, key("a", "Deleted"));
        let mut warning = event("Created");
        warning.type_ = EventType::Warning;
        assert_ne!(base, SeriesKey::of(&warning, &reference("a")));
        let mut other_action = event("Created");
        other_action.action = "Delete".into();
        assert_ne!(base, SeriesKey::of(&other_action, &reference("a")));
        let mut related = event("Created");
        related.secondary = Some(reference("b"));
        assert_ne!(base, SeriesKey::of(&related, &reference("a")));
        let mut with_uid = reference("a");
        with_uid.uid = Some("u".into());
        assert_ne!(base, SeriesKey::of(&event("Created"), &with_uid));
        // An absent field and an empty one are different keys.
        let mut empty_uid = reference("a");
        empty_uid.uid = Some(String::new());
        assert_ne!(base, SeriesKey::of(&event("Created"), &empty_uid));
    }

    fn state(count: i32, last_seen: Timestamp) -> SeriesState {
        SeriesState {
            namespace: "ns".into(),
            name: "e".into(),
            count,
            last_seen,
            generation: 0,
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    #[test]
    fn a_repeat_within_the_window_continues_the_series_and_one_after_it_starts_anew() {
        let mut cache = SeriesCache::default();
        cache.touch(key("a", "Created"), state(1, at(0)), at(0));
        assert_eq!(cache.current(&key("a", "Created"), at(359)).map(|s| s.count), Some(1));
        assert!(cache.current(&key("a", "Other"), at(1)).is_none());
        cache.touch(key("a", "Created"), state(2, at(300)), at(300));
        // Six minutes after the last occurrence, not the first.
        assert_eq!(cache.current(&key("a", "Created"), at(659)).map(|s| s.count), Some(2));
        assert!(cache.current(&key("a", "Created"), at(660)).is_none());
        assert!(cache.entries.is_empty() && cache.order.is_empty());
    }

    #[test]
    fn the_cache_never_holds_more_than_its_bound_and_forgets_the_oldest_first() {
        let mut cache = SeriesCache::default();
        let total = EVENT_CACHE_ENTRIES + 100;
        for i in 0..total {
            cache.touch(key(&i.to_string(), "Created"), state(1, at(0)), at(0));
            assert!(cache.entries.len() <= EVENT_CACHE_ENTRIES);
        }
        assert!(cache.current(&key("0", "Created"), at(1)).is_none());
        assert!(cache.current(&key("99", "Created"), at(1)).is_none());
        assert!(cache.current(&key("100", "Created"), at(1)).is_some());
        assert!(
            cache
                .current(&key(&(total - 1).to_string(), "Created"), at(1))
                .is_some()
        );
    }

    #[test]
    fn touching_one_series_many_times_keeps_the_order_bounded_and_the_series_alive() {
        let mut cache = SeriesCache::default();
        cache.touch(key("old", "Created"), state(1, at(0)), at(0));
        for i in 0..(10 * EVENT_CACHE_ENTRIES) {
            cache.touch(key("hot", "Created"), state(i as i32, at(1)), at(1));
            assert!(cache.order.len() <= 2 * EVENT_CACHE_ENTRIES + 1);
        }
        assert_eq!(cache.entries.len(), 2);
        assert!(cache.current(&key("old", "Created"), at(2)).is_some());
    }
}
