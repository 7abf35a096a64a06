//! The nodes the pods run on, by name: their labels and the labeler's
//! heartbeat ([`gpu_topology::heartbeat`]), from the `--nodes` file or
//! listed live. Live, the heartbeat of nodes labeled through NFD's
//! NodeFeature API is read from the labeler's NodeFeature objects, where
//! the nodefeature sink writes it (nfd-master copies no annotation to the
//! Node).

use crate::fleet::live::{api_resource, LiveCluster};
use gpu_topology::{KubeletVersion, LabelPrefix};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What the audit reads of a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeRecord {
    pub labels: BTreeMap<String, String>,
    /// The heartbeat annotation's value, unparsed.
    pub heartbeat: Option<String>,
    /// The kubelet version the Node reports (`status.nodeInfo`), which the
    /// policy takes over the `kubelet-version` label as well.
    pub kubelet_version: Option<KubeletVersion>,
}

/// Nodes by name.
pub type Nodes = BTreeMap<String, NodeRecord>;

/// The fields of a Node the audit reads (live mode prunes the rest).
pub const NODE_FIELD_MASKS: [&str; 4] = [
    "metadata.name",
    "metadata.labels",
    "metadata.annotations",
    "status.nodeInfo.kubeletVersion",
];

/// The labeler's NodeFeature objects (`sinks/nodefeature.rs`: its app label
/// and NFD's node-name label).
const NODEFEATURE_SELECTOR: &str = "app.kubernetes.io/name=gpu-topology-labeler";
const NODE_NAME_LABEL: &str = "nfd.node.kubernetes.io/node-name";

/// The record of each Node object (nameless ones are skipped: no pod can
/// name them).
pub fn from_objects<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
    prefix: &LabelPrefix,
) -> Nodes {
    let heartbeat_key = prefix.heartbeat_key();
    let mut nodes = Nodes::new();
    for object in objects {
        let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        nodes.insert(
            name.to_owned(),
            NodeRecord {
                labels: string_map(object.pointer("/metadata/labels")),
                heartbeat: annotation(object, &heartbeat_key),
                kubelet_version: object
                    .pointer("/status/nodeInfo/kubeletVersion")
                    .and_then(Value::as_str)
                    .and_then(KubeletVersion::parse_node_info),
            },
        );
    }
    nodes
}

/// Every Node, page by page, with the heartbeats of the labeler's
/// NodeFeature objects for nodes whose own annotation has none. A refused
/// or absent NodeFeature API leaves those unknown (`Err` of the second
/// element says why), never fails the audit.
pub fn from_cluster(
    live: &LiveCluster,
    prefix: &LabelPrefix,
) -> Result<(Nodes, Option<String>), String> {
    from_cluster_objects(live, prefix).map(|(_, nodes, problem)| (nodes, problem))
}

/// [`from_cluster`], with the Node objects as listed (pruned to
/// [`NODE_FIELD_MASKS`], the masks of the policy's own Node GET), which
/// answer the binding check's Node reads.
pub fn from_cluster_objects(
    live: &LiveCluster,
    prefix: &LabelPrefix,
) -> Result<(Vec<Value>, Nodes, Option<String>), String> {
    let masks: BTreeSet<String> = NODE_FIELD_MASKS.iter().map(|m| (*m).to_owned()).collect();
    let objects = live
        .list(&api_resource("v1", "Node"), None, None, Some(&masks))
        .map_err(|problem| format!("cannot list the nodes of {}: {problem}", live.server()))?;
    let mut nodes = from_objects(&objects, prefix);
    let features = live.list(
        &api_resource("nfd.k8s-sigs.io/v1alpha1", "NodeFeature"),
        Some(NODEFEATURE_SELECTOR),
        None,
        Some(&BTreeSet::from([
            "metadata.labels".to_owned(),
            "metadata.annotations".to_owned(),
        ])),
    );
    let problem = match features {
        Ok(features) => {
            add_nodefeature_heartbeats(&mut nodes, &features, prefix);
            None
        }
        Err(problem) => Some(problem),
    };
    Ok((objects, nodes, problem))
}

/// Takes the heartbeat of each labeler NodeFeature object for its node,
/// where the Node carries none itself.
pub fn add_nodefeature_heartbeats(nodes: &mut Nodes, features: &[Value], prefix: &LabelPrefix) {
    let key = prefix.heartbeat_key();
    for feature in features {
        let labels = string_map(feature.pointer("/metadata/labels"));
        let (Some(node), Some(heartbeat)) =
            (labels.get(NODE_NAME_LABEL), annotation(feature, &key))
        else {
            continue;
        };
        if let Some(record) = nodes.get_mut(node) {
            record.heartbeat.get_or_insert(heartbeat);
        }
    }
}

fn annotation(object: &Value, key: &str) -> Option<String> {
    object
        .pointer("/metadata/annotations")
        .and_then(|annotations| annotations.get(key))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
        .collect()
}
