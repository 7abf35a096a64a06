//! A pod's admission on an empty node: the Topology Manager's scopes
//! driving the hint providers and their `Allocate` calls.
//!
//! Reproduces `pkg/kubelet/cm/topologymanager/scope_pod.go` (one merge over
//! `GetPodTopologyHints`, then `Allocate` per container with the pod's
//! hint), `scope_container.go` (merge and `Allocate` container by
//! container, in `InitContainers` then `Containers` order),
//! `scope_none.go` / `scope.go` `admitPolicyNone` (no merge, `Allocate`
//! with an empty hint), the provider order of `container_manager_linux.go`
//! (Device Manager, CPU Manager, Memory Manager; the first failing
//! `Allocate` decides) and `topology_manager.go` `NewManager` (the kubelet
//! does not start above `max-allowable-numa-nodes`).

use super::cpu::{guaranteed_cpus, CpuAllocError, CpuOptions, CpuState};
use super::device::{
    allocate_gpus, gpu_hints, pod_device_request, pod_gpu_request, DeviceState, GpuState,
};
use super::facts::{
    numa_nodes, validate, ContainerDemand, DeviceName, Fact, InputError, MemoryManagerPolicy,
    NodeFacts, NumaNodeFacts, PodDemand,
};
use super::hint::{ProviderHints, TopologyHint};
use super::mask::MAX_NUMA_NODES;
use super::memory::{
    container_request, memory_hints, pod_request, MemoryAmounts, MemoryState, MEMORY_RESOURCES,
};
use super::merge::{policy_merge, NumaInfo, PolicyMerge};
use super::outcome::{
    Admission, AllocationFailure, Indeterminate, Refusal, Remaining, Resource, ResourceReport,
    StartupError, UnitReport, Unknown, Verdict,
};
use crate::labels::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};

/// `maxAllowableNUMANodes` when the option is not set; the kubelet refuses
/// values below it, so machines up to this size never depend on the option.
pub const DEFAULT_MAX_ALLOWABLE_NUMA_NODES: usize = 8;

/// Where the evaluation stops early.
enum Stop {
    Refuse(Refusal),
    Unknown(Unknown),
    Input(InputError),
}

impl From<Unknown> for Stop {
    fn from(u: Unknown) -> Self {
        Stop::Unknown(u)
    }
}

impl From<Fact> for Stop {
    fn from(f: Fact) -> Self {
        Stop::Unknown(Unknown::Missing(f))
    }
}

impl From<InputError> for Stop {
    fn from(e: InputError) -> Self {
        Stop::Input(e)
    }
}

type Step<T> = Result<T, Stop>;

/// What the kubelet would do with `pod` on `node` when the node runs no other pod.
///
/// The policy cannot know what already runs on a node, so this answers for
/// an empty one (see the module documentation for what that means on a busy
/// node).
pub fn admit(node: &NodeFacts, pod: &PodDemand) -> Result<Admission, InputError> {
    validate(node, pod)?;
    let mut units = Vec::new();
    let mut remaining = Remaining::default();
    let verdict = match evaluate(node, pod, &mut units, &mut remaining) {
        Ok(aligned) => Verdict::Admit { aligned },
        Err(Stop::Refuse(r)) => Verdict::Refuse(r),
        Err(Stop::Unknown(u)) => Verdict::Unknown(u),
        Err(Stop::Input(e)) => return Err(e),
    };
    if !matches!(verdict, Verdict::Admit { .. }) {
        remaining = Remaining::default();
    }
    Ok(Admission {
        verdict,
        units,
        remaining,
    })
}

/// One alignment unit's demand.
#[derive(Debug, Clone)]
struct UnitDemand {
    gpus: Option<u32>,
    /// Per device resource of the pod ([`PodDemand::devices`]).
    devices: Vec<Option<u32>>,
    cpus: u32,
    memory: MemoryAmounts,
}

/// The managers that act on this pod and the machine they act on.
struct Admitter<'a> {
    pod: &'a PodDemand,
    policy: TopologyManagerPolicy,
    numa: NumaInfo,
    prefer_closest: Option<bool>,
    first_without_distances: usize,
    cpu_static: bool,
    memory_static: bool,
    gpu: Option<GpuState>,
    /// Per device resource of the pod: its devices, or why they are unknown.
    devices: Vec<DeviceProvider>,
    cpu: Result<CpuState, Unknown>,
    memory: Result<MemoryState, Unknown>,
}

/// The kubelet refuses to start with these settings (`NewManager`,
/// `ValidateStaticPolicyOptions`): checked with the facts that are known.
fn startup(node: &NodeFacts) -> Step<()> {
    let tm = &node.topology_manager;
    if let Some(numas) = &node.numa_nodes {
        if numas.len() > DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
            let policy = tm.policy.ok_or(Fact::TopologyManagerPolicy)?;
            if policy != TopologyManagerPolicy::None {
                let max = tm
                    .max_allowable_numa_nodes
                    .ok_or(Fact::MaxAllowableNumaNodes)?;
                if numas.len() > max as usize {
                    return Err(Stop::Refuse(Refusal::KubeletNotStarted(
                        StartupError::TooManyNumaNodes {
                            numa_nodes: numas.len(),
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

/// One device resource of the pod on the node.
struct DeviceProvider {
    name: DeviceName,
    /// `Err`: the node does not publish the resource (unknown, not absent).
    state: Result<DeviceState, Unknown>,
}

/// The devices of each device resource the pod lists, as the node publishes
/// them; a resource the node does not publish (or not for every NUMA node)
/// is unknown for that resource alone, so that the other providers can
/// still refuse. More requested than the node has at all is refused.
fn device_providers(
    node: &NodeFacts,
    pod: &PodDemand,
    numas: &[NumaNodeFacts],
) -> Step<Vec<DeviceProvider>> {
    let mut providers = Vec::with_capacity(pod.devices.len());
    for (index, resource) in pod.devices.iter().enumerate() {
        let name = DeviceName::new(resource);
        let state = match node.devices.get(resource) {
            Some(counts) if counts.len() == numas.len() => {
                let state = DeviceState::new(counts.clone());
                let requested = u64::from(pod_device_request(&pod.containers, index).unwrap_or(0));
                if requested > state.total_gpus() {
                    return Err(Stop::Refuse(Refusal::Insufficient {
                        resource: Resource::Device(name),
                        requested,
                        capacity: state.total_gpus(),
                    }));
                }
                Ok(state)
            }
            _ => Err(Unknown::Missing(Fact::Devices { resource: name })),
        };
        providers.push(DeviceProvider { name, state });
    }
    Ok(providers)
}

fn cpu_options(node: &NodeFacts) -> Step<CpuOptions> {
    let cm = &node.cpu_manager;
    Ok(CpuOptions {
        full_pcpus_only: cm.full_pcpus_only.ok_or(Fact::FullPcpusOnly)?,
        distribute_cpus_across_numa: cm
            .distribute_cpus_across_numa
            .ok_or(Fact::DistributeCpusAcrossNuma)?,
        align_by_socket: cm.align_by_socket.ok_or(Fact::AlignBySocket)?,
    })
}

fn evaluate(
    node: &NodeFacts,
    pod: &PodDemand,
    units: &mut Vec<UnitReport>,
    remaining: &mut Remaining,
) -> Step<bool> {
    startup(node)?;
    let pinned = pod.guaranteed && !pod.pod_level_resources;
    let wants_gpus = pod.containers.iter().any(|c| c.gpus.is_some());
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
    let cpu_static = wants_cpus
        && node.cpu_manager.policy.ok_or(Fact::CpuManagerPolicy)? == CpuManagerPolicy::Static;
    let memory_static = wants_memory
        && node.memory_manager.ok_or(Fact::MemoryManagerPolicy)? == MemoryManagerPolicy::Static;
    let wants_devices = !pod.devices.is_empty();
    if !(wants_gpus || wants_devices || cpu_static || memory_static) {
        // No provider gives a hint and no manager pins anything.
        return Ok(true);
    }
    if memory_static {
        if let Some(i) = pod.containers.iter().position(|c| c.memory_bytes == 0) {
            return Err(InputError::GuaranteedWithoutMemory { container: i }.into());
        }
    }
    let policy = node
        .topology_manager
        .policy
        .ok_or(Fact::TopologyManagerPolicy)?;
    let numas = numa_nodes(node)?;
    if numas.is_empty() {
        return Err(InputError::NoNumaNodes.into());
    }
    if numas.len() > MAX_NUMA_NODES {
        return Err(Unknown::TooManyNumaNodes {
            numa_nodes: numas.len(),
        }
        .into());
    }
    let gpu = if wants_gpus {
        let mut total = Vec::with_capacity(numas.len());
        for (numa, n) in numas.iter().enumerate() {
            total.push(n.gpus.ok_or(Fact::Gpus { numa })?);
        }
        let state = GpuState::new(total);
        let requested = u64::from(pod_gpu_request(&pod.containers).unwrap_or(0));
        if requested > state.total_gpus() {
            return Err(Stop::Refuse(Refusal::Insufficient {
                resource: Resource::Gpu,
                requested,
                capacity: state.total_gpus(),
            }));
        }
        Some(state)
    } else {
        None
    };
    let devices = device_providers(node, pod, numas)?;
    let cpu = if cpu_static {
        let options = cpu_options(node)?;
        match node.threads_per_core {
            Some(t) => CpuState::new(numas, t, options)?,
            None => Err(Unknown::Missing(Fact::ThreadsPerCore)),
        }
    } else {
        Err(Unknown::Missing(Fact::CpuManagerPolicy))
    };
    let memory = if memory_static {
        MemoryState::new(numas)?
    } else {
        Err(Unknown::Missing(Fact::MemoryManagerPolicy))
    };
    let distances: Option<Vec<Vec<u32>>> = numas.iter().map(|n| n.distances.clone()).collect();
    let mut admitter = Admitter {
        pod,
        policy,
        numa: NumaInfo {
            nodes: numas.len(),
            distances,
        },
        prefer_closest: node.topology_manager.prefer_closest_numa_nodes,
        first_without_distances: numas
            .iter()
            .position(|n| n.distances.is_none())
            .unwrap_or(0),
        cpu_static,
        memory_static,
        gpu,
        devices,
        cpu,
        memory,
    };
    let aligned = if policy == TopologyManagerPolicy::None {
        admitter.admit_without_topology()?
    } else {
        let scope = if pod.containers.len() > 1 {
            node.topology_manager
                .scope
                .ok_or(Fact::TopologyManagerScope)?
        } else {
            TopologyManagerScope::Container
        };
        match scope {
            TopologyManagerScope::Pod => admitter.admit_pod(units)?,
            TopologyManagerScope::Container => admitter.admit_containers(units)?,
        }
    };
    *remaining = admitter.remaining();
    Ok(aligned)
}

impl Admitter<'_> {
    fn remaining(&self) -> Remaining {
        Remaining {
            gpus: self
                .gpu
                .as_ref()
                .filter(|g| g.split.is_ok())
                .map(|g| g.free.clone()),
            cpus: self.cpu.as_ref().ok().and_then(CpuState::free_per_numa),
            memory: self.memory.as_ref().ok().map(MemoryState::free_per_numa),
        }
    }

    fn container_demand(&self, c: &ContainerDemand) -> UnitDemand {
        UnitDemand {
            gpus: c.gpus,
            devices: (0..self.devices.len()).map(|i| c.device(i)).collect(),
            cpus: if self.cpu_static {
                guaranteed_cpus(self.pod.guaranteed, c.cpu_millis)
            } else {
                0
            },
            memory: if self.memory_static {
                container_request(c)
            } else {
                [0; 3]
            },
        }
    }

    fn pod_demand(&self) -> UnitDemand {
        let containers = &self.pod.containers;
        UnitDemand {
            gpus: pod_gpu_request(containers),
            devices: (0..self.devices.len())
                .map(|i| pod_device_request(containers, i))
                .collect(),
            cpus: if self.cpu_static {
                let requests = containers.iter().map(|c| {
                    (
                        c.kind,
                        u64::from(guaranteed_cpus(self.pod.guaranteed, c.cpu_millis)),
                    )
                });
                u32::try_from(super::pod_effective(requests)).unwrap_or(u32::MAX)
            } else {
                0
            },
            memory: if self.memory_static {
                pod_request(containers)
            } else {
                [0; 3]
            },
        }
    }

    /// Whether the unit has anything the kubelet aligns.
    fn alignable(&self, demand: &UnitDemand) -> bool {
        demand.gpus.unwrap_or(0) > 0
            || demand.devices.iter().any(|d| d.unwrap_or(0) > 0)
            || demand.cpus > 0
            || demand.memory != [0; 3]
    }

    /// The providers' hints for a unit: the Device, CPU and Memory Managers'.
    fn hints(
        &self,
        demand: &UnitDemand,
        container: Option<usize>,
    ) -> (Vec<Result<ProviderHints, Unknown>>, Vec<ResourceReport>) {
        let with_reusable = container.is_some();
        let mut providers = Vec::with_capacity(3);
        let mut reports = Vec::new();
        // Device Manager: one hint list per device resource the unit lists
        // (`GetTopologyHints` answers a map by resource, and the Topology
        // Manager's `filterProvidersHints` takes each as its own list).
        providers.push(match (demand.gpus, &self.gpu) {
            (Some(gpus), Some(state)) => match gpu_hints(state, gpus, with_reusable) {
                Ok(Some((hints, report))) => {
                    reports.push(ResourceReport {
                        resource: Resource::Gpu,
                        request: u64::from(gpus),
                        hints: report,
                    });
                    Ok(vec![hints])
                }
                Ok(None) => Ok(Vec::new()),
                Err(u) => Err(with_container(u, container)),
            },
            _ => Ok(Vec::new()),
        });
        for (provider, request) in self.devices.iter().zip(&demand.devices) {
            let Some(request) = *request else { continue };
            providers.push(match &provider.state {
                Ok(state) => match gpu_hints(state, request, with_reusable) {
                    Ok(Some((hints, report))) => {
                        reports.push(ResourceReport {
                            resource: Resource::Device(provider.name),
                            request: u64::from(request),
                            hints: report,
                        });
                        Ok(vec![hints])
                    }
                    Ok(None) => Ok(Vec::new()),
                    Err(u) => Err(with_container(u, container)),
                },
                Err(u) => Err(*u),
            });
        }
        // CPU Manager.
        providers.push(if demand.cpus == 0 {
            Ok(Vec::new())
        } else {
            match &self.cpu {
                Ok(state) => match state.hints(demand.cpus, container) {
                    Ok((hints, report)) => {
                        reports.push(ResourceReport {
                            resource: Resource::Cpu,
                            request: u64::from(demand.cpus),
                            hints: report,
                        });
                        Ok(vec![hints])
                    }
                    Err(u) => Err(u),
                },
                Err(u) => Err(*u),
            }
        });
        // Memory Manager.
        providers.push(if demand.memory == [0; 3] {
            Ok(Vec::new())
        } else {
            match &self.memory {
                Ok(state) => {
                    let (lists, hint_reports) = memory_hints(state, &demand.memory);
                    let requested = (0..3).filter(|&i| demand.memory[i] > 0);
                    for (i, report) in requested.zip(hint_reports) {
                        reports.push(ResourceReport {
                            resource: MEMORY_RESOURCES[i],
                            request: demand.memory[i],
                            hints: report,
                        });
                    }
                    Ok(lists)
                }
                Err(u) => Err(*u),
            }
        });
        (providers, reports)
    }

    /// The policy's merge; with `prefer-closest-numa-nodes` unknown both
    /// orders are tried. The second value: why the chosen mask is not known
    /// among masks of its size (the count and preference always are).
    fn merge(&self, providers: &[ProviderHints]) -> Step<(PolicyMerge, Option<Unknown>)> {
        let run = |closest| {
            policy_merge(self.policy, &self.numa, closest, providers)
                .map_err(|_| Stop::Unknown(Unknown::MergeTooLarge))
        };
        let uses_closest = matches!(
            self.policy,
            TopologyManagerPolicy::BestEffort | TopologyManagerPolicy::Restricted
        );
        if !uses_closest {
            return Ok((run(false)?, None));
        }
        match self.prefer_closest {
            Some(false) => Ok((run(false)?, None)),
            Some(true) => {
                let merged = run(true)?;
                let why = merged
                    .needs_distances
                    .then_some(Unknown::Missing(Fact::Distances {
                        numa: self.first_without_distances,
                    }));
                Ok((merged, why))
            }
            None => {
                let narrowest = run(false)?;
                let closest = run(true)?;
                let same = narrowest.hint == closest.hint && !closest.needs_distances;
                Ok((
                    narrowest,
                    (!same).then_some(Unknown::Missing(Fact::PreferClosestNumaNodes)),
                ))
            }
        }
    }

    /// Merges a unit's hints and admits it or not. Returns the hint and why
    /// its exact mask is unknown, if it is.
    fn merge_unit(
        &self,
        demand: &UnitDemand,
        container: Option<usize>,
        units: &mut Vec<UnitReport>,
    ) -> Step<(TopologyHint, Option<Unknown>)> {
        let (providers, resources) = self.hints(demand, container);
        let mut known = Vec::with_capacity(providers.len());
        let mut unknown = None;
        for provider in providers {
            match provider {
                Ok(hints) => known.push(hints),
                Err(u) => {
                    unknown.get_or_insert(u);
                }
            }
        }
        let (merged, ambiguity) = self.merge(&known)?;
        let mask = merged.hint.mask.unwrap_or(self.numa.default_affinity());
        let aligned = !self.alignable(demand) || (merged.hint.preferred && mask.count() == 1);
        if let Some(u) = unknown {
            // More providers only remove preferred hints: a refusal stands.
            let strict = self.policy != TopologyManagerPolicy::BestEffort;
            if !strict || merged.hint.preferred {
                return Err(Stop::Unknown(u));
            }
        }
        units.push(UnitReport {
            container,
            resources,
            hint: Some(merged.hint),
            aligned,
        });
        if !merged.admit {
            return Err(Stop::Refuse(Refusal::TopologyAffinity { container }));
        }
        Ok((merged.hint, ambiguity))
    }

    /// The three managers' `Allocate` for container `i` under `hint`.
    fn allocate(&mut self, i: usize, hint: TopologyHint, ambiguity: Option<Unknown>) -> Step<()> {
        let c = self.pod.containers.get(i).cloned().unwrap_or_default();
        let demand = self.container_demand(&c);
        let mask = hint.mask;
        if let (Some(gpus), Some(state)) = (c.gpus, self.gpu.as_mut()) {
            if gpus > 0 && state.total_gpus() > 0 {
                let forced = allocate_gpus(state, c.kind, gpus, mask).map_err(|failure| {
                    Stop::Refuse(Refusal::AllocationFailed {
                        container: i,
                        resource: Resource::Gpu,
                        failure,
                    })
                })?;
                let why = ambiguity.or((!forced).then_some(Unknown::Indeterminate(
                    Indeterminate::GpuPick { container: i },
                )));
                if let (Some(why), Ok(())) = (why, state.split) {
                    state.split = Err(why);
                }
            }
        }
        // The Device Manager allocates every device resource of the
        // container before the CPU Manager runs.
        self.allocate_devices(i, &c, mask, ambiguity)?;
        if demand.cpus > 0 {
            let state = self.cpu.as_mut().map_err(|u| Stop::Unknown(*u))?;
            state
                .allocate_container(i, c.kind, demand.cpus, mask)
                .map_err(|e| cpu_stop(e, i))?;
            if let Some(why) = ambiguity {
                state.forget_split(why);
            }
        }
        if demand.memory != [0; 3] {
            if let Some(why) = ambiguity {
                return Err(Stop::Unknown(why));
            }
            let state = self.memory.as_mut().map_err(|u| Stop::Unknown(*u))?;
            state
                .allocate(c.kind, &demand.memory, hint)
                .map_err(|failure| memory_stop(failure, i))?;
        }
        Ok(())
    }

    /// `allocateContainerResources` for each device resource besides the
    /// GPUs: `devicesToAllocate` per resource under the same hint.
    fn allocate_devices(
        &mut self,
        i: usize,
        c: &ContainerDemand,
        mask: Option<super::mask::NumaMask>,
        ambiguity: Option<Unknown>,
    ) -> Step<()> {
        for (index, provider) in self.devices.iter_mut().enumerate() {
            let needed = c.device(index).unwrap_or(0);
            if needed == 0 {
                continue;
            }
            let state = provider.state.as_mut().map_err(|u| Stop::Unknown(*u))?;
            if state.total_gpus() == 0 {
                continue;
            }
            let forced = allocate_gpus(state, c.kind, needed, mask).map_err(|failure| {
                Stop::Refuse(Refusal::AllocationFailed {
                    container: i,
                    resource: Resource::Device(provider.name),
                    failure,
                })
            })?;
            let why = ambiguity.or((!forced).then_some(Unknown::Indeterminate(
                Indeterminate::DevicePick {
                    container: i,
                    resource: provider.name,
                },
            )));
            if let (Some(why), Ok(())) = (why, state.split) {
                state.split = Err(why);
            }
        }
        Ok(())
    }

    fn admit_pod(&mut self, units: &mut Vec<UnitReport>) -> Step<bool> {
        let demand = self.pod_demand();
        let (hint, ambiguity) = self.merge_unit(&demand, None, units)?;
        for i in 0..self.pod.containers.len() {
            self.allocate(i, hint, ambiguity)?;
        }
        Ok(units.iter().all(|u| u.aligned))
    }

    fn admit_containers(&mut self, units: &mut Vec<UnitReport>) -> Step<bool> {
        for (i, c) in self.pod.containers.iter().enumerate() {
            let demand = self.container_demand(c);
            let (hint, ambiguity) = self.merge_unit(&demand, Some(i), units)?;
            self.allocate(i, hint, ambiguity)?;
        }
        Ok(units.iter().all(|u| u.aligned))
    }

    /// `admitPolicyNone`: every `Allocate` with an empty hint; only a
    /// one-NUMA-node machine (or a pod with nothing to align) is aligned.
    fn admit_without_topology(&mut self) -> Step<bool> {
        let mut anything = false;
        for i in 0..self.pod.containers.len() {
            let c = self.pod.containers.get(i).cloned().unwrap_or_default();
            anything |= self.alignable(&self.container_demand(&c));
            self.allocate(i, TopologyHint::any(false), None)?;
        }
        Ok(!anything || self.numa.nodes == 1)
    }
}

fn with_container(u: Unknown, container: Option<usize>) -> Unknown {
    match (u, container) {
        (Unknown::Indeterminate(Indeterminate::GpuPick { .. }), Some(c)) => {
            Unknown::Indeterminate(Indeterminate::GpuPick { container: c })
        }
        (Unknown::Indeterminate(Indeterminate::DevicePick { resource, .. }), Some(c)) => {
            Unknown::Indeterminate(Indeterminate::DevicePick {
                container: c,
                resource,
            })
        }
        (other, _) => other,
    }
}

fn cpu_stop(e: CpuAllocError, container: usize) -> Stop {
    match e {
        CpuAllocError::Smt {
            requested,
            cpus_per_core,
            available_physical_cpus,
        } => Stop::Refuse(Refusal::SmtAlignment {
            container,
            requested,
            cpus_per_core,
            available_physical_cpus,
        }),
        CpuAllocError::NotEnough {
            requested,
            available,
        } => Stop::Refuse(Refusal::AllocationFailed {
            container,
            resource: Resource::Cpu,
            failure: AllocationFailure::NotEnough {
                requested: u64::from(requested),
                available: u64::from(available),
            },
        }),
        CpuAllocError::Unknown(u) => Stop::Unknown(u),
    }
}

fn memory_stop(failure: AllocationFailure, container: usize) -> Stop {
    Stop::Refuse(Refusal::AllocationFailed {
        container,
        resource: Resource::Memory,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::facts::{CpuManagerConfig, NumaNodeFacts, TopologyManagerConfig};

    fn node(policy: TopologyManagerPolicy, gpus: &[u32]) -> NodeFacts {
        NodeFacts {
            numa_nodes: Some(
                gpus.iter()
                    .map(|&g| NumaNodeFacts {
                        gpus: Some(g),
                        ..NumaNodeFacts::default()
                    })
                    .collect(),
            ),
            topology_manager: TopologyManagerConfig {
                policy: Some(policy),
                scope: Some(TopologyManagerScope::Pod),
                prefer_closest_numa_nodes: Some(false),
                max_allowable_numa_nodes: Some(8),
            },
            cpu_manager: CpuManagerConfig {
                policy: Some(CpuManagerPolicy::None),
                ..CpuManagerConfig::default()
            },
            ..NodeFacts::default()
        }
    }

    fn gpu_pod(gpus: u32) -> PodDemand {
        PodDemand {
            containers: vec![ContainerDemand {
                gpus: Some(gpus),
                cpu_millis: 500,
                ..ContainerDemand::default()
            }],
            guaranteed: false,
            pod_level_resources: false,
            devices: Vec::new(),
        }
    }

    #[test]
    fn gpus_on_one_numa_node_are_aligned() {
        let answer = admit(
            &node(TopologyManagerPolicy::SingleNumaNode, &[4, 4]),
            &gpu_pod(4),
        )
        .unwrap();
        assert_eq!(answer.verdict, Verdict::Admit { aligned: true });
    }

    #[test]
    fn more_gpus_than_one_numa_node_fail_single_numa_node() {
        // One container: scope pod and container agree, the container is named.
        let answer = admit(
            &node(TopologyManagerPolicy::SingleNumaNode, &[4, 4]),
            &gpu_pod(8),
        )
        .unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Refuse(Refusal::TopologyAffinity { container: Some(0) })
        );
    }

    #[test]
    fn more_gpus_than_the_node_are_insufficient() {
        let answer = admit(
            &node(TopologyManagerPolicy::BestEffort, &[4, 4]),
            &gpu_pod(9),
        )
        .unwrap();
        assert!(matches!(
            answer.verdict,
            Verdict::Refuse(Refusal::Insufficient {
                resource: Resource::Gpu,
                ..
            })
        ));
    }

    #[test]
    fn many_numa_nodes_stop_the_kubelet() {
        let mut n = node(TopologyManagerPolicy::BestEffort, &[1; 10]);
        n.topology_manager.max_allowable_numa_nodes = Some(8);
        let answer = admit(&n, &gpu_pod(1)).unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Refuse(Refusal::KubeletNotStarted(StartupError::TooManyNumaNodes {
                numa_nodes: 10,
                max_allowable: 8
            }))
        );
    }

    #[test]
    fn unknown_policy_is_named() {
        let mut n = node(TopologyManagerPolicy::BestEffort, &[4, 4]);
        n.topology_manager.policy = None;
        let answer = admit(&n, &gpu_pod(1)).unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Unknown(Unknown::Missing(Fact::TopologyManagerPolicy))
        );
    }

    #[test]
    fn a_pod_without_alignable_resources_needs_no_facts() {
        let pod = PodDemand {
            containers: vec![ContainerDemand {
                cpu_millis: 500,
                memory_bytes: 1 << 30,
                ..ContainerDemand::default()
            }],
            guaranteed: false,
            pod_level_resources: false,
            devices: Vec::new(),
        };
        let answer = admit(&NodeFacts::default(), &pod).unwrap();
        assert_eq!(answer.verdict, Verdict::Admit { aligned: true });
    }

    #[test]
    fn align_by_socket_with_single_numa_node_stops_the_kubelet() {
        let mut n = node(TopologyManagerPolicy::SingleNumaNode, &[4, 4]);
        n.cpu_manager.policy = Some(CpuManagerPolicy::Static);
        n.cpu_manager.align_by_socket = Some(true);
        let answer = admit(&n, &gpu_pod(1)).unwrap();
        assert_eq!(
            answer.verdict,
            Verdict::Refuse(Refusal::KubeletNotStarted(
                StartupError::AlignBySocketWithSingleNumaNode
            ))
        );
    }
}
