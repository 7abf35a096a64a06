//! Duration flags of the native tools (the labeler's `--interval`, the CLI's
//! `--stale-after`, ...), read with jiff: `500ms`, `90s`, `5m`, `1h`,
//! `1h 30m`, ISO 8601 `PT5M`, and plain seconds (`60`), which jiff alone
//! would refuse. Behind the `duration` feature: the policy does not use it.

use jiff::SignedDuration;
use std::fmt;
use std::time::Duration;

/// The longest duration a flag accepts: longer intervals and expiries serve
/// no purpose, and arithmetic on them (twice the interval, now plus the
/// expiry) must not overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

/// Why a duration flag was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Not a duration at all (`soon`, `3d`).
    Unreadable(String),
    /// Zero or negative.
    NotPositive(String),
    /// Longer than [`MAX_DURATION`].
    TooLong(String),
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Unreadable(text) => {
                write!(f, "{text:?} is not a duration like 90s, 5m or 1h")
            }
            DurationError::NotPositive(text) => {
                write!(f, "{text:?} is not a positive duration like 90s, 5m or 1h")
            }
            DurationError::TooLong(text) => write!(
                f,
                "{text:?} is longer than {} hours, the longest duration accepted",
                MAX_DURATION.as_secs() / 3600
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// Reads a positive duration of at most [`MAX_DURATION`] as jiff does
/// (`90s`, `5m`, `1h 30m`, `PT5M`), or plain seconds (`60`).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let seconds;
    let readable = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        seconds = format!("{text}s");
        &seconds
    } else {
        text
    };
    let signed: SignedDuration = match readable.parse() {
        Ok(signed) => signed,
        // Only the number is too big for jiff: "1" in its place reads.
        Err(_) if reads_with_one(readable) => return Err(DurationError::TooLong(text.to_owned())),
        Err(_) => return Err(DurationError::Unreadable(text.to_owned())),
    };
    let duration = Duration::try_from(signed)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| DurationError::NotPositive(text.to_owned()))?;
    if duration > MAX_DURATION {
        return Err(DurationError::TooLong(text.to_owned()));
    }
    Ok(duration)
}

/// True when `text` reads as a duration once its leading number is 1.
fn reads_with_one(text: &str) -> bool {
    let unit = text.trim_start_matches(|c: char| c.is_ascii_digit());
    unit.len() < text.len() && format!("1{unit}").parse::<SignedDuration>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::seconds("90s", Some(90_000))]
    #[case::plain("15", Some(15_000))]
    #[case::minutes("5m", Some(300_000))]
    #[case::hours("1h", Some(3_600_000))]
    #[case::millis("250ms", Some(250))]
    #[case::hours_and_minutes("1h 30m", Some(5_400_000))]
    #[case::iso("PT5M", Some(300_000))]
    #[case::longest("8784h", Some(8784 * 3_600_000))]
    fn durations_read(#[case] text: &str, #[case] millis: Option<u64>) {
        assert_eq!(parse_duration(text).ok(), millis.map(Duration::from_millis));
    }

    #[rstest]
    #[case::zero("0s", "\"0s\" is not a positive duration like 90s, 5m or 1h")]
    #[case::plain_zero("0", "\"0\" is not a positive duration like 90s, 5m or 1h")]
    #[case::negative("-5m", "\"-5m\" is not a positive duration like 90s, 5m or 1h")]
    #[case::unit_only("s", "\"s\" is not a duration like 90s, 5m or 1h")]
    #[case::empty("", "\"\" is not a duration like 90s, 5m or 1h")]
    #[case::words("soon", "\"soon\" is not a duration like 90s, 5m or 1h")]
    #[case::days("3d", "\"3d\" is not a duration like 90s, 5m or 1h")]
    #[case::beyond_the_longest(
        "8785h",
        "\"8785h\" is longer than 8784 hours, the longest duration accepted"
    )]
    #[case::beyond_jiff(
        "18446744073709551615s",
        "\"18446744073709551615s\" is longer than 8784 hours, the longest duration accepted"
    )]
    #[case::beyond_u64(
        "99999999999999999999h",
        "\"99999999999999999999h\" is longer than 8784 hours, the longest duration accepted"
    )]
    #[case::plain_beyond_jiff(
        "99999999999999999999",
        "\"99999999999999999999\" is longer than 8784 hours, the longest duration accepted"
    )]
    fn durations_are_refused(#[case] text: &str, #[case] message: &str) {
        assert_eq!(parse_duration(text).unwrap_err().to_string(), message);
    }
}
