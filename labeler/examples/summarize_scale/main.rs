//! Measures `gpu-topology-labeler summarize --once` at fleet scale: peak RSS
//! and wall time of one real summarizer process listing N realistic GPU Nodes
//! from a loopback API server (the scripted server of the labeler's tests),
//! page by page with continue tokens, then writing the summary ConfigMap.
//!
//! Each Node is `gpu-node.json` (an HGX H100 node on EKS with NFD and the GPU
//! Operator: 27 labels, the kubelet's, NFD's and the CSI driver's
//! annotations, six managedFields entries, status with conditions, addresses,
//! capacity/allocatable and 50 images), given its own name, uid, address and
//! zone, one of three topology shapes, and 10 to 50 of the images. The server
//! sends what the API server sends for the summarizer's request (metadata
//! only, `PartialObjectMetadataList`), in pages of the size it asks for.
//!
//! This is a measurement, not a test: it checks only that the pass listed and
//! summarized every node (so that a broken pass is never reported as fast).
//!
//! ```console
//! cargo build --release -p gpu-topology-labeler
//! cargo run --release -p gpu-topology-labeler --example summarize_scale -- \
//!     --bin target/release/gpu-topology-labeler --nodes 0,1000,5000,10000,20000 --runs 3
//! ```
//!
//! Needs GNU time at `/usr/bin/time` (its `-v` report gives the peak RSS).

#[allow(dead_code)]
#[path = "../../tests/common/fake_api.rs"]
mod fake_api;

use anyhow::{bail, ensure, Context, Result};
use fake_api::{Reply, Request};
use gpu_topology::{FleetSummary, Interconnect, LabelPrefix, NodeTopology, TopologyManagerPolicy};
use gpu_topology_labeler::summarize::kubernetes::PAGE_SIZE;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The node every generated node is made from.
const TEMPLATE: &str = include_str!("gpu-node.json");
/// Fewest and most image entries a generated node lists.
const IMAGES_MIN: usize = 10;
const IMAGES_MAX: usize = 50;
const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
const GNU_TIME: &str = "/usr/bin/time";

struct Options {
    bin: PathBuf,
    nodes: Vec<usize>,
    runs: usize,
}

fn options() -> Result<Options> {
    let mut bin = PathBuf::from("target/release/gpu-topology-labeler");
    let mut nodes = vec![0, 1_000, 5_000, 10_000, 20_000];
    let mut runs = 1;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--bin" => bin = PathBuf::from(value),
            "--nodes" => {
                nodes = value
                    .split(',')
                    .map(|n| n.trim().parse().with_context(|| format!("--nodes {n:?}")))
                    .collect::<Result<_>>()?;
            }
            "--runs" => runs = value.parse().context("--runs")?,
            other => bail!("unknown flag {other} (flags: --bin PATH, --nodes N,N,..., --runs R)"),
        }
    }
    ensure!(
        bin.is_file(),
        "{}: no such binary (build it with cargo build --release -p gpu-topology-labeler)",
        bin.display()
    );
    ensure!(
        Path::new(GNU_TIME).is_file(),
        "{GNU_TIME} (GNU time) is needed for the peak RSS"
    );
    Ok(Options { bin, nodes, runs })
}

/// The topology shapes the fleet cycles through: the template's HGX H100,
/// four L4s on one NUMA node, four A100 PCIe with NVLink bridge pairs.
fn shapes() -> Vec<NodeTopology> {
    let hgx = NodeTopology::from_labels(
        &LabelPrefix::default(),
        template_labels()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .expect("the template's topology labels parse");
    let l4 = NodeTopology {
        gpus: Some(4),
        gpus_per_numa_max: Some(4),
        numa_nodes: Some(1),
        nvlink_group_max: Some(1),
        interconnect: Some(Interconnect::Pcie),
        cpus_per_numa: Some(48),
        memory_per_numa_gib: Some(187),
        topology_manager_policy: Some(TopologyManagerPolicy::BestEffort),
        ..hgx.clone()
    };
    let a100 = NodeTopology {
        gpus: Some(4),
        gpus_per_numa_max: Some(2),
        numa_nodes: Some(2),
        nvlink_group_max: Some(2),
        interconnect: Some(Interconnect::NvLink),
        cpus_per_numa: Some(48),
        memory_per_numa_gib: Some(440),
        ..hgx.clone()
    };
    vec![hgx, l4, a100]
}

fn template() -> Value {
    serde_json::from_str(TEMPLATE).expect("gpu-node.json is JSON")
}

fn template_labels() -> BTreeMap<String, String> {
    serde_json::from_value(template()["metadata"]["labels"].clone()).expect("labels are strings")
}

/// Node `index` of the fleet, in full (as `kubectl get node -o json` shows it).
fn node(template: &Value, index: usize, shape: &NodeTopology) -> Value {
    let prefix = LabelPrefix::default();
    let mut node = template.clone();
    let address = format!(
        "10.{}.{}.{}",
        1 + index / 65_536,
        (index / 256) % 256,
        index % 256
    );
    let name = format!("ip-{}.ec2.internal", address.replace('.', "-"));
    let metadata = &mut node["metadata"];
    metadata["name"] = json!(name);
    metadata["uid"] = json!(format!("3f1c6a2e-8b4d-4c7e-9a15-{index:012x}"));
    let labels = metadata["labels"].as_object_mut().expect("labels");
    labels.retain(|key, _| !key.starts_with(&format!("{prefix}/")));
    for (key, value) in shape.to_labels(&prefix) {
        labels.insert(key, json!(value));
    }
    labels.insert("kubernetes.io/hostname".into(), json!(name));
    labels.insert(
        "topology.kubernetes.io/zone".into(),
        json!(ZONES[index % ZONES.len()]),
    );
    metadata["annotations"]["alpha.kubernetes.io/provided-node-ip"] = json!(address);
    let status = &mut node["status"];
    status["addresses"] = json!([
        {"type": "InternalIP", "address": address},
        {"type": "InternalDNS", "address": name},
        {"type": "Hostname", "address": name},
    ]);
    let images = status["images"].as_array_mut().expect("images");
    images.truncate(IMAGES_MIN + (index * 7) % (IMAGES_MAX - IMAGES_MIN + 1));
    node
}

/// What the API server sends for one node of a metadata-only list.
fn metadata_item(node: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": node["metadata"]})
}

/// The fleet's pages as the API server sends them for
/// `limit=PAGE_SIZE` (`PartialObjectMetadataList`, continue token
/// `page-<next>` on all but the last), and the mean bytes per node of the
/// metadata and of the full objects.
struct Listing {
    pages: Vec<String>,
    metadata_bytes_per_node: usize,
    full_bytes_per_node: usize,
}

fn listing(nodes: usize) -> Listing {
    let template = template();
    let shapes = shapes();
    let page_size = PAGE_SIZE as usize;
    let page_count = nodes.div_ceil(page_size).max(1);
    let (mut metadata_bytes, mut full_bytes) = (0, 0);
    let pages = (0..page_count)
        .map(|page| {
            let first = page * page_size;
            let items: Vec<String> = (first..nodes.min(first + page_size))
                .map(|index| {
                    let node = node(&template, index, &shapes[index % shapes.len()]);
                    full_bytes += node.to_string().len();
                    let item = metadata_item(&node).to_string();
                    metadata_bytes += item.len();
                    item
                })
                .collect();
            let mut metadata = json!({"resourceVersion": "48213377"});
            if page + 1 < page_count {
                metadata["continue"] = json!(format!("page-{}", page + 1));
                metadata["remainingItemCount"] = json!(nodes - first - items.len());
            }
            format!(
                r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{metadata},"items":[{}]}}"#,
                items.join(",")
            )
        })
        .collect();
    Listing {
        pages,
        metadata_bytes_per_node: metadata_bytes / nodes.max(1),
        full_bytes_per_node: full_bytes / nodes.max(1),
    }
}

/// The figures of one pass.
struct Measured {
    pages: usize,
    max_rss_kib: u64,
    pass_ms: u64,
    wall: String,
    user_s: String,
    system_s: String,
}

/// Runs one `summarize --once` against a fresh server serving `listing`.
async fn measure(options: &Options, nodes: usize, listing: &Listing) -> Result<Measured> {
    let mut steps: Vec<Reply> = listing
        .pages
        .iter()
        .map(|page| Reply {
            status: 200,
            body: Some(page.clone()),
        })
        .collect();
    // The summary apply: the scripted server echoes the applied object.
    steps.push(Reply::status(200));
    let (port, log, server) = fake_api::scripted(steps).await;
    let dir = std::env::temp_dir().join(format!("summarize-scale-{}-{nodes}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = fake_api::kubeconfig(&dir, port, "default");
    let output = tokio::process::Command::new(GNU_TIME)
        .arg("-v")
        .arg(&options.bin)
        .args(["summarize", "--once"])
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .kill_on_drop(true)
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(output.status.success(), "the pass failed:\n{stderr}");
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .context("the summarizer made fewer requests than the listing has pages")??;
    std::fs::remove_dir_all(&dir)?;
    let requests = fake_api::requests(&log);
    check_requests(&requests, listing.pages.len(), nodes)?;
    Ok(Measured {
        pages: listing.pages.len(),
        max_rss_kib: time_field(&stderr, "Maximum resident set size (kbytes)")?.parse()?,
        pass_ms: log_field(&stderr, "elapsed_ms")?.parse()?,
        wall: time_field(&stderr, "Elapsed (wall clock) time (h:mm:ss or m:ss)")?.to_owned(),
        user_s: time_field(&stderr, "User time (seconds)")?.to_owned(),
        system_s: time_field(&stderr, "System time (seconds)")?.to_owned(),
    })
}

/// The pass asked for every page, metadata only, `PAGE_SIZE` at a time,
/// and wrote a summary of every node.
fn check_requests(requests: &[Request], pages: usize, nodes: usize) -> Result<()> {
    ensure!(
        requests.len() == pages + 1,
        "{} requests for {pages} pages and one apply",
        requests.len()
    );
    for (page, request) in requests[..pages].iter().enumerate() {
        ensure!(
            request.method == "GET" && request.path == "/api/v1/nodes",
            "page {page}: {} {}",
            request.method,
            request.path
        );
        ensure!(
            request.query.contains(&format!("limit={PAGE_SIZE}")),
            "page {page}: {:?}",
            request.query
        );
        let token = format!("continue=page-{page}");
        ensure!(
            (page == 0) != request.query.contains(&token),
            "page {page}: {:?}",
            request.query
        );
        let accept = request.accept.as_deref().unwrap_or_default();
        ensure!(
            accept.contains("as=PartialObjectMetadataList"),
            "page {page} asked for {accept:?}, not metadata only"
        );
    }
    let apply = &requests[pages];
    ensure!(
        apply.method == "PATCH",
        "the last request is a {}",
        apply.method
    );
    let data: BTreeMap<String, String> = serde_json::from_value(apply.body["data"].clone())?;
    let summary = FleetSummary::from_data(data.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    ensure!(
        summary.fleet.nodes() as usize == nodes && summary.malformed == 0,
        "the summary counts {} nodes ({} malformed) of {nodes}",
        summary.fleet.nodes(),
        summary.malformed
    );
    Ok(())
}

/// A value of GNU time's `-v` report.
fn time_field<'a>(report: &'a str, name: &str) -> Result<&'a str> {
    report
        .lines()
        .find_map(|line| line.trim().strip_prefix(name)?.strip_prefix(": "))
        .with_context(|| format!("no {name:?} in:\n{report}"))
}

/// A `key=value` field of the summarizer's "fleet summary written" line.
fn log_field<'a>(logs: &'a str, key: &str) -> Result<&'a str> {
    logs.lines()
        .filter(|line| line.contains("fleet summary written"))
        .flat_map(str::split_whitespace)
        .find_map(|field| field.strip_prefix(key)?.strip_prefix('='))
        .with_context(|| format!("no {key}= in:\n{logs}"))
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let options = options()?;
    println!("binary: {}", options.bin.display());
    println!("| nodes | pages | bytes/node listed (full Node) | max RSS (MiB) | pass (ms, its log) | process wall | user s | sys s | load avg |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for &nodes in &options.nodes {
        let listing = listing(nodes);
        for _ in 0..options.runs {
            let measured = measure(&options, nodes, &listing).await?;
            println!(
                "| {nodes} | {} | {} ({}) | {:.1} | {} | {} | {} | {} | {} |",
                measured.pages,
                listing.metadata_bytes_per_node,
                listing.full_bytes_per_node,
                measured.max_rss_kib as f64 / 1024.0,
                measured.pass_ms,
                measured.wall,
                measured.user_s,
                measured.system_s,
                load_average(),
            );
        }
    }
    Ok(())
}
