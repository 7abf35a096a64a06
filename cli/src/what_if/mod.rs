//! `gpu-topology what-if`: the decision for each object before and after
//! changed kubelet settings (on some shapes or all) or changed policy
//! settings, each side decided by the policy's own code through the same
//! pipeline as `explain`: the after-side reads the cluster as the labeler
//! would publish it after the change ([`cluster::ChangedCluster`]).
//!
//! The dependencies run one way: the command ([`crate::run::what_if`])
//! computes the plain data of [`record`] with [`change`], [`cluster`] and
//! [`compare`](mod@compare), and hands it to the renderer
//! ([`crate::render::what_if`]), which reads [`record`] and
//! [`compare`](mod@compare). Nothing here renders or runs a command.

pub mod change;
pub mod cluster;
pub mod compare;
pub mod record;
