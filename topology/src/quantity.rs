//! Kubernetes resource quantities (`"500m"`, `"2"`, `"32Gi"`, `"1e3"`), parsed
//! into exact integers and written back in Kubernetes' canonical form: the
//! grammar of apimachinery's `resource.ParseQuantity`
//! (pkg/api/resource/quantity.go). The policy reads pods' resources with it,
//! the labeler the kubelet config's reservations (`kubeReserved`,
//! `reservedMemory`), so both read a quantity alike.
//!
//! Values are held as nano-units in an `i128`: exact for every CPU and memory
//! value Kubernetes accepts (it rounds anything finer than a nano up, and so do
//! we). No floats anywhere, so comparisons never wobble.

use std::cmp::Ordering;
use std::fmt;

/// Nano-units per unit: Kubernetes never keeps more precision than `n`.
const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// Longest quantity string we parse; real ones are a handful of characters.
const MAX_QUANTITY_LEN: usize = 64;
/// 10^38 is the largest power of ten an `i128` holds.
const MAX_POW10: u32 = 38;
/// Largest value accepted, in nano-units: `i64::MAX` whole units, far above any
/// real CPU or memory amount. The headroom below `i128::MAX` keeps rounding up
/// (`ceil_units`) free of overflow.
const MAX_NANOS: i128 = i64::MAX as i128 * NANOS_PER_UNIT;

/// How a quantity was written, which decides how it is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Powers of 1024: `Ki`, `Mi`, `Gi`, ...
    BinarySi,
    /// Powers of 1000 (`m`, `k`, `M`, ...) and exponents (`1e3`).
    DecimalSi,
}

/// A non-negative resource quantity, exact to the nano-unit.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    nanos: i128,
    format: Format,
}

/// Why a string is not a quantity. The message reads after `"<value>" `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuantityError {
    NotAQuantity,
    Negative,
    OutOfRange,
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuantityError::NotAQuantity => "is not a Kubernetes quantity",
            QuantityError::Negative => "is negative",
            QuantityError::OutOfRange => "is out of range",
        })
    }
}

impl std::error::Error for QuantityError {}

/// Decimal SI suffixes and their power of ten.
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

/// Binary SI suffixes and their value, a power of 1024.
const BINARY_SUFFIXES: [(&str, i64); 6] = [
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("Pi", 1 << 50),
    ("Ei", 1 << 60),
];

impl Quantity {
    /// Parses a quantity with Kubernetes' grammar. Negative values are refused:
    /// a resource amount is never negative.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        if text.is_empty() || text.len() > MAX_QUANTITY_LEN {
            return Err(QuantityError::NotAQuantity);
        }
        let (negative, unsigned) = split_sign(text);
        let number_len = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_len);
        let (mantissa, fraction_digits) = parse_number(number)?;
        let (pow10, binary, format) = parse_suffix(suffix)?;
        if negative && mantissa != 0 {
            return Err(QuantityError::Negative);
        }
        let scale = i64::from(pow10) - i64::from(fraction_digits) + 9;
        let scaled =
            checked_product(mantissa, i128::from(binary)).ok_or(QuantityError::OutOfRange)?;
        let nanos = scale_by_pow10(scaled, scale)?;
        if nanos > MAX_NANOS {
            return Err(QuantityError::OutOfRange);
        }
        Ok(Quantity { nanos, format })
    }

    /// `units` whole units (cores, bytes), written in decimal.
    pub fn from_units(units: u64) -> Self {
        Quantity {
            nanos: i128::from(units) * NANOS_PER_UNIT,
            format: Format::DecimalSi,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// The value as a whole number of units, when it is one (GPU counts).
    pub fn whole_units(&self) -> Option<u64> {
        match div_rem(self.nanos, NANOS_PER_UNIT) {
            (units, 0) => u64::try_from(units).ok(),
            _ => None,
        }
    }

    /// Rounded up to whole units: `1500m` becomes `2`.
    pub fn ceil_units(&self) -> Self {
        // Never negative, so truncating division is Euclidean here.
        let (units, rest) = div_rem(self.nanos, NANOS_PER_UNIT);
        let units = units + i128::from(rest != 0);
        Quantity {
            nanos: units * NANOS_PER_UNIT,
            format: self.format,
        }
    }

    pub fn is_whole(&self) -> bool {
        div_rem(self.nanos, NANOS_PER_UNIT).1 == 0
    }

    /// `units` whole units in binary form (`17179869184` writes as `16Gi`).
    pub fn binary_units(units: u64) -> Self {
        Quantity {
            format: Format::BinarySi,
            ..Quantity::from_units(units)
        }
    }

    /// Rounded up to thousandths of a unit, as Kubernetes' `MilliValue`
    /// (the kubelet's CPU requests); saturates far above any machine.
    pub fn ceil_millis(&self) -> u64 {
        let per_milli = NANOS_PER_UNIT / 1000;
        let (millis, rest) = div_rem(self.nanos, per_milli);
        u64::try_from(millis + i128::from(rest != 0)).unwrap_or(u64::MAX)
    }

    /// Rounded up to whole units, as Kubernetes' `Value` (bytes).
    pub fn ceil_whole_units(&self) -> u64 {
        self.ceil_units().whole_units().unwrap_or(u64::MAX)
    }

    /// Rounded up to whole units and then to a multiple of `multiple`
    /// (`3` to `4` for 2); `None` on overflow or a zero multiple.
    pub fn ceil_to_multiple(&self, multiple: u64) -> Option<Self> {
        let units = self.ceil_units().whole_units()?;
        let rounded = units.checked_next_multiple_of(multiple)?;
        let nanos = i128::from(rounded) * NANOS_PER_UNIT;
        (nanos <= MAX_NANOS).then_some(Quantity {
            nanos,
            format: self.format,
        })
    }

    /// Whole units rounded down to a multiple of `multiple` (`3` to `2` for
    /// 2); `None` for a value that is not whole, or a zero multiple.
    pub fn floor_to_multiple(&self, multiple: u64) -> Option<Self> {
        let units = self.whole_units()?;
        let floored = units.checked_div(multiple)? * multiple;
        Some(Quantity {
            nanos: i128::from(floored) * NANOS_PER_UNIT,
            format: self.format,
        })
    }

    /// `self` times `factor`, keeping the format (`32Gi` x 2 = `64Gi`).
    pub fn checked_mul(&self, factor: u64) -> Option<Self> {
        let nanos = checked_product(self.nanos, i128::from(factor))?;
        (nanos <= MAX_NANOS).then_some(Quantity {
            nanos,
            format: self.format,
        })
    }

    /// `self + other`, in binary form when both are (`16Gi + 256Mi` is
    /// `16640Mi`), else in decimal.
    pub fn checked_add(&self, other: &Self) -> Option<Self> {
        let nanos = self.nanos.checked_add(other.nanos)?;
        (nanos <= MAX_NANOS).then_some(Quantity {
            nanos,
            format: self.joint_format(other),
        })
    }

    /// `self - other`, in the form of [`Quantity::checked_add`]; `None` below
    /// zero, as no resource amount is negative.
    pub fn checked_sub(&self, other: &Self) -> Option<Self> {
        let nanos = self.nanos.checked_sub(other.nanos)?;
        (nanos >= 0).then_some(Quantity {
            nanos,
            format: self.joint_format(other),
        })
    }

    /// Binary when both are; a zero takes the other's form, so that sums
    /// started from zero keep it.
    fn joint_format(&self, other: &Self) -> Format {
        match (self.format, other.format) {
            (Format::BinarySi, Format::BinarySi) => Format::BinarySi,
            _ if self.is_zero() => other.format,
            _ if other.is_zero() => self.format,
            _ => Format::DecimalSi,
        }
    }

    /// The canonical string Kubernetes itself would write for this value.
    pub fn canonical(&self) -> String {
        let (units, rest) = div_rem(self.nanos, NANOS_PER_UNIT);
        let whole = rest == 0;
        // Kubernetes shows small or fractional binary values in decimal.
        if self.format == Format::BinarySi && whole && units >= 1024 {
            let (mut value, mut suffix) = (units, "");
            for (name, _) in BINARY_SUFFIXES {
                if value % 1024 != 0 {
                    break;
                }
                value /= 1024;
                suffix = name;
            }
            return format!("{value}{suffix}");
        }
        // Largest power of 1000 that divides the value, from nano upwards.
        let (mut value, mut suffix) = (self.nanos, DECIMAL_SUFFIXES[0].0);
        for (name, _) in DECIMAL_SUFFIXES.iter().skip(1) {
            if value == 0 || value % 1000 != 0 {
                break;
            }
            value /= 1000;
            suffix = name;
        }
        if value == 0 {
            suffix = "";
        }
        format!("{value}{suffix}")
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nanos == other.nanos
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// A CPU amount in millicores, in words for messages, as Kubernetes writes
/// it: whole CPUs (`1 CPU`, `80 CPUs`), else millicores (`1500m CPU`). The
/// policy's messages and the CLI's audit findings word CPUs with it.
pub fn cpu_words(millis: u64) -> String {
    if millis.is_multiple_of(1000) {
        let cpus = millis / 1000;
        format!("{cpus} CPU{}", if cpus == 1 { "" } else { "s" })
    } else {
        format!("{millis}m CPU")
    }
}

fn split_sign(text: &str) -> (bool, &str) {
    if let Some(rest) = text.strip_prefix('-') {
        (true, rest)
    } else {
        (false, text.strip_prefix('+').unwrap_or(text))
    }
}

/// Any number of this many decimal digits fits in a `u64` (10^19 - 1 < 2^64).
const U64_DIGITS: usize = 19;

/// `"12.50"` -> (1250, 2). At least one digit, at most one dot; `number`
/// holds only ASCII digits and dots.
fn parse_number(number: &str) -> Result<(i128, u32), QuantityError> {
    let (integer, fraction) = number.split_once('.').unwrap_or((number, ""));
    if integer.is_empty() && fraction.is_empty() {
        return Err(QuantityError::NotAQuantity);
    }
    if fraction.contains('.') {
        return Err(QuantityError::NotAQuantity);
    }
    let digits = integer.bytes().chain(fraction.bytes());
    let mantissa = if integer.len() + fraction.len() <= U64_DIGITS {
        // Nearly every quantity: u64 arithmetic (see `checked_product`),
        // which cannot overflow here.
        i128::from(digits.fold(0_u64, |m, digit| m * 10 + u64::from(digit - b'0')))
    } else {
        let mut mantissa: i128 = 0;
        for digit in digits {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(digit - b'0')))
                .ok_or(QuantityError::OutOfRange)?;
        }
        mantissa
    };
    let fraction_digits = u32::try_from(fraction.len()).map_err(|_| QuantityError::OutOfRange)?;
    Ok((mantissa, fraction_digits))
}

/// The suffix's power of ten, binary multiplier and format.
fn parse_suffix(suffix: &str) -> Result<(i32, i64, Format), QuantityError> {
    if let Some((_, binary)) = BINARY_SUFFIXES.iter().find(|(name, _)| *name == suffix) {
        return Ok((0, *binary, Format::BinarySi));
    }
    if let Some((_, pow10)) = DECIMAL_SUFFIXES.iter().find(|(name, _)| *name == suffix) {
        return Ok((*pow10, 1, Format::DecimalSi));
    }
    // Decimal exponent: "e3", "E-2", "e+6".
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .ok_or(QuantityError::NotAQuantity)?;
    let (negative, digits) = split_sign(exponent);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(QuantityError::NotAQuantity);
    }
    let magnitude: i32 = digits.parse().map_err(|_| QuantityError::OutOfRange)?;
    Ok((
        if negative { -magnitude } else { magnitude },
        1,
        Format::DecimalSi,
    ))
}

/// `value * 10^scale`, rounding up when `scale` is negative (Kubernetes rounds
/// precision finer than a nano up).
fn scale_by_pow10(value: i128, scale: i64) -> Result<i128, QuantityError> {
    if value == 0 {
        return Ok(0);
    }
    let magnitude = u32::try_from(scale.unsigned_abs()).map_err(|_| QuantityError::OutOfRange)?;
    let power = POWERS_OF_TEN.get(magnitude as usize).copied();
    if scale >= 0 {
        return power
            .and_then(|factor| checked_product(value, factor))
            .ok_or(QuantityError::OutOfRange);
    }
    let Some(divisor) = power else {
        // The divisor exceeds any i128 value: a positive value rounds up to 1.
        return Ok(1);
    };
    let (quotient, rest) = div_rem(value, divisor);
    Ok(quotient + i128::from(rest != 0))
}

/// 10^0 ..= 10^[`MAX_POW10`].
const POWERS_OF_TEN: [i128; MAX_POW10 as usize + 1] = {
    let mut powers = [1_i128; MAX_POW10 as usize + 1];
    let mut index = 1;
    while index < powers.len() {
        powers[index] = powers[index - 1] * 10;
        index += 1;
    }
    powers
};

// i128 multiplication and division are library calls in Wasm (and i128
// overflow checks take several), while every real quantity fits in 64 bits:
// the helpers below work in i64 when the operands fit, in i128 otherwise.

/// `a * b`, or `None` on i128 overflow.
fn checked_product(a: i128, b: i128) -> Option<i128> {
    if let (Ok(small_a), Ok(small_b)) = (i64::try_from(a), i64::try_from(b)) {
        if let Some(product) = small_a.checked_mul(small_b) {
            return Some(i128::from(product));
        }
    }
    a.checked_mul(b)
}

/// Truncating quotient and remainder of `value / divisor`; `divisor` is
/// positive.
fn div_rem(value: i128, divisor: i128) -> (i128, i128) {
    debug_assert!(divisor > 0, "div_rem by {divisor}");
    if let (Ok(small_value), Ok(small_divisor)) = (i64::try_from(value), i64::try_from(divisor)) {
        if small_divisor > 0 {
            return (
                i128::from(small_value / small_divisor),
                i128::from(small_value % small_divisor),
            );
        }
    }
    (value / divisor, value % divisor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::one(1000, "1 CPU")]
    #[case::whole(80_000, "80 CPUs")]
    #[case::millis(500, "500m CPU")]
    #[case::fraction(3500, "3500m CPU")]
    fn cpus_are_worded_as_kubernetes_writes_them(#[case] millis: u64, #[case] words: &str) {
        assert_eq!(cpu_words(millis), words);
    }

    #[rstest]
    #[case::whole_cores("2", "2")]
    #[case::millicores("500m", "500m")]
    #[case::fraction_becomes_millis("0.5", "500m")]
    #[case::millis_that_are_whole("2000m", "2")]
    #[case::fraction_with_trailing_dot("1.", "1")]
    #[case::leading_dot(".25", "250m")]
    #[case::plus_sign("+3", "3")]
    #[case::gibibytes("32Gi", "32Gi")]
    #[case::binary_carried_up("1024Mi", "1Gi")]
    #[case::binary_not_multiple("1536", "1536")]
    #[case::binary_fractional_shown_decimal("1.5Ki", "1536")]
    #[case::binary_not_a_power_of_1024("1000Mi", "1000Mi")]
    #[case::below_1024_shown_decimal("0.5Ki", "512")]
    #[case::one_kibibyte("1Ki", "1Ki")]
    #[case::megabytes("500M", "500M")]
    #[case::kilo_carried_up("1000k", "1M")]
    #[case::exponent("1e3", "1k")]
    #[case::negative_exponent("5e-1", "500m")]
    #[case::micro("100u", "100u")]
    #[case::nano("1n", "1n")]
    #[case::sub_nano_rounds_up("0.1n", "1n")]
    #[case::zero("0", "0")]
    #[case::zero_with_suffix("0Gi", "0")]
    #[case::negative_zero("-0", "0")]
    #[case::exa("1E", "1E")]
    #[case::exbibyte("1Ei", "1Ei")]
    fn parses_and_writes_canonical_form(#[case] input: &str, #[case] canonical: &str) {
        let quantity = Quantity::parse(input).unwrap();
        assert_eq!(quantity.canonical(), canonical);
        // Canonical forms round-trip to themselves.
        assert_eq!(Quantity::parse(canonical).unwrap().canonical(), canonical);
        assert_eq!(Quantity::parse(canonical).unwrap(), quantity);
    }

    #[rstest]
    #[case::empty("", QuantityError::NotAQuantity)]
    #[case::word("abc", QuantityError::NotAQuantity)]
    #[case::unknown_suffix("2x", QuantityError::NotAQuantity)]
    #[case::lowercase_binary("2gi", QuantityError::NotAQuantity)]
    #[case::only_dot(".", QuantityError::NotAQuantity)]
    #[case::two_dots("1.2.3", QuantityError::NotAQuantity)]
    #[case::space(" 2", QuantityError::NotAQuantity)]
    #[case::trailing_space("2 ", QuantityError::NotAQuantity)]
    #[case::bare_exponent("1e", QuantityError::NotAQuantity)]
    #[case::double_sign("--1", QuantityError::NotAQuantity)]
    #[case::suffix_only("Gi", QuantityError::NotAQuantity)]
    #[case::negative("-1", QuantityError::Negative)]
    #[case::huge_exponent("1e99999", QuantityError::OutOfRange)]
    #[case::exponent_overflows_i32("1e99999999999", QuantityError::OutOfRange)]
    #[case::too_many_digits("9999999999999999999999999999999999999999", QuantityError::OutOfRange)]
    #[case::above_i64_max_units("9223372036854775808", QuantityError::OutOfRange)]
    #[case::near_i128_max_nanos(
        "170141183460469231731687303715.884105727",
        QuantityError::OutOfRange
    )]
    fn rejects_garbage_without_panicking(#[case] input: &str, #[case] expected: QuantityError) {
        assert_eq!(Quantity::parse(input), Err(expected));
    }

    /// Up to 19 digits are read in u64, longer numbers in i128: both exact.
    #[rstest]
    #[case::eighteen_digits("123456789012345678")]
    #[case::nineteen_digits("9999999999999999999")]
    #[case::nineteen_with_a_fraction("999999999.9999999999")]
    #[case::twenty_digits("12345678901234567890")]
    #[case::twenty_with_a_fraction("1234567890.1234567890")]
    fn long_numbers_are_read_exactly(#[case] number: &str) {
        let digits: String = number.chars().filter(|c| *c != '.').collect();
        let fraction_digits = number.split_once('.').map_or(0, |(_, f)| f.len() as u32);
        assert_eq!(
            parse_number(number),
            Ok((digits.parse::<i128>().unwrap(), fraction_digits))
        );
    }

    /// The 64-bit shortcuts agree with i128 arithmetic on both sides of
    /// the 64-bit range.
    #[rstest]
    #[case::small(1_500, 1_000_000_000)]
    #[case::product_just_fits_i64(i128::from(i64::MAX / 2), 2)]
    #[case::product_leaves_i64(i128::from(i64::MAX), 2)]
    #[case::operand_beyond_i64(i128::from(i64::MAX) + 1, 10)]
    #[case::both_beyond_i64(i128::from(u64::MAX), i128::from(u64::MAX))]
    #[case::overflows_i128(i128::MAX / 3, 4)]
    #[case::zero(0, i128::MAX)]
    fn shortcuts_match_i128_arithmetic(#[case] a: i128, #[case] b: i128) {
        assert_eq!(checked_product(a, b), a.checked_mul(b));
        assert_eq!(checked_product(b, a), b.checked_mul(a));
        if b > 0 {
            assert_eq!(div_rem(a, b), (a / b, a % b));
        }
        if a > 0 {
            assert_eq!(div_rem(b, a), (b / a, b % a));
        }
    }

    #[test]
    fn powers_of_ten_are_exact() {
        for (exponent, power) in POWERS_OF_TEN.iter().enumerate() {
            assert_eq!(Some(*power), 10_i128.checked_pow(exponent as u32));
        }
    }

    #[test]
    fn largest_accepted_value_rounds_up_without_overflow() {
        let largest = Quantity::parse("9223372036854775806.5").unwrap();
        assert_eq!(largest.ceil_units().canonical(), "9223372036854775807");
        assert!(largest.checked_mul(2).is_none());
    }

    #[test]
    fn rejects_overlong_input() {
        assert_eq!(
            Quantity::parse(&"1".repeat(MAX_QUANTITY_LEN + 1)),
            Err(QuantityError::NotAQuantity)
        );
    }

    #[rstest]
    #[case::fractional_up("1500m", "2")]
    #[case::tiny_up("1m", "1")]
    #[case::whole_stays("3", "3")]
    #[case::zero_stays("0", "0")]
    fn rounds_up_to_whole_units(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(
            Quantity::parse(input).unwrap().ceil_units().canonical(),
            expected
        );
    }

    #[rstest]
    #[case::cores("8", 2, "16")]
    #[case::binary_memory("32Gi", 4, "128Gi")]
    #[case::millis("250m", 4, "1")]
    #[case::decimal_memory("500M", 2, "1G")]
    fn multiplies_exactly(#[case] input: &str, #[case] factor: u64, #[case] expected: &str) {
        let product = Quantity::parse(input).unwrap().checked_mul(factor).unwrap();
        assert_eq!(product.canonical(), expected);
    }

    /// (left, right, sum, difference): binary only when both are.
    #[rstest]
    #[case::binary("16Gi", "256Mi", "16640Mi", Some("16128Mi"))]
    #[case::decimal("4", "250m", "4250m", Some("3750m"))]
    #[case::mixed("1Gi", "1M", "1074741824", Some("1072741824"))]
    #[case::to_zero("2", "2", "4", Some("0"))]
    #[case::below_zero("250m", "1", "1250m", None)]
    #[case::from_decimal_zero("0", "256Mi", "256Mi", None)]
    fn adds_and_subtracts_exactly(
        #[case] left: &str,
        #[case] right: &str,
        #[case] sum: &str,
        #[case] difference: Option<&str>,
    ) {
        let (left, right) = (
            Quantity::parse(left).unwrap(),
            Quantity::parse(right).unwrap(),
        );
        assert_eq!(left.checked_add(&right).unwrap().canonical(), sum);
        assert_eq!(
            left.checked_sub(&right).map(|q| q.canonical()).as_deref(),
            difference
        );
    }

    #[rstest]
    #[case::same_value_different_spelling("1", "1000m", Ordering::Equal)]
    #[case::binary_vs_decimal("1Ki", "1k", Ordering::Greater)]
    #[case::millis_below_core("999m", "1", Ordering::Less)]
    fn compares_by_value(#[case] left: &str, #[case] right: &str, #[case] expected: Ordering) {
        let (left, right) = (
            Quantity::parse(left).unwrap(),
            Quantity::parse(right).unwrap(),
        );
        assert_eq!(left.cmp(&right), expected);
    }

    #[rstest]
    #[case::whole("4", Some(4))]
    #[case::fractional("1.5", None)]
    #[case::millis_whole("2000m", Some(2))]
    fn whole_units_only_for_integers(#[case] input: &str, #[case] expected: Option<u64>) {
        assert_eq!(Quantity::parse(input).unwrap().whole_units(), expected);
    }

    /// (quantity, millis as the kubelet reads CPU, bytes, rounded up to a
    /// multiple of 2, rounded down to a multiple of 2)
    #[rstest]
    #[case::whole("3", 3000, 3, Some("4"), Some("2"))]
    #[case::fraction("2500m", 2500, 3, Some("4"), None)]
    #[case::below_a_milli("1n", 1, 1, Some("2"), None)]
    #[case::binary("16Gi", 17_179_869_184_000, 17_179_869_184, Some("16Gi"), Some("16Gi"))]
    fn kubelet_units_and_multiples(
        #[case] text: &str,
        #[case] millis: u64,
        #[case] units: u64,
        #[case] up: Option<&str>,
        #[case] down: Option<&str>,
    ) {
        let q = Quantity::parse(text).unwrap();
        assert_eq!(q.ceil_millis(), millis);
        assert_eq!(q.ceil_whole_units(), units);
        assert_eq!(q.ceil_to_multiple(2).map(|q| q.canonical()).as_deref(), up);
        assert_eq!(
            q.floor_to_multiple(2).map(|q| q.canonical()).as_deref(),
            down
        );
        assert_eq!(q.ceil_to_multiple(0), None);
        assert_eq!(Quantity::binary_units(1 << 30).canonical(), "1Gi");
    }

    /// The kubelet config's reservations, as the labeler reads them: whole
    /// bytes as `Quantity.AsInt64` gives them (`reservedMemory`), CPUs
    /// rounded up as `math.Ceil` (`kubeReserved` + `systemReserved`).
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
    #[case::leading_point(".5k", Some(500))]
    #[case::trailing_point("5.", Some(5))]
    fn kubelet_reserved_bytes(#[case] text: &str, #[case] expected: Option<u64>) {
        assert_eq!(Quantity::parse(text).unwrap().whole_units(), expected);
    }

    #[rstest]
    #[case::whole("2", 2)]
    #[case::milli_rounds_up("100m", 1)]
    #[case::fraction_rounds_up("1.5", 2)]
    #[case::exact_milli("3000m", 3)]
    #[case::zero("0", 0)]
    #[case::tiny("1n", 1)]
    fn kubelet_reserved_cpus_round_up(#[case] text: &str, #[case] expected: u64) {
        assert_eq!(Quantity::parse(text).unwrap().ceil_whole_units(), expected);
    }

    #[test]
    fn kubelet_reservations_add_exactly() {
        let sum = Quantity::parse("300m")
            .unwrap()
            .checked_add(&Quantity::parse("0.7").unwrap())
            .unwrap();
        assert_eq!(sum.ceil_whole_units(), 1);
        assert!(sum.is_whole());
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
    #[case::negative("-1Mi")]
    fn kubelet_config_values_that_are_no_reservation(#[case] text: &str) {
        assert!(Quantity::parse(text).is_err(), "{text:?}");
    }
}
