//! The kubelet changes `what-if --set KEY=VALUE --shape ID` tries, applied
//! to node facts through the label contract.

use gpu_topology::{LabelKey, LabelPrefix, NodeTopology, ShapeId, ValueKind};
use std::fmt;

/// One kubelet setting set to a value on the chosen shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletChange {
    pub key: LabelKey,
    /// The value as the label carries it.
    pub value: String,
}

impl KubeletChange {
    /// Reads `KEY=VALUE`: KEY is a kubelet setting as `KubeletConfiguration`
    /// names it (`topologyManagerPolicy`, `cpuManagerPolicyOptions.full-pcpus-only`)
    /// or the name of the label that publishes it (`topology-manager-policy`);
    /// VALUE is checked as the label's value would be.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (name, value) = text
            .split_once('=')
            .ok_or_else(|| format!("--set {text:?}: expected KEY=VALUE"))?;
        let key = LabelKey::from_kubelet_setting(name)
            .or_else(|| LabelKey::from_name(name).filter(|key| key.kubelet_setting().is_some()))
            .ok_or_else(|| {
                let known: Vec<&str> = LabelKey::ALL
                    .into_iter()
                    .filter_map(LabelKey::kubelet_setting)
                    .collect();
                format!(
                    "--set {text:?}: {name:?} is not a kubelet setting the labeler publishes; expected one of {}",
                    known.join(", ")
                )
            })?;
        // The kubelet spells `memoryManagerPolicy: Static`; labels are lowercase.
        let value = match key.kind() {
            ValueKind::Word => value.to_ascii_lowercase(),
            _ => value.to_owned(),
        };
        NodeTopology::default()
            .set_strictly(key, name, &value)
            .map_err(|error| format!("--set {text:?}: {error}"))?;
        Ok(KubeletChange { key, value })
    }
}

impl fmt::Display for KubeletChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let setting = self.key.kubelet_setting().unwrap_or(self.key.name());
        write!(f, "{setting}={}", self.value)
    }
}

/// The kubelet changes of one what-if and the shapes they apply to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetChange {
    pub settings: Vec<KubeletChange>,
    /// The shapes changed; every GPU node's when empty.
    pub shapes: Vec<ShapeId>,
}

impl FleetChange {
    /// Reads `--set` and `--shape` arguments.
    pub fn parse(settings: &[String], shapes: &[String]) -> Result<Self, String> {
        let settings = settings
            .iter()
            .map(|text| KubeletChange::parse(text))
            .collect::<Result<_, _>>()?;
        let shapes = shapes
            .iter()
            .map(|text| {
                ShapeId::parse(text).ok_or_else(|| {
                    format!("--shape {text:?}: a shape ID is 16 lowercase hexadecimal digits, as the {} label holds", LabelKey::Shape.name())
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(FleetChange { settings, shapes })
    }

    pub fn is_empty(&self) -> bool {
        self.settings.is_empty()
    }

    /// Whether the change applies to a node with these facts: a GPU node of
    /// a chosen shape.
    pub fn applies_to(&self, topology: &NodeTopology) -> bool {
        topology.gpus.is_some()
            && (self.shapes.is_empty()
                || topology
                    .shape
                    .is_some_and(|shape| self.shapes.contains(&shape)))
    }

    /// The node's facts after the change, its shape recomputed from them as
    /// the labeler would; `None` where the change does not apply.
    pub fn apply(&self, topology: &NodeTopology, prefix: &LabelPrefix) -> Option<NodeTopology> {
        if !self.applies_to(topology) {
            return None;
        }
        let mut changed = topology.clone();
        for setting in &self.settings {
            // Checked when parsed: the value is one the label can hold.
            changed
                .set_strictly(setting.key, &prefix.key(setting.key), &setting.value)
                .ok()?;
        }
        Some(if topology.shape.is_some() {
            changed.with_shape()
        } else {
            changed
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_topology::TopologyManagerPolicy;
    use rstest::rstest;

    #[rstest]
    #[case::kubelet_name(
        "topologyManagerPolicy=restricted",
        LabelKey::TopologyManagerPolicy,
        "restricted"
    )]
    #[case::label_name(
        "topology-manager-policy=single-numa-node",
        LabelKey::TopologyManagerPolicy,
        "single-numa-node"
    )]
    #[case::kubelet_spelling_of_memory(
        "memoryManagerPolicy=Static",
        LabelKey::MemoryManagerPolicy,
        "static"
    )]
    #[case::a_policy_option(
        "cpuManagerPolicyOptions.full-pcpus-only=true",
        LabelKey::CpuManagerFullPcpusOnly,
        "true"
    )]
    fn kubelet_changes_are_read_as_labels(
        #[case] text: &str,
        #[case] key: LabelKey,
        #[case] value: &str,
    ) {
        assert_eq!(
            KubeletChange::parse(text),
            Ok(KubeletChange {
                key,
                value: value.to_owned()
            })
        );
    }

    #[rstest]
    #[case::no_equals("topologyManagerPolicy", "expected KEY=VALUE")]
    #[case::hardware_label("gpus=4", "\"gpus\" is not a kubelet setting")]
    #[case::unknown_setting("evictionHard=1", "\"evictionHard\" is not a kubelet setting")]
    #[case::bad_word("topologyManagerPolicy=strict", "strict")]
    #[case::bad_flag("cpuManagerPolicyOptions.full-pcpus-only=yes", "true or false")]
    fn bad_changes_are_refused_naming_them(#[case] text: &str, #[case] expected: &str) {
        let error = KubeletChange::parse(text).unwrap_err();
        assert!(error.contains(expected), "{error}");
        assert!(error.contains(text), "{error}");
    }

    #[test]
    fn a_shape_is_sixteen_hex_digits() {
        let error = FleetChange::parse(&[], &["p5".to_owned()]).unwrap_err();
        assert!(error.contains("16 lowercase hexadecimal digits"), "{error}");
    }

    #[test]
    fn a_change_reshapes_only_the_chosen_gpu_nodes() {
        let prefix = LabelPrefix::default();
        let node = NodeTopology {
            gpus: Some(8),
            topology_manager_policy: Some(TopologyManagerPolicy::BestEffort),
            ..NodeTopology::default()
        }
        .with_shape();
        let other = NodeTopology {
            gpus: Some(4),
            ..NodeTopology::default()
        }
        .with_shape();
        let shape = node.shape.unwrap().to_string();
        let change =
            FleetChange::parse(&["topologyManagerPolicy=restricted".to_owned()], &[shape]).unwrap();
        let changed = change.apply(&node, &prefix).unwrap();
        assert_eq!(
            changed.topology_manager_policy,
            Some(TopologyManagerPolicy::Restricted)
        );
        assert_ne!(changed.shape, node.shape, "the labeler would reshape it");
        assert_eq!(changed.shape, Some(changed.shape_id()));
        assert_eq!(change.apply(&other, &prefix), None);
        assert_eq!(change.apply(&NodeTopology::default(), &prefix), None);
    }
}
