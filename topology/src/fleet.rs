//! The fleet: labeled nodes grouped by identical topology, and what the best of
//! them offers a pod.
//!
//! A 5,000-node cluster usually has a handful of machine shapes, so nodes are
//! grouped by their [`NodeTopology`] with a count, and every question is asked
//! once per group. Answers use the very predicates of [`crate::fit`]
//! ([`can_host`], [`can_admit`]), so the fit check and the node affinity agree
//! by construction.

use crate::fit::{can_admit, can_host, Alignment, GpuDemand};
use crate::hashing::FirstEqual;
use crate::labels::{LabelError, NodeTopology, TopologyManagerPolicy};

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

/// The most GPUs any node gives one pod, and how many nodes give that many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offer {
    pub gpus: u32,
    pub nodes: u32,
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

    /// Nodes that can admit a pod with `demand` and place it at `alignment`
    /// (what `affinity: required` selects).
    pub fn hosting(&self, demand: impl Into<GpuDemand>, alignment: Alignment) -> u32 {
        let demand = demand.into();
        self.count(|t| can_host(t, demand, alignment))
    }

    /// Nodes whose kubelet can admit a pod with `demand` (what
    /// `affinity: preferred` requires).
    pub fn admitting(&self, demand: impl Into<GpuDemand>) -> u32 {
        let demand = demand.into();
        self.count(|t| can_admit(t, demand))
    }

    /// Under `container` scope: the largest unit (GPUs in one container) that
    /// a node holding `total` GPUs can place, as `fits` judges a demand.
    pub fn largest_unit(
        &self,
        total: u32,
        fits: impl Fn(&NodeTopology, GpuDemand) -> bool,
    ) -> Offer {
        self.largest(|t, n| fits(t, GpuDemand::new(total, n)))
    }

    /// The most GPUs any node has, whatever its Topology Manager admits.
    pub fn largest_node(&self) -> Offer {
        self.largest(|t, n| t.gpus.is_some_and(|have| have >= n))
    }

    /// The largest pod (all its GPUs aligned as one unit) any node can host
    /// at `alignment`.
    pub fn largest_hosted(&self, alignment: Alignment) -> Offer {
        self.largest(|t, n| can_host(t, n, alignment))
    }

    /// The largest pod any node's kubelet admits.
    pub fn largest_admitted(&self) -> Offer {
        self.largest(can_admit)
    }

    /// Nodes whose `single-numa-node` Topology Manager admits fewer GPUs than
    /// they have (their largest NUMA node is smaller than the node).
    pub fn limited_by_single_numa_node(&self) -> u32 {
        self.count(|t| {
            t.topology_manager_policy == Some(TopologyManagerPolicy::SingleNumaNode)
                && largest_fit(t, can_admit) < t.gpus.unwrap_or(0)
        })
    }

    fn largest(&self, fits: impl Fn(&NodeTopology, u32) -> bool) -> Offer {
        self.groups.iter().fold(Offer::default(), |best, group| {
            let gpus = largest_fit(&group.topology, &fits);
            match gpus.cmp(&best.gpus) {
                std::cmp::Ordering::Greater => Offer {
                    gpus,
                    nodes: group.nodes,
                },
                std::cmp::Ordering::Equal => Offer {
                    gpus,
                    nodes: best.nodes.saturating_add(group.nodes),
                },
                std::cmp::Ordering::Less => best,
            }
        })
    }
}

/// The largest `n` for which `fits(node, n)` holds. Every fit requires
/// `gpus >= n` and only "at least n" requirements depend on `n`, so `fits` is
/// monotone and bounded by the node's GPU count: a binary search finds it.
fn largest_fit(node: &NodeTopology, fits: impl Fn(&NodeTopology, u32) -> bool) -> u32 {
    // Invariant: fits(node, low) (true for 0) and the answer is at most high.
    let (mut low, mut high) = (0_u32, node.gpus.unwrap_or(0));
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if fits(node, mid) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    low
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    /// HGX-style nodes: 8 GPUs, 4 per NUMA node, all NVLinked.
    const HGX_SNN: &str =
        "gpus=8 gpus-per-numa-max=4 nvlink-group-max=8 topology-manager-policy=single-numa-node";
    const HGX_BEST_EFFORT: &str =
        "gpus=8 gpus-per-numa-max=4 nvlink-group-max=8 topology-manager-policy=best-effort";
    /// 8 PCIe GPUs in NVLink groups of 4 (cube mesh).
    const CUBE_MESH: &str = "gpus=8 gpus-per-numa-max=4 nvlink-group-max=4";
    const FOUR_GPUS_SNN: &str =
        "gpus=4 gpus-per-numa-max=4 nvlink-group-max=4 topology-manager-policy=single-numa-node";
    const FOUR_GPUS_TWO_NUMA: &str =
        "gpus=4 gpus-per-numa-max=2 nvlink-group-max=4 topology-manager-policy=best-effort";
    const SMALL: &str = "gpus=2 gpus-per-numa-max=2 nvlink-group-max=2";
    const EIGHT_ON_TWO_NUMA: &str = "gpus=8 gpus-per-numa-max=2 nvlink-group-max=8";
    const HUGE: &str = "gpus=4294967295 gpus-per-numa-max=4294967295 nvlink-group-max=1";
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

    fn fleet(groups: &[(&str, u32)]) -> Fleet {
        let mut fleet = Fleet::new();
        for (labels, nodes) in groups {
            fleet.add_nodes(node(labels), *nodes);
        }
        fleet
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

    /// (fleet, alignment, largest hosted, largest admitted)
    #[rstest]
    #[case::empty(fleet(&[]), Alignment::Numa, Offer::default(), Offer::default())]
    #[case::dgx_best_effort(fleet(&[(HGX_BEST_EFFORT, 12)]), Alignment::Numa,
        Offer { gpus: 4, nodes: 12 }, Offer { gpus: 8, nodes: 12 })]
    #[case::dgx_single_numa_node(fleet(&[(HGX_SNN, 12)]), Alignment::Nvlink,
        Offer { gpus: 4, nodes: 12 }, Offer { gpus: 4, nodes: 12 })]
    #[case::mixed_fleet(fleet(&[(HGX_SNN, 12), (HGX_BEST_EFFORT, 3), (SMALL, 40)]),
        Alignment::Nvlink, Offer { gpus: 8, nodes: 3 }, Offer { gpus: 8, nodes: 3 })]
    #[case::equal_offers_add_up(fleet(&[(FOUR_GPUS_SNN, 5), (FOUR_GPUS_TWO_NUMA, 7)]), Alignment::Node,
        Offer { gpus: 4, nodes: 12 }, Offer { gpus: 4, nodes: 12 })]
    #[case::pcie_cube_mesh(fleet(&[(CUBE_MESH, 2)]), Alignment::Nvlink,
        Offer { gpus: 4, nodes: 2 }, Offer { gpus: 8, nodes: 2 })]
    #[case::huge_label_values(fleet(&[(HUGE, 1)]), Alignment::Numa,
        Offer { gpus: u32::MAX, nodes: 1 }, Offer { gpus: u32::MAX, nodes: 1 })]
    #[case::missing_gpu_label(fleet(&[(NO_GPU_LABEL, 9)]),
        Alignment::Numa, Offer { gpus: 0, nodes: 9 }, Offer { gpus: 0, nodes: 9 })]
    fn best_offers(
        #[case] fleet: Fleet,
        #[case] alignment: Alignment,
        #[case] hosted: Offer,
        #[case] admitted: Offer,
    ) {
        assert_eq!(fleet.largest_hosted(alignment), hosted);
        assert_eq!(fleet.largest_admitted(), admitted);
        // The offers agree with the per-node predicates they summarise.
        if hosted.gpus > 0 {
            assert_eq!(fleet.hosting(hosted.gpus, alignment), hosted.nodes);
            if let Some(more) = hosted.gpus.checked_add(1) {
                assert_eq!(fleet.hosting(more, alignment), 0);
            }
        }
        if admitted.gpus > 0 {
            assert_eq!(fleet.admitting(admitted.gpus), admitted.nodes);
        }
    }

    /// (fleet, n, alignment, nodes hosting, nodes admitting)
    #[rstest]
    #[case::numa_fits_everywhere(fleet(&[(HGX_SNN, 10), (HGX_BEST_EFFORT, 2)]), 4, Alignment::Numa, 12, 12)]
    #[case::eight_only_on_best_effort(fleet(&[(HGX_SNN, 10), (HGX_BEST_EFFORT, 2)]), 8, Alignment::Nvlink, 2, 2)]
    #[case::eight_never_numa_aligned(fleet(&[(HGX_SNN, 10), (HGX_BEST_EFFORT, 2)]), 8, Alignment::Numa, 0, 2)]
    #[case::too_many_for_any_node(fleet(&[(HGX_BEST_EFFORT, 2)]), 16, Alignment::Node, 0, 0)]
    fn nodes_that_fit(
        #[case] fleet: Fleet,
        #[case] n: u32,
        #[case] alignment: Alignment,
        #[case] hosting: u32,
        #[case] admitting: u32,
    ) {
        assert_eq!(fleet.hosting(n, alignment), hosting);
        assert_eq!(fleet.admitting(n), admitting);
    }

    #[rstest]
    #[case::single_numa_node_smaller_than_node(fleet(&[(HGX_SNN, 10), (HGX_BEST_EFFORT, 2)]), 10)]
    #[case::single_numa_node_holding_every_gpu(fleet(&[(FOUR_GPUS_SNN, 3)]), 0)]
    #[case::no_single_numa_node(fleet(&[(EIGHT_ON_TWO_NUMA, 3)]), 0)]
    fn single_numa_node_limits(#[case] fleet: Fleet, #[case] limited: u32) {
        assert_eq!(fleet.limited_by_single_numa_node(), limited);
    }
}
