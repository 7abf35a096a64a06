//! The binary end to end: flags, stdout contract, exit codes, NFD file, SIGTERM.

use crate::common;

use common::{labels_with_shape, local_fixture, scratch_dir, topology_fixtures};
use rstest::rstest;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn labeler() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-topology-labeler"));
    // Tools of this machine must not leak into the results.
    command.args(["--nvidia-smi", "none", "--rocm-smi", "none", "--no-nvml"]);
    command.env_remove("NODE_NAME");
    command
}

fn run(args: &[&str]) -> Output {
    labeler().args(args).output().unwrap()
}

fn fixture(name: &str) -> String {
    topology_fixtures().join(name).display().to_string()
}

fn local(relative: &str) -> String {
    local_fixture(relative).display().to_string()
}

/// Runs `--once --dry-run --output json` plus `args`; it must succeed and print
/// exactly one JSON object. Returns the labels and stderr.
fn json_labels(args: &[&str]) -> (BTreeMap<String, String>, String) {
    let mut argv = vec!["--once", "--dry-run", "--output", "json"];
    argv.extend_from_slice(args);
    let output = run(&argv);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    (serde_json::from_str(&stdout).unwrap(), stderr)
}

#[test]
fn once_dry_run_json_prints_exactly_one_object_of_labels() {
    let (printed, _) = json_labels(&[
        "--sysfs-root",
        &local("sysfs/nps4-8numa"),
        "--nvidia-smi-topo",
        &fixture("dgx-a100-mlx5-nps4.txt"),
        "--kubelet-config",
        &local("kubelet/single-numa-node.yaml"),
    ]);
    // single-numa-node.yaml: reservedSystemCPUs 0,1 (node 0), the static
    // Memory Manager reserving 1100 MiB on node 0; the tree has no hugepages.
    let mut expected = common::DGX_A100_NPS4_LABELS.to_vec();
    expected.extend([
        ("cpu-manager-align-by-socket", "false"),
        ("cpu-manager-distribute-cpus-across-numa", "false"),
        ("cpu-manager-full-pcpus-only", "false"),
        ("cpu-manager-policy", "static"),
        ("memory-manager-policy", "static"),
        // The default device resources (--devices-config): the tree has no
        // class/infiniband or class/net, so none of their devices.
        ("numa-devices.rdma_rdma_shared_device_a", "0.0.0.0.0.0.0.0"),
        (
            "numa-devices.intel.com_intel_sriov_netdevice",
            "0.0.0.0.0.0.0.0",
        ),
        ("numa-hugepages-1gi", "0.0.0.0.0.0.0.0"),
        ("numa-hugepages-2mi", "0.0.0.0.0.0.0.0"),
        // The recorded 127621.128721.128721.128721.128721.128721.128934.128721
        // MiB in whole GiB: NUMA node 6's 213 MiB more make no other shape.
        (
            "numa-memory-mib",
            "126976.128000.128000.128000.128000.128000.128000.128000",
        ),
        ("numa-reserved-cpus", "2.0.0.0.0.0.0.0"),
        ("topology-manager-max-allowable-numa-nodes", "8"),
        ("topology-manager-policy", "single-numa-node"),
        ("topology-manager-prefer-closest-numa-nodes", "false"),
        ("topology-manager-scope", "pod"),
    ]);
    assert_eq!(printed, labels_with_shape(&expected));
}

/// `nvidia-smi -q` output of a GB200 in a multi-node NVLink clique: the
/// clique is published as GPU Feature Discovery writes it, and changes no
/// other label (it is informational: the shape stays).
#[test]
fn a_recorded_fabric_query_publishes_the_gpu_clique() {
    let topology = [
        "--sysfs-root",
        &local("sysfs/nps4-8numa"),
        "--nvidia-smi-topo",
        &fixture("dgx-a100-mlx5-nps4.txt"),
        "--kubelet-config",
        "none",
    ];
    let (without, _) = json_labels(&topology);
    let query = local("fabric/gb200-completed-grep-c3.txt");
    let mut argv = topology.to_vec();
    argv.extend(["--nvidia-smi-query", &query]);
    let (mut with, _) = json_labels(&argv);
    assert_eq!(
        with.remove("gpu-topology.io/gpu-clique").as_deref(),
        Some("dc6e40c4-d722-4357-9ba6-5291dd461278.2")
    );
    assert_eq!(with, without);
}

#[test]
fn text_mode_prints_labels_then_a_summary() {
    let output = run(&[
        "--once",
        "--dry-run",
        "--sysfs-root",
        &local("sysfs/two-socket-8gpu"),
        "--kubelet-config",
        "none",
        "--nvidia-smi-topo",
        &fixture("h100-sxm-8gpu-2numa.txt"),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("gpu-topology.io/cpus-per-numa=104\n"),
        "{stdout}"
    );
    for expected in [
        "0000:18:00.0",
        "NUMA node 0",
        "GPU7",
        "NV18",
        "NVLink/XGMI groups: {GPU0,GPU1,GPU2,GPU3,GPU4,GPU5,GPU6,GPU7}",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected} missing from:\n{stdout}"
        );
    }
}

#[test]
fn kubelet_drop_ins_override_the_config_file() {
    let (printed, _) = json_labels(&[
        "--sysfs-root",
        "none",
        "--kubelet-config",
        &local("kubelet/defaults.yaml"),
        "--kubelet-config-dir",
        &local("kubelet/drop-ins"),
    ]);
    // The drop-ins set the policies; every other key takes the kubelet's default.
    let expected = [
        ("cpu-manager-align-by-socket", "false"),
        ("cpu-manager-distribute-cpus-across-numa", "false"),
        ("cpu-manager-full-pcpus-only", "false"),
        ("cpu-manager-policy", "static"),
        ("memory-manager-policy", "none"),
        ("topology-manager-max-allowable-numa-nodes", "8"),
        ("topology-manager-policy", "restricted"),
        ("topology-manager-prefer-closest-numa-nodes", "false"),
        ("topology-manager-scope", "pod"),
    ];
    assert_eq!(printed, labels_with_shape(&expected));
}

#[rstest]
#[case::malformed_topology_file(&["--nvidia-smi-topo", "{fixtures}/SOURCES.md"], 2, "GPU0")]
#[case::missing_topology_file(&["--nvidia-smi-topo", "/nonexistent/topo.txt"], 2, "/nonexistent/topo.txt")]
#[case::missing_sysfs_root(&["--sysfs-root", "/nonexistent/sys"], 2, "/nonexistent/sys")]
#[case::malformed_kubelet_config(&["--kubelet-config", "{local}/kubelet/malformed.yaml"], 2, "malformed.yaml")]
#[case::truncated_rocm_smi(&["--rocm-smi-topo", "{local}/kubelet/defaults.yaml"], 2, "truncated")]
#[case::unknown_flag(&["--frobnicate"], 1, "frobnicate")]
#[case::invalid_prefix(&["--label-prefix", "UPPER"], 1, "UPPER")]
#[case::kubernetes_sink_without_node_name(&["--sink", "kubernetes"], 1, "NODE_NAME")]
fn failures_exit_with_their_code_and_print_no_labels(
    #[case] args: &[&str],
    #[case] code: i32,
    #[case] message: &str,
) {
    let fixtures = topology_fixtures().display().to_string();
    let local_dir = local_fixture("").display().to_string();
    let mut argv: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("{fixtures}", &fixtures)
                .replace("{local}/", &local_dir)
        })
        .collect();
    // Every other source off and stdout as the sink, unless the case sets them.
    for (flag, default) in [
        ("--sysfs-root", Some("none")),
        ("--kubelet-config", Some("none")),
        ("--once", None),
    ] {
        if !args.contains(&flag) {
            argv.push(flag.to_owned());
            argv.extend(default.map(str::to_owned));
        }
    }
    if !args.contains(&"--sink") {
        argv.push("--dry-run".to_owned());
    }
    let output = labeler().args(&argv).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(stderr.contains(message), "{message} missing from: {stderr}");
}

#[test]
fn missing_default_sources_degrade_to_a_warning() {
    // The default kubelet config path does not exist here: warn, publish the rest.
    let (printed, stderr) = json_labels(&["--sysfs-root", &local("sysfs/no-gpus")]);
    assert_eq!(
        printed,
        labels_with_shape(&[
            ("gpus", "0"),
            ("machine-numa-nodes", "1"),
            ("numa-cpus", "32"),
            ("numa-gpus", "0"),
            ("numa-devices.rdma_rdma_shared_device_a", "0"),
            ("numa-devices.intel.com_intel_sriov_netdevice", "0"),
        ])
    );
    assert!(stderr.contains("kubelet config not read"), "{stderr}");
}

#[test]
fn once_with_the_nfd_sink_writes_the_feature_file() {
    let dir = scratch_dir("cli-nfd-once");
    let output = run(&[
        "--once",
        "--sysfs-root",
        &local("sysfs/amd-4x-mi210"),
        "--kubelet-config",
        "none",
        "--rocm-smi-topo",
        &fixture(common::ROCM_SMI_FIXTURE),
        "--nfd-features-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(dir.join("gpu-topology")).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("# +expiry-time="));
    assert_eq!(
        lines.collect::<Vec<_>>(),
        [
            "gpu-topology.io/cpus-per-numa=32",
            "gpu-topology.io/gpus=4",
            "gpu-topology.io/gpus-per-numa-max=1",
            "gpu-topology.io/interconnect=xgmi",
            "gpu-topology.io/machine-numa-nodes=4",
            "gpu-topology.io/memory-per-numa-gib=62",
            "gpu-topology.io/numa-cpus=32.32.32.32",
            "gpu-topology.io/numa-devices.intel.com_intel_sriov_netdevice=0.0.0.0",
            "gpu-topology.io/numa-devices.rdma_rdma_shared_device_a=0.0.0.0",
            "gpu-topology.io/numa-gpus=1.1.1.1",
            "gpu-topology.io/numa-nodes=4",
            "gpu-topology.io/nvlink-group-max=4",
            "gpu-topology.io/shape=ee0bdbb388f1ed94",
        ]
    );
}

#[test]
fn an_unwritable_features_dir_exits_with_the_publish_code() {
    let output = run(&[
        "--once",
        "--sysfs-root",
        "none",
        "--kubelet-config",
        "none",
        "--nfd-features-dir",
        "/nonexistent/features.d",
    ]);
    assert_eq!(output.status.code(), Some(3));
}

fn wait_for(path: &Path, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn the_daemon_publishes_then_exits_cleanly_on_sigterm() {
    let dir = scratch_dir("cli-daemon");
    let child = labeler()
        .args([
            "--sysfs-root",
            &local("sysfs/two-socket-8gpu"),
            "--kubelet-config",
            "none",
            "--interval",
            "1h",
            "--nfd-expiry",
            "3h",
        ])
        .args(["--nfd-features-dir", dir.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for(&dir.join("gpu-topology"), Duration::from_secs(10)),
        "no feature file written"
    );
    let output = common::terminate(child);
    assert!(String::from_utf8_lossy(&output.stderr).contains("stopping on signal"));
}
