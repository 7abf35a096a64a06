//! The cluster as it would read after a what-if's kubelet changes: the
//! answers of the real reader (files or live), with the changed nodes'
//! labels rewritten as the labeler would publish them. The policy's code
//! then reads it exactly as it reads the cluster.

use crate::what_if::change::FleetChange;
use gpu_topology::summary::GROUPS_KEY;
use gpu_topology::{Fleet, FleetSummary, LabelKey, LabelPrefix, NodeTopology};
use gpu_topology_policy::cluster::host::ClusterReader;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::{Map, Value};

/// [`ClusterReader`] answering as `base` would after `change`.
pub struct ChangedCluster<'a> {
    pub base: &'a dyn ClusterReader,
    pub change: &'a FleetChange,
    pub prefix: &'a LabelPrefix,
}

impl ClusterReader for ChangedCluster<'_> {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let answer = self.base.list_all_resources(request)?;
        if request.kind != "Node" {
            return Ok(answer);
        }
        // An answer the policy cannot read stays as it is: the policy says why.
        let Ok(mut list) = serde_json::from_slice::<Value>(&answer) else {
            return Ok(answer);
        };
        let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) else {
            return Ok(answer);
        };
        for labels in items
            .iter_mut()
            .filter_map(|item| item.pointer_mut("/metadata/labels"))
            .filter_map(Value::as_object_mut)
        {
            self.relabel(labels);
        }
        serde_json::to_vec(&list).map_err(|error| error.to_string())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let answer = self.base.get_resource(request)?;
        if request.kind != "ConfigMap" {
            return Ok(answer);
        }
        Ok(self.summary_after(&answer).unwrap_or(answer))
    }
}

impl ChangedCluster<'_> {
    /// Rewrites one node's labels after the change, as the labeler would:
    /// the changed settings and the shape; every other label as it was.
    fn relabel(&self, labels: &mut Map<String, Value>) {
        let texts = labels
            .iter()
            .filter_map(|(key, value)| Some((key.as_str(), value.as_str()?)));
        // Malformed labels stay: the policy leaves the node out and says so.
        let Ok(topology) = NodeTopology::from_labels(self.prefix, texts) else {
            return;
        };
        let Some(changed) = self.change.apply(&topology, self.prefix) else {
            return;
        };
        for setting in &self.change.settings {
            labels.insert(
                self.prefix.key(setting.key),
                Value::String(setting.value.clone()),
            );
        }
        if let Some(shape) = changed.shape {
            labels.insert(
                self.prefix.key(LabelKey::Shape),
                Value::String(shape.to_string()),
            );
        }
    }

    /// The fleet summary ConfigMap after the change; `None` for any other
    /// object, or a summary the policy would not read anyway.
    fn summary_after(&self, answer: &[u8]) -> Option<Vec<u8>> {
        let mut config_map: Value = serde_json::from_slice(answer).ok()?;
        let data = config_map.get_mut("data")?.as_object_mut()?;
        data.get(GROUPS_KEY)?;
        let entries = data
            .iter()
            .filter_map(|(key, value)| Some((key.as_str(), value.as_str()?)));
        let summary = FleetSummary::from_data(entries).ok()?;
        let mut fleet = Fleet::new();
        for group in summary.fleet.groups() {
            let topology = self
                .change
                .apply(&group.topology, self.prefix)
                .unwrap_or_else(|| group.topology.clone());
            fleet.add_nodes(topology, group.nodes);
        }
        let changed = FleetSummary { fleet, ..summary };
        for (key, value) in changed.to_data() {
            data.insert(key, Value::String(value));
        }
        serde_json::to_vec(&config_map).ok()
    }
}
