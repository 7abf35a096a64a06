//! Fake sysfs trees (tests/fixtures/sysfs/<name>/) through the real reader and
//! reconciliation, alone and together with recorded tool output.

use crate::common;

use common::{labels_with_shape, local_fixture, topology_fixture, ROCM_SMI_FIXTURE};
use gpu_topology::LabelPrefix;
use gpu_topology_labeler::model::{ToolReport, Vendor};
use gpu_topology_labeler::parse::{nvidia_smi, rocm_smi};
use gpu_topology_labeler::reconcile::{reconcile, Inputs, Outcome, VendorChoice};
use gpu_topology_labeler::sources::kubelet::read_kubelet;
use gpu_topology_labeler::sources::sysfs::read_sysfs;
use rstest::rstest;
use std::collections::BTreeMap;
use std::path::Path;

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
        ..Inputs::default()
    })
}

fn labels_of(outcome: &Outcome) -> BTreeMap<String, String> {
    outcome.topology.to_labels(&LabelPrefix::default())
}

/// The labels of `outcome` leave out every one of `keys`, and a warning
/// contains `warning`.
fn assert_left_out(outcome: &Outcome, keys: &[&str], warning: &str) {
    let labels = labels_of(outcome);
    for key in keys {
        assert!(
            !labels.contains_key(&format!("gpu-topology.io/{key}")),
            "{key}: {labels:?}"
        );
    }
    assert!(
        outcome.warnings.iter().any(|w| w.contains(warning)),
        "{:?}",
        outcome.warnings
    );
}

// These trees have no CPU topology directories (no threads-per-core) and
// no hugepages; without a kubelet config no memory or reserved-CPU fact.
#[rstest]
#[case::two_socket_eight_gpus("two-socket-8gpu", AUTO,
    &[("machine-numa-nodes", "2"), ("cpus-per-numa", "104"), ("gpus", "8"), ("gpus-per-numa-max", "4"), ("memory-per-numa-gib", "1007"), ("numa-cpus", "104.104"), ("numa-gpus", "4.4"), ("numa-nodes", "2")])]
#[case::nps4_eight_numa_nodes("nps4-8numa", AUTO,
    &[("machine-numa-nodes", "8"), ("cpus-per-numa", "32"), ("gpus", "8"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "125"), ("numa-cpus", "32.32.32.32.32.32.32.32"), ("numa-gpus", "0.2.0.2.0.2.0.2"), ("numa-nodes", "4")])]
// Placement unknown: no per-NUMA GPU count, never a guess.
#[case::numa_node_minus_one_on_two_nodes("numa-unknown-two-nodes", AUTO, &[("machine-numa-nodes", "2"), ("gpus", "4"), ("numa-cpus", "40.40")])]
// Two GPUs with numa_node -1 on the only NUMA node: they are on it.
#[case::numa_node_minus_one_on_a_single_node("numa-unknown-single-node", AUTO,
    &[("machine-numa-nodes", "1"), ("cpus-per-numa", "12"), ("gpus", "2"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "31"), ("numa-cpus", "12"), ("numa-gpus", "2"), ("numa-nodes", "1")])]
#[case::no_gpus("no-gpus", AUTO, &[("machine-numa-nodes", "1"), ("gpus", "0"), ("numa-cpus", "32"), ("numa-gpus", "0")])]
#[case::mixed_vendors_need_a_choice("mixed-vendors", AUTO, &[("machine-numa-nodes", "2"), ("numa-cpus", "192.192")])]
#[case::mixed_vendors_nvidia_chosen("mixed-vendors", NVIDIA,
    &[("machine-numa-nodes", "2"), ("cpus-per-numa", "192"), ("gpus", "4"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "503"), ("numa-cpus", "192.192"), ("numa-gpus", "2.2"), ("numa-nodes", "2")])]
// MI300X functions are processing accelerators (class 0x1200), not display
// controllers; the SR-IOV virtual function, the AMD CPU's own accelerator
// function (vendor 0x1022) and the BMC's VGA are not GPUs.
#[case::amd_mi300x_accelerators_without_virtual_functions("amd-8x-mi300x-sriov", AUTO,
    &[("machine-numa-nodes", "2"), ("cpus-per-numa", "192"), ("gpus", "8"), ("gpus-per-numa-max", "4"), ("memory-per-numa-gib", "1511"), ("numa-cpus", "192.192"), ("numa-gpus", "4.4"), ("numa-nodes", "2")])]
#[case::amd_one_gpu_per_numa_node("amd-4x-mi210", AUTO,
    &[("machine-numa-nodes", "4"), ("cpus-per-numa", "32"), ("gpus", "4"), ("gpus-per-numa-max", "1"), ("memory-per-numa-gib", "62"), ("numa-cpus", "32.32.32.32"), ("numa-gpus", "1.1.1.1"), ("numa-nodes", "4")])]
// A hybrid CPU (two SMT cores, four single-thread ones): threads-per-core
// left out, since no one number describes its cores.
#[case::hybrid_cpu("hybrid-cpu", AUTO,
    &[("machine-numa-nodes", "1"), ("cpus-per-numa", "8"), ("gpus", "1"), ("gpus-per-numa-max", "1"), ("memory-per-numa-gib", "62"), ("numa-cpus", "8"), ("numa-gpus", "1"), ("numa-nodes", "1"), ("numa-sockets", "0"), ("nvlink-group-max", "1"), ("pcie-switch-group-max", "1")])]
// SMT on every core; a GPU-less node and a memory-only node (no CPU, no
// hugepages directory) are listed with their zeros (the memory-only node's
// socket too: it has none, and nothing reads it).
#[case::smt_with_gpu_less_and_memory_only_nodes("smt-gpu-less-and-memory-only-nodes", AUTO,
    &[("machine-numa-nodes", "3"), ("cpus-per-numa", "8"), ("gpus", "2"), ("gpus-per-numa-max", "2"), ("memory-per-numa-gib", "32"), ("numa-cpus", "8.8.0"), ("numa-gpus", "2.0.0"), ("numa-nodes", "1"), ("numa-sockets", "0.1.0"), ("threads-per-core", "2")])]
fn sysfs_alone(
    #[case] tree: &str,
    #[case] vendor: VendorChoice,
    #[case] expected: &[(&str, &str)],
) {
    let outcome = outcome(tree, vec![], vendor);
    assert_eq!(labels_of(&outcome), labels_with_shape(expected));
}

/// The kubelet config's facts on the SMT tree (node 0: CPUs 0-3,8-11 on
/// socket 0, 32 GiB, 512 2 MiB and 4 1 GiB hugepages; node 1: CPUs
/// 4-7,12-15 on socket 1, 32 GiB, no hugepages; node 2: 16 GiB, no CPU;
/// core i holds CPUs i and i+8): byte for byte, as labels.
#[rstest]
// reservedSystemCPUs 0,8 (node 0, one core); static Memory Manager reserving on node 0
// 1 GiB of memory, 200 MiB of 2 MiB pages and 1 GiB of 1 GiB pages, on node 1
// 512 MiB: node 0 keeps 32768 - 1024 - 4096 - 1024 = 26624 MiB, 412 and 3 pages.
#[case::static_managers_with_reservations("static-managers.yaml", None, &[
    ("cpu-manager-align-by-socket", "false"),
    ("cpu-manager-distribute-cpus-across-numa", "false"),
    ("cpu-manager-full-pcpus-only", "true"),
    ("cpu-manager-policy", "static"),
    ("memory-manager-policy", "static"),
    ("numa-hugepages-1gi", "3.0.0"),
    ("numa-hugepages-2mi", "412.0.0"),
    // 32256 MiB net of the reservations, published in whole GiB.
    ("numa-memory-mib", "26624.31744.16384"),
    ("numa-reserved-cores", "1.0.0"),
    ("numa-reserved-cpus", "2.0.0"),
    ("topology-manager-max-allowable-numa-nodes", "8"),
    ("topology-manager-policy", "single-numa-node"),
    ("topology-manager-prefer-closest-numa-nodes", "true"),
    ("topology-manager-scope", "pod"),
])]
// ceil(1500m + 1) = 3 CPUs taken by topology: core 0 (CPUs 0, 8), then CPU 1,
// all on node 0, on 2 cores. The Memory Manager is not static: nothing reserved, only
// the hugepages are taken out of the memory.
#[case::counted_cpu_reservation("counted-reservation.yaml", None, &[
    ("cpu-manager-align-by-socket", "false"),
    ("cpu-manager-distribute-cpus-across-numa", "false"),
    ("cpu-manager-full-pcpus-only", "false"),
    ("cpu-manager-policy", "static"),
    ("memory-manager-policy", "none"),
    ("numa-hugepages-1gi", "4.0.0"),
    ("numa-hugepages-2mi", "512.0.0"),
    ("numa-memory-mib", "27648.32768.16384"),
    ("numa-reserved-cores", "2.0.0"),
    ("numa-reserved-cpus", "3.0.0"),
    ("topology-manager-max-allowable-numa-nodes", "8"),
    ("topology-manager-policy", "restricted"),
    ("topology-manager-prefer-closest-numa-nodes", "false"),
    ("topology-manager-scope", "container"),
])]
// The drop-ins (one in a subdirectory, read in WalkDir order) turn on
// distribute-cpus-across-numa with full-pcpus-only and replace only the cpu
// of kubeReserved: ceil(9 + 1) = 10 CPUs in whole cores over both nodes,
// 4 + 4, the remaining core on node 0 (packing would give 8.2.0): 3 and 2
// whole cores.
#[case::drop_ins_distribute_a_larger_reservation("counted-reservation.yaml", Some("counted-reservation.d"), &[
    ("cpu-manager-align-by-socket", "false"),
    ("cpu-manager-distribute-cpus-across-numa", "true"),
    ("cpu-manager-full-pcpus-only", "true"),
    ("cpu-manager-policy", "static"),
    ("memory-manager-policy", "none"),
    ("numa-hugepages-1gi", "4.0.0"),
    ("numa-hugepages-2mi", "512.0.0"),
    ("numa-memory-mib", "27648.32768.16384"),
    ("numa-reserved-cores", "3.2.0"),
    ("numa-reserved-cpus", "6.4.0"),
    ("topology-manager-max-allowable-numa-nodes", "8"),
    ("topology-manager-policy", "restricted"),
    ("topology-manager-prefer-closest-numa-nodes", "false"),
    ("topology-manager-scope", "container"),
])]
#[tokio::test]
async fn kubelet_facts_on_the_smt_tree(
    #[case] config: &str,
    #[case] drop_ins: Option<&str>,
    #[case] kubelet_labels: &[(&str, &str)],
) {
    let sysfs = read_sysfs(&local_fixture("sysfs/smt-gpu-less-and-memory-only-nodes")).unwrap();
    let kubelet = read_kubelet(
        &local_fixture(&format!("kubelet/{config}")),
        drop_ins
            .map(|dir| local_fixture(&format!("kubelet/{dir}")))
            .as_deref(),
    )
    .await
    .unwrap();
    let outcome = reconcile(&Inputs {
        sysfs: Some(sysfs),
        tools: vec![],
        kubelet: Some(kubelet),
        vendor: AUTO,
        ..Inputs::default()
    });
    let mut expected: Vec<(&str, &str)> = vec![
        ("machine-numa-nodes", "3"),
        ("cpus-per-numa", "8"),
        ("gpus", "2"),
        ("gpus-per-numa-max", "2"),
        ("memory-per-numa-gib", "32"),
        ("numa-cpus", "8.8.0"),
        ("numa-gpus", "2.0.0"),
        ("numa-nodes", "1"),
        ("numa-sockets", "0.1.0"),
        ("threads-per-core", "2"),
    ];
    expected.extend_from_slice(kubelet_labels);
    assert_eq!(labels_of(&outcome), labels_with_shape(&expected));
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
    assert_eq!(
        labels_of(&outcome),
        labels_with_shape(common::DGX_A100_NPS4_LABELS)
    );
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
    assert_left_out(
        &outcome,
        &["gpus", "gpus-per-numa-max", "numa-gpus", "numa-nodes"],
        warning,
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
                cpus: (id * 144..(id + 1) * 144).collect(),
                memory_kib: 1 << 30,
                hugepages: BTreeMap::new(),
                distances: None,
            };
            (id, node)
        })
        .collect();
    let outcome = reconcile(&Inputs {
        sysfs: Some(SysfsView {
            gpus,
            numa_nodes,
            ..SysfsView::default()
        }),
        tools: vec![],
        kubelet: None,
        vendor: AUTO,
        ..Inputs::default()
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

const SMT_TREE: &str = "sysfs/smt-gpu-less-and-memory-only-nodes";

fn write(tree: &Path, relative: &str, text: &str) {
    std::fs::write(tree.join(relative), text).unwrap();
}

/// The SMT tree changed one way: the labels that still stand, those left
/// out, and the warning that says why.
#[rstest]
#[case::a_node_being_removed(
    |tree: &Path| write(tree, "devices/system/node/online", "0-1\n"),
    &[("threads-per-core", "2")], &["numa-cpus", "numa-gpus"], "lists {0, 1} online"
)]
// CPU 15 offline: node 1 has 7 CPUs, and CPU 7's core one thread.
#[case::an_offline_cpu(
    |tree: &Path| {
        write(tree, "devices/system/cpu/online", "0-14\n");
        write(tree, "devices/system/cpu/cpu7/topology/thread_siblings_list", "7\n");
    },
    &[("numa-cpus", "8.7.0"), ("numa-gpus", "2.0.0")], &["threads-per-core"], "same number of threads"
)]
#[case::no_cpu_topology(
    |tree: &Path| {
        for cpu in 0..16 {
            std::fs::remove_dir_all(tree.join(format!("devices/system/cpu/cpu{cpu}"))).unwrap();
        }
    },
    &[("numa-cpus", "8.8.0"), ("numa-gpus", "2.0.0")], &["threads-per-core"], "no topology/ directories"
)]
// CPU 8 moved to package 1: node 0's CPUs span two sockets, which the
// model does not follow (and core 0 now has one thread).
#[case::a_numa_node_spanning_sockets(
    |tree: &Path| write(tree, "devices/system/cpu/cpu8/topology/physical_package_id", "1\n"),
    &[("numa-cpus", "8.8.0"), ("numa-gpus", "2.0.0")], &["numa-sockets", "threads-per-core"], "sit on several sockets [0, 1]"
)]
#[case::no_online_cpu_list(
    |tree: &Path| std::fs::remove_file(tree.join("devices/system/cpu/online")).unwrap(),
    &[("numa-gpus", "2.0.0")], &["numa-cpus", "threads-per-core"], "no devices/system/cpu/online"
)]
fn changed_trees_leave_out_what_they_no_longer_establish(
    #[case] change: fn(&Path),
    #[case] standing: &[(&str, &str)],
    #[case] left_out: &[&str],
    #[case] warning: &str,
) {
    assert_changed_tree(
        SMT_TREE,
        "sysfs-changed",
        change,
        standing,
        left_out,
        warning,
    );
}

/// A copy of `tree` changed by `change` keeps the `standing` labels and
/// leaves out `left_out`, with a warning containing `warning`.
fn assert_changed_tree(
    tree: &str,
    scratch: &str,
    change: fn(&Path),
    standing: &[(&str, &str)],
    left_out: &[&str],
    warning: &str,
) {
    // One scratch tree per case: cases run in parallel, and two may leave out
    // the same labels.
    let case: String = warning
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let tree = common::scratch_copy(tree, &format!("{scratch}-{case}"));
    change(&tree);
    let outcome = reconcile(&Inputs {
        sysfs: Some(read_sysfs(&tree).unwrap()),
        ..Inputs::default()
    });
    let labels = labels_of(&outcome);
    for (key, value) in standing {
        assert_eq!(
            labels
                .get(&format!("gpu-topology.io/{key}"))
                .map(String::as_str),
            Some(*value),
            "{labels:?} {:?}",
            outcome.warnings
        );
    }
    assert_left_out(&outcome, left_out, warning);
}

/// A tree with the topology of some online CPUs only is half-read: an error.
#[test]
fn a_half_present_cpu_topology_is_an_error_naming_it() {
    let tree = common::scratch_copy(SMT_TREE, "sysfs-half-topology");
    std::fs::remove_dir_all(tree.join("devices/system/cpu/cpu3/topology")).unwrap();
    let error = read_sysfs(&tree).unwrap_err();
    assert!(
        error.message.contains("15 of the 16 online CPUs"),
        "{error}"
    );
    let tree = common::scratch_copy(SMT_TREE, "sysfs-bad-hugepages");
    write(
        &tree,
        "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages",
        "many\n",
    );
    let error = read_sysfs(&tree).unwrap_err();
    assert!(error.origin.ends_with("nr_hugepages"), "{error}");
}

/// Kubelet configs the kubelet would refuse to start with, or whose
/// reservation the labeler does not reproduce, on the SMT tree: the facts
/// they decide are left out with the reason; the others stand.
#[rstest]
#[case::reserved_cpu_not_online(
    "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,99\"\n",
    &["numa-reserved-cpus"], "[99]"
)]
#[case::static_cpu_manager_without_reservation(
    "cpuManagerPolicy: static\n",
    &["numa-reserved-cpus"], "does not start without reserved CPUs"
)]
#[case::a_reservation_larger_than_the_machine(
    "cpuManagerPolicy: static\nkubeReserved:\n  cpu: \"17\"\n",
    &["numa-reserved-cpus"], "cannot reserve 17 CPUs"
)]
#[case::spread_over_cores_is_not_reproduced(
    "cpuManagerPolicy: static\nkubeReserved:\n  cpu: \"2\"\ncpuManagerPolicyOptions:\n  distribute-cpus-across-cores: \"true\"\n",
    &["numa-reserved-cpus"], "does not reproduce"
)]
#[case::an_option_not_modelled(
    "cpuManagerPolicy: static\nkubeReserved:\n  cpu: \"2\"\ncpuManagerPolicyOptions:\n  some-new-option: \"true\"\n",
    &["cpu-manager-full-pcpus-only", "cpu-manager-distribute-cpus-across-numa", "cpu-manager-align-by-socket", "numa-reserved-cpus"],
    "some-new-option"
)]
#[case::static_memory_manager_without_reservation(
    "memoryManagerPolicy: Static\n",
    &["numa-memory-mib", "numa-hugepages-2mi", "numa-hugepages-1gi"], "does not start without reservedMemory"
)]
#[case::reservation_on_a_node_the_machine_lacks(
    "memoryManagerPolicy: Static\nreservedMemory:\n  - numaNode: 5\n    limits:\n      memory: 1Gi\n",
    &["numa-memory-mib", "numa-hugepages-2mi", "numa-hugepages-1gi"], "NUMA node 5"
)]
#[case::reserving_more_hugepages_than_there_are(
    "memoryManagerPolicy: Static\nreservedMemory:\n  - numaNode: 0\n    limits:\n      memory: 1Gi\n      hugepages-1Gi: 5Gi\n",
    &["numa-memory-mib", "numa-hugepages-2mi", "numa-hugepages-1gi"], "fewer hugepages-1Gi"
)]
#[tokio::test]
async fn refused_or_unmodelled_kubelet_settings_leave_their_facts_out(
    #[case] config: &str,
    #[case] left_out: &[&str],
    #[case] warning: &str,
) {
    let dir = common::scratch_dir(&format!(
        "kubelet-refused-{}",
        warning.replace(['/', ' ', '[', ']'], "-")
    ));
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        format!("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{config}"),
    )
    .unwrap();
    let outcome = reconcile(&Inputs {
        sysfs: Some(read_sysfs(&local_fixture(SMT_TREE)).unwrap()),
        kubelet: Some(read_kubelet(&path, None).await.unwrap()),
        ..Inputs::default()
    });
    let labels = labels_of(&outcome);
    for key in left_out {
        assert!(
            !labels.contains_key(&format!("gpu-topology.io/{key}")),
            "{key}: {labels:?}"
        );
    }
    // The facts that do not depend on the refused setting stand.
    for key in [
        "numa-gpus",
        "numa-cpus",
        "threads-per-core",
        "cpu-manager-policy",
        "shape",
    ] {
        assert!(
            labels.contains_key(&format!("gpu-topology.io/{key}")),
            "{key}: {labels:?}"
        );
    }
    assert!(
        outcome.warnings.iter().any(|w| w.contains(warning)),
        "{:?}",
        outcome.warnings
    );
}

/// A PCI function listed in `bus/pci/devices` whose device has gone by the
/// time it is read (a dangling link: the GPU fell off the bus after the
/// listing) is not counted, and the read does not fail: every other GPU is
/// read whole.
#[test]
fn a_device_gone_while_the_tree_is_read_is_not_counted() {
    let tree = common::scratch_copy("sysfs/two-socket-8gpu", "sysfs-device-gone");
    let before = read_sysfs(&tree).unwrap();
    std::os::unix::fs::symlink(
        "../../../devices/pci0000:ff/0000:ff:00.0",
        tree.join("bus/pci/devices/0000:ff:00.0"),
    )
    .unwrap();
    let after = read_sysfs(&tree).unwrap();
    assert_eq!(after.gpus, before.gpus);
    assert_eq!(after.gpus.len(), 8);
}

/// Trees whose FULL label map is pinned byte for byte in
/// `fixtures/sysfs/<tree>.labels` (`key=value`, one a line, sorted).
#[rstest]
// 8 MI300X in CPX compute and NPS4 memory partition mode on a host with 4
// NUMA nodes (2 per socket): 8 logical GPUs each, 2 GPUs (16 partitions)
// per NUMA node, as the AMD device plugin exposes them as amd.com/gpu.
#[case::mi300x_cpx_nps4("mi300x-cpx-nps4")]
fn trees_labeled_byte_for_byte(#[case] tree: &str) {
    let outcome = outcome(tree, vec![], AUTO);
    let labels = labels_of(&outcome);
    let written: String = labels.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let expected = std::fs::read_to_string(local_fixture(&format!("sysfs/{tree}.labels"))).unwrap();
    assert_eq!(written, expected, "warnings: {:?}", outcome.warnings);
    for (key, value) in &labels {
        assert!(gpu_topology::is_label_value(value), "{key}={value}");
    }
    // The pinned shape is the contract's digest of the other labels.
    let facts: Vec<(&str, &str)> = labels
        .iter()
        .filter(|(key, _)| *key != "gpu-topology.io/shape")
        .map(|(key, value)| (key.trim_start_matches("gpu-topology.io/"), value.as_str()))
        .collect();
    assert_eq!(labels, labels_with_shape(&facts));
}

const MI300X_TREE: &str = "sysfs/mi300x-cpx-nps4";

/// KFD topology nodes 5..=11 are GPU 0's partitions beyond its first
/// (render nodes 129..=135); node 4 is its first (renderD128).
fn drop_gpu0_partitions_from_kfd(tree: &Path) {
    for node in 5..=11 {
        std::fs::remove_dir_all(tree.join(format!("class/kfd/kfd/topology/nodes/{node}"))).unwrap();
    }
}

/// The MI300X tree changed one way: what is counted, what stands, what is
/// left out and the warning that says why.
#[rstest]
// GPU 0 back in SPX: KFD lists its one render node; its 7 amdgpu_xcp
// platform devices stay (amdgpu keeps them) but are no partitions.
#[case::one_gpu_in_spx(
    |tree: &Path| {
        write(tree, "bus/pci/devices/0000:05:00.0/current_compute_partition", "SPX\n");
        drop_gpu0_partitions_from_kfd(tree);
    },
    &[("gpus", "57"), ("numa-gpus", "9.16.16.16"), ("amd-memory-partition", "nps4")],
    &["amd-compute-partition"], "modes differ (CPX, SPX)"
)]
// Without KFD's topology the device plugin counts no partition.
#[case::no_kfd_topology(
    |tree: &Path| std::fs::remove_dir_all(tree.join("class/kfd")).unwrap(),
    &[("gpus", "8"), ("numa-gpus", "2.2.2.2"), ("amd-compute-partition", "cpx")],
    &[], "no KFD topology"
)]
// The device plugin skips the partitions of a GPU whose NUMA node is
// unknown; the placement of all is then unknown too (4 NUMA nodes).
#[case::a_gpu_without_numa_node(
    |tree: &Path| write(tree, "bus/pci/devices/0000:05:00.0/numa_node", "-1\n"),
    &[("gpus", "57"), ("amd-compute-partition", "cpx")],
    &["numa-gpus", "gpus-per-numa-max"], "amdgpu_xcp_0 (its GPU 0000:05:00.0 has no NUMA node)"
)]
#[case::a_mode_the_contract_does_not_know(
    |tree: &Path| {
        for gpu in ["05", "26", "46", "65", "85", "a6", "c6", "e5"] {
            write(tree, &format!("bus/pci/devices/0000:{gpu}:00.0/current_memory_partition"), "NPS3\n");
        }
    },
    &[("gpus", "64"), ("amd-compute-partition", "cpx")],
    &["amd-memory-partition"], "mode \"NPS3\" is not one it knows"
)]
fn changed_mi300x_trees_count_what_the_device_plugin_exposes(
    #[case] change: fn(&Path),
    #[case] standing: &[(&str, &str)],
    #[case] left_out: &[&str],
    #[case] warning: &str,
) {
    assert_changed_tree(
        MI300X_TREE,
        "mi300x-changed",
        change,
        standing,
        left_out,
        warning,
    );
}

/// Malformed partition files are errors naming the file, as every sysfs file is.
#[rstest]
#[case::kfd_properties("class/kfd/kfd/topology/nodes/4/properties", "drm_render_minor many\n")]
#[case::partition_card("devices/platform/amdgpu_xcp_0/drm/card2/dev", "226\n")]
#[case::gpu_card("bus/pci/devices/0000:05:00.0/drm/card1/dev", "226:x\n")]
fn malformed_partition_files_are_errors_naming_the_file(#[case] file: &str, #[case] text: &str) {
    let case: String = file.chars().filter(char::is_ascii_alphanumeric).collect();
    let tree = common::scratch_copy(MI300X_TREE, &format!("mi300x-malformed-{case}"));
    write(&tree, file, text);
    let error = read_sysfs(&tree).unwrap_err();
    assert!(error.origin.ends_with(file), "{error}");
}
