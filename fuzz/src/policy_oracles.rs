//! What the policy's fuzz targets check, shared with the corpus replay tests
//! (`tests/fuzz_regressions.rs` includes this file): each `check_*` takes
//! the bytes of one input, runs the entry point, and panics, naming the
//! broken rule, when the answer breaks it. A panic inside the policy is a
//! finding too: the policy must answer every input.
//!
//! The rules are independent of the policy's own code where they can be:
//! serde_json is the reference for what JSON is and what it holds.

use gpu_topology::{Fleet, FleetSummary, LabelPrefix, NodeTopology};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::cluster::{fleet_summary, nodes, MAX_SHAPES};
use gpu_topology_policy::decide::{evaluate_pod, Verdict};
use gpu_topology_policy::json::scan::{self as json_scan, Scanner, MAX_DEPTH};
use gpu_topology_policy::request::pod_text::PodText;
use gpu_topology_policy::request::{GroupVersionKind, Payload};
use gpu_topology_policy::settings::parse_settings;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
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

/// The label values (without the prefix) every generated HGX node starts
/// from: 8 GPUs, 4 + 4 on two NUMA nodes of 56 CPUs, SMT-2, static CPU
/// Manager (as `src/decide/testing.rs` writes them).
const HGX_LABELS: &str = "gpus=8 gpus-per-numa-max=4 nvlink-group-max=8 numa-gpus=4.4 numa-cpus=56.56 numa-reserved-cpus=2.0 numa-reserved-cores=1.0 numa-sockets=0.1 numa-hugepages-2mi=0.0 numa-hugepages-1gi=0.0 threads-per-core=2 cpu-manager-policy=static topology-manager-prefer-closest-numa-nodes=false topology-manager-max-allowable-numa-nodes=8 cpu-manager-full-pcpus-only=false cpu-manager-distribute-cpus-across-numa=false cpu-manager-align-by-socket=false";
/// A machine of 64 NUMA nodes (the most a kubelet's uint64 masks hold):
/// 2 GPUs on each of the first 4, 16 CPUs on every one.
const SIXTY_FOUR_NUMA_LABELS: &str = "gpus=8 gpus-per-numa-max=2 nvlink-group-max=8 numa-gpus=2.2.2.2.0_60 numa-cpus=16_64 numa-reserved-cpus=0_64 numa-sockets=0_32.1_32 numa-hugepages-2mi=0_64 numa-hugepages-1gi=0_64 machine-numa-nodes=64 threads-per-core=1 cpu-manager-policy=static topology-manager-policy=single-numa-node topology-manager-scope=pod memory-manager-policy=none topology-manager-prefer-closest-numa-nodes=true topology-manager-max-allowable-numa-nodes=64 cpu-manager-full-pcpus-only=false cpu-manager-distribute-cpus-across-numa=false cpu-manager-align-by-socket=false kubelet-version=1.36";
/// Hostile values a node may carry in place of one of its facts.
const HOSTILE_LABELS: [&str; 8] = [
    "numa-cpus=8_1000",
    "machine-numa-nodes=1000",
    "numa-memory-mib=18446744073709551615.1",
    "gpus=4294967295",
    "numa-gpus=4294967295.4294967295",
    "topology-manager-max-allowable-numa-nodes=4294967295",
    "numa-cpus=0.0",
    "numa-distances=zzzz",
];
/// The pods the fleet target decides on: each makes the decision search,
/// replan or cap in its own way.
const FLEET_PODS: [&str; 5] = [
    // Defaults lowered per shape: the search over distinct shapes.
    r#"{"spec": {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "4"}}}, {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}"#,
    r#"{"spec": {"containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "100", "memory": "512Gi"}}}]}}"#,
    r#"{"spec": {"containers": [{"name": "serve", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}"#,
    r#"{"spec": {"initContainers": [{"name": "fetch", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}], "containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}}, {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "1"}}}, {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "20", "memory": "100Gi"}}}]}}"#,
    r#"{"spec": {"containers": [{"name": "shard", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}"#,
];
/// The settings the fleet target reads the fleet with: the Node list or
/// the fleet summary, preferred or required affinity, both scopes.
const FLEET_SETTINGS: [&str; 4] = [
    r#"{"capacity": {"source": "nodes"}}"#,
    r#"{"capacity": {"source": "nodes"}, "topology": {"affinity": "required"}}"#,
    r#"{"capacity": {"source": "summary"}}"#,
    r#"{"capacity": {"source": "nodes"}, "topology": {"affinity": "required", "scope": "container"}}"#,
];
/// At most this many nodes per input: past the policy's cap of distinct
/// shapes ([`gpu_topology_policy::cluster::MAX_SHAPES`]), so the target
/// reaches it.
pub const MAX_FUZZ_NODES: usize = 12_000;
/// Each record of the fleet target's input: a kind, two jitter bytes, and
/// how many nodes (less one) it makes.
const NODE_RECORD: usize = 4;

/// One generated node's labels under the default prefix: valid ones with
/// their shape, as the labeler writes them; hostile ones as they are.
fn fleet_node_labels(record: &[u8], index: u32) -> Map<String, Value> {
    let (kind, jitter) = (
        record[0],
        u32::from(u16::from_be_bytes([record[1], record[2]])),
    );
    let j = jitter + index;
    let text = match kind % 6 {
        // Exact MiB of memory, as labelers before whole GiB published it.
        0 => format!("{HGX_LABELS} topology-manager-policy=single-numa-node topology-manager-scope=container memory-manager-policy=static numa-memory-mib={}.{}", 1_031_168 - j, 1_031_168 + j),
        1 => format!("{HGX_LABELS} topology-manager-policy=best-effort topology-manager-scope=pod memory-manager-policy=none numa-memory-mib={}.1031168", 1_031_168 - j),
        2 => format!("{HGX_LABELS} topology-manager-policy=restricted topology-manager-scope=pod memory-manager-policy=static numa-memory-mib={}.{}", 1_031_168 - (j % 64) * 1024, 1_031_168 + j / 64),
        3 => format!("{SIXTY_FOUR_NUMA_LABELS} numa-memory-mib={}_64", 65_536 + j),
        4 => {
            let hostile = HOSTILE_LABELS[record[1] as usize % HOSTILE_LABELS.len()];
            format!("{HGX_LABELS} topology-manager-policy=single-numa-node topology-manager-scope=pod memory-manager-policy=none numa-memory-mib={}.1031168 {hostile}", 1_031_168 - j)
        }
        // No labels of the contract: not a GPU node.
        _ => String::new(),
    };
    let prefix = LabelPrefix::default();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in text
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
    {
        let key = format!("{prefix}/{name}");
        match pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(pair) => pair.1 = value.to_owned(),
            None => pairs.push((key, value.to_owned())),
        }
    }
    let read =
        NodeTopology::from_labels(&prefix, pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let labels = match read {
        Ok(topology) => topology
            .with_shape()
            .to_labels(&prefix)
            .into_iter()
            .collect(),
        Err(_) => pairs,
    };
    labels
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}

/// The fleet target's input as a fleet: its Node list items, in order.
pub fn fleet_nodes(records: &[u8]) -> Vec<Value> {
    let mut items = Vec::new();
    for record in records.chunks_exact(NODE_RECORD) {
        for index in 0..=u32::from(record[3]) {
            if items.len() == MAX_FUZZ_NODES {
                return items;
            }
            let name = format!("gpu-node-{}", items.len());
            let labels = fleet_node_labels(record, index);
            items.push(serde_json::json!({"metadata": {"name": name, "labels": labels}}));
        }
    }
    items
}

/// The cluster the fleet target's pod is decided against: its Node list,
/// and the fleet summary the summarizer would write of it.
struct GeneratedCluster {
    node_list: Vec<u8>,
    summary: Vec<u8>,
}

impl GeneratedCluster {
    fn new(items: Vec<Value>) -> Self {
        let prefix = LabelPrefix::default();
        let mut fleet = Fleet::new();
        let mut malformed = 0;
        for item in &items {
            let labels = item["metadata"]["labels"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)));
            if fleet
                .add_read(NodeTopology::from_labels(&prefix, labels))
                .is_err()
            {
                malformed += 1;
            }
        }
        let generated_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let data = FleetSummary {
            fleet,
            malformed,
            generated_at,
            heartbeats: None,
        }
        .to_data();
        let summary = serde_json::json!({"metadata": {"name": "gpu-topology-fleet"}, "data": data});
        let node_list = serde_json::json!({"kind": "NodeList", "items": items});
        GeneratedCluster {
            node_list: serde_json::to_vec(&node_list).unwrap_or_default(),
            summary: serde_json::to_vec(&summary).unwrap_or_default(),
        }
    }
}

impl ClusterReader for GeneratedCluster {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "Node" => Ok(self.node_list.clone()),
            _ => Ok(br#"{"items": []}"#.to_vec()),
        }
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "ConfigMap" => Ok(self.summary.clone()),
            kind => Err(format!("no {kind} {} here", request.name)),
        }
    }
}

/// The fleet target: byte 0 picks a pod, byte 1 the settings, and each
/// following 4 bytes make up to 256 nodes, most of them each a shape of
/// its own (exact MiB of memory, 64 NUMA nodes, hostile values), up to
/// [`MAX_FUZZ_NODES`]. The pod is answered; a rejection says why; past the
/// cap of distinct shapes the answer says so and does not refuse on
/// shapes; a mutated pod, decided again on the same fleet, is admitted
/// unchanged.
pub fn check_fleet_decision(data: &[u8]) {
    let [pod, settings, records @ ..] = data else {
        return;
    };
    let pod: Value = serde_json::from_str(FLEET_PODS[usize::from(*pod) % FLEET_PODS.len()])
        .expect("the fleet pods are JSON");
    let settings = FLEET_SETTINGS[usize::from(*settings) % FLEET_SETTINGS.len()];
    let config = parse_settings(settings.as_bytes())
        .and_then(|settings| settings.config())
        .expect("the fleet settings are valid");
    let items = fleet_nodes(records);
    let cluster = GeneratedCluster::new(items);
    let decision = evaluate_pod(&pod, &config, &cluster);
    let past_shape_cap = format!("more than the {MAX_SHAPES} one admission decides on");
    match &decision.verdict {
        Verdict::Reject(message) => {
            assert!(!message.trim().is_empty(), "a rejection without a reason");
            assert!(
                !message.contains(&past_shape_cap),
                "refused for the shape cap: {message}"
            );
        }
        Verdict::Accept => {}
        Verdict::Mutate(mutated) => {
            assert!(mutated["spec"].is_object(), "the mutated pod has no spec");
            if decision.warnings.iter().any(|w| w.contains("cap")) {
                // A capped search decides on other figures than a pod that
                // sets them: a second pass may steer it differently.
                return;
            }
            let again = evaluate_pod(mutated, &config, &cluster);
            assert!(
                again.verdict == Verdict::Accept,
                "a second pass changed the mutated pod: {:?}\nfirst: {mutated}",
                again.verdict
            );
        }
    }
}
