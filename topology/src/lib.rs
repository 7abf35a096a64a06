//! The `gpu-topology.io` node label contract and the GPU fit arithmetic.
//!
//! This crate is the single place where label keys, value encoding and parsing
//! live. The node labeler writes labels through [`NodeTopology::to_labels`]; the
//! policy reads them through [`NodeTopology::from_labels`] and turns a pod's GPU
//! demand into node-selector terms with [`fit`]. Both sides therefore agree by
//! construction.
//!
//! The crate is pure (no I/O, no dependencies) so that it builds for
//! `wasm32-wasip1` and natively alike. The `duration` feature (the native
//! tools' duration flags, read with jiff) is the one exception; the policy
//! does not enable it.

#[cfg(feature = "dra")]
pub mod dra;
#[cfg(feature = "duration")]
pub mod duration;
pub mod fit;
pub mod fleet;
pub mod hashing;
pub mod heartbeat;
pub mod kubelet;
pub mod labels;
pub mod names;
#[cfg(feature = "nrt")]
pub mod nrt;
pub mod quantity;
pub mod selector;
pub mod sort;
pub mod summary;

pub use fit::{
    aligned_terms, can_host, conjoin, not_refusing_terms, required_terms, Alignment, GpuDemand,
};
pub use fleet::{Fleet, NodeGroup, NodeRead};
pub use heartbeat::{
    format_heartbeat, parse_heartbeat, HeartbeatError, NodeHeartbeat, OldestHeartbeats, StaleNodes,
    DEFAULT_STALE_AFTER_SECONDS, HEARTBEAT_INTERVAL_SECONDS, MAX_OLDEST_HEARTBEATS,
};
pub use labels::{
    device_key_name, device_resource_of, format_count_list, format_numa_distances, is_label_value,
    parse_count_list, parse_numa_distances, AmdComputePartition, AmdMemoryPartition,
    CpuManagerPolicy, DistanceChunks, GpuClique, Interconnect, KubeletVersion, LabelError,
    LabelKey, LabelPrefix, LabelRole, MemoryManagerPolicy, NodeTopology, ShapeId,
    TopologyManagerPolicy, TopologyManagerScope, ValueKind, DEFAULT_LABEL_PREFIX, MAX_NUMA_NODES,
};
pub use labels::{published_numa_memory_mib, NUMA_MEMORY_GRANULARITY_MIB};
pub use selector::{term_matches, terms_match, Operator, Requirement, Term};
pub use summary::{FleetSummary, SummaryError, SUMMARY_FORMAT};
