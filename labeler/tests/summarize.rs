//! `gpu-topology-labeler summarize`: the summary built from fixture fleets
//! (tests/fixtures/fleet/*.json), then the Kubernetes adapter and the binary
//! against a scripted API server on 127.0.0.1 (with the client settings of
//! production, `sinks::api::configure`): paged listing, one server-side apply
//! per pass, API faults and what each leads to, 403s and unreadable answers.
//!
//! | fault | the pass |
//! |---|---|
//! | 429 (with `Retry-After`), 5xx, 409 on the apply; no answer (closed, or none within the request timeout); a page cut off mid-body | the same request again after the backoff, at least as long as `Retry-After` asks; the pass succeeds |
//! | the same, on every attempt | fails after `--api-attempts`; nothing is written; `--once` exits 3 |
//! | 410 Gone on a continue token (it expired) | the listing starts over (at most 3 times); every node counted once |
//! | 403 | fails at once, naming the RBAC rule that is missing |
//! | a 200 that is not a Node list | fails at once; nothing is written |

use crate::common;

use common::fake_api::{
    self, finish, kubeconfig, rate_limited, requests, sink_client, status_body, status_retry_after,
    Reply, Request, Step,
};
use common::scratch_dir;
use gpu_topology::{Fleet, FleetSummary, KubeletVersion, LabelPrefix, NodeTopology};
use gpu_topology_labeler::sinks::api::DEFAULT_FIELD_MANAGER;
use gpu_topology_labeler::sinks::retry::RetryPolicy;
use gpu_topology_labeler::summarize::kubernetes::{
    PassReport, SummarizeError, Summarizer, SummarizerConfig, DEFAULT_SUMMARY_NAME,
    DEFAULT_SUMMARY_NAMESPACE,
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
    /// The Node's `status.nodeInfo.kubeletVersion`; the API server prints
    /// an empty cell without one.
    #[serde(default, rename = "kubeletVersion")]
    kubelet_version: Option<String>,
    /// The kubernetes sink's heartbeat annotation on the Node.
    #[serde(default)]
    heartbeat: Option<String>,
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
/// What the API server answers a metadata-only list with.
const LIST_KIND: &str = "PartialObjectMetadataList";
const BACKOFF: Duration = Duration::from_millis(20);
/// Each read waits this long before the attempt counts as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(300);

fn config(attempts: u32) -> SummarizerConfig {
    SummarizerConfig {
        prefix: LabelPrefix::default(),
        namespace: DEFAULT_SUMMARY_NAMESPACE.to_owned(),
        name: DEFAULT_SUMMARY_NAME.to_owned(),
        field_manager: DEFAULT_FIELD_MANAGER.to_owned(),
        retry: RetryPolicy {
            attempts,
            initial_backoff: BACKOFF,
            max_backoff: Duration::from_millis(100),
        },
        request_timeout: REQUEST_TIMEOUT,
        interval: Duration::from_secs(60),
        once: true,
        dra: false,
        nodefeature_heartbeats: false,
    }
}

/// The summarizer as the binary builds it: no kube-internal retries, each
/// read limited to the request timeout.
fn summarizer(port: u16, attempts: u32) -> Summarizer {
    let config = config(attempts);
    Summarizer::new(sink_client(port, config.request_timeout), &config)
}

/// A page of the Node Table as the API server sends it for `Accept:
/// application/json;as=Table;v=v1;g=meta.k8s.io` and
/// `includeObject=Metadata`: the columns of `printNode`
/// (`pkg/printers/internalversion/printers.go`), each row's object the
/// Node's metadata.
fn node_page(nodes: &[FixtureNode], continue_token: Option<&str>) -> Reply {
    let rows: Vec<Value> = nodes
        .iter()
        .map(|node| {
            json!({
                "cells": [node.name, "Ready", "<none>", "12d", node.kubelet_version.as_deref().unwrap_or(""),
                          "10.0.0.7", "<none>", "Ubuntu 24.04.1 LTS", "6.8.0-48-generic", "containerd://1.7.22"],
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": {
                        "name": node.name,
                        "uid": format!("uid-{}", node.name),
                        "resourceVersion": "4711",
                        "labels": node.labels,
                        "annotations": annotations(node),
                    },
                },
            })
        })
        .collect();
    let mut metadata = json!({ "resourceVersion": "4711" });
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
        metadata["remainingItemCount"] = json!(1);
    }
    let column = |name: &str, priority: u32| json!({"name": name, "type": "string", "format": "", "description": "", "priority": priority});
    Reply::json(&json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [
            column("Name", 0), column("Status", 0), column("Roles", 0), column("Age", 0), column("Version", 0),
            column("Internal-IP", 1), column("External-IP", 1), column("OS-Image", 1), column("Kernel-Version", 1),
            column("Container-Runtime", 1),
        ],
        "rows": rows,
    }))
}

/// A Node's annotations: the ones every node has, and the labeler's
/// heartbeat where the fixture gives one.
fn annotations(node: &FixtureNode) -> Value {
    let mut annotations = json!({ "node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true" });
    if let Some(heartbeat) = &node.heartbeat {
        annotations["gpu-topology.io/published"] = json!(heartbeat);
    }
    annotations
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
    let mut expected = set(&[SELECTOR, LIMIT, "includeObject=Metadata"]);
    expected.extend(continued);
    assert_eq!(request.query, expected);
    let accept = request.accept.as_deref().unwrap_or_default();
    assert!(
        accept.starts_with("application/json;as=Table;v=v1;g=meta.k8s.io,"),
        "a table of metadata: {accept}"
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
    finish(server).await;

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
                kubelet_version: Some("v1.36.2".to_owned()),
                heartbeat: None,
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
    finish(server).await;

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
    finish(server).await;
    let written = assert_summary_apply(&requests(&log)[1]);
    assert!(written.fleet.is_empty());
    assert_eq!(written.malformed, 0);
}

/// The three requests of a two-page pass, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    FirstPage,
    SecondPage,
    Apply,
}

const CALLS: [Call; 3] = [Call::FirstPage, Call::SecondPage, Call::Apply];

/// Requests a pass makes before `call` when nothing fails.
fn calls_before(call: Call) -> usize {
    CALLS.iter().take_while(|c| **c != call).count()
}

/// A fault the scripted server injects in place of a call's answer.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Status(u16),
    /// 429 the way the API server's rate limiters send it (no `Retry-After`:
    /// the waits it asks for are tested on their own).
    RateLimited,
    /// The call's own answer, cut off after the headers and half the body.
    Cut,
    Close,
    Hang,
}

impl Fault {
    fn step(self, answer: &Reply) -> Step {
        match self {
            Fault::Status(code) => Reply::status(code).into(),
            Fault::RateLimited => rate_limited(None),
            Fault::Cut => Step::CutBody(answer.clone()),
            Fault::Close => Step::Close,
            Fault::Hang => Step::Hang,
        }
    }
}

/// A pass over the mixed fleet in two pages, with `faults` injected before
/// the answer to `call`; returns the result and the requests made.
async fn pass_against(
    call: Call,
    faults: &[Fault],
    attempts: u32,
) -> (Result<PassReport, SummarizeError>, Vec<Request>) {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (first, second) = fixture.nodes.split_at(4);
    let answers = [
        node_page(first, Some("page-2-token")),
        node_page(second, None),
        Reply::status(200),
    ];
    let mut steps: Vec<Step> = Vec::new();
    for (answer, this) in answers.iter().zip(CALLS) {
        if this == call {
            steps.extend(faults.iter().map(|fault| fault.step(answer)));
        }
        steps.push(answer.clone().into());
    }
    // A pass that gives up stops after the calls before `call` and its
    // attempts at `call`: the script ends there.
    let attempts_made = usize::try_from(attempts).unwrap();
    if faults.len() >= attempts_made {
        steps.truncate(calls_before(call) + attempts_made);
    }
    let (port, log, server) = fake_api::scripted(steps).await;
    let result = tokio::time::timeout(HANG_GUARD, summarizer(port, attempts).pass())
        .await
        .expect("the pass hung");
    finish(server).await;
    (result, requests(&log))
}

/// Far longer than any scripted pass takes.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// The requests of a pass with retries: each call's attempts are the same
/// request (the same continue token, the same apply body).
fn assert_retried_identically(requests: &[Request]) {
    for pair in requests.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if (&before.method, &before.query) == (&after.method, &after.query) {
            assert_eq!(before.path, after.path);
            assert_eq!(before.body, after.body);
            let pause = after.at - before.at;
            assert!(pause >= BACKOFF, "retried after {pause:?}");
        }
    }
}

#[rstest]
#[case::too_many_requests(&[Fault::RateLimited])]
#[case::internal_error(&[Fault::Status(500)])]
#[case::bad_gateway(&[Fault::Status(502)])]
#[case::unavailable(&[Fault::Status(503)])]
#[case::gateway_timeout(&[Fault::Status(504)])]
#[case::cut_mid_body(&[Fault::Cut])]
#[case::closed_without_an_answer(&[Fault::Close])]
#[case::no_answer_within_the_request_timeout(&[Fault::Hang])]
#[case::one_of_each(&[Fault::Status(503), Fault::Cut, Fault::Close, Fault::Hang])]
#[tokio::test]
async fn transient_faults_are_retried_until_the_pass_succeeds(
    #[values(Call::FirstPage, Call::SecondPage, Call::Apply)] call: Call,
    #[case] faults: &[Fault],
) {
    let (result, requests) = pass_against(call, faults, 5).await;
    let report = result.unwrap();
    assert_eq!(requests.len(), 3 + faults.len());
    assert_retried_identically(&requests);
    let gets: Vec<&Request> = requests.iter().filter(|r| r.method == "GET").collect();
    assert_node_list(gets[0], None);
    assert_node_list(gets.last().unwrap(), Some("page-2-token"));
    let patches: Vec<&Request> = requests.iter().filter(|r| r.method == "PATCH").collect();
    let written = assert_summary_apply(patches[0]);
    let fixture = fleet_fixture("mixed-fleet.json");
    assert_eq!(written.fleet, fixture.expected.fleet());
    assert_eq!(report.pages, 2);
    assert_eq!(report.summarized.nodes as usize, fixture.nodes.len());
}

/// The conventions' 429 recovery: wait at least `Retry-After` (here 1 s,
/// fifty times the test backoff); `details.retryAfterSeconds` of a `Status`
/// body counts when there is no header.
#[rstest]
#[case::rate_limiter_429(rate_limited(Some("1")))]
#[case::unavailable_503(Reply::status(503).with_header("Retry-After", "1"))]
#[case::status_details(status_retry_after(1))]
#[tokio::test]
async fn the_retry_waits_at_least_as_long_as_the_server_asked(
    #[values(Call::SecondPage, Call::Apply)] call: Call,
    #[case] fault: Step,
) {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (first, second) = fixture.nodes.split_at(4);
    let mut steps: Vec<Step> = vec![node_page(first, Some("page-2-token")).into()];
    if call == Call::SecondPage {
        steps.push(fault.clone());
    }
    steps.push(node_page(second, None).into());
    if call == Call::Apply {
        steps.push(fault);
    }
    steps.push(Reply::status(200).into());
    let (port, log, server) = fake_api::scripted(steps).await;
    summarizer(port, 5).pass().await.unwrap();
    finish(server).await;
    let requests = requests(&log);
    assert_eq!(requests.len(), 4);
    let retried = if call == Call::SecondPage { 1 } else { 2 };
    let pause = requests[retried + 1].at - requests[retried].at;
    assert!(pause >= Duration::from_secs(1), "retried after {pause:?}");
}

/// A fault on every attempt: the pass fails with the last error after the
/// attempt budget, and nothing is written.
#[rstest]
#[case::unavailable(Fault::Status(503))]
#[case::rate_limited(Fault::RateLimited)]
#[case::cut_mid_body(Fault::Cut)]
#[case::closed_without_an_answer(Fault::Close)]
#[tokio::test]
async fn a_fault_on_every_attempt_fails_the_pass_after_the_attempt_budget(
    #[values(Call::FirstPage, Call::SecondPage, Call::Apply)] call: Call,
    #[case] fault: Fault,
) {
    const ATTEMPTS: u32 = 3;
    let (result, requests) = pass_against(call, &[fault; ATTEMPTS as usize], ATTEMPTS).await;
    let error = result.unwrap_err();
    assert_eq!(requests.len(), calls_before(call) + ATTEMPTS as usize);
    assert_retried_identically(&requests);
    let attempts = match &error {
        SummarizeError::List { attempts, .. } => {
            assert_ne!(call, Call::Apply);
            *attempts
        }
        SummarizeError::Apply { attempts, .. } => {
            assert_eq!(call, Call::Apply);
            *attempts
        }
        other => panic!("{other}"),
    };
    assert_eq!(attempts, ATTEMPTS);
    assert!(error.to_string().contains("after 3 attempt(s)"), "{error}");
    if call != Call::Apply {
        assert!(
            requests.iter().all(|r| r.method == "GET"),
            "nothing written"
        );
    }
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
    finish(server).await;
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
    finish(server).await;
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
    finish(server).await;
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
/// panic, never a summary written from half a list (or from nothing).
#[rstest]
#[case::not_json(Reply::text("<html>502 Bad Gateway</html>"), "not a Node list")]
#[case::empty_body(Reply::text(""), "not a Node list")]
#[case::empty_object(Reply::json(&json!({})), "missing field `kind`")]
#[case::another_kind(Reply::json(&json!({"kind": "ConfigMapList", "items": []})), "kind \"ConfigMapList\"")]
#[case::items_not_a_list(Reply::json(&json!({"kind": LIST_KIND, "items": "nope"})), "not a Node list")]
#[case::name_not_a_string(Reply::json(&json!({"kind": LIST_KIND, "items": [{"metadata": {"name": 5}}]})), "not a Node list")]
#[case::labels_not_strings(Reply::json(&json!({"kind": LIST_KIND, "items": [{"metadata": {"name": "n", "labels": {"gpu-topology.io/gpus": 8}}}]})), "not a Node list")]
#[case::continue_not_a_string(Reply::json(&json!({"kind": LIST_KIND, "metadata": {"continue": 7}, "items": []})), "not a Node list")]
#[tokio::test]
async fn unreadable_node_lists_fail_the_pass(#[case] reply: Reply, #[case] expected: &str) {
    let (port, log, server) = fake_api::scripted(vec![reply]).await;
    let error = summarizer(port, 3).pass().await.unwrap_err();
    finish(server).await;
    assert_eq!(requests(&log).len(), 1, "no retry, no apply");
    assert!(
        matches!(error, SummarizeError::List { attempts: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains(expected), "{error}");
}

/// Nodes labeled by a labeler without the kubernetes sink carry no
/// `kubelet-version`: the summary takes each one's from its row's Version
/// cell, so GB200 trays on 1.35 and 1.36 are two groups, and a node whose
/// kubelet was upgraded past its label counts as what it runs.
#[tokio::test]
async fn the_summary_groups_nodes_by_the_version_their_kubelets_report() {
    let tray = |name: &str, label: Option<&str>, reported: &str| {
        let mut labels = BTreeMap::from([("gpu-topology.io/gpus".to_owned(), "4".to_owned())]);
        if let Some(version) = label {
            labels.insert(
                "gpu-topology.io/kubelet-version".to_owned(),
                version.to_owned(),
            );
        }
        FixtureNode {
            name: name.to_owned(),
            labels,
            kubelet_version: Some(reported.to_owned()),
            heartbeat: None,
        }
    };
    let nodes = [
        tray("tray-1", None, "v1.36.2"),
        tray("tray-2", None, "v1.35.0-eks-4096722"),
        tray("tray-3", Some("1.35"), "v1.36.0"),
        tray("tray-4", None, "unknown"),
    ];
    let (port, log, server) =
        fake_api::scripted(vec![node_page(&nodes, None), Reply::status(200)]).await;
    summarizer(port, 1).pass().await.unwrap();
    finish(server).await;
    assert_node_list(&requests(&log)[0], None);
    let written = assert_summary_apply(&requests(&log)[1]);
    let versions: Vec<(Option<KubeletVersion>, u32)> = written
        .fleet
        .groups()
        .iter()
        .map(|group| (group.topology.kubelet_version, group.nodes))
        .collect();
    assert_eq!(
        versions,
        [
            (Some(KubeletVersion::new(1, 36)), 2),
            (Some(KubeletVersion::new(1, 35)), 1),
            (None, 1),
        ]
    );
}

fn gpu_node(name: &str, heartbeat: Option<&str>) -> FixtureNode {
    FixtureNode {
        name: name.to_owned(),
        labels: BTreeMap::from([("gpu-topology.io/gpus".to_owned(), "8".to_owned())]),
        kubelet_version: None,
        heartbeat: heartbeat.map(str::to_owned),
    }
}

/// The kubernetes sink's heartbeats are on the Nodes; with
/// `--nodefeature-heartbeats` the nodefeature sink's are read from the
/// labeler's NodeFeature objects too. The summary keeps the oldest.
#[rstest]
#[case::node_annotations_only(false)]
#[case::and_nodefeature_objects(true)]
#[tokio::test]
async fn the_summary_carries_the_oldest_heartbeats(#[case] nodefeatures: bool) {
    let nodes = [
        gpu_node("fresh", Some("2026-12-03T11:00:00Z")),
        gpu_node("stale", Some("2026-12-01T08:00:00Z")),
        gpu_node("via-nfd", None),
        gpu_node("garbled", Some("yesterday")),
    ];
    let features = Reply::json(&json!({
        "kind": "NodeFeatureList",
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "metadata": {},
        "items": [
            {"metadata": {"name": "gpu-topology-via-nfd", "namespace": "gpu-topology-labeler",
                "labels": {"nfd.node.kubernetes.io/node-name": "via-nfd", "app.kubernetes.io/name": "gpu-topology-labeler"},
                "annotations": {"gpu-topology.io/published": "2026-11-30T00:00:00Z"}}},
            {"metadata": {"name": "gpu-topology-no-node", "annotations": {"gpu-topology.io/published": "2026-11-29T00:00:00Z"}}}
        ],
    }));
    let mut steps = vec![node_page(&nodes, None)];
    if nodefeatures {
        steps.push(features);
    }
    steps.push(Reply::status(200));
    let (port, log, server) = fake_api::scripted(steps).await;
    let config = SummarizerConfig {
        nodefeature_heartbeats: nodefeatures,
        ..config(1)
    };
    Summarizer::new(sink_client(port, config.request_timeout), &config)
        .pass()
        .await
        .unwrap();
    finish(server).await;
    let requests = requests(&log);
    if nodefeatures {
        assert_eq!(
            requests[1].path,
            "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures"
        );
        assert!(
            requests[1]
                .query
                .contains("labelSelector=app.kubernetes.io%2Fname%3Dgpu-topology-labeler"),
            "{:?}",
            requests[1].query
        );
    }
    let written = assert_summary_apply(requests.last().unwrap());
    let heartbeats = written.heartbeats.expect("the summary has heartbeats");
    let oldest: Vec<&str> = heartbeats
        .oldest()
        .iter()
        .map(|h| h.node.as_str())
        .collect();
    match nodefeatures {
        true => assert_eq!(oldest, ["via-nfd", "stale", "fresh"]),
        false => assert_eq!(oldest, ["stale", "fresh"]),
    }
}

#[tokio::test]
async fn odd_but_valid_nodes_do_not_stop_the_pass() {
    // No name, no labels, null labels: skipped, never a panic.
    let reply = Reply::json(&json!({
        "kind": LIST_KIND,
        "items": [
            {"metadata": {}},
            {"metadata": {"name": "no-labels"}},
            {"metadata": {"name": "null-labels", "labels": null}},
            {"metadata": {"labels": {"gpu-topology.io/gpus": "2"}}},
        ],
    }));
    let (port, log, server) = fake_api::scripted(vec![reply, Reply::status(200)]).await;
    let report = summarizer(port, 1).pass().await.unwrap();
    finish(server).await;
    assert_eq!(report.summarized.skipped, 3);
    let written = assert_summary_apply(&requests(&log)[1]);
    assert_eq!(written.fleet.nodes(), 1);
}

// ---------------------------------------------------------------------------
// The binary

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
    let output = summarize_command(&kubeconfig(&dir, port, "default"), &["--once"])
        .output()
        .await
        .unwrap();
    finish(server).await;
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
    let output = summarize_command(&kubeconfig(&dir, port, "default"), &["--once"])
        .output()
        .await
        .unwrap();
    finish(server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("`list` on nodes"), "{stderr}");
}

/// The binary's client retries only as `--api-attempts` says: with kube's own
/// retry layer on, the two 503s would be retried inside the first attempt
/// and the page after them would make the pass succeed.
#[tokio::test]
async fn the_binary_makes_exactly_the_attempts_it_is_given() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (port, log, server) = fake_api::scripted(vec![
        Reply::status(503),
        Reply::status(503),
        node_page(&fixture.nodes, None),
        Reply::status(200),
    ])
    .await;
    let dir = scratch_dir("summarize-attempts");
    let output = summarize_command(
        &kubeconfig(&dir, port, "default"),
        &["--once", "--api-attempts", "2"],
    )
    .output()
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("listing Nodes failed after 2 attempt(s)"),
        "{stderr}"
    );
    assert_eq!(requests(&log).len(), 2);
    server.abort();
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
    let child = summarize_command(&kubeconfig(&dir, port, "default"), &["--interval", "200ms"])
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
    finish(server).await;
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

// ---------------------------------------------------------------------------
// `--dra`: DeviceClasses and ResourceSlices in the summary

fn dra_summarizer(port: u16) -> Summarizer {
    let config = SummarizerConfig {
        dra: true,
        ..config(1)
    };
    Summarizer::new(sink_client(port, config.request_timeout), &config)
}

/// The NVIDIA DRA driver's `gpu.nvidia.com` DeviceClass, as it installs it
/// (e2e-tests/tests/fixtures/dra/deviceclasses/nvidia.yaml).
fn device_class_page() -> Reply {
    Reply::json(&json!({
        "kind": "DeviceClassList", "apiVersion": "resource.k8s.io/v1",
        "metadata": {"resourceVersion": "4711"},
        "items": [{"metadata": {"name": "gpu.nvidia.com"}, "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
            "extendedResourceName": "nvidia.com/gpu"
        }}]
    }))
}

/// A node's slice of the NVIDIA DRA driver: one GPU per NUMA node, in the
/// shape of the driver's reference page (e2e-tests/tests/fixtures/dra/
/// resourceslices/nvidia-gpu-doc.yaml), with attributes the summary drops.
fn slice_page(node: &str, continue_token: Option<&str>) -> Reply {
    let gpu = |numa: i64| {
        json!({"name": format!("gpu-{numa}"), "attributes": {
            "type": {"string": "gpu"},
            "productName": {"string": "NVIDIA A100-PCIE-40GB"},
            "resource.kubernetes.io/numaNode": {"int": numa}
        }, "capacity": {"memory": {"value": "40Gi"}}})
    };
    let mut metadata = json!({"resourceVersion": "4711"});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    Reply::json(&json!({
        "kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1",
        "metadata": metadata,
        "items": [{"metadata": {"name": format!("{node}-gpu.nvidia.com-x")}, "spec": {
            "driver": "gpu.nvidia.com", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [gpu(0), gpu(1)]
        }}]
    }))
}

fn apply_data(request: &Request) -> BTreeMap<String, String> {
    serde_json::from_value(request.body["data"].clone()).unwrap()
}

#[tokio::test]
async fn with_dra_the_summary_holds_the_nodes_devices_grouped() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (port, log, server) = fake_api::scripted(vec![
        node_page(&fixture.nodes, None),
        device_class_page(),
        slice_page("gpu-node-a", Some("slices-2")),
        slice_page("gpu-node-b", None),
        Reply::status(200),
    ])
    .await;
    let report = dra_summarizer(port).pass().await.unwrap();
    finish(server).await;
    assert_eq!(report.dra_left_out, None);
    let requests = requests(&log);
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[1].path, "/apis/resource.k8s.io/v1/deviceclasses");
    assert_eq!(requests[2].path, "/apis/resource.k8s.io/v1/resourceslices");
    assert_eq!(requests[2].query, set(&[LIMIT]));
    assert_eq!(requests[3].query, set(&[LIMIT, "continue=slices-2"]));
    assert_eq!(
        assert_summary_apply(&requests[4]),
        report.summarized.summary
    );
    let devices = gpu_topology::dra::DraDevices::from_summary_text(
        &apply_data(&requests[4])[gpu_topology::dra::DRA_DEVICES_KEY],
    )
    .unwrap();
    // Both nodes publish the same two GPUs: one group, the product dropped.
    assert_eq!(devices.groups.len(), 1, "{devices:?}");
    let group = &devices.groups[0];
    assert_eq!(group.nodes, 2);
    assert_eq!(group.examples, ["gpu-node-a", "gpu-node-b"]);
    // One GPU per NUMA node: two distinct devices, once each.
    assert_eq!(
        group.devices.iter().map(|c| c.count).collect::<Vec<_>>(),
        [1, 1]
    );
    assert!(group
        .devices
        .iter()
        .all(|counted| counted.device.attributes.len() == 2));
    // The classes travel with the devices (a claim's decision then lists
    // none), and the extended resource the class maps (KEP-5004) is
    // summarized apart, with the nodes that publish its devices.
    let classes = devices
        .classes
        .as_ref()
        .expect("the classes are summarized");
    assert_eq!(
        classes["gpu.nvidia.com"].extended_resource_name.as_deref(),
        Some("nvidia.com/gpu")
    );
    let mapped = gpu_topology::dra::ExtendedResources::from_summary_text(
        &apply_data(&requests[4])[gpu_topology::dra::DRA_EXTENDED_RESOURCES_KEY],
    )
    .unwrap();
    assert_eq!(
        mapped.0,
        vec![gpu_topology::dra::ExtendedResource {
            resource: "nvidia.com/gpu".into(),
            class: "gpu.nvidia.com".into(),
            nodes: 2,
            examples: vec!["gpu-node-a".into(), "gpu-node-b".into()],
        }]
    );
}

#[rstest]
#[case::forbidden(403, "`list` on resourceslices")]
#[case::not_served(404, "does not serve resource.k8s.io/v1 resourceslices")]
#[tokio::test]
async fn a_failed_slice_list_leaves_the_devices_out_and_the_summary_is_written(
    #[case] status: u16,
    #[case] reason: &str,
) {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (port, log, server) = fake_api::scripted(vec![
        node_page(&fixture.nodes, None),
        device_class_page(),
        Reply {
            status,
            body: Some(status_body(
                status,
                "resourceslices.resource.k8s.io is refused",
            )),
        },
        Reply::status(200),
    ])
    .await;
    let report = dra_summarizer(port).pass().await.unwrap();
    finish(server).await;
    let requests = requests(&log);
    assert_eq!(requests.len(), 4, "a {status} is not retried");
    assert_eq!(
        assert_summary_apply(&requests[3]),
        report.summarized.summary
    );
    let data = apply_data(&requests[3]);
    assert!(!data.contains_key(gpu_topology::dra::DRA_DEVICES_KEY));
    assert!(!data.contains_key(gpu_topology::dra::DRA_EXTENDED_RESOURCES_KEY));
    let left_out = report.dra_left_out.unwrap_or_default();
    assert!(left_out.contains(reason), "{left_out}");
}

/// A 200 that is no ResourceSlice list (a proxy's page, `{}`) is not read
/// as a cluster without devices: they are left out, with the reason.
#[tokio::test]
async fn an_answer_that_is_no_slice_list_leaves_the_devices_out() {
    let fixture = fleet_fixture("mixed-fleet.json");
    let (port, log, server) = fake_api::scripted(vec![
        node_page(&fixture.nodes, None),
        device_class_page(),
        Reply::json(&json!({})),
        Reply::status(200),
    ])
    .await;
    let report = dra_summarizer(port).pass().await.unwrap();
    finish(server).await;
    let requests = requests(&log);
    assert_eq!(requests.len(), 4, "not retried");
    assert!(!apply_data(&requests[3]).contains_key(gpu_topology::dra::DRA_DEVICES_KEY));
    let left_out = report.dra_left_out.unwrap_or_default();
    assert!(
        left_out.contains("expected \"ResourceSliceList\""),
        "{left_out}"
    );
}
