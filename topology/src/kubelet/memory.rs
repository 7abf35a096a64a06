//! The static Memory Manager: memory and huge pages per NUMA node, its hints
//! and its allocation rules.
//!
//! Reproduces `pkg/kubelet/cm/memorymanager/policy_static.go`:
//! `getDefaultMachineState` (allocatable = total − reserved, regular memory
//! also minus every huge page), `GetTopologyHints` / `GetPodTopologyHints`
//! (Guaranteed pods only, none with pod-level resources),
//! `getPodRequestedResources`, `calculateHints` (preferred = as few nodes as
//! the narrowest mask whose *allocatable* memory holds the request; a node in
//! a multi-node group serves no single-node hint, a used node serves only its
//! own group), `Allocate` (default hint for a `nil` affinity,
//! `extendTopologyManagerHint`, `isAffinityViolatingNUMAAllocations`,
//! `updateMachineState`, reuse of init containers' memory per mask).
//!
//! When no mask fits, `calculateHints` returns an empty map, which the
//! Topology Manager reads as "no preference"; `Allocate` then fails.

use super::counts::sums_over_masks;
use super::facts::{
    ContainerDemand, ContainerKind, Fact, InputError, NumaNodeFacts, HUGE_PAGE_1GI_BYTES,
    HUGE_PAGE_2MI_BYTES, MIB,
};
use super::hint::{HintSet, ResourceHints, TopologyHint};
use super::mask::{all_masks, NumaMask};
use super::outcome::{AllocationFailure, HintReport, Resource, Unknown};

/// The memory resources, in the order of the arrays below.
pub const MEMORY_RESOURCES: [Resource; 3] = [
    Resource::Memory,
    Resource::HugePages2Mi,
    Resource::HugePages1Gi,
];

/// Bytes per memory resource: memory, hugepages-2Mi, hugepages-1Gi.
pub type MemoryAmounts = [u64; 3];

/// One resource on one NUMA node (`state.MemoryTable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryTable {
    pub allocatable: u64,
    pub free: u64,
}

/// One NUMA node (`state.NUMANodeState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaMemory {
    pub tables: [MemoryTable; 3],
    /// The group of nodes its allocations span (`Cells`).
    pub cells: NumaMask,
    /// `NumberOfAssignments`: one per resource of every block on it.
    pub assignments: u32,
}

/// The Memory Manager's machine state and the pod's reusable memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryState {
    pub numas: Vec<NumaMemory>,
    /// `initContainersReusableMemory` of the pod, per mask.
    pub reusable: Vec<(NumaMask, MemoryAmounts)>,
    /// NUMA nodes other pods' memory uses, their groups unknown
    /// ([`MemoryState::occupy`]).
    pub groups_unknown: NumaMask,
    /// The pod's memory was placed on one of `groups_unknown`.
    pub placed_by_guess: bool,
}

/// The requests of one container (`getRequestedResources`).
pub fn container_request(c: &ContainerDemand) -> MemoryAmounts {
    [c.memory_bytes, c.hugepages_2mi_bytes, c.hugepages_1gi_bytes]
}

/// `getPodRequestedResources`: per resource the larger of app containers
/// plus sidecars and of each init container plus the sidecars before it;
/// only resources some app container requests.
pub fn pod_request(containers: &[ContainerDemand]) -> MemoryAmounts {
    let mut total = [0u64; 3];
    for (i, slot) in total.iter_mut().enumerate() {
        let requested_by_app = containers
            .iter()
            .any(|c| c.kind == ContainerKind::App && container_request(c)[i] > 0);
        if requested_by_app {
            *slot =
                super::pod_effective(containers.iter().map(|c| (c.kind, container_request(c)[i])));
        }
    }
    total
}

fn bytes(mib: u64, numa: usize) -> Result<u64, InputError> {
    mib.checked_mul(MIB)
        .ok_or(InputError::MemoryTooLarge { numa })
}

impl MemoryState {
    /// `getDefaultMachineState` from the facts.
    pub fn new(numas: &[NumaNodeFacts]) -> Result<Result<Self, Unknown>, InputError> {
        let mut out = Vec::with_capacity(numas.len());
        for (numa, n) in numas.iter().enumerate() {
            let missing = |fact| Ok(Err(Unknown::Missing(fact)));
            let Some(total) = n.memory_mib else {
                return missing(Fact::Memory { numa });
            };
            let Some(reserved) = n.reserved_memory_mib else {
                return missing(Fact::ReservedMemory { numa });
            };
            let Some(small) = n.hugepages_2mi else {
                return missing(Fact::HugePages2Mi { numa });
            };
            let Some(large) = n.hugepages_1gi else {
                return missing(Fact::HugePages1Gi { numa });
            };
            let huge = |pages: u64, size: u64| {
                pages
                    .checked_mul(size)
                    .ok_or(InputError::MemoryTooLarge { numa })
            };
            let small_total = huge(small.pages, HUGE_PAGE_2MI_BYTES)?;
            let large_total = huge(large.pages, HUGE_PAGE_1GI_BYTES)?;
            let small_reserved = huge(small.reserved_pages, HUGE_PAGE_2MI_BYTES)?;
            let large_reserved = huge(large.reserved_pages, HUGE_PAGE_1GI_BYTES)?;
            let memory = bytes(total, numa)?
                .checked_sub(bytes(reserved, numa)?)
                .and_then(|m| m.checked_sub(small_total))
                .and_then(|m| m.checked_sub(large_total))
                .ok_or(InputError::ReservedExceedsMemory { numa })?;
            let table = |allocatable| MemoryTable {
                allocatable,
                free: allocatable,
            };
            let reserve = |total: u64, reserved: u64| {
                total
                    .checked_sub(reserved)
                    .ok_or(InputError::ReservedExceedsMemory { numa })
            };
            out.push(NumaMemory {
                tables: [
                    table(memory),
                    table(reserve(small_total, small_reserved)?),
                    table(reserve(large_total, large_reserved)?),
                ],
                cells: NumaMask::single(numa),
                assignments: 0,
            });
        }
        Ok(Ok(MemoryState {
            numas: out,
            reusable: Vec::new(),
            groups_unknown: NumaMask::EMPTY,
            placed_by_guess: false,
        }))
    }

    /// Marks `held` bytes per resource of NUMA node `numa` assigned to other
    /// pods; `Err` with the resource's index when the node has less.
    ///
    /// Which NUMA nodes each of those assignments was grouped with
    /// (`NUMANodeState.Cells`) is not published. `calculateHints` lets a
    /// used node serve only masks equal to its group, and `Allocate`
    /// refuses a mask that mixes groups (`isAffinityViolatingNUMAAllocations`):
    /// both only take options away. The node is therefore kept ungrouped
    /// (`NumberOfAssignments` 0), which offers every mask its free memory
    /// fits: a refusal in that reading stands whatever the groups are, and
    /// a placement on a used node is marked ([`MemoryState::placed_by_guess`])
    /// for the caller to answer unknown.
    pub fn occupy(&mut self, numa: usize, held: &MemoryAmounts) -> Result<(), usize> {
        let Some(node) = self.numas.get_mut(numa) else {
            return match held.iter().position(|&h| h > 0) {
                Some(i) => Err(i),
                None => Ok(()),
            };
        };
        for (i, (table, &held)) in node.tables.iter_mut().zip(held).enumerate() {
            table.free = table.allocatable.checked_sub(held).ok_or(i)?;
        }
        // On a machine of one NUMA node every group is that node: known.
        if held.iter().any(|&h| h > 0) && self.numas.len() > 1 {
            self.groups_unknown = self.groups_unknown.with(numa);
        }
        Ok(())
    }

    /// Free bytes per NUMA node and resource.
    pub fn free_per_numa(&self) -> Vec<MemoryAmounts> {
        self.numas
            .iter()
            .map(|n| [n.tables[0].free, n.tables[1].free, n.tables[2].free])
            .collect()
    }

    fn nodes(&self) -> usize {
        self.numas.len()
    }

    fn reusable_for(&self, mask: NumaMask) -> MemoryAmounts {
        self.reusable
            .iter()
            .find(|(m, _)| *m == mask)
            .map(|(_, a)| *a)
            .unwrap_or([0; 3])
    }

    fn sum(&self, mask: NumaMask, table: impl Fn(&MemoryTable) -> u64, resource: usize) -> u64 {
        mask.nodes()
            .filter_map(|n| self.numas.get(n))
            .filter_map(|n| n.tables.get(resource))
            .map(&table)
            .fold(0u64, u64::saturating_add)
    }

    /// `calculateHints`: the fitting masks (preferred or not) and
    /// `minAffinitySize`; `None` when nothing is requested or nothing fits.
    pub fn calculate_hints(&self, request: &MemoryAmounts) -> Option<(HintSet, u32)> {
        let requested: Vec<usize> = (0..3).filter(|&i| request[i] > 0).collect();
        if requested.is_empty() {
            return None;
        }
        // Per-mask sums of allocatable and free memory, one array per resource.
        let per_node = |i: usize, table: fn(&MemoryTable) -> u64| -> Vec<u64> {
            self.numas
                .iter()
                .map(|n| n.tables.get(i).map_or(0, table))
                .collect()
        };
        let sums: Vec<(usize, Vec<u64>, Vec<u64>)> = requested
            .iter()
            .map(|&i| {
                (
                    i,
                    sums_over_masks(&per_node(i, |t| t.allocatable)),
                    sums_over_masks(&per_node(i, |t| t.free)),
                )
            })
            .collect();
        let mut min_affinity = self.nodes() as u32;
        let mut fitting = Vec::new();
        for mask in all_masks(self.nodes()) {
            let index = mask.bits() as usize;
            let allocatable = sums
                .iter()
                .all(|(i, a, _)| a.get(index).copied().unwrap_or(0) >= request[*i]);
            if !allocatable {
                continue;
            }
            min_affinity = min_affinity.min(mask.count());
            if !self.groups_allow(mask) {
                continue;
            }
            let reusable = self.reusable_for(mask);
            let free = sums.iter().all(|(i, _, f)| {
                f.get(index)
                    .copied()
                    .unwrap_or(0)
                    .saturating_add(reusable[*i])
                    >= request[*i]
            });
            if free {
                fitting.push(mask);
            }
        }
        if fitting.is_empty() {
            return None;
        }
        let mut set = HintSet::empty(self.nodes());
        for mask in fitting {
            if mask.count() == min_affinity {
                set.preferred.insert(mask);
            } else {
                set.not_preferred.insert(mask);
            }
        }
        Some((set, min_affinity))
    }

    /// The group rules of `calculateHints`.
    fn groups_allow(&self, mask: NumaMask) -> bool {
        let single = mask.count() == 1;
        for node in mask.nodes() {
            let Some(state) = self.numas.get(node) else {
                return false;
            };
            if single {
                return state.cells.count() <= 1;
            }
            if state.assignments > 0 && (state.cells.count() == 1 || state.cells != mask) {
                return false;
            }
        }
        true
    }

    /// `isAffinityViolatingNUMAAllocations`.
    fn violates(&self, mask: NumaMask) -> bool {
        if mask.count() == 1 {
            return false;
        }
        mask.nodes()
            .filter_map(|n| self.numas.get(n))
            .any(|state| state.assignments > 0 && (state.cells.count() == 1 || state.cells != mask))
    }

    /// `isAffinitySatisfyRequest`: free memory only, no reuse.
    fn satisfies(&self, mask: NumaMask, request: &MemoryAmounts) -> bool {
        (0..3).all(|i| request[i] == 0 || self.sum(mask, |t| t.free, i) >= request[i])
    }

    /// `updateMachineState`.
    fn take(&mut self, mask: NumaMask, resource: usize, mut size: u64) {
        for node in mask.nodes() {
            let Some(state) = self.numas.get_mut(node) else {
                continue;
            };
            state.assignments += 1;
            state.cells = mask;
            let Some(table) = state.tables.get_mut(resource) else {
                continue;
            };
            if size == 0 || table.free == 0 {
                continue;
            }
            let n = size.min(table.free);
            table.free -= n;
            size -= n;
        }
    }

    /// `updatePodReusableMemory`.
    fn update_reusable(&mut self, kind: ContainerKind, mask: NumaMask, request: &MemoryAmounts) {
        let index = match self.reusable.iter().position(|(m, _)| *m == mask) {
            Some(i) => i,
            None => {
                self.reusable.push((mask, [0; 3]));
                self.reusable.len() - 1
            }
        };
        let Some((_, amounts)) = self.reusable.get_mut(index) else {
            return;
        };
        for i in (0..3).filter(|&i| request[i] > 0) {
            amounts[i] = if kind == ContainerKind::Init {
                amounts[i].max(request[i])
            } else {
                amounts[i].saturating_sub(request[i])
            };
        }
    }

    /// `staticPolicy.Allocate` for a container of `kind` requesting
    /// `request` under the Topology Manager's `hint`.
    pub fn allocate(
        &mut self,
        kind: ContainerKind,
        request: &MemoryAmounts,
        hint: TopologyHint,
    ) -> Result<(), AllocationFailure> {
        let best_of = |set: &HintSet, within: NumaMask| -> Option<TopologyHint> {
            let preferred = set.preferred.iter().map(|m| (m, true));
            let other = set.not_preferred.iter().map(|m| (m, false));
            preferred
                .chain(other)
                .filter(|(m, _)| within.is_subset_of(*m))
                .min_by_key(|&(m, p)| (!p, m.count(), m.bits()))
                .map(|(m, p)| TopologyHint::new(m, p))
        };
        let mut best = hint;
        if best.mask.is_none() {
            let hints = self.calculate_hints(request);
            let Some((set, _)) = hints else {
                return Err(AllocationFailure::NoMemoryAffinity);
            };
            let default =
                best_of(&set, NumaMask::EMPTY).ok_or(AllocationFailure::NoMemoryAffinity)?;
            if !default.preferred && best.preferred {
                return Err(AllocationFailure::MemoryHintNotPreferred);
            }
            best = default;
        }
        let mut mask = best.mask.unwrap_or(NumaMask::EMPTY);
        if !self.satisfies(mask, request) {
            let extended = self
                .calculate_hints(request)
                .and_then(|(set, _)| best_of(&set, mask))
                .ok_or(AllocationFailure::NoExtendedMemoryAffinity)?;
            if !extended.preferred && best.preferred {
                return Err(AllocationFailure::MemoryHintNotPreferred);
            }
            mask = extended.mask.unwrap_or(mask);
        }
        if self.violates(mask) {
            return Err(AllocationFailure::MemoryViolatesNumaAllocation);
        }
        if !mask.and(self.groups_unknown).is_empty() {
            self.placed_by_guess = true;
        }
        let reusable = self.reusable_for(mask);
        for i in (0..3).filter(|&i| request[i] > 0) {
            self.take(mask, i, request[i].saturating_sub(reusable[i]));
        }
        self.update_reusable(kind, mask, request);
        Ok(())
    }
}

/// The Memory Manager's hints for `request`, one list per requested resource.
pub fn memory_hints(
    state: &MemoryState,
    request: &MemoryAmounts,
) -> (Vec<ResourceHints>, Vec<HintReport>) {
    let requested = request.iter().filter(|&&r| r > 0).count();
    match state.calculate_hints(request) {
        None => (Vec::new(), vec![HintReport::DontCare; requested]),
        Some((set, min_affinity)) => {
            let narrowest = set
                .preferred
                .iter()
                .chain(set.not_preferred.iter())
                .map(NumaMask::count)
                .min()
                .unwrap_or(0);
            let report = HintReport::Hints {
                narrowest_capacity: min_affinity,
                narrowest_available: narrowest,
                preferred_masks: set.preferred.len(),
            };
            (
                vec![ResourceHints::List(set); requested],
                vec![report; requested],
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::facts::HugePages;

    const GIB: u64 = 1 << 30;

    fn numa(memory_gib: u64, reserved_gib: u64) -> NumaNodeFacts {
        NumaNodeFacts {
            memory_mib: Some(memory_gib * 1024),
            reserved_memory_mib: Some(reserved_gib * 1024),
            hugepages_2mi: Some(HugePages::default()),
            hugepages_1gi: Some(HugePages::default()),
            ..NumaNodeFacts::default()
        }
    }

    fn state(numas: &[NumaNodeFacts]) -> MemoryState {
        MemoryState::new(numas).unwrap().unwrap()
    }

    #[test]
    fn preferred_hints_count_allocatable_memory() {
        let s = state(&[numa(64, 1), numa(64, 1)]);
        let (set, min) = s.calculate_hints(&[100 * GIB, 0, 0]).unwrap();
        assert_eq!(min, 2);
        assert!(set.preferred.contains(NumaMask::from_bits(0b11)));
        assert!(set.not_preferred.is_empty());
    }

    #[test]
    fn nothing_fits_is_no_preference_and_allocate_fails() {
        let mut s = state(&[numa(8, 1), numa(8, 1)]);
        assert!(s.calculate_hints(&[20 * GIB, 0, 0]).is_none());
        let err = s
            .allocate(
                ContainerKind::App,
                &[20 * GIB, 0, 0],
                TopologyHint::any(false),
            )
            .unwrap_err();
        assert_eq!(err, AllocationFailure::NoMemoryAffinity);
    }

    #[test]
    fn a_single_numa_allocation_blocks_cross_numa_ones() {
        let mut s = state(&[numa(64, 1), numa(64, 1)]);
        s.allocate(
            ContainerKind::App,
            &[GIB, 0, 0],
            TopologyHint::new(NumaMask::single(0), true),
        )
        .unwrap();
        // 100Gi needs both nodes, but node 0 serves a single-node allocation.
        assert!(s.calculate_hints(&[100 * GIB, 0, 0]).is_none());
    }

    #[test]
    fn hugepages_come_off_regular_memory() {
        let mut facts = numa(16, 1);
        facts.hugepages_1gi = Some(HugePages {
            pages: 4,
            reserved_pages: 0,
        });
        let s = state(&[facts]);
        assert_eq!(s.numas[0].tables[0].allocatable, 11 * GIB);
        assert_eq!(s.numas[0].tables[2].allocatable, 4 * GIB);
    }
}
