//! The NUMA projection: on machines above 8 NUMA nodes the merge and the
//! allocations run on the NUMA nodes some hint provider ranges over for
//! the pod ([`relevant_numa_nodes`], which shows why that gives the
//! kubelet's answer), renumbered `0..` ([`Projection`]), and the answer is
//! turned back into the machine's ids.
//!
//! Mirrors no kubelet file: the kubelet walks the whole machine
//! (`topologymanager/policy.go`, `bitmask.IterateBitMasks`). The ranges
//! kept are those of `devicemanager/topology_hints.go`,
//! `cpumanager/policy_static.go` and `memorymanager/policy_static.go`
//! (`getDefaultMachineState`).

use super::device::DeviceHintRange;
use super::facts::{Fact, NodeFacts, NumaNodeFacts};
use super::mask::NumaMask;
use super::outcome::{Remaining, UnitReport, Unknown};
use super::scope::DemandRules;
use crate::labels::TopologyManagerPolicy;

/// The NUMA nodes some hint provider's masks range over for this pod: each
/// requested device resource's under `range` (every node before 1.36), the
/// nodes with CPUs when the CPU Manager may pin, every node when the Memory
/// Manager may (its machine state holds every NUMA node of
/// `machineInfo.Topology`, `getDefaultMachineState`). Under policy `none`
/// nothing is merged: only the nodes holding what the managers allocate
/// count.
///
/// Why the rest can be left out (the projection): a NUMA node outside
/// every provider's range holds none of what the pod asks for, and no
/// provider's hint names it. So every mask of every hint list lies within
/// the kept nodes, every merged mask (an AND of them, `nil` picks ANDed
/// away) too, and their counts, their order by value (the kept nodes keep
/// their order), their preference and their distances (the SLIT rows
/// restricted to the kept nodes) are the machine's: the merge ranks the
/// same masks the same way. The one mask that names the left-out nodes is
/// the default affinity, reached only when every pick is `nil` or nothing
/// merges; [`Merged::default_affinity`](super::merge::Merged) marks it.
/// Allocations take only what the kept nodes hold.
pub(super) fn relevant_numa_nodes(
    node: &NodeFacts,
    machine: &[NumaNodeFacts],
    rules: &DemandRules<'_>,
    range: DeviceHintRange,
    policy: TopologyManagerPolicy,
) -> NumaMask {
    let all = NumaMask::all(machine.len());
    if rules.memory_static {
        return all;
    }
    let range = if policy == TopologyManagerPolicy::None {
        DeviceHintRange::DeviceNumaNodes
    } else {
        range
    };
    let mut keep = NumaMask::EMPTY;
    if rules.pod.containers.iter().any(|c| c.gpus.is_some()) {
        let holding = machine
            .iter()
            .enumerate()
            .filter(|(_, n)| n.gpus != Some(0))
            .fold(NumaMask::EMPTY, |m, (i, _)| m.with(i));
        keep = keep.or(if machine.iter().any(|n| n.gpus.is_none()) {
            // A missing count is asked for on the whole machine.
            all
        } else if holding.is_empty() {
            NumaMask::EMPTY
        } else {
            match range {
                DeviceHintRange::EveryNumaNode => all,
                DeviceHintRange::DeviceNumaNodes => holding,
            }
        });
    }
    for resource in &rules.pod.devices {
        if let Some(counts) = node.devices.get(resource) {
            if counts.len() == machine.len() && counts.iter().any(|&c| c > 0) {
                keep = keep.or(range.universe(counts));
            }
        }
    }
    if rules.cpu_static {
        for (i, n) in machine.iter().enumerate() {
            if n.cpus != Some(0) {
                keep = keep.with(i);
            }
        }
    }
    if keep.is_empty() {
        // Nothing ranges anywhere: one node stands for the machine.
        keep = NumaMask::single(0);
    }
    keep
}

/// The NUMA nodes that matter, renumbered `0..` in id order.
pub(super) struct Projection {
    machine_nodes: usize,
    /// Machine ids of the kept nodes, ascending.
    kept: Vec<usize>,
}

impl Projection {
    pub(super) fn new(machine_nodes: usize, keep: NumaMask) -> Self {
        Projection {
            machine_nodes,
            kept: keep.nodes().collect(),
        }
    }

    pub(super) fn machine_id(&self, projected: usize) -> usize {
        self.kept.get(projected).copied().unwrap_or(projected)
    }

    /// The node's facts on the kept NUMA nodes.
    pub(super) fn facts(&self, node: &NodeFacts) -> NodeFacts {
        let pick = |values: &[NumaNodeFacts]| -> Vec<NumaNodeFacts> {
            self.kept
                .iter()
                .filter_map(|&id| values.get(id))
                .map(|n| NumaNodeFacts {
                    distances: n.distances.as_ref().map(|row| {
                        self.kept
                            .iter()
                            .filter_map(|&id| row.get(id).copied())
                            .collect()
                    }),
                    ..*n
                })
                .collect()
        };
        // Field by field: cloning the node would copy every NUMA node's
        // distance row only to drop most of them.
        NodeFacts {
            gpus: node.gpus,
            gpus_per_numa_max: node.gpus_per_numa_max,
            numa_nodes: node.numa_nodes.as_deref().map(pick),
            threads_per_core: node.threads_per_core,
            topology_manager: node.topology_manager.clone(),
            cpu_manager: node.cpu_manager.clone(),
            memory_manager: node.memory_manager,
            machine_numa_nodes: node.machine_numa_nodes,
            kubelet_version: node.kubelet_version,
            memory_rounding_mib: node.memory_rounding_mib,
            devices: self.devices(node),
        }
    }

    /// The device counts on the kept NUMA nodes.
    fn devices(&self, node: &NodeFacts) -> std::collections::BTreeMap<String, Vec<u32>> {
        crate::sort::btree_map(node.devices.iter().map(|(name, counts)| {
            let kept = if counts.len() == self.machine_nodes {
                self.kept
                    .iter()
                    .filter_map(|&id| counts.get(id).copied())
                    .collect()
            } else {
                // Unreadable on the machine: unreadable on the projection.
                counts.clone()
            };
            (name.clone(), kept)
        }))
    }

    /// An unknown naming a NUMA node, in machine ids.
    pub(super) fn unknown_to_machine(&self, unknown: Unknown) -> Unknown {
        use super::outcome::Unsupported;
        let id = |numa| self.machine_id(numa);
        let fact = |fact| match fact {
            Fact::Gpus { numa } => Fact::Gpus { numa: id(numa) },
            Fact::Cpus { numa } => Fact::Cpus { numa: id(numa) },
            Fact::ReservedCpus { numa } => Fact::ReservedCpus { numa: id(numa) },
            Fact::ReservedCores { numa } => Fact::ReservedCores { numa: id(numa) },
            Fact::Socket { numa } => Fact::Socket { numa: id(numa) },
            Fact::Memory { numa } => Fact::Memory { numa: id(numa) },
            Fact::ReservedMemory { numa } => Fact::ReservedMemory { numa: id(numa) },
            Fact::HugePages2Mi { numa } => Fact::HugePages2Mi { numa: id(numa) },
            Fact::HugePages1Gi { numa } => Fact::HugePages1Gi { numa: id(numa) },
            Fact::Distances { numa } => Fact::Distances { numa: id(numa) },
            other => other,
        };
        match unknown {
            Unknown::Missing(f) => Unknown::Missing(fact(f)),
            Unknown::Unsupported(Unsupported::PartialReservedCores { numa }) => {
                Unknown::Unsupported(Unsupported::PartialReservedCores { numa: id(numa) })
            }
            other => other,
        }
    }

    fn mask_to_machine(&self, mask: NumaMask) -> NumaMask {
        mask.nodes()
            .fold(NumaMask::EMPTY, |m, n| m.with(self.machine_id(n)))
    }

    /// A unit's hint in machine ids; a mask naming nodes beyond the
    /// projection is the machine's default affinity, already in them.
    pub(super) fn unit_to_machine(&self, unit: &mut UnitReport) {
        let within = NumaMask::all(self.kept.len());
        if let Some(hint) = unit.hint.as_mut() {
            hint.mask = hint.mask.map(|mask| {
                if mask.is_subset_of(within) {
                    self.mask_to_machine(mask)
                } else {
                    mask
                }
            });
        }
    }

    /// Per-NUMA lists over the machine: the left-out nodes hold nothing
    /// the pod's managers count.
    pub(super) fn remaining_to_machine(&self, remaining: &mut Remaining) {
        fn widen<T: Clone + Default>(p: &Projection, values: &mut Option<Vec<T>>) {
            if let Some(v) = values.take() {
                let mut out = vec![T::default(); p.machine_nodes];
                for (i, value) in v.into_iter().enumerate() {
                    if let Some(slot) = out.get_mut(p.machine_id(i)) {
                        *slot = value;
                    }
                }
                *values = Some(out);
            }
        }
        widen(self, &mut remaining.gpus);
        widen(self, &mut remaining.cpus);
        widen(self, &mut remaining.memory);
    }
}
