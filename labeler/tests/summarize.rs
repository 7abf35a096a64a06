//! `gpu-topology-labeler summarize`: the summary built from fixture fleets
//! (tests/fixtures/fleet/*.json), then the Kubernetes adapter and the binary
//! against a scripted API server on 127.0.0.1: paged listing, one
//! server-side apply per pass, retries, 403s and unreadable answers.

mod common;

use common::fake_api::{self, client, status_body, Log, Reply, Request};
use common::scratch_dir;
use gpu_topology::{Fleet, FleetSummary, LabelPrefix, NodeTopology};
use gpu_topology_labeler::sinks::kubernetes::{RetryPolicy, DEFAULT_FIELD_MANAGER};
use gpu_topology_labeler::summarize::kubernetes::{
    SummarizeError, Summarizer, SummarizerConfig, DEFAULT_SUMMARY_NAME, DEFAULT_SUMMARY_NAMESPACE,
};
use gpu_topology_labeler::summarize::{summarize, REPORTED_PROBLEMS};
use rstest::rstest;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------------------
// Fixture fleets

#[derive(Debug, Clone, Deserialize)]
struct FleetFixture {
    nodes: Vec<FixtureNode>,
    expected: Expected,
}

#[derive(Debug, Clone, Deserialize)]
struct FixtureNode {
    name: String,
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Expected {
    /// In first-seen order; labels by short name (`gpus`, not `gpu-topology.io/gpus`).
    groups: Vec<ExpectedGroup>,
    malformed: u32,
    malformed_nodes: Vec<String>,
    skipped: u32,
}

#[derive(Debug, Clone, Deserialize)]
struct ExpectedGroup {
    nodes: u32,
    labels: BTreeMap<String, String>,
}

fn fleet_fixture(file: &str) -> FleetFixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fleet")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn prefixed(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|(name, value)| (format!("gpu-topology.io/{name}"), value.clone()))
        .collect()
}

fn topology(labels: &BTreeMap<String, String>) -> NodeTopology {
    NodeTopology::from_labels(
        &LabelPrefix::default(),
        labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .unwrap()
}

impl Expected {
    fn fleet(&self) -> Fleet {
        let mut fleet = Fleet::new();
        for group in &self.groups {
            fleet.add_nodes(topology(&prefixed(&group.labels)), group.nodes);
        }
        fleet
    }
}

#[rstest]
#[case::mixed_fleet("mixed-fleet.json")]
#[case::nothing_labeled("empty.json")]
fn fixture_fleets_are_summarized(#[case] file: &str) {
    let fixture = fleet_fixture(file);
    let built = summarize(
        &LabelPrefix::default(),
        fixture.nodes.iter().map(|node| {
            (
                node.name.as_str(),
                node.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            )
        }),
        1_764_450_000,
    );
    let expected = &fixture.expected;
    assert_eq!(built.summary.fleet, expected.fleet());
    assert_eq!(built.summary.malformed, expected.malformed);
    assert_eq!(built.summary.generated_at, 1_764_450_000);
    assert_eq!(built.skipped, expected.skipped);
    assert_eq!(built.nodes as usize, fixture.nodes.len());
    let named: Vec<&str> = built.problems.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(named, expected.malformed_nodes);
    assert!(named.len() <= REPORTED_PROBLEMS);
}

/// The fixtures' groups are label sets the labeler writes: reading and
/// re-writing them through the label contract changes nothing.
#[rstest]
#[case::mixed_fleet("mixed-fleet.json")]
fn fixture_label_sets_are_what_the_labeler_writes(#[case] file: &str) {
    let prefix = LabelPrefix::default();
    for group in fleet_fixture(file).expected.groups {
        let labels = prefixed(&group.labels);
        assert_eq!(topology(&labels).to_labels(&prefix), labels);
    }
}

// ---------------------------------------------------------------------------
// The adapter against a scripted API server

const SELECTOR: &str = "labelSelector=gpu-topology.io%2Fgpus";
const LIMIT: &str = "limit=500";

fn config(attempts: u32) -> SummarizerConfig {
    SummarizerConfig {
        prefix: LabelPrefix::default(),
        namespace: DEFAULT_SUMMARY_NAMESPACE.to_owned(),
        name: DEFAULT_SUMMARY_NAME.to_owned(),
        field_manager: DEFAULT_FIELD_MANAGER.to_owned(),
        retry: RetryPolicy {
            attempts,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(100),
        },
        request_timeout: Duration::from_secs(10),
        interval: Duration::from_secs(60),
        once: true,
    }
}

fn summarizer(port: u16, attempts: u32) -> Summarizer {
    Summarizer::new(client(port), &config(attempts))
}

/// A `PartialObjectMetadataList` page as the API server sends it for
/// `Accept: ...;as=PartialObjectMetadataList`.
fn node_page(nodes: &[FixtureNode], continue_token: Option<&str>) -> Reply {
    let items: Vec<Value> = nodes
        .iter()
        .map(|node| {
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {
                    "name": node.name,
                    "uid": format!("uid-{}", node.name),
                    "resourceVersion": "4711",
                    "labels": node.labels,
                    "annotations": { "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
                },
            })
        })
        .collect();
    let mut metadata = json!({ "resourceVersion": "4711" });
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
        metadata["remainingItemCount"] = json!(1);
    }
    Reply::json(&json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "items": items,
    }))
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn assert_node_list(request: &Request, continue_token: Option<&str>) {
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, "/api/v1/nodes");
    let continued = continue_token.map(|t| format!("continue={t}"));
    let mut expected = set(&[SELECTOR, LIMIT]);
    expected.extend(continued);
    assert_eq!(request.query, expected);
    let accept = request.accept.as_deref().unwrap_or_default();
    assert!(
        accept.contains("as=PartialObjectMetadataList"),
        "metadata only: {accept}"
    );
}

/// The one PATCH of a pass; returns the summary it carries.
fn assert_summary_apply(request: &Request) -> FleetSummary {
    assert_eq!(request.method, "PATCH");
    assert_eq!(
        request.path,
        "/api/v1/namespaces/kube-system/configmaps/gpu-topology-fleet"
    );
    assert_eq!(
        request.query,
        set(&["fieldManager=gpu-topology-labeler", "force=true"])
    );
    assert_eq!(
        request.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
    let body = &request.body;
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["kind"], "ConfigMap");
    assert_eq!(
        body["metadata"],
        json!({
            "name": "gpu-topology-fleet",
            "namespace": "kube-system",
            "labels": {
                "app.kubernetes.io/name": "gpu-topology-labeler",
                "app.kubernetes.io/component": "fleet-summary",
            },
        })
    );
    let data: BTreeMap<String, String> = serde_json::from_value(body["data"].clone()).unwrap();
    FleetSummary::from_data(data.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap()
}

fn requests(log: &Log) -> Vec<Request> {
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn lists_two_pages_then_applies_one_summary() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (first, second) = fixture.nodes.split_at(4);
    let (port, log, server) = fake_api::scripted(vec![
        node_page(first, Some("page-2-token")),
        node_page(second, None),
        Reply::status(200),
    ])
    .await;
    let before = unix_now();
    let report = summarizer(port, 1).pass().await.unwrap();
    let after = unix_now();
    server.await.unwrap();

    let requests = requests(&log);
    assert_eq!(requests.len(), 3);
    assert_node_list(&requests[0], None);
    assert_node_list(&requests[1], Some("page-2-token"));
    let written = assert_summary_apply(&requests[2]);
    assert_eq!(written.fleet, fixture.expected.fleet());
    assert_eq!(written.malformed, fixture.expected.malformed);
    assert!((before..=after).contains(&written.generated_at));
    assert_eq!(written, report.summarized.summary);
    assert_eq!(report.pages, 2);
    assert_eq!(report.summarized.skipped, fixture.expected.skipped);
}

#[tokio::test]
async fn a_large_fleet_is_read_in_pages_of_500() {
    let shapes = [
        ("8", "4", "nvswitch"),
        ("4", "2", "pcie"),
        ("8", "2", "nvlink"),
    ];
    let nodes: Vec<FixtureNode> = (0..5_000)
        .map(|i| {
            let (gpus, per_numa, interconnect) = shapes[i % shapes.len()];
            let mut labels = prefixed(&BTreeMap::from([
                ("gpus".to_owned(), gpus.to_owned()),
                ("gpus-per-numa-max".to_owned(), per_numa.to_owned()),
                ("interconnect".to_owned(), interconnect.to_owned()),
            ]));
            labels.insert("kubernetes.io/hostname".into(), format!("node-{i:04}"));
            FixtureNode {
                name: format!("node-{i:04}"),
                labels,
            }
        })
        .collect();
    let pages: Vec<&[FixtureNode]> = nodes.chunks(500).collect();
    let mut replies: Vec<Reply> = pages
        .iter()
        .enumerate()
        .map(|(i, page)| {
            let token = (i + 1 < pages.len()).then(|| format!("token-{}", i + 1));
            node_page(page, token.as_deref())
        })
        .collect();
    replies.push(Reply::status(200));
    let (port, log, server) = fake_api::scripted(replies).await;
    let report = summarizer(port, 1).pass().await.unwrap();
    server.await.unwrap();

    let requests = requests(&log);
    assert_eq!(requests.len(), 11);
    assert_node_list(&requests[0], None);
    for (i, request) in requests[1..10].iter().enumerate() {
        assert_node_list(request, Some(&format!("token-{}", i + 1)));
    }
    let written = assert_summary_apply(&requests[10]);
    assert_eq!(report.pages, 10);
    assert_eq!(written.fleet.nodes(), 5_000);
    let counts: Vec<u32> = written.fleet.groups().iter().map(|g| g.nodes).collect();
    assert_eq!(counts, [1667, 1667, 1666]);
}

#[tokio::test]
async fn an_empty_fleet_is_written_too() {
    let (port, log, server) =
        fake_api::scripted(vec![node_page(&[], None), Reply::status(201)]).await;
    summarizer(port, 1).pass().await.unwrap();
    server.await.unwrap();
    let written = assert_summary_apply(&requests(&log)[1]);
    assert!(written.fleet.is_empty());
    assert_eq!(written.malformed, 0);
}

/// (replies, requests made): transient answers on either call are retried.
#[rstest]
#[case::list_500_then_200(vec![Reply::status(500)], vec![], 3)]
#[case::list_429_503_then_200(vec![Reply::status(429), Reply::status(503)], vec![], 4)]
#[case::apply_503_then_200(vec![], vec![Reply::status(503)], 3)]
#[tokio::test]
async fn transient_errors_are_retried(
    #[case] list_failures: Vec<Reply>,
    #[case] apply_failures: Vec<Reply>,
    #[case] made: usize,
) {
    let fixture = fleet_fixture("mixed-fleet.json");
    let mut replies = list_failures;
    replies.push(node_page(&fixture.nodes, None));
    replies.extend(apply_failures);
    replies.push(Reply::status(200));
    let (port, log, server) = fake_api::scripted(replies).await;
    summarizer(port, 5).pass().await.unwrap();
    server.await.unwrap();
    let requests = requests(&log);
    assert_eq!(requests.len(), made);
    let patches: Vec<&Request> = requests.iter().filter(|r| r.method == "PATCH").collect();
    assert!(patches.iter().all(|p| p.body == patches[0].body));
    let written = assert_summary_apply(patches[0]);
    assert_eq!(written.fleet, fixture.expected.fleet());
    for request in requests.iter().filter(|r| r.method == "GET") {
        assert_node_list(request, None);
    }
}

#[tokio::test]
async fn server_errors_fail_the_pass_after_the_attempt_budget() {
    let (port, log, server) = fake_api::scripted(vec![Reply::status(503); 3]).await;
    let error = summarizer(port, 3).pass().await.unwrap_err();
    server.await.unwrap();
    assert_eq!(requests(&log).len(), 3);
    assert!(
        matches!(error, SummarizeError::List { attempts: 3, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn an_expired_continue_token_restarts_the_listing() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (first, second) = fixture.nodes.split_at(4);
    let gone = Reply {
        status: 410,
        body: Some(status_body(
            410,
            "The provided continue parameter is too old to display a consistent list result.",
        )),
    };
    let (port, log, server) = fake_api::scripted(vec![
        node_page(first, Some("old-token")),
        gone,
        node_page(first, Some("new-token")),
        node_page(second, None),
        Reply::status(200),
    ])
    .await;
    let report = summarizer(port, 1).pass().await.unwrap();
    server.await.unwrap();
    let requests = requests(&log);
    assert_eq!(requests.len(), 5);
    assert_node_list(&requests[1], Some("old-token"));
    assert_node_list(&requests[2], None);
    assert_node_list(&requests[3], Some("new-token"));
    // Every node counted once: the first listing's page is dropped.
    let written = assert_summary_apply(&requests[4]);
    assert_eq!(written.fleet, fixture.expected.fleet());
    assert_eq!(report.summarized.nodes as usize, fixture.nodes.len());
}

#[tokio::test]
async fn a_forbidden_list_names_the_missing_permission() {
    let forbidden = Reply {
        status: 403,
        body: Some(status_body(
            403,
            "nodes is forbidden: User \"system:serviceaccount:kube-system:gpu-topology-fleet-summary\" cannot list resource \"nodes\" in API group \"\" at the cluster scope",
        )),
    };
    let (port, log, server) = fake_api::scripted(vec![forbidden]).await;
    let error = summarizer(port, 5).pass().await.unwrap_err();
    server.await.unwrap();
    assert_eq!(requests(&log).len(), 1, "a 403 is not retried");
    assert!(
        matches!(error, SummarizeError::ListForbidden { .. }),
        "{error}"
    );
    let message = error.to_string();
    for expected in [
        "`list` on nodes",
        "ClusterRole",
        "cannot list resource \"nodes\"",
    ] {
        assert!(
            message.contains(expected),
            "{expected} missing from: {message}"
        );
    }
}

#[tokio::test]
async fn a_forbidden_apply_names_the_missing_permission() {
    let (port, log, server) =
        fake_api::scripted(vec![node_page(&[], None), Reply::status(403)]).await;
    let error = summarizer(port, 5).pass().await.unwrap_err();
    server.await.unwrap();
    assert_eq!(requests(&log).len(), 2, "a 403 is not retried");
    let message = error.to_string();
    for expected in [
        "ConfigMap kube-system/gpu-topology-fleet",
        "resources [configmaps]",
        "resourceNames [gpu-topology-fleet]",
        "verbs [create, patch]",
    ] {
        assert!(
            message.contains(expected),
            "{expected} missing from: {message}"
        );
    }
}

/// Answers a real API server never sends: an error of the pass, never a
/// panic, never a summary written from half a list.
#[rstest]
#[case::not_json(Reply::text("<html>502 Bad Gateway</html>"))]
#[case::empty_body(Reply::text(""))]
#[case::items_not_a_list(Reply::json(&json!({"kind": "PartialObjectMetadataList", "items": "nope"})))]
#[case::name_not_a_string(Reply::json(&json!({"items": [{"metadata": {"name": 5}}]})))]
#[case::labels_not_strings(Reply::json(&json!({"items": [{"metadata": {"name": "n", "labels": {"gpu-topology.io/gpus": 8}}}]})))]
#[case::continue_not_a_string(Reply::json(&json!({"metadata": {"continue": 7}, "items": []})))]
#[tokio::test]
async fn unreadable_node_lists_fail_the_pass(#[case] reply: Reply) {
    let (port, log, server) = fake_api::scripted(vec![reply]).await;
    let error = summarizer(port, 3).pass().await.unwrap_err();
    server.await.unwrap();
    assert_eq!(requests(&log).len(), 1, "no retry, no apply");
    assert!(
        matches!(error, SummarizeError::List { attempts: 1, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn odd_but_valid_nodes_do_not_stop_the_pass() {
    // No name, no labels, null labels: skipped, never a panic.
    let reply = Reply::json(&json!({
        "items": [
            {"metadata": {}},
            {"metadata": {"name": "no-labels"}},
            {"metadata": {"name": "null-labels", "labels": null}},
            {"metadata": {"labels": {"gpu-topology.io/gpus": "2"}}},
        ],
    }));
    let (port, log, server) = fake_api::scripted(vec![reply, Reply::status(200)]).await;
    let report = summarizer(port, 1).pass().await.unwrap();
    server.await.unwrap();
    assert_eq!(report.summarized.skipped, 3);
    let written = assert_summary_apply(&requests(&log)[1]);
    assert_eq!(written.fleet.nodes(), 1);
}

// ---------------------------------------------------------------------------
// The binary

/// A kubeconfig that points at the scripted server, without credentials.
fn kubeconfig(dir: &Path, port: u16) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: fake\n  user: {{}}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\ncurrent-context: fake\n"
        ),
    )
    .unwrap();
    path
}

fn summarize_command(kubeconfig: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_gpu-topology-labeler"));
    command
        .arg("summarize")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn summarize_once_writes_the_summary_and_exits_zero() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (port, log, server) =
        fake_api::scripted(vec![node_page(&fixture.nodes, None), Reply::status(200)]).await;
    let dir = scratch_dir("summarize-once");
    let output = summarize_command(&kubeconfig(&dir, port), &["--once"])
        .output()
        .await
        .unwrap();
    server.await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(output.stdout.is_empty());
    let requests = requests(&log);
    assert_eq!(requests.len(), 2);
    assert_node_list(&requests[0], None);
    let written = assert_summary_apply(&requests[1]);
    assert_eq!(written.fleet, fixture.expected.fleet());
    // One info line per pass with what it did; the malformed nodes by name.
    for expected in [
        "fleet summary written",
        "nodes=6",
        "groups=3",
        "malformed=2",
        "elapsed_ms=",
        "dgx-a100-003",
        "broken-001",
    ] {
        assert!(
            stderr.contains(expected),
            "{expected} missing from: {stderr}"
        );
    }
}

#[tokio::test]
async fn summarize_once_exits_with_the_publish_code_when_the_pass_fails() {
    let (port, _log, server) = fake_api::scripted(vec![Reply::status(403)]).await;
    let dir = scratch_dir("summarize-once-forbidden");
    let output = summarize_command(&kubeconfig(&dir, port), &["--once"])
        .output()
        .await
        .unwrap();
    server.await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("`list` on nodes"), "{stderr}");
}

#[tokio::test]
async fn summarize_without_credentials_is_a_usage_error() {
    let dir = scratch_dir("summarize-no-credentials");
    let output = summarize_command(&dir.join("missing-kubeconfig"), &["--once"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Kubernetes client"));
}

/// The loop survives a failed pass, writes on every pass (generatedAt must
/// advance), and stops cleanly on SIGTERM.
#[tokio::test]
async fn the_loop_retries_a_failed_pass_and_writes_every_pass() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (port, log, server) = fake_api::scripted(vec![
        Reply::status(403),
        node_page(&fixture.nodes, None),
        Reply::status(200),
        node_page(&fixture.nodes, None),
        Reply::status(200),
    ])
    .await;
    let dir = scratch_dir("summarize-loop");
    let child = summarize_command(&kubeconfig(&dir, port), &["--interval", "200ms"])
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while requests(&log).len() < 5 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            requests(&log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.await.unwrap();
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("retrying next interval"), "{stderr}");
    assert!(stderr.contains("stopping on signal"), "{stderr}");
    let patches: Vec<FleetSummary> = requests(&log)
        .iter()
        .filter(|r| r.method == "PATCH")
        .map(assert_summary_apply)
        .collect();
    assert_eq!(patches.len(), 2, "an unchanged fleet is written again");
    assert!(patches[1].generated_at >= patches[0].generated_at);
}
