//! The policy's behaviour on realistic admission requests (tests/fixtures).

use crate::common;

use common::*;
use gpu_topology_policy::decide::Verdict;
use rstest::rstest;
use serde_json::{json, Value};

/// Resource values after mutation with default settings: (JSON pointer, value).
#[rstest]
#[case::inference_requests_rise_to_limits("inference-deployment-pod", vec![
    ("/spec/containers/0/resources/requests/cpu", json!("4")),
    ("/spec/containers/0/resources/requests/memory", json!("16Gi")),
    ("/spec/containers/0/resources/requests/nvidia.com~1gpu", json!("1")),
])]
// The init container runs before the sidecar starts: it gets the app's
// 16 CPUs and 64Gi plus the sidecar's 100m and 128Mi (qos.initContainer: fitApp).
#[case::training_init_sidecar_and_defaults("training-pod-init-and-sidecar", vec![
    ("/spec/initContainers/0/resources", json!({"requests": {"cpu": "16100m", "memory": "65664Mi"}, "limits": {"cpu": "16100m", "memory": "65664Mi"}})),
    ("/spec/initContainers/1/resources", json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"}})),
    ("/spec/containers/0/resources", json!({"requests": {"cpu": "16", "memory": "64Gi"}, "limits": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "4"}})),
])]
#[case::eight_gpus_already_guaranteed("eight-gpu-pod", vec![
    ("/spec/containers/0/resources/requests", json!({"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8"})),
])]
#[case::amd_limits_only("amd-gpu-pod", vec![
    ("/spec/containers/0/resources/requests", json!({"cpu": "16", "memory": "64Gi"})),
])]
#[case::intel_requests_only("intel-gpu-pod", vec![
    ("/spec/containers/0/resources/limits", json!({"cpu": "2", "memory": "4Gi"})),
])]
#[case::fractional_cpu_rounded_up("fractional-cpu-pod", vec![
    ("/spec/containers/0/resources/requests/cpu", json!("2")),
    ("/spec/containers/0/resources/limits/cpu", json!("2")),
])]
#[case::requests_only_copied_to_limits("requests-only-pod", vec![
    ("/spec/containers/0/resources/limits", json!({"cpu": "3", "memory": "12Gi"})),
])]
#[case::limits_only_copied_to_requests("limits-only-pod", vec![
    ("/spec/containers/0/resources/requests", json!({"cpu": "6", "memory": "24Gi"})),
])]
#[case::node_name_gets_resources_only("node-name-pod", vec![
    ("/spec/containers/0/resources/requests", json!({"cpu": "32", "memory": "128Gi"})),
    ("/spec/affinity", Value::Null),
])]
#[case::multi_container("multi-container-pod", vec![
    ("/spec/containers/1/resources/requests", json!({"cpu": "4", "memory": "16Gi"})),
    ("/spec/containers/2/resources/requests", json!({"cpu": "1", "memory": "256Mi"})),
])]
#[case::ray_worker_already_guaranteed("ray-worker-pod", vec![
    ("/spec/initContainers/0/resources/requests", json!({"cpu": "200m", "memory": "256Mi"})),
])]
#[case::pod_level_resources("pod-level-resources-pod", vec![
    ("/spec/resources", json!({"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}})),
    ("/spec/containers/1/resources", Value::Null),
])]
#[case::future_fields_survive("future-field-pod", vec![
    ("/spec/containers/0/resources/requests", json!({"cpu": "2", "memory": "8Gi"})),
    ("/spec/containers/0/resources/futureResourceField", json!("keep-me")),
    ("/spec/containers/0/resources/claims", json!([{"name": "gpu-claim"}])),
    ("/spec/containers/0/futureContainerField", json!({"enabled": true})),
    ("/spec/futureSpecField", json!(["a", "b"])),
    ("/futureTopLevelField", json!({"version": 2})),
    ("/metadata/futureMetadataField", json!({"x": 1})),
    ("/status/futureStatus", json!(true)),
])]
fn default_settings_mutate_gpu_pods(#[case] fixture: &str, #[case] expected: Vec<(&str, Value)>) {
    let decision = decide(fixture, json!({}));
    let object = &mutated(&decision);
    for (pointer, value) in expected {
        assert_eq!(
            object.pointer(pointer).cloned().unwrap_or(Value::Null),
            value,
            "{fixture}: {pointer}"
        );
    }
}

/// (fixture, GPUs the affinity is computed for), default settings, no
/// cluster view (the host answers no Node listing natively): the count-based
/// fallback leaves out only the nodes known to refuse (a single-numa-node
/// kubelet with too few GPUs per NUMA node), asks for no `gpus` label, so
/// that unlabeled nodes and autoscaler templates stay eligible, and prefers
/// NUMA alignment.
#[rstest]
#[case::one_gpu("inference-deployment-pod", "0")]
#[case::training_four_gpus("training-pod-init-and-sidecar", "3")]
#[case::eight_gpus("eight-gpu-pod", "7")]
#[case::amd_two("amd-gpu-pod", "1")]
#[case::intel_one("intel-gpu-pod", "0")]
#[case::two_containers_add_up("multi-container-pod", "1")]
#[case::ray_worker_two("ray-worker-pod", "1")]
fn preferred_affinity_admits_and_prefers_numa_alignment(
    #[case] fixture: &str,
    #[case] gt_value: &str,
) {
    let decision = decide(fixture, json!({}));
    let object = &mutated(&decision);
    assert_eq!(
        required_terms(object),
        vec![
            json!({"matchExpressions": [not_single_numa_node()]}),
            json!({"matchExpressions": [gt("gpus-per-numa-max", gt_value)]}),
        ]
    );
    assert_eq!(
        preferences(object),
        vec![
            json!({"weight": 100, "preference": {"matchExpressions": [gt("gpus-per-numa-max", gt_value)]}})
        ]
    );
}

#[test]
fn existing_affinity_is_anded_into_every_term_and_kept() {
    let original = request("existing-affinity-pod")["object"].clone();
    let decision = decide("existing-affinity-pod", json!({}));
    let object = &mutated(&decision);
    let user_terms = required_terms(&original);
    let terms = required_terms(object);
    assert_eq!(terms.len(), 4, "2 user terms x 2 admission terms");
    for (index, term) in terms.iter().enumerate() {
        let user = &user_terms[index % user_terms.len()]["matchExpressions"];
        let expressions = term["matchExpressions"].as_array().unwrap();
        // The user's expressions come first, unchanged and in order.
        assert_eq!(
            &Value::Array(expressions[..user.as_array().unwrap().len()].to_vec()),
            user
        );
        assert!(
            expressions.contains(&not_single_numa_node())
                || expressions.contains(&gt("gpus-per-numa-max", "1"))
        );
    }
    let preferred = preferences(object);
    assert_eq!(
        preferred[0],
        preferences(&original)[0],
        "user preference stays first"
    );
    assert_eq!(preferred.len(), 2);
    assert_eq!(
        object["spec"]["nodeSelector"],
        original["spec"]["nodeSelector"]
    );
    assert_eq!(
        object["spec"]["affinity"]["podAntiAffinity"],
        original["spec"]["affinity"]["podAntiAffinity"]
    );
}

#[test]
fn node_name_pods_get_no_affinity_and_a_warning() {
    let decision = decide("node-name-pod", json!({}));
    assert!(mutated(&decision).pointer("/spec/affinity").is_none());
    assert!(
        decision
            .warnings
            .iter()
            .any(|w| w.contains("spec.nodeName is set")),
        "{:?}",
        decision.warnings
    );
}

/// A template whose pods the QoS rules would reject as written is accepted,
/// untouched, with a warning: a LimitRange may still fill in the pods'
/// resources before they reach the policy.
#[rstest]
#[case::validate_mode("deployment-create", json!({"qos": {"mode": "validate"}}),
    "its pods will be rejected unless a LimitRange or another webhook sets their resources first: GPU pod is not Guaranteed QoS (qos.mode: validate): container \"vllm\": cpu is not set")]
#[case::no_default_configured("deployment-create", json!({"qos": {"cpuPerGpu": null}}),
    "GPU pod cannot be made Guaranteed QoS: container \"vllm\": sets no cpu and qos.cpuPerGpu is not configured")]
fn workload_templates_pods_would_reject_warn(
    #[case] fixture: &str,
    #[case] settings: Value,
    #[case] expected: &str,
) {
    let decision = decide(fixture, settings);
    assert_eq!(decision.verdict, Verdict::Accept);
    assert!(
        decision.warnings.iter().any(|w| w.contains(expected)),
        "{:?}",
        decision.warnings
    );
}

/// A template with pod-level resources is told, like its pods, that the
/// kubelet's static CPU and Memory Managers will not pin them.
#[test]
fn workload_templates_with_pod_level_resources_warn_about_pinning() {
    let mut request = request("deployment-create");
    request["object"]["spec"]["template"]["spec"]["resources"] = json!({
        "requests": {"cpu": "8", "memory": "32Gi"}, "limits": {"cpu": "8", "memory": "32Gi"}});
    let decision = evaluate(&request, &config(json!({})));
    assert_eq!(decision.verdict, Verdict::Accept);
    assert!(
        decision.warnings.iter().any(|w| w.starts_with(
            "Deployment \"llama-3-70b\": pod-level spec.resources is set, so kubelets running the static CPU Manager or Memory Manager do not pin this pod"
        )),
        "{:?}",
        decision.warnings
    );
}

/// Pinning a pod is no way around `required` alignment: the kubelet enforces
/// required node affinity on a pod with `spec.nodeName`.
#[test]
fn node_name_pods_get_required_affinity_all_the_same() {
    let decision = decide(
        "node-name-pod",
        json!({"topology": {"affinity": "required", "alignment": "nvlink"}}),
    );
    let terms = required_terms(&mutated(&decision));
    assert!(!terms.is_empty());
    assert!(terms.iter().all(|term| term["matchExpressions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["key"] == "gpu-topology.io/nvlink-group-max")));
    assert!(
        !decision
            .warnings
            .iter()
            .any(|w| w.contains("spec.nodeName is set")),
        "{:?}",
        decision.warnings
    );
}

/// Requests the policy must leave untouched: (fixture, settings, a request
/// field to change first).
#[rstest]
#[case::cpu_only("cpu-only-pod", json!({}), None)]
#[case::mig_slices_when_mig_resources_is_empty("mig-slice-pod", json!({"migResources": []}), None)]
#[case::exempt_namespace("inference-deployment-pod", json!({"exemptNamespaces": ["inference"]}), None)]
#[case::update("inference-deployment-pod", json!({}), Some(("operation", json!("UPDATE"))))]
#[case::delete("inference-deployment-pod", json!({}), Some(("operation", json!("DELETE"))))]
#[case::subresource("inference-deployment-pod", json!({}), Some(("subResource", json!("ephemeralcontainers"))))]
#[case::deployment_is_not_mutated("deployment-create", json!({}), None)]
#[case::guaranteed_pod_with_affinity_off("eight-gpu-pod", json!({"topology": {"affinity": "off"}}), None)]
#[case::already_mutated("already-mutated-pod", json!({}), None)]
fn accepted_untouched(
    #[case] fixture: &str,
    #[case] settings: Value,
    #[case] change: Option<(&str, Value)>,
) {
    let mut review = review(fixture);
    if let Some((field, value)) = change {
        review["request"][field] = value;
    }
    let decision = evaluate(&review["request"], &config(settings));
    assert_eq!(decision.verdict, Verdict::Accept);
}

/// Settings variants: (fixture, settings, expected rejection text).
#[rstest]
#[case::validate_names_container_and_values("inference-deployment-pod", json!({"qos": {"mode": "validate"}}),
    "GPU pod is not Guaranteed QoS (qos.mode: validate): container \"vllm\": cpu requests 2 differ from limits 4, memory requests 8Gi differ from limits 16Gi. Set resources.requests equal to resources.limits")]
#[case::validate_pod_level_resources("pod-level-resources-pod", json!({"qos": {"mode": "validate"}}),
    "(qos.mode: validate): pod-level spec.resources: cpu requests 2 differ from limits 3500m, cpu 3500m is not a whole number of CPUs. Set resources.requests equal to resources.limits for cpu and memory in pod-level spec.resources, with whole CPUs.")]
#[case::validate_fractional_cpu("fractional-cpu-pod", json!({"qos": {"mode": "validate"}}),
    "container \"embedder\": cpu 1500m is not a whole number of CPUs")]
#[case::validate_unset_resources("training-pod-init-and-sidecar", json!({"qos": {"mode": "validate"}}),
    "init container \"fetch-dataset\": cpu is not set")]
#[case::no_default_configured("training-pod-init-and-sidecar", json!({"qos": {"cpuPerGpu": null}}),
    "GPU pod cannot be made Guaranteed QoS: container \"trainer\": sets no cpu and qos.cpuPerGpu is not configured: set resources.limits.cpu")]
#[case::no_sidecar_default("init-download-pod", json!({"qos": {"sidecarMemory": null}}),
    "sidecar container \"metrics\": sets no memory and qos.sidecarMemory is not configured")]
#[case::above_max_gpus_per_node("eight-gpu-pod", json!({"capacity": {"maxGpusPerNode": 4}}),
    "GPU pod cannot be placed: it needs 8 GPUs (container \"finetune\": 8 nvidia.com/gpu) but the largest GPU node has 4 (capacity.maxGpusPerNode). Request at most 4 GPUs per pod")]
#[case::above_numa_with_single_numa_node("eight-gpu-pod", json!({"capacity": {"maxGpusPerNode": 8, "maxGpusPerNumaNode": 4, "singleNumaNode": true}}),
    "the GPUs must share one NUMA node because the kubelets run topologyManagerPolicy single-numa-node")]
#[case::above_numa_with_required_numa("training-pod-init-and-sidecar", json!({"topology": {"affinity": "required"}, "capacity": {"maxGpusPerNumaNode": 2}}),
    "it needs 4 GPUs (container \"trainer\": 4 nvidia.com/gpu) but the GPUs must share one NUMA node")]
fn rejections_name_what_to_fix(
    #[case] fixture: &str,
    #[case] settings: Value,
    #[case] expected: &str,
) {
    let decision = decide(fixture, settings);
    let message = rejection(&decision);
    assert!(message.contains(expected), "{message}");
}

#[rstest]
#[case::validate_accepts_limits_only("limits-only-pod", json!({"qos": {"mode": "validate"}}))]
#[case::validate_accepts_guaranteed("eight-gpu-pod", json!({"qos": {"mode": "validate"}}))]
#[case::numa_capacity_relaxed_when_preferred("eight-gpu-pod", json!({"capacity": {"maxGpusPerNode": 8, "maxGpusPerNumaNode": 4}}))]
fn validate_mode_and_capacity_accept_what_fits(#[case] fixture: &str, #[case] settings: Value) {
    let decision = decide(fixture, settings);
    let object = &mutated(&decision);
    let original = request(fixture)["object"].clone();
    // Only affinity is added; resources stay as written.
    assert_eq!(object["spec"]["containers"], original["spec"]["containers"]);
    assert!(!required_terms(object).is_empty());
}

/// A regular init container that sets nothing (a model download) is given
/// what the app container and the sidecars started before it leave unused
/// (`qos.initContainer: fitApp`, the default; here no sidecar runs before
/// it: 8 CPUs + the metrics sidecar's 250m, 32Gi + 256Mi), or fixed values;
/// a resource left out of the fixed values is fitted. The sidecar keeps the
/// sidecar defaults, and no whole-CPU rounding applies without GPUs.
#[rstest]
#[case::fit_app_is_the_default(json!({}), "8250m", "33024Mi")]
#[case::fixed(json!({"qos": {"initContainer": {"cpu": "2", "memory": "4Gi"}}}), "2", "4Gi")]
#[case::fixed_cpu_memory_fitted(json!({"qos": {"initContainer": {"cpu": "1500m"}}}), "1500m", "33024Mi")]
#[case::fit_app_with_a_larger_sidecar(json!({"qos": {"sidecarCpu": "3", "sidecarMemory": "1Gi"}}), "11", "33Gi")]
fn init_containers_that_set_nothing(
    #[case] settings: Value,
    #[case] cpu: &str,
    #[case] memory: &str,
) {
    let decision = decide("init-download-pod", settings.clone());
    let object = &mutated(&decision);
    let guaranteed = |cpu: &str, memory: &str| json!({"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}});
    assert_eq!(
        object["spec"]["initContainers"][0]["resources"],
        guaranteed(cpu, memory)
    );
    let sidecar = &config(settings).qos;
    let (sidecar_cpu, sidecar_memory) = (
        sidecar.sidecar_cpu.unwrap().canonical(),
        sidecar.sidecar_memory.unwrap().canonical(),
    );
    assert_eq!(
        object["spec"]["initContainers"][1]["resources"],
        guaranteed(&sidecar_cpu, &sidecar_memory)
    );
}

#[test]
fn qos_off_adds_affinity_only() {
    let original = request("training-pod-init-and-sidecar")["object"].clone();
    let decision = decide(
        "training-pod-init-and-sidecar",
        json!({"qos": {"mode": "off"}}),
    );
    let object = &mutated(&decision);
    assert_eq!(object["spec"]["containers"], original["spec"]["containers"]);
    assert_eq!(
        object["spec"]["initContainers"],
        original["spec"]["initContainers"]
    );
}

/// (settings, expected required terms, expected preferences) for the 8-GPU pod.
#[rstest]
#[case::required_numa(json!({"topology": {"affinity": "required"}}),
    vec![json!({"matchExpressions": [gt("gpus-per-numa-max", "7"), gt("gpus", "7")]})], vec![])]
#[case::required_nvlink(json!({"topology": {"affinity": "required", "alignment": "nvlink"}}),
    vec![json!({"matchExpressions": [gt("nvlink-group-max", "7"), gt("gpus", "7"), not_single_numa_node()]}),
         json!({"matchExpressions": [gt("nvlink-group-max", "7"), gt("gpus", "7"), gt("gpus-per-numa-max", "7")]})], vec![])]
#[case::preferred_nvlink_weight(json!({"topology": {"alignment": "nvlink", "preferredWeight": 30}}),
    vec![json!({"matchExpressions": [not_single_numa_node()]}),
         json!({"matchExpressions": [gt("gpus-per-numa-max", "7")]})],
    vec![json!({"weight": 30, "preference": {"matchExpressions": [gt("nvlink-group-max", "7")]}})])]
#[case::preferred_node_alignment_adds_no_preference(json!({"topology": {"alignment": "node"}}),
    vec![json!({"matchExpressions": [not_single_numa_node()]}),
         json!({"matchExpressions": [gt("gpus-per-numa-max", "7")]})], vec![])]
fn affinity_modes(
    #[case] settings: Value,
    #[case] required: Vec<Value>,
    #[case] preferred: Vec<Value>,
) {
    let decision = decide("eight-gpu-pod", settings);
    let object = &mutated(&decision);
    assert_eq!(required_terms(object), required);
    assert_eq!(preferences(object), preferred);
}

/// Two containers of one GPU each: under `container` scope each container is
/// aligned on its own (one GPU per NUMA node suffices); that the node holds
/// both GPUs is the scheduler's resource fit.
#[test]
fn container_scope_aligns_each_container_but_places_the_whole_pod() {
    let decision = decide(
        "multi-container-pod",
        json!({"topology": {"scope": "container"}}),
    );
    let object = &mutated(&decision);
    assert_eq!(
        required_terms(object),
        vec![
            json!({"matchExpressions": [not_single_numa_node()]}),
            json!({"matchExpressions": [gt("gpus-per-numa-max", "0")]})
        ]
    );
    assert_eq!(
        preferences(object),
        vec![
            json!({"weight": 100, "preference": {"matchExpressions": [gt("gpus-per-numa-max", "0")]}})
        ]
    );
}

#[test]
fn label_prefix_is_configurable() {
    let decision = decide(
        "eight-gpu-pod",
        json!({"labelPrefix": "topology.example.com"}),
    );
    let terms = required_terms(&mutated(&decision));
    assert_eq!(
        terms[0]["matchExpressions"][0]["key"],
        "topology.example.com/topology-manager-policy"
    );
}

#[test]
fn mig_profiles_count_when_configured() {
    let decision = decide(
        "mig-slice-pod",
        json!({"gpuResources": ["nvidia.com/mig-1g.10gb"]}),
    );
    let object = &mutated(&decision);
    // The container's CPU request (500m) had no limit: it is copied and rounded up.
    assert_eq!(
        object["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        "1"
    );
    assert_eq!(
        object["spec"]["containers"][0]["resources"]["requests"]["memory"],
        "4Gi"
    );
}

/// Every Pod fixture under every settings variant: the patch touches only
/// resources and affinity, never removes anything, and a second evaluation of
/// the result changes nothing.
#[rstest]
fn mutations_are_minimal_and_idempotent(
    #[values(
        json!({}),
        json!({"topology": {"affinity": "required", "alignment": "nvlink"}}),
        json!({"topology": {"scope": "container", "alignment": "node"}}),
        json!({"qos": {"mode": "off"}}),
        json!({"qos": {"wholeCpus": false}})
    )]
    settings: Value,
) {
    let config = config(settings);
    for fixture in POD_FIXTURES {
        let request = request(fixture);
        let decision = evaluate(&request, &config);
        let Verdict::Mutate(object) = &decision.verdict else {
            continue;
        };
        let object = object.to_value().unwrap();
        for (op, path) in patch_ops(&request["object"], &object) {
            assert_ne!(op, "remove", "{fixture}: {op} {path}");
            let allowed = path.starts_with("/spec/affinity")
                || path.starts_with("/spec/resources/")
                || is_container_resources(&path);
            assert!(
                allowed,
                "{fixture}: {op} {path} is outside resources and affinity"
            );
            // Values the user wrote are never rewritten: only resource values
            // the policy decides (requests rising, CPUs rounded up) are replaced.
            if op == "replace" {
                assert!(
                    !path.starts_with("/spec/affinity"),
                    "{fixture}: {op} {path}"
                );
            }
        }
        let mut again = request.clone();
        again["object"] = object;
        assert_eq!(
            evaluate(&again, &config).verdict,
            Verdict::Accept,
            "{fixture}: second evaluation changed the pod"
        );
    }
}

/// `/spec/<initContainers|containers>/<n>/resources...`
fn is_container_resources(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    matches!(
        parts.as_slice(),
        ["", "spec", "initContainers" | "containers", index, "resources", ..]
            if index.parse::<usize>().is_ok()
    )
}

/// A MIG slice (`nvidia.com/mig-1g.10gb`, the mixed strategy) is GPU
/// demand by default (`migResources`): the pod is made Guaranteed.
#[test]
fn a_mig_slice_pod_is_made_guaranteed() {
    let decision = evaluate(&request("mig-slice-pod"), &config(json!({})));
    let Verdict::Mutate(object) = decision.verdict else {
        panic!("not mutated: {:?}", decision.verdict);
    };
    let object = object.to_value().unwrap();
    let resources = &object["spec"]["containers"][0]["resources"];
    for resource in ["cpu", "memory"] {
        assert_eq!(
            resources["requests"][resource], resources["limits"][resource],
            "{resource}"
        );
    }
    assert_eq!(resources["limits"]["nvidia.com/mig-1g.10gb"], "1");
}

/// After mutation every container is Guaranteed: requests equal limits for
/// CPU and memory, and GPU containers have whole CPUs.
#[test]
fn mutated_gpu_pods_are_guaranteed() {
    let config = config(json!({}));
    for fixture in POD_FIXTURES {
        let request = request(fixture);
        let Verdict::Mutate(object) = evaluate(&request, &config).verdict else {
            continue;
        };
        let object = object.to_value().unwrap();
        if object["spec"].get("resources").is_some() {
            continue; // pod-level resources govern; covered above
        }
        for list in ["initContainers", "containers"] {
            for container in object["spec"][list].as_array().into_iter().flatten() {
                let resources = &container["resources"];
                for resource in ["cpu", "memory"] {
                    let requests = &resources["requests"][resource];
                    assert!(
                        requests.is_string(),
                        "{fixture}: {} {resource}",
                        container["name"]
                    );
                    assert_eq!(
                        requests, &resources["limits"][resource],
                        "{fixture}: {}",
                        container["name"]
                    );
                }
                let has_gpu = resources["limits"].get("nvidia.com/gpu").is_some()
                    || resources["requests"].get("nvidia.com/gpu").is_some();
                if has_gpu {
                    let cpu = resources["limits"]["cpu"].as_str().unwrap();
                    assert!(!cpu.ends_with('m'), "{fixture}: whole CPUs, got {cpu}");
                }
            }
        }
    }
}

/// Every Pod fixture under every settings variant is read by the fast text
/// reader (no fallback to the tree) and decided exactly as on the whole tree;
/// a mutation leaves the bytes of the fields it does not touch as they came.
#[rstest]
fn text_and_tree_decisions_agree(
    #[values(
        json!({}),
        json!({"topology": {"affinity": "required", "alignment": "nvlink"}}),
        json!({"topology": {"scope": "container", "alignment": "node"}}),
        json!({"qos": {"mode": "validate"}}),
        json!({"qos": {"mode": "off"}, "capacity": {"maxGpusPerNode": 4}})
    )]
    settings: Value,
) {
    use gpu_topology_policy::cluster::host::KubewardenHost;
    use gpu_topology_policy::decide::{evaluate_pod, evaluate_pod_text};
    use gpu_topology_policy::request::pod_text::PodText;
    let config = config(settings);
    for fixture in POD_FIXTURES {
        let object = &request(fixture)["object"];
        let text = serde_json::to_string_pretty(object).unwrap();
        let pod = PodText::read(&text).unwrap_or_else(|| panic!("{fixture}: not read as text"));
        let decided = evaluate_pod(pod.reduced(), &config, &KubewardenHost);
        if let Verdict::Mutate(changed) = decided.verdict {
            if let Err(why) = pod.rewrite(&changed) {
                panic!("{fixture}: the text rewrite fell back to the tree: {why}");
            }
        }
        if let Some(why) = text_and_tree_disagree(object, &config) {
            panic!("{fixture}: {why}");
        }
        if let Verdict::Mutate(mutated) = evaluate_pod_text(&text, &config, &KubewardenHost).verdict
        {
            let metadata = serde_json::to_string_pretty(&object["metadata"])
                .unwrap()
                .replace('\n', "\n  ");
            assert!(
                mutated
                    .as_str()
                    .contains(&format!("\"metadata\": {metadata}")),
                "{fixture}: metadata was rewritten:\n{}",
                mutated.as_str()
            );
        }
    }
}

/// The entry point reads the pod's fields while it scans the payload; that
/// must find exactly what reading the pod's own text finds, and rewrite it
/// the same way.
#[test]
fn the_pod_read_in_the_payload_is_the_pod_read_alone() {
    use gpu_topology_policy::cluster::host::KubewardenHost;
    use gpu_topology_policy::decide::evaluate_pod;
    use gpu_topology_policy::request::pod_text::PodText;
    use gpu_topology_policy::request::AdmissionRequest;
    let config = config(json!({}));
    for fixture in POD_FIXTURES {
        let text = serde_json::to_string_pretty(&request(fixture)).unwrap();
        let request = AdmissionRequest::parse(&text).unwrap();
        assert!(
            request.object_fields.is_some(),
            "{fixture}: not read in place"
        );
        let in_payload = request.pod_text().unwrap();
        let alone = PodText::read(request.object_text()).unwrap();
        assert_eq!(in_payload.reduced(), alone.reduced(), "{fixture}");
        let decided = evaluate_pod(alone.reduced(), &config, &KubewardenHost);
        let changed = match decided.verdict {
            Verdict::Mutate(changed) => changed,
            _ => alone.reduced().clone(),
        };
        assert_eq!(
            in_payload.rewrite(&changed),
            alone.rewrite(&changed),
            "{fixture}"
        );
    }
}
