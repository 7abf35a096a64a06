//! `takeByTopologyNUMADistributed` of
//! `pkg/kubelet/cm/cpumanager/cpu_assignment.go`
//! (`distribute-cpus-across-numa`): `rangeNUMANodesNeededToSatisfy`, the
//! combinations of NUMA nodes in `iterateCombinations` order, the balance
//! score (`standardDeviation`, `mean`, rounded as the kubelet rounds them)
//! and the remainder handed out group by group. The choice of NUMA nodes
//! ([`numa_nodes_needed`], [`best_distribution`]) and these helpers serve
//! the walk over CPU ids ([`super::by_id`]) too.

use super::super::mask::NumaMask;
use super::{CpuState, NumaCpus, TakeError};

impl CpuState {
    /// `rangeNUMANodesNeededToSatisfy` over the machine's NUMA nodes.
    fn numa_range(&self, active: u32, count: u32, group: u32) -> (u32, u32) {
        let numa_nodes = self.numas.iter().filter(|n| n.cpus > 0).count() as u32;
        let cpus: u32 = self.numas.iter().map(|n| n.cpus).sum();
        numa_nodes_needed(numa_nodes, cpus, active, count, group)
    }

    /// `takeByTopologyNUMADistributed` over the NUMA nodes of `set`.
    pub(super) fn take_distributed(
        &mut self,
        set: NumaMask,
        count: u32,
        group: u32,
        init: bool,
    ) -> Result<(), TakeError> {
        let Some(active) = self.nodes_to_take_from(set, count)? else {
            return Ok(());
        };
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
            let Some((combo, remainder_set)) =
                best_distribution::<false>(&avail, k as usize, count, group)?
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
}

/// `rangeNUMANodesNeededToSatisfy`: the fewest and the most NUMA nodes a
/// distributed take of `count` CPUs in groups of `group` may span, on a
/// machine of `cpus` CPUs over `numa_nodes` NUMA nodes (those with CPUs),
/// `active` of which have CPUs free.
pub(super) fn numa_nodes_needed(
    numa_nodes: u32,
    cpus: u32,
    active: u32,
    count: u32,
    group: u32,
) -> (u32, u32) {
    let groups = (cpus.saturating_sub(1)) / group + 1;
    let per_numa = (groups - 1) / numa_nodes.max(1) + 1;
    let needed = (count - 1) / group + 1;
    ((needed - 1) / per_numa + 1, needed.min(active))
}

/// Positions of the chosen NUMA nodes and of those the remainder comes from.
pub(super) type Distribution = (Vec<usize>, Vec<usize>);

/// The combination of `k` of the nodes (by position in `avail`, their free
/// CPUs) that `takeByTopologyNUMADistributed` picks, and its remainder
/// nodes; `None` when no combination of `k` balances. Shared by the count
/// walk and the walk over CPU ids ([`super::by_id`]).
///
/// Where the hand-out of the remainder over a subset never ends (the
/// kubelet's remainder loop spins forever there), the count walk answers
/// [`TakeError::Loops`] (`SKIP_LOOPS` false), the walk over CPU ids passes
/// over the subset (`SKIP_LOOPS` true), as the labeler always has. A
/// constant, not an argument: the policy's Wasm module holds only the count
/// walk's instance, as lean as before the walks shared it.
pub(super) fn best_distribution<const SKIP_LOOPS: bool>(
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
            'subsets: for subset_positions in combinations(remainder_combo.len(), size) {
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
                        if SKIP_LOOPS {
                            continue 'subsets;
                        }
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

/// `iterateCombinations` order: k-subsets of `0..n`, lexicographic; a
/// walk over other items maps the positions to them.
pub(super) fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
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

/// `standardDeviation` of `cpu_assignment.go`, over its `mean`, each
/// rounded to three decimals as there.
pub(super) fn standard_deviation(values: &[u32]) -> f64 {
    let len = values.len().max(1) as f64;
    let mean = round3(values.iter().map(|&v| f64::from(v)).sum::<f64>() / len);
    let sum: f64 = values
        .iter()
        .map(|&v| (f64::from(v) - mean) * (f64::from(v) - mean))
        .sum();
    round3((sum / len).sqrt())
}
