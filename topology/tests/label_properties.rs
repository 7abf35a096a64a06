//! The label contract over generated topologies: `to_labels` then
//! `from_labels` gives the topology back (unknown values stay absent, and
//! other labels on the node change nothing), and every key and value is
//! one Kubernetes accepts, checked by rules written here from
//! apimachinery's `IsQualifiedName` and `IsValidLabelValue`
//! (`k8s.io/apimachinery/pkg/util/validation/validation.go`).

use gpu_topology::{
    format_count_list, format_numa_distances, parse_count_list, parse_numa_distances,
    AmdComputePartition, AmdMemoryPartition, CpuManagerPolicy, GpuClique, Interconnect,
    KubeletVersion, LabelPrefix, MemoryManagerPolicy, NodeTopology, ShapeId, TopologyManagerPolicy,
    TopologyManagerScope,
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

/// Per-NUMA lists: empty (never written), the usual 1 to 8 NUMA nodes,
/// machines of many NUMA nodes in runs, and lists too long for a label
/// value (left out, never cut short).
fn counts() -> impl Strategy<Value = Option<Vec<u32>>> {
    option::of(prop_oneof![
        vec(0..=1024u32, 1..=8),
        vec(any::<u32>(), 0..=16),
        vec(0..=9u32, 60..=70),
        runs(),
    ])
}

/// 1 to 64 counts made of runs of equal ones (a Grace tray: `72.72` then
/// 32 memory-only nodes of `0`), sometimes with a few odd ones in between.
fn runs() -> impl Strategy<Value = Vec<u32>> {
    let run = (
        prop_oneof![0..=3u32, 0..=1_000_000u32, Just(u32::MAX)],
        1..=40usize,
    );
    vec(run, 1..=6).prop_map(|runs| {
        runs.into_iter()
            .flat_map(|(count, times)| std::iter::repeat_n(count, times))
            .take(64)
            .collect()
    })
}

/// SLIT matrices: symmetric, 1 to 64 nodes, a few distinct distances
/// (10 on the node, as the ACPI SLIT has it), now and then one that has no
/// encoding (asymmetric).
fn distance_matrix() -> impl Strategy<Value = Vec<Vec<u32>>> {
    (
        1..=64usize,
        vec(11..=255u32, 1..=6),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(nodes, palette, seed, asymmetric)| {
            // Entry (i, j) and (j, i) from the same pair: symmetric.
            let distance = |i: usize, j: usize| {
                let (low, high) = (i.min(j), i.max(j));
                let mix = seed.wrapping_mul(31).wrapping_add((low * 64 + high) as u64);
                if i == j {
                    10
                } else {
                    palette[(mix % palette.len() as u64) as usize]
                }
            };
            let mut rows: Vec<Vec<u32>> = (0..nodes)
                .map(|i| (0..nodes).map(|j| distance(i, j)).collect())
                .collect();
            if asymmetric && nodes > 1 {
                rows[0][1] += 1;
            }
            rows
        })
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
    (
        described,
        facts,
        devices(),
        option::of(distance_matrix()),
        informational,
    )
        .prop_map(
            |(described, facts, devices, numa_distances, informational)| {
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
                    numa_distances,
                    amd_compute_partition,
                    amd_memory_partition,
                    gpu_clique,
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
        numa_distances: topology
            .numa_distances
            .as_ref()
            .filter(|rows| format_numa_distances(rows).is_some())
            .cloned(),
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Lists of 1 to 64 entries, runs included: whatever is written reads
    /// back, is a label value, and is the plain form wherever that fits.
    #[test]
    fn count_lists_round_trip_in_either_form(
        counts in prop_oneof![runs(), vec(any::<u32>(), 1..=64), vec(0..=99u32, 1..=64)]
    ) {
        let plain = counts.iter().map(u32::to_string).collect::<Vec<_>>().join(".");
        match format_count_list(&counts) {
            Some(value) => {
                prop_assert!(is_valid_label_value(&value), "{:?}", value);
                prop_assert_eq!(parse_count_list(&value), Some(counts.clone()));
                if plain.len() <= MAX_NAME_LENGTH {
                    prop_assert_eq!(&value, &plain);
                } else {
                    prop_assert!(value.contains('_'), "{:?}", value);
                }
            }
            // Left out only when even the runs pass 63 characters.
            None => prop_assert!(plain.len() > MAX_NAME_LENGTH),
        }
    }

    /// The reader never takes more than 64 entries, nor panics, on any text.
    #[test]
    fn count_lists_read_any_text_safely(value in "[0-9._]{0,63}") {
        if let Some(counts) = parse_count_list(&value) {
            prop_assert!((1..=64).contains(&counts.len()));
        }
    }

    /// Symmetric matrices up to 64 x 64 round-trip exactly, in chunks that
    /// are label values; asymmetric ones have no encoding.
    #[test]
    fn distance_matrices_round_trip_exactly(rows in distance_matrix(), prefix in prefix()) {
        let symmetric = (0..rows.len()).all(|i| (0..rows.len()).all(|j| rows[i][j] == rows[j][i]));
        let value = format_numa_distances(&rows);
        prop_assert_eq!(value.is_some(), symmetric);
        if let Some(value) = value {
            prop_assert_eq!(parse_numa_distances(&value), Some(rows.clone()));
            let node = NodeTopology { numa_distances: Some(rows.clone()), ..NodeTopology::default() };
            let labels = node.to_labels(&prefix);
            prop_assert_eq!(labels.len(), value.len().div_ceil(MAX_NAME_LENGTH));
            for (key, chunk) in &labels {
                prop_assert!(is_qualified_name(key), "{:?}", key);
                prop_assert!(is_valid_label_value(chunk) && !chunk.is_empty(), "{:?}", chunk);
            }
            let read = NodeTopology::from_labels(&prefix, labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            prop_assert_eq!(read.map(|n| n.numa_distances), Ok(Some(rows)));
        }
    }

    /// Any text, as a whole value or one chunk: no panic, and what reads
    /// is a symmetric matrix that writes back to the same text.
    #[test]
    fn distance_values_read_any_text_safely(value in "[0-9a-z]{0,80}") {
        if let Some(rows) = parse_numa_distances(&value) {
            prop_assert_eq!(format_numa_distances(&rows), Some(value));
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
