//! The facts a model of the kubelet's admission reads, from sysfs and the
//! kubelet config, and the node's shape digest over them.
//!
//! The per-NUMA lists range over the NUMA nodes the kubelet's masks range
//! over: every `devices/system/node/node<N>` directory, as cAdvisor's
//! `GetNodesInfo` lists them for the Topology Manager (`NewNUMAInfo` takes
//! every node of the machine info, memory-only nodes included). Rules:
//!
//! - `machine-numa-nodes`: every `node<N>` directory, as cAdvisor's
//!   `GetNodesInfo` counts them ([`Facts::machine_numa_nodes`]).
//! - `numa-distances`: every node's `distance` row, the SLIT matrix the
//!   kubelet's `prefer-closest-numa-nodes` compares masks by; left out when
//!   a row is missing or of another length, or the matrix is asymmetric.
//! - `numa-gpus`: the agreed GPU placement, zeros for the other nodes.
//! - `numa-cpus`: a node's `cpulist` CPUs that are online (cAdvisor counts
//!   only online CPUs), reserved ones included; `0` for a memory-only node
//!   (a Grace machine's HBM or MIG nodes), whose nearest CPU node follows
//!   from `numa-distances`.
//! - `threads-per-core`: when every core has the same number of threads
//!   ([`CpuTopology::uniform_threads_per_core`]).
//! - `numa-reserved-cpus` (static CPU Manager only): `reservedSystemCPUs`
//!   mapped to nodes by their `cpulist`, or the CPUs the static policy takes
//!   for `ceil(kubeReserved.cpu + systemReserved.cpu)` on the empty machine
//!   ([`cpu_manager`](super::cpu_manager), with the topology crate's
//!   [`take_packed`] and [`take_distributed`]), which is where the reservation
//!   lands: the kubelet reserves once, at start, from all CPUs.
//! - `numa-reserved-cores` (static CPU Manager with SMT only): the physical
//!   cores (the kubelet's cores: CPUs of one node sharing `core_id` and
//!   `physical_package_id`) holding those reserved CPUs. With
//!   `full-pcpus-only` the static policy allocates only whole free cores
//!   (`GetAvailablePhysicalCPUs`), so a core half reserved is lost to
//!   exclusive allocation; with one thread per core the count equals
//!   `numa-reserved-cpus` and is not published.
//! - `numa-sockets`: each node's `physical_package_id`, which the kubelet's
//!   CPU topology reads for sockets (topology.go `Discover`); left out when
//!   a node's CPUs sit on several packages (the model does not follow such
//!   machines) or the CPU topology is not in sysfs. A node without online
//!   CPUs (memory only) has no socket: its entry is `0`, which nothing
//!   reads, as the kubelet's socket counts and the model skip such nodes.
//! - `numa-memory-mib`, `numa-hugepages-2mi`, `numa-hugepages-1gi`: the
//!   Memory Manager's allocatable amounts, memorymanager/policy_static.go
//!   `getDefaultMachineState`: per node, hugepages of each size
//!   `nr_hugepages * size - reserved(size)`, regular memory
//!   `MemTotal - reserved(memory) - every size's hugepages`; MiB and pages
//!   rounded down. `reservedMemory` counts only with the static Memory
//!   Manager, which the kubelet refuses to start without it. A size a node
//!   has no pages of is zero pages (its reservation is ignored there, as
//!   the kubelet iterates the node's sizes only).
//!
//! A fact that needs a source that was not read, or a value the kubelet
//! would refuse, is left out with a warning. Facts that need both sysfs and
//! the kubelet config (reserved CPUs, memory) need both.

use super::cpu_manager::CpuTopology;
use super::{names, Inputs, Outcome};
use crate::model::{IdSet, NumaNode, SysfsView};
use crate::parse::kubelet::{CpuReservation, KubeletSettings, MemoryReservation};
use gpu_topology::kubelet::cpu::by_id::{take_distributed, take_packed};
use gpu_topology::{
    format_count_list, format_numa_distances, CpuManagerPolicy, LabelKey, MemoryManagerPolicy,
    NodeTopology,
};
use std::collections::BTreeMap;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// Page sizes (KiB) of the two hugepage labels, and the kubelet's resource names.
const HUGEPAGES_2MI: (u64, &str) = (2 * 1024, "hugepages-2Mi");
const HUGEPAGES_1GI: (u64, &str) = (1024 * 1024, "hugepages-1Gi");
const MEMORY: &str = "memory";

/// The per-NUMA list labels.
const NUMA_LISTS: [LabelKey; 8] = [
    LabelKey::NumaGpus,
    LabelKey::NumaCpus,
    LabelKey::NumaReservedCpus,
    LabelKey::NumaReservedCores,
    LabelKey::NumaSockets,
    LabelKey::NumaMemoryMib,
    LabelKey::NumaHugepages2Mi,
    LabelKey::NumaHugepages1Gi,
];

/// Sets every fact the sources establish. `gpus_per_node` is the GPUs'
/// placement when known (empty for a node without GPUs).
pub(super) fn node_facts(
    inputs: &Inputs,
    gpus_per_node: Option<&BTreeMap<u32, u32>>,
    outcome: &mut Outcome,
) {
    if let Some(kubelet) = &inputs.kubelet {
        kubelet_facts(kubelet, outcome);
    }
    let Some(view) = &inputs.sysfs else {
        outcome.warnings.push(format!(
            "sysfs is not read: {}, {} left out",
            names(&NUMA_LISTS),
            LabelKey::ThreadsPerCore.name()
        ));
        return;
    };
    let facts = Facts {
        view,
        kubelet: inputs.kubelet.as_ref(),
    };
    match facts.machine_numa_nodes() {
        Ok(nodes) => outcome.topology.machine_numa_nodes = Some(nodes),
        Err(why) => outcome.warnings.push(format!(
            "{} left out: {why}",
            LabelKey::MachineNumaNodes.name()
        )),
    }
    match facts.numa_distances() {
        Ok(rows) => outcome.topology.numa_distances = rows,
        Err(why) => outcome.warnings.push(format!(
            "{} left out: {why}",
            LabelKey::NumaDistances.name()
        )),
    }
    let mut lists = vec![
        (LabelKey::NumaGpus, facts.numa_gpus(gpus_per_node)),
        (LabelKey::NumaCpus, facts.numa_cpus()),
        (LabelKey::NumaSockets, facts.numa_sockets()),
    ];
    // Only the static CPU Manager reserves CPUs: otherwise the labels do not apply.
    match facts.reserved_cpus() {
        Ok(None) => {}
        Ok(Some(reserved)) => {
            lists.push((LabelKey::NumaReservedCpus, facts.per_node(&reserved)));
            if let Some(cores) = facts.numa_reserved_cores(&reserved).transpose() {
                lists.push((LabelKey::NumaReservedCores, cores));
            }
        }
        Err(why) => lists.push((LabelKey::NumaReservedCpus, Err(why))),
    }
    match facts.memory() {
        Ok(memory) => lists.extend([
            // Whole GiB: machines of one kind share a shape however many
            // MiB their firmware keeps (the contract's rounding).
            (
                LabelKey::NumaMemoryMib,
                Ok(memory
                    .mib
                    .into_iter()
                    .map(gpu_topology::published_numa_memory_mib)
                    .collect()),
            ),
            (LabelKey::NumaHugepages2Mi, Ok(memory.hugepages_2mi)),
            (LabelKey::NumaHugepages1Gi, Ok(memory.hugepages_1gi)),
        ]),
        Err(why) => outcome.warnings.push(format!(
            "{} left out: {why}",
            names(&[
                LabelKey::NumaMemoryMib,
                LabelKey::NumaHugepages2Mi,
                LabelKey::NumaHugepages1Gi
            ])
        )),
    }
    for (key, list) in lists {
        match list.and_then(|values| fitting(key, values)) {
            Ok(values) => *list_field(&mut outcome.topology, key) = Some(values),
            Err(why) => outcome
                .warnings
                .push(format!("{} left out: {why}", key.name())),
        }
    }
    match facts.threads_per_core() {
        Ok(threads) => outcome.topology.threads_per_core = Some(threads),
        Err(why) => outcome.warnings.push(format!(
            "{} left out: {why}",
            LabelKey::ThreadsPerCore.name()
        )),
    }
}

/// A list that fits a label value, or why not.
fn fitting(key: LabelKey, values: Vec<u32>) -> Result<Vec<u32>, String> {
    match format_count_list(&values) {
        Some(_) => Ok(values),
        None => Err(format!(
            "{} values ({}) do not fit a label value",
            values.len(),
            key.name()
        )),
    }
}

fn list_field(topology: &mut NodeTopology, key: LabelKey) -> &mut Option<Vec<u32>> {
    match key {
        LabelKey::NumaGpus => &mut topology.numa_gpus,
        LabelKey::NumaCpus => &mut topology.numa_cpus,
        LabelKey::NumaReservedCpus => &mut topology.numa_reserved_cpus,
        LabelKey::NumaReservedCores => &mut topology.numa_reserved_cores,
        LabelKey::NumaSockets => &mut topology.numa_sockets,
        LabelKey::NumaMemoryMib => &mut topology.numa_memory_mib,
        LabelKey::NumaHugepages2Mi => &mut topology.numa_hugepages_2mi,
        _ => &mut topology.numa_hugepages_1gi,
    }
}

/// The kubelet config's own facts: the Memory Manager policy and the options.
fn kubelet_facts(kubelet: &KubeletSettings, outcome: &mut Outcome) {
    let topology = &mut outcome.topology;
    topology.memory_manager_policy = Some(kubelet.memory_manager_policy);
    match &kubelet.topology_options {
        Ok(options) => {
            topology.prefer_closest_numa_nodes = Some(options.prefer_closest_numa_nodes);
            topology.max_allowable_numa_nodes = Some(options.max_allowable_numa_nodes);
        }
        Err(why) => outcome.warnings.push(format!(
            "{} left out: {why}",
            names(&[
                LabelKey::TopologyManagerPreferClosestNumaNodes,
                LabelKey::TopologyManagerMaxAllowableNumaNodes
            ])
        )),
    }
    match &kubelet.cpu_options {
        Ok(options) => {
            topology.full_pcpus_only = Some(options.full_pcpus_only);
            topology.distribute_cpus_across_numa = Some(options.distribute_cpus_across_numa);
            topology.align_by_socket = Some(options.align_by_socket);
        }
        Err(why) => outcome.warnings.push(format!(
            "{} left out: {why}",
            names(&[
                LabelKey::CpuManagerFullPcpusOnly,
                LabelKey::CpuManagerDistributeCpusAcrossNuma,
                LabelKey::CpuManagerAlignBySocket
            ])
        )),
    }
}

/// Sets `shape` from the facts, when there is any: the digest of no fact
/// would put every node the labeler could not read into one shape.
pub(super) fn set_shape(topology: &mut NodeTopology) {
    let has_fact = LabelKey::ALL
        .into_iter()
        .any(|key| key.shapes() && topology.value(key).is_some());
    topology.shape = None;
    if has_fact {
        *topology = std::mem::take(topology).with_shape();
    }
}

/// Allocatable memory per NUMA node, in the labels' units.
struct Memory {
    mib: Vec<u32>,
    hugepages_2mi: Vec<u32>,
    hugepages_1gi: Vec<u32>,
}

struct Facts<'a> {
    view: &'a SysfsView,
    kubelet: Option<&'a KubeletSettings>,
}

impl Facts<'_> {
    /// The NUMA nodes the lists range over, or why they are unknown.
    fn nodes(&self) -> Result<&BTreeMap<u32, NumaNode>, String> {
        let nodes = &self.view.numa_nodes;
        if nodes.is_empty() {
            return Err("sysfs lists no NUMA node".to_owned());
        }
        match &self.view.online_numa_nodes {
            Some(online) if !online.iter().eq(nodes.keys()) => Err(format!(
                "sysfs has node directories {:?} but lists {:?} online (a node is being added or removed?)",
                nodes.keys().collect::<Vec<_>>(),
                online
            )),
            _ => Ok(nodes),
        }
    }

    /// Every `node<N>` directory, as cAdvisor counts them: `GetNodesInfo`
    /// (utils/sysinfo/sysinfo.go) makes one `Node` per directory
    /// `GetNodesPaths` globs, a node without CPUs included (it only warns
    /// "Found node without any CPU"), and the Topology Manager counts the
    /// machine info's nodes (topologymanager `NewManager` →
    /// `NewNUMAInfo`) against `max-allowable-numa-nodes`. Not the online
    /// list: cAdvisor does not read it.
    fn machine_numa_nodes(&self) -> Result<u32, String> {
        match self.view.numa_nodes.len() {
            0 => Err("sysfs lists no NUMA node".to_owned()),
            nodes => count(nodes),
        }
    }

    /// The SLIT matrix from every node's `distance` row; `None` when no
    /// node has the file (a fake tree). A row missing on some node, a row
    /// of another length than the nodes, or a matrix the contract cannot
    /// write (asymmetric) is left out, never mended.
    fn numa_distances(&self) -> Result<Option<Vec<Vec<u32>>>, String> {
        let nodes = self.nodes()?;
        if nodes.values().all(|node| node.distances.is_none()) {
            return Ok(None);
        }
        let rows = nodes
            .iter()
            .map(|(id, node)| match &node.distances {
                Some(row) if row.len() == nodes.len() => Ok(row.clone()),
                Some(row) => Err(format!(
                    "node{id}/distance has {} entries for {} NUMA nodes",
                    row.len(),
                    nodes.len()
                )),
                None => Err(format!("node{id} has no distance file")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        match format_numa_distances(&rows) {
            Some(_) => Ok(Some(rows)),
            None => Err(
                "the distances are not symmetric, or have more than 36 distinct values or one above 1295"
                    .to_owned(),
            ),
        }
    }

    fn kubelet(&self) -> Result<&KubeletSettings, String> {
        self.kubelet
            .ok_or_else(|| "the kubelet config is not read".to_owned())
    }

    fn topology(&self) -> Result<CpuTopology, String> {
        let view = self
            .view
            .cpus
            .as_ref()
            .ok_or("sysfs has no devices/system/cpu/online")?;
        CpuTopology::discover(&self.view.numa_nodes, view)
            .ok_or_else(|| "sysfs has no topology/ directories of the online CPUs".to_owned())
    }

    fn numa_gpus(&self, gpus_per_node: Option<&BTreeMap<u32, u32>>) -> Result<Vec<u32>, String> {
        let nodes = self.nodes()?;
        let placement = gpus_per_node.ok_or("the GPUs' NUMA placement is unknown")?;
        if let Some(missing) = placement.keys().find(|node| !nodes.contains_key(node)) {
            return Err(format!(
                "GPUs sit on NUMA node {missing}, which sysfs does not list"
            ));
        }
        Ok(nodes
            .keys()
            .map(|node| placement.get(node).copied().unwrap_or(0))
            .collect())
    }

    fn numa_cpus(&self) -> Result<Vec<u32>, String> {
        let nodes = self.nodes()?;
        let online = &self
            .view
            .cpus
            .as_ref()
            .ok_or("sysfs has no devices/system/cpu/online")?
            .online;
        nodes
            .values()
            .map(|node| count(node.cpus.intersection(online).count()))
            .collect()
    }

    fn threads_per_core(&self) -> Result<u32, String> {
        self.topology()?.uniform_threads_per_core().ok_or_else(|| {
            "the cores do not all have the same number of threads (a hybrid CPU, or SMT off on some cores)".to_owned()
        })
    }

    /// The CPUs the static CPU Manager reserves; `None` when it is not
    /// static: it reserves none.
    fn reserved_cpus(&self) -> Result<Option<IdSet>, String> {
        let kubelet = self.kubelet()?;
        if kubelet.cpu_manager_policy != CpuManagerPolicy::Static {
            return Ok(None);
        }
        let nodes = self.nodes()?;
        let reserved = match kubelet.cpu_reservation.clone()? {
            CpuReservation::Cpus(cpus) => self.listed_reservation(nodes, cpus)?,
            CpuReservation::Count(0) => {
                return Err("the static CPU Manager does not start without reserved CPUs (kubeReserved/systemReserved cpu or reservedSystemCPUs)".to_owned())
            }
            CpuReservation::Count(count) => self.counted_reservation(count)?,
        };
        Ok(Some(reserved))
    }

    /// How many CPUs of `set` each NUMA node holds.
    fn per_node(&self, set: &IdSet) -> Result<Vec<u32>, String> {
        self.nodes()?
            .values()
            .map(|node| count(node.cpus.intersection(set).count()))
            .collect()
    }

    /// Cores holding reserved CPUs per NUMA node; `None` without SMT, where
    /// they are as many as the reserved CPUs, or when threads per core are
    /// unknown (the warning for `threads-per-core` says why).
    fn numa_reserved_cores(&self, reserved: &IdSet) -> Result<Option<Vec<u32>>, String> {
        match self.threads_per_core() {
            Ok(threads) if threads > 1 => {}
            _ => return Ok(None),
        }
        let topology = self.topology()?;
        self.nodes()?
            .keys()
            .map(|&numa| count(topology.kubelet().cores_holding(numa, reserved)))
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// The socket of each NUMA node's CPUs, `0` for a node without CPUs.
    fn numa_sockets(&self) -> Result<Vec<u32>, String> {
        let nodes = self.nodes()?;
        let topology = self.topology()?;
        let topology = topology.kubelet();
        nodes
            .keys()
            .map(|&numa| match topology.sockets_of(numa).as_slice() {
                [] => Ok(0),
                [socket] => u32::try_from(*socket).map_err(|_| {
                    format!("NUMA node {numa}'s socket {socket} does not fit a count")
                }),
                sockets => Err(format!(
                    "NUMA node {numa}'s CPUs sit on several sockets {sockets:?}"
                )),
            })
            .collect()
    }

    /// `reservedSystemCPUs`: each must be an online CPU of some node, or the
    /// kubelet does not start (server.go `getReservedCPUs`).
    fn listed_reservation(
        &self,
        nodes: &BTreeMap<u32, NumaNode>,
        cpus: IdSet,
    ) -> Result<IdSet, String> {
        let online = self.view.cpus.as_ref().map(|view| &view.online);
        let unknown: Vec<u32> = cpus
            .iter()
            .filter(|cpu| {
                online.is_some_and(|online| !online.contains(cpu))
                    || !nodes.values().any(|node| node.cpus.contains(cpu))
            })
            .copied()
            .collect();
        if unknown.is_empty() {
            Ok(cpus)
        } else {
            Err(format!(
                "reservedSystemCPUs names CPUs {unknown:?} that are not online CPUs of a NUMA node"
            ))
        }
    }

    /// The CPUs `NewStaticPolicy` takes for a reservation of `count` CPUs.
    fn counted_reservation(&self, count: u32) -> Result<IdSet, String> {
        let kubelet = self.kubelet()?;
        let options = kubelet.cpu_options.as_ref().map_err(|why| {
            format!("where the reserved CPUs land depends on the CPU Manager options: {why}")
        })?;
        let not_reproduced = [
            (
                options.distribute_cpus_across_cores,
                "distribute-cpus-across-cores",
            ),
            (
                options.prefer_align_cpus_by_uncorecache,
                "prefer-align-cpus-by-uncorecache",
            ),
            (
                options.distribute_cpus_across_numa && options.align_by_socket,
                "distribute-cpus-across-numa with align-by-socket",
            ),
        ];
        if let Some((_, option)) = not_reproduced.iter().find(|(set, _)| *set) {
            return Err(format!(
                "with {option}, the labeler does not reproduce where the {count} reserved CPUs land"
            ));
        }
        let topology = self.topology()?;
        let topology = topology.kubelet();
        let count = usize::try_from(count).map_err(|e| e.to_string())?;
        let taken = if options.distribute_cpus_across_numa {
            let group = if options.full_pcpus_only {
                topology.cpus_per_core()
            } else {
                1
            };
            take_distributed(topology, &topology.cpus(), count, group)
        } else {
            take_packed(topology, &topology.cpus(), count)
        };
        taken.map_err(|why| {
            format!("the static CPU Manager cannot reserve {count} CPUs ({why}) and does not start")
        })
    }

    fn memory(&self) -> Result<Memory, String> {
        let nodes = self.nodes()?;
        let kubelet = self.kubelet()?;
        let reservation = match kubelet.memory_manager_policy {
            MemoryManagerPolicy::None => MemoryReservation::new(),
            MemoryManagerPolicy::Static => static_reservation(kubelet, nodes)?,
        };
        let no_reservation = BTreeMap::new();
        let mut memory = Memory {
            mib: Vec::new(),
            hugepages_2mi: Vec::new(),
            hugepages_1gi: Vec::new(),
        };
        for (id, node) in nodes {
            let reserved = reservation.get(id).unwrap_or(&no_reservation);
            let reserved = |resource: &str| reserved.get(resource).copied().unwrap_or(0);
            let hugepages_bytes = node
                .hugepages
                .iter()
                .try_fold(0u64, |sum, (size, pages)| {
                    size.checked_mul(*pages)?.checked_mul(KIB)?.checked_add(sum)
                })
                .ok_or_else(|| format!("NUMA node {id}'s hugepages overflow"))?;
            let allocatable = node
                .memory_kib
                .checked_mul(KIB)
                .and_then(|bytes| bytes.checked_sub(hugepages_bytes))
                .and_then(|bytes| bytes.checked_sub(reserved(MEMORY)))
                .ok_or_else(|| {
                    format!(
                        "NUMA node {id} has less memory than its hugepages and reservedMemory take"
                    )
                })?;
            memory.mib.push(count_u64(allocatable / MIB)?);
            for ((size, resource), list) in [
                (HUGEPAGES_2MI, &mut memory.hugepages_2mi),
                (HUGEPAGES_1GI, &mut memory.hugepages_1gi),
            ] {
                let pages = match node.hugepages.get(&size) {
                    None => 0,
                    Some(&pages) => {
                        let page = size * KIB;
                        pages
                            .checked_mul(page)
                            .and_then(|bytes| bytes.checked_sub(reserved(resource)))
                            .map(|bytes| bytes / page)
                            .ok_or_else(|| {
                                format!("NUMA node {id} has fewer {resource} than reservedMemory reserves")
                            })?
                    }
                };
                list.push(count_u64(pages)?);
            }
        }
        Ok(memory)
    }
}

/// `reservedMemory` as the static Memory Manager takes it: it must reserve
/// some regular memory (policy_static.go `NewPolicyStatic`) and name only
/// NUMA nodes of the machine (memory_manager.go `getTotalMemoryTypeReserved`).
fn static_reservation(
    kubelet: &KubeletSettings,
    nodes: &BTreeMap<u32, NumaNode>,
) -> Result<MemoryReservation, String> {
    let reservation = kubelet.memory_reservation.clone()?;
    if let Some(node) = reservation.keys().find(|node| !nodes.contains_key(node)) {
        return Err(format!(
            "reservedMemory names NUMA node {node}, which sysfs does not list; the kubelet does not start"
        ));
    }
    let reserves_memory = reservation
        .values()
        .any(|limits| limits.get(MEMORY).is_some_and(|&bytes| bytes > 0));
    if !reserves_memory {
        return Err(
            "the static Memory Manager does not start without reservedMemory of memory".to_owned(),
        );
    }
    Ok(reservation)
}

fn count(n: usize) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("{n} does not fit a count"))
}

fn count_u64(n: u64) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("{n} does not fit a count"))
}
