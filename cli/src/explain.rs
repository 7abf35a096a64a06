//! `explain`: the policy's decision on one object, computed natively by
//! its own code ([`explain_with`]: exactly what `evaluate_with` answers,
//! and the record behind it) on the request policy-server would
//! send, with the cluster read through a [`ClusterReader`], and turned into
//! what the API server would get: allowed or not, the message, the
//! warnings and the JSON patch (`json_patch::diff` of the object and the
//! mutated object, as policy-evaluator computes it).

use crate::binding::BindingView;
use crate::input::Source;
use crate::request::RequestText;
use crate::settings::PolicySettings;
use crate::view::claims::ClaimsView;
use crate::view::diff::{describe, Change};
use crate::view::shapes::{NodeNames, RecordView};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::explain_with;
use gpu_topology_policy::decide::record::PodRecord;
use gpu_topology_policy::decide::Verdict;
use serde::Serialize;
use serde_json::Value;

/// What Kubewarden answers when a policy mutates a request without an
/// object (policy-evaluator's words).
pub const MUTATION_WITHOUT_OBJECT: &str = "Incoming object is null, which happens only with DELETE operations, but the policy is attempting a mutation. This is not allowed";

/// The outcome for the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Admitted as it is.
    Accepted,
    /// Admitted with the patch.
    Mutated,
    Rejected,
}

impl Outcome {
    pub fn allowed(self) -> bool {
        self != Outcome::Rejected
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Mutated => "mutated",
            Outcome::Rejected => "rejected",
        }
    }
}

/// The object, as a report names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    /// The name, or `generateName` followed by `*`.
    pub name: String,
}

impl ObjectRef {
    fn of(request: &Value) -> Self {
        let text = |pointer: &str| request.pointer(pointer).and_then(Value::as_str);
        let name = text("/object/metadata/name")
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .or_else(|| text("/object/metadata/generateName").map(|prefix| format!("{prefix}*")))
            .unwrap_or_else(|| "-".to_owned());
        ObjectRef {
            api_version: text("/object/apiVersion").unwrap_or_default().to_owned(),
            kind: text("/kind/kind").unwrap_or_default().to_owned(),
            namespace: text("/namespace").unwrap_or_default().to_owned(),
            name,
        }
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// The decision on one object.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    pub source: Option<Source>,
    pub object: ObjectRef,
    pub outcome: Outcome,
    /// The rejection's message.
    pub message: Option<String>,
    pub warnings: Vec<String>,
    /// The RFC 6902 patch (empty unless mutated).
    pub patch: json_patch::Patch,
    /// The patch as changed fields.
    pub changes: Vec<Change>,
    /// The record of a GPU pod or pod template: demand, view, shapes.
    pub record: Option<RecordView>,
    /// The policy's own record behind [`Self::record`] (what-if compares
    /// two of them shape by shape).
    pub pod: Option<PodRecord>,
    /// The DRA stage's record of a Pod that names claims.
    pub claims: Option<ClaimsView>,
    /// `explain --node`: the binding check of the pod as it would be
    /// stored, bound to that node.
    pub binding: Option<BindingView>,
}

/// Explains the CREATE of `object`; `names` name the nodes of each shape.
pub fn explain_object(
    object: &Value,
    settings: &PolicySettings,
    cluster: &dyn ClusterReader,
    names: &NodeNames,
) -> Result<Explanation, String> {
    explain_request(&RequestText::create(object), settings, cluster, names)
}

/// Explains an admission request; `Err` when the policy's reader cannot
/// read it (the module would fail the call).
pub fn explain_request(
    request: &RequestText,
    settings: &PolicySettings,
    cluster: &dyn ClusterReader,
    names: &NodeNames,
) -> Result<Explanation, String> {
    let parsed = request.parse().map_err(|error| error.to_string())?;
    let explained = explain_with(&parsed, &settings.config, cluster);
    let record = explained
        .pod
        .as_ref()
        .map(|pod| RecordView::new(pod, names));
    let claims = explained.dra.as_ref().map(ClaimsView::new);
    let decision = explained.decision;
    let tree = request.to_value();
    let original = tree.get("object").filter(|object| !object.is_null());
    let object = ObjectRef::of(&tree);
    let (outcome, message, patch) = match decision.verdict {
        Verdict::Accept => (Outcome::Accepted, None, json_patch::Patch(Vec::new())),
        Verdict::Reject(message) => (
            Outcome::Rejected,
            Some(message),
            json_patch::Patch(Vec::new()),
        ),
        Verdict::Mutate(mutated) => {
            let Some(original) = original else {
                return Ok(Explanation {
                    source: None,
                    object,
                    outcome: Outcome::Rejected,
                    message: Some(MUTATION_WITHOUT_OBJECT.to_owned()),
                    warnings: Vec::new(),
                    patch: json_patch::Patch(Vec::new()),
                    changes: Vec::new(),
                    record,
                    pod: explained.pod,
                    claims,
                    binding: None,
                });
            };
            let mutated = mutated
                .to_value()
                .map_err(|error| format!("the policy's mutated object is not JSON: {error}"))?;
            let patch = json_patch::diff(original, &mutated);
            let outcome = if patch.0.is_empty() {
                Outcome::Accepted
            } else {
                Outcome::Mutated
            };
            (outcome, None, patch)
        }
    };
    let changes = original
        .map(|original| describe(original, &patch.0))
        .unwrap_or_default();
    Ok(Explanation {
        source: None,
        object,
        outcome,
        message,
        warnings: decision.warnings,
        patch,
        changes,
        record,
        pod: explained.pod,
        claims,
        binding: None,
    })
}
