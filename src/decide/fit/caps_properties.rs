//! The caps answer, never trap or loop: random fleets of distinct shapes
//! and pods of random sizes on both sides of the container cap.

use crate::decide::testing::{config, hgx_memory_jitter, view, Remembered};
use crate::decide::{evaluate_pod, Verdict, MAX_CONTAINERS};
use proptest::prelude::*;
use serde_json::json;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn every_fleet_and_pod_size_gets_an_answer(
        shapes in 1u32..40,
        containers in 1usize..(MAX_CONTAINERS + 16),
        gpus in 1u32..9,
        required in any::<bool>(),
    ) {
        let groups = (0..shapes).map(|i| (hgx_memory_jitter(i), 1)).collect();
        let mut list = vec![json!({"name": "gpu", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}})];
        list.extend((1..containers).map(|i| json!({"name": format!("c{i}"), "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})));
        let affinity = if required { "required" } else { "preferred" };
        let config = config(json!({"topology": {"affinity": affinity}, "qos": {"memoryPerGpu": "256Gi"}}));
        let decision = evaluate_pod(&json!({"spec": {"containers": list}}), &config, &Remembered(view(groups)));
        let capped = decision
            .warnings
            .iter()
            .any(|w| w.starts_with("GPU fit not checked against the node shapes"));
        prop_assert_eq!(capped, containers > MAX_CONTAINERS);
        if containers > MAX_CONTAINERS {
            prop_assert!(!matches!(decision.verdict, Verdict::Reject(_)), "{:?}", decision.verdict);
        }
    }
}
