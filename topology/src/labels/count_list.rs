//! The encoding of per-NUMA count lists (`numa-cpus`, `numa-devices.*`, ...):
//! one count per NUMA node of the machine, in NUMA id order.
//!
//! Grammar (every written value is a Kubernetes label value, at most 63
//! characters):
//!
//! ```text
//! list  = entry *( "." entry )
//! entry = count [ "_" times ]     ; "_" times: `count` repeated `times` times
//! count = decimal digits          ; 0 to 4294967295
//! times = decimal digits          ; 1 to 64
//! ```
//!
//! The writer uses the plain form (`4.4`, no `_`) whenever it fits 63
//! characters, so every value written before runs existed stays byte for
//! byte. Otherwise it writes each run of equal counts as `count_times`
//! where that is shorter than writing the run out (`72.72.0_32`: 72, 72
//! and 32 zeros; `0.0` stays as it is, `0_2` is no shorter). The reader
//! accepts both forms and any mix. At most [`MAX_NUMA_NODES`] entries: the
//! kubelet's NUMA masks are one `uint64` (topologymanager/bitmask
//! `bitmask.go` `NewBitMask`), so no machine the kubelet runs on has more.

use super::{parse_count, MAX_LABEL_VALUE_LEN, MAX_NUMA_NODES};

/// Separates the entries of a list.
const ENTRY_SEPARATOR: char = '.';
/// Separates a count from the number of times it repeats.
const RUN_SEPARATOR: char = '_';

/// Writes per-NUMA counts as a label value (`4.4`, or `72.72.0_32` when the
/// plain form would pass 63 characters); `None` when there are none, more
/// than [`MAX_NUMA_NODES`], or even the run form exceeds a label value's 63
/// characters (the value is then unknown, never cut short).
pub fn format_count_list(counts: &[u32]) -> Option<String> {
    if counts.is_empty() || counts.len() > MAX_NUMA_NODES {
        return None;
    }
    let plain = counts
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".");
    if plain.len() <= MAX_LABEL_VALUE_LEN {
        return Some(plain);
    }
    let runs = runs(counts)
        .map(|(count, times)| run_text(count, times))
        .collect::<Vec<_>>()
        .join(".");
    (runs.len() <= MAX_LABEL_VALUE_LEN).then_some(runs)
}

/// Reads per-NUMA counts written as [`format_count_list`] writes them, in
/// either form; `None` for anything else, or for more than
/// [`MAX_NUMA_NODES`] entries (checked before any run is expanded, so a
/// hostile `0_4294967295` allocates nothing).
pub fn parse_count_list(value: &str) -> Option<Vec<u32>> {
    if value.is_empty() || value.len() > MAX_LABEL_VALUE_LEN {
        return None;
    }
    let mut counts = Vec::new();
    for entry in value.split(ENTRY_SEPARATOR) {
        let (count, times) = match entry.split_once(RUN_SEPARATOR) {
            None => (parse_count(entry)?, 1),
            Some((count, times)) => (parse_count(count)?, parse_count(times)?),
        };
        let times = usize::try_from(times).ok()?;
        if times == 0 || times > MAX_NUMA_NODES - counts.len() {
            return None;
        }
        counts.extend(std::iter::repeat_n(count, times));
    }
    Some(counts)
}

/// Maximal runs of equal counts, as `(count, times)`.
fn runs(counts: &[u32]) -> impl Iterator<Item = (u32, usize)> + '_ {
    counts
        .chunk_by(|a, b| a == b)
        .filter_map(|run| run.first().map(|count| (*count, run.len())))
}

/// A run as the shorter of `count_times` and the counts written out.
fn run_text(count: u32, times: usize) -> String {
    let single = count.to_string();
    let written_out = times * single.len() + (times - 1);
    let compact = format!("{single}{RUN_SEPARATOR}{times}");
    if compact.len() < written_out {
        compact
    } else {
        vec![single; times].join(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::one_node("8", Some(vec![8]))]
    #[case::two_nodes("4.4", Some(vec![4, 4]))]
    #[case::zeros("0.2.0.2", Some(vec![0, 2, 0, 2]))]
    #[case::empty("", None)]
    #[case::trailing_dot("4.", None)]
    #[case::leading_dot(".4", None)]
    #[case::too_large_an_entry("4.99999999999", None)]
    fn plain_lists(#[case] value: &str, #[case] expected: Option<Vec<u32>>) {
        assert_eq!(parse_count_list(value), expected);
        if let Some(counts) = expected {
            assert_eq!(format_count_list(&counts).as_deref(), Some(value));
        }
    }

    fn gb200_cpus() -> Vec<u32> {
        let mut counts = vec![72, 72];
        counts.extend([0; 32]);
        counts
    }

    /// Values the writer produces where the plain form does not fit.
    #[rstest]
    #[case::grace_trays_memory_only_nodes(gb200_cpus(), "72_2.0_32")]
    #[case::sixty_four_equal_nodes(vec![1_000_000; 64], "1000000_64")]
    #[case::short_runs_stay_written_out(
        [vec![0, 0], vec![123_456; 9], vec![7; 2]].concat(),
        "0.0.123456_9.7.7"
    )]
    fn run_lists(#[case] counts: Vec<u32>, #[case] value: &str) {
        assert!(
            counts
                .iter()
                .map(|c| c.to_string() + ".")
                .collect::<String>()
                .len()
                > 64
        );
        assert_eq!(format_count_list(&counts).as_deref(), Some(value));
        assert_eq!(parse_count_list(value), Some(counts));
    }

    /// The reader takes runs anywhere, also where the writer would not
    /// write them; it refuses what no writer writes.
    #[rstest]
    #[case::a_run_of_one("4_1.4", Some(vec![4, 4]))]
    #[case::a_short_run("0_2", Some(vec![0, 0]))]
    #[case::sixty_four("1_64", Some(vec![1; 64]))]
    #[case::sixty_five("1_64.1", None)]
    #[case::huge_run("0_4294967295", None)]
    #[case::zero_times("4_0", None)]
    #[case::no_times("4_", None)]
    #[case::no_count("_4", None)]
    #[case::two_runs_in_an_entry("4_2_2", None)]
    #[case::signed_times("4_-2", None)]
    fn runs_read(#[case] value: &str, #[case] expected: Option<Vec<u32>>) {
        assert_eq!(parse_count_list(value), expected);
    }

    /// A list that would not fit a label value even in runs is unknown,
    /// never cut short.
    #[test]
    fn lists_too_long_even_in_runs_are_left_out() {
        let distinct: Vec<u32> = (1_000_000..1_000_016).collect();
        assert_eq!(format_count_list(&distinct), None);
        assert_eq!(format_count_list(&[0; 65]), None);
        assert_eq!(format_count_list(&[]), None);
    }
}
