//! Workload controllers: Deployments, StatefulSets, ReplicaSets, DaemonSets,
//! Jobs and CronJobs are validated, never mutated, by their pod template's GPU
//! demand. A template no node can place is rejected at `kubectl apply` with the
//! same message its pods would get, instead of the controller failing to
//! create pods in a loop that users only find in events. Guaranteed QoS and
//! affinity are still applied to each Pod when it is created.

use crate::cluster::host::ClusterReader;
use crate::decide::record::{Explained, PodRecord};
use crate::decide::{fit, plan_pod, Decision, PodInput, QosProblems, Wanted, UPDATE};
use crate::request::AdmissionRequest;
use crate::settings::Config;
use serde_json::Value;

/// A workload kind and where its PodSpec sits (a JSON pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadKind {
    pub group: &'static str,
    pub kind: &'static str,
    /// The resource name in admission rules, e.g. `deployments`.
    pub resource: &'static str,
    pub pod_spec: &'static str,
}

const TEMPLATE: &str = "/spec/template/spec";

/// The workload kinds the policy validates (see `rules` in policy-metadata.yml).
pub const WORKLOADS: [WorkloadKind; 6] = [
    WorkloadKind {
        group: "apps",
        kind: "Deployment",
        resource: "deployments",
        pod_spec: TEMPLATE,
    },
    WorkloadKind {
        group: "apps",
        kind: "StatefulSet",
        resource: "statefulsets",
        pod_spec: TEMPLATE,
    },
    WorkloadKind {
        group: "apps",
        kind: "ReplicaSet",
        resource: "replicasets",
        pod_spec: TEMPLATE,
    },
    WorkloadKind {
        group: "apps",
        kind: "DaemonSet",
        resource: "daemonsets",
        pod_spec: TEMPLATE,
    },
    WorkloadKind {
        group: "batch",
        kind: "Job",
        resource: "jobs",
        pod_spec: TEMPLATE,
    },
    WorkloadKind {
        group: "batch",
        kind: "CronJob",
        resource: "cronjobs",
        pod_spec: "/spec/jobTemplate/spec/template/spec",
    },
];

/// The workload kind for an API group and kind, if the policy validates it.
pub fn find(group: &str, kind: &str) -> Option<&'static WorkloadKind> {
    WORKLOADS
        .iter()
        .find(|workload| workload.group == group && workload.kind == kind)
}

/// Validates a workload being created or updated: accepted untouched unless
/// its pod template is malformed or no node can place its pods. A template
/// whose pods the QoS rules would reject as written is accepted with a
/// warning: a LimitRange or another webhook may still fill in their
/// resources before they reach this policy.
pub(crate) fn evaluate<W: Wanted>(
    request: &AdmissionRequest,
    workload: &WorkloadKind,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Explained {
    // Workloads are validated only, and far rarer than Pods: read as trees.
    let object = match read(request.object_text()) {
        Ok(object) => object,
        Err(message) => return Decision::reject(message).into(),
    };
    let Some(spec) = object
        .pointer(workload.pod_spec)
        .filter(|spec| spec.is_object())
    else {
        return Decision::accept().into();
    };
    // An update that leaves the template alone (scaling, labels, finalizers)
    // is never blocked, so a broken workload can still be scaled down or deleted.
    if request.operation == UPDATE {
        let old = read(request.old_object_text()).unwrap_or_default();
        if old.pointer(workload.pod_spec) == Some(spec) {
            return Decision::accept().into();
        }
    }
    let who = describe(&request.name, &object, workload);
    let input = match PodInput::read(spec, config) {
        Ok(Some(input)) => input,
        Ok(None) => return Decision::accept().into(),
        Err(problem) => {
            return Decision::reject(format!(
                "{who}: its GPU pod template is malformed: {problem}"
            ))
            .into()
        }
    };
    // The same stages as the Pod's; the edits are made to each Pod.
    let mut planned = spec.clone();
    let fit::Look { sight, warnings } = fit::look(input.pinned_node(), config, cluster);
    let plan = plan_pod(
        spec,
        &mut planned,
        &input,
        config,
        (&sight, warnings),
        QosProblems::Warn,
    );
    let decision = match &plan.rejection {
        None => Decision {
            warnings: plan
                .notes
                .warnings(&config.label_prefix)
                .into_iter()
                .map(|w| format!("{who}: {w}"))
                .collect(),
            ..Decision::accept()
        },
        Some(rejection) => Decision::reject(format!(
            "{who}: {}",
            rejection.message(&config.label_prefix)
        )),
    };
    Explained {
        decision,
        pod: W::record(|| PodRecord::new(input.demand, plan, config)),
        dra: None,
    }
}

fn read(text: &str) -> Result<Value, String> {
    serde_json::from_slice(text.as_bytes())
        .map_err(|error| format!("the object cannot be read: {error}"))
}

/// `Deployment "llama-70b"` (or its generateName), for messages.
fn describe(name: &str, object: &Value, workload: &WorkloadKind) -> String {
    let name = Some(name).filter(|name| !name.is_empty()).or_else(|| {
        object
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
    });
    match name {
        Some(name) => format!("{} {name:?}", workload.kind),
        None => workload.kind.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::deployment("apps", "Deployment", Some(TEMPLATE))]
    #[case::cron_job("batch", "CronJob", Some("/spec/jobTemplate/spec/template/spec"))]
    #[case::job("batch", "Job", Some(TEMPLATE))]
    #[case::wrong_group("extensions", "Deployment", None)]
    #[case::pod_is_not_a_workload("", "Pod", None)]
    #[case::custom_resource("ray.io", "RayCluster", None)]
    fn finds_workload_kinds(
        #[case] group: &str,
        #[case] kind: &str,
        #[case] pod_spec: Option<&str>,
    ) {
        assert_eq!(find(group, kind).map(|w| w.pod_spec), pod_spec);
    }
}
