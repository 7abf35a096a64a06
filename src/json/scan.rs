//! A validating JSON scanner: finds where values sit in a text without
//! building them.
//!
//! The policy reads a handful of fields out of a payload that is mostly a
//! Pod's metadata and `managedFields`. serde_json can only pass over a value
//! it does not keep by parsing it token by token (and a `RawValue` that keeps
//! the span is scanned again when its fields are read), which in Wasm was
//! about half of an evaluation. This scanner validates the same JSON grammar but
//! passes over strings eight bytes at a time and keeps the nesting in a bit
//! set, so the payload is scanned once, with the pod's fields read on the
//! way. Values the policy keeps are small and still parsed by serde_json.
//!
//! Input is untrusted: every malformed text is an error naming the byte
//! offset, nesting is limited as serde_json limits it, and nothing here
//! indexes out of bounds or recurses.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

/// Containers nested deeper than this are refused, as serde_json refuses
/// them (its recursion limit), so a hostile payload cannot exhaust anything.
pub const MAX_DEPTH: u32 = 128;

/// More integer digits than `f64::MAX` (about 1.8e308) has.
const F64_MAX_INTEGER_DIGITS: usize = 309;

thread_local! {
    /// See [`tree_refusal_hints`].
    static TREE_REFUSAL_HINTS: Cell<u32> = const { Cell::new(0) };
}

/// How many values passed over so far (wrapping) serde_json may refuse in
/// a tree though it passes over them, as this scanner does: `\u` escapes
/// (a lone surrogate is refused) and numbers with an exponent or 309
/// integer digits (beyond f64 is refused). Counted where they are rare, in
/// the scanning steps' slow branches; compare two readings to tell whether
/// a span of text holds one.
pub(crate) fn tree_refusal_hints() -> u32 {
    TREE_REFUSAL_HINTS.get()
}

fn hint_tree_refusal() {
    TREE_REFUSAL_HINTS.set(TREE_REFUSAL_HINTS.get().wrapping_add(1));
}

/// Byte range of a JSON value (or key) within the scanned text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    /// The spanned text. Spans start and end at ASCII bytes of `text`.
    pub fn of(self, text: &str) -> &str {
        text.get(self.start..self.end).unwrap_or_default()
    }
}

/// Malformed JSON: what was expected, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    pub problem: &'static str,
    pub offset: usize,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.problem, self.offset)
    }
}

impl std::error::Error for ScanError {}

type Scan<T> = Result<T, ScanError>;

/// A position in a JSON text, moved forward by reading or passing over values.
pub struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Self {
        Scanner { text, pos: 0 }
    }

    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The byte offset reached.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Goes back to an earlier [`position`](Self::position), to scan a
    /// value again in another way.
    pub fn rewind(&mut self, position: usize) {
        self.pos = position.min(self.pos);
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn error<T>(&self, problem: &'static str) -> Scan<T> {
        fail(problem, self.pos)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        self.pos = whitespace_end(self.bytes(), self.pos);
    }

    /// The first byte of the next value (whitespace skipped), e.g. `{` for
    /// an object or `n` for `null`.
    pub fn peek_value(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.peek()
    }

    fn expect(&mut self, byte: u8, problem: &'static str) -> Scan<()> {
        self.pos = byte_end(self.bytes(), self.pos, byte, problem)?;
        Ok(())
    }

    /// In a container being read: false after its `close`; else true, with
    /// the `,` before every item but the `first` passed over.
    #[inline]
    fn next_item(&mut self, first: &mut bool, close: u8, problem: &'static str) -> Scan<bool> {
        let bytes = self.bytes();
        let pos = whitespace_end(bytes, self.pos);
        if bytes.get(pos) == Some(&close) {
            self.pos = pos + 1;
            return Ok(false);
        }
        if !std::mem::take(first) {
            self.pos = byte_end(bytes, pos, b',', problem)?;
        }
        Ok(true)
    }

    /// Passes over the next value, validating it, and answers its span.
    pub fn value(&mut self) -> Scan<Span> {
        self.skip_whitespace();
        let start = self.pos;
        self.pos = value_end(self.bytes(), start)?;
        Ok(Span {
            start,
            end: self.pos,
        })
    }

    /// Passes over the next value, validating it, and answers its text.
    pub fn value_text(&mut self) -> Scan<&'a str> {
        let span = self.value()?;
        Ok(span.of(self.text))
    }

    /// Checks that only whitespace is left.
    pub fn finish(&mut self) -> Scan<()> {
        self.skip_whitespace();
        if self.pos != self.text.len() {
            return self.error("trailing characters after the JSON value");
        }
        Ok(())
    }

    /// Starts reading the object that is the next value.
    pub fn object(&mut self) -> Scan<Members<'_, 'a>> {
        self.expect(b'{', "expected a JSON object")?;
        Ok(Members {
            scanner: self,
            first: true,
        })
    }

    /// Starts reading the array that is the next value.
    pub fn array(&mut self) -> Scan<Elements<'_, 'a>> {
        self.expect(b'[', "expected a JSON array")?;
        Ok(Elements {
            scanner: self,
            first: true,
        })
    }

    /// Reads `"key":`, answering the key.
    fn key(&mut self) -> Scan<Key<'a>> {
        let (quoted, escaped, after) = key_at(self.bytes(), self.pos)?;
        self.pos = after;
        Ok(Key {
            quoted: quoted.of(self.text),
            escaped,
        })
    }
}

// The scanning steps below take the text and a position and answer the
// position after what they passed over. Passing over a value is a loop of
// these steps, one per token; with the position in a local variable, and
// the frequent steps inlined, the loop keeps it in a register, where as a
// field of the scanner it was written back to memory at every byte.

fn fail<T>(problem: &'static str, offset: usize) -> Scan<T> {
    Err(ScanError { problem, offset })
}

/// The position after `byte`, which must come next after whitespace.
#[inline(always)]
fn byte_end(bytes: &[u8], pos: usize, byte: u8, problem: &'static str) -> Scan<usize> {
    let pos = whitespace_end(bytes, pos);
    if bytes.get(pos) != Some(&byte) {
        return fail(problem, pos);
    }
    Ok(pos + 1)
}

#[inline(always)]
fn whitespace_end(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(pos) {
        pos += 1;
    }
    pos
}

/// The end of the value at `start`, validating it. Iterative: the kind of
/// each open container is one bit of `objects`, so nesting costs no memory.
fn value_end(bytes: &[u8], start: usize) -> Scan<usize> {
    let mut objects = Bits::default();
    let mut depth: u32 = 0;
    let mut pos = start;
    'value: loop {
        pos = whitespace_end(bytes, pos);
        match bytes.get(pos) {
            Some(b'"') => pos = string_end(bytes, pos)?.0,
            Some(&open @ (b'{' | b'[')) => {
                if depth + 1 >= MAX_DEPTH {
                    return fail("JSON nested too deeply", pos);
                }
                let is_object = open == b'{';
                objects.set(depth, is_object);
                depth += 1;
                pos = whitespace_end(bytes, pos + 1);
                let close = if is_object { b'}' } else { b']' };
                if bytes.get(pos) == Some(&close) {
                    pos += 1;
                    depth -= 1;
                } else {
                    if is_object {
                        pos = key_at(bytes, pos)?.2;
                    }
                    continue 'value;
                }
            }
            Some(b't') => pos = literal_end(bytes, pos, b"true")?,
            Some(b'f') => pos = literal_end(bytes, pos, b"false")?,
            Some(b'n') => pos = literal_end(bytes, pos, b"null")?,
            Some(b'-' | b'0'..=b'9') => pos = number_end(bytes, pos)?,
            Some(_) => return fail("expected a JSON value", pos),
            None => return fail("unexpected end of JSON", pos),
        }
        // A value is complete: close containers until one continues.
        while depth > 0 {
            pos = whitespace_end(bytes, pos);
            let in_object = objects.get(depth - 1);
            match (bytes.get(pos), in_object) {
                (Some(b','), _) => {
                    pos += 1;
                    if in_object {
                        pos = key_at(bytes, pos)?.2;
                    }
                    continue 'value;
                }
                (Some(b'}'), true) | (Some(b']'), false) => {
                    pos += 1;
                    depth -= 1;
                }
                (_, true) => return fail("expected `,` or `}`", pos),
                (_, false) => return fail("expected `,` or `]`", pos),
            }
        }
        return Ok(pos);
    }
}

/// `"key":` at `pos` (whitespace first): the quoted key, whether it holds
/// escapes, and the position after the colon.
#[inline(always)]
fn key_at(bytes: &[u8], pos: usize) -> Scan<(Span, bool, usize)> {
    let start = whitespace_end(bytes, pos);
    if bytes.get(start) != Some(&b'"') {
        return fail("expected a string key", start);
    }
    let (end, escaped) = string_end(bytes, start)?;
    let after = byte_end(bytes, end, b':', "expected `:`")?;
    Ok((Span { start, end }, escaped, after))
}

/// The end of the string at `pos` (on its opening quote), and whether it
/// holds escapes.
#[inline(always)]
fn string_end(bytes: &[u8], mut pos: usize) -> Scan<(usize, bool)> {
    let mut escaped = false;
    pos += 1;
    loop {
        // Eight bytes at a time up to the next quote, backslash or control
        // character.
        while let Some(chunk) = bytes
            .get(pos..pos + 8)
            .and_then(|chunk| <[u8; 8]>::try_from(chunk).ok())
        {
            let special = special_bytes(u64::from_le_bytes(chunk));
            if special != 0 {
                pos += (special.trailing_zeros() / 8) as usize;
                break;
            }
            pos += 8;
        }
        match bytes.get(pos) {
            Some(b'"') => return Ok((pos + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                pos = escape_end(bytes, pos + 1)?;
            }
            Some(0..=0x1f) => return fail("control character in a JSON string", pos),
            Some(_) => pos += 1,
            None => return fail("unterminated JSON string", pos),
        }
    }
}

/// The end of the escape after a backslash (at `pos`). Like serde_json when
/// it passes over a string, `\u` takes any four hex digits. Out of line:
/// escapes are rare in Kubernetes objects.
#[inline(never)]
fn escape_end(bytes: &[u8], pos: usize) -> Scan<usize> {
    match bytes.get(pos) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(pos + 1),
        Some(b'u') => {
            hint_tree_refusal();
            for offset in 1..=4 {
                if !bytes.get(pos + offset).is_some_and(u8::is_ascii_hexdigit) {
                    return fail("invalid \\u escape in a JSON string", pos + offset);
                }
            }
            Ok(pos + 5)
        }
        _ => fail("invalid escape in a JSON string", pos),
    }
}

#[inline(always)]
fn literal_end(bytes: &[u8], pos: usize, word: &[u8]) -> Scan<usize> {
    if bytes.get(pos..pos + word.len()) != Some(word) {
        return fail("invalid JSON literal", pos);
    }
    Ok(pos + word.len())
}

/// The end of the number at `pos`:
/// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
fn number_end(bytes: &[u8], mut pos: usize) -> Scan<usize> {
    if bytes.get(pos) == Some(&b'-') {
        pos += 1;
    }
    match bytes.get(pos) {
        Some(b'0') => pos += 1,
        Some(b'1'..=b'9') => {
            let start = pos;
            pos = digits_end(bytes, pos);
            if pos - start >= F64_MAX_INTEGER_DIGITS {
                hint_tree_refusal();
            }
        }
        _ => return fail("invalid JSON number", pos),
    }
    if bytes.get(pos) == Some(&b'.') {
        pos = required_digits_end(bytes, pos + 1)?;
    }
    if let Some(b'e' | b'E') = bytes.get(pos) {
        hint_tree_refusal();
        pos += 1;
        if let Some(b'+' | b'-') = bytes.get(pos) {
            pos += 1;
        }
        pos = required_digits_end(bytes, pos)?;
    }
    Ok(pos)
}

fn digits_end(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    pos
}

fn required_digits_end(bytes: &[u8], pos: usize) -> Scan<usize> {
    if !bytes.get(pos).is_some_and(u8::is_ascii_digit) {
        return fail("invalid JSON number", pos);
    }
    Ok(digits_end(bytes, pos))
}

/// [`MAX_DEPTH`] bits in two words: Wasm has no 128-bit integers.
#[derive(Default)]
struct Bits([u64; 2]);

impl Bits {
    fn set(&mut self, index: u32, on: bool) {
        let (word, bit) = (index / 64 % 2, index % 64);
        let word = &mut self.0[word as usize];
        *word = (*word & !(1 << bit)) | (u64::from(on) << bit);
    }

    fn get(&self, index: u32) -> bool {
        let (word, bit) = (index / 64 % 2, index % 64);
        self.0[word as usize] >> bit & 1 == 1
    }
}

/// A byte mask whose lowest set bit marks the first `"`, `\` or control
/// character of the eight bytes in `chunk` (little-endian). Higher bits may
/// be false positives (borrows), so only the lowest is used.
pub(crate) fn special_bytes(chunk: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let quote = zero_byte(chunk ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(chunk ^ (ONES * u64::from(b'\\')));
    let control = chunk.wrapping_sub(ONES * 0x20) & !chunk & HIGH;
    quote | backslash | control
}

/// An object key as written (quotes and escapes included).
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    quoted: &'a str,
    escaped: bool,
}

impl<'a> Key<'a> {
    /// The key's text, unescaped. A key serde_json would refuse (a lone
    /// surrogate escape) is an error here too.
    pub fn name(&self) -> Result<Cow<'a, str>, String> {
        if !self.escaped {
            let unquoted = self.quoted.get(1..self.quoted.len().saturating_sub(1));
            return Ok(Cow::Borrowed(unquoted.unwrap_or_default()));
        }
        serde_json::from_slice::<String>(self.quoted.as_bytes())
            .map(Cow::Owned)
            .map_err(|error| format!("invalid object key {}: {error}", self.quoted))
    }
}

/// The members of an object being read: call [`next_key`](Self::next_key),
/// then read or pass over its value with [`scanner`](Self::scanner).
pub struct Members<'s, 'a> {
    scanner: &'s mut Scanner<'a>,
    first: bool,
}

impl<'a> Members<'_, 'a> {
    /// The next member's key (its value is next), or `None` after the
    /// closing `}`.
    pub fn next_key(&mut self) -> Scan<Option<Key<'a>>> {
        if !self
            .scanner
            .next_item(&mut self.first, b'}', "expected `,` or `}`")?
        {
            return Ok(None);
        }
        self.scanner.key().map(Some)
    }

    pub fn scanner(&mut self) -> &mut Scanner<'a> {
        self.scanner
    }
}

/// The elements of an array being read: while [`has_next`](Self::has_next) answers
/// true, read or pass over one value with [`scanner`](Self::scanner).
pub struct Elements<'s, 'a> {
    scanner: &'s mut Scanner<'a>,
    first: bool,
}

impl<'a> Elements<'_, 'a> {
    /// True when another element follows; false after the closing `]`.
    pub fn has_next(&mut self) -> Scan<bool> {
        self.scanner
            .next_item(&mut self.first, b']', "expected `,` or `]`")
    }

    pub fn scanner(&mut self) -> &mut Scanner<'a> {
        self.scanner
    }
}

/// Checks that `text` is one JSON value, as serde_json would accept it.
pub fn validate(text: &str) -> Scan<()> {
    let mut scanner = Scanner::new(text);
    scanner.value()?;
    scanner.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde::de::IgnoredAny;

    fn serde_accepts(text: &str) -> bool {
        serde_json::from_slice::<IgnoredAny>(text.as_bytes()).is_ok()
    }

    #[rstest]
    #[case::empty_object("{}")]
    #[case::nested(r#"{"a": [1, -2.5e+3, true, false, null, {"b": "c"}], "d": {}}"#)]
    #[case::escapes(r#"["\"\\\/\b\f\n\r\t\u00e9 \ud83d\ude00", "é"]"#)]
    #[case::long_string(r#""0123456789abcdef0123456789abcdef\"0123456789""#)]
    #[case::whitespace(" \n\t\r[ 1 , 2 ]\n ")]
    #[case::zero("0")]
    #[case::exponent("1E-7")]
    #[case::fraction("-0.5")]
    #[case::lone_surrogate_escape_passed_over(r#""\ud800""#)]
    fn valid_json_is_accepted(#[case] text: &str) {
        assert!(serde_accepts(text), "serde_json refuses {text}");
        assert_eq!(validate(text), Ok(()), "{text}");
    }

    #[rstest]
    #[case::empty("")]
    #[case::trailing_comma_object(r#"{"a": 1,}"#)]
    #[case::trailing_comma_array("[1,]")]
    #[case::missing_colon(r#"{"a" 1}"#)]
    #[case::missing_comma("[1 2]")]
    #[case::mismatched_brackets("[1}")]
    #[case::unterminated_string(r#"["abc"#)]
    #[case::control_character_in_string("\"a\u{1}b\"")]
    #[case::newline_in_long_string("\"0123456789\n0123456789\"")]
    #[case::bad_escape(r#""\x""#)]
    #[case::short_unicode_escape(r#""\u12""#)]
    #[case::leading_zero("01")]
    #[case::bare_minus("-")]
    #[case::bare_fraction("1.")]
    #[case::bare_exponent("1e")]
    #[case::plus_sign("+1")]
    #[case::truncated_literal("nul")]
    #[case::wrong_literal("nulL")]
    #[case::non_string_key("{1: 2}")]
    #[case::trailing_characters("{} x")]
    #[case::two_values("1 2")]
    #[case::unclosed_object(r#"{"a": {"b": 1}"#)]
    fn malformed_json_is_an_error(#[case] text: &str) {
        assert!(!serde_accepts(text), "serde_json accepts {text}");
        assert!(validate(text).is_err(), "{text}");
    }

    #[test]
    fn nesting_is_limited_without_recursion() {
        let shallow = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(validate(&shallow), Ok(()));
        let deep = "[".repeat(100_000);
        let error = validate(&deep).unwrap_err();
        assert_eq!(error.problem, "JSON nested too deeply");
    }

    #[test]
    fn special_bytes_finds_the_first_quote_backslash_or_control_character() {
        for (chunk, first) in [
            (*b"abcdefgh", None),
            (*b"abc\"efgh", Some(3)),
            (*b"\\bcdefg\"", Some(0)),
            (*b"abcdefg\n", Some(7)),
            (*b"\xc3\xa9\xc3\xa9\xff\x80 !", None),
            (*b"\x01\"\"\"\"\"\"\"", Some(0)),
        ] {
            let mask = special_bytes(u64::from_le_bytes(chunk));
            let found = (mask != 0).then(|| mask.trailing_zeros() / 8);
            assert_eq!(found, first, "{chunk:?}");
        }
    }

    #[test]
    fn members_and_elements_give_spans_in_place() {
        let text = r#" {"a" : [1, {"b": null}], "c\u0064": "x"} "#;
        let mut scanner = Scanner::new(text);
        let mut members = scanner.object().unwrap();
        let mut seen = Vec::new();
        while let Some(key) = members.next_key().unwrap() {
            let name = key.name().unwrap().into_owned();
            if name == "a" {
                let mut elements = members.scanner().array().unwrap();
                while elements.has_next().unwrap() {
                    let span = elements.scanner().value().unwrap();
                    seen.push((name.clone(), span.of(text).to_owned()));
                }
            } else {
                let span = members.scanner().value().unwrap();
                seen.push((name, span.of(text).to_owned()));
            }
        }
        scanner.finish().unwrap();
        assert_eq!(
            seen,
            [
                ("a".to_owned(), "1".to_owned()),
                ("a".to_owned(), r#"{"b": null}"#.to_owned()),
                ("cd".to_owned(), r#""x""#.to_owned()),
            ]
        );
    }

    #[rstest]
    #[case::trailing_comma(r#"{"a": 1,}"#)]
    #[case::missing_comma(r#"{"a": 1 "b": 2}"#)]
    #[case::leading_comma(r#"{, "a": 1}"#)]
    #[case::not_an_object("[]")]
    #[case::unclosed(r#"{"a": 1"#)]
    fn malformed_members_are_errors(#[case] text: &str) {
        let mut scanner = Scanner::new(text);
        let read = (|| -> Scan<()> {
            let mut members = scanner.object()?;
            while members.next_key()?.is_some() {
                members.scanner().value()?;
            }
            Ok(())
        })();
        assert!(read.is_err(), "{text}");
    }
}
