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

/// Replaces `dir/name` atomically: writes a dot-file in the same directory (NFD
/// ignores dot-files), syncs it, renames it over the target, syncs the directory.
/// A reader sees the old file or the new one, never a partial one.
pub fn write_atomically(dir: &Path, name: &str, content: &str) -> std::io::Result<()> {
    let staging = dir.join(format!(".{name}.tmp"));
    let mut file = File::create(&staging)?;
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&staging, dir.join(name))?;
    // Persist the rename itself; best effort where directories cannot be opened.
    if let Ok(directory) = File::open(dir) {
        let _ = directory.sync_all();
    }
    Ok(())
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

    /// True once half the TTL has passed: rewrite even unchanged labels so they never expire while we run.
    pub fn needs_refresh(&self, now: Timestamp) -> bool {
        let half = SignedDuration::try_from(self.ttl / 2).unwrap_or(SignedDuration::MAX);
        self.written_expiry
            .is_none_or(|expiry| expiry.checked_sub(half).map_or(true, |due| now >= due))
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
