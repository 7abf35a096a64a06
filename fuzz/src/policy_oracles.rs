//! What the policy's fuzz targets check, shared with the corpus replay tests
//! (`tests/fuzz_regressions.rs` includes this file): each `check_*` takes
//! the bytes of one input, runs the entry point, and panics, naming the
//! broken rule, when the answer breaks it. A panic inside the policy is a
//! finding too: the policy must answer every input.
//!
//! The rules are independent of the policy's own code where they can be:
//! serde_json is the reference for what JSON is and what it holds.

use gpu_topology::{FleetSummary, LabelPrefix};
use gpu_topology_policy::cluster::{fleet_summary, nodes};
use gpu_topology_policy::request::json_scan::{self, Scanner, MAX_DEPTH};
use gpu_topology_policy::request::pod_text::PodText;
use gpu_topology_policy::request::{GroupVersionKind, Payload};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::Path;

/// Settings the structured target pairs requests with: every QoS mode,
/// affinity mode, alignment and scope, static and host-read capacity.
pub const SETTINGS: [&str; 8] = [
    "null",
    "{}",
    r#"{"qos": {"mode": "validate"}, "topology": {"affinity": "required", "alignment": "nvlink"}}"#,
    r#"{"qos": {"mode": "off"}, "topology": {"affinity": "off", "scope": "container"}}"#,
    r#"{"topology": {"affinity": "required", "alignment": "node", "scope": "container"}, "capacity": {"source": "static", "maxGpusPerNode": 8, "maxGpusPerNumaNode": 4}}"#,
    r#"{"qos": {"wholeCpus": false, "cpuPerGpu": null, "initContainer": {"cpu": "1", "memory": "1Gi"}}, "capacity": {"source": "static", "maxGpusPerNode": 4, "singleNumaNode": true}}"#,
    r#"{"gpuResources": ["nvidia.com/gpu", "example.com/accel"], "exemptNamespaces": ["kube-system"], "labelPrefix": "topo.example.com", "topology": {"preferredWeight": 7}}"#,
    r#"{"qos": {"sidecarCpu": "100m", "sidecarMemory": "64Mi", "memoryPerGpu": "8Gi"}, "capacity": {"source": "summary"}}"#,
];

/// Keys the structured target adds to objects: the fields the policy reads.
pub const KEYS: [&str; 16] = [
    "resources",
    "limits",
    "requests",
    "nvidia.com/gpu",
    "cpu",
    "memory",
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
    "nodeName",
    "initContainers",
    "containers",
    "restartPolicy",
    "spec",
    "template",
];

/// A string no fixture holds; replaced by the fuzz bytes after serialising.
const MARKER: &str = "\u{1}fuzz\u{1}";

/// The AdmissionRequests of the fixtures under `root` (the repository):
/// `tests/fixtures/*.json` (AdmissionReviews) and
/// `e2e-tests/scenarios/requests/*.json` (bare requests), in path order.
pub fn fixture_requests(root: &Path) -> Vec<Value> {
    let mut paths = Vec::new();
    for dir in ["tests/fixtures", "e2e-tests/scenarios/requests"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            paths.extend(entries.filter_map(Result::ok).map(|entry| entry.path()));
        }
    }
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "json"));
    paths.sort();
    paths
        .iter()
        .filter_map(|path| std::fs::read(path).ok())
        .filter_map(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .map(
            |document| match document.get("kind").and_then(Value::as_str) {
                Some("AdmissionReview") => document.get("request").cloned().unwrap_or(Value::Null),
                _ => document,
            },
        )
        .collect()
}

/// The `validate` payload the structured target builds from `data`:
/// byte 0 picks a fixture request, byte 1 the settings, bytes 2-3 a value
/// in the request, byte 4 what to do there (replace it; add a member from
/// [`KEYS`] to an object; append to an array), the rest is the JSON text
/// put in. The text is spliced in raw, so it may break the payload too.
pub fn structured_payload(requests: &[Value], data: &[u8]) -> Vec<u8> {
    let byte = |index: usize| data.get(index).copied().unwrap_or(0);
    let fragment = String::from_utf8_lossy(data.get(5..).unwrap_or_default());
    let settings = SETTINGS[usize::from(byte(1)) % SETTINGS.len()];
    let Some(request) = requests.get(usize::from(byte(0)) % requests.len().max(1)) else {
        return format!(r#"{{"request":{fragment},"settings":{settings}}}"#).into_bytes();
    };
    let mut request = request.clone();
    let mut places = Vec::new();
    pointers(&request, String::new(), &mut places);
    let selector = usize::from(u16::from_le_bytes([byte(2), byte(3)]));
    let place = &places[selector % places.len()];
    let action = byte(4);
    if let Some(target) = request.pointer_mut(place) {
        let marker = Value::String(MARKER.to_owned());
        match (action % 3, target) {
            (1, Value::Object(members)) => {
                let key = KEYS[usize::from(action / 3) % KEYS.len()];
                members.insert(key.to_owned(), marker);
            }
            (2, Value::Array(items)) => items.push(marker),
            (_, target) => *target = marker,
        }
    }
    let request = serde_json::to_string(&request).unwrap_or_default();
    let quoted_marker = serde_json::to_string(MARKER).unwrap_or_default();
    let request = request.replacen(&quoted_marker, &fragment, 1);
    format!(r#"{{"request":{request},"settings":{settings}}}"#).into_bytes()
}

/// Every value's JSON pointer, the root first.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                let key = key.replace('~', "~0").replace('/', "~1");
                pointers(member, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
}

/// `validate` answers every payload: an error, or a response that is a JSON
/// object with `accepted`, whose `mutated_object`, if any, is JSON.
/// Answers the response as JSON (`None` for an error).
pub fn check_validate(payload: &[u8]) -> Option<Value> {
    let response = gpu_topology_policy::validate(payload).ok()?;
    let response: Value = serde_json::from_slice(&response)
        .unwrap_or_else(|error| panic!("validate answered non-JSON ({error})"));
    assert!(
        response.get("accepted").is_some_and(Value::is_boolean),
        "validate answered no `accepted`: {response}"
    );
    Some(response)
}

/// The structured target: [`check_validate`] on [`structured_payload`],
/// then, when the pod was mutated, the mutated pod once more: a second pass
/// must accept it unchanged (the mutation is idempotent).
pub fn check_structured(requests: &[Value], data: &[u8]) {
    let payload = structured_payload(requests, data);
    let Some(response) = check_validate(&payload) else {
        return;
    };
    let Some(mutated) = response.get("mutated_object").filter(|m| !m.is_null()) else {
        return;
    };
    assert_eq!(response["accepted"], true, "a rejection carries a mutation");
    // Lone surrogate escapes pass the scanner but not serde_json's tree.
    let Ok(mut payload) = serde_json::from_slice::<Value>(&payload) else {
        return;
    };
    payload["request"]["object"] = mutated.clone();
    let again = serde_json::to_vec(&payload).unwrap_or_default();
    let second = check_validate(&again).expect("the mutated pod is readable");
    assert!(
        second["accepted"] == true && second.get("mutated_object").is_none_or(Value::is_null),
        "a second pass changed the mutated pod: {second}\nfirst: {mutated}"
    );
}

/// `validate_settings` answers every payload with `valid`; a message when
/// invalid. Settings it calls valid are read by `validate` too.
pub fn check_settings(data: &[u8]) {
    let response = gpu_topology_policy::validate_settings(data).expect("settings are answered");
    let response: Value = serde_json::from_slice(&response).expect("the answer is JSON");
    let valid = response["valid"].as_bool().expect("`valid` is a boolean");
    assert_eq!(
        response["message"].is_string(),
        !valid,
        "an invalid answer carries a message, a valid one none: {response}"
    );
    if valid {
        let settings: Value = serde_json::from_slice(data).expect("valid settings are JSON");
        let payload = serde_json::json!({"settings": settings, "request": {}});
        let answered = gpu_topology_policy::validate(payload.to_string().as_bytes());
        assert!(
            answered.is_ok(),
            "validate refuses settings validate_settings accepts: {answered:?}"
        );
    }
}

/// The JSON scanner against serde_json: it accepts exactly what serde_json
/// accepts; the values read through its API equal serde_json's; the payload
/// reader reads the fields serde_json reads; the Pod reader's reduced pod
/// is serde_json's pod cut to the fields it names, and rewriting it
/// unchanged gives the pod's text back byte for byte.
pub fn check_json_scan(data: &[u8]) {
    let payload = Payload::parse(data);
    let Ok(text) = std::str::from_utf8(data) else {
        assert!(payload.is_err(), "a payload that is not UTF-8 was read");
        return;
    };
    let accepted = serde_json::from_str::<IgnoredAny>(text).is_ok();
    let scanned = json_scan::validate(text);
    assert_eq!(
        scanned.is_ok(),
        accepted,
        "scanner says {scanned:?}, serde_json accepts: {accepted}"
    );
    if !accepted {
        assert!(payload.is_err(), "invalid JSON was read as a payload");
        return;
    }
    let mut scanner = Scanner::new(text);
    let span = scanner.value().expect("validated");
    assert_eq!(
        span.of(text),
        text.trim_matches([' ', '\n', '\r', '\t']),
        "the span is the value"
    );
    let tree = serde_json::from_str::<Value>(text);
    let read = read_tree(&mut Scanner::new(text), 0);
    match (&tree, &read) {
        (Ok(tree), Ok(read)) => assert_eq!(tree, read, "the scanner read other values"),
        // serde_json's tree refuses lone surrogate escapes it passes over.
        (Err(_), Err(_)) => {}
        _ => panic!("serde_json read {tree:?}, the scanner read {read:?}"),
    }
    let Ok(tree) = tree else {
        return;
    };
    if let Ok(payload) = payload {
        check_payload_fields(&payload, &tree);
    }
    check_pod_text(text, &tree);
}

/// The value at the scanner through its object, array and value API.
fn read_tree(scanner: &mut Scanner<'_>, depth: u32) -> Result<Value, String> {
    let error = |e: json_scan::ScanError| e.to_string();
    if depth > MAX_DEPTH {
        return Err("deeper than the scanner validates".to_owned());
    }
    match scanner.peek_value() {
        Some(b'{') => {
            let mut members = scanner.object().map_err(error)?;
            let mut map = Map::new();
            while let Some(key) = members.next_key().map_err(error)? {
                let name = key.name()?.into_owned();
                map.insert(name, read_tree(members.scanner(), depth + 1)?);
            }
            Ok(Value::Object(map))
        }
        Some(b'[') => {
            let mut elements = scanner.array().map_err(error)?;
            let mut items = Vec::new();
            while elements.has_next().map_err(error)? {
                items.push(read_tree(elements.scanner(), depth + 1)?);
            }
            Ok(Value::Array(items))
        }
        _ => {
            let text = scanner.value_text().map_err(error)?;
            serde_json::from_str(text).map_err(|e| e.to_string())
        }
    }
}

fn check_payload_fields(payload: &Payload<'_>, tree: &Value) {
    let request = &tree["request"];
    let field = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
    let read = &payload.request;
    assert_eq!(read.namespace, field("namespace"), "namespace");
    assert_eq!(read.operation, field("operation"), "operation");
    // serde's derived struct reading, as the SDK's: an object, or the
    // fields in order as an array.
    let kind = match request.get("kind") {
        Some(kind) => GroupVersionKind::deserialize(kind).expect("serde_json reads the kind"),
        None => GroupVersionKind::default(),
    };
    assert_eq!(
        (&read.kind.group, &read.kind.version, &read.kind.kind),
        (&kind.group, &kind.version, &kind.kind),
        "kind"
    );
    let object: Value = serde_json::from_str(read.object_text()).expect("the object is JSON");
    assert_eq!(
        object,
        request.get("object").cloned().unwrap_or(Value::Null),
        "object"
    );
    let settings = payload.settings.map(serde_json::from_str::<Value>);
    let expected = tree.get("settings").filter(|s| !s.is_null());
    assert_eq!(settings.and_then(Result::ok).as_ref(), expected, "settings");
}

/// The Pod fields the reduced pod holds, cut from serde_json's tree.
fn reduced_pod(pod: &Value) -> Value {
    let Some(spec) = pod.get("spec").filter(|spec| !spec.is_null()) else {
        return Value::Object(Map::new());
    };
    let mut reduced = Map::new();
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get(list).and_then(Value::as_array) else {
            continue;
        };
        let containers = containers
            .iter()
            .map(|container| pick(container, &["name", "restartPolicy", "resources"]))
            .collect();
        reduced.insert(list.to_owned(), Value::Array(containers));
    }
    if let Value::Object(fields) = pick(spec, &["resources", "nodeName", "affinity"]) {
        reduced.extend(fields);
    }
    serde_json::json!({ "spec": reduced })
}

fn pick(object: &Value, keys: &[&str]) -> Value {
    let picked = keys
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), object.get(*key)?.clone())))
        .collect();
    Value::Object(picked)
}

fn check_pod_text(text: &str, tree: &Value) {
    let Some(pod) = PodText::read(text) else {
        return;
    };
    assert_eq!(pod.reduced(), &reduced_pod(tree), "the reduced pod");
    let rewritten = pod
        .rewrite(pod.reduced())
        .expect("an unchanged pod rewrites");
    assert_eq!(rewritten, text.trim_matches([' ', '\n', '\r', '\t']));
}

/// The Node-list reader: byte 0 says whether a pinned node is looked for;
/// it reads only JSON, and counts each listed node at most once.
pub fn check_node_list(data: &[u8]) {
    let (pinned, list) = match data.split_first() {
        Some((flag, list)) => ((flag % 2 == 1).then_some("gpu-node-1"), list),
        None => (None, data),
    };
    let Ok(view) = nodes::parse_node_list(list, &LabelPrefix::default(), pinned) else {
        return;
    };
    assert!(
        serde_json::from_slice::<IgnoredAny>(list).is_ok(),
        "the Node-list reader read invalid JSON"
    );
    assert_eq!(view.malformed == 0, view.first_problem.is_none());
    if let Ok(tree) = serde_json::from_slice::<Value>(list) {
        let listed = tree["items"].as_array().map_or(0, Vec::len);
        let counted = u64::from(view.fleet.nodes()) + u64::from(view.malformed);
        assert!(
            counted <= listed as u64,
            "{counted} nodes counted of {listed} listed"
        );
    }
}

/// The fleet-summary reader: what it reads, written back with `to_data`,
/// reads the same.
pub fn check_fleet_summary(data: &[u8]) {
    let Ok(summary) = fleet_summary::parse_summary(data) else {
        return;
    };
    let written = summary.to_data();
    let again = FleetSummary::from_data(written.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    assert_eq!(again.as_ref(), Ok(&summary), "the summary round-trip");
}
