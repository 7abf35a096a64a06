//! Human-readable patches for the demo: one line per changed field, from what
//! to what, e.g. `spec.containers[0].resources.requests.cpu: 500m -> 2`.

use crate::admission::Outcome;
use json_patch::PatchOperation;
use serde_json::Value;

/// Shown for a field that did not exist (before) or no longer exists (after).
const ABSENT: &str = "(absent)";

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

/// Lines `path: before -> after`, added objects expanded down to their leaves
/// (arrays of objects by index) so each line stays short.
pub fn describe(original: &Value, operations: &[PatchOperation]) -> Vec<String> {
    let mut lines = Vec::new();
    for operation in operations {
        let Ok(op) = serde_json::to_value(operation) else {
            continue;
        };
        let pointer = op.get("path").and_then(Value::as_str).unwrap_or_default();
        let before = original.pointer(pointer);
        match op.get("op").and_then(Value::as_str) {
            Some("remove") => lines.push(format!(
                "{}: {} -> {ABSENT}",
                dotted_path(pointer),
                before.map_or(ABSENT.to_owned(), short_value)
            )),
            Some("add" | "replace") => {
                let after = op.get("value").unwrap_or(&Value::Null);
                leaves(pointer, before, after, &mut lines);
            }
            _ => lines.push(op.to_string()),
        }
    }
    lines
}

/// `Kind namespace/name (OPERATION)` for a request; pods created by a
/// controller have only a `generateName`, shown as `prefix*`.
pub fn request_title(request: &Value) -> String {
    let text = |pointer: &str| request.pointer(pointer).and_then(Value::as_str);
    let kind = text("/kind/kind").unwrap_or("object");
    let namespace = text("/namespace")
        .filter(|n| !n.is_empty())
        .or_else(|| text("/object/metadata/namespace"))
        .unwrap_or("-");
    let name = text("/object/metadata/name")
        .map(str::to_owned)
        .or_else(|| text("/object/metadata/generateName").map(|g| format!("{g}*")))
        .unwrap_or_else(|| "-".to_owned());
    let operation = text("/operation").unwrap_or("-");
    format!("{kind} {namespace}/{name} ({operation})")
}

/// The demo's report for one request: decision, message, warnings, changes.
pub fn report(label: &str, request: &Value, outcome: &Outcome) -> String {
    let changes = outcome
        .patch
        .as_ref()
        .map(|patch| describe(request.get("object").unwrap_or(&Value::Null), &patch.0))
        .unwrap_or_default();
    let decision = match (outcome.allowed, changes.len()) {
        (false, _) => "REJECTED".to_owned(),
        (true, 0) => "accepted, unchanged".to_owned(),
        (true, n) => format!(
            "accepted, mutated ({n} field{})",
            if n == 1 { "" } else { "s" }
        ),
    };
    let mut out = format!(
        "{label}: {}\n  decision: {decision}\n",
        request_title(request)
    );
    if let Some(message) = &outcome.message {
        out.push_str(&format!("  message:  {message}\n"));
    }
    for warning in &outcome.warnings {
        out.push_str(&format!("  warning:  {warning}\n"));
    }
    for change in changes {
        out.push_str(&format!("    {change}\n"));
    }
    out
}

fn leaves(pointer: &str, before: Option<&Value>, after: &Value, lines: &mut Vec<String>) {
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
            leaves(&child_pointer, child_before, child, lines);
        }
        return;
    }
    lines.push(format!(
        "{}: {} -> {}",
        dotted_path(pointer),
        before.map_or(ABSENT.to_owned(), short_value),
        short_value(after)
    ));
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
    fn reports_decision_message_and_changes() {
        let request = json!({
            "kind": {"kind": "Pod"}, "namespace": "ml", "operation": "CREATE",
            "object": {"metadata": {"generateName": "llama-"}, "spec": {"cpu": "500m"}}
        });
        let outcome = Outcome {
            allowed: true,
            message: None,
            code: None,
            warnings: vec!["no labels".into()],
            patch: Some(
                serde_json::from_value(
                    json!([{"op": "replace", "path": "/spec/cpu", "value": "1"}]),
                )
                .unwrap(),
            ),
            patched_object: None,
        };
        assert_eq!(
            report("pod.json", &request, &outcome),
            "pod.json: Pod ml/llama-* (CREATE)\n  decision: accepted, mutated (1 field)\n  warning:  no labels\n    spec.cpu: 500m -> 1\n"
        );
        let rejected = Outcome {
            allowed: false,
            message: Some("8 GPUs do not fit".into()),
            patch: None,
            warnings: vec![],
            ..outcome
        };
        assert!(report("pod.json", &request, &rejected)
            .contains("decision: REJECTED\n  message:  8 GPUs do not fit"));
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
        let mut lines = describe(&original, &patch.0);
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
