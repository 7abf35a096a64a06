//! `gpu-topology audit` over a recorded fleet (`tests/fixtures/audit/`):
//! a kubelet policy changed under running pods (nodes labeled
//! `single-numa-node` and `restricted` now), a BestEffort GPU pod, a
//! Guaranteed pod with fractional CPUs, a node whose labeler stopped, a node
//! without labels and a pending pod. The checks are asserted one by one; the
//! table and the JSON report are golden outputs; the PolicyReports are
//! checked field by field and against the CRD's schema.

use gpu_topology_cli::args::Output;
use gpu_topology_cli::audit::checks::{Judge, Outcome, PodAudit};
use gpu_topology_cli::audit::{audit_all, nodes, pods, render};
use gpu_topology_cli::fleet::files::FileCluster;
use gpu_topology_cli::input::parse_text;
use gpu_topology_policy::settings::Config;
use rstest::rstest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/audit")
        .join(name)
}

/// 2026-12-01T12:00:00Z, the time the fixtures' heartbeats are judged at.
const JUDGED_AT: u64 = 1_796_126_400;
const STALE_AFTER: u64 = gpu_topology::DEFAULT_STALE_AFTER_SECONDS;

fn audits() -> Vec<PodAudit> {
    let config = Config::default();
    let pods = pods::from_file(&fixture("pods.json")).unwrap();
    let files = FileCluster::load(Some(&fixture("nodes.json")), None).unwrap();
    let nodes = nodes::from_objects(files.nodes(), &config.label_prefix);
    let judge = Judge {
        config: &config,
        now: JUDGED_AT,
        stale_after_seconds: STALE_AFTER,
    };
    audit_all(&pods, &nodes, &judge)
}

fn audit_of<'a>(audits: &'a [PodAudit], name: &str) -> &'a PodAudit {
    audits
        .iter()
        .find(|audit| audit.pod.name == name)
        .unwrap_or_else(|| panic!("no audit of {name}"))
}

use Outcome::{Fail, Pass, Skip, Warn};

/// (pod, each check's rule and outcome, words its findings must hold).
#[rstest]
#[case::aligned_on_single_numa_node("healthy",
    &[("guaranteed-qos", Pass), ("exclusive-cpus", Pass), ("kubelet-admission", Pass), ("node-labels", Pass)], &[])]
#[case::gpus_across_numa_nodes_under_single_numa_node_now("across-numa",
    &[("guaranteed-qos", Pass), ("exclusive-cpus", Pass), ("kubelet-admission", Fail), ("node-labels", Pass)],
    &["6 GPUs need 2 NUMA nodes", "single-numa-node", "TopologyAffinityError"])]
#[case::cpus_across_numa_nodes_under_restricted_now("cpus-across-numa",
    &[("guaranteed-qos", Pass), ("exclusive-cpus", Pass), ("kubelet-admission", Fail), ("node-labels", Pass)],
    &["60 exclusive CPUs", "TopologyAffinityError"])]
#[case::guaranteed_with_fractional_cpus("fractional-cpus",
    &[("guaranteed-qos", Pass), ("exclusive-cpus", Fail), ("kubelet-admission", Pass), ("node-labels", Pass)],
    &["container \"trainer\" requests 3.5 CPUs"])]
#[case::best_effort_gpu_pod("best-effort",
    &[("guaranteed-qos", Fail), ("exclusive-cpus", Skip), ("kubelet-admission", Pass), ("node-labels", Pass)],
    &["BestEffort", "cpu is not set", "memory is not set"])]
#[case::labels_of_a_stopped_labeler("on-stale-node",
    &[("guaranteed-qos", Pass), ("exclusive-cpus", Pass), ("kubelet-admission", Pass), ("node-labels", Warn)],
    &["5 h 0 min ago"])]
#[case::node_without_labels("on-plain-node",
    &[("guaranteed-qos", Pass), ("kubelet-admission", Skip), ("node-labels", Warn)],
    &["no gpu-topology labels"])]
#[case::pending_pod("pending", &[("guaranteed-qos", Pass), ("scheduled", Skip)], &["not scheduled yet"])]
fn each_pod_is_checked(
    #[case] pod: &str,
    #[case] expected: &[(&str, Outcome)],
    #[case] words: &[&str],
) {
    let audits = audits();
    let audit = audit_of(&audits, pod);
    let checks: Vec<(&str, Outcome)> = audit
        .checks
        .iter()
        .map(|check| (check.rule(), check.outcome()))
        .collect();
    assert_eq!(checks, expected, "{pod}");
    let messages: Vec<String> = audit.checks.iter().map(|check| check.message()).collect();
    let messages = messages.join("\n");
    for word in words {
        assert!(messages.contains(word), "{word:?} not in {messages}");
    }
}

#[test]
fn only_running_gpu_pods_are_audited() {
    let names: Vec<String> = audits().into_iter().map(|audit| audit.pod.name).collect();
    // cpu-only asks for no GPU; finished has ended.
    assert_eq!(
        names,
        [
            "healthy",
            "across-numa",
            "cpus-across-numa",
            "fractional-cpus",
            "best-effort",
            "on-stale-node",
            "on-plain-node",
            "pending"
        ]
    );
}

#[rstest]
#[case::just_fresh(STALE_AFTER - 1, Pass)]
#[case::at_the_threshold(STALE_AFTER, Pass)]
#[case::just_stale(STALE_AFTER + 1, Warn)]
fn labels_turn_stale_after_the_threshold(#[case] age: u64, #[case] outcome: Outcome) {
    let config = Config::default();
    let pods = pods::from_file(&fixture("pods.json")).unwrap();
    let files = FileCluster::load(Some(&fixture("nodes.json")), None).unwrap();
    let nodes = nodes::from_objects(files.nodes(), &config.label_prefix);
    // hgx-snn-1's heartbeat is 2026-12-01T11:40:00Z.
    let heartbeat = JUDGED_AT - 20 * 60;
    let judge = Judge {
        config: &config,
        now: heartbeat + age,
        stale_after_seconds: STALE_AFTER,
    };
    let audits = audit_all(&pods, &nodes, &judge);
    let labels = audit_of(&audits, "healthy")
        .checks
        .iter()
        .find(|check| check.rule() == "node-labels")
        .unwrap()
        .outcome();
    assert_eq!(labels, outcome);
}

#[test]
fn the_table_is_golden() {
    let table = render(&audits(), Output::Table, JUDGED_AT, STALE_AFTER).unwrap();
    insta::assert_snapshot!(
        "audit_table",
        anstream::adapter::strip_str(&table).to_string()
    );
}

#[test]
fn the_json_report_is_golden() {
    let report = render(&audits(), Output::Json, JUDGED_AT, STALE_AFTER).unwrap();
    let value: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(value["apiVersion"], "gpu-topology.io/v1alpha1");
    assert_eq!(value["kind"], "AuditReport");
    assert_eq!(value["judgedAt"], "2026-12-01T12:00:00Z");
    insta::assert_snapshot!("audit_json", report);
}

#[test]
fn yaml_says_what_json_says() {
    let json: Value =
        serde_json::from_str(&render(&audits(), Output::Json, JUDGED_AT, STALE_AFTER).unwrap())
            .unwrap();
    let yaml = render(&audits(), Output::Yaml, JUDGED_AT, STALE_AFTER).unwrap();
    let documents = parse_text("audit.yaml", &yaml).unwrap();
    assert_eq!(documents.len(), 1);
    assert_eq!(documents[0].object, json);
}

fn policy_reports() -> Vec<Value> {
    let text = render(&audits(), Output::Policyreport, JUDGED_AT, STALE_AFTER).unwrap();
    parse_text("policyreport.yaml", &text)
        .unwrap()
        .into_iter()
        .map(|document| document.object)
        .collect()
}

#[test]
fn one_policy_report_per_namespace() {
    let reports = policy_reports();
    let namespaces: Vec<&str> = reports
        .iter()
        .map(|report| report["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["ml", "research"]);
    for report in &reports {
        assert_eq!(report["apiVersion"], "wgpolicyk8s.io/v1alpha2");
        assert_eq!(report["kind"], "PolicyReport");
        assert_eq!(report["metadata"]["name"], "gpu-topology-audit");
        assert_eq!(
            report["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "gpu-topology"})
        );
    }
    // research holds the pending pod alone: its QoS passes, scheduling is skipped.
    assert_eq!(
        reports[1]["summary"],
        json!({"pass": 1, "fail": 0, "warn": 0, "error": 0, "skip": 1})
    );
    // ml: 7 pods, 26 checks.
    assert_eq!(
        reports[0]["summary"],
        json!({"pass": 19, "fail": 4, "warn": 2, "error": 0, "skip": 2})
    );
}

#[test]
fn a_failed_check_is_a_result_field_by_field() {
    let reports = policy_reports();
    let results = reports[0]["results"].as_array().unwrap();
    let refused = results
        .iter()
        .find(|result| {
            result["rule"] == "kubelet-admission" && result["resources"][0]["name"] == "across-numa"
        })
        .unwrap();
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.starts_with("the node's kubelet would refuse it now: the 6 GPUs need 2 NUMA nodes"),
        "{message}"
    );
    let mut rest = refused.clone();
    rest.as_object_mut().unwrap().remove("message");
    assert_eq!(
        rest,
        json!({
            "policy": "gpu-topology-policy",
            "rule": "kubelet-admission",
            "category": "GPU topology",
            "result": "fail",
            "severity": "high",
            "scored": true,
            "source": "gpu-topology",
            "timestamp": {"seconds": JUDGED_AT, "nanos": 0},
            "resources": [{"apiVersion": "v1", "kind": "Pod", "name": "across-numa", "namespace": "ml", "uid": "uid-across-numa"}],
            "properties": {"node": "hgx-snn-1"},
        })
    );
    // Passing checks are results too, without a severity.
    let passed = results
        .iter()
        .find(|result| result["resources"][0]["name"] == "healthy")
        .unwrap();
    assert_eq!(passed["result"], "pass");
    assert!(passed.get("severity").is_none());
}

/// What the API server's structural schema check would find wrong with
/// `value` (unknown fields, wrong types, enums, required fields).
fn schema_errors(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let kind = schema["type"].as_str().unwrap_or("object");
    let matches = match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        other => panic!("schema type {other}"),
    };
    if !matches {
        return errors.push(format!("{at}: not a {kind}: {value}"));
    }
    if let Some(allowed) = schema["enum"].as_array() {
        if !allowed.contains(value) {
            errors.push(format!("{at}: {value} not in {allowed:?}"));
        }
    }
    for required in schema["required"].as_array().into_iter().flatten() {
        if value.get(required.as_str().unwrap()).is_none() {
            errors.push(format!("{at}: {required} is required"));
        }
    }
    if let Some(object) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, field) in object {
            let field_at = format!("{at}.{key}");
            match (
                properties.and_then(|p| p.get(key)),
                schema.get("additionalProperties"),
            ) {
                (Some(field_schema), _) => schema_errors(field_schema, field, &field_at, errors),
                (None, Some(additional)) => schema_errors(additional, field, &field_at, errors),
                // `metadata: {type: object}` has no properties listed: anything goes.
                (None, None) if properties.is_none() => {}
                (None, None) => errors.push(format!("{field_at}: unknown field")),
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (index, item) in array.iter().enumerate() {
            schema_errors(items, item, &format!("{at}[{index}]"), errors);
        }
    }
}

#[test]
fn every_policy_report_fits_the_crd_schema() {
    let text = std::fs::read_to_string(fixture("policyreport-v1alpha2-schema.yaml")).unwrap();
    let schema = parse_text("schema", &format!("kind: Schema\n{text}")).unwrap();
    let mut schema = schema[0].object.clone();
    schema.as_object_mut().unwrap().remove("kind");
    let mut errors = Vec::new();
    for report in policy_reports() {
        schema_errors(&schema, &report, "report", &mut errors);
    }
    assert_eq!(errors, Vec::<String>::new());
    // The checker finds what it should.
    let mut wrong = Vec::new();
    schema_errors(
        &schema,
        &json!({"results": [{"result": "bad", "resource": 1}]}),
        "r",
        &mut wrong,
    );
    assert_eq!(wrong.len(), 3, "{wrong:?}");
}

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gpu-topology"))
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let output = binary().args(args).env("NO_COLOR", "1").output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn findings_exit_1() {
    let (pods, nodes) = (fixture("pods.json"), fixture("nodes.json"));
    let (code, stdout, _) = run(&[
        "audit",
        "--pods",
        pods.to_str().unwrap(),
        "--nodes",
        nodes.to_str().unwrap(),
        "--at",
        "2026-12-01T12:00:00Z",
    ]);
    assert_eq!(code, Some(1));
    assert!(stdout.contains("8 GPU pods, 6 with findings"), "{stdout}");
}

#[test]
fn no_finding_exits_0() {
    let (code, stdout, stderr) = run(&[
        "audit",
        "--pods",
        fixture("healthy-pods.json").to_str().unwrap(),
        "--nodes",
        fixture("nodes.json").to_str().unwrap(),
        "--at",
        "2026-12-01T12:00:00Z",
        "-o",
        "json",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["summary"]["podsWithFindings"], 0);
}

#[rstest]
#[case::missing_pods_file(&["--pods", "/nonexistent/pods.json", "--nodes", "NODES"], "/nonexistent/pods.json")]
#[case::not_pods(&["--pods", "NODES", "--nodes", "NODES"], "not a Pod")]
#[case::bad_duration(&["--pods", "PODS", "--nodes", "NODES", "--stale-after", "soon"], "soon")]
#[case::a_summary_is_no_node_list(&["--pods", "PODS", "--nodes", "NODES", "--summary", "NODES"], "--summary")]
fn bad_input_exits_2(#[case] args: &[&str], #[case] named: &str) {
    let (pods, nodes) = (fixture("pods.json"), fixture("nodes.json"));
    let args: Vec<&str> = std::iter::once("audit")
        .chain(args.iter().map(|arg| match *arg {
            "PODS" => pods.to_str().unwrap(),
            "NODES" => nodes.to_str().unwrap(),
            other => other,
        }))
        .collect();
    let (code, _, stderr) = run(&args);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(named), "{named:?} not in {stderr}");
}

#[test]
fn an_unreachable_api_server_exits_2_naming_it() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("audit-unreachable");
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = fake_kube_api::kubeconfig(&dir, port, "default");
    let (code, _, stderr) = run(&["audit", "--kubeconfig", kubeconfig.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("http://127.0.0.1:{port}/")),
        "{stderr}"
    );
    assert!(stderr.contains("cannot be reached"), "{stderr}");
}
