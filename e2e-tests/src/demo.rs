//! The demo (`make demo`, `evaluate --plan examples/demo.yaml`): runs that
//! each evaluate request files with one settings file, against a replayed
//! cluster (a kwctl session file) or none, and the words that make the
//! output readable: what the session replays (its nodes grouped by shape)
//! and the node affinity a patch writes, each shape digest named.
//!
//! A plan file (YAML, paths relative to it):
//!
//! ```yaml
//! - title: With a cluster view
//!   session: cluster/fleet.yml        # optional: no session, no cluster view
//!   settings: settings.yaml           # optional: the policy's defaults
//!   requests: [requests/training-pod.json, requests]   # a folder: its *.json, sorted
//! ```

use crate::host::ContextAwareResource;
use crate::scenario::{json_files, load_settings};
use crate::session::{HostRequest, Response, Session};
use anyhow::{bail, Context, Result};
use gpu_topology::{parse_count_list, LabelKey, LabelPrefix};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Node labels written by others that name a machine: the cloud provider's
/// instance type, else the GPU operator's product name.
const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
/// How a node without a shape label is listed.
const NO_SHAPE: &str = "(no shape label)";

/// One run of a plan file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    title: String,
    session: Option<PathBuf>,
    settings: Option<PathBuf>,
    requests: Vec<PathBuf>,
}

/// One run, its files resolved and read.
#[derive(Debug, Clone)]
pub struct Run {
    pub title: String,
    pub session_path: Option<PathBuf>,
    pub session: Option<Session>,
    /// `None`: the policy's defaults.
    pub settings_path: Option<PathBuf>,
    pub settings: Value,
    pub requests: Vec<PathBuf>,
}

/// Reads a plan file and every settings and session file it names.
pub fn load_plan(path: &Path) -> Result<Vec<Run>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read plan {}", path.display()))?;
    let runs: Vec<RunFile> = serde_yaml::from_str(&text).with_context(|| {
        format!(
            "plan {} is not a list of runs (title, requests, optional settings and session)",
            path.display()
        )
    })?;
    if runs.is_empty() {
        bail!("plan {} lists no run", path.display());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    runs.into_iter()
        .map(|run| {
            let session_path = run.session.map(|p| dir.join(p));
            let settings_path = run.settings.map(|p| dir.join(p));
            Ok(Run {
                session: session_path.as_deref().map(Session::load).transpose()?,
                settings: match &settings_path {
                    Some(path) => load_settings(path)?,
                    None => Value::Object(serde_json::Map::new()),
                },
                requests: expand_requests(dir, &run.requests)
                    .with_context(|| format!("run {:?}", run.title))?,
                title: run.title,
                session_path,
                settings_path,
            })
        })
        .collect()
}

/// Request files: each entry a file, or a folder standing for its `*.json`
/// files in name order. An entry that matches nothing is an error, so a
/// renamed example cannot silently drop out of the demo.
fn expand_requests(dir: &Path, entries: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut requests = Vec::new();
    for entry in entries {
        let path = dir.join(entry);
        if path.is_dir() {
            let found = json_files(&path)?;
            if found.is_empty() {
                bail!("no request files (*.json) in {}", path.display());
            }
            requests.extend(found);
        } else if path.is_file() {
            requests.push(path);
        } else {
            bail!("request file {} does not exist", path.display());
        }
    }
    if requests.is_empty() {
        bail!("no request files");
    }
    Ok(requests)
}

/// The resources a policy may read: the `contextAwareResources` of its
/// metadata, which `kwctl run --allow-context-aware` grants an annotated
/// module (kwctl `build_context_aware_allowed_resources`,
/// `TrustPolicyMetadata`).
pub fn granted_resources(metadata: &Path) -> Result<BTreeSet<ContextAwareResource>> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Metadata {
        #[serde(default)]
        context_aware_resources: BTreeSet<ContextAwareResource>,
    }
    let text = std::fs::read_to_string(metadata)
        .with_context(|| format!("cannot read policy metadata {}", metadata.display()))?;
    let parsed: Metadata = serde_yaml::from_str(&text)
        .with_context(|| format!("policy metadata {} is not YAML", metadata.display()))?;
    Ok(parsed.context_aware_resources)
}

/// Labeled nodes of one shape, as the session's Node list shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeGroup {
    /// The `shape` label, or [`NO_SHAPE`].
    pub shape: String,
    pub nodes: usize,
    /// `p5.48xlarge, restricted`: what the shape digest stands for.
    pub name: String,
    /// `8 NVIDIA-H100-80GB-HBM3 GPUs, 4+4 per NUMA node, 96+96 CPUs, ...`
    pub facts: String,
}

/// What a session answers to each host call, in order, for the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A Node list, its nodes grouped by shape (first seen first).
    Nodes(Vec<ShapeGroup>),
    /// Any other document the host hands back.
    Document { about: String },
    /// The host's error.
    Error { about: String, message: String },
}

/// Reads what `session` replays: the Node lists grouped by shape.
pub fn session_answers(session: &Session, prefix: &LabelPrefix) -> Result<Vec<Answer>> {
    session
        .exchanges()
        .iter()
        .enumerate()
        .map(|(index, exchange)| {
            let about = request_words(&exchange.request);
            match &exchange.response {
                Response::Error { message } => Ok(Answer::Error {
                    about,
                    message: first_clause(message).to_owned(),
                }),
                Response::Success { payload } if is_node_list(&exchange.request) => {
                    let list: Value = serde_json::from_str(payload)
                        .with_context(|| format!("exchange #{index}: the Node list is not JSON"))?;
                    Ok(Answer::Nodes(shape_groups(&list, prefix)))
                }
                Response::Success { .. } => Ok(Answer::Document { about }),
            }
        })
        .collect()
}

fn is_node_list(request: &HostRequest) -> bool {
    matches!(
        request,
        HostRequest::KubernetesListResourceAll { api_version, kind, .. }
            if api_version == "v1" && kind == "Node"
    )
}

/// `ConfigMap kube-system/gpu-topology-fleet`, `the Node list`.
fn request_words(request: &HostRequest) -> String {
    match request {
        HostRequest::KubernetesGetResource {
            kind,
            name,
            namespace,
            ..
        } => match namespace {
            Some(namespace) => format!("{kind} {namespace}/{name}"),
            None => format!("{kind} {name}"),
        },
        HostRequest::KubernetesListResourceAll { kind, .. } => format!("the {kind} list"),
        HostRequest::KubernetesListResourceNamespace {
            kind, namespace, ..
        } => format!("the {kind} list of namespace {namespace}"),
    }
}

/// An API error up to its first parenthesis: kube-rs appends the whole
/// `ErrorResponse` there, which repeats the message.
fn first_clause(message: &str) -> &str {
    message.split(" (").next().unwrap_or(message).trim_end()
}

/// The items of a `NodeList` grouped by their shape label.
pub fn shape_groups(list: &Value, prefix: &LabelPrefix) -> Vec<ShapeGroup> {
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut groups: Vec<ShapeGroup> = Vec::new();
    for item in items {
        let labels = item.pointer("/metadata/labels").and_then(Value::as_object);
        let label = |key: &str| {
            labels
                .and_then(|l| l.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let ours = |key: LabelKey| label(&prefix.key(key)).to_owned();
        let shape = Some(ours(LabelKey::Shape))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| NO_SHAPE.to_owned());
        if let Some(group) = groups.iter_mut().find(|g| g.shape == shape) {
            group.nodes += 1;
            continue;
        }
        let machine = [label(INSTANCE_TYPE_LABEL), label(GPU_PRODUCT_LABEL)]
            .into_iter()
            .find(|m| !m.is_empty())
            .unwrap_or("unnamed machine");
        let policy = ours(LabelKey::TopologyManagerPolicy);
        let gpus = ours(LabelKey::Gpus);
        let gpu_words = [
            gpus.as_str(),
            label(GPU_PRODUCT_LABEL),
            if gpus == "1" { "GPU" } else { "GPUs" },
        ];
        let mut facts = vec![gpu_words
            .into_iter()
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")];
        for (key, unit) in [(LabelKey::NumaGpus, "GPUs"), (LabelKey::NumaCpus, "CPUs")] {
            // Read as the contract encodes per-NUMA lists; one NUMA node's
            // GPUs are the total already said.
            let counts = parse_count_list(&ours(key)).unwrap_or_default();
            let shown = match key {
                LabelKey::NumaGpus => counts.len() > 1,
                _ => !counts.is_empty(),
            };
            if shown {
                let counts: Vec<String> = counts.iter().map(u32::to_string).collect();
                facts.push(format!("{} {unit} per NUMA node", counts.join("+")));
            }
        }
        facts.push(format!("topologyManagerPolicy {policy}"));
        facts.push(format!(
            "cpuManagerPolicy {}",
            ours(LabelKey::CpuManagerPolicy)
        ));
        groups.push(ShapeGroup {
            name: format!("{machine}, {policy}"),
            facts: facts.join(", "),
            shape,
            nodes: 1,
        });
    }
    groups
}

/// The header of a run with a session: what each host call gets back.
pub fn session_header(path: &Path, answers: &[Answer]) -> Vec<String> {
    let mut lines = vec![format!(
        "Replaying {} (a kwctl session: the cluster's answers to the policy's host calls, in order):",
        path.display()
    )];
    for answer in answers {
        match answer {
            Answer::Error { about, message } => {
                lines.push(format!("  {about}: the host answers an error: {message}"))
            }
            Answer::Document { about } => lines.push(format!("  {about}: answered")),
            Answer::Nodes(groups) => {
                let nodes: usize = groups.iter().map(|g| g.nodes).sum();
                lines.push(format!(
                    "  the Node list: {} labeled GPU node{} of {} shape{}",
                    nodes,
                    if nodes == 1 { "" } else { "s" },
                    groups.len(),
                    if groups.len() == 1 { "" } else { "s" }
                ));
                for group in groups {
                    lines.push(format!(
                        "    {} {}: {} node{}, {}",
                        group.shape,
                        group.name,
                        group.nodes,
                        if group.nodes == 1 { "" } else { "s" },
                        group.facts
                    ));
                }
            }
        }
    }
    lines
}

/// Shape digest -> name, from every Node list of the answers.
pub fn shape_names(answers: &[Answer]) -> BTreeMap<String, String> {
    answers
        .iter()
        .filter_map(|answer| match answer {
            Answer::Nodes(groups) => Some(groups),
            _ => None,
        })
        .flatten()
        .map(|group| (group.shape.clone(), group.name.clone()))
        .collect()
}

/// The Pod's node affinity after admission, one line per clause, shape
/// digests followed by their names:
/// `required: gpu-topology.io/shape NotIn 6048449d127f1e8c (g5.2xlarge, none)`.
/// Empty when the Pod has none.
pub fn affinity_lines(pod: &Value, names: &BTreeMap<String, String>) -> Vec<String> {
    let Some(affinity) = pod.pointer("/spec/affinity/nodeAffinity") else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    let required = affinity
        .pointer("/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    if let Some(terms) = required {
        let terms: Vec<String> = terms.iter().map(|t| term_words(t, names)).collect();
        lines.push(format!("required: {}", terms.join("  OR  ")));
    }
    let preferred = affinity
        .get("preferredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array);
    for preference in preferred.into_iter().flatten() {
        let weight = preference
            .get("weight")
            .map_or("?".to_owned(), Value::to_string);
        let term = preference.get("preference").unwrap_or(&Value::Null);
        lines.push(format!(
            "preferred (weight {weight}): {}",
            term_words(term, names)
        ));
    }
    lines
}

/// A node-selector term: its expressions joined by AND.
fn term_words(term: &Value, names: &BTreeMap<String, String>) -> String {
    let expressions = term
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if expressions.is_empty() {
        return "(any node)".to_owned();
    }
    expressions
        .iter()
        .map(|expression| {
            let text = |key: &str| {
                expression
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            };
            let values: Vec<String> = expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|value| match names.get(value) {
                    Some(name) => format!("{value} ({name})"),
                    None => value.to_owned(),
                })
                .collect();
            format!("{} {} {}", text("key"), text("operator"), values.join(", "))
                .trim_end()
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Shown instead of a warning already printed in full in the same run.
const AS_ABOVE: &str = "(as above)";

/// `warnings` with those already in `seen` cut to their first clause and
/// marked [`AS_ABOVE`], so that a run's repeated warning (the same missing
/// fleet summary for every GPU request) is read once; `seen` gains the rest.
pub fn unrepeated_warnings(warnings: &[String], seen: &mut BTreeSet<String>) -> Vec<String> {
    warnings
        .iter()
        .map(|warning| {
            if seen.insert(warning.clone()) {
                warning.clone()
            } else {
                format!("{AS_ABOVE} {}", gist(warning))
            }
        })
        .collect()
}

/// A warning's first clause, after the `Deployment "name": ` a workload's
/// warnings start with.
fn gist(warning: &str) -> &str {
    let mut ends = warning.match_indices(": ").map(|(at, _)| at);
    let first = ends.next().unwrap_or(warning.len());
    let end = if warning[..first].ends_with('"') {
        ends.next().unwrap_or(warning.len())
    } else {
        first
    };
    &warning[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn node(shape: Option<&str>, instance: Option<&str>, policy: &str) -> Value {
        let mut labels = json!({
            "nvidia.com/gpu.product": "NVIDIA-A10G",
            "gpu-topology.io/gpus": "4",
            "gpu-topology.io/numa-gpus": "2.2",
            "gpu-topology.io/numa-cpus": "48.48",
            "gpu-topology.io/topology-manager-policy": policy,
            "gpu-topology.io/cpu-manager-policy": "static",
        });
        if let Some(shape) = shape {
            labels["gpu-topology.io/shape"] = json!(shape);
        }
        if let Some(instance) = instance {
            labels["node.kubernetes.io/instance-type"] = json!(instance);
        }
        json!({"metadata": {"name": "n", "labels": labels}})
    }

    #[test]
    fn nodes_are_grouped_by_shape_and_named_by_machine() {
        let list = json!({"items": [
            node(Some("aaaa"), Some("g5.12xlarge"), "restricted"),
            node(None, None, "none"),
            node(Some("aaaa"), Some("g5.12xlarge"), "restricted"),
        ]});
        let groups = shape_groups(&list, &LabelPrefix::default());
        assert_eq!(
            groups,
            vec![
                ShapeGroup {
                    shape: "aaaa".into(),
                    nodes: 2,
                    name: "g5.12xlarge, restricted".into(),
                    facts: "4 NVIDIA-A10G GPUs, 2+2 GPUs per NUMA node, 48+48 CPUs per NUMA node, topologyManagerPolicy restricted, cpuManagerPolicy static".into(),
                },
                ShapeGroup {
                    shape: NO_SHAPE.into(),
                    nodes: 1,
                    name: "NVIDIA-A10G, none".into(),
                    facts: "4 NVIDIA-A10G GPUs, 2+2 GPUs per NUMA node, 48+48 CPUs per NUMA node, topologyManagerPolicy none, cpuManagerPolicy static".into(),
                },
            ]
        );
    }

    #[rstest]
    #[case::not_a_node_list(json!({"kind": "Status"}))]
    #[case::items_not_objects(json!({"items": [1, "x", null]}))]
    fn odd_lists_give_no_or_unnamed_groups(#[case] list: Value) {
        let groups = shape_groups(&list, &LabelPrefix::default());
        assert!(groups.iter().all(|g| g.shape == NO_SHAPE), "{groups:?}");
    }

    #[test]
    fn the_header_says_what_each_host_call_gets() {
        let session = Session::parse(
            r#"
- type: Exchange
  request: |
    !KubernetesGetResource
    api_version: v1
    kind: ConfigMap
    name: gpu-topology-fleet
    namespace: kube-system
    disable_cache: false
    field_masks: null
  response:
    type: Error
    message: 'ApiError: configmaps "gpu-topology-fleet" not found: NotFound (ErrorResponse { code: 404 })'
- type: Exchange
  request: |
    !KubernetesListResourceAll
    api_version: v1
    kind: Node
    label_selector: gpu-topology.io/gpus
    field_selector: null
    field_masks: null
  response:
    type: Success
    payload: '{"items":[{"metadata":{"labels":{"gpu-topology.io/shape":"bbbb","gpu-topology.io/gpus":"1","gpu-topology.io/topology-manager-policy":"none","gpu-topology.io/cpu-manager-policy":"none","node.kubernetes.io/instance-type":"g5.2xlarge","nvidia.com/gpu.product":"NVIDIA-A10G"}}}]}'
"#,
        )
        .unwrap();
        let answers = session_answers(&session, &LabelPrefix::default()).unwrap();
        assert_eq!(
            session_header(Path::new("fleet.yml"), &answers),
            vec![
                "Replaying fleet.yml (a kwctl session: the cluster's answers to the policy's host calls, in order):",
                "  ConfigMap kube-system/gpu-topology-fleet: the host answers an error: ApiError: configmaps \"gpu-topology-fleet\" not found: NotFound",
                "  the Node list: 1 labeled GPU node of 1 shape",
                "    bbbb g5.2xlarge, none: 1 node, 1 NVIDIA-A10G GPU, topologyManagerPolicy none, cpuManagerPolicy none",
            ]
        );
        assert_eq!(
            shape_names(&answers),
            BTreeMap::from([("bbbb".to_owned(), "g5.2xlarge, none".to_owned())])
        );
    }

    #[rstest]
    #[case::no_affinity(json!({"spec": {}}), vec![])]
    #[case::required_and_preferred(
        json!({"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "gpu-topology.io/shape", "operator": "NotIn", "values": ["bbbb"]},
                    {"key": "gpu-topology.io/gpus", "operator": "Exists"}
                ]},
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
            ]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [
                    {"key": "gpu-topology.io/shape", "operator": "In", "values": ["aaaa", "cccc"]}
                ]}}
            ]
        }}}}),
        vec![
            "required: gpu-topology.io/shape NotIn bbbb (g5.2xlarge, none) AND gpu-topology.io/gpus Exists  OR  zone In a, b",
            "preferred (weight 100): gpu-topology.io/shape In aaaa (p5.48xlarge, restricted), cccc",
        ]
    )]
    #[case::empty_preference(
        json!({"spec": {"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]
        }}}}),
        vec!["preferred (weight 1): (any node)"]
    )]
    fn affinity_is_one_line_per_clause_with_shapes_named(
        #[case] pod: Value,
        #[case] expected: Vec<&str>,
    ) {
        let names = BTreeMap::from([
            ("aaaa".to_owned(), "p5.48xlarge, restricted".to_owned()),
            ("bbbb".to_owned(), "g5.2xlarge, none".to_owned()),
        ]);
        assert_eq!(affinity_lines(&pod, &names), expected);
    }

    #[test]
    fn repeated_warnings_are_cut_to_their_gist() {
        let mut seen = BTreeSet::new();
        let warnings = vec![
            "GPU fit read from the Node list: the summary is absent".to_owned(),
            "Deployment \"x\": GPU fit not checked: no view".to_owned(),
        ];
        assert_eq!(unrepeated_warnings(&warnings, &mut seen), warnings);
        assert_eq!(
            unrepeated_warnings(&warnings, &mut seen),
            vec![
                "(as above) GPU fit read from the Node list",
                "(as above) Deployment \"x\": GPU fit not checked",
            ]
        );
    }

    #[test]
    fn missing_request_entries_are_errors() {
        let dir = std::env::temp_dir();
        let error = expand_requests(&dir, &[PathBuf::from("no-such-request.json")]).unwrap_err();
        assert!(
            error.to_string().contains("no-such-request.json"),
            "{error}"
        );
    }
}
