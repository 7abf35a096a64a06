//! The admission request for an object, built as policy-server receives it
//! from the API server for a CREATE of that object, and read by the
//! policy's own reader ([`AdmissionRequest::parse`]).
//!
//! The API server derives the request's `kind` from the object's
//! `apiVersion` and `kind`, and its `namespace` from the object (or the
//! client's namespace: `default` when none is set); `name` is the object's
//! (empty for a `generateName` object, which is named after admission).

use gpu_topology_policy::request::{AdmissionRequest, ReadError};
use serde_json::{json, Value};

/// The namespace kubectl creates an object in when neither the object nor
/// the command names one.
pub const DEFAULT_NAMESPACE: &str = "default";

/// An AdmissionRequest document as JSON text, which the policy's reader
/// borrows from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestText(pub String);

impl RequestText {
    /// The CREATE request for `object` (a mapping with `apiVersion` and `kind`).
    pub fn create(object: &Value) -> Self {
        let text = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (group, version) = match text("/apiVersion").split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", text("/apiVersion")),
        };
        let kind = json!({"group": group, "version": version, "kind": text("/kind")});
        let namespace = Some(text("/metadata/namespace"))
            .filter(|namespace| !namespace.is_empty())
            .unwrap_or(DEFAULT_NAMESPACE);
        let request = json!({
            "uid": "gpu-topology-explain",
            "kind": kind,
            "requestKind": kind,
            "name": text("/metadata/name"),
            "namespace": namespace,
            "operation": "CREATE",
            "object": object,
            "oldObject": null,
            "dryRun": true,
        });
        RequestText(request.to_string())
    }

    /// A request document given as it is (an AdmissionRequest).
    pub fn given(request: &Value) -> Self {
        RequestText(request.to_string())
    }

    /// The request as the policy reads it.
    pub fn parse(&self) -> Result<AdmissionRequest<'_>, ReadError> {
        AdmissionRequest::parse(&self.0)
    }

    /// The request as a JSON tree.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}
