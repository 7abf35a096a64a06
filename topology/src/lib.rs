//! The `gpu-topology.io` node label contract and the GPU fit arithmetic.
//!
//! This crate is the single place where label keys, value encoding and parsing
//! live. The node labeler writes labels through [`NodeTopology::to_labels`]; the
//! policy reads them through [`NodeTopology::from_labels`] and turns a pod's GPU
//! demand into node-selector terms with [`fit`]. Both sides therefore agree by
//! construction.
//!
//! The crate is pure (no I/O, no dependencies) so that it builds for
//! `wasm32-wasip1` and natively alike.

#[cfg(feature = "dra")]
pub mod dra;
pub mod fit;
pub mod fleet;
pub mod hashing;
pub mod heartbeat;
pub mod kubelet;
pub mod labels;
pub mod quantity;
pub mod selector;
pub mod sort;
pub mod summary;

pub use fit::{
    admit_terms, aligned_terms, can_admit, can_align, can_host, conjoin, not_refusing_terms,
    required_terms, Alignment, GpuDemand,
};
pub use fleet::{Fleet, NodeGroup, NodeRead, Offer};
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
