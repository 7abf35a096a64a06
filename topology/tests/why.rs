//! The cases that motivated the kubelet model: pods a GPU-count check admits
//! and the kubelet then fails on every node the affinity allows, and their
//! neighbours that do pass.

mod support;

use gpu_topology::kubelet::{
    admit, AllocationFailure, ContainerKind, MemoryManagerPolicy, NodeFacts, PodDemand, Refusal,
    Resource, Verdict,
};
use gpu_topology::{TopologyManagerPolicy as Tm, TopologyManagerScope as Scope};
use rstest::rstest;
use support::*;

fn hgx_with(topology: Tm, scope: Scope) -> NodeFacts {
    hgx(Kubelet::new(topology, scope))
}

fn full_pcpus_only(topology: Tm) -> NodeFacts {
    let mut kubelet = Kubelet::new(topology, Scope::Pod);
    kubelet.full_pcpus_only = true;
    hgx(kubelet)
}

fn memory_static(topology: Tm) -> NodeFacts {
    let mut kubelet = Kubelet::new(topology, Scope::Pod);
    kubelet.memory = MemoryManagerPolicy::Static;
    hgx(kubelet)
}

fn three_containers(gpus: [u32; 3]) -> PodDemand {
    guaranteed(gpus.iter().map(|&g| app(g, 4, 16)).collect())
}

fn burstable(pod: PodDemand) -> PodDemand {
    PodDemand {
        guaranteed: false,
        ..pod
    }
}

#[rstest]
// 8 GPUs need both NUMA nodes, 32 CPUs fit one: no merged hint is preferred.
#[case::hgx_8_gpus_32_cpus_restricted(
    hgx_with(Tm::Restricted, Scope::Pod),
    guaranteed(vec![app(8, 32, 64)]),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
)]
// Without exclusive CPUs the CPU Manager gives no hint: admitted, not aligned.
#[case::hgx_8_gpus_shared_cpus_restricted(
    hgx_with(Tm::Restricted, Scope::Pod),
    burstable(guaranteed(vec![app(8, 32, 64)])),
    Verdict::Admit { aligned: false }
)]
// 4 GPUs and 32 CPUs fit one NUMA node together.
#[case::hgx_4_gpus_32_cpus_restricted(
    hgx_with(Tm::Restricted, Scope::Pod),
    guaranteed(vec![app(4, 32, 64)]),
    Verdict::Admit { aligned: true }
)]
// 96 CPUs need both NUMA nodes of 56: no single-NUMA CPU hint.
#[case::four_gpus_96_cpus_single_numa_node(
    hgx_with(Tm::SingleNumaNode, Scope::Pod),
    guaranteed(vec![app(4, 96, 64)]),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
)]
#[case::four_gpus_48_cpus_single_numa_node(
    hgx_with(Tm::SingleNumaNode, Scope::Pod),
    guaranteed(vec![app(4, 48, 64)]),
    Verdict::Admit { aligned: true }
)]
// 3 CPUs are not whole cores of 2 threads.
#[case::three_cpus_full_pcpus_only(
    full_pcpus_only(Tm::BestEffort),
    guaranteed(vec![app(1, 3, 8)]),
    Verdict::Refuse(Refusal::SmtAlignment {
        container: 0,
        requested: 3,
        cpus_per_core: 2,
        available_physical_cpus: None
    })
)]
// The CPU Manager checks SMT alignment without the Topology Manager too.
#[case::three_cpus_full_pcpus_only_without_topology_manager(
    full_pcpus_only(Tm::None),
    guaranteed(vec![app(1, 3, 8)]),
    Verdict::Refuse(Refusal::SmtAlignment {
        container: 0,
        requested: 3,
        cpus_per_core: 2,
        available_physical_cpus: None
    })
)]
// The whole node less the reserved core: 112 - 2 = 110 physical CPUs.
// Every CPU, reserved ones too: more than the allocatable, so the
// scheduler never places it (before the CPU Manager's SMTAlignmentError).
#[case::all_cpus_full_pcpus_only(
    full_pcpus_only(Tm::BestEffort),
    guaranteed(vec![app(1, 112, 8)]),
    Verdict::Refuse(Refusal::NodeTooSmall {
        resource: Resource::Cpu,
        requested: 112_000,
        capacity: 112_000,
        reserved: 2_000
    })
)]
#[case::four_cpus_full_pcpus_only(
    full_pcpus_only(Tm::BestEffort),
    guaranteed(vec![app(1, 4, 8)]),
    Verdict::Admit { aligned: true }
)]
// 3 + 3 GPUs leave one GPU on each NUMA node: the third container's 2 GPUs
// find no NUMA node with 2 free.
#[case::three_three_two_gpus_container_scope_restricted(
    hgx_with(Tm::Restricted, Scope::Container),
    three_containers([3, 3, 2]),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(2) })
)]
#[case::three_three_two_gpus_container_scope_single_numa_node(
    hgx_with(Tm::SingleNumaNode, Scope::Container),
    three_containers([3, 3, 2]),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(2) })
)]
#[case::three_three_two_gpus_container_scope_best_effort(
    hgx_with(Tm::BestEffort, Scope::Container),
    three_containers([3, 3, 2]),
    Verdict::Admit { aligned: false }
)]
// Under pod scope the 8 GPUs are one unit: both NUMA nodes, preferred.
#[case::three_three_two_gpus_pod_scope_restricted(
    hgx_with(Tm::Restricted, Scope::Pod),
    burstable(three_containers([3, 3, 2])),
    Verdict::Admit { aligned: false }
)]
#[case::four_two_two_gpus_container_scope_single_numa_node(
    hgx_with(Tm::SingleNumaNode, Scope::Container),
    three_containers([4, 2, 2]),
    Verdict::Admit { aligned: true }
)]
// 600 GiB is more than a NUMA node's 511 GiB: no single-NUMA memory hint.
#[case::memory_larger_than_a_numa_node_single_numa_node(
    memory_static(Tm::SingleNumaNode),
    guaranteed(vec![app(4, 16, 600)]),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
)]
#[case::memory_within_a_numa_node_single_numa_node(
    memory_static(Tm::SingleNumaNode),
    guaranteed(vec![app(4, 16, 400)]),
    Verdict::Admit { aligned: true }
)]
// More memory than the whole node: the Memory Manager finds no hint (no
// preference to the Topology Manager) and fails to allocate.
// More than the node's memory: the scheduler never places it (the
// Memory Manager would fail it with NoExtendedMemoryAffinity).
#[case::memory_larger_than_the_node_best_effort(
    memory_static(Tm::BestEffort),
    guaranteed(vec![app(4, 16, 2000)]),
    Verdict::Refuse(Refusal::NodeTooSmall {
        resource: Resource::Memory,
        requested: 2000 << 30,
        capacity: 1_097_366_241_280,
        reserved: 0
    })
)]
// The Memory Manager fails Allocate after the Topology Manager admitted
// (the kubelet's UnexpectedAdmissionError). The first container's 64 GiB
// is a single-NUMA allocation on node 0; the second's 700 GiB needs both
// NUMA nodes, and calculateHints never groups a node that holds a
// single-NUMA allocation with another, so it has no hint at all. Under
// best-effort (scope container) the Topology Manager admits the second
// container on its GPUs' node 1, and extendTopologyManagerHint finds no
// hint holding it ("failed to find NUMA nodes to extend the current
// topology hint").
#[case::memory_manager_cannot_extend_the_hint_best_effort_container_scope(
    { let mut kubelet = Kubelet::new(Tm::BestEffort, Scope::Container); kubelet.memory = MemoryManagerPolicy::Static; hgx(kubelet) },
    guaranteed(vec![app(4, 16, 64), app(4, 16, 700)]),
    Verdict::Refuse(Refusal::AllocationFailed { container: 1, resource: Resource::Memory, failure: AllocationFailure::NoExtendedMemoryAffinity })
)]
// Under policy none every hint is empty: getDefaultHint finds no hint for
// the second container ("failed to get the default NUMA affinity, no NUMA
// nodes with enough memory is available").
#[case::memory_manager_has_no_default_hint_policy_none(
    memory_static(Tm::None),
    guaranteed(vec![app(4, 16, 64), app(4, 16, 700)]),
    Verdict::Refuse(Refusal::AllocationFailed { container: 1, resource: Resource::Memory, failure: AllocationFailure::NoMemoryAffinity })
)]
// Scope pod under best-effort: the pod's hint spans both NUMA nodes (its
// 8 GPUs need them), the first container's memory takes both as a group,
// the second's fits the same group: admitted, not aligned.
#[case::memory_of_both_containers_in_one_group_best_effort_pod_scope(
    memory_static(Tm::BestEffort),
    guaranteed(vec![app(4, 16, 64), app(4, 16, 700)]),
    Verdict::Admit { aligned: false }
)]
fn kubelet_answers_why_cases(
    #[case] node: NodeFacts,
    #[case] pod: PodDemand,
    #[case] expected: Verdict,
) {
    let answer = admit(&node, &pod).unwrap();
    assert_eq!(answer.verdict, expected, "units: {:#?}", answer.units);
}

#[test]
fn the_refusal_names_each_resources_narrowest_mask() {
    let answer = admit(
        &hgx_with(Tm::Restricted, Scope::Pod),
        &guaranteed(vec![app(8, 32, 64)]),
    )
    .unwrap();
    let unit = &answer.units[0];
    let narrowest: Vec<(Resource, u64, u32)> = unit
        .resources
        .iter()
        .map(|r| match r.hints {
            gpu_topology::kubelet::HintReport::Hints {
                narrowest_capacity, ..
            } => (r.resource, r.request, narrowest_capacity),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        narrowest,
        vec![(Resource::Gpu, 8, 2), (Resource::Cpu, 32, 1)]
    );
    assert!(!unit.hint.unwrap().preferred);
}

#[test]
fn init_containers_gpus_are_reused_by_the_app_container() {
    // 4 GPUs for an init container then 4 for the app container fit one
    // NUMA node: the app container reuses the init container's GPUs.
    let pod = guaranteed(vec![
        container(ContainerKind::Init, Some(4), 2000, 8),
        app(4, 2, 8),
    ]);
    let answer = admit(&hgx_with(Tm::SingleNumaNode, Scope::Container), &pod).unwrap();
    assert_eq!(answer.verdict, Verdict::Admit { aligned: true });
    let masks: Vec<_> = answer.units.iter().map(|u| u.hint.unwrap().mask).collect();
    assert_eq!(masks[0], masks[1]);
}

#[test]
fn sidecar_gpus_are_not_reused() {
    // A sidecar keeps its 4 GPUs: the app container's 4 go to the other node.
    let pod = guaranteed(vec![
        container(ContainerKind::Sidecar, Some(4), 2000, 8),
        app(4, 2, 8),
    ]);
    let answer = admit(&hgx_with(Tm::SingleNumaNode, Scope::Container), &pod).unwrap();
    assert_eq!(answer.verdict, Verdict::Admit { aligned: true });
    let masks: Vec<_> = answer.units.iter().map(|u| u.hint.unwrap().mask).collect();
    assert_ne!(masks[0], masks[1]);
}
