//! what-if's changed cluster: node labels rewritten as the labeler would
//! publish them after a kubelet change, read by the policy's own code.

use gpu_topology::{LabelKey, LabelPrefix, NodeTopology, TopologyManagerPolicy};
use gpu_topology_cli::what_if::change::FleetChange;
use gpu_topology_cli::what_if::cluster::ChangedCluster;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::explain_with;
use gpu_topology_policy::decide::model::Answer;
use gpu_topology_policy::decide::record::{Explained, PodRecord};
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::{settings_from_value, Config};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Map, Value};

/// The Node list of the fixture fleet, and no fleet summary.
struct Listed(Value);

impl ClusterReader for Listed {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Ok(serde_json::to_vec(&self.0).unwrap())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Err(format!("configmaps {:?} not found", request.name))
    }
}

fn nodes() -> Value {
    serde_json::from_str(include_str!("../../examples/cluster/nodes.json")).unwrap()
}

fn node_list_request() -> ListAllResourcesRequest {
    gpu_topology_policy::cluster::nodes::node_list_request(&LabelPrefix::default())
}

fn labels_by_node(list: &Value) -> Vec<(String, Map<String, Value>)> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let name = item["metadata"]["name"].as_str().unwrap().to_owned();
            let labels = item["metadata"]["labels"].as_object().unwrap().clone();
            (name, labels)
        })
        .collect()
}

fn topology(labels: &Map<String, Value>) -> NodeTopology {
    let texts = labels
        .iter()
        .map(|(key, value)| (key.as_str(), value.as_str().unwrap()));
    NodeTopology::from_labels(&LabelPrefix::default(), texts).unwrap()
}

fn shape_of(list: &Value, node: &str) -> String {
    let (_, labels) = labels_by_node(list)
        .into_iter()
        .find(|(name, _)| name == node)
        .unwrap();
    labels["gpu-topology.io/shape"].as_str().unwrap().to_owned()
}

#[rstest]
#[case::every_gpu_node(vec![], 11)]
#[case::one_shape(vec!["ip-10-0-0-7.ec2.internal"], 2)]
fn a_change_rewrites_the_setting_and_the_shape_and_nothing_else(
    #[case] shapes_of: Vec<&str>,
    #[case] changed_nodes: usize,
) {
    let base = nodes();
    let shapes: Vec<String> = shapes_of.iter().map(|node| shape_of(&base, node)).collect();
    let change =
        FleetChange::parse(&["topologyManagerPolicy=restricted".to_owned()], &shapes).unwrap();
    let prefix = LabelPrefix::default();
    let listed = Listed(base.clone());
    let changed = ChangedCluster {
        base: &listed,
        change: &change,
        prefix: &prefix,
    };
    let after: Value =
        serde_json::from_slice(&changed.list_all_resources(&node_list_request()).unwrap()).unwrap();
    let mut changed_count = 0;
    for ((name, before), (_, after)) in labels_by_node(&base)
        .into_iter()
        .zip(labels_by_node(&after))
    {
        let differing: Vec<&String> = before
            .keys()
            .chain(after.keys())
            .filter(|key| before.get(*key) != after.get(*key))
            .collect();
        let policy = topology(&after).topology_manager_policy;
        if differing.is_empty() {
            continue;
        }
        changed_count += 1;
        assert_eq!(policy, Some(TopologyManagerPolicy::Restricted), "{name}");
        // Only the setting and the shape the labeler derives from it.
        for key in &differing {
            assert!(
                [LabelKey::TopologyManagerPolicy, LabelKey::Shape]
                    .iter()
                    .any(|k| **key == prefix.key(*k)),
                "{name}: {key} changed"
            );
        }
        assert_eq!(
            topology(&after).shape,
            Some(topology(&after).shape_id()),
            "{name}: the shape label is the labeler's for the new facts"
        );
    }
    // Nodes already on `restricted` keep their labels.
    let already = 2;
    let expected = if shapes.is_empty() {
        changed_nodes - already
    } else {
        changed_nodes
    };
    assert_eq!(changed_count, expected);
}

fn config() -> Config {
    settings_from_value(json!({})).unwrap().config().unwrap()
}

fn explain(gpus: u32, cluster: &dyn ClusterReader) -> Explained {
    let text = json!({
        "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "train", "namespace": "ml", "operation": "CREATE",
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"},
            "spec": {"containers": [{"name": "train", "resources": {"limits": {
                "nvidia.com/gpu": gpus.to_string(), "cpu": "16", "memory": "64Gi"}}}]}},
    })
    .to_string();
    let request = AdmissionRequest::parse(&text).unwrap();
    explain_with(&request, &config(), cluster)
}

/// A 4-GPU pod's records before and after the Azure NC96ads A100 v4 nodes
/// (2 + 2 GPUs, best-effort) move to single-numa-node.
struct AzureMoved {
    azure: String,
    change: FleetChange,
    prefix: LabelPrefix,
    before: PodRecord,
    after: PodRecord,
}

fn azure_moved_to_single_numa_node() -> AzureMoved {
    let base = nodes();
    let azure = shape_of(&base, "ip-10-0-0-7.ec2.internal");
    let change = FleetChange::parse(
        &["topologyManagerPolicy=single-numa-node".to_owned()],
        std::slice::from_ref(&azure),
    )
    .unwrap();
    let prefix = LabelPrefix::default();
    let listed = Listed(base);
    let changed = ChangedCluster {
        base: &listed,
        change: &change,
        prefix: &prefix,
    };
    let before = explain(4, &listed).pod.unwrap();
    let after = explain(4, &changed).pod.unwrap();
    AzureMoved {
        azure,
        change,
        prefix,
        before,
        after,
    }
}

#[test]
fn the_policy_reads_the_changed_cluster_as_the_labeler_would_publish_it() {
    let AzureMoved {
        azure,
        change,
        prefix,
        before,
        after,
    } = azure_moved_to_single_numa_node();
    let on_azure = |record: &PodRecord, shape: &str| {
        record
            .shapes
            .iter()
            .find(|s| s.topology.shape.map(|id| id.to_string()).as_deref() == Some(shape))
            .map(|s| s.answer.clone())
            .unwrap()
    };
    assert!(
        on_azure(&before, &azure).admits(),
        "best-effort admits 4 GPUs across NUMA nodes"
    );
    let moved = change
        .apply(
            &before
                .shapes
                .iter()
                .find(|s| s.topology.shape.map(|id| id.to_string()) == Some(azure.clone()))
                .unwrap()
                .topology,
            &prefix,
        )
        .unwrap();
    let answer = on_azure(&after, &moved.shape.unwrap().to_string());
    assert!(
        matches!(answer, Answer::Refuse(_)),
        "single-numa-node refuses 4 GPUs on 2 + 2: {answer:?}"
    );
    assert_eq!(before.shapes.len(), after.shapes.len());
}

#[test]
fn compare_matches_each_shape_with_its_nodes_after_the_change() {
    use gpu_topology_cli::what_if::compare::compare;
    let AzureMoved {
        azure,
        change,
        prefix,
        before,
        after,
    } = azure_moved_to_single_numa_node();
    let shapes = compare(&before, &after, &change, &prefix);
    assert_eq!(shapes.len(), before.shapes.len());
    for shape in &shapes {
        let is_azure = shape.before_shape.map(|id| id.to_string()) == Some(azure.clone());
        assert_eq!(shape.changed, is_azure);
        assert_eq!(shape.differs(), is_azure, "{shape:?}");
        assert_eq!(shape.before_shape != shape.after_shape, is_azure);
        if is_azure {
            assert_eq!(shape.nodes, 2);
            let after = shape.after.as_ref().unwrap();
            assert!(matches!(after.answer, Answer::Refuse(_)));
            assert!(!after.takes && after.why.is_some());
        }
    }
}
