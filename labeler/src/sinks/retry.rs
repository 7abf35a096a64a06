//! Bounded retries of API requests, shared by the kubernetes and nodefeature
//! sinks and the summarizer.
//!
//! A failed request is tried again only when retrying can change the answer
//! ([`Transient`]), after an exponential backoff, and never sooner than the
//! server asked (`Retry-After`). The Kubernetes API conventions
//! (community `contributors/devel/sig-architecture/api-conventions.md`, "HTTP
//! Status codes") give the recovery per status: 429 "read the `Retry-After`
//! HTTP header from the response, and wait at least that long before retrying";
//! 500 and 503 "retry with exponential backoff"; 400, 403, 404, 422 "do not
//! retry. Fix the request."

use std::future::Future;
use std::time::Duration;

/// The longest pause a server's `Retry-After` can impose. A longer demand is
/// waited this long: a labeler stuck for hours on one bogus header would publish
/// nothing, while the daemon's next round comes within `--interval` anyway.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

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

    /// The pause after failed attempt `attempt` whose answer asked for
    /// `retry_after`: the backoff, or the server's wait when longer (at most
    /// [`MAX_RETRY_AFTER`]).
    pub fn pause(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self.backoff(attempt);
        retry_after.map_or(backoff, |asked| backoff.max(asked.min(MAX_RETRY_AFTER)))
    }
}

/// A failure that may go away when the same request is sent again.
pub trait Transient: std::fmt::Display {
    /// Whether sending the same request again can succeed.
    fn is_transient(&self) -> bool;
    /// How long the server asked the client to wait before retrying.
    fn retry_after(&self) -> Option<Duration>;
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

/// `details.retryAfterSeconds` of a `Status` answer, when set (0 means unset).
pub fn status_retry_after(status: &kube::core::Status) -> Option<Duration> {
    status
        .details
        .as_ref()
        .map(|details| details.retry_after_seconds)
        .filter(|&seconds| seconds > 0)
        .map(|seconds| Duration::from_secs(u64::from(seconds)))
}

impl Transient for kube::Error {
    fn is_transient(&self) -> bool {
        is_retryable(self)
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            kube::Error::Api(status) => status_retry_after(status),
            _ => None,
        }
    }
}

/// The last error of a call that [`with_retries`] gave up on.
#[derive(Debug)]
pub struct Exhausted<E = kube::Error> {
    pub error: E,
    /// Attempts made, including the failed one.
    pub attempts: u32,
}

/// Runs `call` until it succeeds, fails with an error that retrying will not
/// change ([`Transient::is_transient`]), or `retry.attempts` attempts are
/// spent, pausing [`RetryPolicy::pause`] between attempts. `what` names the
/// call in the logs.
pub async fn with_retries<T, E, F, Fut>(
    retry: &RetryPolicy,
    what: &str,
    mut call: F,
) -> Result<T, Exhausted<E>>
where
    E: Transient,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(value) => return Ok(value),
            Err(error) if attempt < retry.attempts && error.is_transient() => {
                let pause = retry.pause(attempt, error.retry_after());
                tracing::warn!(%error, attempt, ?pause, "{what} failed, retrying");
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
    #[case::no_retry_after(1, None, 500)]
    #[case::shorter_than_the_backoff(3, Some(1), 2_000)]
    #[case::longer_than_the_backoff(1, Some(7), 7_000)]
    #[case::longer_than_the_backoff_cap(10, Some(120), 120_000)]
    #[case::beyond_the_retry_after_cap(1, Some(86_400), 300_000)]
    fn the_pause_is_at_least_what_the_server_asked(
        #[case] attempt: u32,
        #[case] retry_after_seconds: Option<u64>,
        #[case] millis: u64,
    ) {
        let pause =
            RetryPolicy::default().pause(attempt, retry_after_seconds.map(Duration::from_secs));
        assert_eq!(pause, Duration::from_millis(millis));
    }
}
