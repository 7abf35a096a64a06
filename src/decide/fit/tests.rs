//! Unit tests of the fit check: the decision rules over the kubelet model's
//! verdicts, the static fallback and the warnings, on the shared node shapes
//! of `decide::testing`. Kept apart from `fit.rs` so the production code
//! stays short (issue #36).

use super::*;
use crate::decide::testing::{config, hgx, hgx_full_pcpus_only, l4, node, pod, view, OLD};
use gpu_topology::{Alignment, LabelPrefix, NodeTopology};
use rstest::rstest;
use serde_json::{json, Value};

fn required(alignment: &str) -> Value {
    json!({"topology": {"affinity": "required", "alignment": alignment}})
}

fn decide(spec: &Value, view: &ClusterView, config: &Config) -> Result<Placement, String> {
    let input = PodInput::read(spec, config).unwrap().unwrap();
    let verdicts = verdicts(&view.fleet, spec, &input, config).unwrap();
    place(&input, view, &verdicts, config)
        .map_err(|rejection| rejection.message(&config.label_prefix))
}

fn shape_of(topology: &NodeTopology) -> String {
    topology.shape.unwrap().to_string()
}

/// `topology` under the shape label of `other`: nodes that differ in a
/// fact the label does not digest (the kubelet version their Nodes
/// report, where the labeler did not publish it).
fn sharing(topology: NodeTopology, other: &NodeTopology) -> NodeTopology {
    NodeTopology {
        shape: other.shape,
        ..topology
    }
}

/// The requirement's terms as `key operator values` strings.
fn rendered(terms: &[gpu_topology::Term]) -> Vec<Vec<String>> {
    terms
        .iter()
        .map(|term| {
            term.iter()
                .map(|r| {
                    format!(
                        "{} {} {}",
                        r.label_key().name(),
                        r.operator().as_str(),
                        r.values().join(",")
                    )
                })
                .collect()
        })
        .collect()
}

/// The worked example of the README: 8 GPUs and 32 whole CPUs on HGX
/// nodes running `restricted`. The GPUs need both NUMA nodes, the CPUs
/// fit one: no preferred hint, TopologyAffinityError.
#[test]
fn the_restricted_hgx_case_is_refused_with_the_arithmetic_and_the_fix() {
    let nodes = hgx("restricted");
    let shape = shape_of(&nodes);
    let error = decide(&pod(8, 32), &view(vec![(nodes, 10)]), &config(json!({}))).unwrap_err();
    assert_eq!(
        error,
        format!("GPU pod cannot be placed: it needs 8 GPUs (container \"train\": 8 nvidia.com/gpu), but the kubelet of none of the 10 labeled GPU nodes admits it. On the 10 nodes of shape {shape} (8 GPUs, 4+4 per NUMA node, 56 CPUs per NUMA node, topologyManagerPolicy restricted) the GPUs' narrowest NUMA mask is 2 nodes but the 32 exclusive CPUs' is 1 node: the kubelet refuses it with TopologyAffinityError. Request 57 to 110 CPUs so that they span 2 NUMA nodes as the GPUs do, a fractional CPU amount (shared pool), or at most 4 GPUs.")
    );
}

/// (settings, pod, groups, the requirement's terms with `{n}` for the
/// n-th group's shape, the preference's): what the verdicts write.
#[rstest]
// Preferred: the refusing shape is left out, the aligned one preferred.
#[case::preferred_steers_off_the_refusing_shape(json!({}), pod(8, 32),
    vec![(hgx("restricted"), 10), (hgx("best-effort"), 2)],
    vec![vec!["shape NotIn {0}"]], vec![])]
#[case::preferred_prefers_aligned_shapes(json!({}), pod(4, 16),
    vec![(hgx("single-numa-node"), 10), (l4(), 2), (hgx("none"), 1)],
    vec![], vec![vec!["shape In {0},{1}"]])]
#[case::preferred_nothing_when_all_eligible_are_aligned(json!({}), pod(4, 16),
    vec![(hgx("single-numa-node"), 10)], vec![], vec![])]
// The author's 3 CPUs: SMTAlignmentError under full-pcpus-only only.
#[case::preferred_keeps_odd_cpus_off_full_pcpus_only(json!({}), pod(1, 3),
    vec![(hgx_full_pcpus_only("best-effort"), 4), (hgx("best-effort"), 4)],
    vec![vec!["shape NotIn {0}"]], vec![])]
// One shape label on nodes the kubelet answers otherwise (a kubelet
// version the label does not hold): neither left out nor selected.
#[case::preferred_leaves_a_shared_shape_alone(json!({}), pod(8, 32),
    vec![(hgx("restricted"), 10), (sharing(hgx("best-effort"), &hgx("restricted")), 2), (hgx("single-numa-node"), 3)],
    vec![vec!["shape NotIn {2}"]], vec![])]
#[case::preferred_excludes_a_shape_refused_alike(json!({}), pod(8, 32),
    vec![(hgx("restricted"), 10), (sharing(hgx("single-numa-node"), &hgx("restricted")), 2), (hgx("best-effort"), 3)],
    vec![vec!["shape NotIn {0}"]], vec![])]
#[case::required_selects_no_shared_shape(required("numa"), pod(4, 16),
    vec![(hgx("single-numa-node"), 10), (sharing(hgx("none"), &hgx("single-numa-node")), 1), (l4(), 2)],
    vec![vec!["shape In {2}"]], vec![])]
#[case::required_selects_a_shape_hosted_alike(required("numa"), pod(4, 16),
    vec![(hgx("single-numa-node"), 10), (sharing(hgx("restricted"), &hgx("single-numa-node")), 1)],
    vec![vec!["shape In {0}"]], vec![])]
#[case::required_selects_hosting_shapes(required("numa"), pod(4, 16),
    vec![(hgx("single-numa-node"), 10), (hgx("none"), 2)],
    vec![vec!["shape In {0}"]], vec![])]
#[case::required_nvlink_counts_the_group(required("nvlink"), pod(8, 8),
    vec![(hgx("best-effort"), 3), (hgx("single-numa-node"), 10)],
    vec![vec!["shape In {0}"]], vec![])]
// Unknown shapes with count labels stay eligible under allow.
#[case::required_allow_adds_unknown_shapes(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"unlabeledNodes": "allow"}}), pod(4, 16),
    vec![(hgx("single-numa-node"), 10), (hgx("none"), 2)],
    vec![vec!["shape In {0}"], vec!["shape NotIn {0},{1}", "gpus-per-numa-max Gt 3", "gpus Gt 3"]], vec![])]
fn the_verdicts_write_the_affinity(
    #[case] settings: Value,
    #[case] spec: Value,
    #[case] groups: Vec<(NodeTopology, u32)>,
    #[case] required: Vec<Vec<&str>>,
    #[case] preferred: Vec<Vec<&str>>,
) {
    let shapes: Vec<String> = groups.iter().map(|(t, _)| shape_of(t)).collect();
    let view = view(groups);
    let placement = decide(&spec, &view, &config(settings)).unwrap();
    let fill = |text: &str| -> String {
        let mut text = text.to_owned();
        for (i, shape) in shapes.iter().enumerate() {
            text = text.replace(&format!("{{{i}}}"), shape);
        }
        // Shape lists come out sorted.
        match text.rsplit_once(' ') {
            Some((head, values)) => {
                let mut values: Vec<&str> = values.split(',').collect();
                values.sort_unstable();
                format!("{head} {}", values.join(","))
            }
            None => text,
        }
    };
    let fill_all = |terms: Vec<Vec<&str>>| -> Vec<Vec<String>> {
        terms
            .into_iter()
            .map(|t| t.into_iter().map(fill).collect())
            .collect()
    };
    assert_eq!(
        rendered(&placement.requirement.required),
        fill_all(required)
    );
    assert_eq!(
        rendered(&placement.requirement.preferred),
        fill_all(preferred)
    );
}

/// (settings, pod, groups, Ok: fragment of a warning / Err: fragments of
/// the rejection)
#[rstest]
#[case::preferred_every_shape_refuses(json!({}), pod(8, 96),
    vec![(hgx("single-numa-node"), 3)],
    Err(vec!["the 8 GPUs need 2 NUMA nodes and the 96 exclusive CPUs need 2 NUMA nodes, but single-numa-node admits only one", "Request at most 4 GPUs per pod, or at most 56 exclusive CPUs, or a fractional CPU amount (shared pool)"]))]
#[case::preferred_allow_admits_for_unlabeled_nodes(json!({"capacity": {"unlabeledNodes": "allow"}}), pod(8, 96),
    vec![(hgx("single-numa-node"), 3)], Ok("admitted for nodes without gpu-topology.io labels (capacity.unlabeledNodes: allow)"))]
#[case::required_unaligned_only(required("numa"), pod(8, 8),
    vec![(hgx("best-effort"), 2)],
    Err(vec!["NUMA-aligned (topology.affinity: required), but none of the 2 labeled GPU nodes hosts it so", "the kubelet admits it unaligned: the 8 GPUs' narrowest NUMA mask is 2 nodes", "Request at most 4 GPUs per pod, or set topology.affinity: preferred so the GPUs may span NUMA nodes"]))]
#[case::required_nvlink_group_too_small(required("nvlink"), pod(4, 8),
    vec![(l4(), 2)],
    Err(vec!["the largest NVLink group has 1 GPU and 4 must share one", "Request at most 1 GPU per container, or set topology.affinity: preferred so the GPUs may span NVLink groups"]))]
#[case::preferred_old_labeler_stays_eligible(json!({}), pod(8, 32),
    vec![(hgx("restricted"), 10), (node(OLD), 4)],
    Ok("the kubelet model cannot tell whether 4 nodes admit the pod (nodes without a shape label: the CPU Manager policy is not published); they stay eligible"))]
#[case::preferred_old_labeler_is_named(json!({}), pod(8, 32),
    vec![(node(OLD), 4)], Ok("4 nodes publish no gpu-topology.io/shape label"))]
#[case::required_old_labeler_is_not_selected(required("numa"), pod(4, 8),
    vec![(node(OLD), 4)], Err(vec!["whether the kubelet admits it is unknown"]))]
#[case::preferred_shared_shape_is_named(json!({}), pod(8, 32),
    vec![(hgx("restricted"), 10), (sharing(hgx("best-effort"), &hgx("restricted")), 2)],
    Ok("12 nodes of shape"))]
#[case::preferred_shared_shape_says_why(json!({}), pod(8, 32),
    vec![(hgx("restricted"), 10), (sharing(hgx("best-effort"), &hgx("restricted")), 2)],
    Ok("and others sharing a gpu-topology.io/shape label get different answers from their kubelets (their labels differ beyond what the shape label digests): node affinity can neither select nor exclude them"))]
#[case::required_shared_shape_is_not_selected(required("numa"), pod(4, 16),
    vec![(hgx("single-numa-node"), 10), (sharing(hgx("none"), &hgx("single-numa-node")), 1)],
    Err(vec!["On the 10 nodes of shape", "the kubelet admits it, but nodes whose kubelets answer otherwise carry the same shape label, so node affinity cannot select these apart", "Publish the kubelet-version label with the labeler"]))]
#[case::too_many_gpus_for_every_node(json!({}), pod(16, 8),
    vec![(hgx("best-effort"), 2), (l4(), 3)],
    Err(vec!["it needs 16 GPUs (container \"train\": 16 nvidia.com/gpu) but the largest labeled GPU node has 8 (2 nodes). Request at most 8 GPUs per pod"]))]
#[case::an_empty_view_under_preferred_is_no_rejection(json!({}), pod(8, 8), vec![],
    Ok("GPU fit not checked: no node publishes gpu-topology.io labels: is the labeler deployed?"))]
#[case::an_empty_view_under_required_is(required("numa"), pod(8, 8), vec![],
    Err(vec!["no node publishes gpu-topology.io labels", "set capacity.unlabeledNodes: allow"]))]
#[case::an_empty_view_under_required_with_allow(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"unlabeledNodes": "allow"}}), pod(8, 8), vec![],
    Ok("GPU fit not checked: no node publishes gpu-topology.io labels"))]
fn decision_rules(
    #[case] settings: Value,
    #[case] spec: Value,
    #[case] groups: Vec<(NodeTopology, u32)>,
    #[case] expected: Result<&str, Vec<&str>>,
) {
    let outcome = decide(&spec, &view(groups), &config(settings));
    match (outcome, expected) {
        (Ok(placement), Ok(warning)) => assert!(
            placement.words().iter().any(|w| w.contains(warning)),
            "{:?} lacks {warning:?}",
            placement.words()
        ),
        (Err(message), Err(fragments)) => {
            for fragment in fragments {
                assert!(message.contains(fragment), "{message}\nlacks: {fragment}");
            }
        }
        (outcome, expected) => panic!("{outcome:?}, expected {expected:?}"),
    }
}

/// `view` with `heartbeats` (node, seconds before `NOW`) read at `NOW`.
fn with_heartbeats(mut view: ClusterView, heartbeats: &[(&str, u64)]) -> ClusterView {
    const NOW: u64 = 1_764_700_000;
    let mut oldest = gpu_topology::OldestHeartbeats::default();
    for (node, ago) in heartbeats {
        oldest.offer(NOW - ago, node);
    }
    view.heartbeats = Some(oldest);
    view.read_at = Some(NOW);
    view
}

/// (settings, heartbeats, nodes left out by name, fragment of a warning
/// or none): a node whose labeler stopped confirming its facts.
#[rstest]
#[case::fresh_facts_say_nothing(json!({}), vec![("gpu-1", 60), ("gpu-2", 1_900)], vec![], None)]
#[case::preferred_warns_and_keeps_it(json!({}), vec![("gpu-1", 60), ("gpu-7", 7_500)], vec![],
    Some("1 node carries facts older than capacity.staleFactsAfterSeconds (5400 s): the labeler last confirmed them (gpu-topology.io/published) on gpu-7 2 h 5 min ago; is the labeler running there? it stays eligible with the facts last published"))]
#[case::required_leaves_them_out_by_name(required("numa"), vec![("gpu-7", 7_500), ("gpu-8", 90_000), ("gpu-1", 60)], vec!["gpu-8", "gpu-7"],
    Some("2 nodes carry facts older than capacity.staleFactsAfterSeconds (5400 s): the labeler last confirmed them (gpu-topology.io/published) on gpu-8 25 h ago, gpu-7 2 h 5 min ago; is the labeler running there? they are not selected (topology.affinity: required): matchFields metadata.name NotIn"))]
#[case::a_longer_age_configured(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"staleFactsAfterSeconds": 86_400}}), vec![("gpu-7", 7_500), ("gpu-8", 90_000)], vec!["gpu-8"],
    Some("1 node carries facts older than capacity.staleFactsAfterSeconds (86400 s)"))]
#[case::the_rule_turned_off(json!({"topology": {"affinity": "required", "alignment": "numa"}, "capacity": {"staleFactsAfterSeconds": 0}}), vec![("gpu-8", 90_000)], vec![], None)]
fn stale_facts_are_named_and_left_out_under_required(
    #[case] settings: Value,
    #[case] heartbeats: Vec<(&str, u64)>,
    #[case] excluded: Vec<&str>,
    #[case] warning: Option<&str>,
) {
    let view = with_heartbeats(view(vec![(hgx("single-numa-node"), 10)]), &heartbeats);
    let placement = decide(&pod(4, 16), &view, &config(settings)).unwrap();
    assert_eq!(placement.requirement.excluded_nodes, excluded);
    let words = placement.words();
    let stale: Vec<&String> = words
        .iter()
        .filter(|w| w.contains("staleFactsAfterSeconds"))
        .collect();
    match warning {
        Some(fragment) => assert!(
            stale.len() == 1 && stale[0].contains(fragment),
            "{stale:?} lacks {fragment:?}"
        ),
        None => assert!(stale.is_empty(), "{stale:?}"),
    }
}

/// A labeler down fleet-wide: more nodes are stale than the view names,
/// so none is left out (an outage never blocks pods), and it says so.
#[test]
fn more_stale_nodes_than_named_stay_eligible() {
    let heartbeats: Vec<(String, u64)> = (0..40)
        .map(|index| (format!("gpu-{index:02}"), 10_000 + index))
        .collect();
    let named: Vec<(&str, u64)> = heartbeats.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let view = with_heartbeats(view(vec![(hgx("single-numa-node"), 40)]), &named);
    let placement = decide(&pod(4, 16), &view, &config(required("numa"))).unwrap();
    assert!(placement.requirement.excluded_nodes.is_empty());
    assert!(
        placement
            .words()
            .iter()
            .any(|w| w.starts_with("at least 32 nodes carry facts older")
                && w.contains("too many to keep pods off by name")),
        "{:?}",
        placement.words()
    );
}

// The warnings that count nodes, for 0, 1 and several (issue #23:
// "Every message sentence is tested for 0, 1 and several nodes or
// shapes"). Zero nodes give no warning at all.

fn verdicts_of<'f>(spec: &Value, view: &'f ClusterView, config: &Config) -> Vec<GroupVerdict<'f>> {
    let input = PodInput::read(spec, config).unwrap().unwrap();
    verdicts(&view.fleet, spec, &input, config).unwrap()
}

/// Nodes whose answer is unknown (an old labeler publishes no CPU
/// Manager policy), under `preferred` and `required`.
#[rstest]
#[case::zero_nodes(vec![(hgx("restricted"), 3)], false, None)]
#[case::one_node(vec![(node(OLD), 1)], false,
    Some("the kubelet model cannot tell whether 1 node admits the pod (the node without a shape label: the CPU Manager policy is not published); it stays eligible"))]
#[case::one_node_required(vec![(node(OLD), 1)], true,
    Some("the kubelet model cannot tell whether 1 node admits the pod (the node without a shape label: the CPU Manager policy is not published); it is not selected (topology.affinity: required)"))]
#[case::several_nodes(vec![(hgx("restricted"), 10), (node(OLD), 4)], false,
    Some("the kubelet model cannot tell whether 4 nodes admit the pod (nodes without a shape label: the CPU Manager policy is not published); they stay eligible"))]
#[case::several_nodes_required(vec![(node(OLD), 4)], true,
    Some("the kubelet model cannot tell whether 4 nodes admit the pod (nodes without a shape label: the CPU Manager policy is not published); they are not selected (topology.affinity: required)"))]
fn the_unknown_nodes_in_number(
    #[case] groups: Vec<(NodeTopology, u32)>,
    #[case] required: bool,
    #[case] warning: Option<&str>,
) {
    let view = view(groups);
    let verdicts = verdicts_of(&pod(8, 32), &view, &config(json!({})));
    assert_eq!(
        unknown_warning(&verdicts, required)
            .map(|w| w.words(&LabelPrefix::default()))
            .as_deref(),
        warning
    );
}

/// Nodes without a shape label (an old labeler).
#[rstest]
#[case::zero_nodes(vec![(hgx("restricted"), 3)], None)]
#[case::one_node(vec![(node(OLD), 1)],
    Some("1 node publishes no gpu-topology.io/shape label (a labeler older than this policy): node affinity can neither select nor exclude it; upgrade the labeler there"))]
#[case::several_nodes(vec![(node(OLD), 4), (hgx("restricted"), 2)],
    Some("4 nodes publish no gpu-topology.io/shape label (a labeler older than this policy): node affinity can neither select nor exclude them; upgrade the labeler there"))]
fn the_shapeless_nodes_in_number(
    #[case] groups: Vec<(NodeTopology, u32)>,
    #[case] warning: Option<&str>,
) {
    let view = view(groups);
    let verdicts = verdicts_of(&pod(8, 32), &view, &config(json!({})));
    assert_eq!(
        shapeless_warning(&verdicts)
            .map(|w| w.words(&LabelPrefix::default()))
            .as_deref(),
        warning
    );
}

/// Nodes whose labels are malformed, left out of the view.
#[rstest]
#[case::zero_nodes(0, None)]
#[case::one_node(1, Some("1 node with malformed gpu-topology.io labels left out of the GPU fit check (e.g. bad gpus); fix the node labeler there"))]
#[case::several_nodes(3, Some("3 nodes with malformed gpu-topology.io labels left out of the GPU fit check (e.g. bad gpus); fix the node labeler there"))]
fn the_malformed_nodes_in_number(#[case] malformed: u32, #[case] warning: Option<&str>) {
    let mut view = view(vec![(hgx("restricted"), 3)]);
    view.malformed = malformed;
    view.first_problem = Some("bad gpus".to_owned());
    assert_eq!(
        malformed_warning(&view)
            .map(|w| w.words(&LabelPrefix::default()))
            .as_deref(),
        warning
    );
}

/// A pod pinned to a node (DaemonSet) under `required`, read from the
/// Node list: its own node decides. (pinned node's labels, allow,
/// fragment of the rejection or `None` for accepted)
#[rstest]
#[case::hosting_node(Some(hgx("best-effort")), false, None)]
#[case::refusing_node(Some(hgx("restricted")), false, Some("it is pinned to node \"gpu-7\" (required node affinity on metadata.name, as a DaemonSet's pods are), and there the GPUs' narrowest NUMA mask"))]
#[case::unlabeled_node(None, false, Some("it is pinned to node \"gpu-7\" (required node affinity on metadata.name, as a DaemonSet's pods are), which publishes no gpu-topology.io labels"))]
#[case::unlabeled_node_allowed(None, true, None)]
fn a_pinned_pods_own_node_decides_under_required(
    #[case] pinned: Option<NodeTopology>,
    #[case] allow: bool,
    #[case] rejected: Option<&str>,
) {
    let mut spec = pod(8, 32);
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}]}]}}});
    let mut view = view(vec![(hgx("best-effort"), 5), (hgx("restricted"), 5)]);
    view.pinned_node = pinned.map(Ok);
    let settings = json!({"topology": {"affinity": "required", "alignment": "node"},
        "capacity": {"unlabeledNodes": if allow { "allow" } else { "deny" }}});
    let outcome = decide(&spec, &view, &config(settings));
    match rejected {
        None => assert!(outcome.is_ok(), "{outcome:?}"),
        Some(fragment) => {
            let message = outcome.unwrap_err();
            assert!(message.contains(fragment), "{message}");
        }
    }
}

#[test]
fn a_pinned_pod_under_preferred_is_warned_when_its_node_refuses() {
    let mut spec = pod(8, 32);
    spec["nodeName"] = json!("gpu-7");
    let mut view = view(vec![(hgx("restricted"), 5), (hgx("best-effort"), 5)]);
    view.pinned_node = Some(Ok(hgx("restricted")));
    let placement = decide(&spec, &view, &config(json!({}))).unwrap();
    assert!(placement.requirement.is_empty());
    assert!(
        placement.words().iter().any(|w| w.starts_with(
            "the pod is pinned to node \"gpu-7\" (spec.nodeName), where the GPUs' narrowest NUMA mask"
        )),
        "{:?}",
        placement.words()
    );
}

/// (affinity mode, pinned, need, affinity added)
#[rstest]
#[case::required(AffinityMode::Required, false, Need::Host(Alignment::Nvlink), true)]
#[case::required_and_pinned(AffinityMode::Required, true, Need::Host(Alignment::Nvlink), true)]
#[case::preferred(AffinityMode::Preferred, false, Need::Admit, true)]
#[case::preferred_but_pinned(AffinityMode::Preferred, true, Need::Admit, false)]
#[case::off(AffinityMode::Off, false, Need::Admit, false)]
fn need_follows_the_affinity(
    #[case] affinity: AffinityMode,
    #[case] pinned: bool,
    #[case] expected: Need,
    #[case] applies: bool,
) {
    let mut config = Config::default();
    config.topology.affinity = affinity;
    config.topology.alignment = Alignment::Nvlink;
    assert_eq!(Need::for_pod(&config), expected);
    assert_eq!(affinity_applies(&config, pinned), applies);
}

/// Hostile requests with a view are answered, never trapped on: the
/// model saturates what it cannot hold.
#[rstest]
#[case::huge_cpu(json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "9223372036", "memory": "64Gi"}}}]}))]
#[case::huge_memory(json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "9E"}}}]}))]
#[case::many_gpus(json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "4294967295"}}}]}))]
#[case::many_containers(json!({"containers": (0..64).map(|i| json!({"name": format!("c{i}"), "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1", "memory": "1Gi"}}})).collect::<Vec<_>>()}))]
fn hostile_pods_are_answered(#[case] spec: Value) {
    let view = view(vec![(hgx("restricted"), 2), (l4(), 1), (node(OLD), 1)]);
    for settings in [json!({}), required("numa"), required("nvlink")] {
        let _ = decide(&spec, &view, &config(settings));
    }
}
