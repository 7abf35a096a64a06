//! The policy under a huge cluster view (issue 16 §5): what one GPU
//! admission costs when the host hands it a Node list of 20,000 labeled
//! nodes with many foreign labels, or a list of 50 MB. A measurement, not a
//! test: nothing here asserts a time.
//!
//! ```console
//! make policy.wasm
//! cargo run --release -p e2e-tests --example huge_view -- [RUNS]
//! ```
//!
//! Two views, both of the fleet benchmark's cloud fleet
//! (`e2e_tests::fleets::cloud_fleet`, every node labeled with the whole
//! label contract):
//! - `masked-20k`: 20,000 nodes as a host that honours the policy's field
//!   masks sends them (name and labels), each with [`NFD_FEATURE_LABELS`]
//!   more labels of the kind Node Feature Discovery writes by default
//!   (`feature.node.kubernetes.io/cpu-cpuid.*`, kernel, PCI, ...), on top of
//!   the 16 labels of kubelets, clouds and the GPU Operator;
//! - `unmasked-50mb`: whole Node objects (annotations, managedFields, status
//!   with 50 images: `labeler/examples/summarize_scale/gpu-node.json`), as a
//!   host that ignores field masks sends them, as many as make 50 MB.
//!
//! For each view it reports:
//! - the Wasm `validate` call on a fresh instance (policy-server gives every
//!   request a fresh one), the host serving the list from memory: fastest
//!   and median of RUNS calls (default 5), and the answer (accepted,
//!   warnings);
//! - the Wasm instance's peak linear memory: the smallest
//!   `max_memory_size` (wasmtime's store limit, in 64 KiB pages) under which
//!   the same call still gives the same answer, found by bisection;
//! - the native decision (`evaluate_with`, the list already in memory): its
//!   time and its peak heap above what was allocated before the call,
//!   counted by this binary's allocator.

use anyhow::{anyhow, bail, Context, Result};
use e2e_tests::policy::validate_payload;
use e2e_tests::scenario::load_settings;
use e2e_tests::{fleets, load_request, policy_wasm_path, repo_root};
use gpu_topology::LabelPrefix;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::evaluate_with;
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::{settings_from_value, Config};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::{json, Value};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wapc::WapcHost;
use wasmtime_provider::{ResourceLimits, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

const USAGE: &str = "usage: huge_view [RUNS]";
/// The request: the examples' 8-GPU pod, with the examples' settings and
/// `capacity.source: nodes`, so the policy reads the Node list.
const REQUEST: &str = "examples/requests/eight-gpu-pod.json";
const SETTINGS: &str = "examples/settings.yaml";
/// Nodes of the masked view.
const MASKED_NODES: usize = 20_000;
/// NFD feature labels added to each node of the masked view. NFD's default
/// sources label a current x86 server with about a hundred (CPUID flags
/// alone are most of them).
const NFD_FEATURE_LABELS: usize = 120;
/// Bytes of the unmasked view, at least.
const UNMASKED_BYTES: usize = 50_000_000;
/// A whole Node as the API server returns it, from the summarizer's bench.
const FULL_NODE: &str = "labeler/examples/summarize_scale/gpu-node.json";
/// Wasm pages are 64 KiB.
const WASM_PAGE: usize = 64 * 1024;

/// Counts the bytes this process holds on the heap, and their peak.
struct CountingAllocator;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Hands the policy a list already in memory (the native counterpart of the host).
struct InMemory<'a>(&'a [u8]);

impl ClusterReader for InMemory<'_> {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Ok(self.0.to_vec())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Err(format!("this measurement lists Nodes only: {request:?}"))
    }
}

/// One view of the cluster: its name and the NodeList bytes the host sends.
struct View {
    name: &'static str,
    nodes: usize,
    list: Arc<Vec<u8>>,
}

fn nfd_feature_labels(labels: &mut serde_json::Map<String, Value>) {
    for i in 0..NFD_FEATURE_LABELS {
        labels.insert(
            format!("feature.node.kubernetes.io/cpu-cpuid.FEATURE_{i:03}"),
            json!("true"),
        );
    }
}

fn masked_view(prefix: &LabelPrefix) -> Result<View> {
    let mut items = fleets::cloud_fleet(MASKED_NODES, prefix);
    for item in &mut items {
        let labels = item
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
            .context("generated node without labels")?;
        nfd_feature_labels(labels);
    }
    Ok(View {
        name: "masked-20k",
        nodes: items.len(),
        list: Arc::new(serde_json::to_vec(&fleets::node_list(items))?),
    })
}

fn unmasked_view(prefix: &LabelPrefix) -> Result<View> {
    let path = repo_root().join(FULL_NODE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let template: Value = serde_json::from_str(&text)?;
    // The generated node's name and labels in the whole object.
    let whole = |item: &Value| {
        let mut node = template.clone();
        node["metadata"]["name"] = item["metadata"]["name"].clone();
        node["metadata"]["labels"] = item["metadata"]["labels"].clone();
        node
    };
    // Generated nodes differ in size by a few labels: a fifth to spare.
    let first = fleets::cloud_fleet(1, prefix);
    let node_bytes = serde_json::to_vec(&whole(&first[0]))?.len().max(1);
    let estimate = UNMASKED_BYTES / node_bytes * 6 / 5 + 1;
    let mut items = Vec::new();
    let mut bytes = 0usize;
    for item in fleets::cloud_fleet(estimate, prefix) {
        if bytes >= UNMASKED_BYTES {
            break;
        }
        let node = whole(&item);
        bytes += serde_json::to_vec(&node)?.len() + 1;
        items.push(node);
    }
    if bytes < UNMASKED_BYTES {
        bail!("{FULL_NODE}: {} nodes make only {bytes} bytes", items.len());
    }
    Ok(View {
        name: "unmasked-50mb",
        nodes: items.len(),
        list: Arc::new(serde_json::to_vec(&fleets::node_list(items))?),
    })
}

/// A host that answers the Node listing with `list` and refuses the rest.
fn instance(pre: &WasmtimeEngineProviderPre, list: &Arc<Vec<u8>>) -> Result<WapcHost> {
    let list = Arc::clone(list);
    let host = move |_: u64, binding: &str, namespace: &str, operation: &str, _: &[u8]| match (
        binding, namespace, operation,
    ) {
        ("kubewarden", "kubernetes", "list_resources_all") => Ok(list.to_vec()),
        ("kubewarden", "tracing", "log") => Ok(Vec::new()),
        _ => Err(format!("refused: {namespace}/{operation}").into()),
    };
    let engine = pre.rehydrate(None).map_err(|e| anyhow!("{e}"))?;
    WapcHost::new(Box::new(engine), Some(Box::new(host))).map_err(|e| anyhow!("{e}"))
}

fn compile(bytes: &[u8], max_memory: Option<usize>) -> Result<WasmtimeEngineProviderPre> {
    let mut builder = WasmtimeEngineProviderBuilder::new().module_bytes(bytes);
    if let Some(limit) = max_memory {
        builder = builder.enable_resource_limits(ResourceLimits {
            max_memory_size: Some(limit),
            max_table_elements: None,
        });
    }
    builder.build_pre().map_err(|e| anyhow!("{e}"))
}

/// The answer of one fresh instance, and how long `validate` took.
fn call(
    pre: &WasmtimeEngineProviderPre,
    view: &View,
    payload: &[u8],
) -> Result<(Vec<u8>, Duration)> {
    let host = instance(pre, &view.list)?;
    let start = Instant::now();
    let answer = host
        .call("validate", payload)
        .map_err(|e| anyhow!("validate: {e}"))?;
    Ok((answer, start.elapsed()))
}

/// The smallest memory limit, in whole pages, under which the call gives
/// `expected`: the instance's peak linear memory.
fn peak_linear_memory(bytes: &[u8], view: &View, payload: &[u8], expected: &[u8]) -> Result<usize> {
    let fits = |pages: usize| -> Result<bool> {
        let pre = compile(bytes, Some(pages * WASM_PAGE))?;
        // Too small a limit fails instantiation or traps the call: no fit.
        Ok(matches!(call(&pre, view, payload), Ok((answer, _)) if answer == expected))
    };
    let (mut low, mut high) = (0usize, 1024usize); // 64 MiB to start
    while !fits(high)? {
        low = high;
        high *= 2;
        if high > 65_536 {
            bail!("{}: no answer under 4 GiB of linear memory", view.name);
        }
    }
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if fits(middle)? {
            high = middle;
        } else {
            low = middle;
        }
    }
    Ok(high * WASM_PAGE)
}

fn native(request: &str, config: &Config, list: &[u8]) -> Result<(Duration, usize)> {
    let request = AdmissionRequest::parse(request).map_err(|e| anyhow!("{e:?}"))?;
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let start = Instant::now();
    let decision = evaluate_with(&request, config, &InMemory(list));
    let elapsed = start.elapsed();
    std::hint::black_box(decision);
    Ok((elapsed, PEAK.load(Ordering::Relaxed).saturating_sub(before)))
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() -> Result<()> {
    let runs: usize = match std::env::args().nth(1) {
        Some(text) => text
            .parse()
            .with_context(|| format!("RUNS {text:?}: {USAGE}"))?,
        None => 5,
    };
    let root = repo_root();
    let request = load_request(&root.join(REQUEST))?;
    let mut settings = load_settings(&root.join(SETTINGS))?;
    settings["capacity"]["source"] = json!("nodes");
    let payload = validate_payload(&request, &settings)?;
    let config = settings_from_value(settings)
        .and_then(|s| s.config())
        .map_err(|e| anyhow!("settings: {e}"))?;
    let request_text = request.to_string();
    let module_path = policy_wasm_path();
    let bytes = std::fs::read(&module_path).with_context(|| {
        format!(
            "cannot read {}: run `make policy.wasm`",
            module_path.display()
        )
    })?;
    let unlimited = compile(&bytes, None)?;
    let prefix = LabelPrefix::default();
    eprintln!("generating the views ...");
    for view in [masked_view(&prefix)?, unmasked_view(&prefix)?] {
        eprintln!(
            "{}: {} nodes, {} bytes; {runs} runs ...",
            view.name,
            view.nodes,
            view.list.len()
        );
        let mut times = Vec::new();
        let mut answer = Vec::new();
        for _ in 0..runs.max(1) {
            let (this, took) = call(&unlimited, &view, &payload)?;
            times.push(took);
            answer = this;
        }
        times.sort();
        let response: Value = serde_json::from_slice(&answer)?;
        eprintln!(
            "{}: bisecting the memory limit (the module reports each allocation a limit refuses on stderr) ...",
            view.name
        );
        let peak = peak_linear_memory(&bytes, &view, &payload, &answer)?;
        let mut native_times = Vec::new();
        let mut native_peak = 0;
        for _ in 0..runs.max(1) {
            let (took, peak) = native(&request_text, &config, &view.list)?;
            native_times.push(took);
            native_peak = native_peak.max(peak);
        }
        native_times.sort();
        println!(
            "{}: {} nodes, list {:.1} MB ({} bytes per node)",
            view.name,
            view.nodes,
            view.list.len() as f64 / 1e6,
            view.list.len() / view.nodes.max(1)
        );
        println!(
            "  wasm validate, fresh instance: fastest {:.0} ms, median {:.0} ms; peak linear memory {:.1} MiB",
            times[0].as_secs_f64() * 1e3,
            times[times.len() / 2].as_secs_f64() * 1e3,
            mib(peak)
        );
        println!(
            "  native decision: fastest {:.0} ms, median {:.0} ms; peak heap {:.1} MiB above the list",
            native_times[0].as_secs_f64() * 1e3,
            native_times[native_times.len() / 2].as_secs_f64() * 1e3,
            mib(native_peak)
        );
        println!(
            "  answer: accepted {}, patched {}, warnings {}",
            response["accepted"],
            response.get("mutated_object").is_some_and(|o| !o.is_null()),
            response["warnings"]
        );
    }
    Ok(())
}
