//! The fit check: can the kubelet of some node take the pod? Answered from
//! the cluster view with the kubelet admission model (a verdict per node
//! group, [`model`](crate::decide::model)), or from the static `capacity`
//! settings, as `capacity.source` says. The same verdicts write the node
//! affinity ([`AffinityRequirement::with_view`]), so the policy rejects
//! exactly the pods that its affinity would leave Pending or that every
//! kubelet it allows would refuse.
//!
//! With a view of at least one labeled group:
//! - `required`: some group must host the pod ([`GroupVerdict::hosts`])
//!   and publish its `shape`, which the affinity selects;
//! - `preferred`, `off`: some group's kubelet must admit it, or be unknown
//!   (it stays eligible, with a warning naming the unknown fact);
//! - `capacity.unlabeledNodes: allow`: where these reject, the pod is
//!   accepted with a warning naming the best labeled offer, for nodes the
//!   view does not describe;
//! - a pinned pod under `required`, when the Node list was read: its own
//!   node's verdict decides (not labeled: rejected unless `allow`).
//!
//! With no labeled group (an autoscaled pool at zero, a labeler outage):
//! `preferred` and `off` accept with a warning and add no affinity;
//! `required` rejects unless `allow`. Without a view at all (the host
//! refused, or `capacity.source: static`): the static limits, or a warning.

use crate::cluster::host::ClusterReader;
use crate::cluster::{self, ClusterView, Unavailable, MAX_SHAPES};
use crate::decide::affinity::AffinityRequirement;
use crate::decide::capacity;
use crate::decide::demand::Demand;
use crate::decide::explain;
use crate::decide::input::PodInput;
use crate::decide::model::{self, GroupVerdict, Need};
use crate::decide::rejection::{PinnedNodeProblem, Rejection};
use crate::request::pod::Pinned;
use crate::settings::{AffinityMode, CapacitySource, Config, UnlabeledNodes};
use gpu_topology::{Fleet, StaleNodes};
pub(crate) use warnings::FitWarning;
use warnings::{StaleFacts, STALE_NAMED};

pub(crate) mod warnings;

/// Whether the pod gets node affinity; `pinned` when it is pinned to a node
/// (`spec.nodeName`, or required affinity on the node's name).
/// Always under `required`: the kubelet itself enforces required node
/// affinity on a pod with `spec.nodeName`, and the scheduler on a pod pinned
/// by affinity, so pinning is no way around it.
/// Under `preferred` only when the scheduler chooses the node: preferences
/// bind only the scheduler, and the admission requirement would keep a pinned
/// pod off the one node it may run on when the labeler has not labeled it.
pub fn affinity_applies(config: &Config, pinned: bool) -> bool {
    match config.topology.affinity {
        AffinityMode::Required => true,
        AffinityMode::Preferred => !pinned,
        AffinityMode::Off => false,
    }
}

/// Why reading the fleet summary is worth its setup, for the warning when
/// the Node list is read instead: measured with policy-server 1.36 (the Node
/// list) and this repository's benchmarks (the summary, BENCHMARKS.md).
pub(crate) const SUMMARY_MISSING_COST: &str =
    "deploy the fleet summarizer: the Node list costs about 44 µs per labeled node per admission";

/// What the cluster showed for one admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sight {
    /// `capacity.source: static`: the host is never asked.
    Static,
    /// No view, and why.
    Unavailable(Unavailable),
    /// Boxed: a view is large and the other answers are small.
    View(Box<ClusterView>),
}

/// The cluster as read for one admission, with the notes on how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Look {
    pub sight: Sight,
    pub warnings: Vec<FitWarning>,
}

/// Reads the cluster where `capacity.source` says; `pinned_node` is the
/// node a pinned pod names, read apart from the Node list.
pub(crate) fn look(
    pinned_node: Option<&str>,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Look {
    if config.capacity_source == CapacitySource::Static {
        return Look {
            sight: Sight::Static,
            warnings: Vec::new(),
        };
    }
    let read = cluster::read(cluster, &config.sources, &config.label_prefix, pinned_node);
    // Say the fit came from the Node list only when it did: with the list
    // refused too, the next warning says the fit was not checked at all.
    let listed = read.view.is_ok();
    let warnings = (read.summary_passed_over.iter())
        .map(|problem| FitWarning::SummaryPassedOver {
            problem: problem.clone(),
            listed,
        })
        .collect();
    let sight = match read.view {
        Ok(view) if view.fleet.groups().len() > MAX_SHAPES => {
            Sight::Unavailable(Unavailable::TooManyShapes {
                shapes: view.fleet.groups().len(),
            })
        }
        Ok(view) => Sight::View(Box::new(view)),
        Err(unavailable) => Sight::Unavailable(unavailable),
    };
    Look { sight, warnings }
}

/// The check without a cluster view: the static limits when configured,
/// else a warning that the fit was not checked. `Ok` with the warning, or
/// the rejection.
pub(crate) fn check_without_view(
    demand: &Demand,
    sight: &Sight,
    config: &Config,
) -> Result<Option<FitWarning>, Rejection> {
    let static_check = |limits| {
        capacity::check(demand, limits, &config.topology).map_err(Rejection::OverStaticCapacity)
    };
    match sight {
        Sight::View(_) => Ok(None),
        Sight::Static => match &config.capacity {
            Some(limits) => static_check(limits).map(|()| None),
            None => Ok(None),
        },
        Sight::Unavailable(Unavailable::TooManyShapes { shapes }) => {
            Ok(Some(FitWarning::TooManyShapes { shapes: *shapes }))
        }
        Sight::Unavailable(Unavailable::Summary(problem)) => {
            Ok(Some(FitWarning::SummaryUnavailable {
                problem: problem.clone(),
            }))
        }
        Sight::Unavailable(Unavailable::NodeList(problem)) => {
            let checked_statically = match (&config.capacity_source, &config.capacity) {
                (CapacitySource::Auto, Some(limits)) => {
                    static_check(limits)?;
                    true
                }
                _ => false,
            };
            Ok(Some(FitWarning::NodeListUnavailable {
                problem: problem.clone(),
                checked_statically,
                // Static limits help only where the source falls back on
                // them: the advice names the source too where it ignores them.
                source_ignores_limits: !config.capacity_source.uses_static_limits(),
            }))
        }
    }
}

/// What the check lets through with a view: the warnings and the affinity
/// the verdicts write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    pub warnings: Vec<FitWarning>,
    pub requirement: AffinityRequirement,
}

#[cfg(test)]
impl Placement {
    /// The warnings' words under the default label prefix.
    pub(crate) fn words(&self) -> Vec<String> {
        let prefix = gpu_topology::LabelPrefix::default();
        (self.warnings.iter()).map(|w| w.words(&prefix)).collect()
    }
}

/// The check with a cluster view, from the verdict of every group
/// ([`model::verdicts`]); `Err` is why the pod is rejected. Pure.
pub(crate) fn place(
    input: &PodInput,
    view: &ClusterView,
    verdicts: &[GroupVerdict],
    config: &Config,
) -> Result<Placement, Rejection> {
    let demand = &input.demand;
    let topology = &config.topology;
    let allow = config.unlabeled_nodes == UnlabeledNodes::Allow;
    let required = topology.affinity == AffinityMode::Required;
    let applies = affinity_applies(config, input.pinned.is_some());
    let need = Need::for_pod(config);
    let mut warnings: Vec<FitWarning> = malformed_warning(view).into_iter().collect();
    // Under `required`, stale facts are unknown: those nodes are left out
    // by name, unless more are stale than the view names.
    let stale = stale_facts(view, config);
    let excluded: Vec<String> = match &stale {
        Some(stale) if required && applies && stale.complete => {
            stale.nodes.iter().map(|node| node.node.clone()).collect()
        }
        _ => Vec::new(),
    };
    let requirement = || {
        if applies {
            AffinityRequirement {
                excluded_nodes: excluded.clone(),
                ..AffinityRequirement::with_view(verdicts, demand, topology, config.unlabeled_nodes)
            }
        } else {
            AffinityRequirement::default()
        }
    };
    if view.fleet.is_empty() {
        let malformed = view.malformed > 0;
        if required && !allow {
            return Err(Rejection::NoLabeledNode {
                unit: demand.describe_unit(),
                malformed,
            });
        }
        warnings.push(FitWarning::NoLabels { malformed });
        return Ok(Placement {
            warnings,
            requirement: requirement(),
        });
    }
    if applies {
        warnings.extend(shapeless_warning(verdicts));
        warnings.extend(shared_shape_warning(verdicts));
    }
    if let Some(stale) = &stale {
        warnings.push(stale_warning(stale, view, config, required && applies));
    }
    if required {
        if let (Some(pinned), true) = (input.pinned, view.from_node_list) {
            if let Err(refusal) = pinned_node_hosts(pinned, view, verdicts, demand, need) {
                if !allow {
                    return Err(refusal);
                }
                warnings.push(FitWarning::PinnedNodeRefusesAdmitted { refusal });
            }
        }
    }
    if !verdicts.iter().any(|v| v.takes(need, &demand.pod)) {
        let refusal =
            Rejection::NoShapeTakes(explain::no_group_takes_it(demand, need, verdicts, topology));
        if !allow {
            return Err(refusal);
        }
        warnings.push(FitWarning::NoLabeledNodeTakesAdmitted { refusal });
    }
    warnings.extend(unknown_warning(verdicts, required));
    if let (Some(pinned), false) = (input.pinned, required) {
        warnings.extend(pinned_refusal_warning(pinned, view, verdicts, demand, need));
    }
    Ok(Placement {
        warnings,
        requirement: requirement(),
    })
}

/// Nodes left out for malformed labels, with the first problem read.
fn malformed_warning(view: &ClusterView) -> Option<FitWarning> {
    (view.malformed > 0).then(|| FitWarning::MalformedLabels {
        nodes: view.malformed,
        example: view.first_problem.clone(),
    })
}

/// Groups of a labeler older than the policy: affinity can neither select
/// nor leave them out.
fn shapeless_warning(verdicts: &[GroupVerdict]) -> Option<FitWarning> {
    let count: u32 = verdicts
        .iter()
        .filter(|v| v.shape().is_none())
        .map(GroupVerdict::nodes)
        .sum();
    (count > 0).then_some(FitWarning::Shapeless { nodes: count })
}

/// Groups whose shape label nodes with another answer carry too
/// ([`GroupVerdict::shared_shape`]): affinity can neither select nor leave
/// them out. Their kubelet versions are named where they differ, which is
/// how the labels of one labeler come to share a shape.
fn shared_shape_warning(verdicts: &[GroupVerdict]) -> Option<FitWarning> {
    let shared: Vec<&GroupVerdict> = verdicts.iter().filter(|v| v.shared_shape).collect();
    let first = shared.first()?;
    let mut kubelet_versions = Vec::new();
    for version in shared.iter().map(|v| v.topology().kubelet_version) {
        if !kubelet_versions.contains(&version) {
            kubelet_versions.push(version);
        }
    }
    Some(FitWarning::SharedShape {
        nodes: shared.iter().map(|v| v.nodes()).sum(),
        shape: first.shape(),
        kubelet_versions,
    })
}

/// The nodes whose labeler heartbeat is older than
/// `capacity.staleFactsAfterSeconds` when the view was read; `None` when
/// none is, or freshness cannot be told (no heartbeats in the source, no
/// clock, the rule off).
fn stale_facts<'v>(view: &'v ClusterView, config: &Config) -> Option<StaleNodes<'v>> {
    let (Some(after), Some(heartbeats), Some(now)) =
        (config.stale_facts_after, &view.heartbeats, view.read_at)
    else {
        return None;
    };
    let stale = heartbeats.stale(now, after);
    (!stale.nodes.is_empty()).then_some(stale)
}

/// The stale nodes, the first few named with their age; `required`: they
/// are left out by name ([`AffinityRequirement::excluded_nodes`]).
fn stale_warning(
    stale: &StaleNodes,
    view: &ClusterView,
    config: &Config,
    required: bool,
) -> FitWarning {
    let now = view.read_at.unwrap_or_default();
    FitWarning::Stale(StaleFacts {
        named: (stale.nodes.iter().take(STALE_NAMED))
            .map(|node| (node.node.clone(), now.saturating_sub(node.at)))
            .collect(),
        count: stale.nodes.len(),
        complete: stale.complete,
        required,
        after_seconds: config.stale_facts_after.unwrap_or_default(),
    })
}

/// The groups whose answer is unknown, counted, with the first one's answer.
fn unknown_warning(verdicts: &[GroupVerdict], required: bool) -> Option<FitWarning> {
    let unknown: Vec<&GroupVerdict> = verdicts.iter().filter(|v| v.answer.is_unknown()).collect();
    let first = unknown.first()?;
    Some(FitWarning::Unknown {
        nodes: unknown.iter().map(|v| v.nodes()).sum(),
        shape: first.shape(),
        answer: first.answer.clone(),
        required,
    })
}

/// Under `required`, the pinned node's own verdict (read from the Node
/// list); `Err` is why it does not host the pod.
fn pinned_node_hosts(
    pinned: Pinned,
    view: &ClusterView,
    verdicts: &[GroupVerdict],
    demand: &Demand,
    need: Need,
) -> Result<(), Rejection> {
    let refuse = |problem| {
        Err(Rejection::PinnedNode {
            node: pinned.node.to_owned(),
            by: pinned.by,
            problem,
        })
    };
    let topology = match &view.pinned_node {
        None => return refuse(PinnedNodeProblem::Unlabeled),
        Some(Err(problem)) => {
            return refuse(PinnedNodeProblem::MalformedLabels {
                problem: problem.to_string(),
            })
        }
        Some(Ok(topology)) => topology,
    };
    let Some(verdict) = verdicts.iter().find(|v| v.topology() == topology) else {
        return refuse(PinnedNodeProblem::NoGpuLabel);
    };
    let Need::Host(alignment) = need else {
        return Ok(());
    };
    if verdict.hosts(alignment, &demand.pod) && verdict.shape().is_some() {
        return Ok(());
    }
    let (why, fix) = explain::why_and_fix(demand, need, verdict);
    refuse(PinnedNodeProblem::DoesNotHost {
        why: why.clone(),
        fix: fix.clone(),
    })
}

/// Under `preferred`, a warning when the pinned node's kubelet refuses the
/// pod (it gets no affinity: the scheduler does not choose its node).
fn pinned_refusal_warning(
    pinned: Pinned,
    view: &ClusterView,
    verdicts: &[GroupVerdict],
    demand: &Demand,
    need: Need,
) -> Option<FitWarning> {
    let Some(Ok(topology)) = &view.pinned_node else {
        return None;
    };
    let verdict = verdicts.iter().find(|v| v.topology() == topology)?;
    if !verdict.answer.refuses() {
        return None;
    }
    let (why, fix) = explain::why_and_fix(demand, need, verdict);
    Some(FitWarning::PinnedNodeRefuses {
        node: pinned.node.to_owned(),
        by: pinned.by,
        why: why.clone(),
        fix: fix.clone(),
    })
}

/// The kubelet's verdicts for the pod whose planned PodSpec is `spec`, on
/// every group of `fleet`; `Err` when the spec cannot be read as the
/// kubelet would.
pub fn verdicts<'f>(
    fleet: &'f Fleet,
    spec: &serde_json::Value,
    input: &PodInput,
    config: &Config,
) -> Result<Vec<GroupVerdict<'f>>, String> {
    let pod = model::model_pod(spec, &input.demand.pod)?;
    Ok(model::verdicts(fleet, &pod, config.topology.scope))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod caps;

#[cfg(test)]
mod caps_properties;
