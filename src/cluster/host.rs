//! What the policy reads from the cluster, through Kubewarden's host
//! capabilities (the `kubewarden` binding's `kubernetes` namespace).
//!
//! A thin adapter behind [`ClusterReader`], so that native tests answer from
//! recorded sessions. Answers are handed over as raw JSON: the readers
//! ([`crate::cluster::nodes`], [`crate::cluster::fleet_summary`]) take only what they need from
//! it, where the SDK's helpers would deserialise whole Kubernetes objects.

use crate::response::json_write::write_string;
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
