//! Reads every configured source into [`Inputs`].
//!
//! A source the operator named explicitly (a file, a directory) that cannot be
//! read or parsed is an error: they asked for it. A default source that is
//! missing or broken only costs the labels it would have given, with a warning.

use crate::devices::DeviceConfig;
use crate::model::ToolReport;
use crate::parse::{nvidia_smi, nvidia_smi_list, nvidia_smi_query, rocm_smi};
use crate::reconcile::devices::{MigInput, MigStrategy};
use crate::reconcile::{Inputs, VendorChoice};
use crate::sources::command::{CommandOutput, Runner};
use crate::sources::kubelet::read_kubelet;
use crate::sources::sysfs::read_sysfs;
use crate::sources::{read_text, SourceError};
use gpu_topology::KubeletVersion;
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
    /// `nvidia-smi -q`, for the GPUs' multi-node NVLink clique.
    pub nvidia_smi_query: ToolSource,
    pub mig_strategy: MigStrategy,
    /// The device-plugin resources besides the GPUs to count in sysfs.
    pub devices: DeviceConfig,
    pub rocm_smi: ToolSource,
    /// Query NVML (builds with the `nvml` feature only).
    pub nvml: bool,
    pub kubelet: PathSource,
    pub kubelet_drop_ins: Option<PathBuf>,
    /// The kubelet's version as the operator gave it (`--kubelet-version`).
    pub kubelet_version: Option<KubeletVersion>,
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
            || matches!(self.nvidia_smi_query, ToolSource::File(_))
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

/// Which source failed, by a name from a fixed set: the `source` label of
/// the daemon's `gpu_topology_labeler_discovery_errors_total`
/// ([`crate::health`]), whatever file or program was configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    Sysfs,
    Nvml,
    /// `nvidia-smi topo -m` (run, or `--nvidia-smi-topo`).
    NvidiaSmi,
    /// `nvidia-smi -L` (run, or `--nvidia-smi-list`).
    NvidiaSmiList,
    /// `nvidia-smi -q` (run, or `--nvidia-smi-query`).
    NvidiaSmiQuery,
    /// `rocm-smi --showtopo` (run, or `--rocm-smi-topo`).
    RocmSmi,
    /// The kubelet config file and its drop-ins.
    Kubelet,
}

impl SourceKind {
    pub const ALL: [SourceKind; 7] = [
        SourceKind::Sysfs,
        SourceKind::Nvml,
        SourceKind::NvidiaSmi,
        SourceKind::NvidiaSmiList,
        SourceKind::NvidiaSmiQuery,
        SourceKind::RocmSmi,
        SourceKind::Kubelet,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            SourceKind::Sysfs => "sysfs",
            SourceKind::Nvml => "nvml",
            SourceKind::NvidiaSmi => "nvidia_smi",
            SourceKind::NvidiaSmiList => "nvidia_smi_list",
            SourceKind::NvidiaSmiQuery => "nvidia_smi_query",
            SourceKind::RocmSmi => "rocm_smi",
            SourceKind::Kubelet => "kubelet_config",
        }
    }
}

/// A source the operator named explicitly that could not be read or
/// parsed: nothing is published. Displays as the [`SourceError`] it wraps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct DiscoveryError {
    pub kind: SourceKind,
    pub error: SourceError,
}

impl DiscoveryError {
    fn of(kind: SourceKind) -> impl FnOnce(SourceError) -> Self {
        move |error| DiscoveryError { kind, error }
    }
}

/// The sources' data, and warnings about default sources that failed.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    pub inputs: Inputs,
    pub warnings: Vec<String>,
    /// The sources whose failure a warning tells, once per warning.
    pub failed: Vec<SourceKind>,
}

impl Discovery {
    /// `kind` failed: `warning` says what that costs.
    fn failure(&mut self, kind: SourceKind, warning: String) {
        self.failed.push(kind);
        self.warnings.push(warning);
    }
}

/// Which tool is run (or its recorded output read), and what its output is for.
#[derive(Debug, Clone, Copy)]
enum ToolKind {
    /// `nvidia-smi topo -m`: the GPUs' links and NUMA nodes.
    NvidiaSmi,
    /// `rocm-smi --showtopo`: the same for AMD GPUs.
    RocmSmi,
    /// `nvidia-smi -L`: the GPUs' MIG devices.
    NvidiaSmiList,
    /// `nvidia-smi -q`: the GPUs' fabric registration (multi-node NVLink).
    NvidiaSmiQuery,
}

/// A tool's parsed output, for the part of [`Inputs`] it fills.
enum ToolOutput {
    Topology(ToolReport),
    MigList(Vec<nvidia_smi_list::ListedGpu>),
    Fabric(Vec<nvidia_smi_query::GpuFabric>),
}

impl ToolOutput {
    fn record(self, inputs: &mut Inputs) {
        match self {
            ToolOutput::Topology(report) => inputs.tools.push(report),
            ToolOutput::MigList(listed) => inputs.mig.listed = Some(listed),
            ToolOutput::Fabric(fabrics) => inputs.fabric = Some(fabrics),
        }
    }
}

impl ToolKind {
    const fn args(self) -> &'static [&'static str] {
        match self {
            ToolKind::NvidiaSmi => &["topo", "-m"],
            ToolKind::RocmSmi => &["--showtopo"],
            ToolKind::NvidiaSmiList => &["-L"],
            ToolKind::NvidiaSmiQuery => &["-q"],
        }
    }

    /// Parses the output; `ran_by_us` means we ran the tool ourselves.
    fn parse(self, text: &str, ran_by_us: bool) -> Result<ToolOutput, crate::parse::ParseError> {
        match self {
            ToolKind::NvidiaSmi => {
                nvidia_smi::parse(text).map(|t| ToolOutput::Topology(t.into_report(ran_by_us)))
            }
            ToolKind::RocmSmi => rocm_smi::parse(text).map(ToolOutput::Topology),
            ToolKind::NvidiaSmiList => nvidia_smi_list::parse(text).map(ToolOutput::MigList),
            ToolKind::NvidiaSmiQuery => nvidia_smi_query::parse(text).map(ToolOutput::Fabric),
        }
    }

    /// How warnings name a run of `program`: the MIG listing by its
    /// argument, as nvidia-smi is also run for `topo -m`.
    fn run_name(self, program: &str) -> String {
        match self {
            ToolKind::NvidiaSmi | ToolKind::RocmSmi => program.to_owned(),
            ToolKind::NvidiaSmiList => format!("{program} -L"),
            ToolKind::NvidiaSmiQuery => format!("{program} -q"),
        }
    }

    /// Whether a failed run falls back on the last good report
    /// ([`ToolMemory::stand_in`]). Not the MIG listing: an operator (or
    /// nvidia-mig-manager) re-cuts the MIG devices while the node runs, so an
    /// earlier listing may no longer hold; a failed run costs the MIG labels.
    /// Nor the fabric query: a GPU's registration changes with the fabric's
    /// state; a failed run costs the clique label.
    const fn reuses_last_report(self) -> bool {
        !matches!(self, ToolKind::NvidiaSmiList | ToolKind::NvidiaSmiQuery)
    }

    /// The source this tool is, for the metrics.
    const fn source(self) -> SourceKind {
        match self {
            ToolKind::NvidiaSmi => SourceKind::NvidiaSmi,
            ToolKind::RocmSmi => SourceKind::RocmSmi,
            ToolKind::NvidiaSmiList => SourceKind::NvidiaSmiList,
            ToolKind::NvidiaSmiQuery => SourceKind::NvidiaSmiQuery,
        }
    }

    /// What a run's output that cannot be used costs, as warnings say it.
    const fn loss(self) -> &'static str {
        match self {
            ToolKind::NvidiaSmi | ToolKind::RocmSmi => "its labels are left out",
            ToolKind::NvidiaSmiList => "the MIG labels are left out",
            ToolKind::NvidiaSmiQuery => "gpu-clique is left out",
        }
    }
}

/// Reads every source. `memory` holds the live tools' last good reports: it
/// is updated with this round's, and stands in for a run that fails.
pub async fn discover(
    options: &SourceOptions,
    memory: &mut ToolMemory,
) -> Result<Discovery, DiscoveryError> {
    let mut discovery = Discovery::default();
    discovery.inputs.vendor = options.vendor;
    discovery.inputs.kubelet_version = options.kubelet_version;
    discovery.inputs.devices = options.devices.clone();
    discovery.inputs.mig = MigInput {
        strategy: options.mig_strategy,
        listed: None,
    };
    read_tool(
        &options.nvidia_smi_list,
        ToolKind::NvidiaSmiList,
        options,
        memory,
        &mut discovery,
    )
    .await?;
    discovery.inputs.sysfs = match &options.sysfs {
        PathSource::Disabled => None,
        PathSource::Explicit(root) => {
            Some(read_sysfs(root).map_err(DiscoveryError::of(SourceKind::Sysfs))?)
        }
        PathSource::Default(root) => read_sysfs(root)
            .map_err(|e| {
                discovery.failure(
                    SourceKind::Sysfs,
                    format!("sysfs not read ({e}): its labels are left out"),
                )
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
            discovery.failure(SourceKind::Nvml, warning);
        }
    }
    for (source, kind) in [
        (&options.nvidia_smi, ToolKind::NvidiaSmi),
        (&options.nvidia_smi_query, ToolKind::NvidiaSmiQuery),
        (&options.rocm_smi, ToolKind::RocmSmi),
    ] {
        read_tool(source, kind, options, memory, &mut discovery).await?;
    }
    let drop_ins = options.kubelet_drop_ins.as_deref();
    discovery.inputs.kubelet = match &options.kubelet {
        PathSource::Disabled => None,
        PathSource::Explicit(path) => Some(
            read_kubelet(path, drop_ins)
                .await
                .map_err(DiscoveryError::of(SourceKind::Kubelet))?,
        ),
        PathSource::Default(path) => match read_kubelet(path, drop_ins).await {
            Ok(settings) => Some(settings),
            Err(e) => {
                discovery.failure(
                    SourceKind::Kubelet,
                    format!("kubelet config not read ({e}): kubelet labels are left out"),
                );
                None
            }
        },
    };
    Ok(discovery)
}

/// Reads one tool's output into `discovery`: from its recorded file (an
/// error when it cannot be read or parsed: the operator named it), or by
/// running it, when no recorded output of another node is read instead (a
/// failed run costs only its labels, with a warning naming the run).
async fn read_tool(
    source: &ToolSource,
    kind: ToolKind,
    options: &SourceOptions,
    memory: &mut ToolMemory,
    discovery: &mut Discovery,
) -> Result<(), DiscoveryError> {
    let output = match source {
        ToolSource::Disabled => None,
        ToolSource::File(path) => {
            let text = read_text(path).map_err(DiscoveryError::of(kind.source()))?;
            let output = kind.parse(&text, false).map_err(|e| DiscoveryError {
                kind: kind.source(),
                error: SourceError::new(path.display().to_string(), e),
            })?;
            Some(output)
        }
        ToolSource::Command(_) if options.offline() => None,
        ToolSource::Command(program) => run_tool(program, kind, options, memory, discovery).await,
    };
    if let Some(output) = output {
        output.record(&mut discovery.inputs);
    }
    Ok(())
}

/// Runs `program` as `kind` says; its failures are warnings.
async fn run_tool(
    program: &str,
    kind: ToolKind,
    options: &SourceOptions,
    memory: &mut ToolMemory,
    discovery: &mut Discovery,
) -> Option<ToolOutput> {
    let output = memory
        .runner
        .run(program, kind.args(), options.command_timeout)
        .await;
    match output {
        Ok(CommandOutput::NotInstalled) => {
            tracing::debug!(program, "not installed");
            None
        }
        Ok(CommandOutput::Stdout(text)) => match kind.parse(&text, true) {
            Ok(output) => {
                if let ToolOutput::Topology(report) = &output {
                    memory.remember(program, report, Instant::now());
                }
                Some(output)
            }
            // Output that does not parse is no passing failure (a new
            // driver's format): never papered over.
            Err(e) => {
                discovery.failure(
                    kind.source(),
                    format!(
                        "{} output not used ({e}): {}",
                        kind.run_name(program),
                        kind.loss()
                    ),
                );
                None
            }
        },
        Err(e) if kind.reuses_last_report() => {
            let (report, warning) = memory.stand_in(program, &e.to_string(), Instant::now());
            discovery.failure(kind.source(), warning);
            report.map(ToolOutput::Topology)
        }
        Err(e) => {
            discovery.failure(
                kind.source(),
                format!("{} failed ({e}): {}", kind.run_name(program), kind.loss()),
            );
            None
        }
    }
}
