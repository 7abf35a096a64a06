//! The cluster-aware fit at scale: one `validate` of an 8-GPU pod through the
//! Wasm harness while the host answers the Node listing with 10, 500 and
//! 5,000 labeled nodes, next to the same decision computed natively.
//!
//! `cargo bench -p e2e-tests --bench fleet` (or `make bench`, all benches).
//! The fleets are generated here as kwctl session files
//! (`target/fleet-sessions/nodes-<n>.yml`, replayable with `kwctl run
//! --replay-host-capabilities-interactions`) and loaded back from the file.
//! Each node carries the gpu-topology.io labels of the session generator's
//! cloud machines (`e2e_tests::fleets`: every fact of the kubelet model and
//! the shape, written through the label contract) and 16 other labels of
//! real GPU nodes, since the field mask keeps every label. Measured:
//! - `fleet/<n>/wasm`: the waPC `validate` call with `capacity.source:
//!   nodes`, answered as bytes; the host serves the list from the session
//!   (rewound outside the timing);
//! - `fleet/<n>/wasm-no-cluster-view`: the same call when the host refuses
//!   Node access (the evaluation without any listing), the baseline;
//! - `fleet/<n>/native`: the policy's decision compiled natively, the list
//!   handed over in memory;
//! - `fleet/<n>/native-list-parse`: only reading the list into the fleet;
//! - `fleet/<n>/wasm-summary`: the waPC `validate` call with the examples'
//!   settings (`capacity.source: auto`, the default): the host answers one
//!   `get_resource` with the fleet summary ConfigMap of the same fleet
//!   (session `target/fleet-sessions/summary-<n>.yml`), and no Node is
//!   listed. Its answer is checked to equal the one from the Node list.
//!
//! After criterion's report a summary table prints the means per size, then
//! per size the summary ConfigMap's bytes and groups and the host calls one
//! admission makes on each path.

use criterion::{BatchSize, Criterion};
use e2e_tests::fleets;
use e2e_tests::policy::validate_payload;
use e2e_tests::scenario::load_settings;
use e2e_tests::session::{HostRequest, RecordedExchange, Response};
use e2e_tests::{
    load_request, policy_wasm_path, repo_root, ContextAwareResource, HostCapabilities, Policy,
    PolicyModule, Session,
};
use gpu_topology::{FleetSummary, LabelPrefix};
use gpu_topology_policy::cluster::fleet_summary::summary_request;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::cluster::nodes::{node_list_request, parse_node_list};
use gpu_topology_policy::decide::evaluate_with;
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::FleetSummarySettings;
use gpu_topology_policy::settings::{settings_from_value, Config};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::json;
use std::collections::BTreeSet;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Labeled nodes per generated fleet.
const FLEET_SIZES: [usize; 3] = [10, 500, 5_000];
/// The request measured: an 8-GPU training pod, with the examples' settings
/// (`affinity: preferred`, NUMA alignment).
const REQUEST: &str = "examples/requests/eight-gpu-pod.json";
const SETTINGS: &str = "examples/settings.yaml";
/// Calls per size for the summary's own timing (after as many warm-up calls).
const SUMMARY_ITERATIONS: u32 = 50;

/// The `NodeList` the host returns for a fleet of `size` nodes: the
/// generator's cloud fleet (`e2e_tests::fleets::cloud_fleet`), every node
/// labeled with all the kubelet model's facts and its shape, next to the
/// labels real kubelets, cloud providers, NFD and the GPU operator write.
fn node_list(size: usize) -> String {
    let prefix = LabelPrefix::default();
    fleets::node_list(fleets::cloud_fleet(size, &prefix)).to_string()
}

/// The policy's request in the harness's (kwctl's) terms.
fn recorded_request(request: ListAllResourcesRequest) -> HostRequest {
    HostRequest::KubernetesListResourceAll {
        api_version: request.api_version,
        kind: request.kind,
        label_selector: request.label_selector,
        field_selector: request.field_selector,
        field_masks: request.field_masks,
    }
}

/// What the summarizer makes of the fleet in `list`, dated `generated_at`.
fn fleet_summary(list: &[u8], generated_at: u64) -> FleetSummary {
    let view = parse_node_list(list, &LabelPrefix::default(), None).expect("generated list parses");
    FleetSummary {
        fleet: view.fleet,
        malformed: view.malformed,
        generated_at,
        heartbeats: None,
    }
}

/// The summarizer's ConfigMap for the fleet in `list`, written now.
fn summary_config_map(list: &[u8]) -> String {
    let generated_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "gpu-topology-fleet", "namespace": "kube-system"},
           "data": fleet_summary(list, generated_at).to_data()})
    .to_string()
}

/// Bytes of the summary's `data` values for the fleet in `list`, and its groups.
fn summary_size(list: &[u8]) -> (usize, usize) {
    let summary = fleet_summary(list, 0);
    let bytes = summary.to_data().values().map(String::len).sum();
    (bytes, summary.fleet.groups().len())
}

/// The summary request in the harness's (kwctl's) terms.
fn recorded_summary_request(request: GetResourceRequest) -> HostRequest {
    HostRequest::KubernetesGetResource {
        api_version: request.api_version,
        kind: request.kind,
        name: request.name,
        namespace: request.namespace,
        disable_cache: request.disable_cache,
        field_masks: request.field_masks,
    }
}

/// Writes the fleet's session files (Node list, fleet summary) and loads them
/// back, as kwctl would.
fn session_files(size: usize) -> ((PathBuf, Session), Session) {
    let list = node_list(size);
    let summary = RecordedExchange {
        request: recorded_summary_request(summary_request(&FleetSummarySettings::default())),
        response: Response::Success {
            payload: summary_config_map(list.as_bytes()),
        },
    };
    let nodes = RecordedExchange {
        request: recorded_request(node_list_request(&LabelPrefix::default())),
        response: Response::Success { payload: list },
    };
    (
        write_session(&format!("nodes-{size}.yml"), nodes),
        write_session(&format!("summary-{size}.yml"), summary).1,
    )
}

fn write_session(name: &str, exchange: RecordedExchange) -> (PathBuf, Session) {
    let dir = repo_root().join("target/fleet-sessions");
    std::fs::create_dir_all(&dir).expect("session directory");
    let path = dir.join(name);
    let yaml = Session::new(vec![exchange])
        .to_yaml()
        .expect("session YAML");
    std::fs::write(&path, yaml).expect("session file");
    let session = Session::load(&path).expect("session file loads");
    (path, session)
}

/// Hands the policy a list already in memory (the native counterpart of the host).
struct InMemory(Vec<u8>);

impl ClusterReader for InMemory {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Ok(self.0.clone())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        panic!("the fleet benchmark lists Nodes only: {request:?}")
    }
}

struct Fleet {
    size: usize,
    list: Vec<u8>,
    session_bytes: u64,
    /// The summary ConfigMap's `data` as the summarizer writes it, and its groups.
    summary_bytes: usize,
    summary_groups: usize,
    with_nodes: Policy,
    refused: Policy,
    with_summary: Policy,
}

struct Inputs {
    /// The request with `capacity.source: nodes` added to the settings.
    payload: Vec<u8>,
    /// The same request with the examples' settings (the summary by default).
    summary_payload: Vec<u8>,
    /// The AdmissionRequest JSON, read by the policy on each native call.
    request: String,
    config: Config,
}

fn inputs() -> Inputs {
    let root = repo_root();
    let request = load_request(&root.join(REQUEST)).expect("bench request");
    let settings = load_settings(&root.join(SETTINGS)).expect("example settings");
    let summary_payload = validate_payload(&request, &settings).expect("payload");
    let mut node_settings = settings.clone();
    node_settings["capacity"]["source"] = json!("nodes");
    let payload = validate_payload(&request, &node_settings).expect("payload");
    let config = settings_from_value(node_settings)
        .and_then(|s| s.config())
        .expect("settings");
    let request = request.to_string();
    Inputs {
        payload,
        summary_payload,
        request,
        config,
    }
}

fn fleets(module: &PolicyModule) -> Vec<Fleet> {
    let grant = |kinds: &[&str]| -> BTreeSet<ContextAwareResource> {
        kinds
            .iter()
            .map(|kind| ContextAwareResource {
                api_version: "v1".into(),
                kind: (*kind).into(),
            })
            .collect()
    };
    let node_access = grant(&["Node"]);
    let summary_access = grant(&["Node", "ConfigMap"]);
    FLEET_SIZES
        .iter()
        .map(|&size| {
            let ((path, session), summary_session) = session_files(size);
            let list = match &session.exchanges()[0].response {
                Response::Success { payload } => payload.clone().into_bytes(),
                Response::Error { message } => panic!("generated an error: {message}"),
            };
            let capabilities = HostCapabilities::new(node_access.clone(), Some(&session));
            let (summary_bytes, summary_groups) = summary_size(&list);
            Fleet {
                size,
                summary_bytes,
                summary_groups,
                list,
                session_bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                with_nodes: module
                    .instantiate(Arc::new(capabilities))
                    .expect("instance"),
                refused: module
                    .instantiate(Arc::new(HostCapabilities::none()))
                    .expect("instance"),
                with_summary: module
                    .instantiate(Arc::new(HostCapabilities::new(
                        summary_access.clone(),
                        Some(&summary_session),
                    )))
                    .expect("instance"),
            }
        })
        .collect()
}

/// One evaluation with the cluster view; the session is rewound first.
fn wasm_with_nodes(fleet: &Fleet, payload: &[u8]) -> e2e_tests::ValidationResponse {
    evaluate_answered(&fleet.with_nodes, payload)
}

/// One evaluation answered from the fleet summary.
fn wasm_with_summary(fleet: &Fleet, payload: &[u8]) -> e2e_tests::ValidationResponse {
    evaluate_answered(&fleet.with_summary, payload)
}

/// Rewinds `policy`'s session, evaluates, and checks that every host call
/// was answered (a refused call would silently take another path).
fn evaluate_answered(policy: &Policy, payload: &[u8]) -> e2e_tests::ValidationResponse {
    policy.capabilities().reset();
    let response = policy.validate_raw(payload).expect("wasm validate");
    assert!(response.accepted, "{:?}", response.message);
    let calls = policy.capabilities().calls();
    assert!(
        calls.iter().all(|c| c.error.is_none()),
        "the host refused a call: {calls:?}"
    );
    response
}

fn native(inputs: &Inputs, list: &[u8]) {
    let request = AdmissionRequest::parse(&inputs.request).expect("admission request");
    let decision = evaluate_with(&request, &inputs.config, &InMemory(list.to_vec()));
    black_box(decision);
}

fn scale(c: &mut Criterion) {
    let module = PolicyModule::load(&policy_wasm_path()).unwrap_or_else(|e| panic!("{e:#}"));
    let inputs = inputs();
    for fleet in fleets(&module) {
        let mut group = c.benchmark_group(format!("fleet/{}", fleet.size));
        group.bench_function("wasm", |b| {
            b.iter_batched(
                || fleet.with_nodes.capabilities().reset(),
                |()| {
                    fleet
                        .with_nodes
                        .call("validate", &inputs.payload)
                        .expect("validate")
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function("wasm-no-cluster-view", |b| {
            b.iter(|| {
                fleet
                    .refused
                    .call("validate", &inputs.payload)
                    .expect("validate")
            })
        });
        group.bench_function("wasm-summary", |b| {
            b.iter_batched(
                || fleet.with_summary.capabilities().reset(),
                |()| {
                    fleet
                        .with_summary
                        .call("validate", &inputs.summary_payload)
                        .expect("validate")
                },
                BatchSize::PerIteration,
            )
        });
        group.bench_function("native", |b| b.iter(|| native(&inputs, &fleet.list)));
        group.bench_function("native-list-parse", |b| {
            b.iter(|| parse_node_list(black_box(&fleet.list), &LabelPrefix::default(), None))
        });
        group.finish();
    }
}

/// Mean of `f` over [`SUMMARY_ITERATIONS`] calls after as many warm-up calls.
fn mean(mut f: impl FnMut()) -> Duration {
    for _ in 0..SUMMARY_ITERATIONS {
        f();
    }
    let start = Instant::now();
    for _ in 0..SUMMARY_ITERATIONS {
        f();
    }
    start.elapsed() / SUMMARY_ITERATIONS
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Means per fleet size, including the session rewind (a clone of the list,
/// which the real host does not pay) so the numbers err on the slow side.
fn summary() {
    let module = PolicyModule::load(&policy_wasm_path()).unwrap_or_else(|e| panic!("{e:#}"));
    let inputs = inputs();
    println!("\nsummary (mean of {SUMMARY_ITERATIONS} calls; 8-GPU pod, examples/settings.yaml)");
    println!(
        "{:>6} {:>11} {:>12} {:>9} {:>13} {:>12} {:>10} {:>11}",
        "nodes",
        "list bytes",
        "session bytes",
        "wasm ms",
        "wasm no-view",
        "wasm summary",
        "native ms",
        "parse ms"
    );
    let mut costs = Vec::new();
    for fleet in fleets(&module) {
        // Both views of the fleet give the same answer.
        let from_list = wasm_with_nodes(&fleet, &inputs.payload);
        let from_summary = wasm_with_summary(&fleet, &inputs.summary_payload);
        assert_eq!(
            (&from_list.mutated_object, &from_list.warnings),
            (&from_summary.mutated_object, &from_summary.warnings),
            "{} nodes: the summary and the Node list disagree",
            fleet.size
        );
        // What the host is asked per admission, and the summary's size.
        let calls_with = |policy: &Policy| -> Vec<String> {
            policy
                .capabilities()
                .calls()
                .iter()
                .map(|call| call.operation.clone())
                .collect()
        };
        costs.push(format!(
            "{:>6} nodes: summary {} bytes for {} groups; host calls: summary path {:?}, Node-list path {:?}",
            fleet.size,
            fleet.summary_bytes,
            fleet.summary_groups,
            calls_with(&fleet.with_summary),
            calls_with(&fleet.with_nodes),
        ));
        let wasm = mean(|| {
            fleet.with_nodes.capabilities().reset();
            black_box(fleet.with_nodes.call("validate", &inputs.payload)).expect("validate");
        });
        let summary_time = mean(|| {
            fleet.with_summary.capabilities().reset();
            black_box(fleet.with_summary.call("validate", &inputs.summary_payload))
                .expect("validate");
        });
        let refused = mean(|| {
            black_box(fleet.refused.call("validate", &inputs.payload)).expect("validate");
        });
        let native_time = mean(|| native(&inputs, &fleet.list));
        let parse = mean(|| {
            black_box(parse_node_list(&fleet.list, &LabelPrefix::default(), None).expect("parse"));
        });
        println!(
            "{:>6} {:>11} {:>12} {:>9.3} {:>13.3} {:>12.3} {:>10.3} {:>11.3}",
            fleet.size,
            fleet.list.len(),
            fleet.session_bytes,
            millis(wasm),
            millis(refused),
            millis(summary_time),
            millis(native_time),
            millis(parse)
        );
    }
    println!();
    for line in costs {
        println!("{line}");
    }
}

fn main() {
    // Large fleets take ~15 ms a call: fewer, longer samples than the default.
    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    scale(&mut criterion);
    criterion.final_summary();
    // `cargo test --benches` runs benches in test mode: skip the summary.
    if !std::env::args().any(|a| a == "--test") {
        summary();
    }
}
