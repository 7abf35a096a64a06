//! The caps on what one admission decides on (issue #35): past them the
//! pod is decided without the kubelet model, with a warning that names
//! the cap, and never refused for it.

use crate::cluster::MAX_SHAPES;
use crate::decide::testing::{config, hgx, hgx_memory_jitter, view, Remembered};
use crate::decide::{evaluate_pod, Verdict, MAX_CONTAINERS};
use serde_json::{json, Value};

fn gpu_pod_with_sidecars(sidecars: usize) -> Value {
    let mut containers = vec![
        json!({"name": "train", "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"}}}),
    ];
    containers.extend((0..sidecars).map(|i| {
        json!({"name": format!("sidecar-{i}"), "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})
    }));
    json!({"spec": {"containers": containers}})
}

/// (groups in the view, containers besides the GPU one, the first
/// warning's start)
#[rstest::rstest]
#[case::more_shapes_than_decided_on(
    MAX_SHAPES + 1, 0,
    format!("GPU fit not checked: the fleet has {} distinct node shapes, more than the {MAX_SHAPES}", MAX_SHAPES + 1)
)]
#[case::more_containers_than_modeled(
    1, MAX_CONTAINERS,
    format!("GPU fit not checked against the node shapes: the pod has {} containers, more than the {MAX_CONTAINERS}", MAX_CONTAINERS + 1)
)]
fn past_a_cap_the_pod_is_admitted_with_a_warning_that_names_it(
    #[case] shapes: usize,
    #[case] sidecars: usize,
    #[case] warning: String,
) {
    let groups: Vec<(gpu_topology::NodeTopology, u32)> = (0..shapes)
        .map(|i| (hgx_memory_jitter(u32::try_from(i).unwrap()), 1))
        .collect();
    for affinity in ["preferred", "required"] {
        let config = config(json!({"topology": {"affinity": affinity}}));
        let decision = evaluate_pod(
            &gpu_pod_with_sidecars(sidecars),
            &config,
            &Remembered(view(groups.clone())),
        );
        assert!(
            matches!(decision.verdict, Verdict::Mutate(_) | Verdict::Accept),
            "{affinity}: {:?}",
            decision.verdict
        );
        assert!(
            decision.warnings.iter().any(|w| w.starts_with(&warning)),
            "{affinity}: {:?}",
            decision.warnings
        );
    }
}

/// At the container cap the model still decides.
#[test]
fn at_the_container_cap_the_model_decides() {
    let config = config(json!({}));
    let decision = evaluate_pod(
        &gpu_pod_with_sidecars(MAX_CONTAINERS - 1),
        &config,
        &Remembered(view(vec![(hgx("single-numa-node"), 2)])),
    );
    assert!(
        !decision
            .warnings
            .iter()
            .any(|w| w.contains("GPU fit not checked")),
        "{:?}",
        decision.warnings
    );
}
