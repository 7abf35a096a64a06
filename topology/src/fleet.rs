//! The fleet: labeled nodes grouped by identical topology.
//!
//! A 5,000-node cluster usually has a handful of machine shapes, so nodes are
//! grouped by their [`NodeTopology`] with a count, and every question is asked
//! once per group.

use crate::hashing::FirstEqual;
use crate::labels::{LabelError, NodeTopology};

/// Nodes that publish the same topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroup {
    pub topology: NodeTopology,
    pub nodes: u32,
}

/// What became of a node read from its labels ([`Fleet::add_read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeRead {
    /// Counted in the fleet.
    Added,
    /// No `gpus` label: not a GPU node, left out.
    NotGpu,
}

/// Labeled nodes grouped by identical topology, in the order first seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fleet {
    groups: Vec<NodeGroup>,
    /// The groups by the hash of their topology: a node finds its group in
    /// constant time, so a fleet of thousands of distinct shapes is read in
    /// time linear in its nodes.
    index: FirstEqual,
}

impl Fleet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one more node with `topology`.
    pub fn add(&mut self, topology: NodeTopology) {
        self.add_nodes(topology, 1);
    }

    /// Counts one node as read from its labels: the rule the policy (reading
    /// the Node list) and the summarizer (writing the fleet summary) share, so
    /// both see the same fleet. A node without `gpus` is not part of the GPU
    /// fleet (a host may not apply the listing's label selector); a malformed
    /// node is left out and its error returned for the caller to count.
    pub fn add_read(
        &mut self,
        node: Result<NodeTopology, LabelError>,
    ) -> Result<NodeRead, LabelError> {
        let topology = node?;
        if topology.gpus.is_none() {
            return Ok(NodeRead::NotGpu);
        }
        self.add(topology);
        Ok(NodeRead::Added)
    }

    /// Counts `nodes` more nodes with `topology`.
    pub fn add_nodes(&mut self, topology: NodeTopology, nodes: u32) {
        let Fleet { groups, index } = self;
        let found = index.find_or_record(&topology, groups.len(), |position| {
            groups.get(position).map(|group| &group.topology)
        });
        match found.and_then(|position| groups.get_mut(position)) {
            Some(group) => group.nodes = group.nodes.saturating_add(nodes),
            None => groups.push(NodeGroup { topology, nodes }),
        }
    }

    pub fn groups(&self) -> &[NodeGroup] {
        &self.groups
    }

    /// Nodes in the fleet.
    pub fn nodes(&self) -> u32 {
        self.count(|_| true)
    }

    pub fn is_empty(&self) -> bool {
        self.nodes() == 0
    }

    /// Nodes whose topology satisfies `predicate`.
    pub fn count(&self, predicate: impl Fn(&NodeTopology) -> bool) -> u32 {
        self.groups
            .iter()
            .filter(|g| predicate(&g.topology))
            .fold(0, |sum, g| sum.saturating_add(g.nodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// HGX-style nodes: 8 GPUs, 4 per NUMA node, all NVLinked.
    const HGX_SNN: &str =
        "gpus=8 gpus-per-numa-max=4 nvlink-group-max=8 topology-manager-policy=single-numa-node";
    const SMALL: &str = "gpus=2 gpus-per-numa-max=2 nvlink-group-max=2";
    const NO_GPU_LABEL: &str = "gpus-per-numa-max=4";

    /// A node from `name=value` labels, read through the label contract.
    fn node(labels: &str) -> NodeTopology {
        let prefix = crate::labels::LabelPrefix::default();
        let full: Vec<(String, &str)> = labels
            .split_whitespace()
            .filter_map(|pair| pair.split_once('='))
            .map(|(name, value)| (format!("{prefix}/{name}"), value))
            .collect();
        NodeTopology::from_labels(&prefix, full.iter().map(|(k, v)| (k.as_str(), *v))).unwrap()
    }

    /// (labels read, what the fleet makes of the node, nodes counted).
    #[rstest]
    #[case::gpu_node(Ok(node(HGX_SNN)), Ok(NodeRead::Added), 1)]
    #[case::no_gpus_label(Ok(node(NO_GPU_LABEL)), Ok(NodeRead::NotGpu), 0)]
    #[case::malformed(
        Err(LabelError::InvalidValue { key: "gpu-topology.io/gpus".into(), value: "x".into(), expected: "a count" }),
        Err(LabelError::InvalidValue { key: "gpu-topology.io/gpus".into(), value: "x".into(), expected: "a count" }),
        0
    )]
    fn reads_nodes_into_the_fleet(
        #[case] read: Result<NodeTopology, LabelError>,
        #[case] expected: Result<NodeRead, LabelError>,
        #[case] counted: u32,
    ) {
        let mut fleet = Fleet::new();
        assert_eq!(fleet.add_read(read), expected);
        assert_eq!(fleet.nodes(), counted);
    }

    #[test]
    fn identical_topologies_share_a_group() {
        let mut fleet = Fleet::new();
        for _ in 0..3 {
            fleet.add(node(HGX_SNN));
        }
        fleet.add(node(SMALL));
        assert_eq!(fleet.groups().len(), 2);
        assert_eq!(fleet.groups()[0].nodes, 3);
        assert_eq!(fleet.nodes(), 4);
        assert!(!fleet.is_empty());
        assert!(Fleet::new().is_empty());
    }
}
