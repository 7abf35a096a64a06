//! Reads the kubelet config file and its drop-in directory, and merges them
//! as the kubelet does ([`crate::parse::kubelet`]).
//!
//! The files may be rewritten while they are read (a config management tool,
//! an operator's editor). Each file is read only once it has settled
//! ([`read_settled`]), and the drop-in directory is listed before and after
//! its files are read: a config that changed meanwhile is read again, so the
//! labels never carry values of a half-written file or of two versions mixed.

use super::{read_settled, SourceError, READ_ATTEMPTS, SETTLE_TIME};
use crate::parse::kubelet::{
    parse_file, settings, KubeletConfigFile, KubeletSettings, MergedConfig,
};
use std::path::{Path, PathBuf};

/// Drop-in files the kubelet reads from `--config-dir`: `*.conf`.
const DROP_IN_SUFFIX: &str = ".conf";

/// Reads `config` and, when given, the drop-ins in `drop_in_dir`.
pub async fn read_kubelet(
    config: &Path,
    drop_in_dir: Option<&Path>,
) -> Result<KubeletSettings, SourceError> {
    let origin = |path: &Path| path.display().to_string();
    for _ in 0..READ_ATTEMPTS {
        let main = read_config_file(config).await?;
        let Some(dir) = drop_in_dir else {
            return settings(&MergedConfig::new(main, []))
                .map_err(|e| SourceError::new(origin(config), e.message));
        };
        let listed = drop_in_files(dir)?;
        let mut drop_ins = Vec::with_capacity(listed.len());
        for path in &listed {
            drop_ins.push(read_config_file(path).await?);
        }
        if drop_in_files(dir)? == listed {
            return settings(&MergedConfig::new(main, drop_ins))
                .map_err(|e| SourceError::new(origin(config), e.message));
        }
        tokio::time::sleep(SETTLE_TIME).await;
    }
    Err(SourceError::new(
        drop_in_dir.map_or_else(|| origin(config), origin),
        "the drop-in files kept changing while they were read",
    ))
}

async fn read_config_file(path: &Path) -> Result<KubeletConfigFile, SourceError> {
    parse_file(&read_settled(path).await?)
        .map_err(|e| SourceError::new(path.display().to_string(), e.message))
}

/// The drop-in files in the order the kubelet reads them: `filepath.WalkDir`
/// over `dir`, which visits the entries of each directory sorted by name and
/// descends into subdirectories where they sort (not into symlinked ones),
/// keeping the files whose name ends in `.conf`.
fn drop_in_files(dir: &Path) -> Result<Vec<PathBuf>, SourceError> {
    let origin = || dir.display().to_string();
    let mut names = std::fs::read_dir(dir)
        .map_err(|e| SourceError::new(origin(), e))?
        .map(|entry| {
            let entry = entry.map_err(|e| SourceError::new(origin(), e))?;
            let is_dir = entry
                .file_type()
                .map_err(|e| SourceError::new(origin(), e))?
                .is_dir();
            let name = entry
                .file_name()
                .into_string()
                .map_err(|name| SourceError::new(origin(), format!("non-UTF-8 entry {name:?}")))?;
            Ok((name, is_dir))
        })
        .collect::<Result<Vec<_>, SourceError>>()?;
    names.sort();
    let mut files = Vec::new();
    for (name, is_dir) in names {
        let path = dir.join(&name);
        if is_dir {
            files.extend(drop_in_files(&path)?);
        } else if name.ends_with(DROP_IN_SUFFIX) {
            files.push(path);
        }
    }
    Ok(files)
}
