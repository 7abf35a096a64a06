//! The devices Dynamic Resource Allocation drivers publish: DeviceClasses
//! and ResourceSlices (`resource.k8s.io/v1`), read through the host's
//! `list_resources_all` and grouped by node, so that a claim's fit is
//! counted once per group of nodes that publish the same devices.
//!
//! Only what allocation decides on is kept: each device's driver, the
//! attributes a class selects on or a NUMA constraint could name, and
//! whether it may be allocated more than once. Device names, capacities
//! and everything else are dropped (field masks keep them off the wire).

use crate::cluster::host::ClusterReader;
use crate::request::claim::RESOURCE_API_VERSION;
use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The standard NUMA attribute (KEP-6072), scalar or, under
/// `DRAListTypeAttributes`, the list of same-socket nodes.
pub const STANDARD_NUMA_ATTRIBUTE: &str = "resource.kubernetes.io/numaNode";
/// The standard PCIe root attribute (`deviceattribute` `StandardDeviceAttributePCIeRoot`).
pub const STANDARD_PCIE_ROOT_ATTRIBUTE: &str = "resource.kubernetes.io/pcieRoot";
/// The NUMA attribute of dranet and the SR-IOV DRA driver
/// (`pkg/consts/consts.go`: "most-common nonstandard prefix").
pub const DRANET_NUMA_ATTRIBUTE: &str = "dra.net/numaNode";

/// One attribute value (types.go `DeviceAttribute`): exactly one of the
/// scalar fields, or a list under `DRAListTypeAttributes` (KEP-5491).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttributeValue(pub Vec<Atom>);

impl AttributeValue {
    pub fn holds(&self, atom: &Atom) -> bool {
        self.0.contains(atom)
    }
}

/// A published device, as allocation sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Device {
    pub driver: String,
    /// Fully qualified names (a bare key is the driver's: `type` of
    /// `gpu.nvidia.com` is `gpu.nvidia.com/type`, allocator `lookupAttribute`).
    pub attributes: BTreeMap<String, AttributeValue>,
    /// `allowMultipleAllocations`: one device can serve several requests.
    pub shared: bool,
}

impl Device {
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.attributes.get(name)
    }
}

/// What a DeviceClass selects, as far as the policy reads its CEL: the
/// driver, and attribute equalities. A clause it does not read only narrows
/// the class further, so the devices it matches are an upper bound then.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassSelector {
    pub driver: Option<String>,
    pub equals: Vec<(String, Atom)>,
    /// A clause was not read: the class may select fewer devices.
    pub narrower: bool,
}

impl ClassSelector {
    /// Whether `device` can be one of the class's (exactly, unless
    /// [`narrower`](Self::narrower)).
    pub fn admits(&self, device: &Device) -> bool {
        self.driver.as_deref() == Some(device.driver.as_str())
            && self.equals.iter().all(|(name, atom)| {
                device
                    .attribute(name)
                    .is_some_and(|value| value.0.len() == 1 && value.holds(atom))
            })
    }
}

/// Nodes whose ResourceSlices publish the same devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroup {
    /// Sorted.
    pub nodes: Vec<String>,
    pub devices: Vec<Device>,
    /// Drivers with a pool mid-update on these nodes (fewer slices of its
    /// newest generation than `resourceSliceCount`): their devices may be
    /// more than listed.
    pub incomplete_drivers: BTreeSet<String>,
}

/// The cluster's DRA devices and classes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DraInventory {
    pub classes: BTreeMap<String, ClassSelector>,
    pub groups: Vec<NodeGroup>,
    /// Devices of slices not bound to one node (`nodeSelector`, `allNodes`,
    /// `perDeviceNodeSelection`): which nodes reach them is not read.
    pub unattached: Vec<Device>,
}

impl DraInventory {
    /// Every device of the cluster, once.
    pub fn all_devices(&self) -> impl Iterator<Item = &Device> {
        self.groups
            .iter()
            .flat_map(|group| group.devices.iter())
            .chain(self.unattached.iter())
    }

    pub fn node_count(&self) -> usize {
        self.groups.iter().map(|group| group.nodes.len()).sum()
    }
}

/// The DeviceClass list request: names and selectors only.
pub fn device_class_request() -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: RESOURCE_API_VERSION.to_owned(),
        kind: "DeviceClass".to_owned(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(BTreeSet::from([
            "metadata.name".to_owned(),
            "spec.selectors".to_owned(),
        ])),
    }
}

/// The ResourceSlice list request: what [`DraInventory`] keeps.
pub fn resource_slice_request() -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: RESOURCE_API_VERSION.to_owned(),
        kind: "ResourceSlice".to_owned(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(
            [
                "spec.driver",
                "spec.nodeName",
                "spec.pool",
                "spec.devices.attributes",
                "spec.devices.allowMultipleAllocations",
            ]
            .map(str::to_owned)
            .into(),
        ),
    }
}

/// Reads the DeviceClasses and ResourceSlices, or says why they are not
/// known (the host's error, quoted by the caller).
pub fn read_inventory(cluster: &dyn ClusterReader) -> Result<DraInventory, String> {
    let classes = cluster
        .list_all_resources(&device_class_request())
        .map_err(|error| format!("the DeviceClass list: {error}"))?;
    let classes = parse_classes(&classes)?;
    let slices = cluster
        .list_all_resources(&resource_slice_request())
        .map_err(|error| format!("the ResourceSlice list: {error}"))?;
    let kept = kept_attributes(&classes);
    let (groups, unattached) = parse_slices(&slices, &kept)?;
    Ok(DraInventory {
        classes,
        groups,
        unattached,
    })
}

#[derive(Deserialize)]
struct List<T> {
    #[serde(default)]
    items: Vec<T>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    name: String,
}

#[derive(Deserialize, Default)]
struct DeviceClassItem {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    spec: DeviceClassSpec,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DeviceClassSpec {
    selectors: Vec<Selector>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Selector {
    cel: Option<CelSelector>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CelSelector {
    expression: String,
}

/// The classes of a DeviceClass list, by name.
pub fn parse_classes(list: &[u8]) -> Result<BTreeMap<String, ClassSelector>, String> {
    let list: List<DeviceClassItem> = serde_json::from_slice(list)
        .map_err(|error| format!("the DeviceClass list cannot be read: {error}"))?;
    Ok(list
        .items
        .into_iter()
        .map(|class| {
            let mut selector = ClassSelector::default();
            for expression in class.spec.selectors.iter().map(|selector| {
                selector
                    .cel
                    .as_ref()
                    .map_or("", |cel| cel.expression.as_str())
            }) {
                read_expression(expression, &mut selector);
            }
            (class.metadata.name, selector)
        })
        .collect())
}

/// Reads the clauses of one CEL selector that the policy understands:
/// `device.driver == "x"` and `device.attributes["domain"].name == value`,
/// joined by `&&`. Anything else (`||`, negation, functions) marks the
/// class as possibly narrower, never wider: a selector only removes devices.
fn read_expression(expression: &str, selector: &mut ClassSelector) {
    if expression.contains("||") || expression.contains('(') {
        selector.narrower = true;
        return;
    }
    for clause in expression.split("&&").map(str::trim) {
        match read_clause(clause) {
            Some(Clause::Driver(driver)) => match &selector.driver {
                Some(known) if *known != driver => selector.narrower = true,
                _ => selector.driver = Some(driver),
            },
            Some(Clause::Equals(name, atom)) => selector.equals.push((name, atom)),
            None => selector.narrower = true,
        }
    }
}

enum Clause {
    Driver(String),
    Equals(String, Atom),
}

fn read_clause(clause: &str) -> Option<Clause> {
    let (left, right) = clause.split_once("==")?;
    let (left, right) = (left.trim(), right.trim());
    if right.contains("==") || left.contains('!') {
        return None;
    }
    if left == "device.driver" {
        return quoted(right).map(|driver| Clause::Driver(driver.to_owned()));
    }
    let rest = left.strip_prefix("device.attributes[")?;
    let (domain, rest) = rest.split_once(']')?;
    let name = rest.strip_prefix('.')?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let atom = match quoted(right) {
        Some(text) => Atom::String(text.to_owned()),
        None => match right {
            "true" => Atom::Bool(true),
            "false" => Atom::Bool(false),
            number => Atom::Int(number.parse().ok()?),
        },
    };
    Some(Clause::Equals(format!("{}/{name}", quoted(domain)?), atom))
}

/// The text inside `"…"` or `'…'`, when it has no quote or escape inside.
fn quoted(text: &str) -> Option<&str> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .or_else(|| text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))?;
    (!inner.contains(['"', '\'', '\\'])).then_some(inner)
}

/// The attributes worth keeping: those the classes select on, and every
/// `numaNode` and `pcieRoot` (what an alignment constraint could name).
struct KeptAttributes {
    named: BTreeSet<String>,
}

impl KeptAttributes {
    fn keeps(&self, qualified: &str) -> bool {
        let name = qualified.rsplit('/').next().unwrap_or(qualified);
        name == "numaNode" || name == "pcieRoot" || self.named.contains(qualified)
    }
}

fn kept_attributes(classes: &BTreeMap<String, ClassSelector>) -> KeptAttributes {
    KeptAttributes {
        named: classes
            .values()
            .flat_map(|class| class.equals.iter().map(|(name, _)| name.clone()))
            .collect(),
    }
}

#[derive(Deserialize, Default)]
struct SliceItem {
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
    attributes: BTreeMap<String, RawAttribute>,
    allow_multiple_allocations: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawAttribute {
    int: Option<i64>,
    bool: Option<bool>,
    string: Option<String>,
    version: Option<String>,
    ints: Option<Vec<i64>>,
    bools: Option<Vec<bool>>,
    strings: Option<Vec<String>>,
    versions: Option<Vec<String>>,
}

impl RawAttribute {
    /// The value, when exactly one field is set (the API's rule); else
    /// `None`, read as if the device did not publish it.
    fn value(self) -> Option<AttributeValue> {
        let mut values = Vec::new();
        values.extend(self.int.map(|v| vec![Atom::Int(v)]));
        values.extend(self.bool.map(|v| vec![Atom::Bool(v)]));
        values.extend(self.string.map(|v| vec![Atom::String(v)]));
        values.extend(self.version.map(|v| vec![Atom::Version(v)]));
        values.extend(self.ints.map(|v| v.into_iter().map(Atom::Int).collect()));
        values.extend(self.bools.map(|v| v.into_iter().map(Atom::Bool).collect()));
        values.extend(
            self.strings
                .map(|v| v.into_iter().map(Atom::String).collect()),
        );
        values.extend(
            self.versions
                .map(|v| v.into_iter().map(Atom::Version).collect()),
        );
        match <[Vec<Atom>; 1]>::try_from(values) {
            Ok([atoms]) if !atoms.is_empty() => Some(AttributeValue(atoms)),
            _ => None,
        }
    }
}

type Slices = (Vec<NodeGroup>, Vec<Device>);

/// The devices of a ResourceSlice list, grouped by node. Only the newest
/// generation of each pool counts ("A consumer must only use ResourceSlices
/// with the highest generation number", types.go `ResourcePool`).
fn parse_slices(list: &[u8], kept: &KeptAttributes) -> Result<Slices, String> {
    let list: List<SliceItem> = serde_json::from_slice(list)
        .map_err(|error| format!("the ResourceSlice list cannot be read: {error}"))?;
    let mut newest: BTreeMap<(String, String), (i64, i64, usize)> = BTreeMap::new();
    for slice in &list.items {
        let spec = &slice.spec;
        let key = (spec.driver.clone(), spec.pool.name.clone());
        let entry = newest.entry(key).or_insert((i64::MIN, 0, 0));
        if spec.pool.generation > entry.0 {
            *entry = (spec.pool.generation, spec.pool.resource_slice_count, 0);
        }
        if spec.pool.generation == entry.0 {
            entry.2 += 1;
        }
    }
    let mut per_node: BTreeMap<String, (Vec<Device>, BTreeSet<String>)> = BTreeMap::new();
    let mut unattached = Vec::new();
    for slice in list.items {
        let spec = slice.spec;
        let key = (spec.driver.clone(), spec.pool.name.clone());
        let Some(&(generation, count, seen)) = newest.get(&key) else {
            continue;
        };
        if spec.pool.generation != generation {
            continue;
        }
        let devices = spec.devices.into_iter().map(|device| Device {
            driver: spec.driver.clone(),
            attributes: device
                .attributes
                .into_iter()
                .filter_map(|(name, value)| {
                    let qualified = if name.contains('/') {
                        name
                    } else {
                        format!("{}/{name}", spec.driver)
                    };
                    if !kept.keeps(&qualified) {
                        return None;
                    }
                    value.value().map(|value| (qualified, value))
                })
                .collect(),
            shared: device.allow_multiple_allocations.unwrap_or(false),
        });
        match spec.node_name.filter(|name| !name.is_empty()) {
            Some(node) => {
                let (node_devices, incomplete) = per_node.entry(node).or_default();
                node_devices.extend(devices);
                if (seen as i64) < count {
                    incomplete.insert(spec.driver.clone());
                }
            }
            None => unattached.extend(devices),
        }
    }
    let mut groups: BTreeMap<(Vec<Device>, BTreeSet<String>), Vec<String>> = BTreeMap::new();
    for (node, (mut devices, incomplete)) in per_node {
        devices.sort();
        groups.entry((devices, incomplete)).or_default().push(node);
    }
    let groups = groups
        .into_iter()
        .map(|((devices, incomplete_drivers), nodes)| NodeGroup {
            nodes,
            devices,
            incomplete_drivers,
        })
        .collect();
    Ok((groups, unattached))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case::nvidia_gpu(
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        Some("gpu.nvidia.com"), vec![("gpu.nvidia.com/type", Atom::String("gpu".into()))], false
    )]
    #[case::intel_double_quotes("device.driver == \"gpu.intel.com\"", Some("gpu.intel.com"), vec![], false)]
    #[case::an_or_is_not_read(
        "device.attributes[\"gpu.intel.com\"].driver == 'vfio-pci' || device.attributes[\"gpu.intel.com\"].driver == 'xe-vfio-pci'",
        None, vec![], true
    )]
    // deviceclasses/nics.yaml `rdma-net`: read as written, an attribute
    // `bool` of domain `dra.rdma`, which dranet does not publish.
    #[case::an_attribute_no_driver_publishes(
        "device.driver == \"dra.net\" && device.attributes[\"dra.rdma\"].bool == true",
        Some("dra.net"), vec![("dra.rdma/bool", Atom::Bool(true))], false
    )]
    #[case::a_rdma_flag(
        "device.driver == \"dra.net\" && device.attributes[\"dra.net\"].rdma == true",
        Some("dra.net"), vec![("dra.net/rdma", Atom::Bool(true))], false
    )]
    fn class_selectors_are_read_clause_by_clause(
        #[case] expression: &str,
        #[case] driver: Option<&str>,
        #[case] equals: Vec<(&str, Atom)>,
        #[case] narrower: bool,
    ) {
        let mut selector = ClassSelector::default();
        read_expression(expression, &mut selector);
        let equals: Vec<(String, Atom)> = equals
            .into_iter()
            .map(|(name, atom)| (name.to_owned(), atom))
            .collect();
        assert_eq!(
            selector,
            ClassSelector {
                driver: driver.map(str::to_owned),
                equals,
                narrower
            }
        );
    }

    fn slice(
        node: &str,
        pool: &str,
        generation: i64,
        count: i64,
        numa: &[i64],
    ) -> serde_json::Value {
        json!({"spec": {
            "driver": "gpu.nvidia.com", "nodeName": node,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            "devices": numa.iter().map(|n| json!({"name": "gpu", "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": "dropped"},
                "resource.kubernetes.io/numaNode": {"int": n}
            }})).collect::<Vec<_>>()
        }})
    }

    #[test]
    fn slices_group_nodes_by_devices_and_keep_the_newest_generation() {
        let list = json!({"items": [
            slice("a", "a", 1, 1, &[0, 0, 1, 1]),
            slice("b", "b", 2, 1, &[0, 0, 1, 1]),
            slice("b", "b", 1, 1, &[0]),
            slice("c", "c", 3, 2, &[0]),
        ]});
        let kept = KeptAttributes {
            named: BTreeSet::from(["gpu.nvidia.com/type".to_owned()]),
        };
        let (groups, unattached) = parse_slices(list.to_string().as_bytes(), &kept).unwrap();
        assert!(unattached.is_empty());
        assert_eq!(groups.len(), 2);
        let four = groups.iter().find(|g| g.devices.len() == 4).unwrap();
        assert_eq!(four.nodes, ["a", "b"]);
        assert_eq!(
            four.devices[0].attributes.len(),
            2,
            "productName is dropped"
        );
        let half = groups.iter().find(|g| g.nodes == ["c"]).unwrap();
        assert_eq!(
            half.incomplete_drivers,
            BTreeSet::from(["gpu.nvidia.com".to_owned()])
        );
    }

    #[rstest]
    #[case::int(json!({"int": 1}), Some(vec![Atom::Int(1)]))]
    #[case::list(json!({"ints": [0, 1]}), Some(vec![Atom::Int(0), Atom::Int(1)]))]
    #[case::two_fields(json!({"int": 1, "string": "x"}), None)]
    #[case::none(json!({}), None)]
    fn an_attribute_value_has_exactly_one_field(
        #[case] raw: serde_json::Value,
        #[case] atoms: Option<Vec<Atom>>,
    ) {
        let raw: RawAttribute = serde_json::from_value(raw).unwrap();
        assert_eq!(raw.value(), atoms.map(AttributeValue));
    }
}
