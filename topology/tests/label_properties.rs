//! The label contract over generated topologies: `to_labels` then
//! `from_labels` gives the topology back (unknown values stay absent, and
//! other labels on the node change nothing), and every key and value is
//! one Kubernetes accepts, checked by rules written here from
//! apimachinery's `IsQualifiedName` and `IsValidLabelValue`
//! (`k8s.io/apimachinery/pkg/util/validation/validation.go`).

use gpu_topology::{
    format_count_list, AmdComputePartition, AmdMemoryPartition, CpuManagerPolicy, GpuClique,
    Interconnect, KubeletVersion, LabelPrefix, MemoryManagerPolicy, NodeTopology, ShapeId,
    TopologyManagerPolicy, TopologyManagerScope,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::BTreeMap;

/// apimachinery's `LabelValueMaxLength` and `qualifiedNameMaxLength`.
const MAX_NAME_LENGTH: usize = 63;
/// apimachinery's `DNS1123SubdomainMaxLength`.
const MAX_PREFIX_LENGTH: usize = 253;

/// `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`, at most 63 characters.
fn is_valid_label_value(value: &str) -> bool {
    value.is_empty() || is_qualified_name_part(value)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, 1 to 63 characters.
fn is_qualified_name_part(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_alphanumeric();
    !bytes.is_empty()
        && bytes.len() <= MAX_NAME_LENGTH
        && bytes.first().is_some_and(alphanumeric)
        && bytes.last().is_some_and(alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `IsDNS1123Subdomain`: dot-separated lowercase RFC 1123 labels, at most
/// 253 characters.
fn is_dns_subdomain(prefix: &str) -> bool {
    prefix.len() <= MAX_PREFIX_LENGTH
        && prefix.split('.').all(|label| {
            let bytes = label.as_bytes();
            let end = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
            !bytes.is_empty()
                && bytes.first().is_some_and(end)
                && bytes.last().is_some_and(end)
                && bytes.iter().all(|b| end(b) || *b == b'-')
        })
}

/// `IsQualifiedName`: `[prefix/]name`.
fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_qualified_name_part(name),
        None => is_qualified_name_part(key),
    }
}

fn word<T: Copy + std::fmt::Debug + 'static>(
    all: &'static [T],
) -> impl Strategy<Value = Option<T>> {
    option::of(select(all))
}

/// Counts around the edges too: 0, and `u32::MAX`.
fn count() -> impl Strategy<Value = Option<u32>> {
    option::of(prop_oneof![0..=16u32, any::<u32>(), Just(u32::MAX)])
}

/// Per-NUMA lists: empty (never written), the usual 1 to 8 NUMA nodes, and
/// lists too long for a label value (left out, never cut short).
fn counts() -> impl Strategy<Value = Option<Vec<u32>>> {
    option::of(prop_oneof![
        vec(0..=1024u32, 1..=8),
        vec(any::<u32>(), 0..=16),
        vec(0..=9u32, 60..=70),
    ])
}

/// Device resources: names of the common device plugins, one too long for
/// a label name (never published), each with per-NUMA counts.
fn devices() -> impl Strategy<Value = BTreeMap<String, Vec<u32>>> {
    let resource = select(vec![
        "rdma/ib",
        "rdma/rdma_shared_device_a",
        "nvidia.com/mig-1g.10gb",
        "openshift.io/sriov_netdevice",
        "example.com/a-device-resource-name-much-too-long-for-a-label",
    ])
    .prop_map(str::to_owned);
    let lists = prop_oneof![vec(0..=1024u32, 1..=8), vec(0..=9u32, 60..=70)];
    btree_map(resource, lists, 0..3)
}

fn flag() -> impl Strategy<Value = Option<bool>> {
    option::of(any::<bool>())
}

fn topology() -> impl Strategy<Value = NodeTopology> {
    let described = (
        (
            count(),
            count(),
            count(),
            count(),
            count(),
            count(),
            count(),
        ),
        word(Interconnect::ALL),
        word(TopologyManagerPolicy::ALL),
        word(TopologyManagerScope::ALL),
        word(CpuManagerPolicy::ALL),
    );
    let facts = (
        (counts(), counts(), counts(), counts(), counts(), counts()),
        (counts(), counts()),
        (count(), count()),
        word(MemoryManagerPolicy::ALL),
        (flag(), flag(), flag(), flag()),
        option::of(any::<u64>().prop_map(ShapeId)),
        (
            count(),
            option::of(
                (0..=3u32, any::<u32>())
                    .prop_map(|(major, minor)| KubeletVersion::new(major, minor)),
            ),
        ),
    );
    let informational = (
        word(AmdComputePartition::ALL),
        word(AmdMemoryPartition::ALL),
        option::of(
            (any::<u128>(), any::<u32>()).prop_filter_map("a UUID", |(uuid, id)| {
                let hex = format!("{uuid:032x}");
                let uuid = format!(
                    "{}-{}-{}-{}-{}",
                    &hex[..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..]
                );
                GpuClique::new(&uuid, id)
            }),
        ),
    );
    (described, facts, devices(), informational).prop_map(
        |(described, facts, devices, informational)| {
            let (amd_compute_partition, amd_memory_partition, gpu_clique) = informational;
            let (
                (gpus, per_numa, numa, nvlink, pcie, cpus, memory),
                interconnect,
                policy,
                scope,
                cpu,
            ) = described;
            let (
                (numa_gpus, numa_cpus, reserved_cpus, memory_mib, hugepages_2mi, hugepages_1gi),
                (numa_sockets, reserved_cores),
                (threads_per_core, max_allowable),
                memory_manager,
                (prefer_closest, full_pcpus, distribute, by_socket),
                shape,
                (machine_numa_nodes, kubelet_version),
            ) = facts;
            NodeTopology {
                gpus,
                gpus_per_numa_max: per_numa,
                numa_nodes: numa,
                nvlink_group_max: nvlink,
                pcie_switch_group_max: pcie,
                cpus_per_numa: cpus,
                memory_per_numa_gib: memory,
                interconnect,
                topology_manager_policy: policy,
                topology_manager_scope: scope,
                cpu_manager_policy: cpu,
                numa_gpus,
                numa_cpus,
                numa_reserved_cpus: reserved_cpus,
                numa_sockets,
                numa_reserved_cores: reserved_cores,
                threads_per_core,
                numa_memory_mib: memory_mib,
                numa_hugepages_2mi: hugepages_2mi,
                numa_hugepages_1gi: hugepages_1gi,
                memory_manager_policy: memory_manager,
                prefer_closest_numa_nodes: prefer_closest,
                max_allowable_numa_nodes: max_allowable,
                full_pcpus_only: full_pcpus,
                distribute_cpus_across_numa: distribute,
                align_by_socket: by_socket,
                machine_numa_nodes,
                kubelet_version,
                amd_compute_partition,
                amd_memory_partition,
                gpu_clique,
                numa_distances: None,
                shape,
                devices,
            }
        },
    )
}

/// What a reader gets back: the topology, less the lists that cannot be
/// written as a label value (empty, or too long): those are unknown.
fn as_read(topology: &NodeTopology) -> NodeTopology {
    let writable = |list: &Option<Vec<u32>>| {
        list.as_ref()
            .filter(|counts| format_count_list(counts).is_some())
            .cloned()
    };
    NodeTopology {
        numa_gpus: writable(&topology.numa_gpus),
        numa_cpus: writable(&topology.numa_cpus),
        numa_reserved_cpus: writable(&topology.numa_reserved_cpus),
        numa_sockets: writable(&topology.numa_sockets),
        numa_reserved_cores: writable(&topology.numa_reserved_cores),
        numa_memory_mib: writable(&topology.numa_memory_mib),
        numa_hugepages_2mi: writable(&topology.numa_hugepages_2mi),
        numa_hugepages_1gi: writable(&topology.numa_hugepages_1gi),
        devices: topology
            .devices
            .iter()
            .filter(|(resource, counts)| {
                gpu_topology::device_key_name(resource).is_some()
                    && format_count_list(counts).is_some()
            })
            .map(|(resource, counts)| (resource.clone(), counts.clone()))
            .collect(),
        ..topology.clone()
    }
}

/// Valid prefixes: one to four DNS labels, up to the 63-character label.
fn prefix() -> impl Strategy<Value = LabelPrefix> {
    let label = prop_oneof![
        select(vec!["gpu-topology", "io", "example", "a", "x1", "k8s", "0"])
            .prop_map(str::to_owned),
        Just("a".repeat(MAX_NAME_LENGTH)),
    ];
    vec(label, 1..5)
        .prop_map(|labels| labels.join("."))
        .prop_filter("a prefix is at most 253 characters", |p| {
            p.len() <= MAX_PREFIX_LENGTH
        })
        .prop_map(|p| LabelPrefix::new(&p).expect("generated prefixes are valid"))
}

/// Labels of other owners on the same node, and names under our prefix
/// this version does not know (a newer labeler's).
fn other_labels(prefix: &LabelPrefix) -> impl Strategy<Value = BTreeMap<String, String>> {
    let ours = prefix.as_str().to_owned();
    let key = select(vec![
        "kubernetes.io/hostname".to_owned(),
        "nvidia.com/gpu.count".to_owned(),
        format!("{ours}/future-label"),
        format!("{ours}x/gpus"),
        "gpus".to_owned(),
    ]);
    btree_map(
        key,
        select(vec!["8", "x", "", "nvswitch"]).prop_map(str::to_owned),
        0..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn labels_round_trip(topology in topology(), prefix in prefix()) {
        let labels = topology.to_labels(&prefix);
        let read = NodeTopology::from_labels(&prefix, labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        prop_assert_eq!(read, Ok(as_read(&topology)));
        let known = usize::from(topology.gpus.is_some()) + usize::from(topology.cpu_manager_policy.is_some());
        prop_assert!(labels.len() >= known, "unknown values are absent, known ones present");
    }

    #[test]
    fn other_labels_change_nothing(
        (topology, prefix, others) in (topology(), prefix()).prop_flat_map(|(topology, prefix)| {
            let others = other_labels(&prefix);
            (Just(topology), Just(prefix), others)
        })
    ) {
        let mut labels = others;
        labels.extend(topology.to_labels(&prefix));
        let read = NodeTopology::from_labels(&prefix, labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        prop_assert_eq!(read, Ok(as_read(&topology)));
    }

    #[test]
    fn every_label_is_valid_for_kubernetes(topology in topology(), prefix in prefix()) {
        for (key, value) in topology.to_labels(&prefix) {
            prop_assert!(is_qualified_name(&key), "invalid key {:?}", key);
            prop_assert!(is_valid_label_value(&value), "invalid value {:?} of {}", value, key);
        }
    }
}

/// The test's own validators, on values apimachinery's tests name.
#[rstest::rstest]
#[case::empty("", true)]
#[case::simple("single-numa-node", true)]
#[case::dots_and_underscores("a_b.c-d", true)]
#[case::longest(&"a".repeat(63), true)]
#[case::too_long(&"a".repeat(64), false)]
#[case::leading_dash("-a", false)]
#[case::trailing_dot("a.", false)]
#[case::space("a b", false)]
fn the_label_value_rule_follows_apimachinery(#[case] value: &str, #[case] valid: bool) {
    assert_eq!(is_valid_label_value(value), valid);
}

#[rstest::rstest]
#[case::prefixed("gpu-topology.io/gpus", true)]
#[case::bare("gpus", true)]
#[case::uppercase_prefix("Gpu.io/gpus", false)]
#[case::empty_name("gpu-topology.io/", false)]
#[case::two_slashes("a/b/c", false)]
fn the_key_rule_follows_apimachinery(#[case] key: &str, #[case] valid: bool) {
    assert_eq!(is_qualified_name(key), valid);
}
