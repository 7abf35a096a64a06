#![no_main]
//! A small sysfs tree generated from the input, in a temporary directory of
//! this process, read by the labeler; see `fuzz/src/labeler_oracles.rs`.

use gpu_topology_fuzz::labeler_oracles;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// In /dev/shm where there is one: the tree is rewritten on every input.
fn root() -> &'static PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        base.join(format!("gpu-topology-fuzz-sysfs-{}", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    labeler_oracles::check_sysfs_tree(root(), data);
});
