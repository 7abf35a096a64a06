//! The harness against the waPC protocol itself, with a tiny WAT guest
//! (tests/guests/echo.wat), so a broken harness is told apart from a broken
//! policy. Needs no policy.wasm.

use e2e_tests::{HostCapabilities, PolicyModule};
use rstest::rstest;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

const ECHO_GUEST: &str = include_str!("guests/echo.wat");

fn echo_policy() -> e2e_tests::Policy {
    PolicyModule::compile(ECHO_GUEST.as_bytes())
        .unwrap()
        .instantiate(Arc::new(HostCapabilities::none()))
        .unwrap()
}

#[test]
fn round_trips_payloads_and_reads_protocol_version() {
    let policy = echo_policy();
    assert_eq!(policy.call("roundtrip", b"payload").unwrap(), b"payload");
    assert_eq!(policy.protocol_version().unwrap(), "v1");
}

#[rstest]
#[case::valid(json!({"valid": true}), true, None)]
#[case::invalid_with_message(json!({"valid": false, "message": "qos.mode: bad"}), false, Some("qos.mode: bad"))]
fn reads_settings_validation(
    #[case] answer: serde_json::Value,
    #[case] valid: bool,
    #[case] message: Option<&str>,
) {
    // The echo guest answers validate_settings with the settings it was sent.
    let verdict = echo_policy().validate_settings(&answer).unwrap();
    assert_eq!(verdict.valid, valid);
    assert_eq!(verdict.message.as_deref(), message);
}

#[rstest]
#[case::trap("trap", b"x".as_slice(), "waPC call `trap` failed")]
#[case::guest_error("error", b"settings are wrong".as_slice(), "settings are wrong")]
fn guest_failures_name_the_call(
    #[case] operation: &str,
    #[case] payload: &[u8],
    #[case] cause: &str,
) {
    let error = format!("{:#}", echo_policy().call(operation, payload).unwrap_err());
    assert!(error.contains(cause), "{error}");
}

#[test]
fn a_trap_is_reported_with_wasmtimes_reason() {
    let error = format!("{:#}", echo_policy().call("trap", b"x").unwrap_err());
    assert!(error.contains("wasm backtrace"), "{error}");
    assert!(error.contains("a Wasm trap"), "{error}");
}

#[test]
fn malformed_validate_response_names_the_missing_field() {
    // The echo of {"request", "settings"} is not a ValidationResponse.
    let error = echo_policy()
        .validate(&json!({"uid": "1", "object": {}}), &json!({}))
        .unwrap_err();
    let error = format!("{error:#}");
    assert!(error.contains("malformed `validate` response"), "{error}");
    assert!(error.contains("missing field `accepted`"), "{error}");
}

#[test]
fn settings_answer_that_is_not_json_is_malformed() {
    let error = echo_policy()
        .validate_settings(&json!("not an object"))
        .unwrap_err();
    assert!(format!("{error:#}").contains("malformed `validate_settings` response"));
}

#[test]
fn a_module_without_guest_call_is_refused() {
    let error = PolicyModule::compile(b"(module (memory (export \"memory\") 1))")
        .unwrap()
        .instantiate(Arc::new(HostCapabilities::none()))
        .err()
        .unwrap();
    assert!(format!("{error:#}").contains("wapc_init"), "{error:#}");
}

#[test]
fn a_missing_module_says_how_to_build_it() {
    let error = PolicyModule::load(Path::new("/nonexistent/policy.wasm"))
        .err()
        .unwrap();
    assert!(format!("{error:#}").contains("run `make policy.wasm` first"));
}
