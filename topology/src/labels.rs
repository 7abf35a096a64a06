//! Label keys, value encoding and parsing: the contract between the labeler
//! (writer) and the policy (reader).
//!
//! Integer values are plain decimal strings so that node affinity can compare
//! them with `Gt`/`Lt`. A label whose value is unknown is absent, never guessed:
//! every field of [`NodeTopology`] is an `Option`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

mod count_list;
pub mod distances;

pub use count_list::{format_count_list, parse_count_list};
pub use distances::{format_numa_distances, parse_numa_distances, DistanceChunks};

/// Prefix used when the operator configures none.
pub const DEFAULT_LABEL_PREFIX: &str = "gpu-topology.io";

/// Kubernetes limits a label value, and the name part of a key, to 63 characters.
pub(crate) const MAX_LABEL_VALUE_LEN: usize = 63;
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
        match crate::names::dns_subdomain_fault(prefix) {
            Some(reason) => Err(LabelError::InvalidPrefix {
                prefix: prefix.to_owned(),
                reason,
            }),
            None => Ok(Self(prefix.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full label key for `key` under this prefix, e.g. `gpu-topology.io/gpus`.
    pub fn key(&self, key: LabelKey) -> String {
        self.named_key(key.name())
    }

    /// The full label key of the label named `name` under this prefix.
    fn named_key(&self, name: &str) -> String {
        // Concatenated, not format!: this runs on every admission, and the
        // formatting machinery costs several times more in Wasm.
        [self.0.as_str(), "/", name].concat()
    }

    /// The chunk of the distances ([`distances::chunk_of`]) that `full_key`
    /// holds under this prefix, if any.
    pub fn parse_distance_chunk(&self, full_key: &str) -> Option<usize> {
        distances::chunk_of(self.name_of(full_key)?)
    }

    /// The [`LabelKey`] that `full_key` names under this prefix, if any.
    pub fn parse_key(&self, full_key: &str) -> Option<LabelKey> {
        LabelKey::from_name(self.name_of(full_key)?)
    }

    /// The full label key of the per-NUMA counts of device resource
    /// `resource` ([`device_key_name`]); `None` when it cannot be one.
    pub fn device_key(&self, resource: &str) -> Option<String> {
        device_key_name(resource).map(|name| [self.0.as_str(), "/", &name].concat())
    }

    /// The device resource whose per-NUMA counts `full_key` holds under this
    /// prefix ([`device_resource_of`]), if any.
    pub fn parse_device_key(&self, full_key: &str) -> Option<String> {
        device_resource_of(self.name_of(full_key)?)
    }

    /// The name part of `full_key` when it is under this prefix.
    fn name_of<'k>(&self, full_key: &'k str) -> Option<&'k str> {
        full_key.strip_prefix(self.0.as_str())?.strip_prefix('/')
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
    /// GPUs on each NUMA node of the machine, in NUMA id order (`4.4`).
    NumaGpus,
    /// Online CPUs on each NUMA node, reserved ones included (`56.56`).
    NumaCpus,
    /// CPUs the kubelet reserves (CPU Manager `static`) on each NUMA node (`2.0`).
    NumaReservedCpus,
    /// Physical cores holding at least one reserved CPU on each NUMA node
    /// (`1.0`); only with SMT (`threads-per-core` above 1) and the static CPU
    /// Manager, where `full-pcpus-only` keeps the free siblings of such cores.
    NumaReservedCores,
    /// The socket (`physical_package_id`) of each NUMA node's CPUs (`0.1`;
    /// `0` for a NUMA node without CPUs, whose socket nothing reads).
    NumaSockets,
    /// Hardware threads per physical core (SMT): `2` with Hyper-Threading.
    ThreadsPerCore,
    /// Regular memory (MiB) the Memory Manager can allocate on each NUMA
    /// node: MemTotal less hugepages and reserved memory, rounded down to
    /// whole GiB ([`published_numa_memory_mib`]), so that machines of one
    /// kind whose firmware keeps a few MiB more or less share a shape.
    /// Readers take it as at least the value and less than
    /// [`NUMA_MEMORY_GRANULARITY_MIB`] more.
    NumaMemoryMib,
    /// 2 MiB hugepages the Memory Manager can allocate on each NUMA node.
    NumaHugepages2Mi,
    /// 1 GiB hugepages the Memory Manager can allocate on each NUMA node.
    NumaHugepages1Gi,
    /// The kubelet's `memoryManagerPolicy` (`none`, `static`).
    MemoryManagerPolicy,
    /// The Topology Manager option `prefer-closest-numa-nodes` (`true`, `false`).
    TopologyManagerPreferClosestNumaNodes,
    /// The Topology Manager option `max-allowable-numa-nodes`.
    TopologyManagerMaxAllowableNumaNodes,
    /// The CPU Manager option `full-pcpus-only` (`true`, `false`).
    CpuManagerFullPcpusOnly,
    /// The CPU Manager option `distribute-cpus-across-numa` (`true`, `false`).
    CpuManagerDistributeCpusAcrossNuma,
    /// The CPU Manager option `align-by-socket` (`true`, `false`).
    CpuManagerAlignBySocket,
    /// Every NUMA node of the machine, as the kubelet counts them (cadvisor's
    /// `machineInfo.Topology`: one per `/sys/devices/system/node/node<N>`,
    /// CPU-less and memory-only ones included). `numa-nodes` counts only
    /// those with GPUs. Decides whether the Topology Manager starts
    /// (`max-allowable-numa-nodes`) even when the per-NUMA lists are unknown.
    MachineNumaNodes,
    /// The kubelet's version as `<major>.<minor>` (`1.36`), from the Node's
    /// `status.nodeInfo.kubeletVersion`: the kubelet's rules differ by
    /// version, and node affinity can select labels only.
    KubeletVersion,
    /// The SLIT distance matrix ([`NodeTopology::numa_distances`]), in
    /// chunks of 63 characters: `numa-distances`, `numa-distances.1`, ...
    /// ([`distances`]).
    NumaDistances,
    /// The compute partition mode of the node's AMD GPUs (`spx`, `dpx`,
    /// `qpx`, `cpx`): how many logical GPUs the AMD device plugin makes of
    /// each. For people; left out when the GPUs' modes differ.
    AmdComputePartition,
    /// The memory partition mode of the node's AMD GPUs (`nps1`, `nps2`,
    /// `nps4`, `nps8`). For people; left out when the GPUs' modes differ.
    AmdMemoryPartition,
    /// The multi-node NVLink clique of the node's GPUs as GPU Feature
    /// Discovery writes `nvidia.com/gpu.clique`: `<ClusterUUID>.<CliqueId>`.
    /// For people and for schedulers that co-place pods across nodes.
    GpuClique,
    /// A digest of every fact the admission decision reads ([`ShapeId`]):
    /// nodes with equal facts share it, so node affinity can select exactly
    /// the machine shapes whose kubelet admits a pod (`In`, `NotIn`).
    Shape,
}

/// How the readers treat a label ([`LabelKey::role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelRole {
    /// Read by the count-based fit terms ([`crate::fit`]): a value that does
    /// not parse makes the node malformed.
    Fit,
    /// A fact the kubelet admission model reads: an unreadable value leaves
    /// it unknown, and the model then answers "unknown" where it matters.
    Fact,
    /// Describes the node for people; an unreadable value leaves it unknown.
    Informational,
    /// The node's shape digest itself.
    Identity,
}

/// The kind of value a label holds, which decides its encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A non-negative decimal integer (`8`), comparable with `Gt`/`Lt`.
    Count,
    /// Counts, one per NUMA node in id order, joined by `.` (`4.4`), runs
    /// of equal ones as `count_times` where the plain form is too long.
    CountList,
    /// One word of a fixed list (`single-numa-node`).
    Word,
    /// `true` or `false`.
    Flag,
    /// 16 lowercase hexadecimal digits.
    Digest,
    /// A Kubernetes minor version, `<major>.<minor>` (`1.36`).
    Version,
    /// A matrix of NUMA distances, base-36, in chunks ([`distances`]).
    Distances,
    /// A multi-node NVLink clique, `<ClusterUUID>.<CliqueId>` ([`GpuClique`]).
    Clique,
}

impl LabelKey {
    pub const ALL: [LabelKey; 33] = [
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
        LabelKey::NumaGpus,
        LabelKey::NumaCpus,
        LabelKey::NumaReservedCpus,
        LabelKey::NumaReservedCores,
        LabelKey::NumaSockets,
        LabelKey::ThreadsPerCore,
        LabelKey::NumaMemoryMib,
        LabelKey::NumaHugepages2Mi,
        LabelKey::NumaHugepages1Gi,
        LabelKey::MemoryManagerPolicy,
        LabelKey::TopologyManagerPreferClosestNumaNodes,
        LabelKey::TopologyManagerMaxAllowableNumaNodes,
        LabelKey::CpuManagerFullPcpusOnly,
        LabelKey::CpuManagerDistributeCpusAcrossNuma,
        LabelKey::CpuManagerAlignBySocket,
        LabelKey::MachineNumaNodes,
        LabelKey::KubeletVersion,
        LabelKey::NumaDistances,
        LabelKey::AmdComputePartition,
        LabelKey::AmdMemoryPartition,
        LabelKey::GpuClique,
        LabelKey::Shape,
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
            LabelKey::NumaGpus => "numa-gpus",
            LabelKey::NumaCpus => "numa-cpus",
            LabelKey::NumaReservedCpus => "numa-reserved-cpus",
            LabelKey::NumaReservedCores => "numa-reserved-cores",
            LabelKey::NumaSockets => "numa-sockets",
            LabelKey::ThreadsPerCore => "threads-per-core",
            LabelKey::NumaMemoryMib => "numa-memory-mib",
            LabelKey::NumaHugepages2Mi => "numa-hugepages-2mi",
            LabelKey::NumaHugepages1Gi => "numa-hugepages-1gi",
            LabelKey::MemoryManagerPolicy => "memory-manager-policy",
            LabelKey::TopologyManagerPreferClosestNumaNodes => {
                "topology-manager-prefer-closest-numa-nodes"
            }
            LabelKey::TopologyManagerMaxAllowableNumaNodes => {
                "topology-manager-max-allowable-numa-nodes"
            }
            LabelKey::CpuManagerFullPcpusOnly => "cpu-manager-full-pcpus-only",
            LabelKey::CpuManagerDistributeCpusAcrossNuma => {
                "cpu-manager-distribute-cpus-across-numa"
            }
            LabelKey::CpuManagerAlignBySocket => "cpu-manager-align-by-socket",
            LabelKey::MachineNumaNodes => "machine-numa-nodes",
            LabelKey::KubeletVersion => "kubelet-version",
            LabelKey::NumaDistances => "numa-distances",
            LabelKey::AmdComputePartition => "amd-compute-partition",
            LabelKey::AmdMemoryPartition => "amd-memory-partition",
            LabelKey::GpuClique => "gpu-clique",
            LabelKey::Shape => "shape",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.name() == name)
    }

    /// The kubelet setting the label publishes, named as the
    /// `KubeletConfiguration` names it (a policy option as
    /// `<options field>.<option>`); `None` for a label of the hardware or
    /// of the shape. The words of their values are the kubelet's,
    /// lowercased (`memoryManagerPolicy: Static` is `static`).
    pub const fn kubelet_setting(self) -> Option<&'static str> {
        match self {
            LabelKey::TopologyManagerPolicy => Some("topologyManagerPolicy"),
            LabelKey::TopologyManagerScope => Some("topologyManagerScope"),
            LabelKey::CpuManagerPolicy => Some("cpuManagerPolicy"),
            LabelKey::MemoryManagerPolicy => Some("memoryManagerPolicy"),
            LabelKey::TopologyManagerPreferClosestNumaNodes => {
                Some("topologyManagerPolicyOptions.prefer-closest-numa-nodes")
            }
            LabelKey::TopologyManagerMaxAllowableNumaNodes => {
                Some("topologyManagerPolicyOptions.max-allowable-numa-nodes")
            }
            LabelKey::CpuManagerFullPcpusOnly => Some("cpuManagerPolicyOptions.full-pcpus-only"),
            LabelKey::CpuManagerDistributeCpusAcrossNuma => {
                Some("cpuManagerPolicyOptions.distribute-cpus-across-numa")
            }
            LabelKey::CpuManagerAlignBySocket => Some("cpuManagerPolicyOptions.align-by-socket"),
            _ => None,
        }
    }

    /// The label publishing the kubelet setting `name` ([`Self::kubelet_setting`]).
    pub fn from_kubelet_setting(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|key| key.kubelet_setting() == Some(name))
    }

    /// How readers treat the label's value.
    pub const fn role(self) -> LabelRole {
        match self {
            LabelKey::Gpus
            | LabelKey::GpusPerNumaMax
            | LabelKey::NvlinkGroupMax
            | LabelKey::TopologyManagerPolicy => LabelRole::Fit,
            LabelKey::NumaNodes
            | LabelKey::PcieSwitchGroupMax
            | LabelKey::CpusPerNuma
            | LabelKey::MemoryPerNumaGib
            | LabelKey::Interconnect
            | LabelKey::AmdComputePartition
            | LabelKey::AmdMemoryPartition
            | LabelKey::GpuClique => LabelRole::Informational,
            LabelKey::Shape => LabelRole::Identity,
            LabelKey::TopologyManagerScope
            | LabelKey::CpuManagerPolicy
            | LabelKey::NumaGpus
            | LabelKey::NumaCpus
            | LabelKey::NumaReservedCpus
            | LabelKey::NumaReservedCores
            | LabelKey::NumaSockets
            | LabelKey::ThreadsPerCore
            | LabelKey::NumaMemoryMib
            | LabelKey::NumaHugepages2Mi
            | LabelKey::NumaHugepages1Gi
            | LabelKey::MemoryManagerPolicy
            | LabelKey::TopologyManagerPreferClosestNumaNodes
            | LabelKey::TopologyManagerMaxAllowableNumaNodes
            | LabelKey::CpuManagerFullPcpusOnly
            | LabelKey::CpuManagerDistributeCpusAcrossNuma
            | LabelKey::CpuManagerAlignBySocket
            | LabelKey::MachineNumaNodes
            | LabelKey::KubeletVersion
            | LabelKey::NumaDistances => LabelRole::Fact,
        }
    }

    /// Whether the count-based fit terms ([`crate::fit`]) read this label. A
    /// value of any other label that this version cannot read (a newer
    /// labeler's) leaves that field unknown instead of leaving the whole node
    /// out.
    pub const fn decides_fit(self) -> bool {
        matches!(self.role(), LabelRole::Fit)
    }

    /// Whether the label is part of the node's [`ShapeId`]: every label the
    /// admission decision reads (the fit terms and the kubelet model's facts).
    pub const fn shapes(self) -> bool {
        matches!(self.role(), LabelRole::Fit | LabelRole::Fact)
    }

    /// The kind of value the label holds.
    pub const fn kind(self) -> ValueKind {
        match self {
            LabelKey::Gpus
            | LabelKey::GpusPerNumaMax
            | LabelKey::NumaNodes
            | LabelKey::NvlinkGroupMax
            | LabelKey::PcieSwitchGroupMax
            | LabelKey::CpusPerNuma
            | LabelKey::MemoryPerNumaGib
            | LabelKey::ThreadsPerCore
            | LabelKey::TopologyManagerMaxAllowableNumaNodes
            | LabelKey::MachineNumaNodes => ValueKind::Count,
            LabelKey::NumaGpus
            | LabelKey::NumaCpus
            | LabelKey::NumaReservedCpus
            | LabelKey::NumaReservedCores
            | LabelKey::NumaSockets
            | LabelKey::NumaMemoryMib
            | LabelKey::NumaHugepages2Mi
            | LabelKey::NumaHugepages1Gi => ValueKind::CountList,
            LabelKey::Interconnect
            | LabelKey::TopologyManagerPolicy
            | LabelKey::TopologyManagerScope
            | LabelKey::CpuManagerPolicy
            | LabelKey::MemoryManagerPolicy
            | LabelKey::AmdComputePartition
            | LabelKey::AmdMemoryPartition => ValueKind::Word,
            LabelKey::TopologyManagerPreferClosestNumaNodes
            | LabelKey::CpuManagerFullPcpusOnly
            | LabelKey::CpuManagerDistributeCpusAcrossNuma
            | LabelKey::CpuManagerAlignBySocket => ValueKind::Flag,
            LabelKey::Shape => ValueKind::Digest,
            LabelKey::KubeletVersion => ValueKind::Version,
            LabelKey::NumaDistances => ValueKind::Distances,
            LabelKey::GpuClique => ValueKind::Clique,
        }
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

label_enum!(
    /// The kubelet's `memoryManagerPolicy`, lowercased (the kubelet spells
    /// `None` and `Static`).
    MemoryManagerPolicy, "one of none, static" {
        None => "none",
        Static => "static",
    }
);

label_enum!(
    /// An AMD GPU's compute partition mode, as amdgpu's
    /// `current_compute_partition` names it, lowercased (as the AMD device
    /// plugin reads it).
    AmdComputePartition, "one of spx, dpx, tpx, qpx, cpx" {
        Spx => "spx",
        Dpx => "dpx",
        Tpx => "tpx",
        Qpx => "qpx",
        Cpx => "cpx",
    }
);

label_enum!(
    /// An AMD GPU's memory partition mode, as amdgpu's
    /// `current_memory_partition` names it, lowercased.
    AmdMemoryPartition, "one of nps1, nps2, nps4, nps8" {
        Nps1 => "nps1",
        Nps2 => "nps2",
        Nps4 => "nps4",
        Nps8 => "nps8",
    }
);

/// A multi-node NVLink clique (GB200 NVL72), as GPU Feature Discovery
/// writes `nvidia.com/gpu.clique`: the fabric's cluster UUID (lowercase,
/// `8-4-4-4-12` hexadecimal digits) and the clique id in decimal, joined
/// by `.` (k8s-device-plugin internal/lm/fabric.go `newImexLabeler`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuClique {
    cluster_uuid: String,
    pub clique_id: u32,
}

impl GpuClique {
    /// The clique of `cluster_uuid` (any case) and `clique_id`; `None`
    /// when `cluster_uuid` is not a UUID.
    pub fn new(cluster_uuid: &str, clique_id: u32) -> Option<Self> {
        is_uuid(cluster_uuid).then(|| GpuClique {
            cluster_uuid: cluster_uuid.to_ascii_lowercase(),
            clique_id,
        })
    }

    pub fn cluster_uuid(&self) -> &str {
        &self.cluster_uuid
    }

    /// Reads the label's `<ClusterUUID>.<CliqueId>`.
    pub fn parse_label(value: &str) -> Option<Self> {
        let (uuid, id) = value.split_once('.')?;
        if uuid.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        GpuClique::new(uuid, parse_count(id)?)
    }
}

impl fmt::Display for GpuClique {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster_uuid, self.clique_id)
    }
}

/// `8-4-4-4-12` hexadecimal digits.
fn is_uuid(value: &str) -> bool {
    // Read in place: the policy reads this label on every Node it lists.
    let mut groups = value.split('-');
    [8, 4, 4, 4, 12].into_iter().all(|len| {
        groups
            .next()
            .is_some_and(|group| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
    }) && groups.next().is_none()
}

/// The step `numa-memory-mib` is published in: whole GiB. Identical machines
/// differ by a few MiB of memory (firmware carve-outs, a kernel's own
/// reservations, a DIMM replaced), and every MiB made each of them a shape
/// of its own. Labelers before this contract published whole MiB, which
/// are also within one step of the truth, so readers treat every value
/// alike: at least what it says, less than one step more.
pub const NUMA_MEMORY_GRANULARITY_MIB: u32 = 1024;

/// The `numa-memory-mib` entry published for `mib` MiB of allocatable
/// memory on a NUMA node: rounded down to [`NUMA_MEMORY_GRANULARITY_MIB`].
pub const fn published_numa_memory_mib(mib: u32) -> u32 {
    mib - mib % NUMA_MEMORY_GRANULARITY_MIB
}

/// Most NUMA nodes a per-NUMA list label describes. The kubelet's Topology
/// Manager refuses machines with more than 8 unless `max-allowable-numa-nodes`
/// says otherwise; a list of more entries than this is not read.
pub const MAX_NUMA_NODES: usize = 64;

/// A node's shape: a digest of every fact the admission decision reads
/// ([`LabelKey::shapes`]), written as 16 lowercase hexadecimal digits.
///
/// The labeler publishes it ([`NodeTopology::shape_id`]); the policy never
/// recomputes it but takes it from the label, so a newer labeler that reads
/// more facts does not make an older policy's view disagree with the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShapeId(pub u64);

/// Hexadecimal digits of a [`ShapeId`].
const SHAPE_DIGITS: usize = 16;

impl ShapeId {
    /// Reads 16 lowercase hexadecimal digits.
    pub fn parse(value: &str) -> Option<Self> {
        if value.len() != SHAPE_DIGITS
            || !value
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
        u64::from_str_radix(value, 16).ok().map(ShapeId)
    }
}

impl fmt::Display for ShapeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A kubelet's minor version: the rules of its managers differ by it (the
/// Topology Manager's device hints, 1.36; `max-allowable-numa-nodes`, 1.31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KubeletVersion {
    pub major: u32,
    pub minor: u32,
}

impl KubeletVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        KubeletVersion { major, minor }
    }

    /// Reads a Node's `status.nodeInfo.kubeletVersion` as the kubelet
    /// reports it: `v1.36.2`, with a distribution's suffix
    /// (`v1.35.0-eks-4096722`, `v1.34.2+k3s1`, `v1.33.5-gke.1080000`) or a
    /// pre-release (`v1.36.0-rc.1`: its rules are the minor's). `None` for
    /// anything else.
    pub fn parse_node_info(value: &str) -> Option<Self> {
        let rest = value.strip_prefix('v')?;
        let (major, rest) = rest.split_once('.')?;
        let minor_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (minor, rest) = rest.split_at(minor_end);
        // After the minor: a patch, or nothing.
        if !(rest.is_empty() || rest.starts_with('.')) {
            return None;
        }
        Some(KubeletVersion::new(
            parse_count(major)?,
            parse_count(minor)?,
        ))
    }

    /// Reads the label's `<major>.<minor>`.
    pub fn parse_label(value: &str) -> Option<Self> {
        let (major, minor) = value.split_once('.')?;
        Some(KubeletVersion::new(
            parse_count(major)?,
            parse_count(minor)?,
        ))
    }

    /// True from `major.minor` on.
    pub const fn at_least(self, major: u32, minor: u32) -> bool {
        self.major > major || (self.major == major && self.minor >= minor)
    }
}

impl fmt::Display for KubeletVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What a node's labels say about its GPU topology and its kubelet. `None`
/// means unknown, and an unknown value is never published.
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
    /// GPUs per NUMA node, every NUMA node of the machine in id order.
    pub numa_gpus: Option<Vec<u32>>,
    /// Online CPUs per NUMA node, reserved ones included.
    pub numa_cpus: Option<Vec<u32>>,
    /// CPUs the kubelet reserves per NUMA node.
    pub numa_reserved_cpus: Option<Vec<u32>>,
    /// Physical cores holding reserved CPUs per NUMA node (SMT, static CPU Manager).
    pub numa_reserved_cores: Option<Vec<u32>>,
    /// The socket of each NUMA node's CPUs (0 for a NUMA node without CPUs).
    pub numa_sockets: Option<Vec<u32>>,
    pub threads_per_core: Option<u32>,
    /// Regular memory (MiB) the Memory Manager can allocate per NUMA node.
    pub numa_memory_mib: Option<Vec<u32>>,
    pub numa_hugepages_2mi: Option<Vec<u32>>,
    pub numa_hugepages_1gi: Option<Vec<u32>>,
    pub memory_manager_policy: Option<MemoryManagerPolicy>,
    pub prefer_closest_numa_nodes: Option<bool>,
    pub max_allowable_numa_nodes: Option<u32>,
    pub full_pcpus_only: Option<bool>,
    pub distribute_cpus_across_numa: Option<bool>,
    pub align_by_socket: Option<bool>,
    /// Every NUMA node of the machine, as the kubelet counts them.
    pub machine_numa_nodes: Option<u32>,
    /// The kubelet's minor version.
    pub kubelet_version: Option<KubeletVersion>,
    /// The AMD GPUs' compute partition mode, when they all share one.
    pub amd_compute_partition: Option<AmdComputePartition>,
    /// The AMD GPUs' memory partition mode, when they all share one.
    pub amd_memory_partition: Option<AmdMemoryPartition>,
    /// The multi-node NVLink clique every fabric-attached GPU is in.
    pub gpu_clique: Option<GpuClique>,
    /// SLIT distances (`/sys/devices/system/node/node<N>/distance`), one row
    /// per NUMA node in id order, each row over every NUMA node.
    pub numa_distances: Option<Vec<Vec<u32>>>,
    pub shape: Option<ShapeId>,
    /// Per-NUMA counts of device-plugin resources other than the GPUs of
    /// `numa_gpus` (RDMA HCAs, SR-IOV VFs, MIG slices of the mixed
    /// strategy), by resource name, every NUMA node in id order. A resource
    /// not in the map is unknown, never absent: the labeler publishes `0`s
    /// for a configured resource the node lacks.
    pub devices: BTreeMap<String, Vec<u32>>,
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
            LabelKey::ThreadsPerCore => self.threads_per_core,
            LabelKey::TopologyManagerMaxAllowableNumaNodes => self.max_allowable_numa_nodes,
            LabelKey::MachineNumaNodes => self.machine_numa_nodes,
            _ => None,
        }
    }

    /// The per-NUMA counts of a list label, or `None` when unknown or when
    /// `key` is not a list.
    pub fn counts(&self, key: LabelKey) -> Option<&[u32]> {
        match key {
            LabelKey::NumaGpus => self.numa_gpus.as_deref(),
            LabelKey::NumaCpus => self.numa_cpus.as_deref(),
            LabelKey::NumaReservedCpus => self.numa_reserved_cpus.as_deref(),
            LabelKey::NumaReservedCores => self.numa_reserved_cores.as_deref(),
            LabelKey::NumaSockets => self.numa_sockets.as_deref(),
            LabelKey::NumaMemoryMib => self.numa_memory_mib.as_deref(),
            LabelKey::NumaHugepages2Mi => self.numa_hugepages_2mi.as_deref(),
            LabelKey::NumaHugepages1Gi => self.numa_hugepages_1gi.as_deref(),
            _ => None,
        }
    }

    fn counts_mut(&mut self, key: LabelKey) -> Option<&mut Option<Vec<u32>>> {
        match key {
            LabelKey::NumaGpus => Some(&mut self.numa_gpus),
            LabelKey::NumaCpus => Some(&mut self.numa_cpus),
            LabelKey::NumaReservedCpus => Some(&mut self.numa_reserved_cpus),
            LabelKey::NumaReservedCores => Some(&mut self.numa_reserved_cores),
            LabelKey::NumaSockets => Some(&mut self.numa_sockets),
            LabelKey::NumaMemoryMib => Some(&mut self.numa_memory_mib),
            LabelKey::NumaHugepages2Mi => Some(&mut self.numa_hugepages_2mi),
            LabelKey::NumaHugepages1Gi => Some(&mut self.numa_hugepages_1gi),
            _ => None,
        }
    }

    fn count_mut(&mut self, key: LabelKey) -> Option<&mut Option<u32>> {
        match key {
            LabelKey::Gpus => Some(&mut self.gpus),
            LabelKey::GpusPerNumaMax => Some(&mut self.gpus_per_numa_max),
            LabelKey::NumaNodes => Some(&mut self.numa_nodes),
            LabelKey::NvlinkGroupMax => Some(&mut self.nvlink_group_max),
            LabelKey::PcieSwitchGroupMax => Some(&mut self.pcie_switch_group_max),
            LabelKey::CpusPerNuma => Some(&mut self.cpus_per_numa),
            LabelKey::MemoryPerNumaGib => Some(&mut self.memory_per_numa_gib),
            LabelKey::ThreadsPerCore => Some(&mut self.threads_per_core),
            LabelKey::TopologyManagerMaxAllowableNumaNodes => {
                Some(&mut self.max_allowable_numa_nodes)
            }
            LabelKey::MachineNumaNodes => Some(&mut self.machine_numa_nodes),
            _ => None,
        }
    }

    /// The value of a `true`/`false` label, or `None` when unknown or when
    /// `key` is not a flag.
    pub fn flag(&self, key: LabelKey) -> Option<bool> {
        match key {
            LabelKey::TopologyManagerPreferClosestNumaNodes => self.prefer_closest_numa_nodes,
            LabelKey::CpuManagerFullPcpusOnly => self.full_pcpus_only,
            LabelKey::CpuManagerDistributeCpusAcrossNuma => self.distribute_cpus_across_numa,
            LabelKey::CpuManagerAlignBySocket => self.align_by_socket,
            _ => None,
        }
    }

    fn flag_mut(&mut self, key: LabelKey) -> Option<&mut Option<bool>> {
        match key {
            LabelKey::TopologyManagerPreferClosestNumaNodes => {
                Some(&mut self.prefer_closest_numa_nodes)
            }
            LabelKey::CpuManagerFullPcpusOnly => Some(&mut self.full_pcpus_only),
            LabelKey::CpuManagerDistributeCpusAcrossNuma => {
                Some(&mut self.distribute_cpus_across_numa)
            }
            LabelKey::CpuManagerAlignBySocket => Some(&mut self.align_by_socket),
            _ => None,
        }
    }

    /// The value of an enumerated label, or `None` when unknown or when `key`
    /// is not a word.
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
            LabelKey::MemoryManagerPolicy => {
                self.memory_manager_policy.map(MemoryManagerPolicy::as_str)
            }
            LabelKey::AmdComputePartition => {
                self.amd_compute_partition.map(AmdComputePartition::as_str)
            }
            LabelKey::AmdMemoryPartition => {
                self.amd_memory_partition.map(AmdMemoryPartition::as_str)
            }
            _ => None,
        }
    }

    /// The value of `key` as its label string, or `None` when unknown (or,
    /// for a list, when it cannot be written as a valid label value). The
    /// distances are one string here, which [`Self::to_labels`] cuts into
    /// label values.
    pub fn value(&self, key: LabelKey) -> Option<String> {
        match key.kind() {
            ValueKind::Count => self.count(key).map(|n| n.to_string()),
            ValueKind::CountList => self.counts(key).and_then(format_count_list),
            ValueKind::Word => self.word(key).map(str::to_owned),
            ValueKind::Flag => self.flag(key).map(|flag| flag.to_string()),
            ValueKind::Digest => self.shape.map(|shape| shape.to_string()),
            ValueKind::Version => self.kubelet_version.map(|version| version.to_string()),
            ValueKind::Distances => self
                .numa_distances
                .as_deref()
                .and_then(format_numa_distances),
            ValueKind::Clique => self.gpu_clique.as_ref().map(GpuClique::to_string),
        }
    }

    /// The labels to publish, keyed by full label key. Unknown values are
    /// left out; the distances take as many labels as their chunks.
    pub fn to_labels(&self, prefix: &LabelPrefix) -> BTreeMap<String, String> {
        let devices = self
            .device_values()
            .filter_map(|(resource, value)| prefix.device_key(resource).map(|key| (key, value)));
        let mut labels: BTreeMap<String, String> = LabelKey::ALL
            .into_iter()
            .filter(|key| *key != LabelKey::NumaDistances)
            .filter_map(|key| self.value(key).map(|value| (prefix.key(key), value)))
            .chain(devices)
            .collect();
        if let Some(value) = self.value(LabelKey::NumaDistances) {
            labels.extend(distances::chunks(&value).map(|(index, chunk)| {
                (
                    prefix.named_key(&distances::chunk_name(index)),
                    chunk.to_owned(),
                )
            }));
        }
        labels
    }

    /// Each device resource with its per-NUMA counts as a label value; a
    /// resource whose counts cannot be one ([`format_count_list`]) is left out.
    pub fn device_values(&self) -> impl Iterator<Item = (&str, String)> + '_ {
        self.devices.iter().filter_map(|(resource, counts)| {
            format_count_list(counts).map(|value| (resource.as_str(), value))
        })
    }

    /// Every label as `name=value` pairs under no prefix: the fixed keys in
    /// [`LabelKey::ALL`] order, then the device resources
    /// ([`device_key_name`]) in resource-name order. The distances are one
    /// pair here, uncut (these pairs are no label values).
    pub fn named_values(&self) -> Vec<(String, String)> {
        let devices = self
            .device_values()
            .filter_map(|(resource, value)| device_key_name(resource).map(|name| (name, value)));
        LabelKey::ALL
            .into_iter()
            .filter_map(|key| self.value(key).map(|value| (key.name().to_owned(), value)))
            .chain(devices)
            .collect()
    }

    /// Sets the label named `name` (under no prefix: a [`LabelKey`] name or
    /// a device key name) as [`NodeTopology::set`] does; names this version
    /// does not know are ignored.
    pub fn set_named(&mut self, name: &str, full_key: &str, value: &str) -> Result<(), LabelError> {
        if let Some(key) = LabelKey::from_name(name) {
            return self.set(key, full_key, value);
        }
        if let Some(resource) = device_resource_of(name) {
            self.set_device(resource, value);
        }
        Ok(())
    }

    /// Sets the per-NUMA counts of device resource `resource` from its
    /// label value. Device counts are facts of the kubelet model, never read
    /// by the fit terms: a value that does not parse leaves the resource
    /// unknown (false), as for [`LabelRole::Fact`] labels.
    pub fn set_device(&mut self, resource: String, value: &str) -> bool {
        match parse_count_list(value) {
            Some(counts) => {
                self.devices.insert(resource, counts);
                true
            }
            None => {
                self.devices.remove(&resource);
                false
            }
        }
    }

    /// The digest of every label the admission decision reads
    /// ([`LabelKey::shapes`]), as the labeler publishes it in `shape`. Each
    /// known value is hashed as `name=value;` in [`LabelKey::ALL`] order
    /// (FNV-1a, 64 bits), so equal facts give equal shapes on every
    /// platform and version that reads the same facts.
    ///
    /// `machine-numa-nodes` is left out where a published per-NUMA list has
    /// that many entries: the lists range over every NUMA node of the
    /// machine (every labeler version writes them so), so the count then
    /// follows from them, and the machines labeled before the count was
    /// published keep their shape.
    pub fn shape_id(&self) -> ShapeId {
        const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut hash = FNV_OFFSET;
        let mut feed = |bytes: &[u8]| {
            for byte in bytes {
                hash ^= u64::from(*byte);
                hash = hash.wrapping_mul(FNV_PRIME);
            }
        };
        let implied = self.machine_numa_nodes_follow_from_lists();
        for key in LabelKey::ALL.into_iter().filter(|key| key.shapes()) {
            if key == LabelKey::MachineNumaNodes && implied {
                continue;
            }
            if let Some(value) = self.value(key) {
                feed(key.name().as_bytes());
                feed(b"=");
                feed(value.as_bytes());
                feed(b";");
            }
        }
        // Device resources are facts of the model: after the fixed keys, in
        // resource-name order, so nodes without any keep their shape.
        for (resource, value) in self.device_values() {
            if let Some(name) = device_key_name(resource) {
                feed(name.as_bytes());
                feed(b"=");
                feed(value.as_bytes());
                feed(b";");
            }
        }
        ShapeId(hash)
    }

    /// True when a per-NUMA list that is published has as many entries as
    /// `machine-numa-nodes` says ([`Self::shape_id`]).
    fn machine_numa_nodes_follow_from_lists(&self) -> bool {
        let Some(nodes) = self.machine_numa_nodes else {
            return false;
        };
        LabelKey::ALL.into_iter().any(|key| {
            self.counts(key).is_some_and(|list| {
                usize::try_from(nodes).is_ok_and(|nodes| list.len() == nodes)
                    && format_count_list(list).is_some()
            })
        })
    }

    /// Takes the kubelet version its Node reports (`status.nodeInfo.kubeletVersion`,
    /// [`KubeletVersion::parse_node_info`]), as the policy and the summarizer
    /// read every Node: the running kubelet's own report wins over a
    /// `kubelet-version` label, which a labeler without the kubernetes sink
    /// only has from `--kubelet-version` (or not at all), and which lags a
    /// kubelet upgraded since its last publish. The `shape` label is kept as
    /// published: node affinity selects by it, so a reader never recomputes
    /// it. Nodes that share a shape label yet differ in version are then two
    /// groups with one shape; the policy selects such a shape only where the
    /// kubelet answers both alike.
    pub fn take_reported_kubelet_version(&mut self, version: KubeletVersion) {
        self.kubelet_version = Some(version);
    }

    /// This topology with its `shape` set from its facts ([`Self::shape_id`]).
    pub fn with_shape(mut self) -> Self {
        self.shape = Some(self.shape_id());
        self
    }

    /// Sets one field from its label string, validating the value. A value
    /// that does not parse is an error for a label the fit terms read
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
        match key.kind() {
            ValueKind::Count => {
                let count =
                    parse_count(value).ok_or_else(|| invalid("a non-negative decimal integer"))?;
                if let Some(field) = self.count_mut(key) {
                    *field = Some(count);
                }
            }
            ValueKind::CountList => {
                let counts = parse_count_list(value).ok_or_else(|| {
                    invalid(
                        "non-negative decimal integers joined by '.', one per NUMA node (a run as <count>_<times>)",
                    )
                })?;
                if let Some(field) = self.counts_mut(key) {
                    *field = Some(counts);
                }
            }
            ValueKind::Flag => {
                let flag = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid("true or false")),
                };
                if let Some(field) = self.flag_mut(key) {
                    *field = Some(flag);
                }
            }
            ValueKind::Digest => {
                self.shape = Some(
                    ShapeId::parse(value)
                        .ok_or_else(|| invalid("16 lowercase hexadecimal digits"))?,
                );
            }
            ValueKind::Version => {
                self.kubelet_version = Some(
                    KubeletVersion::parse_label(value)
                        .ok_or_else(|| invalid("<major>.<minor>, e.g. 1.36"))?,
                );
            }
            ValueKind::Distances => {
                self.numa_distances = Some(parse_numa_distances(value).ok_or_else(|| {
                    invalid("a symmetric NUMA distance matrix in base 36, whole")
                })?);
            }
            ValueKind::Clique => {
                self.gpu_clique = Some(GpuClique::parse_label(value).ok_or_else(|| {
                    invalid("<ClusterUUID>.<CliqueId>, a lowercase UUID and a decimal integer")
                })?);
            }
            ValueKind::Word => match key {
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
                LabelKey::MemoryManagerPolicy => {
                    self.memory_manager_policy = Some(
                        value
                            .parse()
                            .map_err(|()| invalid(MemoryManagerPolicy::EXPECTED))?,
                    )
                }
                LabelKey::AmdComputePartition => {
                    self.amd_compute_partition = Some(
                        value
                            .parse()
                            .map_err(|()| invalid(AmdComputePartition::EXPECTED))?,
                    )
                }
                LabelKey::AmdMemoryPartition => {
                    self.amd_memory_partition = Some(
                        value
                            .parse()
                            .map_err(|()| invalid(AmdMemoryPartition::EXPECTED))?,
                    )
                }
                _ => {}
            },
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
        let mut distance_chunks = DistanceChunks::default();
        for (full_key, value) in labels {
            if let Some(name) = prefix.name_of(full_key) {
                if !distance_chunks.add(name, value) {
                    topology.set_named(name, full_key, value)?;
                }
            }
        }
        topology.set_distance_chunks(&distance_chunks);
        Ok(topology)
    }

    /// Sets the distances from the chunks of a node's labels; any chunk
    /// missing, extra or garbled leaves them unknown, never a guess.
    pub fn set_distance_chunks(&mut self, chunks: &DistanceChunks) {
        if !chunks.is_empty() {
            self.numa_distances = chunks.matrix();
        }
    }

    /// True when no label of the contract is present.
    pub fn is_empty(&self) -> bool {
        *self == NodeTopology::default()
    }
}

/// What begins the name of a device resource's per-NUMA label:
/// `numa-devices.<domain>_<name>` for resource `<domain>/<name>`, e.g.
/// `gpu-topology.io/numa-devices.rdma_ib=4.4` for `rdma/ib` and
/// `gpu-topology.io/numa-devices.nvidia.com_mig-1g.10gb=7.7` for a MIG
/// profile. The value is a count list, as `numa-gpus`.
pub const DEVICE_KEY_PREFIX: &str = "numa-devices.";

/// The label name (under the prefix) of device resource `resource`'s
/// per-NUMA counts. A resource's domain is a DNS subdomain, which has no
/// `_`, so its `/` is written `_` and the first `_` reads back as the `/`.
/// `None` when `resource` is no extended resource name (`domain/name`) or
/// the name would pass a label name's 63 characters (such a resource
/// cannot be published: it stays unknown).
pub fn device_key_name(resource: &str) -> Option<String> {
    let (domain, name) = resource.split_once('/')?;
    if !is_resource_domain(domain) || !is_resource_name_part(name) {
        return None;
    }
    let key = [DEVICE_KEY_PREFIX, domain, "_", name].concat();
    (key.len() <= MAX_LABEL_VALUE_LEN).then_some(key)
}

/// The device resource a label name written by [`device_key_name`] is about.
pub fn device_resource_of(name: &str) -> Option<String> {
    let encoded = name.strip_prefix(DEVICE_KEY_PREFIX)?;
    let (domain, resource_name) = encoded.split_once('_')?;
    if name.len() > MAX_LABEL_VALUE_LEN
        || !is_resource_domain(domain)
        || !is_resource_name_part(resource_name)
    {
        return None;
    }
    Some([domain, "/", resource_name].concat())
}

/// A resource name's domain: a DNS subdomain, as a label prefix.
fn is_resource_domain(domain: &str) -> bool {
    LabelPrefix::new(domain).is_ok()
}

/// A resource name's part after `/`: a qualified name (letters, digits,
/// `-`, `_`, `.`, beginning and ending with a letter or digit).
fn is_resource_name_part(name: &str) -> bool {
    !name.is_empty() && is_label_value(name)
}

/// True when `value` is a valid Kubernetes label value: at most 63
/// characters, alphanumerics, `-`, `_` and `.`, beginning and ending with an
/// alphanumeric (or empty).
pub fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    value.len() <= MAX_LABEL_VALUE_LEN
        && bytes.iter().all(inner)
        && bytes.first().is_none_or(u8::is_ascii_alphanumeric)
        && bytes.last().is_none_or(u8::is_ascii_alphanumeric)
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

    #[rstest]
    #[case::topology_policy("topologyManagerPolicy", LabelKey::TopologyManagerPolicy)]
    #[case::memory_policy("memoryManagerPolicy", LabelKey::MemoryManagerPolicy)]
    #[case::a_topology_option(
        "topologyManagerPolicyOptions.max-allowable-numa-nodes",
        LabelKey::TopologyManagerMaxAllowableNumaNodes
    )]
    #[case::a_cpu_option(
        "cpuManagerPolicyOptions.full-pcpus-only",
        LabelKey::CpuManagerFullPcpusOnly
    )]
    fn kubelet_settings_name_their_labels(#[case] setting: &str, #[case] key: LabelKey) {
        assert_eq!(LabelKey::from_kubelet_setting(setting), Some(key));
        assert_eq!(key.kubelet_setting(), Some(setting));
    }

    #[rstest]
    #[case::plain("v1.36.2", Some((1, 36)))]
    #[case::eks("v1.35.0-eks-4096722", Some((1, 35)))]
    #[case::k3s("v1.34.2+k3s1", Some((1, 34)))]
    #[case::gke("v1.33.5-gke.1080000", Some((1, 33)))]
    #[case::release_candidate("v1.36.0-rc.1", Some((1, 36)))]
    #[case::no_patch("v1.36", Some((1, 36)))]
    #[case::no_v("1.36.2", None)]
    #[case::no_minor("v1", None)]
    #[case::letters_in_the_minor("v1.3x.0", None)]
    #[case::empty("", None)]
    #[case::huge_minor("v1.99999999999.0", None)]
    fn kubelet_versions_read_as_the_node_reports_them(
        #[case] reported: &str,
        #[case] expected: Option<(u32, u32)>,
    ) {
        let version = KubeletVersion::parse_node_info(reported);
        assert_eq!(
            version,
            expected.map(|(major, minor)| KubeletVersion::new(major, minor))
        );
        if let Some(version) = version {
            let label = version.to_string();
            assert!(is_label_value(&label));
            assert_eq!(KubeletVersion::parse_label(&label), Some(version));
        }
    }

    #[rstest]
    #[case::older_minor(KubeletVersion::new(1, 35), false)]
    #[case::same(KubeletVersion::new(1, 36), true)]
    #[case::newer_minor(KubeletVersion::new(1, 37), true)]
    #[case::newer_major(KubeletVersion::new(2, 0), true)]
    fn versions_compare_by_major_then_minor(
        #[case] version: KubeletVersion,
        #[case] from_1_36: bool,
    ) {
        assert_eq!(version.at_least(1, 36), from_1_36);
    }

    #[test]
    fn every_kubelet_setting_is_a_fact_of_the_shape_named_once() {
        let settings: Vec<(&str, LabelKey)> = LabelKey::ALL
            .into_iter()
            .filter_map(|key| key.kubelet_setting().map(|setting| (setting, key)))
            .collect();
        assert_eq!(settings.len(), 9);
        for (setting, key) in settings {
            assert!(key.shapes(), "{setting} is part of the shape");
            assert_eq!(LabelKey::from_kubelet_setting(setting), Some(key));
        }
        assert_eq!(LabelKey::from_kubelet_setting("numa-gpus"), None);
    }

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
            numa_gpus: Some(vec![0, 2, 0, 2, 0, 2, 0, 2]),
            numa_cpus: Some(vec![32; 8]),
            numa_reserved_cpus: Some(vec![2, 0, 0, 0, 0, 0, 0, 0]),
            numa_reserved_cores: Some(vec![1, 0, 0, 0, 0, 0, 0, 0]),
            numa_sockets: Some(vec![0, 0, 0, 0, 1, 1, 1, 1]),
            threads_per_core: Some(2),
            numa_memory_mib: Some(vec![257_000; 8]),
            numa_hugepages_2mi: Some(vec![0; 8]),
            numa_hugepages_1gi: Some(vec![0; 8]),
            memory_manager_policy: Some(MemoryManagerPolicy::Static),
            prefer_closest_numa_nodes: Some(true),
            max_allowable_numa_nodes: Some(8),
            full_pcpus_only: Some(true),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
            machine_numa_nodes: Some(8),
            kubelet_version: Some(KubeletVersion::new(1, 34)),
            numa_distances: Some(epyc_nps4_distances()),
            // Not a DGX A100's, but every label of the contract round-trips.
            amd_compute_partition: Some(AmdComputePartition::Cpx),
            amd_memory_partition: Some(AmdMemoryPartition::Nps4),
            gpu_clique: GpuClique::new("DC6E40C4-D722-4357-9BA6-5291DD461278", 2),
            shape: None,
            devices: BTreeMap::new(),
        }
        .with_shape()
    }

    /// Two EPYC sockets in NPS4: 10 on the node, 12 on the socket, 32 across.
    fn epyc_nps4_distances() -> Vec<Vec<u32>> {
        (0..8)
            .map(|i: u32| {
                (0..8)
                    .map(|j: u32| match (i == j, i / 4 == j / 4) {
                        (true, _) => 10,
                        (false, true) => 12,
                        (false, false) => 32,
                    })
                    .collect()
            })
            .collect()
    }

    #[rstest]
    #[case::gfd_example("dc6e40c4-d722-4357-9ba6-5291dd461278.2", true)]
    #[case::large_clique_id("9c6f5af3-53bf-49b5-a436-b66766c413c3.4026", true)]
    #[case::uppercase_uuid("DC6E40C4-D722-4357-9BA6-5291DD461278.2", false)]
    #[case::no_clique_id("dc6e40c4-d722-4357-9ba6-5291dd461278", false)]
    #[case::negative_clique_id("dc6e40c4-d722-4357-9ba6-5291dd461278.-2", false)]
    #[case::short_group("dc6e40c4-d722-4357-9ba6-5291dd46127.2", false)]
    #[case::not_hex("dc6e40c4-d722-4357-9ba6-5291dd46127g.2", false)]
    fn clique_labels_are_a_lowercase_uuid_and_a_decimal_id(
        #[case] value: &str,
        #[case] readable: bool,
    ) {
        let parsed = GpuClique::parse_label(value);
        assert_eq!(parsed.is_some(), readable, "{value}");
        if let Some(clique) = parsed {
            assert_eq!(clique.to_string(), value);
            assert!(is_label_value(value));
        }
    }

    #[test]
    fn the_labeler_writes_the_uuid_lowercase() {
        let clique = GpuClique::new("DC6E40C4-D722-4357-9BA6-5291DD461278", 2);
        assert_eq!(
            clique.map(|c| c.to_string()).as_deref(),
            Some("dc6e40c4-d722-4357-9ba6-5291dd461278.2")
        );
    }

    #[test]
    fn informational_labels_leave_the_shape_alone() {
        let mut topology = dgx_a100();
        topology.amd_compute_partition = None;
        topology.amd_memory_partition = None;
        topology.gpu_clique = None;
        assert_eq!(topology.shape_id(), dgx_a100().shape_id());
    }

    /// A GPUDirect node: 8 GPUs, 8 HCAs 4+4, MIG slices on one GPU.
    fn hgx_with_devices() -> NodeTopology {
        NodeTopology {
            devices: BTreeMap::from([
                ("rdma/ib".to_owned(), vec![4, 4]),
                ("nvidia.com/mig-1g.10gb".to_owned(), vec![7, 0]),
                ("openshift.io/sriov_netdevice".to_owned(), vec![0, 16]),
            ]),
            numa_gpus: Some(vec![4, 4]),
            ..NodeTopology::default()
        }
        .with_shape()
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
        assert_eq!(labels["gpu-topology.io/numa-gpus"], "0.2.0.2.0.2.0.2");
        assert_eq!(
            labels["gpu-topology.io/numa-memory-mib"],
            "257000.257000.257000.257000.257000.257000.257000.257000"
        );
        assert_eq!(
            labels["gpu-topology.io/cpu-manager-full-pcpus-only"],
            "true"
        );
        assert_eq!(labels["gpu-topology.io/shape"].len(), 16);
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
    #[case::list_with_an_empty_entry("gpu-topology.io/numa-gpus", "4..4")]
    #[case::list_with_a_sign("gpu-topology.io/numa-cpus", "56.-1")]
    #[case::list_of_words("gpu-topology.io/numa-memory-mib", "lots")]
    #[case::flag_spelled_otherwise("gpu-topology.io/cpu-manager-full-pcpus-only", "True")]
    #[case::shape_too_short("gpu-topology.io/shape", "abc")]
    #[case::shape_in_capitals("gpu-topology.io/shape", "ABCDEF0123456789")]
    #[case::memory_policy_as_the_kubelet_spells_it(
        "gpu-topology.io/memory-manager-policy",
        "Static"
    )]
    #[case::compute_partition_as_amdgpu_spells_it("gpu-topology.io/amd-compute-partition", "CPX")]
    #[case::unknown_memory_partition("gpu-topology.io/amd-memory-partition", "nps3")]
    #[case::clique_without_id("gpu-topology.io/gpu-clique", "dc6e40c4-d722-4357-9ba6-5291dd461278")]
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

    /// Lists longer than the plain form fits are written in runs, and
    /// published; one too long even so is unknown, never cut short.
    #[test]
    fn lists_in_runs_are_published_and_too_long_ones_left_out() {
        let sixteen_nodes = vec![1_000_000; 16];
        let topology = NodeTopology {
            numa_memory_mib: Some(sixteen_nodes),
            ..NodeTopology::default()
        };
        let labels = topology.to_labels(&LabelPrefix::default());
        assert_eq!(labels["gpu-topology.io/numa-memory-mib"], "1000000_16");
        let distinct = NodeTopology {
            numa_memory_mib: Some((1_000_000..1_000_016).collect()),
            ..NodeTopology::default()
        };
        assert!(distinct.to_labels(&LabelPrefix::default()).is_empty());
    }

    #[test]
    fn the_shape_follows_the_facts_only() {
        let node = dgx_a100();
        let shape = node.shape.unwrap();
        // Informational labels do not change the shape...
        let renamed = NodeTopology {
            interconnect: Some(Interconnect::Pcie),
            pcie_switch_group_max: None,
            ..node.clone()
        };
        assert_eq!(renamed.shape_id(), shape);
        // ...every fact does, and so does the shape label itself never.
        let fewer_cpus = NodeTopology {
            numa_reserved_cpus: Some(vec![4, 0, 0, 0, 0, 0, 0, 0]),
            ..node.clone()
        };
        assert_ne!(fewer_cpus.shape_id(), shape);
        let other_label = NodeTopology {
            shape: Some(ShapeId(1)),
            ..node.clone()
        };
        assert_eq!(other_label.shape_id(), shape);
        // Its label round-trips.
        assert_eq!(ShapeId::parse(&shape.to_string()), Some(shape));
        assert_eq!(ShapeId(0xab).to_string(), "00000000000000ab");
    }

    /// `machine-numa-nodes` shapes a node only where the lists do not say
    /// it already; the distances shape it, fed once, whole.
    #[rstest]
    #[case::implied_by_the_lists(Some(8), true)]
    #[case::unknown(None, true)]
    #[case::more_than_the_lists(Some(34), false)]
    fn machine_numa_nodes_shape_only_what_the_lists_do_not_say(
        #[case] machine_numa_nodes: Option<u32>,
        #[case] same_shape: bool,
    ) {
        let without = NodeTopology {
            machine_numa_nodes: None,
            ..dgx_a100()
        };
        let node = NodeTopology {
            machine_numa_nodes,
            ..dgx_a100()
        };
        assert_eq!(node.shape_id() == without.shape_id(), same_shape);
        let lists_unknown = NodeTopology {
            machine_numa_nodes: Some(8),
            ..NodeTopology::default()
        };
        assert_ne!(lists_unknown.shape_id(), NodeTopology::default().shape_id());
    }

    #[test]
    fn distances_are_published_in_chunks_and_shape_the_node() {
        let prefix = LabelPrefix::default();
        let rows: Vec<Vec<u32>> = (0..34u32)
            .map(|i| {
                (0..34u32)
                    .map(|j| {
                        if i == j {
                            10
                        } else {
                            20 + u32::from(i / 2 != j / 2) * 20
                        }
                    })
                    .collect()
            })
            .collect();
        let node = NodeTopology {
            numa_distances: Some(rows.clone()),
            ..NodeTopology::default()
        };
        let labels = node.to_labels(&prefix);
        assert_eq!(labels.len(), 10);
        assert_eq!(
            labels["gpu-topology.io/numa-distances.9"].len(),
            3 + 6 + 595 - 9 * 63
        );
        for (key, value) in &labels {
            assert!(is_label_value(value), "{key}={value:?}");
        }
        let read = NodeTopology::from_labels(
            &prefix,
            labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .unwrap();
        assert_eq!(read, node);
        // A chunk lost: the matrix is unknown, the rest of the node stays.
        let partial = NodeTopology::from_labels(
            &prefix,
            labels
                .iter()
                .filter(|(k, _)| !k.ends_with(".4"))
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .chain([("gpu-topology.io/gpus", "4")]),
        )
        .unwrap();
        assert_eq!(partial.numa_distances, None);
        assert_eq!(partial.gpus, Some(4));
        assert_ne!(node.shape_id(), NodeTopology::default().shape_id());
        // The fleet summary's form keeps the value whole.
        let named = node.named_values();
        assert_eq!(named.len(), 1);
        let mut back = NodeTopology::default();
        back.set_named(&named[0].0, &named[0].0, &named[0].1)
            .unwrap();
        assert_eq!(back, node);
    }

    /// The digest is part of the contract: a labeler and a policy built from
    /// different versions of this crate must agree on it for equal facts.
    #[test]
    fn the_shape_digest_is_stable() {
        let node = NodeTopology {
            gpus: Some(8),
            numa_gpus: Some(vec![4, 4]),
            topology_manager_policy: Some(TopologyManagerPolicy::Restricted),
            ..NodeTopology::default()
        };
        // FNV-1a 64 of "gpus=8;topology-manager-policy=restricted;numa-gpus=4.4;".
        let text = "gpus=8;topology-manager-policy=restricted;numa-gpus=4.4;";
        let mut expected: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            expected = (expected ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(node.shape_id(), ShapeId(expected));
        assert_eq!(
            NodeTopology::default().shape_id().to_string(),
            "cbf29ce484222325"
        );
    }

    #[rstest]
    #[case::rdma("rdma/ib", "numa-devices.rdma_ib")]
    #[case::mig_profile("nvidia.com/mig-1g.10gb", "numa-devices.nvidia.com_mig-1g.10gb")]
    #[case::underscore_in_the_name(
        "openshift.io/sriov_netdevice",
        "numa-devices.openshift.io_sriov_netdevice"
    )]
    #[case::shared_rdma("rdma/rdma_shared_device_a", "numa-devices.rdma_rdma_shared_device_a")]
    fn device_keys_round_trip(#[case] resource: &str, #[case] name: &str) {
        assert_eq!(device_key_name(resource).as_deref(), Some(name));
        assert_eq!(device_resource_of(name).as_deref(), Some(resource));
        let prefix = LabelPrefix::default();
        let key = prefix.device_key(resource).unwrap();
        assert_eq!(key, format!("gpu-topology.io/{name}"));
        assert_eq!(prefix.parse_device_key(&key).as_deref(), Some(resource));
        assert_eq!(prefix.parse_key(&key), None);
    }

    #[rstest]
    #[case::no_domain("gpu")]
    #[case::uppercase_domain("NVIDIA.com/gpu")]
    #[case::underscore_in_the_domain("my_vendor.com/nic")]
    #[case::two_slashes("rdma/ib/x")]
    #[case::name_ends_with_a_dot("rdma/ib.")]
    #[case::too_long_for_a_label_name(
        "example.com/a-device-resource-name-much-too-long-for-a-label"
    )]
    fn resources_that_cannot_be_a_label_have_no_key(#[case] resource: &str) {
        assert_eq!(device_key_name(resource), None);
    }

    #[rstest]
    #[case::not_ours("numa-gpus")]
    #[case::no_separator("numa-devices.rdma")]
    #[case::empty_name("numa-devices.rdma_")]
    #[case::bad_domain("numa-devices.-rdma_ib")]
    fn names_that_are_no_device_key(#[case] name: &str) {
        assert_eq!(device_resource_of(name), None);
    }

    #[test]
    fn device_counts_round_trip_and_stay_valid_labels() {
        let prefix = LabelPrefix::default();
        let node = hgx_with_devices();
        let labels = node.to_labels(&prefix);
        assert_eq!(labels["gpu-topology.io/numa-devices.rdma_ib"], "4.4");
        assert_eq!(
            labels["gpu-topology.io/numa-devices.nvidia.com_mig-1g.10gb"],
            "7.0"
        );
        for (key, value) in &labels {
            assert!(is_label_value(value), "{key}={value:?}");
            let name = key.split_once('/').unwrap().1;
            assert!(name.len() <= MAX_LABEL_VALUE_LEN, "{name}");
            assert!(is_label_value(name), "{name}");
        }
        let read = NodeTopology::from_labels(
            &prefix,
            labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .unwrap();
        assert_eq!(read, node);
        // The names without a prefix round-trip too (the fleet summary's form).
        let mut named = NodeTopology::default();
        for (name, value) in node.named_values() {
            named.set_named(&name, &name, &value).unwrap();
        }
        assert_eq!(named, node);
    }

    /// Device counts are model facts: an unreadable value leaves the
    /// resource unknown and the node readable.
    #[rstest]
    #[case::word("many")]
    #[case::empty_entry("4..4")]
    #[case::signed("-1.4")]
    fn unreadable_device_counts_are_unknown(#[case] value: &str) {
        let labels = [
            ("gpu-topology.io/gpus", "8"),
            ("gpu-topology.io/numa-devices.rdma_ib", value),
        ];
        let parsed = NodeTopology::from_labels(&LabelPrefix::default(), labels).unwrap();
        assert_eq!(parsed.gpus, Some(8));
        assert!(parsed.devices.is_empty());
    }

    /// Device counts are part of the shape; nodes without any keep the
    /// digest they had before device resources were published.
    #[test]
    fn device_counts_shape_the_node() {
        let node = hgx_with_devices();
        let mut moved = node.clone();
        moved.devices.insert("rdma/ib".to_owned(), vec![8, 0]);
        assert_ne!(moved.shape_id(), node.shape_id());
        let without = NodeTopology {
            devices: BTreeMap::new(),
            ..node.clone()
        };
        let plain = NodeTopology {
            numa_gpus: Some(vec![4, 4]),
            ..NodeTopology::default()
        };
        assert_eq!(without.shape_id(), plain.shape_id());
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
        assert_eq!(labels.len(), LabelKey::ALL.len());
        for (key, value) in &labels {
            assert!(is_label_value(value), "{key}={value:?}");
            // The name part of a key is itself limited to 63 characters.
            let name = key.split_once('/').unwrap().1;
            assert!(name.len() <= MAX_LABEL_VALUE_LEN, "{name}");
        }
    }

    #[rstest]
    #[case::empty("", true)]
    #[case::word("single-numa-node", true)]
    #[case::list("4.4", true)]
    #[case::leading_dash("-4", false)]
    #[case::trailing_dot("4.", false)]
    #[case::slash("a/b", false)]
    #[case::too_long(&"a".repeat(64), false)]
    fn label_values(#[case] value: &str, #[case] valid: bool) {
        assert_eq!(is_label_value(value), valid);
    }

    /// Names, kinds and roles are declared once per key; these keep the
    /// declarations consistent with each other.
    #[test]
    fn every_key_round_trips_its_name_and_value_kind() {
        for key in LabelKey::ALL {
            assert_eq!(LabelKey::from_name(key.name()), Some(key));
            let node = dgx_a100();
            let value = node.value(key).unwrap_or_else(|| panic!("{key:?} unset"));
            let mut read = NodeTopology::default();
            read.set_strictly(key, key.name(), &value).unwrap();
            assert_eq!(read.value(key), Some(value), "{key:?}");
            assert_eq!(
                key.shapes(),
                !matches!(key.role(), LabelRole::Informational | LabelRole::Identity)
            );
        }
    }
}
