//! Publishes labels on the labeler's own Node with server-side apply.
//!
//! The apply body holds only our labels under our field manager, so the API
//! server removes labels we applied before and no longer send, and never touches
//! labels owned by anyone else. `force=true` takes ownership of our keys even if
//! another manager (a human's `kubectl label`, an older labeler) set them: the
//! labeler is the authority for its prefix, and a conflict would otherwise pin a
//! stale value forever.
//!
//! Unchanged labels are applied again every [`REAPPLY_INTERVAL`]: a label
//! someone removed or edited by hand comes back, and an apply that changes
//! nothing is cheap (the API server writes nothing to etcd).

use super::{Labels, PublishError};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use serde_json::{json, Value};
use std::future::Future;
use std::time::Duration;

pub const DEFAULT_FIELD_MANAGER: &str = "gpu-topology-labeler";

/// How long unchanged labels go without being applied again.
pub const REAPPLY_INTERVAL: SignedDuration = SignedDuration::from_mins(10);

/// Whether labels last applied at `last_applied` are due to be applied again.
pub fn reapply_due(last_applied: Option<Timestamp>, now: Timestamp) -> bool {
    last_applied.is_none_or(|applied| {
        applied
            .checked_add(REAPPLY_INTERVAL)
            .map_or(true, |due| now >= due)
    })
}

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
    /// When labels were last applied successfully.
    last_applied: Option<Timestamp>,
}

impl KubernetesSink {
    pub fn new(client: Client, node: String, field_manager: &str, retry: RetryPolicy) -> Self {
        Self {
            api: Api::all(client),
            node,
            params: PatchParams::apply(field_manager).force(),
            retry,
            last_applied: None,
        }
    }

    /// True when unchanged labels should be applied again ([`REAPPLY_INTERVAL`]).
    pub fn needs_refresh(&self, now: Timestamp) -> bool {
        reapply_due(self.last_applied, now)
    }

    pub async fn publish(&mut self, labels: &Labels, now: Timestamp) -> Result<(), PublishError> {
        let body = apply_body(&self.node, labels);
        let patch = Patch::Apply(&body);
        with_retries(&self.retry, "apply node labels", || {
            self.api.patch(&self.node, &self.params, &patch)
        })
        .await
        .map_err(|failed| PublishError::Kubernetes {
            node: self.node.clone(),
            attempts: failed.attempts,
            source: Box::new(failed.error),
        })?;
        self.last_applied = Some(now);
        Ok(())
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

    #[rstest]
    #[case::never_applied(None, "2025-03-01T12:00:00Z", true)]
    #[case::just_applied(Some("2025-03-01T12:00:00Z"), "2025-03-01T12:01:00Z", false)]
    #[case::one_second_early(Some("2025-03-01T12:00:00Z"), "2025-03-01T12:09:59Z", false)]
    #[case::ten_minutes_later(Some("2025-03-01T12:00:00Z"), "2025-03-01T12:10:00Z", true)]
    #[case::at_the_end_of_time(Some("9999-12-30T21:55:00Z"), "9999-12-30T21:56:00Z", true)]
    fn unchanged_labels_are_applied_again_every_ten_minutes(
        #[case] last_applied: Option<&str>,
        #[case] now: &str,
        #[case] due: bool,
    ) {
        let at = |text: &str| text.parse::<Timestamp>().unwrap();
        assert_eq!(reapply_due(last_applied.map(at), at(now)), due);
    }
}
