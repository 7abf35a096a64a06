//! Parsers for sysfs attribute files: PCI ids and class, `numa_node`, a NUMA
//! node's `cpulist` and `meminfo`.

use super::{parse_decimal, ParseError};

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

/// Counts the CPUs in a `cpulist` such as `0-23,48-71`. An empty list (a
/// memory-only node) has no CPUs.
pub fn parse_cpulist(text: &str) -> Result<u32, ParseError> {
    let list = text.trim();
    if list.is_empty() {
        return Ok(0);
    }
    let invalid = |part: &str| {
        ParseError::new(
            CONTEXT,
            format!("cpulist {list:?} has an invalid entry {part:?}"),
        )
    };
    let mut count: u32 = 0;
    for part in list.split(',') {
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (parse_decimal(first), parse_decimal(last)),
            None => (parse_decimal(part), parse_decimal(part)),
        };
        match (first, last) {
            (Some(first), Some(last)) if first <= last => {
                count = count
                    .checked_add(last - first + 1)
                    .ok_or_else(|| invalid(part))?;
            }
            _ => return Err(invalid(part)),
        }
    }
    Ok(count)
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
}
