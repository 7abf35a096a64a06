//! The completed claim as text: the admitted object with a constraint (and,
//! for dra-driver-cpu's CPUs, a request) inserted, every other byte as it
//! came (unknown fields, key order, spacing), so that the API server's patch
//! is one `add` per inserted element.

use crate::json::scan::{ScanError, Scanner, Span};
use crate::json::write::write_string;
use crate::request::claim::{ClaimKind, ConstraintRule, DeviceConstraint};

/// The constraint as JSON, in the API's field order.
pub fn constraint_json(constraint: &DeviceConstraint) -> String {
    let mut out = String::from("{\"requests\":[");
    for (index, request) in constraint.requests.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(request, &mut out);
    }
    let (key, attribute) = match &constraint.rule {
        ConstraintRule::MatchAttribute(name) => ("matchAttribute", name),
        ConstraintRule::DistinctAttribute(name) => ("distinctAttribute", name),
    };
    out.push_str("],\"");
    out.push_str(key);
    out.push_str("\":");
    write_string(attribute, &mut out);
    out.push('}');
    out
}

/// `text` (a `kind` object) with `constraint` appended to its
/// `devices.constraints`, the array created when absent or `null`; `Err`
/// when the text is not shaped so, or a key on the way is given twice
/// (which of two the API server keeps is not this policy's to guess).
pub(crate) fn add_constraint(
    text: &str,
    kind: &ClaimKind,
    constraint: &DeviceConstraint,
) -> Result<String, String> {
    append(text, kind, "constraints", &constraint_json(constraint))
}

/// `text` with `request` (JSON) appended to its `devices.requests`, the
/// array created when absent or `null`; `Err` as [`add_constraint`].
pub(crate) fn add_request(text: &str, kind: &ClaimKind, request: &str) -> Result<String, String> {
    append(text, kind, "requests", request)
}

/// `text` with `element` (JSON) appended to the array `devices.<field>`.
fn append(text: &str, kind: &ClaimKind, field: &str, element: &str) -> Result<String, String> {
    let whole = Span {
        start: 0,
        end: text.len(),
    };
    let devices = member_span(text, whole, kind.devices_path)?
        .ok_or_else(|| format!("{} has no devices object to add {field} to", kind.kind))?;
    let (replaced, insert) = match member_span(text, devices, &[field])? {
        Some(null) if null.of(text) == "null" => (null, format!("[{element}]")),
        Some(array) if array.of(text).starts_with('[') => {
            // Before the closing `]`, after a `,` unless it is empty.
            let close = array.end - 1;
            let empty = text[array.start + 1..close].trim().is_empty();
            let insert = if empty {
                element.to_owned()
            } else {
                format!(",{element}")
            };
            (
                Span {
                    start: close,
                    end: close,
                },
                insert,
            )
        }
        Some(_) => return Err(format!("{}'s devices.{field} is not an array", kind.kind)),
        None => {
            // A new last member of `devices`, before its closing `}`.
            let close = devices.end - 1;
            let empty = text[devices.start + 1..close].trim().is_empty();
            let member = format!("\"{field}\":[{element}]");
            let insert = if empty { member } else { format!(",{member}") };
            (
                Span {
                    start: close,
                    end: close,
                },
                insert,
            )
        }
    };
    Ok(format!(
        "{}{insert}{}",
        &text[..replaced.start],
        &text[replaced.end..]
    ))
}

/// The span of the value at `path` (object keys) inside the object spanned
/// by `within`; `None` when a key is absent; `Err` when a key is given twice
/// or a value on the way is not an object.
fn member_span(text: &str, within: Span, path: &[&str]) -> Result<Option<Span>, String> {
    let mut span = within;
    for key in path {
        let object = span.of(text);
        let mut scanner = Scanner::new(object);
        let unreadable = |error: ScanError| format!("{key:?} cannot be reached: {error}");
        let mut members = scanner.object().map_err(unreadable)?;
        let mut found = None;
        while let Some(name) = members.next_key().map_err(unreadable)? {
            let value = members.scanner().value().map_err(unreadable)?;
            if name.name()? == *key {
                if found.is_some() {
                    return Err(format!("the key {key:?} is given twice"));
                }
                found = Some(Span {
                    start: span.start + value.start,
                    end: span.start + value.end,
                });
            }
        }
        match found {
            Some(value) => span = value,
            None => return Ok(None),
        }
    }
    Ok(Some(span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::claim::{RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE};
    use rstest::rstest;

    fn numa(requests: &[&str]) -> DeviceConstraint {
        DeviceConstraint {
            requests: requests.iter().map(|r| (*r).to_owned()).collect(),
            rule: ConstraintRule::MatchAttribute("resource.kubernetes.io/numaNode".into()),
        }
    }

    #[rstest]
    #[case::created_in_a_template(
        RESOURCE_CLAIM_TEMPLATE,
        r#"{"spec": {"spec": {"devices": {"requests": [], "x-unknown": 1}}}}"#,
        r#"{"spec": {"spec": {"devices": {"requests": [], "x-unknown": 1,"constraints":[{"requests":["gpus"],"matchAttribute":"resource.kubernetes.io/numaNode"}]}}}}"#
    )]
    #[case::appended_in_a_claim(
        RESOURCE_CLAIM,
        r#"{"spec":{"devices":{"constraints":[{"matchAttribute":"a/b"}]}}}"#,
        r#"{"spec":{"devices":{"constraints":[{"matchAttribute":"a/b"},{"requests":["gpus"],"matchAttribute":"resource.kubernetes.io/numaNode"}]}}}"#
    )]
    #[case::into_an_empty_array(
        RESOURCE_CLAIM,
        r#"{"spec":{"devices":{"constraints":[ ]}}}"#,
        r#"{"spec":{"devices":{"constraints":[ {"requests":["gpus"],"matchAttribute":"resource.kubernetes.io/numaNode"}]}}}"#
    )]
    #[case::over_null(
        RESOURCE_CLAIM,
        r#"{"spec":{"devices":{"constraints":null}}}"#,
        r#"{"spec":{"devices":{"constraints":[{"requests":["gpus"],"matchAttribute":"resource.kubernetes.io/numaNode"}]}}}"#
    )]
    fn one_constraint_is_inserted_and_every_other_byte_kept(
        #[case] kind: ClaimKind,
        #[case] text: &str,
        #[case] expected: &str,
    ) {
        let added = add_constraint(text, &kind, &numa(&["gpus"])).unwrap();
        assert_eq!(added, expected);
        serde_json::from_str::<serde_json::Value>(&added).unwrap();
    }

    #[rstest]
    #[case::the_spec(r#"{"spec":{"devices":{}},"spec":{"devices":{}}}"#)]
    #[case::the_constraints(
        r#"{"spec":{"devices":{"constraints":[],"constraints":[{"matchAttribute":"a/b"}]}}}"#
    )]
    fn a_duplicated_key_is_not_guessed_at(#[case] text: &str) {
        let error = add_constraint(text, &RESOURCE_CLAIM, &numa(&["gpus"])).unwrap_err();
        assert!(error.contains("is given twice"), "{error}");
    }
}
