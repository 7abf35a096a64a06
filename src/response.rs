//! The answer to `validate`, in the wire format of the SDK's
//! `ValidationResponse`, with the mutated object written as the JSON text the
//! decision produced instead of being parsed and serialised again.

use crate::evaluate::{Decision, Verdict};
use serde::ser::Error as _;
use serde::Serialize;
use std::collections::BTreeMap;

/// The fields of `kubewarden_policy_sdk::response::ValidationResponse` but
/// `mutated_object`, which [`to_bytes`] appends; a test keeps them in step.
#[derive(Serialize)]
struct ValidationResponse<'a> {
    accepted: bool,
    message: Option<&'a str>,
    code: Option<u16>,
    audit_annotations: Option<BTreeMap<String, String>>,
    warnings: Option<&'a [String]>,
}

const MUTATED_OBJECT_FIELD: &[u8] = b",\"mutated_object\":";
/// Room for the fixed fields of the answer besides message, warnings and
/// the object, so that writing it never grows the buffer.
const ANSWER_OVERHEAD: usize = 160;

/// The serialised answer for `decision`.
pub fn to_bytes(decision: &Decision) -> serde_json::Result<Vec<u8>> {
    let (accepted, message, mutated_object) = match &decision.verdict {
        Verdict::Accept => (true, None, None),
        Verdict::Mutate(object) => (true, None, Some(object.as_str())),
        Verdict::Reject(message) => (false, Some(message.as_str()), None),
    };
    // Sized up front: growing it would copy the object (kilobytes) again.
    // Escaping can only lengthen texts past this; then the buffer grows.
    let texts = message.map_or(0, str::len)
        + mutated_object.map_or(0, str::len)
        + decision.warnings.iter().map(|w| w.len() + 3).sum::<usize>();
    let mut out = Vec::with_capacity(ANSWER_OVERHEAD + texts);
    serde_json::to_writer(
        &mut out,
        &ValidationResponse {
            accepted,
            message,
            code: None,
            audit_annotations: None,
            warnings: (!decision.warnings.is_empty()).then_some(decision.warnings.as_slice()),
        },
    )?;
    // `{...}` becomes `{...,"mutated_object":<object>}`: the object is JSON by
    // construction (`MutatedObject`), so it is copied, not parsed again.
    if out.pop() != Some(b'}') {
        return Err(serde_json::Error::custom(
            "the response is not a JSON object",
        ));
    }
    out.extend_from_slice(MUTATED_OBJECT_FIELD);
    out.extend_from_slice(mutated_object.unwrap_or("null").as_bytes());
    out.push(b'}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::MutatedObject;
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
    #[case::mutate_with_warning(mutated(json!({"spec": {"b": 1, "a": [2]}})), vec!["w".into()], SdkResponse {
        accepted: true, message: None, code: None,
        mutated_object: Some(json!({"spec": {"a": [2], "b": 1}})),
        audit_annotations: None, warnings: Some(vec!["w".into()]) })]
    fn matches_the_sdk_wire_format(
        #[case] verdict: Verdict,
        #[case] warnings: Vec<String>,
        #[case] sdk: SdkResponse,
    ) {
        let ours: Value =
            serde_json::from_slice(&to_bytes(&Decision { verdict, warnings }).unwrap()).unwrap();
        assert_eq!(ours, serde_json::to_value(&sdk).unwrap());
    }

    #[test]
    fn the_mutated_object_is_written_verbatim() {
        let verdict = mutated(json!({"z": 1, "a": {"k": "v"}}));
        let Verdict::Mutate(object) = &verdict else {
            unreachable!("built as a mutation")
        };
        let expected_end = format!(r#","mutated_object":{}}}"#, object.as_str());
        let bytes = String::from_utf8(to_bytes(&verdict.clone().into()).unwrap()).unwrap();
        assert!(bytes.ends_with(&expected_end), "{bytes}");
    }
}
