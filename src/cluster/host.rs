//! What the policy reads from the cluster, through Kubewarden's host
//! capabilities (the `kubewarden` binding's `kubernetes` namespace).
//!
//! A thin adapter behind [`ClusterReader`], so that native tests answer from
//! recorded sessions. Answers are handed over as raw JSON: the readers
//! ([`crate::cluster::nodes`], [`crate::cluster::fleet_summary`]) take only what they need from
//! it, where the SDK's helpers would deserialise whole Kubernetes objects.

use crate::cluster::ClusterRead;
use crate::json::write::write_string;
use crate::settings::FleetSources;
use gpu_topology::LabelPrefix;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use std::collections::BTreeSet;
use std::fmt;

/// Reads the cluster: the Kubewarden host in Wasm, recordings in native tests.
pub trait ClusterReader {
    /// The raw JSON list answering `request` (`list_resources_all`), or why
    /// there is none.
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String>;

    /// The raw JSON object answering `request` (`get_resource`), or why there
    /// is none.
    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String>;

    /// Writes `message` to the policy's log as a warning: policy-server's
    /// and kwctl's log, through the `tracing` host capability. Readers
    /// without a log drop it.
    fn log_warning(&self, _message: &str) {}

    /// The cluster view of one admission, when this reader keeps it already
    /// read: [`crate::cluster::read`] asks first. A reader that answers many
    /// requests from one unchanging cluster (the operator's tool explaining
    /// 1,000 manifests against one Node list) reads it once instead of
    /// parsing the same list for every request; it must answer exactly what
    /// [`crate::cluster::read`] over its own answers would. The Kubewarden
    /// host keeps nothing (`None`): the cluster changes between admissions.
    fn remembered_read(
        &self,
        _sources: &FleetSources,
        _prefix: &LabelPrefix,
        _pinned_node: Option<&str>,
    ) -> Option<ClusterRead> {
        None
    }
}

/// The Kubewarden host's `kubernetes` capabilities.
pub struct KubewardenHost;

impl KubewardenHost {
    fn call(operation: &str, payload: &str) -> Result<Vec<u8>, String> {
        wapc_guest::host_call("kubewarden", "kubernetes", operation, payload.as_bytes())
            .map_err(|error| error.to_string())
    }
}

impl ClusterReader for KubewardenHost {
    fn log_warning(&self, message: &str) {
        // The event policy-server reads (the SDK's `KubewardenDrain`
        // writes the same keys); a log that fails must not fail the
        // evaluation.
        let mut event = String::with_capacity(message.len() + 64);
        event.push_str("{\"level\":\"warning\",\"message\":");
        write_string(message, &mut event);
        event.push_str(",\"file\":\"binding\",\"line\":0,\"column\":0}");
        let _ = wapc_guest::host_call("kubewarden", "tracing", "log", event.as_bytes());
    }

    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Self::call("list_resources_all", &list_payload(request))
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Self::call("get_resource", &get_payload(request))
    }
}

/// The most characters of a host error's own text that a warning keeps: its
/// end, where the API server's status sits (`reason: "NotFound", code:
/// 404 })`), after what the error means in the policy's words.
pub const HOST_ERROR_TAIL_CHARS: usize = 120;

/// What a warning says of an empty host error.
const NO_REASON: &str = "the host gave no reason";

/// What a host capability's error means, read from the API status the host
/// passes on (kube-rs's `ErrorResponse { ..., reason, code }`) or, without
/// one, from the transport's words. The host's own wording differs between
/// kwctl, policy-server and versions ("Callback evaluation failure: ..."
/// before the same error); the meaning does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostErrorKind {
    /// HTTP 404: the object is not there.
    NotFound,
    /// HTTP 403, or Kubewarden's refusal of a resource the policy's
    /// `contextAwareResources` do not grant.
    Forbidden,
    /// HTTP 401: the host's own credentials were refused.
    Unauthorized,
    /// HTTP 408 or 504, or a timeout on the way.
    TimedOut,
    /// The API server could not be reached (refused, reset, DNS).
    Unreachable,
    /// Another HTTP 5xx: the API server failed.
    ServerError(u16),
}

impl HostErrorKind {
    /// The meaning of `line` (a host error's first line), when it can be read.
    pub fn of(line: &str) -> Option<Self> {
        if let Some(code) = status_code(line) {
            return match code {
                404 => Some(Self::NotFound),
                403 => Some(Self::Forbidden),
                401 => Some(Self::Unauthorized),
                408 | 504 => Some(Self::TimedOut),
                500..=599 => Some(Self::ServerError(code)),
                _ => None,
            };
        }
        let lower = line.to_ascii_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| lower.contains(w));
        if any(&["has not been granted access", "is forbidden"]) {
            Some(Self::Forbidden)
        } else if any(&["timed out", "timeout", "deadline has elapsed"]) {
            Some(Self::TimedOut)
        } else if any(&[
            "connection refused",
            "error trying to connect",
            "connection reset",
            "dns error",
            "no route to host",
            "network is unreachable",
        ]) {
            Some(Self::Unreachable)
        } else if any(&[" not found", "notfound"]) {
            Some(Self::NotFound)
        } else {
            None
        }
    }
}

/// The meaning in the policy's words.
impl fmt::Display for HostErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str("not found (HTTP 404)"),
            Self::Forbidden => f.write_str("access denied"),
            Self::Unauthorized => f.write_str("the host's credentials were refused (HTTP 401)"),
            Self::TimedOut => f.write_str("the request timed out"),
            Self::Unreachable => f.write_str("the API server is unreachable"),
            Self::ServerError(code) => write!(f, "the API server failed (HTTP {code})"),
        }
    }
}

/// The HTTP status an error quotes as kube-rs writes it (`code: 404`) or
/// as JSON (`"code":404`), the last one when several.
fn status_code(line: &str) -> Option<u16> {
    ["code: ", "\"code\":"]
        .iter()
        .filter_map(|key| {
            let at = line.rfind(key)? + key.len();
            let digits: String = line[at..]
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits
                .parse::<u16>()
                .ok()
                .filter(|code| (100..600).contains(code))
        })
        .next()
}

/// A host capability's error as a warning quotes it: what it means
/// ([`HostErrorKind`]), then at most the last [`HOST_ERROR_TAIL_CHARS`]
/// characters of its first line that is not blank, control characters as
/// spaces, an ellipsis first where it is cut (on a character boundary).
///
/// kwctl and policy-server hand the policy the host's error text, and under
/// `RUST_BACKTRACE=1` an anyhow error's text goes on with `Caused by:` and a
/// `Stack backtrace:` of dozens of lines. Quoted whole, it would push the
/// policy's advice off the end of a warning, and bloat every admission
/// response; its first line is the reason, and its end holds the status.
pub fn quote_host_error(error: &str) -> String {
    let line = first_line(error);
    let printable = |c: char| if c.is_control() { ' ' } else { c };
    let chars = line.chars().count();
    let tail: String = if chars <= HOST_ERROR_TAIL_CHARS {
        line.chars().map(printable).collect()
    } else {
        std::iter::once('…')
            .chain(
                line.chars()
                    .skip(chars - (HOST_ERROR_TAIL_CHARS - 1))
                    .map(printable),
            )
            .collect()
    };
    match HostErrorKind::of(line) {
        Some(kind) => format!("{kind} (host: {})", tail.trim()),
        None => tail,
    }
}

/// The meaning of a host error ([`HostErrorKind::of`] its first line).
pub(crate) fn host_error_kind(error: &str) -> Option<HostErrorKind> {
    HostErrorKind::of(first_line(error))
}

/// Whether granting the policy access could be the fix for `error`: the
/// host refused the read, or failed in words the policy cannot read. Not
/// for an object that is not there, or an API server out of reach or
/// failing.
pub(crate) fn access_may_fix(error: &str) -> bool {
    !matches!(
        host_error_kind(error),
        Some(
            HostErrorKind::NotFound
                | HostErrorKind::TimedOut
                | HostErrorKind::Unreachable
                | HostErrorKind::ServerError(_)
        )
    )
}

/// A host error's first line that says something: where kube-rs puts the
/// API status.
fn first_line(error: &str) -> &str {
    error
        .split(['\n', '\r'])
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or(NO_REASON)
}

/// Room for a request's JSON: both requests the policy makes fit.
const PAYLOAD_CAPACITY: usize = 192;

/// The JSON of `request`, as serde_json writes the SDK's struct (its fields
/// in order, `null` for `None`) but without serde's escaping loop over
/// every byte of strings that need no escaping.
pub fn list_payload(request: &ListAllResourcesRequest) -> String {
    let mut out = String::with_capacity(PAYLOAD_CAPACITY);
    out.push_str("{\"api_version\":");
    write_string(&request.api_version, &mut out);
    out.push_str(",\"kind\":");
    write_string(&request.kind, &mut out);
    out.push_str(",\"label_selector\":");
    write_optional(request.label_selector.as_deref(), &mut out);
    out.push_str(",\"field_selector\":");
    write_optional(request.field_selector.as_deref(), &mut out);
    out.push_str(",\"field_masks\":");
    write_masks(request.field_masks.as_ref(), &mut out);
    out.push('}');
    out
}

/// The JSON of `request`, as [`list_payload`] writes its request.
pub fn get_payload(request: &GetResourceRequest) -> String {
    let mut out = String::with_capacity(PAYLOAD_CAPACITY);
    out.push_str("{\"api_version\":");
    write_string(&request.api_version, &mut out);
    out.push_str(",\"kind\":");
    write_string(&request.kind, &mut out);
    out.push_str(",\"name\":");
    write_string(&request.name, &mut out);
    out.push_str(",\"namespace\":");
    write_optional(request.namespace.as_deref(), &mut out);
    out.push_str(if request.disable_cache {
        ",\"disable_cache\":true"
    } else {
        ",\"disable_cache\":false"
    });
    out.push_str(",\"field_masks\":");
    write_masks(request.field_masks.as_ref(), &mut out);
    out.push('}');
    out
}

fn write_optional(text: Option<&str>, out: &mut String) {
    match text {
        Some(text) => write_string(text, out),
        None => out.push_str("null"),
    }
}

fn write_masks(masks: Option<&BTreeSet<String>>, out: &mut String) {
    let Some(masks) = masks else {
        return out.push_str("null");
    };
    out.push('[');
    for (index, mask) in masks.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(mask, out);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::fleet_summary::summary_request;
    use crate::cluster::nodes::node_list_request;
    use crate::settings::FleetSummarySettings;
    use gpu_topology::LabelPrefix;
    use rstest::rstest;

    /// What kwctl hands the policy under `RUST_BACKTRACE=1`: an anyhow
    /// error's `{:?}`, with its causes and backtrace.
    const BACKTRACE_ERROR: &str = "Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111)\n\nCaused by:\n    0: error trying to connect\n    1: Connection refused (os error 111)\n\nStack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n             at /cargo/registry/src/anyhow-1.0.86/src/error.rs:83:36\n   1: policy_evaluator::runtimes::callback::host_callback\n";

    /// The 404 of a missing summary as kube-rs words it.
    const NOT_FOUND: &str = r#"ApiError: configmaps "gpu-topology-fleet" not found: NotFound (ErrorResponse { status: "Failure", message: "configmaps \"gpu-topology-fleet\" not found", reason: "NotFound", code: 404 })"#;

    #[rstest]
    #[case::not_found_as_the_harness_words_it(NOT_FOUND, Some(HostErrorKind::NotFound))]
    #[case::not_found_as_kwctl_words_it(
        &format!("Callback evaluation failure: {NOT_FOUND}"), Some(HostErrorKind::NotFound))]
    #[case::status_as_json(
        r#"{"kind":"Status","reason":"Forbidden","code":403}"#,
        Some(HostErrorKind::Forbidden)
    )]
    #[case::rbac_forbidden(r#"configmaps "x" is forbidden: User "system:serviceaccount:kubewarden:policy-server-default" cannot get resource"#, Some(HostErrorKind::Forbidden))]
    #[case::not_granted(
        "Policy has not been granted access to Kubernetes v1/ConfigMap resources.",
        Some(HostErrorKind::Forbidden)
    )]
    #[case::unauthorized(
        "Unauthorized (ErrorResponse { reason: \"Unauthorized\", code: 401 })",
        Some(HostErrorKind::Unauthorized)
    )]
    #[case::connection_refused(BACKTRACE_ERROR, Some(HostErrorKind::Unreachable))]
    #[case::timeout(
        "Cannot list v1/Node resources: operation timed out",
        Some(HostErrorKind::TimedOut)
    )]
    #[case::gateway_timeout(
        "ErrorResponse { reason: \"Timeout\", code: 504 }",
        Some(HostErrorKind::TimedOut)
    )]
    #[case::server_error(
        "ErrorResponse { reason: \"InternalError\", code: 503 }",
        Some(HostErrorKind::ServerError(503))
    )]
    #[case::other_status("ErrorResponse { reason: \"Conflict\", code: 409 }", None)]
    #[case::unknown_words("something else went wrong", None)]
    fn host_errors_are_read_for_their_meaning(
        #[case] line: &str,
        #[case] kind: Option<HostErrorKind>,
    ) {
        assert_eq!(HostErrorKind::of(line), kind);
    }

    #[rstest]
    #[case::meaning_then_the_tail(NOT_FOUND,
        r#"not found (HTTP 404) (host: …rResponse { status: "Failure", message: "configmaps \"gpu-topology-fleet\" not found", reason: "NotFound", code: 404 }))"#)]
    #[case::kwctl_prefix_changes_nothing_said(&format!("Callback evaluation failure: {NOT_FOUND}"),
        r#"not found (HTTP 404) (host: …rResponse { status: "Failure", message: "configmaps \"gpu-topology-fleet\" not found", reason: "NotFound", code: 404 }))"#)]
    #[case::not_granted("Policy has not been granted access to Kubernetes v1/ConfigMap resources.",
        "access denied (host: Policy has not been granted access to Kubernetes v1/ConfigMap resources.)")]
    #[case::anyhow_backtrace(BACKTRACE_ERROR,
        "the API server is unreachable (host: Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111))")]
    #[case::unknown_words_are_quoted_alone("something else", "something else")]
    #[case::leading_blank_lines("\n  \r\n  nodes went away  \nmore", "nodes went away")]
    #[case::carriage_return("gone\rStack backtrace:", "gone")]
    #[case::control_characters("a\tb\u{1b}[31mc", "a b [31mc")]
    #[case::empty("", NO_REASON)]
    #[case::blank("\n \n", NO_REASON)]
    fn host_errors_are_quoted_by_meaning_and_tail(#[case] error: &str, #[case] quoted: &str) {
        assert_eq!(quote_host_error(error), quoted);
    }

    /// (error, characters of the tail): cut on a character boundary, the
    /// first kept character an ellipsis, whatever the bytes per character.
    #[rstest]
    #[case::at_the_limit("x".repeat(HOST_ERROR_TAIL_CHARS), HOST_ERROR_TAIL_CHARS, false)]
    #[case::one_over("x".repeat(HOST_ERROR_TAIL_CHARS + 1), HOST_ERROR_TAIL_CHARS, true)]
    #[case::multibyte("µs ".repeat(HOST_ERROR_TAIL_CHARS), HOST_ERROR_TAIL_CHARS, true)]
    #[case::four_byte_characters("🙂".repeat(3 * HOST_ERROR_TAIL_CHARS), HOST_ERROR_TAIL_CHARS, true)]
    fn long_host_errors_keep_their_tail(
        #[case] error: String,
        #[case] chars: usize,
        #[case] cut: bool,
    ) {
        let quoted = quote_host_error(&error);
        assert_eq!(quoted.chars().count(), chars, "{quoted:?}");
        assert_eq!(quoted.starts_with('…'), cut);
        let kept = quoted.trim_start_matches('…');
        assert!(error.trim_end().ends_with(kept.trim()), "{quoted:?}");
    }

    fn masks(masks: &[&str]) -> Option<BTreeSet<String>> {
        Some(masks.iter().map(|mask| (*mask).to_owned()).collect())
    }

    #[rstest]
    #[case::the_node_list(node_list_request(&LabelPrefix::default()))]
    #[case::everything_set(ListAllResourcesRequest {
        api_version: "apps/v1".into(), kind: "Deployment".into(),
        label_selector: Some("a=\"b\"".into()), field_selector: Some("x\ny".into()),
        field_masks: masks(&["spec", "metadata.name"]) })]
    #[case::nothing_set(ListAllResourcesRequest {
        api_version: "v1".into(), kind: "Node".into(),
        label_selector: None, field_selector: None, field_masks: None })]
    #[case::no_masks_listed(ListAllResourcesRequest {
        api_version: "v1".into(), kind: "Node".into(),
        label_selector: None, field_selector: None, field_masks: masks(&[]) })]
    fn list_payloads_are_what_serde_writes(#[case] request: ListAllResourcesRequest) {
        assert_eq!(
            list_payload(&request),
            serde_json::to_string(&request).unwrap()
        );
    }

    #[rstest]
    #[case::the_summary(summary_request(&FleetSummarySettings::default()))]
    #[case::cluster_wide_uncached(GetResourceRequest {
        api_version: "v1".into(), kind: "Node".into(), name: "gpu-1".into(),
        namespace: None, disable_cache: true, field_masks: None })]
    #[case::escapes(GetResourceRequest {
        api_version: "v1".into(), kind: "ConfigMap".into(), name: "a\\b".into(),
        namespace: Some("\u{1}".into()), disable_cache: false, field_masks: masks(&["data"]) })]
    fn get_payloads_are_what_serde_writes(#[case] request: GetResourceRequest) {
        assert_eq!(
            get_payload(&request),
            serde_json::to_string(&request).unwrap()
        );
    }
}
