//! What the decision reads from a GPU pod's spec, once, before any stage
//! runs: the devices it asks for as a [`Demand`], and the node it is pinned
//! to.

use crate::decide::demand::{Demand, PodDevices};
use crate::request::pod::{pinned_node, Pinned};
use crate::settings::Config;
use serde_json::Value;

/// What the decision reads from a GPU pod's spec, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInput<'a> {
    pub demand: Demand,
    /// The node the pod is pinned to, if any: by `spec.nodeName`, or by
    /// required affinity on the node's name (DaemonSet pods).
    pub pinned: Option<Pinned<'a>>,
}

impl<'a> PodInput<'a> {
    /// The input of the PodSpec `spec`; `Ok(None)` when it is no GPU pod,
    /// `Err` when a GPU count is malformed.
    pub fn read(spec: &'a Value, config: &Config) -> Result<Option<Self>, String> {
        let pod = PodDevices::from_pod_spec_with(spec, &config.gpu_resources, &config.devices)?;
        let demand = Demand::new(pod, config.topology.scope);
        Ok(demand.is_gpu_pod().then(|| PodInput {
            demand,
            pinned: pinned_node(spec),
        }))
    }

    pub fn pinned_node(&self) -> Option<&'a str> {
        self.pinned.map(|pinned| pinned.node)
    }
}
