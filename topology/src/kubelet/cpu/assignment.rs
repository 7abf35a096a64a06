//! `takeByTopology` and `takeByTopologyNUMAPacked` of
//! `pkg/kubelet/cm/cpumanager/cpu_assignment.go` over the NUMA nodes of a
//! mask: the accumulator's `sortAvailableNUMANodes` and
//! `sortAvailableSockets`, then `takeFullNUMANodes` / `takeFullSockets` (in
//! `numaFirst` or `socketsFirst` order), `takeFullCores` and
//! `takeRemainingCPUs` node by node.

use super::super::mask::NumaMask;
use super::super::outcome::{Unknown, Unsupported};
use super::{CpuState, NumaCpus, SocketLayout};

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

impl CpuState {
    /// NUMA nodes of `set` with free CPUs, sorted as `sortAvailableNUMANodes`.
    pub(super) fn numa_order(&self, layout: &SocketLayout, set: NumaMask) -> Vec<usize> {
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

    /// The NUMA nodes of `set` with CPUs free, for a take of `count` CPUs
    /// there: `None` when nothing is to be taken (the accumulator is
    /// satisfied), an error when `set` holds fewer than `count` free CPUs
    /// (it failed). Both walks, packed and distributed, start so.
    pub(super) fn nodes_to_take_from(
        &self,
        set: NumaMask,
        count: u32,
    ) -> Result<Option<Vec<usize>>, TakeError> {
        let available = self.available_in(set);
        if count == 0 {
            return Ok(None);
        }
        if count > available {
            return Err(TakeError::NotEnough { available });
        }
        Ok(Some(
            set.nodes()
                .filter(|&n| self.numas.get(n).is_some_and(|c| c.available() > 0))
                .collect(),
        ))
    }

    /// `takeByTopologyNUMAPacked` over the NUMA nodes of `set`.
    pub(super) fn take_packed(
        &mut self,
        set: NumaMask,
        count: u32,
        init: bool,
    ) -> Result<(), TakeError> {
        let Some(active) = self.nodes_to_take_from(set, count)? else {
            return Ok(());
        };
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
    pub(super) fn take(&mut self, set: NumaMask, count: u32, init: bool) -> Result<(), TakeError> {
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
}
