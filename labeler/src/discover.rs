//! Reads every configured source into [`Inputs`].
//!
//! A source the operator named explicitly (a file, a directory) that cannot be
//! read or parsed is an error: they asked for it. A default source that is
//! missing or broken only costs the labels it would have given, with a warning.

use crate::devices::DeviceConfig;
use crate::model::ToolReport;
use crate::parse::{nvidia_smi, nvidia_smi_list, rocm_smi};
use crate::reconcile::devices::{MigInput, MigStrategy};
use crate::reconcile::{Inputs, VendorChoice};
use crate::sources::command::{CommandOutput, Runner};
use crate::sources::kubelet::read_kubelet;
use crate::sources::sysfs::read_sysfs;
use crate::sources::{read_text, SourceError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
    /// `nvidia-smi -L`, for the MIG devices (disabled without a MIG strategy).
    pub nvidia_smi_list: ToolSource,
    pub mig_strategy: MigStrategy,
    /// The device-plugin resources besides the GPUs to count in sysfs.
    pub devices: DeviceConfig,
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
            || matches!(self.nvidia_smi_list, ToolSource::File(_))
    }
}

/// How long a live tool's last good report stands in for runs of it that
/// fail (a timeout, an error exit): a node's GPU links do not change while it
/// runs, and one failed run should not make labels vanish for a round and
/// come back in the next.
pub const REPORT_REUSE_LIMIT: Duration = Duration::from_secs(10 * 60);

/// What the labeler keeps of its live tools (NVML, nvidia-smi, rocm-smi)
/// from one daemon round to the next: each one's last good report, and the
/// runs that were killed at their timeout.
#[derive(Debug, Default)]
pub struct ToolMemory {
    reports: BTreeMap<String, (ToolReport, Instant)>,
    runner: Runner,
    /// NVML is a library: its calls run on a thread of their own, with the
    /// tools' timeout.
    #[cfg(feature = "nvml")]
    nvml: crate::sources::blocking::BlockingCall<Result<Option<ToolReport>, SourceError>>,
}

impl ToolMemory {
    pub fn remember(&mut self, tool: &str, report: &ToolReport, now: Instant) {
        self.reports.insert(tool.to_owned(), (report.clone(), now));
    }

    /// The last good report of `tool` and its age, while within
    /// [`REPORT_REUSE_LIMIT`].
    pub fn recall(&self, tool: &str, now: Instant) -> Option<(&ToolReport, Duration)> {
        let (report, at) = self.reports.get(tool)?;
        let age = now.saturating_duration_since(*at);
        (age <= REPORT_REUSE_LIMIT).then_some((report, age))
    }

    /// A run of `tool` failed with `error`: its last good report if recent
    /// enough, with the warning to log either way.
    fn stand_in(&self, tool: &str, error: &str, now: Instant) -> (Option<ToolReport>, String) {
        match self.recall(tool, now) {
            Some((report, age)) => (
                Some(ToolReport {
                    from_earlier_run: true,
                    ..report.clone()
                }),
                format!(
                    "{error}: using its last good report, {}s old",
                    age.as_secs()
                ),
            ),
            None => (None, format!("{error}: its labels are left out")),
        }
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

/// Reads every source. `memory` holds the live tools' last good reports: it
/// is updated with this round's, and stands in for a run that fails.
pub async fn discover(
    options: &SourceOptions,
    memory: &mut ToolMemory,
) -> Result<Discovery, SourceError> {
    let mut discovery = Discovery::default();
    discovery.inputs.vendor = options.vendor;
    discovery.inputs.devices = options.devices.clone();
    discovery.inputs.mig = MigInput {
        strategy: options.mig_strategy,
        listed: read_mig_list(options, memory, &mut discovery.warnings).await?,
    };
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
        const NVML: &str = "NVML";
        let answer = memory
            .nvml
            .run(
                NVML,
                options.command_timeout,
                crate::sources::nvml::read_nvml,
            )
            .await;
        let failure = match answer {
            Ok(Ok(Some(report))) => {
                memory.remember(NVML, &report, Instant::now());
                discovery.inputs.tools.push(report);
                None
            }
            Ok(Ok(None)) => {
                tracing::debug!("NVML not available");
                None
            }
            Ok(Err(e)) | Err(e) => Some(format!("NVML not used: {e}")),
        };
        if let Some(error) = failure {
            let (report, warning) = memory.stand_in(NVML, &error, Instant::now());
            discovery.inputs.tools.extend(report);
            discovery.warnings.push(warning);
        }
    }
    for (source, kind) in [
        (&options.nvidia_smi, ToolKind::NvidiaSmi),
        (&options.rocm_smi, ToolKind::RocmSmi),
    ] {
        if let Some(report) =
            tool_report(source, kind, options, memory, &mut discovery.warnings).await?
        {
            discovery.inputs.tools.push(report);
        }
    }
    let drop_ins = options.kubelet_drop_ins.as_deref();
    discovery.inputs.kubelet = match &options.kubelet {
        PathSource::Disabled => None,
        PathSource::Explicit(path) => Some(read_kubelet(path, drop_ins).await?),
        PathSource::Default(path) => match read_kubelet(path, drop_ins).await {
            Ok(settings) => Some(settings),
            Err(e) => {
                discovery.warnings.push(format!(
                    "kubelet config not read ({e}): kubelet labels are left out"
                ));
                None
            }
        },
    };
    Ok(discovery)
}

/// `nvidia-smi -L` from its file (an error when it does not parse: the
/// operator named it) or run (its failure only costs the MIG labels).
async fn read_mig_list(
    options: &SourceOptions,
    memory: &mut ToolMemory,
    warnings: &mut Vec<String>,
) -> Result<Option<Vec<nvidia_smi_list::ListedGpu>>, SourceError> {
    match &options.nvidia_smi_list {
        ToolSource::Disabled => Ok(None),
        ToolSource::File(path) => {
            let text = read_text(path)?;
            nvidia_smi_list::parse(&text)
                .map(Some)
                .map_err(|e| SourceError::new(path.display().to_string(), e))
        }
        ToolSource::Command(_) if options.offline() => Ok(None),
        ToolSource::Command(program) => {
            let output = memory
                .runner
                .run(program, &["-L"], options.command_timeout)
                .await;
            match output {
                Ok(CommandOutput::Stdout(text)) => match nvidia_smi_list::parse(&text) {
                    Ok(listed) => Ok(Some(listed)),
                    Err(e) => {
                        warnings.push(format!(
                            "{program} -L output not used ({e}): the MIG labels are left out"
                        ));
                        Ok(None)
                    }
                },
                Ok(CommandOutput::NotInstalled) => Ok(None),
                Err(e) => {
                    warnings.push(format!(
                        "{program} -L failed ({e}): the MIG labels are left out"
                    ));
                    Ok(None)
                }
            }
        }
    }
}

async fn tool_report(
    source: &ToolSource,
    kind: ToolKind,
    options: &SourceOptions,
    memory: &mut ToolMemory,
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
            let output = memory
                .runner
                .run(program, kind.args(), options.command_timeout)
                .await;
            match output {
                Ok(CommandOutput::NotInstalled) => {
                    tracing::debug!(program, "not installed");
                    Ok(None)
                }
                Ok(CommandOutput::Stdout(text)) => match kind.parse(&text, true) {
                    Ok(report) => {
                        memory.remember(program, &report, Instant::now());
                        Ok(Some(report))
                    }
                    // Output that does not parse is no passing failure (a
                    // new driver's format): never papered over.
                    Err(e) => {
                        warnings.push(format!(
                            "{program} output not used ({e}): its labels are left out"
                        ));
                        Ok(None)
                    }
                },
                Err(e) => {
                    let (report, warning) =
                        memory.stand_in(program, &e.to_string(), Instant::now());
                    warnings.push(warning);
                    Ok(report)
                }
            }
        }
    }
}
