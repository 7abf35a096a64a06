//! The encoding of the SLIT distance matrix (`numa-distances`): every entry,
//! exactly, in label values.
//!
//! The kernel prints NUMA node `i`'s row of the ACPI SLIT in
//! `/sys/devices/system/node/node<i>/distance`. The kubelet reads the same
//! rows through cadvisor (`GetNodesInfo` → `Node.Distances`) and its
//! Topology Manager compares masks by them under `prefer-closest-numa-nodes`
//! (topologymanager/numa_info.go `NUMADistances`, `NUMAInfo.NUMADistance`:
//! the average distance between the nodes of a mask).
//!
//! The whole value is lowercase base-36 digits (`0`-`9`, `a`-`z`), so that
//! it can be cut anywhere into label values:
//!
//! ```text
//! value     = nodes classes-1 *distance *class
//! nodes     = 2 digits   ; N, the NUMA nodes, 1 to 64
//! classes-1 = 1 digit    ; K - 1, K the distinct distances, 1 to 36
//! distance  = 2 digits   ; K of them, strictly ascending, 0 to 1295
//! class     = 1 digit    ; N(N+1)/2 of them: for each i ≤ j, row-major,
//!                        ; the index of entry (i, j) among the distances
//! ```
//!
//! Only the upper triangle and the diagonal are written, so a matrix that is
//! not symmetric (or not square, or of more than 36 distinct distances, or
//! of a distance above 1295) has no encoding: it is unknown, never a guess.
//! Every distinct distance is used by some entry, so a matrix has exactly
//! one encoding (the shape digest reads it).
//!
//! The value is published in chunks of 63 characters: `numa-distances`,
//! then `numa-distances.1`, `numa-distances.2`, ... ([`chunk_name`]). Every
//! chunk but the last is full; a missing, extra or short chunk makes the
//! whole matrix unknown ([`DistanceChunks::matrix`]). A GB200 tray (34 NUMA
//! nodes) takes 10 labels; 64 nodes at most 35.

use super::{LabelKey, MAX_LABEL_VALUE_LEN, MAX_NUMA_NODES};
use std::collections::BTreeMap;

/// Base of the digits: `0`-`9` then `a`-`z`.
const RADIX: u32 = 36;
/// The largest distance two digits hold.
const MAX_DISTANCE: u32 = RADIX * RADIX - 1;
/// The most distinct distances one class digit tells apart.
const MAX_CLASSES: usize = RADIX as usize;
/// Digits before the classes, beyond the distances: nodes and classes - 1.
const HEADER_DIGITS: usize = 3;
/// The longest value: 64 nodes, 36 distances.
const MAX_VALUE_LEN: usize =
    HEADER_DIGITS + 2 * MAX_CLASSES + MAX_NUMA_NODES * (MAX_NUMA_NODES + 1) / 2;
/// The most chunks a value takes.
pub const MAX_CHUNKS: usize = MAX_VALUE_LEN.div_ceil(MAX_LABEL_VALUE_LEN);

/// Writes a symmetric, square matrix of 1 to 64 rows; `None` when it has no
/// encoding (see the module documentation).
pub fn format_numa_distances(rows: &[Vec<u32>]) -> Option<String> {
    let nodes = rows.len();
    if nodes == 0 || nodes > MAX_NUMA_NODES || rows.iter().any(|row| row.len() != nodes) {
        return None;
    }
    let entry = |i: usize, j: usize| rows.get(i).and_then(|row| row.get(j)).copied();
    let mut distances = Vec::new();
    for i in 0..nodes {
        for j in i..nodes {
            let distance = entry(i, j)?;
            if entry(j, i)? != distance || distance > MAX_DISTANCE {
                return None;
            }
            distances.push(distance);
        }
    }
    crate::sort::sort(&mut distances);
    distances.dedup();
    if distances.len() > MAX_CLASSES {
        return None;
    }
    let mut value = String::with_capacity(MAX_VALUE_LEN);
    push_digits(&mut value, u32::try_from(nodes).ok()?, 2);
    push_digits(&mut value, u32::try_from(distances.len() - 1).ok()?, 1);
    for distance in &distances {
        push_digits(&mut value, *distance, 2);
    }
    for i in 0..nodes {
        for j in i..nodes {
            let class = distances.binary_search(&entry(i, j)?).ok()?;
            push_digits(&mut value, u32::try_from(class).ok()?, 1);
        }
    }
    Some(value)
}

/// Reads a whole value written by [`format_numa_distances`]; `None` for
/// anything else.
pub fn parse_numa_distances(value: &str) -> Option<Vec<Vec<u32>>> {
    if value.len() > MAX_VALUE_LEN {
        return None;
    }
    let mut digits = value.bytes().map(digit);
    let mut take = |width: usize| -> Option<u32> {
        (0..width).try_fold(0, |number, _| Some(number * RADIX + digits.next()??))
    };
    let nodes = usize::try_from(take(2)?).ok()?;
    let classes = usize::try_from(take(1)?).ok()? + 1;
    if nodes == 0 || nodes > MAX_NUMA_NODES {
        return None;
    }
    let distances = (0..classes)
        .map(|_| take(2))
        .collect::<Option<Vec<u32>>>()?;
    if distances.windows(2).any(|pair| pair[0] >= pair[1]) {
        return None;
    }
    let mut rows = vec![vec![0; nodes]; nodes];
    let mut used = vec![false; classes];
    for i in 0..nodes {
        for j in i..nodes {
            let class = usize::try_from(take(1)?).ok()?;
            let distance = *distances.get(class)?;
            if let Some(flag) = used.get_mut(class) {
                *flag = true;
            }
            set(&mut rows, i, j, distance);
            set(&mut rows, j, i, distance);
        }
    }
    let exhausted = take(1).is_none() && value.len() == expected_len(nodes, classes);
    (exhausted && used.iter().all(|used| *used)).then_some(rows)
}

/// The label name of chunk `index`: `numa-distances`, `numa-distances.1`, ...
pub fn chunk_name(index: usize) -> String {
    let name = LabelKey::NumaDistances.name();
    if index == 0 {
        name.to_owned()
    } else {
        [name, ".", &index.to_string()].concat()
    }
}

/// The chunk a label name ([`chunk_name`]) holds, if it is one.
pub fn chunk_of(name: &str) -> Option<usize> {
    let rest = name.strip_prefix(LabelKey::NumaDistances.name())?;
    if rest.is_empty() {
        return Some(0);
    }
    let index = rest.strip_prefix('.')?;
    // One spelling per chunk: no leading zeros, no `.0`.
    if index.starts_with('0') || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    index
        .parse()
        .ok()
        .filter(|index| (1..MAX_CHUNKS).contains(index))
}

/// A whole value cut into its label values, in chunk order.
pub fn chunks(value: &str) -> impl Iterator<Item = (usize, &str)> {
    // The value is ASCII digits and letters: every byte is a character.
    value
        .as_bytes()
        .chunks(MAX_LABEL_VALUE_LEN)
        .filter_map(|chunk| std::str::from_utf8(chunk).ok())
        .enumerate()
}

/// The chunks of a node's labels, gathered in any order, read once all are
/// in ([`DistanceChunks::matrix`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DistanceChunks {
    chunks: BTreeMap<usize, String>,
}

impl DistanceChunks {
    /// Takes the label named `name` when it is a chunk; false otherwise.
    pub fn add(&mut self, name: &str, value: &str) -> bool {
        match chunk_of(name) {
            Some(index) => {
                self.add_chunk(index, value);
                true
            }
            None => false,
        }
    }

    /// Takes chunk `index` ([`chunk_of`], [`crate::LabelPrefix::parse_distance_chunk`]).
    pub fn add_chunk(&mut self, index: usize, value: &str) {
        self.chunks.insert(index, value.to_owned());
    }

    /// True when no chunk was taken.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// The matrix, when the chunks are exactly those of one value: numbered
    /// from 0 without a gap, every one but the last full.
    pub fn matrix(&self) -> Option<Vec<Vec<u32>>> {
        let count = self.chunks.len();
        let mut value = String::with_capacity(count * MAX_LABEL_VALUE_LEN);
        for (position, (index, chunk)) in self.chunks.iter().enumerate() {
            let is_last = position + 1 == count;
            let full = chunk.len() == MAX_LABEL_VALUE_LEN;
            if *index != position || chunk.is_empty() || !(full || is_last) {
                return None;
            }
            value.push_str(chunk);
        }
        parse_numa_distances(&value)
    }
}

fn expected_len(nodes: usize, classes: usize) -> usize {
    HEADER_DIGITS + 2 * classes + nodes * (nodes + 1) / 2
}

fn set(rows: &mut [Vec<u32>], i: usize, j: usize, distance: u32) {
    if let Some(entry) = rows.get_mut(i).and_then(|row| row.get_mut(j)) {
        *entry = distance;
    }
}

/// A lowercase base-36 digit's value.
fn digit(byte: u8) -> Option<u32> {
    match byte {
        b'0'..=b'9' => Some(u32::from(byte - b'0')),
        b'a'..=b'z' => Some(u32::from(byte - b'a') + 10),
        _ => None,
    }
}

/// Appends `number` as exactly `width` base-36 digits (the caller keeps it
/// below `36^width`).
fn push_digits(value: &mut String, number: u32, width: u32) {
    for place in (0..width).rev() {
        let d = (number / RADIX.pow(place)) % RADIX;
        value.push(char::from_digit(d, RADIX).unwrap_or('0'));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn two_sockets() -> Vec<Vec<u32>> {
        vec![vec![10, 21], vec![21, 10]]
    }

    /// GH200 (numactl -H): node 0 Grace, node 1 the GPU's HBM, nodes 2-8 for
    /// MIG; the distances are those of SOURCES.md's record.
    fn gh200() -> Vec<Vec<u32>> {
        let mut rows = vec![vec![80; 9]; 9];
        for (i, row) in rows.iter_mut().enumerate() {
            row[i] = 10;
        }
        rows[0][1..].fill(80);
        rows
    }

    #[rstest]
    // 2 nodes (02), 2 distances (1): 10 = 0a, 21 = 0l; entries 00 01 11.
    #[case::two_sockets(two_sockets(), "0210a0l010")]
    #[case::one_node(vec![vec![10]], "0100a0")]
    fn values_are_written_as_documented(#[case] rows: Vec<Vec<u32>>, #[case] value: &str) {
        assert_eq!(format_numa_distances(&rows).as_deref(), Some(value));
        assert_eq!(parse_numa_distances(value), Some(rows));
    }

    #[rstest]
    #[case::asymmetric(vec![vec![10, 20], vec![21, 10]])]
    #[case::not_square(vec![vec![10, 20], vec![20]])]
    #[case::empty(vec![])]
    #[case::a_distance_too_large(vec![vec![10, 1296], vec![1296, 10]])]
    #[case::too_many_nodes(vec![vec![10; 65]; 65])]
    fn matrices_without_an_encoding_are_unknown(#[case] rows: Vec<Vec<u32>>) {
        assert_eq!(format_numa_distances(&rows), None);
    }

    #[test]
    fn more_than_36_distinct_distances_are_unknown() {
        let rows: Vec<Vec<u32>> = (0..10u32)
            .map(|i| (0..10u32).map(|j| 10 + i.min(j) * 10 + i.max(j)).collect())
            .collect();
        assert_eq!(format_numa_distances(&rows), None);
    }

    #[rstest]
    #[case::empty("")]
    #[case::capitals("0210A0L010")]
    #[case::one_class_short("0210a0l01")]
    #[case::one_class_too_many("0210a0l0100")]
    #[case::class_out_of_range("0210a0l012")]
    #[case::distances_not_ascending("021l00a010")]
    #[case::a_distance_unused("0210a0l000")]
    #[case::zero_nodes("0000a")]
    #[case::sixty_five_nodes("1t00a")]
    #[case::a_separator("0210a0l-010")]
    fn garbled_values_are_unknown(#[case] value: &str) {
        assert_eq!(parse_numa_distances(value), None);
    }

    #[rstest]
    #[case::first("numa-distances", Some(0))]
    #[case::second("numa-distances.1", Some(1))]
    #[case::last(&format!("numa-distances.{}", MAX_CHUNKS - 1), Some(MAX_CHUNKS - 1))]
    #[case::past_the_last(&format!("numa-distances.{MAX_CHUNKS}"), None)]
    #[case::zero_spelled_out("numa-distances.0", None)]
    #[case::leading_zero("numa-distances.01", None)]
    #[case::no_index("numa-distances.", None)]
    #[case::other_name("numa-distancesx", None)]
    fn chunk_names(#[case] name: &str, #[case] index: Option<usize>) {
        assert_eq!(chunk_of(name), index);
        if let Some(index) = index {
            assert_eq!(chunk_name(index), name);
        }
    }

    fn gathered(value: &str, skip: Option<usize>) -> DistanceChunks {
        let mut gathered = DistanceChunks::default();
        for (index, chunk) in chunks(value).filter(|(index, _)| Some(*index) != skip) {
            assert!(gathered.add(&chunk_name(index), chunk));
        }
        gathered
    }

    #[test]
    fn chunks_read_back_and_any_missing_one_makes_the_matrix_unknown() {
        let rows = gh200();
        let value = format_numa_distances(&rows).unwrap();
        assert_eq!(value.len(), 3 + 2 * 2 + 45);
        assert_eq!(gathered(&value, None).matrix(), Some(rows));
        let wide: Vec<Vec<u32>> = (0..34u32)
            .map(|i| {
                (0..34u32)
                    .map(|j| if i == j { 10 } else { 20 + (i ^ j) % 3 * 20 })
                    .collect()
            })
            .collect();
        let value = format_numa_distances(&wide).unwrap();
        let count = chunks(&value).count();
        assert_eq!(count, 10);
        assert_eq!(gathered(&value, None).matrix(), Some(wide));
        for skip in 0..count {
            assert_eq!(gathered(&value, Some(skip)).matrix(), None, "chunk {skip}");
        }
        let mut extra = gathered(&value, None);
        extra.add(&chunk_name(count), "0");
        assert_eq!(extra.matrix(), None);
    }
}
