//! Ages as kube-apiserver prints them in Table cells: `duration.HumanDuration` of the time since a timestamp.

use jiff::Timestamp;
use serde_json::Value;

/// The cell kube-apiserver prints for a zero (absent) timestamp.
pub const UNKNOWN: &str = "<unknown>";
/// The cell kube-apiserver prints for a duration more than a second in the future, and
/// apimachinery's `duration.HumanDuration` (one home in `kube-compat`, shared with `kubectl ray`).
pub use kube_compat::human_duration::{INVALID, human_duration};

/// Parses a Kubernetes timestamp (`metav1.Time` or `MicroTime`, RFC 3339); `None` when absent or unparsable.
pub fn parse(value: &Value) -> Option<Timestamp> {
    value.as_str().filter(|s| !s.is_empty())?.parse().ok()
}

/// `translateTimestampSince`: the age of a timestamp at `now`, `<unknown>` when it is absent.
pub fn since(value: &Value, now: Timestamp) -> String {
    match parse(value) {
        Some(ts) => since_timestamp(ts, now),
        None => UNKNOWN.into(),
    }
}

/// The age of a parsed timestamp at `now`.
pub fn since_timestamp(ts: Timestamp, now: Timestamp) -> String {
    human_duration(now.as_nanosecond() - ts.as_nanosecond())
}

/// The time between two timestamps (a Job's duration).
pub fn between(start: Timestamp, end: Timestamp) -> String {
    human_duration(end.as_nanosecond() - start.as_nanosecond())
}

/// A timestamp as Go's `time.RFC3339` prints a UTC `metav1.Time` (the default table's `Created At`); the zero
/// time when absent.
pub fn rfc3339(value: &Value) -> String {
    match parse(value) {
        Some(ts) => ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "0001-01-01T00:00:00Z".into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_parse_with_and_without_fractions() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        assert_eq!(since(&json!("2026-01-01T00:00:00Z"), now), "10m");
        assert_eq!(since(&json!("2026-01-01T00:09:59.500000Z"), now), "0s");
        assert_eq!(since(&Value::Null, now), "<unknown>");
        assert_eq!(rfc3339(&json!("2026-01-01T00:00:00.123456Z")), "2026-01-01T00:00:00Z");
        assert_eq!(rfc3339(&Value::Null), "0001-01-01T00:00:00Z");
    }
}
