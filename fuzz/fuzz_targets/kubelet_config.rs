#![no_main]
//! See `fuzz/src/labeler_oracles.rs` for what this target checks.

use gpu_topology_fuzz::labeler_oracles;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    labeler_oracles::check_kubelet_config(data);
});
