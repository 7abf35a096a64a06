//! The cluster view: what the labeled GPU nodes offer, read through
//! Kubewarden's host capabilities from the fleet summary ConfigMap or the
//! Node list, as the settings' sources say.

pub mod binding;
pub mod dra;
pub mod fleet_summary;
pub mod host;
pub mod nodes;

pub use nodes::ClusterView;

use crate::settings::FleetSources;
use gpu_topology::LabelPrefix;
use host::ClusterReader;

/// Why the cluster gave no view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// The Node list was not answered or not readable.
    NodeList(String),
    /// The fleet summary, the only source allowed, is not usable.
    Summary(String),
    /// The view holds more distinct node shapes than one admission decides
    /// on ([`MAX_SHAPES`]).
    TooManyShapes { shapes: usize },
}

/// The most distinct node shapes (groups of identical labels) one
/// admission asks the kubelet model about. Each costs a few model answers
/// per admission (the plan, and a replan after each adjustment), tens of
/// thousands of instructions each: at this many the answer still comes
/// well within policy-server's 2 s timeout (BENCHMARKS.md). A fleet past it
/// is taken as no view, with a warning: the pod is never blocked for it.
pub const MAX_SHAPES: usize = 10_000;

/// The cluster view as read for one admission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRead {
    pub view: Result<ClusterView, Unavailable>,
    /// Why the fleet summary was not used, when it was tried first and the
    /// Node list was asked for instead.
    pub summary_passed_over: Option<String>,
}

/// Reads the cluster view from `sources`: the fleet summary when one is to
/// be read and it is there and fresh, else the Node list when allowed. The
/// node a pinned pod names (`pinned_node`) is read apart from the Node list.
pub fn read(
    cluster: &dyn ClusterReader,
    sources: &FleetSources,
    prefix: &LabelPrefix,
    pinned_node: Option<&str>,
) -> ClusterRead {
    if let Some(read) = cluster.remembered_read(sources, prefix, pinned_node) {
        return read;
    }
    let mut summary_passed_over = None;
    if let Some(summary) = &sources.summary {
        match fleet_summary::read_summary(cluster, summary, fleet_summary::now) {
            Ok(view) => {
                return ClusterRead {
                    view: Ok(view),
                    summary_passed_over,
                }
            }
            Err(problem) if !sources.node_list => {
                return ClusterRead {
                    view: Err(Unavailable::Summary(problem)),
                    summary_passed_over,
                }
            }
            Err(problem) => summary_passed_over = Some(problem),
        }
    }
    let view = if sources.node_list {
        nodes::read_cluster(cluster, prefix, pinned_node, fleet_summary::now())
            .map_err(Unavailable::NodeList)
    } else {
        Err(Unavailable::NodeList(
            "no cluster source is configured".to_owned(),
        ))
    };
    ClusterRead {
        view,
        summary_passed_over,
    }
}
