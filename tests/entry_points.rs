//! The waPC entry points, called natively with the payloads the Kubewarden
//! host sends: `{"settings": ..., "request": ...}` and the settings alone.

use crate::common;

use common::review;
use gpu_topology_policy::{validate, validate_settings};
use rstest::rstest;
use serde_json::{json, Value};

fn call_validate(fixture: &str, settings: Value) -> Value {
    let payload = json!({"settings": settings, "request": review(fixture)["request"]});
    let response = validate(payload.to_string().as_bytes()).unwrap();
    serde_json::from_slice(&response).unwrap()
}

/// (fixture, settings, accepted, mutated, message part, has warnings).
/// Natively no host answers the Node listing, so with the default
/// `capacity.source: auto` a GPU pod's fit is skipped with a warning.
#[rstest]
#[case::mutates_a_gpu_pod("training-pod-init-and-sidecar", json!({}), true, true, None, true)]
#[case::null_settings_are_defaults(
    "training-pod-init-and-sidecar",
    Value::Null,
    true,
    true,
    None,
    true
)]
#[case::static_source_never_asks_the_host(
    "training-pod-init-and-sidecar",
    json!({"capacity": {"source": "static", "maxGpusPerNode": 8}}),
    true,
    true,
    None,
    false
)]
#[case::accepts_a_cpu_pod("cpu-only-pod", json!({}), true, false, None, false)]
#[case::rejects_with_a_message("eight-gpu-pod", json!({"capacity": {"maxGpusPerNode": 4}}), false, false,
    Some("capacity.maxGpusPerNode"), false)]
#[case::warns_about_node_name("node-name-pod", json!({}), true, true, None, true)]
fn validate_answers(
    #[case] fixture: &str,
    #[case] settings: Value,
    #[case] accepted: bool,
    #[case] mutated: bool,
    #[case] message: Option<&str>,
    #[case] warnings: bool,
) {
    let response = call_validate(fixture, settings);
    assert_eq!(response["accepted"], accepted, "{response}");
    assert_eq!(!response["mutated_object"].is_null(), mutated, "{response}");
    if let Some(part) = message {
        assert!(
            response["message"].as_str().unwrap().contains(part),
            "{response}"
        );
    }
    assert_eq!(response["warnings"].is_array(), warnings, "{response}");
}

#[rstest]
#[case::not_json(b"{not json".as_slice())]
#[case::no_request(br#"{"settings": {}}"#.as_slice())]
#[case::invalid_settings(br#"{"settings": {"qos": {"mode": "x"}}, "request": {}}"#.as_slice())]
fn bad_payloads_are_errors_not_traps(#[case] payload: &[u8]) {
    assert!(validate(payload).is_err());
}

#[rstest]
#[case::defaults(json!({}), true)]
#[case::valid(json!({"topology": {"affinity": "required", "alignment": "nvlink"}}), true)]
#[case::invalid(json!({"topology": {"preferredWeight": 500}}), false)]
fn validate_settings_answers(#[case] settings: Value, #[case] valid: bool) {
    let response = validate_settings(settings.to_string().as_bytes()).unwrap();
    let response: Value = serde_json::from_slice(&response).unwrap();
    assert_eq!(response["valid"], valid, "{response}");
    if !valid {
        assert!(response["message"]
            .as_str()
            .unwrap()
            .contains("topology.preferredWeight"));
    }
}
