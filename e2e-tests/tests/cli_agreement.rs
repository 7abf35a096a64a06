//! Agreement with the module (issue #22): for every e2e scenario, the
//! `gpu-topology` tool's explain, run natively through its library (its
//! settings loading, its request building, its file-backed cluster reader),
//! gives the same decision, message, warnings and patch as the built
//! policy.wasm under the harness. Needs `make policy.wasm`.
//!
//! The scenario's recorded cluster becomes the tool's fleet files where
//! files can say it: a session whose every exchange is a served Node list,
//! a served fleet-summary ConfigMap or the API's 404 for that ConfigMap,
//! each of a resource the scenario grants. Refused reads, host failures
//! and ungranted resources cannot be written as files; there the session
//! is replayed to the native policy as the harness replays it to the
//! module, through the same allow list (the tool's request building and
//! settings loading are still the ones under test).

use e2e_tests::scenario::{ScenarioFile, SettingsSource};
use e2e_tests::session::{HostRequest, Response};
use e2e_tests::{shared_module, HostCapabilities, Outcome, Scenario, Session};
use gpu_topology_cli::explain::{explain_request, Explanation};
use gpu_topology_cli::fleet::files::{host_error, not_found, FileCluster};
use gpu_topology_cli::request::RequestText;
use gpu_topology_cli::settings;
use gpu_topology_policy::cluster::host::{get_payload, list_payload, ClusterReader};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Value};
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

fn granted(file: &ScenarioFile, request: &HostRequest) -> bool {
    let (api_version, kind) = request.resource();
    file.context_aware_resources
        .iter()
        .any(|resource| resource.api_version == api_version && resource.kind == kind)
}

/// The session as fleet files in `dir`: (`--nodes`, `--summary`), or
/// `None` when files cannot say what it records.
fn as_files(
    scenario: &Scenario,
    session: &Session,
    dir: &Path,
) -> Option<(Option<PathBuf>, Option<PathBuf>)> {
    let (mut nodes, mut summary) = (None, None);
    for exchange in session.exchanges() {
        if !granted(&scenario.file, &exchange.request) {
            return None;
        }
        match (&exchange.request, &exchange.response) {
            (
                HostRequest::KubernetesListResourceAll {
                    api_version, kind, ..
                },
                Response::Success { payload },
            ) if (api_version.as_str(), kind.as_str()) == ("v1", "Node") && nodes.is_none() => {
                let path = dir.join("nodes.json");
                std::fs::write(&path, payload).ok()?;
                nodes = Some(path);
            }
            (
                HostRequest::KubernetesGetResource {
                    api_version,
                    kind,
                    name,
                    namespace,
                    ..
                },
                response,
            ) if (api_version.as_str(), kind.as_str()) == ("v1", "ConfigMap")
                && summary.is_none() =>
            {
                match response {
                    // The recorded body is pruned to `data`; the file is the
                    // ConfigMap as kubectl prints it, named as requested.
                    Response::Success { payload } => {
                        let mut config_map: Value = serde_json::from_str(payload).ok()?;
                        config_map["apiVersion"] = json!("v1");
                        config_map["kind"] = json!("ConfigMap");
                        config_map["metadata"] = json!({"name": name, "namespace": namespace});
                        let path = dir.join("summary.json");
                        std::fs::write(&path, config_map.to_string()).ok()?;
                        summary = Some(path);
                    }
                    // No summary file: the reader answers the same 404.
                    Response::Error { message } if *message == not_found(kind, name) => {}
                    Response::Error { .. } => return None,
                }
            }
            _ => return None,
        }
    }
    Some((nodes, summary))
}

/// The request the tool builds for the scenario's object when the scenario
/// is a CREATE the API server would send for it; else the scenario's own
/// request (an UPDATE, a subresource, another namespace), which the tool's
/// explain takes as it is.
fn tool_request(request: &Value) -> (RequestText, bool) {
    let Some(object) = request.get("object").filter(|o| o.is_object()) else {
        return (RequestText::given(request), false);
    };
    let built = RequestText::create(object);
    let tree = built.to_value();
    let same = ["/kind", "/namespace", "/operation", "/name"]
        .iter()
        .all(|pointer| tree.pointer(pointer) == request.pointer(pointer).or(Some(&json!(""))))
        && request
            .get("subResource")
            .is_none_or(|s| s.as_str() == Some(""));
    if same {
        (built, true)
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
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e:#}"));
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
            return;
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
    let files = scenario
        .session
        .as_ref()
        .and_then(|session| as_files(&scenario, session, &dir));
    let tool = match &files {
        Some((nodes, summary)) => {
            let cluster = FileCluster::load(nodes.as_deref(), summary.as_deref())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            explain_request(&request, &tool_settings, &cluster, cluster.nodes())
        }
        None => explain_request(
            &request,
            &tool_settings,
            &Replayed(Arc::into_inner(capabilities()).unwrap()),
        ),
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
    assert_same(name, &tool, &module_outcome);
}
