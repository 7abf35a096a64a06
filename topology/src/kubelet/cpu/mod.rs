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
//!
//! The pieces, along the kubelet's own files:
//! - this file: `policy_static.go`, the policy's entry points (hints,
//!   `Allocate`, `allocateCPUs`, SMT alignment) on [`CpuState`];
//! - `cores.rs`: the CPUs of one NUMA node as counts of cores by kind, and
//!   `takeFullCores` / `takeRemainingCPUs` on them (`cpu_assignment.go`);
//! - `sockets.rs`: the sockets of the NUMA nodes (`newCPUAccumulator`'s
//!   `numaFirst` / `socketsFirst`, `isHintSocketAligned`, `getAlignedCPUs`);
//! - `assignment.rs`: `takeByTopology` and `takeByTopologyNUMAPacked`, the
//!   accumulator's sorted NUMA nodes and sockets (`cpu_assignment.go`);
//! - `distribute.rs`: `takeByTopologyNUMADistributed`, its combinations and
//!   balance score (`cpu_assignment.go`); the choice of NUMA nodes, the
//!   combinations and the balance score serve `by_id.rs` too;
//! - `by_id.rs` ([`by_id`]): `takeByTopologyNUMAPacked` and
//!   `takeByTopologyNUMADistributed` over real CPU ids (`cpu_assignment.go`'s
//!   `cpuAccumulator` over a `CPUTopology`), for the node labeler, which
//!   finds with them the CPUs the static policy reserves; the admission
//!   model does not call them.

mod assignment;
pub mod by_id;
mod cores;
mod distribute;
mod sockets;
#[cfg(test)]
mod tests;

use super::counts::{counted_hints, CountedResource};
use super::facts::{validate_cpus, ContainerKind, Fact, InputError, NumaNodeFacts};
use super::hint::ResourceHints;
use super::mask::NumaMask;
use super::outcome::{HintReport, Indeterminate, Unknown};

use assignment::TakeError;
use cores::NumaCpus;
use sockets::SocketLayout;

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
/// The CPU Manager options the model reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuOptions {
    pub full_pcpus_only: bool,
    pub distribute_cpus_across_numa: bool,
    pub align_by_socket: bool,
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
