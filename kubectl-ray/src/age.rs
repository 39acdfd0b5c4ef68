//! The AGE cell: the time since an object's creation as kubectl prints it, `<unknown>` without a timestamp.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube_compat::human_duration::human_duration;

/// The cell for an absent creation timestamp.
pub const UNKNOWN: &str = "<unknown>";

/// The age of an object created at `created`, seen at `now`.
pub fn age(created: Option<&Time>, now: jiff::Timestamp) -> String {
    match created {
        Some(Time(ts)) => human_duration(now.as_nanosecond() - ts.as_nanosecond()),
        None => UNKNOWN.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_human_durations_or_unknown() {
        let now = jiff::Timestamp::from_second(1_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let created = Time(jiff::Timestamp::from_second(1_000_000 - 200).unwrap_or(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(age(Some(&created), now), "3m20s");
        assert_eq!(age(None, now), "<unknown>");
    }
}
