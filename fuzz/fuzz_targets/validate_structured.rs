#![no_main]
//! Fuzz bytes spliced into the fixtures' requests, so that the decision's
//! deep paths are reached; see `fuzz/src/policy_oracles.rs`.

use gpu_topology_fuzz::{policy_oracles, repo_root};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

fn requests() -> &'static [Value] {
    static REQUESTS: OnceLock<Vec<Value>> = OnceLock::new();
    REQUESTS.get_or_init(|| policy_oracles::fixture_requests(&repo_root()))
}

fuzz_target!(|data: &[u8]| {
    policy_oracles::check_structured(requests(), data);
});
