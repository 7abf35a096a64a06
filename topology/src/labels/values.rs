//! The label values that are not plain counts: the words of the kubelet's
//! settings and of the AMD partition modes (`label_enum!`: each enum's wire
//! values written once), the NVLink clique, the shape digest and the
//! kubelet version, with their encodings; and the limits of the per-NUMA
//! lists.

use std::fmt;
use std::str::FromStr;

use super::parse_count;

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
///
/// [`LabelKey::shapes`]: super::LabelKey::shapes
/// [`NodeTopology::shape_id`]: super::NodeTopology::shape_id
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
