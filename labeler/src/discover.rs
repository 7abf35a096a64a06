//! Reads every configured source into [`Inputs`].
//!
//! A source the operator named explicitly (a file, a directory) that cannot be
//! read or parsed is an error: they asked for it. A default source that is
//! missing or broken only costs the labels it would have given, with a warning.

use crate::model::ToolReport;
use crate::parse::{nvidia_smi, rocm_smi};
use crate::reconcile::{Inputs, VendorChoice};
use crate::sources::command::{run, CommandOutput};
use crate::sources::kubelet::read_kubelet;
use crate::sources::sysfs::read_sysfs;
use crate::sources::{read_text, SourceError};
use std::path::PathBuf;
use std::time::Duration;

/// A path-based source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSource {
    Disabled,
    /// The built-in default: failures are warnings.
    Default(PathBuf),
    /// Named by the operator: failures are errors.
    Explicit(PathBuf),
}

/// A topology tool: recorded output in a file, or the program to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    Disabled,
    File(PathBuf),
    Command(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceOptions {
    pub sysfs: PathSource,
    pub nvidia_smi: ToolSource,
    pub rocm_smi: ToolSource,
    /// Query NVML (builds with the `nvml` feature only).
    pub nvml: bool,
    pub kubelet: PathSource,
    pub kubelet_drop_ins: Option<PathBuf>,
    pub vendor: VendorChoice,
    pub command_timeout: Duration,
}

impl SourceOptions {
    /// Recorded tool output means inspecting another node offline: then the
    /// live tools of this machine (NVML, nvidia-smi, rocm-smi) are not asked.
    fn offline(&self) -> bool {
        matches!(self.nvidia_smi, ToolSource::File(_))
            || matches!(self.rocm_smi, ToolSource::File(_))
    }
}

/// The sources' data, and warnings about default sources that failed.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub inputs: Inputs,
    pub warnings: Vec<String>,
}

/// Which tool output is being parsed.
#[derive(Debug, Clone, Copy)]
enum ToolKind {
    NvidiaSmi,
    RocmSmi,
}

impl ToolKind {
    const fn args(self) -> &'static [&'static str] {
        match self {
            ToolKind::NvidiaSmi => &["topo", "-m"],
            ToolKind::RocmSmi => &["--showtopo"],
        }
    }

    /// Parses the output; `ran_by_us` means we ran `topo -m` ourselves.
    fn parse(self, text: &str, ran_by_us: bool) -> Result<ToolReport, crate::parse::ParseError> {
        match self {
            ToolKind::NvidiaSmi => nvidia_smi::parse(text).map(|t| t.into_report(ran_by_us)),
            ToolKind::RocmSmi => rocm_smi::parse(text),
        }
    }
}

pub async fn discover(options: &SourceOptions) -> Result<Discovery, SourceError> {
    let mut discovery = Discovery::default();
    discovery.inputs.vendor = options.vendor;
    discovery.inputs.sysfs = match &options.sysfs {
        PathSource::Disabled => None,
        PathSource::Explicit(root) => Some(read_sysfs(root)?),
        PathSource::Default(root) => read_sysfs(root)
            .map_err(|e| {
                discovery
                    .warnings
                    .push(format!("sysfs not read ({e}): its labels are left out"))
            })
            .ok(),
    };
    #[cfg(feature = "nvml")]
    if options.nvml && !options.offline() {
        match tokio::task::spawn_blocking(crate::sources::nvml::read_nvml).await {
            Ok(Ok(Some(report))) => discovery.inputs.tools.push(report),
            Ok(Ok(None)) => tracing::debug!("NVML not available"),
            Ok(Err(e)) => discovery.warnings.push(format!("NVML not used: {e}")),
            Err(e) => discovery.warnings.push(format!("NVML not used: {e}")),
        }
    }
    for (source, kind) in [
        (&options.nvidia_smi, ToolKind::NvidiaSmi),
        (&options.rocm_smi, ToolKind::RocmSmi),
    ] {
        if let Some(report) = tool_report(source, kind, options, &mut discovery.warnings).await? {
            discovery.inputs.tools.push(report);
        }
    }
    discovery.inputs.kubelet = match &options.kubelet {
        PathSource::Disabled => None,
        PathSource::Explicit(path) => {
            Some(read_kubelet(path, options.kubelet_drop_ins.as_deref())?)
        }
        PathSource::Default(path) => read_kubelet(path, options.kubelet_drop_ins.as_deref())
            .map_err(|e| {
                discovery.warnings.push(format!(
                    "kubelet config not read ({e}): kubelet labels are left out"
                ))
            })
            .ok(),
    };
    Ok(discovery)
}

async fn tool_report(
    source: &ToolSource,
    kind: ToolKind,
    options: &SourceOptions,
    warnings: &mut Vec<String>,
) -> Result<Option<ToolReport>, SourceError> {
    match source {
        ToolSource::Disabled => Ok(None),
        ToolSource::File(path) => {
            let text = read_text(path)?;
            kind.parse(&text, false)
                .map(Some)
                .map_err(|e| SourceError::new(path.display().to_string(), e))
        }
        ToolSource::Command(_) if options.offline() => Ok(None),
        ToolSource::Command(program) => {
            match run(program, kind.args(), options.command_timeout).await {
                Ok(CommandOutput::NotInstalled) => {
                    tracing::debug!(program, "not installed");
                    Ok(None)
                }
                Ok(CommandOutput::Stdout(text)) => match kind.parse(&text, true) {
                    Ok(report) => Ok(Some(report)),
                    Err(e) => {
                        warnings.push(format!(
                            "{program} output not used ({e}): its labels are left out"
                        ));
                        Ok(None)
                    }
                },
                Err(e) => {
                    warnings.push(format!("{e}: its labels are left out"));
                    Ok(None)
                }
            }
        }
    }
}
