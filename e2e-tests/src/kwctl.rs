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

/// What one `kwctl run` evaluates: the module, a request file, and
/// optionally a settings file and a recorded cluster.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    pub module: &'a Path,
    pub request_path: &'a Path,
    /// `--settings-path`; without it kwctl passes the policy empty settings.
    pub settings_path: Option<&'a Path>,
    /// A kwctl session file replayed as the cluster.
    pub session_path: Option<&'a Path>,
}

/// kwctl's arguments after `run` for `invocation` (kwctl `cli.rs`,
/// `run_args`): with a session, `--replay-host-capabilities-interactions
/// FILE` answers the host calls from the file, and `--allow-context-aware`
/// grants the resources the annotated module's metadata lists (without it
/// kwctl grants none); `extra` comes before the module.
pub fn run_arguments(invocation: &Invocation, extra: &str) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "run".into(),
        "--request-path".into(),
        invocation.request_path.into(),
    ];
    if let Some(settings) = invocation.settings_path {
        args.extend(["--settings-path".into(), settings.into()]);
    }
    if let Some(session) = invocation.session_path {
        args.extend([
            "--replay-host-capabilities-interactions".into(),
            session.into(),
            "--allow-context-aware".into(),
        ]);
    }
    args.extend(extra.split_whitespace().map(Into::into));
    args.push(invocation.module.into());
    args
}

/// Runs `kwctl run` for one request (`request`, read from
/// `invocation.request_path`).
pub fn run(kwctl: &Path, invocation: &Invocation, request: &Value) -> Result<Outcome> {
    let extra = std::env::var(KWCTL_ARGS_ENV).unwrap_or_default();
    let output = Command::new(kwctl)
        .args(run_arguments(invocation, &extra))
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
    use rstest::rstest;
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

    #[rstest]
    #[case::settings_only(
        Some("settings.yaml"),
        None,
        "",
        "run --request-path pod.json --settings-path settings.yaml policy.wasm"
    )]
    #[case::replayed_cluster(
        Some("settings.yaml"),
        Some("fleet.yml"),
        "--sigstore-trust-config trust.json",
        "run --request-path pod.json --settings-path settings.yaml \
         --replay-host-capabilities-interactions fleet.yml --allow-context-aware \
         --sigstore-trust-config trust.json policy.wasm"
    )]
    #[case::defaults(None, None, "", "run --request-path pod.json policy.wasm")]
    fn arguments(
        #[case] settings: Option<&str>,
        #[case] session: Option<&str>,
        #[case] extra: &str,
        #[case] expected: &str,
    ) {
        let invocation = Invocation {
            module: Path::new("policy.wasm"),
            request_path: Path::new("pod.json"),
            settings_path: settings.map(Path::new),
            session_path: session.map(Path::new),
        };
        let args: Vec<String> = run_arguments(&invocation, extra)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            expected.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(outcome_from_output(&json!({}), "Error: boom").is_err());
    }
}
