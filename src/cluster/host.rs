//! What the policy reads from the cluster, through Kubewarden's host
//! capabilities (the `kubewarden` binding's `kubernetes` namespace).
//!
//! A thin adapter behind [`ClusterReader`], so that native tests answer from
//! recorded sessions. Answers are handed over as raw JSON: the readers
//! ([`crate::cluster::nodes`], [`crate::cluster::fleet_summary`]) take only what they need from
//! it, where the SDK's helpers would deserialise whole Kubernetes objects.

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};

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
    fn call(operation: &str, request: &impl serde::Serialize) -> Result<Vec<u8>, String> {
        let payload = serde_json::to_vec(request).map_err(|error| error.to_string())?;
        wapc_guest::host_call("kubewarden", "kubernetes", operation, &payload)
            .map_err(|error| error.to_string())
    }
}

impl ClusterReader for KubewardenHost {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Self::call("list_resources_all", request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Self::call("get_resource", request)
    }
}
