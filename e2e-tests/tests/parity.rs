//! Issue #17: the fleet summary and the Node list give the same decisions.
//! Every generated fleet (the session files' and a cloud fleet of the
//! fleet benchmark's machines, every fact of the kubelet model on every
//! node) is answered once as the Node list (`capacity.source: nodes`) and
//! once as the summary the summarizer writes for it (`capacity.source:
//! summary`), and the policy decides each request under each affinity
//! setting natively from both. Pinned pods are left out: under `required`
//! only the Node list names the pinned node, by design.

use e2e_tests::fleets::{
    cloud_fleet, node_items, node_list, session_files, summarize, summary_config_map, ListAnswer,
    SUMMARY_WRITTEN_AT,
};
use e2e_tests::{load_request, repo_root};
use gpu_topology::LabelPrefix;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::evaluate_with;
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::{settings_from_value, Config};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::{json, Value};

/// Answers the one source a setting reads.
struct Source {
    list: Vec<u8>,
    summary: Vec<u8>,
}

impl ClusterReader for Source {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Ok(self.list.clone())
    }

    fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Ok(self.summary.clone())
    }
}

/// Requests of pods that are not pinned to a node.
const REQUESTS: [&str; 10] = [
    "examples/requests/eight-gpu-pod.json",
    "examples/requests/training-pod.json",
    "examples/requests/inference-deployment-pod.json",
    "e2e-tests/scenarios/requests/pod-8-gpus-32-cpus.json",
    "e2e-tests/scenarios/requests/pod-4-gpus-96-cpus.json",
    "e2e-tests/scenarios/requests/pod-4-gpus-32-cpus.json",
    "e2e-tests/scenarios/requests/pod-3-3-2-gpus.json",
    "e2e-tests/scenarios/requests/pod-4-gpus-600gi.json",
    "e2e-tests/scenarios/requests/pod-1-gpu-2500m-cpu.json",
    "e2e-tests/scenarios/requests/pod-two-containers-4-gpus.json",
];

/// The affinity settings decided under, each read from both sources.
fn settings() -> Vec<Value> {
    let topologies = [
        json!({"affinity": "preferred"}),
        json!({"affinity": "required", "alignment": "numa"}),
        json!({"affinity": "required", "alignment": "nvlink"}),
        json!({"affinity": "required", "alignment": "node"}),
        json!({"affinity": "preferred", "scope": "container"}),
    ];
    let mut all = Vec::new();
    for topology in topologies {
        for unlabeled in ["deny", "allow"] {
            all.push(json!({"topology": topology, "capacity": {"unlabeledNodes": unlabeled}}));
        }
    }
    all
}

fn config(settings: &Value, source: &str) -> Config {
    let mut settings = settings.clone();
    settings["capacity"]["source"] = json!(source);
    if source == "summary" {
        settings["capacity"]["fleetSummary"] = json!({"maxAgeSeconds": 3_153_600_000_u64});
    }
    settings_from_value(settings).unwrap().config().unwrap()
}

/// The fleets compared: every session file's Node list, and a cloud fleet.
fn fleets() -> Vec<(String, Vec<Value>)> {
    let prefix = LabelPrefix::default();
    let mut fleets: Vec<(String, Vec<Value>)> = session_files()
        .into_iter()
        .filter_map(|file| match file.list {
            ListAnswer::Nodes(groups) => Some((file.name.to_owned(), node_items(&groups, &prefix))),
            _ => None,
        })
        .collect();
    fleets.push((
        "cloud fleet of 60 nodes".to_owned(),
        cloud_fleet(60, &prefix),
    ));
    fleets
}

#[test]
fn the_summary_and_the_node_list_decide_alike() {
    let prefix = LabelPrefix::default();
    let requests: Vec<String> = REQUESTS
        .iter()
        .map(|path| load_request(&repo_root().join(path)).unwrap().to_string())
        .collect();
    let mut compared = 0;
    for (name, items) in fleets() {
        let (_, malformed) = summarize(&items, &prefix);
        let source = Source {
            list: node_list(items.clone()).to_string().into_bytes(),
            summary: summary_config_map(&items, SUMMARY_WRITTEN_AT, &prefix)
                .to_string()
                .into_bytes(),
        };
        for settings in settings() {
            let from_list = config(&settings, "nodes");
            let from_summary = config(&settings, "summary");
            for (path, text) in REQUESTS.iter().zip(&requests) {
                let request = AdmissionRequest::parse(text).unwrap();
                let listed = evaluate_with(&request, &from_list, &source);
                let summarized = evaluate_with(&request, &from_summary, &source);
                assert_eq!(
                    listed.verdict, summarized.verdict,
                    "{name}, {path}, {settings}: the summary and the Node list disagree"
                );
                // The Node list names a malformed node's problem; the summary counts it.
                if malformed == 0 {
                    assert_eq!(
                        listed.warnings, summarized.warnings,
                        "{name}, {path}, {settings}"
                    );
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 1000, "{compared} decisions compared");
}
