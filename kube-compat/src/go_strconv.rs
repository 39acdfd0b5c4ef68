//! Go's `strconv` conversions between strings and values, where Go accepts or writes something Rust's
//! standard conversions do not: `ParseBool`'s spellings, `ParseInt` with base prefixes and `_`
//! separators, `Atoi`'s error reasons, and `Quote`'s escapes.

use std::fmt::Write;

/// Why Go's `strconv` rejects a number; the messages are Go's `ErrSyntax` / `ErrRange` texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NumError {
    /// Not a number of the expected form.
    #[error("invalid syntax")]
    Syntax,
    /// A number, but outside the type's range.
    #[error("value out of range")]
    Range,
}

impl NumError {
    /// Go's reason text (`invalid syntax` / `value out of range`), for messages built at compile time.
    pub fn reason(self) -> &'static str {
        match self {
            NumError::Syntax => "invalid syntax",
            NumError::Range => "value out of range",
        }
    }
}

/// Go's `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`.
pub fn parse_bool(value: &str) -> Result<bool, NumError> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(NumError::Syntax),
    }
}

/// Go's `strconv.Atoi` (64-bit): an optional sign and decimal digits.
pub fn atoi(value: &str) -> Result<i64, NumError> {
    value.parse::<i64>().map_err(|err| match err.kind() {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => NumError::Range,
        _ => NumError::Syntax,
    })
}

/// Go's `strconv.ParseInt(value, 0, 64)`: an optional sign, then `0x` / `0o` / `0b` / a leading `0`
/// (octal) or plain decimal; `_` separators only after a base prefix.
pub fn parse_int(value: &str) -> Result<i64, NumError> {
    let (negative, digits) = match value.as_bytes().first() {
        None => return Err(NumError::Syntax),
        Some(b'-') => (true, &value[1..]),
        Some(b'+') => (false, &value[1..]),
        _ => (false, value),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, rest) = if let Some(r) = lower.strip_prefix("0x") {
        (16, r)
    } else if let Some(r) = lower.strip_prefix("0o") {
        (8, r)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (2, r)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        if lower.contains('_') {
            return Err(NumError::Syntax);
        }
        (10, lower.as_str())
    };
    let cleaned: String = rest.chars().filter(|c| *c != '_').collect();
    if cleaned.is_empty() || cleaned.starts_with(['+', '-']) {
        return Err(NumError::Syntax);
    }
    let magnitude = i128::from_str_radix(&cleaned, radix).map_err(|err| match err.kind() {
        std::num::IntErrorKind::PosOverflow => NumError::Range,
        _ => NumError::Syntax,
    })?;
    let signed = if negative { -magnitude } else { magnitude };
    i64::try_from(signed).map_err(|_| NumError::Range)
}

/// Go's `strconv.ParseFloat(value, 64)` for decimal and exponent forms, `Inf` and `NaN` (any case,
/// optionally signed). Hexadecimal floats and `_` separators are rejected; a value beyond the `f64`
/// range gives ±infinity rather than Go's range error.
pub fn parse_float(value: &str) -> Result<f64, NumError> {
    if value.is_empty() || value.contains('_') {
        return Err(NumError::Syntax);
    }
    value.parse::<f64>().map_err(|_| NumError::Syntax)
}

/// Go's `strconv.Quote` (and `%q` of a string): a double-quoted string with `\"`, `\\`, the C
/// escapes (`\a \b \f \n \r \t \v`), `\xNN` for other ASCII control bytes and `\uNNNN` /
/// `\UNNNNNNNN` for other non-printable characters; printable Unicode is kept.
pub fn quote(text: &str) -> String {
    quote_with(text, Escapes::Full)
}

/// A reduced `%q`: like [`quote`] for `"`, `\\`, `\n`, `\r` and `\t`, every other ASCII control byte
/// as `\xNN` (BEL, BS, VT and FF included, where Go writes `\a \b \v \f`), and every other character
/// kept as is (Go escapes non-printable non-ASCII ones). KubeRay-compatible validation messages use it.
pub fn quote_ascii_controls(text: &str) -> String {
    quote_with(text, Escapes::AsciiControls)
}

/// Appends the escape that Go's quoted literals and JSON strings share for `c` (`\"`, `\\`, `\n`,
/// `\r`, `\t`); `false`, appending nothing, when `c` has none.
pub(crate) fn push_shared_escape(out: &mut String, c: char) -> bool {
    let escape = match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        _ => return false,
    };
    out.push_str(escape);
    true
}

/// Which escapes a quoting applies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    /// Everything `strconv.Quote` escapes.
    Full,
    /// Only `"`, `\\` and the ASCII control characters, with no C escapes beyond `\n \r \t`.
    AsciiControls,
}

/// Quotes `text` with the given escapes.
fn quote_with(text: &str, escapes: Escapes) -> String {
    let full = escapes == Escapes::Full;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if push_shared_escape(&mut out, c) {
            continue;
        }
        match c {
            '\u{7}' if full => out.push_str("\\a"),
            '\u{8}' if full => out.push_str("\\b"),
            '\u{b}' if full => out.push_str("\\v"),
            '\u{c}' if full => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if full && (c.is_control() || (c.is_whitespace() && c != ' ')) => {
                let code = u32::from(c);
                if code < 0x1_0000 {
                    let _ = write!(out, "\\u{code:04x}");
                } else {
                    let _ = write!(out, "\\U{code:08x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bools() {
        for text in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(text), Ok(true), "{text}");
        }
        for text in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(text), Ok(false), "{text}");
        }
        assert_eq!(parse_bool("yes"), Err(NumError::Syntax));
        assert_eq!(parse_bool("tRUE"), Err(NumError::Syntax));
    }

    #[test]
    fn atoi_reasons() {
        assert_eq!(atoi("300"), Ok(300));
        assert_eq!(atoi("-1"), Ok(-1));
        assert_eq!(atoi("+7"), Ok(7));
        assert_eq!(atoi("1.5"), Err(NumError::Syntax));
        assert_eq!(atoi(""), Err(NumError::Syntax));
        assert_eq!(atoi("99999999999999999999"), Err(NumError::Range));
        assert_eq!(NumError::Range.to_string(), "value out of range");
        assert_eq!(NumError::Syntax.to_string(), "invalid syntax");
        assert_eq!(NumError::Range.reason(), NumError::Range.to_string());
        assert_eq!(NumError::Syntax.reason(), NumError::Syntax.to_string());
    }

    #[test]
    fn ints_with_base_prefixes() {
        assert_eq!(parse_int("0x10"), Ok(16));
        assert_eq!(parse_int("0x1_0"), Ok(16));
        assert_eq!(parse_int("010"), Ok(8));
        assert_eq!(parse_int("0o17"), Ok(15));
        assert_eq!(parse_int("-0b101"), Ok(-5));
        assert_eq!(parse_int("7"), Ok(7));
        assert_eq!(parse_int("0"), Ok(0));
        assert_eq!(parse_int("1_0"), Err(NumError::Syntax));
        assert_eq!(parse_int("0x"), Err(NumError::Syntax));
        assert_eq!(parse_int("--1"), Err(NumError::Syntax));
        assert_eq!(parse_int(""), Err(NumError::Syntax));
        assert_eq!(parse_int("9223372036854775808"), Err(NumError::Range));
        assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
    }

    #[test]
    fn floats() {
        assert_eq!(parse_float("50"), Ok(50.0));
        assert_eq!(parse_float("100.0"), Ok(100.0));
        assert_eq!(parse_float("1e3"), Ok(1000.0));
        assert_eq!(parse_float("-Inf"), Ok(f64::NEG_INFINITY));
        assert!(parse_float("NaN").is_ok_and(f64::is_nan));
        assert_eq!(parse_float("fast"), Err(NumError::Syntax));
        assert_eq!(parse_float("1_0"), Err(NumError::Syntax));
        assert_eq!(parse_float(""), Err(NumError::Syntax));
    }

    #[test]
    fn quote_matches_strconv() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\nnl\u{1}"), r#""tab\there\nnl\x01""#);
        assert_eq!(quote("héllo\u{2028}"), "\"héllo\\u2028\"");
        assert_eq!(quote("\u{7}\u{8}\u{b}\u{c}\u{7f}"), r#""\a\b\v\f\x7f""#);
    }

    #[test]
    fn ascii_control_quoting_keeps_other_characters() {
        assert_eq!(quote_ascii_controls("a\"b\\c\n\t\r"), r#""a\"b\\c\n\t\r""#);
        assert_eq!(
            quote_ascii_controls("\u{7}\u{8}\u{b}\u{c}\u{7f}"),
            r#""\x07\x08\x0b\x0c\x7f""#
        );
        assert_eq!(quote_ascii_controls("héllo\u{2028}"), "\"héllo\u{2028}\"");
    }
}
