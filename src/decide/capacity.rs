//! Static capacity: rejecting GPU counts that no node of the fleet can host,
//! per the operator's `capacity` settings. The check answers with the
//! figures ([`OverCapacity`]); [`OverCapacity::message`] words them.

use crate::decide::demand::Demand;
use crate::decide::explain::too_many;
use crate::settings::{AffinityMode, CapacitySettings, TopologyConfig};
use gpu_topology::{Alignment, TopologyManagerScope};

/// Why GPUs must sit on one NUMA node, when they must.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumaReason {
    /// `capacity.singleNumaNode`: the kubelets run single-numa-node.
    SingleNumaNodeKubelets,
    /// `topology.affinity: required` with `topology.alignment: numa`.
    RequiredNumaAlignment,
}

/// A demand above the static capacity, with its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverCapacity {
    /// The pod's GPUs (`demand`, in words) are more than
    /// `capacity.maxGpusPerNode` (`max`).
    PerNode { demand: String, max: u32 },
    /// The aligned unit's GPUs (`unit`, in words, under `scope`) must share
    /// one NUMA node (`reason`) and are more than
    /// `capacity.maxGpusPerNumaNode` (`max`).
    PerNumaNode {
        unit: String,
        scope: TopologyManagerScope,
        reason: NumaReason,
        max: u32,
    },
}

/// Why GPUs must sit on one NUMA node, when they must.
fn numa_reason(capacity: &CapacitySettings, topology: &TopologyConfig) -> Option<NumaReason> {
    if capacity.single_numa_node {
        Some(NumaReason::SingleNumaNodeKubelets)
    } else if topology.affinity == AffinityMode::Required && topology.alignment == Alignment::Numa {
        Some(NumaReason::RequiredNumaAlignment)
    } else {
        None
    }
}

/// Rejects a demand above the static capacity, with the figures that name
/// the containers, the count, the limit and what would fit.
pub fn check(
    demand: &Demand,
    capacity: &CapacitySettings,
    topology: &TopologyConfig,
) -> Result<(), OverCapacity> {
    let needs = demand.needs;
    // The scheduler places the whole pod: its total must fit one node,
    // whatever the scope of alignment.
    if let Some(max) = capacity.max_gpus_per_node.filter(|max| needs.total > *max) {
        return Err(OverCapacity::PerNode {
            demand: demand.describe_total(),
            max,
        });
    }
    if let (Some(max), Some(reason)) = (
        capacity
            .max_gpus_per_numa_node
            .filter(|max| needs.aligned > *max),
        numa_reason(capacity, topology),
    ) {
        return Err(OverCapacity::PerNumaNode {
            unit: demand.describe_unit(),
            scope: demand.scope,
            reason,
            max,
        });
    }
    Ok(())
}

impl OverCapacity {
    /// The rejection message.
    pub fn message(&self) -> String {
        match self {
            OverCapacity::PerNode { demand, max } => too_many(
                demand,
                TopologyManagerScope::Pod,
                &format!("the largest GPU node has {max} (capacity.maxGpusPerNode)"),
                *max,
            ),
            OverCapacity::PerNumaNode {
                unit,
                scope,
                reason,
                max,
            } => {
                let reason = match reason {
                    NumaReason::SingleNumaNodeKubelets => "the kubelets run topologyManagerPolicy single-numa-node (capacity.singleNumaNode)",
                    NumaReason::RequiredNumaAlignment => "the policy requires NUMA alignment (topology.affinity: required, topology.alignment: numa)",
                };
                too_many(
                    unit,
                    *scope,
                    &format!(
                        "the GPUs must share one NUMA node because {reason}, and a NUMA node has at most {max} (capacity.maxGpusPerNumaNode)"
                    ),
                    *max,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::demand::PodDevices;
    use crate::settings::Config;
    use rstest::rstest;
    use serde_json::json;

    fn demand(counts: &[u32]) -> PodDevices {
        let containers: Vec<_> = counts
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"name": format!("worker-{i}"), "resources": {"limits": {"nvidia.com/gpu": n.to_string()}}}))
            .collect();
        PodDevices::from_pod_spec(
            &json!({ "containers": containers }),
            &["nvidia.com/gpu".to_owned()],
        )
        .unwrap()
    }

    fn capacity(
        per_node: Option<u32>,
        per_numa: Option<u32>,
        single_numa_node: bool,
    ) -> CapacitySettings {
        CapacitySettings {
            source: crate::settings::CapacitySource::Static,
            max_gpus_per_node: per_node,
            max_gpus_per_numa_node: per_numa,
            single_numa_node,
            ..CapacitySettings::default()
        }
    }

    fn topology(
        scope: TopologyManagerScope,
        affinity: AffinityMode,
        alignment: Alignment,
    ) -> TopologyConfig {
        TopologyConfig {
            scope,
            affinity,
            alignment,
            ..Config::default().topology
        }
    }

    const POD: TopologyManagerScope = TopologyManagerScope::Pod;
    const CONTAINER: TopologyManagerScope = TopologyManagerScope::Container;
    const PREFERRED: AffinityMode = AffinityMode::Preferred;
    const REQUIRED: AffinityMode = AffinityMode::Required;

    /// The GPUs that fit, in number (issue #23: 0, 1 and several). Zero
    /// is reachable from the settings only as `capacity.maxGpusPerNode: 0`.
    #[rstest]
    #[case::zero_gpus(0, TopologyManagerScope::Pod,
        "GPU pod cannot be placed: it needs 2 GPUs but the largest GPU node has 0. Request at most 0 GPUs per pod, or split the work across several pods.")]
    #[case::one_gpu(1, TopologyManagerScope::Container,
        "GPU pod cannot be placed: it needs 2 GPUs but the largest GPU node has 1. Request at most 1 GPU per container, or split the work across several pods.")]
    #[case::several_gpus(8, TopologyManagerScope::Pod,
        "GPU pod cannot be placed: it needs 2 GPUs but the largest GPU node has 8. Request at most 8 GPUs per pod, or split the work across several pods.")]
    fn too_many_agrees_in_number(
        #[case] fits: u32,
        #[case] scope: TopologyManagerScope,
        #[case] message: &str,
    ) {
        let offer = format!("the largest GPU node has {fits}");
        assert_eq!(too_many("2 GPUs", scope, &offer, fits), message);
    }

    #[rstest]
    #[case::fits_a_node(&[8], capacity(Some(8), Some(4), false), topology(POD, PREFERRED, Alignment::Numa), None)]
    #[case::above_node(&[4, 6], capacity(Some(8), None, false), topology(POD, PREFERRED, Alignment::Numa),
        Some("it needs 10 GPUs (container \"worker-0\": 4 nvidia.com/gpu; container \"worker-1\": 6 nvidia.com/gpu) but the largest GPU node has 8 (capacity.maxGpusPerNode). Request at most 8 GPUs per pod"))]
    #[case::container_scope_aligns_the_largest(&[4, 4], capacity(Some(8), Some(4), true), topology(CONTAINER, PREFERRED, Alignment::Numa), None)]
    #[case::container_scope_still_needs_the_total_on_a_node(&[6, 6], capacity(Some(8), None, false), topology(CONTAINER, PREFERRED, Alignment::Numa),
        Some("it needs 12 GPUs (container \"worker-0\": 6 nvidia.com/gpu; container \"worker-1\": 6 nvidia.com/gpu) but the largest GPU node has 8 (capacity.maxGpusPerNode). Request at most 8 GPUs per pod"))]
    #[case::above_numa_but_relaxable(&[8], capacity(Some(8), Some(4), false), topology(POD, PREFERRED, Alignment::Numa), None)]
    #[case::above_numa_with_required_numa(&[8], capacity(Some(8), Some(4), false), topology(POD, REQUIRED, Alignment::Numa),
        Some("requires NUMA alignment (topology.affinity: required, topology.alignment: numa), and a NUMA node has at most 4 (capacity.maxGpusPerNumaNode). Request at most 4 GPUs per pod"))]
    #[case::above_numa_required_nvlink_is_relaxable(&[8], capacity(Some(8), Some(4), false), topology(POD, REQUIRED, Alignment::Nvlink), None)]
    #[case::above_numa_with_single_numa_node(&[3, 3], capacity(Some(8), Some(4), true), topology(POD, PREFERRED, Alignment::Node),
        Some("topologyManagerPolicy single-numa-node (capacity.singleNumaNode)"))]
    #[case::single_numa_node_per_container(&[3, 3], capacity(Some(8), Some(4), true), topology(CONTAINER, PREFERRED, Alignment::Numa), None)]
    #[case::single_numa_node_container_too_big(&[6], capacity(None, Some(4), true), topology(CONTAINER, PREFERRED, Alignment::Numa),
        Some("it needs 6 GPUs in one container (container \"worker-0\": 6 nvidia.com/gpu)"))]
    fn static_capacity(
        #[case] counts: &[u32],
        #[case] capacity: CapacitySettings,
        #[case] topology: TopologyConfig,
        #[case] expected: Option<&str>,
    ) {
        let outcome = check(
            &Demand::new(demand(counts), topology.scope),
            &capacity,
            &topology,
        );
        match expected {
            None => assert_eq!(outcome, Ok(())),
            Some(part) => {
                let message = outcome.unwrap_err().message();
                assert!(message.contains(part), "{message}");
            }
        }
    }
}
