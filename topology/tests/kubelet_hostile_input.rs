//! The kubelet model on arbitrary facts and demands, extreme values
//! included: it answers (or names the input error) and never panics.
//! `PROPTEST_CASES` sets the number of cases (default 256).

use gpu_topology::kubelet::facts::MAX_UNITS_PER_NUMA;
use gpu_topology::kubelet::{
    admit, ContainerDemand, ContainerKind, CpuManagerConfig, HugePages, KubeletVersion,
    MemoryManagerPolicy, NodeFacts, NumaNodeFacts, PodDemand, TopologyManagerConfig, Verdict,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use proptest::option;
use proptest::prelude::*;
use rstest::rstest;
use std::collections::BTreeMap;

/// Mostly known: unknown facts end the evaluation early.
fn known<S: Strategy>(s: S) -> impl Strategy<Value = Option<S::Value>> {
    option::weighted(0.9, s)
}

/// Mostly small values, sometimes the extremes.
fn count() -> impl Strategy<Value = u32> {
    prop_oneof![6 => 0u32..=16, 1 => Just(u32::MAX), 1 => any::<u32>()]
}

fn bytes() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..=(64 << 30), 1 => Just(u64::MAX), 1 => any::<u64>()]
}

fn pages() -> impl Strategy<Value = HugePages> {
    (bytes(), bytes()).prop_map(|(pages, reserved_pages)| HugePages {
        pages: pages % 64,
        reserved_pages: reserved_pages % 64,
    })
}

fn numa() -> impl Strategy<Value = NumaNodeFacts> {
    (
        (
            known(count()),
            known(count()),
            known(count()),
            known(count()),
        ),
        (known(count()), known(bytes()), known(bytes())),
        (known(pages()), known(pages())),
        known(proptest::collection::vec(count(), 0..=18)),
    )
        .prop_map(
            |(
                (gpus, cpus, reserved_cpus, reserved_cores),
                (socket, memory_mib, reserved_memory_mib),
                (hp2, hp1),
                distances,
            )| {
                NumaNodeFacts {
                    gpus,
                    cpus,
                    reserved_cpus,
                    reserved_cores,
                    socket,
                    memory_mib: memory_mib.map(|m| m >> 10),
                    reserved_memory_mib: reserved_memory_mib.map(|m| m >> 20),
                    hugepages_2mi: hp2,
                    hugepages_1gi: hp1,
                    distances,
                }
            },
        )
}

fn node() -> impl Strategy<Value = NodeFacts> {
    let policy = prop_oneof![
        Just(TopologyManagerPolicy::None),
        Just(TopologyManagerPolicy::BestEffort),
        Just(TopologyManagerPolicy::Restricted),
        Just(TopologyManagerPolicy::SingleNumaNode)
    ];
    let scope = prop_oneof![
        Just(TopologyManagerScope::Pod),
        Just(TopologyManagerScope::Container)
    ];
    let cpu = prop_oneof![Just(CpuManagerPolicy::None), Just(CpuManagerPolicy::Static)];
    let memory = prop_oneof![
        Just(MemoryManagerPolicy::None),
        Just(MemoryManagerPolicy::Static)
    ];
    let numas = prop_oneof![8 => 0usize..=4, 2 => 5usize..=9, 1 => 15usize..=18];
    (
        known(numas.prop_flat_map(|n| proptest::collection::vec(numa(), n))),
        known(prop_oneof![
            Just(0u32),
            Just(1),
            Just(2),
            Just(4),
            any::<u32>()
        ]),
        (
            known(policy),
            known(scope),
            known(any::<bool>()),
            known(count()),
        ),
        (
            known(cpu),
            known(any::<bool>()),
            known(any::<bool>()),
            known(any::<bool>()),
        ),
        known(memory),
        (
            known(any::<u32>()),
            known(any::<u32>()),
            known(any::<u32>()),
            known(
                (any::<u32>(), any::<u32>())
                    .prop_map(|(major, minor)| KubeletVersion::new(major, minor)),
            ),
        ),
        // Device lists of any length and counts, some names the pod asks for.
        proptest::collection::btree_map(
            prop_oneof![Just("rdma/ib".to_owned()), Just("x/y".to_owned())],
            proptest::collection::vec(count(), 0..=20),
            0..=2,
        ),
    )
        .prop_map(
            |(
                numa_nodes,
                threads_per_core,
                (policy, scope, closest, max),
                (cpu, full, distribute, align),
                memory,
                (gpus, gpus_per_numa_max, machine_numa_nodes, kubelet_version),
                devices,
            )| NodeFacts {
                gpus,
                gpus_per_numa_max,
                numa_nodes,
                threads_per_core,
                topology_manager: TopologyManagerConfig {
                    policy,
                    scope,
                    prefer_closest_numa_nodes: closest,
                    max_allowable_numa_nodes: max,
                },
                cpu_manager: CpuManagerConfig {
                    policy: cpu,
                    full_pcpus_only: full,
                    distribute_cpus_across_numa: distribute,
                    align_by_socket: align,
                },
                memory_manager: memory,
                devices,
                machine_numa_nodes,
                kubelet_version,
                // As the labels publish memory: the rounded step's second
                // answer runs on hostile facts too.
                memory_rounding_mib: u64::from(gpu_topology::NUMA_MEMORY_GRANULARITY_MIB),
            },
        )
}

fn pod() -> impl Strategy<Value = PodDemand> {
    let kind = prop_oneof![
        Just(ContainerKind::Init),
        Just(ContainerKind::Sidecar),
        Just(ContainerKind::App)
    ];
    // Device limits of any length: more or fewer entries than the pod's
    // device resources.
    let devices = proptest::collection::vec(known(count()), 0..=3);
    let container = (
        kind,
        known(count()),
        bytes(),
        bytes(),
        (bytes(), bytes()),
        devices,
    )
        .prop_map(
            |(
                kind,
                gpus,
                cpu_millis,
                memory_bytes,
                (hugepages_2mi_bytes, hugepages_1gi_bytes),
                devices,
            )| {
                ContainerDemand {
                    kind,
                    gpus,
                    cpu_millis,
                    memory_bytes,
                    hugepages_2mi_bytes,
                    hugepages_1gi_bytes,
                    devices,
                }
            },
        );
    let resources = proptest::collection::vec(
        prop_oneof![Just("rdma/ib".to_owned()), Just("z/w".to_owned())],
        0..=2,
    );
    (
        proptest::collection::vec(container, 0..=5),
        any::<bool>(),
        any::<bool>(),
        resources,
    )
        .prop_map(
            |(containers, guaranteed, pod_level_resources, devices)| PodDemand {
                containers,
                guaranteed,
                pod_level_resources,
                devices,
            },
        )
}

proptest! {
    #[test]
    fn admit_never_panics(node in node(), pod in pod()) {
        if let Ok(answer) = admit(&node, &pod) {
            // A definite admission names no unknown; the aligned flag agrees with the units.
            if let Verdict::Admit { aligned: true } = answer.verdict {
                prop_assert!(answer.units.iter().all(|u| u.aligned));
            }
        }
    }
}

const TOO_MANY: u32 = MAX_UNITS_PER_NUMA + 1;

/// A count no machine has is refused naming the NUMA node and what it
/// counts, a device resource by its name.
#[rstest]
#[case::cpus(NumaNodeFacts { cpus: Some(TOO_MANY), ..NumaNodeFacts::default() }, &[], "NUMA node 1 reports more CPUs than any machine has")]
#[case::gpus(NumaNodeFacts { gpus: Some(TOO_MANY), ..NumaNodeFacts::default() }, &[], "NUMA node 1 reports more GPUs than any machine has")]
#[case::devices(
    NumaNodeFacts::default(),
    &[("rdma/rdma_shared_device_a", vec![0, TOO_MANY])],
    "NUMA node 1 reports more rdma/rdma_shared_device_a devices than any machine has"
)]
fn a_count_no_machine_has_is_named(
    #[case] second_numa: NumaNodeFacts,
    #[case] devices: &[(&str, Vec<u32>)],
    #[case] expected: &str,
) {
    let node = NodeFacts {
        numa_nodes: Some(vec![NumaNodeFacts::default(), second_numa]),
        devices: devices
            .iter()
            .map(|(resource, counts)| (resource.to_string(), counts.clone()))
            .collect::<BTreeMap<_, _>>(),
        ..NodeFacts::default()
    };
    let pod = PodDemand {
        containers: vec![ContainerDemand::default()],
        ..PodDemand::default()
    };
    let error = admit(&node, &pod).unwrap_err();
    assert_eq!(error.to_string(), expected);
}
