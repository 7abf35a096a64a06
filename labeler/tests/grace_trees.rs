//! Fake sysfs trees of Grace machines (tests/fixtures/sysfs/gh200 and
//! gb200-tray, see SOURCES.md there): many NUMA nodes, most without CPUs.
//! The FULL label map of each, with and without a kubelet config, equals
//! its expected file (`<tree>[.<config>].labels`, `key=value` lines)
//! byte for byte, and every value is a Kubernetes label value.
//!
//! `UPDATE_EXPECT=1` rewrites the expected files; review their diff.

mod common;

use common::local_fixture;
use gpu_topology::{is_label_value, LabelPrefix, NodeTopology};
use gpu_topology_labeler::reconcile::{reconcile, Inputs, VendorChoice};
use gpu_topology_labeler::sources::kubelet::read_kubelet;
use gpu_topology_labeler::sources::sysfs::read_sysfs;
use rstest::rstest;

#[rstest]
#[case::gh200_alone("gh200", None)]
#[case::gh200_with_a_kubelet_config("gh200", Some("grace-many-numa-nodes.yaml"))]
#[case::gb200_tray_alone("gb200-tray", None)]
#[case::gb200_tray_with_a_kubelet_config("gb200-tray", Some("grace-many-numa-nodes.yaml"))]
#[tokio::test]
async fn grace_trees_are_labeled_byte_for_byte(
    #[case] tree: &str,
    #[case] config: Option<&str>,
) {
    let sysfs = read_sysfs(&local_fixture(&format!("sysfs/{tree}"))).unwrap();
    let kubelet = match config {
        Some(config) => Some(
            read_kubelet(&local_fixture(&format!("kubelet/{config}")), None)
                .await
                .unwrap(),
        ),
        None => None,
    };
    let outcome = reconcile(&Inputs {
        sysfs: Some(sysfs),
        tools: vec![],
        kubelet,
        vendor: VendorChoice::Auto,
        ..Inputs::default()
    });
    let prefix = LabelPrefix::default();
    let labels = outcome.topology.to_labels(&prefix);
    for (key, value) in &labels {
        assert!(is_label_value(value), "{key}={value:?}");
    }
    let text: String = labels
        .iter()
        .map(|(key, value)| format!("{key}={value}\n"))
        .collect();
    let name = match config {
        Some(config) => format!("{tree}.{}", config.trim_end_matches(".yaml")),
        None => tree.to_owned(),
    };
    let expected_path = local_fixture(&format!("sysfs/{name}.labels"));
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&expected_path, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap();
    assert_eq!(text, expected, "warnings: {:?}", outcome.warnings);
    // What the policy reads back is what the labeler knew.
    let read = NodeTopology::from_labels(
        &prefix,
        labels.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .unwrap();
    assert_eq!(read, outcome.topology);
}
