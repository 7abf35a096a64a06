//! The checks the fuzz targets run (`fuzz_targets/`), kept apart from
//! libFuzzer so that the repository's corpus replay tests include the same
//! files.

pub mod policy_oracles;

#[cfg(feature = "labeler")]
pub mod labeler_oracles;

use std::path::{Path, PathBuf};

/// The repository this crate sits in.
pub fn repo_root() -> PathBuf {
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    fuzz_dir.parent().unwrap_or(fuzz_dir).to_path_buf()
}
