//! `read_occupancy`: a node's NodeResourceTopology, as NFD's
//! topology-updater writes it (`tests/nrt/*.json`), read against the node's
//! labels into what other pods hold per NUMA node, or into the reason it
//! cannot be used (the binding is then allowed).
//!
//! The labels (`hgx()`) describe an HGX-like node: 2 NUMA nodes of 4 GPUs
//! (`nvidia.com/gpu`) and 56 CPUs, one RDMA NIC each (`example.com/rdma`),
//! Topology Manager `single-numa-node`, scope `pod`. The objects are the
//! same node's, each changed in one way.
#![cfg(feature = "nrt")]

use gpu_topology::kubelet::{
    NodeFacts, NumaNodeFacts, NumaOccupancy, Occupancy, TopologyManagerConfig,
};
use gpu_topology::nrt::{read_occupancy, Inconsistency, NrtProblem, MAX_ZONES};
use gpu_topology::{TopologyManagerPolicy, TopologyManagerScope};
use rstest::rstest;
use std::collections::BTreeMap;

const GIB: u64 = 1 << 30;
const GPU: &str = "nvidia.com/gpu";
const NIC: &str = "example.com/rdma";

fn fixture(file: &str) -> String {
    let path = format!("{}/tests/nrt/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The node's labels, as the model reads them.
fn hgx() -> NodeFacts {
    let numa = |reserved| NumaNodeFacts {
        gpus: Some(4),
        cpus: Some(56),
        reserved_cpus: Some(reserved),
        memory_mib: Some(512 << 10),
        reserved_memory_mib: Some(1024),
        ..NumaNodeFacts::default()
    };
    NodeFacts {
        numa_nodes: Some(vec![numa(2), numa(0)]),
        threads_per_core: Some(2),
        topology_manager: TopologyManagerConfig {
            policy: Some(TopologyManagerPolicy::SingleNumaNode),
            scope: Some(TopologyManagerScope::Pod),
            prefer_closest_numa_nodes: Some(false),
            max_allowable_numa_nodes: Some(8),
        },
        devices: BTreeMap::from([(NIC.to_owned(), vec![1, 1])]),
        memory_rounding_mib: 1,
        ..NodeFacts::default()
    }
}

/// Labels that publish no Topology Manager settings.
fn hgx_without_settings() -> NodeFacts {
    NodeFacts {
        topology_manager: TopologyManagerConfig::default(),
        ..hgx()
    }
}

/// Labels without the per-NUMA lists.
fn hgx_without_numa_lists() -> NodeFacts {
    NodeFacts {
        numa_nodes: None,
        ..hgx()
    }
}

fn held(gpus: u32, cpus: u32, memory_gib: u64, nics: Option<u32>) -> NumaOccupancy {
    NumaOccupancy {
        gpus,
        cpus,
        memory: [memory_gib * GIB, 0, 0],
        devices: nics.map(|n| vec![(NIC.to_owned(), n)]).unwrap_or_default(),
    }
}

fn occupancy(numa_nodes: Vec<NumaOccupancy>) -> Result<Occupancy, NrtProblem> {
    Ok(Occupancy { numa_nodes })
}

/// What `hgx_two_numa.json` says: on NUMA node 0, 2 of 4 GPUs, 16 of 54
/// allocatable CPUs, 64Gi of memory and the NIC held; NUMA node 1 idle
/// (its NIC listed, none held). `example.com/not-counted` is no resource
/// of the labels: left out.
fn busy_numa_0() -> Result<Occupancy, NrtProblem> {
    occupancy(vec![held(2, 16, 64, Some(1)), held(0, 0, 0, Some(0))])
}

fn inconsistent(inconsistency: Inconsistency) -> Result<Occupancy, NrtProblem> {
    Err(NrtProblem::Inconsistent(inconsistency))
}

fn bad_quantity(zone: &str, resource: &str, value: &str) -> Result<Occupancy, NrtProblem> {
    Err(NrtProblem::BadQuantity {
        zone: zone.into(),
        resource: resource.into(),
        value: value.into(),
    })
}

#[rstest]
#[case::hgx_two_numa_nodes("hgx_two_numa.json", hgx(), busy_numa_0())]
// A zone the object leaves out holds nothing: only more lenient.
#[case::missing_zone_holds_nothing(
    "missing_zone.json",
    hgx(),
    occupancy(vec![held(2, 16, 64, Some(1)), NumaOccupancy::default()])
)]
// A socket zone, and `node-01` (NFD names zones `node-<id>` as the kernel
// numbers them): not NUMA nodes' zones, skipped.
#[case::other_zone_types_and_names_ignored("other_zones_ignored.json", hgx(), busy_numa_0())]
#[case::zone_beyond_the_labels(
    "zone_beyond_labels.json",
    hgx(),
    inconsistent(Inconsistency::ZoneBeyondLabels { zone: "node-2".into(), numa_nodes: 2 })
)]
#[case::zone_listed_twice(
    "zone_twice.json",
    hgx(),
    inconsistent(Inconsistency::ZoneTwice { zone: "node-0".into() })
)]
#[case::more_gpus_available_than_labeled(
    "more_gpus_available_than_labeled.json",
    hgx(),
    inconsistent(Inconsistency::MoreAvailableThanLabeled {
        numa: 1,
        resource: GPU.into(),
        available: 5,
        labeled: 4,
    })
)]
#[case::available_above_allocatable(
    "available_above_allocatable.json",
    hgx(),
    inconsistent(Inconsistency::AvailableAboveAllocatable { numa: 0, resource: "cpu".into() })
)]
#[case::policy_attribute_disagrees_with_the_labels(
    "policy_disagrees.json",
    hgx(),
    inconsistent(Inconsistency::Setting {
        name: "topologyManagerPolicy",
        object: "restricted".into(),
        labels: "single-numa-node".into(),
    })
)]
#[case::scope_attribute_disagrees_with_the_labels(
    "scope_disagrees.json",
    hgx(),
    inconsistent(Inconsistency::Setting {
        name: "topologyManagerScope",
        object: "container".into(),
        labels: "pod".into(),
    })
)]
// Labels that do not say: the object's settings are nothing to check against.
#[case::policy_attribute_with_unlabeled_settings(
    "policy_disagrees.json",
    hgx_without_settings(),
    busy_numa_0()
)]
#[case::fractional_cpus(
    "bad_quantity_fraction.json",
    hgx(),
    bad_quantity("node-0", "cpu", "37500m")
)]
#[case::negative_gpus("bad_quantity_negative.json", hgx(), bad_quantity("node-1", GPU, "-1"))]
#[case::quantity_not_a_number(
    "bad_quantity_text.json",
    hgx(),
    bad_quantity("node-0", "cpu", "lots")
)]
#[case::too_many_zones(
    "too_many_zones.json",
    hgx(),
    Err(NrtProblem::TooLarge { list: "zones", limit: MAX_ZONES })
)]
#[case::labels_without_numa_lists(
    "hgx_two_numa.json",
    hgx_without_numa_lists(),
    Err(NrtProblem::NoNumaNodes)
)]
fn read_occupancy_cases(
    #[case] file: &str,
    #[case] facts: NodeFacts,
    #[case] expected: Result<Occupancy, NrtProblem>,
) {
    assert_eq!(read_occupancy(&fixture(file), &facts, GPU), expected);
}

/// Text that is not the object's JSON is unreadable (serde's message).
#[rstest]
#[case::not_json("not_json.txt")]
#[case::zones_not_a_list("zones_not_a_list.json")]
fn unreadable(#[case] file: &str) {
    let answer = read_occupancy(&fixture(file), &hgx(), GPU);
    assert!(
        matches!(answer, Err(NrtProblem::Unreadable(ref why)) if !why.is_empty()),
        "{answer:?}"
    );
}

/// The GPUs held are the labels' count less `available`, whatever the
/// object's `allocatable` (an unhealthy GPU is as unusable as an allocated
/// one); read under another resource name, the GPUs are not counted.
#[test]
fn gpus_are_read_under_the_resource_name_given() {
    let occupancy = read_occupancy(&fixture("hgx_two_numa.json"), &hgx(), "amd.com/gpu")
        .expect("a consistent object");
    assert!(occupancy.numa_nodes.iter().all(|n| n.gpus == 0));
    assert_eq!(occupancy.numa_nodes[0].cpus, 16);
}
