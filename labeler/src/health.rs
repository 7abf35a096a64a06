//! The daemon's health endpoint (`--metrics-address`), so that a labeler
//! that stopped labeling does not go unnoticed:
//!
//! - `/livez`: 200 while the labeling loop runs. It is answered on the
//!   loop's own thread, so a loop that blocks the thread (a read stuck in a
//!   wedged driver's sysfs file) makes it time out too.
//! - `/readyz`: 200 while the labels are confirmed in place: the last round
//!   that published them, or that found them unchanged since a publish and
//!   due for no re-publish, ended less than [`READY_ROUNDS`] × `--interval`
//!   ago. 503 with a one-line reason otherwise, and before the first publish.
//!   Unchanged labels are not sent every round (only on a change, when the
//!   NFD file's expiry nears, or every 10 minutes for the API sinks), which
//!   is why an unchanged round counts as a confirmation.
//! - `/metrics`: the Prometheus text exposition format (0.0.4), names under
//!   [`METRIC_PREFIX`]: see [`Health::new`] for each metric.
//!
//! Everything else is 404; only GET (and HEAD) is answered.

use crate::discover::SourceKind;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::convert::Infallible;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpListener;

/// What `--metrics-address` alone binds, and the port the example manifests
/// name `metrics`: every interface (the kubelet probes the pod's IP).
pub const DEFAULT_METRICS_ADDRESS: &str = "0.0.0.0:8080";

/// Every metric's name starts with this, then `_`.
pub const METRIC_PREFIX: &str = "gpu_topology_labeler";

/// `/readyz` fails once the labels have not been confirmed for this many
/// `--interval`s: two rounds in a row may fail (a driver hiccup, an API
/// server restart) without the pod turning unready; with the default 60s,
/// three minutes.
pub const READY_ROUNDS: u32 = 3;

/// How long a connection may take to send its request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One label (name, value): every metric here has at most one.
type Label = [(&'static str, &'static str); 1];

/// What the loop reports and the endpoint serves; cheap to clone (shared).
#[derive(Clone)]
pub struct Health {
    shared: Arc<Shared>,
}

struct Shared {
    registry: Registry,
    sink: Label,
    publishes: Family<Label, Counter>,
    publish_errors: Family<Label, Counter>,
    discovery_errors: Family<Label, Counter>,
    last_publish: Gauge<i64, AtomicI64>,
    ready_within: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Whether the labeling loop runs ([`Health::running`]).
    running: bool,
    /// When a round last ended with the current labels in place.
    confirmed: Option<Instant>,
    /// What went wrong in the last round that failed, if the last round failed.
    failure: Option<&'static str>,
}

impl Health {
    /// The metrics of a labeler publishing to `sink` (`nfd`, `kubernetes`,
    /// `nodefeature` or `stdout`) every `interval`:
    ///
    /// | metric | type | meaning |
    /// |---|---|---|
    /// | `gpu_topology_labeler_last_publish_timestamp_seconds` | gauge | Unix time of the last successful publish; 0 before the first |
    /// | `gpu_topology_labeler_publishes_total{sink}` | counter | successful publishes (a round with unchanged labels publishes nothing) |
    /// | `gpu_topology_labeler_publish_errors_total{sink}` | counter | failed publishes (after the API sinks' retries) |
    /// | `gpu_topology_labeler_discovery_errors_total{source}` | counter | source failures, one per failing source and round ([`SourceKind::as_str`]) |
    /// | `gpu_topology_labeler_build_info{version}` | gauge | always 1 |
    ///
    /// Every series exists from the start (counters at 0), so that
    /// `increase()` sees the first error too.
    pub fn new(sink: &'static str, interval: Duration) -> Self {
        let mut registry = Registry::with_prefix(METRIC_PREFIX);
        let last_publish = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "last_publish_timestamp_seconds",
            "Unix time of the last successful publish of the labels (0 before the first)",
            last_publish.clone(),
        );
        let sink = [("sink", sink)];
        let publishes = Family::<Label, Counter>::default();
        registry.register(
            "publishes",
            "Successful publishes of the labels to the sink (rounds with unchanged labels publish nothing)",
            publishes.clone(),
        );
        let publish_errors = Family::<Label, Counter>::default();
        registry.register(
            "publish_errors",
            "Failed publishes of the labels to the sink (after the API sinks' retries)",
            publish_errors.clone(),
        );
        // Created now, at 0: get_or_create returns a guard, dropped at once.
        drop(publishes.get_or_create(&sink));
        drop(publish_errors.get_or_create(&sink));
        let discovery_errors = Family::<Label, Counter>::default();
        registry.register(
            "discovery_errors",
            "Failures of a source in a discovery round: a default source's costs its labels, \
             a source named by a flag fails the round",
            discovery_errors.clone(),
        );
        for kind in SourceKind::ALL {
            drop(discovery_errors.get_or_create(&[("source", kind.as_str())]));
        }
        let build_info = Family::<Label, Gauge>::default();
        registry.register(
            "build_info",
            "The labeler's version, as a label; always 1",
            build_info.clone(),
        );
        build_info
            .get_or_create(&[("version", env!("CARGO_PKG_VERSION"))])
            .set(1);
        Health {
            shared: Arc::new(Shared {
                registry,
                sink,
                publishes,
                publish_errors,
                discovery_errors,
                last_publish,
                ready_within: interval.saturating_mul(READY_ROUNDS),
                state: Mutex::default(),
            }),
        }
    }

    /// How long after the last confirmation `/readyz` fails.
    pub fn ready_within(&self) -> Duration {
        self.shared.ready_within
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the labeling loop as running until the guard is dropped.
    pub fn running(&self) -> Running {
        self.state().running = true;
        Running(self.clone())
    }

    /// `source` failed in this round (a warning, or the round's error).
    pub fn source_failed(&self, source: SourceKind) {
        self.shared
            .discovery_errors
            .get_or_create(&[("source", source.as_str())])
            .inc();
    }

    /// The round ended without labels: a source named by a flag failed.
    pub fn discovery_failed(&self, source: SourceKind) {
        self.source_failed(source);
        self.state().failure = Some("discovery failed");
    }

    /// The labels were published at `at`.
    pub fn published(&self, at: SystemTime) {
        self.shared.publishes.get_or_create(&self.shared.sink).inc();
        let seconds = at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
            });
        self.shared.last_publish.set(seconds);
        self.confirmed(Instant::now());
    }

    /// Publishing failed; the labels published before stay in place.
    pub fn publish_failed(&self) {
        self.shared
            .publish_errors
            .get_or_create(&self.shared.sink)
            .inc();
        self.state().failure = Some("publishing failed");
    }

    /// The round found the labels unchanged since they were published, and
    /// due for no re-publish, at `at`.
    pub fn confirmed(&self, at: Instant) {
        let mut state = self.state();
        state.confirmed = Some(at);
        state.failure = None;
    }

    /// `/livez`: Ok while the loop runs.
    pub fn liveness(&self) -> Result<String, String> {
        if self.state().running {
            Ok("ok: the labeling loop is running".to_owned())
        } else {
            Err("not live: the labeling loop is not running".to_owned())
        }
    }

    /// `/readyz` at `now`: Ok while the last confirmation is at most
    /// [`Health::ready_within`] old; the error is the one-line reason.
    pub fn readiness(&self, now: Instant) -> Result<String, String> {
        let state = self.state();
        let last_round = state
            .failure
            .map(|failure| format!(" (last round: {failure})"))
            .unwrap_or_default();
        let within = self.shared.ready_within;
        match state.confirmed {
            None => Err(format!(
                "not ready: the labels have not been published yet{last_round}"
            )),
            Some(at) => {
                let age = now.saturating_duration_since(at);
                if age <= within {
                    Ok(format!("ok: labels confirmed {}s ago", age.as_secs()))
                } else {
                    Err(format!(
                        "not ready: the labels were last confirmed {}s ago, more than {} x --interval ({}s){last_round}",
                        age.as_secs(),
                        READY_ROUNDS,
                        within.as_secs_f64()
                    ))
                }
            }
        }
    }

    /// The metrics in the Prometheus text format.
    pub fn metrics(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail; an encoder error would be a bug.
        if let Err(error) = prometheus_text::encode(&mut text, &self.shared.registry) {
            tracing::error!(%error, "encoding the metrics");
        }
        text
    }

    /// The answer to `method` `path`.
    pub fn respond(&self, method: &Method, path: &str) -> Response<String> {
        if method != Method::GET && method != Method::HEAD {
            return with_header(
                plain(StatusCode::METHOD_NOT_ALLOWED, "only GET is served\n"),
                "allow",
                "GET, HEAD",
            );
        }
        match path {
            "/livez" => probe(self.liveness()),
            "/readyz" => probe(self.readiness(Instant::now())),
            "/metrics" => with_header(
                plain(StatusCode::OK, self.metrics()),
                "content-type",
                prometheus_text::CONTENT_TYPE,
            ),
            _ => plain(
                StatusCode::NOT_FOUND,
                "not found: /livez, /readyz and /metrics are served\n",
            ),
        }
    }
}

/// While alive, `/livez` answers 200 ([`Health::running`]).
pub struct Running(Health);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.state().running = false;
    }
}

fn plain(status: StatusCode, body: impl Into<String>) -> Response<String> {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    with_header(response, "content-type", "text/plain; charset=utf-8")
}

fn with_header(
    mut response: Response<String>,
    name: &'static str,
    value: &'static str,
) -> Response<String> {
    response
        .headers_mut()
        .insert(name, http::HeaderValue::from_static(value));
    response
}

/// A probe's answer: 200 or 503, with the reason as one line.
fn probe(result: Result<String, String>) -> Response<String> {
    match result {
        Ok(line) => plain(StatusCode::OK, line + "\n"),
        Err(line) => plain(StatusCode::SERVICE_UNAVAILABLE, line + "\n"),
    }
}

/// Serves `health` on `listener` until the task is dropped, one task per
/// connection (HTTP/1.1, keep-alive).
pub async fn serve(listener: TcpListener, health: Health) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors, most likely: wait, do not spin.
                tracing::warn!(%error, "accepting a metrics connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let health = health.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let response = health.respond(request.method(), request.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "metrics connection");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const INTERVAL: Duration = Duration::from_secs(60);

    /// (seconds since the last confirmation, None: never; ready).
    #[rstest]
    #[case::never_published(None, false)]
    #[case::just_published(Some(0), true)]
    #[case::two_rounds_missed(Some(179), true)]
    #[case::exactly_three_rounds(Some(180), true)]
    #[case::beyond_three_rounds(Some(181), false)]
    fn readiness_follows_the_last_confirmation(#[case] ago: Option<u64>, #[case] ready: bool) {
        let health = Health::new("nfd", INTERVAL);
        let start = Instant::now();
        if let Some(ago) = ago {
            health.confirmed(start);
            let now = start + Duration::from_secs(ago);
            assert_eq!(health.readiness(now).is_ok(), ready, "{ago}s");
        } else {
            assert_eq!(health.readiness(start).is_ok(), ready);
        }
    }

    /// The reason names what the last round did wrong, on one line.
    #[rstest]
    #[case::publishing(Health::publish_failed as fn(&Health), "publishing failed")]
    #[case::discovery(|h: &Health| h.discovery_failed(SourceKind::Kubelet), "discovery failed")]
    fn the_unready_reason_names_the_last_failure(
        #[case] fail: fn(&Health),
        #[case] expected: &str,
    ) {
        let health = Health::new("kubernetes", INTERVAL);
        fail(&health);
        let reason = health.readiness(Instant::now()).unwrap_err();
        assert!(reason.contains("not been published yet"), "{reason}");
        assert!(reason.contains(expected), "{reason}");
        assert!(!reason.contains('\n'), "{reason}");
        // A confirmation clears it.
        health.confirmed(Instant::now());
        assert!(health.readiness(Instant::now()).is_ok());
    }

    #[test]
    fn liveness_lasts_as_long_as_the_loop() {
        let health = Health::new("nfd", INTERVAL);
        assert!(health.liveness().is_err());
        let running = health.running();
        assert!(health.liveness().is_ok());
        drop(running);
        assert!(health.liveness().unwrap_err().contains("not running"));
    }

    #[rstest]
    #[case::livez_before_the_loop(Method::GET, "/livez", StatusCode::SERVICE_UNAVAILABLE)]
    #[case::readyz_before_a_publish(Method::GET, "/readyz", StatusCode::SERVICE_UNAVAILABLE)]
    #[case::metrics(Method::GET, "/metrics", StatusCode::OK)]
    #[case::metrics_head(Method::HEAD, "/metrics", StatusCode::OK)]
    #[case::unknown_path(Method::GET, "/", StatusCode::NOT_FOUND)]
    #[case::post(Method::POST, "/metrics", StatusCode::METHOD_NOT_ALLOWED)]
    fn routes(#[case] method: Method, #[case] path: &str, #[case] status: StatusCode) {
        let health = Health::new("nfd", INTERVAL);
        assert_eq!(health.respond(&method, path).status(), status);
    }

    #[test]
    fn every_series_exists_from_the_start() {
        let text = Health::new("nodefeature", INTERVAL).metrics();
        for series in [
            "gpu_topology_labeler_last_publish_timestamp_seconds 0\n",
            "gpu_topology_labeler_publishes_total{sink=\"nodefeature\"} 0\n",
            "gpu_topology_labeler_publish_errors_total{sink=\"nodefeature\"} 0\n",
            "gpu_topology_labeler_discovery_errors_total{source=\"sysfs\"} 0\n",
            "gpu_topology_labeler_discovery_errors_total{source=\"kubelet_config\"} 0\n",
            concat!(
                "gpu_topology_labeler_build_info{version=\"",
                env!("CARGO_PKG_VERSION"),
                "\"} 1\n"
            ),
            "# TYPE gpu_topology_labeler_publishes_total counter\n",
            "# TYPE gpu_topology_labeler_last_publish_timestamp_seconds gauge\n",
        ] {
            assert!(text.contains(series), "{series:?} not in:\n{text}");
        }
    }

    #[test]
    fn a_publish_sets_the_timestamp_and_counts() {
        let health = Health::new("nfd", INTERVAL);
        health.published(SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_629_152));
        let text = health.metrics();
        assert!(
            text.contains("gpu_topology_labeler_last_publish_timestamp_seconds 1764629152\n"),
            "{text}"
        );
        assert!(
            text.contains("gpu_topology_labeler_publishes_total{sink=\"nfd\"} 1\n"),
            "{text}"
        );
        assert!(health.readiness(Instant::now()).is_ok());
    }
}
