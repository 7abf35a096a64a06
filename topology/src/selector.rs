//! Node-selector requirements over the label contract.
//!
//! The policy renders these into a pod's node affinity, and the cluster-aware
//! fit check evaluates the very same requirements against each node's labels,
//! so "the scheduler could place it" and "the policy says it fits" cannot drift.

use crate::labels::{LabelKey, LabelPrefix, NodeTopology, ValueKind};
use std::borrow::Cow;

/// A label value a requirement lists: a word of the contract (borrowed) or
/// a value read from the cluster, such as a node's shape id (owned).
pub type Value = Cow<'static, str>;

/// One `matchExpressions` entry of a node-selector term.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Requirement {
    /// The integer label is at least `count`; rendered as `Gt count-1`
    /// because node affinity has no `Ge`. A node without the label never matches.
    AtLeast { key: LabelKey, count: u32 },
    /// The label holds one of `values` (never empty: Kubernetes refuses an
    /// empty `In`). A node without the label never matches.
    In { key: LabelKey, values: Vec<Value> },
    /// The label is absent or holds none of `values` (never empty).
    NotIn { key: LabelKey, values: Vec<Value> },
}

/// A node-selector term: every requirement must hold (AND).
pub type Term = Vec<Requirement>;

/// The node-affinity operators this crate renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Gt,
    In,
    NotIn,
}

impl Operator {
    pub const fn as_str(self) -> &'static str {
        match self {
            Operator::Gt => "Gt",
            Operator::In => "In",
            Operator::NotIn => "NotIn",
        }
    }
}

impl Requirement {
    pub fn label_key(&self) -> LabelKey {
        match self {
            Requirement::AtLeast { key, .. }
            | Requirement::In { key, .. }
            | Requirement::NotIn { key, .. } => *key,
        }
    }

    /// The full label key under `prefix`.
    pub fn key(&self, prefix: &LabelPrefix) -> String {
        prefix.key(self.label_key())
    }

    pub fn operator(&self) -> Operator {
        match self {
            Requirement::AtLeast { .. } => Operator::Gt,
            Requirement::In { .. } => Operator::In,
            Requirement::NotIn { .. } => Operator::NotIn,
        }
    }

    /// The `values` list exactly as node affinity spells it.
    pub fn values(&self) -> Vec<String> {
        match self {
            // i64: `AtLeast { count: 0 }` renders as `Gt -1`, which matches any labeled node.
            Requirement::AtLeast { count, .. } => vec![(i64::from(*count) - 1).to_string()],
            Requirement::In { values, .. } | Requirement::NotIn { values, .. } => {
                values.iter().map(|v| v.to_string()).collect()
            }
        }
    }

    /// Evaluates the requirement against a node with Kubernetes' semantics
    /// (`In`: the label is present and listed; `NotIn`: absent or not listed).
    pub fn matches(&self, node: &NodeTopology) -> bool {
        match self {
            Requirement::AtLeast { key, count } => {
                node.count(*key).is_some_and(|value| value >= *count)
            }
            Requirement::In { key, values } => {
                label_text(node, *key).is_some_and(|value| values.iter().any(|v| *v == *value))
            }
            Requirement::NotIn { key, values } => {
                label_text(node, *key).is_none_or(|value| !values.iter().any(|v| *v == *value))
            }
        }
    }
}

/// The node's value of `key` as its label text; words and the shape without
/// building a string when they can be borrowed.
fn label_text(node: &NodeTopology, key: LabelKey) -> Option<Cow<'static, str>> {
    match key.kind() {
        ValueKind::Word => node.word(key).map(Cow::Borrowed),
        _ => node.value(key).map(Cow::Owned),
    }
}

/// True when every requirement of `term` holds on `node`.
pub fn term_matches(term: &[Requirement], node: &NodeTopology) -> bool {
    term.iter().all(|requirement| requirement.matches(node))
}

/// True when any of the ORed `terms` holds on `node`.
pub fn terms_match(terms: &[Term], node: &NodeTopology) -> bool {
    terms.iter().any(|term| term_matches(term, node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::one_gpu(1, "0")]
    #[case::eight_gpus(8, "7")]
    #[case::zero_matches_any_labeled_node(0, "-1")]
    fn at_least_renders_as_gt_one_less(#[case] count: u32, #[case] rendered: &str) {
        let requirement = Requirement::AtLeast {
            key: LabelKey::Gpus,
            count,
        };
        assert_eq!(requirement.operator().as_str(), "Gt");
        assert_eq!(requirement.values(), vec![rendered.to_owned()]);
        assert_eq!(
            requirement.key(&LabelPrefix::default()),
            "gpu-topology.io/gpus"
        );
    }

    #[rstest]
    #[case::more(Some(8), 4, true)]
    #[case::equal(Some(4), 4, true)]
    #[case::fewer(Some(2), 4, false)]
    #[case::absent_never_matches(None, 1, false)]
    fn at_least_matches_like_gt(
        #[case] gpus: Option<u32>,
        #[case] count: u32,
        #[case] expected: bool,
    ) {
        let node = NodeTopology {
            gpus,
            ..NodeTopology::default()
        };
        let requirement = Requirement::AtLeast {
            key: LabelKey::Gpus,
            count,
        };
        assert_eq!(requirement.matches(&node), expected);
    }

    #[rstest]
    #[case::absent_matches(None, true)]
    #[case::listed_value(Some(crate::TopologyManagerPolicy::SingleNumaNode), false)]
    #[case::other_value(Some(crate::TopologyManagerPolicy::BestEffort), true)]
    fn not_in_matches_absent_labels(
        #[case] policy: Option<crate::TopologyManagerPolicy>,
        #[case] expected: bool,
    ) {
        let node = NodeTopology {
            topology_manager_policy: policy,
            ..NodeTopology::default()
        };
        let requirement = Requirement::NotIn {
            key: LabelKey::TopologyManagerPolicy,
            values: vec![Cow::Borrowed("single-numa-node")],
        };
        assert_eq!(requirement.matches(&node), expected);
    }

    /// (node's shape, `In` matches, `NotIn` matches): a node without the
    /// label matches `NotIn` only, as in Kubernetes.
    #[rstest]
    #[case::listed(Some(crate::ShapeId(0xab)), true, false)]
    #[case::other(Some(crate::ShapeId(0xcd)), false, true)]
    #[case::absent(None, false, true)]
    fn shape_in_and_not_in(
        #[case] shape: Option<crate::ShapeId>,
        #[case] in_matches: bool,
        #[case] not_in_matches: bool,
    ) {
        let node = NodeTopology {
            shape,
            ..NodeTopology::default()
        };
        let values = vec![Cow::Owned("00000000000000ab".to_owned())];
        let listed = Requirement::In {
            key: LabelKey::Shape,
            values: values.clone(),
        };
        assert_eq!(listed.matches(&node), in_matches);
        assert_eq!(listed.operator().as_str(), "In");
        assert_eq!(listed.values(), vec!["00000000000000ab".to_owned()]);
        let not_listed = Requirement::NotIn {
            key: LabelKey::Shape,
            values,
        };
        assert_eq!(not_listed.matches(&node), not_in_matches);
    }
}
