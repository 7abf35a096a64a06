//! The fleet `make demo` replays (`examples/cluster/fleet.yml`) and its
//! Nodes as `kubectl get nodes -o json` prints them
//! (`examples/cluster/nodes.json`). Split from `fleets.rs` so each file
//! stays short (issue #36).

use super::machines::{a100_pcie, four_pcie, g5_2xlarge, hgx_a100, p5, Kubelet};
use super::{node_items, nodes, ListAnswer, SessionFile, SummaryAnswer};
use anyhow::Result;
use gpu_topology::LabelPrefix;
use gpu_topology::TopologyManagerPolicy::{BestEffort, Restricted, SingleNumaNode};
use gpu_topology::TopologyManagerScope::Pod;
use serde_json::{json, Value};

/// Where `make demo` reads its fleet, relative to the repository root.
pub const DEMO_SESSION_PATH: &str = "examples/cluster/fleet.yml";

/// The same fleet's Nodes as `kubectl get nodes -o json` prints them, for
/// `gpu-topology explain --nodes` (docs/cli.md), relative to the root.
pub const DEMO_NODES_PATH: &str = "examples/cluster/nodes.json";

/// The Nodes of [`demo_session_file`]'s fleet as `kubectl get nodes -o
/// json` prints them: a `List` of `Node` objects (pretty JSON).
pub fn demo_nodes_file() -> Result<String> {
    let ListAnswer::Nodes(groups) = demo_session_file().list else {
        anyhow::bail!("the demo fleet lists no Nodes");
    };
    let items: Vec<Value> = node_items(&groups, &LabelPrefix::default())
        .into_iter()
        .map(|mut item| {
            if let Some(node) = item.as_object_mut() {
                node.insert("apiVersion".to_owned(), json!("v1"));
                node.insert("kind".to_owned(), json!("Node"));
            }
            item
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items});
    Ok(serde_json::to_string_pretty(&list)? + "\n")
}

/// The fleet `make demo` replays ([`DEMO_SESSION_PATH`]): a cloud fleet
/// where each example shows one outcome. Its 8-GPU nodes all align (p5 on
/// restricted, HGX A100 on single-numa-node), so a pod whose GPUs span both
/// NUMA nodes but whose CPUs fit one is refused by every kubelet; 4-GPU pods
/// are steered away from the 1-GPU nodes and towards the shapes that align
/// them (not the A100 PCIe, whose 2 GPUs per NUMA node best-effort admits
/// unaligned).
pub fn demo_session_file() -> SessionFile {
    SessionFile {
        name: "fleet",
        about: "The fleet `make demo` replays: 2 p5.48xlarge (8 H100, 4+4 per NUMA node) whose kubelets run\nrestricted, 2 HGX A100 on premises (4+4) on single-numa-node, 3 g6.12xlarge (4 L4, one NUMA\nnode) with the kubelet's default managers, 2 Azure NC96ads A100 v4 (2+2 A100 PCIe) on best-effort\nand 2 g5.2xlarge (1 A10G). No fleet summary (404): the policy lists the Nodes.",
        summary: SummaryAnswer::Absent,
        list: ListAnswer::Nodes(vec![
            nodes(p5(Kubelet::cpu_static(Restricted, Pod)), 2),
            nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
            nodes(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE), 3),
            nodes(a100_pcie(Kubelet::cpu_static(BestEffort, Pod)), 2),
            nodes(g5_2xlarge(Kubelet::NONE), 2),
        ]),
    }
}
