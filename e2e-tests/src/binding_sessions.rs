//! The binding check's sessions (`scenarios/sessions/binding-*.yml`): the
//! host's answers to the reads of one `pods/binding` CREATE, in the order
//! the policy makes them (issue #34):
//!
//! 1. the bound Pod, by name (`get_resource`, field mask `spec`): a pod
//!    that asks for no GPU is decided here, and nothing else is read;
//! 2. the target Node, by name (`get_resource`, the masks of the Node
//!    list): its labels as the fleets' nodes carry them ([`node_item`]);
//! 3. the node's NodeResourceTopology (`topology.node.k8s.io/v1alpha2`,
//!    cluster-scoped, named after the node, no mask): the object NFD's
//!    topology-updater writes for the machine ([`topology_object`]), with
//!    what other pods hold per NUMA node, or the API server's 404 where the
//!    topology-updater does not run. A policy not granted the kind is
//!    refused by the host before any exchange, so the session then ends
//!    with the Node.
//!
//! The requests are written here as kwctl records them, independently of
//! the policy's code: the scenario runner fails when the policy asks
//! otherwise (`Replay error: unexpected request`) or leaves an exchange
//! unrequested.

use crate::fleets::{
    hgx_a100, node_item, p5, Kubelet, ListAnswer, Machine, SessionFile, SummaryAnswer,
};
use crate::session::HostRequest;
use anyhow::{Context, Result};
use gpu_topology::{LabelPrefix, MemoryManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// The NodeResourceTopology API NFD's topology-updater writes.
const NRT_API_VERSION: &str = "topology.node.k8s.io/v1alpha2";
const NRT_KIND: &str = "NodeResourceTopology";
/// When the topology-updater last changed the objects (2025-11-29, the
/// fleet summaries' date).
const NRT_CHANGED_AT: &str = "2025-11-29T20:55:00Z";
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// The reads of one binding.
#[derive(Debug, Clone)]
pub struct BindingReads {
    pub pod: BoundPod,
    /// The node the scheduler chose and how the host answers for it;
    /// `None`: the Pod's answer decides (it asks for no GPU).
    pub node: Option<BoundNode>,
}

/// The bound Pod as `get_resource` answers it under the mask `spec`.
#[derive(Debug, Clone)]
pub struct BoundPod {
    pub namespace: &'static str,
    pub name: &'static str,
    /// Its spec, as the API server stores it after admission.
    pub spec: Value,
}

/// The target node: node `index` of `machine` as the fleets name it
/// (`ip-10-0-0-<index>.ec2.internal` in the cloud, `gpu-node-<index>` on
/// premises), reporting kubelet `reported_kubelet`.
#[derive(Debug, Clone)]
pub struct BoundNode {
    pub index: usize,
    pub machine: Machine,
    pub reported_kubelet: Option<&'static str>,
    pub topology: TopologyAnswer,
}

/// How the host answers the node's NodeResourceTopology.
#[derive(Debug, Clone)]
pub enum TopologyAnswer {
    /// Not asked of the cluster: the scenario does not grant the kind, and
    /// the host refuses the read before any exchange.
    NotGranted,
    /// The API server's 404: NFD's topology-updater does not run there.
    Absent,
    /// NFD's object, with what other pods hold on each NUMA node, in id
    /// order.
    Held(Vec<Held>),
}

/// What the kubelet's managers hold for other pods on one NUMA node (what
/// the topology-updater subtracts from `allocatable` to give `available`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Held {
    pub gpus: u32,
    /// Exclusive CPUs (the static CPU Manager's assignments).
    pub cpus: u32,
    /// GiB of memory the static Memory Manager pinned.
    pub memory_gib: u64,
}

impl BindingReads {
    /// The node's name, as its Node item carries it.
    pub fn node_name(&self) -> Option<String> {
        let node = self.node.as_ref()?;
        node_answer(node, &LabelPrefix::default())
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The exchanges, in the policy's order: the Pod, then (for a GPU pod)
    /// the Node and its NodeResourceTopology.
    pub fn exchanges(
        &self,
        prefix: &LabelPrefix,
    ) -> Result<Vec<(HostRequest, Result<Value, String>)>> {
        let mut out = vec![(
            pod_request(self.pod.namespace, self.pod.name),
            Ok(json!({"spec": self.pod.spec})),
        )];
        let Some(node) = &self.node else {
            return Ok(out);
        };
        let item = node_answer(node, prefix);
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .context("a node item without a name")?
            .to_owned();
        out.push((node_request(&name), Ok(item)));
        match &node.topology {
            TopologyAnswer::NotGranted => {}
            TopologyAnswer::Absent => {
                out.push((topology_request(&name), Err(topology_not_found(&name))));
            }
            TopologyAnswer::Held(held) => {
                out.push((
                    topology_request(&name),
                    Ok(topology_object(&name, &node.machine, held)?),
                ));
            }
        }
        Ok(out)
    }
}

/// The Node as `get_resource` answers it under the policy's masks.
fn node_answer(node: &BoundNode, prefix: &LabelPrefix) -> Value {
    node_item(
        node.index,
        &node.machine,
        &[],
        node.reported_kubelet,
        None,
        prefix,
    )
}

fn masks(list: &[&str]) -> Option<BTreeSet<String>> {
    Some(list.iter().map(|mask| (*mask).to_owned()).collect())
}

/// The policy's read of the bound Pod, in kwctl's terms.
pub fn pod_request(namespace: &str, name: &str) -> HostRequest {
    HostRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: name.into(),
        namespace: Some(namespace.into()),
        disable_cache: false,
        field_masks: masks(&["spec"]),
    }
}

/// The policy's read of the target Node.
pub fn node_request(name: &str) -> HostRequest {
    HostRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: name.into(),
        namespace: None,
        disable_cache: false,
        field_masks: masks(&[
            "metadata.annotations",
            "metadata.labels",
            "metadata.name",
            "status.nodeInfo.kubeletVersion",
        ]),
    }
}

/// The policy's read of the node's NodeResourceTopology: the whole object.
pub fn topology_request(name: &str) -> HostRequest {
    HostRequest::KubernetesGetResource {
        api_version: NRT_API_VERSION.into(),
        kind: NRT_KIND.into(),
        name: name.into(),
        namespace: None,
        disable_cache: false,
        field_masks: None,
    }
}

/// What the API server answers (through kube-rs) when the node has no
/// NodeResourceTopology, worded as the fleet summary's 404.
pub fn topology_not_found(name: &str) -> String {
    let resource = "noderesourcetopologies.topology.node.k8s.io";
    format!(
        "ApiError: {resource} \"{name}\" not found: NotFound (ErrorResponse {{ status: \"Failure\", \
         message: \"{resource} \\\"{name}\\\" not found\", reason: \"NotFound\", code: 404 }})"
    )
}

/// `bytes` as a Kubernetes quantity in its canonical binary form
/// (`resource.Quantity.String()` of a `BinarySI` amount): the largest
/// suffix that divides it.
fn binary_quantity(bytes: u64) -> String {
    const SUFFIXES: [(&str, u64); 3] = [("Gi", GIB), ("Mi", MIB), ("Ki", 1 << 10)];
    for (suffix, unit) in SUFFIXES {
        if bytes > 0 && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// The `topologyPolicies` value NFD still writes beside the attributes
/// (v1alpha2's deprecated list: `<Policy><Scope>Level`).
fn topology_policy_value(policy: TopologyManagerPolicy, scope: TopologyManagerScope) -> String {
    let policy = match policy {
        TopologyManagerPolicy::None => return "None".to_owned(),
        TopologyManagerPolicy::BestEffort => "BestEffort",
        TopologyManagerPolicy::Restricted => "Restricted",
        TopologyManagerPolicy::SingleNumaNode => "SingleNUMANode",
    };
    let scope = match scope {
        TopologyManagerScope::Container => "Container",
        TopologyManagerScope::Pod => "Pod",
    };
    format!("{policy}{scope}Level")
}

/// The NodeResourceTopology NFD's topology-updater writes for node `name`
/// of `machine` (`pkg/nfd-topology-updater`, `pkg/resourcemonitor`): one
/// zone per NUMA node, `node-<id>`, with its distances as costs; per
/// resource the capacity, the kubelet's allocatable (CPUs less the
/// reserved ones) and what is available once `held` is taken; the kubelet's
/// Topology Manager settings as attributes.
pub fn topology_object(name: &str, machine: &Machine, held: &[Held]) -> Result<Value> {
    let t = &machine.topology;
    let gpus = t
        .numa_gpus
        .as_deref()
        .context("a machine without numa-gpus")?;
    let cpus = t
        .numa_cpus
        .as_deref()
        .context("a machine without numa-cpus")?;
    let memory = t
        .numa_memory_mib
        .as_deref()
        .context("a machine without numa-memory-mib")?;
    let reserved = t.numa_reserved_cpus.clone().unwrap_or_default();
    let policy = t
        .topology_manager_policy
        .context("no Topology Manager policy")?;
    let scope = t
        .topology_manager_scope
        .context("no Topology Manager scope")?;
    let numas = gpus.len();
    let zones: Vec<Value> = (0..numas)
        .map(|numa| {
            let on = held.get(numa).copied().unwrap_or_default();
            let costs: Vec<Value> = (0..numas)
                .map(|other| {
                    let value = t
                        .numa_distances
                        .as_ref()
                        .and_then(|d| d.get(numa)?.get(other).copied())
                        .unwrap_or(if other == numa { 10 } else { 20 });
                    json!({"name": format!("node-{other}"), "value": value})
                })
                .collect();
            let allocatable_cpus = cpus[numa] - reserved.get(numa).copied().unwrap_or(0);
            let memory_bytes = u64::from(memory[numa]) * MIB;
            let resource = |name: &str, capacity: String, allocatable: String, available: String| {
                json!({"name": name, "capacity": capacity, "allocatable": allocatable, "available": available})
            };
            let resources = vec![
                resource(
                    "cpu",
                    cpus[numa].to_string(),
                    allocatable_cpus.to_string(),
                    (allocatable_cpus - on.cpus).to_string(),
                ),
                resource(
                    "memory",
                    binary_quantity(memory_bytes),
                    binary_quantity(memory_bytes),
                    binary_quantity(memory_bytes - on.memory_gib * GIB),
                ),
                resource(
                    "nvidia.com/gpu",
                    gpus[numa].to_string(),
                    gpus[numa].to_string(),
                    (gpus[numa] - on.gpus).to_string(),
                ),
            ];
            json!({"name": format!("node-{numa}"), "type": "Node", "costs": costs, "resources": resources})
        })
        .collect();
    Ok(json!({
        "apiVersion": NRT_API_VERSION,
        "kind": NRT_KIND,
        "metadata": {
            "name": name,
            "resourceVersion": "48213391",
            "creationTimestamp": "2025-11-02T08:14:07Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": "3f6c1c0e-6a55-4c4e-9d8e-0b8f2a7d5e11"}],
            "managedFields": [{
                "manager": "nfd-topology-updater",
                "operation": "Update",
                "apiVersion": NRT_API_VERSION,
                "time": NRT_CHANGED_AT,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:attributes": {}, "f:topologyPolicies": {}, "f:zones": {}}
            }]
        },
        "topologyPolicies": [topology_policy_value(policy, scope)],
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy.as_str()},
            {"name": "topologyManagerScope", "value": scope.as_str()},
            {"name": "nodeTopologyPodsFingerprint", "value": "pfp0v0019a4c2e7d1b3f5a68"}
        ],
        "zones": zones,
    }))
}

/// A container as the API server stores a Guaranteed one: requests equal
/// to limits, `gpus` GPUs (none: no GPU), `cpus` CPUs and `memory_gib` GiB.
pub fn container(name: &str, image: &str, gpus: Option<u32>, cpus: u32, memory_gib: u32) -> Value {
    let mut resources = json!({"cpu": cpus.to_string(), "memory": format!("{memory_gib}Gi")});
    if let Some(gpus) = gpus {
        resources["nvidia.com/gpu"] = json!(gpus.to_string());
    }
    json!({
        "name": name,
        "image": image,
        "resources": {"limits": resources, "requests": resources},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent"
    })
}

/// A pod spec as the API server stores it, with `init` and `containers`.
pub fn pod_spec(init: Vec<Value>, containers: Vec<Value>) -> Value {
    let mut spec = json!({
        "containers": containers,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority"
    });
    if !init.is_empty() {
        spec["initContainers"] = Value::Array(init);
    }
    spec
}

const CUDA_IMAGE: &str = "nvcr.io/nvidia/pytorch:25.01-py3";
/// The kubelet version the bound nodes report.
const KUBELET: Option<&str> = Some("v1.34.2");

/// A session of one binding.
fn binding_session(
    name: &'static str,
    about: &'static str,
    pod: BoundPod,
    node: Option<BoundNode>,
) -> SessionFile {
    SessionFile {
        name,
        about,
        summary: SummaryAnswer::NotAsked,
        list: ListAnswer::Binding(Box::new(BindingReads { pod, node })),
    }
}

/// Pod `ml/<name>` of one GPU container `trainer`.
fn trainer_pod(name: &'static str, gpus: u32, cpus: u32, memory_gib: u32) -> BoundPod {
    BoundPod {
        namespace: "ml",
        name,
        spec: pod_spec(
            Vec::new(),
            vec![container(
                "trainer",
                CUDA_IMAGE,
                Some(gpus),
                cpus,
                memory_gib,
            )],
        ),
    }
}

fn bound(index: usize, machine: Machine, topology: TopologyAnswer) -> Option<BoundNode> {
    Some(BoundNode {
        index,
        machine,
        reported_kubelet: KUBELET,
        topology,
    })
}

fn held(gpus: u32, cpus: u32, memory_gib: u64) -> Held {
    Held {
        gpus,
        cpus,
        memory_gib,
    }
}

/// Every binding session of `scenarios/sessions/`.
pub fn session_files() -> Vec<SessionFile> {
    use gpu_topology::TopologyManagerPolicy::{BestEffort, Restricted, SingleNumaNode};
    use gpu_topology::TopologyManagerScope::{Container, Pod};
    let p5_single_numa_node = || p5(Kubelet::cpu_static(SingleNumaNode, Pod));
    vec![
        binding_session(
            "binding-gpus-fragmented",
            "The binding of ml/train-4-gpus (4 GPUs, 16 CPUs) to ip-10-0-0-3.ec2.internal, a p5 (4 + 4 GPUs)\nwhose kubelet runs single-numa-node, scope pod: other pods hold 2 GPUs on each NUMA node, so\n2 + 2 are free. The Pod, the Node, then its NodeResourceTopology as NFD's topology-updater\nwrites it.",
            trainer_pod("train-4-gpus", 4, 16, 64),
            bound(3, p5_single_numa_node(), TopologyAnswer::Held(vec![held(2, 16, 0), held(2, 16, 0)])),
        ),
        binding_session(
            "binding-cpus-short",
            "The binding of ml/train-48-cpus (4 GPUs, 48 CPUs) to ip-10-0-0-4.ec2.internal, a p5 on\nsingle-numa-node, scope pod: NUMA node 1's 4 GPUs are held, and other pods' exclusive CPUs leave\n34 of NUMA node 0's 94 free (64 of NUMA node 1's 96).",
            trainer_pod("train-48-cpus", 4, 48, 128),
            bound(4, p5_single_numa_node(), TopologyAnswer::Held(vec![held(0, 60, 0), held(4, 32, 0)])),
        ),
        binding_session(
            "binding-memory-short",
            "The binding of ml/train-320gi (2 GPUs, 16 CPUs, 320 GiB) to gpu-node-02, an HGX A100 (about\n503 GiB per NUMA node) whose kubelet runs single-numa-node with the static CPU and Memory\nManagers: other pods have 200 GiB pinned on each NUMA node, so about 303 GiB are free on each.",
            trainer_pod("train-320gi", 2, 16, 320),
            bound(
                2,
                hgx_a100(Kubelet {
                    memory: MemoryManagerPolicy::Static,
                    ..Kubelet::cpu_static(SingleNumaNode, Pod)
                }),
                TopologyAnswer::Held(vec![held(2, 16, 200), held(2, 16, 200)]),
            ),
        ),
        binding_session(
            "binding-memory-groups-unknown",
            "The binding of ml/train-100gi (2 GPUs, 16 CPUs, 100 GiB) to gpu-node-03, an HGX A100 whose\nkubelet runs single-numa-node with the static CPU and Memory Managers: other pods have 200 GiB\npinned on each NUMA node. 100 GiB fit beside them on either, but which NUMA nodes their memory\nis grouped with (the Memory Manager's Cells) is not published, and it decides.",
            trainer_pod("train-100gi", 2, 16, 100),
            bound(
                3,
                hgx_a100(Kubelet {
                    memory: MemoryManagerPolicy::Static,
                    ..Kubelet::cpu_static(SingleNumaNode, Pod)
                }),
                TopologyAnswer::Held(vec![held(2, 16, 200), held(2, 16, 200)]),
            ),
        ),
        binding_session(
            "binding-full-pcpus-only-short",
            "The binding of ml/train-48-pcpus (2 GPUs, 48 CPUs) to ip-10-0-0-5.ec2.internal, a p5 (SMT-2)\nwhose static CPU Manager runs with full-pcpus-only, best-effort: other pods' exclusive CPUs\n(whole cores) leave 20 CPUs free on each NUMA node, 40 in all.",
            trainer_pod("train-48-pcpus", 2, 48, 64),
            bound(
                5,
                p5(Kubelet {
                    full_pcpus_only: true,
                    ..Kubelet::cpu_static(BestEffort, Pod)
                }),
                TopologyAnswer::Held(vec![held(2, 74, 0), held(2, 76, 0)]),
            ),
        ),
        binding_session(
            "binding-room",
            "The binding of ml/train-fits (4 GPUs, 16 CPUs) to ip-10-0-0-6.ec2.internal, a p5 on\nsingle-numa-node, scope pod: NUMA node 0's GPUs are all held, NUMA node 1 has its 4 GPUs and 72\nof its 96 CPUs free.",
            trainer_pod("train-fits", 4, 16, 64),
            bound(6, p5_single_numa_node(), TopologyAnswer::Held(vec![held(4, 48, 0), held(0, 24, 0)])),
        ),
        binding_session(
            "binding-topology-absent",
            "The binding of ml/train-unwatched (4 GPUs) to ip-10-0-0-7.ec2.internal, a p5 on\nsingle-numa-node where NFD's topology-updater does not run: its NodeResourceTopology is not\nfound (404).",
            trainer_pod("train-unwatched", 4, 16, 64),
            bound(7, p5_single_numa_node(), TopologyAnswer::Absent),
        ),
        binding_session(
            "binding-web-pod",
            "The binding of shop/web-0, a pod that asks for no GPU: the Pod is all the policy reads.",
            BoundPod {
                namespace: "shop",
                name: "web-0",
                spec: pod_spec(
                    Vec::new(),
                    vec![json!({
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "256Mi"}},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    })],
                ),
            },
            None,
        ),
        binding_session(
            "binding-container-scope",
            "The binding of ml/train-and-eval (containers trainer and evaluator, 2 GPUs each) to\ngpu-node-01, an HGX A100 whose kubelet runs restricted with topologyManagerScope container:\nother pods hold 1 GPU on NUMA node 0 and 3 on NUMA node 1, so 3 + 1 are free.",
            BoundPod {
                namespace: "ml",
                name: "train-and-eval",
                spec: pod_spec(
                    Vec::new(),
                    vec![
                        container("trainer", CUDA_IMAGE, Some(2), 8, 64),
                        container("evaluator", CUDA_IMAGE, Some(2), 8, 64),
                    ],
                ),
            },
            bound(
                1,
                hgx_a100(Kubelet::cpu_static(Restricted, Container)),
                TopologyAnswer::Held(vec![held(1, 8, 0), held(3, 24, 0)]),
            ),
        ),
        binding_session(
            "binding-init-container-gpus",
            "The binding of ml/train-after-check (init container gpu-check, then trainer, 4 GPUs each) to\nip-10-0-0-2.ec2.internal, a p5 whose kubelet runs single-numa-node with topologyManagerScope\ncontainer: NUMA node 1's 4 GPUs are held, NUMA node 0's 4 are free.",
            BoundPod {
                namespace: "ml",
                name: "train-after-check",
                spec: pod_spec(
                    vec![container("gpu-check", CUDA_IMAGE, Some(4), 4, 8)],
                    vec![container("trainer", CUDA_IMAGE, Some(4), 16, 64)],
                ),
            },
            bound(
                2,
                p5(Kubelet::cpu_static(SingleNumaNode, Container)),
                TopologyAnswer::Held(vec![held(0, 16, 0), held(4, 32, 0)]),
            ),
        ),
        binding_session(
            "binding-topology-not-granted",
            "The binding of ml/train-ungranted (4 GPUs) to ip-10-0-0-9.ec2.internal, a p5 on\nsingle-numa-node, by a policy not granted NodeResourceTopology: the host refuses that read\nbefore any exchange, so the session ends with the Node.",
            trainer_pod("train-ungranted", 4, 16, 64),
            bound(9, p5_single_numa_node(), TopologyAnswer::NotGranted),
        ),
    ]
}
