//! Admission documents in, admission outcomes out, the way the Kubewarden host
//! builds them.
//!
//! - Input: an `AdmissionReview` (its `request` is used) or a bare
//!   `AdmissionRequest`, the same rule `kwctl run` applies (`kind: AdmissionReview`).
//! - Output: the policy's `ValidationResponse` turned into what the API server
//!   receives. A `mutated_object` becomes the RFC 6902 JSON patch
//!   `json_patch::diff(request.object, mutated_object)`, exactly as
//!   policy-evaluator's `AdmissionResponse::from_policy_validation_response` does.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The message Kubewarden answers when a policy mutates a request without an
/// object (DELETE).
pub const MUTATION_WITHOUT_OBJECT: &str = "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed";

/// Extracts the `AdmissionRequest` from an `AdmissionReview` or a bare request.
pub fn admission_request(document: Value) -> Result<Value> {
    let Value::Object(mut fields) = document else {
        bail!("the request document is not a JSON object");
    };
    if fields.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        match fields.remove("request") {
            Some(request @ Value::Object(_)) => Ok(request),
            _ => bail!("invalid AdmissionReview object: it has no `request` object"),
        }
    } else {
        Ok(Value::Object(fields))
    }
}

/// Reads a request file (JSON; AdmissionReview or AdmissionRequest).
pub fn load_request(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read request file {}", path.display()))?;
    let document = serde_json::from_str(&text)
        .with_context(|| format!("request file {} is not JSON", path.display()))?;
    admission_request(document).with_context(|| format!("request file {}", path.display()))
}

/// The policy's answer to `validate`, as the Kubewarden SDK serialises it
/// (unknown fields are ignored, as the host does).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    pub mutated_object: Option<Value>,
    pub audit_annotations: Option<HashMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

/// What the API server would receive for one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub allowed: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    pub warnings: Vec<String>,
    /// The JSON patch; `None` when the policy did not change the object.
    pub patch: Option<json_patch::Patch>,
    /// The object after the patch, when there is one.
    pub patched_object: Option<Value>,
}

impl Outcome {
    /// Builds the outcome for `request` from the policy's response.
    pub fn new(request: &Value, response: ValidationResponse) -> Self {
        let warnings = response.warnings.unwrap_or_default();
        let Some(mutated) = response.mutated_object else {
            return Self {
                allowed: response.accepted,
                message: response.message,
                code: response.code,
                warnings,
                patch: None,
                patched_object: None,
            };
        };
        let Some(original) = request.get("object") else {
            return Self {
                allowed: false,
                message: Some(MUTATION_WITHOUT_OBJECT.to_owned()),
                code: None,
                warnings: Vec::new(),
                patch: None,
                patched_object: None,
            };
        };
        let patch = json_patch::diff(original, &mutated);
        let changed = !patch.0.is_empty();
        Self {
            allowed: response.accepted,
            message: response.message,
            code: response.code,
            warnings,
            patch: changed.then_some(patch),
            patched_object: changed.then_some(mutated),
        }
    }

    /// The AdmissionResponse JSON `kwctl run` prints for this outcome (the patch
    /// base64-encoded), so harness and kwctl output can be compared directly.
    pub fn admission_response(&self, uid: &str) -> Value {
        use base64::Engine as _;
        let mut response = serde_json::json!({"uid": uid, "allowed": self.allowed});
        if let Some(patch) = &self.patch {
            let encoded = serde_json::to_vec(patch).unwrap_or_default();
            response["patchType"] = "JSONPatch".into();
            response["patch"] = base64::engine::general_purpose::STANDARD
                .encode(encoded)
                .into();
        }
        if self.message.is_some() || self.code.is_some() {
            response["status"] = serde_json::json!({"message": self.message, "code": self.code});
        }
        if !self.warnings.is_empty() {
            response["warnings"] = serde_json::json!(self.warnings);
        }
        response
    }

    /// The patch operations (empty when there is no patch).
    pub fn operations(&self) -> &[json_patch::PatchOperation] {
        self.patch.as_ref().map_or(&[], |p| p.0.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn response(mutated_object: Option<Value>) -> ValidationResponse {
        ValidationResponse {
            accepted: true,
            message: None,
            code: None,
            mutated_object,
            audit_annotations: None,
            warnings: None,
        }
    }

    #[rstest]
    #[case::admission_review(
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "1"}}),
        json!({"uid": "1"})
    )]
    #[case::bare_request(json!({"uid": "2", "kind": {"kind": "Pod"}}), json!({"uid": "2", "kind": {"kind": "Pod"}}))]
    fn accepts_review_or_request(#[case] document: Value, #[case] expected: Value) {
        assert_eq!(admission_request(document).unwrap(), expected);
    }

    #[rstest]
    #[case::not_an_object(json!([1, 2]))]
    #[case::review_without_request(json!({"kind": "AdmissionReview"}))]
    fn refuses_documents_that_are_not_requests(#[case] document: Value) {
        assert!(admission_request(document).is_err());
    }

    #[test]
    fn mutation_becomes_the_hosts_diff() {
        let request = json!({"object": {"spec": {"a": 1, "keep": [1, 2]}}});
        let mutated = json!({"spec": {"a": 2, "keep": [1, 2], "b": true}});
        let outcome = Outcome::new(&request, response(Some(mutated.clone())));
        assert!(outcome.allowed);
        let ops = serde_json::to_value(outcome.patch.unwrap()).unwrap();
        assert_eq!(
            ops,
            json!([
                {"op": "replace", "path": "/spec/a", "value": 2},
                {"op": "add", "path": "/spec/b", "value": true}
            ])
        );
        assert_eq!(outcome.patched_object, Some(mutated));
    }

    #[test]
    fn renders_kwctls_admission_response() {
        let request = json!({"object": {"a": 1}});
        let outcome = Outcome::new(&request, response(Some(json!({"a": 2}))));
        let printed = outcome.admission_response("uid-1");
        assert_eq!(printed["patchType"], "JSONPatch");
        let decoded = crate::kwctl::outcome_from_output(&request, &printed.to_string()).unwrap();
        assert_eq!(decoded, outcome);
    }

    #[test]
    fn unchanged_mutated_object_is_no_patch() {
        let object = json!({"spec": {"a": 1}});
        let outcome = Outcome::new(&json!({"object": object}), response(Some(object.clone())));
        assert!(outcome.patch.is_none());
        assert!(outcome.operations().is_empty());
    }

    #[test]
    fn mutation_without_object_is_refused_like_kubewarden() {
        let outcome = Outcome::new(&json!({"operation": "DELETE"}), response(Some(json!({}))));
        assert!(!outcome.allowed);
        assert_eq!(outcome.message.as_deref(), Some(MUTATION_WITHOUT_OBJECT));
    }
}
