//! The repository's files, as every test that reads them all walks it
//! (the documentation tests, the documented settings, the release
//! references; `tests/schemas/validate.py` keeps the same rules in Python).
//!
//! Only std: the root crate's `tests/release_references.rs` includes this
//! file by `#[path]` rather than depending on e2e-tests, whose library
//! would bring wasmtime into the root crate's test build (and e2e-tests
//! already dev-depends on the root crate).
//!
//! Rules:
//! - links are not followed, to files or folders: the labeler's sysfs
//!   fixtures link SR-IOV functions both ways (virtfn*/physfn), a cycle,
//!   and a link's target is listed where it stands;
//! - never entered: version control and build output ([`SKIPPED_DIRS`],
//!   wherever they are), and each folder a `.gitignore` names with an
//!   anchored literal entry (`/target`, `/.gl/`: every folder entry this
//!   repository's `.gitignore` files have), relative to that `.gitignore`;
//! - the paths come back relative to the root, sorted.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

/// Folders never entered, wherever they are: version control (a `.git`
/// file is left out too), cargo's and npm's build output.
pub const SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];

/// Every regular file under `root` by the rules above, also leaving out the
/// folders named in `also_skipped` (wherever they are), relative to `root`
/// and sorted. An error names the folder or file that could not be read.
pub fn repo_files(root: &Path, also_skipped: &[&str]) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    walk(root, Path::new(""), also_skipped, &mut files)?;
    files.sort();
    Ok(files)
}

fn walk(root: &Path, dir: &Path, also_skipped: &[&str], out: &mut Vec<PathBuf>) -> io::Result<()> {
    let absolute = root.join(dir);
    let ignored = gitignored_dirs(&absolute)?;
    let entries = std::fs::read_dir(&absolute).map_err(|e| named(&absolute, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| named(&absolute, e))?;
        let name = entry.file_name();
        if name == ".git" {
            // Version control, also where it is a file: a worktree's or a
            // submodule's `.git` names the repository's folder.
            continue;
        }
        let relative = dir.join(&name);
        // `file_type` does not follow links (`symlink_metadata`'s answer).
        let kind = entry
            .file_type()
            .map_err(|e| named(&root.join(&relative), e))?;
        if kind.is_dir() {
            let name = name.to_string_lossy();
            let skipped = SKIPPED_DIRS.contains(&name.as_ref())
                || also_skipped.contains(&name.as_ref())
                || ignored.contains(name.as_ref());
            if !skipped {
                walk(root, &relative, also_skipped, out)?;
            }
        } else if kind.is_file() {
            out.push(relative);
        }
    }
    Ok(())
}

/// The folders of `dir` that its `.gitignore` names with an anchored
/// literal entry (`/name` or `/name/`); other entries are patterns for
/// files (`*.wasm`) or name nested paths, which no walk here needs.
fn gitignored_dirs(dir: &Path) -> io::Result<BTreeSet<String>> {
    let path = dir.join(".gitignore");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(named(&path, e)),
    };
    Ok(text
        .lines()
        .filter_map(|line| line.trim_end().strip_prefix('/'))
        .map(|entry| entry.strip_suffix('/').unwrap_or(entry))
        .filter(|entry| !entry.is_empty() && !entry.contains(['/', '*', '?', '[', '\\']))
        .map(str::to_owned)
        .collect())
}

fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}
