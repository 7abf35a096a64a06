//! What the fit check with a view warns about, as data ([`FitWarning`]):
//! [`super::place`] decides which apply and records their figures; the
//! answer words them here, once, with the label prefix of the settings.

use super::SUMMARY_MISSING_COST;
use crate::cluster::MAX_SHAPES;
use crate::decide::explain::CANNOT_BE_PLACED;
use crate::decide::explain::{nodes, unknown_words};
use crate::decide::model::Answer;
use crate::decide::rejection::{missing_labels, pinned_by, Rejection};
use crate::decide::MAX_CONTAINERS;
use crate::request::pod::PinnedBy;
use gpu_topology::{KubeletVersion, LabelPrefix, ShapeId};

/// How many stale nodes a warning names; it counts the rest.
pub(crate) const STALE_NAMED: usize = 3;

/// One warning of the fit check: how the cluster was read, why the fit
/// was not checked, or what the check with a view found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FitWarning {
    /// The fleet summary was not used (`problem`); `listed`: the Node list
    /// was read instead.
    SummaryPassedOver { problem: String, listed: bool },
    /// The fleet has more distinct shapes than one admission decides on.
    TooManyShapes { shapes: usize },
    /// The pod has more containers than the kubelet model follows.
    TooManyContainers { containers: usize },
    /// `capacity.source: summary`, and the summary cannot be used.
    SummaryUnavailable { problem: String },
    /// The Node list cannot be read.
    NodeListUnavailable {
        problem: String,
        /// The static capacity settings were checked instead
        /// (`capacity.source: auto`).
        checked_statically: bool,
        /// `capacity.source` never falls back on the static limits.
        source_ignores_limits: bool,
    },
    /// Under `preferred`, a pinned pod gets no affinity: the scheduler does
    /// not choose its node.
    PinnedWithoutAffinity {
        /// The node it is pinned to by required node affinity; `None`
        /// when by `spec.nodeName`.
        by_affinity_to: Option<String>,
    },
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
        refusal: Rejection,
    },
    /// Under `capacity.unlabeledNodes: allow`, no labeled node takes the
    /// pod, but it is admitted for nodes without labels.
    NoLabeledNodeTakesAdmitted {
        /// The refusal `allow` turned into this warning.
        refusal: Rejection,
    },
    /// The search for lower defaults stopped at its cap and no node takes
    /// the pod with the defaults it had: under `preferred`, it is admitted
    /// without affinity.
    AdmittedWithoutPlacement {
        /// The refusal the cap turned into this warning.
        refusal: Rejection,
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
            FitWarning::SummaryPassedOver {
                problem,
                listed: true,
            } => format!(
                "GPU fit read from the Node list: {}; {SUMMARY_MISSING_COST}",
                clause(problem)
            ),
            FitWarning::SummaryPassedOver {
                problem,
                listed: false,
            } => format!(
                "GPU fit not read from the fleet summary: {}",
                clause(problem)
            ),
            FitWarning::TooManyShapes { shapes } => format!(
                "GPU fit not checked: the fleet has {shapes} distinct node shapes, more than the {MAX_SHAPES} one admission decides on. Nodes of one machine type and kubelet configuration share a shape: check that the labeler is current (it publishes numa-memory-mib in whole GiB) and that the kubelet settings are uniform"
            ),
            FitWarning::TooManyContainers { containers } => format!(
                "GPU fit not checked against the node shapes: the pod has {containers} containers, more than the {MAX_CONTAINERS} the kubelet model follows in one admission; the affinity counts GPUs only"
            ),
            FitWarning::SummaryUnavailable { problem } => format!(
                "GPU fit not checked: {}. Run the fleet summarizer and grant the policy read access to its ConfigMap, or set capacity.source: auto to fall back to the Node list",
                clause(problem)
            ),
            FitWarning::NodeListUnavailable {
                problem,
                checked_statically,
                source_ignores_limits,
            } => {
                let unavailable = format!(
                    "the cluster view (Node labels) is unavailable: {}",
                    clause(problem)
                );
                if *checked_statically {
                    format!("GPU fit checked against the static capacity settings: {unavailable}")
                } else {
                    let with_source = if *source_ignores_limits {
                        " with capacity.source: auto"
                    } else {
                        ""
                    };
                    format!(
                        "GPU fit not checked: {unavailable}. Grant the policy read access to v1 Nodes (contextAwareResources), or configure capacity.maxGpusPerNode{with_source}"
                    )
                }
            }
            FitWarning::PinnedWithoutAffinity { by_affinity_to: None } => {
                "spec.nodeName is set, so the scheduler is bypassed: no GPU topology affinity was added".to_owned()
            }
            FitWarning::PinnedWithoutAffinity {
                by_affinity_to: Some(node),
            } => format!(
                "the pod is pinned to node {node:?} by required node affinity on metadata.name (as a DaemonSet's pods are): no GPU topology affinity was added"
            ),
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
            FitWarning::PinnedNodeRefusesAdmitted { refusal } => format!(
                "{} Admitted: capacity.unlabeledNodes is allow",
                refusal.message(prefix)
            ),
            FitWarning::NoLabeledNodeTakesAdmitted { refusal } => format!(
                "no labeled GPU node takes the pod; admitted for nodes without {prefix} labels (capacity.unlabeledNodes: allow): {}",
                refusal.message(prefix).trim_start_matches(CANNOT_BE_PLACED)
            ),
            FitWarning::AdmittedWithoutPlacement { refusal } => format!(
                "GPU pod admitted without a placement: {}",
                refusal.message(prefix).trim_start_matches(CANNOT_BE_PLACED)
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

/// The host's messages end in a full stop; ours continue the sentence.
fn clause(problem: &str) -> &str {
    problem.trim_end_matches('.')
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
