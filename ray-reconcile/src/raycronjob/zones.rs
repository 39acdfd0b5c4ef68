//! Time zone names as Go's `time.LoadLocation` reads them, over a zone database the caller supplies:
//! `""` and `UTC` are UTC, `Local` is the operator's own zone, anything else is an IANA name.

use jiff::tz::TimeZone;

/// Resolves `name` like Go's `time.LoadLocation`; `local` is the operator's zone and `database` looks up
/// IANA names. The error text is Go's.
pub fn load_location(
    name: &str,
    local: &TimeZone,
    database: &dyn Fn(&str) -> Option<TimeZone>,
) -> Result<TimeZone, String> {
    match name {
        "" | "UTC" => Ok(TimeZone::UTC),
        "Local" => Ok(local.clone()),
        // Go refuses names that could leave the zone directory.
        _ if name.contains("..") || name.starts_with('/') || name.starts_with('\\') => {
            Err("time: invalid location name".to_owned())
        }
        _ => database(name).ok_or_else(|| format!("unknown time zone {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(name: &str) -> Option<TimeZone> {
        (name == "Asia/Tokyo").then(|| TimeZone::fixed(jiff::tz::offset(9)))
    }

    #[test]
    fn go_names_resolve_like_load_location() {
        let local = TimeZone::fixed(jiff::tz::offset(2));
        assert_eq!(load_location("UTC", &local, &database), Ok(TimeZone::UTC));
        assert_eq!(load_location("", &local, &database), Ok(TimeZone::UTC));
        assert_eq!(load_location("Local", &local, &database), Ok(local.clone()));
        assert!(load_location("Asia/Tokyo", &local, &database).is_ok());
        assert_eq!(
            load_location("Mars/Olympus", &local, &database),
            Err("unknown time zone Mars/Olympus".to_owned())
        );
        assert_eq!(
            load_location("../etc/passwd", &local, &database),
            Err("time: invalid location name".to_owned())
        );
    }
}
