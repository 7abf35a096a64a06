//! The waPC host callback: what the policy reaches through `host_call`.
//!
//! Mirrors Kubewarden's policy-evaluator (`runtimes/callback.rs`): binding
//! `kubewarden`; namespace `tracing` (operation `log`) always succeeds; namespace
//! `kubernetes` (`list_resources_all`, `list_resources_by_namespace`,
//! `get_resource`) first checks the context-aware allow list, then answers from
//! a kwctl session replay. Anything else is an error *returned to the guest*,
//! never a failure of the evaluation itself.

use crate::session::{HostRequest, Replay, Session};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The error type waPC host callbacks return.
pub type CallbackError = Box<dyn std::error::Error + Send + Sync>;

/// One host call the guest made, for assertions and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCall {
    pub namespace: String,
    pub operation: String,
    /// The decoded Kubernetes request, when it was one.
    pub request: Option<HostRequest>,
    /// The error handed back to the guest, if any.
    pub error: Option<String>,
}

/// A Kubernetes resource type the policy was granted (`contextAwareResources`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

/// How many host calls and log lines an instance remembers: far more than one
/// evaluation makes, and bounded, so that a benchmark's millions of calls
/// neither grow the host's memory nor slow it down.
pub const HISTORY: usize = 256;

/// What the host offers one evaluation: the allow list and the recorded cluster.
#[derive(Debug, Default)]
pub struct HostCapabilities {
    allowed: BTreeSet<ContextAwareResource>,
    replay: Option<Mutex<Replay>>,
    calls: Mutex<VecDeque<HostCall>>,
    log_lines: Mutex<VecDeque<String>>,
}

/// Appends `item`, forgetting the oldest beyond [`HISTORY`].
fn remember<T>(history: &Mutex<VecDeque<T>>, item: T) {
    let mut history = lock(history);
    if history.len() == HISTORY {
        history.pop_front();
    }
    history.push_back(item);
}

/// Locks, recovering the data if a previous holder panicked (a test failure
/// elsewhere must not cascade into confusing poison errors).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HostCapabilities {
    /// No context awareness: like `kwctl run` without `--allow-context-aware`.
    pub fn none() -> Self {
        Self::default()
    }

    /// Grants `allowed` and answers Kubernetes requests from `session`.
    pub fn new(allowed: BTreeSet<ContextAwareResource>, session: Option<&Session>) -> Self {
        Self {
            allowed,
            replay: session.map(|s| Mutex::new(s.replay())),
            ..Self::default()
        }
    }

    /// The host calls the guest made so far (the last [`HISTORY`]).
    pub fn calls(&self) -> Vec<HostCall> {
        lock(&self.calls).iter().cloned().collect()
    }

    /// Log events the policy emitted through `kubewarden/tracing/log` (the
    /// last [`HISTORY`]).
    pub fn log_lines(&self) -> Vec<String> {
        lock(&self.log_lines).iter().cloned().collect()
    }

    /// Recorded exchanges the policy never requested.
    pub fn unreplayed_exchanges(&self) -> usize {
        self.replay.as_ref().map_or(0, |r| lock(r).leftovers())
    }

    /// Rewinds the session and forgets recorded calls, so one instance can
    /// serve repeated evaluations (benchmarks).
    pub fn reset(&self) {
        if let Some(replay) = &self.replay {
            lock(replay).rewind();
        }
        lock(&self.calls).clear();
        lock(&self.log_lines).clear();
    }

    /// The waPC host callback body.
    pub fn handle(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, CallbackError> {
        if (binding, namespace, operation) == ("kubewarden", "tracing", "log") {
            // Logging must never fail an evaluation, whatever the payload.
            remember(
                &self.log_lines,
                String::from_utf8_lossy(payload).into_owned(),
            );
            return Ok(Vec::new());
        }
        let (request, outcome) = self.dispatch(binding, namespace, operation, payload);
        remember(
            &self.calls,
            HostCall {
                namespace: namespace.to_owned(),
                operation: operation.to_owned(),
                request,
                error: outcome.as_ref().err().cloned(),
            },
        );
        outcome.map_err(CallbackError::from)
    }

    fn dispatch(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> (Option<HostRequest>, Result<Vec<u8>, String>) {
        if binding != "kubewarden" {
            return (None, Err(format!("unknown binding: {binding}")));
        }
        match namespace {
            "kubernetes" => {}
            "oci" | "net" | "crypto" => {
                return (
                    None,
                    Err(format!(
                        "host capability {namespace}/{operation} is not served by the e2e harness"
                    )),
                )
            }
            _ => return (None, Err(format!("unknown namespace: {namespace}"))),
        }
        let request = match decode_kubernetes_request(operation, payload) {
            Ok(request) => request,
            Err(error) => return (None, Err(error)),
        };
        let outcome = self.answer(&request);
        (Some(request), outcome)
    }

    fn answer(&self, request: &HostRequest) -> Result<Vec<u8>, String> {
        let (api_version, kind) = request.resource();
        let granted = self
            .allowed
            .iter()
            .any(|resource| resource.api_version == api_version && resource.kind == kind);
        if !granted {
            // policy-evaluator's wording, so kwctl and the harness fail alike.
            return Err(format!(
                "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. \
                 The violation has been reported."
            ));
        }
        match &self.replay {
            Some(replay) => lock(replay).answer(request),
            None => Err(format!(
                "no session file: the e2e harness has no recorded answer for {request:?}"
            )),
        }
    }
}

/// Turns the guest's JSON payload into the request kwctl would record.
fn decode_kubernetes_request(operation: &str, payload: &[u8]) -> Result<HostRequest, String> {
    let variant = match operation {
        "list_resources_all" => "KubernetesListResourceAll",
        "list_resources_by_namespace" => "KubernetesListResourceNamespace",
        "get_resource" => "KubernetesGetResource",
        "can_i" => {
            return Err("host capability kubernetes/can_i is not served by the e2e harness".into())
        }
        _ => return Err(format!("unknown operation: {operation}")),
    };
    let body: Value = serde_json::from_slice(payload)
        .map_err(|e| format!("kubernetes/{operation}: payload is not JSON: {e}"))?;
    // The SDK's request structs carry the same snake_case fields as kwctl's
    // enum variants, so wrapping the body in the variant name decodes it.
    let tagged = Value::Object(Map::from_iter([(variant.to_owned(), body)]));
    serde_json::from_value(tagged).map_err(|e| format!("kubernetes/{operation}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const LIST_NODES: &str = r#"{"api_version":"v1","kind":"Node","label_selector":"gpu-topology.io/gpus","field_selector":null,"field_masks":null}"#;

    fn node_access() -> BTreeSet<ContextAwareResource> {
        BTreeSet::from([ContextAwareResource {
            api_version: "v1".into(),
            kind: "Node".into(),
        }])
    }

    fn with_session() -> HostCapabilities {
        let list_nodes = crate::session::RecordedExchange {
            request: serde_json::from_value(serde_json::json!({"KubernetesListResourceAll": {
                "api_version": "v1", "kind": "Node", "label_selector": "gpu-topology.io/gpus",
                "field_selector": null, "field_masks": null
            }}))
            .unwrap(),
            response: crate::session::Response::Success {
                payload: r#"{"kind":"NodeList","items":[]}"#.to_owned(),
            },
        };
        HostCapabilities::new(node_access(), Some(&Session::new(vec![list_nodes])))
    }

    #[test]
    fn serves_the_recorded_node_list() {
        let host = with_session();
        let answer = host
            .handle(
                "kubewarden",
                "kubernetes",
                "list_resources_all",
                LIST_NODES.as_bytes(),
            )
            .unwrap();
        assert_eq!(answer, br#"{"kind":"NodeList","items":[]}"#);
        assert_eq!(host.unreplayed_exchanges(), 0);
        assert_eq!(host.calls().len(), 1);
        assert!(host.calls()[0].error.is_none());
        host.reset();
        assert_eq!(host.unreplayed_exchanges(), 1);
        assert!(host.calls().is_empty());
    }

    #[rstest]
    #[case::not_granted(
        HostCapabilities::none(),
        "kubernetes",
        "list_resources_all",
        LIST_NODES,
        "has not been granted access to Kubernetes v1/Node"
    )]
    #[case::no_session(
        HostCapabilities::new(node_access(), None),
        "kubernetes",
        "list_resources_all",
        LIST_NODES,
        "no session file"
    )]
    #[case::different_request(
        with_session(),
        "kubernetes",
        "list_resources_all",
        r#"{"api_version":"v1","kind":"Node","label_selector":null,"field_selector":null}"#,
        "Replay error: unexpected request"
    )]
    #[case::unknown_operation(
        with_session(),
        "kubernetes",
        "watch",
        "{}",
        "unknown operation: watch"
    )]
    #[case::unknown_namespace(
        with_session(),
        "teleport",
        "go",
        "{}",
        "unknown namespace: teleport"
    )]
    #[case::unserved_capability(
        with_session(),
        "oci",
        "v1/manifest_digest",
        "\"busybox\"",
        "not served by the e2e harness"
    )]
    #[case::malformed_payload(
        with_session(),
        "kubernetes",
        "get_resource",
        "{\"kind\":",
        "payload is not JSON"
    )]
    #[case::missing_field(
        with_session(),
        "kubernetes",
        "get_resource",
        "{\"kind\":\"Node\"}",
        "missing field"
    )]
    fn failures_are_errors_returned_to_the_guest(
        #[case] host: HostCapabilities,
        #[case] namespace: &str,
        #[case] operation: &str,
        #[case] payload: &str,
        #[case] message: &str,
    ) {
        let error = host
            .handle("kubewarden", namespace, operation, payload.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains(message), "{error}");
        assert_eq!(
            host.calls().last().unwrap().error.as_deref(),
            Some(error.as_str())
        );
    }

    #[rstest]
    #[case::json_event(br#"{"level":"info","message":"hello"}"#.as_slice())]
    #[case::not_even_utf8(b"\xff\xfe".as_slice())]
    fn logging_never_fails(#[case] payload: &[u8]) {
        let host = HostCapabilities::none();
        assert_eq!(
            host.handle("kubewarden", "tracing", "log", payload)
                .unwrap(),
            Vec::<u8>::new()
        );
        assert_eq!(host.log_lines().len(), 1);
        assert!(host.calls().is_empty());
    }

    #[test]
    fn remembers_only_the_latest_calls() {
        let host = HostCapabilities::none();
        for index in 0..HISTORY + 10 {
            let payload = format!(r#"{{"line":{index}}}"#);
            host.handle("kubewarden", "tracing", "log", payload.as_bytes())
                .unwrap();
            let _refused = host.handle(
                "kubewarden",
                "kubernetes",
                "list_resources_all",
                LIST_NODES.as_bytes(),
            );
        }
        let lines = host.log_lines();
        assert_eq!(lines.len(), HISTORY);
        assert_eq!(lines.first().unwrap(), r#"{"line":10}"#);
        assert_eq!(host.calls().len(), HISTORY);
    }
}
