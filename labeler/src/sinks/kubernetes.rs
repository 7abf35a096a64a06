//! Publishes labels on the labeler's own Node with server-side apply.
//!
//! The apply body holds only our labels under our field manager, so the API
//! server removes labels we applied before and no longer send, and never touches
//! labels owned by anyone else. `force=true` takes ownership of our keys even if
//! another manager (a human's `kubectl label`, an older labeler) set them: the
//! labeler is the authority for its prefix, and a conflict would otherwise pin a
//! stale value forever.
//!
//! Unchanged labels are applied again every [`REAPPLY_INTERVAL`]: a label
//! someone removed or edited by hand comes back. The apply carries the
//! heartbeat annotation too ([`Heartbeat`]), ours to remove like the labels.

use super::api::{self, ApiError};
use super::heartbeat::Heartbeat;
use super::{Labels, PublishError};
use gpu_topology::{KubeletVersion, LabelPrefix};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::api::PatchParams;
use kube::{Client, Resource};
use serde_json::{json, Value};

// The retry code and the field manager moved to `retry` and `api`, shared with
// the nodefeature sink; the summarizer still imports them from here.
pub use super::api::{reapply_due, DEFAULT_FIELD_MANAGER, REAPPLY_INTERVAL};
pub use super::retry::{is_retryable, with_retries, Exhausted, RetryPolicy};

/// The apply body: a minimal Node carrying only our labels and annotations
/// (the heartbeat).
pub fn apply_body(node: &str, labels: &Labels, annotations: &Labels) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": node, "labels": labels, "annotations": annotations },
    })
}

/// What to do about a failed apply of `node`'s labels, appended to its error
/// ("" when the error says it all).
pub fn hint(error: &ApiError, node: &str) -> String {
    match error.refused_code() {
        // An apply to a Node that does not exist would create it, which
        // `patch` alone does not allow: the name is wrong, not the Role.
        Some(403) if error.refused_message().contains("cannot create resource") => format!(
            "; there is no Node {node:?}: --node-name (NODE_NAME) must be the pod's spec.nodeName"
        ),
        Some(403) => "; the service account needs `patch` on nodes (ClusterRole rule: \
                      apiGroups [\"\"], resources [nodes], verbs [patch])"
            .to_owned(),
        _ => String::new(),
    }
}

/// Server-side applies labels to one Node.
#[derive(Clone)]
pub struct KubernetesSink {
    client: Client,
    node: String,
    params: PatchParams,
    retry: RetryPolicy,
    /// When labels were last applied successfully.
    last_applied: Option<Timestamp>,
    heartbeat: Heartbeat,
    kubelet_version: Option<KubeletVersion>,
}

impl KubernetesSink {
    /// `client` should come from [`api::client`] (or [`api::configure`]): with
    /// kube's own retries on, `retry` would not be the whole story.
    /// The heartbeat goes under `prefix`, the labels' prefix.
    pub fn new(
        client: Client,
        node: String,
        field_manager: &str,
        retry: RetryPolicy,
        prefix: &LabelPrefix,
    ) -> Self {
        Self {
            client,
            node,
            params: PatchParams::apply(field_manager).force(),
            retry,
            last_applied: None,
            heartbeat: Heartbeat::new(prefix),
            kubelet_version: None,
        }
    }

    /// The kubelet's version as the Node's `status.nodeInfo.kubeletVersion`
    /// said in the answer to the last apply (the server answers a
    /// server-side apply with the whole Node): no request and no RBAC beyond
    /// `patch`. `None` before the first apply, or when the answer has none
    /// that reads ([`KubeletVersion::parse_node_info`]).
    pub fn kubelet_version(&self) -> Option<KubeletVersion> {
        self.kubelet_version
    }

    /// True when unchanged labels should be applied again ([`REAPPLY_INTERVAL`]).
    pub fn needs_refresh(&self, now: Timestamp) -> bool {
        reapply_due(self.last_applied, now)
    }

    pub async fn publish(&mut self, labels: &Labels, now: Timestamp) -> Result<(), PublishError> {
        let heartbeat = self.heartbeat.at(labels, now);
        let body = apply_body(&self.node, labels, &self.heartbeat.annotations(heartbeat));
        let nodes = Node::url_path(&(), None);
        let answer = with_retries(&self.retry, "apply node labels", || {
            api::apply_answer(&self.client, &nodes, &self.node, &self.params, &body)
        })
        .await
        .map_err(|failed| PublishError::Kubernetes {
            node: self.node.clone(),
            attempts: failed.attempts,
            hint: hint(&failed.error, &self.node),
            source: Box::new(failed.error),
        })?;
        self.kubelet_version = reported_kubelet_version(&answer);
        self.last_applied = Some(now);
        self.heartbeat.sent(labels, heartbeat);
        Ok(())
    }
}

/// `status.nodeInfo.kubeletVersion` of a Node object, when it reads.
pub fn reported_kubelet_version(node: &Value) -> Option<KubeletVersion> {
    node.pointer("/status/nodeInfo/kubeletVersion")
        .and_then(Value::as_str)
        .and_then(KubeletVersion::parse_node_info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain(json!({"status": {"nodeInfo": {"kubeletVersion": "v1.36.2"}}}), Some((1, 36)))]
    #[case::eks(json!({"status": {"nodeInfo": {"kubeletVersion": "v1.35.0-eks-4096722"}}}), Some((1, 35)))]
    #[case::no_status(json!({"metadata": {"name": "n1"}}), None)]
    #[case::not_a_version(json!({"status": {"nodeInfo": {"kubeletVersion": "unknown"}}}), None)]
    #[case::not_a_string(json!({"status": {"nodeInfo": {"kubeletVersion": 136}}}), None)]
    fn the_kubelet_version_is_read_from_the_node(
        #[case] node: Value,
        #[case] expected: Option<(u32, u32)>,
    ) {
        assert_eq!(
            reported_kubelet_version(&node),
            expected.map(|(major, minor)| KubeletVersion::new(major, minor))
        );
    }

    #[rstest]
    #[case::forbidden(
        "nodes \"gpu-node-1\" is forbidden: User \"system:serviceaccount:kube-system:gpu-topology-labeler\" cannot patch resource \"nodes\"",
        "verbs [patch]"
    )]
    #[case::no_such_node(
        "nodes \"gpu-node-9\" is forbidden: User \"system:serviceaccount:kube-system:gpu-topology-labeler\" cannot create resource \"nodes\"",
        "there is no Node \"gpu-node-9\""
    )]
    fn forbidden_applies_say_what_to_do(#[case] message: &str, #[case] expected: &str) {
        let error = api::refusal(403, message.as_bytes(), None);
        let hint = hint(&error, "gpu-node-9");
        assert!(hint.starts_with("; ") && hint.contains(expected), "{hint}");
    }

    #[test]
    fn other_failures_need_no_hint() {
        assert_eq!(hint(&api::refusal(422, b"invalid", None), "n"), "");
        assert_eq!(hint(&api::refusal(503, b"unavailable", None), "n"), "");
    }
}
