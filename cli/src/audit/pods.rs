//! The running pods to audit: from a `kubectl get pods -A -o json|yaml`
//! dump (`--pods FILE`), or listed live, all namespaces, page by page.
//! Pods that ended (`Succeeded`, `Failed`) are left out; which are GPU pods
//! the checks decide, with the policy's demand.

use crate::fleet::live::{api_resource, LiveCluster};
use crate::input::{read_file, Document};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// What the audit reads of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningPod {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
    /// `spec.nodeName`; `None`: not scheduled yet.
    pub node: Option<String>,
    /// `status.qosClass`, when the API server set it.
    pub qos_class: Option<String>,
    pub spec: Value,
}

/// The fields of a Pod the audit reads (live mode prunes the rest).
pub const POD_FIELD_MASKS: [&str; 6] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec",
    "status.phase",
    "status.qosClass",
];

/// Pods that ended hold no resources: the API server leaves them out.
const NOT_ENDED: &str = "status.phase!=Succeeded,status.phase!=Failed";

impl RunningPod {
    /// The pod of a Pod object; `Err` names what is missing. `None` for a
    /// pod that ended.
    pub fn read(object: &Value) -> Result<Option<Self>, String> {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        if matches!(text("/status/phase"), Some("Succeeded" | "Failed")) {
            return Ok(None);
        }
        let name = text("/metadata/name").ok_or("the Pod has no metadata.name")?;
        let spec = object
            .get("spec")
            .filter(|spec| spec.is_object())
            .ok_or_else(|| format!("Pod {name} has no spec"))?;
        Ok(Some(RunningPod {
            namespace: text("/metadata/namespace").unwrap_or("default").to_owned(),
            name: name.to_owned(),
            uid: text("/metadata/uid").map(str::to_owned),
            node: text("/spec/nodeName")
                .filter(|node| !node.is_empty())
                .map(str::to_owned),
            qos_class: text("/status/qosClass").map(str::to_owned),
            spec: spec.clone(),
        }))
    }
}

/// The pods of a dump; other kinds are bad input, named by file and document.
pub fn from_file(path: &Path) -> Result<Vec<RunningPod>, String> {
    let documents = read_file(path).map_err(|error| error.to_string())?;
    from_documents(&documents)
}

/// The pods of `documents` (a dump's documents, Lists expanded).
pub fn from_documents(documents: &[Document]) -> Result<Vec<RunningPod>, String> {
    let mut pods = Vec::with_capacity(documents.len());
    for document in documents {
        if document.kind() != "Pod" {
            return Err(format!(
                "{}: is a {}, not a Pod (--pods takes what `kubectl get pods -A -o json` prints)",
                document.source,
                document.kind()
            ));
        }
        let pod = RunningPod::read(&document.object)
            .map_err(|problem| format!("{}: {problem}", document.source))?;
        pods.extend(pod);
    }
    Ok(pods)
}

/// Every pod of the cluster that has not ended, page by page.
pub fn from_cluster(live: &LiveCluster) -> Result<Vec<RunningPod>, String> {
    let masks: BTreeSet<String> = POD_FIELD_MASKS.iter().map(|m| (*m).to_owned()).collect();
    let objects = live
        .list(
            &api_resource("v1", "Pod"),
            None,
            Some(NOT_ENDED),
            Some(&masks),
        )
        .map_err(|problem| format!("cannot list the pods of {}: {problem}", live.server()))?;
    let mut pods = Vec::with_capacity(objects.len());
    for object in &objects {
        pods.extend(RunningPod::read(object)?);
    }
    Ok(pods)
}
