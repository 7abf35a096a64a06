//! Command-line flags, and their validation into a [`Config`].

use crate::app::{ApiSettings, Config, Output, SinkConfig};
use crate::devices::DeviceConfig;
use crate::discover::{PathSource, SourceOptions, ToolSource};
use crate::health::DEFAULT_METRICS_ADDRESS;
use crate::model::Vendor;
use crate::reconcile::devices::MigStrategy;
use crate::reconcile::VendorChoice;
use crate::sinks::api::DEFAULT_FIELD_MANAGER;
use crate::sinks::nfd::{DEFAULT_FEATURES_DIR, DEFAULT_FILE_NAME};
use crate::sinks::nodefeature::{Target, MAX_NODE_NAME};
use crate::sinks::retry::RetryPolicy;
use crate::summarize::kubernetes::{
    SummarizerConfig, DEFAULT_SUMMARY_NAME, DEFAULT_SUMMARY_NAMESPACE, POLICY_DEFAULT_MAX_AGE,
};
use clap::{Args, Parser, Subcommand, ValueEnum};
use gpu_topology::duration::parse_duration;
use gpu_topology::names::{is_dns_label, is_dns_subdomain};
use gpu_topology::{KubeletVersion, LabelPrefix, DEFAULT_LABEL_PREFIX};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The word that disables a path or program source.
pub const DISABLED: &str = "none";
pub const DEFAULT_SYSFS_ROOT: &str = "/sys";
pub const DEFAULT_KUBELET_CONFIG: &str = "/var/lib/kubelet/config.yaml";

/// Discovers this node's GPU topology (NUMA, NVLink, PCIe switches, kubelet
/// alignment settings) and publishes it as gpu-topology.io labels.
///
/// With the `summarize` subcommand it instead publishes the fleet summary:
/// the labeled Nodes grouped by topology, in one ConfigMap the policy reads.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "gpu-topology-labeler",
    version,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// sysfs mount to read GPUs and NUMA nodes from, or `none` [default: /sys]
    #[arg(long, value_name = "DIR|none")]
    pub sysfs_root: Option<String>,
    /// Read `nvidia-smi topo -m` output from FILE instead of running nvidia-smi (offline mode)
    #[arg(long, value_name = "FILE")]
    pub nvidia_smi_topo: Option<PathBuf>,
    /// Read `rocm-smi --showtopo` output from FILE instead of running rocm-smi (offline mode)
    #[arg(long, value_name = "FILE")]
    pub rocm_smi_topo: Option<PathBuf>,
    /// nvidia-smi program to run, or `none`
    #[arg(long, value_name = "PROGRAM|none", default_value = "nvidia-smi")]
    pub nvidia_smi: String,
    /// rocm-smi program to run, or `none`
    #[arg(long, value_name = "PROGRAM|none", default_value = "rocm-smi")]
    pub rocm_smi: String,
    /// The NVIDIA device plugin's MIG strategy (its MIG_STRATEGY): with `single` or `mixed`, MIG devices are read from `nvidia-smi -L`
    #[arg(long, value_enum, default_value_t = MigStrategyArg::None)]
    pub mig_strategy: MigStrategyArg,
    /// Read `nvidia-smi -L` output from FILE instead of running nvidia-smi (offline mode)
    #[arg(long, value_name = "FILE")]
    pub nvidia_smi_list: Option<PathBuf>,
    /// Read `nvidia-smi -q` output (its Fabric sections: the multi-node NVLink clique) from FILE instead of running nvidia-smi (offline mode)
    #[arg(long, value_name = "FILE")]
    pub nvidia_smi_query: Option<PathBuf>,
    /// YAML file of the device-plugin resources besides the GPUs to count per NUMA node, or `none` [default: the RDMA shared device plugin's rdma/rdma_shared_device_a and the SR-IOV network device plugin's intel.com/intel_sriov_netdevice]
    #[arg(long, value_name = "FILE|none")]
    pub devices_config: Option<String>,
    /// Do not query NVML (only meaningful in builds with the `nvml` feature)
    #[arg(long)]
    pub no_nvml: bool,
    /// Kubelet config file, or `none` [default: /var/lib/kubelet/config.yaml]
    #[arg(long, value_name = "FILE|none")]
    pub kubelet_config: Option<String>,
    /// The kubelet's --config-dir: `*.conf` drop-ins applied over the config file in name order
    #[arg(long, value_name = "DIR")]
    pub kubelet_config_dir: Option<PathBuf>,
    /// The kubelet's version, as the Node's status.nodeInfo.kubeletVersion reports it (e.g. v1.36.2), for the kubelet-version label; unknown without it
    #[arg(long, env = "KUBELET_VERSION", value_name = "VERSION")]
    pub kubelet_version: Option<String>,
    /// Which GPUs the labels describe; `auto` takes the only vendor present
    #[arg(long, value_enum, default_value_t = GpuVendor::Auto)]
    pub gpu_vendor: GpuVendor,
    /// Label prefix (a DNS subdomain)
    #[arg(long, default_value = DEFAULT_LABEL_PREFIX)]
    pub label_prefix: String,
    /// Where to publish the labels
    #[arg(long, value_enum, default_value_t = Sink::Nfd)]
    pub sink: Sink,
    /// Print the labels and a summary to stdout instead of publishing (same as --sink stdout)
    #[arg(long)]
    pub dry_run: bool,
    /// Format of the stdout sink: `key=value` lines plus a summary, or one JSON object
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Discover and publish once, then exit
    #[arg(long)]
    pub once: bool,
    /// Re-discovery interval in daemon mode (e.g. 90s, 5m)
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub interval: Duration,
    /// Serve /livez, /readyz and /metrics (Prometheus) over HTTP on IP:PORT, in daemon mode; the flag alone binds 0.0.0.0:8080
    #[arg(
        long,
        value_name = "IP:PORT",
        num_args = 0..=1,
        default_missing_value = DEFAULT_METRICS_ADDRESS,
        value_parser = parse_metrics_address
    )]
    pub metrics_address: Option<SocketAddr>,
    /// Kill nvidia-smi/rocm-smi after this long; also the limit of each NVML call
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub command_timeout: Duration,
    /// NFD local feature directory (nfd-worker's features.d)
    #[arg(long, value_name = "DIR", default_value = DEFAULT_FEATURES_DIR)]
    pub nfd_features_dir: PathBuf,
    /// Name of the feature file in --nfd-features-dir
    #[arg(long, value_name = "NAME", default_value = DEFAULT_FILE_NAME)]
    pub nfd_file_name: String,
    /// NFD drops the labels this long after the last write unless rewritten (must exceed 2x --interval)
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub nfd_expiry: Duration,
    /// This node's name (from the downward API), for the kubernetes and nodefeature sinks
    #[arg(long, env = "NODE_NAME")]
    pub node_name: Option<String>,
    /// Namespace of the NodeFeature object (nodefeature sink) [default: the service account's]
    #[arg(long, env = "POD_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
    /// The labeler's pod (from the downward API): its controller owns the NodeFeature object
    #[arg(long, env = "POD_NAME", value_name = "NAME")]
    pub pod_name: Option<String>,
    /// Server-side apply field manager
    #[arg(long, default_value = DEFAULT_FIELD_MANAGER)]
    pub field_manager: String,
    /// Attempts per publish while the API server is unavailable (5xx, 429, 409, no answer)
    #[arg(long, default_value_t = RetryPolicy::default().attempts)]
    pub api_attempts: u32,
    /// Give up on an API answer after this long (the attempt is then retried)
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub request_timeout: Duration,
    /// Log verbosity (logs go to stderr)
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
    /// Without a subcommand the labeler labels this node (the DaemonSet).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Write the fleet summary ConfigMap (labeled Nodes grouped by topology) for the policy, every --interval
    Summarize(SummarizeArgs),
}

/// Flags of `gpu-topology-labeler summarize`.
#[derive(Debug, Clone, Args)]
pub struct SummarizeArgs {
    /// Label prefix of the node labels (a DNS subdomain)
    #[arg(long, default_value = DEFAULT_LABEL_PREFIX)]
    pub label_prefix: String,
    /// Time between passes; keep it well below the policy's capacity.fleetSummary.maxAgeSeconds (default 300s)
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub interval: Duration,
    /// Run one pass and exit (non-zero when it fails), e.g. from a CronJob
    #[arg(long)]
    pub once: bool,
    /// Namespace of the summary ConfigMap
    #[arg(long, default_value = DEFAULT_SUMMARY_NAMESPACE)]
    pub summary_namespace: String,
    /// Name of the summary ConfigMap
    #[arg(long, default_value = DEFAULT_SUMMARY_NAME)]
    pub summary_name: String,
    /// Server-side apply field manager
    #[arg(long, default_value = DEFAULT_FIELD_MANAGER)]
    pub field_manager: String,
    /// Attempts per API request while the API server is unavailable (5xx, 429, no answer, a cut answer)
    #[arg(long, default_value_t = RetryPolicy::default().attempts)]
    pub api_attempts: u32,
    /// Give up on an API answer after this long (the attempt is then retried)
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub request_timeout: Duration,
    /// Also summarise the DRA devices (DeviceClasses and ResourceSlices, resource.k8s.io/v1,
    /// Kubernetes 1.34 and later) for the policy's claim checks; needs `list` on both
    #[arg(long)]
    pub dra: bool,
    /// Also read the heartbeats the nodefeature sink writes on the labeler's NodeFeature objects
    /// (nfd.k8s-sigs.io), so that the policy sees stale labels of those nodes; needs `list` on
    /// nodefeatures
    #[arg(long)]
    pub nodefeature_heartbeats: bool,
    /// Log verbosity (logs go to stderr)
    #[arg(long, value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,
}

impl SummarizeArgs {
    /// Validates the flags; the error is a usage message.
    pub fn into_config(self) -> Result<SummarizerConfig, String> {
        let prefix = LabelPrefix::new(&self.label_prefix).map_err(|e| e.to_string())?;
        if !is_dns_label(&self.summary_namespace) {
            return Err(format!(
                "--summary-namespace {:?} is not a namespace name (lowercase letters, digits and '-', at most 63 characters)",
                self.summary_namespace
            ));
        }
        if !is_dns_subdomain(&self.summary_name) {
            return Err(format!(
                "--summary-name {:?} is not a ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 characters)",
                self.summary_name
            ));
        }
        if self.field_manager.is_empty() {
            return Err("--field-manager must not be empty".to_owned());
        }
        Ok(SummarizerConfig {
            prefix,
            namespace: self.summary_namespace,
            name: self.summary_name,
            field_manager: self.field_manager,
            retry: api_retry(self.api_attempts),
            request_timeout: self.request_timeout,
            interval: self.interval,
            once: self.once,
            dra: self.dra,
            nodefeature_heartbeats: self.nodefeature_heartbeats,
        })
    }

    /// A warning when the interval leaves the policy's default staleness
    /// limit less than two passes of slack.
    pub fn interval_warning(&self) -> Option<String> {
        (!self.once && self.interval > POLICY_DEFAULT_MAX_AGE / 2).then(|| {
            format!(
                "--interval {:?}: the policy ignores a summary older than capacity.fleetSummary.maxAgeSeconds \
                 (default {}s); keep the interval well below it (at most half), or raise maxAgeSeconds",
                self.interval,
                POLICY_DEFAULT_MAX_AGE.as_secs()
            )
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MigStrategyArg {
    None,
    Single,
    Mixed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GpuVendor {
    Auto,
    Nvidia,
    Amd,
    Intel,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sink {
    Nfd,
    Kubernetes,
    /// An NFD NodeFeature object (NFD v0.14+)
    #[value(name = "nodefeature")]
    NodeFeature,
    Stdout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

impl LogLevel {
    pub fn filter(self) -> tracing::Level {
        match self {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
        }
    }
}

/// `--metrics-address`: an IP address and a port (`0.0.0.0:8080`,
/// `[::]:8080`, `127.0.0.1:0` for any free port).
pub fn parse_metrics_address(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!(
            "{text:?} is not an IP:PORT address such as 0.0.0.0:8080, [::]:8080 or 127.0.0.1:9100"
        )
    })
}

/// The retries of `--api-attempts`: at least one attempt.
fn api_retry(attempts: u32) -> RetryPolicy {
    RetryPolicy {
        attempts: attempts.max(1),
        ..RetryPolicy::default()
    }
}

/// `--kubelet-version`, read as the Node reports it
/// ([`KubeletVersion::parse_node_info`]): a value that does not read is a
/// usage error, never a guessed version.
fn kubelet_version(value: &str) -> Result<KubeletVersion, String> {
    KubeletVersion::parse_node_info(value).ok_or_else(|| {
        format!(
            "--kubelet-version {value:?} is not a kubelet version as status.nodeInfo.kubeletVersion \
             reports it (v<major>.<minor>[.<patch>][-suffix], e.g. v1.36.2)"
        )
    })
}

/// `--node-name`, which the API sink `sink` cannot do without.
fn required_node_name(node: Option<String>, sink: &str) -> Result<String, String> {
    node.filter(|name| !name.is_empty()).ok_or_else(|| {
        format!(
            "--sink {sink} needs --node-name or NODE_NAME (set it from the downward API: spec.nodeName)"
        )
    })
}

/// The nodefeature sink's target, validated: the node name is also the value
/// of the NodeFeature's node-name label, so it must be a valid label value.
fn node_feature_target(
    node: String,
    namespace: Option<String>,
    pod: Option<String>,
) -> Result<Target, String> {
    if !is_dns_subdomain(&node) || node.len() > MAX_NODE_NAME {
        return Err(format!(
            "--node-name {node:?}: a NodeFeature can only target a node whose name is a valid label value \
             (lowercase letters, digits, '-' and '.', at most {MAX_NODE_NAME} characters); use --sink nfd"
        ));
    }
    let namespace = namespace.filter(|namespace| !namespace.is_empty());
    if let Some(namespace) = namespace.as_deref().filter(|ns| !is_dns_label(ns)) {
        return Err(format!(
            "--namespace {namespace:?} is not a namespace name (lowercase letters, digits and '-', at most 63 characters)"
        ));
    }
    let pod = pod.filter(|pod| !pod.is_empty());
    if let Some(pod) = pod.as_deref().filter(|pod| !is_dns_subdomain(pod)) {
        return Err(format!(
            "--pod-name {pod:?} is not a pod name (lowercase letters, digits, '-' and '.', at most 253 characters)"
        ));
    }
    Ok(Target {
        node,
        namespace,
        pod,
    })
}

fn path_source(value: Option<&str>, default: &str) -> PathSource {
    match value {
        Some(DISABLED) => PathSource::Disabled,
        Some(path) => PathSource::Explicit(PathBuf::from(path)),
        None => PathSource::Default(PathBuf::from(default)),
    }
}

/// The device resources to count: the built-in defaults, none, or a file's.
fn devices_config(value: Option<&str>) -> Result<DeviceConfig, String> {
    let config = match value {
        None => DeviceConfig::defaults(),
        Some(DISABLED) => DeviceConfig::default(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--devices-config {path}: {e}"))?;
            serde_saphyr::from_str::<DeviceConfig>(&text)
                .map_err(|e| format!("--devices-config {path}: {e}"))?
        }
    };
    config
        .validate()
        .map_err(|e| format!("--devices-config: {e}"))?;
    Ok(config)
}

fn tool_source(file: Option<PathBuf>, program: &str) -> ToolSource {
    match (file, program) {
        (Some(file), _) => ToolSource::File(file),
        (None, DISABLED) => ToolSource::Disabled,
        (None, program) => ToolSource::Command(program.to_owned()),
    }
}

impl Cli {
    /// A warning when a single run writes an NFD file that nothing rewrites:
    /// NFD drops its labels once `--nfd-expiry` has passed.
    pub fn once_warning(&self) -> Option<String> {
        (self.once && !self.dry_run && self.sink == Sink::Nfd).then(|| {
            format!(
                "--once with the nfd sink: NFD removes these labels {:?} from now (--nfd-expiry) \
                 unless the labeler runs again before then",
                self.nfd_expiry
            )
        })
    }

    /// Validates the flags; the error is a usage message.
    pub fn into_config(self) -> Result<Config, String> {
        let prefix = LabelPrefix::new(&self.label_prefix).map_err(|e| e.to_string())?;
        if self.once && self.metrics_address.is_some() {
            return Err(
                "--metrics-address serves the daemon's probes and metrics: it has no use with --once"
                    .to_owned(),
            );
        }
        let sink = if self.dry_run {
            Sink::Stdout
        } else {
            self.sink
        };
        let sink = match sink {
            Sink::Stdout => SinkConfig::Stdout(match self.output {
                OutputFormat::Text => Output::Text,
                OutputFormat::Json => Output::Json,
            }),
            Sink::Nfd => {
                if self.nfd_file_name.is_empty()
                    || self.nfd_file_name.starts_with('.')
                    || self.nfd_file_name.contains('/')
                {
                    return Err(format!(
                        "--nfd-file-name {:?} must be a plain file name not starting with '.' (NFD ignores dot-files)",
                        self.nfd_file_name
                    ));
                }
                if !self.once && self.nfd_expiry <= self.interval.saturating_mul(2) {
                    return Err(format!(
                        "--nfd-expiry {:?} must exceed twice --interval {:?}, or labels expire between refreshes",
                        self.nfd_expiry, self.interval
                    ));
                }
                SinkConfig::Nfd {
                    dir: self.nfd_features_dir,
                    file_name: self.nfd_file_name,
                    expiry: self.nfd_expiry,
                }
            }
            Sink::Kubernetes => SinkConfig::Kubernetes {
                node: required_node_name(self.node_name, "kubernetes")?,
                api: ApiSettings {
                    field_manager: self.field_manager,
                    retry: api_retry(self.api_attempts),
                    request_timeout: self.request_timeout,
                },
            },
            Sink::NodeFeature => SinkConfig::NodeFeature {
                target: node_feature_target(
                    required_node_name(self.node_name, "nodefeature")?,
                    self.namespace,
                    self.pod_name,
                )?,
                api: ApiSettings {
                    field_manager: self.field_manager,
                    retry: api_retry(self.api_attempts),
                    request_timeout: self.request_timeout,
                },
            },
        };
        let vendor = match self.gpu_vendor {
            GpuVendor::Auto => VendorChoice::Auto,
            GpuVendor::Nvidia => VendorChoice::Only(Vendor::Nvidia),
            GpuVendor::Amd => VendorChoice::Only(Vendor::Amd),
            GpuVendor::Intel => VendorChoice::Only(Vendor::Intel),
        };
        let mig_strategy = match self.mig_strategy {
            MigStrategyArg::None => MigStrategy::None,
            MigStrategyArg::Single => MigStrategy::Single,
            MigStrategyArg::Mixed => MigStrategy::Mixed,
        };
        let nvidia_smi_list = match mig_strategy {
            MigStrategy::None => ToolSource::Disabled,
            _ => tool_source(self.nvidia_smi_list, &self.nvidia_smi),
        };
        let devices = devices_config(self.devices_config.as_deref())?;
        Ok(Config {
            sources: SourceOptions {
                sysfs: path_source(self.sysfs_root.as_deref(), DEFAULT_SYSFS_ROOT),
                nvidia_smi_list,
                nvidia_smi_query: tool_source(self.nvidia_smi_query, &self.nvidia_smi),
                mig_strategy,
                devices,
                nvidia_smi: tool_source(self.nvidia_smi_topo, &self.nvidia_smi),
                rocm_smi: tool_source(self.rocm_smi_topo, &self.rocm_smi),
                nvml: !self.no_nvml,
                kubelet: path_source(self.kubelet_config.as_deref(), DEFAULT_KUBELET_CONFIG),
                kubelet_drop_ins: self.kubelet_config_dir,
                kubelet_version: self
                    .kubelet_version
                    .as_deref()
                    .map(kubelet_version)
                    .transpose()?,
                vendor,
                command_timeout: self.command_timeout,
            },
            prefix,
            sink,
            once: self.once,
            interval: self.interval,
            metrics_address: self.metrics_address,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    // The duration grammar of the flags is the shared one's
    // (gpu_topology::duration), tested there.

    #[rstest]
    #[case::plain("v1.36.2", KubeletVersion::new(1, 36))]
    #[case::a_distribution_suffix("v1.35.0-eks-4096722", KubeletVersion::new(1, 35))]
    fn kubelet_versions_are_read_as_the_node_reports_them(
        #[case] value: &str,
        #[case] version: KubeletVersion,
    ) {
        let parsed = config(&["--kubelet-version", value]).unwrap();
        assert_eq!(parsed.sources.kubelet_version, Some(version));
        assert_eq!(config(&[]).unwrap().sources.kubelet_version, None);
    }

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut argv = vec!["gpu-topology-labeler"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .into_config()
    }

    #[rstest]
    #[case::bad_prefix(&["--label-prefix", "Bad_Prefix"], "Bad_Prefix")]
    #[case::kubelet_version_without_v(&["--kubelet-version", "1.36.2"], "--kubelet-version \"1.36.2\"")]
    #[case::kubelet_version_a_word(&["--kubelet-version", "latest"], "status.nodeInfo.kubeletVersion")]
    #[case::kubernetes_without_node(&["--sink", "kubernetes"], "NODE_NAME")]
    #[case::dot_file_name(&["--nfd-file-name", ".hidden"], "dot-files")]
    #[case::expiry_too_short(&["--interval", "1h", "--nfd-expiry", "90m"], "twice")]
    #[case::interval_beyond_a_year(&["--interval", "18446744073709551615s"], "longest duration")]
    #[case::expiry_beyond_a_year(&["--nfd-expiry", "8785h"], "longest duration")]
    #[case::nodefeature_without_node(&["--sink", "nodefeature"], "--sink nodefeature needs --node-name")]
    #[case::node_name_longer_than_a_label_value(&["--sink", "nodefeature", "--node-name", &"n".repeat(64)], "valid label value")]
    #[case::node_name_not_a_dns_name(&["--sink", "nodefeature", "--node-name", "GPU_Node"], "valid label value")]
    #[case::bad_namespace(&["--sink", "nodefeature", "--node-name", "n1", "--namespace", "GPU_Topology"], "--namespace")]
    #[case::bad_pod_name(&["--sink", "nodefeature", "--node-name", "n1", "--pod-name", "Labeler_1"], "--pod-name")]
    #[case::zero_request_timeout(&["--request-timeout", "0s"], "positive duration")]
    #[case::metrics_address_with_once(&["--once", "--metrics-address=127.0.0.1:8080"], "no use with --once")]
    #[case::metrics_address_without_ip(&["--metrics-address", ":8080"], "IP:PORT")]
    #[case::metrics_address_a_host_name(&["--metrics-address", "localhost:8080"], "IP:PORT")]
    fn invalid_flags_are_usage_errors(#[case] args: &[&str], #[case] expected: &str) {
        let message = config(args).err().unwrap();
        assert!(message.contains(expected), "{message}");
    }

    #[rstest]
    #[case::nfd_once(&["--once"], true)]
    #[case::nfd_daemon(&[], false)]
    #[case::dry_run(&["--once", "--dry-run"], false)]
    #[case::stdout(&["--once", "--sink", "stdout"], false)]
    fn a_single_nfd_run_warns_that_its_labels_expire(#[case] args: &[&str], #[case] warns: bool) {
        let mut argv = vec!["gpu-topology-labeler"];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).unwrap();
        assert_eq!(cli.once_warning().is_some(), warns);
    }

    #[rstest]
    #[case::off_by_default(&[], None)]
    #[case::the_flag_alone(&["--metrics-address"], Some("0.0.0.0:8080"))]
    #[case::the_flag_alone_before_another(&["--metrics-address", "--sink", "nfd"], Some("0.0.0.0:8080"))]
    #[case::an_address(&["--metrics-address=127.0.0.1:9100"], Some("127.0.0.1:9100"))]
    #[case::ipv6_any(&["--metrics-address", "[::]:8080"], Some("[::]:8080"))]
    fn the_metrics_address_is_opt_in(#[case] args: &[&str], #[case] expected: Option<&str>) {
        let config = config(args).unwrap();
        assert_eq!(
            config.metrics_address,
            expected.map(|address| address.parse().unwrap())
        );
    }

    #[test]
    fn nodefeature_sink_flags() {
        let config = config(&[
            "--sink",
            "nodefeature",
            "--node-name",
            "gpu-node-1",
            "--namespace",
            "gpu-topology-labeler",
            "--pod-name",
            "gpu-topology-labeler-x7k2p",
            "--api-attempts",
            "3",
            "--request-timeout",
            "5s",
        ])
        .unwrap();
        assert_eq!(
            config.sink,
            SinkConfig::NodeFeature {
                target: Target {
                    node: "gpu-node-1".to_owned(),
                    namespace: Some("gpu-topology-labeler".to_owned()),
                    pod: Some("gpu-topology-labeler-x7k2p".to_owned()),
                },
                api: ApiSettings {
                    field_manager: "gpu-topology-labeler".to_owned(),
                    retry: RetryPolicy {
                        attempts: 3,
                        ..RetryPolicy::default()
                    },
                    request_timeout: Duration::from_secs(5),
                },
            }
        );
    }

    /// Empty downward-API values mean "not set": the client's namespace, no owner.
    #[test]
    fn empty_namespace_and_pod_name_are_unset() {
        let config = config(&[
            "--sink",
            "nodefeature",
            "--node-name",
            "gpu-node-1",
            "--namespace=",
            "--pod-name=",
        ])
        .unwrap();
        let SinkConfig::NodeFeature { target, .. } = config.sink else {
            panic!("{:?}", config.sink);
        };
        assert_eq!((target.namespace, target.pod), (None, None));
    }

    #[test]
    fn none_disables_sources() {
        let config = config(&[
            "--sysfs-root",
            "none",
            "--kubelet-config",
            "none",
            "--nvidia-smi",
            "none",
            "--dry-run",
        ])
        .unwrap();
        assert_eq!(config.sources.sysfs, PathSource::Disabled);
        assert_eq!(config.sources.kubelet, PathSource::Disabled);
        assert_eq!(config.sources.nvidia_smi, ToolSource::Disabled);
    }

    fn summarize_args(args: &[&str]) -> Result<SummarizeArgs, String> {
        let mut argv = vec!["gpu-topology-labeler", "summarize"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv)
            .map_err(|e| e.to_string())?
            .command
        {
            Some(Command::Summarize(args)) => Ok(args),
            None => Err("no subcommand".to_owned()),
        }
    }

    fn summarize_config(args: &[&str]) -> Result<SummarizerConfig, String> {
        summarize_args(args)?.into_config()
    }

    #[test]
    fn summarize_defaults() {
        assert_eq!(
            summarize_config(&[]).unwrap(),
            SummarizerConfig {
                prefix: LabelPrefix::default(),
                namespace: "kube-system".to_owned(),
                name: "gpu-topology-fleet".to_owned(),
                field_manager: "gpu-topology-labeler".to_owned(),
                retry: RetryPolicy::default(),
                request_timeout: Duration::from_secs(60),
                interval: Duration::from_secs(60),
                once: false,
                dra: false,
                nodefeature_heartbeats: false,
            }
        );
    }

    #[test]
    fn summarize_flags() {
        let config = summarize_config(&[
            "--label-prefix",
            "gpu.example.com",
            "--interval",
            "30s",
            "--once",
            "--summary-namespace",
            "gpu-system",
            "--summary-name",
            "fleet.v1",
            "--field-manager",
            "summarizer",
            "--api-attempts",
            "0",
            "--request-timeout",
            "5s",
            "--log-level",
            "debug",
        ])
        .unwrap();
        assert_eq!(config.prefix.as_str(), "gpu.example.com");
        assert_eq!(config.interval, Duration::from_secs(30));
        assert!(config.once);
        assert_eq!(config.namespace, "gpu-system");
        assert_eq!(config.name, "fleet.v1");
        assert_eq!(config.field_manager, "summarizer");
        assert_eq!(config.retry.attempts, 1, "at least one attempt");
        assert_eq!(config.request_timeout, Duration::from_secs(5));
    }

    #[rstest]
    #[case::bad_prefix(&["--label-prefix", "Bad_Prefix"], "Bad_Prefix")]
    #[case::bad_namespace(&["--summary-namespace", "Kube_System"], "--summary-namespace")]
    #[case::long_namespace(&["--summary-namespace", &"n".repeat(64)], "--summary-namespace")]
    #[case::bad_name(&["--summary-name=-fleet"], "--summary-name")]
    #[case::uppercase_name(&["--summary-name", "Fleet"], "--summary-name")]
    #[case::empty_name(&["--summary-name", ""], "--summary-name")]
    #[case::empty_field_manager(&["--field-manager", ""], "--field-manager")]
    #[case::zero_interval(&["--interval", "0s"], "positive duration")]
    #[case::labeler_flag(&["--sink", "nfd"], "--sink")]
    fn invalid_summarize_flags_are_usage_errors(#[case] args: &[&str], #[case] expected: &str) {
        let message = summarize_config(args).err().unwrap();
        assert!(message.contains(expected), "{message}");
    }

    #[test]
    fn labeler_flags_before_the_subcommand_are_refused() {
        let error = Cli::try_parse_from(["gpu-topology-labeler", "--once", "summarize"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("cannot be used with"), "{error}");
    }

    #[test]
    fn without_a_subcommand_the_labeler_runs_as_before() {
        let cli = Cli::try_parse_from(["gpu-topology-labeler", "--once", "--dry-run"]).unwrap();
        assert!(cli.command.is_none());
        let config = cli.into_config().unwrap();
        assert!(config.once);
    }

    #[rstest]
    #[case::default_interval(&[], false)]
    #[case::half_the_max_age(&["--interval", "150s"], false)]
    #[case::more_than_half(&["--interval", "151s"], true)]
    #[case::longer_than_the_max_age(&["--interval", "10m"], true)]
    #[case::once_has_no_interval(&["--interval", "10m", "--once"], false)]
    fn long_intervals_warn_about_the_policy_max_age(#[case] args: &[&str], #[case] warns: bool) {
        let warning = summarize_args(args).unwrap().interval_warning();
        assert_eq!(warning.is_some(), warns, "{warning:?}");
        if let Some(warning) = warning {
            assert!(warning.contains("maxAgeSeconds"), "{warning}");
        }
    }
}
