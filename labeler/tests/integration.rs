//! The integration tests of this crate, one module per file beside this one,
//! built as one test binary: one link instead of one per file, which keeps
//! a clean build's time and disk down (CI links every test binary once).
//! Run one file's tests with `cargo test --test integration <file>::`.

mod common;

mod api_faults;
mod cli;
mod device_resources;
mod fabric_fixtures;
mod faults;
mod fuzz_regressions;
mod grace_trees;
mod health_endpoint;
mod kubernetes_sink;
mod live_tools;
mod malformed_inputs;
mod nfd_sink;
mod nodefeature_sink;
mod summarize;
mod sysfs_trees;
mod topology_fixtures;
