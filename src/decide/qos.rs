//! Guaranteed QoS: the resource edits that make every container's CPU and
//! memory requests equal their limits, or why that cannot be done.
//!
//! Guaranteed is pod-wide, so every init, sidecar and app container counts
//! (ephemeral containers have no resources). Planning is pure; [`apply`]
//! writes the plan into the raw PodSpec, touching only the values it changes.

use crate::decide::demand::PodDevices;
use crate::decide::model::pod_level_resources_set;
use crate::request::pod::{
    containers, resources_value, Container, ContainerKind, ContainerRef, Section,
};
use crate::request::quantity::Quantity;
use crate::settings::{InitContainer, QosConfig};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The compute resources whose requests must equal their limits for a pod
/// to be Guaranteed QoS (`v1.ResourceCPU`, `v1.ResourceMemory` in
/// `ComputePodQOS`), by their names in a PodSpec. Not the kubelet model's
/// `gpu_topology::kubelet::Resource`, the resources its managers align on
/// NUMA nodes, where CPUs are the exclusive ones and memory is split by
/// NUMA node and page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ComputeResource {
    Cpu,
    Memory,
}

impl ComputeResource {
    pub const ALL: [ComputeResource; 2] = [ComputeResource::Cpu, ComputeResource::Memory];

    pub const fn name(self) -> &'static str {
        match self {
            ComputeResource::Cpu => "cpu",
            ComputeResource::Memory => "memory",
        }
    }
}

/// Whose resources an edit changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Container(ContainerRef),
    /// Pod-level `spec.resources`.
    Pod,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Container(container) => container.fmt(f),
            Target::Pod => f.write_str("pod-level spec.resources"),
        }
    }
}

/// One value to write: `<target>.resources.<section>.<resource> = value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub target: Target,
    pub section: Section,
    pub resource: ComputeResource,
    pub value: String,
}

/// Why a target's resource is not Guaranteed yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub target: Target,
    pub resource: ComputeResource,
    /// Why it is not Guaranteed, put in words only when a message needs it
    /// ([`Finding::reason`]): a mutation never shows them.
    pub reasons: Vec<Reason>,
    /// Only a request copied from the limit: the API server's own defaulting
    /// does the same, so the pod is already Guaranteed.
    pub defaulted_by_kubernetes: bool,
}

impl Finding {
    /// e.g. `cpu requests 1 differ from limits 2`.
    pub fn reason(&self) -> String {
        let name = self.resource.name();
        let words: Vec<String> = self
            .reasons
            .iter()
            .map(|reason| match reason {
                Reason::RequestsDiffer { request, limit } => {
                    format!("{name} requests {request} differ from limits {limit}")
                }
                Reason::RequestsWithoutLimits { request } => {
                    format!("{name} has requests {request} but no limits")
                }
                Reason::NotSet => format!("{name} is not set"),
                Reason::BelowContainerLimit { value, floor } => {
                    format!("{name} {value} is below a container's limits {floor}")
                }
                Reason::NotWholeCpus { value } => {
                    format!("{name} {value} is not a whole number of CPUs")
                }
                Reason::NotWholeCores { value, rounded } => {
                    format!("{name} {value} is not whole cores (rounded up to {rounded})")
                }
                Reason::LimitsWithoutRequests { value } => {
                    format!("{name} has limits {value} but no requests")
                }
                Reason::Zero => format!("{name} of 0 counts as unset"),
                Reason::RequestsDefaultToContainers { defaulted, limit } => format!(
                    "{name} has limits {limit} but no requests, which Kubernetes defaults to the containers' total {defaulted}"
                ),
            })
            .collect();
        words.join(", ")
    }
}

/// One reason a resource of a target is not Guaranteed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    RequestsDiffer {
        request: Quantity,
        limit: Quantity,
    },
    RequestsWithoutLimits {
        request: Quantity,
    },
    NotSet,
    BelowContainerLimit {
        value: Quantity,
        floor: Quantity,
    },
    NotWholeCpus {
        value: Quantity,
    },
    /// Whole CPUs the author wrote, rounded up to whole cores for the
    /// fleet's `full-pcpus-only` kubelets (`QosConfig::round_written_cpus`).
    NotWholeCores {
        value: Quantity,
        rounded: Quantity,
    },
    LimitsWithoutRequests {
        value: Quantity,
    },
    /// A request or limit of zero: Kubernetes counts only values above zero.
    Zero,
    /// Pod level: limits without requests, which the API server defaults to
    /// the containers' effective request, not to the limits.
    RequestsDefaultToContainers {
        defaulted: Quantity,
        limit: Quantity,
    },
}

/// The outcome of planning Guaranteed QoS for a pod.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosPlan {
    pub edits: Vec<Edit>,
    /// What is not Guaranteed now, one entry per target and resource edited.
    pub findings: Vec<Finding>,
    /// What cannot be fixed (no default configured, requests above limits, ...).
    pub problems: Vec<String>,
}

impl QosPlan {
    /// Findings that make the pod non-Guaranteed as admitted.
    pub fn violations(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.defaulted_by_kubernetes)
    }
}

/// A resource's current values in one `resources` object.
struct Current<'a> {
    requests: Option<Cow<'a, str>>,
    limits: Option<Cow<'a, str>>,
}

impl<'a> Current<'a> {
    fn of(resources: Option<&'a Value>, resource: ComputeResource) -> Self {
        Current {
            requests: resources_value(resources, Section::Requests, resource.name()),
            limits: resources_value(resources, Section::Limits, resource.name()),
        }
    }
}

/// Plans Guaranteed QoS for the PodSpec `spec` with GPU demand `demand`.
///
/// Kubernetes decides QoS from pod-level `spec.resources` alone as soon as
/// the field is present, whatever it holds (`ComputePodQOS` in
/// `pkg/apis/core/helper/qos/qos.go` and `pkg/apis/core/v1/helper/qos/qos.go`,
/// 1.34 and 1.35: `pod.Spec.Resources != nil`, with the PodLevelResources
/// gate, beta and on by default since 1.34). So `spec.resources: {}`, or one
/// with hugepages only, makes the pod BestEffort however its containers are
/// set; it is a problem here, never rewritten. Otherwise every container
/// counts (`processContainerResources`: cpu and memory limits set and equal
/// to the requests, values of 0 counting as unset).
///
/// `cpu_multiple` is what whole CPUs the policy chooses for GPU containers
/// (a default, or a fraction rounded up) are rounded up to a multiple of:
/// the threads per core of the fleet's `full-pcpus-only` kubelets, which
/// refuse other counts (`model::cpu_multiple`; 1 for none). Whole CPUs the
/// author wrote are changed only for a pod planned with
/// `qos.round_written_cpus` (`decide::rounding`: every container's
/// exclusive CPUs, which the static CPU Manager pins, GPUs or not), and a
/// fitted init container's whole budget is rounded down to that multiple
/// instead (it must not grow).
pub fn plan(
    spec: &Value,
    demand: &PodDevices,
    qos: &QosConfig,
    cpu_multiple: u64,
) -> Result<QosPlan, String> {
    let mut plan = QosPlan::default();
    let pod_resources = spec.get("resources").filter(|r| !r.is_null());
    let all = containers(spec)?;
    if let Some(resources) = pod_resources {
        match check_shape(Some(resources)) {
            Ok(()) => plan_pod_level(&mut plan, resources, &all, demand, qos),
            Err(problem) => plan.problems.push(format!("{}: {problem}", Target::Pod)),
        }
        return Ok(plan);
    }
    let mut writable = Vec::new();
    for container in &all {
        match check_shape(container.json.get("resources")) {
            Ok(()) => writable.push(container),
            Err(problem) => plan.problems.push(format!("{}: {problem}", container.id)),
        }
    }
    // Room for every edit and finding: the vectors never grow while planning.
    plan.edits
        .reserve(writable.len() * ComputeResource::ALL.len() * 2);
    plan.findings
        .reserve(writable.len() * ComputeResource::ALL.len());
    for resource in ComputeResource::ALL {
        plan_containers(&mut plan, &writable, resource, demand, qos, cpu_multiple);
    }
    Ok(plan)
}

/// Pod-level resources decide: both cpu and memory must be Guaranteed there.
/// Containers may leave them unset and share the pod's budget, so they stay
/// as they are.
fn plan_pod_level(
    plan: &mut QosPlan,
    resources: &Value,
    all: &[Container<'_>],
    demand: &PodDevices,
    qos: &QosConfig,
) {
    let set = |resource| {
        let current = Current::of(Some(resources), resource);
        current.requests.is_some() || current.limits.is_some()
    };
    if !ComputeResource::ALL.into_iter().any(set) {
        plan.problems.push(format!(
            "{}: sets neither cpu nor memory (it is empty, or holds hugepages only), but once spec.resources is present Kubernetes decides QoS from it alone, so the pod would be BestEffort: set spec.resources.limits.cpu and spec.resources.limits.memory, or remove spec.resources and set resources per container (hugepages included)",
            Target::Pod
        ));
        return;
    }
    for resource in ComputeResource::ALL {
        let rule = Rule {
            // Never invented: the author sets the pod's budget.
            default: Err(DefaultMissing(POD_LEVEL_BUDGET)),
            floor: largest_container_limit(all, resource),
            whole: qos.whole_cpus && resource == ComputeResource::Cpu && demand.is_gpu_pod(),
            // The kubelet pins no pod with pod-level resources: no SMT check.
            multiple: 1,
            round_written: false,
            requests_default: RequestsDefault::ToContainers(effective_container_request(
                all, resource,
            )),
        };
        let planned = plan_one(
            Target::Pod,
            resource,
            &Current::of(Some(resources), resource),
            &rule,
        );
        plan.push(planned);
    }
}

/// Every container is made Guaranteed for `resource`. Regular init
/// containers without GPUs that set none are planned last, from what the
/// others end with ([`init_budget`]), and written in their place.
fn plan_containers(
    plan: &mut QosPlan,
    writable: &[&Container<'_>],
    resource: ComputeResource,
    demand: &PodDevices,
    qos: &QosConfig,
    cpu_multiple: u64,
) {
    let fitted: Vec<bool> = writable
        .iter()
        .map(|container| fits_the_app(container, resource, demand, qos))
        .collect();
    let mut planned: Vec<Option<Planned>> = writable
        .iter()
        .zip(&fitted)
        .map(|(container, fitted)| {
            let gpus = demand.gpus_of(&container.id);
            let whole = qos.whole_cpus && resource == ComputeResource::Cpu && gpus > 0;
            let round_written = qos.round_written_cpus && resource == ComputeResource::Cpu;
            let rule = Rule {
                default: default_for(qos, resource, container.id.kind, gpus),
                floor: None,
                whole,
                multiple: if whole || round_written {
                    cpu_multiple
                } else {
                    1
                },
                round_written,
                requests_default: RequestsDefault::ToLimits,
            };
            (!fitted).then(|| {
                let target = Target::Container(container.id.clone());
                plan_one(target, resource, &current_of(container, resource), &rule)
            })
        })
        .collect();
    if !fitted.contains(&true) {
        return plan.extend(planned);
    }
    // The fitted ones are left out of the budget: these values stay as they are.
    let values: Vec<(ContainerKind, Option<Quantity>)> = writable
        .iter()
        .zip(&planned)
        .map(|(container, planned)| (container.id.kind, planned.as_ref().and_then(|p| p.value)))
        .collect();
    for index in (0..writable.len()).filter(|i| fitted[*i]) {
        // Another container's problem rejects the pod; nothing to fit then.
        let Some(budget) = init_budget(&values, &fitted, index) else {
            continue;
        };
        // Whole CPUs are exclusive to it: a multiple the full-pcpus-only
        // kubelets allocate, never more than the budget.
        let budget = match budget.floor_to_multiple(cpu_multiple) {
            Some(floored) if resource == ComputeResource::Cpu && !floored.is_zero() => floored,
            _ => budget,
        };
        let container = writable[index];
        let rule = Rule {
            default: Ok(budget),
            floor: None,
            whole: false,
            multiple: 1,
            round_written: false,
            requests_default: RequestsDefault::ToLimits,
        };
        let target = Target::Container(container.id.clone());
        planned[index] = Some(plan_one(
            target,
            resource,
            &current_of(container, resource),
            &rule,
        ));
    }
    plan.extend(planned);
}

fn current_of<'a>(container: &Container<'a>, resource: ComputeResource) -> Current<'a> {
    Current::of(container.json.get("resources"), resource)
}

/// True for a regular init container without GPUs that sets no `resource`
/// (0 counting as unset) when `qos.initContainer` fits it to the app.
fn fits_the_app(
    container: &Container<'_>,
    resource: ComputeResource,
    demand: &PodDevices,
    qos: &QosConfig,
) -> bool {
    if container.id.kind != ContainerKind::Init || fixed_init_value(qos, resource).is_some() {
        return false;
    }
    let unset = |text: Option<Cow<'_, str>>| {
        text.is_none_or(|text| Quantity::parse(&text).is_ok_and(|q| q.is_zero()))
    };
    let current = current_of(container, resource);
    demand.gpus_of(&container.id) == 0 && unset(current.requests) && unset(current.limits)
}

/// The fixed `qos.initContainer` value for `resource`, if configured.
fn fixed_init_value(qos: &QosConfig, resource: ComputeResource) -> Option<Quantity> {
    match (&qos.init_container, resource) {
        (InitContainer::FitApp, _) => None,
        (InitContainer::Fixed { cpu, .. }, ComputeResource::Cpu) => *cpu,
        (InitContainer::Fixed { memory, .. }, ComputeResource::Memory) => *memory,
    }
}

/// The most a regular init container (at `index`, fitted) can be given
/// without raising the pod's effective request, from the values the other
/// containers end with (`values`, in pod order: init containers, then app
/// containers; `None` for the fitted ones and those with a problem).
///
/// With `E` the effective request of the containers not fitted
/// ([`effective_request`]) and `S` the sidecars started before this init
/// container, any value up to `E - S` leaves the pod's effective request at
/// `E`: while a regular init container runs, only the sidecars before it
/// run with it. `None` when a value it needs is missing (another container
/// has a problem, and the pod is rejected).
pub(crate) fn init_budget(
    values: &[(ContainerKind, Option<Quantity>)],
    fitted: &[bool],
    index: usize,
) -> Option<Quantity> {
    let others = values
        .iter()
        .zip(fitted)
        .filter(|(_, fitted)| !**fitted)
        .map(|((kind, value), _)| value.map(|value| (*kind, value)));
    let effective = effective_of(others)?;
    let sidecars_before = values
        .iter()
        .take(index)
        .filter(|(kind, _)| *kind == ContainerKind::Sidecar)
        .try_fold(Quantity::from_units(0), |sum, (_, value)| {
            sum.checked_add(&(*value)?)
        })?;
    effective.checked_sub(&sidecars_before)
}

/// The pod's effective request from its containers' values, in pod order,
/// as the scheduler and the kubelet compute it (component-helpers
/// `resource.AggregateContainerRequests`,
/// `k8s.io/component-helpers/resource/helpers.go`): the larger of the app
/// containers plus every sidecar, and, for each regular init container,
/// itself plus the sidecars started before it. `None` on overflow.
pub(crate) fn effective_request(values: &[(ContainerKind, Quantity)]) -> Option<Quantity> {
    effective_of(values.iter().map(|value| Some(*value)))
}

/// [`effective_request`] over values that may be missing: `None` when one is.
fn effective_of(
    values: impl Iterator<Item = Option<(ContainerKind, Quantity)>>,
) -> Option<Quantity> {
    let zero = Quantity::from_units(0);
    let (mut sidecars, mut apps, mut init_peak) = (zero, zero, zero);
    for value in values {
        let (kind, value) = &value?;
        match kind {
            ContainerKind::Sidecar => {
                sidecars = sidecars.checked_add(value)?;
                init_peak = init_peak.max(sidecars);
            }
            ContainerKind::Init => init_peak = init_peak.max(value.checked_add(&sidecars)?),
            ContainerKind::App => apps = apps.checked_add(value)?,
        }
    }
    Some(init_peak.max(apps.checked_add(&sidecars)?))
}

/// The pod's effective request for `resource` from its containers, as the
/// API server defaults pod-level requests from it (`defaultPodRequests` in
/// `pkg/apis/core/v1/defaults.go`: when pod-level limits are set but not
/// requests, the requests become the containers' aggregated requests,
/// `AggregateContainerRequests`, if any container requests the resource,
/// else the pod-level limits). A container's limit stands for its missing
/// request, as the API server copies it first (`SetDefaults_Pod`). `None`
/// when no container sets the resource.
fn effective_container_request(
    all: &[Container<'_>],
    resource: ComputeResource,
) -> Option<Quantity> {
    let request = |container: &Container<'_>| {
        let current = current_of(container, resource);
        current
            .requests
            .or(current.limits)
            .and_then(|text| Quantity::parse(&text).ok())
            .filter(|q| !q.is_zero())
    };
    let values: Vec<(ContainerKind, Option<Quantity>)> =
        all.iter().map(|c| (c.id.kind, request(c))).collect();
    if values.iter().all(|(_, value)| value.is_none()) {
        return None;
    }
    let zero = Quantity::from_units(0);
    let values: Vec<(ContainerKind, Quantity)> = values
        .into_iter()
        .map(|(kind, value)| (kind, value.unwrap_or(zero)))
        .collect();
    effective_request(&values)
}

/// What Kubernetes writes into requests that are absent.
#[derive(Clone, Copy)]
enum RequestsDefault {
    /// The limit (containers: `SetDefaults_Pod`).
    ToLimits,
    /// The containers' effective request when any container sets one, else
    /// the limit (pod level: `defaultPodRequests`).
    ToContainers(Option<Quantity>),
}

/// How the target value of one resource is chosen.
struct Rule {
    /// Used when neither request nor limit is set; `Err` says what is missing.
    default: Result<Quantity, DefaultMissing>,
    /// Without a limit, the value may not go below this (pod level: the
    /// largest container limit, which the pod's limit must cover).
    floor: Option<Quantity>,
    /// Round up to whole units (CPUs).
    whole: bool,
    /// With `whole`: a value the policy chooses (a default, a fraction
    /// rounded up) is rounded up to a multiple of this.
    multiple: u64,
    /// Whole CPUs the author wrote are rounded up to `multiple` as well:
    /// the static CPU Manager pins them, and under `full-pcpus-only` only
    /// in whole cores.
    round_written: bool,
    requests_default: RequestsDefault,
}

/// The setting that would have provided a default, when it is not configured.
struct DefaultMissing(&'static str);

/// [`DefaultMissing`] at the pod level, where no setting provides one.
const POD_LEVEL_BUDGET: &str = "spec.resources";

/// The configured default for a container of `kind` with `gpus` GPUs:
/// per GPU for GPU containers, the sidecar defaults for the others (fixed
/// `qos.initContainer` values for regular init containers that have them).
fn default_for(
    qos: &QosConfig,
    resource: ComputeResource,
    kind: ContainerKind,
    gpus: u32,
) -> Result<Quantity, DefaultMissing> {
    let fixed_init = fixed_init_value(qos, resource);
    let (setting, key) = match (resource, gpus > 0, kind) {
        (ComputeResource::Cpu, true, _) => (qos.cpu_per_gpu, "qos.cpuPerGpu"),
        (ComputeResource::Memory, true, _) => (qos.memory_per_gpu, "qos.memoryPerGpu"),
        (ComputeResource::Cpu, false, ContainerKind::Init) if fixed_init.is_some() => {
            (fixed_init, "qos.initContainer.cpu")
        }
        (ComputeResource::Memory, false, ContainerKind::Init) if fixed_init.is_some() => {
            (fixed_init, "qos.initContainer.memory")
        }
        (ComputeResource::Cpu, false, _) => (qos.sidecar_cpu, "qos.sidecarCpu"),
        (ComputeResource::Memory, false, _) => (qos.sidecar_memory, "qos.sidecarMemory"),
    };
    let per_unit = setting.ok_or(DefaultMissing(key))?;
    if gpus == 0 {
        return Ok(per_unit);
    }
    per_unit
        .checked_mul(u64::from(gpus))
        .ok_or(DefaultMissing(key))
}

/// The outcome of planning one resource of one target.
struct Planned {
    /// The value requests and limits both end with; `None` on a problem.
    value: Option<Quantity>,
    /// The requests edit, then the limits edit (no allocation for these).
    edits: [Option<Edit>; 2],
    finding: Option<Finding>,
    problem: Option<String>,
}

impl Planned {
    fn problem(problem: String) -> Self {
        Planned {
            value: None,
            edits: [None, None],
            finding: None,
            problem: Some(problem),
        }
    }
}

impl QosPlan {
    fn push(&mut self, planned: Planned) {
        self.edits.extend(planned.edits.into_iter().flatten());
        self.findings.extend(planned.finding);
        self.problems.extend(planned.problem);
    }

    /// Pushes the outcomes planned, in their order.
    fn extend(&mut self, planned: Vec<Option<Planned>>) {
        for planned in planned.into_iter().flatten() {
            self.push(planned);
        }
    }
}

/// Plans one resource of one target. Pure.
fn plan_one(target: Target, resource: ComputeResource, current: &Current, rule: &Rule) -> Planned {
    let name = resource.name();
    let parse = |section: Section, text: &Option<Cow<'_, str>>| match text {
        None => Ok(None),
        Some(text) => Quantity::parse(text).map(Some).map_err(|error| {
            format!(
                "{target}: resources.{}.{name} {text:?} {error}",
                section.field()
            )
        }),
    };
    let (requests, limits) = match (
        parse(Section::Requests, &current.requests),
        parse(Section::Limits, &current.limits),
    ) {
        (Ok(requests), Ok(limits)) => (requests, limits),
        (Err(problem), _) | (_, Err(problem)) => return Planned::problem(problem),
    };
    if let (Some(request), Some(limit)) = (requests, limits) {
        // Invalid for the API server too (a zero limit included): the
        // author's intent is unclear, so it is not repaired.
        if request > limit {
            return Planned::problem(format!(
                "{target}: {name} requests {request} are more than limits {limit}; requests cannot exceed limits"
            ));
        }
    }
    let mut reasons = Vec::new();
    // Kubernetes counts only values above zero toward QoS: a zero is unset.
    let is_zero = |value: &Option<Quantity>| value.is_some_and(|q| q.is_zero());
    if is_zero(&requests) || is_zero(&limits) {
        reasons.push(Reason::Zero);
    }
    let requests = requests.filter(|q| !q.is_zero());
    let limits = limits.filter(|q| !q.is_zero());
    // The value requests and limits both get: the limit when set (requests
    // rise to it), else the request, else the configured default.
    let mut value = match (requests, limits) {
        (Some(request), Some(limit)) => {
            if request != limit {
                reasons.push(Reason::RequestsDiffer { request, limit });
            }
            limit
        }
        // Reported below only when nothing else is: the API server fills
        // in missing requests itself.
        (None, Some(limit)) => limit,
        (Some(request), None) => {
            reasons.push(Reason::RequestsWithoutLimits { request });
            request
        }
        (None, None) => match &rule.default {
            Ok(default) => {
                reasons.push(Reason::NotSet);
                *default
            }
            Err(DefaultMissing(POD_LEVEL_BUDGET)) => {
                return Planned::problem(format!(
                    "{target}: sets no {name}; Kubernetes decides QoS from pod-level resources alone once they are set: set spec.resources.limits.{name} too"
                ));
            }
            Err(DefaultMissing(key)) => {
                return Planned::problem(format!(
                    "{target}: sets no {name} and {key} is not configured: set resources.limits.{name}"
                ));
            }
        },
    };
    if let Some(floor) = rule
        .floor
        .filter(|floor| limits.is_none() && *floor > value)
    {
        reasons.push(Reason::BelowContainerLimit { value, floor });
        value = floor;
    }
    let defaulted = reasons.contains(&Reason::NotSet);
    let fractional = rule.whole && !value.is_whole();
    if fractional {
        reasons.push(Reason::NotWholeCpus { value });
        value = value.ceil_units();
    }
    if rule.whole && rule.multiple > 1 && (defaulted || fractional) {
        value = value.ceil_to_multiple(rule.multiple).unwrap_or(value);
    } else if rule.round_written && rule.multiple > 1 && value.is_whole() {
        // Fractional CPUs share the pool and need no cores.
        if let Some(rounded) = value
            .ceil_to_multiple(rule.multiple)
            .filter(|r| *r != value)
        {
            reasons.push(Reason::NotWholeCores { value, rounded });
            value = rounded;
        }
    }
    // What the API server writes into absent requests.
    let defaulted_request = match rule.requests_default {
        RequestsDefault::ToLimits => limits,
        RequestsDefault::ToContainers(containers) => containers.or(limits),
    };
    if reasons.is_empty() && requests.is_none() {
        match defaulted_request {
            Some(defaulted) if defaulted != value => {
                reasons.push(Reason::RequestsDefaultToContainers {
                    defaulted,
                    limit: value,
                })
            }
            _ => reasons.push(Reason::LimitsWithoutRequests { value }),
        }
    }
    let mut planned = Planned {
        value: Some(value),
        edits: [None, None],
        finding: None,
        problem: None,
    };
    if reasons.is_empty() {
        return planned;
    }
    let sections = [(Section::Requests, requests), (Section::Limits, limits)];
    for (slot, (section, existing)) in planned.edits.iter_mut().zip(sections) {
        if existing == Some(value) {
            continue; // already right: keep the original spelling, no patch
        }
        // Copying the other side's text keeps the user's spelling; a new
        // value is written in canonical form.
        let other = match section {
            Section::Requests => (limits, &current.limits),
            Section::Limits => (requests, &current.requests),
        };
        let written = match other {
            (Some(quantity), Some(text)) if quantity == value => text.to_string(),
            _ => value.canonical(),
        };
        *slot = Some(Edit {
            target: target.clone(),
            section,
            resource,
            value: written,
        });
    }
    let only_requests_written = matches!(planned.edits, [Some(_), None]);
    planned.finding = Some(Finding {
        target,
        resource,
        reasons,
        // The API server fills in only requests that are absent, and with
        // this value only if it is what it defaults them to.
        defaulted_by_kubernetes: only_requests_written
            && current.requests.is_none()
            && defaulted_request == Some(value),
    });
    planned
}

/// The warning for a GPU pod whose pod-level resources keep the kubelet from
/// pinning it, with the fix. In 1.34 and 1.35 the static CPU Manager
/// (`cpumanager/policy_static.go`, `staticPolicy.Allocate`) and the static
/// Memory Manager (`memorymanager/policy_static.go`, `Allocate`) skip every
/// pod for which `resourcehelper.IsPodLevelResourcesSet` holds: pod-level
/// requests or limits name cpu, memory or hugepages (the
/// PodLevelResourceManagers gate that changes this is alpha, off by
/// default, from 1.36). False when pod-level resources set none of them.
pub(crate) fn unpinned_by_pod_level_resources(spec: &Value) -> bool {
    pod_level_resources_set(spec)
}

/// The warning for a pod [`unpinned_by_pod_level_resources`].
pub(crate) const UNPINNED_BY_POD_LEVEL_RESOURCES: &str = "pod-level spec.resources is set, so kubelets running the static CPU Manager or Memory Manager do not pin this pod (Kubernetes 1.34 and 1.35): it gets no exclusive CPUs or NUMA-local memory next to its GPUs. Set cpu, memory and hugepages per container instead, and remove them from spec.resources";

/// The largest limit any container sets for `resource`.
fn largest_container_limit(all: &[Container<'_>], resource: ComputeResource) -> Option<Quantity> {
    all.iter()
        .filter_map(|c| c.resource(Section::Limits, resource.name()))
        .filter_map(|text| Quantity::parse(&text).ok())
        .max()
}

/// `resources`, `requests` and `limits` must be objects (or absent) for us to
/// write into them.
fn check_shape(resources: Option<&Value>) -> Result<(), String> {
    let Some(resources) = resources.filter(|r| !r.is_null()) else {
        return Ok(());
    };
    if !resources.is_object() {
        return Err("resources is not an object".to_owned());
    }
    for section in [Section::Requests, Section::Limits] {
        match resources.get(section.field()) {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(_) => return Err(format!("resources.{} is not an object", section.field())),
        }
    }
    Ok(())
}

/// Writes `edits` into the PodSpec `spec`, creating `resources`, `requests`
/// and `limits` objects only where missing.
pub fn apply(spec: &mut Value, edits: &[Edit]) -> Result<(), String> {
    for edit in edits {
        let holder = match &edit.target {
            Target::Pod => Some(&mut *spec),
            Target::Container(container) => spec
                .get_mut(container.kind.list_field())
                .and_then(|list| list.get_mut(container.index)),
        }
        .ok_or_else(|| format!("{}: not found in the pod spec", edit.target))?;
        let section = child_object(holder, "resources")
            .and_then(|resources| child_object(resources, edit.section.field()))
            .and_then(Value::as_object_mut)
            .ok_or_else(|| format!("{}: resources is not an object", edit.target))?;
        section.insert(
            edit.resource.name().to_owned(),
            Value::String(edit.value.clone()),
        );
    }
    Ok(())
}

/// The object at `parent[key]`, created when absent or null.
fn child_object<'a>(parent: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let parent = parent.as_object_mut()?;
    let child = parent
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()));
    if child.is_null() {
        *child = Value::Object(Map::new());
    }
    child.is_object().then_some(child)
}

#[cfg(test)]
mod tests;
