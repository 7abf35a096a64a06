//! Fault injection without the API server: the NFD directory read-only or
//! full, the labeler signalled in the middle of writing, a GPU lost between
//! two rounds, the wall clock jumping, and the kubelet config rewritten while
//! it is read. Real OS failures where the machine allows them (a full tmpfs
//! needs root to mount; the test says so when it cannot).
//!
//! In every case: nothing is published that the sources do not establish,
//! nothing half-written is ever visible, and nothing good is lost.

use crate::common;

use common::{local_fixture, scratch_dir, signal, topology_fixtures};
use gpu_topology_labeler::parse::kubelet::{parse_file, settings, KubeletSettings, MergedConfig};
use gpu_topology_labeler::sinks::nfd::NfdSink;
use gpu_topology_labeler::sources::kubelet::read_kubelet;
use jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FEATURE_FILE: &str = "gpu-topology";

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    common::labels(pairs)
}

/// Whether the tests run as root (who can mount a tmpfs, and whom file
/// modes do not stop).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|status| {
            status
                .lines()
                .any(|line| line.split_whitespace().take(2).eq(["Uid:", "0"]))
        })
        .unwrap_or(false)
}

/// A tmpfs of `size` mounted on `dir` for the life of the value.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Self {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount tmpfs on {}", dir.display());
        Self {
            dir: dir.to_owned(),
        }
    }

    fn remount_read_only(&self) {
        let status = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn at(rfc3339: &str) -> Timestamp {
    rfc3339.parse().unwrap()
}

/// A sink that has published `gpus=4` into `dir`: the sink, the time, the file's bytes.
fn published(dir: &Path) -> (NfdSink, Timestamp, Vec<u8>) {
    let mut sink = NfdSink::new(
        dir.to_owned(),
        FEATURE_FILE.to_owned(),
        Duration::from_secs(3600),
    );
    let now = at("2025-03-01T12:00:00Z");
    sink.publish(&labels(&[("gpus", "4")]), now).unwrap();
    (sink, now, std::fs::read(dir.join(FEATURE_FILE)).unwrap())
}

/// A read-only features directory: the publish fails with an error naming
/// the file and the OS reason; the previous file stays as it was.
#[test]
fn a_read_only_features_dir_keeps_the_previous_file() {
    let dir = scratch_dir("faults-read-only");
    // Root ignores file modes: a read-only filesystem stops it.
    let mount = is_root().then(|| Tmpfs::mount(&dir, "1m"));
    let (mut sink, now, before) = published(&dir);
    let restore = match &mount {
        Some(mount) => {
            mount.remount_read_only();
            None
        }
        None => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
            Some(std::fs::Permissions::from_mode(0o755))
        }
    };
    let error = sink
        .publish(
            &labels(&[("gpus", "8")]),
            now + SignedDuration::from_secs(60),
        )
        .unwrap_err()
        .to_string();
    if let Some(permissions) = restore {
        std::fs::set_permissions(&dir, permissions).unwrap();
    }
    assert!(
        error.contains(&format!("{}/{FEATURE_FILE}", dir.display())),
        "{error}"
    );
    assert!(
        error.contains("Read-only file system") || error.contains("Permission denied"),
        "{error}"
    );
    assert_eq!(std::fs::read(dir.join(FEATURE_FILE)).unwrap(), before);
    assert_eq!(names(&dir), [FEATURE_FILE]);
}

/// A full filesystem (a real ENOSPC, from a tmpfs filled to the last byte):
/// the previous file stays whole, no staging file is left behind, and the
/// next publish after space is freed succeeds.
#[test]
fn a_full_features_dir_keeps_the_previous_file() {
    if !is_root() {
        println!("SKIPPED a_full_features_dir_keeps_the_previous_file: mounting a tmpfs to fill needs root");
        eprintln!("SKIPPED a_full_features_dir_keeps_the_previous_file: mounting a tmpfs to fill needs root");
        return;
    }
    let dir = scratch_dir("faults-full");
    let _mount = Tmpfs::mount(&dir, "64k");
    let (mut sink, now, before) = published(&dir);
    // Fill every block that is left.
    let filler = dir.join("filler");
    let mut file = std::fs::File::create(&filler).unwrap();
    let block = [b'x'; 4096];
    let full = loop {
        if let Err(e) = file.write_all(&block).and_then(|()| file.sync_all()) {
            break e;
        }
    };
    drop(file);
    assert_eq!(full.raw_os_error(), Some(28), "{full}");

    let bigger = labels(&[
        ("gpus", "8"),
        ("numa-gpus", "4.4"),
        ("interconnect", "nvswitch"),
    ]);
    let error = sink
        .publish(&bigger, now + SignedDuration::from_secs(60))
        .unwrap_err()
        .to_string();
    assert!(error.contains("No space left on device"), "{error}");
    assert!(error.contains(FEATURE_FILE), "{error}");
    assert_eq!(std::fs::read(dir.join(FEATURE_FILE)).unwrap(), before);
    assert_eq!(names(&dir), ["filler", FEATURE_FILE]);

    std::fs::remove_file(&filler).unwrap();
    sink.publish(&bigger, now + SignedDuration::from_secs(120))
        .unwrap();
    let after = std::fs::read_to_string(dir.join(FEATURE_FILE)).unwrap();
    assert!(after.contains("gpu-topology.io/numa-gpus=4.4\n"), "{after}");
    assert_eq!(names(&dir), [FEATURE_FILE]);
}

/// The wall clock jumps: a step forward past the refresh point (or past the
/// expiry) rewrites at once; a step back rewrites too, pulling the expiry
/// back to now plus the TTL, so labels never outlive a stopped labeler by
/// more than the TTL. Over a long random walk of steps and jumps, after each
/// round the file's expiry lies within (now + TTL/2, now + TTL].
#[test]
fn clock_jumps_never_break_the_expiry() {
    let dir = scratch_dir("faults-clock");
    let ttl = Duration::from_secs(3600);
    let mut sink = NfdSink::new(dir.clone(), FEATURE_FILE.to_owned(), ttl);
    let labels = labels(&[("gpus", "8")]);
    let mut now = at("2025-03-01T12:00:00Z");
    let mut random: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        random
    };
    let ttl_signed = SignedDuration::try_from(ttl).unwrap();
    let half = ttl_signed / 2;
    let mut jumps = (0, 0);
    for round in 0..2000 {
        let step = match next() % 20 {
            // A jump back of up to two days.
            0 => {
                jumps.0 += 1;
                -SignedDuration::from_secs(i64::try_from(next() % (2 * 86_400)).unwrap() + 1)
            }
            // A jump forward of up to two days.
            1 => {
                jumps.1 += 1;
                SignedDuration::from_secs(i64::try_from(next() % (2 * 86_400)).unwrap() + 1)
            }
            // A daemon round: one minute, give or take.
            _ => SignedDuration::from_secs(50 + i64::try_from(next() % 20).unwrap()),
        };
        now += step;
        if sink.needs_refresh(now) {
            sink.publish(&labels, now).unwrap();
        }
        let text = std::fs::read_to_string(dir.join(FEATURE_FILE)).unwrap();
        let expiry: Timestamp = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# +expiry-time="))
            .unwrap()
            .parse()
            .unwrap();
        // The file rounds the expiry to the second.
        let slack = SignedDuration::from_secs(1);
        assert!(
            expiry > now + half - slack && expiry <= now + ttl_signed + slack,
            "round {round}: now {now}, expiry {expiry}"
        );
    }
    assert!(jumps.0 > 50 && jumps.1 > 50, "{jumps:?}");
}

#[test]
fn a_clock_set_back_rewrites_at_once() {
    let dir = scratch_dir("faults-clock-back");
    let mut sink = NfdSink::new(dir, FEATURE_FILE.to_owned(), Duration::from_secs(3600));
    sink.publish(&labels(&[("gpus", "2")]), at("2025-03-01T12:00:00Z"))
        .unwrap();
    assert!(!sink.needs_refresh(at("2025-03-01T12:10:00Z")));
    // A day back: the written expiry is a day and an hour ahead.
    assert!(sink.needs_refresh(at("2025-02-28T12:10:00Z")));
    // A day forward: long past the refresh point, even past the expiry.
    assert!(sink.needs_refresh(at("2025-03-02T12:10:00Z")));
}

fn labeler() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-topology-labeler"));
    command.args(["--rocm-smi", "none", "--no-nvml", "--log-level", "warn"]);
    command.env_remove("NODE_NAME");
    command
}

fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// A feature file as NFD reads it: the expiry comment, then `key=value`
/// lines, newline-terminated. `None` for anything else (a partial file).
fn feature_labels(text: &str) -> Option<BTreeMap<String, String>> {
    let body = text.strip_prefix("# +expiry-time=")?;
    let (expiry, rest) = body.split_once('\n')?;
    expiry.parse::<Timestamp>().ok()?;
    if !rest.is_empty() && !rest.ends_with('\n') {
        return None;
    }
    rest.lines()
        .map(|line| {
            let (key, value) = line.split_once('=')?;
            Some((key.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The labels of one `--once --dry-run --output json` run: what the sources
/// establish right now, the oracle a daemon's file must equal.
fn once(args: &[&str]) -> BTreeMap<String, String> {
    let output = labeler()
        .args(["--once", "--dry-run", "--output", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What [`watch_as_nfd`] saw: every distinct label set, the first
/// violation, and how many files it read.
type Watched = (Vec<BTreeMap<String, String>>, Option<String>, usize);

/// Reads `dir` over and over the way every nfd-worker version does (each
/// regular file, dot-files included as before v0.15), until `stop`; returns
/// every distinct label set seen and the first violation, if any.
fn watch_as_nfd(dir: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Watched> {
    std::thread::spawn(move || {
        let mut seen: Vec<BTreeMap<String, String>> = Vec::new();
        let mut reads = 0;
        while !stop.load(Ordering::Relaxed) {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                // NFD stats through symlinks and reads regular files only.
                if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                    continue;
                }
                let name = entry.file_name().into_string().unwrap_or_default();
                if name != FEATURE_FILE {
                    return (seen, Some(format!("NFD would read {name:?}")), reads);
                }
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                reads += 1;
                match feature_labels(&text) {
                    Some(labels) => {
                        if !seen.contains(&labels) {
                            seen.push(labels);
                        }
                    }
                    None => return (seen, Some(format!("a partial file: {text:?}")), reads),
                }
            }
        }
        (seen, None, reads)
    })
}

/// The device directory of one of the tree's GPUs, and where it goes while
/// "lost" (out of the tree, on the same filesystem: a rename is atomic).
const LOST_GPU: &str = "bus/pci/devices/0000:3a:00.0";

/// SIGTERM and SIGKILL at random moments of a daemon that rewrites its file
/// every round (a GPU comes and goes): whatever nfd-worker of any version
/// reads is a whole file of one of the two label sets; SIGTERM exits cleanly
/// and leaves no staging directory behind.
#[test]
fn signals_in_the_middle_of_writes_never_expose_a_partial_file() {
    let root = scratch_dir("faults-signals");
    let tree = root.join("sys");
    common::copy_tree(&local_fixture("sysfs/two-socket-8gpu"), &tree);
    let features = root.join("features.d");
    std::fs::create_dir(&features).unwrap();
    let away = root.join("lost-gpu");
    let sources: Vec<String> = [
        "--sysfs-root",
        tree.to_str().unwrap(),
        "--kubelet-config",
        "none",
        "--nvidia-smi",
        "none",
    ]
    .map(str::to_owned)
    .to_vec();
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
    let with_gpu = once(&sources);
    std::fs::rename(tree.join(LOST_GPU), &away).unwrap();
    let without_gpu = once(&sources);
    std::fs::rename(&away, tree.join(LOST_GPU)).unwrap();
    assert_ne!(with_gpu, without_gpu);
    let features_dir = features.to_str().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    // The GPU comes and goes, so that every round has new labels to write.
    let toggler = {
        let (stop, tree, away) = (stop.clone(), tree.clone(), away.clone());
        std::thread::spawn(move || {
            let mut present = true;
            while !stop.load(Ordering::Relaxed) {
                let (from, to) = if present {
                    (tree.join(LOST_GPU), away.clone())
                } else {
                    (away.clone(), tree.join(LOST_GPU))
                };
                std::fs::rename(from, to).unwrap();
                present = !present;
                std::thread::sleep(Duration::from_millis(7));
            }
            if !present {
                std::fs::rename(&away, tree.join(LOST_GPU)).unwrap();
            }
        })
    };
    let watcher = watch_as_nfd(features.clone(), stop.clone());
    let mut random: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut terms = 0;
    for run in 0..24 {
        let child = labeler()
            .args(&sources)
            .args(["--nfd-features-dir", features_dir])
            .args(["--interval", "20ms", "--nfd-expiry", "1h"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        std::thread::sleep(Duration::from_millis(60 + random % 240));
        if run % 2 == 0 {
            common::terminate(child);
            terms += 1;
        } else {
            signal(&child, "KILL");
            child.wait_with_output().unwrap();
        }
    }
    stop.store(true, Ordering::Relaxed);
    toggler.join().unwrap();
    let (seen, violation, reads) = watcher.join().unwrap();
    assert_eq!(violation, None);
    assert!(reads > 100, "only {reads} reads");
    // Every file read was one of the two label sets, and both were seen.
    assert!(
        seen.iter()
            .all(|labels| *labels == with_gpu || *labels == without_gpu),
        "{seen:?}"
    );
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(terms > 0);
    // The last run was killed, perhaps mid-write: the next write reuses the
    // staging directory and removes it.
    let last = labeler()
        .args(&sources)
        .args(["--nfd-features-dir", features_dir, "--once"])
        .output()
        .unwrap();
    assert!(last.status.success());
    assert_eq!(names(&features), [FEATURE_FILE]);
}

/// A GPU lost between two daemon rounds (its device leaves sysfs; nvidia-smi
/// fails from then on), then back: each time the file comes to equal what a
/// fresh single run gives, and every version of it in between was one of
/// the two whole label sets: nothing stale, nothing mixed.
#[test]
fn a_gpu_lost_between_rounds_and_back() {
    let root = scratch_dir("faults-lost-gpu");
    let tree = root.join("sys");
    common::copy_tree(&local_fixture("sysfs/two-socket-8gpu"), &tree);
    let features = root.join("features.d");
    std::fs::create_dir(&features).unwrap();
    let lost = root.join("lost");
    let nvidia_smi = root.join("nvidia-smi");
    {
        use std::os::unix::fs::PermissionsExt;
        let fixture = topology_fixtures().join("h100-sxm-8gpu-2numa.txt");
        std::fs::write(
            &nvidia_smi,
            format!(
                "#!/bin/sh\nif [ -e '{}' ]; then echo 'GPU is lost' >&2; exit 15; fi\ncat '{}'\n",
                lost.display(),
                fixture.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&nvidia_smi, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let sources = [
        "--sysfs-root",
        tree.to_str().unwrap(),
        "--kubelet-config",
        "none",
        "--nvidia-smi",
        nvidia_smi.to_str().unwrap(),
    ];
    let with_gpu = once(&sources);
    assert_eq!(with_gpu["gpu-topology.io/gpus"], "8");
    assert_eq!(with_gpu["gpu-topology.io/nvlink-group-max"], "8");

    let child = labeler()
        .args(sources)
        .args(["--interval", "50ms", "--nfd-expiry", "1h"])
        .args(["--nfd-features-dir", features.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_as_nfd(features.clone(), stop.clone());
    let file = features.join(FEATURE_FILE);
    let file_labels = || {
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| feature_labels(&text))
    };
    assert!(wait_until(Duration::from_secs(10), || file_labels()
        == Some(with_gpu.clone())));

    // The GPU falls off the bus: its device goes, nvidia-smi fails.
    std::fs::write(&lost, "").unwrap();
    std::fs::remove_dir_all(tree.join(LOST_GPU)).unwrap();
    let without_gpu = once(&sources);
    assert_eq!(without_gpu["gpu-topology.io/gpus"], "7");
    assert_eq!(without_gpu["gpu-topology.io/numa-gpus"], "3.4");
    assert!(!without_gpu.contains_key("gpu-topology.io/nvlink-group-max"));
    assert!(
        wait_until(Duration::from_secs(10), || file_labels()
            == Some(without_gpu.clone())),
        "{:?}",
        file_labels()
    );

    // Back (a driver reload): the labels follow.
    common::copy_tree(
        &local_fixture(&format!("sysfs/two-socket-8gpu/{LOST_GPU}")),
        &tree.join(LOST_GPU),
    );
    std::fs::remove_file(&lost).unwrap();
    assert!(wait_until(Duration::from_secs(10), || file_labels()
        == Some(with_gpu.clone())));

    stop.store(true, Ordering::Relaxed);
    common::terminate(child);
    let (seen, violation, _) = watcher.join().unwrap();
    assert_eq!(violation, None);
    assert!(
        seen.iter()
            .all(|labels| *labels == with_gpu || *labels == without_gpu),
        "{seen:?}"
    );
}

const HEADER: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

/// Two whole configs, and the first half of the second: valid YAML, a valid
/// config, with other values than either (the topology policy defaults).
fn configs() -> (String, String, String) {
    let a = format!(
        "{HEADER}topologyManagerPolicy: best-effort\ncpuManagerPolicy: none\nmemoryManagerPolicy: None\n"
    );
    let b_head = format!("{HEADER}cpuManagerPolicy: static\nkubeReserved:\n  cpu: \"2\"\n");
    let b = format!("{b_head}topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\n");
    (a, b, b_head)
}

fn settings_of(text: &str) -> KubeletSettings {
    settings(&MergedConfig::new(parse_file(text).unwrap(), [])).unwrap()
}

/// How the config is replaced.
#[derive(Debug, Clone, Copy)]
enum Rewrite {
    /// A whole new file renamed over it.
    AtomicRename,
    /// Truncated and written again in place, in two writes with a pause.
    InPlace,
}

/// The kubelet config replaced again and again while the labeler reads it:
/// every read gives the settings of one whole version, never those of a
/// half-written file (which parses, with other values); and reads succeed.
#[rstest::rstest]
#[case::atomic_rename(Rewrite::AtomicRename)]
#[case::in_place_truncate_and_write(Rewrite::InPlace)]
#[tokio::test]
async fn a_kubelet_config_replaced_while_read(#[case] rewrite: Rewrite) {
    let dir = scratch_dir(&format!("faults-kubelet-{rewrite:?}"));
    let path = dir.join("config.yaml");
    let (a, b, b_head) = configs();
    let (a_settings, b_settings) = (settings_of(&a), settings_of(&b));
    let head_settings = settings_of(&b_head);
    assert!(head_settings != a_settings && head_settings != b_settings);
    std::fs::write(&path, &a).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, path, staging) = (stop.clone(), path.clone(), dir.join(".config.yaml.new"));
        std::thread::spawn(move || {
            let mut random: u64 = 0x853c_49e6_748f_ea9b;
            let mut writes = 0;
            while !stop.load(Ordering::Relaxed) {
                let text = if writes % 2 == 0 { &b } else { &a };
                match rewrite {
                    Rewrite::AtomicRename => {
                        std::fs::write(&staging, text).unwrap();
                        std::fs::rename(&staging, &path).unwrap();
                    }
                    Rewrite::InPlace => {
                        let mut file = std::fs::File::create(&path).unwrap();
                        let (first, second) = text.split_at(text.len() / 2);
                        let (first, second) = if text == &b {
                            text.split_at(b_head.len())
                        } else {
                            (first, second)
                        };
                        file.write_all(first.as_bytes()).unwrap();
                        std::thread::sleep(Duration::from_millis(40));
                        file.write_all(second.as_bytes()).unwrap();
                    }
                }
                writes += 1;
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                // Some pauses shorter than the settle time, most longer.
                std::thread::sleep(Duration::from_millis(50 + (random >> 32) % 650));
            }
            writes
        })
    };
    let started = Instant::now();
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    while started.elapsed() < Duration::from_secs(5) {
        let outcome = match read_kubelet(&path, None).await {
            Ok(settings) if settings == a_settings => "a",
            Ok(settings) if settings == b_settings => "b",
            Ok(settings) => panic!("{rewrite:?}: settings of no whole version: {settings:?}"),
            Err(error) => {
                // A file that never settled is an error, never a value.
                assert!(error.message.contains("kept changing"), "{error}");
                "not read"
            }
        };
        *outcomes.entry(outcome).or_default() += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(writes > 5, "{writes} rewrites");
    assert!(
        outcomes.contains_key("a") && outcomes.contains_key("b"),
        "{outcomes:?}"
    );
    let failed = outcomes.get("not read").copied().unwrap_or(0);
    let read = outcomes.values().sum::<usize>() - failed;
    assert!(read > failed, "{outcomes:?}");
    let versions: BTreeSet<&str> = outcomes.keys().copied().collect();
    assert!(versions.is_subset(&BTreeSet::from(["a", "b", "not read"])));
}
