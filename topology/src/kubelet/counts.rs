//! Hints for resources counted per NUMA node (GPUs, CPUs).
//!
//! Both `generateDeviceTopologyHints` (`devicemanager/topology_hints.go`) and
//! `generateCPUTopologyHints` (`cpumanager/policy_static.go`) walk every mask
//! and follow one rule: a mask gets a hint when the free units on its nodes
//! (plus every reusable unit, all of which must sit inside the mask) hold
//! the request; the hint is preferred when the mask has as many nodes as the
//! narrowest mask whose *total* units (free or not) could hold it
//! (`minAffinitySize`, which starts at the number of nodes walked).

use super::hint::HintSet;
use super::mask::{all_masks, NumaMask};
use super::outcome::HintReport;

/// Per-mask sums of per-node values (index = mask bits), built one node at a time.
pub(crate) fn sums_over_masks(values: &[u64]) -> Vec<u64> {
    let nodes = values.len().min(super::mask::MAX_NUMA_NODES);
    let mut sums = vec![0u64; 1 << nodes];
    for mask in 1usize..sums.len() {
        let low = mask.trailing_zeros() as usize;
        let rest = sums.get(mask & (mask - 1)).copied().unwrap_or(0);
        let own = values.get(low).copied().unwrap_or(0);
        if let Some(slot) = sums.get_mut(mask) {
            *slot = rest.saturating_add(own);
        }
    }
    sums
}

/// A counted resource on one machine, as one hint provider sees it.
#[derive(Debug, Clone)]
pub(crate) struct CountedResource<'a> {
    /// NUMA nodes of the machine.
    pub nodes: usize,
    /// The nodes the provider's masks range over: every node for devices,
    /// the nodes with CPUs for the CPU Manager.
    pub universe: NumaMask,
    /// Units on each node, free or not.
    pub capacity: &'a [u64],
    /// Free units on each node.
    pub free: &'a [u64],
    /// Nodes holding reusable units (a mask must include them all).
    pub reusable_nodes: NumaMask,
    /// Reusable units, counted for every mask that includes them.
    pub reusable: u64,
}

/// The hints for `request` units and their summary. `preferred_also` marks
/// further masks preferred (the CPU Manager's `align-by-socket`).
pub(crate) fn counted_hints(
    resource: &CountedResource<'_>,
    request: u64,
    preferred_also: impl Fn(NumaMask, u32) -> bool,
) -> (HintSet, HintReport) {
    let capacity = sums_over_masks(resource.capacity);
    let free = sums_over_masks(resource.free);
    let in_universe = |mask: &NumaMask| mask.is_subset_of(resource.universe);
    let mut min_affinity = resource.universe.count();
    for mask in all_masks(resource.nodes).filter(in_universe) {
        if capacity.get(mask.bits() as usize).copied().unwrap_or(0) >= request {
            min_affinity = min_affinity.min(mask.count());
        }
    }
    let mut set = HintSet::empty(resource.nodes);
    let mut narrowest: Option<u32> = None;
    for mask in all_masks(resource.nodes).filter(in_universe) {
        if !resource.reusable_nodes.is_subset_of(mask) {
            continue;
        }
        let matching = free
            .get(mask.bits() as usize)
            .copied()
            .unwrap_or(0)
            .saturating_add(resource.reusable);
        if matching < request {
            continue;
        }
        narrowest = Some(narrowest.map_or(mask.count(), |n| n.min(mask.count())));
        if mask.count() == min_affinity || preferred_also(mask, min_affinity) {
            set.preferred.insert(mask);
        } else {
            set.not_preferred.insert(mask);
        }
    }
    let report = match narrowest {
        None => HintReport::NoFit,
        Some(narrowest) => HintReport::Hints {
            narrowest_capacity: min_affinity,
            narrowest_available: narrowest,
            preferred_masks: set.preferred.len(),
        },
    };
    (set, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_cover_every_mask() {
        let sums = sums_over_masks(&[1, 10, 100]);
        assert_eq!(sums, vec![0, 1, 10, 11, 100, 101, 110, 111]);
    }

    #[test]
    fn preferred_counts_total_capacity_not_free() {
        // 4+4 GPUs, 2 already taken on node 0: 4 GPUs fit on node 1 alone
        // (preferred) or across both (not preferred).
        let resource = CountedResource {
            nodes: 2,
            universe: NumaMask::all(2),
            capacity: &[4, 4],
            free: &[2, 4],
            reusable_nodes: NumaMask::EMPTY,
            reusable: 0,
        };
        let (set, report) = counted_hints(&resource, 4, |_, _| false);
        assert!(set.preferred.contains(NumaMask::from_bits(0b10)));
        assert!(set.not_preferred.contains(NumaMask::from_bits(0b11)));
        assert!(!set.preferred.contains(NumaMask::from_bits(0b01)));
        assert_eq!(
            report,
            HintReport::Hints {
                narrowest_capacity: 1,
                narrowest_available: 1,
                preferred_masks: 1
            }
        );
    }
}
