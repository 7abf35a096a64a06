//! Where labels go: a Node Feature Discovery feature file, an NFD
//! `NodeFeature` object or the Node object via server-side apply, or stdout
//! (`--dry-run`). [`api`] and [`retry`] are the API requests and retries the
//! two API sinks share.

pub mod api;
pub mod heartbeat;
pub mod kubernetes;
pub mod nfd;
pub mod nodefeature;
pub mod retry;
pub mod stdout;

use api::ApiError;

/// Labels by full key, sorted: exactly what [`gpu_topology::NodeTopology::to_labels`] returns.
pub type Labels = std::collections::BTreeMap<String, String>;

/// Why labels could not be published. The API variants end with a hint
/// (starting with "; ") when the failure has a known remedy.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("writing the NFD feature file {path}: {source}")]
    Nfd {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("server-side apply of node {node} failed after {attempts} attempt(s): {source}{hint}")]
    Kubernetes {
        node: String,
        attempts: u32,
        #[source]
        source: Box<ApiError>,
        hint: String,
    },
    #[error(
        "server-side apply of NodeFeature {namespace}/{name} failed after {attempts} attempt(s): {source}{hint}"
    )]
    NodeFeature {
        namespace: String,
        name: String,
        attempts: u32,
        #[source]
        source: Box<ApiError>,
        hint: String,
    },
    #[error(
        "reading the labeler's pod {namespace}/{pod}, the NodeFeature's owner, failed after {attempts} attempt(s): {source}{hint}"
    )]
    Owner {
        namespace: String,
        pod: String,
        attempts: u32,
        #[source]
        source: Box<ApiError>,
        hint: String,
    },
    #[error("writing to stdout: {0}")]
    Stdout(#[source] std::io::Error),
}
