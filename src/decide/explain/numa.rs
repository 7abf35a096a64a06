//! The arithmetic behind each suggested fix: a node's per-NUMA figures
//! (GPUs, CPUs, memory, devices) and the narrowest NUMA masks a unit's
//! resources span, read from the kubelet model's reports. The sentences
//! that word them stay in `explain.rs`; split off so each file stays short
//! (issue #36).

use super::{bytes, per, plural, MIB};
use gpu_topology::kubelet::{HintReport, NodeFacts, Resource, ResourceReport, UnitReport};
use gpu_topology::TopologyManagerScope;

/// A resource's request and narrowest NUMA masks, from its report.
pub(super) struct Span {
    pub(super) resource: Resource,
    pub(super) request: u64,
    /// Fewest NUMA nodes whose capacity holds the request; `None`: no mask can.
    pub(super) capacity: Option<u32>,
    /// Fewest NUMA nodes of what is free when the unit is admitted.
    pub(super) available: Option<u32>,
}

pub(super) fn spans(unit: Option<&UnitReport>) -> Vec<Span> {
    unit.map_or(&[][..], |u| u.resources.as_slice())
        .iter()
        .filter_map(|r: &ResourceReport| match r.hints {
            HintReport::DontCare => None,
            HintReport::NoFit => Some(Span {
                resource: r.resource,
                request: r.request,
                capacity: None,
                available: None,
            }),
            HintReport::Hints {
                narrowest_capacity,
                narrowest_available,
                ..
            } => Some(Span {
                resource: r.resource,
                request: r.request,
                capacity: Some(narrowest_capacity),
                available: Some(narrowest_available),
            }),
        })
        .collect()
}

/// Per-NUMA figures of a node, for the fixes' arithmetic.
pub(crate) struct NumaFigures {
    pub(crate) gpus: Vec<u64>,
    /// CPUs, reserved ones included (the kubelet's capacity for hints).
    pub(crate) cpus: Vec<u64>,
    /// CPUs less reserved ones (what an allocation can take).
    pub(crate) free_cpus: Vec<u64>,
    /// Allocatable bytes of memory, hugepages-2Mi, hugepages-1Gi.
    pub(crate) memory: [Vec<u64>; 3],
    /// Devices of each other device resource the node publishes.
    pub(crate) devices: std::collections::BTreeMap<String, Vec<u64>>,
}

impl NumaFigures {
    pub(crate) fn of(facts: &NodeFacts) -> Self {
        let numas = facts.numa_nodes.as_deref().unwrap_or_default();
        let list = |f: &dyn Fn(&gpu_topology::kubelet::NumaNodeFacts) -> u64| {
            numas.iter().map(f).collect::<Vec<u64>>()
        };
        let huge = |p: Option<gpu_topology::kubelet::HugePages>, size: u64| {
            p.map_or(0, |p| {
                p.pages
                    .saturating_sub(p.reserved_pages)
                    .saturating_mul(size)
            })
        };
        // Without the per-NUMA lists (an old labeler), the GPUs as the
        // node's counts give them: NUMA nodes of `gpus-per-numa-max`.
        let gpus = match (numas.is_empty(), facts.gpus_per_numa_max) {
            (true, Some(most)) if most > 0 => {
                let numa_nodes = facts.gpus.unwrap_or(most).div_ceil(most);
                vec![u64::from(most); numa_nodes as usize]
            }
            _ => list(&|n| u64::from(n.gpus.unwrap_or(0))),
        };
        NumaFigures {
            gpus,
            cpus: list(&|n| u64::from(n.cpus.unwrap_or(0))),
            free_cpus: list(&|n| {
                u64::from(
                    n.cpus
                        .unwrap_or(0)
                        .saturating_sub(n.reserved_cpus.unwrap_or(0)),
                )
            }),
            memory: [
                list(&|n| {
                    n.memory_mib
                        .unwrap_or(0)
                        .saturating_sub(n.reserved_memory_mib.unwrap_or(0))
                        .saturating_mul(MIB)
                        .saturating_sub(huge(n.hugepages_2mi, 2 * MIB))
                        .saturating_sub(huge(n.hugepages_1gi, 1024 * MIB))
                }),
                list(&|n| huge(n.hugepages_2mi, 2 * MIB)),
                list(&|n| huge(n.hugepages_1gi, 1024 * MIB)),
            ],
            devices: gpu_topology::sort::btree_map(facts.devices.iter().map(|(name, counts)| {
                (name.clone(), counts.iter().map(|&c| u64::from(c)).collect())
            })),
        }
    }

    /// The sum of the `k` largest values.
    pub(super) fn largest(&self, values: &[u64], k: u32) -> u64 {
        let mut sorted = values.to_vec();
        gpu_topology::sort::sort_by(&mut sorted, |a, b| b.cmp(a));
        sorted.iter().take(k as usize).sum()
    }

    /// The CPU counts whose narrowest mask is `span` NUMA nodes and that
    /// those nodes can allocate: more than the `span - 1` largest hold, at
    /// most what the `span` freest leave.
    pub(super) fn cpus_spanning(&self, span: u32) -> (u64, u64) {
        let low = self.largest(&self.cpus, span.saturating_sub(1)) + 1;
        (low, self.largest(&self.free_cpus, span).max(low))
    }

    /// `at most 4 GPUs`, `at most 54 whole CPUs ...`: what `span` NUMA nodes hold.
    pub(super) fn at_most(&self, resource: Resource, span: u32) -> String {
        match resource {
            Resource::Gpu => format!("at most {}", plural(self.largest(&self.gpus, span), "GPU")),
            Resource::Cpu => format!(
                "at most {} exclusive CPUs",
                self.largest(&self.free_cpus, span)
            ),
            Resource::Memory => format!(
                "at most {} of memory",
                bytes(self.largest(&self.memory[0], span))
            ),
            Resource::HugePages2Mi => format!(
                "at most {} of hugepages-2Mi",
                bytes(self.largest(&self.memory[1], span))
            ),
            Resource::HugePages1Gi => format!(
                "at most {} of hugepages-1Gi",
                bytes(self.largest(&self.memory[2], span))
            ),
            Resource::Device(name) => {
                let counts = self
                    .devices
                    .get(name.as_str())
                    .map_or(&[][..], Vec::as_slice);
                format!("at most {} {name}", self.largest(counts, span))
            }
        }
    }

    /// The fix that brings `resource` onto one NUMA node.
    pub(super) fn at_most_one(&self, resource: Resource, scope: TopologyManagerScope) -> String {
        match resource {
            Resource::Cpu => format!(
                "{}, or a fractional CPU amount (shared pool)",
                self.at_most(Resource::Cpu, 1)
            ),
            Resource::Gpu => format!("{} {}", self.at_most(Resource::Gpu, 1), per(scope)),
            other => self.at_most(other, 1),
        }
    }
}
