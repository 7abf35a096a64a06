//! proptest strategies for the property tests: GPU pods written every way
//! the API allows, valid settings, and labeled nodes. Shared by
//! `tests/properties.rs` and `e2e-tests/tests/wasm_native_parity.rs`
//! (included there by path).
//!
//! Pods are valid as the API server validates them: a GPU (an extended
//! resource) is always in `limits`, and equal in `requests` when there;
//! node-selector requirements have the values their operator needs.

#![allow(dead_code)] // each test crate uses a different subset

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{json, Map, Value};

/// The label prefix the generated settings use when they set one.
pub const OTHER_PREFIX: &str = "topo.example.com";
/// Node names the generated nodes and `matchFields` terms use.
pub const NODE_NAMES: [&str; 4] = ["n1", "n2", "n3", "gpu-node-1"];
/// Labels of the user's own the generated affinity asks for.
pub const USER_LABELS: [&str; 2] = ["zone", "ssd"];

/// A CPU quantity, as a string or a JSON number.
fn cpu() -> impl Strategy<Value = Value> {
    prop_oneof![
        select(vec!["1", "1000m", "0.5", "2", "250m", "3500m", "0"]).prop_map(Value::from),
        select(vec![json!(2), json!(0.5), json!(1)]),
    ]
}

/// A memory quantity, as a string or a JSON number.
fn memory() -> impl Strategy<Value = Value> {
    prop_oneof![
        select(vec!["2Gi", "2048Mi", "1G", "512Mi", "16Gi", "0"]).prop_map(Value::from),
        select(vec![json!(1_073_741_824_u64), json!(2_147_483_648_u64)]),
    ]
}

/// A GPU count, as a string or a JSON number.
fn gpus() -> impl Strategy<Value = Value> {
    select(vec![
        json!("1"),
        json!("2"),
        json!("4"),
        json!(1),
        json!(2),
        json!("0"),
    ])
}

/// CPU and memory (each maybe absent) for one side of `resources`.
fn compute() -> impl Strategy<Value = Map<String, Value>> {
    (proptest::option::of(cpu()), proptest::option::of(memory())).prop_map(|(cpu, memory)| {
        let mut list = Map::new();
        if let Some(cpu) = cpu {
            list.insert("cpu".to_owned(), cpu);
        }
        if let Some(memory) = memory {
            list.insert("memory".to_owned(), memory);
        }
        list
    })
}

/// How a container writes its resources: none, limits only, requests only,
/// both (equal or not), optionally with GPUs in limits (and requests).
fn resources() -> impl Strategy<Value = Option<Value>> {
    let shape = 0..6u8;
    (
        shape,
        compute(),
        compute(),
        proptest::option::of(gpus()),
        any::<bool>(),
    )
        .prop_map(|(shape, limits, requests, gpus, gpus_requested)| {
            let mut limits = limits;
            let mut requests = requests;
            match shape {
                0 => return None,
                1 => requests.clear(),
                2 => limits.clear(),
                3 => requests = limits.clone(),
                4 => return Some(json!({})),
                _ => {}
            }
            cap_requests_at_limits(&mut requests, &limits);
            if let Some(gpus) = gpus {
                limits.insert("nvidia.com/gpu".to_owned(), gpus.clone());
                if gpus_requested {
                    requests.insert("nvidia.com/gpu".to_owned(), gpus);
                }
            }
            let mut resources = Map::new();
            if !limits.is_empty() {
                resources.insert("limits".to_owned(), Value::Object(limits));
            }
            if !requests.is_empty() {
                resources.insert("requests".to_owned(), Value::Object(requests));
            }
            Some(Value::Object(resources))
        })
}

/// A container named `name`; a native sidecar when `sidecar`.
fn container(name: String, sidecar: bool) -> impl Strategy<Value = Value> {
    resources().prop_map(move |resources| {
        let mut container = json!({"name": name, "image": "registry.example/app:1"});
        if sidecar {
            container["restartPolicy"] = json!("Always");
        }
        if let Some(resources) = resources {
            container["resources"] = resources;
        }
        container
    })
}

fn containers(
    prefix: &'static str,
    count: std::ops::Range<usize>,
    sidecars: bool,
) -> BoxedStrategy<Vec<Value>> {
    vec(any::<bool>(), count)
        .prop_flat_map(move |kinds| {
            kinds
                .into_iter()
                .enumerate()
                .map(|(index, sidecar)| container(format!("{prefix}-{index}"), sidecars && sidecar))
                .collect::<Vec<_>>()
        })
        .boxed()
}

/// A node-selector requirement on a node label, valid for its operator.
fn label_requirement(prefix: &'static str) -> impl Strategy<Value = Value> {
    let gpus_key = format!("{prefix}/gpus");
    let key = select(vec!["zone".to_owned(), "ssd".to_owned(), gpus_key]);
    let operator = select(vec!["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]);
    let words = vec(select(vec!["a", "b", "2", "8"]), 1..3);
    let number = select(vec!["0", "1", "3", "7"]);
    (key, operator, words, number).prop_map(|(key, operator, words, number)| {
        let values: Vec<&str> = match operator {
            "In" | "NotIn" => words,
            "Gt" | "Lt" => vec![number],
            _ => Vec::new(),
        };
        // `Exists` and `DoesNotExist` carry no values.
        let mut requirement = json!({"key": key, "operator": operator});
        if !values.is_empty() {
            requirement["values"] = json!(values);
        }
        requirement
    })
}

/// `matchFields` on `metadata.name`: In or NotIn with one name.
fn field_requirement() -> impl Strategy<Value = Value> {
    (select(vec!["In", "NotIn"]), select(NODE_NAMES.to_vec())).prop_map(
        |(operator, name)| json!({"key": "metadata.name", "operator": operator, "values": [name]}),
    )
}

/// A node-selector term: expressions, fields, both, or neither (empty terms
/// match no node).
fn term(prefix: &'static str) -> impl Strategy<Value = Value> {
    (
        0..5u8,
        vec(label_requirement(prefix), 0..3),
        vec(field_requirement(), 1..2),
    )
        .prop_map(|(shape, expressions, fields)| match shape {
            0 => json!({}),
            1 => json!({"matchExpressions": []}),
            2 => json!({"matchFields": fields}),
            3 => json!({"matchExpressions": expressions, "matchFields": fields}),
            _ => json!({"matchExpressions": expressions}),
        })
}

/// The user's affinity: absent, null, node affinity null, required terms,
/// preferred terms, both, and another kind of affinity beside it.
fn user_affinity(prefix: &'static str) -> impl Strategy<Value = Option<Value>> {
    let required = vec(term(prefix), 1..4);
    let preferred = vec((1..=100i64, vec(label_requirement(prefix), 1..3)), 0..3);
    (0..9u8, required, preferred).prop_map(|(shape, required, preferred)| {
        let preferred: Vec<Value> = preferred
            .into_iter()
            .map(|(weight, expressions)| {
                json!({"weight": weight, "preference": {"matchExpressions": expressions}})
            })
            .collect();
        let required = json!({"nodeSelectorTerms": required});
        match shape {
            0 => None,
            1 => Some(Value::Null),
            2 => Some(json!({"nodeAffinity": null})),
            3 => Some(json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})),
            4 => Some(json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})),
            5 => Some(json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": required,
                "preferredDuringSchedulingIgnoredDuringExecution": preferred}})),
            // Invalid (the API server refuses a selector without terms), and
            // matching no node.
            6 => Some(json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})),
            7 => Some(json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}})),
            _ => Some(json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})),
        }
    })
}

/// Pod-level `spec.resources` (rare): CPU and memory, limits and/or requests.
fn pod_resources() -> impl Strategy<Value = Option<Value>> {
    (0..8u8, compute(), compute()).prop_map(|(shape, limits, mut requests)| match shape {
        0 => {
            cap_requests_at_limits(&mut requests, &limits);
            Some(json!({"limits": limits, "requests": requests}))
        }
        1 => Some(json!({"limits": limits})),
        _ => None,
    })
}

/// A Pod whose labels use `prefix`: init containers (regular and native
/// sidecars), app containers, any resources, any user affinity, maybe
/// pinned by `nodeName`.
pub fn pod(prefix: &'static str) -> impl Strategy<Value = Value> {
    (
        containers("init", 0..3, true),
        containers("app", 1..4, false),
        user_affinity(prefix),
        proptest::option::weighted(0.15, select(NODE_NAMES.to_vec())),
        pod_resources(),
        proptest::bool::weighted(0.3),
    )
        .prop_map(
            |(mut init, mut app, affinity, node_name, resources, guaranteed)| {
                if guaranteed {
                    init.iter_mut()
                        .chain(app.iter_mut())
                        .for_each(make_guaranteed);
                }
                let mut spec = json!({"containers": app, "restartPolicy": "Never"});
                if !init.is_empty() {
                    spec["initContainers"] = json!(init);
                }
                if let Some(affinity) = affinity {
                    spec["affinity"] = affinity;
                }
                if let Some(node) = node_name {
                    spec["nodeName"] = json!(node);
                }
                if let Some(resources) = resources {
                    spec["resources"] = resources;
                }
                json!({
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "generated", "namespace": "ml", "labels": {"app": "x"}},
                    "spec": spec,
                })
            },
        )
}

/// Gives a container equal CPU and memory requests and limits (whole CPUs),
/// keeping its GPUs: what `qos.mode: validate` admits.
fn make_guaranteed(container: &mut Value) {
    let gpus = container["resources"]["limits"]["nvidia.com/gpu"].clone();
    let mut limits = json!({"cpu": "2", "memory": "4Gi"});
    if !gpus.is_null() {
        limits["nvidia.com/gpu"] = gpus;
    }
    container["resources"] = json!({"limits": limits, "requests": limits});
}

/// Valid settings: every QoS mode, affinity mode, alignment and scope;
/// the fit read from static limits (the host is never called, so native
/// and Wasm runs answer alike) or, when `host_sources`, also from the
/// cluster (natively no host answers: the fit is skipped with a warning).
pub fn settings(host_sources: bool) -> impl Strategy<Value = Value> {
    let source = if host_sources {
        select(vec!["static", "auto", "nodes"]).boxed()
    } else {
        Just("static").boxed()
    };
    (
        select(vec!["mutate", "validate", "off"]),
        select(vec!["numa", "nvlink", "node"]),
        select(vec!["required", "preferred", "off"]),
        select(vec!["pod", "container"]),
        (any::<bool>(), any::<bool>()),
        (1..=100i64, source, select(vec![4u32, 8, 16])),
        any::<bool>(),
    )
        .prop_map(
            |(qos, alignment, affinity, scope, (whole_cpus, round_to_whole_cores), (weight, source, max), other_prefix)| {
                // Keys that another key's value ignores (a weight without
                // `preferred`, an alignment without affinity, static limits
                // under `nodes`) are left out: the settings read them as not
                // written (src/settings, `keys_without_effect_are_accepted_and_ignored`).
                let mut topology = json!({"affinity": affinity, "scope": scope});
                if affinity == "preferred" {
                    topology["preferredWeight"] = json!(weight);
                }
                if affinity != "off" {
                    topology["alignment"] = json!(alignment);
                }
                let mut capacity = json!({"source": source});
                if source != "nodes" {
                    capacity["maxGpusPerNode"] = json!(max);
                }
                let mut settings = json!({
                    "qos": {"mode": qos, "wholeCpus": whole_cpus, "roundToWholeCores": round_to_whole_cores},
                    "topology": topology,
                    "capacity": capacity,
                });
                if other_prefix {
                    settings["labelPrefix"] = json!(OTHER_PREFIX);
                }
                settings
            },
        )
}

/// A node: its name and labels, ours under `prefix` (some malformed) and
/// the user's.
pub fn node(prefix: &'static str) -> impl Strategy<Value = (String, Map<String, Value>)> {
    let count = || proptest::option::of(select(vec!["0", "1", "2", "4", "8", "x"]));
    let policy = proptest::option::of(select(vec![
        "none",
        "best-effort",
        "restricted",
        "single-numa-node",
    ]));
    (
        select(NODE_NAMES.to_vec()),
        (count(), count(), count(), policy),
        proptest::option::of(select(vec!["a", "b"])),
        any::<bool>(),
    )
        .prop_map(move |(name, (gpus, per_numa, nvlink, policy), zone, ssd)| {
            let mut labels = Map::new();
            for (key, value) in [
                ("gpus", gpus),
                ("gpus-per-numa-max", per_numa),
                ("nvlink-group-max", nvlink),
                ("topology-manager-policy", policy),
            ] {
                if let Some(value) = value {
                    labels.insert(format!("{prefix}/{key}"), json!(value));
                }
            }
            if let Some(zone) = zone {
                labels.insert("zone".to_owned(), json!(zone));
            }
            if ssd {
                labels.insert("ssd".to_owned(), json!("true"));
            }
            (name.to_owned(), labels)
        })
}

/// The `validate` payload for a Pod CREATE of `pod` under `settings`.
pub fn payload(pod: &Value, settings: &Value) -> Vec<u8> {
    let request = json!({
        "uid": "00000000-0000-4000-8000-000000000000",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "generated",
        "namespace": "ml",
        "operation": "CREATE",
        "userInfo": {"username": "alice"},
        "object": pod,
        "dryRun": false,
    });
    serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap()
}

/// The API server refuses a request above its limit: such a request is
/// lowered to the limit.
fn cap_requests_at_limits(requests: &mut Map<String, Value>, limits: &Map<String, Value>) {
    for (name, request) in requests.iter_mut() {
        let Some(limit) = limits.get(name) else {
            continue;
        };
        if nanos(request) > nanos(limit) {
            *request = limit.clone();
        }
    }
}

/// A Kubernetes quantity (a string, or a JSON number) in billionths, exact
/// for every quantity generated here; `None` when it does not parse.
/// Written from apimachinery's `resource.ParseQuantity` grammar:
/// a signed decimal number, then a binary (Ki..Ei), decimal (n, u, m, k,
/// M..E) or exponent (e/E) suffix.
pub fn nanos(quantity: &Value) -> Option<i128> {
    let text = match quantity {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => return None,
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let negative = whole.starts_with('-');
    let whole = whole.trim_start_matches(['-', '+']);
    if (whole.is_empty() && fraction.is_empty()) || fraction.len() > 9 {
        return None;
    }
    let digits = |s: &str| -> Option<i128> {
        if s.is_empty() {
            Some(0)
        } else {
            s.parse::<i128>().ok()
        }
    };
    let fraction_nanos = digits(fraction)? * 10i128.pow(9 - fraction.len() as u32);
    let mut value = digits(whole)? * 1_000_000_000 + fraction_nanos;
    let binary = |power: u32| 1024i128.pow(power);
    let decimal = |power: i32| 10f64.powi(power);
    let scale = match suffix {
        "" => 1.0,
        "Ki" => binary(1) as f64,
        "Mi" => binary(2) as f64,
        "Gi" => binary(3) as f64,
        "Ti" => binary(4) as f64,
        "Pi" => binary(5) as f64,
        "Ei" => binary(6) as f64,
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        _ => return None,
    };
    if scale >= 1.0 {
        value = value.checked_mul(scale as i128)?;
    } else {
        let divisor = (1.0 / scale).round() as i128;
        value /= divisor;
    }
    Some(if negative { -value } else { value })
}
