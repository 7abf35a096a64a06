//! The `gpu-topology explain` binary: exit codes, settings, inputs and the
//! golden outputs (tests/snapshots/*.snap, committed: a change of output
//! must be reviewed, `cargo insta review`, never written by CI).

use gpu_topology_policy::settings::validation_response;
use rstest::rstest;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const NODES: &str = "tests/fixtures/fleet/hgx-mixed-nodes.yaml";
const SUMMARY: &str = "tests/fixtures/fleet/hgx-mixed-summary.yaml";
/// The p5.48xlarge of NODES on single-numa-node (pod scope, static CPU
/// Manager, 2 reserved CPUs on NUMA node 0).
const P5: &str = "ip-10-0-0-0.ec2.internal";
/// Its NodeResourceTopology: 2 of 4 GPUs free on each NUMA node.
const BUSY: &str = "tests/fixtures/topology/busy.yaml";
/// Nothing held.
const FREE: &str = "tests/fixtures/topology/free.json";
/// Every GPU free, 8 and 10 exclusive CPUs free.
const CPUS_BUSY: &str = "tests/fixtures/topology/cpus-busy.yaml";

/// Runs the binary in the crate's directory (relative fixture paths, so
/// outputs name them the same everywhere), without colour.
fn explain(args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-topology"));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("explain")
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the binary runs");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// (arguments, exit code, what standard error says, if anything).
#[rstest]
#[case::all_admitted(&["tests/fixtures/objects/pod-8-gpus.yaml", "--nodes", NODES], 0, None)]
#[case::a_directory_of_admitted_objects(&["tests/fixtures/input/dir", "--nodes", NODES], 0, None)]
#[case::one_of_two_rejected(&["tests/fixtures/objects/pods-4-and-16-gpus.yaml", "--nodes", NODES], 1, None)]
#[case::a_workload_rejected(&["tests/fixtures/objects/deployment-16-gpus.json", "--nodes", NODES], 1, None)]
#[case::missing_file(&["tests/fixtures/objects/no-such.yaml", "--nodes", NODES], 2, Some("tests/fixtures/objects/no-such.yaml: cannot be read"))]
#[case::not_yaml(&["tests/fixtures/input/not-yaml.yaml", "--nodes", NODES], 2, Some("tests/fixtures/input/not-yaml.yaml, document 1: is not YAML or JSON"))]
#[case::no_api_version(&["tests/fixtures/input/no-api-version.yaml", "--nodes", NODES], 2, Some("tests/fixtures/input/no-api-version.yaml, document 2: has no `apiVersion`"))]
#[case::metadata_not_a_mapping(&["tests/fixtures/input/metadata-not-a-mapping.yaml", "--nodes", NODES], 2, Some("document 1: `metadata` is not a mapping"))]
#[case::a_node_list_item_without_metadata(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", "tests/fixtures/fleet/node-without-metadata.yaml"], 2,
    Some("tests/fixtures/fleet/node-without-metadata.yaml, document 1, item 2: the Node has no `metadata`"))]
#[case::a_nodes_file_of_pods(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", "tests/fixtures/fleet/not-nodes.yaml"], 2, Some("is a Pod, not a Node"))]
#[case::live_mode_without_a_kubeconfig(&["tests/fixtures/objects/non-gpu-pod.yaml", "--kubeconfig", "/nonexistent/kubeconfig"], 2,
    Some("live mode has no cluster: /nonexistent/kubeconfig"))]
#[case::no_objects(&[], 2, Some("required"))]
#[case::an_unknown_flag(&["x.yaml", "--nodez", NODES], 2, Some("--nodez"))]
#[case::policyreport_is_audit_s(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", NODES, "-o", "policyreport"], 2, Some("audit only"))]
#[case::topology_without_a_node(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", NODES, "--topology", BUSY], 2,
    Some("the following required arguments were not provided:\n  --node <NAME>"))]
#[case::a_node_against_a_summary_alone(&["tests/fixtures/objects/non-gpu-pod.yaml", "--summary", SUMMARY, "--node", P5], 2,
    Some("gpu-topology: --node checks the binding against that Node, read by name, and --summary counts node shapes, not nodes by name: give --nodes FILE as well"))]
#[case::a_node_against_nodes_and_a_summary(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", NODES, "--summary", SUMMARY, "--node", P5], 0, None)]
#[case::a_topology_file_of_nodes(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", NODES, "--node", P5, "--topology", NODES], 2,
    Some("tests/fixtures/fleet/hgx-mixed-nodes.yaml, document 1, item 1: is a Node, not a NodeResourceTopology"))]
#[case::a_missing_topology_file(&["tests/fixtures/objects/non-gpu-pod.yaml", "--nodes", NODES, "--node", P5, "--topology", "no-such.yaml"], 2,
    Some("no-such.yaml: cannot be read"))]
fn exit_codes(#[case] args: &[&str], #[case] code: i32, #[case] says: Option<&str>) {
    let output = explain(args, None);
    assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
    if let Some(says) = says {
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
}

/// Bad settings are refused with validate_settings' own message, the key
/// named, from a plain settings file or a policy manifest's spec.settings.
#[rstest]
#[case::plain_settings(
    "tests/fixtures/settings/bad-alignment.yaml",
    r#"{"topology": {"alignment": "sideways"}}"#
)]
#[case::admission_policy_manifest(
    "tests/fixtures/settings/bad-key-in-manifest.yaml",
    r#"{"qos": {"cpuPerGPU": "4"}}"#
)]
fn bad_settings_are_refused_as_validate_settings_refuses_them(
    #[case] file: &str,
    #[case] settings: &str,
) {
    let refused = validation_response(settings.as_bytes());
    let message = refused.message.expect("validate_settings refuses them");
    let output = explain(
        &[
            "tests/fixtures/objects/non-gpu-pod.yaml",
            "--nodes",
            NODES,
            "--settings",
            file,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output).trim_end(),
        format!("gpu-topology: {file}: the policy refuses these settings: {message}")
    );
}

/// A manifest's spec.settings and the same settings in a plain file decide
/// alike, and not as the defaults do (required affinity rejects the 16-GPU
/// pod alike, but steers the 4-GPU pod to NUMA-aligned shapes).
#[test]
fn a_policy_manifest_s_settings_are_the_settings() {
    let run = |settings: &[&str]| {
        let args = [
            &[
                "tests/fixtures/objects/pods-4-and-16-gpus.yaml",
                "--nodes",
                NODES,
                "-o",
                "json",
            ][..],
            settings,
        ]
        .concat();
        let report: serde_json::Value =
            serde_json::from_str(&stdout(&explain(&args, None))).unwrap();
        report["items"].clone()
    };
    let manifest = run(&["--settings", "tests/fixtures/settings/policy.yaml"]);
    assert_eq!(
        manifest,
        run(&["--settings", "tests/fixtures/settings/plain.yaml"])
    );
    assert_ne!(manifest, run(&[]));
}

#[test]
fn standard_input_is_read_for_dash() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/objects/pods-4-and-16-gpus.yaml"),
    )
    .unwrap();
    let output = explain(&["-", "--nodes", NODES, "-o", "json"], Some(&text));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        report["items"][1]["source"],
        serde_json::json!({"file": "-", "document": 2})
    );
    assert_eq!(report["items"][1]["decision"], "rejected");
}

#[test]
fn the_table_against_a_node_file() {
    let output = explain(
        &[
            "tests/fixtures/objects/pod-8-gpus.yaml",
            "tests/fixtures/objects/pods-4-and-16-gpus.yaml",
            "--nodes",
            NODES,
        ],
        None,
    );
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn the_verbose_table_against_a_summary() {
    let output = explain(
        &[
            "tests/fixtures/objects/pod-8-gpus.yaml",
            "--summary",
            SUMMARY,
            "--settings",
            "tests/fixtures/settings/summary-trusted.yaml",
            "-v",
        ],
        None,
    );
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn the_json_report() {
    let output = explain(
        &[
            "tests/fixtures/objects/pod-8-gpus.yaml",
            "tests/fixtures/objects/deployment-16-gpus.json",
            "tests/fixtures/objects/non-gpu-pod.yaml",
            "--nodes",
            NODES,
            "-o",
            "json",
        ],
        None,
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    insta::assert_json_snapshot!(report);
}

#[test]
fn the_yaml_report_is_the_json_report() {
    let args = [
        "tests/fixtures/objects/pods-4-and-16-gpus.yaml",
        "--nodes",
        NODES,
        "-o",
    ];
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&explain(&[&args[..], &["json"]].concat(), None))).unwrap();
    let yaml: serde_json::Value =
        serde_saphyr::from_str(&stdout(&explain(&[&args[..], &["yaml"]].concat(), None))).unwrap();
    assert_eq!(yaml, json);
    assert_eq!(json["apiVersion"], "gpu-topology.io/v1alpha1");
    assert_eq!(json["kind"], "ExplainReport");
}

/// Piped output carries no colour, even without NO_COLOR.
#[test]
fn piped_output_is_not_coloured() {
    let output = Command::new(env!("CARGO_BIN_EXE_gpu-topology"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "explain",
            "tests/fixtures/objects/pods-4-and-16-gpus.yaml",
            "--nodes",
            NODES,
        ])
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .unwrap();
    assert!(stdout(&output).contains("REJECTED"));
    assert!(!stdout(&output).contains('\u{1b}'), "{}", stdout(&output));
}

/// A 4-GPU pod whose requests (16 CPUs) the policy raises to its limits
/// (32 CPUs): the pod as stored is Guaranteed, with 32 exclusive CPUs.
const TRAINING_POD: &str = "tests/fixtures/objects/training-pod.yaml";

/// (object, `--node`, `--topology`, the binding check of the object, words
/// of its message or warning, exit code): `explain --node` checks the
/// binding of the pod as the API server would store it, against the
/// node's occupancy from the topology file.
#[rstest]
#[case::gpus_fragmented_across_numa_nodes(TRAINING_POD, P5, Some(BUSY), "refused",
    "the 4 GPUs need 1 NUMA node (single-numa-node), and the fewest NUMA nodes with them free are 2: TopologyAffinityError; free now: GPUs: NUMA node 0 has 2 free, NUMA node 1 has 2 free", 1)]
#[case::room_on_one_numa_node(TRAINING_POD, P5, Some(FREE), "admitted",
    "the kubelet of ip-10-0-0-0.ec2.internal admits the pod on the node's NUMA occupancy now, aligned", 0)]
// As submitted (Burstable) the pod would get no exclusive CPUs and fit:
// the CPUs are exclusive only once the policy's patch is applied.
#[case::the_mutated_pod_s_exclusive_cpus(
    TRAINING_POD,
    P5,
    Some(CPUS_BUSY),
    "refused",
    "the 32 exclusive CPUs fit no NUMA nodes with what is free (single-numa-node)",
    1
)]
#[case::no_topology_file(TRAINING_POD, P5, None, "notChecked",
    "its NodeResourceTopology could not be read (Host error: no NodeResourceTopology was read: it is read from --topology FILE, which was not given)", 0)]
#[case::no_topology_object_for_the_node(
    TRAINING_POD,
    "ip-10-0-0-2.ec2.internal",
    Some(BUSY),
    "notChecked",
    "the node has no NodeResourceTopology",
    0
)]
#[case::a_node_not_in_the_node_file(
    TRAINING_POD,
    "gpu-gone",
    Some(BUSY),
    "notChecked",
    "the Node could not be read (not found (HTTP 404)",
    0
)]
#[case::a_node_with_malformed_labels(
    TRAINING_POD,
    "ip-10-0-0-5.ec2.internal",
    Some(BUSY),
    "notChecked",
    "the node's labels do not read",
    0
)]
#[case::no_gpu_pod(
    "tests/fixtures/objects/non-gpu-pod.yaml",
    P5,
    Some(BUSY),
    "notGpuPod",
    "not a GPU pod",
    0
)]
#[case::a_workload_is_no_pod(
    "tests/fixtures/objects/deployment-16-gpus.json",
    P5,
    Some(BUSY),
    "notAPod",
    "the binding check applies to Pods",
    1
)]
fn the_binding_to_a_node_is_checked(
    #[case] object: &str,
    #[case] node: &str,
    #[case] topology: Option<&str>,
    #[case] check: &str,
    #[case] words: &str,
    #[case] code: i32,
) {
    let mut args = vec![object, "--nodes", NODES, "--node", node, "-o", "json"];
    if let Some(topology) = topology {
        args.extend(["--topology", topology]);
    }
    let output = explain(&args, None);
    assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let binding = &report["items"][0]["binding"];
    assert_eq!(binding["check"], check, "{binding}");
    assert_eq!(binding["node"], node);
    let text = binding.to_string();
    let said = [&binding["message"], &binding["warnings"][0]]
        .iter()
        .filter_map(|value| value.as_str())
        .any(|text| text.contains(words));
    assert!(said, "{words:?} not in {text}");
}

/// The table with `--node`: one "Binding to" section per object.
#[test]
fn the_table_of_bindings_to_a_busy_node() {
    let output = explain(
        &[
            "tests/fixtures/objects/pods-4-and-16-gpus.yaml",
            "tests/fixtures/objects/non-gpu-pod.yaml",
            "tests/fixtures/objects/deployment-16-gpus.json",
            "--nodes",
            NODES,
            "--node",
            P5,
            "--topology",
            BUSY,
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    insta::assert_snapshot!(stdout(&output));
}

/// The JSON report's `binding` of each item (absent without `--node`: the
/// report of the_json_report has none).
#[test]
fn the_json_bindings_to_a_free_node() {
    let output = explain(
        &[
            "tests/fixtures/objects/pods-4-and-16-gpus.yaml",
            "tests/fixtures/objects/non-gpu-pod.yaml",
            "--nodes",
            NODES,
            "--node",
            P5,
            "--topology",
            FREE,
            "-o",
            "json",
        ],
        None,
    );
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let bindings: Vec<&serde_json::Value> = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| &item["binding"])
        .collect();
    insta::assert_json_snapshot!(bindings);
}
