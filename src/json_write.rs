//! Writes JSON text byte for byte as serde_json writes it, without its
//! per-byte escaping loop for the strings that need none (nearly all): that
//! loop was most of a rewrite, and of the answer's warnings, in Wasm.

use crate::json_scan::is_plain_string;
use serde_json::Value;
use std::fmt::Write as _;

/// Appends `value` as compact JSON.
pub fn write_value(value: &Value, out: &mut String) {
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
/// and `\` by a backslash, the control characters with a short escape by
/// it, the others as `\u00XX`.
pub fn write_string(text: &str, out: &mut String) {
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
}
