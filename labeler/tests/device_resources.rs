//! Device-plugin resources besides the GPUs over a fake sysfs tree
//! (`fixtures/sysfs/hgx-rdma-sriov`: 8 GPUs 4 + 4, 8 Mellanox HCAs 4 + 4 under
//! `class/infiniband`, an Intel E810 physical function on NUMA node 1 with 4
//! SR-IOV virtual functions behind netdev `ens1f0`) and recorded
//! `nvidia-smi -L` listings (`fixtures/mig`): the labels, byte for byte.

use crate::common;

use common::{labels_with_shape, local_fixture};
use gpu_topology::LabelPrefix;
use gpu_topology_labeler::devices::{Count, DeviceConfig, DeviceRule, Selector};
use gpu_topology_labeler::parse::nvidia_smi_list;
use gpu_topology_labeler::reconcile::devices::{MigInput, MigStrategy};
use gpu_topology_labeler::reconcile::{reconcile, Inputs, Outcome};
use gpu_topology_labeler::sources::sysfs::read_sysfs;
use rstest::rstest;
use std::collections::BTreeMap;

const TREE: &str = "sysfs/hgx-rdma-sriov";

/// The tree's labels without device resources (as `two-socket-8gpu`).
const BASE: &[(&str, &str)] = &[
    ("machine-numa-nodes", "2"),
    ("cpus-per-numa", "104"),
    ("gpus", "8"),
    ("gpus-per-numa-max", "4"),
    ("memory-per-numa-gib", "1007"),
    ("numa-cpus", "104.104"),
    ("numa-gpus", "4.4"),
    ("numa-nodes", "2"),
];

fn outcome(devices: DeviceConfig, mig: MigInput) -> Outcome {
    reconcile(&Inputs {
        sysfs: Some(read_sysfs(&local_fixture(TREE)).unwrap()),
        devices,
        mig,
        ..Inputs::default()
    })
}

fn labels_of(outcome: &Outcome) -> BTreeMap<String, String> {
    outcome.topology.to_labels(&LabelPrefix::default())
}

fn with(extra: &[(&'static str, &'static str)]) -> BTreeMap<String, String> {
    let mut pairs: Vec<(&str, &str)> = BASE.to_vec();
    for (name, value) in extra {
        pairs.retain(|(n, _)| n != name);
        pairs.push((name, value));
    }
    labels_with_shape(&pairs)
}

fn listed(file: &str) -> MigInput {
    let text = std::fs::read_to_string(local_fixture(&format!("mig/{file}"))).unwrap();
    MigInput {
        strategy: MigStrategy::None,
        listed: Some(nvidia_smi_list::parse(&text).unwrap()),
    }
}

/// The defaults: the RDMA shared device plugin's 63 devices per HCA, and
/// the SR-IOV network device plugin's virtual functions of Intel NICs.
#[test]
fn the_default_resources_are_counted_per_numa_node() {
    let outcome = outcome(DeviceConfig::defaults(), MigInput::default());
    assert_eq!(
        labels_of(&outcome),
        with(&[
            ("numa-devices.rdma_rdma_shared_device_a", "252.252"),
            ("numa-devices.intel.com_intel_sriov_netdevice", "0.4"),
        ])
    );
    assert!(
        !outcome
            .warnings
            .iter()
            .any(|w| w.contains("per-NUMA counts")),
        "{:?}",
        outcome.warnings
    );
}

/// A configuration file as an operator writes it (`--devices-config`).
#[test]
fn configured_resources_select_by_pci_ids_and_names() {
    let yaml = r#"
resources:
- resource: rdma/ib
  selector: {rdmaDevices: ["mlx5_*"]}
  count: {perDevice: 1}
- resource: openshift.io/e810_vf
  selector: {vendors: ["8086"], devices: ["1592"]}
  count: virtualFunctions
- resource: example.com/ib_hca_pf
  selector: {classes: ["0207"]}
  count: {perDevice: 1}
- resource: example.com/none_here
  selector: {netdevs: ["ib*"]}
  count: {perDevice: 1}
"#;
    let config: DeviceConfig = serde_saphyr::from_str(yaml).unwrap();
    assert_eq!(config.validate(), Ok(()));
    let outcome = outcome(config, MigInput::default());
    assert_eq!(
        labels_of(&outcome),
        with(&[
            ("numa-devices.rdma_ib", "4.4"),
            ("numa-devices.openshift.io_e810_vf", "0.4"),
            ("numa-devices.example.com_ib_hca_pf", "4.4"),
            ("numa-devices.example.com_none_here", "0.0"),
        ])
    );
}

/// MIG's mixed strategy: each profile a resource on its parent GPU's NUMA
/// node; GPUs cut into MIG devices are no `nvidia.com/gpu` any more.
#[test]
fn mixed_mig_profiles_sit_on_their_parent_gpus_numa_node() {
    let mig = MigInput {
        strategy: MigStrategy::Mixed,
        ..listed("hgx-a100-mixed-nvidia-smi-L.txt")
    };
    let outcome = outcome(DeviceConfig::default(), mig);
    assert_eq!(
        labels_of(&outcome),
        with(&[
            ("gpus", "5"),
            ("gpus-per-numa-max", "3"),
            ("numa-gpus", "2.3"),
            ("numa-devices.nvidia.com_mig-1g.10gb", "7.7"),
            ("numa-devices.nvidia.com_mig-3g.40gb", "2.0"),
        ])
    );
}

/// MIG's single strategy: every slice is one `nvidia.com/gpu`.
#[test]
fn single_mig_slices_are_the_gpus() {
    let mig = MigInput {
        strategy: MigStrategy::Single,
        ..listed("hgx-h100-all-1g.10gb-nvidia-smi-L.txt")
    };
    let outcome = outcome(DeviceConfig::default(), mig);
    assert_eq!(
        labels_of(&outcome),
        with(&[
            ("gpus", "56"),
            ("gpus-per-numa-max", "28"),
            ("numa-gpus", "28.28"),
            ("nvlink-group-max", "1"),
            ("pcie-switch-group-max", "1"),
        ])
    );
}

/// Listings the strategy cannot use leave the MIG labels out, with a warning.
#[rstest]
#[case::single_with_whole_gpus(
    MigStrategy::Single,
    "hgx-a100-mixed-nvidia-smi-L.txt",
    "one profile"
)]
fn unusable_listings_warn(
    #[case] strategy: MigStrategy,
    #[case] file: &str,
    #[case] warning: &str,
) {
    let mig = MigInput {
        strategy,
        ..listed(file)
    };
    let outcome = outcome(DeviceConfig::default(), mig);
    assert_eq!(labels_of(&outcome), with(&[]));
    assert!(
        outcome.warnings.iter().any(|w| w.contains(warning)),
        "{:?}",
        outcome.warnings
    );
}

#[test]
fn a_listing_of_other_gpus_than_sysfs_is_not_used() {
    let mig = MigInput {
        strategy: MigStrategy::Mixed,
        listed: Some(
            nvidia_smi_list::parse("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-a)\n").unwrap(),
        ),
    };
    let outcome = outcome(DeviceConfig::default(), mig);
    assert_eq!(labels_of(&outcome), with(&[]));
    assert!(outcome
        .warnings
        .iter()
        .any(|w| w.contains("nvidia-smi -L lists 1 GPUs but sysfs has 8")));
}

#[test]
fn a_device_without_a_numa_node_leaves_its_resource_out() {
    let config = DeviceConfig {
        resources: vec![DeviceRule {
            resource: "example.com/bridge".to_owned(),
            // The ASPEED BMC's VGA function has numa_node 0, the host bridge too;
            // select by class the one function whose NUMA node the test unsets.
            selector: Selector {
                classes: vec!["0600".to_owned()],
                ..Selector::default()
            },
            count: Count::PerDevice(1),
        }],
    };
    let mut view = read_sysfs(&local_fixture(TREE)).unwrap();
    for function in &mut view.pci_functions {
        if function.class >> 8 == 0x0600 {
            function.numa = None;
        }
    }
    let outcome = reconcile(&Inputs {
        sysfs: Some(view),
        devices: config,
        ..Inputs::default()
    });
    assert!(!labels_of(&outcome)
        .keys()
        .any(|k| k.contains("example.com_bridge")));
    assert!(outcome
        .warnings
        .iter()
        .any(|w| w.contains("example.com/bridge") && w.contains("no NUMA node")));
}
