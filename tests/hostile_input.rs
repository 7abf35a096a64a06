//! A panic in Wasm is a trap, and a trap blocks pod creation cluster-wide. This
//! test feeds the `validate` entry point every fixture with each value inside
//! the admitted object replaced, one at a time, by hostile values (wrong types,
//! huge and negative numbers, malformed quantities), under several settings,
//! and requires an answer (a response or an error) every time, never a panic.
//! Each hostile pod is also decided both from its text and on its whole JSON
//! tree, which must agree: the fast reader may hand a pod to the tree, never
//! decide it differently.

use crate::common;

use common::{config, review, text_and_tree_disagree};
use gpu_topology_policy::validate;
use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Values that stress parsers: wrong JSON types, boundary numbers, malformed
/// or extreme quantities and GPU counts.
fn hostile_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!({}),
        json!([]),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
        json!(""),
        json!("-1"),
        json!("0"),
        json!("1.5"),
        json!("NaN"),
        json!("1e400"),
        json!("99999999999999999999999999999999999999"),
        json!("170141183460469231731687303715.884105727"),
        json!("9Ei"),
        json!("999999999999999999999Ei"),
        json!("1n"),
        json!("+.5"),
        json!("1.2.3Gi"),
        json!("x".repeat(300)),
        json!("Always"),
    ]
}

/// Every JSON pointer to a value inside `value` (objects and arrays too).
fn pointers(value: &Value, prefix: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                let path = format!("{prefix}/{escaped}");
                out.push(path.clone());
                pointers(child, path, out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                let path = format!("{prefix}/{index}");
                out.push(path.clone());
                pointers(child, path, out);
            }
        }
        _ => {}
    }
}

/// Settings under which different code paths run (mutate, validate,
/// required affinity, static capacity, container scope).
fn settings_variants() -> Vec<Value> {
    vec![
        json!({}),
        json!({"qos": {"mode": "validate"}, "topology": {"affinity": "required", "alignment": "nvlink"}}),
        json!({"topology": {"scope": "container", "alignment": "node"},
               "capacity": {"maxGpusPerNode": 8, "maxGpusPerNumaNode": 4, "singleNumaNode": true}}),
    ]
}

#[test]
fn validate_never_panics_on_hostile_objects() {
    let fixtures = [
        "training-pod-init-and-sidecar",
        "existing-affinity-pod",
        "pod-level-resources-pod",
        // Extended-resource GPUs and DRA claims in one pod, named by its
        // metadata: the GPU stages and the DRA stage on the same tree.
        "gpu-and-dra-claims-pod",
    ];
    let hostile = hostile_values();
    let mut calls = 0usize;
    let mut panics = Vec::new();
    let mut disagreements = Vec::new();
    for fixture in fixtures {
        let request = review(fixture)["request"].clone();
        let mut paths = Vec::new();
        pointers(&request["object"], "/object".to_owned(), &mut paths);
        for settings in settings_variants() {
            let config = config(settings.clone());
            for path in &paths {
                for value in &hostile {
                    let mut mutated = request.clone();
                    if let Some(slot) = mutated.pointer_mut(path) {
                        *slot = value.clone();
                    }
                    let payload = json!({"settings": settings, "request": mutated}).to_string();
                    calls += 1;
                    let case = format!("{fixture} {path} = {value} with settings {settings}");
                    match catch_unwind(AssertUnwindSafe(|| validate(payload.as_bytes()))) {
                        Err(_) => panics.push(case),
                        // The answer is written by hand around the mutated
                        // text: it must be JSON every time.
                        Ok(Ok(answer)) if serde_json::from_slice::<Value>(&answer).is_err() => {
                            disagreements.push(format!("{case}: the answer is not JSON"))
                        }
                        Ok(_) => {
                            if let Some(why) = text_and_tree_disagree(&mutated["object"], &config) {
                                disagreements.push(format!("{case}:\n{why}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(calls > 1_000, "only {calls} calls: fixtures not found?");
    assert!(
        panics.is_empty(),
        "{} of {calls} calls panicked, e.g.:\n{}",
        panics.len(),
        panics
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        disagreements.is_empty(),
        "{} of {calls} pods were decided differently from text and tree, e.g.:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(5)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
