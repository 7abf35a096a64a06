//! Whether some node's published devices can satisfy a claim: the
//! conditions the scheduler's structured allocator must meet
//! (`dynamic-resource-allocation/structured/internal/stable/allocator_stable.go`),
//! counted per group of nodes that publish the same devices.
//!
//! The allocator searches depth-first over requests and devices for the
//! first allocation that meets every constraint. The policy does not
//! search: it checks conditions every allocation must meet, so that a claim
//! it refuses has no allocation on any node, and where a fact it does not
//! read (CEL selectors, other claims' allocations and consumption) could
//! only remove devices, it counts the devices without that fact, an upper
//! bound. Those conditions are:
//!
//! 1. every `ExactCount` request has at least `count` devices of its class
//!    on the node, and the requests of one class together at most the
//!    class's devices (a device is allocated once unless it allows multiple
//!    allocations); a request of consumable capacity (`capacity.requests`,
//!    dra-driver-cpu's grouped `dra.cpu/cpu`) from a device that allows
//!    multiple allocations needs one device that offers that much;
//! 2. for every `matchAttribute` constraint, one value of the attribute is
//!    held by enough devices of each class it covers (`matchAttributeConstraint.add`:
//!    a device without the attribute is refused; a list value matches on a
//!    non-empty intersection, so a device counts for each value it lists),
//!    and, for a capacity request, by a device that offers it.
//!
//! `All` requests, `firstAvailable` requests under a constraint and
//! `distinctAttribute` constraints are not counted (they only loosen the
//! conditions), and a node whose pool is mid-update, or a class whose
//! devices some slice offers to several nodes, makes the answer unknown.

use crate::cluster::dra::{
    qualified, Atom, ClassSelector, Counted, Device, DeviceGroup, DraInventory,
};
use crate::request::claim::{AllocationMode, ConstraintRule, DeviceChoice, DeviceClaim};
use crate::request::quantity::Quantity;
use std::collections::{BTreeMap, BTreeSet};

/// Why a group of nodes cannot satisfy the claim, with the numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shortfall {
    /// Requests of `class` need `needed` devices; the node has `published`.
    Devices {
        requests: Vec<String>,
        class: String,
        needed: u32,
        published: u32,
    },
    /// Under a `matchAttribute` constraint on `attribute`, the requests of
    /// `class` need `needed` devices with one value; the most devices of the
    /// class that share one value is `most` (`at`: that value).
    OneValue {
        attribute: String,
        requests: Vec<String>,
        class: String,
        needed: u32,
        most: u32,
        at: Option<Atom>,
    },
    /// Request `request` needs `needed` of capacity `capacity` from one
    /// device of `class` (with one value of `within`'s attribute, when a
    /// constraint covers it); the most one offers is `most` (at `within`'s
    /// value), `None` when no device offers that capacity.
    Capacity {
        request: String,
        class: String,
        capacity: String,
        needed: Quantity,
        most: Option<Quantity>,
        within: Option<(String, Option<Atom>)>,
    },
}

/// Why the answer for a group is unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unknown {
    /// The class is not in the DeviceClass list, or its selector names no
    /// driver the policy reads.
    UnreadClass(String),
    /// A pool of the class's driver is mid-update on these nodes.
    PoolUpdating(String),
    /// Devices of the class are offered to nodes through a node selector.
    SharedPool(String),
}

/// The answer for one group of nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GroupFit {
    Fits,
    Unknown(Unknown),
    Short(Shortfall),
}

/// The answer for the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimFit {
    /// Some group of nodes can satisfy the claim (as far as counted).
    Fits,
    /// No group is known to fit, and some cannot be told.
    Unknown(Unknown),
    /// No node publishes a device of these classes: the drivers may not
    /// have published yet, so nothing is refused on it.
    NoDevices(Vec<String>),
    /// No group of nodes can satisfy it: each group's first shortfall,
    /// with the group's nodes.
    NoFit(Vec<(Nodes, Shortfall)>),
}

/// A group's nodes, as a message names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    pub count: u32,
    /// The first names (all, when few).
    pub examples: Vec<String>,
}

impl Nodes {
    pub fn of(group: &DeviceGroup) -> Self {
        Nodes {
            count: group.nodes,
            examples: group.examples.clone(),
        }
    }
}

/// The most device checks one claim's decision makes (issue #35): at
/// roughly a hundred instructions each, the answer still comes well within
/// policy-server's 2 s timeout. The claim's lists are held to the API's
/// caps when read (`request::claim::MAX_REQUESTS` and the others); this
/// caps what the fleet multiplies them by.
pub(crate) const MAX_FIT_WORK: usize = 1 << 22;

/// `Err` (naming the cap) when a group holds more devices than the fleet
/// summary reads in one (`gpu_topology::dra::MAX_GROUP_DEVICES`, which
/// devices from the ResourceSlice list are held to here), or when the
/// decision on `claim` would pass over more than
/// [`crate::cluster::MAX_SHAPES`] groups of nodes, or make more than
/// [`MAX_FIT_WORK`] device checks: each choice and capacity it requests
/// passes over a group's devices and the unattached ones, for the requests,
/// their classes and each constraint (an upper bound, with the completed
/// claim's second fit). Such a claim is accepted unchecked, never refused
/// for the cap alone.
#[inline(never)]
pub(crate) fn within_work_cap(claim: &DeviceClaim, inventory: &DraInventory) -> Result<(), String> {
    inventory.devices.within_group_cap()?;
    let passes = claim
        .requests
        .iter()
        .flat_map(|request| &request.choices)
        .fold(0usize, |sum, choice| {
            sum.saturating_add(1 + choice.capacity.len())
        })
        .saturating_mul(claim.constraints.len().saturating_add(3));
    let unattached = inventory.devices.unattached.len();
    let groups = inventory.groups();
    let examined = groups.iter().fold(0usize, |sum, group| {
        sum.saturating_add(1 + group.devices.len() + unattached)
    });
    let work = passes.saturating_mul(examined);
    match groups.len() > crate::cluster::MAX_SHAPES || work > MAX_FIT_WORK {
        true => Err(format!(
            "the DRA claim's fit would pass {passes} times over the {examined} device entries of {} groups of nodes: more than the {MAX_FIT_WORK} device checks (or {} groups) one admission makes, so it is not checked",
            groups.len(),
            crate::cluster::MAX_SHAPES
        )),
        false => Ok(()),
    }
}

/// The fit of `claim` against `inventory`.
pub fn claim_fit(claim: &DeviceClaim, inventory: &DraInventory) -> ClaimFit {
    let classes = counted_classes(claim);
    let unpublished: Vec<String> = classes
        .iter()
        .filter(|class| {
            inventory.classes.get(**class).is_some_and(|selector| {
                selector.driver.is_some()
                    && !inventory
                        .all_devices()
                        .any(|device| selector.admits(device))
            })
        })
        .map(|class| (*class).to_owned())
        .collect();
    let mut unknown = None;
    let mut short = Vec::new();
    for group in inventory.groups() {
        match group_fit(claim, group, inventory) {
            GroupFit::Fits => return ClaimFit::Fits,
            GroupFit::Unknown(why) => unknown = unknown.or(Some(why)),
            GroupFit::Short(shortfall) => short.push((Nodes::of(group), shortfall)),
        }
    }
    match unknown {
        Some(why) => ClaimFit::Unknown(why),
        None if !unpublished.is_empty() => ClaimFit::NoDevices(unpublished),
        None if short.is_empty() => {
            ClaimFit::NoDevices(classes.into_iter().map(str::to_owned).collect())
        }
        None => ClaimFit::NoFit(short),
    }
}

/// The classes of the requests the fit counts.
fn counted_classes(claim: &DeviceClaim) -> BTreeSet<&str> {
    gpu_topology::sort::btree_set(
        claim
            .requests
            .iter()
            .flat_map(|request| request.choices.iter())
            .map(|choice| choice.device_class.as_str()),
    )
}

/// The devices of `class` on `group`, or why they are not known.
struct ClassDevices<'a> {
    /// Each distinct device once, with its count.
    devices: Vec<&'a Counted>,
    /// How many devices in all.
    published: u32,
    /// One of them may serve several requests.
    shared: bool,
    /// Every one of them may: only then is their capacity all there is to
    /// count (an exclusive device's capacity is not kept, and it may hold
    /// what a capacity request asks).
    all_shared: bool,
    /// The class's driver, which a bare capacity name belongs to.
    driver: &'a str,
}

/// The capacities `choice` requests, with fully qualified names.
fn capacity_requests<'c>(
    choice: &'c DeviceChoice,
    driver: &str,
) -> impl Iterator<Item = (String, &'c Quantity)> + 'c {
    let driver = driver.to_owned();
    choice
        .capacity
        .iter()
        .map(move |(name, amount)| (qualified(&driver, name), amount))
}

fn class_devices<'a>(
    class: &str,
    group: &'a DeviceGroup,
    inventory: &'a DraInventory,
) -> Result<ClassDevices<'a>, Unknown> {
    let selector: &ClassSelector = inventory
        .classes
        .get(class)
        .filter(|selector| selector.driver.is_some())
        .ok_or_else(|| Unknown::UnreadClass(class.to_owned()))?;
    let driver = selector.driver.as_deref().unwrap_or_default();
    if group.incomplete_drivers.contains(driver) {
        return Err(Unknown::PoolUpdating(driver.to_owned()));
    }
    if inventory
        .devices
        .unattached
        .iter()
        .any(|counted| selector.admits(&counted.device))
    {
        return Err(Unknown::SharedPool(class.to_owned()));
    }
    let devices: Vec<&Counted> = group
        .devices
        .iter()
        .filter(|counted| selector.admits(&counted.device))
        .collect();
    Ok(ClassDevices {
        shared: devices.iter().any(|counted| counted.device.shared),
        all_shared: devices.iter().all(|counted| counted.device.shared),
        published: devices
            .iter()
            .fold(0u32, |sum, counted| sum.saturating_add(counted.count)),
        devices,
        driver,
    })
}

/// The most of capacity `name` one of `devices` offers; `None` when none
/// offers it.
fn most_capacity<'d>(devices: impl Iterator<Item = &'d Device>, name: &str) -> Option<Quantity> {
    devices.filter_map(|device| device.capacity(name)).max()
}

/// The fit of `claim` on one group of nodes.
pub(crate) fn group_fit(
    claim: &DeviceClaim,
    group: &DeviceGroup,
    inventory: &DraInventory,
) -> GroupFit {
    // Condition 1, per class: the ExactCount `exactly` requests together;
    // a firstAvailable request needs one of its choices.
    for request in claim.requests.iter().filter(|r| r.is_first_available()) {
        let mut first_short = None;
        let mut satisfied = false;
        for choice in &request.choices {
            let devices = match class_devices(&choice.device_class, group, inventory) {
                Ok(devices) => devices,
                Err(why) => return GroupFit::Unknown(why),
            };
            match choice.mode {
                AllocationMode::ExactCount(count)
                    if !devices.shared && devices.published < count =>
                {
                    first_short.get_or_insert(Shortfall::Devices {
                        requests: vec![request.name.clone()],
                        class: choice.device_class.clone(),
                        needed: count,
                        published: devices.published,
                    });
                }
                _ => satisfied = true,
            }
        }
        if let (false, Some(shortfall)) = (satisfied, first_short) {
            return GroupFit::Short(shortfall);
        }
    }
    let per_class = class_demand(claim, |_| true);
    for (class, (needed, requests)) in &per_class {
        let devices = match class_devices(class, group, inventory) {
            Ok(devices) => devices,
            Err(why) => return GroupFit::Unknown(why),
        };
        if !devices.shared && devices.published < *needed {
            return GroupFit::Short(Shortfall::Devices {
                requests: requests.clone(),
                class: (*class).to_owned(),
                needed: *needed,
                published: devices.published,
            });
        }
    }
    // Condition 1, consumable capacity: one shared device must offer what
    // an `exactly` request asks of it.
    for request in claim.requests.iter().filter(|r| !r.is_first_available()) {
        for choice in request.choices.iter().filter(|c| !c.capacity.is_empty()) {
            let devices = match class_devices(&choice.device_class, group, inventory) {
                Ok(devices) => devices,
                Err(why) => return GroupFit::Unknown(why),
            };
            if !devices.shared || !devices.all_shared {
                continue;
            }
            for (name, needed) in capacity_requests(choice, devices.driver) {
                let most = most_capacity(devices.devices.iter().map(|c| &c.device), &name);
                if most.is_none_or(|most| most < *needed) {
                    return GroupFit::Short(Shortfall::Capacity {
                        request: request.name.clone(),
                        class: choice.device_class.clone(),
                        capacity: name,
                        needed: *needed,
                        most,
                        within: None,
                    });
                }
            }
        }
    }
    // Condition 2, per matchAttribute constraint.
    for constraint in &claim.constraints {
        let ConstraintRule::MatchAttribute(attribute) = &constraint.rule else {
            continue;
        };
        if let Some(shortfall) = one_value_shortfall(claim, constraint, attribute, group, inventory)
        {
            return match shortfall {
                Ok(shortfall) => GroupFit::Short(shortfall),
                Err(why) => GroupFit::Unknown(why),
            };
        }
    }
    GroupFit::Fits
}

/// Per class, the devices the claim's ExactCount `exactly` requests that
/// `counted` selects need together, and those requests.
fn class_demand(
    claim: &DeviceClaim,
    counted: impl Fn(&str) -> bool,
) -> BTreeMap<&str, (u32, Vec<String>)> {
    let mut per_class: BTreeMap<&str, (u32, Vec<String>)> = BTreeMap::new();
    for request in &claim.requests {
        if request.is_first_available() || !counted(&request.name) {
            continue;
        }
        for choice in &request.choices {
            if let AllocationMode::ExactCount(count) = choice.mode {
                let entry = per_class.entry(&choice.device_class).or_default();
                entry.0 = entry.0.saturating_add(count);
                entry.1.push(request.name.clone());
            }
        }
    }
    per_class
}

/// One class under a constraint: its name, the devices its requests need,
/// those requests, and how many of its devices hold each value.
type ClassCount<'a> = (&'a str, u32, Vec<String>, BTreeMap<&'a Atom, u32>);

/// A capacity request under a constraint: the request, its class, the
/// capacity and amount, and the most one device offers at each value.
type CapacityAtValues<'a> = (
    String,
    &'a str,
    String,
    Quantity,
    BTreeMap<&'a Atom, Quantity>,
);

/// The shortfall of one `matchAttribute` constraint on a group, if any.
fn one_value_shortfall(
    claim: &DeviceClaim,
    constraint: &crate::request::claim::DeviceConstraint,
    attribute: &str,
    group: &DeviceGroup,
    inventory: &DraInventory,
) -> Option<Result<Shortfall, Unknown>> {
    let per_class = class_demand(claim, |request| constraint.covers(request));
    let mut counted: Vec<ClassCount> = Vec::new();
    let mut capacities: Vec<CapacityAtValues> = Vec::new();
    for (class, (needed, requests)) in per_class {
        let devices = match class_devices(class, group, inventory) {
            Ok(devices) => devices,
            Err(why) => return Some(Err(why)),
        };
        if devices.shared && !devices.all_shared {
            // Shared and exclusive devices in one class: neither count is
            // sure, so nothing is counted (an upper bound).
            continue;
        }
        if devices.shared {
            // A shared device serves any number of requests: only what
            // they ask of its capacity is counted, per value.
            for request in claim
                .requests
                .iter()
                .filter(|r| !r.is_first_available() && constraint.covers(&r.name))
            {
                for choice in request.choices.iter().filter(|c| c.device_class == class) {
                    for (name, needed) in capacity_requests(choice, devices.driver) {
                        let mut most: BTreeMap<&Atom, Quantity> = BTreeMap::new();
                        for device in devices.devices.iter().map(|c| &c.device) {
                            let Some(offered) = device.capacity(&name) else {
                                continue;
                            };
                            for atom in device.attribute(attribute).map_or(&[][..], |v| &v.0) {
                                let best = most.entry(atom).or_insert(offered);
                                *best = (*best).max(offered);
                            }
                        }
                        capacities.push((request.name.clone(), class, name, *needed, most));
                    }
                }
            }
            continue;
        }
        let mut per_value: BTreeMap<&Atom, u32> = BTreeMap::new();
        for Counted { count, device } in &devices.devices {
            for atom in device.attribute(attribute).map_or(&[][..], |v| &v.0) {
                let held = per_value.entry(atom).or_default();
                *held = held.saturating_add(*count);
            }
        }
        counted.push((class, needed, requests, per_value));
    }
    let values: BTreeSet<&Atom> = match (counted.first(), capacities.first()) {
        (Some(first), _) => gpu_topology::sort::btree_set(first.3.keys().copied()),
        (None, Some(first)) => gpu_topology::sort::btree_set(first.4.keys().copied()),
        (None, None) => return None,
    };
    let holds = |value: &Atom| {
        counted
            .iter()
            .all(|(_, needed, _, per_value)| per_value.get(value).copied().unwrap_or(0) >= *needed)
            && capacities.iter().all(|(_, _, _, needed, most)| {
                most.get(value).is_some_and(|offered| offered >= needed)
            })
    };
    if values.iter().any(|value| holds(value)) {
        return None;
    }
    // A capacity no value offers is named first: it fails on its own.
    let capacity_short = |(request, class, name, needed, most): &CapacityAtValues| {
        let best = most.iter().max_by_key(|(_, offered)| **offered);
        Shortfall::Capacity {
            request: request.clone(),
            class: (*class).to_owned(),
            capacity: name.clone(),
            needed: *needed,
            most: best.map(|(_, offered)| *offered),
            within: Some((attribute.to_owned(), best.map(|(atom, _)| (*atom).clone()))),
        }
    };
    if let Some(alone) = capacities
        .iter()
        .find(|(_, _, _, needed, most)| most.values().all(|offered| offered < needed))
    {
        return Some(Ok(capacity_short(alone)));
    }
    // Else the class that falls shortest at its best value is named.
    let Some((class, needed, requests, per_value)) = counted
        .iter()
        .min_by_key(|(_, needed, _, per_value)| {
            let most = per_value.values().copied().max().unwrap_or(0);
            i64::from(most) - i64::from(*needed)
        })
        .cloned()
    else {
        return capacities.first().map(|first| Ok(capacity_short(first)));
    };
    let (at, most) = per_value
        .iter()
        .max_by_key(|(_, count)| **count)
        .map(|(atom, count)| (Some((*atom).clone()), *count))
        .unwrap_or((None, 0));
    Some(Ok(Shortfall::OneValue {
        attribute: attribute.to_owned(),
        requests,
        class: class.to_owned(),
        needed,
        most,
        at,
    }))
}
