//! The pod's QoS class as Kubernetes computes it (`ComputePodQOS`,
//! `pkg/apis/core/v1/helper/qos/qos.go`, Kubernetes 1.34), read from the raw
//! PodSpec. One definition: the kubelet model asks whether the pod is
//! Guaranteed (the static CPU and Memory Managers pin only such pods), and
//! the tool's audit shows the class of a running pod that has no
//! `status.qosClass`.

use crate::request::pod::{resources_value, Container, Section};
use crate::request::quantity::Quantity;
use serde_json::Value;
use std::borrow::Cow;

/// The resources the QoS class is computed from
/// (`isSupportedQoSComputeResource`).
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// `v1.PodQOSClass`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    /// The class as `status.qosClass` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

/// The QoS class of the PodSpec `spec` whose containers (init containers
/// included) are `all`, as `ComputePodQOS` computes it:
/// - with pod-level `spec.resources` present (`PodLevelResources`), from them
///   alone, else from every container;
/// - a quantity of 0 counts as unset;
/// - requests are taken after the API server's defaulting (absent: the
///   limit, `SetDefaults_Pod`);
/// - BestEffort when nothing sets a cpu or memory request or limit;
/// - Guaranteed when every part that counts (the pod, or each container) has
///   both a cpu and a memory limit, and the summed requests equal the summed
///   limits for both;
/// - else Burstable.
///
/// A quantity that does not parse is an error naming it: the API server
/// refuses such a pod, so it never has a class.
pub fn qos_class(spec: &Value, all: &[Container<'_>]) -> Result<QosClass, String> {
    let pod_level = spec.get("resources").filter(|r| !r.is_null());
    let parts: Vec<Option<&Value>> = match pod_level {
        Some(resources) => vec![Some(resources)],
        None => all.iter().map(|c| c.json.get("resources")).collect(),
    };
    let zero = Quantity::from_units(0);
    let mut every_part_limited = true;
    let mut any_set = false;
    let mut sums_equal = true;
    for resource in QOS_RESOURCES {
        let (mut requests, mut limits) = (zero, zero);
        for resources in &parts {
            let limit = positive(resources_value(*resources, Section::Limits, resource))?;
            let request =
                positive(resources_value(*resources, Section::Requests, resource))?.or(limit);
            every_part_limited &= limit.is_some();
            any_set |= request.is_some() || limit.is_some();
            let add = |sum: Quantity, value: Option<Quantity>| {
                value.map_or(Some(sum), |v| sum.checked_add(&v))
            };
            requests = add(requests, request).ok_or("the pod's requests overflow")?;
            limits = add(limits, limit).ok_or("the pod's limits overflow")?;
        }
        sums_equal &= requests == limits;
    }
    Ok(if !any_set {
        QosClass::BestEffort
    } else if every_part_limited && sums_equal {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    })
}

/// A quantity that is set and above zero (`ComputePodQOS` skips the rest).
fn positive(text: Option<Cow<'_, str>>) -> Result<Option<Quantity>, String> {
    text.map(|text| Quantity::parse(&text).map_err(|error| format!("resources {text:?} {error}")))
        .transpose()
        .map(|q| q.filter(|q| !q.is_zero()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::pod::containers;
    use rstest::rstest;
    use serde_json::json;

    /// The cases of `qos_test.go`'s `TestComputePodQOS` that cpu and memory
    /// decide, plus the defaulting and the pod-level resources.
    #[rstest]
    #[case::every_container_limited_requests_defaulted(json!({"containers": [{"resources": {"limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}}]}), QosClass::Guaranteed)]
    #[case::init_containers_count(json!({"initContainers": [{"resources": {"limits": {"cpu": "1"}}}], "containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}), QosClass::Burstable)]
    #[case::sums_compared_not_containers(json!({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}, {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}), QosClass::Burstable)]
    #[case::nothing_set(json!({"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}), QosClass::BestEffort)]
    #[case::no_resources_at_all(json!({"containers": [{}]}), QosClass::BestEffort)]
    #[case::zero_counts_as_unset(json!({"containers": [{"resources": {"requests": {"cpu": "0"}}}]}), QosClass::BestEffort)]
    #[case::a_zero_limit_is_no_limit(json!({"containers": [{"resources": {"limits": {"cpu": "0", "memory": "1Gi"}}}]}), QosClass::Burstable)]
    #[case::a_request(json!({"containers": [{"resources": {"requests": {"memory": "1Gi"}}}]}), QosClass::Burstable)]
    #[case::an_init_container_limit(json!({"initContainers": [{"resources": {"limits": {"cpu": "1"}}}], "containers": [{}]}), QosClass::Burstable)]
    #[case::pod_level_decides_alone(json!({"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}, "containers": [{"resources": {"requests": {"cpu": "1"}}}]}), QosClass::Guaranteed)]
    #[case::pod_level_without_memory(json!({"resources": {"limits": {"cpu": "2"}}, "containers": [{}]}), QosClass::Burstable)]
    #[case::pod_level_request_below_limit(json!({"resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}, "containers": [{}]}), QosClass::Burstable)]
    #[case::pod_level_empty(json!({"resources": {}, "containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}), QosClass::BestEffort)]
    fn the_class_is_computed_as_kubernetes_does(#[case] spec: Value, #[case] class: QosClass) {
        let all = containers(&spec).unwrap();
        assert_eq!(qos_class(&spec, &all), Ok(class));
    }

    #[test]
    fn a_quantity_that_does_not_parse_is_named() {
        let spec = json!({"containers": [{"resources": {"limits": {"cpu": "two"}}}]});
        let all = containers(&spec).unwrap();
        let error = qos_class(&spec, &all).unwrap_err();
        assert!(error.contains("\"two\""), "{error}");
    }
}
