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

pub mod devices;
mod key_path;
pub mod names;

use crate::request::quantity::{Quantity, QuantityError};
use crate::settings::devices::{
    check_patterns, DeviceResources, DEFAULT_DEVICE_RESOURCES, DEFAULT_MIG_RESOURCES,
};
use crate::settings::names::is_extended_resource_name;
use gpu_topology::names::{is_dns_label, is_dns_subdomain};
use gpu_topology::{
    Alignment, LabelPrefix, TopologyManagerScope, DEFAULT_STALE_AFTER_SECONDS,
    HEARTBEAT_INTERVAL_SECONDS,
};
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::error::Category;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// GPU resources counted when the operator configures none.
pub const DEFAULT_GPU_RESOURCES: [&str; 4] = [
    "nvidia.com/gpu",
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
];
/// Half of the smallest per-GPU share of common multi-GPU machines (12 vCPU and
/// 48 GiB per GPU), so defaults fit within one NUMA node's share with room for
/// system-reserved CPUs; also fits 1-GPU nodes with 8 vCPU / 32 GiB.
pub const DEFAULT_CPU_PER_GPU: &str = "4";
pub const DEFAULT_MEMORY_PER_GPU: &str = "16Gi";
/// Typical footprint of log shippers, metrics exporters and proxies.
pub const DEFAULT_SIDECAR_CPU: &str = "250m";
pub const DEFAULT_SIDECAR_MEMORY: &str = "256Mi";
/// Node-affinity weights range over 1..=100; the default makes alignment the
/// strongest preference.
pub const MIN_PREFERRED_WEIGHT: i64 = 1;
pub const MAX_PREFERRED_WEIGHT: i64 = 100;
pub const DEFAULT_PREFERRED_WEIGHT: i64 = MAX_PREFERRED_WEIGHT;

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
pub const FIT_APP: &str = "fitApp";

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

pub type QosSettings = Qos<QuantityText>;
pub type QosConfig = Qos<Quantity>;

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
    pub const fn uses_static_limits(self) -> bool {
        matches!(self, CapacitySource::Auto | CapacitySource::Static)
    }

    /// Whether `capacity.fleetSummary` is ever read (`auto`, `summary`, and
    /// `cluster`, the older spelling of `auto`); ignored under the others.
    pub const fn reads_summary(self) -> bool {
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
    pub fn reads_cluster(&self) -> bool {
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
    /// stale facts; 0: never. `None`: [`DEFAULT_STALE_AFTER_SECONDS`].
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
pub const DEFAULT_SUMMARY_MAX_AGE_SECONDS: u64 = 300;

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
    pub fn has_static_limits(&self) -> bool {
        self.max_gpus_per_node.is_some() || self.max_gpus_per_numa_node.is_some()
    }
}

/// DeviceClasses whose devices are GPUs, when the operator configures none:
/// the NVIDIA DRA driver's full GPUs, MIG devices and VFIO passthrough GPUs
/// (whose NVLink partitions it publishes), AMD's and Intel's.
pub const DEFAULT_GPU_DEVICE_CLASSES: [&str; 5] = [
    "gpu.nvidia.com",
    "mig.nvidia.com",
    "vfio.gpu.nvidia.com",
    "gpu.amd.com",
    "gpu.intel.com",
];
/// DeviceClasses aligned with a claim's GPUs when the operator configures
/// none: dra-driver-cpu's CPUs, and the NICs of dranet and the SR-IOV DRA
/// driver under the class names their documentation uses.
pub const DEFAULT_ALIGNED_DEVICE_CLASSES: [&str; 3] = [
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
    pub fn is_gpu_class(&self, class: &str) -> bool {
        self.gpu_device_classes.iter().any(|name| name == class)
    }

    pub fn is_aligned_class(&self, class: &str) -> bool {
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

/// The word of a setting whose words include `off` (`qos.mode`,
/// `topology.affinity`), also read from the boolean `false`. kubectl reads
/// manifests as YAML 1.1 (sigs.k8s.io/yaml, its goyaml.v2 `resolve.go`), where
/// an unquoted `off` is the boolean false: `affinity: off` in a
/// ClusterAdmissionPolicy reaches the policy as `"affinity": false`. Refusing
/// it would stop the policy-server over a value that means what it says.
fn off_word<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    then(deserializer, |value| {
        let value = match value {
            serde_json::Value::Bool(false) => serde_json::Value::from(OFF),
            other => other,
        };
        T::deserialize(value).map_err(|error| error.to_string())
    })
}

/// The word `off` of [`QosMode::Off`] and [`AffinityMode::Off`].
const OFF: &str = "off";

/// A setting spelled as one word from a fixed list.
pub trait Word: FromStr<Err = ()> {
    /// The accepted words, for the error message.
    const EXPECTED: &'static str;
}

fn word<'de, D: Deserializer<'de>, T: Word>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_string(WordVisitor::<T>(std::marker::PhantomData))
}

fn optional_word<'de, D: Deserializer<'de>, T: Word>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    deserializer.deserialize_option(WordVisitor::<Option<T>>(std::marker::PhantomData))
}

/// Reads a [`Word`] in serde_json's call, so that a word not in the list
/// is reported at the value (see [`then`]). Also reads `null` as no word,
/// for [`optional_word`].
struct WordVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Word> Visitor<'de> for WordVisitor<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        text.parse()
            .map_err(|()| E::custom(format!("{text:?} is not valid: expected {}", T::EXPECTED)))
    }
}

impl<'de, T: Word> Visitor<'de> for WordVisitor<Option<T>> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        word(deserializer).map(Some)
    }
}

/// Reads any JSON value and answers `read` of it, raising `read`'s error
/// while serde_json reads the value. An error raised after the value was
/// read whole (from a `Value` deserialized first) would carry the position
/// of the end of the object around it, where `key_path` would name that
/// object instead of the key.
fn then<'de, D, T>(
    deserializer: D,
    read: impl FnOnce(serde_json::Value) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let mut read = Some(read);
    let mut answer = None;
    deserializer.deserialize_any(Then(&mut |value| {
        if let Some(read) = read.take() {
            answer = Some(read(value)?);
        }
        Ok(())
    }))?;
    answer.ok_or_else(|| de::Error::custom("the value was not read"))
}

/// The visitor of [`then`]: builds the value as `serde_json::Value`'s own
/// visitor does (the elements and members through `Value`'s reader), and
/// hands it on. Not generic in what it answers, so that serde_json's
/// reader is instantiated for it once.
struct Then<'a>(&'a mut dyn FnMut(serde_json::Value) -> Result<(), String>);

impl Then<'_> {
    fn read<E: de::Error>(self, value: serde_json::Value) -> Result<(), E> {
        (self.0)(value).map_err(E::custom)
    }
}

impl<'de> Visitor<'de> for Then<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.read(serde_json::Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.read(serde_json::Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.read(serde_json::Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        self.read(serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, Into::into))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.read(serde_json::Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<(), E> {
        self.read(serde_json::Value::String(value))
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.read(serde_json::Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.read(serde_json::Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        self.read(value)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut elements: A) -> Result<(), A::Error> {
        let mut array = Vec::new();
        while let Some(element) = elements.next_element()? {
            array.push(element);
        }
        self.read(serde_json::Value::Array(array))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        let mut object = serde_json::Map::new();
        while let Some((key, value)) = members.next_entry()? {
            object.insert(key, value);
        }
        self.read(serde_json::Value::Object(object))
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

/// What a quantity setting holds.
#[derive(Clone, Copy)]
enum Unit {
    Cpu,
    Memory,
}

impl Settings {
    /// Validates every key and returns the evaluation view, or all problems
    /// joined by "; ", each naming its key.
    pub fn config(&self) -> Result<Config, String> {
        let mut errors = Vec::new();
        self.check_gpu_resources(&mut errors);
        let devices = DeviceResources {
            mig: check_patterns("migResources", &self.mig_resources, &mut errors),
            aligned: check_patterns("deviceResources", &self.device_resources, &mut errors),
        };
        let label_prefix = LabelPrefix::new(&self.label_prefix)
            .map_err(|error| errors.push(format!("labelPrefix: {error}")))
            .ok();
        for namespace in &self.exempt_namespaces {
            if !is_dns_label(namespace) {
                errors.push(format!(
                    "exemptNamespaces: {namespace:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)"
                ));
            }
        }
        let qos = &self.qos;
        let mut quantity = |key: &str, text: &Option<QuantityText>, unit| {
            text.as_ref()
                .and_then(|text| check_quantity(key, &text.0, unit, &mut errors))
        };
        let qos_config = QosConfig {
            mode: qos.mode,
            cpu_per_gpu: quantity("qos.cpuPerGpu", &qos.cpu_per_gpu, Unit::Cpu),
            memory_per_gpu: quantity("qos.memoryPerGpu", &qos.memory_per_gpu, Unit::Memory),
            sidecar_cpu: quantity("qos.sidecarCpu", &qos.sidecar_cpu, Unit::Cpu),
            sidecar_memory: quantity("qos.sidecarMemory", &qos.sidecar_memory, Unit::Memory),
            whole_cpus: qos.whole_cpus,
            round_to_whole_cores: qos.round_to_whole_cores,
            round_written_cpus: false,
            init_container: match &qos.init_container {
                InitContainer::FitApp => InitContainer::FitApp,
                InitContainer::Fixed { cpu, memory } => InitContainer::Fixed {
                    cpu: quantity("qos.initContainer.cpu", cpu, Unit::Cpu),
                    memory: quantity("qos.initContainer.memory", memory, Unit::Memory),
                },
            },
        };
        self.check_topology(&mut errors);
        self.dra.check(&mut errors);
        if let Some(capacity) = &self.capacity {
            check_capacity(capacity, &mut errors);
        }
        let source = self.capacity.as_ref().map(|c| c.source).unwrap_or_default();
        let summary = self
            .capacity
            .as_ref()
            .and_then(|c| c.fleet_summary.clone())
            .unwrap_or_default();
        match label_prefix {
            Some(label_prefix) if errors.is_empty() => Ok(Config {
                gpu_resources: self.gpu_resources.clone(),
                devices,
                label_prefix,
                exempt_namespaces: gpu_topology::sort::btree_set(
                    self.exempt_namespaces.iter().cloned(),
                ),
                qos: qos_config,
                topology: self.topology.config(),
                capacity_source: source,
                capacity: self
                    .capacity
                    .as_ref()
                    .filter(|c| c.has_static_limits() && source.uses_static_limits())
                    .map(|c| CapacitySettings {
                        // Read from `sources`, where the source reads it.
                        fleet_summary: None,
                        ..c.clone()
                    }),
                sources: source.sources(&summary),
                unlabeled_nodes: self
                    .capacity
                    .as_ref()
                    .map(|c| c.unlabeled_nodes)
                    .unwrap_or_default(),
                dra: self.dra.clone(),
                stale_facts_after: match self
                    .capacity
                    .as_ref()
                    .and_then(|c| c.stale_facts_after_seconds)
                {
                    Some(0) => None,
                    Some(seconds) => Some(seconds),
                    None => Some(DEFAULT_STALE_AFTER_SECONDS),
                },
                topology_max_age: Some(self.binding.topology_max_age_seconds)
                    .filter(|&seconds| seconds > 0),
                topology_aware_scheduler: Some(self.topology.topology_aware_scheduler.clone())
                    .filter(|name| !name.is_empty()),
            }),
            _ => Err(errors.join("; ")),
        }
    }

    fn check_gpu_resources(&self, errors: &mut Vec<String>) {
        if self.gpu_resources.is_empty() {
            errors.push(
                "gpuResources: must list at least one extended resource, e.g. nvidia.com/gpu"
                    .to_owned(),
            );
        }
        let mut seen = BTreeSet::new();
        for name in &self.gpu_resources {
            if !is_extended_resource_name(name) {
                errors.push(format!(
                    "gpuResources: {name:?} is not an extended resource name (domain/name outside kubernetes.io, e.g. nvidia.com/gpu)"
                ));
            } else if !seen.insert(name) {
                errors.push(format!("gpuResources: {name:?} is listed twice"));
            }
        }
    }

    /// `preferredWeight` is checked under every `affinity`, and ignored
    /// outside `preferred`; `alignment` is ignored under `off` (the module's
    /// comment says why neither is refused there).
    fn check_topology(&self, errors: &mut Vec<String>) {
        let scheduler = &self.topology.topology_aware_scheduler;
        if !scheduler.is_empty() {
            // The API server validates spec.schedulerName as a DNS subdomain
            // (ValidatePodSpec): any other name would make every pod it is
            // written into fail.
            if let Some(fault) = gpu_topology::names::dns_subdomain_fault(scheduler) {
                errors.push(format!(
                    "topology.topologyAwareScheduler: {scheduler:?} is no scheduler name: {fault}"
                ));
            }
        }
        if let Some(weight) = self.topology.preferred_weight {
            if !(MIN_PREFERRED_WEIGHT..=MAX_PREFERRED_WEIGHT).contains(&weight) {
                errors.push(format!(
                    "topology.preferredWeight: {weight} is out of range: node-affinity weights are {MIN_PREFERRED_WEIGHT} to {MAX_PREFERRED_WEIGHT}"
                ));
            }
        }
    }
}

fn check_capacity(capacity: &CapacitySettings, errors: &mut Vec<String>) {
    // A labeler confirms unchanged labels once per heartbeat interval: a
    // shorter age would take every quiet node's facts as stale.
    if let Some(seconds @ 1..) = capacity.stale_facts_after_seconds {
        if seconds < HEARTBEAT_INTERVAL_SECONDS {
            errors.push(format!(
                "capacity.staleFactsAfterSeconds: {seconds} is shorter than the labeler's heartbeat interval ({HEARTBEAT_INTERVAL_SECONDS} s), so every node whose labels did not change would count as stale; use at least {HEARTBEAT_INTERVAL_SECONDS} (default {DEFAULT_STALE_AFTER_SECONDS}), or 0 to never take facts as stale"
            ));
        }
    }
    for (key, value) in [
        ("capacity.maxGpusPerNode", capacity.max_gpus_per_node),
        (
            "capacity.maxGpusPerNumaNode",
            capacity.max_gpus_per_numa_node,
        ),
    ] {
        if value == Some(0) {
            errors.push(format!("{key}: must be at least 1"));
        }
    }
    if let (Some(per_node), Some(per_numa)) =
        (capacity.max_gpus_per_node, capacity.max_gpus_per_numa_node)
    {
        if per_numa > per_node {
            errors.push(format!(
                "capacity.maxGpusPerNumaNode: {per_numa} is more than capacity.maxGpusPerNode {per_node}: a NUMA node cannot hold more GPUs than its node"
            ));
        }
    }
    // Incomplete only where the static check runs: under the other sources
    // the static limits are ignored, `singleNumaNode` with them.
    if capacity.single_numa_node
        && capacity.max_gpus_per_numa_node.is_none()
        && capacity.source.uses_static_limits()
    {
        errors.push(
            "capacity.singleNumaNode: true needs capacity.maxGpusPerNumaNode to know what fits on one NUMA node"
                .to_owned(),
        );
    }
    // `static` reads nothing else: without a limit it could check nothing.
    if capacity.source == CapacitySource::Static && !capacity.has_static_limits() {
        errors.push(
            "capacity.source: static needs capacity.maxGpusPerNode or capacity.maxGpusPerNumaNode; set one, or use source auto to read the fleet summary and the nodes' labels"
                .to_owned(),
        );
    }
    if let Some(summary) = &capacity.fleet_summary {
        check_fleet_summary(summary, errors);
    }
}

/// Checked under every source, read only where
/// [`CapacitySource::reads_summary`].
fn check_fleet_summary(summary: &FleetSummarySettings, errors: &mut Vec<String>) {
    if !is_dns_label(&summary.namespace) {
        errors.push(format!(
            "capacity.fleetSummary.namespace: {:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)",
            summary.namespace
        ));
    }
    if !is_dns_subdomain(&summary.name) {
        errors.push(format!(
            "capacity.fleetSummary.name: {:?} is not a valid ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 characters)",
            summary.name
        ));
    }
    if summary.max_age_seconds == 0 {
        errors.push(
            "capacity.fleetSummary.maxAgeSeconds: must be at least 1; use several summarizer intervals (default 300)"
                .to_owned(),
        );
    }
}

/// Parses a quantity setting; CPU and memory must be positive, memory whole bytes.
fn check_quantity(key: &str, text: &str, unit: Unit, errors: &mut Vec<String>) -> Option<Quantity> {
    let problem = match (Quantity::parse(text), unit) {
        (Ok(quantity), _) if quantity.is_zero() => "must be more than zero".to_owned(),
        (Ok(quantity), Unit::Memory) if !quantity.is_whole() => {
            "is not a whole number of bytes (\"m\" means milli: use Mi for mebibytes)".to_owned()
        }
        (Ok(quantity), _) => return Some(quantity),
        (Err(QuantityError::Negative), _) => "must not be negative".to_owned(),
        (Err(error), _) => error.to_string(),
    };
    errors.push(format!("{key}: {text:?} {problem}"));
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn validate(settings: serde_json::Value) -> Result<Config, String> {
        parse_settings(settings.to_string().as_bytes())?.config()
    }

    #[test]
    fn empty_settings_take_the_documented_defaults() {
        let config = validate(json!({})).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.gpu_resources, DEFAULT_GPU_RESOURCES.to_vec());
        assert_eq!(config.label_prefix.as_str(), "gpu-topology.io");
        assert_eq!(config.qos.mode, QosMode::Mutate);
        assert_eq!(config.qos.cpu_per_gpu, Some(Quantity::parse("4").unwrap()));
        assert_eq!(
            config.qos.memory_per_gpu,
            Some(Quantity::parse("16Gi").unwrap())
        );
        assert_eq!(
            config.qos.sidecar_cpu,
            Some(Quantity::parse("250m").unwrap())
        );
        assert_eq!(
            config.qos.sidecar_memory,
            Some(Quantity::parse("256Mi").unwrap())
        );
        assert!(config.qos.whole_cpus);
        assert!(config.qos.round_to_whole_cores);
        assert!(!config.qos.round_written_cpus);
        assert_eq!(config.topology.scope, TopologyManagerScope::Pod);
        assert_eq!(config.topology.alignment, Alignment::Numa);
        assert_eq!(config.topology.affinity, AffinityMode::Preferred);
        assert_eq!(config.topology.preferred_weight, 100);
        assert_eq!(config.capacity_source, CapacitySource::Auto);
        assert_eq!(config.capacity, None);
    }

    #[test]
    fn a_full_valid_configuration_is_read() {
        let config = validate(json!({
            "gpuResources": ["nvidia.com/gpu", "example.com/accelerator"],
            "labelPrefix": "topology.example.com",
            "exemptNamespaces": ["kube-system", "gpu-operator"],
            "qos": {"mode": "validate", "cpuPerGpu": 8, "memoryPerGpu": "32Gi",
                    "sidecarCpu": "0.5", "sidecarMemory": null, "wholeCpus": false},
            "topology": {"scope": "container", "alignment": "nvlink", "affinity": "preferred",
                         "preferredWeight": 50},
            "capacity": {"maxGpusPerNode": 8, "maxGpusPerNumaNode": 4, "singleNumaNode": true}
        }))
        .unwrap();
        assert_eq!(config.qos.mode, QosMode::Validate);
        assert_eq!(config.qos.cpu_per_gpu, Some(Quantity::parse("8").unwrap()));
        assert_eq!(config.qos.sidecar_memory, None);
        assert_eq!(config.topology.scope, TopologyManagerScope::Container);
        assert_eq!(config.topology.alignment, Alignment::Nvlink);
        assert_eq!(config.topology.preferred_weight, 50);
        assert_eq!(config.capacity_source, CapacitySource::Auto);
        assert_eq!(
            config.capacity,
            Some(CapacitySettings {
                source: CapacitySource::Auto,
                max_gpus_per_node: Some(8),
                max_gpus_per_numa_node: Some(4),
                single_numa_node: true,
                fleet_summary: None,
                unlabeled_nodes: UnlabeledNodes::Deny,
                stale_facts_after_seconds: None,
            })
        );
    }

    /// What serde_path_to_error answers for `payload`, read as
    /// `parse_settings` reads it: the oracle of the key paths.
    fn keyed(payload: &[u8]) -> Result<Settings, String> {
        let mut deserializer = serde_json::Deserializer::from_slice(payload);
        let settings: Option<Settings> = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|error| {
                let path = error.path().to_string();
                let inner = error.into_inner();
                if matches!(
                    inner.classify(),
                    Category::Syntax | Category::Eof | Category::Io
                ) {
                    return format!("settings are not JSON: {inner}");
                }
                let message = inner.to_string();
                let position = format!(" at line {} column {}", inner.line(), inner.column());
                let message = message.strip_suffix(&position).unwrap_or(&message);
                match path.as_str() {
                    "." => message.to_owned(),
                    path => format!("{path}: {message}"),
                }
            })?;
        deserializer
            .end()
            .map_err(|error| format!("settings are not JSON: {error}"))?;
        Ok(settings.unwrap_or_default())
    }

    /// Settings are read straight from the bytes, and a value that does
    /// not read is named by the key serde_path_to_error names.
    #[rstest]
    #[case::none("null")]
    #[case::empty("{}")]
    #[case::an_unknown_key(r#"{"capacity": {"maxGpusPerNode": 8, "staleFacts": 1}}"#)]
    #[case::a_wrong_type(r#"{"topology": {"preferredWeight": "high"}}"#)]
    // examples/settings.yaml as JSON: every section, every key set.
    #[case::every_section(include_str!("../../tests/settings/examples-settings.json"))]
    #[case::quantities(r#"{"qos": {"cpuPerGpu": "1500m", "memoryPerGpu": "64Gi"}, "capacity": {"staleFactsAfterSeconds": 0}}"#)]
    #[case::a_string_for_a_list(r#"{"gpuResources": "nvidia.com/gpu"}"#)]
    #[case::a_list_element(r#"{"gpuResources": ["nvidia.com/gpu", 5]}"#)]
    #[case::an_object_for_a_word(r#"{"topology": {"affinity": {"mode": "off"}}}"#)]
    #[case::a_list_for_a_number(r#"{"capacity":{"maxGpusPerNode":[8]}}"#)]
    #[case::a_bad_value_last_in_its_object(r#"{"qos":{"mode":"enforce"}}"#)]
    #[case::a_negative_number(r#"{"capacity": {"fleetSummary": {"maxAgeSeconds": -5}}}"#)]
    #[case::a_bad_quantity(r#"{"qos": {"cpuPerGpu": "lots"}}"#)]
    #[case::on_a_later_line("{\n  \"qos\": {\n    \"wholeCpus\": \"yes\"\n  }\n}")]
    #[case::a_key_with_a_dot(r#"{"capacity": {"a.b": 1, "source": "cluster-view"}}"#)]
    #[case::an_escaped_key(r#"{"qo\u0073": {"mode": 1}}"#)]
    #[case::not_an_object(r#""not an object""#)]
    #[case::a_bad_value_then_broken_text(r#"{"qos": {"mode": "enforce", oops}}"#)]
    #[case::an_enum_as_an_object(r#"{"capacity": {"source": {"a": 1}}}"#)]
    #[case::an_enum_as_an_object_of_a_known_variant(r#"{"capacity": {"source": {"auto": 1}}}"#)]
    fn the_read_names_the_key_serde_path_to_error_names(#[case] payload: &str) {
        assert_eq!(
            parse_settings(payload.as_bytes()),
            keyed(payload.as_bytes())
        );
    }

    /// The places in `value` a test can put another value at: every
    /// member and element, as JSON pointers.
    fn pointers(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(members) => {
                for (key, member) in members {
                    let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                    out.push(pointer.clone());
                    pointers(member, pointer, out);
                }
            }
            serde_json::Value::Array(elements) => {
                for (index, element) in elements.iter().enumerate() {
                    let pointer = format!("{at}/{index}");
                    out.push(pointer.clone());
                    pointers(element, pointer, out);
                }
            }
            _ => {}
        }
    }

    proptest::proptest! {
        /// Any one value of every-key settings replaced by a value of
        /// another kind (or removed), compact or pretty: the same answer
        /// and the same key as serde_path_to_error.
        #[test]
        fn any_bad_value_is_named_as_serde_path_to_error_names_it(
            place in proptest::prelude::any::<proptest::sample::Index>(),
            replacement in proptest::sample::select(vec![
                json!("x"), json!(-1), json!(1.5), json!(true), json!(null), json!([]),
                json!([1, "a"]), json!({}), json!({"a": 1}), json!(""), json!(4_294_967_296_u64),
            ]),
            remove in proptest::prelude::any::<bool>(),
            pretty in proptest::prelude::any::<bool>(),
        ) {
            let mut settings: serde_json::Value =
                serde_json::from_str(include_str!("../../tests/settings/examples-settings.json"))
                    .unwrap();
            let mut places = Vec::new();
            pointers(&settings, String::new(), &mut places);
            let pointer = place.get(&places).clone();
            let (parent, last) = pointer.rsplit_once('/').unwrap();
            match settings.pointer_mut(parent).unwrap() {
                serde_json::Value::Object(members) if remove => {
                    members.remove(&last.replace("~1", "/").replace("~0", "~"));
                }
                _ => *settings.pointer_mut(&pointer).unwrap() = replacement,
            }
            let text = if pretty {
                serde_json::to_string_pretty(&settings).unwrap()
            } else {
                settings.to_string()
            };
            proptest::prop_assert_eq!(parse_settings(text.as_bytes()), keyed(text.as_bytes()));
        }
    }

    /// What a JSON tree would hide (the last of two values wins) is
    /// refused, naming the key given twice (serde_path_to_error named the
    /// object holding it). The API server never stores a key twice, so only
    /// a hand-written file for kwctl can hold one.
    #[rstest]
    #[case::at_the_top(
        r#"{"labelPrefix": "a.example.com", "labelPrefix": "b.example.com"}"#,
        "labelPrefix: duplicate field `labelPrefix`"
    )]
    #[case::in_a_section(
        r#"{"qos": {"mode": "mutate", "mode" : "mutate"}}"#,
        "qos.mode: duplicate field `mode`"
    )]
    fn a_key_given_twice_is_named(#[case] payload: &str, #[case] message: &str) {
        assert_eq!(parse_settings(payload.as_bytes()), Err(message.to_owned()));
    }

    /// (payload, message): text that is not JSON, or JSON after the
    /// settings, is said to be so.
    #[rstest]
    #[case::not_json(
        "{capacity",
        "settings are not JSON: key must be a string at line 1 column 2"
    )]
    #[case::cut_short(
        r#"{"capacity": {"#,
        "settings are not JSON: EOF while parsing an object at line 1 column 14"
    )]
    #[case::trailing_text(
        "{} x",
        "settings are not JSON: trailing characters at line 1 column 4"
    )]
    fn text_that_is_not_json_is_said_to_be(#[case] payload: &str, #[case] message: &str) {
        assert_eq!(parse_settings(payload.as_bytes()), Err(message.to_owned()));
    }

    /// (settings, the age after which facts are stale)
    #[rstest]
    #[case::three_heartbeats_by_default(json!({}), Some(5_400))]
    #[case::an_hour(json!({"capacity": {"staleFactsAfterSeconds": 3_600}}), Some(3_600))]
    #[case::zero_is_never(json!({"capacity": {"staleFactsAfterSeconds": 0}}), None)]
    fn facts_go_stale_after_the_configured_age(
        #[case] settings: serde_json::Value,
        #[case] after: Option<u64>,
    ) {
        let config = settings_from_value(settings).unwrap().config().unwrap();
        assert_eq!(config.stale_facts_after, after);
    }

    #[test]
    fn fleet_summary_defaults_to_the_example_summarizer() {
        let config = validate(json!({"capacity": {"fleetSummary": {}}})).unwrap();
        let example = FleetSummarySettings {
            namespace: "kube-system".into(),
            name: "gpu-topology-fleet".into(),
            max_age_seconds: 300,
        };
        assert_eq!(config.sources.summary, Some(example.clone()));
        // Read by default too (issue #17): `fleetSummary` only moves it.
        assert_eq!(validate(json!({})).unwrap().sources.summary, Some(example));
    }

    /// (settings, summary read first, Node list read, static limits kept)
    #[rstest]
    #[case::auto_by_default(json!({}), true, true, false)]
    #[case::auto_with_static_fallback(json!({"capacity": {"maxGpusPerNode": 8}}), true, true, true)]
    #[case::nodes_only(json!({"capacity": {"source": "nodes"}}), false, true, false)]
    #[case::summary_only(json!({"capacity": {"source": "summary"}}), true, false, false)]
    #[case::summary_elsewhere(json!({"capacity": {"source": "summary", "fleetSummary": {"namespace": "gpu"}}}), true, false, false)]
    #[case::static_never_reads_the_cluster(json!({"capacity": {"source": "static", "maxGpusPerNode": 8}}), false, false, true)]
    #[case::cluster_as_before_auto_without_limits(json!({"capacity": {"source": "cluster"}}), true, true, false)]
    #[case::nodes_ignore_static_limits(json!({"capacity": {"source": "nodes", "maxGpusPerNode": 8}}), false, true, false)]
    #[case::static_ignores_the_summary(json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "fleetSummary": {}}}), false, false, true)]
    fn sources_follow_capacity_source(
        #[case] settings: serde_json::Value,
        #[case] summary: bool,
        #[case] node_list: bool,
        #[case] static_limits: bool,
    ) {
        let config = validate(settings).unwrap();
        assert_eq!(config.sources.summary.is_some(), summary);
        assert_eq!(config.sources.node_list, node_list);
        assert_eq!(config.capacity.is_some(), static_limits);
    }

    /// (settings, init-container values): a resource left out is fitted.
    #[rstest]
    #[case::fit_app_by_default(json!({}), InitContainer::FitApp)]
    #[case::fit_app_spelled(json!({"qos": {"initContainer": "fitApp"}}), InitContainer::FitApp)]
    #[case::fixed(json!({"qos": {"initContainer": {"cpu": "2", "memory": "4Gi"}}}),
        InitContainer::Fixed { cpu: Some(Quantity::parse("2").unwrap()), memory: Some(Quantity::parse("4Gi").unwrap()) })]
    #[case::fixed_cpu_only(json!({"qos": {"initContainer": {"cpu": 8}}}),
        InitContainer::Fixed { cpu: Some(Quantity::parse("8").unwrap()), memory: None })]
    fn init_container_values_are_read(
        #[case] settings: serde_json::Value,
        #[case] expected: InitContainer<Quantity>,
    ) {
        assert_eq!(validate(settings).unwrap().qos.init_container, expected);
    }

    #[rstest]
    #[case::deny_by_default(json!({}), UnlabeledNodes::Deny)]
    #[case::allow(json!({"capacity": {"unlabeledNodes": "allow"}}), UnlabeledNodes::Allow)]
    fn unlabeled_nodes_is_read(
        #[case] settings: serde_json::Value,
        #[case] expected: UnlabeledNodes,
    ) {
        assert_eq!(validate(settings).unwrap().unlabeled_nodes, expected);
    }

    #[rstest]
    #[case::unknown_top_level_key(json!({"gpuResource": []}), "gpuResource: unknown field `gpuResource`")]
    #[case::unknown_nested_key(json!({"qos": {"cpu": "1"}}), "qos.cpu: unknown field `cpu`")]
    #[case::empty_gpu_resources(json!({"gpuResources": []}), "gpuResources: must list at least one")]
    #[case::gpu_resource_without_domain(json!({"gpuResources": ["gpu"]}), "gpuResources: \"gpu\" is not an extended resource name")]
    #[case::gpu_resource_in_kubernetes_domain(json!({"gpuResources": ["kubernetes.io/gpu"]}), "gpuResources: \"kubernetes.io/gpu\"")]
    #[case::gpu_resource_bad_name(json!({"gpuResources": ["nvidia.com/-gpu"]}), "gpuResources: \"nvidia.com/-gpu\"")]
    #[case::gpu_resource_twice(json!({"gpuResources": ["amd.com/gpu", "amd.com/gpu"]}), "gpuResources: \"amd.com/gpu\" is listed twice")]
    #[case::gpu_resources_not_a_list(json!({"gpuResources": "nvidia.com/gpu"}), "gpuResources: invalid type")]
    #[case::label_prefix_uppercase(json!({"labelPrefix": "GPU.io"}), "labelPrefix: invalid label prefix \"GPU.io\"")]
    #[case::exempt_namespace_invalid(json!({"exemptNamespaces": ["Kube_System"]}), "exemptNamespaces: \"Kube_System\" is not a valid namespace name")]
    #[case::qos_mode_unknown(json!({"qos": {"mode": "enforce"}}), "qos.mode: unknown variant `enforce`")]
    #[case::cpu_per_gpu_garbage(json!({"qos": {"cpuPerGpu": "abc"}}), "qos.cpuPerGpu: \"abc\" is not a Kubernetes quantity")]
    #[case::cpu_per_gpu_zero(json!({"qos": {"cpuPerGpu": "0"}}), "qos.cpuPerGpu: \"0\" must be more than zero")]
    #[case::cpu_per_gpu_negative(json!({"qos": {"cpuPerGpu": -2}}), "qos.cpuPerGpu: \"-2\" must not be negative")]
    #[case::memory_per_gpu_millibytes(json!({"qos": {"memoryPerGpu": "100m"}}), "qos.memoryPerGpu: \"100m\" is not a whole number of bytes")]
    #[case::sidecar_cpu_garbage(json!({"qos": {"sidecarCpu": "1 core"}}), "qos.sidecarCpu: \"1 core\" is not a Kubernetes quantity")]
    #[case::sidecar_memory_out_of_range(json!({"qos": {"sidecarMemory": "1e400"}}), "qos.sidecarMemory: \"1e400\" is out of range")]
    #[case::quantity_of_wrong_type(json!({"qos": {"sidecarMemory": true}}), "qos.sidecarMemory: expected a quantity string")]
    #[case::whole_cpus_not_bool(json!({"qos": {"wholeCpus": "yes"}}), "qos.wholeCpus: invalid type")]
    #[case::round_to_whole_cores_not_bool(json!({"qos": {"roundToWholeCores": "yes"}}), "qos.roundToWholeCores: invalid type")]
    #[case::round_written_cpus_is_not_a_setting(json!({"qos": {"roundWrittenCpus": true}}), "qos.roundWrittenCpus: unknown field `roundWrittenCpus`")]
    #[case::scope_unknown(json!({"topology": {"scope": "node"}}), "topology.scope: \"node\" is not valid: expected one of container, pod")]
    #[case::alignment_unknown(json!({"topology": {"alignment": "socket"}}), "topology.alignment: \"socket\" is not valid: expected one of numa, nvlink, node")]
    #[case::affinity_unknown(json!({"topology": {"affinity": "soft"}}), "topology.affinity: unknown variant `soft`")]
    #[case::weight_zero(json!({"topology": {"preferredWeight": 0}}), "topology.preferredWeight: 0 is out of range")]
    #[case::weight_too_high(json!({"topology": {"preferredWeight": 101}}), "topology.preferredWeight: 101 is out of range")]
    #[case::weight_not_a_number(json!({"topology": {"preferredWeight": "high"}}), "topology.preferredWeight: invalid type")]
    #[case::summary_namespace_invalid(json!({"capacity": {"fleetSummary": {"namespace": "Kube"}}}), "capacity.fleetSummary.namespace: \"Kube\" is not a valid namespace name")]
    #[case::summary_name_invalid(json!({"capacity": {"fleetSummary": {"name": "fleet/x"}}}), "capacity.fleetSummary.name: \"fleet/x\" is not a valid ConfigMap name")]
    #[case::summary_max_age_zero(json!({"capacity": {"fleetSummary": {"maxAgeSeconds": 0}}}), "capacity.fleetSummary.maxAgeSeconds: must be at least 1")]
    #[case::stale_facts_sooner_than_a_heartbeat(json!({"capacity": {"staleFactsAfterSeconds": 600}}), "capacity.staleFactsAfterSeconds: 600 is shorter than the labeler's heartbeat interval (1800 s)")]
    #[case::stale_facts_negative(json!({"capacity": {"staleFactsAfterSeconds": -1}}), "capacity.staleFactsAfterSeconds: invalid value")]
    #[case::summary_max_age_negative(json!({"capacity": {"fleetSummary": {"maxAgeSeconds": -5}}}), "capacity.fleetSummary.maxAgeSeconds: invalid value")]
    #[case::summary_unknown_key(json!({"capacity": {"fleetSummary": {"ttl": 5}}}), "capacity.fleetSummary.ttl: unknown field `ttl`")]
    #[case::max_per_node_zero(json!({"capacity": {"maxGpusPerNode": 0}}), "capacity.maxGpusPerNode: must be at least 1")]
    #[case::max_per_numa_zero(json!({"capacity": {"maxGpusPerNumaNode": 0}}), "capacity.maxGpusPerNumaNode: must be at least 1")]
    #[case::max_negative(json!({"capacity": {"maxGpusPerNode": -1}}), "capacity.maxGpusPerNode: invalid value: integer `-1`")]
    #[case::numa_above_node(json!({"capacity": {"maxGpusPerNode": 4, "maxGpusPerNumaNode": 8}}), "capacity.maxGpusPerNumaNode: 8 is more than capacity.maxGpusPerNode 4")]
    #[case::single_numa_without_numa_size(json!({"capacity": {"singleNumaNode": true}}), "capacity.singleNumaNode: true needs capacity.maxGpusPerNumaNode")]
    #[case::static_without_limits(json!({"capacity": {"source": "static"}}), "capacity.source: static needs capacity.maxGpusPerNode or capacity.maxGpusPerNumaNode")]
    #[case::source_unknown(json!({"capacity": {"source": "cluster-view"}}), "capacity.source: unknown variant `cluster-view`")]
    #[case::unlabeled_nodes_unknown(json!({"capacity": {"unlabeledNodes": "maybe"}}), "capacity.unlabeledNodes: unknown variant `maybe`, expected `deny` or `allow`")]
    #[case::init_container_word_unknown(json!({"qos": {"initContainer": "fit"}}), "qos.initContainer: \"fit\" is not valid: expected fitApp, or fixed values")]
    #[case::init_container_not_an_object(json!({"qos": {"initContainer": 2}}), "qos.initContainer: 2 is not valid: expected fitApp")]
    #[case::init_container_unknown_key(json!({"qos": {"initContainer": {"gpu": "1"}}}), "qos.initContainer: unknown field `gpu`, expected `cpu` or `memory`")]
    #[case::init_container_cpu_garbage(json!({"qos": {"initContainer": {"cpu": "two"}}}), "qos.initContainer.cpu: \"two\" is not a Kubernetes quantity")]
    #[case::init_container_memory_millibytes(json!({"qos": {"initContainer": {"memory": "100m"}}}), "qos.initContainer.memory: \"100m\" is not a whole number of bytes")]
    #[case::init_container_cpu_zero(json!({"qos": {"initContainer": {"cpu": "0"}}}), "qos.initContainer.cpu: \"0\" must be more than zero")]
    #[case::unknown_capacity_key(json!({"capacity": {"maxGpus": 8}}), "capacity.maxGpus: unknown field `maxGpus`")]
    // A key that another key's value ignores is still checked in itself, and
    // values that contradict each other are refused under every source.
    #[case::weight_out_of_range_under_required(json!({"topology": {"affinity": "required", "preferredWeight": 0}}), "topology.preferredWeight: 0 is out of range")]
    #[case::alignment_unknown_under_off(json!({"topology": {"affinity": "off", "alignment": "socket"}}), "topology.alignment: \"socket\" is not valid")]
    #[case::numa_above_node_under_nodes(json!({"capacity": {"source": "nodes", "maxGpusPerNode": 4, "maxGpusPerNumaNode": 8}}), "capacity.maxGpusPerNumaNode: 8 is more than capacity.maxGpusPerNode 4")]
    #[case::max_zero_under_summary(json!({"capacity": {"source": "summary", "maxGpusPerNode": 0}}), "capacity.maxGpusPerNode: must be at least 1")]
    #[case::summary_namespace_invalid_under_static(json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "fleetSummary": {"namespace": "Kube"}}}), "capacity.fleetSummary.namespace: \"Kube\" is not a valid namespace name")]
    #[case::single_numa_without_numa_size_under_static(json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "singleNumaNode": true}}), "capacity.singleNumaNode: true needs capacity.maxGpusPerNumaNode")]
    #[case::qos_mode_true(json!({"qos": {"mode": true}}), "qos.mode: invalid type: boolean `true`")]
    #[case::affinity_true(json!({"topology": {"affinity": true}}), "topology.affinity: invalid type: boolean `true`")]
    fn invalid_settings_name_the_key(#[case] settings: serde_json::Value, #[case] expected: &str) {
        let message = validate(settings).unwrap_err();
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }

    /// (settings with a key that another key's value ignores, the same
    /// settings without it): accepted, and read exactly as without it, so
    /// the key left over cannot change an answer. A refusal would stop the
    /// policy-server (the module's comment).
    #[rstest]
    #[case::weight_under_required(
        json!({"topology": {"affinity": "required", "preferredWeight": 10}}),
        json!({"topology": {"affinity": "required"}}))]
    #[case::weight_under_off(
        json!({"topology": {"affinity": "off", "preferredWeight": 100}}),
        json!({"topology": {"affinity": "off"}}))]
    #[case::alignment_under_off(
        json!({"topology": {"affinity": "off", "alignment": "nvlink"}}),
        json!({"topology": {"affinity": "off"}}))]
    #[case::static_limits_under_nodes(
        json!({"capacity": {"source": "nodes", "maxGpusPerNode": 8, "maxGpusPerNumaNode": 4, "singleNumaNode": true}}),
        json!({"capacity": {"source": "nodes"}}))]
    #[case::static_limits_under_summary(
        json!({"capacity": {"source": "summary", "maxGpusPerNumaNode": 4, "singleNumaNode": true}}),
        json!({"capacity": {"source": "summary"}}))]
    #[case::static_limits_under_cluster(
        json!({"capacity": {"source": "cluster", "maxGpusPerNode": 8}}),
        json!({"capacity": {"source": "cluster"}}))]
    #[case::single_numa_node_alone_under_nodes(
        json!({"capacity": {"source": "nodes", "singleNumaNode": true}}),
        json!({"capacity": {"source": "nodes"}}))]
    #[case::fleet_summary_under_static(
        json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "fleetSummary": {"namespace": "gpu"}}}),
        json!({"capacity": {"source": "static", "maxGpusPerNode": 8}}))]
    #[case::fleet_summary_under_nodes(
        json!({"capacity": {"source": "nodes", "fleetSummary": {}}}),
        json!({"capacity": {"source": "nodes"}}))]
    // The guide's "move to required", from examples/policy.yaml's settings.
    #[case::the_guides_move_to_required(
        json!({"topology": {"scope": "pod", "alignment": "numa", "affinity": "required", "preferredWeight": 100}}),
        json!({"topology": {"scope": "pod", "alignment": "numa", "affinity": "required"}}))]
    // The MIG and time-slicing advice on top of the quick start's settings.
    #[case::the_readmes_shared_gpu_advice(
        json!({"topology": {"alignment": "numa", "affinity": "off"},
               "capacity": {"source": "static", "maxGpusPerNode": 56, "fleetSummary": {}}}),
        json!({"topology": {"affinity": "off"},
               "capacity": {"source": "static", "maxGpusPerNode": 56}}))]
    fn keys_without_effect_are_accepted_and_ignored(
        #[case] with_leftover: serde_json::Value,
        #[case] without: serde_json::Value,
    ) {
        let read = validate(with_leftover.clone())
            .unwrap_or_else(|message| panic!("{with_leftover} refused: {message}"));
        assert_eq!(read, validate(without).unwrap());
        let response = validation_response(with_leftover.to_string().as_bytes());
        assert!(response.valid, "{response:?}");
    }

    /// kubectl reads an unquoted `off` as YAML 1.1's boolean false (the
    /// comment of `off_word`): it means `off`.
    #[rstest]
    #[case::qos_mode(json!({"qos": {"mode": false}}), json!({"qos": {"mode": "off"}}))]
    #[case::affinity(json!({"topology": {"affinity": false, "alignment": "node"}}), json!({"topology": {"affinity": "off"}}))]
    fn false_is_read_as_off(
        #[case] as_kubectl_sends_it: serde_json::Value,
        #[case] as_written: serde_json::Value,
    ) {
        assert_eq!(
            validate(as_kubectl_sends_it).unwrap(),
            validate(as_written).unwrap()
        );
    }

    /// (settings, source, static limits kept)
    #[rstest]
    #[case::no_capacity(json!({}), CapacitySource::Auto, false)]
    #[case::auto_with_limits(json!({"capacity": {"maxGpusPerNode": 8}}), CapacitySource::Auto, true)]
    #[case::cluster_only(json!({"capacity": {"source": "cluster"}}), CapacitySource::Cluster, false)]
    #[case::static_limits(json!({"capacity": {"source": "static", "maxGpusPerNumaNode": 4}}), CapacitySource::Static, true)]
    fn capacity_source_and_limits(
        #[case] settings: serde_json::Value,
        #[case] source: CapacitySource,
        #[case] has_limits: bool,
    ) {
        let config = validate(settings).unwrap();
        assert_eq!(config.capacity_source, source);
        assert_eq!(config.capacity.is_some(), has_limits);
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let message = validate(json!({
            "labelPrefix": "Bad Prefix",
            "qos": {"cpuPerGpu": "x", "memoryPerGpu": "y"}
        }))
        .unwrap_err();
        for key in ["labelPrefix", "qos.cpuPerGpu", "qos.memoryPerGpu"] {
            assert!(message.contains(key), "{message:?} lacks {key}");
        }
    }

    #[rstest]
    #[case::valid(json!({}), true, None)]
    #[case::invalid(json!({"qos": {"mode": "x"}}), false, Some("qos.mode"))]
    #[case::not_json(json!("not an object"), false, Some("invalid type"))]
    fn validate_settings_answers_without_trapping(
        #[case] settings: serde_json::Value,
        #[case] valid: bool,
        #[case] message_part: Option<&str>,
    ) {
        let response = validation_response(settings.to_string().as_bytes());
        assert_eq!(response.valid, valid);
        match message_part {
            Some(part) => assert!(response.message.unwrap().contains(part)),
            None => assert_eq!(response.message, None),
        }
    }
}
