//! The pods to audit: from a `kubectl get pods -A -o json|yaml` dump
//! (`--pods FILE`), or listed live, all namespaces, page by page.
//!
//! - The running pods: those that have not ended (`Succeeded`, `Failed`);
//!   which are GPU pods the checks decide, with the policy's demand.
//! - The pods that failed at the kubelet's admission ([`FailedPod`]):
//!   `status.phase` `Failed` with one of [`ADMISSION_FAILURES`] as
//!   `status.reason`. Live, a second list asks for `Failed` pods alone.

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
/// The pods that failed, among them those the kubelet refused.
const FAILED: &str = "status.phase=Failed";

/// The fields of a failed Pod the audit reads (live mode prunes the rest):
/// the running pod's, and why it failed.
pub const FAILED_POD_FIELD_MASKS: [&str; 8] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec",
    "status.phase",
    "status.qosClass",
    "status.reason",
    "status.message",
];

/// The `status.reason` of a pod the kubelet refused at admission for what
/// the binding check models: the Topology Manager found no NUMA placement
/// (`TopologyAffinityError`, `pkg/kubelet/cm/topologymanager`), the static
/// CPU Manager's `full-pcpus-only` found no whole cores
/// (`SMTAlignmentError`, `cpumanager/policy_static.go`), or an allocation
/// failed after admission began (`UnexpectedAdmissionError`,
/// `pkg/kubelet/lifecycle/predicate.go`: a device plugin or the Memory
/// Manager's allocation).
pub const ADMISSION_FAILURES: [&str; 3] = [
    "TopologyAffinityError",
    "SMTAlignmentError",
    "UnexpectedAdmissionError",
];

/// A pod the kubelet refused: `Failed`, with one of [`ADMISSION_FAILURES`].
/// It holds nothing on its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedPod {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
    /// `spec.nodeName`: the node that refused it.
    pub node: Option<String>,
    /// `status.reason`.
    pub reason: String,
    /// `status.message`: the kubelet's words.
    pub message: Option<String>,
    /// The Pod as read, which answers the binding check's Pod GET.
    pub object: Value,
}

impl FailedPod {
    /// The failed pod of a Pod object; `None` for any other pod.
    pub fn read(object: &Value) -> Result<Option<Self>, String> {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        if text("/status/phase") != Some("Failed") {
            return Ok(None);
        }
        let Some(reason) = text("/status/reason").filter(|r| ADMISSION_FAILURES.contains(r)) else {
            return Ok(None);
        };
        let name = text("/metadata/name").ok_or("the Pod has no metadata.name")?;
        Ok(Some(FailedPod {
            namespace: text("/metadata/namespace").unwrap_or("default").to_owned(),
            name: name.to_owned(),
            uid: text("/metadata/uid").map(str::to_owned),
            node: text("/spec/nodeName")
                .filter(|node| !node.is_empty())
                .map(str::to_owned),
            reason: reason.to_owned(),
            message: text("/status/message").map(str::to_owned),
            object: object.clone(),
        }))
    }
}

/// The pods of a dump or a cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pods {
    pub running: Vec<RunningPod>,
    pub failed: Vec<FailedPod>,
}

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

/// The running and the failed pods of a dump; other kinds are bad input,
/// named by file and document.
pub fn read_dump(path: &Path) -> Result<Pods, String> {
    let documents = read_file(path).map_err(|error| error.to_string())?;
    all_of_documents(&documents)
}

/// The running and the failed pods of `documents`.
pub fn all_of_documents(documents: &[Document]) -> Result<Pods, String> {
    let mut pods = Pods::default();
    for document in documents {
        if document.kind() != "Pod" {
            return Err(format!(
                "{}: is a {}, not a Pod (--pods takes what `kubectl get pods -A -o json` prints)",
                document.source,
                document.kind()
            ));
        }
        let place = |problem| format!("{}: {problem}", document.source);
        let pod = RunningPod::read(&document.object).map_err(place)?;
        pods.running.extend(pod);
        let failed = FailedPod::read(&document.object).map_err(place)?;
        pods.failed.extend(failed);
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

/// Every pod of the cluster that failed at the kubelet's admission: a list
/// of the `Failed` pods (which the running pods' list leaves out), the
/// kubelet's reason picked from them.
pub fn failed_from_cluster(live: &LiveCluster) -> Result<Vec<FailedPod>, String> {
    let masks: BTreeSet<String> = FAILED_POD_FIELD_MASKS
        .iter()
        .map(|m| (*m).to_owned())
        .collect();
    let objects = live
        .list(&api_resource("v1", "Pod"), None, Some(FAILED), Some(&masks))
        .map_err(|problem| {
            format!(
                "cannot list the failed pods of {}: {problem}",
                live.server()
            )
        })?;
    let mut pods = Vec::new();
    for object in &objects {
        pods.extend(FailedPod::read(object)?);
    }
    Ok(pods)
}
