//! What the policy reads from the cluster, through Kubewarden's host
//! capabilities (the `kubewarden` binding's `kubernetes` namespace).
//!
//! A thin adapter behind [`ClusterReader`], so that native tests answer from
//! recorded sessions. Answers are handed over as raw JSON: the readers
//! ([`crate::cluster::nodes`], [`crate::cluster::fleet_summary`]) take only what they need from
//! it, where the SDK's helpers would deserialise whole Kubernetes objects.

use crate::cluster::ClusterRead;
use crate::response::json_write::write_string;
use crate::settings::FleetSources;
use gpu_topology::LabelPrefix;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use std::collections::BTreeSet;

/// Reads the cluster: the Kubewarden host in Wasm, recordings in native tests.
pub trait ClusterReader {
    /// The raw JSON list answering `request` (`list_resources_all`), or why
    /// there is none.
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String>;

    /// The raw JSON object answering `request` (`get_resource`), or why there
    /// is none.
    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String>;

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
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Self::call("list_resources_all", &list_payload(request))
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Self::call("get_resource", &get_payload(request))
    }
}

/// The most characters of a host error that a warning quotes: room for the
/// API server's reasons (`configmaps "gpu-topology-fleet" is forbidden: User
/// "system:serviceaccount:kubewarden:policy-server-default" cannot get
/// resource ...`), and short enough that the policy's advice after it is
/// still read.
pub const HOST_ERROR_MAX_CHARS: usize = 200;

/// What a warning says of an empty host error.
const NO_REASON: &str = "the host gave no reason";

/// A host capability's error as a warning quotes it: its first line that is
/// not blank, control characters as spaces, cut to [`HOST_ERROR_MAX_CHARS`]
/// characters (the last one an ellipsis) on a character boundary.
///
/// kwctl and policy-server hand the policy the host's error text, and under
/// `RUST_BACKTRACE=1` an anyhow error's text goes on with `Caused by:` and a
/// `Stack backtrace:` of dozens of lines. Quoted whole, it would push the
/// policy's advice off the end of a warning, and bloat every admission
/// response; its first line is the reason.
pub fn quote_host_error(error: &str) -> String {
    let line = error
        .split(['\n', '\r'])
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or(NO_REASON);
    let printable = |c: char| if c.is_control() { ' ' } else { c };
    if line.chars().nth(HOST_ERROR_MAX_CHARS).is_none() {
        return line.chars().map(printable).collect();
    }
    let mut quoted: String = line
        .chars()
        .take(HOST_ERROR_MAX_CHARS - 1)
        .map(printable)
        .collect();
    quoted.push('…');
    quoted
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

    #[rstest]
    #[case::one_line(
        "Policy has not been granted access to Kubernetes v1/ConfigMap resources.",
        "Policy has not been granted access to Kubernetes v1/ConfigMap resources."
    )]
    #[case::anyhow_backtrace(BACKTRACE_ERROR,
        "Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111)")]
    #[case::leading_blank_lines("\n  \r\n  nodes is forbidden  \nmore", "nodes is forbidden")]
    #[case::carriage_return("refused\rStack backtrace:", "refused")]
    #[case::control_characters("a\tb\u{1b}[31mc", "a b [31mc")]
    #[case::empty("", NO_REASON)]
    #[case::blank("\n \n", NO_REASON)]
    fn host_errors_are_quoted_by_their_first_line(#[case] error: &str, #[case] quoted: &str) {
        assert_eq!(quote_host_error(error), quoted);
    }

    /// (error, characters quoted): cut on a character boundary, the last
    /// quoted character an ellipsis, whatever the bytes per character.
    #[rstest]
    #[case::at_the_limit("x".repeat(HOST_ERROR_MAX_CHARS), HOST_ERROR_MAX_CHARS, false)]
    #[case::one_over("x".repeat(HOST_ERROR_MAX_CHARS + 1), HOST_ERROR_MAX_CHARS, true)]
    #[case::multibyte("µs ".repeat(HOST_ERROR_MAX_CHARS), HOST_ERROR_MAX_CHARS, true)]
    #[case::four_byte_characters("🙂".repeat(3 * HOST_ERROR_MAX_CHARS), HOST_ERROR_MAX_CHARS, true)]
    fn long_host_errors_are_cut(#[case] error: String, #[case] chars: usize, #[case] cut: bool) {
        let quoted = quote_host_error(&error);
        assert_eq!(quoted.chars().count(), chars);
        assert_eq!(quoted.ends_with('…'), cut);
        let kept = quoted.trim_end_matches('…');
        assert!(error.starts_with(kept.trim_end()), "{quoted:?}");
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
