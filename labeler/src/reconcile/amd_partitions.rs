//! AMD compute partitions: the logical GPUs the AMD device plugin exposes as
//! `amd.com/gpu`, and the partition modes as informational labels.
//!
//! The count reproduces ROCm/k8s-device-plugin internal/pkg/amdgpu/amdgpu.go
//! `GetAMDGPUs` (as of commit 0821507dbd4c; later versions find a
//! partition's GPU by the KFD node's PCI identity, `domain` and
//! `location_id`, which names the same GPU on a machine whose partitions
//! are whole):
//!
//! - every AMD GPU (PCI function) is one device, on its `numa_node`: in SPX
//!   mode the whole GPU, in DPX/QPX/CPX mode its first partition;
//! - every `devices/platform/amdgpu_xcp_*` is one more device when its
//!   render node is one KFD's topology lists (`renderNodeSetFromTopology`:
//!   amdgpu creates the platform devices in every mode, KFD lists only the
//!   live partitions). Its GPU is the one whose card minor is
//!   `((m - 1) / 8) * 8 + 1` for the partition's card minor `m` (each GPU
//!   takes 8 DRM minors); it sits on that GPU's NUMA node, and is not
//!   exposed when that GPU is not found or its NUMA node is unknown.
//!
//! So an MI300X in CPX mode counts 8 logical GPUs on its NUMA node, and
//! `gpus` and `numa-gpus` count what pods request. A change of partition
//! mode changes them: the labeler reads them again on its next round.
//!
//! Modes (`amd-compute-partition`, `amd-memory-partition`): the AMD GPUs'
//! `current_compute_partition` and `current_memory_partition`, lowercased
//! as the device plugin reads them; published only when every AMD GPU has
//! the same one (a node of mixed modes has no one word for them: left out,
//! with a warning).

use super::Outcome;
use crate::model::{AmdXcp, PciGpu, SysfsView};
use gpu_topology::{AmdComputePartition, AmdMemoryPartition, LabelKey};
use std::collections::BTreeSet;
use std::str::FromStr;

/// DRM minors each AMD GPU takes: its card and its partitions' cards.
const DRM_MINORS_PER_GPU: i64 = 8;

/// `gpus` (the AMD GPUs of sysfs) with, after each, the partitions the AMD
/// device plugin exposes beyond its first; sets the partition modes.
pub(super) fn logical_gpus(
    view: &SysfsView,
    gpus: Vec<PciGpu>,
    outcome: &mut Outcome,
) -> Vec<PciGpu> {
    set_modes(view, &gpus, outcome);
    let partitions = &view.amd_partitions;
    if partitions.xcps.is_empty() {
        return gpus;
    }
    let Some(kfd) = &partitions.kfd_render_minors else {
        outcome.warnings.push(format!(
            "sysfs has {} amdgpu_xcp partitions but no KFD topology (class/kfd/kfd/topology/nodes): \
             only whole GPUs are counted, as the AMD device plugin counts them",
            partitions.xcps.len()
        ));
        return gpus;
    };
    let mut logical = Vec::with_capacity(gpus.len());
    let mut skipped = Vec::new();
    for gpu in &gpus {
        logical.push(gpu.clone());
        let Some(card) = partitions.gpus.get(&gpu.address).and_then(|p| p.card_minor) else {
            continue;
        };
        for xcp in partitions
            .xcps
            .iter()
            .filter(|xcp| is_live_partition_of(xcp, card, kfd))
        {
            if gpu.numa.is_none() {
                skipped.push(format!(
                    "{} (its GPU {} has no NUMA node)",
                    xcp.name, gpu.address
                ));
                continue;
            }
            logical.push(PciGpu {
                address: format!("{}/{}", gpu.address, xcp.name),
                ..gpu.clone()
            });
        }
    }
    let owned: BTreeSet<u32> = partitions
        .gpus
        .values()
        .filter_map(|p| p.card_minor)
        .collect();
    skipped.extend(
        partitions
            .xcps
            .iter()
            .filter(|xcp| xcp.render_minor.is_some_and(|minor| kfd.contains(&minor)))
            .filter(|xcp| {
                xcp.card_minor
                    .and_then(parent_card)
                    .is_none_or(|card| !owned.contains(&card))
            })
            .map(|xcp| format!("{} (no GPU owns its card)", xcp.name)),
    );
    if !skipped.is_empty() {
        outcome.warnings.push(format!(
            "AMD partitions not counted, as the AMD device plugin does not expose them: {}",
            skipped.join(", ")
        ));
    }
    logical
}

/// The card minor of the GPU that partition card minor `minor` belongs to.
fn parent_card(minor: u32) -> Option<u32> {
    let parent = (i64::from(minor) - 1) / DRM_MINORS_PER_GPU * DRM_MINORS_PER_GPU + 1;
    u32::try_from(parent).ok()
}

/// Whether `xcp` is a partition KFD lists of the GPU whose card minor is `card`.
fn is_live_partition_of(xcp: &AmdXcp, card: u32, kfd: &BTreeSet<u32>) -> bool {
    xcp.render_minor.is_some_and(|minor| kfd.contains(&minor))
        && xcp.card_minor.and_then(parent_card) == Some(card)
}

fn set_modes(view: &SysfsView, gpus: &[PciGpu], outcome: &mut Outcome) {
    let modes: Vec<(Option<&str>, Option<&str>)> = gpus
        .iter()
        .map(|gpu| {
            let partitions = view.amd_partitions.gpus.get(&gpu.address);
            (
                partitions.and_then(|p| p.compute.as_deref()),
                partitions.and_then(|p| p.memory.as_deref()),
            )
        })
        .collect();
    outcome.topology.amd_compute_partition = agreed_mode::<AmdComputePartition>(
        LabelKey::AmdComputePartition,
        modes.iter().map(|(compute, _)| *compute),
        &mut outcome.warnings,
    );
    outcome.topology.amd_memory_partition = agreed_mode::<AmdMemoryPartition>(
        LabelKey::AmdMemoryPartition,
        modes.iter().map(|(_, memory)| *memory),
        &mut outcome.warnings,
    );
}

/// The one mode every GPU reports, lowercased; `None` when no GPU has the
/// file (GPUs without partitions: no warning), or with a warning when some
/// lack it, modes differ, or a mode is not one the contract knows.
fn agreed_mode<'a, T: FromStr + Copy + PartialEq>(
    key: LabelKey,
    modes: impl Iterator<Item = Option<&'a str>>,
    warnings: &mut Vec<String>,
) -> Option<T> {
    let modes: Vec<Option<&str>> = modes.collect();
    if modes.iter().all(Option::is_none) {
        return None;
    }
    let distinct: BTreeSet<Option<&str>> = modes.iter().copied().collect();
    let [Some(mode)] = distinct.iter().copied().collect::<Vec<_>>()[..] else {
        let listed: Vec<&str> = distinct.iter().map(|m| m.unwrap_or("none")).collect();
        warnings.push(format!(
            "{} left out: the AMD GPUs' modes differ ({})",
            key.name(),
            listed.join(", ")
        ));
        return None;
    };
    match mode.to_ascii_lowercase().parse() {
        Ok(value) => Some(value),
        Err(_) => {
            warnings.push(format!(
                "{} left out: the AMD GPUs' mode {mode:?} is not one it knows",
                key.name()
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::first_gpus_card(1, Some(1))]
    #[case::its_last_partition(8, Some(1))]
    #[case::second_gpus_first_partition(10, Some(9))]
    #[case::eighth_gpus_last_partition(64, Some(57))]
    // Go and Rust both truncate towards zero: card0 is read as card1's.
    #[case::card_zero(0, Some(1))]
    fn partitions_belong_to_the_gpu_eight_minors_below(
        #[case] minor: u32,
        #[case] parent: Option<u32>,
    ) {
        assert_eq!(parent_card(minor), parent);
    }
}
