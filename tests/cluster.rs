//! The cluster-aware fit and workload validation, natively: the e2e session
//! files (kwctl's replay format) are served by a fake lister that also checks
//! the policy asks exactly what was recorded.

use crate::common;

use common::{config, evaluate_request, mutated, rejection, request};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::{Decision, Verdict};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Value};
use serde_yaml::Value as Yaml;
use std::cell::Cell;
use std::path::PathBuf;

/// Replays a session file as kwctl does: each host call takes the next
/// exchange, whose recorded request it must equal.
struct SessionLister {
    exchanges: Vec<(Yaml, Result<Vec<u8>, String>)>,
    calls: Cell<usize>,
}

impl SessionLister {
    fn load(name: &str) -> Self {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("e2e-tests/scenarios/sessions")
            .join(format!("{name}.yml"));
        let session: Yaml = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let exchanges = session
            .as_sequence()
            .unwrap()
            .iter()
            .map(|exchange| {
                let request: Yaml =
                    serde_yaml::from_str(exchange["request"].as_str().unwrap()).unwrap();
                let response = &exchange["response"];
                let response = match response["type"].as_str() {
                    Some("Success") => {
                        Ok(response["payload"].as_str().unwrap().as_bytes().to_vec())
                    }
                    _ => Err(response["message"].as_str().unwrap().to_owned()),
                };
                (request, response)
            })
            .collect();
        Self {
            exchanges,
            calls: Cell::new(0),
        }
    }

    /// The next recorded answer, checking that `request` (tagged as kwctl
    /// tags it) is the recorded one.
    fn answer(&self, tag: &str, request: Yaml) -> Result<Vec<u8>, String> {
        let index = self.calls.get();
        self.calls.set(index + 1);
        let (recorded, response) = &self.exchanges[index];
        let Yaml::Tagged(recorded) = recorded else {
            panic!("exchange {index}: the request is not tagged")
        };
        assert_eq!(
            recorded.tag, tag,
            "exchange {index}: another kind of request"
        );
        assert_eq!(
            request, recorded.value,
            "exchange {index}: the policy's request differs from the recorded one"
        );
        response.clone()
    }

    /// Every recorded exchange was asked for, in order.
    fn all_replayed(&self) -> bool {
        self.calls.get() == self.exchanges.len()
    }
}

impl ClusterReader for SessionLister {
    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        self.answer(
            "KubernetesGetResource",
            serde_yaml::to_value(request).unwrap(),
        )
    }

    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.answer(
            "KubernetesListResourceAll",
            serde_yaml::to_value(request).unwrap(),
        )
    }
}

/// A host that did not grant the policy access to Nodes.
struct Refused;

impl ClusterReader for Refused {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Err("Policy has not been granted access to Kubernetes v1/Node resources.".to_owned())
    }

    fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Err("Policy has not been granted access to Kubernetes v1/ConfigMap resources.".to_owned())
    }
}

fn decide(fixture: &str, settings: Value, lister: &dyn ClusterReader) -> Decision {
    evaluate_request(&request(fixture), &config(settings), lister)
}

fn topology(affinity: &str, alignment: &str) -> Value {
    json!({"topology": {"affinity": affinity, "alignment": alignment}})
}

fn preferred() -> Value {
    json!({})
}

/// (fixture, settings, session, fragments of the rejection message): the
/// kubelet model's verdict per node shape, with the arithmetic and the fix.
#[rstest]
#[case::numa_required_no_fit("eight-gpu-pod", topology("required", "numa"), "hgx-mixed-fleet", &[
    "it needs 8 GPUs (container \"finetune\": 8 nvidia.com/gpu) NUMA-aligned (topology.affinity: required), but none of the 5 labeled GPU nodes hosts it so",
    "(8 GPUs, 4+4 per NUMA node, 96 CPUs per NUMA node, topologyManagerPolicy single-numa-node) the 8 GPUs need 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError. Request at most 4 GPUs per pod.",
    "topologyManagerPolicy best-effort) the kubelet admits it unaligned: the 8 GPUs' narrowest NUMA mask is 2 nodes. Request at most 4 GPUs per pod, or set topology.affinity: preferred so the GPUs may span NUMA nodes.",
])]
#[case::nvlink_required_no_fit("training-pod-init-and-sidecar", topology("required", "nvlink"), "a100-pcie-nvlink-bridge-fleet", &[
    "NVLink-aligned (topology.affinity: required), but none of the 2 labeled GPU nodes hosts it so",
    "the kubelet admits it, but the largest NVLink group has 2 GPUs and 4 must share one. Request at most 2 GPUs per pod, or set topology.affinity: preferred so the GPUs may span NVLink groups.",
])]
#[case::node_required_no_fit("eight-gpu-pod", topology("required", "node"), "four-gpu-pcie-fleet", &[
    "it needs 8 GPUs (container \"finetune\": 8 nvidia.com/gpu) but the largest labeled GPU node has 4 (3 nodes).",
    "Request at most 4 GPUs per pod, or split the work across several pods.",
])]
#[case::preferred_no_node_admits("eight-gpu-pod", preferred(), "hgx-single-numa-node-fleet", &[
    "the kubelet of none of the 3 labeled GPU nodes admits it",
    "On the 3 nodes of shape ",
    "the 8 GPUs need 2 NUMA nodes, but single-numa-node admits only one",
])]
#[case::no_labeled_nodes_under_required("inference-deployment-pod", topology("required", "numa"), "no-labeled-nodes", &[
    "it needs 1 GPU (container \"vllm\": 1 nvidia.com/gpu), but no node publishes gpu-topology.io labels: is the labeler deployed?",
    "set capacity.unlabeledNodes: allow, or set topology.affinity: preferred",
])]
#[case::deployment_template_cannot_fit("deployment-create", topology("required", "nvlink"), "a100-pcie-nvlink-bridge-fleet", &[
    "Deployment \"llama-3-70b\": GPU pod cannot be placed: it needs 4 GPUs",
    "the largest NVLink group has 2 GPUs and 4 must share one",
])]
#[case::cron_job_template_cannot_fit("cronjob-create", preferred(), "four-gpu-pcie-fleet", &[
    "CronJob \"nightly-eval\": GPU pod cannot be placed: it needs 8 GPUs (container \"lm-eval\": 8 nvidia.com/gpu) but the largest labeled GPU node has 4 (3 nodes)",
])]
fn rejected_with_the_best_offers(
    #[case] fixture: &str,
    #[case] settings: Value,
    #[case] session: &str,
    #[case] fragments: &[&str],
) {
    let lister = SessionLister::load(session);
    let decision = decide(fixture, settings, &lister);
    let message = rejection(&decision);
    for fragment in fragments {
        assert!(message.contains(fragment), "{message}\nlacks: {fragment}");
    }
    assert!(lister.all_replayed());
}

/// (fixture, settings, session, fragment of a warning, if one is expected)
#[rstest]
#[case::four_gpus_fit_numa("training-pod-init-and-sidecar", preferred(), "hgx-mixed-fleet",
    Some("1 node with malformed gpu-topology.io labels left out of the GPU fit check (e.g. label gpu-topology.io/topology-manager-policy=\"SingleNUMANode\" is invalid"))]
#[case::eight_gpus_admitted_by_the_best_effort_node(
    "eight-gpu-pod",
    preferred(),
    "hgx-mixed-fleet",
    None
)]
#[case::eight_gpus_nvlink_required_on_the_best_effort_node(
    "eight-gpu-pod",
    topology("required", "nvlink"),
    "hgx-mixed-fleet",
    None
)]
#[case::affinity_off_without_labels_warns("inference-deployment-pod", json!({"topology": {"affinity": "off"}}), "no-labeled-nodes",
    Some("GPU fit not checked: no node publishes gpu-topology.io labels: is the labeler deployed?"))]
// An autoscaled pool at zero, or a labeler outage, is no rejection under
// preferred (issue #14): the pod gets no affinity and a warning.
#[case::preferred_without_labels_warns(
    "inference-deployment-pod",
    preferred(),
    "no-labeled-nodes",
    Some(
        "GPU fit not checked: no node publishes gpu-topology.io labels: is the labeler deployed?"
    )
)]
#[case::pinned_pod_without_labels_warns(
    "node-name-pod",
    preferred(),
    "no-labeled-nodes",
    Some("GPU fit not checked: no node publishes gpu-topology.io labels")
)]
#[case::host_error_without_static_capacity("training-pod-init-and-sidecar", preferred(), "host-error",
    Some("GPU fit not checked: the cluster view (Node labels) is unavailable: the API server is unreachable (host: Cannot list v1/Node resources"))]
#[case::host_error_falls_back_to_static_capacity("training-pod-init-and-sidecar", json!({"capacity": {"maxGpusPerNode": 8}}), "host-error",
    Some("GPU fit checked against the static capacity settings: the cluster view (Node labels) is unavailable"))]
fn accepted(
    #[case] fixture: &str,
    #[case] settings: Value,
    #[case] session: &str,
    #[case] warning: Option<&str>,
) {
    let lister = SessionLister::load(session);
    let decision = decide(fixture, settings, &lister);
    assert!(
        !matches!(decision.verdict, Verdict::Reject(_)),
        "{decision:?}"
    );
    if let Some(fragment) = warning {
        assert!(
            decision.warnings.iter().any(|w| w.contains(fragment)),
            "{:?} lacks {fragment}",
            decision.warnings
        );
    }
    assert!(lister.all_replayed());
}

/// The training pod's 4 GPUs are admitted aligned on every shape of the
/// mixed fleet: it is made Guaranteed, and gets no affinity (none refuses,
/// and no shape is better than another).
#[test]
fn a_pod_that_fits_everywhere_is_mutated_for_qos_only() {
    let lister = SessionLister::load("hgx-mixed-fleet");
    let decision = decide("training-pod-init-and-sidecar", preferred(), &lister);
    let object = mutated(&decision);
    assert_eq!(
        object.pointer("/spec/containers/0/resources/requests/cpu"),
        Some(&json!("16"))
    );
    assert!(object.pointer("/spec/affinity").is_none(), "{object}");
}

/// The 8-GPU pod on the mixed fleet: the single-numa-node shape refuses
/// it (TopologyAffinityError), the L4 shape has 4 GPUs: the Node list's
/// verdicts keep it off those two shapes only.
#[test]
fn a_refusing_shape_is_left_out_by_its_shape() {
    let lister = SessionLister::load("hgx-mixed-fleet");
    let decision = decide("eight-gpu-pod", preferred(), &lister);
    let terms = common::required_terms(&mutated(&decision));
    assert_eq!(terms.len(), 1, "{terms:?}");
    let expression = &terms[0]["matchExpressions"][0];
    assert_eq!(expression["key"], "gpu-topology.io/shape");
    assert_eq!(expression["operator"], "NotIn");
    assert_eq!(expression["values"].as_array().unwrap().len(), 2);
}

/// (settings, accepted, warning fragment): a host that refuses access.
#[rstest]
#[case::auto_without_static_skips("{}", true, "GPU fit not checked: the cluster view (Node labels) is unavailable: access denied (host: Policy has not been granted access")]
#[case::cluster_skips(
    r#"{"capacity": {"source": "cluster"}}"#,
    true,
    "Grant the policy read access to v1 Nodes (contextAwareResources)"
)]
#[case::auto_falls_back_to_static_fit(
    r#"{"capacity": {"maxGpusPerNode": 8, "maxGpusPerNumaNode": 4}}"#,
    true,
    "GPU fit checked against the static capacity settings"
)]
#[case::auto_falls_back_to_static_reject(r#"{"capacity": {"maxGpusPerNode": 4}}"#, false, "")]
// Left over under a source that never reads them, the limits do nothing,
// and the advice says which source would use them.
#[case::cluster_ignores_static_limits(
    r#"{"capacity": {"source": "cluster", "maxGpusPerNode": 4}}"#,
    true,
    "or configure capacity.maxGpusPerNode with capacity.source: auto"
)]
#[case::nodes_ignore_static_limits(
    r#"{"capacity": {"source": "nodes", "maxGpusPerNode": 4, "singleNumaNode": true}}"#,
    true,
    "GPU fit not checked: the cluster view (Node labels) is unavailable: access denied (host: Policy has not been granted access"
)]
fn host_refused(#[case] settings: &str, #[case] accepted: bool, #[case] warning: &str) {
    let decision = decide(
        "eight-gpu-pod",
        serde_json::from_str(settings).unwrap(),
        &Refused,
    );
    if accepted {
        assert!(
            decision.warnings.iter().any(|w| w.contains(warning)),
            "{:?}",
            decision.warnings
        );
    } else {
        assert!(rejection(&decision).contains("capacity.maxGpusPerNode"));
    }
}

/// A lister that fails the test when called.
struct MustNotList;

impl ClusterReader for MustNotList {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        panic!("the policy listed Nodes when it must not: {request:?}")
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        panic!("the policy read the cluster when it must not: {request:?}")
    }
}

#[rstest]
#[case::static_source("eight-gpu-pod", json!({"capacity": {"source": "static", "maxGpusPerNode": 8}}))]
#[case::cpu_only_pod("cpu-only-pod", json!({}))]
#[case::pod_update("eight-gpu-pod", json!({}))]
fn no_listing_when_not_needed(#[case] fixture: &str, #[case] settings: Value) {
    let mut request = request(fixture);
    if fixture == "eight-gpu-pod" && settings == json!({}) {
        request["operation"] = json!("UPDATE");
    }
    let decision = evaluate_request(&request, &config(settings), &MustNotList);
    assert!(decision.warnings.is_empty(), "{:?}", decision.warnings);
}

/// Workloads are validated, never mutated; an update that leaves the pod
/// template alone is never blocked, so a broken workload can be scaled down.
#[rstest]
#[case::deployment_that_fits_is_not_mutated(
    "deployment-create",
    "CREATE",
    false,
    "hgx-mixed-fleet",
    true
)]
#[case::deployment_template_change_is_checked(
    "deployment-create",
    "UPDATE",
    false,
    "four-gpu-pcie-fleet",
    true
)]
#[case::cron_job_update_with_new_template_is_rejected(
    "cronjob-create",
    "UPDATE",
    false,
    "four-gpu-pcie-fleet",
    false
)]
#[case::cron_job_update_keeping_the_template_is_accepted(
    "cronjob-create",
    "UPDATE",
    true,
    "four-gpu-pcie-fleet",
    true
)]
fn workloads(
    #[case] fixture: &str,
    #[case] operation: &str,
    #[case] same_template: bool,
    #[case] session: &str,
    #[case] accepted: bool,
) {
    let mut request = request(fixture);
    request["operation"] = json!(operation);
    let mut old = request["object"].clone();
    if !same_template {
        // The previous version asked for 1 GPU.
        for pointer in [
            "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
            "/spec/jobTemplate/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
        ] {
            if let Some(count) = old.pointer_mut(pointer) {
                *count = json!("1");
            }
        }
    }
    request["oldObject"] = old;
    let lister = SessionLister::load(session);
    let decision = evaluate_request(&request, &config(json!({})), &lister);
    match decision.verdict {
        Verdict::Accept => assert!(accepted, "{decision:?}"),
        Verdict::Reject(message) => assert!(!accepted, "{message}"),
        Verdict::Mutate(_) => panic!("a workload was mutated"),
    }
    assert_eq!(lister.all_replayed(), !same_template);
}

/// A cluster whose fleet summary ConfigMap and Node list answer as given,
/// recording which of the two the policy asked for.
struct Cluster {
    summary: Result<Vec<u8>, String>,
    nodes: Result<Vec<u8>, String>,
    asked: std::cell::RefCell<Vec<&'static str>>,
}

/// A p5 (HGX H100) node on best-effort as the labeler labels it: every fact
/// of the model, and its shape.
fn hgx_best_effort() -> gpu_topology::NodeTopology {
    use gpu_topology::*;
    NodeTopology {
        gpus: Some(8),
        gpus_per_numa_max: Some(4),
        numa_nodes: Some(2),
        nvlink_group_max: Some(8),
        topology_manager_policy: Some(TopologyManagerPolicy::BestEffort),
        topology_manager_scope: Some(TopologyManagerScope::Pod),
        cpu_manager_policy: Some(CpuManagerPolicy::Static),
        numa_gpus: Some(vec![4, 4]),
        numa_cpus: Some(vec![96, 96]),
        numa_reserved_cpus: Some(vec![2, 0]),
        numa_reserved_cores: Some(vec![1, 0]),
        numa_sockets: Some(vec![0, 1]),
        threads_per_core: Some(2),
        numa_memory_mib: Some(vec![1_031_000, 1_032_024]),
        numa_hugepages_2mi: Some(vec![0, 0]),
        numa_hugepages_1gi: Some(vec![0, 0]),
        memory_manager_policy: Some(MemoryManagerPolicy::None),
        prefer_closest_numa_nodes: Some(false),
        max_allowable_numa_nodes: Some(8),
        full_pcpus_only: Some(false),
        distribute_cpus_across_numa: Some(false),
        align_by_socket: Some(false),
        ..NodeTopology::default()
    }
    .with_shape()
}

/// Two such nodes, as the Node list returns them.
fn two_hgx_nodes() -> String {
    let labels = hgx_best_effort().to_labels(&gpu_topology::LabelPrefix::default());
    let items: Vec<Value> = ["hgx-1", "hgx-2"]
        .iter()
        .map(|name| json!({"metadata": {"name": name, "labels": labels}}))
        .collect();
    json!({"kind": "NodeList", "items": items}).to_string()
}

const NOT_FOUND: &str = "ApiError: configmaps \"gpu-topology-fleet\" not found: NotFound";

/// The summary of [`two_hgx_nodes`], written `age` seconds ago.
fn summary_config_map(age: u64) -> Vec<u8> {
    let view = gpu_topology_policy::cluster::nodes::parse_node_list(
        two_hgx_nodes().as_bytes(),
        &gpu_topology::LabelPrefix::default(),
        None,
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let summary = gpu_topology::FleetSummary {
        fleet: view.fleet,
        malformed: 0,
        generated_at: now - age,
        heartbeats: None,
    };
    json!({"kind": "ConfigMap", "data": summary.to_data()})
        .to_string()
        .into_bytes()
}

impl Cluster {
    fn new(summary: Result<Vec<u8>, String>, nodes: Result<String, &str>) -> Self {
        Cluster {
            summary,
            nodes: nodes.map(String::into_bytes).map_err(str::to_owned),
            asked: Default::default(),
        }
    }
}

impl ClusterReader for Cluster {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.asked.borrow_mut().push("nodes");
        self.nodes.clone()
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        assert_eq!(
            (request.kind.as_str(), request.name.as_str()),
            ("ConfigMap", "gpu-topology-fleet")
        );
        self.asked.borrow_mut().push("summary");
        self.summary.clone()
    }
}

/// Issue #17: with `capacity.source: auto` the summary is read first at its
/// default name; the Node list is read instead, with the warning that names
/// the cost, exactly when the summary is absent, stale, unreadable or
/// refused. (summary answer, sources asked, fragment of the summary warning
/// or `None` for no such warning.)
#[rstest]
#[case::fresh_summary(Ok(summary_config_map(30)), &["summary"], None)]
#[case::absent(Err(NOT_FOUND.to_owned()), &["summary", "nodes"],
    Some("GPU fit read from the Node list: the fleet summary ConfigMap kube-system/gpu-topology-fleet is unavailable: not found (HTTP 404) (host: ApiError: configmaps \"gpu-topology-fleet\" not found: NotFound); deploy the fleet summarizer: the Node list costs about 44 µs per labeled node per admission"))]
#[case::stale(Ok(summary_config_map(301)), &["summary", "nodes"],
    Some("the fleet summary ConfigMap kube-system/gpu-topology-fleet is 301 s old, more than capacity.fleetSummary.maxAgeSeconds (300)"))]
#[case::unreadable(Ok(b"{\"data\": {\"format\": \"v0\"}}".to_vec()), &["summary", "nodes"],
    Some("the fleet summary ConfigMap kube-system/gpu-topology-fleet is unreadable"))]
#[case::refused(Err("Policy has not been granted access to Kubernetes v1/ConfigMap resources.".to_owned()), &["summary", "nodes"],
    Some("is unavailable: access denied (host: Policy has not been granted access to Kubernetes v1/ConfigMap resources.); deploy the fleet summarizer"))]
fn the_summary_is_read_by_default(
    #[case] summary: Result<Vec<u8>, String>,
    #[case] asked: &[&str],
    #[case] warning: Option<&str>,
) {
    let cluster = Cluster::new(summary, Ok(two_hgx_nodes()));
    // QoS edits make a mutation whatever the fleet says.
    let decision = decide("training-pod-init-and-sidecar", json!({}), &cluster);
    assert!(
        matches!(decision.verdict, Verdict::Mutate(_)),
        "{decision:?}"
    );
    assert_eq!(*cluster.asked.borrow(), asked);
    let about_summary: Vec<&String> = decision
        .warnings
        .iter()
        .filter(|w| w.contains("fleet summary"))
        .collect();
    match warning {
        None => assert!(decision.warnings.is_empty(), "{:?}", decision.warnings),
        Some(fragment) => {
            assert_eq!(about_summary.len(), 1, "{:?}", decision.warnings);
            assert!(about_summary[0].contains(fragment), "{about_summary:?}");
        }
    }
}

/// Either source can be forced, and neither then warns about the other.
/// (settings, summary answer, Node list answer, sources asked, verdict is a
/// mutation, fragment of the only warning.)
#[rstest]
#[case::nodes_never_reads_the_summary(json!({"capacity": {"source": "nodes"}}), Ok(summary_config_map(30)), Ok(two_hgx_nodes()),
    &["nodes"], true, None)]
#[case::summary_never_lists_nodes(json!({"capacity": {"source": "summary"}}), Ok(summary_config_map(30)), Ok(two_hgx_nodes()),
    &["summary"], true, None)]
#[case::summary_absent_is_no_check(json!({"capacity": {"source": "summary"}}), Err(NOT_FOUND.to_owned()), Ok(two_hgx_nodes()),
    &["summary"], true, Some("GPU fit not checked: the fleet summary ConfigMap kube-system/gpu-topology-fleet is unavailable"))]
#[case::summary_elsewhere(json!({"capacity": {"source": "summary", "fleetSummary": {"namespace": "kube-system", "maxAgeSeconds": 60}}}),
    Ok(summary_config_map(61)), Ok(two_hgx_nodes()), &["summary"], true, Some("is 61 s old, more than capacity.fleetSummary.maxAgeSeconds (60)"))]
#[case::both_unavailable(json!({}), Err(NOT_FOUND.to_owned()), Err("Cannot list v1/Node resources: Connection refused"),
    &["summary", "nodes"], true, None)]
fn sources_can_be_forced(
    #[case] settings: Value,
    #[case] summary: Result<Vec<u8>, String>,
    #[case] nodes: Result<String, &str>,
    #[case] asked: &[&str],
    #[case] mutated_pod: bool,
    #[case] only_warning: Option<&str>,
) {
    let cluster = Cluster::new(summary, nodes);
    let decision = decide("training-pod-init-and-sidecar", settings, &cluster);
    assert_eq!(matches!(decision.verdict, Verdict::Mutate(_)), mutated_pod);
    assert_eq!(*cluster.asked.borrow(), asked);
    match only_warning {
        Some(fragment) => {
            assert_eq!(decision.warnings.len(), 1, "{:?}", decision.warnings);
            assert!(
                decision.warnings[0].contains(fragment),
                "{:?}",
                decision.warnings
            );
        }
        None if asked == ["summary", "nodes"] => {
            // Neither answered: the summary's absence and the missing view.
            assert_eq!(decision.warnings.len(), 2, "{:?}", decision.warnings);
            assert!(decision.warnings[0]
                .starts_with("GPU fit not read from the fleet summary: the fleet summary"));
            assert!(decision.warnings[1]
                .starts_with("GPU fit not checked: the cluster view (Node labels) is unavailable"));
        }
        None => assert!(decision.warnings.is_empty(), "{:?}", decision.warnings),
    }
}

/// A DaemonSet's pod (pinned by `matchFields` on `metadata.name`) is
/// treated as pinned: under `preferred` it gets no requirement, so it can
/// still run on an unlabeled GPU node, and no labeled node is no rejection.
#[rstest]
#[case::preferred_no_affinity(
    preferred(),
    false,
    Some("the pod is pinned to node \"gpu-node-7\" by required node affinity on metadata.name")
)]
#[case::required_still_required(topology("required", "numa"), true, None)]
fn daemon_set_pods_are_pinned(
    #[case] settings: Value,
    #[case] gets_requirement: bool,
    #[case] warning: Option<&str>,
) {
    let mut request = request("node-name-pod");
    let spec = &mut request["object"]["spec"];
    spec.as_object_mut().unwrap().remove("nodeName");
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-7"]}]}]}}});
    let lister = SessionLister::load("no-labeled-nodes");
    let decision = evaluate_request(&request, &config(settings), &lister);
    assert!(lister.all_replayed());
    if !gets_requirement {
        let object = mutated(&decision);
        // The DaemonSet controller's term, untouched.
        assert_eq!(
            object["spec"]["affinity"],
            request["object"]["spec"]["affinity"]
        );
        assert!(
            decision
                .warnings
                .iter()
                .any(|w| w.contains(warning.unwrap())),
            "{:?}",
            decision.warnings
        );
        assert!(decision
            .warnings
            .iter()
            .any(|w| w.contains("GPU fit not checked: no node publishes gpu-topology.io labels")));
    } else {
        // Required affinity selects only nodes known to host it: none, so rejected.
        assert!(rejection(&decision).contains("no node publishes gpu-topology.io labels"));
    }
}
