//! Kubernetes resource quantities (`500m`, `1.5Gi`, `12e6`) as the Kubernetes API machinery reads,
//! adds, multiplies, compares and prints them.
//!
//! [`Qty`] reproduces apimachinery's `resource.Quantity` semantics, without floats:
//!
//! * **Value**: an exact decimal held as a signed count of nano-units (`i128`). Parsing rounds a
//!   non-zero value away from zero to nano precision, exactly as Go does (`0.1n` → `1n`).
//!   The representable range is about ±1.7 × 10²⁹ units; parsing a larger magnitude is a
//!   [`QuantityError::OutOfRange`] (Go would keep it, which no real resource request needs),
//!   and [`Qty::add`] / [`Qty::mul`] saturate at that bound.
//! * **Format**: remembered from the suffix at parse time (`Ki`…`Ei` → [`QuantityFormat::BinarySI`],
//!   `e<n>` → [`QuantityFormat::DecimalExponent`], anything else → [`QuantityFormat::DecimalSI`]).
//!   A BinarySI input is capped at 2⁶³−1 and, when it lies strictly between 0 and 1, becomes
//!   DecimalSI, as in apimachinery.
//! * **Arithmetic**: [`Qty::add`] keeps the receiver's format unless the receiver is zero, in which
//!   case it takes the other operand's format; [`Qty::mul`] keeps the format.
//! * **Printing** ([`fmt::Display`], serde): the canonical string Kubernetes
//!   emits (`768m`, `4296Mi`, `1k`, `2073741824`, `0`). Like Go, a freshly parsed value whose input
//!   was already in a form Go accepts as canonical remembers and re-prints that exact spelling
//!   (so `+1` prints `+1` and `01` prints `01`); any arithmetic forgets it.
//!
//! Equality: `PartialEq`/`Eq` compare the value **and** the format (the remembered spelling does
//! not take part). Use [`Qty::cmp_value`] / [`Qty::eq_value`] (Go's `Cmp`) to compare values only,
//! e.g. `1Gi` and `1024Mi` are value-equal and `==`; `1Gi` and `1073741824` are value-equal but
//! not `==` (BinarySI vs DecimalSI).
//!
//! Integer and float views: [`Qty::value_ceil`] / [`Qty::milli_value_ceil`] are Go's `Value()` /
//! `MilliValue()` (rounded away from zero, saturated to `i64`); [`Qty::as_millis_ceil`] is the
//! unsaturated milli count a scheduler sums. [`approximate_f64`] is Go's `AsApproximateFloat64()`:
//! it works on the text, because the float Go produces depends on how the number was written
//! (`0.3` gives `0.30000000000000004`, the product of `3` and `0.1`), which the exact value forgets.
//!
//! Deliberate deviation: a BinarySI value of 1024 Ei or more prints with the `Ei` suffix and a
//! larger mantissa (Go drops the suffix and prints a wrong value); DecimalSI values beyond `E`
//! print as `<m>e<exp>` exactly like current apimachinery.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Nano-units per unit: the fixed internal scale.
const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// Largest magnitude (in nanos) a BinarySI input keeps after parsing: Go caps it at 2^63-1.
const BINARY_CAP_NANOS: i128 = (i64::MAX as i128) * NANOS_PER_UNIT;
/// apimachinery's `maxInt64Factors`: digits that fit the fast int64 parse path.
const MAX_INT64_FACTORS: i64 = 18;
/// The most decimal digits an `i128` nano count can have.
const MAX_NANO_DIGITS: usize = 39;
/// Characters apimachinery's scanner accepts in a suffix before an optional signed exponent.
const SUFFIX_CHARS: &[u8] = b"eEinumkKMGTP";
/// Decimal suffixes and their powers of ten.
const DECIMAL_SUFFIXES: [(&str, i32); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];
/// Binary suffixes, index = power of 1024.
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// How a quantity is printed; remembered from the suffix it was parsed with (apimachinery `Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantityFormat {
    /// Powers of ten with SI suffixes (`n u m "" k M G T P E`), e.g. `500m`, `1k`.
    DecimalSI,
    /// Powers of 1024 with IEC suffixes (`Ki Mi Gi Ti Pi Ei`), e.g. `1536Mi`.
    BinarySI,
    /// Scientific notation `<mantissa>e<exp>`, e.g. `12e6`.
    DecimalExponent,
}

/// Why a quantity string was rejected. Every variant names the offending input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text does not have the shape `<signed number><suffix>` (Go `ErrFormatWrong`).
    #[error(
        "invalid quantity {input:?}: quantities must match the regular expression \
         '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong {
        /// The rejected text.
        input: String,
    },
    /// The suffix is not a known SI, IEC or exponent suffix (Go `ErrSuffix`).
    #[error("invalid quantity {input:?}: unable to parse quantity's suffix")]
    Suffix {
        /// The rejected text.
        input: String,
    },
    /// The magnitude exceeds what this implementation represents (about 1.7e29 units).
    #[error("invalid quantity {input:?}: magnitude exceeds the supported range of about 1.7e29")]
    OutOfRange {
        /// The rejected text.
        input: String,
    },
    /// A container's resource entry could not be parsed.
    #[error("resource {resource:?} of container {container:?}: {source}")]
    InContainer {
        /// The container's name.
        container: String,
        /// The resource name (`cpu`, `memory`, `nvidia.com/gpu`, …).
        resource: String,
        /// The underlying parse error.
        #[source]
        source: Box<QuantityError>,
    },
}

/// An exact Kubernetes quantity: a decimal value with nano precision plus its print format.
///
/// See the module docs for the semantics of equality, arithmetic and printing.
#[derive(Clone, Debug)]
pub struct Qty {
    /// The value in nano-units (value × 10⁹).
    nanos: i128,
    /// How the value prints.
    format: QuantityFormat,
    /// The exact input text when Go would re-print it verbatim; cleared by arithmetic.
    spelling: Option<Box<str>>,
}

impl PartialEq for Qty {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos && self.format == other.format
    }
}

impl Eq for Qty {}

/// Scanner output: the pieces of `<sign><num>.<denom><suffix>`.
struct Scanned<'a> {
    negative: bool,
    /// Integer digits without leading zeros (`"0"` when there are none).
    num: &'a str,
    /// Fraction digits (may be empty).
    denom: &'a str,
    suffix: &'a str,
}

/// Splits a quantity string the way apimachinery's `parseQuantityString` does, including its
/// leniencies (`"-"`, `"."` and `"1."` are accepted).
fn scan(input: &str) -> Result<Scanned<'_>, QuantityError> {
    let bytes = input.as_bytes();
    let end = bytes.len();
    let mut pos = 0;
    let mut negative = false;
    match bytes.first() {
        Some(b'-') => {
            negative = true;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && bytes[pos] == b'0' {
        pos += 1;
    }
    let zero = Scanned {
        negative,
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Ok(zero);
    }
    let num_start = pos;
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == num_start { "0" } else { &input[num_start..pos] };
    if pos >= end {
        return Ok(Scanned { num, ..zero });
    }
    let mut denom = "";
    if bytes[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &input[denom_start..pos];
        if pos >= end {
            return Ok(Scanned { num, denom, ..zero });
        }
    }
    let suffix_start = pos;
    while pos < end && SUFFIX_CHARS.contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < end && matches!(bytes[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(QuantityError::FormatWrong {
            input: input.to_owned(),
        });
    }
    Ok(Scanned {
        negative,
        num,
        denom,
        suffix: &input[suffix_start..],
    })
}

/// The base (10 or 2), power and format a suffix stands for (apimachinery `suffixer.interpret`).
fn interpret_suffix(suffix: &str) -> Option<(u32, i32, QuantityFormat)> {
    if let Some((_, exp)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((10, *exp, QuantityFormat::DecimalSI));
    }
    if let Some(index) = BINARY_SUFFIXES.iter().skip(1).position(|s| *s == suffix) {
        let exp = i32::try_from((index + 1) * 10).ok()?;
        return Some((2, exp, QuantityFormat::BinarySI));
    }
    let rest = suffix.strip_prefix(['e', 'E'])?;
    if rest.is_empty() {
        return None;
    }
    let parsed: i64 = rest.parse().ok()?;
    // Go converts with int32(parsed): the same two's-complement truncation.
    Some((10, parsed as i32, QuantityFormat::DecimalExponent))
}

/// Multiplies a big-endian decimal digit vector by two in place.
fn double_digits(digits: &mut Vec<u8>) {
    let mut carry = 0;
    for digit in digits.iter_mut().rev() {
        let doubled = *digit * 2 + carry;
        *digit = doubled % 10;
        carry = doubled / 10;
    }
    if carry > 0 {
        digits.insert(0, carry);
    }
}

/// Folds decimal digits into an `i128`, `None` on overflow.
fn digits_to_i128(digits: &[u8]) -> Option<i128> {
    digits
        .iter()
        .try_fold(0i128, |acc, d| acc.checked_mul(10)?.checked_add(i128::from(*d)))
}

/// Exact magnitude in nanos of `num.denom × base^exponent`, rounded away from zero to a whole
/// nano; `None` when it does not fit an `i128`.
fn magnitude_nanos(num: &str, denom: &str, base: u32, exponent: i32) -> Option<i128> {
    let mut digits: Vec<u8> = num.bytes().chain(denom.bytes()).map(|b| b - b'0').collect();
    let leading_zeros = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..leading_zeros);
    if digits.is_empty() {
        return Some(0);
    }
    let mut shift = 9 - i64::try_from(denom.len()).ok()?;
    if base == 10 {
        shift += i64::from(exponent);
    } else {
        for _ in 0..exponent {
            double_digits(&mut digits);
        }
    }
    if shift >= 0 {
        let total = i64::try_from(digits.len()).ok()? + shift;
        if total > MAX_NANO_DIGITS as i64 {
            return None;
        }
        let value = digits_to_i128(&digits)?;
        let scale = 10i128.checked_pow(u32::try_from(shift).ok()?)?;
        return value.checked_mul(scale);
    }
    let dropped = usize::try_from(-shift).unwrap_or(usize::MAX);
    if dropped >= digits.len() {
        // Every significant digit lies below a nano: round up to the smallest unit.
        return Some(1);
    }
    let (kept, tail) = digits.split_at(digits.len() - dropped);
    let value = digits_to_i128(kept)?;
    if tail.iter().any(|d| *d != 0) {
        value.checked_add(1)
    } else {
        Some(value)
    }
}

/// Whether Go's fast int64 parse path applies and would keep the input text as the printed form.
fn go_keeps_spelling(scanned: &Scanned<'_>, exponent: i32, format: QuantityFormat) -> bool {
    let num_len = scanned.num.len() as i64;
    let denom_len = scanned.denom.len() as i64;
    match format {
        QuantityFormat::BinarySI => {
            if !scanned.denom.is_empty() {
                return false;
            }
            let precision = 15 - num_len - i64::from(exponent) * 3 / 10 - 1;
            if precision < 0 {
                return false;
            }
            let Ok(value) = scanned.num.parse::<i64>() else {
                return false;
            };
            value.checked_mul(1i64 << exponent).is_some() && exponent % 10 == 0 && value & 0x07 != 0
        }
        QuantityFormat::DecimalSI | QuantityFormat::DecimalExponent => {
            let precision = MAX_INT64_FACTORS - (num_len + denom_len);
            let scale = i64::from(exponent) - denom_len;
            if precision < 0 || scale < -9 {
                return false;
            }
            let shifted = format!("{}{}", scanned.num, scanned.denom);
            scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
        }
    }
}

/// Rounds `nanos / divisor` away from zero.
fn div_away_from_zero(nanos: i128, divisor: i128) -> i128 {
    let quotient = nanos / divisor;
    if nanos % divisor == 0 {
        quotient
    } else if nanos > 0 {
        quotient + 1
    } else {
        quotient - 1
    }
}

/// Clamps an `i128` into `i64`.
fn saturate_i64(value: i128) -> i64 {
    i64::try_from(value).unwrap_or(if value > 0 { i64::MAX } else { i64::MIN })
}

impl Qty {
    /// Parses a quantity exactly as apimachinery's `ParseQuantity` does (no whitespace trimming).
    pub fn parse(input: &str) -> Result<Qty, QuantityError> {
        if input.is_empty() {
            return Err(QuantityError::FormatWrong { input: String::new() });
        }
        if input == "0" {
            return Ok(Qty {
                nanos: 0,
                format: QuantityFormat::DecimalSI,
                spelling: Some("0".into()),
            });
        }
        let scanned = scan(input)?;
        let (base, exponent, mut format) = interpret_suffix(scanned.suffix).ok_or_else(|| QuantityError::Suffix {
            input: input.to_owned(),
        })?;
        let magnitude = match magnitude_nanos(scanned.num, scanned.denom, base, exponent) {
            Some(m) if format == QuantityFormat::BinarySI => m.min(BINARY_CAP_NANOS),
            Some(m) => m,
            None if format == QuantityFormat::BinarySI => BINARY_CAP_NANOS,
            None => {
                return Err(QuantityError::OutOfRange {
                    input: input.to_owned(),
                });
            }
        };
        // Decided on the suffix's own format: Go only keeps the text on its fast int64 path.
        let spelling = go_keeps_spelling(&scanned, exponent, format).then(|| input.into());
        if format == QuantityFormat::BinarySI && magnitude > 0 && magnitude < NANOS_PER_UNIT {
            format = QuantityFormat::DecimalSI;
        }
        let nanos = if scanned.negative { -magnitude } else { magnitude };
        Ok(Qty {
            nanos,
            format,
            spelling,
        })
    }

    /// Parses after trimming surrounding whitespace, as Go does when it decodes a quantity from
    /// JSON or YAML.
    pub fn parse_trimmed(input: &str) -> Result<Qty, QuantityError> {
        Qty::parse(input.trim())
    }

    /// Zero in DecimalSI format (prints `0`); adding anything to it adopts that thing's format.
    pub fn zero() -> Qty {
        Qty {
            nanos: 0,
            format: QuantityFormat::DecimalSI,
            spelling: None,
        }
    }

    /// An integer quantity in the given format (Go `NewQuantity`).
    pub fn from_i64(value: i64, format: QuantityFormat) -> Qty {
        Qty {
            nanos: i128::from(value) * NANOS_PER_UNIT,
            format,
            spelling: None,
        }
    }

    /// `value / 1000` in the given format (Go `NewMilliQuantity`).
    pub fn from_milli(value: i64, format: QuantityFormat) -> Qty {
        Qty {
            nanos: i128::from(value) * 1_000_000,
            format,
            spelling: None,
        }
    }

    /// The value in nano-units (value × 10⁹), exact.
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }

    /// The sum. Keeps `self`'s format, except that a zero `self` takes `other`'s (Go `Add`).
    pub fn add(&self, other: &Qty) -> Qty {
        let format = if self.nanos == 0 { other.format } else { self.format };
        Qty {
            nanos: self.nanos.saturating_add(other.nanos),
            format,
            spelling: None,
        }
    }

    /// The product with an integer; keeps the format (Go `Mul`).
    pub fn mul(&self, factor: i64) -> Qty {
        Qty {
            nanos: self.nanos.saturating_mul(i128::from(factor)),
            format: self.format,
            spelling: None,
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// Compares values only, ignoring format (Go `Cmp`).
    pub fn cmp_value(&self, other: &Qty) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }

    /// Whether the values are equal, ignoring format (Go `Cmp(...) == 0`).
    pub fn eq_value(&self, other: &Qty) -> bool {
        self.nanos == other.nanos
    }

    /// The value rounded away from zero to an integer (Go `Value()`), saturated to `i64`.
    pub fn value_ceil(&self) -> i64 {
        saturate_i64(div_away_from_zero(self.nanos, NANOS_PER_UNIT))
    }

    /// The value × 1000 rounded away from zero (Go `MilliValue()`), saturated to `i64`.
    pub fn milli_value_ceil(&self) -> i64 {
        saturate_i64(div_away_from_zero(self.nanos, 1_000_000))
    }

    /// The value × 1000 rounded away from zero, not saturated: exact milli-units (millicores,
    /// milli-bytes) for sums that may exceed `i64`.
    pub fn as_millis_ceil(&self) -> i128 {
        div_away_from_zero(self.nanos, 1_000_000)
    }

    /// The print format.
    pub fn format(&self) -> QuantityFormat {
        self.format
    }

    /// The canonical string, ignoring any remembered input spelling (Go `CanonicalizeBytes`).
    pub fn canonical_string(&self) -> String {
        if self.nanos == 0 {
            return "0".to_owned();
        }
        let whole_units = self.nanos % NANOS_PER_UNIT == 0;
        let binary_printable = self.nanos.abs() >= 1024 * NANOS_PER_UNIT && whole_units;
        match self.format {
            QuantityFormat::BinarySI if binary_printable => self.binary_string(),
            QuantityFormat::BinarySI | QuantityFormat::DecimalSI => self.decimal_string(false),
            QuantityFormat::DecimalExponent => self.decimal_string(true),
        }
    }

    /// `<mantissa><Ki..Ei>`; only for whole values of magnitude ≥ 1024.
    fn binary_string(&self) -> String {
        let mut mantissa = self.nanos / NANOS_PER_UNIT;
        let mut power = 0;
        while power + 1 < BINARY_SUFFIXES.len() && mantissa % 1024 == 0 && mantissa.abs() >= 1024 {
            mantissa /= 1024;
            power += 1;
        }
        format!("{mantissa}{}", BINARY_SUFFIXES[power])
    }

    /// `<mantissa><suffix>` with the exponent lowered to a multiple of three.
    fn decimal_string(&self, exponent_notation: bool) -> String {
        let mut mantissa = self.nanos;
        let mut exponent: i32 = -9;
        while mantissa % 10 == 0 && mantissa.abs() >= 10 {
            mantissa /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                mantissa *= 10;
                exponent -= 1;
            }
            2 => {
                mantissa *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let si_suffix = DECIMAL_SUFFIXES.iter().find(|(_, e)| *e == exponent).map(|(s, _)| *s);
        match si_suffix {
            Some(suffix) if !exponent_notation => format!("{mantissa}{suffix}"),
            _ if exponent == 0 => format!("{mantissa}"),
            _ => format!("{mantissa}e{exponent}"),
        }
    }
}

impl fmt::Display for Qty {
    /// Prints what Kubernetes prints: the remembered input spelling if Go would keep it, else the
    /// canonical string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.spelling {
            Some(spelling) => f.write_str(spelling),
            None => f.write_str(&self.canonical_string()),
        }
    }
}

impl FromStr for Qty {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Qty, QuantityError> {
        Qty::parse(s)
    }
}

impl serde::Serialize for Qty {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Qty {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Qty, D::Error> {
        let text = String::deserialize(deserializer)?;
        Qty::parse_trimmed(&text).map_err(serde::de::Error::custom)
    }
}

/// Go's `AsApproximateFloat64()` of the quantity `input` (surrounding whitespace trimmed).
///
/// Go computes it from the number as written: the digits, without the decimal point, as an integer
/// mantissa, times a float power of ten (the suffix's exponent less the number of fraction digits)
/// and a float power of two (for `Ki`…`Ei`). So `0.3` gives `0.30000000000000004` (`3 × 0.1`) and
/// `1.5Gi` gives `1610612736`. Rejects what [`Qty::parse`] rejects for its shape or suffix; a
/// magnitude beyond [`Qty`]'s range still has a float.
pub fn approximate_f64(input: &str) -> Result<f64, QuantityError> {
    let input = input.trim();
    if input.is_empty() {
        return Err(QuantityError::FormatWrong { input: String::new() });
    }
    let scanned = scan(input)?;
    let (base, exponent, _) = interpret_suffix(scanned.suffix).ok_or_else(|| QuantityError::Suffix {
        input: input.to_owned(),
    })?;
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    for digit in scanned.num.bytes().chain(scanned.denom.bytes()) {
        match mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(digit - b'0')))
        {
            Some(m) => mantissa = m,
            // More digits than an i128 holds: drop the precision, keep the magnitude.
            None => exp10 = exp10.saturating_add(1),
        }
    }
    let fraction_digits = i32::try_from(scanned.denom.len()).unwrap_or(i32::MAX);
    exp10 = exp10.saturating_sub(fraction_digits);
    let (exp10, exp2) = if base == 10 {
        (exp10.saturating_add(exponent), 0)
    } else {
        (exp10, exponent)
    };
    let signed = if scanned.negative { -mantissa } else { mantissa };
    Ok((signed as f64) * 10f64.powi(exp10) * 2f64.powi(exp2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn q(s: &str) -> Qty {
        Qty::parse(s).unwrap()
    }

    // ---- what Kubernetes prints for sums and products, one assertion per case ----

    #[test]
    fn table_multiplications() {
        assert_eq!(q("256m").mul(3).to_string(), "768m");
        assert_eq!(q("256m").mul(5).to_string(), "1280m");
        assert_eq!(q("1").mul(1000).to_string(), "1k");
        assert_eq!(q("256Mi").mul(3).to_string(), "768Mi");
    }

    #[test]
    fn table_decimal_additions() {
        assert_eq!(q("768m").add(&q("500m")).to_string(), "1268m");
        assert_eq!(q("3").add(&q("500m")).to_string(), "3500m");
        assert_eq!(q("100m").add(&q("900m")).to_string(), "1");
        assert_eq!(q("0.5").add(&q("0.5")).to_string(), "1");
        assert_eq!(q("999").add(&q("1")).to_string(), "1k");
        assert_eq!(q("1").add(&q("2147483647").mul(1)).to_string(), "2147483648");
        assert_eq!(q("1G").add(&q("500M")).to_string(), "1500M");
        assert_eq!(q("512").add(&q("512")).to_string(), "1024");
    }

    #[test]
    fn table_binary_additions() {
        assert_eq!(q("4Gi").add(&q("200Mi")).to_string(), "4296Mi");
        assert_eq!(q("1Gi").add(&q("512Mi")).to_string(), "1536Mi");
        assert_eq!(q("1000Mi").add(&q("24Mi")).to_string(), "1Gi");
        assert_eq!(q("2Gi").add(&q("1Gi").mul(2)).to_string(), "4Gi");
    }

    #[test]
    fn table_single_values() {
        assert_eq!(q("1024Mi").to_string(), "1Gi");
        assert_eq!(q("1.5Gi").to_string(), "1536Mi");
    }

    #[test]
    fn table_mixed_binary_and_decimal() {
        let sum = q("1Gi").add(&q("1G"));
        assert_eq!(sum.to_string(), "2073741824");
        assert_eq!(sum.format(), QuantityFormat::BinarySI);
        let sum = q("1G").add(&q("1Gi"));
        assert_eq!(sum.to_string(), "2073741824");
        assert_eq!(sum.format(), QuantityFormat::DecimalSI);
    }

    #[test]
    fn table_adding_zeros_keeps_format() {
        let mut acc = q("100Mi");
        for _ in 0..5 {
            acc = acc.add(&q("0"));
        }
        assert_eq!(acc.to_string(), "100Mi");
        assert_eq!(Qty::zero().add(&q("100Mi")).format(), QuantityFormat::BinarySI);
        assert_eq!(Qty::zero().add(&q("100Mi")).to_string(), "100Mi");
    }

    // ---- parsing ----

    #[test]
    fn parses_brief_examples() {
        assert_eq!(q("500m").as_nanos(), 500_000_000);
        assert_eq!(q("1.5Gi").as_nanos(), 1_610_612_736 * NANOS_PER_UNIT);
        assert_eq!(q("1e3").as_nanos(), 1000 * NANOS_PER_UNIT);
        assert_eq!(q("1e3").format(), QuantityFormat::DecimalExponent);
        assert_eq!(q("2").as_nanos(), 2 * NANOS_PER_UNIT);
        assert_eq!(q("+1").as_nanos(), NANOS_PER_UNIT);
        assert_eq!(q("-1").as_nanos(), -NANOS_PER_UNIT);
        assert_eq!(q(".5").to_string(), "500m");
        assert_eq!(q("1.5").to_string(), "1500m");
        assert_eq!(q("1E+3").as_nanos(), 1000 * NANOS_PER_UNIT);
        assert_eq!(q("5e-2").to_string(), "50e-3");
    }

    #[test]
    fn parse_rounds_away_from_zero_to_nano() {
        assert_eq!(q("0.1n").to_string(), "1n");
        assert_eq!(q("-0.1n").to_string(), "-1n");
        assert_eq!(q("1.0000000001").to_string(), "1000000001n");
        assert_eq!(q("1e-20").as_nanos(), 1);
        assert_eq!(q("0.0000000000").to_string(), "0");
    }

    #[test]
    fn parse_formats() {
        assert_eq!(q("1Ki").format(), QuantityFormat::BinarySI);
        assert_eq!(q("1k").format(), QuantityFormat::DecimalSI);
        assert_eq!(q("1E").format(), QuantityFormat::DecimalSI);
        assert_eq!(q("1e2").format(), QuantityFormat::DecimalExponent);
        // A BinarySI value strictly between 0 and 1 becomes DecimalSI.
        assert_eq!(q("0.0001Ki").format(), QuantityFormat::DecimalSI);
        assert_eq!(q("0.0001Ki").to_string(), "102400u");
    }

    #[test]
    fn binary_inputs_are_capped_at_int64_max() {
        assert_eq!(q("8Ei").as_nanos(), BINARY_CAP_NANOS);
        assert_eq!(q("8Ei").to_string(), "9223372036854775807");
        assert_eq!(q("7Ei").to_string(), "7Ei");
        // Decimal inputs are not capped.
        assert_eq!(q("10E").to_string(), "10E");
        assert_eq!(q("1000E").to_string(), "1e21");
    }

    #[test]
    fn go_keeps_canonical_looking_input_text() {
        assert_eq!(q("+1").to_string(), "+1");
        assert_eq!(q("01").to_string(), "01");
        assert_eq!(q("1.").to_string(), "1.");
        assert_eq!(q("1.500").to_string(), "1.500");
        assert_eq!(q("1025Ki").to_string(), "1025Ki");
        assert_eq!(q("1e3").to_string(), "1e3");
        // Not kept: trailing 000, leading 0 after shifting, non-multiple-of-3 scale, 8-divisible binary.
        assert_eq!(q("1000m").to_string(), "1");
        assert_eq!(q("0.5").to_string(), "500m");
        assert_eq!(q("1e1").to_string(), "10");
        assert_eq!(q("2048Ki").to_string(), "2Mi");
        // Arithmetic forgets the text.
        assert_eq!(q("+1").add(&q("0")).to_string(), "1");
        assert_eq!(q("+1").mul(1).to_string(), "1");
        assert_eq!(q("+1").canonical_string(), "1");
    }

    #[test]
    fn lenient_inputs_accepted_like_go() {
        assert!(q("-").is_zero());
        assert!(q("+").is_zero());
        assert!(q(".").is_zero());
        assert!(q("000").is_zero());
        assert_eq!(q("000").to_string(), "0");
    }

    #[test]
    fn bad_inputs_are_rejected_with_their_text() {
        for (input, expected) in [
            ("", QuantityError::FormatWrong { input: "".into() }),
            ("abc", QuantityError::FormatWrong { input: "abc".into() }),
            ("1x", QuantityError::FormatWrong { input: "1x".into() }),
            ("1.2.3", QuantityError::FormatWrong { input: "1.2.3".into() }),
            ("1 ", QuantityError::FormatWrong { input: "1 ".into() }),
            ("1mi", QuantityError::Suffix { input: "1mi".into() }),
            ("1e", QuantityError::Suffix { input: "1e".into() }),
            ("1k3", QuantityError::Suffix { input: "1k3".into() }),
            ("1e40", QuantityError::OutOfRange { input: "1e40".into() }),
        ] {
            let err = Qty::parse(input).unwrap_err();
            assert_eq!(err, expected, "input {input:?}");
            assert!(err.to_string().contains(&format!("{input:?}")), "{err}");
        }
        assert!(
            Qty::parse("1mi")
                .unwrap_err()
                .to_string()
                .contains("unable to parse quantity's suffix")
        );
    }

    // ---- accessors and printing ----

    #[test]
    fn value_and_milli_value_round_away_from_zero() {
        assert_eq!(q("1500m").value_ceil(), 2);
        assert_eq!(q("-1500m").value_ceil(), -2);
        assert_eq!(q("2").value_ceil(), 2);
        assert_eq!(q("1n").milli_value_ceil(), 1);
        assert_eq!(q("1.5").milli_value_ceil(), 1500);
        assert_eq!(q("1Gi").value_ceil(), 1_073_741_824);
        assert_eq!(q("100E").mul(1000).value_ceil(), i64::MAX);
    }

    #[test]
    fn printing_edge_cases() {
        assert_eq!(Qty::from_i64(512, QuantityFormat::BinarySI).to_string(), "512");
        assert_eq!(Qty::from_i64(1024, QuantityFormat::BinarySI).to_string(), "1Ki");
        assert_eq!(Qty::from_i64(-2048, QuantityFormat::BinarySI).to_string(), "-2Ki");
        assert_eq!(Qty::from_milli(1500, QuantityFormat::BinarySI).to_string(), "1500m");
        assert_eq!(
            Qty::from_i64(12_000_000, QuantityFormat::DecimalExponent).to_string(),
            "12e6"
        );
        assert_eq!(Qty::from_i64(1, QuantityFormat::DecimalExponent).to_string(), "1");
        assert_eq!(Qty::from_milli(1, QuantityFormat::DecimalExponent).to_string(), "1e-3");
        assert_eq!(Qty::from_i64(10, QuantityFormat::DecimalSI).to_string(), "10");
        assert_eq!(Qty::from_i64(0, QuantityFormat::BinarySI).to_string(), "0");
        // Beyond Ei the suffix stays Ei (deliberate: Go would print a wrong value).
        assert_eq!(q("1Ei").mul(1024).to_string(), "1024Ei");
    }

    #[test]
    fn equality_is_by_value_and_format() {
        assert_eq!(q("1Gi"), q("1024Mi"));
        assert_ne!(q("1Gi"), q("1073741824"));
        assert!(q("1Gi").eq_value(&q("1073741824")));
        assert_eq!(q("1Gi").cmp_value(&q("1G")), Ordering::Greater);
        assert_eq!(q("+1"), q("1"));
    }

    #[test]
    fn serde_round_trip() {
        let totals: BTreeMap<String, Qty> = serde_json::from_str(r#"{"cpu":"1.5","memory":"1024Mi"}"#).unwrap();
        assert_eq!(
            serde_json::to_string(&totals).unwrap(),
            r#"{"cpu":"1500m","memory":"1Gi"}"#
        );
        assert!(serde_json::from_str::<Qty>(r#""bogus""#).is_err());
    }

    #[test]
    fn parse_trimmed_ignores_surrounding_whitespace() {
        assert_eq!(Qty::parse_trimmed(" 2Gi ").unwrap().to_string(), "2Gi");
        assert!(Qty::parse("1 ").is_err());
    }

    #[test]
    fn value_ceil_examples() {
        for (text, value) in [
            ("500m", 1),
            ("2.5", 3),
            ("4Gi", 4_294_967_296),
            ("1", 1),
            ("2e3", 2000),
            ("100M", 100_000_000),
            ("0", 0),
            ("1.5Gi", 1_610_612_736),
        ] {
            assert_eq!(q(text).value_ceil(), value, "{text}");
        }
        assert!(q("0m").is_zero());
        assert!(Qty::parse("1Xi").is_err());
    }

    #[test]
    fn millis_are_exact_and_round_up() {
        for (text, millis) in [
            ("1", 1000),
            ("250m", 250),
            ("1.5", 1500),
            ("0.1", 100),
            ("1Ki", 1_024_000),
            ("6Gi", 6 * (1 << 30) * 1000),
            ("1.5Gi", 3 * (1 << 29) * 1000),
            ("2k", 2_000_000),
            ("1e3", 1_000_000),
            ("1n", 1),
            ("-2", -2000),
            // Beyond what `milli_value_ceil` can hold.
            ("1000P", 10i128.pow(21)),
        ] {
            assert_eq!(q(text).as_millis_ceil(), millis, "{text}");
        }
        assert_eq!(q("1000P").milli_value_ceil(), i64::MAX);
        assert!(Qty::parse("1Qi").is_err());
    }

    #[test]
    fn approximate_floats_follow_the_written_number() {
        assert_eq!(approximate_f64("4").unwrap(), 4.0);
        assert_eq!(approximate_f64("500m").unwrap(), 0.5);
        assert_eq!(approximate_f64(" 1.5Gi ").unwrap(), 1_610_612_736.0);
        assert_eq!(approximate_f64("0.3").unwrap(), 3.0 * 0.1);
        assert_eq!(approximate_f64("-2e3").unwrap(), -2000.0);
        assert_eq!(approximate_f64("0").unwrap(), 0.0);
        assert!(approximate_f64("abc").is_err());
        assert!(approximate_f64("1Xi").is_err());
        assert!(approximate_f64("").is_err());
    }

    // ---- properties ----

    fn any_format() -> impl Strategy<Value = QuantityFormat> {
        prop_oneof![
            Just(QuantityFormat::DecimalSI),
            Just(QuantityFormat::BinarySI),
            Just(QuantityFormat::DecimalExponent),
        ]
    }

    /// Quantities built directly from a nano count (any format), well inside the range.
    fn any_qty() -> impl Strategy<Value = Qty> {
        let bound = 10i128.pow(27);
        (-bound..bound, any_format()).prop_map(|(nanos, format)| Qty {
            nanos,
            format,
            spelling: None,
        })
    }

    /// Quantity strings from the grammar: sign, integer, fraction, suffix.
    fn any_quantity_text() -> impl Strategy<Value = String> {
        let suffix = prop_oneof![
            Just(String::new()),
            prop::sample::select(vec!["n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"])
                .prop_map(str::to_owned),
            (-12i32..12).prop_map(|e| format!("e{e}")),
        ];
        (
            prop::sample::select(vec!["", "+", "-"]),
            0u64..10_000_000,
            prop::option::of("[0-9]{1,6}"),
            suffix,
        )
            .prop_map(|(sign, int, frac, suffix)| match frac {
                Some(frac) => format!("{sign}{int}.{frac}{suffix}"),
                None => format!("{sign}{int}{suffix}"),
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn prop_parse_display_round_trips_by_value(q in any_qty()) {
            let reparsed = Qty::parse(&q.to_string()).unwrap();
            prop_assert!(reparsed.eq_value(&q), "{} -> {:?}", q, reparsed);
        }

        #[test]
        fn prop_parsed_text_round_trips_by_value(text in any_quantity_text()) {
            let parsed = Qty::parse(&text).unwrap();
            let reparsed = Qty::parse(&parsed.to_string()).unwrap();
            prop_assert!(reparsed.eq_value(&parsed));
            let recanonical = Qty::parse(&parsed.canonical_string()).unwrap();
            prop_assert!(recanonical.eq_value(&parsed));
        }

        #[test]
        fn prop_display_is_stable(q in any_qty()) {
            let printed = q.to_string();
            prop_assert_eq!(Qty::parse(&printed).unwrap().to_string(), printed);
        }

        #[test]
        fn prop_parsed_display_is_stable(text in any_quantity_text()) {
            let printed = Qty::parse(&text).unwrap().canonical_string();
            prop_assert_eq!(Qty::parse(&printed).unwrap().to_string(), printed.clone());
            prop_assert_eq!(Qty::parse(&printed).unwrap().canonical_string(), printed);
        }

        #[test]
        fn prop_add_is_commutative_by_value(a in any_qty(), b in any_qty()) {
            prop_assert!(a.add(&b).eq_value(&b.add(&a)));
        }

        #[test]
        fn prop_mul_equals_repeated_addition(a in any_qty(), n in 0i64..64) {
            let repeated = (0..n).fold(Qty::zero(), |acc, _| acc.add(&a));
            prop_assert!(a.mul(n).eq_value(&repeated));
            if n > 0 {
                prop_assert_eq!(repeated.format(), a.format());
            }
        }

        #[test]
        fn prop_integer_suffix_values_are_exact(m in 0i64..1_000_000, idx in 0usize..16) {
            let (suffix, nanos_per) = [
                ("n", 1i128), ("u", 1_000), ("m", 1_000_000), ("", NANOS_PER_UNIT),
                ("k", 1_000 * NANOS_PER_UNIT), ("M", 1_000_000 * NANOS_PER_UNIT),
                ("G", 1_000_000_000 * NANOS_PER_UNIT), ("T", 10i128.pow(12) * NANOS_PER_UNIT),
                ("P", 10i128.pow(15) * NANOS_PER_UNIT), ("E", 10i128.pow(18) * NANOS_PER_UNIT),
                ("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("Ti", 1i128 << 40),
                ("Pi", 1i128 << 50), ("e2", 100),
            ][idx];
            let expected = if suffix.ends_with('i') {
                (i128::from(m) * nanos_per).min(i128::from(i64::MAX)) * NANOS_PER_UNIT
            } else if suffix == "e2" {
                i128::from(m) * nanos_per * NANOS_PER_UNIT
            } else {
                i128::from(m) * nanos_per
            };
            prop_assert_eq!(Qty::parse(&format!("{m}{suffix}")).unwrap().as_nanos(), expected);
        }

        #[test]
        fn prop_value_ceil_is_an_upper_bound(q in any_qty()) {
            let v = i128::from(q.value_ceil()) * NANOS_PER_UNIT;
            if q.as_nanos() >= 0 {
                prop_assert!(v >= q.as_nanos() && v - q.as_nanos() < NANOS_PER_UNIT);
            } else {
                prop_assert!(v <= q.as_nanos() && q.as_nanos() - v < NANOS_PER_UNIT);
            }
        }
    }
}
