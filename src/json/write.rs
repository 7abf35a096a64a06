//! Writes JSON text byte for byte as serde_json writes it, without its
//! per-byte escaping loop for the strings that need none (nearly all): that
//! loop was most of a rewrite, and of the answer's warnings, in Wasm.

use crate::json::scan::special_bytes;
use serde_json::Value;
use std::fmt::Write as _;

/// Appends `value` as compact JSON.
pub(crate) fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // serde_json's own Display for numbers: the same digits it writes.
        Value::Number(number) => {
            let _ = write!(out, "{number}");
        }
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (index, (key, item)) in members.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// Appends `text` as a JSON string, escaped as serde_json escapes it: `"`
/// and `\` get a backslash; of the control characters (U+0000 to U+001F),
/// backspace, form feed, newline, carriage return and tab get their short
/// escapes (`\b`, `\f`, `\n`, `\r`, `\t`) and the others `\u00xx`, in
/// lowercase hex. Everything else is written as it is.
pub(crate) fn write_string(text: &str, out: &mut String) {
    out.reserve(text.len() + 2);
    out.push('"');
    if is_plain_string(text) {
        out.push_str(text);
    } else {
        for character in text.chars() {
            match character {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                control @ '\0'..='\u{1f}' => {
                    let _ = write!(out, "\\u{:04x}", u32::from(control));
                }
                other => out.push(other),
            }
        }
    }
    out.push('"');
}

/// True when `text` can be written between quotes as it is: it holds no
/// quote, backslash or control character, the bytes JSON escapes.
fn is_plain_string(text: &str) -> bool {
    let mut chunks = text.as_bytes().chunks_exact(8);
    let plain_chunks = chunks
        .by_ref()
        .filter_map(|chunk| <[u8; 8]>::try_from(chunk).ok())
        .all(|chunk| special_bytes(u64::from_le_bytes(chunk)) == 0);
    plain_chunks
        && chunks
            .remainder()
            .iter()
            .all(|&byte| byte >= 0x20 && byte != b'"' && byte != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::affinity(json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [
            {"key": "gpu-topology.io/gpus", "operator": "Gt", "values": ["3"]}]}}]}}))]
    #[case::escapes(json!({"a\"b": ["\\", "\n", "\u{1}", "é ✓"], "": [true, null, -1.5, 18446744073709551615u64]}))]
    #[case::every_control_character(json!((0..0x20).map(char::from).collect::<String>()))]
    #[case::numbers(json!([0, -0.0, 1e300, 2.5e-8, -9223372036854775808i64, 0.1]))]
    #[case::empty_containers(json!([{}, [], ""]))]
    fn values_are_written_as_serde_json_writes_them(#[case] value: Value) {
        let mut written = String::new();
        write_value(&value, &mut written);
        assert_eq!(written, serde_json::to_string(&value).unwrap());
    }

    #[rstest]
    #[case::empty("", true)]
    #[case::label_key("gpu-topology.io/gpus-per-numa-max", true)]
    #[case::unicode("GPU für Ärzte — ✓", true)]
    #[case::quote_in_first_chunk("ab\"c", false)]
    #[case::backslash_in_remainder("0123456789\\", false)]
    #[case::control_character("0123456789abcdef\t", false)]
    #[case::delete_is_plain("a\u{7f}", true)]
    fn plain_strings_are_those_json_writes_unescaped(#[case] text: &str, #[case] plain: bool) {
        assert_eq!(is_plain_string(text), plain);
        let escaped = serde_json::to_string(text).unwrap();
        assert_eq!(escaped == format!("\"{text}\""), plain, "{escaped}");
    }
}
