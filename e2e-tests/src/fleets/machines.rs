//! The machine types fleets are made of: each a [`NodeTopology`] of facts
//! as the labeler publishes them for its hardware and kubelet settings
//! ([`topology`]), plus what the foreign labels of its nodes need (GPU
//! product and vendor, CPU vendor, instance type). Cloud instances, HGX
//! machines on premises, Grace trays read back from the labeler's own
//! labels, AMD MI300X, and variants of any (MIG, other devices, an old
//! labeler). Split from `fleets.rs` so each file stays short (issue #36).

use gpu_topology::{
    CpuManagerPolicy, Interconnect, KubeletVersion, LabelPrefix, MemoryManagerPolicy, NodeTopology,
    TopologyManagerPolicy, TopologyManagerScope,
};

/// A machine type: its facts and the foreign labels its nodes carry.
#[derive(Debug, Clone)]
pub struct Machine {
    /// `node.kubernetes.io/instance-type`; `None` on premises.
    pub instance: Option<&'static str>,
    /// `nvidia.com/gpu.product` (GPU operator's GPU feature discovery).
    pub product: &'static str,
    pub gpu_memory_mib: u32,
    /// `feature.node.kubernetes.io/cpu-model.vendor_id` (NFD).
    pub cpu_vendor: &'static str,
    /// `kubernetes.io/arch`.
    pub arch: &'static str,
    /// Whose operator labels the GPUs.
    pub gpu_vendor: GpuVendor,
    pub topology: NodeTopology,
}

/// The GPU operator whose feature discovery labels a machine's GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuVendor {
    /// NVIDIA GPU Feature Discovery: `nvidia.com/gpu.*`.
    Nvidia,
    /// AMD's node labeller: `amd.com/gpu.*`.
    Amd,
}

/// The kubelet settings of a machine, as the labeler reads them.
#[derive(Debug, Clone, Copy)]
pub struct Kubelet {
    pub policy: TopologyManagerPolicy,
    pub scope: TopologyManagerScope,
    pub cpu: CpuManagerPolicy,
    pub full_pcpus_only: bool,
    pub memory: MemoryManagerPolicy,
}

impl Kubelet {
    /// The static CPU Manager, no Memory Manager.
    pub const fn cpu_static(policy: TopologyManagerPolicy, scope: TopologyManagerScope) -> Self {
        Kubelet {
            policy,
            scope,
            cpu: CpuManagerPolicy::Static,
            full_pcpus_only: false,
            memory: MemoryManagerPolicy::None,
        }
    }

    /// The kubelet's defaults: no Topology, CPU or Memory Manager policy.
    pub const NONE: Kubelet = Kubelet {
        policy: TopologyManagerPolicy::None,
        scope: TopologyManagerScope::Container,
        cpu: CpuManagerPolicy::None,
        full_pcpus_only: false,
        memory: MemoryManagerPolicy::None,
    };
}

/// A machine's hardware, per NUMA node in id order.
#[derive(Debug, Clone)]
pub struct Hardware {
    pub numa_gpus: Vec<u32>,
    pub numa_cpus: Vec<u32>,
    pub numa_sockets: Vec<u32>,
    pub threads_per_core: u32,
    /// MiB the Memory Manager can allocate (MemTotal less hugepages, and
    /// `reservedMemory` under the static policy).
    pub numa_memory_mib: Vec<u32>,
    pub nvlink_group_max: u32,
    pub pcie_switch_group_max: u32,
    pub interconnect: Interconnect,
}

/// The facts the labeler publishes for `hardware` under `kubelet`, with
/// `reserved` CPUs on the first core(s) of NUMA node 0 (the static CPU
/// Manager's `reservedSystemCPUs`, whole cores).
pub fn topology(hardware: &Hardware, kubelet: Kubelet, reserved: u32) -> NodeTopology {
    let numas = hardware.numa_gpus.len();
    let with_gpus = |values: &[u32]| {
        hardware
            .numa_gpus
            .iter()
            .zip(values)
            .filter(|(gpus, _)| **gpus > 0)
            .map(|(_, v)| *v)
            .min()
    };
    let cpu_static = kubelet.cpu == CpuManagerPolicy::Static;
    let mut reserved_cpus = vec![0; numas];
    if let Some(first) = reserved_cpus.first_mut() {
        *first = reserved;
    }
    let reserved_cores = reserved_cpus
        .iter()
        .map(|cpus| cpus.div_ceil(hardware.threads_per_core))
        .collect();
    NodeTopology {
        gpus: Some(hardware.numa_gpus.iter().sum()),
        gpus_per_numa_max: hardware.numa_gpus.iter().max().copied(),
        numa_nodes: u32::try_from(hardware.numa_gpus.iter().filter(|g| **g > 0).count()).ok(),
        nvlink_group_max: Some(hardware.nvlink_group_max),
        pcie_switch_group_max: Some(hardware.pcie_switch_group_max),
        cpus_per_numa: with_gpus(&hardware.numa_cpus),
        memory_per_numa_gib: with_gpus(&hardware.numa_memory_mib).map(|mib| mib / 1024),
        interconnect: Some(hardware.interconnect),
        topology_manager_policy: Some(kubelet.policy),
        topology_manager_scope: Some(kubelet.scope),
        cpu_manager_policy: Some(kubelet.cpu),
        numa_gpus: Some(hardware.numa_gpus.clone()),
        numa_cpus: Some(hardware.numa_cpus.clone()),
        numa_reserved_cpus: cpu_static.then_some(reserved_cpus),
        numa_reserved_cores: (cpu_static && hardware.threads_per_core > 1)
            .then_some(reserved_cores),
        numa_sockets: Some(hardware.numa_sockets.clone()),
        threads_per_core: Some(hardware.threads_per_core),
        numa_memory_mib: Some(hardware.numa_memory_mib.clone()),
        numa_hugepages_2mi: Some(vec![0; numas]),
        numa_hugepages_1gi: Some(vec![0; numas]),
        memory_manager_policy: Some(kubelet.memory),
        prefer_closest_numa_nodes: Some(false),
        max_allowable_numa_nodes: Some(8),
        full_pcpus_only: Some(kubelet.full_pcpus_only),
        distribute_cpus_across_numa: Some(false),
        align_by_socket: Some(false),
        // Published by labelers from issue #24 on; these fleets model the
        // labels of earlier ones, whose shapes the benchmarks keep.
        machine_numa_nodes: None,
        kubelet_version: None,
        amd_compute_partition: None,
        amd_memory_partition: None,
        gpu_clique: None,
        numa_distances: None,
        shape: None,
        devices: Default::default(),
    }
    .with_shape()
}

/// `machine` with device-plugin resources besides its GPUs, per NUMA node
/// (as the labeler publishes them: `numa-devices.<domain>_<name>`).
pub fn with_devices(machine: Machine, devices: &[(&str, &[u32])]) -> Machine {
    let mut topology = machine.topology.clone();
    for (resource, counts) in devices {
        topology
            .devices
            .insert((*resource).to_owned(), counts.to_vec());
    }
    Machine {
        topology: topology.with_shape(),
        ..machine
    }
}

/// `machine` with every GPU in MIG mode, `slices` slices of `profile`
/// each, under the NVIDIA device plugin's `mixed` strategy: no
/// `nvidia.com/gpu` is left (`numa-gpus` all 0), and each slice is an
/// `nvidia.com/mig-<profile>` device on its parent GPU's NUMA node.
pub fn mig_mixed(machine: Machine, profile: &str, slices: u32) -> Machine {
    let parents = machine.topology.numa_gpus.clone().unwrap_or_default();
    let per_numa: Vec<u32> = parents.iter().map(|g| g * slices).collect();
    let mut topology = machine.topology.clone();
    topology.gpus = Some(0);
    topology.gpus_per_numa_max = Some(0);
    topology.numa_gpus = Some(vec![0; parents.len()]);
    topology
        .devices
        .insert(format!("nvidia.com/mig-{profile}"), per_numa);
    Machine {
        topology: topology.with_shape(),
        ..machine
    }
}

/// `machine` with every GPU in MIG mode, `slices` slices each, under the
/// `single` strategy: the device plugin offers each slice as one
/// `nvidia.com/gpu` on its parent GPU's NUMA node, so the GPU counts are
/// the slices', and GFD's product ends in `-MIG-<profile>`. Slices share
/// no NVLink: each is its own group.
pub fn mig_single(machine: Machine, product: &'static str, slices: u32) -> Machine {
    let parents = machine.topology.numa_gpus.clone().unwrap_or_default();
    let per_numa: Vec<u32> = parents.iter().map(|g| g * slices).collect();
    let mut topology = machine.topology.clone();
    topology.gpus = Some(per_numa.iter().sum());
    topology.gpus_per_numa_max = per_numa.iter().max().copied();
    topology.numa_gpus = Some(per_numa);
    topology.nvlink_group_max = Some(1);
    topology.pcie_switch_group_max = Some(1);
    Machine {
        product,
        topology: topology.with_shape(),
        ..machine
    }
}

/// AWS p5.48xlarge: 8 H100 SXM on NVSwitch, 4 per NUMA node; 2 AMD EPYC
/// sockets of 48 cores (96 CPUs with SMT); 1 TiB per NUMA node.
pub fn p5(kubelet: Kubelet) -> Machine {
    Machine {
        instance: Some("p5.48xlarge"),
        product: "NVIDIA-H100-80GB-HBM3",
        gpu_memory_mib: 81_559,
        cpu_vendor: "AuthenticAMD",
        arch: "amd64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: topology(
            &Hardware {
                numa_gpus: vec![4, 4],
                numa_cpus: vec![96, 96],
                numa_sockets: vec![0, 1],
                threads_per_core: 2,
                numa_memory_mib: vec![1_031_000, 1_032_024],
                nvlink_group_max: 8,
                pcie_switch_group_max: 2,
                interconnect: Interconnect::NvSwitch,
            },
            kubelet,
            2,
        ),
    }
}

/// An HGX A100 on premises: 8 A100 SXM on NVSwitch, 4 per NUMA node; 2
/// Xeon Gold 6330 sockets of 28 cores (56 CPUs per NUMA node with SMT);
/// 512 GiB per NUMA node; the kubelet reserves CPUs 0 and 56 (one core).
pub fn hgx_a100(kubelet: Kubelet) -> Machine {
    Machine {
        instance: None,
        product: "NVIDIA-A100-SXM4-80GB",
        gpu_memory_mib: 81_920,
        cpu_vendor: "GenuineIntel",
        arch: "amd64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: topology(
            &Hardware {
                numa_gpus: vec![4, 4],
                numa_cpus: vec![56, 56],
                numa_sockets: vec![0, 1],
                threads_per_core: 2,
                numa_memory_mib: vec![515_000, 516_024],
                nvlink_group_max: 8,
                pcie_switch_group_max: 2,
                interconnect: Interconnect::NvSwitch,
            },
            kubelet,
            2,
        ),
    }
}

/// A 4-GPU PCIe machine on one NUMA node (g5.12xlarge: A10G; g6.12xlarge:
/// L4): 48 CPUs, 192 GiB.
pub fn four_pcie(instance: &'static str, product: &'static str, kubelet: Kubelet) -> Machine {
    Machine {
        instance: Some(instance),
        product,
        gpu_memory_mib: 23_028,
        cpu_vendor: "AuthenticAMD",
        arch: "amd64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: topology(
            &Hardware {
                numa_gpus: vec![4],
                numa_cpus: vec![48],
                numa_sockets: vec![0],
                threads_per_core: 2,
                numa_memory_mib: vec![191_000],
                nvlink_group_max: 1,
                pcie_switch_group_max: 4,
                interconnect: Interconnect::Pcie,
            },
            kubelet,
            2,
        ),
    }
}

/// Azure NC96ads A100 v4: 4 A100 PCIe, 2 per NUMA node, NVLink bridges
/// joining pairs; 48 CPUs and 440 GiB per NUMA node.
pub fn a100_pcie(kubelet: Kubelet) -> Machine {
    Machine {
        instance: Some("Standard_NC96ads_A100_v4"),
        product: "NVIDIA-A100-80GB-PCIe",
        gpu_memory_mib: 81_920,
        cpu_vendor: "AuthenticAMD",
        arch: "amd64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: topology(
            &Hardware {
                numa_gpus: vec![2, 2],
                numa_cpus: vec![48, 48],
                numa_sockets: vec![0, 1],
                threads_per_core: 2,
                numa_memory_mib: vec![450_000, 451_000],
                nvlink_group_max: 2,
                pcie_switch_group_max: 1,
                interconnect: Interconnect::NvLink,
            },
            kubelet,
            2,
        ),
    }
}

/// AWS g5.2xlarge: 1 A10G, 8 CPUs, 32 GiB.
pub fn g5_2xlarge(kubelet: Kubelet) -> Machine {
    Machine {
        instance: Some("g5.2xlarge"),
        product: "NVIDIA-A10G",
        gpu_memory_mib: 23_028,
        cpu_vendor: "AuthenticAMD",
        arch: "amd64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: topology(
            &Hardware {
                numa_gpus: vec![1],
                numa_cpus: vec![8],
                numa_sockets: vec![0],
                threads_per_core: 2,
                numa_memory_mib: vec![31_000],
                nvlink_group_max: 1,
                pcie_switch_group_max: 1,
                interconnect: Interconnect::Pcie,
            },
            kubelet,
            2,
        ),
    }
}

/// The labels the labeler writes for one of its fake sysfs trees with the
/// kubelet config `grace-many-numa-nodes.yaml` (single-numa-node, scope
/// pod, the static CPU Manager, `max-allowable-numa-nodes: 34`), pinned
/// byte for byte by `labeler/tests/grace_trees.rs`, read back through the
/// contract.
fn labeled_tree(labels: &str) -> NodeTopology {
    let pairs = labels.lines().filter_map(|line| line.split_once('='));
    NodeTopology::from_labels(&LabelPrefix::default(), pairs)
        .expect("the labeler's own labels read back through the contract")
}

/// `tree`'s labels for a kubelet of `version` whose
/// `max-allowable-numa-nodes` is `max_allowable` (8 when unset), the
/// shape set again as the labeler sets it.
fn grace_topology(tree: &str, version: KubeletVersion, max_allowable: u32) -> NodeTopology {
    NodeTopology {
        kubelet_version: Some(version),
        max_allowable_numa_nodes: Some(max_allowable),
        ..labeled_tree(tree)
    }
    .with_shape()
}

/// A GB200 NVL72 compute tray: 2 Grace sockets of 72 CPUs (one NUMA node
/// each) with 2 B200 GPUs on each, and 32 CPU-less NUMA nodes (8 per GPU:
/// its HBM and the nodes reserved for its MIG instances): 34 NUMA nodes.
pub fn gb200_tray(version: KubeletVersion, max_allowable: u32) -> Machine {
    Machine {
        instance: None,
        product: "NVIDIA-GB200",
        gpu_memory_mib: 189_471,
        cpu_vendor: "ARM",
        arch: "arm64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: grace_topology(
            include_str!(
                "../../../labeler/tests/fixtures/sysfs/gb200-tray.grace-many-numa-nodes.labels"
            ),
            version,
            max_allowable,
        ),
    }
}

/// A GB200 tray as a labeler without the kubernetes sink and without
/// `--kubelet-version` labels it (the nodefeature sink of the recommended
/// deployment): no `kubelet-version` label, the shape digested without it.
pub fn gb200_tray_unversioned(max_allowable: u32) -> Machine {
    let mut tray = gb200_tray(KubeletVersion::new(1, 36), max_allowable);
    tray.topology.kubelet_version = None;
    tray.topology = tray.topology.with_shape();
    tray
}

/// A GH200 Grace Hopper superchip: 72 Grace CPUs and the H100's PCI
/// function on NUMA node 0, its 96 GB of HBM as CPU-less NUMA node 1, and
/// nodes 2 to 8 reserved for MIG (neither CPUs nor memory): 9 NUMA nodes.
pub fn gh200(version: KubeletVersion, max_allowable: u32) -> Machine {
    Machine {
        instance: None,
        product: "NVIDIA-GH200-480GB",
        gpu_memory_mib: 97_871,
        cpu_vendor: "ARM",
        arch: "arm64",
        gpu_vendor: GpuVendor::Nvidia,
        topology: grace_topology(
            include_str!(
                "../../../labeler/tests/fixtures/sysfs/gh200.grace-many-numa-nodes.labels"
            ),
            version,
            max_allowable,
        ),
    }
}

/// 8 AMD Instinct MI300X in CPX compute and NPS4 memory partition mode on
/// 2 EPYC sockets of 96 cores with SMT, 2 NUMA nodes per socket (the
/// labeler's `mi300x-cpx-nps4` tree): each GPU is 8 logical GPUs, as the
/// AMD device plugin offers them, 16 per NUMA node.
pub fn mi300x_cpx(kubelet: Kubelet) -> Machine {
    let tree = labeled_tree(include_str!(
        "../../../labeler/tests/fixtures/sysfs/mi300x-cpx-nps4.labels"
    ));
    let hardware = Hardware {
        numa_gpus: tree.numa_gpus.clone().unwrap_or_default(),
        numa_cpus: tree.numa_cpus.clone().unwrap_or_default(),
        numa_sockets: vec![0, 0, 1, 1],
        threads_per_core: 2,
        numa_memory_mib: vec![772_000; 4],
        nvlink_group_max: 8,
        pcie_switch_group_max: 1,
        interconnect: Interconnect::Xgmi,
    };
    Machine {
        instance: None,
        product: "AMD-Instinct-MI300X-OAM",
        gpu_memory_mib: 24_576,
        cpu_vendor: "AuthenticAMD",
        arch: "amd64",
        gpu_vendor: GpuVendor::Amd,
        topology: NodeTopology {
            amd_compute_partition: tree.amd_compute_partition,
            amd_memory_partition: tree.amd_memory_partition,
            ..topology(&hardware, kubelet, 2)
        }
        .with_shape(),
    }
}

/// What a labeler older than the shape label (the first label contract,
/// before commit 6e62a97) publishes for `machine`: the counts and the three
/// manager policies, no per-NUMA-node lists, no options, no shape.
pub fn old_labeler(machine: Machine) -> Machine {
    Machine {
        topology: first_contract(&machine.topology),
        ..machine
    }
}

/// The facts of `t` the first label contract had.
pub fn first_contract(t: &NodeTopology) -> NodeTopology {
    NodeTopology {
        gpus: t.gpus,
        gpus_per_numa_max: t.gpus_per_numa_max,
        numa_nodes: t.numa_nodes,
        nvlink_group_max: t.nvlink_group_max,
        pcie_switch_group_max: t.pcie_switch_group_max,
        cpus_per_numa: t.cpus_per_numa,
        memory_per_numa_gib: t.memory_per_numa_gib,
        interconnect: t.interconnect,
        topology_manager_policy: t.topology_manager_policy,
        topology_manager_scope: t.topology_manager_scope,
        cpu_manager_policy: t.cpu_manager_policy,
        ..NodeTopology::default()
    }
}
