//! Messages built from the kubelet model's verdicts: for the best node
//! groups, what the kubelet would do there with the arithmetic behind it
//! (GPUs, CPUs and memory per NUMA node against the request, the narrowest
//! NUMA masks, the SMT multiple), and the request or setting to change.
//! Kept to a sentence or two per group, for `kubectl` output.
//!
//! The wording is here; the arithmetic behind each fix (a node's per-NUMA
//! figures, the narrowest NUMA masks) is in `explain/numa.rs`.

use crate::decide::demand::Demand;
use crate::decide::model::Need;
use crate::decide::model::{Answer, GroupVerdict};
use crate::request::quantity::Quantity;
use crate::settings::TopologyConfig;
use gpu_topology::kubelet::{
    AllocationFailure, Fact, Indeterminate, NodeFacts, Refusal, Resource, StartupError, UnitReport,
    Unknown, Unsupported,
};
use gpu_topology::quantity::cpu_words;
use gpu_topology::{Alignment, NodeTopology, TopologyManagerPolicy, TopologyManagerScope};

mod numa;

pub(crate) use numa::NumaFigures;
use numa::{spans, Span};

/// Groups a message explains; the rest are counted.
const EXPLAINED_GROUPS: usize = 2;
const MIB: u64 = 1 << 20;

/// The words every refusal of a placement opens with (the warnings that
/// admit such a pod anyway quote the refusal without them).
pub(crate) const CANNOT_BE_PLACED: &str = "GPU pod cannot be placed: ";

/// The rejection message for a demand above what any node offers:
/// `<demand> cannot fit: <offer>. Request at most <fits> GPUs ...`, with the
/// demand in words for `scope` ([`Demand::describe_total`] or
/// [`Demand::describe_unit`]). Reusable wherever a fit check fails (static
/// or cluster-aware).
pub(crate) fn too_many(
    demand: &str,
    scope: TopologyManagerScope,
    offer: &str,
    fits: u32,
) -> String {
    let unit = match scope {
        TopologyManagerScope::Pod => "per pod",
        TopologyManagerScope::Container => "per container",
    };
    format!(
        "{CANNOT_BE_PLACED}it needs {demand} but {offer}. Request at most {fits} GPU{s} {unit}, or split the work across several pods.",
        s = if fits == 1 { "" } else { "s" }
    )
}

/// Why no node shape of the view takes the pod, with its figures; worded
/// by [`ShapesRefuse::message`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapesRefuse {
    /// Every shape refuses for too few GPUs: the pod's total (`demand`, in
    /// words) against the most GPUs a labeled node has (`largest`) and
    /// how many nodes have that many.
    TooFewGpus {
        demand: String,
        largest: u64,
        nodes: u32,
    },
    /// No shape takes the pod as `need` asks: the demand (`demand`, its
    /// total or, under `required`, its aligned unit, in words), the
    /// labeled nodes, each of the closest shapes in its own words (at most
    /// [`EXPLAINED_GROUPS`]), and how many more shapes were not shown.
    Closest {
        need: Need,
        demand: String,
        nodes: u32,
        shapes: Vec<String>,
        not_shown: usize,
    },
}

/// Why no group of the view takes the pod.
pub(crate) fn no_group_takes_it(
    demand: &Demand,
    need: Need,
    verdicts: &[GroupVerdict],
    topology: &TopologyConfig,
) -> ShapesRefuse {
    if let Some((largest, nodes)) = too_few_gpus_everywhere(verdicts) {
        return ShapesRefuse::TooFewGpus {
            demand: demand.describe_total(),
            largest,
            nodes,
        };
    }
    let (shapes, not_shown) = groups_explained(demand, need, verdicts, topology);
    ShapesRefuse::Closest {
        need,
        demand: match need {
            Need::Admit => demand.describe_total(),
            Need::Host(_) => demand.describe_unit(),
        },
        nodes: verdicts.iter().map(GroupVerdict::nodes).sum(),
        shapes,
        not_shown,
    }
}

impl ShapesRefuse {
    /// The rejection message.
    pub fn message(&self) -> String {
        match self {
            ShapesRefuse::TooFewGpus {
                demand,
                largest,
                nodes,
            } => too_many(
                demand,
                TopologyManagerScope::Pod,
                &format!(
                    "the largest labeled GPU node has {largest} ({})",
                    plural(u64::from(*nodes), "node")
                ),
                u32::try_from(*largest).unwrap_or(u32::MAX),
            ),
            ShapesRefuse::Closest {
                need,
                demand,
                nodes,
                shapes,
                not_shown,
            } => {
                let lead = match need {
                    Need::Admit => {
                        format!("it needs {demand}, but {}", no_kubelet_admits(*nodes))
                    }
                    Need::Host(alignment) => format!(
                        "it needs {demand} {} (topology.affinity: required), but {}",
                        alignment.describe(),
                        no_node_hosts(*nodes)
                    ),
                };
                let not_shown = not_shown_words(*not_shown);
                let sentences: Vec<&str> = (shapes.iter().map(String::as_str))
                    .chain(not_shown.as_deref())
                    .collect();
                format!("{CANNOT_BE_PLACED}{lead}. {}", sentences.join(" "))
            }
        }
    }
}

/// That no labeled node's kubelet admits the pod, in the number of the
/// fleet: the negation is in every form (`does not`, `no`, `none`).
fn no_kubelet_admits(nodes: u32) -> String {
    match nodes {
        0 => "the kubelet of no labeled GPU node admits it".to_owned(),
        1 => "the kubelet of the only labeled GPU node does not admit it".to_owned(),
        n => format!("the kubelet of none of the {n} labeled GPU nodes admits it"),
    }
}

/// That no labeled node hosts the pod as `required` asks, in the number
/// of the fleet.
fn no_node_hosts(nodes: u32) -> String {
    match nodes {
        0 => "no labeled GPU node hosts it so".to_owned(),
        1 => "the only labeled GPU node does not host it so".to_owned(),
        n => format!("none of the {n} labeled GPU nodes hosts it so"),
    }
}

/// Sentences for the best groups (at most [`EXPLAINED_GROUPS`]), each
/// with its fix, and how many groups are not shown.
fn groups_explained(
    demand: &Demand,
    need: Need,
    verdicts: &[GroupVerdict],
    topology: &TopologyConfig,
) -> (Vec<String>, usize) {
    let mut ranked: Vec<&GroupVerdict> = verdicts.iter().collect();
    // Groups that are no GPU match for the pod at all say the least.
    gpu_topology::sort::sort_by_key(&mut ranked, |v| {
        (
            matches!(
                v.answer,
                Answer::Refuse(Refusal::Insufficient { .. } | Refusal::NodeTooSmall { .. })
            ),
            std::cmp::Reverse(v.nodes()),
        )
    });
    let sentences = ranked
        .iter()
        .take(EXPLAINED_GROUPS)
        .map(|verdict| group_sentence(demand, need, verdict, topology))
        .collect();
    (sentences, ranked.len().saturating_sub(EXPLAINED_GROUPS))
}

/// `(1 more node shape not shown.)`; nothing when every group is explained.
fn not_shown_words(rest: usize) -> Option<String> {
    (rest > 0).then(|| format!("({} not shown.)", plural(rest as u64, "more node shape")))
}

/// `On the 10 nodes of shape X (...) <why>. <Fix>.`
pub(crate) fn group_sentence(
    demand: &Demand,
    need: Need,
    verdict: &GroupVerdict,
    topology: &TopologyConfig,
) -> String {
    let (why, fix) = why_and_fix(demand, need, verdict);
    format!("On {} {why}. {fix}.", where_words(verdict, topology))
}

/// `the 10 nodes of shape 0123456789abcdef (8 GPUs, 4+4 per NUMA node, ...)`
pub(crate) fn where_words(verdict: &GroupVerdict, topology: &TopologyConfig) -> String {
    let nodes = the_nodes(verdict.nodes());
    let shape = match verdict.shape() {
        Some(shape) => format!("of shape {shape}"),
        None => "without a shape label".to_owned(),
    };
    format!(
        "{nodes} {shape} ({})",
        shape_words(verdict.topology(), verdict.scope, topology.scope)
    )
}

/// `the node`, `the 10 nodes`: a group counts at least one node (the
/// fleet and the summary count the nodes that carry its shape).
fn the_nodes(count: u32) -> String {
    match count {
        1 => "the node".to_owned(),
        n => format!("the {n} nodes"),
    }
}

/// `8 GPUs, 4+4 per NUMA node, 56 CPUs per NUMA node, topologyManagerPolicy restricted`;
/// the scope is named when it is not the `topology.scope` setting.
pub(crate) fn shape_words(
    t: &NodeTopology,
    scope: TopologyManagerScope,
    setting: TopologyManagerScope,
) -> String {
    let mut words = Vec::new();
    if let Some(gpus) = t.gpus {
        words.push(plural(u64::from(gpus), "GPU"));
    }
    if let Some(list) = t.numa_gpus.as_deref().filter(|l| l.len() > 1) {
        words.push(format!("{} per NUMA node", joined(list)));
    }
    if let Some(list) = t.numa_cpus.as_deref() {
        match list {
            [first, rest @ ..] if rest.iter().all(|c| c == first) => words.push(format!(
                "{} per NUMA node",
                plural(u64::from(*first), "CPU")
            )),
            _ => words.push(format!("{} CPUs per NUMA node", joined(list))),
        }
    }
    if let Some(policy) = t.topology_manager_policy {
        words.push(format!("topologyManagerPolicy {policy}"));
    }
    if scope != setting || t.topology_manager_scope.is_none() {
        words.push(format!("topologyManagerScope {scope}"));
    }
    words.join(", ")
}

/// Per-NUMA counts joined by `+` (`4+4`). On machines of many NUMA nodes
/// (a GB200 tray has 34, 32 of them CPU-less) a run of three or more equal
/// counts is written `count×times` (`2+2+0×32`), so the message stays
/// readable.
fn joined(list: &[u32]) -> String {
    const SPELLED_OUT: usize = 8;
    const SHORTEST_RUN: usize = 3;
    if list.len() <= SPELLED_OUT {
        return list
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("+");
    }
    let mut parts: Vec<String> = Vec::new();
    for run in list.chunk_by(|a, b| a == b) {
        match run {
            [count, ..] if run.len() >= SHORTEST_RUN => {
                parts.push(format!("{count}×{}", run.len()))
            }
            _ => parts.extend(run.iter().map(u32::to_string)),
        }
    }
    parts.join("+")
}

pub(crate) fn plural(count: u64, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}

/// `1 node`, `3 nodes`.
pub(crate) fn nodes(count: u32) -> String {
    plural(u64::from(count), "node")
}

/// `the kubelet of 1 node takes it`, `the kubelets of 0 nodes take it`.
pub(crate) fn kubelets_take_it(count: u32) -> String {
    match count {
        1 => "the kubelet of 1 node takes it".to_owned(),
        n => format!("the kubelets of {n} nodes take it"),
    }
}

/// GPUs and exclusive CPUs are counted; memory and hugepages are measured.
fn countable(resource: Resource) -> bool {
    matches!(
        resource,
        Resource::Gpu | Resource::Cpu | Resource::Device(_)
    )
}

/// `1 GPU`, `8 GPUs`, `1 exclusive CPU`, `4 rdma/ib`; a measured resource as its name.
fn amount(count: u64, resource: Resource) -> String {
    match resource.name().strip_suffix('s') {
        Some(_) if matches!(resource, Resource::Device(_)) => format!("{count} {resource}"),
        Some(singular) if count == 1 && countable(resource) => format!("1 {singular}"),
        _ => format!("{count} {resource}"),
    }
}

/// The pod needs more GPUs than any group has (every group refuses for
/// too few GPUs): the most GPUs a group has, and on how many nodes.
fn too_few_gpus_everywhere(verdicts: &[GroupVerdict]) -> Option<(u64, u32)> {
    // No group at all is no GPU count to compare with.
    if verdicts.is_empty() {
        return None;
    }
    let mut largest = 0u64;
    let mut nodes = 0u32;
    for verdict in verdicts {
        let Answer::Refuse(Refusal::Insufficient {
            resource: Resource::Gpu,
            capacity,
            ..
        }) = verdict.answer
        else {
            return None;
        };
        match capacity.cmp(&largest) {
            std::cmp::Ordering::Greater => (largest, nodes) = (capacity, verdict.nodes()),
            std::cmp::Ordering::Equal => nodes = nodes.saturating_add(verdict.nodes()),
            std::cmp::Ordering::Less => {}
        }
    }
    Some((largest, nodes))
}

/// Why the group does not take the pod as needed, and what to change:
/// worded on the first call and kept in the verdict
/// ([`GroupVerdict::explained`]), so the policy's message and the tool's
/// record read the same words, made once. `demand` and `need` are the
/// admission's, the same for every call on one verdict.
pub fn why_and_fix<'v>(
    demand: &Demand,
    need: Need,
    verdict: &'v GroupVerdict,
) -> &'v (String, String) {
    verdict
        .explained
        .get_or_init(|| word_why_and_fix(demand, need, verdict))
}

/// [`why_and_fix`], worded.
fn word_why_and_fix(demand: &Demand, need: Need, verdict: &GroupVerdict) -> (String, String) {
    #[cfg(test)]
    crate::decide::testing::count(&crate::decide::testing::WHY_AND_FIX);
    let facts = &verdict.facts;
    let units = verdict
        .admission
        .as_ref()
        .map_or(&[][..], |a| a.units.as_slice());
    match (&verdict.answer, need) {
        (Answer::Refuse(refusal), _) => refused(refusal, demand, facts, units, verdict.scope),
        (Answer::Unknown(unknown), _) => (
            format!("whether the kubelet admits it is unknown ({})", unknown_words(unknown)),
            "Publish the missing facts with the current labeler, or set topology.affinity: preferred, which keeps such nodes eligible".to_owned(),
        ),
        (Answer::Contradictory(error), _) => (
            format!("the labels contradict themselves ({error})"),
            "Fix the node labeler there".to_owned(),
        ),
        (Answer::Admit { .. }, Need::Host(Alignment::Nvlink)) => {
            let unit = demand.pod.gpu_demand(verdict.scope).aligned;
            let group = verdict.topology().nvlink_group_max.unwrap_or(0);
            (
                format!(
                    "the kubelet admits it, but the largest NVLink group has {} and {unit} must share one",
                    plural(u64::from(group), "GPU")
                ),
                relaxed(format!("Request at most {} {}", plural(u64::from(group), "GPU"), per(verdict.scope)), Alignment::Nvlink),
            )
        }
        (Answer::Admit { aligned: false }, Need::Host(alignment)) => {
            unaligned(facts, units, verdict.scope, alignment)
        }
        (Answer::Admit { .. }, _) if verdict.shared_shape => (
            format!(
                "the kubelet{} admits it, but nodes whose kubelets answer otherwise carry the same shape label, so node affinity cannot select these apart",
                verdict.topology().kubelet_version.map_or_else(String::new, |v| format!(" ({v})"))
            ),
            "Publish the kubelet-version label with the labeler (its kubernetes sink, or --kubelet-version), or finish the kubelet upgrade".to_owned(),
        ),
        (Answer::Admit { .. }, _) => (
            "the kubelet admits it, but the nodes publish no shape label, so node affinity cannot select them".to_owned(),
            "Upgrade the node labeler there".to_owned(),
        ),
    }
}

fn per(scope: TopologyManagerScope) -> &'static str {
    match scope {
        TopologyManagerScope::Pod => "per pod",
        TopologyManagerScope::Container => "per container",
    }
}

fn relaxed(fix: String, alignment: Alignment) -> String {
    let span = match alignment {
        Alignment::Numa => "NUMA nodes",
        Alignment::Nvlink => "NVLink groups",
        Alignment::Node => "nodes",
    };
    format!("{fix}, or set topology.affinity: preferred so the GPUs may span {span}")
}

/// The unit the kubelet refused, or that is not aligned.
fn unit_of(units: &[UnitReport], container: Option<usize>) -> Option<&UnitReport> {
    units
        .iter()
        .rev()
        .find(|u| u.container == container)
        .or(units.last())
}

/// `container "a"` or `the pod`, for a model container index.
pub(crate) fn who(demand: &Demand, container: Option<usize>) -> String {
    container
        .and_then(|i| demand.pod.containers.get(i))
        .map_or_else(|| "the pod".to_owned(), |c| c.container.to_string())
}

pub(crate) fn refused(
    refusal: &Refusal,
    demand: &Demand,
    facts: &NodeFacts,
    units: &[UnitReport],
    scope: TopologyManagerScope,
) -> (String, String) {
    match *refusal {
        Refusal::TopologyAffinity { container } => {
            topology_affinity(demand, facts, unit_of(units, container), container, scope)
        }
        Refusal::SmtAlignment { container, requested, cpus_per_core, available_physical_cpus } => {
            let whose = who(demand, Some(container));
            match available_physical_cpus {
                // cpus_per_core is at least 2 here: every count is a multiple of 1.
                None => (
                    format!("{whose}'s {} {} not a multiple of the {cpus_per_core} threads per core that cpuManagerPolicyOptions full-pcpus-only allocates: the kubelet refuses it with SMTAlignmentError", plural(u64::from(requested), "exclusive CPU"), are(u64::from(requested))),
                    format!(
                        "Request a multiple of {cpus_per_core} CPUs ({}), or a fractional CPU amount (shared pool)",
                        u64::from(requested).next_multiple_of(u64::from(cpus_per_core.max(1)))
                    ),
                ),
                Some(available) => (
                    format!("{whose}'s {} {} more than the {available} free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError", plural(u64::from(requested), "exclusive CPU"), are(u64::from(requested))),
                    format!("Request at most {}", plural(u64::from(available), "CPU")),
                ),
            }
        }
        Refusal::Insufficient { resource, requested, capacity } => (
            format!("the kubelet has {} and the pod needs {requested}", amount(capacity, resource)),
            format!("Request at most {} per pod, or split the work across several pods", amount(capacity, resource)),
        ),
        Refusal::NodeTooSmall { resource, requested, capacity, reserved } => {
            node_too_small(resource, requested, capacity, reserved)
        }
        Refusal::AllocationFailed { container, resource, failure } => (
            format!(
                "the kubelet cannot allocate {}'s {resource} ({}): it refuses it with UnexpectedAdmissionError",
                who(demand, Some(container)),
                failure_words(failure, resource)
            ),
            format!("Request {} {resource}", if countable(resource) { "fewer" } else { "less" }),
        ),
        Refusal::KubeletNotStarted(error) => (
            format!("the kubelet does not start ({})", startup_words(error)),
            startup_fix(error),
        ),
        Refusal::HintSearchTooSlow { container, masks, permutations } => {
            let before_1_36 = facts.kubelet_version.is_none_or(|v| !v.at_least(1, 36));
            (
                format!(
                    "the kubelet's Topology Manager walks {masks} NUMA masks and at least {permutations} hint permutations for {}: admission takes minutes or never ends, and the pod stays Pending",
                    who(demand, container)
                ),
                if before_1_36 {
                    "Upgrade the kubelet to 1.36 (device hints only over the NUMA nodes that hold the devices), or set topologyManagerPolicy none there".to_owned()
                } else {
                    "Set topologyManagerPolicy none there, or request no exclusive CPUs or pinned memory".to_owned()
                },
            )
        }
    }
}

/// The scheduler's `Insufficient <resource>`: the request against the
/// node's size, as the model bounds the allocatable.
fn node_too_small(
    resource: Resource,
    requested: u64,
    capacity: u64,
    reserved: u64,
) -> (String, String) {
    let (name, asked, has, most) = match resource {
        Resource::Cpu => {
            let whole = (capacity - reserved.min(capacity)) / 1000;
            let has = match reserved / 1000 {
                0 => plural(capacity / 1000, "CPU"),
                r => format!(
                    "{}, {r} of them reserved by the kubelet",
                    plural(capacity / 1000, "CPU")
                ),
            };
            ("cpu", cpu_words(requested), has, plural(whole, "CPU"))
        }
        other => {
            let most = format!("{} of {other}", rounded(capacity));
            (
                resource.name(),
                format!(
                    "{} of {other}",
                    Quantity::binary_units(requested).canonical()
                ),
                format!("at most {most}"),
                most,
            )
        }
    };
    (
        format!("the pod requests {asked}, more than a node there can allocate ({has}): the scheduler never places it there (Insufficient {name})"),
        format!("Request at most {most} per pod, or split the work across several pods"),
    )
}

/// Bytes rounded down to GiB (to MiB below one GiB): the labels' MiB
/// rounding is not worth a message's digits.
fn rounded(value: u64) -> String {
    const GIB: u64 = 1 << 30;
    let unit = if value >= GIB { GIB } else { MIB };
    Quantity::binary_units(value / unit * unit).canonical()
}

/// `the 8 GPUs`, `the 32 exclusive CPUs`, `the 600Gi of memory`
pub(crate) fn request_words(resource: Resource, request: u64) -> String {
    match resource {
        Resource::Gpu => format!("the {}", plural(request, "GPU")),
        Resource::Cpu => format!("the {}", plural(request, "exclusive CPU")),
        Resource::Device(name) => format!("the {request} {name}"),
        other => format!(
            "the {} of {other}",
            Quantity::binary_units(request).canonical()
        ),
    }
}

fn mask_words(nodes: Option<u32>) -> String {
    match nodes {
        Some(n) => plural(u64::from(n), "node"),
        None => "more than the machine".to_owned(),
    }
}

fn topology_affinity(
    demand: &Demand,
    facts: &NodeFacts,
    unit: Option<&UnitReport>,
    container: Option<usize>,
    scope: TopologyManagerScope,
) -> (String, String) {
    let spans = spans(unit);
    let whose = match container {
        Some(i) if scope == TopologyManagerScope::Container => {
            format!(" of {}", who(demand, Some(i)))
        }
        _ => String::new(),
    };
    let error = "the kubelet refuses it with TopologyAffinityError";
    let numa = NumaFigures::of(facts);
    let single_numa_node =
        facts.topology_manager.policy == Some(TopologyManagerPolicy::SingleNumaNode);
    let wide: Vec<&Span> = spans.iter().filter(|s| s.capacity != Some(1)).collect();
    if single_numa_node && !wide.is_empty() {
        let parts: Vec<String> = wide
            .iter()
            .map(|s| {
                format!(
                    "{}{whose} need{} {}",
                    request_words(s.resource, s.request),
                    verb_s(s.resource, s.request),
                    s.capacity.map_or_else(
                        || "more than the node's NUMA nodes hold".to_owned(),
                        |n| plural(u64::from(n), "NUMA node")
                    )
                )
            })
            .collect();
        let fixes: Vec<String> = wide
            .iter()
            .map(|s| numa.at_most_one(s.resource, scope))
            .collect();
        return (
            format!(
                "{}, but single-numa-node admits only one: {error}",
                parts.join(" and ")
            ),
            format!("Request {}", or_list(&fixes)),
        );
    }
    // Each fits its narrowest mask by capacity, but not what the
    // containers before it left free (scope container).
    if let Some(s) = spans
        .iter()
        .find(|s| s.capacity.is_some() && s.available.is_none_or(|a| Some(a) > s.capacity))
    {
        return (
            format!(
                "{}{whose} fit{} {} by capacity, but after the containers before it the fewest NUMA nodes with room for {} are {}: {error}",
                request_words(s.resource, s.request),
                verb_s(s.resource, s.request),
                mask_words(s.capacity),
                if is_plural(s.resource, s.request) { "them" } else { "it" },
                mask_words(s.available)
            ),
            format!(
                "Give the containers GPU counts that pack into NUMA nodes of {} GPUs, or put the GPUs in one container",
                numa.largest(&numa.gpus, 1)
            ),
        );
    }
    let gpu = spans.iter().find(|s| s.resource == Resource::Gpu);
    let other = spans
        .iter()
        .filter(|s| s.resource != Resource::Gpu)
        .find(|s| gpu.is_some_and(|g| g.capacity != s.capacity));
    match (gpu, other) {
        (Some(g), Some(o)) => {
            let why = format!(
                "the {} narrowest NUMA mask{whose} is {} but {} is {}: {error}",
                if g.request == 1 { "GPU's" } else { "GPUs'" },
                mask_words(g.capacity),
                possessive(o.resource, &request_words(o.resource, o.request)),
                mask_words(o.capacity)
            );
            let span = g.capacity.unwrap_or(1);
            let fix = match (o.resource, o.capacity.unwrap_or(u32::MAX) < span) {
                (Resource::Cpu, true) => {
                    let (low, high) = numa.cpus_spanning(span);
                    let gpus_narrow = numa.largest(&numa.gpus, o.capacity.unwrap_or(1));
                    format!(
                        "Request {low} to {high} CPUs so that they span {} as the GPUs do, a fractional CPU amount (shared pool), or at most {}",
                        plural(u64::from(span), "NUMA node"),
                        plural(gpus_narrow, "GPU")
                    )
                }
                // Memory narrower than the GPUs: the Memory Manager prefers
                // its narrowest mask (calculateHints' minAffinitySize), so
                // only more memory than `span - 1` NUMA nodes hold, or fewer
                // GPUs, makes one mask preferred by both.
                (
                    resource @ (Resource::Memory | Resource::HugePages2Mi | Resource::HugePages1Gi),
                    true,
                ) => {
                    let table = match resource {
                        Resource::Memory => &numa.memory[0],
                        Resource::HugePages2Mi => &numa.memory[1],
                        _ => &numa.memory[2],
                    };
                    format!(
                        "Request more than {} of {resource} so that it spans {} as the GPUs do, or at most {}",
                        bytes(numa.largest(table, span.saturating_sub(1))),
                        plural(u64::from(span), "NUMA node"),
                        plural(numa.largest(&numa.gpus, o.capacity.unwrap_or(1)), "GPU")
                    )
                }
                // Devices sit where they are: only fewer GPUs fit their NUMA nodes.
                (Resource::Device(name), true) => format!(
                    "Request {} so that they fit {} as the {} {name} {}",
                    numa.at_most(Resource::Gpu, o.capacity.unwrap_or(1)),
                    plural(u64::from(o.capacity.unwrap_or(1)), "NUMA node"),
                    o.request,
                    if is_plural(o.resource, o.request) {
                        "do"
                    } else {
                        "does"
                    }
                ),
                (resource, _) => format!(
                    "Request {} so that {} fit{} {} as {}",
                    numa.at_most(resource, span),
                    request_words(resource, o.request),
                    verb_s(resource, o.request),
                    plural(u64::from(span), "NUMA node"),
                    if g.request == 1 {
                        "the GPU does"
                    } else {
                        "the GPUs do"
                    }
                ),
            };
            (why, fix)
        }
        _ => (
            format!("no NUMA mask is preferred by every resource{whose}: {error}"),
            "Request fewer GPUs, CPUs or memory, or set topology.affinity: preferred".to_owned(),
        ),
    }
}

/// `the 32 exclusive CPUs'`, `the 1 exclusive CPU's`, `the 600Gi of
/// memory's`, `the 8 rdma/ib's`: a device resource's name is no English
/// plural, so only a plural counted noun takes the bare apostrophe.
fn possessive(resource: Resource, words: &str) -> String {
    match resource {
        Resource::Gpu | Resource::Cpu if words.ends_with('s') => format!("{words}'"),
        _ => format!("{words}'s"),
    }
}

/// Whether [`request_words`] of `request` is a plural subject: counted
/// GPUs, CPUs and devices other than one; memory and huge pages are
/// measured (`the 600Gi of memory needs`).
pub(crate) fn is_plural(resource: Resource, request: u64) -> bool {
    countable(resource) && request != 1
}

/// The verb ending that agrees with [`request_words`]: `need` or `needs`.
pub(crate) fn verb_s(resource: Resource, request: u64) -> &'static str {
    if is_plural(resource, request) {
        ""
    } else {
        "s"
    }
}

/// `are` or `is`, for a count.
fn are(count: u64) -> &'static str {
    if count == 1 {
        "is"
    } else {
        "are"
    }
}

fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{}, or {last}", init.join(", ")),
    }
}

/// Bytes as Kubernetes writes them, rounded down to MiB.
pub(crate) fn bytes(value: u64) -> String {
    Quantity::binary_units(value / MIB * MIB).canonical()
}

/// The kubelet admits the pod, but not every unit on one NUMA node.
fn unaligned(
    facts: &NodeFacts,
    units: &[UnitReport],
    scope: TopologyManagerScope,
    alignment: Alignment,
) -> (String, String) {
    let numa = NumaFigures::of(facts);
    if facts.topology_manager.policy == Some(TopologyManagerPolicy::None) {
        return (
            format!("the kubelet admits it unaligned: topologyManagerPolicy none aligns nothing on a machine of {}", plural(numa.gpus.len() as u64, "NUMA node")),
            relaxed("Run the Topology Manager there (best-effort, restricted or single-numa-node)".to_owned(), alignment),
        );
    }
    let unit = units.iter().find(|u| !u.aligned);
    let spans = spans(unit);
    let wide = spans.iter().find(|s| s.capacity != Some(1));
    match wide {
        Some(s) => (
            format!(
                "the kubelet admits it unaligned: {} narrowest NUMA mask is {}",
                possessive(s.resource, &request_words(s.resource, s.request)),
                mask_words(s.capacity)
            ),
            relaxed(
                format!("Request {}", numa.at_most_one(s.resource, scope)),
                alignment,
            ),
        ),
        None => (
            "the kubelet admits it, but not on one NUMA node".to_owned(),
            relaxed("Request fewer GPUs".to_owned(), alignment),
        ),
    }
}

fn failure_words(failure: AllocationFailure, resource: Resource) -> String {
    match failure {
        AllocationFailure::NotEnough {
            requested,
            available,
        } => match resource {
            Resource::Gpu | Resource::Cpu | Resource::Device(_) => {
                format!("{requested} asked, {available} free")
            }
            _ => format!("{} asked, {} free", bytes(requested), bytes(available)),
        },
        AllocationFailure::NoMemoryAffinity => "no NUMA nodes with enough memory".to_owned(),
        AllocationFailure::NoExtendedMemoryAffinity => {
            "no group of NUMA nodes holds the memory with the Topology Manager's choice".to_owned()
        }
        AllocationFailure::MemoryHintNotPreferred => {
            "only NUMA nodes the Topology Manager does not prefer hold the memory".to_owned()
        }
        AllocationFailure::MemoryViolatesNumaAllocation => {
            "the NUMA nodes would mix single- and cross-NUMA allocations".to_owned()
        }
    }
}

fn startup_words(error: StartupError) -> String {
    match error {
        StartupError::TooManyNumaNodes { numa_nodes, max_allowable } => format!(
            "{numa_nodes} NUMA nodes are more than topologyManagerPolicyOptions max-allowable-numa-nodes {max_allowable}"
        ),
        StartupError::AlignBySocketWithSingleNumaNode => {
            "align-by-socket with topologyManagerPolicy single-numa-node".to_owned()
        }
        StartupError::AlignBySocketMoreSocketsThanNumaNodes => {
            "align-by-socket with more sockets than NUMA nodes".to_owned()
        }
    }
}

/// How to make the kubelet start again, for each reason it does not.
fn startup_fix(error: StartupError) -> String {
    match error {
        StartupError::TooManyNumaNodes { numa_nodes, .. } => format!(
            "Set topologyManagerPolicyOptions max-allowable-numa-nodes to at least {numa_nodes} in the kubelet configuration of those nodes, or topologyManagerPolicy none"
        ),
        StartupError::AlignBySocketWithSingleNumaNode
        | StartupError::AlignBySocketMoreSocketsThanNumaNodes => {
            "Fix the kubelet configuration of those nodes".to_owned()
        }
    }
}

/// Why the model cannot answer, in words.
pub fn unknown_words(unknown: &Unknown) -> String {
    match unknown {
        Unknown::Missing(Fact::NumaNodes) => "the per-NUMA-node lists are not published".to_owned(),
        Unknown::Missing(fact) => format!("{fact} is not published"),
        Unknown::Indeterminate(Indeterminate::GpuPick { .. }) => {
            "it depends on which GPUs the device plugin picks".to_owned()
        }
        Unknown::Indeterminate(Indeterminate::DevicePick { resource, .. }) => {
            format!("it depends on which {resource} devices the device plugin picks")
        }
        Unknown::Indeterminate(Indeterminate::CpuIds { .. }) => {
            "it depends on which CPUs the CPU Manager picks".to_owned()
        }
        Unknown::Indeterminate(Indeterminate::NumaDistances { .. }) => {
            "prefer-closest-numa-nodes decides by NUMA distances, which are not published"
                .to_owned()
        }
        Unknown::Indeterminate(Indeterminate::DistributeLoop { .. }) => {
            "distribute-cpus-across-numa would loop in the kubelet".to_owned()
        }
        Unknown::Indeterminate(Indeterminate::MemoryRounding) => format!(
            "the static Memory Manager's answer depends on memory within the {} MiB the numa-memory-mib label rounds down",
            gpu_topology::NUMA_MEMORY_GRANULARITY_MIB
        ),
        Unknown::Indeterminate(Indeterminate::BusyCores { numa }) => format!(
            "other pods hold exclusive CPUs on NUMA node {numa} that are not whole cores"
        ),
        Unknown::Indeterminate(Indeterminate::MemoryGroups) => {
            "it depends on which NUMA nodes other pods' pinned memory is grouped with".to_owned()
        }
        Unknown::TooManyNumaNodes { numa_nodes } => {
            format!("{numa_nodes} NUMA nodes are more than the model follows")
        }
        Unknown::MergeTooLarge => "the Topology Manager's merge is too large to follow".to_owned(),
        Unknown::Unsupported(Unsupported::NumaSpanningSockets) => {
            "a NUMA node spans sockets".to_owned()
        }
        Unknown::Unsupported(Unsupported::PartialReservedCores { .. }) => {
            "reserved CPUs fill cores of more than 2 threads only partly".to_owned()
        }
        Unknown::Unsupported(Unsupported::HugePagesOnSomeNumaNodes) => {
            "a huge page size is present on some NUMA nodes only".to_owned()
        }
        Unknown::Unsupported(Unsupported::UnevenSockets) => "its sockets differ in size".to_owned(),
    }
}

#[cfg(test)]
mod tests;
