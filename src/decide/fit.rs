//! The fit check: can any node place a pod's GPUs? Answered from the
//! cluster view (the nodes' topology labels, grouped by node shape, with a
//! verdict per shape) or the static `capacity` settings, as
//! `capacity.source` says.
//!
//! The cluster check asks the same question as the node affinity the pod gets
//! (the predicates of `gpu_topology::fit`), so the policy rejects exactly the
//! pods that affinity would leave Pending, and the kubelet would refuse:
//! - `affinity: required` (pinned pods too): some node must hold the pod's
//!   GPUs and host its aligned unit at the alignment;
//! - otherwise (`preferred`, `off`): some node's kubelet must admit the pod
//!   (`gpus >=` the total, and on `single-numa-node` nodes
//!   `gpus-per-numa-max >=` the aligned unit).

use crate::cluster::host::ClusterReader;
use crate::cluster::{self, ClusterView, Unavailable};
use crate::decide::capacity;
use crate::decide::demand::Demand;
use crate::settings::{AffinityMode, CapacitySource, Config};
use gpu_topology::{
    can_admit, can_host, Alignment, Fleet, GpuDemand, LabelPrefix, NodeTopology, Offer,
    TopologyManagerScope,
};

/// What a node must do for the pod, as its affinity will demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// Admit the pod and host its GPUs at this alignment (`affinity: required`).
    Host(Alignment),
    /// Admit the pod (the kubelet's own rule).
    Admit,
}

impl Requirement {
    /// The requirement for a pod under `config`.
    pub fn for_pod(config: &Config) -> Self {
        match config.topology.affinity {
            AffinityMode::Required => Requirement::Host(config.topology.alignment),
            AffinityMode::Preferred | AffinityMode::Off => Requirement::Admit,
        }
    }
}

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

/// The per-shape verdict: can nodes of this shape place the pod as its
/// affinity will demand? The same predicates the affinity is written from
/// (`gpu_topology::fit`).
pub fn shape_fits(node: &NodeTopology, needs: GpuDemand, requirement: Requirement) -> bool {
    match requirement {
        Requirement::Host(alignment) => can_host(node, needs, alignment),
        Requirement::Admit => can_admit(node, needs),
    }
}

/// Nodes of the fleet whose shape fits ([`shape_fits`]), counted shape by shape.
pub fn fitting_nodes(fleet: &Fleet, needs: GpuDemand, requirement: Requirement) -> u32 {
    fleet.count(|node| shape_fits(node, needs, requirement))
}

/// What the check lets through: `Ok` with warnings for the response, or the
/// rejection message.
pub type FitResult = Result<Vec<String>, String>;

/// Why reading the fleet summary is worth its setup, for the warning when
/// the Node list is read instead: measured with policy-server 1.36 (the Node
/// list) and this repository's benchmarks (the summary, BENCHMARKS.md).
pub const SUMMARY_MISSING_COST: &str =
    "deploy the fleet summarizer: the Node list costs about 44 µs per labeled node per admission";

/// Checks `demand` against the fleet, reading it where `capacity.source`
/// says; `pinned_node` is the node a pinned pod names, read apart from the
/// Node list.
pub fn check(
    demand: &Demand,
    pinned_node: Option<&str>,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> FitResult {
    let static_check =
        |limits| capacity::check(demand, limits, &config.topology).map(|()| Vec::<String>::new());
    if config.capacity_source == CapacitySource::Static {
        return config
            .capacity
            .as_ref()
            .map_or(Ok(Vec::new()), static_check);
    }
    let read = cluster::read(cluster, &config.sources, &config.label_prefix, pinned_node);
    // The host's messages end in a full stop; ours continue the sentence.
    fn clause(problem: &str) -> &str {
        problem.trim_end_matches('.')
    }
    let mut warnings: Vec<String> = read
        .summary_passed_over
        .iter()
        .map(|problem| {
            format!(
                "GPU fit read from the Node list: {}; {SUMMARY_MISSING_COST}",
                clause(problem)
            )
        })
        .collect();
    let view = match read.view {
        Ok(view) => view,
        Err(Unavailable::Summary(problem)) => {
            warnings.push(format!(
                "GPU fit not checked: {}. Run the fleet summarizer and grant the policy read access to its ConfigMap, or set capacity.source: auto to fall back to the Node list",
                clause(&problem)
            ));
            return Ok(warnings);
        }
        Err(Unavailable::NodeList(problem)) => {
            let unavailable = format!(
                "the cluster view (Node labels) is unavailable: {}",
                clause(&problem)
            );
            return match (&config.capacity_source, &config.capacity) {
                (CapacitySource::Auto, Some(limits)) => static_check(limits).map(|_| {
                    warnings.push(format!(
                        "GPU fit checked against the static capacity settings: {unavailable}"
                    ));
                    warnings
                }),
                _ => {
                    warnings.push(format!(
                        "GPU fit not checked: {unavailable}. Grant the policy read access to v1 Nodes (contextAwareResources), or configure capacity.maxGpusPerNode"
                    ));
                    Ok(warnings)
                }
            };
        }
    };
    let affinity_needs_labels = affinity_applies(config, pinned_node.is_some());
    check_fleet(
        demand,
        Requirement::for_pod(config),
        &view,
        &config.label_prefix,
        affinity_needs_labels,
    )
    .map(|more| {
        warnings.extend(more);
        warnings
    })
}

/// The cluster check over a view already read. Pure.
pub fn check_fleet(
    demand: &Demand,
    requirement: Requirement,
    view: &ClusterView,
    prefix: &LabelPrefix,
    affinity_needs_labels: bool,
) -> FitResult {
    let mut warnings = Vec::new();
    if view.malformed > 0 {
        let example = view
            .first_problem
            .as_ref()
            .map_or_else(String::new, |problem| format!(" (e.g. {problem})"));
        warnings.push(format!(
            "{} with malformed {prefix} labels left out of the GPU fit check{example}; fix the node labeler there",
            nodes(view.malformed)
        ));
    }
    let fleet = &view.fleet;
    if fleet.is_empty() {
        let missing = if view.malformed > 0 {
            format!("no node publishes valid {prefix} labels: is the labeler healthy?")
        } else {
            format!("no node publishes {prefix} labels: is the labeler deployed?")
        };
        if affinity_needs_labels {
            return Err(format!(
                "GPU pod cannot be placed: it needs {}, but {missing} The policy's node affinity selects only labeled nodes, so the pod would stay Pending. Deploy the gpu-topology labeler on the GPU nodes, or set topology.affinity: off.",
                demand.describe_unit()
            ));
        }
        warnings.push(format!("GPU fit not checked: {missing}"));
        return Ok(warnings);
    }
    let needs = demand.needs;
    if fitting_nodes(fleet, needs, requirement) > 0 {
        return Ok(warnings);
    }
    if needs.total > needs.aligned {
        // `container` scope: say whether the pod as a whole fits no node, or
        // its largest container fits none of the nodes that hold it.
        let largest = fleet.largest_node();
        if needs.total <= largest.gpus {
            return Err(no_fit_per_container(demand, requirement, fleet));
        }
        return Err(capacity::too_many(
            &demand.describe_total(),
            TopologyManagerScope::Pod,
            &format!(
                "the largest labeled GPU node has {} ({})",
                largest.gpus,
                nodes(largest.nodes)
            ),
            largest.gpus,
        ));
    }
    Err(no_fit_message(demand, requirement, fleet))
}

/// `GPU pod cannot be placed: it needs <demand> <alignment>, but none of the
/// <k> labeled GPU nodes can host it: <best offers>. <what to change>.`
pub fn no_fit_message(demand: &Demand, requirement: Requirement, fleet: &Fleet) -> String {
    let (n, scope) = (demand.needs.aligned, demand.scope);
    let admitted = fleet.largest_admitted();
    let mut facts = Vec::new();
    let (need, verb, remedy) = match requirement {
        Requirement::Host(alignment) => {
            let hosted = fleet.largest_hosted(alignment);
            if alignment != Alignment::Node {
                facts.push(format!(
                    "largest {} offer: {}",
                    alignment.describe(),
                    offer(hosted)
                ));
            }
            let relax = format!(
                "set topology.affinity: preferred so the GPUs may span {}",
                span(alignment)
            );
            let remedy = match (
                n <= admitted.gpus && alignment != Alignment::Node,
                hosted.gpus,
            ) {
                (true, 0) => capitalized(&relax),
                (true, fits) => {
                    format!("Request at most {} {}, or {relax}", gpus(fits), per(scope))
                }
                (false, fits) => smaller_request(fits, scope),
            };
            let need = format!("{} {}", demand.describe_unit(), alignment.describe());
            (need, "host", remedy)
        }
        Requirement::Admit => (
            demand.describe_unit(),
            "admit",
            smaller_request(admitted.gpus, scope),
        ),
    };
    facts.push(format!("largest node offer: {}", offer(admitted)));
    let limited = fleet.limited_by_single_numa_node();
    if limited > 0 {
        facts.push(format!(
            "{} run{} topologyManagerPolicy single-numa-node, which admits a pod only when its GPUs fit on one NUMA node",
            nodes(limited),
            if limited == 1 { "s" } else { "" }
        ));
    }
    let nobody = match fleet.nodes() {
        1 => format!("the only labeled GPU node cannot {verb} it"),
        count => format!("none of the {count} labeled GPU nodes can {verb} it"),
    };
    format!(
        "GPU pod cannot be placed: it needs {need}, but {nobody}: {}. {remedy}.",
        facts.join("; ")
    )
}

/// `container` scope, where some node holds the pod's total but none can
/// place its largest container as required: the offer counts only the nodes
/// that hold the total.
fn no_fit_per_container(demand: &Demand, requirement: Requirement, fleet: &Fleet) -> String {
    let needs = demand.needs;
    let (how, best, relax) = match requirement {
        Requirement::Host(alignment) => (
            alignment.describe(),
            fleet.largest_unit(needs.total, |t, d| can_host(t, d, alignment)),
            format!(
                ", or set topology.affinity: preferred so the GPUs may span {}",
                span(alignment)
            ),
        ),
        Requirement::Admit => (
            "admitted by the kubelet",
            fleet.largest_unit(needs.total, can_admit),
            ", or split the work across several pods".to_owned(),
        ),
    };
    let remedy = if best.gpus == 0 {
        "No labeled node that holds the pod can place any of its containers as required; check the nodes' GPU labels".to_owned()
    } else {
        format!("Request at most {} per container{relax}", gpus(best.gpus))
    };
    format!(
        "GPU pod cannot be placed: it needs {} on one node, {} {how}, but on the labeled nodes that hold {} the largest container offer is {}. {remedy}.",
        demand.describe_total(),
        demand.describe_unit(),
        gpus(needs.total),
        offer(best),
    )
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn smaller_request(fits: u32, scope: TopologyManagerScope) -> String {
    if fits == 0 {
        "No labeled node offers a GPU to any pod; check the nodes' GPU labels and device plugin"
            .to_owned()
    } else {
        format!(
            "Request at most {} {}, or split the work across several pods",
            gpus(fits),
            per(scope)
        )
    }
}

fn per(scope: TopologyManagerScope) -> &'static str {
    match scope {
        TopologyManagerScope::Pod => "per pod",
        TopologyManagerScope::Container => "per container",
    }
}

fn span(alignment: Alignment) -> &'static str {
    match alignment {
        Alignment::Numa => "NUMA nodes",
        Alignment::Nvlink => "NVLink groups",
        Alignment::Node => "nodes",
    }
}

/// `4 GPUs on 12 nodes`
fn offer(offer: Offer) -> String {
    format!("{} on {}", gpus(offer.gpus), nodes(offer.nodes))
}

fn gpus(count: u32) -> String {
    plural(count, "GPU")
}

fn nodes(count: u32) -> String {
    plural(count, "node")
}

fn plural(count: u32, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::demand::PodDemand;
    use gpu_topology::TopologyManagerPolicy;
    use rstest::rstest;
    use serde_json::json;

    /// One container per count: `worker`, then `worker-1`, `worker-2`...
    fn demand(counts: &[u32]) -> PodDemand {
        let containers: Vec<_> = counts
            .iter()
            .enumerate()
            .map(|(i, gpus)| {
                let name = if i == 0 {
                    "worker".to_owned()
                } else {
                    format!("worker-{i}")
                };
                json!({"name": name, "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}})
            })
            .collect();
        let spec = json!({ "containers": containers });
        PodDemand::from_pod_spec(&spec, &["nvidia.com/gpu".to_owned()]).unwrap()
    }

    fn fleet(nodes: &[(u32, Option<u32>, Option<u32>, u32)]) -> Fleet {
        let mut fleet = Fleet::new();
        for (gpus, per_numa, nvlink, count) in nodes {
            let topology = NodeTopology {
                gpus: Some(*gpus),
                gpus_per_numa_max: *per_numa,
                nvlink_group_max: *nvlink,
                topology_manager_policy: Some(TopologyManagerPolicy::BestEffort),
                ..NodeTopology::default()
            };
            fleet.add_nodes(topology, *count);
        }
        fleet
    }

    const POD: TopologyManagerScope = TopologyManagerScope::Pod;

    /// (GPUs, scope, requirement, fleet, whole message)
    #[rstest]
    #[case::one_node_too_small(&[8], POD, Requirement::Admit, fleet(&[(4, Some(4), Some(4), 1)]),
        "GPU pod cannot be placed: it needs 8 GPUs (container \"worker\": 8 nvidia.com/gpu), but the only labeled GPU node cannot admit it: largest node offer: 4 GPUs on 1 node. Request at most 4 GPUs per pod, or split the work across several pods.")]
    #[case::no_gpu_anywhere(&[1], POD, Requirement::Admit, fleet(&[(0, None, None, 3)]),
        "GPU pod cannot be placed: it needs 1 GPU (container \"worker\": 1 nvidia.com/gpu), but none of the 3 labeled GPU nodes can admit it: largest node offer: 0 GPUs on 3 nodes. No labeled node offers a GPU to any pod; check the nodes' GPU labels and device plugin.")]
    #[case::alignment_label_missing(&[2], POD, Requirement::Host(Alignment::Nvlink), fleet(&[(8, Some(4), None, 2)]),
        "GPU pod cannot be placed: it needs 2 GPUs (container \"worker\": 2 nvidia.com/gpu) NVLink-aligned, but none of the 2 labeled GPU nodes can host it: largest NVLink-aligned offer: 0 GPUs on 2 nodes; largest node offer: 8 GPUs on 2 nodes. Set topology.affinity: preferred so the GPUs may span NVLink groups.")]
    #[case::per_container_scope(&[6], TopologyManagerScope::Container, Requirement::Host(Alignment::Numa), fleet(&[(4, Some(2), Some(4), 5)]),
        "GPU pod cannot be placed: it needs 6 GPUs in one container (container \"worker\": 6 nvidia.com/gpu) NUMA-aligned, but none of the 5 labeled GPU nodes can host it: largest NUMA-aligned offer: 2 GPUs on 5 nodes; largest node offer: 4 GPUs on 5 nodes. Request at most 2 GPUs per container, or split the work across several pods.")]
    #[case::per_container_scope_total_above_every_node(&[4, 4, 4], TopologyManagerScope::Container, Requirement::Host(Alignment::Numa), fleet(&[(8, Some(4), Some(8), 5)]),
        "GPU pod cannot be placed: it needs 12 GPUs (container \"worker\": 4 nvidia.com/gpu; container \"worker-1\": 4 nvidia.com/gpu; container \"worker-2\": 4 nvidia.com/gpu) but the largest labeled GPU node has 8 (5 nodes). Request at most 8 GPUs per pod, or split the work across several pods.")]
    #[case::per_container_scope_no_node_holding_the_pod_aligns_a_container(&[4, 4], TopologyManagerScope::Container, Requirement::Host(Alignment::Numa), fleet(&[(8, Some(2), Some(8), 1), (4, Some(4), Some(4), 3)]),
        "GPU pod cannot be placed: it needs 8 GPUs (container \"worker\": 4 nvidia.com/gpu; container \"worker-1\": 4 nvidia.com/gpu) on one node, 4 GPUs in one container (container \"worker\": 4 nvidia.com/gpu) NUMA-aligned, but on the labeled nodes that hold 8 GPUs the largest container offer is 2 GPUs on 1 node. Request at most 2 GPUs per container, or set topology.affinity: preferred so the GPUs may span NUMA nodes.")]
    fn no_fit_messages(
        #[case] gpus: &[u32],
        #[case] scope: TopologyManagerScope,
        #[case] requirement: Requirement,
        #[case] fleet: Fleet,
        #[case] expected: &str,
    ) {
        let demand = Demand::new(demand(gpus), scope);
        let view = ClusterView {
            fleet,
            ..ClusterView::default()
        };
        let prefix = LabelPrefix::default();
        assert_eq!(
            check_fleet(&demand, requirement, &view, &prefix, true),
            Err(expected.to_owned())
        );
    }

    /// (affinity mode, pinned, requirement, affinity added)
    #[rstest]
    #[case::required(
        AffinityMode::Required,
        false,
        Requirement::Host(Alignment::Nvlink),
        true
    )]
    #[case::required_and_pinned(
        AffinityMode::Required,
        true,
        Requirement::Host(Alignment::Nvlink),
        true
    )]
    #[case::preferred(AffinityMode::Preferred, false, Requirement::Admit, true)]
    #[case::preferred_but_pinned(AffinityMode::Preferred, true, Requirement::Admit, false)]
    #[case::off(AffinityMode::Off, false, Requirement::Admit, false)]
    fn requirement_follows_the_affinity(
        #[case] affinity: AffinityMode,
        #[case] pinned: bool,
        #[case] expected: Requirement,
        #[case] applies: bool,
    ) {
        let mut config = Config::default();
        config.topology.affinity = affinity;
        config.topology.alignment = Alignment::Nvlink;
        assert_eq!(Requirement::for_pod(&config), expected);
        assert_eq!(affinity_applies(&config, pinned), applies);
    }
}
