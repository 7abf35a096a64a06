//! The binding check's record in words: the policy's answer to the
//! scheduler, and the lines the tool prints.

use super::record::{BindingOutcome, BindingRecord, Checked, NotChecked};
use crate::decide::answer::Decision;
use crate::decide::explain::{
    bytes, is_plural, plural, refused, request_words, unknown_words, verb_s, who, NumaFigures,
};
use gpu_topology::kubelet::{
    HintReport, Occupancy, Refusal, Resource, ResourceReport, UnitReport, Verdict,
};

/// The most NUMA nodes a message lists free figures for.
const MAX_LISTED_NUMA_NODES: usize = 16;

/// The answer: a refusal refuses the binding, anything else allows it,
/// with a warning where the check could not be made or not be sure.
pub fn decision(record: &BindingRecord) -> Decision {
    match &record.outcome {
        BindingOutcome::NotGpuPod => Decision::accept(),
        BindingOutcome::NotChecked(why) => Decision {
            warnings: vec![not_checked(record, why)],
            ..Decision::accept()
        },
        BindingOutcome::Checked(checked) => match &checked.admission.verdict {
            Verdict::Admit { .. } => Decision::accept(),
            Verdict::Unknown(unknown) => Decision {
                warnings: vec![format!(
                    "the binding of pod {} to node {} is allowed, but whether its kubelet admits the pod now is unknown: {}",
                    record.pod,
                    record.node,
                    unknown_words(unknown)
                )],
                ..Decision::accept()
            },
            Verdict::Refuse(refusal) => Decision::reject(refusal_message(record, checked, refusal)),
        },
    }
}

/// The warning of a binding that was not checked.
pub(crate) fn not_checked(record: &BindingRecord, why: &NotChecked) -> String {
    format!(
        "the binding of pod {} to node {} was not checked against the node's NUMA occupancy: {}",
        record.pod,
        record.node,
        not_checked_words(why)
    )
}

/// Why, in words.
pub fn not_checked_words(why: &NotChecked) -> String {
    match why {
        NotChecked::PodUnread(error) => format!("the Pod could not be read ({error})"),
        NotChecked::PodMalformed(problem) => format!("the Pod's resources do not read ({problem})"),
        NotChecked::TooManyContainers { containers } => format!(
            "the pod has {containers} containers, more than the {} the kubelet model is asked about",
            crate::decide::MAX_CONTAINERS
        ),
        NotChecked::NodeUnread(error) => format!("the Node could not be read ({error})"),
        NotChecked::NodeUnlabeled => {
            "the node publishes no topology labels (run the node labeler there)".to_owned()
        }
        NotChecked::NodeLabels(problem) => format!("the node's labels do not read ({problem})"),
        NotChecked::TopologyMissing => "the node has no NodeResourceTopology (run NFD's topology-updater there: topologyUpdater.enable=true in NFD's chart)".to_owned(),
        NotChecked::TopologyUnread(error) => {
            format!("its NodeResourceTopology could not be read ({error})")
        }
        NotChecked::TopologyStale {
            age_seconds,
            limit_seconds,
        } => format!(
            "its NodeResourceTopology last changed {age_seconds} s ago, more than binding.topologyMaxAgeSeconds ({limit_seconds} s)"
        ),
        NotChecked::Topology(problem) => format!("its NodeResourceTopology is not used: {problem}"),
        NotChecked::ModelInput(error) => {
            format!("the node's labels and occupancy contradict each other ({error})")
        }
    }
}

/// `the kubelet of gpu-7 would refuse pod ml/train now: ...; free now: ...`
fn refusal_message(record: &BindingRecord, checked: &Checked, refusal: &Refusal) -> String {
    let unit = refused_unit(&checked.admission.units, refusal);
    let why = match refusal {
        Refusal::TopologyAffinity { container } => topology_affinity(checked, unit, *container),
        _ => None,
    }
    .unwrap_or_else(|| {
        refused(
            refusal,
            &checked.demand,
            &checked.facts,
            &checked.admission.units,
            checked.demand.scope,
        )
        .0
    });
    let free = unit.map_or_else(Vec::new, |unit| free_words(checked, &unit.resources));
    // The figures are the node's before this pod: for a later container
    // (scope container), its earlier containers have taken some of them.
    let after_earlier = unit.is_some_and(|u| u.container.is_some_and(|i| i > 0));
    let free = match (free.is_empty(), after_earlier) {
        (true, _) => String::new(),
        (false, false) => format!("; free now: {}", free.join("; ")),
        (false, true) => format!(
            "; free before the pod's earlier containers: {}",
            free.join("; ")
        ),
    };
    format!(
        "the kubelet of {} would refuse pod {} now: {why}{free}. The scheduler queues the pod again and binds it where the kubelet admits it",
        record.node, record.pod
    )
}

/// The unit the kubelet refuses: the last one evaluated.
fn refused_unit<'a>(units: &'a [UnitReport], refusal: &Refusal) -> Option<&'a UnitReport> {
    let container = match refusal {
        Refusal::TopologyAffinity { container } => *container,
        _ => return units.last(),
    };
    units
        .iter()
        .rev()
        .find(|u| u.container == container)
        .or(units.last())
}

/// A `TopologyAffinityError` on a busy node: a resource that fits its
/// narrowest mask by capacity but has no mask that narrow free now.
fn topology_affinity(
    checked: &Checked,
    unit: Option<&UnitReport>,
    container: Option<usize>,
) -> Option<String> {
    let policy = checked.facts.topology_manager.policy?;
    let whose = match container {
        Some(_) => format!(" of {}", who(&checked.demand, container)),
        None => String::new(),
    };
    let short = unit?.resources.iter().find_map(|r| match r.hints {
        HintReport::Hints {
            narrowest_capacity,
            narrowest_available,
            ..
        } if narrowest_available > narrowest_capacity => {
            Some((r, narrowest_capacity, Some(narrowest_available)))
        }
        HintReport::NoFit => Some((r, 0, None)),
        _ => None,
    })?;
    let (report, capacity, available) = short;
    let what = request_words(report.resource, report.request);
    let verb = verb_s(report.resource, report.request);
    let pronoun = if is_plural(report.resource, report.request) {
        "them"
    } else {
        "it"
    };
    Some(match available {
        Some(available) => format!(
            "{what}{whose} need{verb} {} ({policy}), and the fewest NUMA nodes with {pronoun} free are {available}: TopologyAffinityError",
            plural(u64::from(capacity), "NUMA node")
        ),
        None => format!(
            "{what}{whose} fit{verb} no NUMA nodes with what is free ({policy}): TopologyAffinityError"
        ),
    })
}

/// What each resource of the refused unit has free per NUMA node:
/// `GPUs: NUMA node 0 has 2 free, NUMA node 1 has 2 free`.
fn free_words(checked: &Checked, resources: &[ResourceReport]) -> Vec<String> {
    let figures = NumaFigures::of(&checked.facts);
    resources
        .iter()
        .filter(|r| !matches!(r.hints, HintReport::DontCare))
        .filter_map(|r| {
            let free = free_per_numa(&figures, &checked.occupancy, r.resource)?;
            let shown: Vec<String> = free
                .iter()
                .take(MAX_LISTED_NUMA_NODES)
                .enumerate()
                .map(|(numa, &amount)| {
                    let amount = match r.resource {
                        Resource::Memory | Resource::HugePages2Mi | Resource::HugePages1Gi => {
                            bytes(amount)
                        }
                        _ => amount.to_string(),
                    };
                    format!("NUMA node {numa} has {amount} free")
                })
                .collect();
            let more = free.len().saturating_sub(MAX_LISTED_NUMA_NODES);
            let more = if more > 0 {
                format!(" and {more} more NUMA nodes")
            } else {
                String::new()
            };
            Some(format!("{}: {}{more}", r.resource, shown.join(", ")))
        })
        .collect()
}

/// Free per NUMA node: the labels' allocatable less what other pods hold.
pub(crate) fn free_per_numa(
    figures: &NumaFigures,
    occupancy: &Occupancy,
    resource: Resource,
) -> Option<Vec<u64>> {
    let held = |numa: usize| occupancy.numa_nodes.get(numa);
    let less = |values: &[u64], taken: &dyn Fn(usize) -> u64| -> Vec<u64> {
        values
            .iter()
            .enumerate()
            .map(|(numa, &value)| value.saturating_sub(taken(numa)))
            .collect()
    };
    Some(match resource {
        Resource::Gpu => less(&figures.gpus, &|n| held(n).map_or(0, |h| u64::from(h.gpus))),
        Resource::Cpu => less(&figures.free_cpus, &|n| {
            held(n).map_or(0, |h| u64::from(h.cpus))
        }),
        Resource::Memory => less(&figures.memory[0], &|n| held(n).map_or(0, |h| h.memory[0])),
        Resource::HugePages2Mi => less(&figures.memory[1], &|n| held(n).map_or(0, |h| h.memory[1])),
        Resource::HugePages1Gi => less(&figures.memory[2], &|n| held(n).map_or(0, |h| h.memory[2])),
        Resource::Device(name) => {
            let counts = figures.devices.get(name.as_str())?;
            less(counts, &|n| {
                held(n).map_or(0, |h| u64::from(h.device(name.as_str())))
            })
        }
    })
}
