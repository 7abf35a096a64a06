//! Agreement with the module (issue #22): for every e2e scenario, the
//! `gpu-topology` tool's explain, run natively through its library (its
//! settings loading, its request building, its file-backed cluster reader),
//! gives the same decision, message, warnings and patch as the built
//! policy.wasm under the harness. Needs `make policy.wasm`.
//!
//! The scenario's recorded cluster becomes the tool's fleet files where
//! files can say it ([`e2e_tests::tool_files`]). Refused reads, host
//! failures, ungranted resources and scenarios without a session cannot
//! be written as files; there the session
//! is replayed to the native policy as the harness replays it to the
//! module, through the same allow list (the tool's request building and
//! settings loading are still the ones under test).

use e2e_tests::scenario::SettingsSource;
use e2e_tests::tool_files::{fleet_files, is_create_of_its_object};
use e2e_tests::{shared_module, HostCapabilities, Outcome, Scenario};
use gpu_topology_cli::explain::{explain_request, Explanation};
use gpu_topology_cli::fleet::files::{host_error, FileCluster};
use gpu_topology_cli::request::RequestText;
use gpu_topology_cli::settings;
use gpu_topology_cli::view::claims::ClaimStatus;
use gpu_topology_cli::view::shapes::NodeNames;
use gpu_topology_policy::cluster::host::{get_payload, list_payload, ClusterReader};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The native policy's host when the session cannot be files: the
/// harness's own host (allow list, strict replay), its errors handed over
/// as wapc-guest hands them to the module.
struct Replayed(HostCapabilities);

impl Replayed {
    fn call(&self, operation: &str, payload: String) -> Result<Vec<u8>, String> {
        self.0
            .handle("kubewarden", "kubernetes", operation, payload.as_bytes())
            .map_err(|error| host_error(&error.to_string()))
    }
}

impl ClusterReader for Replayed {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.call("list_resources_all", list_payload(request))
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        self.call("get_resource", get_payload(request))
    }
}

/// The request the tool builds for the scenario's object when the scenario
/// is the CREATE of that object; else the scenario's own request (an
/// UPDATE, a subresource), which the tool's explain takes as it is.
fn tool_request(request: &Value) -> (RequestText, bool) {
    if is_create_of_its_object(request) {
        (RequestText::create(&request["object"]), true)
    } else {
        (RequestText::given(request), false)
    }
}

fn operations(patch: Option<&json_patch::Patch>) -> Vec<Value> {
    patch
        .map(|patch| {
            patch
                .0
                .iter()
                .filter_map(|op| serde_json::to_value(op).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn assert_same(name: &str, tool: &Explanation, module: &Outcome) {
    assert_eq!(tool.outcome.allowed(), module.allowed, "{name}: allowed");
    assert_eq!(tool.message, module.message, "{name}: message");
    assert_eq!(tool.warnings, module.warnings, "{name}: warnings");
    let tool_patch = (!tool.patch.0.is_empty()).then_some(&tool.patch);
    assert_eq!(
        operations(tool_patch),
        operations(module.patch.as_ref()),
        "{name}: patch"
    );
}

#[rstest]
fn explain_agrees_with_the_module(#[files("scenarios/*.json")] path: PathBuf) {
    let Some((scenario, tool, module_outcome)) = explain_both(&path) else {
        return;
    };
    let name = scenario.name.as_str();
    assert_same(name, &tool, &module_outcome);
    assert_claims_recorded(name, &scenario.request, &tool);
}

/// The scenario explained by the tool and answered by the module; `None`
/// when both refuse its settings alike.
fn explain_both(path: &Path) -> Option<(Scenario, Explanation, Outcome)> {
    let scenario = Scenario::load(path).unwrap_or_else(|e| panic!("{e:#}"));
    let name = scenario.name.as_str();
    let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
    let capabilities = || {
        Arc::new(HostCapabilities::new(
            scenario.file.context_aware_resources.clone(),
            scenario.session.as_ref(),
        ))
    };
    let policy = module.instantiate(capabilities()).unwrap();
    // The settings as the tool reads a --settings file's value.
    let module_settings = policy.validate_settings(&scenario.settings).unwrap();
    let tool_settings = settings::from_value(scenario.settings.clone());
    match (&tool_settings, module_settings.valid) {
        (Ok(_), true) => {}
        (Err(message), false) => {
            assert_eq!(
                Some(message),
                module_settings.message.as_ref(),
                "{name}: settings message"
            );
            return None;
        }
        (tool, _) => panic!(
            "{name}: the tool reads the settings as {tool:?}, the module as {module_settings:?}"
        ),
    }
    let tool_settings = tool_settings.unwrap();
    if let SettingsSource::File(file) = &scenario.file.settings {
        // A settings file is read by the tool's own reader too.
        let file = path.parent().unwrap().join(file);
        let loaded = settings::load(Some(&file)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(loaded.config, tool_settings.config, "{name}: settings file");
    }
    let module_outcome = policy
        .validate(&scenario.request, &scenario.settings)
        .unwrap();
    let (request, built) = tool_request(&scenario.request);
    let dir = std::env::temp_dir().join(format!("cli-agreement-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = fleet_files(&scenario, &dir).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let tool = match &files {
        Some(files) => {
            let cluster = FileCluster::load(files.nodes.as_deref(), files.summary.as_deref())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let names = NodeNames::read(cluster.nodes(), &tool_settings.config.label_prefix);
            explain_request(&request, &tool_settings, &cluster, &names)
        }
        None => {
            let replayed = Replayed(Arc::into_inner(capabilities()).unwrap());
            explain_request(&request, &tool_settings, &replayed, &NodeNames::none())
        }
    }
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "{name}: request {}, fleet {}",
        if built {
            "built from the object"
        } else {
            "as given"
        },
        if files.is_some() {
            "from files"
        } else {
            "replayed"
        }
    );
    Some((scenario, tool, module_outcome))
}

/// The DRA stage is in the tool's record (issue #36): a Pod that names
/// claims has one claim record per entry of `spec.resourceClaims`, and a
/// rejection no stage before it made is the DRA stage's, shown by the claim
/// that does not fit, in the answer's own words.
fn assert_claims_recorded(name: &str, request: &Value, tool: &Explanation) {
    let pod_claims = request
        .pointer("/object/spec/resourceClaims")
        .and_then(Value::as_array);
    let is_pod_create = request.pointer("/kind/kind") == Some(&Value::from("Pod"))
        && request["operation"] == "CREATE"
        && request.get("subResource").is_none_or(|sub| sub == "");
    let Some(claims) = tool.claims.as_ref() else {
        return;
    };
    assert!(is_pod_create, "{name}: only a Pod's CREATE has a DRA stage");
    let names: Vec<&str> = claims.claims.iter().map(|c| c.name.as_str()).collect();
    let named: Vec<&str> = pod_claims
        .into_iter()
        .flatten()
        .filter_map(|claim| claim["name"].as_str())
        .collect();
    assert_eq!(names, named, "{name}: one record per pod claim");
    let pod_rejected = tool.pod.as_ref().is_some_and(|r| r.rejection.is_some());
    if claims.rejects {
        let no_fit = claims
            .claims
            .iter()
            .find(|c| c.status == ClaimStatus::NoFit)
            .unwrap_or_else(|| panic!("{name}: a DRA rejection without a claim that does not fit"));
        if !pod_rejected {
            let message = tool.message.as_deref().unwrap_or_default();
            let detail = no_fit.detail.as_deref().unwrap_or_default();
            assert!(
                !detail.is_empty() && message.contains(detail),
                "{name}: the message {message:?} names the claim's record {detail:?}"
            );
        }
    } else if !tool.outcome.allowed() {
        assert!(
            pod_rejected,
            "{name}: rejected, and neither the pod's record nor its claims say why"
        );
    }
}

/// `explain` shows the DRA stage of the Pods of the DRA scenarios: each
/// claim's status, and the stage's rejection in the table's words.
#[rstest]
#[case::a_template_no_node_can_allocate_rejects("dra-pod-template-no-fit-rejected", true, &[("gpus", ClaimStatus::NoFit)], "\"gpus\" from ResourceClaimTemplate sixteen-gpus: no fit, 16 devices for GPU requests gpu\n      cannot be allocated on any node: on nodes dra-hgx-0 and dra-hgx-1")]
#[case::a_template_that_fits_gets_its_cpus("dra-pod-told-its-claim-gets-cpus", false, &[("gpus", ClaimStatus::Fits)], "\"gpus\" from ResourceClaimTemplate double-gpu: fits, 2 devices for GPU requests gpu\n      CPUs: 16 CPUs of device class dra.cpu for container \"trainer\"")]
#[case::two_gpu_claims("dra-pod-gpus-from-two-claims-warned", false, &[("gpu0", ClaimStatus::Fits), ("gpu1", ClaimStatus::Fits)], "\"gpu1\" from ResourceClaimTemplate single-gpu: fits, 1 device for GPU requests gpu")]
#[case::a_claim_of_two_containers("dra-pod-claim-shared-by-two-containers-warned", false, &[("gpus", ClaimStatus::Fits)], "      CPUs: none added (see the warnings)")]
#[case::untouched("dra-pod-quickstart-untouched", false, &[("twogpus", ClaimStatus::Fits)], "\"twogpus\" from ResourceClaimTemplate double-gpu: fits, 2 devices for GPU requests gpu\n\n")]
fn explain_shows_the_dra_stage(
    #[case] scenario: &str,
    #[case] rejects: bool,
    #[case] statuses: &[(&str, ClaimStatus)],
    #[case] line: &str,
) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{scenario}.json"));
    let (_, tool, _) = explain_both(&path).expect("valid settings");
    let claims = tool.claims.as_ref().expect("the DRA stage's record");
    assert_eq!(claims.rejects, rejects);
    let seen: Vec<(&str, ClaimStatus)> = claims
        .claims
        .iter()
        .map(|claim| (claim.name.as_str(), claim.status))
        .collect();
    assert_eq!(seen, statuses);
    let styled = gpu_topology_cli::render::text::render(std::slice::from_ref(&tool), false);
    let text = anstream::adapter::strip_str(&styled).to_string();
    assert!(text.contains(line), "{text}");
}
