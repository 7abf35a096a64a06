//! A scripted Kubernetes API server on 127.0.0.1: one connection per scripted
//! reply (`connection: close`), every request recorded.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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
}

/// A Kubernetes `Status` failure answer.
pub fn status_body(code: u16, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})
        .to_string()
}

/// Serves one connection per scripted reply, recording each request.
pub async fn serve(listener: TcpListener, replies: Vec<Reply>, log: Log) {
    for reply in replies {
        let (mut stream, _) = listener.accept().await.unwrap();
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
            buffer.extend_from_slice(&chunk[..n]);
        }
        let mut request_line = head.lines().next().unwrap().split(' ');
        let method = request_line.next().unwrap().to_owned();
        let target = request_line.next().unwrap();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let raw_body = &buffer[head_end..head_end + length];
        let body = serde_json::from_slice(raw_body).unwrap_or(Value::Null);
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
            body,
        });
        let status = reply.status;
        let text = match reply.body {
            Some(text) => text,
            None if (200..300).contains(&status) => String::from_utf8_lossy(raw_body).into_owned(),
            None => status_body(status, "scripted failure"),
        };
        let response = format!(
            "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        );
        stream.write_all(response.as_bytes()).await.unwrap();
        stream.shutdown().await.unwrap();
    }
}

/// Starts a server with `replies`; returns its port, the request log and the
/// task (which ends once every reply is sent).
pub async fn scripted(replies: Vec<Reply>) -> (u16, Log, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Log::default();
    let server = tokio::spawn(serve(listener, replies, log.clone()));
    (port, log, server)
}

/// A client of the server on `port`.
pub fn client(port: u16) -> kube::Client {
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

/// A loopback port nobody listens on: connecting is refused.
pub async fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}
