//! The labeler's heartbeat: when it last confirmed a node's facts, so that
//! readers (`gpu-topology audit`) can tell labels that are still vouched for
//! from labels a stopped labeler left behind.
//!
//! It is an annotation, `<prefix>/published`, not a label: its value is an
//! RFC 3339 time (a label value cannot hold `:`), no selector ever needs it,
//! and it stays out of the label set the policy lists and groups nodes by.
//! The kubernetes sink writes it on the Node; the nodefeature sink on its
//! NodeFeature object, because a NodeFeature's spec carries only `features`
//! and `labels` and nfd-master copies neither annotations nor anything else
//! from it to the Node. The NFD feature-file sink has no place for it: there
//! nfd-worker's `expiry-time` removes the labels of a stopped labeler instead.
//!
//! **Cost.** A changed value is a write of the Node, and a watch event to
//! every Node watcher (the scheduler, kube-proxy, ...). The labeler applies
//! unchanged labels again every 10 minutes, which costs nothing on the
//! server while nothing changed; the heartbeat therefore changes only with
//! the labels or once [`HEARTBEAT_INTERVAL_SECONDS`] have passed since the
//! value sent: at 5,000 nodes, 2.8 writes a second, a sixth of the kubelets'
//! own unchanged node-status reports (every 5 minutes by default).

use crate::labels::LabelPrefix;
use std::fmt;

/// The name of the heartbeat annotation under the label prefix.
pub const HEARTBEAT_NAME: &str = "published";

/// How long the heartbeat may stay unchanged while the facts do not change.
pub const HEARTBEAT_INTERVAL_SECONDS: u64 = 30 * 60;

/// When a reader takes labels as stale by default: three heartbeats missed.
pub const DEFAULT_STALE_AFTER_SECONDS: u64 = 3 * HEARTBEAT_INTERVAL_SECONDS;

impl LabelPrefix {
    /// The heartbeat annotation's key, e.g. `gpu-topology.io/published`.
    pub fn heartbeat_key(&self) -> String {
        [self.as_str(), "/", HEARTBEAT_NAME].concat()
    }
}

/// Why a heartbeat value does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatError {
    pub value: String,
}

impl fmt::Display for HeartbeatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "heartbeat {:?} is not an RFC 3339 UTC time such as 2026-01-31T23:59:59Z",
            self.value
        )
    }
}

impl std::error::Error for HeartbeatError {}

/// The most heartbeats a reader keeps of a fleet: the oldest ones, each
/// with its node's name. A labeler that stopped on a few nodes is named
/// node by node (the policy keeps the pod off them by name under
/// `required`); past this many stale nodes the labeler is down fleet-wide,
/// and excluding some by name would be arbitrary.
pub const MAX_OLDEST_HEARTBEATS: usize = 32;

/// A node's heartbeat as read: when its labeler last confirmed its labels.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeHeartbeat {
    /// Unix seconds ([`parse_heartbeat`]).
    pub at: u64,
    pub node: String,
}

/// The [`MAX_OLDEST_HEARTBEATS`] oldest heartbeats of the nodes read, oldest
/// first: what the policy needs to tell stale facts whatever age it takes
/// as stale, in bounded memory whatever the fleet. Nodes without a
/// heartbeat (the NFD feature-file sink, a labeler older than the
/// heartbeat, a nodefeature node in the policy's Node list) are not in it:
/// their freshness is unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OldestHeartbeats {
    oldest: Vec<NodeHeartbeat>,
    /// Heartbeats offered, kept or not.
    seen: u32,
}

impl OldestHeartbeats {
    /// Offers node `node`'s heartbeat at `at`; kept while among the oldest.
    /// The name is copied only when kept.
    pub fn offer(&mut self, at: u64, node: &str) {
        self.seen = self.seen.saturating_add(1);
        if self.oldest.len() == MAX_OLDEST_HEARTBEATS
            && self.oldest.last().is_some_and(|youngest| youngest.at <= at)
        {
            return;
        }
        let position = self.oldest.partition_point(|kept| kept.at <= at);
        self.oldest.insert(
            position,
            NodeHeartbeat {
                at,
                node: node.to_owned(),
            },
        );
        self.oldest.truncate(MAX_OLDEST_HEARTBEATS);
    }

    /// The kept heartbeats, oldest first.
    pub fn oldest(&self) -> &[NodeHeartbeat] {
        &self.oldest
    }

    /// Heartbeats offered in all.
    pub fn seen(&self) -> u32 {
        self.seen
    }

    /// The nodes whose heartbeat is more than `after` seconds before `now`,
    /// oldest first; `complete` is false when nodes not kept may be stale
    /// too (every kept one is).
    pub fn stale(&self, now: u64, after: u64) -> StaleNodes<'_> {
        let stale = self
            .oldest
            .partition_point(|kept| now.saturating_sub(kept.at) > after);
        StaleNodes {
            nodes: &self.oldest[..stale],
            complete: stale < self.oldest.len() || self.seen as usize <= self.oldest.len(),
        }
    }

    /// The summary's `oldestHeartbeats` entry: one `<time> <node>` line per
    /// kept heartbeat, oldest first, then `+<n>` for the ones not kept.
    pub fn to_summary_text(&self) -> String {
        let mut lines: Vec<String> = self
            .oldest
            .iter()
            .map(|kept| format!("{} {}", format_heartbeat(kept.at), kept.node))
            .collect();
        let more = (self.seen as usize).saturating_sub(self.oldest.len());
        if more > 0 {
            lines.push(format!("+{more}"));
        }
        lines.join("\n")
    }

    /// Reads [`Self::to_summary_text`]; at most [`MAX_OLDEST_HEARTBEATS`]
    /// lines are kept whatever the text holds.
    pub fn from_summary_text(text: &str) -> Result<Self, HeartbeatError> {
        let mut read = OldestHeartbeats::default();
        let mut more: u32 = 0;
        for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
            if let Some(count) = line.strip_prefix('+') {
                more = count.parse().map_err(|_| HeartbeatError {
                    value: line.to_owned(),
                })?;
                continue;
            }
            let (at, node) = line.split_once(' ').ok_or_else(|| HeartbeatError {
                value: line.to_owned(),
            })?;
            read.offer(parse_heartbeat(at)?, node.trim());
        }
        read.seen = read.seen.saturating_add(more);
        Ok(read)
    }
}

/// Nodes whose facts are older than a reader's age ([`OldestHeartbeats::stale`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleNodes<'h> {
    pub nodes: &'h [NodeHeartbeat],
    /// Every stale node is in `nodes`.
    pub complete: bool,
}

const SECONDS_PER_DAY: u64 = 86_400;
/// 9999-12-31T23:59:59Z: the last time four year digits can write.
const LAST_SECOND: u64 = 253_402_300_799;

/// The heartbeat value of `unix_seconds`: `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole
/// seconds); times after year 9999 are written as its last second.
pub fn format_heartbeat(unix_seconds: u64) -> String {
    let seconds = unix_seconds.min(LAST_SECOND);
    let (year, month, day) = civil_from_days(seconds / SECONDS_PER_DAY);
    let in_day = seconds % SECONDS_PER_DAY;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    )
}

/// The Unix seconds of a heartbeat value: what [`format_heartbeat`] writes,
/// also with fractional seconds or a `+00:00` offset (a hand-written one).
/// Times before 1970 are refused.
pub fn parse_heartbeat(value: &str) -> Result<u64, HeartbeatError> {
    parse(value).ok_or_else(|| HeartbeatError {
        value: value.to_owned(),
    })
}

fn parse(value: &str) -> Option<u64> {
    let bytes = value.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<u64> {
        let digits = bytes.get(range)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + u64::from(d - b'0')))
    };
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(at, c)| bytes.get(at) != Some(&c))
        || !matches!(bytes.get(10), Some(b'T' | b't'))
    {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let mut rest = &value[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    if !matches!(rest, "Z" | "z" | "+00:00") {
        return None;
    }
    let in_month = days_in_month(year, month)?;
    if year < 1970 || day == 0 || day > in_month || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second)
}

fn days_in_month(year: u64, month: u64) -> Option<u64> {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    Some(match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    })
}

/// Days since 1970-01-01 of a date from 1970 on (H. Hinnant's
/// `days_from_civil`, for years and days that are not negative).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year % 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a day since 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let days = days + 719_468;
    let era = days / 146_097;
    let day_of_era = days % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (Unix seconds, the value written): epoch, a leap day, the turn of a
    /// century that is not leap, and the last second writable.
    const KNOWN: [(u64, &str); 6] = [
        (0, "1970-01-01T00:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (1_764_629_152, "2025-12-01T22:45:52Z"),
        (4_107_542_399, "2100-02-28T23:59:59Z"),
        (4_107_542_400, "2100-03-01T00:00:00Z"),
        (LAST_SECOND, "9999-12-31T23:59:59Z"),
    ];

    #[test]
    fn known_times_are_written_and_read_back() {
        for (seconds, text) in KNOWN {
            assert_eq!(format_heartbeat(seconds), text);
            assert_eq!(parse_heartbeat(text), Ok(seconds), "{text}");
        }
    }

    #[test]
    fn every_day_of_four_centuries_round_trips() {
        // One era of the Gregorian calendar, a second before and at midnight.
        for day in 0..146_097 {
            for seconds in [day * SECONDS_PER_DAY, day * SECONDS_PER_DAY + 86_399] {
                let text = format_heartbeat(seconds);
                assert_eq!(parse_heartbeat(&text), Ok(seconds), "{text}");
            }
        }
    }

    /// (heartbeats offered, now, stale after, stale nodes, complete)
    #[rstest::rstest]
    #[case::none_stale(&[(100, "a"), (200, "b")], 300, 250, &[], true)]
    #[case::the_oldest_stale(&[(200, "b"), (10, "a")], 300, 250, &["a"], true)]
    #[case::all_stale_all_kept(&[(10, "a"), (20, "b")], 1_000, 250, &["a", "b"], true)]
    fn stale_nodes_are_the_oldest(
        #[case] offered: &[(u64, &str)],
        #[case] now: u64,
        #[case] after: u64,
        #[case] stale: &[&str],
        #[case] complete: bool,
    ) {
        let mut heartbeats = OldestHeartbeats::default();
        for (at, node) in offered {
            heartbeats.offer(*at, node);
        }
        let found = heartbeats.stale(now, after);
        let names: Vec<&str> = found.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(names, stale);
        assert_eq!(found.complete, complete);
    }

    #[test]
    fn only_the_oldest_are_kept_and_the_rest_counted() {
        let mut heartbeats = OldestHeartbeats::default();
        // 100 nodes, youngest first: the 32 oldest are kept.
        for index in (0..100_u64).rev() {
            heartbeats.offer(1_000 + index, &format!("node-{index:03}"));
        }
        assert_eq!(heartbeats.oldest().len(), MAX_OLDEST_HEARTBEATS);
        assert_eq!(heartbeats.oldest()[0].node, "node-000");
        assert_eq!(heartbeats.oldest()[31].node, "node-031");
        assert_eq!(heartbeats.seen(), 100);
        // Every kept one stale: more may be.
        assert!(!heartbeats.stale(10_000, 60).complete);
        // Some kept ones fresh: every stale one is kept.
        assert_eq!(heartbeats.stale(1_070, 60).nodes.len(), 10);
        assert!(heartbeats.stale(1_070, 60).complete);
        let text = heartbeats.to_summary_text();
        assert!(
            text.starts_with("1970-01-01T00:16:40Z node-000\n"),
            "{text}"
        );
        assert!(text.ends_with("\n+68"), "{text}");
        assert_eq!(OldestHeartbeats::from_summary_text(&text), Ok(heartbeats));
    }

    #[rstest::rstest]
    #[case::no_node("2026-01-01T00:00:00Z")]
    #[case::bad_time("yesterday node-1")]
    #[case::bad_count("+many")]
    fn unreadable_summary_lines_are_errors(#[case] text: &str) {
        assert!(OldestHeartbeats::from_summary_text(text).is_err());
    }

    #[test]
    fn later_times_are_written_as_the_last_one() {
        assert_eq!(format_heartbeat(u64::MAX), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn hand_written_forms_are_read() {
        assert_eq!(
            parse_heartbeat("2025-12-01T22:45:52.123456Z"),
            Ok(1_764_629_152)
        );
        assert_eq!(
            parse_heartbeat("2025-12-01t22:45:52+00:00"),
            Ok(1_764_629_152)
        );
    }

    #[test]
    fn malformed_values_are_refused() {
        for value in [
            "",
            "2025-12-01",
            "2025-12-01T22:45:52",
            "2025-12-01 22:45:52Z",
            "2025-12-01T22:45:52+01:00",
            "2025-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2025-04-31T00:00:00Z",
            "2025-12-00T00:00:00Z",
            "2025-12-01T24:00:00Z",
            "2025-12-01T23:60:00Z",
            "2025-12-01T23:59:60Z",
            "1969-12-31T23:59:59Z",
            "2025-12-01T22:45:52.Z",
            "+2025-12-01T22:45:52Z",
            "2025-12-01T22:45:52ZZ",
            "２０25-12-01T22:45:52Z",
        ] {
            let error = parse_heartbeat(value).unwrap_err();
            assert_eq!(error.value, value);
            assert!(error.to_string().contains("RFC 3339"), "{error}");
        }
    }

    #[test]
    fn the_key_is_under_the_prefix() {
        assert_eq!(
            LabelPrefix::default().heartbeat_key(),
            "gpu-topology.io/published"
        );
        let prefix = LabelPrefix::new("example.com").unwrap();
        assert_eq!(prefix.heartbeat_key(), "example.com/published");
        // Not a label of the contract: nodes are never grouped by it.
        assert_eq!(prefix.parse_key(&prefix.heartbeat_key()), None);
    }
}
