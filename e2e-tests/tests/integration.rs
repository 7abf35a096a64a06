//! The integration tests of this crate, one module per file beside this one,
//! built as one test binary: one link instead of one per file, which keeps
//! a clean build's time and disk down (CI links every test binary once).
//! Run one file's tests with `cargo test --test integration <file>::`.

mod cli_agreement;
mod demo;
mod docs;
mod documented_settings;
mod guide;
mod host_capabilities;
mod module_graph;
mod parity;
mod protocol;
mod repo_files;
mod scenarios;
mod sessions;
mod test_binaries;
mod wasm_native_parity;
