//! The policy's records as the reports show them: plain, serializable data
//! under the tool's report names (`apiVersion: gpu-topology/v1`). Built from
//! the records [`crate::explain`] gets from the policy, read by both
//! renderers ([`crate::render`]) and by what-if; it uses neither, so data
//! flows one way: explain → view → render.

pub mod claims;
pub mod diff;
pub mod shapes;
