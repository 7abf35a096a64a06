//! Dynamic Resource Allocation devices as the policy and the summarizer
//! read them: DeviceClasses and ResourceSlices (`resource.k8s.io/v1`,
//! `k8s.io/api/resource/v1/types.go`) reduced to what allocation decides on,
//! nodes grouped by the devices they publish, and that grouping's place in
//! the fleet summary ([`DRA_DEVICES_KEY`]).
//!
//! Kept of each device: its driver, the attributes a class selects on or an
//! alignment constraint could name (`numaNode`, `pcieRoot`, the NVIDIA
//! driver's Fabric Manager `partition<N>`), whether it may be allocated more
//! than once and, when it may, its consumable capacities (dra-driver-cpu's
//! `dra.cpu/cpu`). Device names, other capacities and every other attribute
//! are dropped. One reading for both sides: the policy
//! reads a ResourceSlice list through it, the summarizer writes the groups
//! the policy reads back, so the two cannot disagree.
//!
//! Behind the `dra` feature: it reads the API's JSON with serde.

pub use classes::{kept_attributes, parse_classes, ClassSelector, KeptAttributes};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The standard NUMA attribute (KEP-6072), scalar or, under
/// `DRAListTypeAttributes`, the list of same-socket nodes.
pub const STANDARD_NUMA_ATTRIBUTE: &str = "resource.kubernetes.io/numaNode";
/// The standard PCIe root attribute (`deviceattribute` `StandardDeviceAttributePCIeRoot`).
pub const STANDARD_PCIE_ROOT_ATTRIBUTE: &str = "resource.kubernetes.io/pcieRoot";
/// The NUMA attribute of dranet and the SR-IOV DRA driver
/// (`pkg/consts/consts.go`: "most-common nonstandard prefix").
pub const DRANET_NUMA_ATTRIBUTE: &str = "dra.net/numaNode";
/// The local name of the NVIDIA DRA driver's Fabric Manager partition
/// attributes, `partition1`, `partition2`, `partition4`, `partition8`: the ID
/// of the NVLink partition of that many GPUs holding the device, published on
/// VFIO devices under `FabricManagerPartitioning`
/// (`dra-driver-nvidia-gpu` `deviceinfo.go` `addFabricManagerAttributes`;
/// reference page "Fabric Manager partition attributes").
pub const PARTITION_ATTRIBUTE_PREFIX: &str = "partition";

/// The size of the partition a `<driver>/partition<N>` attribute names.
pub fn partition_size(qualified: &str) -> Option<u32> {
    let name = qualified.rsplit('/').next().unwrap_or(qualified);
    let digits = name.strip_prefix(PARTITION_ATTRIBUTE_PREFIX)?;
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|size| *size > 0)
}

/// One attribute value (types.go `DeviceAttribute`): exactly one of the
/// scalar fields, or a list under `DRAListTypeAttributes` (KEP-5491).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Atom {
    Int(i64),
    Bool(bool),
    String(String),
    Version(String),
}

impl std::fmt::Display for Atom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Atom::Int(value) => write!(f, "{value}"),
            Atom::Bool(value) => write!(f, "{value}"),
            Atom::String(value) | Atom::Version(value) => write!(f, "{value:?}"),
        }
    }
}

/// An attribute's values: one, or the list's (a list matches another on a
/// non-empty intersection, `internal/experimental/constraint.go`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AttributeValue(pub Vec<Atom>);

impl AttributeValue {
    pub fn holds(&self, atom: &Atom) -> bool {
        self.0.contains(atom)
    }
}

/// A published device, as allocation sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Device {
    pub driver: String,
    /// Fully qualified names (a bare key is the driver's: `type` of
    /// `gpu.nvidia.com` is `gpu.nvidia.com/type`, allocator `lookupAttribute`).
    pub attributes: BTreeMap<String, AttributeValue>,
    /// `allowMultipleAllocations`: one device can serve several requests.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    /// A shared device's capacities (fully qualified names), in Kubernetes'
    /// canonical quantity form: what its allocations consume
    /// (`DRAConsumableCapacity`, dra-driver-cpu's grouped `dra.cpu/cpu`).
    /// Empty for a device that is not shared: its capacity is not consumed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, String>,
}

impl Device {
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.attributes.get(name)
    }

    /// A shared device's capacity `name` (fully qualified); `None` when the
    /// device does not publish it, or its value does not read.
    pub fn capacity(&self, name: &str) -> Option<crate::quantity::Quantity> {
        self.capacity
            .get(name)
            .and_then(|text| crate::quantity::Quantity::parse(text).ok())
    }
}

/// `name` fully qualified: a bare name belongs to the driver (allocator
/// `lookupAttribute`; the same rule for capacities).
pub fn qualified(driver: &str, name: &str) -> String {
    if name.contains('/') {
        name.to_owned()
    } else {
        format!("{driver}/{name}")
    }
}

#[derive(Deserialize)]
struct List<T> {
    #[serde(default)]
    items: Vec<T>,
}

/// A ResourceSlice as the readers need it (a list item, or one object).
#[derive(Deserialize, Default)]
pub struct SliceItem {
    #[serde(default)]
    spec: SliceSpec,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SliceSpec {
    driver: String,
    node_name: Option<String>,
    pool: Pool,
    devices: Vec<SliceDevice>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Pool {
    name: String,
    generation: i64,
    resource_slice_count: i64,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SliceDevice {
    /// types.go `DeviceAttribute`s, checked by [`attribute_value`]. Read
    /// as JSON, not through readers derived for their eight fields: those
    /// and their maps were about 15 KB of the policy's module (issue #35).
    attributes: Attributes,
    allow_multiple_allocations: Option<bool>,
    /// types.go `DeviceCapacity`s, checked by [`capacity_value`].
    capacity: serde_json::Map<String, serde_json::Value>,
}

/// A device's attributes by name, each read with [`attribute_value`] as
/// soon as it is read: the JSON object of one attribute (a B-tree node) is
/// dropped at once, so a list of thousands of devices holds only their
/// values. A list whose attributes were kept as JSON needed more than
/// policy-server's 256 MiB at 5,000 nodes (BENCHMARKS.md).
#[derive(Default)]
struct Attributes(Vec<(String, Result<Option<AttributeValue>, String>)>);

impl<'de> Deserialize<'de> for Attributes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Attributes;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a map of device attributes")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Attributes, A::Error> {
                let mut attributes = Vec::new();
                while let Some((name, value)) = map.next_entry::<String, serde_json::Value>()? {
                    attributes.push((name, attribute_value(value)));
                }
                Ok(Attributes(attributes))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A `DeviceAttribute`'s value: `Some` when exactly one of its fields is
/// set (the API's rule), else `None`, read as if the device did not
/// publish it. A field of the wrong type is an error, as the API server
/// never stores one; unknown fields are passed over, and `null` is unset.
fn attribute_value(attribute: serde_json::Value) -> Result<Option<AttributeValue>, String> {
    use serde_json::Value;
    let Value::Object(fields) = attribute else {
        return Err(format!("{attribute} is not an object"));
    };
    fn int(value: &Value) -> Result<Atom, &'static str> {
        value.as_i64().map(Atom::Int).ok_or("an integer")
    }
    fn boolean(value: &Value) -> Result<Atom, &'static str> {
        value.as_bool().map(Atom::Bool).ok_or("true or false")
    }
    fn text(value: &Value) -> Result<String, &'static str> {
        value.as_str().map(str::to_owned).ok_or("a string")
    }
    /// A list's atoms; its first wrong element is named.
    fn list(
        value: &Value,
        atom: impl Fn(&Value) -> Result<Atom, &'static str>,
    ) -> Result<Vec<Atom>, String> {
        let elements = value
            .as_array()
            .ok_or_else(|| format!("{value} is not a list"))?;
        elements
            .iter()
            .map(|element| atom(element).map_err(|expected| format!("{element} is not {expected}")))
            .collect()
    }
    let one = |atom: Result<Atom, &'static str>, value: &Value| {
        atom.map(|atom| vec![atom])
            .map_err(|expected| format!("{value} is not {expected}"))
    };
    let mut values = Vec::new();
    for (field, value) in &fields {
        if value.is_null() {
            continue;
        }
        let atoms = match field.as_str() {
            "int" => one(int(value), value),
            "bool" => one(boolean(value), value),
            "string" => one(text(value).map(Atom::String), value),
            "version" => one(text(value).map(Atom::Version), value),
            "ints" => list(value, int),
            "bools" => list(value, boolean),
            "strings" => list(value, |v| text(v).map(Atom::String)),
            "versions" => list(value, |v| text(v).map(Atom::Version)),
            _ => continue,
        };
        values.push(atoms.map_err(|problem| format!("`{field}`: {problem}"))?);
    }
    Ok(match <[Vec<Atom>; 1]>::try_from(values) {
        Ok([atoms]) if !atoms.is_empty() => Some(AttributeValue(atoms)),
        _ => None,
    })
}

/// A `DeviceCapacity`'s `value` (a quantity; `requestPolicy` is not read):
/// `None` when unset, or when it does not read as a quantity (the device
/// then does not offer that capacity). A value that is not a string is an
/// error, as the API server never stores one.
fn capacity_value(capacity: &serde_json::Value) -> Result<Option<String>, String> {
    let value = match capacity {
        serde_json::Value::Object(fields) => fields.get("value"),
        other => return Err(format!("{other} is not an object")),
    };
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(crate::quantity::Quantity::parse(text)
            .ok()
            .map(|quantity| quantity.canonical())),
        Some(other) => Err(format!("`value`: {other} is not a string")),
    }
}

/// Nodes that publish the same devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceGroup {
    /// How many nodes.
    pub nodes: u32,
    /// The first nodes' names (sorted), for messages; at most [`EXAMPLE_NODES`].
    pub examples: Vec<String>,
    /// Each distinct device once, with how many the nodes publish; sorted.
    #[serde(deserialize_with = "counted_devices::deserialize")]
    pub devices: Vec<Counted>,
    /// Drivers with a pool mid-update on these nodes (fewer slices of its
    /// newest generation than `resourceSliceCount`): their devices may be
    /// more than listed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub incomplete_drivers: BTreeSet<String>,
}

/// Node names a group keeps for messages.
pub const EXAMPLE_NODES: usize = 3;

/// The devices of a cluster's ResourceSlices, grouped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DraDevices {
    /// The DeviceClasses the devices were read with, by name: in the fleet
    /// summary, so that a claim's decision needs no DeviceClass list of its
    /// own. `None` in a summary written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<BTreeMap<String, ClassSelector>>,
    pub groups: Vec<DeviceGroup>,
    /// Devices of slices not bound to one node (`nodeSelector`, `allNodes`,
    /// `perDeviceNodeSelection`): which nodes reach them is not read.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "counted_devices::deserialize"
    )]
    pub unattached: Vec<Counted>,
}

/// A device and how many identical ones there are: the summary's form, and
/// the form decisions count in (identical devices are not copied).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Counted {
    pub count: u32,
    pub device: Device,
}

impl Counted {
    /// `devices`, sorted, with identical ones counted once.
    pub fn runs(mut devices: Vec<Device>) -> Vec<Counted> {
        crate::sort::sort(&mut devices);
        let mut counted: Vec<Counted> = Vec::new();
        for device in devices {
            match counted.last_mut() {
                Some(last) if last.device == device => last.count = last.count.saturating_add(1),
                _ => counted.push(Counted { count: 1, device }),
            }
        }
        counted
    }
}

/// A counted device in the summary: its fields beside `count`, in one object.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CountedOut<'a> {
    count: u32,
    driver: &'a str,
    attributes: &'a BTreeMap<String, AttributeValue>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    shared: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    capacity: &'a BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CountedIn {
    count: u32,
    driver: String,
    #[serde(default)]
    attributes: BTreeMap<String, AttributeValue>,
    #[serde(default)]
    shared: bool,
    #[serde(default)]
    capacity: BTreeMap<String, String>,
}

impl Serialize for Counted {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CountedOut {
            count: self.count,
            driver: &self.device.driver,
            attributes: &self.device.attributes,
            shared: self.device.shared,
            capacity: &self.device.capacity,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let CountedIn {
            count,
            driver,
            attributes,
            shared,
            capacity,
        } = CountedIn::deserialize(deserializer)?;
        Ok(Counted {
            count,
            device: Device {
                driver,
                attributes,
                shared,
                capacity,
            },
        })
    }
}

impl DraDevices {
    /// Every distinct device of the cluster's groups (once per group, not
    /// per node nor per copy) and the unattached ones.
    pub fn all_devices(&self) -> impl Iterator<Item = &Device> {
        self.all_counted().map(|counted| &counted.device)
    }

    /// [`all_devices`](Self::all_devices), with how many copies each group
    /// (or the unattached slices) publishes.
    pub fn all_counted(&self) -> impl Iterator<Item = &Counted> {
        self.groups
            .iter()
            .flat_map(|group| group.devices.iter())
            .chain(self.unattached.iter())
    }

    pub fn node_count(&self) -> u64 {
        self.groups.iter().map(|group| u64::from(group.nodes)).sum()
    }

    /// The `draDevices` entry of the fleet summary.
    pub fn to_summary_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads the `draDevices` entry of the fleet summary.
    pub fn from_summary_text(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|error| {
            format!("the fleet summary's {DRA_DEVICES_KEY:?} cannot be read: {error}")
        })
    }

    /// The extended resources the classes map (KEP-5004), each with the
    /// nodes that publish a device of its class; empty without classes.
    pub fn extended_resources(&self) -> ExtendedResources {
        let Some(classes) = &self.classes else {
            return ExtendedResources::default();
        };
        let mut mapped = Vec::new();
        for (class, selector) in classes {
            let Some(resource) = &selector.extended_resource_name else {
                continue;
            };
            let mut entry = ExtendedResource {
                resource: resource.clone(),
                class: class.clone(),
                nodes: 0,
                examples: Vec::new(),
            };
            for group in &self.groups {
                if group.devices.iter().any(|c| selector.admits(&c.device)) {
                    entry.nodes = entry.nodes.saturating_add(group.nodes);
                    for node in &group.examples {
                        if entry.examples.len() < EXAMPLE_NODES {
                            entry.examples.push(node.clone());
                        }
                    }
                }
            }
            mapped.push(entry);
        }
        ExtendedResources(mapped)
    }
}

/// The fleet summary's data key for the DRA devices. A summary without it
/// was written by a summarizer that does not read ResourceSlices.
pub const DRA_DEVICES_KEY: &str = "draDevices";

/// The fleet summary's data key for the extended resources DeviceClasses
/// map (KEP-5004). Apart from [`DRA_DEVICES_KEY`] so that a pod's decision,
/// which only needs this, reads a few bytes and not every device group.
pub const DRA_EXTENDED_RESOURCES_KEY: &str = "draExtendedResources";

/// An extended resource a DeviceClass maps (`spec.extendedResourceName`,
/// KEP-5004). The scheduler allocates a pod's request of it from the class's
/// devices, in a claim of its own without constraints, on every node whose
/// allocatable lacks the resource (no device plugin serves it there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendedResource {
    /// `nvidia.com/gpu`.
    pub resource: String,
    /// The DeviceClass that maps it.
    pub class: String,
    /// Nodes whose ResourceSlices publish a device of the class.
    pub nodes: u32,
    /// The first of them (sorted per group), for messages.
    pub examples: Vec<String>,
}

/// The extended resources DeviceClasses map, as the summary holds them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExtendedResources(pub Vec<ExtendedResource>);

impl ExtendedResources {
    /// The mappings of `resource` (several classes may name one: the API
    /// asks for unique names but does not enforce it).
    pub fn of<'a>(&'a self, resource: &'a str) -> impl Iterator<Item = &'a ExtendedResource> {
        self.0
            .iter()
            .filter(move |entry| entry.resource == resource)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `draExtendedResources` entry of the fleet summary.
    pub fn to_summary_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads the `draExtendedResources` entry of the fleet summary.
    pub fn from_summary_text(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|error| {
            format!("the fleet summary's {DRA_EXTENDED_RESOURCES_KEY:?} cannot be read: {error}")
        })
    }
}

/// At most this many devices per group (and among the unattached ones),
/// copies counted: a ResourceSlice holds at most 128 devices, and a node
/// publishes few slices. The summary refuses a group past it, and a claim's
/// decision holds devices read from the ResourceSlice list to it too
/// ([`DraDevices::within_group_cap`]).
pub const MAX_GROUP_DEVICES: u64 = 1 << 16;

/// `Err` when `counted` holds more than [`MAX_GROUP_DEVICES`] devices.
#[inline(never)]
pub fn check_group_devices(counted: &[Counted]) -> Result<(), String> {
    let total: u64 = counted.iter().map(|c| u64::from(c.count)).sum();
    match total > MAX_GROUP_DEVICES {
        true => Err(format!(
            "{total} devices in one group of nodes, more than the {MAX_GROUP_DEVICES} read per group"
        )),
        false => Ok(()),
    }
}

impl DraDevices {
    /// `Err` when a group, or the unattached devices, hold more than
    /// [`MAX_GROUP_DEVICES`]: the cap a summary is read with, for devices
    /// read from the ResourceSlice list.
    pub fn within_group_cap(&self) -> Result<(), String> {
        self.groups
            .iter()
            .map(|group| &group.devices[..])
            .chain([&self.unattached[..]])
            .try_for_each(check_group_devices)
    }
}

/// Devices in the summary: identical devices once, with their count.
mod counted_devices {
    use super::Counted;
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Counted>, D::Error> {
        let counted = Vec::<Counted>::deserialize(deserializer)?;
        super::check_group_devices(&counted).map_err(serde::de::Error::custom)?;
        Ok(counted)
    }
}

/// A pool's newest generation, its `resourceSliceCount`, and the node and
/// devices of each of its slices of that generation.
type PoolSlices = (i64, i64, Vec<(Option<String>, Vec<Device>)>);

/// Nodes with the same devices (and pools mid-update), by count and first names.
type Grouping = BTreeMap<(Vec<Counted>, BTreeSet<String>), (u32, Vec<String>)>;

/// Groups ResourceSlices by node, slice by slice (a summarizer pages through
/// them). Only the newest generation of each pool counts ("A consumer must
/// only use ResourceSlices with the highest generation number", types.go
/// `ResourcePool`), so slices are kept per pool until [`finish`](Self::finish).
#[derive(Debug)]
pub struct DraBuilder {
    classes: BTreeMap<String, ClassSelector>,
    kept: KeptAttributes,
    /// (driver, pool) -> (generation, resourceSliceCount, slices of it).
    pools: BTreeMap<(String, String), PoolSlices>,
}

impl DraBuilder {
    /// A builder keeping the attributes `classes` select on, and every
    /// locality attribute.
    pub fn new(classes: &BTreeMap<String, ClassSelector>) -> Self {
        DraBuilder {
            classes: classes.clone(),
            kept: kept_attributes(classes),
            pools: BTreeMap::new(),
        }
    }

    /// Adds one ResourceSlice; an error names a device attribute or
    /// capacity of a type the API server never stores.
    pub fn add(&mut self, slice: SliceItem) -> Result<(), String> {
        let spec = slice.spec;
        let driver = spec.driver;
        let mut devices: Vec<Device> = Vec::with_capacity(spec.devices.len());
        for device in spec.devices {
            let mut attributes = BTreeMap::new();
            for (name, value) in device.attributes.0 {
                let qualified = qualified(&driver, &name);
                let value = value
                    .map_err(|problem| format!("device attribute {qualified:?}: {problem}"))?;
                if let Some(value) = value.filter(|_| self.kept.keeps(&qualified)) {
                    attributes.insert(qualified, value);
                }
            }
            let mut capacity = BTreeMap::new();
            for (name, value) in &device.capacity {
                let qualified = qualified(&driver, name);
                let value = capacity_value(value)
                    .map_err(|problem| format!("device capacity {qualified:?}: {problem}"))?;
                // Only a device that can be shared offers capacity.
                if let Some(value) =
                    value.filter(|_| device.allow_multiple_allocations == Some(true))
                {
                    capacity.insert(qualified, value);
                }
            }
            devices.push(Device {
                driver: driver.clone(),
                attributes,
                shared: device.allow_multiple_allocations.unwrap_or(false),
                capacity,
            });
        }
        let node = spec.node_name.filter(|name| !name.is_empty());
        let entry = self
            .pools
            .entry((driver, spec.pool.name))
            .or_insert((i64::MIN, 0, Vec::new()));
        if spec.pool.generation > entry.0 {
            *entry = (
                spec.pool.generation,
                spec.pool.resource_slice_count,
                Vec::new(),
            );
        }
        if spec.pool.generation == entry.0 {
            entry.2.push((node, devices));
        }
        Ok(())
    }

    /// Adds every item of a ResourceSlice list (JSON).
    pub fn add_list(&mut self, list: &[u8]) -> Result<(), String> {
        let list: List<SliceItem> = serde_json::from_slice(list)
            .map_err(|error| format!("the ResourceSlice list cannot be read: {error}"))?;
        for slice in list.items {
            self.add(slice)
                .map_err(|problem| format!("the ResourceSlice list cannot be read: {problem}"))?;
        }
        Ok(())
    }

    /// The groups.
    pub fn finish(self) -> DraDevices {
        let mut per_node: BTreeMap<String, (Vec<Device>, BTreeSet<String>)> = BTreeMap::new();
        let mut unattached = Vec::new();
        for ((driver, _), (_, count, slices)) in self.pools {
            let incomplete = (slices.len() as i64) < count;
            for (node, devices) in slices {
                match node {
                    Some(node) => {
                        let (node_devices, drivers) = per_node.entry(node).or_default();
                        node_devices.extend(devices);
                        if incomplete {
                            drivers.insert(driver.clone());
                        }
                    }
                    None => unattached.extend(devices),
                }
            }
        }
        let mut groups: Grouping = BTreeMap::new();
        for (node, (devices, incomplete)) in per_node {
            let (count, examples) = groups
                .entry((Counted::runs(devices), incomplete))
                .or_default();
            *count = count.saturating_add(1);
            if examples.len() < EXAMPLE_NODES {
                examples.push(node);
            }
        }
        let unattached = Counted::runs(unattached);
        DraDevices {
            classes: Some(self.classes),
            groups: groups
                .into_iter()
                .map(
                    |((devices, incomplete_drivers), (nodes, examples))| DeviceGroup {
                        nodes,
                        examples,
                        devices,
                        incomplete_drivers,
                    },
                )
                .collect(),
            unattached,
        }
    }
}

mod classes;
#[cfg(test)]
mod tests;
