//! Identical machines share a shape (issue #35): the MiB of memory that
//! firmware carve-outs, kernel reservations and replaced DIMMs take from
//! each NUMA node no longer make every node a shape of its own.
//!
//! One machine type, 1,000 nodes: an HGX H100 with two NUMA nodes of about
//! 1,007 GiB, each node's NUMA nodes `JITTER_MIB` MiB apart at most (the
//! recorded DGX of labeler/tests/fixtures differs by 213 MiB between NUMA
//! nodes of one machine). The shapes are counted as the labeler publishes
//! them: before, in exact MiB; after, through the contract's
//! [`published_numa_memory_mib`].

use gpu_topology::{
    published_numa_memory_mib, CpuManagerPolicy, MemoryManagerPolicy, NodeTopology,
    TopologyManagerPolicy, NUMA_MEMORY_GRANULARITY_MIB,
};
use rstest::rstest;
use std::collections::BTreeSet;

const NODES: u32 = 1_000;
/// The most memory two nodes of the type differ by on one NUMA node.
const JITTER_MIB: u32 = 512;

/// A deterministic stream of jitters in `0..JITTER_MIB` (a 32-bit LCG).
fn jitters(seed: u32) -> impl Iterator<Item = u32> {
    let mut state = seed;
    std::iter::repeat_with(move || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) % JITTER_MIB
    })
}

fn hgx_h100(numa_memory_mib: Vec<u32>) -> NodeTopology {
    NodeTopology {
        gpus: Some(8),
        gpus_per_numa_max: Some(4),
        numa_gpus: Some(vec![4, 4]),
        numa_cpus: Some(vec![112, 112]),
        numa_memory_mib: Some(numa_memory_mib),
        numa_hugepages_2mi: Some(vec![0, 0]),
        numa_hugepages_1gi: Some(vec![0, 0]),
        threads_per_core: Some(2),
        topology_manager_policy: Some(TopologyManagerPolicy::SingleNumaNode),
        cpu_manager_policy: Some(CpuManagerPolicy::Static),
        memory_manager_policy: Some(MemoryManagerPolicy::Static),
        ..NodeTopology::default()
    }
}

/// Distinct shapes among `NODES` nodes whose NUMA nodes have `base` MiB
/// less a jitter each, published through `publish`.
fn shapes(base: [u32; 2], publish: fn(u32) -> u32) -> usize {
    let mut jitter = jitters(base[0] ^ base[1]);
    (0..NODES)
        .map(|_| {
            let memory = base
                .iter()
                .map(|mib| publish(mib - jitter.next().unwrap()))
                .collect();
            hgx_h100(memory).shape_id()
        })
        .collect::<BTreeSet<_>>()
        .len()
}

/// (NUMA nodes' memory before the jitter, distinct shapes at most after).
/// Each NUMA node's jitter crosses at most one GiB boundary, so a node
/// type makes at most two values per NUMA node: where no boundary falls
/// inside the jitter, one shape.
#[rstest]
#[case::jitter_within_one_gib(
    [1_031_168 + 1_000, 1_032_192 + 700], 1
)]
#[case::jitter_across_a_boundary_on_each_numa_node([1_031_168 + 100, 1_032_192 + 300], 4)]
fn a_thousand_identical_machines_share_few_shapes(#[case] base: [u32; 2], #[case] most: usize) {
    let exact = shapes(base, |mib| mib);
    let published = shapes(base, published_numa_memory_mib);
    eprintln!(
        "{NODES} nodes, jitter < {JITTER_MIB} MiB per NUMA node: {exact} shapes in exact MiB, {published} in whole GiB"
    );
    assert!(exact > 900, "{exact} shapes in exact MiB");
    assert!(published <= most, "{published} shapes in whole GiB");
    assert!(published >= 1);
}

#[test]
fn published_memory_is_whole_gib_at_most_the_truth() {
    for mib in [0, 1, 1023, 1024, 1025, 515_000, 1_031_999, u32::MAX] {
        let published = published_numa_memory_mib(mib);
        assert_eq!(published % NUMA_MEMORY_GRANULARITY_MIB, 0, "{mib}");
        assert!(
            published <= mib && mib - published < NUMA_MEMORY_GRANULARITY_MIB,
            "{mib}"
        );
    }
}
