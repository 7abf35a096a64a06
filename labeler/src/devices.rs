//! Device-plugin resources besides the GPUs: which devices of the node each
//! configured resource counts, and on which NUMA node each sits, for the
//! `numa-devices.<domain>_<name>` labels of the contract.
//!
//! The kubelet's Device Manager aligns every device-plugin resource by the
//! NUMA node its plugin reports for each device (`topology_hints.go`); the
//! network device plugins report the PCI function's `numa_node`:
//!
//! - the RDMA shared device plugin (the NVIDIA network operator's
//!   `rdmaSharedDevicePlugin`) offers `rdmaHcaMax` devices per selected
//!   RDMA device, each on that device's NUMA node ([`Count::PerDevice`]);
//! - the SR-IOV network device plugin offers the virtual functions of the
//!   selected physical functions, each on its own `numa_node`, which is its
//!   physical function's ([`Count::VirtualFunctions`]);
//! - a plugin that offers each HCA once (`rdma/ib`) counts them one each.
//!
//! A rule selects devices by PCI vendor/device id or class, or by the name
//! of their RDMA device (`class/infiniband/*`) or netdev (`class/net/*`),
//! with a trailing `*` as a prefix match. A device whose NUMA node is
//! unknown (`numa_node` -1 on a machine of several NUMA nodes) leaves its
//! resource unknown: never a guess.

use crate::model::{ClassDevice, PciFunction, SysfsView};
use serde::Deserialize;
use std::collections::BTreeMap;

/// How the devices a rule selects become device-plugin devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Count {
    /// Each selected device is `n` devices (the RDMA shared device
    /// plugin's `rdmaHcaMax`; 1 for a plugin that offers each once).
    PerDevice(u32),
    /// The virtual functions of each selected physical function
    /// (`virtfn*`), as the SR-IOV network device plugin offers them.
    VirtualFunctions,
}

/// Which devices a rule selects; every field given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    /// PCI vendor ids, hexadecimal without `0x` (`15b3`).
    pub vendors: Vec<String>,
    /// PCI device ids (`101b`).
    pub devices: Vec<String>,
    /// PCI class codes, or their leading digits (`0207`: InfiniBand).
    pub classes: Vec<String>,
    /// RDMA device names (`class/infiniband`), `mlx5_*` a prefix.
    pub rdma_devices: Vec<String>,
    /// Netdev names (`class/net`), `ens*` a prefix.
    pub netdevs: Vec<String>,
}

/// One configured device resource.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeviceRule {
    /// The extended resource name its device plugin advertises.
    pub resource: String,
    pub selector: Selector,
    pub count: Count,
}

/// The labeler's device configuration file (`--devices-config`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct DeviceConfig {
    pub resources: Vec<DeviceRule>,
}

/// Mellanox (NVIDIA networking) and Intel PCI vendor ids.
const MELLANOX: &str = "15b3";
const INTEL: &str = "8086";

impl DeviceConfig {
    /// The defaults, for the common operators' default configurations:
    /// the NVIDIA network operator's RDMA shared device plugin
    /// (`rdma/rdma_shared_device_a`, `rdmaHcaMax: 63`, Mellanox devices) and
    /// the SR-IOV network device plugin (`intel.com/intel_sriov_netdevice`:
    /// the virtual functions of Intel NICs).
    pub fn defaults() -> Self {
        DeviceConfig {
            resources: vec![
                DeviceRule {
                    resource: "rdma/rdma_shared_device_a".to_owned(),
                    selector: Selector {
                        vendors: vec![MELLANOX.to_owned()],
                        rdma_devices: vec!["*".to_owned()],
                        ..Selector::default()
                    },
                    count: Count::PerDevice(63),
                },
                DeviceRule {
                    resource: "intel.com/intel_sriov_netdevice".to_owned(),
                    selector: Selector {
                        vendors: vec![INTEL.to_owned()],
                        netdevs: vec!["*".to_owned()],
                        ..Selector::default()
                    },
                    count: Count::VirtualFunctions,
                },
            ],
        }
    }

    /// Checks the rules: resource names the contract can write, each once.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for rule in &self.resources {
            if gpu_topology::device_key_name(&rule.resource).is_none() {
                return Err(format!(
                    "device resource {:?} is not an extended resource name short enough for a label (domain/name, at most {} characters together)",
                    rule.resource,
                    63 - gpu_topology::labels::DEVICE_KEY_PREFIX.len()
                ));
            }
            if !seen.insert(&rule.resource) {
                return Err(format!(
                    "device resource {:?} is configured twice",
                    rule.resource
                ));
            }
        }
        Ok(())
    }
}

/// `pattern` matches `name`: equal, or `prefix*` and `name` starts with it.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

fn hex_matches(list: &[String], value: Option<u32>, digits: usize) -> bool {
    list.is_empty()
        || value.is_some_and(|v| {
            let text = format!("{v:0digits$x}");
            list.iter()
                .any(|want| text.starts_with(want.to_ascii_lowercase().as_str()))
        })
}

impl Selector {
    fn pci_matches(&self, function: &PciFunction) -> bool {
        hex_matches(&self.vendors, Some(function.vendor), 4)
            && hex_matches(&self.devices, function.device, 4)
            && hex_matches(&self.classes, Some(function.class), 6)
    }

    /// The class devices of `devices` named by `patterns` (all when no
    /// pattern is given), by the PCI function they sit on.
    fn named<'v>(patterns: &[String], devices: &'v [ClassDevice]) -> Vec<&'v ClassDevice> {
        devices
            .iter()
            .filter(|d| patterns.iter().any(|p| matches(p, &d.name)))
            .collect()
    }

    /// The PCI functions the selector takes: those named through their
    /// RDMA devices or netdevs when it names any, else every function its
    /// PCI ids match. Virtual functions are never selected themselves.
    fn functions<'v>(&self, view: &'v SysfsView) -> Vec<&'v PciFunction> {
        let by_class = !self.rdma_devices.is_empty() || !self.netdevs.is_empty();
        let mut addresses: Vec<&str> = Vec::new();
        if by_class {
            let named = Self::named(&self.rdma_devices, &view.rdma_devices)
                .into_iter()
                .chain(Self::named(&self.netdevs, &view.net_devices));
            for device in named {
                if let Some(address) = device.pci_address.as_deref() {
                    if !addresses.contains(&address) {
                        addresses.push(address);
                    }
                }
            }
        }
        view.pci_functions
            .iter()
            .filter(|f| !f.is_virtual_function)
            .filter(|f| !by_class || addresses.contains(&f.address.as_str()))
            .filter(|f| self.pci_matches(f))
            .collect()
    }
}

/// Devices per NUMA node of each configured resource, every NUMA node of
/// `view` in id order; a resource whose devices' NUMA nodes are not all
/// known is an `Err` saying why (its label is left out).
pub fn count_devices(
    config: &DeviceConfig,
    view: &SysfsView,
) -> BTreeMap<String, Result<Vec<u32>, String>> {
    let nodes: Vec<u32> = view.numa_nodes.keys().copied().collect();
    config
        .resources
        .iter()
        .map(|rule| (rule.resource.clone(), count_rule(rule, view, &nodes)))
        .collect()
}

fn count_rule(rule: &DeviceRule, view: &SysfsView, nodes: &[u32]) -> Result<Vec<u32>, String> {
    if nodes.is_empty() {
        return Err("sysfs lists no NUMA node".to_owned());
    }
    let mut counts = vec![0u32; nodes.len()];
    for function in rule.selector.functions(view) {
        let devices = match rule.count {
            Count::PerDevice(n) => n,
            Count::VirtualFunctions => u32::try_from(function.virtual_functions.len())
                .map_err(|_| format!("{} has too many virtual functions", function.address))?,
        };
        if devices == 0 {
            continue;
        }
        // One NUMA node: a device without one (-1) is on it.
        let numa = match (function.numa, nodes) {
            (Some(numa), _) => numa,
            (None, [only]) => *only,
            (None, _) => {
                return Err(format!(
                    "{} has no NUMA node (numa_node -1) on a machine of {} NUMA nodes",
                    function.address,
                    nodes.len()
                ))
            }
        };
        let index = nodes.iter().position(|&n| n == numa).ok_or_else(|| {
            format!(
                "{} sits on NUMA node {numa}, which sysfs does not list",
                function.address
            )
        })?;
        counts[index] = counts[index].saturating_add(devices);
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::exact("mlx5_0", "mlx5_0", true)]
    #[case::prefix("mlx5_*", "mlx5_11", true)]
    #[case::everything("*", "ib0", true)]
    #[case::other("mlx5_*", "irdma0", false)]
    fn name_patterns(#[case] pattern: &str, #[case] name: &str, #[case] expected: bool) {
        assert_eq!(matches(pattern, name), expected);
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(DeviceConfig::defaults().validate(), Ok(()));
    }

    #[rstest]
    #[case::no_domain("ib", "is not an extended resource name")]
    #[case::too_long(
        "example.com/a-device-resource-name-much-too-long-for-a-label",
        "short enough for a label"
    )]
    fn invalid_rules_are_named(#[case] resource: &str, #[case] expected: &str) {
        let config = DeviceConfig {
            resources: vec![DeviceRule {
                resource: resource.to_owned(),
                selector: Selector::default(),
                count: Count::PerDevice(1),
            }],
        };
        let error = config.validate().unwrap_err();
        assert!(error.contains(expected), "{error}");
    }
}
