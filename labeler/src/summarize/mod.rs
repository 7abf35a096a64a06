//! `gpu-topology-labeler summarize`: the labeled Nodes grouped by identical
//! topology, published as one small ConfigMap (the fleet summary) that the
//! policy reads with a single cached call instead of listing every Node.
//!
//! This module is the pure core: it turns `(node name, labels)` pairs into a
//! [`FleetSummary`] exactly as the policy reads a Node list (labels parsed
//! through the label contract, nodes without `<prefix>/gpus` left out,
//! unparsable nodes counted as malformed). The Kubernetes I/O (paged listing,
//! server-side apply, retries, the loop) lives in [`kubernetes`].

pub mod kubernetes;

use gpu_topology::{
    parse_heartbeat, Fleet, FleetSummary, KubeletVersion, LabelError, LabelPrefix, NodeRead,
    NodeTopology, OldestHeartbeats,
};

/// How many malformed nodes a pass keeps (and logs) by name; the rest are counted.
pub const REPORTED_PROBLEMS: usize = 5;

/// A node whose labels under the prefix do not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedNode {
    pub node: String,
    pub error: LabelError,
}

/// A built summary and what was left out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarized {
    pub summary: FleetSummary,
    /// Nodes read, whether grouped, skipped or malformed.
    pub nodes: u32,
    /// Nodes left out because they publish no `<prefix>/gpus` (the listing's
    /// label selector normally keeps them away).
    pub skipped: u32,
    /// The first [`REPORTED_PROBLEMS`] malformed nodes; `summary.malformed`
    /// counts them all.
    pub problems: Vec<MalformedNode>,
}

/// Accumulates nodes one by one (page by page), so a 5,000-node listing is
/// never held in memory at once.
#[derive(Debug, Clone)]
pub struct SummaryBuilder {
    prefix: LabelPrefix,
    fleet: Fleet,
    nodes: u32,
    skipped: u32,
    malformed: u32,
    problems: Vec<MalformedNode>,
    heartbeats: OldestHeartbeats,
}

impl SummaryBuilder {
    pub fn new(prefix: LabelPrefix) -> Self {
        Self {
            prefix,
            fleet: Fleet::new(),
            nodes: 0,
            skipped: 0,
            malformed: 0,
            problems: Vec::new(),
            heartbeats: OldestHeartbeats::default(),
        }
    }

    /// Takes node `node`'s labeler heartbeat (the `<prefix>/published`
    /// annotation, on the Node or on the labeler's NodeFeature), unparsed;
    /// a value that does not parse is no heartbeat.
    pub fn add_heartbeat(&mut self, node: &str, value: &str) {
        if let Ok(at) = parse_heartbeat(value) {
            self.heartbeats.offer(at, node);
        }
    }

    /// Reads one node's labels through the label contract. Labels outside the
    /// prefix are ignored; a node without `<prefix>/gpus` is skipped (as the
    /// policy does); a malformed value makes the node malformed.
    pub fn add<'a, I>(&mut self, node: &str, labels: I)
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        self.add_reported(node, labels, None);
    }

    /// [`Self::add`], with the kubelet version the Node reports
    /// (`status.nodeInfo.kubeletVersion`), taken over its label as the
    /// policy takes it from a Node list
    /// ([`NodeTopology::take_reported_kubelet_version`]).
    pub fn add_reported<'a, I>(
        &mut self,
        node: &str,
        labels: I,
        kubelet_version: Option<KubeletVersion>,
    ) where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        self.nodes = self.nodes.saturating_add(1);
        let mut topology = NodeTopology::from_labels(&self.prefix, labels);
        if let (Ok(topology), Some(version)) = (&mut topology, kubelet_version) {
            topology.take_reported_kubelet_version(version);
        }
        match self.fleet.add_read(topology) {
            Ok(NodeRead::Added) => {}
            Ok(NodeRead::NotGpu) => self.skipped = self.skipped.saturating_add(1),
            Err(error) => {
                self.malformed = self.malformed.saturating_add(1);
                if self.problems.len() < REPORTED_PROBLEMS {
                    self.problems.push(MalformedNode {
                        node: node.to_owned(),
                        error,
                    });
                }
            }
        }
    }

    /// The summary, stamped `generated_at` (Unix seconds).
    pub fn finish(self, generated_at: u64) -> Summarized {
        Summarized {
            summary: FleetSummary {
                fleet: self.fleet,
                malformed: self.malformed,
                generated_at,
                heartbeats: Some(self.heartbeats),
            },
            nodes: self.nodes,
            skipped: self.skipped,
            problems: self.problems,
        }
    }
}

/// Builds the summary of `nodes`, given as `(name, labels)`.
pub fn summarize<'a, N, L>(prefix: &LabelPrefix, nodes: N, generated_at: u64) -> Summarized
where
    N: IntoIterator<Item = (&'a str, L)>,
    L: IntoIterator<Item = (&'a str, &'a str)>,
{
    let mut builder = SummaryBuilder::new(prefix.clone());
    for (name, labels) in nodes {
        builder.add(name, labels);
    }
    builder.finish(generated_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_topology::{Interconnect, NodeGroup, TopologyManagerPolicy};
    use rstest::rstest;
    use std::collections::BTreeMap;

    /// An HGX H100 as the labeler publishes it (8 GPUs, 4 per NUMA node, NVSwitch).
    fn hgx() -> NodeTopology {
        NodeTopology {
            gpus: Some(8),
            gpus_per_numa_max: Some(4),
            numa_nodes: Some(2),
            nvlink_group_max: Some(8),
            pcie_switch_group_max: Some(2),
            cpus_per_numa: Some(104),
            memory_per_numa_gib: Some(1007),
            interconnect: Some(Interconnect::NvSwitch),
            topology_manager_policy: Some(TopologyManagerPolicy::SingleNumaNode),
            ..NodeTopology::default()
        }
    }

    /// Four PCIe L4s on one NUMA node, kubelet defaults unknown.
    fn l4() -> NodeTopology {
        NodeTopology {
            gpus: Some(4),
            gpus_per_numa_max: Some(4),
            numa_nodes: Some(1),
            nvlink_group_max: Some(1),
            interconnect: Some(Interconnect::Pcie),
            ..NodeTopology::default()
        }
    }

    /// A node that the labeler found without GPUs.
    fn cpu_only() -> NodeTopology {
        NodeTopology {
            gpus: Some(0),
            ..NodeTopology::default()
        }
    }

    /// What the labeler writes for `topology`, plus the labels every node carries.
    fn node_labels(topology: &NodeTopology) -> BTreeMap<String, String> {
        let mut labels = topology.to_labels(&LabelPrefix::default());
        labels.insert("kubernetes.io/arch".into(), "amd64".into());
        labels.insert("kubernetes.io/os".into(), "linux".into());
        labels
    }

    /// A label map under the default prefix from `(name, value)` pairs.
    fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (format!("gpu-topology.io/{k}"), (*v).to_owned()))
            .collect()
    }

    fn pairs(labels: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
        labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    fn run(nodes: &[(&str, BTreeMap<String, String>)]) -> Summarized {
        summarize(
            &LabelPrefix::default(),
            nodes.iter().map(|(name, labels)| (*name, pairs(labels))),
            1_764_450_000,
        )
    }

    fn groups(groups: &[(NodeTopology, u32)]) -> Vec<NodeGroup> {
        groups
            .iter()
            .map(|(topology, nodes)| NodeGroup {
                topology: topology.clone(),
                nodes: *nodes,
            })
            .collect()
    }

    /// (nodes, groups in first-seen order, malformed, skipped)
    #[rstest]
    #[case::empty_cluster(vec![], vec![], 0, 0)]
    #[case::identical_nodes_share_a_group(
        vec![("hgx-1", node_labels(&hgx())), ("hgx-2", node_labels(&hgx())), ("hgx-3", node_labels(&hgx()))],
        vec![(hgx(), 3)], 0, 0)]
    #[case::shapes_in_first_seen_order(
        vec![("l4-1", node_labels(&l4())), ("hgx-1", node_labels(&hgx())), ("l4-2", node_labels(&l4()))],
        vec![(l4(), 2), (hgx(), 1)], 0, 0)]
    #[case::gpu_less_labeled_nodes_are_part_of_the_fleet(
        vec![("cpu-1", node_labels(&cpu_only())), ("hgx-1", node_labels(&hgx()))],
        vec![(cpu_only(), 1), (hgx(), 1)], 0, 0)]
    #[case::nodes_without_the_gpus_label_are_skipped(
        vec![("plain", raw(&[("gpus-per-numa-max", "4")])), ("other-prefix", BTreeMap::from([("example.com/gpus".to_owned(), "8".to_owned())])), ("hgx-1", node_labels(&hgx()))],
        vec![(hgx(), 1)], 0, 2)]
    #[case::malformed_values_are_counted_not_grouped(
        vec![("bad-count", raw(&[("gpus", "eight")])), ("bad-policy", raw(&[("gpus", "8"), ("topology-manager-policy", "carrier-pigeon")])), ("hgx-1", node_labels(&hgx()))],
        vec![(hgx(), 1)], 2, 0)]
    // A value the fit does not read, from a newer labeler: the field is unknown, the node counts.
    #[case::newer_informational_values_are_unknown(
        vec![("newer", raw(&[("gpus", "8"), ("interconnect", "nvlink-c2c")]))],
        vec![(NodeTopology { gpus: Some(8), ..NodeTopology::default() }, 1)], 0, 0)]
    #[case::unknown_names_under_the_prefix_are_ignored(
        vec![("newer-labeler", { let mut l = node_labels(&l4()); l.insert("gpu-topology.io/future-label".into(), "x".into()); l })],
        vec![(l4(), 1)], 0, 0)]
    fn builds_the_summary_the_policy_would_read(
        #[case] nodes: Vec<(&str, BTreeMap<String, String>)>,
        #[case] expected: Vec<(NodeTopology, u32)>,
        #[case] malformed: u32,
        #[case] skipped: u32,
    ) {
        let built = run(&nodes);
        assert_eq!(built.summary.fleet.groups(), groups(&expected).as_slice());
        assert_eq!(built.summary.malformed, malformed);
        assert_eq!(built.summary.generated_at, 1_764_450_000);
        assert_eq!(built.skipped, skipped);
        assert_eq!(built.nodes as usize, nodes.len());
        assert_eq!(built.problems.len() as u32, malformed);
    }

    #[test]
    fn malformed_nodes_are_named_with_the_offending_label() {
        let built = run(&[("gpu-7", raw(&[("gpus", "-1")]))]);
        let problem = &built.problems[0];
        assert_eq!(problem.node, "gpu-7");
        let message = problem.error.to_string();
        assert!(
            message.contains("gpu-topology.io/gpus") && message.contains("-1"),
            "{message}"
        );
    }

    #[test]
    fn only_the_first_few_problems_are_kept_but_all_are_counted() {
        let bad = raw(&[("gpus", "many")]);
        let names: Vec<String> = (0..40).map(|i| format!("bad-{i}")).collect();
        let nodes: Vec<(&str, BTreeMap<String, String>)> =
            names.iter().map(|n| (n.as_str(), bad.clone())).collect();
        let built = run(&nodes);
        assert_eq!(built.summary.malformed, 40);
        assert_eq!(built.problems.len(), REPORTED_PROBLEMS);
        assert_eq!(built.problems[0].node, "bad-0");
    }

    #[test]
    fn a_custom_prefix_reads_only_its_own_labels() {
        let prefix = LabelPrefix::new("gpu.example.com").unwrap();
        let ours = hgx().to_labels(&prefix);
        let default_prefix = hgx().to_labels(&LabelPrefix::default());
        let built = summarize(
            &prefix,
            [("ours", pairs(&ours)), ("theirs", pairs(&default_prefix))],
            1,
        );
        assert_eq!(
            built.summary.fleet.groups(),
            groups(&[(hgx(), 1)]).as_slice()
        );
        assert_eq!(built.skipped, 1);
    }

    #[test]
    fn the_summary_round_trips_through_the_configmap_data() {
        let built = run(&[
            ("hgx-1", node_labels(&hgx())),
            ("l4-1", node_labels(&l4())),
            ("hgx-2", node_labels(&hgx())),
            ("bad", raw(&[("gpus", "x")])),
        ]);
        let data = built.summary.to_data();
        let read =
            FleetSummary::from_data(data.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(read, built.summary);
    }
}
