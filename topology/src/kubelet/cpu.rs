//! The static CPU Manager: exclusive CPUs, their hints, SMT alignment and
//! which NUMA nodes an allocation takes CPUs from.
//!
//! Reproduces `pkg/kubelet/cm/cpumanager/policy_static.go`
//! (`guaranteedCPUs`, `podGuaranteedCPUs`, `GetTopologyHints`,
//! `GetPodTopologyHints`, `generateCPUTopologyHints`, `isHintSocketAligned`,
//! `Allocate` with `full-pcpus-only` -> `SMTAlignmentError`, `allocateCPUs`,
//! `getAlignedCPUs`, `updateCPUsToReuse`) and `cpu_assignment.go`
//! (`takeByTopologyNUMAPacked`: whole NUMA nodes and sockets, whole cores,
//! then single threads, each level sorted by free CPUs ascending;
//! `takeByTopologyNUMADistributed` with its balance score).
//!
//! CPUs are tracked per NUMA node as counts of cores of each kind (how many
//! of a core's threads are free, reusable from an init container, reserved
//! or taken), never as CPU ids. Where the kubelet breaks a tie by CPU or core
//! id between cores that differ in kind, the outcome is marked unknown and
//! only a later question that depends on it answers
//! `Indeterminate::CpuIds`.

use super::counts::{counted_hints, CountedResource};
use super::facts::{validate_cpus, ContainerKind, Fact, InputError, NumaNodeFacts};
use super::hint::ResourceHints;
use super::mask::NumaMask;
use super::outcome::{HintReport, Indeterminate, Unknown, Unsupported};

/// Millicores in a CPU.
const MILLIS_PER_CPU: u64 = 1000;

/// `guaranteedCPUs`: a Guaranteed pod's container with an integer CPU
/// request gets that many exclusive CPUs; anything else shares the pool.
pub fn guaranteed_cpus(guaranteed: bool, cpu_millis: u64) -> u32 {
    if !guaranteed || !cpu_millis.is_multiple_of(MILLIS_PER_CPU) {
        return 0;
    }
    u32::try_from(cpu_millis / MILLIS_PER_CPU).unwrap_or(u32::MAX)
}

/// `generateCPUTopologyHints` for `request` CPUs given, per NUMA node, its
/// CPUs (`capacity`), the free ones of the shared pool and the reusable ones
/// of init containers. Masks range over the nodes with CPUs.
pub fn cpu_topology_hints(
    capacity: &[u32],
    free: &[u32],
    reusable: &[u32],
    request: u32,
) -> (ResourceHints, HintReport) {
    let widen = |v: &[u32]| v.iter().map(|&c| u64::from(c)).collect::<Vec<u64>>();
    let nodes_with = |v: &[u32]| {
        v.iter().enumerate().fold(
            NumaMask::EMPTY,
            |m, (i, &c)| if c > 0 { m.with(i) } else { m },
        )
    };
    let (capacity64, free64) = (widen(capacity), widen(free));
    let resource = CountedResource {
        nodes: capacity.len(),
        universe: nodes_with(capacity),
        capacity: &capacity64,
        free: &free64,
        reusable_nodes: nodes_with(reusable),
        reusable: reusable.iter().map(|&r| u64::from(r)).sum(),
    };
    let (set, report) = counted_hints(&resource, u64::from(request), |_, _| false);
    (ResourceHints::List(set), report)
}

/// One physical core: counts of its threads by state. Threads not counted
/// are assigned to earlier containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Core {
    free: u32,
    reusable: u32,
    reserved: u32,
    /// Taken by the allocation in progress (from `free` / `reusable`).
    taken_free: u32,
    taken_reusable: u32,
}

impl Core {
    const fn available(self) -> u32 {
        self.free + self.reusable
    }

    /// What tells two cores apart for the rest of the admission: for an init
    /// container its taken threads become reusable, for others they are gone.
    const fn key(self, init: bool) -> (u32, u32, u32, u32) {
        let taken = if init {
            self.taken_free + self.taken_reusable
        } else {
            0
        };
        (self.free, self.reusable, self.reserved, taken)
    }

    /// The core with `count` more of its available threads taken, free ones
    /// first (the caller flags the choice when it is the CPU ids').
    fn take(self, count: u32) -> Core {
        let from_free = count.min(self.free);
        let from_reusable = (count - from_free).min(self.reusable);
        Core {
            free: self.free - from_free,
            reusable: self.reusable - from_reusable,
            taken_free: self.taken_free + from_free,
            taken_reusable: self.taken_reusable + from_reusable,
            ..self
        }
    }
}

/// The CPUs of one NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NumaCpus {
    /// CPUs of the node, reserved ones included.
    cpus: u32,
    /// Cores by kind, or why their kinds are unknown.
    cores: Result<Vec<(Core, u32)>, Unknown>,
    free: u32,
    reusable: u32,
    /// Taken by the allocation in progress.
    taken: u32,
    /// `free` and `reusable` are right (their sum always is).
    reusable_known: bool,
    /// Which free threads share a core with reserved ones is known.
    physical_known: bool,
}

impl NumaCpus {
    fn new(
        numa: usize,
        cpus: u32,
        reserved: u32,
        reserved_cores: Option<u32>,
        threads: u32,
    ) -> Self {
        let cores = Self::initial_cores(numa, cpus, reserved, reserved_cores, threads);
        NumaCpus {
            cpus,
            cores,
            free: cpus - reserved,
            reusable: 0,
            taken: 0,
            reusable_known: true,
            physical_known: true,
        }
    }

    /// The kubelet reserves CPUs core by core (`takeByTopology` from the
    /// lowest cores); with 2 threads per core, `reserved` CPUs on
    /// `reserved_cores` cores fill `reserved - cores` cores and half-fill the rest.
    fn initial_cores(
        numa: usize,
        cpus: u32,
        reserved: u32,
        reserved_cores: Option<u32>,
        t: u32,
    ) -> Result<Vec<(Core, u32)>, Unknown> {
        let core = |free, reserved| Core {
            free,
            reusable: 0,
            reserved,
            taken_free: 0,
            taken_reusable: 0,
        };
        let all = cpus / t;
        if reserved == 0 {
            return Ok(vec![(core(t, 0), all)]);
        }
        if t == 1 {
            return Ok(vec![(core(1, 0), cpus - reserved), (core(0, 1), reserved)]);
        }
        let k = reserved_cores.ok_or(Unknown::Missing(Fact::ReservedCores { numa }))?;
        let kinds = if reserved == k * t {
            vec![(core(t, 0), all - k), (core(0, t), k)]
        } else if t == 2 {
            vec![
                (core(2, 0), all - k),
                (core(0, 2), reserved - k),
                (core(1, 1), 2 * k - reserved),
            ]
        } else if k == 1 {
            vec![(core(t, 0), all - 1), (core(t - reserved, reserved), 1)]
        } else {
            return Err(Unknown::Unsupported(Unsupported::PartialReservedCores {
                numa,
            }));
        };
        Ok(kinds.into_iter().filter(|&(_, n)| n > 0).collect())
    }

    fn available(&self) -> u32 {
        self.free + self.reusable
    }

    /// Free threads on cores without reserved ones (`GetAvailablePhysicalCPUs`).
    fn free_physical(&self) -> Result<u32, Unknown> {
        let cores = self.cores.as_ref().map_err(|e| *e)?;
        Ok(cores
            .iter()
            .filter(|(c, _)| c.reserved == 0)
            .map(|(c, n)| c.free * n)
            .sum())
    }

    fn whole_cores(&self, t: u32) -> Result<u32, Unknown> {
        let cores = self.cores.as_ref().map_err(|e| *e)?;
        Ok(cores
            .iter()
            .filter(|(c, _)| c.available() == t)
            .map(|(_, n)| n)
            .sum())
    }

    fn normalize(cores: &mut Vec<(Core, u32)>) {
        crate::sort::sort(cores);
        let mut merged: Vec<(Core, u32)> = Vec::with_capacity(cores.len());
        for &(core, n) in cores.iter().filter(|(_, n)| *n > 0) {
            match merged.last_mut() {
                Some((last, count)) if *last == core => *count += n,
                _ => merged.push((core, n)),
            }
        }
        *cores = merged;
    }

    /// Records a choice among `kinds` that CPU ids decide.
    fn flag_choice(&mut self, kinds: &[Core], init: bool) {
        let Some(first) = kinds.first() else { return };
        for other in &kinds[1..] {
            if other.reserved != first.reserved {
                self.physical_known = false;
            }
            let (a, b) = (first.key(init), other.key(init));
            if (a.0, a.1, a.3) != (b.0, b.1, b.3) {
                self.reusable_known = false;
            }
        }
    }

    /// Counts of a take the caller cannot place on cores.
    fn take_counts(&mut self, count: u32) {
        let from_free = count.min(self.free);
        // Free or reusable threads first is the CPU ids' choice.
        if count > 0 && self.free > 0 && self.reusable > 0 {
            self.reusable_known = false;
        }
        self.free -= from_free;
        self.reusable -= count - from_free;
        self.taken += count;
    }

    /// Takes every available thread.
    fn take_all(&mut self) {
        if let Ok(cores) = &mut self.cores {
            for (core, _) in cores.iter_mut() {
                *core = core.take(core.available());
            }
            Self::normalize(cores);
        }
        self.taken += self.available();
        self.free = 0;
        self.reusable = 0;
    }

    /// Takes `count` cores among those with `per_core` available threads,
    /// `per_core` threads each (or `partial` threads of one more core),
    /// in core-id order: which kinds go is the ids' choice when they differ.
    fn take_in_class(&mut self, per_core: u32, count: u32, partial: u32, init: bool) {
        let Ok(cores) = &self.cores else { return };
        let class: Vec<(Core, u32)> = cores
            .iter()
            .filter(|(c, _)| c.available() == per_core)
            .copied()
            .collect();
        let in_class: u32 = class.iter().map(|(_, n)| n).sum();
        let touched = count + u32::from(partial > 0);
        let mut distinct: Vec<Core> = Vec::new();
        for (core, _) in &class {
            if !distinct.iter().any(|d| d.key(init) == core.key(init)) {
                distinct.push(*core);
            }
        }
        if touched > 0 && touched < in_class {
            self.flag_choice(&distinct, init);
        }
        let mut left = count;
        let mut partial_left = partial;
        let mut next: Vec<(Core, u32)> = Vec::new();
        let mut taken_free = 0;
        let mut taken_reusable = 0;
        for (core, n) in class {
            let whole = left.min(n);
            left -= whole;
            let mut rest = n - whole;
            if whole > 0 {
                let done = core.take(per_core);
                taken_free += (done.taken_free - core.taken_free) * whole;
                taken_reusable += (done.taken_reusable - core.taken_reusable) * whole;
                next.push((done, whole));
            }
            if partial_left > 0 && rest > 0 && left == 0 {
                if core.free > 0 && core.reusable > 0 {
                    self.reusable_known = false;
                }
                let done = core.take(partial_left);
                taken_free += done.taken_free - core.taken_free;
                taken_reusable += done.taken_reusable - core.taken_reusable;
                next.push((done, 1));
                rest -= 1;
                partial_left = 0;
            }
            next.push((core, rest));
        }
        if let Ok(cores) = &mut self.cores {
            cores.retain(|(c, _)| c.available() != per_core);
            cores.extend(next);
            Self::normalize(cores);
        }
        self.free -= taken_free;
        self.reusable -= taken_reusable;
        self.taken += taken_free + taken_reusable;
    }

    /// `takeFullCores` on this node: `count` whole cores.
    fn take_whole_cores(&mut self, count: u32, t: u32, init: bool) {
        self.take_in_class(t, count, 0, init);
    }

    /// `takeRemainingCPUs` on this node: `count` threads, cores with the
    /// fewest available threads first, each core's threads together.
    fn take_threads(&mut self, count: u32, t: u32, init: bool) {
        if self.cores.is_err() {
            self.take_counts(count);
            return;
        }
        let mut left = count;
        for per_core in 1..=t {
            if left == 0 {
                break;
            }
            let in_class: u32 = match &self.cores {
                Ok(cores) => cores
                    .iter()
                    .filter(|(c, _)| c.available() == per_core)
                    .map(|(_, n)| n)
                    .sum(),
                Err(_) => 0,
            };
            let threads = in_class * per_core;
            if left >= threads {
                self.take_in_class(per_core, in_class, 0, init);
                left -= threads;
            } else {
                self.take_in_class(per_core, left / per_core, left % per_core, init);
                left = 0;
            }
        }
    }

    /// `takeByTopologyNUMAPacked` confined to this node: whole cores, then
    /// threads (a whole node is only taken when all of it is asked for).
    fn take_packed(&mut self, count: u32, t: u32, init: bool) {
        if count == 0 {
            return;
        }
        if count == self.available() {
            self.take_all();
            return;
        }
        match self.whole_cores(t) {
            Ok(whole) => {
                let cores = whole.min(count / t);
                self.take_whole_cores(cores, t, init);
                self.take_threads(count - cores * t, t, init);
            }
            Err(_) => self.take_counts(count),
        }
    }

    /// Ends the allocation: an init container's threads become reusable.
    fn finish(&mut self, init: bool) {
        if init {
            self.reusable += self.taken;
        }
        self.taken = 0;
        if let Ok(cores) = &mut self.cores {
            for (core, _) in cores.iter_mut() {
                if init {
                    core.reusable += core.taken_free + core.taken_reusable;
                }
                core.taken_free = 0;
                core.taken_reusable = 0;
            }
            Self::normalize(cores);
        }
    }
}

/// Sockets of the NUMA nodes with CPUs: the `numaFirst` / `socketsFirst`
/// choice of `newCPUAccumulator` and the socket sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SocketLayout {
    /// Socket of each NUMA node (meaningless for nodes without CPUs).
    socket_of: Vec<u32>,
    /// `NumSockets >= NumNUMANodes`: NUMA nodes are the first level.
    numa_first: bool,
    /// `CPUsPerSocket`: all CPUs over the sockets.
    cpus_per_socket: u32,
    /// Distinct sockets, ascending, with their CPUs.
    sockets: Vec<(u32, u32)>,
    numa_nodes_with_cpus: u32,
}

impl SocketLayout {
    pub(crate) fn new(numas: &[NumaNodeFacts], cpus: &[u32]) -> Result<Self, Unknown> {
        let mut socket_of = vec![0; numas.len()];
        let mut sockets: Vec<(u32, u32)> = Vec::new();
        for (numa, (facts, &c)) in numas.iter().zip(cpus).enumerate() {
            if c == 0 {
                continue;
            }
            let socket = facts
                .socket
                .ok_or(Unknown::Missing(Fact::Socket { numa }))?;
            if let Some(slot) = socket_of.get_mut(numa) {
                *slot = socket;
            }
            match sockets.iter_mut().find(|(s, _)| *s == socket) {
                Some((_, total)) => *total += c,
                None => sockets.push((socket, c)),
            }
        }
        crate::sort::sort(&mut sockets);
        let numa_nodes_with_cpus = cpus.iter().filter(|&&c| c > 0).count() as u32;
        let total: u32 = cpus.iter().sum();
        let socket_count = sockets.len() as u32;
        Ok(SocketLayout {
            socket_of,
            numa_first: socket_count >= numa_nodes_with_cpus,
            cpus_per_socket: total.checked_div(socket_count).unwrap_or(0),
            sockets,
            numa_nodes_with_cpus,
        })
    }

    fn socket(&self, numa: usize) -> u32 {
        self.socket_of.get(numa).copied().unwrap_or(0)
    }

    fn socket_cpus(&self, socket: u32) -> u32 {
        self.sockets
            .iter()
            .find(|(s, _)| *s == socket)
            .map(|(_, c)| *c)
            .unwrap_or(0)
    }

    /// Sockets of `mask`'s nodes.
    fn sockets_of(&self, mask: NumaMask) -> Vec<u32> {
        let mut sockets: Vec<u32> = mask.nodes().map(|n| self.socket(n)).collect();
        crate::sort::sort(&mut sockets);
        sockets.dedup();
        sockets
    }

    /// `isHintSocketAligned`.
    fn hint_socket_aligned(&self, mask: NumaMask, min_affinity: u32) -> bool {
        let per_socket = self
            .numa_nodes_with_cpus
            .checked_div(self.sockets.len() as u32)
            .unwrap_or(0);
        if per_socket == 0 {
            return false;
        }
        let min_sockets = min_affinity.div_ceil(per_socket);
        self.sockets_of(mask).len() as u32 == min_sockets
    }

    /// Every NUMA node (with CPUs) on the sockets of `mask` (`getAlignedCPUs`
    /// under `align-by-socket`).
    fn socket_span(&self, mask: NumaMask, cpus: &[u32]) -> NumaMask {
        let sockets = self.sockets_of(mask);
        (0..cpus.len()).fold(NumaMask::EMPTY, |span, n| {
            if cpus.get(n).copied().unwrap_or(0) > 0 && sockets.contains(&self.socket(n)) {
                span.with(n)
            } else {
                span
            }
        })
    }
}

/// The CPU Manager options the model reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuOptions {
    pub full_pcpus_only: bool,
    pub distribute_cpus_across_numa: bool,
    pub align_by_socket: bool,
}

/// A failed `takeByTopology`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TakeError {
    NotEnough {
        available: u32,
    },
    /// The split across NUMA nodes needs this.
    Unknown(Unknown),
    /// `takeByTopologyNUMADistributed` never ends.
    Loops,
    /// The model cannot follow the kubelet here.
    Stop(Unknown),
}

/// The machine's CPUs during admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuState {
    threads: u32,
    numas: Vec<NumaCpus>,
    layout: Result<SocketLayout, Unknown>,
    options: CpuOptions,
    /// How past allocations split across NUMA nodes, when unknown: why.
    split: Result<(), Unknown>,
    /// An init container took exclusive CPUs: some may be reusable.
    reuse_seen: bool,
    /// Some core holds reserved and free threads (or may: its kinds are unknown).
    half_reserved_cores: bool,
}

/// Why a container's CPUs cannot be allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuAllocError {
    /// `SMTAlignmentError`.
    Smt {
        requested: u32,
        cpus_per_core: u32,
        available_physical_cpus: Option<u32>,
    },
    /// Fewer allocatable CPUs than requested.
    NotEnough {
        requested: u32,
        available: u32,
    },
    Unknown(Unknown),
}

impl CpuState {
    /// The empty machine from its facts: an input error when they contradict
    /// each other, unknown when one the CPU Manager needs is missing.
    pub fn new(
        numas: &[NumaNodeFacts],
        threads: u32,
        options: CpuOptions,
    ) -> Result<Result<Self, Unknown>, InputError> {
        for (numa, facts) in numas.iter().enumerate() {
            validate_cpus(numa, facts, Some(threads))?;
        }
        Ok(Self::from_valid_facts(numas, threads, options))
    }

    /// [`CpuState::new`] for facts already validated.
    fn from_valid_facts(
        numas: &[NumaNodeFacts],
        threads: u32,
        options: CpuOptions,
    ) -> Result<Self, Unknown> {
        let mut cpus = Vec::with_capacity(numas.len());
        let mut state = Vec::with_capacity(numas.len());
        for (numa, facts) in numas.iter().enumerate() {
            let c = facts.cpus.ok_or(Unknown::Missing(Fact::Cpus { numa }))?;
            let reserved = facts
                .reserved_cpus
                .ok_or(Unknown::Missing(Fact::ReservedCpus { numa }))?;
            cpus.push(c);
            state.push(NumaCpus::new(
                numa,
                c,
                reserved,
                facts.reserved_cores,
                threads,
            ));
        }
        let half_reserved_cores = state.iter().any(|n| match &n.cores {
            Ok(cores) => cores
                .iter()
                .any(|(c, _)| c.reserved > 0 && c.reserved < threads),
            Err(_) => true,
        });
        Ok(CpuState {
            threads,
            half_reserved_cores,
            numas: state,
            layout: SocketLayout::new(numas, &cpus),
            options,
            split: Ok(()),
            reuse_seen: false,
        })
    }

    /// Marks `held` CPUs of NUMA node `numa` exclusively assigned to other
    /// pods; `false` when the node has fewer free.
    ///
    /// Which cores they are on is not published. Under `full-pcpus-only`
    /// every exclusive allocation the kubelet made is whole cores
    /// (`Allocate` refuses other sizes, and `takeByTopology` takes whole
    /// free cores first, which suffice for a request within the free
    /// physical CPUs), so `held` whole cores go when it divides; otherwise
    /// only the counts are right and the cores are marked unknown, which
    /// only questions about cores (an SMT-aligned split, a split across
    /// NUMA nodes by cores) then answer.
    pub fn occupy(&mut self, numa: usize, held: u32) -> bool {
        let t = self.threads;
        let whole_only = self.options.full_pcpus_only;
        let Some(node) = self.numas.get_mut(numa) else {
            return held == 0;
        };
        if held == 0 {
            return true;
        }
        if held > node.free {
            return false;
        }
        let by_cores = t == 1
            || (whole_only
                && held.is_multiple_of(t)
                && node.whole_cores(t).is_ok_and(|whole| whole >= held / t));
        if by_cores {
            node.take_whole_cores(held / t, t, false);
        } else {
            node.take_counts(held);
            node.cores = Err(Unknown::Indeterminate(Indeterminate::BusyCores { numa }));
        }
        node.finish(false);
        true
    }

    /// Free CPUs per NUMA node (shared pool less reserved), when known.
    pub fn free_per_numa(&self) -> Option<Vec<u32>> {
        self.split.ok()?;
        self.numas
            .iter()
            .map(|n| n.reusable_known.then_some(n.free))
            .collect()
    }

    /// Marks the split of allocations across NUMA nodes unknown from here on.
    pub(crate) fn forget_split(&mut self, why: Unknown) {
        if self.split.is_ok() {
            self.split = Err(why);
        }
    }

    fn cpus(&self) -> Vec<u32> {
        self.numas.iter().map(|n| n.cpus).collect()
    }

    fn with_cpus(&self) -> NumaMask {
        self.numas.iter().enumerate().fold(
            NumaMask::EMPTY,
            |m, (i, n)| if n.cpus > 0 { m.with(i) } else { m },
        )
    }

    fn available_in(&self, set: NumaMask) -> u32 {
        set.nodes()
            .filter_map(|n| self.numas.get(n))
            .map(NumaCpus::available)
            .sum()
    }

    /// Free and reusable CPUs per node, for hints.
    fn per_node(&self, container: Option<usize>) -> Result<(Vec<u64>, Vec<u64>), Unknown> {
        self.split?;
        let indeterminate = Unknown::Indeterminate(Indeterminate::CpuIds {
            container: container.unwrap_or(0),
        });
        let mut free = Vec::with_capacity(self.numas.len());
        let mut reusable = Vec::with_capacity(self.numas.len());
        for n in &self.numas {
            if !n.reusable_known {
                return Err(indeterminate);
            }
            free.push(u64::from(n.free));
            reusable.push(u64::from(n.reusable));
        }
        Ok((free, reusable))
    }

    /// The CPU Manager's hints for `request` exclusive CPUs
    /// (`generateCPUTopologyHints`): masks over the NUMA nodes with CPUs,
    /// capacity counting reserved CPUs, availability not.
    pub fn hints(
        &self,
        request: u32,
        container: Option<usize>,
    ) -> Result<(ResourceHints, HintReport), Unknown> {
        let (free, reusable) = self.per_node(container)?;
        let capacity: Vec<u64> = self.numas.iter().map(|n| u64::from(n.cpus)).collect();
        let reusable_nodes =
            reusable.iter().enumerate().fold(
                NumaMask::EMPTY,
                |m, (i, &r)| if r > 0 { m.with(i) } else { m },
            );
        let resource = CountedResource {
            nodes: self.numas.len(),
            universe: self.with_cpus(),
            capacity: &capacity,
            free: &free,
            reusable_nodes,
            reusable: reusable.iter().sum(),
        };
        let layout = if self.options.align_by_socket {
            Some(self.layout.as_ref().map_err(|e| *e)?)
        } else {
            None
        };
        let (set, report) = counted_hints(&resource, u64::from(request), |mask, min| {
            layout.is_some_and(|l| l.hint_socket_aligned(mask, min))
        });
        Ok((ResourceHints::List(set), report))
    }

    /// `GetAvailablePhysicalCPUs`: free CPUs on cores without reserved ones.
    fn free_physical(&self, container: usize) -> Result<u32, Unknown> {
        // Without half-reserved cores or reuse, every free thread counts.
        if !self.reuse_seen && !self.half_reserved_cores {
            return Ok(self.numas.iter().map(NumaCpus::available).sum());
        }
        self.split?;
        let mut sum = 0;
        for n in &self.numas {
            if !n.physical_known || !n.reusable_known {
                return Err(Unknown::Indeterminate(Indeterminate::CpuIds { container }));
            }
            sum += n.free_physical()?;
        }
        Ok(sum)
    }

    /// `enforceSMTAlignment` under `full-pcpus-only`.
    fn check_smt(&self, requested: u32, container: usize) -> Result<(), CpuAllocError> {
        if !self.options.full_pcpus_only {
            return Ok(());
        }
        let smt = |available| CpuAllocError::Smt {
            requested,
            cpus_per_core: self.threads,
            available_physical_cpus: available,
        };
        if !requested.is_multiple_of(self.threads) {
            return Err(smt(None));
        }
        let physical = self
            .free_physical(container)
            .map_err(CpuAllocError::Unknown)?;
        if requested > physical {
            return Err(smt(Some(physical)));
        }
        Ok(())
    }

    /// NUMA nodes of `set` with free CPUs, sorted as `sortAvailableNUMANodes`.
    fn numa_order(&self, layout: &SocketLayout, set: NumaMask) -> Vec<usize> {
        let active: Vec<usize> = set
            .nodes()
            .filter(|&n| self.numas.get(n).is_some_and(|c| c.available() > 0))
            .collect();
        let by_available = |nodes: &mut Vec<usize>| {
            crate::sort::sort_by_key(nodes, |&n| {
                (self.numas.get(n).map_or(0, NumaCpus::available), n)
            });
        };
        if layout.numa_first {
            let mut nodes = active;
            by_available(&mut nodes);
            return nodes;
        }
        let mut order = Vec::with_capacity(active.len());
        for socket in self.socket_order(layout, set) {
            let mut nodes: Vec<usize> = active
                .iter()
                .copied()
                .filter(|&n| layout.socket(n) == socket)
                .collect();
            by_available(&mut nodes);
            order.extend(nodes);
        }
        order
    }

    /// Sockets of `set` with free CPUs, sorted as `sortAvailableSockets`.
    fn socket_order(&self, layout: &SocketLayout, set: NumaMask) -> Vec<u32> {
        let available = |socket: u32| -> u32 {
            set.nodes()
                .filter(|&n| layout.socket(n) == socket)
                .filter_map(|n| self.numas.get(n))
                .map(NumaCpus::available)
                .sum()
        };
        if layout.numa_first {
            let mut sockets = Vec::new();
            for n in self.numa_order(layout, set) {
                let s = layout.socket(n);
                if !sockets.contains(&s) {
                    sockets.push(s);
                }
            }
            return sockets;
        }
        let mut sockets: Vec<u32> = layout
            .sockets
            .iter()
            .map(|(s, _)| *s)
            .filter(|&s| available(s) > 0)
            .collect();
        crate::sort::sort_by_key(&mut sockets, |&s| (available(s), s));
        sockets
    }

    fn take_full_numa_nodes(&mut self, layout: &SocketLayout, set: NumaMask, need: &mut u32) {
        for n in self.numa_order(layout, set) {
            let Some(node) = self.numas.get_mut(n) else {
                continue;
            };
            if node.available() == node.cpus && *need >= node.cpus {
                *need -= node.cpus;
                node.take_all();
            }
        }
    }

    fn take_full_sockets(
        &mut self,
        layout: &SocketLayout,
        set: NumaMask,
        need: &mut u32,
    ) -> Result<(), TakeError> {
        for socket in self.socket_order(layout, set) {
            let members: Vec<usize> = set
                .nodes()
                .filter(|&n| layout.socket(n) == socket)
                .collect();
            let available: u32 = members
                .iter()
                .filter_map(|&n| self.numas.get(n))
                .map(NumaCpus::available)
                .sum();
            let size = layout.socket_cpus(socket);
            if available == layout.cpus_per_socket && *need >= size {
                if size != available {
                    // The kubelet takes all the socket's CPUs, busy ones too.
                    return Err(TakeError::Stop(Unknown::Unsupported(
                        Unsupported::UnevenSockets,
                    )));
                }
                *need -= size;
                for n in members {
                    if let Some(node) = self.numas.get_mut(n) {
                        node.take_all();
                    }
                }
            }
        }
        Ok(())
    }

    /// `takeByTopologyNUMAPacked` over the NUMA nodes of `set`.
    fn take_packed(&mut self, set: NumaMask, count: u32, init: bool) -> Result<(), TakeError> {
        let available = self.available_in(set);
        if count == 0 {
            return Ok(());
        }
        if count > available {
            return Err(TakeError::NotEnough { available });
        }
        let active: Vec<usize> = set
            .nodes()
            .filter(|&n| self.numas.get(n).is_some_and(|c| c.available() > 0))
            .collect();
        if let [only] = active[..] {
            if let Some(node) = self.numas.get_mut(only) {
                node.take_packed(count, self.threads, init);
            }
            return Ok(());
        }
        let layout = self.layout.clone().map_err(TakeError::Unknown)?;
        let t = self.threads;
        let mut need = count;
        if layout.numa_first {
            self.take_full_numa_nodes(&layout, set, &mut need);
            self.take_full_sockets(&layout, set, &mut need)?;
        } else {
            self.take_full_sockets(&layout, set, &mut need)?;
            self.take_full_numa_nodes(&layout, set, &mut need);
        }
        for n in self.numa_order(&layout, set) {
            if need < t {
                break;
            }
            let Some(node) = self.numas.get_mut(n) else {
                continue;
            };
            let whole = node.whole_cores(t).map_err(TakeError::Unknown)?;
            let cores = whole.min(need / t);
            node.take_whole_cores(cores, t, init);
            need -= cores * t;
        }
        for n in self.numa_order(&layout, set) {
            if need == 0 {
                break;
            }
            let Some(node) = self.numas.get_mut(n) else {
                continue;
            };
            let threads = node.available().min(need);
            node.take_threads(threads, t, init);
            need -= threads;
        }
        Ok(())
    }

    /// `takeByTopology`: distributed when asked for and the count splits in
    /// CPU groups, packed otherwise.
    fn take(&mut self, set: NumaMask, count: u32, init: bool) -> Result<(), TakeError> {
        let group = if self.options.full_pcpus_only {
            self.threads
        } else {
            1
        };
        if self.options.distribute_cpus_across_numa && count.is_multiple_of(group) {
            self.take_distributed(set, count, group, init)
        } else {
            self.take_packed(set, count, init)
        }
    }

    /// `rangeNUMANodesNeededToSatisfy`.
    fn numa_range(&self, active: u32, count: u32, group: u32) -> (u32, u32) {
        let numa_nodes = self.numas.iter().filter(|n| n.cpus > 0).count() as u32;
        let cpus: u32 = self.numas.iter().map(|n| n.cpus).sum();
        let groups = (cpus.saturating_sub(1)) / group + 1;
        let per_numa = (groups - 1) / numa_nodes.max(1) + 1;
        let needed = (count - 1) / group + 1;
        ((needed - 1) / per_numa + 1, needed.min(active))
    }

    /// `takeByTopologyNUMADistributed` over the NUMA nodes of `set`.
    fn take_distributed(
        &mut self,
        set: NumaMask,
        count: u32,
        group: u32,
        init: bool,
    ) -> Result<(), TakeError> {
        let available = self.available_in(set);
        if count == 0 {
            return Ok(());
        }
        if count > available {
            return Err(TakeError::NotEnough { available });
        }
        let active: Vec<usize> = set
            .nodes()
            .filter(|&n| self.numas.get(n).is_some_and(|c| c.available() > 0))
            .collect();
        let numas = if active.len() > 1 {
            let layout = self.layout.clone().map_err(TakeError::Unknown)?;
            self.numa_order(&layout, set)
        } else {
            active
        };
        let avail: Vec<u32> = numas
            .iter()
            .map(|&n| self.numas.get(n).map_or(0, NumaCpus::available))
            .collect();
        let (min_numas, max_numas) = self.numa_range(numas.len() as u32, count, group);
        for k in min_numas..=max_numas {
            let Some((combo, remainder_set)) = best_distribution(&avail, k as usize, count, group)?
            else {
                continue;
            };
            let distribution = (count / k / group) * group;
            for &i in &combo {
                let n = numas.get(i).copied().unwrap_or(0);
                if let Some(node) = self.numas.get_mut(n) {
                    node.take_packed(distribution, self.threads, init);
                }
            }
            let mut remainder = count - distribution * k;
            while remainder > 0 {
                let mut progressed = false;
                for &i in &remainder_set {
                    if remainder == 0 {
                        break;
                    }
                    let n = numas.get(i).copied().unwrap_or(0);
                    let Some(node) = self.numas.get_mut(n) else {
                        continue;
                    };
                    if node.available() < group {
                        continue;
                    }
                    node.take_packed(group, self.threads, init);
                    remainder -= group;
                    progressed = true;
                }
                if !progressed {
                    return Err(TakeError::Loops);
                }
            }
            return Ok(());
        }
        self.take_packed(set, count, init)
    }

    /// `allocateCPUs`: the hint's CPUs first (its sockets' under
    /// `align-by-socket`), the rest from anywhere; then `updateCPUsToReuse`.
    fn allocate(
        &mut self,
        count: u32,
        hint: Option<NumaMask>,
        init: bool,
    ) -> Result<(), TakeError> {
        let all = self.with_cpus();
        let mut taken = 0;
        if let Some(mask) = hint {
            let aligned = if self.options.align_by_socket {
                let layout = self.layout.clone().map_err(TakeError::Unknown)?;
                layout.socket_span(mask, &self.cpus())
            } else {
                mask.and(all)
            };
            taken = count.min(self.available_in(aligned));
            self.take(aligned, taken, init)?;
        }
        self.take(all, count - taken, init)
    }

    /// Takes `count` CPUs from the lowest NUMA nodes when the kubelet's
    /// split is unknown, so the sums stay right.
    fn take_anywhere(&mut self, count: u32, why: Unknown) {
        let mut left = count;
        for node in &mut self.numas {
            let n = left.min(node.available());
            node.take_counts(n);
            node.cores = Err(why);
            left -= n;
        }
    }

    /// `staticPolicy.Allocate` for a container of `kind` getting `count`
    /// exclusive CPUs under the Topology Manager's `hint`.
    pub fn allocate_container(
        &mut self,
        container: usize,
        kind: ContainerKind,
        count: u32,
        hint: Option<NumaMask>,
    ) -> Result<(), CpuAllocError> {
        if count == 0 {
            return Ok(());
        }
        self.check_smt(count, container)?;
        let available: u32 = self.numas.iter().map(NumaCpus::available).sum();
        if count > available {
            return Err(CpuAllocError::NotEnough {
                requested: count,
                available,
            });
        }
        let init = kind == ContainerKind::Init;
        let before = self.clone();
        match self.allocate(count, hint, init) {
            Ok(()) => {}
            Err(TakeError::NotEnough { available }) => {
                return Err(CpuAllocError::NotEnough {
                    requested: count,
                    available,
                })
            }
            Err(TakeError::Loops) => {
                return Err(CpuAllocError::Unknown(Unknown::Indeterminate(
                    Indeterminate::DistributeLoop { container },
                )))
            }
            Err(TakeError::Stop(why)) => return Err(CpuAllocError::Unknown(why)),
            Err(TakeError::Unknown(why)) => {
                // The count is right, the NUMA split is not known: later
                // questions about it answer `why`.
                *self = before;
                self.take_anywhere(count, why);
                if self.split.is_ok() {
                    self.split = Err(why);
                }
            }
        }
        for node in &mut self.numas {
            node.finish(init);
        }
        self.reuse_seen |= init;
        Ok(())
    }
}

/// Positions of the chosen NUMA nodes and of those the remainder comes from.
type Distribution = (Vec<usize>, Vec<usize>);

/// The combination of `k` of the nodes (by position in `avail`) that
/// `takeByTopologyNUMADistributed` picks, and its remainder nodes; `None`
/// when no combination of `k` balances.
fn best_distribution(
    avail: &[u32],
    k: usize,
    count: u32,
    group: u32,
) -> Result<Option<Distribution>, TakeError> {
    let mut best_balance = f64::MAX;
    let mut best: Option<Distribution> = None;
    for combo in combinations(avail.len(), k) {
        if best_balance == 0.0 {
            break;
        }
        let in_combo: u32 = combo
            .iter()
            .map(|&i| avail.get(i).copied().unwrap_or(0))
            .sum();
        if in_combo < count {
            continue;
        }
        let groups: u32 = combo
            .iter()
            .map(|&i| avail.get(i).copied().unwrap_or(0) / group)
            .sum();
        if groups * group < count {
            continue;
        }
        let distribution = (count / k as u32 / group) * group;
        if combo
            .iter()
            .any(|&i| avail.get(i).copied().unwrap_or(0) < distribution)
        {
            continue;
        }
        let mut after = avail.to_vec();
        for &i in &combo {
            if let Some(a) = after.get_mut(i) {
                *a -= distribution;
            }
        }
        let remainder = count - distribution * k as u32;
        let remainder_combo: Vec<usize> = combo
            .iter()
            .copied()
            .filter(|&i| after.get(i).copied().unwrap_or(0) >= group)
            .collect();
        let mut local_balance = f64::MAX;
        let mut local_remainder: Vec<usize> = Vec::new();
        if remainder == 0 {
            local_balance = standard_deviation(&after);
        }
        let mut size = remainder_combo.len();
        while remainder > 0 && size >= 1 {
            for subset_positions in combinations(remainder_combo.len(), size) {
                let subset: Vec<usize> = subset_positions
                    .iter()
                    .filter_map(|&p| remainder_combo.get(p).copied())
                    .collect();
                let held: u32 = subset
                    .iter()
                    .map(|&i| after.get(i).copied().unwrap_or(0))
                    .sum();
                if held < remainder {
                    continue;
                }
                let mut left_after = after.clone();
                let mut left = remainder;
                while left > 0 {
                    let mut progressed = false;
                    for &i in &subset {
                        if left == 0 {
                            break;
                        }
                        let Some(a) = left_after.get_mut(i) else {
                            continue;
                        };
                        if *a < group {
                            continue;
                        }
                        *a -= group;
                        left -= group;
                        progressed = true;
                    }
                    if !progressed {
                        return Err(TakeError::Loops);
                    }
                }
                let balance = standard_deviation(&left_after);
                if balance < local_balance {
                    local_balance = balance;
                    local_remainder = subset;
                }
            }
            size -= 1;
        }
        if local_balance < best_balance {
            best_balance = local_balance;
            best = Some((combo, local_remainder));
        }
    }
    Ok(best)
}

/// `iterateCombinations` order: k-subsets of `0..n`, lexicographic.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    if k == 0 || k > n {
        return out;
    }
    let mut current: Vec<usize> = (0..k).collect();
    loop {
        out.push(current.clone());
        let Some(i) = (0..k)
            .rev()
            .find(|&i| current.get(i).is_some_and(|&c| c < n - k + i))
        else {
            return out;
        };
        if let Some(c) = current.get_mut(i) {
            *c += 1;
        }
        let start = current.get(i).copied().unwrap_or(0);
        for (offset, slot) in current.iter_mut().skip(i + 1).enumerate() {
            *slot = start + offset + 1;
        }
    }
}

/// `round(x * 1000) / 1000` as the kubelet's `mean` and `standardDeviation` do.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `standardDeviation` of `cpu_assignment.go`.
fn standard_deviation(values: &[u32]) -> f64 {
    let len = values.len().max(1) as f64;
    let mean = round3(values.iter().map(|&v| f64::from(v)).sum::<f64>() / len);
    let sum: f64 = values
        .iter()
        .map(|&v| (f64::from(v) - mean) * (f64::from(v) - mean))
        .sum();
    round3((sum / len).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn facts(cpus: u32, reserved: u32, reserved_cores: u32, socket: u32) -> NumaNodeFacts {
        NumaNodeFacts {
            cpus: Some(cpus),
            reserved_cpus: Some(reserved),
            reserved_cores: Some(reserved_cores),
            socket: Some(socket),
            ..NumaNodeFacts::default()
        }
    }

    #[rstest]
    #[case::integer_request(true, 4000, 4)]
    #[case::fractional_request(true, 1500, 0)]
    #[case::burstable_pod(false, 4000, 0)]
    fn exclusive_cpus_need_guaranteed_integer_requests(
        #[case] guaranteed: bool,
        #[case] millis: u64,
        #[case] expected: u32,
    ) {
        assert_eq!(guaranteed_cpus(guaranteed, millis), expected);
    }

    #[test]
    fn packed_fills_the_node_with_fewer_free_cpus_first() {
        // 2 NUMA nodes x 8 CPUs, SMT-2, 2 CPUs reserved on node 0: 10 CPUs
        // across both take all of the fuller node 1? No: node 1 is free and
        // 10 >= 8, so it is taken whole, then 2 more from node 0.
        let numas = [facts(8, 2, 1, 0), facts(8, 0, 0, 1)];
        let mut state = CpuState::new(&numas, 2, CpuOptions::default())
            .unwrap()
            .unwrap();
        state
            .allocate_container(0, ContainerKind::App, 10, Some(NumaMask::from_bits(0b11)))
            .unwrap();
        assert_eq!(state.available_in(NumaMask::single(0)), 4);
        assert_eq!(state.available_in(NumaMask::single(1)), 0);
    }

    #[test]
    fn full_pcpus_only_refuses_odd_requests() {
        let numas = [facts(8, 2, 1, 0)];
        let options = CpuOptions {
            full_pcpus_only: true,
            ..CpuOptions::default()
        };
        let mut state = CpuState::new(&numas, 2, options).unwrap().unwrap();
        let err = state
            .allocate_container(0, ContainerKind::App, 3, None)
            .unwrap_err();
        assert_eq!(
            err,
            CpuAllocError::Smt {
                requested: 3,
                cpus_per_core: 2,
                available_physical_cpus: None
            }
        );
    }

    #[test]
    fn half_reserved_core_sibling_is_not_physical() {
        // 1 reserved CPU on 1 core: its sibling is free but not a whole core.
        let numas = [facts(8, 1, 1, 0)];
        let options = CpuOptions {
            full_pcpus_only: true,
            ..CpuOptions::default()
        };
        let mut state = CpuState::new(&numas, 2, options).unwrap().unwrap();
        let err = state
            .allocate_container(0, ContainerKind::App, 8, None)
            .unwrap_err();
        assert_eq!(
            err,
            CpuAllocError::Smt {
                requested: 8,
                cpus_per_core: 2,
                available_physical_cpus: Some(6)
            }
        );
    }

    #[test]
    fn combinations_follow_iterate_combinations() {
        assert_eq!(
            combinations(4, 2),
            vec![
                vec![0, 1],
                vec![0, 2],
                vec![0, 3],
                vec![1, 2],
                vec![1, 3],
                vec![2, 3]
            ]
        );
    }

    #[test]
    fn standard_deviation_rounds_like_the_kubelet() {
        assert_eq!(standard_deviation(&[1, 2]), 0.5);
        assert_eq!(standard_deviation(&[0, 0, 3]), 1.414);
    }
}
