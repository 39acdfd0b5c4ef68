//! The events waiting to be published, folded by series.
//!
//! Occurrences of a series that is already waiting are counted into it instead of queued again. A series'
//! first waiting occurrence waits [`SERIES_GATHER`] before it goes, and a series whose last occurrences were
//! sent waits until that request is done and [`SERIES_LINGER`] has passed after it. A pass's
//! `CreatedWorkerPod` events for one cluster then usually cost one request (a new Event whose series counts
//! them all), not one per pod or per round of creates, and the queue's length is bounded by distinct series
//! rather than by occurrences: under load the recorder sends fewer requests, each counting more occurrences,
//! and drops events only when 1,000 distinct series wait.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::Event;

use super::SeriesKey;

/// How long a series waits after a request for it before its next occurrences go: they are counted into one
/// bump of the series meanwhile. client-go's events library holds a series' later occurrences far longer (it
/// sends them with its six-minutely refresh); a second keeps `kubectl get events` close to current while a
/// pass's rounds of pod creates, milliseconds apart, cost one bump instead of one each.
pub(super) const SERIES_LINGER: Duration = Duration::from_secs(1);

/// How long a series' first waiting occurrence waits before it goes, so that the occurrences right behind it
/// go in the same request. A pass creates a cluster's workers in slow-start rounds milliseconds apart (tens
/// of milliseconds each when the API server is busy): without the wait its first `CreatedWorkerPod` went
/// alone and the rest a linger later, two requests where one does. A quarter of a second is short beside
/// what `kubectl get events` users notice and at most a quarter of the series a second of new ones wait in
/// the queue meanwhile.
pub(super) const SERIES_GATHER: Duration = Duration::from_millis(250);

/// One series' occurrences waiting to be published.
pub(super) struct Occurrences {
    /// The first waiting occurrence (a new Event carries its note).
    pub event: Event,
    /// What it is about.
    pub regarding: ObjectReference,
    /// How many occurrences wait, the first included.
    pub count: u32,
}

/// Series waiting to be published, in the order their first waiting occurrence arrived.
#[derive(Default)]
pub(super) struct SeriesQueue {
    /// Occurrences per series that are waiting.
    waiting: HashMap<Arc<SeriesKey>, Occurrences>,
    /// Waiting series that may be sent now, oldest first.
    ready: VecDeque<Arc<SeriesKey>>,
    /// Series with a request in flight or lingering after one: their new occurrences wait.
    sending: HashSet<Arc<SeriesKey>>,
    /// Series whose request is done, with when they may go again, earliest first (every one lingers as long).
    lingering: VecDeque<(Instant, Arc<SeriesKey>)>,
    /// Waiting series neither sending nor ready yet, with when they may go, earliest first (every one
    /// gathers as long).
    gathering: VecDeque<(Instant, Arc<SeriesKey>)>,
}

impl SeriesQueue {
    /// Distinct series waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Adds one occurrence of `event` about `regarding`, arrived at `now`.
    pub fn push(&mut self, event: Event, regarding: ObjectReference, now: Instant) {
        let key = SeriesKey::of(&event, &regarding);
        if let Some(waiting) = self.waiting.get_mut(&key) {
            waiting.count = waiting.count.saturating_add(1);
            return;
        }
        let key = Arc::new(key);
        // A series sending or lingering goes when its linger ends, which is later than a gather would.
        if !self.sending.contains(&key) {
            self.gathering.push_back((now + SERIES_GATHER, Arc::clone(&key)));
        }
        self.waiting.insert(
            key,
            Occurrences {
                event,
                regarding,
                count: 1,
            },
        );
    }

    /// The oldest series that may be sent now, with its occurrences; it counts as sending until
    /// [`SeriesQueue::sent`].
    pub fn next(&mut self) -> Option<(Arc<SeriesKey>, Occurrences)> {
        while let Some(key) = self.ready.pop_front() {
            if let Some(occurrences) = self.waiting.remove(&key) {
                self.sending.insert(Arc::clone(&key));
                return Some((key, occurrences));
            }
        }
        None
    }

    /// The request for `key` is done at `now` (whatever its outcome): occurrences that arrived meanwhile, and
    /// those that arrive until [`SERIES_LINGER`] later, go together after that.
    pub fn sent(&mut self, key: Arc<SeriesKey>, now: Instant) {
        self.lingering.push_back((now + SERIES_LINGER, key));
    }

    /// Lets the series whose gather or linger is over at `now` go, and returns when the next one's is
    /// (`None`: no series gathers or lingers).
    pub fn release_lingering(&mut self, now: Instant) -> Option<Instant> {
        let next_gathered = self.release_gathered(now);
        let next_lingered = self.release_lingered(now);
        match (next_gathered, next_lingered) {
            (Some(gathered), Some(lingered)) => Some(gathered.min(lingered)),
            (gathered, lingered) => gathered.or(lingered),
        }
    }

    /// Makes the series whose gather is over at `now` ready; when the next one's is.
    fn release_gathered(&mut self, now: Instant) -> Option<Instant> {
        while let Some((until, _)) = self.gathering.front() {
            if *until > now {
                return Some(*until);
            }
            if let Some((_, key)) = self.gathering.pop_front() {
                self.ready.push_back(key);
            }
        }
        None
    }

    /// Lets the series whose linger is over at `now` go again; when the next one's is.
    fn release_lingered(&mut self, now: Instant) -> Option<Instant> {
        while let Some((until, _)) = self.lingering.front() {
            if *until > now {
                return Some(*until);
            }
            if let Some((_, key)) = self.lingering.pop_front() {
                self.sending.remove(&key);
                if self.waiting.contains_key(&key) {
                    self.ready.push_back(key);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{event_with_note as event, reference as cluster};
    use super::*;
    use kube::runtime::events::EventType;

    fn taken(queue: &mut SeriesQueue) -> Option<(String, String, String, u32)> {
        queue.next().map(|(_, o)| {
            (
                o.regarding.name.unwrap_or_default(),
                o.event.reason,
                o.event.note.unwrap_or_default(),
                o.count,
            )
        })
    }

    fn entry(cluster: &str, reason: &str, note: &str, count: u32) -> Option<(String, String, String, u32)> {
        Some((cluster.into(), reason.into(), note.into(), count))
    }

    /// Sends what is ready at `now`, as the recorder's loop does: gathers and lingers over by then are released.
    fn taken_at(queue: &mut SeriesQueue, now: Instant) -> Option<(String, String, String, u32)> {
        queue.release_lingering(now);
        taken(queue)
    }

    #[test]
    fn waiting_occurrences_of_a_series_are_folded_and_keep_the_first_note() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"), start);
        queue.push(event("CreatedHeadPod", "h"), cluster("a"), start);
        queue.push(event("CreatedWorkerPod", "w-2"), cluster("a"), start);
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("b"), start);
        queue.push(event("CreatedWorkerPod", "w-3"), cluster("a"), start);
        assert_eq!(queue.len(), 3);
        let gathered = start + SERIES_GATHER;
        assert_eq!(taken_at(&mut queue, gathered), entry("a", "CreatedWorkerPod", "w-1", 3));
        assert_eq!(taken(&mut queue), entry("a", "CreatedHeadPod", "h", 1));
        assert_eq!(taken(&mut queue), entry("b", "CreatedWorkerPod", "w-1", 1));
        assert_eq!(taken(&mut queue), None);
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn a_new_series_gathers_the_occurrences_right_behind_its_first_into_one_request() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"), start);
        assert_eq!(queue.release_lingering(start), Some(start + SERIES_GATHER));
        assert_eq!(
            taken(&mut queue),
            None,
            "the first occurrence waits for the rest of its pass"
        );
        // A pass's later rounds of creates, milliseconds apart.
        for (pod, after) in [("w-2", 20), ("w-3", 60), ("w-4", 140)] {
            queue.push(
                event("CreatedWorkerPod", pod),
                cluster("a"),
                start + Duration::from_millis(after),
            );
        }
        // A series that starts later gathers from its own first occurrence.
        queue.push(
            event("CreatedService", "s"),
            cluster("a"),
            start + Duration::from_millis(100),
        );
        let almost = start + SERIES_GATHER - Duration::from_millis(1);
        assert_eq!(queue.release_lingering(almost), Some(start + SERIES_GATHER));
        assert_eq!(taken(&mut queue), None);
        assert_eq!(
            taken_at(&mut queue, start + SERIES_GATHER),
            entry("a", "CreatedWorkerPod", "w-1", 4)
        );
        assert_eq!(taken(&mut queue), None);
        assert_eq!(
            queue.release_lingering(start + SERIES_GATHER),
            Some(start + Duration::from_millis(100) + SERIES_GATHER)
        );
        assert_eq!(
            taken_at(&mut queue, start + Duration::from_millis(100) + SERIES_GATHER),
            entry("a", "CreatedService", "s", 1)
        );
    }

    #[test]
    fn a_series_being_sent_holds_its_new_occurrences_until_the_request_is_done_and_has_lingered() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"), start);
        queue.release_lingering(start + SERIES_GATHER);
        let (key, first) = queue.next().unwrap();
        assert_eq!(first.count, 1);
        let later = start + SERIES_GATHER;
        queue.push(event("CreatedWorkerPod", "w-2"), cluster("a"), later);
        queue.push(event("CreatedWorkerPod", "w-3"), cluster("a"), later);
        queue.push(event("CreatedService", "s"), cluster("a"), later);
        // Only the other series may go while the first request is in flight: a second create of the same
        // series would race the first.
        assert_eq!(
            taken_at(&mut queue, later + SERIES_GATHER),
            entry("a", "CreatedService", "s", 1)
        );
        assert_eq!(taken(&mut queue), None);
        let done = later + SERIES_GATHER + Duration::from_millis(5);
        queue.sent(key, done);
        // The next round of creates arrives while the series lingers: it joins the waiting occurrences.
        queue.push(event("CreatedWorkerPod", "w-4"), cluster("a"), done);
        assert_eq!(queue.release_lingering(done), Some(done + SERIES_LINGER));
        assert_eq!(taken(&mut queue), None);
        assert_eq!(
            queue.release_lingering(done + SERIES_LINGER - Duration::from_millis(1)),
            Some(done + SERIES_LINGER)
        );
        assert_eq!(taken(&mut queue), None);
        assert_eq!(queue.release_lingering(done + SERIES_LINGER), None);
        assert_eq!(taken(&mut queue), entry("a", "CreatedWorkerPod", "w-2", 3));
        assert_eq!(taken(&mut queue), None);
    }

    #[test]
    fn a_series_sent_with_nothing_new_is_not_queued_again() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"), start);
        let (key, _) = {
            queue.release_lingering(start + SERIES_GATHER);
            queue.next().unwrap()
        };
        let done = start + SERIES_GATHER;
        queue.sent(key, done);
        assert_eq!(queue.release_lingering(done + SERIES_LINGER), None);
        assert_eq!(taken(&mut queue), None);
        // Past its linger, the series' next occurrence starts a gather of its own.
        let next = done + SERIES_LINGER;
        queue.push(event("CreatedWorkerPod", "w-2"), cluster("a"), next);
        assert_eq!(taken_at(&mut queue, next), None);
        assert_eq!(
            taken_at(&mut queue, next + SERIES_GATHER),
            entry("a", "CreatedWorkerPod", "w-2", 1)
        );
    }

    #[test]
    fn lingering_series_are_released_in_the_order_their_requests_ended() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        for name in ["a", "b"] {
            queue.push(event("CreatedWorkerPod", "w-1"), cluster(name), start);
        }
        queue.release_lingering(start + SERIES_GATHER);
        let (first, _) = queue.next().unwrap();
        let (second, _) = queue.next().unwrap();
        queue.sent(first, start);
        queue.sent(second, start + Duration::from_millis(300));
        for name in ["a", "b"] {
            queue.push(event("CreatedWorkerPod", "w-2"), cluster(name), start);
        }
        let between = start + SERIES_LINGER + Duration::from_millis(100);
        assert_eq!(
            queue.release_lingering(between),
            Some(start + Duration::from_millis(300) + SERIES_LINGER)
        );
        assert_eq!(taken(&mut queue), entry("a", "CreatedWorkerPod", "w-2", 1));
        assert_eq!(taken(&mut queue), None);
        assert_eq!(queue.release_lingering(start + 2 * SERIES_LINGER), None);
        assert_eq!(taken(&mut queue), entry("b", "CreatedWorkerPod", "w-2", 1));
    }

    #[test]
    fn warnings_and_normal_events_of_one_reason_are_separate_series() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        queue.push(event("Reason", "n"), cluster("a"), start);
        let mut warning = event("Reason", "w");
        warning.type_ = EventType::Warning;
        queue.push(warning, cluster("a"), start);
        assert_eq!(queue.len(), 2);
    }
}
