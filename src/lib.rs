//! gpu-topology-policy: a Kubewarden policy that makes GPU pods Guaranteed QoS
//! and steers them to nodes that can align their GPUs.
//!
//! This file only wires the waPC entry points; the decision lives in
//! [`decide`] and the modules it uses, all pure functions over JSON.

pub mod cluster;
pub mod decide;
pub mod json;
pub mod request;
pub mod response;
pub mod settings;
pub mod small_blocks;

use kubewarden_policy_sdk::protocol_version_guest;
use request::Payload;
use wapc_guest::prelude::*;

/// Wasm's system allocator is slow for the many small blocks one evaluation
/// uses; see [`small_blocks`].
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: small_blocks::SmallBlocks = small_blocks::SmallBlocks::new();

#[no_mangle]
pub extern "C" fn wapc_init() {
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function("protocol_version", protocol_version_guest);
}

/// The `validate` entry point: settings and admission request in, response
/// out. Settings are read leniently here (`null` means defaults);
/// `validate_settings` has already refused invalid ones.
pub fn validate(payload: &[u8]) -> CallResult {
    let payload = Payload::parse(payload)?;
    let config = settings::parse_settings(payload.settings.unwrap_or("null").as_bytes())
        .and_then(|settings| settings.config())
        .map_err(|message| anyhow::anyhow!("invalid settings: {message}"))?;
    let decision = decide::evaluate(&payload.request, &config);
    Ok(response::to_bytes(&decision))
}

/// The `validate_settings` entry point.
pub fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(serde_json::to_vec(&settings::validation_response(payload))?)
}
