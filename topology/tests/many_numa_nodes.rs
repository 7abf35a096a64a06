//! Machines with more than 8 NUMA nodes, or many GPUs per NUMA node
//! (issue #24): GH200, a GB200 compute tray, an MI300X in CPX/NPS4. The
//! machines are fixtures (`tests/many_numa_nodes/*.json`); each case sets
//! the kubelet's settings and version and names what the kubelet does.

mod support;

use gpu_topology::kubelet::{
    admit, Fact, HugePages, KubeletVersion, MemoryManagerPolicy, NodeFacts, NumaMask,
    NumaNodeFacts, PodDemand, Refusal, StartupError, Unknown, Verdict,
};
use gpu_topology::{TopologyManagerPolicy as Tm, TopologyManagerScope as Scope};
use rstest::rstest;
use serde::Deserialize;
use support::*;

#[derive(Deserialize)]
struct MachineFile {
    threads_per_core: u32,
    numa_nodes: Vec<NumaFile>,
    #[serde(default)]
    memory_only_nodes: usize,
    #[serde(default)]
    memory_only_gib: u64,
    local_distance: u32,
    remote_distance: u32,
    /// Pairs `[a, b, distance]` that differ from `remote_distance`.
    #[serde(default)]
    near: Vec<(usize, usize, u32)>,
}

#[derive(Deserialize)]
struct NumaFile {
    gpus: u32,
    cpus: u32,
    #[serde(default)]
    reserved_cpus: u32,
    socket: Option<u32>,
    memory_gib: u64,
}

/// The machine of `file`, every fact known, under `kubelet`.
fn machine(file: &str, kubelet: Kubelet) -> NodeFacts {
    let path = format!(
        "{}/tests/many_numa_nodes/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let m: MachineFile = serde_json::from_str(&text).expect("fixture parses");
    let mut numas: Vec<NumaNodeFacts> = m
        .numa_nodes
        .iter()
        .map(|n| NumaNodeFacts {
            gpus: Some(n.gpus),
            cpus: Some(n.cpus),
            reserved_cpus: Some(n.reserved_cpus),
            reserved_cores: Some(n.reserved_cpus.div_ceil(m.threads_per_core)),
            socket: n.socket,
            memory_mib: Some(n.memory_gib * 1024),
            reserved_memory_mib: Some(if n.memory_gib > 0 { 1024 } else { 0 }),
            hugepages_2mi: Some(HugePages::default()),
            hugepages_1gi: Some(HugePages::default()),
            distances: None,
        })
        .collect();
    for _ in 0..m.memory_only_nodes {
        numas.push(NumaNodeFacts {
            gpus: Some(0),
            cpus: Some(0),
            reserved_cpus: Some(0),
            reserved_cores: Some(0),
            socket: None,
            memory_mib: Some(m.memory_only_gib * 1024),
            reserved_memory_mib: Some(0),
            hugepages_2mi: Some(HugePages::default()),
            hugepages_1gi: Some(HugePages::default()),
            distances: None,
        });
    }
    let count = numas.len();
    let between = |i: usize, j: usize| {
        m.near
            .iter()
            .find(|&&(a, b, _)| (a, b) == (i, j) || (a, b) == (j, i))
            .map_or(m.remote_distance, |&(_, _, d)| d)
    };
    for (i, n) in numas.iter_mut().enumerate() {
        n.distances = Some(
            (0..count)
                .map(|j| {
                    if i == j {
                        m.local_distance
                    } else {
                        between(i, j)
                    }
                })
                .collect(),
        );
    }
    node(numas, m.threads_per_core, kubelet)
}

/// A kubelet's settings beyond the policies.
#[derive(Clone, Copy)]
struct Settings {
    topology: Tm,
    memory_static: bool,
    /// `max-allowable-numa-nodes` (8 when unset).
    max_allowable: u32,
    /// `None`: not published.
    version: Option<(u32, u32)>,
}

const fn best_effort(max_allowable: u32, version: Option<(u32, u32)>) -> Settings {
    Settings {
        topology: Tm::BestEffort,
        memory_static: false,
        max_allowable,
        version,
    }
}

const fn with(topology: Tm, settings: Settings) -> Settings {
    Settings {
        topology,
        ..settings
    }
}

const fn memory_static(settings: Settings) -> Settings {
    Settings {
        memory_static: true,
        ..settings
    }
}

fn on(file: &str, settings: Settings) -> NodeFacts {
    let mut kubelet = Kubelet::new(settings.topology, Scope::Container);
    if settings.memory_static {
        kubelet.memory = MemoryManagerPolicy::Static;
    }
    let mut node = machine(file, kubelet);
    node.topology_manager.max_allowable_numa_nodes = Some(settings.max_allowable);
    node.kubelet_version = settings
        .version
        .map(|(major, minor)| KubeletVersion::new(major, minor));
    node
}

fn pod(gpus: u32, cpus: u64, memory_gib: u64) -> PodDemand {
    guaranteed(vec![app(gpus, cpus, memory_gib)])
}

const V1_35: Option<(u32, u32)> = Some((1, 35));
const V1_36: Option<(u32, u32)> = Some((1, 36));

/// 2^34 - 1 masks of the GPUs' walk over every NUMA node, 3 of the CPUs'.
const GB200_MASKS_BEFORE_1_36: u64 = (1 << 34) - 1 + 3;
/// GPUs: {0}, {1}, {0,1}, each with any of the 32 memory-only nodes; CPUs: 3.
const GB200_PERMUTATIONS_BEFORE_1_36: u64 = (3 << 32) * 3;

#[rstest]
// 9 NUMA nodes are more than the default max-allowable-numa-nodes.
#[case::gh200_default_max_allowable(
    "gh200.json",
    best_effort(8, V1_36),
    pod(1, 8, 64),
    Verdict::Refuse(Refusal::KubeletNotStarted(StartupError::TooManyNumaNodes {
        numa_nodes: 9,
        max_allowable: 8
    }))
)]
// The GPU's PCI function sits on the Grace node: GPU and CPUs align there.
#[case::gh200_1_36_gpu_and_cpus_on_the_grace_node(
    "gh200.json",
    best_effort(9, V1_36),
    pod(1, 8, 64),
    Verdict::Admit { aligned: true }
)]
// Before 1.36 the GPU's hints range over 9 nodes (2^8 masks hold node 0):
// the preferred {0} is the same.
#[case::gh200_1_35_same_answer(
    "gh200.json",
    best_effort(9, V1_35),
    pod(1, 8, 64),
    Verdict::Admit { aligned: true }
)]
// The two rules agree here: the version does not matter.
#[case::gh200_version_unknown_does_not_matter(
    "gh200.json",
    best_effort(9, None),
    pod(1, 8, 64),
    Verdict::Admit { aligned: true }
)]
// The Memory Manager's hints range over every NUMA node, the HBM node
// included: 64 GiB fit the Grace node, aligned with the GPU.
#[case::gh200_memory_static_fits_grace_memory(
    "gh200.json",
    memory_static(with(Tm::Restricted, best_effort(9, V1_36))),
    pod(1, 8, 64),
    Verdict::Admit { aligned: true }
)]
// 500 GiB need the Grace node and the HBM node ({0,1} preferred for
// memory, {0} for the GPU): no preferred merge, restricted refuses.
#[case::gh200_memory_static_spills_into_hbm_restricted(
    "gh200.json",
    memory_static(with(Tm::Restricted, best_effort(9, V1_36))),
    pod(1, 8, 500),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
)]
#[case::gh200_memory_static_spills_into_hbm_best_effort(
    "gh200.json",
    memory_static(best_effort(9, V1_36)),
    pod(1, 8, 500),
    Verdict::Admit { aligned: false }
)]
#[case::gb200_default_max_allowable(
    "gb200.json",
    best_effort(8, V1_36),
    pod(2, 8, 64),
    Verdict::Refuse(Refusal::KubeletNotStarted(StartupError::TooManyNumaNodes {
        numa_nodes: 34,
        max_allowable: 8
    }))
)]
// From 1.36 the GPUs' hints range over nodes 0 and 1 only.
#[case::gb200_1_36_admitted_aligned(
    "gb200.json",
    best_effort(34, V1_36),
    pod(2, 8, 64),
    Verdict::Admit { aligned: true }
)]
#[case::gb200_1_36_four_gpus_span_both_sockets(
    "gb200.json",
    best_effort(34, V1_36),
    pod(4, 8, 64),
    Verdict::Admit { aligned: false }
)]
#[case::gb200_1_36_single_numa_node_refuses_four_gpus(
    "gb200.json",
    with(Tm::SingleNumaNode, best_effort(34, V1_36)),
    pod(4, 8, 64),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
)]
#[case::gb200_1_36_single_numa_node_two_gpus(
    "gb200.json",
    with(Tm::SingleNumaNode, best_effort(34, V1_36)),
    pod(2, 8, 64),
    Verdict::Admit { aligned: true }
)]
// Before 1.36 the kubelet walks 2^34 masks: the pod stays Pending.
#[case::gb200_1_35_hint_search_too_slow(
    "gb200.json",
    best_effort(34, V1_35),
    pod(2, 8, 64),
    Verdict::Refuse(Refusal::HintSearchTooSlow {
        container: Some(0),
        masks: GB200_MASKS_BEFORE_1_36,
        permutations: GB200_PERMUTATIONS_BEFORE_1_36,
    })
)]
// Slow or admitted, by the version.
#[case::gb200_version_unknown_matters(
    "gb200.json",
    best_effort(34, None),
    pod(2, 8, 64),
    Verdict::Unknown(Unknown::Missing(Fact::KubeletVersion))
)]
// The Memory Manager walks every NUMA node's masks whatever the version.
#[case::gb200_1_36_memory_static_too_slow(
    "gb200.json",
    memory_static(best_effort(34, V1_36)),
    pod(2, 8, 64),
    Verdict::Refuse(Refusal::HintSearchTooSlow {
        container: Some(0),
        masks: (1 << 34) - 1 + 3 + 3,
        // GPUs 3, CPUs 3, memory: every mask with node 0 or 1 (at least).
        permutations: 3 * 3 * ((1 << 34) - (1 << 32)),
    })
)]
// Policy none merges nothing: admitted, not on one NUMA node of 34.
#[case::gb200_policy_none(
    "gb200.json",
    with(Tm::None, best_effort(8, None)),
    pod(2, 8, 64),
    Verdict::Admit { aligned: false }
)]
// 4 NUMA nodes of 16 logical GPUs: the common path.
#[case::mi300x_16_gpus_fit_one_numa_node(
    "mi300x_cpx_nps4.json",
    with(Tm::SingleNumaNode, best_effort(8, None)),
    pod(16, 16, 64),
    Verdict::Admit { aligned: true }
)]
#[case::mi300x_32_gpus_single_numa_node(
    "mi300x_cpx_nps4.json",
    with(Tm::SingleNumaNode, best_effort(8, None)),
    pod(32, 16, 64),
    Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
)]
#[case::mi300x_64_gpus_best_effort(
    "mi300x_cpx_nps4.json",
    best_effort(8, None),
    pod(64, 16, 64),
    Verdict::Admit { aligned: false }
)]
fn many_numa_nodes(
    #[case] file: &str,
    #[case] settings: Settings,
    #[case] pod: PodDemand,
    #[case] expected: Verdict,
) {
    let node = on(file, settings);
    let admission = admit(&node, &pod).expect("valid input");
    assert_eq!(admission.verdict, expected, "{admission:#?}");
}

/// The hint the kubelet keeps, in machine ids.
#[rstest]
#[case::gb200_1_36_two_gpus_on_node_0("gb200.json", best_effort(34, V1_36), pod(2, 8, 64), 0b01)]
#[case::gb200_1_36_four_gpus_on_both("gb200.json", best_effort(34, V1_36), pod(4, 8, 64), 0b11)]
#[case::gh200_1_36_grace_node("gh200.json", best_effort(9, V1_36), pod(1, 8, 64), 0b01)]
fn the_hint_names_machine_nodes(
    #[case] file: &str,
    #[case] settings: Settings,
    #[case] pod: PodDemand,
    #[case] mask: u64,
) {
    let admission = admit(&on(file, settings), &pod).expect("valid input");
    let hint = admission.units.first().and_then(|u| u.hint);
    assert_eq!(hint.and_then(|h| h.mask), Some(NumaMask::from_bits(mask)));
    // What is left is listed for every NUMA node of the machine.
    let nodes = on(file, settings).numa_nodes.map_or(0, |n| n.len());
    assert_eq!(admission.remaining.gpus.map(|g| g.len()), Some(nodes));
}

/// Without the per-NUMA lists the kubelet's start is decided by the
/// `machine-numa-nodes` count.
#[rstest]
#[case::gb200_count_default_max(34, 8, true)]
#[case::gb200_count_allowed(34, 34, false)]
#[case::small_machine(2, 8, false)]
fn machine_numa_nodes_decide_the_start(
    #[case] machine_numa_nodes: u32,
    #[case] max_allowable: u32,
    #[case] refused: bool,
) {
    let mut node = on("gb200.json", best_effort(max_allowable, V1_36));
    node.numa_nodes = None;
    node.gpus = Some(4);
    node.machine_numa_nodes = Some(machine_numa_nodes);
    let admission = admit(&node, &pod(2, 8, 64)).expect("valid input");
    let expected = Refusal::KubeletNotStarted(StartupError::TooManyNumaNodes {
        numa_nodes: machine_numa_nodes as usize,
        max_allowable,
    });
    assert_eq!(
        admission.verdict == Verdict::Refuse(expected),
        refused,
        "{admission:#?}"
    );
}

/// `prefer-closest-numa-nodes` with the SLIT distances on 10 NUMA nodes:
/// 2 GPUs need 2 of the 3 GPU nodes; `Narrowest` keeps the lowest mask
/// {0,1}, `Closest` the closest pair {0,2} (`numa_info.go`). Without
/// exclusive CPUs (a Burstable pod) the GPUs' list alone decides.
#[rstest]
#[case::narrowest_lowest_pair(false, V1_36, 0b011)]
#[case::closest_pair(true, V1_36, 0b101)]
#[case::closest_pair_before_1_36(true, V1_35, 0b101)]
fn closest_numa_nodes_by_distance_above_8(
    #[case] prefer_closest: bool,
    #[case] version: Option<(u32, u32)>,
    #[case] mask: u64,
) {
    let mut node = on("closest_10_numa.json", best_effort(10, version));
    node.topology_manager.prefer_closest_numa_nodes = Some(prefer_closest);
    let pod = PodDemand {
        guaranteed: false,
        ..pod(2, 4, 16)
    };
    let admission = admit(&node, &pod).expect("valid input");
    assert_eq!(admission.verdict, Verdict::Admit { aligned: false });
    let hint = admission.units.first().and_then(|u| u.hint);
    assert_eq!(
        hint.map(|h| (h.mask, h.preferred)),
        Some((Some(NumaMask::from_bits(mask)), true))
    );
}

/// Machines whose NUMA nodes that matter are still too many: unknown,
/// never a guess, or the kubelet's own slowness where it can be counted.
#[rstest]
// A GPU on each of 20 NUMA nodes: from 1.36 too the GPUs' masks range over
// 20 nodes (2^20 masks, fewer than a minute of work for one list).
#[case::gpus_on_20_numa_nodes_burstable(
    "gpus_on_20_numa.json",
    best_effort(20, V1_36),
    false,
    Verdict::Unknown(Unknown::TooManyNumaNodes { numa_nodes: 20 })
)]
// With exclusive CPUs on the same 20 nodes: (2^20 - 1)^2 permutations.
#[case::gpus_on_20_numa_nodes_guaranteed(
    "gpus_on_20_numa.json",
    best_effort(20, V1_36),
    true,
    Verdict::Refuse(Refusal::HintSearchTooSlow {
        container: Some(0),
        masks: 2 * ((1 << 20) - 1),
        permutations: ((1 << 20) - 1) * ((1 << 20) - 1),
    })
)]
// 70 NUMA nodes: no kubelet mask holds them.
#[case::seventy_numa_nodes(
    "wide_70_numa.json",
    best_effort(70, V1_36),
    true,
    Verdict::Unknown(Unknown::TooManyNumaNodes { numa_nodes: 70 })
)]
fn too_many_numa_nodes_that_matter(
    #[case] file: &str,
    #[case] settings: Settings,
    #[case] guaranteed: bool,
    #[case] expected: Verdict,
) {
    let pod = PodDemand {
        guaranteed,
        ..pod(1, 4, 16)
    };
    let admission = admit(&on(file, settings), &pod).expect("valid input");
    assert_eq!(admission.verdict, expected, "{admission:#?}");
}

/// A fact missing on a NUMA node that matters is named by its machine id,
/// also where the nodes that matter are not the first ones: the GB200
/// tray's second Grace node moved to id 33 (SMT-2 here), with 2 reserved
/// CPUs on cores not published.
#[test]
fn a_missing_fact_names_the_machine_numa_node() {
    let mut node = on("gb200.json", best_effort(34, V1_36));
    node.threads_per_core = Some(2);
    let numas = node.numa_nodes.as_mut().expect("fixture lists NUMA nodes");
    numas.swap(1, 33);
    numas[33].reserved_cpus = Some(2);
    numas[33].reserved_cores = None;
    // 138 CPUs under full-pcpus-only need every free core of both Grace
    // nodes: whether node 33's reserved CPUs fill one core decides.
    node.cpu_manager.full_pcpus_only = Some(true);
    let admission = admit(&node, &pod(4, 138, 64)).expect("valid input");
    assert_eq!(
        admission.verdict,
        Verdict::Unknown(Unknown::Missing(Fact::ReservedCores { numa: 33 }))
    );
    // With the cores known, the hint names the nodes by their machine ids
    // and the GPUs left list all 34 nodes.
    let numas = node.numa_nodes.as_mut().expect("fixture lists NUMA nodes");
    numas[33].reserved_cores = Some(1);
    let admission = admit(&node, &pod(4, 138, 64)).expect("valid input");
    assert_eq!(admission.verdict, Verdict::Admit { aligned: false });
    let hint = admission.units.first().and_then(|u| u.hint);
    assert_eq!(
        hint.and_then(|h| h.mask),
        Some(NumaMask::from_bits((1 << 33) | 1))
    );
    let mut left = vec![0; 34];
    left[33] = 0;
    assert_eq!(admission.remaining.gpus, Some(left));
}
