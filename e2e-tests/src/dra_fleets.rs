//! DRA fleets for the session files: the DeviceClasses and ResourceSlices
//! the policy lists for a claim, in the shape the drivers publish them.
//!
//! The DeviceClasses are the drivers' own, read from
//! `tests/fixtures/dra/deviceclasses/` (provenance in its `SOURCES.md`).
//! A node's devices are the published examples made many: a GPU is the
//! "Full GPU (type: gpu)" device of the NVIDIA DRA driver's reference page
//! (`resourceslices/nvidia-gpu-doc.yaml`) with the node's product, bus IDs
//! and NUMA node; a NIC is a device of dranet's quick start
//! (`resourceslices/dranet-gke-quickstart.yaml`) in the v1 shape (its
//! attributes directly on the device). A VFIO GPU is the reference page's
//! "VFIO passthrough (type: vfio)" device with its Fabric Manager partitions
//! (`resourceslices/nvidia-vfio-fabric-manager.yaml`), and a CPU group is a
//! device of dra-driver-cpu's grouped mode (`resourceslices/dra-cpu-grouped.yaml`).
//! Each node publishes one pool per driver, named after the node, one slice
//! each, as the drivers do.
//!
//! The host applies the policy's field masks before answering, so the
//! answers hold only the masked fields, as a replay must.

use crate::session::HostRequest;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Nodes that publish the same DRA devices.
#[derive(Debug, Clone)]
pub struct DraNodes {
    /// Node names are `<prefix>-<i>`.
    pub prefix: &'static str,
    pub count: usize,
    pub product: &'static str,
    /// GPUs per NUMA node, node 0 first.
    pub gpus_per_numa: &'static [usize],
    /// How the GPUs are published.
    pub gpus_as: GpuDevices,
    /// dranet NICs per NUMA node.
    pub nics_per_numa: &'static [usize],
    /// dra-driver-cpu's CPUs per NUMA node, in its grouped mode (one shared
    /// device per NUMA node); empty where the driver does not run.
    pub cpus_per_numa: &'static [usize],
}

/// How the NVIDIA DRA driver publishes a node's GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuDevices {
    /// Full GPUs (`type: gpu`, class `gpu.nvidia.com`).
    Full,
    /// VFIO passthrough devices with the Fabric Manager's partitions
    /// (`type: vfio`, class `vfio.gpu.nvidia.com`).
    Vfio,
}

/// The pod that owns a generated claim, as `get_resource` answers it under
/// the policy's field masks.
#[derive(Debug, Clone)]
pub struct DraPod {
    pub namespace: &'static str,
    pub name: &'static str,
    pub uid: &'static str,
    /// The masked `spec`, JSON.
    pub spec: &'static str,
}

impl DraPod {
    /// The policy's request, in kwctl's terms.
    pub fn request(&self) -> HostRequest {
        HostRequest::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: self.name.into(),
            namespace: Some(self.namespace.into()),
            disable_cache: true,
            field_masks: Some(
                [
                    "metadata.uid",
                    "spec.containers.name",
                    "spec.containers.resources",
                    "spec.initContainers.name",
                    "spec.initContainers.resources",
                    "spec.initContainers.restartPolicy",
                    "spec.resources",
                ]
                .map(str::to_owned)
                .into(),
            ),
        }
    }

    /// The masked pod.
    pub fn answer(&self) -> Result<Value> {
        let spec: Value = serde_json::from_str(self.spec)
            .with_context(|| format!("Pod {}: spec is not JSON", self.name))?;
        Ok(json!({"metadata": {"uid": self.uid}, "spec": spec}))
    }
}

/// A claim or claim template a pod names, as `get_resource` answers it
/// under the policy's field mask (`spec.spec.devices` or `spec.devices`).
#[derive(Debug, Clone)]
pub struct DraGet {
    /// `ResourceClaimTemplate` or `ResourceClaim`.
    pub kind: &'static str,
    pub namespace: &'static str,
    pub name: &'static str,
    /// The `devices` object, JSON.
    pub devices: &'static str,
}

impl DraGet {
    fn mask(&self) -> &'static str {
        match self.kind {
            "ResourceClaimTemplate" => "spec.spec.devices",
            _ => "spec.devices",
        }
    }

    /// The policy's request, in kwctl's terms.
    pub fn request(&self) -> HostRequest {
        HostRequest::KubernetesGetResource {
            api_version: "resource.k8s.io/v1".into(),
            kind: self.kind.into(),
            name: self.name.into(),
            namespace: Some(self.namespace.into()),
            disable_cache: false,
            field_masks: Some(BTreeSet::from([self.mask().to_owned()])),
        }
    }

    /// The masked object.
    pub fn answer(&self) -> Result<Value> {
        let devices: Value = serde_json::from_str(self.devices)
            .with_context(|| format!("{} {}: devices are not JSON", self.kind, self.name))?;
        Ok(match self.kind {
            "ResourceClaimTemplate" => json!({"spec": {"spec": {"devices": devices}}}),
            _ => json!({"spec": {"devices": devices}}),
        })
    }
}

/// What a DRA session's answers hold: the claims a pod names (asked
/// first, in order), then the devices (the summary, or the two lists), then
/// the pods that own a generated claim.
#[derive(Debug, Clone)]
pub struct DraFleet {
    pub gets: Vec<DraGet>,
    pub pods: Vec<DraPod>,
    /// Files of `tests/fixtures/dra/deviceclasses/`.
    pub class_files: &'static [&'static str],
    pub nodes: Vec<DraNodes>,
}

const GPU_DRIVER: &str = "gpu.nvidia.com";
const NIC_DRIVER: &str = "dra.net";
const CPU_DRIVER: &str = "dra.cpu";

fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dra")
}

/// The DeviceClass list, masked to `metadata.name`, `spec.selectors` and
/// `spec.extendedResourceName`.
pub fn device_class_list(fleet: &DraFleet) -> Result<Value> {
    let mut items = Vec::new();
    for file in fleet.class_files {
        let path = fixtures_dir().join("deviceclasses").join(file);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let class = <Value as serde::Deserialize>::deserialize(document)
                .with_context(|| format!("{} is not YAML", path.display()))?;
            if class.is_null() {
                continue;
            }
            let mut spec = json!({"selectors": class["spec"]["selectors"]});
            if let Some(name) = class["spec"].get("extendedResourceName") {
                spec["extendedResourceName"] = name.clone();
            }
            items.push(json!({
                "metadata": {"name": class["metadata"]["name"]},
                "spec": spec,
            }));
        }
    }
    Ok(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClassList",
        "metadata": {"resourceVersion": "48213377"},
        "items": items,
    }))
}

/// The policy's DeviceClass list request, in kwctl's terms.
pub fn device_class_request() -> HostRequest {
    list_all(
        "DeviceClass",
        &[
            "metadata.name",
            "spec.selectors",
            "spec.extendedResourceName",
        ],
    )
}

/// The policy's ResourceSlice list request, in kwctl's terms.
pub fn resource_slice_request() -> HostRequest {
    list_all(
        "ResourceSlice",
        &[
            "spec.driver",
            "spec.nodeName",
            "spec.pool",
            "spec.devices.attributes",
            "spec.devices.allowMultipleAllocations",
            "spec.devices.capacity",
        ],
    )
}

fn list_all(kind: &str, masks: &[&str]) -> HostRequest {
    HostRequest::KubernetesListResourceAll {
        api_version: "resource.k8s.io/v1".into(),
        kind: kind.into(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(
            masks
                .iter()
                .map(|m| (*m).to_owned())
                .collect::<BTreeSet<_>>(),
        ),
    }
}

/// The fleet summary's DRA entries for this fleet, as the summarizer writes
/// them (the shared grouping, over the same slices and classes), set in
/// `config_map`: `draDevices` and `draExtendedResources`.
pub fn add_to_summary(config_map: &mut Value, fleet: &DraFleet, classes: &Value) -> Result<()> {
    let classes = gpu_topology::dra::parse_classes(classes.to_string().as_bytes())
        .map_err(anyhow::Error::msg)?;
    let mut builder = gpu_topology::dra::DraBuilder::new(&classes);
    builder
        .add_list(resource_slice_list(fleet).to_string().as_bytes())
        .map_err(anyhow::Error::msg)?;
    let devices = builder.finish();
    config_map["data"][gpu_topology::dra::DRA_DEVICES_KEY] = devices.to_summary_text().into();
    config_map["data"][gpu_topology::dra::DRA_EXTENDED_RESOURCES_KEY] =
        devices.extended_resources().to_summary_text().into();
    Ok(())
}

/// The DRA fleet of the benchmarks, `size` nodes: 60% HGX H100 (8 GPUs, 4
/// per NUMA node, and 8 RDMA NICs), 30% of 4 L4 (2 per NUMA node, no DRA
/// NICs), 10% of one A10G, with the NVIDIA driver's and dranet's classes.
pub fn bench_fleet(size: usize) -> DraFleet {
    let share = |percent: usize| size * percent / 100;
    let (hgx, l4) = (share(60), share(30));
    DraFleet {
        gets: Vec::new(),
        pods: Vec::new(),
        class_files: &["nvidia.yaml", "nics.yaml"],
        nodes: vec![
            DraNodes {
                prefix: "hgx",
                count: hgx,
                product: "NVIDIA H100 80GB HBM3",
                gpus_per_numa: &[4, 4],
                gpus_as: GpuDevices::Full,
                nics_per_numa: &[4, 4],
                cpus_per_numa: &[],
            },
            DraNodes {
                prefix: "l4",
                count: l4,
                product: "NVIDIA L4",
                gpus_per_numa: &[2, 2],
                gpus_as: GpuDevices::Full,
                nics_per_numa: &[],
                cpus_per_numa: &[],
            },
            DraNodes {
                prefix: "a10g",
                count: size - hgx - l4,
                product: "NVIDIA A10G",
                gpus_per_numa: &[1],
                gpus_as: GpuDevices::Full,
                nics_per_numa: &[],
                cpus_per_numa: &[],
            },
        ],
    }
}

/// The ResourceSlice list, masked to what the policy reads.
pub fn resource_slice_list(fleet: &DraFleet) -> Value {
    let mut items = Vec::new();
    for nodes in &fleet.nodes {
        for index in 0..nodes.count {
            let node = format!("{}-{index}", nodes.prefix);
            let gpus = numa_devices(nodes.gpus_per_numa, |i, numa| gpu(nodes, index, i, numa));
            items.push(slice(GPU_DRIVER, &node, gpus));
            if !nodes.nics_per_numa.is_empty() {
                let nics = numa_devices(nodes.nics_per_numa, nic);
                items.push(slice(NIC_DRIVER, &node, nics));
            }
            if !nodes.cpus_per_numa.is_empty() {
                let cpus = nodes
                    .cpus_per_numa
                    .iter()
                    .enumerate()
                    .map(|(numa, count)| cpu_group(numa, *count))
                    .collect();
                items.push(slice(CPU_DRIVER, &node, cpus));
            }
        }
    }
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSliceList",
        "metadata": {"resourceVersion": "48213377"},
        "items": items,
    })
}

fn numa_devices(per_numa: &[usize], device: impl Fn(usize, usize) -> Value) -> Vec<Value> {
    let mut devices = Vec::new();
    for (numa, count) in per_numa.iter().enumerate() {
        for _ in 0..*count {
            devices.push(device(devices.len(), numa));
        }
    }
    devices
}

fn slice(driver: &str, node: &str, devices: Vec<Value>) -> Value {
    json!({"spec": {
        "driver": driver,
        "nodeName": node,
        "pool": {"generation": 1, "name": node, "resourceSliceCount": 1},
        "devices": devices,
    }})
}

/// An NVIDIA DRA driver GPU, as its reference page shows one: a full GPU,
/// or a VFIO device with the Fabric Manager partitions of an 8-GPU board
/// (numbered as the page's module 1: `partition8` 1, `partition4` 2-3,
/// `partition2` 4-7, `partition1` 8-15).
fn gpu(nodes: &DraNodes, node: usize, index: usize, numa: usize) -> Value {
    // Bus IDs as on an HGX board: two GPUs behind each PCIe switch, one
    // switch per root port.
    let bus = 0x18 + 0x10 * index;
    let root = 0x17 + 0x20 * (index / 2);
    if nodes.gpus_as == GpuDevices::Vfio {
        return json!({"attributes": {
            "deviceID": {"string": "0x2330"},
            "gpuModuleId": {"int": index + 1},
            "iommuFDEnabled": {"bool": true},
            "partition1": {"int": 8 + index},
            "partition2": {"int": 4 + index / 2},
            "partition4": {"int": 2 + index / 4},
            "partition8": {"int": 1},
            "productName": {"string": nodes.product},
            "resource.kubernetes.io/numaNode": {"int": numa},
            "resource.kubernetes.io/pciBusID": {"string": format!("0000:{bus:02x}:00.0")},
            "resource.kubernetes.io/pcieRoot": {"string": format!("pci0000:{root:02x}")},
            "type": {"string": "vfio"},
            "uuid": {"string": format!("GPU-{node:08x}-5a5f-aa66-7660-{index:012x}")},
            "vendorID": {"string": "0x10de"},
        }, "capacity": {"addressableMemory": {"value": "80Gi"}}});
    }
    json!({"attributes": {
        "addressingMode": {"string": "HMM"},
        "architecture": {"string": "Hopper"},
        "brand": {"string": "Nvidia"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "cudaDriverVersion": {"version": "13.0.0"},
        "driverVersion": {"version": "580.126.20"},
        "productName": {"string": nodes.product},
        "resource.kubernetes.io/pciBusID": {"string": format!("0000:{bus:02x}:00.0")},
        "resource.kubernetes.io/pcieRoot": {"string": format!("pci0000:{root:02x}")},
        "resource.kubernetes.io/numaNode": {"int": numa},
        "type": {"string": "gpu"},
        "uuid": {"string": format!("GPU-{node:08x}-5a5f-aa66-7660-{index:012x}")},
    }, "capacity": {"memory": {"value": "80Gi"}}})
}

/// A NUMA node's CPUs in dra-driver-cpu's grouped mode, as its
/// `docs/user/device-attributes.md` shows one (one socket).
fn cpu_group(numa: usize, cpus: usize) -> Value {
    json!({
        "allowMultipleAllocations": true,
        "attributes": {
            "dra.cpu/smtEnabled": {"bool": true},
            "dra.cpu/numCPUs": {"int": cpus},
            "resource.kubernetes.io/numaNode": {"int": numa},
            "dra.cpu/socketID": {"int": numa},
            "dra.net/numaNode": {"int": numa},
            "dra.cpu/numaNodeID": {"int": numa},
        },
        "capacity": {"dra.cpu/cpu": {"value": cpus.to_string()}},
    })
}

/// A dranet RDMA NIC, as its quick start shows one (v1 shape).
fn nic(index: usize, numa: usize) -> Value {
    json!({"attributes": {
        "dra.net/ifName": {"string": format!("gpu{index}rdma0")},
        "dra.net/numaNode": {"int": numa},
        "resource.kubernetes.io/numaNode": {"int": numa},
        "dra.net/pciVendor": {"string": "Mellanox Technologies"},
        "dra.net/rdma": {"bool": true},
        "dra.net/sriov": {"bool": false},
        "dra.net/type": {"string": "device"},
        "dra.net/virtual": {"bool": false},
    }})
}
