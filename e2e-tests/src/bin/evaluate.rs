//! `evaluate`: the demo. Evaluates admission request files with the built
//! policy, exactly as Kubewarden would, and prints for each one the decision,
//! the message and the patch as `field: before -> after` lines.
//!
//! Usage: evaluate [--settings FILE] [--module FILE] [--kwctl PATH] [--json] REQUEST.json...
//!   --settings  YAML/JSON settings (default: none, the policy's defaults)
//!   --module    the policy (default: $POLICY_WASM or <repo>/policy.wasm)
//!   --kwctl     evaluate through `kwctl run` (this binary) instead of the
//!               built-in wasmtime harness; KWCTL_ARGS adds arguments to it
//!   --json      print the AdmissionResponse JSON, as `kwctl run` does
//! kwctl is only ever taken from the flag, never from the environment, so a
//! kwctl stand-in built on this binary cannot call itself.

use anyhow::{bail, Context, Result};
use e2e_tests::scenario::load_settings;
use e2e_tests::{kwctl, load_request, policy_wasm_path, readable, HostCapabilities, PolicyModule};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

struct Args {
    settings: Option<PathBuf>,
    module: PathBuf,
    kwctl: Option<PathBuf>,
    json: bool,
    requests: Vec<PathBuf>,
}

const USAGE: &str =
    "usage: evaluate [--settings FILE] [--module FILE] [--kwctl PATH] [--json] REQUEST.json...";

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        settings: None,
        module: policy_wasm_path(),
        kwctl: None,
        json: false,
        requests: Vec::new(),
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--settings" => parsed.settings = args.next().map(PathBuf::from),
            "--module" => {
                parsed.module = args
                    .next()
                    .map(PathBuf::from)
                    .context("--module needs a file")?
            }
            "--kwctl" => {
                parsed.kwctl = Some(
                    args.next()
                        .map(PathBuf::from)
                        .context("--kwctl needs a path")?,
                )
            }
            "--json" => parsed.json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => parsed.requests.push(PathBuf::from(arg)),
        }
    }
    if parsed.requests.is_empty() {
        bail!("no request files given ({USAGE})");
    }
    Ok(parsed)
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let settings = match &args.settings {
        Some(path) => load_settings(path)?,
        None => Value::Object(serde_json::Map::new()),
    };
    if let Some(kwctl_path) = &args.kwctl {
        let settings_path = args
            .settings
            .clone()
            .context("kwctl needs --settings FILE")?;
        println!(
            "engine: {} run, module {}\n",
            kwctl_path.display(),
            args.module.display()
        );
        for path in &args.requests {
            let request = load_request(path)?;
            let outcome = kwctl::run(kwctl_path, &args.module, path, &request, &settings_path)?;
            println!(
                "{}",
                readable::report(&path.display().to_string(), &request, &outcome)
            );
        }
        return Ok(());
    }
    let module = PolicyModule::load(&args.module)?;
    if args.json {
        return print_admission_responses(&module, &settings, &args.requests);
    }
    println!(
        "engine: waPC on wasmtime (the e2e harness), module {} ({} bytes)",
        args.module.display(),
        module.size_bytes()
    );
    let policy = module.instantiate(Arc::new(HostCapabilities::none()))?;
    policy.protocol_version()?;
    let verdict = policy.validate_settings(&settings)?;
    if !verdict.valid {
        bail!("settings refused: {}", verdict.message.unwrap_or_default());
    }
    println!(
        "settings: {} (valid)\n",
        args.settings
            .as_ref()
            .map_or("defaults".into(), |p| p.display().to_string())
    );
    for path in &args.requests {
        let request = load_request(path)?;
        let outcome = policy
            .validate(&request, &settings)
            .with_context(|| format!("evaluating {}", path.display()))?;
        println!(
            "{}",
            readable::report(&path.display().to_string(), &request, &outcome)
        );
    }
    Ok(())
}

/// `--json`: one AdmissionResponse per line, kwctl's output format.
fn print_admission_responses(
    module: &PolicyModule,
    settings: &Value,
    requests: &[PathBuf],
) -> Result<()> {
    let policy = module.instantiate(Arc::new(HostCapabilities::none()))?;
    let verdict = policy.validate_settings(settings)?;
    if !verdict.valid {
        bail!(
            "Provided settings are not valid: {:?}",
            verdict.message.unwrap_or_default()
        );
    }
    for path in requests {
        let request = load_request(path)?;
        let outcome = policy.validate(&request, settings)?;
        let uid = request
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        println!("{}", outcome.admission_response(uid));
    }
    Ok(())
}
