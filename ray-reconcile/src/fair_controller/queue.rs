//! The work queue behind [`super::FairController`]: which object's pass starts next, and when objects fall
//! due again. Pure bookkeeping (the caller passes the clock), so its rules are tested without a runtime.
//!
//! The rules are controller-runtime's work queue, which KubeRay's `--reconcile-concurrency` is measured
//! against, with kube-runtime's "the earliest request wins" for timed requeues:
//! - objects start in the order they fell due (FIFO), one pass per object at a time;
//! - a trigger for an object already waiting is folded into that pass, which has read nothing yet;
//! - a trigger for an object whose pass runs makes one more pass after it (the running pass may have read
//!   before the change);
//! - an object waits for at most one timer, the earliest asked for; a trigger now replaces it, as the pass
//!   it causes asks for its own next requeue.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;

/// Objects waiting for a pass, running, or waiting for a timer. `T` is the object key; `I` the clock's
/// instant type.
#[derive(Debug)]
pub(super) struct WorkQueue<T, I> {
    /// Objects due now, in the order they fell due.
    due: VecDeque<T>,
    /// The members of `due`.
    queued: HashSet<T>,
    /// Objects whose pass runs.
    running: HashSet<T>,
    /// Running objects triggered again while their pass ran.
    again: HashSet<T>,
    /// Timers by (instant, sequence), the sequence keeping equal instants in the order they were set.
    timers: BTreeMap<(I, u64), T>,
    /// Each waiting object's timer.
    timer_of: HashMap<T, (I, u64)>,
    next_sequence: u64,
}

impl<T, I> Default for WorkQueue<T, I> {
    fn default() -> Self {
        Self {
            due: VecDeque::new(),
            queued: HashSet::new(),
            running: HashSet::new(),
            again: HashSet::new(),
            timers: BTreeMap::new(),
            timer_of: HashMap::new(),
            next_sequence: 0,
        }
    }
}

impl<T, I> WorkQueue<T, I>
where
    T: Clone + Eq + Hash,
    I: Copy + Ord,
{
    /// `key` is due now.
    pub(super) fn trigger(&mut self, key: T) {
        if self.running.contains(&key) {
            self.again.insert(key);
            return;
        }
        if self.queued.contains(&key) {
            return;
        }
        self.cancel_timer(&key);
        self.queued.insert(key.clone());
        self.due.push_back(key);
    }

    /// `key` falls due at `at`, unless it is due sooner already.
    pub(super) fn trigger_at(&mut self, key: T, at: I) {
        if self.queued.contains(&key) || self.again.contains(&key) {
            return;
        }
        if let Some(&(current, _)) = self.timer_of.get(&key) {
            if current <= at {
                return;
            }
            self.cancel_timer(&key);
        }
        let slot = (at, self.next_sequence);
        self.next_sequence += 1;
        self.timers.insert(slot, key.clone());
        self.timer_of.insert(key, slot);
    }

    /// Moves every object whose timer expired at `now` to the due queue, earliest first.
    pub(super) fn expire_timers(&mut self, now: I) {
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            self.timer_of.remove(&key);
            self.trigger(key);
        }
    }

    /// When the next timer expires.
    pub(super) fn next_timer(&self) -> Option<I> {
        self.timers.first_key_value().map(|(&(at, _), _)| at)
    }

    /// The next object to start, now counted as running.
    pub(super) fn start_next(&mut self) -> Option<T> {
        let key = self.due.pop_front()?;
        self.queued.remove(&key);
        self.running.insert(key.clone());
        Some(key)
    }

    /// The pass of `key` ended and asked to run again at `requeue_at` (`None`: only on a change).
    pub(super) fn finish(&mut self, key: &T, requeue_at: Option<I>) {
        self.running.remove(key);
        if self.again.remove(key) {
            self.trigger(key.clone());
        } else if let Some(at) = requeue_at {
            self.trigger_at(key.clone(), at);
        }
    }

    /// Forgets every object that waits (due, triggered again, or timed); running passes stay counted.
    pub(super) fn drop_waiting(&mut self) {
        self.due.clear();
        self.queued.clear();
        self.again.clear();
        self.timers.clear();
        self.timer_of.clear();
    }

    /// How many passes run.
    pub(super) fn running(&self) -> usize {
        self.running.len()
    }

    /// How many objects are due now.
    #[cfg(test)]
    pub(super) fn due(&self) -> usize {
        self.due.len()
    }

    fn cancel_timer(&mut self, key: &T) {
        if let Some(slot) = self.timer_of.remove(key) {
            self.timers.remove(&slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Queue = WorkQueue<&'static str, u64>;

    fn start_all(queue: &mut Queue) -> Vec<&'static str> {
        std::iter::from_fn(|| queue.start_next()).collect()
    }

    #[test]
    fn objects_start_in_the_order_they_fell_due_and_a_repeated_trigger_is_folded_in() {
        let mut queue = Queue::default();
        for key in ["b", "a", "c", "a", "b"] {
            queue.trigger(key);
        }
        assert_eq!(queue.due(), 3);
        assert_eq!(start_all(&mut queue), ["b", "a", "c"]);
        assert_eq!(queue.running(), 3);
    }

    #[test]
    fn a_trigger_while_the_pass_runs_makes_exactly_one_more_pass_after_it() {
        let mut queue = Queue::default();
        queue.trigger("a");
        assert_eq!(queue.start_next(), Some("a"));
        queue.trigger("a");
        queue.trigger("a");
        assert_eq!(queue.start_next(), None, "one pass of an object at a time");
        queue.finish(&"a", Some(100));
        assert_eq!(queue.next_timer(), None, "due now, which is sooner than its requeue");
        assert_eq!(start_all(&mut queue), ["a"]);
        queue.finish(&"a", None);
        assert_eq!(start_all(&mut queue), Vec::<&str>::new());
    }

    #[test]
    fn the_earliest_timer_wins_and_a_trigger_replaces_it() {
        let mut queue = Queue::default();
        queue.trigger_at("a", 50);
        queue.trigger_at("a", 30);
        queue.trigger_at("a", 40);
        assert_eq!(queue.next_timer(), Some(30));
        queue.trigger("a");
        assert_eq!(queue.next_timer(), None);
        queue.trigger_at("a", 10);
        assert_eq!(queue.next_timer(), None, "due now already");
        assert_eq!(start_all(&mut queue), ["a"]);
    }

    #[test]
    fn expired_timers_fall_due_in_time_order_and_others_wait() {
        let mut queue = Queue::default();
        queue.trigger_at("late", 30);
        queue.trigger_at("second", 20);
        queue.trigger_at("first", 10);
        queue.trigger_at("tie", 20);
        queue.expire_timers(20);
        assert_eq!(start_all(&mut queue), ["first", "second", "tie"]);
        assert_eq!(queue.next_timer(), Some(30));
        queue.expire_timers(29);
        assert_eq!(queue.start_next(), None);
        queue.expire_timers(30);
        assert_eq!(queue.start_next(), Some("late"));
    }

    #[test]
    fn a_timer_of_a_running_object_makes_one_more_pass_after_it() {
        let mut queue = Queue::default();
        queue.trigger("a");
        queue.start_next();
        queue.trigger_at("a", 10);
        queue.expire_timers(10);
        assert_eq!(queue.start_next(), None);
        queue.finish(&"a", Some(99));
        assert_eq!(start_all(&mut queue), ["a"]);
        assert_eq!(queue.next_timer(), None);
    }

    #[test]
    fn dropping_the_waiting_keeps_the_running_counted_and_nothing_restarts() {
        let mut queue = Queue::default();
        for key in ["running", "due"] {
            queue.trigger(key);
        }
        queue.start_next();
        queue.trigger("running");
        queue.trigger_at("timed", 5);
        queue.drop_waiting();
        assert_eq!((queue.due(), queue.running(), queue.next_timer()), (0, 1, None));
        queue.finish(&"running", Some(1));
        queue.drop_waiting();
        assert_eq!(queue.start_next(), None);
        assert_eq!(queue.running(), 0);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Step {
        Trigger(u8),
        TriggerAt(u8, u8),
        Start,
        Finish(u8, Option<u8>),
        Tick(u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0u8..6).prop_map(Step::Trigger),
            (0u8..6, 0u8..50).prop_map(|(k, at)| Step::TriggerAt(k, at)),
            Just(Step::Start),
            (0u8..6, proptest::option::of(0u8..50)).prop_map(|(k, at)| Step::Finish(k, at)),
            (0u8..20).prop_map(Step::Tick),
        ]
    }

    proptest! {
        /// Whatever happens, a due object is due once, and neither running nor timed; expired timers are gone.
        #[test]
        fn a_due_object_is_due_once_and_neither_running_nor_timed(steps in proptest::collection::vec(step(), 0..80)) {
            let mut queue = WorkQueue::<u8, u16>::default();
            let mut now = 0u16;
            for step in steps {
                match step {
                    Step::Trigger(k) => queue.trigger(k),
                    Step::TriggerAt(k, at) => queue.trigger_at(k, now + u16::from(at)),
                    Step::Start => { queue.start_next(); }
                    Step::Finish(k, at) => if queue.running.contains(&k) {
                        queue.finish(&k, at.map(|at| now + u16::from(at)));
                    },
                    Step::Tick(by) => {
                        now += u16::from(by);
                        queue.expire_timers(now);
                        prop_assert!(queue.next_timer().is_none_or(|at| at > now), "expired timers were moved");
                    }
                }
                let due: HashSet<u8> = queue.due.iter().copied().collect();
                prop_assert_eq!(due.len(), queue.due.len(), "due once");
                prop_assert_eq!(&due, &queue.queued);
                prop_assert_eq!(queue.timers.len(), queue.timer_of.len());
                for key in 0..6u8 {
                    if due.contains(&key) {
                        prop_assert!(!queue.running.contains(&key), "{key} due and running");
                        prop_assert!(!queue.timer_of.contains_key(&key), "{key} due and timed");
                    }
                    prop_assert!(!queue.again.contains(&key) || queue.running.contains(&key));
                    if let Some(slot) = queue.timer_of.get(&key) {
                        prop_assert_eq!(queue.timers.get(slot), Some(&key));
                    }
                }
            }
        }
    }
}
