//! The answer to `validate`, in the wire format of the SDK's
//! `ValidationResponse`, written directly: the mutated object is the JSON
//! text the decision produced, copied rather than parsed and serialised
//! again; the other fields are fixed text but for the message and the
//! warnings.

use crate::decide::answer::{Decision, Verdict};
use crate::json::write::write_string;

// The SDK response's fields, in its order, between the variable parts;
// `code` and `audit_annotations` are never set by this policy. A test keeps
// the bytes equal to what the SDK's own type serialises to.
const ACCEPTED: &str = "{\"accepted\":true,\"message\":";
const REJECTED: &str = "{\"accepted\":false,\"message\":";
const CODE_THEN_OBJECT: &str = ",\"code\":null,\"mutated_object\":";
const ANNOTATIONS_THEN_WARNINGS: &str = ",\"audit_annotations\":null,\"warnings\":";

/// Room for the fixed fields. With it the buffer is sized for the whole
/// answer unless escaping lengthens the message or a warning; only then
/// does it grow (and copy the object, kilobytes, again).
const ANSWER_OVERHEAD: usize = 160;

/// The serialised answer for `decision`.
pub fn to_bytes(decision: &Decision) -> Vec<u8> {
    let (accepted, message, mutated_object) = match &decision.verdict {
        Verdict::Accept => (true, None, None),
        Verdict::Mutate(object) => (true, None, Some(object.as_str())),
        Verdict::Reject(message) => (false, Some(message.as_str()), None),
    };
    let texts = message.map_or(0, str::len)
        + mutated_object.map_or(0, str::len)
        + decision.warnings.iter().map(|w| w.len() + 3).sum::<usize>();
    let mut out = String::with_capacity(ANSWER_OVERHEAD + texts);
    out.push_str(if accepted { ACCEPTED } else { REJECTED });
    match message {
        Some(message) => write_string(message, &mut out),
        None => out.push_str("null"),
    }
    // The object is JSON by construction (`MutatedObject`), so it is copied.
    out.push_str(CODE_THEN_OBJECT);
    out.push_str(mutated_object.unwrap_or("null"));
    out.push_str(ANNOTATIONS_THEN_WARNINGS);
    if decision.warnings.is_empty() {
        out.push_str("null");
    } else {
        out.push('[');
        for (index, warning) in decision.warnings.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            write_string(warning, &mut out);
        }
        out.push(']');
    }
    out.push('}');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::answer::MutatedObject;
    use kubewarden_policy_sdk::response::ValidationResponse as SdkResponse;
    use rstest::rstest;
    use serde_json::{json, Value};

    fn mutated(object: Value) -> Verdict {
        Verdict::Mutate(MutatedObject::from_value(&object).unwrap())
    }

    /// (verdict, warnings, what the SDK's own response serialises to).
    #[rstest]
    #[case::accept(Verdict::Accept, vec![], SdkResponse {
        accepted: true, message: None, code: None, mutated_object: None,
        audit_annotations: None, warnings: None })]
    #[case::reject(Verdict::Reject("no".into()), vec![], SdkResponse {
        accepted: false, message: Some("no".into()), code: None, mutated_object: None,
        audit_annotations: None, warnings: None })]
    #[case::texts_that_need_escaping(
        Verdict::Reject("GPUs \"8\"\n\tdo not fit \u{1}".into()),
        vec!["a\\b".into(), "é ✓".into()],
        SdkResponse {
            accepted: false, message: Some("GPUs \"8\"\n\tdo not fit \u{1}".into()), code: None,
            mutated_object: None, audit_annotations: None,
            warnings: Some(vec!["a\\b".into(), "é ✓".into()]) })]
    #[case::mutate_with_warning(mutated(json!({"spec": {"b": 1, "a": [2]}})), vec!["w".into()], SdkResponse {
        accepted: true, message: None, code: None,
        mutated_object: Some(json!({"spec": {"a": [2], "b": 1}})),
        audit_annotations: None, warnings: Some(vec!["w".into()]) })]
    fn matches_the_sdk_wire_format(
        #[case] verdict: Verdict,
        #[case] warnings: Vec<String>,
        #[case] sdk: SdkResponse,
    ) {
        let ours = String::from_utf8(to_bytes(&Decision { verdict, warnings })).unwrap();
        assert_eq!(ours, serde_json::to_string(&sdk).unwrap());
    }

    #[test]
    fn the_mutated_object_is_written_verbatim() {
        let verdict = mutated(json!({"z": 1, "a": {"k": "v"}}));
        let Verdict::Mutate(object) = &verdict else {
            unreachable!("built as a mutation")
        };
        let field = format!(r#","mutated_object":{},"audit"#, object.as_str());
        let bytes = String::from_utf8(to_bytes(&verdict.clone().into())).unwrap();
        assert!(bytes.contains(&field), "{bytes}");
    }
}
