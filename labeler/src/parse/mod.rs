//! Pure parsers for every text the labeler reads: tool outputs, the kubelet
//! config and sysfs attribute files. They never panic and never guess: anything
//! unexpected is a [`ParseError`] that names the offending line or value.

pub mod amd_partitions;
pub mod kubelet;
pub mod nvidia_smi;
pub mod nvidia_smi_list;
pub mod nvidia_smi_query;
pub mod rocm_smi;
pub mod sysfs;

use std::borrow::Cow;
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

/// The escape character that starts a terminal control sequence.
const ESC: char = '\u{1b}';
/// The single-character (C1) form of the Control Sequence Introducer `ESC [`.
const C1_CSI: char = '\u{9b}';

/// Removes terminal escape sequences, as a capture taken in a terminal
/// carries them (`ESC [4m` underlining a header, `ESC [0m`, `ESC (B` from
/// `tput sgr0`): every complete CSI sequence (`ESC [` or U+009B, parameter
/// bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, a final byte 0x40-0x7E) and
/// every complete `ESC` intermediate... final sequence (final 0x30-0x7E). An
/// incomplete sequence is kept, so the text around it fails to parse rather
/// than being read differently from what the tool wrote.
pub(crate) fn strip_terminal_escapes(text: &str) -> Cow<'_, str> {
    if !text.contains([ESC, C1_CSI]) {
        return Cow::Borrowed(text);
    }
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find([ESC, C1_CSI]) {
        let (before, sequence) = rest.split_at(at);
        kept.push_str(before);
        let skip = match escape_sequence_length(sequence) {
            0 => {
                // Not a complete sequence: keep the introducer as written.
                let introducer = sequence.chars().next().map_or(1, char::len_utf8);
                kept.push_str(sequence.get(..introducer).unwrap_or_default());
                introducer
            }
            length => length,
        };
        rest = sequence.get(skip..).unwrap_or_default();
    }
    kept.push_str(rest);
    Cow::Owned(kept)
}

/// Length in bytes of the complete escape sequence `text` starts with (it
/// starts with `ESC` or U+009B), 0 when it is not one.
fn escape_sequence_length(text: &str) -> usize {
    let (introducer, csi) = if text.starts_with(C1_CSI) {
        (C1_CSI.len_utf8(), true)
    } else if text.as_bytes().get(1) == Some(&b'[') {
        (2, true)
    } else {
        (ESC.len_utf8(), false)
    };
    let body = text.as_bytes().get(introducer..).unwrap_or_default();
    let run = |from: usize, low: u8, high: u8| {
        body.get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| (low..=high).contains(*b))
            .count()
    };
    let parameters = if csi { run(0, 0x30, 0x3f) } else { 0 };
    let intermediates = run(parameters, 0x20, 0x2f);
    let final_low = if csi { 0x40 } else { 0x30 };
    match body.get(parameters + intermediates) {
        Some(byte) if (csi || intermediates > 0) && (final_low..=0x7e).contains(byte) => {
            introducer + parameters + intermediates + 1
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain("\tGPU0\n", "\tGPU0\n")]
    #[case::underlined_header("\u{1b}[4m\tGPU0\tGPU1\u{1b}[0m\n", "\tGPU0\tGPU1\n")]
    #[case::reset_without_parameters("a\u{1b}[mb", "ab")]
    #[case::several_parameters("\u{1b}[1;4;38;5;208mX\u{1b}[0m", "X")]
    #[case::c1_introducer("\u{9b}4mGPU0", "GPU0")]
    #[case::charset_designation_from_tput("\u{1b}(B\u{1b}[mGPU0", "GPU0")]
    #[case::lone_escape_is_kept("a\u{1b}b", "a\u{1b}b")]
    #[case::unterminated_sequence_is_kept("GPU0\u{1b}[4", "GPU0\u{1b}[4")]
    #[case::newline_ends_no_sequence("\u{1b}[4\nGPU0", "\u{1b}[4\nGPU0")]
    fn terminal_escapes_are_stripped(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(strip_terminal_escapes(text), expected);
    }
}
