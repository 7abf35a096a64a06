//! `kwctl run` as an alternative host: runs the module through the real kwctl
//! and reads its AdmissionResponse back into an [`Outcome`].

use crate::admission::Outcome;
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Extra kwctl arguments, whitespace-separated (e.g. `--sigstore-trust-config FILE`
/// on machines that cannot fetch the Sigstore trust root).
pub const KWCTL_ARGS_ENV: &str = "KWCTL_ARGS";

/// The AdmissionResponse `kwctl run` prints on stdout.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionResponse {
    allowed: bool,
    patch: Option<String>,
    status: Option<Status>,
    warnings: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct Status {
    message: Option<String>,
    code: Option<u16>,
}

/// Decodes kwctl's output for `request` (the AdmissionRequest evaluated).
pub fn outcome_from_output(request: &Value, stdout: &str) -> Result<Outcome> {
    let response: AdmissionResponse = serde_json::from_str(stdout.trim())
        .with_context(|| format!("kwctl printed no AdmissionResponse: {stdout}"))?;
    let patch: Option<json_patch::Patch> = response
        .patch
        .map(|encoded| -> Result<json_patch::Patch> {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .context("kwctl's patch is not base64")?;
            serde_json::from_slice(&bytes).context("kwctl's patch is not a JSON patch")
        })
        .transpose()?;
    let patched_object = match (&patch, request.get("object")) {
        (Some(patch), Some(object)) => {
            let mut patched = object.clone();
            json_patch::patch(&mut patched, patch).context("kwctl's patch does not apply")?;
            Some(patched)
        }
        _ => None,
    };
    let (message, code) = response
        .status
        .map_or((None, None), |status| (status.message, status.code));
    Ok(Outcome {
        allowed: response.allowed,
        message,
        code,
        warnings: response.warnings.unwrap_or_default(),
        patch,
        patched_object,
    })
}

/// Runs `kwctl run` on `module` for one request file.
pub fn run(
    kwctl: &Path,
    module: &Path,
    request_path: &Path,
    request: &Value,
    settings_path: &Path,
) -> Result<Outcome> {
    let extra = std::env::var(KWCTL_ARGS_ENV).unwrap_or_default();
    let output = Command::new(kwctl)
        .arg("run")
        .arg("--request-path")
        .arg(request_path)
        .arg("--settings-path")
        .arg(settings_path)
        .args(extra.split_whitespace())
        .arg(module)
        .output()
        .map_err(|e| anyhow!("cannot run {}: {e}", kwctl.display()))?;
    if !output.status.success() {
        bail!(
            "kwctl run failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    outcome_from_output(request, &String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_patch_and_status() {
        let request = json!({"object": {"spec": {"a": 1}}});
        let patch = r#"[{"op":"replace","path":"/spec/a","value":2}]"#;
        let stdout = json!({
            "uid": "1", "allowed": true, "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch),
            "warnings": ["careful"]
        })
        .to_string();
        let outcome = outcome_from_output(&request, &stdout).unwrap();
        assert!(outcome.allowed);
        assert_eq!(outcome.patched_object, Some(json!({"spec": {"a": 2}})));
        assert_eq!(outcome.warnings, vec!["careful".to_owned()]);
    }

    #[test]
    fn decodes_rejection() {
        let stdout = r#"{"uid":"1","allowed":false,"status":{"message":"no fit","code":400}}"#;
        let outcome = outcome_from_output(&json!({}), stdout).unwrap();
        assert!(!outcome.allowed);
        assert_eq!(outcome.message.as_deref(), Some("no fit"));
        assert_eq!(outcome.code, Some(400));
        assert!(outcome.patch.is_none());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(outcome_from_output(&json!({}), "Error: boom").is_err());
    }
}
