//! Thin adapters that read the node: sysfs, topology tools, NVML, kubelet config.
//! Each returns plain data for [`crate::reconcile`] or a [`SourceError`].
//!
//! The file helpers the readers share ([`read_text`] and the private
//! `read_optional`, `entries`, `at`) live here, so the dependencies run one
//! way: [`sysfs`] calls [`amd_partitions`] for the AMD GPUs' partitions,
//! and [`amd_partitions`] needs only these helpers, nothing of [`sysfs`].

pub mod amd_partitions;
pub mod blocking;
pub mod command;
pub mod kubelet;
#[cfg(feature = "nvml")]
pub mod nvml;
pub mod sysfs;

use crate::parse::ParseError;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A source that could not be read or parsed, naming it and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct SourceError {
    /// The file, directory or command that failed.
    pub origin: String,
    pub message: String,
}

impl SourceError {
    pub fn new(origin: impl Into<String>, message: impl ToString) -> Self {
        Self {
            origin: origin.into(),
            message: message.to_string(),
        }
    }
}

/// Reads a text file, naming it in the error.
pub fn read_text(path: &Path) -> Result<String, SourceError> {
    std::fs::read_to_string(path).map_err(|e| SourceError::new(path.display().to_string(), e))
}

/// A file's text, `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, SourceError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SourceError::new(path.display().to_string(), e)),
    }
}

/// Turns a parse error into a [`SourceError`] naming the file at `path`.
fn at(path: &Path) -> impl Fn(ParseError) -> SourceError + '_ {
    move |e| SourceError::new(path.display().to_string(), e.message)
}

/// Directory entries of `dir`, sorted by name.
fn entries(dir: &Path) -> Result<Vec<String>, SourceError> {
    let origin = || dir.display().to_string();
    let mut names = std::fs::read_dir(dir)
        .map_err(|e| SourceError::new(origin(), e))?
        .map(|entry| {
            let entry = entry.map_err(|e| SourceError::new(origin(), e))?;
            entry
                .file_name()
                .into_string()
                .map_err(|name| SourceError::new(origin(), format!("non-UTF-8 entry {name:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    names.sort();
    Ok(names)
}

/// How long a file must have been left alone before its content counts as
/// written: a writer that truncates a file and writes it again in place
/// leaves it partial for a moment, which a read must not take for the file.
pub const SETTLE_TIME: Duration = Duration::from_millis(250);

/// How many times a file that changes while it is read is read again.
pub const READ_ATTEMPTS: u32 = 8;

/// What identifies a file's version: which file, its size, and when it (or
/// its metadata) last changed, in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Version {
    device: u64,
    inode: u64,
    size: u64,
    modified: i128,
    changed: i128,
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

impl Version {
    fn of(path: &Path) -> Result<Self, SourceError> {
        let metadata =
            std::fs::metadata(path).map_err(|e| SourceError::new(path.display().to_string(), e))?;
        let nanos =
            |seconds: i64, nanos: i64| i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos);
        Ok(Self {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified: nanos(metadata.mtime(), metadata.mtime_nsec()),
            changed: nanos(metadata.ctime(), metadata.ctime_nsec()),
        })
    }

    /// True when only waiting tells whether the file is being written: it is
    /// empty (a writer that truncates it in place may not update its times,
    /// as ext4 was seen not to on `O_TRUNC`), or it changed less than
    /// `SETTLE_TIME` before `now`, or "after" it (the clock was set back).
    fn may_be_in_writing(&self, now: SystemTime) -> bool {
        if self.size == 0 {
            return true;
        }
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else {
            return true;
        };
        let now = i128::try_from(now.as_nanos()).unwrap_or(i128::MAX);
        let settle = i128::try_from(SETTLE_TIME.as_nanos()).unwrap_or(i128::MAX);
        now < self.modified.max(self.changed).saturating_add(settle)
    }
}

/// Reads a text file only once it has settled: its version is the same
/// before and after the read (no rename over it, no write into it during the
/// read) and, when it is empty or changed within `SETTLE_TIME`, also after
/// waiting that long. A writer that pauses longer than that in the middle of rewriting a
/// file in place is not caught; one that renames a finished file over it
/// (the safe way) always is.
pub async fn read_settled(path: &Path) -> Result<String, SourceError> {
    for _ in 0..READ_ATTEMPTS {
        let before = Version::of(path)?;
        if before.may_be_in_writing(SystemTime::now()) {
            tokio::time::sleep(SETTLE_TIME).await;
            if Version::of(path)? != before {
                continue;
            }
        }
        let text = read_text(path)?;
        let unchanged = Version::of(path)? == before;
        if unchanged && u64::try_from(text.len()).is_ok_and(|len| len == before.size) {
            return Ok(text);
        }
    }
    Err(SourceError::new(
        path.display().to_string(),
        "it kept changing while it was read (is it being rewritten?)",
    ))
}
