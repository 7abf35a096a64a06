//! NUMA masks and sets of masks.
//!
//! [`NumaMask`] is the kubelet's `bitmask.BitMask`
//! (`pkg/kubelet/cm/topologymanager/bitmask/bitmask.go`): bit `i` is NUMA node
//! `i`. [`MaskSet`] holds any set of masks of one machine as a bitset indexed
//! by the mask's value, so the Topology Manager's hint lists become set
//! operations instead of nested loops.

use std::fmt;

/// The most NUMA nodes whose masks the model enumerates (a [`MaskSet`] holds
/// 2^N bits). The kubelet itself stops at `max-allowable-numa-nodes`
/// (default 8); above 16 the 2^N masks every hint provider walks are too
/// many to reproduce on each admission, so larger machines are reasoned
/// about on the NUMA nodes that matter to the pod (`projection.rs`, the
/// projection).
pub const MAX_NUMA_NODES: usize = 16;

/// The most NUMA nodes a [`NumaMask`] holds: the kubelet's `bitMask` is a
/// `uint64` (`bitmask.go`), so no kubelet runs the Topology Manager on more.
pub const MAX_MACHINE_NUMA_NODES: usize = 64;

/// A set of NUMA nodes, as the kubelet's `bitMask` (a `uint64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NumaMask(u64);

impl NumaMask {
    pub const EMPTY: NumaMask = NumaMask(0);

    /// The mask with the given bit pattern (bit `i` = NUMA node `i`).
    pub const fn from_bits(bits: u64) -> Self {
        NumaMask(bits)
    }

    /// Every NUMA node of an `nodes`-node machine: the kubelet's default
    /// affinity (`NUMAInfo.DefaultAffinityMask`). `nodes` is at most
    /// [`MAX_MACHINE_NUMA_NODES`]; larger values are clamped.
    pub fn all(nodes: usize) -> Self {
        let nodes = nodes.min(MAX_MACHINE_NUMA_NODES);
        if nodes == 0 {
            NumaMask::EMPTY
        } else {
            NumaMask(u64::MAX >> (MAX_MACHINE_NUMA_NODES - nodes))
        }
    }

    /// The mask holding NUMA node `node` alone (empty above the cap).
    pub fn single(node: usize) -> Self {
        if node < MAX_MACHINE_NUMA_NODES {
            NumaMask(1 << node)
        } else {
            NumaMask::EMPTY
        }
    }

    /// The mask of the listed nodes; `None` if one is at or above the cap.
    pub fn from_nodes(nodes: &[usize]) -> Option<Self> {
        nodes.iter().try_fold(NumaMask::EMPTY, |mask, &node| {
            (node < MAX_MACHINE_NUMA_NODES).then(|| mask.with(node))
        })
    }

    pub const fn bits(self) -> u64 {
        self.0
    }

    /// `BitMask.Count`.
    pub const fn count(self) -> u32 {
        self.0.count_ones()
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn with(self, node: usize) -> Self {
        NumaMask(self.0 | NumaMask::single(node).0)
    }

    pub const fn and(self, other: NumaMask) -> Self {
        NumaMask(self.0 & other.0)
    }

    pub const fn or(self, other: NumaMask) -> Self {
        NumaMask(self.0 | other.0)
    }

    /// The nodes of `within` that are not in `self`.
    pub const fn complement_in(self, within: NumaMask) -> Self {
        NumaMask(within.0 & !self.0)
    }

    pub const fn is_subset_of(self, other: NumaMask) -> bool {
        self.0 & !other.0 == 0
    }

    /// `BitMask.IsNarrowerThan`: fewer nodes, or as many and a smaller value
    /// (more low-numbered nodes).
    pub const fn is_narrower_than(self, other: NumaMask) -> bool {
        if self.count() == other.count() {
            self.0 < other.0
        } else {
            self.count() < other.count()
        }
    }

    /// The NUMA node ids in the mask, ascending (`BitMask.GetBits`).
    pub fn nodes(self) -> impl Iterator<Item = usize> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let node = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            Some(node)
        })
    }

    /// The lowest NUMA node of the mask.
    pub fn first(self) -> Option<usize> {
        (!self.is_empty()).then(|| self.0.trailing_zeros() as usize)
    }
}

impl fmt::Display for NumaMask {
    /// The node list, e.g. `{0,1}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, node) in self.nodes().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{node}")?;
        }
        f.write_str("}")
    }
}

/// Every non-empty mask of an `nodes`-node machine, ascending by value
/// (at most [`MAX_NUMA_NODES`] nodes: larger values are clamped, as every
/// enumeration is).
pub fn all_masks(nodes: usize) -> impl Iterator<Item = NumaMask> {
    (1..=NumaMask::all(nodes.min(MAX_NUMA_NODES)).bits()).map(NumaMask::from_bits)
}

/// The subsets of `mask` (including the empty one and `mask` itself).
pub fn subsets(mask: NumaMask) -> impl Iterator<Item = NumaMask> {
    // Walks sub = (sub - 1) & mask down from mask, then the empty set.
    let mut next = Some(mask.bits());
    std::iter::from_fn(move || {
        let sub = next?;
        next = (sub != 0).then(|| (sub - 1) & mask.bits());
        Some(NumaMask::from_bits(sub))
    })
}

/// A set of masks of one machine: bit `m` of the bitset is mask `m`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MaskSet {
    words: Vec<u64>,
    nodes: usize,
}

const WORD_BITS: usize = 64;

impl MaskSet {
    /// The empty set for an `nodes`-node machine (clamped to the cap).
    pub fn empty(nodes: usize) -> Self {
        let nodes = nodes.min(MAX_NUMA_NODES);
        let masks = 1usize << nodes;
        MaskSet {
            words: vec![0; masks.div_ceil(WORD_BITS)],
            nodes,
        }
    }

    /// The set holding the listed masks (masks outside the machine are left out).
    pub fn of(nodes: usize, masks: impl IntoIterator<Item = NumaMask>) -> Self {
        let mut set = MaskSet::empty(nodes);
        for mask in masks {
            set.insert(mask);
        }
        set
    }

    /// Every non-empty mask of the machine.
    pub fn every_mask(nodes: usize) -> Self {
        let mut set = MaskSet::empty(nodes);
        let masks = 1usize << set.nodes;
        for (i, word) in set.words.iter_mut().enumerate() {
            let first = i * WORD_BITS;
            let in_word = masks.saturating_sub(first).min(WORD_BITS);
            *word = if in_word == WORD_BITS {
                u64::MAX
            } else {
                (1u64 << in_word) - 1
            };
        }
        set.remove(NumaMask::EMPTY);
        set
    }

    pub fn nodes(&self) -> usize {
        self.nodes
    }

    fn slot(&self, mask: NumaMask) -> Option<(usize, u64)> {
        // Checked on the u64 first: `usize` is 32 bits on wasm32.
        if mask.bits() >> self.nodes != 0 {
            return None;
        }
        let index = usize::try_from(mask.bits()).ok()?;
        Some((index / WORD_BITS, 1u64 << (index % WORD_BITS)))
    }

    /// Adds `mask`; a mask naming a node the machine lacks is ignored.
    pub fn insert(&mut self, mask: NumaMask) {
        if let Some((word, bit)) = self.slot(mask) {
            if let Some(w) = self.words.get_mut(word) {
                *w |= bit;
            }
        }
    }

    pub fn remove(&mut self, mask: NumaMask) {
        if let Some((word, bit)) = self.slot(mask) {
            if let Some(w) = self.words.get_mut(word) {
                *w &= !bit;
            }
        }
    }

    pub fn contains(&self, mask: NumaMask) -> bool {
        self.slot(mask)
            .and_then(|(word, bit)| self.words.get(word).map(|w| w & bit != 0))
            .unwrap_or(false)
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Keeps the masks that are also in `other`.
    pub fn intersect_with(&mut self, other: &MaskSet) {
        for (w, o) in self.words.iter_mut().zip(other.words.iter()) {
            *w &= o;
        }
    }

    pub fn union_with(&mut self, other: &MaskSet) {
        for (w, o) in self.words.iter_mut().zip(other.words.iter()) {
            *w |= o;
        }
    }

    /// The masks, ascending by value.
    pub fn iter(&self) -> impl Iterator<Item = NumaMask> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(NumaMask::from_bits((i * WORD_BITS + bit) as u64))
            })
        })
    }

    /// Whether every superset (within the machine) of a member is a member:
    /// true of every hint list built from "enough free resources in the mask".
    /// Checked a node at a time on whole words: adding node `b` to every
    /// member without it must land on members.
    pub fn is_upward_closed(&self) -> bool {
        /// Bit positions (within a word) of masks without node `b`, b < 6.
        const WITHOUT: [u64; 6] = [
            0x5555_5555_5555_5555,
            0x3333_3333_3333_3333,
            0x0F0F_0F0F_0F0F_0F0F,
            0x00FF_00FF_00FF_00FF,
            0x0000_FFFF_0000_FFFF,
            0x0000_0000_FFFF_FFFF,
        ];
        let masks = 1usize << self.nodes;
        for (b, without) in WITHOUT.iter().enumerate().take(self.nodes) {
            // Within a word only the low `masks` bits exist.
            let valid = if masks >= WORD_BITS {
                u64::MAX
            } else {
                (1u64 << masks) - 1
            };
            for &word in &self.words {
                let raised = ((word & without) << (1 << b)) & valid;
                if raised & !word != 0 {
                    return false;
                }
            }
        }
        for b in 6..self.nodes {
            let stride = 1usize << (b - 6);
            for (i, &word) in self.words.iter().enumerate() {
                if i & stride == 0 {
                    let above = self.words.get(i + stride).copied().unwrap_or(0);
                    if word & !above != 0 {
                        return false;
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::fewer_nodes_win(0b01, 0b11, true)]
    #[case::more_nodes_lose(0b11, 0b01, false)]
    #[case::same_count_lower_nodes_win(0b011, 0b101, true)]
    #[case::same_count_higher_nodes_lose(0b110, 0b101, false)]
    #[case::equal_is_not_narrower(0b10, 0b10, false)]
    fn narrower_follows_bitmask_go(#[case] a: u32, #[case] b: u32, #[case] expected: bool) {
        assert_eq!(
            NumaMask::from_bits(a.into()).is_narrower_than(NumaMask::from_bits(b.into())),
            expected
        );
    }

    #[test]
    fn subsets_walk_every_subset_once() {
        let subs: Vec<u64> = subsets(NumaMask::from_bits(0b101))
            .map(NumaMask::bits)
            .collect();
        assert_eq!(subs, vec![0b101, 0b100, 0b001, 0]);
    }

    #[test]
    fn mask_set_iterates_ascending_and_ignores_foreign_masks() {
        let mut set = MaskSet::empty(2);
        set.insert(NumaMask::from_bits(0b11));
        set.insert(NumaMask::from_bits(0b01));
        set.insert(NumaMask::from_bits(0b100));
        let masks: Vec<u64> = set.iter().map(NumaMask::bits).collect();
        assert_eq!(masks, vec![0b01, 0b11]);
        assert!(!set.contains(NumaMask::from_bits(0b100)));
    }

    #[rstest]
    #[case::supersets_present(3, &[0b001, 0b011, 0b101, 0b111], true)]
    #[case::missing_superset(3, &[0b001, 0b011, 0b111], false)]
    #[case::empty_set(3, &[], true)]
    #[case::across_words(7, &[0b100_0000, 0b111_1111], false)]
    fn upward_closure_is_checked_word_by_word(
        #[case] nodes: usize,
        #[case] masks: &[u32],
        #[case] expected: bool,
    ) {
        let set = MaskSet::of(nodes, masks.iter().map(|&m| NumaMask::from_bits(m.into())));
        assert_eq!(set.is_upward_closed(), expected);
        // The same answer as asking every member and node.
        let all = NumaMask::all(nodes);
        let slow = set.iter().all(|m| {
            m.complement_in(all)
                .nodes()
                .all(|n| set.contains(m.with(n)))
        });
        assert_eq!(slow, expected);
    }

    #[test]
    fn upward_closure_matches_the_definition_on_every_set_of_three_nodes() {
        let all = NumaMask::all(3);
        for bits in 0u32..256 {
            let set = MaskSet::of(
                3,
                (0..8)
                    .filter(|m| bits & (1 << m) != 0)
                    .map(NumaMask::from_bits),
            );
            let slow = set.iter().all(|m| {
                m.complement_in(all)
                    .nodes()
                    .all(|n| set.contains(m.with(n)))
            });
            assert_eq!(set.is_upward_closed(), slow, "set {bits:#b}");
        }
    }

    #[test]
    fn sixteen_nodes_fit() {
        let set = MaskSet::every_mask(16);
        assert_eq!(set.len(), 65535);
        assert!(set.is_upward_closed());
    }

    #[test]
    fn display_lists_nodes() {
        assert_eq!(NumaMask::from_bits(0b1010).to_string(), "{1,3}");
        assert_eq!(NumaMask::EMPTY.to_string(), "{}");
    }
}
