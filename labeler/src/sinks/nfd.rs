//! Node Feature Discovery "local" feature file: NFD's nfd-worker turns each
//! `key=value` line of a file in `features.d/` into a node label, and drops
//! them after the `# +expiry-time=` comment's time, so labels of a labeler that
//! stopped running do not outlive it. The labeler needs no credentials at all.

use super::{Labels, PublishError};
use jiff::{SignedDuration, Timestamp};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where nfd-worker reads local feature files by default.
pub const DEFAULT_FEATURES_DIR: &str = "/etc/kubernetes/node-feature-discovery/features.d";
pub const DEFAULT_FILE_NAME: &str = "gpu-topology";

/// The feature file: the expiry comment first, then `key=value` lines sorted by key.
pub fn render(labels: &Labels, expiry: Timestamp) -> String {
    let mut text = format!(
        "# +expiry-time={}\n",
        expiry.round(jiff::Unit::Second).unwrap_or(expiry)
    );
    for (key, value) in labels {
        text.push_str(key);
        text.push('=');
        text.push_str(value);
        text.push('\n');
    }
    text
}

/// Replaces `dir/name` atomically: writes the new content into a staging
/// directory inside `dir` (`.<name>.staging/`), syncs it, renames it over the
/// target, syncs `dir`, and removes the staging directory. A reader sees the
/// old file or the new one, never a partial one.
///
/// The staging file is not a dot-file next to the target because nfd-worker
/// reads every regular file of `features.d` (a dot-file too, before it
/// learnt to skip them, kubernetes-sigs/node-feature-discovery#1353, v0.15):
/// an older worker could read it half-written, and a writer killed mid-write
/// would leave it there for good. Every version skips directories, and a
/// rename within one filesystem is atomic. On an error the staging file is
/// removed and the target is left as it was.
pub fn write_atomically(dir: &Path, name: &str, content: &str) -> std::io::Result<()> {
    let staging_dir = dir.join(format!(".{name}.staging"));
    match std::fs::create_dir(&staging_dir) {
        Ok(()) => {}
        // Left by a writer that was killed: its content is never read.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let staging = staging_dir.join(name);
    let written =
        write_synced(&staging, content).and_then(|()| std::fs::rename(&staging, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&staging);
    }
    let _ = std::fs::remove_dir(&staging_dir);
    written?;
    // Persist the rename itself; best effort where directories cannot be opened.
    if let Ok(directory) = File::open(dir) {
        let _ = directory.sync_all();
    }
    Ok(())
}

fn write_synced(path: &Path, content: &str) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(content.as_bytes())?;
    file.sync_all()
}

/// Publishes labels into an NFD feature file.
#[derive(Debug, Clone)]
pub struct NfdSink {
    dir: PathBuf,
    file_name: String,
    /// How long published labels stay valid without being rewritten.
    ttl: Duration,
    /// Expiry of the file last written.
    written_expiry: Option<Timestamp>,
}

impl NfdSink {
    pub fn new(dir: PathBuf, file_name: String, ttl: Duration) -> Self {
        Self {
            dir,
            file_name,
            ttl,
            written_expiry: None,
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.file_name)
    }

    /// Whether to rewrite even unchanged labels: nothing written yet; half
    /// the TTL has passed, so they never expire while we run (a clock that
    /// jumped forward makes this due at once); or the written expiry is more
    /// than the TTL ahead of `now`, which only a clock set back does: the
    /// labels of a labeler that stops must not outlive it by more than the
    /// TTL, so the expiry is pulled back to `now` plus the TTL.
    pub fn needs_refresh(&self, now: Timestamp) -> bool {
        let ttl = SignedDuration::try_from(self.ttl).unwrap_or(SignedDuration::MAX);
        let half = SignedDuration::try_from(self.ttl / 2).unwrap_or(SignedDuration::MAX);
        self.written_expiry.is_none_or(|expiry| {
            let not_yet_due = expiry.checked_sub(half).is_ok_and(|due| now < due);
            let too_far_ahead = now.checked_add(ttl).is_ok_and(|limit| expiry > limit);
            !not_yet_due || too_far_ahead
        })
    }

    pub fn publish(&mut self, labels: &Labels, now: Timestamp) -> Result<(), PublishError> {
        let ttl = SignedDuration::try_from(self.ttl).unwrap_or(SignedDuration::MAX);
        let expiry = now.checked_add(ttl).unwrap_or(Timestamp::MAX);
        write_atomically(&self.dir, &self.file_name, &render(labels, expiry)).map_err(
            |source| PublishError::Nfd {
                path: self.path().display().to_string(),
                source,
            },
        )?;
        self.written_expiry = Some(expiry);
        Ok(())
    }
}
