//! Pure parsers for every text the labeler reads: tool outputs, the kubelet
//! config and sysfs attribute files. They never panic and never guess: anything
//! unexpected is a [`ParseError`] that names the offending line or value.

pub mod kubelet;
pub mod nvidia_smi;
pub mod rocm_smi;
pub mod sysfs;

use std::fmt;

/// Why a text could not be parsed. `context` names what was being parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub context: &'static str,
    pub message: String,
}

impl ParseError {
    pub fn new(context: &'static str, message: impl Into<String>) -> Self {
        Self {
            context,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.context, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses a non-negative decimal integer as tools print it (no sign, no spaces).
pub(crate) fn parse_decimal(token: &str) -> Option<u32> {
    if token.is_empty() || token.len() > 9 || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}
