//! Thin adapters that read the node: sysfs, topology tools, NVML, kubelet config.
//! Each returns plain data for [`crate::reconcile`] or a [`SourceError`].

pub mod blocking;
pub mod command;
pub mod kubelet;
#[cfg(feature = "nvml")]
pub mod nvml;
pub mod sysfs;

use std::path::Path;

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
