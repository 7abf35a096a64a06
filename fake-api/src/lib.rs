//! A scripted Kubernetes API server on 127.0.0.1, for the tests of the
//! labeler and of the `gpu-topology` tool (a dev-dependency only): one connection per scripted
//! step (`connection: close`), every request recorded with its arrival time.
//! A step answers ([`Reply`], optionally with headers), or injects a fault:
//! the body cut off after the headers, the connection closed without an
//! answer, or no answer at all until the client gives up.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// `name=value` pairs as sent (percent-encoded), empty pairs dropped.
    pub query: BTreeSet<String>,
    pub content_type: Option<String>,
    pub accept: Option<String>,
    pub body: Value,
    /// When the request had been read.
    pub at: Instant,
}

pub type Log = Arc<Mutex<Vec<Request>>>;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// `None`: echo the request body (2xx) or a `Status` object (other codes).
    pub body: Option<String>,
}

impl Reply {
    /// `status` with the default body.
    pub fn status(status: u16) -> Self {
        Reply { status, body: None }
    }

    /// 200 with a JSON document.
    pub fn json(body: &Value) -> Self {
        Reply {
            status: 200,
            body: Some(body.to_string()),
        }
    }

    /// 200 with any text, e.g. a body that is not JSON.
    pub fn text(body: &str) -> Self {
        Reply {
            status: 200,
            body: Some(body.to_owned()),
        }
    }

    /// This reply with a response header.
    pub fn with_header(self, name: &str, value: &str) -> Step {
        Step::from(self).with_header(name, value)
    }
}

/// One scripted exchange.
#[derive(Debug, Clone)]
pub enum Step {
    /// Answers with `reply`, plus `headers` (a `content-type` among them
    /// replaces the default `application/json`).
    Answer {
        reply: Reply,
        headers: Vec<(String, String)>,
    },
    /// Sends `reply`'s status line and headers (its full `content-length`),
    /// then half of its body, then closes the connection.
    CutBody(Reply),
    /// Reads the request and closes the connection without answering.
    Close,
    /// Reads the request and never answers; waits until the client hangs up.
    Hang,
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Self {
        Step::Answer {
            reply,
            headers: Vec::new(),
        }
    }
}

impl Step {
    /// This step with a response header (only answers carry headers).
    pub fn with_header(self, name: &str, value: &str) -> Step {
        match self {
            Step::Answer { reply, mut headers } => {
                headers.push((name.to_owned(), value.to_owned()));
                Step::Answer { reply, headers }
            }
            other => panic!("only an answer has headers, not {other:?}"),
        }
    }
}

/// A Kubernetes `Status` failure answer.
pub fn status_body(code: u16, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})
        .to_string()
}

/// A 429 the way the API server's rate limiters send it
/// (`maxinflight.go`, `tooManyRequests`): plain text, with `Retry-After`
/// (seconds) when `retry_after` is given.
pub fn rate_limited(retry_after: Option<&str>) -> Step {
    let step = Reply {
        status: 429,
        body: Some("Too many requests, please try again later.\n".to_owned()),
    }
    .with_header("content-type", "text/plain; charset=utf-8");
    match retry_after {
        Some(seconds) => step.with_header("Retry-After", seconds),
        None => step,
    }
}

/// A 429 `Status` that asks for `seconds` in `details.retryAfterSeconds`,
/// without a `Retry-After` header.
pub fn status_retry_after(seconds: u32) -> Step {
    Reply {
        status: 429,
        body: Some(
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "TooManyRequests",
                   "message": "storage is busy", "details": {"retryAfterSeconds": seconds}, "code": 429})
            .to_string(),
        ),
    }
    .into()
}

/// Reads one request (head and `content-length` body) and logs it; returns
/// the raw body.
async fn read_request(stream: &mut TcpStream, log: &Log) -> Vec<u8> {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "client closed the connection early");
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).unwrap();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let length: usize = header("content-length").map_or(0, |v| v.parse().unwrap());
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "client closed the connection mid-request");
        buffer.extend_from_slice(&chunk[..n]);
    }
    let mut request_line = head.lines().next().unwrap().split(' ');
    let method = request_line.next().unwrap().to_owned();
    let target = request_line.next().unwrap();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let raw_body = buffer[head_end..head_end + length].to_vec();
    log.lock().unwrap().push(Request {
        method,
        path: path.to_owned(),
        query: query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect(),
        content_type: header("content-type"),
        accept: header("accept"),
        body: serde_json::from_slice(&raw_body).unwrap_or(Value::Null),
        at: Instant::now(),
    });
    raw_body
}

/// The status line and headers of `reply`, and its body.
fn response(reply: &Reply, headers: &[(String, String)], request_body: &[u8]) -> (String, String) {
    let status = reply.status;
    let text = match &reply.body {
        Some(text) => text.clone(),
        None if (200..300).contains(&status) => String::from_utf8_lossy(request_body).into_owned(),
        None => status_body(status, "scripted failure"),
    };
    let mut head = format!("HTTP/1.1 {status} Scripted\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("content-type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        text.len()
    ));
    (head, text)
}

/// Serves one connection per scripted step, recording each request.
pub async fn serve<S: Into<Step>>(listener: TcpListener, steps: Vec<S>, log: Log) {
    for step in steps {
        let (mut stream, _) = listener.accept().await.unwrap();
        let request_body = read_request(&mut stream, &log).await;
        match step.into() {
            Step::Answer { reply, headers } => {
                let (head, body) = response(&reply, &headers, &request_body);
                stream.write_all(head.as_bytes()).await.unwrap();
                stream.write_all(body.as_bytes()).await.unwrap();
                stream.shutdown().await.unwrap();
            }
            Step::CutBody(reply) => {
                let (head, body) = response(&reply, &[], &request_body);
                assert!(body.len() >= 2, "nothing to cut in {body:?}");
                stream.write_all(head.as_bytes()).await.unwrap();
                stream
                    .write_all(&body.as_bytes()[..body.len() / 2])
                    .await
                    .unwrap();
                // Closing now leaves the client short of content-length.
                let _ = stream.shutdown().await;
            }
            Step::Close => {
                let _ = stream.shutdown().await;
            }
            Step::Hang => {
                // Until the client gives up (EOF or reset), answer nothing.
                let mut chunk = [0u8; 4096];
                while matches!(stream.read(&mut chunk).await, Ok(n) if n > 0) {}
            }
        }
    }
}

/// Starts a server with `steps`; returns its port, the request log and the
/// task (which ends once every step is done).
pub async fn scripted<S: Into<Step> + Send + 'static>(
    steps: Vec<S>,
) -> (u16, Log, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Log::default();
    let server = tokio::spawn(serve(listener, steps, log.clone()));
    (port, log, server)
}

/// A loopback port nobody listens on: connecting is refused.
pub async fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

/// The requests received so far.
pub fn requests(log: &Log) -> Vec<Request> {
    log.lock().unwrap().clone()
}

/// A kubeconfig in `dir` that points at the scripted server on `port`,
/// without credentials, whose context's namespace is `namespace`, for runs of
/// the binary.
pub fn kubeconfig(dir: &std::path::Path, port: u16, namespace: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "fake", "cluster": { "server": format!("http://127.0.0.1:{port}") } }],
        "users": [{ "name": "fake", "user": {} }],
        "contexts": [{ "name": "fake", "context": { "cluster": "fake", "user": "fake", "namespace": namespace } }],
        "current-context": "fake",
    });
    // JSON is YAML: kube reads it as a kubeconfig.
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// Waits for the server to finish its script. A sink that stopped short of
/// it (gave up instead of retrying) fails the test here instead of hanging it.
pub async fn finish(server: tokio::task::JoinHandle<()>) {
    match tokio::time::timeout(Duration::from_secs(10), server).await {
        Ok(result) => result.unwrap(),
        Err(_) => panic!("the client made fewer requests than scripted"),
    }
}
