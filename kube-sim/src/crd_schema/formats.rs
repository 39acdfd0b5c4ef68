//! The string formats kube-apiserver checks on custom resources (`date-time`, `byte`, `uuid`, `ipv4`, ...).

use base64::Engine;

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn is_hostname(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s.trim_end_matches('.').split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split([':', '-']).collect();
    matches!(parts.len(), 6 | 8 | 20)
        && parts
            .iter()
            .all(|p| p.len() == 2 && p.bytes().all(|c| c.is_ascii_hexdigit()))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let max = match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => 32,
        Ok(std::net::IpAddr::V6(_)) => 128,
        Err(_) => return false,
    };
    bits.parse::<u8>().is_ok_and(|b| b <= max) && !bits.starts_with('+')
}

/// Whether `s` is valid for `format` as upstream's format registry checks it; unknown formats pass.
pub fn is_valid(format: &str, s: &str) -> bool {
    match format.replace('-', "").as_str() {
        "datetime" => s.parse::<jiff::Timestamp>().is_ok(),
        "date" => s.len() == 10 && s.parse::<jiff::civil::Date>().is_ok(),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(s),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "email" => s.split_once('@').is_some_and(|(u, d)| !u.is_empty() && is_hostname(d)),
        "duration" => kube_compat::go_duration::parse(s).is_ok(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_valid_and_reject_garbage() {
        assert!(is_valid("date-time", "2024-01-02T03:04:05Z"));
        assert!(!is_valid("date-time", "yesterday"));
        assert!(is_valid("byte", "aGVsbG8="));
        assert!(!is_valid("byte", "not base64!"));
        assert!(is_valid("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!is_valid("ipv4", "300.1.1.1"));
        assert!(is_valid("cidr", "10.0.0.0/8"));
        assert!(is_valid("password", "anything"));
    }
}
