//! Before and after, shape by shape: which node shapes a change turns from
//! taking an object's pod to refusing it, or back, and how many nodes that
//! is. Pure: two records of the policy and the change in, data out.

use crate::what_if::change::FleetChange;
use gpu_topology::{LabelPrefix, NodeTopology, ShapeId};
use gpu_topology_policy::decide::model::Answer;
use gpu_topology_policy::decide::record::{PodRecord, ShapeRecord};

/// One node shape before the change and what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeChange {
    pub before_shape: Option<ShapeId>,
    /// The shape its nodes have after the change (the same when unchanged).
    pub after_shape: Option<ShapeId>,
    pub nodes: u32,
    /// The change applies to these nodes.
    pub changed: bool,
    pub before: Side,
    /// `None` when the after-fleet has no such shape (the change made the
    /// policy read the cluster differently, e.g. a summary turned stale).
    pub after: Option<Side>,
}

/// The kubelet's answer on a shape and whether it takes the pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    pub answer: Answer,
    pub takes: bool,
    pub why: Option<String>,
}

impl Side {
    fn of(shape: &ShapeRecord) -> Self {
        Side {
            answer: shape.answer.clone(),
            takes: shape.takes,
            why: shape.why.clone(),
        }
    }
}

impl ShapeChange {
    /// The verdict changed: it took the pod and no longer does, or the
    /// reverse, or the answer itself differs.
    pub fn differs(&self) -> bool {
        match &self.after {
            None => true,
            Some(after) => after.takes != self.before.takes || after.answer != self.before.answer,
        }
    }
}

/// Each shape of `before` matched with the shape its nodes have in
/// `after`: the change applied to its facts, as the changed cluster
/// relabeled them.
pub fn compare(
    before: &PodRecord,
    after: &PodRecord,
    change: &FleetChange,
    prefix: &LabelPrefix,
) -> Vec<ShapeChange> {
    before
        .shapes
        .iter()
        .map(|shape| {
            let moved = change.apply(&shape.topology, prefix);
            let target: &NodeTopology = moved.as_ref().unwrap_or(&shape.topology);
            let found = after.shapes.iter().find(|s| s.topology == *target);
            ShapeChange {
                before_shape: shape.topology.shape,
                after_shape: target.shape,
                nodes: shape.nodes,
                changed: moved.is_some(),
                before: Side::of(shape),
                after: found.map(Side::of),
            }
        })
        .collect()
}
