//! CI's share of the fuzzing: every committed input of the policy's fuzz
//! targets (`fuzz/corpus/<target>`, minimized, and `fuzz/regressions/<target>`,
//! the inputs that once failed) replayed through the same entry points and
//! the same checks the targets run (`fuzz/src/policy_oracles.rs`, included
//! here): an answer for every input, never a panic, and for the scanner
//! agreement with serde_json. CI does not fuzz; FUZZING.md says how to.

#[path = "../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../fuzz/src/policy_oracles.rs"]
mod policy_oracles;

use corpus::{committed_inputs, replay};
use rstest::rstest;
use std::path::Path;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// (target, the least number of committed inputs it has).
#[rstest]
#[case::validate("validate", 10)]
#[case::validate_structured("validate_structured", 10)]
#[case::validate_settings("validate_settings", 10)]
#[case::json_scan("json_scan", 10)]
#[case::node_list("node_list", 5)]
#[case::fleet_summary("fleet_summary", 2)]
#[case::fleet_decision("fleet_decision", 5)]
fn every_committed_input_is_answered(#[case] target: &str, #[case] at_least: usize) {
    let requests = policy_oracles::fixture_requests(repo_root());
    let inputs = committed_inputs(repo_root(), target);
    let requests = &requests;
    match target {
        "validate" => replay(&inputs, at_least, |data| {
            drop(policy_oracles::check_validate(data))
        }),
        "validate_structured" => replay(&inputs, at_least, |data| {
            policy_oracles::check_structured(requests, data)
        }),
        "validate_settings" => replay(&inputs, at_least, policy_oracles::check_settings),
        "json_scan" => replay(&inputs, at_least, policy_oracles::check_json_scan),
        "node_list" => replay(&inputs, at_least, policy_oracles::check_node_list),
        "fleet_summary" => replay(&inputs, at_least, policy_oracles::check_fleet_summary),
        "fleet_decision" => replay(&inputs, at_least, policy_oracles::check_fleet_decision),
        _ => unreachable!("no target {target}"),
    }
}

/// The structured target reaches the decision: most spliced payloads of
/// the corpus are answered, not refused as unreadable.
#[test]
fn the_structured_corpus_reaches_the_decision() {
    let requests = policy_oracles::fixture_requests(repo_root());
    assert!(requests.len() >= 20, "{} fixture requests", requests.len());
    let inputs = committed_inputs(repo_root(), "validate_structured");
    let answered = inputs
        .iter()
        .filter(|(_, data)| {
            let payload = policy_oracles::structured_payload(&requests, data);
            gpu_topology_policy::validate(&payload).is_ok()
        })
        .count();
    assert!(
        answered * 2 > inputs.len(),
        "{answered} of {} answered",
        inputs.len()
    );
}

/// A GPU pod CREATE whose metadata holds `extra` (JSON text), mutated in
/// place unless serde_json cannot read it.
fn pod_payload(extra: &str) -> String {
    format!(
        r#"{{"request":{{"kind":{{"kind":"Pod","version":"v1","group":""}},"operation":"CREATE","object":{{"metadata":{{"x":{extra}}},"spec":{{"containers":[{{"name":"a","resources":{{"limits":{{"nvidia.com/gpu":"1"}}}}}}]}}}}}},"settings":{{"capacity":{{"source":"static","maxGpusPerNode":8}}}}}}"#
    )
}

/// Found by the `validate` target (a lone surrogate) and the
/// `validate_structured` target (`66E666`): the scanner passes over values
/// as serde_json does when it skips them, so a pod holding one serde_json's
/// tree refuses was read, mutated in place, and answered with it copied: a
/// response the host's serde_json cannot read. Such a pod is now rejected,
/// naming the problem; values serde_json reads are still mutated in place.
/// (extra metadata value, rejected with this message or mutated).
#[rstest]
#[case::lone_surrogate_key(r#"{"\udebe": "a"}"#, Some("lone leading surrogate"))]
#[case::lone_trailing_surrogate(r#""\udc00""#, Some("lone"))]
#[case::exponent_out_of_range("66E666", Some("number out of range"))]
#[case::fraction_out_of_range("-1.5e400", Some("number out of range"))]
#[case::too_many_digits(&"9".repeat(400), Some("number out of range"))]
#[case::surrogate_pair(r#""\ud83d\ude00""#, None)]
#[case::escaped_letter(r#""\u0065""#, None)]
#[case::small_exponent("[1e3, 2.5E-7]", None)]
#[case::escaped_backslash_then_u(r#""\\udc00""#, None)]
#[case::long_fraction(&format!("0.{}", "1".repeat(400)), None)]
fn values_serde_json_refuses_are_rejected_not_echoed(
    #[case] extra: &str,
    #[case] rejected: Option<&str>,
) {
    let response = gpu_topology_policy::validate(pod_payload(extra).as_bytes()).unwrap();
    let response: serde_json::Value =
        serde_json::from_slice(&response).expect("the answer is JSON");
    match rejected {
        Some(part) => {
            assert_eq!(response["accepted"], false, "{response}");
            let message = response["message"].as_str().unwrap();
            assert!(message.contains(part), "{message}");
        }
        None => {
            assert_eq!(response["accepted"], true, "{response}");
            let mutated = response["mutated_object"].as_object().expect("mutated");
            let original: serde_json::Value = serde_json::from_str(extra).unwrap();
            assert_eq!(mutated["metadata"]["x"], original, "kept as it came");
        }
    }
}
