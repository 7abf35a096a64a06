//! Publishes labels as a Node Feature Discovery `NodeFeature` object
//! (`nfd.k8s-sigs.io/v1alpha1`, served and watched by default since NFD v0.14,
//! where the `NodeFeatureAPI` feature gate became beta). nfd-master merges every
//! NodeFeature labelled `nfd.node.kubernetes.io/node-name: <node>`, from any
//! namespace its `restrictions.nodeFeatureNamespaceSelector` selects (all by
//! default), and sets the merged `spec.labels` on that Node; labels that no
//! object requests any more are removed (`pkg/nfd-master/nfd-master.go`,
//! `getAndMergeNodeFeatures` and `updateNodeObject`). The labeler needs only a
//! namespaced Role: no hostPath write, no `patch nodes`.
//!
//! One object per node, `gpu-topology-<node>` in the labeler's namespace,
//! server-side applied with `force=true` under the labeler's field manager. The
//! body carries all of our labels in `spec.labels`, so a label this version no
//! longer publishes is dropped from the object (server-side apply removes the
//! map keys a manager owned and no longer applies) and nfd-master removes it
//! from the Node.
//!
//! **Owner.** nfd-worker owns its own NodeFeature by its pod's owners (the
//! DaemonSet, `blockOwnerDeletion: false`) plus the pod
//! (`pkg/nfd-worker/nfd-worker.go`, `setOwnerReference`), after owning it by
//! the pod alone made every pod restart delete the object and strip the labels
//! until the new pod recreated it (kubernetes-sigs/node-feature-discovery#1752).
//! The labeler follows the DaemonSet choice and leaves the pod out: a pod
//! reference changes with every restarted pod, and where the
//! OwnerReferencesPermissionEnforcement admission plugin runs, changing
//! ownerReferences needs `delete` on the object (the failure NVIDIA's GPU
//! feature discovery hit, NVIDIA/k8s-device-plugin#2040). So the owner is the
//! controller of the labeler's pod (`--pod-name`, read with one metadata GET
//! on the first publish), or the pod itself when nothing controls it.
//! Consequences: when a DaemonSet pod is replaced (an upgrade, an eviction) the
//! object and the Node's labels stay as they are in between, and the new pod's
//! first apply sends the same object again; deleting the DaemonSet deletes the
//! objects (Kubernetes garbage collection) and nfd-master removes the labels;
//! nfd-gc deletes the object of a deleted Node. An object whose node the
//! DaemonSet no longer runs on stays until the DaemonSet goes (delete it by
//! hand to drop those labels at once).

use super::api::{self, reapply_due, ApiError};
use super::heartbeat::Heartbeat;
use super::retry::{with_retries, RetryPolicy};
use super::{Labels, PublishError};
use gpu_topology::LabelPrefix;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::PatchParams;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Client, Resource};
use serde_json::{json, Map, Value};

pub const GROUP: &str = "nfd.k8s-sigs.io";
pub const VERSION: &str = "v1alpha1";
pub const KIND: &str = "NodeFeature";
pub const PLURAL: &str = "nodefeatures";
/// The label nfd-master selects a node's NodeFeature objects by.
pub const NODE_NAME_LABEL: &str = "nfd.node.kubernetes.io/node-name";
/// Object names are this plus the node name: they never equal nfd-worker's
/// (the bare node name) even in NFD's namespace.
pub const NAME_PREFIX: &str = "gpu-topology-";
/// Lets `kubectl get nodefeatures -l app.kubernetes.io/name=gpu-topology-labeler` find ours.
pub const APP_LABEL: (&str, &str) = ("app.kubernetes.io/name", "gpu-topology-labeler");
/// The longest node name a NodeFeature can target: the node-name label's value
/// is the node name, and a label value has at most 63 characters.
pub const MAX_NODE_NAME: usize = 63;

/// The object's name for `node`.
pub fn object_name(node: &str) -> String {
    format!("{NAME_PREFIX}{node}")
}

/// The URL path of the NodeFeature collection in `namespace`.
pub fn collection(namespace: &str) -> String {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL);
    DynamicObject::url_path(&resource, Some(namespace))
}

/// The apply body: our labels for `node`, owned by `owner` when there is
/// one, with `annotations` (the heartbeat) on the object itself: a
/// NodeFeature's spec carries only `features` and `labels`, and nfd-master
/// copies nothing else to the Node, so readers find the heartbeat here.
pub fn apply_body(
    namespace: &str,
    node: &str,
    owner: Option<&OwnerReference>,
    labels: &Labels,
    annotations: &Labels,
) -> Value {
    let mut metadata = Map::new();
    metadata.insert("name".to_owned(), json!(object_name(node)));
    metadata.insert("namespace".to_owned(), json!(namespace));
    metadata.insert(
        "labels".to_owned(),
        json!({ NODE_NAME_LABEL: node, APP_LABEL.0: APP_LABEL.1 }),
    );
    metadata.insert("annotations".to_owned(), json!(annotations));
    if let Some(owner) = owner {
        metadata.insert("ownerReferences".to_owned(), json!([owner]));
    }
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": metadata,
        "spec": { "labels": labels },
    })
}

/// The owner for the NodeFeature of the labeler running in pod `pod` with
/// `metadata`: the pod's controller (its DaemonSet), else the pod. Neither
/// `controller` nor `blockOwnerDeletion` is set: the DaemonSet does not manage
/// NodeFeatures, and blocking its deletion would need `update` on
/// `daemonsets/finalizers` where OwnerReferencesPermissionEnforcement runs.
pub fn owner_of(pod: &str, metadata: &ObjectMeta) -> Result<OwnerReference, String> {
    let controller = metadata
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true));
    if let Some(controller) = controller {
        return Ok(OwnerReference {
            controller: None,
            block_owner_deletion: None,
            ..controller.clone()
        });
    }
    let uid = metadata
        .uid
        .clone()
        .filter(|uid| !uid.is_empty())
        .ok_or_else(|| format!("pod {pod} has neither a controller nor a uid"))?;
    Ok(OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Pod".to_owned(),
        name: pod.to_owned(),
        uid,
        controller: None,
        block_owner_deletion: None,
    })
}

/// What to do about a failed apply ("" when the error says it all).
pub fn apply_hint(error: &ApiError, namespace: &str) -> String {
    match error.refused_code() {
        Some(403) if error.refused_message().contains("cannot set an ownerRef") => {
            "; the OwnerReferencesPermissionEnforcement admission plugin lets only an account \
             that may delete an object set its ownerReferences: add `delete` to the Role's \
             nodefeatures rule (the labeler never deletes)"
                .to_owned()
        }
        Some(403) => format!(
            "; the service account needs `create` and `patch` on nodefeatures in {namespace} \
             (Role rule: apiGroups [{GROUP}], resources [{PLURAL}], verbs [create, patch])"
        ),
        Some(404) => format!(
            "; the API server serves no {PLURAL}.{GROUP}/{VERSION} in namespace {namespace}: \
             NFD v0.14 or later (its NodeFeature CRD) must be installed and the namespace \
             must exist; without them use --sink nfd"
        ),
        _ => String::new(),
    }
}

/// What to do about a failed owner lookup ("" when the error says it all).
pub fn owner_hint(error: &ApiError, namespace: &str, pod: &str) -> String {
    match error.refused_code() {
        Some(403) => format!(
            "; the service account needs `get` on pods in {namespace} (Role rule: apiGroups \
             [\"\"], resources [pods], verbs [get]) to find the DaemonSet that owns the NodeFeature"
        ),
        Some(404) => format!(
            "; no pod {pod} in {namespace}: set POD_NAME from metadata.name and POD_NAMESPACE \
             from metadata.namespace (downward API); the NodeFeature must be in its owner's namespace"
        ),
        _ => String::new(),
    }
}

/// Where the object goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The node the labels describe (`--node-name`).
    pub node: String,
    /// The object's namespace; `None`: the client's (in a pod, the service
    /// account's namespace).
    pub namespace: Option<String>,
    /// The labeler's pod, whose controller owns the object; `None`: no owner.
    pub pod: Option<String>,
}

/// Server-side applies one node's NodeFeature object.
#[derive(Clone)]
pub struct NodeFeatureSink {
    client: Client,
    node: String,
    namespace: String,
    name: String,
    pod: Option<String>,
    /// The owner, once read.
    owner: Option<OwnerReference>,
    params: PatchParams,
    retry: RetryPolicy,
    /// When the object was last applied successfully.
    last_applied: Option<Timestamp>,
    heartbeat: Heartbeat,
}

impl NodeFeatureSink {
    /// `client` should come from [`api::client`] (or [`api::configure`]).
    /// The heartbeat goes under `prefix`, the labels' prefix.
    pub fn new(
        client: Client,
        target: Target,
        field_manager: &str,
        retry: RetryPolicy,
        prefix: &LabelPrefix,
    ) -> Self {
        let namespace = target
            .namespace
            .unwrap_or_else(|| client.default_namespace().to_owned());
        Self {
            client,
            name: object_name(&target.node),
            node: target.node,
            namespace,
            pod: target.pod,
            owner: None,
            params: PatchParams::apply(field_manager).force(),
            retry,
            last_applied: None,
            heartbeat: Heartbeat::new(prefix),
        }
    }

    /// `namespace/name` of the object.
    pub fn object(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// True when unchanged labels should be applied again
    /// ([`api::REAPPLY_INTERVAL`]): a deleted or edited object comes back.
    pub fn needs_refresh(&self, now: Timestamp) -> bool {
        reapply_due(self.last_applied, now)
    }

    pub async fn publish(&mut self, labels: &Labels, now: Timestamp) -> Result<(), PublishError> {
        let owner = self.owner().await?;
        let heartbeat = self.heartbeat.at(labels, now);
        let annotations = self.heartbeat.annotations(heartbeat);
        let body = apply_body(
            &self.namespace,
            &self.node,
            owner.as_ref(),
            labels,
            &annotations,
        );
        let collection = collection(&self.namespace);
        with_retries(&self.retry, "apply the NodeFeature", || {
            api::apply(&self.client, &collection, &self.name, &self.params, &body)
        })
        .await
        .map_err(|failed| PublishError::NodeFeature {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            attempts: failed.attempts,
            hint: apply_hint(&failed.error, &self.namespace),
            source: Box::new(failed.error),
        })?;
        self.last_applied = Some(now);
        self.heartbeat.sent(labels, heartbeat);
        Ok(())
    }

    /// The object's owner: read once, then kept (a pod's controller does not
    /// change). Nothing is applied until it is known, so no object is left
    /// without the owner that garbage-collects it.
    async fn owner(&mut self) -> Result<Option<OwnerReference>, PublishError> {
        let Some(pod) = self.pod.clone() else {
            return Ok(None);
        };
        if let Some(owner) = &self.owner {
            return Ok(Some(owner.clone()));
        }
        let pods = Pod::url_path(&(), Some(&self.namespace));
        let owner = with_retries(&self.retry, "read the labeler's pod", || async {
            let metadata = api::get_metadata(&self.client, &pods, &pod).await?;
            owner_of(&pod, &metadata).map_err(|detail| ApiError::Unexpected { code: 200, detail })
        })
        .await
        .map_err(|failed| PublishError::Owner {
            namespace: self.namespace.clone(),
            pod: pod.clone(),
            attempts: failed.attempts,
            hint: owner_hint(&failed.error, &self.namespace, &pod),
            source: Box::new(failed.error),
        })?;
        tracing::info!(kind = %owner.kind, name = %owner.name, "NodeFeature owner");
        self.owner = Some(owner.clone());
        Ok(Some(owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn reference(kind: &str, name: &str, uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: if kind == "Pod" { "v1" } else { "apps/v1" }.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
            controller,
            block_owner_deletion: controller,
        }
    }

    fn pod_metadata(uid: Option<&str>, owners: Vec<OwnerReference>) -> ObjectMeta {
        ObjectMeta {
            name: Some("labeler-x7k2p".to_owned()),
            uid: uid.map(str::to_owned),
            owner_references: (!owners.is_empty()).then_some(owners),
            ..ObjectMeta::default()
        }
    }

    #[rstest]
    #[case::daemonset_pod(
        pod_metadata(Some("pod-uid"), vec![reference("DaemonSet", "gpu-topology-labeler", "ds-uid", Some(true))]),
        Ok(reference("DaemonSet", "gpu-topology-labeler", "ds-uid", None))
    )]
    #[case::controller_among_other_owners(
        pod_metadata(Some("pod-uid"), vec![
            reference("ConfigMap", "keeper", "cm-uid", None),
            reference("DaemonSet", "gpu-topology-labeler", "ds-uid", Some(true)),
        ]),
        Ok(reference("DaemonSet", "gpu-topology-labeler", "ds-uid", None))
    )]
    #[case::bare_pod(pod_metadata(Some("pod-uid"), vec![]), Ok(reference("Pod", "labeler-x7k2p", "pod-uid", None)))]
    #[case::owners_but_no_controller(
        pod_metadata(Some("pod-uid"), vec![reference("ConfigMap", "keeper", "cm-uid", Some(false))]),
        Ok(reference("Pod", "labeler-x7k2p", "pod-uid", None))
    )]
    #[case::no_uid(pod_metadata(None, vec![]), Err("neither a controller nor a uid"))]
    #[case::empty_uid(pod_metadata(Some(""), vec![]), Err("neither a controller nor a uid"))]
    fn the_owner_is_the_pods_controller_else_the_pod(
        #[case] metadata: ObjectMeta,
        #[case] expected: Result<OwnerReference, &str>,
    ) {
        match (owner_of("labeler-x7k2p", &metadata), expected) {
            (Ok(owner), Ok(expected)) => assert_eq!(owner, expected),
            (Err(error), Err(part)) => assert!(error.contains(part), "{error}"),
            (got, expected) => panic!("got {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn object_names_and_paths() {
        assert_eq!(object_name("gpu-node-1"), "gpu-topology-gpu-node-1");
        assert_eq!(
            collection("gpu-topology-labeler"),
            "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/gpu-topology-labeler/nodefeatures"
        );
        // The longest node name still gives a valid object name (253 at most).
        assert!(object_name(&"n".repeat(MAX_NODE_NAME)).len() <= 253);
    }

    fn refused(code: u16, message: &str) -> ApiError {
        api::refusal(code, message.as_bytes(), None)
    }

    #[rstest]
    #[case::forbidden(refused(403, "nodefeatures is forbidden"), "verbs [create, patch]")]
    #[case::owner_references_enforced(
        refused(
            403,
            "cannot set an ownerRef on a resource you can't delete: RBAC: not allowed"
        ),
        "add `delete`"
    )]
    #[case::no_crd(
        refused(404, "the server could not find the requested resource"),
        "NFD v0.14 or later"
    )]
    #[case::invalid(refused(422, "spec.labels: Invalid value"), "")]
    #[case::unavailable(refused(503, "etcd leader changed"), "")]
    fn apply_failures_say_what_to_do(#[case] error: ApiError, #[case] expected: &str) {
        let hint = apply_hint(&error, "gpu-topology-labeler");
        if expected.is_empty() {
            assert_eq!(hint, "");
        } else {
            assert!(hint.starts_with("; ") && hint.contains(expected), "{hint}");
        }
    }

    #[rstest]
    #[case::forbidden(refused(403, "pods is forbidden"), "verbs [get]")]
    #[case::no_such_pod(refused(404, "pods \"x\" not found"), "POD_NAME from metadata.name")]
    #[case::unavailable(refused(503, "unavailable"), "")]
    fn owner_failures_say_what_to_do(#[case] error: ApiError, #[case] expected: &str) {
        let hint = owner_hint(&error, "gpu-topology-labeler", "labeler-x7k2p");
        if expected.is_empty() {
            assert_eq!(hint, "");
        } else {
            assert!(hint.starts_with("; ") && hint.contains(expected), "{hint}");
        }
    }
}
