//! A model of the kubelet's resource admission: what the Topology, CPU,
//! Memory and Device Managers do with a pod on a node (placeholder doc,
//! completed below).

pub mod admit;
pub mod counts;
pub mod cpu;
pub mod device;
pub mod facts;
pub mod hint;
pub mod mask;
pub mod memory;
pub mod merge;
pub mod outcome;

pub use admit::{admit, DEFAULT_MAX_ALLOWABLE_NUMA_NODES};
pub use facts::{
    ContainerDemand, ContainerKind, CpuManagerConfig, Fact, HugePages, InputError,
    MemoryManagerPolicy, NodeFacts, NumaNodeFacts, PodDemand, TopologyManagerConfig,
};
pub use hint::{HintSet, ProviderHints, ResourceHints, TopologyHint};
pub use mask::{MaskSet, NumaMask, MAX_NUMA_NODES};
pub use merge::{
    compare, merge_lists, policy_merge, Kept, MaskOrder, Merged, NumaInfo, PolicyMerge,
};
pub use outcome::{
    Admission, AllocationFailure, HintReport, Indeterminate, Refusal, Remaining, Resource,
    ResourceReport, StartupError, UnitReport, Unknown, Unsupported, Verdict,
};

use facts::ContainerKind as Kind;

/// The kubelet's pod-level request of one resource from its containers'
/// (KEP-753): the larger of the app containers plus every sidecar, and of
/// each init container plus the sidecars started before it. Saturates: a
/// request that large fits no node either way.
pub(crate) fn pod_effective(requests: impl IntoIterator<Item = (Kind, u64)>) -> u64 {
    let mut init_max = 0u64;
    let mut sidecars = 0u64;
    let mut apps = 0u64;
    for (kind, request) in requests {
        match kind {
            Kind::Sidecar => sidecars = sidecars.saturating_add(request),
            Kind::Init => init_max = init_max.max(sidecars.saturating_add(request)),
            Kind::App => apps = apps.saturating_add(request),
        }
    }
    init_max.max(apps.saturating_add(sidecars))
}
