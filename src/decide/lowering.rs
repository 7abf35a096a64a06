//! Defaults lowered to fit (`qos.mode: mutate`): when the configured
//! per-GPU default (`qos.cpuPerGpu`, `qos.memoryPerGpu`) makes the kubelet
//! of some node group refuse a pod that a smaller default would let it
//! take, the default is lowered for this pod, never raised, to the value
//! that lets the most nodes take it (ties: the larger value).
//!
//! Candidates: the configured default and, for each group that refuses
//! with it, the largest value at most it that the group takes, found with
//! the kubelet model. The values a kubelet takes form an interval: too
//! many CPUs or too much memory for the NUMA nodes are refused, and under
//! `restricted` so are too few to span the NUMA nodes the GPUs need (its
//! merged hint must be preferred by every resource). So the search halves
//! the default until the group takes the pod, then bisects between that
//! value and the default for the largest one (SMT rounding keeps the CPU
//! counts tried multiples the node allocates). Values below one CPU or
//! 1 GiB per GPU are not tried: a GPU process needs more. CPU is lowered
//! first, then memory with the CPU chosen.
//!
//! Cost: the search runs only when a group refuses for a reason CPUs or
//! memory can cause and some GPU container takes the default; each try is
//! one QoS plan and one model answer per group.

use crate::decide::explain::{kubelets_take_it, nodes};
use crate::decide::model::Need;
use crate::decide::model::{self, GroupVerdict};
use crate::decide::qos::{self, Reason, Resource, Target};
use crate::decide::PodInput;
use crate::request::quantity::Quantity;
use crate::settings::{Config, QosConfig, QosMode};
use gpu_topology::kubelet::Refusal;
use serde_json::Value;

/// The lowest default per GPU the search tries: one CPU, 1 GiB.
const CPU_FLOOR_UNITS: u64 = 1;
const MEMORY_FLOOR_BYTES: u64 = 1 << 30;
/// Memory defaults are searched in whole MiB.
const MIB: u64 = 1 << 20;

/// A lowered QoS configuration for this pod, and the warning that says so.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    pub qos: QosConfig,
    pub warning: String,
}

/// The defaults this pod is planned with instead of the configured ones,
/// when lowering one lets more nodes take it; `None` otherwise.
pub fn lower_defaults(
    spec: &Value,
    input: &PodInput,
    config: &Config,
    multiple: u64,
    verdicts: &[GroupVerdict],
) -> Option<Lowered> {
    if config.qos.mode != QosMode::Mutate || !verdicts.iter().any(refused_for_resources) {
        return None;
    }
    let plan = qos::plan(spec, &input.demand.pod, &config.qos, multiple).ok()?;
    let search = Search::new(spec, input, config, multiple, verdicts);
    let mut qos = config.qos.clone();
    let mut words = Vec::new();
    for resource in Resource::ALL {
        let defaulted = plan.findings.iter().any(|finding| {
            finding.resource == resource
                && finding.reasons.contains(&Reason::NotSet)
                && matches!(&finding.target, Target::Container(c) if input.demand.pod.gpus_of(c) > 0)
        });
        if !defaulted {
            continue;
        }
        if let Some((from, to, taken_before, taken_after)) = search.lower(&qos, resource) {
            set_default(&mut qos, resource, to);
            words.push(format!(
                "{} lowered from {from} to {to} per GPU for this pod: with {from}, {}; with {to}, {}",
                setting(resource),
                kubelets_take_it(taken_before),
                nodes(taken_after)
            ));
        }
    }
    (!words.is_empty()).then(|| Lowered {
        qos,
        warning: words.join("; "),
    })
}

/// A refusal fewer CPUs or less memory could lift. Not too few GPUs, a
/// kubelet that does not start, nor a hint search too slow: the device
/// hints alone walk their masks whatever the CPUs, and fewer CPUs or less
/// memory fit more masks, so their hint lists only grow.
fn refused_for_resources(verdict: &GroupVerdict) -> bool {
    match &verdict.answer {
        model::Answer::Refuse(refusal) => liftable(refusal),
        _ => false,
    }
}

fn liftable(refusal: &Refusal) -> bool {
    !matches!(
        refusal,
        Refusal::Insufficient { .. }
            | Refusal::KubeletNotStarted(_)
            | Refusal::HintSearchTooSlow { .. }
    )
}

fn setting(resource: Resource) -> &'static str {
    match resource {
        Resource::Cpu => "qos.cpuPerGpu",
        Resource::Memory => "qos.memoryPerGpu",
    }
}

fn default_of(qos: &QosConfig, resource: Resource) -> Option<Quantity> {
    match resource {
        Resource::Cpu => qos.cpu_per_gpu,
        Resource::Memory => qos.memory_per_gpu,
    }
}

fn set_default(qos: &mut QosConfig, resource: Resource, value: Quantity) {
    match resource {
        Resource::Cpu => qos.cpu_per_gpu = Some(value),
        Resource::Memory => qos.memory_per_gpu = Some(value),
    }
}

/// What a search over QoS plans reads: the pod, the fleet's verdicts on
/// it as first planned, and what a group must do to take it. Also used by
/// [`rounding`](crate::decide::rounding).
pub(crate) struct Search<'a, 'f> {
    spec: &'a Value,
    input: &'a PodInput<'a>,
    multiple: u64,
    verdicts: &'a [GroupVerdict<'f>],
    need: Need,
}

impl<'a, 'f> Search<'a, 'f> {
    pub(crate) fn new(
        spec: &'a Value,
        input: &'a PodInput<'a>,
        config: &Config,
        multiple: u64,
        verdicts: &'a [GroupVerdict<'f>],
    ) -> Self {
        Search {
            spec,
            input,
            multiple,
            verdicts,
            need: Need::for_pod(config),
        }
    }

    /// For each group, whether it takes the pod planned with `qos`; `None`
    /// when such a plan cannot be made or read.
    pub(crate) fn taking(&self, qos: &QosConfig) -> Option<Vec<bool>> {
        let plan = qos::plan(self.spec, &self.input.demand.pod, qos, self.multiple).ok()?;
        if !plan.problems.is_empty() {
            return None;
        }
        let mut planned = self.spec.clone();
        qos::apply(&mut planned, &plan.edits).ok()?;
        let pod = model::model_pod(&planned, &self.input.demand.pod).ok()?;
        Some(
            self.verdicts
                .iter()
                .map(|v| {
                    let (answer, _) = model::answer(&v.facts, &pod);
                    v.takes_as(&answer, self.need, &self.input.demand.pod)
                })
                .collect(),
        )
    }

    /// The nodes of the groups that take it (`taking`, as [`Search::taking`]).
    pub(crate) fn nodes_taking(&self, taking: &[bool]) -> u32 {
        self.verdicts
            .iter()
            .zip(taking)
            .filter(|(_, takes)| **takes)
            .map(|(v, _)| v.nodes())
            .sum()
    }

    /// The lowered default of `resource` and the nodes taking the pod
    /// before and after, when lowering helps.
    fn lower(&self, qos: &QosConfig, resource: Resource) -> Option<(Quantity, Quantity, u32, u32)> {
        let configured = default_of(qos, resource)?;
        // Candidates are whole CPUs, or whole MiB of memory.
        let (unit, floor) = match resource {
            Resource::Cpu => (1, CPU_FLOOR_UNITS),
            Resource::Memory => (MIB, MEMORY_FLOOR_BYTES / MIB),
        };
        let value = |units: u64| match resource {
            Resource::Cpu => Quantity::from_units(units),
            Resource::Memory => Quantity::binary_units(units.saturating_mul(unit)),
        };
        // The largest candidate at most the configured value.
        let mut top = configured.ceil_whole_units() / unit;
        if value(top) > configured {
            top = top.saturating_sub(1);
        }
        if top < floor {
            return None;
        }
        let with = |units: u64| {
            let mut lowered = qos.clone();
            set_default(&mut lowered, resource, value(units));
            self.taking(&lowered)
        };
        let before = self.taking(qos)?;
        let takes = |units: u64, index: usize| {
            with(units).is_some_and(|t| t.get(index).copied().unwrap_or(false))
        };
        let mut candidates: Vec<u64> = Vec::new();
        for (index, took) in before.iter().enumerate() {
            if *took {
                continue;
            }
            // Halve until the group takes it (a value inside its interval).
            let mut probe = top;
            let inside = loop {
                if takes(probe, index) {
                    break Some(probe);
                }
                if probe == floor {
                    break None;
                }
                probe = (probe / 2).max(floor);
            };
            let Some(mut low) = inside else { continue };
            // Invariant: the group takes it at `low` and not above `high`.
            let mut high = top;
            while low < high {
                let mid = low + (high - low).div_ceil(2);
                if takes(mid, index) {
                    low = mid;
                } else {
                    high = mid - 1;
                }
            }
            candidates.push(low);
        }
        let before_nodes = self.nodes_taking(&before);
        let mut best: Option<(u32, u64)> = None;
        for &candidate in &candidates {
            let taking = with(candidate)?;
            let count = self.nodes_taking(&taking);
            best = match best {
                Some((nodes, units)) if nodes > count || (nodes == count && units >= candidate) => {
                    Some((nodes, units))
                }
                _ => Some((count, candidate)),
            };
        }
        let (after_nodes, units) = best?;
        (after_nodes > before_nodes).then(|| (configured, value(units), before_nodes, after_nodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::testing::{hgx, node, on_first_plan, HGX, KUBELET};
    use gpu_topology::NodeTopology;
    use rstest::rstest;
    use serde_json::json;

    /// HGX nodes with the static Memory Manager on single-numa-node: 503
    /// GiB (515,000 MiB) and 516,024 MiB of allocatable memory per NUMA node.
    fn memory_pinning() -> NodeTopology {
        let labels = format!("{HGX} {KUBELET} topology-manager-policy=single-numa-node")
            .replace("memory-manager-policy=none", "memory-manager-policy=static")
            .replace(
                "numa-memory-mib=1031168.1031168",
                "numa-memory-mib=515000.516024",
            );
        node(&labels)
    }

    #[rstest]
    #[case::topology_affinity(Refusal::TopologyAffinity { container: None }, true)]
    #[case::too_few_gpus(
        Refusal::Insufficient { resource: gpu_topology::kubelet::Resource::Gpu, requested: 16, capacity: 8 },
        false
    )]
    #[case::kubelet_not_started(
        Refusal::KubeletNotStarted(gpu_topology::kubelet::StartupError::TooManyNumaNodes { numa_nodes: 34, max_allowable: 8 }),
        false
    )]
    #[case::hint_search_too_slow(
        Refusal::HintSearchTooSlow { container: Some(0), masks: 17_179_869_186, permutations: 4 },
        false
    )]
    fn only_refusals_fewer_cpus_or_less_memory_can_lift_start_the_search(
        #[case] refusal: Refusal,
        #[case] searched: bool,
    ) {
        assert_eq!(liftable(&refusal), searched);
    }

    /// The defaults a pod is planned with, as the pipeline asks.
    fn lowered(spec: Value, groups: Vec<(NodeTopology, u32)>, settings: Value) -> Option<Lowered> {
        on_first_plan(
            &spec,
            groups,
            settings,
            |input, config, multiple, verdicts| {
                lower_defaults(&spec, input, config, multiple, verdicts)
            },
        )
    }

    fn gpus_only(gpus: u32) -> Value {
        json!({"containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}]})
    }

    /// (pod, groups, settings, lowered cpuPerGpu and memoryPerGpu, or `None`
    /// for no lowering)
    #[rstest]
    // 8 x 16 = 128 CPUs are more than the 110 the two NUMA nodes leave
    // free; 8 x 1 = 8 fit one NUMA node, which restricted refuses as the
    // GPUs need two. 8 x 13 = 104 span both: the largest default that fits.
    #[case::restricted_cpus_between_the_bounds(gpus_only(8), vec![(hgx("restricted"), 10)],
        json!({"qos": {"cpuPerGpu": "16"}}), Some(("13", "16Gi")))]
    // 4 x 256Gi is more than a NUMA node's memory: 516,024 MiB / 4 per GPU
    // fits NUMA node 1 exactly.
    #[case::pinned_memory_within_one_numa_node(gpus_only(4), vec![(memory_pinning(), 2)],
        json!({"qos": {"memoryPerGpu": "256Gi"}}), Some(("4", "129006Mi")))]
    // The author's own values are never lowered.
    #[case::written_by_the_author(crate::decide::testing::pod(8, 128), vec![(hgx("restricted"), 10)], json!({}), None)]
    // GPUs alone decide: no default helps.
    #[case::refused_for_the_gpus(gpus_only(8), vec![(hgx("single-numa-node"), 10)], json!({}), None)]
    #[case::validate_mode_writes_nothing(gpus_only(8), vec![(hgx("restricted"), 10)],
        json!({"qos": {"mode": "validate", "cpuPerGpu": "16"}}), None)]
    // Another shape admits it as configured: lowering must let more nodes in.
    #[case::more_nodes_only(gpus_only(8), vec![(hgx("restricted"), 2), (hgx("best-effort"), 10)],
        json!({"qos": {"cpuPerGpu": "16"}}), Some(("13", "16Gi")))]
    fn defaults_are_lowered_to_fit(
        #[case] spec: Value,
        #[case] groups: Vec<(NodeTopology, u32)>,
        #[case] settings: Value,
        #[case] expected: Option<(&str, &str)>,
    ) {
        let lowered = lowered(spec, groups, settings);
        let values = lowered.as_ref().map(|l| {
            (
                l.qos.cpu_per_gpu.map(|q| q.canonical()).unwrap_or_default(),
                l.qos
                    .memory_per_gpu
                    .map(|q| q.canonical())
                    .unwrap_or_default(),
            )
        });
        assert_eq!(
            values,
            expected.map(|(cpu, memory)| (cpu.to_owned(), memory.to_owned())),
            "{lowered:?}"
        );
    }

    /// The nodes that take the pod before and after lowering, for 0, 1
    /// and several (issue #23): one kubelet, or the kubelets of 0 or more.
    #[rstest]
    #[case::zero_nodes(0, "the kubelets of 0 nodes take it", "0 nodes")]
    #[case::one_node(1, "the kubelet of 1 node takes it", "1 node")]
    #[case::several_nodes(10, "the kubelets of 10 nodes take it", "10 nodes")]
    fn the_nodes_taken_agree_in_number(
        #[case] count: u32,
        #[case] before: &str,
        #[case] after: &str,
    ) {
        assert_eq!(kubelets_take_it(count), before);
        assert_eq!(nodes(count), after);
    }

    #[test]
    fn the_warning_names_the_setting_and_the_nodes() {
        let lowered = lowered(
            gpus_only(8),
            vec![(hgx("restricted"), 10)],
            json!({"qos": {"cpuPerGpu": "16"}}),
        )
        .unwrap();
        assert_eq!(
            lowered.warning,
            "qos.cpuPerGpu lowered from 16 to 13 per GPU for this pod: with 16, the kubelets of 0 nodes take it; with 13, 10 nodes"
        );
    }
}
