//! The sockets of the NUMA nodes with CPUs: the `numaFirst` /
//! `socketsFirst` choice of `newCPUAccumulator` and `CPUsPerSocket`
//! (`pkg/kubelet/cm/cpumanager/cpu_assignment.go`, `topology/topology.go`),
//! `isHintSocketAligned` and the socket span of `getAlignedCPUs` under
//! `align-by-socket` (`policy_static.go`).

use super::super::facts::{Fact, NumaNodeFacts};
use super::super::mask::NumaMask;
use super::super::outcome::Unknown;

/// Sockets of the NUMA nodes with CPUs: the `numaFirst` / `socketsFirst`
/// choice of `newCPUAccumulator` and the socket sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SocketLayout {
    /// Socket of each NUMA node (meaningless for nodes without CPUs).
    socket_of: Vec<u32>,
    /// `NumSockets >= NumNUMANodes`: NUMA nodes are the first level.
    pub(super) numa_first: bool,
    /// `CPUsPerSocket`: all CPUs over the sockets.
    pub(super) cpus_per_socket: u32,
    /// Distinct sockets, ascending, with their CPUs.
    pub(super) sockets: Vec<(u32, u32)>,
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

    pub(super) fn socket(&self, numa: usize) -> u32 {
        self.socket_of.get(numa).copied().unwrap_or(0)
    }

    pub(super) fn socket_cpus(&self, socket: u32) -> u32 {
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
    pub(super) fn hint_socket_aligned(&self, mask: NumaMask, min_affinity: u32) -> bool {
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
    pub(super) fn socket_span(&self, mask: NumaMask, cpus: &[u32]) -> NumaMask {
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
