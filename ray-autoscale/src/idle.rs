//! When each Ray node became idle, as an autoscaler that samples node usage once per iteration
//! sees it (Ray's v1 autoscaler keeps the same record: the last time it saw a node in use).
//!
//! The planner needs `idle_since` for every running worker ([`crate::planner::WorkerState`]);
//! the Ray head only reports what each node holds *now*. [`IdleTracker`] turns successive
//! observations into idle-since instants: a node seen idle is idle since the first observation
//! of the current idle stretch; a node seen busy (or not seen at all) starts over. Pure: the
//! clock is an argument.

use std::collections::BTreeMap;
use std::time::Duration;

/// Idle-since instants of the nodes of one Ray cluster, carried from one iteration to the next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdleTracker {
    /// Node name → the instant it was first observed idle in its current idle stretch.
    since: BTreeMap<String, Duration>,
}

impl IdleTracker {
    /// A tracker that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one observation at `now` of every node that exists: `(node name, busy)`, where
    /// busy means it holds a task, an actor or an object. A node missing from `nodes` is
    /// forgotten, so a node that comes back (or a new pod reusing the name) starts a new idle
    /// stretch. A node listed twice counts as busy if either entry says so.
    pub fn observe<'a>(&mut self, now: Duration, nodes: impl IntoIterator<Item = (&'a str, bool)>) {
        let mut busy_by_node: BTreeMap<&str, bool> = BTreeMap::new();
        for (name, busy) in nodes {
            *busy_by_node.entry(name).or_insert(false) |= busy;
        }
        let mut next = BTreeMap::new();
        for (name, busy) in busy_by_node {
            if busy {
                continue;
            }
            // An idle stretch keeps its start; a new one starts now.
            let since = self.since.get(name).copied().unwrap_or(now);
            next.insert(name.to_string(), since);
        }
        self.since = next;
    }

    /// Since when `node` has been idle; `None` when it was busy or absent at the last observation.
    pub fn idle_since(&self, node: &str) -> Option<Duration> {
        self.since.get(node).copied()
    }

    /// The nodes idle at the last observation, with their idle-since instants, in name order.
    pub fn idle_nodes(&self) -> impl Iterator<Item = (&str, Duration)> {
        self.since.iter().map(|(name, since)| (name.as_str(), *since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn idle_since_first_idle_observation() {
        let mut t = IdleTracker::new();
        t.observe(secs(10), [("w1", false), ("w2", true)]);
        assert_eq!(t.idle_since("w1"), Some(secs(10)));
        assert_eq!(t.idle_since("w2"), None);
        t.observe(secs(15), [("w1", false), ("w2", false)]);
        // w1 keeps its start; w2's stretch starts now.
        assert_eq!(t.idle_since("w1"), Some(secs(10)));
        assert_eq!(t.idle_since("w2"), Some(secs(15)));
        assert_eq!(t.idle_nodes().collect::<Vec<_>>(), [("w1", secs(10)), ("w2", secs(15))]);
    }

    #[test]
    fn busy_and_absent_nodes_start_over() {
        let mut t = IdleTracker::new();
        t.observe(secs(0), [("w1", false), ("w2", false)]);
        t.observe(secs(5), [("w1", true)]);
        assert_eq!(t.idle_since("w1"), None);
        assert_eq!(t.idle_since("w2"), None, "absent nodes are forgotten");
        t.observe(secs(9), [("w1", false), ("w2", false)]);
        assert_eq!(t.idle_since("w1"), Some(secs(9)));
        assert_eq!(t.idle_since("w2"), Some(secs(9)));
    }

    #[test]
    fn duplicate_entries_count_as_busy_when_either_is() {
        let mut t = IdleTracker::new();
        t.observe(secs(3), [("w1", false), ("w1", true)]);
        assert_eq!(t.idle_since("w1"), None);
    }

    proptest! {
        /// For any sequence of observations of one node, `idle_since` is the time of the first
        /// observation after its last busy (or absent) one, and never later than now.
        #[test]
        fn idle_since_is_the_start_of_the_current_idle_stretch(
            steps in proptest::collection::vec((1u64..100, 0u8..3), 1..40)
        ) {
            let mut t = IdleTracker::new();
            let mut now = Duration::ZERO;
            let mut stretch_start: Option<Duration> = None;
            for (dt, state) in steps {
                now += Duration::from_millis(dt);
                // 0 = idle, 1 = busy, 2 = absent.
                match state {
                    0 => {
                        t.observe(now, [("n", false)]);
                        stretch_start.get_or_insert(now);
                    }
                    1 => {
                        t.observe(now, [("n", true)]);
                        stretch_start = None;
                    }
                    _ => {
                        t.observe(now, std::iter::empty());
                        stretch_start = None;
                    }
                }
                prop_assert_eq!(t.idle_since("n"), stretch_start);
                prop_assert!(t.idle_since("n").is_none_or(|s| s <= now));
            }
        }
    }
}
