//! Defaults lowered to fit (`qos.mode: mutate`): when the configured
//! per-GPU default (`qos.cpuPerGpu`, `qos.memoryPerGpu`) makes the kubelet
//! of some node group refuse a pod that a smaller default would let it
//! take, the default is lowered for this pod, never raised, to the value
//! that lets the most nodes take it (ties: the larger value).
//!
//! The values a kubelet takes form an interval: too many CPUs or too much
//! memory for the NUMA nodes are refused, and under `restricted` so are
//! too few to span the NUMA nodes the GPUs need (its merged hint must be
//! preferred by every resource). So each distinct set of node facts is
//! searched once for its interval: the search halves the default until the
//! group takes the pod, then bisects above that value for the largest one
//! and below it for the smallest (SMT rounding keeps the CPU counts tried
//! multiples the node allocates). The nodes taking the pod at each
//! interval's top are then counted in one sweep over the sorted intervals,
//! and the best value is checked with one more answer per distinct set of
//! facts. Values below one CPU or 1 GiB per GPU are not tried: a GPU
//! process needs more. CPU is lowered first, then memory with the CPU
//! chosen.
//!
//! Cost: the search runs only when a group refuses for a reason CPUs or
//! memory can cause and some GPU container takes the default. It asks the
//! model O(log(default)) times per distinct set of facts, each answer
//! memoized, so it grows linearly with the fleet's shapes; past
//! [`MAX_SEARCH_ANSWERS`] answers it stops ([`SearchCapped`]) and the pod is
//! decided on the configured defaults.

use crate::decide::adjustment::{
    LoweredDefault, LoweredDefaults, SearchCapped, MAX_SEARCH_ANSWERS,
};
use crate::decide::input::PodInput;
use crate::decide::model::{self, AnswerMemo, GroupVerdict, Need};
use crate::decide::qos::{self, ComputeResource, Reason, Target};
use crate::request::quantity::Quantity;
use crate::settings::{Config, QosConfig, QosMode};
use gpu_topology::hashing::{FastMap, FirstEqual};
use gpu_topology::kubelet::{self, Refusal};
use serde_json::Value;
use std::cell::{Cell, RefCell};

/// The lowest default per GPU the search tries: one CPU, 1 GiB.
const CPU_FLOOR_UNITS: u64 = 1;
const MEMORY_FLOOR_BYTES: u64 = 1 << 30;
/// Memory defaults are searched in whole MiB.
const MIB: u64 = 1 << 20;

/// A lowered QoS configuration for this pod, and what was lowered.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    pub qos: QosConfig,
    pub defaults: LoweredDefaults,
}

/// The defaults this pod is planned with instead of the configured ones,
/// when lowering one lets more nodes take it; `Ok(None)` otherwise, and
/// `Err` when the search stopped at its cap.
pub(crate) fn lower_defaults(
    spec: &Value,
    input: &PodInput,
    config: &Config,
    multiple: u64,
    verdicts: &[GroupVerdict],
    memo: &AnswerMemo,
) -> Result<Option<Lowered>, SearchCapped> {
    lower_defaults_within(
        spec,
        input,
        config,
        multiple,
        verdicts,
        memo,
        MAX_SEARCH_ANSWERS,
    )
}

/// [`lower_defaults`] asking at most `cap` model answers.
fn lower_defaults_within(
    spec: &Value,
    input: &PodInput,
    config: &Config,
    multiple: u64,
    verdicts: &[GroupVerdict],
    memo: &AnswerMemo,
    cap: usize,
) -> Result<Option<Lowered>, SearchCapped> {
    if config.qos.mode != QosMode::Mutate || !verdicts.iter().any(refused_for_resources) {
        return Ok(None);
    }
    let Ok(plan) = qos::plan(spec, &input.demand.pod, &config.qos, multiple) else {
        return Ok(None);
    };
    let search = Search::new(spec, input, config, multiple, verdicts, memo);
    search.answers_left.set(cap);
    let mut qos = config.qos.clone();
    let mut lowered = Vec::new();
    let mut capped = None;
    for resource in ComputeResource::ALL {
        let defaulted = plan.findings.iter().any(|finding| {
            finding.resource == resource
                && finding.reasons.contains(&Reason::NotSet)
                && matches!(&finding.target, Target::Container(c) if input.demand.pod.gpus_of(c) > 0)
        });
        if !defaulted {
            continue;
        }
        let found = match search.lower(&qos, resource) {
            Ok(Some(found)) => found,
            Ok(None) => continue,
            Err(stopped) => {
                capped = Some((resource, stopped));
                continue;
            }
        };
        set_default(&mut qos, resource, found.to);
        lowered.push(LoweredDefault {
            resource,
            from: found.from,
            to: found.to,
            nodes_before: found.before,
            nodes_after: found.after,
            covered: found.covered,
        });
    }
    match capped {
        // Nothing lowered, and the search could not cover the fleet.
        Some((_, capped)) if lowered.is_empty() => Err(capped),
        // Lowered; where the other default's search stopped at the cap, the
        // record says so, or the pod's author reads it as the best.
        _ if lowered.is_empty() => Ok(None),
        not_lowered => Ok(Some(Lowered {
            qos,
            defaults: LoweredDefaults {
                lowered,
                not_lowered,
            },
        })),
    }
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

fn default_of(qos: &QosConfig, resource: ComputeResource) -> Option<Quantity> {
    match resource {
        ComputeResource::Cpu => qos.cpu_per_gpu,
        ComputeResource::Memory => qos.memory_per_gpu,
    }
}

fn set_default(qos: &mut QosConfig, resource: ComputeResource, value: Quantity) {
    match resource {
        ComputeResource::Cpu => qos.cpu_per_gpu = Some(value),
        ComputeResource::Memory => qos.memory_per_gpu = Some(value),
    }
}

/// A lowered default: from and to, the nodes that take the pod before and
/// after, and, when the search stopped at its cap before it covered every
/// group, the nodes it covered and the fleet's.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Found {
    from: Quantity,
    to: Quantity,
    before: u32,
    after: u32,
    covered: Option<(u32, u32)>,
}

/// How far the search of one resource got.
#[derive(Debug, Clone, Copy, Default)]
struct Coverage {
    /// The nodes of the groups searched.
    nodes: u32,
    /// Whether it stopped at the cap before the last group.
    partial: bool,
}

/// The values of one group that take the pod: `low..=high`, in the
/// search's units.
#[derive(Debug, Clone, Copy)]
struct Taken {
    low: u64,
    high: u64,
    nodes: u32,
}

/// What a search over QoS plans reads: the pod, the fleet's verdicts on
/// it as first planned, and what a group must do to take it. Also used by
/// [`rounding`](crate::decide::rounding).
pub(crate) struct Search<'a, 'f> {
    spec: &'a Value,
    input: &'a PodInput<'a>,
    multiple: u64,
    verdicts: &'a [GroupVerdict<'f>],
    /// The admission's model answers: the plans tried whole
    /// ([`Search::taking`]) are the ones the pipeline then makes.
    memo: &'a AnswerMemo,
    need: Need,
    /// For each group, the index of the first group with the same facts:
    /// the model is asked once per distinct set.
    first_with_facts: Vec<usize>,
    /// Model answers the bisections may still ask ([`MAX_SEARCH_ANSWERS`]).
    answers_left: Cell<usize>,
}

/// One tried default: the model's pod and its answers so far, by the
/// first group of each set of facts. `None`: no plan could be made.
type Tried = Option<(kubelet::PodDemand, FastMap<usize, model::Answer>)>;

impl<'a, 'f> Search<'a, 'f> {
    pub(crate) fn new(
        spec: &'a Value,
        input: &'a PodInput<'a>,
        config: &Config,
        multiple: u64,
        verdicts: &'a [GroupVerdict<'f>],
        memo: &'a AnswerMemo,
    ) -> Self {
        let mut first = FirstEqual::default();
        let first_with_facts = verdicts
            .iter()
            .enumerate()
            .map(|(index, verdict)| {
                first
                    .find_or_record(&verdict.facts, index, model::facts_at(verdicts))
                    .unwrap_or(index)
            })
            .collect();
        Search {
            spec,
            input,
            multiple,
            verdicts,
            memo,
            need: Need::for_pod(config),
            first_with_facts,
            answers_left: Cell::new(MAX_SEARCH_ANSWERS),
        }
    }

    /// The distinct sets of facts among the groups.
    fn distinct_facts(&self) -> usize {
        self.first_with_facts
            .iter()
            .enumerate()
            .filter(|(index, first)| index == *first)
            .count()
    }

    /// The model's pod planned with `qos`; `None` when such a plan cannot
    /// be made or read.
    fn model_pod(&self, qos: &QosConfig) -> Option<kubelet::PodDemand> {
        let plan = qos::plan(self.spec, &self.input.demand.pod, qos, self.multiple).ok()?;
        if !plan.problems.is_empty() {
            return None;
        }
        let mut planned = self.spec.clone();
        qos::apply(&mut planned, &plan.edits).ok()?;
        model::model_pod(&planned, &self.input.demand.pod).ok()
    }

    /// For each group, whether it takes the pod planned with `qos`; `None`
    /// when such a plan cannot be made or read. The model is asked once per
    /// distinct set of facts; these answers are not counted against the cap.
    pub(crate) fn taking(&self, qos: &QosConfig) -> Option<Vec<bool>> {
        let pod = self.model_pod(qos)?;
        Some(
            (0..self.verdicts.len())
                .map(|index| {
                    let first = self.first_with_facts[index];
                    let (answer, _) = self.memo.answer(&pod, first, &self.verdicts[first].facts);
                    self.takes_as(index, &answer)
                })
                .collect(),
        )
    }

    fn takes_as(&self, index: usize, answer: &model::Answer) -> bool {
        self.verdicts[index].takes_as(answer, self.need, &self.input.demand.pod)
    }

    /// The nodes of the groups that take it (`taking`, as [`Search::taking`]).
    pub(crate) fn nodes_taking(&self, taking: &[bool]) -> u32 {
        self.verdicts
            .iter()
            .zip(taking)
            .filter(|(_, takes)| **takes)
            .fold(0u32, |sum, (v, _)| sum.saturating_add(v.nodes()))
    }

    /// The lowered default of `resource` and the nodes taking the pod
    /// before and after, when lowering helps.
    fn lower(
        &self,
        qos: &QosConfig,
        resource: ComputeResource,
    ) -> Result<Option<Found>, SearchCapped> {
        let Some(configured) = default_of(qos, resource) else {
            return Ok(None);
        };
        // Candidates are whole CPUs, or whole MiB of memory.
        let (unit, floor) = match resource {
            ComputeResource::Cpu => (1, CPU_FLOOR_UNITS),
            ComputeResource::Memory => (MIB, MEMORY_FLOOR_BYTES / MIB),
        };
        let value = |units: u64| match resource {
            ComputeResource::Cpu => Quantity::from_units(units),
            ComputeResource::Memory => Quantity::binary_units(units.saturating_mul(unit)),
        };
        // The largest candidate at most the configured value.
        let mut top = configured.ceil_whole_units() / unit;
        if value(top) > configured {
            top = top.saturating_sub(1);
        }
        if top < floor {
            return Ok(None);
        }
        let with = |units: u64| {
            let mut lowered = qos.clone();
            set_default(&mut lowered, resource, value(units));
            lowered
        };
        let Some(before) = self.taking(qos) else {
            return Ok(None);
        };
        // The pods tried, by default: each planned once.
        let tried: RefCell<FastMap<u64, Tried>> = RefCell::new(FastMap::default());
        let capped = SearchCapped {
            distinct_facts: self.distinct_facts(),
        };
        // Whether group `index` takes the pod with `units` per GPU.
        let takes = |units: u64, index: usize| -> Result<bool, SearchCapped> {
            let first = self.first_with_facts[index];
            let mut tried = tried.borrow_mut();
            let entry = tried.entry(units).or_insert_with(|| {
                self.model_pod(&with(units))
                    .map(|pod| (pod, FastMap::default()))
            });
            let Some((pod, answers)) = entry else {
                return Ok(false);
            };
            if let Some(answer) = answers.get(&first) {
                return Ok(self.takes_as(index, answer));
            }
            let left = self.answers_left.get();
            if left == 0 {
                return Err(capped);
            }
            self.answers_left.set(left - 1);
            let answer = model::answer(&self.verdicts[first].facts, pod).0;
            let takes = self.takes_as(index, &answer);
            answers.insert(first, answer);
            Ok(takes)
        };
        // The largest groups first: past the cap, the value is chosen
        // for the most nodes the search could cover.
        let mut order: Vec<usize> = (0..self.verdicts.len()).collect();
        gpu_topology::sort::sort_by_key(&mut order, |&index| {
            std::cmp::Reverse(self.verdicts[index].nodes())
        });
        let mut intervals: Vec<Taken> = Vec::new();
        let mut covered = Coverage::default();
        for index in order {
            match self.interval(index, top, floor, &takes) {
                Ok(taken) => intervals.extend(taken),
                Err(capped) if intervals.is_empty() => return Err(capped),
                Err(_) => {
                    covered.partial = true;
                    break;
                }
            }
            covered.nodes = covered.nodes.saturating_add(self.verdicts[index].nodes());
        }
        let Some(best) = best_value(&intervals) else {
            return Ok(None);
        };
        // The intervals assume each kubelet takes one range of values: the
        // count reported is the model's own at the value chosen.
        let Some(after) = self.taking(&with(best)) else {
            return Ok(None);
        };
        let (before_nodes, after_nodes) = (self.nodes_taking(&before), self.nodes_taking(&after));
        let fleet = self
            .verdicts
            .iter()
            .fold(0u32, |sum, v| sum.saturating_add(v.nodes()));
        Ok((after_nodes > before_nodes).then(|| Found {
            from: configured,
            to: value(best),
            before: before_nodes,
            after: after_nodes,
            covered: covered.partial.then_some((covered.nodes, fleet)),
        }))
    }

    /// The values of group `index` that take the pod, between `floor` and
    /// `top`; `None` when the halving finds none.
    fn interval(
        &self,
        index: usize,
        top: u64,
        floor: u64,
        takes: &impl Fn(u64, usize) -> Result<bool, SearchCapped>,
    ) -> Result<Option<Taken>, SearchCapped> {
        // Halve until the group takes it (a value inside its interval).
        let mut probe = top;
        let inside = loop {
            if takes(probe, index)? {
                break probe;
            }
            if probe == floor {
                return Ok(None);
            }
            probe = (probe / 2).max(floor);
        };
        // Invariant: the group takes it at `high` and not above `above`.
        let (mut high, mut above) = (inside, top.saturating_add(1));
        if high < top {
            while above - high > 1 {
                let mid = high + (above - high) / 2;
                if takes(mid, index)? {
                    high = mid;
                } else {
                    above = mid;
                }
            }
        }
        // Invariant: the group takes it at `low` and not at `below`.
        let mut low = inside;
        if low > floor && !takes(floor, index)? {
            let mut below = floor;
            while low - below > 1 {
                let mid = below + (low - below) / 2;
                if takes(mid, index)? {
                    low = mid;
                } else {
                    below = mid;
                }
            }
        } else {
            low = floor;
        }
        Ok(Some(Taken {
            low,
            high,
            nodes: self.verdicts[index].nodes(),
        }))
    }
}

/// The interval top that the most nodes' intervals hold (ties: the larger
/// value), in one sweep over the intervals sorted by their ends.
fn best_value(intervals: &[Taken]) -> Option<u64> {
    // Events at each value: +nodes where an interval starts, -nodes just
    // after it ends; a top is counted after the starts at it and before the
    // ends past it.
    let mut starts: Vec<(u64, u32)> = intervals.iter().map(|t| (t.low, t.nodes)).collect();
    let mut ends: Vec<(u64, u32)> = intervals.iter().map(|t| (t.high, t.nodes)).collect();
    gpu_topology::sort::sort(&mut starts);
    gpu_topology::sort::sort(&mut ends);
    let (mut started, mut ended) = (starts.iter().peekable(), ends.iter().peekable());
    let mut open: u64 = 0;
    let mut best: Option<(u64, u64)> = None;
    // Each interval's top, in increasing order, is a candidate.
    for &(top, _) in &ends {
        while let Some(&&(low, nodes)) = started.peek() {
            if low > top {
                break;
            }
            open += u64::from(nodes);
            started.next();
        }
        while let Some(&&(high, nodes)) = ended.peek() {
            if high >= top {
                break;
            }
            open = open.saturating_sub(u64::from(nodes));
            ended.next();
        }
        if best.is_none_or(|(count, _)| open >= count) {
            best = Some((open, top));
        }
    }
    best.map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::adjustment::Adjustment;
    use crate::decide::explain::{kubelets_take_it, nodes};
    use crate::decide::testing::{
        four_and_two_gpus, hgx, hgx_memory_jitter, node, on_first_plan, HGX, KUBELET,
    };
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
                lower_defaults(
                    &spec,
                    input,
                    config,
                    multiple,
                    verdicts,
                    &AnswerMemo::default(),
                )
                .expect("within the cap")
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

    /// Issue #35: the search asks the model a bounded number of times per
    /// distinct shape, so its cost grows linearly with the shapes, not
    /// with their square. 256Gi per GPU: every shape refuses the 4-GPU
    /// container and takes it at a quarter of its NUMA node's memory.
    /// The memory search for the 4+2-GPU pod at 256Gi per GPU over
    /// `shapes` distinct shapes, allowed `cap` model answers: what it found
    /// and the answers it asked.
    fn memory_search(shapes: u32, cap: usize) -> (Result<Option<Found>, SearchCapped>, usize) {
        let spec = four_and_two_gpus();
        let groups = (0..shapes).map(|i| (hgx_memory_jitter(i), 1)).collect();
        let settings = json!({"qos": {"memoryPerGpu": "256Gi"}});
        on_first_plan(
            &spec,
            groups,
            settings,
            |input, config, multiple, verdicts| {
                let memo = AnswerMemo::default();
                let search = Search::new(&spec, input, config, multiple, verdicts, &memo);
                search.answers_left.set(cap);
                let lowered = search.lower(&config.qos, ComputeResource::Memory);
                (lowered, cap - search.answers_left.get())
            },
        )
    }

    #[rstest]
    #[case::ten_shapes(10)]
    #[case::forty_shapes(40)]
    #[case::eighty_shapes(80)]
    fn the_search_asks_the_model_a_bounded_number_of_times_per_shape(#[case] shapes: u32) {
        // Halving from 2^18 MiB, then two bisections of at most 18 steps.
        const MOST_PER_SHAPE: usize = 8 + 1 + 18 + 1 + 18;
        let (lowered, asked) = memory_search(shapes, MAX_SEARCH_ANSWERS);
        let Found {
            to,
            before,
            after,
            covered,
            ..
        } = lowered.unwrap().expect("lowered");
        assert_eq!(covered, None);
        assert_eq!((before, after), (0, shapes));
        // The most every shape takes: a quarter of the smallest NUMA node 1.
        assert_eq!(to.canonical(), format!("{}Mi", 1_031_168 / 4));
        assert!(asked >= shapes as usize, "{asked}");
        assert!(
            asked <= MOST_PER_SHAPE * shapes as usize,
            "{asked} answers for {shapes} shapes"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, ..Default::default() })]
        /// Whatever the fleet and the cap, the search answers: it asks the
        /// model at most `cap` times, and ends with a value more nodes take,
        /// none, or the cap named over every distinct shape.
        #[test]
        fn the_search_never_asks_past_its_cap(shapes in 1u32..40, cap in 0usize..400) {
            let (lowered, asked) = memory_search(shapes, cap);
            proptest::prop_assert!(asked <= cap, "{} answers asked under a cap of {}", asked, cap);
            match lowered {
                Ok(Some(found)) => proptest::prop_assert!(found.after > found.before),
                Ok(None) => {}
                Err(capped) => proptest::prop_assert_eq!(capped.distinct_facts, shapes as usize),
            }
        }
    }

    /// The lowering of the 4+2-GPU pod at 256Gi per GPU over `shapes`
    /// distinct shapes, asking the model at most `cap` times.
    fn lowered_within(shapes: u32, cap: usize) -> Result<Option<Lowered>, SearchCapped> {
        let spec = four_and_two_gpus();
        let groups = (0..shapes).map(|i| (hgx_memory_jitter(i), 1)).collect();
        let settings = json!({"qos": {"memoryPerGpu": "256Gi"}});
        on_first_plan(
            &spec,
            groups,
            settings,
            |input, config, multiple, verdicts| {
                let memo = AnswerMemo::default();
                lower_defaults_within(&spec, input, config, multiple, verdicts, &memo, cap)
            },
        )
    }

    /// Past the cap the search stops, having covered the largest shapes
    /// first, and the warning says how far it got: 300 distinct shapes ask
    /// more than 4,096 answers.
    #[test]
    fn the_search_stops_at_its_cap_and_says_how_far_it_got() {
        let lowered = lowered_within(300, MAX_SEARCH_ANSWERS)
            .unwrap()
            .expect("lowered");
        let warning = Adjustment::Lowered(lowered.defaults).warning();
        assert!(
            warning.ends_with("with 257792Mi, 300 nodes (the search stopped at its cap of 4096 kubelet-model answers after the shapes of 159 of the 300 nodes, the largest first)"),
            "{warning}"
        );
    }

    /// A search that finds no value before the cap is an error that names
    /// it (here a cap of 5 answers over 10 shapes).
    #[test]
    fn nothing_found_before_the_cap_is_an_error() {
        let capped = lowered_within(10, 5).unwrap_err();
        assert_eq!(capped, SearchCapped { distinct_facts: 10 });
        assert!(capped.warning().contains(
            "stopped at its cap of 4096 kubelet-model answers over 10 distinct node shapes"
        ));
    }

    /// CPUs lowered, then the memory search stopped at the cap: the
    /// warning says both. 16 CPUs per GPU: 10 HGX nodes under
    /// `single-numa-node` and container scope without a Memory Manager
    /// take the 4-GPU container at 14; 256Gi per GPU: 10 distinct
    /// static-memory shapes need the memory search, which the smallest cap
    /// that lets the CPUs be lowered leaves short of answers.
    #[test]
    fn a_memory_search_capped_after_cpus_were_lowered_is_named() {
        let spec = four_and_two_gpus();
        let mut groups: Vec<_> = (0..10).map(|i| (hgx_memory_jitter(i), 1)).collect();
        let cpus_only = format!("{HGX} {KUBELET} topology-manager-policy=single-numa-node")
            .replace(
                "topology-manager-scope=pod",
                "topology-manager-scope=container",
            );
        groups.push((node(&cpus_only), 10));
        let settings = json!({"qos": {"cpuPerGpu": "16", "memoryPerGpu": "256Gi"}});
        let warning = (1..=600)
            .find_map(|cap| {
                let lowered = on_first_plan(
                    &spec,
                    groups.clone(),
                    settings.clone(),
                    |input, config, multiple, verdicts| {
                        let memo = AnswerMemo::default();
                        lower_defaults_within(&spec, input, config, multiple, verdicts, &memo, cap)
                    },
                );
                lowered
                    .ok()
                    .flatten()
                    .map(|lowered| Adjustment::Lowered(lowered.defaults).warning())
            })
            .expect("the CPUs are lowered under some cap");
        assert!(
            warning.starts_with("qos.cpuPerGpu lowered from 16 to "),
            "{warning}"
        );
        assert!(
            warning.ends_with("; qos.memoryPerGpu was not lowered for this pod: the search stopped at its cap of 4096 kubelet-model answers over 11 distinct node shapes"),
            "{warning}"
        );
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
            Adjustment::Lowered(lowered.defaults).warning(),
            "qos.cpuPerGpu lowered from 16 to 13 per GPU for this pod: with 16, the kubelets of 0 nodes take it; with 13, 10 nodes"
        );
    }
}
