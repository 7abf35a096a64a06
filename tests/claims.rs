//! A GPU claim's plan (`decide::claim::plan`) over the devices DRA drivers
//! publish, natively: the ResourceSlices and DeviceClasses of
//! `e2e-tests/tests/fixtures/dra/` (provenance in its `SOURCES.md`), each
//! published device made `copies` devices of its node, and the claims of
//! its `claims/` folder.

use gpu_topology::dra::{parse_classes, DraBuilder};
use gpu_topology_policy::cluster::dra::DraInventory;
use gpu_topology_policy::decide::claim::completion::{aligned_requests, CannotAlign, Completion};
use gpu_topology_policy::decide::claim::fit::ClaimFit;
use gpu_topology_policy::decide::claim::plan;
use gpu_topology_policy::request::claim::{DeviceClaim, RESOURCE_CLAIM_TEMPLATE};
use gpu_topology_policy::settings::Config;
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
    let config = Config::default();
    let aligned = aligned_requests(claim, &config.dra).expect("a GPU claim");
    let plan = plan(claim, aligned, &config, inventory);
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
