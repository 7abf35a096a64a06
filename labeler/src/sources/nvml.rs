//! NVML (through `nvml-wrapper`, which loads libnvidia-ml at run time) as the
//! preferred source for NVLink state, NUMA placement and PCIe paths.

use super::SourceError;
use crate::model::{FabricLink, Links, NumaReading, PairLink, PciePath, Tool, ToolGpu, ToolReport};
use nvml_wrapper::enum_wrappers::device::TopologyLevel;
use nvml_wrapper::enum_wrappers::nv_link::IntDeviceType;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

/// NVML_NVLINK_MAX_LINKS in current NVML headers (Hopper has 18 links per GPU).
const NVLINK_MAX_LINKS: u32 = 18;

fn error(e: NvmlError) -> SourceError {
    SourceError::new("NVML", e)
}

/// NVML prints bus ids as `00000000:07:00.0`; sysfs names devices `0000:07:00.0`.
fn normalize_bus_id(bus_id: &str) -> String {
    let lower = bus_id.to_ascii_lowercase();
    let short = lower.split_once(':').and_then(|(domain, rest)| {
        let last_four = domain.get(domain.len().checked_sub(4)?..)?;
        Some(format!("{last_four}:{rest}"))
    });
    short.unwrap_or(lower)
}

/// Reads the topology through NVML; `None` when the library or driver is absent.
pub fn read_nvml() -> Result<Option<ToolReport>, SourceError> {
    let nvml = match Nvml::init() {
        Ok(nvml) => nvml,
        Err(
            NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound | NvmlError::DriverNotLoaded,
        ) => return Ok(None),
        Err(e) => return Err(error(e)),
    };
    let count = nvml.device_count().map_err(error)?;
    let devices = (0..count)
        .map(|i| nvml.device_by_index(i))
        .collect::<Result<Vec<_>, _>>()
        .map_err(error)?;
    let addresses = devices
        .iter()
        .map(|d| d.pci_info().map(|info| normalize_bus_id(&info.bus_id)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(error)?;
    let gpus = devices
        .iter()
        .zip(&addresses)
        .enumerate()
        .map(|(index, (device, address))| {
            let numa = match device.numa_node_id() {
                Ok(node) if i32::try_from(node).is_ok() => NumaReading::Node(node),
                Ok(_) | Err(NvmlError::NotSupported) => NumaReading::NotAvailable,
                Err(e) => return Err(error(e)),
            };
            Ok(ToolGpu {
                name: format!("GPU{index}"),
                pci_address: Some(address.clone()),
                numa,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (direct, switch_links) = nvlinks(&devices, &addresses)?;
    let mut links = Links::new(devices.len(), true);
    for a in 0..devices.len() {
        for b in a + 1..devices.len() {
            // GPUs on an NVSwitch fabric reach each other through it.
            let switched = switch_links[a].min(switch_links[b]);
            let bonded = direct[a][b].max(direct[b][a]) + switched;
            let other = nvml.device_by_index(b as u32).map_err(error)?;
            let level = devices[a].topology_common_ancestor(other).map_err(error)?;
            links.set(
                a,
                b,
                PairLink {
                    fabric: (bonded > 0).then_some(FabricLink::NvLink { links: bonded }),
                    pcie: Some(pcie_path(level)),
                },
            );
        }
    }
    Ok(Some(ToolReport {
        tool: Tool::Nvml,
        gpus,
        links,
        nvswitch: switch_links.iter().any(|&n| n > 0),
        from_earlier_run: false,
    }))
}

/// Active NVLinks per GPU pair, and per GPU the links that end at an NVSwitch.
#[allow(clippy::type_complexity)]
fn nvlinks(
    devices: &[Device],
    addresses: &[String],
) -> Result<(Vec<Vec<u32>>, Vec<u32>), SourceError> {
    let mut direct = vec![vec![0u32; devices.len()]; devices.len()];
    let mut switch_links = vec![0u32; devices.len()];
    for (a, device) in devices.iter().enumerate() {
        for link in 0..NVLINK_MAX_LINKS {
            let wrapper = device.link_wrapper_for(link);
            match wrapper.is_active() {
                Ok(true) => {}
                // GPUs without NVLink, or with fewer links, answer NotSupported/InvalidArg.
                Ok(false) | Err(NvmlError::NotSupported | NvmlError::InvalidArg) => continue,
                Err(e) => return Err(error(e)),
            }
            let remote = normalize_bus_id(&wrapper.remote_pci_info().map_err(error)?.bus_id);
            match addresses.iter().position(|address| *address == remote) {
                Some(b) => direct[a][b] += 1,
                None => {
                    // Not a GPU: an NVSwitch joins the fabric; a CPU (NVLink-C2C) does not.
                    if matches!(wrapper.remote_device_type(link), Ok(IntDeviceType::Switch)) {
                        switch_links[a] += 1;
                    }
                }
            }
        }
    }
    Ok((direct, switch_links))
}

fn pcie_path(level: TopologyLevel) -> PciePath {
    match level {
        TopologyLevel::Internal | TopologyLevel::Single => PciePath::Pix,
        TopologyLevel::Multiple => PciePath::Pxb,
        TopologyLevel::HostBridge => PciePath::Phb,
        TopologyLevel::Node => PciePath::Node,
        TopologyLevel::System => PciePath::Sys,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_are_normalized_to_sysfs_names() {
        assert_eq!(normalize_bus_id("00000000:07:00.0"), "0000:07:00.0");
        assert_eq!(normalize_bus_id("0000:B7:00.0"), "0000:b7:00.0");
    }
}
