//! The heartbeat the API sinks publish with the labels: the time the labeler
//! last confirmed them, as an annotation (`<prefix>/published`, encoded by
//! the contract, [`gpu_topology::heartbeat`]).
//!
//! Rate limit: the value sent changes only with the labels, or once
//! [`HEARTBEAT_INTERVAL_SECONDS`] have passed since it was sent. The sinks
//! apply unchanged labels every [`super::api::REAPPLY_INTERVAL`] (10 min);
//! with the same heartbeat such an apply changes nothing on the server (no
//! write, no watch event), so a quiet node costs one real write per
//! heartbeat interval (see the contract's module for the sums at 5,000
//! nodes).

use super::Labels;
use gpu_topology::{format_heartbeat, LabelPrefix, HEARTBEAT_INTERVAL_SECONDS};
use jiff::{SignedDuration, Timestamp};

/// What a sink last sent: the heartbeat and the labels it vouched for.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    key: String,
    sent: Option<(Timestamp, Labels)>,
}

impl Heartbeat {
    pub fn new(prefix: &LabelPrefix) -> Self {
        Self {
            key: prefix.heartbeat_key(),
            sent: None,
        }
    }

    /// The heartbeat to publish with `labels` at `now`: the one sent before
    /// while the labels are the ones it vouched for and it is younger than
    /// the interval, else `now`. A clock set back before the heartbeat sent
    /// makes it `now` too: a heartbeat must not be dated in the future.
    pub fn at(&self, labels: &Labels, now: Timestamp) -> Timestamp {
        let interval = SignedDuration::from_secs(HEARTBEAT_INTERVAL_SECONDS as i64);
        match &self.sent {
            Some((sent, vouched))
                if vouched == labels
                    && *sent <= now
                    && sent.checked_add(interval).is_ok_and(|due| now < due) =>
            {
                *sent
            }
            _ => now,
        }
    }

    /// The annotations carrying heartbeat `at`.
    pub fn annotations(&self, at: Timestamp) -> Labels {
        let seconds = u64::try_from(at.as_second()).unwrap_or(0);
        Labels::from([(self.key.clone(), format_heartbeat(seconds))])
    }

    /// Records that `labels` were published with heartbeat `at`.
    pub fn sent(&mut self, labels: &Labels, at: Timestamp) {
        self.sent = Some((at, labels.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn labels(gpus: &str) -> Labels {
        Labels::from([("gpu-topology.io/gpus".to_owned(), gpus.to_owned())])
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_764_629_152 + seconds).unwrap()
    }

    const INTERVAL: i64 = HEARTBEAT_INTERVAL_SECONDS as i64;

    /// (labels now, seconds after the heartbeat sent, heartbeat published):
    /// kept while the labels are unchanged and the interval has not passed.
    #[rstest]
    #[case::unchanged_at_the_reapply(labels("8"), 600, 0)]
    #[case::unchanged_just_before_the_interval(labels("8"), INTERVAL - 1, 0)]
    #[case::unchanged_at_the_interval(labels("8"), INTERVAL, INTERVAL)]
    #[case::changed_labels(labels("4"), 60, 60)]
    #[case::clock_set_back(labels("8"), -60, -60)]
    fn the_heartbeat_changes_with_the_labels_or_the_interval(
        #[case] now_labels: Labels,
        #[case] after: i64,
        #[case] published: i64,
    ) {
        let mut heartbeat = Heartbeat::new(&LabelPrefix::default());
        heartbeat.sent(&labels("8"), at(0));
        assert_eq!(heartbeat.at(&now_labels, at(after)), at(published));
    }

    #[test]
    fn the_first_heartbeat_is_now() {
        let heartbeat = Heartbeat::new(&LabelPrefix::default());
        assert_eq!(heartbeat.at(&labels("8"), at(5)), at(5));
    }

    #[test]
    fn the_annotation_is_the_contracts() {
        let heartbeat = Heartbeat::new(&LabelPrefix::new("example.com").unwrap());
        assert_eq!(
            heartbeat.annotations(at(0)),
            Labels::from([(
                "example.com/published".to_owned(),
                "2025-12-01T22:45:52Z".to_owned()
            )])
        );
    }
}
