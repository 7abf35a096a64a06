//! Shared test helpers: fixture locations and label maps.
#![allow(dead_code)]

pub mod fake_api;

use gpu_topology::{LabelPrefix, NodeTopology};
use gpu_topology_labeler::model::ToolReport;
use gpu_topology_labeler::reconcile::{reconcile, Inputs};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

/// The acceptance fixtures: real topology dumps kept in the repository, with
/// their provenance in `SOURCES.md` and the true topology in `ground_truth.json`.
pub fn topology_fixtures() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology");
    assert!(
        dir.join("ground_truth.json").is_file(),
        "acceptance fixtures missing: expected {}",
        dir.display()
    );
    dir
}

pub fn topology_fixture(name: &str) -> String {
    let path = topology_fixtures().join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
}

/// Every `nvidia-smi topo` fixture (all `.txt` files but the rocm-smi one).
pub fn nvidia_smi_fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(topology_fixtures())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".txt") && !n.contains("rocm-smi"))
        .collect();
    names.sort();
    names
}

pub const ROCM_SMI_FIXTURE: &str = "amd-4x-mi210-xgmi-rocm-smi-showtopo.txt";

/// The labeler's own test fixtures (fake sysfs trees, kubelet configs).
pub fn local_fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// A label map under the default prefix from `(name, value)` pairs.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    let prefix = LabelPrefix::default();
    pairs
        .iter()
        .map(|(name, value)| (format!("{prefix}/{name}"), (*value).to_owned()))
        .collect()
}

/// [`labels`] with the `shape` the contract derives from them, as the labeler
/// publishes it on every node with a fact ([`NodeTopology::with_shape`]; the
/// digest itself is pinned by the contract's own tests).
pub fn labels_with_shape(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    let prefix = LabelPrefix::default();
    let plain = labels(pairs);
    NodeTopology::from_labels(&prefix, plain.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .unwrap()
        .with_shape()
        .to_labels(&prefix)
}

/// A fresh empty directory under cargo's per-test scratch space.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("labeler-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Labels from tool reports alone, as `--sysfs-root none --kubelet-config none` would give.
pub fn labels_of_reports(tools: Vec<ToolReport>) -> BTreeMap<String, String> {
    let inputs = Inputs {
        tools,
        ..Inputs::default()
    };
    reconcile(&inputs)
        .topology
        .to_labels(&LabelPrefix::default())
}

/// The labels of the DGX A100 (NPS4) fixture read with the nps4-8numa sysfs
/// tree (which has no CPU topology directories: no threads-per-core).
pub const DGX_A100_NPS4_LABELS: &[(&str, &str)] = &[
    ("cpus-per-numa", "32"),
    ("machine-numa-nodes", "8"),
    ("gpus", "8"),
    ("gpus-per-numa-max", "2"),
    ("interconnect", "nvswitch"),
    ("memory-per-numa-gib", "125"),
    ("numa-cpus", "32.32.32.32.32.32.32.32"),
    ("numa-gpus", "0.2.0.2.0.2.0.2"),
    ("numa-nodes", "4"),
    ("nvlink-group-max", "8"),
];

/// A copy of the fixture tree `relative` (under tests/fixtures/) in a fresh
/// scratch directory `name`, for tests that change a tree.
pub fn scratch_copy(relative: &str, name: &str) -> PathBuf {
    let copy = scratch_dir(name);
    copy_tree(&local_fixture(relative), &copy);
    copy
}

/// Copies the directory tree `from` to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Sends the signal `name` (`TERM`, `KILL`) to `child`.
pub fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Stops `child` with SIGTERM; it must exit cleanly (code 0). Returns its output.
pub fn terminate(child: Child) -> Output {
    signal(&child, "TERM");
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// What would let a labeler started by a test find a real cluster, a pod
/// identity or a proxy: removed, so that it talks to the test's fake API
/// server only.
pub const OUTSIDE_ENV: [&str; 7] = [
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "NODE_NAME",
    "POD_NAME",
    "POD_NAMESPACE",
    "HTTPS_PROXY",
    "https_proxy",
];

/// `command` without [`OUTSIDE_ENV`].
pub fn isolated(command: &mut tokio::process::Command) -> &mut tokio::process::Command {
    for name in OUTSIDE_ENV {
        command.env_remove(name);
    }
    command
}
