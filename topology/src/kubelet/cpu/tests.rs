use super::distribute::{combinations, standard_deviation};
use super::*;
use proptest::prelude::*;
use rstest::rstest;

fn facts(cpus: u32, reserved: u32, reserved_cores: u32, socket: u32) -> NumaNodeFacts {
    NumaNodeFacts {
        cpus: Some(cpus),
        reserved_cpus: Some(reserved),
        reserved_cores: Some(reserved_cores),
        socket: Some(socket),
        ..NumaNodeFacts::default()
    }
}

#[rstest]
#[case::integer_request(true, 4000, 4)]
#[case::fractional_request(true, 1500, 0)]
#[case::burstable_pod(false, 4000, 0)]
fn exclusive_cpus_need_guaranteed_integer_requests(
    #[case] guaranteed: bool,
    #[case] millis: u64,
    #[case] expected: u32,
) {
    assert_eq!(guaranteed_cpus(guaranteed, millis), expected);
}

#[test]
fn packed_fills_the_node_with_fewer_free_cpus_first() {
    // 2 NUMA nodes x 8 CPUs, SMT-2, 2 CPUs reserved on node 0: 10 CPUs
    // across both take all of the fuller node 1? No: node 1 is free and
    // 10 >= 8, so it is taken whole, then 2 more from node 0.
    let numas = [facts(8, 2, 1, 0), facts(8, 0, 0, 1)];
    let mut state = CpuState::new(&numas, 2, CpuOptions::default())
        .unwrap()
        .unwrap();
    state
        .allocate_container(0, ContainerKind::App, 10, Some(NumaMask::from_bits(0b11)))
        .unwrap();
    assert_eq!(state.available_in(NumaMask::single(0)), 4);
    assert_eq!(state.available_in(NumaMask::single(1)), 0);
}

#[test]
fn full_pcpus_only_refuses_odd_requests() {
    let numas = [facts(8, 2, 1, 0)];
    let options = CpuOptions {
        full_pcpus_only: true,
        ..CpuOptions::default()
    };
    let mut state = CpuState::new(&numas, 2, options).unwrap().unwrap();
    let err = state
        .allocate_container(0, ContainerKind::App, 3, None)
        .unwrap_err();
    assert_eq!(
        err,
        CpuAllocError::Smt {
            requested: 3,
            cpus_per_core: 2,
            available_physical_cpus: None
        }
    );
}

#[test]
fn half_reserved_core_sibling_is_not_physical() {
    // 1 reserved CPU on 1 core: its sibling is free but not a whole core.
    let numas = [facts(8, 1, 1, 0)];
    let options = CpuOptions {
        full_pcpus_only: true,
        ..CpuOptions::default()
    };
    let mut state = CpuState::new(&numas, 2, options).unwrap().unwrap();
    let err = state
        .allocate_container(0, ContainerKind::App, 8, None)
        .unwrap_err();
    assert_eq!(
        err,
        CpuAllocError::Smt {
            requested: 8,
            cpus_per_core: 2,
            available_physical_cpus: Some(6)
        }
    );
}

#[rstest]
#[case::pairs_of_four(4, 2, vec![
    vec![0, 1],
    vec![0, 2],
    vec![0, 3],
    vec![1, 2],
    vec![1, 3],
    vec![2, 3]
])]
#[case::pairs_of_three(3, 2, vec![vec![0, 1], vec![0, 2], vec![1, 2]])]
#[case::more_than_there_are(1, 2, vec![])]
#[case::none(3, 0, vec![])]
fn combinations_follow_iterate_combinations(
    #[case] n: usize,
    #[case] k: usize,
    #[case] expected: Vec<Vec<usize>>,
) {
    assert_eq!(combinations(n, k), expected);
}

#[rstest]
#[case(&[1, 2], 0.5)]
#[case(&[0, 0, 3], 1.414)]
#[case(&[0, 0], 0.0)]
#[case(&[8, 6], 1.0)]
#[case(&[1, 2, 4], 1.247)]
fn standard_deviation_rounds_like_the_kubelet(#[case] values: &[u32], #[case] expected: f64) {
    assert_eq!(standard_deviation(values), expected);
}

/// A machine of `cores[n]` cores on NUMA node `n`, `threads` threads each,
/// `numa_per_socket` NUMA nodes to a socket, numbered as Linux numbers x86
/// CPUs (first thread of every core, then the second ones): as the labeler
/// sees it (CPU ids) and as the admission model does (counts).
fn both_views(
    cores: &[u32],
    numa_per_socket: u32,
    threads: u32,
) -> (by_id::CpuTopology, Vec<NumaNodeFacts>) {
    let total: u32 = cores.iter().sum();
    let mut cpus = std::collections::BTreeMap::new();
    let mut numas = Vec::new();
    let mut first = 0;
    for (numa, &n) in (0u32..).zip(cores) {
        let socket = numa / numa_per_socket;
        for core in first..first + n {
            for thread in 0..threads {
                cpus.insert(
                    thread * total + core,
                    by_id::CpuPlacement {
                        numa,
                        socket: u64::from(socket),
                        core,
                    },
                );
            }
        }
        first += n;
        numas.push(facts(n * threads, 0, 0, socket));
    }
    (by_id::CpuTopology::new(cpus), numas)
}

proptest! {
    /// On an empty machine, the count model's `takeByTopology` (packed, or
    /// distributed across NUMA nodes, in whole cores under
    /// `full-pcpus-only`) and the walk over CPU ids take as many CPUs from
    /// each NUMA node, wherever the count model knows the split.
    #[test]
    fn counts_agree_with_the_walk_over_ids(
        (cores, numa_per_socket, threads, wanted) in (1usize..=4, 1u32..=2, 1u32..=2)
            .prop_flat_map(|(nodes, numa_per_socket, threads)| (
                proptest::collection::vec(1u32..=4, nodes),
                Just(numa_per_socket),
                Just(threads),
                0u32..32,
            )),
        distribute in any::<bool>(),
        full_pcpus_only in any::<bool>(),
    ) {
        let (topology, numas) = both_views(&cores, numa_per_socket, threads);
        let total = topology.cpus().len() as u32;
        let count = 1 + wanted % total;
        let options = CpuOptions {
            full_pcpus_only,
            distribute_cpus_across_numa: distribute,
            ..CpuOptions::default()
        };
        let mut state = CpuState::new(&numas, threads, options).unwrap().unwrap();
        let known = state
            .allocate_container(0, ContainerKind::App, count, None)
            .ok()
            .and_then(|()| state.free_per_numa());
        prop_assume!(known.is_some());
        let counted: Vec<u32> = numas
            .iter()
            .zip(known.unwrap_or_default())
            .map(|(facts, free)| facts.cpus.unwrap_or(0) - free)
            .collect();
        let all = topology.cpus();
        let taken = if distribute {
            let group = if full_pcpus_only { threads } else { 1 };
            by_id::take_distributed(&topology, &all, count as usize, group as usize)
        } else {
            by_id::take_packed(&topology, &all, count as usize)
        }
        .unwrap();
        let by_ids: Vec<u32> = (0..numas.len() as u32)
            .map(|numa| {
                taken
                    .iter()
                    .filter(|&&cpu| topology.placement(cpu).is_some_and(|p| p.numa == numa))
                    .count() as u32
            })
            .collect();
        prop_assert_eq!(counted, by_ids);
    }
}
