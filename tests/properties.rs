//! Properties of the policy's answer over generated GPU pods and settings
//! (`tests/strategies`), checked against Kubernetes' own rules written
//! here independently of the policy's code:
//! - a mutated (or accepted, under `qos.mode: validate`) GPU pod is
//!   Guaranteed as Kubernetes classifies it (after the API server's
//!   defaulting of requests from limits);
//! - a second pass over the answer changes nothing;
//! - the host's patch touches only resources and `spec.affinity`;
//! - the nodes the answer's required node affinity admits are exactly the
//!   nodes the user's affinity admits that the policy's requirement admits.

use crate::strategies;

use gpu_topology::DEFAULT_LABEL_PREFIX;
use gpu_topology_policy::decide::affinity::{merge, AffinityRequirement};
use gpu_topology_policy::decide::{fit, PodInput};
use gpu_topology_policy::settings::{settings_from_value, Config, QosMode};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use strategies::{nanos, node, payload, pod, settings, OTHER_PREFIX};

/// Generated cases per property: each runs the policy once or twice.
const CASES: u32 = 1024;

/// The resources Kubernetes' QoS classes are computed from.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

fn prefix_of(settings: &Value) -> &'static str {
    if settings["labelPrefix"] == OTHER_PREFIX {
        OTHER_PREFIX
    } else {
        DEFAULT_LABEL_PREFIX
    }
}

/// Settings, and a pod whose own node labels use the settings' prefix.
fn case() -> impl Strategy<Value = (Value, Value)> {
    settings(true).prop_flat_map(|settings| {
        let prefix = prefix_of(&settings);
        (Just(settings), pod(prefix))
    })
}

fn config(settings: &Value) -> Config {
    settings_from_value(settings.clone())
        .and_then(|settings| settings.config())
        .expect("generated settings are valid")
}

/// The policy's answer: `(accepted, the pod as admitted)`.
fn admit(pod: &Value, settings: &Value) -> (bool, Value, Value) {
    let response = gpu_topology_policy::validate(&payload(pod, settings)).expect("an answer");
    let response: Value = serde_json::from_slice(&response).unwrap();
    let admitted = match response.get("mutated_object") {
        Some(Value::Null) | None => pod.clone(),
        Some(mutated) => mutated.clone(),
    };
    (response["accepted"] == true, admitted, response)
}

/// GPUs the pod's containers ask for (limits; requests equal them).
fn requests_gpus(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        pod["spec"][list].as_array().into_iter().flatten().any(|c| {
            nanos(&c["resources"]["limits"]["nvidia.com/gpu"]).is_some_and(|gpus| gpus > 0)
        })
    })
}

/// The API server's defaulting (`SetDefaults_Pod`): a resource with a limit
/// and no request is requested at its limit.
fn defaulted(resources: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let list = |side: &str| resources[side].as_object().cloned().unwrap_or_default();
    let limits = list("limits");
    let mut requests = list("requests");
    for (name, limit) in &limits {
        requests
            .entry(name.clone())
            .or_insert_with(|| limit.clone());
    }
    (requests, limits)
}

/// CPU and memory summed over containers, in billionths.
type Sums = BTreeMap<&'static str, i128>;

/// Adds the positive CPU and memory of `side` into `sum`; answers how many
/// were positive.
fn add_positive(sum: &mut Sums, side: &Map<String, Value>) -> usize {
    let mut found = 0;
    for name in QOS_RESOURCES {
        let Some(quantity) = side.get(name).and_then(nanos).filter(|q| *q > 0) else {
            continue;
        };
        *sum.entry(name).or_insert(0) += quantity;
        found += 1;
    }
    found
}

/// Kubernetes' QoS class of a pod, from `pkg/apis/core/v1/helper/qos/qos.go`
/// (`ComputePodQOS`): with pod-level `spec.resources` they alone count;
/// else every container, init containers included, must have positive CPU
/// and memory limits, and the summed requests must equal the summed limits.
fn is_guaranteed(pod: &Value) -> bool {
    let spec = &pod["spec"];
    let mut requests = Sums::new();
    let mut limits = Sums::new();
    let mut guaranteed = true;
    let pod_level = spec.get("resources").filter(|r| !r.is_null());
    let sides: Vec<(Map<String, Value>, Map<String, Value>)> = match pod_level {
        Some(resources) => vec![defaulted(resources)],
        None => ["containers", "initContainers"]
            .iter()
            .flat_map(|list| spec[list].as_array().cloned().unwrap_or_default())
            .map(|container| defaulted(&container["resources"]))
            .collect(),
    };
    for (side_requests, side_limits) in &sides {
        add_positive(&mut requests, side_requests);
        if add_positive(&mut limits, side_limits) != QOS_RESOURCES.len() {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return false; // BestEffort
    }
    guaranteed
        && requests.len() == limits.len()
        && requests
            .iter()
            .all(|(name, request)| limits.get(name) == Some(request))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// `mutate` makes every GPU pod it admits Guaranteed; `validate` admits
    /// only Guaranteed GPU pods.
    #[test]
    fn admitted_gpu_pods_are_guaranteed((settings, pod) in case()) {
        let (accepted, admitted, response) = admit(&pod, &settings);
        let mode = config(&settings).qos.mode;
        if accepted && requests_gpus(&pod) && mode != QosMode::Off {
            prop_assert!(is_guaranteed(&admitted), "not Guaranteed: {}\nsettings {settings}\nanswer {response}", admitted["spec"]);
        }
        if !accepted {
            prop_assert!(response["message"].is_string(), "a rejection says why: {response}");
        }
    }

    /// The answer is a fixed point: admitting it again changes nothing.
    #[test]
    fn a_second_pass_changes_nothing((settings, pod) in case()) {
        let (accepted, admitted, _) = admit(&pod, &settings);
        prop_assume!(accepted);
        let (again, readmitted, response) = admit(&admitted, &settings);
        prop_assert!(again, "the admitted pod is rejected: {response}");
        prop_assert_eq!(readmitted, admitted);
    }

    /// The host's patch (`json_patch::diff`, as policy-evaluator computes
    /// it) only touches container and pod resources and `spec.affinity`.
    #[test]
    fn the_patch_touches_only_resources_and_affinity((settings, pod) in case()) {
        let (_, admitted, _) = admit(&pod, &settings);
        let patch = json_patch::diff(&pod, &admitted);
        for operation in &patch.0 {
            let path = operation.path().to_string();
            let parts: Vec<&str> = path.split('/').collect();
            let allowed = match parts.as_slice() {
                ["", "spec", "affinity", ..] | ["", "spec", "resources", ..] => true,
                ["", "spec", "containers" | "initContainers", index, "resources", ..] => {
                    index.parse::<usize>().is_ok()
                }
                _ => false,
            };
            prop_assert!(allowed, "the patch touches {path}: {patch:?}");
        }
    }

    /// The nodes the answer's required node affinity admits are the user's
    /// admitted nodes that the policy's requirement admits.
    #[test]
    fn admitted_nodes_are_the_users_intersected_with_ours(
        ((settings, pod), nodes) in case().prop_flat_map(|(settings, pod)| {
            let prefix = prefix_of(&settings);
            (Just((settings, pod)), vec(node(prefix), 1..8))
        })
    ) {
        let (accepted, admitted, _) = admit(&pod, &settings);
        prop_assume!(accepted);
        let config = config(&settings);
        let spec = &pod["spec"];
        let ours = match PodInput::read(spec, &config) {
            Ok(Some(input)) if fit::affinity_applies(&config, input.pinned.is_some()) => {
                AffinityRequirement::without_view(input.demand.needs, &config.topology)
            }
            _ => AffinityRequirement::default(),
        };
        let mut ours_spec = json!({});
        merge(&mut ours_spec, &ours, &config.label_prefix).expect("an empty spec takes any requirement");
        for (name, labels) in &nodes {
            let user = admits(spec, name, labels);
            let policy = admits(&ours_spec, name, labels);
            let answer = admits(&admitted["spec"], name, labels);
            prop_assert_eq!(answer, user && policy,
                "node {} {:?}: user {}, ours {}\nanswer {}", name, labels, user, policy,
                admitted["spec"]["affinity"]);
        }
    }
}

/// Whether `spec`'s required node affinity admits the node `name` with
/// `labels`, as the scheduler's `nodeaffinity` plugin decides
/// (`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`):
/// no required affinity admits every node; else the terms are ORed.
fn admits(spec: &Value, name: &str, labels: &Map<String, Value>) -> bool {
    let required =
        &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    if required.is_null() {
        return true;
    }
    required["nodeSelectorTerms"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|term| term_matches(term, name, labels))
}

/// A term's `matchExpressions` and `matchFields` are ANDed; a term with
/// neither matches no node (`nodeSelectorTerms.match` skips it).
fn term_matches(term: &Value, name: &str, labels: &Map<String, Value>) -> bool {
    let list = |key: &str| term[key].as_array().cloned().unwrap_or_default();
    let (expressions, fields) = (list("matchExpressions"), list("matchFields"));
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|requirement| label_matches(requirement, labels))
        && fields
            .iter()
            .all(|requirement| field_matches(requirement, name))
}

/// `labels.Requirement.Matches` (apimachinery `pkg/labels/selector.go`):
/// `NotIn` and `DoesNotExist` hold for an absent label, `In`, `Exists`,
/// `Gt` and `Lt` do not; `Gt`/`Lt` compare base-10 integers and fail when
/// the label's value is not one.
fn label_matches(requirement: &Value, labels: &Map<String, Value>) -> bool {
    let key = requirement["key"].as_str().unwrap_or_default();
    let values = values(requirement);
    let label = labels.get(key).and_then(Value::as_str);
    let integer = |text: &str| text.parse::<i64>().ok();
    let compare = |ordering: std::cmp::Ordering| {
        let (Some(label), Some(bound)) = (
            label.and_then(integer),
            values.first().copied().and_then(integer),
        ) else {
            return false;
        };
        label.cmp(&bound) == ordering
    };
    match requirement["operator"].as_str().unwrap_or_default() {
        "In" => label.is_some_and(|value| values.contains(&value)),
        "NotIn" => label.is_none_or(|value| !values.contains(&value)),
        "Exists" => label.is_some(),
        "DoesNotExist" => label.is_none(),
        "Gt" => compare(std::cmp::Ordering::Greater),
        "Lt" => compare(std::cmp::Ordering::Less),
        _ => false,
    }
}

/// A requirement's `values` (none when absent).
fn values(requirement: &Value) -> Vec<&str> {
    requirement["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// `matchFields`: only `metadata.name`, with `In` or `NotIn`.
fn field_matches(requirement: &Value, name: &str) -> bool {
    let values = values(requirement);
    match (
        requirement["key"].as_str(),
        requirement["operator"].as_str(),
    ) {
        (Some("metadata.name"), Some("In")) => values.contains(&name),
        (Some("metadata.name"), Some("NotIn")) => !values.contains(&name),
        _ => false,
    }
}

/// The properties above are not vacuous: the generated cases reach
/// mutations, rejections, validate-mode admissions and user affinity that
/// admits some nodes and not others.
#[test]
fn the_generated_cases_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (case(), vec(node(DEFAULT_LABEL_PREFIX), 4));
    let mut seen = BTreeMap::<&str, u32>::new();
    for _ in 0..CASES {
        let ((settings, pod), nodes) = strategy.new_tree(&mut runner).unwrap().current();
        let (accepted, admitted, _) = admit(&pod, &settings);
        let mode = config(&settings).qos.mode;
        let user: Vec<bool> = nodes
            .iter()
            .map(|(n, l)| admits(&pod["spec"], n, l))
            .collect();
        for (outcome, reached) in [
            (
                "mutated GPU pod",
                accepted && admitted != pod && requests_gpus(&pod),
            ),
            ("rejected GPU pod", !accepted && requests_gpus(&pod)),
            (
                "validate-mode admission",
                accepted && mode == QosMode::Validate && requests_gpus(&pod),
            ),
            (
                "user affinity admits some nodes, not all",
                user.contains(&true) && user.contains(&false),
            ),
            (
                "affinity added",
                admitted["spec"]["affinity"] != pod["spec"]["affinity"],
            ),
        ] {
            *seen.entry(outcome).or_default() += u32::from(reached);
        }
    }
    assert!(seen.values().all(|count| *count >= 5), "{seen:?}");
}

/// The test's own QoS classifier, on pods whose class Kubernetes documents.
#[rstest::rstest]
#[case::equal_requests_and_limits(json!([{"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "2000m", "memory": "1024Mi"}}]), true)]
#[case::limits_only_default_the_requests(json!([{"limits": {"cpu": 1, "memory": "1Gi"}}]), true)]
#[case::requests_below_limits(json!([{"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1"}}]), false)]
#[case::no_memory_limit(json!([{"limits": {"cpu": "2"}}]), false)]
#[case::zero_limit(json!([{"limits": {"cpu": "0", "memory": "1Gi"}}]), false)]
#[case::best_effort(json!([{}]), false)]
#[case::one_container_short(json!([{"limits": {"cpu": "1", "memory": "1Gi"}}, {"requests": {"cpu": "1"}}]), false)]
fn the_qos_classifier_follows_kubernetes(#[case] resources: Value, #[case] guaranteed: bool) {
    let containers: Vec<Value> = resources
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!({"name": "c", "resources": r}))
        .collect();
    let pod = json!({"spec": {"containers": containers}});
    assert_eq!(is_guaranteed(&pod), guaranteed);
}

/// The test's own node-affinity evaluator, on terms whose meaning
/// Kubernetes documents; the node is `n1` labeled `zone=a`, `gpus=4`.
#[rstest::rstest]
#[case::no_affinity(json!({}), true)]
#[case::in_matches(json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]), true)]
#[case::not_in_absent_label(json!([{"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r"]}]}]), true)]
#[case::in_absent_label(json!([{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r"]}]}]), false)]
#[case::gt(json!([{"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["3"]}]}]), true)]
#[case::lt_equal(json!([{"matchExpressions": [{"key": "gpus", "operator": "Lt", "values": ["4"]}]}]), false)]
#[case::gt_on_a_word(json!([{"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1"]}]}]), false)]
#[case::empty_term_matches_nothing(json!([{}]), false)]
#[case::terms_are_ored(json!([{}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]), true)]
#[case::expressions_and_fields_are_anded(json!([{"matchExpressions": [{"key": "zone", "operator": "Exists"}],
    "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]), false)]
fn the_affinity_evaluator_follows_kubernetes(#[case] terms: Value, #[case] admitted: bool) {
    let labels = json!({"zone": "a", "gpus": "4"})
        .as_object()
        .unwrap()
        .clone();
    let spec = if terms.is_array() {
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}})
    } else {
        terms
    };
    assert_eq!(admits(&spec, "n1", &labels), admitted);
}

/// Found by `admitted_nodes_are_the_users_intersected_with_ours`: a required
/// selector without terms matches no node and the API server refuses it;
/// the policy ANDed its terms into the empty OR, which made the pod valid
/// and schedulable on our nodes. It is now left as written.
#[rstest::rstest]
#[case::empty_terms(json!({"nodeSelectorTerms": []}))]
#[case::null_terms(json!({"nodeSelectorTerms": null}))]
#[case::no_terms_key(json!({}))]
fn a_required_selector_without_terms_is_left_as_written(#[case] selector: Value) {
    let affinity =
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}});
    let pod = json!({"spec": {"affinity": affinity, "containers": [{"name": "a",
        "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "4Gi"}}}]}});
    let settings = json!({"capacity": {"source": "static", "maxGpusPerNode": 8}});
    let (accepted, admitted, response) = admit(&pod, &settings);
    assert!(accepted, "{response}");
    let required = &admitted["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"];
    assert_eq!(required, &selector, "{response}");
}
