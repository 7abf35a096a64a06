//! Where the fleet comes from: files (`--nodes`, `--summary`) or a live
//! cluster. Both end as a [`ClusterReader`], the seam the policy's own
//! cluster reading goes through, so the decision code cannot tell them
//! apart from policy-server.

pub mod files;
pub mod live;
pub mod masks;
pub mod selector;

use crate::args::FleetArgs;
use files::{FileCluster, FleetFileError};
use gpu_topology_policy::cluster::host::ClusterReader;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use live::{ConnectError, Credentials, LiveCluster};
use std::fmt;

/// The fleet the arguments name.
pub enum FleetSource {
    /// `--nodes` and/or `--summary`.
    Files(FileCluster),
    /// Neither: the cluster of the kubeconfig, or in-cluster.
    Live(Box<dyn ClusterReader>),
}

impl FleetSource {
    /// The reader the policy's decision code is handed.
    pub fn reader(&self) -> &dyn ClusterReader {
        match self {
            FleetSource::Files(files) => files,
            FleetSource::Live(live) => live.as_ref(),
        }
    }

    /// The Nodes that name each shape's nodes: the Node file's (a live
    /// read does not keep them).
    pub fn nodes(&self) -> &[serde_json::Value] {
        match self {
            FleetSource::Files(files) => files.nodes(),
            FleetSource::Live(_) => &[],
        }
    }
}

/// Why there is no fleet.
#[derive(Debug)]
pub enum FleetError {
    Files(FleetFileError),
    /// No kubeconfig, or an API server that cannot be reached.
    Live(ConnectError),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Files(error) => error.fmt(f),
            FleetError::Live(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for FleetError {}

/// Files when `--nodes` or `--summary` is given, else live.
pub fn open(args: &FleetArgs) -> Result<FleetSource, FleetError> {
    if args.nodes.is_some() || args.summary.is_some() {
        return FileCluster::load(args.nodes.as_deref(), args.summary.as_deref())
            .map(FleetSource::Files)
            .map_err(FleetError::Files);
    }
    open_live(args)
}

/// The live cluster of `--kubeconfig`/`--context` (else inferred), checked
/// to answer.
fn open_live(args: &FleetArgs) -> Result<FleetSource, FleetError> {
    LiveCluster::connect(&credentials(args))
        .map(|live| FleetSource::Live(Box::new(live)))
        .map_err(FleetError::Live)
}

/// Live mode's credentials from the fleet arguments.
pub fn credentials(args: &FleetArgs) -> Credentials {
    Credentials {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    }
}

/// Files for what they hold ([`FileCluster::holds`]), another reader for
/// the rest (a live cluster, or the fleet's files); without one, the files
/// answer that too, as they answer what they do not hold. `audit` reads
/// the pods' nodes from `--nodes` or one live list, and answers the binding
/// check's Node GETs from them rather than with a GET per node (no `get` on
/// nodes needed); `explain --node --topology` answers the
/// NodeResourceTopology from the file and the rest as the fleet does.
pub struct Layered<'a> {
    pub files: &'a FileCluster,
    pub rest: Option<&'a dyn ClusterReader>,
}

impl Layered<'_> {
    fn reader(&self, api_version: &str, kind: &str) -> &dyn ClusterReader {
        match self.rest {
            Some(rest) if !self.files.holds(api_version, kind) => rest,
            _ => self.files,
        }
    }
}

impl ClusterReader for Layered<'_> {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        self.reader(&request.api_version, &request.kind)
            .list_all_resources(request)
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        self.reader(&request.api_version, &request.kind)
            .get_resource(request)
    }
}
