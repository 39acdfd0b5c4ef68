//! Client-side event spam filter, with client-go's `EventSourceObjectSpamFilter` numbers: per reporting
//! controller and involved object, a token bucket of 25 events refilled at one event every 5 minutes.
//!
//! KubeRay's recorder drops events beyond that budget before they reach the API server, so a 5,000-pod
//! scale-up writes 25 `CreatedWorkerPod` events, not 5,000. Keeping the same budget keeps the observable
//! events equal and, more importantly, keeps a large scale-up from spending half its API requests (and its
//! `--qps` budget) on events. Pure: the caller passes the clock.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Events an object may emit at once (client-go `defaultSpamBurst`).
pub const EVENT_SPAM_BURST: u32 = 25;
/// Time for one more event to become available (client-go `defaultSpamQPS` = 1/300).
pub const EVENT_SPAM_REFILL: Duration = Duration::from_secs(300);

/// One object's remaining budget.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Per-object token buckets.
#[derive(Debug, Default)]
pub struct EventSpamFilter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl EventSpamFilter {
    /// Whether an event about the object `key` may be sent at `now`; spends a token when it may.
    pub fn allow(&self, key: &str, now: Instant) -> bool {
        let Ok(mut buckets) = self.buckets.lock() else {
            // A poisoned lock only loses the filtering, never the event.
            return true;
        };
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: f64::from(EVENT_SPAM_BURST),
            last: now,
        });
        let refilled = now.saturating_duration_since(bucket.last).as_secs_f64() / EVENT_SPAM_REFILL.as_secs_f64();
        bucket.tokens = (bucket.tokens + refilled).min(f64::from(EVENT_SPAM_BURST));
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Drops the budget of an object that is gone.
    pub fn forget(&self, key: &str) {
        if let Ok(mut buckets) = self.buckets.lock() {
            buckets.remove(key);
        }
    }

    /// Objects with a budget entry.
    pub fn len(&self) -> usize {
        self.buckets.lock().map_or(0, |b| b.len())
    }

    /// Whether no object has a budget entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_gets_a_burst_of_25_then_one_per_five_minutes() {
        let filter = EventSpamFilter::default();
        let t0 = Instant::now();
        let allowed = (0..100).filter(|_| filter.allow("ns/a", t0)).count();
        assert_eq!(allowed, 25);
        assert!(!filter.allow("ns/a", t0 + Duration::from_secs(299)));
        assert!(filter.allow("ns/a", t0 + Duration::from_secs(300)));
        assert!(!filter.allow("ns/a", t0 + Duration::from_secs(301)));
    }

    #[test]
    fn objects_have_separate_budgets_and_forgetting_resets_one() {
        let filter = EventSpamFilter::default();
        let t0 = Instant::now();
        for _ in 0..25 {
            assert!(filter.allow("ns/a", t0));
        }
        assert!(!filter.allow("ns/a", t0));
        assert!(filter.allow("ns/b", t0));
        assert_eq!(filter.len(), 2);
        filter.forget("ns/a");
        assert!(filter.allow("ns/a", t0));
    }

    #[test]
    fn the_budget_never_exceeds_the_burst() {
        let filter = EventSpamFilter::default();
        let t0 = Instant::now();
        assert!(filter.allow("ns/a", t0));
        let later = t0 + Duration::from_secs(86_400);
        assert_eq!((0..100).filter(|_| filter.allow("ns/a", later)).count(), 25);
    }
}
