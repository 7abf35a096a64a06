//! Fake sysfs trees (tests/fixtures/sysfs/<name>/) through the real reader and
//! reconciliation, alone and together with recorded tool output.

mod common;

use common::{labels, local_fixture, topology_fixture, ROCM_SMI_FIXTURE};
use gpu_topology::LabelPrefix;
use gpu_topology_labeler::model::{ToolReport, Vendor};
use gpu_topology_labeler::parse::{nvidia_smi, rocm_smi};
use gpu_topology_labeler::reconcile::{reconcile, Inputs, Outcome, VendorChoice};
use gpu_topology_labeler::sources::sysfs::read_sysfs;
use rstest::rstest;
use std::collections::BTreeMap;

const AUTO: VendorChoice = VendorChoice::Auto;
const NVIDIA: VendorChoice = VendorChoice::Only(Vendor::Nvidia);

fn nvidia_smi_report(file: &str) -> ToolReport {
    nvidia_smi::parse(&topology_fixture(file))
        .unwrap()
        .into_report(false)
}

fn outcome(tree: &str, tools: Vec<ToolReport>, vendor: VendorChoice) -> Outcome {
    let sysfs = read_sysfs(&local_fixture(&format!("sysfs/{tree}"))).unwrap();
    reconcile(&Inputs {
        sysfs: Some(sysfs),
        tools,
        kubelet: None,
        vendor,
    })
}

fn labels_of(outcome: &Outcome) -> BTreeMap<String, String> {
    outcome.topology.to_labels(&LabelPrefix::default())
}

#[rstest]
#[case::two_socket_eight_gpus("two-socket-8gpu", AUTO,
    &[("cpus-per-numa", "104"), ("gpus", "8"), ("gpus-per-numa-max", "4"), ("memory-per-numa-gib", "1007"), ("numa-nodes", "2")])]
#[case::nps4_eight_numa_nodes("nps4-8numa", AUTO,
    &[("cpus-per-numa", "32"), ("gpus", "8"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "125"), ("numa-nodes", "4")])]
#[case::numa_node_minus_one_on_two_nodes("numa-unknown-two-nodes", AUTO, &[("gpus", "4")])]
// Two GPUs with numa_node -1 on the only NUMA node: they are on it.
#[case::numa_node_minus_one_on_a_single_node("numa-unknown-single-node", AUTO,
    &[("cpus-per-numa", "12"), ("gpus", "2"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "31"), ("numa-nodes", "1")])]
#[case::no_gpus("no-gpus", AUTO, &[("gpus", "0")])]
#[case::mixed_vendors_need_a_choice("mixed-vendors", AUTO, &[])]
#[case::mixed_vendors_nvidia_chosen("mixed-vendors", NVIDIA,
    &[("cpus-per-numa", "192"), ("gpus", "4"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "503"), ("numa-nodes", "2")])]
// MI300X functions are processing accelerators (class 0x1200), not display
// controllers; the SR-IOV virtual function, the AMD CPU's own accelerator
// function (vendor 0x1022) and the BMC's VGA are not GPUs.
#[case::amd_mi300x_accelerators_without_virtual_functions("amd-8x-mi300x-sriov", AUTO,
    &[("cpus-per-numa", "192"), ("gpus", "8"), ("gpus-per-numa-max", "4"), ("memory-per-numa-gib", "1511"), ("numa-nodes", "2")])]
#[case::amd_one_gpu_per_numa_node("amd-4x-mi210", AUTO,
    &[("cpus-per-numa", "32"), ("gpus", "4"), ("gpus-per-numa-max", "1"), ("memory-per-numa-gib", "62"), ("numa-nodes", "4")])]
fn sysfs_alone(
    #[case] tree: &str,
    #[case] vendor: VendorChoice,
    #[case] expected: &[(&str, &str)],
) {
    let outcome = outcome(tree, vec![], vendor);
    assert_eq!(labels_of(&outcome), labels(expected));
}

#[test]
fn sysfs_reader_sees_only_display_devices_of_gpu_vendors() {
    let view = read_sysfs(&local_fixture("sysfs/two-socket-8gpu")).unwrap();
    // NVSwitch bridges, NICs, the BMC's VGA and the Intel host bridge are not GPUs.
    assert_eq!(view.gpus.len(), 8);
    assert!(view
        .gpus
        .iter()
        .all(|g| g.vendor == Vendor::Nvidia && g.class == 0x030200));
    assert_eq!(view.gpus[0].address, "0000:18:00.0");
    assert_eq!(view.numa_nodes.len(), 2);
}

#[rstest]
#[case::unknown_numa_names_the_reason("numa-unknown-two-nodes", AUTO, "numa_node is -1")]
#[case::mixed_vendors_name_them("mixed-vendors", AUTO, "nvidia, intel")]
fn left_out_labels_come_with_a_warning(
    #[case] tree: &str,
    #[case] vendor: VendorChoice,
    #[case] expected: &str,
) {
    let warnings = outcome(tree, vec![], vendor).warnings.join("\n");
    assert!(warnings.contains(expected), "{warnings}");
}

#[test]
fn dgx_a100_sysfs_and_nvidia_smi_together_give_every_label() {
    let outcome = outcome(
        "nps4-8numa",
        vec![nvidia_smi_report("dgx-a100-mlx5-nps4.txt")],
        AUTO,
    );
    assert_eq!(labels_of(&outcome), labels(common::DGX_A100_NPS4_LABELS));
}

#[test]
fn amd_sysfs_and_rocm_smi_together() {
    let report = rocm_smi::parse(&topology_fixture(ROCM_SMI_FIXTURE)).unwrap();
    let outcome = outcome("amd-4x-mi210", vec![report], AUTO);
    assert_eq!(labels_of(&outcome)["gpu-topology.io/interconnect"], "xgmi");
    assert_eq!(labels_of(&outcome)["gpu-topology.io/nvlink-group-max"], "4");
}

#[test]
fn sysfs_and_nvidia_smi_disagreeing_on_numa_leave_numa_labels_out() {
    // sysfs: 4+4 GPUs on nodes 0/1; this nvidia-smi output: 2 GPUs on each of nodes 1,3,5,7.
    let outcome = outcome(
        "two-socket-8gpu",
        vec![nvidia_smi_report("dgx-a100-mlx5-nps4.txt")],
        AUTO,
    );
    let labels = labels_of(&outcome);
    assert!(!labels.contains_key("gpu-topology.io/gpus-per-numa-max"));
    assert!(!labels.contains_key("gpu-topology.io/numa-nodes"));
    assert_eq!(labels["gpu-topology.io/nvlink-group-max"], "8");
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("sysfs places GPUs")),
        "{:?}",
        outcome.warnings
    );
}

#[test]
fn a_tool_seeing_fewer_gpus_than_sysfs_is_ignored() {
    // A container that sees 4 of the 8 GPUs would otherwise shrink the NVLink group.
    let outcome = outcome(
        "two-socket-8gpu",
        vec![nvidia_smi_report("4x-a100-pcie-nvlink-bridge-pairs.txt")],
        AUTO,
    );
    let labels = labels_of(&outcome);
    assert_eq!(labels["gpu-topology.io/gpus"], "8");
    assert!(!labels.contains_key("gpu-topology.io/nvlink-group-max"));
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("lists 4 GPUs but sysfs shows 8")),
        "{:?}",
        outcome.warnings
    );
}

/// A tool cannot list GPUs that do not exist: when it lists more than sysfs
/// shows, sysfs misses some, and no GPU count is published (never a zero).
#[rstest]
#[case::sysfs_shows_none("no-gpus", AUTO, "sysfs shows no GPU but nvidia-smi lists 8")]
#[case::sysfs_shows_none_of_the_chosen_vendor(
    "no-gpus",
    NVIDIA,
    "nvidia-smi lists 8 GPUs but sysfs shows 0"
)]
#[case::sysfs_shows_fewer("mixed-vendors", NVIDIA, "nvidia-smi lists 8 GPUs but sysfs shows 4")]
fn a_tool_seeing_more_gpus_than_sysfs_leaves_gpu_labels_out(
    #[case] tree: &str,
    #[case] vendor: VendorChoice,
    #[case] warning: &str,
) {
    let outcome = outcome(
        tree,
        vec![nvidia_smi_report("h100-sxm-8gpu-2numa.txt")],
        vendor,
    );
    assert_eq!(labels_of(&outcome), labels(&[]));
    assert!(
        outcome.warnings.iter().any(|w| w.contains(warning)),
        "{:?}",
        outcome.warnings
    );
}

#[test]
fn single_numa_sysfs_completes_a_numa_column_of_na() {
    // SOURCES.md #7: nvidia-smi prints N/A; sysfs with one NUMA node settles it.
    let outcome = outcome(
        "numa-unknown-single-node",
        vec![nvidia_smi_report("2x-gtx1080ti-phb-numa-na.txt")],
        AUTO,
    );
    let labels = labels_of(&outcome);
    assert_eq!(labels["gpu-topology.io/gpus-per-numa-max"], "2");
    assert_eq!(labels["gpu-topology.io/interconnect"], "pcie");
}

#[rstest]
#[case::missing_root("does-not-exist")]
fn unreadable_trees_are_errors_naming_the_path(#[case] tree: &str) {
    let error = read_sysfs(&local_fixture(&format!("sysfs/{tree}"))).unwrap_err();
    assert!(error.origin.contains(tree), "{error}");
}

#[test]
fn malformed_sysfs_files_are_errors_naming_the_file() {
    let root = common::scratch_dir("malformed-sysfs");
    let device = root.join("bus/pci/devices/0000:07:00.0");
    std::fs::create_dir_all(&device).unwrap();
    std::fs::write(device.join("vendor"), "0x10de\n").unwrap();
    std::fs::write(device.join("class"), "0x030200\n").unwrap();
    std::fs::write(device.join("numa_node"), "zero\n").unwrap();
    let error = read_sysfs(&root).unwrap_err();
    assert!(error.origin.ends_with("numa_node"), "{error}");
    std::fs::write(device.join("numa_node"), "0\n").unwrap();
    let node = root.join("devices/system/node/node0");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(node.join("cpulist"), "0-7\n").unwrap();
    std::fs::write(node.join("meminfo"), "Node 0 MemTotal: lots\n").unwrap();
    let error = read_sysfs(&root).unwrap_err();
    assert!(error.origin.ends_with("meminfo"), "{error}");
}

/// More GPUs than the link grouping handles (64): the count and NUMA labels
/// stand, the link labels are left out with a warning that says why.
#[test]
fn more_than_sixty_four_gpus_leave_link_labels_out_and_say_why() {
    use gpu_topology_labeler::model::{NumaNode, PciGpu, SysfsView};
    let gpus = (0..72)
        .map(|i| PciGpu {
            address: format!("0000:{i:02x}:00.0"),
            vendor: Vendor::Nvidia,
            class: 0x030200,
            numa: Some(i / 36),
        })
        .collect();
    let numa_nodes = (0..2)
        .map(|id| {
            let node = NumaNode {
                cpus: 144,
                memory_kib: 1 << 30,
            };
            (id, node)
        })
        .collect();
    let outcome = reconcile(&Inputs {
        sysfs: Some(SysfsView { gpus, numa_nodes }),
        tools: vec![],
        kubelet: None,
        vendor: AUTO,
    });
    let labels = labels_of(&outcome);
    assert_eq!(labels["gpu-topology.io/gpus"], "72");
    assert_eq!(labels["gpu-topology.io/gpus-per-numa-max"], "36");
    assert!(!labels.contains_key("gpu-topology.io/nvlink-group-max"));
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("72 GPUs are more than the 64")),
        "{:?}",
        outcome.warnings
    );
}
