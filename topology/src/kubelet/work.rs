//! How much work the kubelet's hint search does for one alignment unit, on
//! the whole machine, counted without walking it.
//!
//! The kubelet's cost (Kubernetes 1.34, `pkg/kubelet/cm/`):
//!
//! - every hint provider walks every mask of the NUMA nodes it ranges over
//!   (`bitmask.IterateBitMasks`): `devicemanager/topology_hints.go`
//!   `generateDeviceTopologyHints` once per device resource, over every NUMA
//!   node before 1.36 and over the resource's NUMA nodes from 1.36
//!   (kubernetes/kubernetes#138244); `cpumanager/policy_static.go`
//!   `generateCPUTopologyHints` over `cpuDetails.NUMANodes()` (the NUMA nodes
//!   with CPUs); `memorymanager/policy_static.go` `calculateHints` once over
//!   every NUMA node of its machine state, for all the unit's memory
//!   resources together;
//! - the merge (`topologymanager/policy.go` `iterateAllProviderTopologyHints`)
//!   visits every permutation, one hint per list: the product of the lists'
//!   lengths, after `filterProvidersHints` (a `nil` or empty list counts as
//!   one `nil` hint) and, under `single-numa-node`, `filterSingleNumaHints`
//!   (only `{nil, true}` and preferred one-node hints stay).
//!
//! A list's length is its masks whose nodes hold the request. Nodes without
//! any of the resource (CPU-less, memory-less, device-less NUMA nodes) add
//! nothing to a mask's sum, so the hints are the qualifying subsets of the
//! nodes that hold some, each with any subset of the empty nodes walked:
//! `qualifying × 2^(walked - holding)`. The holding nodes are enumerated
//! only up to [`MAX_NUMA_NODES`]; beyond, the list counts at least the masks
//! that include a node holding the request alone (a lower bound, so that a
//! slow search found here is slow in the kubelet).
//!
//! The machine is taken empty, as everywhere in the model.

use super::mask::{NumaMask, MAX_NUMA_NODES};

/// Work units (mask visits plus permutations) beyond which the kubelet's
/// hint search runs for minutes. Calibrated on kubernetes/kubernetes#131738:
/// 255^4 ≈ 4.2·10^9 permutations took about 21 minutes (≈ 3.4·10^6 per
/// second) on an 8-NUMA-node AMD machine; 2·10^8 is about one minute of
/// that. A mask visit is counted like a permutation: both are a few mask
/// operations (kubernetes/kubernetes#135541 reports the 2^34 mask walk of a
/// GB200 tray stalling the kubelet indefinitely).
pub const SLOW_HINT_SEARCH_WORK: u64 = 200_000_000;

/// One hint list as a provider builds it on the whole machine.
#[derive(Debug, Clone)]
pub(crate) struct ListShape {
    /// NUMA nodes whose masks the provider walks.
    pub walked: NumaMask,
    /// Per NUMA node of the machine, what it holds of each resource the
    /// list requires (one for devices and CPUs, up to three for memory).
    pub amounts: Vec<[u64; 3]>,
    /// The request per resource (0: not requested).
    pub request: [u64; 3],
}

/// What the kubelet does for one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HintSearchWork {
    /// Masks the providers walk.
    pub masks: u64,
    /// Permutations the merge visits (at least).
    pub permutations: u64,
}

impl HintSearchWork {
    pub fn total(&self) -> u64 {
        self.masks.saturating_add(self.permutations)
    }

    pub fn is_slow(&self) -> bool {
        self.total() > SLOW_HINT_SEARCH_WORK
    }
}

/// 2^n, saturating.
fn pow2(n: u32) -> u64 {
    1u64.checked_shl(n).unwrap_or(u64::MAX)
}

impl ListShape {
    fn holds(&self, node: usize) -> bool {
        self.amounts
            .get(node)
            .is_some_and(|a| (0..3).any(|i| self.request[i] > 0 && a[i] > 0))
    }

    /// The nodes of `mask` hold the request of every resource.
    fn satisfies(&self, mask: NumaMask) -> bool {
        (0..3).all(|i| {
            let held = mask.nodes().fold(0u64, |sum, n| {
                sum.saturating_add(self.amounts.get(n).map_or(0, |a| a[i]))
            });
            held >= self.request[i]
        })
    }

    /// The list's length after `filterProvidersHints` (at least one) and,
    /// with `single_numa_node`, after `filterSingleNumaHints`.
    fn length(&self, single_numa_node: bool) -> u64 {
        let holding =
            self.walked.nodes().fold(
                NumaMask::EMPTY,
                |m, n| if self.holds(n) { m.with(n) } else { m },
            );
        let empty_nodes = self.walked.count() - holding.count();
        if single_numa_node {
            // Preferred one-node hints exist when one node holds the
            // request (then `minAffinitySize` is 1); a list left without
            // hints becomes `{nil, false}`, which the filter drops.
            let singles = self
                .walked
                .nodes()
                .filter(|&n| self.satisfies(NumaMask::single(n)))
                .count() as u64;
            return singles;
        }
        let qualifying = if holding.count() as usize <= MAX_NUMA_NODES {
            let ids: Vec<usize> = holding.nodes().collect();
            let mut count = 0u64;
            for bits in 0u64..pow2(holding.count()) {
                let chosen = ids
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| bits & (1 << i) != 0)
                    .fold(NumaMask::EMPTY, |m, (_, &n)| m.with(n));
                if self.satisfies(chosen) {
                    count += 1;
                }
            }
            count
        } else {
            // Too many to enumerate: at least every mask holding one node
            // that holds the request alone (the lists are upward closed),
            // or else the mask of every holding node.
            let alone = self
                .walked
                .nodes()
                .filter(|&n| self.satisfies(NumaMask::single(n)))
                .count() as u32;
            let walked = self.walked.count();
            let with_one = pow2(walked).saturating_sub(pow2(walked - alone));
            let every = u64::from(self.satisfies(holding)).saturating_mul(pow2(empty_nodes));
            return with_one.max(every).max(1);
        };
        let with_empty = qualifying.saturating_mul(pow2(empty_nodes));
        // The empty mask is no hint; it qualifies only for a zero request.
        let empty_mask = u64::from(self.satisfies(NumaMask::EMPTY));
        with_empty.saturating_sub(empty_mask).max(1)
    }
}

/// The kubelet's work for a unit whose providers build `lists`;
/// `walks` are the mask walks (one per provider call, a provider may
/// build several lists in one walk).
pub(crate) fn hint_search_work(
    walks: &[NumaMask],
    lists: &[ListShape],
    single_numa_node: bool,
) -> HintSearchWork {
    let masks = walks
        .iter()
        .fold(0u64, |sum, w| sum.saturating_add(pow2(w.count()) - 1));
    let permutations = lists.iter().fold(1u64, |product, list| {
        product.saturating_mul(list.length(single_numa_node))
    });
    HintSearchWork {
        masks,
        permutations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn devices(counts: &[u64], request: u64, walked: NumaMask) -> ListShape {
        ListShape {
            walked,
            amounts: counts.iter().map(|&c| [c, 0, 0]).collect(),
            request: [request, 0, 0],
        }
    }

    /// The lengths against walking every mask.
    #[rstest]
    #[case::two_of_four_nodes_hold_gpus(&[2, 2, 0, 0], 1)]
    #[case::request_needs_both(&[2, 2, 0, 0], 3)]
    #[case::every_node_holds(&[1, 1, 1], 2)]
    #[case::zero_request_takes_every_mask(&[1, 0, 0], 0)]
    fn lengths_match_walking_every_mask(#[case] counts: &[u64], #[case] request: u64) {
        let walked = NumaMask::all(counts.len());
        let list = devices(counts, request, walked);
        let walked_count = (1u64..pow2(walked.count()))
            .filter(|&bits| {
                let held: u64 = NumaMask::from_bits(bits).nodes().map(|n| counts[n]).sum();
                held >= request
            })
            .count() as u64;
        assert_eq!(list.length(false), walked_count.max(1));
    }

    #[test]
    fn a_gb200_tray_before_1_36_walks_2_to_the_34_masks() {
        let mut counts = vec![0u64; 34];
        counts[0] = 2;
        counts[1] = 2;
        let list = devices(&counts, 1, NumaMask::all(34));
        let work = hint_search_work(&[NumaMask::all(34)], &[list], false);
        assert_eq!(work.masks, (1 << 34) - 1);
        // {0}, {1}, {0,1}, each with any of the 32 memory-only nodes.
        assert_eq!(work.permutations, 3 << 32);
        assert!(work.is_slow());
    }

    #[test]
    fn issue_131738_is_slow() {
        // 8 NUMA nodes, 4 lists of 255 hints: 255^4 permutations.
        let list = devices(&[1; 8], 1, NumaMask::all(8));
        let lists = vec![list; 4];
        let work = hint_search_work(&[NumaMask::all(8); 3], &lists, false);
        assert_eq!(work.permutations, 255u64.pow(4));
        assert!(work.is_slow());
    }
}
