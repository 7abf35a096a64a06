//! The Topology Manager's scopes driving the hint providers and their
//! `Allocate` calls, on a node known to start and to be large enough; the
//! managers' states built from the node's facts, less what other pods hold.
//!
//! Reproduces `pkg/kubelet/cm/topologymanager/scope_pod.go` (one merge over
//! `GetPodTopologyHints`, then `Allocate` per container with the pod's
//! hint), `scope_container.go` (merge and `Allocate` container by
//! container, in `InitContainers` then `Containers` order),
//! `scope_none.go` / `scope.go` `admitPolicyNone` (no merge, `Allocate`
//! with an empty hint) and the provider order of `container_manager_linux.go`
//! (Device Manager, CPU Manager, Memory Manager; the first failing
//! `Allocate` decides).

use super::admit::{Step, Stop, DEFAULT_MAX_ALLOWABLE_NUMA_NODES};
use super::cpu::{guaranteed_cpus, CpuAllocError, CpuOptions, CpuState};
use super::device::{
    allocate_gpus, device_hints, pod_device_request, pod_gpu_request, DeviceHintRange, DeviceState,
    GpuState,
};
use super::facts::{
    numa_nodes, ContainerDemand, CountedUnit, DeviceName, Fact, InputError, NodeFacts,
    NumaNodeFacts, Occupancy, PodDemand,
};
use super::hint::{ProviderHints, TopologyHint};
use super::mask::{NumaMask, MAX_MACHINE_NUMA_NODES, MAX_NUMA_NODES};
use super::memory::{
    container_request, memory_hints, pod_request, MemoryAmounts, MemoryState, MEMORY_RESOURCES,
};
use super::merge::{policy_merge, NumaInfo, PolicyMerge};
use super::outcome::{
    AllocationFailure, Indeterminate, Refusal, Remaining, Resource, ResourceReport, UnitReport,
    Unknown,
};
use super::projection::{relevant_numa_nodes, Projection};
use super::unknowns::{pinning, Pinning};
use super::work::slow_hint_search;
use crate::labels::{TopologyManagerPolicy, TopologyManagerScope};

/// One alignment unit's demand.
#[derive(Debug, Clone)]
pub(super) struct UnitDemand {
    pub(super) gpus: Option<u32>,
    /// Per device resource of the pod ([`PodDemand::devices`]).
    pub(super) devices: Vec<Option<u32>>,
    pub(super) cpus: u32,
    pub(super) memory: MemoryAmounts,
}

/// The managers that act on this pod and the machine they act on.
pub(super) struct Admitter<'a> {
    pod: &'a PodDemand,
    policy: TopologyManagerPolicy,
    numa: NumaInfo,
    prefer_closest: Option<bool>,
    first_without_distances: usize,
    /// The NUMA nodes the Device Manager's masks range over.
    range: DeviceHintRange,
    /// The CPU Manager may pin CPUs (`static`, or its policy unknown: then
    /// `cpu` is that unknown).
    cpu_static: bool,
    /// The Memory Manager may pin memory, as `cpu_static`.
    memory_static: bool,
    gpu: Option<GpuState>,
    /// Per device resource of the pod: its devices, or why they are unknown.
    devices: Vec<DeviceProvider>,
    cpu: Result<CpuState, Unknown>,
    memory: Result<MemoryState, Unknown>,
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

fn cpu_options(node: &NodeFacts) -> Result<CpuOptions, Fact> {
    let cm = &node.cpu_manager;
    Ok(CpuOptions {
        full_pcpus_only: cm.full_pcpus_only.ok_or(Fact::FullPcpusOnly)?,
        distribute_cpus_across_numa: cm
            .distribute_cpus_across_numa
            .ok_or(Fact::DistributeCpusAcrossNuma)?,
        align_by_socket: cm.align_by_socket.ok_or(Fact::AlignBySocket)?,
    })
}

/// [`evaluate_managers`](super::unknowns::evaluate_managers) under one device-hint rule.
pub(super) fn evaluate_under(
    node: &NodeFacts,
    pod: &PodDemand,
    occupancy: Option<&Occupancy>,
    range: DeviceHintRange,
    units: &mut Vec<UnitReport>,
    remaining: &mut Remaining,
) -> Step<bool> {
    let wants_gpus = pod.containers.iter().any(|c| c.gpus.is_some());
    let Pinning {
        cpu_static,
        memory_static,
    } = pinning(node, pod);
    let may_pin_cpus = cpu_static != Some(false);
    let may_pin_memory = memory_static != Some(false);
    let wants_devices = !pod.devices.is_empty();
    if !(wants_gpus || wants_devices || may_pin_cpus || may_pin_memory) {
        // No provider gives a hint and no manager pins anything.
        return Ok(true);
    }
    if memory_static == Some(true) {
        if let Some(i) = pod.containers.iter().position(|c| c.memory_bytes == 0) {
            return Err(InputError::GuaranteedWithoutMemory { container: i }.into());
        }
    }
    let policy = node
        .topology_manager
        .policy
        .ok_or(Fact::TopologyManagerPolicy)?;
    let machine = numa_nodes(node)?;
    if machine.is_empty() {
        return Err(InputError::NoNumaNodes.into());
    }
    if machine.len() > MAX_MACHINE_NUMA_NODES {
        return Err(Unknown::TooManyNumaNodes {
            numa_nodes: machine.len(),
        }
        .into());
    }
    let rules = DemandRules {
        pod,
        devices: pod.devices.len(),
        cpu_static: may_pin_cpus,
        memory_static: may_pin_memory,
    };
    // Above 8 NUMA nodes: the kubelet's own cost first, then the NUMA
    // nodes that matter. Up to 8, the whole machine, as always.
    let projection = if machine.len() > DEFAULT_MAX_ALLOWABLE_NUMA_NODES {
        if policy != TopologyManagerPolicy::None {
            slow_hint_search(node, machine, &rules, range, policy)?;
        }
        let keep = relevant_numa_nodes(node, machine, &rules, range, policy);
        if keep.count() as usize > MAX_NUMA_NODES {
            return Err(Unknown::TooManyNumaNodes {
                numa_nodes: keep.count() as usize,
            }
            .into());
        }
        Some(Projection::new(machine.len(), keep))
    } else {
        None
    };
    let projected;
    let node = match &projection {
        Some(p) => {
            projected = p.facts(node);
            &projected
        }
        None => node,
    };
    let numas = numa_nodes(node)?;
    let gpu = if wants_gpus {
        let mut total = Vec::with_capacity(numas.len());
        for (numa, n) in numas.iter().enumerate() {
            let numa = projection.as_ref().map_or(numa, |p| p.machine_id(numa));
            total.push(n.gpus.ok_or(Fact::Gpus { numa })?);
        }
        Some(GpuState::new(total))
    } else {
        None
    };
    let devices = device_providers(node, pod, numas)?;
    let cpu = match cpu_static {
        Some(true) => match (cpu_options(node), node.threads_per_core) {
            (Ok(options), Some(t)) => CpuState::new(numas, t, options)?,
            (Err(fact), _) => Err(Unknown::Missing(fact)),
            (_, None) => Err(Unknown::Missing(Fact::ThreadsPerCore)),
        },
        _ => Err(Unknown::Missing(Fact::CpuManagerPolicy)),
    };
    let memory = match memory_static {
        Some(true) => MemoryState::new(numas)?,
        _ => Err(Unknown::Missing(Fact::MemoryManagerPolicy)),
    };
    let (mut gpu, mut devices, mut cpu, mut memory) = (gpu, devices, cpu, memory);
    if let Some(held) = occupancy {
        let machine_id = |numa: usize| projection.as_ref().map_or(numa, |p| p.machine_id(numa));
        occupy(
            held,
            numas.len(),
            machine_id,
            Holders {
                gpu: gpu.as_mut(),
                devices: &mut devices,
                cpu: cpu.as_mut().ok(),
                memory: memory.as_mut().ok(),
            },
        )?;
    }
    let distances: Option<Vec<Vec<u32>>> = numas.iter().map(|n| n.distances.clone()).collect();
    let first_without_distances = numas
        .iter()
        .position(|n| n.distances.is_none())
        .unwrap_or(0);
    let mut admitter = Admitter {
        pod,
        policy,
        numa: NumaInfo {
            nodes: numas.len(),
            distances,
            machine_nodes: machine.len(),
        },
        prefer_closest: node.topology_manager.prefer_closest_numa_nodes,
        // In the projection's ids, as every unknown until the end.
        first_without_distances,
        range,
        cpu_static: may_pin_cpus,
        memory_static: may_pin_memory,
        gpu,
        devices,
        cpu,
        memory,
    };
    let first_unit = units.len();
    let aligned = if policy == TopologyManagerPolicy::None {
        admitter.admit_without_topology()
    } else {
        let scope = if pod.containers.len() > 1 {
            node.topology_manager
                .scope
                .ok_or(Fact::TopologyManagerScope)?
        } else {
            TopologyManagerScope::Container
        };
        match scope {
            TopologyManagerScope::Pod => admitter.admit_pod(units),
            TopologyManagerScope::Container => admitter.admit_containers(units),
        }
    };
    // A placement on memory whose groups are unknown decides nothing after
    // it: what follows may differ ([`MemoryState::occupy`]).
    let placed_by_guess = admitter
        .memory
        .as_ref()
        .is_ok_and(|state| state.placed_by_guess);
    let aligned = match aligned {
        Ok(_) | Err(Stop::Refuse(_)) if placed_by_guess => Err(Stop::Unknown(
            Unknown::Indeterminate(Indeterminate::MemoryGroups),
        )),
        other => other,
    };
    if let Some(p) = &projection {
        for unit in units.iter_mut().skip(first_unit) {
            p.unit_to_machine(unit);
        }
    }
    let aligned = match &projection {
        Some(p) => aligned.map_err(|stop| match stop {
            Stop::Unknown(u) => Stop::Unknown(p.unknown_to_machine(u)),
            other => other,
        }),
        None => aligned,
    }?;
    *remaining = admitter.remaining();
    if let Some(p) = &projection {
        p.remaining_to_machine(remaining);
    }
    Ok(aligned)
}

/// The managers' states a busy node's holdings are taken from.
struct Holders<'s> {
    gpu: Option<&'s mut GpuState>,
    devices: &'s mut [DeviceProvider],
    cpu: Option<&'s mut CpuState>,
    memory: Option<&'s mut MemoryState>,
}

/// Takes what other pods hold from each manager's state. `numas` NUMA
/// nodes, `machine_id` naming each in the occupancy (which lists the
/// machine's, also where the model works on a projection). Managers that do
/// not act on the pod are left as they are.
fn occupy(
    held: &Occupancy,
    numas: usize,
    machine_id: impl Fn(usize) -> usize,
    states: Holders<'_>,
) -> Step<()> {
    let Holders {
        mut gpu,
        devices,
        mut cpu,
        mut memory,
    } = states;
    for numa in 0..numas {
        let id = machine_id(numa);
        let Some(on) = held.numa(id) else { continue };
        let exceeds = |unit| Stop::Input(InputError::OccupancyExceeds { numa: id, unit });
        if let Some(state) = gpu.as_deref_mut() {
            if !state.occupy(numa, on.gpus) {
                return Err(exceeds(CountedUnit::Gpus));
            }
        }
        for provider in devices.iter_mut() {
            let Ok(state) = provider.state.as_mut() else {
                continue;
            };
            let count = on.device(provider.name.as_str());
            if !state.occupy(numa, count) {
                let unit = CountedUnit::Devices(provider.name.as_str().to_owned());
                return Err(exceeds(unit));
            }
        }
        if let Some(state) = cpu.as_deref_mut() {
            if !state.occupy(numa, on.cpus) {
                return Err(exceeds(CountedUnit::Cpus));
            }
        }
        if let Some(state) = memory.as_deref_mut() {
            state
                .occupy(numa, &on.memory)
                .map_err(|i| exceeds(CountedUnit::Memory(i)))?;
        }
    }
    Ok(())
}

/// The rules that turn a pod's containers into alignment units' demands.
pub(super) struct DemandRules<'a> {
    pub(super) pod: &'a PodDemand,
    /// Device resources of the pod besides the GPUs.
    pub(super) devices: usize,
    /// The CPU Manager may pin CPUs (`static`, or its policy unknown).
    pub(super) cpu_static: bool,
    /// The Memory Manager may pin memory.
    pub(super) memory_static: bool,
}

impl DemandRules<'_> {
    fn container(&self, c: &ContainerDemand) -> UnitDemand {
        UnitDemand {
            gpus: c.gpus,
            devices: (0..self.devices).map(|i| c.device(i)).collect(),
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

    fn pod(&self) -> UnitDemand {
        let containers = &self.pod.containers;
        UnitDemand {
            gpus: pod_gpu_request(containers),
            devices: (0..self.devices)
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

    /// The first unit the Topology Manager merges for, the one that meets
    /// the empty node: the pod under scope `pod`, the first container under
    /// `container`; with the scope unknown, both.
    pub(super) fn first_units(
        &self,
        scope: Option<TopologyManagerScope>,
    ) -> Vec<(Option<usize>, UnitDemand)> {
        let first = self
            .pod
            .containers
            .first()
            .map(|c| (Some(0), self.container(c)));
        match scope {
            Some(TopologyManagerScope::Pod) => vec![(None, self.pod())],
            Some(TopologyManagerScope::Container) => first.into_iter().collect(),
            None => std::iter::once((None, self.pod())).chain(first).collect(),
        }
    }
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

    fn rules(&self) -> DemandRules<'_> {
        DemandRules {
            pod: self.pod,
            devices: self.devices.len(),
            cpu_static: self.cpu_static,
            memory_static: self.memory_static,
        }
    }

    fn container_demand(&self, c: &ContainerDemand) -> UnitDemand {
        self.rules().container(c)
    }

    fn pod_demand(&self) -> UnitDemand {
        self.rules().pod()
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
            (Some(gpus), Some(state)) => match device_hints(state, gpus, with_reusable, self.range)
            {
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
                Ok(state) => match device_hints(state, request, with_reusable, self.range) {
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
        // On a projection the default affinity also holds the nodes left
        // out: the report names the machine's (already in machine ids, see
        // `Projection::unit_to_machine`); `Allocate` gets the projection's.
        let projected = self.numa.machine_nodes > self.numa.nodes;
        let machine_default = merged.default_affinity || merged.hint.mask.is_none();
        let count = if machine_default {
            self.numa.machine_nodes.max(self.numa.nodes) as u32
        } else {
            mask.count()
        };
        let mut reported = merged.hint;
        if projected && merged.default_affinity && reported.mask.is_some() {
            reported.mask = Some(NumaMask::all(self.numa.machine_nodes));
        }
        let aligned = !self.alignable(demand) || (merged.hint.preferred && count == 1);
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
            hint: Some(reported),
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
        Ok(!anything || self.numa.machine_nodes.max(self.numa.nodes) == 1)
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
