//! Fleet descriptions and the kwctl session files built from them
//! (`scenarios/sessions/*.yml`).
//!
//! A fleet is machines (each a [`NodeTopology`] of facts as the labeler
//! publishes them, plus the labels real kubelets, cloud providers, Node
//! Feature Discovery and the GPU operator write) and node counts. The
//! session answers the policy's host calls in the order it makes them:
//! with `capacity.source: auto` the fleet summary ConfigMap first, then the
//! Node list. Labels go through the contract ([`NodeTopology::to_labels`],
//! with the shape the labeler sets, [`NodeTopology::with_shape`]), and the
//! summary is what the summarizer writes for the listed nodes
//! ([`Fleet::add_read`], [`FleetSummary::to_data`]), so both answers
//! describe one fleet.
//!
//! `cargo run -p e2e-tests --bin sessions` writes the files; the test
//! `tests/sessions.rs` checks that the checked-in ones are what it writes.
//!
//! This file holds the Node list and summary answers built from a fleet
//! and the session files' text; the fleets themselves are split by family
//! (issue #36): the machine types (`fleets/machines.rs`), the benchmarks'
//! large fleets (`fleets/bench.rs`), the scenarios' session fleets
//! (`fleets/sessions.rs`) and the demo's (`fleets/demo.rs`), all re-exported
//! here.
//!
//! [`NodeTopology`]: gpu_topology::NodeTopology
//! [`NodeTopology::to_labels`]: gpu_topology::NodeTopology::to_labels
//! [`NodeTopology::with_shape`]: gpu_topology::NodeTopology::with_shape

mod bench;
mod demo;
mod machines;
mod sessions;

pub use bench::{
    bench_fleet, cloud_fleet, cloud_machines, cramped_hgx, distinct_shapes_fleet,
    many_numa_nodes_fleet, thousand_numa_nodes_fleet, CLOUD_CYCLE,
};
pub use demo::{demo_nodes_file, demo_session_file, DEMO_NODES_PATH, DEMO_SESSION_PATH};
pub use machines::{
    a100_pcie, first_contract, four_pcie, g5_2xlarge, gb200_tray, gb200_tray_unversioned, gh200,
    hgx_a100, mi300x_cpx, mig_mixed, mig_single, old_labeler, p5, topology, with_devices,
    GpuVendor, Hardware, Kubelet, Machine,
};
pub use sessions::session_files;

use crate::session::HostRequest;
use anyhow::Result;
use gpu_topology::{Fleet, FleetSummary, LabelKey, LabelPrefix};
use gpu_topology_labeler::sinks::kubernetes::reported_kubelet_version;
use gpu_topology_labeler::summarize::SummaryBuilder;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// When the fresh summaries were written (2025-11-29): scenarios that read
/// them trust them for a century (`maxAgeSeconds`).
pub const SUMMARY_WRITTEN_AT: u64 = 1_764_450_000;
/// A summary from 2020: stale for any `maxAgeSeconds` a scenario sets.
pub const STALE_SUMMARY_WRITTEN_AT: u64 = 1_600_000_000;

/// The summarizer's ConfigMap, where the examples deploy it.
const SUMMARY_NAMESPACE: &str = "kube-system";
const SUMMARY_NAME: &str = "gpu-topology-fleet";
/// What the API server answers (through kube-rs) when the summary is absent.
pub const SUMMARY_NOT_FOUND: &str = "ApiError: configmaps \"gpu-topology-fleet\" not found: NotFound (ErrorResponse { status: \"Failure\", message: \"configmaps \\\"gpu-topology-fleet\\\" not found\", reason: \"NotFound\", code: 404 })";

/// Nodes of one machine type, and labels that differ on them.
#[derive(Debug, Clone)]
pub struct Nodes {
    pub machine: Machine,
    pub count: usize,
    /// Labels set by hand over the labeler's (e.g. a malformed value).
    pub overrides: Vec<(&'static str, &'static str)>,
    /// The Node's `status.nodeInfo.kubeletVersion` (`v1.36.2`), which the
    /// policy reads beside the labels; `None` leaves the status out.
    pub reported_kubelet: Option<&'static str>,
    /// The kubernetes sink's heartbeat annotation (`<prefix>/published`);
    /// `None`: no heartbeat (another sink).
    pub heartbeat: Option<&'static str>,
}

pub fn nodes(machine: Machine, count: usize) -> Nodes {
    Nodes {
        machine,
        count,
        overrides: Vec::new(),
        reported_kubelet: None,
        heartbeat: None,
    }
}

/// `count` nodes of `machine` whose labeler last confirmed their labels at
/// `heartbeat` (RFC 3339).
pub fn confirmed(machine: Machine, count: usize, heartbeat: &'static str) -> Nodes {
    Nodes {
        heartbeat: Some(heartbeat),
        ..nodes(machine, count)
    }
}

/// `count` nodes of `machine` whose Nodes report kubelet `version`.
pub fn reporting(machine: Machine, count: usize, version: &'static str) -> Nodes {
    Nodes {
        reported_kubelet: Some(version),
        ..nodes(machine, count)
    }
}

/// How the host answers the fleet summary read.
#[derive(Debug, Clone)]
pub enum SummaryAnswer {
    /// Not asked for (`capacity.source: nodes`).
    NotAsked,
    /// The API server's 404.
    Absent,
    /// The host's own error (no access, no connection).
    Error(&'static str),
    /// The summarizer's ConfigMap for this session's Node list, written at this time.
    OfTheList(u64),
    /// The summarizer's ConfigMap for other nodes (a stale one), written at this time.
    Of(Vec<Nodes>, u64),
    /// The summarizer's ConfigMap for these nodes, written at this time
    /// with `--dra`: with the DRA entries of this DRA fleet.
    OfWithDra(Vec<Nodes>, u64, crate::dra_fleets::DraFleet),
}

/// How the host answers the Node list.
#[derive(Debug, Clone)]
pub enum ListAnswer {
    NotAsked,
    Nodes(Vec<Nodes>),
    Error(&'static str),
    /// A claim's lists: the DeviceClasses and ResourceSlices of a DRA fleet.
    Dra(crate::dra_fleets::DraFleet),
    /// No list: the reads of a `pods/binding` CREATE, by name (the Pod, the
    /// Node, its NodeResourceTopology).
    Binding(Box<crate::binding_sessions::BindingReads>),
}

/// One session file.
#[derive(Debug, Clone)]
pub struct SessionFile {
    /// `sessions/<name>.yml`
    pub name: &'static str,
    /// The header comment: what the fleet is.
    pub about: &'static str,
    pub summary: SummaryAnswer,
    pub list: ListAnswer,
}

/// The labels real components write on a node: the kubelet (hostname, os,
/// arch), the cloud provider (instance type, region, zone), the GPU
/// operator's feature discovery (`nvidia.com/gpu.*`), NFD (CPU vendor).
fn foreign_labels(index: usize, machine: &Machine, hostname: &str) -> Vec<(String, String)> {
    const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];
    let gpus = machine.topology.gpus.unwrap_or(0).to_string();
    let mut labels: Vec<(&str, String)> = vec![
        ("beta.kubernetes.io/arch", machine.arch.into()),
        ("beta.kubernetes.io/os", "linux".into()),
        ("kubernetes.io/arch", machine.arch.into()),
        ("kubernetes.io/hostname", hostname.into()),
        ("kubernetes.io/os", "linux".into()),
    ];
    if let Some(instance) = machine.instance {
        labels.extend([
            ("beta.kubernetes.io/instance-type", instance.into()),
            ("node.kubernetes.io/instance-type", instance.into()),
            ("topology.kubernetes.io/region", "us-east-1".into()),
            (
                "topology.kubernetes.io/zone",
                ZONES[index % ZONES.len()].into(),
            ),
        ]);
    }
    match machine.gpu_vendor {
        GpuVendor::Nvidia => labels.extend([
            ("nvidia.com/gpu.present", "true".into()),
            ("nvidia.com/gpu.product", machine.product.into()),
            ("nvidia.com/gpu.count", gpus),
            ("nvidia.com/gpu.memory", machine.gpu_memory_mib.to_string()),
            ("nvidia.com/cuda.driver.major", "550".into()),
        ]),
        // The AMD GPU operator's node labeller (`amd.com/gpu.*`).
        GpuVendor::Amd => labels.extend([
            ("amd.com/gpu.product-name", machine.product.into()),
            ("amd.com/gpu.device-id", "74a1".into()),
            ("amd.com/gpu.vram", format!("{}M", machine.gpu_memory_mib)),
        ]),
    }
    labels.extend([
        (
            "feature.node.kubernetes.io/cpu-model.vendor_id",
            machine.cpu_vendor.into(),
        ),
        ("node-role.kubernetes.io/gpu", String::new()),
    ]);
    labels.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// Node names: cloud-style for cloud machines, `gpu-node-NN` on premises.
fn hostname(index: usize, machine: &Machine) -> String {
    match machine.instance {
        Some(_) => format!(
            "ip-10-{}-{}-{}.ec2.internal",
            index / 65_536,
            (index / 256) % 256,
            index % 256
        ),
        None => format!("gpu-node-{index:02}"),
    }
}

/// Node `index` of the list, as the masked listing returns it (labels,
/// name, and the kubelet version where the group reports one).
pub fn node_item(
    index: usize,
    machine: &Machine,
    overrides: &[(&str, &str)],
    reported_kubelet: Option<&str>,
    heartbeat: Option<&str>,
    prefix: &LabelPrefix,
) -> Value {
    let name = hostname(index, machine);
    let mut labels = Map::new();
    for (key, value) in foreign_labels(index, machine, &name) {
        labels.insert(key, Value::String(value));
    }
    for (key, value) in machine.topology.to_labels(prefix) {
        labels.insert(key, Value::String(value));
    }
    for (key, value) in overrides {
        labels.insert((*key).to_owned(), json!(value));
    }
    let mut node = json!({"metadata": {"name": name, "labels": labels}});
    if let Some(heartbeat) = heartbeat {
        node["metadata"]["annotations"] = json!({ prefix.heartbeat_key(): heartbeat });
    }
    if let Some(version) = reported_kubelet {
        node["status"] = json!({"nodeInfo": {"kubeletVersion": version}});
    }
    node
}

/// The Node list items of `groups`, in order.
pub fn node_items(groups: &[Nodes], prefix: &LabelPrefix) -> Vec<Value> {
    groups
        .iter()
        .flat_map(|group| std::iter::repeat_n(group, group.count))
        .enumerate()
        .map(|(index, group)| {
            node_item(
                index,
                &group.machine,
                &group.overrides,
                group.reported_kubelet,
                group.heartbeat,
                prefix,
            )
        })
        .collect()
}

/// The `NodeList` document holding `items`.
pub fn node_list(items: Vec<Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "NodeList",
        "metadata": {"resourceVersion": "48213377"},
        "items": items,
    })
}

/// What the summarizer makes of the listed nodes: its own builder, fed
/// each node's labels and reported kubelet version as its Node Table rows
/// give them, malformed nodes counted.
pub fn summary_of(items: &[Value], prefix: &LabelPrefix, generated_at: u64) -> FleetSummary {
    let mut builder = SummaryBuilder::new(prefix.clone());
    for item in items {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let labels = item
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)));
        builder.add_reported(name, labels, reported_kubelet_version(item));
        let heartbeat = item
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(prefix.heartbeat_key()))
            .and_then(Value::as_str);
        if let Some(heartbeat) = heartbeat {
            builder.add_heartbeat(name, heartbeat);
        }
    }
    builder.finish(generated_at).summary
}

/// The fleet [`summary_of`] `items` holds, and its malformed nodes.
pub fn summarize(items: &[Value], prefix: &LabelPrefix) -> (Fleet, u32) {
    let summary = summary_of(items, prefix, 0);
    (summary.fleet, summary.malformed)
}

/// The summarizer's ConfigMap for the nodes `items`, written at `generated_at`.
pub fn summary_config_map(items: &[Value], generated_at: u64, prefix: &LabelPrefix) -> Value {
    let summary = summary_of(items, prefix, generated_at);
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": SUMMARY_NAME,
            "namespace": SUMMARY_NAMESPACE,
            "labels": {
                "app.kubernetes.io/name": "gpu-topology-labeler",
                "app.kubernetes.io/component": "fleet-summary"
            }
        },
        "data": summary.to_data(),
    })
}

/// The policy's summary read, in kwctl's terms.
pub fn summary_request() -> HostRequest {
    HostRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: SUMMARY_NAME.into(),
        namespace: Some(SUMMARY_NAMESPACE.into()),
        disable_cache: false,
        field_masks: Some(BTreeSet::from(["data".to_owned()])),
    }
}

/// The policy's Node listing, in kwctl's terms.
pub fn list_request(prefix: &LabelPrefix) -> HostRequest {
    HostRequest::KubernetesListResourceAll {
        api_version: "v1".into(),
        kind: "Node".into(),
        label_selector: Some(prefix.key(LabelKey::Gpus)),
        field_selector: None,
        field_masks: Some(BTreeSet::from([
            "metadata.labels".to_owned(),
            "metadata.name".to_owned(),
            "status.nodeInfo.kubeletVersion".to_owned(),
            "metadata.annotations".to_owned(),
        ])),
    }
}

/// One exchange in kwctl's YAML: the request as its own YAML document in a
/// block, a JSON payload pretty-printed in a block, an error single-quoted.
fn exchange(request: &HostRequest, response: Result<&Value, &str>) -> Result<String> {
    let indent = |text: &str, by: usize| -> String {
        text.lines()
            .map(|line| format!("{}{line}\n", " ".repeat(by)))
            .collect()
    };
    let mut out = String::from("- type: Exchange\n  request: |\n");
    out.push_str(&indent(&serde_yaml::to_string(request)?, 4));
    out.push_str("  response:\n");
    match response {
        Ok(payload) => {
            out.push_str("    type: Success\n    payload: |\n");
            out.push_str(&indent(&serde_json::to_string_pretty(payload)?, 6));
        }
        // Single-quoted YAML folds line breaks into spaces: a message of
        // several lines is written double-quoted, as a JSON string (valid
        // YAML), so that its line breaks reach the policy.
        Err(message) if message.contains('\n') => {
            out.push_str("    type: Error\n");
            out.push_str(&format!(
                "    message: {}\n",
                serde_json::to_string(message)?
            ));
        }
        Err(message) => {
            out.push_str("    type: Error\n");
            out.push_str(&format!("    message: '{}'\n", message.replace('\'', "''")));
        }
    }
    Ok(out)
}

/// The session file's text.
pub fn render(file: &SessionFile) -> Result<String> {
    let prefix = LabelPrefix::default();
    let mut out = String::new();
    for line in file.about.lines() {
        out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    let (source, what) = match file.list {
        ListAnswer::Binding(_) => ("binding_sessions.rs", "binding"),
        _ => ("fleets/", "fleet"),
    };
    out.push_str(&format!("# GENERATED by `cargo run -p e2e-tests --bin sessions` from e2e-tests/src/{source}:\n# edit the {what} there. kwctl replay format (`kwctl run --replay-host-capabilities-interactions`).\n"));
    let listed = match &file.list {
        ListAnswer::Nodes(groups) => Some(node_items(groups, &prefix)),
        _ => None,
    };
    let summary = match &file.summary {
        SummaryAnswer::NotAsked => None,
        SummaryAnswer::Absent => Some(Err(SUMMARY_NOT_FOUND)),
        SummaryAnswer::Error(message) => Some(Err(*message)),
        SummaryAnswer::OfTheList(at) => Some(Ok(summary_config_map(
            listed.as_deref().unwrap_or_default(),
            *at,
            &prefix,
        ))),
        SummaryAnswer::Of(groups, at) => Some(Ok(summary_config_map(
            &node_items(groups, &prefix),
            *at,
            &prefix,
        ))),
        SummaryAnswer::OfWithDra(groups, at, fleet) => {
            let mut config_map = summary_config_map(&node_items(groups, &prefix), *at, &prefix);
            let classes = crate::dra_fleets::device_class_list(fleet)?;
            crate::dra_fleets::add_to_summary(&mut config_map, fleet, &classes)?;
            Some(Ok(config_map))
        }
    };
    // A claim asks for the summary after the claims a pod names (below).
    if let (Some(answer), false) = (&summary, matches!(file.list, ListAnswer::Dra(_))) {
        out.push_str(&exchange(
            &summary_request(),
            answer.as_ref().map_err(|e| *e),
        )?);
    }
    match (&file.list, listed) {
        (ListAnswer::Nodes(_), Some(items)) => {
            out.push_str(&exchange(&list_request(&prefix), Ok(&node_list(items)))?);
        }
        (ListAnswer::Error(message), _) => {
            out.push_str(&exchange(&list_request(&prefix), Err(message))?);
        }
        (ListAnswer::Dra(fleet), _) => {
            use crate::dra_fleets as dra;
            for get in &fleet.gets {
                out.push_str(&exchange(&get.request(), Ok(&get.answer()?))?);
            }
            let classes = dra::device_class_list(fleet)?;
            // The summary first: with the DRA devices and their classes, as
            // the summarizer writes them for this fleet, nothing is listed.
            if let SummaryAnswer::OfTheList(at) = &file.summary {
                let mut config_map = summary_config_map(&[], *at, &prefix);
                dra::add_to_summary(&mut config_map, fleet, &classes)?;
                out.push_str(&exchange(&summary_request(), Ok(&config_map))?);
            } else {
                if let Some(answer) = &summary {
                    out.push_str(&exchange(
                        &summary_request(),
                        answer.as_ref().map_err(|e| *e),
                    )?);
                }
                out.push_str(&exchange(&dra::device_class_request(), Ok(&classes))?);
                out.push_str(&exchange(
                    &dra::resource_slice_request(),
                    Ok(&dra::resource_slice_list(fleet)),
                )?);
            }
            for pod in &fleet.pods {
                out.push_str(&exchange(&pod.request(), Ok(&pod.answer()?))?);
            }
        }
        (ListAnswer::Binding(reads), _) => {
            for (request, response) in reads.exchanges(&prefix)? {
                out.push_str(&exchange(
                    &request,
                    response.as_ref().map_err(String::as_str),
                )?);
            }
        }
        _ => {}
    }
    Ok(out)
}
