//! The autoscaler examples (`examples/autoscaling/`) declare labels a
//! labeler would publish: every one of ours reads strictly through the
//! contract, and `shape` is the digest of the facts declared with it, so
//! `topology.affinity: required`'s `shape In [...]` matches the template.
//! The facts are as the current labeler publishes them (memory per NUMA
//! node in whole GiB), so the template and the live nodes it becomes have
//! one shape.

use gpu_topology::{published_numa_memory_mib, LabelPrefix, NodeTopology};
use serde_yaml::Value;
use std::path::PathBuf;

fn documents(file: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/autoscaling")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|document| serde::Deserialize::deserialize(document).unwrap())
        .collect()
}

/// Reads our labels strictly and checks the shape against the facts.
fn check(labels: &Value, place: &str) {
    let prefix = LabelPrefix::default();
    let mut topology = NodeTopology::default();
    let mut ours = 0;
    for (key, value) in labels.as_mapping().unwrap() {
        let (key, value) = (key.as_str().unwrap(), value.as_str().unwrap());
        if let Some(label) = prefix.parse_key(key) {
            topology
                .set_strictly(label, key, value)
                .unwrap_or_else(|e| panic!("{place}: {e}"));
            ours += 1;
        }
    }
    assert!(ours > 20, "{place}: {ours} labels of ours");
    assert_eq!(topology.shape, Some(topology.shape_id()), "{place}");
    assert_eq!(topology.to_labels(&prefix).len(), ours, "{place}");
    // A template in exact MiB is a shape no live node of the current
    // labeler has: the scale-up it advertises never lands on it.
    let memory = topology.numa_memory_mib.unwrap_or_default();
    let published: Vec<u32> = memory
        .iter()
        .map(|&mib| published_numa_memory_mib(mib))
        .collect();
    assert_eq!(
        memory, published,
        "{place}: numa-memory-mib as the labeler publishes it"
    );
}

#[test]
fn cluster_autoscaler_node_group_labels_are_a_shape() {
    let config = &documents("cluster-autoscaler-asg-tags.yaml")[0];
    for group in config["managedNodeGroups"].as_sequence().unwrap() {
        assert_eq!(group["propagateASGTags"], Value::Bool(true));
        check(&group["labels"], "eksctl node group");
    }
}

#[test]
fn karpenter_node_pool_labels_are_a_shape() {
    let documents = documents("karpenter-nodepool.yaml");
    let pool = documents
        .iter()
        .find(|d| d["kind"].as_str() == Some("NodePool"))
        .unwrap();
    check(&pool["spec"]["template"]["metadata"]["labels"], "NodePool");
}
