//! Builders for the kubelet model's inputs, shared by the integration tests.
#![allow(dead_code)]

use gpu_topology::kubelet::{
    ContainerDemand, ContainerKind, CpuManagerConfig, HugePages, MemoryManagerPolicy, NodeFacts,
    NumaNodeFacts, PodDemand, TopologyManagerConfig,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};

pub const GIB: u64 = 1 << 30;

/// One NUMA node with every fact known; no huge pages, no distances.
pub fn numa(
    gpus: u32,
    cpus: u32,
    reserved: u32,
    reserved_cores: u32,
    socket: u32,
    memory_gib: u64,
) -> NumaNodeFacts {
    NumaNodeFacts {
        gpus: Some(gpus),
        cpus: Some(cpus),
        reserved_cpus: Some(reserved),
        reserved_cores: Some(reserved_cores),
        socket: Some(socket),
        memory_mib: Some(memory_gib * 1024),
        reserved_memory_mib: Some(if memory_gib > 0 { 1024 } else { 0 }),
        hugepages_2mi: Some(HugePages::default()),
        hugepages_1gi: Some(HugePages::default()),
        distances: None,
    }
}

/// The kubelet settings of a node.
#[derive(Clone, Copy)]
pub struct Kubelet {
    pub topology: TopologyManagerPolicy,
    pub scope: TopologyManagerScope,
    pub cpu: CpuManagerPolicy,
    pub full_pcpus_only: bool,
    pub memory: MemoryManagerPolicy,
}

impl Kubelet {
    pub fn new(topology: TopologyManagerPolicy, scope: TopologyManagerScope) -> Self {
        Kubelet {
            topology,
            scope,
            cpu: CpuManagerPolicy::Static,
            full_pcpus_only: false,
            memory: MemoryManagerPolicy::None,
        }
    }
}

pub fn node(numas: Vec<NumaNodeFacts>, threads_per_core: u32, kubelet: Kubelet) -> NodeFacts {
    NodeFacts {
        gpus: None,
        gpus_per_numa_max: None,
        numa_nodes: Some(numas),
        threads_per_core: Some(threads_per_core),
        topology_manager: TopologyManagerConfig {
            policy: Some(kubelet.topology),
            scope: Some(kubelet.scope),
            prefer_closest_numa_nodes: Some(false),
            max_allowable_numa_nodes: Some(8),
        },
        cpu_manager: CpuManagerConfig {
            policy: Some(kubelet.cpu),
            full_pcpus_only: Some(kubelet.full_pcpus_only),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
        },
        memory_manager: Some(kubelet.memory),
        devices: Default::default(),
        machine_numa_nodes: None,
        kubelet_version: None,
        // Exact to the MiB: the kubelet's own test cases give whole MiB.
        memory_rounding_mib: 1,
    }
}

/// An HGX-like node: 2 NUMA nodes of 4 GPUs and 56 CPUs (SMT-2), 2 CPUs
/// reserved on one core of node 0, 512 GiB per node.
pub fn hgx(kubelet: Kubelet) -> NodeFacts {
    node(
        vec![numa(4, 56, 2, 1, 0, 512), numa(4, 56, 0, 0, 1, 512)],
        2,
        kubelet,
    )
}

pub fn container(
    kind: ContainerKind,
    gpus: Option<u32>,
    cpu_millis: u64,
    memory_gib: u64,
) -> ContainerDemand {
    ContainerDemand {
        kind,
        gpus,
        cpu_millis,
        memory_bytes: memory_gib * GIB,
        ..ContainerDemand::default()
    }
}

pub fn app(gpus: u32, cpus: u64, memory_gib: u64) -> ContainerDemand {
    container(ContainerKind::App, Some(gpus), cpus * 1000, memory_gib)
}

pub fn guaranteed(containers: Vec<ContainerDemand>) -> PodDemand {
    PodDemand {
        containers,
        guaranteed: true,
        pod_level_resources: false,
        devices: Vec::new(),
    }
}
