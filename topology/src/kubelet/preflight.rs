//! Before the managers: whether the kubelet starts at all with the node's
//! settings, and whether the node is large enough for the pod.
//!
//! Mirrors `pkg/kubelet/cm/topologymanager/topology_manager.go` `NewManager`
//! (the kubelet does not start above `max-allowable-numa-nodes`),
//! `cpumanager/policy_options.go` `ValidateStaticPolicyOptions`
//! (`align-by-socket` with `single-numa-node`), and the node-size check of
//! the scheduler's `NodeResourcesFit` and the kubelet's
//! `PredicateAdmitHandler` (`pkg/kubelet/lifecycle/predicate.go`).

use super::admit::{Step, Stop, DEFAULT_MAX_ALLOWABLE_NUMA_NODES};
use super::device::pod_gpu_request;
use super::facts::{
    ContainerDemand, Fact, HugePages, NodeFacts, NumaNodeFacts, PodDemand, HUGE_PAGE_1GI_BYTES,
    HUGE_PAGE_2MI_BYTES, MIB,
};
use super::outcome::{Refusal, Resource, StartupError, Unknown};
use crate::labels::{CpuManagerPolicy, TopologyManagerPolicy};

/// Which node-size checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeFit {
    Checked,
    GpusOnly,
}

/// The kubelet refuses to start with these settings (`NewManager`,
/// `ValidateStaticPolicyOptions`): checked with the facts that are known.
///
/// `NewManager` counts `machineInfo.Topology` (every NUMA node cAdvisor
/// sees, CPU-less and memory-less ones included): the per-NUMA lists when
/// known, else the node's `machine-numa-nodes` count. Neither known, the
/// check is skipped only where it cannot fail: a machine without lists
/// and count may still have more than 8 NUMA nodes, but then the managers
/// stop on the missing lists anyway.
pub(super) fn startup(node: &NodeFacts) -> Step<()> {
    let tm = &node.topology_manager;
    let machine_numa_nodes = node.numa_nodes.as_ref().map(Vec::len).or_else(|| {
        node.machine_numa_nodes
            .and_then(|n| usize::try_from(n).ok())
    });
    if let Some(count) = machine_numa_nodes {
        if count > DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
            let policy = tm.policy.ok_or(Fact::TopologyManagerPolicy)?;
            if policy != TopologyManagerPolicy::None {
                let max = tm
                    .max_allowable_numa_nodes
                    .ok_or(Fact::MaxAllowableNumaNodes)?;
                if count > max as usize {
                    return Err(Stop::Refuse(Refusal::KubeletNotStarted(
                        StartupError::TooManyNumaNodes {
                            numa_nodes: count,
                            max_allowable: max,
                        },
                    )));
                }
            }
        }
    }
    if node.cpu_manager.policy == Some(CpuManagerPolicy::Static)
        && node.cpu_manager.align_by_socket == Some(true)
        && tm.policy == Some(TopologyManagerPolicy::SingleNumaNode)
    {
        return Err(Stop::Refuse(Refusal::KubeletNotStarted(
            StartupError::AlignBySocketWithSingleNumaNode,
        )));
    }
    Ok(())
}

/// The node's size against the pod's requests: the scheduler's
/// `NodeResourcesFit` (and the kubelet's `PredicateAdmitHandler`, which runs
/// the same `noderesources.Fits` on `status.allocatable`) refuses a pod that
/// requests more than the node's allocatable. Every bound here is the most
/// the allocatable can be on the facts known, so a refusal holds whatever
/// the missing facts are. A resource the pod requests whose size is not
/// known leaves an admission unknown (the refusals found stand).
///
/// - GPUs: the per-NUMA counts' sum, else the node's `gpus` count. The pod's
///   request is its effective one (`getPodDeviceRequest`, as the scheduler
///   sums it).
/// - CPUs: the NUMA nodes' online CPUs (the node's `capacity`), less the
///   kubelet's reserved CPUs where known: `ceil(kubeReserved +
///   systemReserved)` (or `reservedSystemCPUs`), so the allocatable is
///   below `capacity - reserved + 1`. The static CPU Manager always
///   reserves some: unpublished, they leave the size unknown.
/// - Memory and hugepages: the NUMA nodes' allocatable amounts, as the
///   labels give them (net of hugepages and `reservedMemory`, which the
///   static Memory Manager requires to equal `kubeReserved + systemReserved +
///   evictionHard`), each plus the step the labels round down by
///   ([`NodeFacts::memory_rounding_mib`]; at least the MiB).
///
/// Pod-level `spec.resources` replace the containers' requests in the
/// scheduler's sum: CPU and memory are then not checked here.
pub(super) fn node_fit(node: &NodeFacts, pod: &PodDemand, fit: NodeFit) -> Step<Option<Unknown>> {
    if pod.containers.iter().any(|c| c.gpus.is_some()) {
        if let Some(capacity) = node_gpus(node) {
            let requested = u64::from(pod_gpu_request(&pod.containers).unwrap_or(0));
            if requested > capacity {
                return Err(Stop::Refuse(Refusal::Insufficient {
                    resource: Resource::Gpu,
                    requested,
                    capacity,
                }));
            }
        }
    }
    if pod.pod_level_resources || fit == NodeFit::GpusOnly {
        return Ok(None);
    }
    let numas = node.numa_nodes.as_deref();
    // The sum over the NUMA nodes, or the first NUMA node (by index) where
    // the fact is missing; every machine has a NUMA node 0.
    let sum = |f: &dyn Fn(&NumaNodeFacts) -> Option<u64>| -> Result<u64, usize> {
        let numas = numas.ok_or(0usize)?;
        numas.iter().enumerate().try_fold(0u64, |total, (numa, n)| {
            Ok(total.saturating_add(f(n).ok_or(numa)?))
        })
    };
    let requested = |f: &dyn Fn(&ContainerDemand) -> u64| {
        super::pod_effective(pod.containers.iter().map(|c| (c.kind, f(c))))
    };
    let huge = |pages: Option<HugePages>, size: u64| {
        pages.map(|p| {
            p.pages
                .saturating_sub(p.reserved_pages)
                .saturating_mul(size)
        })
    };
    let static_cpu = node.cpu_manager.policy == Some(CpuManagerPolicy::Static);
    let cpu_size = sum(&|n| n.cpus.map(u64::from))
        .map_err(|numa| Fact::Cpus { numa })
        .and_then(|cpus| {
            // Reserved CPUs are kept from the allocatable under any CPU
            // Manager policy; the static one always has some.
            let reserved = match sum(&|n| n.reserved_cpus.map(u64::from)) {
                Ok(reserved) => reserved,
                Err(numa) if static_cpu => return Err(Fact::ReservedCpus { numa }),
                Err(_) => 0,
            };
            Ok((
                cpus.saturating_mul(1000),
                reserved.min(cpus).saturating_mul(1000),
            ))
        });
    let memory_size = sum(&|n| {
        let pages = huge(n.hugepages_2mi, HUGE_PAGE_2MI_BYTES).unwrap_or(0)
            + huge(n.hugepages_1gi, HUGE_PAGE_1GI_BYTES).unwrap_or(0);
        let total = n.memory_mib?.saturating_sub(n.reserved_memory_mib?);
        Some(
            total
                .saturating_add(1)
                .saturating_mul(MIB)
                .saturating_sub(pages),
        )
    })
    .map(|bytes| (bytes, 0))
    .map_err(|numa| Fact::Memory { numa });
    let pages_size = |size, fact: fn(usize) -> Fact| {
        sum(&|n| {
            let pages = if size == HUGE_PAGE_2MI_BYTES {
                n.hugepages_2mi
            } else {
                n.hugepages_1gi
            };
            huge(pages, size)
        })
        .map(|bytes| (bytes, 0))
        .map_err(fact)
    };
    let sizes = [
        (Resource::Cpu, requested(&|c| c.cpu_millis), cpu_size),
        (
            Resource::Memory,
            requested(&|c| c.memory_bytes),
            memory_size,
        ),
        (
            Resource::HugePages2Mi,
            requested(&|c| c.hugepages_2mi_bytes),
            pages_size(HUGE_PAGE_2MI_BYTES, |numa| Fact::HugePages2Mi { numa }),
        ),
        (
            Resource::HugePages1Gi,
            requested(&|c| c.hugepages_1gi_bytes),
            pages_size(HUGE_PAGE_1GI_BYTES, |numa| Fact::HugePages1Gi { numa }),
        ),
    ];
    let mut unknown = None;
    for (resource, requested, size) in sizes {
        if requested == 0 {
            continue;
        }
        let (capacity, reserved) = match size {
            Ok(size) => size,
            Err(fact) => {
                unknown.get_or_insert(Unknown::Missing(fact));
                continue;
            }
        };
        let slack = match resource {
            // The labels round each NUMA node's memory down by less than
            // a step: the refusal holds only above the most it can be
            // (the figures stay the published ones).
            Resource::Memory => node
                .memory_rounding_mib
                .saturating_sub(1)
                .saturating_mul(MIB.saturating_mul(numas.map_or(0, |numas| numas.len() as u64))),
            // A reservation rounded up to whole CPUs leaves less than one
            // CPU more allocatable than `capacity - reserved`.
            _ if reserved > 0 => 999,
            _ => 0,
        };
        let most = capacity.saturating_sub(reserved).saturating_add(slack);
        if requested > most {
            return Err(Stop::Refuse(Refusal::NodeTooSmall {
                resource,
                requested,
                capacity,
                reserved,
            }));
        }
    }
    Ok(unknown)
}

/// The node's GPUs: the per-NUMA counts' sum when all are known, else the
/// node's count.
fn node_gpus(node: &NodeFacts) -> Option<u64> {
    let listed = node.numa_nodes.as_deref().and_then(|numas| {
        numas
            .iter()
            .try_fold(0u64, |total, n| Some(total + u64::from(n.gpus?)))
    });
    listed.or(node.gpus.map(u64::from))
}

/// The GPUs on the NUMA node that has the most: from the per-NUMA counts
/// when all are known, else the node's `gpus-per-numa-max`.
pub(super) fn largest_numa_gpus(node: &NodeFacts) -> Option<u32> {
    let listed = node.numa_nodes.as_deref().and_then(|numas| {
        numas
            .iter()
            .try_fold(0u32, |most, n| Some(most.max(n.gpus?)))
    });
    listed.or(node.gpus_per_numa_max)
}
