//! dra-driver-cpu's CPUs beside a claim's GPUs: the request the policy adds
//! to the ResourceClaim generated for a pod, so that the container using it
//! gets its CPUs on the GPUs' NUMA node.
//!
//! The kubelet never aligns exclusive CPUs with DRA devices (its DRA manager
//! gives the Topology Manager no hint), so where the cluster runs
//! dra-driver-cpu (`kubernetes-sigs/dra-driver-cpu`) the CPUs must come
//! through the claim, under one `matchAttribute` constraint with the GPUs.
//! A template is created before any pod, so its CPU count is unknown then;
//! the claim the ResourceClaim controller generates from it for a pod
//! (annotation `resource.kubernetes.io/pod-claim-name`, owner the pod) is
//! where the count is known: the cpu request of the one container that
//! uses the claim, which dra-driver-cpu requires to mirror the claim's CPUs
//! (`docs/user/workload-requirements.md`; one CPU claim serves one
//! container). The same plan is made at the pod's admission, from its
//! template, to tell the pod's author what the claim will get.
//!
//! The request follows the driver's device mode, read off its devices:
//! grouped (one shared device per NUMA node with consumable capacity
//! `dra.cpu/cpu`: `capacity.requests`, as `hack/examples/pod_with_resource_claim_grouped_mode.yaml`)
//! or individual (a device per CPU: `count`). It is added only where it
//! cannot keep the pod off a node its claim could have had: under
//! `topology.affinity: preferred` every group of nodes that can allocate the
//! claim must still allocate it with the CPUs; under `required`, one must.

use crate::cluster::dra::{ClassSelector, DraInventory};
use crate::decide::claim::completion::{common_numa_attribute, Aligned, CannotAlign};
use crate::decide::claim::fit::{
    claim_fit, group_fit, ClaimFit, GroupFit, Nodes, Shortfall, Unknown,
};
use crate::json::write::write_string;
use crate::request::claim::{
    AllocationMode, ConstraintRule, DeviceChoice, DeviceClaim, DeviceConstraint, DeviceRequest,
};
use crate::request::pod::{containers, ContainerRef, Section};
use crate::request::quantity::Quantity;
use crate::settings::{AffinityMode, Config, QosMode};
use gpu_topology::Alignment;
use serde_json::Value;

/// The driver name of dra-driver-cpu.
pub(crate) const DRA_CPU_DRIVER: &str = "dra.cpu";
/// The consumable capacity of its grouped devices (`docs/user/device-attributes.md`).
pub(crate) const CPU_CAPACITY: &str = "dra.cpu/cpu";
/// Devices one claim may be allocated (types.go `AllocationResultsMaxSize`).
pub(crate) const MAX_CLAIM_DEVICES: u64 = 32;
/// Requests, and constraints, one claim may have (types.go
/// `DeviceRequestsMaxSize`, `DeviceConstraintsMaxSize`).
pub(crate) const MAX_CLAIM_ENTRIES: usize = 32;

/// How dra-driver-cpu publishes a node's CPUs (`--cpu-device-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMode {
    /// One shared device per NUMA node, its CPUs a consumable capacity.
    Grouped,
    /// One device per CPU.
    Individual,
}

/// The CPU request to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuRequest {
    /// Its name in the claim (unique among the claim's requests).
    pub name: String,
    pub class: String,
    pub cpus: u64,
    pub mode: CpuMode,
}

impl CpuRequest {
    /// The request as the claim's view reads it.
    pub(crate) fn device_request(&self) -> DeviceRequest {
        let (mode, capacity) = match self.mode {
            CpuMode::Grouped => (
                AllocationMode::ExactCount(1),
                vec![(CPU_CAPACITY.to_owned(), Quantity::from_units(self.cpus))],
            ),
            CpuMode::Individual => (
                AllocationMode::ExactCount(u32::try_from(self.cpus).unwrap_or(u32::MAX)),
                Vec::new(),
            ),
        };
        DeviceRequest {
            name: self.name.clone(),
            choices: vec![DeviceChoice {
                subrequest: None,
                device_class: self.class.clone(),
                mode,
                selected: false,
                capacity,
            }],
        }
    }

    /// The request as JSON, in the API's field order.
    pub(crate) fn to_json(&self) -> String {
        let mut out = String::from("{\"name\":");
        write_string(&self.name, &mut out);
        out.push_str(",\"exactly\":{\"deviceClassName\":");
        write_string(&self.class, &mut out);
        match self.mode {
            CpuMode::Grouped => {
                out.push_str(",\"capacity\":{\"requests\":{");
                write_string(CPU_CAPACITY, &mut out);
                out.push(':');
                write_string(&self.cpus.to_string(), &mut out);
                out.push_str("}}}}");
            }
            CpuMode::Individual => {
                out.push_str(&format!(",\"count\":{}}}}}", self.cpus));
            }
        }
        out
    }
}

/// The CPUs to add, the constraint that aligns them with the GPUs, and the
/// container that gets them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCpus {
    pub request: CpuRequest,
    pub constraint: DeviceConstraint,
    pub container: ContainerRef,
}

/// What the policy does about dra-driver-cpu's CPUs for a GPU claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuPlan {
    /// The cluster runs no dra-driver-cpu (or no aligned class selects its
    /// devices), the claim asks for its CPUs already, or the settings do not
    /// complete claims (`topology.alignment: numa`, `qos.mode: mutate` and an
    /// affinity do).
    NotApplicable,
    Add(AddCpus),
    Cannot(CannotAddCpus),
}

/// Why no CPU request is added, with what the author can change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CannotAddCpus {
    /// No container names the claim in `resources.claims`.
    NoContainer,
    /// Several do; one CPU claim serves one container.
    SharedBy(Vec<ContainerRef>),
    /// The container takes one request of the claim only.
    OneRequestOnly {
        container: ContainerRef,
        request: String,
    },
    /// The pod sets pod-level resources: which container's CPUs the claim
    /// mirrors is not the container's own request.
    PodLevelResources,
    /// The container's cpu request (as written) is not a whole number of CPUs.
    NoWholeCpus {
        container: ContainerRef,
        cpu: Option<String>,
    },
    /// Some nodes publish CPUs as groups, others one by one: one request
    /// cannot take both.
    MixedModes,
    /// One CPU device per CPU would take the claim past its 32 devices.
    TooManyDevices { devices: u64 },
    /// A request takes every matching device (`allocationMode: All`), so
    /// how many devices the claim gets is not known.
    AllocatesAll(String),
    /// The claim has as many requests or constraints as the API allows
    /// (types.go `DeviceRequestsMaxSize`, `DeviceConstraintsMaxSize`: 32).
    ClaimFull,
    /// dra-driver-cpu's shared devices publish no `dra.cpu/cpu` capacity
    /// the policy reads (a fleet summary of an older summarizer), so how a
    /// request takes N of their CPUs cannot be written.
    UnknownMode,
    /// An author's `distinctAttribute` constraint over every request would
    /// cover the CPUs too, and the fit does not count it.
    DistinctOverAll(String),
    /// No NUMA attribute every GPU and CPU device publishes.
    NoNumaAttribute(CannotAlign),
    /// No node could allocate the claim with the CPUs.
    NoFit(Vec<(Nodes, Shortfall)>),
    /// Whether a node could allocate the claim with the CPUs is not known.
    NotKnown(Unknown),
    /// Under `preferred`: nodes that could allocate the claim could not with
    /// the CPUs (no dra-driver-cpu there, or too few CPUs on the GPUs' NUMA
    /// node).
    Narrows(Vec<(Nodes, Shortfall)>),
}

/// The class of dra-driver-cpu's devices among the aligned classes: one
/// that selects every device of the driver and nothing else.
pub(crate) fn cpu_class<'i>(config: &Config, inventory: &'i DraInventory) -> Option<&'i String> {
    let runs = inventory
        .all_devices()
        .any(|device| device.driver == DRA_CPU_DRIVER);
    if !runs {
        return None;
    }
    inventory
        .classes
        .iter()
        .find(|(name, selector)| config.dra.is_aligned_class(name) && selects_every_cpu(selector))
        .map(|(name, _)| name)
}

fn selects_every_cpu(selector: &ClassSelector) -> bool {
    selector.driver.as_deref() == Some(DRA_CPU_DRIVER)
        && selector.equals.is_empty()
        && !selector.narrower
}

/// Whether the settings complete claims with CPUs at all.
pub(crate) fn completes_claims(config: &Config) -> bool {
    config.topology.affinity != AffinityMode::Off
        && config.topology.alignment == Alignment::Numa
        && config.qos.mode == QosMode::Mutate
        && config.sources.reads_cluster()
}

/// The plan for the claim of pod claim `pod_claim` (its `devices` as
/// `claim`, its aligned requests `aligned`), for the pod with PodSpec
/// `pod_spec`: pure, over the settings and the devices.
pub fn cpu_plan(
    claim: &DeviceClaim,
    aligned: &Aligned,
    pod_spec: &Value,
    pod_claim: &str,
    config: &Config,
    inventory: &DraInventory,
) -> CpuPlan {
    // Without a GPU request to align with (an `All` GPU request is not
    // aligned), CPUs would be constrained to nothing.
    if !completes_claims(config) || aligned.gpu_requests.is_empty() {
        return CpuPlan::NotApplicable;
    }
    let Some(class) = cpu_class(config, inventory) else {
        return CpuPlan::NotApplicable;
    };
    let asks_cpus = claim
        .requests
        .iter()
        .flat_map(|request| request.choices.iter())
        .any(|choice| {
            inventory
                .classes
                .get(&choice.device_class)
                .is_some_and(|selector| selector.driver.as_deref() == Some(DRA_CPU_DRIVER))
        });
    if asks_cpus {
        return CpuPlan::NotApplicable;
    }
    match plan_cpus(
        claim, aligned, pod_spec, pod_claim, class, config, inventory,
    ) {
        Ok(add) => CpuPlan::Add(add),
        Err(cannot) => CpuPlan::Cannot(cannot),
    }
}

fn plan_cpus(
    claim: &DeviceClaim,
    aligned: &Aligned,
    pod_spec: &Value,
    pod_claim: &str,
    class: &str,
    config: &Config,
    inventory: &DraInventory,
) -> Result<AddCpus, CannotAddCpus> {
    let (container, cpus) = claim_container(pod_spec, pod_claim)?;
    let mode = cpu_mode(inventory)?;
    if claim.requests.len() >= MAX_CLAIM_ENTRIES || claim.constraints.len() >= MAX_CLAIM_ENTRIES {
        return Err(CannotAddCpus::ClaimFull);
    }
    // A constraint without `requests` covers every request, the CPUs too:
    // the fit counts matchAttribute ones, not distinctAttribute ones.
    if let Some(attribute) = claim.constraints.iter().find_map(|c| match &c.rule {
        ConstraintRule::DistinctAttribute(name) if c.requests.is_empty() => Some(name),
        _ => None,
    }) {
        return Err(CannotAddCpus::DistinctOverAll(attribute.clone()));
    }
    // The most devices the claim can get: the largest choice of each request.
    let mut devices: u64 = match mode {
        CpuMode::Grouped => 1,
        CpuMode::Individual => cpus,
    };
    for request in &claim.requests {
        let mut most = 0u64;
        for choice in &request.choices {
            match choice.mode {
                AllocationMode::ExactCount(count) => most = most.max(u64::from(count)),
                AllocationMode::All => {
                    return Err(CannotAddCpus::AllocatesAll(request.name.clone()))
                }
            }
        }
        devices = devices.saturating_add(most);
    }
    if devices > MAX_CLAIM_DEVICES {
        return Err(CannotAddCpus::TooManyDevices { devices });
    }
    let request = CpuRequest {
        name: request_name(claim),
        class: class.to_owned(),
        cpus,
        mode,
    };
    let mut classes = aligned.classes.clone();
    classes.insert(class.to_owned());
    let attribute =
        common_numa_attribute(&classes, inventory).map_err(CannotAddCpus::NoNumaAttribute)?;
    let mut requests = aligned.requests.clone();
    requests.push(request.name.clone());
    let constraint = DeviceConstraint {
        requests,
        rule: ConstraintRule::MatchAttribute(attribute),
    };
    let mut completed = claim.clone();
    completed.requests.push(request.device_request());
    completed.constraints.push(constraint.clone());
    match claim_fit(&completed, inventory) {
        ClaimFit::Fits => {}
        ClaimFit::NoFit(groups) => return Err(CannotAddCpus::NoFit(groups)),
        ClaimFit::Unknown(why) => return Err(CannotAddCpus::NotKnown(why)),
        ClaimFit::NoDevices(_) => {
            return Err(CannotAddCpus::NotKnown(Unknown::UnreadClass(
                class.to_owned(),
            )))
        }
    }
    if config.topology.affinity == AffinityMode::Preferred {
        let lost: Vec<(Nodes, Shortfall)> = inventory
            .groups()
            .iter()
            .filter(|group| group_fit(claim, group, inventory) == GroupFit::Fits)
            .filter_map(|group| match group_fit(&completed, group, inventory) {
                GroupFit::Short(shortfall) => Some((Nodes::of(group), shortfall)),
                _ => None,
            })
            .collect();
        if !lost.is_empty() {
            return Err(CannotAddCpus::Narrows(lost));
        }
    }
    Ok(AddCpus {
        request,
        constraint,
        container,
    })
}

/// The one container that uses the whole pod claim, and its whole CPUs.
fn claim_container(
    pod_spec: &Value,
    pod_claim: &str,
) -> Result<(ContainerRef, u64), CannotAddCpus> {
    let Ok(all) = containers(pod_spec) else {
        return Err(CannotAddCpus::NoContainer);
    };
    let users: Vec<(&crate::request::pod::Container, Option<&str>)> = all
        .iter()
        .filter_map(|container| {
            let entry = container
                .json
                .get("resources")?
                .get("claims")?
                .as_array()?
                .iter()
                .find(|entry| entry.get("name").and_then(Value::as_str) == Some(pod_claim))?;
            Some((container, entry.get("request").and_then(Value::as_str)))
        })
        .collect();
    let (container, request) = match users.as_slice() {
        [] => return Err(CannotAddCpus::NoContainer),
        [one] => *one,
        many => {
            return Err(CannotAddCpus::SharedBy(
                many.iter().map(|(c, _)| c.id.clone()).collect(),
            ))
        }
    };
    if let Some(request) = request {
        return Err(CannotAddCpus::OneRequestOnly {
            container: container.id.clone(),
            request: request.to_owned(),
        });
    }
    if pod_spec.get("resources").is_some_and(|r| !r.is_null()) {
        return Err(CannotAddCpus::PodLevelResources);
    }
    // The API server copies limits to missing requests; the request is
    // what the scheduler counts and the claim's CPUs mirror.
    let written = container
        .resource(Section::Requests, "cpu")
        .or_else(|| container.resource(Section::Limits, "cpu"));
    let cpus = written
        .as_deref()
        .and_then(|text| Quantity::parse(text).ok())
        .filter(|cpu| cpu.is_whole() && !cpu.is_zero())
        .and_then(|cpu| cpu.whole_units());
    // `cpu: "0"` asks no CPUs, as an absent cpu does.
    let cpus_written = written
        .as_deref()
        .is_some_and(|text| Quantity::parse(text).map_or(true, |cpu| !cpu.is_zero()));
    match cpus {
        Some(cpus) => Ok((container.id.clone(), cpus)),
        None if !cpus_written => Err(CannotAddCpus::NoWholeCpus {
            container: container.id.clone(),
            cpu: None,
        }),
        None => Err(CannotAddCpus::NoWholeCpus {
            container: container.id.clone(),
            cpu: written.map(|text| text.into_owned()),
        }),
    }
}

/// The driver's device mode, from its published devices.
fn cpu_mode(inventory: &DraInventory) -> Result<CpuMode, CannotAddCpus> {
    let devices = || {
        inventory
            .all_devices()
            .filter(|device| device.driver == DRA_CPU_DRIVER)
    };
    // A shared device asked for without `capacity.requests` is taken whole
    // (`DRAConsumableCapacity`): one without a readable capacity is not
    // taken for a CPU device of individual mode.
    if devices().any(|device| device.shared && device.capacity(CPU_CAPACITY).is_none()) {
        return Err(CannotAddCpus::UnknownMode);
    }
    let shared = devices().any(|device| device.shared);
    let individual = devices().any(|device| !device.shared);
    match (shared, individual) {
        (true, false) => Ok(CpuMode::Grouped),
        (false, true) => Ok(CpuMode::Individual),
        _ => Err(CannotAddCpus::MixedModes),
    }
}

/// `cpus`, or `cpus-2`, `cpus-3`, ... when the claim has a request so named.
fn request_name(claim: &DeviceClaim) -> String {
    let taken = |name: &str| claim.requests.iter().any(|request| request.name == name);
    std::iter::once("cpus".to_owned())
        .chain((2..).map(|n| format!("cpus-{n}")))
        .find(|name| !taken(name))
        .unwrap_or_default()
}

/// The NUMA attribute a plan's constraint is on, for messages.
pub(crate) fn constraint_attribute(add: &AddCpus) -> &str {
    match &add.constraint.rule {
        ConstraintRule::MatchAttribute(name) | ConstraintRule::DistinctAttribute(name) => name,
    }
}
