#![no_main]
//! See `fuzz/src/policy_oracles.rs` for what this target checks.

use gpu_topology_fuzz::policy_oracles;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    policy_oracles::check_fleet_decision(data);
});
