//! What the labeler's fuzz targets check, shared with the corpus replay
//! tests (`labeler/tests/fuzz_regressions.rs` includes this file): every
//! parser answers every input, a topology or an error, and what it reads
//! goes through reconciliation to labels without a panic.

use gpu_topology::LabelPrefix;
use gpu_topology_labeler::model::ToolReport;
use gpu_topology_labeler::parse::{kubelet, nvidia_smi, rocm_smi};
use gpu_topology_labeler::reconcile::{reconcile, Inputs, VendorChoice};
use gpu_topology_labeler::sources::sysfs::read_sysfs;
use std::path::{Path, PathBuf};

/// Separates the kubelet config file from its drop-ins in one input.
pub const FILE_SEPARATOR: u8 = 0;
/// Separates the records of a generated sysfs tree.
pub const RECORD_SEPARATOR: u8 = 0xff;
/// Devices and NUMA nodes a generated sysfs tree may hold.
const TREE_SLOTS: u8 = 8;

/// The labels of a tool's report alone, as the labeler would publish them.
fn labels_of(report: ToolReport) {
    let outcome = reconcile(&Inputs {
        sysfs: None,
        tools: vec![report],
        kubelet: None,
        vendor: VendorChoice::Auto,
        ..Inputs::default()
    });
    let labels = outcome.topology.to_labels(&LabelPrefix::default());
    assert!(labels.values().all(|value| value.len() <= 63), "{labels:?}");
}

/// `nvidia-smi topo -m` output: parsed, then reconciled both ways.
pub fn check_nvidia_smi(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(topology) = nvidia_smi::parse(&text) {
        labels_of(topology.clone().into_report(true));
        labels_of(topology.into_report(false));
    }
}

/// `rocm-smi --showtopo` output: parsed, then reconciled.
pub fn check_rocm_smi(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(report) = rocm_smi::parse(&text) {
        labels_of(report);
    }
}

/// A kubelet config and its drop-ins, separated by [`FILE_SEPARATOR`]:
/// each file parsed, and the ones that parse merged over the first (the
/// main file) in order, as the kubelet merges its `--config-dir`.
pub fn check_kubelet_config(data: &[u8]) {
    let mut files = data
        .split(|byte| *byte == FILE_SEPARATOR)
        .filter_map(|file| kubelet::parse_file(&String::from_utf8_lossy(file)).ok());
    if let Some(main) = files.next() {
        let _ = kubelet::settings(&kubelet::MergedConfig::new(main, files));
    }
}

/// One file of a generated sysfs tree: where it goes, and its bytes.
/// Record byte 0 picks the attribute, byte 1 the device or NUMA node, the
/// rest is the file's content (any bytes, not only UTF-8).
fn sysfs_file(record: &[u8]) -> Option<(PathBuf, &[u8])> {
    let (&attribute, rest) = record.split_first()?;
    let (&slot, content) = rest.split_first().unwrap_or((&0, &[]));
    let slot = slot % TREE_SLOTS;
    let device = format!("bus/pci/devices/0000:{slot:02x}:00.0");
    let node = format!("devices/system/node/node{slot}");
    let path = match attribute % 7 {
        0 => format!("{device}/vendor"),
        1 => format!("{device}/class"),
        2 => format!("{device}/numa_node"),
        3 => format!("{device}/physfn"),
        4 => format!("{node}/cpulist"),
        5 => format!("{node}/meminfo"),
        // A directory entry that is not a NUMA node.
        _ => format!("devices/system/node/possible{slot}"),
    };
    Some((PathBuf::from(path), content))
}

/// Writes the tree `data` describes under `root` (emptied first).
pub fn write_sysfs_tree(root: &Path, data: &[u8]) -> std::io::Result<()> {
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    std::fs::create_dir_all(root.join("bus/pci/devices"))?;
    for (path, content) in data
        .split(|b| *b == RECORD_SEPARATOR)
        .filter_map(sysfs_file)
    {
        let path = root.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, content)?;
    }
    Ok(())
}

/// A sysfs tree generated from `data` under `root`, read, then reconciled
/// into labels.
pub fn check_sysfs_tree(root: &Path, data: &[u8]) {
    write_sysfs_tree(root, data).expect("the generated tree is written");
    if let Ok(sysfs) = read_sysfs(root) {
        let outcome = reconcile(&Inputs {
            sysfs: Some(sysfs),
            tools: Vec::new(),
            kubelet: None,
            vendor: VendorChoice::Auto,
            ..Inputs::default()
        });
        let labels = outcome.topology.to_labels(&LabelPrefix::default());
        assert!(labels.values().all(|value| value.len() <= 63), "{labels:?}");
    }
}
