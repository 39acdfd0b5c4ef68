//! Cron schedules as RayCronJob reads them: the standard five fields (minute, hour, day of month, month,
//! day of week) or a descriptor (`@daily`, `@every 90s`, ...), with an optional `TZ=<zone> ` or
//! `CRON_TZ=<zone> ` prefix. The grammar, the error texts and the matching rules are those of the cron
//! library KubeRay uses (robfig/cron v3's standard parser); [`super::next`] finds the next firing time.
//!
//! Syntax of a field: a comma-separated list of `*`, `?`, `N`, `A-B`, each optionally followed by `/STEP`
//! (`N/STEP` means `N-max/STEP`). Months also accept `jan`..`dec` and days of week `sun`..`sat` (any letter
//! case). Day of week runs 0 (Sunday) to 6.

use jiff::tz::TimeZone;
use kube_compat::go_strconv;

/// The allowed values of one cron field.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// Set on a field written as `*` or `?` (without a step above 1): a wildcard day field does not widen the
/// day match (see [`FieldSchedule::day_matches`]).
pub(crate) const STAR_BIT: u64 = 1 << 63;

/// The number of fields of a standard schedule.
const STANDARD_FIELDS: usize = 5;

/// Why a schedule text is not a valid cron schedule; the texts are the cron library's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// An empty schedule.
    #[error("empty spec string")]
    Empty,
    /// The zone of a `TZ=` / `CRON_TZ=` prefix is unknown.
    #[error("provided bad location {zone}: {reason}")]
    BadLocation {
        /// The zone name.
        zone: String,
        /// Why it could not be loaded.
        reason: String,
    },
    /// A `TZ=` / `CRON_TZ=` prefix with nothing after it.
    #[error("missing schedule after time zone prefix: {0}")]
    MissingScheduleAfterZone(String),
    /// Not five fields.
    #[error("expected exactly {STANDARD_FIELDS} fields, found {found}: [{}]", fields.join(" "))]
    FieldCount {
        /// How many whitespace-separated fields there were.
        found: usize,
        /// The fields.
        fields: Vec<String>,
    },
    /// A number that is not a non-negative decimal integer.
    #[error("failed to parse int from {expr}: strconv.Atoi: parsing {}: {reason}", go_strconv::quote(.expr))]
    NotAnInteger {
        /// The text.
        expr: String,
        /// Go's reason (`invalid syntax`, `value out of range`).
        reason: &'static str,
    },
    /// A negative number.
    #[error("negative number ({value}) not allowed: {expr}")]
    Negative {
        /// The number.
        value: i64,
        /// The text.
        expr: String,
    },
    /// `a-b-c`.
    #[error("too many hyphens: {0}")]
    TooManyHyphens(String),
    /// `a/b/c`.
    #[error("too many slashes: {0}")]
    TooManySlashes(String),
    /// A range starting below the field's minimum.
    #[error("beginning of range ({start}) below minimum ({min}): {expr}")]
    BelowMinimum {
        /// First value of the range.
        start: u64,
        /// The field's minimum.
        min: u32,
        /// The text.
        expr: String,
    },
    /// A range ending above the field's maximum.
    #[error("end of range ({end}) above maximum ({max}): {expr}")]
    AboveMaximum {
        /// Last value of the range.
        end: u64,
        /// The field's maximum.
        max: u32,
        /// The text.
        expr: String,
    },
    /// A range whose start is after its end.
    #[error("beginning of range ({start}) beyond end of range ({end}): {expr}")]
    Reversed {
        /// First value of the range.
        start: u64,
        /// Last value of the range.
        end: u64,
        /// The text.
        expr: String,
    },
    /// A step of 0.
    #[error("step of range should be a positive number: {0}")]
    ZeroStep(String),
    /// `@every` with a text that is not a Go duration.
    #[error("failed to parse duration {descriptor}: {reason}")]
    BadDuration {
        /// The whole descriptor.
        descriptor: String,
        /// Why the duration is invalid.
        reason: String,
    },
    /// An `@` word that is not a known descriptor.
    #[error("unrecognized descriptor: {0}")]
    UnknownDescriptor(String),
}

/// A parsed schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// When it fires.
    pub kind: ScheduleKind,
    /// The zone of a `TZ=` prefix; `None`: the zone of the time [`Schedule::next`] is asked about.
    pub zone: Option<TimeZone>,
}

/// The two shapes of schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleKind {
    /// Calendar fields (five fields or a calendar descriptor such as `@daily`).
    Fields(FieldSchedule),
    /// `@every <duration>`: a fixed delay in whole seconds (at least one) after the previous time.
    Every {
        /// The delay in seconds.
        seconds: i64,
    },
}

/// The matching values of each calendar field, one bit per value (plus [`STAR_BIT`]). Seconds are always 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSchedule {
    /// Minutes 0-59.
    pub minute: u64,
    /// Hours 0-23.
    pub hour: u64,
    /// Days of month 1-31.
    pub day_of_month: u64,
    /// Months 1-12.
    pub month: u64,
    /// Days of week 0-6 (Sunday is 0).
    pub day_of_week: u64,
}

impl FieldSchedule {
    /// Whether the day (`day_of_month`, `weekday` 0 = Sunday) matches: both fields must match when
    /// either is a wildcard, otherwise one of them is enough (`0 0 1 * MON` fires on the 1st and on
    /// Mondays).
    pub fn day_matches(&self, day_of_month: u32, weekday: u32) -> bool {
        let dom = bit(day_of_month) & self.day_of_month != 0;
        let dow = bit(weekday) & self.day_of_week != 0;
        if (self.day_of_month | self.day_of_week) & STAR_BIT != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// False when no time can ever match because a field selects no value at all (a field such as `,`).
    pub fn can_match(&self) -> bool {
        let values = |bits: u64| bits & !STAR_BIT != 0;
        let days = if (self.day_of_month | self.day_of_week) & STAR_BIT != 0 {
            values(self.day_of_month) && values(self.day_of_week)
        } else {
            values(self.day_of_month) || values(self.day_of_week)
        };
        values(self.minute) && values(self.hour) && values(self.month) && days
    }
}

/// The bit of `value`.
pub(crate) fn bit(value: u32) -> u64 {
    1u64.checked_shl(value).unwrap_or(0)
}

/// Parses `spec` as a standard cron schedule. `lookup_zone` resolves the zone of a `TZ=` / `CRON_TZ=`
/// prefix (the caller decides where zones come from; parsing itself reads nothing).
pub fn parse(spec: &str, lookup_zone: &dyn Fn(&str) -> Result<TimeZone, String>) -> Result<Schedule, ScheduleError> {
    if spec.is_empty() {
        return Err(ScheduleError::Empty);
    }
    let mut rest = spec;
    let mut zone = None;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let Some(space) = spec.find(' ') else {
            return Err(ScheduleError::MissingScheduleAfterZone(spec.to_owned()));
        };
        let name = spec[..space].split_once('=').map_or("", |(_, zone)| zone);
        zone = Some(lookup_zone(name).map_err(|reason| ScheduleError::BadLocation {
            zone: name.to_owned(),
            reason,
        })?);
        rest = spec[space..].trim();
    }
    let kind = if rest.starts_with('@') {
        parse_descriptor(rest)?
    } else {
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() != STANDARD_FIELDS {
            return Err(ScheduleError::FieldCount {
                found: fields.len(),
                fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            });
        }
        ScheduleKind::Fields(FieldSchedule {
            minute: parse_field(fields[0], MINUTES)?,
            hour: parse_field(fields[1], HOURS)?,
            day_of_month: parse_field(fields[2], DAYS_OF_MONTH)?,
            month: parse_field(fields[3], MONTHS)?,
            day_of_week: parse_field(fields[4], DAYS_OF_WEEK)?,
        })
    };
    Ok(Schedule { kind, zone })
}

/// Every value of `bounds`, as a wildcard.
fn all(bounds: Bounds) -> u64 {
    range_bits(bounds.min, bounds.max, 1) | STAR_BIT
}

fn parse_descriptor(descriptor: &str) -> Result<ScheduleKind, ScheduleError> {
    let first = |b: Bounds| bit(b.min);
    let fields = match descriptor {
        "@yearly" | "@annually" => FieldSchedule {
            minute: first(MINUTES),
            hour: first(HOURS),
            day_of_month: first(DAYS_OF_MONTH),
            month: first(MONTHS),
            day_of_week: all(DAYS_OF_WEEK),
        },
        "@monthly" => FieldSchedule {
            minute: first(MINUTES),
            hour: first(HOURS),
            day_of_month: first(DAYS_OF_MONTH),
            month: all(MONTHS),
            day_of_week: all(DAYS_OF_WEEK),
        },
        "@weekly" => FieldSchedule {
            minute: first(MINUTES),
            hour: first(HOURS),
            day_of_month: all(DAYS_OF_MONTH),
            month: all(MONTHS),
            day_of_week: first(DAYS_OF_WEEK),
        },
        "@daily" | "@midnight" => FieldSchedule {
            minute: first(MINUTES),
            hour: first(HOURS),
            day_of_month: all(DAYS_OF_MONTH),
            month: all(MONTHS),
            day_of_week: all(DAYS_OF_WEEK),
        },
        "@hourly" => FieldSchedule {
            minute: first(MINUTES),
            hour: all(HOURS),
            day_of_month: all(DAYS_OF_MONTH),
            month: all(MONTHS),
            day_of_week: all(DAYS_OF_WEEK),
        },
        other => {
            let Some(duration) = other.strip_prefix("@every ") else {
                return Err(ScheduleError::UnknownDescriptor(other.to_owned()));
            };
            let nanos = kube_compat::go_duration::parse_nanos(duration).map_err(|e| ScheduleError::BadDuration {
                descriptor: other.to_owned(),
                reason: e.to_string(),
            })?;
            // Delays under a second become one second; fractions of a second are dropped.
            let seconds = (nanos / 1_000_000_000).max(1);
            return Ok(ScheduleKind::Every { seconds });
        }
    };
    Ok(ScheduleKind::Fields(fields))
}

/// The bits of one comma-separated field (empty list items are skipped).
fn parse_field(field: &str, bounds: Bounds) -> Result<u64, ScheduleError> {
    field
        .split(',')
        .filter(|part| !part.is_empty())
        .try_fold(0, |bits, part| Ok(bits | parse_range(part, bounds)?))
}

/// One `*`, `N`, `A-B`, with an optional `/STEP`.
fn parse_range(expr: &str, bounds: Bounds) -> Result<u64, ScheduleError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single_value = low_and_high.len() == 1;
    let (start, mut end, mut extra) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (u64::from(bounds.min), u64::from(bounds.max), STAR_BIT)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], bounds)?,
            _ => return Err(ScheduleError::TooManyHyphens(expr.to_owned())),
        };
        (start, end, 0)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = parse_non_negative(range_and_step[1])?;
            if single_value {
                end = u64::from(bounds.max);
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return Err(ScheduleError::TooManySlashes(expr.to_owned())),
    };
    if start < u64::from(bounds.min) {
        return Err(ScheduleError::BelowMinimum {
            start,
            min: bounds.min,
            expr: expr.to_owned(),
        });
    }
    if end > u64::from(bounds.max) {
        return Err(ScheduleError::AboveMaximum {
            end,
            max: bounds.max,
            expr: expr.to_owned(),
        });
    }
    if start > end {
        return Err(ScheduleError::Reversed {
            start,
            end,
            expr: expr.to_owned(),
        });
    }
    if step == 0 {
        return Err(ScheduleError::ZeroStep(expr.to_owned()));
    }
    // Both ends are within 0..=59 here.
    let (start, end) = (u32::try_from(start).unwrap_or(0), u32::try_from(end).unwrap_or(0));
    Ok(range_bits(start, end, u32::try_from(step).unwrap_or(u32::MAX)) | extra)
}

/// The bits of `start..=end` every `step`.
fn range_bits(start: u32, end: u32, step: u32) -> u64 {
    (start..=end)
        .step_by(usize::try_from(step).unwrap_or(usize::MAX))
        .fold(0, |bits, v| bits | bit(v))
}

fn parse_int_or_name(expr: &str, bounds: Bounds) -> Result<u64, ScheduleError> {
    let lower = expr.to_lowercase();
    if let Some((_, value)) = bounds.names.iter().find(|(name, _)| *name == lower) {
        return Ok(u64::from(*value));
    }
    parse_non_negative(expr)
}

fn parse_non_negative(expr: &str) -> Result<u64, ScheduleError> {
    let value = go_strconv::atoi(expr).map_err(|e| ScheduleError::NotAnInteger {
        expr: expr.to_owned(),
        reason: e.reason(),
    })?;
    u64::try_from(value).map_err(|_| ScheduleError::Negative {
        value,
        expr: expr.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc_only(name: &str) -> Result<TimeZone, String> {
        match name {
            "UTC" => Ok(TimeZone::UTC),
            other => Err(format!("unknown time zone {other}")),
        }
    }

    fn fields(spec: &str) -> FieldSchedule {
        match parse(spec, &utc_only).unwrap().kind {
            ScheduleKind::Fields(f) => f,
            other => panic!("not a field schedule: {other:?}"),
        }
    }

    fn error(spec: &str) -> String {
        parse(spec, &utc_only).unwrap_err().to_string()
    }

    #[test]
    fn five_fields_with_lists_ranges_steps_and_names() {
        let f = fields("*/15 9-17 1,15 jan-MAR mon-fri");
        assert_eq!(f.minute, bit(0) | bit(15) | bit(30) | bit(45));
        assert_eq!(f.hour, (9..=17).fold(0, |b, h| b | bit(h)));
        assert_eq!(f.day_of_month, bit(1) | bit(15));
        assert_eq!(f.month, bit(1) | bit(2) | bit(3));
        assert_eq!(f.day_of_week, (1..=5).fold(0, |b, d| b | bit(d)));
        // `N/step` runs to the field's maximum; `*/1` stays a wildcard, `*/2` does not.
        assert_eq!(fields("5/20 * * * *").minute, bit(5) | bit(25) | bit(45));
        assert_ne!(fields("*/1 * * * *").minute & STAR_BIT, 0);
        assert_eq!(fields("*/2 * * * *").minute & STAR_BIT, 0);
        assert_ne!(fields("* * ? * *").day_of_month & STAR_BIT, 0);
    }

    #[test]
    fn golden_1_3_field_count_error_lists_the_fields() {
        assert_eq!(
            error("invalid cron string"),
            "expected exactly 5 fields, found 3: [invalid cron string]"
        );
        assert_eq!(error(""), "empty spec string");
        assert_eq!(
            error("* * * * * *"),
            "expected exactly 5 fields, found 6: [* * * * * *]"
        );
    }

    #[test]
    fn range_errors_use_the_cron_library_texts() {
        assert_eq!(error("60 * * * *"), "end of range (60) above maximum (59): 60");
        assert_eq!(error("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
        assert_eq!(error("* * * * 7"), "end of range (7) above maximum (6): 7");
        assert_eq!(
            error("5-1 * * * *"),
            "beginning of range (5) beyond end of range (1): 5-1"
        );
        assert_eq!(error("*/0 * * * *"), "step of range should be a positive number: */0");
        assert_eq!(error("1-2-3 * * * *"), "too many hyphens: 1-2-3");
        assert_eq!(error("1/2/3 * * * *"), "too many slashes: 1/2/3");
        assert_eq!(
            error("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            error("* * * foo *"),
            "failed to parse int from foo: strconv.Atoi: parsing \"foo\": invalid syntax"
        );
        assert_eq!(
            error("-1 * * * *"),
            "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"
        );
        assert_eq!(error("@often"), "unrecognized descriptor: @often");
        assert_eq!(
            error("@every 5 minutes"),
            "failed to parse duration @every 5 minutes: time: unknown unit \" minutes\" in duration \"5 minutes\""
        );
    }

    #[test]
    fn descriptors_and_every() {
        let yearly = fields("@yearly");
        assert_eq!(
            (yearly.minute, yearly.hour, yearly.day_of_month, yearly.month),
            (1, 1, bit(1), bit(1))
        );
        assert_eq!(fields("@annually"), yearly);
        assert_eq!(fields("@midnight"), fields("@daily"));
        let weekly = fields("@weekly");
        assert!(weekly.day_matches(3, 0) && !weekly.day_matches(3, 1));
        let every = |s: &str| parse(s, &utc_only).unwrap().kind;
        assert_eq!(every("@every 90s"), ScheduleKind::Every { seconds: 90 });
        assert_eq!(every("@every 1500ms"), ScheduleKind::Every { seconds: 1 });
        assert_eq!(every("@every 10ms"), ScheduleKind::Every { seconds: 1 });
        assert_eq!(every("@every -5m"), ScheduleKind::Every { seconds: 1 });
    }

    #[test]
    fn zone_prefix_sets_the_zone() {
        let s = parse("TZ=UTC 0 * * * *", &utc_only).unwrap();
        assert_eq!(s.zone, Some(TimeZone::UTC));
        let s = parse("CRON_TZ=UTC   @hourly", &utc_only).unwrap();
        assert_eq!(s.zone, Some(TimeZone::UTC));
        assert_eq!(
            parse("TZ=Mars/Base 0 * * * *", &utc_only).unwrap_err().to_string(),
            "provided bad location Mars/Base: unknown time zone Mars/Base"
        );
        assert!(parse("TZ=UTC", &utc_only).is_err());
        assert_eq!(parse("0 * * * *", &utc_only).unwrap().zone, None);
    }

    #[test]
    fn day_fields_or_unless_one_is_a_wildcard() {
        let f = fields("0 0 1 * 1");
        assert!(f.day_matches(1, 3) && f.day_matches(8, 1) && !f.day_matches(8, 2));
        let f = fields("0 0 1 * *");
        assert!(f.day_matches(1, 3) && !f.day_matches(8, 1));
    }

    #[test]
    fn empty_lists_never_match() {
        assert!(!fields(", * * * *").can_match());
        assert!(fields("* * * * *").can_match());
        assert!(fields("0 0 31 2 *").can_match());
    }
}
