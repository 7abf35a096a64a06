//! Live mode against a scripted API server on loopback: the Nodes read page
//! by page and pruned to the policy's field masks, the summary read, and a
//! refused read or a missing summary giving the policy's own warnings, and
//! `audit -o policyreport` writing the policy-report API the API server's
//! discovery says it serves (OpenReports first).

use fake_kube_api::{kubeconfig, requests, scripted, Log, Reply, Step};
use gpu_topology::LabelPrefix;
use gpu_topology_cli::fleet::live::{ConnectError, Credentials, LiveCluster};
use gpu_topology_policy::cluster::fleet_summary::{parse_summary, summary_request};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::cluster::nodes::{node_list_request, read_cluster};
use gpu_topology_policy::decide::{evaluate_pod, Decision};
use gpu_topology_policy::settings::{settings_from_value, Config, FleetSummarySettings};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/live")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The scripted server, run on a thread of its own: the reader blocks the
/// test's thread on its own runtime.
struct Server {
    port: u16,
    log: Log,
    thread: std::thread::JoinHandle<()>,
}

impl Server {
    fn start(steps: Vec<Step>) -> Self {
        let (sender, receiver) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let (port, log, server) = scripted(steps).await;
                sender.send((port, log)).unwrap();
                fake_kube_api::finish(server).await;
            });
        });
        let (port, log) = receiver.recv().unwrap();
        Server { port, log, thread }
    }

    /// Every scripted step was asked for; the requests, in order.
    fn finish(self) -> Vec<fake_kube_api::Request> {
        self.thread
            .join()
            .expect("the client made fewer requests than scripted");
        requests(&self.log)
    }

    /// A kubeconfig for this server, in a directory of its own: rstest
    /// cases run in parallel.
    fn credentials(&self, dir: &str) -> Credentials {
        let dir = scratch(&format!("{dir}-{}", self.port));
        Credentials {
            kubeconfig: Some(kubeconfig(&dir, self.port, "default")),
            context: None,
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("live")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `/version` answer [`LiveCluster::connect`] probes with.
fn version() -> Step {
    Reply::json(&fixture("version.json")).into()
}

fn refused(code: u16, message: &str) -> Step {
    Reply {
        status: code,
        body: Some(
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                   "reason": reason(code), "code": code})
            .to_string(),
        ),
    }
    .into()
}

fn reason(code: u16) -> &'static str {
    if code == 404 {
        "NotFound"
    } else {
        "Forbidden"
    }
}

/// The refusal as policy-server hands it to the policy (wapc-guest's prefix,
/// kube-rs' `ApiError` display), written out as e2e-tests/scenarios/sessions
/// recorded it.
fn as_policy_server_says(code: u16, message: &str) -> String {
    let reason = reason(code);
    format!(
        "Host error: ApiError: {message}: {reason} (ErrorResponse {{ status: \"Failure\", message: {message:?}, reason: \"{reason}\", code: {code} }})"
    )
}

fn query(pairs: &[&str]) -> BTreeSet<String> {
    pairs.iter().map(|pair| (*pair).to_owned()).collect()
}

#[test]
fn nodes_are_read_page_by_page_and_pruned_to_the_masks() {
    let server = Server::start(vec![
        version(),
        Reply::json(&fixture("nodes-page-1.json")).into(),
        Reply::json(&fixture("nodes-page-2.json")).into(),
    ]);
    let live = LiveCluster::connect(&server.credentials("pages"))
        .unwrap()
        .with_page_size(2);
    let prefix = LabelPrefix::default();
    let list = live
        .list_all_resources(&node_list_request(&prefix))
        .unwrap();
    let list: Value = serde_json::from_slice(&list).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gpu-a-1", "gpu-a-2", "gpu-b-1"]);
    // Only metadata.labels and metadata.name are left, as policy-server leaves them.
    assert_eq!(
        list["items"][1],
        json!({"metadata": {"name": "gpu-a-2", "labels": fixture("nodes-page-1.json")["items"][1]["metadata"]["labels"]}})
    );
    // The policy's own reader takes the answer.
    let view = gpu_topology_policy::cluster::nodes::parse_node_list(
        &serde_json::to_vec(&list).unwrap(),
        &prefix,
        Some("gpu-b-1"),
    )
    .unwrap();
    assert_eq!(
        view.fleet
            .groups()
            .iter()
            .map(|group| group.nodes)
            .sum::<u32>(),
        3
    );
    assert!(matches!(view.pinned_node, Some(Ok(_))));

    let sent = server.finish();
    assert_eq!(sent[0].path, "/version");
    let selector = "labelSelector=gpu-topology.io%2Fgpus";
    assert_eq!(
        (sent[1].method.as_str(), sent[1].path.as_str()),
        ("GET", "/api/v1/nodes")
    );
    assert_eq!(sent[1].query, query(&[selector, "limit=2"]));
    assert_eq!(sent[2].path, "/api/v1/nodes");
    assert_eq!(
        sent[2].query,
        query(&["continue=page-2-token", selector, "limit=2"])
    );
}

#[test]
fn the_summary_is_read_from_its_config_map() {
    let server = Server::start(vec![
        version(),
        Reply::json(&fixture("summary.json")).into(),
    ]);
    let live = LiveCluster::connect(&server.credentials("summary")).unwrap();
    let answer = live
        .get_resource(&summary_request(&FleetSummarySettings::default()))
        .unwrap();
    // Only `data`, the summary's mask.
    assert_eq!(
        serde_json::from_slice::<Value>(&answer).unwrap(),
        json!({"data": fixture("summary.json")["data"]})
    );
    let summary = parse_summary(&answer).unwrap();
    assert_eq!(summary.generated_at, 1_764_633_600);
    assert_eq!(summary.fleet.groups()[0].nodes, 3);

    let sent = server.finish();
    assert_eq!(sent[1].method, "GET");
    assert_eq!(
        sent[1].path,
        "/api/v1/namespaces/kube-system/configmaps/gpu-topology-fleet"
    );
}

/// A reader that answers as the API server answered the live one.
struct Refusing {
    summary: String,
    nodes: String,
}

impl ClusterReader for Refusing {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Err(self.nodes.clone())
    }

    fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Err(self.summary.clone())
    }
}

const NODES_FORBIDDEN: &str = "nodes is forbidden: User \"system:serviceaccount:ops:auditor\" cannot list resource \"nodes\" in API group \"\" at the cluster scope";
const SUMMARY_MISSING: &str = "configmaps \"gpu-topology-fleet\" not found";
const SUMMARY_FORBIDDEN: &str = "configmaps \"gpu-topology-fleet\" is forbidden: User \"system:serviceaccount:ops:auditor\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-system\"";

fn config(settings: Value) -> Config {
    settings_from_value(settings).unwrap().config().unwrap()
}

/// (settings, the summary's answer or none read, the node list's answer or
/// none read): the policy's warnings from the live reader equal those from a
/// reader that refuses in the API server's words.
#[rstest]
#[case::summary_missing_and_nodes_forbidden(
    json!({}),
    Some((404, SUMMARY_MISSING)),
    Some((403, NODES_FORBIDDEN))
)]
#[case::summary_forbidden_and_nodes_forbidden(
    json!({}),
    Some((403, SUMMARY_FORBIDDEN)),
    Some((403, NODES_FORBIDDEN))
)]
#[case::only_the_summary_and_it_is_missing(
    json!({"capacity": {"source": "summary"}}),
    Some((404, SUMMARY_MISSING)),
    None
)]
#[case::only_nodes_and_they_are_forbidden(
    json!({"capacity": {"source": "nodes"}}),
    None,
    Some((403, NODES_FORBIDDEN))
)]
fn refused_reads_give_the_policys_warnings(
    #[case] settings: Value,
    #[case] summary: Option<(u16, &str)>,
    #[case] nodes: Option<(u16, &str)>,
) {
    let mut steps = vec![version()];
    steps.extend(summary.map(|(code, message)| refused(code, message)));
    steps.extend(nodes.map(|(code, message)| refused(code, message)));
    let server = Server::start(steps);
    let live = LiveCluster::connect(&server.credentials("refused")).unwrap();
    let config = config(settings);
    let pod = fixture("gpu-pod.json");

    let decision: Decision<Value> = evaluate_pod(&pod, &config, &live);
    let said = |answer: Option<(u16, &str)>| {
        answer.map_or(String::new(), |(code, message)| {
            as_policy_server_says(code, message)
        })
    };
    let refusing = Refusing {
        summary: said(summary),
        nodes: said(nodes),
    };
    assert_eq!(decision, evaluate_pod(&pod, &config, &refusing));
    // Not equal by both being silent: what the API server said is read,
    // and its status quoted.
    let warnings = decision.warnings.join("\n");
    for (code, _) in summary.iter().chain(&nodes) {
        let meaning = match code {
            404 => "not found (HTTP 404) (host: …",
            _ => "access denied (host: …",
        };
        let status = format!("code: {code} }})");
        assert!(warnings.contains(meaning), "{meaning:?} not in {warnings}");
        assert!(warnings.contains(&status), "{status:?} not in {warnings}");
    }
    server.finish();
}

#[test]
fn an_unreachable_server_is_named() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let credentials = Credentials {
        kubeconfig: Some(kubeconfig(&scratch("unreachable"), port, "default")),
        context: None,
    };
    let Err(error) = LiveCluster::connect(&credentials) else {
        panic!("a closed port answered");
    };
    assert!(
        matches!(error, ConnectError::Unreachable { .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/")),
        "{text}"
    );
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[test]
fn a_missing_kubeconfig_is_named() {
    let credentials = Credentials {
        kubeconfig: Some(PathBuf::from("/nonexistent/kubeconfig")),
        context: None,
    };
    let Err(error) = LiveCluster::connect(&credentials) else {
        panic!("no kubeconfig, yet a cluster");
    };
    assert!(matches!(error, ConnectError::Config(_)), "{error:?}");
    assert!(
        error.to_string().contains("/nonexistent/kubeconfig"),
        "{error}"
    );
}

#[test]
fn read_cluster_through_live_names_the_refusal() {
    let server = Server::start(vec![version(), refused(403, NODES_FORBIDDEN)]);
    let live = LiveCluster::connect(&server.credentials("read-cluster")).unwrap();
    let problem = read_cluster(&live, &LabelPrefix::default(), None, None).unwrap_err();
    // Quoted as the policy quotes host errors: what it means, then the
    // last 120 characters of policy-server's words.
    let said = as_policy_server_says(403, NODES_FORBIDDEN);
    let tail: String = said.chars().skip(said.chars().count() - 119).collect();
    assert_eq!(problem, format!("access denied (host: …{tail})"));
    server.finish();
}

/// A pod of the live listing.
fn live_pod(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}")},
           "spec": {"nodeName": node, "containers": [{"name": "trainer",
               "resources": {"limits": {"cpu": "8", "memory": "8Gi", "nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Running", "qosClass": "Guaranteed"}})
}

fn list(items: Vec<Value>, next: Option<&str>) -> Step {
    let mut metadata = json!({"resourceVersion": "7"});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    Reply::json(&json!({"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": items}))
        .into()
}

#[rstest]
#[case::nodefeatures_read(None)]
#[case::no_nodefeature_api(Some(404))]
fn audit_reads_pods_and_nodes_live(#[case] nodefeatures_refused: Option<u16>) {
    use gpu_topology_cli::audit::{nodes, pods};
    let prefix = LabelPrefix::default();
    let labels = json!({"gpu-topology.io/gpus": "8"});
    let node = |name: &str, heartbeat: Option<&str>| {
        let mut node = json!({"metadata": {"name": name, "labels": labels, "uid": "x",
                                            "annotations": {"other": "kept out by no mask"}},
                              "status": {"capacity": {}}});
        if let Some(heartbeat) = heartbeat {
            node["metadata"]["annotations"]["gpu-topology.io/published"] = json!(heartbeat);
        }
        node
    };
    let feature = json!({"metadata": {"name": "gpu-topology-gpu-b",
        "labels": {"nfd.node.kubernetes.io/node-name": "gpu-b", "app.kubernetes.io/name": "gpu-topology-labeler"},
        "annotations": {"gpu-topology.io/published": "2026-12-01T11:00:00Z"}}});
    let features = match nodefeatures_refused {
        None => list(vec![feature], None),
        Some(code) => refused(code, "the server could not find the requested resource"),
    };
    let server = Server::start(vec![
        version(),
        list(vec![live_pod("a", "gpu-a")], Some("pods-2")),
        list(vec![live_pod("b", "gpu-b")], None),
        list(
            vec![
                node("gpu-a", Some("2026-12-01T11:30:00Z")),
                node("gpu-b", None),
            ],
            None,
        ),
        features,
    ]);
    let live = LiveCluster::connect(&server.credentials("audit")).unwrap();
    let pods = pods::from_cluster(&live).unwrap();
    assert_eq!(
        pods.iter().map(|pod| pod.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(pods[1].node.as_deref(), Some("gpu-b"));
    let (nodes, problem) = nodes::from_cluster(&live, &prefix).unwrap();
    assert_eq!(
        nodes["gpu-a"].heartbeat.as_deref(),
        Some("2026-12-01T11:30:00Z")
    );
    match nodefeatures_refused {
        // The nodefeature sink's heartbeat, for the node that has none itself.
        None => {
            assert_eq!(
                nodes["gpu-b"].heartbeat.as_deref(),
                Some("2026-12-01T11:00:00Z")
            );
            assert_eq!(problem, None);
        }
        Some(_) => {
            assert_eq!(nodes["gpu-b"].heartbeat, None);
            assert!(problem.unwrap().contains("NotFound"));
        }
    }
    assert_eq!(
        nodes["gpu-b"]
            .labels
            .get("gpu-topology.io/gpus")
            .map(String::as_str),
        Some("8")
    );

    let sent = server.finish();
    let ended = "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
    assert_eq!(sent[1].path, "/api/v1/pods");
    assert_eq!(sent[1].query, query(&[ended, "limit=500"]));
    assert_eq!(
        sent[2].query,
        query(&["continue=pods-2", ended, "limit=500"])
    );
    assert_eq!(sent[3].path, "/api/v1/nodes");
    assert_eq!(sent[3].query, query(&["limit=500"]));
    assert_eq!(sent[4].path, "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures");
    assert_eq!(
        sent[4].query,
        query(&[
            "labelSelector=app.kubernetes.io%2Fname%3Dgpu-topology-labeler",
            "limit=500"
        ])
    );
}

/// The tool's binary, run against `server`'s kubeconfig.
fn run_binary(server: &Server, dir: &str, args: &[&str]) -> std::process::Output {
    let credentials = server.credentials(dir);
    let kubeconfig = credentials.kubeconfig.unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_gpu-topology"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn explain_reads_the_cluster_live() {
    let server = Server::start(vec![
        version(),
        refused(404, SUMMARY_MISSING),
        Reply::json(&fixture("nodes-page-1.json")).into(),
        Reply::json(&fixture("nodes-page-2.json")).into(),
    ]);
    let pod = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live/gpu-pod.json");
    let output = run_binary(
        &server,
        "explain",
        &["explain", pod.to_str().unwrap(), "-o", "json"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = report.to_string();
    // Read from the Node list, both pages.
    assert_eq!(
        report["items"][0]["record"]["view"],
        json!({"malformed": 0, "nodes": 3, "source": "nodeList"})
    );
    // The missing summary is the policy's warning, in policy-server's words.
    assert!(
        text.contains("the fleet summary ConfigMap kube-system/gpu-topology-fleet is unavailable"),
        "{text}"
    );
    assert!(
        text.contains("is unavailable: not found (HTTP 404) (host: …"),
        "{text}"
    );
    let sent = server.finish();
    assert_eq!(
        sent[1].path,
        "/api/v1/namespaces/kube-system/configmaps/gpu-topology-fleet"
    );
    assert_eq!(sent[2].path, "/api/v1/nodes");
    assert!(sent[3].query.contains("continue=page-2-token"));
}

/// API discovery of `group_version` listing `resources`, as the API server
/// answers `GET /apis/<group>/<version>` once their CRDs are installed.
fn discovery(group_version: &str, resources: &[(&str, &str, bool)]) -> Step {
    let resources: Vec<Value> = resources
        .iter()
        .map(|(name, kind, namespaced)| {
            json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind,
                   "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]})
        })
        .collect();
    Reply::json(&json!({"kind": "APIResourceList", "apiVersion": "v1",
                        "groupVersion": group_version, "resources": resources}))
    .into()
}

fn openreports_served() -> Step {
    discovery(
        "openreports.io/v1alpha1",
        &[
            ("clusterreports", "ClusterReport", false),
            ("reports", "Report", true),
        ],
    )
}

fn wgpolicyk8s_served() -> Step {
    discovery(
        "wgpolicyk8s.io/v1alpha2",
        &[
            ("clusterpolicyreports", "ClusterPolicyReport", false),
            ("policyreports", "PolicyReport", true),
        ],
    )
}

/// What the API server answers for a group/version nobody serves.
fn not_served() -> Step {
    Reply {
        status: 404,
        body: Some("404 page not found\n".to_owned()),
    }
    .with_header("content-type", "text/plain; charset=utf-8")
}

const OPENREPORTS: &str = "/apis/openreports.io/v1alpha1";
const WGPOLICYK8S: &str = "/apis/wgpolicyk8s.io/v1alpha2";
const ASK_OPENREPORTS_THEN_WGPOLICYK8S: &[&str] = &[OPENREPORTS, WGPOLICYK8S];
/// What stdout starts with: policy reports of each API.
const REPORTS: &str = "---\napiVersion: openreports.io/v1alpha1\nkind: Report\n";
const POLICY_REPORTS: &str = "---\napiVersion: wgpolicyk8s.io/v1alpha2\nkind: PolicyReport\n";

/// (audit's arguments, the discovery answers after the reads, what stdout
/// starts with, words standard error holds about the report API (none:
/// it says nothing of it), the discovery paths asked): live, without
/// `--report-api`, the API server's discovery decides, OpenReports first.
#[rstest]
#[case::openreports_served(&["-o", "policyreport"], vec![openreports_served()],
    REPORTS, &[], &[OPENREPORTS])]
#[case::only_wgpolicyk8s_served(&["-o", "policyreport"], vec![not_served(), wgpolicyk8s_served()],
    POLICY_REPORTS, &[], ASK_OPENREPORTS_THEN_WGPOLICYK8S)]
#[case::openreports_group_without_namespaced_reports(&["-o", "policyreport"],
    vec![discovery("openreports.io/v1alpha1", &[("clusterreports", "ClusterReport", false)]), wgpolicyk8s_served()],
    POLICY_REPORTS, &[], ASK_OPENREPORTS_THEN_WGPOLICYK8S)]
#[case::neither_served_defaults_to_openreports_naming_its_crd(&["-o", "policyreport"], vec![not_served(), not_served()],
    REPORTS, &["gpu-topology: found no policy-report API served", "once the reports.openreports.io CRD is installed"],
    ASK_OPENREPORTS_THEN_WGPOLICYK8S)]
#[case::discovery_refused(&["-o", "policyreport"], vec![refused(403, "forbidden: User \"x\" cannot get path \"/apis/openreports.io/v1alpha1\""), not_served()],
    REPORTS, &["cannot tell whether the API server serves openreports.io/v1alpha1 (reports.openreports.io): the API server http://127.0.0.1:", "answered 403 to /apis/openreports.io/v1alpha1: forbidden: User", "once the reports.openreports.io CRD is installed"],
    ASK_OPENREPORTS_THEN_WGPOLICYK8S)]
#[case::wgpolicyk8s_asked_for(&["-o", "policyreport", "--report-api", "wgpolicyk8s"], vec![],
    POLICY_REPORTS, &[], &[])]
#[case::openreports_asked_for(&["-o", "policyreport", "--report-api", "openreports"], vec![],
    REPORTS, &[], &[])]
#[case::no_policy_reports_no_discovery(&["-o", "yaml"], vec![],
    "apiVersion: gpu-topology.io/v1alpha1\nkind: AuditReport\n", &[], &[])]
fn audit_reads_the_cluster_live_and_writes_the_report_api_it_serves(
    #[case] args: &[&str],
    #[case] discovery_answers: Vec<Step>,
    #[case] stdout_head: &str,
    #[case] words: &[&str],
    #[case] asked: &[&str],
) {
    let mut steps = vec![
        version(),
        list(vec![live_pod("a", "gpu-a-1")], None),
        // No pod failed.
        list(vec![], None),
        Reply::json(&fixture("nodes-page-1.json")).into(),
        Reply::json(&fixture("nodes-page-2.json")).into(),
        refused(404, "the server could not find the requested resource"),
    ];
    steps.extend(discovery_answers);
    let server = Server::start(steps);
    let args: Vec<&str> = std::iter::once("audit")
        .chain(args.iter().copied())
        .collect();
    let output = run_binary(&server, "audit", &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // gpu-a-1 publishes no heartbeat and no kubelet facts: nothing fails,
    // some checks are skipped.
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("NodeFeature objects were not read"),
        "{stderr}"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with(stdout_head), "{text}");
    assert!(text.contains("name: a"), "{text}");
    for word in words {
        assert!(stderr.contains(word), "{word:?} not in {stderr}");
    }
    if words.is_empty() {
        assert!(
            !stderr.contains("policy-report API") && !stderr.contains("cannot tell"),
            "{stderr}"
        );
    }
    let sent = server.finish();
    assert_eq!(sent[1].path, "/api/v1/pods");
    assert_eq!(sent[2].path, "/api/v1/pods");
    assert_eq!(sent[3].path, "/api/v1/nodes");
    assert_eq!(sent[5].path, "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures");
    let discovered: Vec<&str> = sent[6..]
        .iter()
        .map(|request| request.path.as_str())
        .collect();
    assert_eq!(discovered, asked);
    assert!(sent[6..].iter().all(|request| request.method == "GET"));
}

/// The documents of a file of `tests/fixtures`, Lists expanded.
fn fixture_objects(path: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    gpu_topology_cli::input::read_file(&path)
        .unwrap()
        .into_iter()
        .map(|document| document.object)
        .collect()
}

/// The object of `file` (under tests/fixtures) named `name`.
fn named(file: &str, name: &str) -> Value {
    fixture_objects(file)
        .into_iter()
        .find(|object| object["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {file}"))
}

/// A 4-GPU pod the kubelet of `node` refused.
fn failed_pod(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}")},
           "spec": {"nodeName": node, "containers": [{"name": "trainer",
               "resources": {"limits": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}}}]},
           "status": {"phase": "Failed", "qosClass": "Guaranteed", "reason": "TopologyAffinityError",
                      "message": "Pod was rejected: Resources cannot be allocated with Topology locality"}})
}

const NRT_PATH: &str = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies";

/// Live, the failed pods are a second list (`status.phase=Failed`); their
/// nodes are answered from the Node list (no GET per node), and the
/// NodeResourceTopology of a node is read once for all its failed pods.
#[test]
fn audit_checks_the_bindings_of_failed_pods_live() {
    let server = Server::start(vec![
        version(),
        list(vec![], None),
        list(
            vec![
                failed_pod("train-0", "hgx-snn-1"),
                failed_pod("train-1", "hgx-snn-1"),
            ],
            None,
        ),
        list(vec![named("audit/nodes.json", "hgx-snn-1")], None),
        refused(404, "the server could not find the requested resource"),
        Reply::json(&named("topology/busy.yaml", "hgx-snn-1")).into(),
    ]);
    let output = run_binary(
        &server,
        "audit-failed",
        &["audit", "-o", "json", "--at", "2026-12-01T12:00:00Z"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let checks: Vec<&Value> = report["failedPods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pod| &pod["binding"]["check"])
        .collect();
    assert_eq!(checks, [&json!("refused"), &json!("refused")]);
    assert_eq!(report["summary"]["failedPodsRefusedNow"], 2);
    let sent = server.finish();
    assert_eq!(sent.len(), 6, "one NodeResourceTopology GET for both pods");
    assert_eq!(sent[2].path, "/api/v1/pods");
    assert_eq!(
        sent[2].query,
        query(&["fieldSelector=status.phase%3DFailed", "limit=500"])
    );
    assert_eq!(sent[5].path, format!("{NRT_PATH}/hgx-snn-1"));
}

/// (extra arguments, whether the NodeResourceTopology is read live):
/// `explain --node` GETs the Node and, without `--topology`, its
/// NodeResourceTopology, after the policy's own reads.
#[rstest]
#[case::read_live(&[], true)]
#[case::from_a_file(&["--topology", "tests/fixtures/topology/busy.yaml"], false)]
fn explain_checks_a_binding_live(#[case] extra: &[&str], #[case] nrt_live: bool) {
    let mut steps = vec![
        version(),
        refused(404, SUMMARY_MISSING),
        Reply::json(&fixture("nodes-page-1.json")).into(),
        Reply::json(&fixture("nodes-page-2.json")).into(),
        Reply::json(&named("audit/nodes.json", "hgx-snn-1")).into(),
    ];
    if nrt_live {
        steps.push(Reply::json(&named("topology/busy.yaml", "hgx-snn-1")).into());
    }
    let server = Server::start(steps);
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pod = crate_dir.join("tests/fixtures/objects/pods-4-and-16-gpus.yaml");
    let extra: Vec<String> = extra
        .iter()
        .map(|arg| match arg.strip_prefix("tests/") {
            Some(_) => crate_dir.join(arg).to_string_lossy().into_owned(),
            None => (*arg).to_owned(),
        })
        .collect();
    let mut args = vec![
        "explain",
        pod.to_str().unwrap(),
        "--node",
        "hgx-snn-1",
        "-o",
        "json",
    ];
    args.extend(extra.iter().map(String::as_str));
    let output = run_binary(&server, &format!("explain-node-{nrt_live}"), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let binding = &report["items"][0]["binding"];
    assert_eq!(binding["check"], "refused", "{binding}");
    assert!(
        binding["message"]
            .as_str()
            .unwrap()
            .contains("NUMA node 0 has 2 free, NUMA node 1 has 2 free"),
        "{binding}"
    );
    assert_eq!(report["items"][1]["binding"]["check"], "podRejected");
    let sent = server.finish();
    assert_eq!(sent[4].path, "/api/v1/nodes/hgx-snn-1");
    let nrt: Vec<&str> = sent[5..].iter().map(|r| r.path.as_str()).collect();
    let expected = format!("{NRT_PATH}/hgx-snn-1");
    assert_eq!(
        nrt,
        if nrt_live {
            vec![expected.as_str()]
        } else {
            vec![]
        }
    );
}
