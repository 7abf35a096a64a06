//! The cluster view: what the policy reads from the cluster through
//! Kubewarden's host capabilities (the Node list, the fleet summary).

pub mod fleet_summary;
pub mod host;
pub mod nodes;
