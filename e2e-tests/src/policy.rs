//! Loading `policy.wasm` and calling it over waPC on wasmtime with WASI, the
//! way Kubewarden's policy-evaluator does (`WasmtimeEngineProviderPre`, one
//! `WapcHost` per evaluation context, the host callback of [`crate::host`]).
//!
//! Every failure names its cause: a missing module, a trap, a guest error, or a
//! response that is not the JSON the protocol requires.

use crate::admission::{Outcome, ValidationResponse};
use crate::host::HostCapabilities;
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use wapc::WapcHost;
use wasmtime_provider::{WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

/// Environment variable naming the module to test.
pub const POLICY_WASM_ENV: &str = "POLICY_WASM";

/// How wasmtime words a trap in the error that reaches the waPC host.
const TRAP_MARKER: &str = "wasm backtrace";

/// The only waPC protocol version Kubewarden accepts.
pub const PROTOCOL_VERSION: &str = "v1";

/// The repository root (the parent of this crate).
pub fn repo_root() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir.parent().unwrap_or(crate_dir).to_path_buf()
}

/// `$POLICY_WASM`, or `<repo>/policy.wasm`.
pub fn policy_wasm_path() -> PathBuf {
    std::env::var_os(POLICY_WASM_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("policy.wasm"))
}

/// A compiled policy module, ready to be instantiated many times.
pub struct PolicyModule {
    pre: WasmtimeEngineProviderPre,
    size_bytes: usize,
}

impl PolicyModule {
    /// Reads and compiles the module at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        if !path.exists() {
            bail!(
                "{} does not exist: run `make policy.wasm` first (or set {POLICY_WASM_ENV})",
                path.display()
            );
        }
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::compile(&bytes).with_context(|| format!("cannot load {}", path.display()))
    }

    /// Compiles a module (binary Wasm, or WAT text for protocol tests).
    pub fn compile(bytes: &[u8]) -> Result<Self> {
        let pre = WasmtimeEngineProviderBuilder::new()
            .module_bytes(bytes)
            .build_pre()
            .map_err(|e| anyhow!("wasmtime cannot compile the module: {e}"))?;
        Ok(Self {
            pre,
            size_bytes: bytes.len(),
        })
    }

    /// The compiled module's size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }

    /// A fresh instance whose host calls are served by `capabilities`.
    pub fn instantiate(&self, capabilities: Arc<HostCapabilities>) -> Result<Policy> {
        let engine = self
            .pre
            .rehydrate(None)
            .map_err(|e| anyhow!("cannot instantiate the module: {e}"))?;
        let served = Arc::clone(&capabilities);
        let host = WapcHost::new(
            Box::new(engine),
            Some(Box::new(
                move |_id, binding, namespace, operation, payload| {
                    served.handle(binding, namespace, operation, payload)
                },
            )),
        )
        .map_err(|e| anyhow!("waPC initialisation (wapc_init) failed: {e}"))?;
        Ok(Policy { host, capabilities })
    }
}

/// The module at [`policy_wasm_path`], compiled once per process.
pub fn shared_module() -> Result<&'static PolicyModule> {
    static MODULE: OnceLock<Result<PolicyModule, String>> = OnceLock::new();
    MODULE
        .get_or_init(|| PolicyModule::load(&policy_wasm_path()).map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow!("{e}"))
}

/// The answer to `validate_settings`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SettingsValidation {
    pub valid: bool,
    pub message: Option<String>,
}

/// The `validate` payload: `{"request": ..., "settings": ...}`.
#[derive(Serialize)]
struct ValidatePayload<'a> {
    request: &'a Value,
    settings: &'a Value,
}

/// Serialises the `validate` payload once, e.g. outside a benchmark loop.
pub fn validate_payload(request: &Value, settings: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(&ValidatePayload { request, settings })
        .context("cannot serialise the validate payload")
}

/// One instantiated policy.
pub struct Policy {
    host: WapcHost,
    capabilities: Arc<HostCapabilities>,
}

impl Policy {
    /// The host capabilities this instance is served by.
    pub fn capabilities(&self) -> &HostCapabilities {
        &self.capabilities
    }

    /// A raw waPC call. Traps and guest errors become errors naming the operation.
    pub fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>> {
        self.host.call(operation, payload).map_err(|e| {
            let text = e.to_string();
            // wasmtime-provider keeps only the backtrace of a trap, not its kind.
            let hint = if text.contains(TRAP_MARKER) {
                " (a Wasm trap: in a Rust policy, a panic, whose message the guest \
                 printed on stderr)"
            } else {
                ""
            };
            anyhow!("waPC call `{operation}` failed{hint}: {text}")
        })
    }

    /// Calls `protocol_version` and checks it is the one Kubewarden speaks.
    pub fn protocol_version(&self) -> Result<String> {
        let raw = self.call("protocol_version", &[])?;
        let version: String = parse("protocol_version", &raw)?;
        if version != PROTOCOL_VERSION {
            bail!(
                "protocol_version answered {version:?}, Kubewarden requires {PROTOCOL_VERSION:?}"
            );
        }
        Ok(version)
    }

    /// Calls `validate_settings` with the settings JSON.
    pub fn validate_settings(&self, settings: &Value) -> Result<SettingsValidation> {
        let payload = serde_json::to_vec(settings).context("cannot serialise the settings")?;
        parse(
            "validate_settings",
            &self.call("validate_settings", &payload)?,
        )
    }

    /// Calls `validate` with a payload built by [`validate_payload`].
    pub fn validate_raw(&self, payload: &[u8]) -> Result<ValidationResponse> {
        parse("validate", &self.call("validate", payload)?)
    }

    /// Calls `validate` and turns the answer into what the API server receives.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<Outcome> {
        let response = self.validate_raw(&validate_payload(request, settings)?)?;
        Ok(Outcome::new(request, response))
    }
}

/// Parses a guest response, naming the operation and showing the bytes on failure.
fn parse<T: serde::de::DeserializeOwned>(operation: &str, raw: &[u8]) -> Result<T> {
    serde_json::from_slice(raw).map_err(|e| {
        anyhow!(
            "malformed `{operation}` response ({e}): {}",
            String::from_utf8_lossy(raw)
        )
    })
}
