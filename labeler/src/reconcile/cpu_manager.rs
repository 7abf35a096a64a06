//! The kubelet's CPU Manager as far as the labels need it: the machine's
//! CPU topology as the kubelet builds it, and which CPUs the static policy
//! reserves when it is given a count (`kubeReserved`/`systemReserved` cpu)
//! instead of a list (`reservedSystemCPUs`).
//!
//! Reproduced from kubernetes/kubernetes, pkg/kubelet/cm/cpumanager:
//! - topology/topology.go `Discover`, over cAdvisor's `GetNodesInfo`
//!   (utils/sysinfo/sysinfo.go): a CPU is an online CPU of a NUMA node's
//!   directory; a core is the CPUs of one node sharing `core_id` and
//!   `physical_package_id`, identified by its lowest CPU id; a socket is a
//!   `physical_package_id`. `CPUsPerCore` and `CPUsPerSocket` are integer
//!   averages (`NumCPUs / NumCores`, `NumCPUs / NumSockets`), as there;
//! - cpu_assignment.go `takeByTopologyNUMAPacked` (whole NUMA nodes or
//!   sockets first, whichever holds more, then whole cores, then single
//!   CPUs; each level sorted by free CPUs ascending, then id) and
//!   `takeByTopologyNUMADistributed` (KEP-2902, `distribute-cpus-across-numa`),
//!   which policy_static.go `NewStaticPolicy` runs over all CPUs.
//!
//! Not reproduced (the callers leave the reservation unknown instead):
//! `distribute-cpus-across-cores` (spread sorting), `prefer-align-cpus-by-uncorecache`
//! (uncore cache grouping) and `align-by-socket` together with
//! `distribute-cpus-across-numa` (the newer socket-aware balance).

use crate::model::{CpuView, IdSet, NumaNode};
use std::collections::BTreeMap;

/// Where the kubelet places one CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CpuInfo {
    numa: u32,
    socket: u64,
    /// The core's lowest CPU id (topology.go `getUniqueCoreID`).
    core: u32,
}

/// The kubelet's `CPUTopology`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuTopology {
    cpus: BTreeMap<u32, CpuInfo>,
    /// CPUs per core (cAdvisor's grouping), and the sibling count each CPU's
    /// `thread_siblings_list` gives, to tell a uniform SMT machine.
    core_sizes: Vec<usize>,
    sibling_counts: Vec<usize>,
}

impl CpuTopology {
    /// The topology of the online CPUs of `nodes`, `None` when sysfs shows no
    /// CPU placement (`topology/` directories) or no CPU at all.
    pub fn discover(nodes: &BTreeMap<u32, NumaNode>, view: &CpuView) -> Option<Self> {
        let places = view.places.as_ref()?;
        let mut cores: BTreeMap<(u32, u64, u64), Vec<u32>> = BTreeMap::new();
        let mut sibling_counts = Vec::new();
        for (&numa, node) in nodes {
            for cpu in node.cpus.intersection(&view.online) {
                let place = places.get(cpu)?;
                cores
                    .entry((numa, place.package, place.core_id))
                    .or_default()
                    .push(*cpu);
                sibling_counts.push(place.siblings);
            }
        }
        let mut cpus = BTreeMap::new();
        for (&(numa, socket, _), threads) in &cores {
            let core = *threads.iter().min()?;
            for &cpu in threads {
                cpus.insert(cpu, CpuInfo { numa, socket, core });
            }
        }
        (!cpus.is_empty()).then(|| Self {
            cpus,
            core_sizes: cores.values().map(Vec::len).collect(),
            sibling_counts,
        })
    }

    fn all_cpus(&self) -> IdSet {
        self.cpus.keys().copied().collect()
    }

    fn num_cores(&self) -> usize {
        self.core_sizes.len()
    }

    fn num_sockets(&self) -> usize {
        ids(&self.cpus, &self.all_cpus(), |info| info.socket).len()
    }

    fn num_numa_nodes(&self) -> usize {
        ids(&self.cpus, &self.all_cpus(), |info| info.numa).len()
    }

    /// `CPUTopology.CPUsPerCore`: an integer average.
    pub fn cpus_per_core(&self) -> usize {
        self.cpus.len().checked_div(self.num_cores()).unwrap_or(0)
    }

    fn cpus_per_socket(&self) -> usize {
        self.cpus.len().checked_div(self.num_sockets()).unwrap_or(0)
    }

    /// Hardware threads per core when every core has the same number, and
    /// each CPU's `thread_siblings_list` agrees; `None` on a machine mixing
    /// core kinds (hybrid CPUs, SMT off on some cores), where the kubelet's
    /// `CPUsPerCore` is an average that describes no core.
    pub fn uniform_threads_per_core(&self) -> Option<u32> {
        let first = *self.core_sizes.first()?;
        let uniform = self.core_sizes.iter().all(|&n| n == first)
            && self.sibling_counts.iter().all(|&n| n == first);
        uniform.then(|| u32::try_from(first).ok()).flatten()
    }

    /// Every CPU of the topology: the static policy reserves from these.
    pub fn cpus(&self) -> IdSet {
        self.all_cpus()
    }

    /// The sockets (`physical_package_id`) of NUMA node `numa`'s CPUs, sorted.
    pub fn sockets_of(&self, numa: u32) -> Vec<u64> {
        let on_node: IdSet = self
            .cpus
            .iter()
            .filter(|(_, info)| info.numa == numa)
            .map(|(cpu, _)| *cpu)
            .collect();
        ids(&self.cpus, &on_node, |info| info.socket)
    }

    /// The physical cores (topology.go `getUniqueCoreID`) of NUMA node
    /// `numa` that hold at least one CPU of `set`.
    pub fn cores_holding(&self, numa: u32, set: &IdSet) -> usize {
        let on_node: IdSet = set
            .iter()
            .filter(|cpu| self.cpus.get(cpu).is_some_and(|info| info.numa == numa))
            .copied()
            .collect();
        ids(&self.cpus, &on_node, |info| info.core).len()
    }
}

/// The distinct `id`s of the CPUs `of`, sorted.
fn ids<T: Ord>(details: &BTreeMap<u32, CpuInfo>, of: &IdSet, id: impl Fn(&CpuInfo) -> T) -> Vec<T> {
    let mut ids: Vec<T> = of.iter().filter_map(|c| details.get(c)).map(id).collect();
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
    fn id(self, info: &CpuInfo) -> u64 {
        match self {
            Level::Numa => u64::from(info.numa),
            Level::Socket => info.socket,
            Level::Core => u64::from(info.core),
        }
    }
}

/// The CPU accumulator of cpu_assignment.go: the CPUs still free
/// (`details`), those taken (`result`), and how many are still needed.
struct Accumulator<'t> {
    topology: &'t CpuTopology,
    free: IdSet,
    result: IdSet,
    needed: i64,
}

impl<'t> Accumulator<'t> {
    fn new(topology: &'t CpuTopology, available: &IdSet, count: usize) -> Self {
        Self {
            topology,
            free: available
                .iter()
                .filter(|c| topology.cpus.contains_key(c))
                .copied()
                .collect(),
            result: IdSet::new(),
            needed: i64::try_from(count).unwrap_or(i64::MAX),
        }
    }

    /// The kubelet counts NUMA nodes and sockets higher or lower by number:
    /// with at least as many sockets as NUMA nodes, a NUMA node holds sockets.
    fn numa_first(&self) -> bool {
        self.topology.num_sockets() >= self.topology.num_numa_nodes()
    }

    /// CPUs of `set` whose `level` id is `id`.
    fn in_level(&self, set: &IdSet, level: Level, id: u64) -> IdSet {
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
            Level::Numa => self.in_level(&self.topology.all_cpus(), level, id).len(),
            Level::Socket => self.topology.cpus_per_socket(),
            Level::Core => self.topology.cpus_per_core(),
        };
        self.free_in(level, id) == whole
    }

    fn needs_at_least(&self, n: usize) -> bool {
        i64::try_from(n).is_ok_and(|n| self.needed >= n)
    }

    fn is_satisfied(&self) -> bool {
        self.needed < 1
    }

    fn is_failed(&self) -> bool {
        i64::try_from(self.free.len()).is_ok_and(|free| self.needed > free)
    }

    fn take(&mut self, cpus: &IdSet) {
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
            let cpus = self.in_level(&self.topology.all_cpus(), level, id);
            if self.needs_at_least(cpus.len()) {
                self.take(&cpus);
            }
        }
    }

    fn take_remaining_cpus(&mut self) {
        for cpu in self.sort_available_cpus() {
            self.take(&IdSet::from([cpu]));
            if self.is_satisfied() {
                return;
            }
        }
    }
}

/// `takeByTopologyNUMAPacked`: `count` CPUs of `available`.
pub fn take_packed(
    topology: &CpuTopology,
    available: &IdSet,
    count: usize,
) -> Result<IdSet, String> {
    let mut acc = Accumulator::new(topology, available, count);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(format!(
            "not enough CPUs: {count} requested, {} available",
            acc.free.len()
        ));
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

/// Go's `mean` and `standardDeviation` of cpu_assignment.go, each rounded
/// to three decimals as there.
fn standard_deviation(values: &[usize]) -> f64 {
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    let len = values.len().max(1) as f64;
    let mean = round(values.iter().map(|&v| v as f64).sum::<f64>() / len);
    let variance = values
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / len;
    round(variance.sqrt())
}

/// Every `k`-subset of `items`, in the order `iterateCombinations` visits them.
fn combinations(items: &[u64], k: usize) -> Vec<Vec<u64>> {
    if k == 0 || k > items.len() {
        return Vec::new();
    }
    let mut all = Vec::new();
    let mut indices: Vec<usize> = (0..k).collect();
    loop {
        all.push(
            indices
                .iter()
                .filter_map(|&i| items.get(i).copied())
                .collect(),
        );
        // The rightmost index that can still move right.
        let Some(at) = (0..k).rev().find(|&i| indices[i] < items.len() - k + i) else {
            return all;
        };
        indices[at] += 1;
        for i in at + 1..k {
            indices[i] = indices[i - 1] + 1;
        }
    }
}

/// Hands out `remainder` CPUs in groups of `group` across `subset`, as the
/// remainder loops of `takeByTopologyNUMADistributed` do; `None` when a
/// whole pass hands out nothing (the kubelet would loop forever).
fn hand_out(
    available: &mut BTreeMap<u64, usize>,
    subset: &[u64],
    mut remainder: usize,
    group: usize,
) -> Option<Vec<u64>> {
    let mut order = Vec::new();
    while remainder > 0 {
        let before = remainder;
        for numa in subset {
            if remainder == 0 {
                break;
            }
            let free = available.entry(*numa).or_default();
            if *free < group {
                continue;
            }
            *free -= group;
            remainder = remainder.saturating_sub(group);
            order.push(*numa);
        }
        if remainder == before {
            return None;
        }
    }
    Some(order)
}

/// Most NUMA nodes (with CPUs) over which the distributed placement is
/// reproduced: it tries every combination of nodes and of remainder nodes,
/// which grows as 2^n (the kubelet's Topology Manager refuses more than 8
/// nodes unless `max-allowable-numa-nodes` says otherwise).
const MAX_DISTRIBUTED_NUMA_NODES: usize = 16;

/// `takeByTopologyNUMADistributed` (KEP-2902): `count` CPUs of `available`
/// spread evenly over the fewest NUMA nodes that can hold them, in groups of
/// `group` CPUs; the remainder goes where it leaves the free CPUs most even.
pub fn take_distributed(
    topology: &CpuTopology,
    available: &IdSet,
    count: usize,
    group: usize,
) -> Result<IdSet, String> {
    if group == 0 || !count.is_multiple_of(group) {
        return take_packed(topology, available, count);
    }
    let mut acc = Accumulator::new(topology, available, count);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(format!(
            "not enough CPUs: {count} requested, {} available",
            acc.free.len()
        ));
    }
    let numas = acc.sort_available(Level::Numa);
    if numas.len() > MAX_DISTRIBUTED_NUMA_NODES {
        return Err(format!(
            "{} NUMA nodes hold CPUs: the labeler reproduces the distributed placement over at most {MAX_DISTRIBUTED_NUMA_NODES}",
            numas.len()
        ));
    }
    let free_in = |acc: &Accumulator, numa: u64| acc.free_in(Level::Numa, numa);
    // rangeNUMANodesNeededToSatisfy
    let all_numas = topology.num_numa_nodes().max(1);
    let groups_total = (topology.cpus.len().max(1) - 1) / group + 1;
    let groups_per_numa = (groups_total - 1) / all_numas + 1;
    let groups_needed = (count - 1) / group + 1;
    let min_numas = (groups_needed - 1) / groups_per_numa + 1;
    let max_numas = groups_needed.min(numas.len());
    for k in min_numas..=max_numas {
        let mut best: Option<(f64, Vec<u64>, Vec<u64>)> = None;
        for combo in combinations(&numas, k) {
            if best.as_ref().is_some_and(|(balance, _, _)| *balance == 0.0) {
                break;
            }
            let free: usize = combo.iter().map(|&n| free_in(&acc, n)).sum();
            let groups: usize = combo.iter().map(|&n| free_in(&acc, n) / group).sum();
            let distribution = (count / k / group) * group;
            if free < count
                || groups * group < count
                || combo.iter().any(|&n| free_in(&acc, n) < distribution)
            {
                continue;
            }
            let mut after: BTreeMap<u64, usize> =
                numas.iter().map(|&n| (n, free_in(&acc, n))).collect();
            for numa in &combo {
                *after.entry(*numa).or_default() -= distribution;
            }
            let remainder = count - distribution * k;
            let remainder_combo: Vec<u64> = combo
                .iter()
                .filter(|n| after.get(n).is_some_and(|&free| free >= group))
                .copied()
                .collect();
            let mut local: Option<(f64, Vec<u64>)> = (remainder == 0).then(|| {
                let values: Vec<usize> = after.values().copied().collect();
                (standard_deviation(&values), Vec::new())
            });
            for size in (1..=remainder_combo.len()).rev() {
                if remainder == 0 {
                    break;
                }
                for subset in combinations(&remainder_combo, size) {
                    let available: usize = subset.iter().filter_map(|n| after.get(n)).sum();
                    if available < remainder {
                        continue;
                    }
                    let mut trial = after.clone();
                    if hand_out(&mut trial, &subset, remainder, group).is_none() {
                        continue;
                    }
                    let values: Vec<usize> = trial.values().copied().collect();
                    let balance = standard_deviation(&values);
                    if local.as_ref().is_none_or(|(best, _)| balance < *best) {
                        local = Some((balance, subset));
                    }
                }
            }
            if let Some((balance, subset)) = local {
                if best.as_ref().is_none_or(|(best, _, _)| balance < *best) {
                    best = Some((balance, combo, subset));
                }
            }
        }
        let Some((_, combo, remainder_numas)) = best else {
            continue;
        };
        let distribution = (count / combo.len() / group) * group;
        for &numa in &combo {
            let cpus = take_packed(
                topology,
                &acc.in_level(&acc.free, Level::Numa, numa),
                distribution,
            )?;
            acc.take(&cpus);
        }
        let mut remainder = count - distribution * combo.len();
        while remainder > 0 {
            let before = remainder;
            for &numa in &remainder_numas {
                if remainder == 0 {
                    break;
                }
                let free = acc.in_level(&acc.free, Level::Numa, numa);
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
mod tests {
    use super::*;
    use crate::model::CpuPlace;
    use rstest::rstest;

    /// A machine of `sockets` sockets, each one NUMA node per `numa_per_socket`,
    /// each NUMA node `cores` cores of `threads` threads, numbered as Linux
    /// numbers x86 CPUs: first thread of every core, then the second ones.
    fn machine(
        sockets: u32,
        numa_per_socket: u32,
        cores: u32,
        threads: u32,
    ) -> (BTreeMap<u32, NumaNode>, CpuView) {
        let numas = sockets * numa_per_socket;
        let per_thread = numas * cores;
        let mut nodes = BTreeMap::new();
        let mut places = BTreeMap::new();
        for numa in 0..numas {
            let mut cpus = IdSet::new();
            for core in 0..cores {
                for thread in 0..threads {
                    let cpu = thread * per_thread + numa * cores + core;
                    cpus.insert(cpu);
                    places.insert(
                        cpu,
                        CpuPlace {
                            core_id: u64::from(numa % numa_per_socket * cores + core),
                            package: u64::from(numa / numa_per_socket),
                            siblings: threads as usize,
                        },
                    );
                }
            }
            nodes.insert(
                numa,
                NumaNode {
                    cpus,
                    ..NumaNode::default()
                },
            );
        }
        let online = places.keys().copied().collect();
        (
            nodes,
            CpuView {
                online,
                places: Some(places),
            },
        )
    }

    fn topology(sockets: u32, numa_per_socket: u32, cores: u32, threads: u32) -> CpuTopology {
        let (nodes, view) = machine(sockets, numa_per_socket, cores, threads);
        CpuTopology::discover(&nodes, &view).unwrap()
    }

    fn per_numa(topology: &CpuTopology, cpus: &IdSet) -> Vec<usize> {
        let numas: Vec<u32> = cpus.iter().map(|cpu| topology.cpus[cpu].numa).collect();
        (0..topology.num_numa_nodes() as u32)
            .map(|n| numas.iter().filter(|&&m| m == n).count())
            .collect()
    }

    /// The example of policy_static.go: "Given a system with 8 CPUs
    /// available and HT enabled, if numReservedCPUs=2, then reserved={0,4}".
    #[test]
    fn two_reserved_cpus_are_the_first_core() {
        let topology = topology(1, 1, 4, 2);
        assert_eq!(topology.cpus_per_core(), 2);
        assert_eq!(
            take_packed(&topology, &topology.cpus(), 2),
            Ok(IdSet::from([0, 4]))
        );
    }

    /// Two sockets of 6 cores with 2 threads (socket 0: CPUs 0-5 and their
    /// siblings 12-17), as `takeByTopologyNUMAPacked` takes from it: a core
    /// before its neighbour's thread, a whole socket before any core.
    #[rstest]
    #[case::one_cpu(1, vec![0])]
    #[case::odd_count_fills_a_core_then_its_neighbour(3, vec![0, 1, 12])]
    #[case::a_whole_socket(12, (0..6).chain(12..18).collect())]
    #[case::a_socket_and_a_core(14, (0..7).chain(12..19).collect())]
    fn packed_takes_whole_units_first(#[case] count: usize, #[case] expected: Vec<u32>) {
        let topology = topology(2, 1, 6, 2);
        let taken = take_packed(&topology, &topology.cpus(), count).unwrap();
        assert_eq!(taken.into_iter().collect::<Vec<_>>(), expected);
    }

    #[rstest]
    #[case::small_reservation_on_the_first_node(1, 2, vec![2, 0, 0, 0])]
    #[case::odd_reservation_stays_on_one_node(1, 3, vec![3, 0, 0, 0])]
    #[case::more_than_a_node(1, 10, vec![8, 2, 0, 0])]
    #[case::nps2_two_sockets(2, 3, vec![3, 0, 0, 0])]
    fn packed_reservations_per_numa_node(
        #[case] sockets: u32,
        #[case] count: usize,
        #[case] expected: Vec<usize>,
    ) {
        let numa_per_socket = 4 / sockets;
        let topology = topology(sockets, numa_per_socket, 4, 2);
        let taken = take_packed(&topology, &topology.cpus(), count).unwrap();
        assert_eq!(per_numa(&topology, &taken), expected);
    }

    #[rstest]
    #[case::fits_one_node(2, 1, vec![2, 0])]
    #[case::spread_over_two_nodes(12, 1, vec![6, 6])]
    #[case::odd_count_in_pairs_falls_back_to_packing(3, 2, vec![3, 0])]
    #[case::spread_in_whole_cores(12, 2, vec![6, 6])]
    fn distributed_reservations_per_numa_node(
        #[case] count: usize,
        #[case] group: usize,
        #[case] expected: Vec<usize>,
    ) {
        let topology = topology(2, 1, 4, 2);
        let taken = take_distributed(&topology, &topology.cpus(), count, group).unwrap();
        assert_eq!(taken.len(), count);
        assert_eq!(per_numa(&topology, &taken), expected);
    }

    /// On NUMA nodes of unequal size, packing fills the smallest node first
    /// (fewest free CPUs) while distributing takes from the largest (it
    /// leaves the free CPUs most even).
    #[test]
    fn unequal_nodes_packed_and_distributed_differ() {
        let (mut nodes, mut view) = machine(2, 1, 4, 2);
        // Take CPU 3 and its sibling 11 (core 3 of node 0) offline.
        view.online.remove(&3);
        view.online.remove(&11);
        if let Some(node) = nodes.get_mut(&0) {
            node.cpus.remove(&3);
            node.cpus.remove(&11);
        }
        let topology = CpuTopology::discover(&nodes, &view).unwrap();
        let packed = take_packed(&topology, &topology.cpus(), 2).unwrap();
        assert_eq!(per_numa(&topology, &packed), vec![2, 0]);
        let distributed = take_distributed(&topology, &topology.cpus(), 2, 1).unwrap();
        assert_eq!(per_numa(&topology, &distributed), vec![0, 2]);
    }

    #[test]
    fn distributing_over_more_nodes_than_reproduced_is_an_error() {
        let topology = topology(1, 17, 1, 1);
        let error = take_distributed(&topology, &topology.cpus(), 2, 1).unwrap_err();
        assert!(error.contains("17 NUMA nodes"), "{error}");
        assert_eq!(
            take_packed(&topology, &topology.cpus(), 2).map(|cpus| cpus.len()),
            Ok(2)
        );
    }

    #[test]
    fn too_many_cpus_are_an_error() {
        let topology = topology(1, 1, 2, 2);
        assert!(take_packed(&topology, &topology.cpus(), 5).is_err());
        assert!(take_distributed(&topology, &topology.cpus(), 6, 2).is_err());
    }

    #[test]
    fn threads_per_core_needs_every_core_alike() {
        assert_eq!(topology(2, 1, 4, 2).uniform_threads_per_core(), Some(2));
        assert_eq!(topology(1, 1, 4, 1).uniform_threads_per_core(), Some(1));
        // A hybrid CPU: 2 cores with 2 threads (0-3), 4 single-thread cores (4-7).
        let mut places = BTreeMap::new();
        for cpu in 0..8u32 {
            let (core_id, siblings) = if cpu < 4 {
                (u64::from(cpu / 2), 2)
            } else {
                (u64::from(cpu), 1)
            };
            places.insert(
                cpu,
                CpuPlace {
                    core_id,
                    package: 0,
                    siblings,
                },
            );
        }
        let nodes = BTreeMap::from([(
            0,
            NumaNode {
                cpus: (0..8).collect(),
                ..NumaNode::default()
            },
        )]);
        let view = CpuView {
            online: (0..8).collect(),
            places: Some(places),
        };
        let hybrid = CpuTopology::discover(&nodes, &view).unwrap();
        assert_eq!(hybrid.uniform_threads_per_core(), None);
        // The kubelet's average: 8 CPUs on 6 cores.
        assert_eq!(hybrid.cpus_per_core(), 1);
    }

    #[rstest]
    #[case(&[0, 0], 0.0)]
    #[case(&[8, 6], 1.0)]
    #[case(&[1, 2, 4], 1.247)]
    fn standard_deviation_rounds_as_the_kubelet(#[case] values: &[usize], #[case] expected: f64) {
        assert_eq!(standard_deviation(values), expected);
    }

    #[test]
    fn combinations_in_the_kubelet_order() {
        assert_eq!(
            combinations(&[0, 1, 2], 2),
            vec![vec![0, 1], vec![0, 2], vec![1, 2]]
        );
        assert!(combinations(&[0], 2).is_empty());
    }
}
