//! Parsers for sysfs attribute files: PCI ids and class, `numa_node`, id
//! lists (a NUMA node's `cpulist`, the online CPUs and nodes), a node's
//! `meminfo` and hugepage counts, and the CPU topology attributes.

use super::{parse_decimal, ParseError};
use std::collections::BTreeSet;

const CONTEXT: &str = "sysfs";

/// Parses a hexadecimal attribute such as `vendor` (`0x10de`) or `class` (`0x030200`).
pub fn parse_hex_attribute(text: &str) -> Result<u32, ParseError> {
    let value = text.trim();
    value
        .strip_prefix("0x")
        .filter(|digits| !digits.is_empty() && digits.len() <= 8)
        .and_then(|digits| u32::from_str_radix(digits, 16).ok())
        .ok_or_else(|| {
            ParseError::new(
                CONTEXT,
                format!("{value:?} is not a 0x-prefixed hex number"),
            )
        })
}

/// Parses `numa_node`: a node id, or `None` for -1 (no NUMA affinity known).
pub fn parse_numa_node(text: &str) -> Result<Option<u32>, ParseError> {
    match text.trim() {
        "-1" => Ok(None),
        value => parse_decimal(value).map(Some).ok_or_else(|| {
            ParseError::new(
                CONTEXT,
                format!("numa_node {value:?} is neither -1 nor a node id"),
            )
        }),
    }
}

/// Most ids one list may name. Linux builds for at most 8192 CPUs today; a
/// list naming more is not a CPU list, and expanding it would cost memory.
pub const MAX_LIST_IDS: usize = 65_536;

/// Parses a kernel id list such as a node's `cpulist` (`0-23,48-71`),
/// `devices/system/cpu/online` or `devices/system/node/online` (`0-3`), and
/// the kubelet's `reservedSystemCPUs`, which uses the same syntax. An empty
/// list (a memory-only node) names no id.
pub fn parse_id_list(text: &str) -> Result<BTreeSet<u32>, ParseError> {
    let list = text.trim();
    let mut ids = BTreeSet::new();
    if list.is_empty() {
        return Ok(ids);
    }
    let invalid = |part: &str| {
        ParseError::new(
            CONTEXT,
            format!("list {list:?} has an invalid entry {part:?}"),
        )
    };
    for part in list.split(',') {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (parse_decimal(first), parse_decimal(last)),
            None => (parse_decimal(part), parse_decimal(part)),
        };
        match (first, last) {
            (Some(first), Some(last)) if first <= last => {
                let span = usize::try_from(last - first).map_err(|_| invalid(part))?;
                if ids.len().saturating_add(span) >= MAX_LIST_IDS {
                    return Err(ParseError::new(
                        CONTEXT,
                        format!("list {list:?} names more than {MAX_LIST_IDS} ids"),
                    ));
                }
                ids.extend(first..=last);
            }
            _ => return Err(invalid(part)),
        }
    }
    Ok(ids)
}

/// Counts the CPUs in a `cpulist` ([`parse_id_list`]).
pub fn parse_cpulist(text: &str) -> Result<u32, ParseError> {
    let count = parse_id_list(text)?.len();
    u32::try_from(count)
        .map_err(|_| ParseError::new(CONTEXT, format!("{count} CPUs do not fit a count")))
}

/// Parses a non-negative decimal attribute such as `nr_hugepages`, `core_id`
/// or `physical_package_id`; `what` names it in the error.
pub fn parse_decimal_attribute(text: &str, what: &str) -> Result<u64, ParseError> {
    let value = text.trim();
    if value.is_empty()
        || value.len() > MAX_U64_DIGITS
        || !value.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(ParseError::new(
            CONTEXT,
            format!("{what} {value:?} is not a non-negative decimal number"),
        ));
    }
    value
        .parse()
        .map_err(|_| ParseError::new(CONTEXT, format!("{what} {value:?} is out of range")))
}

/// Reads a NUMA node's `distance` row: the SLIT distances to every node in
/// id order, decimal, separated by spaces (`10 21`), as the kernel prints
/// them (drivers/base/node.c `node_read_distance`) and cAdvisor reads them
/// (utils/sysinfo/sysinfo.go `getDistances`, into `Node.Distances`).
pub fn parse_distances(text: &str) -> Result<Vec<u32>, ParseError> {
    let row = text
        .split_ascii_whitespace()
        .map(|field| {
            parse_decimal_attribute(field, "distance").and_then(|distance| {
                u32::try_from(distance).map_err(|_| {
                    ParseError::new(CONTEXT, format!("distance {distance} is out of range"))
                })
            })
        })
        .collect::<Result<Vec<u32>, ParseError>>()?;
    if row.is_empty() {
        return Err(ParseError::new(CONTEXT, "the distance row is empty"));
    }
    Ok(row)
}

/// Digits of `u64::MAX`.
const MAX_U64_DIGITS: usize = 20;

/// The page size in KiB of a NUMA node's hugepage directory, named as the
/// kernel names it (`hugepages-2048kB`): the names cAdvisor's
/// `GetHugePagesInfo` reads (utils/sysinfo/sysinfo.go), which fails on others.
pub fn parse_hugepages_dir_name(name: &str) -> Result<u64, ParseError> {
    name.strip_prefix("hugepages-")
        .and_then(|rest| rest.strip_suffix("kB"))
        .filter(|digits| !digits.is_empty() && digits.len() < MAX_U64_DIGITS)
        .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse().ok())
        .filter(|&kib: &u64| kib > 0)
        .ok_or_else(|| {
            ParseError::new(
                CONTEXT,
                format!("{name:?} is not a hugepages-<size>kB directory"),
            )
        })
}

/// Reads `MemTotal` in KiB from a NUMA node's `meminfo`, whose lines look like
/// `Node 0 MemTotal:       263856504 kB`.
pub fn parse_meminfo_total_kib(text: &str, node: u32) -> Result<u64, ParseError> {
    let prefix = format!("Node {node} MemTotal:");
    let line = text
        .lines()
        .find_map(|line| line.trim_start().strip_prefix(prefix.as_str()))
        .ok_or_else(|| {
            ParseError::new(
                CONTEXT,
                format!("meminfo of node {node} has no {prefix:?} line"),
            )
        })?;
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some(amount), Some("kB"), None) if amount.bytes().all(|b| b.is_ascii_digit()) => {
            amount.parse().map_err(|_| {
                ParseError::new(
                    CONTEXT,
                    format!("MemTotal {amount:?} of node {node} is out of range"),
                )
            })
        }
        _ => Err(ParseError::new(
            CONTEXT,
            format!(
                "MemTotal line of node {node} is {:?}, expected \"<number> kB\"",
                line.trim()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::nvidia("0x10de\n", 0x10de)]
    #[case::three_d_controller("0x030200\n", 0x030200)]
    fn hex_attributes(#[case] text: &str, #[case] expected: u32) {
        assert_eq!(parse_hex_attribute(text), Ok(expected));
    }

    #[rstest]
    #[case::no_prefix("10de")]
    #[case::empty("")]
    #[case::not_hex("0xzz")]
    #[case::too_long("0x1234567890")]
    fn bad_hex_attributes(#[case] text: &str) {
        assert!(parse_hex_attribute(text).is_err());
    }

    #[rstest]
    #[case::unknown("-1\n", Ok(None))]
    #[case::node("3\n", Ok(Some(3)))]
    #[case::other_negative("-2", Err(()))]
    #[case::garbage("zero", Err(()))]
    fn numa_node(#[case] text: &str, #[case] expected: Result<Option<u32>, ()>) {
        assert_eq!(parse_numa_node(text).map_err(|_| ()), expected);
    }

    #[rstest]
    #[case::ranges_and_singles("0-2,5,7-8\n", Ok(vec![0, 1, 2, 5, 7, 8]))]
    #[case::empty("", Ok(vec![]))]
    #[case::overlapping_ranges_name_each_id_once("0-3,2-5", Ok(vec![0, 1, 2, 3, 4, 5]))]
    #[case::too_many_ids("0-999999999", Err(()))]
    #[case::space_inside("0, 1", Err(()))]
    fn id_lists(#[case] text: &str, #[case] expected: Result<Vec<u32>, ()>) {
        assert_eq!(
            parse_id_list(text)
                .map(|ids| ids.into_iter().collect())
                .map_err(|_| ()),
            expected
        );
    }

    #[rstest]
    #[case::two_mebibytes("hugepages-2048kB", Ok(2048))]
    #[case::one_gibibyte("hugepages-1048576kB", Ok(1_048_576))]
    #[case::no_unit("hugepages-2048", Err(()))]
    #[case::other_unit("hugepages-2MB", Err(()))]
    #[case::zero("hugepages-0kB", Err(()))]
    #[case::other_name("nr_hugepages", Err(()))]
    fn hugepage_directories(#[case] name: &str, #[case] expected: Result<u64, ()>) {
        assert_eq!(parse_hugepages_dir_name(name).map_err(|_| ()), expected);
    }

    #[rstest]
    #[case::count("512\n", Ok(512))]
    #[case::negative("-1", Err(()))]
    #[case::empty("\n", Err(()))]
    #[case::overflow("99999999999999999999999", Err(()))]
    fn decimal_attributes(#[case] text: &str, #[case] expected: Result<u64, ()>) {
        assert_eq!(
            parse_decimal_attribute(text, "nr_hugepages").map_err(|_| ()),
            expected
        );
    }

    #[rstest]
    #[case::two_ranges("0-23,48-71\n", Ok(48))]
    #[case::single_cpus("0,2,4", Ok(3))]
    #[case::memory_only_node("\n", Ok(0))]
    #[case::reversed_range("5-1", Err(()))]
    #[case::dangling_dash("0-", Err(()))]
    #[case::double_comma("0,,1", Err(()))]
    fn cpulist(#[case] text: &str, #[case] expected: Result<u32, ()>) {
        assert_eq!(parse_cpulist(text).map_err(|_| ()), expected);
    }

    #[rstest]
    #[case::typical(
        "Node 0 MemTotal:       263856504 kB\nNode 0 MemFree: 1 kB\n",
        0,
        Ok(263856504)
    )]
    #[case::other_node("Node 1 MemTotal: 5 kB\n", 0, Err(()))]
    #[case::no_unit("Node 0 MemTotal: 5\n", 0, Err(()))]
    #[case::truncated("Node 0 MemTot", 0, Err(()))]
    fn meminfo(#[case] text: &str, #[case] node: u32, #[case] expected: Result<u64, ()>) {
        assert_eq!(
            parse_meminfo_total_kib(text, node).map_err(|_| ()),
            expected
        );
    }

    #[rstest]
    #[case::two_sockets("10 21\n", Ok(vec![10, 21]))]
    #[case::one_node("10", Ok(vec![10]))]
    #[case::grace_tray_row("10 40 80 80\n", Ok(vec![10, 40, 80, 80]))]
    #[case::empty("\n", Err(()))]
    #[case::negative("10 -1", Err(()))]
    #[case::a_word("10 far", Err(()))]
    #[case::too_large("10 99999999999", Err(()))]
    fn distance_rows(#[case] text: &str, #[case] expected: Result<Vec<u32>, ()>) {
        assert_eq!(parse_distances(text).map_err(|_| ()), expected);
    }
}
