//! The cluster view: the labeled Nodes, listed through Kubewarden's host
//! capability and read into a [`Fleet`].
//!
//! The host call goes through [`ClusterReader`], so native tests pass recorded
//! node lists instead. Reading is built for large clusters: the list
//! is never deserialised into `k8s_openapi` Nodes nor into a JSON tree. A
//! streaming reader visits `items[].metadata.labels`, parses the labels under
//! our prefix through the label contract and skips every other label without
//! allocating; nodes are grouped by identical topology as they are read.
//! Node names are compared, never kept: only the pinned node's, when asked
//! for, is looked for, and the [`gpu_topology::MAX_OLDEST_HEARTBEATS`] nodes whose
//! labeler heartbeat (the kubernetes sink's `<prefix>/published`
//! annotation) is oldest are kept by name. The kubelet version each Node
//! reports (`status.nodeInfo.kubeletVersion`) is read too, so that no sink
//! and no labeler flag is needed for the rules that differ by version
//! ([`NodeTopology::take_reported_kubelet_version`]).

use crate::cluster::host::{quote_host_error, ClusterReader};
use gpu_topology::dra::ExtendedResources;
use gpu_topology::{
    parse_heartbeat, DistanceChunks, Fleet, KubeletVersion, LabelError, LabelKey, LabelPrefix,
    NodeTopology, OldestHeartbeats,
};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

/// The only parts of a Node the fit needs: its labels, its name (to find
/// the node a pinned pod names, and to name a node whose facts are stale),
/// its annotations (for the labeler's heartbeat) and the version its
/// kubelet reports. The host prunes the rest, which keeps the
/// policy-server's cache small on large clusters.
pub const NODE_FIELD_MASKS: [&str; 4] = [
    "metadata.labels",
    "metadata.name",
    "metadata.annotations",
    "status.nodeInfo.kubeletVersion",
];
const NODE_API_VERSION: &str = "v1";
const NODE_KIND: &str = "Node";

/// The request for every Node that publishes `<prefix>/gpus`, labels only.
pub fn node_list_request(prefix: &LabelPrefix) -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: NODE_API_VERSION.to_owned(),
        kind: NODE_KIND.to_owned(),
        // "Exists": the selector the labeler's nodes all match.
        label_selector: Some(prefix.key(LabelKey::Gpus)),
        field_selector: None,
        field_masks: Some(gpu_topology::sort::btree_set(
            NODE_FIELD_MASKS.iter().map(|mask| (*mask).to_owned()),
        )),
    }
}

/// What the labeled nodes offer, and the nodes left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterView {
    pub fleet: Fleet,
    /// Nodes whose labels under our prefix do not parse.
    pub malformed: u32,
    /// The first such problem, for the warning.
    pub first_problem: Option<String>,
    /// The node a pinned pod names, as read from the list; `None` when no
    /// node was asked for, or the list does not hold it (it is not labeled).
    pub pinned_node: Option<Result<NodeTopology, LabelError>>,
    /// Read from the Node list (which names nodes), not from the fleet
    /// summary (which counts shapes): only then is `pinned_node` looked for.
    pub from_node_list: bool,
    /// The extended resources DeviceClasses map (KEP-5004), with the nodes
    /// that publish their devices: from the fleet summary's
    /// `draExtendedResources` (`labeler summarize --dra`); empty from the
    /// Node list, which does not say.
    pub extended_by_dra: ExtendedResources,
    /// Why the summary's `draExtendedResources` could not be read.
    pub extended_by_dra_problem: Option<String>,
    /// The labelers' oldest heartbeats on the nodes read; `None` from a
    /// fleet summary that does not carry them.
    pub heartbeats: Option<OldestHeartbeats>,
    /// When the view was read (Unix seconds), to age the heartbeats by;
    /// `None` without a clock.
    pub read_at: Option<u64>,
}

impl ClusterView {
    fn add(&mut self, node: NodeRead<'_>) {
        let NodeRead {
            mut topology,
            is_pinned,
            reported_version,
            heartbeat,
        } = node;
        if let (Some((at, name)), Some(heartbeats)) = (heartbeat, &mut self.heartbeats) {
            heartbeats.offer(at, &name);
        }
        if let (Ok(topology), Some(version)) = (&mut topology, reported_version) {
            topology.take_reported_kubelet_version(version);
        }
        let node = topology;
        if is_pinned {
            self.pinned_node = Some(node.clone());
        }
        if let Err(problem) = self.fleet.add_read(node) {
            self.malformed = self.malformed.saturating_add(1);
            self.first_problem
                .get_or_insert_with(|| problem.to_string());
        }
    }
}

/// Lists the labeled nodes and reads them, keeping the topology of the node
/// named `pinned_node` apart; `Err` says why there is no view (host refused
/// or failed, or an unreadable answer). `now` dates the read.
pub fn read_cluster(
    cluster: &dyn ClusterReader,
    prefix: &LabelPrefix,
    pinned_node: Option<&str>,
    now: Option<u64>,
) -> Result<ClusterView, String> {
    let list = cluster
        .list_all_resources(&node_list_request(prefix))
        .map_err(|error| quote_host_error(&error))?;
    let mut view = parse_node_list(&list, prefix, pinned_node)?;
    view.read_at = now;
    Ok(view)
}

/// Reads a `NodeList` JSON document into a [`ClusterView`], keeping the
/// topology of the node named `pinned_node` apart when one is given.
pub fn parse_node_list(
    list: &[u8],
    prefix: &LabelPrefix,
    pinned_node: Option<&str>,
) -> Result<ClusterView, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(list);
    let heartbeat_key = prefix.heartbeat_key();
    let wanted = Wanted {
        prefix,
        pinned_node,
        heartbeat_key: &heartbeat_key,
    };
    let view = ListSeed { wanted }
        .deserialize(&mut deserializer)
        .and_then(|view| deserializer.end().map(|()| view))
        .map_err(|error| format!("the Node list is not readable: {error}"))?;
    Ok(view)
}

/// The request for one Node by name, with the parts the fit reads
/// ([`NODE_FIELD_MASKS`]).
pub fn node_request(name: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: NODE_API_VERSION.to_owned(),
        kind: NODE_KIND.to_owned(),
        name: name.to_owned(),
        namespace: None,
        disable_cache: false,
        field_masks: Some(gpu_topology::sort::btree_set(
            NODE_FIELD_MASKS.iter().map(|mask| (*mask).to_owned()),
        )),
    }
}

/// One Node as `get_resource` answers it: its topology under `prefix`,
/// with the kubelet version it reports taking the label's place, and
/// whether it carries any label of ours (a node the labeler never ran on
/// reads as an empty topology).
pub(crate) fn parse_node(node: &[u8], prefix: &LabelPrefix) -> Result<NodeTopology, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(node);
    let heartbeat_key = prefix.heartbeat_key();
    let wanted = Wanted {
        prefix,
        pinned_node: None,
        heartbeat_key: &heartbeat_key,
    };
    let read = ObjectSeed {
        wanted,
        level: Level::Node,
    }
    .deserialize(&mut deserializer)
    .and_then(|read| deserializer.end().map(|()| read))
    .map_err(|error| format!("the Node is not readable: {error}"))?;
    let mut topology = read
        .topology
        .map_err(|error| format!("its labels do not parse: {error}"))?;
    if let Some(version) = read.reported_version {
        topology.take_reported_kubelet_version(version);
    }
    Ok(topology)
}

/// Object keys the reader looks for; every other key is skipped.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    Items,
    Metadata,
    Labels,
    Annotations,
    Name,
    Status,
    NodeInfo,
    KubeletVersion,
    #[serde(other)]
    Other,
}

/// What the reader looks for in every Node.
#[derive(Clone, Copy)]
struct Wanted<'p> {
    prefix: &'p LabelPrefix,
    pinned_node: Option<&'p str>,
    /// `<prefix>/published`.
    heartbeat_key: &'p str,
}

struct ListSeed<'p> {
    wanted: Wanted<'p>,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = ClusterView;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ClusterView, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = ClusterView;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a NodeList object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClusterView, A::Error> {
        let mut view = ClusterView {
            from_node_list: true,
            heartbeats: Some(OldestHeartbeats::default()),
            ..ClusterView::default()
        };
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Items => map.next_value_seed(ItemsSeed {
                    wanted: self.wanted,
                    view: &mut view,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(view)
    }
}

/// `items`: each Node is read and added to the view as soon as it is parsed.
struct ItemsSeed<'p, 'v> {
    wanted: Wanted<'p>,
    view: &'v mut ClusterView,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of Nodes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while let Some(node) = items.next_element_seed(ObjectSeed {
            wanted: self.wanted,
            level: Level::Node,
        })? {
            self.view.add(node);
        }
        Ok(())
    }
}

/// Where in a Node the reader is: `items[i]`, its `metadata` or its
/// `labels`, its `status` or its `status.nodeInfo`.
#[derive(Clone, Copy)]
enum Level {
    Node,
    Metadata,
    Labels,
    Status,
    NodeInfo,
}

/// One Node, read down to `metadata.labels` (and `metadata.name` when a
/// pinned node is looked for) and `status.nodeInfo.kubeletVersion`,
/// skipping everything else. `null` or a missing part reads as a Node
/// without labels.
struct ObjectSeed<'p> {
    wanted: Wanted<'p>,
    level: Level,
}

type NodeResult = Result<NodeTopology, LabelError>;

/// A Node as read: its topology, whether it is the pinned node, the
/// kubelet version it reports, and its labeler heartbeat with its name,
/// borrowed from the list (copied only if kept among the oldest).
struct NodeRead<'de> {
    topology: NodeResult,
    is_pinned: bool,
    reported_version: Option<KubeletVersion>,
    heartbeat: Option<(u64, Cow<'de, str>)>,
}

impl Default for NodeRead<'_> {
    fn default() -> Self {
        NodeRead {
            topology: Ok(NodeTopology::default()),
            is_pinned: false,
            reported_version: None,
            heartbeat: None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = NodeRead<'de>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<NodeRead<'de>, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_> {
    type Value = NodeRead<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Node object")
    }
    fn visit_none<E>(self) -> Result<NodeRead<'de>, E> {
        Ok(NodeRead::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<NodeRead<'de>, D::Error> {
        deserializer.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeRead<'de>, A::Error> {
        if let Level::Labels = self.level {
            let topology = read_labels(self.wanted.prefix, map)?;
            return Ok(NodeRead {
                topology,
                ..NodeRead::default()
            });
        }
        let mut node = NodeRead::default();
        // Metadata's name and heartbeat, in either order.
        let mut name: Option<Cow<'de, str>> = None;
        let mut heartbeat: Option<u64> = None;
        while let Some(field) = map.next_key::<Field>()? {
            let inner = match (self.level, field, self.wanted.pinned_node) {
                (Level::Node, Field::Metadata, _) => Level::Metadata,
                (Level::Node, Field::Status, _) => Level::Status,
                (Level::Status, Field::NodeInfo, _) => Level::NodeInfo,
                (Level::Metadata, Field::Labels, _) => Level::Labels,
                (Level::Metadata, Field::Name, pinned) => {
                    // A name that is no string names no node.
                    let MaybeText(text) = map.next_value::<MaybeText<'de>>()?;
                    node.is_pinned = pinned.is_some_and(|pinned| text.as_deref() == Some(pinned));
                    name = text;
                    continue;
                }
                (Level::Metadata, Field::Annotations, _) => {
                    let Heartbeat(at) = map.next_value_seed(HeartbeatSeed {
                        key: self.wanted.heartbeat_key,
                    })?;
                    heartbeat = at;
                    continue;
                }
                (Level::NodeInfo, Field::KubeletVersion, _) => {
                    let ReportedVersion(version) = map.next_value()?;
                    node.reported_version = version;
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            let read = map.next_value_seed(ObjectSeed {
                wanted: self.wanted,
                level: inner,
            })?;
            match inner {
                Level::Metadata | Level::Labels => node.topology = read.topology,
                Level::Node | Level::Status | Level::NodeInfo => {}
            }
            node.is_pinned |= read.is_pinned;
            node.reported_version = read.reported_version.or(node.reported_version);
            node.heartbeat = read.heartbeat.or(node.heartbeat.take());
        }
        if let (Some(at), Some(name)) = (heartbeat, name) {
            node.heartbeat = Some((at, name));
        }
        Ok(node)
    }
}

/// `metadata.labels`: our labels parsed through the contract, others skipped
/// without allocating.
fn read_labels<'de, A: MapAccess<'de>>(
    prefix: &LabelPrefix,
    mut map: A,
) -> Result<NodeResult, A::Error> {
    let mut topology = NodeTopology::default();
    let mut problem = None;
    // The distances come in several labels, in any order: read once all are in.
    let mut distances = DistanceChunks::default();
    while let Some(Text(full_key)) = map.next_key::<Text<'de>>()? {
        match prefix.parse_key(&full_key) {
            Some(LabelKey::NumaDistances) => {
                let Text(value) = map.next_value::<Text<'de>>()?;
                distances.add_chunk(0, &value);
            }
            Some(key) => {
                let Text(value) = map.next_value::<Text<'de>>()?;
                if let Err(error) = topology.set(key, &full_key, &value) {
                    problem.get_or_insert(error);
                }
            }
            None => match prefix.parse_device_key(&full_key) {
                Some(resource) => {
                    let Text(value) = map.next_value::<Text<'de>>()?;
                    topology.set_device(resource, &value);
                }
                None => match prefix.parse_distance_chunk(&full_key) {
                    Some(index) => {
                        let Text(value) = map.next_value::<Text<'de>>()?;
                        distances.add_chunk(index, &value);
                    }
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                },
            },
        }
    }
    topology.set_distance_chunks(&distances);
    Ok(problem.map_or(Ok(topology), Err))
}

/// The heartbeat annotation among a Node's annotations, parsed; a value
/// that does not parse is no heartbeat (freshness unknown), never a list
/// that does not read.
struct Heartbeat(Option<u64>);

struct HeartbeatSeed<'k> {
    key: &'k str,
}

impl<'de> DeserializeSeed<'de> for HeartbeatSeed<'_> {
    type Value = Heartbeat;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Heartbeat, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for HeartbeatSeed<'_> {
    type Value = Heartbeat;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Node's annotations")
    }
    fn visit_none<E>(self) -> Result<Heartbeat, E> {
        Ok(Heartbeat(None))
    }
    fn visit_unit<E>(self) -> Result<Heartbeat, E> {
        Ok(Heartbeat(None))
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Heartbeat, D::Error> {
        deserializer.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Heartbeat, A::Error> {
        let mut at = None;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            if key == self.key {
                let Text(value) = map.next_value::<Text<'de>>()?;
                at = parse_heartbeat(&value).ok();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Heartbeat(at))
    }
}

/// `status.nodeInfo.kubeletVersion` as far as it reads as a kubelet's
/// version; anything else there (another string, a number, an object) is
/// no version, never a list that does not read: the labels still count.
struct ReportedVersion(Option<KubeletVersion>);

impl<'de> Deserialize<'de> for ReportedVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let MaybeText(text) = MaybeText::deserialize(deserializer)?;
        Ok(ReportedVersion(
            text.as_deref().and_then(KubeletVersion::parse_node_info),
        ))
    }
}

/// A JSON string, borrowed from the input unless it has escapes; any other
/// JSON value is read past and gives `None`.
struct MaybeText<'de>(Option<Cow<'de, str>>);

impl<'de> Deserialize<'de> for MaybeText<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MaybeTextVisitor;
        impl<'de> Visitor<'de> for MaybeTextVisitor {
            type Value = MaybeText<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(Some(Cow::Borrowed(text))))
            }
            fn visit_str<E>(self, text: &str) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(Some(Cow::Owned(text.to_owned()))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(None))
            }
            fn visit_unit<E>(self) -> Result<MaybeText<'de>, E> {
                Ok(MaybeText(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeText<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeText(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeText<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeText(None))
            }
        }
        deserializer.deserialize_any(MaybeTextVisitor)
    }
}

/// A JSON string, borrowed from the input unless it has escapes.
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }
            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_topology::TopologyManagerPolicy;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest;
    use rstest::rstest;

    fn prefix() -> LabelPrefix {
        LabelPrefix::default()
    }

    fn parse(list: &str) -> Result<ClusterView, String> {
        parse_node_list(list.as_bytes(), &prefix(), None)
    }

    #[test]
    fn the_request_lists_labeled_nodes_with_the_parts_the_fit_reads_only() {
        let request = node_list_request(&LabelPrefix::new("topology.example.com").unwrap());
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            serde_json::json!({
                "api_version": "v1",
                "kind": "Node",
                "label_selector": "topology.example.com/gpus",
                "field_selector": null,
                "field_masks": ["metadata.annotations", "metadata.labels", "metadata.name", "status.nodeInfo.kubeletVersion"]
            })
        );
    }

    #[test]
    fn reads_our_labels_and_groups_identical_nodes() {
        let view = parse(
            r#"{"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "7"}, "items": [
                {"metadata": {"name": "a", "labels": {"kubernetes.io/hostname": "a",
                    "gpu-topology.io/gpus": "8", "gpu-topology.io/gpus-per-numa-max": "4",
                    "gpu-topology.io/topology-manager-policy": "single-numa-node"}}},
                {"metadata": {"labels": {"gpu-topology.io/topology-manager-policy": "single-numa-node",
                    "gpu-topology.io/gpus-per-numa-max": "4", "gpu-topology.io/gpus": "8",
                    "gpu-topology.io/some-future-key": {"not": "a string"}}}, "spec": {"taints": []}},
                {"metadata": {"labels": {"gpu-topology.io/gpus": "2"}}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(view.malformed, 0);
        let groups = view.fleet.groups();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].nodes, 2);
        assert_eq!(groups[0].topology.gpus_per_numa_max, Some(4));
        assert_eq!(
            groups[0].topology.topology_manager_policy,
            Some(TopologyManagerPolicy::SingleNumaNode)
        );
        assert_eq!(groups[1].topology.gpus, Some(2));
    }

    /// A GB200 tray's labels as the labeler writes them (its fixture's
    /// expected file): the distances' ten chunks come back as one matrix;
    /// a chunk lost leaves the matrix, only, unknown.
    #[rstest]
    #[case::every_chunk(None, true)]
    #[case::a_chunk_lost(Some("gpu-topology.io/numa-distances.3"), false)]
    fn distance_chunks_are_read_back_whole(#[case] lost: Option<&str>, #[case] known: bool) {
        let expected = include_str!(
            "../../labeler/tests/fixtures/sysfs/gb200-tray.grace-many-numa-nodes.labels"
        );
        let labels: Vec<(&str, &str)> = expected
            .lines()
            .filter_map(|line| line.split_once('='))
            .filter(|(key, _)| Some(*key) != lost)
            .collect();
        let object: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
            .collect();
        let list = serde_json::json!({"items": [{"metadata": {"labels": object}}]});
        let view = parse(&list.to_string()).unwrap();
        let topology = &view.fleet.groups()[0].topology;
        assert_eq!(topology.machine_numa_nodes, Some(34));
        assert_eq!(topology.numa_cpus.as_ref().map(Vec::len), Some(34));
        let distances = topology.numa_distances.as_ref();
        assert_eq!(distances.is_some(), known);
        if let Some(rows) = distances {
            assert_eq!(rows[0][..4], [10, 40, 80, 80]);
            assert_eq!(rows[2][33], 255);
        }
    }

    /// (the node's `kubelet-version` label, its `status.nodeInfo`, the
    /// version the fleet keeps). The kubelet's own report wins over the
    /// label, wherever in the object it comes; what does not read as a
    /// version leaves the label's.
    #[rstest]
    #[case::reported_without_a_label(None, r#"{"kubeletVersion": "v1.36.2"}"#, Some((1, 36)))]
    #[case::reported_by_a_distribution(None, r#"{"kubeletVersion": "v1.35.0-eks-4096722"}"#, Some((1, 35)))]
    #[case::the_report_wins_over_a_stale_label(Some("1.35"), r#"{"kubeletVersion": "v1.36.0"}"#, Some((1, 36)))]
    #[case::no_report_keeps_the_label(Some("1.35"), r#"{"osImage": "Ubuntu 24.04"}"#, Some((1, 35)))]
    #[case::an_unreadable_report_keeps_the_label(Some("1.35"), r#"{"kubeletVersion": "unknown"}"#, Some((1, 35)))]
    #[case::a_number_is_no_version(None, r#"{"kubeletVersion": 136}"#, None)]
    #[case::an_object_is_no_version(None, r#"{"kubeletVersion": {"v": "1.36"}}"#, None)]
    #[case::null_node_info(None, "null", None)]
    fn the_kubelet_version_comes_from_the_node_status(
        #[case] label: Option<&str>,
        #[case] node_info: &str,
        #[case] expected: Option<(u32, u32)>,
    ) {
        let label = label.map_or_else(String::new, |version| {
            format!(r#", "gpu-topology.io/kubelet-version": "{version}""#)
        });
        let metadata =
            format!(r#""metadata": {{"labels": {{"gpu-topology.io/gpus": "8"{label}}}}}"#);
        let status = format!(r#""status": {{"nodeInfo": {node_info}}}"#);
        let expected = expected.map(|(major, minor)| KubeletVersion::new(major, minor));
        // The status before and after the metadata: JSON keys come in any order.
        for node in [
            format!("{{{metadata}, {status}}}"),
            format!("{{{status}, {metadata}}}"),
        ] {
            let view = parse(&format!(r#"{{"items": [{node}]}}"#)).unwrap();
            assert_eq!(view.malformed, 0, "{node}");
            assert_eq!(
                view.fleet.groups()[0].topology.kubelet_version,
                expected,
                "{node}"
            );
        }
    }

    /// The kubernetes sink's heartbeat annotation, before or after the
    /// name; other annotations (of any type) and a value that does not
    /// parse are no heartbeat. The oldest are kept by name.
    #[test]
    fn heartbeats_are_read_with_the_nodes_names() {
        let list = r#"{"items": [
            {"metadata": {"name": "fresh", "labels": {"gpu-topology.io/gpus": "8"},
                "annotations": {"gpu-topology.io/published": "2026-12-03T11:00:00Z", "other": {"x": 1}}}},
            {"metadata": {"annotations": {"gpu-topology.io/published": "2026-12-01T08:00:00Z"},
                "labels": {"gpu-topology.io/gpus": "8"}, "name": "stale"}},
            {"metadata": {"name": "garbled", "labels": {"gpu-topology.io/gpus": "8"},
                "annotations": {"gpu-topology.io/published": "yesterday"}}},
            {"metadata": {"name": "none", "labels": {"gpu-topology.io/gpus": "8"}, "annotations": null}},
            {"metadata": {"labels": {"gpu-topology.io/gpus": "8"},
                "annotations": {"gpu-topology.io/published": "2026-11-01T00:00:00Z"}}}
        ]}"#;
        let view = parse(list).unwrap();
        assert_eq!(view.fleet.nodes(), 5);
        let heartbeats = view.heartbeats.unwrap();
        let oldest: Vec<&str> = heartbeats
            .oldest()
            .iter()
            .map(|h| h.node.as_str())
            .collect();
        assert_eq!(
            oldest,
            ["stale", "fresh"],
            "a nameless node cannot be named"
        );
    }

    #[test]
    fn the_pinned_node_keeps_its_reported_version() {
        let list = r#"{"items": [{"status": {"nodeInfo": {"kubeletVersion": "v1.36.1"}},
            "metadata": {"name": "gpu-7", "labels": {"gpu-topology.io/gpus": "8"}}}]}"#;
        let view = parse_node_list(list.as_bytes(), &prefix(), Some("gpu-7")).unwrap();
        let pinned = view.pinned_node.unwrap().unwrap();
        assert_eq!(pinned.kubelet_version, Some(KubeletVersion::new(1, 36)));
    }

    #[test]
    fn escaped_strings_are_read_like_plain_ones() {
        let view =
            parse(r#"{"items": [{"metadata": {"labels": {"gpu-topology.io\/gpus": "\u0038"}}}]}"#)
                .unwrap();
        assert_eq!(view.fleet.groups()[0].topology.gpus, Some(8));
    }

    /// (list, nodes in the fleet, malformed nodes, problem fragment)
    #[rstest]
    #[case::no_items(r#"{"kind": "NodeList"}"#, 0, 0, None)]
    #[case::empty_items(r#"{"items": []}"#, 0, 0, None)]
    #[case::node_without_our_gpus_label(
        r#"{"items": [{"metadata": {"labels": {"gpu-topology.io/numa-nodes": "2"}}}]}"#,
        0,
        0,
        None
    )]
    #[case::null_labels_and_metadata(
        r#"{"items": [{"metadata": {"labels": null}}, {"metadata": null}, {}]}"#,
        0,
        0,
        None
    )]
    #[case::malformed_value_skips_the_node(
        r#"{"items": [{"metadata": {"labels": {"gpu-topology.io/gpus": "eight"}}},
                      {"metadata": {"labels": {"gpu-topology.io/gpus": "4"}}}]}"#,
        1,
        1,
        Some("label gpu-topology.io/gpus=\"eight\" is invalid")
    )]
    #[case::unknown_policy_word(
        r#"{"items": [{"metadata": {"labels": {"gpu-topology.io/gpus": "4",
            "gpu-topology.io/topology-manager-policy": "strict"}}}]}"#,
        0,
        1,
        Some("gpu-topology.io/topology-manager-policy=\"strict\"")
    )]
    fn reads_lists_without_failing_on_nodes(
        #[case] list: &str,
        #[case] nodes: u32,
        #[case] malformed: u32,
        #[case] problem: Option<&str>,
    ) {
        let view = parse(list).unwrap();
        assert_eq!(view.fleet.nodes(), nodes);
        assert_eq!(view.malformed, malformed);
        match problem {
            Some(part) => assert!(view.first_problem.unwrap().contains(part)),
            None => assert_eq!(view.first_problem, None),
        }
    }

    #[rstest]
    #[case::not_json("<html>502 Bad Gateway</html>")]
    #[case::not_an_object(r#"["a"]"#)]
    #[case::items_not_a_list(r#"{"items": {}}"#)]
    #[case::label_value_not_a_string(
        r#"{"items": [{"metadata": {"labels": {"gpu-topology.io/gpus": 8}}}]}"#
    )]
    #[case::trailing_garbage(r#"{"items": []} {"#)]
    #[case::truncated(r#"{"items": [{"metadata": {"labels": {"gpu-topology.io/gpus": "8""#)]
    fn unreadable_lists_are_errors(#[case] list: &str) {
        let error = parse(list).unwrap_err();
        assert!(
            error.starts_with("the Node list is not readable"),
            "{error}"
        );
    }

    const PINNED_LIST: &str = r#"{"items": [
        {"metadata": {"name": "a", "labels": {"gpu-topology.io/gpus": "8"}}},
        {"metadata": {"labels": {"gpu-topology.io/gpus": "4", "gpu-topology.io/gpus-per-numa-max": "2"}, "name": "b"}},
        {"metadata": {"name": "c", "labels": {"gpu-topology.io/gpus": "four"}}},
        {"metadata": {"name": 7}, "name": "b"}
    ]}"#;

    /// (pinned node, found in the list, its gpus label, fragment of its
    /// label problem). The name may come before or after the labels; only
    /// `metadata.name` counts.
    #[rstest]
    #[case::name_before_labels("a", true, Some(8), None)]
    #[case::name_after_labels("b", true, Some(4), None)]
    #[case::malformed_node("c", true, None, Some("gpu-topology.io/gpus=\"four\""))]
    #[case::not_in_the_list("z", false, None, None)]
    fn the_pinned_node_is_read_apart(
        #[case] pinned: &str,
        #[case] found: bool,
        #[case] gpus: Option<u32>,
        #[case] problem: Option<&str>,
    ) {
        let list = PINNED_LIST.replace(r#"{"metadata": {"name": 7}, "name": "b"}"#, "{}");
        let view = parse_node_list(list.as_bytes(), &prefix(), Some(pinned)).unwrap();
        assert_eq!(view.pinned_node.is_some(), found);
        match (view.pinned_node, problem) {
            (Some(Err(error)), Some(part)) => {
                assert!(error.to_string().contains(part), "{error}")
            }
            (node, None) => assert_eq!(node.and_then(Result::ok).and_then(|t| t.gpus), gpus),
            (node, Some(part)) => panic!("{node:?} lacks the problem {part}"),
        }
        assert_eq!(
            view.fleet.nodes(),
            2,
            "the pinned node counts like any other"
        );
    }

    #[test]
    fn a_name_of_the_wrong_type_names_no_node() {
        assert!(parse(PINNED_LIST).is_ok());
        let view = parse_node_list(PINNED_LIST.as_bytes(), &prefix(), Some("a")).unwrap();
        assert!(view.pinned_node.is_some());
        assert_eq!(view.fleet.nodes(), 2);
    }

    /// A host that answers the Node list with this error.
    struct Refusing(&'static str);
    impl ClusterReader for Refusing {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            Err(self.0.to_owned())
        }
        fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
            unreachable!("only Nodes are listed here")
        }
    }

    /// The reason is what the host's first line means, then that line
    /// (`host::quote_host_error`).
    #[rstest]
    #[case::not_granted(
        "Policy has not been granted access to Kubernetes v1/Node resources",
        "access denied (host: Policy has not been granted access to Kubernetes v1/Node resources)"
    )]
    #[case::with_a_backtrace("Cannot list v1/Node resources: Connection refused (os error 111)\n\nStack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n",
        "the API server is unreachable (host: Cannot list v1/Node resources: Connection refused (os error 111))")]
    fn a_refusing_host_is_an_error_naming_the_reason(
        #[case] host_error: &'static str,
        #[case] expected: &str,
    ) {
        let error = read_cluster(&Refusing(host_error), &prefix(), None, None).unwrap_err();
        assert_eq!(error, expected);
    }
}
