//! The integration tests of this crate, one module per file beside this one,
//! built as one test binary: one link instead of one per file, which keeps
//! a clean build's time and disk down (CI links every test binary once).
//! Run one file's tests with `cargo test --test integration <file>::`.

mod common;
mod strategies;

mod audit_cronjob;
mod autoscaling_examples;
mod ci_workflows;
mod claim_properties;
mod claims;
mod cluster;
mod entry_points;
mod fuzz_regressions;
mod hostile_input;
mod json_scan;
mod metadata;
mod policy;
mod properties;
mod release_references;
mod support_matrix;
