//! Messages built from the kubelet model's verdicts: for the best node
//! groups, what the kubelet would do there with the arithmetic behind it
//! (GPUs, CPUs and memory per NUMA node against the request, the narrowest
//! NUMA masks, the SMT multiple), and the request or setting to change.
//! Kept to a sentence or two per group, for `kubectl` output.

use crate::decide::demand::Demand;
use crate::decide::model::Need;
use crate::decide::model::{Answer, GroupVerdict};
use crate::request::quantity::Quantity;
use crate::settings::TopologyConfig;
use gpu_topology::kubelet::{
    AllocationFailure, Fact, HintReport, Indeterminate, NodeFacts, Refusal, Resource,
    ResourceReport, StartupError, UnitReport, Unknown, Unsupported,
};
use gpu_topology::quantity::cpu_words;
use gpu_topology::{Alignment, NodeTopology, TopologyManagerPolicy, TopologyManagerScope};

/// Groups a message explains; the rest are counted.
const EXPLAINED_GROUPS: usize = 2;
const MIB: u64 = 1 << 20;

/// The rejection message when no group of the view takes the pod.
pub fn no_group_takes_it(
    demand: &Demand,
    need: Need,
    verdicts: &[GroupVerdict],
    topology: &TopologyConfig,
) -> String {
    if let Some(message) = too_few_gpus_everywhere(demand, verdicts) {
        return message;
    }
    let nodes: u32 = verdicts.iter().map(GroupVerdict::nodes).sum();
    let lead = match need {
        Need::Admit => format!(
            "it needs {}, but {}",
            demand.describe_total(),
            no_kubelet_admits(nodes)
        ),
        Need::Host(alignment) => format!(
            "it needs {} {} (topology.affinity: required), but {}",
            demand.describe_unit(),
            alignment.describe(),
            no_node_hosts(nodes)
        ),
    };
    format!(
        "GPU pod cannot be placed: {lead}. {}",
        groups_explained(demand, need, verdicts, topology)
    )
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
/// with its fix.
pub fn groups_explained(
    demand: &Demand,
    need: Need,
    verdicts: &[GroupVerdict],
    topology: &TopologyConfig,
) -> String {
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
    let mut sentences: Vec<String> = ranked
        .iter()
        .take(EXPLAINED_GROUPS)
        .map(|verdict| group_sentence(demand, need, verdict, topology))
        .collect();
    sentences.extend(not_shown(ranked.len().saturating_sub(EXPLAINED_GROUPS)));
    sentences.join(" ")
}

/// `(1 more node shape not shown.)`; nothing when every group is explained.
fn not_shown(rest: usize) -> Option<String> {
    (rest > 0).then(|| format!("({} not shown.)", plural(rest as u64, "more node shape")))
}

/// `On the 10 nodes of shape X (...) <why>. <Fix>.`
pub fn group_sentence(
    demand: &Demand,
    need: Need,
    verdict: &GroupVerdict,
    topology: &TopologyConfig,
) -> String {
    let (why, fix) = why_and_fix(demand, need, verdict);
    format!("On {} {why}. {fix}.", where_words(verdict, topology))
}

/// `the 10 nodes of shape 0123456789abcdef (8 GPUs, 4+4 per NUMA node, ...)`
pub fn where_words(verdict: &GroupVerdict, topology: &TopologyConfig) -> String {
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
pub fn shape_words(
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

/// The pod needs more GPUs than any group has: the whole message, as the
/// static check words it.
fn too_few_gpus_everywhere(demand: &Demand, verdicts: &[GroupVerdict]) -> Option<String> {
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
    let fits = u32::try_from(largest).unwrap_or(u32::MAX);
    Some(crate::decide::capacity::too_many(
        &demand.describe_total(),
        TopologyManagerScope::Pod,
        &format!(
            "the largest labeled GPU node has {largest} ({})",
            plural(u64::from(nodes), "node")
        ),
        fits,
    ))
}

/// Why the group does not take the pod as needed, and what to change.
pub fn why_and_fix(demand: &Demand, need: Need, verdict: &GroupVerdict) -> (String, String) {
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

/// A resource's request and narrowest NUMA masks, from its report.
struct Span {
    resource: Resource,
    request: u64,
    /// Fewest NUMA nodes whose capacity holds the request; `None`: no mask can.
    capacity: Option<u32>,
    /// Fewest NUMA nodes of what is free when the unit is admitted.
    available: Option<u32>,
}

fn spans(unit: Option<&UnitReport>) -> Vec<Span> {
    unit.map_or(&[][..], |u| u.resources.as_slice())
        .iter()
        .filter_map(|r: &ResourceReport| match r.hints {
            HintReport::DontCare => None,
            HintReport::NoFit => Some(Span {
                resource: r.resource,
                request: r.request,
                capacity: None,
                available: None,
            }),
            HintReport::Hints {
                narrowest_capacity,
                narrowest_available,
                ..
            } => Some(Span {
                resource: r.resource,
                request: r.request,
                capacity: Some(narrowest_capacity),
                available: Some(narrowest_available),
            }),
        })
        .collect()
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

/// Per-NUMA figures of a node, for the fixes' arithmetic.
pub(crate) struct NumaFigures {
    pub(crate) gpus: Vec<u64>,
    /// CPUs, reserved ones included (the kubelet's capacity for hints).
    pub(crate) cpus: Vec<u64>,
    /// CPUs less reserved ones (what an allocation can take).
    pub(crate) free_cpus: Vec<u64>,
    /// Allocatable bytes of memory, hugepages-2Mi, hugepages-1Gi.
    pub(crate) memory: [Vec<u64>; 3],
    /// Devices of each other device resource the node publishes.
    pub(crate) devices: std::collections::BTreeMap<String, Vec<u64>>,
}

impl NumaFigures {
    pub(crate) fn of(facts: &NodeFacts) -> Self {
        let numas = facts.numa_nodes.as_deref().unwrap_or_default();
        let list = |f: &dyn Fn(&gpu_topology::kubelet::NumaNodeFacts) -> u64| {
            numas.iter().map(f).collect::<Vec<u64>>()
        };
        let huge = |p: Option<gpu_topology::kubelet::HugePages>, size: u64| {
            p.map_or(0, |p| {
                p.pages
                    .saturating_sub(p.reserved_pages)
                    .saturating_mul(size)
            })
        };
        // Without the per-NUMA lists (an old labeler), the GPUs as the
        // node's counts give them: NUMA nodes of `gpus-per-numa-max`.
        let gpus = match (numas.is_empty(), facts.gpus_per_numa_max) {
            (true, Some(most)) if most > 0 => {
                let numa_nodes = facts.gpus.unwrap_or(most).div_ceil(most);
                vec![u64::from(most); numa_nodes as usize]
            }
            _ => list(&|n| u64::from(n.gpus.unwrap_or(0))),
        };
        NumaFigures {
            gpus,
            cpus: list(&|n| u64::from(n.cpus.unwrap_or(0))),
            free_cpus: list(&|n| {
                u64::from(
                    n.cpus
                        .unwrap_or(0)
                        .saturating_sub(n.reserved_cpus.unwrap_or(0)),
                )
            }),
            memory: [
                list(&|n| {
                    n.memory_mib
                        .unwrap_or(0)
                        .saturating_sub(n.reserved_memory_mib.unwrap_or(0))
                        .saturating_mul(MIB)
                        .saturating_sub(huge(n.hugepages_2mi, 2 * MIB))
                        .saturating_sub(huge(n.hugepages_1gi, 1024 * MIB))
                }),
                list(&|n| huge(n.hugepages_2mi, 2 * MIB)),
                list(&|n| huge(n.hugepages_1gi, 1024 * MIB)),
            ],
            devices: gpu_topology::sort::btree_map(facts.devices.iter().map(|(name, counts)| {
                (name.clone(), counts.iter().map(|&c| u64::from(c)).collect())
            })),
        }
    }

    /// The sum of the `k` largest values.
    fn largest(&self, values: &[u64], k: u32) -> u64 {
        let mut sorted = values.to_vec();
        gpu_topology::sort::sort_by(&mut sorted, |a, b| b.cmp(a));
        sorted.iter().take(k as usize).sum()
    }

    /// The CPU counts whose narrowest mask is `span` NUMA nodes and that
    /// those nodes can allocate: more than the `span - 1` largest hold, at
    /// most what the `span` freest leave.
    fn cpus_spanning(&self, span: u32) -> (u64, u64) {
        let low = self.largest(&self.cpus, span.saturating_sub(1)) + 1;
        (low, self.largest(&self.free_cpus, span).max(low))
    }

    /// `at most 4 GPUs`, `at most 54 whole CPUs ...`: what `span` NUMA nodes hold.
    fn at_most(&self, resource: Resource, span: u32) -> String {
        match resource {
            Resource::Gpu => format!("at most {}", plural(self.largest(&self.gpus, span), "GPU")),
            Resource::Cpu => format!(
                "at most {} exclusive CPUs",
                self.largest(&self.free_cpus, span)
            ),
            Resource::Memory => format!(
                "at most {} of memory",
                bytes(self.largest(&self.memory[0], span))
            ),
            Resource::HugePages2Mi => format!(
                "at most {} of hugepages-2Mi",
                bytes(self.largest(&self.memory[1], span))
            ),
            Resource::HugePages1Gi => format!(
                "at most {} of hugepages-1Gi",
                bytes(self.largest(&self.memory[2], span))
            ),
            Resource::Device(name) => {
                let counts = self
                    .devices
                    .get(name.as_str())
                    .map_or(&[][..], Vec::as_slice);
                format!("at most {} {name}", self.largest(counts, span))
            }
        }
    }

    /// The fix that brings `resource` onto one NUMA node.
    fn at_most_one(&self, resource: Resource, scope: TopologyManagerScope) -> String {
        match resource {
            Resource::Cpu => format!(
                "{}, or a fractional CPU amount (shared pool)",
                self.at_most(Resource::Cpu, 1)
            ),
            Resource::Gpu => format!("{} {}", self.at_most(Resource::Gpu, 1), per(scope)),
            other => self.at_most(other, 1),
        }
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
mod tests {
    use super::*;
    use crate::decide::demand::PodDemand;
    use crate::decide::testing::{config, hgx, node, pod, view, HGX, KUBELET};
    use crate::decide::PodInput;
    use gpu_topology::kubelet::{facts_from_topology, HintReport, ResourceReport};
    use rstest::rstest;
    use serde_json::{json, Value};

    // The tables below cover every counted noun of these messages (nodes,
    // node shapes, GPUs, CPUs, NUMA nodes) for 0, 1 and several (issue #23:
    // "Every message sentence is tested for 0, 1 and several nodes or
    // shapes"); where a number cannot occur, a comment says why.

    #[rstest]
    #[case::two_sockets(&[4, 4], "4+4")]
    #[case::eight_numa_nodes_spelled_out(&[0, 2, 0, 2, 0, 2, 0, 2], "0+2+0+2+0+2+0+2")]
    #[case::gb200_tray_runs(&[2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "2+2+0×32")]
    #[case::gh200_runs(&[72, 0, 0, 0, 0, 0, 0, 0, 0], "72+0×8")]
    #[case::short_runs_spelled_out(&[1, 1, 2, 2, 3, 3, 4, 4, 5], "1+1+2+2+3+3+4+4+5")]
    fn per_numa_counts_stay_readable_on_many_numa_nodes(#[case] list: &[u32], #[case] words: &str) {
        assert_eq!(joined(list), words);
    }

    #[rstest]
    #[case::too_many_numa_nodes(
        StartupError::TooManyNumaNodes { numa_nodes: 34, max_allowable: 8 },
        "Set topologyManagerPolicyOptions max-allowable-numa-nodes to at least 34"
    )]
    #[case::align_by_socket(
        StartupError::AlignBySocketWithSingleNumaNode,
        "Fix the kubelet configuration"
    )]
    fn a_kubelet_that_does_not_start_is_told_what_to_set(
        #[case] error: StartupError,
        #[case] fix_starts: &str,
    ) {
        assert!(
            startup_fix(error).starts_with(fix_starts),
            "{}",
            startup_fix(error)
        );
    }

    /// One container with `gpus` GPUs, `cpu` and `memory` as limits.
    fn pod_with(gpus: u32, cpu: &str, memory: &str) -> Value {
        json!({"containers": [{"name": "train", "resources": {"limits": {
            "nvidia.com/gpu": gpus.to_string(), "cpu": cpu, "memory": memory}}}]})
    }

    /// An HGX node (4 + 4 GPUs, 56 CPUs and about 1007Gi per NUMA node)
    /// whose kubelet runs the static Memory Manager.
    fn hgx_memory_static(policy: &str) -> NodeTopology {
        let kubelet = KUBELET.replace("memory-manager-policy=none", "memory-manager-policy=static");
        node(&format!("{HGX} {kubelet} topology-manager-policy={policy}"))
    }

    /// Why and fix for the pod `spec` on one node of `topology`, from the
    /// model's verdict.
    fn why_fix_on(spec: &Value, topology: NodeTopology, settings: Value) -> (String, String) {
        let config = config(settings);
        let view = view(vec![(topology, 1)]);
        let input = PodInput::read(spec, &config).unwrap().unwrap();
        let verdicts = crate::decide::fit::verdicts(&view.fleet, spec, &input, &config).unwrap();
        why_and_fix(&input.demand, Need::for_pod(&config), &verdicts[0])
    }

    fn demand_of(spec: &Value) -> Demand {
        let pod = PodDemand::from_pod_spec(spec, &["nvidia.com/gpu".to_owned()]).unwrap();
        Demand::new(pod, TopologyManagerScope::Pod)
    }

    /// A slow hint search names its numbers, and its fix by the kubelet's
    /// version: an upgrade to 1.36 before it (device hints then range over
    /// the devices' NUMA nodes), fewer aligned resources from it.
    #[rstest]
    #[case::before_1_36(Some((1, 35)), "Upgrade the kubelet to 1.36")]
    #[case::version_unknown(None, "Upgrade the kubelet to 1.36")]
    #[case::from_1_36(Some((1, 36)), "Set topologyManagerPolicy none there")]
    fn a_slow_hint_search_names_its_work_and_fix(
        #[case] version: Option<(u32, u32)>,
        #[case] fix_starts: &str,
    ) {
        let demand = demand_of(&pod_with(2, "8", "64Gi"));
        let facts = NodeFacts {
            kubelet_version: version
                .map(|(major, minor)| gpu_topology::KubeletVersion::new(major, minor)),
            ..NodeFacts::default()
        };
        let refusal = Refusal::HintSearchTooSlow {
            container: Some(0),
            masks: 17_179_869_186,
            permutations: 38_654_705_664,
        };
        let (why, fix) = refused(&refusal, &demand, &facts, &[], TopologyManagerScope::Pod);
        assert!(
            why.contains("walks 17179869186 NUMA masks and at least 38654705664 hint permutations"),
            "{why}"
        );
        assert!(why.contains("the pod stays Pending"), "{why}");
        assert!(fix.starts_with(fix_starts), "{fix}");
    }

    /// The node shapes left unexplained: 0 says nothing.
    #[rstest]
    #[case::zero_shapes(0, None)]
    #[case::one_shape(1, Some("(1 more node shape not shown.)"))]
    #[case::several_shapes(4, Some("(4 more node shapes not shown.)"))]
    fn shapes_not_shown(#[case] rest: usize, #[case] words: Option<&str>) {
        assert_eq!(not_shown(rest), words.map(str::to_owned));
    }

    /// A group's nodes. Zero is unreachable: a group exists because a node
    /// carries its shape.
    #[rstest]
    #[case::one_node(1, "the node")]
    #[case::several_nodes(10, "the 10 nodes")]
    fn a_groups_nodes(#[case] count: u32, #[case] words: &str) {
        assert_eq!(the_nodes(count), words);
    }

    /// The shape in words: GPUs and CPUs per NUMA node in number.
    #[rstest]
    #[case::zero_gpus(0, vec![56, 56], "0 GPUs, 4+4 per NUMA node, 56 CPUs per NUMA node, topologyManagerPolicy restricted")]
    #[case::one_gpu_one_cpu_per_numa_node(1, vec![1, 1], "1 GPU, 4+4 per NUMA node, 1 CPU per NUMA node, topologyManagerPolicy restricted")]
    #[case::several_gpus_uneven_cpus(8, vec![56, 48], "8 GPUs, 4+4 per NUMA node, 56+48 CPUs per NUMA node, topologyManagerPolicy restricted")]
    fn shape_words_agree_in_number(#[case] gpus: u32, #[case] cpus: Vec<u32>, #[case] words: &str) {
        let mut topology = hgx("restricted");
        topology.gpus = Some(gpus);
        topology.numa_cpus = Some(cpus);
        assert_eq!(
            shape_words(
                &topology,
                TopologyManagerScope::Pod,
                TopologyManagerScope::Pod
            ),
            words
        );
    }

    /// SMTAlignmentError: the CPUs asked and the CPUs free on whole cores.
    /// (requested, cpus per core, free on whole cores, why, fix). A count
    /// of 0 exclusive CPUs never reaches the CPU Manager; the threads per
    /// core are at least 2 (every count is a multiple of 1).
    #[rstest]
    #[case::one_cpu_not_a_multiple(1, 2, None,
        "container \"train\"'s 1 exclusive CPU is not a multiple of the 2 threads per core that cpuManagerPolicyOptions full-pcpus-only allocates: the kubelet refuses it with SMTAlignmentError",
        "Request a multiple of 2 CPUs (2), or a fractional CPU amount (shared pool)")]
    #[case::several_cpus_not_a_multiple(3, 2, None,
        "container \"train\"'s 3 exclusive CPUs are not a multiple of the 2 threads per core that cpuManagerPolicyOptions full-pcpus-only allocates: the kubelet refuses it with SMTAlignmentError",
        "Request a multiple of 2 CPUs (4), or a fractional CPU amount (shared pool)")]
    #[case::several_cpus_none_free(4, 2, Some(0),
        "container \"train\"'s 4 exclusive CPUs are more than the 0 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
        "Request at most 0 CPUs")]
    #[case::several_cpus_one_free(2, 1, Some(1),
        "container \"train\"'s 2 exclusive CPUs are more than the 1 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
        "Request at most 1 CPU")]
    #[case::one_cpu_none_free(1, 1, Some(0),
        "container \"train\"'s 1 exclusive CPU is more than the 0 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
        "Request at most 0 CPUs")]
    #[case::several_cpus_several_free(8, 2, Some(6),
        "container \"train\"'s 8 exclusive CPUs are more than the 6 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
        "Request at most 6 CPUs")]
    fn smt_alignment_in_number(
        #[case] requested: u32,
        #[case] cpus_per_core: u32,
        #[case] available_physical_cpus: Option<u32>,
        #[case] why: &str,
        #[case] fix: &str,
    ) {
        let refusal = Refusal::SmtAlignment {
            container: 0,
            requested,
            cpus_per_core,
            available_physical_cpus,
        };
        let demand = demand_of(&pod(1, requested));
        assert_eq!(
            refused(
                &refusal,
                &demand,
                &NodeFacts::default(),
                &[],
                TopologyManagerScope::Pod
            ),
            (why.to_owned(), fix.to_owned())
        );
    }

    /// TopologyAffinityError through the model, for one and several GPUs,
    /// CPUs and NUMA nodes, and memory (a measured noun, in the singular).
    /// No GPU or CPU on its own needs more than one NUMA node, so `the 1 GPU
    /// needs 2 NUMA nodes` cannot occur; nor can a mask of 0 NUMA nodes.
    #[rstest]
    #[case::several_gpus_several_cpus_restricted(pod(8, 32), hgx("restricted"),
        "the GPUs' narrowest NUMA mask is 2 nodes but the 32 exclusive CPUs' is 1 node: the kubelet refuses it with TopologyAffinityError",
        "Request 57 to 110 CPUs so that they span 2 NUMA nodes as the GPUs do, a fractional CPU amount (shared pool), or at most 4 GPUs")]
    #[case::several_gpus_one_cpu_restricted(pod(8, 1), hgx("restricted"),
        "the GPUs' narrowest NUMA mask is 2 nodes but the 1 exclusive CPU's is 1 node: the kubelet refuses it with TopologyAffinityError",
        "Request 57 to 110 CPUs so that they span 2 NUMA nodes as the GPUs do, a fractional CPU amount (shared pool), or at most 4 GPUs")]
    #[case::one_gpu_several_cpus_restricted(pod(1, 96), hgx("restricted"),
        "the GPU's narrowest NUMA mask is 1 node but the 96 exclusive CPUs' is 2 nodes: the kubelet refuses it with TopologyAffinityError",
        "Request at most 56 exclusive CPUs so that the 96 exclusive CPUs fit 1 NUMA node as the GPU does")]
    #[case::several_gpus_on_one_numa_node_several_cpus_restricted(pod(2, 96), hgx("restricted"),
        "the GPUs' narrowest NUMA mask is 1 node but the 96 exclusive CPUs' is 2 nodes: the kubelet refuses it with TopologyAffinityError",
        "Request at most 56 exclusive CPUs so that the 96 exclusive CPUs fit 1 NUMA node as the GPUs do")]
    #[case::several_gpus_memory_restricted(pod_with(8, "2500m", "64Gi"), hgx_memory_static("restricted"),
        "the GPUs' narrowest NUMA mask is 2 nodes but the 64Gi of memory's is 1 node: the kubelet refuses it with TopologyAffinityError",
        "Request more than 1007Gi of memory so that it spans 2 NUMA nodes as the GPUs do, or at most 4 GPUs")]
    #[case::several_gpus_single_numa_node(pod(8, 16), hgx("single-numa-node"),
        "the 8 GPUs need 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError",
        "Request at most 4 GPUs per pod")]
    #[case::several_gpus_and_cpus_single_numa_node(pod(8, 96), hgx("single-numa-node"),
        "the 8 GPUs need 2 NUMA nodes and the 96 exclusive CPUs need 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError",
        "Request at most 4 GPUs per pod, or at most 56 exclusive CPUs, or a fractional CPU amount (shared pool)")]
    #[case::memory_single_numa_node(pod_with(4, "16", "1100Gi"), hgx_memory_static("single-numa-node"),
        "the 1100Gi of memory needs 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError",
        "Request at most 1007Gi of memory")]
    fn topology_affinity_in_number(
        #[case] spec: Value,
        #[case] topology: NodeTopology,
        #[case] why: &str,
        #[case] fix: &str,
    ) {
        assert_eq!(
            why_fix_on(&spec, topology, json!({})),
            (why.to_owned(), fix.to_owned())
        );
    }

    /// A resource that fits its narrowest mask by capacity but not what
    /// earlier containers left (scope container), as plain data: counted
    /// GPUs in the plural, measured memory in the singular. One GPU or CPU
    /// always finds one NUMA node with room if any has room; then it has
    /// no hint at all and the message is not this one.
    #[rstest]
    #[case::several_gpus(Resource::Gpu, 2,
        "the 2 GPUs of container \"train\" fit 1 node by capacity, but after the containers before it the fewest NUMA nodes with room for them are 2 nodes: the kubelet refuses it with TopologyAffinityError")]
    #[case::memory(Resource::Memory, 600 << 30,
        "the 600Gi of memory of container \"train\" fits 1 node by capacity, but after the containers before it the fewest NUMA nodes with room for it are 2 nodes: the kubelet refuses it with TopologyAffinityError")]
    fn fits_by_capacity_not_after_the_containers_before(
        #[case] resource: Resource,
        #[case] request: u64,
        #[case] why: &str,
    ) {
        let unit = UnitReport {
            container: Some(0),
            resources: vec![ResourceReport {
                resource,
                request,
                hints: HintReport::Hints {
                    narrowest_capacity: 1,
                    narrowest_available: 2,
                    preferred_masks: 0,
                },
            }],
            hint: None,
            aligned: false,
        };
        let facts = facts_from_topology(&hgx("restricted"), TopologyManagerScope::Container);
        let (words, _) = topology_affinity(
            &demand_of(&pod(2, 4)),
            &facts,
            Some(&unit),
            Some(0),
            TopologyManagerScope::Container,
        );
        assert_eq!(words, why);
    }

    /// Devices narrower than the GPUs, as plain data: the device count in
    /// number. Zero devices give no hint, so no such sentence.
    #[rstest]
    #[case::one_device(1,
        "the GPUs' narrowest NUMA mask is 2 nodes but the 1 rdma/ib's is 1 node: the kubelet refuses it with TopologyAffinityError",
        "Request at most 4 GPUs so that they fit 1 NUMA node as the 1 rdma/ib does")]
    #[case::several_devices(8,
        "the GPUs' narrowest NUMA mask is 2 nodes but the 8 rdma/ib's is 1 node: the kubelet refuses it with TopologyAffinityError",
        "Request at most 4 GPUs so that they fit 1 NUMA node as the 8 rdma/ib do")]
    fn devices_narrower_than_the_gpus(#[case] devices: u64, #[case] why: &str, #[case] fix: &str) {
        let report = |resource, request, narrowest| ResourceReport {
            resource,
            request,
            hints: HintReport::Hints {
                narrowest_capacity: narrowest,
                narrowest_available: narrowest,
                preferred_masks: 1,
            },
        };
        let unit = UnitReport {
            container: None,
            resources: vec![
                report(Resource::Gpu, 8, 2),
                report(
                    Resource::Device(gpu_topology::kubelet::DeviceName::new("rdma/ib")),
                    devices,
                    1,
                ),
            ],
            hint: None,
            aligned: false,
        };
        let facts = facts_from_topology(&hgx("restricted"), TopologyManagerScope::Pod);
        assert_eq!(
            topology_affinity(
                &demand_of(&pod(8, 8)),
                &facts,
                Some(&unit),
                None,
                TopologyManagerScope::Pod
            ),
            (why.to_owned(), fix.to_owned())
        );
    }

    /// Admitted, not aligned (`required` with `numa`): the widest resource
    /// in number. A machine of one NUMA node is always aligned, so `1 NUMA
    /// node` never follows `topologyManagerPolicy none`.
    #[rstest]
    #[case::several_gpus(pod(8, 8), hgx("best-effort"),
        "the kubelet admits it unaligned: the 8 GPUs' narrowest NUMA mask is 2 nodes",
        "Request at most 4 GPUs per pod, or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
    #[case::several_cpus(pod(1, 96), hgx("best-effort"),
        "the kubelet admits it unaligned: the 96 exclusive CPUs' narrowest NUMA mask is 2 nodes",
        "Request at most 56 exclusive CPUs, or a fractional CPU amount (shared pool), or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
    #[case::memory(pod_with(1, "2500m", "1100Gi"), hgx_memory_static("best-effort"),
        "the kubelet admits it unaligned: the 1100Gi of memory's narrowest NUMA mask is 2 nodes",
        "Request at most 1007Gi of memory, or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
    #[case::several_numa_nodes_policy_none(pod(1, 8), hgx("none"),
        "the kubelet admits it unaligned: topologyManagerPolicy none aligns nothing on a machine of 2 NUMA nodes",
        "Run the Topology Manager there (best-effort, restricted or single-numa-node), or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
    fn unaligned_in_number(
        #[case] spec: Value,
        #[case] topology: NodeTopology,
        #[case] why: &str,
        #[case] fix: &str,
    ) {
        let settings = json!({"topology": {"affinity": "required", "alignment": "numa"}});
        assert_eq!(
            why_fix_on(&spec, topology, settings),
            (why.to_owned(), fix.to_owned())
        );
    }

    /// The pod's GPUs above every group's: the largest and its nodes in
    /// number. Zero groups never get here (an empty view is answered
    /// before, "no node publishes ... labels"); a labeled GPU node has at
    /// least one GPU.
    #[rstest]
    #[case::one_node(vec![(hgx("best-effort"), 1)],
        "GPU pod cannot be placed: it needs 16 GPUs (container \"train\": 16 nvidia.com/gpu) but the largest labeled GPU node has 8 (1 node). Request at most 8 GPUs per pod, or split the work across several pods.")]
    #[case::several_nodes_of_several_shapes(vec![(hgx("best-effort"), 2), (hgx("restricted"), 3)],
        "GPU pod cannot be placed: it needs 16 GPUs (container \"train\": 16 nvidia.com/gpu) but the largest labeled GPU node has 8 (5 nodes). Request at most 8 GPUs per pod, or split the work across several pods.")]
    fn too_few_gpus_on_every_node(#[case] groups: Vec<(NodeTopology, u32)>, #[case] message: &str) {
        let spec = pod(16, 8);
        let config = config(json!({}));
        let view = view(groups);
        let input = PodInput::read(&spec, &config).unwrap().unwrap();
        let verdicts = crate::decide::fit::verdicts(&view.fleet, &spec, &input, &config).unwrap();
        assert_eq!(
            too_few_gpus_everywhere(&input.demand, &verdicts).as_deref(),
            Some(message)
        );
        assert_eq!(too_few_gpus_everywhere(&input.demand, &[]), None);
    }

    /// Every number of nodes keeps the negation (issue #23 item 5: the
    /// singular once read "the kubelet of the only labeled GPU node admits it").
    #[rstest]
    #[case::no_node(
        0,
        "the kubelet of no labeled GPU node admits it",
        "no labeled GPU node hosts it so"
    )]
    #[case::one_node(
        1,
        "the kubelet of the only labeled GPU node does not admit it",
        "the only labeled GPU node does not host it so"
    )]
    #[case::several_nodes(
        5,
        "the kubelet of none of the 5 labeled GPU nodes admits it",
        "none of the 5 labeled GPU nodes hosts it so"
    )]
    fn no_node_takes_it_in_every_number(
        #[case] nodes: u32,
        #[case] admits: &str,
        #[case] hosts: &str,
    ) {
        assert_eq!(no_kubelet_admits(nodes), admits);
        assert_eq!(no_node_hosts(nodes), hosts);
    }

    /// (resource, requested, capacity, reserved, why, fix)
    #[rstest]
    #[case::cpus_none_reserved(Resource::Cpu, 80_000, 64_000, 0,
        "the pod requests 80 CPUs, more than a node there can allocate (64 CPUs): the scheduler never places it there (Insufficient cpu)",
        "Request at most 64 CPUs per pod, or split the work across several pods")]
    #[case::cpus_one_reserved(Resource::Cpu, 1500, 1_000, 1_000,
        "the pod requests 1500m CPU, more than a node there can allocate (1 CPU, 1 of them reserved by the kubelet): the scheduler never places it there (Insufficient cpu)",
        "Request at most 0 CPUs per pod, or split the work across several pods")]
    #[case::cpus_several_reserved(Resource::Cpu, 112_000, 112_000, 2_000,
        "the pod requests 112 CPUs, more than a node there can allocate (112 CPUs, 2 of them reserved by the kubelet): the scheduler never places it there (Insufficient cpu)",
        "Request at most 110 CPUs per pod, or split the work across several pods")]
    #[case::memory(Resource::Memory, 600 << 30, (512 << 30) + (2 << 20), 0,
        "the pod requests 600Gi of memory, more than a node there can allocate (at most 512Gi of memory): the scheduler never places it there (Insufficient memory)",
        "Request at most 512Gi of memory per pod, or split the work across several pods")]
    fn node_size_refusals_say_the_numbers(
        #[case] resource: Resource,
        #[case] requested: u64,
        #[case] capacity: u64,
        #[case] reserved: u64,
        #[case] why: &str,
        #[case] fix: &str,
    ) {
        assert_eq!(
            node_too_small(resource, requested, capacity, reserved),
            (why.to_owned(), fix.to_owned())
        );
    }

    #[rstest]
    #[case::one_gpu(1, Resource::Gpu, "1 GPU")]
    #[case::gpus(8, Resource::Gpu, "8 GPUs")]
    #[case::one_cpu(1, Resource::Cpu, "1 exclusive CPU")]
    #[case::cpus(0, Resource::Cpu, "0 exclusive CPUs")]
    fn amounts_agree_in_number(
        #[case] count: u64,
        #[case] resource: Resource,
        #[case] words: &str,
    ) {
        assert_eq!(amount(count, resource), words);
    }
}
