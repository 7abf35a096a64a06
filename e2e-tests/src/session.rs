//! kwctl host-capability session files: the YAML that
//! `kwctl run --replay-host-capabilities-interactions FILE` reads.
//!
//! A session is a list of exchanges, replayed strictly in order:
//!
//! ```yaml
//! - type: Exchange
//!   request: |
//!     !KubernetesListResourceAll
//!     api_version: v1
//!     kind: Node
//!     label_selector: gpu-topology.io/gpus
//!     field_selector: null
//!     field_masks: null
//!   response:
//!     type: Success
//!     payload: '{"apiVersion":"v1","kind":"NodeList","items":[]}'
//! ```
//!
//! `request` is itself a YAML document (kwctl stores `serde_yaml::to_string` of
//! its `CallbackRequestType`), hence the `!Variant` tags inside a string.
//! `response` is `{type: Success, payload}` or `{type: Error, message}`.
//!
//! Matching follows kwctl's replay proxy: each guest request consumes the next
//! exchange; it must equal the recorded request, or the guest gets an error.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};
use std::path::Path;

/// The host-capability requests this harness serves, spelled exactly as
/// kwctl's `CallbackRequestType` variants so that session files are shared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostRequest {
    /// `list_resources_all`: cluster-wide list, e.g. every v1 Node.
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    /// `list_resources_by_namespace`.
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    /// `get_resource`: one object by name.
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        field_masks: Option<BTreeSet<String>>,
    },
}

impl HostRequest {
    /// The `(apiVersion, kind)` the request reads, for the context-aware allow list.
    pub fn resource(&self) -> (&str, &str) {
        match self {
            HostRequest::KubernetesListResourceAll {
                api_version, kind, ..
            }
            | HostRequest::KubernetesListResourceNamespace {
                api_version, kind, ..
            }
            | HostRequest::KubernetesGetResource {
                api_version, kind, ..
            } => (api_version, kind),
        }
    }
}

/// The recorded answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    /// The payload handed to the guest verbatim (a JSON document).
    Success { payload: String },
    /// The error handed to the guest.
    Error { message: String },
}

/// One recorded request/response pair. kwctl tags it `type: Exchange`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type")]
struct Exchange {
    request: String,
    response: Response,
}

/// A parsed exchange: the request already decoded from its inner YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedExchange {
    pub request: HostRequest,
    pub response: Response,
}

/// An ordered list of exchanges, replayed front to back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    exchanges: Vec<RecordedExchange>,
}

impl Session {
    pub fn new(exchanges: Vec<RecordedExchange>) -> Self {
        Self { exchanges }
    }

    /// Reads a kwctl session file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read session file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("session file {}", path.display()))
    }

    /// Parses the text of a kwctl session file.
    pub fn parse(text: &str) -> Result<Self> {
        let raw: Vec<Exchange> =
            serde_yaml::from_str(text).context("not a list of `type: Exchange` entries")?;
        let exchanges = raw
            .into_iter()
            .enumerate()
            .map(|(index, exchange)| {
                let request = serde_yaml::from_str(&exchange.request).with_context(|| {
                    format!(
                        "exchange #{index}: `request` is not a Kubernetes host-capability request \
                         (!KubernetesListResourceAll, !KubernetesListResourceNamespace or \
                         !KubernetesGetResource)"
                    )
                })?;
                Ok(RecordedExchange {
                    request,
                    response: exchange.response,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self { exchanges })
    }

    /// Writes the session in kwctl's format (what `--record-host-capabilities-interactions`
    /// produces), e.g. to generate large fleets for benchmarks.
    pub fn to_yaml(&self) -> Result<String> {
        let raw = self
            .exchanges
            .iter()
            .map(|exchange| {
                Ok(Exchange {
                    request: serde_yaml::to_string(&exchange.request)?,
                    response: exchange.response.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(serde_yaml::to_string(&raw)?)
    }

    pub fn exchanges(&self) -> &[RecordedExchange] {
        &self.exchanges
    }

    /// A fresh replay cursor over this session.
    pub fn replay(&self) -> Replay {
        Replay {
            pending: self.exchanges.iter().cloned().collect(),
            session: self.clone(),
        }
    }
}

/// Replays a session: each request consumes the next exchange, as kwctl does.
#[derive(Debug, Clone)]
pub struct Replay {
    session: Session,
    pending: VecDeque<RecordedExchange>,
}

impl Replay {
    /// The recorded answer to `request`; an `Err` is the message the guest receives.
    /// Messages are kwctl's, so failures read the same under both hosts.
    pub fn answer(&mut self, request: &HostRequest) -> Result<Vec<u8>, String> {
        let Some(exchange) = self.pending.pop_front() else {
            return Err("the list of recorded responses is empty".to_owned());
        };
        if exchange.request != *request {
            return Err(format!(
                "Replay error: unexpected request. Was expecting {:?}, got {:?} instead",
                exchange.request, request
            ));
        }
        match exchange.response {
            Response::Success { payload } => Ok(payload.into_bytes()),
            Response::Error { message } => Err(message),
        }
    }

    /// Exchanges the policy never asked for (kwctl warns about these).
    pub fn leftovers(&self) -> usize {
        self.pending.len()
    }

    /// Starts over from the first exchange, so one instance can serve many
    /// evaluations (benchmarks).
    pub fn rewind(&mut self) {
        self.pending = self.session.exchanges.iter().cloned().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const LIST_NODES: &str = r#"
- type: Exchange
  request: |
    !KubernetesListResourceAll
    api_version: v1
    kind: Node
    label_selector: gpu-topology.io/gpus
    field_selector: null
    field_masks:
    - metadata.labels
  response:
    type: Success
    payload: '{"apiVersion":"v1","kind":"NodeList","items":[]}'
- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: Node
    name: gpu-node-1
    namespace: null
    disable_cache: false
  response:
    type: Error
    message: nodes "gpu-node-1" not found
"#;

    fn list_nodes_request(masks: Option<&[&str]>) -> HostRequest {
        HostRequest::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Node".into(),
            label_selector: Some("gpu-topology.io/gpus".into()),
            field_selector: None,
            field_masks: masks.map(|m| m.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    fn get_node_request() -> HostRequest {
        HostRequest::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: "gpu-node-1".into(),
            namespace: None,
            disable_cache: false,
            field_masks: None,
        }
    }

    #[test]
    fn parses_kwctl_tags_and_both_response_kinds() {
        let session = Session::parse(LIST_NODES).unwrap();
        assert_eq!(session.exchanges().len(), 2);
        assert_eq!(
            session.exchanges()[0].request,
            list_nodes_request(Some(&["metadata.labels"]))
        );
        assert_eq!(
            session.exchanges()[1].response,
            Response::Error {
                message: "nodes \"gpu-node-1\" not found".into()
            }
        );
    }

    #[test]
    fn replays_in_order_then_reports_empty() {
        let mut replay = Session::parse(LIST_NODES).unwrap().replay();
        let payload = replay
            .answer(&list_nodes_request(Some(&["metadata.labels"])))
            .unwrap();
        assert!(String::from_utf8(payload).unwrap().contains("NodeList"));
        assert_eq!(
            replay.answer(&get_node_request()),
            Err("nodes \"gpu-node-1\" not found".to_owned())
        );
        assert_eq!(replay.leftovers(), 0);
        assert_eq!(
            replay.answer(&get_node_request()),
            Err("the list of recorded responses is empty".to_owned())
        );
        replay.rewind();
        assert_eq!(replay.leftovers(), 2);
    }

    #[rstest]
    #[case::different_field_masks(list_nodes_request(None))]
    #[case::out_of_order(get_node_request())]
    fn mismatch_is_an_error_that_names_both_requests(#[case] request: HostRequest) {
        let mut replay = Session::parse(LIST_NODES).unwrap().replay();
        let error = replay.answer(&request).unwrap_err();
        assert!(
            error.starts_with("Replay error: unexpected request."),
            "{error}"
        );
        assert!(error.contains("KubernetesListResourceAll"), "{error}");
    }

    #[rstest]
    #[case::not_a_list("type: Exchange")]
    #[case::unknown_request_kind(
        "- type: Exchange\n  request: \"!DNSLookupHost\\nhost: example.com\\n\"\n  response:\n    type: Success\n    payload: '[]'\n"
    )]
    #[case::missing_response("- type: Exchange\n  request: \"!KubernetesGetResource\\n\"\n")]
    fn malformed_sessions_are_refused(#[case] text: &str) {
        assert!(Session::parse(text).is_err());
    }

    #[test]
    fn writes_what_it_reads() {
        let session = Session::parse(LIST_NODES).unwrap();
        let written = session.to_yaml().unwrap();
        assert!(written.contains("!KubernetesListResourceAll"), "{written}");
        assert_eq!(Session::parse(&written).unwrap(), session);
    }
}
