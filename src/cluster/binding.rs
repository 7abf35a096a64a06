//! What the binding check reads, by name: the bound Pod and the target
//! node's NodeResourceTopology (the Node itself is [`super::nodes::node_request`]).
//! Three GETs per binding, whatever the fleet's size.

use gpu_topology::nrt;
use kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest;
use std::collections::BTreeSet;

/// The Pod's spec is all the check reads: its containers' resources, its
/// pod-level resources and its claims.
pub const POD_FIELD_MASKS: [&str; 1] = ["spec"];

/// The request for the Pod `name` in `namespace`.
pub fn pod_request(namespace: &str, name: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: "v1".to_owned(),
        kind: "Pod".to_owned(),
        name: name.to_owned(),
        namespace: Some(namespace.to_owned()),
        disable_cache: false,
        field_masks: Some(masks(&POD_FIELD_MASKS)),
    }
}

/// The request for the NodeResourceTopology of node `name` (cluster-scoped,
/// named after its node). Read from the host's cache like the others: its
/// entries live 5 s (policy-evaluator `callback_handler/kubernetes.rs`),
/// far below the topology-updater's 60 s interval.
pub fn topology_request(node: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: nrt::API_VERSION.to_owned(),
        kind: nrt::KIND.to_owned(),
        name: node.to_owned(),
        namespace: None,
        disable_cache: false,
        field_masks: None,
    }
}

fn masks(list: &[&str]) -> BTreeSet<String> {
    gpu_topology::sort::btree_set(list.iter().map(|mask| (*mask).to_owned()))
}
