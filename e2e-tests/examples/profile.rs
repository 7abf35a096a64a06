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
//! With MODULE `native`, the policy's `validate` compiled natively is timed
//! instead. Alternating runs of several modules and `native`, and taking the
//! fastest of each, compares them on a machine whose speed drifts (see
//! BENCHMARKS.md).

use anyhow::{anyhow, Context, Result};
use e2e_tests::policy::validate_payload;
use e2e_tests::scenario::load_settings;
use e2e_tests::{load_request, repo_root};
use std::path::PathBuf;
use std::time::Instant;
use wapc::WapcHost;
use wasmtime_provider::{wasmtime, WasmtimeEngineProviderBuilder};

const USAGE: &str =
    "usage: profile MODULE.wasm REQUEST.json [SECONDS] (settings: examples/settings.yaml)";
/// Calls before timing, so caches and the allocator are warm.
const WARM_UP_CALLS: u32 = 2_000;
/// Calls between clock reads.
const BATCH: u32 = 1_000;

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
    let settings = load_settings(&repo_root().join("examples/settings.yaml"))?;
    let payload = validate_payload(&load_request(&request)?, &settings)?;
    if module.as_os_str() == "native" {
        let call = || gpu_topology_policy::validate(&payload).map_err(|e| anyhow!("validate: {e}"));
        return time(seconds, call);
    }
    let mut config = wasmtime::Config::default();
    if std::env::var_os("PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = wasmtime::Engine::new(&config).map_err(|e| anyhow!("{e}"))?;
    let bytes =
        std::fs::read(&module).with_context(|| format!("cannot read {}", module.display()))?;
    let pre = WasmtimeEngineProviderBuilder::new()
        .engine(engine)
        .module_bytes(&bytes)
        .build_pre()
        .map_err(|e| anyhow!("cannot compile {}: {e}", module.display()))?;
    let instance = || {
        let refuse = |_: u64, _: &str, _: &str, _: &str, _: &[u8]| Err("refused".into());
        let engine = pre.rehydrate(None).map_err(|e| anyhow!("{e}"))?;
        WapcHost::new(Box::new(engine), Some(Box::new(refuse))).map_err(|e| anyhow!("{e}"))
    };
    let validate = |host: &WapcHost| {
        host.call("validate", &payload)
            .map_err(|e| anyhow!("validate: {e}"))
    };
    if std::env::var_os("FRESH").is_some() {
        // As policy-server does: a new instance for every request.
        return time(seconds, || validate(&instance()?));
    }
    let host = instance()?;
    time(seconds, || validate(&host))
}

/// Calls `call` for about `seconds` after a warm-up; prints µs per call.
fn time(seconds: f64, call: impl Fn() -> Result<Vec<u8>>) -> Result<()> {
    for _ in 0..WARM_UP_CALLS {
        call()?;
    }
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        for _ in 0..BATCH {
            std::hint::black_box(call()?);
        }
        calls += u64::from(BATCH);
    }
    let micros = start.elapsed().as_secs_f64() * 1e6 / calls as f64;
    println!("{micros:.2} µs per call over {calls} calls");
    Ok(())
}
