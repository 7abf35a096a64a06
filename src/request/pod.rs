//! Reading containers and their resources out of a raw PodSpec JSON value.
//!
//! Works on the PodSpec of a Pod (`.spec`) and of any pod template
//! (`.spec.template.spec`) alike. Malformed input is an error naming the
//! field, never a panic. Ephemeral containers are not read: they have no
//! resources and no part in QoS or topology.

use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// Init containers with this restart policy are sidecars (KEP-753): they keep
/// running next to the app containers.
const RESTARTABLE: &str = "Always";

/// Where a container sits in the pod, which decides how it counts: the
/// kubelet model's own kind, so the policy and the model share one.
pub use gpu_topology::kubelet::ContainerKind;

/// Identifies one container of a PodSpec.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContainerRef {
    pub kind: ContainerKind,
    /// Position in its list (`initContainers` or `containers`).
    pub index: usize,
    pub name: String,
}

impl fmt::Display for ContainerRef {
    /// `container "trainer"`, `init container "setup"`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.kind.describe(), self.name)
    }
}

/// `resources.requests` or `resources.limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    Requests,
    Limits,
}

impl Section {
    pub const fn field(self) -> &'static str {
        match self {
            Section::Requests => "requests",
            Section::Limits => "limits",
        }
    }
}

/// A container of the spec, with its JSON.
pub struct Container<'a> {
    pub id: ContainerRef,
    pub json: &'a Value,
}

impl<'a> Container<'a> {
    /// The quantity string at `resources.<section>.<resource>`, if set. Other
    /// JSON (`cpu: 2` from a hand-written manifest) reads as its text, so that
    /// garbage fails quantity parsing with a message instead of being ignored.
    pub fn resource(&self, section: Section, resource: &str) -> Option<Cow<'a, str>> {
        resources_value(self.json.get("resources"), section, resource)
    }

    /// The resource names listed at `resources.<section>` (none when the
    /// section is absent or not an object).
    pub(crate) fn resource_names(&self, section: Section) -> impl Iterator<Item = &'a str> {
        self.json
            .get("resources")
            .and_then(|resources| resources.get(section.field()))
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|list| list.keys().map(String::as_str))
    }
}

/// The quantity string at `<section>.<resource>` of a `resources` object;
/// borrowed, as nearly all are strings.
pub(crate) fn resources_value<'a>(
    resources: Option<&'a Value>,
    section: Section,
    resource: &str,
) -> Option<Cow<'a, str>> {
    match resources?.get(section.field())?.get(resource)? {
        Value::Null => None,
        Value::String(text) => Some(Cow::Borrowed(text)),
        other => Some(Cow::Owned(other.to_string())),
    }
}

/// How a pod is bound to one node before the scheduler sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinnedBy {
    /// `spec.nodeName`: the scheduler is bypassed.
    NodeName,
    /// Required node affinity on the node's name, as the DaemonSet controller
    /// writes it: the scheduler may only choose that node.
    NodeAffinity,
}

/// The node a pod is pinned to, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned<'a> {
    pub node: &'a str,
    pub by: PinnedBy,
}

/// The field a node-selector requirement names a node by.
const NODE_NAME_FIELD: &str = "metadata.name";
const OPERATOR_IN: &str = "In";

/// The node `spec` is pinned to: by a non-empty `spec.nodeName`, or by
/// required node affinity whose every `nodeSelectorTerm` carries
/// `matchFields: [{key: metadata.name, operator: In, values: [<node>]}]`
/// for the same single node. That is how the DaemonSet controller pins its
/// pods (kubernetes `pkg/controller/daemon/util/daemonset_util.go`,
/// `ReplaceDaemonSetPodNodeNameNodeAffinity`: it replaces the required terms
/// with one such term); its `GetTargetNodeName` reads the name back from the
/// first such requirement. Terms that name different nodes, or a term
/// without such a requirement, leave the scheduler a choice: not pinned.
pub fn pinned_node(spec: &Value) -> Option<Pinned<'_>> {
    if let Some(node) = spec
        .get("nodeName")
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
    {
        return Some(Pinned {
            node,
            by: PinnedBy::NodeName,
        });
    }
    let terms = spec
        .get("affinity")?
        .get("nodeAffinity")?
        .get("requiredDuringSchedulingIgnoredDuringExecution")?
        .get("nodeSelectorTerms")?
        .as_array()?;
    let mut pinned = None;
    for term in terms {
        let node = term_node(term)?;
        if pinned.is_some_and(|known| known != node) {
            return None;
        }
        pinned = Some(node);
    }
    pinned.map(|node| Pinned {
        node,
        by: PinnedBy::NodeAffinity,
    })
}

/// The single node a node-selector term's `matchFields` restricts it to.
fn term_node(term: &Value) -> Option<&str> {
    term.get("matchFields")?
        .as_array()?
        .iter()
        .find_map(|requirement| {
            let field = requirement.get("key")?.as_str()?;
            let operator = requirement.get("operator")?.as_str()?;
            match requirement.get("values")?.as_array()?.as_slice() {
                [node] if field == NODE_NAME_FIELD && operator == OPERATOR_IN => node.as_str(),
                _ => None,
            }
        })
}

/// Whether a PodSpec's `resourceClaims` (`claims`, as read) names any
/// claim: anything but absent, `null` or `[]` (the API server refuses
/// any other non-list; the DRA stage then reads no claim from it).
pub(crate) fn names_resource_claims(claims: Option<&Value>) -> bool {
    match claims {
        None | Some(Value::Null) => false,
        Some(Value::Array(claims)) => !claims.is_empty(),
        Some(_) => true,
    }
}

/// The init containers (in order) and then the app containers of `spec`.
pub fn containers(spec: &Value) -> Result<Vec<Container<'_>>, String> {
    let mut all = Vec::new();
    for field in ["initContainers", "containers"] {
        let list = match spec.get(field) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(list)) => list,
            Some(_) => return Err(format!("spec.{field} is not a list")),
        };
        for (index, json) in list.iter().enumerate() {
            if !json.is_object() {
                return Err(format!("spec.{field}[{index}] is not an object"));
            }
            let restartable =
                json.get("restartPolicy").and_then(Value::as_str) == Some(RESTARTABLE);
            let kind = match (field, restartable) {
                ("containers", _) => ContainerKind::App,
                (_, true) => ContainerKind::Sidecar,
                (_, false) => ContainerKind::Init,
            };
            let name = json
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| format!("#{index}"), str::to_owned);
            all.push(Container {
                id: ContainerRef { kind, index, name },
                json,
            });
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[test]
    fn lists_init_then_app_containers_with_their_kind() {
        let spec = json!({
            "containers": [{"name": "app"}],
            "initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}],
            "ephemeralContainers": [{"name": "debug"}]
        });
        let found: Vec<_> = containers(&spec)
            .unwrap()
            .into_iter()
            .map(|c| c.id.to_string())
            .collect();
        assert_eq!(
            found,
            [
                "init container \"setup\"",
                "sidecar container \"proxy\"",
                "container \"app\""
            ]
        );
    }

    #[rstest]
    #[case::containers_not_a_list(json!({"containers": {}}), "spec.containers is not a list")]
    #[case::container_not_an_object(json!({"containers": [1]}), "spec.containers[0] is not an object")]
    #[case::init_not_a_list(json!({"initContainers": "x"}), "spec.initContainers is not a list")]
    fn malformed_specs_are_errors(#[case] spec: Value, #[case] expected: &str) {
        assert_eq!(containers(&spec).err().unwrap(), expected);
    }

    fn pinned_by_name(node: &str) -> Value {
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]})
    }

    fn required(terms: Value) -> Value {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}})
    }

    /// (PodSpec, pinned node and how)
    #[rstest]
    #[case::node_name(json!({"nodeName": "gpu-1"}), Some(("gpu-1", PinnedBy::NodeName)))]
    #[case::empty_node_name(json!({"nodeName": ""}), None)]
    #[case::daemon_set_term(required(json!([pinned_by_name("gpu-2")])), Some(("gpu-2", PinnedBy::NodeAffinity)))]
    #[case::every_term_names_the_node(
        required(json!([pinned_by_name("gpu-2"), {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-2"]}]}])),
        Some(("gpu-2", PinnedBy::NodeAffinity)))]
    #[case::node_name_wins(
        {let mut spec = required(json!([pinned_by_name("gpu-2")])); spec["nodeName"] = json!("gpu-1"); spec},
        Some(("gpu-1", PinnedBy::NodeName)))]
    #[case::terms_name_different_nodes(required(json!([pinned_by_name("gpu-2"), pinned_by_name("gpu-3")])), None)]
    #[case::one_term_not_pinned(required(json!([pinned_by_name("gpu-2"), {"matchExpressions": []}])), None)]
    #[case::two_nodes_in_one_term(
        required(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}])), None)]
    #[case::not_in(
        required(json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a"]}]}])), None)]
    #[case::no_terms(required(json!([])), None)]
    #[case::expressions_only(required(json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a"]}]}])), None)]
    #[case::malformed_terms(required(json!("gpu-2")), None)]
    #[case::preferred_only(json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": pinned_by_name("gpu-2")}]}}}), None)]
    fn pinned_pods_are_found(#[case] spec: Value, #[case] expected: Option<(&str, PinnedBy)>) {
        let found = pinned_node(&spec).map(|pinned| (pinned.node, pinned.by));
        assert_eq!(found, expected);
    }

    #[rstest]
    #[case::string(json!({"limits": {"cpu": "2"}}), Section::Limits, Some("2"))]
    #[case::number(json!({"limits": {"cpu": 1.5}}), Section::Limits, Some("1.5"))]
    #[case::absent(json!({"requests": {"cpu": "2"}}), Section::Limits, None)]
    #[case::null_section(json!({"limits": null}), Section::Limits, None)]
    #[case::null_value(json!({"limits": {"cpu": null}}), Section::Limits, None)]
    #[case::wrong_type_kept_for_the_error(json!({"limits": {"cpu": true}}), Section::Limits, Some("true"))]
    fn reads_quantity_text(
        #[case] resources: Value,
        #[case] section: Section,
        #[case] expected: Option<&str>,
    ) {
        assert_eq!(
            resources_value(Some(&resources), section, "cpu").as_deref(),
            expected
        );
    }
}
