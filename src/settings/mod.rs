//! Policy settings: what the operator writes (camelCase, unknown keys refused)
//! and its validated form, [`Config`], that evaluation uses.
//!
//! Every validation error names the key it is about, e.g.
//! `qos.cpuPerGpu: "abc" is not a Kubernetes quantity`.
//!
//! **What is refused, and what is only ignored.** policy-server validates the
//! settings when it starts, and a policy whose settings are refused is not
//! initialised; without `--continue-on-errors` the whole policy-server
//! refuses to start (policy-server `evaluation_environment.rs`), which takes
//! every policy's enforcement down. So a refusal is kept for settings that
//! cannot mean anything: a value invalid in itself (an unknown word, a bad
//! quantity or name, a weight outside 1..100), values that contradict each
//! other (`maxGpusPerNumaNode` above `maxGpusPerNode`), or a choice that
//! cannot work as written (`source: static` without any static limit). A
//! key that merely has no effect under another key's value, as is left over
//! when an operator changes that other key, is accepted and ignored, and
//! [`Config`] does not carry it (see [`CapacitySource::uses_static_limits`]):
//! `topology.preferredWeight` outside `affinity: preferred`,
//! `topology.alignment` under `affinity: off`, the static limits and
//! `singleNumaNode` under `source: nodes`, `summary` or `cluster`, and
//! `capacity.fleetSummary` under `source: static` or `nodes`. Its own value
//! is still checked, so that it is valid once the other key changes back.
//!
//! Nothing warns about an ignored key: `validate_settings` has no warnings
//! (policy-server reads `message` only from an invalid answer), and a
//! warning in every admission response would reach every pod author, on
//! every GPU pod, about a choice only the operator makes. The settings
//! reference says where each key is ignored.
//!
//! This file holds the settings as written and their entry points; the
//! validation is in `validation.rs`, serde's readers for values written more
//! than one way in `reader.rs`.

pub mod devices;
mod key_path;
pub mod names;
mod reader;
mod validation;

pub use reader::Word;
use reader::{off_word, optional_word, then, word};

use crate::request::quantity::Quantity;
use crate::settings::devices::{DeviceResources, DEFAULT_DEVICE_RESOURCES, DEFAULT_MIG_RESOURCES};
use gpu_topology::names::is_dns_subdomain;
use gpu_topology::{Alignment, LabelPrefix, TopologyManagerScope};
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use serde::{Deserialize, Deserializer};
use serde_json::error::Category;
use std::collections::BTreeSet;

/// GPU resources counted when the operator configures none.
pub(crate) const DEFAULT_GPU_RESOURCES: [&str; 4] = [
    "nvidia.com/gpu",
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
];
/// Half of the smallest per-GPU share of common multi-GPU machines (12 vCPU and
/// 48 GiB per GPU), so defaults fit within one NUMA node's share with room for
/// system-reserved CPUs; also fits 1-GPU nodes with 8 vCPU / 32 GiB.
pub(crate) const DEFAULT_CPU_PER_GPU: &str = "4";
pub(crate) const DEFAULT_MEMORY_PER_GPU: &str = "16Gi";
/// Typical footprint of log shippers, metrics exporters and proxies.
pub(crate) const DEFAULT_SIDECAR_CPU: &str = "250m";
pub(crate) const DEFAULT_SIDECAR_MEMORY: &str = "256Mi";
/// Node-affinity weights range over 1..=100; the default makes alignment the
/// strongest preference.
pub(crate) const MIN_PREFERRED_WEIGHT: i64 = 1;
pub(crate) const MAX_PREFERRED_WEIGHT: i64 = 100;
pub(crate) const DEFAULT_PREFERRED_WEIGHT: i64 = MAX_PREFERRED_WEIGHT;

/// Settings exactly as written in the policy's `settings:`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Settings {
    pub gpu_resources: Vec<String>,
    /// MIG slice resources (names or `prefix*` patterns): GPU demand,
    /// aligned at the parent GPU's NUMA node ([`devices`]).
    pub mig_resources: Vec<String>,
    /// Other device-plugin resources aligned with the GPUs ([`devices`]).
    pub device_resources: Vec<String>,
    pub label_prefix: String,
    pub exempt_namespaces: Vec<String>,
    pub qos: QosSettings,
    pub topology: TopologySettings,
    pub capacity: Option<CapacitySettings>,
    pub dra: DraSettings,
    pub binding: BindingSettings,
}

/// The binding check (`pods/binding`): what it trusts of a node's
/// NodeResourceTopology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct BindingSettings {
    /// A NodeResourceTopology whose content last changed longer ago than
    /// this many seconds is not trusted: the binding is allowed with a
    /// warning. 0 (the default): no limit, since NFD's topology-updater
    /// writes the object only when its content changes, and a busy node
    /// that runs the same pods for days is not stale
    /// (docs/binding-check.md, "Stale occupancy").
    pub topology_max_age_seconds: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gpu_resources: DEFAULT_GPU_RESOURCES.map(str::to_owned).to_vec(),
            mig_resources: DEFAULT_MIG_RESOURCES.map(str::to_owned).to_vec(),
            device_resources: DEFAULT_DEVICE_RESOURCES.map(str::to_owned).to_vec(),
            label_prefix: gpu_topology::DEFAULT_LABEL_PREFIX.to_owned(),
            exempt_namespaces: Vec::new(),
            qos: QosSettings::default(),
            topology: TopologySettings::default(),
            capacity: None,
            dra: DraSettings::default(),
            binding: BindingSettings::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QosMode {
    /// Make GPU pods Guaranteed by editing their resources.
    #[default]
    Mutate,
    /// Reject GPU pods that are not Guaranteed.
    Validate,
    /// Leave resources alone.
    Off,
}

/// The `qos` settings, with quantities as written (`Q` = [`QuantityText`]) or
/// parsed (`Q` = [`Quantity`], in [`Config`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    default,
    deny_unknown_fields,
    rename_all = "camelCase",
    bound(deserialize = "Q: Deserialize<'de>, Qos<Q>: Default")
)]
pub struct Qos<Q> {
    #[serde(deserialize_with = "off_word")]
    pub mode: QosMode,
    /// `null` means no default: such containers are rejected with what to set.
    pub cpu_per_gpu: Option<Q>,
    pub memory_per_gpu: Option<Q>,
    pub sidecar_cpu: Option<Q>,
    pub sidecar_memory: Option<Q>,
    pub whole_cpus: bool,
    /// `roundToWholeCores`: under `mode: mutate`, whole CPUs the author wrote
    /// may be rounded up to whole cores where only `full-pcpus-only`
    /// kubelets would otherwise host the pod (`decide::rounding`); `false`
    /// keeps them as written, and the pod is refused with the fix.
    pub round_to_whole_cores: bool,
    /// What a regular init container that sets no CPU or memory gets.
    pub init_container: InitContainer<Q>,
    /// Never read from the settings: set for one pod by
    /// `decide::rounding`, which plans the pod with the whole CPUs its
    /// author wrote rounded up to the fleet's multiple as well.
    #[serde(skip)]
    pub round_written_cpus: bool,
}

/// CPU and memory for a regular init container (no `restartPolicy: Always`)
/// without GPUs that sets none: `fitApp`, or fixed values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum InitContainer<Q> {
    /// The most that does not raise the pod's effective request: while it
    /// runs, the app containers do not, so that much costs nothing in
    /// scheduling (see `decide::qos`).
    #[default]
    FitApp,
    /// These values; a resource left out is fitted as with `FitApp`.
    Fixed { cpu: Option<Q>, memory: Option<Q> },
}

/// The spelling of [`InitContainer::FitApp`] in the settings.
pub(crate) const FIT_APP: &str = "fitApp";

impl<'de, Q: Deserialize<'de>> Deserialize<'de> for InitContainer<Q> {
    /// `fitApp`, or `{cpu: ..., memory: ...}` (unknown keys refused).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, bound(deserialize = "Q: Deserialize<'de>"))]
        struct Fixed<Q> {
            cpu: Option<Q>,
            memory: Option<Q>,
        }
        const EXPECTED: &str = "or fixed values such as {cpu: \"2\", memory: 4Gi}";
        then(deserializer, |value| match value {
            serde_json::Value::String(word) if word == FIT_APP => Ok(InitContainer::FitApp),
            serde_json::Value::Object(_) => Fixed::<Q>::deserialize(value)
                .map(|Fixed { cpu, memory }| InitContainer::Fixed { cpu, memory })
                .map_err(|error| error.to_string()),
            other => Err(format!(
                "{other} is not valid: expected {FIT_APP}, {EXPECTED}"
            )),
        })
    }
}

pub(crate) type QosSettings = Qos<QuantityText>;
pub(crate) type QosConfig = Qos<Quantity>;

impl Default for QosSettings {
    fn default() -> Self {
        let text = |value: &str| Some(QuantityText(value.to_owned()));
        QosSettings {
            mode: QosMode::Mutate,
            cpu_per_gpu: text(DEFAULT_CPU_PER_GPU),
            memory_per_gpu: text(DEFAULT_MEMORY_PER_GPU),
            sidecar_cpu: text(DEFAULT_SIDECAR_CPU),
            sidecar_memory: text(DEFAULT_SIDECAR_MEMORY),
            whole_cpus: true,
            round_to_whole_cores: true,
            init_container: InitContainer::FitApp,
            round_written_cpus: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AffinityMode {
    /// Only nodes that can align the GPUs.
    Required,
    /// Only nodes that can admit the pod; aligned nodes preferred.
    #[default]
    Preferred,
    /// No node affinity.
    Off,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct TopologySettings {
    /// The kubelet's `topologyManagerScope`: how GPU demand is counted.
    #[serde(deserialize_with = "word")]
    pub scope: TopologyManagerScope,
    /// `None` when not written; [`Alignment::Numa`] applies then.
    #[serde(deserialize_with = "optional_word")]
    pub alignment: Option<Alignment>,
    #[serde(deserialize_with = "off_word")]
    pub affinity: AffinityMode,
    /// `None` when not written; [`DEFAULT_PREFERRED_WEIGHT`] applies then.
    pub preferred_weight: Option<i64>,
    /// A topology-aware secondary scheduler that GPU pods the policy steers
    /// are handed to when they ask for the default scheduler; empty: off.
    pub topology_aware_scheduler: String,
}

impl Default for TopologySettings {
    fn default() -> Self {
        TopologySettings {
            scope: TopologyManagerScope::Pod,
            alignment: None,
            affinity: AffinityMode::Preferred,
            preferred_weight: None,
            topology_aware_scheduler: String::new(),
        }
    }
}

impl TopologySettings {
    /// The evaluation view: a key that `affinity` ignores is read as not
    /// written, so that it cannot change an answer.
    fn config(&self) -> TopologyConfig {
        let affinity = self.affinity;
        let alignment = match affinity {
            AffinityMode::Off => None,
            AffinityMode::Required | AffinityMode::Preferred => self.alignment,
        };
        let preferred_weight = match affinity {
            AffinityMode::Preferred => self.preferred_weight,
            AffinityMode::Required | AffinityMode::Off => None,
        };
        TopologyConfig {
            scope: self.scope,
            alignment: alignment.unwrap_or_default(),
            affinity,
            preferred_weight: preferred_weight.unwrap_or(DEFAULT_PREFERRED_WEIGHT),
        }
    }
}

impl Word for TopologyManagerScope {
    const EXPECTED: &'static str = TopologyManagerScope::EXPECTED;
}

impl Word for Alignment {
    const EXPECTED: &'static str = "one of numa, nvlink, node";
}

/// Where the fit check learns what the fleet offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapacitySource {
    /// The fleet summary when it is there and fresh, else the Node list;
    /// when the host answers neither, the static limits if configured, else
    /// no check.
    #[default]
    Auto,
    /// The Node list only; when the host does not answer, no check.
    Nodes,
    /// The fleet summary only; when it is not usable, no check.
    Summary,
    /// The static limits only; the host is never called.
    Static,
    /// The spelling before `nodes` and `summary`: `auto` without static
    /// limits. Kept so that older settings keep working.
    Cluster,
}

impl CapacitySource {
    pub const fn as_str(self) -> &'static str {
        match self {
            CapacitySource::Auto => "auto",
            CapacitySource::Nodes => "nodes",
            CapacitySource::Summary => "summary",
            CapacitySource::Static => "static",
            CapacitySource::Cluster => "cluster",
        }
    }

    /// Whether the static limits (`maxGpusPerNode`, `maxGpusPerNumaNode`,
    /// `singleNumaNode`) are ever used: as the only view (`static`) or as
    /// the fallback when the host answers nothing (`auto`). Under the other
    /// sources they are ignored.
    pub(crate) const fn uses_static_limits(self) -> bool {
        matches!(self, CapacitySource::Auto | CapacitySource::Static)
    }

    /// Whether `capacity.fleetSummary` is ever read (`auto`, `summary`, and
    /// `cluster`, the older spelling of `auto`); ignored under the others.
    pub(crate) const fn reads_summary(self) -> bool {
        !matches!(self, CapacitySource::Static | CapacitySource::Nodes)
    }

    /// Where this source reads the fleet, given the summary's location.
    fn sources(self, summary: &FleetSummarySettings) -> FleetSources {
        let node_list = match self {
            CapacitySource::Auto | CapacitySource::Cluster | CapacitySource::Nodes => true,
            CapacitySource::Summary | CapacitySource::Static => false,
        };
        FleetSources {
            summary: self.reads_summary().then(|| summary.clone()),
            node_list,
        }
    }
}

/// Where the fit check reads the fleet from the cluster: the fleet summary
/// first, when set, then the Node list, when allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetSources {
    pub summary: Option<FleetSummarySettings>,
    pub node_list: bool,
}

impl FleetSources {
    /// Whether the cluster is read at all: not under `capacity.source:
    /// static`, where the host is never called (DRA claims and pods are then
    /// not checked either).
    pub(crate) fn reads_cluster(&self) -> bool {
        self.summary.is_some() || self.node_list
    }
}

/// What the fit counts a GPU node without topology labels as (or with a
/// shape the cluster view does not know): where no labeled node takes the
/// pod, `allow` admits it for such nodes with a warning, and under
/// `required` its affinity also selects them when their count labels say
/// they host it (`decide::fit`, `decide::affinity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnlabeledNodes {
    /// Such a node cannot take the pod.
    #[default]
    Deny,
    /// Such a node may take the pod.
    Allow,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct CapacitySettings {
    pub source: CapacitySource,
    pub max_gpus_per_node: Option<u32>,
    pub max_gpus_per_numa_node: Option<u32>,
    /// True when every kubelet runs `topologyManagerPolicy: single-numa-node`.
    pub single_numa_node: bool,
    /// Where `gpu-topology-labeler summarize` publishes the fleet summary;
    /// `None`: the defaults ([`FleetSummarySettings::default`]).
    pub fleet_summary: Option<FleetSummarySettings>,
    pub unlabeled_nodes: UnlabeledNodes,
    /// A node whose labeler heartbeat is older than this many seconds has
    /// stale facts; 0: never. `None`:
    /// [`DEFAULT_STALE_AFTER_SECONDS`](gpu_topology::DEFAULT_STALE_AFTER_SECONDS).
    pub stale_facts_after_seconds: Option<u64>,
}

/// The fleet summary ConfigMap, read instead of listing every Node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct FleetSummarySettings {
    pub namespace: String,
    pub name: String,
    /// Older summaries are not trusted: the Node list is read instead.
    pub max_age_seconds: u64,
}

/// Where the example summarizer Deployment writes (examples/labeler/fleet-summary.yaml).
pub const DEFAULT_SUMMARY_NAMESPACE: &str = "kube-system";
pub const DEFAULT_SUMMARY_NAME: &str = "gpu-topology-fleet";
/// Five summarizer intervals (60 s by default): one missed pass is tolerated,
/// a stopped summarizer is noticed within minutes.
pub(crate) const DEFAULT_SUMMARY_MAX_AGE_SECONDS: u64 = 300;

impl Default for FleetSummarySettings {
    fn default() -> Self {
        FleetSummarySettings {
            namespace: DEFAULT_SUMMARY_NAMESPACE.to_owned(),
            name: DEFAULT_SUMMARY_NAME.to_owned(),
            max_age_seconds: DEFAULT_SUMMARY_MAX_AGE_SECONDS,
        }
    }
}

impl CapacitySettings {
    /// True when a static limit is set (what `static` and the `auto` fallback use).
    pub(crate) fn has_static_limits(&self) -> bool {
        self.max_gpus_per_node.is_some() || self.max_gpus_per_numa_node.is_some()
    }
}

/// DeviceClasses whose devices are GPUs, when the operator configures none:
/// the NVIDIA DRA driver's full GPUs, MIG devices and VFIO passthrough GPUs
/// (whose NVLink partitions it publishes), AMD's and Intel's.
pub(crate) const DEFAULT_GPU_DEVICE_CLASSES: [&str; 5] = [
    "gpu.nvidia.com",
    "mig.nvidia.com",
    "vfio.gpu.nvidia.com",
    "gpu.amd.com",
    "gpu.intel.com",
];
/// DeviceClasses aligned with a claim's GPUs when the operator configures
/// none: dra-driver-cpu's CPUs, and the NICs of dranet and the SR-IOV DRA
/// driver under the class names their documentation uses.
pub(crate) const DEFAULT_ALIGNED_DEVICE_CLASSES: [&str; 3] = [
    "dra.cpu",
    "dranet.net",
    "sriovnetwork.k8snetworkplumbingwg.io",
];

/// The `dra` settings: which DeviceClasses of a ResourceClaim are GPUs, and
/// which others are aligned with them (`decide::claim`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct DraSettings {
    /// A claim with a request of one of these classes is a GPU claim.
    pub gpu_device_classes: Vec<String>,
    /// Requests of these classes beside GPU requests are constrained to the
    /// GPUs' NUMA node with them.
    pub aligned_device_classes: Vec<String>,
}

impl Default for DraSettings {
    fn default() -> Self {
        DraSettings {
            gpu_device_classes: DEFAULT_GPU_DEVICE_CLASSES.map(str::to_owned).to_vec(),
            aligned_device_classes: DEFAULT_ALIGNED_DEVICE_CLASSES.map(str::to_owned).to_vec(),
        }
    }
}

impl DraSettings {
    pub(crate) fn is_gpu_class(&self, class: &str) -> bool {
        self.gpu_device_classes.iter().any(|name| name == class)
    }

    pub(crate) fn is_aligned_class(&self, class: &str) -> bool {
        self.aligned_device_classes.iter().any(|name| name == class)
    }

    fn check(&self, errors: &mut Vec<String>) {
        let mut seen = BTreeSet::new();
        for (key, names) in [
            ("dra.gpuDeviceClasses", &self.gpu_device_classes),
            ("dra.alignedDeviceClasses", &self.aligned_device_classes),
        ] {
            for name in names {
                if !is_dns_subdomain(name) {
                    errors.push(format!(
                        "{key}: {name:?} is not a DeviceClass name (a DNS subdomain, e.g. gpu.nvidia.com)"
                    ));
                } else if !seen.insert(name) {
                    errors.push(format!(
                        "{key}: {name:?} is listed twice (in dra.gpuDeviceClasses or dra.alignedDeviceClasses)"
                    ));
                }
            }
        }
    }
}

/// A quantity as written: a string, or a YAML number such as `8`.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantityText(pub String);

impl<'de> Deserialize<'de> for QuantityText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        then(deserializer, |value| match value {
            serde_json::Value::String(text) => Ok(QuantityText(text)),
            serde_json::Value::Number(number) => Ok(QuantityText(number.to_string())),
            other => Err(format!(
                "expected a quantity string such as \"4\" or \"16Gi\", got {other}"
            )),
        })
    }
}

/// The validated settings that evaluation works from.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub gpu_resources: Vec<String>,
    /// `migResources` and `deviceResources`.
    pub devices: DeviceResources,
    pub label_prefix: LabelPrefix,
    pub exempt_namespaces: BTreeSet<String>,
    pub qos: QosConfig,
    pub topology: TopologyConfig,
    /// Where the fit check reads the fleet from.
    pub capacity_source: CapacitySource,
    /// The static limits, when any is configured and `capacity_source`
    /// uses them ([`CapacitySource::uses_static_limits`]); the summary's
    /// location is in `sources` only.
    pub capacity: Option<CapacitySettings>,
    /// Where the cluster view comes from (`capacity.source`, `capacity.fleetSummary`).
    pub sources: FleetSources,
    pub unlabeled_nodes: UnlabeledNodes,
    /// The DeviceClasses of GPU claims and of the devices aligned with them.
    pub dra: DraSettings,
    /// Seconds after which a node's labeler heartbeat makes its facts stale
    /// (`capacity.staleFactsAfterSeconds`); `None`: never.
    pub stale_facts_after: Option<u64>,
    /// Seconds after which the binding check does not trust a
    /// NodeResourceTopology (`binding.topologyMaxAgeSeconds`); `None`: never.
    pub topology_max_age: Option<u64>,
    /// `topology.topologyAwareScheduler`; `None`: off.
    pub topology_aware_scheduler: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopologyConfig {
    pub scope: TopologyManagerScope,
    pub alignment: Alignment,
    pub affinity: AffinityMode,
    pub preferred_weight: i64,
}

impl Default for Config {
    fn default() -> Self {
        // The defaults are valid by construction; a test keeps it so.
        Settings::default()
            .config()
            .unwrap_or_else(|errors| unreachable!("default settings are invalid: {errors}"))
    }
}

/// Parses the settings JSON, naming the key of any type or unknown-key error.
///
/// policy-server evaluates each request in a fresh instance, so every
/// admission parses the settings: they are read straight from the bytes
/// (no JSON tree first). Settings that do not read are named by the key
/// that holds the bad value, found from where serde_json stopped
/// ([`key_path::key_path_at`]), as serde_path_to_error names it.
pub fn parse_settings(payload: &[u8]) -> Result<Settings, String> {
    let not_json = |error: serde_json::Error| format!("settings are not JSON: {error}");
    let mut deserializer = serde_json::Deserializer::from_slice(payload);
    let settings = Option::<Settings>::deserialize(&mut deserializer).map_err(|error| {
        if matches!(
            error.classify(),
            Category::Syntax | Category::Eof | Category::Io
        ) {
            return not_json(error);
        }
        // A value that does not read is named by its key path; where in
        // the text it stands says nothing more.
        let message = error.to_string();
        let position = format!(" at line {} column {}", error.line(), error.column());
        let message = message.strip_suffix(&position).unwrap_or(&message);
        let place = error_place(payload, error.line(), error.column());
        // An unknown variant reported in a key is an enum written as an
        // object (`{"variant": ...}`): the value is that object. Any other
        // error in a key (unknown, or given twice) is about the key.
        let path = match message.starts_with("unknown variant") {
            true => place.as_ref().map_or(".", key_path::KeyPath::value_of_key),
            false => place.as_ref().map_or(".", key_path::KeyPath::member),
        };
        match path {
            "." => message.to_owned(),
            path => format!("{path}: {message}"),
        }
    })?;
    deserializer.end().map_err(not_json)?;
    // `null`, no settings: the defaults.
    Ok(settings.unwrap_or_default())
}

/// Where serde_json's `line` and `column` stand (1-based lines; the column
/// counts the bytes before the position on its line). Text that is not
/// UTF-8 is refused by serde_json before any data error.
fn error_place(payload: &[u8], line: usize, column: usize) -> Option<key_path::KeyPath> {
    let text = std::str::from_utf8(payload).ok()?;
    let line_start = match line.checked_sub(2) {
        None => 0,
        Some(newlines) => text
            .match_indices('\n')
            .nth(newlines)
            .map_or(text.len(), |(at, _)| at + 1),
    };
    Some(key_path::key_path_at(
        text,
        line_start.saturating_add(column),
    ))
}

/// Reads settings from their JSON value; `null` (no settings) means defaults.
pub fn settings_from_value(value: serde_json::Value) -> Result<Settings, String> {
    parse_settings(value.to_string().as_bytes())
}

/// The answer to `validate_settings`: invalid settings are a `valid: false`
/// response with the reason, never a trap.
pub fn validation_response(payload: &[u8]) -> SettingsValidationResponse {
    match parse_settings(payload).and_then(|settings| settings.config().map(|_| ())) {
        Ok(()) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(message) => SettingsValidationResponse {
            valid: false,
            message: Some(message),
        },
    }
}

#[cfg(test)]
mod tests;
