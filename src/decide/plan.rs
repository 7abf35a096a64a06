//! What the pipeline decided about one GPU pod, stage by stage, as data:
//! the cluster as seen, the verdicts, the QoS edits, the notes of every
//! stage and the affinity, or the rejection. The pipeline
//! ([`super::plan_pod`]) fills it; the policy's answer and the tool's
//! record ([`super::record`]) read it. It names a type of every stage and
//! no stage names it.

use super::adjustment::Adjustment;
use super::affinity::AffinityRequirement;
use super::rejection::Rejection;
use super::{extended_by_dra, fit, model, qos};
use gpu_topology::LabelPrefix;

/// What was decided about one GPU pod (or pod template), stage by stage:
/// the decision as data. The policy's answer (the rejection, or the
/// affinity merged into the pod and [`Notes::warnings`]) and the tool's
/// tables ([`super::record::PodRecord`]) both read it; neither decides again.
#[derive(Debug)]
pub(crate) struct PodPlan<'s> {
    /// How the cluster was seen (read by the pipeline, which keeps it while
    /// the plan lives).
    pub sight: &'s fit::Sight,
    /// The kubelet's answer for each group of the view's fleet, in the
    /// fleet's order, on the pod as finally planned; empty without a view.
    pub verdicts: Vec<model::GroupVerdict<'s>>,
    /// The Guaranteed-QoS edits written into the pod (none under
    /// `qos.mode: validate` or `off`).
    pub qos_edits: Vec<qos::Edit>,
    pub notes: Notes,
    /// The node affinity the pod gets.
    pub requirement: AffinityRequirement,
    /// Why the pod is rejected, if it is.
    pub rejection: Option<Rejection>,
}

/// The warnings of each stage, in the order the answer lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Notes {
    /// How the cluster was read ([`fit::look`]).
    pub look: Vec<fit::FitWarning>,
    /// Why the fit was not checked against the node shapes
    /// ([`fit::check_without_view`], or too many containers).
    pub unchecked: Option<fit::FitWarning>,
    /// The defaults lowered and the CPUs rounded for this pod
    /// ([`super::lowering`], [`super::rounding`]).
    pub adjustments: Vec<Adjustment>,
    /// The fit against the view ([`fit::place`]).
    pub placement: Vec<fit::FitWarning>,
    /// GPU extended resources DRA also serves ([`extended_by_dra`]).
    pub dra: Vec<extended_by_dra::ServedByDra>,
    /// The QoS plan's ([`super::plan_qos`]).
    pub qos: Option<QosNote>,
    /// Why a pinned pod gets no affinity.
    pub pinned: Option<fit::FitWarning>,
}

impl Notes {
    /// Every warning, in the answer's order, worded (once, here) under the
    /// label prefix `prefix`.
    pub fn warnings(&self, prefix: &LabelPrefix) -> Vec<String> {
        let Notes {
            look,
            unchecked,
            adjustments,
            placement,
            dra,
            qos,
            pinned,
        } = self;
        let fit = |warnings: &mut Vec<String>, of: &[fit::FitWarning]| {
            warnings.extend(of.iter().map(|warning| warning.words(prefix)));
        };
        let mut warnings = Vec::new();
        fit(&mut warnings, look);
        fit(&mut warnings, unchecked.as_slice());
        warnings.extend(adjustments.iter().map(Adjustment::warning));
        fit(&mut warnings, placement);
        warnings.extend(dra.iter().map(extended_by_dra::ServedByDra::words));
        warnings.extend(qos.as_ref().map(|note| note.words(prefix)));
        fit(&mut warnings, pinned.as_slice());
        warnings
    }
}

/// A note of the QoS stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QosNote {
    /// Pod-level resources leave the pod unpinned by the static CPU and
    /// Memory Managers ([`qos::unpinned_by_pod_level_resources`]).
    UnpinnedByPodLevelResources,
    /// A workload's template that Guaranteed QoS refuses: its pods will be
    /// rejected unless something sets their resources first.
    TemplateRefused {
        /// The rejection a Pod would get.
        refusal: Rejection,
    },
}

impl QosNote {
    fn words(&self, prefix: &LabelPrefix) -> String {
        match self {
            QosNote::UnpinnedByPodLevelResources => qos::UNPINNED_BY_POD_LEVEL_RESOURCES.to_owned(),
            QosNote::TemplateRefused { refusal } => format!(
                "its pods will be rejected unless a LimitRange or another webhook sets their resources first: {}",
                refusal.message(prefix)
            ),
        }
    }
}
