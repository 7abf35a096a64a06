//! The scripted API server ([`fake_kube_api`]), and what only the labeler's
//! tests add to it: a client configured as the sinks configure theirs, and
//! the shape of their applies.

pub use fake_kube_api::*;

use gpu_topology_labeler::sinks::api;
use std::collections::BTreeSet;
use std::time::Duration;

/// A client of the server on `port` with the settings the labeler's API sinks
/// and the summarizer use in production ([`api::configure`]): no kube-internal retries, each read
/// limited to `timeout`.
pub fn sink_client(port: u16, timeout: Duration) -> kube::Client {
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    kube::Client::try_from(api::configure(config, timeout)).unwrap()
}

/// `request` is a forced server-side apply (`fieldManager=gpu-topology-labeler`)
/// of the object at `path`.
pub fn assert_forced_apply(request: &Request, path: &str) {
    assert_eq!(request.method, "PATCH");
    assert_eq!(request.path, path);
    assert_eq!(
        request.query,
        BTreeSet::from([
            "fieldManager=gpu-topology-labeler".to_owned(),
            "force=true".to_owned()
        ])
    );
    assert_eq!(
        request.content_type.as_deref(),
        Some("application/apply-patch+yaml")
    );
}
