//! A pod's admission: the entry points ([`admit`], [`admit_on_busy_node`],
//! [`admit_by_the_managers`]) and the order of the stages, each in its own
//! file, as the kubelet's `pkg/kubelet/cm/topologymanager` splits them:
//!
//! - `preflight.rs`: the kubelet starting at all (`topology_manager.go`
//!   `NewManager`, `cpumanager/policy_options.go`
//!   `ValidateStaticPolicyOptions`) and the node's size (the scheduler's
//!   `NodeResourcesFit`, the kubelet's `PredicateAdmitHandler`);
//! - `unknowns.rs`: branching on facts the node does not publish;
//! - `work.rs`: the hint-search cost guard above 8 NUMA nodes;
//! - `projection.rs`: the NUMA nodes that matter above 8 NUMA nodes;
//! - `scope.rs`: the Topology Manager's scopes driving the hint providers
//!   and their `Allocate` calls (`scope_pod.go`, `scope_container.go`,
//!   `scope_none.go` / `scope.go`).

use super::facts::{
    validate, Fact, InputError, MemoryManagerPolicy, NodeFacts, Occupancy, PodDemand,
};
use super::outcome::{Admission, Indeterminate, Refusal, Remaining, UnitReport, Unknown, Verdict};
use super::preflight::{node_fit, startup, NodeFit};
use super::unknowns::{evaluate_managers, pinning, refusal_whatever_is_unknown};

/// `maxAllowableNUMANodes` when the option is not set; the kubelet refuses
/// values below it, so machines up to this size never depend on the option.
pub const DEFAULT_MAX_ALLOWABLE_NUMA_NODES: usize = 8;

/// Where the evaluation stops early.
pub(super) enum Stop {
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

pub(super) type Step<T> = Result<T, Stop>;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::facts::{
        ContainerDemand, CpuManagerConfig, HugePages, NumaNodeFacts, TopologyManagerConfig, MIB,
    };
    use crate::kubelet::outcome::{Resource, StartupError};
    use crate::labels::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
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
