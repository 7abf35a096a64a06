//! The fleet summary: the labeled nodes grouped by identical topology, written
//! into one small ConfigMap so that a policy can read the whole fleet in
//! microseconds, whatever the cluster's size.
//!
//! Listing 5,000 Nodes costs the policy-server and the policy milliseconds per
//! admission request, because a node list carries every label and annotation
//! of every node. The groups are what the fit needs, and a fleet has few
//! shapes. `gpu-topology-labeler summarize` writes them with
//! [`FleetSummary::to_data`]; the policy reads them back with
//! [`FleetSummary::from_data`]. Group values use the label contract's names
//! and encoding ([`crate::LabelKey::name`], [`NodeTopology::set`]), so the summary
//! and the node labels cannot disagree.
//!
//! ```text
//! data:
//!   format: gpu-topology.io/fleet-summary/v1
//!   generatedAt: "1764450000"          # Unix seconds
//!   malformedNodes: "0"                # nodes whose labels did not parse
//!   groups: |                          # one line per shape: node count, then name=value
//!     2000 gpus=8 gpus-per-numa-max=4 numa-nodes=2 interconnect=nvlink ...
//!     1500 gpus=4 gpus-per-numa-max=2 ...
//!   oldestHeartbeats: |                # the 32 oldest labeler heartbeats, oldest first
//!     2026-12-01T08:00:00Z gpu-node-17 # (crate::heartbeat); "+N" counts the rest
//!     +3497
//! ```
//!
//! `oldestHeartbeats` is absent from summaries of summarizers before it:
//! freshness is then unknown.

use crate::fleet::Fleet;
use crate::heartbeat::OldestHeartbeats;
use crate::labels::{parse_count, LabelError, NodeTopology};
use std::collections::BTreeMap;
use std::fmt;

/// The `format` value of this version; a reader refuses any other.
pub const SUMMARY_FORMAT: &str = "gpu-topology.io/fleet-summary/v1";
/// The ConfigMap data keys.
pub const FORMAT_KEY: &str = "format";
pub const GENERATED_AT_KEY: &str = "generatedAt";
pub const MALFORMED_KEY: &str = "malformedNodes";
pub const GROUPS_KEY: &str = "groups";
pub const OLDEST_HEARTBEATS_KEY: &str = "oldestHeartbeats";

/// What the summarizer saw when it last listed the labeled nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetSummary {
    pub fleet: Fleet,
    /// Nodes whose labels under the prefix did not parse (left out of `fleet`).
    pub malformed: u32,
    /// When the nodes were listed, in Unix seconds.
    pub generated_at: u64,
    /// The labelers' oldest heartbeats on the nodes listed; `None` from a
    /// summarizer that did not read them.
    pub heartbeats: Option<OldestHeartbeats>,
}

/// Why a summary cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryError {
    Missing(&'static str),
    UnknownFormat(String),
    InvalidNumber { key: &'static str, value: String },
    InvalidGroup { line: usize, problem: String },
    InvalidHeartbeats(String),
}

impl fmt::Display for SummaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SummaryError::Missing(key) => write!(f, "the fleet summary has no {key:?} entry"),
            SummaryError::UnknownFormat(format) => write!(
                f,
                "the fleet summary's format {format:?} is not {SUMMARY_FORMAT:?}"
            ),
            SummaryError::InvalidNumber { key, value } => write!(
                f,
                "the fleet summary's {key:?} is {value:?}, not a non-negative decimal integer"
            ),
            SummaryError::InvalidGroup { line, problem } => {
                write!(f, "the fleet summary's groups, line {line}: {problem}")
            }
            SummaryError::InvalidHeartbeats(problem) => {
                write!(
                    f,
                    "the fleet summary's {OLDEST_HEARTBEATS_KEY:?}: {problem}"
                )
            }
        }
    }
}

impl std::error::Error for SummaryError {}

impl FleetSummary {
    /// The ConfigMap `data` for this summary.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let groups: Vec<String> = self
            .fleet
            .groups()
            .iter()
            .map(|group| {
                let mut line = group.nodes.to_string();
                for (name, value) in group.topology.named_values() {
                    line.push_str(&format!(" {name}={value}"));
                }
                line
            })
            .collect();
        let mut data = BTreeMap::from([
            (FORMAT_KEY.to_owned(), SUMMARY_FORMAT.to_owned()),
            (GENERATED_AT_KEY.to_owned(), self.generated_at.to_string()),
            (MALFORMED_KEY.to_owned(), self.malformed.to_string()),
            (GROUPS_KEY.to_owned(), groups.join("\n")),
        ]);
        if let Some(heartbeats) = &self.heartbeats {
            data.insert(
                OLDEST_HEARTBEATS_KEY.to_owned(),
                heartbeats.to_summary_text(),
            );
        }
        data
    }

    /// Reads a summary from ConfigMap `data` entries. Names this version does
    /// not know (a newer summarizer) are ignored, as on node labels; anything
    /// malformed is an error naming the entry.
    pub fn from_data<'a, I>(data: I) -> Result<Self, SummaryError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let (mut format, mut generated_at, mut malformed, mut groups) = (None, None, None, None);
        let mut heartbeats = None;
        for (key, value) in data {
            match key {
                FORMAT_KEY => format = Some(value),
                GENERATED_AT_KEY => generated_at = Some(value),
                MALFORMED_KEY => malformed = Some(value),
                GROUPS_KEY => groups = Some(value),
                OLDEST_HEARTBEATS_KEY => heartbeats = Some(value),
                _ => {}
            }
        }
        let generated_at = dated(format, generated_at)?;
        let malformed = number(MALFORMED_KEY, malformed)?;
        let malformed = u32::try_from(malformed).map_err(|_| SummaryError::InvalidNumber {
            key: MALFORMED_KEY,
            value: malformed.to_string(),
        })?;
        let groups = groups.ok_or(SummaryError::Missing(GROUPS_KEY))?;
        let mut fleet = Fleet::new();
        for (index, line) in groups.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (nodes, topology) =
                parse_group(line).map_err(|problem| SummaryError::InvalidGroup {
                    line: index + 1,
                    problem,
                })?;
            fleet.add_nodes(topology, nodes);
        }
        let heartbeats = heartbeats
            .map(OldestHeartbeats::from_summary_text)
            .transpose()
            .map_err(|error| SummaryError::InvalidHeartbeats(error.to_string()))?;
        Ok(FleetSummary {
            fleet,
            malformed,
            generated_at,
            heartbeats,
        })
    }

    /// When the summary in ConfigMap `data` was written (Unix seconds), its
    /// format checked: for a reader of another entry (the DRA devices), which
    /// needs the date but not the node groups.
    pub fn generated_at_of(data: &BTreeMap<String, String>) -> Result<u64, SummaryError> {
        dated(
            data.get(FORMAT_KEY).map(String::as_str),
            data.get(GENERATED_AT_KEY).map(String::as_str),
        )
    }

    /// Seconds since the summary was written; 0 for a clock behind it.
    pub fn age(&self, now: u64) -> u64 {
        now.saturating_sub(self.generated_at)
    }
}

/// The summary's date, once its format is known to be this version's.
fn dated(format: Option<&str>, generated_at: Option<&str>) -> Result<u64, SummaryError> {
    let format = format.ok_or(SummaryError::Missing(FORMAT_KEY))?;
    if format != SUMMARY_FORMAT {
        return Err(SummaryError::UnknownFormat(format.to_owned()));
    }
    number(GENERATED_AT_KEY, generated_at)
}

/// A non-negative decimal entry.
fn number(key: &'static str, value: Option<&str>) -> Result<u64, SummaryError> {
    let value = value.ok_or(SummaryError::Missing(key))?;
    parse_u64(value).ok_or_else(|| SummaryError::InvalidNumber {
        key,
        value: value.to_owned(),
    })
}

/// `<nodes> name=value name=value ...`
fn parse_group(line: &str) -> Result<(u32, NodeTopology), String> {
    let mut fields = line.split_ascii_whitespace();
    let count = fields.next().unwrap_or_default();
    let nodes = parse_count(count).ok_or_else(|| format!("{count:?} is not a node count"))?;
    let mut topology = NodeTopology::default();
    for field in fields {
        let (name, value) = field
            .split_once('=')
            .ok_or_else(|| format!("{field:?} is not name=value"))?;
        topology
            .set_named(name, name, value)
            .map_err(|error: LabelError| error.to_string())?;
    }
    Ok((nodes, topology))
}

fn parse_u64(value: &str) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::{Interconnect, TopologyManagerPolicy};

    fn hgx() -> NodeTopology {
        NodeTopology {
            gpus: Some(8),
            gpus_per_numa_max: Some(4),
            numa_nodes: Some(2),
            nvlink_group_max: Some(8),
            interconnect: Some(Interconnect::NvLink),
            topology_manager_policy: Some(TopologyManagerPolicy::SingleNumaNode),
            ..NodeTopology::default()
        }
    }

    fn l4() -> NodeTopology {
        NodeTopology {
            gpus: Some(4),
            gpus_per_numa_max: Some(2),
            ..NodeTopology::default()
        }
    }

    fn summary() -> FleetSummary {
        let mut fleet = Fleet::new();
        fleet.add_nodes(hgx(), 2000);
        fleet.add_nodes(l4(), 1500);
        FleetSummary {
            fleet,
            malformed: 3,
            generated_at: 1_764_450_000,
            heartbeats: None,
        }
    }

    fn data(entries: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        entries.to_vec()
    }

    #[test]
    fn writes_one_line_per_shape_with_contract_names() {
        let data = summary().to_data();
        assert_eq!(data[FORMAT_KEY], SUMMARY_FORMAT);
        assert_eq!(data[GENERATED_AT_KEY], "1764450000");
        assert_eq!(data[MALFORMED_KEY], "3");
        assert_eq!(
            data[GROUPS_KEY],
            "2000 gpus=8 gpus-per-numa-max=4 numa-nodes=2 nvlink-group-max=8 interconnect=nvlink topology-manager-policy=single-numa-node\n\
             1500 gpus=4 gpus-per-numa-max=2"
        );
    }

    #[test]
    fn reads_back_what_it_writes() {
        let written = summary().to_data();
        let read =
            FleetSummary::from_data(written.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(read, summary());
        assert_eq!(read.fleet.nodes(), 3500);
    }

    /// A machine of many NUMA nodes as the labeler labels it: its per-NUMA
    /// lists in runs and its 34x34 distance matrix (ten label chunks) come
    /// back whole from the summary, where the matrix is one uncut value.
    #[rstest::rstest]
    #[case::gb200_tray(include_str!(
        "../../labeler/tests/fixtures/sysfs/gb200-tray.grace-many-numa-nodes.labels"
    ))]
    #[case::gh200(include_str!(
        "../../labeler/tests/fixtures/sysfs/gh200.grace-many-numa-nodes.labels"
    ))]
    fn many_numa_nodes_read_back_whole(#[case] labels: &str) {
        let pairs = labels.lines().filter_map(|line| line.split_once('='));
        let topology = NodeTopology::from_labels(&crate::LabelPrefix::default(), pairs).unwrap();
        assert!(topology.numa_distances.is_some());
        let mut fleet = Fleet::new();
        fleet.add_nodes(topology.clone(), 18);
        let written = FleetSummary {
            fleet,
            malformed: 0,
            generated_at: 1,
            heartbeats: None,
        }
        .to_data();
        let read =
            FleetSummary::from_data(written.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(read.fleet.groups()[0].topology, topology);
    }

    #[test]
    fn ignores_names_and_entries_it_does_not_know() {
        let read = FleetSummary::from_data(data(&[
            (FORMAT_KEY, SUMMARY_FORMAT),
            (GENERATED_AT_KEY, "5"),
            (MALFORMED_KEY, "0"),
            (GROUPS_KEY, "7 gpus=4 future-label=x\n\n"),
            ("comment", "written by a newer summarizer"),
        ]))
        .unwrap();
        assert_eq!(read.fleet.nodes(), 7);
        assert_eq!(read.fleet.groups()[0].topology.gpus, Some(4));
    }

    #[test]
    fn an_empty_fleet_is_a_summary_too() {
        let read = FleetSummary::from_data(data(&[
            (FORMAT_KEY, SUMMARY_FORMAT),
            (GENERATED_AT_KEY, "5"),
            (MALFORMED_KEY, "0"),
            (GROUPS_KEY, ""),
        ]))
        .unwrap();
        assert!(read.fleet.is_empty());
    }

    #[rstest::rstest]
    #[case::no_format(&[(GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "0"), (GROUPS_KEY, "")], "no \"format\" entry")]
    #[case::other_format(&[(FORMAT_KEY, "v9"), (GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "0"), (GROUPS_KEY, "")], "format \"v9\" is not")]
    #[case::no_time(&[(FORMAT_KEY, SUMMARY_FORMAT), (MALFORMED_KEY, "0"), (GROUPS_KEY, "")], "no \"generatedAt\" entry")]
    #[case::negative_time(&[(FORMAT_KEY, SUMMARY_FORMAT), (GENERATED_AT_KEY, "-1"), (MALFORMED_KEY, "0"), (GROUPS_KEY, "")], "\"generatedAt\" is \"-1\"")]
    #[case::huge_malformed(&[(FORMAT_KEY, SUMMARY_FORMAT), (GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "99999999999"), (GROUPS_KEY, "")], "\"malformedNodes\" is \"99999999999\"")]
    #[case::no_groups(&[(FORMAT_KEY, SUMMARY_FORMAT), (GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "0")], "no \"groups\" entry")]
    #[case::bad_count(&[(FORMAT_KEY, SUMMARY_FORMAT), (GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "0"), (GROUPS_KEY, "1 gpus=8\nmany gpus=8")], "line 2: \"many\" is not a node count")]
    #[case::bad_field(&[(FORMAT_KEY, SUMMARY_FORMAT), (GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "0"), (GROUPS_KEY, "1 gpus")], "line 1: \"gpus\" is not name=value")]
    #[case::bad_value(&[(FORMAT_KEY, SUMMARY_FORMAT), (GENERATED_AT_KEY, "1"), (MALFORMED_KEY, "0"), (GROUPS_KEY, "1 gpus=eight")], "line 1: ")]
    fn malformed_summaries_are_errors_naming_the_entry(
        #[case] entries: &[(&'static str, &'static str)],
        #[case] expected: &str,
    ) {
        let error = FleetSummary::from_data(data(entries))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{error}");
    }

    #[test]
    fn age_never_goes_negative() {
        let summary = summary();
        assert_eq!(summary.age(summary.generated_at + 30), 30);
        assert_eq!(summary.age(0), 0);
    }
}
