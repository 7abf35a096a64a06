//! The file-backed cluster answers the policy's host calls as policy-server
//! answers them from a cluster holding these objects.

use gpu_topology::LabelPrefix;
use gpu_topology_cli::fleet::files::{
    host_error, not_found, not_found_resource, not_granted, qualified_resource, FileCluster,
};
use gpu_topology_policy::cluster::binding::topology_request;
use gpu_topology_policy::cluster::fleet_summary::summary_request;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::cluster::nodes::{node_list_request, node_request};
use gpu_topology_policy::settings::FleetSummarySettings;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const NODES: &str = "tests/fixtures/fleet/three-nodes.yaml";
const SUMMARY: &str = "tests/fixtures/fleet/hgx-mixed-summary.yaml";

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The cluster of the Node file and/or the summary file.
fn cluster(with_nodes: bool, with_summary: bool) -> FileCluster {
    let (nodes, summary) = (fixture(NODES), fixture(SUMMARY));
    let nodes = with_nodes.then_some(nodes.as_path());
    FileCluster::load(nodes, with_summary.then_some(summary.as_path())).unwrap()
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
    let text = std::fs::read_to_string(fixture(SUMMARY)).unwrap();
    let config_map: Value = serde_saphyr::from_str(&text).unwrap();
    // Its metadata (name, namespace) is pruned: the policy asks for `data`.
    assert_eq!(answer, json!({"data": config_map["data"]}));
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

const TOPOLOGY: &str = "tests/fixtures/topology/busy.yaml";

/// The Node file, and the topology file when `with_topology`.
fn binding_cluster(with_topology: bool) -> FileCluster {
    let files = cluster(true, false);
    if with_topology {
        files.with_topology(&fixture(TOPOLOGY)).unwrap()
    } else {
        files
    }
}

/// (the binding check's GET, the cluster has a topology file, the answer:
/// `Ok` the object, `Err` the error): a Node by name from the Node file,
/// pruned to the masks as the list is; a NodeResourceTopology by name from
/// the topology file; a missing one is the API server's 404; without the
/// file, the flag is named (no cluster was asked).
#[rstest]
#[case::a_node_by_name_pruned(node_request("gpu-a"), false,
    Ok(json!({"metadata": {"name": "gpu-a", "labels": {"gpu-topology.io/gpus": "8", "pool": "train"}}})))]
#[case::a_node_not_in_the_file(node_request("gpu-z"), false, Err(host_error(&not_found("Node", "gpu-z"))))]
#[case::a_topology_by_name(topology_request("hgx-snn-1"), true, Ok(json!("hgx-snn-1")))]
#[case::a_topology_not_in_the_file(topology_request("gpu-a"), true,
    Err(host_error(&not_found_resource("noderesourcetopologies.topology.node.k8s.io", "gpu-a"))))]
#[case::no_topology_file(topology_request("hgx-snn-1"), false,
    Err("Host error: no NodeResourceTopology was read: it is read from --topology FILE, which was not given".to_owned()))]
fn the_binding_check_s_gets_are_answered_by_name(
    #[case] request: GetResourceRequest,
    #[case] with_topology: bool,
    #[case] answer: Result<Value, String>,
) {
    let got = binding_cluster(with_topology).get_resource(&request);
    match (got, answer) {
        (Ok(object), Ok(Value::String(name))) => {
            let object: Value = serde_json::from_slice(&object).unwrap();
            assert_eq!(object["metadata"]["name"], name);
            assert_eq!(object["kind"], "NodeResourceTopology");
            assert_eq!(object["zones"].as_array().unwrap().len(), 2);
        }
        (Ok(object), Ok(expected)) => {
            assert_eq!(serde_json::from_slice::<Value>(&object).unwrap(), expected)
        }
        (got, expected) => assert_eq!(got.map(|_| Value::Null), expected),
    }
}

/// The 404 names the resource as the API server does: its plural,
/// qualified by its group outside the core group.
#[rstest]
#[case::core("v1", "Node", "nodes")]
#[case::grouped(
    "topology.node.k8s.io/v1alpha2",
    "NodeResourceTopology",
    "noderesourcetopologies.topology.node.k8s.io"
)]
fn not_found_names_the_qualified_resource(
    #[case] api_version: &str,
    #[case] kind: &str,
    #[case] resource: &str,
) {
    assert_eq!(qualified_resource(api_version, kind), resource);
}

/// A topology file of other objects is bad input, named by file and item;
/// a JSON List of them is read like multi-document YAML.
#[rstest]
#[case::nodes_are_no_topology(NODES, Err("tests/fixtures/fleet/three-nodes.yaml, document 1, item 1: is a Node, not a NodeResourceTopology"))]
#[case::a_json_list("tests/fixtures/topology/free.json", Ok(()))]
fn topology_files_hold_node_resource_topologies(
    #[case] file: &str,
    #[case] expected: Result<(), &str>,
) {
    let loaded = cluster(true, false).with_topology(&fixture(file));
    match (loaded, expected) {
        (Ok(files), Ok(())) => assert!(files
            .get_resource(&topology_request("ip-10-0-0-0.ec2.internal"))
            .is_ok()),
        (Err(error), Err(words)) => assert!(error.to_string().contains(words), "{error}"),
        (got, expected) => panic!("got {got:?}, expected {expected:?}"),
    }
}
