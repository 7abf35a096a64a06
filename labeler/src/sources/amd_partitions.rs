//! Reads the AMD GPUs' compute partitions from sysfs, from the files the AMD
//! device plugin reads (ROCm/k8s-device-plugin internal/pkg/amdgpu/amdgpu.go
//! `GetAMDGPUs`, `renderNodeSetFromTopology`):
//!
//! - each AMD GPU's `current_compute_partition`, `current_memory_partition`
//!   and `drm/card*/dev` (the plugin globs them under
//!   `module/amdgpu/drivers/pci:amdgpu/<address>`, links to the same
//!   `bus/pci/devices/<address>` directories this reader lists);
//! - `devices/platform/amdgpu_xcp_*/drm/{card*/dev,renderD*}`: the partitions
//!   beyond each GPU's first;
//! - `class/kfd/kfd/topology/nodes/*/properties`: the render nodes KFD
//!   knows, which decide which `amdgpu_xcp_*` are live partitions.
//!
//! Every part is optional (a GPU without partitions has none of them); a
//! file that is there must be well-formed, as the rest of the sysfs reader
//! wants. What they count is [`crate::reconcile`]'s.

use super::{at, entries, read_optional, read_text, SourceError};
use crate::model::{AmdGpuPartitions, AmdPartitionView, AmdXcp, IdSet, PciGpu, Vendor};
use crate::parse::amd_partitions::{parse_drm_dev, parse_kfd_render_minor, render_node_minor};
use std::path::Path;

const XCP_PREFIX: &str = "amdgpu_xcp_";

/// The partition facts of the AMD GPUs among `gpus`, and the partitions
/// and KFD render nodes of the tree at `root`.
pub fn read_amd_partitions(root: &Path, gpus: &[PciGpu]) -> Result<AmdPartitionView, SourceError> {
    let devices = root.join("bus/pci/devices");
    let mut view = AmdPartitionView::default();
    for gpu in gpus.iter().filter(|g| g.vendor == Vendor::Amd) {
        let device = devices.join(&gpu.address);
        let mode = |name: &str| -> Result<Option<String>, SourceError> {
            Ok(read_optional(&device.join(name))?.map(|text| text.trim().to_owned()))
        };
        let (card_minor, _) = read_drm(&device.join("drm"))?;
        view.gpus.insert(
            gpu.address.clone(),
            AmdGpuPartitions {
                compute: mode("current_compute_partition")?,
                memory: mode("current_memory_partition")?,
                card_minor,
            },
        );
    }
    if view.gpus.is_empty() {
        return Ok(view);
    }
    let platform = root.join("devices/platform");
    if platform.is_dir() {
        for name in entries(&platform)? {
            if name.starts_with(XCP_PREFIX) {
                let (card_minor, render_minor) = read_drm(&platform.join(&name).join("drm"))?;
                view.xcps.push(AmdXcp {
                    name,
                    card_minor,
                    render_minor,
                });
            }
        }
    }
    // Partition order, for the summary: by card minor (names sort
    // `amdgpu_xcp_10` before `amdgpu_xcp_7`).
    view.xcps
        .sort_by_key(|xcp| (xcp.card_minor, xcp.name.len()));
    let nodes = root.join("class/kfd/kfd/topology/nodes");
    if nodes.is_dir() {
        let mut minors = IdSet::new();
        for node in entries(&nodes)? {
            let properties = nodes.join(node).join("properties");
            if let Some(text) = read_optional(&properties)? {
                minors.extend(parse_kfd_render_minor(&text).map_err(at(&properties))?);
            }
        }
        view.kfd_render_minors = Some(minors);
    }
    Ok(view)
}

/// The card minor (from `card*/dev`) and render minor (from the
/// `renderD<minor>` name) of a `drm/` directory; `None` for what it lacks.
fn read_drm(drm: &Path) -> Result<(Option<u32>, Option<u32>), SourceError> {
    if !drm.is_dir() {
        return Ok((None, None));
    }
    let mut card = None;
    let mut render = None;
    for name in entries(drm)? {
        if name.starts_with("card") && card.is_none() {
            let dev = drm.join(&name).join("dev");
            card = Some(parse_drm_dev(&read_text(&dev)?).map_err(at(&dev))?);
        } else if let Some(minor) = render_node_minor(&name) {
            render = render.or(Some(minor));
        }
    }
    Ok((card, render))
}
