//! CI's share of the labeler's fuzzing: every committed input of its fuzz
//! targets (`fuzz/corpus/<target>` and `fuzz/regressions/<target>`) through
//! the same parsers and checks (`fuzz/src/labeler_oracles.rs`, included
//! here): a topology or an error for every input, never a panic.

#[path = "../../fuzz/src/corpus.rs"]
mod corpus;
#[path = "../../fuzz/src/labeler_oracles.rs"]
mod labeler_oracles;

use corpus::{committed_inputs, replay};
use rstest::rstest;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().unwrap_or(crate_dir).to_path_buf()
}

/// (target, the least number of committed inputs it has).
#[rstest]
#[case::nvidia_smi("nvidia_smi", 10)]
#[case::rocm_smi("rocm_smi", 1)]
#[case::kubelet_config("kubelet_config", 5)]
#[case::sysfs_tree("sysfs_tree", 5)]
fn every_committed_input_is_answered(#[case] target: &str, #[case] at_least: usize) {
    let inputs = committed_inputs(&repo_root(), target);
    match target {
        "nvidia_smi" => replay(&inputs, at_least, labeler_oracles::check_nvidia_smi),
        "rocm_smi" => replay(&inputs, at_least, labeler_oracles::check_rocm_smi),
        "kubelet_config" => replay(&inputs, at_least, labeler_oracles::check_kubelet_config),
        "sysfs_tree" => {
            let tree = std::env::temp_dir().join(format!(
                "gpu-topology-fuzz-regressions-{}",
                std::process::id()
            ));
            let tree = &tree;
            replay(&inputs, at_least, |data| {
                labeler_oracles::check_sysfs_tree(tree, data)
            });
            let _ = std::fs::remove_dir_all(tree);
        }
        _ => unreachable!("no target {target}"),
    }
}
