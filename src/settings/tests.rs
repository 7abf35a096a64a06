//! Unit tests of the settings: the defaults, every key's validation and its
//! error message naming the key, and the repository's example settings.
//! Kept apart from `mod.rs` so the production code stays short (issue #36).

use super::*;
use rstest::rstest;
use serde_json::json;

fn validate(settings: serde_json::Value) -> Result<Config, String> {
    parse_settings(settings.to_string().as_bytes())?.config()
}

#[test]
fn empty_settings_take_the_documented_defaults() {
    let config = validate(json!({})).unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(config.gpu_resources, DEFAULT_GPU_RESOURCES.to_vec());
    assert_eq!(config.label_prefix.as_str(), "gpu-topology.io");
    assert_eq!(config.qos.mode, QosMode::Mutate);
    assert_eq!(config.qos.cpu_per_gpu, Some(Quantity::parse("4").unwrap()));
    assert_eq!(
        config.qos.memory_per_gpu,
        Some(Quantity::parse("16Gi").unwrap())
    );
    assert_eq!(
        config.qos.sidecar_cpu,
        Some(Quantity::parse("250m").unwrap())
    );
    assert_eq!(
        config.qos.sidecar_memory,
        Some(Quantity::parse("256Mi").unwrap())
    );
    assert!(config.qos.whole_cpus);
    assert!(config.qos.round_to_whole_cores);
    assert!(!config.qos.round_written_cpus);
    assert_eq!(config.topology.scope, TopologyManagerScope::Pod);
    assert_eq!(config.topology.alignment, Alignment::Numa);
    assert_eq!(config.topology.affinity, AffinityMode::Preferred);
    assert_eq!(config.topology.preferred_weight, 100);
    assert_eq!(config.capacity_source, CapacitySource::Auto);
    assert_eq!(config.capacity, None);
}

#[test]
fn a_full_valid_configuration_is_read() {
    let config = validate(json!({
        "gpuResources": ["nvidia.com/gpu", "example.com/accelerator"],
        "labelPrefix": "topology.example.com",
        "exemptNamespaces": ["kube-system", "gpu-operator"],
        "qos": {"mode": "validate", "cpuPerGpu": 8, "memoryPerGpu": "32Gi",
                "sidecarCpu": "0.5", "sidecarMemory": null, "wholeCpus": false},
        "topology": {"scope": "container", "alignment": "nvlink", "affinity": "preferred",
                     "preferredWeight": 50},
        "capacity": {"maxGpusPerNode": 8, "maxGpusPerNumaNode": 4, "singleNumaNode": true}
    }))
    .unwrap();
    assert_eq!(config.qos.mode, QosMode::Validate);
    assert_eq!(config.qos.cpu_per_gpu, Some(Quantity::parse("8").unwrap()));
    assert_eq!(config.qos.sidecar_memory, None);
    assert_eq!(config.topology.scope, TopologyManagerScope::Container);
    assert_eq!(config.topology.alignment, Alignment::Nvlink);
    assert_eq!(config.topology.preferred_weight, 50);
    assert_eq!(config.capacity_source, CapacitySource::Auto);
    assert_eq!(
        config.capacity,
        Some(CapacitySettings {
            source: CapacitySource::Auto,
            max_gpus_per_node: Some(8),
            max_gpus_per_numa_node: Some(4),
            single_numa_node: true,
            fleet_summary: None,
            unlabeled_nodes: UnlabeledNodes::Deny,
            stale_facts_after_seconds: None,
        })
    );
}

/// What serde_path_to_error answers for `payload`, read as
/// `parse_settings` reads it: the oracle of the key paths.
fn keyed(payload: &[u8]) -> Result<Settings, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(payload);
    let settings: Option<Settings> =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
            let path = error.path().to_string();
            let inner = error.into_inner();
            if matches!(
                inner.classify(),
                Category::Syntax | Category::Eof | Category::Io
            ) {
                return format!("settings are not JSON: {inner}");
            }
            let message = inner.to_string();
            let position = format!(" at line {} column {}", inner.line(), inner.column());
            let message = message.strip_suffix(&position).unwrap_or(&message);
            match path.as_str() {
                "." => message.to_owned(),
                path => format!("{path}: {message}"),
            }
        })?;
    deserializer
        .end()
        .map_err(|error| format!("settings are not JSON: {error}"))?;
    Ok(settings.unwrap_or_default())
}

/// Settings are read straight from the bytes, and a value that does
/// not read is named by the key serde_path_to_error names.
#[rstest]
#[case::none("null")]
#[case::empty("{}")]
#[case::an_unknown_key(r#"{"capacity": {"maxGpusPerNode": 8, "staleFacts": 1}}"#)]
#[case::a_wrong_type(r#"{"topology": {"preferredWeight": "high"}}"#)]
// examples/settings.yaml as JSON: every section, every key set.
#[case::every_section(include_str!("../../tests/settings/examples-settings.json"))]
#[case::quantities(r#"{"qos": {"cpuPerGpu": "1500m", "memoryPerGpu": "64Gi"}, "capacity": {"staleFactsAfterSeconds": 0}}"#)]
#[case::a_string_for_a_list(r#"{"gpuResources": "nvidia.com/gpu"}"#)]
#[case::a_list_element(r#"{"gpuResources": ["nvidia.com/gpu", 5]}"#)]
#[case::an_object_for_a_word(r#"{"topology": {"affinity": {"mode": "off"}}}"#)]
#[case::a_list_for_a_number(r#"{"capacity":{"maxGpusPerNode":[8]}}"#)]
#[case::a_bad_value_last_in_its_object(r#"{"qos":{"mode":"enforce"}}"#)]
#[case::a_negative_number(r#"{"capacity": {"fleetSummary": {"maxAgeSeconds": -5}}}"#)]
#[case::a_bad_quantity(r#"{"qos": {"cpuPerGpu": "lots"}}"#)]
#[case::on_a_later_line("{\n  \"qos\": {\n    \"wholeCpus\": \"yes\"\n  }\n}")]
#[case::a_key_with_a_dot(r#"{"capacity": {"a.b": 1, "source": "cluster-view"}}"#)]
#[case::an_escaped_key(r#"{"qo\u0073": {"mode": 1}}"#)]
#[case::not_an_object(r#""not an object""#)]
#[case::a_bad_value_then_broken_text(r#"{"qos": {"mode": "enforce", oops}}"#)]
#[case::an_enum_as_an_object(r#"{"capacity": {"source": {"a": 1}}}"#)]
#[case::an_enum_as_an_object_of_a_known_variant(r#"{"capacity": {"source": {"auto": 1}}}"#)]
fn the_read_names_the_key_serde_path_to_error_names(#[case] payload: &str) {
    assert_eq!(
        parse_settings(payload.as_bytes()),
        keyed(payload.as_bytes())
    );
}

/// The places in `value` a test can put another value at: every
/// member and element, as JSON pointers.
fn pointers(value: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(members) => {
            for (key, member) in members {
                let pointer = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                out.push(pointer.clone());
                pointers(member, pointer, out);
            }
        }
        serde_json::Value::Array(elements) => {
            for (index, element) in elements.iter().enumerate() {
                let pointer = format!("{at}/{index}");
                out.push(pointer.clone());
                pointers(element, pointer, out);
            }
        }
        _ => {}
    }
}

proptest::proptest! {
    /// Any one value of every-key settings replaced by a value of
    /// another kind (or removed), compact or pretty: the same answer
    /// and the same key as serde_path_to_error.
    #[test]
    fn any_bad_value_is_named_as_serde_path_to_error_names_it(
        place in proptest::prelude::any::<proptest::sample::Index>(),
        replacement in proptest::sample::select(vec![
            json!("x"), json!(-1), json!(1.5), json!(true), json!(null), json!([]),
            json!([1, "a"]), json!({}), json!({"a": 1}), json!(""), json!(4_294_967_296_u64),
        ]),
        remove in proptest::prelude::any::<bool>(),
        pretty in proptest::prelude::any::<bool>(),
    ) {
        let mut settings: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/settings/examples-settings.json"))
                .unwrap();
        let mut places = Vec::new();
        pointers(&settings, String::new(), &mut places);
        let pointer = place.get(&places).clone();
        let (parent, last) = pointer.rsplit_once('/').unwrap();
        match settings.pointer_mut(parent).unwrap() {
            serde_json::Value::Object(members) if remove => {
                members.remove(&last.replace("~1", "/").replace("~0", "~"));
            }
            _ => *settings.pointer_mut(&pointer).unwrap() = replacement,
        }
        let text = if pretty {
            serde_json::to_string_pretty(&settings).unwrap()
        } else {
            settings.to_string()
        };
        proptest::prop_assert_eq!(parse_settings(text.as_bytes()), keyed(text.as_bytes()));
    }
}

/// What a JSON tree would hide (the last of two values wins) is
/// refused, naming the key given twice (serde_path_to_error named the
/// object holding it). The API server never stores a key twice, so only
/// a hand-written file for kwctl can hold one.
#[rstest]
#[case::at_the_top(
    r#"{"labelPrefix": "a.example.com", "labelPrefix": "b.example.com"}"#,
    "labelPrefix: duplicate field `labelPrefix`"
)]
#[case::in_a_section(
    r#"{"qos": {"mode": "mutate", "mode" : "mutate"}}"#,
    "qos.mode: duplicate field `mode`"
)]
fn a_key_given_twice_is_named(#[case] payload: &str, #[case] message: &str) {
    assert_eq!(parse_settings(payload.as_bytes()), Err(message.to_owned()));
}

/// (payload, message): text that is not JSON, or JSON after the
/// settings, is said to be so.
#[rstest]
#[case::not_json(
    "{capacity",
    "settings are not JSON: key must be a string at line 1 column 2"
)]
#[case::cut_short(
    r#"{"capacity": {"#,
    "settings are not JSON: EOF while parsing an object at line 1 column 14"
)]
#[case::trailing_text(
    "{} x",
    "settings are not JSON: trailing characters at line 1 column 4"
)]
fn text_that_is_not_json_is_said_to_be(#[case] payload: &str, #[case] message: &str) {
    assert_eq!(parse_settings(payload.as_bytes()), Err(message.to_owned()));
}

/// (settings, the age after which facts are stale)
#[rstest]
#[case::three_heartbeats_by_default(json!({}), Some(5_400))]
#[case::an_hour(json!({"capacity": {"staleFactsAfterSeconds": 3_600}}), Some(3_600))]
#[case::zero_is_never(json!({"capacity": {"staleFactsAfterSeconds": 0}}), None)]
fn facts_go_stale_after_the_configured_age(
    #[case] settings: serde_json::Value,
    #[case] after: Option<u64>,
) {
    let config = settings_from_value(settings).unwrap().config().unwrap();
    assert_eq!(config.stale_facts_after, after);
}

#[test]
fn fleet_summary_defaults_to_the_example_summarizer() {
    let config = validate(json!({"capacity": {"fleetSummary": {}}})).unwrap();
    let example = FleetSummarySettings {
        namespace: "kube-system".into(),
        name: "gpu-topology-fleet".into(),
        max_age_seconds: 300,
    };
    assert_eq!(config.sources.summary, Some(example.clone()));
    // Read by default too (issue #17): `fleetSummary` only moves it.
    assert_eq!(validate(json!({})).unwrap().sources.summary, Some(example));
}

/// (settings, summary read first, Node list read, static limits kept)
#[rstest]
#[case::auto_by_default(json!({}), true, true, false)]
#[case::auto_with_static_fallback(json!({"capacity": {"maxGpusPerNode": 8}}), true, true, true)]
#[case::nodes_only(json!({"capacity": {"source": "nodes"}}), false, true, false)]
#[case::summary_only(json!({"capacity": {"source": "summary"}}), true, false, false)]
#[case::summary_elsewhere(json!({"capacity": {"source": "summary", "fleetSummary": {"namespace": "gpu"}}}), true, false, false)]
#[case::static_never_reads_the_cluster(json!({"capacity": {"source": "static", "maxGpusPerNode": 8}}), false, false, true)]
#[case::cluster_as_before_auto_without_limits(json!({"capacity": {"source": "cluster"}}), true, true, false)]
#[case::nodes_ignore_static_limits(json!({"capacity": {"source": "nodes", "maxGpusPerNode": 8}}), false, true, false)]
#[case::static_ignores_the_summary(json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "fleetSummary": {}}}), false, false, true)]
fn sources_follow_capacity_source(
    #[case] settings: serde_json::Value,
    #[case] summary: bool,
    #[case] node_list: bool,
    #[case] static_limits: bool,
) {
    let config = validate(settings).unwrap();
    assert_eq!(config.sources.summary.is_some(), summary);
    assert_eq!(config.sources.node_list, node_list);
    assert_eq!(config.capacity.is_some(), static_limits);
}

/// (settings, init-container values): a resource left out is fitted.
#[rstest]
#[case::fit_app_by_default(json!({}), InitContainer::FitApp)]
#[case::fit_app_spelled(json!({"qos": {"initContainer": "fitApp"}}), InitContainer::FitApp)]
#[case::fixed(json!({"qos": {"initContainer": {"cpu": "2", "memory": "4Gi"}}}),
    InitContainer::Fixed { cpu: Some(Quantity::parse("2").unwrap()), memory: Some(Quantity::parse("4Gi").unwrap()) })]
#[case::fixed_cpu_only(json!({"qos": {"initContainer": {"cpu": 8}}}),
    InitContainer::Fixed { cpu: Some(Quantity::parse("8").unwrap()), memory: None })]
fn init_container_values_are_read(
    #[case] settings: serde_json::Value,
    #[case] expected: InitContainer<Quantity>,
) {
    assert_eq!(validate(settings).unwrap().qos.init_container, expected);
}

#[rstest]
#[case::deny_by_default(json!({}), UnlabeledNodes::Deny)]
#[case::allow(json!({"capacity": {"unlabeledNodes": "allow"}}), UnlabeledNodes::Allow)]
fn unlabeled_nodes_is_read(#[case] settings: serde_json::Value, #[case] expected: UnlabeledNodes) {
    assert_eq!(validate(settings).unwrap().unlabeled_nodes, expected);
}

#[rstest]
#[case::unknown_top_level_key(json!({"gpuResource": []}), "gpuResource: unknown field `gpuResource`")]
#[case::unknown_nested_key(json!({"qos": {"cpu": "1"}}), "qos.cpu: unknown field `cpu`")]
#[case::empty_gpu_resources(json!({"gpuResources": []}), "gpuResources: must list at least one")]
#[case::gpu_resource_without_domain(json!({"gpuResources": ["gpu"]}), "gpuResources: \"gpu\" is not an extended resource name")]
#[case::gpu_resource_in_kubernetes_domain(json!({"gpuResources": ["kubernetes.io/gpu"]}), "gpuResources: \"kubernetes.io/gpu\"")]
#[case::gpu_resource_bad_name(json!({"gpuResources": ["nvidia.com/-gpu"]}), "gpuResources: \"nvidia.com/-gpu\"")]
#[case::gpu_resource_twice(json!({"gpuResources": ["amd.com/gpu", "amd.com/gpu"]}), "gpuResources: \"amd.com/gpu\" is listed twice")]
#[case::gpu_resources_not_a_list(json!({"gpuResources": "nvidia.com/gpu"}), "gpuResources: invalid type")]
#[case::label_prefix_uppercase(json!({"labelPrefix": "GPU.io"}), "labelPrefix: invalid label prefix \"GPU.io\"")]
#[case::exempt_namespace_invalid(json!({"exemptNamespaces": ["Kube_System"]}), "exemptNamespaces: \"Kube_System\" is not a valid namespace name")]
#[case::qos_mode_unknown(json!({"qos": {"mode": "enforce"}}), "qos.mode: unknown variant `enforce`")]
#[case::cpu_per_gpu_garbage(json!({"qos": {"cpuPerGpu": "abc"}}), "qos.cpuPerGpu: \"abc\" is not a Kubernetes quantity")]
#[case::cpu_per_gpu_zero(json!({"qos": {"cpuPerGpu": "0"}}), "qos.cpuPerGpu: \"0\" must be more than zero")]
#[case::cpu_per_gpu_negative(json!({"qos": {"cpuPerGpu": -2}}), "qos.cpuPerGpu: \"-2\" must not be negative")]
#[case::memory_per_gpu_millibytes(json!({"qos": {"memoryPerGpu": "100m"}}), "qos.memoryPerGpu: \"100m\" is not a whole number of bytes")]
#[case::sidecar_cpu_garbage(json!({"qos": {"sidecarCpu": "1 core"}}), "qos.sidecarCpu: \"1 core\" is not a Kubernetes quantity")]
#[case::sidecar_memory_out_of_range(json!({"qos": {"sidecarMemory": "1e400"}}), "qos.sidecarMemory: \"1e400\" is out of range")]
#[case::quantity_of_wrong_type(json!({"qos": {"sidecarMemory": true}}), "qos.sidecarMemory: expected a quantity string")]
#[case::whole_cpus_not_bool(json!({"qos": {"wholeCpus": "yes"}}), "qos.wholeCpus: invalid type")]
#[case::round_to_whole_cores_not_bool(json!({"qos": {"roundToWholeCores": "yes"}}), "qos.roundToWholeCores: invalid type")]
#[case::round_written_cpus_is_not_a_setting(json!({"qos": {"roundWrittenCpus": true}}), "qos.roundWrittenCpus: unknown field `roundWrittenCpus`")]
#[case::scope_unknown(json!({"topology": {"scope": "node"}}), "topology.scope: \"node\" is not valid: expected one of container, pod")]
#[case::alignment_unknown(json!({"topology": {"alignment": "socket"}}), "topology.alignment: \"socket\" is not valid: expected one of numa, nvlink, node")]
#[case::affinity_unknown(json!({"topology": {"affinity": "soft"}}), "topology.affinity: unknown variant `soft`")]
#[case::weight_zero(json!({"topology": {"preferredWeight": 0}}), "topology.preferredWeight: 0 is out of range")]
#[case::weight_too_high(json!({"topology": {"preferredWeight": 101}}), "topology.preferredWeight: 101 is out of range")]
#[case::weight_not_a_number(json!({"topology": {"preferredWeight": "high"}}), "topology.preferredWeight: invalid type")]
#[case::summary_namespace_invalid(json!({"capacity": {"fleetSummary": {"namespace": "Kube"}}}), "capacity.fleetSummary.namespace: \"Kube\" is not a valid namespace name")]
#[case::summary_name_invalid(json!({"capacity": {"fleetSummary": {"name": "fleet/x"}}}), "capacity.fleetSummary.name: \"fleet/x\" is not a valid ConfigMap name")]
#[case::summary_max_age_zero(json!({"capacity": {"fleetSummary": {"maxAgeSeconds": 0}}}), "capacity.fleetSummary.maxAgeSeconds: must be at least 1")]
#[case::stale_facts_sooner_than_a_heartbeat(json!({"capacity": {"staleFactsAfterSeconds": 600}}), "capacity.staleFactsAfterSeconds: 600 is shorter than the labeler's heartbeat interval (1800 s)")]
#[case::stale_facts_negative(json!({"capacity": {"staleFactsAfterSeconds": -1}}), "capacity.staleFactsAfterSeconds: invalid value")]
#[case::summary_max_age_negative(json!({"capacity": {"fleetSummary": {"maxAgeSeconds": -5}}}), "capacity.fleetSummary.maxAgeSeconds: invalid value")]
#[case::summary_unknown_key(json!({"capacity": {"fleetSummary": {"ttl": 5}}}), "capacity.fleetSummary.ttl: unknown field `ttl`")]
#[case::max_per_node_zero(json!({"capacity": {"maxGpusPerNode": 0}}), "capacity.maxGpusPerNode: must be at least 1")]
#[case::max_per_numa_zero(json!({"capacity": {"maxGpusPerNumaNode": 0}}), "capacity.maxGpusPerNumaNode: must be at least 1")]
#[case::max_negative(json!({"capacity": {"maxGpusPerNode": -1}}), "capacity.maxGpusPerNode: invalid value: integer `-1`")]
#[case::numa_above_node(json!({"capacity": {"maxGpusPerNode": 4, "maxGpusPerNumaNode": 8}}), "capacity.maxGpusPerNumaNode: 8 is more than capacity.maxGpusPerNode 4")]
#[case::single_numa_without_numa_size(json!({"capacity": {"singleNumaNode": true}}), "capacity.singleNumaNode: true needs capacity.maxGpusPerNumaNode")]
#[case::static_without_limits(json!({"capacity": {"source": "static"}}), "capacity.source: static needs capacity.maxGpusPerNode or capacity.maxGpusPerNumaNode")]
#[case::source_unknown(json!({"capacity": {"source": "cluster-view"}}), "capacity.source: unknown variant `cluster-view`")]
#[case::unlabeled_nodes_unknown(json!({"capacity": {"unlabeledNodes": "maybe"}}), "capacity.unlabeledNodes: unknown variant `maybe`, expected `deny` or `allow`")]
#[case::init_container_word_unknown(json!({"qos": {"initContainer": "fit"}}), "qos.initContainer: \"fit\" is not valid: expected fitApp, or fixed values")]
#[case::init_container_not_an_object(json!({"qos": {"initContainer": 2}}), "qos.initContainer: 2 is not valid: expected fitApp")]
#[case::init_container_unknown_key(json!({"qos": {"initContainer": {"gpu": "1"}}}), "qos.initContainer: unknown field `gpu`, expected `cpu` or `memory`")]
#[case::init_container_cpu_garbage(json!({"qos": {"initContainer": {"cpu": "two"}}}), "qos.initContainer.cpu: \"two\" is not a Kubernetes quantity")]
#[case::init_container_memory_millibytes(json!({"qos": {"initContainer": {"memory": "100m"}}}), "qos.initContainer.memory: \"100m\" is not a whole number of bytes")]
#[case::init_container_cpu_zero(json!({"qos": {"initContainer": {"cpu": "0"}}}), "qos.initContainer.cpu: \"0\" must be more than zero")]
#[case::unknown_capacity_key(json!({"capacity": {"maxGpus": 8}}), "capacity.maxGpus: unknown field `maxGpus`")]
// A key that another key's value ignores is still checked in itself, and
// values that contradict each other are refused under every source.
#[case::weight_out_of_range_under_required(json!({"topology": {"affinity": "required", "preferredWeight": 0}}), "topology.preferredWeight: 0 is out of range")]
#[case::alignment_unknown_under_off(json!({"topology": {"affinity": "off", "alignment": "socket"}}), "topology.alignment: \"socket\" is not valid")]
#[case::numa_above_node_under_nodes(json!({"capacity": {"source": "nodes", "maxGpusPerNode": 4, "maxGpusPerNumaNode": 8}}), "capacity.maxGpusPerNumaNode: 8 is more than capacity.maxGpusPerNode 4")]
#[case::max_zero_under_summary(json!({"capacity": {"source": "summary", "maxGpusPerNode": 0}}), "capacity.maxGpusPerNode: must be at least 1")]
#[case::summary_namespace_invalid_under_static(json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "fleetSummary": {"namespace": "Kube"}}}), "capacity.fleetSummary.namespace: \"Kube\" is not a valid namespace name")]
#[case::single_numa_without_numa_size_under_static(json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "singleNumaNode": true}}), "capacity.singleNumaNode: true needs capacity.maxGpusPerNumaNode")]
#[case::qos_mode_true(json!({"qos": {"mode": true}}), "qos.mode: invalid type: boolean `true`")]
#[case::affinity_true(json!({"topology": {"affinity": true}}), "topology.affinity: invalid type: boolean `true`")]
fn invalid_settings_name_the_key(#[case] settings: serde_json::Value, #[case] expected: &str) {
    let message = validate(settings).unwrap_err();
    assert!(message.contains(expected), "{message:?} lacks {expected:?}");
}

/// (settings with a key that another key's value ignores, the same
/// settings without it): accepted, and read exactly as without it, so
/// the key left over cannot change an answer. A refusal would stop the
/// policy-server (the module's comment).
#[rstest]
#[case::weight_under_required(
    json!({"topology": {"affinity": "required", "preferredWeight": 10}}),
    json!({"topology": {"affinity": "required"}}))]
#[case::weight_under_off(
    json!({"topology": {"affinity": "off", "preferredWeight": 100}}),
    json!({"topology": {"affinity": "off"}}))]
#[case::alignment_under_off(
    json!({"topology": {"affinity": "off", "alignment": "nvlink"}}),
    json!({"topology": {"affinity": "off"}}))]
#[case::static_limits_under_nodes(
    json!({"capacity": {"source": "nodes", "maxGpusPerNode": 8, "maxGpusPerNumaNode": 4, "singleNumaNode": true}}),
    json!({"capacity": {"source": "nodes"}}))]
#[case::static_limits_under_summary(
    json!({"capacity": {"source": "summary", "maxGpusPerNumaNode": 4, "singleNumaNode": true}}),
    json!({"capacity": {"source": "summary"}}))]
#[case::static_limits_under_cluster(
    json!({"capacity": {"source": "cluster", "maxGpusPerNode": 8}}),
    json!({"capacity": {"source": "cluster"}}))]
#[case::single_numa_node_alone_under_nodes(
    json!({"capacity": {"source": "nodes", "singleNumaNode": true}}),
    json!({"capacity": {"source": "nodes"}}))]
#[case::fleet_summary_under_static(
    json!({"capacity": {"source": "static", "maxGpusPerNode": 8, "fleetSummary": {"namespace": "gpu"}}}),
    json!({"capacity": {"source": "static", "maxGpusPerNode": 8}}))]
#[case::fleet_summary_under_nodes(
    json!({"capacity": {"source": "nodes", "fleetSummary": {}}}),
    json!({"capacity": {"source": "nodes"}}))]
// The guide's "move to required", from examples/policy.yaml's settings.
#[case::the_guides_move_to_required(
    json!({"topology": {"scope": "pod", "alignment": "numa", "affinity": "required", "preferredWeight": 100}}),
    json!({"topology": {"scope": "pod", "alignment": "numa", "affinity": "required"}}))]
// The MIG and time-slicing advice on top of the quick start's settings.
#[case::the_readmes_shared_gpu_advice(
    json!({"topology": {"alignment": "numa", "affinity": "off"},
           "capacity": {"source": "static", "maxGpusPerNode": 56, "fleetSummary": {}}}),
    json!({"topology": {"affinity": "off"},
           "capacity": {"source": "static", "maxGpusPerNode": 56}}))]
fn keys_without_effect_are_accepted_and_ignored(
    #[case] with_leftover: serde_json::Value,
    #[case] without: serde_json::Value,
) {
    let read = validate(with_leftover.clone())
        .unwrap_or_else(|message| panic!("{with_leftover} refused: {message}"));
    assert_eq!(read, validate(without).unwrap());
    let response = validation_response(with_leftover.to_string().as_bytes());
    assert!(response.valid, "{response:?}");
}

/// kubectl reads an unquoted `off` as YAML 1.1's boolean false (the
/// comment of `off_word`): it means `off`.
#[rstest]
#[case::qos_mode(json!({"qos": {"mode": false}}), json!({"qos": {"mode": "off"}}))]
#[case::affinity(json!({"topology": {"affinity": false, "alignment": "node"}}), json!({"topology": {"affinity": "off"}}))]
fn false_is_read_as_off(
    #[case] as_kubectl_sends_it: serde_json::Value,
    #[case] as_written: serde_json::Value,
) {
    assert_eq!(
        validate(as_kubectl_sends_it).unwrap(),
        validate(as_written).unwrap()
    );
}

/// (settings, source, static limits kept)
#[rstest]
#[case::no_capacity(json!({}), CapacitySource::Auto, false)]
#[case::auto_with_limits(json!({"capacity": {"maxGpusPerNode": 8}}), CapacitySource::Auto, true)]
#[case::cluster_only(json!({"capacity": {"source": "cluster"}}), CapacitySource::Cluster, false)]
#[case::static_limits(json!({"capacity": {"source": "static", "maxGpusPerNumaNode": 4}}), CapacitySource::Static, true)]
fn capacity_source_and_limits(
    #[case] settings: serde_json::Value,
    #[case] source: CapacitySource,
    #[case] has_limits: bool,
) {
    let config = validate(settings).unwrap();
    assert_eq!(config.capacity_source, source);
    assert_eq!(config.capacity.is_some(), has_limits);
}

#[test]
fn every_problem_is_reported_at_once() {
    let message = validate(json!({
        "labelPrefix": "Bad Prefix",
        "qos": {"cpuPerGpu": "x", "memoryPerGpu": "y"}
    }))
    .unwrap_err();
    for key in ["labelPrefix", "qos.cpuPerGpu", "qos.memoryPerGpu"] {
        assert!(message.contains(key), "{message:?} lacks {key}");
    }
}

#[rstest]
#[case::valid(json!({}), true, None)]
#[case::invalid(json!({"qos": {"mode": "x"}}), false, Some("qos.mode"))]
#[case::not_json(json!("not an object"), false, Some("invalid type"))]
fn validate_settings_answers_without_trapping(
    #[case] settings: serde_json::Value,
    #[case] valid: bool,
    #[case] message_part: Option<&str>,
) {
    let response = validation_response(settings.to_string().as_bytes());
    assert_eq!(response.valid, valid);
    match message_part {
        Some(part) => assert!(response.message.unwrap().contains(part)),
        None => assert_eq!(response.message, None),
    }
}
