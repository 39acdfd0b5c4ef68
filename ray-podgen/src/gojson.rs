//! Go `encoding/json` formatting of the small JSON values KubeRay writes into `ray start` flags:
//! float64 numbers and string-keyed float maps (keys sorted, HTML characters escaped).

use std::collections::BTreeMap;
use std::fmt::Write;

/// Formats a float as Go's `encoding/json` does: shortest representation, no `.0` on integral
/// values, exponent form (`1e+21`, `1e-07`) only below 1e-6 or from 1e21 on.
pub fn format_float(value: f64) -> String {
    if !value.is_finite() {
        // Go refuses to encode these; KubeRay then logs and skips. Keep something printable.
        return "null".to_owned();
    }
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let formatted = format!("{value:e}");
        let (mantissa, exponent) = formatted.split_once('e').unwrap_or((&formatted, "0"));
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(rest) => ('-', rest),
            None => ('+', exponent),
        };
        let digits = if digits.len() < 2 {
            format!("0{digits}")
        } else {
            digits.to_owned()
        };
        return format!("{mantissa}e{sign}{digits}");
    }
    format!("{value}")
}

/// Writes `text` as a Go JSON string literal (escapes `<`, `>`, `&`, U+2028 and U+2029 too).
pub fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `json.Marshal(map[string]float64)`: keys in byte order.
pub fn float_map(map: &BTreeMap<String, f64>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(&mut out, key);
        out.push(':');
        out.push_str(&format_float(*value));
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        assert_eq!(format_float(4.0), "4");
        assert_eq!(format_float(0.5), "0.5");
        assert_eq!(format_float(1e21), "1e+21");
        assert_eq!(format_float(1e-7), "1e-07");
        assert_eq!(format_float(1e20), "100000000000000000000");
        assert_eq!(format_float(0.000001), "0.000001");
        assert_eq!(format_float(-2.25), "-2.25");
        assert_eq!(format_float(0.0), "0");
    }

    #[test]
    fn map_sorted_and_escaped() {
        let map = BTreeMap::from([("b<".to_owned(), 2.0), ("a".to_owned(), 1.5)]);
        assert_eq!(float_map(&map), r#"{"a":1.5,"b\u003c":2}"#);
    }
}
