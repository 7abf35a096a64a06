//! Refusals come before unknowns (issue #23 item 0): a label more can only
//! tell the model more, so removing any one label from a node the labeler
//! published never turns a refusal into an admission, and the refusals
//! whose facts are all still there stay refusals.
//!
//! Nodes are generated as the labeler publishes them (every per-NUMA list,
//! the counts derived from them, every kubelet option), read back through
//! the label contract with one label left out.

use gpu_topology::kubelet::{
    admit, facts_from_topology, ContainerDemand, ContainerKind, PodDemand, Refusal, Resource,
    Verdict,
};
use gpu_topology::{
    CpuManagerPolicy, LabelKey, LabelPrefix, MemoryManagerPolicy, NodeTopology,
    TopologyManagerPolicy, TopologyManagerScope,
};
use proptest::prelude::*;
use proptest::sample::select;

const GIB: u64 = 1 << 30;

/// One NUMA node: GPUs, cores, reserved CPUs, memory (MiB), 1Gi pages.
type Numa = (u32, u32, u32, u32, u32);

fn numa() -> impl Strategy<Value = Numa> {
    (0u32..=4, 1u32..=16, 0u32..=2, 4096u32..=262_144, 0u32..=2)
}

fn node() -> impl Strategy<Value = NodeTopology> {
    (
        proptest::collection::vec(numa(), 1..=4),
        select(vec![1u32, 2]),
        select(vec![
            TopologyManagerPolicy::None,
            TopologyManagerPolicy::BestEffort,
            TopologyManagerPolicy::Restricted,
            TopologyManagerPolicy::SingleNumaNode,
        ]),
        select(vec![
            TopologyManagerScope::Pod,
            TopologyManagerScope::Container,
        ]),
        select(vec![CpuManagerPolicy::None, CpuManagerPolicy::Static]),
        select(vec![MemoryManagerPolicy::None, MemoryManagerPolicy::Static]),
        any::<bool>(),
    )
        .prop_map(|(numas, threads, tm, scope, cpu, memory, full)| {
            let static_cpu = cpu == CpuManagerPolicy::Static;
            let list = |f: &dyn Fn(&Numa) -> u32| numas.iter().map(f).collect::<Vec<u32>>();
            // The static CPU Manager needs reserved CPUs: one at least.
            let reserved = |n: &Numa| {
                if static_cpu {
                    (n.2 * threads).min(n.1 * threads)
                } else {
                    0
                }
            };
            let mut reserved_cpus = list(&reserved);
            if static_cpu && reserved_cpus.iter().all(|&r| r == 0) {
                reserved_cpus[0] = threads;
            }
            let reserved_cores: Vec<u32> = reserved_cpus.iter().map(|r| r / threads).collect();
            let gpus = list(&|n| n.0);
            NodeTopology {
                gpus: Some(gpus.iter().sum()),
                gpus_per_numa_max: gpus.iter().copied().max(),
                numa_nodes: Some(gpus.iter().filter(|&&g| g > 0).count() as u32),
                cpus_per_numa: numas.iter().map(|n| n.1 * threads).min(),
                topology_manager_policy: Some(tm),
                topology_manager_scope: Some(scope),
                cpu_manager_policy: Some(cpu),
                numa_gpus: Some(gpus),
                numa_cpus: Some(list(&|n| n.1 * threads)),
                numa_reserved_cpus: static_cpu.then_some(reserved_cpus),
                numa_reserved_cores: (static_cpu && threads > 1).then_some(reserved_cores),
                numa_sockets: Some((0..numas.len() as u32).collect()),
                threads_per_core: Some(threads),
                numa_memory_mib: Some(list(&|n| n.3)),
                numa_hugepages_2mi: Some(list(&|_| 0)),
                numa_hugepages_1gi: Some(list(&|n| n.4)),
                memory_manager_policy: Some(memory),
                prefer_closest_numa_nodes: Some(false),
                max_allowable_numa_nodes: Some(8),
                full_pcpus_only: Some(full),
                distribute_cpus_across_numa: Some(false),
                align_by_socket: Some(false),
                ..NodeTopology::default()
            }
            .with_shape()
        })
}

fn container(kind: ContainerKind) -> impl Strategy<Value = ContainerDemand> {
    (
        prop_oneof![1 => Just(None), 6 => (0u32..=4).prop_map(Some), 1 => (5u32..=10).prop_map(Some)],
        prop_oneof![6 => (0u64..=12).prop_map(|c| c * 1000), 1 => (13u64..=80).prop_map(|c| c * 1000), 1 => Just(1500u64)],
        prop_oneof![6 => 1u64..=32, 1 => 256u64..=1024],
        prop_oneof![4 => Just(0u64), 1 => Just(GIB)],
    )
        .prop_map(move |(gpus, cpu_millis, memory_gib, hp1)| ContainerDemand {
            kind,
            gpus,
            cpu_millis,
            memory_bytes: memory_gib * GIB,
            hugepages_1gi_bytes: hp1,
            ..ContainerDemand::default()
        })
}

fn pod() -> impl Strategy<Value = PodDemand> {
    (
        prop_oneof![3 => Just(vec![]), 1 => Just(vec![ContainerKind::Init])],
        1usize..=2,
        prop_oneof![1 => Just(false), 3 => Just(true)],
    )
        .prop_flat_map(|(inits, apps, guaranteed)| {
            let kinds: Vec<ContainerKind> = inits
                .into_iter()
                .chain(std::iter::repeat_n(ContainerKind::App, apps))
                .collect();
            let containers: Vec<_> = kinds.into_iter().map(container).collect();
            (containers, Just(guaranteed))
        })
        .prop_map(|(containers, guaranteed)| PodDemand {
            containers,
            guaranteed,
            pod_level_resources: false,
            devices: Vec::new(),
        })
}

/// The labels a refusal of this kind reads: with all of them still
/// published, the refusal stands (the label left out is another). The
/// node's GPUs are published twice (the list and `gpus`): either decides.
fn facts_of(refusal: &Refusal) -> Option<Vec<LabelKey>> {
    match refusal {
        Refusal::Insufficient {
            resource: Resource::Gpu,
            ..
        } => Some(vec![]),
        Refusal::NodeTooSmall {
            resource: Resource::Cpu,
            ..
        } => Some(vec![
            LabelKey::NumaCpus,
            LabelKey::NumaReservedCpus,
            LabelKey::CpuManagerPolicy,
        ]),
        Refusal::NodeTooSmall { .. } => Some(vec![
            LabelKey::NumaMemoryMib,
            LabelKey::NumaHugepages2Mi,
            LabelKey::NumaHugepages1Gi,
        ]),
        Refusal::SmtAlignment {
            available_physical_cpus: None,
            ..
        } => Some(vec![
            LabelKey::CpuManagerPolicy,
            LabelKey::CpuManagerFullPcpusOnly,
            LabelKey::ThreadsPerCore,
        ]),
        _ => None,
    }
}

/// `single-numa-node` and a container with more GPUs than any NUMA node:
/// refused on the policy and the GPU counts alone.
fn too_wide_for_single_numa_node(node: &NodeTopology, pod: &PodDemand) -> bool {
    node.topology_manager_policy == Some(TopologyManagerPolicy::SingleNumaNode)
        && pod
            .containers
            .iter()
            .any(|c| c.gpus.unwrap_or(0) > node.gpus_per_numa_max.unwrap_or(u32::MAX))
}

/// The GPU counts are published twice (the list and `gpus-per-numa-max`):
/// either decides.
const SINGLE_NUMA_NODE_FACTS: [LabelKey; 1] = [LabelKey::TopologyManagerPolicy];

fn without(node: &NodeTopology, key: LabelKey) -> NodeTopology {
    let prefix = LabelPrefix::default();
    let removed = prefix.key(key);
    let labels = node.to_labels(&prefix);
    NodeTopology::from_labels(
        &prefix,
        labels
            .iter()
            .filter(|(k, _)| **k != removed)
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .expect("the labeler's labels, one left out, still parse")
}

/// The model's verdict on `node`'s labels, `scope` standing in for an
/// unpublished scope (the `topology.scope` setting, here the fleet's own:
/// a wrong setting is another question).
fn verdict(node: &NodeTopology, pod: &PodDemand, scope: TopologyManagerScope) -> Option<Verdict> {
    let facts = facts_from_topology(node, scope);
    admit(&facts, pod).ok().map(|a| a.verdict)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn removing_a_label_never_turns_a_refusal_into_an_admission(node in node(), pod in pod()) {
        let scope = node.topology_manager_scope.unwrap_or(TopologyManagerScope::Pod);
        let Some(Verdict::Refuse(refusal)) = verdict(&node, &pod, scope) else {
            return Ok(());
        };
        for key in LabelKey::ALL {
            let Some(after) = verdict(&without(&node, key), &pod, scope) else {
                continue;
            };
            prop_assert!(
                !matches!(after, Verdict::Admit { .. }),
                "without {}: {refusal:?} became {after:?}", key.name()
            );
            let kept = |facts: &[LabelKey]| !facts.contains(&key);
            let stands = facts_of(&refusal).is_some_and(|facts| kept(&facts))
                || (too_wide_for_single_numa_node(&node, &pod) && kept(&SINGLE_NUMA_NODE_FACTS));
            if stands {
                prop_assert!(
                    matches!(after, Verdict::Refuse(_)),
                    "without {}: {refusal:?} became {after:?}", key.name()
                );
            }
        }
    }
}
