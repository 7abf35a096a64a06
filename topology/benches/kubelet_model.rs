//! The kubelet model's cost per decision (`kubelet::admit`, which the
//! policy runs for every candidate node shape on every pod creation): a
//! 2-socket HGX-like node (the common path) against a GB200 compute tray
//! of 34 NUMA nodes on kubelet 1.36, where the model merges on the NUMA
//! nodes that matter (nodes 0 and 1) after counting the kubelet's work on
//! all 34; and the same tray before 1.36, refused as a hint search too slow
//! from the counts alone.
//!
//! `cargo bench -p gpu-topology --bench kubelet_model`.

use criterion::{criterion_group, criterion_main, Criterion};
use gpu_topology::kubelet::{
    admit, ContainerDemand, CpuManagerConfig, HugePages, KubeletVersion, MemoryManagerPolicy,
    NodeFacts, NumaNodeFacts, PodDemand, TopologyManagerConfig,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use std::hint::black_box;

const GIB: u64 = 1 << 30;

/// One NUMA node of `threads`-thread cores, `reserved` CPUs on whole cores.
fn numa(
    gpus: u32,
    cpus: u32,
    reserved: u32,
    threads: u32,
    socket: Option<u32>,
    memory_gib: u64,
) -> NumaNodeFacts {
    NumaNodeFacts {
        gpus: Some(gpus),
        cpus: Some(cpus),
        reserved_cpus: Some(reserved),
        reserved_cores: Some(reserved.div_ceil(threads)),
        socket,
        memory_mib: Some(memory_gib * 1024),
        reserved_memory_mib: Some(0),
        hugepages_2mi: Some(HugePages::default()),
        hugepages_1gi: Some(HugePages::default()),
        distances: None,
    }
}

fn with_distances(mut numas: Vec<NumaNodeFacts>, remote: u32) -> Vec<NumaNodeFacts> {
    let n = numas.len();
    for (i, node) in numas.iter_mut().enumerate() {
        node.distances = Some((0..n).map(|j| if i == j { 10 } else { remote }).collect());
    }
    numas
}

fn node(
    numas: Vec<NumaNodeFacts>,
    threads: u32,
    max_allowable: u32,
    version: (u32, u32),
) -> NodeFacts {
    NodeFacts {
        gpus: None,
        gpus_per_numa_max: None,
        numa_nodes: Some(numas),
        threads_per_core: Some(threads),
        topology_manager: TopologyManagerConfig {
            policy: Some(TopologyManagerPolicy::BestEffort),
            scope: Some(TopologyManagerScope::Container),
            prefer_closest_numa_nodes: Some(true),
            max_allowable_numa_nodes: Some(max_allowable),
        },
        cpu_manager: CpuManagerConfig {
            policy: Some(CpuManagerPolicy::Static),
            full_pcpus_only: Some(false),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
        },
        memory_manager: Some(MemoryManagerPolicy::None),
        devices: Default::default(),
        machine_numa_nodes: None,
        kubelet_version: Some(KubeletVersion::new(version.0, version.1)),
        // As the labels publish memory.
        memory_rounding_mib: u64::from(gpu_topology::NUMA_MEMORY_GRANULARITY_MIB),
    }
}

/// 2 NUMA nodes of 4 GPUs and 56 CPUs (SMT-2).
fn two_socket() -> NodeFacts {
    let numas = vec![
        numa(4, 56, 2, 2, Some(0), 512),
        numa(4, 56, 0, 2, Some(1), 512),
    ];
    node(with_distances(numas, 21), 2, 8, (1, 36))
}

/// Nodes 0 and 1: Grace, 72 CPUs and 2 GPUs each; 32 memory-only nodes.
fn gb200(version: (u32, u32)) -> NodeFacts {
    let mut numas = vec![
        numa(2, 72, 2, 1, Some(0), 480),
        numa(2, 72, 0, 1, Some(1), 480),
    ];
    numas.extend((0..32).map(|_| numa(0, 0, 0, 1, None, 6)));
    node(with_distances(numas, 40), 1, 34, version)
}

fn pod(gpus: u32, cpus: u64) -> PodDemand {
    PodDemand {
        containers: vec![ContainerDemand {
            gpus: Some(gpus),
            cpu_millis: cpus * 1000,
            memory_bytes: 64 * GIB,
            ..ContainerDemand::default()
        }],
        guaranteed: true,
        pod_level_resources: false,
        devices: Vec::new(),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("kubelet-admit");
    let cases = [
        ("2-socket", two_socket(), pod(4, 32)),
        ("gb200-34-numa-1.36", gb200((1, 36)), pod(2, 8)),
        ("gb200-34-numa-1.35-too-slow", gb200((1, 35)), pod(2, 8)),
    ];
    for (name, node, pod) in &cases {
        // Printed once so the run shows what it timed; an input error
        // would time nothing of the model.
        let answer = admit(node, pod).map(|a| a.verdict);
        eprintln!("{name}: {answer:?}");
        assert!(answer.is_ok(), "{name}: {answer:?}");
        group.bench_function(*name, |b| b.iter(|| admit(black_box(node), black_box(pod))));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
