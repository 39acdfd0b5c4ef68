//! The events waiting to be published, folded by series.
//!
//! Occurrences of a series that is already waiting are counted into it instead of queued again, and a series
//! whose last occurrences were sent waits until that request is done and [`SERIES_LINGER`] has passed after
//! it. A burst of `CreatedWorkerPod` events for one cluster then usually costs two requests (the Event, then
//! one bump of its series for the rest), not one per pod or per round of creates, and the queue's length is bounded by
//! distinct series rather than by occurrences: under load the recorder sends fewer requests, each counting
//! more occurrences, and drops events only when 1,000 distinct series wait.

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
}

impl SeriesQueue {
    /// Distinct series waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Adds one occurrence of `event` about `regarding`.
    pub fn push(&mut self, event: Event, regarding: ObjectReference) {
        let key = SeriesKey::of(&event, &regarding);
        if let Some(waiting) = self.waiting.get_mut(&key) {
            waiting.count = waiting.count.saturating_add(1);
            return;
        }
        let key = Arc::new(key);
        if !self.sending.contains(&key) {
            self.ready.push_back(Arc::clone(&key));
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

    /// Lets the series whose linger is over at `now` go again, and returns when the next one's is (`None`: no
    /// series lingers).
    pub fn release_lingering(&mut self, now: Instant) -> Option<Instant> {
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

    #[test]
    fn waiting_occurrences_of_a_series_are_folded_and_keep_the_first_note() {
        let mut queue = SeriesQueue::default();
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"));
        queue.push(event("CreatedHeadPod", "h"), cluster("a"));
        queue.push(event("CreatedWorkerPod", "w-2"), cluster("a"));
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("b"));
        queue.push(event("CreatedWorkerPod", "w-3"), cluster("a"));
        assert_eq!(queue.len(), 3);
        assert_eq!(taken(&mut queue), entry("a", "CreatedWorkerPod", "w-1", 3));
        assert_eq!(taken(&mut queue), entry("a", "CreatedHeadPod", "h", 1));
        assert_eq!(taken(&mut queue), entry("b", "CreatedWorkerPod", "w-1", 1));
        assert_eq!(taken(&mut queue), None);
        assert_eq!(queue.len(), 0);
    }

    #[test]
    fn a_series_being_sent_holds_its_new_occurrences_until_the_request_is_done_and_has_lingered() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"));
        let (key, first) = queue.next().unwrap();
        assert_eq!(first.count, 1);
        queue.push(event("CreatedWorkerPod", "w-2"), cluster("a"));
        queue.push(event("CreatedWorkerPod", "w-3"), cluster("a"));
        queue.push(event("CreatedService", "s"), cluster("a"));
        // Only the other series may go while the first request is in flight: a second create of the same
        // series would race the first.
        assert_eq!(taken(&mut queue), entry("a", "CreatedService", "s", 1));
        assert_eq!(taken(&mut queue), None);
        let done = start + Duration::from_millis(5);
        queue.sent(key, done);
        // The next round of creates arrives while the series lingers: it joins the waiting occurrences.
        queue.push(event("CreatedWorkerPod", "w-4"), cluster("a"));
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
        queue.push(event("CreatedWorkerPod", "w-1"), cluster("a"));
        let (key, _) = queue.next().unwrap();
        queue.sent(key, start);
        assert_eq!(queue.release_lingering(start + SERIES_LINGER), None);
        assert_eq!(taken(&mut queue), None);
        // Past its linger, the series' next occurrence goes at once.
        queue.push(event("CreatedWorkerPod", "w-2"), cluster("a"));
        assert_eq!(taken(&mut queue), entry("a", "CreatedWorkerPod", "w-2", 1));
    }

    #[test]
    fn lingering_series_are_released_in_the_order_their_requests_ended() {
        let start = Instant::now();
        let mut queue = SeriesQueue::default();
        for name in ["a", "b"] {
            queue.push(event("CreatedWorkerPod", "w-1"), cluster(name));
        }
        let (first, _) = queue.next().unwrap();
        let (second, _) = queue.next().unwrap();
        queue.sent(first, start);
        queue.sent(second, start + Duration::from_millis(300));
        for name in ["a", "b"] {
            queue.push(event("CreatedWorkerPod", "w-2"), cluster(name));
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
        let mut queue = SeriesQueue::default();
        queue.push(event("Reason", "n"), cluster("a"));
        let mut warning = event("Reason", "w");
        warning.type_ = EventType::Warning;
        queue.push(warning, cluster("a"));
        assert_eq!(queue.len(), 2);
    }
}
