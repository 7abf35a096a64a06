//! The QoS plan's tests: the edits that make containers and pod-level
//! resources Guaranteed, what cannot be fixed, the init containers' budget
//! (the effective request kept), and the whole CPUs chosen.

use super::*;
use crate::settings::Config;
use rstest::rstest;
use serde_json::json;

fn qos() -> QosConfig {
    Config::default().qos
}

fn no_defaults() -> QosConfig {
    QosConfig {
        cpu_per_gpu: None,
        memory_per_gpu: None,
        sidecar_cpu: None,
        sidecar_memory: None,
        ..qos()
    }
}

fn gpu_resources() -> Vec<String> {
    vec!["nvidia.com/gpu".to_owned()]
}

/// Plans and applies QoS to a one-container pod; returns the container's
/// resources afterwards and the plan.
fn run(container_resources: Value, qos: &QosConfig) -> (Value, QosPlan) {
    let mut spec = json!({"containers": [{"name": "c", "resources": container_resources}]});
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, qos, 1).unwrap();
    apply(&mut spec, &plan.edits).unwrap();
    (spec["containers"][0]["resources"].clone(), plan)
}

#[rstest]
#[case::requests_rise_to_limits(
    json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}}))]
#[case::limits_only_copied_to_requests(
    json!({"limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}))]
#[case::requests_only_copied_to_limits(
    json!({"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}, "limits": {"cpu": "2", "memory": "8Gi"}}))]
#[case::none_set_gets_per_gpu_defaults(
    json!({"limits": {"nvidia.com/gpu": "2"}}),
    json!({"requests": {"cpu": "8", "memory": "32Gi"}, "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}}))]
#[case::fractional_cpu_rounded_up(
    json!({"requests": {"cpu": "1500m", "memory": "4Gi"}, "limits": {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}}))]
#[case::equal_values_keep_their_spelling(
    json!({"requests": {"cpu": "2000m", "memory": "1024Mi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "2000m", "memory": "1024Mi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}))]
#[case::zero_values_count_as_unset(
    json!({"requests": {"cpu": "0", "memory": "0"}, "limits": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}))]
#[case::zero_request_rises_to_the_limit(
    json!({"requests": {"cpu": "0", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}),
    json!({"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}}))]
#[case::sidecar_defaults_for_a_container_without_gpus(
    json!(null),
    json!({"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "250m", "memory": "256Mi"}}))]
#[case::fractional_cpu_kept_without_gpus(
    json!({"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}),
    json!({"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "64Mi"}}))]
fn makes_a_container_guaranteed(#[case] before: Value, #[case] after: Value) {
    assert_eq!(run(before, &qos()).0, after);
}

#[test]
fn whole_cpus_off_keeps_fractions() {
    let qos = QosConfig {
        whole_cpus: false,
        ..qos()
    };
    let (after, _) = run(
        json!({"limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
        &qos,
    );
    assert_eq!(after["requests"]["cpu"], "1500m");
    assert_eq!(after["limits"]["cpu"], "1500m");
}

#[rstest]
#[case::guaranteed_already(
    json!({"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}), vec![])]
#[case::limits_only_is_guaranteed_after_api_defaulting(
    json!({"limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}), vec![])]
#[case::requests_below_limits(
    json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
    vec!["cpu requests 1 differ from limits 2"])]
#[case::fractional_cpu(
    json!({"limits": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}),
    vec!["cpu 500m is not a whole number of CPUs"])]
#[case::nothing_set(
    json!({"limits": {"nvidia.com/gpu": "1"}}),
    vec!["cpu is not set", "memory is not set"])]
#[case::requests_without_limits(
    json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}),
    vec!["cpu has requests 1 but no limits", "memory has requests 1Gi but no limits"])]
fn reports_what_is_not_guaranteed(#[case] resources: Value, #[case] expected: Vec<&str>) {
    let (_, plan) = run(resources, &qos());
    let reasons: Vec<String> = plan.violations().map(Finding::reason).collect();
    assert_eq!(reasons, expected);
}

#[rstest]
#[case::no_gpu_default(json!({"limits": {"nvidia.com/gpu": "1"}}), no_defaults(),
    "container \"c\": sets no cpu and qos.cpuPerGpu is not configured: set resources.limits.cpu")]
#[case::no_sidecar_default(json!({}), no_defaults(),
    "container \"c\": sets no cpu and qos.sidecarCpu is not configured")]
#[case::requests_above_limits(json!({"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}), qos(),
    "container \"c\": cpu requests 4 are more than limits 2")]
#[case::requests_above_a_zero_limit(json!({"requests": {"memory": "1Gi"}, "limits": {"memory": "0"}}), qos(),
    "container \"c\": memory requests 1Gi are more than limits 0")]
#[case::garbage_quantity(json!({"limits": {"memory": "lots"}}), qos(),
    "container \"c\": resources.limits.memory \"lots\" is not a Kubernetes quantity")]
#[case::resources_not_an_object(json!("big"), qos(), "container \"c\": resources is not an object")]
#[case::limits_not_an_object(json!({"limits": ["cpu"]}), qos(), "container \"c\": resources.limits is not an object")]
fn reports_what_cannot_be_fixed(
    #[case] resources: Value,
    #[case] qos: QosConfig,
    #[case] expected: &str,
) {
    let spec = json!({"containers": [{"name": "c", "resources": resources}]});
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos, 1).unwrap();
    assert!(
        plan.problems.iter().any(|p| p.contains(expected)),
        "{:?} lacks {expected:?}",
        plan.problems
    );
}

#[rstest]
#[case::limits_copied_to_requests(
    json!({"limits": {"cpu": "8", "memory": "64Gi"}}),
    json!({"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "8", "memory": "64Gi"}}))]
#[case::requests_rise_and_round_up(
    json!({"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "3500m", "memory": "16Gi"}}),
    json!({"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"cpu": "4", "memory": "16Gi"}}))]
#[case::requests_only_lifted_to_the_largest_container_limit(
    json!({"requests": {"cpu": "2", "memory": "8Gi"}}),
    json!({"requests": {"cpu": "3", "memory": "8Gi"}, "limits": {"cpu": "3", "memory": "8Gi"}}))]
fn pod_level_resources_are_made_guaranteed(#[case] before: Value, #[case] after: Value) {
    let containers = json!([
        {"name": "a", "resources": {"limits": {"cpu": "3", "nvidia.com/gpu": "1"}}},
        {"name": "b"}
    ]);
    let mut spec = json!({"resources": before, "containers": containers});
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos(), 1).unwrap();
    assert_eq!(plan.problems, Vec::<String>::new());
    apply(&mut spec, &plan.edits).unwrap();
    assert_eq!(spec["resources"], after);
    // Containers share the pod-level budget and stay as they are.
    assert_eq!(spec["containers"], containers);
}

/// Pod-level resources that set one of cpu and memory decide QoS alone:
/// the other must be set there too, and no default is invented for it.
/// Present but naming neither (empty, or hugepages only), they still
/// decide: the pod is BestEffort however Guaranteed its containers are.
#[rstest]
#[case::cpu_only(json!({"limits": {"cpu": "8"}}), "pod-level spec.resources: sets no memory; Kubernetes decides QoS from pod-level resources alone once they are set: set spec.resources.limits.memory too")]
#[case::memory_only(json!({"requests": {"memory": "8Gi"}}), "pod-level spec.resources: sets no cpu;")]
#[case::empty(json!({}), BEST_EFFORT)]
#[case::empty_sections(json!({"requests": {}, "limits": null}), BEST_EFFORT)]
#[case::hugepages_only(json!({"limits": {"hugepages-2Mi": "1Gi"}}), BEST_EFFORT)]
fn pod_level_resources_must_set_cpu_and_memory(#[case] pod: Value, #[case] expected: &str) {
    let spec = json!({"resources": pod, "containers": [
        {"name": "a", "resources": {"limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}}
    ]});
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos(), 1).unwrap();
    assert_eq!(plan.problems.len(), 1, "{:?}", plan.problems);
    assert!(
        plan.problems[0].starts_with(expected),
        "{:?}",
        plan.problems
    );
    // The containers are not planned: the pod level decides.
    assert!(plan.edits.iter().all(|edit| edit.target == Target::Pod));
}

const BEST_EFFORT: &str = "pod-level spec.resources: sets neither cpu nor memory (it is empty, or holds hugepages only), but once spec.resources is present Kubernetes decides QoS from it alone, so the pod would be BestEffort";

#[test]
fn null_pod_level_resources_leave_the_containers_to_decide() {
    let (after, plan) = {
        let mut spec = json!({"resources": null, "containers": [
            {"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}}}
        ]});
        let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
        let plan = plan(&spec, &demand, &qos(), 1).unwrap();
        apply(&mut spec, &plan.edits).unwrap();
        (spec, plan)
    };
    assert!(plan.problems.is_empty());
    assert_eq!(after["containers"][0]["resources"]["requests"]["cpu"], "2");
    assert_eq!(after["resources"], Value::Null);
}

/// Pod-level limits without requests: the API server defaults the
/// requests to the containers' effective request when any container
/// sets one (`defaultPodRequests`), else to the limits. Only the latter,
/// or a total equal to the limit, is Guaranteed as written.
#[rstest]
#[case::no_container_sets_cpu(json!({"nvidia.com/gpu": "1"}), vec![])]
#[case::containers_total_the_limit(json!({"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}), vec![])]
#[case::containers_total_less(json!({"cpu": "3", "nvidia.com/gpu": "1"}),
    vec!["cpu has limits 4 but no requests, which Kubernetes defaults to the containers' total 3"])]
fn pod_level_limits_only_are_guaranteed_when_defaulting_makes_them(
    #[case] container_limits: Value,
    #[case] violations: Vec<&str>,
) {
    let spec = json!({"resources": {"limits": {"cpu": "4", "memory": "8Gi"}},
        "containers": [{"name": "a", "resources": {"limits": container_limits}}]});
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos(), 1).unwrap();
    assert!(plan.problems.is_empty(), "{:?}", plan.problems);
    let found: Vec<String> = plan.violations().map(Finding::reason).collect();
    assert_eq!(found, violations);
    // Mutated, the requests are written either way: Guaranteed.
    assert!(plan
        .edits
        .iter()
        .all(|edit| edit.target == Target::Pod && edit.section == Section::Requests));
}

fn q(text: &str) -> Quantity {
    Quantity::parse(text).unwrap()
}

const INIT: ContainerKind = ContainerKind::Init;
const SIDECAR: ContainerKind = ContainerKind::Sidecar;
const APP: ContainerKind = ContainerKind::App;

/// (containers in pod order with their values, `None` for the fitted
/// one, its index, budget). With the budget in place, the effective
/// request must not change.
#[rstest]
#[case::apps_only(vec![(INIT, None), (APP, Some("4")), (APP, Some("2"))], 0, "6")]
#[case::sidecar_after_runs_with_the_apps(vec![(INIT, None), (SIDECAR, Some("250m")), (APP, Some("4"))], 0, "4250m")]
#[case::sidecar_before_runs_with_it(vec![(SIDECAR, Some("1")), (INIT, None), (APP, Some("4"))], 1, "4")]
#[case::a_larger_init_container_sets_the_bar(vec![(INIT, Some("10")), (INIT, None), (APP, Some("4"))], 1, "10")]
#[case::sidecars_before_a_larger_init(vec![(SIDECAR, Some("1")), (INIT, Some("10")), (SIDECAR, Some("2")), (INIT, None), (APP, Some("4"))], 3, "8")]
#[case::binary_memory(vec![(INIT, None), (SIDECAR, Some("128Mi")), (APP, Some("64Gi"))], 0, "65664Mi")]
fn init_budget_keeps_the_effective_request(
    #[case] containers: Vec<(ContainerKind, Option<&str>)>,
    #[case] index: usize,
    #[case] expected: &str,
) {
    let values: Vec<(ContainerKind, Option<Quantity>)> = containers
        .iter()
        .map(|(kind, value)| (*kind, value.map(q)))
        .collect();
    let fitted: Vec<bool> = values.iter().map(|(_, value)| value.is_none()).collect();
    let budget = init_budget(&values, &fitted, index).unwrap();
    assert_eq!(budget.canonical(), expected);
    let others: Vec<(ContainerKind, Quantity)> = values
        .iter()
        .filter_map(|(kind, value)| value.map(|value| (*kind, value)))
        .collect();
    let mut with_budget = values.clone();
    with_budget[index].1 = Some(budget);
    let all: Vec<(ContainerKind, Quantity)> = with_budget
        .iter()
        .map(|(kind, value)| (*kind, value.unwrap()))
        .collect();
    assert_eq!(effective_request(&all), effective_request(&others));
    // One unit more would raise it.
    with_budget[index].1 = budget.checked_add(&q("1m"));
    let more: Vec<(ContainerKind, Quantity)> = with_budget
        .iter()
        .map(|(kind, value)| (*kind, value.unwrap()))
        .collect();
    assert!(effective_request(&more) > effective_request(&others));
}

/// Whole CPUs are for GPU containers, init containers with GPUs
/// included; an init container fitted to the app keeps a fraction.
/// (init container's resources, the CPU it ends with)
#[rstest]
#[case::init_container_with_a_gpu(json!({"limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}), "2")]
#[case::init_container_with_a_gpu_and_no_cpu(json!({"limits": {"nvidia.com/gpu": "1"}}), "4")]
#[case::fitted_init_container(json!(null), "4250m")]
fn whole_cpus_are_for_gpu_containers(#[case] init: Value, #[case] cpu: &str) {
    let mut spec = json!({
        "initContainers": [{"name": "prepare", "resources": init}, {"name": "proxy", "restartPolicy": "Always"}],
        "containers": [{"name": "c", "resources": {"limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1"}}}]
    });
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos(), 1).unwrap();
    assert!(plan.problems.is_empty(), "{:?}", plan.problems);
    apply(&mut spec, &plan.edits).unwrap();
    let resources = &spec["initContainers"][0]["resources"];
    assert_eq!(resources["limits"]["cpu"], cpu);
    assert_eq!(resources["requests"]["cpu"], cpu);
}

#[test]
fn no_budget_while_another_container_has_no_value() {
    let values = [(INIT, None), (APP, None)];
    assert_eq!(init_budget(&values, &[true, false], 0), None);
}

/// (PodSpec, warns): pod-level cpu, memory or hugepages keep the static
/// CPU and Memory Managers from pinning the pod.
#[rstest]
#[case::cpu_limits(json!({"resources": {"limits": {"cpu": "4"}}}), true)]
#[case::memory_requests(json!({"resources": {"requests": {"memory": "4Gi"}}}), true)]
#[case::hugepages(json!({"resources": {"limits": {"hugepages-1Gi": "2Gi"}}}), true)]
#[case::empty(json!({"resources": {}}), false)]
#[case::other_resource(json!({"resources": {"limits": {"ephemeral-storage": "1Gi"}}}), false)]
#[case::absent(json!({}), false)]
fn pod_level_resources_are_flagged_for_the_resource_managers(
    #[case] spec: Value,
    #[case] warns: bool,
) {
    assert_eq!(unpinned_by_pod_level_resources(&spec), warns);
}

/// (container resources, the multiple of the fleet's full-pcpus-only
/// kubelets, the CPUs it ends with): only CPUs the policy chooses are
/// rounded to the multiple; the author's whole CPUs are kept.
#[rstest]
#[case::fraction_rounded_to_the_multiple(json!({"limits": {"cpu": "2500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}), 2, "4")]
#[case::fraction_without_smt(json!({"limits": {"cpu": "2500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}), 1, "3")]
#[case::default_rounded(json!({"limits": {"nvidia.com/gpu": "1"}}), 8, "8")]
#[case::default_of_a_multiple_already(json!({"limits": {"nvidia.com/gpu": "1"}}), 2, "4")]
#[case::authors_whole_cpus_kept(json!({"limits": {"cpu": "3", "memory": "1Gi", "nvidia.com/gpu": "1"}}), 2, "3")]
#[case::requests_rise_to_the_authors_limit(json!({"requests": {"cpu": "2"}, "limits": {"cpu": "3", "memory": "1Gi", "nvidia.com/gpu": "1"}}), 2, "3")]
fn cpus_the_policy_chooses_are_a_multiple_of_the_smt_level(
    #[case] resources: Value,
    #[case] multiple: u64,
    #[case] cpus: &str,
) {
    let mut spec = json!({"containers": [{"name": "c", "resources": resources}]});
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos(), multiple).unwrap();
    apply(&mut spec, &plan.edits).unwrap();
    let resources = &spec["containers"][0]["resources"];
    assert_eq!(resources["limits"]["cpu"], cpus);
    assert_eq!(resources["requests"]["cpu"], cpus);
}

/// A fitted init container's whole budget is rounded down to the
/// multiple: it gets exclusive CPUs, and must not raise the pod's
/// effective request. (app CPUs, multiple, the init container's CPUs)
#[rstest]
#[case::odd_budget_rounded_down("3", 2, "2")]
#[case::even_budget_kept("4", 2, "4")]
#[case::no_smt("3", 1, "3")]
fn fitted_whole_budgets_are_rounded_down(
    #[case] app: &str,
    #[case] multiple: u64,
    #[case] init: &str,
) {
    let mut spec = json!({
        "initContainers": [{"name": "download"}],
        "containers": [{"name": "c", "resources": {"limits": {"cpu": app, "memory": "8Gi", "nvidia.com/gpu": "1"}}}]
    });
    let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
    let plan = plan(&spec, &demand, &qos(), multiple).unwrap();
    apply(&mut spec, &plan.edits).unwrap();
    assert_eq!(
        spec["initContainers"][0]["resources"]["limits"]["cpu"],
        init
    );
}
