//! Ages as kube-apiserver prints them in Table cells: `duration.HumanDuration` of the time since a timestamp.

use jiff::Timestamp;
use serde_json::Value;

/// The cell kube-apiserver prints for a zero (absent) timestamp.
pub const UNKNOWN: &str = "<unknown>";
/// The cell kube-apiserver prints for a duration more than a second in the future, or an unparsable date.
pub const INVALID: &str = "<invalid>";

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// apimachinery's `duration.HumanDuration`: ~2-3 significant figures (`45s`, `3m20s`, `15m`, `2h5m`, `2d3h`,
/// `40d`, `3y100d`). A deviation of up to a second into the future counts as now.
pub fn human_duration(nanos: i128) -> String {
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return INVALID.into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

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

    fn secs(s: i128) -> String {
        human_duration(s * NANOS_PER_SECOND)
    }

    #[test]
    fn human_duration_matches_apimachinery() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (200, "3m20s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (51 * 3600, "2d3h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (830 * 86400, "2y100d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (s, want) in cases {
            assert_eq!(secs(s), want, "{s}s");
        }
        // Sub-second deviations truncate toward zero, as Go's int(d.Seconds()) does.
        assert_eq!(human_duration(-1_900_000_000), "0s");
        assert_eq!(human_duration(1_999_999_999), "1s");
    }

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
