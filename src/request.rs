//! The `validate` payload as the policy reads it: borrowed from the bytes the
//! host sent, with the admitted object kept as raw JSON text.
//!
//! The SDK's `KubernetesAdmissionRequest` deserialises `object` and
//! `oldObject` into JSON trees and `userInfo` into maps on every call; on a
//! 5 KB pod that allocation is most of the evaluation. Here only the fields
//! the decision needs are read, strings are borrowed where they carry no
//! escapes, and the object stays text until a decision needs more of it.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// `{"settings": ..., "request": ...}`, what the host passes to `validate`.
#[derive(Debug, Deserialize)]
pub struct Payload<'a> {
    /// Absent or `null` means the default settings.
    #[serde(borrow, default)]
    pub settings: Option<&'a RawValue>,
    #[serde(borrow)]
    pub request: AdmissionRequest<'a>,
}

impl<'a> Payload<'a> {
    pub fn parse(payload: &'a [u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(payload)
    }
}

/// The fields of an AdmissionRequest the policy decides on. Missing fields
/// read as empty, as in the SDK; both the API's camelCase and the SDK's
/// snake_case spellings are accepted.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AdmissionRequest<'a> {
    #[serde(borrow)]
    pub kind: GroupVersionKind<'a>,
    #[serde(borrow, alias = "sub_resource")]
    pub sub_resource: Cow<'a, str>,
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(borrow)]
    pub namespace: Cow<'a, str>,
    #[serde(borrow)]
    pub operation: Cow<'a, str>,
    /// `None` when absent or `null`.
    #[serde(borrow)]
    pub object: Option<&'a RawValue>,
    #[serde(borrow, alias = "old_object")]
    pub old_object: Option<&'a RawValue>,
}

impl<'a> AdmissionRequest<'a> {
    /// Reads a bare AdmissionRequest document.
    pub fn parse(request: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(request)
    }

    /// The object as text; `null` when the request carries none.
    pub fn object_text(&self) -> &'a str {
        self.object.map_or("null", RawValue::get)
    }

    /// The old object (UPDATE) as text; `null` when the request carries none.
    pub fn old_object_text(&self) -> &'a str {
        self.old_object.map_or("null", RawValue::get)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct GroupVersionKind<'a> {
    #[serde(borrow)]
    pub group: Cow<'a, str>,
    #[serde(borrow)]
    pub version: Cow<'a, str>,
    #[serde(borrow)]
    pub kind: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn reads_the_decision_fields_and_keeps_the_object_as_text() {
        let payload = br#"{"settings": {"qos": {"mode": "off"}}, "request": {
            "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "ml", "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["a"], "extra": {"k": ["v"]}},
            "object": {"spec": {"containers": []}, "future": 1}, "oldObject": null,
            "dryRun": false, "options": {"kind": "CreateOptions"}}}"#;
        let payload = Payload::parse(payload).unwrap();
        let request = &payload.request;
        assert_eq!(
            payload.settings.unwrap().get(),
            r#"{"qos": {"mode": "off"}}"#
        );
        assert_eq!(
            (request.kind.kind.as_ref(), request.kind.version.as_ref()),
            ("Pod", "v1")
        );
        assert_eq!(request.namespace, "ml");
        assert_eq!(request.operation, "CREATE");
        assert_eq!(
            request.object_text(),
            r#"{"spec": {"containers": []}, "future": 1}"#
        );
        assert_eq!(request.old_object_text(), "null");
        // Borrowed, not copied: the bytes the host sent are read in place.
        assert!(matches!(request.namespace, Cow::Borrowed(_)));
    }

    #[rstest]
    #[case::camel_case(r#"{"subResource": "status", "oldObject": {"a": 1}}"#)]
    #[case::snake_case(r#"{"sub_resource": "status", "old_object": {"a": 1}}"#)]
    fn accepts_both_spellings(#[case] request: &str) {
        let request = AdmissionRequest::parse(request).unwrap();
        assert_eq!(request.sub_resource, "status");
        assert_eq!(request.old_object_text(), r#"{"a": 1}"#);
    }

    #[test]
    fn escaped_strings_are_unescaped() {
        let request = AdmissionRequest::parse(r#"{"namespace": "m\u006c"}"#).unwrap();
        assert_eq!(request.namespace, "ml");
    }

    #[rstest]
    #[case::not_json(r#"{"namespace": "#)]
    #[case::wrong_type(r#"{"operation": 5}"#)]
    #[case::kind_not_an_object(r#"{"kind": "Pod"}"#)]
    fn malformed_requests_are_errors(#[case] request: &str) {
        assert!(AdmissionRequest::parse(request).is_err());
    }
}
