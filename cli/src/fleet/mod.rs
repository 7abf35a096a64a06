//! Where the fleet comes from: files, or a live cluster.

pub mod live;
