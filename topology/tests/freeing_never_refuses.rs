//! Freeing never refuses: if the model admits a pod on a node while other
//! pods hold `O`, it does not refuse it while they hold any `O' <= O` (less
//! of every resource on every NUMA node), nothing at all included. The
//! binding check relies on it: a pod admitted against a
//! NodeResourceTopology that lags behind pods that since ended stays
//! admitted.
//!
//! # Where it holds
//!
//! The property is claimed, and checked, where the Topology Manager merges
//! once and the merged hint holds every container's pinned memory
//! ([`claimed`]):
//!
//! - a pod of one container, under every policy and scope (the kubelet
//!   treats a one-container pod alike under both scopes);
//! - scope `pod`, when the Memory Manager pins nothing of the pod (policy
//!   `None`, or a pod not Guaranteed), under every policy;
//! - scope `pod` with pinned memory under `restricted` or
//!   `single-numa-node`, when every memory resource an init container or
//!   sidecar requests is also requested by an app container.
//!
//! Why: every hint provider's hints are monotone in what is free (a mask is
//! offered when its free devices, CPUs or memory hold the request; whether
//! it is preferred depends on capacity alone), so with less held each
//! provider offers a superset, and a merge that found a preferred
//! (one-NUMA-node) hint still finds one. `Allocate` then fails only on
//! totals (GPUs, devices, CPUs, the free physical CPUs of
//! `full-pcpus-only`), which only grow. The Memory Manager's `Allocate` is
//! the exception: it pins container by container on the merged mask or an
//! extension of it, and one container's pinned memory restricts the next
//! one's extensions (its group, `Cells`); that is safe only when the
//! merged mask is one of its own preferred hints for the whole pod.
//!
//! # Where it does not, in the kubelet as in the model
//!
//! Each is the kubelet's own behaviour, which the model follows
//! ([`outside_the_claim_freeing_can_refuse`] pins one example of each):
//!
//! - Scope `container` with several containers: an earlier container lands
//!   where there is room, and more room can move it where a later one
//!   needed to be. `takeFullNUMANodes` (`cpu_assignment.go`) takes a NUMA
//!   node whole once all of it is free, so freeing one CPU there gives it
//!   all to the first container and leaves the second one's GPUs without
//!   CPUs beside them; an init container's devices are reused by the app
//!   containers, whose device hints must include the NUMA nodes of those
//!   devices (`generateDeviceTopologyHints`), so room on NUMA node 0 draws
//!   the init container there and strands the app container
//!   (`tests/busy_node/cases.json`,
//!   `container_scope_more_held_moves_the_init_container_and_admits`).
//!   Found under `restricted` and `single-numa-node`.
//! - Scope `pod`, memory an init container requests that no app container
//!   does: `getPodRequestedResources` leaves it out of the pod's memory
//!   hint, so freed memory can draw the pod to a NUMA node without the
//!   init container's huge pages, and its `Allocate` finds no preferred
//!   extension (`MemoryHintNotPreferred`).
//! - Scope `pod` with pinned memory under `best-effort` (and `none`, where
//!   each container gets its own default hint): a non-preferred merged
//!   hint need not hold the pod's memory; freed CPUs can move it to a NUMA
//!   node where the first container's memory is pinned as a one-node
//!   group that the second container's memory cannot extend
//!   (`NoExtendedMemoryAffinity`).
//!
//! Nodes, pods and holdings are generated as in `refusals_stand.rs`: up to
//! 3 NUMA nodes, SMT 1 or 2 with whole or half-reserved cores, every
//! Topology, CPU and Memory Manager policy, GPUs and one NIC resource,
//! init containers and sidecars; holdings as shares of what each NUMA node
//! has to give (exclusive CPUs in whole cores under `full-pcpus-only`, as
//! the kubelet assigns them). Run at 300000 cases (release) several times
//! without a counterexample inside the claim.

use gpu_topology::kubelet::{
    admit, admit_on_busy_node, AllocationFailure, ContainerDemand, ContainerKind, CpuManagerConfig,
    HugePages, KubeletVersion, MemoryManagerPolicy, NodeFacts, NumaNodeFacts, NumaOccupancy,
    Occupancy, PodDemand, Refusal, Resource, TopologyManagerConfig, Verdict,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use proptest::prelude::*;
use proptest::sample::select;
use rstest::rstest;
use std::collections::BTreeMap;

const GIB: u64 = 1 << 30;
const NIC: &str = "example.com/rdma";

/// One NUMA node: GPUs, cores, reserved cores, a half-reserved core among
/// them, memory GiB, 1Gi pages, NICs.
type Numa = (u32, u32, u32, bool, u64, u64, u32);

fn numa() -> impl Strategy<Value = Numa> {
    (
        0u32..=4,
        1u32..=8,
        0u32..=2,
        any::<bool>(),
        4u64..=64,
        0u64..=2,
        0u32..=2,
    )
}

fn numa_facts(socket: usize, n: &Numa, threads: u32) -> NumaNodeFacts {
    let (gpus, cores, reserved_cores, half, memory_gib, pages, _) = *n;
    let reserved_cores = reserved_cores.min(cores);
    // One core may hold a reserved CPU and a free one (SMT 2 only).
    let half = half && threads == 2 && reserved_cores > 0;
    NumaNodeFacts {
        gpus: Some(gpus),
        cpus: Some(cores * threads),
        reserved_cpus: Some(reserved_cores * threads - u32::from(half)),
        reserved_cores: Some(reserved_cores),
        socket: Some(socket as u32),
        memory_mib: Some(memory_gib << 10),
        reserved_memory_mib: Some(512),
        hugepages_2mi: Some(HugePages::default()),
        hugepages_1gi: Some(HugePages {
            pages,
            reserved_pages: 0,
        }),
        distances: None,
    }
}

/// The node; `single_unit` forces scope `pod` (see the module docs).
fn node(single_unit: bool) -> impl Strategy<Value = NodeFacts> {
    (
        proptest::collection::vec(numa(), 1..=3),
        select(vec![1u32, 2]),
        select(vec![
            TopologyManagerPolicy::None,
            TopologyManagerPolicy::BestEffort,
            TopologyManagerPolicy::Restricted,
            TopologyManagerPolicy::SingleNumaNode,
        ]),
        select(vec![
            TopologyManagerScope::Pod,
            TopologyManagerScope::Container,
        ]),
        select(vec![CpuManagerPolicy::None, CpuManagerPolicy::Static]),
        select(vec![MemoryManagerPolicy::None, MemoryManagerPolicy::Static]),
        any::<bool>(),
        select(vec![34u32, 36]),
    )
        .prop_map(
            move |(numas, threads, tm, scope, cpu, memory, full, minor)| NodeFacts {
                numa_nodes: Some(
                    numas
                        .iter()
                        .enumerate()
                        .map(|(i, n)| numa_facts(i, n, threads))
                        .collect(),
                ),
                threads_per_core: Some(threads),
                topology_manager: TopologyManagerConfig {
                    policy: Some(tm),
                    scope: Some(if single_unit {
                        TopologyManagerScope::Pod
                    } else {
                        scope
                    }),
                    prefer_closest_numa_nodes: Some(false),
                    max_allowable_numa_nodes: Some(8),
                },
                cpu_manager: CpuManagerConfig {
                    policy: Some(cpu),
                    full_pcpus_only: Some(full),
                    distribute_cpus_across_numa: Some(false),
                    align_by_socket: Some(false),
                },
                memory_manager: Some(memory),
                devices: BTreeMap::from([(NIC.to_owned(), numas.iter().map(|n| n.6).collect())]),
                kubelet_version: Some(KubeletVersion::new(1, minor)),
                memory_rounding_mib: 1,
                ..NodeFacts::default()
            },
        )
}

fn container(kind: ContainerKind) -> impl Strategy<Value = ContainerDemand> {
    (
        prop_oneof![1 => Just(None), 4 => (0u32..=4).prop_map(Some)],
        prop_oneof![5 => (0u64..=8).prop_map(|c| c * 1000), 1 => Just(1500u64)],
        1u64..=24,
        prop_oneof![4 => Just(0u64), 1 => Just(GIB)],
        prop_oneof![3 => Just(None), 1 => (0u32..=2).prop_map(Some)],
    )
        .prop_map(
            move |(gpus, cpu_millis, memory_gib, hp1, nics)| ContainerDemand {
                kind,
                gpus,
                cpu_millis,
                memory_bytes: memory_gib * GIB,
                hugepages_1gi_bytes: hp1,
                devices: vec![nics],
                ..ContainerDemand::default()
            },
        )
}

fn pod() -> impl Strategy<Value = PodDemand> {
    (
        prop_oneof![
            6 => Just(vec![]),
            2 => Just(vec![ContainerKind::Init]),
            1 => Just(vec![ContainerKind::Sidecar]),
        ],
        1usize..=2,
        prop_oneof![1 => Just(false), 3 => Just(true)],
    )
        .prop_flat_map(|(inits, apps, guaranteed)| {
            let kinds: Vec<ContainerKind> = inits
                .into_iter()
                .chain(std::iter::repeat_n(ContainerKind::App, apps))
                .collect();
            let containers: Vec<_> = kinds.into_iter().map(container).collect();
            (containers, Just(guaranteed))
        })
        .prop_map(|(containers, guaranteed)| PodDemand {
            containers,
            guaranteed,
            pod_level_resources: false,
            devices: vec![NIC.to_owned()],
        })
}

/// Shares (of 100) per NUMA node of GPUs, CPUs, memory, 1Gi pages, NICs.
type Shares = Vec<[u8; 5]>;

#[derive(Debug, Clone)]
struct Case {
    node: NodeFacts,
    pod: PodDemand,
    /// What other pods hold: shares of what each NUMA node has to give.
    held: Shares,
    /// The freer holdings: shares of `held`.
    kept: Shares,
}

/// Pods the Topology Manager merges once: scope `pod`, or one container.
fn case() -> impl Strategy<Value = Case> {
    pod()
        .prop_flat_map(|pod| (node(pod.containers.len() > 1), Just(pod)))
        .prop_flat_map(|(node, pod)| {
            let n = node.numa_nodes.as_ref().map_or(0, Vec::len);
            let shares = || proptest::collection::vec(proptest::array::uniform5(0u8..=100), n);
            (Just(node), Just(pod), shares(), shares())
        })
        .prop_map(|(node, pod, held, kept)| Case {
            node,
            pod,
            held,
            kept,
        })
}

fn part(total: u64, share: u8) -> u64 {
    total * u64::from(share) / 100
}

/// Exclusive CPUs are whole cores under `full-pcpus-only`.
fn cpu_unit(node: &NodeFacts) -> u64 {
    if node.cpu_manager.full_pcpus_only == Some(true) {
        u64::from(node.threads_per_core.unwrap_or(1))
    } else {
        1
    }
}

/// What other pods hold: `shares` of what each NUMA node has to give.
fn occupancy(node: &NodeFacts, shares: &Shares) -> Occupancy {
    let numas = node.numa_nodes.as_deref().unwrap_or_default();
    let unit = cpu_unit(node);
    let nics = &node.devices[NIC];
    Occupancy {
        numa_nodes: numas
            .iter()
            .zip(shares)
            .zip(nics)
            .map(|((n, s), &nics)| {
                // Whole cores free of reserved CPUs, under full-pcpus-only.
                let cores = n.cpus.unwrap_or(0) / unit as u32;
                let free_units = if unit > 1 {
                    cores - n.reserved_cores.unwrap_or(0)
                } else {
                    n.cpus.unwrap_or(0) - n.reserved_cpus.unwrap_or(0)
                };
                let pages = n.hugepages_1gi.map_or(0, |p| p.pages);
                let memory_gib =
                    (n.memory_mib.unwrap_or(0) - n.reserved_memory_mib.unwrap_or(0)) / 1024 - pages;
                NumaOccupancy {
                    gpus: part(u64::from(n.gpus.unwrap_or(0)), s[0]) as u32,
                    cpus: (part(u64::from(free_units), s[1]) * unit) as u32,
                    memory: [part(memory_gib, s[2]) * GIB, 0, part(pages, s[3]) * GIB],
                    devices: vec![(NIC.to_owned(), part(u64::from(nics), s[4]) as u32)],
                }
            })
            .collect(),
    }
}

/// `kept` shares of `more`, field by field: never more than it.
fn freer(node: &NodeFacts, more: &Occupancy, kept: &Shares) -> Occupancy {
    let unit = cpu_unit(node);
    Occupancy {
        numa_nodes: more
            .numa_nodes
            .iter()
            .zip(kept)
            .map(|(n, k)| NumaOccupancy {
                gpus: part(u64::from(n.gpus), k[0]) as u32,
                cpus: (part(u64::from(n.cpus) / unit, k[1]) * unit) as u32,
                memory: [
                    part(n.memory[0] / GIB, k[2]) * GIB,
                    0,
                    part(n.memory[2] / GIB, k[3]) * GIB,
                ],
                devices: n
                    .devices
                    .iter()
                    .map(|(r, c)| (r.clone(), part(u64::from(*c), k[4]) as u32))
                    .collect(),
            })
            .collect(),
    }
}

fn nothing_held(node: &NodeFacts) -> Occupancy {
    let numas = node.numa_nodes.as_ref().map_or(0, Vec::len);
    Occupancy {
        numa_nodes: vec![NumaOccupancy::default(); numas],
    }
}

/// Where the property is claimed (see the module docs): one container, or
/// scope `pod` (which [`case`] gives every pod of several containers) with
/// the pod's memory either not pinned, or pinned under a preferred hint
/// that holds every container's.
fn claimed(node: &NodeFacts, pod: &PodDemand) -> bool {
    let pinned = node.memory_manager == Some(MemoryManagerPolicy::Static) && pod.guaranteed;
    let preferred_only = matches!(
        node.topology_manager.policy,
        Some(TopologyManagerPolicy::Restricted | TopologyManagerPolicy::SingleNumaNode)
    );
    let pod_scope = node.topology_manager.scope == Some(TopologyManagerScope::Pod);
    pod.containers.len() == 1
        || (pod_scope && (!pinned || (preferred_only && !init_only_memory(pod))))
}

/// An init container (or sidecar) requests a memory resource (huge pages)
/// no app container requests: the pod's memory hint leaves it out (see the
/// module docs).
fn init_only_memory(pod: &PodDemand) -> bool {
    let requests = |app: bool| {
        pod.containers
            .iter()
            .filter(move |c| (c.kind == ContainerKind::App) == app)
            .map(|c| [c.memory_bytes, c.hugepages_2mi_bytes, c.hugepages_1gi_bytes])
    };
    requests(false).any(|init| (0..3).any(|i| init[i] > 0 && requests(true).all(|app| app[i] == 0)))
}

fn verdict(node: &NodeFacts, pod: &PodDemand, held: &Occupancy) -> Verdict {
    admit_on_busy_node(node, pod, held)
        .expect("generated holdings fit the node")
        .verdict
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1500,
        // No regressions file beside the tests: a failure prints its case.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn freeing_never_turns_an_admission_into_a_refusal(c in case()) {
        if !claimed(&c.node, &c.pod) {
            return Ok(());
        }
        let more = occupancy(&c.node, &c.held);
        let Verdict::Admit { .. } = verdict(&c.node, &c.pod, &more) else {
            return Ok(());
        };
        let less = freer(&c.node, &more, &c.kept);
        for (what, held) in [("less held", less), ("nothing held", nothing_held(&c.node))] {
            let after = verdict(&c.node, &c.pod, &held);
            prop_assert!(
                !matches!(after, Verdict::Refuse(_)),
                "admitted while {:?} is held, {after:?} with {what}: {:?}", more, held
            );
        }
    }

    /// Nothing held is the empty node `admit` answers for.
    #[test]
    fn nothing_held_is_the_empty_node(c in case()) {
        let empty = admit(&c.node, &c.pod).expect("generated inputs are valid");
        let busy = admit_on_busy_node(&c.node, &c.pod, &nothing_held(&c.node))
            .expect("generated inputs are valid");
        prop_assert_eq!(busy, empty);
    }
}

/// A NUMA node with SMT off: GPUs, CPUs (one reserved per reserved core),
/// memory and 1Gi pages; its socket is its id ([`two_numa_nodes`]).
fn numa_node(gpus: u32, cpus: u32, reserved: u32, memory_mib: u64, pages: u64) -> NumaNodeFacts {
    NumaNodeFacts {
        gpus: Some(gpus),
        cpus: Some(cpus),
        reserved_cpus: Some(reserved),
        reserved_cores: Some(reserved),
        socket: None,
        memory_mib: Some(memory_mib),
        reserved_memory_mib: Some(512),
        hugepages_2mi: Some(HugePages::default()),
        hugepages_1gi: Some(HugePages {
            pages,
            reserved_pages: 0,
        }),
        distances: None,
    }
}

fn two_numa_nodes(
    numas: [NumaNodeFacts; 2],
    policy: TopologyManagerPolicy,
    scope: TopologyManagerScope,
    memory: MemoryManagerPolicy,
) -> NodeFacts {
    NodeFacts {
        numa_nodes: Some(
            numas
                .iter()
                .enumerate()
                .map(|(socket, n)| NumaNodeFacts {
                    socket: Some(socket as u32),
                    ..n.clone()
                })
                .collect(),
        ),
        threads_per_core: Some(1),
        topology_manager: TopologyManagerConfig {
            policy: Some(policy),
            scope: Some(scope),
            prefer_closest_numa_nodes: Some(false),
            max_allowable_numa_nodes: Some(8),
        },
        cpu_manager: CpuManagerConfig {
            policy: Some(CpuManagerPolicy::Static),
            full_pcpus_only: Some(false),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
        },
        memory_manager: Some(memory),
        kubelet_version: Some(KubeletVersion::new(1, 34)),
        memory_rounding_mib: 1,
        ..NodeFacts::default()
    }
}

fn guaranteed(containers: Vec<ContainerDemand>) -> PodDemand {
    PodDemand {
        containers,
        guaranteed: true,
        pod_level_resources: false,
        devices: Vec::new(),
    }
}

fn demand(
    kind: ContainerKind,
    gpus: Option<u32>,
    cpus: u64,
    memory_gib: u64,
    pages: u64,
) -> ContainerDemand {
    ContainerDemand {
        kind,
        gpus,
        cpu_millis: cpus * 1000,
        memory_bytes: memory_gib * GIB,
        hugepages_1gi_bytes: pages * GIB,
        ..ContainerDemand::default()
    }
}

/// On NUMA node `numa`, `cpus` exclusive CPUs and `memory_gib` held.
fn held_on(numa: usize, cpus: u32, memory_gib: u64) -> Occupancy {
    let mut held = Occupancy {
        numa_nodes: vec![NumaOccupancy::default(); 2],
    };
    held.numa_nodes[numa] = NumaOccupancy {
        cpus,
        memory: [memory_gib * GIB, 0, 0],
        ..NumaOccupancy::default()
    };
    held
}

/// The counterexamples outside the claim, each the kubelet's own behaviour
/// (see the module docs): (node, pod, holdings the pod is admitted with,
/// the verdict with nothing held).
#[rstest]
// 2 NUMA nodes of 5 CPUs (1 reserved on NUMA node 0), 2 GPUs on NUMA node
// 1, scope `container`: a first container of 6 exclusive CPUs, then one of
// 2 GPUs and 1 CPU. With 1 CPU held on NUMA node 1 the first container
// takes NUMA node 0's 4 free CPUs and 2 of NUMA node 1, and the second
// lands on NUMA node 1 beside its GPUs. With nothing held NUMA node 1 is
// whole and free, `takeFullNUMANodes` gives all of it to the first
// container, and the second one's GPUs (NUMA node 1 only) and CPU (NUMA
// node 0 only) share no preferred hint.
#[case::container_scope_take_full_numa_nodes(
    two_numa_nodes(
        [numa_node(0, 5, 1, 64 << 10, 0), numa_node(2, 5, 0, 64 << 10, 0)],
        TopologyManagerPolicy::Restricted,
        TopologyManagerScope::Container,
        MemoryManagerPolicy::None,
    ),
    guaranteed(vec![
        demand(ContainerKind::App, None, 6, 6, 0),
        demand(ContainerKind::App, Some(2), 1, 6, 0),
    ]),
    held_on(1, 1, 0),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(1) })
)]
// Scope `pod`: the pod's memory hint counts only the memory resources its
// app containers request (`getPodRequestedResources`), so an init
// container's 1Gi page is left out. With 1Gi held on NUMA node 0 the
// pod's 14Gi go to NUMA node 1, which has the page; with nothing held to
// NUMA node 0, which has none, and the init container's memory cannot be
// extended to a preferred hint.
#[case::pod_scope_init_only_huge_pages(
    two_numa_nodes(
        [numa_node(0, 2, 0, 15 << 10, 0), numa_node(0, 8, 1, 37 << 10, 1)],
        TopologyManagerPolicy::SingleNumaNode,
        TopologyManagerScope::Pod,
        MemoryManagerPolicy::Static,
    ),
    guaranteed(vec![
        demand(ContainerKind::Init, None, 1, 14, 1),
        demand(ContainerKind::App, None, 1, 9, 0),
    ]),
    held_on(0, 0, 1),
    Verdict::Refuse(Refusal::AllocationFailed {
        container: 0,
        resource: Resource::Memory,
        failure: AllocationFailure::MemoryHintNotPreferred,
    })
)]
// Scope `pod` under `best-effort`: the pod's hint need not hold its
// memory. With 3 CPUs held on NUMA node 0 the hint is {1}, where all 27Gi
// fit; with nothing held it is {0}, the first container's 10Gi are pinned
// there as a one-node group, and the second one's 17Gi can extend {0} to
// no mask that group allows.
#[case::best_effort_memory_in_pieces(
    two_numa_nodes(
        [numa_node(1, 8, 1, 17 << 10, 0), numa_node(4, 2, 0, 36 << 10, 0)],
        TopologyManagerPolicy::BestEffort,
        TopologyManagerScope::Pod,
        MemoryManagerPolicy::Static,
    ),
    guaranteed(vec![
        demand(ContainerKind::App, Some(2), 5, 10, 0),
        demand(ContainerKind::App, None, 0, 17, 0),
    ]),
    held_on(0, 3, 0),
    Verdict::Refuse(Refusal::AllocationFailed {
        container: 1,
        resource: Resource::Memory,
        failure: AllocationFailure::NoExtendedMemoryAffinity,
    })
)]
fn outside_the_claim_freeing_can_refuse(
    #[case] node: NodeFacts,
    #[case] pod: PodDemand,
    #[case] held: Occupancy,
    #[case] freed: Verdict,
) {
    assert!(!claimed(&node, &pod));
    assert!(
        matches!(verdict(&node, &pod, &held), Verdict::Admit { .. }),
        "{:?}",
        verdict(&node, &pod, &held)
    );
    assert_eq!(verdict(&node, &pod, &nothing_held(&node)), freed);
}
