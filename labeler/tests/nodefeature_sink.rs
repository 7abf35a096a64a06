//! The nodefeature sink against a scripted API server on 127.0.0.1: the exact
//! server-side-apply request, every applied object checked field for field
//! against NFD's NodeFeature CRD (`tests/fixtures/nfd/`), the owner lookup,
//! stale labels, and the label contract. Faults are in `api_faults.rs`.

use crate::common;

use common::fake_api::{self, assert_forced_apply, finish, requests, sink_client, Reply};
use common::{labels, labels_of_reports, local_fixture, topology_fixture};
use gpu_topology::names::{is_dns_label, is_dns_subdomain};
use gpu_topology::{LabelPrefix, NodeTopology};
use gpu_topology_labeler::parse::nvidia_smi;
use gpu_topology_labeler::sinks::api::DEFAULT_FIELD_MANAGER;
use gpu_topology_labeler::sinks::nodefeature::{NodeFeatureSink, Target};
use gpu_topology_labeler::sinks::retry::RetryPolicy;
use gpu_topology_labeler::sinks::Labels;
use jiff::Timestamp;
use rstest::rstest;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const NODE: &str = "gpu-node-1";
const NAMESPACE: &str = "gpu-topology-labeler";
const POD: &str = "gpu-topology-labeler-x7k2p";
const OBJECT: &str = "gpu-topology-gpu-node-1";

fn sink(port: u16, namespace: Option<&str>, pod: Option<&str>) -> NodeFeatureSink {
    let target = Target {
        node: NODE.to_owned(),
        namespace: namespace.map(str::to_owned),
        pod: pod.map(str::to_owned),
    };
    let retry = RetryPolicy {
        attempts: 1,
        ..RetryPolicy::default()
    };
    NodeFeatureSink::new(
        sink_client(port, Duration::from_secs(5)),
        target,
        DEFAULT_FIELD_MANAGER,
        retry,
        &gpu_topology::LabelPrefix::default(),
    )
}

fn dgx_labels() -> Labels {
    labels(&[
        ("gpus", "8"),
        ("gpus-per-numa-max", "2"),
        ("nvlink-group-max", "8"),
    ])
}

fn daemonset_owner() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "gpu-topology-labeler",
        "uid": "5e0c3a6e-2f6f-4b8e-9d1e-0c7c1d1f7a11",
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The labeler's pod as `GET .../pods/NAME` with `Accept: ...;as=PartialObjectMetadata` returns it.
fn pod_metadata(owners: Option<Value>) -> Reply {
    let mut metadata = json!({
        "name": POD,
        "namespace": NAMESPACE,
        "uid": "a7f4b1c2-0d3e-4f5a-8b6c-7d8e9f0a1b2c",
        "resourceVersion": "4711",
        "labels": { "app.kubernetes.io/name": "gpu-topology-labeler" },
    });
    if let Some(owners) = owners {
        metadata["ownerReferences"] = owners;
    }
    Reply::json(&json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
    }))
}

/// What the CRD says about where NodeFeatures live and what they look like.
struct Crd {
    group: String,
    version: String,
    plural: String,
    scope: String,
    kind: String,
    schema: Value,
}

fn nodefeature_crd() -> Crd {
    let path = local_fixture("nfd/nodefeature-crd.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let crd: Value = serde_saphyr::from_str(&text).unwrap();
    let spec = &crd["spec"];
    let versions = spec["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "one served version");
    let string = |value: &Value| value.as_str().unwrap().to_owned();
    Crd {
        group: string(&spec["group"]),
        version: string(&versions[0]["name"]),
        plural: string(&spec["names"]["plural"]),
        scope: string(&spec["scope"]),
        kind: string(&spec["names"]["kind"]),
        schema: versions[0]["schema"]["openAPIV3Schema"].clone(),
    }
}

/// Where `value` breaks `schema`, a structural OpenAPI v3 schema of the subset
/// NFD's CRD uses: `type`, `properties`, `required`, `additionalProperties`,
/// `items`. A field the schema does not know is an error, because the API server
/// would prune it (silently drop it) from a structural schema's object. An
/// object schema with neither `properties` nor `additionalProperties` (only
/// `metadata`) is left to [`metadata_errors`], as the API server leaves it to
/// ObjectMeta validation.
fn schema_errors(schema: &Value, value: &Value, path: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let type_ok = match schema["type"].as_str() {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("boolean") => value.is_boolean(),
        Some(other) => panic!("{path}: schema type {other} is outside the subset"),
        None => true,
    };
    if !type_ok {
        errors.push(format!("{path}: expected {}, got {value}", schema["type"]));
        return errors;
    }
    for required in schema["required"].as_array().into_iter().flatten() {
        let name = required.as_str().unwrap();
        if value.get(name).is_none() {
            errors.push(format!("{path}.{name}: required"));
        }
    }
    if let Some(object) = value.as_object() {
        let properties = schema["properties"].as_object();
        let additional = schema.get("additionalProperties");
        for (key, field) in object {
            let field_path = format!("{path}.{key}");
            match (properties.and_then(|p| p.get(key)), additional) {
                (Some(field_schema), _) => {
                    errors.extend(schema_errors(field_schema, field, &field_path))
                }
                (None, Some(field_schema)) => {
                    errors.extend(schema_errors(field_schema, field, &field_path))
                }
                (None, None) if properties.is_none() => {}
                (None, None) => errors.push(format!("{field_path}: unknown field, pruned")),
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (index, item) in array.iter().enumerate() {
            errors.extend(schema_errors(items, item, &format!("{path}[{index}]")));
        }
    }
    errors
}

/// A label value (apimachinery `IsValidLabelValue`): at most 63 characters,
/// alphanumerics, '-', '_', '.', starting and ending alphanumeric; or empty.
fn is_label_value(text: &str) -> bool {
    text.is_empty()
        || (text.len() <= 63
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && text.starts_with(|c: char| c.is_ascii_alphanumeric())
            && text.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

/// A label key (`IsQualifiedName`): an optional DNS-subdomain prefix and `/`,
/// then a name of at most 63 characters with the label-value alphabet.
fn is_label_key(text: &str) -> bool {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    prefix.is_none_or(is_dns_subdomain) && !name.is_empty() && is_label_value(name)
}

/// What ObjectMeta validation would reject in the fields the sink sets.
fn metadata_errors(metadata: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let known: BTreeSet<&str> = [
        "name",
        "namespace",
        "labels",
        "annotations",
        "ownerReferences",
    ]
    .into();
    for key in metadata.as_object().unwrap().keys() {
        if !known.contains(key.as_str()) {
            errors.push(format!("metadata.{key}: not a field the sink should set"));
        }
    }
    if !metadata["name"].as_str().is_some_and(is_dns_subdomain) {
        errors.push(format!(
            "metadata.name {}: not a DNS subdomain",
            metadata["name"]
        ));
    }
    if !metadata["namespace"].as_str().is_some_and(is_dns_label) {
        errors.push(format!(
            "metadata.namespace {}: not a DNS label",
            metadata["namespace"]
        ));
    }
    for (key, value) in metadata["labels"].as_object().into_iter().flatten() {
        if !is_label_key(key) || !value.as_str().is_some_and(is_label_value) {
            errors.push(format!(
                "metadata.labels: {key}={value} is not a valid label"
            ));
        }
    }
    // Annotation keys are label keys; values are any string (the heartbeat's
    // is read through the contract).
    for (key, value) in metadata["annotations"].as_object().into_iter().flatten() {
        let heartbeat = value.as_str().map(gpu_topology::parse_heartbeat);
        if !is_label_key(key) || !matches!(heartbeat, Some(Ok(_))) {
            errors.push(format!(
                "metadata.annotations: {key}={value} is not a heartbeat annotation"
            ));
        }
    }
    for owner in metadata["ownerReferences"].as_array().into_iter().flatten() {
        for field in ["apiVersion", "kind", "name", "uid"] {
            if owner[field].as_str().is_none_or(str::is_empty) {
                errors.push(format!(
                    "metadata.ownerReferences: {field} missing in {owner}"
                ));
            }
        }
    }
    errors
}

/// Everything the API server would find wrong with `object` as a NodeFeature.
fn nodefeature_errors(crd: &Crd, object: &Value) -> Vec<String> {
    let mut errors = schema_errors(&crd.schema, object, "");
    if object["apiVersion"] != format!("{}/{}", crd.group, crd.version) {
        errors.push(format!("apiVersion {}", object["apiVersion"]));
    }
    if object["kind"] != crd.kind.as_str() {
        errors.push(format!("kind {}", object["kind"]));
    }
    errors.extend(metadata_errors(&object["metadata"]));
    errors
}

#[tokio::test]
async fn publishes_with_one_exact_server_side_apply_request() {
    let (port, log, server) = fake_api::scripted(vec![Reply::status(201)]).await;
    sink(port, Some(NAMESPACE), None)
        .publish(&dgx_labels(), "2025-12-01T22:45:52Z".parse().unwrap())
        .await
        .unwrap();
    finish(server).await;
    let requests = requests(&log);
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    let crd = nodefeature_crd();
    assert_eq!(crd.scope, "Namespaced");
    assert_forced_apply(
        request,
        &format!(
            "/apis/{}/{}/namespaces/{NAMESPACE}/{}/{OBJECT}",
            crd.group, crd.version, crd.plural
        ),
    );
    assert_eq!(
        request.body,
        json!({
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
            "kind": "NodeFeature",
            "metadata": {
                "name": OBJECT,
                "namespace": NAMESPACE,
                "labels": {
                    "nfd.node.kubernetes.io/node-name": NODE,
                    "app.kubernetes.io/name": "gpu-topology-labeler",
                },
                // On the object: nfd-master copies no annotation to the Node.
                "annotations": { "gpu-topology.io/published": "2025-12-01T22:45:52Z" },
            },
            "spec": {
                "labels": {
                    "gpu-topology.io/gpus": "8",
                    "gpu-topology.io/gpus-per-numa-max": "2",
                    "gpu-topology.io/nvlink-group-max": "8",
                },
            },
        })
    );
}

/// The labels of the DGX A100 fixture, as the labeler computes them.
fn fixture_labels() -> Labels {
    let topology = nvidia_smi::parse(&topology_fixture("dgx-a100-mlx5-nps4.txt")).unwrap();
    labels_of_reports(vec![topology.into_report(false)])
}

#[rstest]
#[case::without_owner(None, None, dgx_labels())]
#[case::owned_by_the_daemonset(Some(POD), Some(json!([daemonset_owner()])), dgx_labels())]
#[case::owned_by_a_bare_pod(Some(POD), None, dgx_labels())]
#[case::no_labels(None, None, Labels::new())]
#[case::labels_of_a_real_topology(Some(POD), Some(json!([daemonset_owner()])), fixture_labels())]
#[tokio::test]
async fn every_applied_object_is_valid_against_the_nodefeature_crd(
    #[case] pod: Option<&str>,
    #[case] owners: Option<Value>,
    #[case] labels: Labels,
) {
    let mut replies = Vec::new();
    if pod.is_some() {
        replies.push(pod_metadata(owners));
    }
    replies.push(Reply::status(200));
    let (port, log, server) = fake_api::scripted(replies).await;
    sink(port, Some(NAMESPACE), pod)
        .publish(&labels, Timestamp::now())
        .await
        .unwrap();
    finish(server).await;
    let applied = requests(&log).pop().unwrap().body;
    assert_eq!(
        nodefeature_errors(&nodefeature_crd(), &applied),
        Vec::<String>::new()
    );
    assert_eq!(applied["spec"]["labels"], json!(labels));
}

/// The checks above are only as good as the walker: each broken object must
/// be caught.
#[rstest]
#[case::missing_spec(json!({}), ".spec: required")]
#[case::label_value_not_a_string(json!({"spec": {"labels": {"gpu-topology.io/gpus": 8}}}), ".spec.labels.gpu-topology.io/gpus: expected \"string\"")]
#[case::misspelled_field(json!({"spec": {"label": {}}}), ".spec.label: unknown field, pruned")]
#[case::labels_as_a_list(json!({"spec": {"labels": ["gpus=8"]}}), ".spec.labels: expected \"object\"")]
#[case::instance_without_attributes(json!({"spec": {"features": {"instances": {"gpu": {"elements": [{}]}}}}}), ".spec.features.instances.gpu.elements[0].attributes: required")]
#[case::flags_without_elements(json!({"spec": {"features": {"flags": {"gpu": {}}}}}), ".spec.features.flags.gpu.elements: required")]
fn the_schema_walker_rejects_what_the_api_server_would(
    #[case] object: Value,
    #[case] expected: &str,
) {
    let errors = schema_errors(&nodefeature_crd().schema, &object, "");
    assert!(errors.iter().any(|e| e.starts_with(expected)), "{errors:?}");
}

#[rstest]
#[case::long_label_value(json!({"name": "a", "namespace": "b", "labels": {"nfd.node.kubernetes.io/node-name": "n".repeat(64)}}), "not a valid label")]
#[case::bad_namespace(json!({"name": "a", "namespace": "B_c"}), "not a DNS label")]
#[case::owner_without_uid(json!({"name": "a", "namespace": "b", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d"}]}), "uid missing")]
#[case::stray_field(json!({"name": "a", "namespace": "b", "resourceVersion": "1"}), "metadata.resourceVersion")]
fn the_metadata_checks_reject_what_the_api_server_would(
    #[case] metadata: Value,
    #[case] expected: &str,
) {
    let errors = metadata_errors(&metadata);
    assert!(errors.iter().any(|e| e.contains(expected)), "{errors:?}");
}

#[rstest]
#[case::daemonset_pod(
    Some(json!([daemonset_owner()])),
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "gpu-topology-labeler", "uid": "5e0c3a6e-2f6f-4b8e-9d1e-0c7c1d1f7a11"})
)]
#[case::bare_pod(
    None,
    json!({"apiVersion": "v1", "kind": "Pod", "name": POD, "uid": "a7f4b1c2-0d3e-4f5a-8b6c-7d8e9f0a1b2c"})
)]
#[tokio::test]
async fn the_owner_is_read_once_and_kept(#[case] owners: Option<Value>, #[case] expected: Value) {
    let (port, log, server) = fake_api::scripted(vec![
        pod_metadata(owners),
        Reply::status(200),
        Reply::status(200),
    ])
    .await;
    let mut sink = sink(port, Some(NAMESPACE), Some(POD));
    for _ in 0..2 {
        sink.publish(&dgx_labels(), Timestamp::now()).await.unwrap();
    }
    finish(server).await;
    let requests = requests(&log);
    assert_eq!(requests.len(), 3, "one pod lookup, two applies");
    let lookup = &requests[0];
    assert_eq!(lookup.method, "GET");
    assert_eq!(
        lookup.path,
        format!("/api/v1/namespaces/{NAMESPACE}/pods/{POD}")
    );
    assert!(
        lookup
            .accept
            .as_deref()
            .is_some_and(|accept| accept.contains("as=PartialObjectMetadata")),
        "metadata only: {:?}",
        lookup.accept
    );
    for apply in &requests[1..] {
        assert_eq!(apply.method, "PATCH");
        assert_eq!(apply.body["metadata"]["ownerReferences"], json!([expected]));
    }
}

#[tokio::test]
async fn labels_this_version_no_longer_publishes_are_left_out_of_the_apply() {
    let (port, log, server) =
        fake_api::scripted(vec![Reply::status(200), Reply::status(200)]).await;
    let mut sink = sink(port, Some(NAMESPACE), None);
    sink.publish(&dgx_labels(), Timestamp::now()).await.unwrap();
    sink.publish(&labels(&[("gpus", "8")]), Timestamp::now())
        .await
        .unwrap();
    finish(server).await;
    // The whole map every time: the API server drops the keys this manager
    // owned and no longer applies, and nfd-master then drops them from the Node.
    assert_eq!(
        requests(&log)[1].body["spec"]["labels"],
        json!({ "gpu-topology.io/gpus": "8" })
    );
}

#[tokio::test]
async fn without_a_namespace_the_clients_namespace_is_used() {
    let (port, log, server) = fake_api::scripted(vec![Reply::status(200)]).await;
    let mut sink = sink(port, None, None);
    sink.publish(&dgx_labels(), Timestamp::now()).await.unwrap();
    finish(server).await;
    // kube::Config::new's namespace; in a pod, the service account's.
    assert_eq!(sink.object(), format!("default/{OBJECT}"));
    assert_eq!(
        requests(&log)[0].path,
        format!("/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/default/nodefeatures/{OBJECT}")
    );
}

/// nfd-master copies `spec.labels` to the Node as they are, so the policy reads
/// exactly what the contract wrote.
#[tokio::test]
async fn the_published_labels_read_back_through_the_label_contract() {
    let labels = fixture_labels();
    let (port, log, server) = fake_api::scripted(vec![Reply::status(200)]).await;
    sink(port, Some(NAMESPACE), None)
        .publish(&labels, Timestamp::now())
        .await
        .unwrap();
    finish(server).await;
    let applied: Labels =
        serde_json::from_value(requests(&log)[0].body["spec"]["labels"].clone()).unwrap();
    let prefix = LabelPrefix::default();
    let read = NodeTopology::from_labels(
        &prefix,
        applied.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .unwrap();
    assert!(!read.is_empty());
    assert_eq!(read.to_labels(&prefix), labels);
}
