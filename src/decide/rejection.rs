//! Why a GPU pod (or a workload's pod template) is rejected, as data
//! ([`Rejection`]): the stages return it with the figures they decided on,
//! the plan keeps it, and the answer words it here, once
//! ([`Rejection::message`]).
//!
//! The refusals that quote node shapes carry those shapes' words, made
//! once and kept in their verdicts, which the tool's record shows per
//! shape: the closest shapes when none takes the pod
//! ([`super::explain::no_group_takes_it`], with its figures beside), and
//! the pinned node's shape.

use super::adjustment::SearchCapped;
use super::capacity::OverCapacity;
use super::explain::{ShapesRefuse, CANNOT_BE_PLACED};
use super::qos::{Finding, Target};
use crate::request::pod::PinnedBy;
use gpu_topology::LabelPrefix;

/// Why a GPU pod is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The spec cannot be read as the kubelet would, or edited.
    Malformed { problem: String },
    /// `qos.mode: mutate`, and Guaranteed QoS cannot be made: each
    /// problem, in words.
    QosImpossible { problems: Vec<String> },
    /// `qos.mode: validate`, and the pod is not Guaranteed QoS.
    NotGuaranteed {
        /// What is not Guaranteed, per container or the pod.
        violations: Vec<Finding>,
        /// `qos.wholeCpus`: the fix asks for whole CPUs too.
        whole_cpus: bool,
    },
    /// Above the static capacity settings.
    OverStaticCapacity(OverCapacity),
    /// `topology.affinity: required`, and no node publishes (valid) labels.
    NoLabeledNode {
        /// The aligned unit of the demand, in words.
        unit: String,
        /// Some nodes publish labels, none of them valid.
        malformed: bool,
    },
    /// `topology.affinity: required`, and the node the pod is pinned to
    /// does not host it.
    PinnedNode {
        node: String,
        by: PinnedBy,
        problem: PinnedNodeProblem,
    },
    /// No node shape of the view takes the pod: the figures, and the
    /// closest shapes in the words of their verdicts.
    NoShapeTakes(ShapesRefuse),
    /// No shape takes the pod with its defaults, and the search for lower
    /// ones stopped at its cap (under `required`).
    SearchCapped {
        refusal: Box<Rejection>,
        capped: SearchCapped,
    },
}

/// Why the node a pod is pinned to does not host it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinnedNodeProblem {
    /// It publishes no labels.
    Unlabeled,
    /// Its labels do not parse.
    MalformedLabels { problem: String },
    /// It publishes no GPU count.
    NoGpuLabel,
    /// Its kubelet does not host the pod: why, and the fix (its shape's
    /// words).
    DoesNotHost { why: String, fix: String },
}

impl Rejection {
    /// The rejection message, under the label prefix `prefix`.
    pub fn message(&self, prefix: &LabelPrefix) -> String {
        match self {
            Rejection::Malformed { problem } => format!("GPU pod is malformed: {problem}"),
            Rejection::QosImpossible { problems } => format!(
                "GPU pod cannot be made Guaranteed QoS: {}.",
                problems.join("; ")
            ),
            Rejection::NotGuaranteed {
                violations,
                whole_cpus,
            } => not_guaranteed_message(violations, *whole_cpus),
            Rejection::OverStaticCapacity(over) => over.message(),
            Rejection::NoShapeTakes(refuse) => refuse.message(),
            Rejection::NoLabeledNode { unit, malformed } => format!(
                "{CANNOT_BE_PLACED}it needs {unit}, but {} topology.affinity: required selects only nodes whose kubelet is known to host the pod, so it would stay Pending. Deploy the gpu-topology labeler on the GPU nodes, set capacity.unlabeledNodes: allow, or set topology.affinity: preferred.",
                missing_labels(*malformed, prefix)
            ),
            Rejection::PinnedNode { node, by, problem } => {
                let by = pinned_by(*by);
                match problem {
                    PinnedNodeProblem::Unlabeled => format!(
                        "{CANNOT_BE_PLACED}it is pinned to node {node:?} ({by}), which publishes no {prefix} labels, and topology.affinity: required admits only nodes whose kubelet is known to host the pod. Deploy the gpu-topology labeler there, set capacity.unlabeledNodes: allow, or set topology.affinity: preferred."
                    ),
                    PinnedNodeProblem::MalformedLabels { problem } => format!(
                        "{CANNOT_BE_PLACED}it is pinned to node {node:?} ({by}), whose {prefix} labels are malformed ({problem}). Fix the node labeler there."
                    ),
                    PinnedNodeProblem::NoGpuLabel => format!(
                        "{CANNOT_BE_PLACED}it is pinned to node {node:?} ({by}), which publishes no {prefix}/gpus label. Deploy the gpu-topology labeler there."
                    ),
                    PinnedNodeProblem::DoesNotHost { why, fix } => format!(
                        "{CANNOT_BE_PLACED}it is pinned to node {node:?} ({by}), and there {why}. {fix}."
                    ),
                }
            }
            Rejection::SearchCapped { refusal, capped } => {
                format!("{} ({})", refusal.message(prefix), capped.warning())
            }
        }
    }
}

/// Why the fit has no labeled node: `no node publishes ... labels: ...`.
pub(crate) fn missing_labels(malformed: bool, prefix: &LabelPrefix) -> String {
    if malformed {
        format!("no node publishes valid {prefix} labels: is the labeler healthy?")
    } else {
        format!("no node publishes {prefix} labels: is the labeler deployed?")
    }
}

/// How a pod is pinned to its node, in the messages.
pub(crate) fn pinned_by(by: PinnedBy) -> &'static str {
    match by {
        PinnedBy::NodeName => "spec.nodeName",
        PinnedBy::NodeAffinity => {
            "required node affinity on metadata.name, as a DaemonSet's pods are"
        }
    }
}

/// `GPU pod is not Guaranteed QoS: container "a": cpu ..., memory ...; ...`
fn not_guaranteed_message(violations: &[Finding], whole_cpus: bool) -> String {
    let mut by_target: Vec<(&Target, Vec<String>)> = Vec::new();
    for finding in violations {
        let (target, reason) = (&finding.target, finding.reason());
        match by_target.iter_mut().find(|(t, _)| *t == target) {
            Some((_, reasons)) => reasons.push(reason),
            None => by_target.push((target, vec![reason])),
        }
    }
    let listed: Vec<String> = by_target
        .iter()
        .map(|(target, reasons)| format!("{target}: {}", reasons.join(", ")))
        .collect();
    // With pod-level resources, they alone decide QoS.
    let (place, whole) = if by_target.iter().any(|(target, _)| **target == Target::Pod) {
        ("in pod-level spec.resources", ", with whole CPUs")
    } else {
        (
            "in every container",
            ", with whole CPUs in containers that use GPUs",
        )
    };
    format!(
        "GPU pod is not Guaranteed QoS (qos.mode: validate): {}. Set resources.requests equal to resources.limits for cpu and memory {place}{}.",
        listed.join("; "),
        if whole_cpus { whole } else { "" }
    )
}
