//! Label keys, value encoding and parsing: the contract between the labeler
//! (writer) and the policy (reader).
//!
//! Integer values are plain decimal strings so that node affinity can compare
//! them with `Gt`/`Lt`. A label whose value is unknown is absent, never guessed:
//! every field of [`NodeTopology`] is an `Option`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Prefix used when the operator configures none.
pub const DEFAULT_LABEL_PREFIX: &str = "gpu-topology.io";

/// Kubernetes limits a label prefix (a DNS subdomain) to 253 characters.
const MAX_PREFIX_LEN: usize = 253;
/// Kubernetes limits a label value, and the name part of a key, to 63 characters.
const MAX_LABEL_VALUE_LEN: usize = 63;
/// Longest decimal string we accept for a count; `u32::MAX` has 10 digits.
const MAX_COUNT_DIGITS: usize = 10;

/// Why a prefix, key or label value was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelError {
    /// The prefix is not a valid DNS subdomain.
    InvalidPrefix {
        prefix: String,
        reason: &'static str,
    },
    /// A label under our prefix carries a value that does not parse.
    InvalidValue {
        key: String,
        value: String,
        expected: &'static str,
    },
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelError::InvalidPrefix { prefix, reason } => {
                write!(f, "invalid label prefix {prefix:?}: {reason}")
            }
            LabelError::InvalidValue {
                key,
                value,
                expected,
            } => write!(f, "label {key}={value:?} is invalid: expected {expected}"),
        }
    }
}

impl std::error::Error for LabelError {}

/// A validated label prefix (DNS subdomain), e.g. `gpu-topology.io`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelPrefix(String);

impl LabelPrefix {
    /// Validates `prefix` as a Kubernetes label prefix (RFC 1123 DNS subdomain).
    pub fn new(prefix: &str) -> Result<Self, LabelError> {
        let invalid = |reason| LabelError::InvalidPrefix {
            prefix: prefix.to_owned(),
            reason,
        };
        if prefix.is_empty() {
            return Err(invalid("it is empty"));
        }
        if prefix.len() > MAX_PREFIX_LEN {
            return Err(invalid("it is longer than 253 characters"));
        }
        for segment in prefix.split('.') {
            if segment.is_empty() {
                return Err(invalid(
                    "it has an empty DNS label (leading, trailing or double dot)",
                ));
            }
            if segment.len() > MAX_LABEL_VALUE_LEN {
                return Err(invalid("a DNS label in it is longer than 63 characters"));
            }
            if !segment
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            {
                return Err(invalid(
                    "only lowercase letters, digits, '-' and '.' are allowed",
                ));
            }
            if segment.starts_with('-') || segment.ends_with('-') {
                return Err(invalid("a DNS label in it starts or ends with '-'"));
            }
        }
        Ok(Self(prefix.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full label key for `key` under this prefix, e.g. `gpu-topology.io/gpus`.
    pub fn key(&self, key: LabelKey) -> String {
        // Concatenated, not format!: this runs on every admission, and the
        // formatting machinery costs several times more in Wasm.
        [self.0.as_str(), "/", key.name()].concat()
    }

    /// The [`LabelKey`] that `full_key` names under this prefix, if any.
    pub fn parse_key(&self, full_key: &str) -> Option<LabelKey> {
        let name = full_key.strip_prefix(self.0.as_str())?.strip_prefix('/')?;
        LabelKey::from_name(name)
    }
}

impl Default for LabelPrefix {
    fn default() -> Self {
        Self(DEFAULT_LABEL_PREFIX.to_owned())
    }
}

impl fmt::Display for LabelPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every label of the contract. The name is the part after `<prefix>/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelKey {
    /// GPUs on the node.
    Gpus,
    /// GPUs on the NUMA node that has the most.
    GpusPerNumaMax,
    /// NUMA nodes that hold at least one GPU.
    NumaNodes,
    /// Largest group of GPUs all pairwise linked by NVLink/NVSwitch/XGMI.
    NvlinkGroupMax,
    /// Largest group of GPUs behind one PCIe switch (PIX/PXB).
    PcieSwitchGroupMax,
    /// Smallest CPU count of a NUMA node that holds GPUs.
    CpusPerNuma,
    /// Smallest memory (GiB, rounded down) of a NUMA node that holds GPUs.
    MemoryPerNumaGib,
    /// Fastest GPU-to-GPU interconnect: `nvswitch`, `nvlink`, `xgmi` or `pcie`.
    Interconnect,
    /// The kubelet's `topologyManagerPolicy`.
    TopologyManagerPolicy,
    /// The kubelet's `topologyManagerScope`.
    TopologyManagerScope,
    /// The kubelet's `cpuManagerPolicy`.
    CpuManagerPolicy,
}

impl LabelKey {
    /// Whether the fit arithmetic ([`crate::fit`]) reads this label. The
    /// others describe the node for people and future use; a value of theirs
    /// that this version cannot read (a newer labeler's) leaves that field
    /// unknown instead of leaving the whole node out.
    pub const fn decides_fit(self) -> bool {
        matches!(
            self,
            LabelKey::Gpus
                | LabelKey::GpusPerNumaMax
                | LabelKey::NvlinkGroupMax
                | LabelKey::TopologyManagerPolicy
        )
    }

    pub const ALL: [LabelKey; 11] = [
        LabelKey::Gpus,
        LabelKey::GpusPerNumaMax,
        LabelKey::NumaNodes,
        LabelKey::NvlinkGroupMax,
        LabelKey::PcieSwitchGroupMax,
        LabelKey::CpusPerNuma,
        LabelKey::MemoryPerNumaGib,
        LabelKey::Interconnect,
        LabelKey::TopologyManagerPolicy,
        LabelKey::TopologyManagerScope,
        LabelKey::CpuManagerPolicy,
    ];

    /// The key's name under the prefix.
    pub const fn name(self) -> &'static str {
        match self {
            LabelKey::Gpus => "gpus",
            LabelKey::GpusPerNumaMax => "gpus-per-numa-max",
            LabelKey::NumaNodes => "numa-nodes",
            LabelKey::NvlinkGroupMax => "nvlink-group-max",
            LabelKey::PcieSwitchGroupMax => "pcie-switch-group-max",
            LabelKey::CpusPerNuma => "cpus-per-numa",
            LabelKey::MemoryPerNumaGib => "memory-per-numa-gib",
            LabelKey::Interconnect => "interconnect",
            LabelKey::TopologyManagerPolicy => "topology-manager-policy",
            LabelKey::TopologyManagerScope => "topology-manager-scope",
            LabelKey::CpuManagerPolicy => "cpu-manager-policy",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.name() == name)
    }
}

/// Declares a string-valued label enum with its exact wire values, so the
/// encoding is written once for `as_str` and `FromStr`.
macro_rules! label_enum {
    ($(#[$meta:meta])* $name:ident, $expected:literal { $($variant:ident => $value:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Human-readable list of the accepted values, for error messages.
            pub const EXPECTED: &'static str = $expected;

            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $value),+ }
            }
        }

        impl FromStr for $name {
            type Err = ();
            fn from_str(value: &str) -> Result<Self, ()> {
                Self::ALL.iter().copied().find(|v| v.as_str() == value).ok_or(())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

label_enum!(
    /// Fastest GPU-to-GPU interconnect on the node.
    Interconnect, "one of nvswitch, nvlink, xgmi, pcie" {
        NvSwitch => "nvswitch",
        NvLink => "nvlink",
        Xgmi => "xgmi",
        Pcie => "pcie",
    }
);

label_enum!(
    /// The kubelet's `topologyManagerPolicy`, as spelled in KubeletConfiguration.
    TopologyManagerPolicy, "one of none, best-effort, restricted, single-numa-node" {
        None => "none",
        BestEffort => "best-effort",
        Restricted => "restricted",
        SingleNumaNode => "single-numa-node",
    }
);

label_enum!(
    /// The kubelet's `topologyManagerScope`.
    TopologyManagerScope, "one of container, pod" {
        Container => "container",
        Pod => "pod",
    }
);

label_enum!(
    /// The kubelet's `cpuManagerPolicy`.
    CpuManagerPolicy, "one of none, static" {
        None => "none",
        Static => "static",
    }
);

/// What a node's labels say about its GPU topology. `None` means unknown, and an
/// unknown value is never published.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeTopology {
    pub gpus: Option<u32>,
    pub gpus_per_numa_max: Option<u32>,
    pub numa_nodes: Option<u32>,
    pub nvlink_group_max: Option<u32>,
    pub pcie_switch_group_max: Option<u32>,
    pub cpus_per_numa: Option<u32>,
    pub memory_per_numa_gib: Option<u32>,
    pub interconnect: Option<Interconnect>,
    pub topology_manager_policy: Option<TopologyManagerPolicy>,
    pub topology_manager_scope: Option<TopologyManagerScope>,
    pub cpu_manager_policy: Option<CpuManagerPolicy>,
}

impl NodeTopology {
    /// The integer value of a count label, or `None` when unknown or when
    /// `key` is not a count.
    pub fn count(&self, key: LabelKey) -> Option<u32> {
        match key {
            LabelKey::Gpus => self.gpus,
            LabelKey::GpusPerNumaMax => self.gpus_per_numa_max,
            LabelKey::NumaNodes => self.numa_nodes,
            LabelKey::NvlinkGroupMax => self.nvlink_group_max,
            LabelKey::PcieSwitchGroupMax => self.pcie_switch_group_max,
            LabelKey::CpusPerNuma => self.cpus_per_numa,
            LabelKey::MemoryPerNumaGib => self.memory_per_numa_gib,
            LabelKey::Interconnect
            | LabelKey::TopologyManagerPolicy
            | LabelKey::TopologyManagerScope
            | LabelKey::CpuManagerPolicy => None,
        }
    }

    /// The value of an enumerated label, or `None` when unknown or when `key`
    /// is a count.
    pub fn word(&self, key: LabelKey) -> Option<&'static str> {
        match key {
            LabelKey::Interconnect => self.interconnect.map(Interconnect::as_str),
            LabelKey::TopologyManagerPolicy => self
                .topology_manager_policy
                .map(TopologyManagerPolicy::as_str),
            LabelKey::TopologyManagerScope => self
                .topology_manager_scope
                .map(TopologyManagerScope::as_str),
            LabelKey::CpuManagerPolicy => self.cpu_manager_policy.map(CpuManagerPolicy::as_str),
            _ => None,
        }
    }

    /// The value of `key` as its label string, or `None` when unknown.
    pub fn value(&self, key: LabelKey) -> Option<String> {
        self.count(key)
            .map(|n| n.to_string())
            .or_else(|| self.word(key).map(str::to_owned))
    }

    /// The labels to publish, keyed by full label key. Unknown values are left out.
    pub fn to_labels(&self, prefix: &LabelPrefix) -> BTreeMap<String, String> {
        LabelKey::ALL
            .into_iter()
            .filter_map(|key| self.value(key).map(|value| (prefix.key(key), value)))
            .collect()
    }

    /// Sets one field from its label string, validating the value. A value
    /// that does not parse is an error for a label the fit reads
    /// ([`LabelKey::decides_fit`]); for the others the field stays unknown.
    pub fn set(&mut self, key: LabelKey, full_key: &str, value: &str) -> Result<(), LabelError> {
        match self.set_strictly(key, full_key, value) {
            Err(_) if !key.decides_fit() => Ok(()),
            result => result,
        }
    }

    /// [`NodeTopology::set`], failing on any value that does not parse.
    pub fn set_strictly(
        &mut self,
        key: LabelKey,
        full_key: &str,
        value: &str,
    ) -> Result<(), LabelError> {
        let invalid = |expected| LabelError::InvalidValue {
            key: full_key.to_owned(),
            value: value.to_owned(),
            expected,
        };
        let count = || parse_count(value).ok_or_else(|| invalid("a non-negative decimal integer"));
        match key {
            LabelKey::Gpus => self.gpus = Some(count()?),
            LabelKey::GpusPerNumaMax => self.gpus_per_numa_max = Some(count()?),
            LabelKey::NumaNodes => self.numa_nodes = Some(count()?),
            LabelKey::NvlinkGroupMax => self.nvlink_group_max = Some(count()?),
            LabelKey::PcieSwitchGroupMax => self.pcie_switch_group_max = Some(count()?),
            LabelKey::CpusPerNuma => self.cpus_per_numa = Some(count()?),
            LabelKey::MemoryPerNumaGib => self.memory_per_numa_gib = Some(count()?),
            LabelKey::Interconnect => {
                self.interconnect = Some(
                    value
                        .parse()
                        .map_err(|()| invalid(Interconnect::EXPECTED))?,
                )
            }
            LabelKey::TopologyManagerPolicy => {
                self.topology_manager_policy = Some(
                    value
                        .parse()
                        .map_err(|()| invalid(TopologyManagerPolicy::EXPECTED))?,
                )
            }
            LabelKey::TopologyManagerScope => {
                self.topology_manager_scope = Some(
                    value
                        .parse()
                        .map_err(|()| invalid(TopologyManagerScope::EXPECTED))?,
                )
            }
            LabelKey::CpuManagerPolicy => {
                self.cpu_manager_policy = Some(
                    value
                        .parse()
                        .map_err(|()| invalid(CpuManagerPolicy::EXPECTED))?,
                )
            }
        }
        Ok(())
    }

    /// Reads the topology from a node's labels. Labels outside `prefix`, and
    /// names under it that this version does not know (a newer labeler), are
    /// ignored; a malformed value of a label the fit reads is an error naming
    /// it, one of another label leaves that field unknown ([`Self::set`]).
    pub fn from_labels<'a, I>(prefix: &LabelPrefix, labels: I) -> Result<Self, LabelError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut topology = NodeTopology::default();
        for (full_key, value) in labels {
            if let Some(key) = prefix.parse_key(full_key) {
                topology.set(key, full_key, value)?;
            }
        }
        Ok(topology)
    }

    /// True when no label of the contract is present.
    pub fn is_empty(&self) -> bool {
        *self == NodeTopology::default()
    }
}

/// Parses a count written as plain decimal digits (no sign, no spaces), the
/// encoding the contract uses for every integer label.
pub fn parse_count(value: &str) -> Option<u32> {
    if value.is_empty()
        || value.len() > MAX_COUNT_DIGITS
        || !value.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn dgx_a100() -> NodeTopology {
        NodeTopology {
            gpus: Some(8),
            gpus_per_numa_max: Some(2),
            numa_nodes: Some(4),
            nvlink_group_max: Some(8),
            pcie_switch_group_max: Some(2),
            cpus_per_numa: Some(32),
            memory_per_numa_gib: Some(251),
            interconnect: Some(Interconnect::NvSwitch),
            topology_manager_policy: Some(TopologyManagerPolicy::SingleNumaNode),
            topology_manager_scope: Some(TopologyManagerScope::Pod),
            cpu_manager_policy: Some(CpuManagerPolicy::Static),
        }
    }

    #[test]
    fn labels_round_trip_through_the_contract() {
        let prefix = LabelPrefix::default();
        let labels = dgx_a100().to_labels(&prefix);
        assert_eq!(labels.len(), LabelKey::ALL.len());
        assert_eq!(labels["gpu-topology.io/gpus-per-numa-max"], "2");
        assert_eq!(
            labels["gpu-topology.io/topology-manager-policy"],
            "single-numa-node"
        );
        let parsed = NodeTopology::from_labels(
            &prefix,
            labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .unwrap();
        assert_eq!(parsed, dgx_a100());
    }

    #[test]
    fn unknown_values_are_left_out() {
        let topology = NodeTopology {
            gpus: Some(2),
            ..NodeTopology::default()
        };
        let labels = topology.to_labels(&LabelPrefix::default());
        assert_eq!(labels.len(), 1);
        assert_eq!(labels["gpu-topology.io/gpus"], "2");
    }

    #[test]
    fn foreign_and_future_labels_are_ignored() {
        let prefix = LabelPrefix::default();
        let parsed = NodeTopology::from_labels(
            &prefix,
            [
                ("kubernetes.io/hostname", "n1"),
                ("gpu-topology.io/some-future-key", "x"),
                ("gpu-topology.iox/gpus", "not-ours"),
                ("gpu-topology.io/gpus", "4"),
            ],
        )
        .unwrap();
        assert_eq!(parsed.gpus, Some(4));
        assert_eq!(parsed.gpus_per_numa_max, None);
    }

    #[rstest]
    #[case::negative("gpu-topology.io/gpus", "-1")]
    #[case::plus_sign("gpu-topology.io/gpus", "+4")]
    #[case::spaces("gpu-topology.io/gpus", " 4")]
    #[case::empty("gpu-topology.io/gpus", "")]
    #[case::overflow("gpu-topology.io/gpus", "99999999999")]
    #[case::wrong_case_policy("gpu-topology.io/topology-manager-policy", "SingleNumaNode")]
    #[case::nvlink_not_a_count("gpu-topology.io/nvlink-group-max", "all")]
    #[case::per_numa_not_a_count("gpu-topology.io/gpus-per-numa-max", "4.0")]
    fn malformed_values_the_fit_reads_are_errors_naming_the_label(
        #[case] key: &str,
        #[case] value: &str,
    ) {
        let err = NodeTopology::from_labels(&LabelPrefix::default(), [(key, value)]).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(key), "{message}");
        assert!(message.contains(&format!("{value:?}")), "{message}");
    }

    /// Labels the fit does not read: a value this version cannot read (a
    /// newer labeler's word) leaves the field unknown, and the node counts.
    #[rstest]
    #[case::newer_interconnect("gpu-topology.io/interconnect", "nvlink-c2c")]
    #[case::unknown_scope("gpu-topology.io/topology-manager-scope", "node")]
    #[case::unknown_cpu_policy("gpu-topology.io/cpu-manager-policy", "dynamic")]
    #[case::numa_nodes_not_a_count("gpu-topology.io/numa-nodes", "four")]
    fn unreadable_informational_values_are_unknown(#[case] key: &str, #[case] value: &str) {
        let labels = [("gpu-topology.io/gpus", "8"), (key, value)];
        let parsed = NodeTopology::from_labels(&LabelPrefix::default(), labels).unwrap();
        assert_eq!(
            parsed,
            NodeTopology {
                gpus: Some(8),
                ..NodeTopology::default()
            }
        );
        let mut strict = NodeTopology::default();
        assert!(strict
            .set_strictly(LabelPrefix::default().parse_key(key).unwrap(), key, value)
            .is_err());
    }

    #[rstest]
    #[case::default("gpu-topology.io")]
    #[case::single_label("gpu")]
    #[case::nested("topology.gpu.example.com")]
    fn valid_prefixes(#[case] prefix: &str) {
        assert_eq!(LabelPrefix::new(prefix).unwrap().as_str(), prefix);
    }

    #[rstest]
    #[case::empty("")]
    #[case::uppercase("GPU-Topology.io")]
    #[case::slash("gpu-topology.io/x")]
    #[case::leading_dot(".gpu-topology.io")]
    #[case::double_dot("gpu..io")]
    #[case::leading_dash("-gpu.io")]
    #[case::underscore("gpu_topology.io")]
    fn invalid_prefixes(#[case] prefix: &str) {
        let err = LabelPrefix::new(prefix).unwrap_err();
        assert!(err.to_string().contains(&format!("{prefix:?}")), "{err}");
    }

    #[test]
    fn too_long_prefix_is_rejected() {
        let long = vec!["a".repeat(63); 5].join(".");
        assert!(LabelPrefix::new(&long).is_err());
    }

    #[test]
    fn every_label_value_is_a_valid_kubernetes_label_value() {
        let labels = dgx_a100().to_labels(&LabelPrefix::default());
        for value in labels.values() {
            assert!(value.len() <= MAX_LABEL_VALUE_LEN);
            assert!(value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_'));
        }
    }
}
