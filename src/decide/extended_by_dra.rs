//! GPU extended resources that DRA also serves (KEP-5004, `DRAExtendedResource`,
//! beta and on by default from 1.36): a DeviceClass with
//! `spec.extendedResourceName: nvidia.com/gpu` lets the scheduler allocate a
//! pod's `nvidia.com/gpu` from the class's devices on every node whose
//! allocatable lacks it (no device plugin there), in a claim of its own with
//! no constraints (`extendeddynamicresources.go` `filterExtendedResources`).
//! The kubelet gives those devices no topology hint, so on such nodes the
//! pod's GPUs are not aligned with each other nor with its CPUs, whatever the
//! node's labels say. The policy cannot constrain the scheduler's claim (it
//! is created with its allocation already computed), so it says so.
//!
//! Read from the fleet summary (`draExtendedResources`, a few bytes), never
//! with a call of its own: the Node list path does not tell.

use crate::cluster::ClusterView;
use crate::decide::demand::PodDevices;
use gpu_topology::dra::ExtendedResource;

/// A warning about the pod's GPUs and DRA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServedByDra {
    /// The summary's entry cannot be read: whether DRA serves them is not
    /// known.
    NotKnown { problem: String },
    /// A DeviceClass maps one of the pod's GPU resources, and some nodes
    /// publish its devices.
    Served(ExtendedResource),
}

impl ServedByDra {
    pub(crate) fn words(&self) -> String {
        match self {
            ServedByDra::NotKnown { problem } => format!(
                "whether DRA also serves this pod's GPUs (KEP-5004) is not known: {problem}"
            ),
            ServedByDra::Served(mapped) => served_by_dra(mapped),
        }
    }
}

/// The warnings for a pod with demand `demand` on the fleet `view`.
pub(crate) fn warnings(demand: &PodDevices, view: &ClusterView) -> Vec<ServedByDra> {
    let mut warnings = Vec::new();
    if let Some(problem) = &view.extended_by_dra_problem {
        warnings.push(ServedByDra::NotKnown {
            problem: problem.clone(),
        });
    }
    let mut requested: Vec<&str> = Vec::new();
    for (resource, _) in demand.containers.iter().flat_map(|c| &c.resources) {
        if !requested.contains(&resource.as_str()) {
            requested.push(resource);
        }
    }
    for resource in requested {
        for mapped in view.extended_by_dra.of(resource).filter(|m| m.nodes > 0) {
            warnings.push(ServedByDra::Served(mapped.clone()));
        }
    }
    warnings
}

fn served_by_dra(mapped: &ExtendedResource) -> String {
    let ExtendedResource {
        resource,
        class,
        nodes,
        examples,
    } = mapped;
    // The entry is the summarizer's, read as untrusted: at most `nodes`
    // examples are named.
    let count = *nodes as usize;
    let shown = &examples[..examples.len().min(count)];
    let named = match (shown, count) {
        ([one], 1) => format!("node {one}"),
        (_, 1) => "1 node".to_owned(),
        ([], _) => format!("{count} nodes"),
        (some, _) if count > some.len() => format!(
            "{count} nodes ({} and {} more)",
            some.join(", "),
            count - some.len()
        ),
        (some, _) => format!("{count} nodes ({})", some.join(", ")),
    };
    let publish = if *nodes == 1 { "publishes" } else { "publish" };
    format!(
        "{resource} is also served through DRA: DeviceClass {class} maps it (extendedResourceName, KEP-5004), and on the {named} that {publish} its devices, wherever no device plugin offers {resource}, the scheduler allocates it in a claim of its own without a NUMA constraint, which the kubelet does not align with the pod's CPUs or other GPUs; to align GPUs there, request them through a ResourceClaimTemplate (the policy completes it with a NUMA constraint)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::testing::pod;
    use gpu_topology::dra::ExtendedResources;
    use rstest::rstest;

    fn mapped(resource: &str, nodes: u32, examples: &[&str]) -> ExtendedResource {
        ExtendedResource {
            resource: resource.into(),
            class: "gpu.nvidia.com".into(),
            nodes,
            examples: examples.iter().map(|e| (*e).to_owned()).collect(),
        }
    }

    #[rstest]
    #[case::no_class_maps_it(vec![], None, &[])]
    #[case::mapped_but_no_node_publishes_it(vec![mapped("nvidia.com/gpu", 0, &[])], None, &[])]
    #[case::another_resource_is_mapped(vec![mapped("amd.com/gpu", 4, &["mi-0"])], None, &[])]
    #[case::one_node(
        vec![mapped("nvidia.com/gpu", 1, &["dra-0"])], None,
        &["on the node dra-0 that publishes its devices"]
    )]
    #[case::more_nodes_than_examples(
        vec![mapped("nvidia.com/gpu", 12, &["a", "b", "c"])], None,
        &["on the 12 nodes (a, b, c and 9 more) that publish its devices"]
    )]
    #[case::more_examples_than_nodes(
        vec![mapped("nvidia.com/gpu", 1, &["a", "b"])], None,
        &["on the node a that publishes its devices"]
    )]
    #[case::unreadable_entry(
        vec![], Some("the fleet summary's \"draExtendedResources\" cannot be read: EOF"),
        &["whether DRA also serves this pod's GPUs (KEP-5004) is not known: the fleet summary's"]
    )]
    fn a_gpu_resource_dra_also_serves_is_warned_about(
        #[case] mapped: Vec<ExtendedResource>,
        #[case] problem: Option<&str>,
        #[case] expected: &[&str],
    ) {
        let view = ClusterView {
            extended_by_dra: ExtendedResources(mapped),
            extended_by_dra_problem: problem.map(str::to_owned),
            ..ClusterView::default()
        };
        let demand =
            PodDevices::from_pod_spec(&pod(8, 32), &["nvidia.com/gpu".to_owned()]).unwrap();
        let warnings: Vec<String> = (warnings(&demand, &view).iter())
            .map(ServedByDra::words)
            .collect();
        assert_eq!(warnings.len(), expected.len(), "{warnings:?}");
        for (warning, fragment) in warnings.iter().zip(expected) {
            assert!(warning.contains(fragment), "{warning}");
        }
    }
}
