//! Unit tests of the summarizer's Kubernetes I/O: the Node pages read from
//! recorded answers, the ConfigMap it applies, and what each failure exits
//! with. Kept apart from `kubernetes.rs` so the production code stays short
//! (issue #36).

use super::*;
use gpu_topology::{Fleet, NodeTopology};
use rstest::rstest;

fn answer(body: &str) -> Answer {
    Answer {
        code: 200,
        body: body.as_bytes().to_vec(),
    }
}

/// A node of a page as read: its name, label count and version.
type PageRead<'a> = (&'a str, usize, Option<(u32, u32)>);

/// (body, names with their label count and version, the next page's token)
#[rstest]
#[case::table_of_metadata(
    r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7","continue":"t2","remainingItemCount":3},
            "columnDefinitions":[{"name":"Name","type":"string","format":"name"},{"name":"Status","type":"string"},
                {"name":"Roles","type":"string"},{"name":"Age","type":"string"},{"name":"Version","type":"string"},
                {"name":"Internal-IP","type":"string","priority":1}],
            "rows":[{"cells":["a","Ready","<none>","5d","v1.36.2","10.0.0.1"],
                     "object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
                               "metadata":{"name":"a","labels":{"x":"1","y":"2"},"annotations":{"big":"…"}}}},
                    {"cells":["b","Ready","<none>","5d","v1.35.0-eks-4096722","10.0.0.2"],
                     "object":{"metadata":{"name":"b","labels":{"x":"1"}}}}]}"#,
    &[("a", 2, Some((1, 36))), ("b", 1, Some((1, 35)))], Some("t2"))]
#[case::table_without_a_version_column(
    r#"{"kind":"Table","columnDefinitions":[{"name":"Name"}],
            "rows":[{"cells":["a"],"object":{"metadata":{"name":"a","labels":{"x":"1"}}}}]}"#,
    &[("a", 1, None)], None)]
#[case::table_with_an_unreadable_version(
    r#"{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Version"}],
            "rows":[{"cells":["a","unknown"],"object":{"metadata":{"name":"a"}}},{"cells":["b"],"object":{"metadata":{"name":"b"}}},
                    {"cells":["c",136]}]}"#,
    &[("a", 0, None), ("b", 0, None), ("<unnamed>", 0, None)], None)]
#[case::empty_table(r#"{"kind":"Table","columnDefinitions":[],"rows":null}"#, &[], None)]
#[case::metadata_list(
    r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7","continue":"t2","remainingItemCount":3},
            "items":[{"kind":"PartialObjectMetadata","metadata":{"name":"a","labels":{"x":"1","y":"2"},"annotations":{"big":"…"},
                      "managedFields":[{"manager":"kubelet","fieldsV1":{"f:metadata":{}}}]}}]}"#,
    &[("a", 2, None)], Some("t2"))]
#[case::full_node_list(
    r#"{"kind":"NodeList","items":[{"metadata":{"name":"a","labels":{"x":"1"}},"spec":{},
            "status":{"images":[{"names":["i"]}],"nodeInfo":{"kubeletVersion":"v1.34.2+k3s1","osImage":"Ubuntu"}}}]}"#,
    &[("a", 1, Some((1, 34)))], None)]
#[case::last_page_with_an_empty_token(
    r#"{"kind":"PartialObjectMetadataList","metadata":{"continue":""},"items":[]}"#, &[], None)]
#[case::null_items(r#"{"kind":"PartialObjectMetadataList","items":null}"#, &[], None)]
#[case::no_metadata_no_labels(
    r#"{"kind":"PartialObjectMetadataList","items":[{},{"metadata":{"name":"b","labels":null}}]}"#,
    &[("<unnamed>", 0, None), ("b", 0, None)], None)]
fn a_page_keeps_only_names_labels_versions_and_the_token(
    #[case] body: &str,
    #[case] nodes: &[PageRead],
    #[case] next: Option<&str>,
) {
    let page = read_page(&answer(body)).unwrap();
    let read: Vec<PageRead> = page
        .nodes()
        .map(|node| {
            (
                node.name,
                node.labels.map_or(0, BTreeMap::len),
                node.kubelet_version.map(|v| (v.major, v.minor)),
            )
        })
        .collect();
    assert_eq!(read, nodes);
    assert_eq!(page.next(), next);
}

#[test]
fn the_list_asks_for_a_table_of_metadata() {
    let params = ListParams {
        label_selector: Some("gpu-topology.io/gpus".to_owned()),
        limit: Some(PAGE_SIZE),
        continue_token: Some("t2".to_owned()),
        ..ListParams::default()
    };
    let request = table_request("/api/v1/nodes", &params).unwrap();
    assert_eq!(
        request.uri(),
        "/api/v1/nodes?&labelSelector=gpu-topology.io%2Fgpus&limit=500&continue=t2&includeObject=Metadata"
    );
    assert_eq!(
        request.headers()[http::header::ACCEPT],
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
    );
}

#[test]
fn a_reported_version_wins_over_the_label_in_the_summary() {
    let page = read_page(&answer(
        r#"{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Version"}],"rows":[
                {"cells":["a","v1.36.1"],"object":{"metadata":{"name":"a","labels":{"gpu-topology.io/gpus":"8","gpu-topology.io/kubelet-version":"1.35"}}}},
                {"cells":["b","v1.36.3"],"object":{"metadata":{"name":"b","labels":{"gpu-topology.io/gpus":"8"}}}}]}"#,
    ))
    .unwrap();
    let mut builder = SummaryBuilder::new(LabelPrefix::default());
    add_page(&mut builder, &page, "gpu-topology.io/published");
    let built = builder.finish(0);
    let groups = built.summary.fleet.groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0].nodes, 2);
    assert_eq!(
        groups[0].topology.kubelet_version,
        Some(KubeletVersion::new(1, 36))
    );
}

#[rstest]
#[case::not_json("<html>OK</html>", "not a Node list")]
#[case::no_kind("{}", "missing field `kind`")]
#[case::a_status(r#"{"kind":"Status","status":"Success"}"#, "kind \"Status\"")]
#[case::label_value_not_a_string(
    r#"{"kind":"NodeList","items":[{"metadata":{"labels":{"a":1}}}]}"#,
    "not a Node list"
)]
fn anything_else_is_not_a_page(#[case] body: &str, #[case] expected: &str) {
    let error = read_page(&answer(body)).unwrap_err();
    assert!(
        matches!(error, ApiError::Unexpected { code: 200, .. }),
        "{error}"
    );
    assert!(error.to_string().contains(expected), "{error}");
}

#[test]
fn a_page_is_folded_into_the_builder_node_by_node() {
    let page = read_page(&answer(
        r#"{"kind":"PartialObjectMetadataList","items":[
                {"metadata":{"name":"a","labels":{"gpu-topology.io/gpus":"8"}}},
                {"metadata":{"name":"b","labels":{"gpu-topology.io/gpus":"8"}}},
                {"metadata":{"name":"c","labels":{"gpu-topology.io/gpus":"eight"}}},
                {"metadata":{"name":"d"}}]}"#,
    ))
    .unwrap();
    let mut builder = SummaryBuilder::new(LabelPrefix::default());
    add_page(&mut builder, &page, "gpu-topology.io/published");
    let built = builder.finish(0);
    assert_eq!(built.nodes, 4);
    assert_eq!(built.summary.fleet.nodes(), 2);
    assert_eq!(built.summary.malformed, 1);
    assert_eq!(built.skipped, 1);
    assert_eq!(built.problems[0].node, "c");
}

#[test]
fn the_apply_body_holds_the_summary_data_and_our_labels_only() {
    let mut fleet = Fleet::new();
    fleet.add_nodes(
        NodeTopology {
            gpus: Some(8),
            ..NodeTopology::default()
        },
        3,
    );
    let summary = FleetSummary {
        fleet,
        malformed: 1,
        generated_at: 42,
        heartbeats: None,
    };
    let body = apply_body("kube-system", "gpu-topology-fleet", &summary, None);
    assert_eq!(
        body["metadata"],
        json!({
            "name": "gpu-topology-fleet",
            "namespace": "kube-system",
            "labels": {
                "app.kubernetes.io/name": "gpu-topology-labeler",
                "app.kubernetes.io/component": "fleet-summary",
            },
        })
    );
    assert_eq!(body["data"], json!(summary.to_data()));
    assert_eq!(
        body.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["apiVersion", "data", "kind", "metadata"]
    );
}
