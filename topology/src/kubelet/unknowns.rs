//! Branching on facts the node does not publish: the refusals that hold
//! whatever the unknown is, the CPU and Memory Managers' policies unknown
//! ([`Pinning`]), and the kubelet's version unknown, where both device-hint
//! rules are followed ([`evaluate_managers`]).
//!
//! No kubelet file branches like this; each rule follows the file it
//! reads: `topologymanager/policy_single_numa_node.go`,
//! `cpumanager/policy_static.go` (`SMTAlignmentError`) and
//! `devicemanager/topology_hints.go` (`generateDeviceTopologyHints` before
//! and from 1.36, kubernetes/kubernetes#138244).

use super::admit::{Step, Stop, DEFAULT_MAX_ALLOWABLE_NUMA_NODES};
use super::cpu::guaranteed_cpus;
use super::device::{pod_gpu_request, DeviceHintRange};
use super::facts::{ContainerDemand, Fact, MemoryManagerPolicy, NodeFacts, Occupancy, PodDemand};
use super::memory::container_request;
use super::outcome::{
    HintReport, Refusal, Remaining, Resource, ResourceReport, UnitReport, Unknown,
};
use super::preflight::{largest_numa_gpus, startup};
use super::scope::evaluate_under;
use crate::labels::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};

/// After the evaluation in the kubelet's order stopped at an unknown: a
/// rule that refuses the pod on the facts it reads, whatever the unknown
/// is, with the unit report its explanation reads. Each rule depends on
/// nothing an earlier stage allocates:
///
/// - `single-numa-node` and a unit whose GPUs no NUMA node holds: the
///   Device Manager's preferred hints have the fewest NUMA nodes whose GPUs
///   (free or not) hold the request (`generateDeviceTopologyHints`), so none
///   is of one NUMA node, whatever the other providers say and whatever an
///   earlier container took; `single-numa-node` admits only a preferred
///   hint of one NUMA node (`policy_single_numa_node.go`). Under scope
///   `pod` the unit is the pod's GPUs, under `container` each container's;
///   with the scope unknown, a container too large for one NUMA node is
///   refused under both.
/// - `full-pcpus-only` and a container's exclusive CPUs that are not a
///   multiple of the threads per core: the static policy's `Allocate`
///   refuses it before it looks at any free CPU (`SMTAlignmentError`),
///   whatever the Topology Manager chose and whatever was allocated before.
///
/// The kubelet starting is not in doubt here: with `startup` unknown the
/// node may never run the pod for another reason, so no rule is applied.
pub(super) fn refusal_whatever_is_unknown(
    node: &NodeFacts,
    pod: &PodDemand,
) -> Option<(Refusal, Option<UnitReport>)> {
    if startup(node).is_err() {
        return None;
    }
    let tm = &node.topology_manager;
    let single_numa_node = tm.policy == Some(TopologyManagerPolicy::SingleNumaNode);
    let largest = largest_numa_gpus(node);
    let too_wide = |gpus: u32| single_numa_node && gpus > 0 && largest.is_some_and(|m| gpus > m);
    let refused_unit = |container: Option<usize>, gpus: u32| {
        let report = ResourceReport {
            resource: Resource::Gpu,
            request: u64::from(gpus),
            hints: numa_span(node, gpus),
        };
        (
            Refusal::TopologyAffinity { container },
            Some(UnitReport {
                container,
                resources: vec![report],
                hint: None,
                aligned: false,
            }),
        )
    };
    let scope = if pod.containers.len() > 1 {
        tm.scope
    } else {
        Some(TopologyManagerScope::Container)
    };
    let gpus_of = |c: &ContainerDemand| c.gpus.unwrap_or(0);
    match scope {
        Some(TopologyManagerScope::Pod) => {
            let gpus = pod_gpu_request(&pod.containers).unwrap_or(0);
            if too_wide(gpus) {
                return Some(refused_unit(None, gpus));
            }
        }
        Some(TopologyManagerScope::Container) => {
            if let Some(i) = pod.containers.iter().position(|c| too_wide(gpus_of(c))) {
                return Some(refused_unit(Some(i), gpus_of(&pod.containers[i])));
            }
        }
        None => {
            let widest = (0..pod.containers.len()).max_by_key(|&i| gpus_of(&pod.containers[i]));
            if let Some(i) = widest.filter(|&i| too_wide(gpus_of(&pod.containers[i]))) {
                return Some(refused_unit(Some(i), gpus_of(&pod.containers[i])));
            }
        }
    }
    let cm = &node.cpu_manager;
    let smt = cm.policy == Some(CpuManagerPolicy::Static) && cm.full_pcpus_only == Some(true);
    let threads = node.threads_per_core.filter(|&t| t > 1)?;
    if !(smt && pod.guaranteed && !pod.pod_level_resources) {
        return None;
    }
    pod.containers.iter().enumerate().find_map(|(i, c)| {
        let cpus = guaranteed_cpus(true, c.cpu_millis);
        (cpus > 0 && !cpus.is_multiple_of(threads)).then_some((
            Refusal::SmtAlignment {
                container: i,
                requested: cpus,
                cpus_per_core: threads,
                available_physical_cpus: None,
            },
            None,
        ))
    })
}

/// The Device Manager's report for `gpus` on `node` with nothing taken:
/// the fewest NUMA nodes whose GPUs hold them, from the per-NUMA counts
/// when known, else from `gpus-per-numa-max` (exact when every NUMA node
/// with GPUs has that many, as on the machines labelers publish, and
/// otherwise the least it can be).
fn numa_span(node: &NodeFacts, gpus: u32) -> HintReport {
    let listed: Option<Vec<u32>> = node
        .numa_nodes
        .as_deref()
        .and_then(|numas| numas.iter().map(|n| n.gpus).collect());
    let span = match (listed, largest_numa_gpus(node)) {
        (Some(mut counts), _) => {
            crate::sort::sort_by(&mut counts, |a, b| b.cmp(a));
            let mut held = 0u64;
            counts
                .iter()
                .position(|&c| {
                    held += u64::from(c);
                    held >= u64::from(gpus)
                })
                .map(|i| i as u32 + 1)
        }
        (None, Some(most)) if most > 0 => Some(gpus.div_ceil(most)),
        _ => None,
    };
    match span {
        Some(n) => HintReport::Hints {
            narrowest_capacity: n,
            narrowest_available: n,
            preferred_masks: 0,
        },
        None => HintReport::NoFit,
    }
}

/// Whether the CPU and Memory Managers pin something of the pod: `None`
/// where the manager's policy is not published. Its hints and its
/// `Allocate` are then unknown, but the evaluation goes on: under
/// `restricted` and `single-numa-node` a hint provider more only removes
/// preferred hints, so a refusal by the others stands
/// ([`Admitter::merge_unit`](super::scope::Admitter::merge_unit)).
pub(super) struct Pinning {
    pub(super) cpu_static: Option<bool>,
    pub(super) memory_static: Option<bool>,
}

impl Pinning {
    /// The policy that is not published, CPU Manager first.
    pub(super) fn unknown(&self) -> Option<Unknown> {
        match (self.cpu_static, self.memory_static) {
            (None, _) => Some(Unknown::Missing(Fact::CpuManagerPolicy)),
            (_, None) => Some(Unknown::Missing(Fact::MemoryManagerPolicy)),
            _ => None,
        }
    }
}

pub(super) fn pinning(node: &NodeFacts, pod: &PodDemand) -> Pinning {
    let pinned = pod.guaranteed && !pod.pod_level_resources;
    let wants_cpus = pinned
        && pod
            .containers
            .iter()
            .any(|c| guaranteed_cpus(true, c.cpu_millis) > 0);
    let wants_memory = pinned
        && pod
            .containers
            .iter()
            .any(|c| container_request(c) != [0; 3]);
    Pinning {
        cpu_static: if wants_cpus {
            node.cpu_manager
                .policy
                .map(|policy| policy == CpuManagerPolicy::Static)
        } else {
            Some(false)
        },
        memory_static: if wants_memory {
            node.memory_manager
                .map(|policy| policy == MemoryManagerPolicy::Static)
        } else {
            Some(false)
        },
    }
}

/// The Topology Manager's scopes over the hint providers, on a node known
/// to start and to be large enough.
///
/// With the kubelet's version unknown, both device-hint rules
/// ([`DeviceHintRange`]) are followed where they can differ (a requested
/// device resource missing from some NUMA node, under a policy that
/// merges): the same answer under both stands, different answers are
/// [`Fact::KubeletVersion`] unknown.
pub(super) fn evaluate_managers(
    node: &NodeFacts,
    pod: &PodDemand,
    occupancy: Option<&Occupancy>,
    units: &mut Vec<UnitReport>,
    remaining: &mut Remaining,
) -> Step<bool> {
    let range = match node.kubelet_version {
        Some(version) => DeviceHintRange::of(version),
        None if device_rules_may_differ(node, pod) => {
            let mut new_units = Vec::new();
            let mut new_remaining = Remaining::default();
            let old = evaluate_under(
                node,
                pod,
                occupancy,
                DeviceHintRange::EveryNumaNode,
                units,
                remaining,
            );
            let new = evaluate_under(
                node,
                pod,
                occupancy,
                DeviceHintRange::DeviceNumaNodes,
                &mut new_units,
                &mut new_remaining,
            );
            let same_units = units.len() == new_units.len()
                && units.iter().zip(&new_units).all(|(a, b)| {
                    (a.container, a.hint, a.aligned) == (b.container, b.hint, b.aligned)
                });
            return if same_step(&old, &new) && same_units && *remaining == new_remaining {
                old
            } else {
                units.clear();
                *remaining = Remaining::default();
                Err(Fact::KubeletVersion.into())
            };
        }
        // Where the rules cannot differ, either one.
        None => DeviceHintRange::EveryNumaNode,
    };
    evaluate_under(node, pod, occupancy, range, units, remaining)
}

/// Whether the device-hint rules of kubelets before and from 1.36 can lead
/// to different answers: some device resource the pod requests (GPUs
/// included) is absent from some NUMA node, under `best-effort`, or on any
/// merging policy above 8 NUMA nodes (where the kubelet's cost, and so
/// [`Refusal::HintSearchTooSlow`], depends on the masks walked).
///
/// The rules' lists differ only by masks holding a NUMA node without the
/// resource, and for a request of at least one device such a mask is never
/// preferred: without that node it still holds the request, with one node
/// fewer, so it is wider than `minAffinitySize`. (An explicit request of 0
/// is held by every mask, a device-less node alone too: its preferred
/// one-node hints differ.) The preferred hints are the same, hence under
/// `single-numa-node` (which keeps only preferred one-node hints) the
/// merge is, and under `restricted` every preferred merge is and every
/// other one is refused (`TopologyAffinityError` for the same unit).
/// Only `best-effort` admits a non-preferred hint, which may then differ.
fn device_rules_may_differ(node: &NodeFacts, pod: &PodDemand) -> bool {
    let Some(policy) = node.topology_manager.policy else {
        return true;
    };
    if policy == TopologyManagerPolicy::None {
        return false;
    }
    let above_8 = node
        .numa_nodes
        .as_ref()
        .is_some_and(|n| n.len() > DEFAULT_MAX_ALLOWABLE_NUMA_NODES);
    let zero_request = pod
        .containers
        .iter()
        .any(|c| c.gpus == Some(0) || c.devices.contains(&Some(0)));
    if policy != TopologyManagerPolicy::BestEffort && !above_8 && !zero_request {
        return false;
    }
    let Some(numas) = node.numa_nodes.as_deref() else {
        return false;
    };
    let gpus_missing_somewhere =
        pod.containers.iter().any(|c| c.gpus.is_some()) && numas.iter().any(|n| n.gpus == Some(0));
    let devices_missing_somewhere = pod.devices.iter().any(|resource| {
        node.devices
            .get(resource)
            .is_some_and(|counts| counts.contains(&0))
    });
    gpus_missing_somewhere || devices_missing_somewhere
}

/// Two evaluations end the same way.
fn same_step(a: &Step<bool>, b: &Step<bool>) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y,
        (Err(Stop::Refuse(x)), Err(Stop::Refuse(y))) => x == y,
        (Err(Stop::Unknown(x)), Err(Stop::Unknown(y))) => x == y,
        (Err(Stop::Input(x)), Err(Stop::Input(y))) => x == y,
        _ => false,
    }
}
