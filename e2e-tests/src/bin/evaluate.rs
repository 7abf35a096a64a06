//! `evaluate`: the demo. Evaluates admission request files with the built
//! policy, exactly as Kubewarden would, and prints for each one the decision,
//! the message, the warnings and the patch as `field: before -> after` lines
//! (and, for a Pod given node affinity, that affinity with its shapes named).
//!
//! Usage:
//!
//! ```text
//! evaluate [ENGINE] --plan FILE
//! evaluate [ENGINE] [--settings FILE] [--session FILE] [--json] REQUEST.json...
//! ```
//!
//!   --plan      the runs of a plan file (`make demo`: examples/demo.yaml;
//!               see `e2e_tests::demo`), each with its title, settings,
//!               optional session and requests
//!   --settings  YAML/JSON settings (default: none, the policy's defaults)
//!   --session   a kwctl session file replayed as the cluster: the policy is
//!               granted the `contextAwareResources` of policy-metadata.yml,
//!               as `kwctl run --allow-context-aware` grants an annotated
//!               module's; without it the policy gets no cluster access
//!   --json      print the AdmissionResponse JSON, as `kwctl run` does
//! ENGINE:
//!   --module    the policy (default: $POLICY_WASM or <repo>/policy.wasm;
//!               under --kwctl with a session, pass the annotated module)
//!   --kwctl     evaluate through `kwctl run` (this binary) instead of the
//!               built-in wasmtime harness; KWCTL_ARGS adds arguments to it
//! kwctl is only ever taken from the flag, never from the environment, so a
//! kwctl stand-in built on this binary cannot call itself.

use anyhow::{bail, Context, Result};
use e2e_tests::demo::{self, Run};
use e2e_tests::host::ContextAwareResource;
use e2e_tests::kwctl::{self, Invocation};
use e2e_tests::scenario::load_settings;
use e2e_tests::{
    load_request, policy_wasm_path, readable, repo_root, HostCapabilities, Outcome, PolicyModule,
    Session,
};
use gpu_topology::LabelPrefix;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the policy's settings name its label prefix.
const LABEL_PREFIX_SETTING: &str = "labelPrefix";

struct Args {
    plan: Option<PathBuf>,
    settings: Option<PathBuf>,
    session: Option<PathBuf>,
    module: PathBuf,
    kwctl: Option<PathBuf>,
    json: bool,
    requests: Vec<PathBuf>,
}

const USAGE: &str = "usage: evaluate [--module FILE] [--kwctl PATH] --plan FILE\n       \
     evaluate [--module FILE] [--kwctl PATH] [--settings FILE] [--session FILE] [--json] REQUEST.json...";

fn parse_args() -> Result<Args> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        plan: None,
        settings: None,
        session: None,
        module: policy_wasm_path(),
        kwctl: None,
        json: false,
        requests: Vec::new(),
    };
    let value = |flag: &str, args: &mut dyn Iterator<Item = String>| {
        args.next()
            .map(PathBuf::from)
            .with_context(|| format!("{flag} needs a file ({USAGE})"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--plan" => parsed.plan = Some(value("--plan", &mut args)?),
            "--settings" => parsed.settings = Some(value("--settings", &mut args)?),
            "--session" => parsed.session = Some(value("--session", &mut args)?),
            "--module" => parsed.module = value("--module", &mut args)?,
            "--kwctl" => parsed.kwctl = Some(value("--kwctl", &mut args)?),
            "--json" => parsed.json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            flag if flag.starts_with("--") => bail!("unknown option {flag} ({USAGE})"),
            _ => parsed.requests.push(PathBuf::from(arg)),
        }
    }
    if parsed.plan.is_some() {
        if parsed.settings.is_some() || parsed.session.is_some() || !parsed.requests.is_empty() {
            bail!("--plan names its own settings, sessions and requests ({USAGE})");
        }
    } else if parsed.requests.is_empty() {
        bail!("no request files given ({USAGE})");
    }
    if parsed.json && (parsed.plan.is_some() || parsed.kwctl.is_some()) {
        bail!("--json prints the harness's answers to request files ({USAGE})");
    }
    Ok(parsed)
}

/// The runs the arguments ask for: a plan's, or one made of the flags.
fn runs(args: &Args) -> Result<Vec<Run>> {
    if let Some(plan) = &args.plan {
        return demo::load_plan(plan);
    }
    Ok(vec![Run {
        title: String::new(),
        session: args.session.as_deref().map(Session::load).transpose()?,
        session_path: args.session.clone(),
        settings: match &args.settings {
            Some(path) => load_settings(path)?,
            None => Value::Object(serde_json::Map::new()),
        },
        settings_path: args.settings.clone(),
        requests: args.requests.clone(),
    }])
}

/// Who evaluates: the built-in harness or a real `kwctl run`.
enum Engine {
    Harness {
        // Boxed: a compiled module is far larger than the kwctl variant.
        module: Box<PolicyModule>,
        /// What a session run may read (policy-metadata.yml).
        granted: BTreeSet<ContextAwareResource>,
    },
    Kwctl {
        kwctl: PathBuf,
        module: PathBuf,
    },
}

impl Engine {
    fn new(args: &Args) -> Result<Self> {
        Ok(match &args.kwctl {
            Some(kwctl) => Engine::Kwctl {
                kwctl: kwctl.clone(),
                module: args.module.clone(),
            },
            None => Engine::Harness {
                module: Box::new(PolicyModule::load(&args.module)?),
                granted: demo::granted_resources(&repo_root().join("policy-metadata.yml"))?,
            },
        })
    }

    fn describe(&self, module: &Path) -> String {
        match self {
            Engine::Harness { module: loaded, .. } => format!(
                "engine: waPC on wasmtime (the e2e harness), module {} ({} bytes)",
                module.display(),
                loaded.size_bytes()
            ),
            Engine::Kwctl { kwctl, .. } => {
                format!(
                    "engine: {} run, module {}",
                    kwctl.display(),
                    module.display()
                )
            }
        }
    }

    /// The harness's host for one evaluation: a fresh replay of the session
    /// (each `kwctl run` replays its session from the start, too).
    fn capabilities(granted: &BTreeSet<ContextAwareResource>, run: &Run) -> HostCapabilities {
        match &run.session {
            Some(session) => HostCapabilities::new(granted.clone(), Some(session)),
            None => HostCapabilities::none(),
        }
    }

    /// Refuses settings the policy refuses, before any request (kwctl checks
    /// them itself on every run and fails with the policy's message).
    fn check_settings(&self, run: &Run) -> Result<&'static str> {
        let Engine::Harness { module, granted } = self else {
            return Ok("checked by kwctl on every run");
        };
        let policy = module.instantiate(Arc::new(Self::capabilities(granted, run)))?;
        policy.protocol_version()?;
        let verdict = policy.validate_settings(&run.settings)?;
        if !verdict.valid {
            bail!(
                "Provided settings are not valid: {:?}",
                verdict.message.unwrap_or_default()
            );
        }
        Ok("valid")
    }

    /// Evaluates one request; the second value counts recorded answers the
    /// policy never asked for (the harness only).
    fn evaluate(&self, run: &Run, path: &Path, request: &Value) -> Result<(Outcome, usize)> {
        match self {
            Engine::Harness { module, granted } => {
                let policy = module.instantiate(Arc::new(Self::capabilities(granted, run)))?;
                let outcome = policy
                    .validate(request, &run.settings)
                    .with_context(|| format!("evaluating {}", path.display()))?;
                Ok((outcome, policy.capabilities().unreplayed_exchanges()))
            }
            Engine::Kwctl { kwctl, module } => {
                let invocation = Invocation {
                    module,
                    request_path: path,
                    settings_path: run.settings_path.as_deref(),
                    session_path: run.session_path.as_deref(),
                };
                Ok((kwctl::run(kwctl, &invocation, request)?, 0))
            }
        }
    }
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let runs = runs(&args)?;
    let engine = Engine::new(&args)?;
    if args.json {
        return print_admission_responses(&engine, &runs);
    }
    println!("{}", engine.describe(&args.module));
    for (index, run) in runs.iter().enumerate() {
        print_run(&engine, run, index + 1, runs.len())?;
    }
    Ok(())
}

/// One run: its title, what it replays, its settings, then each request.
fn print_run(engine: &Engine, run: &Run, number: usize, runs: usize) -> Result<()> {
    if !run.title.is_empty() {
        println!("\n=== {number}/{runs}. {} ===", run.title);
    }
    let names = match (&run.session, &run.session_path) {
        (Some(session), Some(path)) => {
            let answers = demo::session_answers(session, &label_prefix(&run.settings)?)?;
            for line in demo::session_header(path, &answers) {
                println!("{line}");
            }
            demo::shape_names(&answers)
        }
        _ => {
            println!(
                "No cluster view: no session, so the policy is granted no cluster access \
                 (as `kwctl run` without --allow-context-aware) and cannot check the GPU fit."
            );
            BTreeMap::new()
        }
    };
    let verdict = engine.check_settings(run)?;
    println!(
        "settings: {} ({verdict})\n",
        run.settings_path
            .as_ref()
            .map_or("defaults".into(), |p| p.display().to_string())
    );
    let mut seen_warnings = BTreeSet::new();
    for path in &run.requests {
        let request = load_request(path)?;
        let (outcome, unasked) = engine.evaluate(run, path, &request)?;
        let shown = Outcome {
            warnings: demo::unrepeated_warnings(&outcome.warnings, &mut seen_warnings),
            ..outcome.clone()
        };
        print!(
            "{}",
            readable::report(&path.display().to_string(), &request, &shown)
        );
        print_affinity(&outcome, &names);
        if unasked > 0 {
            println!("  note:     the policy did not ask for {unasked} recorded answer(s) of the session");
        }
        println!();
    }
    Ok(())
}

/// The node affinity a patch wrote, one line per clause, shapes named.
fn print_affinity(outcome: &Outcome, names: &BTreeMap<String, String>) {
    let wrote_affinity = outcome
        .operations()
        .iter()
        .filter_map(|op| serde_json::to_value(op).ok())
        .any(|op| {
            op.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.starts_with("/spec/affinity"))
        });
    let Some(patched) = outcome.patched_object.as_ref().filter(|_| wrote_affinity) else {
        return;
    };
    let lines = demo::affinity_lines(patched, names);
    if !lines.is_empty() {
        println!("  node affinity after admission:");
        for line in lines {
            println!("    {line}");
        }
    }
}

/// The label prefix the settings give the policy (its default otherwise).
fn label_prefix(settings: &Value) -> Result<LabelPrefix> {
    match settings.get(LABEL_PREFIX_SETTING).and_then(Value::as_str) {
        Some(prefix) => LabelPrefix::new(prefix)
            .map_err(|e| anyhow::anyhow!("settings {LABEL_PREFIX_SETTING}: {e}")),
        None => Ok(LabelPrefix::default()),
    }
}

/// `--json`: one AdmissionResponse per line, kwctl's output format.
fn print_admission_responses(engine: &Engine, runs: &[Run]) -> Result<()> {
    for run in runs {
        engine.check_settings(run)?;
        for path in &run.requests {
            let request = load_request(path)?;
            let (outcome, _) = engine.evaluate(run, path, &request)?;
            let uid = request
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            println!("{}", outcome.admission_response(uid));
        }
    }
    Ok(())
}
