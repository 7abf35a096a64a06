//! The node shapes of one decision, from the policy's record
//! ([`PodRecord`]): one row per shape with its node count and a few node
//! names, the kubelet's manager settings, the model's verdict, whether the
//! shape takes the pod as its affinity mode needs, and whether the added
//! affinity selects it; the policy's own words for a shape that does not
//! take the pod; and, for `-v`, the model's figures per alignment unit.

use gpu_topology::kubelet::outcome::{HintReport, UnitReport};
use gpu_topology::kubelet::Admission;
use gpu_topology::{LabelPrefix, NodeTopology};
use gpu_topology_policy::decide::adjustment::Adjustment;
use gpu_topology_policy::decide::model::Answer;
use gpu_topology_policy::decide::record::{PodRecord, ShapeRecord, ViewRecord};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Display;

/// How many node names a row shows.
pub const NAMES_SHOWN: usize = 3;

/// The record as the reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordView {
    /// The aligned unit of the demand, in the policy's words.
    pub demand: String,
    /// How the cluster was seen: the policy's record, serialized as it is.
    pub view: ViewRecord,
    pub shapes: Vec<ShapeRow>,
    /// The policy adds required node affinity (its terms select shapes);
    /// without, every shape is `selected`.
    pub adds_required_affinity: bool,
    /// The policy adds preferred node affinity.
    pub adds_preferred_affinity: bool,
    /// The defaults lowered and CPUs rounded for this pod.
    pub adjustments: Vec<String>,
}

/// The kubelet settings of a shape as its labels publish them (`null`:
/// not published).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletSettings {
    pub topology_manager_policy: Option<String>,
    pub topology_manager_scope: Option<String>,
    pub cpu_manager_policy: Option<String>,
    pub full_pcpus_only: Option<bool>,
    pub memory_manager_policy: Option<String>,
}

/// One node shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShapeRow {
    /// The shape label's ID (`null`: the nodes publish none).
    pub shape: Option<String>,
    pub gpus: Option<u32>,
    pub numa_nodes: Option<u32>,
    pub nodes: u32,
    /// The first names of its nodes (at most [`NAMES_KEPT`], in the Node
    /// file's order), when the view came from a Node file (`null` from a
    /// summary or a live read, which do not name nodes here).
    pub node_names: Option<Vec<String>>,
    pub kubelet: KubeletSettings,
    /// The Topology Manager scope the verdict assumes.
    pub scope: String,
    /// `admits-aligned`, `admits-unaligned`, `refuses`, `unknown` or
    /// `contradictory`.
    pub verdict: &'static str,
    pub takes: bool,
    pub selected: bool,
    pub preferred: bool,
    pub why: Option<String>,
    pub fix: Option<String>,
    /// What each NUMA node offers, as the labels publish it (what `-v`
    /// prints against the demand).
    pub numa: Vec<NumaRow>,
    /// The model's figures per alignment unit (what `-v` prints).
    pub units: Vec<UnitRow>,
}

/// One NUMA node of a shape (`null`: not published).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NumaRow {
    pub node: usize,
    pub gpus: Option<u32>,
    pub cpus: Option<u32>,
    pub reserved_cpus: Option<u32>,
    pub memory_mib: Option<u32>,
}

/// One alignment unit's figures on a shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitRow {
    /// `pod`, or `container N` (counted from 0, in the pod's order).
    pub unit: String,
    /// Per resource: `GPUs 4: narrowest 1 NUMA node (1 free), 2 preferred masks`.
    pub resources: Vec<String>,
    /// The merged hint, e.g. `01 preferred` (`null` under policy `none`).
    pub hint: Option<String>,
    pub aligned: bool,
}

fn text(value: Option<impl Display>) -> Option<String> {
    value.map(|value| value.to_string())
}

/// The Node file's nodes grouped by topology, read once per run through
/// the label contract as the policy's Node-list reader reads them, to name
/// the nodes of each shape. Nodes whose labels do not parse are left out
/// (the policy leaves them out too).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeNames {
    /// Each topology and the names of its first [`NAMES_KEPT`] nodes.
    groups: Vec<(NodeTopology, Vec<String>)>,
}

/// How many node names a shape keeps (the report says how many nodes
/// there are): a few, whatever the fleet's size.
pub const NAMES_KEPT: usize = 5;

impl NodeNames {
    /// None: no Node file (a summary or live read names no nodes here).
    pub fn none() -> Self {
        NodeNames::default()
    }

    pub fn read(nodes: &[Value], prefix: &LabelPrefix) -> Self {
        let mut groups: Vec<(NodeTopology, Vec<String>)> = Vec::new();
        for (name, topology) in nodes.iter().filter_map(|node| node_topology(node, prefix)) {
            match groups.iter_mut().find(|(known, _)| *known == topology) {
                Some((_, names)) if names.len() < NAMES_KEPT => names.push(name),
                Some(_) => {}
                None => groups.push((topology, vec![name])),
            }
        }
        NodeNames { groups }
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn of(&self, topology: &NodeTopology) -> Vec<String> {
        self.groups
            .iter()
            .find(|(known, _)| known == topology)
            .map(|(_, names)| names.clone())
            .unwrap_or_default()
    }
}

impl RecordView {
    /// The view of `record`, its shapes' nodes named from `names` when the
    /// view came from the Node list.
    pub fn new(record: &PodRecord, names: &NodeNames) -> Self {
        let names = (!names.is_empty() && matches!(record.view, ViewRecord::NodeList { .. }))
            .then_some(names);
        RecordView {
            demand: record.demand.describe_unit(),
            view: record.view.clone(),
            shapes: record
                .shapes
                .iter()
                .map(|shape| ShapeRow::new(shape, names))
                .collect(),
            adds_required_affinity: !record.affinity.required.is_empty(),
            adds_preferred_affinity: !record.affinity.preferred.is_empty(),
            adjustments: record.adjustments.iter().map(Adjustment::warning).collect(),
        }
    }
}

/// A Node's name and topology, read from its labels through the label
/// contract; `None` for a node without a name or whose labels do not parse.
fn node_topology(node: &Value, prefix: &LabelPrefix) -> Option<(String, NodeTopology)> {
    let name = node
        .pointer("/metadata/name")
        .and_then(Value::as_str)?
        .to_owned();
    let labels = node
        .pointer("/metadata/labels")
        .and_then(Value::as_object)?;
    let texts = labels
        .iter()
        .filter_map(|(key, value)| Some((key.as_str(), value.as_str()?)));
    NodeTopology::from_labels(prefix, texts)
        .ok()
        .map(|topology| (name, topology))
}

impl ShapeRow {
    fn new(shape: &ShapeRecord, names: Option<&NodeNames>) -> Self {
        let topology = &shape.topology;
        let node_names = names.map(|names| names.of(topology));
        ShapeRow {
            shape: text(topology.shape.as_ref()),
            gpus: topology.gpus,
            numa_nodes: topology.numa_nodes,
            nodes: shape.nodes,
            node_names,
            kubelet: KubeletSettings {
                topology_manager_policy: text(topology.topology_manager_policy),
                topology_manager_scope: text(topology.topology_manager_scope),
                cpu_manager_policy: text(topology.cpu_manager_policy),
                full_pcpus_only: topology.full_pcpus_only,
                memory_manager_policy: text(topology.memory_manager_policy),
            },
            scope: shape.scope.to_string(),
            verdict: verdict(&shape.answer),
            takes: shape.takes,
            selected: shape.selected,
            preferred: shape.preferred,
            why: shape.why.clone(),
            fix: shape.fix.clone(),
            numa: numa_rows(topology),
            units: shape.admission.as_ref().map(units).unwrap_or_default(),
        }
    }
}

fn numa_rows(topology: &NodeTopology) -> Vec<NumaRow> {
    let count = topology.numa_nodes.unwrap_or(0) as usize;
    let at =
        |values: &Option<Vec<u32>>, node: usize| values.as_ref().and_then(|v| v.get(node).copied());
    (0..count.min(gpu_topology::kubelet::MAX_NUMA_NODES))
        .map(|node| NumaRow {
            node,
            gpus: at(&topology.numa_gpus, node),
            cpus: at(&topology.numa_cpus, node),
            reserved_cpus: at(&topology.numa_reserved_cpus, node),
            memory_mib: at(&topology.numa_memory_mib, node),
        })
        .collect()
}

/// The model's answer in one word, as the reports write it.
pub fn verdict(answer: &Answer) -> &'static str {
    match answer {
        Answer::Admit { aligned: true } => "admits-aligned",
        Answer::Admit { aligned: false } => "admits-unaligned",
        Answer::Refuse(_) => "refuses",
        Answer::Unknown(_) => "unknown",
        Answer::Contradictory(_) => "contradictory",
    }
}

fn units(admission: &Admission) -> Vec<UnitRow> {
    admission.units.iter().map(unit).collect()
}

fn unit(report: &UnitReport) -> UnitRow {
    UnitRow {
        unit: report
            .container
            .map_or_else(|| "pod".to_owned(), |index| format!("container {index}")),
        resources: report
            .resources
            .iter()
            .map(|resource| {
                let hints = match resource.hints {
                    HintReport::DontCare => "no NUMA preference".to_owned(),
                    HintReport::NoFit => "no NUMA affinity can hold it".to_owned(),
                    HintReport::Hints {
                        narrowest_capacity,
                        narrowest_available,
                        preferred_masks,
                    } => format!(
                        "fits on {narrowest_capacity} NUMA node(s) by capacity, {narrowest_available} by what is free; {preferred_masks} preferred mask(s)"
                    ),
                };
                format!("{} {}: {hints}", resource.resource, resource.request)
            })
            .collect(),
        hint: text(report.hint.as_ref()),
        aligned: report.aligned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, gpus: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"gpu-topology.io/gpus": gpus}}})
    }

    #[test]
    fn a_few_names_are_kept_per_topology_in_file_order() {
        let prefix = LabelPrefix::default();
        let mut nodes: Vec<Value> = (0..7).map(|i| node(&format!("big-{i}"), "8")).collect();
        nodes.push(node("small", "4"));
        nodes.push(node("malformed", "eight"));
        nodes.push(json!({"metadata": {"labels": {"gpu-topology.io/gpus": "8"}}}));
        let names = NodeNames::read(&nodes, &prefix);
        let topology = |gpus: &str| {
            NodeTopology::from_labels(&prefix, [("gpu-topology.io/gpus", gpus)]).unwrap()
        };
        assert_eq!(
            names.of(&topology("8")),
            ["big-0", "big-1", "big-2", "big-3", "big-4"]
        );
        assert_eq!(names.of(&topology("4")), ["small"]);
        assert!(names.of(&topology("2")).is_empty());
    }
}
