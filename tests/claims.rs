//! A GPU claim's plan (`decide::claim::plan`) over the devices DRA drivers
//! publish, natively: the ResourceSlices and DeviceClasses of
//! `e2e-tests/tests/fixtures/dra/` (provenance in its `SOURCES.md`), each
//! published device made `copies` devices of its node, and the claims of
//! its `claims/` folder.

use gpu_topology::dra::{parse_classes, DraBuilder};
use gpu_topology_policy::cluster::dra::DraInventory;
use gpu_topology_policy::decide::claim::completion::{aligned_requests, CannotAlign, Completion};
use gpu_topology_policy::decide::claim::fit::{claim_fit, ClaimFit, Shortfall};
use gpu_topology_policy::decide::claim::plan;
use gpu_topology_policy::request::claim::{DeviceClaim, RESOURCE_CLAIM_TEMPLATE};
use gpu_topology_policy::settings::{parse_settings, Config};
use rstest::rstest;
use serde_json::{json, Value};
use std::path::PathBuf;

fn fixture_documents(path: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("e2e-tests/tests/fixtures/dra")
        .join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::Deserializer::from_str(&text)
        .map(|document| {
            let value: Value = serde::Deserialize::deserialize(document).unwrap();
            value
        })
        .filter(|value| !value.is_null())
        .collect()
}

/// The slices of a fixture (one ResourceSlice, or a `List` of them), each
/// device `copies` times, on node `node` when given (its pool named so).
fn slices(path: &str, copies: usize, node: Option<&str>) -> Vec<Value> {
    let mut items = Vec::new();
    for document in fixture_documents(path) {
        let list = match document["kind"].as_str() {
            Some("List") => document["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![document],
        };
        for mut slice in list {
            let devices = slice["spec"]["devices"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            slice["spec"]["devices"] = devices
                .iter()
                .flat_map(|device| std::iter::repeat_n(device.clone(), copies))
                .enumerate()
                .map(|(index, mut device)| {
                    device["name"] = format!("device-{index}").into();
                    device
                })
                .collect();
            if let Some(node) = node {
                slice["spec"]["nodeName"] = node.into();
                slice["spec"]["pool"]["name"] = node.into();
            }
            items.push(slice);
        }
    }
    items
}

/// Slice fixtures: (file, copies of each device, the node to move them to).
type SliceFiles<'a> = &'a [(&'a str, usize, Option<&'a str>)];

fn inventory(slice_files: SliceFiles, class_files: &[&str]) -> DraInventory {
    let classes: Vec<Value> = class_files
        .iter()
        .flat_map(|file| fixture_documents(&format!("deviceclasses/{file}")))
        .collect();
    let classes = parse_classes(json!({ "items": classes }).to_string().as_bytes()).unwrap();
    let items: Vec<Value> = slice_files
        .iter()
        .flat_map(|(file, copies, node)| slices(&format!("resourceslices/{file}"), *copies, *node))
        .collect();
    let mut builder = DraBuilder::new(&classes);
    builder
        .add_list(json!({ "items": items }).to_string().as_bytes())
        .unwrap();
    DraInventory {
        classes,
        devices: builder.finish(),
    }
}

/// The first ResourceClaimTemplate of a claims fixture.
fn template(file: &str) -> DeviceClaim {
    let template = fixture_documents(&format!("claims/{file}"))
        .into_iter()
        .find(|document| document["kind"] == "ResourceClaimTemplate")
        .unwrap();
    DeviceClaim::of_object(&template, &RESOURCE_CLAIM_TEMPLATE).unwrap()
}

/// The plan in a few words: the written claim's fit, then what it lacks.
fn outcome(claim: &DeviceClaim, inventory: &DraInventory) -> String {
    outcome_with(claim, inventory, &Config::default())
}

fn outcome_with(claim: &DeviceClaim, inventory: &DraInventory, config: &Config) -> String {
    let aligned = aligned_requests(claim, &config.dra).expect("a GPU claim");
    let plan = plan(claim, aligned, config, inventory);
    let written = match plan.written {
        ClaimFit::Fits => "fits".to_owned(),
        ClaimFit::NoFit(_) => "no node".to_owned(),
        ClaimFit::NoDevices(classes) => format!("no devices of {}", classes.join(", ")),
        ClaimFit::Unknown(why) => format!("unknown ({why:?})"),
    };
    let completion = match (&plan.completion, &plan.completed) {
        (Completion::Add(constraint), Some(ClaimFit::Fits)) => {
            format!("add {:?} over {:?}", constraint.rule, constraint.requests)
        }
        (Completion::Add(_), completed) => format!("add, then {completed:?}"),
        (Completion::Cannot(CannotAlign::NoCommonAttribute { devices, .. }), _) => {
            format!("cannot: {devices} devices without a NUMA attribute")
        }
        (other, _) => format!("{other:?}"),
    };
    format!("{written}; {completion}")
}

#[rstest]
#[case::two_gpus_of_the_reference_page_on_one_numa_node(
    &[("nvidia-gpu-doc.yaml", 2, None)],
    "fits; add MatchAttribute(\"resource.kubernetes.io/numaNode\") over [\"gpu\"]"
)]
#[case::a_list_valued_numa_node_matches_on_intersection(
    &[("nvidia-gpu-numa-list-doc.yaml", 2, None)],
    "fits; add MatchAttribute(\"resource.kubernetes.io/numaNode\") over [\"gpu\"]"
)]
#[case::vgpus_without_a_numa_node_are_never_constrained(
    &[("nvidia-vks-grid-a100-10c.yaml", 2, None)],
    "fits; cannot: 2 devices without a NUMA attribute"
)]
#[case::one_gpu_per_node_cannot_give_two(
    &[("nvidia-gpu-doc.yaml", 1, None), ("nvidia-vks-grid-a100-10c.yaml", 1, None)],
    "no node; cannot: 1 devices without a NUMA attribute"
)]
#[case::mig_devices_are_not_full_gpus(
    &[("nvidia-mig-doc.yaml", 4, None)],
    "no devices of gpu.nvidia.com; Cannot(Unpublished([\"gpu.nvidia.com\"]))"
)]
fn the_nvidia_quick_start_template_against_published_devices(
    #[case] slice_files: SliceFiles,
    #[case] expected: &str,
) {
    let inventory = inventory(slice_files, &["nvidia.yaml"]);
    let claim = template("nvidia-two-gpus-template-v1.yaml");
    assert_eq!(outcome(&claim, &inventory), expected);
}

/// dra-driver-cpu's grouped mode publishes one device per NUMA node that
/// many claims share (`allowMultipleAllocations`): a GPU and a CPU request
/// are aligned together, and the shared CPU device never runs short.
#[test]
fn a_gpu_and_dra_driver_cpu_request_are_aligned_together() {
    let inventory = inventory(
        &[
            ("nvidia-gpu-doc.yaml", 2, Some("hgx-0")),
            ("dra-cpu-grouped.yaml", 1, Some("hgx-0")),
        ],
        &["nvidia.yaml", "dra-cpu.yaml"],
    );
    let claim = DeviceClaim::of_object(
        &json!({"spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
            {"name": "cpu", "exactly": {"deviceClassName": "dra.cpu",
                "capacity": {"requests": {"dra.cpu/cpu": "8"}}}}
        ]}}}}),
        &RESOURCE_CLAIM_TEMPLATE,
    )
    .unwrap();
    assert_eq!(
        outcome(&claim, &inventory),
        "fits; add MatchAttribute(\"resource.kubernetes.io/numaNode\") over [\"gpu\", \"cpu\"]"
    );
}

/// A template's claim, from its `devices` object.
fn devices(devices: Value) -> DeviceClaim {
    DeviceClaim::of_object(
        &json!({"spec": {"spec": {"devices": devices}}}),
        &RESOURCE_CLAIM_TEMPLATE,
    )
    .unwrap()
}

fn config(settings: Value) -> Config {
    parse_settings(settings.to_string().as_bytes())
        .unwrap()
        .config()
        .unwrap()
}

/// Under `topology.alignment: nvlink` a GPU claim is constrained on the
/// NVIDIA driver's Fabric Manager partition (`partition<N>`, VFIO devices
/// only): the smallest partition that holds its GPUs. Full GPUs publish
/// none, so nothing is added and the plan says why.
#[rstest]
#[case::two_vfio_gpus_share_a_partition_of_two(
    "vfio.gpu.nvidia.com",
    2,
    "fits; add MatchAttribute(\"gpu.nvidia.com/partition2\") over [\"gpus\"]"
)]
#[case::three_take_a_partition_of_four(
    "vfio.gpu.nvidia.com",
    3,
    "fits; add MatchAttribute(\"gpu.nvidia.com/partition4\") over [\"gpus\"]"
)]
#[case::eight_take_the_whole_board(
    "vfio.gpu.nvidia.com",
    8,
    "fits; add MatchAttribute(\"gpu.nvidia.com/partition8\") over [\"gpus\"]"
)]
#[case::one_gpu_needs_no_partition("vfio.gpu.nvidia.com", 1, "fits; NotNeeded")]
#[case::full_gpus_publish_no_partition(
    "gpu.nvidia.com",
    2,
    "fits; Cannot(NoInterconnectAttribute { classes: [\"gpu.nvidia.com\"], gpus: 2 })"
)]
fn nvlink_alignment_uses_the_fabric_manager_partition(
    #[case] class: &str,
    #[case] count: u32,
    #[case] expected: &str,
) {
    let inventory = inventory(
        &[
            ("nvidia-vfio-fabric-manager.yaml", 1, None),
            ("nvidia-gpu-doc.yaml", 4, Some("hgx-vfio-0")),
        ],
        &["nvidia.yaml"],
    );
    let claim = devices(json!({"requests": [
        {"name": "gpus", "exactly": {"deviceClassName": class, "count": count}}
    ]}));
    let nvlink = config(json!({"topology": {"alignment": "nvlink"}}));
    assert_eq!(outcome_with(&claim, &inventory, &nvlink), expected);
}

/// The partition constraint counts GPUs per partition ID: two requests of
/// 2 VFIO GPUs each under one `partition2` constraint need 4 GPUs with one
/// ID, which no 2-GPU partition has; a `partition4` constraint holds them.
#[rstest]
#[case::partition2_holds_two_not_four("gpu.nvidia.com/partition2", Some((4, 2)))]
#[case::partition4_holds_four("gpu.nvidia.com/partition4", None)]
fn a_partition_constraint_counts_gpus_per_partition(
    #[case] attribute: &str,
    #[case] short: Option<(u32, u32)>,
) {
    let inventory = inventory(
        &[("nvidia-vfio-fabric-manager.yaml", 1, None)],
        &["nvidia.yaml"],
    );
    let claim = devices(json!({
        "requests": [
            {"name": "a", "exactly": {"deviceClassName": "vfio.gpu.nvidia.com", "count": 2}},
            {"name": "b", "exactly": {"deviceClassName": "vfio.gpu.nvidia.com", "count": 2}}
        ],
        "constraints": [{"requests": ["a", "b"], "matchAttribute": attribute}]
    }));
    let fit = claim_fit(&claim, &inventory);
    match (fit, short) {
        (ClaimFit::Fits, None) => {}
        (ClaimFit::NoFit(groups), Some((needed, most))) => match &groups[0].1 {
            Shortfall::OneValue {
                needed: n, most: m, ..
            } => assert_eq!((*n, *m), (needed, most)),
            other => panic!("{other:?}"),
        },
        (fit, short) => panic!("{fit:?}, expected {short:?}"),
    }
}

/// dra-driver-cpu's grouped devices (64 CPUs per NUMA node, shared) beside
/// 2 GPUs on NUMA node 0 (`nvidia-gpu-doc.yaml`): a CPU request is counted
/// against one device's `dra.cpu/cpu`, on its own and under a NUMA
/// constraint with the GPUs.
#[rstest]
#[case::sixty_four_cpus_fit_one_numa_node("64", None, "fits")]
#[case::more_than_one_numa_node_offers(
    "65",
    None,
    "request \"cpu\" needs 65 of dra.cpu/cpu from one device, 64 at most"
)]
#[case::under_the_gpus_numa_constraint(
    "65",
    Some("resource.kubernetes.io/numaNode"),
    "request \"cpu\" needs 65 of dra.cpu/cpu from one device, 64 at most"
)]
#[case::eight_under_the_numa_constraint("8", Some("resource.kubernetes.io/numaNode"), "fits")]
fn a_grouped_cpu_request_is_counted_against_one_devices_capacity(
    #[case] cpus: &str,
    #[case] constraint: Option<&str>,
    #[case] expected: &str,
) {
    let inventory = inventory(
        &[
            ("nvidia-gpu-doc.yaml", 2, Some("hgx-0")),
            ("dra-cpu-grouped.yaml", 1, Some("hgx-0")),
        ],
        &["nvidia.yaml", "dra-cpu.yaml"],
    );
    let mut claim = json!({"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        {"name": "cpu", "exactly": {"deviceClassName": "dra.cpu",
            "capacity": {"requests": {"dra.cpu/cpu": cpus}}}}
    ]});
    if let Some(attribute) = constraint {
        claim["constraints"] = json!([{"requests": ["gpu", "cpu"], "matchAttribute": attribute}]);
    }
    let fit = match claim_fit(&devices(claim), &inventory) {
        ClaimFit::Fits => "fits".to_owned(),
        ClaimFit::NoFit(groups) => match &groups[0].1 {
            Shortfall::Capacity {
                request,
                capacity,
                needed,
                most,
                ..
            } => format!(
                "request {request:?} needs {needed} of {capacity} from one device, {} at most",
                most.map_or("none".to_owned(), |most| most.to_string())
            ),
            other => format!("{other:?}"),
        },
        other => format!("{other:?}"),
    };
    assert_eq!(fit, expected);
}

/// dra-driver-cpu's CPUs for the claim generated from a 2-GPU template
/// (`cpus::cpu_plan`), on a node of 2 GPUs (`nvidia-gpu-doc.yaml`, NUMA
/// node 0) and dra-driver-cpu's devices of `cpu_file` (`copies` each),
/// for a pod whose containers are `containers`, in a few words.
fn cpu_outcome(
    cpu_file: &str,
    copies: usize,
    claim: Value,
    containers: Value,
    settings: Value,
) -> String {
    use gpu_topology_policy::decide::claim::cpus::{cpu_plan, CannotAddCpus, CpuMode, CpuPlan};
    let inventory = cpu_inventory(cpu_file, copies);
    let claim = devices(claim);
    let config = config(settings);
    let aligned = aligned_requests(&claim, &config.dra).expect("a GPU claim");
    let spec = json!({ "containers": containers });
    match cpu_plan(&claim, &aligned, &spec, "gpus", &config, &inventory) {
        CpuPlan::NotApplicable => "not applicable".to_owned(),
        CpuPlan::Add(add) => format!(
            "add {} {} for {} over {:?}",
            add.request.cpus,
            match add.request.mode {
                CpuMode::Grouped => "grouped",
                CpuMode::Individual => "individual",
            },
            add.container,
            add.constraint.requests
        ),
        CpuPlan::Cannot(CannotAddCpus::NoFit(_)) => "cannot: no fit".to_owned(),
        CpuPlan::Cannot(cannot) => format!("cannot: {cannot:?}"),
    }
}

/// 2 GPUs on NUMA node 0 of node hgx-0, and dra-driver-cpu's devices of
/// `cpu_file` (`copies` each) there.
fn cpu_inventory(cpu_file: &str, copies: usize) -> DraInventory {
    inventory(
        &[
            ("nvidia-gpu-doc.yaml", 2, Some("hgx-0")),
            (cpu_file, copies, Some("hgx-0")),
        ],
        &["nvidia.yaml", "dra-cpu.yaml"],
    )
}

fn two_gpus() -> Value {
    json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]})
}

fn trainer(cpu: &str) -> Value {
    json!([{"name": "trainer", "resources": {"requests": {"cpu": cpu}, "claims": [{"name": "gpus"}]}}])
}

#[rstest]
#[case::one_container_with_whole_cpus(
    "dra-cpu-grouped.yaml", 1, two_gpus(), trainer("16"), json!({}),
    "add 16 grouped for container \"trainer\" over [\"gpu\", \"cpus\"]"
)]
#[case::one_cpu_device_per_cpu(
    "dra-cpu-individual.yaml", 8, two_gpus(), trainer("12"), json!({}),
    "add 12 individual for container \"trainer\" over [\"gpu\", \"cpus\"]"
)]
#[case::individual_cpus_past_32_devices(
    "dra-cpu-individual.yaml", 32, two_gpus(), trainer("31"), json!({}),
    "cannot: TooManyDevices { devices: 33 }"
)]
#[case::more_cpus_than_one_numa_node_offers(
    "dra-cpu-grouped.yaml", 1, two_gpus(), trainer("65"), json!({}), "cannot: no fit"
)]
#[case::two_containers_share_the_claim(
    "dra-cpu-grouped.yaml", 1, two_gpus(),
    json!([{"name": "a", "resources": {"requests": {"cpu": "4"}, "claims": [{"name": "gpus"}]}},
           {"name": "b", "resources": {"requests": {"cpu": "4"}, "claims": [{"name": "gpus"}]}}]),
    json!({}),
    "cannot: SharedBy([ContainerRef { kind: App, index: 0, name: \"a\" }, ContainerRef { kind: App, index: 1, name: \"b\" }])"
)]
#[case::the_container_takes_one_request(
    "dra-cpu-grouped.yaml", 1, two_gpus(),
    json!([{"name": "a", "resources": {"requests": {"cpu": "4"}, "claims": [{"name": "gpus", "request": "gpu"}]}}]),
    json!({}),
    "cannot: OneRequestOnly { container: ContainerRef { kind: App, index: 0, name: \"a\" }, request: \"gpu\" }"
)]
#[case::fractional_cpus(
    "dra-cpu-grouped.yaml", 1, two_gpus(), trainer("2500m"), json!({}),
    "cannot: NoWholeCpus { container: ContainerRef { kind: App, index: 0, name: \"trainer\" }, cpu: Some(\"2500m\") }"
)]
#[case::zero_cpus_are_no_cpus(
    "dra-cpu-grouped.yaml", 1, two_gpus(), trainer("0"), json!({}),
    "cannot: NoWholeCpus { container: ContainerRef { kind: App, index: 0, name: \"trainer\" }, cpu: None }"
)]
#[case::a_request_of_every_device_beside(
    "dra-cpu-grouped.yaml", 1,
    json!({"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        {"name": "nics", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}),
    trainer("8"), json!({}), "cannot: AllocatesAll(\"nics\")"
)]
#[case::an_authors_distinct_attribute_over_every_request(
    "dra-cpu-grouped.yaml", 1,
    json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
           "constraints": [{"distinctAttribute": "resource.kubernetes.io/pcieRoot"}]}),
    trainer("8"), json!({}),
    "cannot: DistinctOverAll(\"resource.kubernetes.io/pcieRoot\")"
)]
#[case::the_claim_asks_cpus_itself(
    "dra-cpu-grouped.yaml", 1,
    json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
        {"name": "mine", "exactly": {"deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "4"}}}}]}),
    trainer("8"), json!({}), "not applicable"
)]
#[case::every_gpu_of_the_node(
    "dra-cpu-grouped.yaml", 1,
    json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}),
    trainer("8"), json!({}), "not applicable"
)]
#[case::node_alignment_adds_nothing(
    "dra-cpu-grouped.yaml", 1, two_gpus(), trainer("8"),
    json!({"topology": {"alignment": "node"}}), "not applicable"
)]
#[case::validate_mode_adds_nothing(
    "dra-cpu-grouped.yaml", 1, two_gpus(), trainer("8"),
    json!({"qos": {"mode": "validate"}}), "not applicable"
)]
fn the_cpus_of_a_generated_claim(
    #[case] cpu_file: &str,
    #[case] copies: usize,
    #[case] claim: Value,
    #[case] containers: Value,
    #[case] settings: Value,
    #[case] expected: &str,
) {
    assert_eq!(
        cpu_outcome(cpu_file, copies, claim, containers, settings),
        expected
    );
}

/// A fleet summary written before capacities were kept holds grouped CPU
/// devices without `dra.cpu/cpu`: taking them for one CPU each would ask a
/// whole shared device per "CPU", so nothing is added.
#[test]
fn grouped_devices_without_their_capacity_are_not_taken_for_single_cpus() {
    use gpu_topology_policy::decide::claim::cpus::{cpu_plan, CannotAddCpus, CpuPlan};
    let mut inventory = cpu_inventory("dra-cpu-grouped.yaml", 1);
    for group in &mut inventory.devices.groups {
        for counted in &mut group.devices {
            counted.device.capacity.clear();
        }
    }
    let claim = devices(two_gpus());
    let config = Config::default();
    let aligned = aligned_requests(&claim, &config.dra).unwrap();
    let spec = json!({ "containers": trainer("8") });
    assert_eq!(
        cpu_plan(&claim, &aligned, &spec, "gpus", &config, &inventory),
        CpuPlan::Cannot(CannotAddCpus::UnknownMode)
    );
}

/// A `firstAvailable` GPU request of 4 GPUs, else 2: the partition must
/// hold the preferred 4, or that choice could never be allocated.
#[test]
fn an_nvlink_partition_holds_the_largest_first_available_choice() {
    let inventory = inventory(
        &[("nvidia-vfio-fabric-manager.yaml", 1, None)],
        &["nvidia.yaml"],
    );
    let claim = devices(json!({"requests": [{"name": "gpus", "firstAvailable": [
        {"name": "four", "deviceClassName": "vfio.gpu.nvidia.com", "count": 4},
        {"name": "two", "deviceClassName": "vfio.gpu.nvidia.com", "count": 2}
    ]}]}));
    let nvlink = config(json!({"topology": {"alignment": "nvlink"}}));
    assert_eq!(
        outcome_with(&claim, &inventory, &nvlink),
        "fits; add MatchAttribute(\"gpu.nvidia.com/partition4\") over [\"gpus\"]"
    );
}
