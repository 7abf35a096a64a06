//! `--settings FILE`: the policy's settings, or the Kubewarden policy
//! manifest that carries them.
//!
//! The file holds either the settings mapping itself (what `kwctl run
//! --settings-path` reads) or a `ClusterAdmissionPolicy`/`AdmissionPolicy`
//! (`policies.kubewarden.io/*`), whose `spec.settings` are used. They are
//! read and refused by the policy's own code, with its words: the message
//! names the key exactly as `validate_settings` does.

use crate::input::{read_value, InputError};
use gpu_topology_policy::settings::{settings_from_value, Config};
use serde_json::Value;
use std::fmt;
use std::path::Path;

/// The API group of Kubewarden's policy resources.
const POLICY_GROUP: &str = "policies.kubewarden.io";
/// The policy kinds whose `spec.settings` are the policy's settings.
const POLICY_KINDS: [&str; 2] = ["ClusterAdmissionPolicy", "AdmissionPolicy"];

/// The settings in force: as written (what the module is handed) and as
/// the policy reads them.
#[derive(Debug, Clone)]
pub struct PolicySettings {
    /// The settings JSON (`null`: none given, the defaults).
    pub raw: Value,
    pub config: Config,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            raw: Value::Null,
            config: Config::default(),
        }
    }
}

/// Why the settings are not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsError {
    /// The file cannot be read, or is not YAML.
    Input(InputError),
    /// The policy refuses the settings: `validate_settings`' message.
    Invalid { file: String, message: String },
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::Input(error) => error.fmt(f),
            SettingsError::Invalid { file, message } => {
                write!(f, "{file}: the policy refuses these settings: {message}")
            }
        }
    }
}

impl std::error::Error for SettingsError {}

/// The settings in `path`, or the defaults when there is none.
pub fn load(path: Option<&Path>) -> Result<PolicySettings, SettingsError> {
    let Some(path) = path else {
        return Ok(PolicySettings::default());
    };
    let value = read_value(path).map_err(SettingsError::Input)?;
    from_value(value).map_err(|message| SettingsError::Invalid {
        file: path.display().to_string(),
        message,
    })
}

/// The settings a file's value stands for, checked as `validate_settings`
/// checks them (`parse_settings` then `Settings::config`); `Err` is its
/// message.
pub fn from_value(value: Value) -> Result<PolicySettings, String> {
    let raw = settings_of(value);
    let config = settings_from_value(raw.clone())?.config()?;
    Ok(PolicySettings { raw, config })
}

/// A policy manifest's `spec.settings` (absent: `null`, the defaults), or
/// the value itself when it is not a policy manifest.
pub fn settings_of(value: Value) -> Value {
    if !is_policy_manifest(&value) {
        return value;
    }
    value
        .get("spec")
        .and_then(|spec| spec.get("settings"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn is_policy_manifest(value: &Value) -> bool {
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    let group = text("apiVersion").split('/').next().unwrap_or_default();
    group == POLICY_GROUP && POLICY_KINDS.contains(&text("kind"))
}
