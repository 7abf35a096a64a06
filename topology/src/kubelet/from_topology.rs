//! The model's node facts from a node's labels: how the label contract
//! ([`NodeTopology`]) maps onto [`NodeFacts`], so that the policy asks the
//! model about exactly what the labeler published.
//!
//! Rules:
//! - **NUMA nodes** come from the per-NUMA lists, which range over every
//!   NUMA node of the machine in id order (the nodes the Topology Manager's
//!   masks range over). Their number is the length of the first list known,
//!   in [`NUMA_LISTS`] order; a list of another length (hand-written, or
//!   from labelers of different versions) is taken as unknown, never cut
//!   or padded.
//! - **Memory** is published rounded down to whole GiB
//!   ([`crate::NUMA_MEMORY_GRANULARITY_MIB`]): the facts say so
//!   ([`NodeFacts::memory_rounding_mib`]) and the model answers for the whole
//!   step. `numa-memory-mib` is already net of hugepages and of the
//!   static Memory Manager's `reservedMemory`, and the hugepage counts are
//!   net of their reservations (what `getDefaultMachineState` in
//!   `memorymanager/policy_static.go` makes allocatable). They become the
//!   model's totals with nothing reserved: regular memory is the label plus
//!   the hugepages' MiB, which the model subtracts again, so its allocatable
//!   amounts are the labels'.
//! - **Reserved cores** (`numa-reserved-cores`) are published only with SMT
//!   and the static CPU Manager; the model asks for them only then (with one
//!   thread per core, or no reserved CPU on a NUMA node, it does not).
//! - **Sockets** (`numa-sockets`): a NUMA node without CPUs has none (its
//!   entry is written as `0` and not read: the kubelet's CPU topology, and
//!   the model's socket layout, count only NUMA nodes with CPUs).
//! - **Kubelet options** are taken as published, never defaulted: the
//!   labeler writes every option it knows whenever it reads the kubelet
//!   config, `false` and the default `max-allowable-numa-nodes` 8 included
//!   (`labeler/src/reconcile/facts.rs` `kubelet_facts`), and leaves an
//!   option out only when it could not read the config or does not model an
//!   option set there. An absent option is therefore unknown, and the model
//!   says so where it matters.
//! - **Node counts** (`gpus`, `gpus-per-numa-max`) are passed on as they
//!   are: the model refuses on them where the per-NUMA lists are not known
//!   (a labeler older than the lists), so that the refusals they decide
//!   are not lost.
//! - **Topology Manager scope**: the node's label, else `assumed_scope`
//!   (the policy's `topology.scope` setting).
//! - **NUMA distances** (`numa-distances`) are the SLIT matrix, a row per
//!   NUMA node; a matrix of another size than the lists is unknown, and the
//!   model then answers unknown where a tie under
//!   `prefer-closest-numa-nodes` decides something.
//! - **Machine NUMA nodes** (`machine-numa-nodes`) and the **kubelet
//!   version** (`kubelet-version`) are passed on as published.

use super::facts::{CpuManagerConfig, HugePages, NodeFacts, NumaNodeFacts, TopologyManagerConfig};
use crate::labels::{LabelKey, NodeTopology, TopologyManagerScope};

/// The per-NUMA lists, in the order that decides the NUMA node count.
pub const NUMA_LISTS: [LabelKey; 8] = [
    LabelKey::NumaGpus,
    LabelKey::NumaCpus,
    LabelKey::NumaMemoryMib,
    LabelKey::NumaHugepages2Mi,
    LabelKey::NumaHugepages1Gi,
    LabelKey::NumaReservedCpus,
    LabelKey::NumaReservedCores,
    LabelKey::NumaSockets,
];

/// MiB of one 2Mi and one 1Gi huge page.
const HUGE_PAGE_2MI_MIB: u64 = 2;
const HUGE_PAGE_1GI_MIB: u64 = 1024;

/// What the model knows about a node from its labels (see the module
/// documentation for the rules).
pub fn facts_from_topology(
    topology: &NodeTopology,
    assumed_scope: TopologyManagerScope,
) -> NodeFacts {
    NodeFacts {
        gpus: topology.gpus,
        gpus_per_numa_max: topology.gpus_per_numa_max,
        numa_nodes: numa_nodes(topology),
        threads_per_core: topology.threads_per_core,
        topology_manager: TopologyManagerConfig {
            policy: topology.topology_manager_policy,
            scope: Some(topology.topology_manager_scope.unwrap_or(assumed_scope)),
            prefer_closest_numa_nodes: topology.prefer_closest_numa_nodes,
            max_allowable_numa_nodes: topology.max_allowable_numa_nodes,
        },
        cpu_manager: CpuManagerConfig {
            policy: topology.cpu_manager_policy,
            full_pcpus_only: topology.full_pcpus_only,
            distribute_cpus_across_numa: topology.distribute_cpus_across_numa,
            align_by_socket: topology.align_by_socket,
        },
        memory_manager: topology.memory_manager_policy,
        // A list of another length than the NUMA nodes' stays in: the model
        // reads it as unknown for that resource alone.
        devices: topology.devices.clone(),
        machine_numa_nodes: topology.machine_numa_nodes,
        kubelet_version: topology.kubelet_version,
        memory_rounding_mib: u64::from(crate::labels::NUMA_MEMORY_GRANULARITY_MIB),
    }
}

/// The NUMA nodes the lists describe; `None` when no list is known.
fn numa_nodes(topology: &NodeTopology) -> Option<Vec<NumaNodeFacts>> {
    let count = NUMA_LISTS
        .into_iter()
        .find_map(|key| topology.counts(key))?
        .len();
    // A list of another length is unknown: its entries would describe
    // other NUMA nodes.
    let list = |key| topology.counts(key).filter(|list| list.len() == count);
    let entry = |key, numa: usize| list(key).and_then(|list| list.get(numa).copied());
    let hugepages = |key, numa| {
        entry(key, numa).map(|pages| HugePages {
            pages: u64::from(pages),
            reserved_pages: 0,
        })
    };
    let distances = distances(topology, count);
    let nodes = (0..count)
        .map(|numa| {
            let cpus = entry(LabelKey::NumaCpus, numa);
            let hugepages_2mi = hugepages(LabelKey::NumaHugepages2Mi, numa);
            let hugepages_1gi = hugepages(LabelKey::NumaHugepages1Gi, numa);
            let net_memory = entry(LabelKey::NumaMemoryMib, numa).map(u64::from);
            NumaNodeFacts {
                gpus: entry(LabelKey::NumaGpus, numa),
                cpus,
                reserved_cpus: entry(LabelKey::NumaReservedCpus, numa),
                reserved_cores: entry(LabelKey::NumaReservedCores, numa),
                socket: entry(LabelKey::NumaSockets, numa).filter(|_| cpus != Some(0)),
                memory_mib: net_memory
                    .map(|mib| total_memory_mib(mib, hugepages_2mi, hugepages_1gi)),
                reserved_memory_mib: net_memory.map(|_| 0),
                hugepages_2mi,
                hugepages_1gi,
                distances: distances.and_then(|rows| rows.get(numa).cloned()),
            }
        })
        .collect();
    Some(nodes)
}

/// The SLIT distances, when the published matrix is one of `count` rows of
/// `count` entries (another size describes other NUMA nodes: unknown).
/// Checked once per node, not once per row.
fn distances(topology: &NodeTopology, count: usize) -> Option<&[Vec<u32>]> {
    let rows = topology.numa_distances.as_deref()?;
    (rows.len() == count && rows.iter().all(|row| row.len() == count)).then_some(rows)
}

/// The model's total memory of a NUMA node: the net label plus the
/// hugepages it takes out again (unknown hugepages add nothing: the model
/// then asks for them before it reads the memory).
fn total_memory_mib(net: u64, small: Option<HugePages>, large: Option<HugePages>) -> u64 {
    let pages_mib =
        |pages: Option<HugePages>, size| pages.map_or(0, |p| p.pages.saturating_mul(size));
    net.saturating_add(pages_mib(small, HUGE_PAGE_2MI_MIB))
        .saturating_add(pages_mib(large, HUGE_PAGE_1GI_MIB))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::{admit, ContainerDemand, ContainerKind, PodDemand, Verdict};
    use crate::labels::{CpuManagerPolicy, MemoryManagerPolicy, TopologyManagerPolicy};
    use rstest::rstest;

    const GIB: u64 = 1 << 30;

    /// An HGX node as the labeler publishes it: 2 NUMA nodes of 4 GPUs and
    /// 56 CPUs (SMT-2), 2 CPUs on one core reserved on node 0, 511 GiB net
    /// per node with 4 GiB of 1 GiB pages on node 1.
    fn hgx(policy: TopologyManagerPolicy) -> NodeTopology {
        NodeTopology {
            gpus: Some(8),
            topology_manager_policy: Some(policy),
            topology_manager_scope: Some(TopologyManagerScope::Pod),
            cpu_manager_policy: Some(CpuManagerPolicy::Static),
            numa_gpus: Some(vec![4, 4]),
            numa_cpus: Some(vec![56, 56]),
            numa_reserved_cpus: Some(vec![2, 0]),
            numa_reserved_cores: Some(vec![1, 0]),
            numa_sockets: Some(vec![0, 1]),
            threads_per_core: Some(2),
            numa_memory_mib: Some(vec![523_264, 519_168]),
            numa_hugepages_2mi: Some(vec![0, 0]),
            numa_hugepages_1gi: Some(vec![0, 4]),
            memory_manager_policy: Some(MemoryManagerPolicy::Static),
            prefer_closest_numa_nodes: Some(false),
            max_allowable_numa_nodes: Some(8),
            full_pcpus_only: Some(false),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
            ..NodeTopology::default()
        }
        .with_shape()
    }

    #[test]
    fn every_published_fact_reaches_the_model() {
        let facts = facts_from_topology(
            &hgx(TopologyManagerPolicy::Restricted),
            TopologyManagerScope::Container,
        );
        let numas = facts.numa_nodes.as_deref().unwrap();
        assert_eq!(numas.len(), 2);
        assert_eq!(numas[0].gpus, Some(4));
        assert_eq!(numas[0].cpus, Some(56));
        assert_eq!(numas[0].reserved_cpus, Some(2));
        assert_eq!(numas[0].reserved_cores, Some(1));
        assert_eq!(numas[1].socket, Some(1));
        // Net 519168 MiB plus the 4 GiB of pages the model subtracts again.
        assert_eq!(numas[1].memory_mib, Some(519_168 + 4 * 1024));
        assert_eq!(numas[1].reserved_memory_mib, Some(0));
        assert_eq!(
            numas[1].hugepages_1gi,
            Some(HugePages {
                pages: 4,
                reserved_pages: 0
            })
        );
        assert_eq!(numas[0].distances, None);
        assert_eq!(facts.threads_per_core, Some(2));
        // The node's own scope wins over the assumed one.
        assert_eq!(
            facts.topology_manager.scope,
            Some(TopologyManagerScope::Pod)
        );
        assert_eq!(facts.topology_manager.max_allowable_numa_nodes, Some(8));
        assert_eq!(facts.cpu_manager.full_pcpus_only, Some(false));
        assert_eq!(facts.memory_manager, Some(MemoryManagerPolicy::Static));
    }

    #[test]
    fn the_assumed_scope_stands_in_for_an_unpublished_one() {
        let node = NodeTopology {
            topology_manager_scope: None,
            ..hgx(TopologyManagerPolicy::Restricted)
        };
        let facts = facts_from_topology(&node, TopologyManagerScope::Container);
        assert_eq!(
            facts.topology_manager.scope,
            Some(TopologyManagerScope::Container)
        );
    }

    /// Absent facts stay unknown: options are never defaulted, lists of
    /// another length are unknown, a memory-only node has no socket.
    #[rstest]
    #[case::no_lists(NodeTopology { gpus: Some(8), ..NodeTopology::default() }, None, None)]
    #[case::lists_of_other_lengths(
        NodeTopology { numa_gpus: Some(vec![4, 4]), numa_cpus: Some(vec![112]), ..NodeTopology::default() },
        Some(2), Some(vec![None, None]))]
    #[case::memory_only_node_has_no_socket(
        NodeTopology { numa_gpus: Some(vec![2, 0, 0]), numa_cpus: Some(vec![8, 8, 0]), numa_sockets: Some(vec![0, 1, 0]), ..NodeTopology::default() },
        Some(3), Some(vec![Some(8), Some(8), Some(0)]))]
    fn unknown_facts_stay_unknown(
        #[case] node: NodeTopology,
        #[case] numa_count: Option<usize>,
        #[case] cpus: Option<Vec<Option<u32>>>,
    ) {
        let facts = facts_from_topology(&node, TopologyManagerScope::Pod);
        assert_eq!(facts.numa_nodes.as_ref().map(Vec::len), numa_count);
        assert_eq!(
            facts
                .numa_nodes
                .as_ref()
                .map(|n| n.iter().map(|n| n.cpus).collect::<Vec<_>>()),
            cpus
        );
        if let Some(numas) = &facts.numa_nodes {
            for n in numas.iter().filter(|n| n.cpus == Some(0)) {
                assert_eq!(n.socket, None);
            }
        }
        assert_eq!(facts.cpu_manager.full_pcpus_only, None);
        assert_eq!(facts.topology_manager.max_allowable_numa_nodes, None);
    }

    fn pod(gpus: u32, cpus: u64, memory_gib: u64) -> PodDemand {
        PodDemand {
            containers: vec![ContainerDemand {
                kind: ContainerKind::App,
                gpus: Some(gpus),
                cpu_millis: cpus * 1000,
                memory_bytes: memory_gib * GIB,
                ..ContainerDemand::default()
            }],
            guaranteed: true,
            pod_level_resources: false,
            devices: Vec::new(),
        }
    }

    /// The model answers from the converted labels as from hand-built
    /// facts (`tests/why.rs`): the memory it allocates is the net label.
    #[rstest]
    #[case::eight_gpus_32_cpus_restricted(TopologyManagerPolicy::Restricted, pod(8, 32, 64), false)]
    #[case::four_gpus_restricted(TopologyManagerPolicy::Restricted, pod(4, 32, 64), true)]
    #[case::memory_of_one_numa_node(TopologyManagerPolicy::SingleNumaNode, pod(4, 16, 511), true)]
    #[case::more_than_any_numa_node_nets(
        TopologyManagerPolicy::SingleNumaNode,
        pod(4, 16, 512),
        false
    )]
    fn the_model_reads_the_converted_labels(
        #[case] policy: TopologyManagerPolicy,
        #[case] pod: PodDemand,
        #[case] admitted: bool,
    ) {
        let facts = facts_from_topology(&hgx(policy), TopologyManagerScope::Pod);
        let verdict = admit(&facts, &pod).unwrap().verdict;
        assert_eq!(
            matches!(verdict, Verdict::Admit { .. }),
            admitted,
            "{verdict:?}"
        );
    }
}
