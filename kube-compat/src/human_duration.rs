//! apimachinery's `duration.HumanDuration`: a duration in about two significant units, as kube-apiserver's
//! tables and kubectl's printers show ages (`45s`, `3m20s`, `2d3h`).

/// The text for a duration more than a second in the future (a clock skew or an unparsable date).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
