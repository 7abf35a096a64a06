//! The policy's binding check (`pods/binding` CREATE,
//! [`gpu_topology_policy::decide::binding`]) as the tool runs it: on a pod
//! it holds (a manifest as the API server would store it, or a pod that
//! failed at the kubelet) rather than one read from the cluster.
//!
//! The check makes three GETs: the Pod, the Node and the node's
//! NodeResourceTopology. [`PodAnswering`] answers the first with the pod
//! itself and hands the other two to the fleet's reader: files
//! (`--nodes`, `--topology`) or the live cluster. So the check's own code
//! runs unchanged, and its answer is what the policy would answer for
//! this pod bound to that node now.

use crate::fleet::masks::prune;
use gpu_topology::kubelet::Verdict;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::binding::explain::decision;
use gpu_topology_policy::decide::binding::{check, BindingOutcome, BindingRecord};
use gpu_topology_policy::request::binding::Binding;
use gpu_topology_policy::settings::Config;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// A reader that answers the GET of one Pod (`v1`, by namespace and name)
/// with `pod`, pruned to the request's masks as policy-server prunes what
/// it hands the policy, and forwards every other call to `rest`.
pub struct PodAnswering<'a> {
    pub pod: &'a Value,
    pub namespace: &'a str,
    pub name: &'a str,
    pub rest: &'a dyn ClusterReader,
}

impl ClusterReader for PodAnswering<'_> {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.rest.list_all_resources(request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let this_pod = (request.api_version.as_str(), request.kind.as_str()) == ("v1", "Pod")
            && request.name == self.name
            && request.namespace.as_deref() == Some(self.namespace);
        if !this_pod {
            return self.rest.get_resource(request);
        }
        serde_json::to_vec(&prune(self.pod, request.field_masks.as_ref()))
            .map_err(|error| error.to_string())
    }
}

/// A reader that asks `inner` once per object: `audit` checks every failed
/// pod of a node against the same Node and NodeResourceTopology, and a
/// controller's recreate loop leaves many such pods on one node.
pub struct OncePerObject<'a> {
    inner: &'a dyn ClusterReader,
    answers: RefCell<BTreeMap<GetKey, Result<Vec<u8>, String>>>,
}

/// apiVersion, kind, namespace, name.
type GetKey = (String, String, Option<String>, String);

impl<'a> OncePerObject<'a> {
    pub fn new(inner: &'a dyn ClusterReader) -> Self {
        OncePerObject {
            inner,
            answers: RefCell::new(BTreeMap::new()),
        }
    }
}

impl ClusterReader for OncePerObject<'_> {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.inner.list_all_resources(request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let key = (
            request.api_version.clone(),
            request.kind.clone(),
            request.namespace.clone(),
            request.name.clone(),
        );
        if let Some(answer) = self.answers.borrow().get(&key) {
            return answer.clone();
        }
        let answer = self.inner.get_resource(request);
        self.answers.borrow_mut().insert(key, answer.clone());
        answer
    }
}

/// The binding check of `pod` (`namespace/name`) bound to `node`, the Pod
/// answered by `pod` itself and the rest read through `cluster`; `now`
/// (Unix seconds) judges the NodeResourceTopology's age.
pub fn check_pod(
    pod: &Value,
    namespace: &str,
    name: &str,
    node: &str,
    config: &Config,
    cluster: &dyn ClusterReader,
    now: Option<u64>,
) -> BindingRecord {
    let reader = PodAnswering {
        pod,
        namespace,
        name,
        rest: cluster,
    };
    let binding = Binding {
        pod: name.into(),
        namespace: namespace.into(),
        node: node.into(),
    };
    check(&binding, config, &reader, now)
}

/// What the binding check concluded, in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckResult {
    /// The node's kubelet would refuse the pod now: the binding is refused.
    Refused,
    /// The node's kubelet admits the pod now: the binding is allowed.
    Admitted,
    /// Whether it admits the pod is unknown: allowed, with a warning.
    Unknown,
    /// A fact is missing: allowed, with a warning that names it.
    NotChecked,
    /// The pod asks for no GPU, aligned device or DRA claim: allowed.
    NotGpuPod,
    /// The object is no Pod: only a Pod is bound (`explain`).
    NotAPod,
    /// The policy rejects the pod's creation: it is never bound (`explain`).
    PodRejected,
}

/// The binding check of one pod to one node, as the reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingView {
    /// The node the pod is bound to.
    pub node: String,
    pub check: CheckResult,
    /// Whether the policy allows the binding; `null` where there is no
    /// binding to decide (`notAPod`, `podRejected`).
    pub allowed: Option<bool>,
    /// The refusal, in the policy's words; or what the check found.
    pub message: Option<String>,
    /// The policy's warnings with an allowed binding.
    pub warnings: Vec<String>,
}

impl BindingView {
    /// The view of a check the policy's code made.
    pub fn of(record: &BindingRecord) -> Self {
        let answer = decision(record);
        let (check, message) = match &record.outcome {
            BindingOutcome::NotGpuPod => (
                CheckResult::NotGpuPod,
                Some(
                    "not a GPU pod: the check reads the Pod alone and allows its binding"
                        .to_owned(),
                ),
            ),
            BindingOutcome::NotChecked(_) => (CheckResult::NotChecked, None),
            BindingOutcome::Checked(checked) => match &checked.admission.verdict {
                Verdict::Admit { aligned } => (
                    CheckResult::Admitted,
                    Some(format!(
                        "the kubelet of {} admits the pod on the node's NUMA occupancy now, {}",
                        record.node,
                        if *aligned { "aligned" } else { "not aligned" }
                    )),
                ),
                Verdict::Unknown(_) => (CheckResult::Unknown, None),
                Verdict::Refuse(_) => (CheckResult::Refused, None),
            },
        };
        let message = match answer.verdict {
            gpu_topology_policy::decide::Verdict::Reject(refusal) => Some(refusal),
            _ => message,
        };
        BindingView {
            node: record.node.clone(),
            check,
            allowed: Some(check != CheckResult::Refused),
            message,
            warnings: answer.warnings,
        }
    }

    /// No binding to check: `check` is [`CheckResult::NotAPod`] or
    /// [`CheckResult::PodRejected`].
    pub fn none(node: &str, check: CheckResult) -> Self {
        let message = match check {
            CheckResult::PodRejected => {
                "the policy rejects the pod at creation, so it is never bound"
            }
            _ => "the binding check applies to Pods",
        };
        BindingView {
            node: node.to_owned(),
            check,
            allowed: None,
            message: Some(message.to_owned()),
            warnings: Vec::new(),
        }
    }

    /// A finding: the binding is refused.
    pub fn refused(&self) -> bool {
        self.check == CheckResult::Refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    /// Answers every call with its own words, to show what was forwarded.
    struct Echo;

    impl ClusterReader for Echo {
        fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            Err(format!("list {}", request.kind))
        }
        fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
            Err(format!("get {} {}", request.kind, request.name))
        }
    }

    fn get(kind: &str, namespace: Option<&str>, name: &str) -> GetResourceRequest {
        GetResourceRequest {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.map(str::to_owned),
            disable_cache: false,
            field_masks: Some(BTreeSet::from(["spec".to_owned()])),
        }
    }

    #[test]
    fn the_pod_is_answered_pruned_and_the_rest_forwarded() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}, "status": {}});
        let reader = PodAnswering {
            pod: &pod,
            namespace: "ml",
            name: "p",
            rest: &Echo,
        };
        let answer = reader.get_resource(&get("Pod", Some("ml"), "p")).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&answer).unwrap(),
            json!({"spec": {"containers": []}})
        );
        assert_eq!(
            reader.get_resource(&get("Pod", Some("other"), "p")),
            Err("get Pod p".to_owned())
        );
        assert_eq!(
            reader.get_resource(&get("Node", None, "gpu-7")),
            Err("get Node gpu-7".to_owned())
        );
    }

    /// Counts the GETs that reach it.
    struct Counting(RefCell<usize>);

    impl ClusterReader for Counting {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            Ok(Vec::new())
        }
        fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
            *self.0.borrow_mut() += 1;
            Ok(b"{}".to_vec())
        }
    }

    #[test]
    fn each_object_is_read_once() {
        let counting = Counting(RefCell::new(0));
        let once = OncePerObject::new(&counting);
        for name in ["a", "b", "a", "a"] {
            once.get_resource(&get("Node", None, name)).unwrap();
        }
        assert_eq!(*counting.0.borrow(), 2);
    }
}
