//! One admission decision through the Wasm harness and natively, side by side.
//!
//! `cargo bench -p e2e-tests` (or `make bench`, which builds policy.wasm first):
//! - `validate/<request>/wasm`: one waPC `validate` call on a warm instance,
//!   answered as bytes (payload serialised once, outside the loop): the
//!   policy's work in Wasm plus copying payload and response across;
//! - `validate/<request>/wasm+host`: the same plus what the host then does:
//!   decoding the response and diffing `mutated_object` into the patch;
//! - `validate/<request>/native`: the policy's own `validate` entry point
//!   compiled natively (same parsing, decision and response serialisation),
//!   the counterpart of `wasm`;
//! - `breakdown/*`: where the time goes: a waPC round trip with an empty
//!   payload; the native `validate` stage by stage on the 5 KB pod (the one
//!   scan of the payload, which also finds the pod's fields; reading the
//!   settings as a fresh instance must; building the reduced pod from those
//!   fields; deciding on it; rewriting the text; writing the answer); for
//!   scale, the whole payload parsed into a JSON tree; and the host's share
//!   (decoding the response, diffing it into the patch);
//! - `module/*`: compiling policy.wasm and instantiating it (wapc_init included).
//! - `claim/<source>/<nodes>`: natively, the 2-GPU ResourceClaimTemplate of
//!   the e2e scenarios decided against the benchmarks' DRA fleet of 50, 500
//!   and 5,000 nodes (`e2e_tests::dra_fleets::bench_fleet`), its devices read
//!   from the fleet summary's `draDevices` or from the ResourceSlice list
//!   (the host's answers prepared once, outside the loop).
//!
//! After criterion's report a summary table prints the Wasm/native ratio,
//! from rounds that time Wasm and native back to back.

use criterion::measurement::WallTime;
use criterion::{criterion_group, BatchSize, Criterion};
use e2e_tests::policy::validate_payload;
use e2e_tests::scenario::load_settings;
use e2e_tests::{
    load_request, policy_wasm_path, repo_root, HostCapabilities, Outcome, PolicyModule,
};
use gpu_topology_policy::cluster::host::KubewardenHost;
use gpu_topology_policy::decide::{evaluate, evaluate_pod, Verdict};
use gpu_topology_policy::request::Payload;
use gpu_topology_policy::response::to_bytes;
use gpu_topology_policy::settings::parse_settings;
use serde_json::Value;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Requests measured: a realistic ~5 KB GPU pod as the API server sends it
/// (managedFields, defaulted fields), a training pod with init containers and
/// user affinity, and a pod the policy leaves alone.
const REQUESTS: [(&str, &str); 3] = [
    (
        "gpu-pod-5kb",
        "e2e-tests/benches/requests/inference-pod-5kb.json",
    ),
    ("training-pod", "examples/requests/training-pod.json"),
    ("non-gpu-pod", "examples/requests/non-gpu-pod.json"),
];

/// Iterations for the summary's own timing (after as many warm-up calls).
const SUMMARY_ITERATIONS: u32 = 2_000;
/// The summary's Wasm/native comparison: rounds, each a batch of Wasm calls
/// then a batch of native calls, so that both sides of a ratio see the same
/// phase of a machine whose speed drifts (see BENCHMARKS.md).
const PAIRED_ROUNDS: usize = 30;
const PAIRED_BATCH: u32 = 200;

struct Case {
    name: &'static str,
    request: Value,
    payload: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let root = repo_root();
    let settings = load_settings(&root.join("examples/settings.yaml")).expect("example settings");
    REQUESTS
        .iter()
        .map(|(name, path)| {
            let request = load_request(&root.join(path)).expect("bench request");
            let payload = validate_payload(&request, &settings).expect("payload");
            Case {
                name,
                request,
                payload,
            }
        })
        .collect()
}

fn module() -> PolicyModule {
    PolicyModule::load(&policy_wasm_path()).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The waPC call alone: the response bytes, as the guest wrote them.
fn wasm_validate(policy: &e2e_tests::Policy, payload: &[u8]) -> Vec<u8> {
    policy.call("validate", payload).expect("wasm validate")
}

/// The call plus the host's work: the response decoded, the patch computed.
fn wasm_validate_with_host(policy: &e2e_tests::Policy, case: &Case) -> Outcome {
    let response = policy.validate_raw(&case.payload).expect("wasm validate");
    Outcome::new(&case.request, response)
}

fn native_validate(payload: &[u8]) -> Vec<u8> {
    gpu_topology_policy::validate(payload).expect("native validate")
}

fn validate(c: &mut Criterion) {
    let module = module();
    let policy = module
        .instantiate(Arc::new(HostCapabilities::none()))
        .expect("instance");
    for case in cases() {
        let mut group = c.benchmark_group(format!("validate/{}", case.name));
        group.bench_function("wasm", |b| {
            b.iter(|| wasm_validate(&policy, black_box(&case.payload)))
        });
        group.bench_function("wasm+host", |b| {
            b.iter(|| wasm_validate_with_host(&policy, black_box(&case)))
        });
        group.bench_function("native", |b| {
            b.iter(|| native_validate(black_box(&case.payload)))
        });
        group.finish();
    }
}

fn breakdown(c: &mut Criterion) {
    let module = module();
    let policy = module
        .instantiate(Arc::new(HostCapabilities::none()))
        .expect("instance");
    let case = cases().remove(0);
    let raw = wasm_validate(&policy, &case.payload);
    let response = policy.validate_raw(&case.payload).expect("wasm validate");
    let mut group = c.benchmark_group("breakdown");
    group.bench_function("wapc-round-trip-empty-payload", |b| {
        b.iter(|| policy.call("protocol_version", &[]).expect("call"))
    });
    group.bench_function("native-parse-payload-json", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&case.payload)).expect("json"))
    });
    native_stages(&mut group, &case);
    group.bench_function("host-decode-response", |b| {
        b.iter(|| {
            serde_json::from_slice::<e2e_tests::ValidationResponse>(black_box(&raw))
                .expect("response")
        })
    });
    group.bench_function("host-json-diff", |b| {
        b.iter_batched(
            || response.clone(),
            |response| Outcome::new(&case.request, response),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// The native `validate`, stage by stage, on `case` (a GPU pod that is
/// mutated): where the policy's own time goes.
fn native_stages(group: &mut criterion::BenchmarkGroup<'_, WallTime>, case: &Case) {
    let payload = Payload::parse(&case.payload).expect("payload");
    let settings = payload.settings.unwrap_or("null").to_owned();
    group.bench_function("native-read-payload", |b| {
        b.iter(|| Payload::parse(black_box(&case.payload)).expect("payload"))
    });
    group.bench_function("native-read-settings-uncached", |b| {
        b.iter(|| {
            parse_settings(black_box(settings.as_bytes()))
                .and_then(|s| s.config())
                .expect("settings")
        })
    });
    let config = parse_settings(settings.as_bytes())
        .and_then(|s| s.config())
        .expect("settings");
    group.bench_function("native-pod-from-payload-fields", |b| {
        b.iter(|| black_box(&payload.request).pod_text().expect("pod text"))
    });
    let pod = payload.request.pod_text().expect("pod text");
    group.bench_function("native-decide-on-reduced-pod", |b| {
        b.iter(|| evaluate_pod(black_box(pod.reduced()), &config, &KubewardenHost))
    });
    let Verdict::Mutate(changed) = evaluate_pod(pod.reduced(), &config, &KubewardenHost).verdict
    else {
        panic!("{}: the bench request must be mutated", case.name)
    };
    group.bench_function("native-rewrite-text", |b| {
        b.iter(|| pod.rewrite(black_box(&changed)).expect("rewrite"))
    });
    let decision = evaluate(&payload.request, &config);
    group.bench_function("native-write-answer", |b| {
        b.iter(|| to_bytes(black_box(&decision)))
    });
}

fn module_lifecycle(c: &mut Criterion) {
    let path: PathBuf = policy_wasm_path();
    let mut group = c.benchmark_group("module");
    group.sample_size(10);
    group.bench_function("compile", |b| {
        b.iter(|| PolicyModule::load(&path).expect("load"))
    });
    let module = module();
    group.bench_function("instantiate", |b| {
        b.iter(|| {
            module
                .instantiate(Arc::new(HostCapabilities::none()))
                .expect("instance")
        })
    });
    group.finish();
}

/// Mean time of `f` over [`SUMMARY_ITERATIONS`] calls after a warm-up.
fn mean<T>(mut f: impl FnMut() -> T) -> Duration {
    for _ in 0..SUMMARY_ITERATIONS {
        black_box(f());
    }
    let start = Instant::now();
    for _ in 0..SUMMARY_ITERATIONS {
        black_box(f());
    }
    start.elapsed() / SUMMARY_ITERATIONS
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Per-call µs of Wasm and native in each paired round, and their ratios.
struct Paired {
    wasm: Vec<f64>,
    native: Vec<f64>,
    ratios: Vec<f64>,
}

/// Times `wasm` and `native` in [`PAIRED_ROUNDS`] back-to-back batches.
fn paired<A, B>(mut wasm: impl FnMut() -> A, mut native: impl FnMut() -> B) -> Paired {
    let batch = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        for _ in 0..PAIRED_BATCH {
            f();
        }
        micros(start.elapsed() / PAIRED_BATCH)
    };
    let (mut wasm, mut native) = (
        move || {
            black_box(wasm());
        },
        move || {
            black_box(native());
        },
    );
    for _ in 0..SUMMARY_ITERATIONS {
        wasm();
        native();
    }
    let mut rounds = Paired {
        wasm: Vec::new(),
        native: Vec::new(),
        ratios: Vec::new(),
    };
    for _ in 0..PAIRED_ROUNDS {
        let (w, n) = (batch(&mut wasm), batch(&mut native));
        rounds.wasm.push(w);
        rounds.native.push(n);
        rounds.ratios.push(w / n);
    }
    rounds
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn fastest(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The side-by-side table: Wasm, native and their ratio per request.
fn summary() {
    let module = module();
    let policy = module
        .instantiate(Arc::new(HostCapabilities::none()))
        .expect("instance");
    println!(
        "\nsummary: {PAIRED_ROUNDS} rounds of {PAIRED_BATCH} Wasm calls then {PAIRED_BATCH} native calls; \
         µs: median (fastest) round; \
         wasm/native: median of the rounds' ratios (fastest over fastest); wasm+host: mean of {SUMMARY_ITERATIONS} calls; policy.wasm {} bytes",
        module.size_bytes()
    );
    println!(
        "{:<14} {:>6} {:>15} {:>15} {:>13} {:>13}",
        "request", "bytes", "wasm µs", "native µs", "wasm/native", "wasm+host µs"
    );
    for case in cases() {
        let rounds = paired(
            || wasm_validate(&policy, &case.payload),
            || native_validate(&case.payload),
        );
        let with_host = mean(|| wasm_validate_with_host(&policy, &case));
        let cell =
            |values: &[f64]| format!("{:.1} ({:.1})", median(values.to_vec()), fastest(values));
        println!(
            "{:<14} {:>6} {:>15} {:>15} {:>13} {:>13.1}",
            case.name,
            case.payload.len(),
            cell(&rounds.wasm),
            cell(&rounds.native),
            format!(
                "{:.2} ({:.2})",
                median(rounds.ratios.clone()),
                fastest(&rounds.wasm) / fastest(&rounds.native)
            ),
            micros(with_host)
        );
    }
    let round_trip = mean(|| policy.call("protocol_version", &[]).expect("call"));
    let instantiate = mean(|| {
        module
            .instantiate(Arc::new(HostCapabilities::none()))
            .expect("instance")
    });
    let compile_start = Instant::now();
    black_box(PolicyModule::load(&policy_wasm_path()).expect("load"));
    println!(
        "waPC round trip (empty payload): {:.1} µs; instantiate: {:.1} µs; compile: {:.0} ms",
        micros(round_trip),
        micros(instantiate),
        compile_start.elapsed().as_secs_f64() * 1e3
    );
}

fn configured() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

/// A host answering a claim's reads from prepared bytes: the DeviceClass
/// list, the fleet summary (or its 404), the ResourceSlice list.
struct DraAnswers {
    classes: Vec<u8>,
    summary: Option<Vec<u8>>,
    slices: Vec<u8>,
}

impl gpu_topology_policy::cluster::host::ClusterReader for DraAnswers {
    fn list_all_resources(
        &self,
        request: &kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest,
    ) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "DeviceClass" => Ok(self.classes.clone()),
            "ResourceSlice" => Ok(self.slices.clone()),
            other => Err(format!("{other} is not served")),
        }
    }

    fn get_resource(
        &self,
        _: &kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest,
    ) -> Result<Vec<u8>, String> {
        self.summary
            .clone()
            .ok_or_else(|| "configmaps \"gpu-topology-fleet\" not found".to_owned())
    }
}

fn claims(c: &mut Criterion) {
    use e2e_tests::dra_fleets::{
        add_to_summary, bench_fleet, device_class_list, resource_slice_list,
    };
    use gpu_topology_policy::request::AdmissionRequest;
    let root = repo_root();
    let settings = load_settings(&root.join("examples/settings.yaml")).expect("example settings");
    let config = gpu_topology_policy::settings::settings_from_value(settings)
        .and_then(|settings| settings.config())
        .expect("example settings are valid");
    let request =
        load_request(&root.join("e2e-tests/scenarios/requests/dra-template-two-gpus.json"))
            .expect("claim request");
    let text = request.to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut group = c.benchmark_group("claim");
    for nodes in [50, 500, 5_000] {
        let fleet = bench_fleet(nodes);
        let classes = device_class_list(&fleet).expect("classes");
        let mut config_map =
            e2e_tests::fleets::summary_config_map(&[], now, &gpu_topology::LabelPrefix::default());
        add_to_summary(&mut config_map, &fleet, &classes).expect("summary");
        let slices = resource_slice_list(&fleet).to_string().into_bytes();
        for (source, summary) in [
            ("summary", Some(config_map.to_string().into_bytes())),
            ("slices", None),
        ] {
            let host = DraAnswers {
                classes: classes.to_string().into_bytes(),
                summary,
                slices: slices.clone(),
            };
            group.bench_function(format!("{source}/{nodes}"), |b| {
                b.iter(|| {
                    let request = AdmissionRequest::parse(black_box(&text)).expect("request");
                    gpu_topology_policy::decide::evaluate_with(&request, &config, &host)
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = configured();
    targets = validate, breakdown, module_lifecycle, claims
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    // `cargo test --benches` runs benches in test mode: skip the long summary.
    if !std::env::args().any(|a| a == "--test") {
        summary();
    }
}
