//! The labeler's picture of a node: GPUs, how each pair is connected, and the
//! group sizes and interconnect the labels are derived from; NUMA nodes with
//! their CPUs, memory and hugepages. Pure data, no I/O.

use crate::cliques::Graph;
use gpu_topology::Interconnect;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// GPU vendors, recognised in sysfs by PCI vendor id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vendor {
    Nvidia,
    Amd,
    Intel,
}

impl Vendor {
    pub const ALL: [Vendor; 3] = [Vendor::Nvidia, Vendor::Amd, Vendor::Intel];

    /// PCI vendor ids: 0x10de NVIDIA, 0x1002 AMD (ATI), 0x8086 Intel.
    pub const fn pci_id(self) -> u32 {
        match self {
            Vendor::Nvidia => 0x10de,
            Vendor::Amd => 0x1002,
            Vendor::Intel => 0x8086,
        }
    }

    pub fn from_pci_id(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.pci_id() == id)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
            Vendor::Intel => "intel",
        }
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Groups of GPUs as the text summary lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Groups {
    /// Every maximal group of two or more GPUs, sorted.
    Listed(Vec<Vec<usize>>),
    /// More maximal groups than [`crate::cliques::MAX_LISTED_CLIQUES`].
    TooMany,
}

impl Groups {
    fn of(graph: &Graph) -> Self {
        match graph.maximal_cliques() {
            Some(cliques) => Groups::Listed(cliques.into_iter().filter(|c| c.len() > 1).collect()),
            None => Groups::TooMany,
        }
    }
}

/// PCI base class 0x03 is "display controller": VGA (0x0300), 3D (0x0302) and
/// other (0x0380, used by datacenter GPUs without a display engine).
pub const PCI_CLASS_DISPLAY: u32 = 0x03;

/// PCI base class 0x12 is "processing accelerator": AMD Instinct MI300 and
/// later report it (0x1200) instead of a display class.
pub const PCI_CLASS_ACCELERATOR: u32 = 0x12;

/// Is a PCI function of `vendor` with this 24-bit class code a GPU? Display
/// controllers of every GPU vendor, and AMD's processing accelerators (its
/// other functions have vendor id 0x1022, not 0x1002). Intel's accelerator
/// functions (NPUs, for example) are not GPUs.
pub fn is_gpu_class(vendor: Vendor, class: u32) -> bool {
    match class >> 16 {
        PCI_CLASS_DISPLAY => true,
        PCI_CLASS_ACCELERATOR => vendor == Vendor::Amd,
        _ => false,
    }
}

/// The PCIe path between two devices, as `nvidia-smi topo` names it, closest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PciePath {
    /// At most one PCIe bridge: behind the same switch.
    Pix,
    /// Several bridges but not the host bridge: deeper in the same switch tree.
    Pxb,
    /// Through a PCIe host bridge (the CPU).
    Phb,
    /// Between host bridges within one NUMA node.
    Node,
    /// Across the SMP interconnect (QPI/UPI/Infinity Fabric). Not proof of two
    /// NUMA nodes: VMs report SYS between GPUs on one node.
    Sys,
}

impl PciePath {
    /// PIX and PXB: both GPUs hang off one PCIe switch tree.
    pub const fn shares_switch(self) -> bool {
        matches!(self, PciePath::Pix | PciePath::Pxb)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            PciePath::Pix => "PIX",
            PciePath::Pxb => "PXB",
            PciePath::Phb => "PHB",
            PciePath::Node => "NODE",
            PciePath::Sys => "SYS",
        }
    }
}

/// A direct GPU-to-GPU link outside PCIe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FabricLink {
    /// A bonded set of `links` NVLinks (`NV#`).
    NvLink { links: u32 },
    /// AMD Infinity Fabric (XGMI).
    Xgmi,
}

/// What one source knows about one GPU pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PairLink {
    /// The fabric link, `None` when there is none (or the view hides it, see [`Links::fabric_visible`]).
    pub fabric: Option<FabricLink>,
    /// The PCIe path, `None` when the source does not show it (`nvidia-smi topo -m`
    /// prints `NV#` instead of the PCIe path for NVLinked pairs).
    pub pcie: Option<PciePath>,
}

impl PairLink {
    /// The cell as `nvidia-smi topo` prints it, `?` when unknown.
    pub fn cell(&self) -> String {
        match (self.fabric, self.pcie) {
            (Some(FabricLink::NvLink { links }), _) => format!("NV{links}"),
            (Some(FabricLink::Xgmi), _) => "XGMI".to_owned(),
            (None, Some(path)) => path.as_str().to_owned(),
            (None, None) => "?".to_owned(),
        }
    }
}

/// Pairwise links between the GPUs of one source, symmetric by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Links {
    size: usize,
    cells: Vec<PairLink>,
    /// False when the source cannot show fabric links at all (`nvidia-smi topo -mp`).
    pub fabric_visible: bool,
}

/// A group size that the source cannot pin down: it lies in `lower..=upper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unresolved {
    pub lower: u32,
    pub upper: u32,
}

impl Links {
    pub fn new(size: usize, fabric_visible: bool) -> Self {
        Self {
            size,
            cells: vec![PairLink::default(); size * size],
            fabric_visible,
        }
    }

    /// Links from a square matrix of per-pair cells (rows may carry extra
    /// columns, e.g. NICs, which are ignored). Refuses an asymmetric matrix by
    /// returning the first pair `(a, b)` whose two cells differ.
    pub fn from_square<T: PartialEq + Copy>(
        cells: &[Vec<T>],
        fabric_visible: bool,
        link: impl Fn(T) -> PairLink,
    ) -> Result<Self, (usize, usize)> {
        let size = cells.len();
        let mut links = Links::new(size, fabric_visible);
        for (a, row) in cells.iter().enumerate() {
            for (b, &forward) in row.iter().enumerate().take(size).skip(a + 1) {
                if cells.get(b).and_then(|r| r.get(a)) != Some(&forward) {
                    return Err((a, b));
                }
                links.set(a, b, link(forward));
            }
        }
        Ok(links)
    }

    pub fn len(&self) -> usize {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Sets the link of pair `a`–`b` (both directions). Out-of-range pairs are ignored.
    pub fn set(&mut self, a: usize, b: usize, link: PairLink) {
        if a < self.size && b < self.size {
            self.cells[a * self.size + b] = link;
            self.cells[b * self.size + a] = link;
        }
    }

    pub fn get(&self, a: usize, b: usize) -> Option<PairLink> {
        (a < self.size && b < self.size).then(|| self.cells[a * self.size + b])
    }

    fn pairs(&self) -> impl Iterator<Item = (usize, usize, PairLink)> + '_ {
        (0..self.size).flat_map(move |a| {
            (a + 1..self.size).map(move |b| (a, b, self.cells[a * self.size + b]))
        })
    }

    fn graph(&self, edge: impl Fn(&PairLink) -> bool) -> Option<Graph> {
        let mut graph = Graph::new(self.size)?;
        for (a, b, link) in self.pairs() {
            if edge(&link) {
                graph.connect(a, b);
            }
        }
        Some(graph)
    }

    /// Maximal cliques of GPUs pairwise linked by NVLink/XGMI (two or more GPUs),
    /// or `None` when fabric links are not visible or there are too many GPUs.
    pub fn fabric_cliques(&self) -> Option<Groups> {
        if !self.fabric_visible {
            return None;
        }
        let graph = self.graph(|link| link.fabric.is_some())?;
        Some(Groups::of(&graph))
    }

    /// Largest group of GPUs pairwise linked by NVLink/XGMI; 1 when no pair is.
    pub fn fabric_group_max(&self) -> Option<u32> {
        if !self.fabric_visible {
            return None;
        }
        let graph = self.graph(|link| link.fabric.is_some())?;
        u32::try_from(graph.max_clique_size()).ok()
    }

    /// Largest group of GPUs pairwise PIX/PXB. Pairs whose PCIe path is hidden
    /// may or may not share a switch, so the answer is exact only when counting
    /// them as sharing and as not sharing gives the same size.
    pub fn pcie_switch_group_max(&self) -> Option<Result<u32, Unresolved>> {
        let size = |edge: &dyn Fn(&PairLink) -> bool| -> Option<u32> {
            u32::try_from(self.graph(edge)?.max_clique_size()).ok()
        };
        let lower = size(&|link| link.pcie.is_some_and(PciePath::shares_switch))?;
        let upper = size(&|link| link.pcie.is_none_or(PciePath::shares_switch))?;
        Some(if lower == upper {
            Ok(lower)
        } else {
            Err(Unresolved { lower, upper })
        })
    }

    /// Maximal groups of GPUs pairwise PIX/PXB (two or more GPUs), counting only known paths.
    pub fn pcie_switch_groups(&self) -> Groups {
        self.graph(|link| link.pcie.is_some_and(PciePath::shares_switch))
            .map_or(Groups::Listed(Vec::new()), |graph| Groups::of(&graph))
    }

    /// The fastest GPU-to-GPU interconnect, by this rule:
    /// - `xgmi` when any pair is XGMI-linked (AMD);
    /// - `nvswitch` when the source reports an NVSwitch, or when every pair of more
    ///   than [`MAX_DIRECT_NVLINK_MESH`] GPUs is NVLinked: no NVIDIA part has enough
    ///   NVLink ports to fully connect more GPUs directly, so such a mesh is switched;
    /// - `nvlink` when some pair is NVLinked;
    /// - `pcie` otherwise.
    ///
    /// `None` when fabric links are not visible, for a single GPU (there is no
    /// GPU-to-GPU path to describe), or when NVLink and XGMI are both reported.
    pub fn interconnect(&self, nvswitch_reported: bool) -> Option<Interconnect> {
        if !self.fabric_visible || self.size < 2 {
            return None;
        }
        let fabrics: Vec<Option<FabricLink>> = self.pairs().map(|(_, _, l)| l.fabric).collect();
        let nvlinked = fabrics
            .iter()
            .filter(|f| matches!(f, Some(FabricLink::NvLink { .. })))
            .count();
        let xgmi = fabrics.iter().any(|f| matches!(f, Some(FabricLink::Xgmi)));
        match (nvlinked, xgmi) {
            (0, true) => Some(Interconnect::Xgmi),
            (_, true) => None,
            (0, false) => Some(Interconnect::Pcie),
            (n, false)
                if nvswitch_reported
                    || (n == fabrics.len() && self.size > MAX_DIRECT_NVLINK_MESH) =>
            {
                Some(Interconnect::NvSwitch)
            }
            (_, false) => Some(Interconnect::NvLink),
        }
    }
}

/// Most GPUs NVIDIA connects all-to-all with direct NVLinks (HGX A100 4-GPU).
pub const MAX_DIRECT_NVLINK_MESH: usize = 4;

/// The NUMA placement of one GPU as a topology tool reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NumaReading {
    Node(u32),
    /// The tool printed `N/A` or -1.
    NotAvailable,
    /// The tool's output has no NUMA column (old drivers).
    NotReported,
}

impl NumaReading {
    pub fn node(self) -> Option<u32> {
        match self {
            NumaReading::Node(node) => Some(node),
            NumaReading::NotAvailable | NumaReading::NotReported => None,
        }
    }
}

impl fmt::Display for NumaReading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumaReading::Node(node) => write!(f, "{node}"),
            NumaReading::NotAvailable => f.write_str("N/A"),
            NumaReading::NotReported => f.write_str("not reported"),
        }
    }
}

/// Which topology tool a report came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    Nvml,
    NvidiaSmi,
    RocmSmi,
}

impl Tool {
    pub const fn vendor(self) -> Vendor {
        match self {
            Tool::Nvml | Tool::NvidiaSmi => Vendor::Nvidia,
            Tool::RocmSmi => Vendor::Amd,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Tool::Nvml => "NVML",
            Tool::NvidiaSmi => "nvidia-smi",
            Tool::RocmSmi => "rocm-smi",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One GPU as a topology tool lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGpu {
    /// The tool's name for it, e.g. `GPU0`.
    pub name: String,
    pub pci_address: Option<String>,
    pub numa: NumaReading,
}

/// Everything one topology tool reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolReport {
    pub tool: Tool,
    pub gpus: Vec<ToolGpu>,
    pub links: Links,
    /// The tool saw an NVSwitch (NVML only).
    pub nvswitch: bool,
    /// The report is a live tool's last good one, standing in for a run that
    /// failed: it may predate a change of the machine (a GPU lost).
    pub from_earlier_run: bool,
}

/// One GPU found in sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciGpu {
    /// PCI address, e.g. `0000:07:00.0`.
    pub address: String,
    pub vendor: Vendor,
    /// 24-bit PCI class code.
    pub class: u32,
    /// `numa_node`, `None` for -1 (unknown) or when the kernel has no NUMA support.
    pub numa: Option<u32>,
}

/// CPU (or NUMA node) ids, sorted.
pub type IdSet = BTreeSet<u32>;

/// CPUs, memory and hugepages of one NUMA node, from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NumaNode {
    /// The CPUs of its `cpulist`.
    pub cpus: IdSet,
    /// `MemTotal` of its `meminfo`.
    pub memory_kib: u64,
    /// Preallocated hugepages (`nr_hugepages`) by page size in KiB: every
    /// size its `hugepages/` directory lists, none without one.
    pub hugepages: BTreeMap<u64, u64>,
    /// Its row of the SLIT distances (`distance`), to every node in id
    /// order; `None` when the tree has no `distance` file.
    pub distances: Option<Vec<u32>>,
}

/// Where one online CPU sits, from its `topology/` attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPlace {
    /// `core_id`: unique within a package only.
    pub core_id: u64,
    /// `physical_package_id`: the socket.
    pub package: u64,
    /// How many CPUs its `thread_siblings_list` names, itself included.
    pub siblings: usize,
}

/// The CPUs the kernel has online (`devices/system/cpu/online`) and, when the
/// tree has their `topology/` directories, where each sits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuView {
    pub online: IdSet,
    pub places: Option<BTreeMap<u32, CpuPlace>>,
}

/// A PCI function of any kind, for the device-plugin resources besides
/// the GPUs ([`crate::devices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciFunction {
    /// PCI address, e.g. `0000:0c:00.0`.
    pub address: String,
    pub vendor: u32,
    /// `device`, when the tree has it.
    pub device: Option<u32>,
    /// 24-bit PCI class code.
    pub class: u32,
    /// `numa_node`, `None` for -1 or without NUMA support.
    pub numa: Option<u32>,
    /// An SR-IOV virtual function (it has `physfn`).
    pub is_virtual_function: bool,
    /// The addresses of its SR-IOV virtual functions (`virtfn*` links).
    pub virtual_functions: Vec<String>,
}

/// A device of `class/infiniband` or `class/net`, and the PCI function it
/// sits on (`device`; `None` for a virtual netdev such as a bridge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassDevice {
    pub name: String,
    pub pci_address: Option<String>,
}

/// What sysfs shows: GPUs (sorted by PCI address), NUMA nodes by id, CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SysfsView {
    pub gpus: Vec<PciGpu>,
    /// Every PCI function, sorted by address.
    pub pci_functions: Vec<PciFunction>,
    /// `class/infiniband/*`, sorted by name (none without the directory).
    pub rdma_devices: Vec<ClassDevice>,
    /// `class/net/*`, sorted by name (none without the directory).
    pub net_devices: Vec<ClassDevice>,
    /// Every `devices/system/node/node<N>` directory: the NUMA nodes the
    /// kubelet's cAdvisor lists (`GetNodesInfo` globs the directories).
    pub numa_nodes: BTreeMap<u32, NumaNode>,
    /// `devices/system/node/online`, when the tree has it.
    pub online_numa_nodes: Option<IdSet>,
    /// `devices/system/cpu`, when the tree has its `online` list.
    pub cpus: Option<CpuView>,
    /// The AMD GPUs' compute partitions ([`crate::sources::amd_partitions`]).
    pub amd_partitions: AmdPartitionView,
}

/// What sysfs shows of the AMD GPUs' compute partitions, as the AMD device
/// plugin reads it (see [`crate::sources::amd_partitions`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AmdPartitionView {
    /// Each AMD GPU's partition files, by PCI address.
    pub gpus: BTreeMap<String, AmdGpuPartitions>,
    /// `devices/platform/amdgpu_xcp_*`, sorted by name.
    pub xcps: Vec<AmdXcp>,
    /// The `drm_render_minor` of every KFD topology node that has one, or
    /// `None` when the tree has no `class/kfd/kfd/topology/nodes`.
    pub kfd_render_minors: Option<IdSet>,
}

/// One AMD GPU's (PCI function's) partition facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AmdGpuPartitions {
    /// `current_compute_partition`, trimmed (`CPX`), when there is one.
    pub compute: Option<String>,
    /// `current_memory_partition`, trimmed (`NPS4`), when there is one.
    pub memory: Option<String>,
    /// The minor of its `drm/card*/dev`.
    pub card_minor: Option<u32>,
}

/// One compute partition beyond a GPU's first (`amdgpu_xcp_<n>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmdXcp {
    pub name: String,
    /// The minor of its `drm/card*/dev`.
    pub card_minor: Option<u32>,
    /// The minor of its `drm/renderD<minor>`.
    pub render_minor: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const NV: PairLink = PairLink {
        fabric: Some(FabricLink::NvLink { links: 12 }),
        pcie: None,
    };
    const XGMI: PairLink = PairLink {
        fabric: Some(FabricLink::Xgmi),
        pcie: None,
    };
    const fn pcie(path: PciePath) -> PairLink {
        PairLink {
            fabric: None,
            pcie: Some(path),
        }
    }

    fn uniform(size: usize, link: PairLink) -> Links {
        let mut links = Links::new(size, true);
        for a in 0..size {
            for b in a + 1..size {
                links.set(a, b, link);
            }
        }
        links
    }

    #[rstest]
    #[case::eight_all_nvlinked(uniform(8, NV), false, Some(Interconnect::NvSwitch))]
    #[case::four_all_nvlinked_direct(uniform(4, NV), false, Some(Interconnect::NvLink))]
    #[case::four_nvlinked_nvml_saw_switch(uniform(4, NV), true, Some(Interconnect::NvSwitch))]
    #[case::xgmi(uniform(4, XGMI), false, Some(Interconnect::Xgmi))]
    #[case::all_sys(uniform(4, pcie(PciePath::Sys)), false, Some(Interconnect::Pcie))]
    #[case::single_gpu(uniform(1, NV), false, None)]
    fn interconnect_rule(
        #[case] links: Links,
        #[case] nvswitch: bool,
        #[case] expected: Option<Interconnect>,
    ) {
        assert_eq!(links.interconnect(nvswitch), expected);
    }

    #[test]
    fn hidden_pcie_paths_leave_the_switch_group_unresolved() {
        // Two NVLinked GPUs: `topo -m` hides whether they share a PCIe switch.
        let mut links = uniform(4, pcie(PciePath::Sys));
        links.set(0, 1, NV);
        assert_eq!(
            links.pcie_switch_group_max(),
            Some(Err(Unresolved { lower: 1, upper: 2 }))
        );
    }

    #[test]
    fn pix_and_pxb_form_one_switch_group() {
        let mut links = uniform(4, pcie(PciePath::Pxb));
        links.set(0, 1, pcie(PciePath::Pix));
        links.set(2, 3, pcie(PciePath::Pix));
        assert_eq!(links.pcie_switch_group_max(), Some(Ok(4)));
        assert_eq!(
            links.pcie_switch_groups(),
            Groups::Listed(vec![vec![0, 1, 2, 3]])
        );
    }

    #[test]
    fn a_view_without_fabric_links_knows_no_fabric_group() {
        let links = Links::new(2, false);
        assert_eq!(links.fabric_group_max(), None);
        assert_eq!(links.interconnect(false), None);
    }
}
