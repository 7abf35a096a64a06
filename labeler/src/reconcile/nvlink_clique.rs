//! `gpu-clique`: the multi-node NVLink clique (GB200 NVL72) of the node's
//! GPUs, as GPU Feature Discovery computes `nvidia.com/gpu.clique`
//! (k8s-device-plugin internal/lm/fabric.go `getFabricIDs`):
//!
//! - GPUs not attached to a fabric (go-nvlib `IsFabricAttached`: state not
//!   `Completed`, status not `Success`, or a zero cluster UUID; see
//!   [`crate::parse::nvidia_smi_query`]) are skipped;
//! - the attached GPUs must all name one cluster UUID and one clique id,
//!   else the label is left out (GFD logs "non-unique" and writes none);
//! - no attached GPU: no label (every node outside an NVL72 rack).
//!
//! GFD still writes the label when some GPUs are not attached; so does the
//! labeler, with a warning naming them, as a pod given one of those GPUs
//! gets no multi-node NVLink.
//!
//! Why `nvidia-smi -q` rather than reading GFD's label: the labeler already
//! runs nvidia-smi, needs no read access to its Node, and does not depend on
//! GFD being deployed; both read the same NVML call.

use super::Outcome;
use crate::model::Vendor;
use crate::parse::nvidia_smi_query::{Attachment, GpuFabric};
use gpu_topology::{GpuClique, LabelKey};
use std::collections::BTreeSet;

/// Sets `gpu_clique` from the fabric sections, unless the labels describe
/// GPUs of another vendor than NVIDIA's.
pub(super) fn gpu_clique(fabrics: &[GpuFabric], outcome: &mut Outcome) {
    if outcome.summary.vendor.is_some_and(|v| v != Vendor::Nvidia) {
        return;
    }
    let cliques: BTreeSet<&GpuClique> = fabrics
        .iter()
        .filter_map(|f| match &f.attachment {
            Attachment::Attached(clique) => Some(clique),
            Attachment::NotAttached(_) => None,
        })
        .collect();
    let key = LabelKey::GpuClique.name();
    match cliques.len() {
        0 => {}
        1 => {
            let unattached: Vec<String> = fabrics
                .iter()
                .filter_map(|f| match &f.attachment {
                    Attachment::NotAttached(why) => Some(format!("{} ({why})", f.gpu)),
                    Attachment::Attached(_) => None,
                })
                .collect();
            if !unattached.is_empty() {
                outcome.warnings.push(format!(
                    "{key} stands for the fabric-attached GPUs only, as GPU Feature Discovery writes it: \
                     not attached: {}",
                    unattached.join(", ")
                ));
            }
            outcome.topology.gpu_clique = cliques.first().map(|c| (*c).clone());
        }
        _ => outcome.warnings.push(format!(
            "{key} left out: the GPUs are in different NVLink cliques ({})",
            cliques
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const CLUSTER: &str = "dc6e40c4-d722-4357-9ba6-5291dd461278";
    const OTHER_CLUSTER: &str = "9c6f5af3-53bf-49b5-a436-b66766c413c3";

    fn attached(gpu: usize, cluster: &str, clique: u32) -> GpuFabric {
        GpuFabric {
            gpu: format!("GPU {gpu}"),
            attachment: Attachment::Attached(GpuClique::new(cluster, clique).unwrap()),
        }
    }

    fn not_attached(gpu: usize, why: &str) -> GpuFabric {
        GpuFabric {
            gpu: format!("GPU {gpu}"),
            attachment: Attachment::NotAttached(why.to_owned()),
        }
    }

    #[rstest]
    #[case::four_gpus_of_one_clique(
        vec![attached(0, CLUSTER, 2), attached(1, CLUSTER, 2), attached(2, CLUSTER, 2), attached(3, CLUSTER, 2)],
        Some("dc6e40c4-d722-4357-9ba6-5291dd461278.2"), None
    )]
    #[case::one_gpu_still_registering(
        vec![attached(0, CLUSTER, 2), not_attached(1, "State In Progress")],
        Some("dc6e40c4-d722-4357-9ba6-5291dd461278.2"), Some("GPU 1 (State In Progress)")
    )]
    #[case::two_cliques(
        vec![attached(0, CLUSTER, 2), attached(1, CLUSTER, 3)],
        None, Some("different NVLink cliques")
    )]
    #[case::two_clusters(
        vec![attached(0, CLUSTER, 2), attached(1, OTHER_CLUSTER, 2)],
        None, Some("different NVLink cliques")
    )]
    #[case::no_gpu_attached(vec![not_attached(0, "State N/A"), not_attached(1, "State N/A")], None, None)]
    #[case::no_fabric_sections(vec![], None, None)]
    fn the_attached_gpus_must_share_one_clique(
        #[case] fabrics: Vec<GpuFabric>,
        #[case] label: Option<&str>,
        #[case] warning: Option<&str>,
    ) {
        let mut outcome = Outcome::default();
        gpu_clique(&fabrics, &mut outcome);
        assert_eq!(
            outcome
                .topology
                .gpu_clique
                .map(|c| c.to_string())
                .as_deref(),
            label
        );
        match warning {
            Some(text) => assert!(
                outcome.warnings.iter().any(|w| w.contains(text)),
                "{:?}",
                outcome.warnings
            ),
            None => assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings),
        }
    }

    #[test]
    fn amd_gpus_get_no_clique_from_nvidia_smi() {
        let mut outcome = Outcome::default();
        outcome.summary.vendor = Some(Vendor::Amd);
        gpu_clique(&[attached(0, CLUSTER, 2)], &mut outcome);
        assert_eq!(outcome.topology.gpu_clique, None);
    }
}
