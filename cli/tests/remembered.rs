//! The tool reads the cluster once per run: the same decisions as reading
//! it for every object, with one Node list parse.

use gpu_topology_cli::remembered::Remembering;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::decide::explain_with;
use gpu_topology_policy::request::AdmissionRequest;
use gpu_topology_policy::settings::{settings_from_value, Config};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use rstest::rstest;
use serde_json::{json, Value};
use std::cell::Cell;

/// The fixture fleet's Node list, counting the reads.
struct Counted {
    nodes: Vec<u8>,
    lists: Cell<u32>,
}

impl ClusterReader for Counted {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.lists.set(self.lists.get() + 1);
        Ok(self.nodes.clone())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Err(format!("configmaps {:?} not found", request.name))
    }
}

fn request(spec: Value) -> String {
    json!({
        "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "train", "namespace": "ml", "operation": "CREATE",
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"}, "spec": spec},
    })
    .to_string()
}

fn gpus(count: u32) -> Value {
    json!({"containers": [{"name": "train", "resources": {"limits": {
        "nvidia.com/gpu": count.to_string(), "cpu": "16", "memory": "64Gi"}}}]})
}

fn pinned(count: u32, node: &str) -> Value {
    let mut spec = gpus(count);
    spec["nodeName"] = json!(node);
    spec
}

fn config(settings: Value) -> Config {
    settings_from_value(settings).unwrap().config().unwrap()
}

#[rstest]
#[case::default_settings(json!({}))]
#[case::required_affinity(json!({"topology": {"affinity": "required"}}))]
#[case::node_list_only(json!({"capacity": {"source": "nodes"}}))]
fn remembered_reads_decide_as_fresh_ones(#[case] settings: Value) {
    let nodes = include_bytes!("../../examples/cluster/nodes.json").to_vec();
    let config = config(settings);
    let specs = [
        gpus(1),
        gpus(4),
        gpus(8),
        gpus(9),
        pinned(4, "gpu-node-02"),
        pinned(8, "ip-10-0-0-7.ec2.internal"),
        gpus(2),
    ];
    let fresh = Counted {
        nodes: nodes.clone(),
        lists: Cell::new(0),
    };
    let counted = Counted {
        nodes,
        lists: Cell::new(0),
    };
    let remembering = Remembering::new(&counted);
    for spec in specs {
        let text = request(spec);
        let request = AdmissionRequest::parse(&text).unwrap();
        assert_eq!(
            explain_with(&request, &config, &remembering),
            explain_with(&request, &config, &fresh),
            "{text}"
        );
    }
    // Once unpinned, once for each of the two pinned nodes.
    assert_eq!(counted.lists.get(), 3);
    assert_eq!(fresh.lists.get(), 7);
}
