//! Guaranteed QoS: the resource edits that make every container's CPU and
//! memory requests equal their limits, or why that cannot be done.
//!
//! Guaranteed is pod-wide, so every init, sidecar and app container counts
//! (ephemeral containers have no resources). Planning is pure; [`apply`]
//! writes the plan into the raw PodSpec, touching only the values it changes.

use crate::decide::demand::PodDemand;
use crate::request::pod::{containers, resources_value, Container, ContainerRef, Section};
use crate::request::quantity::Quantity;
use crate::settings::QosConfig;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The resources Guaranteed QoS is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    Cpu,
    Memory,
}

impl Resource {
    pub const ALL: [Resource; 2] = [Resource::Cpu, Resource::Memory];

    pub const fn name(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
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
    pub resource: Resource,
    pub value: String,
}

/// Why a target's resource is not Guaranteed yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub target: Target,
    pub resource: Resource,
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
                Reason::LimitsWithoutRequests { value } => {
                    format!("{name} has limits {value} but no requests")
                }
                Reason::Zero => format!("{name} of 0 counts as unset"),
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
    LimitsWithoutRequests {
        value: Quantity,
    },
    /// A request or limit of zero: Kubernetes counts only values above zero.
    Zero,
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
    fn of(resources: Option<&'a Value>, resource: Resource) -> Self {
        Current {
            requests: resources_value(resources, Section::Requests, resource.name()),
            limits: resources_value(resources, Section::Limits, resource.name()),
        }
    }
}

/// Plans Guaranteed QoS for the PodSpec `spec` with GPU demand `demand`.
pub fn plan(spec: &Value, demand: &PodDemand, qos: &QosConfig) -> Result<QosPlan, String> {
    let mut plan = QosPlan::default();
    let pod_resources = spec.get("resources").filter(|r| !r.is_null());
    if let Err(problem) = check_shape(pod_resources) {
        plan.problems.push(format!("{}: {problem}", Target::Pod));
    }
    let all = containers(spec)?;
    let mut writable = Vec::new();
    for container in &all {
        match check_shape(container.json.get("resources")) {
            Ok(()) => writable.push(container),
            Err(problem) => plan.problems.push(format!("{}: {problem}", container.id)),
        }
    }
    // Once pod-level resources set cpu or memory, Kubernetes decides QoS from
    // them alone: both must be Guaranteed there. Containers may leave them
    // unset and share the pod's budget, so they stay as they are.
    let pod_level_decides = Resource::ALL.into_iter().any(|resource| {
        let pod_level = Current::of(pod_resources, resource);
        pod_level.requests.is_some() || pod_level.limits.is_some()
    });
    for resource in Resource::ALL {
        let current = |resources| Current::of(resources, resource);
        if pod_level_decides {
            let floor = largest_container_limit(&all, resource);
            let rule = Rule {
                // Never invented: the author sets the pod's budget.
                default: Err(DefaultMissing(POD_LEVEL_BUDGET)),
                floor,
                whole: qos.whole_cpus && resource == Resource::Cpu && demand.is_gpu_pod(),
            };
            plan.add(Target::Pod, resource, &current(pod_resources), &rule);
            continue;
        }
        for container in &writable {
            let gpus = demand.gpus_of(&container.id);
            let rule = Rule {
                default: default_for(qos, resource, gpus),
                floor: None,
                whole: qos.whole_cpus && resource == Resource::Cpu && gpus > 0,
            };
            let target = Target::Container(container.id.clone());
            plan.add(
                target,
                resource,
                &current(container.json.get("resources")),
                &rule,
            );
        }
    }
    Ok(plan)
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
}

/// The setting that would have provided a default, when it is not configured.
struct DefaultMissing(&'static str);

/// [`DefaultMissing`] at the pod level, where no setting provides one.
const POD_LEVEL_BUDGET: &str = "spec.resources";

fn default_for(qos: &QosConfig, resource: Resource, gpus: u32) -> Result<Quantity, DefaultMissing> {
    let (setting, key) = match (resource, gpus > 0) {
        (Resource::Cpu, true) => (qos.cpu_per_gpu, "qos.cpuPerGpu"),
        (Resource::Memory, true) => (qos.memory_per_gpu, "qos.memoryPerGpu"),
        (Resource::Cpu, false) => (qos.sidecar_cpu, "qos.sidecarCpu"),
        (Resource::Memory, false) => (qos.sidecar_memory, "qos.sidecarMemory"),
    };
    let per_unit = setting.ok_or(DefaultMissing(key))?;
    if gpus == 0 {
        return Ok(per_unit);
    }
    per_unit
        .checked_mul(u64::from(gpus))
        .ok_or(DefaultMissing(key))
}

impl QosPlan {
    /// Plans one resource of one target.
    fn add(&mut self, target: Target, resource: Resource, current: &Current, rule: &Rule) {
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
            (Err(problem), _) | (_, Err(problem)) => return self.problems.push(problem),
        };
        if let (Some(request), Some(limit)) = (requests, limits) {
            // Invalid for the API server too (a zero limit included): the
            // author's intent is unclear, so it is not repaired.
            if request > limit {
                return self.problems.push(format!(
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
            // Reported below only when nothing else is: the API server copies
            // limits to missing requests itself.
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
                    return self.problems.push(format!(
                        "{target}: sets no {name}; Kubernetes decides QoS from pod-level resources alone once they are set: set spec.resources.limits.{name} too"
                    ));
                }
                Err(DefaultMissing(key)) => {
                    return self.problems.push(format!(
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
        if rule.whole && !value.is_whole() {
            reasons.push(Reason::NotWholeCpus { value });
            value = value.ceil_units();
        }
        if reasons.is_empty() && requests.is_none() {
            reasons.push(Reason::LimitsWithoutRequests { value });
        }
        if reasons.is_empty() {
            return;
        }
        let mut sections_written = Vec::new();
        for (section, existing) in [(Section::Requests, requests), (Section::Limits, limits)] {
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
            sections_written.push(section);
            self.edits.push(Edit {
                target: target.clone(),
                section,
                resource,
                value: written,
            });
        }
        self.findings.push(Finding {
            target,
            resource,
            reasons,
            // The API server copies limits only to requests that are absent.
            defaulted_by_kubernetes: sections_written == [Section::Requests]
                && current.requests.is_none(),
        });
    }
}

/// The largest limit any container sets for `resource`.
fn largest_container_limit(all: &[Container<'_>], resource: Resource) -> Option<Quantity> {
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
mod tests {
    use super::*;
    use crate::settings::Config;
    use rstest::rstest;
    use serde_json::json;

    fn qos() -> QosConfig {
        Config::default().qos
    }

    fn no_defaults() -> QosConfig {
        QosConfig {
            cpu_per_gpu: None,
            memory_per_gpu: None,
            sidecar_cpu: None,
            sidecar_memory: None,
            ..qos()
        }
    }

    fn gpu_resources() -> Vec<String> {
        vec!["nvidia.com/gpu".to_owned()]
    }

    /// Plans and applies QoS to a one-container pod; returns the container's
    /// resources afterwards and the plan.
    fn run(container_resources: Value, qos: &QosConfig) -> (Value, QosPlan) {
        let mut spec = json!({"containers": [{"name": "c", "resources": container_resources}]});
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        let plan = plan(&spec, &demand, qos).unwrap();
        apply(&mut spec, &plan.edits).unwrap();
        (spec["containers"][0]["resources"].clone(), plan)
    }

    #[rstest]
    #[case::requests_rise_to_limits(
        json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}}))]
    #[case::limits_only_copied_to_requests(
        json!({"limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}))]
    #[case::requests_only_copied_to_limits(
        json!({"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}, "limits": {"cpu": "2", "memory": "8Gi"}}))]
    #[case::none_set_gets_per_gpu_defaults(
        json!({"limits": {"nvidia.com/gpu": "2"}}),
        json!({"requests": {"cpu": "8", "memory": "32Gi"}, "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}}))]
    #[case::fractional_cpu_rounded_up(
        json!({"requests": {"cpu": "1500m", "memory": "4Gi"}, "limits": {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}))]
    #[case::equal_values_keep_their_spelling(
        json!({"requests": {"cpu": "2000m", "memory": "1024Mi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "2000m", "memory": "1024Mi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}))]
    #[case::zero_values_count_as_unset(
        json!({"requests": {"cpu": "0", "memory": "0"}, "limits": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}))]
    #[case::zero_request_rises_to_the_limit(
        json!({"requests": {"cpu": "0", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}),
        json!({"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}))]
    #[case::sidecar_defaults_for_a_container_without_gpus(
        json!(null),
        json!({"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "250m", "memory": "256Mi"}}))]
    #[case::fractional_cpu_kept_without_gpus(
        json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}),
        json!({"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}))]
    fn makes_a_container_guaranteed(#[case] before: Value, #[case] after: Value) {
        assert_eq!(run(before, &qos()).0, after);
    }

    #[test]
    fn whole_cpus_off_keeps_fractions() {
        let qos = QosConfig {
            whole_cpus: false,
            ..qos()
        };
        let (after, _) = run(
            json!({"limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
            &qos,
        );
        assert_eq!(after["requests"]["cpu"], "1500m");
        assert_eq!(after["limits"]["cpu"], "1500m");
    }

    #[rstest]
    #[case::guaranteed_already(
        json!({"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}), vec![])]
    #[case::limits_only_is_guaranteed_after_api_defaulting(
        json!({"limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}), vec![])]
    #[case::requests_below_limits(
        json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
        vec!["cpu requests 1 differ from limits 2"])]
    #[case::fractional_cpu(
        json!({"limits": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
        vec!["cpu 500m is not a whole number of CPUs"])]
    #[case::nothing_set(
        json!({"limits": {"nvidia.com/gpu": "1"}}),
        vec!["cpu is not set", "memory is not set"])]
    #[case::requests_without_limits(
        json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}),
        vec!["cpu has requests 1 but no limits", "memory has requests 1Gi but no limits"])]
    fn reports_what_is_not_guaranteed(#[case] resources: Value, #[case] expected: Vec<&str>) {
        let (_, plan) = run(resources, &qos());
        let reasons: Vec<String> = plan.violations().map(Finding::reason).collect();
        assert_eq!(reasons, expected);
    }

    #[rstest]
    #[case::no_gpu_default(json!({"limits": {"nvidia.com/gpu": "1"}}), no_defaults(),
        "container \"c\": sets no cpu and qos.cpuPerGpu is not configured: set resources.limits.cpu")]
    #[case::no_sidecar_default(json!({}), no_defaults(),
        "container \"c\": sets no cpu and qos.sidecarCpu is not configured")]
    #[case::requests_above_limits(json!({"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}), qos(),
        "container \"c\": cpu requests 4 are more than limits 2")]
    #[case::requests_above_a_zero_limit(json!({"requests": {"memory": "1Gi"}, "limits": {"memory": "0"}}), qos(),
        "container \"c\": memory requests 1Gi are more than limits 0")]
    #[case::garbage_quantity(json!({"limits": {"memory": "lots"}}), qos(),
        "container \"c\": resources.limits.memory \"lots\" is not a Kubernetes quantity")]
    #[case::resources_not_an_object(json!("big"), qos(), "container \"c\": resources is not an object")]
    #[case::limits_not_an_object(json!({"limits": ["cpu"]}), qos(), "container \"c\": resources.limits is not an object")]
    fn reports_what_cannot_be_fixed(
        #[case] resources: Value,
        #[case] qos: QosConfig,
        #[case] expected: &str,
    ) {
        let spec = json!({"containers": [{"name": "c", "resources": resources}]});
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        let plan = plan(&spec, &demand, &qos).unwrap();
        assert!(
            plan.problems.iter().any(|p| p.contains(expected)),
            "{:?} lacks {expected:?}",
            plan.problems
        );
    }

    #[rstest]
    #[case::limits_copied_to_requests(
        json!({"limits": {"cpu": "8", "memory": "64Gi"}}),
        json!({"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "8", "memory": "64Gi"}}))]
    #[case::requests_rise_and_round_up(
        json!({"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "3500m", "memory": "16Gi"}}),
        json!({"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}}))]
    #[case::requests_only_lifted_to_the_largest_container_limit(
        json!({"requests": {"cpu": "2", "memory": "8Gi"}}),
        json!({"requests": {"cpu": "3", "memory": "8Gi"}, "limits": {"cpu": "3", "memory": "8Gi"}}))]
    fn pod_level_resources_are_made_guaranteed(#[case] before: Value, #[case] after: Value) {
        let containers = json!([
            {"name": "a", "resources": {"limits": {"cpu": "3", "nvidia.com/gpu": "1"}}},
            {"name": "b"}
        ]);
        let mut spec = json!({"resources": before, "containers": containers});
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        let plan = plan(&spec, &demand, &qos()).unwrap();
        assert_eq!(plan.problems, Vec::<String>::new());
        apply(&mut spec, &plan.edits).unwrap();
        assert_eq!(spec["resources"], after);
        // Containers share the pod-level budget and stay as they are.
        assert_eq!(spec["containers"], containers);
    }

    /// Pod-level resources that set one of cpu and memory decide QoS alone:
    /// the other must be set there too, and no default is invented for it.
    #[rstest]
    #[case::cpu_only(json!({"limits": {"cpu": "8"}}), "pod-level spec.resources: sets no memory; Kubernetes decides QoS from pod-level resources alone once they are set: set spec.resources.limits.memory too")]
    #[case::memory_only(json!({"requests": {"memory": "8Gi"}}), "pod-level spec.resources: sets no cpu;")]
    fn pod_level_resources_must_set_cpu_and_memory(#[case] pod: Value, #[case] expected: &str) {
        let spec = json!({"resources": pod, "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}}
        ]});
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        let plan = plan(&spec, &demand, &qos()).unwrap();
        assert_eq!(plan.problems.len(), 1, "{:?}", plan.problems);
        assert!(
            plan.problems[0].starts_with(expected),
            "{:?}",
            plan.problems
        );
        // The containers are not planned: the pod level decides.
        assert!(plan.edits.iter().all(|edit| edit.target == Target::Pod));
    }
}
