//! The committed inputs of a fuzz target and their replay, for the corpus
//! replay tests (`tests/fuzz_regressions.rs`,
//! `labeler/tests/fuzz_regressions.rs`), which include this file.

use std::panic::{catch_unwind, UnwindSafe};
use std::path::{Path, PathBuf};

/// Where the committed inputs of a target are, under the repository:
/// the minimized corpus, and every input that once failed.
const INPUT_DIRS: [&str; 2] = ["fuzz/corpus", "fuzz/regressions"];

/// The committed inputs of `target`, in name order.
pub fn committed_inputs(root: &Path, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut paths: Vec<PathBuf> = INPUT_DIRS
        .iter()
        .filter_map(|dir| std::fs::read_dir(root.join(dir).join(target)).ok())
        .flat_map(|entries| entries.filter_map(Result::ok).map(|entry| entry.path()))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| std::fs::read(&path).ok().map(|bytes| (path, bytes)))
        .collect()
}

/// Runs `check` on every input, failing with the input's path and the
/// check's message on the first that panics. At least `at_least` inputs
/// must be there.
pub fn replay(
    inputs: &[(PathBuf, Vec<u8>)],
    at_least: usize,
    check: impl Fn(&[u8]) + Copy + UnwindSafe,
) {
    assert!(
        inputs.len() >= at_least,
        "{} committed inputs, fewer than {at_least}",
        inputs.len()
    );
    for (path, data) in inputs {
        if let Err(panic) = catch_unwind(move || check(data)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()));
            panic!("{}: {}", path.display(), message.unwrap_or_default());
        }
    }
}
