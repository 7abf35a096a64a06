//! The scenario runner: every `scenarios/*.json` through the built policy.wasm,
//! reporting every failure with the scenario's name (not just the first).
//! Needs `make policy.wasm` (or POLICY_WASM); `make e2e-tests` does both.

use e2e_tests::scenario::load_settings;
use e2e_tests::{repo_root, shared_module, Scenario};
use std::path::PathBuf;

fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

#[test]
fn every_scenario_passes_through_the_wasm_module() {
    let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
    let scenarios = Scenario::load_all(&scenario_dir()).unwrap_or_else(|e| panic!("{e:#}"));
    let mut report = Vec::new();
    for scenario in &scenarios {
        match scenario.run(module) {
            Ok(failures) if failures.is_empty() => {}
            Ok(failures) => report.push(format!(
                "{} ({}):\n    - {}",
                scenario.name,
                scenario.file.description,
                failures.join("\n    - ")
            )),
            Err(error) => report.push(format!("{}: harness error: {error:#}", scenario.name)),
        }
    }
    println!(
        "{} of {} scenarios passed",
        scenarios.len() - report.len(),
        scenarios.len()
    );
    assert!(
        report.is_empty(),
        "{} of {} scenarios failed:\n{}",
        report.len(),
        scenarios.len(),
        report.join("\n")
    );
}

/// Scenario files, and the files they point to, parse (no module needed).
#[test]
fn scenario_files_are_well_formed() {
    let scenarios = Scenario::load_all(&scenario_dir()).unwrap_or_else(|e| panic!("{e:#}"));
    for scenario in scenarios {
        let expect = &scenario.file.expect;
        assert!(
            expect.allowed.is_some() || !expect.settings_valid,
            "{}: say whether the request is allowed",
            scenario.name
        );
        assert!(!scenario.file.description.is_empty(), "{}", scenario.name);
        // Under kwctl, granted access without a session file means asking the
        // cluster in KUBECONFIG: scenarios stay offline.
        assert!(
            scenario.file.context_aware_resources.is_empty() || scenario.file.session.is_some(),
            "{}: contextAwareResources needs a session file (kwctl would query a live cluster)",
            scenario.name
        );
    }
}

/// The manifest deploys the very settings the demo runs with.
#[test]
fn policy_manifest_carries_the_example_settings() {
    let examples = repo_root().join("examples");
    let manifest = load_settings(&examples.join("policy.yaml")).unwrap();
    let settings = load_settings(&examples.join("settings.yaml")).unwrap();
    assert_eq!(manifest.pointer("/spec/settings"), Some(&settings));
    assert_eq!(
        manifest.pointer("/spec/mutating"),
        Some(&serde_json::Value::Bool(true))
    );
}

/// The generated kwctl bats suite has one test per scenario plus the demo's,
/// and runs kwctl under RUST_BACKTRACE=1, whose host errors carry causes and
/// a backtrace after their first line (issue #26).
#[test]
fn the_kwctl_bats_suite_runs_every_scenario_under_rust_backtrace() {
    let output = std::env::temp_dir().join(format!("kwctl-{}.bats", std::process::id()));
    let status = std::process::Command::new("bash")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("gen-kwctl-bats.sh"))
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success(), "gen-kwctl-bats.sh: {status}");
    let suite = std::fs::read_to_string(&output).unwrap();
    std::fs::remove_file(&output).unwrap();
    let setup = suite
        .split_once("setup_file() {")
        .and_then(|(_, rest)| rest.split_once("\n}"))
        .map(|(body, _)| body)
        .expect("a setup_file function");
    assert!(
        setup
            .lines()
            .any(|line| line.trim() == "export RUST_BACKTRACE=1"),
        "setup_file does not export RUST_BACKTRACE=1:{setup}"
    );
    let scenarios = Scenario::load_all(&scenario_dir()).unwrap().len();
    assert_eq!(suite.matches("\n@test \"scenario ").count(), scenarios);
}
