//! The devices Dynamic Resource Allocation drivers publish, as a claim's
//! decision reads them: the DeviceClasses (listed, they are few), and the
//! ResourceSlices grouped by node (`gpu_topology::dra`), from the fleet
//! summary when the settings read it and its summarizer wrote them, else
//! from the ResourceSlice list.
//!
//! The summary keeps the claim path flat in the fleet's size: its groups
//! are a few lines whatever the node count, where the slice list grows
//! with every node.

use crate::cluster::fleet_summary;
use crate::cluster::host::ClusterReader;
use crate::request::claim::RESOURCE_API_VERSION;
use crate::settings::FleetSources;
use gpu_topology::dra::{parse_classes, DraBuilder, DRA_DEVICES_KEY};
pub use gpu_topology::dra::{
    partition_size, qualified, Atom, AttributeValue, ClassSelector, Counted, Device, DeviceGroup,
    DraDevices, DRANET_NUMA_ATTRIBUTE, PARTITION_ATTRIBUTE_PREFIX, STANDARD_NUMA_ATTRIBUTE,
    STANDARD_PCIE_ROOT_ATTRIBUTE,
};
use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;
use std::collections::BTreeMap;

/// The cluster's DRA devices and classes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DraInventory {
    pub classes: BTreeMap<String, ClassSelector>,
    pub devices: DraDevices,
}

impl DraInventory {
    /// Every distinct device of the cluster's groups and the unattached ones.
    pub(crate) fn all_devices(&self) -> impl Iterator<Item = &Device> {
        self.devices.all_devices()
    }

    /// [`all_devices`](Self::all_devices) with their counts.
    pub(crate) fn all_counted(&self) -> impl Iterator<Item = &Counted> {
        self.devices.all_counted()
    }

    pub fn groups(&self) -> &[DeviceGroup] {
        &self.devices.groups
    }
}

/// The DeviceClass list request: names, selectors and the extended
/// resource each maps.
pub fn device_class_request() -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: RESOURCE_API_VERSION.to_owned(),
        kind: "DeviceClass".to_owned(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(gpu_topology::sort::btree_set([
            "metadata.name".to_owned(),
            "spec.selectors".to_owned(),
            "spec.extendedResourceName".to_owned(),
        ])),
    }
}

/// The ResourceSlice list request: what [`DraDevices`] keeps.
pub fn resource_slice_request() -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: RESOURCE_API_VERSION.to_owned(),
        kind: "ResourceSlice".to_owned(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(gpu_topology::sort::btree_set(
            [
                "spec.driver",
                "spec.nodeName",
                "spec.pool",
                "spec.devices.attributes",
                "spec.devices.allowMultipleAllocations",
                "spec.devices.capacity",
            ]
            .map(str::to_owned),
        )),
    }
}

/// Reads the devices and their DeviceClasses: from the fleet summary where
/// `sources` read one and it is fresh and holds them (one `get_resource`
/// call; the classes are listed only when a summarizer older than them
/// wrote it), else the DeviceClass list and the ResourceSlice list where
/// `sources` allow listing. `Err` says why they are not known (the caller
/// quotes it).
pub(crate) fn read_inventory(
    cluster: &dyn ClusterReader,
    sources: &FleetSources,
) -> Result<DraInventory, String> {
    // A summary that is missing, stale, without draDevices or with ones
    // that do not read falls back to the slice list, where listing is allowed.
    let mut passed_over = "the fleet summary is not read (capacity.source)".to_owned();
    if let Some(summary) = &sources.summary {
        let summarized = fleet_summary::read_fresh_data(
            cluster,
            summary,
            fleet_summary::now,
            fleet_summary::Entries::Only(&[DRA_DEVICES_KEY]),
        )
        .and_then(|data| {
            let text = data.get(DRA_DEVICES_KEY).ok_or_else(|| {
                "the fleet summary holds no DRA devices (its summarizer runs without --dra)"
                    .to_owned()
            })?;
            DraDevices::from_summary_text(text)
        });
        match summarized {
            Ok(mut devices) => {
                let classes = match devices.classes.take() {
                    Some(classes) => classes,
                    None => list_classes(cluster)?,
                };
                return Ok(DraInventory { classes, devices });
            }
            Err(problem) => passed_over = problem,
        }
    }
    if !sources.node_list {
        return Err(format!(
            "{passed_over}, and capacity.source does not list ResourceSlices"
        ));
    }
    let classes = list_classes(cluster)?;
    let slices = cluster
        .list_all_resources(&resource_slice_request())
        .map_err(|error| format!("the ResourceSlice list: {error}"))?;
    let mut builder = DraBuilder::new(&classes);
    builder.add_list(&slices)?;
    let mut devices = builder.finish();
    devices.classes = None;
    Ok(DraInventory { classes, devices })
}

/// The cluster's DeviceClasses, listed.
fn list_classes(cluster: &dyn ClusterReader) -> Result<BTreeMap<String, ClassSelector>, String> {
    let classes = cluster
        .list_all_resources(&device_class_request())
        .map_err(|error| format!("the DeviceClass list: {error}"))?;
    parse_classes(&classes)
}
