//! Label keys, value encoding and parsing: the contract between the labeler
//! (writer) and the policy (reader).
//!
//! Integer values are plain decimal strings so that node affinity can compare
//! them with `Gt`/`Lt`. A label whose value is unknown is absent, never guessed:
//! every field of [`NodeTopology`] is an `Option`.

use std::fmt;

mod count_list;
mod devices;
pub mod distances;
mod keys;
#[cfg(test)]
mod tests;
mod topology;
mod values;

pub use count_list::{format_count_list, parse_count_list};
pub use devices::{device_key_name, device_resource_of, DEVICE_KEY_PREFIX};
pub use distances::{format_numa_distances, parse_numa_distances, DistanceChunks};
pub use keys::{LabelKey, LabelRole, ValueKind};
pub use topology::NodeTopology;
pub use values::{
    published_numa_memory_mib, AmdComputePartition, AmdMemoryPartition, CpuManagerPolicy,
    GpuClique, Interconnect, KubeletVersion, MemoryManagerPolicy, ShapeId, TopologyManagerPolicy,
    TopologyManagerScope, MAX_NUMA_NODES, NUMA_MEMORY_GRANULARITY_MIB,
};

/// Prefix used when the operator configures none.
pub const DEFAULT_LABEL_PREFIX: &str = "gpu-topology.io";

/// Kubernetes limits a label value, and the name part of a key, to 63 characters.
pub(crate) const MAX_LABEL_VALUE_LEN: usize = 63;
/// Longest decimal string we accept for a count; `u32::MAX` has 10 digits.
const MAX_COUNT_DIGITS: usize = 10;

/// Why a prefix, key or label value was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelError {
    /// The prefix is not a valid DNS subdomain.
    InvalidPrefix {
        prefix: String,
        reason: &'static str,
    },
    /// A label under our prefix carries a value that does not parse.
    InvalidValue {
        key: String,
        value: String,
        expected: &'static str,
    },
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelError::InvalidPrefix { prefix, reason } => {
                write!(f, "invalid label prefix {prefix:?}: {reason}")
            }
            LabelError::InvalidValue {
                key,
                value,
                expected,
            } => write!(f, "label {key}={value:?} is invalid: expected {expected}"),
        }
    }
}

impl std::error::Error for LabelError {}

/// A validated label prefix (DNS subdomain), e.g. `gpu-topology.io`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelPrefix(String);

impl LabelPrefix {
    /// Validates `prefix` as a Kubernetes label prefix (RFC 1123 DNS subdomain).
    pub fn new(prefix: &str) -> Result<Self, LabelError> {
        match crate::names::dns_subdomain_fault(prefix) {
            Some(reason) => Err(LabelError::InvalidPrefix {
                prefix: prefix.to_owned(),
                reason,
            }),
            None => Ok(Self(prefix.to_owned())),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The full label key for `key` under this prefix, e.g. `gpu-topology.io/gpus`.
    pub fn key(&self, key: LabelKey) -> String {
        self.named_key(key.name())
    }

    /// The full label key of the label named `name` under this prefix.
    fn named_key(&self, name: &str) -> String {
        // Concatenated, not format!: this runs on every admission, and the
        // formatting machinery costs several times more in Wasm.
        [self.0.as_str(), "/", name].concat()
    }

    /// The chunk of the distances ([`distances::chunk_of`]) that `full_key`
    /// holds under this prefix, if any.
    pub fn parse_distance_chunk(&self, full_key: &str) -> Option<usize> {
        distances::chunk_of(self.name_of(full_key)?)
    }

    /// The [`LabelKey`] that `full_key` names under this prefix, if any.
    pub fn parse_key(&self, full_key: &str) -> Option<LabelKey> {
        LabelKey::from_name(self.name_of(full_key)?)
    }

    /// The full label key of the per-NUMA counts of device resource
    /// `resource` ([`device_key_name`]); `None` when it cannot be one.
    pub fn device_key(&self, resource: &str) -> Option<String> {
        device_key_name(resource).map(|name| [self.0.as_str(), "/", &name].concat())
    }

    /// The device resource whose per-NUMA counts `full_key` holds under this
    /// prefix ([`device_resource_of`]), if any.
    pub fn parse_device_key(&self, full_key: &str) -> Option<String> {
        device_resource_of(self.name_of(full_key)?)
    }

    /// The name part of `full_key` when it is under this prefix.
    fn name_of<'k>(&self, full_key: &'k str) -> Option<&'k str> {
        full_key.strip_prefix(self.0.as_str())?.strip_prefix('/')
    }
}

impl Default for LabelPrefix {
    fn default() -> Self {
        Self(DEFAULT_LABEL_PREFIX.to_owned())
    }
}

impl fmt::Display for LabelPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True when `value` is a valid Kubernetes label value: at most 63
/// characters, alphanumerics, `-`, `_` and `.`, beginning and ending with an
/// alphanumeric (or empty).
pub fn is_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    value.len() <= MAX_LABEL_VALUE_LEN
        && bytes.iter().all(inner)
        && bytes.first().is_none_or(u8::is_ascii_alphanumeric)
        && bytes.last().is_none_or(u8::is_ascii_alphanumeric)
}

/// Parses a count written as plain decimal digits (no sign, no spaces), the
/// encoding the contract uses for every integer label.
pub fn parse_count(value: &str) -> Option<u32> {
    if value.is_empty()
        || value.len() > MAX_COUNT_DIGITS
        || !value.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    value.parse().ok()
}
