//! Properties of the policy's answer to generated ResourceClaims and
//! ResourceClaimTemplates, against the DRA fleet of the e2e session
//! `dra-hgx-h100-fleet` (2 HGX H100 nodes in the NVIDIA DRA driver's and
//! dranet's shapes):
//! - a completed claim is the admitted text with one constraint inserted:
//!   every other byte, unknown fields included, is kept, and removing the
//!   constraint gives back the admitted object;
//! - a second pass over a completed claim changes nothing;
//! - a claim the ResourceClaim controller generated for a pod, on nodes
//!   that run dra-driver-cpu (`dra-cpu-generated-claim-fleet`), is the
//!   generated text with one request and one constraint inserted, the
//!   request holding the CPUs of the one container that uses the claim;
//!   a second pass changes nothing.

use crate::common;

use common::{config, evaluate_request};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::{Decision, Verdict};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use serde_yaml::Value as Yaml;
use std::path::PathBuf;

const CASES: u32 = 512;

/// Answers the two DRA lists from the session file, by kind, as often as
/// asked (a property runs the policy many times).
struct DraFleet {
    device_classes: Vec<u8>,
    resource_slices: Vec<u8>,
}

impl DraFleet {
    fn load() -> Self {
        Self::load_session("dra-hgx-h100-fleet")
    }

    fn load_session(name: &str) -> Self {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("e2e-tests/scenarios/sessions/{name}.yml"));
        let session: Yaml = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let payload = |kind: &str| {
            session
                .as_sequence()
                .unwrap()
                .iter()
                .find(|exchange| {
                    exchange["request"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("kind: {kind}\n"))
                })
                .map(|exchange| {
                    exchange["response"]["payload"]
                        .as_str()
                        .unwrap()
                        .as_bytes()
                        .to_vec()
                })
                .unwrap()
        };
        DraFleet {
            device_classes: payload("DeviceClass"),
            resource_slices: payload("ResourceSlice"),
        }
    }
}

impl ClusterReader for DraFleet {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "DeviceClass" => Ok(self.device_classes.clone()),
            "ResourceSlice" => Ok(self.resource_slices.clone()),
            other => panic!("a claim made the policy list {other}"),
        }
    }

    /// No fleet summary: the session's 404.
    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "ConfigMap" => Err("configmaps \"gpu-topology-fleet\" not found".to_owned()),
            other => panic!("a claim made the policy get {other}"),
        }
    }
}

/// Fields the policy does not know, at any level: the API's newer fields
/// and an operator's tooling must survive.
fn unknown_fields() -> impl Strategy<Value = Map<String, Value>> {
    btree_map(
        "x-[a-z]{1,6}",
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[ -~é漢]{0,8}".prop_map(Value::from),
            Just(json!({"nested": [1, {"deep": "é"}], "empty": {}})),
        ],
        0..3,
    )
    .prop_map(|fields| fields.into_iter().collect())
}

fn with(mut object: Value, extra: Map<String, Value>) -> Value {
    object.as_object_mut().unwrap().extend(extra);
    object
}

const CLASSES: [&str; 4] = [
    "gpu.nvidia.com",
    "mig.nvidia.com",
    "dranet.net",
    "fpga.example.com",
];

fn request() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&CLASSES[..]),
        1u32..=5,
        any::<bool>(),
        unknown_fields(),
        unknown_fields(),
    )
        .prop_map(
            |(class, count, count_written, exact_extra, request_extra)| {
                let mut exactly = json!({"deviceClassName": class});
                if count_written || count > 1 {
                    exactly["count"] = count.into();
                }
                with(
                    json!({"exactly": with(exactly, exact_extra)}),
                    request_extra,
                )
            },
        )
}

fn constraint() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        "resource.kubernetes.io/numaNode",
        "resource.kubernetes.io/pcieRoot",
        "gpu.nvidia.com/productName",
    ])
    .prop_map(|attribute| json!({"matchAttribute": attribute}))
}

/// A claim or template: (kind, resource, object).
fn claim() -> impl Strategy<Value = (&'static str, &'static str, Value)> {
    (
        vec(request(), 1..4),
        prop::option::of(vec(constraint(), 0..2)),
        unknown_fields(),
        unknown_fields(),
        any::<bool>(),
    )
        .prop_map(|(requests, constraints, devices_extra, top_extra, template)| {
            let requests: Vec<Value> = requests
                .into_iter()
                .enumerate()
                .map(|(index, mut request)| {
                    request["name"] = format!("r{index}").into();
                    request
                })
                .collect();
            let mut devices = json!({"requests": requests});
            if let Some(constraints) = constraints {
                devices["constraints"] = constraints.into();
            }
            let devices = with(devices, devices_extra);
            let metadata = json!({"name": "generated", "namespace": "research",
                "labels": {"app": "train"}, "annotations": {"note": "ü"}});
            let (kind, resource, spec) = if template {
                (
                    "ResourceClaimTemplate",
                    "resourceclaimtemplates",
                    json!({"metadata": {"labels": {"app": "train"}}, "spec": {"devices": devices}}),
                )
            } else {
                ("ResourceClaim", "resourceclaims", json!({"devices": devices}))
            };
            let object = with(
                json!({"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": metadata, "spec": spec}),
                top_extra,
            );
            (kind, resource, object)
        })
}

fn admission(kind: &str, resource: &str, object: Value) -> Value {
    json!({
        "uid": "1", "name": "generated", "namespace": "research", "operation": "CREATE",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": kind},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": resource},
        "object": object,
    })
}

/// The mutated text, if the answer mutates.
fn mutated_text(decision: &Decision) -> Option<String> {
    match &decision.verdict {
        Verdict::Mutate(object) => Some(object.as_str().to_owned()),
        _ => None,
    }
}

/// `(before, inserted, after)` when `changed` is `original` with one run of
/// bytes inserted.
fn insertion<'a>(original: &str, changed: &'a str) -> Option<(usize, &'a str)> {
    let prefix = original
        .bytes()
        .zip(changed.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let added = changed.len().checked_sub(original.len())?;
    (changed.get(prefix + added..)? == original.get(prefix..)?)
        .then(|| (prefix, &changed[prefix..prefix + added]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn a_completed_claim_keeps_every_byte_and_a_second_pass_changes_nothing(
        (kind, resource, object) in claim(),
        validate in any::<bool>(),
    ) {
        let fleet = DraFleet::load();
        let settings = if validate { json!({"qos": {"mode": "validate"}}) } else { json!({}) };
        let config = config(settings);
        // The policy reads the object as the API server sends it: compact JSON.
        let request = admission(kind, resource, object.clone());
        let decision = evaluate_request(&request, &config, &fleet);
        let Some(text) = mutated_text(&decision) else {
            return Ok(());
        };
        prop_assert!(!validate, "qos.mode validate never changes a claim");
        let original = serde_json::to_string(&object).unwrap();
        let (at, inserted) = insertion(&original, &text)
            .ok_or_else(|| TestCaseError::fail(format!("not one insertion:\n{original}\n{text}")))?;
        let completed: Value = serde_json::from_str(&text).unwrap();
        // Taking the added constraint out gives back the admitted object.
        let devices_pointer = if kind == "ResourceClaim" { "/spec/devices" } else { "/spec/spec/devices" };
        let mut reverted = completed.clone();
        let devices = reverted.pointer_mut(devices_pointer).unwrap().as_object_mut().unwrap();
        let constraints = devices["constraints"].as_array_mut().unwrap();
        let added = constraints.pop().unwrap();
        if constraints.is_empty() && object.pointer(devices_pointer).unwrap().get("constraints").is_none() {
            devices.remove("constraints");
        }
        prop_assert_eq!(&reverted, &object, "inserted {} at byte {}", inserted, at);
        prop_assert_eq!(&added["matchAttribute"], "resource.kubernetes.io/numaNode");
        let again = evaluate_request(&admission(kind, resource, completed), &config, &fleet);
        prop_assert!(
            matches!(again.verdict, Verdict::Accept) && again.warnings.is_empty(),
            "a second pass answered {:?}", again
        );
    }
}

/// The property is not vacuous: a claim it generates (2 GPUs, unknown
/// fields at every level) is completed.
#[test]
fn a_two_gpu_claim_with_unknown_fields_is_completed() {
    let object = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "x-top": 1,
    "metadata": {"name": "generated", "namespace": "research"},
    "spec": {"devices": {"x-devices": [], "requests": [
        {"name": "r0", "x-request": {}, "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2, "x-exactly": "é"}}
    ]}}});
    let decision = evaluate_request(
        &admission("ResourceClaim", "resourceclaims", object.clone()),
        &config(json!({})),
        &DraFleet::load(),
    );
    let text = mutated_text(&decision).expect("completed");
    let original = serde_json::to_string(&object).unwrap();
    let (_, inserted) = insertion(&original, &text).unwrap();
    assert_eq!(
        inserted,
        r#","constraints":[{"requests":["r0"],"matchAttribute":"resource.kubernetes.io/numaNode"}]"#
    );
}

/// The generated-claim fleet, answering the owner pod's read with `pod`.
struct GeneratedClaimFleet {
    lists: DraFleet,
    pod: Value,
}

impl ClusterReader for GeneratedClaimFleet {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.lists.list_all_resources(request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "Pod" => {
                assert!(request.disable_cache, "the owner pod is read uncached");
                Ok(serde_json::to_vec(&self.pod).unwrap())
            }
            _ => self.lists.get_resource(request),
        }
    }
}

const OWNER_UID: &str = "5f0c5d1e-8a7b-4c3d-9e2f-1a2b3c4d5e6f";

/// The owner pod: containers with whole or fractional CPUs, some using
/// the claim `gpus` (whole, or one request of it).
fn owner_pod() -> impl Strategy<Value = Value> {
    vec(
        (
            prop::sample::select(vec!["1", "8", "16", "500m", "2.5", "64"]),
            prop::sample::select(vec![None, Some(None), Some(Some("gpu"))]),
        ),
        1..3,
    )
    .prop_map(|containers| {
        let containers: Vec<Value> = containers
            .into_iter()
            .enumerate()
            .map(|(index, (cpu, claim))| {
                let mut resources = json!({"requests": {"cpu": cpu, "memory": "8Gi"}});
                if let Some(request) = claim {
                    let mut entry = json!({"name": "gpus"});
                    if let Some(request) = request {
                        entry["request"] = request.into();
                    }
                    resources["claims"] = json!([entry]);
                }
                json!({"name": format!("c{index}"), "resources": resources})
            })
            .collect();
        json!({"metadata": {"uid": OWNER_UID}, "spec": {"containers": containers}})
    })
}

/// A claim generated for the pod from a GPU template, with unknown fields.
fn generated_claim() -> impl Strategy<Value = Value> {
    (
        1u32..=4,
        any::<bool>(),
        unknown_fields(),
        unknown_fields(),
        unknown_fields(),
    )
        .prop_map(|(gpus, constrained, request_extra, devices_extra, top_extra)| {
            let request = with(
                json!({"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": gpus}}),
                request_extra,
            );
            let mut devices = json!({"requests": [request]});
            if constrained {
                devices["constraints"] =
                    json!([{"requests": ["gpu"], "matchAttribute": "resource.kubernetes.io/numaNode"}]);
            }
            with(
                json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"generateName": "trainer-0-gpus-", "namespace": "research",
                        "annotations": {"resource.kubernetes.io/pod-claim-name": "gpus"},
                        "ownerReferences": [{"apiVersion": "v1", "controller": true, "kind": "Pod",
                            "name": "trainer-0", "uid": OWNER_UID}]},
                    "spec": {"devices": with(devices, devices_extra)}}),
                top_extra,
            )
        })
}

/// The one container that gets the CPUs, by the rules of
/// `docs/guide.md` (one container uses the whole claim, with whole CPUs).
fn expected_cpus(pod: &Value) -> Option<u64> {
    let users: Vec<&Value> = pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|container| container["resources"]["claims"].is_array())
        .collect();
    match users.as_slice() {
        [one] if one["resources"]["claims"][0].get("request").is_none() => {
            one["resources"]["requests"]["cpu"].as_str()?.parse().ok()
        }
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn a_generated_claim_gets_its_containers_cpus_and_keeps_every_byte(
        object in generated_claim(),
        pod in owner_pod(),
    ) {
        let fleet = GeneratedClaimFleet {
            lists: DraFleet::load_session("dra-cpu-generated-claim-fleet"),
            pod: pod.clone(),
        };
        let config = config(json!({}));
        let request = admission("ResourceClaim", "resourceclaims", object.clone());
        let decision = evaluate_request(&request, &config, &fleet);
        prop_assert!(!matches!(decision.verdict, Verdict::Reject(_)), "a generated claim is never refused");
        let gpus = object["spec"]["devices"]["requests"][0]["exactly"]["count"].as_u64().unwrap();
        // 56 CPUs per NUMA node, 4 GPUs per NUMA node.
        let expected = expected_cpus(&pod).filter(|cpus| *cpus <= 56 && gpus <= 4);
        let Some(text) = mutated_text(&decision) else {
            prop_assert_eq!(expected, None, "no CPUs added: {:?}", decision);
            return Ok(());
        };
        let cpus = expected.ok_or_else(|| TestCaseError::fail(format!("CPUs added for {pod}")))?;
        let request_json = format!(
            r#"{{"name":"cpus","exactly":{{"deviceClassName":"dra.cpu","capacity":{{"requests":{{"dra.cpu/cpu":"{cpus}"}}}}}}}}"#
        );
        let constraint_json =
            r#"{"requests":["gpu","cpus"],"matchAttribute":"resource.kubernetes.io/numaNode"}"#;
        // The text is the generated one with the two elements inserted.
        let original = serde_json::to_string(&object).unwrap();
        let without_request = text.replacen(&format!(",{request_json}"), "", 1);
        prop_assert_ne!(&without_request, &text, "the request is inserted as written");
        let without_both = [
            format!(",{constraint_json}"),
            format!(r#","constraints":[{constraint_json}]"#),
        ]
        .iter()
        .map(|inserted| without_request.replacen(inserted, "", 1))
        .find(|reverted| *reverted != without_request)
        .unwrap_or_default();
        prop_assert_eq!(&without_both, &original);
        let completed: Value = serde_json::from_str(&text).unwrap();
        let again = evaluate_request(&admission("ResourceClaim", "resourceclaims", completed), &config, &fleet);
        prop_assert!(
            matches!(again.verdict, Verdict::Accept) && again.warnings.is_empty(),
            "a second pass answered {:?}", again
        );
    }
}
