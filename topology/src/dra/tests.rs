//! Unit tests of the DRA devices and classes: the CEL selectors read into
//! matchers, the devices grouped as the summarizer groups them and read as
//! the policy reads them. Kept apart from `dra.rs` so the production code
//! stays short (issue #36).

use super::classes::read_expression;
use super::*;
use rstest::rstest;
use serde_json::json;

#[rstest]
#[case::nvidia_gpu(
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    Some("gpu.nvidia.com"), vec![("gpu.nvidia.com/type", Atom::String("gpu".into()))], false
)]
#[case::intel_double_quotes("device.driver == \"gpu.intel.com\"", Some("gpu.intel.com"), vec![], false)]
#[case::an_or_is_not_read(
    "device.attributes[\"gpu.intel.com\"].driver == 'vfio-pci' || device.attributes[\"gpu.intel.com\"].driver == 'xe-vfio-pci'",
    None, vec![], true
)]
// deviceclasses/nics.yaml `rdma-net`: read as written, an attribute
// `bool` of domain `dra.rdma`, which dranet does not publish.
#[case::an_attribute_no_driver_publishes(
    "device.driver == \"dra.net\" && device.attributes[\"dra.rdma\"].bool == true",
    Some("dra.net"), vec![("dra.rdma/bool", Atom::Bool(true))], false
)]
#[case::a_rdma_flag(
    "device.driver == \"dra.net\" && device.attributes[\"dra.net\"].rdma == true",
    Some("dra.net"), vec![("dra.net/rdma", Atom::Bool(true))], false
)]
fn class_selectors_are_read_clause_by_clause(
    #[case] expression: &str,
    #[case] driver: Option<&str>,
    #[case] equals: Vec<(&str, Atom)>,
    #[case] narrower: bool,
) {
    let mut selector = ClassSelector::default();
    read_expression(expression, &mut selector);
    let equals: Vec<(String, Atom)> = equals
        .into_iter()
        .map(|(name, atom)| (name.to_owned(), atom))
        .collect();
    assert_eq!(
        selector,
        ClassSelector {
            driver: driver.map(str::to_owned),
            equals,
            narrower,
            extended_resource_name: None,
        }
    );
}

fn slice(node: &str, pool: &str, generation: i64, count: i64, numa: &[i64]) -> serde_json::Value {
    json!({"spec": {
        "driver": "gpu.nvidia.com", "nodeName": node,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": numa.iter().map(|n| json!({"name": "gpu", "attributes": {
            "type": {"string": "gpu"},
            "productName": {"string": "dropped"},
            "resource.kubernetes.io/numaNode": {"int": n}
        }})).collect::<Vec<_>>()
    }})
}

#[test]
fn slices_group_nodes_by_devices_and_keep_the_newest_generation() {
    let list = json!({"items": [
        slice("a", "a", 1, 1, &[0, 0, 1, 1]),
        slice("b", "b", 2, 1, &[0, 0, 1, 1]),
        slice("b", "b", 1, 1, &[0]),
        slice("c", "c", 3, 2, &[0]),
    ]});
    let classes = BTreeMap::from([(
        "gpu.nvidia.com".to_owned(),
        ClassSelector {
            driver: Some("gpu.nvidia.com".into()),
            equals: vec![("gpu.nvidia.com/type".into(), Atom::String("gpu".into()))],
            ..ClassSelector::default()
        },
    )]);
    let mut builder = DraBuilder::new(&classes);
    builder.add_list(list.to_string().as_bytes()).unwrap();
    let devices = builder.finish();
    assert!(devices.unattached.is_empty());
    let groups = &devices.groups;
    assert_eq!(groups.len(), 2);
    let published = |g: &DeviceGroup| g.devices.iter().map(|c| c.count).sum::<u32>();
    let four = groups.iter().find(|g| published(g) == 4).unwrap();
    assert_eq!(
        four.devices.iter().map(|c| c.count).collect::<Vec<_>>(),
        [2, 2],
        "identical devices are counted, not copied"
    );
    assert_eq!(
        (four.nodes, four.examples.as_slice()),
        (2, ["a".to_owned(), "b".to_owned()].as_slice())
    );
    assert_eq!(
        four.devices[0].device.attributes.len(),
        2,
        "productName is dropped"
    );
    let half = groups.iter().find(|g| g.examples == ["c"]).unwrap();
    assert_eq!(
        half.incomplete_drivers,
        BTreeSet::from(["gpu.nvidia.com".to_owned()])
    );
    // The summary's text reads back as the same groups.
    let text = devices.to_summary_text();
    assert_eq!(DraDevices::from_summary_text(&text).unwrap(), devices);
    assert!(
        text.contains("\"count\":2"),
        "identical devices are counted once: {text}"
    );
}

#[rstest]
#[case::int(json!({"int": 1}), Some(vec![Atom::Int(1)]))]
#[case::list(json!({"ints": [0, 1]}), Some(vec![Atom::Int(0), Atom::Int(1)]))]
#[case::two_fields(json!({"int": 1, "string": "x"}), None)]
#[case::none(json!({}), None)]
#[case::null_is_unset(json!({"int": null, "string": "x"}), Some(vec![Atom::String("x".into())]))]
#[case::an_unknown_field_passed_over(json!({"version": "1.2.3", "future": 1}), Some(vec![Atom::Version("1.2.3".into())]))]
#[case::an_empty_list(json!({"strings": []}), None)]
fn an_attribute_value_has_exactly_one_field(
    #[case] raw: serde_json::Value,
    #[case] atoms: Option<Vec<Atom>>,
) {
    assert_eq!(attribute_value(raw), Ok(atoms.map(AttributeValue)));
}

/// (attribute or capacity, the error): a type the API server never
/// stores is named, and the whole list is then unreadable.
#[rstest]
#[case::an_int_as_text(json!({"attributes": {"numa": {"int": "0"}}}), "device attribute \"gpu.example.com/numa\": `int`: \"0\" is not an integer")]
#[case::a_fraction(json!({"attributes": {"numa": {"int": 0.5}}}), "device attribute \"gpu.example.com/numa\": `int`: 0.5 is not an integer")]
#[case::a_list_element(json!({"attributes": {"ids": {"ints": [1, true]}}}), "device attribute \"gpu.example.com/ids\": `ints`: true is not an integer")]
#[case::not_an_object(json!({"attributes": {"numa": 0}}), "device attribute \"gpu.example.com/numa\": 0 is not an object")]
#[case::a_capacity_number(json!({"allowMultipleAllocations": true, "capacity": {"memory": {"value": 64}}}), "device capacity \"gpu.example.com/memory\": `value`: 64 is not a string")]
fn a_value_of_the_wrong_type_is_named(#[case] device: serde_json::Value, #[case] problem: &str) {
    let list = json!({"items": [{"spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1}, "devices": [device]}}]});
    let mut builder = DraBuilder::new(&BTreeMap::new());
    assert_eq!(
        builder.add_list(list.to_string().as_bytes()),
        Err(format!("the ResourceSlice list cannot be read: {problem}"))
    );
}

/// (DeviceClass list, its classes or the error): `null` is unset, and a
/// type the API server never stores is named.
#[rstest]
#[case::no_items(json!({}), Ok(vec![]))]
#[case::nulls_are_unset(json!({"items": [{"metadata": {"name": "gpu"}, "spec": {"selectors": null, "extendedResourceName": null}}]}), Ok(vec![("gpu", None)]))]
#[case::an_extended_resource(json!({"items": [{"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/gpu"}}]}), Ok(vec![("gpu", Some("example.com/gpu"))]))]
#[case::items_not_a_list(json!({"items": {}}), Err("items: {} is not a list"))]
#[case::a_class_not_an_object(json!({"items": [1]}), Err("items[0]: 1 is not an object"))]
#[case::a_name_not_a_string(json!({"items": [{"metadata": {"name": 7}}]}), Err("items[0].metadata.name: 7 is not a string"))]
#[case::an_expression_not_a_string(json!({"items": [{"spec": {"selectors": [{"cel": {"expression": true}}]}}]}), Err("items[0].spec.selectors[].cel.expression: true is not a string"))]
#[case::not_an_object(json!([]), Err("[] is not an object"))]
fn a_device_class_list_reads_or_names_what_does_not(
    #[case] list: serde_json::Value,
    #[case] expected: Result<Vec<(&str, Option<&str>)>, &str>,
) {
    let read = parse_classes(list.to_string().as_bytes()).map(|classes| {
        classes
            .into_iter()
            .map(|(name, class)| (name, class.extended_resource_name))
            .collect::<Vec<_>>()
    });
    let expected = expected
        .map(|classes| {
            classes
                .into_iter()
                .map(|(name, resource)| (name.to_owned(), resource.map(str::to_owned)))
                .collect()
        })
        .map_err(|problem| format!("the DeviceClass list cannot be read: {problem}"));
    assert_eq!(read, expected);
}

#[rstest]
#[case::nvidia_fabric_manager("gpu.nvidia.com/partition2", Some(2))]
#[case::eight("gpu.nvidia.com/partition8", Some(8))]
#[case::no_size("gpu.nvidia.com/partition", None)]
#[case::zero("gpu.nvidia.com/partition0", None)]
#[case::not_a_number("gpu.nvidia.com/partitionID", None)]
#[case::another_name("gpu.nvidia.com/gpuModuleId", None)]
fn a_partition_attribute_names_its_size(#[case] name: &str, #[case] size: Option<u32>) {
    assert_eq!(partition_size(name), size);
}

/// The fixtures' DeviceClass shapes: the NVIDIA class with its
/// extendedResourceName, and dra-driver-cpu's.
fn classes_with_mapping() -> BTreeMap<String, ClassSelector> {
    let list = json!({"items": [
        {"metadata": {"name": "gpu.nvidia.com"}, "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
            "extendedResourceName": "nvidia.com/gpu"}},
        {"metadata": {"name": "vfio.gpu.nvidia.com"}, "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'"}}]}},
        {"metadata": {"name": "dra.cpu"}, "spec": {
            "selectors": [{"cel": {"expression": "device.driver == \"dra.cpu\""}}]}}
    ]});
    parse_classes(list.to_string().as_bytes()).unwrap()
}

#[test]
fn a_class_keeps_its_extended_resource_name() {
    let classes = classes_with_mapping();
    assert_eq!(
        classes["gpu.nvidia.com"].extended_resource_name.as_deref(),
        Some("nvidia.com/gpu")
    );
    assert_eq!(classes["dra.cpu"].extended_resource_name, None);
}

#[test]
fn shared_devices_keep_their_capacity_and_vfio_devices_their_partitions() {
    // dra-cpu-grouped.yaml's first device, and the VFIO device of the
    // NVIDIA driver's reference page (its Fabric Manager attributes).
    let list = json!({"items": [
        {"spec": {"driver": "dra.cpu", "nodeName": "n", "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
          "devices": [{"name": "cpudevnuma000", "allowMultipleAllocations": true,
            "attributes": {"resource.kubernetes.io/numaNode": {"int": 0}, "dra.cpu/numCPUs": {"int": 64}},
            "capacity": {"dra.cpu/cpu": {"value": "64"}, "bogus": {"value": "x"}}}]}},
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n", "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
          "devices": [{"name": "gpu-vfio-0",
            "attributes": {"type": {"string": "vfio"}, "gpuModuleId": {"int": 1},
              "partition2": {"int": 4}, "partition8": {"int": 1},
              "resource.kubernetes.io/numaNode": {"int": 0}},
            "capacity": {"addressableMemory": {"value": "40Gi"}}}]}}
    ]});
    let mut builder = DraBuilder::new(&classes_with_mapping());
    builder.add_list(list.to_string().as_bytes()).unwrap();
    let devices = builder.finish();
    let group = &devices.groups[0];
    let cpu = &group
        .devices
        .iter()
        .find(|d| d.device.driver == "dra.cpu")
        .unwrap()
        .device;
    assert_eq!(
        cpu.capacity,
        BTreeMap::from([("dra.cpu/cpu".to_owned(), "64".to_owned())]),
        "a shared device keeps the capacities that read, fully qualified"
    );
    assert_eq!(
        cpu.capacity("dra.cpu/cpu"),
        crate::quantity::Quantity::parse("64").ok()
    );
    let vfio = &group
        .devices
        .iter()
        .find(|d| d.device.driver == "gpu.nvidia.com")
        .unwrap()
        .device;
    assert!(
        vfio.capacity.is_empty(),
        "an exclusive device's capacity is not consumed"
    );
    let kept: Vec<&str> = vfio.attributes.keys().map(String::as_str).collect();
    assert_eq!(
        kept,
        [
            "gpu.nvidia.com/partition2",
            "gpu.nvidia.com/partition8",
            "gpu.nvidia.com/type",
            "resource.kubernetes.io/numaNode"
        ]
    );
    // The classes travel with the devices, so the summary reads back whole.
    assert_eq!(devices.classes.as_ref(), Some(&classes_with_mapping()));
    let text = devices.to_summary_text();
    assert_eq!(DraDevices::from_summary_text(&text).unwrap(), devices);
}

#[test]
fn an_extended_resource_counts_the_nodes_that_publish_its_class() {
    let gpu = |node: &str| {
        json!({"spec": {"driver": "gpu.nvidia.com", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}})
    };
    let cpu = json!({"spec": {"driver": "dra.cpu", "nodeName": "cpu-only",
        "pool": {"name": "cpu-only", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "cpudev000", "attributes": {}}]}});
    let list = json!({"items": [gpu("a"), gpu("b"), gpu("c"), gpu("d"), cpu]});
    let mut builder = DraBuilder::new(&classes_with_mapping());
    builder.add_list(list.to_string().as_bytes()).unwrap();
    let mapped = builder.finish().extended_resources();
    assert_eq!(
        mapped.0,
        vec![ExtendedResource {
            resource: "nvidia.com/gpu".into(),
            class: "gpu.nvidia.com".into(),
            nodes: 4,
            examples: vec!["a".into(), "b".into(), "c".into()],
        }]
    );
    assert_eq!(mapped.of("nvidia.com/gpu").count(), 1);
    assert_eq!(mapped.of("amd.com/gpu").count(), 0);
    let text = mapped.to_summary_text();
    assert_eq!(ExtendedResources::from_summary_text(&text).unwrap(), mapped);
    assert!(ExtendedResources::from_summary_text("{").is_err());
}

#[test]
fn a_summary_without_classes_maps_nothing() {
    let devices = DraDevices::from_summary_text(r#"{"groups":[]}"#).unwrap();
    assert_eq!(devices.classes, None);
    assert!(devices.extended_resources().is_empty());
}

/// A group of `counts` devices of one driver (distinct by a NUMA attribute).
fn group_of(counts: &[u32]) -> DeviceGroup {
    DeviceGroup {
        nodes: 1,
        examples: vec!["a".into()],
        devices: counts
            .iter()
            .enumerate()
            .map(|(numa, count)| Counted {
                count: *count,
                device: Device {
                    driver: "gpu.nvidia.com".into(),
                    attributes: BTreeMap::from([(
                        STANDARD_NUMA_ATTRIBUTE.to_owned(),
                        AttributeValue(vec![Atom::Int(numa as i64)]),
                    )]),
                    shared: false,
                    capacity: BTreeMap::new(),
                },
            })
            .collect(),
        incomplete_drivers: BTreeSet::new(),
    }
}

// Issue #35: the ResourceSlice list is held to the summary's cap of devices
// per group, and a summary past it does not read, naming the cap.
#[rstest]
#[case::a_group_at_the_cap(vec![group_of(&[1 << 15, 1 << 15])], vec![], None)]
#[case::a_group_one_past_the_cap(
    vec![group_of(&[1 << 15, (1 << 15) + 1])], vec![],
    Some("65537 devices in one group of nodes, more than the 65536 read per group")
)]
#[case::unattached_at_the_cap(vec![group_of(&[1])], group_of(&[1 << 16]).devices, None)]
#[case::unattached_one_past_the_cap(
    vec![], group_of(&[1 << 16, 1]).devices,
    Some("65537 devices in one group of nodes, more than the 65536 read per group")
)]
fn groups_past_the_device_cap_are_named(
    #[case] groups: Vec<DeviceGroup>,
    #[case] unattached: Vec<Counted>,
    #[case] problem: Option<&str>,
) {
    let devices = DraDevices {
        classes: None,
        groups,
        unattached,
    };
    assert_eq!(devices.within_group_cap().err().as_deref(), problem);
    let read = DraDevices::from_summary_text(&devices.to_summary_text());
    match problem {
        None => assert_eq!(read, Ok(devices)),
        Some(problem) => assert!(read.is_err_and(|error| error.contains(problem))),
    }
}
