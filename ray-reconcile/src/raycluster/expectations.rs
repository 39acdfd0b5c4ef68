//! Scale expectations: after the controller creates or deletes a pod it
//! remembers that, and skips the pod's group until the watch cache shows the change, so a stale
//! cache can never cause a second create or a repeated delete.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Create expectations give up after this long (delete expectations never time out).
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(ray_api::constants::EXPECTATIONS_TIMEOUT_SECONDS);

/// What the controller did to a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleAction {
    /// Created it.
    Create,
    /// Deleted it.
    Delete,
}

#[derive(Clone, Debug)]
struct Record {
    group: String,
    action: ScaleAction,
    at: Instant,
}

/// `<namespace>/<cluster>` -> pod name -> record.
#[derive(Debug, Default)]
pub struct ScaleExpectations {
    clusters: Mutex<HashMap<(String, String), HashMap<String, Record>>>,
    timeout: Option<Duration>,
}

impl ScaleExpectations {
    /// Expectations with KubeRay's 30 s create timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Expectations with a custom create timeout (tests).
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            clusters: Mutex::default(),
            timeout: Some(timeout),
        }
    }

    /// Remember an action on a pod of `group` (`""` = head); overwrites an earlier record of the pod.
    pub fn expect(&self, namespace: &str, cluster: &str, group: &str, pod: &str, action: ScaleAction, now: Instant) {
        if let Ok(mut clusters) = self.clusters.lock() {
            clusters
                .entry((namespace.to_owned(), cluster.to_owned()))
                .or_default()
                .insert(
                    pod.to_owned(),
                    Record {
                        group: group.to_owned(),
                        action,
                        at: now,
                    },
                );
        }
    }

    /// Whether every record of the group is satisfied; satisfied records are dropped.
    /// `exists(name)` answers from the watch cache.
    pub fn is_satisfied(
        &self,
        namespace: &str,
        cluster: &str,
        group: &str,
        now: Instant,
        exists: impl Fn(&str) -> bool,
    ) -> bool {
        let timeout = self.timeout.unwrap_or(EXPECTATIONS_TIMEOUT);
        let Ok(mut clusters) = self.clusters.lock() else {
            return true;
        };
        let key = (namespace.to_owned(), cluster.to_owned());
        let Some(records) = clusters.get_mut(&key) else {
            return true;
        };
        let mut satisfied = true;
        records.retain(|pod, record| {
            if record.group != group {
                return true;
            }
            let done = match record.action {
                ScaleAction::Create => exists(pod) || now.saturating_duration_since(record.at) >= timeout,
                ScaleAction::Delete => !exists(pod),
            };
            if !done {
                satisfied = false;
            }
            !done
        });
        if records.is_empty() {
            clusters.remove(&key);
        }
        satisfied
    }

    /// How many pods of the cluster's groups other than `except_group` were created within the create
    /// timeout and are not in the watch cache yet (`exists(name)` answers from it). A pass that plans against
    /// a limit on pods counts these too: its snapshot of the cache does not hold them, and the groups they
    /// belong to are skipped, but other groups' creates are not. Timed-out records are left out: a pod deleted
    /// before the cache saw it, in a group since removed from the spec, is never checked again.
    pub fn unobserved_creates(
        &self,
        namespace: &str,
        cluster: &str,
        except_group: &str,
        now: Instant,
        exists: impl Fn(&str) -> bool,
    ) -> usize {
        let timeout = self.timeout.unwrap_or(EXPECTATIONS_TIMEOUT);
        let Ok(clusters) = self.clusters.lock() else {
            return 0;
        };
        clusters
            .get(&(namespace.to_owned(), cluster.to_owned()))
            .map_or(0, |records| {
                records
                    .iter()
                    .filter(|(pod, record)| {
                        record.action == ScaleAction::Create
                            && record.group != except_group
                            && now.saturating_duration_since(record.at) < timeout
                            && !exists(pod)
                    })
                    .count()
            })
    }

    /// Forget every record of a cluster (it was deleted, or all its pods were wiped).
    pub fn forget_cluster(&self, namespace: &str, cluster: &str) {
        if let Ok(mut clusters) = self.clusters.lock() {
            clusters.remove(&(namespace.to_owned(), cluster.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_r74_expectations() {
        let e = ScaleExpectations::new();
        let now = Instant::now();
        e.expect("ns", "c", "g", "pod1", ScaleAction::Create, now);
        assert!(!e.is_satisfied("ns", "c", "g", now, |_| false));
        assert!(e.is_satisfied("ns", "c", "g", now, |n| n == "pod1"));
        e.expect("ns", "c", "g", "pod1", ScaleAction::Delete, now);
        assert!(!e.is_satisfied("ns", "c", "g", now, |n| n == "pod1"));
        assert!(e.is_satisfied("ns", "c", "g", now, |_| false));
        // Create then delete of the same pod overwrites the record.
        e.expect("ns", "c", "g", "pod2", ScaleAction::Create, now);
        e.expect("ns", "c", "g", "pod2", ScaleAction::Delete, now);
        assert!(e.is_satisfied("ns", "c", "g", now, |_| false));
        // Groups are independent; forgetting a cluster satisfies all its groups.
        e.expect("ns", "c", "g1", "a", ScaleAction::Create, now);
        e.expect("ns", "c", "g2", "b", ScaleAction::Create, now);
        assert!(!e.is_satisfied("ns", "c", "g1", now, |n| n == "b"));
        assert!(e.is_satisfied("ns", "c", "g2", now, |n| n == "b"));
        e.forget_cluster("ns", "c");
        assert!(e.is_satisfied("ns", "c", "g1", now, |_| false));
    }

    #[test]
    fn unobserved_creates_count_the_other_groups_pods_not_in_the_cache() {
        let e = ScaleExpectations::new();
        let now = Instant::now();
        e.expect("ns", "c", "", "head", ScaleAction::Create, now);
        e.expect("ns", "c", "g1", "a", ScaleAction::Create, now);
        e.expect("ns", "c", "g2", "b", ScaleAction::Create, now);
        e.expect("ns", "c", "g2", "seen", ScaleAction::Create, now);
        e.expect("ns", "c", "g3", "gone", ScaleAction::Delete, now);
        e.expect("ns", "other", "g1", "x", ScaleAction::Create, now);
        assert_eq!(e.unobserved_creates("ns", "c", "", now, |n| n == "seen"), 2);
        assert_eq!(e.unobserved_creates("ns", "c", "", now, |_| true), 0);
        assert_eq!(e.unobserved_creates("ns", "none", "", now, |_| false), 0);
        // Past the create timeout a record no longer counts, checked or not.
        let later = now + EXPECTATIONS_TIMEOUT;
        assert_eq!(e.unobserved_creates("ns", "c", "", later, |n| n == "seen"), 0);
    }

    #[test]
    fn golden_r74_create_expectation_times_out() {
        let e = ScaleExpectations::with_timeout(Duration::from_secs(1));
        let now = Instant::now();
        e.expect("ns", "c", "g", "pod1", ScaleAction::Create, now);
        assert!(!e.is_satisfied("ns", "c", "g", now, |_| false));
        assert!(e.is_satisfied("ns", "c", "g", now + Duration::from_secs(1), |_| false));
        e.expect("ns", "c", "g", "pod1", ScaleAction::Delete, now);
        assert!(
            !e.is_satisfied("ns", "c", "g", now + Duration::from_secs(3600), |_| true),
            "deletes never time out"
        );
    }
}
