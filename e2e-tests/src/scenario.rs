//! Scenario files: one JSON document per case, shared by the harness runner and
//! the kwctl bats suite.
//!
//! ```json
//! {
//!   "description": "what the case shows",
//!   "request": "requests/pod-1-gpu.json",
//!   "settings": {"qos": {"mode": "mutate"}},          (or a YAML/JSON file path)
//!   "session": "sessions/fleet.yml",
//!   "contextAwareResources": [{"apiVersion": "v1", "kind": "Node"}],
//!   "expect": {
//!     "settingsValid": true,
//!     "allowed": true,
//!     "message": ["fragments", "all contained in the message"],
//!     "warning": "fragment of one warning",
//!     "patch": [{"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "4"}],
//!     "patched": {"/spec/containers/0/resources/limits/cpu": "4"},
//!     "patchedAnyOrder": {"/spec/some/array": [{"a": 1}, {"b": 2}]},
//!     "patchedContains": {"/spec/some/array": [{"a": 1}]}
//!   }
//! }
//! ```
//!
//! Paths are relative to the scenario file. `message` is one fragment or a list
//! of fragments that must all appear. `patch` is the exact set of
//! operations (`[]`: no patch; `value` checked when given). `patched` maps JSON
//! pointers to values in the object after admission (`null`: absent);
//! `patchedAnyOrder` maps pointers to arrays that must hold exactly these items,
//! in any order (for ORed node-selector terms, whose order carries no meaning);
//! `patchedContains` maps pointers to items the array must include (among others).
//! With `settingsValid: false`, `validate_settings` must refuse the settings
//! (its message must contain `message`) and `validate` is not called.
//!
//! Every Pod scenario is also checked for the policy-wide promises: the patch
//! touches only resources and affinity, a recorded session is fully consumed,
//! and re-admitting the patched object changes nothing (idempotency).

use crate::admission::{load_request, Outcome};
use crate::host::{ContextAwareResource, HostCapabilities};
use crate::policy::PolicyModule;
use crate::session::Session;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a Pod patch may write: container resources, pod-level resources and
/// affinity (issue 2, rule 5: no other field is ever touched).
const POD_PATCH_SCOPES: [&str; 4] = [
    "/spec/containers/",
    "/spec/initContainers/",
    "/spec/resources",
    "/spec/affinity",
];

/// A scenario file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScenarioFile {
    pub description: String,
    pub request: PathBuf,
    #[serde(default)]
    pub settings: SettingsSource,
    pub session: Option<PathBuf>,
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
    pub expect: Expectation,
}

/// Settings written inline, or the path of a YAML/JSON settings file (the
/// `kwctl run --settings-path` form).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SettingsSource {
    File(PathBuf),
    Inline(Value),
}

impl Default for SettingsSource {
    fn default() -> Self {
        SettingsSource::Inline(Value::Object(serde_json::Map::new()))
    }
}

/// The `*.json` files directly in `dir`, sorted by name.
pub fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()?;
    paths.retain(|p| p.extension().is_some_and(|e| e == "json"));
    paths.sort();
    Ok(paths)
}

/// Reads a YAML (or JSON, a subset of YAML) settings file.
pub fn load_settings(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read settings file {}", path.display()))?;
    serde_yaml::from_str(&text)
        .with_context(|| format!("settings file {} is not YAML", path.display()))
}

/// One text fragment, or several that must all appear.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Fragments {
    One(String),
    All(Vec<String>),
}

impl Fragments {
    /// Every fragment.
    pub fn all(&self) -> Vec<&str> {
        match self {
            Fragments::One(one) => vec![one],
            Fragments::All(all) => all.iter().map(String::as_str).collect(),
        }
    }

    /// The fragments `text` lacks.
    pub fn missing_from<'a>(&'a self, text: &str) -> Vec<&'a str> {
        self.all()
            .into_iter()
            .filter(|f| !text.contains(f))
            .collect()
    }
}

fn valid_by_default() -> bool {
    true
}

/// What the scenario must produce.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectation {
    #[serde(default = "valid_by_default")]
    pub settings_valid: bool,
    pub allowed: Option<bool>,
    pub message: Option<Fragments>,
    /// Each fragment is in some warning (as kwctl-check.jq checks).
    pub warning: Option<Fragments>,
    /// The response carries no warning at all.
    #[serde(default)]
    pub no_warnings: bool,
    pub patch: Option<Vec<ExpectedOperation>>,
    pub patched: Option<BTreeMap<String, Value>>,
    pub patched_any_order: Option<BTreeMap<String, Vec<Value>>>,
    pub patched_contains: Option<BTreeMap<String, Vec<Value>>>,
}

/// One expected JSON-patch operation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedOperation {
    pub op: String,
    pub path: String,
    pub value: Option<Value>,
}

/// A loaded scenario: the file plus the documents it points to.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub file: ScenarioFile,
    pub request: Value,
    pub settings: Value,
    pub session: Option<Session>,
}

impl Scenario {
    /// Loads `path` and the request and session files it names.
    pub fn load(path: &Path) -> Result<Self> {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read scenario {}", path.display()))?;
        let file: ScenarioFile = serde_json::from_str(&text)
            .with_context(|| format!("scenario {} is malformed", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let request = load_request(&dir.join(&file.request))?;
        let settings = match &file.settings {
            SettingsSource::File(settings) => load_settings(&dir.join(settings))?,
            SettingsSource::Inline(settings) => settings.clone(),
        };
        let session = file
            .session
            .as_ref()
            .map(|session| Session::load(&dir.join(session)))
            .transpose()?;
        Ok(Self {
            name,
            file,
            request,
            settings,
            session,
        })
    }

    /// Every `*.json` file directly in `dir`, sorted by name.
    pub fn load_all(dir: &Path) -> Result<Vec<Self>> {
        let paths = json_files(dir)?;
        if paths.is_empty() {
            bail!("no scenario files (*.json) in {}", dir.display());
        }
        paths.iter().map(|p| Self::load(p)).collect()
    }

    fn capabilities(&self) -> Arc<HostCapabilities> {
        Arc::new(HostCapabilities::new(
            self.file.context_aware_resources.clone(),
            self.session.as_ref(),
        ))
    }

    fn is_pod(&self) -> bool {
        self.request.pointer("/kind/kind").and_then(Value::as_str) == Some("Pod")
    }

    /// Runs the scenario; `Ok` holds the list of failed expectations (empty:
    /// passed), `Err` a harness or protocol failure.
    pub fn run(&self, module: &PolicyModule) -> Result<Vec<String>> {
        let policy = module.instantiate(self.capabilities())?;
        policy.protocol_version()?;
        let expect = &self.file.expect;
        let settings = policy.validate_settings(&self.settings)?;
        if !expect.settings_valid {
            return Ok(check_refused_settings(
                settings.valid,
                settings.message,
                expect,
            ));
        }
        if !settings.valid {
            return Ok(vec![format!(
                "validate_settings refused the settings: {}",
                settings.message.unwrap_or_default()
            )]);
        }
        let outcome = policy.validate(&self.request, &self.settings)?;
        let mut failures = check_outcome(&self.request, &outcome, expect);
        let unreplayed = policy.capabilities().unreplayed_exchanges();
        if unreplayed > 0 {
            failures.push(format!(
                "the policy never requested {unreplayed} recorded session exchange(s)"
            ));
        }
        if self.is_pod() {
            failures.extend(patch_scope_violations(&outcome));
            failures.extend(self.idempotency_failures(module, &outcome)?);
        }
        Ok(failures)
    }

    /// Re-admitting the patched object must change nothing.
    fn idempotency_failures(
        &self,
        module: &PolicyModule,
        outcome: &Outcome,
    ) -> Result<Vec<String>> {
        let (true, Some(patched)) = (outcome.allowed, &outcome.patched_object) else {
            return Ok(Vec::new());
        };
        let mut request = self.request.clone();
        if let Some(object) = request.get_mut("object") {
            *object = patched.clone();
        }
        let policy = module.instantiate(self.capabilities())?;
        let again = policy.validate(&request, &self.settings)?;
        let mut failures = Vec::new();
        if !again.allowed {
            failures.push(format!(
                "idempotency: the patched object is rejected: {}",
                again.message.unwrap_or_default()
            ));
        }
        if let Some(patch) = &again.patch {
            failures.push(format!(
                "idempotency: the patched object is patched again: {}",
                serde_json::to_string(patch).unwrap_or_default()
            ));
        }
        Ok(failures)
    }
}

fn check_refused_settings(
    valid: bool,
    message: Option<String>,
    expect: &Expectation,
) -> Vec<String> {
    let message = message.unwrap_or_default();
    let mut failures = Vec::new();
    if valid {
        failures.push("validate_settings accepted settings that must be refused".to_owned());
    }
    if let Some(fragments) = &expect.message {
        let missing = fragments.missing_from(&message);
        if !missing.is_empty() {
            failures.push(format!(
                "settings message {message:?} does not contain {missing:?}"
            ));
        }
    }
    failures
}

/// Compares an outcome with the expectation; returns what differs.
pub fn check_outcome(request: &Value, outcome: &Outcome, expect: &Expectation) -> Vec<String> {
    let mut failures = Vec::new();
    let message = outcome.message.as_deref().unwrap_or_default();
    match expect.allowed {
        Some(allowed) if allowed != outcome.allowed => failures.push(format!(
            "expected {}, got {} (message: {message:?})",
            decision(allowed),
            decision(outcome.allowed)
        )),
        None => failures.push("the scenario does not say whether it is allowed".to_owned()),
        _ => {}
    }
    if let Some(fragments) = &expect.message {
        let missing = fragments.missing_from(message);
        if !missing.is_empty() {
            failures.push(format!("message {message:?} does not contain {missing:?}"));
        }
    }
    if let Some(fragments) = &expect.warning {
        for fragment in fragments.all() {
            if !outcome.warnings.iter().any(|w| w.contains(fragment)) {
                failures.push(format!(
                    "no warning contains {fragment:?} (warnings: {:?})",
                    outcome.warnings
                ));
            }
        }
    }
    if expect.no_warnings && !outcome.warnings.is_empty() {
        failures.push(format!("expected no warning, got {:?}", outcome.warnings));
    }
    if let Some(expected) = &expect.patch {
        failures.extend(patch_differences(outcome, expected));
    }
    let object = outcome
        .patched_object
        .as_ref()
        .or_else(|| request.get("object"));
    for (pointer, expected) in expect.patched_any_order.iter().flatten() {
        let actual = object.and_then(|o| o.pointer(pointer));
        if !same_items(actual, expected) {
            failures.push(format!(
                "after admission {pointer} is {}, expected these items in any order: {}",
                actual.map_or("absent".to_owned(), Value::to_string),
                Value::Array(expected.clone())
            ));
        }
    }
    for (pointer, expected) in expect.patched_contains.iter().flatten() {
        let actual = object.and_then(|o| o.pointer(pointer));
        let items = actual.and_then(Value::as_array);
        for item in expected {
            if !items.is_some_and(|items| items.contains(item)) {
                failures.push(format!(
                    "after admission {pointer} is {}, which does not include {item}",
                    actual.map_or("absent".to_owned(), Value::to_string)
                ));
            }
        }
    }
    if let Some(pointers) = &expect.patched {
        for (pointer, expected) in pointers {
            let actual = object.and_then(|o| o.pointer(pointer));
            let matches = match (actual, expected) {
                (None, Value::Null) => true,
                (Some(actual), expected) => actual == expected,
                (None, _) => false,
            };
            if !matches {
                failures.push(format!(
                    "after admission {pointer} is {}, expected {expected}",
                    actual.map_or("absent".to_owned(), Value::to_string)
                ));
            }
        }
    }
    failures
}

/// True when `actual` is an array holding exactly `expected`'s items (as a multiset).
fn same_items(actual: Option<&Value>, expected: &[Value]) -> bool {
    let Some(Value::Array(actual)) = actual else {
        return false;
    };
    let mut unmatched: Vec<&Value> = actual.iter().collect();
    for item in expected {
        match unmatched.iter().position(|candidate| *candidate == item) {
            Some(index) => {
                unmatched.swap_remove(index);
            }
            None => return false,
        }
    }
    unmatched.is_empty()
}

fn decision(allowed: bool) -> &'static str {
    if allowed {
        "accepted"
    } else {
        "rejected"
    }
}

/// The patch as plain JSON operations `{op, path, value?}`.
fn actual_operations(outcome: &Outcome) -> Vec<Value> {
    outcome
        .operations()
        .iter()
        .filter_map(|op| serde_json::to_value(op).ok())
        .collect()
}

fn operation_matches(actual: &Value, expected: &ExpectedOperation) -> bool {
    actual.get("op").and_then(Value::as_str) == Some(expected.op.as_str())
        && actual.get("path").and_then(Value::as_str) == Some(expected.path.as_str())
        && expected
            .value
            .as_ref()
            .is_none_or(|value| actual.get("value") == Some(value))
}

/// The exact-set comparison of `expected` with the outcome's patch.
fn patch_differences(outcome: &Outcome, expected: &[ExpectedOperation]) -> Vec<String> {
    let actual = actual_operations(outcome);
    let mut failures: Vec<String> = expected
        .iter()
        .filter(|e| !actual.iter().any(|a| operation_matches(a, e)))
        .map(|e| {
            let value = e
                .value
                .as_ref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default();
            format!("missing patch operation {} {}{value}", e.op, e.path)
        })
        .collect();
    failures.extend(
        actual
            .iter()
            .filter(|a| !expected.iter().any(|e| operation_matches(a, e)))
            .map(|a| format!("unexpected patch operation {a}")),
    );
    failures
}

/// Operations outside resources and affinity.
fn patch_scope_violations(outcome: &Outcome) -> Vec<String> {
    actual_operations(outcome)
        .into_iter()
        .filter(|op| {
            let path = op.get("path").and_then(Value::as_str).unwrap_or_default();
            !in_pod_patch_scope(path)
        })
        .map(|op| format!("patch touches a field outside resources and affinity: {op}"))
        .collect()
}

fn in_pod_patch_scope(path: &str) -> bool {
    POD_PATCH_SCOPES
        .iter()
        .any(|scope| match scope.strip_suffix('/') {
            // Containers: only `<index>/resources` (or below) may change.
            Some(_) => path.strip_prefix(scope).is_some_and(|rest| {
                let mut parts = rest.splitn(3, '/');
                let index_ok = parts
                    .next()
                    .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
                index_ok && parts.next() == Some("resources")
            }),
            None => path == *scope || path.starts_with(&format!("{scope}/")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::container_cpu("/spec/containers/0/resources/requests/cpu", true)]
    #[case::whole_resources("/spec/initContainers/12/resources", true)]
    #[case::pod_resources("/spec/resources/limits/memory", true)]
    #[case::affinity("/spec/affinity", true)]
    #[case::affinity_term(
        "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
        true
    )]
    #[case::container_image("/spec/containers/0/image", false)]
    #[case::whole_container("/spec/containers/0", false)]
    #[case::ephemeral_container("/spec/ephemeralContainers/0/resources", false)]
    #[case::lookalike_field("/spec/affinityHints", false)]
    #[case::resource_claims("/spec/resourceClaims", false)]
    #[case::labels("/metadata/labels/team", false)]
    fn pod_patch_scope(#[case] path: &str, #[case] allowed: bool) {
        assert_eq!(in_pod_patch_scope(path), allowed);
    }

    fn outcome_with(ops: Value, allowed: bool) -> Outcome {
        Outcome {
            allowed,
            message: Some("4 GPUs do not fit".into()),
            code: None,
            warnings: vec!["no node publishes labels".into()],
            patch: Some(serde_json::from_value(ops).unwrap()),
            patched_object: Some(serde_json::json!({"spec": {"x": 2, "list": [1, 2, 3]}})),
        }
    }

    fn expectation(json: Value) -> Expectation {
        serde_json::from_value(json).unwrap()
    }

    #[rstest]
    #[case::all_match(serde_json::json!({"allowed": true, "message": "fit", "warning": "labels", "patch": [{"op": "replace", "path": "/spec/x", "value": 2}], "patched": {"/spec/x": 2, "/spec/y": null}}), 0)]
    #[case::wrong_decision(serde_json::json!({"allowed": false}), 1)]
    #[case::missing_decision(serde_json::json!({}), 1)]
    #[case::wrong_message(serde_json::json!({"allowed": true, "message": "nope"}), 1)]
    #[case::all_fragments(serde_json::json!({"allowed": true, "message": ["4 GPUs", "fit"]}), 0)]
    #[case::one_fragment_missing(serde_json::json!({"allowed": true, "message": ["4 GPUs", "8"]}), 1)]
    #[case::wrong_value(serde_json::json!({"allowed": true, "patch": [{"op": "replace", "path": "/spec/x", "value": 3}]}), 2)]
    #[case::expected_no_patch(serde_json::json!({"allowed": true, "patch": []}), 1)]
    #[case::wrong_patched_value(serde_json::json!({"allowed": true, "patched": {"/spec/x": 1}}), 1)]
    #[case::any_order_matches(serde_json::json!({"allowed": true, "patchedAnyOrder": {"/spec/list": [3, 1, 2]}}), 0)]
    #[case::any_order_missing_item(serde_json::json!({"allowed": true, "patchedAnyOrder": {"/spec/list": [1, 2]}}), 1)]
    #[case::contains(serde_json::json!({"allowed": true, "patchedContains": {"/spec/list": [2]}}), 0)]
    #[case::does_not_contain(serde_json::json!({"allowed": true, "patchedContains": {"/spec/list": [2, 4], "/spec/none": [1]}}), 2)]
    #[case::any_order_not_an_array(serde_json::json!({"allowed": true, "patchedAnyOrder": {"/spec/x": [2]}}), 1)]
    fn outcome_checks(#[case] expect: Value, #[case] failures: usize) {
        let outcome = outcome_with(
            serde_json::json!([{"op": "replace", "path": "/spec/x", "value": 2}]),
            true,
        );
        let found = check_outcome(&serde_json::json!({}), &outcome, &expectation(expect));
        assert_eq!(found.len(), failures, "{found:?}");
    }
}
