//! The Topology Manager's merge: from the providers' hint lists to one best
//! hint, and each policy's admit rule.
//!
//! Reproduces `pkg/kubelet/cm/topologymanager/policy.go` (`mergePermutation`,
//! `filterProvidersHints`, `maxOfMinAffinityCounts`, `HintMerger.compare`,
//! `HintMerger.Merge`), `numa_info.go` (`Narrowest`, `Closest`) and the
//! policies' `Merge` (`policy_best_effort.go`, `policy_restricted.go`,
//! `policy_single_numa_node.go`, `policy_none.go`).
//!
//! The kubelet walks every permutation (one hint per list), ANDs it into a
//! merged hint that is preferred only when every pick is preferred and every
//! non-`nil` pick has the same mask, and folds the merged hints through
//! `HintMerger.compare`. That fold keeps the best hint of a strict total order
//! (shown in `rank_key`), so its result does not depend on the order of the
//! permutations, and it can be computed from two sets instead:
//! - the preferred merged masks: masks every list offers as preferred (a
//!   `{nil, true}` entry accepts any mask);
//! - every merged mask: the ANDs of one option per list, built list by list.
//!
//! That costs at most 2^N per list for the first and 3^N per list for the
//! second when a list is upward closed, which every list built from "enough
//! free resources in the mask" is; any list is accepted, at |R|·|list| per list.

use super::hint::{filter_providers_hints, HintSet, ProviderHints, TopologyHint};
use super::mask::{subsets, MaskSet, NumaMask};
use crate::labels::TopologyManagerPolicy;

/// Beyond this many mask operations a merge is refused as too large (only
/// reachable above 8 NUMA nodes with lists that are not upward closed).
const MERGE_WORK_BUDGET: u64 = 1 << 24;

/// The machine the merge runs for: `NUMAInfo` (`numa_info.go`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaInfo {
    /// NUMA nodes the masks range over (ids `0..nodes`).
    pub nodes: usize,
    /// The SLIT distance rows (`node.Distances` from cAdvisor), when known.
    pub distances: Option<Vec<Vec<u32>>>,
    /// NUMA nodes of the whole machine: more than `nodes` when the merge
    /// runs on the NUMA nodes that matter to the pod (`projection.rs`, the
    /// projection). Its default affinity (every node) is then no mask of
    /// the projection: [`Merged::default_affinity`] marks it.
    pub machine_nodes: usize,
}

impl NumaInfo {
    pub fn new(nodes: usize) -> Self {
        NumaInfo {
            nodes,
            distances: None,
            machine_nodes: nodes,
        }
    }

    pub fn default_affinity(&self) -> NumaMask {
        NumaMask::all(self.nodes)
    }

    /// `NUMADistances.CalculateAverageFor` times `count²`: equal-sized masks
    /// compare by it exactly as by the average. `None` without distances.
    fn distance_sum(&self, mask: NumaMask) -> Option<u64> {
        let rows = self.distances.as_ref()?;
        let mut sum = 0u64;
        for from in mask.nodes() {
            let row = rows.get(from)?;
            for to in mask.nodes() {
                sum += u64::from(*row.get(to)?);
            }
        }
        Some(sum)
    }
}

/// How equal-sized masks are told apart (`NewHintMerger`'s
/// `CompareNUMAAffinityMasks`): by `Narrowest`, or by `Closest` when
/// `prefer-closest-numa-nodes` is set and the policy is not `single-numa-node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskOrder {
    Narrowest,
    Closest,
}

impl MaskOrder {
    pub fn for_policy(policy: TopologyManagerPolicy, prefer_closest_numa_nodes: bool) -> Self {
        if prefer_closest_numa_nodes && policy != TopologyManagerPolicy::SingleNumaNode {
            MaskOrder::Closest
        } else {
            MaskOrder::Narrowest
        }
    }
}

/// A merge the model cannot reproduce within its work budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeTooLarge;

/// The best merged hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    pub hint: TopologyHint,
    /// `Closest` was asked for without distances and several masks tie on
    /// everything but their distance: `hint` is then the lowest of them, the
    /// kubelet may pick another of the same size and preference.
    pub needs_distances: bool,
    /// The mask is the machine's default affinity (every NUMA node): every
    /// pick was `nil`, or no permutation merged into a non-empty mask.
    pub default_affinity: bool,
}

/// The merge's sort key (smaller is better) for masks of one preference.
///
/// `HintMerger.compare` is the fold of this order: a preferred hint beats a
/// non-preferred one; preferred hints rank by `CompareNUMAAffinityMasks`
/// (fewer nodes, then distance under `Closest`, then the lower mask);
/// non-preferred ones rank first those with exactly
/// `bestNonPreferredAffinityCount` nodes, then those with fewer (more nodes
/// first), then those with more (fewer nodes first), each tie broken by
/// `CompareNUMAAffinityMasks`. Its cases 1, 2, 3a, 3b, 3ca, 3cb and 3cc are
/// the comparisons of these keys.
fn rank_key(
    mask: NumaMask,
    preferred: bool,
    best_non_preferred: u32,
    distance: u64,
) -> (u8, u32, u64, u64) {
    let count = mask.count();
    let (tier, within) = if preferred {
        (0, count)
    } else if count == best_non_preferred {
        (1, 0)
    } else if count < best_non_preferred {
        (2, best_non_preferred - count)
    } else {
        (3, count)
    };
    (tier, within, distance, mask.bits())
}

/// Which of two hints `HintMerger.compare` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    Current,
    Candidate,
}

/// `HintMerger.compare(current, candidate)` for the `Narrowest` order, with
/// `bestNonPreferredAffinityCount` given, as `rank_key` decides it. `nil`
/// masks are not compared by the kubelet (merged hints always carry a mask).
pub fn compare(
    best_non_preferred: u32,
    current: Option<TopologyHint>,
    candidate: TopologyHint,
) -> Kept {
    let Some(candidate_mask) = candidate.mask.filter(|m| !m.is_empty()) else {
        return Kept::Current;
    };
    let Some(current) = current else {
        return Kept::Candidate;
    };
    let current_mask = current.mask.unwrap_or(NumaMask::EMPTY);
    if current.preferred != candidate.preferred {
        return if candidate.preferred {
            Kept::Candidate
        } else {
            Kept::Current
        };
    }
    let key = |mask, preferred| rank_key(mask, preferred, best_non_preferred, 0);
    if key(candidate_mask, candidate.preferred) < key(current_mask, current.preferred) {
        Kept::Candidate
    } else {
        Kept::Current
    }
}

/// The best of `candidates` (all of one preference) under [`rank_key`].
fn best_of(
    numa: &NumaInfo,
    order: MaskOrder,
    candidates: &MaskSet,
    preferred: bool,
    best_non_preferred: u32,
) -> Option<Merged> {
    let use_distance = order == MaskOrder::Closest && numa.distances.is_some();
    let key = |mask: NumaMask| {
        let distance = if use_distance {
            numa.distance_sum(mask).unwrap_or(u64::MAX)
        } else {
            0
        };
        rank_key(mask, preferred, best_non_preferred, distance)
    };
    let best = candidates
        .iter()
        .filter(|m| !m.is_empty())
        .min_by_key(|&m| key(m))?;
    // Without distances, `Closest` orders equal-sized masks by a fact we lack.
    let needs_distances = order == MaskOrder::Closest
        && !use_distance
        && candidates.iter().any(|m| {
            m != best && !m.is_empty() && {
                let (tier, within, _, _) = key(m);
                let (best_tier, best_within, _, _) = key(best);
                (tier, within, m.count()) == (best_tier, best_within, best.count())
            }
        });
    Some(Merged {
        hint: TopologyHint::new(best, preferred),
        needs_distances,
        default_affinity: false,
    })
}

/// `maxOfMinAffinityCounts`: the most nodes any list needs at least.
pub fn best_non_preferred_affinity_count(lists: &[HintSet]) -> u32 {
    lists
        .iter()
        .filter_map(HintSet::narrowest_count)
        .max()
        .unwrap_or(0)
}

/// The preferred merged masks: offered as preferred by every list, or by
/// some list while the others hold `{nil, true}`; the default affinity when
/// every list is `{nil, true}` (or there are none).
fn preferred_merges(numa: &NumaInfo, lists: &[HintSet]) -> MaskSet {
    let mut common = MaskSet::every_mask(numa.nodes);
    let mut offered = MaskSet::empty(numa.nodes);
    let mut all_any_preferred = true;
    for list in lists {
        if !list.any_preferred {
            common.intersect_with(&list.preferred);
            all_any_preferred = false;
        }
        offered.union_with(&list.preferred);
    }
    if all_any_preferred {
        offered.insert(numa.default_affinity());
    }
    common.intersect_with(&offered);
    common
}

/// `{r AND o}` for every `r` in `reach` and option `o`, charging `work`.
fn and_closure(
    numa: &NumaInfo,
    reach: &MaskSet,
    options: &MaskSet,
    work: &mut u64,
) -> Result<MaskSet, MergeTooLarge> {
    let all = numa.default_affinity();
    if reach.len() == 1 && reach.contains(all) {
        return Ok(options.clone());
    }
    let mut next = MaskSet::empty(numa.nodes);
    if options.is_upward_closed() {
        // m = r AND o for some option o exactly when m ⊆ r and m ∪ (all ∖ r)
        // is an option: an upward-closed list offers every superset.
        for r in reach.iter() {
            let outside = r.complement_in(all);
            *work += 1u64 << r.count();
            if *work > MERGE_WORK_BUDGET {
                return Err(MergeTooLarge);
            }
            for m in subsets(r) {
                if options.contains(m.or(outside)) {
                    next.insert(m);
                }
            }
        }
    } else {
        let options: Vec<NumaMask> = options.iter().collect();
        for r in reach.iter() {
            *work += options.len() as u64;
            if *work > MERGE_WORK_BUDGET {
                return Err(MergeTooLarge);
            }
            for &o in &options {
                next.insert(r.and(o));
            }
        }
    }
    Ok(next)
}

/// Every mask a permutation can merge into (the empty mask included).
fn all_merges(numa: &NumaInfo, lists: &[HintSet]) -> Result<MaskSet, MergeTooLarge> {
    let mut reach = MaskSet::of(numa.nodes, [numa.default_affinity()]);
    let mut work = 0;
    for list in lists {
        let options = list.options();
        if options.is_empty() {
            return Ok(MaskSet::empty(numa.nodes));
        }
        reach = and_closure(numa, &reach, &options, &mut work)?;
    }
    Ok(reach)
}

/// `HintMerger.Merge` over already filtered lists: the best merged hint, or
/// `{default affinity, false}` when no permutation merges into a non-empty mask.
pub fn merge_lists(
    numa: &NumaInfo,
    order: MaskOrder,
    lists: &[HintSet],
) -> Result<Merged, MergeTooLarge> {
    let preferred = preferred_merges(numa, lists);
    if let Some(mut best) = best_of(numa, order, &preferred, true, 0) {
        best.default_affinity = from_nil_picks_only(numa, lists, best.hint, true);
        return Ok(best);
    }
    let merges = all_merges(numa, lists)?;
    let best_count = best_non_preferred_affinity_count(lists);
    match best_of(numa, order, &merges, false, best_count) {
        Some(mut best) => {
            best.default_affinity = from_nil_picks_only(numa, lists, best.hint, false);
            Ok(best)
        }
        None => Ok(Merged {
            hint: TopologyHint::new(numa.default_affinity(), false),
            needs_distances: false,
            default_affinity: true,
        }),
    }
}

/// Whether the best merged mask, equal to every node of the merge, is the
/// machine's default affinity: no permutation of masks (each a superset of
/// it, or `nil`) merges into it. On the whole machine that cannot be told
/// apart and does not matter (both are every node); on a projection the
/// machine's default affinity also holds the NUMA nodes left out, and the
/// kubelet ranks it below the projection's every-node mask (more nodes,
/// same preference: `HintMerger.compare` keeps the narrower), so the mask
/// stands for the default affinity only where no permutation of masks
/// reaches every node of the projection.
fn from_nil_picks_only(
    numa: &NumaInfo,
    lists: &[HintSet],
    hint: TopologyHint,
    preferred: bool,
) -> bool {
    let every = numa.default_affinity();
    if hint.mask != Some(every) {
        return false;
    }
    let offers_mask = |list: &HintSet| {
        list.preferred.contains(every) || (!preferred && list.not_preferred.contains(every))
    };
    let offers_nil = |list: &HintSet| list.any_preferred || (!preferred && list.any_not_preferred);
    let by_masks = lists.iter().any(offers_mask)
        && lists
            .iter()
            .all(|list| offers_mask(list) || offers_nil(list));
    !by_masks
}

/// `filterSingleNumaHints`: keeps `{nil, true}` and preferred single-node hints.
pub fn filter_single_numa_hints(lists: &[HintSet]) -> Vec<HintSet> {
    lists
        .iter()
        .map(|list| {
            let mut kept = HintSet::empty(list.nodes());
            kept.any_preferred = list.any_preferred;
            for mask in list.preferred.iter().filter(|m| m.count() == 1) {
                kept.preferred.insert(mask);
            }
            kept
        })
        .collect()
}

/// A policy's `Merge`: the best hint and whether the pod (or container) is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyMerge {
    pub hint: TopologyHint,
    pub admit: bool,
    /// See [`Merged::needs_distances`].
    pub needs_distances: bool,
    /// See [`Merged::default_affinity`]; always false for `none`, whose
    /// hint is `nil`.
    pub default_affinity: bool,
}

/// `Policy.Merge` of `policy` over the providers' hints.
///
/// - `none`: `{nil, false}`, admitted (`policy_none.go`);
/// - `best-effort`: the best hint, always admitted;
/// - `restricted`: the best hint, admitted only when preferred;
/// - `single-numa-node`: only `{nil, true}` and preferred single-node hints
///   take part; a best hint equal to the default affinity becomes `nil`;
///   admitted only when preferred.
pub fn policy_merge(
    policy: TopologyManagerPolicy,
    numa: &NumaInfo,
    prefer_closest_numa_nodes: bool,
    providers: &[ProviderHints],
) -> Result<PolicyMerge, MergeTooLarge> {
    let order = MaskOrder::for_policy(policy, prefer_closest_numa_nodes);
    let lists = filter_providers_hints(numa.nodes, providers);
    match policy {
        TopologyManagerPolicy::None => Ok(PolicyMerge {
            hint: TopologyHint::any(false),
            admit: true,
            needs_distances: false,
            default_affinity: false,
        }),
        TopologyManagerPolicy::BestEffort | TopologyManagerPolicy::Restricted => {
            let merged = merge_lists(numa, order, &lists)?;
            Ok(PolicyMerge {
                hint: merged.hint,
                admit: policy == TopologyManagerPolicy::BestEffort || merged.hint.preferred,
                needs_distances: merged.needs_distances,
                default_affinity: merged.default_affinity,
            })
        }
        TopologyManagerPolicy::SingleNumaNode => {
            let merged = merge_lists(numa, order, &filter_single_numa_hints(&lists))?;
            let mut hint = merged.hint;
            // `IsEqual(defaultAffinity)`: on a projection only the machine's
            // default affinity is, not every node of the projection.
            let whole_machine = numa.machine_nodes <= numa.nodes;
            let is_default = merged.default_affinity
                || (whole_machine && hint.mask == Some(numa.default_affinity()));
            if is_default {
                hint.mask = None;
            }
            Ok(PolicyMerge {
                hint,
                admit: hint.preferred,
                needs_distances: merged.needs_distances,
                default_affinity: is_default,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::hint::ResourceHints;
    use rstest::rstest;

    fn list(nodes: usize, hints: &[(u32, bool)]) -> ResourceHints {
        let hints: Vec<TopologyHint> = hints
            .iter()
            .map(|&(bits, p)| TopologyHint::new(NumaMask::from_bits(bits.into()), p))
            .collect();
        ResourceHints::List(HintSet::from_hints(nodes, &hints))
    }

    #[rstest]
    #[case::common_preferred_mask(TopologyManagerPolicy::BestEffort, 0b01, true)]
    #[case::restricted_same(TopologyManagerPolicy::Restricted, 0b01, true)]
    fn equal_preferred_masks_merge_preferred(
        #[case] policy: TopologyManagerPolicy,
        #[case] bits: u32,
        #[case] admit: bool,
    ) {
        let providers = vec![
            vec![list(2, &[(0b01, true), (0b11, false)])],
            vec![list(2, &[(0b01, true), (0b10, true), (0b11, false)])],
        ];
        let merged = policy_merge(policy, &NumaInfo::new(2), false, &providers).unwrap();
        assert_eq!(
            merged.hint,
            TopologyHint::new(NumaMask::from_bits(bits.into()), true)
        );
        assert_eq!(merged.admit, admit);
    }

    #[test]
    fn different_masks_and_to_a_non_preferred_hint() {
        // {0} preferred and {0,1} preferred merge into {0}, not preferred.
        let providers = vec![
            vec![list(2, &[(0b01, true)])],
            vec![list(2, &[(0b11, true)])],
        ];
        let merged = policy_merge(
            TopologyManagerPolicy::Restricted,
            &NumaInfo::new(2),
            false,
            &providers,
        )
        .unwrap();
        assert_eq!(
            merged.hint,
            TopologyHint::new(NumaMask::from_bits(0b01), false)
        );
        assert!(!merged.admit);
    }

    #[test]
    fn closest_without_distances_reports_the_tie() {
        let providers = vec![vec![list(4, &[(0b0011, true), (0b0101, true)])]];
        let merged = policy_merge(
            TopologyManagerPolicy::BestEffort,
            &NumaInfo::new(4),
            true,
            &providers,
        )
        .unwrap();
        assert!(merged.needs_distances);
        assert_eq!(merged.hint.mask, Some(NumaMask::from_bits(0b0011)));
    }
}
