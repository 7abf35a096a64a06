//! One admission against fleets of many distinct node shapes (issue #35):
//! the two-container pod of 4 + 2 GPUs that sets no CPU, whose default
//! `qos.cpuPerGpu` the policy lowers to fit, against 10, 100, 1,000 and
//! 3,000 nodes that are each a shape of their own
//! (`e2e_tests::fleets::distinct_shapes_fleet`), natively:
//!
//! - `shapes/<n>/summary`: the examples' settings (`capacity.source: auto`),
//!   the fleet summary ConfigMap of the fleet answered from memory;
//! - `shapes/<n>/node-list`: the summary's 404, then the Node list.
//!
//! `cargo bench -p e2e-tests --bench shapes`. The Wasm module's
//! instructions per call on the same inputs are counted with callgrind
//! (`e2e-tests/examples/profile.rs`, `FLEET=distinct`; BENCHMARKS.md).

use criterion::Criterion;
use e2e_tests::{fleets, load_request, repo_root};
use gpu_topology::LabelPrefix;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::{evaluate_with, Verdict};
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::{settings_from_value, Config};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use std::hint::black_box;
use std::time::Duration;

const SHAPES: [usize; 4] = [10, 100, 1_000, 3_000];
const REQUEST: &str = "e2e-tests/benches/requests/two-container-defaulted-pod.json";
const SETTINGS: &str = "examples/settings.yaml";

/// The host of one path, answered from memory.
enum Host {
    /// `get_resource` returns the fleet summary ConfigMap.
    Summary(Vec<u8>),
    /// `get_resource` fails as the API server's 404; the Node list is served.
    NodeList(Vec<u8>),
}

impl ClusterReader for Host {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        match self {
            Host::NodeList(list) => Ok(list.clone()),
            Host::Summary(_) => Err("the summary path lists no Node".to_owned()),
        }
    }

    fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
        match self {
            Host::Summary(config_map) => Ok(config_map.clone()),
            Host::NodeList(_) => Err(fleets::SUMMARY_NOT_FOUND.to_owned()),
        }
    }
}

fn main() {
    let root = repo_root();
    let request = load_request(&root.join(REQUEST)).expect("bench request");
    let request = request.to_string();
    let settings = e2e_tests::scenario::load_settings(&root.join(SETTINGS)).expect("settings");
    let config: Config = settings_from_value(settings)
        .and_then(|s| s.config())
        .expect("settings");
    let prefix = LabelPrefix::default();
    let mut criterion = Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    for shapes in SHAPES {
        let items = fleets::distinct_shapes_fleet(shapes, shapes, &prefix);
        // Dated now: fresh for the whole run (maxAgeSeconds).
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let summary = fleets::summary_config_map(&items, now, &prefix).to_string();
        let list = fleets::node_list(items).to_string();
        let hosts = [
            ("summary", Host::Summary(summary.into_bytes())),
            ("node-list", Host::NodeList(list.into_bytes())),
        ];
        let mut group = criterion.benchmark_group(format!("shapes/{shapes}"));
        for (name, host) in &hosts {
            let decide = || {
                let request = AdmissionRequest::parse(&request).expect("admission request");
                evaluate_with(&request, &config, host)
            };
            // The answer measured is the lowered one, on either path.
            let decision = decide();
            assert!(
                matches!(decision.verdict, Verdict::Mutate(_)),
                "{name}: {decision:?}"
            );
            assert!(
                decision
                    .warnings
                    .iter()
                    .any(|w| w.contains("qos.cpuPerGpu lowered from 4 to 3")),
                "{name}: {:?}",
                decision.warnings
            );
            group.bench_function(*name, |b| b.iter(|| black_box(decide())));
        }
        group.finish();
    }
    criterion.final_summary();
}
