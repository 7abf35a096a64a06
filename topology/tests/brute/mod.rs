//! A brute-force transliteration of the kubelet's admission, to check the
//! model against: every NUMA mask walked, every permutation of the hint
//! lists merged, CPUs and devices handled one by one with ids, containers
//! admitted in order. It follows the Go code statement by statement
//! (function names kept) and shares nothing with the model but its input
//! and output types.
//!
//! What the kubelet leaves to chance (Go's map order, the device plugin's
//! preferred allocation, which CPU ids the reserved ones are) is a
//! [`Variant`]: the model's definite answers must hold under every variant.
#![allow(clippy::too_many_arguments)]

use gpu_topology::kubelet::{
    AllocationFailure, ContainerDemand, ContainerKind, DeviceName, MemoryManagerPolicy, NodeFacts,
    PodDemand, Refusal, Remaining, Resource, StartupError,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use std::collections::{BTreeMap, BTreeSet};

/// The choices the kubelet's environment makes.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// Map and set iteration visits ids high to low.
    pub descending: bool,
    /// Sibling threads are `core*t + j` (else `core + j*cores`).
    pub siblings_adjacent: bool,
    /// Reserved CPUs sit on each NUMA node's highest cores (else lowest).
    pub reserved_high: bool,
}

pub const VARIANTS: [Variant; 3] = [
    Variant {
        descending: false,
        siblings_adjacent: false,
        reserved_high: false,
    },
    Variant {
        descending: true,
        siblings_adjacent: true,
        reserved_high: true,
    },
    Variant {
        descending: true,
        siblings_adjacent: false,
        reserved_high: false,
    },
];

/// The outcome, in the model's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Admit { aligned: bool, remaining: Remaining },
    Refuse(Refusal),
}

/// The brute force gives up (too many permutations, a loop of the kubelet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

// ---------------------------------------------------------------- bitmask.go

type BitMask = u64;

fn count(m: BitMask) -> u32 {
    m.count_ones()
}

fn new_bitmask(bits: &[usize]) -> BitMask {
    bits.iter().fold(0, |m, &b| m | (1 << b))
}

fn get_bits(m: BitMask) -> Vec<usize> {
    (0..64).filter(|&i| m & (1 << i) != 0).collect()
}

fn is_narrower_than(s: BitMask, m: BitMask) -> bool {
    if count(s) == count(m) {
        return s < m;
    }
    count(s) < count(m)
}

/// `IterateBitMasks`: sizes 1..n, each size in combination order.
fn iterate_bit_masks(bits: &[usize], mut callback: impl FnMut(BitMask)) {
    fn iterate(
        bits: &[usize],
        accum: &mut Vec<usize>,
        size: usize,
        callback: &mut dyn FnMut(BitMask),
    ) {
        if accum.len() == size {
            callback(new_bitmask(accum));
            return;
        }
        for i in 0..bits.len() {
            accum.push(bits[i]);
            iterate(&bits[i + 1..], accum, size, callback);
            accum.pop();
        }
    }
    for size in 1..=bits.len() {
        iterate(bits, &mut Vec::new(), size, &mut callback);
    }
}

// ------------------------------------------------------------------ policy.go

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    pub aff: Option<BitMask>,
    pub preferred: bool,
}

/// A provider's `map[string][]TopologyHint`: `None` for a nil map; a
/// resource's `None` for a nil list.
pub type ProviderMap = Option<Vec<(String, Option<Vec<Hint>>)>>;

fn filter_providers_hints(providers: &[ProviderMap]) -> Vec<Vec<Hint>> {
    let mut all = Vec::new();
    for hints in providers {
        let Some(hints) = hints.as_ref().filter(|h| !h.is_empty()) else {
            all.push(vec![Hint {
                aff: None,
                preferred: true,
            }]);
            continue;
        };
        for (_, list) in hints {
            match list {
                None => all.push(vec![Hint {
                    aff: None,
                    preferred: true,
                }]),
                Some(l) if l.is_empty() => all.push(vec![Hint {
                    aff: None,
                    preferred: false,
                }]),
                Some(l) => all.push(l.clone()),
            }
        }
    }
    all
}

fn merge_permutation(default: BitMask, permutation: &[Hint]) -> Hint {
    let mut preferred = true;
    let mut affinities: Vec<BitMask> = Vec::new();
    for hint in permutation {
        if let Some(a) = hint.aff {
            affinities.push(a);
            if a != affinities[0] {
                preferred = false;
            }
        }
        if !hint.preferred {
            preferred = false;
        }
    }
    let merged = affinities.iter().fold(default, |m, a| m & a);
    Hint {
        aff: Some(merged),
        preferred,
    }
}

fn narrowest_hint(hints: &[Hint]) -> Option<Hint> {
    let mut narrowest: Option<Hint> = None;
    for h in hints {
        let Some(a) = h.aff else { continue };
        match narrowest {
            None => narrowest = Some(*h),
            Some(n) if is_narrower_than(a, n.aff.unwrap_or(0)) => narrowest = Some(*h),
            _ => {}
        }
    }
    narrowest
}

fn max_of_min_affinity_counts(filtered: &[Vec<Hint>]) -> u32 {
    filtered
        .iter()
        .filter_map(|h| narrowest_hint(h))
        .map(|h| count(h.aff.unwrap_or(0)))
        .max()
        .unwrap_or(0)
}

pub struct NumaInfoB {
    pub nodes: Vec<usize>,
    pub distances: Vec<Vec<u64>>,
}

impl NumaInfoB {
    fn default_affinity(&self) -> BitMask {
        new_bitmask(&self.nodes)
    }

    fn narrowest(&self, m1: BitMask, m2: BitMask) -> BitMask {
        if is_narrower_than(m1, m2) {
            m1
        } else {
            m2
        }
    }

    fn average(&self, m: BitMask) -> f64 {
        let bits = get_bits(m);
        let (mut sum, mut n) = (0.0, 0.0);
        for &a in &bits {
            for &b in &bits {
                sum += self.distances[a][b] as f64;
                n += 1.0;
            }
        }
        sum / n
    }

    fn closest(&self, m1: BitMask, m2: BitMask) -> BitMask {
        if count(m1) != count(m2) {
            return self.narrowest(m1, m2);
        }
        let (d1, d2) = (self.average(m1), self.average(m2));
        if d1 == d2 {
            return if m1 < m2 { m1 } else { m2 };
        }
        if d1 < d2 {
            m1
        } else {
            m2
        }
    }
}

struct HintMerger<'a> {
    numa: &'a NumaInfoB,
    hints: Vec<Vec<Hint>>,
    best_non_preferred: u32,
    closest: bool,
}

impl HintMerger<'_> {
    fn compare_masks(&self, current: Hint, candidate: Hint) -> Hint {
        let (c, d) = (current.aff.unwrap_or(0), candidate.aff.unwrap_or(0));
        if c == d {
            return current;
        }
        let best = if self.closest {
            self.numa.closest(c, d)
        } else {
            self.numa.narrowest(c, d)
        };
        if best == c {
            current
        } else {
            candidate
        }
    }

    fn compare(&self, current: Option<Hint>, candidate: Hint) -> Option<Hint> {
        let cand = count(candidate.aff.unwrap_or(0));
        if cand == 0 {
            return current;
        }
        let Some(current) = current else {
            return Some(candidate);
        };
        if !current.preferred && candidate.preferred {
            return Some(candidate);
        }
        if current.preferred && !candidate.preferred {
            return Some(current);
        }
        if current.preferred && candidate.preferred {
            return Some(self.compare_masks(current, candidate));
        }
        let cur = count(current.aff.unwrap_or(0));
        let best = self.best_non_preferred;
        if cur > best {
            return Some(self.compare_masks(current, candidate));
        }
        if cur == best {
            if cand != best {
                return Some(current);
            }
            return Some(self.compare_masks(current, candidate));
        }
        if cand > best {
            return Some(current);
        }
        if cand == best {
            return Some(candidate);
        }
        if cand > cur {
            return Some(candidate);
        }
        if cand < cur {
            return Some(current);
        }
        Some(self.compare_masks(current, candidate))
    }

    fn merge(&self) -> Hint {
        let default = self.numa.default_affinity();
        let mut best: Option<Hint> = None;
        let mut accum = Vec::with_capacity(self.hints.len());
        self.iterate(0, &mut accum, &mut |perm| {
            let merged = merge_permutation(default, perm);
            best = self.compare(best, merged);
        });
        best.unwrap_or(Hint {
            aff: Some(default),
            preferred: false,
        })
    }

    /// `iterateAllProviderTopologyHints`.
    fn iterate(&self, i: usize, accum: &mut Vec<Hint>, callback: &mut dyn FnMut(&[Hint])) {
        if i == self.hints.len() {
            callback(accum);
            return;
        }
        for h in &self.hints[i] {
            accum.push(*h);
            self.iterate(i + 1, accum, callback);
            accum.pop();
        }
    }
}

fn filter_single_numa_hints(all: &[Vec<Hint>]) -> Vec<Vec<Hint>> {
    all.iter()
        .map(|hints| {
            hints
                .iter()
                .filter(|h| h.preferred && h.aff.is_none_or(|a| count(a) == 1))
                .copied()
                .collect()
        })
        .collect()
}

/// The permutations a merge would walk.
fn permutations(lists: &[Vec<Hint>]) -> u64 {
    lists
        .iter()
        .fold(1u64, |p, l| p.saturating_mul(l.len() as u64))
}

/// `Policy.Merge`.
fn policy_merge(
    policy: TopologyManagerPolicy,
    numa: &NumaInfoB,
    prefer_closest: bool,
    providers: &[ProviderMap],
    cap: u64,
) -> Result<(Hint, bool), TooLarge> {
    let filtered = filter_providers_hints(providers);
    let merger = |hints: Vec<Vec<Hint>>, closest: bool| -> Result<Hint, TooLarge> {
        if permutations(&hints) > cap {
            return Err(TooLarge);
        }
        let m = HintMerger {
            numa,
            best_non_preferred: max_of_min_affinity_counts(&hints),
            hints,
            closest,
        };
        Ok(m.merge())
    };
    Ok(match policy {
        TopologyManagerPolicy::None => (
            Hint {
                aff: None,
                preferred: false,
            },
            true,
        ),
        TopologyManagerPolicy::BestEffort => (merger(filtered, prefer_closest)?, true),
        TopologyManagerPolicy::Restricted => {
            let best = merger(filtered, prefer_closest)?;
            (best, best.preferred)
        }
        TopologyManagerPolicy::SingleNumaNode => {
            let mut best = merger(filter_single_numa_hints(&filtered), false)?;
            if best.aff == Some(numa.default_affinity()) {
                best.aff = None;
            }
            (best, best.preferred)
        }
    })
}

// ------------------------------------------------- resource helpers (KEP 753)

/// `AggregateContainerLimits` / `podGuaranteedCPUs` / `getPodRequestedResources`.
fn pod_total(containers: &[ContainerDemand], value: impl Fn(&ContainerDemand) -> u64) -> u64 {
    let mut requested_by_init = 0u64;
    let mut restartable = 0u64;
    for c in containers {
        match c.kind {
            ContainerKind::Sidecar => restartable += value(c),
            ContainerKind::Init => {
                requested_by_init = requested_by_init.max(restartable + value(c))
            }
            ContainerKind::App => {}
        }
    }
    let app: u64 = containers
        .iter()
        .filter(|c| c.kind == ContainerKind::App)
        .map(&value)
        .sum();
    requested_by_init.max(app + restartable)
}

// ------------------------------------------------------------ devicemanager

const GPU: &str = "nvidia.com/gpu";

/// One device-plugin resource's part of the Device Manager (its maps are
/// keyed by resource in the kubelet; each resource is handled on its own).
struct DeviceManager {
    resource: String,
    numa_nodes: Vec<usize>,
    /// Every NUMA node of the machine (`m.numaNodes`).
    machine_nodes: usize,
    /// Device id -> NUMA node.
    all_devices: BTreeMap<usize, usize>,
    allocated_devices: BTreeSet<usize>,
    devices_to_reuse: BTreeSet<usize>,
    /// Devices allocated per container.
    pod_devices: BTreeMap<usize, BTreeSet<usize>>,
    descending: bool,
}

impl DeviceManager {
    /// `device_numa_nodes`: from 1.36 (kubernetes#138244)
    /// `generateDeviceTopologyHints` walks `deviceNUMANodes(resource)`, the
    /// NUMA nodes of every registered device, instead of `m.numaNodes`.
    fn new(resource: &str, gpus: &[u32], descending: bool, device_numa_nodes: bool) -> Self {
        let mut all = BTreeMap::new();
        let mut id = 0;
        for (numa, &g) in gpus.iter().enumerate() {
            for _ in 0..g {
                all.insert(id, numa);
                id += 1;
            }
        }
        let numa_nodes = if device_numa_nodes {
            let held: BTreeSet<usize> = all.values().copied().collect();
            held.into_iter().collect()
        } else {
            (0..gpus.len()).collect()
        };
        DeviceManager {
            resource: resource.to_owned(),
            numa_nodes,
            machine_nodes: gpus.len(),
            all_devices: all,
            allocated_devices: BTreeSet::new(),
            devices_to_reuse: BTreeSet::new(),
            pod_devices: BTreeMap::new(),
            descending,
        }
    }

    fn registered(&self) -> bool {
        !self.all_devices.is_empty()
    }

    fn order(&self, set: &BTreeSet<usize>) -> Vec<usize> {
        let mut v: Vec<usize> = set.iter().copied().collect();
        if self.descending {
            v.reverse();
        }
        v
    }

    fn available(&self) -> BTreeSet<usize> {
        self.all_devices
            .keys()
            .filter(|d| !self.allocated_devices.contains(d))
            .copied()
            .collect()
    }

    fn generate_device_topology_hints(
        &self,
        available: &BTreeSet<usize>,
        reusable: &BTreeSet<usize>,
        request: u64,
    ) -> Vec<Hint> {
        let mut min_affinity = self.numa_nodes.len() as u32;
        let mut hints = Vec::new();
        iterate_bit_masks(&self.numa_nodes, |mask| {
            let in_mask = self
                .all_devices
                .values()
                .filter(|&&n| mask & (1 << n) != 0)
                .count() as u64;
            if in_mask >= request && count(mask) < min_affinity {
                min_affinity = count(mask);
            }
            let mut matching = 0u64;
            for d in reusable {
                if mask & (1 << self.all_devices[d]) == 0 {
                    return;
                }
                matching += 1;
            }
            for d in available {
                if mask & (1 << self.all_devices[d]) != 0 {
                    matching += 1;
                }
            }
            if matching < request {
                return;
            }
            hints.push(Hint {
                aff: Some(mask),
                preferred: false,
            });
        });
        for h in &mut hints {
            if count(h.aff.unwrap_or(0)) == min_affinity {
                h.preferred = true;
            }
        }
        hints
    }

    fn get_topology_hints(&self, limit: Option<u32>) -> ProviderMap {
        let Some(requested) = limit else {
            return Some(Vec::new());
        };
        if !self.registered() {
            return Some(Vec::new());
        }
        let available = self.available();
        let reusable = &self.devices_to_reuse;
        let requested = u64::from(requested);
        if (available.union(reusable).count() as u64) < requested {
            return Some(vec![(self.resource.clone(), Some(Vec::new()))]);
        }
        Some(vec![(
            self.resource.clone(),
            Some(self.generate_device_topology_hints(&available, reusable, requested)),
        )])
    }

    /// `GetPodTopologyHints` for this resource; `limit` reads a container's.
    fn get_pod_topology_hints(
        &self,
        pod: &PodDemand,
        limit: impl Fn(&ContainerDemand) -> Option<u32>,
    ) -> ProviderMap {
        if !pod.containers.iter().any(|c| limit(c).is_some()) || !self.registered() {
            return Some(Vec::new());
        }
        let requested = pod_total(&pod.containers, |c| u64::from(limit(c).unwrap_or(0)));
        let available = self.available();
        if (available.len() as u64) < requested {
            return Some(vec![(self.resource.clone(), Some(Vec::new()))]);
        }
        Some(vec![(
            self.resource.clone(),
            Some(self.generate_device_topology_hints(&available, &BTreeSet::new(), requested)),
        )])
    }

    /// `devicesToAllocate` (the plugin offers no preferred allocation).
    fn devices_to_allocate(
        &mut self,
        required: u32,
        reusable: &BTreeSet<usize>,
        hint: Hint,
    ) -> Result<BTreeSet<usize>, AllocationFailure> {
        let mut needed = required;
        let mut allocated = BTreeSet::new();
        if needed == 0 {
            return Ok(allocated);
        }
        let take_from = |this: &mut Self,
                         devices: &BTreeSet<usize>,
                         needed: &mut u32,
                         allocated: &mut BTreeSet<usize>|
         -> bool {
            let rest: BTreeSet<usize> = devices.difference(allocated).copied().collect();
            for d in this.order(&rest) {
                this.allocated_devices.insert(d);
                allocated.insert(d);
                *needed -= 1;
                if *needed == 0 {
                    return true;
                }
            }
            false
        };
        if take_from(self, reusable, &mut needed, &mut allocated) {
            return Ok(allocated);
        }
        let available = self.available();
        if (available.len() as u32) < needed {
            return Err(AllocationFailure::NotEnough {
                requested: u64::from(needed),
                available: available.len() as u64,
            });
        }
        let (aligned, unaligned, no_affinity) = self.filter_by_affinity(&available, hint);
        if (needed as usize) < aligned.len() {
            if take_from(self, &aligned, &mut needed, &mut allocated) {
                return Ok(allocated);
            }
            return Ok(allocated);
        }
        if take_from(self, &aligned, &mut needed, &mut allocated) {
            return Ok(allocated);
        }
        if take_from(self, &unaligned, &mut needed, &mut allocated) {
            return Ok(allocated);
        }
        take_from(self, &no_affinity, &mut needed, &mut allocated);
        Ok(allocated)
    }

    fn filter_by_affinity(
        &self,
        available: &BTreeSet<usize>,
        hint: Hint,
    ) -> (BTreeSet<usize>, BTreeSet<usize>, BTreeSet<usize>) {
        let Some(aff) = hint.aff else {
            return (BTreeSet::new(), BTreeSet::new(), available.clone());
        };
        let (aligned, unaligned) = available
            .iter()
            .partition(|&&d| aff & (1 << self.all_devices[&d]) != 0);
        (aligned, unaligned, BTreeSet::new())
    }

    /// `Allocate`.
    fn allocate(
        &mut self,
        i: usize,
        c: &ContainerDemand,
        limit: Option<u32>,
        hint: Hint,
    ) -> Result<(), AllocationFailure> {
        if !self.registered() {
            return Ok(());
        }
        let reuse = self.devices_to_reuse.clone();
        let got = match limit {
            Some(needed) => self.devices_to_allocate(needed, &reuse, hint)?,
            None => BTreeSet::new(),
        };
        self.pod_devices.insert(i, got.clone());
        match c.kind {
            ContainerKind::Init => self.devices_to_reuse.extend(got),
            _ => {
                for d in got {
                    self.devices_to_reuse.remove(&d);
                }
            }
        }
        Ok(())
    }

    fn free_per_numa(&self) -> Vec<u32> {
        let mut free = vec![0; self.machine_nodes];
        for d in self.available() {
            free[self.all_devices[&d]] += 1;
        }
        free
    }
}

// ------------------------------------------------------------- cpumanager

#[derive(Debug, Clone, Copy)]
struct CpuInfo {
    core: usize,
    socket: usize,
    numa: usize,
}

#[derive(Debug, Clone)]
struct CpuTopology {
    details: BTreeMap<usize, CpuInfo>,
    num_cpus: usize,
    num_cores: usize,
    num_sockets: usize,
    num_numa_nodes: usize,
}

type CpuSet = BTreeSet<usize>;

fn cpus_where(details: &BTreeMap<usize, CpuInfo>, f: impl Fn(&CpuInfo) -> bool) -> CpuSet {
    details
        .iter()
        .filter(|(_, i)| f(i))
        .map(|(&c, _)| c)
        .collect()
}

impl CpuTopology {
    fn cpus_per_core(&self) -> usize {
        self.num_cpus / self.num_cores.max(1)
    }

    fn cpus_per_socket(&self) -> usize {
        self.num_cpus / self.num_sockets.max(1)
    }

    fn keep_only(&self, cpus: &CpuSet) -> BTreeMap<usize, CpuInfo> {
        self.details
            .iter()
            .filter(|(c, _)| cpus.contains(c))
            .map(|(&c, &i)| (c, i))
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Numa,
    Socket,
    Core,
}

struct Accumulator<'a> {
    topo: &'a CpuTopology,
    details: BTreeMap<usize, CpuInfo>,
    needed: i64,
    result: CpuSet,
    numa_first: bool,
}

impl<'a> Accumulator<'a> {
    fn new(topo: &'a CpuTopology, available: &CpuSet, n: usize) -> Self {
        Accumulator {
            topo,
            details: topo.keep_only(available),
            needed: n as i64,
            result: CpuSet::new(),
            numa_first: topo.num_sockets >= topo.num_numa_nodes,
        }
    }

    fn ids(&self, level: Level) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .details
            .values()
            .map(|i| match level {
                Level::Numa => i.numa,
                Level::Socket => i.socket,
                Level::Core => i.core,
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        v.dedup();
        v
    }

    fn cpus_in(&self, level: Level, id: usize) -> CpuSet {
        cpus_where(&self.details, |i| match level {
            Level::Numa => i.numa == id,
            Level::Socket => i.socket == id,
            Level::Core => i.core == id,
        })
    }

    fn topo_cpus_in(&self, level: Level, id: usize) -> CpuSet {
        cpus_where(&self.topo.details, |i| match level {
            Level::Numa => i.numa == id,
            Level::Socket => i.socket == id,
            Level::Core => i.core == id,
        })
    }

    /// `sort`: by available CPUs ascending, then id.
    fn sort(&self, ids: &mut [usize], level: Level) {
        ids.sort_by_key(|&id| (self.cpus_in(level, id).len(), id));
    }

    fn sort_available_numa_nodes(&self) -> Vec<usize> {
        if self.numa_first {
            let mut numas = self.ids(Level::Numa);
            self.sort(&mut numas, Level::Numa);
            return numas;
        }
        let mut result = Vec::new();
        for socket in self.sort_available_sockets() {
            let mut numas: Vec<usize> = self
                .details
                .values()
                .filter(|i| i.socket == socket)
                .map(|i| i.numa)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            self.sort(&mut numas, Level::Numa);
            result.extend(numas);
        }
        result
    }

    fn sort_available_sockets(&self) -> Vec<usize> {
        if self.numa_first {
            let mut result = Vec::new();
            for numa in self.sort_available_numa_nodes() {
                let mut sockets: Vec<usize> = self
                    .details
                    .values()
                    .filter(|i| i.numa == numa)
                    .map(|i| i.socket)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                self.sort(&mut sockets, Level::Socket);
                result.extend(sockets);
            }
            return result;
        }
        let mut sockets = self.ids(Level::Socket);
        self.sort(&mut sockets, Level::Socket);
        sockets
    }

    fn sort_available_cores(&self) -> Vec<usize> {
        let mut result = Vec::new();
        if self.numa_first {
            for socket in self.sort_available_sockets() {
                let mut cores: Vec<usize> = self
                    .details
                    .values()
                    .filter(|i| i.socket == socket)
                    .map(|i| i.core)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                self.sort(&mut cores, Level::Core);
                result.extend(cores);
            }
        } else {
            for numa in self.sort_available_numa_nodes() {
                let mut cores: Vec<usize> = self
                    .details
                    .values()
                    .filter(|i| i.numa == numa)
                    .map(|i| i.core)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                self.sort(&mut cores, Level::Core);
                result.extend(cores);
            }
        }
        result
    }

    fn sort_available_cpus(&self) -> Vec<usize> {
        let mut result = Vec::new();
        for core in self.sort_available_cores() {
            result.extend(self.cpus_in(Level::Core, core));
        }
        result
    }

    fn take(&mut self, cpus: &CpuSet) {
        self.result.extend(cpus.iter().copied());
        for c in cpus {
            self.details.remove(c);
        }
        self.needed -= cpus.len() as i64;
    }

    fn needs(&self, n: usize) -> bool {
        self.needed >= n as i64
    }

    fn is_satisfied(&self) -> bool {
        self.needed < 1
    }

    fn is_failed(&self) -> bool {
        self.needed > self.details.len() as i64
    }

    fn take_full_numa_nodes(&mut self) {
        let free: Vec<usize> = self
            .sort_available_numa_nodes()
            .into_iter()
            .filter(|&n| {
                self.cpus_in(Level::Numa, n).len() == self.topo_cpus_in(Level::Numa, n).len()
            })
            .collect();
        for numa in free {
            let cpus = self.topo_cpus_in(Level::Numa, numa);
            if !self.needs(cpus.len()) {
                continue;
            }
            self.take(&cpus);
        }
    }

    fn take_full_sockets(&mut self) {
        let free: Vec<usize> = self
            .sort_available_sockets()
            .into_iter()
            .filter(|&s| self.cpus_in(Level::Socket, s).len() == self.topo.cpus_per_socket())
            .collect();
        for socket in free {
            let cpus = self.topo_cpus_in(Level::Socket, socket);
            if !self.needs(cpus.len()) {
                continue;
            }
            self.take(&cpus);
        }
    }

    fn take_full_cores(&mut self) {
        let free: Vec<usize> = self
            .sort_available_cores()
            .into_iter()
            .filter(|&c| self.cpus_in(Level::Core, c).len() == self.topo.cpus_per_core())
            .collect();
        for core in free {
            let cpus = self.topo_cpus_in(Level::Core, core);
            if !self.needs(cpus.len()) {
                continue;
            }
            self.take(&cpus);
        }
    }

    fn take_remaining_cpus(&mut self) {
        for cpu in self.sort_available_cpus() {
            self.take(&CpuSet::from([cpu]));
            if self.is_satisfied() {
                return;
            }
        }
    }

    fn range_numa_nodes_needed_to_satisfy(&self, group: usize) -> (usize, usize) {
        let num_numa = self.topo.num_numa_nodes;
        let available_numa = self.ids(Level::Numa).len();
        let num_cpus = self.topo.num_cpus;
        let groups = (num_cpus - 1) / group + 1;
        let per_numa = (groups - 1) / num_numa + 1;
        let needed = (self.needed as usize - 1) / group + 1;
        let min = (needed - 1) / per_numa + 1;
        (min, needed.min(available_numa))
    }
}

fn take_by_topology_numa_packed(
    topo: &CpuTopology,
    available: &CpuSet,
    n: usize,
) -> Result<CpuSet, ()> {
    let mut acc = Accumulator::new(topo, available, n);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(());
    }
    if acc.numa_first {
        acc.take_full_numa_nodes();
    } else {
        acc.take_full_sockets();
    }
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.numa_first {
        acc.take_full_sockets();
    } else {
        acc.take_full_numa_nodes();
    }
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    acc.take_full_cores();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    acc.take_remaining_cpus();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    Err(())
}

fn iterate_combinations(n: &[usize], k: usize, f: &mut dyn FnMut(&[usize]) -> bool) {
    fn helper(
        n: &[usize],
        k: usize,
        start: usize,
        accum: &mut Vec<usize>,
        f: &mut dyn FnMut(&[usize]) -> bool,
    ) -> bool {
        if k == 0 {
            return f(accum);
        }
        let mut i = start;
        while i + k <= n.len() {
            accum.push(n[i]);
            let brk = helper(n, k - 1, i + 1, accum, f);
            accum.pop();
            if brk {
                return true;
            }
            i += 1;
        }
        false
    }
    if k < 1 {
        return;
    }
    helper(n, k, 0, &mut Vec::new(), f);
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn standard_deviation(xs: &[i64]) -> f64 {
    let mean = round3(xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64);
    let sum: f64 = xs
        .iter()
        .map(|&x| (x as f64 - mean) * (x as f64 - mean))
        .sum();
    round3((sum / xs.len() as f64).sqrt())
}

/// `takeByTopologyNUMADistributed`; `Err(None)` for the kubelet's endless loop.
fn take_by_topology_numa_distributed(
    topo: &CpuTopology,
    available: &CpuSet,
    n: usize,
    group: usize,
) -> Result<CpuSet, Option<()>> {
    if !n.is_multiple_of(group) {
        return take_by_topology_numa_packed(topo, available, n).map_err(Some);
    }
    let mut acc = Accumulator::new(topo, available, n);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(Some(()));
    }
    let numas = acc.sort_available_numa_nodes();
    let (min_numas, max_numas) = acc.range_numa_nodes_needed_to_satisfy(group);
    for k in min_numas..=max_numas {
        let mut best_balance = f64::MAX;
        let mut best_remainder: Vec<usize> = Vec::new();
        let mut best_combo: Option<Vec<usize>> = None;
        let mut looped = false;
        iterate_combinations(&numas, k, &mut |combo| {
            if best_balance == 0.0 {
                return true;
            }
            let cpus: usize = combo
                .iter()
                .map(|&c| acc.cpus_in(Level::Numa, c).len())
                .sum();
            if cpus < n {
                return false;
            }
            let groups: usize = combo
                .iter()
                .map(|&c| acc.cpus_in(Level::Numa, c).len() / group)
                .sum();
            if groups * group < n {
                return false;
            }
            let distribution = (n / combo.len() / group) * group;
            if combo
                .iter()
                .any(|&c| acc.cpus_in(Level::Numa, c).len() < distribution)
            {
                return false;
            }
            let mut after: BTreeMap<usize, i64> = numas
                .iter()
                .map(|&m| (m, acc.cpus_in(Level::Numa, m).len() as i64))
                .collect();
            for c in combo {
                *after.get_mut(c).unwrap() -= distribution as i64;
            }
            let remainder = n - distribution * combo.len();
            let remainder_combo: Vec<usize> = combo
                .iter()
                .copied()
                .filter(|c| after[c] >= group as i64)
                .collect();
            let mut local_best = f64::MAX;
            let mut local_remainder: Vec<usize> = Vec::new();
            if remainder == 0 {
                local_best = standard_deviation(&after.values().copied().collect::<Vec<_>>());
            }
            let mut size = remainder_combo.len();
            while remainder > 0 && size >= 1 {
                iterate_combinations(&remainder_combo, size, &mut |subset| {
                    let held: i64 = subset.iter().map(|s| after[s]).sum();
                    if held < remainder as i64 {
                        return false;
                    }
                    let mut a = after.clone();
                    let mut r = remainder as i64;
                    while r > 0 {
                        let mut progressed = false;
                        for s in subset {
                            if r == 0 {
                                break;
                            }
                            if a[s] < group as i64 {
                                continue;
                            }
                            *a.get_mut(s).unwrap() -= group as i64;
                            r -= group as i64;
                            progressed = true;
                        }
                        if !progressed {
                            looped = true;
                            return true;
                        }
                    }
                    let balance = standard_deviation(&a.values().copied().collect::<Vec<_>>());
                    if balance < local_best {
                        local_best = balance;
                        local_remainder = subset.to_vec();
                    }
                    false
                });
                if looped {
                    return true;
                }
                size -= 1;
            }
            if local_best < best_balance {
                best_balance = local_best;
                best_remainder = local_remainder;
                best_combo = Some(combo.to_vec());
            }
            false
        });
        if looped {
            return Err(None);
        }
        let Some(combo) = best_combo else { continue };
        let distribution = (n / combo.len() / group) * group;
        for &numa in &combo {
            let cpus = acc.cpus_in(Level::Numa, numa);
            let got = take_by_topology_numa_packed(topo, &cpus, distribution).map_err(Some)?;
            acc.take(&got);
        }
        let mut remainder = n - distribution * combo.len();
        while remainder > 0 {
            let mut progressed = false;
            for &numa in &best_remainder {
                if remainder == 0 {
                    break;
                }
                let cpus = acc.cpus_in(Level::Numa, numa);
                if cpus.len() < group {
                    continue;
                }
                let got = take_by_topology_numa_packed(topo, &cpus, group).map_err(Some)?;
                acc.take(&got);
                remainder -= group;
                progressed = true;
            }
            if !progressed {
                return Err(None);
            }
        }
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
        return Err(Some(()));
    }
    take_by_topology_numa_packed(topo, available, n).map_err(Some)
}

struct CpuManager {
    topo: CpuTopology,
    reserved: CpuSet,
    reserved_physical: CpuSet,
    default_set: CpuSet,
    cpus_to_reuse: CpuSet,
    full_pcpus_only: bool,
    distribute: bool,
    align_by_socket: bool,
}

enum CpuError {
    Smt {
        requested: u32,
        available: Option<u32>,
    },
    NotEnough {
        requested: u32,
        available: u32,
    },
    Loop,
}

impl CpuManager {
    fn new(node: &NodeFacts, v: Variant) -> Self {
        let numas = node.numa_nodes.as_ref().unwrap();
        let t = node.threads_per_core.unwrap() as usize;
        let total_cores: usize = numas.iter().map(|n| n.cpus.unwrap() as usize / t).sum();
        let mut details = BTreeMap::new();
        let mut reserved = CpuSet::new();
        let mut core = 0;
        for (numa, n) in numas.iter().enumerate() {
            let cores = n.cpus.unwrap() as usize / t;
            let r = n.reserved_cpus.unwrap() as usize;
            let k = n.reserved_cores.unwrap() as usize;
            let first = core;
            for c in first..first + cores {
                for j in 0..t {
                    let id = if v.siblings_adjacent {
                        c * t + j
                    } else {
                        c + j * total_cores
                    };
                    details.insert(
                        id,
                        CpuInfo {
                            core: c,
                            socket: n.socket.unwrap() as usize,
                            numa,
                        },
                    );
                }
            }
            // Reserved CPUs fill `r - k` cores of this node's `k` reserved
            // cores (t = 2) and one thread of the others.
            let reserved_cores: Vec<usize> = if v.reserved_high {
                (first + cores - k..first + cores).rev().collect()
            } else {
                (first..first + k).collect()
            };
            let mut left = r;
            for (i, &c) in reserved_cores.iter().enumerate() {
                let cores_left = k - i;
                let take = if left >= cores_left * t {
                    t
                } else {
                    (left - (cores_left - 1)).clamp(1, t)
                };
                let threads: Vec<usize> = (0..t)
                    .map(|j| {
                        if v.siblings_adjacent {
                            c * t + j
                        } else {
                            c + j * total_cores
                        }
                    })
                    .collect();
                let chosen: Vec<usize> = if v.descending {
                    threads.iter().rev().take(take).copied().collect()
                } else {
                    threads.iter().take(take).copied().collect()
                };
                reserved.extend(chosen);
                left -= take;
            }
            core += cores;
        }
        let topo = CpuTopology {
            num_cpus: details.len(),
            num_cores: total_cores,
            num_sockets: details
                .values()
                .map(|i: &CpuInfo| i.socket)
                .collect::<BTreeSet<_>>()
                .len(),
            num_numa_nodes: details
                .values()
                .map(|i: &CpuInfo| i.numa)
                .collect::<BTreeSet<_>>()
                .len(),
            details,
        };
        let mut reserved_physical = CpuSet::new();
        for c in &reserved {
            let core = topo.details[c].core;
            reserved_physical.extend(cpus_where(&topo.details, |i| i.core == core));
        }
        let cm = &node.cpu_manager;
        CpuManager {
            default_set: topo.details.keys().copied().collect(),
            topo,
            reserved,
            reserved_physical,
            cpus_to_reuse: CpuSet::new(),
            full_pcpus_only: cm.full_pcpus_only.unwrap(),
            distribute: cm.distribute_cpus_across_numa.unwrap(),
            align_by_socket: cm.align_by_socket.unwrap(),
        }
    }

    fn available(&self) -> CpuSet {
        self.default_set
            .difference(&self.reserved)
            .copied()
            .collect()
    }

    fn numa_nodes(&self) -> Vec<usize> {
        self.topo
            .details
            .values()
            .map(|i| i.numa)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    fn sockets_in_numa_nodes(&self, numas: &[usize]) -> BTreeSet<usize> {
        self.topo
            .details
            .values()
            .filter(|i| numas.contains(&i.numa))
            .map(|i| i.socket)
            .collect()
    }

    fn is_hint_socket_aligned(&self, mask: BitMask, min_affinity: u32) -> bool {
        let per_socket = self.topo.num_numa_nodes / self.topo.num_sockets.max(1);
        if per_socket == 0 {
            return false;
        }
        let min_sockets = (min_affinity as usize).div_ceil(per_socket);
        self.sockets_in_numa_nodes(&get_bits(mask)).len() == min_sockets
    }

    fn generate_cpu_topology_hints(
        &self,
        available: &CpuSet,
        reusable: &CpuSet,
        request: usize,
    ) -> Vec<Hint> {
        let numas = self.numa_nodes();
        let mut min_affinity = numas.len() as u32;
        let mut hints = Vec::new();
        iterate_bit_masks(&numas, |mask| {
            let in_mask = cpus_where(&self.topo.details, |i| mask & (1 << i.numa) != 0).len();
            if in_mask >= request && count(mask) < min_affinity {
                min_affinity = count(mask);
            }
            let mut matching = 0;
            for c in reusable {
                if mask & (1 << self.topo.details[c].numa) == 0 {
                    return;
                }
                matching += 1;
            }
            for c in available {
                if mask & (1 << self.topo.details[c].numa) != 0 {
                    matching += 1;
                }
            }
            if matching < request {
                return;
            }
            hints.push(Hint {
                aff: Some(mask),
                preferred: false,
            });
        });
        for h in &mut hints {
            let mask = h.aff.unwrap_or(0);
            if self.align_by_socket && self.is_hint_socket_aligned(mask, min_affinity) {
                h.preferred = true;
                continue;
            }
            if count(mask) == min_affinity {
                h.preferred = true;
            }
        }
        hints
    }

    fn hints(&self, requested: u32) -> ProviderMap {
        if requested == 0 {
            return None;
        }
        Some(vec![(
            "cpu".into(),
            Some(self.generate_cpu_topology_hints(
                &self.available(),
                &self.cpus_to_reuse,
                requested as usize,
            )),
        )])
    }

    fn take_by_topology(&self, available: &CpuSet, n: usize) -> Result<CpuSet, CpuError> {
        let result = if self.distribute {
            let group = if self.full_pcpus_only {
                self.topo.cpus_per_core()
            } else {
                1
            };
            take_by_topology_numa_distributed(&self.topo, available, n, group)
        } else {
            take_by_topology_numa_packed(&self.topo, available, n).map_err(Some)
        };
        result.map_err(|e| match e {
            None => CpuError::Loop,
            Some(()) => CpuError::NotEnough {
                requested: n as u32,
                available: available.len() as u32,
            },
        })
    }

    fn get_aligned_cpus(&self, aff: BitMask, allocatable: &CpuSet) -> CpuSet {
        let bits = get_bits(aff);
        if self.align_by_socket {
            let sockets = self.sockets_in_numa_nodes(&bits);
            return allocatable
                .iter()
                .filter(|c| sockets.contains(&self.topo.details[c].socket))
                .copied()
                .collect();
        }
        allocatable
            .iter()
            .filter(|c| bits.contains(&self.topo.details[c].numa))
            .copied()
            .collect()
    }

    fn allocate(&mut self, kind: ContainerKind, n: u32, hint: Hint) -> Result<(), CpuError> {
        if n == 0 {
            return Ok(());
        }
        if self.full_pcpus_only {
            let per_core = self.topo.cpus_per_core() as u32;
            if !n.is_multiple_of(per_core) {
                return Err(CpuError::Smt {
                    requested: n,
                    available: None,
                });
            }
            let physical = self.default_set.difference(&self.reserved_physical).count() as u32;
            if n > physical {
                return Err(CpuError::Smt {
                    requested: n,
                    available: Some(physical),
                });
            }
        }
        let allocatable: CpuSet = self
            .available()
            .union(&self.cpus_to_reuse)
            .copied()
            .collect();
        let mut result = CpuSet::new();
        if let Some(aff) = hint.aff {
            let aligned = self.get_aligned_cpus(aff, &allocatable);
            let num = (n as usize).min(aligned.len());
            result.extend(self.take_by_topology(&aligned, num)?);
        }
        let rest: CpuSet = allocatable.difference(&result).copied().collect();
        let more = self
            .take_by_topology(&rest, n as usize - result.len())
            .map_err(|e| match e {
                CpuError::NotEnough { .. } => CpuError::NotEnough {
                    requested: n,
                    available: allocatable.len() as u32,
                },
                other => other,
            })?;
        result.extend(more);
        for c in &result {
            self.default_set.remove(c);
        }
        // updateCPUsToReuse.
        if kind == ContainerKind::Init {
            self.cpus_to_reuse.extend(result);
        } else {
            for c in &result {
                self.cpus_to_reuse.remove(c);
            }
        }
        Ok(())
    }

    fn free_per_numa(&self, nodes: usize) -> Vec<u32> {
        let mut free = vec![0; nodes];
        for c in self.available() {
            free[self.topo.details[&c].numa] += 1;
        }
        free
    }
}

fn guaranteed_cpus(pod: &PodDemand, c: &ContainerDemand) -> u32 {
    if !pod.guaranteed || !c.cpu_millis.is_multiple_of(1000) || pod.pod_level_resources {
        return 0;
    }
    (c.cpu_millis / 1000) as u32
}

// --------------------------------------------------------- memorymanager

const KINDS: usize = 3;
const MIB: u64 = 1 << 20;

#[derive(Debug, Clone)]
struct NodeState {
    allocatable: [u64; KINDS],
    free: [u64; KINDS],
    cells: Vec<usize>,
    assignments: u32,
}

struct MemoryManager {
    machine: BTreeMap<usize, NodeState>,
    /// mask -> resource -> bytes.
    reusable: BTreeMap<BitMask, [u64; KINDS]>,
}

fn requested(c: &ContainerDemand) -> [u64; KINDS] {
    [c.memory_bytes, c.hugepages_2mi_bytes, c.hugepages_1gi_bytes]
}

impl MemoryManager {
    fn new(node: &NodeFacts) -> Self {
        let mut machine = BTreeMap::new();
        for (id, n) in node.numa_nodes.as_ref().unwrap().iter().enumerate() {
            let small = n.hugepages_2mi.unwrap();
            let large = n.hugepages_1gi.unwrap();
            let hp2 = small.pages * 2 * MIB;
            let hp1 = large.pages * 1024 * MIB;
            let memory =
                n.memory_mib.unwrap() * MIB - n.reserved_memory_mib.unwrap() * MIB - hp2 - hp1;
            let allocatable = [
                memory,
                hp2 - small.reserved_pages * 2 * MIB,
                hp1 - large.reserved_pages * 1024 * MIB,
            ];
            machine.insert(
                id,
                NodeState {
                    allocatable,
                    free: allocatable,
                    cells: vec![id],
                    assignments: 0,
                },
            );
        }
        MemoryManager {
            machine,
            reusable: BTreeMap::new(),
        }
    }

    fn reusable_for(&self, mask: BitMask, k: usize) -> u64 {
        self.reusable.get(&mask).map(|r| r[k]).unwrap_or(0)
    }

    fn calculate_hints(&self, req: &[u64; KINDS]) -> Option<Vec<Hint>> {
        let numa_nodes: Vec<usize> = self.machine.keys().copied().collect();
        let mut min_affinity = numa_nodes.len() as u32;
        let kinds: Vec<usize> = (0..KINDS).filter(|&k| req[k] > 0).collect();
        let mut hints = Vec::new();
        iterate_bit_masks(&numa_nodes, |mask| {
            let bits = get_bits(mask);
            let single = bits.len() == 1;
            let total = |k: usize, free: bool| -> u64 {
                bits.iter()
                    .map(|b| {
                        if free {
                            self.machine[b].free[k]
                        } else {
                            self.machine[b].allocatable[k]
                        }
                    })
                    .sum()
            };
            for &k in &kinds {
                if total(k, false) < req[k] {
                    return;
                }
            }
            if count(mask) < min_affinity {
                min_affinity = count(mask);
            }
            if single && self.machine[&bits[0]].cells.len() > 1 {
                return;
            }
            for b in &bits {
                let state = &self.machine[b];
                if !single && state.assignments > 0 {
                    if state.cells.len() == 1 {
                        return;
                    }
                    if state.cells != bits {
                        return;
                    }
                }
            }
            for &k in &kinds {
                if total(k, true) + self.reusable_for(mask, k) < req[k] {
                    return;
                }
            }
            hints.push(Hint {
                aff: Some(mask),
                preferred: false,
            });
        });
        if kinds.is_empty() || hints.is_empty() {
            return None;
        }
        for h in &mut hints {
            h.preferred = count(h.aff.unwrap_or(0)) == min_affinity;
        }
        Some(hints)
    }

    fn provider(&self, req: &[u64; KINDS]) -> ProviderMap {
        match self.calculate_hints(req) {
            None => Some(Vec::new()),
            Some(hints) => Some(
                (0..KINDS)
                    .filter(|&k| req[k] > 0)
                    .map(|k| (format!("memory-{k}"), Some(hints.clone())))
                    .collect(),
            ),
        }
    }

    fn find_best_hint(hints: &[Hint]) -> Option<Hint> {
        let mut best: Option<Hint> = None;
        for h in hints {
            match best {
                None => best = Some(*h),
                Some(b) => {
                    if h.preferred && !b.preferred {
                        best = Some(*h);
                        continue;
                    }
                    if h.preferred == b.preferred
                        && is_narrower_than(h.aff.unwrap_or(0), b.aff.unwrap_or(0))
                    {
                        best = Some(*h);
                    }
                }
            }
        }
        best
    }

    fn allocate(
        &mut self,
        kind: ContainerKind,
        req: &[u64; KINDS],
        hint: Hint,
    ) -> Result<(), AllocationFailure> {
        let mut best = hint;
        if best.aff.is_none() {
            let hints = self
                .calculate_hints(req)
                .ok_or(AllocationFailure::NoMemoryAffinity)?;
            let default =
                Self::find_best_hint(&hints).ok_or(AllocationFailure::NoMemoryAffinity)?;
            if !default.preferred && best.preferred {
                return Err(AllocationFailure::MemoryHintNotPreferred);
            }
            best = default;
        }
        let mask = best.aff.unwrap_or(0);
        let satisfies = (0..KINDS).filter(|&k| req[k] > 0).all(|k| {
            get_bits(mask)
                .iter()
                .map(|b| self.machine[b].free[k])
                .sum::<u64>()
                >= req[k]
        });
        if !satisfies {
            let hints = self.calculate_hints(req).unwrap_or_default();
            let filtered: Vec<Hint> = hints
                .into_iter()
                .filter(|h| h.aff.unwrap_or(0) & mask == mask)
                .collect();
            if filtered.is_empty() {
                return Err(AllocationFailure::NoExtendedMemoryAffinity);
            }
            let extended = Self::find_best_hint(&filtered).unwrap();
            if !extended.preferred && best.preferred {
                return Err(AllocationFailure::MemoryHintNotPreferred);
            }
            best = extended;
        }
        let mask = best.aff.unwrap_or(0);
        let bits = get_bits(mask);
        let single = bits.len() == 1;
        for b in &bits {
            let state = &self.machine[b];
            if state.assignments == 0 || single {
                continue;
            }
            if state.cells.len() == 1 || state.cells != bits {
                return Err(AllocationFailure::MemoryViolatesNumaAllocation);
            }
        }
        for k in (0..KINDS).filter(|&k| req[k] > 0) {
            let reusable = self.reusable_for(mask, k);
            let mut size = req[k].saturating_sub(reusable);
            for b in &bits {
                let state = self.machine.get_mut(b).unwrap();
                state.assignments += 1;
                state.cells = bits.clone();
                if size == 0 || state.free[k] == 0 {
                    continue;
                }
                let n = size.min(state.free[k]);
                state.free[k] -= n;
                size -= n;
            }
        }
        let entry = self.reusable.entry(mask).or_insert([0; KINDS]);
        for k in (0..KINDS).filter(|&k| req[k] > 0) {
            if kind == ContainerKind::Init {
                entry[k] = entry[k].max(req[k]);
            } else if entry[k] != 0 {
                entry[k] = entry[k].saturating_sub(req[k]);
            }
        }
        Ok(())
    }

    fn free_per_numa(&self) -> Vec<[u64; 3]> {
        self.machine.values().map(|s| s.free).collect()
    }
}

fn pod_memory_request(pod: &PodDemand) -> [u64; KINDS] {
    let mut out = [0; KINDS];
    for (k, slot) in out.iter_mut().enumerate() {
        if pod
            .containers
            .iter()
            .any(|c| c.kind == ContainerKind::App && requested(c)[k] > 0)
        {
            *slot = pod_total(&pod.containers, |c| requested(c)[k]);
        }
    }
    out
}

// --------------------------------------------------------------- scopes

struct Kubelet<'a> {
    pod: &'a PodDemand,
    policy: TopologyManagerPolicy,
    numa: NumaInfoB,
    prefer_closest: bool,
    devices: DeviceManager,
    /// The pod's other device resources ([`PodDemand::devices`]), by index.
    others: Vec<DeviceManager>,
    cpu: Option<CpuManager>,
    memory: Option<MemoryManager>,
    cap: u64,
}

enum Fail {
    Refuse(Refusal),
    TooLarge,
}

impl Kubelet<'_> {
    fn memory_pinned(&self) -> bool {
        self.pod.guaranteed && !self.pod.pod_level_resources
    }

    /// The Device Manager's one map: every device resource's hints.
    fn device_map(&self, maps: Vec<ProviderMap>) -> ProviderMap {
        Some(maps.into_iter().flatten().flatten().collect())
    }

    fn container_hints(&self, c: &ContainerDemand) -> Vec<ProviderMap> {
        let mut maps = vec![self.devices.get_topology_hints(c.gpus)];
        for (index, other) in self.others.iter().enumerate() {
            maps.push(other.get_topology_hints(c.device(index)));
        }
        let mut providers = vec![self.device_map(maps)];
        if let Some(cpu) = &self.cpu {
            providers.push(cpu.hints(guaranteed_cpus(self.pod, c)));
        }
        if let Some(m) = &self.memory {
            providers.push(if self.memory_pinned() {
                m.provider(&requested(c))
            } else {
                None
            });
        }
        providers
    }

    fn pod_hints(&self) -> Vec<ProviderMap> {
        let mut maps = vec![self.devices.get_pod_topology_hints(self.pod, |c| c.gpus)];
        for (index, other) in self.others.iter().enumerate() {
            maps.push(other.get_pod_topology_hints(self.pod, |c| c.device(index)));
        }
        let mut providers = vec![self.device_map(maps)];
        if let Some(cpu) = &self.cpu {
            let n = pod_total(&self.pod.containers, |c| {
                u64::from(guaranteed_cpus(self.pod, c))
            });
            providers.push(cpu.hints(n as u32));
        }
        if let Some(m) = &self.memory {
            providers.push(if self.memory_pinned() {
                m.provider(&pod_memory_request(self.pod))
            } else {
                None
            });
        }
        providers
    }

    fn allocate(&mut self, i: usize, hint: Hint) -> Result<(), Fail> {
        let c = &self.pod.containers[i];
        let refuse = |resource, failure| {
            Fail::Refuse(Refusal::AllocationFailed {
                container: i,
                resource,
                failure,
            })
        };
        self.devices
            .allocate(i, c, c.gpus, hint)
            .map_err(|f| refuse(Resource::Gpu, f))?;
        for (index, other) in self.others.iter_mut().enumerate() {
            let name = DeviceName::new(&other.resource);
            other
                .allocate(i, c, c.device(index), hint)
                .map_err(|f| refuse(Resource::Device(name), f))?;
        }
        let n = guaranteed_cpus(self.pod, c);
        if let Some(cpu) = &mut self.cpu {
            let per_core = cpu.topo.cpus_per_core() as u32;
            cpu.allocate(c.kind, n, hint).map_err(|e| match e {
                CpuError::Smt {
                    requested,
                    available,
                } => Fail::Refuse(Refusal::SmtAlignment {
                    container: i,
                    requested,
                    cpus_per_core: per_core,
                    available_physical_cpus: available,
                }),
                CpuError::NotEnough {
                    requested,
                    available,
                } => refuse(
                    Resource::Cpu,
                    AllocationFailure::NotEnough {
                        requested: u64::from(requested),
                        available: u64::from(available),
                    },
                ),
                CpuError::Loop => Fail::TooLarge,
            })?;
        }
        let pinned = self.memory_pinned();
        if let (Some(m), true) = (&mut self.memory, pinned) {
            m.allocate(c.kind, &requested(c), hint)
                .map_err(|f| refuse(Resource::Memory, f))?;
        }
        Ok(())
    }

    fn merge(&self, providers: &[ProviderMap]) -> Result<(Hint, bool), Fail> {
        policy_merge(
            self.policy,
            &self.numa,
            self.prefer_closest,
            providers,
            self.cap,
        )
        .map_err(|_| Fail::TooLarge)
    }

    fn aligned(&self, hint: Hint, alignable: bool) -> bool {
        let mask = hint.aff.unwrap_or(self.numa.default_affinity());
        !alignable || (hint.preferred && count(mask) == 1)
    }

    fn container_alignable(&self, c: &ContainerDemand) -> bool {
        let gpus = c.gpus.unwrap_or(0) > 0 && self.devices.registered()
            || self
                .others
                .iter()
                .enumerate()
                .any(|(index, other)| c.device(index).unwrap_or(0) > 0 && other.registered());
        let cpus = self.cpu.is_some() && guaranteed_cpus(self.pod, c) > 0;
        let memory = self.memory.is_some() && self.memory_pinned() && requested(c) != [0; 3];
        gpus || cpus || memory
    }

    fn admit(&mut self, scope: TopologyManagerScope) -> Result<bool, Fail> {
        let containers = self.pod.containers.len();
        let one = |i: usize| if containers == 1 { Some(0) } else { Some(i) };
        if self.policy == TopologyManagerPolicy::None {
            let mut anything = false;
            for i in 0..containers {
                anything |= self.container_alignable(&self.pod.containers[i]);
                self.allocate(
                    i,
                    Hint {
                        aff: None,
                        preferred: false,
                    },
                )?;
            }
            return Ok(!anything || self.numa.nodes.len() == 1);
        }
        let mut aligned = true;
        if scope == TopologyManagerScope::Pod && containers > 1 {
            let (hint, admit) = self.merge(&self.pod_hints())?;
            let alignable =
                (0..containers).any(|i| self.container_alignable(&self.pod.containers[i]));
            aligned &= self.aligned(hint, alignable);
            if !admit {
                return Err(Fail::Refuse(Refusal::TopologyAffinity { container: None }));
            }
            for i in 0..containers {
                self.allocate(i, hint)?;
            }
        } else {
            for i in 0..containers {
                let c = &self.pod.containers[i];
                let (hint, admit) = self.merge(&self.container_hints(c))?;
                aligned &= self.aligned(hint, self.container_alignable(c));
                if !admit {
                    return Err(Fail::Refuse(Refusal::TopologyAffinity {
                        container: one(i),
                    }));
                }
                self.allocate(i, hint)?;
            }
        }
        Ok(aligned)
    }
}

/// The kubelet's answer for `pod` on the empty `node` (every fact known),
/// or `Err(TooLarge)` when a merge has more than `cap` permutations.
pub fn brute_admit(
    node: &NodeFacts,
    pod: &PodDemand,
    v: Variant,
    cap: u64,
) -> Result<Outcome, TooLarge> {
    let numas = node.numa_nodes.as_ref().unwrap();
    let tm = &node.topology_manager;
    let policy = tm.policy.unwrap();
    // NewManager and ValidateStaticPolicyOptions.
    if policy != TopologyManagerPolicy::None
        && numas.len() > tm.max_allowable_numa_nodes.unwrap() as usize
    {
        return Ok(Outcome::Refuse(Refusal::KubeletNotStarted(
            StartupError::TooManyNumaNodes {
                numa_nodes: numas.len(),
                max_allowable: tm.max_allowable_numa_nodes.unwrap(),
            },
        )));
    }
    let cpu_static = node.cpu_manager.policy == Some(CpuManagerPolicy::Static);
    if cpu_static
        && node.cpu_manager.align_by_socket == Some(true)
        && policy == TopologyManagerPolicy::SingleNumaNode
    {
        return Ok(Outcome::Refuse(Refusal::KubeletNotStarted(
            StartupError::AlignBySocketWithSingleNumaNode,
        )));
    }
    let gpus: Vec<u32> = numas.iter().map(|n| n.gpus.unwrap()).collect();
    // The version decides the device hints' range; the caller picks one.
    let device_numa_nodes = node
        .kubelet_version
        .expect("the brute force runs one kubelet version")
        .at_least(1, 36);
    let devices = DeviceManager::new(GPU, &gpus, v.descending, device_numa_nodes);
    // The scheduler / predicate admission: the node's GPUs.
    let wanted = pod_total(&pod.containers, |c| u64::from(c.gpus.unwrap_or(0)));
    if pod.containers.iter().any(|c| c.gpus.is_some()) && wanted > devices.all_devices.len() as u64
    {
        return Ok(Outcome::Refuse(Refusal::Insufficient {
            resource: Resource::Gpu,
            requested: wanted,
            capacity: devices.all_devices.len() as u64,
        }));
    }
    let mut others = Vec::new();
    for (index, resource) in pod.devices.iter().enumerate() {
        let manager = DeviceManager::new(
            resource,
            &node.devices[resource],
            v.descending,
            device_numa_nodes,
        );
        let wanted = pod_total(&pod.containers, |c| u64::from(c.device(index).unwrap_or(0)));
        if pod.containers.iter().any(|c| c.device(index).is_some())
            && wanted > manager.all_devices.len() as u64
        {
            return Ok(Outcome::Refuse(Refusal::Insufficient {
                resource: Resource::Device(DeviceName::new(resource)),
                requested: wanted,
                capacity: manager.all_devices.len() as u64,
            }));
        }
        others.push(manager);
    }
    let distances = numas
        .iter()
        .map(|n| {
            n.distances
                .clone()
                .unwrap_or_else(|| vec![10; numas.len()])
                .into_iter()
                .map(u64::from)
                .collect()
        })
        .collect();
    let memory_static = node.memory_manager == Some(MemoryManagerPolicy::Static);
    let mut kubelet = Kubelet {
        pod,
        policy,
        numa: NumaInfoB {
            nodes: (0..numas.len()).collect(),
            distances,
        },
        prefer_closest: tm.prefer_closest_numa_nodes.unwrap()
            && policy != TopologyManagerPolicy::SingleNumaNode,
        devices,
        others,
        cpu: cpu_static.then(|| CpuManager::new(node, v)),
        memory: memory_static.then(|| MemoryManager::new(node)),
        cap,
    };
    match kubelet.admit(tm.scope.unwrap()) {
        Ok(aligned) => Ok(Outcome::Admit {
            aligned,
            remaining: Remaining {
                gpus: Some(kubelet.devices.free_per_numa()),
                cpus: kubelet.cpu.as_ref().map(|c| c.free_per_numa(numas.len())),
                memory: kubelet.memory.as_ref().map(MemoryManager::free_per_numa),
            },
        }),
        Err(Fail::Refuse(r)) => Ok(Outcome::Refuse(r)),
        Err(Fail::TooLarge) => Err(TooLarge),
    }
}
