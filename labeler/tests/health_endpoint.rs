//! The daemon's health endpoint (`--metrics-address`): the real binary,
//! bound to 127.0.0.1 on a free port, driven through its sinks (an NFD
//! directory that is missing then created; the scripted API server
//! accepting or refusing applies) and its sources (a recorded topology
//! removed and restored, a tool that fails), with `/readyz`, `/livez` and
//! `/metrics` read over HTTP as the kubelet and Prometheus read them.

use crate::common;

use common::fake_api::{self, kubeconfig, Reply};
use common::{isolated, scratch_dir, topology_fixtures};
use rstest::rstest;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// Rounds this often: three of them (the readiness window) pass quickly.
const INTERVAL: &str = "250ms";
const NODE: &str = "gpu-node-1";
/// How long a state may take to show.
const PATIENCE: Duration = Duration::from_secs(15);

/// A running daemon and where it serves.
struct Daemon {
    child: Child,
    address: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Daemon {
    /// Starts the binary as a daemon with `args`, sources and environment of
    /// this machine left out (sysfs and the kubelet config unless `args`
    /// name them), and waits for it to say where it listens.
    async fn start(args: &[String], env: &[(&str, &Path)]) -> Daemon {
        let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-topology-labeler"));
        command
            .args(["--interval", INTERVAL, "--metrics-address", "127.0.0.1:0"])
            .args(["--rocm-smi", "none", "--no-nvml"]);
        for flag in ["--sysfs-root", "--kubelet-config"] {
            if !args.iter().any(|a| a.starts_with(&format!("{flag}="))) {
                command.args([flag, "none"]);
            }
        }
        isolated(&mut command)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (found, address) = tokio::sync::oneshot::channel();
        let log = stderr.clone();
        // Drains stderr for as long as the daemon runs (a full pipe would
        // block its logging), and tells the address it logs.
        tokio::spawn(async move {
            let mut found = Some(found);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(address) = line.split_once("address=").map(|(_, a)| a.trim()) {
                    if let Some(found) = found.take() {
                        let _ = found.send(address.parse::<SocketAddr>().unwrap());
                    }
                }
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let address = tokio::time::timeout(PATIENCE, address)
            .await
            .unwrap_or_else(|_| panic!("no address logged:\n{}", stderr.lock().unwrap()))
            .unwrap_or_else(|_| panic!("the daemon exited:\n{}", stderr.lock().unwrap()));
        assert!(address.ip().is_loopback(), "{address}");
        Daemon {
            child,
            address,
            stderr,
        }
    }

    /// `GET path`: the status code and the body.
    async fn get(&self, path: &str) -> (u16, String) {
        get(self.address, path).await
    }

    /// The samples of `/metrics`.
    async fn metrics(&self) -> Metrics {
        let (status, body) = self.get("/metrics").await;
        assert_eq!(status, 200, "{body}");
        Metrics::parse(&body)
    }

    /// Polls until `done` accepts the readiness answer and the metrics, and
    /// returns them. The metrics are read first: the answer to `/readyz`
    /// that follows is at least as recent (the daemon records each outcome
    /// on its one thread, between two answers).
    async fn until(
        &self,
        what: &str,
        done: impl Fn(&(u16, String), &Metrics) -> bool,
    ) -> ((u16, String), Metrics) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let metrics = self.metrics().await;
            let ready = self.get("/readyz").await;
            if done(&ready, &metrics) {
                return (ready, metrics);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: still /readyz {ready:?}, metrics {:?}\nlog:\n{}",
                metrics.0,
                self.stderr.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the daemon with SIGTERM: it exits 0.
    async fn stop(mut self) {
        let pid = self.child.id().unwrap().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.code(), Some(0), "{}", self.stderr.lock().unwrap());
    }
}

/// One HTTP/1.1 GET, as a probe sends it (`connection: close`).
async fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// The samples of a Prometheus text exposition: series (`name{labels}`, as
/// written) to value; and the metric names its `# TYPE` lines declare.
#[derive(Debug)]
struct Metrics(BTreeMap<String, f64>, BTreeSet<String>);

impl Metrics {
    fn parse(text: &str) -> Metrics {
        let mut samples = BTreeMap::new();
        let mut declared = BTreeSet::new();
        for line in text.lines() {
            if let Some(declaration) = line.strip_prefix("# TYPE ") {
                declared.insert(declaration.split(' ').next().unwrap().to_owned());
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').unwrap();
            samples.insert(series.to_owned(), value.parse().unwrap());
        }
        // Every sample belongs to a declared metric.
        for series in samples.keys() {
            let name = series.split('{').next().unwrap();
            assert!(declared.contains(name), "{name} has no # TYPE line");
        }
        Metrics(samples, declared)
    }

    fn value(&self, series: &str) -> f64 {
        *self
            .0
            .get(series)
            .unwrap_or_else(|| panic!("no series {series} in {:?}", self.0))
    }

    fn publishes(&self, sink: &str) -> f64 {
        self.value(&format!(
            "gpu_topology_labeler_publishes_total{{sink=\"{sink}\"}}"
        ))
    }

    fn publish_errors(&self, sink: &str) -> f64 {
        self.value(&format!(
            "gpu_topology_labeler_publish_errors_total{{sink=\"{sink}\"}}"
        ))
    }

    fn discovery_errors(&self, source: &str) -> f64 {
        self.value(&format!(
            "gpu_topology_labeler_discovery_errors_total{{source=\"{source}\"}}"
        ))
    }

    fn last_publish(&self) -> f64 {
        self.value("gpu_topology_labeler_last_publish_timestamp_seconds")
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as f64
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// A copy of the DGX A100 `nvidia-smi topo -m` recording in `dir`.
fn recorded_topology(dir: &Path) -> PathBuf {
    let path = dir.join("topo.txt");
    std::fs::copy(topology_fixtures().join("dgx-a100-mlx5-nps4.txt"), &path).unwrap();
    path
}

/// `/readyz` follows the publishes: unready while the NFD directory is
/// missing (publishing fails), ready once it exists, unready again when
/// rounds fail (the recorded topology, named by a flag, is gone) for more
/// than 3 intervals, and ready again when it is back, without a new
/// publish: unchanged labels are confirmed, not rewritten.
#[tokio::test]
async fn readiness_follows_the_publishes_and_the_failing_rounds() {
    let dir = scratch_dir("health-readiness");
    let features = dir.join("features.d");
    let topology = recorded_topology(&dir);
    let started = unix_now();
    let daemon = Daemon::start(
        &[
            "--sink=nfd".to_owned(),
            format!("--nfd-features-dir={}", features.display()),
            format!("--nvidia-smi-topo={}", topology.display()),
        ],
        &[],
    )
    .await;
    assert_eq!(daemon.get("/livez").await.0, 200);

    let ((_, reason), metrics) = daemon
        .until("a failed publish", |(status, _), m| {
            *status == 503 && m.publish_errors("nfd") >= 1.0
        })
        .await;
    assert!(reason.contains("not been published yet"), "{reason}");
    assert!(reason.contains("publishing failed"), "{reason}");
    assert_eq!(reason.lines().count(), 1, "{reason}");
    assert_eq!(metrics.publishes("nfd"), 0.0);
    assert_eq!(metrics.last_publish(), 0.0);

    std::fs::create_dir(&features).unwrap();
    let ((_, reason), metrics) = daemon
        .until("the first publish", |(status, _), _| *status == 200)
        .await;
    assert!(reason.starts_with("ok"), "{reason}");
    assert_eq!(metrics.publishes("nfd"), 1.0);
    assert!(
        (started..=unix_now()).contains(&metrics.last_publish()),
        "{}",
        metrics.last_publish()
    );
    let published_at = metrics.last_publish();

    std::fs::remove_file(&topology).unwrap();
    let ((_, reason), metrics) = daemon
        .until("rounds failing for 3 intervals", |(status, _), m| {
            *status == 503 && m.discovery_errors("nvidia_smi") >= 1.0
        })
        .await;
    assert!(reason.contains("last confirmed"), "{reason}");
    assert!(reason.contains("discovery failed"), "{reason}");
    assert_eq!(metrics.last_publish(), published_at);
    // Unready, never dead: a failing source is no reason to restart.
    assert_eq!(daemon.get("/livez").await.0, 200);

    recorded_topology(&dir);
    let (_, metrics) = daemon
        .until("the labels confirmed again", |(status, _), _| {
            *status == 200
        })
        .await;
    assert_eq!(
        metrics.publishes("nfd"),
        1.0,
        "unchanged labels are not rewritten"
    );
    daemon.stop().await;
}

/// How the scripted API server answers.
#[derive(Debug, Clone, Copy)]
enum Api {
    Accepts,
    Refuses(u16),
}

/// Every sink counts its publishes and its failures under its own name, and
/// the labeler is ready exactly when a publish went through.
#[rstest]
#[case::nfd_writes_its_file("nfd", None, true)]
#[case::kubernetes_applied("kubernetes", Some(Api::Accepts), true)]
#[case::kubernetes_forbidden("kubernetes", Some(Api::Refuses(403)), false)]
#[case::nodefeature_applied("nodefeature", Some(Api::Accepts), true)]
#[case::nodefeature_crd_missing("nodefeature", Some(Api::Refuses(404)), false)]
#[case::nodefeature_api_server_unavailable("nodefeature", Some(Api::Refuses(503)), false)]
#[tokio::test]
async fn each_sink_counts_its_publishes_and_failures(
    #[case] sink: &str,
    #[case] api: Option<Api>,
    #[case] published: bool,
) {
    let dir = scratch_dir(&format!("health-sink-{sink}-{api:?}"));
    let mut args = vec![
        format!("--sink={sink}"),
        format!("--nvidia-smi-topo={}", recorded_topology(&dir).display()),
    ];
    let mut env = Vec::new();
    let config;
    let server = match api {
        None => {
            let features = dir.join("features.d");
            std::fs::create_dir(&features).unwrap();
            args.push(format!("--nfd-features-dir={}", features.display()));
            None
        }
        Some(api) => {
            let reply = match api {
                Api::Accepts => Reply::status(201),
                Api::Refuses(code) => Reply::status(code),
            };
            // One answer; the rounds after it find the port closed (no answer).
            let (port, _log, server) = fake_api::scripted(vec![reply]).await;
            config = kubeconfig(&dir, port, "gpu-topology-labeler");
            env.push(("KUBECONFIG", config.as_path()));
            args.extend(strings(&["--node-name", NODE, "--api-attempts", "1"]));
            Some(server)
        }
    };
    let daemon = Daemon::start(&args, &env).await;
    let ((status, reason), metrics) = daemon
        .until("the first round's outcome", |_, m| {
            m.publishes(sink) + m.publish_errors(sink) >= 1.0
        })
        .await;
    if let Some(server) = server {
        fake_api::finish(server).await;
    }
    assert_eq!(status == 200, published, "{reason}");
    assert_eq!(metrics.publishes(sink), if published { 1.0 } else { 0.0 });
    if published {
        assert_eq!(metrics.publish_errors(sink), 0.0);
        assert!(metrics.last_publish() > 0.0);
    } else {
        assert!(reason.contains("publishing failed"), "{reason}");
        assert_eq!(metrics.last_publish(), 0.0);
    }
    // No other sink's series.
    let others = metrics
        .0
        .keys()
        .filter(|series| series.contains("sink=") && !series.contains(&format!("sink=\"{sink}\"")))
        .count();
    assert_eq!(others, 0, "{:?}", metrics.0);
    daemon.stop().await;
}

/// Discovery errors are counted by source: a default source that fails
/// costs its labels and the labeler still publishes; a source named by a
/// flag that fails publishes nothing.
#[rstest]
#[case::a_failing_nvidia_smi(&["--nvidia-smi=false"], &["nvidia_smi", "nvidia_smi_query"], true)]
#[case::a_missing_recorded_topology(&["--nvidia-smi=none", "--nvidia-smi-topo=/nonexistent/topo.txt"], &["nvidia_smi"], false)]
#[case::a_missing_sysfs_root(&["--nvidia-smi=none", "--sysfs-root=/nonexistent/sys"], &["sysfs"], false)]
#[case::a_missing_kubelet_config(&["--nvidia-smi=none", "--kubelet-config=/nonexistent/config.yaml"], &["kubelet_config"], false)]
#[tokio::test]
async fn discovery_errors_are_counted_by_source(
    #[case] args: &[&str],
    #[case] failing: &[&str],
    #[case] published: bool,
) {
    let dir = scratch_dir(&format!("health-discovery-{}", failing.join("-")));
    let features = dir.join("features.d");
    std::fs::create_dir(&features).unwrap();
    let mut all = vec![
        "--sink=nfd".to_owned(),
        format!("--nfd-features-dir={}", features.display()),
    ];
    all.extend(strings(args));
    let daemon = Daemon::start(&all, &[]).await;
    let ((status, reason), metrics) = daemon
        .until("two rounds' errors", |_, m| {
            failing
                .iter()
                .all(|source| m.discovery_errors(source) >= 2.0)
        })
        .await;
    assert_eq!(status == 200, published, "{reason}");
    assert_eq!(metrics.publishes("nfd") >= 1.0, published);
    for source in [
        "sysfs",
        "nvml",
        "nvidia_smi",
        "nvidia_smi_list",
        "nvidia_smi_query",
        "rocm_smi",
        "kubelet_config",
    ] {
        if !failing.contains(&source) {
            assert_eq!(metrics.discovery_errors(source), 0.0, "{source}");
        }
    }
    daemon.stop().await;
}

/// Anything but the three paths is 404; anything but GET and HEAD is 405.
#[rstest]
#[case::livez("/livez", 200)]
#[case::metrics_with_a_query("/metrics?format=text", 200)]
#[case::root("/", 404)]
#[case::healthz_is_not_served("/healthz", 404)]
#[tokio::test]
async fn only_the_three_paths_are_served(#[case] path: &str, #[case] status: u16) {
    let dir = scratch_dir(&format!("health-paths-{}", path.len()));
    let daemon = Daemon::start(
        &[
            "--sink=stdout".to_owned(),
            format!("--nvidia-smi-topo={}", recorded_topology(&dir).display()),
        ],
        &[],
    )
    .await;
    assert_eq!(daemon.get(path).await.0, status);
    daemon.stop().await;
}

/// `--metrics-address` on a port another process holds: a usage error, at
/// once, rather than a daemon nobody can probe.
#[tokio::test]
async fn a_port_in_use_is_a_usage_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_gpu-topology-labeler"))
        .args([
            "--sink",
            "stdout",
            "--sysfs-root",
            "none",
            "--kubelet-config",
            "none",
        ])
        .args(["--nvidia-smi", "none", "--rocm-smi", "none", "--no-nvml"])
        .arg(format!("--metrics-address={address}"))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--metrics-address"), "{stderr}");
}

// ---------------------------------------------------------------------------
// The alerts name metrics the labeler exports

/// The metric names a PromQL expression reads: identifiers that are not
/// functions, aggregations, keywords, label names (in `{}` or `by (...)`),
/// strings or durations.
fn promql_metric_names(expression: &str) -> BTreeSet<String> {
    const KEYWORDS: [&str; 10] = [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
    ];
    // Followed by `by (...)` or `without (...)` rather than by `(`.
    const AGGREGATIONS: [&str; 14] = [
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ];
    let mut names = BTreeSet::new();
    let chars: Vec<char> = expression.chars().collect();
    let mut i = 0;
    // After `by`/`without`/`on`/`ignoring`/`group_*`, the next `(...)` lists labels.
    let mut labels_follow = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                while i < chars.len() && chars[i] != close {
                    i += 1;
                }
                i += 1;
            }
            '(' if labels_follow => {
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                i += 1;
                labels_follow = false;
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next] == ' ' {
                    next += 1;
                }
                if KEYWORDS.contains(&word.as_str()) {
                    labels_follow = !["bool", "and", "or", "unless"].contains(&word.as_str());
                } else if chars.get(next) != Some(&'(') && !AGGREGATIONS.contains(&word.as_str()) {
                    names.insert(word);
                }
            }
            c if c.is_ascii_digit() => {
                // A number, or a duration such as 5m, or 1e3.
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    names
}

#[rstest]
#[case::a_gauge_age("time() - gpu_topology_labeler_last_publish_timestamp_seconds > 2400", &["gpu_topology_labeler_last_publish_timestamp_seconds"])]
#[case::up_of_a_job("up{job=\"gpu-topology-labeler\"} == 0", &["up"])]
#[case::absent("absent(up{job=\"gpu-topology-labeler\"})", &["up"])]
#[case::increase_over_a_range("increase(x_total[15m]) > 0", &["x_total"])]
#[case::an_aggregation_by_labels("sum by (node, source) (rate(x_total[5m])) > bool 1e3", &["x_total"])]
#[case::a_join("a * on (pod) group_left (node) b", &["a", "b"])]
fn promql_metric_names_are_read(#[case] expression: &str, #[case] expected: &[&str]) {
    let expected: BTreeSet<String> = expected.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(promql_metric_names(expression), expected);
}

/// Series Prometheus makes itself for every target; no exporter has them.
const PROMETHEUS_SERIES: [&str; 1] = ["up"];

/// Every metric an alert of examples/labeler/monitoring/alerts.yaml reads is
/// one the running labeler serves (or one Prometheus makes itself).
#[tokio::test]
async fn every_metric_the_alerts_read_is_served() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/labeler/monitoring/alerts.yaml");
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let rule = docs.iter().find(|d| d["kind"] == "PrometheusRule").unwrap();
    let mut read = BTreeSet::new();
    for group in rule["spec"]["groups"].as_array().unwrap() {
        for alert in group["rules"].as_array().unwrap() {
            let names = promql_metric_names(alert["expr"].as_str().unwrap());
            assert!(!names.is_empty(), "{alert}");
            read.extend(names);
        }
    }
    let dir = scratch_dir("health-alerts");
    let daemon = Daemon::start(
        &[
            "--sink=stdout".to_owned(),
            format!("--nvidia-smi-topo={}", recorded_topology(&dir).display()),
        ],
        &[],
    )
    .await;
    let served = daemon.metrics().await;
    daemon.stop().await;
    for name in &read {
        assert!(
            served.1.contains(name) || PROMETHEUS_SERIES.contains(&name.as_str()),
            "alerts.yaml reads {name}, which the labeler does not serve: {:?}",
            served.1
        );
    }
    // Staleness, errors of either kind, and a target down: each has an alert.
    for name in [
        "gpu_topology_labeler_last_publish_timestamp_seconds",
        "gpu_topology_labeler_discovery_errors_total",
        "gpu_topology_labeler_publish_errors_total",
        "up",
    ] {
        assert!(read.contains(name), "no alert reads {name}");
    }
}
