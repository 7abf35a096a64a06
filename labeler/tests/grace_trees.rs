//! Fake sysfs trees of Grace machines (tests/fixtures/sysfs/gh200 and
//! gb200-tray, see SOURCES.md there): many NUMA nodes, most without CPUs.
//! The FULL label map of each, with and without a kubelet config, equals
//! its expected file (`<tree>[.<config>].labels`, `key=value` lines)
//! byte for byte, and every value is a Kubernetes label value.
//!
//! `UPDATE_EXPECT=1` rewrites the expected files; review their diff.

use crate::common;

use common::local_fixture;
use gpu_topology::{is_label_value, KubeletVersion, LabelPrefix, NodeTopology};
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
async fn grace_trees_are_labeled_byte_for_byte(#[case] tree: &str, #[case] config: Option<&str>) {
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

/// A tree whose distance rows do not make one symmetric matrix: the
/// distances are left out with a warning, every other label stays.
#[rstest]
#[case::a_row_missing("missing", None, "node3 has no distance file")]
#[case::a_row_too_short("short", Some("80 255 255 10\n"), "node3/distance has 4 entries for 9")]
#[case::asymmetric(
    "asymmetric",
    Some("81 255 255 10 255 255 255 255 255\n"),
    "not symmetric"
)]
fn distances_that_are_no_matrix_are_left_out(
    #[case] name: &str,
    #[case] row: Option<&str>,
    #[case] warning: &str,
) {
    let tree = common::scratch_copy("sysfs/gh200", &format!("grace-distances-{name}"));
    let file = tree.join("devices/system/node/node3/distance");
    match row {
        Some(row) => std::fs::write(&file, row).unwrap(),
        None => std::fs::remove_file(&file).unwrap(),
    }
    let outcome = reconcile(&Inputs {
        sysfs: Some(read_sysfs(&tree).unwrap()),
        vendor: VendorChoice::Auto,
        ..Inputs::default()
    });
    assert_eq!(outcome.topology.numa_distances, None);
    assert_eq!(outcome.topology.machine_numa_nodes, Some(9));
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.starts_with("numa-distances left out") && w.contains(warning)),
        "{:?}",
        outcome.warnings
    );
}

/// `--kubelet-version` becomes the label, and joins the shape.
#[test]
fn the_kubelet_version_is_published() {
    let inputs = |kubelet_version| Inputs {
        sysfs: Some(read_sysfs(&local_fixture("sysfs/gh200")).unwrap()),
        vendor: VendorChoice::Auto,
        kubelet_version,
        ..Inputs::default()
    };
    let with = reconcile(&inputs(Some(KubeletVersion::new(1, 36))));
    let without = reconcile(&inputs(None));
    let labels = with.topology.to_labels(&LabelPrefix::default());
    assert_eq!(labels["gpu-topology.io/kubelet-version"], "1.36");
    assert_ne!(with.topology.shape, without.topology.shape);
}
