//! A node's live NUMA occupancy, read from its NodeResourceTopology
//! (`topology.node.k8s.io/v1alpha2`) as NFD's topology-updater publishes
//! it, and turned into what the kubelet model takes on a busy node
//! ([`crate::kubelet::Occupancy`]).
//!
//! # What the object says (NFD `pkg/resourcemonitor`)
//!
//! One zone per NUMA node, `type: Node`, named `node-<id>`. Per zone and
//! resource, `capacity`, `allocatable` and `available` as quantities.
//! `allocatable` is the kubelet's own (`GetAllocatableResources` of the
//! pod-resources API: for CPUs the static CPU Manager's allocatable set,
//! reserved CPUs left out; devices by their NUMA node; memory and huge
//! pages as the Memory Manager reports them). `available` is `allocatable`
//! less what the pod-resources `List` shows assigned: exclusive CPUs
//! (shared-pool CPUs are never assigned, so never subtracted), devices, and
//! the Memory Manager's pinned memory. So `allocatable - available` is
//! exactly what the kubelet's managers hold for other pods, which is what
//! the model takes away ([`read_occupancy`]).
//!
//! Only pods the kubelet has admitted appear: a pod bound a moment ago
//! is not yet counted (docs/binding-check.md, "The race").
//!
//! # Reading it against the labels
//!
//! The node's labels give the capacities the model sizes hints on; the
//! object gives only what is held. What could make a refusal wrong is
//! refused as inconsistent ([`NrtProblem`]) so that the caller allows the
//! binding: a zone the labels do not have, more available than the labels
//! say exists, a Topology Manager policy or scope other than the labels'.
//! What can only make the answer more lenient is taken as it is: a zone or
//! a resource the object leaves out holds nothing.
//!
//! Every list is bounded ([`MAX_ZONES`], [`MAX_RESOURCES_PER_ZONE`],
//! [`MAX_ATTRIBUTES`]): the object comes from the cluster, not from us.

use crate::kubelet::{NodeFacts, NumaOccupancy, Occupancy};
use crate::quantity::Quantity;
use crate::{TopologyManagerPolicy, TopologyManagerScope};
use serde_json::Value;
use std::fmt;

/// The NodeResourceTopology API the topology-updater writes.
pub const API_VERSION: &str = "topology.node.k8s.io/v1alpha2";
/// Its kind.
pub const KIND: &str = "NodeResourceTopology";
/// The most zones read: far above any machine's NUMA nodes.
pub const MAX_ZONES: usize = 256;
/// The most resources of one zone read.
pub const MAX_RESOURCES_PER_ZONE: usize = 256;
/// The most attributes read.
pub const MAX_ATTRIBUTES: usize = 64;
/// The most `managedFields` entries read.
pub const MAX_MANAGED_FIELDS: usize = 64;
/// The zone type of a NUMA node.
const NUMA_ZONE_TYPE: &str = "Node";
/// The prefix of a NUMA node's zone name, before its id.
const NUMA_ZONE_PREFIX: &str = "node-";
/// The attributes the topology-updater publishes the kubelet's settings in
/// (`pkg/nfd-topology-updater`, `updateNodeResourceTopology`).
const POLICY_ATTRIBUTE: &str = "topologyManagerPolicy";
const SCOPE_ATTRIBUTE: &str = "topologyManagerScope";

// The object is read as a JSON tree and walked: the policy's module
// already holds serde_json's tree reader, where derived readers for these
// few fields would each add their own code to it.

/// The array at `key` of `object` (absent or `null`: empty), at most
/// `limit` long.
fn list<'v>(
    object: &'v Value,
    key: &str,
    limit: usize,
    name: &'static str,
) -> Result<&'v [Value], NrtProblem> {
    let items = match object.get(key) {
        None | Some(Value::Null) => return Ok(&[]),
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => return Err(NrtProblem::Unreadable(format!("{key} is not a list"))),
    };
    if items.len() > limit {
        return Err(NrtProblem::TooLarge { list: name, limit });
    }
    Ok(items)
}

/// The string at `key` of `object`, when it is one.
fn text<'v>(object: &'v Value, key: &str) -> Option<&'v str> {
    object.get(key).and_then(Value::as_str)
}

/// Why a NodeResourceTopology cannot be used: the binding is then allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NrtProblem {
    /// Not the object's JSON, or a field of the wrong type.
    Unreadable(String),
    /// A list longer than the reader's bound.
    TooLarge { list: &'static str, limit: usize },
    /// A quantity that is not a whole, non-negative count.
    BadQuantity {
        zone: String,
        resource: String,
        value: String,
    },
    /// The node's labels publish no per-NUMA lists to read zones against.
    NoNumaNodes,
    /// The object and the labels describe different machines or settings.
    Inconsistent(Inconsistency),
}

/// How the object and the labels disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inconsistency {
    /// A NUMA zone whose id the labels do not have.
    ZoneBeyondLabels { zone: String, numa_nodes: usize },
    /// A NUMA zone listed twice.
    ZoneTwice { zone: String },
    /// More of a device resource available than the labels say the NUMA
    /// node has.
    MoreAvailableThanLabeled {
        numa: usize,
        resource: String,
        available: u64,
        labeled: u32,
    },
    /// `available` above `allocatable`.
    AvailableAboveAllocatable { numa: usize, resource: String },
    /// A kubelet setting the object states otherwise than the labels.
    Setting {
        name: &'static str,
        object: String,
        labels: String,
    },
}

impl fmt::Display for NrtProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NrtProblem::Unreadable(why) => write!(f, "it cannot be read: {why}"),
            NrtProblem::TooLarge { list, limit } => {
                write!(f, "it lists more than {limit} {list}")
            }
            NrtProblem::BadQuantity {
                zone,
                resource,
                value,
            } => write!(
                f,
                "zone {zone:?} gives {resource} as {value:?}, not a whole count"
            ),
            NrtProblem::NoNumaNodes => {
                f.write_str("the node's labels list no NUMA nodes to read its zones against")
            }
            NrtProblem::Inconsistent(inconsistency) => {
                write!(f, "it disagrees with the node's labels: {inconsistency}")
            }
        }
    }
}

impl fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inconsistency::ZoneBeyondLabels { zone, numa_nodes } => write!(
                f,
                "zone {zone:?} is not among the {numa_nodes} NUMA nodes the labels list"
            ),
            Inconsistency::ZoneTwice { zone } => write!(f, "zone {zone:?} is listed twice"),
            Inconsistency::MoreAvailableThanLabeled {
                numa,
                resource,
                available,
                labeled,
            } => write!(
                f,
                "NUMA node {numa} has {available} {resource} available, and the labels say it has {labeled}"
            ),
            Inconsistency::AvailableAboveAllocatable { numa, resource } => write!(
                f,
                "NUMA node {numa} has more {resource} available than allocatable"
            ),
            Inconsistency::Setting {
                name,
                object,
                labels,
            } => write!(f, "{name} is {object} there and {labels} in the labels"),
        }
    }
}

/// The memory resources in the Memory Manager's order
/// ([`NumaOccupancy::memory`]).
const MEMORY_RESOURCES: [&str; 3] = ["memory", "hugepages-2Mi", "hugepages-1Gi"];
const CPU_RESOURCE: &str = "cpu";

/// What other pods hold on each NUMA node of `facts`, from the node's
/// NodeResourceTopology `object` (its JSON), for the device resources the
/// model counts: `gpu_resource` and those in [`NodeFacts::devices`].
///
/// GPUs and devices held are the labels' count less `available` (an
/// unhealthy device is as unusable as an allocated one: `healthyDevices`
/// less `allocatedDevices`); CPUs, memory and huge pages held are
/// `allocatable - available`.
pub fn read_occupancy(
    object: &str,
    facts: &NodeFacts,
    gpu_resource: &str,
) -> Result<Occupancy, NrtProblem> {
    read(object, facts, gpu_resource).map(|reading| reading.occupancy)
}

/// What one NodeResourceTopology says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NrtReading {
    pub occupancy: Occupancy,
    /// When its content last changed (the newest `managedFields` time, Unix
    /// seconds): the API server rewrites an object only when its content
    /// changes, so this dates the last change, not the last look.
    pub changed_at: Option<u64>,
}

/// [`read_occupancy`], with when the object last changed.
pub fn read(object: &str, facts: &NodeFacts, gpu_resource: &str) -> Result<NrtReading, NrtProblem> {
    let object: Value = serde_json::from_slice(object.as_bytes())
        .map_err(|e| NrtProblem::Unreadable(e.to_string()))?;
    if !object.is_object() {
        return Err(NrtProblem::Unreadable("it is not an object".to_owned()));
    }
    let metadata = object.get("metadata").unwrap_or(&Value::Null);
    let changed_at = list(
        metadata,
        "managedFields",
        MAX_MANAGED_FIELDS,
        "managedFields",
    )?
    .iter()
    .filter_map(|entry| crate::parse_heartbeat(text(entry, "time")?).ok())
    .max();
    let zones = list(&object, "zones", MAX_ZONES, "zones")?;
    let attributes = list(&object, "attributes", MAX_ATTRIBUTES, "attributes")?;
    check_settings(attributes, facts)?;
    let numas = facts.numa_nodes.as_deref().ok_or(NrtProblem::NoNumaNodes)?;
    let mut held: Vec<Option<NumaOccupancy>> = vec![None; numas.len()];
    for zone in zones {
        if text(zone, "type") != Some(NUMA_ZONE_TYPE) {
            continue;
        }
        let name = text(zone, "name").unwrap_or_default();
        let Some(numa) = zone_id(name) else {
            continue;
        };
        let resources = list(
            zone,
            "resources",
            MAX_RESOURCES_PER_ZONE,
            "resources in a zone",
        )?;
        let slot = held.get_mut(numa).ok_or_else(|| {
            NrtProblem::Inconsistent(Inconsistency::ZoneBeyondLabels {
                zone: name.to_owned(),
                numa_nodes: numas.len(),
            })
        })?;
        if slot.is_some() {
            return Err(NrtProblem::Inconsistent(Inconsistency::ZoneTwice {
                zone: name.to_owned(),
            }));
        }
        *slot = Some(zone_occupancy(name, resources, numa, facts, gpu_resource)?);
    }
    Ok(NrtReading {
        occupancy: Occupancy {
            numa_nodes: held.into_iter().map(Option::unwrap_or_default).collect(),
        },
        changed_at,
    })
}

/// The id of a NUMA zone named `node-<id>` (ids as the kernel writes them:
/// no sign, no leading zero but `0` itself).
fn zone_id(name: &str) -> Option<usize> {
    let digits = name.strip_prefix(NUMA_ZONE_PREFIX)?;
    let canonical = !digits.is_empty()
        && digits.len() <= 4
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// The Topology Manager's policy and scope, where both the object and the
/// labels state them, must agree: they decide every answer.
fn check_settings(attributes: &[Value], facts: &NodeFacts) -> Result<(), NrtProblem> {
    let tm = &facts.topology_manager;
    for attribute in attributes {
        let (name, labeled) = match text(attribute, "name") {
            Some(POLICY_ATTRIBUTE) => (
                POLICY_ATTRIBUTE,
                tm.policy.map(TopologyManagerPolicy::as_str),
            ),
            Some(SCOPE_ATTRIBUTE) => (SCOPE_ATTRIBUTE, tm.scope.map(TopologyManagerScope::as_str)),
            _ => continue,
        };
        let (Some(labeled), Some(value)) = (labeled, text(attribute, "value")) else {
            continue;
        };
        if value != labeled {
            return Err(NrtProblem::Inconsistent(Inconsistency::Setting {
                name,
                object: value.to_owned(),
                labels: labeled.to_owned(),
            }));
        }
    }
    Ok(())
}

fn zone_occupancy(
    zone: &str,
    resources: &[Value],
    numa: usize,
    facts: &NodeFacts,
    gpu_resource: &str,
) -> Result<NumaOccupancy, NrtProblem> {
    let mut held = NumaOccupancy::default();
    let labeled_gpus = facts
        .numa_nodes
        .as_deref()
        .and_then(|n| n.get(numa))
        .and_then(|n| n.gpus);
    for resource in resources {
        let name = text(resource, "name").unwrap_or_default();
        let count = |key: &str| -> Result<Option<u64>, NrtProblem> {
            let value = match resource.get(key) {
                None | Some(Value::Null) => return Ok(None),
                Some(value) => value,
            };
            let bad = || NrtProblem::BadQuantity {
                zone: zone.to_owned(),
                resource: name.to_owned(),
                value: value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned),
            };
            let text = value.as_str().ok_or_else(bad)?;
            Quantity::parse(text)
                .ok()
                .and_then(|q| q.whole_units())
                .map(Some)
                .ok_or_else(bad)
        };
        let (Some(available), allocatable) = (count("available")?, count("allocatable")?) else {
            continue;
        };
        let above = || {
            NrtProblem::Inconsistent(Inconsistency::AvailableAboveAllocatable {
                numa,
                resource: name.to_owned(),
            })
        };
        // What the managers hold: allocatable less available.
        let assigned = || -> Result<u64, NrtProblem> {
            match allocatable {
                Some(total) => total.checked_sub(available).ok_or_else(above),
                None => Ok(0),
            }
        };
        let labeled_devices = |labeled: Option<u32>| -> Result<Option<u32>, NrtProblem> {
            match labeled {
                Some(labeled) => {
                    let left = u64::from(labeled).checked_sub(available).ok_or_else(|| {
                        NrtProblem::Inconsistent(Inconsistency::MoreAvailableThanLabeled {
                            numa,
                            resource: name.to_owned(),
                            available,
                            labeled,
                        })
                    })?;
                    Ok(Some(u32::try_from(left).unwrap_or(u32::MAX)))
                }
                None => Ok(u32::try_from(assigned()?).ok()),
            }
        };
        if name == gpu_resource {
            held.gpus = labeled_devices(labeled_gpus)?.unwrap_or(0);
        } else if name == CPU_RESOURCE {
            held.cpus = u32::try_from(assigned()?).unwrap_or(u32::MAX);
        } else if let Some(i) = MEMORY_RESOURCES.iter().position(|m| *m == name) {
            held.memory[i] = assigned()?;
        } else if let Some(counts) = facts.devices.get(name) {
            let labeled = counts.get(numa).copied();
            if let Some(count) = labeled_devices(labeled)? {
                held.devices.retain(|(listed, _)| listed != name);
                held.devices.push((name.to_owned(), count));
            }
        }
    }
    Ok(held)
}
