//! A scenario as the `gpu-topology` tool's inputs: the object, the
//! settings and the recorded cluster as fleet files (`--nodes`,
//! `--summary`), for the agreement test (tests/cli_agreement.rs) and the
//! kwctl bats suite (`tool-files`, kwctl-helpers.bash).
//!
//! Files can say what a session records when its every exchange is a
//! served Node list, a served fleet-summary ConfigMap or the API's 404 for
//! that ConfigMap, each of a resource the scenario grants: the tool's file
//! reader answers exactly so. Refused reads, host failures and ungranted
//! resources cannot be written as files.

use crate::scenario::Scenario;
use crate::session::{HostRequest, Response, Session};
use anyhow::{Context, Result};
use gpu_topology_cli::fleet::files::not_found;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The fleet files a session comes to (`None`: no such file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetFiles {
    pub nodes: Option<PathBuf>,
    pub summary: Option<PathBuf>,
}

fn granted(scenario: &Scenario, request: &HostRequest) -> bool {
    let (api_version, kind) = request.resource();
    scenario
        .file
        .context_aware_resources
        .iter()
        .any(|resource| resource.api_version == api_version && resource.kind == kind)
}

/// Writes the scenario's session as fleet files into `dir`; `Ok(None)`
/// when the scenario has no session, or files cannot say what it records.
pub fn fleet_files(scenario: &Scenario, dir: &Path) -> Result<Option<FleetFiles>> {
    let Some(session) = &scenario.session else {
        return Ok(None);
    };
    match session_as_files(scenario, session)? {
        None => Ok(None),
        Some((nodes, summary)) => {
            let write = |name: &str, text: Option<String>| -> Result<Option<PathBuf>> {
                let Some(text) = text else { return Ok(None) };
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Ok(Some(path))
            };
            Ok(Some(FleetFiles {
                nodes: write("nodes.json", nodes)?,
                summary: write("summary.json", summary)?,
            }))
        }
    }
}

type FileTexts = (Option<String>, Option<String>);

fn session_as_files(scenario: &Scenario, session: &Session) -> Result<Option<FileTexts>> {
    let (mut nodes, mut summary) = (None, None);
    for exchange in session.exchanges() {
        if !granted(scenario, &exchange.request) {
            return Ok(None);
        }
        match (&exchange.request, &exchange.response) {
            (
                HostRequest::KubernetesListResourceAll {
                    api_version, kind, ..
                },
                Response::Success { payload },
            ) if (api_version.as_str(), kind.as_str()) == ("v1", "Node") && nodes.is_none() => {
                nodes = Some(payload.clone());
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
                        let mut config_map: Value = serde_json::from_str(payload)
                            .context("a recorded ConfigMap that is not JSON")?;
                        config_map["apiVersion"] = json!("v1");
                        config_map["kind"] = json!("ConfigMap");
                        config_map["metadata"] = json!({"name": name, "namespace": namespace});
                        summary = Some(config_map.to_string());
                    }
                    // No summary file: the tool's reader answers the same 404.
                    Response::Error { message } if *message == not_found(kind, name) => {}
                    Response::Error { .. } => return Ok(None),
                }
            }
            _ => return Ok(None),
        }
    }
    Ok(Some((nodes, summary)))
}

/// Whether the tool's CREATE request for the scenario's object is the
/// scenario's request (kind, namespace, operation and name alike, no
/// subresource); else the scenario decides on another request (an UPDATE,
/// another namespace) than explaining its object would.
pub fn is_create_of_its_object(request: &Value) -> bool {
    let Some(object) = request.get("object").filter(|o| o.is_object()) else {
        return false;
    };
    let built = gpu_topology_cli::request::RequestText::create(object).to_value();
    ["/kind", "/namespace", "/operation", "/name"]
        .iter()
        .all(|pointer| built.pointer(pointer) == request.pointer(pointer).or(Some(&json!(""))))
        && request
            .get("subResource")
            .is_none_or(|s| s.as_str() == Some(""))
}
