//! Finding equal node shapes and facts in constant time.
//!
//! A fleet of thousands of distinct shapes made every linear search over
//! its groups quadratic (issue #35). These maps use FxHash (`rustc-hash`,
//! the compiler's own): fast on the small integers and short vectors node
//! facts are made of, deterministic (no random seed from the Wasm host),
//! and the keys come from node labels, which only the cluster's
//! administrators and the labeler write. SipHash, the standard library's,
//! cost the summary path a fifth of its instructions.

use rustc_hash::FxBuildHasher;
use std::hash::{BuildHasher, Hash};

/// A hash map with FxHash.
pub type FastMap<K, V> = std::collections::HashMap<K, V, FxBuildHasher>;

/// Up to this many distinct items are compared one by one: cheaper than
/// hashing for the handful of shapes most fleets have (two node facts
/// usually differ in their first fields).
const LINEAR_MAX: usize = 16;

/// Positions of distinct items: finds the first item equal to a new one
/// without keeping a copy of the items. A few are compared one by one;
/// past [`LINEAR_MAX`] they are found by hash, so thousands of distinct
/// items cost time linear in their number, not quadratic. One map entry
/// per distinct item: unequal items of one 64-bit hash go to a short list
/// apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FirstEqual {
    /// The positions of the distinct items while they are few.
    few: Vec<usize>,
    /// Past [`LINEAR_MAX`]: the first position of each hash.
    first: FastMap<u64, usize>,
    /// Later items whose hash an unequal item had first.
    collided: Vec<(u64, usize)>,
}

impl FirstEqual {
    /// The position of the first recorded item equal to `item` (`at` gives
    /// the item at a position); otherwise records `item` at `position` and
    /// returns `None`.
    pub fn find_or_record<'a, T: Hash + Eq + 'a>(
        &mut self,
        item: &T,
        position: usize,
        at: impl Fn(usize) -> Option<&'a T>,
    ) -> Option<usize> {
        let equal = |known: usize| at(known).is_some_and(|known| known == item);
        if self.first.is_empty() {
            if let Some(found) = self.few.iter().copied().find(|&known| equal(known)) {
                return Some(found);
            }
            if self.few.len() < LINEAR_MAX {
                self.few.push(position);
                return None;
            }
            // Many distinct items: hash those seen, then this one.
            for known in std::mem::take(&mut self.few) {
                if let Some(known_item) = at(known) {
                    self.record(FxBuildHasher.hash_one(known_item), known);
                }
            }
            self.record(FxBuildHasher.hash_one(item), position);
            return None;
        }
        let hash = FxBuildHasher.hash_one(item);
        let Some(&first) = self.first.get(&hash) else {
            self.first.insert(hash, position);
            return None;
        };
        let found = std::iter::once(first)
            .chain(
                self.collided
                    .iter()
                    .filter(|(collided, _)| *collided == hash)
                    .map(|(_, known)| *known),
            )
            .find(|&known| equal(known));
        if found.is_none() {
            self.collided.push((hash, position));
        }
        found
    }

    /// Records a distinct item's position under its hash.
    fn record(&mut self, hash: u64, position: usize) {
        match self.first.get(&hash) {
            Some(_) => self.collided.push((hash, position)),
            None => {
                self.first.insert(hash, position);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Below and past the count where items are found by hash.
    #[rstest::rstest]
    #[case::a_few(3)]
    #[case::many(100)]
    fn finds_the_first_of_many_distinct_items(#[case] distinct: usize) {
        let items: Vec<usize> = (0..distinct * 3).map(|i| i % distinct).collect();
        let mut first = FirstEqual::default();
        for (position, item) in items.iter().enumerate() {
            let found = first.find_or_record(item, position, |i| items.get(i));
            assert_eq!(
                found,
                (position >= distinct).then_some(item % distinct),
                "{position}"
            );
        }
    }

    #[test]
    fn finds_the_first_equal_item_and_records_new_ones() {
        let items = ["a", "b", "a", "c", "b"];
        let mut first = FirstEqual::default();
        let found: Vec<Option<usize>> = items
            .iter()
            .enumerate()
            .map(|(position, item)| first.find_or_record(item, position, |i| items.get(i)))
            .collect();
        assert_eq!(found, [None, None, Some(0), None, Some(1)]);
    }
}
