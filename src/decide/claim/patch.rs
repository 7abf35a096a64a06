//! The completed claim as text: the admitted object with one constraint
//! inserted, every other byte as it came (unknown fields, key order,
//! spacing), so that the API server's patch is one `add`.

use crate::request::claim::{ClaimKind, ConstraintRule, DeviceConstraint};
use crate::request::json_scan::{Scanner, Span};
use crate::response::json_write::write_string;

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
/// `devices.constraints`, the array created when absent; `Err` when the
/// text is not shaped so (the caller read it as such, so this is a bug or
/// a duplicated key, named).
pub fn add_constraint(
    text: &str,
    kind: &ClaimKind,
    constraint: &DeviceConstraint,
) -> Result<String, String> {
    let whole = Span {
        start: 0,
        end: text.len(),
    };
    let devices = member_span(text, whole, kind.devices_path)
        .ok_or_else(|| format!("{} has no devices object to add a constraint to", kind.kind))?;
    let element = constraint_json(constraint);
    let (at, insert) = match member_span(text, devices, &["constraints"]) {
        Some(array) if text.as_bytes().get(array.start) == Some(&b'[') => {
            let close = array.end - 1;
            let empty = text[array.start + 1..close].trim().is_empty();
            (
                close,
                if empty {
                    element.clone()
                } else {
                    format!(",{element}")
                },
            )
        }
        Some(Span { start, end }) if &text[start..end] == "null" => (start, String::new()),
        Some(_) => {
            return Err(format!(
                "{}'s devices.constraints is not an array",
                kind.kind
            ))
        }
        None => {
            let close = devices.end - 1;
            let empty = text[devices.start + 1..close].trim().is_empty();
            let member = format!("\"constraints\":[{element}]");
            (close, if empty { member } else { format!(",{member}") })
        }
    };
    if insert.is_empty() {
        // `"constraints": null`: the value is replaced by a one-element array.
        let null =
            member_span(text, devices, &["constraints"]).unwrap_or(Span { start: at, end: at });
        return Ok(format!(
            "{}[{element}]{}",
            &text[..null.start],
            &text[null.end..]
        ));
    }
    Ok(format!("{}{insert}{}", &text[..at], &text[at..]))
}

/// The span of the value at `path` (object keys) inside the object spanned
/// by `within`; `None` when a key is absent, given twice, or not an object
/// on the way.
fn member_span(text: &str, within: Span, path: &[&str]) -> Option<Span> {
    let mut span = within;
    for key in path {
        let object = text.get(span.start..span.end)?;
        let mut scanner = Scanner::new(object);
        let mut members = scanner.object().ok()?;
        let mut found = None;
        while let Some(name) = members.next_key().ok()? {
            let value = members.scanner().value().ok()?;
            if name.name().ok()? == *key {
                if found.is_some() {
                    return None;
                }
                found = Some(Span {
                    start: span.start + value.start,
                    end: span.start + value.end,
                });
            }
        }
        span = found?;
    }
    Some(span)
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

    #[test]
    fn a_duplicated_key_is_not_guessed_at() {
        let text = r#"{"spec":{"devices":{}},"spec":{"devices":{}}}"#;
        assert!(add_constraint(text, &RESOURCE_CLAIM, &numa(&["gpus"])).is_err());
    }
}
