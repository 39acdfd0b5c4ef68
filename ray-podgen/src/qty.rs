//! The few quantity conversions pod generation needs: Kubernetes `Value()` (round up to an
//! integer), `AsApproximateFloat64()` and `IsZero()`.
//!
//! Local on purpose while `ray_api::quantity` is being written; to be replaced by it.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A parsed quantity: `mantissa × 10^exp10 × 2^exp2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedQuantity {
    mantissa: i128,
    exp10: i32,
    exp2: i32,
}

/// Parses a Kubernetes quantity string (`1`, `500m`, `1.5Gi`, `2e3`); `None` when invalid.
pub fn parse(text: &str) -> Option<ParsedQuantity> {
    let text = text.trim();
    let number_end = text
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '+' || *c == '-'))))
        .map_or(text.len(), |(i, _)| i);
    let (number, suffix) = text.split_at(number_end);
    let (negative, digits) = match number.as_bytes().first() {
        Some(b'-') => (true, &number[1..]),
        Some(b'+') => (false, &number[1..]),
        _ => (false, number),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
        return None;
    }
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        let digit = i128::from(c.to_digit(10)? as u8);
        match mantissa.checked_mul(10).and_then(|m| m.checked_add(digit)) {
            Some(m) => mantissa = m,
            // Too many digits: drop precision, keep magnitude.
            None => exp10 += 1,
        }
    }
    exp10 -= i32::try_from(frac_part.len()).ok()?;
    let (s10, s2) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        exp if exp.starts_with(['e', 'E']) => (exp[1..].parse::<i32>().ok()?, 0),
        _ => return None,
    };
    Some(ParsedQuantity {
        mantissa: if negative { -mantissa } else { mantissa },
        exp10: exp10 + s10,
        exp2: s2,
    })
}

impl ParsedQuantity {
    /// `IsZero()`.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// `Value()`: the value rounded up (away from zero) to an integer, saturating at the i64 range.
    pub fn value_ceil(&self) -> i64 {
        let saturate = |v: i128| i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX });
        let mut numerator = self.mantissa;
        for _ in 0..self.exp2 {
            match numerator.checked_mul(2) {
                Some(n) => numerator = n,
                None => return saturate(numerator.signum() * i128::MAX),
            }
        }
        if self.exp10 >= 0 {
            for _ in 0..self.exp10 {
                match numerator.checked_mul(10) {
                    Some(n) => numerator = n,
                    None => return saturate(numerator.signum() * i128::MAX),
                }
            }
            return saturate(numerator);
        }
        let mut denominator: i128 = 1;
        for _ in 0..(-self.exp10) {
            match denominator.checked_mul(10) {
                Some(d) => denominator = d,
                // |value| < 1 but non-zero: rounds up to ±1.
                None => return saturate(numerator.signum()),
            }
        }
        let quotient = numerator / denominator;
        let rounded = if numerator % denominator != 0 {
            quotient + numerator.signum()
        } else {
            quotient
        };
        saturate(rounded)
    }

    /// `AsApproximateFloat64()`.
    pub fn as_f64(&self) -> f64 {
        (self.mantissa as f64) * 10f64.powi(self.exp10) * 2f64.powi(self.exp2)
    }
}

/// Parses a `Quantity` value (`None` when invalid).
pub fn of(quantity: &Quantity) -> Option<ParsedQuantity> {
    parse(&quantity.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_rounds_up() {
        let v = |s: &str| parse(s).unwrap().value_ceil();
        assert_eq!(v("500m"), 1);
        assert_eq!(v("2.5"), 3);
        assert_eq!(v("1Gi"), 1_073_741_824);
        assert_eq!(v("4Gi"), 4_294_967_296);
        assert_eq!(v("1"), 1);
        assert_eq!(v("2e3"), 2000);
        assert_eq!(v("100M"), 100_000_000);
        assert_eq!(v("0"), 0);
        assert_eq!(v("1.5Gi"), 1_610_612_736);
    }

    #[test]
    fn floats_and_zero() {
        assert_eq!(parse("4").unwrap().as_f64(), 4.0);
        assert_eq!(parse("500m").unwrap().as_f64(), 0.5);
        assert!(parse("0m").unwrap().is_zero());
        assert!(parse("abc").is_none());
        assert!(parse("1Xi").is_none());
        assert!(parse("").is_none());
    }
}
