//! `takeByTopologyNUMAPacked` and `takeByTopologyNUMADistributed` of
//! `pkg/kubelet/cm/cpumanager/cpu_assignment.go` over real CPU ids: the
//! walks the rest of this module follows as counts, here over a machine's
//! CPUs as the kubelet's `CPUTopology` places them, with every tie broken
//! by id as the kubelet breaks it. The node labeler runs them to find which
//! CPUs the static policy reserves when given a count
//! (`kubeReserved`/`systemReserved` cpu), as policy_static.go
//! `NewStaticPolicy` takes them from all CPUs; the admission model does not
//! (it knows no CPU ids), so they stay out of the policy's Wasm module.
//!
//! Reproduced:
//! - the `cpuAccumulator` (`newCPUAccumulator`'s `numaFirst` /
//!   `socketsFirst`, `sortAvailableNUMANodes`, `sortAvailableSockets`,
//!   `sortAvailableCores`, `sortAvailableCPUsPacked`, `isNUMANodeFree`,
//!   `isSocketFree`, `isCoreFree`, `needsAtLeast`, `isSatisfied`,
//!   `isFailed`, `take`);
//! - `takeByTopologyNUMAPacked` (whole NUMA nodes or sockets first,
//!   whichever holds more, then whole cores, then single CPUs; each level
//!   sorted by free CPUs ascending, then id: `takeFullNUMANodes`,
//!   `takeFullSockets`, `takeFullCores`, `takeRemainingCPUs`);
//! - `takeByTopologyNUMADistributed` (KEP-2902, `distribute-cpus-across-numa`),
//!   whose choice of NUMA nodes (`rangeNUMANodesNeededToSatisfy`,
//!   `iterateCombinations`, the balance score) is the count model's own
//!   (`distribute.rs`).
//!
//! Not reproduced (callers leave the outcome unknown instead):
//! `distribute-cpus-across-cores` (spread sorting), `prefer-align-cpus-by-uncorecache`
//! (uncore cache grouping) and `align-by-socket` together with
//! `distribute-cpus-across-numa` (the newer socket-aware balance).

use super::distribute::{best_distribution, numa_nodes_needed};
use std::collections::{BTreeMap, BTreeSet};

/// CPU ids, sorted.
pub type CpuSet = BTreeSet<u32>;

/// Where the kubelet places one CPU (topology.go `CPUInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPlacement {
    pub numa: u32,
    /// `physical_package_id`.
    pub socket: u64,
    /// The core's lowest CPU id (topology.go `getUniqueCoreID`).
    pub core: u32,
}

/// The kubelet's `CPUTopology`: each CPU's placement (`CPUDetails`), the
/// counts and the averages (`CPUsPerCore`, `CPUsPerSocket`) derived from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopology {
    cpus: BTreeMap<u32, CpuPlacement>,
    num_cores: usize,
}

impl CpuTopology {
    /// The topology of these CPUs; a core is the CPUs sharing a
    /// [`CpuPlacement::core`] id.
    pub fn new(cpus: BTreeMap<u32, CpuPlacement>) -> Self {
        let num_cores = ids(&cpus, cpus.keys(), |info| info.core).len();
        Self { cpus, num_cores }
    }

    /// Every CPU of the topology.
    pub fn cpus(&self) -> CpuSet {
        self.cpus.keys().copied().collect()
    }

    /// Where CPU `cpu` sits, `None` for a CPU not in the topology.
    pub fn placement(&self, cpu: u32) -> Option<CpuPlacement> {
        self.cpus.get(&cpu).copied()
    }

    /// `NumCores`.
    pub fn num_cores(&self) -> usize {
        self.num_cores
    }

    /// `NumSockets`.
    pub fn num_sockets(&self) -> usize {
        ids(&self.cpus, self.cpus.keys(), |info| info.socket).len()
    }

    /// `NumNUMANodes`: NUMA nodes holding CPUs.
    pub fn num_numa_nodes(&self) -> usize {
        ids(&self.cpus, self.cpus.keys(), |info| info.numa).len()
    }

    /// `CPUTopology.CPUsPerCore`: an integer average.
    pub fn cpus_per_core(&self) -> usize {
        self.cpus.len().checked_div(self.num_cores).unwrap_or(0)
    }

    /// `CPUTopology.CPUsPerSocket`: an integer average.
    fn cpus_per_socket(&self) -> usize {
        self.cpus.len().checked_div(self.num_sockets()).unwrap_or(0)
    }

    /// The sockets of NUMA node `numa`'s CPUs, sorted.
    pub fn sockets_of(&self, numa: u32) -> Vec<u64> {
        let on_node = self
            .cpus
            .iter()
            .filter(|(_, info)| info.numa == numa)
            .map(|(cpu, _)| cpu);
        ids(&self.cpus, on_node, |info| info.socket)
    }

    /// The physical cores (topology.go `getUniqueCoreID`) of NUMA node
    /// `numa` that hold at least one CPU of `set`.
    pub fn cores_holding(&self, numa: u32, set: &CpuSet) -> usize {
        let on_node = set
            .iter()
            .filter(|cpu| self.cpus.get(cpu).is_some_and(|info| info.numa == numa));
        ids(&self.cpus, on_node, |info| info.core).len()
    }
}

/// The distinct `id`s of the CPUs `of`, sorted.
fn ids<'a, T: Ord>(
    details: &BTreeMap<u32, CpuPlacement>,
    of: impl Iterator<Item = &'a u32>,
    id: impl Fn(&CpuPlacement) -> T,
) -> Vec<T> {
    let mut ids: Vec<T> = of.filter_map(|c| details.get(c)).map(id).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// One topology level: which id of a CPU's placement it groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Numa,
    Socket,
    Core,
}

impl Level {
    fn id(self, info: &CpuPlacement) -> u64 {
        match self {
            Level::Numa => u64::from(info.numa),
            Level::Socket => info.socket,
            Level::Core => u64::from(info.core),
        }
    }
}

/// The CPU accumulator of cpu_assignment.go (`cpuAccumulator`): the CPUs
/// still free (`details`), those taken (`result`), and how many are still
/// needed (`numCPUsNeeded`).
struct Accumulator<'t> {
    topology: &'t CpuTopology,
    free: CpuSet,
    result: CpuSet,
    needed: i64,
}

impl<'t> Accumulator<'t> {
    /// `newCPUAccumulator`.
    fn new(topology: &'t CpuTopology, available: &CpuSet, count: usize) -> Self {
        Self {
            topology,
            free: available
                .iter()
                .filter(|c| topology.cpus.contains_key(c))
                .copied()
                .collect(),
            result: CpuSet::new(),
            needed: i64::try_from(count).unwrap_or(i64::MAX),
        }
    }

    /// The kubelet counts NUMA nodes and sockets higher or lower by number:
    /// with at least as many sockets as NUMA nodes, a NUMA node holds sockets
    /// (`newCPUAccumulator`: `numaFirst` or `socketsFirst`).
    fn numa_first(&self) -> bool {
        self.topology.num_sockets() >= self.topology.num_numa_nodes()
    }

    /// CPUs of `set` whose `level` id is `id`.
    fn in_level(&self, set: &CpuSet, level: Level, id: u64) -> CpuSet {
        set.iter()
            .filter(|cpu| {
                self.topology
                    .cpus
                    .get(cpu)
                    .is_some_and(|i| level.id(i) == id)
            })
            .copied()
            .collect()
    }

    fn free_in(&self, level: Level, id: u64) -> usize {
        self.in_level(&self.free, level, id).len()
    }

    /// `level` ids of the free CPUs within `parent` (all free CPUs for `None`),
    /// sorted as `cpuAccumulator.sort`: by free CPUs ascending, then id.
    fn sorted(&self, level: Level, parent: Option<(Level, u64)>) -> Vec<u64> {
        let within = match parent {
            Some((parent, id)) => self.in_level(&self.free, parent, id),
            None => self.free.clone(),
        };
        let mut ids: Vec<u64> = within
            .iter()
            .filter_map(|cpu| self.topology.cpus.get(cpu))
            .map(|info| level.id(info))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.sort_by_key(|&id| (self.free_in(level, id), id));
        ids
    }

    /// `sortAvailableNUMANodes` / `sortAvailableSockets`: the higher level
    /// sorted directly, the lower one within each of the higher, in order.
    fn sort_available(&self, level: Level) -> Vec<u64> {
        let (higher, lower) = if self.numa_first() {
            (Level::Numa, Level::Socket)
        } else {
            (Level::Socket, Level::Numa)
        };
        if level == higher {
            return self.sorted(higher, None);
        }
        self.sort_available(higher)
            .into_iter()
            .flat_map(|id| self.sorted(lower, Some((higher, id))))
            .collect()
    }

    /// `sortAvailableCores`: within each of the lower of NUMA node and socket.
    fn sort_available_cores(&self) -> Vec<u64> {
        let lower = if self.numa_first() {
            Level::Socket
        } else {
            Level::Numa
        };
        self.sort_available(lower)
            .into_iter()
            .flat_map(|id| self.sorted(Level::Core, Some((lower, id))))
            .collect()
    }

    /// `sortAvailableCPUsPacked`.
    fn sort_available_cpus(&self) -> Vec<u32> {
        self.sort_available_cores()
            .into_iter()
            .flat_map(|core| self.in_level(&self.free, Level::Core, core))
            .collect()
    }

    /// Whether every CPU of `id` is free, as `isNUMANodeFree`, `isSocketFree`
    /// and `isCoreFree` tell it (the latter two against the averages).
    fn is_free(&self, level: Level, id: u64) -> bool {
        let whole = match level {
            Level::Numa => self.in_level(&self.topology.cpus(), level, id).len(),
            Level::Socket => self.topology.cpus_per_socket(),
            Level::Core => self.topology.cpus_per_core(),
        };
        self.free_in(level, id) == whole
    }

    /// `needsAtLeast`.
    fn needs_at_least(&self, n: usize) -> bool {
        i64::try_from(n).is_ok_and(|n| self.needed >= n)
    }

    /// `isSatisfied`.
    fn is_satisfied(&self) -> bool {
        self.needed < 1
    }

    /// `isFailed`.
    fn is_failed(&self) -> bool {
        i64::try_from(self.free.len()).is_ok_and(|free| self.needed > free)
    }

    /// `take`.
    fn take(&mut self, cpus: &CpuSet) {
        self.result.extend(cpus);
        self.free = self.free.difference(&self.result).copied().collect();
        self.needed -= i64::try_from(cpus.len()).unwrap_or(i64::MAX);
    }

    /// `takeFullNUMANodes`, `takeFullSockets`, `takeFullCores`: every free
    /// unit (listed once, before taking) whose CPUs are all still needed.
    fn take_full(&mut self, level: Level) {
        let units = match level {
            Level::Core => self.sort_available_cores(),
            level => self.sort_available(level),
        };
        let free: Vec<u64> = units
            .into_iter()
            .filter(|&id| self.is_free(level, id))
            .collect();
        for id in free {
            let cpus = self.in_level(&self.topology.cpus(), level, id);
            if self.needs_at_least(cpus.len()) {
                self.take(&cpus);
            }
        }
    }

    /// `takeRemainingCPUs`.
    fn take_remaining_cpus(&mut self) {
        for cpu in self.sort_available_cpus() {
            self.take(&CpuSet::from([cpu]));
            if self.is_satisfied() {
                return;
            }
        }
    }

    /// The error of a failed accumulator (`isFailed`).
    fn not_enough(&self, count: usize) -> String {
        format!(
            "not enough CPUs: {count} requested, {} available",
            self.free.len()
        )
    }
}

/// `takeByTopologyNUMAPacked`: `count` CPUs of `available`.
pub fn take_packed(
    topology: &CpuTopology,
    available: &CpuSet,
    count: usize,
) -> Result<CpuSet, String> {
    let mut acc = Accumulator::new(topology, available, count);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(acc.not_enough(count));
    }
    let (first, second) = if acc.numa_first() {
        (Level::Numa, Level::Socket)
    } else {
        (Level::Socket, Level::Numa)
    };
    for level in [first, second, Level::Core] {
        acc.take_full(level);
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
    }
    acc.take_remaining_cpus();
    if acc.is_satisfied() {
        Ok(acc.result)
    } else {
        Err(format!("could not take {count} CPUs"))
    }
}

/// Most NUMA nodes (with CPUs) over which the distributed placement is
/// reproduced: it tries every combination of nodes and of remainder nodes,
/// which grows as 2^n (the kubelet's Topology Manager refuses more than 8
/// nodes unless `max-allowable-numa-nodes` says otherwise).
pub const MAX_DISTRIBUTED_NUMA_NODES: usize = 16;

/// A count as the count model's `u32` arithmetic takes it; counts of CPUs
/// keyed by `u32` ids fit.
fn narrow(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `takeByTopologyNUMADistributed` (KEP-2902): `count` CPUs of `available`
/// spread evenly over the fewest NUMA nodes that can hold them, in groups of
/// `group` CPUs; the remainder goes where it leaves the free CPUs most even.
/// Packed when `count` is not a multiple of `group` (`takeByTopology`).
pub fn take_distributed(
    topology: &CpuTopology,
    available: &CpuSet,
    count: usize,
    group: usize,
) -> Result<CpuSet, String> {
    if group == 0 || !count.is_multiple_of(group) {
        return take_packed(topology, available, count);
    }
    let mut acc = Accumulator::new(topology, available, count);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(acc.not_enough(count));
    }
    let numas = acc.sort_available(Level::Numa);
    if numas.len() > MAX_DISTRIBUTED_NUMA_NODES {
        return Err(format!(
            "{} NUMA nodes hold CPUs: the labeler reproduces the distributed placement over at most {MAX_DISTRIBUTED_NUMA_NODES}",
            numas.len()
        ));
    }
    // Free CPUs of each NUMA node, by position in `numas`.
    let free: Vec<u32> = numas
        .iter()
        .map(|&numa| narrow(acc.free_in(Level::Numa, numa)))
        .collect();
    let (min_numas, max_numas) = numa_nodes_needed(
        narrow(topology.num_numa_nodes()),
        narrow(topology.cpus.len()),
        narrow(numas.len()),
        narrow(count),
        narrow(group),
    );
    let numa_at = |i: usize| numas.get(i).copied().unwrap_or(0);
    for k in min_numas..=max_numas {
        // A subset whose remainder hand-out never ends is passed over.
        let Ok(Some((combo, remainder_numas))) =
            best_distribution::<true>(&free, k as usize, narrow(count), narrow(group))
        else {
            continue;
        };
        let distribution = (count / combo.len() / group) * group;
        for &i in &combo {
            let cpus = take_packed(
                topology,
                &acc.in_level(&acc.free, Level::Numa, numa_at(i)),
                distribution,
            )?;
            acc.take(&cpus);
        }
        let mut remainder = count - distribution * combo.len();
        while remainder > 0 {
            let before = remainder;
            for &i in &remainder_numas {
                if remainder == 0 {
                    break;
                }
                let free = acc.in_level(&acc.free, Level::Numa, numa_at(i));
                if free.len() < group {
                    continue;
                }
                let cpus = take_packed(topology, &free, group)?;
                acc.take(&cpus);
                remainder -= group;
            }
            if remainder == before {
                return Err("the remainder CPUs could not be placed".to_owned());
            }
        }
        return if acc.needed == 0 {
            Ok(acc.result)
        } else {
            Err(format!("accounting error: {} CPUs left", acc.needed))
        };
    }
    take_packed(topology, available, count)
}

#[cfg(test)]
mod tests;
