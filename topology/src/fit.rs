//! Fit arithmetic: which nodes can host a pod's GPUs ([`GpuDemand`]), and how.
//!
//! Two questions, each answered as node-selector terms (see [`crate::selector`]):
//! - can the kubelet *admit* the pod at all? It needs `gpus >= total`, and on a
//!   node whose Topology Manager runs `single-numa-node` it also needs
//!   `gpus-per-numa-max >= aligned`, or the pod fails with
//!   `TopologyAffinityError`;
//! - can the node *align* the pod's GPUs (`aligned` of them on one NUMA node or
//!   in one NVLink group, or `total` on one node)?

use crate::labels::{LabelKey, NodeTopology, TopologyManagerPolicy};
use crate::selector::{terms_match, Requirement, Term};
use std::fmt;
use std::str::FromStr;

/// The GPUs a pod needs on one node (`total`: the scheduler places the whole
/// pod), and the most of them the kubelet's Topology Manager aligns as one
/// unit (`aligned`: the whole pod under `pod` scope, the largest container
/// under `container` scope). A plain count is a pod-scope demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GpuDemand {
    pub total: u32,
    pub aligned: u32,
}

impl GpuDemand {
    /// `total` GPUs in units of at most `aligned` (never more than `total`).
    pub fn new(total: u32, aligned: u32) -> Self {
        Self {
            total,
            aligned: aligned.min(total),
        }
    }
}

impl From<u32> for GpuDemand {
    /// All `n` GPUs aligned as one unit (`pod` scope).
    fn from(n: u32) -> Self {
        Self {
            total: n,
            aligned: n,
        }
    }
}

/// How tightly a pod's GPUs must sit together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Alignment {
    /// All GPUs on one NUMA node (`gpus-per-numa-max >= n`).
    #[default]
    Numa,
    /// All GPUs in one NVLink/NVSwitch/XGMI clique (`nvlink-group-max >= n`).
    Nvlink,
    /// Enough GPUs on the node (`gpus >= n`).
    Node,
}

impl Alignment {
    pub const ALL: [Alignment; 3] = [Alignment::Numa, Alignment::Nvlink, Alignment::Node];

    pub const fn as_str(self) -> &'static str {
        match self {
            Alignment::Numa => "numa",
            Alignment::Nvlink => "nvlink",
            Alignment::Node => "node",
        }
    }

    /// The label that states how many GPUs a node offers at this alignment.
    pub const fn capacity_key(self) -> LabelKey {
        match self {
            Alignment::Numa => LabelKey::GpusPerNumaMax,
            Alignment::Nvlink => LabelKey::NvlinkGroupMax,
            Alignment::Node => LabelKey::Gpus,
        }
    }

    /// GPUs `node` offers at this alignment, when its labels say.
    pub fn capacity(self, node: &NodeTopology) -> Option<u32> {
        node.count(self.capacity_key())
    }

    /// Words for messages, e.g. "NUMA-aligned".
    pub const fn describe(self) -> &'static str {
        match self {
            Alignment::Numa => "NUMA-aligned",
            Alignment::Nvlink => "NVLink-aligned",
            Alignment::Node => "on one node",
        }
    }
}

impl FromStr for Alignment {
    type Err = ();
    fn from_str(value: &str) -> Result<Self, ()> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == value)
            .ok_or(())
    }
}

impl fmt::Display for Alignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Terms (ORed) selecting nodes whose kubelet can admit a pod with `demand`
/// (one side of [`required_terms`]). Empty when it needs no GPU: a pod
/// without GPUs needs no GPU node.
fn admit_terms(demand: impl Into<GpuDemand>) -> Vec<Term> {
    let demand = demand.into();
    if demand.total == 0 {
        return Vec::new();
    }
    let enough_gpus = vec![Requirement::AtLeast {
        key: LabelKey::Gpus,
        count: demand.total,
    }];
    conjoin(&[enough_gpus], &not_refusing_terms(demand))
}

/// Terms (ORed) leaving out only the nodes whose count labels say their
/// kubelet refuses a pod with `demand`: a `single-numa-node` Topology
/// Manager with fewer than the aligned unit's GPUs on its largest NUMA
/// node. Nodes without our labels match (`NotIn` holds on an absent
/// label), so unlabeled nodes and autoscaler templates stay eligible; too
/// few GPUs on a node are left to the scheduler's own resource fit.
/// Empty when it needs no GPU.
pub fn not_refusing_terms(demand: impl Into<GpuDemand>) -> Vec<Term> {
    let demand = demand.into();
    if demand.total == 0 {
        return Vec::new();
    }
    vec![
        vec![Requirement::NotIn {
            key: LabelKey::TopologyManagerPolicy,
            values: vec![TopologyManagerPolicy::SingleNumaNode.as_str().into()],
        }],
        vec![Requirement::AtLeast {
            key: LabelKey::GpusPerNumaMax,
            count: demand.aligned,
        }],
    ]
}

/// The term selecting nodes that can place `demand` at `alignment`: its
/// aligned unit on one NUMA node or NVLink group, or its total on the node.
/// Empty when it needs no GPU.
pub fn aligned_terms(demand: impl Into<GpuDemand>, alignment: Alignment) -> Vec<Term> {
    let demand = demand.into();
    if demand.total == 0 {
        return Vec::new();
    }
    let count = match alignment {
        Alignment::Node => demand.total,
        Alignment::Numa | Alignment::Nvlink => demand.aligned,
    };
    vec![vec![Requirement::AtLeast {
        key: alignment.capacity_key(),
        count,
    }]]
}

/// Terms (ORed) selecting nodes that can both admit a pod with `demand` and
/// place it at `alignment`: the hard requirement of `affinity: required`.
/// Empty when it needs no GPU.
pub fn required_terms(demand: impl Into<GpuDemand>, alignment: Alignment) -> Vec<Term> {
    let demand = demand.into();
    conjoin(&aligned_terms(demand, alignment), &admit_terms(demand))
}

/// Can `node` admit a pod with `demand` and place it at `alignment`?
pub fn can_host(node: &NodeTopology, demand: impl Into<GpuDemand>, alignment: Alignment) -> bool {
    let demand = demand.into();
    demand.total == 0 || terms_match(&required_terms(demand, alignment), node)
}

/// The AND of two ORs of terms, as an OR of terms: every pair of terms joined,
/// duplicates within a term dropped, and terms that merely add requirements to
/// another term left out (they select a subset of it). An empty side is "no
/// requirement", as [`aligned_terms`] returns for 0 GPUs.
pub fn conjoin(left: &[Term], right: &[Term]) -> Vec<Term> {
    if left.is_empty() {
        return right.to_vec();
    }
    if right.is_empty() {
        return left.to_vec();
    }
    let mut joined: Vec<Term> = Vec::new();
    for a in left {
        for b in right {
            let mut term = a.clone();
            term.extend(b.iter().filter(|r| !a.contains(r)).cloned());
            joined.push(term);
        }
    }
    let implies = |wide: &Term, narrow: &Term| narrow.iter().all(|r| wide.contains(r));
    let mut kept: Vec<Term> = Vec::new();
    for (index, term) in joined.iter().enumerate() {
        // Redundant when another term asks for less (the first of equals stays).
        let redundant = joined.iter().enumerate().any(|(other_index, other)| {
            other_index != index
                && implies(term, other)
                && (!implies(other, term) || other_index < index)
        });
        if !redundant {
            kept.push(term.clone());
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn node(
        gpus: u32,
        per_numa: u32,
        nvlink: u32,
        policy: Option<TopologyManagerPolicy>,
    ) -> NodeTopology {
        NodeTopology {
            gpus: Some(gpus),
            gpus_per_numa_max: Some(per_numa),
            nvlink_group_max: Some(nvlink),
            topology_manager_policy: policy,
            ..NodeTopology::default()
        }
    }

    /// Does `node` match [`admit_terms`] (no GPUs: any node)?
    fn admits(node: &NodeTopology, demand: impl Into<GpuDemand>) -> bool {
        let demand = demand.into();
        demand.total == 0 || terms_match(&admit_terms(demand), node)
    }

    /// Does `node` match [`aligned_terms`] (no GPUs: any node)?
    fn aligns(node: &NodeTopology, n: u32, alignment: Alignment) -> bool {
        n == 0 || terms_match(&aligned_terms(n, alignment), node)
    }

    const SNN: Option<TopologyManagerPolicy> = Some(TopologyManagerPolicy::SingleNumaNode);
    const BEST_EFFORT: Option<TopologyManagerPolicy> = Some(TopologyManagerPolicy::BestEffort);

    #[rstest]
    #[case::best_effort_spans_numa_nodes(node(8, 4, 8, BEST_EFFORT), 8, true)]
    #[case::unknown_policy_spans_numa_nodes(node(8, 4, 8, None), 8, true)]
    #[case::single_numa_node_too_small(node(8, 4, 8, SNN), 8, false)]
    #[case::single_numa_node_fits(node(8, 4, 8, SNN), 4, true)]
    #[case::not_enough_gpus(node(4, 4, 4, BEST_EFFORT), 8, false)]
    #[case::unlabeled_node(NodeTopology::default(), 1, false)]
    #[case::no_gpus_needed(NodeTopology::default(), 0, true)]
    fn admission(#[case] node: NodeTopology, #[case] n: u32, #[case] expected: bool) {
        assert_eq!(admits(&node, n), expected);
    }

    #[rstest]
    #[case::numa_fits(node(8, 4, 8, None), 4, Alignment::Numa, true)]
    #[case::numa_too_small(node(8, 2, 8, None), 4, Alignment::Numa, false)]
    #[case::nvlink_fits(node(8, 2, 8, None), 8, Alignment::Nvlink, true)]
    #[case::nvlink_cube_mesh(node(8, 4, 4, None), 8, Alignment::Nvlink, false)]
    #[case::node_fits(node(8, 1, 1, None), 8, Alignment::Node, true)]
    #[case::node_too_small(node(4, 4, 4, None), 8, Alignment::Node, false)]
    fn alignment_capacity(
        #[case] node: NodeTopology,
        #[case] n: u32,
        #[case] alignment: Alignment,
        #[case] expected: bool,
    ) {
        assert_eq!(aligns(&node, n, alignment), expected);
    }

    #[test]
    fn alignment_names_round_trip() {
        for alignment in Alignment::ALL {
            assert_eq!(alignment.as_str().parse::<Alignment>(), Ok(alignment));
        }
        assert!("socket".parse::<Alignment>().is_err());
    }

    fn at_least(key: LabelKey, count: u32) -> Requirement {
        Requirement::AtLeast { key, count }
    }

    #[test]
    fn required_numa_terms_collapse_to_one() {
        assert_eq!(
            required_terms(4, Alignment::Numa),
            vec![vec![
                at_least(LabelKey::GpusPerNumaMax, 4),
                at_least(LabelKey::Gpus, 4)
            ]]
        );
    }

    #[test]
    fn required_nvlink_terms_keep_the_single_numa_node_guard() {
        let terms = required_terms(8, Alignment::Nvlink);
        assert_eq!(terms.len(), 2);
        for term in &terms {
            assert!(term.contains(&at_least(LabelKey::NvlinkGroupMax, 8)));
            assert!(term.contains(&at_least(LabelKey::Gpus, 8)));
        }
    }

    #[rstest]
    #[case::numa_fits(node(8, 4, 8, SNN), 4, Alignment::Numa, true)]
    #[case::numa_too_small(node(8, 2, 8, BEST_EFFORT), 4, Alignment::Numa, false)]
    #[case::nvlink_on_best_effort(node(8, 4, 8, BEST_EFFORT), 8, Alignment::Nvlink, true)]
    #[case::nvlink_but_single_numa_node_refuses(node(8, 4, 8, SNN), 8, Alignment::Nvlink, false)]
    #[case::node_alignment_is_admission(node(8, 4, 8, None), 8, Alignment::Node, true)]
    #[case::nothing_needed(NodeTopology::default(), 0, Alignment::Numa, true)]
    fn hosting(
        #[case] node: NodeTopology,
        #[case] n: u32,
        #[case] alignment: Alignment,
        #[case] expected: bool,
    ) {
        assert_eq!(can_host(&node, n, alignment), expected);
        // Hosting implies both admission and alignment.
        if expected {
            assert!(admits(&node, n) && aligns(&node, n, alignment));
        }
    }

    /// `container` scope: the node holds the pod's total, each container is
    /// aligned on its own.
    #[rstest]
    #[case::two_containers_of_four_on_hgx(
        node(8, 4, 8, SNN),
        GpuDemand::new(8, 4),
        Alignment::Numa,
        true
    )]
    #[case::total_above_the_node(
        node(8, 4, 8, None),
        GpuDemand::new(12, 6),
        Alignment::Nvlink,
        false
    )]
    #[case::container_above_the_numa_node(
        node(8, 4, 8, None),
        GpuDemand::new(8, 6),
        Alignment::Numa,
        false
    )]
    #[case::container_above_snn_numa_node(
        node(8, 4, 8, SNN),
        GpuDemand::new(6, 6),
        Alignment::Node,
        false
    )]
    #[case::node_alignment_counts_the_total(
        node(8, 2, 2, None),
        GpuDemand::new(8, 2),
        Alignment::Node,
        true
    )]
    fn per_container_demand(
        #[case] node: NodeTopology,
        #[case] demand: GpuDemand,
        #[case] alignment: Alignment,
        #[case] expected: bool,
    ) {
        assert_eq!(can_host(&node, demand, alignment), expected);
    }

    #[test]
    fn per_container_terms_ask_for_the_total_on_the_node() {
        assert_eq!(
            required_terms(GpuDemand::new(12, 6), Alignment::Numa),
            vec![vec![
                at_least(LabelKey::GpusPerNumaMax, 6),
                at_least(LabelKey::Gpus, 12)
            ]]
        );
        assert_eq!(GpuDemand::new(2, 6), GpuDemand::from(2));
    }

    /// The labels the fit reads are exactly those the label contract keeps
    /// strict ([`LabelKey::decides_fit`]).
    #[test]
    fn every_label_the_terms_use_decides_fit() {
        let demand = GpuDemand::new(8, 4);
        let mut used: Vec<LabelKey> = Alignment::ALL
            .into_iter()
            .flat_map(|alignment| required_terms(demand, alignment))
            .chain(admit_terms(demand))
            .flatten()
            .map(|requirement| requirement.label_key())
            .collect();
        used.sort();
        used.dedup();
        let mut deciding: Vec<LabelKey> = LabelKey::ALL
            .into_iter()
            .filter(|key| key.decides_fit())
            .collect();
        deciding.sort();
        assert_eq!(used, deciding);
    }

    /// (node, admitted by the count labels, left eligible by the fallback
    /// terms): the fallback never asks for labels a node lacks.
    #[rstest]
    #[case::unlabeled(NodeTopology::default(), false, true)]
    #[case::best_effort_too_few_gpus(node(4, 4, 4, BEST_EFFORT), false, true)]
    #[case::single_numa_node_too_small(node(8, 4, 8, SNN), false, false)]
    #[case::single_numa_node_fits(node(8, 8, 8, SNN), true, true)]
    fn fallback_terms_keep_unlabeled_nodes(
        #[case] node: NodeTopology,
        #[case] admitted: bool,
        #[case] eligible: bool,
    ) {
        let demand = GpuDemand::from(8);
        assert_eq!(admits(&node, demand), admitted);
        assert_eq!(terms_match(&not_refusing_terms(demand), &node), eligible);
        assert!(not_refusing_terms(0).is_empty());
    }

    #[test]
    fn conjoin_with_an_empty_side_is_the_other_side() {
        let terms = admit_terms(2);
        assert_eq!(conjoin(&[], &terms), terms);
        assert_eq!(conjoin(&terms, &[]), terms);
    }
}
