//! Reconciliation: turns what every source reported into the node's labels.
//!
//! Rules, in order of authority:
//! - GPUs: sysfs PCI devices of the selected vendor (an AMD GPU's compute
//!   partitions each count, see [`amd_partitions`]); without sysfs, the tools,
//!   which must then agree on the count. A tool listing a different number of
//!   GPUs than sysfs (e.g. a container seeing only some GPUs) is ignored.
//! - NUMA placement: sysfs `numa_node` (every GPU on the one node when sysfs shows
//!   a single NUMA node), else NVML, else the tools' NUMA columns. Every source
//!   that knows the placement of all GPUs must agree, or the NUMA labels are left out.
//! - Links: NVML, then nvidia-smi or rocm-smi. Each label is published only when
//!   every source that can tell agrees on its value.
//!
//! - The kubelet model's facts (per NUMA node GPUs, CPUs, reserved CPUs,
//!   memory and hugepages; SMT; the managers' policies and options): see
//!   [`facts`].
//!
//! Whatever cannot be known is left out, with a warning saying why.

use crate::cliques::MAX_VERTICES;
use crate::model::{PciGpu, SysfsView, ToolReport, Vendor};
use crate::parse::kubelet::KubeletSettings;
use crate::parse::nvidia_smi_query::GpuFabric;
use gpu_topology::{Interconnect, KubeletVersion, LabelKey, NodeTopology};
use std::collections::{BTreeMap, BTreeSet};

mod amd_partitions;
mod cpu_manager;
pub mod devices;
mod facts;
mod nvlink_clique;

/// Which GPUs the labels describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VendorChoice {
    /// The only vendor present; labels are left out when several are.
    #[default]
    Auto,
    Only(Vendor),
}

/// Everything the sources reported; `None` for a source that is disabled or unavailable.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub sysfs: Option<SysfsView>,
    /// Topology tool reports, most trusted first (NVML, nvidia-smi, rocm-smi).
    pub tools: Vec<ToolReport>,
    pub kubelet: Option<KubeletSettings>,
    pub vendor: VendorChoice,
    /// The device-plugin resources besides the GPUs to count in sysfs.
    pub devices: crate::devices::DeviceConfig,
    /// The MIG strategy and devices.
    pub mig: devices::MigInput,
    /// The kubelet's version (`--kubelet-version`), when known.
    pub kubelet_version: Option<KubeletVersion>,
    /// The GPUs' fabric registration (`nvidia-smi -q`), for `gpu-clique`.
    pub fabric: Option<Vec<GpuFabric>>,
}

/// What the node's labels say, how they were derived, and what is left out and why.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub topology: NodeTopology,
    pub summary: Summary,
    pub warnings: Vec<String>,
}

impl Outcome {
    /// Sets the kubelet's version (as its Node reports it, which the
    /// labeler learns only from an API answer, after reconciling) and the
    /// shape that follows.
    pub fn set_kubelet_version(&mut self, version: KubeletVersion) {
        self.topology.kubelet_version = Some(version);
        facts::set_shape(&mut self.topology);
    }
}

/// The topology behind the labels, for the human-readable summary.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub vendor: Option<Vendor>,
    /// The selected vendor's GPUs in sysfs.
    pub sysfs_gpus: Vec<PciGpu>,
    /// GPUs per NUMA node, and the source that placed them.
    pub numa: Option<(String, BTreeMap<u32, u32>)>,
    /// The most trusted tool report that matches the GPU count.
    pub links: Option<ToolReport>,
}

/// Reconciles `inputs` into labels, summary and warnings. The node's shape
/// is set last, from the facts established ([`facts`]).
pub fn reconcile(inputs: &Inputs) -> Outcome {
    let mut outcome = Outcome::default();
    if let Some(kubelet) = &inputs.kubelet {
        outcome.topology.topology_manager_policy = Some(kubelet.topology_manager_policy);
        outcome.topology.topology_manager_scope = Some(kubelet.topology_manager_scope);
        outcome.topology.cpu_manager_policy = Some(kubelet.cpu_manager_policy);
    }
    outcome.topology.kubelet_version = inputs.kubelet_version;
    let gpus_per_node = gpu_labels(inputs, &mut outcome);
    if let Some(fabrics) = &inputs.fabric {
        nvlink_clique::gpu_clique(fabrics, &mut outcome);
    }
    facts::node_facts(inputs, gpus_per_node.as_ref(), &mut outcome);
    if let Some(view) = &inputs.sysfs {
        devices::network_devices(&inputs.devices, view, &mut outcome);
    }
    devices::mig_devices(&inputs.mig, inputs.sysfs.as_ref(), &mut outcome);
    facts::set_shape(&mut outcome.topology);
    outcome
}

/// The GPU labels. Returns the GPUs per NUMA node when their placement is
/// known (empty when the node has no GPU), for `numa-gpus`.
fn gpu_labels(inputs: &Inputs, outcome: &mut Outcome) -> Option<BTreeMap<u32, u32>> {
    let vendor = match select_vendor(inputs) {
        Ok(Some(vendor)) => vendor,
        Ok(None) => {
            // sysfs shows no GPU of any vendor: a truthful zero.
            outcome.topology.gpus = Some(0);
            return Some(BTreeMap::new());
        }
        Err(warning) => {
            outcome.warnings.push(warning);
            return None;
        }
    };
    outcome.summary.vendor = Some(vendor);
    let sysfs_gpus: Option<Vec<PciGpu>> = inputs.sysfs.as_ref().map(|view| {
        view.gpus
            .iter()
            .filter(|g| g.vendor == vendor)
            .cloned()
            .collect()
    });
    // AMD compute partitions count as the GPUs the device plugin exposes.
    let sysfs_gpus = match (vendor, &inputs.sysfs, sysfs_gpus) {
        (Vendor::Amd, Some(view), Some(gpus)) => {
            Some(amd_partitions::logical_gpus(view, gpus, outcome))
        }
        (_, _, gpus) => gpus,
    };
    let candidates: Vec<&ToolReport> = inputs
        .tools
        .iter()
        .filter(|t| t.tool.vendor() == vendor)
        .collect();
    let (count, tools) = gpu_count(sysfs_gpus.as_deref(), &candidates, &mut outcome.warnings)?;
    outcome.summary.sysfs_gpus = sysfs_gpus.clone().unwrap_or_default();
    outcome.summary.links = tools.first().map(|t| (*t).clone());
    outcome.topology.gpus = u32::try_from(count).ok();
    if count == 0 {
        return Some(BTreeMap::new());
    }
    place_numa(
        inputs.sysfs.as_ref(),
        sysfs_gpus.as_deref(),
        &tools,
        outcome,
    );
    derive_links(count, &tools, outcome);
    outcome
        .summary
        .numa
        .as_ref()
        .map(|(_, placement)| placement.clone())
}

fn select_vendor(inputs: &Inputs) -> Result<Option<Vendor>, String> {
    let present: BTreeSet<Vendor> = match &inputs.sysfs {
        Some(view) => view.gpus.iter().map(|g| g.vendor).collect(),
        None => inputs
            .tools
            .iter()
            .filter(|t| !t.gpus.is_empty())
            .map(|t| t.tool.vendor())
            .collect(),
    };
    match (inputs.vendor, present.len()) {
        (VendorChoice::Only(vendor), _) => Ok(Some(vendor)),
        (VendorChoice::Auto, 1) => Ok(present.first().copied()),
        (VendorChoice::Auto, 0) if inputs.sysfs.is_some() => {
            match inputs.tools.iter().find(|t| !t.gpus.is_empty()) {
                // A tool cannot list GPUs that do not exist: sysfs misses them.
                Some(tool) => Err(format!(
                    "sysfs shows no GPU but {} lists {}: GPU labels are left out (is the host's /sys mounted?)",
                    tool.tool,
                    tool.gpus.len()
                )),
                None => Ok(None),
            }
        }
        (VendorChoice::Auto, 0) => Err(
            "no GPU source (sysfs disabled and no nvidia-smi, NVML or rocm-smi output): GPU labels are left out"
                .to_owned(),
        ),
        (VendorChoice::Auto, _) => Err(format!(
            "GPUs of several vendors ({}): GPU labels are left out; choose one with --gpu-vendor",
            present.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// The GPU count, and the tools whose reports cover exactly those GPUs.
fn gpu_count<'a>(
    sysfs_gpus: Option<&[PciGpu]>,
    tools: &[&'a ToolReport],
    warnings: &mut Vec<String>,
) -> Option<(usize, Vec<&'a ToolReport>)> {
    // A report from an earlier run (standing in for a failed one) that no
    // longer matches sysfs predates a change of the machine, such as a GPU
    // that fell off the bus: it is stale, not evidence that sysfs misses GPUs.
    let tools: Vec<&ToolReport> = match sysfs_gpus {
        Some(gpus) => tools
            .iter()
            .filter(|t| {
                let stale = t.from_earlier_run && t.gpus.len() != gpus.len();
                if stale {
                    warnings.push(format!(
                        "{}'s last good report lists {} GPUs but sysfs now shows {}: it is not used",
                        t.tool,
                        t.gpus.len(),
                        gpus.len()
                    ));
                }
                !stale
            })
            .copied()
            .collect(),
        None => tools.to_vec(),
    };
    let tools = tools.as_slice();
    let count = match sysfs_gpus {
        Some(gpus) => gpus.len(),
        None => {
            let counts: BTreeSet<usize> = tools.iter().map(|t| t.gpus.len()).collect();
            if counts.len() != 1 {
                warnings.push(format!(
                    "the topology tools disagree on the GPU count ({}) and sysfs is not read: GPU labels are left out",
                    describe_counts(tools)
                ));
                return None;
            }
            counts.first().copied()?
        }
    };
    if let Some(tool) = tools.iter().find(|t| t.gpus.len() > count) {
        // A tool cannot list more GPUs than exist: sysfs misses some (a PCI
        // class it does not know, or partitions the tool counts as GPUs).
        warnings.push(format!(
            "{} lists {} GPUs but sysfs shows {count}: GPU labels are left out",
            tool.tool,
            tool.gpus.len()
        ));
        return None;
    }
    let mut matching = Vec::new();
    for tool in tools {
        if tool.gpus.len() == count {
            matching.push(*tool);
        } else {
            warnings.push(format!(
                "{} lists {} GPUs but sysfs shows {count}; its report is ignored (does the labeler see all GPUs?)",
                tool.tool,
                tool.gpus.len()
            ));
        }
    }
    Some((count, matching))
}

fn describe_counts(tools: &[&ToolReport]) -> String {
    tools
        .iter()
        .map(|t| format!("{}: {}", t.tool, t.gpus.len()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// NUMA placement from every source that knows it for all GPUs, as a histogram.
fn place_numa(
    sysfs: Option<&SysfsView>,
    sysfs_gpus: Option<&[PciGpu]>,
    tools: &[&ToolReport],
    outcome: &mut Outcome,
) {
    let mut placements: Vec<(String, BTreeMap<u32, u32>)> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    if let (Some(view), Some(gpus)) = (sysfs, sysfs_gpus) {
        let single_node = (view.numa_nodes.len() == 1)
            .then(|| view.numa_nodes.keys().next().copied())
            .flatten();
        let nodes: Option<Vec<u32>> = gpus.iter().map(|g| g.numa.or(single_node)).collect();
        match nodes {
            Some(nodes) => placements.push(("sysfs".to_owned(), histogram(nodes))),
            None => unknown.push(format!(
                "sysfs numa_node is -1 for some GPUs on a node with {} NUMA nodes",
                view.numa_nodes.len()
            )),
        }
    }
    for tool in tools {
        let nodes: Option<Vec<u32>> = tool.gpus.iter().map(|g| g.numa.node()).collect();
        match nodes {
            Some(nodes) => placements.push((tool.tool.to_string(), histogram(nodes))),
            None => unknown.push(format!(
                "{} gives no NUMA node for {}",
                tool.tool,
                tool.gpus
                    .iter()
                    .filter(|g| g.numa.node().is_none())
                    .map(|g| format!("{} ({})", g.name, g.numa))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    let numa_labels = [
        LabelKey::GpusPerNumaMax,
        LabelKey::NumaNodes,
        LabelKey::CpusPerNuma,
        LabelKey::MemoryPerNumaGib,
    ];
    let Some((source, placement)) = placements.first().cloned() else {
        let why = if unknown.is_empty() {
            "no source reports it".to_owned()
        } else {
            unknown.join("; ")
        };
        outcome.warnings.push(format!(
            "NUMA placement of the GPUs is unknown ({why}): {} left out",
            names(&numa_labels)
        ));
        return;
    };
    if let Some((other, disagreeing)) = placements.iter().find(|(_, p)| *p != placement) {
        outcome.warnings.push(format!(
            "{source} places GPUs on NUMA nodes {placement:?} but {other} says {disagreeing:?}: {} left out",
            names(&numa_labels)
        ));
        return;
    }
    outcome.topology.gpus_per_numa_max = placement.values().max().copied();
    outcome.topology.numa_nodes = u32::try_from(placement.len()).ok();
    if let Some(view) = sysfs {
        node_resources(view, &placement, outcome);
    }
    outcome.summary.numa = Some((source, placement));
}

/// Smallest CPU count and memory among the NUMA nodes that hold GPUs.
fn node_resources(view: &SysfsView, placement: &BTreeMap<u32, u32>, outcome: &mut Outcome) {
    let nodes: Option<Vec<_>> = placement.keys().map(|id| view.numa_nodes.get(id)).collect();
    let Some(nodes) = nodes else {
        outcome.warnings.push(format!(
            "GPUs sit on NUMA nodes {:?} but sysfs lists nodes {:?}: {} left out",
            placement.keys().collect::<Vec<_>>(),
            view.numa_nodes.keys().collect::<Vec<_>>(),
            names(&[LabelKey::CpusPerNuma, LabelKey::MemoryPerNumaGib])
        ));
        return;
    };
    outcome.topology.cpus_per_numa = nodes
        .iter()
        .map(|n| n.cpus.len())
        .min()
        .and_then(|cpus| u32::try_from(cpus).ok());
    outcome.topology.memory_per_numa_gib = nodes
        .iter()
        .map(|n| n.memory_kib / KIB_PER_GIB)
        .min()
        .and_then(|gib| u32::try_from(gib).ok());
}

const KIB_PER_GIB: u64 = 1024 * 1024;

fn histogram(nodes: Vec<u32>) -> BTreeMap<u32, u32> {
    let mut counts = BTreeMap::new();
    for node in nodes {
        *counts.entry(node).or_insert(0) += 1;
    }
    counts
}

/// Link-derived labels; each only when every source that can tell agrees.
fn derive_links(count: usize, tools: &[&ToolReport], outcome: &mut Outcome) {
    if count == 1 {
        // A single GPU is trivially a group of one, whatever the links.
        outcome.topology.nvlink_group_max = Some(1);
        outcome.topology.pcie_switch_group_max = Some(1);
        return;
    }
    if count > MAX_VERTICES {
        outcome.warnings.push(format!(
            "{count} GPUs are more than the {MAX_VERTICES} whose links the labeler can group: {} left out",
            names(&[
                LabelKey::NvlinkGroupMax,
                LabelKey::PcieSwitchGroupMax,
                LabelKey::Interconnect
            ])
        ));
        return;
    }
    if tools.is_empty() {
        outcome.warnings.push(format!(
            "no link source (NVML, nvidia-smi or rocm-smi) covers the {count} GPUs: {} left out",
            names(&[
                LabelKey::NvlinkGroupMax,
                LabelKey::PcieSwitchGroupMax,
                LabelKey::Interconnect
            ])
        ));
        return;
    }
    let fabric: Vec<(String, u32)> = tools
        .iter()
        .filter_map(|t| Some((t.tool.to_string(), t.links.fabric_group_max()?)))
        .collect();
    if fabric.is_empty() {
        outcome.warnings.push(format!(
            "{} left out: {} shows no NVLink/XGMI state (a `nvidia-smi topo -mp` view, or an excerpt without legend)",
            names(&[LabelKey::NvlinkGroupMax, LabelKey::Interconnect]),
            tools.iter().map(|t| t.tool.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    outcome.topology.nvlink_group_max =
        agreed(LabelKey::NvlinkGroupMax, &fabric, &mut outcome.warnings);

    let mut unresolved = Vec::new();
    let pcie: Vec<(String, u32)> = tools
        .iter()
        .filter_map(|t| match t.links.pcie_switch_group_max()? {
            Ok(size) => Some((t.tool.to_string(), size)),
            Err(range) => {
                unresolved.push(format!(
                    "{} hides the PCIe path of some pairs (between {} and {})",
                    t.tool, range.lower, range.upper
                ));
                None
            }
        })
        .collect();
    if pcie.is_empty() && !unresolved.is_empty() {
        outcome.warnings.push(format!(
            "{} left out: {}",
            LabelKey::PcieSwitchGroupMax.name(),
            unresolved.join("; ")
        ));
    }
    outcome.topology.pcie_switch_group_max =
        agreed(LabelKey::PcieSwitchGroupMax, &pcie, &mut outcome.warnings);

    let interconnect: Vec<(String, Interconnect)> = tools
        .iter()
        .filter_map(|t| Some((t.tool.to_string(), t.links.interconnect(t.nvswitch)?)))
        .collect();
    outcome.topology.interconnect =
        agreed(LabelKey::Interconnect, &interconnect, &mut outcome.warnings);
}

/// The value every source gives, or `None` with a warning when they differ or none knows.
fn agreed<T: Copy + PartialEq + std::fmt::Debug>(
    key: LabelKey,
    values: &[(String, T)],
    warnings: &mut Vec<String>,
) -> Option<T> {
    let (first_source, first) = values.first()?;
    if let Some((source, value)) = values.iter().find(|(_, v)| v != first) {
        warnings.push(format!(
            "{} left out: {first_source} says {first:?} but {source} says {value:?}",
            key.name()
        ));
        return None;
    }
    Some(*first)
}

fn names(keys: &[LabelKey]) -> String {
    keys.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
}
