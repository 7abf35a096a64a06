//! A blocking library call (NVML) on tokio's blocking pool, with a timeout.
//!
//! A thread cannot be killed: a call that does not return in time (NVML on a
//! wedged driver) is left running, and no new call starts until it has
//! returned, so stuck threads never pile up round after round.

use super::SourceError;
use std::time::Duration;
use tokio::task::JoinHandle;

#[derive(Debug)]
pub struct BlockingCall<T> {
    /// A call that timed out and may still be running.
    overdue: Option<JoinHandle<T>>,
}

impl<T> Default for BlockingCall<T> {
    fn default() -> Self {
        Self { overdue: None }
    }
}

impl<T: Send + 'static> BlockingCall<T> {
    /// Runs `call` for at most `timeout`; `what` names it in errors.
    pub async fn run(
        &mut self,
        what: &str,
        timeout: Duration,
        call: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, SourceError> {
        if let Some(overdue) = &self.overdue {
            if !overdue.is_finished() {
                return Err(SourceError::new(
                    what,
                    "an earlier call has not returned yet (is the GPU driver hung?): not starting another",
                ));
            }
            // It returned late; its answer is stale.
            self.overdue = None;
        }
        let mut handle = tokio::task::spawn_blocking(call);
        match tokio::time::timeout(timeout, &mut handle).await {
            Ok(joined) => joined.map_err(|error| SourceError::new(what, error)),
            Err(_) => {
                self.overdue = Some(handle);
                Err(SourceError::new(
                    what,
                    format!("no answer within {timeout:?}"),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[tokio::test]
    async fn a_call_that_returns_in_time_gives_its_value() {
        let mut call = BlockingCall::default();
        let value = call.run("NVML", Duration::from_secs(10), || 42).await;
        assert_eq!(value, Ok(42));
    }

    /// An overdue call blocks new calls until it returns; then calls run again.
    #[tokio::test]
    async fn no_call_starts_while_an_overdue_one_runs() {
        let mut call = BlockingCall::default();
        let (release, released) = mpsc::channel::<()>();
        let error = call
            .run("NVML", Duration::from_millis(100), move || {
                let _ = released.recv();
                1
            })
            .await
            .unwrap_err();
        assert!(error.message.contains("no answer within 100ms"), "{error}");
        let error = call
            .run("NVML", Duration::from_secs(10), || 2)
            .await
            .unwrap_err();
        assert!(error.message.contains("has not returned yet"), "{error}");
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let value = loop {
            match call.run("NVML", Duration::from_secs(10), || 3).await {
                Err(e) if e.message.contains("has not returned yet") => {
                    assert!(std::time::Instant::now() < deadline, "never returned");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => break other,
            }
        };
        assert_eq!(value, Ok(3));
    }
}
