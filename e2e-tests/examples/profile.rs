//! Calls `validate` in a loop on one request, for profiling the policy
//! inside wasmtime:
//!
//! ```console
//! CARGO_PROFILE_RELEASE_STRIP=false cargo build --release --target wasm32-wasip1 -p gpu-topology-policy
//! cargo build --release -p e2e-tests --example profile
//! PERFMAP=1 perf record -g target/release/examples/profile \
//!     target/wasm32-wasip1/release/gpu_topology_policy.wasm e2e-tests/benches/requests/inference-pod-5kb.json 5
//! perf report --no-children
//! ```
//!
//! With `PERFMAP` set, wasmtime writes `/tmp/perf-<pid>.map`, so perf names
//! the guest's functions (keep the module unstripped for their names). The
//! engine is configured as the harness's otherwise; the host refuses every
//! capability call, as in `benches/evaluation.rs`. Prints µs per call.
//!
//! With `FRESH` set, every call gets a new instance (`wapc_init` included),
//! as Kubewarden's policy-server gives every request.
//!
//! Under valgrind's callgrind it counts instructions, which unlike this
//! VM's timing come out the same on every run. This binary must be built
//! unstripped, so that callgrind finds the function named (`native` counts
//! `gpu_topology_policy::validate` instead):
//!
//! ```console
//! CARGO_PROFILE_RELEASE_STRIP=false CARGO_TARGET_DIR=target/unstripped \
//!     cargo build --release -p e2e-tests --example profile
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*WapcHost*call*' \
//!     target/unstripped/release/examples/profile policy.wasm \
//!     e2e-tests/benches/requests/inference-pod-5kb.json 0.01
//! ```
//!
//! `Collected` over the calls made (the 2,000 warm-up calls plus the printed
//! count) is the instructions per call, host side of the waPC call included.
//!
//! With `SETTINGS` set to a settings file, the payload carries it instead of
//! `examples/settings.yaml` (a revision before a settings key existed may
//! refuse it: give it that revision's file, `git show REV:examples/settings.yaml`).
//!
//! With `SUMMARY_NODES=N` set (Wasm only), the host answers `get_resource`
//! with the fleet summary ConfigMap of the fleet benchmark's cloud fleet of
//! N nodes (`e2e_tests::fleets`, dated now) and refuses anything else: the
//! default `capacity.source: auto` path with a fresh summary. Its instruction
//! count at several N shows whether that path grows with the node count
//! (`e2e-tests/bench-instructions.sh`). It then prints the summary's bytes,
//! the host calls served and refused (it fails if the policy asked for
//! anything but the summary) and the last answer's verdict and warnings.
//! `FLEET` names another fleet ([`fleets::bench_fleet`]: `cloud`, the
//! default; `two-socket`; `gb200`; `grace-cloud`; `distinct`; `many-numa`;
//! `numa-1000`).
//!
//! With `DRA_NODES=N` set (Wasm only), the host serves a claim's reads for
//! the DRA fleet of N nodes (`e2e_tests::dra_fleets::bench_fleet`): the
//! fleet summary ConfigMap holding the nodes' devices and their classes
//! (`draDevices`, dated now), or, with `DRA_SOURCE=slices`, the summary's
//! 404, the DeviceClass list and the ResourceSlice list; anything else is
//! refused and fails the run. It prints what it served, and the last answer.
//!
//! With `SESSION=FILE` set (Wasm only), the host answers from that kwctl
//! session (`e2e-tests/scenarios/sessions/*.yml`), rewound before every
//! call, every resource granted: the binding check's three reads, for
//! example. It fails if a call leaves a recorded exchange unasked.
//!
//! With `MEMORY_LIMIT_MIB=N`, each instance's linear memory may grow to N
//! MiB at most, as policy-server's `--policy-memory-limit` caps it (256 by
//! default): a run that needs more fails. The smallest N that passes is the
//! peak linear memory of the path, to the MiB.
//!
//! With MODULE `native`, the policy's `validate` compiled natively is timed
//! instead. Alternating runs of several modules and `native`, and taking the
//! fastest of each, compares them on a machine whose speed drifts (see
//! BENCHMARKS.md).

use anyhow::{anyhow, bail, Context, Result};
use e2e_tests::policy::validate_payload;
use e2e_tests::scenario::load_settings;
use e2e_tests::{fleets, load_request, repo_root};
use gpu_topology::LabelPrefix;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use wapc::{HostCallback, WapcHost};
use wasmtime_provider::{wasmtime, WasmtimeEngineProviderBuilder};

const USAGE: &str = "usage: [SETTINGS=FILE] [SUMMARY_NODES=N [FLEET=NAME] | DRA_NODES=N \
    [DRA_SOURCE=summary|slices]] profile MODULE.wasm REQUEST.json [SECONDS] (settings: \
    examples/settings.yaml)";
/// Calls before timing, so caches and the allocator are warm
/// (`WARM_UP_CALLS` overrides it).
const WARM_UP_CALLS: u32 = 2_000;
/// Calls between clock reads (`BATCH_CALLS` overrides it).
const BATCH: u32 = 1_000;

/// `name` from the environment, else `default`: calls that take
/// milliseconds (a claim against 5,000 nodes' ResourceSlices) are counted
/// over fewer calls under callgrind.
fn calls_setting(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .filter(|calls| *calls > 0)
        .unwrap_or(default)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let module = PathBuf::from(args.next().context(USAGE)?);
    let request = PathBuf::from(args.next().context(USAGE)?);
    let seconds: f64 = match args.next() {
        Some(text) => text
            .parse()
            .with_context(|| format!("SECONDS {text:?}: {USAGE}"))?,
        None => 5.0,
    };
    let settings = match std::env::var_os("SETTINGS") {
        Some(path) => PathBuf::from(path),
        None => repo_root().join("examples/settings.yaml"),
    };
    let settings = load_settings(&settings)?;
    let payload = validate_payload(&load_request(&request)?, &settings)?;
    let summary = match (std::env::var("SUMMARY_NODES"), std::env::var("LIST_NODES")) {
        (Ok(_), Ok(_)) => bail!("SUMMARY_NODES and LIST_NODES: one host at a time"),
        (Ok(text), _) | (_, Ok(text)) => {
            let nodes = text
                .parse()
                .with_context(|| format!("SUMMARY_NODES or LIST_NODES {text:?}: a node count"))?;
            let fleet = std::env::var("FLEET").unwrap_or_else(|_| "cloud".to_owned());
            let listed = std::env::var_os("LIST_NODES").is_some();
            Some(SummaryHost::new(nodes, &fleet, listed)?)
        }
        _ => None,
    };
    let dra = match std::env::var("DRA_NODES") {
        Ok(text) => {
            let nodes = text
                .parse()
                .with_context(|| format!("DRA_NODES {text:?}: a node count"))?;
            let source = std::env::var("DRA_SOURCE").unwrap_or_else(|_| "summary".to_owned());
            Some(DraHost::new(nodes, &source)?)
        }
        Err(_) => None,
    };
    if summary.is_some() && dra.is_some() {
        bail!("SUMMARY_NODES and DRA_NODES: one host at a time");
    }
    let session = match std::env::var_os("SESSION") {
        Some(path) => {
            if summary.is_some() || dra.is_some() {
                bail!("SESSION: one host at a time");
            }
            let session = e2e_tests::session::Session::load(&PathBuf::from(&path))?;
            let granted = session
                .exchanges()
                .iter()
                .map(|exchange| {
                    let (api_version, kind) = exchange.request.resource();
                    e2e_tests::host::ContextAwareResource {
                        api_version: api_version.to_owned(),
                        kind: kind.to_owned(),
                    }
                })
                .collect();
            Some(Arc::new(e2e_tests::host::HostCapabilities::new(
                granted,
                Some(&session),
            )))
        }
        None => None,
    };
    if module.as_os_str() == "native" {
        if summary.is_some() || dra.is_some() || session.is_some() {
            bail!("SUMMARY_NODES needs a module: natively the policy has no host to ask");
        }
        let call = || gpu_topology_policy::validate(&payload).map_err(|e| anyhow!("validate: {e}"));
        return time(seconds, call).map(drop);
    }
    let mut config = wasmtime::Config::default();
    if std::env::var_os("PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = wasmtime::Engine::new(&config).map_err(|e| anyhow!("{e}"))?;
    let bytes =
        std::fs::read(&module).with_context(|| format!("cannot read {}", module.display()))?;
    let mut builder = WasmtimeEngineProviderBuilder::new()
        .engine(engine)
        .module_bytes(&bytes);
    if let Ok(text) = std::env::var("MEMORY_LIMIT_MIB") {
        // As policy-server's --policy-memory-limit (256 MiB by default):
        // a memory.grow past it fails, and the guest aborts.
        let mib: usize = text
            .parse()
            .with_context(|| format!("MEMORY_LIMIT_MIB {text:?}: MiB"))?;
        builder = builder.enable_resource_limits(wasmtime_provider::ResourceLimits {
            max_memory_size: Some(mib << 20),
            max_table_elements: None,
        });
    }
    let pre = builder
        .build_pre()
        .map_err(|e| anyhow!("cannot compile {}: {e}", module.display()))?;
    let instance = || {
        let callback: Box<HostCallback> = match (&summary, &dra, &session) {
            (Some(host), _, _) => host.callback(),
            (_, Some(host), _) => host.callback(),
            (_, _, Some(host)) => {
                let host = Arc::clone(host);
                Box::new(move |_, binding, namespace, operation, payload| {
                    host.handle(binding, namespace, operation, payload)
                })
            }
            _ => Box::new(|_: u64, _: &str, _: &str, _: &str, _: &[u8]| Err("refused".into())),
        };
        let engine = pre.rehydrate(None).map_err(|e| anyhow!("{e}"))?;
        WapcHost::new(Box::new(engine), Some(callback)).map_err(|e| anyhow!("{e}"))
    };
    let validate = |host: &WapcHost| {
        if let Some(session) = &session {
            session.reset();
        }
        let answer = host
            .call("validate", &payload)
            .map_err(|e| anyhow!("validate: {e}"))?;
        match &session {
            Some(session) if session.unreplayed_exchanges() > 0 => bail!(
                "the call left {} recorded exchanges unasked",
                session.unreplayed_exchanges()
            ),
            _ => Ok(answer),
        }
    };
    let (answer, calls) = if std::env::var_os("FRESH").is_some() {
        // As policy-server does: a new instance for every request.
        time(seconds, || validate(&instance()?))?
    } else {
        let host = instance()?;
        time(seconds, || validate(&host))?
    };
    match (summary, dra) {
        (Some(host), _) => host.report(calls, &answer),
        (_, Some(host)) => host.report(calls, &answer),
        _ => Ok(()),
    }
}

/// A host that serves a claim's reads for a generated DRA fleet, counting
/// what it served, and refuses anything else.
#[derive(Clone)]
struct DraHost {
    nodes: usize,
    source: String,
    classes: Arc<Vec<u8>>,
    /// The summary ConfigMap (with `draDevices`), or `None`: its 404.
    config_map: Option<Arc<Vec<u8>>>,
    slices: Arc<Vec<u8>>,
    served: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
}

impl DraHost {
    fn new(nodes: usize, source: &str) -> Result<Self> {
        use e2e_tests::dra_fleets;
        let fleet = dra_fleets::bench_fleet(nodes);
        let classes = dra_fleets::device_class_list(&fleet)?;
        let config_map = match source {
            "summary" => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let mut config_map = fleets::summary_config_map(&[], now, &LabelPrefix::default());
                dra_fleets::add_to_summary(&mut config_map, &fleet, &classes)?;
                Some(Arc::new(config_map.to_string().into_bytes()))
            }
            "slices" => None,
            other => bail!("DRA_SOURCE {other:?}: expected summary or slices"),
        };
        Ok(Self {
            nodes,
            source: source.to_owned(),
            classes: Arc::new(classes.to_string().into_bytes()),
            config_map,
            slices: Arc::new(
                dra_fleets::resource_slice_list(&fleet)
                    .to_string()
                    .into_bytes(),
            ),
            served: Arc::default(),
            refused: Arc::default(),
        })
    }

    fn callback(&self) -> Box<HostCallback> {
        let host = self.clone();
        Box::new(move |_, binding, namespace, operation, payload| {
            let request: Value = serde_json::from_slice(payload).unwrap_or(Value::Null);
            let kind = request["kind"].as_str().unwrap_or_default();
            let answer = match ((binding, namespace, operation), kind) {
                (("kubewarden", "kubernetes", "list_resources_all"), "DeviceClass")
                    if host.config_map.is_none() =>
                {
                    Some(Ok(host.classes.to_vec()))
                }
                (("kubewarden", "kubernetes", "get_resource"), "ConfigMap") => Some(
                    host.config_map
                        .as_ref()
                        .map(|map| map.to_vec())
                        .ok_or_else(|| "configmaps \"gpu-topology-fleet\" not found".into()),
                ),
                (("kubewarden", "kubernetes", "list_resources_all"), "ResourceSlice")
                    if host.config_map.is_none() =>
                {
                    Some(Ok(host.slices.to_vec()))
                }
                _ => None,
            };
            match answer {
                Some(answer) => {
                    host.served.fetch_add(1, Ordering::Relaxed);
                    answer
                }
                None => {
                    host.refused.fetch_add(1, Ordering::Relaxed);
                    Err("refused".into())
                }
            }
        })
    }

    /// Prints what was served and the last answer; fails unless each call
    /// made exactly the reads of its source (the summary, or the summary's
    /// 404, the classes and the slices) and nothing else.
    fn report(&self, calls: u64, answer: &[u8]) -> Result<()> {
        let (served, refused) = (
            self.served.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        );
        let answer: Value = serde_json::from_slice(answer).context("the answer is not JSON")?;
        let bytes = self
            .config_map
            .as_ref()
            .map_or(self.slices.len(), |map| map.len());
        println!(
            "DRA fleet of {} nodes from the {}: {bytes} bytes; host calls: {served} served, {refused} refused; \
             last answer: accepted {}, mutated {}, warnings {}",
            self.nodes,
            self.source,
            answer["accepted"],
            !answer["mutated_object"].is_null(),
            answer.get("warnings").unwrap_or(&Value::Null),
        );
        let per_call = if self.config_map.is_some() { 1 } else { 3 };
        if served != per_call * calls || refused != 0 {
            bail!("expected {per_call} reads per call ({calls} calls) and nothing else");
        }
        Ok(())
    }
}

/// Calls `call` for about `seconds` after a warm-up; prints µs per call.
/// Returns the last answer and the calls made, warm-up included.
fn time(seconds: f64, call: impl Fn() -> Result<Vec<u8>>) -> Result<(Vec<u8>, u64)> {
    let (warm_up, batch) = (
        calls_setting("WARM_UP_CALLS", WARM_UP_CALLS),
        calls_setting("BATCH_CALLS", BATCH),
    );
    let mut answer = Vec::new();
    for _ in 0..warm_up {
        answer = call()?;
    }
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        for _ in 0..batch {
            answer = std::hint::black_box(call()?);
        }
        calls += u64::from(batch);
    }
    let micros = start.elapsed().as_secs_f64() * 1e6 / calls as f64;
    let all = calls + u64::from(warm_up);
    println!("{micros:.2} µs per call over {calls} calls ({all} calls in all)");
    Ok((answer, all))
}

/// A host that serves the fleet summary of a generated fleet and refuses
/// every other capability call, counting both.
#[derive(Clone)]
struct SummaryHost {
    nodes: usize,
    /// The summarizer's ConfigMap, as `get_resource` returns it.
    config_map: Arc<Vec<u8>>,
    /// With `LIST_NODES`: the Node list `list_resources_all` returns, the
    /// summary read answered with its 404.
    list: Option<Arc<Vec<u8>>>,
    served: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
}

impl SummaryHost {
    fn new(nodes: usize, fleet: &str, listed: bool) -> Result<Self> {
        let prefix = LabelPrefix::default();
        // Dated now, so that it is fresh (maxAgeSeconds) for the whole run.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let items = fleets::bench_fleet(fleet, nodes, &prefix).with_context(|| {
            format!("FLEET {fleet:?}: expected cloud, two-socket, gb200, grace-cloud, distinct, many-numa or numa-1000")
        })?;
        let config_map = fleets::summary_config_map(&items, now, &prefix).to_string();
        let list = listed.then(|| Arc::new(fleets::node_list(items).to_string().into_bytes()));
        Ok(Self {
            nodes,
            config_map: Arc::new(config_map.into_bytes()),
            list,
            served: Arc::default(),
            refused: Arc::default(),
        })
    }

    fn callback(&self) -> Box<HostCallback> {
        let host = self.clone();
        Box::new(move |_, binding, namespace, operation, _| {
            let call = (binding, namespace, operation);
            if let (Some(list), ("kubewarden", "kubernetes", "list_resources_all")) =
                (&host.list, call)
            {
                host.served.fetch_add(1, Ordering::Relaxed);
                Ok(list.to_vec())
            } else if host.list.is_some() && call == ("kubewarden", "kubernetes", "get_resource") {
                // The summary's 404: the policy falls back to the Node list.
                Err(fleets::SUMMARY_NOT_FOUND.into())
            } else if call == ("kubewarden", "kubernetes", "get_resource") {
                host.served.fetch_add(1, Ordering::Relaxed);
                Ok(host.config_map.to_vec())
            } else {
                host.refused.fetch_add(1, Ordering::Relaxed);
                Err("refused".into())
            }
        })
    }

    /// Prints what the host served and the last answer; fails unless every
    /// one of the `calls` read the summary once and asked nothing else.
    fn report(&self, calls: u64, answer: &[u8]) -> Result<()> {
        let (served, refused) = (
            self.served.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        );
        let answer: Value = serde_json::from_slice(answer).context("the answer is not JSON")?;
        let (what, bytes) = match &self.list {
            Some(list) => ("Node list", list.len()),
            None => ("summary", self.config_map.len()),
        };
        println!(
            "{what} of {} nodes: {bytes} bytes; host calls: {served} served, {refused} refused; \
             last answer: accepted {}, mutated {}, warnings {}",
            self.nodes,
            answer["accepted"],
            !answer["mutated_object"].is_null(),
            answer.get("warnings").unwrap_or(&Value::Null),
        );
        if served != calls || refused != 0 {
            bail!("expected one summary read per call ({calls}) and nothing else");
        }
        Ok(())
    }
}
