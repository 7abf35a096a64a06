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
//!
//! The hint-search cost guard (`slow_hint_search`), on machines above 8
//! NUMA nodes: the pod's first unit counted so before anything is
//! enumerated, and the pod refused where the kubelet's search runs for
//! minutes.

use super::admit::{Step, Stop};
use super::device::DeviceHintRange;
use super::facts::{NodeFacts, NumaNodeFacts, PodDemand};
use super::mask::{NumaMask, MAX_NUMA_NODES};
use super::memory::MemoryState;
use super::outcome::Refusal;
use super::scope::{DemandRules, UnitDemand};
use crate::labels::{TopologyManagerPolicy, TopologyManagerScope};

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

/// The per-NUMA counts of every device resource the unit requests (the GPUs
/// first), for those the node publishes, with each one's request.
fn requested_device_counts<'a>(
    node: &'a NodeFacts,
    machine: &'a [NumaNodeFacts],
    pod: &'a PodDemand,
    demand: &'a UnitDemand,
) -> impl Iterator<Item = (Vec<u32>, u32)> + 'a {
    let gpus = demand.gpus.and_then(|request| {
        let counts: Option<Vec<u32>> = machine.iter().map(|n| n.gpus).collect();
        counts.map(|c| (c, request))
    });
    let devices = pod
        .devices
        .iter()
        .enumerate()
        .filter_map(move |(i, resource)| {
            let request = demand.devices.get(i).copied().flatten()?;
            let counts = node.devices.get(resource)?;
            (counts.len() == machine.len()).then(|| (counts.clone(), request))
        });
    gpus.into_iter()
        .chain(devices)
        .filter(|(counts, _)| counts.iter().any(|&c| c > 0))
}

/// Refuses the pod where the kubelet's hint search for its first unit runs
/// for minutes ([`work`](super::work)): checked on the whole machine, from
/// the counts alone, before anything is enumerated. Only the first unit
/// meets the empty node the counts describe (later ones find less free, so
/// fewer hints, and an earlier refusal may stop the kubelet first); with
/// the scope unknown, both first units must be slow.
pub(super) fn slow_hint_search(
    node: &NodeFacts,
    machine: &[NumaNodeFacts],
    rules: &DemandRules<'_>,
    range: DeviceHintRange,
    policy: TopologyManagerPolicy,
) -> Step<()> {
    let scope = if rules.pod.containers.len() > 1 {
        node.topology_manager.scope
    } else {
        Some(TopologyManagerScope::Container)
    };
    let all = NumaMask::all(machine.len());
    let with_cpus = machine
        .iter()
        .enumerate()
        .fold(NumaMask::EMPTY, |m, (i, n)| {
            if n.cpus != Some(0) {
                m.with(i)
            } else {
                m
            }
        });
    let units = rules.first_units(scope);
    // Most machines fall short even of every list holding every mask.
    let at_most = units
        .iter()
        .map(|(_, demand)| most_work(node, rules.pod, machine, range, with_cpus, demand))
        .max()
        .unwrap_or(0);
    if at_most <= SLOW_HINT_SEARCH_WORK {
        return Ok(());
    }
    // Read only for a unit that pins memory.
    let mut memory_amounts: Option<Option<Vec<[u64; 3]>>> = None;
    let mut fastest: Option<(Option<usize>, HintSearchWork)> = None;
    for (container, demand) in units {
        let mut walks = Vec::new();
        let mut lists = Vec::new();
        for (counts, request) in requested_device_counts(node, machine, rules.pod, &demand) {
            let walked = range.universe(&counts);
            walks.push(walked);
            lists.push(ListShape {
                walked,
                amounts: counts.iter().map(|&c| [u64::from(c), 0, 0]).collect(),
                request: [u64::from(request), 0, 0],
            });
        }
        if demand.cpus > 0 {
            walks.push(with_cpus);
            lists.push(ListShape {
                walked: with_cpus,
                amounts: machine
                    .iter()
                    .map(|n| {
                        let free = n
                            .cpus
                            .unwrap_or(0)
                            .saturating_sub(n.reserved_cpus.unwrap_or(0));
                        [u64::from(free), 0, 0]
                    })
                    .collect(),
                request: [u64::from(demand.cpus), 0, 0],
            });
        }
        if demand.memory != [0; 3] {
            walks.push(all);
            let amounts = memory_amounts.get_or_insert_with(|| {
                MemoryState::new(machine)
                    .ok()
                    .and_then(Result::ok)
                    .map(|state| state.free_per_numa())
            });
            if let Some(amounts) = amounts {
                // One list per requested memory resource, all alike.
                for _ in demand.memory.iter().filter(|&&r| r > 0) {
                    lists.push(ListShape {
                        walked: all,
                        amounts: amounts.clone(),
                        request: demand.memory,
                    });
                }
            }
        }
        let work = hint_search_work(
            &walks,
            &lists,
            policy == TopologyManagerPolicy::SingleNumaNode,
        );
        if fastest.is_none_or(|(_, w)| work.total() < w.total()) {
            fastest = Some((container, work));
        }
    }
    match fastest.filter(|(_, work)| work.is_slow()) {
        Some((container, work)) => Err(Stop::Refuse(Refusal::HintSearchTooSlow {
            container,
            masks: work.masks,
            permutations: work.permutations,
        })),
        None => Ok(()),
    }
}

/// The most work the kubelet can do for `demand`: every walk's masks, and
/// every mask of each walk a hint (`2^n - 1` per list). Counted without
/// allocating, so that the common machines above 8 NUMA nodes pay nothing
/// for [`slow_hint_search`].
fn most_work(
    node: &NodeFacts,
    pod: &PodDemand,
    machine: &[NumaNodeFacts],
    range: DeviceHintRange,
    with_cpus: NumaMask,
    demand: &UnitDemand,
) -> u64 {
    let all = NumaMask::all(machine.len());
    // A count not known may hold devices: the walk is at most every node.
    let walk_of = |count: &dyn Fn(usize) -> Option<u32>| match range {
        DeviceHintRange::EveryNumaNode => all,
        DeviceHintRange::DeviceNumaNodes => all
            .nodes()
            .filter(|&n| count(n) != Some(0))
            .fold(NumaMask::EMPTY, NumaMask::with),
    };
    let masks = |walk: NumaMask| 1u64.checked_shl(walk.count()).unwrap_or(u64::MAX);
    let mut walked = 0u64;
    let mut permutations = 1u64;
    let mut add = |walk: NumaMask, lists: u32| {
        walked = walked.saturating_add(masks(walk));
        for _ in 0..lists {
            permutations = permutations.saturating_mul(masks(walk).saturating_sub(1).max(1));
        }
    };
    if demand.gpus.is_some() {
        add(walk_of(&|n| machine.get(n).and_then(|f| f.gpus)), 1);
    }
    for (resource, request) in pod.devices.iter().zip(&demand.devices) {
        if request.is_none() {
            continue;
        }
        match node.devices.get(resource) {
            Some(counts) if counts.len() == machine.len() => {
                add(walk_of(&|n| counts.get(n).copied()), 1)
            }
            _ => add(all, 1),
        }
    }
    if demand.cpus > 0 {
        add(with_cpus, 1);
    }
    let memory_lists = demand.memory.iter().filter(|&&r| r > 0).count() as u32;
    if memory_lists > 0 {
        add(all, memory_lists);
    }
    walked.saturating_add(permutations)
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
