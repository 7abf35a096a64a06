//! The `validate` payload as the policy reads it: borrowed from the bytes the
//! host sent, with the admitted object kept as JSON text.
//!
//! The SDK's `KubernetesAdmissionRequest` deserialises `object` and
//! `oldObject` into JSON trees and `userInfo` into maps on every call; on a
//! 5 KB pod that allocation is most of the evaluation. Here only the fields
//! the decision needs are read, strings are borrowed where they carry no
//! escapes, and the object stays text until a decision needs more of it.

pub mod binding;
pub mod claim;
pub mod pod;
pub mod pod_text;
pub mod qos_class;
/// Kubernetes quantities, shared with the labeler (it reads the kubelet's).
pub use gpu_topology::quantity;

use crate::json::scan::{Members, Scanner};
use crate::request::pod_text::{PodFields, PodText};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// `{"settings": ..., "request": ...}`, what the host passes to `validate`.
#[derive(Debug)]
pub struct Payload<'a> {
    /// The settings as JSON text; `None` when absent or `null` (defaults).
    pub settings: Option<&'a str>,
    pub request: AdmissionRequest<'a>,
}

impl<'a> Payload<'a> {
    /// Reads the payload in one validating scan (see [`crate::json::scan`]).
    pub fn parse(payload: &'a [u8]) -> Result<Self, ReadError> {
        let text = std::str::from_utf8(payload)
            .map_err(|error| ReadError::new("the payload", error.to_string()))?;
        let mut scanner = Scanner::new(text);
        let mut settings = Field::new("settings");
        let mut request = Field::new("request");
        let mut members = scanner.object().map_err(ReadError::at("the payload"))?;
        while let Some(key) = next_key(&mut members, "the payload")? {
            match key.as_ref() {
                "settings" => settings.set(optional_text(members.scanner(), "settings")?)?,
                "request" => request.set(AdmissionRequest::read(members.scanner())?)?,
                _ => pass_over(members.scanner(), "the payload")?,
            }
        }
        scanner.finish().map_err(ReadError::at("the payload"))?;
        Ok(Payload {
            settings: settings.value.flatten(),
            request: request.required()?,
        })
    }
}

/// The fields of an AdmissionRequest the policy decides on. Missing fields
/// read as empty, as in the SDK; both the API's camelCase and the SDK's
/// snake_case spellings are accepted.
#[derive(Debug, Default)]
pub struct AdmissionRequest<'a> {
    pub kind: GroupVersionKind<'a>,
    pub sub_resource: Cow<'a, str>,
    pub name: Cow<'a, str>,
    pub namespace: Cow<'a, str>,
    pub operation: Cow<'a, str>,
    /// The object as JSON text; `None` when absent or `null`.
    pub object: Option<&'a str>,
    /// The object's Pod fields, read while the object was scanned (any
    /// kind: the kind may come after the object). `None` when the object
    /// is not shaped like a Pod.
    pub object_fields: Option<PodFields<'a>>,
    pub old_object: Option<&'a str>,
}

impl<'a> AdmissionRequest<'a> {
    /// Reads a bare AdmissionRequest document.
    pub fn parse(request: &'a str) -> Result<Self, ReadError> {
        let mut scanner = Scanner::new(request);
        let request = Self::read(&mut scanner)?;
        scanner.finish().map_err(ReadError::at("the request"))?;
        Ok(request)
    }

    /// Reads the request object that is the scanner's next value.
    fn read(scanner: &mut Scanner<'a>) -> Result<Self, ReadError> {
        let mut kind = Field::new("kind");
        let mut sub_resource = Field::new("subResource");
        let mut name = Field::new("name");
        let mut namespace = Field::new("namespace");
        let mut operation = Field::new("operation");
        let mut object = Field::new("object");
        let mut object_fields = None;
        let mut old_object = Field::new("oldObject");
        let mut members = scanner.object().map_err(ReadError::at("request"))?;
        while let Some(key) = next_key(&mut members, "request")? {
            let scanner = members.scanner();
            match key.as_ref() {
                "kind" => kind.set(deserialize(scanner, "request.kind")?)?,
                "subResource" | "sub_resource" => {
                    sub_resource.set(string(scanner, "subResource")?)?
                }
                "name" => name.set(string(scanner, "name")?)?,
                "namespace" => namespace.set(string(scanner, "namespace")?)?,
                "operation" => operation.set(string(scanner, "operation")?)?,
                "object" => {
                    let (text, fields) = object_and_fields(scanner)?;
                    object.set(text)?;
                    object_fields = fields;
                }
                "oldObject" | "old_object" => {
                    old_object.set(optional_text(scanner, "oldObject")?)?
                }
                _ => pass_over(scanner, "request")?,
            }
        }
        Ok(AdmissionRequest {
            kind: kind.or_default(),
            sub_resource: sub_resource.or_default(),
            name: name.or_default(),
            namespace: namespace.or_default(),
            operation: operation.or_default(),
            object: object.value.flatten(),
            object_fields,
            old_object: old_object.value.flatten(),
        })
    }

    /// The object as text; `null` when the request carries none.
    pub fn object_text(&self) -> &'a str {
        self.object.unwrap_or("null")
    }

    /// The object as a Pod read for the fields the policy decides on;
    /// `None` when the reader does not handle it (reading the object's text
    /// alone would not either: it is the same reader).
    pub fn pod_text(&self) -> Option<PodText<'a>> {
        self.object_fields.as_ref().and_then(PodText::from_fields)
    }

    /// The old object (UPDATE) as text; `null` when the request carries none.
    pub(crate) fn old_object_text(&self) -> &'a str {
        self.old_object.unwrap_or("null")
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

/// A payload or request that is not what the protocol sends: malformed JSON,
/// a field of the wrong type, or a field given twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    place: String,
    problem: String,
}

impl ReadError {
    fn new(place: impl Into<String>, problem: impl Into<String>) -> Self {
        ReadError {
            place: place.into(),
            problem: problem.into(),
        }
    }

    /// Maps a scanner error at `place`.
    fn at<E: fmt::Display>(place: &'static str) -> impl Fn(E) -> Self {
        move |error| ReadError::new(place, error.to_string())
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cannot be read: {}", self.place, self.problem)
    }
}

impl std::error::Error for ReadError {}

/// A field read at most once: a key given twice is refused, as serde does.
struct Field<T> {
    name: &'static str,
    value: Option<T>,
}

impl<T: Default> Field<T> {
    fn new(name: &'static str) -> Self {
        Field { name, value: None }
    }

    fn set(&mut self, value: T) -> Result<(), ReadError> {
        if self.value.replace(value).is_some() {
            return Err(ReadError::new(self.name, "the field is given twice"));
        }
        Ok(())
    }

    fn or_default(self) -> T {
        self.value.unwrap_or_default()
    }

    fn required(self) -> Result<T, ReadError> {
        let name = self.name;
        self.value
            .ok_or_else(|| ReadError::new("the payload", format!("missing field `{name}`")))
    }
}

fn next_key<'a>(
    members: &mut Members<'_, 'a>,
    place: &'static str,
) -> Result<Option<Cow<'a, str>>, ReadError> {
    match members.next_key().map_err(ReadError::at(place))? {
        Some(key) => key
            .name()
            .map(Some)
            .map_err(|problem| ReadError::new(place, problem)),
        None => Ok(None),
    }
}

fn pass_over(scanner: &mut Scanner<'_>, place: &'static str) -> Result<(), ReadError> {
    scanner.value().map(drop).map_err(ReadError::at(place))
}

/// The object: read for its Pod fields in the same pass when it is shaped
/// like a Pod, else scanned again from its start as any JSON value.
fn object_and_fields<'a>(
    scanner: &mut Scanner<'a>,
) -> Result<(Option<&'a str>, Option<PodFields<'a>>), ReadError> {
    scanner.peek_value();
    let start = scanner.position();
    if let Some(fields) = PodFields::read(scanner) {
        return Ok((Some(fields.object_text()), Some(fields)));
    }
    scanner.rewind(start);
    Ok((optional_text(scanner, "object")?, None))
}

/// The next value as JSON text; `None` for `null`.
fn optional_text<'a>(
    scanner: &mut Scanner<'a>,
    field: &'static str,
) -> Result<Option<&'a str>, ReadError> {
    let text = scanner.value_text().map_err(ReadError::at(field))?;
    Ok((text != "null").then_some(text))
}

/// The next value, a string: borrowed from the text unless it has escapes.
fn string<'a>(scanner: &mut Scanner<'a>, field: &'static str) -> Result<Cow<'a, str>, ReadError> {
    let text = scanner.value_text().map_err(ReadError::at(field))?;
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(plain) if !plain.contains('\\') => Ok(Cow::Borrowed(plain)),
        _ => serde_json::from_slice::<String>(text.as_bytes())
            .map(Cow::Owned)
            .map_err(|error| ReadError::new(field, error.to_string())),
    }
}

/// The next value, read with serde (small values only).
fn deserialize<'a, T: Deserialize<'a>>(
    scanner: &mut Scanner<'a>,
    field: &'static str,
) -> Result<T, ReadError> {
    let text = scanner.value_text().map_err(ReadError::at(field))?;
    serde_json::from_slice(text.as_bytes())
        .map_err(|error| ReadError::new(field, error.to_string()))
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
        assert_eq!(payload.settings, Some(r#"{"qos": {"mode": "off"}}"#));
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
    #[case::name_null(r#"{"name": null}"#)]
    #[case::given_twice(r#"{"namespace": "a", "namespace": "b"}"#)]
    #[case::both_spellings(r#"{"subResource": "a", "sub_resource": "b"}"#)]
    #[case::not_an_object(r#"["namespace"]"#)]
    #[case::trailing_characters(r#"{} {}"#)]
    #[case::malformed_unread_field(r#"{"userInfo": {"groups": [1,]}}"#)]
    fn malformed_requests_are_errors(#[case] request: &str) {
        assert!(AdmissionRequest::parse(request).is_err());
    }

    #[rstest]
    #[case::not_utf8(b"{\"request\": {\"name\": \"\xff\"}}", "the payload cannot be read")]
    #[case::no_request(br#"{"settings": null}"#, "missing field `request`")]
    #[case::settings_twice(
        br#"{"settings": 1, "settings": 2, "request": {}}"#,
        "settings cannot be read: the field is given twice"
    )]
    #[case::malformed_object(
        br#"{"request": {"object": {"spec": [}}}"#,
        "object cannot be read: expected a JSON value at byte 33"
    )]
    fn malformed_payloads_name_the_problem(#[case] payload: &[u8], #[case] expected: &str) {
        let error = Payload::parse(payload).unwrap_err().to_string();
        assert!(error.contains(expected), "{error}");
    }

    /// The object is read for Pod fields in the same pass when it is shaped
    /// like a Pod, and scanned again otherwise; its text is the same.
    #[rstest]
    #[case::pod(r#"{"spec": {"containers": [{"name": "a"}]}, "status": {}}"#, true)]
    #[case::deployment(r#"{"spec": {"template": {"spec": {"containers": []}}}}"#, true)]
    #[case::containers_not_a_list(r#"{"spec": {"containers": 5}, "x": [1]}"#, false)]
    #[case::spec_given_twice(r#"{"spec": {}, "spec": {}}"#, false)]
    #[case::not_an_object("[1, 2]", false)]
    fn the_object_is_kept_whole_however_it_is_shaped(
        #[case] object: &str,
        #[case] read_in_place: bool,
    ) {
        let request = format!(r#"{{"object": {object}, "name": "n"}}"#);
        let request = AdmissionRequest::parse(&request).unwrap();
        assert_eq!(request.object_text(), object);
        assert_eq!(request.object_fields.is_some(), read_in_place);
        assert_eq!(request.name, "n");
    }

    #[test]
    fn null_settings_and_objects_read_as_absent() {
        let payload = br#"{"settings": null, "request": {"object": null}}"#;
        let payload = Payload::parse(payload).unwrap();
        assert_eq!(payload.settings, None);
        assert_eq!(payload.request.object, None);
        assert_eq!(payload.request.object_text(), "null");
    }
}
