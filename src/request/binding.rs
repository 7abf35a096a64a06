//! A `pods/binding` CREATE: the `Binding` the scheduler writes to put a pod
//! on a node (`k8s.io/api/core/v1` `Binding`: `metadata` names the pod,
//! `target` the node). It carries no pod spec and no pod labels.

use serde_json::Value;
use std::borrow::Cow;

/// The subresource of a binding request.
pub(crate) const BINDING_SUBRESOURCE: &str = "binding";
/// The kind of its object.
pub(crate) const BINDING_KIND: &str = "Binding";
/// The only kind of target a pod binds to.
const NODE_KIND: &str = "Node";

/// What the binding check reads of a Binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The pod: the object's name, else the request's (the API server
    /// takes the name from the URL when the body leaves it out).
    pub pod: Cow<'a, str>,
    pub namespace: Cow<'a, str>,
    /// The node the scheduler chose.
    pub node: Cow<'a, str>,
}

impl<'a> Binding<'a> {
    /// Reads the Binding `object` of a request for pod `name` in
    /// `namespace`. `Ok(None)`: its target is not a Node (nothing the
    /// kubelet admits).
    pub fn read(
        object: &'a str,
        name: Cow<'a, str>,
        namespace: Cow<'a, str>,
    ) -> Result<Option<Self>, String> {
        // A small object, read as a tree: the module already holds that
        // reader, where a derived one would add its own code.
        let object: Value = serde_json::from_slice(object.as_bytes())
            .map_err(|error| format!("the Binding cannot be read: {error}"))?;
        let target = object.get("target").unwrap_or(&Value::Null);
        let kind = target.get("kind").and_then(Value::as_str);
        if kind.is_some_and(|k| !k.is_empty() && k != NODE_KIND) {
            return Ok(None);
        }
        let body_name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|pod| !pod.is_empty());
        let pod = match body_name {
            Some(pod) => Cow::Owned(pod.to_owned()),
            None => name,
        };
        let node = target
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if pod.is_empty() || node.is_empty() {
            return Err("the Binding names no pod or no node".to_owned());
        }
        Ok(Some(Binding {
            pod,
            namespace,
            node: Cow::Owned(node.to_owned()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::pod_named_in_the_body(
        r#"{"metadata": {"name": "train-0", "namespace": "ml"}, "target": {"kind": "Node", "name": "gpu-7"}}"#,
        "train-0"
    )]
    #[case::pod_named_by_the_url(r#"{"target": {"name": "gpu-7"}}"#, "from-url")]
    fn reads_the_pod_and_the_node(#[case] object: &str, #[case] pod: &str) {
        let binding = Binding::read(object, "from-url".into(), "ml".into())
            .unwrap()
            .unwrap();
        assert_eq!(
            (binding.pod.as_ref(), binding.node.as_ref()),
            (pod, "gpu-7")
        );
    }

    #[test]
    fn a_target_that_is_no_node_is_not_checked() {
        let object = r#"{"target": {"kind": "VirtualNode", "name": "v"}}"#;
        assert_eq!(Binding::read(object, "p".into(), "ml".into()), Ok(None));
    }

    #[rstest]
    #[case::no_target(r#"{"metadata": {"name": "p"}}"#)]
    #[case::empty_node(r#"{"target": {"name": ""}}"#)]
    #[case::not_json("[")]
    fn a_malformed_binding_is_named(#[case] object: &str) {
        assert!(Binding::read(object, "p".into(), "ml".into()).is_err());
    }
}
