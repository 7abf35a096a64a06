//! CI's share of the fuzzing: every committed input of the policy's fuzz
//! targets (`fuzz/corpus/<target>`, minimized, and `fuzz/regressions/<target>`,
//! the inputs that once failed) replayed through the same entry points and
//! the same checks the targets run (`fuzz/src/policy_oracles.rs`, included
//! here): an answer for every input, never a panic, and for the scanner
//! agreement with serde_json. CI does not fuzz; FUZZING.md says how to.

#[path = "../fuzz/src/policy_oracles.rs"]
mod policy_oracles;

use rstest::rstest;
use std::path::{Path, PathBuf};

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed inputs of `target`, in name order.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut paths = Vec::new();
    for dir in ["fuzz/corpus", "fuzz/regressions"] {
        if let Ok(entries) = std::fs::read_dir(repo_root().join(dir).join(target)) {
            paths.extend(entries.map(|entry| entry.unwrap().path()));
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// (target, the least number of committed inputs it has).
#[rstest]
#[case::validate("validate", 10)]
#[case::validate_structured("validate_structured", 10)]
#[case::validate_settings("validate_settings", 10)]
#[case::json_scan("json_scan", 10)]
#[case::node_list("node_list", 5)]
#[case::fleet_summary("fleet_summary", 2)]
fn every_committed_input_is_answered(#[case] target: &str, #[case] at_least: usize) {
    let requests = policy_oracles::fixture_requests(repo_root());
    let inputs = inputs(target);
    assert!(
        inputs.len() >= at_least,
        "{target}: {} committed inputs",
        inputs.len()
    );
    for (path, data) in &inputs {
        let check = || match target {
            "validate" => drop(policy_oracles::check_validate(data)),
            "validate_structured" => policy_oracles::check_structured(&requests, data),
            "validate_settings" => policy_oracles::check_settings(data),
            "json_scan" => policy_oracles::check_json_scan(data),
            "node_list" => policy_oracles::check_node_list(data),
            "fleet_summary" => policy_oracles::check_fleet_summary(data),
            _ => unreachable!("no target {target}"),
        };
        if let Err(panic) = std::panic::catch_unwind(check) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()));
            panic!("{}: {}", path.display(), message.unwrap_or_default());
        }
    }
}

/// The structured target reaches the decision: most spliced payloads of
/// the corpus are answered, not refused as unreadable.
#[test]
fn the_structured_corpus_reaches_the_decision() {
    let requests = policy_oracles::fixture_requests(repo_root());
    assert!(requests.len() >= 20, "{} fixture requests", requests.len());
    let inputs = inputs("validate_structured");
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

/// Found by the `validate` target: a lone surrogate escape, which the
/// scanner passes over as serde_json does when it skips a string, was
/// copied into the mutated pod, and the host's serde_json could not read
/// the answer. The pod is now rejected, naming the problem.
#[test]
fn a_lone_surrogate_escape_is_rejected_not_echoed() {
    let payload = std::fs::read(
        repo_root().join("fuzz/regressions/validate/lone-surrogate-in-mutated-pod.json"),
    )
    .unwrap();
    let response = gpu_topology_policy::validate(&payload).unwrap();
    let response: serde_json::Value =
        serde_json::from_slice(&response).expect("the answer is JSON");
    assert_eq!(response["accepted"], false, "{response}");
    let message = response["message"].as_str().unwrap();
    assert!(message.contains("lone leading surrogate"), "{message}");
}
