//! Runs the built `policy.wasm` exactly as Kubewarden does: waPC over wasmtime
//! with WASI, the `kubewarden` host capabilities served from kwctl session
//! files, and the JSON patch computed the way the host computes it.
//!
//! - [`policy`]: load/compile the module once, instantiate, call the waPC
//!   operations `protocol_version`, `validate_settings`, `validate`;
//! - [`admission`]: AdmissionReview/AdmissionRequest input, `mutated_object` to
//!   RFC 6902 patch output;
//! - [`host`] and [`session`]: the host callback and kwctl's replay format;
//! - [`scenario`]: the scenario files shared with the kwctl bats suite;
//! - [`readable`]: patches as `field: before -> after` lines for the demo;
//! - [`kwctl`]: the same evaluation through a real `kwctl run`;
//! - [`fleets`]: fleet descriptions and the session files built from them;
//! - [`binding_sessions`]: the binding check's reads (Pod, Node,
//!   NodeResourceTopology) as session files;
//! - [`demo`]: the demo's plan file and its readable fleet and affinity lines;
//! - [`documented_settings`]: every settings block the docs and examples show.
//! - [`markdown`]: the documents' code blocks, headings, links and keys, which
//!   the documentation tests check;
//! - [`repo_files`]: the repository's files, as the tests that read them all
//!   walk it;
//! - [`tool_files`]: a scenario as the `gpu-topology` tool's input files.

pub mod admission;
pub mod binding_sessions;
pub mod demo;
pub mod documented_settings;
pub mod dra_fleets;
pub mod fleets;
pub mod host;
pub mod kwctl;
pub mod markdown;
pub mod policy;
pub mod readable;
pub mod repo_files;
pub mod scenario;
pub mod session;
pub mod tool_files;

pub use admission::{admission_request, load_request, Outcome, ValidationResponse};
pub use host::{ContextAwareResource, HostCapabilities};
pub use policy::{policy_wasm_path, repo_root, shared_module, Policy, PolicyModule};
pub use scenario::Scenario;
pub use session::Session;
