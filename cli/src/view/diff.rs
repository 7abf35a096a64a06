//! The change as a readable field diff: one line per changed field, from
//! what to what, e.g. `spec.containers[0].resources.requests.cpu: 500m ->
//! 2`. The demo (e2e-tests) prints its patches with these same functions.

use json_patch::PatchOperation;
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// Shown for a field that did not exist (before) or no longer exists (after).
pub const ABSENT: &str = "(absent)";

/// One changed field: its dotted path, and its value before and after on
/// one line each (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |value: &Option<String>| value.clone().unwrap_or_else(|| ABSENT.to_owned());
        write!(
            f,
            "{}: {} -> {}",
            self.path,
            shown(&self.before),
            shown(&self.after)
        )
    }
}

/// Turns a JSON pointer into a dotted path: `/spec/containers/0/name` ->
/// `spec.containers[0].name`.
pub fn dotted_path(pointer: &str) -> String {
    let mut out = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{token}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// A value on one line: scalars bare, a node-selector requirement as
/// `key Operator values`, anything else as compact JSON.
pub fn short_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_owned(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Object(fields) => match selector_requirement(fields) {
            Some((key, operator)) => {
                let values = fields
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().map(short_value).collect::<Vec<_>>().join(","))
                    .unwrap_or_default();
                format!("{key} {operator} {values}").trim_end().to_owned()
            }
            None => value.to_string(),
        },
        Value::Array(_) => value.to_string(),
    }
}

/// `(key, operator)` when `fields` is a node-selector requirement.
fn selector_requirement(fields: &serde_json::Map<String, Value>) -> Option<(&str, &str)> {
    match (fields.get("key"), fields.get("operator")) {
        (Some(Value::String(key)), Some(Value::String(operator))) if fields.len() <= 3 => {
            Some((key, operator))
        }
        _ => None,
    }
}

/// The changes `operations` make to `original`, added objects expanded
/// down to their leaves (arrays of objects by index) so each line stays
/// short.
pub fn describe(original: &Value, operations: &[PatchOperation]) -> Vec<Change> {
    let mut changes = Vec::new();
    for operation in operations {
        let Ok(op) = serde_json::to_value(operation) else {
            continue;
        };
        let pointer = op.get("path").and_then(Value::as_str).unwrap_or_default();
        let before = original.pointer(pointer);
        match op.get("op").and_then(Value::as_str) {
            Some("remove") => changes.push(Change {
                path: dotted_path(pointer),
                before: before.map(short_value),
                after: None,
            }),
            Some("add" | "replace") => {
                let after = op.get("value").unwrap_or(&Value::Null);
                leaves(pointer, before, after, &mut changes);
            }
            // json-patch's diff writes add, remove and replace only.
            _ => changes.push(Change {
                path: dotted_path(pointer),
                before: before.map(short_value),
                after: Some(op.to_string()),
            }),
        }
    }
    changes
}

fn leaves(pointer: &str, before: Option<&Value>, after: &Value, changes: &mut Vec<Change>) {
    let expandable = match after {
        Value::Object(fields) => selector_requirement(fields).is_none() && !fields.is_empty(),
        Value::Array(items) => !items.is_empty() && items.iter().all(Value::is_object),
        _ => false,
    };
    if expandable {
        let children: Vec<(String, &Value)> = match after {
            Value::Object(fields) => fields.iter().map(|(k, v)| (k.clone(), v)).collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            _ => Vec::new(),
        };
        for (token, child) in children {
            let escaped = token.replace('~', "~0").replace('/', "~1");
            let child_pointer = format!("{pointer}/{escaped}");
            let child_before = before.and_then(|b| b.pointer(&format!("/{escaped}")));
            leaves(&child_pointer, child_before, child, changes);
        }
        return;
    }
    changes.push(Change {
        path: dotted_path(pointer),
        before: before.map(short_value),
        after: Some(short_value(after)),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::container_field(
        "/spec/containers/0/resources/requests/cpu",
        "spec.containers[0].resources.requests.cpu"
    )]
    #[case::escaped_key(
        "/metadata/labels/gpu-topology.io~1gpus",
        "metadata.labels.gpu-topology.io/gpus"
    )]
    #[case::root("", "")]
    fn dotted_paths(#[case] pointer: &str, #[case] dotted: &str) {
        assert_eq!(dotted_path(pointer), dotted);
    }

    #[test]
    fn describes_replacements_additions_and_removals() {
        let original = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "500m"}}}], "old": 1}});
        let patched = json!({
            "spec": {
                "containers": [{"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu-topology.io/gpus", "operator": "Gt", "values": ["3"]}]}
                ]}}}
            }
        });
        let patch = json_patch::diff(&original, &patched);
        let mut lines: Vec<String> = describe(&original, &patch.0)
            .iter()
            .map(Change::to_string)
            .collect();
        lines.sort();
        assert_eq!(
            lines,
            vec![
                "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: (absent) -> gpu-topology.io/gpus Gt 3",
                "spec.containers[0].resources.limits.cpu: (absent) -> 2",
                "spec.containers[0].resources.requests.cpu: 500m -> 2",
                "spec.old: 1 -> (absent)",
            ]
        );
    }
}
