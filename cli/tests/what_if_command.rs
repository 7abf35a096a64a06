//! The `gpu-topology what-if` binary: exit codes, usage errors and the
//! golden outputs of a planned move to `restricted` (tests/snapshots).

use rstest::rstest;
use std::process::{Command, Output, Stdio};

const NODES: &str = "../examples/cluster/nodes.json";
const POD: &str = "tests/fixtures/what-if/pod-4-gpus.yaml";
/// The Azure NC96ads A100 v4 nodes' shape (2 + 2 A100, best-effort).
const AZURE: &str = "b32d9100c83da14b";

fn what_if(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpu-topology"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("what-if")
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// (arguments, exit code, what standard error says, if anything).
#[rstest]
#[case::admitted_after_the_move(&[POD, "--nodes", NODES, "--set", "topologyManagerPolicy=restricted"], 0, None)]
#[case::one_shape_moved(&[POD, "--nodes", NODES, "--set", "topologyManagerPolicy=single-numa-node", "--shape", AZURE], 0, None)]
#[case::rejected_after_every_node_moves(&["tests/fixtures/objects/pod-8-gpus.yaml", "--nodes", NODES, "--set", "topologyManagerPolicy=single-numa-node"], 1, None)]
#[case::new_policy_settings_only(&[POD, "--nodes", NODES, "--new-settings", "tests/fixtures/what-if/required.yaml"], 0, None)]
#[case::not_a_kubelet_setting(&[POD, "--nodes", NODES, "--set", "gpus=4"], 2, Some("\"gpus\" is not a kubelet setting"))]
#[case::a_bad_value(&[POD, "--nodes", NODES, "--set", "topologyManagerPolicy=strict"], 2, Some("strict"))]
#[case::a_bad_shape(&[POD, "--nodes", NODES, "--set", "topologyManagerPolicy=restricted", "--shape", "azure"], 2, Some("16 lowercase hexadecimal digits"))]
#[case::a_shape_without_a_change(&[POD, "--nodes", NODES, "--shape", AZURE], 2, Some("give --set KEY=VALUE too"))]
#[case::nothing_to_try(&[POD, "--nodes", NODES], 2, Some("nothing to try"))]
#[case::bad_new_settings(&[POD, "--nodes", NODES, "--set", "topologyManagerPolicy=restricted", "--new-settings", "tests/fixtures/settings/bad-alignment.yaml"], 2, Some("topology.alignment"))]
fn exit_codes_gate_a_rollout(
    #[case] args: &[&str],
    #[case] code: i32,
    #[case] stderr: Option<&str>,
) {
    let output = what_if(args);
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{error}");
    if let Some(expected) = stderr {
        assert!(error.contains(expected), "{error}");
    }
}

#[test]
fn a_planned_move_to_restricted() {
    let output = what_if(&[
        POD,
        "tests/fixtures/objects/pod-8-gpus.yaml",
        "--nodes",
        NODES,
        "--set",
        "topologyManagerPolicy=restricted",
    ]);
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn the_json_report_of_one_shape_moved() {
    let output = what_if(&[
        POD,
        "--nodes",
        NODES,
        "--set",
        "topologyManagerPolicy=single-numa-node",
        "--shape",
        AZURE,
        "-o",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["kind"], "WhatIfReport");
    let shapes = report["items"][0]["shapes"].as_array().unwrap();
    let moved: Vec<_> = shapes.iter().filter(|s| s["changed"] == true).collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0]["shapeBefore"], AZURE);
    assert_eq!(moved[0]["after"]["verdict"], "refuses");
    insta::assert_json_snapshot!(report);
}
