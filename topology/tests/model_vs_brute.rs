//! The model against a brute-force transliteration of the kubelet
//! (`brute/mod.rs`) on random node shapes and pods: where the model gives a
//! definite answer, the brute force must give the same verdict, alignment
//! and (after an admission) the same resources left, under every variant of
//! what the kubelet leaves to chance.
//!
//! `PROPTEST_CASES` sets the number of cases (default 256).

mod brute;

use brute::{brute_admit, Outcome, VARIANTS};
use gpu_topology::kubelet::{
    admit, admit_by_the_managers, ContainerDemand, ContainerKind, CpuManagerConfig, HugePages,
    KubeletVersion, MemoryManagerPolicy, NodeFacts, NumaNodeFacts, PodDemand, Refusal,
    TopologyManagerConfig, Verdict,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
/// Most permutations one brute-force merge may walk.
const PERMUTATION_CAP: u64 = 40_000;

/// The device resource besides the GPUs the cases use (an RDMA HCA).
const HCA: &str = "rdma/ib";

#[derive(Debug, Clone)]
struct Numa {
    gpus: u32,
    hcas: u32,
    cores: u32,
    reserved_cores: u32,
    reserved_extra: u32,
    memory_gib: u64,
    pages_2mi: u64,
    pages_1gi: u64,
}

fn numa() -> impl Strategy<Value = Numa> {
    (
        (
            prop_oneof![3 => 0u32..=4, 1 => 0u32..=8],
            prop_oneof![1 => Just(0u32), 3 => 1u32..=4],
        ),
        // CPU-less NUMA nodes (HBM, CXL memory), some memory-less too.
        prop_oneof![1 => Just(0u32), 8 => 1u32..=6],
        prop_oneof![3 => Just(0u32), 1 => 1u32..=2],
        0u32..=1,
        prop_oneof![8 => 4u64..=32, 1 => Just(0u64)],
        prop_oneof![4 => Just(0u64), 1 => 1u64..=4],
        prop_oneof![4 => Just(0u64), 1 => 1u64..=2],
    )
        .prop_map(
            |(
                (gpus, hcas),
                cores,
                reserved_cores,
                reserved_extra,
                memory_gib,
                pages_2mi,
                pages_1gi,
            )| {
                // Only CPU-less nodes are memory-less.
                let memory_gib = if cores > 0 {
                    memory_gib.max(4)
                } else {
                    memory_gib
                };
                Numa {
                    gpus,
                    hcas,
                    cores,
                    reserved_cores: reserved_cores.min(cores),
                    reserved_extra,
                    memory_gib,
                    pages_2mi,
                    pages_1gi,
                }
            },
        )
}

fn node() -> impl Strategy<Value = NodeFacts> {
    let nodes = prop_oneof![
        2 => Just(1usize),
        8 => Just(2),
        4 => Just(3),
        6 => Just(4),
        2 => 5usize..=8,
        2 => 9usize..=10,
        1 => 11usize..=12
    ];
    (
        nodes.prop_flat_map(|n| proptest::collection::vec(numa(), n)),
        prop_oneof![Just(1u32), Just(2)],
        0usize..3,
        any::<bool>(),
        prop_oneof![
            Just(TopologyManagerPolicy::None),
            Just(TopologyManagerPolicy::BestEffort),
            Just(TopologyManagerPolicy::Restricted),
            Just(TopologyManagerPolicy::SingleNumaNode)
        ],
        prop_oneof![
            Just(TopologyManagerScope::Pod),
            Just(TopologyManagerScope::Container)
        ],
        any::<bool>(),
        prop_oneof![1 => Just(CpuManagerPolicy::None), 3 => Just(CpuManagerPolicy::Static)],
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![5 => Just(false), 1 => Just(true)],
        ),
        prop_oneof![
            Just(MemoryManagerPolicy::None),
            Just(MemoryManagerPolicy::Static)
        ],
        (
            proptest::collection::vec(11u32..=30, 64),
            prop_oneof![1 => Just(8u32), 1 => Just(16u32)],
            prop_oneof![
                Just(None),
                Just(Some(KubeletVersion::new(1, 35))),
                Just(Some(KubeletVersion::new(1, 36)))
            ],
        ),
    )
        .prop_map(
            |(
                mut numas,
                t,
                sockets,
                distances,
                policy,
                scope,
                closest,
                cpu,
                (full, distribute, align),
                memory,
                (far, max_allowable, kubelet_version),
            )| {
                // Every machine has a CPU.
                if numas.iter().all(|s| s.cores == 0) {
                    numas[0].cores = 1;
                }
                let n = numas.len();
                let facts = numas
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let reserved = s.reserved_cores * t;
                        // Half-reserved cores only with 2 threads per core.
                        let reserved = if t == 2 && s.reserved_cores > 0 {
                            reserved - s.reserved_extra.min(s.reserved_cores)
                        } else {
                            reserved
                        };
                        NumaNodeFacts {
                            gpus: Some(s.gpus),
                            cpus: Some(s.cores * t),
                            reserved_cpus: Some(reserved),
                            reserved_cores: Some(s.reserved_cores),
                            socket: Some(match sockets {
                                0 => i as u32,
                                1 => (i / 2) as u32,
                                _ => 0,
                            }),
                            memory_mib: Some(
                                s.memory_gib * 1024 + s.pages_1gi * 1024 + s.pages_2mi * 2,
                            ),
                            reserved_memory_mib: Some(if s.memory_gib > 0 { 512 } else { 0 }),
                            hugepages_2mi: Some(HugePages {
                                pages: s.pages_2mi,
                                reserved_pages: 0,
                            }),
                            hugepages_1gi: Some(HugePages {
                                pages: s.pages_1gi,
                                reserved_pages: 0,
                            }),
                            distances: distances.then(|| {
                                (0..n)
                                    .map(|j| {
                                        if i == j {
                                            10
                                        } else {
                                            far[(i.min(j) * 11 + i.max(j)) % far.len()]
                                        }
                                    })
                                    .collect()
                            }),
                        }
                    })
                    .collect();
                NodeFacts {
                    // The node counts stand in only for lists not published.
                    gpus: None,
                    gpus_per_numa_max: None,
                    numa_nodes: Some(facts),
                    threads_per_core: Some(t),
                    topology_manager: TopologyManagerConfig {
                        policy: Some(policy),
                        scope: Some(scope),
                        prefer_closest_numa_nodes: Some(closest),
                        max_allowable_numa_nodes: Some(max_allowable),
                    },
                    cpu_manager: CpuManagerConfig {
                        policy: Some(cpu),
                        full_pcpus_only: Some(full),
                        distribute_cpus_across_numa: Some(distribute),
                        align_by_socket: Some(align),
                    },
                    memory_manager: Some(memory),
                    devices: [(HCA.to_owned(), numas.iter().map(|s| s.hcas).collect())].into(),
                    machine_numa_nodes: None,
                    kubelet_version,
                    // Exact: the brute-force kubelet knows every MiB.
                    memory_rounding_mib: 1,
                }
            },
        )
}

fn container(kind: ContainerKind) -> impl Strategy<Value = ContainerDemand> {
    (
        prop_oneof![2 => Just(None), 4 => (0u32..=2).prop_map(Some), 1 => (3u32..=6).prop_map(Some)],
        prop_oneof![3 => (0u64..=8).prop_map(|c| c * 1000), 1 => Just(1500u64)],
        1u64..=24,
        prop_oneof![4 => Just(0u64), 1 => (1u64..=2).prop_map(|p| p * 2 * MIB)],
        prop_oneof![6 => Just(0u64), 1 => Just(GIB)],
        prop_oneof![4 => Just(None), 3 => (0u32..=2).prop_map(Some), 1 => (3u32..=4).prop_map(Some)],
    )
        .prop_map(move |(gpus, cpu_millis, memory_gib, hp2, hp1, hcas)| ContainerDemand {
            kind,
            gpus,
            cpu_millis,
            memory_bytes: memory_gib * GIB,
            hugepages_2mi_bytes: hp2,
            hugepages_1gi_bytes: hp1,
            devices: vec![hcas],
        })
}

fn pod() -> impl Strategy<Value = PodDemand> {
    let init = prop_oneof![Just(ContainerKind::Init), Just(ContainerKind::Sidecar)];
    (
        proptest::collection::vec(init, 0..=2),
        prop_oneof![3 => 1usize..=2, 1 => 3usize..=4],
        prop_oneof![1 => Just(false), 4 => Just(true)],
        prop_oneof![12 => Just(false), 1 => Just(true)],
    )
        .prop_flat_map(|(inits, apps, guaranteed, pod_level)| {
            let kinds: Vec<ContainerKind> = inits
                .into_iter()
                .chain(std::iter::repeat_n(ContainerKind::App, apps))
                .collect();
            let containers: Vec<_> = kinds.into_iter().map(container).collect();
            (containers, Just(guaranteed), Just(pod_level))
        })
        .prop_map(|(mut containers, guaranteed, pod_level_resources)| {
            // The HCAs are a resource of the pod only when a container lists them.
            let lists_hcas = containers.iter().any(|c| c.device(0).is_some());
            if !lists_hcas {
                containers.iter_mut().for_each(|c| c.devices.clear());
            }
            PodDemand {
                containers,
                guaranteed,
                pod_level_resources,
                devices: if lists_hcas {
                    vec![HCA.to_owned()]
                } else {
                    Vec::new()
                },
            }
        })
}

#[derive(Default)]
struct Tally {
    compared: AtomicUsize,
    unknown: AtomicUsize,
    too_large: AtomicUsize,
    invalid: AtomicUsize,
    /// Hint searches the model calls too slow (the brute force gives up too).
    slow: AtomicUsize,
    /// Compared cases on machines above 8 NUMA nodes whose kubelet starts
    /// (the model's projection), and with CPU-less NUMA nodes.
    above_8: AtomicUsize,
    cpu_less: AtomicUsize,
    /// Refused for the node's size (the scheduler's check), then compared
    /// by the managers alone.
    node_size: AtomicUsize,
    /// Compared cases by outcome, to see what the run covered.
    outcomes: std::sync::Mutex<std::collections::BTreeMap<String, usize>>,
}

/// The outcome's kind, without its numbers.
fn kind(verdict: &Verdict) -> String {
    use gpu_topology::kubelet::{Refusal as R, Unknown as U};
    match verdict {
        Verdict::Admit { aligned } => format!("admit, aligned {aligned}"),
        Verdict::Refuse(R::AllocationFailed {
            resource, failure, ..
        }) => {
            let failure = format!("{failure:?}");
            let failure = failure.split([' ', '{']).next().unwrap_or("").to_string();
            format!("allocation of {resource} fails: {failure}")
        }
        Verdict::Refuse(r) => format!("{r:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("")
            .to_string(),
        Verdict::Unknown(U::Missing(fact)) => format!("unknown: {fact}"),
        Verdict::Unknown(u) => {
            let u = format!("{u:?}");
            format!("unknown: {}", u.split(['{']).next().unwrap_or(""))
        }
    }
}

/// The kubelets the brute force runs for `node`: its version, or one on
/// each side of the device-hint rule of 1.36 when it is not known.
fn kubelets(node: &NodeFacts) -> Vec<NodeFacts> {
    let versions = match node.kubelet_version {
        Some(version) => vec![version],
        None => vec![KubeletVersion::new(1, 35), KubeletVersion::new(1, 36)],
    };
    versions
        .into_iter()
        .map(|version| NodeFacts {
            kubelet_version: Some(version),
            ..node.clone()
        })
        .collect()
}

fn check(node: &NodeFacts, pod: &PodDemand, tally: &Tally) -> Result<(), TestCaseError> {
    let Ok(answer) = admit(node, pod) else {
        tally.invalid.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    };
    if let Verdict::Unknown(_) = answer.verdict {
        tally.unknown.fetch_add(1, Ordering::Relaxed);
        *tally
            .outcomes
            .lock()
            .unwrap()
            .entry(kind(&answer.verdict))
            .or_default() += 1;
        return Ok(());
    }
    // The node's size is the scheduler's check, which the brute force (the
    // kubelet's managers) does not run: the refusal is checked on its own
    // numbers, and the managers are compared without it.
    let answer = match answer.verdict {
        Verdict::Refuse(gpu_topology::kubelet::Refusal::NodeTooSmall {
            requested,
            capacity,
            reserved,
            ..
        }) => {
            let slack = if reserved > 0 { 999 } else { 0 };
            prop_assert!(requested > capacity - reserved + slack);
            tally.node_size.fetch_add(1, Ordering::Relaxed);
            let managers = admit_by_the_managers(node, pod).expect("valid above");
            if let Verdict::Unknown(_) = managers.verdict {
                tally.unknown.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            managers
        }
        _ => answer,
    };
    // A hint search the model calls slow outruns the brute force's cap.
    if let Verdict::Refuse(Refusal::HintSearchTooSlow { .. }) = answer.verdict {
        for node in kubelets(node) {
            for variant in VARIANTS {
                prop_assert!(
                    brute_admit(&node, pod, variant, PERMUTATION_CAP).is_err(),
                    "the model finds the search slow, the brute force finishes it"
                );
            }
        }
        tally.slow.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    // A definite answer with the version unknown holds for both versions.
    for (node, variant) in kubelets(node)
        .into_iter()
        .flat_map(|node| VARIANTS.map(|variant| (node.clone(), variant)))
    {
        let node = &node;
        let Ok(outcome) = brute_admit(node, pod, variant, PERMUTATION_CAP) else {
            tally.too_large.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        match (&answer.verdict, &outcome) {
            // Behind an unknown the kubelet refuses too, perhaps first for
            // another reason.
            (Verdict::Refuse(_), Outcome::Refuse(_)) if answer.behind.is_some() => {}
            (Verdict::Refuse(model), Outcome::Refuse(kubelet)) => {
                prop_assert_eq!(model, kubelet, "variant {:?}", variant);
            }
            (
                Verdict::Admit { aligned },
                Outcome::Admit {
                    aligned: kubelet,
                    remaining,
                },
            ) => {
                prop_assert_eq!(aligned, kubelet, "aligned, variant {:?}", variant);
                let model = &answer.remaining;
                if let (Some(m), Some(k)) = (&model.gpus, &remaining.gpus) {
                    prop_assert_eq!(m, k, "GPUs left, variant {:?}", variant);
                }
                if let (Some(m), Some(k)) = (&model.cpus, &remaining.cpus) {
                    prop_assert_eq!(m, k, "CPUs left, variant {:?}", variant);
                }
                if let (Some(m), Some(k)) = (&model.memory, &remaining.memory) {
                    prop_assert_eq!(m, k, "memory left, variant {:?}", variant);
                }
            }
            (model, kubelet) => {
                return Err(TestCaseError::fail(format!(
                    "model {model:?} but kubelet {kubelet:?} (variant {variant:?})"
                )));
            }
        }
    }
    tally.compared.fetch_add(1, Ordering::Relaxed);
    let numas = node.numa_nodes.as_deref().unwrap_or_default();
    let started = !matches!(
        answer.verdict,
        Verdict::Refuse(Refusal::KubeletNotStarted(_))
    );
    if numas.len() > 8 && started {
        tally.above_8.fetch_add(1, Ordering::Relaxed);
    }
    if numas.iter().any(|n| n.cpus == Some(0)) {
        tally.cpu_less.fetch_add(1, Ordering::Relaxed);
    }
    *tally
        .outcomes
        .lock()
        .unwrap()
        .entry(kind(&answer.verdict))
        .or_default() += 1;
    Ok(())
}

#[test]
fn model_agrees_with_the_brute_force_kubelet() {
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config::default());
    let result = runner.run(&(node(), pod()), |(node, pod)| check(&node, &pod, &tally));
    let compared = tally.compared.load(Ordering::Relaxed);
    let unknown = tally.unknown.load(Ordering::Relaxed);
    let too_large = tally.too_large.load(Ordering::Relaxed);
    let invalid = tally.invalid.load(Ordering::Relaxed);
    let node_size = tally.node_size.load(Ordering::Relaxed);
    let slow = tally.slow.load(Ordering::Relaxed);
    eprintln!(
        "compared above 8 NUMA nodes (kubelet started) {}, with CPU-less NUMA nodes {}",
        tally.above_8.load(Ordering::Relaxed),
        tally.cpu_less.load(Ordering::Relaxed)
    );
    eprintln!("compared {compared}, model unknown {unknown}, brute force too large {too_large}, invalid {invalid}, refused for the node's size {node_size}, hint search too slow (brute force too large too) {slow}");
    for (outcome, n) in tally.outcomes.lock().unwrap().iter() {
        eprintln!("  {n:5} {outcome}");
    }
    if let Err(e) = result {
        panic!("{e}");
    }
    let total = compared + unknown + too_large + invalid;
    assert!(
        compared * 2 >= total,
        "too few cases compared: {compared} of {total}"
    );
}
