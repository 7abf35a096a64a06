//! `gpu-topology what-if`: the decision for each object before and after
//! changed kubelet settings (on some shapes or all) or changed policy
//! settings, read through the same pipeline as `explain`.

pub mod change;
pub mod cluster;
pub mod compare;
