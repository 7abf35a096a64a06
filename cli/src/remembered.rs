//! The cluster read once for a whole run: the tool explains many objects
//! against one unchanging fleet, so the Node list (10 MB at 5,000 nodes) is
//! parsed once per pinned node rather than once per object.

use gpu_topology::LabelPrefix;
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::cluster::{self, ClusterRead};
use gpu_topology_policy::settings::FleetSources;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use std::cell::RefCell;

/// What a read depends on: the settings' sources and prefix, and the node
/// a pinned pod names.
type Key = (FleetSources, LabelPrefix, Option<String>);

/// A [`ClusterReader`] that answers as `inner` and remembers each cluster
/// view the policy reads through it ([`ClusterReader::remembered_read`]).
pub struct Remembering<'a> {
    inner: &'a dyn ClusterReader,
    reads: RefCell<Vec<(Key, ClusterRead)>>,
}

impl<'a> Remembering<'a> {
    pub fn new(inner: &'a dyn ClusterReader) -> Self {
        Remembering {
            inner,
            reads: RefCell::new(Vec::new()),
        }
    }
}

impl ClusterReader for Remembering<'_> {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.inner.list_all_resources(request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        self.inner.get_resource(request)
    }

    fn remembered_read(
        &self,
        sources: &FleetSources,
        prefix: &LabelPrefix,
        pinned_node: Option<&str>,
    ) -> Option<ClusterRead> {
        let same = |(key, _): &&(Key, ClusterRead)| {
            key.0 == *sources && key.1 == *prefix && key.2.as_deref() == pinned_node
        };
        if let Some((_, read)) = self.reads.borrow().iter().find(same) {
            return Some(read.clone());
        }
        // The policy's own read, over the inner reader's answers.
        let read = cluster::read(self.inner, sources, prefix, pinned_node);
        let key = (
            sources.clone(),
            prefix.clone(),
            pinned_node.map(str::to_owned),
        );
        self.reads.borrow_mut().push((key, read.clone()));
        Some(read)
    }
}
