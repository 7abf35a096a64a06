//! API-server faults for both API sinks (kubernetes and nodefeature), from the
//! scripted loopback server, and what each must lead to:
//!
//! | fault | the sink |
//! |---|---|
//! | 409, 429, 5xx; no answer (closed, or none within `--request-timeout`); body cut after the headers | retries with backoff, at least as long as `Retry-After` asks, and succeeds |
//! | the same, on every attempt | gives up after `--api-attempts` with the last error; exit code 3 |
//! | 400, 401, 403, 404, 422; a success that is not the object | gives up at once with the server's message; exit code 3 |
//!
//! Every attempt sends the same, complete object: a fault never publishes part
//! of the labels, and a failed publish leaves the last good object as it was
//! (the API server applies a request whole or not at all).
//!
//! Both sinks also carry the heartbeat annotation: it is refreshed only with
//! the labels or once its interval has passed, and a failed apply does not
//! count as one sent.

use crate::common;

use common::fake_api::{
    self, finish, kubeconfig, rate_limited, requests, sink_client, status_body, status_retry_after,
    Reply, Request, Step,
};
use common::{isolated, labels, scratch_dir, topology_fixtures};
use gpu_topology_labeler::app::{exit, RunError};
use gpu_topology_labeler::sinks::api::DEFAULT_FIELD_MANAGER;
use gpu_topology_labeler::sinks::kubernetes::KubernetesSink;
use gpu_topology_labeler::sinks::nodefeature::{NodeFeatureSink, Target};
use gpu_topology_labeler::sinks::retry::RetryPolicy;
use gpu_topology_labeler::sinks::{Labels, PublishError};
use jiff::Timestamp;
use rstest::rstest;
use serde_json::json;
use std::time::Duration;

const NODE: &str = "gpu-node-1";
const NAMESPACE: &str = "gpu-topology-labeler";
const POD: &str = "gpu-topology-labeler-x7k2p";
const ATTEMPTS: u32 = 5;
const BACKOFF: Duration = Duration::from_millis(20);
/// Each read waits this long before the attempt counts as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_millis(300);
/// Far longer than any scripted publish takes.
const HANG_GUARD: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Kubernetes,
    NodeFeature,
}

enum Sink {
    Kubernetes(KubernetesSink),
    NodeFeature(NodeFeatureSink),
}

impl Sink {
    fn new(kind: Kind, port: u16, attempts: u32, pod: Option<&str>) -> Self {
        let client = sink_client(port, REQUEST_TIMEOUT);
        let retry = RetryPolicy {
            attempts,
            initial_backoff: BACKOFF,
            max_backoff: Duration::from_millis(100),
        };
        match kind {
            Kind::Kubernetes => Sink::Kubernetes(KubernetesSink::new(
                client,
                NODE.to_owned(),
                DEFAULT_FIELD_MANAGER,
                retry,
                &gpu_topology::LabelPrefix::default(),
            )),
            Kind::NodeFeature => Sink::NodeFeature(NodeFeatureSink::new(
                client,
                Target {
                    node: NODE.to_owned(),
                    namespace: Some(NAMESPACE.to_owned()),
                    pod: pod.map(str::to_owned),
                },
                DEFAULT_FIELD_MANAGER,
                retry,
                &gpu_topology::LabelPrefix::default(),
            )),
        }
    }

    async fn publish(&mut self, labels: &Labels) -> Result<(), PublishError> {
        self.publish_at(labels, Timestamp::now()).await
    }

    async fn publish_at(&mut self, labels: &Labels, now: Timestamp) -> Result<(), PublishError> {
        match self {
            Sink::Kubernetes(sink) => sink.publish(labels, now).await,
            Sink::NodeFeature(sink) => sink.publish(labels, now).await,
        }
    }

    fn needs_refresh(&self, now: Timestamp) -> bool {
        match self {
            Sink::Kubernetes(sink) => sink.needs_refresh(now),
            Sink::NodeFeature(sink) => sink.needs_refresh(now),
        }
    }
}

fn dgx_labels() -> Labels {
    labels(&[
        ("gpus", "8"),
        ("gpus-per-numa-max", "2"),
        ("nvlink-group-max", "8"),
    ])
}

/// The labels an apply request carries, wherever the sink puts them.
fn applied_labels(kind: Kind, request: &Request) -> serde_json::Value {
    match kind {
        Kind::Kubernetes => request.body["metadata"]["labels"].clone(),
        Kind::NodeFeature => request.body["spec"]["labels"].clone(),
    }
}

/// Publishes `dgx_labels()` through `kind` against `steps`; returns the result
/// and the requests made.
async fn publish_against(
    kind: Kind,
    steps: Vec<Step>,
    attempts: u32,
) -> (Result<(), PublishError>, Vec<Request>) {
    let (port, log, server) = fake_api::scripted(steps).await;
    let mut sink = Sink::new(kind, port, attempts, None);
    // A guard against a sink that hangs (no request timeout), not a timing.
    let result = tokio::time::timeout(HANG_GUARD, sink.publish(&dgx_labels()))
        .await
        .expect("the publish hung");
    finish(server).await;
    (result, requests(&log))
}

/// Every request is the same apply of the whole label set.
fn assert_identical_complete_applies(kind: Kind, requests: &[Request]) {
    for request in requests {
        assert_eq!(request.method, "PATCH");
        assert_eq!(request.path, requests[0].path);
        assert_eq!(request.body, requests[0].body);
        assert_eq!(applied_labels(kind, request), json!(dgx_labels()));
    }
}

fn status(code: u16) -> Step {
    Reply::status(code).into()
}

#[rstest]
#[case::conflict(vec![status(409)])]
#[case::too_many_requests_without_retry_after(vec![rate_limited(None)])]
#[case::internal_error(vec![status(500)])]
#[case::bad_gateway(vec![status(502)])]
#[case::unavailable(vec![status(503)])]
#[case::gateway_timeout(vec![status(504)])]
#[case::success_cut_after_the_headers(vec![Step::CutBody(Reply::status(200))])]
#[case::error_cut_after_the_headers(vec![Step::CutBody(Reply::status(503))])]
#[case::closed_without_an_answer(vec![Step::Close])]
#[case::no_answer_within_the_request_timeout(vec![Step::Hang])]
#[case::one_of_each(vec![status(409), rate_limited(None), Step::Close, Step::Hang])]
#[tokio::test]
async fn transient_faults_are_retried_until_the_apply_succeeds(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
    #[case] faults: Vec<Step>,
) {
    let tries = faults.len() + 1;
    let mut steps = faults;
    steps.push(Reply::status(200).into());
    let (result, requests) = publish_against(kind, steps, ATTEMPTS).await;
    result.unwrap();
    assert_eq!(requests.len(), tries);
    assert_identical_complete_applies(kind, &requests);
    for pair in requests.windows(2) {
        let pause = pair[1].at - pair[0].at;
        assert!(pause >= BACKOFF, "retried after {pause:?}");
    }
}

/// The conventions' 429 recovery: wait at least `Retry-After` (here 1 s, fifty
/// times the test backoff). The header wins; `details.retryAfterSeconds` of a
/// `Status` body counts when there is no header.
#[rstest]
#[case::rate_limiter_429(rate_limited(Some("1")))]
#[case::unavailable_503(Reply::status(503).with_header("Retry-After", "1"))]
#[case::status_details(status_retry_after(1))]
#[tokio::test]
async fn the_retry_waits_at_least_as_long_as_the_server_asked(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
    #[case] fault: Step,
) {
    let (result, requests) =
        publish_against(kind, vec![fault, Reply::status(200).into()], ATTEMPTS).await;
    result.unwrap();
    assert_eq!(requests.len(), 2);
    let pause = requests[1].at - requests[0].at;
    assert!(pause >= Duration::from_secs(1), "retried after {pause:?}");
}

#[rstest]
#[case::bad_request(400, "the request makes no sense")]
#[case::unauthorized(401, "Unauthorized")]
#[case::forbidden(403, "nodes \"gpu-node-1\" is forbidden")]
#[case::not_found(404, "the server could not find the requested resource")]
#[case::invalid(422, "metadata.labels: Invalid value: \"x\"")]
#[tokio::test]
async fn permanent_refusals_are_not_retried(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
    #[case] code: u16,
    #[case] message: &str,
) {
    let refusal = Reply {
        status: code,
        body: Some(status_body(code, message)),
    };
    // One scripted answer: a retry would find the port closed and count as
    // another attempt.
    let (result, requests) = publish_against(kind, vec![refusal.into()], ATTEMPTS).await;
    let error = result.unwrap_err();
    assert_eq!(requests.len(), 1);
    let text = error.to_string();
    assert!(text.contains("after 1 attempt(s)"), "{text}");
    assert!(text.contains(&format!("answered {code}")), "{text}");
    assert!(text.contains(message), "{text}");
    assert_eq!(RunError::from(error).exit_code(), exit::PUBLISH);
}

#[rstest]
#[case::unavailable(status(503))]
#[case::closed_without_an_answer(Step::Close)]
#[case::body_cut(Step::CutBody(Reply::status(200)))]
#[tokio::test]
async fn a_fault_on_every_attempt_gives_up_after_the_attempt_budget(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
    #[case] fault: Step,
) {
    let steps = vec![fault; ATTEMPTS as usize];
    let (result, requests) = publish_against(kind, steps, ATTEMPTS).await;
    let error = result.unwrap_err();
    assert_eq!(requests.len(), ATTEMPTS as usize);
    assert_identical_complete_applies(kind, &requests);
    let attempts = match &error {
        PublishError::Kubernetes { attempts, .. } | PublishError::NodeFeature { attempts, .. } => {
            *attempts
        }
        other => panic!("{other}"),
    };
    assert_eq!(attempts, ATTEMPTS);
    assert_eq!(RunError::from(error).exit_code(), exit::PUBLISH);
}

/// A 200 whose body is not the applied object (a proxy's page) is not taken as
/// published.
#[rstest]
#[case::not_json(Reply::text("<html>OK</html>"))]
#[case::another_object(Reply::json(&json!({"kind": "Node", "metadata": {"name": "other-node"}})))]
#[tokio::test]
async fn a_success_that_is_not_the_object_is_an_error(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
    #[case] answer: Reply,
) {
    let (result, requests) = publish_against(kind, vec![answer.into()], ATTEMPTS).await;
    let error = result.unwrap_err();
    assert_eq!(requests.len(), 1);
    assert!(
        error.to_string().contains("not the expected object"),
        "{error}"
    );
}

/// Applied labels are due again ten minutes after the last success; a failed
/// apply keeps them due, so the daemon tries again instead of taking the
/// failed state for published.
#[rstest]
#[tokio::test]
async fn a_failed_apply_leaves_the_labels_due_for_another_apply(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
) {
    let at = |text: &str| text.parse::<Timestamp>().unwrap();
    let (port, _log, server) =
        fake_api::scripted(vec![Reply::status(200), Reply::status(422)]).await;
    let mut sink = Sink::new(kind, port, 1, None);
    assert!(sink.needs_refresh(at("2025-03-01T12:00:00Z")));
    sink.publish_at(&dgx_labels(), at("2025-03-01T12:00:00Z"))
        .await
        .unwrap();
    assert!(!sink.needs_refresh(at("2025-03-01T12:09:59Z")));
    assert!(sink.needs_refresh(at("2025-03-01T12:10:00Z")));
    sink.publish_at(&dgx_labels(), at("2025-03-01T12:10:00Z"))
        .await
        .unwrap_err();
    finish(server).await;
    assert!(sink.needs_refresh(at("2025-03-01T12:10:01Z")));
}

// ---------------------------------------------------------------------------
// The nodefeature sink's owner lookup

fn pod_metadata() -> Reply {
    Reply::json(&json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "name": POD,
            "namespace": NAMESPACE,
            "uid": "a7f4b1c2-0d3e-4f5a-8b6c-7d8e9f0a1b2c",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "gpu-topology-labeler",
                                 "uid": "5e0c3a6e-2f6f-4b8e-9d1e-0c7c1d1f7a11", "controller": true}],
        },
    }))
}

#[rstest]
#[case::unavailable(status(503))]
#[case::cut(Step::CutBody(pod_metadata()))]
#[case::closed(Step::Close)]
#[tokio::test]
async fn the_owner_lookup_is_retried_like_the_apply(#[case] fault: Step) {
    let (port, log, server) = fake_api::scripted(vec![
        fault,
        pod_metadata().into(),
        Reply::status(200).into(),
    ])
    .await;
    Sink::new(Kind::NodeFeature, port, ATTEMPTS, Some(POD))
        .publish(&dgx_labels())
        .await
        .unwrap();
    finish(server).await;
    let methods: Vec<String> = requests(&log).into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["GET", "GET", "PATCH"]);
}

/// Without its owner the object is not applied at all: an object nobody owns
/// would outlive the labeler.
#[rstest]
#[case::forbidden(Reply::status(403), "verbs [get]")]
#[case::no_such_pod(Reply::status(404), "POD_NAME from metadata.name")]
#[case::not_the_pod(Reply::json(&json!({"metadata": {"name": "someone-else"}})), "not the expected object")]
#[case::no_uid(Reply::json(&json!({"metadata": {"name": POD}})), "neither a controller nor a uid")]
#[tokio::test]
async fn without_its_owner_nothing_is_applied(#[case] answer: Reply, #[case] expected: &str) {
    let (port, log, server) = fake_api::scripted(vec![answer]).await;
    let error = Sink::new(Kind::NodeFeature, port, ATTEMPTS, Some(POD))
        .publish(&dgx_labels())
        .await
        .unwrap_err();
    finish(server).await;
    assert_eq!(requests(&log).len(), 1, "no apply after a failed lookup");
    assert!(
        matches!(error, PublishError::Owner { attempts: 1, .. }),
        "{error}"
    );
    assert!(error.to_string().contains(expected), "{error}");
    assert_eq!(RunError::from(error).exit_code(), exit::PUBLISH);
}

// ---------------------------------------------------------------------------
// The binary: production client settings and exit codes

/// `--once` with an API sink against the scripted server on `port`, labels
/// from a recorded `nvidia-smi topo -m`.
async fn run_once(sink: &str, port: u16, extra: &[&str]) -> std::process::Output {
    let dir = scratch_dir(&format!("api-faults-{sink}-{port}"));
    let topo = topology_fixtures().join("dgx-a100-mlx5-nps4.txt");
    labeler_once(sink, &kubeconfig(&dir, port, NAMESPACE))
        .arg("--nvidia-smi-topo")
        .arg(&topo)
        .args(extra)
        .output()
        .await
        .unwrap()
}

/// `--once --sink SINK` with the credentials of `kubeconfig` only, no tools of
/// this machine, no downward-API variables of the environment.
fn labeler_once(sink: &str, kubeconfig: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_gpu-topology-labeler"));
    isolated(&mut command)
        .args(["--once", "--sink", sink, "--node-name", NODE])
        .args(["--sysfs-root", "none", "--kubelet-config", "none"])
        .args(["--nvidia-smi", "none", "--rocm-smi", "none", "--no-nvml"])
        .env("KUBECONFIG", kubeconfig)
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn the_binary_publishes_a_nodefeature_in_the_kubeconfig_namespace() {
    let (port, log, server) = fake_api::scripted(vec![Reply::status(201)]).await;
    let output = run_once("nodefeature", port, &[]).await;
    finish(server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no --pod-name"),
        "the missing owner is warned about: {stderr}"
    );
    let requests = requests(&log);
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].path,
        format!("/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{NAMESPACE}/nodefeatures/gpu-topology-{NODE}")
    );
    assert_eq!(
        requests[0].body["spec"]["labels"]["gpu-topology.io/gpus"],
        "8"
    );
}

/// The binary's client retries only as `--api-attempts` says: with kube's own
/// retry layer on, two 503s would be retried inside the first attempt and the
/// third answer (200) would succeed.
#[rstest]
#[case::kubernetes("kubernetes")]
#[case::nodefeature("nodefeature")]
#[tokio::test]
async fn the_binary_makes_exactly_the_attempts_it_is_given(#[case] sink: &str) {
    let (port, log, server) =
        fake_api::scripted(vec![status(503), status(503), Reply::status(200).into()]).await;
    let output = run_once(sink, port, &["--api-attempts", "2"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(i32::from(exit::PUBLISH)),
        "{stderr}"
    );
    assert!(stderr.contains("failed after 2 attempt(s)"), "{stderr}");
    assert_eq!(requests(&log).len(), 2);
    server.abort();
}

#[rstest]
#[case::kubernetes("kubernetes")]
#[case::nodefeature("nodefeature")]
#[tokio::test]
async fn an_api_sink_without_credentials_is_a_usage_error(#[case] sink: &str) {
    let dir = scratch_dir(&format!("api-faults-{sink}-no-credentials"));
    let output = labeler_once(sink, &dir.join("missing-kubeconfig"))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(i32::from(exit::USAGE)),
        "{stderr}"
    );
    assert!(stderr.contains("Kubernetes client"), "{stderr}");
}

#[rstest]
#[case::kubernetes("kubernetes", "node gpu-node-1")]
#[case::nodefeature(
    "nodefeature",
    "NodeFeature gpu-topology-labeler/gpu-topology-gpu-node-1"
)]
#[tokio::test]
async fn an_invalid_object_exits_with_the_publish_code(#[case] sink: &str, #[case] object: &str) {
    let message = "metadata.labels: Invalid value: \"x\": must be 63 characters or less";
    let refusal = Reply {
        status: 422,
        body: Some(status_body(422, message)),
    };
    let (port, _log, server) = fake_api::scripted(vec![refusal]).await;
    let output = run_once(sink, port, &[]).await;
    finish(server).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(i32::from(exit::PUBLISH)),
        "{stderr}"
    );
    assert!(stderr.contains(object), "{stderr}");
    assert!(stderr.contains("must be 63 characters or less"), "{stderr}");
}

/// The heartbeat annotation of an apply (on the Node, or on the NodeFeature
/// object itself).
fn applied_heartbeat(request: &Request) -> serde_json::Value {
    request.body["metadata"]["annotations"].clone()
}

fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

/// (labels of the second publish, its time, the heartbeat it carries): the
/// heartbeat of the first publish (12:00:00) is sent again until the labels
/// change or the heartbeat interval (30 min) has passed, so the sinks'
/// unchanged re-applies every 10 minutes change nothing on the server.
#[rstest]
#[case::reapplied_unchanged(None, "2025-03-01T12:10:00Z", "2025-03-01T12:00:00Z")]
#[case::unchanged_just_before_the_interval(None, "2025-03-01T12:29:59Z", "2025-03-01T12:00:00Z")]
#[case::unchanged_at_the_interval(None, "2025-03-01T12:30:00Z", "2025-03-01T12:30:00Z")]
#[case::changed_labels(Some("4"), "2025-03-01T12:10:00Z", "2025-03-01T12:10:00Z")]
#[tokio::test]
async fn the_heartbeat_is_refreshed_at_most_every_interval(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
    #[case] gpus: Option<&str>,
    #[case] second_publish: &str,
    #[case] heartbeat: &str,
) {
    let (port, log, server) =
        fake_api::scripted(vec![Reply::status(200), Reply::status(200)]).await;
    let mut sink = Sink::new(kind, port, 1, None);
    sink.publish_at(&dgx_labels(), at("2025-03-01T12:00:00Z"))
        .await
        .unwrap();
    let second = match gpus {
        Some(gpus) => labels(&[("gpus", gpus)]),
        None => dgx_labels(),
    };
    sink.publish_at(&second, at(second_publish)).await.unwrap();
    finish(server).await;
    let requests = requests(&log);
    assert_eq!(
        applied_heartbeat(&requests[0]),
        json!({"gpu-topology.io/published": "2025-03-01T12:00:00Z"})
    );
    assert_eq!(
        applied_heartbeat(&requests[1]),
        json!({"gpu-topology.io/published": heartbeat})
    );
}

#[rstest]
#[tokio::test]
async fn a_failed_apply_does_not_count_as_a_heartbeat_sent(
    #[values(Kind::Kubernetes, Kind::NodeFeature)] kind: Kind,
) {
    let (port, log, server) =
        fake_api::scripted(vec![Reply::status(403), Reply::status(200)]).await;
    let mut sink = Sink::new(kind, port, 1, None);
    sink.publish_at(&dgx_labels(), at("2025-03-01T12:00:00Z"))
        .await
        .unwrap_err();
    sink.publish_at(&dgx_labels(), at("2025-03-01T12:10:00Z"))
        .await
        .unwrap();
    finish(server).await;
    assert_eq!(
        applied_heartbeat(&requests(&log)[1]),
        json!({"gpu-topology.io/published": "2025-03-01T12:10:00Z"})
    );
}
