//! The kubernetes sink against a scripted API server on 127.0.0.1: the exact
//! server-side-apply request, and retries on 5xx and on refused connections.
//! More faults, for both API sinks, are in `api_faults.rs`.

use crate::common;

use common::fake_api::{
    self, assert_forced_apply, finish, free_port, serve, sink_client, Log, Reply,
};
use common::labels;
use gpu_topology_labeler::sinks::kubernetes::{KubernetesSink, RetryPolicy, DEFAULT_FIELD_MANAGER};
use gpu_topology_labeler::sinks::PublishError;
use jiff::Timestamp;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

const NODE: &str = "gpu-node-1";

fn sink(port: u16, attempts: u32) -> KubernetesSink {
    let retry = RetryPolicy {
        attempts,
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
    };
    KubernetesSink::new(
        sink_client(port, Duration::from_secs(5)),
        NODE.to_owned(),
        DEFAULT_FIELD_MANAGER,
        retry,
        &gpu_topology::LabelPrefix::default(),
    )
}

/// A server answering each request with the next status (2xx echo the body).
async fn scripted(statuses: Vec<u16>) -> (u16, Log, tokio::task::JoinHandle<()>) {
    fake_api::scripted(statuses.into_iter().map(Reply::status).collect()).await
}

fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

fn dgx_labels() -> std::collections::BTreeMap<String, String> {
    labels(&[
        ("gpus", "8"),
        ("gpus-per-numa-max", "2"),
        ("nvlink-group-max", "8"),
    ])
}

#[tokio::test]
async fn publishes_with_one_exact_server_side_apply_request() {
    let (port, log, server) = scripted(vec![200]).await;
    sink(port, 1)
        .publish(&dgx_labels(), at("2025-12-01T22:45:52Z"))
        .await
        .unwrap();
    finish(server).await;
    let requests = log.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_forced_apply(request, "/api/v1/nodes/gpu-node-1");
    assert_eq!(
        request.body,
        json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "gpu-node-1",
                "labels": {
                    "gpu-topology.io/gpus": "8",
                    "gpu-topology.io/gpus-per-numa-max": "2",
                    "gpu-topology.io/nvlink-group-max": "8",
                },
                "annotations": { "gpu-topology.io/published": "2025-12-01T22:45:52Z" },
            },
        })
    );
}

#[tokio::test]
async fn no_labels_apply_an_empty_map_so_the_server_removes_ours() {
    let (port, log, server) = scripted(vec![200]).await;
    sink(port, 1)
        .publish(&labels(&[]), Timestamp::now())
        .await
        .unwrap();
    finish(server).await;
    assert_eq!(log.lock().unwrap()[0].body["metadata"]["labels"], json!({}));
}

#[tokio::test]
async fn retries_on_server_errors_until_success() {
    let (port, log, server) = scripted(vec![503, 500, 200]).await;
    sink(port, 5)
        .publish(&dgx_labels(), Timestamp::now())
        .await
        .unwrap();
    finish(server).await;
    let requests = log.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.body == requests[0].body));
}

#[tokio::test]
async fn gives_up_after_the_attempt_budget() {
    let (port, log, server) = scripted(vec![503, 503, 503]).await;
    let error = sink(port, 3)
        .publish(&dgx_labels(), Timestamp::now())
        .await
        .unwrap_err();
    finish(server).await;
    assert_eq!(log.lock().unwrap().len(), 3);
    assert!(
        matches!(error, PublishError::Kubernetes { attempts: 3, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn does_not_retry_a_forbidden_request() {
    let (port, log, server) = scripted(vec![403]).await;
    let error = sink(port, 5)
        .publish(&dgx_labels(), Timestamp::now())
        .await
        .unwrap_err();
    finish(server).await;
    assert_eq!(log.lock().unwrap().len(), 1);
    assert!(error.to_string().contains("gpu-node-1"), "{error}");
}

#[tokio::test]
async fn retries_while_the_connection_is_refused() {
    // Reserve a port, free it: connecting now is refused until the server starts.
    let port = free_port().await;
    let started = Instant::now();
    let publish =
        tokio::spawn(async move { sink(port, 8).publish(&dgx_labels(), Timestamp::now()).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let log = Log::default();
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let server = tokio::spawn(serve(listener, vec![Reply::status(200)], log.clone()));
    publish.await.unwrap().unwrap();
    finish(server).await;
    assert_eq!(log.lock().unwrap().len(), 1);
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[tokio::test]
async fn refused_connections_fail_after_the_attempt_budget() {
    let port = free_port().await;
    let error = sink(port, 2)
        .publish(&dgx_labels(), Timestamp::now())
        .await
        .unwrap_err();
    assert!(
        matches!(error, PublishError::Kubernetes { attempts: 2, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn the_heartbeat_goes_under_the_labels_prefix() {
    let (port, log, server) = scripted(vec![200]).await;
    let prefix = gpu_topology::LabelPrefix::new("example.com").unwrap();
    let mut sink = KubernetesSink::new(
        sink_client(port, Duration::from_secs(5)),
        NODE.to_owned(),
        DEFAULT_FIELD_MANAGER,
        RetryPolicy {
            attempts: 1,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(100),
        },
        &prefix,
    );
    sink.publish(&dgx_labels(), at("2025-03-01T12:00:00Z"))
        .await
        .unwrap();
    finish(server).await;
    assert_eq!(
        log.lock().unwrap()[0].body["metadata"]["annotations"],
        json!({"example.com/published": "2025-03-01T12:00:00Z"})
    );
}

/// The server answers the apply with the whole Node: its
/// `status.nodeInfo.kubeletVersion` is the kubelet's version, read without
/// a request (or a permission) more.
#[rstest::rstest]
#[case::reported(
    Reply::json(&json!({"metadata": {"name": NODE}, "status": {"nodeInfo": {"kubeletVersion": "v1.36.2"}}})),
    Some(gpu_topology::KubeletVersion::new(1, 36))
)]
#[case::without_status(Reply::status(200), None)]
#[tokio::test]
async fn the_apply_answer_tells_the_kubelet_version(
    #[case] reply: Reply,
    #[case] expected: Option<gpu_topology::KubeletVersion>,
) {
    let (port, log, server) = fake_api::scripted(vec![reply]).await;
    let mut sink = sink(port, 1);
    assert_eq!(sink.kubelet_version(), None);
    sink.publish(&dgx_labels(), at("2025-12-01T22:45:52Z"))
        .await
        .unwrap();
    finish(server).await;
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_eq!(sink.kubelet_version(), expected);
}
