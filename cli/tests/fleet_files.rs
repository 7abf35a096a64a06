//! The file-backed cluster answers the policy's host calls as policy-server
//! answers them from a cluster holding these objects.

use gpu_topology::LabelPrefix;
use gpu_topology_cli::fleet::files::{host_error, not_found, not_granted, FileCluster};
use gpu_topology_cli::input::parse_text;
use gpu_topology_policy::cluster::fleet_summary::summary_request;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::cluster::nodes::node_list_request;
use gpu_topology_policy::settings::FleetSummarySettings;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Value};

const NODES: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-a
    uid: "1"
    labels: {gpu-topology.io/gpus: "8", pool: train}
  status: {capacity: {cpu: "192"}}
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-only, labels: {pool: web}}
- apiVersion: v1
  kind: Node
  metadata: {name: unlabeled}
"#;

const SUMMARY: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: gpu-topology-fleet, namespace: kube-system, uid: "9"}
data: {format: gpu-topology.io/fleet-summary/v1}
"#;

fn cluster(nodes: bool, summary: bool) -> FileCluster {
    let nodes = nodes.then(|| parse_text("nodes.yaml", NODES).unwrap());
    let summary = summary.then(|| parse_text("summary.yaml", SUMMARY).unwrap().remove(0));
    FileCluster::from_objects(nodes, summary).unwrap()
}

fn json(answer: Result<Vec<u8>, String>) -> Value {
    serde_json::from_slice(&answer.unwrap()).unwrap()
}

#[test]
fn the_node_list_holds_the_selected_nodes_pruned_to_the_masks() {
    let list =
        json(cluster(true, false).list_all_resources(&node_list_request(&LabelPrefix::default())));
    assert_eq!(
        list["items"],
        json!([{"metadata": {"name": "gpu-a", "labels": {"gpu-topology.io/gpus": "8", "pool": "train"}}}])
    );
    assert_eq!(list["kind"], "NodeList");
}

/// (label selector, the names of the Nodes listed).
#[rstest]
#[case::everything(None, &["gpu-a", "cpu-only", "unlabeled"])]
#[case::equality(Some("pool=web"), &["cpu-only"])]
#[case::absence(Some("!pool"), &["unlabeled"])]
fn other_selectors_select_as_the_api_server_does(
    #[case] selector: Option<&str>,
    #[case] names: &[&str],
) {
    let request = ListAllResourcesRequest {
        api_version: "v1".into(),
        kind: "Node".into(),
        label_selector: selector.map(str::to_owned),
        field_selector: None,
        field_masks: Some(["metadata.name".to_owned()].into()),
    };
    let list = json(cluster(true, false).list_all_resources(&request));
    let listed: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert_eq!(listed, names);
}

#[test]
fn without_a_node_file_the_list_is_refused_as_an_ungranted_resource() {
    let refused =
        cluster(false, true).list_all_resources(&node_list_request(&LabelPrefix::default()));
    assert_eq!(refused, Err(host_error(&not_granted("v1", "Node"))));
    assert_eq!(
        refused.unwrap_err(),
        "Host error: Policy has not been granted access to Kubernetes v1/Node resources. The violation has been reported."
    );
}

#[test]
fn the_summary_is_answered_pruned_to_its_data() {
    let answer =
        json(cluster(false, true).get_resource(&summary_request(&FleetSummarySettings::default())));
    assert_eq!(
        answer,
        json!({"data": {"format": "gpu-topology.io/fleet-summary/v1"}})
    );
}

/// (name, namespace asked for): not the summary file's ConfigMap.
#[rstest]
#[case::another_name("other", Some("kube-system"))]
#[case::another_namespace("gpu-topology-fleet", Some("default"))]
fn any_other_object_is_not_found(#[case] name: &str, #[case] namespace: Option<&str>) {
    let request = GetResourceRequest {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        namespace: namespace.map(str::to_owned),
        disable_cache: false,
        field_masks: None,
    };
    assert_eq!(
        cluster(true, true).get_resource(&request),
        Err(host_error(&not_found("ConfigMap", name)))
    );
}

#[test]
fn without_a_summary_file_the_summary_is_not_found_in_the_api_s_words() {
    let missing =
        cluster(true, false).get_resource(&summary_request(&FleetSummarySettings::default()));
    // As recorded from a cluster in e2e-tests/scenarios/sessions/fleet-summary-absent.yml.
    assert_eq!(
        missing.unwrap_err(),
        "Host error: ApiError: configmaps \"gpu-topology-fleet\" not found: NotFound (ErrorResponse { status: \"Failure\", message: \"configmaps \\\"gpu-topology-fleet\\\" not found\", reason: \"NotFound\", code: 404 })"
    );
}
