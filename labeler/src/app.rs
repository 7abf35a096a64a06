//! Runs discovery and publishing, once or as a daemon.

use crate::discover::{discover, DiscoveryError, SourceKind, SourceOptions, ToolMemory};
use crate::health::Health;
use crate::reconcile::{reconcile, Outcome};
use crate::sinks::api;
use crate::sinks::kubernetes::KubernetesSink;
use crate::sinks::nfd::NfdSink;
use crate::sinks::nodefeature::{NodeFeatureSink, Target};
use crate::sinks::retry::RetryPolicy;
use crate::sinks::stdout::{render_json, render_text};
use crate::sinks::{Labels, PublishError};
use gpu_topology::{KubeletVersion, LabelPrefix};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// Process exit codes.
pub mod exit {
    /// Published (or printed); or the daemon stopped on SIGTERM/SIGINT.
    pub const OK: u8 = 0;
    /// Invalid flags or configuration (including no Kubernetes credentials for
    /// an API sink, and a `--metrics-address` that cannot be bound).
    pub const USAGE: u8 = 1;
    /// An explicitly given source (file or directory) is unreadable or malformed; nothing was published.
    pub const DISCOVERY: u8 = 2;
    /// The sink failed (NFD file not writable; the API server refused the
    /// request, or stayed unavailable through all attempts).
    pub const PUBLISH: u8 = 3;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkConfig {
    Stdout(Output),
    Nfd {
        dir: PathBuf,
        file_name: String,
        expiry: Duration,
    },
    Kubernetes {
        node: String,
        api: ApiSettings,
    },
    NodeFeature {
        target: Target,
        api: ApiSettings,
    },
}

impl SinkConfig {
    /// The sink's `--sink` name (the `sink` label of the metrics).
    pub const fn name(&self) -> &'static str {
        match self {
            SinkConfig::Stdout(_) => "stdout",
            SinkConfig::Nfd { .. } => "nfd",
            SinkConfig::Kubernetes { .. } => "kubernetes",
            SinkConfig::NodeFeature { .. } => "nodefeature",
        }
    }
}

/// What the two API sinks (kubernetes, nodefeature) share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiSettings {
    pub field_manager: String,
    pub retry: RetryPolicy,
    /// Longest wait for one API answer.
    pub request_timeout: Duration,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub sources: SourceOptions,
    pub prefix: LabelPrefix,
    pub sink: SinkConfig,
    pub once: bool,
    pub interval: Duration,
    /// Where the daemon serves `/livez`, `/readyz` and `/metrics`
    /// ([`crate::health`]); none without `--metrics-address`.
    pub metrics_address: Option<SocketAddr>,
}

/// A ready sink.
pub enum Publisher {
    Stdout(Output),
    Nfd(NfdSink),
    Kubernetes(KubernetesSink),
    NodeFeature(NodeFeatureSink),
}

impl Publisher {
    /// Builds the sink; the API sinks need in-cluster (or kubeconfig) credentials.
    /// The API sinks publish their heartbeat under `prefix`.
    pub async fn from_config(sink: &SinkConfig, prefix: &LabelPrefix) -> Result<Self, kube::Error> {
        Ok(match sink {
            SinkConfig::Stdout(output) => Publisher::Stdout(output.clone()),
            SinkConfig::Nfd {
                dir,
                file_name,
                expiry,
            } => Publisher::Nfd(NfdSink::new(dir.clone(), file_name.clone(), *expiry)),
            SinkConfig::Kubernetes {
                node,
                api: settings,
            } => {
                let client = api::client(settings.request_timeout).await?;
                Publisher::Kubernetes(KubernetesSink::new(
                    client,
                    node.clone(),
                    &settings.field_manager,
                    settings.retry,
                    prefix,
                ))
            }
            SinkConfig::NodeFeature {
                target,
                api: settings,
            } => {
                let client = api::client(settings.request_timeout).await?;
                let sink = NodeFeatureSink::new(
                    client,
                    target.clone(),
                    &settings.field_manager,
                    settings.retry,
                    prefix,
                );
                if target.pod.is_none() {
                    tracing::warn!(
                        object = %sink.object(),
                        "no --pod-name (POD_NAME): the NodeFeature object gets no owner and \
                         outlives the labeler (nfd-gc removes it only with its Node)"
                    );
                }
                Publisher::NodeFeature(sink)
            }
        })
    }

    /// The kubelet's version as the Node reported it in the last answer;
    /// only the kubernetes sink reads the Node (the others: `None`).
    pub fn kubelet_version(&self) -> Option<KubeletVersion> {
        match self {
            Publisher::Kubernetes(sink) => sink.kubelet_version(),
            _ => None,
        }
    }

    /// Whether unchanged labels must be published anyway: the NFD file's
    /// expiry nears, or the Node's labels or the NodeFeature object are due to
    /// be applied again (a hand edit is undone).
    fn needs_refresh(&self) -> bool {
        match self {
            Publisher::Nfd(sink) => sink.needs_refresh(jiff::Timestamp::now()),
            Publisher::Kubernetes(sink) => sink.needs_refresh(jiff::Timestamp::now()),
            Publisher::NodeFeature(sink) => sink.needs_refresh(jiff::Timestamp::now()),
            Publisher::Stdout(_) => false,
        }
    }

    pub async fn publish(
        &mut self,
        labels: &Labels,
        outcome: &Outcome,
    ) -> Result<(), PublishError> {
        match self {
            Publisher::Stdout(output) => {
                let text = match output {
                    Output::Json => render_json(labels),
                    Output::Text => render_text(labels, outcome),
                };
                let mut stdout = std::io::stdout().lock();
                stdout
                    .write_all(text.as_bytes())
                    .and_then(|()| stdout.flush())
                    .map_err(PublishError::Stdout)
            }
            Publisher::Nfd(sink) => sink.publish(labels, jiff::Timestamp::now()),
            Publisher::Kubernetes(sink) => sink.publish(labels, jiff::Timestamp::now()).await,
            Publisher::NodeFeature(sink) => sink.publish(labels, jiff::Timestamp::now()).await,
        }
    }
}

/// Why a run failed; maps to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    #[error(transparent)]
    Publish(#[from] PublishError),
    #[error("waiting for signals: {0}")]
    Signals(#[source] std::io::Error),
}

impl RunError {
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Discovery(_) => exit::DISCOVERY,
            RunError::Publish(_) => exit::PUBLISH,
            RunError::Signals(_) => exit::USAGE,
        }
    }
}

/// One discovery's labels.
#[derive(Debug)]
pub struct Discovered {
    pub labels: Labels,
    pub outcome: Outcome,
    /// The default sources that failed (each logged as a warning; their
    /// labels are left out).
    pub failed: Vec<SourceKind>,
}

/// Discovers the sources and reconciles them into labels, logging why any
/// label is left out. `memory` carries the live tools' last good reports
/// from round to round. `node_kubelet_version`, the version the Node
/// reports ([`Publisher::kubelet_version`]), overrides `--kubelet-version`.
pub async fn labels(
    config: &Config,
    memory: &mut ToolMemory,
    node_kubelet_version: Option<KubeletVersion>,
) -> Result<Discovered, DiscoveryError> {
    let discovery = discover(&config.sources, memory).await?;
    let mut outcome = reconcile(&discovery.inputs);
    if let Some(version) = node_kubelet_version {
        outcome.set_kubelet_version(version);
    }
    for warning in discovery.warnings.iter().chain(&outcome.warnings) {
        tracing::warn!("{warning}");
    }
    Ok(Discovered {
        labels: outcome.topology.to_labels(&config.prefix),
        outcome,
        failed: discovery.failed,
    })
}

/// Discovers and publishes once; a second time when the apply's answer
/// tells a kubelet version the labels lack.
pub async fn run_once(config: &Config, publisher: &mut Publisher) -> Result<(), RunError> {
    let Discovered {
        labels,
        mut outcome,
        ..
    } = labels(config, &mut ToolMemory::default(), None).await?;
    publisher.publish(&labels, &outcome).await?;
    tracing::info!(count = labels.len(), "labels published");
    if let Some(version) = publisher
        .kubelet_version()
        .filter(|version| outcome.topology.kubelet_version != Some(*version))
    {
        outcome.set_kubelet_version(version);
        let labels = outcome.topology.to_labels(&config.prefix);
        publisher.publish(&labels, &outcome).await?;
        tracing::info!(count = labels.len(), %version, "labels published with the Node's kubelet version");
    }
    Ok(())
}

/// Re-discovers every `interval` and publishes when the labels change (or the
/// NFD file needs refreshing, or the Node's labels or the NodeFeature are due
/// to be applied again), until SIGTERM or SIGINT. Failures are logged and
/// retried on the next round; the last published labels stay in place.
/// Each round's outcome goes to `health` (the endpoint of `--metrics-address`).
pub async fn run_daemon(
    config: &Config,
    publisher: &mut Publisher,
    health: &Health,
) -> Result<(), RunError> {
    let mut shutdown = std::pin::pin!(shutdown_signal().map_err(RunError::Signals)?);
    let _running = health.running();
    let mut published: Option<Labels> = None;
    let mut memory = ToolMemory::default();
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = round(config, publisher, &mut published, &mut memory, health) => {}
        }
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = tokio::time::sleep(config.interval) => {}
        }
    }
    tracing::info!("stopping on signal");
    Ok(())
}

async fn round(
    config: &Config,
    publisher: &mut Publisher,
    published: &mut Option<Labels>,
    memory: &mut ToolMemory,
    health: &Health,
) {
    let discovered = match labels(config, memory, publisher.kubelet_version()).await {
        Ok(discovered) => discovered,
        Err(error) => {
            health.discovery_failed(error.kind);
            tracing::error!(%error, "discovery failed; nothing published this round");
            return;
        }
    };
    for &source in &discovered.failed {
        health.source_failed(source);
    }
    let Discovered {
        labels, outcome, ..
    } = discovered;
    if published.as_ref() == Some(&labels) && !publisher.needs_refresh() {
        tracing::debug!("labels unchanged");
        health.confirmed(Instant::now());
        return;
    }
    match publisher.publish(&labels, &outcome).await {
        Ok(()) => {
            health.published(SystemTime::now());
            tracing::info!(count = labels.len(), "labels published");
            *published = Some(labels);
        }
        Err(error) => {
            health.publish_failed();
            tracing::error!(%error, "publishing failed; retrying next round");
        }
    }
}

/// Resolves on the first SIGTERM or SIGINT.
pub(crate) fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
