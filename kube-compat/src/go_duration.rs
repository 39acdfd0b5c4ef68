//! Go's `time.Duration` text: parsing as `time.ParseDuration` does and printing as
//! `Duration.String()` does for whole seconds.
//!
//! Accepted text is an optional sign followed by one or more `<number><unit>` parts (`300ms`,
//! `-1.5h`, `2h45m`), where a number may have a fraction and a unit is one of `ns`, `us` (also
//! `µs` and `μs`), `ms`, `s`, `m`, `h`. A bare `0` (signed or not) is zero; any other number without
//! a unit is an error, and so is a total beyond ±(2⁶³−1) nanoseconds. Fractions count up to 18 digits,
//! truncated to whole nanoseconds.

use std::time::Duration;

/// Why a text is not a Go duration; the messages are Go's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GoDurationError {
    /// Not of the duration shape, or out of range.
    #[error("time: invalid duration {input:?}")]
    Invalid {
        /// The rejected text.
        input: String,
    },
    /// A number without a unit (other than a bare `0`).
    #[error("time: missing unit in duration {input:?}")]
    MissingUnit {
        /// The rejected text.
        input: String,
    },
    /// A unit other than `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`.
    #[error("time: unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit {
        /// The unknown unit.
        unit: String,
        /// The rejected text.
        input: String,
    },
    /// A valid Go duration below zero where only a [`std::time::Duration`] fits.
    #[error("negative duration {input:?}")]
    Negative {
        /// The rejected text.
        input: String,
    },
}

/// Nanoseconds in one unit of a duration part, `None` for an unknown unit.
fn unit_nanos(unit: &str) -> Option<i128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Parses `text` as Go's `time.ParseDuration` does, into signed nanoseconds.
pub fn parse_nanos(text: &str) -> Result<i64, GoDurationError> {
    let invalid = || GoDurationError::Invalid { input: text.to_owned() };
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if let Some(after_dot) = rest.strip_prefix('.') {
            let frac_len = after_dot.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &after_dot[..frac_len];
            rest = &after_dot[frac_len..];
            if int_part.is_empty() && frac_part.is_empty() {
                return Err(invalid());
            }
        } else if int_part.is_empty() {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        let unit_text = &rest[..unit_len];
        if unit_text.is_empty() {
            return Err(GoDurationError::MissingUnit { input: text.to_owned() });
        }
        let unit = unit_nanos(unit_text).ok_or_else(|| GoDurationError::UnknownUnit {
            unit: unit_text.to_owned(),
            input: text.to_owned(),
        })?;
        rest = &rest[unit_len..];
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut value = whole.checked_mul(unit).ok_or_else(invalid)?;
        let mut scale = unit;
        for digit in frac_part.bytes().take(18) {
            scale /= 10;
            value += i128::from(digit - b'0') * scale;
        }
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    let signed = if negative { -total } else { total };
    i64::try_from(signed).map_err(|_| invalid())
}

/// Parses `text` as Go's `time.ParseDuration` does, for a duration that cannot be negative.
pub fn parse(text: &str) -> Result<Duration, GoDurationError> {
    let nanos = parse_nanos(text)?;
    let nanos = u64::try_from(nanos).map_err(|_| GoDurationError::Negative { input: text.to_owned() })?;
    Ok(Duration::from_nanos(nanos))
}

/// Go's `Duration.String()` of `duration` truncated to whole seconds: `45s`, `35m0s`, `1h0m0s`,
/// `0s`.
pub fn format_secs(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// `whole.fraction` of `value / unit` with the fraction's trailing zeros dropped (`1.5`, `2`), as Go prints
/// duration components.
fn decimal(value: u64, unit: u64) -> String {
    let (whole, mut fraction) = (value / unit, value % unit);
    if fraction == 0 {
        return whole.to_string();
    }
    let mut digits = unit.ilog10() as usize;
    while fraction % 10 == 0 {
        fraction /= 10;
        digits -= 1;
    }
    format!("{whole}.{fraction:0digits$}")
}

/// Go's `Duration.String()` of `nanos` signed nanoseconds: `1h2m3.5s`, `1m30s`, `150ms`, `1.5µs`, `0s`.
pub fn format_nanos(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let body = if n < 1_000 {
        format!("{n}ns")
    } else if n < 1_000_000 {
        format!("{}µs", decimal(n, 1_000))
    } else if n < 1_000_000_000 {
        format!("{}ms", decimal(n, 1_000_000))
    } else {
        let secs = n / 1_000_000_000;
        let seconds = decimal(n % 60_000_000_000, 1_000_000_000);
        let (h, m) = (secs / 3600, (secs % 3600) / 60);
        if h > 0 {
            format!("{h}h{m}m{seconds}s")
        } else if m > 0 {
            format!("{m}m{seconds}s")
        } else {
            format!("{seconds}s")
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        for (text, nanos) in [
            ("30m", 1_800_000_000_000),
            ("1h30m", 5_400_000_000_000),
            ("1.5s", 1_500_000_000),
            ("0", 0),
            ("-0", 0),
            ("-5m", -300_000_000_000),
            ("+5m", 300_000_000_000),
            (".5us", 500),
            ("1µs1μs1ns", 2_001),
            ("2562047h47m16.854775807s", i64::MAX),
        ] {
            assert_eq!(parse_nanos(text), Ok(nanos), "{text}");
        }
        assert!(parse_nanos("2562047h47m16.854775808s").is_err());
    }

    #[test]
    fn go_duration_strings() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (150_000_000, "150ms"),
            (1_000_000_000, "1s"),
            (90_000_000_000, "1m30s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (-5_000_000_000, "-5s"),
            (i64::MAX, "2562047h47m16.854775807s"),
        ] {
            assert_eq!(format_nanos(nanos), text, "{nanos}");
            assert_eq!(parse_nanos(text), Ok(nanos), "{text}");
        }
    }

    #[test]
    fn go_duration_errors() {
        let input = |s: &str| s.to_owned();
        assert_eq!(
            parse_nanos("300"),
            Err(GoDurationError::MissingUnit { input: input("300") })
        );
        assert_eq!(
            parse_nanos("abc"),
            Err(GoDurationError::Invalid { input: input("abc") })
        );
        assert_eq!(parse_nanos(""), Err(GoDurationError::Invalid { input: input("") }));
        assert_eq!(parse_nanos("."), Err(GoDurationError::Invalid { input: input(".") }));
        assert_eq!(
            parse_nanos("1h "),
            Err(GoDurationError::UnknownUnit {
                unit: "h ".into(),
                input: input("1h ")
            })
        );
        assert_eq!(
            parse_nanos("10x").unwrap_err().to_string(),
            r#"time: unknown unit "x" in duration "10x""#
        );
    }

    #[test]
    fn std_durations_from_go_text() {
        assert_eq!(parse("2160h0m0s"), Ok(Duration::from_secs(2160 * 3600)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("-1s"), Err(GoDurationError::Negative { input: "-1s".into() }));
        assert!(parse("10").is_err());
        assert!(parse("x").is_err());
    }

    #[test]
    fn whole_second_strings() {
        assert_eq!(format_secs(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format_secs(Duration::from_secs(45)), "45s");
        assert_eq!(format_secs(Duration::from_secs(35 * 60)), "35m0s");
        assert_eq!(format_secs(Duration::from_millis(1500)), "1s");
        assert_eq!(format_secs(Duration::ZERO), "0s");
    }
}
