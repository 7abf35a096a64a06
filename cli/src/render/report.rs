//! The machine-readable report (`-o json`, `-o yaml`): a versioned schema,
//! documented in cli/README.md ("The ExplainReport schema"). Fields are
//! only ever added within a version; a removal or a change of meaning
//! takes a new `apiVersion`.

use crate::binding::BindingView;
use crate::explain::{Explanation, ObjectRef, Outcome};
use crate::input::Source;
use crate::view::claims::ClaimsView;
use crate::view::diff::Change;
use crate::view::shapes::RecordView;
use serde::Serialize;

pub const API_VERSION: &str = "gpu-topology.io/v1alpha1";
pub const KIND: &str = "ExplainReport";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainReport<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub summary: Summary,
    pub items: Vec<Item<'a>>,
}

/// How many objects had each outcome.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub objects: usize,
    pub accepted: usize,
    pub mutated: usize,
    pub rejected: usize,
}

#[derive(Debug, Serialize)]
pub struct SourceRef<'a> {
    pub file: &'a str,
    pub document: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRef<'a>>,
    pub object: &'a ObjectRef,
    #[serde(flatten)]
    pub answer: Answer<'a>,
    pub changes: &'a [Change],
    /// The record of a GPU pod or pod template (`null` for other objects).
    pub record: Option<&'a RecordView>,
    /// The DRA stage's record of a Pod that names claims (absent for other
    /// objects).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claims: Option<&'a ClaimsView>,
    /// `explain --node`: the binding check of the pod bound to that node
    /// (absent without `--node`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binding: Option<&'a BindingView>,
}

impl<'a> ExplainReport<'a> {
    pub fn new(explanations: &'a [Explanation]) -> Self {
        let mut summary = Summary {
            objects: explanations.len(),
            ..Summary::default()
        };
        for explanation in explanations {
            match explanation.outcome {
                Outcome::Accepted => summary.accepted += 1,
                Outcome::Mutated => summary.mutated += 1,
                Outcome::Rejected => summary.rejected += 1,
            }
        }
        ExplainReport {
            api_version: API_VERSION,
            kind: KIND,
            summary,
            items: explanations.iter().map(Item::of).collect(),
        }
    }
}

/// What the API server gets for one object (what-if reports one before
/// and one after).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer<'a> {
    pub decision: Outcome,
    pub allowed: bool,
    pub message: Option<&'a str>,
    pub warnings: &'a [String],
    pub patch: &'a json_patch::Patch,
}

impl<'a> Answer<'a> {
    pub fn of(explanation: &'a Explanation) -> Self {
        Answer {
            decision: explanation.outcome,
            allowed: explanation.outcome.allowed(),
            message: explanation.message.as_deref(),
            warnings: &explanation.warnings,
            patch: &explanation.patch,
        }
    }
}

impl<'a> Item<'a> {
    fn of(explanation: &'a Explanation) -> Self {
        Item {
            source: explanation.source.as_ref().map(source_ref),
            object: &explanation.object,
            answer: Answer::of(explanation),
            changes: &explanation.changes,
            record: explanation.record.as_ref(),
            claims: explanation.claims.as_ref(),
            binding: explanation.binding.as_ref(),
        }
    }
}

pub(crate) fn source_ref(source: &Source) -> SourceRef<'_> {
    SourceRef {
        file: &source.file,
        document: source.document,
        item: source.item,
    }
}
