//! Reads the kubelet config file and its drop-in directory.

use super::{read_text, SourceError};
use crate::parse::kubelet::{parse_file, settings, KubeletSettings};
use std::path::Path;

/// Drop-in files the kubelet reads from `--config-dir`: `*.conf`, in name order.
const DROP_IN_SUFFIX: &str = ".conf";

/// Reads `config` and, when given, the `*.conf` drop-ins in `drop_in_dir`.
pub fn read_kubelet(
    config: &Path,
    drop_in_dir: Option<&Path>,
) -> Result<KubeletSettings, SourceError> {
    let origin = |path: &Path| path.display().to_string();
    let mut files =
        vec![parse_file(&read_text(config)?)
            .map_err(|e| SourceError::new(origin(config), e.message))?];
    if let Some(dir) = drop_in_dir {
        let mut paths = std::fs::read_dir(dir)
            .map_err(|e| SourceError::new(origin(dir), e))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.to_str().is_some_and(|p| p.ends_with(DROP_IN_SUFFIX)))
            .collect::<Vec<_>>();
        paths.sort();
        for path in paths {
            files.push(
                parse_file(&read_text(&path)?)
                    .map_err(|e| SourceError::new(origin(&path), e.message))?,
            );
        }
    }
    settings(&files).map_err(|e| SourceError::new(origin(config), e.message))
}
