//! Go's `fmt` renderings of decoded JSON values, as kube-apiserver prints them in field errors
//! (`Invalid value: 5`, `Invalid value: "x"`, `Invalid value: 1e+308`).

use kube_compat::go_strconv::quote;
use serde_json::Value;

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`): shortest digits, `%e` form when the
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`), plain decimals otherwise.
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust's `{:e}` gives the shortest round-tripping digits, e.g. `1.234567e6`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1;
    let out = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if (point as usize) >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{out}")
}

/// Go's `%v` of a JSON number as the API server decodes it (int64 when it fits, float64 otherwise).
pub fn number_v(n: &serde_json::Number) -> String {
    match n.as_i64() {
        Some(i) => i.to_string(),
        None => float_v(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// Go's `%#v` of a decoded JSON value inside an `interface{}` container.
fn sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        Value::String(s) => quote(s),
        Value::Array(a) => format!(
            "[]interface {{}}{{{}}}",
            a.iter().map(sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let body: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", quote(k), sharp_v(&m[k])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", body.join(", "))
        }
    }
}

/// How `field.Error` prints a bad value: strings quoted, numbers and booleans bare, `"null"` for nil,
/// containers with `%#v`.
pub fn bad_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_v(n),
        Value::String(s) => quote(s),
        other => sharp_v(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go_percent_v() {
        assert_eq!(float_v(1e308), "1e+308");
        assert_eq!(float_v(0.5), "0.5");
        assert_eq!(float_v(3.0), "3");
        assert_eq!(float_v(100000.0), "100000");
        assert_eq!(float_v(1234567.0), "1.234567e+06");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-2.5), "-2.5");
        assert_eq!(float_v(3e9), "3e+09");
    }

    #[test]
    fn bad_values_print_like_field_error() {
        assert_eq!(bad_value(&json!("a\"b")), "\"a\\\"b\"");
        assert_eq!(bad_value(&json!(5)), "5");
        assert_eq!(bad_value(&json!(null)), "\"null\"");
        assert_eq!(
            bad_value(&json!({"b": 1, "a": "x"})),
            "map[string]interface {}{\"a\":\"x\", \"b\":1}"
        );
    }
}
