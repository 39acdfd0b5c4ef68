//! The next firing time of a [`Schedule`], strictly after a given time: the cron library's search (advance the
//! month, then the day, hour, minute and second until each matches, starting over whenever a field wraps), on
//! wall-clock time in the schedule's zone. Local times that a daylight-saving change skips or repeats resolve
//! as Go's `time.Date` resolves them, so the ticks around a change are the same as KubeRay's.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::schedule::{FieldSchedule, Schedule, ScheduleKind, bit};

/// How many years ahead the search looks before it gives up (the schedule never fires).
const SEARCH_YEARS: i64 = 5;

const MINUTE: i64 = 60;
const HOUR: i64 = 3600;

/// The first time after `after` (whole seconds) at which `schedule` fires; `None` when it does not fire
/// within five years. A schedule without a zone of its own uses `local` (the operator's zone).
pub fn next(schedule: &Schedule, after: Timestamp, local: &TimeZone) -> Option<Timestamp> {
    match &schedule.kind {
        // A delay after the previous time, dropping its fraction of a second.
        ScheduleKind::Every { seconds } => Timestamp::from_second(after.as_second().checked_add(*seconds)?).ok(),
        ScheduleKind::Fields(fields) => {
            if !fields.can_match() {
                return None;
            }
            let zone = schedule.zone.as_ref().unwrap_or(local);
            Search { fields, zone }
                .run(after.as_second().checked_add(1)?)
                .and_then(|s| Timestamp::from_second(s).ok())
        }
    }
}

/// Wall-clock fields of an instant in the schedule's zone.
struct Civil {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    weekday: i64,
}

struct Search<'a> {
    fields: &'a FieldSchedule,
    zone: &'a TimeZone,
}

impl Search<'_> {
    fn civil(&self, unix: i64) -> Option<Civil> {
        let dt = self.zone.to_datetime(Timestamp::from_second(unix).ok()?);
        Some(Civil {
            year: i64::from(dt.year()),
            month: i64::from(dt.month()),
            day: i64::from(dt.day()),
            hour: i64::from(dt.hour()),
            minute: i64::from(dt.minute()),
            second: i64::from(dt.second()),
            weekday: i64::from(dt.weekday().to_sunday_zero_offset()),
        })
    }

    fn offset(&self, unix: i64) -> Option<i64> {
        Some(i64::from(
            self.zone.to_offset(Timestamp::from_second(unix).ok()?).seconds(),
        ))
    }

    /// Go's `time.Date` in the zone, fields normalised (month 13 is January of the next year, day 0 the
    /// last day of the previous month). A skipped or repeated local time takes the offset found at the
    /// local time read as UTC, unless the instant it gives falls outside that offset's period.
    fn date(&self, year: i64, month: i64, day: i64, hour: i64, minute: i64, second: i64) -> Option<i64> {
        let year = year + (month - 1).div_euclid(12);
        let month = (month - 1).rem_euclid(12) + 1;
        let days = days_from_civil(year, month, 1) + day - 1;
        let local = days * 86_400 + hour * HOUR + minute * MINUTE + second;
        let guess = self.offset(local)?;
        let offset = self.offset(local - guess)?;
        Some(local - offset)
    }

    fn bit_set(bits: u64, value: i64) -> bool {
        u32::try_from(value).is_ok_and(|v| bit(v) & bits != 0)
    }

    /// The search from `start` (already one second past the previous time).
    fn run(&self, start: i64) -> Option<i64> {
        let f = self.fields;
        let mut t = start;
        let mut added = false;
        let year_limit = self.civil(t)?.year + SEARCH_YEARS;
        'wrap: loop {
            let mut c = self.civil(t)?;
            if c.year > year_limit {
                return None;
            }
            while !Self::bit_set(f.month, c.month) {
                if !added {
                    added = true;
                    t = self.date(c.year, c.month, 1, 0, 0, 0)?;
                    c = self.civil(t)?;
                }
                t = self.date(c.year, c.month + 1, c.day, c.hour, c.minute, c.second)?;
                c = self.civil(t)?;
                if c.month == 1 {
                    continue 'wrap;
                }
            }
            while !f.day_matches(u32::try_from(c.day).ok()?, u32::try_from(c.weekday).ok()?) {
                if !added {
                    added = true;
                    t = self.date(c.year, c.month, c.day, 0, 0, 0)?;
                    c = self.civil(t)?;
                }
                t = self.date(c.year, c.month, c.day + 1, c.hour, c.minute, c.second)?;
                c = self.civil(t)?;
                // Where midnight does not exist the day starts at 1 am (or 11 pm the day before).
                if c.hour != 0 {
                    t += if c.hour > 12 {
                        (24 - c.hour) * HOUR
                    } else {
                        -c.hour * HOUR
                    };
                    c = self.civil(t)?;
                }
                if c.day == 1 {
                    continue 'wrap;
                }
            }
            while !Self::bit_set(f.hour, c.hour) {
                if !added {
                    added = true;
                    t = self.date(c.year, c.month, c.day, c.hour, 0, 0)?;
                }
                t += HOUR;
                c = self.civil(t)?;
                if c.hour == 0 {
                    continue 'wrap;
                }
            }
            while !Self::bit_set(f.minute, c.minute) {
                if !added {
                    added = true;
                    t -= t.rem_euclid(MINUTE);
                }
                t += MINUTE;
                c = self.civil(t)?;
                if c.minute == 0 {
                    continue 'wrap;
                }
            }
            // Standard schedules fire at second 0.
            while c.second != 0 {
                added = true;
                t += 1;
                c = self.civil(t)?;
                if c.second == 0 {
                    continue 'wrap;
                }
            }
            return Some(t);
        }
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (`month` 1-12, `day` 1-31).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::super::schedule::parse;
    use super::*;

    fn zone(name: &str) -> Result<TimeZone, String> {
        TimeZone::get(name).map_err(|e| e.to_string())
    }

    fn zone_lookup_none(_: &str) -> Result<TimeZone, String> {
        Err("no zones".to_owned())
    }

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn next_utc(spec: &str, after: &str) -> Option<String> {
        let schedule = parse(spec, &zone).unwrap();
        next(&schedule, ts(after), &TimeZone::UTC).map(|t| t.to_string())
    }

    #[test]
    fn civil_days_match_the_epoch() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2024, 1, 1), 19_723);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    /// Schedule, time, the next tick after it (UTC).
    const CASES: &[(&str, &str, &str)] = &[
        // Strictly after, from whole seconds.
        ("* * * * *", "2024-01-01T00:05:00Z", "2024-01-01T00:06:00Z"),
        ("* * * * *", "2024-01-01T00:05:59.5Z", "2024-01-01T00:06:00Z"),
        ("*/5 * * * *", "2024-01-01T00:00:00Z", "2024-01-01T00:05:00Z"),
        // Calendar fields roll over.
        ("@yearly", "2024-06-15T10:00:00Z", "2025-01-01T00:00:00Z"),
        ("@monthly", "2024-01-31T00:00:00Z", "2024-02-01T00:00:00Z"),
        // 2024-01-01 is a Monday; the next Sunday is the 7th.
        ("@weekly", "2024-01-01T00:00:00Z", "2024-01-07T00:00:00Z"),
        ("0 12 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T12:00:00Z"),
        ("30 2 * * 1-5", "2024-01-05T03:00:00Z", "2024-01-08T02:30:00Z"),
        // Day of month OR day of week when both are restricted: Friday the 12th, then Saturday the 13th.
        ("0 0 13 * 5", "2024-01-06T00:00:00Z", "2024-01-12T00:00:00Z"),
        ("0 0 13 * 5", "2024-01-12T00:00:00Z", "2024-01-13T00:00:00Z"),
        // @every adds whole seconds to the previous time.
        ("@every 90s", "2024-01-01T00:00:00Z", "2024-01-01T00:01:30Z"),
        ("@every 1h", "2024-01-01T00:00:10.7Z", "2024-01-01T01:00:10Z"),
    ];

    #[test]
    fn next_ticks_of_calendar_and_every_schedules() {
        for (spec, after, expected) in CASES {
            assert_eq!(
                next_utc(spec, after).as_deref(),
                Some(*expected),
                "{spec} after {after}"
            );
        }
    }

    #[test]
    fn never_firing_schedules_give_none() {
        assert_eq!(next_utc("0 0 30 2 *", "2024-01-01T00:00:00Z"), None);
        assert_eq!(next_utc(", * * * *", "2024-01-01T00:00:00Z"), None);
    }

    #[test]
    fn zone_of_the_schedule_or_the_local_zone() {
        // 09:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer.
        assert_eq!(
            next_utc("TZ=America/New_York 0 9 * * *", "2024-01-01T00:00:00Z").unwrap(),
            "2024-01-01T14:00:00Z"
        );
        assert_eq!(
            next_utc("CRON_TZ=America/New_York 0 9 * * *", "2024-07-01T00:00:00Z").unwrap(),
            "2024-07-01T13:00:00Z"
        );
        let schedule = parse("0 9 * * *", &zone).unwrap();
        let tokyo = zone("Asia/Tokyo").unwrap();
        assert_eq!(
            next(&schedule, ts("2024-01-01T00:00:00Z"), &tokyo).unwrap().to_string(),
            "2024-01-02T00:00:00Z"
        );
    }

    #[test]
    fn daylight_saving_changes_follow_go_time_date() {
        // New York skips 02:00-03:00 on 2024-03-10: the hour search steps whole hours from midnight, never
        // sees hour 2 that day and fires at 02:30 EDT the next day (06:30 UTC), as the cron library does.
        assert_eq!(
            next_utc("TZ=America/New_York 30 2 * * *", "2024-03-10T05:00:00Z").unwrap(),
            "2024-03-11T06:30:00Z"
        );
        // Go's time.Date gives 01:30 EST for the skipped 02:30 in New York, and 03:30 CEST in Berlin.
        let search = |name: &str| {
            let zone = TimeZone::get(name).unwrap();
            let fields = match parse("* * * * *", &zone_lookup_none).unwrap().kind {
                ScheduleKind::Fields(f) => f,
                ScheduleKind::Every { .. } => unreachable!(),
            };
            let t = Search {
                fields: &fields,
                zone: &zone,
            }
            .date(2024, 3, if name == "Europe/Berlin" { 31 } else { 10 }, 2, 30, 0)
            .unwrap();
            Timestamp::from_second(t).unwrap().to_string()
        };
        assert_eq!(search("America/New_York"), "2024-03-10T06:30:00Z");
        assert_eq!(search("Europe/Berlin"), "2024-03-31T01:30:00Z");
        // 01:30 happens twice on 2024-11-03; the first (EDT) fires.
        assert_eq!(
            next_utc("TZ=America/New_York 30 1 * * *", "2024-11-03T04:00:00Z").unwrap(),
            "2024-11-03T05:30:00Z"
        );
    }
}
