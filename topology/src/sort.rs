//! Sorting through one instantiation of the standard library's sort.
//!
//! `slice::sort_by` is instantiated per element type and comparator, with
//! its quicksort, drift-sort and small-sort helpers: about 5 KiB of Wasm
//! each, and the policy module sorted at about 20 places (issue #35: the
//! module back under 1 MiB). These sort positions with a comparator
//! behind `&dyn`, so the standard sort is instantiated once, and then move
//! the items once. Stable, O(n log n), as `sort_by`; a few items are
//! sorted by insertion in place.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Up to this many items are sorted by insertion, in place: a few dozen
/// instructions of code per instantiation, and fastest for the NUMA nodes,
/// sockets and hints the kubelet model sorts on every answer.
const INSERTION_MAX: usize = 16;

/// Sorts `items` stably by `compare` (as `slice::sort_by`).
pub fn sort_by<T>(items: &mut [T], compare: impl Fn(&T, &T) -> Ordering) {
    if items.len() <= INSERTION_MAX {
        for sorted in 1..items.len() {
            let mut at = sorted;
            while at > 0 && compare(&items[at - 1], &items[at]) == Ordering::Greater {
                items.swap(at - 1, at);
                at -= 1;
            }
        }
        return;
    }
    let order = {
        let items = &*items;
        sorted_positions(items.len(), &|a, b| compare(&items[a], &items[b]))
    };
    permute(items, order);
}

/// Sorts `items` stably by `key` (as `slice::sort_by_key`).
pub fn sort_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `items` (as `slice::sort`).
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// Collects `items` into a map by inserting them in turn, as `collect`
/// does (the last of equal keys wins). `BTreeMap::from_iter` and
/// `BTreeMap::from([..])` first sort their input with the standard stable
/// sort, instantiated per key and value type: about 5 KiB of Wasm each.
pub fn btree_map<K: Ord, V>(items: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    map.extend(items);
    map
}

/// Collects `items` into a set by inserting them in turn (see [`btree_map`]).
pub fn btree_set<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    set.extend(items);
    set
}

/// The positions `0..len` in the order `compare` gives them.
#[inline(never)]
fn sorted_positions(len: usize, compare: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

/// Moves the item at `order[i]` to `i`, for every `i`, following each
/// cycle of the permutation with swaps.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start || from == at {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same order as the standard library's stable sort, equal
        /// keys in their first order included.
        #[test]
        fn sorts_as_the_standard_stable_sort(items in proptest::collection::vec((0u8..8, any::<u16>()), 0..300)) {
            let mut ours = items.clone();
            sort_by_key(&mut ours, |item| item.0);
            let mut theirs = items;
            theirs.sort_by_key(|item| item.0);
            prop_assert_eq!(ours, theirs);
        }
    }
}
