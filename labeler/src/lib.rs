//! gpu-topology-labeler: discovers a GPU node's topology and publishes it as
//! the `gpu-topology.io` labels defined by the `gpu-topology` crate.
//!
//! Layout: a pure core ([`parse`], [`model`], [`cliques`], [`reconcile`]),
//! thin sources ([`sources`]) and sinks ([`sinks`]), and the runner ([`app`])
//! with its health and metrics endpoint ([`health`]).
//! [`summarize`] is the `summarize` subcommand: the fleet summary ConfigMap.

pub mod app;
pub mod cli;
pub mod cliques;
pub mod devices;
pub mod discover;
pub mod health;
pub mod model;
pub mod parse;
pub mod reconcile;
pub mod sinks;
pub mod sources;
pub mod summarize;
