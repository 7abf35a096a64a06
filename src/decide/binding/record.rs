//! What the binding check found, as data: one record that the policy's
//! answer ([`super::explain::decision`]) and the tool's tables render.

use crate::decide::demand::Demand;
use gpu_topology::kubelet::{Admission, InputError, NodeFacts, Occupancy};
use gpu_topology::nrt::NrtProblem;

/// The check of one binding.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingRecord {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// The node the scheduler chose.
    pub node: String,
    pub outcome: BindingOutcome,
}

/// What the check concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum BindingOutcome {
    /// The pod asks for no GPU, MIG slice, aligned device or DRA claim:
    /// the binding is none of the check's business (decided from the Pod,
    /// before any other read).
    NotGpuPod,
    /// The check could not be made: the binding is allowed, and the
    /// warning says why.
    NotChecked(NotChecked),
    /// The kubelet model's answer on the node as it is now.
    Checked(Box<Checked>),
}

/// Why a binding was not checked. Each allows it: a missing fact never
/// blocks a pod the node may run.
#[derive(Debug, Clone, PartialEq)]
pub enum NotChecked {
    /// The Pod could not be read (host error, quoted).
    PodUnread(String),
    /// The Pod's resources do not read.
    PodMalformed(String),
    /// More containers than the model is asked about
    /// ([`crate::decide::MAX_CONTAINERS`]).
    TooManyContainers { containers: usize },
    /// The Node could not be read (host error, quoted).
    NodeUnread(String),
    /// The Node carries no topology labels (`<prefix>/gpus`).
    NodeUnlabeled,
    /// The Node's labels do not parse.
    NodeLabels(String),
    /// The node has no NodeResourceTopology (NFD's topology-updater does
    /// not run there).
    TopologyMissing,
    /// The NodeResourceTopology could not be read (host error, quoted;
    /// access denied among them).
    TopologyUnread(String),
    /// Its content last changed longer ago than `binding.topologyMaxAgeSeconds`.
    TopologyStale {
        age_seconds: u64,
        limit_seconds: u64,
    },
    /// It does not read, or disagrees with the labels.
    Topology(NrtProblem),
    /// The model refuses its input (labels and occupancy contradict).
    ModelInput(InputError),
}

/// A binding the model answered for.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub demand: Demand,
    pub facts: NodeFacts,
    pub occupancy: Occupancy,
    pub admission: Admission,
}
