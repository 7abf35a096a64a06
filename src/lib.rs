//! gpu-topology-policy: a Kubewarden policy that makes GPU pods Guaranteed QoS
//! and steers them to nodes that can align their GPUs.
//!
//! This file only wires the waPC entry points; the decision lives in
//! [`evaluate`] and the modules it uses, all pure functions over JSON.

pub mod affinity;
pub mod capacity;
pub mod demand;
pub mod evaluate;
pub mod names;
pub mod nodes;
pub mod placement;
pub mod pod;
pub mod qos;
pub mod quantity;
pub mod settings;
pub mod workload;

use evaluate::{Decision, Verdict};
use kubewarden_policy_sdk::protocol_version_guest;
use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use kubewarden_policy_sdk::response::ValidationResponse;
use serde::Deserialize;
use wapc_guest::prelude::*;

#[no_mangle]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

/// The `validate` payload. Settings are read leniently here (`null` means
/// defaults); `validate_settings` has already refused invalid ones.
#[derive(Deserialize)]
struct Payload {
    #[serde(default)]
    settings: serde_json::Value,
    request: KubernetesAdmissionRequest,
}

/// The `validate` entry point: settings and admission request in, response out.
pub fn validate(payload: &[u8]) -> CallResult {
    let payload: Payload = serde_json::from_slice(payload)?;
    let config = settings::settings_from_value(payload.settings)
        .and_then(|settings| settings.config())
        .map_err(|message| anyhow::anyhow!("invalid settings: {message}"))?;
    let decision = evaluate::evaluate(&payload.request, &config);
    Ok(serde_json::to_vec(&response(decision))?)
}

/// The `validate_settings` entry point.
pub fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&settings::validation_response(payload))?)
}

/// The SDK's response for a decision, warnings included.
pub fn response(decision: Decision) -> ValidationResponse {
    let (accepted, message, mutated_object) = match decision.verdict {
        Verdict::Accept => (true, None, None),
        Verdict::Mutate(object) => (true, None, Some(object)),
        Verdict::Reject(message) => (false, Some(message), None),
    };
    ValidationResponse {
        accepted,
        message,
        code: None,
        mutated_object,
        audit_annotations: None,
        warnings: (!decision.warnings.is_empty()).then_some(decision.warnings),
    }
}
