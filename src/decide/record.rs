//! The decision as the operator's tool reads it (`gpu-topology explain`):
//! the policy's answer and, for a GPU pod or pod template, the record it
//! was made from, with the verdict of every node shape.
//!
//! Nothing here decides: the policy's own pipeline, run once
//! ([`super::explain_with`]), hands its plan to [`PodRecord::new`], which
//! only puts it into owned, plain data. The words for a shape that does
//! not take the pod are the policy's own ([`explain::why_and_fix`]): those
//! the policy's message already made are read from its verdicts, the
//! others are made here, because only the tool shows them for every shape.

use crate::cluster::Unavailable;
use crate::decide::adjustment::Adjustment;
use crate::decide::affinity::AffinityRequirement;
use crate::decide::answer::{Decision, MutatedObject};
use crate::decide::claim::pod::DraStage;
use crate::decide::demand::Demand;
use crate::decide::fit::Sight;
use crate::decide::model::{Answer, Need};
use crate::decide::plan::PodPlan;
use crate::decide::rejection::Rejection;
use crate::decide::{explain, qos};
use crate::settings::Config;
use gpu_topology::kubelet::Admission;
use gpu_topology::selector::terms_match;
use gpu_topology::{NodeTopology, TopologyManagerScope};
use serde::Serialize;

/// The policy's answer to one request and the record behind it (the
/// pipeline's stages answer with `Object` the changed JSON tree).
#[derive(Debug, Clone, PartialEq)]
pub struct Explained<Object = MutatedObject> {
    /// Exactly what [`super::evaluate_with`] answers.
    pub decision: Decision<Object>,
    /// The GPU pod or workload template decided; `None` when the request
    /// is no GPU pod, or is accepted before its pod is read (an exempt
    /// namespace, an update that leaves the template alone, a malformed
    /// GPU count), or when the caller did not ask for the record
    /// ([`super::evaluate_with`]).
    pub pod: Option<PodRecord>,
    /// The DRA stage of a Pod that names claims: each claim's record, and
    /// the rejection or warnings the stage added to [`Self::decision`].
    pub dra: Option<DraStage>,
}

impl<Object> From<Decision<Object>> for Explained<Object> {
    fn from(decision: Decision<Object>) -> Self {
        Explained {
            decision,
            pod: None,
            dra: None,
        }
    }
}

/// What the policy decided about one GPU pod, stage by stage.
#[derive(Debug, Clone, PartialEq)]
pub struct PodRecord {
    /// The GPU demand, computed once from the spec.
    pub demand: Demand,
    /// How the cluster was seen.
    pub view: ViewRecord,
    /// The kubelet's answer on every node shape of the view, on the pod as
    /// planned (its QoS edits made); empty without a view.
    pub shapes: Vec<ShapeRecord>,
    /// The Guaranteed-QoS edits written into the pod.
    pub qos_edits: Vec<qos::Edit>,
    /// The defaults lowered and the CPUs rounded for this pod, one per
    /// adjustment made, with their figures (their words are among the
    /// decision's warnings).
    pub adjustments: Vec<Adjustment>,
    /// The node affinity merged into the pod (none for a workload, whose
    /// pods get it when they are created).
    pub affinity: AffinityRequirement,
    /// Why the pod is rejected, if it is, with its figures (the decision's
    /// message words it).
    pub rejection: Option<Rejection>,
}

/// How the cluster was seen for the decision. Serialized as the tool's
/// reports show it (`source: nodeList`, `summary`, `static` or
/// `unavailable`, with the figures beside).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "camelCase")]
pub enum ViewRecord {
    /// Read from the labels of the Node list.
    #[serde(rename_all = "camelCase")]
    NodeList {
        /// The labeled GPU nodes in the fit.
        nodes: u32,
        /// The nodes left out for malformed labels.
        malformed: u32,
    },
    /// Read from the fleet summary.
    Summary { nodes: u32 },
    /// `capacity.source: static`: the cluster is not read.
    Static,
    /// No view, and why.
    Unavailable { reason: String },
}

/// One node shape (nodes with identical topology labels) and the kubelet's
/// answer there.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeRecord {
    /// The facts as read from the labels: the shape ID and the kubelet's
    /// manager settings among them.
    pub topology: NodeTopology,
    pub nodes: u32,
    /// The Topology Manager scope the answer assumes.
    pub scope: TopologyManagerScope,
    pub answer: Answer,
    /// The nodes take the pod as its affinity mode needs (hosted at the
    /// alignment under `required`, not refused otherwise).
    pub takes: bool,
    /// The pod's added required affinity lets the scheduler choose these
    /// nodes (true when it adds no required terms).
    pub selected: bool,
    /// The pod's added preferred affinity favours these nodes.
    pub preferred: bool,
    /// Why the nodes do not take the pod as needed, in the policy's words.
    pub why: Option<String>,
    /// What to change so that they would.
    pub fix: Option<String>,
    /// The model's units, hints and per-NUMA figures behind the answer.
    pub admission: Option<Admission>,
}

impl PodRecord {
    /// The record of `plan`, made for `demand` (moved in, not copied).
    pub(crate) fn new(demand: Demand, plan: PodPlan, config: &Config) -> Self {
        let PodPlan {
            sight,
            verdicts,
            qos_edits,
            notes,
            requirement,
            rejection,
        } = plan;
        let need = Need::for_pod(config);
        let (view, shapes) = match sight {
            Sight::Static => (ViewRecord::Static, Vec::new()),
            Sight::Unavailable(Unavailable::NodeList(reason) | Unavailable::Summary(reason)) => (
                ViewRecord::Unavailable {
                    reason: reason.clone(),
                },
                Vec::new(),
            ),
            Sight::Unavailable(Unavailable::TooManyShapes { shapes }) => (
                ViewRecord::Unavailable {
                    reason: format!(
                        "{shapes} distinct node shapes, more than the {} one admission decides on",
                        crate::cluster::MAX_SHAPES
                    ),
                },
                Vec::new(),
            ),
            Sight::View(view) => {
                let nodes = view.fleet.groups().iter().map(|group| group.nodes).sum();
                let record = if view.from_node_list {
                    ViewRecord::NodeList {
                        nodes,
                        malformed: view.malformed,
                    }
                } else {
                    ViewRecord::Summary { nodes }
                };
                let shapes = verdicts
                    .into_iter()
                    .map(|verdict| {
                        let group = verdict.group;
                        let takes = verdict.takes(need, &demand.pod);
                        let (why, fix) = if takes {
                            (None, None)
                        } else {
                            let (why, fix) = explain::why_and_fix(&demand, need, &verdict);
                            (Some(why.clone()), Some(fix.clone()))
                        };
                        ShapeRecord {
                            selected: requirement.required.is_empty()
                                || terms_match(&requirement.required, &group.topology),
                            preferred: !requirement.preferred.is_empty()
                                && terms_match(&requirement.preferred, &group.topology),
                            topology: group.topology.clone(),
                            nodes: group.nodes,
                            scope: verdict.scope,
                            takes,
                            why,
                            fix,
                            answer: verdict.answer,
                            admission: verdict.admission,
                        }
                    })
                    .collect();
                (record, shapes)
            }
        };
        PodRecord {
            demand,
            view,
            shapes,
            qos_edits,
            adjustments: notes.adjustments,
            affinity: requirement,
            rejection,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::host::ClusterReader;
    use crate::decide::answer::Verdict;
    use crate::decide::testing::{
        config, hgx, hgx_full_pcpus_only, l4, pod, runs, VERDICTS, WHY_AND_FIX,
    };
    use crate::decide::{evaluate_with, explain_with};
    use crate::request::AdmissionRequest;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::{
        GetResourceRequest, ListAllResourcesRequest,
    };
    use rstest::rstest;
    use serde_json::{json, Value};

    /// A cluster that lists these nodes and has no fleet summary.
    struct Nodes(Vec<(NodeTopology, u32)>);

    impl ClusterReader for Nodes {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            let prefix = gpu_topology::LabelPrefix::default();
            let items: Vec<Value> = (self.0.iter())
                .flat_map(|(topology, count)| (0..*count).map(move |_| topology))
                .enumerate()
                .map(|(index, topology)| {
                    json!({"metadata": {"name": format!("node-{index}"), "labels": topology.to_labels(&prefix)}})
                })
                .collect();
            Ok(serde_json::to_vec(&json!({ "items": items })).unwrap())
        }

        fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
            Err("configmaps \"gpu-topology-fleet-summary\" not found".to_owned())
        }
    }

    /// A cluster that refuses every read.
    struct Refusing;

    impl ClusterReader for Refusing {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            Err("not allowed".to_owned())
        }

        fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
            Err("not allowed".to_owned())
        }
    }

    fn pod_request(spec: Value) -> String {
        json!({
            "uid": "1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "train", "namespace": "ml", "operation": "CREATE",
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train"}, "spec": spec},
        })
        .to_string()
    }

    /// What the record says per shape: (nodes, takes, selected, why given).
    type Row = (u32, bool, bool, bool);

    #[rstest]
    #[case::both_shapes_take_four_gpus(4, vec![(hgx("single-numa-node"), 3), (l4(), 2)], false, vec![(3, true, true, false), (2, true, true, false)])]
    #[case::a_single_numa_kubelet_refuses_five(5, vec![(hgx("single-numa-node"), 3), (hgx("best-effort"), 2)], false, vec![(3, false, false, true), (2, true, true, false)])]
    #[case::no_shape_takes_eight_aligned(8, vec![(hgx("single-numa-node"), 3), (l4(), 2)], true, vec![(3, false, true, true), (2, false, true, true)])]
    fn the_record_has_every_shapes_verdict_and_the_answer_evaluate_gives(
        #[case] gpus: u32,
        #[case] fleet: Vec<(NodeTopology, u32)>,
        #[case] rejected: bool,
        #[case] rows: Vec<Row>,
    ) {
        let config = config(json!({}));
        let text = pod_request(pod(gpus, 16));
        let request = AdmissionRequest::parse(&text).unwrap();
        let cluster = Nodes(fleet);
        let explained = explain_with(&request, &config, &cluster);
        assert_eq!(
            explained.decision,
            evaluate_with(&request, &config, &cluster)
        );
        let record = explained.pod.expect("a GPU pod has a record");
        assert_eq!(
            record.view,
            ViewRecord::NodeList {
                nodes: rows.iter().map(|row| row.0).sum(),
                malformed: 0
            }
        );
        let got: Vec<Row> = (record.shapes.iter())
            .map(|s| {
                (
                    s.nodes,
                    s.takes,
                    s.selected,
                    s.why.is_some() && s.fix.is_some(),
                )
            })
            .collect();
        assert_eq!(got, rows);
        assert_eq!(record.rejection.is_some(), rejected);
        if let (Verdict::Reject(message), Some(rejection)) =
            (&explained.decision.verdict, &record.rejection)
        {
            assert_eq!(*message, rejection.message(&config.label_prefix));
        }
        assert!(
            !record.qos_edits.is_empty(),
            "the pod's memory request is filled in"
        );
    }

    fn gpus_only(gpus: u32) -> Value {
        json!({"containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}]})
    }

    /// Each stage runs once per admission (issue #36): the fleet's verdicts
    /// are built once, whatever the adjustments (which answer them again),
    /// and each shape that does not take the pod is worded once, though
    /// both the policy's message and the record show its words. At most one
    /// adjustment is made: the defaults are lowered only where some node
    /// then takes the pod, and the CPUs are rounded only where none does.
    /// (pod, fleet, settings, adjustments made, shapes worded)
    #[rstest]
    #[case::taken_as_planned(pod(4, 16), vec![(hgx("single-numa-node"), 3), (l4(), 2)], json!({}), 0, 0)]
    #[case::defaults_lowered(gpus_only(8), vec![(hgx("restricted"), 10)], json!({"qos": {"cpuPerGpu": "16"}}), 1, 0)]
    #[case::cpus_rounded(pod(1, 3), vec![(hgx_full_pcpus_only("best-effort"), 4)], json!({}), 1, 0)]
    #[case::refused_by_both_shapes(pod(8, 16), vec![(hgx("single-numa-node"), 3), (l4(), 2)], json!({}), 0, 2)]
    #[case::refused_by_one_shape(pod(5, 16), vec![(hgx("single-numa-node"), 3), (hgx("best-effort"), 2)], json!({}), 0, 1)]
    fn each_stage_runs_once_per_admission(
        #[case] spec: Value,
        #[case] fleet: Vec<(NodeTopology, u32)>,
        #[case] settings: Value,
        #[case] adjustments: usize,
        #[case] worded: usize,
    ) {
        let config = config(settings);
        let text = pod_request(spec);
        let request = AdmissionRequest::parse(&text).unwrap();
        let (_, _) = (runs(&VERDICTS), runs(&WHY_AND_FIX));
        let record = explain_with(&request, &config, &Nodes(fleet)).pod.unwrap();
        assert_eq!(record.adjustments.len(), adjustments, "{record:#?}");
        assert_eq!(runs(&VERDICTS), 1, "the fleet's verdicts built");
        let shown = record.shapes.iter().filter(|s| s.why.is_some()).count();
        assert_eq!(shown, worded, "{record:#?}");
        assert_eq!(runs(&WHY_AND_FIX), worded, "shapes worded");
    }

    #[test]
    fn a_pod_without_gpus_has_no_record() {
        let text = pod_request(json!({"containers": [{"name": "web"}]}));
        let request = AdmissionRequest::parse(&text).unwrap();
        let explained = explain_with(&request, &config(json!({})), &Nodes(Vec::new()));
        assert_eq!(explained.decision, Decision::accept());
        assert_eq!(explained.pod, None);
    }

    #[test]
    fn a_refused_read_is_recorded_with_the_hosts_reason() {
        let text = pod_request(pod(4, 16));
        let request = AdmissionRequest::parse(&text).unwrap();
        let record = explain_with(&request, &config(json!({})), &Refusing)
            .pod
            .unwrap();
        let ViewRecord::Unavailable { reason } = &record.view else {
            panic!("no view: {:?}", record.view);
        };
        assert!(reason.contains("not allowed"), "{reason}");
        assert!(record.shapes.is_empty());
    }
}
