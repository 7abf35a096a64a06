//! Reads GPUs, NUMA nodes and CPUs from a sysfs tree (the host's `/sys`, or a
//! fake tree in tests): `bus/pci/devices/*/{vendor,class,numa_node,physfn}`,
//! `devices/system/node/{online,node*/{cpulist,meminfo,distance,hugepages/*/nr_hugepages}}`
//! and `devices/system/cpu/{online,cpu*/topology/{core_id,physical_package_id,thread_siblings_list}}`.
//!
//! Parts a tree may lack (a kernel without NUMA, a fake tree): the node
//! directory (no NUMA node is known), a node's `hugepages/` (no hugepages, as
//! cAdvisor's `GetHugePagesInfo` reads it), a node's `distance` (the
//! distances stay unknown), the `online` lists and the CPUs'
//! `topology/` directories (the facts read from them stay unknown). A part
//! that is there must be whole and well-formed.

use super::{at, entries, read_optional, read_text, SourceError};
use crate::model::{
    is_gpu_class, ClassDevice, CpuPlace, CpuView, IdSet, NumaNode, PciFunction, PciGpu, SysfsView,
    Vendor,
};
use crate::parse::sysfs::{
    parse_decimal_attribute, parse_distances, parse_hex_attribute, parse_hugepages_dir_name,
    parse_id_list, parse_meminfo_total_kib, parse_numa_node,
};
use crate::parse::{parse_decimal, ParseError};
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

/// Reads the sysfs tree mounted at `root`. Any unreadable or malformed file is
/// an error: a half-read tree could miscount GPUs.
pub fn read_sysfs(root: &Path) -> Result<SysfsView, SourceError> {
    let node_dir = root.join("devices/system/node");
    let gpus = read_gpus(&root.join("bus/pci/devices"))?;
    Ok(SysfsView {
        amd_partitions: super::amd_partitions::read_amd_partitions(root, &gpus)?,
        gpus,
        pci_functions: read_pci_functions(&root.join("bus/pci/devices"))?,
        rdma_devices: read_class(&root.join("class/infiniband"))?,
        net_devices: read_class(&root.join("class/net"))?,
        numa_nodes: read_numa_nodes(&node_dir)?,
        online_numa_nodes: read_optional(&node_dir.join(ONLINE))?
            .map(|text| parse_id_list(&text).map_err(at(&node_dir.join(ONLINE))))
            .transpose()?,
        cpus: read_cpus(&root.join("devices/system/cpu"))?,
    })
}

/// The list of online CPUs or nodes in their directory.
const ONLINE: &str = "online";

/// A file's text parsed by `parse`, naming the file in the error.
fn read_parsed<T>(
    path: &Path,
    parse: impl Fn(&str) -> Result<T, ParseError>,
) -> Result<T, SourceError> {
    parse(&read_text(path)?).map_err(at(path))
}

fn read_gpus(devices: &Path) -> Result<Vec<PciGpu>, SourceError> {
    let mut gpus = Vec::new();
    for address in entries(devices)? {
        let device = devices.join(&address);
        match read_device(&device, address) {
            Ok(Some(gpu)) => gpus.push(gpu),
            Ok(None) => {}
            // A device that leaves while it is read (a GPU falling off the
            // bus, hot-unplug; its link in bus/pci/devices goes, or dangles
            // for a moment) is not there: counting it with what was read
            // of it before would publish a GPU whose NUMA node is unknown.
            Err(_) if !device.exists() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(gpus)
}

/// The GPU at `device`, or `None` when the PCI function is not one.
fn read_device(device: &Path, address: String) -> Result<Option<PciGpu>, SourceError> {
    let vendor_path = device.join("vendor");
    let Some(vendor) = Vendor::from_pci_id(
        parse_hex_attribute(&read_text(&vendor_path)?).map_err(at(&vendor_path))?,
    ) else {
        return Ok(None);
    };
    let class_path = device.join("class");
    let class = parse_hex_attribute(&read_text(&class_path)?).map_err(at(&class_path))?;
    if !is_gpu_class(vendor, class) {
        return Ok(None);
    }
    // An SR-IOV virtual function is a slice of a GPU already counted
    // through its physical function.
    if device.join("physfn").symlink_metadata().is_ok() {
        return Ok(None);
    }
    let numa_path = device.join("numa_node");
    let numa = match std::fs::read_to_string(&numa_path) {
        Ok(text) => parse_numa_node(&text).map_err(at(&numa_path))?,
        // Kernels built without NUMA support have no numa_node file; a
        // device that has just left has none either (see read_gpus).
        Err(e) if e.kind() == ErrorKind::NotFound && device.exists() => None,
        Err(e) => return Err(SourceError::new(numa_path.display().to_string(), e)),
    };
    if !device.exists() {
        return Err(SourceError::new(
            device.display().to_string(),
            "left while it was read",
        ));
    }
    Ok(Some(PciGpu {
        address,
        vendor,
        class,
        numa,
    }))
}

/// Every PCI function with its ids, NUMA node and SR-IOV links. A
/// function that leaves while it is read is not there (see [`read_gpus`]).
fn read_pci_functions(devices: &Path) -> Result<Vec<PciFunction>, SourceError> {
    let mut functions = Vec::new();
    for address in entries(devices)? {
        let device = devices.join(&address);
        match read_function(&device, address) {
            Ok(function) => functions.push(function),
            Err(_) if !device.exists() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(functions)
}

fn read_function(device: &Path, address: String) -> Result<PciFunction, SourceError> {
    let hex = |name: &str| -> Result<Option<u32>, SourceError> {
        let path = device.join(name);
        read_optional(&path)?
            .map(|text| parse_hex_attribute(&text).map_err(at(&path)))
            .transpose()
    };
    let numa_path = device.join("numa_node");
    let numa = read_optional(&numa_path)?
        .map(|text| parse_numa_node(&text).map_err(at(&numa_path)))
        .transpose()?
        .flatten();
    let mut virtual_functions = Vec::new();
    for name in entries(device)? {
        if name
            .strip_prefix("virtfn")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            virtual_functions.push(link_name(&device.join(&name))?);
        }
    }
    Ok(PciFunction {
        address,
        vendor: hex("vendor")?.unwrap_or(0),
        device: hex("device")?,
        class: hex("class")?.unwrap_or(0),
        numa,
        is_virtual_function: device.join("physfn").symlink_metadata().is_ok(),
        virtual_functions,
    })
}

/// The last component of where the link at `path` points (a PCI address).
fn link_name(path: &Path) -> Result<String, SourceError> {
    let target =
        std::fs::read_link(path).map_err(|e| SourceError::new(path.display().to_string(), e))?;
    target
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .ok_or_else(|| {
            SourceError::new(
                path.display().to_string(),
                format!("the link points to {}, no PCI address", target.display()),
            )
        })
}

/// The devices of a `class/` directory and the PCI function each sits on
/// (its `device` link); none when the directory is absent.
fn read_class(dir: &Path) -> Result<Vec<ClassDevice>, SourceError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    entries(dir)?
        .into_iter()
        .map(|name| {
            let link = dir.join(&name).join("device");
            let pci_address = if link.symlink_metadata().is_ok() {
                Some(link_name(&link)?)
            } else {
                None
            };
            Ok(ClassDevice { name, pci_address })
        })
        .collect()
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
        nodes.insert(
            id,
            NumaNode {
                cpus: read_parsed(&node.join("cpulist"), parse_id_list)?,
                memory_kib: read_parsed(&node.join("meminfo"), |text| {
                    parse_meminfo_total_kib(text, id)
                })?,
                hugepages: read_hugepages(&node.join("hugepages"))?,
                distances: read_optional(&node.join("distance"))?
                    .map(|text| parse_distances(&text).map_err(at(&node.join("distance"))))
                    .transpose()?,
            },
        );
    }
    Ok(nodes)
}

/// `nr_hugepages` of each `hugepages-<size>kB` directory, by size in KiB; none
/// when the node has no `hugepages/` directory.
fn read_hugepages(dir: &Path) -> Result<BTreeMap<u64, u64>, SourceError> {
    if !dir.exists() {
        return Ok(BTreeMap::new());
    }
    entries(dir)?
        .into_iter()
        .map(|name| {
            let size = parse_hugepages_dir_name(&name).map_err(at(&dir.join(&name)))?;
            let pages = read_parsed(&dir.join(&name).join("nr_hugepages"), |text| {
                parse_decimal_attribute(text, "nr_hugepages")
            })?;
            Ok((size, pages))
        })
        .collect()
}

/// The online CPUs and, when the tree has them, their topology attributes:
/// for every online CPU or for none.
fn read_cpus(dir: &Path) -> Result<Option<CpuView>, SourceError> {
    let online_path = dir.join(ONLINE);
    let Some(online) = read_optional(&online_path)? else {
        return Ok(None);
    };
    let online = parse_id_list(&online).map_err(at(&online_path))?;
    let topology = |cpu: u32| dir.join(format!("cpu{cpu}/topology"));
    let with_topology = online.iter().filter(|&&cpu| topology(cpu).is_dir()).count();
    let places = match with_topology {
        0 => None,
        n if n == online.len() => Some(
            online
                .iter()
                .map(|&cpu| Ok((cpu, read_place(&topology(cpu))?)))
                .collect::<Result<_, SourceError>>()?,
        ),
        _ => {
            return Err(SourceError::new(
                dir.display().to_string(),
                format!(
                    "{with_topology} of the {} online CPUs have a topology/ directory: a half-read tree",
                    online.len()
                ),
            ))
        }
    };
    Ok(Some(CpuView { online, places }))
}

fn read_place(topology: &Path) -> Result<CpuPlace, SourceError> {
    let attribute = |name: &'static str| {
        read_parsed(&topology.join(name), |text| {
            parse_decimal_attribute(text, name)
        })
    };
    let siblings: IdSet = read_parsed(&topology.join("thread_siblings_list"), parse_id_list)?;
    Ok(CpuPlace {
        core_id: attribute("core_id")?,
        package: attribute("physical_package_id")?,
        siblings: siblings.len(),
    })
}
