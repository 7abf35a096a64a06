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
use crate::decide::explain::{self, nodes};
use crate::decide::model::{self, Answer, GroupVerdict, Need};
use crate::decide::PodInput;
use crate::request::pod::{Pinned, PinnedBy};
use crate::settings::{AffinityMode, CapacitySource, Config, UnlabeledNodes};
use gpu_topology::{Fleet, LabelPrefix, StaleNodes};

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
pub const SUMMARY_MISSING_COST: &str =
    "deploy the fleet summarizer: the Node list costs about 44 µs per labeled node per admission";

/// What the cluster showed for one admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sight {
    /// `capacity.source: static`: the host is never asked.
    Static,
    /// No view, and why.
    Unavailable(Unavailable),
    /// Boxed: a view is large and the other answers are small.
    View(Box<ClusterView>),
}

/// The cluster as read for one admission, with the notes on how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Look {
    pub sight: Sight,
    pub warnings: Vec<String>,
}

impl Look {
    /// The fleet of the view, when there is one.
    pub fn fleet(&self) -> Option<&Fleet> {
        match &self.sight {
            Sight::View(view) => Some(&view.fleet),
            _ => None,
        }
    }
}

/// The host's messages end in a full stop; ours continue the sentence.
fn clause(problem: &str) -> &str {
    problem.trim_end_matches('.')
}

/// Reads the cluster where `capacity.source` says; `pinned_node` is the
/// node a pinned pod names, read apart from the Node list.
pub fn look(pinned_node: Option<&str>, config: &Config, cluster: &dyn ClusterReader) -> Look {
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
    let warnings = read
        .summary_passed_over
        .iter()
        .map(|problem| {
            if listed {
                format!(
                    "GPU fit read from the Node list: {}; {SUMMARY_MISSING_COST}",
                    clause(problem)
                )
            } else {
                format!(
                    "GPU fit not read from the fleet summary: {}",
                    clause(problem)
                )
            }
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
/// else a warning that the fit was not checked. `Ok` with the warnings,
/// or the rejection message.
pub fn check_without_view(
    demand: &Demand,
    sight: &Sight,
    config: &Config,
) -> Result<Vec<String>, String> {
    let static_check =
        |limits| capacity::check(demand, limits, &config.topology).map(|()| Vec::<String>::new());
    match sight {
        Sight::View(_) => Ok(Vec::new()),
        Sight::Static => config.capacity.as_ref().map_or(Ok(Vec::new()), static_check),
        Sight::Unavailable(Unavailable::TooManyShapes { shapes }) => Ok(vec![format!(
            "GPU fit not checked: the fleet has {shapes} distinct node shapes, more than the {MAX_SHAPES} one admission decides on. Nodes of one machine type and kubelet configuration share a shape: check that the labeler is current (it publishes numa-memory-mib in whole GiB) and that the kubelet settings are uniform"
        )]),
        Sight::Unavailable(Unavailable::Summary(problem)) => Ok(vec![format!(
            "GPU fit not checked: {}. Run the fleet summarizer and grant the policy read access to its ConfigMap, or set capacity.source: auto to fall back to the Node list",
            clause(problem)
        )]),
        Sight::Unavailable(Unavailable::NodeList(problem)) => {
            let unavailable = format!(
                "the cluster view (Node labels) is unavailable: {}",
                clause(problem)
            );
            match (&config.capacity_source, &config.capacity) {
                (CapacitySource::Auto, Some(limits)) => static_check(limits).map(|_| {
                    vec![format!(
                        "GPU fit checked against the static capacity settings: {unavailable}"
                    )]
                }),
                // Static limits help only where the source falls back on
                // them: the advice names the source too where it ignores them.
                (source, _) => {
                    let with_source = if source.uses_static_limits() {
                        ""
                    } else {
                        " with capacity.source: auto"
                    };
                    Ok(vec![format!(
                        "GPU fit not checked: {unavailable}. Grant the policy read access to v1 Nodes (contextAwareResources), or configure capacity.maxGpusPerNode{with_source}"
                    )])
                }
            }
        }
    }
}

/// What the check lets through with a view: the warnings and the affinity
/// the verdicts write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub warnings: Vec<String>,
    pub requirement: AffinityRequirement,
}

/// The check with a cluster view, from the verdict of every group
/// ([`model::verdicts`]); `Err` is the rejection message. Pure.
pub fn place(
    input: &PodInput,
    view: &ClusterView,
    verdicts: &[GroupVerdict],
    config: &Config,
) -> Result<Placement, String> {
    let demand = &input.demand;
    let topology = &config.topology;
    let prefix = &config.label_prefix;
    let allow = config.unlabeled_nodes == UnlabeledNodes::Allow;
    let required = topology.affinity == AffinityMode::Required;
    let applies = affinity_applies(config, input.pinned.is_some());
    let need = Need::for_pod(config);
    let mut warnings: Vec<String> = malformed_warning(view, prefix).into_iter().collect();
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
        let missing = if view.malformed > 0 {
            format!("no node publishes valid {prefix} labels: is the labeler healthy?")
        } else {
            format!("no node publishes {prefix} labels: is the labeler deployed?")
        };
        if required && !allow {
            return Err(format!(
                "GPU pod cannot be placed: it needs {}, but {missing} topology.affinity: required selects only nodes whose kubelet is known to host the pod, so it would stay Pending. Deploy the gpu-topology labeler on the GPU nodes, set capacity.unlabeledNodes: allow, or set topology.affinity: preferred.",
                demand.describe_unit()
            ));
        }
        warnings.push(format!("GPU fit not checked: {missing}"));
        return Ok(Placement {
            warnings,
            requirement: requirement(),
        });
    }
    if applies {
        warnings.extend(shapeless_warning(verdicts, prefix));
        warnings.extend(shared_shape_warning(verdicts, prefix));
    }
    if let Some(stale) = &stale {
        warnings.push(stale_warning(stale, view, config, required && applies));
    }
    if required {
        if let (Some(pinned), true) = (input.pinned, view.from_node_list) {
            if let Err(message) = pinned_node_hosts(pinned, view, verdicts, demand, need, config) {
                if !allow {
                    return Err(message);
                }
                warnings.push(format!(
                    "{message} Admitted: capacity.unlabeledNodes is allow"
                ));
            }
        }
    }
    if !verdicts.iter().any(|v| v.takes(need, &demand.pod)) {
        let message = explain::no_group_takes_it(demand, need, verdicts, topology);
        if !allow {
            return Err(message);
        }
        warnings.push(format!(
            "no labeled GPU node takes the pod; admitted for nodes without {prefix} labels (capacity.unlabeledNodes: allow): {}",
            message.trim_start_matches("GPU pod cannot be placed: ")
        ));
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

/// `2 nodes with malformed <prefix> labels left out ...`
fn malformed_warning(view: &ClusterView, prefix: &LabelPrefix) -> Option<String> {
    (view.malformed > 0).then(|| {
        let example = view
            .first_problem
            .as_ref()
            .map_or_else(String::new, |problem| format!(" (e.g. {problem})"));
        format!(
            "{} with malformed {prefix} labels left out of the GPU fit check{example}; fix the node labeler there",
            nodes(view.malformed)
        )
    })
}

/// Groups of a labeler older than the policy: affinity can neither select
/// nor leave them out.
fn shapeless_warning(verdicts: &[GroupVerdict], prefix: &LabelPrefix) -> Option<String> {
    let count: u32 = verdicts
        .iter()
        .filter(|v| v.shape().is_none())
        .map(GroupVerdict::nodes)
        .sum();
    (count > 0).then(|| {
        format!(
            "{} publish{} no {prefix}/shape label (a labeler older than this policy): node affinity can neither select nor exclude {}; upgrade the labeler there",
            nodes(count),
            if count == 1 { "es" } else { "" },
            if count == 1 { "it" } else { "them" }
        )
    })
}

/// Groups whose shape label nodes with another answer carry too
/// ([`GroupVerdict::shared_shape`]): affinity can neither select nor leave
/// them out. Their kubelet versions are named where they differ, which is
/// how the labels of one labeler come to share a shape.
fn shared_shape_warning(verdicts: &[GroupVerdict], prefix: &LabelPrefix) -> Option<String> {
    let shared: Vec<&GroupVerdict> = verdicts.iter().filter(|v| v.shared_shape).collect();
    let first = shared.first()?;
    let count: u32 = shared.iter().map(|v| v.nodes()).sum();
    let shape = first.shape().map_or_else(String::new, |s| s.to_string());
    let mut versions: Vec<String> = Vec::new();
    for version in shared.iter().map(|v| v.topology().kubelet_version) {
        let words = version.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
        if !versions.contains(&words) {
            versions.push(words);
        }
    }
    let why = if versions.len() > 1 {
        format!(
            "their Nodes report kubelets {}, whose rules differ for this pod",
            versions.join(", ")
        )
    } else {
        "their labels differ beyond what the shape label digests".to_owned()
    };
    Some(format!(
        "{} of shape {shape} and others sharing a {prefix}/shape label get different answers from their kubelets ({why}): node affinity can neither select nor exclude them; publish {prefix}/kubelet-version with the labeler (its kubernetes sink, or --kubelet-version) or finish the kubelet upgrade",
        nodes(count)
    ))
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

/// `2 nodes carry facts older than ...`: which, how old, and what the
/// policy does about them. Under `required` they are treated as unknown:
/// left out by name ([`AffinityRequirement::excluded_nodes`]), unless more
/// are stale than the view names, when the labeler is down fleet-wide and
/// they stay eligible (a labeler outage never blocks pods).
fn stale_warning(
    stale: &StaleNodes,
    view: &ClusterView,
    config: &Config,
    required: bool,
) -> String {
    const NAMED: usize = 3;
    let prefix = &config.label_prefix;
    let now = view.read_at.unwrap_or_default();
    let count = stale.nodes.len();
    let mut named: Vec<String> = stale
        .nodes
        .iter()
        .take(NAMED)
        .map(|node| {
            format!(
                "{} {} ago",
                node.node,
                age_words(now.saturating_sub(node.at))
            )
        })
        .collect();
    if count > NAMED {
        named.push(format!("{} more", count - NAMED));
    }
    let one = count == 1 && stale.complete;
    let (they, carry) = if one {
        ("it", "carries")
    } else {
        ("they", "carry")
    };
    let which = match stale.complete {
        true => nodes(count as u32),
        false => format!("at least {}", nodes(count as u32)),
    };
    let consequence = match (stale.complete, required) {
        (true, true) => format!(
            "{they} {} not selected (topology.affinity: required): matchFields metadata.name NotIn",
            if one { "is" } else { "are" }
        ),
        (true, false) => format!("{they} {} eligible with the facts last published", if one { "stays" } else { "stay" }),
        (false, _) => "too many to keep pods off by name, so they stay eligible with the facts last published: is the labeler deployed?".to_owned(),
    };
    format!(
        "{which} {carry} facts older than capacity.staleFactsAfterSeconds ({} s): the labeler last confirmed them ({prefix}/published) on {}; is the labeler running there? {consequence}",
        config.stale_facts_after.unwrap_or_default(),
        named.join(", ")
    )
}

/// `3 h 12 min`, `40 min`, `50 s`.
fn age_words(seconds: u64) -> String {
    match (seconds / 3600, seconds / 60 % 60) {
        (0, 0) => format!("{seconds} s"),
        (0, minutes) => format!("{minutes} min"),
        (hours, 0) => format!("{hours} h"),
        (hours, minutes) => format!("{hours} h {minutes} min"),
    }
}

/// The groups whose answer is unknown, with why, in one warning.
fn unknown_warning(verdicts: &[GroupVerdict], required: bool) -> Option<String> {
    let unknown: Vec<&GroupVerdict> = verdicts.iter().filter(|v| v.answer.is_unknown()).collect();
    let count: u32 = unknown.iter().map(|v| v.nodes()).sum();
    let first = unknown.first()?;
    let why = match &first.answer {
        Answer::Unknown(unknown) => explain::unknown_words(unknown),
        Answer::Contradictory(error) => format!("the labels contradict themselves: {error}"),
        _ => String::new(),
    };
    let shape = first.shape().map_or_else(
        || "without a shape label".to_owned(),
        |s| format!("of shape {s}"),
    );
    // One node is `the node ... it`, not `nodes ... they`.
    let (which, consequence) = match (count, required) {
        (1, true) => (
            "the node",
            "it is not selected (topology.affinity: required)",
        ),
        (1, false) => ("the node", "it stays eligible"),
        (_, true) => (
            "nodes",
            "they are not selected (topology.affinity: required)",
        ),
        (_, false) => ("nodes", "they stay eligible"),
    };
    Some(format!(
        "the kubelet model cannot tell whether {} {} the pod ({which} {shape}: {why}); {consequence}",
        nodes(count),
        if count == 1 { "admits" } else { "admit" }
    ))
}

/// Under `required`, the pinned node's own verdict (read from the Node
/// list); `Err` is why it does not host the pod.
fn pinned_node_hosts(
    pinned: Pinned,
    view: &ClusterView,
    verdicts: &[GroupVerdict],
    demand: &Demand,
    need: Need,
    config: &Config,
) -> Result<(), String> {
    let node = pinned.node;
    let by = pinned_by(pinned);
    let prefix = &config.label_prefix;
    let topology = match &view.pinned_node {
        None => {
            return Err(format!(
                "GPU pod cannot be placed: it is pinned to node {node:?} ({by}), which publishes no {prefix} labels, and topology.affinity: required admits only nodes whose kubelet is known to host the pod. Deploy the gpu-topology labeler there, set capacity.unlabeledNodes: allow, or set topology.affinity: preferred."
            ))
        }
        Some(Err(problem)) => {
            return Err(format!(
                "GPU pod cannot be placed: it is pinned to node {node:?} ({by}), whose {prefix} labels are malformed ({problem}). Fix the node labeler there."
            ))
        }
        Some(Ok(topology)) => topology,
    };
    let verdict = verdicts.iter().find(|v| v.topology() == topology);
    let Some(verdict) = verdict else {
        return Err(format!(
            "GPU pod cannot be placed: it is pinned to node {node:?} ({by}), which publishes no {prefix}/gpus label. Deploy the gpu-topology labeler there."
        ));
    };
    let Need::Host(alignment) = need else {
        return Ok(());
    };
    if verdict.hosts(alignment, &demand.pod) && verdict.shape().is_some() {
        return Ok(());
    }
    let (why, fix) = explain::why_and_fix(demand, need, verdict);
    Err(format!(
        "GPU pod cannot be placed: it is pinned to node {node:?} ({by}), and there {why}. {fix}."
    ))
}

/// Under `preferred`, a warning when the pinned node's kubelet refuses the
/// pod (it gets no affinity: the scheduler does not choose its node).
fn pinned_refusal_warning(
    pinned: Pinned,
    view: &ClusterView,
    verdicts: &[GroupVerdict],
    demand: &Demand,
    need: Need,
) -> Option<String> {
    let Some(Ok(topology)) = &view.pinned_node else {
        return None;
    };
    let verdict = verdicts.iter().find(|v| v.topology() == topology)?;
    if !verdict.answer.refuses() {
        return None;
    }
    let (why, fix) = explain::why_and_fix(demand, need, verdict);
    Some(format!(
        "the pod is pinned to node {:?} ({}), where {why}. {fix}",
        pinned.node,
        pinned_by(pinned)
    ))
}

fn pinned_by(pinned: Pinned) -> &'static str {
    match pinned.by {
        PinnedBy::NodeName => "spec.nodeName",
        PinnedBy::NodeAffinity => {
            "required node affinity on metadata.name, as a DaemonSet's pods are"
        }
    }
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

/// [`verdicts`] through `memo` ([`model::verdicts_with`]).
pub(crate) fn verdicts_with<'f>(
    fleet: &'f Fleet,
    spec: &serde_json::Value,
    input: &PodInput,
    config: &Config,
    memo: &model::AnswerMemo,
) -> Result<Vec<GroupVerdict<'f>>, String> {
    let pod = model::model_pod(spec, &input.demand.pod)?;
    Ok(model::verdicts_with(
        fleet,
        &pod,
        config.topology.scope,
        memo,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::testing::{config, hgx, hgx_full_pcpus_only, l4, node, pod, view, OLD};
    use gpu_topology::{Alignment, NodeTopology};
    use rstest::rstest;
    use serde_json::{json, Value};

    fn required(alignment: &str) -> Value {
        json!({"topology": {"affinity": "required", "alignment": alignment}})
    }

    fn decide(spec: &Value, view: &ClusterView, config: &Config) -> Result<Placement, String> {
        let input = PodInput::read(spec, config).unwrap().unwrap();
        let verdicts = verdicts(&view.fleet, spec, &input, config).unwrap();
        place(&input, view, &verdicts, config)
    }

    fn shape_of(topology: &NodeTopology) -> String {
        topology.shape.unwrap().to_string()
    }

    /// `topology` under the shape label of `other`: nodes that differ in a
    /// fact the label does not digest (the kubelet version their Nodes
    /// report, where the labeler did not publish it).
    fn sharing(topology: NodeTopology, other: &NodeTopology) -> NodeTopology {
        NodeTopology {
            shape: other.shape,
            ..topology
        }
    }

    /// The requirement's terms as `key operator values` strings.
    fn rendered(terms: &[gpu_topology::Term]) -> Vec<Vec<String>> {
        terms
            .iter()
            .map(|term| {
                term.iter()
                    .map(|r| {
                        format!(
                            "{} {} {}",
                            r.label_key().name(),
                            r.operator().as_str(),
                            r.values().join(",")
                        )
                    })
                    .collect()
            })
            .collect()
    }

    /// The worked example of the README: 8 GPUs and 32 whole CPUs on HGX
    /// nodes running `restricted`. The GPUs need both NUMA nodes, the CPUs
    /// fit one: no preferred hint, TopologyAffinityError.
    #[test]
    fn the_restricted_hgx_case_is_refused_with_the_arithmetic_and_the_fix() {
        let nodes = hgx("restricted");
        let shape = shape_of(&nodes);
        let error = decide(&pod(8, 32), &view(vec![(nodes, 10)]), &config(json!({}))).unwrap_err();
        assert_eq!(
            error,
            format!("GPU pod cannot be placed: it needs 8 GPUs (container \"train\": 8 nvidia.com/gpu), but the kubelet of none of the 10 labeled GPU nodes admits it. On the 10 nodes of shape {shape} (8 GPUs, 4+4 per NUMA node, 56 CPUs per NUMA node, topologyManagerPolicy restricted) the GPUs' narrowest NUMA mask is 2 nodes but the 32 exclusive CPUs' is 1 node: the kubelet refuses it with TopologyAffinityError. Request 57 to 110 CPUs so that they span 2 NUMA nodes as the GPUs do, a fractional CPU amount (shared pool), or at most 4 GPUs.")
        );
    }

    /// (settings, pod, groups, the requirement's terms with `{n}` for the
    /// n-th group's shape, the preference's): what the verdicts write.
    #[rstest]
    // Preferred: the refusing shape is left out, the aligned one preferred.
    #[case::preferred_steers_off_the_refusing_shape(json!({}), pod(8, 32),
        vec![(hgx("restricted"), 10), (hgx("best-effort"), 2)],
        vec![vec!["shape NotIn {0}"]], vec![])]
    #[case::preferred_prefers_aligned_shapes(json!({}), pod(4, 16),
        vec![(hgx("single-numa-node"), 10), (l4(), 2), (hgx("none"), 1)],
        vec![], vec![vec!["shape In {0},{1}"]])]
    #[case::preferred_nothing_when_all_eligible_are_aligned(json!({}), pod(4, 16),
        vec![(hgx("single-numa-node"), 10)], vec![], vec![])]
    // The author's 3 CPUs: SMTAlignmentError under full-pcpus-only only.
    #[case::preferred_keeps_odd_cpus_off_full_pcpus_only(json!({}), pod(1, 3),
        vec![(hgx_full_pcpus_only("best-effort"), 4), (hgx("best-effort"), 4)],
        vec![vec!["shape NotIn {0}"]], vec![])]
    // One shape label on nodes the kubelet answers otherwise (a kubelet
    // version the label does not hold): neither left out nor selected.
    #[case::preferred_leaves_a_shared_shape_alone(json!({}), pod(8, 32),
        vec![(hgx("restricted"), 10), (sharing(hgx("best-effort"), &hgx("restricted")), 2), (hgx("single-numa-node"), 3)],
        vec![vec!["shape NotIn {2}"]], vec![])]
    #[case::preferred_excludes_a_shape_refused_alike(json!({}), pod(8, 32),
        vec![(hgx("restricted"), 10), (sharing(hgx("single-numa-node"), &hgx("restricted")), 2), (hgx("best-effort"), 3)],
        vec![vec!["shape NotIn {0}"]], vec![])]
    #[case::required_selects_no_shared_shape(required("numa"), pod(4, 16),
        vec![(hgx("single-numa-node"), 10), (sharing(hgx("none"), &hgx("single-numa-node")), 1), (l4(), 2)],
        vec![vec!["shape In {2}"]], vec![])]
    #[case::required_selects_a_shape_hosted_alike(required("numa"), pod(4, 16),
        vec![(hgx("single-numa-node"), 10), (sharing(hgx("restricted"), &hgx("single-numa-node")), 1)],
        vec![vec!["shape In {0}"]], vec![])]
    #[case::required_selects_hosting_shapes(required("numa"), pod(4, 16),
        vec![(hgx("single-numa-node"), 10), (hgx("none"), 2)],
        vec![vec!["shape In {0}"]], vec![])]
    #[case::required_nvlink_counts_the_group(required("nvlink"), pod(8, 8),
        vec![(hgx("best-effort"), 3), (hgx("single-numa-node"), 10)],
        vec![vec!["shape In {0}"]], vec![])]
    // Unknown shapes with count labels stay eligible under allow.
    #[case::required_allow_adds_unknown_shapes(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"unlabeledNodes": "allow"}}), pod(4, 16),
        vec![(hgx("single-numa-node"), 10), (hgx("none"), 2)],
        vec![vec!["shape In {0}"], vec!["shape NotIn {0},{1}", "gpus-per-numa-max Gt 3", "gpus Gt 3"]], vec![])]
    fn the_verdicts_write_the_affinity(
        #[case] settings: Value,
        #[case] spec: Value,
        #[case] groups: Vec<(NodeTopology, u32)>,
        #[case] required: Vec<Vec<&str>>,
        #[case] preferred: Vec<Vec<&str>>,
    ) {
        let shapes: Vec<String> = groups.iter().map(|(t, _)| shape_of(t)).collect();
        let view = view(groups);
        let placement = decide(&spec, &view, &config(settings)).unwrap();
        let fill = |text: &str| -> String {
            let mut text = text.to_owned();
            for (i, shape) in shapes.iter().enumerate() {
                text = text.replace(&format!("{{{i}}}"), shape);
            }
            // Shape lists come out sorted.
            match text.rsplit_once(' ') {
                Some((head, values)) => {
                    let mut values: Vec<&str> = values.split(',').collect();
                    values.sort_unstable();
                    format!("{head} {}", values.join(","))
                }
                None => text,
            }
        };
        let fill_all = |terms: Vec<Vec<&str>>| -> Vec<Vec<String>> {
            terms
                .into_iter()
                .map(|t| t.into_iter().map(fill).collect())
                .collect()
        };
        assert_eq!(
            rendered(&placement.requirement.required),
            fill_all(required)
        );
        assert_eq!(
            rendered(&placement.requirement.preferred),
            fill_all(preferred)
        );
    }

    /// (settings, pod, groups, Ok: fragment of a warning / Err: fragments of
    /// the rejection)
    #[rstest]
    #[case::preferred_every_shape_refuses(json!({}), pod(8, 96),
        vec![(hgx("single-numa-node"), 3)],
        Err(vec!["the 8 GPUs need 2 NUMA nodes and the 96 exclusive CPUs need 2 NUMA nodes, but single-numa-node admits only one", "Request at most 4 GPUs per pod, or at most 56 exclusive CPUs, or a fractional CPU amount (shared pool)"]))]
    #[case::preferred_allow_admits_for_unlabeled_nodes(json!({"capacity": {"unlabeledNodes": "allow"}}), pod(8, 96),
        vec![(hgx("single-numa-node"), 3)], Ok("admitted for nodes without gpu-topology.io labels (capacity.unlabeledNodes: allow)"))]
    #[case::required_unaligned_only(required("numa"), pod(8, 8),
        vec![(hgx("best-effort"), 2)],
        Err(vec!["NUMA-aligned (topology.affinity: required), but none of the 2 labeled GPU nodes hosts it so", "the kubelet admits it unaligned: the 8 GPUs' narrowest NUMA mask is 2 nodes", "Request at most 4 GPUs per pod, or set topology.affinity: preferred so the GPUs may span NUMA nodes"]))]
    #[case::required_nvlink_group_too_small(required("nvlink"), pod(4, 8),
        vec![(l4(), 2)],
        Err(vec!["the largest NVLink group has 1 GPU and 4 must share one", "Request at most 1 GPU per container, or set topology.affinity: preferred so the GPUs may span NVLink groups"]))]
    #[case::preferred_old_labeler_stays_eligible(json!({}), pod(8, 32),
        vec![(hgx("restricted"), 10), (node(OLD), 4)],
        Ok("the kubelet model cannot tell whether 4 nodes admit the pod (nodes without a shape label: the CPU Manager policy is not published); they stay eligible"))]
    #[case::preferred_old_labeler_is_named(json!({}), pod(8, 32),
        vec![(node(OLD), 4)], Ok("4 nodes publish no gpu-topology.io/shape label"))]
    #[case::required_old_labeler_is_not_selected(required("numa"), pod(4, 8),
        vec![(node(OLD), 4)], Err(vec!["whether the kubelet admits it is unknown"]))]
    #[case::preferred_shared_shape_is_named(json!({}), pod(8, 32),
        vec![(hgx("restricted"), 10), (sharing(hgx("best-effort"), &hgx("restricted")), 2)],
        Ok("12 nodes of shape"))]
    #[case::preferred_shared_shape_says_why(json!({}), pod(8, 32),
        vec![(hgx("restricted"), 10), (sharing(hgx("best-effort"), &hgx("restricted")), 2)],
        Ok("and others sharing a gpu-topology.io/shape label get different answers from their kubelets (their labels differ beyond what the shape label digests): node affinity can neither select nor exclude them"))]
    #[case::required_shared_shape_is_not_selected(required("numa"), pod(4, 16),
        vec![(hgx("single-numa-node"), 10), (sharing(hgx("none"), &hgx("single-numa-node")), 1)],
        Err(vec!["On the 10 nodes of shape", "the kubelet admits it, but nodes whose kubelets answer otherwise carry the same shape label, so node affinity cannot select these apart", "Publish the kubelet-version label with the labeler"]))]
    #[case::too_many_gpus_for_every_node(json!({}), pod(16, 8),
        vec![(hgx("best-effort"), 2), (l4(), 3)],
        Err(vec!["it needs 16 GPUs (container \"train\": 16 nvidia.com/gpu) but the largest labeled GPU node has 8 (2 nodes). Request at most 8 GPUs per pod"]))]
    #[case::an_empty_view_under_preferred_is_no_rejection(json!({}), pod(8, 8), vec![],
        Ok("GPU fit not checked: no node publishes gpu-topology.io labels: is the labeler deployed?"))]
    #[case::an_empty_view_under_required_is(required("numa"), pod(8, 8), vec![],
        Err(vec!["no node publishes gpu-topology.io labels", "set capacity.unlabeledNodes: allow"]))]
    #[case::an_empty_view_under_required_with_allow(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"unlabeledNodes": "allow"}}), pod(8, 8), vec![],
        Ok("GPU fit not checked: no node publishes gpu-topology.io labels"))]
    fn decision_rules(
        #[case] settings: Value,
        #[case] spec: Value,
        #[case] groups: Vec<(NodeTopology, u32)>,
        #[case] expected: Result<&str, Vec<&str>>,
    ) {
        let outcome = decide(&spec, &view(groups), &config(settings));
        match (outcome, expected) {
            (Ok(placement), Ok(warning)) => assert!(
                placement.warnings.iter().any(|w| w.contains(warning)),
                "{:?} lacks {warning:?}",
                placement.warnings
            ),
            (Err(message), Err(fragments)) => {
                for fragment in fragments {
                    assert!(message.contains(fragment), "{message}\nlacks: {fragment}");
                }
            }
            (outcome, expected) => panic!("{outcome:?}, expected {expected:?}"),
        }
    }

    /// `view` with `heartbeats` (node, seconds before `NOW`) read at `NOW`.
    fn with_heartbeats(mut view: ClusterView, heartbeats: &[(&str, u64)]) -> ClusterView {
        const NOW: u64 = 1_764_700_000;
        let mut oldest = gpu_topology::OldestHeartbeats::default();
        for (node, ago) in heartbeats {
            oldest.offer(NOW - ago, node);
        }
        view.heartbeats = Some(oldest);
        view.read_at = Some(NOW);
        view
    }

    /// (settings, heartbeats, nodes left out by name, fragment of a warning
    /// or none): a node whose labeler stopped confirming its facts.
    #[rstest]
    #[case::fresh_facts_say_nothing(json!({}), vec![("gpu-1", 60), ("gpu-2", 1_900)], vec![], None)]
    #[case::preferred_warns_and_keeps_it(json!({}), vec![("gpu-1", 60), ("gpu-7", 7_500)], vec![],
        Some("1 node carries facts older than capacity.staleFactsAfterSeconds (5400 s): the labeler last confirmed them (gpu-topology.io/published) on gpu-7 2 h 5 min ago; is the labeler running there? it stays eligible with the facts last published"))]
    #[case::required_leaves_them_out_by_name(required("numa"), vec![("gpu-7", 7_500), ("gpu-8", 90_000), ("gpu-1", 60)], vec!["gpu-8", "gpu-7"],
        Some("2 nodes carry facts older than capacity.staleFactsAfterSeconds (5400 s): the labeler last confirmed them (gpu-topology.io/published) on gpu-8 25 h ago, gpu-7 2 h 5 min ago; is the labeler running there? they are not selected (topology.affinity: required): matchFields metadata.name NotIn"))]
    #[case::a_longer_age_configured(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"staleFactsAfterSeconds": 86_400}}), vec![("gpu-7", 7_500), ("gpu-8", 90_000)], vec!["gpu-8"],
        Some("1 node carries facts older than capacity.staleFactsAfterSeconds (86400 s)"))]
    #[case::the_rule_turned_off(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"staleFactsAfterSeconds": 0}}), vec![("gpu-8", 90_000)], vec![], None)]
    fn stale_facts_are_named_and_left_out_under_required(
        #[case] settings: Value,
        #[case] heartbeats: Vec<(&str, u64)>,
        #[case] excluded: Vec<&str>,
        #[case] warning: Option<&str>,
    ) {
        let view = with_heartbeats(view(vec![(hgx("single-numa-node"), 10)]), &heartbeats);
        let placement = decide(&pod(4, 16), &view, &config(settings)).unwrap();
        assert_eq!(placement.requirement.excluded_nodes, excluded);
        let stale: Vec<&String> = placement
            .warnings
            .iter()
            .filter(|w| w.contains("staleFactsAfterSeconds"))
            .collect();
        match warning {
            Some(fragment) => assert!(
                stale.len() == 1 && stale[0].contains(fragment),
                "{stale:?} lacks {fragment:?}"
            ),
            None => assert!(stale.is_empty(), "{stale:?}"),
        }
    }

    /// A labeler down fleet-wide: more nodes are stale than the view names,
    /// so none is left out (an outage never blocks pods), and it says so.
    #[test]
    fn more_stale_nodes_than_named_stay_eligible() {
        let heartbeats: Vec<(String, u64)> = (0..40)
            .map(|index| (format!("gpu-{index:02}"), 10_000 + index))
            .collect();
        let named: Vec<(&str, u64)> = heartbeats.iter().map(|(n, a)| (n.as_str(), *a)).collect();
        let view = with_heartbeats(view(vec![(hgx("single-numa-node"), 40)]), &named);
        let placement = decide(&pod(4, 16), &view, &config(required("numa"))).unwrap();
        assert!(placement.requirement.excluded_nodes.is_empty());
        assert!(
            placement
                .warnings
                .iter()
                .any(|w| w.starts_with("at least 32 nodes carry facts older")
                    && w.contains("too many to keep pods off by name")),
            "{:?}",
            placement.warnings
        );
    }

    // The warnings that count nodes, for 0, 1 and several (issue #23:
    // "Every message sentence is tested for 0, 1 and several nodes or
    // shapes"). Zero nodes give no warning at all.

    fn verdicts_of<'f>(
        spec: &Value,
        view: &'f ClusterView,
        config: &Config,
    ) -> Vec<GroupVerdict<'f>> {
        let input = PodInput::read(spec, config).unwrap().unwrap();
        verdicts(&view.fleet, spec, &input, config).unwrap()
    }

    /// Nodes whose answer is unknown (an old labeler publishes no CPU
    /// Manager policy), under `preferred` and `required`.
    #[rstest]
    #[case::zero_nodes(vec![(hgx("restricted"), 3)], false, None)]
    #[case::one_node(vec![(node(OLD), 1)], false,
        Some("the kubelet model cannot tell whether 1 node admits the pod (the node without a shape label: the CPU Manager policy is not published); it stays eligible"))]
    #[case::one_node_required(vec![(node(OLD), 1)], true,
        Some("the kubelet model cannot tell whether 1 node admits the pod (the node without a shape label: the CPU Manager policy is not published); it is not selected (topology.affinity: required)"))]
    #[case::several_nodes(vec![(hgx("restricted"), 10), (node(OLD), 4)], false,
        Some("the kubelet model cannot tell whether 4 nodes admit the pod (nodes without a shape label: the CPU Manager policy is not published); they stay eligible"))]
    #[case::several_nodes_required(vec![(node(OLD), 4)], true,
        Some("the kubelet model cannot tell whether 4 nodes admit the pod (nodes without a shape label: the CPU Manager policy is not published); they are not selected (topology.affinity: required)"))]
    fn the_unknown_nodes_in_number(
        #[case] groups: Vec<(NodeTopology, u32)>,
        #[case] required: bool,
        #[case] warning: Option<&str>,
    ) {
        let view = view(groups);
        let verdicts = verdicts_of(&pod(8, 32), &view, &config(json!({})));
        assert_eq!(unknown_warning(&verdicts, required).as_deref(), warning);
    }

    /// Nodes without a shape label (an old labeler).
    #[rstest]
    #[case::zero_nodes(vec![(hgx("restricted"), 3)], None)]
    #[case::one_node(vec![(node(OLD), 1)],
        Some("1 node publishes no gpu-topology.io/shape label (a labeler older than this policy): node affinity can neither select nor exclude it; upgrade the labeler there"))]
    #[case::several_nodes(vec![(node(OLD), 4), (hgx("restricted"), 2)],
        Some("4 nodes publish no gpu-topology.io/shape label (a labeler older than this policy): node affinity can neither select nor exclude them; upgrade the labeler there"))]
    fn the_shapeless_nodes_in_number(
        #[case] groups: Vec<(NodeTopology, u32)>,
        #[case] warning: Option<&str>,
    ) {
        let view = view(groups);
        let verdicts = verdicts_of(&pod(8, 32), &view, &config(json!({})));
        assert_eq!(
            shapeless_warning(&verdicts, &LabelPrefix::default()).as_deref(),
            warning
        );
    }

    /// Nodes whose labels are malformed, left out of the view.
    #[rstest]
    #[case::zero_nodes(0, None)]
    #[case::one_node(1, Some("1 node with malformed gpu-topology.io labels left out of the GPU fit check (e.g. bad gpus); fix the node labeler there"))]
    #[case::several_nodes(3, Some("3 nodes with malformed gpu-topology.io labels left out of the GPU fit check (e.g. bad gpus); fix the node labeler there"))]
    fn the_malformed_nodes_in_number(#[case] malformed: u32, #[case] warning: Option<&str>) {
        let mut view = view(vec![(hgx("restricted"), 3)]);
        view.malformed = malformed;
        view.first_problem = Some("bad gpus".to_owned());
        assert_eq!(
            malformed_warning(&view, &LabelPrefix::default()).as_deref(),
            warning
        );
    }

    /// A pod pinned to a node (DaemonSet) under `required`, read from the
    /// Node list: its own node decides. (pinned node's labels, allow,
    /// fragment of the rejection or `None` for accepted)
    #[rstest]
    #[case::hosting_node(Some(hgx("best-effort")), false, None)]
    #[case::refusing_node(Some(hgx("restricted")), false, Some("it is pinned to node \"gpu-7\" (required node affinity on metadata.name, as a DaemonSet's pods are), and there the GPUs' narrowest NUMA mask"))]
    #[case::unlabeled_node(None, false, Some("it is pinned to node \"gpu-7\" (required node affinity on metadata.name, as a DaemonSet's pods are), which publishes no gpu-topology.io labels"))]
    #[case::unlabeled_node_allowed(None, true, None)]
    fn a_pinned_pods_own_node_decides_under_required(
        #[case] pinned: Option<NodeTopology>,
        #[case] allow: bool,
        #[case] rejected: Option<&str>,
    ) {
        let mut spec = pod(8, 32);
        spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}]}]}}});
        let mut view = view(vec![(hgx("best-effort"), 5), (hgx("restricted"), 5)]);
        view.pinned_node = pinned.map(Ok);
        let settings = json!({"topology": {"affinity": "required", "alignment": "node"},
            "capacity": {"unlabeledNodes": if allow { "allow" } else { "deny" }}});
        let outcome = decide(&spec, &view, &config(settings));
        match rejected {
            None => assert!(outcome.is_ok(), "{outcome:?}"),
            Some(fragment) => {
                let message = outcome.unwrap_err();
                assert!(message.contains(fragment), "{message}");
            }
        }
    }

    #[test]
    fn a_pinned_pod_under_preferred_is_warned_when_its_node_refuses() {
        let mut spec = pod(8, 32);
        spec["nodeName"] = json!("gpu-7");
        let mut view = view(vec![(hgx("restricted"), 5), (hgx("best-effort"), 5)]);
        view.pinned_node = Some(Ok(hgx("restricted")));
        let placement = decide(&spec, &view, &config(json!({}))).unwrap();
        assert!(placement.requirement.is_empty());
        assert!(
            placement.warnings.iter().any(|w| w.starts_with(
                "the pod is pinned to node \"gpu-7\" (spec.nodeName), where the GPUs' narrowest NUMA mask"
            )),
            "{:?}",
            placement.warnings
        );
    }

    /// (affinity mode, pinned, need, affinity added)
    #[rstest]
    #[case::required(AffinityMode::Required, false, Need::Host(Alignment::Nvlink), true)]
    #[case::required_and_pinned(AffinityMode::Required, true, Need::Host(Alignment::Nvlink), true)]
    #[case::preferred(AffinityMode::Preferred, false, Need::Admit, true)]
    #[case::preferred_but_pinned(AffinityMode::Preferred, true, Need::Admit, false)]
    #[case::off(AffinityMode::Off, false, Need::Admit, false)]
    fn need_follows_the_affinity(
        #[case] affinity: AffinityMode,
        #[case] pinned: bool,
        #[case] expected: Need,
        #[case] applies: bool,
    ) {
        let mut config = Config::default();
        config.topology.affinity = affinity;
        config.topology.alignment = Alignment::Nvlink;
        assert_eq!(Need::for_pod(&config), expected);
        assert_eq!(affinity_applies(&config, pinned), applies);
    }

    /// Hostile requests with a view are answered, never trapped on: the
    /// model saturates what it cannot hold.
    #[rstest]
    #[case::huge_cpu(json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "9223372036", "memory": "64Gi"}}}]}))]
    #[case::huge_memory(json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "9E"}}}]}))]
    #[case::many_gpus(json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "4294967295"}}}]}))]
    #[case::many_containers(json!({"containers": (0..64).map(|i| json!({"name": format!("c{i}"), "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}})).collect::<Vec<_>>()}))]
    fn hostile_pods_are_answered(#[case] spec: Value) {
        let view = view(vec![(hgx("restricted"), 2), (l4(), 1), (node(OLD), 1)]);
        for settings in [json!({}), required("numa"), required("nvlink")] {
            let _ = decide(&spec, &view, &config(settings));
        }
    }
}

/// The caps on what one admission decides on (issue #35): past them the
/// pod is decided without the kubelet model, with a warning that names
/// the cap, and never refused for it.
#[cfg(test)]
mod caps {
    use crate::cluster::MAX_SHAPES;
    use crate::decide::testing::{config, hgx, hgx_memory_jitter, view, Remembered};
    use crate::decide::{evaluate_pod, Verdict, MAX_CONTAINERS};
    use serde_json::{json, Value};

    fn gpu_pod_with_sidecars(sidecars: usize) -> Value {
        let mut containers = vec![
            json!({"name": "train", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"}}}),
        ];
        containers.extend((0..sidecars).map(|i| {
            json!({"name": format!("sidecar-{i}"), "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
        }));
        json!({"spec": {"containers": containers}})
    }

    /// (groups in the view, containers besides the GPU one, the first
    /// warning's start)
    #[rstest::rstest]
    #[case::more_shapes_than_decided_on(
        MAX_SHAPES + 1, 0,
        format!("GPU fit not checked: the fleet has {} distinct node shapes, more than the {MAX_SHAPES}", MAX_SHAPES + 1)
    )]
    #[case::more_containers_than_modeled(
        1, MAX_CONTAINERS,
        format!("GPU fit not checked against the node shapes: the pod has {} containers, more than the {MAX_CONTAINERS}", MAX_CONTAINERS + 1)
    )]
    fn past_a_cap_the_pod_is_admitted_with_a_warning_that_names_it(
        #[case] shapes: usize,
        #[case] sidecars: usize,
        #[case] warning: String,
    ) {
        let groups: Vec<(gpu_topology::NodeTopology, u32)> = (0..shapes)
            .map(|i| (hgx_memory_jitter(u32::try_from(i).unwrap()), 1))
            .collect();
        for affinity in ["preferred", "required"] {
            let config = config(json!({"topology": {"affinity": affinity}}));
            let decision = evaluate_pod(
                &gpu_pod_with_sidecars(sidecars),
                &config,
                &Remembered(view(groups.clone())),
            );
            assert!(
                matches!(decision.verdict, Verdict::Mutate(_) | Verdict::Accept),
                "{affinity}: {:?}",
                decision.verdict
            );
            assert!(
                decision.warnings.iter().any(|w| w.starts_with(&warning)),
                "{affinity}: {:?}",
                decision.warnings
            );
        }
    }

    /// At the container cap the model still decides.
    #[test]
    fn at_the_container_cap_the_model_decides() {
        let config = config(json!({}));
        let decision = evaluate_pod(
            &gpu_pod_with_sidecars(MAX_CONTAINERS - 1),
            &config,
            &Remembered(view(vec![(hgx("single-numa-node"), 2)])),
        );
        assert!(
            !decision
                .warnings
                .iter()
                .any(|w| w.contains("GPU fit not checked")),
            "{:?}",
            decision.warnings
        );
    }
}

/// The caps answer, never trap or loop: random fleets of distinct shapes
/// and pods of random sizes on both sides of the container cap.
#[cfg(test)]
mod caps_properties {
    use crate::decide::testing::{config, hgx_memory_jitter, view, Remembered};
    use crate::decide::{evaluate_pod, Verdict, MAX_CONTAINERS};
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn every_fleet_and_pod_size_gets_an_answer(
            shapes in 1u32..40,
            containers in 1usize..(MAX_CONTAINERS + 16),
            gpus in 1u32..9,
            required in any::<bool>(),
        ) {
            let groups = (0..shapes).map(|i| (hgx_memory_jitter(i), 1)).collect();
            let mut list = vec![json!({"name": "gpu", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}})];
            list.extend((1..containers).map(|i| json!({"name": format!("c{i}"), "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})));
            let affinity = if required { "required" } else { "preferred" };
            let config = config(json!({"topology": {"affinity": affinity}, "qos": {"memoryPerGpu": "256Gi"}}));
            let decision = evaluate_pod(&json!({"spec": {"containers": list}}), &config, &Remembered(view(groups)));
            let capped = decision
                .warnings
                .iter()
                .any(|w| w.starts_with("GPU fit not checked against the node shapes"));
            prop_assert_eq!(capped, containers > MAX_CONTAINERS);
            if containers > MAX_CONTAINERS {
                prop_assert!(!matches!(decision.verdict, Verdict::Reject(_)), "{:?}", decision.verdict);
            }
        }
    }
}
