//! The fit check: can any node place a pod's GPUs? Answered from the
//! cluster view (the nodes' topology labels) or the static `capacity`
//! settings, as `capacity.source` says.
//!
//! The cluster check asks the same question as the node affinity the pod gets
//! (the predicates of `gpu_topology::fit`), so the policy rejects exactly the
//! pods that affinity would leave Pending, and the kubelet would refuse:
//! - `affinity: required` (pinned pods too): some node must hold the pod's
//!   GPUs and host its aligned unit at the alignment;
//! - otherwise (`preferred`, `off`): some node's kubelet must admit the pod
//!   (`gpus >=` the total, and on `single-numa-node` nodes
//!   `gpus-per-numa-max >=` the aligned unit).

use crate::cluster::fleet_summary;
use crate::cluster::host::ClusterReader;
use crate::cluster::nodes::{read_cluster, ClusterView};
use crate::decide::capacity;
use crate::decide::demand::PodDemand;
use crate::settings::{AffinityMode, CapacitySource, Config};
use gpu_topology::{
    can_admit, can_host, Alignment, Fleet, GpuDemand, LabelPrefix, Offer, TopologyManagerScope,
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

/// Whether the pod gets node affinity; `pinned` when `spec.nodeName` is set.
/// Always under `required`: the kubelet itself enforces required node
/// affinity on a pod with `spec.nodeName`, so pinning is no way around it.
/// Under `preferred` only when the scheduler places the pod: preferences bind
/// only the scheduler, and the admission requirement would make the kubelet
/// refuse a pinned pod on a node the labeler has not labeled.
pub fn affinity_applies(config: &Config, pinned: bool) -> bool {
    match config.topology.affinity {
        AffinityMode::Required => true,
        AffinityMode::Preferred => !pinned,
        AffinityMode::Off => false,
    }
}

/// What the check lets through: `Ok` with warnings for the response, or the
/// rejection message.
pub type FitResult = Result<Vec<String>, String>;

/// Checks `demand` against the fleet, reading it where `capacity.source` says.
pub fn check(
    demand: &PodDemand,
    pinned: bool,
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
    let mut notes = Vec::new();
    let view = match read_fleet(cluster, config, &mut notes) {
        Ok(view) => view,
        Err(problem) => {
            // The host's messages end in a full stop; ours continue the sentence.
            let problem = problem.to_string();
            let unavailable = format!(
                "the cluster view (Node labels) is unavailable: {}",
                problem.trim_end_matches('.')
            );
            return match (&config.capacity_source, &config.capacity) {
                (CapacitySource::Auto, Some(limits)) => static_check(limits).map(|_| {
                    vec![format!(
                        "GPU fit checked against the static capacity settings: {unavailable}"
                    )]
                }),
                _ => Ok(vec![format!(
                    "GPU fit not checked: {unavailable}. Grant the policy read access to v1 Nodes (contextAwareResources), or configure capacity.maxGpusPerNode"
                )]),
            };
        }
    };
    let affinity_needs_labels = affinity_applies(config, pinned);
    check_fleet(
        demand,
        config.topology.scope,
        Requirement::for_pod(config),
        &view,
        &config.label_prefix,
        affinity_needs_labels,
    )
    .map(|warnings| notes.into_iter().chain(warnings).collect())
}

/// The cluster view: the fleet summary when one is configured and fresh,
/// else the Node list. A summary passed over is noted in `notes`; `Err` says
/// why the Node list did not answer either.
fn read_fleet(
    cluster: &dyn ClusterReader,
    config: &Config,
    notes: &mut Vec<String>,
) -> Result<ClusterView, String> {
    if let Some(summary) = &config.fleet_summary {
        match fleet_summary::read_summary(cluster, summary, fleet_summary::now()) {
            Ok(view) => return Ok(view),
            Err(problem) => notes.push(format!("GPU fit read from the Node list: {problem}")),
        }
    }
    read_cluster(cluster, &config.label_prefix)
}

/// The cluster check over a view already read. Pure.
pub fn check_fleet(
    demand: &PodDemand,
    scope: TopologyManagerScope,
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
                demand.describe(scope)
            ));
        }
        warnings.push(format!("GPU fit not checked: {missing}"));
        return Ok(warnings);
    }
    let needs = demand.gpu_demand(scope);
    let fits = match requirement {
        Requirement::Host(alignment) => fleet.hosting(needs, alignment),
        Requirement::Admit => fleet.admitting(needs),
    };
    if fits > 0 {
        return Ok(warnings);
    }
    if needs.total > needs.aligned {
        // `container` scope: say whether the pod as a whole fits no node, or
        // its largest container fits none of the nodes that hold it.
        let largest = fleet.largest_node();
        if needs.total <= largest.gpus {
            return Err(no_fit_per_container(demand, needs, requirement, fleet));
        }
        return Err(capacity::too_many(
            demand,
            TopologyManagerScope::Pod,
            &format!(
                "the largest labeled GPU node has {} ({})",
                largest.gpus,
                nodes(largest.nodes)
            ),
            largest.gpus,
        ));
    }
    Err(no_fit_message(demand, scope, requirement, fleet))
}

/// `GPU pod cannot be placed: it needs <demand> <alignment>, but none of the
/// <k> labeled GPU nodes can host it: <best offers>. <what to change>.`
pub fn no_fit_message(
    demand: &PodDemand,
    scope: TopologyManagerScope,
    requirement: Requirement,
    fleet: &Fleet,
) -> String {
    let n = demand.gpus(scope);
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
            let need = format!("{} {}", demand.describe(scope), alignment.describe());
            (need, "host", remedy)
        }
        Requirement::Admit => (
            demand.describe(scope),
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
fn no_fit_per_container(
    demand: &PodDemand,
    needs: GpuDemand,
    requirement: Requirement,
    fleet: &Fleet,
) -> String {
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
        demand.describe(TopologyManagerScope::Pod),
        demand.describe(TopologyManagerScope::Container),
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
    use gpu_topology::{NodeTopology, TopologyManagerPolicy};
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
        let demand = demand(gpus);
        let view = ClusterView {
            fleet,
            ..ClusterView::default()
        };
        let prefix = LabelPrefix::default();
        assert_eq!(
            check_fleet(&demand, scope, requirement, &view, &prefix, true),
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
