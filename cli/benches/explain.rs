//! The operator's tool at scale (issue #22): `gpu-topology explain` of
//! 1,000 manifests against a 5,000-node fleet, everything the command does
//! but printing (`gpu_topology_cli::run::explain_report`): reading the
//! files, the policy's settings, the Node file, each decision with its
//! record, and the report.
//!
//! `cargo bench -p gpu-topology-cli` (or `make bench`, all benches). The
//! inputs are generated into target/tool-bench/: the Nodes of `make demo`'s
//! fleet (examples/cluster/nodes.json: 11 nodes of 5 shapes with
//! the labels real kubelets, cloud providers, NFD and the labeler write)
//! repeated to 5,000 under new names, as `kubectl get nodes -o json`
//! prints them, and the example requests' objects (examples/requests/*.json:
//! Pods, a Deployment, a non-GPU pod) repeated to 1,000, as one `List`.
//! They are kept, so that the release binary can be run on them for its
//! peak memory:
//!
//! ```text
//! cargo build --release -p gpu-topology-cli
//! /usr/bin/time -v target/release/gpu-topology explain target/tool-bench/objects-1000.json \
//!     --nodes target/tool-bench/nodes-5000.json --settings examples/settings.yaml -o json > /dev/null
//! ```
//!
//! After criterion's report, the peak resident memory of this process
//! (Linux `VmHWM`) is printed: criterion's own included.

use criterion::Criterion;
use gpu_topology_cli::args::{ExplainArgs, FleetArgs, Output, PolicyArgs};
use gpu_topology_cli::run::explain_report;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const NODES: usize = 5_000;
const OBJECTS: usize = 1_000;

/// The example requests' objects, in file order.
fn example_objects(root: &Path) -> Vec<Value> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("examples/requests"))
        .expect("examples/requests")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let review: Value =
                serde_json::from_str(&std::fs::read_to_string(path).expect("readable"))
                    .expect("JSON");
            review["request"]["object"].clone()
        })
        .collect()
}

/// Writes the inputs; returns the objects' and the Nodes' files.
fn inputs(root: &Path) -> (PathBuf, PathBuf) {
    let dir = root.join("target/tool-bench");
    std::fs::create_dir_all(&dir).expect("target/tool-bench");
    let demo: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("examples/cluster/nodes.json"))
            .expect("the demo fleet's Nodes"),
    )
    .expect("JSON");
    let demo = demo["items"].as_array().expect("a List").clone();
    let items: Vec<Value> = (0..NODES)
        .map(|index| {
            let mut node = demo[index % demo.len()].clone();
            node["metadata"]["name"] = json!(format!("gpu-node-{index:05}"));
            node
        })
        .collect();
    let nodes = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let nodes_file = dir.join(format!("nodes-{NODES}.json"));
    std::fs::write(&nodes_file, nodes.to_string()).expect("written");
    let examples = example_objects(root);
    let items: Vec<Value> = examples.iter().cycle().take(OBJECTS).cloned().collect();
    let objects_file = dir.join(format!("objects-{OBJECTS}.json"));
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&objects_file, list.to_string()).expect("written");
    (objects_file, nodes_file)
}

fn args(objects: &Path, nodes: &Path, settings: &Path) -> ExplainArgs {
    ExplainArgs {
        objects: vec![objects.to_owned()],
        fleet: FleetArgs {
            nodes: Some(nodes.to_owned()),
            summary: None,
            kubeconfig: None,
            context: None,
        },
        policy: PolicyArgs {
            settings: Some(settings.to_owned()),
        },
        output: Output::Json,
        verbose: false,
    }
}

/// This process's peak resident memory, from /proc (Linux).
fn peak_memory() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .map(|line| line.trim_start_matches("VmHWM:").trim().to_owned())
}

/// The repository: the crate's parent directory.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate sits in the repository")
        .to_owned()
}

fn main() {
    let root = repo_root();
    let (objects, nodes) = inputs(&root);
    let args = args(&objects, &nodes, &root.join("examples/settings.yaml"));
    let (report, _) = explain_report(&args).expect("the inputs are good");
    let summary: Value = serde_json::from_str(&report).expect("a JSON report");
    println!(
        "explained {} objects against {NODES} nodes: {}",
        summary["summary"]["objects"], summary["summary"]
    );
    let mut criterion = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(30))
        .configure_from_args();
    criterion.bench_function(
        &format!("tool/explain/{OBJECTS}-objects/{NODES}-nodes"),
        |b| b.iter(|| explain_report(&args).expect("the inputs are good")),
    );
    criterion.final_summary();
    if let Some(peak) = peak_memory() {
        println!("peak resident memory of this process (VmHWM): {peak}");
    }
}
