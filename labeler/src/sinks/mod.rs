//! Where labels go: a Node Feature Discovery feature file, the Node object via
//! server-side apply, or stdout (`--dry-run`).

pub mod kubernetes;
pub mod nfd;
pub mod stdout;

/// Labels by full key, sorted: exactly what [`gpu_topology::NodeTopology::to_labels`] returns.
pub type Labels = std::collections::BTreeMap<String, String>;

/// Why labels could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("writing the NFD feature file {path}: {source}")]
    Nfd {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("server-side apply of node {node} failed after {attempts} attempt(s): {source}")]
    Kubernetes {
        node: String,
        attempts: u32,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("writing to stdout: {0}")]
    Stdout(#[source] std::io::Error),
}
