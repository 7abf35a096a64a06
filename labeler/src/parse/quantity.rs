//! Kubernetes resource quantities (`1100Mi`, `500m`, `1.5`, `2e3`) as the
//! kubelet reads them from its config (`kubeReserved`, `reservedMemory`):
//! the grammar of apimachinery's `resource.ParseQuantity`
//! (pkg/api/resource/quantity.go), held exactly as an integer over a power
//! of ten, so sums and roundings are the kubelet's, not a float's.

use super::ParseError;

const CONTEXT: &str = "quantity";

/// Most digits a quantity may have: the labeler's exact arithmetic stays
/// within `i128`; real reservations have far fewer.
const MAX_DIGITS: usize = 24;
/// Largest decimal exponent (`e18`, `E` = 10^18) accepted.
const MAX_EXPONENT: i32 = 24;

/// An exact quantity: `numerator / 10^decimals`.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    numerator: i128,
    decimals: u32,
}

/// Equal values are equal however written (`1000m` and `1`).
impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        let decimals = self.decimals.max(other.decimals);
        self.scaled(decimals).is_some() && self.scaled(decimals) == other.scaled(decimals)
    }
}

impl Eq for Quantity {}

impl Quantity {
    pub const ZERO: Quantity = Quantity {
        numerator: 0,
        decimals: 0,
    };

    /// Parses `text` as `ParseQuantity` does: a signed decimal number
    /// (`1`, `1.5`, `.5`, `5.`) and one suffix: binary (`Ki`..`Ei`), decimal
    /// SI (`n`, `u`, `m`, none, `k`, `M`, `G`, `T`, `P`, `E`) or an exponent
    /// (`e3`, `E-2`). No spaces.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let invalid = |why: &str| ParseError::new(CONTEXT, format!("{text:?} {why}"));
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(invalid("is not a number with a unit suffix"));
        }
        if whole.len() + fraction.len() > MAX_DIGITS {
            return Err(invalid("has more digits than the labeler reads"));
        }
        let digits: i128 = format!("{whole}{fraction}")
            .parse()
            .map_err(|_| invalid("is not a number"))?;
        let decimals = u32::try_from(fraction.len()).map_err(|_| invalid("is too long"))?;
        let (binary_power, exponent) = suffix_scale(suffix).ok_or_else(|| {
            invalid(
                "has an unknown suffix (expected Ki..Ei, n, u, m, k, M, G, T, P, E or an exponent)",
            )
        })?;
        let mut quantity = Quantity {
            numerator: if negative { -digits } else { digits },
            decimals,
        };
        quantity.numerator = 1024_i128
            .checked_pow(binary_power)
            .and_then(|factor| quantity.numerator.checked_mul(factor))
            .ok_or_else(|| invalid("is too large"))?;
        quantity = quantity
            .times_power_of_ten(exponent)
            .ok_or_else(|| invalid("is too large"))?;
        Ok(quantity)
    }

    fn times_power_of_ten(self, exponent: i32) -> Option<Self> {
        if exponent >= 0 {
            let factor = 10_i128.checked_pow(exponent.unsigned_abs())?;
            Some(Quantity {
                numerator: self.numerator.checked_mul(factor)?,
                ..self
            })
        } else {
            Some(Quantity {
                decimals: self.decimals.checked_add(exponent.unsigned_abs())?,
                ..self
            })
        }
    }

    /// The numerator over `10^decimals` (at least `self.decimals`).
    fn scaled(self, decimals: u32) -> Option<i128> {
        let factor = 10_i128.checked_pow(decimals.checked_sub(self.decimals)?)?;
        self.numerator.checked_mul(factor)
    }

    fn denominator(self) -> Option<i128> {
        10_i128.checked_pow(self.decimals)
    }

    pub fn is_negative(self) -> bool {
        self.numerator < 0
    }

    pub fn is_zero(self) -> bool {
        self.numerator == 0
    }

    /// The exact sum, `None` past the labeler's range.
    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        let decimals = self.decimals.max(other.decimals);
        Some(Quantity {
            numerator: self
                .scaled(decimals)?
                .checked_add(other.scaled(decimals)?)?,
            decimals,
        })
    }

    /// The value as an integer when it is one and fits an `i64`: what
    /// `Quantity.AsInt64` answers (`None` where it answers false), as the
    /// Memory Manager converts `reservedMemory` (memory_manager.go
    /// `convertReserved`).
    pub fn as_int64(self) -> Option<i64> {
        let denominator = self.denominator()?;
        (self.numerator % denominator == 0)
            .then(|| self.numerator / denominator)
            .and_then(|value| i64::try_from(value).ok())
    }

    /// The smallest integer not below the value, as `math.Ceil` of the CPU
    /// Manager's reservation (cpu_manager.go `NewManager`); `None` past `i64`.
    pub fn ceil(self) -> Option<i64> {
        let denominator = self.denominator()?;
        let floor = self.numerator.div_euclid(denominator);
        let ceil = if self.numerator.rem_euclid(denominator) == 0 {
            floor
        } else {
            floor + 1
        };
        i64::try_from(ceil).ok()
    }
}

/// The binary power (of 1024) and decimal exponent a suffix stands for.
fn suffix_scale(suffix: &str) -> Option<(u32, i32)> {
    let binary = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(power) = binary.iter().position(|s| *s == suffix).filter(|&p| p > 0) {
        return Some((u32::try_from(power).ok()?, 0));
    }
    let decimal = match suffix {
        "n" => -9,
        "u" => -6,
        "m" => -3,
        "" => 0,
        "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        "E" => 18,
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let (sign, digits) = match exponent.as_bytes().first() {
                Some(b'-') => (-1, &exponent[1..]),
                Some(b'+') => (1, &exponent[1..]),
                _ => (1, exponent),
            };
            if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let value: i32 = digits.parse().ok()?;
            return (value <= MAX_EXPONENT).then_some((0, sign * value));
        }
    };
    Some((0, decimal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn quantity(text: &str) -> Quantity {
        Quantity::parse(text).unwrap()
    }

    #[rstest]
    #[case::plain_bytes("1024", Some(1024))]
    #[case::mebibytes("1100Mi", Some(1100 * 1024 * 1024))]
    #[case::fractional_gibibytes("1.5Gi", Some(1_610_612_736))]
    #[case::kilo("2k", Some(2000))]
    #[case::exponent("2e3", Some(2000))]
    #[case::capital_exponent("5E2", Some(500))]
    #[case::milli_bytes_are_no_integer("100m", None)]
    #[case::fraction_of_a_byte("0.5", None)]
    #[case::whole_milli("1000m", Some(1))]
    #[case::negative("-1Mi", Some(-1_048_576))]
    #[case::leading_point(".5k", Some(500))]
    #[case::trailing_point("5.", Some(5))]
    fn integer_values(#[case] text: &str, #[case] expected: Option<i64>) {
        assert_eq!(quantity(text).as_int64(), expected);
    }

    #[rstest]
    #[case::whole("2", 2)]
    #[case::milli_rounds_up("100m", 1)]
    #[case::fraction_rounds_up("1.5", 2)]
    #[case::exact_milli("3000m", 3)]
    #[case::zero("0", 0)]
    #[case::tiny("1n", 1)]
    fn ceilings(#[case] text: &str, #[case] expected: i64) {
        assert_eq!(quantity(text).ceil(), Some(expected));
    }

    #[test]
    fn sums_are_exact() {
        let sum = quantity("500m").checked_add(quantity("1.5")).unwrap();
        assert_eq!(sum, quantity("2"));
        assert_eq!(sum.ceil(), Some(2));
        let sum = quantity("100m").checked_add(quantity("1")).unwrap();
        assert_eq!(sum.ceil(), Some(2));
        assert_ne!(quantity("1Ki"), quantity("1k"));
        assert_eq!(quantity("1000m"), quantity("1"));
    }

    #[rstest]
    #[case::empty("")]
    #[case::unit_only("Mi")]
    #[case::unknown_suffix("5MB")]
    #[case::lowercase_binary("5mi")]
    #[case::space("5 Mi")]
    #[case::two_points("1.2.3")]
    #[case::exponent_without_digits("5e")]
    #[case::huge_exponent("1e999")]
    #[case::too_many_digits("1234567890123456789012345")]
    #[case::sign_only("-")]
    fn malformed_quantities_are_errors(#[case] text: &str) {
        let error = Quantity::parse(text).unwrap_err();
        assert!(error.to_string().contains(&format!("{text:?}")), "{error}");
    }
}
