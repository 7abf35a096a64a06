use super::*;
use rstest::rstest;
use std::collections::BTreeMap;

#[rstest]
#[case::topology_policy("topologyManagerPolicy", LabelKey::TopologyManagerPolicy)]
#[case::memory_policy("memoryManagerPolicy", LabelKey::MemoryManagerPolicy)]
#[case::a_topology_option(
    "topologyManagerPolicyOptions.max-allowable-numa-nodes",
    LabelKey::TopologyManagerMaxAllowableNumaNodes
)]
#[case::a_cpu_option(
    "cpuManagerPolicyOptions.full-pcpus-only",
    LabelKey::CpuManagerFullPcpusOnly
)]
fn kubelet_settings_name_their_labels(#[case] setting: &str, #[case] key: LabelKey) {
    assert_eq!(LabelKey::from_kubelet_setting(setting), Some(key));
    assert_eq!(key.kubelet_setting(), Some(setting));
}

#[rstest]
#[case::plain("v1.36.2", Some((1, 36)))]
#[case::eks("v1.35.0-eks-4096722", Some((1, 35)))]
#[case::k3s("v1.34.2+k3s1", Some((1, 34)))]
#[case::gke("v1.33.5-gke.1080000", Some((1, 33)))]
#[case::release_candidate("v1.36.0-rc.1", Some((1, 36)))]
#[case::no_patch("v1.36", Some((1, 36)))]
#[case::no_v("1.36.2", None)]
#[case::no_minor("v1", None)]
#[case::letters_in_the_minor("v1.3x.0", None)]
#[case::empty("", None)]
#[case::huge_minor("v1.99999999999.0", None)]
fn kubelet_versions_read_as_the_node_reports_them(
    #[case] reported: &str,
    #[case] expected: Option<(u32, u32)>,
) {
    let version = KubeletVersion::parse_node_info(reported);
    assert_eq!(
        version,
        expected.map(|(major, minor)| KubeletVersion::new(major, minor))
    );
    if let Some(version) = version {
        let label = version.to_string();
        assert!(is_label_value(&label));
        assert_eq!(KubeletVersion::parse_label(&label), Some(version));
    }
}

#[rstest]
#[case::older_minor(KubeletVersion::new(1, 35), false)]
#[case::same(KubeletVersion::new(1, 36), true)]
#[case::newer_minor(KubeletVersion::new(1, 37), true)]
#[case::newer_major(KubeletVersion::new(2, 0), true)]
fn versions_compare_by_major_then_minor(#[case] version: KubeletVersion, #[case] from_1_36: bool) {
    assert_eq!(version.at_least(1, 36), from_1_36);
}

#[test]
fn every_kubelet_setting_is_a_fact_of_the_shape_named_once() {
    let settings: Vec<(&str, LabelKey)> = LabelKey::ALL
        .into_iter()
        .filter_map(|key| key.kubelet_setting().map(|setting| (setting, key)))
        .collect();
    assert_eq!(settings.len(), 9);
    for (setting, key) in settings {
        assert!(key.shapes(), "{setting} is part of the shape");
        assert_eq!(LabelKey::from_kubelet_setting(setting), Some(key));
    }
    assert_eq!(LabelKey::from_kubelet_setting("numa-gpus"), None);
}

fn dgx_a100() -> NodeTopology {
    NodeTopology {
        gpus: Some(8),
        gpus_per_numa_max: Some(2),
        numa_nodes: Some(4),
        nvlink_group_max: Some(8),
        pcie_switch_group_max: Some(2),
        cpus_per_numa: Some(32),
        memory_per_numa_gib: Some(251),
        interconnect: Some(Interconnect::NvSwitch),
        topology_manager_policy: Some(TopologyManagerPolicy::SingleNumaNode),
        topology_manager_scope: Some(TopologyManagerScope::Pod),
        cpu_manager_policy: Some(CpuManagerPolicy::Static),
        numa_gpus: Some(vec![0, 2, 0, 2, 0, 2, 0, 2]),
        numa_cpus: Some(vec![32; 8]),
        numa_reserved_cpus: Some(vec![2, 0, 0, 0, 0, 0, 0, 0]),
        numa_reserved_cores: Some(vec![1, 0, 0, 0, 0, 0, 0, 0]),
        numa_sockets: Some(vec![0, 0, 0, 0, 1, 1, 1, 1]),
        threads_per_core: Some(2),
        numa_memory_mib: Some(vec![257_000; 8]),
        numa_hugepages_2mi: Some(vec![0; 8]),
        numa_hugepages_1gi: Some(vec![0; 8]),
        memory_manager_policy: Some(MemoryManagerPolicy::Static),
        prefer_closest_numa_nodes: Some(true),
        max_allowable_numa_nodes: Some(8),
        full_pcpus_only: Some(true),
        distribute_cpus_across_numa: Some(false),
        align_by_socket: Some(false),
        machine_numa_nodes: Some(8),
        kubelet_version: Some(KubeletVersion::new(1, 34)),
        numa_distances: Some(epyc_nps4_distances()),
        // Not a DGX A100's, but every label of the contract round-trips.
        amd_compute_partition: Some(AmdComputePartition::Cpx),
        amd_memory_partition: Some(AmdMemoryPartition::Nps4),
        gpu_clique: GpuClique::new("DC6E40C4-D722-4357-9BA6-5291DD461278", 2),
        shape: None,
        devices: BTreeMap::new(),
    }
    .with_shape()
}

/// Two EPYC sockets in NPS4: 10 on the node, 12 on the socket, 32 across.
fn epyc_nps4_distances() -> Vec<Vec<u32>> {
    (0..8)
        .map(|i: u32| {
            (0..8)
                .map(|j: u32| match (i == j, i / 4 == j / 4) {
                    (true, _) => 10,
                    (false, true) => 12,
                    (false, false) => 32,
                })
                .collect()
        })
        .collect()
}

#[rstest]
#[case::gfd_example("dc6e40c4-d722-4357-9ba6-5291dd461278.2", true)]
#[case::large_clique_id("9c6f5af3-53bf-49b5-a436-b66766c413c3.4026", true)]
#[case::uppercase_uuid("DC6E40C4-D722-4357-9BA6-5291DD461278.2", false)]
#[case::no_clique_id("dc6e40c4-d722-4357-9ba6-5291dd461278", false)]
#[case::negative_clique_id("dc6e40c4-d722-4357-9ba6-5291dd461278.-2", false)]
#[case::short_group("dc6e40c4-d722-4357-9ba6-5291dd46127.2", false)]
#[case::not_hex("dc6e40c4-d722-4357-9ba6-5291dd46127g.2", false)]
fn clique_labels_are_a_lowercase_uuid_and_a_decimal_id(
    #[case] value: &str,
    #[case] readable: bool,
) {
    let parsed = GpuClique::parse_label(value);
    assert_eq!(parsed.is_some(), readable, "{value}");
    if let Some(clique) = parsed {
        assert_eq!(clique.to_string(), value);
        assert!(is_label_value(value));
    }
}

#[test]
fn the_labeler_writes_the_uuid_lowercase() {
    let clique = GpuClique::new("DC6E40C4-D722-4357-9BA6-5291DD461278", 2);
    assert_eq!(
        clique.map(|c| c.to_string()).as_deref(),
        Some("dc6e40c4-d722-4357-9ba6-5291dd461278.2")
    );
}

#[test]
fn informational_labels_leave_the_shape_alone() {
    let mut topology = dgx_a100();
    topology.amd_compute_partition = None;
    topology.amd_memory_partition = None;
    topology.gpu_clique = None;
    assert_eq!(topology.shape_id(), dgx_a100().shape_id());
}

/// A GPUDirect node: 8 GPUs, 8 HCAs 4+4, MIG slices on one GPU.
fn hgx_with_devices() -> NodeTopology {
    NodeTopology {
        devices: BTreeMap::from([
            ("rdma/ib".to_owned(), vec![4, 4]),
            ("nvidia.com/mig-1g.10gb".to_owned(), vec![7, 0]),
            ("openshift.io/sriov_netdevice".to_owned(), vec![0, 16]),
        ]),
        numa_gpus: Some(vec![4, 4]),
        ..NodeTopology::default()
    }
    .with_shape()
}

#[test]
fn labels_round_trip_through_the_contract() {
    let prefix = LabelPrefix::default();
    let labels = dgx_a100().to_labels(&prefix);
    assert_eq!(labels.len(), LabelKey::ALL.len());
    assert_eq!(labels["gpu-topology.io/gpus-per-numa-max"], "2");
    assert_eq!(
        labels["gpu-topology.io/topology-manager-policy"],
        "single-numa-node"
    );
    assert_eq!(labels["gpu-topology.io/numa-gpus"], "0.2.0.2.0.2.0.2");
    assert_eq!(
        labels["gpu-topology.io/numa-memory-mib"],
        "257000.257000.257000.257000.257000.257000.257000.257000"
    );
    assert_eq!(
        labels["gpu-topology.io/cpu-manager-full-pcpus-only"],
        "true"
    );
    assert_eq!(labels["gpu-topology.io/shape"].len(), 16);
    let parsed = NodeTopology::from_labels(
        &prefix,
        labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .unwrap();
    assert_eq!(parsed, dgx_a100());
}

#[test]
fn unknown_values_are_left_out() {
    let topology = NodeTopology {
        gpus: Some(2),
        ..NodeTopology::default()
    };
    let labels = topology.to_labels(&LabelPrefix::default());
    assert_eq!(labels.len(), 1);
    assert_eq!(labels["gpu-topology.io/gpus"], "2");
}

#[test]
fn foreign_and_future_labels_are_ignored() {
    let prefix = LabelPrefix::default();
    let parsed = NodeTopology::from_labels(
        &prefix,
        [
            ("kubernetes.io/hostname", "n1"),
            ("gpu-topology.io/some-future-key", "x"),
            ("gpu-topology.iox/gpus", "not-ours"),
            ("gpu-topology.io/gpus", "4"),
        ],
    )
    .unwrap();
    assert_eq!(parsed.gpus, Some(4));
    assert_eq!(parsed.gpus_per_numa_max, None);
}

#[rstest]
#[case::negative("gpu-topology.io/gpus", "-1")]
#[case::plus_sign("gpu-topology.io/gpus", "+4")]
#[case::spaces("gpu-topology.io/gpus", " 4")]
#[case::empty("gpu-topology.io/gpus", "")]
#[case::overflow("gpu-topology.io/gpus", "99999999999")]
#[case::wrong_case_policy("gpu-topology.io/topology-manager-policy", "SingleNumaNode")]
#[case::nvlink_not_a_count("gpu-topology.io/nvlink-group-max", "all")]
#[case::per_numa_not_a_count("gpu-topology.io/gpus-per-numa-max", "4.0")]
fn malformed_values_the_fit_reads_are_errors_naming_the_label(
    #[case] key: &str,
    #[case] value: &str,
) {
    let err = NodeTopology::from_labels(&LabelPrefix::default(), [(key, value)]).unwrap_err();
    let message = err.to_string();
    assert!(message.contains(key), "{message}");
    assert!(message.contains(&format!("{value:?}")), "{message}");
}

/// Labels the fit does not read: a value this version cannot read (a
/// newer labeler's word) leaves the field unknown, and the node counts.
#[rstest]
#[case::newer_interconnect("gpu-topology.io/interconnect", "nvlink-c2c")]
#[case::unknown_scope("gpu-topology.io/topology-manager-scope", "node")]
#[case::unknown_cpu_policy("gpu-topology.io/cpu-manager-policy", "dynamic")]
#[case::numa_nodes_not_a_count("gpu-topology.io/numa-nodes", "four")]
#[case::list_with_an_empty_entry("gpu-topology.io/numa-gpus", "4..4")]
#[case::list_with_a_sign("gpu-topology.io/numa-cpus", "56.-1")]
#[case::list_of_words("gpu-topology.io/numa-memory-mib", "lots")]
#[case::flag_spelled_otherwise("gpu-topology.io/cpu-manager-full-pcpus-only", "True")]
#[case::shape_too_short("gpu-topology.io/shape", "abc")]
#[case::shape_in_capitals("gpu-topology.io/shape", "ABCDEF0123456789")]
#[case::memory_policy_as_the_kubelet_spells_it("gpu-topology.io/memory-manager-policy", "Static")]
#[case::compute_partition_as_amdgpu_spells_it("gpu-topology.io/amd-compute-partition", "CPX")]
#[case::unknown_memory_partition("gpu-topology.io/amd-memory-partition", "nps3")]
#[case::clique_without_id("gpu-topology.io/gpu-clique", "dc6e40c4-d722-4357-9ba6-5291dd461278")]
fn unreadable_informational_values_are_unknown(#[case] key: &str, #[case] value: &str) {
    let labels = [("gpu-topology.io/gpus", "8"), (key, value)];
    let parsed = NodeTopology::from_labels(&LabelPrefix::default(), labels).unwrap();
    assert_eq!(
        parsed,
        NodeTopology {
            gpus: Some(8),
            ..NodeTopology::default()
        }
    );
    let mut strict = NodeTopology::default();
    assert!(strict
        .set_strictly(LabelPrefix::default().parse_key(key).unwrap(), key, value)
        .is_err());
}

/// Lists longer than the plain form fits are written in runs, and
/// published; one too long even so is unknown, never cut short.
#[test]
fn lists_in_runs_are_published_and_too_long_ones_left_out() {
    let sixteen_nodes = vec![1_000_000; 16];
    let topology = NodeTopology {
        numa_memory_mib: Some(sixteen_nodes),
        ..NodeTopology::default()
    };
    let labels = topology.to_labels(&LabelPrefix::default());
    assert_eq!(labels["gpu-topology.io/numa-memory-mib"], "1000000_16");
    let distinct = NodeTopology {
        numa_memory_mib: Some((1_000_000..1_000_016).collect()),
        ..NodeTopology::default()
    };
    assert!(distinct.to_labels(&LabelPrefix::default()).is_empty());
}

#[test]
fn the_shape_follows_the_facts_only() {
    let node = dgx_a100();
    let shape = node.shape.unwrap();
    // Informational labels do not change the shape...
    let renamed = NodeTopology {
        interconnect: Some(Interconnect::Pcie),
        pcie_switch_group_max: None,
        ..node.clone()
    };
    assert_eq!(renamed.shape_id(), shape);
    // ...every fact does, and so does the shape label itself never.
    let fewer_cpus = NodeTopology {
        numa_reserved_cpus: Some(vec![4, 0, 0, 0, 0, 0, 0, 0]),
        ..node.clone()
    };
    assert_ne!(fewer_cpus.shape_id(), shape);
    let other_label = NodeTopology {
        shape: Some(ShapeId(1)),
        ..node.clone()
    };
    assert_eq!(other_label.shape_id(), shape);
    // Its label round-trips.
    assert_eq!(ShapeId::parse(&shape.to_string()), Some(shape));
    assert_eq!(ShapeId(0xab).to_string(), "00000000000000ab");
}

/// `machine-numa-nodes` shapes a node only where the lists do not say
/// it already; the distances shape it, fed once, whole.
#[rstest]
#[case::implied_by_the_lists(Some(8), true)]
#[case::unknown(None, true)]
#[case::more_than_the_lists(Some(34), false)]
fn machine_numa_nodes_shape_only_what_the_lists_do_not_say(
    #[case] machine_numa_nodes: Option<u32>,
    #[case] same_shape: bool,
) {
    let without = NodeTopology {
        machine_numa_nodes: None,
        ..dgx_a100()
    };
    let node = NodeTopology {
        machine_numa_nodes,
        ..dgx_a100()
    };
    assert_eq!(node.shape_id() == without.shape_id(), same_shape);
    let lists_unknown = NodeTopology {
        machine_numa_nodes: Some(8),
        ..NodeTopology::default()
    };
    assert_ne!(lists_unknown.shape_id(), NodeTopology::default().shape_id());
}

#[test]
fn distances_are_published_in_chunks_and_shape_the_node() {
    let prefix = LabelPrefix::default();
    let rows: Vec<Vec<u32>> = (0..34u32)
        .map(|i| {
            (0..34u32)
                .map(|j| {
                    if i == j {
                        10
                    } else {
                        20 + u32::from(i / 2 != j / 2) * 20
                    }
                })
                .collect()
        })
        .collect();
    let node = NodeTopology {
        numa_distances: Some(rows.clone()),
        ..NodeTopology::default()
    };
    let labels = node.to_labels(&prefix);
    assert_eq!(labels.len(), 10);
    assert_eq!(
        labels["gpu-topology.io/numa-distances.9"].len(),
        3 + 6 + 595 - 9 * 63
    );
    for (key, value) in &labels {
        assert!(is_label_value(value), "{key}={value:?}");
    }
    let read = NodeTopology::from_labels(
        &prefix,
        labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .unwrap();
    assert_eq!(read, node);
    // A chunk lost: the matrix is unknown, the rest of the node stays.
    let partial = NodeTopology::from_labels(
        &prefix,
        labels
            .iter()
            .filter(|(k, _)| !k.ends_with(".4"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("gpu-topology.io/gpus", "4")]),
    )
    .unwrap();
    assert_eq!(partial.numa_distances, None);
    assert_eq!(partial.gpus, Some(4));
    assert_ne!(node.shape_id(), NodeTopology::default().shape_id());
    // The fleet summary's form keeps the value whole.
    let named = node.named_values();
    assert_eq!(named.len(), 1);
    let mut back = NodeTopology::default();
    back.set_named(&named[0].0, &named[0].0, &named[0].1)
        .unwrap();
    assert_eq!(back, node);
}

/// The digest is part of the contract: a labeler and a policy built from
/// different versions of this crate must agree on it for equal facts.
#[test]
fn the_shape_digest_is_stable() {
    let node = NodeTopology {
        gpus: Some(8),
        numa_gpus: Some(vec![4, 4]),
        topology_manager_policy: Some(TopologyManagerPolicy::Restricted),
        ..NodeTopology::default()
    };
    // FNV-1a 64 of "gpus=8;topology-manager-policy=restricted;numa-gpus=4.4;".
    let text = "gpus=8;topology-manager-policy=restricted;numa-gpus=4.4;";
    let mut expected: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        expected = (expected ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    assert_eq!(node.shape_id(), ShapeId(expected));
    assert_eq!(
        NodeTopology::default().shape_id().to_string(),
        "cbf29ce484222325"
    );
}

#[rstest]
#[case::rdma("rdma/ib", "numa-devices.rdma_ib")]
#[case::mig_profile("nvidia.com/mig-1g.10gb", "numa-devices.nvidia.com_mig-1g.10gb")]
#[case::underscore_in_the_name(
    "openshift.io/sriov_netdevice",
    "numa-devices.openshift.io_sriov_netdevice"
)]
#[case::shared_rdma("rdma/rdma_shared_device_a", "numa-devices.rdma_rdma_shared_device_a")]
fn device_keys_round_trip(#[case] resource: &str, #[case] name: &str) {
    assert_eq!(device_key_name(resource).as_deref(), Some(name));
    assert_eq!(device_resource_of(name).as_deref(), Some(resource));
    let prefix = LabelPrefix::default();
    let key = prefix.device_key(resource).unwrap();
    assert_eq!(key, format!("gpu-topology.io/{name}"));
    assert_eq!(prefix.parse_device_key(&key).as_deref(), Some(resource));
    assert_eq!(prefix.parse_key(&key), None);
}

#[rstest]
#[case::no_domain("gpu")]
#[case::uppercase_domain("NVIDIA.com/gpu")]
#[case::underscore_in_the_domain("my_vendor.com/nic")]
#[case::two_slashes("rdma/ib/x")]
#[case::name_ends_with_a_dot("rdma/ib.")]
#[case::too_long_for_a_label_name("example.com/a-device-resource-name-much-too-long-for-a-label")]
fn resources_that_cannot_be_a_label_have_no_key(#[case] resource: &str) {
    assert_eq!(device_key_name(resource), None);
}

#[rstest]
#[case::not_ours("numa-gpus")]
#[case::no_separator("numa-devices.rdma")]
#[case::empty_name("numa-devices.rdma_")]
#[case::bad_domain("numa-devices.-rdma_ib")]
fn names_that_are_no_device_key(#[case] name: &str) {
    assert_eq!(device_resource_of(name), None);
}

#[test]
fn device_counts_round_trip_and_stay_valid_labels() {
    let prefix = LabelPrefix::default();
    let node = hgx_with_devices();
    let labels = node.to_labels(&prefix);
    assert_eq!(labels["gpu-topology.io/numa-devices.rdma_ib"], "4.4");
    assert_eq!(
        labels["gpu-topology.io/numa-devices.nvidia.com_mig-1g.10gb"],
        "7.0"
    );
    for (key, value) in &labels {
        assert!(is_label_value(value), "{key}={value:?}");
        let name = key.split_once('/').unwrap().1;
        assert!(name.len() <= MAX_LABEL_VALUE_LEN, "{name}");
        assert!(is_label_value(name), "{name}");
    }
    let read = NodeTopology::from_labels(
        &prefix,
        labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .unwrap();
    assert_eq!(read, node);
    // The names without a prefix round-trip too (the fleet summary's form).
    let mut named = NodeTopology::default();
    for (name, value) in node.named_values() {
        named.set_named(&name, &name, &value).unwrap();
    }
    assert_eq!(named, node);
}

/// Device counts are model facts: an unreadable value leaves the
/// resource unknown and the node readable.
#[rstest]
#[case::word("many")]
#[case::empty_entry("4..4")]
#[case::signed("-1.4")]
fn unreadable_device_counts_are_unknown(#[case] value: &str) {
    let labels = [
        ("gpu-topology.io/gpus", "8"),
        ("gpu-topology.io/numa-devices.rdma_ib", value),
    ];
    let parsed = NodeTopology::from_labels(&LabelPrefix::default(), labels).unwrap();
    assert_eq!(parsed.gpus, Some(8));
    assert!(parsed.devices.is_empty());
}

/// Device counts are part of the shape; nodes without any keep the
/// digest they had before device resources were published.
#[test]
fn device_counts_shape_the_node() {
    let node = hgx_with_devices();
    let mut moved = node.clone();
    moved.devices.insert("rdma/ib".to_owned(), vec![8, 0]);
    assert_ne!(moved.shape_id(), node.shape_id());
    let without = NodeTopology {
        devices: BTreeMap::new(),
        ..node.clone()
    };
    let plain = NodeTopology {
        numa_gpus: Some(vec![4, 4]),
        ..NodeTopology::default()
    };
    assert_eq!(without.shape_id(), plain.shape_id());
}

#[rstest]
#[case::default("gpu-topology.io")]
#[case::single_label("gpu")]
#[case::nested("topology.gpu.example.com")]
fn valid_prefixes(#[case] prefix: &str) {
    assert_eq!(LabelPrefix::new(prefix).unwrap().as_str(), prefix);
}

#[rstest]
#[case::empty("")]
#[case::uppercase("GPU-Topology.io")]
#[case::slash("gpu-topology.io/x")]
#[case::leading_dot(".gpu-topology.io")]
#[case::double_dot("gpu..io")]
#[case::leading_dash("-gpu.io")]
#[case::underscore("gpu_topology.io")]
fn invalid_prefixes(#[case] prefix: &str) {
    let err = LabelPrefix::new(prefix).unwrap_err();
    assert!(err.to_string().contains(&format!("{prefix:?}")), "{err}");
}

#[test]
fn too_long_prefix_is_rejected() {
    let long = vec!["a".repeat(63); 5].join(".");
    assert!(LabelPrefix::new(&long).is_err());
}

#[test]
fn every_label_value_is_a_valid_kubernetes_label_value() {
    let labels = dgx_a100().to_labels(&LabelPrefix::default());
    assert_eq!(labels.len(), LabelKey::ALL.len());
    for (key, value) in &labels {
        assert!(is_label_value(value), "{key}={value:?}");
        // The name part of a key is itself limited to 63 characters.
        let name = key.split_once('/').unwrap().1;
        assert!(name.len() <= MAX_LABEL_VALUE_LEN, "{name}");
    }
}

#[rstest]
#[case::empty("", true)]
#[case::word("single-numa-node", true)]
#[case::list("4.4", true)]
#[case::leading_dash("-4", false)]
#[case::trailing_dot("4.", false)]
#[case::slash("a/b", false)]
#[case::too_long(&"a".repeat(64), false)]
fn label_values(#[case] value: &str, #[case] valid: bool) {
    assert_eq!(is_label_value(value), valid);
}

/// Names, kinds and roles are declared once per key; these keep the
/// declarations consistent with each other.
#[test]
fn every_key_round_trips_its_name_and_value_kind() {
    for key in LabelKey::ALL {
        assert_eq!(LabelKey::from_name(key.name()), Some(key));
        let node = dgx_a100();
        let value = node.value(key).unwrap_or_else(|| panic!("{key:?} unset"));
        let mut read = NodeTopology::default();
        read.set_strictly(key, key.name(), &value).unwrap();
        assert_eq!(read.value(key), Some(value), "{key:?}");
        assert_eq!(
            key.shapes(),
            !matches!(key.role(), LabelRole::Informational | LabelRole::Identity)
        );
    }
}
