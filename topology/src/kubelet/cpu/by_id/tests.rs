use super::*;
use rstest::rstest;

/// A machine of `sockets` sockets, each one NUMA node per `numa_per_socket`,
/// each NUMA node `cores` cores of `threads` threads, numbered as Linux
/// numbers x86 CPUs: first thread of every core, then the second ones.
fn placements(
    sockets: u32,
    numa_per_socket: u32,
    cores: u32,
    threads: u32,
) -> BTreeMap<u32, CpuPlacement> {
    let numas = sockets * numa_per_socket;
    let per_thread = numas * cores;
    let mut cpus = BTreeMap::new();
    for numa in 0..numas {
        for core in 0..cores {
            for thread in 0..threads {
                cpus.insert(
                    thread * per_thread + numa * cores + core,
                    CpuPlacement {
                        numa,
                        socket: u64::from(numa / numa_per_socket),
                        core: numa * cores + core,
                    },
                );
            }
        }
    }
    cpus
}

fn topology(sockets: u32, numa_per_socket: u32, cores: u32, threads: u32) -> CpuTopology {
    CpuTopology::new(placements(sockets, numa_per_socket, cores, threads))
}

fn per_numa(topology: &CpuTopology, cpus: &CpuSet) -> Vec<usize> {
    let numas: Vec<u32> = cpus
        .iter()
        .filter_map(|&cpu| topology.placement(cpu))
        .map(|place| place.numa)
        .collect();
    (0..topology.num_numa_nodes() as u32)
        .map(|n| numas.iter().filter(|&&m| m == n).count())
        .collect()
}

/// The example of policy_static.go: "Given a system with 8 CPUs
/// available and HT enabled, if numReservedCPUs=2, then reserved={0,4}".
#[test]
fn two_reserved_cpus_are_the_first_core() {
    let topology = topology(1, 1, 4, 2);
    assert_eq!(topology.cpus_per_core(), 2);
    assert_eq!(
        take_packed(&topology, &topology.cpus(), 2),
        Ok(CpuSet::from([0, 4]))
    );
}

/// Two sockets of 6 cores with 2 threads (socket 0: CPUs 0-5 and their
/// siblings 12-17), as `takeByTopologyNUMAPacked` takes from it: a core
/// before its neighbour's thread, a whole socket before any core.
#[rstest]
#[case::one_cpu(1, vec![0])]
#[case::odd_count_fills_a_core_then_its_neighbour(3, vec![0, 1, 12])]
#[case::a_whole_socket(12, (0..6).chain(12..18).collect())]
#[case::a_socket_and_a_core(14, (0..7).chain(12..19).collect())]
fn packed_takes_whole_units_first(#[case] count: usize, #[case] expected: Vec<u32>) {
    let topology = topology(2, 1, 6, 2);
    let taken = take_packed(&topology, &topology.cpus(), count).unwrap();
    assert_eq!(taken.into_iter().collect::<Vec<_>>(), expected);
}

#[rstest]
#[case::small_reservation_on_the_first_node(1, 2, vec![2, 0, 0, 0])]
#[case::odd_reservation_stays_on_one_node(1, 3, vec![3, 0, 0, 0])]
#[case::more_than_a_node(1, 10, vec![8, 2, 0, 0])]
#[case::nps2_two_sockets(2, 3, vec![3, 0, 0, 0])]
fn packed_reservations_per_numa_node(
    #[case] sockets: u32,
    #[case] count: usize,
    #[case] expected: Vec<usize>,
) {
    let numa_per_socket = 4 / sockets;
    let topology = topology(sockets, numa_per_socket, 4, 2);
    let taken = take_packed(&topology, &topology.cpus(), count).unwrap();
    assert_eq!(per_numa(&topology, &taken), expected);
}

#[rstest]
#[case::fits_one_node(2, 1, vec![2, 0])]
#[case::spread_over_two_nodes(12, 1, vec![6, 6])]
#[case::odd_count_in_pairs_falls_back_to_packing(3, 2, vec![3, 0])]
#[case::spread_in_whole_cores(12, 2, vec![6, 6])]
fn distributed_reservations_per_numa_node(
    #[case] count: usize,
    #[case] group: usize,
    #[case] expected: Vec<usize>,
) {
    let topology = topology(2, 1, 4, 2);
    let taken = take_distributed(&topology, &topology.cpus(), count, group).unwrap();
    assert_eq!(taken.len(), count);
    assert_eq!(per_numa(&topology, &taken), expected);
}

/// On NUMA nodes of unequal size, packing fills the smallest node first
/// (fewest free CPUs) while distributing takes from the largest (it
/// leaves the free CPUs most even).
#[test]
fn unequal_nodes_packed_and_distributed_differ() {
    let mut cpus = placements(2, 1, 4, 2);
    // Without CPU 3 and its sibling 11 (core 3 of node 0), offline.
    cpus.remove(&3);
    cpus.remove(&11);
    let topology = CpuTopology::new(cpus);
    let packed = take_packed(&topology, &topology.cpus(), 2).unwrap();
    assert_eq!(per_numa(&topology, &packed), vec![2, 0]);
    let distributed = take_distributed(&topology, &topology.cpus(), 2, 1).unwrap();
    assert_eq!(per_numa(&topology, &distributed), vec![0, 2]);
}

#[test]
fn distributing_over_more_nodes_than_reproduced_is_an_error() {
    let topology = topology(1, 17, 1, 1);
    let error = take_distributed(&topology, &topology.cpus(), 2, 1).unwrap_err();
    assert!(error.contains("17 NUMA nodes"), "{error}");
    assert_eq!(
        take_packed(&topology, &topology.cpus(), 2).map(|cpus| cpus.len()),
        Ok(2)
    );
}

#[test]
fn too_many_cpus_are_an_error() {
    let topology = topology(1, 1, 2, 2);
    assert_eq!(
        take_packed(&topology, &topology.cpus(), 5),
        Err("not enough CPUs: 5 requested, 4 available".to_owned())
    );
    assert!(take_distributed(&topology, &topology.cpus(), 6, 2).is_err());
}

#[rstest]
#[case::one_node(topology(1, 1, 4, 2), 4, 8, 1)]
#[case::two_sockets(topology(2, 1, 4, 2), 8, 16, 2)]
#[case::nps2(topology(2, 2, 2, 1), 8, 8, 2)]
fn counts_and_averages(
    #[case] topology: CpuTopology,
    #[case] cores: usize,
    #[case] cpus: usize,
    #[case] sockets: usize,
) {
    assert_eq!(topology.num_cores(), cores);
    assert_eq!(topology.cpus().len(), cpus);
    assert_eq!(topology.num_sockets(), sockets);
    assert_eq!(topology.cpus_per_core(), cpus / cores);
    assert_eq!(topology.cpus_per_socket(), cpus / sockets);
}

#[test]
fn sockets_and_cores_of_a_node() {
    let topology = topology(2, 2, 2, 2);
    assert_eq!(topology.sockets_of(2), vec![1]);
    assert!(topology.sockets_of(9).is_empty());
    // Node 0: cores 0 and 1 (CPUs 0, 8 and 1, 9); CPU 2 is node 1's.
    assert_eq!(topology.cores_holding(0, &CpuSet::from([0, 8, 9, 2])), 2);
}
