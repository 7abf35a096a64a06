//! The device-plugin resources besides the GPUs: the configured network
//! devices ([`crate::devices`]) and MIG slices, as per-NUMA counts
//! (`numa-devices.<domain>_<name>`), and under MIG's `single` strategy the
//! GPU counts themselves.
//!
//! A MIG device sits on its parent GPU's NUMA node: the NVIDIA device
//! plugin reports the parent's topology for each MIG device it offers. The
//! parent of `nvidia-smi -L`'s `GPU <i>` is NVML's GPU `i`; NVML numbers
//! the GPUs in PCI bus order, the order of the NVIDIA GPUs read from sysfs.
//! With the device plugin's strategies:
//!
//! - `mixed`: each profile is the resource `nvidia.com/mig-<profile>`, and
//!   a GPU cut into MIG devices is no `nvidia.com/gpu` any more;
//! - `single`: every slice is one `nvidia.com/gpu` (all GPUs cut alike), so
//!   the GPU labels count slices; slices share no NVLink.

use super::Outcome;
use crate::devices::{count_devices, DeviceConfig};
use crate::model::{PciGpu, SysfsView, Vendor};
use crate::parse::nvidia_smi_list::ListedGpu;
use std::collections::BTreeMap;

/// The NVIDIA device plugin's `MIG_STRATEGY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigStrategy {
    /// MIG devices are not offered (the device plugin's default).
    #[default]
    None,
    Single,
    Mixed,
}

/// What the labeler knows of the MIG devices: the strategy and, when read,
/// `nvidia-smi -L`.
#[derive(Debug, Clone, Default)]
pub struct MigInput {
    pub strategy: MigStrategy,
    pub listed: Option<Vec<ListedGpu>>,
}

/// The resource of MIG profile `profile` under the mixed strategy.
pub fn mig_resource(profile: &str) -> String {
    format!("nvidia.com/mig-{profile}")
}

/// Sets the configured device resources' counts from sysfs.
pub(super) fn network_devices(config: &DeviceConfig, view: &SysfsView, outcome: &mut Outcome) {
    for (resource, counts) in count_devices(config, view) {
        match counts {
            Ok(counts) => {
                outcome.topology.devices.insert(resource, counts);
            }
            Err(why) => outcome.warnings.push(format!(
                "the per-NUMA counts of {resource} are left out: {why}"
            )),
        }
    }
}

/// The MIG labels.
pub(super) fn mig_devices(mig: &MigInput, view: Option<&SysfsView>, outcome: &mut Outcome) {
    if mig.strategy == MigStrategy::None {
        return;
    }
    let Some(listed) = &mig.listed else {
        outcome
            .warnings
            .push("nvidia-smi -L is not read: the MIG devices' labels are left out".to_owned());
        return;
    };
    let parents = match (view, outcome.summary.vendor) {
        (Some(view), Some(Vendor::Nvidia)) => parent_numa(view, &outcome.summary.sysfs_gpus),
        _ => Err("the NVIDIA GPUs' NUMA nodes are not known from sysfs".to_owned()),
    };
    let result = parents.and_then(|(nodes, parents)| {
        if listed.len() != parents.len() {
            return Err(format!(
                "nvidia-smi -L lists {} GPUs but sysfs has {}",
                listed.len(),
                parents.len()
            ));
        }
        Ok((nodes, parents))
    });
    let (nodes, parents) = match result {
        Ok(found) => found,
        Err(why) => {
            outcome
                .warnings
                .push(format!("the MIG devices' labels are left out: {why}"));
            return;
        }
    };
    let index_of = |gpu: &ListedGpu| {
        parents
            .get(gpu.index as usize)
            .and_then(|numa| nodes.iter().position(|n| n == numa))
    };
    let mut slices: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut whole = vec![0u32; nodes.len()];
    for gpu in listed {
        let Some(at) = index_of(gpu) else {
            outcome.warnings.push(format!(
                "the MIG devices' labels are left out: GPU {} of nvidia-smi -L is not in sysfs",
                gpu.index
            ));
            return;
        };
        if gpu.mig_devices.is_empty() {
            whole[at] += 1;
        }
        for (profile, count) in &gpu.mig_devices {
            let counts = slices
                .entry(profile.clone())
                .or_insert_with(|| vec![0; nodes.len()]);
            counts[at] = counts[at].saturating_add(*count);
        }
    }
    match mig.strategy {
        MigStrategy::Mixed => {
            for (profile, counts) in slices {
                outcome
                    .topology
                    .devices
                    .insert(mig_resource(&profile), counts);
            }
            set_gpus(outcome, whole);
        }
        MigStrategy::Single => {
            let mut profiles = slices.into_iter();
            match (profiles.next(), profiles.next()) {
                (Some((_, counts)), None) if whole.iter().all(|&w| w == 0) => {
                    set_gpus(outcome, counts);
                    outcome.topology.nvlink_group_max = Some(1);
                    outcome.topology.pcie_switch_group_max = Some(1);
                }
                _ => outcome.warnings.push(
                    "MIG strategy single needs every GPU cut into slices of one profile: the GPU labels are left out".to_owned(),
                ),
            }
        }
        MigStrategy::None => {}
    }
}

/// `nvidia.com/gpu` per NUMA node: what the device plugin offers as GPUs.
fn set_gpus(outcome: &mut Outcome, per_numa: Vec<u32>) {
    let t = &mut outcome.topology;
    t.gpus = Some(per_numa.iter().sum());
    t.gpus_per_numa_max = per_numa.iter().max().copied();
    t.numa_gpus = Some(per_numa);
}

/// The NUMA node ids of sysfs, and each NVIDIA GPU's (NVML's index order:
/// PCI addresses ascending); a GPU without one on a one-node machine is on it.
fn parent_numa(view: &SysfsView, gpus: &[PciGpu]) -> Result<(Vec<u32>, Vec<u32>), String> {
    let nodes: Vec<u32> = view.numa_nodes.keys().copied().collect();
    let mut sorted: Vec<&PciGpu> = gpus.iter().collect();
    sorted.sort_by(|a, b| a.address.cmp(&b.address));
    let parents = sorted
        .iter()
        .map(|gpu| match (gpu.numa, nodes.as_slice()) {
            (Some(numa), _) => Ok(numa),
            (None, [only]) => Ok(*only),
            (None, _) => Err(format!("GPU {} has no NUMA node", gpu.address)),
        })
        .collect::<Result<Vec<u32>, String>>()?;
    Ok((nodes, parents))
}
