//! Node affinity: which node-selector terms a GPU pod gets, and merging them
//! into the pod's own affinity without dropping or reordering anything.
//!
//! With a cluster view the terms select node shapes by the kubelet model's
//! verdicts ([`AffinityRequirement::with_view`]), so that no labeled node
//! whose kubelet refuses the pod matches; without one, count-based terms
//! stand in ([`AffinityRequirement::without_view`]).
//!
//! The required terms are ANDed into every existing `nodeSelectorTerm`
//! (expanding the OR where our requirement is itself an OR). Merging is
//! idempotent: a term that already carries one of our terms is left alone, and
//! a preferred term already present with at least our weight is not added again.

use crate::decide::demand::Demand;
use crate::decide::model::GroupVerdict;
use crate::settings::{AffinityMode, TopologyConfig, UnlabeledNodes};
use gpu_topology::fit::required_terms;
use gpu_topology::selector::Requirement;
use gpu_topology::{
    aligned_terms, conjoin, not_refusing_terms, GpuDemand, LabelKey, LabelPrefix, ShapeId, Term,
};
use serde_json::{Map, Value};

/// The affinity a GPU pod needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AffinityRequirement {
    /// ORed terms the node must match.
    pub required: Vec<Term>,
    /// Terms the scheduler should prefer, each with `weight`.
    pub preferred: Vec<Term>,
    pub weight: i64,
    /// Nodes every required term leaves out by name (`matchFields`
    /// `metadata.name NotIn`): nodes whose facts are stale under `required`
    /// (`fit::place`).
    pub excluded_nodes: Vec<String>,
}

impl AffinityRequirement {
    /// Without a cluster view (host refused, `capacity.source: static`):
    /// count-based terms, a conservative fallback. Under `required`, nodes
    /// whose labels say they host `demand` at the alignment (errs toward
    /// leaving nodes out: the labels do not see CPUs or memory). Under
    /// `preferred`, only the nodes known to refuse are left out
    /// ([`not_refusing_terms`]: a `single-numa-node` kubelet with too few
    /// GPUs per NUMA node), so unlabeled nodes and autoscaler templates stay
    /// eligible (errs toward admitting: a kubelet refusing for CPUs or
    /// memory is not seen); aligned nodes are preferred. No preference for
    /// `node` alignment: the scheduler's resource fit already asks that.
    pub fn without_view(demand: impl Into<GpuDemand>, topology: &TopologyConfig) -> Self {
        let demand = demand.into();
        let weight = topology.preferred_weight;
        match topology.affinity {
            AffinityMode::Off => AffinityRequirement::default(),
            AffinityMode::Required => AffinityRequirement {
                required: required_terms(demand, topology.alignment),
                preferred: Vec::new(),
                weight,
                excluded_nodes: Vec::new(),
            },
            AffinityMode::Preferred => {
                let preferred = match topology.alignment {
                    gpu_topology::Alignment::Node => Vec::new(),
                    alignment => aligned_terms(demand, alignment),
                };
                AffinityRequirement {
                    required: not_refusing_terms(demand),
                    preferred,
                    weight,
                    excluded_nodes: Vec::new(),
                }
            }
        }
    }

    /// With a cluster view, from the verdict of every node group:
    /// - `required`: `shape In [groups that host the pod]`
    ///   ([`GroupVerdict::hosts`]); with `capacity.unlabeledNodes: allow`,
    ///   ORed with nodes of a shape the view does not know (`shape NotIn
    ///   [every known shape]`) that the count labels say host it, so that
    ///   scale-from-zero templates with those labels match;
    /// - `preferred`: `shape NotIn [refusing groups]` when a group refuses
    ///   (nodes without the label, and of shapes the view has not seen,
    ///   stay eligible), and the preference `shape In [hosting groups]` at
    ///   the alignment when some do and not every eligible group does;
    /// - `off`: nothing.
    ///
    /// Groups without a `shape` label can be neither selected nor left
    /// out. Under `required` with no group hosting (and no `allow`) the
    /// requirement is empty: the fit check rejects such a pod.
    pub(crate) fn with_view(
        verdicts: &[GroupVerdict],
        demand: &Demand,
        topology: &TopologyConfig,
        unlabeled: UnlabeledNodes,
    ) -> Self {
        let weight = topology.preferred_weight;
        let hosting = |v: &&GroupVerdict| v.hosts(topology.alignment, &demand.pod);
        match topology.affinity {
            AffinityMode::Off => AffinityRequirement::default(),
            AffinityMode::Required => {
                let mut required: Vec<Term> = shapes(verdicts.iter().filter(hosting))
                    .map(|ids| vec![shape_requirement(ids, true)])
                    .into_iter()
                    .collect();
                if unlabeled == UnlabeledNodes::Allow {
                    let counted = required_terms(demand.needs, topology.alignment);
                    required.extend(match shapes(verdicts.iter()) {
                        Some(known) => conjoin(&[vec![shape_requirement(known, false)]], &counted),
                        None => counted,
                    });
                }
                AffinityRequirement {
                    required,
                    preferred: Vec::new(),
                    weight,
                    excluded_nodes: Vec::new(),
                }
            }
            AffinityMode::Preferred => {
                let refusing = verdicts.iter().filter(|v| v.answer.refuses());
                let required = shapes(refusing)
                    .map(|ids| vec![vec![shape_requirement(ids, false)]])
                    .unwrap_or_default();
                let eligible_all_hosting = verdicts
                    .iter()
                    .filter(|v| !v.answer.refuses())
                    .all(|v| hosting(&v) && v.selector_shape().is_some());
                let preferred = match shapes(verdicts.iter().filter(hosting)) {
                    Some(ids) if !eligible_all_hosting => vec![vec![shape_requirement(ids, true)]],
                    _ => Vec::new(),
                };
                AffinityRequirement {
                    required,
                    preferred,
                    weight,
                    excluded_nodes: Vec::new(),
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.required.is_empty() && self.preferred.is_empty()
    }
}

/// The selectable shape ids of `verdicts`
/// ([`GroupVerdict::selector_shape`]), sorted and without repeats (so the
/// terms are the same on every evaluation); `None` when none has one.
fn shapes<'a, 'f: 'a>(
    verdicts: impl Iterator<Item = &'a GroupVerdict<'f>>,
) -> Option<Vec<ShapeId>> {
    let mut ids: Vec<ShapeId> = verdicts.filter_map(GroupVerdict::selector_shape).collect();
    gpu_topology::sort::sort(&mut ids);
    ids.dedup();
    (!ids.is_empty()).then_some(ids)
}

/// `shape In [ids]` (`listed`) or `shape NotIn [ids]`; `ids` never empty.
fn shape_requirement(ids: Vec<ShapeId>, listed: bool) -> Requirement {
    let values = ids.into_iter().map(|id| id.to_string().into()).collect();
    let key = LabelKey::Shape;
    if listed {
        Requirement::In { key, values }
    } else {
        Requirement::NotIn { key, values }
    }
}

/// `matchExpressions` for `term`, as node affinity spells them.
fn render(term: &Term, prefix: &LabelPrefix) -> Vec<Value> {
    term.iter()
        .map(|requirement| {
            let values = requirement.values().into_iter().map(Value::String);
            object([
                ("key", Value::String(requirement.key(prefix))),
                ("operator", requirement.operator().as_str().into()),
                ("values", Value::Array(values.collect())),
            ])
        })
        .collect()
}

/// A JSON object of `members`. Inserted one by one: `Map::from_iter` would
/// first collect and sort them in a buffer of its own.
fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    let mut map = Map::new();
    for (key, value) in members {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

/// Merges `requirement` into the PodSpec `spec`.
pub fn merge(
    spec: &mut Value,
    requirement: &AffinityRequirement,
    prefix: &LabelPrefix,
) -> Result<(), String> {
    if requirement.is_empty() {
        return Ok(());
    }
    let required: Vec<Vec<Value>> = requirement
        .required
        .iter()
        .map(|t| render(t, prefix))
        .collect();
    let preferred: Vec<Vec<Value>> = requirement
        .preferred
        .iter()
        .map(|t| render(t, prefix))
        .collect();
    let node_affinity = object_at(spec, "affinity", "spec")
        .and_then(|affinity| object_at(affinity, "nodeAffinity", "spec.affinity"))?;
    if !required.is_empty() && !has_required_selector_without_terms(node_affinity) {
        let path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
        let selector = object_at(
            node_affinity,
            "requiredDuringSchedulingIgnoredDuringExecution",
            "spec.affinity.nodeAffinity",
        )?;
        let terms = array_at(selector, "nodeSelectorTerms", path)?;
        and_into_terms(terms, required)?;
        if !requirement.excluded_nodes.is_empty() {
            exclude_nodes(terms, &requirement.excluded_nodes, path)?;
        }
    }
    if !preferred.is_empty() {
        let preferences = array_at(
            node_affinity,
            "preferredDuringSchedulingIgnoredDuringExecution",
            "spec.affinity.nodeAffinity",
        )?;
        add_preferences(preferences, preferred, requirement.weight);
    }
    Ok(())
}

/// `{"matchExpressions": expressions}`. Built by moving the rendered values:
/// `json!` would serialise them into a copy.
fn match_expressions(expressions: Vec<Value>) -> Value {
    object([("matchExpressions", Value::Array(expressions))])
}

/// ANDs the OR of `required` into the OR of `terms`.
fn and_into_terms(terms: &mut Vec<Value>, required: Vec<Vec<Value>>) -> Result<(), String> {
    if terms.is_empty() {
        terms.extend(required.into_iter().map(match_expressions));
        return Ok(());
    }
    // Terms ANDed with our first term keep the user's terms' places; those for
    // our further terms follow, in the user's order. The patch is then only adds.
    let mut merged = Vec::with_capacity(terms.len() * required.len());
    for (pass, expressions) in required.iter().enumerate() {
        for (index, term) in terms.iter().enumerate() {
            let Some(fields) = term.as_object() else {
                return Err(format!(
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{index}] is not an object"
                ));
            };
            let existing = match fields.get("matchExpressions") {
                None | Some(Value::Null) => &[][..],
                Some(Value::Array(expressions)) => expressions.as_slice(),
                Some(_) => {
                    return Err(format!(
                        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{index}].matchExpressions is not a list"
                    ))
                }
            };
            let already_ours = required
                .iter()
                .any(|ours| ours.iter().all(|e| existing.contains(e)));
            if already_ours || matches_nothing(fields) {
                // Kept once, as is. An empty term matches no node; ANDing
                // into it would widen it.
                if pass == 0 {
                    merged.push(term.clone());
                }
                continue;
            }
            // The term's other fields (matchFields, newer ones) are kept.
            // Inserted one by one, as in `object`.
            let mut expanded = Map::new();
            expanded.extend(
                fields
                    .iter()
                    .filter(|(key, _)| key.as_str() != "matchExpressions")
                    .map(|(key, value)| (key.clone(), value.clone())),
            );
            let mut all = existing.to_vec();
            all.extend(
                expressions
                    .iter()
                    .filter(|e| !existing.contains(e))
                    .cloned(),
            );
            expanded.insert("matchExpressions".to_owned(), Value::Array(all));
            merged.push(Value::Object(expanded));
        }
    }
    *terms = merged;
    Ok(())
}

/// ANDs `metadata.name NotIn names` into every term that selects some
/// node (an empty term matches none; ANDing into it would widen it). A term
/// that already holds that very field requirement is left as it is, so a
/// pod decided again is unchanged.
fn exclude_nodes(terms: &mut [Value], names: &[String], path: &str) -> Result<(), String> {
    let requirement = object([
        ("key", Value::String("metadata.name".to_owned())),
        ("operator", Value::String("NotIn".to_owned())),
        (
            "values",
            Value::Array(names.iter().cloned().map(Value::String).collect()),
        ),
    ]);
    for (index, term) in terms.iter_mut().enumerate() {
        let Some(fields) = term.as_object_mut() else {
            return Err(format!(
                "{path}.nodeSelectorTerms[{index}] is not an object"
            ));
        };
        if matches_nothing(fields) {
            continue;
        }
        let match_fields = fields
            .entry("matchFields")
            .or_insert_with(|| Value::Array(Vec::new()));
        if match_fields.is_null() {
            *match_fields = Value::Array(Vec::new());
        }
        let Some(existing) = match_fields.as_array_mut() else {
            return Err(format!(
                "{path}.nodeSelectorTerms[{index}].matchFields is not a list"
            ));
        };
        if !existing.contains(&requirement) {
            existing.push(requirement.clone());
        }
    }
    Ok(())
}

/// A required node selector the pod author wrote without terms (`{}`,
/// `nodeSelectorTerms: []` or `null`). It matches no node (component-helpers'
/// `nodeSelectorTerms.match` ORs over none), and the API server refuses it
/// (`ValidateNodeSelector`: "must have at least one node selector term").
/// It is left as written: our terms alone would turn that pod into a valid
/// one that schedules.
fn has_required_selector_without_terms(node_affinity: &Value) -> bool {
    let selector = node_affinity
        .get("requiredDuringSchedulingIgnoredDuringExecution")
        .filter(|selector| selector.is_object());
    match selector.map(|selector| selector.get("nodeSelectorTerms")) {
        None => false,
        Some(None | Some(Value::Null)) => true,
        Some(Some(Value::Array(terms))) => terms.is_empty(),
        Some(Some(_)) => false,
    }
}

/// A node-selector term without expressions or fields selects no node.
fn matches_nothing(term: &Map<String, Value>) -> bool {
    let empty = |key| {
        term.get(key)
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    };
    empty("matchExpressions") && empty("matchFields")
}

/// Appends each of `preferred` unless a preference already asks for it with
/// at least `weight`: a weaker one (a pod author's `weight: 1`) must not
/// stand in for the operator's preference.
fn add_preferences(preferences: &mut Vec<Value>, preferred: Vec<Vec<Value>>, weight: i64) {
    for expressions in preferred {
        let present = preferences.iter().any(|preference| {
            let strong_enough = preference
                .get("weight")
                .and_then(Value::as_i64)
                .is_some_and(|existing| existing >= weight);
            strong_enough
                && preference
                    .pointer("/preference/matchExpressions")
                    .and_then(Value::as_array)
                    .is_some_and(|existing| expressions.iter().all(|e| existing.contains(e)))
        });
        if !present {
            preferences.push(object([
                ("weight", Value::from(weight)),
                ("preference", match_expressions(expressions)),
            ]));
        }
    }
}

/// The object at `parent[key]`, created when absent or null.
fn object_at<'a>(parent: &'a mut Value, key: &str, path: &str) -> Result<&'a mut Value, String> {
    let child = slot(parent, key, path, || Value::Object(Map::new()))?;
    if child.is_object() {
        Ok(child)
    } else {
        Err(format!("{path}.{key} is not an object"))
    }
}

/// The array at `parent[key]`, created when absent or null.
fn array_at<'a>(
    parent: &'a mut Value,
    key: &str,
    path: &str,
) -> Result<&'a mut Vec<Value>, String> {
    slot(parent, key, path, || Value::Array(Vec::new()))?
        .as_array_mut()
        .ok_or_else(|| format!("{path}.{key} is not a list"))
}

fn slot<'a>(
    parent: &'a mut Value,
    key: &str,
    path: &str,
    empty: impl Fn() -> Value,
) -> Result<&'a mut Value, String> {
    let fields = parent
        .as_object_mut()
        .ok_or_else(|| format!("{path} is not an object"))?;
    let child = fields.entry(key).or_insert_with(&empty);
    if child.is_null() {
        *child = empty();
    }
    Ok(child)
}

#[cfg(test)]
mod tests {

    /// Nodes left out by name join every term that selects a node, once:
    /// a pod decided again is unchanged, an empty term stays empty.
    #[test]
    fn excluded_nodes_join_every_term_once() {
        let requirement = AffinityRequirement {
            required: vec![vec![Requirement::In {
                key: LabelKey::Shape,
                values: vec!["00000000000000aa".into()],
            }]],
            excluded_nodes: vec!["gpu-7".to_owned(), "gpu-8".to_owned()],
            ..AffinityRequirement::default()
        };
        let mut spec = serde_json::json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-1", "gpu-7"]}]},
            {}
        ]}}}});
        merge(&mut spec, &requirement, &LabelPrefix::default()).unwrap();
        let once = spec.clone();
        merge(&mut spec, &requirement, &LabelPrefix::default()).unwrap();
        assert_eq!(spec, once, "deciding again changes nothing");
        let terms = once["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            .as_array()
            .unwrap();
        let not_in = serde_json::json!({"key": "metadata.name", "operator": "NotIn", "values": ["gpu-7", "gpu-8"]});
        assert_eq!(terms[0]["matchFields"], serde_json::json!([not_in]));
        assert_eq!(terms[1]["matchFields"][1], not_in);
        assert_eq!(
            terms[2],
            serde_json::json!({}),
            "an empty term matches nothing"
        );
    }
    use super::*;
    use crate::settings::Config;
    use gpu_topology::Alignment;
    use rstest::rstest;
    use serde_json::json;

    fn topology(affinity: AffinityMode, alignment: Alignment) -> TopologyConfig {
        TopologyConfig {
            affinity,
            alignment,
            ..Config::default().topology
        }
    }

    fn expression(key: &str, operator: &str, value: &str) -> Value {
        json!({"key": format!("gpu-topology.io/{key}"), "operator": operator, "values": [value]})
    }

    fn merged(spec: Value, requirement: &AffinityRequirement) -> Value {
        let mut spec = spec;
        merge(&mut spec, requirement, &LabelPrefix::default()).unwrap();
        spec
    }

    fn required_terms_of(spec: &Value) -> Vec<Value> {
        spec.pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Without a view, `preferred` leaves out only what the labels say
    /// refuses (no `gpus` term: the scheduler's resource fit asks that, and
    /// autoscaler templates lack our labels) and prefers alignment.
    #[test]
    fn preferred_mode_without_a_view_leaves_out_known_refusals_and_prefers_alignment() {
        let requirement = AffinityRequirement::without_view(4, &Config::default().topology);
        let spec = merged(json!({}), &requirement);
        assert_eq!(
            required_terms_of(&spec),
            vec![
                json!({"matchExpressions": [
                    expression("topology-manager-policy", "NotIn", "single-numa-node")]}),
                json!({"matchExpressions": [
                    expression("gpus-per-numa-max", "Gt", "3")]}),
            ]
        );
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"],
            json!([{"weight": 100, "preference": {"matchExpressions": [expression("gpus-per-numa-max", "Gt", "3")]}}])
        );
    }

    #[rstest]
    #[case::numa(Alignment::Numa, 1)]
    #[case::nvlink(Alignment::Nvlink, 2)]
    #[case::node(Alignment::Node, 2)]
    fn required_mode_terms(#[case] alignment: Alignment, #[case] terms: usize) {
        let requirement =
            AffinityRequirement::without_view(8, &topology(AffinityMode::Required, alignment));
        assert_eq!(requirement.required.len(), terms);
        assert!(requirement.preferred.is_empty());
    }

    #[test]
    fn node_alignment_adds_no_redundant_preference() {
        let requirement = AffinityRequirement::without_view(
            8,
            &topology(AffinityMode::Preferred, Alignment::Node),
        );
        assert!(requirement.preferred.is_empty());
    }

    #[test]
    fn off_mode_changes_nothing() {
        let requirement =
            AffinityRequirement::without_view(8, &topology(AffinityMode::Off, Alignment::Numa));
        assert_eq!(merged(json!({"x": 1}), &requirement), json!({"x": 1}));
    }

    #[test]
    fn ands_into_every_user_term_expanding_ors() {
        let user_a = json!({"key": "zone", "operator": "In", "values": ["a"]});
        let user_b = json!({"key": "zone", "operator": "In", "values": ["b"]});
        let spec = json!({"affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [user_a]},
                {"matchExpressions": [user_b], "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            ]}},
            "podAntiAffinity": {"x": 1}
        }});
        let requirement = AffinityRequirement::without_view(2, &Config::default().topology);
        let after = merged(spec, &requirement);
        let terms = required_terms_of(&after);
        assert_eq!(terms.len(), 4, "2 user terms x 2 admit terms");
        // User terms keep their order (then repeat for our second term), user
        // expressions come first, matchFields are kept.
        assert_eq!(terms[0]["matchExpressions"][0], user_a);
        assert_eq!(terms[1]["matchExpressions"][0], user_b);
        assert_eq!(terms[2]["matchExpressions"][0], user_a);
        assert_eq!(terms[3]["matchExpressions"][0], user_b);
        assert!(terms[1]["matchFields"].is_array() && terms[3]["matchFields"].is_array());
        assert_eq!(after["affinity"]["podAntiAffinity"], json!({"x": 1}));
    }

    #[test]
    fn a_term_that_matches_nothing_stays_empty() {
        let spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{}, {"matchExpressions": []}]}}}});
        let requirement = AffinityRequirement::without_view(1, &Config::default().topology);
        let after = merged(spec, &requirement);
        assert_eq!(
            required_terms_of(&after),
            vec![json!({}), json!({"matchExpressions": []})]
        );
    }

    #[rstest]
    #[case::numa_preferred(topology(AffinityMode::Preferred, Alignment::Numa))]
    #[case::nvlink_required(topology(AffinityMode::Required, Alignment::Nvlink))]
    fn merging_twice_adds_nothing(#[case] topology: TopologyConfig) {
        let spec = json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]
        }}});
        let requirement = AffinityRequirement::without_view(4, &topology);
        let once = merged(spec, &requirement);
        let twice = merged(once.clone(), &requirement);
        assert_eq!(once, twice);
        // The user's preference stays first.
        assert_eq!(
            once["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
                ["weight"],
            5
        );
    }

    /// The author's own copy of our preference counts only when it weighs at
    /// least `preferredWeight` (100 by default).
    #[rstest]
    #[case::weaker_copy_gets_ours_added(1, 2)]
    #[case::equal_weight_is_ours(100, 1)]
    fn an_authors_weak_copy_of_the_preference_does_not_replace_it(
        #[case] authors_weight: i64,
        #[case] preferences: usize,
    ) {
        let spec = json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": authors_weight, "preference": {"matchExpressions": [expression("gpus-per-numa-max", "Gt", "3")]}}
        ]}}});
        let requirement = AffinityRequirement::without_view(4, &Config::default().topology);
        let after = merged(spec, &requirement);
        let listed = after["affinity"]["nodeAffinity"]
            ["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .unwrap();
        assert_eq!(listed.len(), preferences, "{listed:?}");
        assert_eq!(listed[0]["weight"], authors_weight);
        assert_eq!(merged(after.clone(), &requirement), after);
    }

    #[rstest]
    #[case::affinity_not_an_object(json!({"affinity": "x"}), "spec.affinity is not an object")]
    #[case::terms_not_a_list(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": 3}}}}),
        "nodeSelectorTerms is not a list")]
    #[case::term_not_an_object(
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [3]}}}}),
        "nodeSelectorTerms[0] is not an object")]
    fn malformed_affinity_is_an_error(#[case] spec: Value, #[case] expected: &str) {
        let mut spec = spec;
        let requirement = AffinityRequirement::without_view(1, &Config::default().topology);
        let error = merge(&mut spec, &requirement, &LabelPrefix::default()).unwrap_err();
        assert!(error.contains(expected), "{error}");
    }
}
