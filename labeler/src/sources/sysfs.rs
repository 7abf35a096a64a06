//! Reads GPUs and NUMA nodes from a sysfs tree (the host's `/sys`, or a fake
//! tree in tests): `bus/pci/devices/*/{vendor,class,numa_node,physfn}` and
//! `devices/system/node/node*/{cpulist,meminfo}`.

use super::{read_text, SourceError};
use crate::model::{is_gpu_class, NumaNode, PciGpu, SysfsView, Vendor};
use crate::parse::sysfs::{
    parse_cpulist, parse_hex_attribute, parse_meminfo_total_kib, parse_numa_node,
};
use crate::parse::{parse_decimal, ParseError};
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

/// Reads the sysfs tree mounted at `root`. Any unreadable or malformed file is
/// an error: a half-read tree could miscount GPUs.
pub fn read_sysfs(root: &Path) -> Result<SysfsView, SourceError> {
    Ok(SysfsView {
        gpus: read_gpus(&root.join("bus/pci/devices"))?,
        numa_nodes: read_numa_nodes(&root.join("devices/system/node"))?,
    })
}

fn at(path: &Path) -> impl Fn(ParseError) -> SourceError + '_ {
    move |e| SourceError::new(path.display().to_string(), e.message)
}

/// Directory entries of `dir`, sorted by name.
fn entries(dir: &Path) -> Result<Vec<String>, SourceError> {
    let origin = || dir.display().to_string();
    let mut names = std::fs::read_dir(dir)
        .map_err(|e| SourceError::new(origin(), e))?
        .map(|entry| {
            let entry = entry.map_err(|e| SourceError::new(origin(), e))?;
            entry
                .file_name()
                .into_string()
                .map_err(|name| SourceError::new(origin(), format!("non-UTF-8 entry {name:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    names.sort();
    Ok(names)
}

fn read_gpus(devices: &Path) -> Result<Vec<PciGpu>, SourceError> {
    let mut gpus = Vec::new();
    for address in entries(devices)? {
        let device = devices.join(&address);
        let vendor_path = device.join("vendor");
        let Some(vendor) = Vendor::from_pci_id(
            parse_hex_attribute(&read_text(&vendor_path)?).map_err(at(&vendor_path))?,
        ) else {
            continue;
        };
        let class_path = device.join("class");
        let class = parse_hex_attribute(&read_text(&class_path)?).map_err(at(&class_path))?;
        if !is_gpu_class(vendor, class) {
            continue;
        }
        // An SR-IOV virtual function is a slice of a GPU already counted
        // through its physical function.
        if device.join("physfn").symlink_metadata().is_ok() {
            continue;
        }
        let numa_path = device.join("numa_node");
        // Kernels built without NUMA support have no numa_node file.
        let numa = match std::fs::read_to_string(&numa_path) {
            Ok(text) => parse_numa_node(&text).map_err(at(&numa_path))?,
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(SourceError::new(numa_path.display().to_string(), e)),
        };
        gpus.push(PciGpu {
            address,
            vendor,
            class,
            numa,
        });
    }
    Ok(gpus)
}

fn read_numa_nodes(dir: &Path) -> Result<BTreeMap<u32, NumaNode>, SourceError> {
    if !dir.exists() {
        // No NUMA support in the kernel: no node is known.
        return Ok(BTreeMap::new());
    }
    let mut nodes = BTreeMap::new();
    for name in entries(dir)? {
        let Some(id) = name.strip_prefix("node").and_then(parse_decimal) else {
            continue;
        };
        let node = dir.join(&name);
        let cpulist = node.join("cpulist");
        let meminfo = node.join("meminfo");
        nodes.insert(
            id,
            NumaNode {
                cpus: parse_cpulist(&read_text(&cpulist)?).map_err(at(&cpulist))?,
                memory_kib: parse_meminfo_total_kib(&read_text(&meminfo)?, id)
                    .map_err(at(&meminfo))?,
            },
        );
    }
    Ok(nodes)
}
