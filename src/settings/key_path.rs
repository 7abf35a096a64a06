//! The key path of the settings value an error stands at.
//!
//! Settings that do not read are refused with the key that holds the bad
//! value (`topology.affinity: unknown variant ...`). serde_json says only
//! where in the text an error stands; this walks the text to that place.
//! The crate that tracks the path while deserializing (serde_path_to_error)
//! doubled the settings' derived readers in the module, about 32 KB of its
//! 1 MiB budget (BENCHMARKS.md, "Module size"); this path is taken only
//! for settings that fail, and the tests check it against that crate.
//!
//! serde_json's position of a data error is a value's first byte (an
//! object or array where a scalar belongs), the byte after its end (a
//! scalar read and found wrong; a struct's missing field, which it reports
//! after the closing `}`), or the end of a key (one the struct does not
//! know, or gives twice). The member named is the innermost one whose text,
//! from its key to its value's end included, holds the position: siblings
//! never touch (a `,` parts them), and a child ends before its parent's
//! closing byte. An error raised after a value was read whole, outside
//! serde_json's calls, would carry the position of the struct around it,
//! so the settings' own readers raise theirs while serde_json reads the
//! value (`settings::then`).

use crate::json::scan::Scanner;

/// Deeper than serde_json reads (its recursion limit is 128).
const MAX_DEPTH: usize = 128;

/// The path of the innermost value of `text` whose span holds byte
/// `offset`, as serde_path_to_error writes it: keys joined by `.`, array
/// indices as `[i]`, `.` for the whole text. Where the text does not scan
/// (serde_json stops at the first error, so a break can only follow the
/// offset), the path of the value the break is in.
pub(crate) fn key_path_at(text: &str, offset: usize) -> KeyPath {
    let mut path = String::new();
    let in_key = match walk(&mut Scanner::new(text), offset, &mut path, 0) {
        Walk::InKey { parent } => Some(parent),
        _ => None,
    };
    KeyPath { path, in_key }
}

/// Where an error stands, by key path.
#[derive(Debug, PartialEq)]
pub(crate) struct KeyPath {
    /// The member's path; empty for the whole text.
    path: String,
    /// When the position is in the member's key (not its value): the
    /// length of its parent's path.
    in_key: Option<usize>,
}

impl KeyPath {
    /// The path as serde_path_to_error writes it.
    pub fn member(&self) -> &str {
        match self.path.as_str() {
            "" => ".",
            path => path,
        }
    }

    /// The path of the value that holds the key the position is in (an
    /// enum written as an object, `{"variant": ...}`, whose variant is
    /// unknown); else the member's path.
    pub(crate) fn value_of_key(&self) -> &str {
        match self.in_key {
            Some(0) => ".",
            Some(parent) => self.path.get(..parent).unwrap_or("."),
            None => self.member(),
        }
    }
}

/// How far [`walk`] went in one value.
enum Walk {
    /// The offset is in this value, and `path` names where.
    Found,
    /// The value ends at this byte (exclusive); the offset may still be
    /// past it.
    Ended(usize),
    /// The offset is in the key of the member `path` names, whose parent's
    /// path is this long.
    InKey { parent: usize },
    /// The text does not scan here.
    Broken,
}

/// Walks the value at the scanner, which starts at or before `offset`,
/// into the child that holds it, appending each step to `path`: one pass
/// forward, each value scanned once.
fn walk(scanner: &mut Scanner<'_>, offset: usize, path: &mut String, depth: usize) -> Walk {
    match scanner.peek_value() {
        Some(b'{') if depth < MAX_DEPTH => {
            let Ok(mut members) = scanner.object() else {
                return Walk::Broken;
            };
            loop {
                let from = members.scanner().position();
                let key = match members.next_key() {
                    Ok(Some(key)) => key,
                    Ok(None) => return Walk::Ended(members.scanner().position()),
                    Err(_) => return Walk::Broken,
                };
                let Ok(name) = key.name() else {
                    return Walk::Broken;
                };
                let step = |path: &mut String| {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&name);
                };
                match member(members.scanner(), from, offset, path, step, depth) {
                    Walk::Ended(_) => {}
                    found_or_broken => return found_or_broken,
                }
            }
        }
        Some(b'[') if depth < MAX_DEPTH => {
            let Ok(mut elements) = scanner.array() else {
                return Walk::Broken;
            };
            let mut index = 0usize;
            loop {
                let from = elements.scanner().position();
                match elements.has_next() {
                    Ok(true) => {}
                    Ok(false) => return Walk::Ended(elements.scanner().position()),
                    Err(_) => return Walk::Broken,
                }
                let step = |path: &mut String| {
                    path.push('[');
                    path.push_str(&index.to_string());
                    path.push(']');
                };
                match member(elements.scanner(), from, offset, path, step, depth) {
                    Walk::Ended(_) => {}
                    found_or_broken => return found_or_broken,
                }
                index += 1;
            }
        }
        _ => match scanner.value() {
            Ok(span) => Walk::Ended(span.end),
            Err(_) => Walk::Broken,
        },
    }
}

/// Walks one member or element of the value `path` names, from the byte
/// after its predecessor (`from`) to its value's end, `step` naming it:
/// `Found` when that holds `offset` (its step then stays on `path`, also
/// for an offset in its key, where serde_json reports an unknown or
/// repeated key) or starts past it (the offset is then in the parent
/// itself); `Ended` when the offset is past it.
fn member(
    scanner: &mut Scanner<'_>,
    from: usize,
    offset: usize,
    path: &mut String,
    step: impl FnOnce(&mut String),
    depth: usize,
) -> Walk {
    if from > offset {
        return Walk::Found;
    }
    let parent = path.len();
    step(path);
    scanner.peek_value();
    if scanner.position() > offset {
        return Walk::InKey { parent };
    }
    match walk(scanner, offset, path, depth + 1) {
        Walk::Ended(end) if offset <= end => Walk::Found,
        Walk::Ended(end) => {
            path.truncate(parent);
            Walk::Ended(end)
        }
        found_or_broken => found_or_broken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// (text, the offset, its path)
    #[rstest]
    #[case::the_whole_text(r#""not an object""#, 15, ".")]
    #[case::a_key_s_value_at_its_end(r#"{"qos": {"mode": "x"}}"#, 20, "qos.mode")]
    #[case::a_key_s_value_at_its_start(r#"{"qos": {"mode": [1]}}"#, 17, "qos.mode")]
    #[case::an_object_after_its_end(r#"{"qos": {"a": 1}, "b": 2}"#, 16, "qos")]
    #[case::a_key_given_twice(r#"{"a": 1, "a": 2}"#, 12, "a")]
    #[case::a_key_given_twice_spaced(r#"{"a": 1, "a" : 2}"#, 13, "a")]
    #[case::an_unknown_key(r#"{"qos": {"mode": "off", "x": 1}}"#, 27, "qos.x")]
    #[case::in_an_object_before_its_first_key(r#"{"qos": [{"a": 1}]}"#, 9, "qos[0]")]
    #[case::an_array_element(r#"{"gpuResources": ["a", 5]}"#, 24, "gpuResources[1]")]
    #[case::an_escaped_key(r#"{"a\u0062": 1}"#, 13, "ab")]
    #[case::text_broken_after_the_offset(r#"{"qos": {"mode": "x", oops}}"#, 20, "qos.mode")]
    #[case::text_cut_short(r#"{"qos": {"mode": "#, 17, "qos.mode")]
    fn the_innermost_value_holding_the_offset_is_named(
        #[case] text: &str,
        #[case] offset: usize,
        #[case] path: &str,
    ) {
        assert_eq!(key_path_at(text, offset).member(), path);
    }

    /// (text, the offset, the value holding the key it is in)
    #[rstest]
    #[case::an_enum_as_an_object(r#"{"capacity": {"source": {"a": 1}}}"#, 28, "capacity.source")]
    #[case::at_the_top(r#"{"a": 1}"#, 4, ".")]
    #[case::not_in_a_key(r#"{"qos": {"mode": "x"}}"#, 20, "qos.mode")]
    fn the_value_holding_a_key_is_named(
        #[case] text: &str,
        #[case] offset: usize,
        #[case] path: &str,
    ) {
        assert_eq!(key_path_at(text, offset).value_of_key(), path);
    }

    #[test]
    fn nesting_past_the_depth_limit_stops_the_walk() {
        let text = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(key_path_at(&text, 200).member(), "[0]".repeat(MAX_DEPTH));
    }
}
