//! CI's share of the labeler's fuzzing: every committed input of its fuzz
//! targets (`fuzz/corpus/<target>` and `fuzz/regressions/<target>`) through
//! the same parsers and checks (`fuzz/src/labeler_oracles.rs`, included
//! here): a topology or an error for every input, never a panic.

#[path = "../../fuzz/src/labeler_oracles.rs"]
mod labeler_oracles;

use rstest::rstest;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().unwrap_or(crate_dir).to_path_buf()
}

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
#[case::nvidia_smi("nvidia_smi", 10)]
#[case::rocm_smi("rocm_smi", 1)]
#[case::kubelet_config("kubelet_config", 5)]
#[case::sysfs_tree("sysfs_tree", 5)]
fn every_committed_input_is_answered(#[case] target: &str, #[case] at_least: usize) {
    let tree = std::env::temp_dir().join(format!(
        "gpu-topology-fuzz-regressions-{}-{target}",
        std::process::id()
    ));
    let inputs = inputs(target);
    assert!(
        inputs.len() >= at_least,
        "{target}: {} committed inputs",
        inputs.len()
    );
    for (path, data) in &inputs {
        let check = || match target {
            "nvidia_smi" => labeler_oracles::check_nvidia_smi(data),
            "rocm_smi" => labeler_oracles::check_rocm_smi(data),
            "kubelet_config" => labeler_oracles::check_kubelet_config(data),
            "sysfs_tree" => labeler_oracles::check_sysfs_tree(&tree, data),
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
    let _ = std::fs::remove_dir_all(&tree);
}
