//! The binding check: a `pods/binding` CREATE, the scheduler's choice of a
//! node for a pod, is refused when the kubelet of that node would refuse
//! the pod on what the node already runs. The scheduler then forgets the
//! assumed pod and queues it again (`handleBindingCycleError`,
//! `pkg/scheduler/schedule_one.go`), with a `FailedScheduling` event that
//! quotes the refusal: no pod fails with `TopologyAffinityError` and no
//! controller recreates one in a loop.
//!
//! The stages, once each, every one allowed to stop with an allowance
//! ([`NotChecked`]):
//! 1. the Binding names the pod and the node ([`Binding`]);
//! 2. the Pod is read, and whether it is a GPU pod decided from it before
//!    any other read ([`read_pod`]);
//! 3. the Node is read for its topology labels and reported kubelet
//!    version, and turned into the model's facts;
//! 4. the node's NodeResourceTopology is read into what other pods hold
//!    ([`gpu_topology::nrt`]);
//! 5. the kubelet model answers on the busy node
//!    ([`gpu_topology::kubelet::admit_on_busy_node`]).
//!
//! The [`BindingRecord`] is rendered into the answer by [`explain`].

pub mod explain;
pub mod record;

use crate::cluster::binding::{pod_request, topology_request};
use crate::cluster::host::{host_error_kind, quote_host_error, ClusterReader, HostErrorKind};
use crate::cluster::nodes::{node_request, parse_node};
use crate::decide::answer::Decision;
use crate::decide::demand::{Demand, PodDevices};
use crate::decide::model::model_pod;
use crate::decide::MAX_CONTAINERS;
use crate::request::binding::Binding;
use crate::settings::Config;
use gpu_topology::kubelet::{admit_on_busy_node, facts_from_topology};
use gpu_topology::nrt;
pub use record::{BindingOutcome, BindingRecord, Checked, NotChecked};
use serde_json::Value;

/// Decides on a Binding being created: allowed, allowed with a warning,
/// or refused with the kubelet's reason.
pub fn evaluate(
    binding: &Binding,
    config: &Config,
    cluster: &dyn ClusterReader,
    now: Option<u64>,
) -> Decision {
    explain::decision(&check(binding, config, cluster, now))
}

/// The check of `binding`, as a record.
pub fn check(
    binding: &Binding,
    config: &Config,
    cluster: &dyn ClusterReader,
    now: Option<u64>,
) -> BindingRecord {
    BindingRecord {
        pod: format!("{}/{}", binding.namespace, binding.pod),
        node: binding.node.to_string(),
        outcome: outcome(binding, config, cluster, now),
    }
}

fn outcome(
    binding: &Binding,
    config: &Config,
    cluster: &dyn ClusterReader,
    now: Option<u64>,
) -> BindingOutcome {
    let pod = match cluster.get_resource(&pod_request(&binding.namespace, &binding.pod)) {
        Ok(pod) => pod,
        Err(error) => return NotChecked::PodUnread(quote_host_error(&error)).into(),
    };
    let (spec, demand) = match read_pod(&pod, config) {
        Ok(Some(read)) => read,
        Ok(None) => return BindingOutcome::NotGpuPod,
        Err(problem) => return NotChecked::PodMalformed(problem).into(),
    };
    // Each container is a step of the model: bounded, as at admission.
    if demand.pod.containers.len() > MAX_CONTAINERS {
        let containers = demand.pod.containers.len();
        return NotChecked::TooManyContainers { containers }.into();
    }
    let node = match cluster.get_resource(&node_request(&binding.node)) {
        Ok(node) => node,
        Err(error) => return NotChecked::NodeUnread(quote_host_error(&error)).into(),
    };
    let topology = match parse_node(&node, &config.label_prefix) {
        Ok(topology) if topology.gpus.is_none() => return NotChecked::NodeUnlabeled.into(),
        Ok(topology) => topology,
        Err(problem) => return NotChecked::NodeLabels(problem).into(),
    };
    let facts = facts_from_topology(&topology, config.topology.scope);
    let model = match model_pod(&spec, &demand.pod) {
        Ok(model) => model,
        Err(problem) => return NotChecked::PodMalformed(problem).into(),
    };
    let object = match cluster.get_resource(&topology_request(&binding.node)) {
        Ok(object) => object,
        Err(error) => {
            return match host_error_kind(&error) {
                Some(HostErrorKind::NotFound) => NotChecked::TopologyMissing,
                _ => NotChecked::TopologyUnread(quote_host_error(&error)),
            }
            .into();
        }
    };
    let text = match std::str::from_utf8(&object) {
        Ok(text) => text,
        Err(error) => {
            return NotChecked::Topology(nrt::NrtProblem::Unreadable(error.to_string())).into()
        }
    };
    let reading = match nrt::read(text, &facts, gpu_resource(&demand, config)) {
        Ok(reading) => reading,
        Err(problem) => return NotChecked::Topology(problem).into(),
    };
    if let (Some(limit), Some(changed), Some(now)) =
        (config.topology_max_age, reading.changed_at, now)
    {
        let age = now.saturating_sub(changed);
        if age > limit {
            return NotChecked::TopologyStale {
                age_seconds: age,
                limit_seconds: limit,
            }
            .into();
        }
    }
    match admit_on_busy_node(&facts, &model, &reading.occupancy) {
        Ok(admission) => BindingOutcome::Checked(Box::new(Checked {
            demand,
            facts,
            occupancy: reading.occupancy,
            admission,
        })),
        Err(error) => NotChecked::ModelInput(error).into(),
    }
}

impl From<NotChecked> for BindingOutcome {
    fn from(why: NotChecked) -> Self {
        BindingOutcome::NotChecked(why)
    }
}

/// The bound Pod's spec and GPU demand; `Ok(None)` when it is no GPU pod:
/// it asks for no GPU, MIG slice or aligned device, and names no DRA claim.
/// A pod with claims only is checked for what the kubelet pins of it
/// (exclusive CPUs, memory): the DRA devices themselves are no Topology
/// Manager hint provider.
pub(crate) fn read_pod(pod: &[u8], config: &Config) -> Result<Option<(Value, Demand)>, String> {
    let mut pod: Value =
        serde_json::from_slice(pod).map_err(|error| format!("the Pod is not JSON: {error}"))?;
    let Some(spec) = pod.get_mut("spec").map(Value::take) else {
        return Ok(None);
    };
    let demand = PodDevices::from_pod_spec_with(&spec, &config.gpu_resources, &config.devices)?;
    let devices = demand
        .containers
        .iter()
        .any(|c| c.devices.iter().any(|d| d.count > 0));
    let claims = spec
        .get("resourceClaims")
        .and_then(Value::as_array)
        .is_some_and(|claims| !claims.is_empty());
    if !(demand.is_gpu_pod() || devices || claims) {
        return Ok(None);
    }
    Ok(Some((spec, Demand::new(demand, config.topology.scope))))
}

/// The GPU resource whose zone counts are the GPUs: the first of
/// `gpuResources` the pod asks for, else the first configured.
fn gpu_resource<'c>(demand: &Demand, config: &'c Config) -> &'c str {
    let asked = demand
        .pod
        .containers
        .iter()
        .flat_map(|c| &c.resources)
        .map(|(resource, _)| resource.as_str());
    for resource in asked {
        if let Some(configured) = config.gpu_resources.iter().find(|r| *r == resource) {
            return configured;
        }
    }
    config
        .gpu_resources
        .first()
        .map_or("nvidia.com/gpu", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::answer::Verdict;
    use crate::decide::testing::{hgx, pod};
    use gpu_topology::LabelPrefix;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::{
        GetResourceRequest, ListAllResourcesRequest,
    };
    use rstest::rstest;
    use serde_json::{json, Value};

    /// Answers the three GETs by kind; `None` answers 404.
    struct Reads {
        pod: Value,
        node: Value,
        topology: Option<Value>,
    }

    impl ClusterReader for Reads {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            Err("no list in a binding check".to_owned())
        }
        fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
            let answer = match request.kind.as_str() {
                "Pod" => Some(&self.pod),
                "Node" => Some(&self.node),
                _ => self.topology.as_ref(),
            };
            answer
                .map(|value| serde_json::to_vec(value).unwrap())
                .ok_or_else(|| "ApiError: not found: NotFound (ErrorResponse { reason: \"NotFound\", code: 404 })".to_owned())
        }
    }

    fn node(policy: &str) -> Value {
        let labels: serde_json::Map<String, Value> = hgx(policy)
            .to_labels(&LabelPrefix::default())
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        json!({"metadata": {"name": "gpu-7", "labels": labels}})
    }

    /// NFD's object for an HGX whose NUMA nodes have `gpus_free` GPUs and
    /// `cpus_free` CPUs (of 54 allocatable) available.
    fn topology(gpus_free: [u32; 2], cpus_free: [u32; 2]) -> Value {
        let zone = |id: usize| {
            json!({"name": format!("node-{id}"), "type": "Node", "resources": [
                {"name": "nvidia.com/gpu", "capacity": "4", "allocatable": "4", "available": gpus_free[id].to_string()},
                {"name": "cpu", "capacity": "56", "allocatable": if id == 0 { "54" } else { "56" }, "available": cpus_free[id].to_string()},
            ]})
        };
        json!({"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
            "metadata": {"name": "gpu-7"}, "zones": [zone(0), zone(1)]})
    }

    fn decide(reads: &Reads) -> Decision {
        let binding = Binding {
            pod: "train-0".into(),
            namespace: "ml".into(),
            node: "gpu-7".into(),
        };
        evaluate(&binding, &Config::default(), reads, Some(0))
    }

    #[rstest]
    #[case::two_free_on_each_numa_node_refuses_four(
        [2, 2],
        Some("the kubelet of gpu-7 would refuse pod ml/train-0 now: the 4 GPUs of container \"train\" need 1 NUMA node (single-numa-node), and the fewest NUMA nodes with them free are 2: TopologyAffinityError; free now: GPUs: NUMA node 0 has 2 free, NUMA node 1 has 2 free; exclusive CPUs: NUMA node 0 has 54 free, NUMA node 1 has 56 free. The scheduler queues the pod again")
    )]
    #[case::four_free_on_one_numa_node_admits([4, 0], None)]
    fn gpus_fragmented_across_numa_nodes(
        #[case] gpus_free: [u32; 2],
        #[case] refusal: Option<&str>,
    ) {
        let reads = Reads {
            pod: json!({"spec": pod(4, 16)}),
            node: node("single-numa-node"),
            topology: Some(topology(gpus_free, [54, 56])),
        };
        let decision = decide(&reads);
        match (refusal, &decision.verdict) {
            (Some(expected), Verdict::Reject(message)) => {
                assert!(message.starts_with(expected), "{message}")
            }
            (None, Verdict::Accept) => assert!(decision.warnings.is_empty()),
            (_, other) => panic!("unexpected {other:?}"),
        }
    }

    #[rstest]
    #[case::no_topology_object(None, "the node has no NodeResourceTopology")]
    #[case::zone_beyond_the_labels(
        Some(json!({"zones": [{"name": "node-5", "type": "Node", "resources": []}]})),
        "zone \"node-5\" is not among the 2 NUMA nodes"
    )]
    fn missing_or_inconsistent_occupancy_allows_with_a_warning(
        #[case] topology: Option<Value>,
        #[case] warning: &str,
    ) {
        let reads = Reads {
            pod: json!({"spec": pod(4, 16)}),
            node: node("single-numa-node"),
            topology,
        };
        let decision = decide(&reads);
        assert_eq!(decision.verdict, Verdict::Accept);
        assert!(
            decision.warnings[0].contains(warning),
            "{:?}",
            decision.warnings
        );
    }

    #[test]
    fn a_pod_past_the_container_cap_is_allowed_with_a_warning_after_one_read() {
        let containers: Vec<Value> = (0..=crate::decide::MAX_CONTAINERS)
            .map(|i| json!({"name": format!("c{i}"), "resources": {"limits": {"nvidia.com/gpu": "1"}}}))
            .collect();
        let reads = Reads {
            pod: json!({"spec": {"containers": containers}}),
            node: Value::Null,
            topology: None,
        };
        let decision = decide(&reads);
        assert_eq!(decision.verdict, Verdict::Accept);
        assert!(
            decision.warnings[0].contains("the pod has 65 containers, more than the 64"),
            "{:?}",
            decision.warnings
        );
    }

    #[test]
    fn a_pod_without_gpus_is_decided_from_the_pod_alone() {
        let reads = Reads {
            pod: json!({"spec": {"containers": [{"name": "web", "resources": {"limits": {"cpu": "1"}}}]}}),
            node: Value::Null,
            topology: None,
        };
        assert_eq!(decide(&reads), Decision::accept());
    }
}
