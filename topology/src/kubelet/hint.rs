//! Topology hints as the hint providers hand them to the Topology Manager.
//!
//! The kubelet passes hints as `map[resource][]TopologyHint` per provider
//! (`topologymanager.HintProvider.GetTopologyHints`). A `nil` list means "no
//! preference" and an empty list "no possible affinity"
//! (`filterProvidersHints`, `pkg/kubelet/cm/topologymanager/policy.go`). The
//! order of a list never changes the merged result (see [`crate::kubelet::merge`]),
//! so a list is kept here as a [`HintSet`]: which masks it offers, preferred or
//! not, and whether it holds `nil`-affinity entries.

use super::mask::{MaskSet, NumaMask};
use std::fmt;

/// `topologymanager.TopologyHint`: a NUMA affinity (`None` is the `nil`
/// affinity, "any NUMA node") and whether it is preferred.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TopologyHint {
    pub mask: Option<NumaMask>,
    pub preferred: bool,
}

impl TopologyHint {
    pub const fn new(mask: NumaMask, preferred: bool) -> Self {
        TopologyHint {
            mask: Some(mask),
            preferred,
        }
    }

    /// The `nil`-affinity hint.
    pub const fn any(preferred: bool) -> Self {
        TopologyHint {
            mask: None,
            preferred,
        }
    }
}

impl fmt::Display for TopologyHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mask {
            Some(mask) => write!(f, "{mask}")?,
            None => f.write_str("any")?,
        }
        f.write_str(if self.preferred {
            " (preferred)"
        } else {
            " (not preferred)"
        })
    }
}

/// One resource's hint list, as a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HintSet {
    /// Masks offered with `Preferred: true`.
    pub preferred: MaskSet,
    /// Masks offered with `Preferred: false`.
    pub not_preferred: MaskSet,
    /// The list holds `{nil, true}`.
    pub any_preferred: bool,
    /// The list holds `{nil, false}`.
    pub any_not_preferred: bool,
}

impl HintSet {
    /// The empty list of an `nodes`-node machine: "no possible affinity".
    pub fn empty(nodes: usize) -> Self {
        HintSet {
            preferred: MaskSet::empty(nodes),
            not_preferred: MaskSet::empty(nodes),
            any_preferred: false,
            any_not_preferred: false,
        }
    }

    /// The one-entry list `{nil, preferred}`.
    pub fn any(nodes: usize, preferred: bool) -> Self {
        HintSet {
            any_preferred: preferred,
            any_not_preferred: !preferred,
            ..HintSet::empty(nodes)
        }
    }

    /// The set of a hint list.
    pub fn from_hints(nodes: usize, hints: &[TopologyHint]) -> Self {
        let mut set = HintSet::empty(nodes);
        for hint in hints {
            set.add(*hint);
        }
        set
    }

    pub fn add(&mut self, hint: TopologyHint) {
        match (hint.mask, hint.preferred) {
            (Some(mask), true) => self.preferred.insert(mask),
            (Some(mask), false) => self.not_preferred.insert(mask),
            (None, true) => self.any_preferred = true,
            (None, false) => self.any_not_preferred = true,
        }
    }

    pub fn nodes(&self) -> usize {
        self.preferred.nodes()
    }

    pub fn is_empty(&self) -> bool {
        self.preferred.is_empty()
            && self.not_preferred.is_empty()
            && !self.any_preferred
            && !self.any_not_preferred
    }

    /// The masks a permutation may pick from this list, a `nil` entry
    /// counting as the default affinity (`mergePermutation` ANDs it away).
    pub fn options(&self) -> MaskSet {
        let mut options = self.preferred.clone();
        options.union_with(&self.not_preferred);
        if self.any_preferred || self.any_not_preferred {
            options.insert(NumaMask::all(self.nodes()));
        }
        options
    }

    /// The fewest nodes of any non-`nil` entry (`narrowestHint`), if any.
    pub fn narrowest_count(&self) -> Option<u32> {
        self.preferred
            .iter()
            .chain(self.not_preferred.iter())
            .map(NumaMask::count)
            .min()
    }
}

/// One resource's answer from a hint provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceHints {
    /// `nil`: the provider has no NUMA preference for the resource.
    DontCare,
    /// The hint list; empty means no NUMA affinity can satisfy the request.
    List(HintSet),
}

/// What one hint provider returns for a container or pod: one entry per
/// resource it manages for it. No entries (`nil` or an empty map) means "no
/// preference for any resource".
pub type ProviderHints = Vec<ResourceHints>;

/// `filterProvidersHints`: one hint list per (provider, resource), with "no
/// preference" turned into `[{nil, true}]` and "no possible affinity" into
/// `[{nil, false}]`.
pub fn filter_providers_hints(nodes: usize, providers: &[ProviderHints]) -> Vec<HintSet> {
    let mut lists = Vec::new();
    for provider in providers {
        if provider.is_empty() {
            lists.push(HintSet::any(nodes, true));
            continue;
        }
        for resource in provider {
            lists.push(match resource {
                ResourceHints::DontCare => HintSet::any(nodes, true),
                ResourceHints::List(set) if set.is_empty() => HintSet::any(nodes, false),
                ResourceHints::List(set) => set.clone(),
            });
        }
    }
    lists
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_turns_nil_and_empty_into_any_hints() {
        let providers = vec![
            vec![],
            vec![ResourceHints::DontCare],
            vec![ResourceHints::List(HintSet::empty(2))],
        ];
        let lists = filter_providers_hints(2, &providers);
        assert_eq!(
            lists,
            vec![
                HintSet::any(2, true),
                HintSet::any(2, true),
                HintSet::any(2, false)
            ]
        );
    }

    #[test]
    fn options_count_nil_as_default_affinity() {
        let set = HintSet::from_hints(
            2,
            &[
                TopologyHint::new(NumaMask::from_bits(1), true),
                TopologyHint::any(false),
            ],
        );
        let options: Vec<u64> = set.options().iter().map(NumaMask::bits).collect();
        assert_eq!(options, vec![0b01, 0b11]);
        assert_eq!(set.narrowest_count(), Some(1));
    }
}
