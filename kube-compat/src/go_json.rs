//! JSON text as Go's `encoding/json` writes it, for values that end up in flags and annotations where
//! a byte-for-byte match with KubeRay matters.
//!
//! Go's encoder differs from serde_json's in three visible ways:
//!
//! * **HTML-safe strings**: `<`, `>` and `&` are written as `\u003c`, `\u003e`, `\u0026`, and the
//!   line and paragraph separators U+2028 / U+2029 as `\u2028` / `\u2029`.
//! * **Floats** in the shortest form that reads back exactly, without `.0` on whole numbers, and in
//!   exponent form (`1e+21`, `1e-07`: signed, at least two digits) only below 1e-6 or from 1e21 on.
//! * **Maps** are written with their keys sorted by bytes; structs in field order.
//!
//! Two writers cover KubeRay's uses:
//!
//! * [`to_string_sorted`] (and [`float_map`], [`string_map`]) for values Go marshals from maps or
//!   decoded YAML: keys sorted, Go's float format, strings through [`write_string`], which writes
//!   control characters other than `\n`, `\r`, `\t` as `\u00XX` (backspace and form feed included,
//!   as Go did before 1.22).
//! * [`to_string_in_order`] for objects built in Go struct-field order: serde_json's compact output
//!   in the value's own key order with the HTML-safe escapes applied. Its numbers and control
//!   characters are serde_json's (`\b`, `\f` short, as Go writes them since 1.22), which is exact
//!   for the integers and strings it is used for.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use crate::go_strconv::push_shared_escape;

/// Formats a float as Go's `encoding/json` does: shortest representation, no `.0` on integral
/// values, exponent form (`1e+21`, `1e-07`) only below 1e-6 or from 1e21 on.
///
/// Go refuses to encode NaN and the infinities; this writes `null` for them, so the output stays
/// valid JSON.
pub fn format_float(value: f64) -> String {
    if !value.is_finite() {
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

/// Appends `text` as a Go JSON string literal: `\"`, `\\`, `\n`, `\r`, `\t`, the HTML-safe escapes
/// and `\u00XX` for every other control character.
pub fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        if push_shared_escape(out, c) {
            continue;
        }
        match c {
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

/// Appends a JSON object of `entries` in the given order, each value written by `write_value`.
fn write_object<'a, V>(
    out: &mut String,
    entries: impl IntoIterator<Item = (&'a str, V)>,
    mut write_value: impl FnMut(&mut String, V),
) {
    out.push('{');
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, value);
    }
    out.push('}');
}

/// `json.Marshal(map[string]float64)`: keys in byte order, Go's float format.
pub fn float_map(map: &BTreeMap<String, f64>) -> String {
    let mut out = String::new();
    write_object(&mut out, map.iter().map(|(k, v)| (k.as_str(), *v)), |out, value| {
        out.push_str(&format_float(value));
    });
    out
}

/// `json.Marshal(map[string]string)`: keys in byte order, Go's string escaping.
pub fn string_map(map: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    write_object(
        &mut out,
        map.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        write_string,
    );
    out
}

/// Go's `json.Marshal` of a decoded JSON/YAML value (`interface{}`): compact, object keys sorted by
/// bytes, integers as integers, other numbers in Go's float format, strings through [`write_string`].
pub fn to_string_sorted(value: &Value) -> String {
    let mut out = String::new();
    write_sorted(&mut out, value);
    out
}

/// Appends `value` as [`to_string_sorted`] writes it.
fn write_sorted(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                out.push_str(&n.to_string());
            } else {
                out.push_str(&format_float(n.as_f64().unwrap_or_default()));
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&str, &Value)> = map.iter().map(|(k, v)| (k.as_str(), v)).collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            write_object(out, entries, write_sorted);
        }
    }
}

/// Compact JSON of `value` in its own key order (a Go struct's field order when built that way),
/// with Go's HTML-safe escaping. The escaped characters can only occur inside strings, so replacing
/// them in serde_json's text is exact.
pub fn to_string_in_order(value: &Value) -> String {
    let plain = value.to_string();
    let mut out = String::with_capacity(plain.len());
    for c in plain.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(format_float(f64::NAN), "null");
    }

    #[test]
    fn map_sorted_and_escaped() {
        let map = BTreeMap::from([("b<".to_owned(), 2.0), ("a".to_owned(), 1.5)]);
        assert_eq!(float_map(&map), r#"{"a":1.5,"b\u003c":2}"#);
        let map = BTreeMap::from([("k&".to_owned(), "v>\n".to_owned()), ("a".to_owned(), String::new())]);
        assert_eq!(string_map(&map), r#"{"a":"","k\u0026":"v\u003e\n"}"#);
        assert_eq!(string_map(&BTreeMap::new()), "{}");
    }

    #[test]
    fn strings_escape_controls_and_separators() {
        let mut out = String::new();
        write_string(&mut out, "\"\\\t\r\u{1}\u{8}\u{2028}\u{2029}é");
        assert_eq!(out, r#""\"\\\t\r\u0001\u0008\u2028\u2029é""#);
    }

    #[test]
    fn sorted_writer_sorts_keys_and_keeps_integers() {
        let value = json!({"b": [1, 2.5, null, true], "a": {"z": "<", "y": 1e21}, "A": -3});
        assert_eq!(
            to_string_sorted(&value),
            r#"{"A":-3,"a":{"y":1e+21,"z":"\u003c"},"b":[1,2.5,null,true]}"#
        );
    }

    #[test]
    fn in_order_writer_keeps_key_order_and_escapes_html() {
        let value = json!({"b": "x&y", "a": ["<tag>", "\u{2028}", "\u{8}"]});
        assert_eq!(
            to_string_in_order(&value),
            r#"{"b":"x\u0026y","a":["\u003ctag\u003e","\u2028","\b"]}"#
        );
    }
}
