//! The summarizer's Kubernetes I/O, a thin adapter around [`SummaryBuilder`]:
//! list the Nodes that carry `<prefix>/gpus` (metadata only, 500 per page),
//! then server-side apply the fleet summary ConfigMap. Every pass writes, so
//! `generatedAt` advances and the policy knows the summary is fresh.
//!
//! Transient API errors (5xx, 429, refused connections) are retried with the
//! kubernetes sink's [`RetryPolicy`]; a 403 names the RBAC rule that is
//! missing. No API answer panics: an unreadable answer is an error of the pass.

use super::{Summarized, SummaryBuilder};
use crate::sinks::kubernetes::{with_retries, Exhausted, RetryPolicy};
use gpu_topology::{FleetSummary, LabelKey, LabelPrefix};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::Client;
use serde_json::{json, Value};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the summary goes unless told otherwise; the policy's
/// `capacity.fleetSummary` defaults to the same place.
pub const DEFAULT_SUMMARY_NAMESPACE: &str = "kube-system";
pub const DEFAULT_SUMMARY_NAME: &str = "gpu-topology-fleet";
/// The policy's default `capacity.fleetSummary.maxAgeSeconds`: an older
/// summary is ignored. The interval must stay well below it.
pub const POLICY_DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);
/// Nodes per list request: 5,000 nodes are 10 pages.
pub const PAGE_SIZE: u32 = 500;
/// A listing longer than this (5 million nodes) is an API server that never
/// stops sending continue tokens.
pub const MAX_PAGES: u32 = 10_000;
/// Times a listing starts over when its continue token expired (410 Gone).
pub const MAX_RESTARTS: u32 = 3;
/// Labels of the ConfigMap.
pub const APP_NAME: &str = "gpu-topology-labeler";
pub const COMPONENT: &str = "fleet-summary";

/// Everything the summarizer needs, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarizerConfig {
    pub prefix: LabelPrefix,
    pub namespace: String,
    pub name: String,
    pub field_manager: String,
    pub retry: RetryPolicy,
    /// Longest wait for one API answer.
    pub request_timeout: Duration,
    pub interval: Duration,
    pub once: bool,
}

/// Why a pass wrote no summary.
#[derive(Debug, thiserror::Error)]
pub enum SummarizeError {
    #[error(
        "listing Nodes is forbidden (403): the summarizer's service account needs `list` on nodes \
         (ClusterRole rule: apiGroups [\"\"], resources [nodes], verbs [list]); the API server said: {message}"
    )]
    ListForbidden { message: String },
    #[error("listing Nodes failed after {attempts} attempt(s): {source}")]
    List {
        attempts: u32,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("listing Nodes: the API server still sent a continue token after {pages} pages")]
    EndlessList { pages: u32 },
    #[error(
        "server-side apply of ConfigMap {namespace}/{name} is forbidden (403): the summarizer's service \
         account needs `patch` (and `create`, for the first write) on that ConfigMap (Role in {namespace}, \
         rule: apiGroups [\"\"], resources [configmaps], resourceNames [{name}], verbs [create, patch]); \
         the API server said: {message}"
    )]
    ApplyForbidden {
        namespace: String,
        name: String,
        message: String,
    },
    #[error("server-side apply of ConfigMap {namespace}/{name} failed after {attempts} attempt(s): {source}")]
    Apply {
        namespace: String,
        name: String,
        attempts: u32,
        #[source]
        source: Box<kube::Error>,
    },
}

/// What one successful pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassReport {
    pub summarized: Summarized,
    /// List requests that succeeded (pages), over all restarts.
    pub pages: u32,
}

/// The API client the summarizer uses: in-cluster credentials (or a
/// kubeconfig), with `request_timeout` on every answer so a stalled API
/// server fails the pass instead of hanging the loop.
pub async fn client(request_timeout: Duration) -> Result<Client, kube::Error> {
    let mut config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    config.read_timeout = Some(request_timeout);
    Client::try_from(config)
}

/// The apply body: only the fields the summarizer owns.
pub fn apply_body(namespace: &str, name: &str, summary: &FleetSummary) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": APP_NAME,
                "app.kubernetes.io/component": COMPONENT,
            },
        },
        "data": summary.to_data(),
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn status_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

fn status_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Lists the labeled Nodes and writes the fleet summary.
#[derive(Clone)]
pub struct Summarizer {
    nodes: Api<Node>,
    config_maps: Api<ConfigMap>,
    prefix: LabelPrefix,
    namespace: String,
    name: String,
    params: PatchParams,
    retry: RetryPolicy,
}

impl Summarizer {
    pub fn new(client: Client, config: &SummarizerConfig) -> Self {
        Self {
            nodes: Api::all(client.clone()),
            config_maps: Api::namespaced(client, &config.namespace),
            prefix: config.prefix.clone(),
            namespace: config.namespace.clone(),
            name: config.name.clone(),
            params: PatchParams::apply(&config.field_manager).force(),
            retry: config.retry,
        }
    }

    /// One pass: list, summarize, apply. Logs the malformed nodes (the first
    /// few by name) and, on success, what was written.
    pub async fn pass(&self) -> Result<PassReport, SummarizeError> {
        let started = Instant::now();
        // The listing's start: the summary is at least this fresh.
        let generated_at = unix_now();
        let (builder, pages) = self.list().await?;
        let summarized = builder.finish(generated_at);
        for problem in &summarized.problems {
            tracing::warn!(node = %problem.node, error = %problem.error, "malformed topology labels; node left out of the summary");
        }
        let unnamed =
            (summarized.summary.malformed as usize).saturating_sub(summarized.problems.len());
        if unnamed > 0 {
            tracing::warn!(
                count = unnamed,
                "more nodes with malformed topology labels (not named)"
            );
        }
        self.apply(&summarized.summary).await?;
        tracing::info!(
            nodes = summarized.summary.fleet.nodes(),
            groups = summarized.summary.fleet.groups().len(),
            malformed = summarized.summary.malformed,
            skipped = summarized.skipped,
            pages,
            elapsed_ms = started.elapsed().as_millis() as u64,
            configmap = %format_args!("{}/{}", self.namespace, self.name),
            "fleet summary written"
        );
        Ok(PassReport { summarized, pages })
    }

    /// Lists every Node with `<prefix>/gpus`, page by page, into a builder.
    async fn list(&self) -> Result<(SummaryBuilder, u32), SummarizeError> {
        let selector = self.prefix.key(LabelKey::Gpus);
        let mut pages = 0_u32;
        let mut restarts = 0_u32;
        'listing: loop {
            let mut builder = SummaryBuilder::new(self.prefix.clone());
            let mut token: Option<String> = None;
            let mut listing_pages = 0_u32;
            loop {
                if listing_pages >= MAX_PAGES {
                    return Err(SummarizeError::EndlessList {
                        pages: listing_pages,
                    });
                }
                let params = ListParams {
                    label_selector: Some(selector.clone()),
                    limit: Some(PAGE_SIZE),
                    continue_token: token.clone(),
                    ..ListParams::default()
                };
                let page = match with_retries(&self.retry, "list nodes", || {
                    self.nodes.list_metadata(&params)
                })
                .await
                {
                    Ok(page) => page,
                    Err(failed)
                        if token.is_some()
                            && status_code(&failed.error) == Some(410)
                            && restarts < MAX_RESTARTS =>
                    {
                        restarts += 1;
                        tracing::warn!(error = %failed.error, restarts, "the list's continue token expired; listing from the start");
                        continue 'listing;
                    }
                    Err(failed) => return Err(list_error(failed)),
                };
                pages += 1;
                listing_pages += 1;
                for node in &page.items {
                    let name = node.metadata.name.as_deref().unwrap_or("<unnamed>");
                    let labels = node
                        .metadata
                        .labels
                        .iter()
                        .flatten()
                        .map(|(key, value)| (key.as_str(), value.as_str()));
                    builder.add(name, labels);
                }
                token = page.metadata.continue_.filter(|token| !token.is_empty());
                if token.is_none() {
                    return Ok((builder, pages));
                }
            }
        }
    }

    async fn apply(&self, summary: &FleetSummary) -> Result<(), SummarizeError> {
        let body = apply_body(&self.namespace, &self.name, summary);
        let patch = Patch::Apply(&body);
        with_retries(&self.retry, "apply the fleet summary", || {
            self.config_maps.patch(&self.name, &self.params, &patch)
        })
        .await
        .map(|_| ())
        .map_err(|failed| {
            if status_code(&failed.error) == Some(403) {
                SummarizeError::ApplyForbidden {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                    message: status_message(&failed.error),
                }
            } else {
                SummarizeError::Apply {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                    attempts: failed.attempts,
                    source: Box::new(failed.error),
                }
            }
        })
    }
}

fn list_error(failed: Exhausted) -> SummarizeError {
    if status_code(&failed.error) == Some(403) {
        SummarizeError::ListForbidden {
            message: status_message(&failed.error),
        }
    } else {
        SummarizeError::List {
            attempts: failed.attempts,
            source: Box::new(failed.error),
        }
    }
}

/// Runs one pass (`once`), or a pass every `interval` until SIGTERM/SIGINT.
/// In the loop a failed pass is logged and the next tick tries again; with
/// `once` its error is returned.
pub async fn run(summarizer: &Summarizer, interval: Duration, once: bool) -> Result<(), RunError> {
    if once {
        summarizer.pass().await?;
        return Ok(());
    }
    let mut shutdown = std::pin::pin!(crate::app::shutdown_signal().map_err(RunError::Signals)?);
    loop {
        // Fixed rate: the next pass starts `interval` after this one started,
        // so generatedAt advances every interval even when a pass is slow.
        let next = tokio::time::Instant::now().checked_add(interval);
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            result = summarizer.pass() => {
                if let Err(error) = result {
                    tracing::error!(%error, "no fleet summary written this pass; retrying next interval");
                }
            }
        }
        let wait = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = wait => {}
        }
    }
    tracing::info!("stopping on signal");
    Ok(())
}

/// Why `summarize` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Pass(#[from] SummarizeError),
    #[error("waiting for signals: {0}")]
    Signals(#[source] std::io::Error),
}

impl RunError {
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Pass(_) => crate::app::exit::PUBLISH,
            RunError::Signals(_) => crate::app::exit::USAGE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_topology::{Fleet, NodeTopology};

    #[test]
    fn the_apply_body_holds_the_summary_data_and_our_labels_only() {
        let mut fleet = Fleet::new();
        fleet.add_nodes(
            NodeTopology {
                gpus: Some(8),
                ..NodeTopology::default()
            },
            3,
        );
        let summary = FleetSummary {
            fleet,
            malformed: 1,
            generated_at: 42,
        };
        let body = apply_body("kube-system", "gpu-topology-fleet", &summary);
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
        assert_eq!(body["data"], json!(summary.to_data()));
        assert_eq!(
            body.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["apiVersion", "data", "kind", "metadata"]
        );
    }
}
