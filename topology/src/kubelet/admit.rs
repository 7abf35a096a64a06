//! A pod's admission on an empty node: the Topology Manager's scopes
//! driving the hint providers and their `Allocate` calls.
//!
//! Reproduces `pkg/kubelet/cm/topologymanager/scope_pod.go` (one merge over
//! `GetPodTopologyHints`, then `Allocate` per container with the pod's
//! hint), `scope_container.go` (merge and `Allocate` container by
//! container, in `InitContainers` then `Containers` order),
//! `scope_none.go` / `scope.go` `admitPolicyNone` (no merge, `Allocate`
//! with an empty hint), the provider order of `container_manager_linux.go`
//! (Device Manager, CPU Manager, Memory Manager; the first failing
//! `Allocate` decides) and `topology_manager.go` `NewManager` (the kubelet
//! does not start above `max-allowable-numa-nodes`).

use super::cpu::{guaranteed_cpus, CpuAllocError, CpuOptions, CpuState};
use super::device::{
    allocate_gpus, device_hints, pod_device_request, pod_gpu_request, DeviceHintRange, DeviceState,
    GpuState,
};
use super::facts::{
    numa_nodes, validate, ContainerDemand, CountedUnit, DeviceName, Fact, HugePages, InputError,
    MemoryManagerPolicy, NodeFacts, NumaNodeFacts, Occupancy, PodDemand, HUGE_PAGE_1GI_BYTES,
    HUGE_PAGE_2MI_BYTES, MIB,
};
use super::hint::{ProviderHints, TopologyHint};
use super::mask::{NumaMask, MAX_MACHINE_NUMA_NODES, MAX_NUMA_NODES};
use super::memory::{
    container_request, memory_hints, pod_request, MemoryAmounts, MemoryState, MEMORY_RESOURCES,
};
use super::merge::{policy_merge, NumaInfo, PolicyMerge};
use super::outcome::{
    Admission, AllocationFailure, HintReport, Indeterminate, Refusal, Remaining, Resource,
    ResourceReport, StartupError, UnitReport, Unknown, Verdict,
};
use super::work::{hint_search_work, HintSearchWork, ListShape, SLOW_HINT_SEARCH_WORK};
use crate::labels::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};

/// `maxAllowableNUMANodes` when the option is not set; the kubelet refuses
/// values below it, so machines up to this size never depend on the option.
pub const DEFAULT_MAX_ALLOWABLE_NUMA_NODES: usize = 8;

/// Where the evaluation stops early.
enum Stop {
    Refuse(Refusal),
    Unknown(Unknown),
    Input(InputError),
}

impl From<Unknown> for Stop {
    fn from(u: Unknown) -> Self {
        Stop::Unknown(u)
    }
}

impl From<Fact> for Stop {
    fn from(f: Fact) -> Self {
        Stop::Unknown(Unknown::Missing(f))
    }
}

impl From<InputError> for Stop {
    fn from(e: InputError) -> Self {
        Stop::Input(e)
    }
}

type Step<T> = Result<T, Stop>;

/// What the kubelet would do with `pod` on `node` when the node runs no other pod.
///
/// The policy cannot know what already runs on a node, so this answers for
/// an empty one (see the module documentation for what that means on a busy
/// node).
pub fn admit(node: &NodeFacts, pod: &PodDemand) -> Result<Admission, InputError> {
    admit_given(node, pod, None)
}

/// What the kubelet would do with `pod` on `node` now, with `occupancy`
/// held by the pods it already runs: the binding check's question.
///
/// The same model as [`admit`], each manager starting from its state less
/// what other pods hold (`GpuState::occupy`, `CpuState::occupy`,
/// `MemoryState::occupy`): the Device Manager's `allocatedDevices`, the
/// CPU Manager's assignments (`GetAvailableCPUs` = default set less
/// reserved), the Memory Manager's `MemoryTable.Free`. Hints are still sized
/// on capacity (`minAffinitySize` counts every device and CPU, free or
/// not; `calculateHints` counts allocatable memory), and tested on what is
/// free, as in `generateDeviceTopologyHints`, `generateCPUTopologyHints`
/// and `calculateHints`.
///
/// What the holdings do not say is answered unknown where it matters: the
/// cores other pods' CPUs sit on ([`Indeterminate::BusyCores`]) and the
/// groups other pods' memory was placed in ([`Indeterminate::MemoryGroups`]).
pub fn admit_on_busy_node(
    node: &NodeFacts,
    pod: &PodDemand,
    occupancy: &Occupancy,
) -> Result<Admission, InputError> {
    admit_given(node, pod, Some(occupancy))
}

fn admit_given(
    node: &NodeFacts,
    pod: &PodDemand,
    occupancy: Option<&Occupancy>,
) -> Result<Admission, InputError> {
    let admission = admit_with(node, pod, NodeFit::Checked, occupancy)?;
    // The labels round each NUMA node's memory down: where the static
    // Memory Manager pins the pod, its answer at the top of that step must
    // be the same, else memory the labels do not show decides it.
    let Some(most) = with_most_memory(node, pod) else {
        return Ok(admission);
    };
    let at_most = admit_with(&most, pod, NodeFit::Checked, occupancy)?;
    // The figures of a refusal differ with the memory; the outcome is what
    // must not.
    let same = match (&admission.verdict, &at_most.verdict) {
        (Verdict::Refuse(_), Verdict::Refuse(_)) | (Verdict::Unknown(_), Verdict::Unknown(_)) => {
            true
        }
        (low, high) => low == high,
    };
    if same {
        return Ok(admission);
    }
    Ok(Admission {
        verdict: Verdict::Unknown(Unknown::Indeterminate(Indeterminate::MemoryRounding)),
        units: Vec::new(),
        behind: None,
        remaining: Remaining::default(),
    })
}

/// The node with the most regular memory per NUMA node its labels allow
/// ([`NodeFacts::memory_rounding_mib`]), when the static Memory Manager may
/// pin memory of this pod there; `None` when the memory is exact, not
/// pinned, or not known.
fn with_most_memory(node: &NodeFacts, pod: &PodDemand) -> Option<NodeFacts> {
    let step = node
        .memory_rounding_mib
        .checked_sub(1)
        .filter(|&more| more > 0)?;
    let pinned = node.memory_manager != Some(MemoryManagerPolicy::None)
        && pod.guaranteed
        && !pod.pod_level_resources
        && pod.containers.iter().any(|c| c.memory_bytes > 0);
    if !pinned {
        return None;
    }
    let mut most = node.clone();
    for numa in most.numa_nodes.as_mut()? {
        numa.memory_mib = Some(numa.memory_mib?.saturating_add(step));
    }
    most.memory_rounding_mib = 1;
    Some(most)
}

/// [`admit`] by the kubelet's managers alone: the node's size against the
/// pod's requests (the scheduler's and the predicate handler's check,
/// [`node_fit`]) is left out, GPUs excepted, as the Device Manager's own
/// `Allocate` checks them. For comparing the managers with a brute-force
/// kubelet that has no scheduler (`tests/model_vs_brute.rs`).
pub fn admit_by_the_managers(node: &NodeFacts, pod: &PodDemand) -> Result<Admission, InputError> {
    admit_with(node, pod, NodeFit::GpusOnly, None)
}

/// Which node-size checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeFit {
    Checked,
    GpusOnly,
}

fn admit_with(
    node: &NodeFacts,
    pod: &PodDemand,
    fit: NodeFit,
    occupancy: Option<&Occupancy>,
) -> Result<Admission, InputError> {
    validate(node, pod)?;
    if let (Some(held), Some(numas)) = (occupancy, node.numa_nodes.as_deref()) {
        if held.numa_nodes.len() != numas.len() {
            return Err(InputError::OccupancyNumaNodes {
                listed: held.numa_nodes.len(),
                numa_nodes: numas.len(),
            });
        }
    }
    let mut units = Vec::new();
    let mut remaining = Remaining::default();
    let mut behind = None;
    let verdict = match evaluate(node, pod, fit, occupancy, &mut units, &mut remaining) {
        Ok(aligned) => Verdict::Admit { aligned },
        Err(Stop::Refuse(r)) => Verdict::Refuse(r),
        Err(Stop::Unknown(u)) => match refusal_whatever_is_unknown(node, pod) {
            Some((refusal, unit)) => {
                behind = Some(u);
                units = unit.into_iter().collect();
                Verdict::Refuse(refusal)
            }
            None => Verdict::Unknown(u),
        },
        Err(Stop::Input(e)) => return Err(e),
    };
    if !matches!(verdict, Verdict::Admit { .. }) {
        remaining = Remaining::default();
    }
    Ok(Admission {
        verdict,
        units,
        behind,
        remaining,
    })
}

/// One alignment unit's demand.
#[derive(Debug, Clone)]
struct UnitDemand {
    gpus: Option<u32>,
    /// Per device resource of the pod ([`PodDemand::devices`]).
    devices: Vec<Option<u32>>,
    cpus: u32,
    memory: MemoryAmounts,
}

/// The managers that act on this pod and the machine they act on.
struct Admitter<'a> {
    pod: &'a PodDemand,
    policy: TopologyManagerPolicy,
    numa: NumaInfo,
    prefer_closest: Option<bool>,
    first_without_distances: usize,
    /// The NUMA nodes the Device Manager's masks range over.
    range: DeviceHintRange,
    /// The CPU Manager may pin CPUs (`static`, or its policy unknown: then
    /// `cpu` is that unknown).
    cpu_static: bool,
    /// The Memory Manager may pin memory, as `cpu_static`.
    memory_static: bool,
    gpu: Option<GpuState>,
    /// Per device resource of the pod: its devices, or why they are unknown.
    devices: Vec<DeviceProvider>,
    cpu: Result<CpuState, Unknown>,
    memory: Result<MemoryState, Unknown>,
}

/// The kubelet refuses to start with these settings (`NewManager`,
/// `ValidateStaticPolicyOptions`): checked with the facts that are known.
///
/// `NewManager` counts `machineInfo.Topology` (every NUMA node cAdvisor
/// sees, CPU-less and memory-less ones included): the per-NUMA lists when
/// known, else the node's `machine-numa-nodes` count. Neither known, the
/// check is skipped only where it cannot fail: a machine without lists
/// and count may still have more than 8 NUMA nodes, but then the managers
/// stop on the missing lists anyway.
fn startup(node: &NodeFacts) -> Step<()> {
    let tm = &node.topology_manager;
    let machine_numa_nodes = node.numa_nodes.as_ref().map(Vec::len).or_else(|| {
        node.machine_numa_nodes
            .and_then(|n| usize::try_from(n).ok())
    });
    if let Some(count) = machine_numa_nodes {
        if count > DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
            let policy = tm.policy.ok_or(Fact::TopologyManagerPolicy)?;
            if policy != TopologyManagerPolicy::None {
                let max = tm
                    .max_allowable_numa_nodes
                    .ok_or(Fact::MaxAllowableNumaNodes)?;
                if count > max as usize {
                    return Err(Stop::Refuse(Refusal::KubeletNotStarted(
                        StartupError::TooManyNumaNodes {
                            numa_nodes: count,
                            max_allowable: max,
                        },
                    )));
                }
            }
        }
    }
    if node.cpu_manager.policy == Some(CpuManagerPolicy::Static)
        && node.cpu_manager.align_by_socket == Some(true)
        && tm.policy == Some(TopologyManagerPolicy::SingleNumaNode)
    {
        return Err(Stop::Refuse(Refusal::KubeletNotStarted(
            StartupError::AlignBySocketWithSingleNumaNode,
        )));
    }
    Ok(())
}

/// One device resource of the pod on the node.
struct DeviceProvider {
    name: DeviceName,
    /// `Err`: the node does not publish the resource (unknown, not absent).
    state: Result<DeviceState, Unknown>,
}

/// The devices of each device resource the pod lists, as the node publishes
/// them; a resource the node does not publish (or not for every NUMA node)
/// is unknown for that resource alone, so that the other providers can
/// still refuse. More requested than the node has at all is refused.
fn device_providers(
    node: &NodeFacts,
    pod: &PodDemand,
    numas: &[NumaNodeFacts],
) -> Step<Vec<DeviceProvider>> {
    let mut providers = Vec::with_capacity(pod.devices.len());
    for (index, resource) in pod.devices.iter().enumerate() {
        let name = DeviceName::new(resource);
        let state = match node.devices.get(resource) {
            Some(counts) if counts.len() == numas.len() => {
                let state = DeviceState::new(counts.clone());
                let requested = u64::from(pod_device_request(&pod.containers, index).unwrap_or(0));
                if requested > state.total_gpus() {
                    return Err(Stop::Refuse(Refusal::Insufficient {
                        resource: Resource::Device(name),
                        requested,
                        capacity: state.total_gpus(),
                    }));
                }
                Ok(state)
            }
            _ => Err(Unknown::Missing(Fact::Devices { resource: name })),
        };
        providers.push(DeviceProvider { name, state });
    }
    Ok(providers)
}

fn cpu_options(node: &NodeFacts) -> Result<CpuOptions, Fact> {
    let cm = &node.cpu_manager;
    Ok(CpuOptions {
        full_pcpus_only: cm.full_pcpus_only.ok_or(Fact::FullPcpusOnly)?,
        distribute_cpus_across_numa: cm
            .distribute_cpus_across_numa
            .ok_or(Fact::DistributeCpusAcrossNuma)?,
        align_by_socket: cm.align_by_socket.ok_or(Fact::AlignBySocket)?,
    })
}

/// The node's size against the pod's requests: the scheduler's
/// `NodeResourcesFit` (and the kubelet's `PredicateAdmitHandler`, which runs
/// the same `noderesources.Fits` on `status.allocatable`) refuses a pod that
/// requests more than the node's allocatable. Every bound here is the most
/// the allocatable can be on the facts known, so a refusal holds whatever
/// the missing facts are. A resource the pod requests whose size is not
/// known leaves an admission unknown (the refusals found stand).
///
/// - GPUs: the per-NUMA counts' sum, else the node's `gpus` count. The pod's
///   request is its effective one (`getPodDeviceRequest`, as the scheduler
///   sums it).
/// - CPUs: the NUMA nodes' online CPUs (the node's `capacity`), less the
///   kubelet's reserved CPUs where known: `ceil(kubeReserved +
///   systemReserved)` (or `reservedSystemCPUs`), so the allocatable is
///   below `capacity - reserved + 1`. The static CPU Manager always
///   reserves some: unpublished, they leave the size unknown.
/// - Memory and hugepages: the NUMA nodes' allocatable amounts, as the
///   labels give them (net of hugepages and `reservedMemory`, which the
///   static Memory Manager requires to equal `kubeReserved + systemReserved +
///   evictionHard`), each plus the step the labels round down by
///   ([`NodeFacts::memory_rounding_mib`]; at least the MiB).
///
/// Pod-level `spec.resources` replace the containers' requests in the
/// scheduler's sum: CPU and memory are then not checked here.
fn node_fit(node: &NodeFacts, pod: &PodDemand, fit: NodeFit) -> Step<Option<Unknown>> {
    if pod.containers.iter().any(|c| c.gpus.is_some()) {
        if let Some(capacity) = node_gpus(node) {
            let requested = u64::from(pod_gpu_request(&pod.containers).unwrap_or(0));
            if requested > capacity {
                return Err(Stop::Refuse(Refusal::Insufficient {
                    resource: Resource::Gpu,
                    requested,
                    capacity,
                }));
            }
        }
    }
    if pod.pod_level_resources || fit == NodeFit::GpusOnly {
        return Ok(None);
    }
    let numas = node.numa_nodes.as_deref();
    // The sum over the NUMA nodes, or the first NUMA node (by index) where
    // the fact is missing; every machine has a NUMA node 0.
    let sum = |f: &dyn Fn(&NumaNodeFacts) -> Option<u64>| -> Result<u64, usize> {
        let numas = numas.ok_or(0usize)?;
        numas.iter().enumerate().try_fold(0u64, |total, (numa, n)| {
            Ok(total.saturating_add(f(n).ok_or(numa)?))
        })
    };
    let requested = |f: &dyn Fn(&ContainerDemand) -> u64| {
        super::pod_effective(pod.containers.iter().map(|c| (c.kind, f(c))))
    };
    let huge = |pages: Option<HugePages>, size: u64| {
        pages.map(|p| {
            p.pages
                .saturating_sub(p.reserved_pages)
                .saturating_mul(size)
        })
    };
    let static_cpu = node.cpu_manager.policy == Some(CpuManagerPolicy::Static);
    let cpu_size = sum(&|n| n.cpus.map(u64::from))
        .map_err(|numa| Fact::Cpus { numa })
        .and_then(|cpus| {
            // Reserved CPUs are kept from the allocatable under any CPU
            // Manager policy; the static one always has some.
            let reserved = match sum(&|n| n.reserved_cpus.map(u64::from)) {
                Ok(reserved) => reserved,
                Err(numa) if static_cpu => return Err(Fact::ReservedCpus { numa }),
                Err(_) => 0,
            };
            Ok((
                cpus.saturating_mul(1000),
                reserved.min(cpus).saturating_mul(1000),
            ))
        });
    let memory_size = sum(&|n| {
        let pages = huge(n.hugepages_2mi, HUGE_PAGE_2MI_BYTES).unwrap_or(0)
            + huge(n.hugepages_1gi, HUGE_PAGE_1GI_BYTES).unwrap_or(0);
        let total = n.memory_mib?.saturating_sub(n.reserved_memory_mib?);
        Some(
            total
                .saturating_add(1)
                .saturating_mul(MIB)
                .saturating_sub(pages),
        )
    })
    .map(|bytes| (bytes, 0))
    .map_err(|numa| Fact::Memory { numa });
    let pages_size = |size, fact: fn(usize) -> Fact| {
        sum(&|n| {
            let pages = if size == HUGE_PAGE_2MI_BYTES {
                n.hugepages_2mi
            } else {
                n.hugepages_1gi
            };
            huge(pages, size)
        })
        .map(|bytes| (bytes, 0))
        .map_err(fact)
    };
    let sizes = [
        (Resource::Cpu, requested(&|c| c.cpu_millis), cpu_size),
        (
            Resource::Memory,
            requested(&|c| c.memory_bytes),
            memory_size,
        ),
        (
            Resource::HugePages2Mi,
            requested(&|c| c.hugepages_2mi_bytes),
            pages_size(HUGE_PAGE_2MI_BYTES, |numa| Fact::HugePages2Mi { numa }),
        ),
        (
            Resource::HugePages1Gi,
            requested(&|c| c.hugepages_1gi_bytes),
            pages_size(HUGE_PAGE_1GI_BYTES, |numa| Fact::HugePages1Gi { numa }),
        ),
    ];
    let mut unknown = None;
    for (resource, requested, size) in sizes {
        if requested == 0 {
            continue;
        }
        let (capacity, reserved) = match size {
            Ok(size) => size,
            Err(fact) => {
                unknown.get_or_insert(Unknown::Missing(fact));
                continue;
            }
        };
        let slack = match resource {
            // The labels round each NUMA node's memory down by less than
            // a step: the refusal holds only above the most it can be
            // (the figures stay the published ones).
            Resource::Memory => node
                .memory_rounding_mib
                .saturating_sub(1)
                .saturating_mul(MIB.saturating_mul(numas.map_or(0, |numas| numas.len() as u64))),
            // A reservation rounded up to whole CPUs leaves less than one
            // CPU more allocatable than `capacity - reserved`.
            _ if reserved > 0 => 999,
            _ => 0,
        };
        let most = capacity.saturating_sub(reserved).saturating_add(slack);
        if requested > most {
            return Err(Stop::Refuse(Refusal::NodeTooSmall {
                resource,
                requested,
                capacity,
                reserved,
            }));
        }
    }
    Ok(unknown)
}

/// The node's GPUs: the per-NUMA counts' sum when all are known, else the
/// node's count.
fn node_gpus(node: &NodeFacts) -> Option<u64> {
    let listed = node.numa_nodes.as_deref().and_then(|numas| {
        numas
            .iter()
            .try_fold(0u64, |total, n| Some(total + u64::from(n.gpus?)))
    });
    listed.or(node.gpus.map(u64::from))
}

/// The GPUs on the NUMA node that has the most: from the per-NUMA counts
/// when all are known, else the node's `gpus-per-numa-max`.
fn largest_numa_gpus(node: &NodeFacts) -> Option<u32> {
    let listed = node.numa_nodes.as_deref().and_then(|numas| {
        numas
            .iter()
            .try_fold(0u32, |most, n| Some(most.max(n.gpus?)))
    });
    listed.or(node.gpus_per_numa_max)
}

/// After the evaluation in the kubelet's order stopped at an unknown: a
/// rule that refuses the pod on the facts it reads, whatever the unknown
/// is, with the unit report its explanation reads. Each rule depends on
/// nothing an earlier stage allocates:
///
/// - `single-numa-node` and a unit whose GPUs no NUMA node holds: the
///   Device Manager's preferred hints have the fewest NUMA nodes whose GPUs
///   (free or not) hold the request (`generateDeviceTopologyHints`), so none
///   is of one NUMA node, whatever the other providers say and whatever an
///   earlier container took; `single-numa-node` admits only a preferred
///   hint of one NUMA node (`policy_single_numa_node.go`). Under scope
///   `pod` the unit is the pod's GPUs, under `container` each container's;
///   with the scope unknown, a container too large for one NUMA node is
///   refused under both.
/// - `full-pcpus-only` and a container's exclusive CPUs that are not a
///   multiple of the threads per core: the static policy's `Allocate`
///   refuses it before it looks at any free CPU (`SMTAlignmentError`),
///   whatever the Topology Manager chose and whatever was allocated before.
///
/// The kubelet starting is not in doubt here: with `startup` unknown the
/// node may never run the pod for another reason, so no rule is applied.
fn refusal_whatever_is_unknown(
    node: &NodeFacts,
    pod: &PodDemand,
) -> Option<(Refusal, Option<UnitReport>)> {
    if startup(node).is_err() {
        return None;
    }
    let tm = &node.topology_manager;
    let single_numa_node = tm.policy == Some(TopologyManagerPolicy::SingleNumaNode);
    let largest = largest_numa_gpus(node);
    let too_wide = |gpus: u32| single_numa_node && gpus > 0 && largest.is_some_and(|m| gpus > m);
    let refused_unit = |container: Option<usize>, gpus: u32| {
        let report = ResourceReport {
            resource: Resource::Gpu,
            request: u64::from(gpus),
            hints: numa_span(node, gpus),
        };
        (
            Refusal::TopologyAffinity { container },
            Some(UnitReport {
                container,
                resources: vec![report],
                hint: None,
                aligned: false,
            }),
        )
    };
    let scope = if pod.containers.len() > 1 {
        tm.scope
    } else {
        Some(TopologyManagerScope::Container)
    };
    let gpus_of = |c: &ContainerDemand| c.gpus.unwrap_or(0);
    match scope {
        Some(TopologyManagerScope::Pod) => {
            let gpus = pod_gpu_request(&pod.containers).unwrap_or(0);
            if too_wide(gpus) {
                return Some(refused_unit(None, gpus));
            }
        }
        Some(TopologyManagerScope::Container) => {
            if let Some(i) = pod.containers.iter().position(|c| too_wide(gpus_of(c))) {
                return Some(refused_unit(Some(i), gpus_of(&pod.containers[i])));
            }
        }
        None => {
            let widest = (0..pod.containers.len()).max_by_key(|&i| gpus_of(&pod.containers[i]));
            if let Some(i) = widest.filter(|&i| too_wide(gpus_of(&pod.containers[i]))) {
                return Some(refused_unit(Some(i), gpus_of(&pod.containers[i])));
            }
        }
    }
    let cm = &node.cpu_manager;
    let smt = cm.policy == Some(CpuManagerPolicy::Static) && cm.full_pcpus_only == Some(true);
    let threads = node.threads_per_core.filter(|&t| t > 1)?;
    if !(smt && pod.guaranteed && !pod.pod_level_resources) {
        return None;
    }
    pod.containers.iter().enumerate().find_map(|(i, c)| {
        let cpus = guaranteed_cpus(true, c.cpu_millis);
        (cpus > 0 && !cpus.is_multiple_of(threads)).then_some((
            Refusal::SmtAlignment {
                container: i,
                requested: cpus,
                cpus_per_core: threads,
                available_physical_cpus: None,
            },
            None,
        ))
    })
}

/// The Device Manager's report for `gpus` on `node` with nothing taken:
/// the fewest NUMA nodes whose GPUs hold them, from the per-NUMA counts
/// when known, else from `gpus-per-numa-max` (exact when every NUMA node
/// with GPUs has that many, as on the machines labelers publish, and
/// otherwise the least it can be).
fn numa_span(node: &NodeFacts, gpus: u32) -> HintReport {
    let listed: Option<Vec<u32>> = node
        .numa_nodes
        .as_deref()
        .and_then(|numas| numas.iter().map(|n| n.gpus).collect());
    let span = match (listed, largest_numa_gpus(node)) {
        (Some(mut counts), _) => {
            crate::sort::sort_by(&mut counts, |a, b| b.cmp(a));
            let mut held = 0u64;
            counts
                .iter()
                .position(|&c| {
                    held += u64::from(c);
                    held >= u64::from(gpus)
                })
                .map(|i| i as u32 + 1)
        }
        (None, Some(most)) if most > 0 => Some(gpus.div_ceil(most)),
        _ => None,
    };
    match span {
        Some(n) => HintReport::Hints {
            narrowest_capacity: n,
            narrowest_available: n,
            preferred_masks: 0,
        },
        None => HintReport::NoFit,
    }
}

fn evaluate(
    node: &NodeFacts,
    pod: &PodDemand,
    fit: NodeFit,
    occupancy: Option<&Occupancy>,
    units: &mut Vec<UnitReport>,
    remaining: &mut Remaining,
) -> Step<bool> {
    // A kubelet that does not start decides first; one that may not start
    // (an unknown) still leaves the node-size refusals true.
    let started = startup(node);
    if let Err(Stop::Refuse(refusal)) = started {
        return Err(Stop::Refuse(refusal));
    }
    let size_unknown = node_fit(node, pod, fit)?;
    started?;
    // The managers' answer stands, but an admission needs the node's size.
    // Unknown, it names the first fact missing in the kubelet's order: a
    // manager's policy before what that manager then reads.
    let aligned =
        evaluate_managers(node, pod, occupancy, units, remaining).map_err(|stop| match stop {
            Stop::Unknown(later) => Stop::Unknown(pinning(node, pod).unknown().unwrap_or(later)),
            other => other,
        })?;
    match size_unknown {
        Some(unknown) => Err(Stop::Unknown(unknown)),
        None => Ok(aligned),
    }
}

/// Whether the CPU and Memory Managers pin something of the pod: `None`
/// where the manager's policy is not published. Its hints and its
/// `Allocate` are then unknown, but the evaluation goes on: under
/// `restricted` and `single-numa-node` a hint provider more only removes
/// preferred hints, so a refusal by the others stands
/// ([`Admitter::merge_unit`]).
struct Pinning {
    cpu_static: Option<bool>,
    memory_static: Option<bool>,
}

impl Pinning {
    /// The policy that is not published, CPU Manager first.
    fn unknown(&self) -> Option<Unknown> {
        match (self.cpu_static, self.memory_static) {
            (None, _) => Some(Unknown::Missing(Fact::CpuManagerPolicy)),
            (_, None) => Some(Unknown::Missing(Fact::MemoryManagerPolicy)),
            _ => None,
        }
    }
}

fn pinning(node: &NodeFacts, pod: &PodDemand) -> Pinning {
    let pinned = pod.guaranteed && !pod.pod_level_resources;
    let wants_cpus = pinned
        && pod
            .containers
            .iter()
            .any(|c| guaranteed_cpus(true, c.cpu_millis) > 0);
    let wants_memory = pinned
        && pod
            .containers
            .iter()
            .any(|c| container_request(c) != [0; 3]);
    Pinning {
        cpu_static: if wants_cpus {
            node.cpu_manager
                .policy
                .map(|policy| policy == CpuManagerPolicy::Static)
        } else {
            Some(false)
        },
        memory_static: if wants_memory {
            node.memory_manager
                .map(|policy| policy == MemoryManagerPolicy::Static)
        } else {
            Some(false)
        },
    }
}

/// The Topology Manager's scopes over the hint providers, on a node known
/// to start and to be large enough.
///
/// With the kubelet's version unknown, both device-hint rules
/// ([`DeviceHintRange`]) are followed where they can differ (a requested
/// device resource missing from some NUMA node, under a policy that
/// merges): the same answer under both stands, different answers are
/// [`Fact::KubeletVersion`] unknown.
fn evaluate_managers(
    node: &NodeFacts,
    pod: &PodDemand,
    occupancy: Option<&Occupancy>,
    units: &mut Vec<UnitReport>,
    remaining: &mut Remaining,
) -> Step<bool> {
    let range = match node.kubelet_version {
        Some(version) => DeviceHintRange::of(version),
        None if device_rules_may_differ(node, pod) => {
            let mut new_units = Vec::new();
            let mut new_remaining = Remaining::default();
            let old = evaluate_under(
                node,
                pod,
                occupancy,
                DeviceHintRange::EveryNumaNode,
                units,
                remaining,
            );
            let new = evaluate_under(
                node,
                pod,
                occupancy,
                DeviceHintRange::DeviceNumaNodes,
                &mut new_units,
                &mut new_remaining,
            );
            let same_units = units.len() == new_units.len()
                && units.iter().zip(&new_units).all(|(a, b)| {
                    (a.container, a.hint, a.aligned) == (b.container, b.hint, b.aligned)
                });
            return if same_step(&old, &new) && same_units && *remaining == new_remaining {
                old
            } else {
                units.clear();
                *remaining = Remaining::default();
                Err(Fact::KubeletVersion.into())
            };
        }
        // Where the rules cannot differ, either one.
        None => DeviceHintRange::EveryNumaNode,
    };
    evaluate_under(node, pod, occupancy, range, units, remaining)
}

/// Whether the device-hint rules of kubelets before and from 1.36 can lead
/// to different answers: some device resource the pod requests (GPUs
/// included) is absent from some NUMA node, under `best-effort`, or on any
/// merging policy above 8 NUMA nodes (where the kubelet's cost, and so
/// [`Refusal::HintSearchTooSlow`], depends on the masks walked).
///
/// The rules' lists differ only by masks holding a NUMA node without the
/// resource, and for a request of at least one device such a mask is never
/// preferred: without that node it still holds the request, with one node
/// fewer, so it is wider than `minAffinitySize`. (An explicit request of 0
/// is held by every mask, a device-less node alone too: its preferred
/// one-node hints differ.) The preferred hints are the same, hence under
/// `single-numa-node` (which keeps only preferred one-node hints) the
/// merge is, and under `restricted` every preferred merge is and every
/// other one is refused (`TopologyAffinityError` for the same unit).
/// Only `best-effort` admits a non-preferred hint, which may then differ.
fn device_rules_may_differ(node: &NodeFacts, pod: &PodDemand) -> bool {
    let Some(policy) = node.topology_manager.policy else {
        return true;
    };
    if policy == TopologyManagerPolicy::None {
        return false;
    }
    let above_8 = node
        .numa_nodes
        .as_ref()
        .is_some_and(|n| n.len() > DEFAULT_MAX_ALLOWABLE_NUMA_NODES);
    let zero_request = pod
        .containers
        .iter()
        .any(|c| c.gpus == Some(0) || c.devices.contains(&Some(0)));
    if policy != TopologyManagerPolicy::BestEffort && !above_8 && !zero_request {
        return false;
    }
    let Some(numas) = node.numa_nodes.as_deref() else {
        return false;
    };
    let gpus_missing_somewhere =
        pod.containers.iter().any(|c| c.gpus.is_some()) && numas.iter().any(|n| n.gpus == Some(0));
    let devices_missing_somewhere = pod.devices.iter().any(|resource| {
        node.devices
            .get(resource)
            .is_some_and(|counts| counts.contains(&0))
    });
    gpus_missing_somewhere || devices_missing_somewhere
}

/// Two evaluations end the same way.
fn same_step(a: &Step<bool>, b: &Step<bool>) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y,
        (Err(Stop::Refuse(x)), Err(Stop::Refuse(y))) => x == y,
        (Err(Stop::Unknown(x)), Err(Stop::Unknown(y))) => x == y,
        (Err(Stop::Input(x)), Err(Stop::Input(y))) => x == y,
        _ => false,
    }
}

/// [`evaluate_managers`] under one device-hint rule.
fn evaluate_under(
    node: &NodeFacts,
    pod: &PodDemand,
    occupancy: Option<&Occupancy>,
    range: DeviceHintRange,
    units: &mut Vec<UnitReport>,
    remaining: &mut Remaining,
) -> Step<bool> {
    let wants_gpus = pod.containers.iter().any(|c| c.gpus.is_some());
    let Pinning {
        cpu_static,
        memory_static,
    } = pinning(node, pod);
    let may_pin_cpus = cpu_static != Some(false);
    let may_pin_memory = memory_static != Some(false);
    let wants_devices = !pod.devices.is_empty();
    if !(wants_gpus || wants_devices || may_pin_cpus || may_pin_memory) {
        // No provider gives a hint and no manager pins anything.
        return Ok(true);
    }
    if memory_static == Some(true) {
        if let Some(i) = pod.containers.iter().position(|c| c.memory_bytes == 0) {
            return Err(InputError::GuaranteedWithoutMemory { container: i }.into());
        }
    }
    let policy = node
        .topology_manager
        .policy
        .ok_or(Fact::TopologyManagerPolicy)?;
    let machine = numa_nodes(node)?;
    if machine.is_empty() {
        return Err(InputError::NoNumaNodes.into());
    }
    if machine.len() > MAX_MACHINE_NUMA_NODES {
        return Err(Unknown::TooManyNumaNodes {
            numa_nodes: machine.len(),
        }
        .into());
    }
    let rules = DemandRules {
        pod,
        devices: pod.devices.len(),
        cpu_static: may_pin_cpus,
        memory_static: may_pin_memory,
    };
    // Above 8 NUMA nodes: the kubelet's own cost first, then the NUMA
    // nodes that matter. Up to 8, the whole machine, as always.
    let projection = if machine.len() > DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
        if policy != TopologyManagerPolicy::None {
            slow_hint_search(node, machine, &rules, range, policy)?;
        }
        let keep = relevant_numa_nodes(node, machine, &rules, range, policy);
        if keep.count() as usize > MAX_NUMA_NODES {
            return Err(Unknown::TooManyNumaNodes {
                numa_nodes: keep.count() as usize,
            }
            .into());
        }
        Some(Projection::new(machine.len(), keep))
    } else {
        None
    };
    let projected;
    let node = match &projection {
        Some(p) => {
            projected = p.facts(node);
            &projected
        }
        None => node,
    };
    let numas = numa_nodes(node)?;
    let gpu = if wants_gpus {
        let mut total = Vec::with_capacity(numas.len());
        for (numa, n) in numas.iter().enumerate() {
            let numa = projection.as_ref().map_or(numa, |p| p.machine_id(numa));
            total.push(n.gpus.ok_or(Fact::Gpus { numa })?);
        }
        Some(GpuState::new(total))
    } else {
        None
    };
    let devices = device_providers(node, pod, numas)?;
    let cpu = match cpu_static {
        Some(true) => match (cpu_options(node), node.threads_per_core) {
            (Ok(options), Some(t)) => CpuState::new(numas, t, options)?,
            (Err(fact), _) => Err(Unknown::Missing(fact)),
            (_, None) => Err(Unknown::Missing(Fact::ThreadsPerCore)),
        },
        _ => Err(Unknown::Missing(Fact::CpuManagerPolicy)),
    };
    let memory = match memory_static {
        Some(true) => MemoryState::new(numas)?,
        _ => Err(Unknown::Missing(Fact::MemoryManagerPolicy)),
    };
    let (mut gpu, mut devices, mut cpu, mut memory) = (gpu, devices, cpu, memory);
    if let Some(held) = occupancy {
        let machine_id = |numa: usize| projection.as_ref().map_or(numa, |p| p.machine_id(numa));
        occupy(
            held,
            numas.len(),
            machine_id,
            Holders {
                gpu: gpu.as_mut(),
                devices: &mut devices,
                cpu: cpu.as_mut().ok(),
                memory: memory.as_mut().ok(),
            },
        )?;
    }
    let distances: Option<Vec<Vec<u32>>> = numas.iter().map(|n| n.distances.clone()).collect();
    let first_without_distances = numas
        .iter()
        .position(|n| n.distances.is_none())
        .unwrap_or(0);
    let mut admitter = Admitter {
        pod,
        policy,
        numa: NumaInfo {
            nodes: numas.len(),
            distances,
            machine_nodes: machine.len(),
        },
        prefer_closest: node.topology_manager.prefer_closest_numa_nodes,
        // In the projection's ids, as every unknown until the end.
        first_without_distances,
        range,
        cpu_static: may_pin_cpus,
        memory_static: may_pin_memory,
        gpu,
        devices,
        cpu,
        memory,
    };
    let first_unit = units.len();
    let aligned = if policy == TopologyManagerPolicy::None {
        admitter.admit_without_topology()
    } else {
        let scope = if pod.containers.len() > 1 {
            node.topology_manager
                .scope
                .ok_or(Fact::TopologyManagerScope)?
        } else {
            TopologyManagerScope::Container
        };
        match scope {
            TopologyManagerScope::Pod => admitter.admit_pod(units),
            TopologyManagerScope::Container => admitter.admit_containers(units),
        }
    };
    // A placement on memory whose groups are unknown decides nothing after
    // it: what follows may differ ([`MemoryState::occupy`]).
    let placed_by_guess = admitter
        .memory
        .as_ref()
        .is_ok_and(|state| state.placed_by_guess);
    let aligned = match aligned {
        Ok(_) | Err(Stop::Refuse(_)) if placed_by_guess => Err(Stop::Unknown(
            Unknown::Indeterminate(Indeterminate::MemoryGroups),
        )),
        other => other,
    };
    if let Some(p) = &projection {
        for unit in units.iter_mut().skip(first_unit) {
            p.unit_to_machine(unit);
        }
    }
    let aligned = match &projection {
        Some(p) => aligned.map_err(|stop| match stop {
            Stop::Unknown(u) => Stop::Unknown(p.unknown_to_machine(u)),
            other => other,
        }),
        None => aligned,
    }?;
    *remaining = admitter.remaining();
    if let Some(p) = &projection {
        p.remaining_to_machine(remaining);
    }
    Ok(aligned)
}

/// The managers' states a busy node's holdings are taken from.
struct Holders<'s> {
    gpu: Option<&'s mut GpuState>,
    devices: &'s mut [DeviceProvider],
    cpu: Option<&'s mut CpuState>,
    memory: Option<&'s mut MemoryState>,
}

/// Takes what other pods hold from each manager's state. `numas` NUMA
/// nodes, `machine_id` naming each in the occupancy (which lists the
/// machine's, also where the model works on a projection). Managers that do
/// not act on the pod are left as they are.
fn occupy(
    held: &Occupancy,
    numas: usize,
    machine_id: impl Fn(usize) -> usize,
    states: Holders<'_>,
) -> Step<()> {
    let Holders {
        mut gpu,
        devices,
        mut cpu,
        mut memory,
    } = states;
    for numa in 0..numas {
        let id = machine_id(numa);
        let Some(on) = held.numa(id) else { continue };
        let exceeds = |unit| Stop::Input(InputError::OccupancyExceeds { numa: id, unit });
        if let Some(state) = gpu.as_deref_mut() {
            if !state.occupy(numa, on.gpus) {
                return Err(exceeds(CountedUnit::Gpus));
            }
        }
        for provider in devices.iter_mut() {
            let Ok(state) = provider.state.as_mut() else {
                continue;
            };
            let count = on.device(provider.name.as_str());
            if !state.occupy(numa, count) {
                let unit = CountedUnit::Devices(provider.name.as_str().to_owned());
                return Err(exceeds(unit));
            }
        }
        if let Some(state) = cpu.as_deref_mut() {
            if !state.occupy(numa, on.cpus) {
                return Err(exceeds(CountedUnit::Cpus));
            }
        }
        if let Some(state) = memory.as_deref_mut() {
            state
                .occupy(numa, &on.memory)
                .map_err(|i| exceeds(CountedUnit::Memory(i)))?;
        }
    }
    Ok(())
}

/// The rules that turn a pod's containers into alignment units' demands.
struct DemandRules<'a> {
    pod: &'a PodDemand,
    /// Device resources of the pod besides the GPUs.
    devices: usize,
    /// The CPU Manager may pin CPUs (`static`, or its policy unknown).
    cpu_static: bool,
    /// The Memory Manager may pin memory.
    memory_static: bool,
}

impl DemandRules<'_> {
    fn container(&self, c: &ContainerDemand) -> UnitDemand {
        UnitDemand {
            gpus: c.gpus,
            devices: (0..self.devices).map(|i| c.device(i)).collect(),
            cpus: if self.cpu_static {
                guaranteed_cpus(self.pod.guaranteed, c.cpu_millis)
            } else {
                0
            },
            memory: if self.memory_static {
                container_request(c)
            } else {
                [0; 3]
            },
        }
    }

    fn pod(&self) -> UnitDemand {
        let containers = &self.pod.containers;
        UnitDemand {
            gpus: pod_gpu_request(containers),
            devices: (0..self.devices)
                .map(|i| pod_device_request(containers, i))
                .collect(),
            cpus: if self.cpu_static {
                let requests = containers.iter().map(|c| {
                    (
                        c.kind,
                        u64::from(guaranteed_cpus(self.pod.guaranteed, c.cpu_millis)),
                    )
                });
                u32::try_from(super::pod_effective(requests)).unwrap_or(u32::MAX)
            } else {
                0
            },
            memory: if self.memory_static {
                pod_request(containers)
            } else {
                [0; 3]
            },
        }
    }

    /// The first unit the Topology Manager merges for, the one that meets
    /// the empty node: the pod under scope `pod`, the first container under
    /// `container`; with the scope unknown, both.
    fn first_units(&self, scope: Option<TopologyManagerScope>) -> Vec<(Option<usize>, UnitDemand)> {
        let first = self
            .pod
            .containers
            .first()
            .map(|c| (Some(0), self.container(c)));
        match scope {
            Some(TopologyManagerScope::Pod) => vec![(None, self.pod())],
            Some(TopologyManagerScope::Container) => first.into_iter().collect(),
            None => std::iter::once((None, self.pod())).chain(first).collect(),
        }
    }
}

/// The per-NUMA counts of every device resource the unit requests (the GPUs
/// first), for those the node publishes, with each one's request.
fn requested_device_counts<'a>(
    node: &'a NodeFacts,
    machine: &'a [NumaNodeFacts],
    pod: &'a PodDemand,
    demand: &'a UnitDemand,
) -> impl Iterator<Item = (Vec<u32>, u32)> + 'a {
    let gpus = demand.gpus.and_then(|request| {
        let counts: Option<Vec<u32>> = machine.iter().map(|n| n.gpus).collect();
        counts.map(|c| (c, request))
    });
    let devices = pod
        .devices
        .iter()
        .enumerate()
        .filter_map(move |(i, resource)| {
            let request = demand.devices.get(i).copied().flatten()?;
            let counts = node.devices.get(resource)?;
            (counts.len() == machine.len()).then(|| (counts.clone(), request))
        });
    gpus.into_iter()
        .chain(devices)
        .filter(|(counts, _)| counts.iter().any(|&c| c > 0))
}

/// Refuses the pod where the kubelet's hint search for its first unit runs
/// for minutes ([`work`](super::work)): checked on the whole machine, from
/// the counts alone, before anything is enumerated. Only the first unit
/// meets the empty node the counts describe (later ones find less free, so
/// fewer hints, and an earlier refusal may stop the kubelet first); with
/// the scope unknown, both first units must be slow.
fn slow_hint_search(
    node: &NodeFacts,
    machine: &[NumaNodeFacts],
    rules: &DemandRules<'_>,
    range: DeviceHintRange,
    policy: TopologyManagerPolicy,
) -> Step<()> {
    let scope = if rules.pod.containers.len() > 1 {
        node.topology_manager.scope
    } else {
        Some(TopologyManagerScope::Container)
    };
    let all = NumaMask::all(machine.len());
    let with_cpus = machine
        .iter()
        .enumerate()
        .fold(NumaMask::EMPTY, |m, (i, n)| {
            if n.cpus != Some(0) {
                m.with(i)
            } else {
                m
            }
        });
    let units = rules.first_units(scope);
    // Most machines fall short even of every list holding every mask.
    let at_most = units
        .iter()
        .map(|(_, demand)| most_work(node, rules.pod, machine, range, with_cpus, demand))
        .max()
        .unwrap_or(0);
    if at_most <= SLOW_HINT_SEARCH_WORK {
        return Ok(());
    }
    // Read only for a unit that pins memory.
    let mut memory_amounts: Option<Option<Vec<[u64; 3]>>> = None;
    let mut fastest: Option<(Option<usize>, HintSearchWork)> = None;
    for (container, demand) in units {
        let mut walks = Vec::new();
        let mut lists = Vec::new();
        for (counts, request) in requested_device_counts(node, machine, rules.pod, &demand) {
            let walked = range.universe(&counts);
            walks.push(walked);
            lists.push(ListShape {
                walked,
                amounts: counts.iter().map(|&c| [u64::from(c), 0, 0]).collect(),
                request: [u64::from(request), 0, 0],
            });
        }
        if demand.cpus > 0 {
            walks.push(with_cpus);
            lists.push(ListShape {
                walked: with_cpus,
                amounts: machine
                    .iter()
                    .map(|n| {
                        let free = n
                            .cpus
                            .unwrap_or(0)
                            .saturating_sub(n.reserved_cpus.unwrap_or(0));
                        [u64::from(free), 0, 0]
                    })
                    .collect(),
                request: [u64::from(demand.cpus), 0, 0],
            });
        }
        if demand.memory != [0; 3] {
            walks.push(all);
            let amounts = memory_amounts.get_or_insert_with(|| {
                MemoryState::new(machine)
                    .ok()
                    .and_then(Result::ok)
                    .map(|state| state.free_per_numa())
            });
            if let Some(amounts) = amounts {
                // One list per requested memory resource, all alike.
                for _ in demand.memory.iter().filter(|&&r| r > 0) {
                    lists.push(ListShape {
                        walked: all,
                        amounts: amounts.clone(),
                        request: demand.memory,
                    });
                }
            }
        }
        let work = hint_search_work(
            &walks,
            &lists,
            policy == TopologyManagerPolicy::SingleNumaNode,
        );
        if fastest.is_none_or(|(_, w)| work.total() < w.total()) {
            fastest = Some((container, work));
        }
    }
    match fastest.filter(|(_, work)| work.is_slow()) {
        Some((container, work)) => Err(Stop::Refuse(Refusal::HintSearchTooSlow {
            container,
            masks: work.masks,
            permutations: work.permutations,
        })),
        None => Ok(()),
    }
}

/// The most work the kubelet can do for `demand`: every walk's masks, and
/// every mask of each walk a hint (`2^n - 1` per list). Counted without
/// allocating, so that the common machines above 8 NUMA nodes pay nothing
/// for [`slow_hint_search`].
fn most_work(
    node: &NodeFacts,
    pod: &PodDemand,
    machine: &[NumaNodeFacts],
    range: DeviceHintRange,
    with_cpus: NumaMask,
    demand: &UnitDemand,
) -> u64 {
    let all = NumaMask::all(machine.len());
    // A count not known may hold devices: the walk is at most every node.
    let walk_of = |count: &dyn Fn(usize) -> Option<u32>| match range {
        DeviceHintRange::EveryNumaNode => all,
        DeviceHintRange::DeviceNumaNodes => all
            .nodes()
            .filter(|&n| count(n) != Some(0))
            .fold(NumaMask::EMPTY, NumaMask::with),
    };
    let masks = |walk: NumaMask| 1u64.checked_shl(walk.count()).unwrap_or(u64::MAX);
    let mut walked = 0u64;
    let mut permutations = 1u64;
    let mut add = |walk: NumaMask, lists: u32| {
        walked = walked.saturating_add(masks(walk));
        for _ in 0..lists {
            permutations = permutations.saturating_mul(masks(walk).saturating_sub(1).max(1));
        }
    };
    if demand.gpus.is_some() {
        add(walk_of(&|n| machine.get(n).and_then(|f| f.gpus)), 1);
    }
    for (resource, request) in pod.devices.iter().zip(&demand.devices) {
        if request.is_none() {
            continue;
        }
        match node.devices.get(resource) {
            Some(counts) if counts.len() == machine.len() => {
                add(walk_of(&|n| counts.get(n).copied()), 1)
            }
            _ => add(all, 1),
        }
    }
    if demand.cpus > 0 {
        add(with_cpus, 1);
    }
    let memory_lists = demand.memory.iter().filter(|&&r| r > 0).count() as u32;
    if memory_lists > 0 {
        add(all, memory_lists);
    }
    walked.saturating_add(permutations)
}

/// The NUMA nodes some hint provider's masks range over for this pod: each
/// requested device resource's under `range` (every node before 1.36), the
/// nodes with CPUs when the CPU Manager may pin, every node when the Memory
/// Manager may (its machine state holds every NUMA node of
/// `machineInfo.Topology`, `getDefaultMachineState`). Under policy `none`
/// nothing is merged: only the nodes holding what the managers allocate
/// count.
///
/// Why the rest can be left out (the projection): a NUMA node outside
/// every provider's range holds none of what the pod asks for, and no
/// provider's hint names it. So every mask of every hint list lies within
/// the kept nodes, every merged mask (an AND of them, `nil` picks ANDed
/// away) too, and their counts, their order by value (the kept nodes keep
/// their order), their preference and their distances (the SLIT rows
/// restricted to the kept nodes) are the machine's: the merge ranks the
/// same masks the same way. The one mask that names the left-out nodes is
/// the default affinity, reached only when every pick is `nil` or nothing
/// merges; [`Merged::default_affinity`](super::merge::Merged) marks it.
/// Allocations take only what the kept nodes hold.
fn relevant_numa_nodes(
    node: &NodeFacts,
    machine: &[NumaNodeFacts],
    rules: &DemandRules<'_>,
    range: DeviceHintRange,
    policy: TopologyManagerPolicy,
) -> NumaMask {
    let all = NumaMask::all(machine.len());
    if rules.memory_static {
        return all;
    }
    let range = if policy == TopologyManagerPolicy::None {
        DeviceHintRange::DeviceNumaNodes
    } else {
        range
    };
    let mut keep = NumaMask::EMPTY;
    if rules.pod.containers.iter().any(|c| c.gpus.is_some()) {
        let holding = machine
            .iter()
            .enumerate()
            .filter(|(_, n)| n.gpus != Some(0))
            .fold(NumaMask::EMPTY, |m, (i, _)| m.with(i));
        keep = keep.or(if machine.iter().any(|n| n.gpus.is_none()) {
            // A missing count is asked for on the whole machine.
            all
        } else if holding.is_empty() {
            NumaMask::EMPTY
        } else {
            match range {
                DeviceHintRange::EveryNumaNode => all,
                DeviceHintRange::DeviceNumaNodes => holding,
            }
        });
    }
    for resource in &rules.pod.devices {
        if let Some(counts) = node.devices.get(resource) {
            if counts.len() == machine.len() && counts.iter().any(|&c| c > 0) {
                keep = keep.or(range.universe(counts));
            }
        }
    }
    if rules.cpu_static {
        for (i, n) in machine.iter().enumerate() {
            if n.cpus != Some(0) {
                keep = keep.with(i);
            }
        }
    }
    if keep.is_empty() {
        // Nothing ranges anywhere: one node stands for the machine.
        keep = NumaMask::single(0);
    }
    keep
}

/// The NUMA nodes that matter, renumbered `0..` in id order.
struct Projection {
    machine_nodes: usize,
    /// Machine ids of the kept nodes, ascending.
    kept: Vec<usize>,
}

impl Projection {
    fn new(machine_nodes: usize, keep: NumaMask) -> Self {
        Projection {
            machine_nodes,
            kept: keep.nodes().collect(),
        }
    }

    fn machine_id(&self, projected: usize) -> usize {
        self.kept.get(projected).copied().unwrap_or(projected)
    }

    /// The node's facts on the kept NUMA nodes.
    fn facts(&self, node: &NodeFacts) -> NodeFacts {
        let pick = |values: &[NumaNodeFacts]| -> Vec<NumaNodeFacts> {
            self.kept
                .iter()
                .filter_map(|&id| values.get(id))
                .map(|n| NumaNodeFacts {
                    distances: n.distances.as_ref().map(|row| {
                        self.kept
                            .iter()
                            .filter_map(|&id| row.get(id).copied())
                            .collect()
                    }),
                    ..*n
                })
                .collect()
        };
        // Field by field: cloning the node would copy every NUMA node's
        // distance row only to drop most of them.
        NodeFacts {
            gpus: node.gpus,
            gpus_per_numa_max: node.gpus_per_numa_max,
            numa_nodes: node.numa_nodes.as_deref().map(pick),
            threads_per_core: node.threads_per_core,
            topology_manager: node.topology_manager.clone(),
            cpu_manager: node.cpu_manager.clone(),
            memory_manager: node.memory_manager,
            machine_numa_nodes: node.machine_numa_nodes,
            kubelet_version: node.kubelet_version,
            memory_rounding_mib: node.memory_rounding_mib,
            devices: self.devices(node),
        }
    }

    /// The device counts on the kept NUMA nodes.
    fn devices(&self, node: &NodeFacts) -> std::collections::BTreeMap<String, Vec<u32>> {
        crate::sort::btree_map(node.devices.iter().map(|(name, counts)| {
            let kept = if counts.len() == self.machine_nodes {
                self.kept
                    .iter()
                    .filter_map(|&id| counts.get(id).copied())
                    .collect()
            } else {
                // Unreadable on the machine: unreadable on the projection.
                counts.clone()
            };
            (name.clone(), kept)
        }))
    }

    /// An unknown naming a NUMA node, in machine ids.
    fn unknown_to_machine(&self, unknown: Unknown) -> Unknown {
        use super::outcome::Unsupported;
        let id = |numa| self.machine_id(numa);
        let fact = |fact| match fact {
            Fact::Gpus { numa } => Fact::Gpus { numa: id(numa) },
            Fact::Cpus { numa } => Fact::Cpus { numa: id(numa) },
            Fact::ReservedCpus { numa } => Fact::ReservedCpus { numa: id(numa) },
            Fact::ReservedCores { numa } => Fact::ReservedCores { numa: id(numa) },
            Fact::Socket { numa } => Fact::Socket { numa: id(numa) },
            Fact::Memory { numa } => Fact::Memory { numa: id(numa) },
            Fact::ReservedMemory { numa } => Fact::ReservedMemory { numa: id(numa) },
            Fact::HugePages2Mi { numa } => Fact::HugePages2Mi { numa: id(numa) },
            Fact::HugePages1Gi { numa } => Fact::HugePages1Gi { numa: id(numa) },
            Fact::Distances { numa } => Fact::Distances { numa: id(numa) },
            other => other,
        };
        match unknown {
            Unknown::Missing(f) => Unknown::Missing(fact(f)),
            Unknown::Unsupported(Unsupported::PartialReservedCores { numa }) => {
                Unknown::Unsupported(Unsupported::PartialReservedCores { numa: id(numa) })
            }
            other => other,
        }
    }

    fn mask_to_machine(&self, mask: NumaMask) -> NumaMask {
        mask.nodes()
            .fold(NumaMask::EMPTY, |m, n| m.with(self.machine_id(n)))
    }

    /// A unit's hint in machine ids; a mask naming nodes beyond the
    /// projection is the machine's default affinity, already in them.
    fn unit_to_machine(&self, unit: &mut UnitReport) {
        let within = NumaMask::all(self.kept.len());
        if let Some(hint) = unit.hint.as_mut() {
            hint.mask = hint.mask.map(|mask| {
                if mask.is_subset_of(within) {
                    self.mask_to_machine(mask)
                } else {
                    mask
                }
            });
        }
    }

    /// Per-NUMA lists over the machine: the left-out nodes hold nothing
    /// the pod's managers count.
    fn remaining_to_machine(&self, remaining: &mut Remaining) {
        fn widen<T: Clone + Default>(p: &Projection, values: &mut Option<Vec<T>>) {
            if let Some(v) = values.take() {
                let mut out = vec![T::default(); p.machine_nodes];
                for (i, value) in v.into_iter().enumerate() {
                    if let Some(slot) = out.get_mut(p.machine_id(i)) {
                        *slot = value;
                    }
                }
                *values = Some(out);
            }
        }
        widen(self, &mut remaining.gpus);
        widen(self, &mut remaining.cpus);
        widen(self, &mut remaining.memory);
    }
}

impl Admitter<'_> {
    fn remaining(&self) -> Remaining {
        Remaining {
            gpus: self
                .gpu
                .as_ref()
                .filter(|g| g.split.is_ok())
                .map(|g| g.free.clone()),
            cpus: self.cpu.as_ref().ok().and_then(CpuState::free_per_numa),
            memory: self.memory.as_ref().ok().map(MemoryState::free_per_numa),
        }
    }

    fn rules(&self) -> DemandRules<'_> {
        DemandRules {
            pod: self.pod,
            devices: self.devices.len(),
            cpu_static: self.cpu_static,
            memory_static: self.memory_static,
        }
    }

    fn container_demand(&self, c: &ContainerDemand) -> UnitDemand {
        self.rules().container(c)
    }

    fn pod_demand(&self) -> UnitDemand {
        self.rules().pod()
    }

    /// Whether the unit has anything the kubelet aligns.
    fn alignable(&self, demand: &UnitDemand) -> bool {
        demand.gpus.unwrap_or(0) > 0
            || demand.devices.iter().any(|d| d.unwrap_or(0) > 0)
            || demand.cpus > 0
            || demand.memory != [0; 3]
    }

    /// The providers' hints for a unit: the Device, CPU and Memory Managers'.
    fn hints(
        &self,
        demand: &UnitDemand,
        container: Option<usize>,
    ) -> (Vec<Result<ProviderHints, Unknown>>, Vec<ResourceReport>) {
        let with_reusable = container.is_some();
        let mut providers = Vec::with_capacity(3);
        let mut reports = Vec::new();
        // Device Manager: one hint list per device resource the unit lists
        // (`GetTopologyHints` answers a map by resource, and the Topology
        // Manager's `filterProvidersHints` takes each as its own list).
        providers.push(match (demand.gpus, &self.gpu) {
            (Some(gpus), Some(state)) => match device_hints(state, gpus, with_reusable, self.range)
            {
                Ok(Some((hints, report))) => {
                    reports.push(ResourceReport {
                        resource: Resource::Gpu,
                        request: u64::from(gpus),
                        hints: report,
                    });
                    Ok(vec![hints])
                }
                Ok(None) => Ok(Vec::new()),
                Err(u) => Err(with_container(u, container)),
            },
            _ => Ok(Vec::new()),
        });
        for (provider, request) in self.devices.iter().zip(&demand.devices) {
            let Some(request) = *request else { continue };
            providers.push(match &provider.state {
                Ok(state) => match device_hints(state, request, with_reusable, self.range) {
                    Ok(Some((hints, report))) => {
                        reports.push(ResourceReport {
                            resource: Resource::Device(provider.name),
                            request: u64::from(request),
                            hints: report,
                        });
                        Ok(vec![hints])
                    }
                    Ok(None) => Ok(Vec::new()),
                    Err(u) => Err(with_container(u, container)),
                },
                Err(u) => Err(*u),
            });
        }
        // CPU Manager.
        providers.push(if demand.cpus == 0 {
            Ok(Vec::new())
        } else {
            match &self.cpu {
                Ok(state) => match state.hints(demand.cpus, container) {
                    Ok((hints, report)) => {
                        reports.push(ResourceReport {
                            resource: Resource::Cpu,
                            request: u64::from(demand.cpus),
                            hints: report,
                        });
                        Ok(vec![hints])
                    }
                    Err(u) => Err(u),
                },
                Err(u) => Err(*u),
            }
        });
        // Memory Manager.
        providers.push(if demand.memory == [0; 3] {
            Ok(Vec::new())
        } else {
            match &self.memory {
                Ok(state) => {
                    let (lists, hint_reports) = memory_hints(state, &demand.memory);
                    let requested = (0..3).filter(|&i| demand.memory[i] > 0);
                    for (i, report) in requested.zip(hint_reports) {
                        reports.push(ResourceReport {
                            resource: MEMORY_RESOURCES[i],
                            request: demand.memory[i],
                            hints: report,
                        });
                    }
                    Ok(lists)
                }
                Err(u) => Err(*u),
            }
        });
        (providers, reports)
    }

    /// The policy's merge; with `prefer-closest-numa-nodes` unknown both
    /// orders are tried. The second value: why the chosen mask is not known
    /// among masks of its size (the count and preference always are).
    fn merge(&self, providers: &[ProviderHints]) -> Step<(PolicyMerge, Option<Unknown>)> {
        let run = |closest| {
            policy_merge(self.policy, &self.numa, closest, providers)
                .map_err(|_| Stop::Unknown(Unknown::MergeTooLarge))
        };
        let uses_closest = matches!(
            self.policy,
            TopologyManagerPolicy::BestEffort | TopologyManagerPolicy::Restricted
        );
        if !uses_closest {
            return Ok((run(false)?, None));
        }
        match self.prefer_closest {
            Some(false) => Ok((run(false)?, None)),
            Some(true) => {
                let merged = run(true)?;
                let why = merged
                    .needs_distances
                    .then_some(Unknown::Missing(Fact::Distances {
                        numa: self.first_without_distances,
                    }));
                Ok((merged, why))
            }
            None => {
                let narrowest = run(false)?;
                let closest = run(true)?;
                let same = narrowest.hint == closest.hint && !closest.needs_distances;
                Ok((
                    narrowest,
                    (!same).then_some(Unknown::Missing(Fact::PreferClosestNumaNodes)),
                ))
            }
        }
    }

    /// Merges a unit's hints and admits it or not. Returns the hint and why
    /// its exact mask is unknown, if it is.
    fn merge_unit(
        &self,
        demand: &UnitDemand,
        container: Option<usize>,
        units: &mut Vec<UnitReport>,
    ) -> Step<(TopologyHint, Option<Unknown>)> {
        let (providers, resources) = self.hints(demand, container);
        let mut known = Vec::with_capacity(providers.len());
        let mut unknown = None;
        for provider in providers {
            match provider {
                Ok(hints) => known.push(hints),
                Err(u) => {
                    unknown.get_or_insert(u);
                }
            }
        }
        let (merged, ambiguity) = self.merge(&known)?;
        let mask = merged.hint.mask.unwrap_or(self.numa.default_affinity());
        // On a projection the default affinity also holds the nodes left
        // out: the report names the machine's (already in machine ids, see
        // `Projection::unit_to_machine`); `Allocate` gets the projection's.
        let projected = self.numa.machine_nodes > self.numa.nodes;
        let machine_default = merged.default_affinity || merged.hint.mask.is_none();
        let count = if machine_default {
            self.numa.machine_nodes.max(self.numa.nodes) as u32
        } else {
            mask.count()
        };
        let mut reported = merged.hint;
        if projected && merged.default_affinity && reported.mask.is_some() {
            reported.mask = Some(NumaMask::all(self.numa.machine_nodes));
        }
        let aligned = !self.alignable(demand) || (merged.hint.preferred && count == 1);
        if let Some(u) = unknown {
            // More providers only remove preferred hints: a refusal stands.
            let strict = self.policy != TopologyManagerPolicy::BestEffort;
            if !strict || merged.hint.preferred {
                return Err(Stop::Unknown(u));
            }
        }
        units.push(UnitReport {
            container,
            resources,
            hint: Some(reported),
            aligned,
        });
        if !merged.admit {
            return Err(Stop::Refuse(Refusal::TopologyAffinity { container }));
        }
        Ok((merged.hint, ambiguity))
    }

    /// The three managers' `Allocate` for container `i` under `hint`.
    fn allocate(&mut self, i: usize, hint: TopologyHint, ambiguity: Option<Unknown>) -> Step<()> {
        let c = self.pod.containers.get(i).cloned().unwrap_or_default();
        let demand = self.container_demand(&c);
        let mask = hint.mask;
        if let (Some(gpus), Some(state)) = (c.gpus, self.gpu.as_mut()) {
            if gpus > 0 && state.total_gpus() > 0 {
                let forced = allocate_gpus(state, c.kind, gpus, mask).map_err(|failure| {
                    Stop::Refuse(Refusal::AllocationFailed {
                        container: i,
                        resource: Resource::Gpu,
                        failure,
                    })
                })?;
                let why = ambiguity.or((!forced).then_some(Unknown::Indeterminate(
                    Indeterminate::GpuPick { container: i },
                )));
                if let (Some(why), Ok(())) = (why, state.split) {
                    state.split = Err(why);
                }
            }
        }
        // The Device Manager allocates every device resource of the
        // container before the CPU Manager runs.
        self.allocate_devices(i, &c, mask, ambiguity)?;
        if demand.cpus > 0 {
            let state = self.cpu.as_mut().map_err(|u| Stop::Unknown(*u))?;
            state
                .allocate_container(i, c.kind, demand.cpus, mask)
                .map_err(|e| cpu_stop(e, i))?;
            if let Some(why) = ambiguity {
                state.forget_split(why);
            }
        }
        if demand.memory != [0; 3] {
            if let Some(why) = ambiguity {
                return Err(Stop::Unknown(why));
            }
            let state = self.memory.as_mut().map_err(|u| Stop::Unknown(*u))?;
            state
                .allocate(c.kind, &demand.memory, hint)
                .map_err(|failure| memory_stop(failure, i))?;
        }
        Ok(())
    }

    /// `allocateContainerResources` for each device resource besides the
    /// GPUs: `devicesToAllocate` per resource under the same hint.
    fn allocate_devices(
        &mut self,
        i: usize,
        c: &ContainerDemand,
        mask: Option<super::mask::NumaMask>,
        ambiguity: Option<Unknown>,
    ) -> Step<()> {
        for (index, provider) in self.devices.iter_mut().enumerate() {
            let needed = c.device(index).unwrap_or(0);
            if needed == 0 {
                continue;
            }
            let state = provider.state.as_mut().map_err(|u| Stop::Unknown(*u))?;
            if state.total_gpus() == 0 {
                continue;
            }
            let forced = allocate_gpus(state, c.kind, needed, mask).map_err(|failure| {
                Stop::Refuse(Refusal::AllocationFailed {
                    container: i,
                    resource: Resource::Device(provider.name),
                    failure,
                })
            })?;
            let why = ambiguity.or((!forced).then_some(Unknown::Indeterminate(
                Indeterminate::DevicePick {
                    container: i,
                    resource: provider.name,
                },
            )));
            if let (Some(why), Ok(())) = (why, state.split) {
                state.split = Err(why);
            }
        }
        Ok(())
    }

    fn admit_pod(&mut self, units: &mut Vec<UnitReport>) -> Step<bool> {
        let demand = self.pod_demand();
        let (hint, ambiguity) = self.merge_unit(&demand, None, units)?;
        for i in 0..self.pod.containers.len() {
            self.allocate(i, hint, ambiguity)?;
        }
        Ok(units.iter().all(|u| u.aligned))
    }

    fn admit_containers(&mut self, units: &mut Vec<UnitReport>) -> Step<bool> {
        for (i, c) in self.pod.containers.iter().enumerate() {
            let demand = self.container_demand(c);
            let (hint, ambiguity) = self.merge_unit(&demand, Some(i), units)?;
            self.allocate(i, hint, ambiguity)?;
        }
        Ok(units.iter().all(|u| u.aligned))
    }

    /// `admitPolicyNone`: every `Allocate` with an empty hint; only a
    /// one-NUMA-node machine (or a pod with nothing to align) is aligned.
    fn admit_without_topology(&mut self) -> Step<bool> {
        let mut anything = false;
        for i in 0..self.pod.containers.len() {
            let c = self.pod.containers.get(i).cloned().unwrap_or_default();
            anything |= self.alignable(&self.container_demand(&c));
            self.allocate(i, TopologyHint::any(false), None)?;
        }
        Ok(!anything || self.numa.machine_nodes.max(self.numa.nodes) == 1)
    }
}

fn with_container(u: Unknown, container: Option<usize>) -> Unknown {
    match (u, container) {
        (Unknown::Indeterminate(Indeterminate::GpuPick { .. }), Some(c)) => {
            Unknown::Indeterminate(Indeterminate::GpuPick { container: c })
        }
        (Unknown::Indeterminate(Indeterminate::DevicePick { resource, .. }), Some(c)) => {
            Unknown::Indeterminate(Indeterminate::DevicePick {
                container: c,
                resource,
            })
        }
        (other, _) => other,
    }
}

fn cpu_stop(e: CpuAllocError, container: usize) -> Stop {
    match e {
        CpuAllocError::Smt {
            requested,
            cpus_per_core,
            available_physical_cpus,
        } => Stop::Refuse(Refusal::SmtAlignment {
            container,
            requested,
            cpus_per_core,
            available_physical_cpus,
        }),
        CpuAllocError::NotEnough {
            requested,
            available,
        } => Stop::Refuse(Refusal::AllocationFailed {
            container,
            resource: Resource::Cpu,
            failure: AllocationFailure::NotEnough {
                requested: u64::from(requested),
                available: u64::from(available),
            },
        }),
        CpuAllocError::Unknown(u) => Stop::Unknown(u),
    }
}

fn memory_stop(failure: AllocationFailure, container: usize) -> Stop {
    Stop::Refuse(Refusal::AllocationFailed {
        container,
        resource: Resource::Memory,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::facts::{CpuManagerConfig, NumaNodeFacts, TopologyManagerConfig};
    use rstest::rstest;

    fn node(policy: TopologyManagerPolicy, gpus: &[u32]) -> NodeFacts {
        NodeFacts {
            numa_nodes: Some(
                gpus.iter()
                    .map(|&g| NumaNodeFacts {
                        gpus: Some(g),
                        cpus: Some(64),
                        ..NumaNodeFacts::default()
                    })
                    .collect(),
            ),
            topology_manager: TopologyManagerConfig {
                policy: Some(policy),
                scope: Some(TopologyManagerScope::Pod),
                prefer_closest_numa_nodes: Some(false),
                max_allowable_numa_nodes: Some(8),
            },
            cpu_manager: CpuManagerConfig {
                policy: Some(CpuManagerPolicy::None),
                ..CpuManagerConfig::default()
            },
            ..NodeFacts::default()
        }
    }

    fn gpu_pod(gpus: u32) -> PodDemand {
        PodDemand {
            containers: vec![ContainerDemand {
                gpus: Some(gpus),
                cpu_millis: 500,
                ..ContainerDemand::default()
            }],
            guaranteed: false,
            pod_level_resources: false,
            devices: Vec::new(),
        }
    }

    /// Two NUMA nodes of 10 GiB each under the static Memory Manager and
    /// `single-numa-node`, their memory published rounded down by less
    /// than `rounding_mib`.
    fn pinning_memory(rounding_mib: u64) -> NodeFacts {
        let mut node = node(TopologyManagerPolicy::SingleNumaNode, &[2, 2]);
        for numa in node.numa_nodes.as_mut().unwrap() {
            numa.memory_mib = Some(10 << 10);
            numa.reserved_memory_mib = Some(0);
            numa.hugepages_2mi = Some(HugePages::default());
            numa.hugepages_1gi = Some(HugePages::default());
        }
        node.memory_manager = Some(MemoryManagerPolicy::Static);
        node.memory_rounding_mib = rounding_mib;
        node
    }

    /// The labels round memory down to whole GiB: a pod that fits the
    /// published amount is admitted, one that needs more than a GiB over it
    /// is refused, and one in between is unknown, as the kubelet's answer
    /// depends on MiB the labels do not show (`memorymanager/policy_static.go`
    /// pins the container's memory on the NUMA nodes of the merged hint).
    #[rstest]
    #[case::within_the_published_memory(1024, 10 << 10, Verdict::Admit { aligned: true })]
    #[case::inside_the_rounded_step(1024, (10 << 10) + 512, Verdict::Unknown(Unknown::Indeterminate(Indeterminate::MemoryRounding)))]
    #[case::past_the_rounded_step(1024, 11 << 10, Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) }))]
    #[case::exact_labels_refuse_what_is_over(1, (10 << 10) + 512, Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) }))]
    fn memory_rounded_down_by_the_labels_is_unknown_only_within_the_step(
        #[case] rounding_mib: u64,
        #[case] memory_mib: u64,
        #[case] expected: Verdict,
    ) {
        let pod = PodDemand {
            containers: vec![ContainerDemand {
                gpus: Some(2),
                cpu_millis: 1000,
                memory_bytes: memory_mib * MIB,
                ..ContainerDemand::default()
            }],
            guaranteed: true,
            pod_level_resources: false,
            devices: Vec::new(),
        };
        let answer = admit(&pinning_memory(rounding_mib), &pod).unwrap();
        assert_eq!(answer.verdict, expected);
    }

    #[test]
    fn gpus_on_one_numa_node_are_aligned() {
        let answer = admit(
            &node(TopologyManagerPolicy::SingleNumaNode, &[4, 4]),
            &gpu_pod(4),
        )
        .unwrap();
        assert_eq!(answer.verdict, Verdict::Admit { aligned: true });
    }

    #[test]
    fn more_gpus_than_one_numa_node_fail_single_numa_node() {
        // One container: scope pod and container agree, the container is named.
        let answer = admit(
            &node(TopologyManagerPolicy::SingleNumaNode, &[4, 4]),
            &gpu_pod(8),
        )
        .unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
        );
    }

    #[test]
    fn more_gpus_than_the_node_are_insufficient() {
        let answer = admit(
            &node(TopologyManagerPolicy::BestEffort, &[4, 4]),
            &gpu_pod(9),
        )
        .unwrap();
        assert!(matches!(
            answer.verdict,
            Verdict::Refuse(Refusal::Insufficient {
                resource: Resource::Gpu,
                ..
            })
        ));
    }

    #[test]
    fn many_numa_nodes_stop_the_kubelet() {
        let mut n = node(TopologyManagerPolicy::BestEffort, &[1; 10]);
        n.topology_manager.max_allowable_numa_nodes = Some(8);
        let answer = admit(&n, &gpu_pod(1)).unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Refuse(Refusal::KubeletNotStarted(StartupError::TooManyNumaNodes {
                numa_nodes: 10,
                max_allowable: 8
            }))
        );
    }

    #[test]
    fn unknown_policy_is_named() {
        let mut n = node(TopologyManagerPolicy::BestEffort, &[4, 4]);
        n.topology_manager.policy = None;
        let answer = admit(&n, &gpu_pod(1)).unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Unknown(Unknown::Missing(Fact::TopologyManagerPolicy))
        );
    }

    /// A pod no manager aligns needs only the node's size (the scheduler's
    /// fit): no kubelet settings.
    #[rstest]
    #[case::size_known(Some(64), Verdict::Admit { aligned: true })]
    #[case::size_unknown(None, Verdict::Unknown(Unknown::Missing(Fact::Cpus { numa: 0 })))]
    fn a_pod_without_alignable_resources_needs_only_the_nodes_size(
        #[case] cpus: Option<u32>,
        #[case] expected: Verdict,
    ) {
        let pod = PodDemand {
            containers: vec![ContainerDemand {
                cpu_millis: 500,
                ..ContainerDemand::default()
            }],
            guaranteed: false,
            pod_level_resources: false,
            devices: Vec::new(),
        };
        let node = NodeFacts {
            numa_nodes: Some(vec![NumaNodeFacts {
                cpus,
                ..NumaNodeFacts::default()
            }]),
            ..NodeFacts::default()
        };
        assert_eq!(admit(&node, &pod).unwrap().verdict, expected);
    }

    /// What a labeler older than the per-NUMA lists publishes: counts and
    /// the Topology Manager policy.
    fn counts_only(policy: TopologyManagerPolicy) -> NodeFacts {
        NodeFacts {
            gpus: Some(8),
            gpus_per_numa_max: Some(4),
            topology_manager: TopologyManagerConfig {
                policy: Some(policy),
                ..TopologyManagerConfig::default()
            },
            ..NodeFacts::default()
        }
    }

    /// A node with its per-NUMA lists whose CPU Manager policy is not
    /// published.
    fn cpu_policy_unknown(policy: TopologyManagerPolicy) -> NodeFacts {
        let mut n = node(policy, &[4, 4]);
        n.cpu_manager.policy = None;
        n
    }

    fn guaranteed(gpus: u32, cpus: u64, memory_gib: u64) -> PodDemand {
        PodDemand {
            containers: vec![ContainerDemand {
                gpus: Some(gpus),
                cpu_millis: cpus * 1000,
                memory_bytes: memory_gib << 30,
                ..ContainerDemand::default()
            }],
            guaranteed: true,
            pod_level_resources: false,
            devices: Vec::new(),
        }
    }

    /// Refusals come before unknowns (issue #23 item 0): each rule refuses
    /// on the facts it has, whatever the missing ones are. (node, pod, the
    /// verdict, refused behind an unknown)
    #[rstest]
    #[case::sixteen_gpus_on_a_node_counting_8(
        counts_only(TopologyManagerPolicy::BestEffort), guaranteed(16, 8, 64),
        Verdict::Refuse(Refusal::Insufficient { resource: Resource::Gpu, requested: 16, capacity: 8 }), false)]
    #[case::six_gpus_on_single_numa_node_counting_4_per_numa_node(
        counts_only(TopologyManagerPolicy::SingleNumaNode), guaranteed(6, 8, 64),
        Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) }), true)]
    #[case::four_gpus_on_single_numa_node_counting_4_per_numa_node_is_unknown(
        counts_only(TopologyManagerPolicy::SingleNumaNode),
        guaranteed(4, 8, 64),
        Verdict::Unknown(Unknown::Missing(Fact::CpuManagerPolicy)),
        false
    )]
    #[case::six_gpus_on_single_numa_node_without_the_cpu_policy(
        cpu_policy_unknown(TopologyManagerPolicy::SingleNumaNode), guaranteed(6, 8, 64),
        Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) }), false)]
    #[case::six_gpus_on_restricted_without_the_cpu_policy_is_unknown(
        cpu_policy_unknown(TopologyManagerPolicy::Restricted),
        guaranteed(6, 8, 64),
        Verdict::Unknown(Unknown::Missing(Fact::CpuManagerPolicy)),
        false
    )]
    fn refusals_come_before_unknowns(
        #[case] node: NodeFacts,
        #[case] pod: PodDemand,
        #[case] expected: Verdict,
        #[case] behind: bool,
    ) {
        let answer = admit(&node, &pod).unwrap();
        assert_eq!(answer.verdict, expected);
        assert_eq!(answer.behind.is_some(), behind, "{:?}", answer.behind);
    }

    /// `full-pcpus-only` refuses a count that is no multiple of the threads
    /// per core before it looks at anything else: also with the Topology
    /// Manager unknown.
    #[rstest]
    #[case::three_cpus(3, true)]
    #[case::four_cpus(4, false)]
    fn full_pcpus_only_refuses_odd_counts_whatever_the_topology_manager(
        #[case] cpus: u64,
        #[case] refused: bool,
    ) {
        let mut n = node(TopologyManagerPolicy::BestEffort, &[4, 4]);
        n.topology_manager.policy = None;
        n.threads_per_core = Some(2);
        n.cpu_manager = CpuManagerConfig {
            policy: Some(CpuManagerPolicy::Static),
            full_pcpus_only: Some(true),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
        };
        let answer = admit(&n, &guaranteed(1, cpus, 0)).unwrap();
        let expected = if refused {
            Verdict::Refuse(Refusal::SmtAlignment {
                container: 0,
                requested: 3,
                cpus_per_core: 2,
                available_physical_cpus: None,
            })
        } else {
            Verdict::Unknown(Unknown::Missing(Fact::TopologyManagerPolicy))
        };
        assert_eq!(answer.verdict, expected);
    }

    /// The node's size (issue #23 item 3): more than its allocatable is
    /// never scheduled there. 2 NUMA nodes of 64 CPUs (2 reserved under the
    /// static CPU Manager) and 256 GiB.
    #[rstest]
    #[case::cpus_of_the_node(128, 64, CpuManagerPolicy::None, None)]
    #[case::cpus_above_the_node(129, 64, CpuManagerPolicy::None, Some((Resource::Cpu, 129_000, 128_000, 0)))]
    #[case::cpus_above_the_allocatable(127, 64, CpuManagerPolicy::Static, Some((Resource::Cpu, 127_000, 128_000, 2_000)))]
    #[case::cpus_of_the_allocatable(126, 64, CpuManagerPolicy::Static, None)]
    #[case::memory_above_the_node(8, 600, CpuManagerPolicy::None, Some((Resource::Memory, 600 << 30, (512 << 30) + (2 << 20), 0)))]
    #[case::memory_of_the_node(8, 512, CpuManagerPolicy::None, None)]
    fn the_nodes_size_refuses_what_it_cannot_hold(
        #[case] cpus: u64,
        #[case] memory_gib: u64,
        #[case] cpu_policy: CpuManagerPolicy,
        #[case] refused: Option<(Resource, u64, u64, u64)>,
    ) {
        // The labeler publishes reserved CPUs under the static CPU Manager.
        let numa = NumaNodeFacts {
            gpus: Some(4),
            cpus: Some(64),
            reserved_cpus: (cpu_policy == CpuManagerPolicy::Static).then_some(1),
            memory_mib: Some(256 << 10),
            reserved_memory_mib: Some(0),
            ..NumaNodeFacts::default()
        };
        let mut n = node(TopologyManagerPolicy::BestEffort, &[4, 4]);
        n.numa_nodes = Some(vec![numa.clone(), numa]);
        n.cpu_manager.policy = Some(cpu_policy);
        // Not Guaranteed: no manager pins anything, only the size decides.
        let mut pod = guaranteed(1, cpus, memory_gib);
        pod.guaranteed = false;
        let verdict = admit(&n, &pod).unwrap().verdict;
        match refused {
            Some((resource, requested, capacity, reserved)) => assert_eq!(
                verdict,
                Verdict::Refuse(Refusal::NodeTooSmall {
                    resource,
                    requested,
                    capacity,
                    reserved
                })
            ),
            None => assert!(
                !matches!(verdict, Verdict::Refuse(Refusal::NodeTooSmall { .. })),
                "{verdict:?}"
            ),
        }
    }

    #[test]
    fn align_by_socket_with_single_numa_node_stops_the_kubelet() {
        let mut n = node(TopologyManagerPolicy::SingleNumaNode, &[4, 4]);
        n.cpu_manager.policy = Some(CpuManagerPolicy::Static);
        n.cpu_manager.align_by_socket = Some(true);
        let answer = admit(&n, &gpu_pod(1)).unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Refuse(Refusal::KubeletNotStarted(
                StartupError::AlignBySocketWithSingleNumaNode
            ))
        );
    }
}
