//! Human-readable reports for the demo: the request, the decision and the
//! changed fields, one line each (e.g.
//! `spec.containers[0].resources.requests.cpu: 500m -> 2`), written by the
//! `gpu-topology` tool's field diff, so that there is one implementation.

use crate::admission::Outcome;
pub use gpu_topology_cli::view::diff::{describe, dotted_path, short_value, Change};
use serde_json::Value;

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
        .map(|changes| changes.iter().map(Change::to_string).collect::<Vec<_>>())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
