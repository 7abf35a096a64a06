//! The model's answer: the verdict, why, and the hints behind it.

use super::facts::{DeviceName, Fact};
use super::hint::TopologyHint;
use std::fmt;

/// A resource the kubelet aligns on NUMA nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    Gpu,
    Cpu,
    Memory,
    HugePages2Mi,
    HugePages1Gi,
    /// Another device-plugin resource (an RDMA HCA, an SR-IOV VF, a MIG slice).
    Device(DeviceName),
}

impl Resource {
    /// The resource in words; a device resource by its name.
    pub fn name(&self) -> &str {
        match self {
            Resource::Device(name) => name.as_str(),
            Resource::Gpu => "GPUs",
            Resource::Cpu => "exclusive CPUs",
            Resource::Memory => "memory",
            Resource::HugePages2Mi => "hugepages-2Mi",
            Resource::HugePages1Gi => "hugepages-1Gi",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a hint provider said about one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintReport {
    /// No NUMA preference (`nil` hints): the resource is not aligned.
    DontCare,
    /// No NUMA affinity can hold the request (`[]`).
    NoFit,
    Hints {
        /// Fewest NUMA nodes whose capacity could hold the request: the
        /// preferred hints have this many (`minAffinitySize`).
        narrowest_capacity: u32,
        /// Fewest NUMA nodes of any hint, i.e. of what is free now.
        narrowest_available: u32,
        /// How many masks are preferred.
        preferred_masks: usize,
    },
}

/// One resource of one alignment unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceReport {
    pub resource: Resource,
    /// GPUs, CPUs or bytes.
    pub request: u64,
    pub hints: HintReport,
}

/// One alignment unit: the pod (scope `pod`) or one container (scope `container`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitReport {
    /// `None` for the whole pod, else the index into `PodDemand::containers`.
    pub container: Option<usize>,
    pub resources: Vec<ResourceReport>,
    /// The Topology Manager's best hint (`None` under policy `none`).
    pub hint: Option<TopologyHint>,
    /// Its resources to align all sit on one NUMA node by the kubelet's
    /// guarantee (vacuously true when it has none).
    pub aligned: bool,
}

/// Why a `Manager.Allocate` fails (the kubelet's `UnexpectedAdmissionError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocationFailure {
    /// Fewer free than requested.
    NotEnough { requested: u64, available: u64 },
    /// Memory Manager: no NUMA nodes with enough memory (`getDefaultHint`).
    NoMemoryAffinity,
    /// Memory Manager: no hint extends the Topology Manager's
    /// (`extendTopologyManagerHint`).
    NoExtendedMemoryAffinity,
    /// Memory Manager: only non-preferred memory hints where the Topology
    /// Manager chose a preferred one.
    MemoryHintNotPreferred,
    /// Memory Manager: the NUMA nodes mix single- and cross-NUMA allocations
    /// (`isAffinityViolatingNUMAAllocations`).
    MemoryViolatesNumaAllocation,
}

/// Settings the kubelet refuses to start with: the node never runs pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartupError {
    /// More NUMA nodes than `max-allowable-numa-nodes` with a Topology
    /// Manager policy other than `none` (`topologymanager.NewManager`).
    TooManyNumaNodes {
        numa_nodes: usize,
        max_allowable: u32,
    },
    /// `align-by-socket` with `single-numa-node` (`ValidateStaticPolicyOptions`).
    AlignBySocketWithSingleNumaNode,
    /// `align-by-socket` with more sockets than NUMA nodes.
    AlignBySocketMoreSocketsThanNumaNodes,
}

/// Why the kubelet refuses the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `TopologyAffinityError` for the pod (`None`) or a container.
    TopologyAffinity { container: Option<usize> },
    /// `SMTAlignmentError`: the request is not a multiple of the threads per
    /// core (`available_physical_cpus: None`) or exceeds the free whole cores.
    SmtAlignment {
        container: usize,
        requested: u32,
        cpus_per_core: u32,
        available_physical_cpus: Option<u32>,
    },
    /// The node has fewer of the resource than the pod needs at all.
    Insufficient {
        resource: Resource,
        requested: u64,
        capacity: u64,
    },
    /// The pod requests more CPU, memory or hugepages than the node can have
    /// allocatable: the scheduler's `NodeResourcesFit` never places it there
    /// (`Insufficient cpu`), and the kubelet's own `PredicateAdmitHandler`,
    /// which runs the same `noderesources.Fits`, refuses it (`OutOfcpu`).
    /// In the resource's unit (CPU in millicores, the rest in bytes):
    /// `capacity` is the node's, `reserved` what the kubelet is known to
    /// keep back from it (its reserved CPUs; the labels' memory is already
    /// net of `reservedMemory`), so that `requested` exceeds the most the
    /// node's `status.allocatable` can be.
    NodeTooSmall {
        resource: Resource,
        requested: u64,
        capacity: u64,
        reserved: u64,
    },
    /// A manager fails to allocate for a container (`UnexpectedAdmissionError`).
    AllocationFailed {
        container: usize,
        resource: Resource,
        failure: AllocationFailure,
    },
    /// The kubelet does not start on this node.
    KubeletNotStarted(StartupError),
    /// The kubelet's hint search for the pod (`None`, scope `pod`) or a
    /// container runs for minutes (more than
    /// [`SLOW_HINT_SEARCH_WORK`](super::work::SLOW_HINT_SEARCH_WORK) mask
    /// visits and permutations): the pod stays Pending that long, or, on a
    /// GB200 tray before 1.36, for good (kubernetes/kubernetes#135541,
    /// #131738). Counted on the empty node ([`super::work`]).
    HintSearchTooSlow {
        container: Option<usize>,
        /// Masks the hint providers walk.
        masks: u64,
        /// Permutations of hints the merge visits, at least.
        permutations: u64,
    },
}

/// An outcome decided by something the model does not see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indeterminate {
    /// Which GPUs the device plugin (or Go's map order) picks inside a
    /// multi-NUMA mask, for a later container that needs GPUs.
    GpuPick { container: usize },
    /// The same for the devices of another device-plugin resource.
    DevicePick {
        container: usize,
        resource: DeviceName,
    },
    /// Which CPUs the CPU Manager picks among cores alike but for their ids.
    CpuIds { container: usize },
    /// The order of equal-sized masks under `prefer-closest-numa-nodes`
    /// without the NUMA distances.
    NumaDistances { container: Option<usize> },
    /// `distribute-cpus-across-numa` reaches the case where the kubelet
    /// loops forever handing out the remainder.
    DistributeLoop { container: usize },
    /// The static Memory Manager's answer differs within the step the
    /// labels round each NUMA node's memory down by
    /// ([`super::NodeFacts::memory_rounding_mib`]).
    MemoryRounding,
    /// On a busy node under `full-pcpus-only`: other pods hold a number of
    /// exclusive CPUs on this NUMA node that is not whole cores, so which
    /// threads are free for an SMT-aligned allocation is not known.
    BusyCores { numa: usize },
    /// On a busy node: the static Memory Manager placed the pod's memory
    /// on NUMA nodes other pods' memory already uses. Which NUMA nodes
    /// their memory was grouped with (`Cells`) is not published, and it
    /// decides whether the kubelet accepts that placement.
    MemoryGroups,
}

/// Machines the model does not reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// A NUMA node spread over several sockets.
    NumaSpanningSockets,
    /// Reserved CPUs that fill cores only partly with more than 2 threads per
    /// core: which threads they take is unknown.
    PartialReservedCores { numa: usize },
    /// A huge page size present on some NUMA nodes only.
    HugePagesOnSomeNumaNodes,
    /// Sockets of different sizes where the kubelet's `takeFullSockets`
    /// takes a socket's busy CPUs along with its free ones.
    UnevenSockets,
}

/// Why the model cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    Missing(Fact),
    Indeterminate(Indeterminate),
    /// More NUMA nodes that matter to the pod than the model enumerates
    /// ([`super::mask::MAX_NUMA_NODES`]; on machines above 8 NUMA nodes only
    /// those some hint provider ranges over count), or more than a
    /// kubelet's mask holds (64).
    TooManyNumaNodes {
        numa_nodes: usize,
    },
    /// The merge needs more work than the model's budget.
    MergeTooLarge,
    Unsupported(Unsupported),
}

impl From<Fact> for Unknown {
    fn from(fact: Fact) -> Self {
        Unknown::Missing(fact)
    }
}

/// What the kubelet does with the pod on the (empty) node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted; `aligned`: every unit's resources on one NUMA node.
    Admit {
        aligned: bool,
    },
    Refuse(Refusal),
    Unknown(Unknown),
}

/// What an admitted pod leaves free, per NUMA node; `None` where a manager
/// does not act or the split is unknown.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Remaining {
    /// GPUs not allocated.
    pub gpus: Option<Vec<u32>>,
    /// CPUs of the shared pool, reserved ones left out (what later
    /// exclusive allocations can take).
    pub cpus: Option<Vec<u32>>,
    /// Free bytes of memory, hugepages-2Mi and hugepages-1Gi.
    pub memory: Option<Vec<[u64; 3]>>,
}

/// The answer: the verdict and the units evaluated up to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admission {
    pub verdict: Verdict,
    pub units: Vec<UnitReport>,
    /// On a refusal found by a later check while an earlier one was
    /// unknown: that unknown. The node refuses the pod whatever the missing
    /// fact is, and the refusal's reason is true, but the kubelet may name
    /// an earlier one (the check that is unknown here may fail first).
    pub behind: Option<Unknown>,
    /// After an admission: what is left on the node.
    pub remaining: Remaining,
}
