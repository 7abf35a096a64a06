//! The decision for one admission request: accept, mutate or reject. Pure:
//! request and settings in, decision out, so it is tested natively.

use crate::affinity::{self, AffinityRequirement};
use crate::demand::PodDemand;
use crate::nodes::{KubewardenHost, NodeLister};
use crate::placement;
use crate::qos::{self, Finding, QosPlan, Target};
use crate::settings::{Config, QosMode};
use crate::workload;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::Resource;
use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde_json::Value;

/// The admission operation the policy mutates on.
pub const CREATE: &str = "CREATE";
/// Workloads are also validated when their pod template changes.
pub const UPDATE: &str = "UPDATE";

/// What to answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Accept,
    /// Accept the object as changed here.
    Mutate(Value),
    Reject(String),
}

/// A verdict with non-fatal notes for the requesting client.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub warnings: Vec<String>,
}

impl Decision {
    pub fn accept() -> Self {
        Verdict::Accept.into()
    }

    pub fn reject(message: String) -> Self {
        Verdict::Reject(message).into()
    }
}

impl From<Verdict> for Decision {
    fn from(verdict: Verdict) -> Self {
        Decision {
            verdict,
            warnings: Vec::new(),
        }
    }
}

/// Decides on an admission request, reading the cluster view through the
/// Kubewarden host.
pub fn evaluate(request: &KubernetesAdmissionRequest, config: &Config) -> Decision {
    evaluate_with(request, config, &KubewardenHost)
}

/// Decides on an admission request, reading Nodes through `nodes`. In a
/// non-exempt namespace, Pod CREATE is mutated and workload CREATE/UPDATE is
/// validated; everything else is accepted untouched.
pub fn evaluate_with(
    request: &KubernetesAdmissionRequest,
    config: &Config,
    nodes: &dyn NodeLister,
) -> Decision {
    if !request.sub_resource.is_empty() || config.exempt_namespaces.contains(&request.namespace) {
        return Decision::accept();
    }
    let (group, kind) = (request.kind.group.as_str(), request.kind.kind.as_str());
    if (group, kind) == (Pod::GROUP, Pod::KIND) {
        return match request.operation.as_str() {
            CREATE => evaluate_pod(&request.object, config, nodes),
            _ => Decision::accept(),
        };
    }
    match (workload::find(group, kind), request.operation.as_str()) {
        (Some(workload), CREATE | UPDATE) => workload::evaluate(request, workload, config, nodes),
        _ => Decision::accept(),
    }
}

/// True when `spec.nodeName` is set: the scheduler, and so node affinity, is
/// bypassed.
pub fn is_pinned(spec: &Value) -> bool {
    spec.get("nodeName")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty())
}

/// Decides on a Pod being created.
pub fn evaluate_pod(pod: &Value, config: &Config, nodes: &dyn NodeLister) -> Decision {
    let Some(spec) = pod.get("spec").filter(|spec| spec.is_object()) else {
        return Decision::accept();
    };
    let demand = match PodDemand::from_pod_spec(spec, &config.gpu_resources) {
        Ok(demand) if demand.is_gpu_pod() => demand,
        Ok(_) => return Decision::accept(),
        Err(problem) => return Decision::reject(format!("GPU pod is malformed: {problem}")),
    };
    let topology = &config.topology;
    let pinned = is_pinned(spec);
    let mut warnings = match placement::check(&demand, pinned, config, nodes) {
        Ok(warnings) => warnings,
        Err(message) => return Decision::reject(message),
    };
    let edits = match plan_qos(spec, &demand, config) {
        Ok(edits) => edits,
        Err(message) => return Decision::reject(message),
    };
    let requirement = if pinned {
        warnings.push(
            "spec.nodeName is set, so the scheduler is bypassed: no GPU topology affinity was added"
                .to_owned(),
        );
        AffinityRequirement::default()
    } else {
        AffinityRequirement::for_demand(demand.gpus(topology.scope), topology)
    };
    let mut mutated = pod.clone();
    let Some(mutated_spec) = mutated.get_mut("spec") else {
        return Decision::accept();
    };
    let written = qos::apply(mutated_spec, &edits)
        .and_then(|()| affinity::merge(mutated_spec, &requirement, &config.label_prefix));
    if let Err(problem) = written {
        return Decision::reject(format!("GPU pod is malformed: {problem}"));
    }
    let verdict = if mutated == *pod {
        Verdict::Accept
    } else {
        Verdict::Mutate(mutated)
    };
    Decision { verdict, warnings }
}

/// The resource edits Guaranteed QoS needs, or the rejection message.
fn plan_qos(spec: &Value, demand: &PodDemand, config: &Config) -> Result<Vec<qos::Edit>, String> {
    let plan = match config.qos.mode {
        QosMode::Off => return Ok(Vec::new()),
        QosMode::Mutate | QosMode::Validate => qos::plan(spec, demand, &config.qos)?,
    };
    if !plan.problems.is_empty() {
        return Err(format!(
            "GPU pod cannot be made Guaranteed QoS: {}.",
            plan.problems.join("; ")
        ));
    }
    match config.qos.mode {
        QosMode::Validate if plan.violations().next().is_some() => {
            Err(not_guaranteed_message(&plan, config.qos.whole_cpus))
        }
        QosMode::Validate => Ok(Vec::new()),
        _ => Ok(plan.edits),
    }
}

/// `GPU pod is not Guaranteed QoS: container "a": cpu ..., memory ...; ...`
fn not_guaranteed_message(plan: &QosPlan, whole_cpus: bool) -> String {
    let mut by_target: Vec<(&Target, Vec<&str>)> = Vec::new();
    for Finding { target, reason, .. } in plan.violations() {
        match by_target.iter_mut().find(|(t, _)| *t == target) {
            Some((_, reasons)) => reasons.push(reason),
            None => by_target.push((target, vec![reason])),
        }
    }
    let listed: Vec<String> = by_target
        .iter()
        .map(|(target, reasons)| format!("{target}: {}", reasons.join(", ")))
        .collect();
    format!(
        "GPU pod is not Guaranteed QoS (qos.mode: validate): {}. Set resources.requests equal to resources.limits for cpu and memory in every container{}.",
        listed.join("; "),
        if whole_cpus {
            ", with whole CPUs in containers that use GPUs"
        } else {
            ""
        }
    )
}
