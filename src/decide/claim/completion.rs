//! Which alignment constraint a GPU claim lacks, decided from the claim and
//! the devices the cluster publishes.
//!
//! The kubelet gives DRA devices no topology hint (`pkg/kubelet/cm/dra`
//! `GetTopologyHints` answers `nil`): the only alignment a claim's devices
//! get is the scheduler's, from the claim's own `matchAttribute`
//! constraints, and a constraint spans one claim only. So the policy adds,
//! inside the claim, one constraint over its GPU requests and the requests
//! of aligned classes beside them (NICs, CPUs), on a NUMA attribute every
//! candidate device publishes: the allocator refuses a device that lacks
//! the constrained attribute (`matchAttributeConstraint.add`), and a
//! constraint on an attribute some devices miss would make them
//! unallocatable.
//!
//! Under `topology.alignment: nvlink` the constraint is on the NVLink
//! partition the driver publishes instead (`gpu.nvidia.com/partition<N>`,
//! the Fabric Manager partition of N GPUs holding a VFIO device), over the
//! GPU requests only: NICs and CPUs have no such attribute.

use crate::cluster::dra::{
    partition_size, ClassSelector, Device, DraInventory, DRANET_NUMA_ATTRIBUTE,
    PARTITION_ATTRIBUTE_PREFIX, STANDARD_NUMA_ATTRIBUTE, STANDARD_PCIE_ROOT_ATTRIBUTE,
};
use crate::request::claim::{AllocationMode, ConstraintRule, DeviceClaim, DeviceConstraint};
use crate::settings::DraSettings;
use std::collections::BTreeSet;

/// The requests of a claim the policy aligns, and how many devices they take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aligned {
    /// The GPU requests, in the claim's order.
    pub gpu_requests: Vec<String>,
    /// GPU requests and requests of aligned classes, in the claim's order.
    pub requests: Vec<String>,
    /// Their classes.
    pub classes: BTreeSet<String>,
    /// The classes of the GPU requests.
    pub gpu_classes: BTreeSet<String>,
    /// The fewest devices they take together.
    pub devices: u32,
    /// The most devices the GPU requests take together (each its largest
    /// choice): what an NVLink partition must hold, so that no preferred
    /// `firstAvailable` choice is made unallocatable.
    pub gpu_devices: u32,
}

/// The requests to align: those whose every choice is of a GPU or aligned
/// class with `ExactCount` (an `All` request takes every matching device of
/// the node, which one NUMA value rarely holds). `None` when the claim has
/// no GPU request: it is no GPU claim.
pub fn aligned_requests(claim: &DeviceClaim, dra: &DraSettings) -> Option<Aligned> {
    let is_gpu = |request: &crate::request::claim::DeviceRequest| {
        request
            .choices
            .iter()
            .any(|choice| dra.is_gpu_class(&choice.device_class))
    };
    if !claim.requests.iter().any(is_gpu) {
        return None;
    }
    let mut aligned = Aligned {
        gpu_requests: Vec::new(),
        requests: Vec::new(),
        classes: BTreeSet::new(),
        gpu_classes: BTreeSet::new(),
        devices: 0,
        gpu_devices: 0,
    };
    for request in &claim.requests {
        let counts: Option<Vec<u32>> = request
            .choices
            .iter()
            .map(|choice| match choice.mode {
                AllocationMode::ExactCount(count)
                    if dra.is_gpu_class(&choice.device_class)
                        || dra.is_aligned_class(&choice.device_class) =>
                {
                    Some(count)
                }
                _ => None,
            })
            .collect();
        let Some((fewest, most)) = counts.and_then(|counts| {
            Some((counts.iter().copied().min()?, counts.iter().copied().max()?))
        }) else {
            continue;
        };
        if is_gpu(request) {
            aligned.gpu_requests.push(request.name.clone());
            aligned
                .gpu_classes
                .extend(request.choices.iter().map(|c| c.device_class.clone()));
            aligned.gpu_devices = aligned.gpu_devices.saturating_add(most);
        }
        aligned.requests.push(request.name.clone());
        aligned
            .classes
            .extend(request.choices.iter().map(|c| c.device_class.clone()));
        aligned.devices = aligned.devices.saturating_add(fewest);
    }
    Some(aligned)
}

/// What the claim needs for alignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Fewer than two devices to align.
    NotNeeded,
    /// A constraint of the author's already aligns them (on a NUMA or PCIe
    /// root attribute): it is never changed.
    AlignedByAuthor(String),
    /// The constraint to add.
    Add(DeviceConstraint),
    /// Why no constraint can be added safely.
    Cannot(CannotAlign),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CannotAlign {
    /// The classes are not in the DeviceClass list, or their selectors name
    /// no driver the policy reads.
    UnreadClasses(Vec<String>),
    /// No published device of these classes: nothing tells which attribute
    /// they carry.
    Unpublished(Vec<String>),
    /// No NUMA attribute is published by every device of the classes:
    /// `class` has `devices` devices without `attribute` (the standard one).
    NoCommonAttribute {
        class: String,
        devices: usize,
        attribute: &'static str,
    },
    /// These requests choose their devices by CEL selectors, which the
    /// policy does not evaluate: the devices chosen may sit on different
    /// NUMA nodes on purpose, and a constraint could leave none to allocate.
    Selected(Vec<String>),
    /// `topology.alignment: nvlink`: no NVLink partition attribute for
    /// `gpus` GPUs is published by every device of the GPU `classes` (the
    /// NVIDIA driver publishes them on VFIO devices only; full GPUs and MIG
    /// devices carry none).
    NoInterconnectAttribute { classes: Vec<String>, gpus: u32 },
}

/// Whether `name` is an attribute that aligns devices by locality: any
/// driver's `numaNode` or NVLink `partition<N>`, or the standard `pcieRoot`
/// (a stronger alignment, the author's choice to make).
fn is_locality_attribute(name: &str) -> bool {
    name == STANDARD_PCIE_ROOT_ATTRIBUTE
        || name.rsplit('/').next() == Some("numaNode")
        || partition_size(name).is_some()
}

/// The checks both alignments make before choosing an attribute: enough
/// devices among `requests` (`devices`) to align, no locality constraint of
/// the author's over them, no CEL selectors choosing them.
fn needs_constraint(
    claim: &DeviceClaim,
    requests: &[String],
    devices: u32,
) -> Result<(), Completion> {
    if devices < 2 {
        return Err(Completion::NotNeeded);
    }
    if let Some(attribute) =
        claim
            .constraints
            .iter()
            .find_map(|constraint| match &constraint.rule {
                ConstraintRule::MatchAttribute(name)
                    if is_locality_attribute(name)
                        && requests.iter().any(|r| constraint.covers(r)) =>
                {
                    Some(name.clone())
                }
                _ => None,
            })
    {
        return Err(Completion::AlignedByAuthor(attribute));
    }
    let selected: Vec<String> = claim
        .requests
        .iter()
        .filter(|request| {
            requests.contains(&request.name) && request.choices.iter().any(|choice| choice.selected)
        })
        .map(|request| request.name.clone())
        .collect();
    if !selected.is_empty() {
        return Err(Completion::Cannot(CannotAlign::Selected(selected)));
    }
    Ok(())
}

/// The constraint a GPU claim lacks under NUMA alignment.
pub(crate) fn numa_completion(
    claim: &DeviceClaim,
    aligned: &Aligned,
    inventory: &DraInventory,
) -> Completion {
    if let Err(done) = needs_constraint(claim, &aligned.requests, aligned.devices) {
        return done;
    }
    match common_numa_attribute(&aligned.classes, inventory) {
        Ok(attribute) => Completion::Add(DeviceConstraint {
            requests: aligned.requests.clone(),
            rule: ConstraintRule::MatchAttribute(attribute),
        }),
        Err(cannot) => Completion::Cannot(cannot),
    }
}

/// The constraint a GPU claim lacks under NVLink alignment: its GPUs in
/// one NVLink partition, the smallest size that holds them which every
/// device of the GPU classes publishes (`gpu.nvidia.com/partition2` for 2
/// GPUs; 3 GPUs take a partition of 4). NICs and CPUs are not covered.
pub(crate) fn nvlink_completion(
    claim: &DeviceClaim,
    aligned: &Aligned,
    inventory: &DraInventory,
) -> Completion {
    if let Err(done) = needs_constraint(claim, &aligned.gpu_requests, aligned.gpu_devices) {
        return done;
    }
    let selectors = match published_classes(&aligned.gpu_classes, inventory) {
        Ok(selectors) => selectors,
        Err(cannot) => return Completion::Cannot(cannot),
    };
    let devices: Vec<&Device> = selectors
        .iter()
        .flat_map(|(_, selector)| devices_of(selector, inventory))
        .collect();
    let mut sizes: Vec<u32> = devices
        .iter()
        .flat_map(|device| device.attributes.keys())
        .filter_map(|name| partition_size(name))
        .filter(|size| *size >= aligned.gpu_devices)
        .collect();
    gpu_topology::sort::sort(&mut sizes);
    sizes.dedup();
    let attribute = sizes.into_iter().find_map(|size| {
        let mut names = devices.iter().map(|device| {
            let name = format!("{}/{PARTITION_ATTRIBUTE_PREFIX}{size}", device.driver);
            device.attribute(&name).map(|_| name)
        });
        let first = names.next()??;
        names
            .all(|name| name.as_ref() == Some(&first))
            .then_some(first)
    });
    match attribute {
        Some(attribute) => Completion::Add(DeviceConstraint {
            requests: aligned.gpu_requests.clone(),
            rule: ConstraintRule::MatchAttribute(attribute),
        }),
        None => Completion::Cannot(CannotAlign::NoInterconnectAttribute {
            classes: aligned.gpu_classes.iter().cloned().collect(),
            gpus: aligned.gpu_devices,
        }),
    }
}

/// The published devices `selector` admits.
fn devices_of<'i>(selector: &ClassSelector, inventory: &'i DraInventory) -> Vec<&'i Device> {
    inventory
        .all_devices()
        .filter(|device| selector.admits(device))
        .collect()
}

/// The selectors of `classes`, when every class is read (its driver known)
/// and some ResourceSlice publishes a device of it.
fn published_classes<'i>(
    classes: &BTreeSet<String>,
    inventory: &'i DraInventory,
) -> Result<Vec<(&'i String, &'i ClassSelector)>, CannotAlign> {
    let unread: Vec<String> = classes
        .iter()
        .filter(|class| {
            inventory
                .classes
                .get(*class)
                .is_none_or(|selector| selector.driver.is_none())
        })
        .cloned()
        .collect();
    if !unread.is_empty() {
        return Err(CannotAlign::UnreadClasses(unread));
    }
    let selectors: Vec<(&String, &ClassSelector)> = inventory
        .classes
        .iter()
        .filter(|(class, _)| classes.contains(*class))
        .collect();
    let unpublished: Vec<String> = selectors
        .iter()
        .filter(|(_, selector)| devices_of(selector, inventory).is_empty())
        .map(|(class, _)| (*class).clone())
        .collect();
    if !unpublished.is_empty() {
        return Err(CannotAlign::Unpublished(unpublished));
    }
    Ok(selectors)
}

/// The first NUMA attribute every published device of `classes` has: the
/// standard one, then a driver's own (`gpu.amd.com/numaNode`), then
/// dranet's.
pub(crate) fn common_numa_attribute(
    classes: &BTreeSet<String>,
    inventory: &DraInventory,
) -> Result<String, CannotAlign> {
    let selectors = published_classes(classes, inventory)?;
    let mut candidates = vec![STANDARD_NUMA_ATTRIBUTE.to_owned()];
    for (_, selector) in &selectors {
        if let Some(driver) = &selector.driver {
            candidates.push(format!("{driver}/numaNode"));
        }
    }
    candidates.push(DRANET_NUMA_ATTRIBUTE.to_owned());
    let mut seen = BTreeSet::new();
    candidates.retain(|name| seen.insert(name.clone()));
    for candidate in &candidates {
        if selectors.iter().all(|(_, selector)| {
            devices_of(selector, inventory)
                .iter()
                .all(|device| device.attribute(candidate).is_some())
        }) {
            return Ok(candidate.clone());
        }
    }
    let (class, devices) = selectors
        .iter()
        .map(|(class, selector)| {
            let missing: usize = inventory
                .all_counted()
                .filter(|counted| {
                    selector.admits(&counted.device)
                        && counted.device.attribute(STANDARD_NUMA_ATTRIBUTE).is_none()
                })
                .map(|counted| counted.count as usize)
                .sum();
            ((*class).clone(), missing)
        })
        .max_by_key(|(_, missing)| *missing)
        .unwrap_or_default();
    Err(CannotAlign::NoCommonAttribute {
        class,
        devices,
        attribute: STANDARD_NUMA_ATTRIBUTE,
    })
}

/// The claim with `constraint` added, for the fit of the completed claim.
pub(crate) fn with_constraint(claim: &DeviceClaim, constraint: &DeviceConstraint) -> DeviceClaim {
    let mut completed = claim.clone();
    completed.constraints.push(constraint.clone());
    completed
}
