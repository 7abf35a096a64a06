//! Node shapes and pods the decision's unit tests share, written as the
//! labeler labels nodes (through the contract, with their shape).

use crate::cluster::host::ClusterReader;
use crate::cluster::{ClusterRead, ClusterView};
use crate::decide::input::PodInput;
use crate::decide::model::{self, GroupVerdict};
use crate::decide::{fit, qos};
use crate::settings::FleetSources;
use crate::settings::{settings_from_value, Config};
use gpu_topology::{Fleet, LabelPrefix, NodeTopology};
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::{json, Value};
use std::cell::Cell;
use std::thread::LocalKey;

/// The kubelet facts every test shape shares (an empty-ish SMT-2 HGX
/// kubelet with the static CPU Manager), as labels.
pub(crate) const KUBELET: &str = "topology-manager-scope=pod cpu-manager-policy=static threads-per-core=2 memory-manager-policy=none topology-manager-prefer-closest-numa-nodes=false topology-manager-max-allowable-numa-nodes=8 cpu-manager-full-pcpus-only=false cpu-manager-distribute-cpus-across-numa=false cpu-manager-align-by-socket=false";
/// HGX: 8 GPUs, 4 + 4 on two NUMA nodes of 56 CPUs, 2 reserved on core 0.
pub(crate) const HGX: &str = "gpus=8 gpus-per-numa-max=4 nvlink-group-max=8 numa-gpus=4.4 numa-cpus=56.56 numa-reserved-cpus=2.0 numa-reserved-cores=1.0 numa-sockets=0.1 numa-memory-mib=1031168.1031168 numa-hugepages-2mi=0.0 numa-hugepages-1gi=0.0";
/// 4 L4 GPUs on one NUMA node, no Topology or CPU Manager.
pub(crate) const L4: &str = "gpus=4 gpus-per-numa-max=4 nvlink-group-max=1 numa-gpus=4 numa-cpus=48 numa-sockets=0 threads-per-core=2 numa-memory-mib=190000 numa-hugepages-2mi=0 numa-hugepages-1gi=0 topology-manager-policy=none topology-manager-scope=container cpu-manager-policy=none memory-manager-policy=none topology-manager-prefer-closest-numa-nodes=false topology-manager-max-allowable-numa-nodes=8 cpu-manager-full-pcpus-only=false cpu-manager-distribute-cpus-across-numa=false cpu-manager-align-by-socket=false";
/// A labeler older than the policy: counts only, no facts, no shape.
pub(crate) const OLD: &str =
    "gpus=8 gpus-per-numa-max=4 nvlink-group-max=8 topology-manager-policy=best-effort";

/// A node from `name=value` labels read through the contract, with its
/// shape as the labeler sets it (none for [`OLD`]).
pub(crate) fn node(labels: &str) -> NodeTopology {
    let prefix = LabelPrefix::default();
    let full: Vec<(String, &str)> = labels
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (format!("{prefix}/{name}"), value))
        .collect();
    let topology =
        NodeTopology::from_labels(&prefix, full.iter().map(|(k, v)| (k.as_str(), *v))).unwrap();
    if labels == OLD {
        topology
    } else {
        topology.with_shape()
    }
}

pub(crate) fn hgx(policy: &str) -> NodeTopology {
    node(&format!("{HGX} {KUBELET} topology-manager-policy={policy}"))
}

/// [`hgx`] whose static CPU Manager runs `full-pcpus-only`.
pub(crate) fn hgx_full_pcpus_only(policy: &str) -> NodeTopology {
    let kubelet = KUBELET.replace(
        "cpu-manager-full-pcpus-only=false",
        "cpu-manager-full-pcpus-only=true",
    );
    node(&format!("{HGX} {kubelet} topology-manager-policy={policy}"))
}

pub(crate) fn l4() -> NodeTopology {
    node(L4)
}

pub(crate) fn view(groups: Vec<(NodeTopology, u32)>) -> ClusterView {
    let mut fleet = Fleet::new();
    for (topology, nodes) in groups {
        fleet.add_nodes(topology, nodes);
    }
    ClusterView {
        fleet,
        from_node_list: true,
        ..ClusterView::default()
    }
}

/// One app container with `gpus` GPUs and `cpus` whole CPUs, Guaranteed.
pub(crate) fn pod(gpus: u32, cpus: u32) -> Value {
    json!({"containers": [{"name": "train", "resources": {"limits": {
        "nvidia.com/gpu": gpus.to_string(), "cpu": cpus.to_string(), "memory": "64Gi"}}}]})
}

/// A cluster whose view is already read: the pipeline asks it first
/// ([`ClusterReader::remembered_read`]) and never calls the host.
pub(crate) struct Remembered(pub ClusterView);

impl ClusterReader for Remembered {
    fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        Err("no host in these tests".to_owned())
    }

    fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
        Err("no host in these tests".to_owned())
    }

    fn remembered_read(
        &self,
        _: &FleetSources,
        _: &LabelPrefix,
        _: Option<&str>,
    ) -> Option<ClusterRead> {
        Some(ClusterRead {
            view: Ok(self.0.clone()),
            summary_passed_over: None,
        })
    }
}

/// HGX nodes whose static Memory Manager pins memory under
/// `single-numa-node` and container scope, `index` MiB less memory on NUMA
/// node 0 and more on NUMA node 1 than [`HGX`]: each index is a shape of
/// its own, as exact MiB made of identical machines.
pub(crate) fn hgx_memory_jitter(index: u32) -> NodeTopology {
    let labels = format!("{HGX} {KUBELET} topology-manager-policy=single-numa-node")
        .replace(
            "topology-manager-scope=pod",
            "topology-manager-scope=container",
        )
        .replace("memory-manager-policy=none", "memory-manager-policy=static")
        .replace(
            "numa-memory-mib=1031168.1031168",
            &format!(
                "numa-memory-mib={}.{}",
                1_031_168 - index,
                1_031_168 + index
            ),
        );
    node(&labels)
}

/// Two GPU containers, 4 and 2 GPUs, that set no CPU or memory: the
/// configured defaults decide both.
pub(crate) fn four_and_two_gpus() -> Value {
    json!({"containers": [
        {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "4"}}},
        {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]})
}

pub(crate) fn config(settings: Value) -> Config {
    settings_from_value(settings).unwrap().config().unwrap()
}

/// The GPU pod `spec` as the pipeline first plans it on `groups` under
/// `settings`: `then` gets its input, the config, the fleet's CPU multiple
/// and the verdicts on that plan (what lowering and rounding start from).
pub(crate) fn on_first_plan<T>(
    spec: &Value,
    groups: Vec<(NodeTopology, u32)>,
    settings: Value,
    then: impl FnOnce(&PodInput, &Config, u64, &[GroupVerdict]) -> T,
) -> T {
    let config = config(settings);
    let input = PodInput::read(spec, &config).unwrap().unwrap();
    let view = view(groups);
    let multiple = model::cpu_multiple(&view.fleet);
    let plan = qos::plan(spec, &input.demand.pod, &config.qos, multiple).unwrap();
    let mut planned = spec.clone();
    qos::apply(&mut planned, &plan.edits).unwrap();
    let verdicts = fit::verdicts(&view.fleet, &planned, &input, &config).unwrap();
    then(&input, &config, multiple, &verdicts)
}

thread_local! {
    /// The fleet's verdicts built ([`model::verdicts`]), on this thread.
    pub(crate) static VERDICTS: Cell<usize> = const { Cell::new(0) };
    /// A verdict worded ([`crate::decide::explain::why_and_fix`]), on this thread.
    pub(crate) static WHY_AND_FIX: Cell<usize> = const { Cell::new(0) };
}

/// One more run of the stage `counter` counts: the tests that check each
/// stage runs once per admission read these.
pub(crate) fn count(counter: &'static LocalKey<Cell<usize>>) {
    counter.with(|runs| runs.set(runs.get() + 1));
}

/// The runs `counter` counted on this thread since the last call, and zero again.
pub(crate) fn runs(counter: &'static LocalKey<Cell<usize>>) -> usize {
    counter.with(|runs| runs.replace(0))
}
