//! What the fit check with a view warns about, as data ([`FitWarning`]):
//! [`super::place`] decides which apply and records their figures; the
//! answer words them here, once, with the label prefix of the settings.

use crate::decide::explain::{nodes, unknown_words};
use crate::decide::model::Answer;
use crate::request::pod::PinnedBy;
use gpu_topology::{KubeletVersion, LabelPrefix, ShapeId};

/// How many stale nodes a warning names; it counts the rest.
pub(crate) const STALE_NAMED: usize = 3;

/// One warning of the fit check with a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FitWarning {
    /// Nodes whose labels do not parse were left out of the check.
    MalformedLabels {
        nodes: u32,
        /// The first problem read, as the label contract words it.
        example: Option<String>,
    },
    /// No node publishes (valid) labels: the fit was not checked.
    NoLabels {
        /// Some nodes publish labels, none of them valid.
        malformed: bool,
    },
    /// Nodes of a labeler older than the policy publish no shape label.
    Shapeless { nodes: u32 },
    /// Nodes that share a shape label get different answers.
    SharedShape {
        nodes: u32,
        /// The shape label of the first such group.
        shape: Option<ShapeId>,
        /// The distinct kubelet versions of those nodes, in the view's
        /// order (`None`: not published).
        kubelet_versions: Vec<Option<KubeletVersion>>,
    },
    /// Nodes whose labeler heartbeat is older than
    /// `capacity.staleFactsAfterSeconds`.
    Stale(StaleFacts),
    /// Under `capacity.unlabeledNodes: allow`, the pinned node does not
    /// host the pod, but it is admitted for nodes without labels.
    PinnedNodeRefusesAdmitted {
        /// The refusal `allow` turned into this warning.
        refusal: String,
    },
    /// Under `capacity.unlabeledNodes: allow`, no labeled node takes the
    /// pod, but it is admitted for nodes without labels.
    NoLabeledNodeTakesAdmitted {
        /// The refusal `allow` turned into this warning.
        refusal: String,
    },
    /// The search for lower defaults stopped at its cap and no node takes
    /// the pod with the defaults it had: under `preferred`, it is admitted
    /// without affinity.
    AdmittedWithoutPlacement {
        /// The refusal the cap turned into this warning.
        refusal: String,
    },
    /// The model cannot tell whether some nodes admit the pod.
    Unknown {
        nodes: u32,
        /// The shape label of the first such group.
        shape: Option<ShapeId>,
        /// That group's answer: why it is unknown.
        answer: Answer,
        /// Under `topology.affinity: required` (they are not selected).
        required: bool,
    },
    /// Under `preferred`, the node the pod is pinned to refuses it.
    PinnedNodeRefuses {
        node: String,
        by: PinnedBy,
        /// Why its kubelet refuses, and the fix (the shape's own words).
        why: String,
        fix: String,
    },
}

/// The stale nodes of a [`FitWarning::Stale`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StaleFacts {
    /// The first [`STALE_NAMED`] stale nodes and how old their facts are,
    /// in seconds.
    pub named: Vec<(String, u64)>,
    /// The stale nodes the view names.
    pub count: usize,
    /// Every stale node is named by the view (else there are more).
    pub complete: bool,
    /// They are left out by name (`required`, and `complete`).
    pub required: bool,
    /// `capacity.staleFactsAfterSeconds`.
    pub after_seconds: u64,
}

impl FitWarning {
    /// The warning's words, under the label prefix `prefix`.
    pub(crate) fn words(&self, prefix: &LabelPrefix) -> String {
        match self {
            FitWarning::MalformedLabels { nodes: count, example } => {
                let example = example
                    .as_ref()
                    .map_or_else(String::new, |problem| format!(" (e.g. {problem})"));
                format!(
                    "{} with malformed {prefix} labels left out of the GPU fit check{example}; fix the node labeler there",
                    nodes(*count)
                )
            }
            FitWarning::NoLabels { malformed } => {
                format!("GPU fit not checked: {}", missing_labels(*malformed, prefix))
            }
            FitWarning::Shapeless { nodes: count } => format!(
                "{} publish{} no {prefix}/shape label (a labeler older than this policy): node affinity can neither select nor exclude {}; upgrade the labeler there",
                nodes(*count),
                if *count == 1 { "es" } else { "" },
                if *count == 1 { "it" } else { "them" }
            ),
            FitWarning::SharedShape {
                nodes: count,
                shape,
                kubelet_versions,
            } => {
                let shape = shape.map_or_else(String::new, |s| s.to_string());
                let why = if kubelet_versions.len() > 1 {
                    let versions: Vec<String> = (kubelet_versions.iter())
                        .map(|v| v.map_or_else(|| "unknown".to_owned(), |v| v.to_string()))
                        .collect();
                    format!(
                        "their Nodes report kubelets {}, whose rules differ for this pod",
                        versions.join(", ")
                    )
                } else {
                    "their labels differ beyond what the shape label digests".to_owned()
                };
                format!(
                    "{} of shape {shape} and others sharing a {prefix}/shape label get different answers from their kubelets ({why}): node affinity can neither select nor exclude them; publish {prefix}/kubelet-version with the labeler (its kubernetes sink, or --kubelet-version) or finish the kubelet upgrade",
                    nodes(*count)
                )
            }
            FitWarning::Stale(stale) => stale.words(prefix),
            FitWarning::PinnedNodeRefusesAdmitted { refusal } => {
                format!("{refusal} Admitted: capacity.unlabeledNodes is allow")
            }
            FitWarning::NoLabeledNodeTakesAdmitted { refusal } => format!(
                "no labeled GPU node takes the pod; admitted for nodes without {prefix} labels (capacity.unlabeledNodes: allow): {}",
                refusal.trim_start_matches("GPU pod cannot be placed: ")
            ),
            FitWarning::AdmittedWithoutPlacement { refusal } => format!(
                "GPU pod admitted without a placement: {}",
                refusal.trim_start_matches("GPU pod cannot be placed: ")
            ),
            FitWarning::Unknown {
                nodes: count,
                shape,
                answer,
                required,
            } => unknown_warning(*count, *shape, answer, *required),
            FitWarning::PinnedNodeRefuses { node, by, why, fix } => format!(
                "the pod is pinned to node {node:?} ({}), where {why}. {fix}",
                pinned_by(*by)
            ),
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

impl StaleFacts {
    /// `2 nodes carry facts older than ...`: which, how old, and what the
    /// policy does about them. Under `required` they are treated as
    /// unknown: left out by name, unless more are stale than the view
    /// names, when the labeler is down fleet-wide and they stay eligible (a
    /// labeler outage never blocks pods).
    fn words(&self, prefix: &LabelPrefix) -> String {
        let mut named: Vec<String> = (self.named.iter())
            .map(|(node, age)| format!("{node} {} ago", age_words(*age)))
            .collect();
        if self.count > self.named.len() {
            named.push(format!("{} more", self.count - self.named.len()));
        }
        let one = self.count == 1 && self.complete;
        let (they, carry) = if one {
            ("it", "carries")
        } else {
            ("they", "carry")
        };
        let which = match self.complete {
            true => nodes(self.count as u32),
            false => format!("at least {}", nodes(self.count as u32)),
        };
        let consequence = match (self.complete, self.required) {
            (true, true) => format!(
                "{they} {} not selected (topology.affinity: required): matchFields metadata.name NotIn",
                if one { "is" } else { "are" }
            ),
            (true, false) => format!("{they} {} eligible with the facts last published", if one { "stays" } else { "stay" }),
            (false, _) => "too many to keep pods off by name, so they stay eligible with the facts last published: is the labeler deployed?".to_owned(),
        };
        format!(
            "{which} {carry} facts older than capacity.staleFactsAfterSeconds ({} s): the labeler last confirmed them ({prefix}/published) on {}; is the labeler running there? {consequence}",
            self.after_seconds,
            named.join(", ")
        )
    }
}

/// `3 h 12 min`, `40 min`, `50 s`.
fn age_words(seconds: u64) -> String {
    match (seconds / 3600, seconds / 60 % 60) {
        (0, 0) => format!("{seconds} s"),
        (0, minutes) => format!("{minutes} min"),
        (hours, 0) => format!("{hours} h"),
        (hours, minutes) => format!("{hours} h {minutes} min"),
    }
}

/// The groups whose answer is unknown, with why, in one warning.
fn unknown_warning(count: u32, shape: Option<ShapeId>, answer: &Answer, required: bool) -> String {
    let why = match answer {
        Answer::Unknown(unknown) => unknown_words(unknown),
        Answer::Contradictory(error) => format!("the labels contradict themselves: {error}"),
        _ => String::new(),
    };
    let shape = shape.map_or_else(
        || "without a shape label".to_owned(),
        |s| format!("of shape {s}"),
    );
    // One node is `the node ... it`, not `nodes ... they`.
    let (which, consequence) = match (count, required) {
        (1, true) => (
            "the node",
            "it is not selected (topology.affinity: required)",
        ),
        (1, false) => ("the node", "it stays eligible"),
        (_, true) => (
            "nodes",
            "they are not selected (topology.affinity: required)",
        ),
        (_, false) => ("nodes", "they stay eligible"),
    };
    format!(
        "the kubelet model cannot tell whether {} {} the pod ({which} {shape}: {why}); {consequence}",
        nodes(count),
        if count == 1 { "admits" } else { "admit" }
    )
}
