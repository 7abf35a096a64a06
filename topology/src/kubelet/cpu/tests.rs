use super::distribute::{combinations, standard_deviation};
use super::*;
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

#[test]
fn combinations_follow_iterate_combinations() {
    assert_eq!(
        combinations(4, 2),
        vec![
            vec![0, 1],
            vec![0, 2],
            vec![0, 3],
            vec![1, 2],
            vec![1, 3],
            vec![2, 3]
        ]
    );
}

#[test]
fn standard_deviation_rounds_like_the_kubelet() {
    assert_eq!(standard_deviation(&[1, 2]), 0.5);
    assert_eq!(standard_deviation(&[0, 0, 3]), 1.414);
}
