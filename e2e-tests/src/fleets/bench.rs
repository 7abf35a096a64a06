//! The large fleets the benchmarks and the instruction counts run on, as
//! Node list items: a cloud fleet of mixed machines, Grace trays, and
//! fleets made to stress the caps (every node a shape of its own, the
//! most NUMA nodes per shape, labels claiming 1,000 NUMA nodes). Split
//! from `fleets.rs` so each file stays short (issue #36).

use super::machines::{
    a100_pcie, four_pcie, g5_2xlarge, gb200_tray, gh200, hgx_a100, p5, topology, Hardware, Kubelet,
    Machine,
};
use super::node_item;
use gpu_topology::TopologyManagerPolicy::{BestEffort, SingleNumaNode};
use gpu_topology::TopologyManagerScope::{Container, Pod};
use gpu_topology::{Interconnect, KubeletVersion, LabelPrefix};
use serde_json::Value;

/// The machine types of a large cloud fleet (the fleet benchmark's), and
/// which one node `i` is: `CLOUD_CYCLE[i % 20]`, 40% p5 on single-numa-node,
/// 10% p5 on best-effort, 30% 4 x L4, 15% 1 x A10G, 5% 4 x A100 PCIe.
pub fn cloud_machines() -> Vec<Machine> {
    vec![
        p5(Kubelet::cpu_static(SingleNumaNode, Pod)),
        p5(Kubelet::cpu_static(BestEffort, Pod)),
        four_pcie(
            "g6.12xlarge",
            "NVIDIA-L4",
            Kubelet::cpu_static(BestEffort, Pod),
        ),
        g5_2xlarge(Kubelet::NONE),
        a100_pcie(Kubelet::cpu_static(BestEffort, Pod)),
    ]
}

/// Index into [`cloud_machines`] of each of 20 consecutive nodes.
pub const CLOUD_CYCLE: [usize; 20] = [0, 2, 0, 3, 2, 0, 1, 2, 0, 3, 0, 2, 4, 0, 2, 3, 1, 0, 2, 0];

/// The fleets the instruction counts compare (`FLEET` of
/// `examples/profile.rs`), by name: `cloud` ([`cloud_fleet`]);
/// `two-socket`, p5 nodes only (2 NUMA nodes, single-numa-node); `gb200`,
/// GB200 trays only (34 NUMA nodes, single-numa-node, kubelet 1.36,
/// `max-allowable-numa-nodes: 34`); `grace-cloud`, the cloud fleet with
/// every fifth node a Grace machine (GB200 trays on 1.36 and on 1.35, a
/// tray whose kubelet keeps the default 8, GH200); `distinct`, every node a
/// shape of its own ([`distinct_shapes_fleet`]); `many-numa`, every node a
/// GB200 tray of its own shape ([`many_numa_nodes_fleet`]); `numa-1000`,
/// trays whose labels claim 1,000 NUMA nodes ([`thousand_numa_nodes_fleet`]).
/// `None` for another name.
pub fn bench_fleet(name: &str, size: usize, prefix: &LabelPrefix) -> Option<Vec<Value>> {
    let v1_36 = KubeletVersion::new(1, 36);
    let one = |machine: Machine| vec![machine];
    let machines = match name {
        "cloud" => return Some(cloud_fleet(size, prefix)),
        "distinct" => return Some(distinct_shapes_fleet(size, size, prefix)),
        "many-numa" => return Some(many_numa_nodes_fleet(size, prefix)),
        "numa-1000" => return Some(thousand_numa_nodes_fleet(size, prefix)),
        "two-socket" => one(p5(Kubelet::cpu_static(SingleNumaNode, Pod))),
        "gb200" => one(gb200_tray(v1_36, 34)),
        "grace-cloud" => {
            let grace = [
                gb200_tray(v1_36, 34),
                gb200_tray(KubeletVersion::new(1, 35), 34),
                gb200_tray(v1_36, 8),
                gh200(v1_36, 34),
            ];
            let cloud = cloud_machines();
            let items = (0..size)
                .map(|index| {
                    let machine = if index % 5 == 4 {
                        &grace[(index / 5) % grace.len()]
                    } else {
                        &cloud[CLOUD_CYCLE[index % CLOUD_CYCLE.len()]]
                    };
                    node_item(index, machine, &[], None, None, prefix)
                })
                .collect();
            return Some(items);
        }
        _ => return None,
    };
    Some(
        (0..size)
            .map(|index| {
                node_item(
                    index,
                    &machines[index % machines.len()],
                    &[],
                    None,
                    None,
                    prefix,
                )
            })
            .collect(),
    )
}

/// An 8-GPU machine whose NUMA nodes have 12 and 14 free CPUs (14 each,
/// two reserved on NUMA node 0, SMT off), under `single-numa-node` and container scope with
/// the static CPU Manager, with `jitter` MiB less memory on NUMA node 0 and
/// more on NUMA node 1 than the others of its type: labeled in exact MiB,
/// as labelers before the whole-GiB contract (or a hostile hand) did,
/// every jitter is a shape of its own. A pod of 4 + 2 GPUs that sets no
/// CPUs gets the default 4 per GPU, which no NUMA node has free for 4
/// GPUs: the lowering search runs on every shape (issue #35).
pub fn cramped_hgx(jitter: u32) -> Machine {
    let mut machine = hgx_a100(Kubelet::cpu_static(SingleNumaNode, Container));
    machine.topology = topology(
        &Hardware {
            numa_gpus: vec![4, 4],
            numa_cpus: vec![14, 14],
            numa_sockets: vec![0, 1],
            threads_per_core: 1,
            numa_memory_mib: vec![515_000 - jitter, 516_024 + jitter],
            nvlink_group_max: 8,
            pcie_switch_group_max: 2,
            interconnect: Interconnect::NvSwitch,
        },
        Kubelet::cpu_static(SingleNumaNode, Container),
        2,
    );
    machine
}

/// `size` nodes of [`cramped_hgx`], `shapes` distinct ones (node `i` has
/// jitter `i % shapes`), as Node list items.
pub fn distinct_shapes_fleet(size: usize, shapes: usize, prefix: &LabelPrefix) -> Vec<Value> {
    (0..size)
        .map(|index| {
            let jitter = u32::try_from(index % shapes.max(1)).unwrap_or(u32::MAX);
            node_item(index, &cramped_hgx(jitter), &[], None, None, prefix)
        })
        .collect()
}

/// `size` GB200 trays (34 NUMA nodes, kubelet 1.36, `max-allowable-numa-nodes:
/// 34`), each a shape of its own: node `i` has `i` MiB less memory on its
/// first NUMA node, as exact MiB of identical machines would publish it.
/// The most NUMA nodes the kubelet model takes per shape, times as many
/// shapes as nodes (issue #35).
pub fn many_numa_nodes_fleet(size: usize, prefix: &LabelPrefix) -> Vec<Value> {
    let tray = gb200_tray(KubeletVersion::new(1, 36), 34);
    (0..size)
        .map(|index| {
            let mut machine = tray.clone();
            let jitter = u32::try_from(index).unwrap_or(u32::MAX);
            if let Some(memory) = machine.topology.numa_memory_mib.as_mut() {
                memory[0] = memory[0].saturating_sub(jitter);
            }
            machine.topology = machine.topology.with_shape();
            node_item(index, &machine, &[], None, None, prefix)
        })
        .collect()
}

/// `size` GB200 trays whose labels claim 1,000 NUMA nodes
/// (`machine-numa-nodes` and `max-allowable-numa-nodes`), more than the
/// 64 a kubelet's NUMA masks hold: hostile or broken labels, which the
/// model answers as unknown without walking them.
pub fn thousand_numa_nodes_fleet(size: usize, prefix: &LabelPrefix) -> Vec<Value> {
    let mut machine = gb200_tray(KubeletVersion::new(1, 36), 34);
    machine.topology.machine_numa_nodes = Some(1_000);
    machine.topology.max_allowable_numa_nodes = Some(1_000);
    machine.topology = machine.topology.with_shape();
    (0..size)
        .map(|index| node_item(index, &machine, &[], None, None, prefix))
        .collect()
}

/// A cloud fleet of `size` nodes ([`cloud_machines`]), as Node list items.
pub fn cloud_fleet(size: usize, prefix: &LabelPrefix) -> Vec<Value> {
    let machines = cloud_machines();
    (0..size)
        .map(|i| {
            node_item(
                i,
                &machines[CLOUD_CYCLE[i % CLOUD_CYCLE.len()]],
                &[],
                None,
                None,
                prefix,
            )
        })
        .collect()
}
