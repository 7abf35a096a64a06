//! Publishes labels on the labeler's own Node with server-side apply.
//!
//! The apply body holds only our labels under our field manager, so the API
//! server removes labels we applied before and no longer send, and never touches
//! labels owned by anyone else. `force=true` takes ownership of our keys even if
//! another manager (a human's `kubectl label`, an older labeler) set them: the
//! labeler is the authority for its prefix, and a conflict would otherwise pin a
//! stale value forever.

use super::{Labels, PublishError};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;

pub const DEFAULT_FIELD_MANAGER: &str = "gpu-topology-labeler";

/// Bounded exponential backoff while the API server is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts, including the first.
    pub attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 8,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The pause after failed attempt `attempt` (1-based): doubling, capped.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// The apply body: a minimal Node carrying only our labels.
pub fn apply_body(node: &str, labels: &Labels) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": node, "labels": labels },
    })
}

/// 5xx (and 429) answers and transport failures (connection refused, reset,
/// timeout) are worth retrying; other answers (403, 404, 422) will not change.
pub fn is_retryable(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code >= 500 || status.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The last error of a call that [`with_retries`] gave up on.
#[derive(Debug)]
pub struct Exhausted {
    pub error: kube::Error,
    /// Attempts made, including the failed one.
    pub attempts: u32,
}

/// Runs `call` until it succeeds, fails with an error that retrying will not
/// change ([`is_retryable`]), or `retry.attempts` attempts are spent, pausing
/// [`RetryPolicy::backoff`] between attempts. `what` names the call in the logs.
pub async fn with_retries<T, F, Fut>(
    retry: &RetryPolicy,
    what: &str,
    mut call: F,
) -> Result<T, Exhausted>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(value) => return Ok(value),
            Err(error) if attempt < retry.attempts && is_retryable(&error) => {
                let pause = retry.backoff(attempt);
                tracing::warn!(%error, attempt, ?pause, "{what}: API server unavailable, retrying");
                tokio::time::sleep(pause).await;
                attempt += 1;
            }
            Err(error) => {
                return Err(Exhausted {
                    error,
                    attempts: attempt,
                })
            }
        }
    }
}

/// Server-side applies labels to one Node.
#[derive(Clone)]
pub struct KubernetesSink {
    api: Api<Node>,
    node: String,
    params: PatchParams,
    retry: RetryPolicy,
}

impl KubernetesSink {
    pub fn new(client: Client, node: String, field_manager: &str, retry: RetryPolicy) -> Self {
        Self {
            api: Api::all(client),
            node,
            params: PatchParams::apply(field_manager).force(),
            retry,
        }
    }

    pub async fn publish(&self, labels: &Labels) -> Result<(), PublishError> {
        let body = apply_body(&self.node, labels);
        let patch = Patch::Apply(&body);
        with_retries(&self.retry, "apply node labels", || {
            self.api.patch(&self.node, &self.params, &patch)
        })
        .await
        .map(|_| ())
        .map_err(|failed| PublishError::Kubernetes {
            node: self.node.clone(),
            attempts: failed.attempts,
            source: Box::new(failed.error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::first(1, 500)]
    #[case::second(2, 1000)]
    #[case::capped(10, 30_000)]
    #[case::huge(u32::MAX, 30_000)]
    fn backoff_doubles_up_to_the_cap(#[case] attempt: u32, #[case] millis: u64) {
        assert_eq!(
            RetryPolicy::default().backoff(attempt),
            Duration::from_millis(millis)
        );
    }
}
