//! `gpu-topology audit` over a recorded fleet (`tests/fixtures/audit/`):
//! a kubelet policy changed under running pods (nodes labeled
//! `single-numa-node` and `restricted` now), a BestEffort GPU pod, a
//! Guaranteed pod with fractional CPUs, a node whose labeler stopped, a node
//! without labels and a pending pod. The checks are asserted one by one; the
//! table, the JSON report and the policy reports of both APIs are golden
//! outputs; the policy reports are also checked field by field and against
//! their CRD's schema (OpenReports `Report`, wgpolicyk8s.io `PolicyReport`).

use gpu_topology_cli::args::{Output, ReportApi};
use gpu_topology_cli::audit::checks::{Judge, Outcome, PodAudit};
use gpu_topology_cli::audit::failed::{audit_failed, FailedAudit};
use gpu_topology_cli::audit::{audit_all, nodes, pods, render, render_all};
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
    let pods = pods::read_dump(&fixture("pods.json")).unwrap().running;
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
    &["container \"trainer\" requests 3500m CPU"])]
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
    let pods = pods::read_dump(&fixture("pods.json")).unwrap().running;
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
    let table = render(
        &audits(),
        Output::Table,
        ReportApi::Openreports,
        JUDGED_AT,
        STALE_AFTER,
    )
    .unwrap();
    insta::assert_snapshot!(
        "audit_table",
        anstream::adapter::strip_str(&table).to_string()
    );
}

#[test]
fn the_json_report_is_golden() {
    let report = render(
        &audits(),
        Output::Json,
        ReportApi::Openreports,
        JUDGED_AT,
        STALE_AFTER,
    )
    .unwrap();
    let value: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(value["apiVersion"], "gpu-topology.io/v1alpha1");
    assert_eq!(value["kind"], "AuditReport");
    assert_eq!(value["judgedAt"], "2026-12-01T12:00:00Z");
    insta::assert_snapshot!("audit_json", report);
}

#[test]
fn yaml_says_what_json_says() {
    let json: Value = serde_json::from_str(
        &render(
            &audits(),
            Output::Json,
            ReportApi::Openreports,
            JUDGED_AT,
            STALE_AFTER,
        )
        .unwrap(),
    )
    .unwrap();
    let yaml = render(
        &audits(),
        Output::Yaml,
        ReportApi::Openreports,
        JUDGED_AT,
        STALE_AFTER,
    )
    .unwrap();
    let documents = parse_text("audit.yaml", &yaml).unwrap();
    assert_eq!(documents.len(), 1);
    assert_eq!(documents[0].object, json);
}

fn policy_report_text(api: ReportApi) -> String {
    render(&audits(), Output::Policyreport, api, JUDGED_AT, STALE_AFTER).unwrap()
}

fn policy_reports(api: ReportApi) -> Vec<Value> {
    parse_text("policyreport.yaml", &policy_report_text(api))
        .unwrap()
        .into_iter()
        .map(|document| document.object)
        .collect()
}

#[rstest]
#[case::openreports(ReportApi::Openreports)]
#[case::wgpolicyk8s(ReportApi::Wgpolicyk8s)]
fn the_policy_reports_are_golden(#[case] api: ReportApi) {
    let name = format!("policyreport_{api:?}").to_lowercase();
    insta::assert_snapshot!(name, policy_report_text(api));
}

/// (API, apiVersion, kind, the report-level `source`: OpenReports has the
/// field, wgpolicyk8s.io/v1alpha2 does not).
#[rstest]
#[case::openreports(
    ReportApi::Openreports,
    "openreports.io/v1alpha1",
    "Report",
    Some("gpu-topology")
)]
#[case::wgpolicyk8s(
    ReportApi::Wgpolicyk8s,
    "wgpolicyk8s.io/v1alpha2",
    "PolicyReport",
    None
)]
fn one_policy_report_per_namespace(
    #[case] api: ReportApi,
    #[case] api_version: &str,
    #[case] kind: &str,
    #[case] source: Option<&str>,
) {
    let reports = policy_reports(api);
    let namespaces: Vec<&str> = reports
        .iter()
        .map(|report| report["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["ml", "research"]);
    for report in &reports {
        assert_eq!(report["apiVersion"], api_version);
        assert_eq!(report["kind"], kind);
        assert_eq!(report.get("source").and_then(Value::as_str), source);
        assert_eq!(report["metadata"]["name"], "gpu-topology-audit");
        assert_eq!(
            report["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "gpu-topology"})
        );
        // One report per namespace, its pods named per result: no scope.
        assert!(report.get("scope").is_none(), "{report}");
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
fn both_apis_hold_the_same_results_and_summaries() {
    let open = policy_reports(ReportApi::Openreports);
    let wg = policy_reports(ReportApi::Wgpolicyk8s);
    assert_eq!(open.len(), wg.len());
    for (open, wg) in open.iter().zip(&wg) {
        assert_eq!(open["metadata"], wg["metadata"]);
        assert_eq!(open["summary"], wg["summary"]);
        assert_eq!(open["results"], wg["results"]);
    }
}

#[rstest]
#[case::openreports(ReportApi::Openreports)]
#[case::wgpolicyk8s(ReportApi::Wgpolicyk8s)]
fn a_failed_check_is_a_result_field_by_field(#[case] api: ReportApi) {
    let reports = policy_reports(api);
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

/// The openAPIV3Schema of a CRD, from its fixture.
fn crd_schema(fixture_name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(fixture_name)).unwrap();
    let schema = parse_text("schema", &format!("kind: Schema\n{text}")).unwrap();
    let mut schema = schema[0].object.clone();
    schema.as_object_mut().unwrap().remove("kind");
    schema
}

const OPENREPORTS_SCHEMA: &str = "openreports-v1alpha1-schema.yaml";
const WGPOLICYK8S_SCHEMA: &str = "policyreport-v1alpha2-schema.yaml";

/// (the API written, the CRD schema it is checked against, the errors the
/// API server would find in each report): each API's reports fit their
/// CRD, and an OpenReports Report is no v1alpha2 PolicyReport (its
/// report-level `source` is unknown there), so the choice of API matters.
#[rstest]
#[case::openreports_against_reports_openreports_io(ReportApi::Openreports, OPENREPORTS_SCHEMA, &[])]
#[case::wgpolicyk8s_against_policyreports_wgpolicyk8s_io(ReportApi::Wgpolicyk8s, WGPOLICYK8S_SCHEMA, &[])]
#[case::openreports_against_the_v1alpha2_schema(ReportApi::Openreports, WGPOLICYK8S_SCHEMA, &["report.source: unknown field"])]
#[case::wgpolicyk8s_against_the_openreports_schema(ReportApi::Wgpolicyk8s, OPENREPORTS_SCHEMA, &[])]
fn every_policy_report_fits_its_crd_schema(
    #[case] api: ReportApi,
    #[case] schema_fixture: &str,
    #[case] each_report_s_errors: &[&str],
) {
    let schema = crd_schema(schema_fixture);
    let reports = policy_reports(api);
    for report in &reports {
        let mut errors = Vec::new();
        schema_errors(&schema, report, "report", &mut errors);
        assert_eq!(errors, each_report_s_errors, "{}", report["metadata"]);
    }
}

/// The checker finds what it should in either schema: a result outside
/// the enum, an unknown field, a missing required field, a wrong type.
#[rstest]
#[case::openreports(OPENREPORTS_SCHEMA)]
#[case::wgpolicyk8s(WGPOLICYK8S_SCHEMA)]
fn the_schema_checker_finds_what_the_api_server_would(#[case] schema_fixture: &str) {
    let schema = crd_schema(schema_fixture);
    let mut wrong = Vec::new();
    schema_errors(
        &schema,
        &json!({"results": [{"result": "bad", "resource": 1, "timestamp": {"seconds": "1", "nanos": 0}}]}),
        "r",
        &mut wrong,
    );
    let mut expected = [
        "r.results[0]: \"policy\" is required",
        "r.results[0].resource: unknown field",
        "r.results[0].result: \"bad\" not in [String(\"pass\"), String(\"fail\"), String(\"warn\"), String(\"error\"), String(\"skip\")]",
        "r.results[0].timestamp.seconds: not a integer: \"1\"",
    ];
    // In the order of the map's keys, whichever that is.
    wrong.sort();
    expected.sort();
    assert_eq!(wrong, expected);
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

/// From files alone, `-o policyreport` writes OpenReports unless
/// `--report-api` says otherwise; nothing asks a cluster, nothing warns.
#[rstest]
#[case::openreports_by_default(&[], "apiVersion: openreports.io/v1alpha1\nkind: Report\n")]
#[case::openreports_asked_for(&["--report-api", "openreports"], "apiVersion: openreports.io/v1alpha1\nkind: Report\n")]
#[case::wgpolicyk8s_asked_for(&["--report-api", "wgpolicyk8s"], "apiVersion: wgpolicyk8s.io/v1alpha2\nkind: PolicyReport\n")]
fn offline_policy_reports_are_openreports_unless_asked(#[case] flags: &[&str], #[case] head: &str) {
    let (pods, nodes) = (fixture("healthy-pods.json"), fixture("nodes.json"));
    let mut args = vec![
        "audit",
        "--pods",
        pods.to_str().unwrap(),
        "--nodes",
        nodes.to_str().unwrap(),
        "--at",
        "2026-12-01T12:00:00Z",
        "-o",
        "policyreport",
    ];
    args.extend(flags);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr, "");
    assert!(stdout.starts_with(&format!("---\n{head}")), "{stdout}");
}

#[rstest]
#[case::unknown_report_api(&["--pods", "PODS", "--nodes", "NODES", "--report-api", "policyreport"], "[possible values: openreports, wgpolicyk8s]")]
#[case::missing_pods_file(&["--pods", "/nonexistent/pods.json", "--nodes", "NODES"], "/nonexistent/pods.json")]
#[case::not_pods(&["--pods", "NODES", "--nodes", "NODES"], "not a Pod")]
#[case::bad_duration(&["--pods", "PODS", "--nodes", "NODES", "--stale-after", "soon"], "soon")]
#[case::a_summary_is_no_node_list(&["--pods", "PODS", "--nodes", "NODES", "--summary", "NODES"], "--summary")]
#[case::a_topology_file_of_nodes(&["--pods", "PODS", "--nodes", "NODES", "--topology", "NODES"], "is a Node, not a NodeResourceTopology")]
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

/// The NodeResourceTopology files of tests/fixtures/topology.
fn topology(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(name)
}

/// `failed-pods.json`: a running pod, two 4-GPU pods a controller recreated
/// on hgx-snn-1 (single-numa-node) that its kubelet refused with
/// `TopologyAffinityError`, a CPU-only pod refused with
/// `SMTAlignmentError`, a pod refused with `UnexpectedAdmissionError` on a
/// node that is gone, and two pods that failed for other reasons.
const FAILED_PODS: &str = "failed-pods.json";

/// The running and the failed pods' audits, the occupancy from `topology`.
fn failed_audits(topology_file: Option<&str>) -> (Vec<PodAudit>, Vec<FailedAudit>) {
    let config = Config::default();
    let pods = pods::read_dump(&fixture(FAILED_PODS)).unwrap();
    let mut files = FileCluster::load(Some(&fixture("nodes.json")), None).unwrap();
    if let Some(file) = topology_file {
        files = files.with_topology(&topology(file)).unwrap();
    }
    let nodes = nodes::from_objects(files.nodes(), &config.label_prefix);
    let judge = Judge {
        config: &config,
        now: JUDGED_AT,
        stale_after_seconds: STALE_AFTER,
    };
    let running = audit_all(&pods.running, &nodes, &judge);
    let failed = audit_failed(&pods.failed, &config, &files, JUDGED_AT);
    (running, failed)
}

#[test]
fn only_pods_the_kubelet_refused_are_listed_as_failed() {
    let (running, failed) = failed_audits(None);
    let names: Vec<&str> = failed.iter().map(|f| f.pod.name.as_str()).collect();
    // evicted (Evicted) and oom (no reason) failed after admission.
    assert_eq!(
        names,
        ["train-7f9c-0", "train-7f9c-1", "odd-cpus", "infer-2"]
    );
    let running: Vec<&str> = running.iter().map(|a| a.pod.name.as_str()).collect();
    assert_eq!(running, ["healthy"]);
}

/// (topology file, failed pod, what the binding check says now, words its
/// finding holds): each failed pod's binding to the node that refused it,
/// checked on that node's occupancy now.
#[rstest]
#[case::gpus_fragmented(Some("busy.yaml"), "train-7f9c-0", "refuses",
    &["failed at the kubelet of hgx-snn-1: TopologyAffinityError: Pod was rejected: Resources cannot be allocated with Topology locality",
      "the binding check refuses this binding now (unless the node's pods changed since it failed, it would have stopped the pod)",
      "GPUs: NUMA node 0 has 2 free, NUMA node 1 has 2 free"])]
#[case::room_now(Some("free.json"), "train-7f9c-1", "allows",
    &["the binding check allows this binding now: the kubelet of hgx-snn-1 admits the pod on the node's NUMA occupancy now, aligned; so the node's pods changed since it failed"])]
#[case::cpus_held(Some("cpus-busy.yaml"), "train-7f9c-0", "refuses",
    &["the 16 exclusive CPUs of container \"trainer\" need 1 NUMA node"])]
#[case::no_topology_file(None, "train-7f9c-0", "not checked",
    &["the binding check allows this binding unchecked: its NodeResourceTopology could not be read", "--topology FILE"])]
#[case::no_gpu_pod(Some("busy.yaml"), "odd-cpus", "not a GPU pod",
    &["SMTAlignmentError: Pod was rejected: SMT Alignment Error", "not a GPU pod"])]
#[case::the_node_is_gone(Some("busy.yaml"), "infer-2", "not checked",
    &["UnexpectedAdmissionError: Allocate failed", "the Node could not be read (not found (HTTP 404)"])]
fn each_failed_pod_s_binding_is_checked_now(
    #[case] topology_file: Option<&str>,
    #[case] pod: &str,
    #[case] short: &str,
    #[case] words: &[&str],
) {
    let (_, failed) = failed_audits(topology_file);
    let failed = failed.iter().find(|f| f.pod.name == pod).unwrap();
    assert_eq!(failed.short(), short);
    assert_eq!(failed.outcome(), Fail);
    let message = failed.message();
    for word in words {
        assert!(message.contains(word), "{word:?} not in {message}");
    }
}

fn render_failed(format: Output, api: ReportApi) -> String {
    let (running, failed) = failed_audits(Some("busy.yaml"));
    render_all(&running, &failed, format, api, JUDGED_AT, STALE_AFTER).unwrap()
}

#[test]
fn the_table_of_failed_pods_is_golden() {
    let table = render_failed(Output::Table, ReportApi::Openreports);
    insta::assert_snapshot!(
        "audit_failed_table",
        anstream::adapter::strip_str(&table).to_string()
    );
}

#[test]
fn the_json_report_of_failed_pods_is_golden() {
    let report = render_failed(Output::Json, ReportApi::Openreports);
    let value: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(value["summary"]["failedPods"], 4);
    assert_eq!(value["summary"]["failedPodsRefusedNow"], 2);
    insta::assert_json_snapshot!("audit_failed_json", value["failedPods"]);
}

/// One `fail` result per failed pod, in its namespace's report, with the
/// kubelet's reason and what the binding check says now.
#[rstest]
#[case::openreports(ReportApi::Openreports, OPENREPORTS_SCHEMA)]
#[case::wgpolicyk8s(ReportApi::Wgpolicyk8s, WGPOLICYK8S_SCHEMA)]
fn a_failed_pod_is_a_failed_result(#[case] api: ReportApi, #[case] schema: &str) {
    let text = render_failed(Output::Policyreport, api);
    let reports: Vec<Value> = parse_text("policyreport.yaml", &text)
        .unwrap()
        .into_iter()
        .map(|document| document.object)
        .collect();
    let namespaces: Vec<&str> = reports
        .iter()
        .map(|report| report["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["batch", "ml", "research"]);
    let schema = crd_schema(schema);
    for report in &reports {
        let mut errors = Vec::new();
        schema_errors(&schema, report, "report", &mut errors);
        assert_eq!(errors, Vec::<String>::new(), "{}", report["metadata"]);
    }
    let ml = &reports[1];
    // healthy's 4 checks pass; the two failed pods fail.
    assert_eq!(
        ml["summary"],
        json!({"pass": 4, "fail": 2, "warn": 0, "error": 0, "skip": 0})
    );
    let failed = ml["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["resources"][0]["name"] == "train-7f9c-0")
        .unwrap();
    let mut rest = failed.clone();
    let message = rest.as_object_mut().unwrap().remove("message").unwrap();
    assert!(
        message.as_str().unwrap().starts_with("failed at the kubelet of hgx-snn-1: TopologyAffinityError: Pod was rejected: Resources cannot be allocated with Topology locality; the binding check refuses this binding now"),
        "{message}"
    );
    assert_eq!(
        rest,
        json!({
            "policy": "gpu-topology-policy",
            "rule": "kubelet-admission-failed",
            "category": "GPU topology",
            "result": "fail",
            "severity": "high",
            "scored": true,
            "source": "gpu-topology",
            "timestamp": {"seconds": JUDGED_AT, "nanos": 0},
            "resources": [{"apiVersion": "v1", "kind": "Pod", "name": "train-7f9c-0", "namespace": "ml", "uid": "uid-train-7f9c-0"}],
            "properties": {"node": "hgx-snn-1", "reason": "TopologyAffinityError", "bindingCheck": "refuses"},
        })
    );
}

/// Failed pods are findings: exit code 1 though every running pod passes.
#[test]
fn failed_pods_exit_1() {
    let (code, stdout, stderr) = run(&[
        "audit",
        "--pods",
        fixture(FAILED_PODS).to_str().unwrap(),
        "--nodes",
        fixture("nodes.json").to_str().unwrap(),
        "--topology",
        topology("busy.yaml").to_str().unwrap(),
        "--at",
        "2026-12-01T12:00:00Z",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stdout.contains("1 GPU pods, 0 with findings")
            && stdout.ends_with(
                "4 pods failed at the kubelet: the binding check refuses 2 of their bindings now\n"
            ),
        "{stdout}"
    );
}
