//! The model's inputs: what is known about a node and what a pod asks for.
//!
//! Every node fact is optional: a node may not publish it. The model asks
//! only for the facts its answer depends on and names the first one missing
//! ([`Fact`]).

pub use crate::labels::KubeletVersion;
/// The kubelet's `memoryManagerPolicy`: the label contract's type, so that
/// the labels and the model cannot spell it differently.
pub use crate::labels::MemoryManagerPolicy;
use crate::labels::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use std::collections::BTreeMap;
use std::fmt;

/// The most CPUs or GPUs one NUMA node may report: far above any machine,
/// low enough that no sum over 16 NUMA nodes overflows.
pub const MAX_UNITS_PER_NUMA: u32 = 1 << 20;

/// Bytes in a MiB.
pub const MIB: u64 = 1 << 20;
/// Bytes of a 2Mi huge page.
pub const HUGE_PAGE_2MI_BYTES: u64 = 2 * MIB;
/// Bytes of a 1Gi huge page.
pub const HUGE_PAGE_1GI_BYTES: u64 = 1 << 30;

/// The kubelet's Topology Manager settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TopologyManagerConfig {
    pub policy: Option<TopologyManagerPolicy>,
    pub scope: Option<TopologyManagerScope>,
    /// `topologyManagerPolicyOptions: prefer-closest-numa-nodes`.
    pub prefer_closest_numa_nodes: Option<bool>,
    /// `topologyManagerPolicyOptions: max-allowable-numa-nodes` (the kubelet's
    /// default is 8 when unset: pass `Some(8)` then).
    pub max_allowable_numa_nodes: Option<u32>,
}

/// The kubelet's CPU Manager settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuManagerConfig {
    pub policy: Option<CpuManagerPolicy>,
    pub full_pcpus_only: Option<bool>,
    pub distribute_cpus_across_numa: Option<bool>,
    pub align_by_socket: Option<bool>,
}

/// Huge pages of one size on one NUMA node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct HugePages {
    /// Pages the node has (`nr_hugepages`).
    pub pages: u64,
    /// Pages reserved for the system (`reservedMemory` of the page size).
    pub reserved_pages: u64,
}

/// One NUMA node of the machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NumaNodeFacts {
    /// GPUs the device plugin reports on this NUMA node.
    pub gpus: Option<u32>,
    /// Online CPUs (hardware threads) on this NUMA node.
    pub cpus: Option<u32>,
    /// The kubelet's reserved CPUs on this NUMA node (`reservedSystemCPUs`, or
    /// the ones it picks for `kubeReserved` + `systemReserved`).
    pub reserved_cpus: Option<u32>,
    /// Physical cores holding at least one reserved CPU: with
    /// `full-pcpus-only` their free siblings are not allocatable either.
    pub reserved_cores: Option<u32>,
    /// The socket (package) of this NUMA node.
    pub socket: Option<u32>,
    /// Memory of the NUMA node, MiB.
    pub memory_mib: Option<u64>,
    /// `reservedMemory` for `memory` on this NUMA node, MiB.
    pub reserved_memory_mib: Option<u64>,
    pub hugepages_2mi: Option<HugePages>,
    pub hugepages_1gi: Option<HugePages>,
    /// SLIT distances from this node to every node, in id order.
    pub distances: Option<Vec<u32>>,
}

/// What is known about a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NodeFacts {
    /// GPUs on the node (the `gpus` label): what the scheduler's and the
    /// kubelet's resource fit count when the per-NUMA lists are not known.
    pub gpus: Option<u32>,
    /// GPUs on the NUMA node that has the most (the `gpus-per-numa-max`
    /// label): decides `single-numa-node` refusals when the per-NUMA lists
    /// are not known.
    pub gpus_per_numa_max: Option<u32>,
    /// Every NUMA node of the machine in id order, also those without GPUs or
    /// CPUs: the kubelet's masks range over all of them.
    pub numa_nodes: Option<Vec<NumaNodeFacts>>,
    /// Hardware threads per physical core (SMT level).
    pub threads_per_core: Option<u32>,
    pub topology_manager: TopologyManagerConfig,
    pub cpu_manager: CpuManagerConfig,
    pub memory_manager: Option<MemoryManagerPolicy>,
    /// Device-plugin resources besides the GPUs (RDMA HCAs, SR-IOV VFs, MIG
    /// slices): devices per NUMA node, every NUMA node in id order, by
    /// resource name. A resource not listed is unknown.
    pub devices: BTreeMap<String, Vec<u32>>,
    /// Every NUMA node of the machine as the kubelet counts them (the
    /// `machine-numa-nodes` label): decides whether the Topology Manager
    /// starts when `numa_nodes` is not known.
    pub machine_numa_nodes: Option<u32>,
    /// The kubelet's minor version: the managers' rules differ by it.
    pub kubelet_version: Option<KubeletVersion>,
    /// How much more regular memory each NUMA node may have than
    /// [`NumaNodeFacts::memory_mib`] says, in MiB, exclusive: the labels
    /// round it down ([`crate::NUMA_MEMORY_GRANULARITY_MIB`]). 0 or 1: exact
    /// to the MiB. Where the answer depends on memory inside that step, the
    /// model says so ([`super::Indeterminate::MemoryRounding`]).
    pub memory_rounding_mib: u64,
}

/// What other pods already hold on a busy node, per NUMA node in id order
/// (every NUMA node of the machine): the kubelet's exclusive assignments,
/// as NodeResourceTopology reports them (`allocatable - available`). The
/// capacities stay the node's facts: the managers size their hints on
/// capacity (`minAffinitySize`) and test availability against what is free.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Occupancy {
    pub numa_nodes: Vec<NumaOccupancy>,
}

/// What is held on one NUMA node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaOccupancy {
    /// GPUs allocated by the Device Manager.
    pub gpus: u32,
    /// Exclusive CPUs assigned by the static CPU Manager (shared-pool
    /// CPUs are never counted: they are not assigned).
    pub cpus: u32,
    /// Bytes of memory, hugepages-2Mi and hugepages-1Gi the static Memory
    /// Manager assigned.
    pub memory: [u64; 3],
    /// Devices of other device-plugin resources allocated, by resource
    /// (each resource once; a list, as a node has a handful).
    pub devices: Vec<(String, u32)>,
}

impl NumaOccupancy {
    /// Devices of `resource` held (0 when not listed).
    pub fn device(&self, resource: &str) -> u32 {
        self.devices
            .iter()
            .find(|(name, _)| name == resource)
            .map_or(0, |(_, held)| *held)
    }
}

impl Occupancy {
    /// The holdings of NUMA node `numa` (none past the list).
    pub fn numa(&self, numa: usize) -> Option<&NumaOccupancy> {
        self.numa_nodes.get(numa)
    }
}

/// Where a container runs in the kubelet's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ContainerKind {
    /// A regular init container: runs to completion before the next one
    /// starts, so later containers reuse its CPUs, memory and devices.
    Init,
    /// An init container with `restartPolicy: Always` (native sidecar): runs
    /// for the pod's lifetime, nothing of it is reused.
    Sidecar,
    /// An app container (`spec.containers`).
    #[default]
    App,
}

impl ContainerKind {
    /// The PodSpec field that lists this kind of container.
    pub const fn list_field(self) -> &'static str {
        match self {
            ContainerKind::Init | ContainerKind::Sidecar => "initContainers",
            ContainerKind::App => "containers",
        }
    }

    /// How messages name a container of this kind: `init container "setup"`.
    pub const fn describe(self) -> &'static str {
        match self {
            ContainerKind::Init => "init container",
            ContainerKind::Sidecar => "sidecar container",
            ContainerKind::App => "container",
        }
    }
}

/// One container's requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerDemand {
    pub kind: ContainerKind,
    /// GPU limit; `None` when the container lists no GPU resource. `Some(0)`
    /// is an explicit zero, for which the device manager still gives hints.
    pub gpus: Option<u32>,
    /// CPU request, millicores (the limit equals it in a Guaranteed pod).
    pub cpu_millis: u64,
    /// Memory request, bytes.
    pub memory_bytes: u64,
    pub hugepages_2mi_bytes: u64,
    pub hugepages_1gi_bytes: u64,
    /// Limits of the pod's device resources ([`PodDemand::devices`]), by
    /// index: `None` (or no entry) where the container lists none.
    pub devices: Vec<Option<u32>>,
}

impl ContainerDemand {
    /// The container's limit of device resource `index` of the pod.
    pub fn device(&self, index: usize) -> Option<u32> {
        self.devices.get(index).copied().flatten()
    }
}

/// A pod's demand, its containers in the kubelet's order: init containers
/// (sidecars among them) as listed, then app containers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodDemand {
    pub containers: Vec<ContainerDemand>,
    /// The pod's QoS class is Guaranteed.
    pub guaranteed: bool,
    /// The pod sets pod-level `spec.resources`: then the static CPU and
    /// Memory Managers leave it unpinned (Kubernetes 1.34: `PodLevelResources`
    /// on, `PodLevelResourceManagers` off).
    pub pod_level_resources: bool,
    /// The device-plugin resources other than the GPUs that containers
    /// list, each once; [`ContainerDemand::devices`] indexes them. Each is
    /// its own hint list in the Device Manager's answer.
    pub devices: Vec<String>,
}

/// A node fact the answer depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fact {
    NumaNodes,
    ThreadsPerCore,
    TopologyManagerPolicy,
    TopologyManagerScope,
    PreferClosestNumaNodes,
    MaxAllowableNumaNodes,
    CpuManagerPolicy,
    FullPcpusOnly,
    DistributeCpusAcrossNuma,
    AlignBySocket,
    MemoryManagerPolicy,
    Gpus {
        numa: usize,
    },
    Cpus {
        numa: usize,
    },
    ReservedCpus {
        numa: usize,
    },
    ReservedCores {
        numa: usize,
    },
    Socket {
        numa: usize,
    },
    Memory {
        numa: usize,
    },
    ReservedMemory {
        numa: usize,
    },
    HugePages2Mi {
        numa: usize,
    },
    HugePages1Gi {
        numa: usize,
    },
    Distances {
        numa: usize,
    },
    /// The per-NUMA counts of a device resource the pod requests.
    Devices {
        resource: DeviceName,
    },
    /// The kubelet's version: the Device Manager's hints range over every
    /// NUMA node before 1.36 and over the resource's NUMA nodes from 1.36.
    KubeletVersion,
}

/// A device resource's name carried by value in the model's answers (which
/// are `Copy`): up to [`DeviceName::CAPACITY`] bytes; a longer name (it can
/// never be a label either) is shown cut, ending in `...`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceName {
    len: u8,
    bytes: [u8; DeviceName::CAPACITY],
}

impl DeviceName {
    pub const CAPACITY: usize = 63;

    pub fn new(name: &str) -> Self {
        let mut bytes = [0u8; Self::CAPACITY];
        let text = if name.len() <= Self::CAPACITY {
            name.as_bytes()
        } else {
            // Cut at a character boundary, then mark the cut.
            let mut end = Self::CAPACITY - 3;
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            bytes[end..end + 3].copy_from_slice(b"...");
            &name.as_bytes()[..end]
        };
        bytes[..text.len()].copy_from_slice(text);
        let len = if name.len() <= Self::CAPACITY {
            text.len()
        } else {
            text.len() + 3
        };
        DeviceName {
            len: len as u8,
            bytes,
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("?")
    }
}

impl fmt::Debug for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fact::NumaNodes => f.write_str("the NUMA nodes"),
            Fact::ThreadsPerCore => f.write_str("threads per core"),
            Fact::TopologyManagerPolicy => f.write_str("the Topology Manager policy"),
            Fact::TopologyManagerScope => f.write_str("the Topology Manager scope"),
            Fact::PreferClosestNumaNodes => f.write_str("prefer-closest-numa-nodes"),
            Fact::MaxAllowableNumaNodes => f.write_str("max-allowable-numa-nodes"),
            Fact::CpuManagerPolicy => f.write_str("the CPU Manager policy"),
            Fact::FullPcpusOnly => f.write_str("full-pcpus-only"),
            Fact::DistributeCpusAcrossNuma => f.write_str("distribute-cpus-across-numa"),
            Fact::AlignBySocket => f.write_str("align-by-socket"),
            Fact::MemoryManagerPolicy => f.write_str("the Memory Manager policy"),
            Fact::Gpus { numa } => write!(f, "GPUs on NUMA node {numa}"),
            Fact::Cpus { numa } => write!(f, "CPUs on NUMA node {numa}"),
            Fact::ReservedCpus { numa } => write!(f, "reserved CPUs on NUMA node {numa}"),
            Fact::ReservedCores { numa } => {
                write!(f, "cores with reserved CPUs on NUMA node {numa}")
            }
            Fact::Socket { numa } => write!(f, "the socket of NUMA node {numa}"),
            Fact::Memory { numa } => write!(f, "memory on NUMA node {numa}"),
            Fact::ReservedMemory { numa } => write!(f, "reserved memory on NUMA node {numa}"),
            Fact::HugePages2Mi { numa } => write!(f, "2Mi huge pages on NUMA node {numa}"),
            Fact::HugePages1Gi { numa } => write!(f, "1Gi huge pages on NUMA node {numa}"),
            Fact::Distances { numa } => write!(f, "NUMA distances of node {numa}"),
            Fact::Devices { resource } => write!(f, "{resource} per NUMA node"),
            Fact::KubeletVersion => f.write_str("the kubelet version"),
        }
    }
}

/// Facts or a demand that contradict themselves: the model refuses to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputError {
    /// More reserved CPUs (or cores) on a NUMA node than it has.
    ReservedExceedsCpus {
        numa: usize,
    },
    /// Reserved CPUs and the cores holding them do not fit together.
    ReservedCoresInconsistent {
        numa: usize,
    },
    /// CPUs of a NUMA node are not whole cores of `threads_per_core` threads.
    CpusNotWholeCores {
        numa: usize,
    },
    ThreadsPerCoreZero,
    /// More reserved memory (or huge pages) than the NUMA node has.
    ReservedExceedsMemory {
        numa: usize,
    },
    /// A distance row's length differs from the number of NUMA nodes.
    DistanceRowLength {
        numa: usize,
    },
    /// A NUMA node's memory does not fit in 64-bit bytes.
    MemoryTooLarge {
        numa: usize,
    },
    /// An init container or sidecar listed after an app container.
    ContainerOrder {
        container: usize,
    },
    /// A container of a Guaranteed pod pinned by the Memory Manager requests no memory.
    GuaranteedWithoutMemory {
        container: usize,
    },
    /// The pod has no containers.
    NoContainers,
    /// The node lists no NUMA node (every machine has at least one).
    NoNumaNodes,
    /// More CPUs, GPUs or devices of one resource on a NUMA node than
    /// [`MAX_UNITS_PER_NUMA`].
    CountTooLarge {
        numa: usize,
        unit: CountedUnit,
    },
    /// Summing the pod's requests overflows.
    RequestOverflow,
    /// A busy node's holdings list another number of NUMA nodes than the
    /// node has.
    OccupancyNumaNodes {
        listed: usize,
        numa_nodes: usize,
    },
    /// More held on a NUMA node than it has to give.
    OccupancyExceeds {
        numa: usize,
        unit: CountedUnit,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::ReservedExceedsCpus { numa } => {
                write!(f, "NUMA node {numa} reserves more CPUs than it has")
            }
            InputError::ReservedCoresInconsistent { numa } => write!(
                f,
                "NUMA node {numa}: reserved CPUs do not fit the cores said to hold them"
            ),
            InputError::CpusNotWholeCores { numa } => write!(
                f,
                "NUMA node {numa}: CPUs are not a multiple of threads per core"
            ),
            InputError::ThreadsPerCoreZero => f.write_str("threads per core is 0"),
            InputError::ReservedExceedsMemory { numa } => {
                write!(f, "NUMA node {numa} reserves more memory than it has")
            }
            InputError::DistanceRowLength { numa } => write!(
                f,
                "NUMA node {numa}: the distance row does not list every NUMA node"
            ),
            InputError::MemoryTooLarge { numa } => {
                write!(f, "NUMA node {numa}: memory does not fit in 64 bits")
            }
            InputError::ContainerOrder { container } => write!(
                f,
                "container {container}: init containers must come before app containers"
            ),
            InputError::GuaranteedWithoutMemory { container } => write!(
                f,
                "container {container}: a Guaranteed pod's container requests memory"
            ),
            InputError::NoContainers => f.write_str("the pod has no containers"),
            InputError::NoNumaNodes => f.write_str("the node lists no NUMA node"),
            InputError::CountTooLarge { numa, unit } => {
                write!(
                    f,
                    "NUMA node {numa} reports more {unit} than any machine has"
                )
            }
            InputError::RequestOverflow => f.write_str("the pod's requests overflow"),
            InputError::OccupancyNumaNodes { listed, numa_nodes } => write!(
                f,
                "the occupancy lists {listed} NUMA nodes where the node has {numa_nodes}"
            ),
            InputError::OccupancyExceeds { numa, unit } => {
                write!(f, "NUMA node {numa} holds more {unit} than it has")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// What a NUMA node counts, as [`InputError::CountTooLarge`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountedUnit {
    Cpus,
    Gpus,
    /// Memory, hugepages-2Mi or hugepages-1Gi (by the Memory Manager's index).
    Memory(usize),
    /// Devices of a device-plugin resource ([`NodeFacts::devices`]).
    Devices(String),
}

impl fmt::Display for CountedUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CountedUnit::Cpus => f.write_str("CPUs"),
            CountedUnit::Gpus => f.write_str("GPUs"),
            CountedUnit::Memory(0) => f.write_str("memory"),
            CountedUnit::Memory(1) => f.write_str("2Mi huge pages"),
            CountedUnit::Memory(_) => f.write_str("1Gi huge pages"),
            CountedUnit::Devices(resource) => write!(f, "{resource} devices"),
        }
    }
}

/// The NUMA node facts of `node`, or the missing fact.
pub(crate) fn numa_nodes(node: &NodeFacts) -> Result<&[NumaNodeFacts], Fact> {
    node.numa_nodes.as_deref().ok_or(Fact::NumaNodes)
}

/// Validates what can be checked without knowing which facts matter.
pub(crate) fn validate(node: &NodeFacts, pod: &PodDemand) -> Result<(), InputError> {
    if pod.containers.is_empty() {
        return Err(InputError::NoContainers);
    }
    let mut seen_app = false;
    for (i, c) in pod.containers.iter().enumerate() {
        match c.kind {
            ContainerKind::App => seen_app = true,
            ContainerKind::Init | ContainerKind::Sidecar if seen_app => {
                return Err(InputError::ContainerOrder { container: i });
            }
            _ => {}
        }
    }
    if node.threads_per_core == Some(0) {
        return Err(InputError::ThreadsPerCoreZero);
    }
    let Some(numas) = node.numa_nodes.as_deref() else {
        return Ok(());
    };
    for (resource, counts) in &node.devices {
        if let Some(numa) = counts.iter().position(|&c| c > MAX_UNITS_PER_NUMA) {
            let unit = CountedUnit::Devices(resource.clone());
            return Err(InputError::CountTooLarge { numa, unit });
        }
    }
    for (numa, n) in numas.iter().enumerate() {
        validate_cpus(numa, n, node.threads_per_core)?;
        validate_memory(numa, n)?;
        if let Some(row) = &n.distances {
            if row.len() != numas.len() {
                return Err(InputError::DistanceRowLength { numa });
            }
        }
    }
    Ok(())
}

/// Checks one NUMA node's CPU facts against each other.
pub(crate) fn validate_cpus(
    numa: usize,
    n: &NumaNodeFacts,
    threads: Option<u32>,
) -> Result<(), InputError> {
    for (count, unit) in [(n.cpus, CountedUnit::Cpus), (n.gpus, CountedUnit::Gpus)] {
        if count.is_some_and(|c| c > MAX_UNITS_PER_NUMA) {
            return Err(InputError::CountTooLarge { numa, unit });
        }
    }
    if threads == Some(0) {
        return Err(InputError::ThreadsPerCoreZero);
    }
    if let (Some(cpus), Some(reserved)) = (n.cpus, n.reserved_cpus) {
        if reserved > cpus {
            return Err(InputError::ReservedExceedsCpus { numa });
        }
    }
    let Some(t) = threads else { return Ok(()) };
    if let Some(cpus) = n.cpus {
        if cpus % t != 0 {
            return Err(InputError::CpusNotWholeCores { numa });
        }
    }
    if let (Some(reserved), Some(cores)) = (n.reserved_cpus, n.reserved_cores) {
        let fits = u64::from(cores) <= u64::from(reserved)
            && u64::from(reserved) <= u64::from(cores) * u64::from(t);
        if !fits {
            return Err(InputError::ReservedCoresInconsistent { numa });
        }
        if let Some(cpus) = n.cpus {
            if cores > cpus / t {
                return Err(InputError::ReservedExceedsCpus { numa });
            }
        }
    }
    Ok(())
}

fn validate_memory(numa: usize, n: &NumaNodeFacts) -> Result<(), InputError> {
    if let (Some(total), Some(reserved)) = (n.memory_mib, n.reserved_memory_mib) {
        if reserved > total {
            return Err(InputError::ReservedExceedsMemory { numa });
        }
        total
            .checked_mul(MIB)
            .ok_or(InputError::MemoryTooLarge { numa })?;
    }
    for (pages, size) in [
        (n.hugepages_2mi, HUGE_PAGE_2MI_BYTES),
        (n.hugepages_1gi, HUGE_PAGE_1GI_BYTES),
    ] {
        if let Some(p) = pages {
            if p.reserved_pages > p.pages {
                return Err(InputError::ReservedExceedsMemory { numa });
            }
            p.pages
                .checked_mul(size)
                .ok_or(InputError::MemoryTooLarge { numa })?;
        }
    }
    Ok(())
}
