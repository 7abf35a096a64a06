//! Fleet descriptions and the kwctl session files built from them
//! (`scenarios/sessions/*.yml`).
//!
//! A fleet is machines (each a [`NodeTopology`] of facts as the labeler
//! publishes them, plus the labels real kubelets, cloud providers, Node
//! Feature Discovery and the GPU operator write) and node counts. The
//! session answers the policy's host calls in the order it makes them:
//! with `capacity.source: auto` the fleet summary ConfigMap first, then the
//! Node list. Labels go through the contract ([`NodeTopology::to_labels`],
//! with the shape the labeler sets, [`NodeTopology::with_shape`]), and the
//! summary is what the summarizer writes for the listed nodes
//! ([`Fleet::add_read`], [`FleetSummary::to_data`]), so both answers
//! describe one fleet.
//!
//! `cargo run -p e2e-tests --bin sessions` writes the files; the test
//! `tests/sessions.rs` checks that the checked-in ones are what it writes.

use crate::session::HostRequest;
use anyhow::Result;
use gpu_topology::TopologyManagerPolicy::{BestEffort, Restricted, SingleNumaNode};
use gpu_topology::TopologyManagerScope::{Container, Pod};
use gpu_topology::{
    CpuManagerPolicy, Fleet, FleetSummary, Interconnect, KubeletVersion, LabelKey, LabelPrefix,
    MemoryManagerPolicy, NodeTopology, TopologyManagerPolicy, TopologyManagerScope,
};
use gpu_topology_labeler::sinks::kubernetes::reported_kubelet_version;
use gpu_topology_labeler::summarize::SummaryBuilder;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// When the fresh summaries were written (2025-11-29): scenarios that read
/// them trust them for a century (`maxAgeSeconds`).
pub const SUMMARY_WRITTEN_AT: u64 = 1_764_450_000;
/// A summary from 2020: stale for any `maxAgeSeconds` a scenario sets.
pub const STALE_SUMMARY_WRITTEN_AT: u64 = 1_600_000_000;

/// The summarizer's ConfigMap, where the examples deploy it.
const SUMMARY_NAMESPACE: &str = "kube-system";
const SUMMARY_NAME: &str = "gpu-topology-fleet";
/// What the API server answers (through kube-rs) when the summary is absent.
pub const SUMMARY_NOT_FOUND: &str = "ApiError: configmaps \"gpu-topology-fleet\" not found: NotFound (ErrorResponse { status: \"Failure\", message: \"configmaps \\\"gpu-topology-fleet\\\" not found\", reason: \"NotFound\", code: 404 })";

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
                "../../labeler/tests/fixtures/sysfs/gb200-tray.grace-many-numa-nodes.labels"
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
            include_str!("../../labeler/tests/fixtures/sysfs/gh200.grace-many-numa-nodes.labels"),
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
        "../../labeler/tests/fixtures/sysfs/mi300x-cpx-nps4.labels"
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

/// Nodes of one machine type, and labels that differ on them.
#[derive(Debug, Clone)]
pub struct Nodes {
    pub machine: Machine,
    pub count: usize,
    /// Labels set by hand over the labeler's (e.g. a malformed value).
    pub overrides: Vec<(&'static str, &'static str)>,
    /// The Node's `status.nodeInfo.kubeletVersion` (`v1.36.2`), which the
    /// policy reads beside the labels; `None` leaves the status out.
    pub reported_kubelet: Option<&'static str>,
    /// The kubernetes sink's heartbeat annotation (`<prefix>/published`);
    /// `None`: no heartbeat (another sink).
    pub heartbeat: Option<&'static str>,
}

pub fn nodes(machine: Machine, count: usize) -> Nodes {
    Nodes {
        machine,
        count,
        overrides: Vec::new(),
        reported_kubelet: None,
        heartbeat: None,
    }
}

/// `count` nodes of `machine` whose labeler last confirmed their labels at
/// `heartbeat` (RFC 3339).
pub fn confirmed(machine: Machine, count: usize, heartbeat: &'static str) -> Nodes {
    Nodes {
        heartbeat: Some(heartbeat),
        ..nodes(machine, count)
    }
}

/// `count` nodes of `machine` whose Nodes report kubelet `version`.
pub fn reporting(machine: Machine, count: usize, version: &'static str) -> Nodes {
    Nodes {
        reported_kubelet: Some(version),
        ..nodes(machine, count)
    }
}

/// How the host answers the fleet summary read.
#[derive(Debug, Clone)]
pub enum SummaryAnswer {
    /// Not asked for (`capacity.source: nodes`).
    NotAsked,
    /// The API server's 404.
    Absent,
    /// The host's own error (no access, no connection).
    Error(&'static str),
    /// The summarizer's ConfigMap for this session's Node list, written at this time.
    OfTheList(u64),
    /// The summarizer's ConfigMap for other nodes (a stale one), written at this time.
    Of(Vec<Nodes>, u64),
    /// The summarizer's ConfigMap for these nodes, written at this time
    /// with `--dra`: with the DRA entries of this DRA fleet.
    OfWithDra(Vec<Nodes>, u64, crate::dra_fleets::DraFleet),
}

/// How the host answers the Node list.
#[derive(Debug, Clone)]
pub enum ListAnswer {
    NotAsked,
    Nodes(Vec<Nodes>),
    Error(&'static str),
    /// A claim's lists: the DeviceClasses and ResourceSlices of a DRA fleet.
    Dra(crate::dra_fleets::DraFleet),
    /// No list: the reads of a `pods/binding` CREATE, by name (the Pod, the
    /// Node, its NodeResourceTopology).
    Binding(Box<crate::binding_sessions::BindingReads>),
}

/// One session file.
#[derive(Debug, Clone)]
pub struct SessionFile {
    /// `sessions/<name>.yml`
    pub name: &'static str,
    /// The header comment: what the fleet is.
    pub about: &'static str,
    pub summary: SummaryAnswer,
    pub list: ListAnswer,
}

/// The labels real components write on a node: the kubelet (hostname, os,
/// arch), the cloud provider (instance type, region, zone), the GPU
/// operator's feature discovery (`nvidia.com/gpu.*`), NFD (CPU vendor).
fn foreign_labels(index: usize, machine: &Machine, hostname: &str) -> Vec<(String, String)> {
    const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
    let gpus = machine.topology.gpus.unwrap_or(0).to_string();
    let mut labels: Vec<(&str, String)> = vec![
        ("beta.kubernetes.io/arch", machine.arch.into()),
        ("beta.kubernetes.io/os", "linux".into()),
        ("kubernetes.io/arch", machine.arch.into()),
        ("kubernetes.io/hostname", hostname.into()),
        ("kubernetes.io/os", "linux".into()),
    ];
    if let Some(instance) = machine.instance {
        labels.extend([
            ("beta.kubernetes.io/instance-type", instance.into()),
            ("node.kubernetes.io/instance-type", instance.into()),
            ("topology.kubernetes.io/region", "us-east-1".into()),
            (
                "topology.kubernetes.io/zone",
                ZONES[index % ZONES.len()].into(),
            ),
        ]);
    }
    match machine.gpu_vendor {
        GpuVendor::Nvidia => labels.extend([
            ("nvidia.com/gpu.present", "true".into()),
            ("nvidia.com/gpu.product", machine.product.into()),
            ("nvidia.com/gpu.count", gpus),
            ("nvidia.com/gpu.memory", machine.gpu_memory_mib.to_string()),
            ("nvidia.com/cuda.driver.major", "550".into()),
        ]),
        // The AMD GPU operator's node labeller (`amd.com/gpu.*`).
        GpuVendor::Amd => labels.extend([
            ("amd.com/gpu.product-name", machine.product.into()),
            ("amd.com/gpu.device-id", "74a1".into()),
            ("amd.com/gpu.vram", format!("{}M", machine.gpu_memory_mib)),
        ]),
    }
    labels.extend([
        (
            "feature.node.kubernetes.io/cpu-model.vendor_id",
            machine.cpu_vendor.into(),
        ),
        ("node-role.kubernetes.io/gpu", String::new()),
    ]);
    labels.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Node names: cloud-style for cloud machines, `gpu-node-NN` on premises.
fn hostname(index: usize, machine: &Machine) -> String {
    match machine.instance {
        Some(_) => format!(
            "ip-10-{}-{}-{}.ec2.internal",
            index / 65_536,
            (index / 256) % 256,
            index % 256
        ),
        None => format!("gpu-node-{index:02}"),
    }
}

/// Node `index` of the list, as the masked listing returns it (labels,
/// name, and the kubelet version where the group reports one).
pub fn node_item(
    index: usize,
    machine: &Machine,
    overrides: &[(&str, &str)],
    reported_kubelet: Option<&str>,
    heartbeat: Option<&str>,
    prefix: &LabelPrefix,
) -> Value {
    let name = hostname(index, machine);
    let mut labels = Map::new();
    for (key, value) in foreign_labels(index, machine, &name) {
        labels.insert(key, Value::String(value));
    }
    for (key, value) in machine.topology.to_labels(prefix) {
        labels.insert(key, Value::String(value));
    }
    for (key, value) in overrides {
        labels.insert((*key).to_owned(), json!(value));
    }
    let mut node = json!({"metadata": {"name": name, "labels": labels}});
    if let Some(heartbeat) = heartbeat {
        node["metadata"]["annotations"] = json!({ prefix.heartbeat_key(): heartbeat });
    }
    if let Some(version) = reported_kubelet {
        node["status"] = json!({"nodeInfo": {"kubeletVersion": version}});
    }
    node
}

/// The Node list items of `groups`, in order.
pub fn node_items(groups: &[Nodes], prefix: &LabelPrefix) -> Vec<Value> {
    groups
        .iter()
        .flat_map(|group| std::iter::repeat_n(group, group.count))
        .enumerate()
        .map(|(index, group)| {
            node_item(
                index,
                &group.machine,
                &group.overrides,
                group.reported_kubelet,
                group.heartbeat,
                prefix,
            )
        })
        .collect()
}

/// The `NodeList` document holding `items`.
pub fn node_list(items: Vec<Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "NodeList",
        "metadata": {"resourceVersion": "48213377"},
        "items": items,
    })
}

/// The machine types of a large cloud fleet (the fleet benchmark's), and
/// which one node `i` is: `CLOUD_CYCLE[i % 20]`, 40% p5 on single-numa-node,
/// 10% p5 on best-effort, 30% 4 x L4, 15% 1 x A10G, 5% 4 x A100 PCIe.
pub fn cloud_machines() -> Vec<Machine> {
    vec![
        p5(Kubelet::cpu_static(SingleNumaNode, Pod)),
        p5(Kubelet::cpu_static(BestEffort, Pod)),
        four_pcie(
            "g6.12xlarge",
            "NVIDIA-L4",
            Kubelet::cpu_static(BestEffort, Pod),
        ),
        g5_2xlarge(Kubelet::NONE),
        a100_pcie(Kubelet::cpu_static(BestEffort, Pod)),
    ]
}

/// Index into [`cloud_machines`] of each of 20 consecutive nodes.
pub const CLOUD_CYCLE: [usize; 20] = [0, 2, 0, 3, 2, 0, 1, 2, 0, 3, 0, 2, 4, 0, 2, 3, 1, 0, 2, 0];

/// The fleets the instruction counts compare (`FLEET` of
/// `examples/profile.rs`), by name: `cloud` ([`cloud_fleet`]);
/// `two-socket`, p5 nodes only (2 NUMA nodes, single-numa-node); `gb200`,
/// GB200 trays only (34 NUMA nodes, single-numa-node, kubelet 1.36,
/// `max-allowable-numa-nodes: 34`); `grace-cloud`, the cloud fleet with
/// every fifth node a Grace machine (GB200 trays on 1.36 and on 1.35, a
/// tray whose kubelet keeps the default 8, GH200); `distinct`, every node a
/// shape of its own ([`distinct_shapes_fleet`]); `many-numa`, every node a
/// GB200 tray of its own shape ([`many_numa_nodes_fleet`]); `numa-1000`,
/// trays whose labels claim 1,000 NUMA nodes ([`thousand_numa_nodes_fleet`]).
/// `None` for another name.
pub fn bench_fleet(name: &str, size: usize, prefix: &LabelPrefix) -> Option<Vec<Value>> {
    let v1_36 = KubeletVersion::new(1, 36);
    let one = |machine: Machine| vec![machine];
    let machines = match name {
        "cloud" => return Some(cloud_fleet(size, prefix)),
        "distinct" => return Some(distinct_shapes_fleet(size, size, prefix)),
        "many-numa" => return Some(many_numa_nodes_fleet(size, prefix)),
        "numa-1000" => return Some(thousand_numa_nodes_fleet(size, prefix)),
        "two-socket" => one(p5(Kubelet::cpu_static(SingleNumaNode, Pod))),
        "gb200" => one(gb200_tray(v1_36, 34)),
        "grace-cloud" => {
            let grace = [
                gb200_tray(v1_36, 34),
                gb200_tray(KubeletVersion::new(1, 35), 34),
                gb200_tray(v1_36, 8),
                gh200(v1_36, 34),
            ];
            let cloud = cloud_machines();
            let items = (0..size)
                .map(|index| {
                    let machine = if index % 5 == 4 {
                        &grace[(index / 5) % grace.len()]
                    } else {
                        &cloud[CLOUD_CYCLE[index % CLOUD_CYCLE.len()]]
                    };
                    node_item(index, machine, &[], None, None, prefix)
                })
                .collect();
            return Some(items);
        }
        _ => return None,
    };
    Some(
        (0..size)
            .map(|index| {
                node_item(
                    index,
                    &machines[index % machines.len()],
                    &[],
                    None,
                    None,
                    prefix,
                )
            })
            .collect(),
    )
}

/// An 8-GPU machine whose NUMA nodes have 12 and 14 free CPUs (14 each,
/// two reserved on NUMA node 0, SMT off), under `single-numa-node` and container scope with
/// the static CPU Manager, with `jitter` MiB less memory on NUMA node 0 and
/// more on NUMA node 1 than the others of its type: labeled in exact MiB,
/// as labelers before the whole-GiB contract (or a hostile hand) did,
/// every jitter is a shape of its own. A pod of 4 + 2 GPUs that sets no
/// CPUs gets the default 4 per GPU, which no NUMA node has free for 4
/// GPUs: the lowering search runs on every shape (issue #35).
pub fn cramped_hgx(jitter: u32) -> Machine {
    let mut machine = hgx_a100(Kubelet::cpu_static(SingleNumaNode, Container));
    machine.topology = topology(
        &Hardware {
            numa_gpus: vec![4, 4],
            numa_cpus: vec![14, 14],
            numa_sockets: vec![0, 1],
            threads_per_core: 1,
            numa_memory_mib: vec![515_000 - jitter, 516_024 + jitter],
            nvlink_group_max: 8,
            pcie_switch_group_max: 2,
            interconnect: Interconnect::NvSwitch,
        },
        Kubelet::cpu_static(SingleNumaNode, Container),
        2,
    );
    machine
}

/// `size` nodes of [`cramped_hgx`], `shapes` distinct ones (node `i` has
/// jitter `i % shapes`), as Node list items.
pub fn distinct_shapes_fleet(size: usize, shapes: usize, prefix: &LabelPrefix) -> Vec<Value> {
    (0..size)
        .map(|index| {
            let jitter = u32::try_from(index % shapes.max(1)).unwrap_or(u32::MAX);
            node_item(index, &cramped_hgx(jitter), &[], None, None, prefix)
        })
        .collect()
}

/// `size` GB200 trays (34 NUMA nodes, kubelet 1.36, `max-allowable-numa-nodes:
/// 34`), each a shape of its own: node `i` has `i` MiB less memory on its
/// first NUMA node, as exact MiB of identical machines would publish it.
/// The most NUMA nodes the kubelet model takes per shape, times as many
/// shapes as nodes (issue #35).
pub fn many_numa_nodes_fleet(size: usize, prefix: &LabelPrefix) -> Vec<Value> {
    let tray = gb200_tray(KubeletVersion::new(1, 36), 34);
    (0..size)
        .map(|index| {
            let mut machine = tray.clone();
            let jitter = u32::try_from(index).unwrap_or(u32::MAX);
            if let Some(memory) = machine.topology.numa_memory_mib.as_mut() {
                memory[0] = memory[0].saturating_sub(jitter);
            }
            machine.topology = machine.topology.with_shape();
            node_item(index, &machine, &[], None, None, prefix)
        })
        .collect()
}

/// `size` GB200 trays whose labels claim 1,000 NUMA nodes
/// (`machine-numa-nodes` and `max-allowable-numa-nodes`), more than the
/// 64 a kubelet's NUMA masks hold: hostile or broken labels, which the
/// model answers as unknown without walking them.
pub fn thousand_numa_nodes_fleet(size: usize, prefix: &LabelPrefix) -> Vec<Value> {
    let mut machine = gb200_tray(KubeletVersion::new(1, 36), 34);
    machine.topology.machine_numa_nodes = Some(1_000);
    machine.topology.max_allowable_numa_nodes = Some(1_000);
    machine.topology = machine.topology.with_shape();
    (0..size)
        .map(|index| node_item(index, &machine, &[], None, None, prefix))
        .collect()
}

/// A cloud fleet of `size` nodes ([`cloud_machines`]), as Node list items.
pub fn cloud_fleet(size: usize, prefix: &LabelPrefix) -> Vec<Value> {
    let machines = cloud_machines();
    (0..size)
        .map(|i| {
            node_item(
                i,
                &machines[CLOUD_CYCLE[i % CLOUD_CYCLE.len()]],
                &[],
                None,
                None,
                prefix,
            )
        })
        .collect()
}

/// What the summarizer makes of the listed nodes: its own builder, fed
/// each node's labels and reported kubelet version as its Node Table rows
/// give them, malformed nodes counted.
pub fn summary_of(items: &[Value], prefix: &LabelPrefix, generated_at: u64) -> FleetSummary {
    let mut builder = SummaryBuilder::new(prefix.clone());
    for item in items {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let labels = item
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)));
        builder.add_reported(name, labels, reported_kubelet_version(item));
        let heartbeat = item
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(prefix.heartbeat_key()))
            .and_then(Value::as_str);
        if let Some(heartbeat) = heartbeat {
            builder.add_heartbeat(name, heartbeat);
        }
    }
    builder.finish(generated_at).summary
}

/// The fleet [`summary_of`] `items` holds, and its malformed nodes.
pub fn summarize(items: &[Value], prefix: &LabelPrefix) -> (Fleet, u32) {
    let summary = summary_of(items, prefix, 0);
    (summary.fleet, summary.malformed)
}

/// The summarizer's ConfigMap for the nodes `items`, written at `generated_at`.
pub fn summary_config_map(items: &[Value], generated_at: u64, prefix: &LabelPrefix) -> Value {
    let summary = summary_of(items, prefix, generated_at);
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": SUMMARY_NAME,
            "namespace": SUMMARY_NAMESPACE,
            "labels": {
                "app.kubernetes.io/name": "gpu-topology-labeler",
                "app.kubernetes.io/component": "fleet-summary"
            }
        },
        "data": summary.to_data(),
    })
}

/// The policy's summary read, in kwctl's terms.
pub fn summary_request() -> HostRequest {
    HostRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: SUMMARY_NAME.into(),
        namespace: Some(SUMMARY_NAMESPACE.into()),
        disable_cache: false,
        field_masks: Some(BTreeSet::from(["data".to_owned()])),
    }
}

/// The policy's Node listing, in kwctl's terms.
pub fn list_request(prefix: &LabelPrefix) -> HostRequest {
    HostRequest::KubernetesListResourceAll {
        api_version: "v1".into(),
        kind: "Node".into(),
        label_selector: Some(prefix.key(LabelKey::Gpus)),
        field_selector: None,
        field_masks: Some(BTreeSet::from([
            "metadata.labels".to_owned(),
            "metadata.name".to_owned(),
            "status.nodeInfo.kubeletVersion".to_owned(),
            "metadata.annotations".to_owned(),
        ])),
    }
}

/// One exchange in kwctl's YAML: the request as its own YAML document in a
/// block, a JSON payload pretty-printed in a block, an error single-quoted.
fn exchange(request: &HostRequest, response: Result<&Value, &str>) -> Result<String> {
    let indent = |text: &str, by: usize| -> String {
        text.lines()
            .map(|line| format!("{}{line}\n", " ".repeat(by)))
            .collect()
    };
    let mut out = String::from("- type: Exchange\n  request: |\n");
    out.push_str(&indent(&serde_yaml::to_string(request)?, 4));
    out.push_str("  response:\n");
    match response {
        Ok(payload) => {
            out.push_str("    type: Success\n    payload: |\n");
            out.push_str(&indent(&serde_json::to_string_pretty(payload)?, 6));
        }
        // Single-quoted YAML folds line breaks into spaces: a message of
        // several lines is written double-quoted, as a JSON string (valid
        // YAML), so that its line breaks reach the policy.
        Err(message) if message.contains('\n') => {
            out.push_str("    type: Error\n");
            out.push_str(&format!(
                "    message: {}\n",
                serde_json::to_string(message)?
            ));
        }
        Err(message) => {
            out.push_str("    type: Error\n");
            out.push_str(&format!("    message: '{}'\n", message.replace('\'', "''")));
        }
    }
    Ok(out)
}

/// The session file's text.
pub fn render(file: &SessionFile) -> Result<String> {
    let prefix = LabelPrefix::default();
    let mut out = String::new();
    for line in file.about.lines() {
        out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    let (source, what) = match file.list {
        ListAnswer::Binding(_) => ("binding_sessions.rs", "binding"),
        _ => ("fleets.rs", "fleet"),
    };
    out.push_str(&format!("# GENERATED by `cargo run -p e2e-tests --bin sessions` from e2e-tests/src/{source}:\n# edit the {what} there. kwctl replay format (`kwctl run --replay-host-capabilities-interactions`).\n"));
    let listed = match &file.list {
        ListAnswer::Nodes(groups) => Some(node_items(groups, &prefix)),
        _ => None,
    };
    let summary = match &file.summary {
        SummaryAnswer::NotAsked => None,
        SummaryAnswer::Absent => Some(Err(SUMMARY_NOT_FOUND)),
        SummaryAnswer::Error(message) => Some(Err(*message)),
        SummaryAnswer::OfTheList(at) => Some(Ok(summary_config_map(
            listed.as_deref().unwrap_or_default(),
            *at,
            &prefix,
        ))),
        SummaryAnswer::Of(groups, at) => Some(Ok(summary_config_map(
            &node_items(groups, &prefix),
            *at,
            &prefix,
        ))),
        SummaryAnswer::OfWithDra(groups, at, fleet) => {
            let mut config_map = summary_config_map(&node_items(groups, &prefix), *at, &prefix);
            let classes = crate::dra_fleets::device_class_list(fleet)?;
            crate::dra_fleets::add_to_summary(&mut config_map, fleet, &classes)?;
            Some(Ok(config_map))
        }
    };
    // A claim asks for the summary after the claims a pod names (below).
    if let (Some(answer), false) = (&summary, matches!(file.list, ListAnswer::Dra(_))) {
        out.push_str(&exchange(
            &summary_request(),
            answer.as_ref().map_err(|e| *e),
        )?);
    }
    match (&file.list, listed) {
        (ListAnswer::Nodes(_), Some(items)) => {
            out.push_str(&exchange(&list_request(&prefix), Ok(&node_list(items)))?);
        }
        (ListAnswer::Error(message), _) => {
            out.push_str(&exchange(&list_request(&prefix), Err(message))?);
        }
        (ListAnswer::Dra(fleet), _) => {
            use crate::dra_fleets as dra;
            for get in &fleet.gets {
                out.push_str(&exchange(&get.request(), Ok(&get.answer()?))?);
            }
            let classes = dra::device_class_list(fleet)?;
            // The summary first: with the DRA devices and their classes, as
            // the summarizer writes them for this fleet, nothing is listed.
            if let SummaryAnswer::OfTheList(at) = &file.summary {
                let mut config_map = summary_config_map(&[], *at, &prefix);
                dra::add_to_summary(&mut config_map, fleet, &classes)?;
                out.push_str(&exchange(&summary_request(), Ok(&config_map))?);
            } else {
                if let Some(answer) = &summary {
                    out.push_str(&exchange(
                        &summary_request(),
                        answer.as_ref().map_err(|e| *e),
                    )?);
                }
                out.push_str(&exchange(&dra::device_class_request(), Ok(&classes))?);
                out.push_str(&exchange(
                    &dra::resource_slice_request(),
                    Ok(&dra::resource_slice_list(fleet)),
                )?);
            }
            for pod in &fleet.pods {
                out.push_str(&exchange(&pod.request(), Ok(&pod.answer()?))?);
            }
        }
        (ListAnswer::Binding(reads), _) => {
            for (request, response) in reads.exchanges(&prefix)? {
                out.push_str(&exchange(
                    &request,
                    response.as_ref().map_err(String::as_str),
                )?);
            }
        }
        _ => {}
    }
    Ok(out)
}

const CONNECTION_REFUSED_SUMMARY: &str = "Cannot get v1/ConfigMap kube-system/gpu-topology-fleet: error trying to connect: tcp connect error: Connection refused (os error 111)";
const CONNECTION_REFUSED_LIST: &str =
    "Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111)";
/// The host's errors as kwctl hands them over under `RUST_BACKTRACE=1`: an
/// anyhow error's `{:?}`, its causes and a stack backtrace after the first
/// line (issue #26). The summary's first line is the API server's RBAC
/// refusal, longer than a warning quotes (`host::HOST_ERROR_MAX_CHARS`).
const FORBIDDEN_SUMMARY_WITH_BACKTRACE: &str = "configmaps \"gpu-topology-fleet\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-system\": RBAC: role.rbac.authorization.k8s.io \"gpu-topology-fleet-reader\" not found

Caused by:
    ApiError: configmaps \"gpu-topology-fleet\" is forbidden: Forbidden (ErrorResponse { status: \"Failure\", reason: \"Forbidden\", code: 403 })

Stack backtrace:
   0: anyhow::error::<impl anyhow::Error>::msg
             at /usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f/anyhow-1.0.86/src/error.rs:83:36
   1: policy_evaluator::callback_handler::kubernetes::get_resource::{{closure}}
             at /usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f/policy-evaluator-0.19.0/src/callback_handler/kubernetes.rs:163:9
   2: tokio::runtime::task::core::Core<T,S>::poll
";
const CONNECTION_REFUSED_LIST_WITH_BACKTRACE: &str = "Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111)

Caused by:
    0: error trying to connect: tcp connect error: Connection refused (os error 111)
    1: tcp connect error: Connection refused (os error 111)
    2: Connection refused (os error 111)

Stack backtrace:
   0: anyhow::error::<impl anyhow::Error>::msg
             at /usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f/anyhow-1.0.86/src/error.rs:83:36
   1: policy_evaluator::callback_handler::kubernetes::list_all_resources::{{closure}}
   2: tokio::runtime::task::core::Core<T,S>::poll
";
const CONFIG_MAP_REFUSED: &str =
    "Policy has not been granted access to Kubernetes v1/ConfigMap resources.";

/// The mixed fleet several scenarios share: 2 p5 on single-numa-node, 1 p5
/// on best-effort, 2 L4 nodes without managers, and a p5 hand-labeled
/// with the kubelet's own spelling of the policy, which the contract refuses.
fn hgx_mixed() -> Vec<Nodes> {
    vec![
        nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
        nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 1),
        nodes(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE), 2),
        Nodes {
            overrides: vec![("gpu-topology.io/topology-manager-policy", "SingleNUMANode")],
            ..nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 1)
        },
    ]
}

fn full_pcpus_only(policy: TopologyManagerPolicy) -> Kubelet {
    Kubelet {
        full_pcpus_only: true,
        ..Kubelet::cpu_static(policy, Pod)
    }
}

fn memory_static(policy: TopologyManagerPolicy) -> Kubelet {
    Kubelet {
        memory: MemoryManagerPolicy::Static,
        ..Kubelet::cpu_static(policy, Pod)
    }
}

/// Every session file of `scenarios/sessions/`.
pub fn session_files() -> Vec<SessionFile> {
    use ListAnswer as L;
    use SummaryAnswer as S;
    vec![
        SessionFile {
            name: "a100-pcie-nvlink-bridge-fleet",
            about: "2 A100 PCIe nodes: 4 GPUs over 2 NUMA nodes, NVLink bridges joining pairs (largest NVLink group: 2).\nThe cluster has no fleet summary: the policy reads it first (404), then lists the Nodes.",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(a100_pcie(Kubelet::cpu_static(BestEffort, Pod)), 2)]),
        },
        SessionFile {
            name: "fleet-summary-absent",
            about: "A cluster without the fleet summary ConfigMap (the summarizer is not deployed), for\ncapacity.source: summary: the host answers with the API server's 404 and no Node is listed.",
            summary: S::Absent,
            list: L::NotAsked,
        },
        SessionFile {
            name: "fleet-summary-hgx-mixed",
            about: "The fleet summary `gpu-topology-labeler summarize` writes for the fleet of hgx-mixed-fleet.yml:\n3 shapes, 5 nodes, and the hand-labeled node counted as malformed. No Node is listed.",
            summary: S::Of(hgx_mixed(), SUMMARY_WRITTEN_AT),
            list: L::NotAsked,
        },
        SessionFile {
            name: "fleet-summary-distinct-shapes",
            about: "A fresh fleet summary of 1,000 nodes of one machine type, every one a shape of its own: each\nNUMA node's memory a few MiB off the others', labeled in exact MiB (labelers before the\nwhole-GiB contract). 12 and 14 free CPUs per NUMA node, single-numa-node, container scope.",
            summary: S::Of(
                (0..1_000).map(|jitter| nodes(cramped_hgx(jitter), 1)).collect(),
                SUMMARY_WRITTEN_AT,
            ),
            list: L::NotAsked,
        },
        SessionFile {
            name: "fleet-summary-refused",
            about: "The host refuses the fleet summary ConfigMap (the policy-server may not read it), so the\npolicy lists the Nodes instead: 2 p5 (HGX H100) nodes whose kubelets run single-numa-node.",
            summary: S::Error(CONFIG_MAP_REFUSED),
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 2)]),
        },
        SessionFile {
            name: "fleet-summary-stale",
            about: "A fleet summary written in 2020 (its summarizer stopped): too old to trust, so the policy\nlists the Nodes instead: a p5 on best-effort and a 4 x L4 node.",
            summary: S::Of(vec![nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 40)], STALE_SUMMARY_WRITTEN_AT),
            list: L::Nodes(vec![
                nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 1),
                nodes(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE), 1),
            ]),
        },
        SessionFile {
            name: "fleet-summary-empty",
            about: "A fresh fleet summary that lists no shape: the labels expired (the labeler stopped and its\nNodeFeature objects were garbage-collected) or the autoscaled pool is at zero.",
            summary: S::OfTheList(SUMMARY_WRITTEN_AT),
            list: L::NotAsked,
        },
        SessionFile {
            name: "four-gpu-pcie-fleet",
            about: "3 g5.12xlarge nodes: 4 A10G GPUs each on PCIe, one NUMA node, no NVLink, the kubelet's\ndefault managers. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(four_pcie("g5.12xlarge", "NVIDIA-A10G", Kubelet::NONE), 3)]),
        },
        SessionFile {
            name: "hgx-mixed-fleet",
            about: "Mixed fleet: 2 p5 (HGX H100) nodes whose kubelets run single-numa-node, 1 p5 on best-effort,\n2 L4 nodes, and 1 node hand-labeled with the kubelet's own spelling (SingleNUMANode), which the\ncontract refuses. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(hgx_mixed()),
        },
        SessionFile {
            name: "hgx-single-numa-node-fleet",
            about: "3 p5 (HGX H100) nodes (8 GPUs, 4 per NUMA node, 96 CPUs per NUMA node) whose kubelets all\nrun topologyManagerPolicy single-numa-node. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 3)]),
        },
        SessionFile {
            name: "host-error",
            about: "The host reaches neither the fleet summary nor the Node list (API server unreachable from\nthe policy-server).",
            summary: S::Error(CONNECTION_REFUSED_SUMMARY),
            list: L::Error(CONNECTION_REFUSED_LIST),
        },
        SessionFile {
            name: "host-error-backtrace",
            about: "As host-error, with the host's errors as kwctl hands them over under RUST_BACKTRACE=1: each goes\non after its first line with its causes and a stack backtrace. The summary is refused by RBAC.",
            summary: S::Error(FORBIDDEN_SUMMARY_WITH_BACKTRACE),
            list: L::Error(CONNECTION_REFUSED_LIST_WITH_BACKTRACE),
        },
        SessionFile {
            name: "no-labeled-nodes",
            about: "A cluster where no node publishes gpu-topology.io labels (the labeler is not deployed, or the\nautoscaled GPU pool is at zero). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(Vec::new()),
        },
        SessionFile {
            name: "nodes-only-two-hgx",
            about: "Two p5 (HGX H100) nodes whose kubelets run best-effort, for capacity.source: nodes: the\npolicy lists the Nodes only and never asks for the fleet summary.",
            summary: S::NotAsked,
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2)]),
        },
        SessionFile {
            name: "hgx-restricted-fleet",
            about: "4 HGX A100 nodes (8 GPUs, 4 + 4 per NUMA node, 56 CPUs per NUMA node, 2 of them reserved on\nnode 0) whose kubelets run topologyManagerPolicy restricted, scope pod, the static CPU Manager.\nNo fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 4)]),
        },
        SessionFile {
            name: "hgx-single-numa-node-56-cpu-fleet",
            about: "8 HGX A100 nodes, gpu-node-00 to gpu-node-07 (4 GPUs and 56 CPUs per NUMA node), whose\nkubelets run single-numa-node with the static CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 8)]),
        },
        SessionFile {
            name: "hgx-full-pcpus-only-fleet",
            about: "2 p5 (HGX H100, SMT-2) nodes whose static CPU Manager runs with full-pcpus-only: exclusive\nCPUs come in whole cores of 2 threads. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(p5(full_pcpus_only(BestEffort)), 2)]),
        },
        SessionFile {
            name: "hgx-container-scope-fleet",
            about: "3 HGX A100 nodes (4 + 4 GPUs) whose kubelets run restricted with topologyManagerScope\ncontainer: each container is aligned on its own. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Container)), 3)]),
        },
        SessionFile {
            name: "hgx-memory-manager-fleet",
            about: "2 HGX A100 nodes (about 503 GiB per NUMA node) whose kubelets run single-numa-node with the\nstatic CPU and Memory Managers: a container's memory is pinned to its GPUs' NUMA node.\nNo fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(memory_static(SingleNumaNode)), 2)]),
        },
        SessionFile {
            name: "hgx-memory-manager-best-effort-fleet",
            about: "2 HGX A100 nodes (about 503 GiB per NUMA node) whose kubelets run best-effort with\ntopologyManagerScope container and the static CPU and Memory Managers: the Topology Manager\nadmits every container, the Memory Manager's Allocate may still fail. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(
                hgx_a100(Kubelet {
                    memory: MemoryManagerPolicy::Static,
                    ..Kubelet::cpu_static(BestEffort, Container)
                }),
                2,
            )]),
        },
        SessionFile {
            name: "half-labeled-fleet",
            about: "A half-labeled fleet: 2 p5 nodes on best-effort carry gpu-topology.io labels; the other GPU\nnodes (a new node pool whose labeler has not run yet) carry none, so the listing, which selects\ngpu-topology.io/gpus, does not return them. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2)]),
        },
        SessionFile {
            name: "steering-fleet",
            about: "A fleet the model steers through: 2 HGX A100 on restricted, 2 HGX A100 on single-numa-node,\n2 A100 PCIe on best-effort (2 GPUs per NUMA node) and 3 g5.2xlarge (1 GPU). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 2),
                nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
                nodes(a100_pcie(Kubelet::cpu_static(BestEffort, Pod)), 2),
                nodes(g5_2xlarge(Kubelet::NONE), 3),
            ]),
        },
        SessionFile {
            name: "hgx-restricted-and-single-gpu-fleet",
            about: "2 HGX A100 nodes (4 + 4 GPUs, 56 CPUs per NUMA node) whose kubelets run restricted, and 3\ng5.2xlarge nodes (1 A10G GPU, the kubelet's default managers). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 2),
                nodes(g5_2xlarge(Kubelet::NONE), 3),
            ]),
        },
        SessionFile {
            name: "old-labeler-single-numa-node-fleet",
            about: "3 p5 (HGX H100) nodes whose kubelets run single-numa-node, still labeled by a labeler older\nthan the shape label: gpus 8, gpus-per-numa-max 4 and the manager policies, no per-NUMA-node\nlists, no options, no shape. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(old_labeler(p5(Kubelet::cpu_static(SingleNumaNode, Pod))), 3)]),
        },
        SessionFile {
            name: "one-hgx-restricted-node",
            about: "A one-node GPU fleet: 1 HGX A100 node (4 + 4 GPUs, 56 CPUs per NUMA node) whose kubelet runs\nrestricted, scope pod, the static CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 1)]),
        },
        SessionFile {
            name: "hgx-rdma-fleet",
            about: "GPUDirect RDMA nodes: 2 HGX A100 (4 + 4 GPUs) whose 8 InfiniBand HCAs (rdma/ib) sit 4 + 4 next\nto the GPUs, and 2 whose HCAs all sit on socket 0 (8 + 0); kubelets on restricted, scope pod, the\nstatic CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(with_devices(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), &[("rdma/ib", &[4, 4])]), 2),
                nodes(with_devices(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), &[("rdma/ib", &[8, 0])]), 2),
            ]),
        },
        SessionFile {
            name: "hgx-rdma-one-socket-fleet",
            about: "3 HGX A100 nodes (4 + 4 GPUs) whose 8 InfiniBand HCAs (rdma/ib) all sit on socket 0 (8 + 0);\nkubelets on restricted, scope pod, the static CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(
                with_devices(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), &[("rdma/ib", &[8, 0])]),
                3,
            )]),
        },
        SessionFile {
            name: "hgx-rdma-unpublished-fleet",
            about: "2 HGX A100 nodes on restricted whose labeler is not configured for rdma/ib: the HCAs are\nnot published, so the kubelet's answer for a pod that asks for them is unknown. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 2)]),
        },
        SessionFile {
            name: "mig-mixed-a100-fleet",
            about: "MIG under the device plugin's mixed strategy: 2 HGX A100 80GB nodes whose 8 GPUs are each cut\ninto 7 nvidia.com/mig-1g.10gb slices (28 + 28 per NUMA node, no whole nvidia.com/gpu left), and\n2 HGX A100 nodes without MIG; kubelets on single-numa-node, the static CPU Manager. No fleet\nsummary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(mig_mixed(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), "1g.10gb", 7), 2),
                nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
            ]),
        },
        SessionFile {
            name: "mig-single-h100-fleet",
            about: "MIG under the device plugin's single strategy: 2 p5 (8 H100 80GB) nodes whose GPUs are each\ncut into 7 1g.10gb slices, offered as nvidia.com/gpu (28 + 28 per NUMA node, product\nNVIDIA-H100-80GB-HBM3-MIG-1g.10gb); kubelets on single-numa-node, the static CPU Manager. No\nfleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(
                mig_single(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", 7),
                2,
            )]),
        },
        SessionFile {
            name: "grace-fleet",
            about: "Grace machines: 2 GB200 trays (34 NUMA nodes, 2 with CPUs) on kubelet 1.36 with\nmax-allowable-numa-nodes 34, 2 such trays on kubelet 1.35, 2 on 1.36 whose kubelets keep the\ndefault max-allowable-numa-nodes 8, and 1 GH200 (9 NUMA nodes) on 1.36; single-numa-node, scope\npod, the static CPU Manager. Labels as the labeler writes them for its gb200-tray and gh200\ntrees. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(gb200_tray(KubeletVersion::new(1, 36), 34), 2),
                nodes(gb200_tray(KubeletVersion::new(1, 35), 34), 2),
                nodes(gb200_tray(KubeletVersion::new(1, 36), 8), 2),
                nodes(gh200(KubeletVersion::new(1, 36), 34), 1),
            ]),
        },
        SessionFile {
            name: "gb200-default-max-numa-and-hgx-fleet",
            about: "2 GB200 trays (34 NUMA nodes) whose kubelets keep the default max-allowable-numa-nodes 8 with\nsingle-numa-node (their Topology Manager does not start, nor the kubelet), and 2 p5 (HGX H100)\non single-numa-node. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(gb200_tray(KubeletVersion::new(1, 36), 8), 2),
                nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
            ]),
        },
        SessionFile {
            name: "gb200-default-max-numa-fleet",
            about: "2 GB200 trays (34 NUMA nodes) whose kubelets keep the default max-allowable-numa-nodes 8 with\nsingle-numa-node: their Topology Manager does not start, nor the kubelet. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(gb200_tray(KubeletVersion::new(1, 36), 8), 2)]),
        },
        SessionFile {
            name: "gb200-kubelet-versions-fleet",
            about: "4 GB200 trays (34 NUMA nodes) with max-allowable-numa-nodes 34 and single-numa-node: 2 on\nkubelet 1.35, whose device hints range over every NUMA node, and 2 on 1.36, whose device hints\nrange over the GPUs' NUMA nodes only. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(gb200_tray(KubeletVersion::new(1, 35), 34), 2),
                nodes(gb200_tray(KubeletVersion::new(1, 36), 34), 2),
            ]),
        },
        SessionFile {
            name: "hgx-stale-labeler-fleet",
            about: "4 p5 (HGX H100) on single-numa-node, labeled by the kubernetes sink: the heartbeats of 3 are\ndated 2099 (fresh whenever the session is replayed: a heartbeat ahead of the clock is taken as\nfresh), that of ip-10-0-0-3.ec2.internal 2025-11-01 (its labeler stopped). No fleet summary\n(404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 3, "2099-12-03T11:55:00Z"),
                confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 1, "2025-11-01T00:00:00Z"),
            ]),
        },
        SessionFile {
            name: "fleet-summary-stale-labeler",
            about: "The fleet summary the summarizer writes for the fleet of hgx-stale-labeler-fleet.yml, with the\nlabelers' oldest heartbeats: ip-10-0-0-3.ec2.internal last confirmed on 2025-11-01. No Node is\nlisted.",
            summary: S::Of(
                vec![
                    confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 3, "2099-12-03T11:55:00Z"),
                    confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 1, "2025-11-01T00:00:00Z"),
                ],
                SUMMARY_WRITTEN_AT,
            ),
            list: L::NotAsked,
        },
        SessionFile {
            name: "gb200-reported-versions-fleet",
            about: "4 GB200 trays (34 NUMA nodes) with max-allowable-numa-nodes 34 and single-numa-node, labeled\nwithout a kubelet-version label (the nodefeature sink, no --kubelet-version), so one shape label:\ntheir Nodes report kubelet v1.36.2 on 2 and v1.35.4 on 2 (a kubelet upgrade half done). No fleet\nsummary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                reporting(gb200_tray_unversioned(34), 2, "v1.36.2"),
                reporting(gb200_tray_unversioned(34), 2, "v1.35.4"),
            ]),
        },
        SessionFile {
            name: "gb200-reported-1-36-fleet",
            about: "3 GB200 trays (34 NUMA nodes) with max-allowable-numa-nodes 34 and single-numa-node, labeled\nwithout a kubelet-version label (the nodefeature sink, no --kubelet-version); their Nodes report\nkubelet v1.36.2. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![reporting(gb200_tray_unversioned(34), 3, "v1.36.2")]),
        },
        SessionFile {
            name: "gb200-kubelet-1-35-fleet",
            about: "3 GB200 trays (34 NUMA nodes) on kubelet 1.35 with max-allowable-numa-nodes 34 and\nsingle-numa-node: every GPU pod's hint search walks 2^34 NUMA masks. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(gb200_tray(KubeletVersion::new(1, 35), 34), 3)]),
        },
        SessionFile {
            name: "mi300x-cpx-fleet",
            about: "2 nodes of 8 AMD MI300X in CPX/NPS4 (64 logical amd.com/gpu, 16 per NUMA node, 4 NUMA nodes\nof 96 CPUs) whose kubelets run single-numa-node, scope pod, the static CPU Manager. Labels as the\nlabeler writes them for its mi300x-cpx-nps4 tree, with the kubelet's. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(mi300x_cpx(Kubelet::cpu_static(SingleNumaNode, Pod)), 2)]),
        },
        SessionFile {
            name: "old-labeler-fleet",
            about: "A fleet half upgraded: 2 p5 (HGX H100) nodes on best-effort labeled by the current labeler, and\n3 HGX A100 nodes on best-effort still labeled by a labeler older than the shape label (counts\nand manager policies only: no per-NUMA-node lists, no options, no shape). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2),
                nodes(old_labeler(hgx_a100(Kubelet::cpu_static(BestEffort, Pod))), 3),
            ]),
        },
        SessionFile {
            name: "dra-hgx-h100-fleet",
            about: "A DRA fleet for claims: the NVIDIA DRA driver's and dranet's DeviceClasses, and 2 HGX H100 nodes\nwhose ResourceSlices publish 8 GPUs (4 per NUMA node, resource.kubernetes.io/numaNode) and 8 RDMA\nNICs (4 per NUMA node, also dra.net/numaNode). The policy lists the classes, then the slices.",
            summary: S::Absent,
            list: L::Dra(dra_hgx_fleet(Vec::new())),
        },
        SessionFile {
            name: "dra-hgx-h100-summary",
            about: "The DRA fleet of dra-hgx-h100-fleet.yml read from the fleet summary: the DeviceClasses are listed,\nthen the summarizer's ConfigMap holds the nodes' devices grouped (draDevices), so no ResourceSlice\nis listed.",
            summary: S::OfTheList(SUMMARY_WRITTEN_AT),
            list: L::Dra(dra_hgx_fleet(Vec::new())),
        },
        dra_pod_session(
            "dra-pod-double-gpu-fleet",
            "For a Pod naming the NVIDIA quick start's ResourceClaimTemplate gpu-test1/double-gpu (2 GPUs):\nthe template as get_resource answers it, then the DRA fleet of dra-hgx-h100-fleet.yml.",
            ("gpu-test1", "double-gpu"),
            r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}"#,
        ),
        dra_pod_session(
            "dra-pod-sixteen-gpus-fleet",
            "For a Pod naming ResourceClaimTemplate research/sixteen-gpus (16 GPUs, more than any node\npublishes): the template, then the DRA fleet of dra-hgx-h100-fleet.yml.",
            ("research", "sixteen-gpus"),
            r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":16}}]}"#,
        ),
        dra_pod_session(
            "dra-pod-single-gpu-twice-fleet",
            "For the NVIDIA quick start's Pod whose two containers each get a claim from ResourceClaimTemplate\ngpu-test1/single-gpu (1 GPU; v1beta1 in the demo, answered as v1): the template once, then the DRA\nfleet of dra-hgx-h100-fleet.yml.",
            ("gpu-test1", "single-gpu"),
            r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}"#,
        ),
        SessionFile {
            name: "dra-cpu-generated-claim-fleet",
            about: "For the ResourceClaim the controller generated from gpu-test1/double-gpu for Pod\ngpu-test1/trainer-0: 2 HGX H100 nodes publishing 8 GPUs and 8 RDMA NICs, and dra-driver-cpu's\ngrouped CPUs (56 per NUMA node). No fleet summary (404): the classes, the slices, then the owner\npod (uncached: its uid and containers' resources).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(
                Vec::new(),
                vec![crate::dra_fleets::DraPod {
                    namespace: "gpu-test1",
                    name: "trainer-0",
                    uid: "5f0c5d1e-8a7b-4c3d-9e2f-1a2b3c4d5e6f",
                    spec: TRAINER_POD_SPEC,
                }],
                (2, 0),
            )),
        },
        SessionFile {
            name: "dra-cpu-generated-claim-no-pod-fleet",
            about: "The fleet of dra-cpu-generated-claim-fleet.yml for a policy that may not read Pods: the classes\nand the slices, and no owner pod (the host refuses it before any exchange).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(Vec::new(), Vec::new(), (2, 0))),
        },
        SessionFile {
            name: "dra-cpu-pod-double-gpu-fleet",
            about: "For a Pod naming ResourceClaimTemplate gpu-test1/double-gpu (2 GPUs on one NUMA node): the\ntemplate, then 2 HGX H100 nodes whose dra-driver-cpu publishes grouped CPUs (56 per NUMA node).\nNo fleet summary (404).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(vec![double_gpu_get()], Vec::new(), (2, 0))),
        },
        SessionFile {
            name: "dra-cpu-half-fleet",
            about: "For a Pod naming ResourceClaimTemplate gpu-test1/double-gpu: the template, then 4 HGX H100\nnodes, 2 of which run dra-driver-cpu (grouped CPUs, 56 per NUMA node). No fleet summary (404).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(vec![double_gpu_get()], Vec::new(), (2, 2))),
        },
        SessionFile {
            name: "dra-vfio-fleet",
            about: "A DRA fleet of VFIO passthrough GPUs: 2 HGX H100 nodes whose NVIDIA DRA driver publishes\n8 VFIO devices (4 per NUMA node) with the Fabric Manager's partitions (partition1/2/4/8,\nFabricManagerPartitioning). No fleet summary (404): the classes, then the slices.",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(crate::dra_fleets::DraFleet {
                gets: Vec::new(),
                pods: Vec::new(),
                class_files: &["nvidia.yaml"],
                nodes: vec![crate::dra_fleets::DraNodes {
                    gpus_as: crate::dra_fleets::GpuDevices::Vfio,
                    nics_per_numa: &[],
                    ..dra_hgx_nodes("dra-hgx-vfio", 2, &[])
                }],
            }),
        },
        SessionFile {
            name: "fleet-summary-dra-extended-resource",
            about: "2 p5 (HGX H100) nodes on best-effort, in a fresh fleet summary written with --dra: DeviceClass\ngpu.nvidia.com maps nvidia.com/gpu (extendedResourceName, KEP-5004), and 2 more HGX H100 nodes\npublish its devices through the NVIDIA DRA driver.",
            summary: SummaryAnswer::OfWithDra(
                vec![nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2)],
                SUMMARY_WRITTEN_AT,
                dra_hgx_fleet(Vec::new()),
            ),
            list: ListAnswer::NotAsked,
        },
    ]
    .into_iter()
    .chain(crate::binding_sessions::session_files())
    .collect()
}

/// A session for a Pod naming one ResourceClaimTemplate (`namespace`,
/// `name`) whose `devices` are given as JSON: the template as get_resource
/// answers it, the summary's 404, then the DRA fleet of
/// `dra-hgx-h100-fleet`.
fn dra_pod_session(
    name: &'static str,
    about: &'static str,
    (namespace, template): (&'static str, &'static str),
    devices: &'static str,
) -> SessionFile {
    SessionFile {
        name,
        about,
        summary: SummaryAnswer::Absent,
        list: ListAnswer::Dra(dra_hgx_fleet(vec![crate::dra_fleets::DraGet {
            kind: "ResourceClaimTemplate",
            namespace,
            name: template,
            devices,
        }])),
    }
}

/// The template `gpu-test1/double-gpu` (completed), for a pod naming it.
fn double_gpu_get() -> crate::dra_fleets::DraGet {
    crate::dra_fleets::DraGet {
        kind: "ResourceClaimTemplate",
        namespace: "gpu-test1",
        name: "double-gpu",
        devices: DOUBLE_GPU_COMPLETED,
    }
}

/// The DRA fleet of `dra-hgx-h100-fleet`, after `gets`.
fn dra_hgx_fleet(gets: Vec<crate::dra_fleets::DraGet>) -> crate::dra_fleets::DraFleet {
    crate::dra_fleets::DraFleet {
        gets,
        pods: Vec::new(),
        class_files: &["nvidia.yaml", "nics.yaml"],
        nodes: vec![dra_hgx_nodes("dra-hgx", 2, &[])],
    }
}

/// `count` HGX H100 nodes publishing 8 full GPUs and 8 RDMA NICs (4 + 4
/// each), and dra-driver-cpu's grouped CPUs `cpus_per_numa` (none: it does
/// not run there).
fn dra_hgx_nodes(
    prefix: &'static str,
    count: usize,
    cpus_per_numa: &'static [usize],
) -> crate::dra_fleets::DraNodes {
    crate::dra_fleets::DraNodes {
        prefix,
        count,
        product: "NVIDIA H100 80GB HBM3",
        gpus_per_numa: &[4, 4],
        gpus_as: crate::dra_fleets::GpuDevices::Full,
        nics_per_numa: &[4, 4],
        cpus_per_numa,
    }
}

/// The template `gpu-test1/double-gpu` as the policy admitted it (its two
/// GPUs constrained to one NUMA node), as get_resource answers it.
const DOUBLE_GPU_COMPLETED: &str = r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}],"constraints":[{"requests":["gpu"],"matchAttribute":"resource.kubernetes.io/numaNode"}]}"#;

/// The pod `gpu-test1/trainer-0` that owns the claim generated from
/// `double-gpu`: one container using the whole claim, with 16 whole CPUs.
const TRAINER_POD_SPEC: &str = r#"{"containers":[{"name":"trainer","resources":{"claims":[{"name":"gpus"}],"limits":{"cpu":"16","memory":"64Gi"},"requests":{"cpu":"16","memory":"64Gi"}}}]}"#;

/// A DRA fleet where dra-driver-cpu runs on `with_cpus` of the HGX nodes
/// (grouped, 56 CPUs per NUMA node) and not on `without`.
fn dra_cpu_fleet(
    gets: Vec<crate::dra_fleets::DraGet>,
    pods: Vec<crate::dra_fleets::DraPod>,
    (with_cpus, without): (usize, usize),
) -> crate::dra_fleets::DraFleet {
    let mut nodes = vec![dra_hgx_nodes("dra-hgx-cpu", with_cpus, &[56, 56])];
    if without > 0 {
        nodes.push(dra_hgx_nodes("dra-hgx", without, &[]));
    }
    crate::dra_fleets::DraFleet {
        gets,
        pods,
        class_files: &["nvidia.yaml", "nics.yaml", "dra-cpu.yaml"],
        nodes,
    }
}

/// Where `make demo` reads its fleet, relative to the repository root.
pub const DEMO_SESSION_PATH: &str = "examples/cluster/fleet.yml";

/// The same fleet's Nodes as `kubectl get nodes -o json` prints them, for
/// `gpu-topology explain --nodes` (docs/cli.md), relative to the root.
pub const DEMO_NODES_PATH: &str = "examples/cluster/nodes.json";

/// The Nodes of [`demo_session_file`]'s fleet as `kubectl get nodes -o
/// json` prints them: a `List` of `Node` objects (pretty JSON).
pub fn demo_nodes_file() -> Result<String> {
    let ListAnswer::Nodes(groups) = demo_session_file().list else {
        anyhow::bail!("the demo fleet lists no Nodes");
    };
    let items: Vec<Value> = node_items(&groups, &LabelPrefix::default())
        .into_iter()
        .map(|mut item| {
            if let Some(node) = item.as_object_mut() {
                node.insert("apiVersion".to_owned(), json!("v1"));
                node.insert("kind".to_owned(), json!("Node"));
            }
            item
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
    Ok(serde_json::to_string_pretty(&list)? + "\n")
}

/// The fleet `make demo` replays ([`DEMO_SESSION_PATH`]): a cloud fleet
/// where each example shows one outcome. Its 8-GPU nodes all align (p5 on
/// restricted, HGX A100 on single-numa-node), so a pod whose GPUs span both
/// NUMA nodes but whose CPUs fit one is refused by every kubelet; 4-GPU pods
/// are steered away from the 1-GPU nodes and towards the shapes that align
/// them (not the A100 PCIe, whose 2 GPUs per NUMA node best-effort admits
/// unaligned).
pub fn demo_session_file() -> SessionFile {
    SessionFile {
        name: "fleet",
        about: "The fleet `make demo` replays: 2 p5.48xlarge (8 H100, 4+4 per NUMA node) whose kubelets run\nrestricted, 2 HGX A100 on premises (4+4) on single-numa-node, 3 g6.12xlarge (4 L4, one NUMA\nnode) with the kubelet's default managers, 2 Azure NC96ads A100 v4 (2+2 A100 PCIe) on best-effort\nand 2 g5.2xlarge (1 A10G). No fleet summary (404): the policy lists the Nodes.",
        summary: SummaryAnswer::Absent,
        list: ListAnswer::Nodes(vec![
            nodes(p5(Kubelet::cpu_static(Restricted, Pod)), 2),
            nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
            nodes(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE), 3),
            nodes(a100_pcie(Kubelet::cpu_static(BestEffort, Pod)), 2),
            nodes(g5_2xlarge(Kubelet::NONE), 2),
        ]),
    }
}
