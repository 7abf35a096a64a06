//! Shared helpers: loading request fixtures and inspecting decisions.

#![allow(dead_code)] // each test crate uses a different subset

use gpu_topology_policy::cluster::host::{ClusterReader, KubewardenHost};
use gpu_topology_policy::decide::{evaluate_with, Decision, Verdict};
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::{settings_from_value, Config};
use serde_json::Value;
use std::path::PathBuf;

/// Every Pod fixture under tests/fixtures.
pub const POD_FIXTURES: [&str; 18] = [
    "amd-gpu-pod",
    "already-mutated-pod",
    "cpu-only-pod",
    "eight-gpu-pod",
    "existing-affinity-pod",
    "fractional-cpu-pod",
    "future-field-pod",
    "gpu-and-dra-claims-pod",
    "inference-deployment-pod",
    "init-download-pod",
    "intel-gpu-pod",
    "limits-only-pod",
    "mig-slice-pod",
    "multi-container-pod",
    "node-name-pod",
    "pod-level-resources-pod",
    "ray-worker-pod",
    "requests-only-pod",
];

/// The AdmissionReview document `tests/fixtures/<name>.json`.
pub fn review(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The admission request of fixture `name`.
pub fn request(name: &str) -> Value {
    review(name)["request"].clone()
}

pub fn config(settings: Value) -> Config {
    settings_from_value(settings).unwrap().config().unwrap()
}

/// Evaluates `request` as the entry point does: from its JSON text.
pub fn evaluate_request(request: &Value, config: &Config, cluster: &dyn ClusterReader) -> Decision {
    let text = request.to_string();
    evaluate_with(&AdmissionRequest::parse(&text).unwrap(), config, cluster)
}

/// Evaluates `request` with the Kubewarden host, which natively answers no
/// Node listing.
pub fn evaluate(request: &Value, config: &Config) -> Decision {
    evaluate_request(request, config, &KubewardenHost)
}

pub fn decide(name: &str, settings: Value) -> Decision {
    evaluate(&request(name), &config(settings))
}

/// The mutated object, failing the test on any other verdict.
pub fn mutated(decision: &Decision) -> Value {
    match &decision.verdict {
        Verdict::Mutate(object) => object.to_value().unwrap(),
        other => panic!("expected a mutation, got {other:?}"),
    }
}

/// The rejection message, failing the test on any other verdict.
pub fn rejection(decision: &Decision) -> &str {
    match &decision.verdict {
        Verdict::Reject(message) => message,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// The JSON patch the Kubewarden host computes from the mutation, as
/// (op, path) pairs.
pub fn patch_ops(original: &Value, mutated: &Value) -> Vec<(String, String)> {
    let patch = serde_json::to_value(json_patch::diff(original, mutated)).unwrap();
    patch
        .as_array()
        .unwrap()
        .iter()
        .map(|op| {
            (
                op["op"].as_str().unwrap().to_owned(),
                op["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Node-selector terms of the mutated object's required node affinity.
pub fn required_terms(object: &Value) -> Vec<Value> {
    object
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub fn preferences(object: &Value) -> Vec<Value> {
    object
        .pointer("/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// `{"key": "gpu-topology.io/<name>", "operator": "Gt", "values": [<value>]}`
pub fn gt(name: &str, value: &str) -> Value {
    serde_json::json!({"key": format!("gpu-topology.io/{name}"), "operator": "Gt", "values": [value]})
}

pub fn not_single_numa_node() -> Value {
    serde_json::json!({"key": "gpu-topology.io/topology-manager-policy", "operator": "NotIn", "values": ["single-numa-node"]})
}

/// Decides on the pod `object` both ways: from its text, as the entry point
/// does (reduced pod, values spliced into the text), and on its whole JSON
/// tree. They must agree; returns why not.
pub fn text_and_tree_disagree(object: &Value, config: &Config) -> Option<String> {
    use gpu_topology_policy::decide::{evaluate_pod, evaluate_pod_text};
    let text = object.to_string();
    let from_text = evaluate_pod_text(&text, config, &KubewardenHost);
    let from_tree = evaluate_pod(object, config, &KubewardenHost);
    let same_verdict = match (&from_text.verdict, &from_tree.verdict) {
        (Verdict::Accept, Verdict::Accept) => true,
        (Verdict::Reject(a), Verdict::Reject(b)) => a == b,
        (Verdict::Mutate(a), Verdict::Mutate(b)) => a.to_value().ok().as_ref() == Some(b),
        _ => false,
    };
    (!same_verdict || from_text.warnings != from_tree.warnings)
        .then(|| format!("text: {from_text:?}\ntree: {from_tree:?}"))
}
