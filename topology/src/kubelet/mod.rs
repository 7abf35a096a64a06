//! A model of the kubelet's resource admission: what its Topology, CPU,
//! Memory and Device Managers do with a pod on a node, so that the policy can
//! tell beforehand whether a GPU pod it steers there will be admitted aligned,
//! admitted unaligned, or refused.
//!
//! [`admit()`] takes what is known about a node ([`NodeFacts`]) and what the
//! pod asks for ([`PodDemand`]) and answers ([`Admission`]) for the node
//! **when it runs no other pod**: at pod creation the policy cannot know
//! which node, nor its usage. [`admit_on_busy_node()`] answers the same
//! question with what other pods hold ([`Occupancy`], from the node's
//! NodeResourceTopology, [`crate::nrt`]): the binding check's. An
//! admission on the empty node may still fail on a busy node. A refusal holds on a busy node
//! too under scope `pod` and for the first container (every rule only loses
//! options as resources are taken); under scope `container` other pods can
//! move where an earlier container lands, and so, rarely, make room for a
//! later one that the empty node refuses. The answer is [`Verdict::Admit`] (with `aligned`),
//! [`Verdict::Refuse`] with the kubelet's reason and its numbers, or
//! [`Verdict::Unknown`] naming the missing fact or the choice the model cannot
//! see. Facts that cannot matter are not asked for: nothing when no manager
//! aligns anything for the pod, no CPU facts without exclusive CPUs, no
//! Topology Manager scope for a one-container pod, no distances unless a tie
//! between equal-sized masks decides something.
//!
//! *Aligned* means the Topology Manager's best hint for the pod (for every
//! container under scope `container`) is preferred and covers one NUMA
//! node, for all of the unit's GPUs, exclusive CPUs and pinned memory
//! together; under policy `none` only a one-NUMA-node machine is aligned.
//!
//! [`facts_from_topology`] reads the facts from a node's labels
//! ([`crate::NodeTopology`]), as the labeler publishes them.
//!
//! The pieces are public for the kubelet's own test cases
//! (`tests/kubelet_cases/`): [`merge::policy_merge`], [`merge::compare`],
//! [`device::gpu_hints`], [`cpu::cpu_topology_hints`], [`cpu::CpuState`],
//! [`memory::MemoryState`].
//!
//! # Reproduced (Kubernetes 1.34, `pkg/kubelet/cm/`)
//!
//! - `topologymanager/policy.go`: `filterProvidersHints` (nil hints = no
//!   preference, empty = no possible affinity), `mergePermutation` (AND of
//!   the masks, preferred only when every hint is and all masks are equal),
//!   `maxOfMinAffinityCounts`, `HintMerger.compare` and `Merge`, including the
//!   non-preferred branch; computed on sets ([`merge`] explains why that is
//!   exact). `numa_info.go`: `Narrowest`, `Closest` (average distance, then
//!   the lower mask). `policy_none.go`, `policy_best_effort.go`,
//!   `policy_restricted.go`, `policy_single_numa_node.go`
//!   (`filterSingleNumaHints`, the default affinity turned into `nil`) and
//!   their `canAdmitPodResult`. `policy_options.go` and `topology_manager.go`
//!   `NewManager`: `prefer-closest-numa-nodes` (ignored by
//!   `single-numa-node`), and no kubelet at all above
//!   `max-allowable-numa-nodes` (at least 8) NUMA nodes with a policy other
//!   than `none` ([`StartupError::TooManyNumaNodes`]), counting every NUMA
//!   node of `machineInfo.Topology` (the per-NUMA lists, else
//!   [`NodeFacts::machine_numa_nodes`]).
//! - `scope_pod.go`, `scope_container.go`, `scope.go` `admitPolicyNone`:
//!   one merge for the pod or one per container in `InitContainers` then
//!   `Containers` order, then `Allocate` container by container in the order
//!   of `container_manager_linux.go` (Device, CPU, Memory Manager); the first
//!   failure decides.
//! - `devicemanager/topology_hints.go`: `GetTopologyHints`,
//!   `GetPodTopologyHints`, `generateDeviceTopologyHints` (masks over every
//!   NUMA node before 1.36, over the NUMA nodes holding the resource's
//!   devices from 1.36 — kubernetes/kubernetes#138244, `deviceNUMANodes`,
//!   modelled from the PR's description as its source is not in the
//!   reference corpus: [`DeviceHintRange`], by
//!   [`NodeFacts::kubelet_version`]; unknown, both rules are followed and
//!   only answers that differ are [`Fact::KubeletVersion`] unknown;
//!   preferred at the fewest nodes whose GPUs, free or not, could
//!   hold the request), `getPodDeviceRequest` (`PodLimits`, sidecars
//!   included). `manager.go`: `Allocate` / `devicesToAllocate` /
//!   `filterByAffinity` (init containers' GPUs reused first, the hint's
//!   NUMA nodes next, sidecars' GPUs never reused). Every other device
//!   resource the pod lists (RDMA HCAs, SR-IOV VFs, MIG slices:
//!   [`PodDemand::devices`], counted per NUMA node in
//!   [`NodeFacts::devices`]) the same way, as its own hint list in the
//!   merge and its own allocation; one the node does not publish is
//!   [`Fact::Devices`] unknown, for that resource alone.
//! - `cpumanager/policy_static.go`: `guaranteedCPUs` (Guaranteed pod,
//!   integer request), `podGuaranteedCPUs`, `GetTopologyHints`,
//!   `GetPodTopologyHints`, `generateCPUTopologyHints` (masks over the NUMA
//!   nodes with CPUs, `cpuDetails.NUMANodes()`: CPU-less NUMA nodes
//!   (HBM, CXL memory) never appear; capacity counts reserved CPUs,
//!   availability does not;
//!   init containers' CPUs reusable), `isHintSocketAligned`
//!   (`align-by-socket`), `Allocate` with `enforceSMTAlignment`
//!   (`full-pcpus-only`: a request not a multiple of the threads per core,
//!   or above the free CPUs on cores without reserved ones, is an
//!   `SMTAlignmentError`; like the kubelet, CPUs held by init containers are
//!   not counted free), `allocateCPUs` / `getAlignedCPUs`,
//!   `updateCPUsToReuse`, and pods with pod-level resources left unpinned.
//!   `policy_options.go` `ValidateStaticPolicyOptions` (`align-by-socket`
//!   with `single-numa-node` stops the kubelet). `cpu_assignment.go`:
//!   `takeByTopologyNUMAPacked` (whole NUMA nodes and sockets, whole cores,
//!   single threads, each sorted by free CPUs ascending, `numaFirst` or
//!   `socketsFirst`) and `takeByTopologyNUMADistributed`
//!   (`distribute-cpus-across-numa`) at the level of NUMA nodes and cores.
//! - `memorymanager/policy_static.go`: `getDefaultMachineState` (every
//!   NUMA node of `machineInfo.Topology`, CPU-less and memory-less ones
//!   included, so a GH200's HBM node serves memory hints),
//!   `GetTopologyHints`, `GetPodTopologyHints`, `getPodRequestedResources`,
//!   `calculateHints` with its group rules, `Allocate` (`getDefaultHint`,
//!   `extendTopologyManagerHint`, `isAffinityViolatingNUMAAllocations`,
//!   `updateMachineState`, init containers' memory reused per mask), for
//!   memory and 2Mi / 1Gi huge pages; Guaranteed pods only, none with
//!   pod-level resources.
//! - Before all of it, the node-level check that the pod's GPUs fit the
//!   node ([`Refusal::Insufficient`]) and that its CPU, memory and
//!   hugepages requests fit the most the node's allocatable can be
//!   ([`Refusal::NodeTooSmall`]): the scheduler's `NodeResourcesFit` and
//!   the kubelet's `PredicateAdmitHandler`.
//! - Refusals before unknowns: a missing fact stops nothing it cannot
//!   change. A manager whose policy is not published gives unknown hints,
//!   which cannot lift a `restricted` or `single-numa-node` refusal by the
//!   others; after an unknown, rules that read nothing an earlier stage
//!   allocates still refuse ([`Admission::behind`] names the unknown).
//!
//! # Left out, and which way the answer errs
//!
//! - Other pods and unhealthy GPUs: [`admit()`] takes the node empty and
//!   healthy, and errs toward admitting. [`admit_on_busy_node()`] takes
//!   them from the occupancy (an unhealthy device counts as held); where
//!   the occupancy leaves a choice open it answers unknown: the cores
//!   other pods' exclusive CPUs sit on ([`Indeterminate::BusyCores`]) and
//!   the NUMA groups of their pinned memory ([`Indeterminate::MemoryGroups`]).
//! - The kubelet's other admission checks (eviction, node affinity), and
//!   the exact allocatable: reservations not published (`kubeReserved`
//!   under the `none` CPU Manager) are taken as none. Errs toward
//!   admitting.
//! - Which GPUs the device plugin picks inside a multi-NUMA mask
//!   (`GetPreferredAllocation`, Go's map order), which CPUs the CPU Manager
//!   picks among cores alike but for their ids: never guessed. When a later
//!   container's hints or an SMT check depend on them the answer is
//!   [`Unknown`] ([`Indeterminate::GpuPick`], [`Indeterminate::CpuIds`]).
//! - GPUs the device plugin reports without NUMA affinity (the kubelet then
//!   gives no GPU hints), GPUs on several NUMA nodes, several GPU
//!   resources: not modelled. Given per-NUMA counts for such a node the model
//!   aligns GPUs the kubelet does not: errs toward refusing, and toward
//!   calling admissions aligned.
//! - CPU Manager options `distribute-cpus-across-cores`,
//!   `prefer-align-cpus-by-uncorecache` (answered as if off; they change
//!   which cores, and with uncore caches which NUMA nodes, a split
//!   allocation takes, so only what later containers find free may differ)
//!   and `strict-cpu-reservation` (no effect on exclusive CPUs). Uncore
//!   caches are not modelled.
//! - Machines the model cannot follow answer [`Unknown::Unsupported`]: NUMA
//!   nodes spanning sockets, partly reserved cores with more than 2 threads,
//!   uneven sockets where `takeFullSockets` takes busy CPUs; a
//!   `distribute-cpus-across-numa` remainder the kubelet loops on answers
//!   [`Indeterminate::DistributeLoop`]. CPUs must be whole cores of
//!   `threads_per_core` threads.
//! - Machines above 8 NUMA nodes (`work.rs`, `projection.rs`): first the
//!   kubelet's own cost for the pod's first unit, counted from the per-NUMA
//!   counts without walking anything ([`work`]: masks each provider walks,
//!   permutations of `iterateAllProviderTopologyHints`); past about a minute
//!   ([`SLOW_HINT_SEARCH_WORK`], calibrated on kubernetes/kubernetes#131738)
//!   the answer is [`Refusal::HintSearchTooSlow`]: the pod stays Pending
//!   (kubernetes/kubernetes#135541). Then the merge runs on the NUMA nodes
//!   some provider ranges over for the pod (its devices' nodes, or every
//!   node before 1.36; the nodes with CPUs when CPUs are pinned; every
//!   node when memory is), which gives the kubelet's answer (the proof is
//!   at `relevant_numa_nodes`); more than [`MAX_NUMA_NODES`] (16) of them:
//!   [`Unknown::TooManyNumaNodes`]; a non-preferred merge larger than the
//!   work budget: [`Unknown::MergeTooLarge`]. Machines of up to 8 NUMA
//!   nodes take the whole-machine path as before. The cost check counts
//!   the first unit only (later ones meet a busier node), so a slow search
//!   for a later container is not seen. kubernetes/kubernetes#138172
//!   (`restrict-to-cpu-numa-nodes`, not merged) is not modelled.
//! - `prefer-closest-numa-nodes` without the SLIT distances: the best mask
//!   among equal-sized ones is unknown; verdict and alignment never depend on
//!   it (both orders agree on size and preference), what later containers
//!   find free may, and then the answer is unknown. A single node's own
//!   distance is taken equal for every node (10 in the ACPI SLIT).
//! - Feature gates at their 1.34 defaults: `PodLevelResources` on,
//!   `PodLevelResourceManagers` off (so pods with pod-level resources get no
//!   exclusive CPUs or pinned memory); options given are taken as accepted
//!   by their gates. A kubelet restart's regenerated hints are out of scope.
//!
//! Cost: the kubelet walks every mask per provider and every permutation of
//! hints; the model walks every mask once per resource (2^N) and merges in
//! at most 3^N mask operations per hint list, so one shape of up to 8 NUMA
//! nodes costs microseconds; above 8, N is the NUMA nodes that matter
//! (2 on a GB200 tray from 1.36), `benches/kubelet_model.rs`.

pub mod admit;
pub mod counts;
pub mod cpu;
pub mod device;
pub mod facts;
pub mod from_topology;
pub mod hint;
pub mod mask;
pub mod memory;
pub mod merge;
pub mod outcome;
pub mod work;

mod preflight;
mod projection;
mod scope;
mod unknowns;

pub use admit::{
    admit, admit_by_the_managers, admit_on_busy_node, DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
};
pub use device::DeviceHintRange;
pub use facts::{
    ContainerDemand, ContainerKind, CountedUnit, CpuManagerConfig, DeviceName, Fact, HugePages,
    InputError, KubeletVersion, MemoryManagerPolicy, NodeFacts, NumaNodeFacts, NumaOccupancy,
    Occupancy, PodDemand, TopologyManagerConfig,
};
pub use from_topology::facts_from_topology;
pub use hint::{HintSet, ProviderHints, ResourceHints, TopologyHint};
pub use mask::{MaskSet, NumaMask, MAX_MACHINE_NUMA_NODES, MAX_NUMA_NODES};
pub use merge::{
    compare, merge_lists, policy_merge, Kept, MaskOrder, Merged, NumaInfo, PolicyMerge,
};
pub use outcome::{
    Admission, AllocationFailure, HintReport, Indeterminate, Refusal, Remaining, Resource,
    ResourceReport, StartupError, UnitReport, Unknown, Unsupported, Verdict,
};
pub use work::{HintSearchWork, SLOW_HINT_SEARCH_WORK};

use facts::ContainerKind as Kind;

/// The kubelet's pod-level request of one resource from its containers'
/// (KEP-753): the larger of the app containers plus every sidecar, and of
/// each init container plus the sidecars started before it. Saturates: a
/// request that large fits no node either way.
pub(crate) fn pod_effective(requests: impl IntoIterator<Item = (Kind, u64)>) -> u64 {
    let mut init_max = 0u64;
    let mut sidecars = 0u64;
    let mut apps = 0u64;
    for (kind, request) in requests {
        match kind {
            Kind::Sidecar => sidecars = sidecars.saturating_add(request),
            Kind::Init => init_max = init_max.max(sidecars.saturating_add(request)),
            Kind::App => apps = apps.saturating_add(request),
        }
    }
    init_max.max(apps.saturating_add(sidecars))
}
