//! The files that describe the policy to Kubewarden, Artifact Hub and the
//! Rancher UI say the same thing as the policy itself: policy-metadata.yml
//! (rules, host capabilities, resources), artifacthub-pkg.yml (derived from
//! the metadata the way `kwctl scaffold artifacthub` derives it),
//! questions-ui.yml (every settings key of the Settings reference, docs/settings.md)
//! and the deployment examples: the main policy's, and the binding check's
//! second policy of the same module.

use gpu_topology::nrt;
use gpu_topology_policy::cluster::binding::{pod_request, topology_request};
use gpu_topology_policy::cluster::dra::{device_class_request, resource_slice_request};
use gpu_topology_policy::cluster::fleet_summary::summary_request;
use gpu_topology_policy::cluster::nodes::{node_list_request, node_request};
use gpu_topology_policy::decide::claim::pod::{claim_request, PodClaim};
use gpu_topology_policy::decide::workload::WORKLOADS;
use gpu_topology_policy::request::claim::{CLAIM_KINDS, RESOURCE_API_VERSION, RESOURCE_GROUP};
use gpu_topology_policy::settings::{settings_from_value, Config, FleetSummarySettings};
use rstest::rstest;
use serde_yaml::{Mapping, Value};
use std::collections::BTreeSet;
use std::path::Path;

fn repo_file(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn load(file: &str) -> Value {
    serde_yaml::from_str(&repo_file(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} is not a string: {value:?}"))
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

/// The Artifact Hub recommendation and provider `kwctl scaffold artifacthub`
/// writes for every policy (policy-evaluator `policy_artifacthub.rs`:
/// `Recommendation::default`, `Provider::default`).
const KUBEWARDEN_CONTROLLER_PACKAGE: &str =
    "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller";
const SCAFFOLD_PROVIDER: &str = "kubewarden";

/// The top-level keys of the package, in the order kwctl writes them (the
/// field order of policy-evaluator's `ArtifactHubPkg`).
const PACKAGE_KEYS: [&str; 15] = [
    "version",
    "name",
    "displayName",
    "createdAt",
    "description",
    "license",
    "homeURL",
    "containersImages",
    "keywords",
    "links",
    "install",
    "maintainers",
    "provider",
    "recommendations",
    "annotations",
];

/// The package fields kwctl copies from a metadata annotation as they are.
const COPIED_ANNOTATIONS: [(&str, &str); 5] = [
    ("name", "io.kubewarden.policy.title"),
    ("displayName", "io.artifacthub.displayName"),
    ("description", "io.kubewarden.policy.description"),
    ("license", "io.kubewarden.policy.license"),
    ("homeURL", "io.kubewarden.policy.url"),
];

/// The install text of `kwctl scaffold artifacthub`, as in the packages of
/// the official policies (kubewarden/policies, e.g.
/// policies/ns-policyserver-mapper-policy/artifacthub-pkg.yml).
fn install_text(image: &str) -> String {
    format!(
        "The policy can be obtained using [`kwctl`](https://github.com/kubewarden/kwctl):\n\
         ```console\nkwctl pull {image}\n```\n\
         Then, generate the policy manifest and tune it to your liking. For example:\n\
         ```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{image}\n```\n"
    )
}

/// `"Name <email>"`, the author annotation, as Artifact Hub maintainers.
fn maintainers(author: &str) -> Value {
    let (name, email) = author
        .strip_suffix('>')
        .and_then(|rest| rest.split_once(" <"))
        .unwrap_or_else(|| panic!("author {author:?} is not \"Name <email>\""));
    yaml(&format!("[{{name: {name:?}, email: {email:?}}}]"))
}

/// The context-aware resources the way kwctl writes them: policy-evaluator
/// keeps them in a `BTreeSet`, so sorted by apiVersion, then kind.
fn sorted_resources(resources: &Value) -> Value {
    let mut sorted = resources.as_sequence().unwrap().clone();
    sorted.sort_by_key(|r| (text(r, "apiVersion").to_owned(), text(r, "kind").to_owned()));
    Value::Sequence(sorted)
}

/// The package `kwctl scaffold artifacthub --metadata-path policy-metadata.yml
/// --questions-path questions-ui.yml` derives (policy-evaluator
/// `policy_artifacthub.rs`, `ArtifactHubPkg::from_metadata`), without
/// `createdAt`: that one is the time of the run.
fn scaffolded_package(metadata: &Value, questions: &str) -> Value {
    let annotations = &metadata["annotations"];
    let version = text(annotations, "io.kubewarden.policy.version");
    let image = format!(
        "{}:v{version}",
        text(annotations, "io.kubewarden.policy.ociUrl")
    );
    let source = text(annotations, "io.kubewarden.policy.source");
    let keywords: Vec<Value> = text(annotations, "io.artifacthub.keywords")
        .split(',')
        .map(|keyword| Value::from(keyword.trim()))
        .collect();
    let rules = serde_yaml::to_string(&metadata["rules"]).unwrap();
    let resources =
        serde_yaml::to_string(&sorted_resources(&metadata["contextAwareResources"])).unwrap();
    let mut package = Mapping::new();
    let mut put = |key: &str, value: Value| package.insert(Value::from(key), value);
    put("version", Value::from(version));
    for (key, annotation) in COPIED_ANNOTATIONS {
        put(key, Value::from(text(annotations, annotation)));
    }
    put(
        "containersImages",
        yaml(&format!("[{{name: policy, image: {image:?}}}]")),
    );
    put("keywords", Value::Sequence(keywords));
    put(
        "links",
        yaml(&format!(
            "[{{name: policy, url: \"{source}/releases/download/v{version}/policy.wasm\"}}, \
             {{name: source, url: {source:?}}}]"
        )),
    );
    put("install", Value::from(install_text(&image)));
    put(
        "maintainers",
        maintainers(text(annotations, "io.kubewarden.policy.author")),
    );
    put("provider", yaml(&format!("{{name: {SCAFFOLD_PROVIDER}}}")));
    put(
        "recommendations",
        yaml(&format!("[{{url: {KUBEWARDEN_CONTROLLER_PACKAGE:?}}}]")),
    );
    let mut hub = Mapping::new();
    let mut note = |key: &str, value: String| hub.insert(Value::from(key), Value::from(value));
    note("kubewarden/contextAwareResources", resources);
    note(
        "kubewarden/mutation",
        metadata["mutating"].as_bool().unwrap().to_string(),
    );
    note("kubewarden/questions-ui", questions.to_owned());
    note(
        "kubewarden/resources",
        text(annotations, "io.artifacthub.resources").to_owned(),
    );
    note("kubewarden/rules", rules);
    put("annotations", Value::Mapping(hub));
    Value::Mapping(package)
}

#[test]
fn artifacthub_package_is_what_kwctl_scaffold_derives_from_the_metadata() {
    let metadata = load("policy-metadata.yml");
    let mut package = load("artifacthub-pkg.yml");
    let keys: Vec<&str> = package
        .as_mapping()
        .unwrap()
        .keys()
        .map(|key| key.as_str().unwrap())
        .collect();
    assert_eq!(keys, PACKAGE_KEYS, "kwctl's field order");
    let created_at = package
        .as_mapping_mut()
        .unwrap()
        .remove("createdAt")
        .unwrap();
    let created_at = created_at.as_str().unwrap_or_default();
    assert!(
        created_at.len() >= 20 && created_at.as_bytes()[10] == b'T' && created_at.ends_with('Z'),
        "createdAt {created_at:?} is not an RFC 3339 UTC time"
    );
    let expected = scaffolded_package(&metadata, &repo_file("questions-ui.yml"));
    // Key by key, annotation by annotation, so a failure names what differs.
    for (key, value) in expected.as_mapping().unwrap() {
        let key = key.as_str().unwrap();
        if key == "annotations" {
            for (annotation, value) in value.as_mapping().unwrap() {
                let annotation = annotation.as_str().unwrap();
                assert_eq!(
                    package["annotations"][annotation], *value,
                    "annotations.{annotation}: what kwctl derives is on the right"
                );
            }
        }
        assert_eq!(
            package[key], *value,
            "{key}: what kwctl derives is on the right"
        );
    }
}

#[test]
fn versions_agree_with_the_crate() {
    let version = env!("CARGO_PKG_VERSION");
    let metadata = load("policy-metadata.yml");
    assert_eq!(
        metadata["annotations"]["io.kubewarden.policy.version"].as_str(),
        Some(version)
    );
    assert_eq!(
        load("artifacthub-pkg.yml")["version"].as_str(),
        Some(version)
    );
    assert_eq!(metadata["executionMode"].as_str(), Some("kubewarden-wapc"));
}

/// The second ClusterAdmissionPolicy of the module: the binding check,
/// with its own failure policy and scope (docs/binding-check.md).
const BINDING_POLICY: &str = "examples/binding-check.yaml";

/// Whether a rule of the metadata is the binding check's.
fn is_binding_rule(rule: &Value) -> bool {
    rule["resources"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|resource| resource.as_str() == Some("pods/binding"))
}

/// Whether a context-aware resource is read by the binding check alone.
fn is_binding_only_resource(resource: &Value) -> bool {
    (text(resource, "apiVersion"), text(resource, "kind")) == (nrt::API_VERSION, nrt::KIND)
}

/// The metadata's sequence under `key`, less (or only, with `keep`) the
/// entries `binding` picks.
fn metadata_part(key: &str, binding: fn(&Value) -> bool, keep: bool) -> Value {
    let metadata = load("policy-metadata.yml");
    Value::Sequence(
        metadata[key]
            .as_sequence()
            .unwrap()
            .iter()
            .filter(|entry| binding(entry) == keep)
            .cloned()
            .collect(),
    )
}

/// The module every example policy runs: the release's.
fn released_module() -> String {
    let metadata = load("policy-metadata.yml");
    format!(
        "registry://{}:v{}",
        metadata["annotations"]["io.kubewarden.policy.ociUrl"]
            .as_str()
            .unwrap(),
        env!("CARGO_PKG_VERSION")
    )
}

/// The deployment examples, the quick start's and the one with every
/// setting, run the released module with the metadata's rules but the
/// binding rule (the second policy's, below) and grant the resources it
/// reads but the binding check's NodeResourceTopology.
#[rstest]
#[case::quick_start("examples/gpu-topology.yaml")]
#[case::every_setting("examples/policy.yaml")]
fn cluster_admission_policy_examples_match_the_metadata(#[case] file: &str) {
    let metadata = load("policy-metadata.yml");
    let policy = load(file);
    let annotations = &metadata["annotations"];
    assert_eq!(policy["kind"].as_str(), Some("ClusterAdmissionPolicy"));
    assert_eq!(
        policy["spec"]["module"].as_str(),
        Some(released_module().as_str())
    );
    assert_eq!(
        policy["spec"]["rules"],
        metadata_part("rules", is_binding_rule, false)
    );
    assert_eq!(policy["spec"]["mutating"], metadata["mutating"]);
    assert_eq!(
        policy["spec"]["contextAwareResources"],
        metadata_part("contextAwareResources", is_binding_only_resource, false)
    );
    // The Artifact Hub annotations, where the example carries them.
    if !policy["metadata"]["annotations"].is_null() {
        for key in [
            "io.kubewarden.policy.category",
            "io.kubewarden.policy.severity",
        ] {
            assert_eq!(
                policy["metadata"]["annotations"][key], annotations[key],
                "{key}"
            );
        }
    }
}

/// The binding check's policy (examples/binding-check.yaml): the same
/// module, only the metadata's binding rule, never mutating, its outage
/// never blocking a binding, scoped by namespace (a Binding has no labels
/// for an objectSelector), granted exactly the three kinds it gets, and
/// reading the quick start's settings.
#[test]
fn the_binding_check_example_is_the_metadatas_binding_rule_alone() {
    let policy = load(BINDING_POLICY);
    let spec = &policy["spec"];
    assert_eq!(policy["kind"].as_str(), Some("ClusterAdmissionPolicy"));
    assert_eq!(spec["module"].as_str(), Some(released_module().as_str()));
    let rules = metadata_part("rules", is_binding_rule, true);
    assert_eq!(rules.as_sequence().unwrap().len(), 1, "{rules:?}");
    assert_eq!(spec["rules"], rules);
    assert_eq!(spec["mutating"].as_bool(), Some(false));
    assert_eq!(spec["backgroundAudit"].as_bool(), Some(false));
    assert_eq!(spec["failurePolicy"].as_str(), Some("Ignore"));
    let timeout = spec["timeoutSeconds"].as_u64().expect("timeoutSeconds");
    assert!((1..=5).contains(&timeout), "timeoutSeconds {timeout}");
    assert!(
        spec["objectSelector"].is_null(),
        "a Binding carries no labels"
    );
    assert!(
        !spec["namespaceSelector"].is_null(),
        "scoped to the namespaces the operator labels"
    );
    // Exactly what the check gets, each granted once.
    let granted: BTreeSet<(String, String)> = spec["contextAwareResources"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| (text(r, "apiVersion").to_owned(), text(r, "kind").to_owned()))
        .collect();
    let read: BTreeSet<(String, String)> = [
        pod_request("ns", "pod"),
        node_request("node"),
        topology_request("node"),
    ]
    .into_iter()
    .map(|request| (request.api_version, request.kind))
    .collect();
    assert_eq!(granted, read);
    assert_eq!(
        spec["contextAwareResources"].as_sequence().unwrap().len(),
        read.len()
    );
    // Every kind it is granted is declared in the metadata.
    let declared = load("policy-metadata.yml")["contextAwareResources"].clone();
    for resource in spec["contextAwareResources"].as_sequence().unwrap() {
        assert!(
            declared.as_sequence().unwrap().contains(resource),
            "{resource:?} is not in the metadata's contextAwareResources"
        );
    }
    // The quick start's settings, read the same way.
    let config = |file: &str| {
        settings_from_value(serde_json::to_value(&load(file)["spec"]["settings"]).unwrap())
            .and_then(|settings| settings.config())
            .unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    assert_eq!(config(BINDING_POLICY), config("examples/gpu-topology.yaml"));
}

/// The dotted keys of a settings mapping, depth first (`qos`, `qos.mode`).
fn dotted_keys(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let Some(mapping) = value.as_mapping() else {
        return;
    };
    for (key, value) in mapping {
        let key = format!("{prefix}{}", key.as_str().unwrap());
        dotted_keys(value, &format!("{key}."), out);
        out.insert(key);
    }
}

/// The settings keys without a default: absent unless the operator knows
/// the value (README, Settings reference), so shown in a comment only.
const KEYS_WITHOUT_DEFAULT: [&str; 2] = ["capacity.maxGpusPerNode", "capacity.maxGpusPerNumaNode"];

/// examples/policy.yaml (whose settings are examples/settings.yaml, by
/// e2e-tests/tests/scenarios.rs) writes out every key the settings
/// reference documents, with its default but the exempt namespaces.
#[test]
fn the_every_setting_example_has_every_key_at_its_default() {
    let settings = &load("examples/policy.yaml")["spec"]["settings"];
    let mut written = BTreeSet::new();
    dotted_keys(settings, "", &mut written);
    let mut asked = Vec::new();
    questions(&load("questions-ui.yml")["questions"], &mut asked);
    let documented: BTreeSet<String> = asked
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key != DESCRIPTION_VARIABLE)
        .filter(|key| !KEYS_WITHOUT_DEFAULT.contains(&key.as_str()))
        .collect();
    assert_eq!(written, documented, "written (left) and documented (right)");
    let text = repo_file("examples/policy.yaml");
    for key in KEYS_WITHOUT_DEFAULT {
        let name = key.rsplit('.').next().unwrap();
        assert!(
            text.lines()
                .any(|line| line.trim_start().starts_with(&format!("# {name}:"))),
            "examples/policy.yaml shows {key} in a comment"
        );
    }
    let config = settings_from_value(serde_json::to_value(settings).unwrap())
        .and_then(|settings| settings.config())
        .unwrap();
    let defaults = Config {
        exempt_namespaces: ["kube-system", "gpu-operator"].map(str::to_owned).into(),
        ..Config::default()
    };
    assert_eq!(config, defaults);
}

/// The rules send the policy exactly what it evaluates: Pod CREATE, the
/// binding of a pod (pods/binding CREATE), and CREATE/UPDATE of every
/// workload kind it validates.
#[test]
fn rules_cover_every_validated_workload() {
    let metadata = load("policy-metadata.yml");
    let rules = metadata["rules"].as_sequence().unwrap();
    let covers = |group: &str, resource: &str, operations: &[&str]| {
        rules.iter().any(|rule| {
            let has = |key: &str, value: &str| {
                rule[key]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .any(|v| v.as_str() == Some(value))
            };
            has("apiGroups", group)
                && has("apiVersions", "v1")
                && has("resources", resource)
                && operations.iter().all(|op| has("operations", op))
        })
    };
    assert!(covers("", "pods", &["CREATE"]));
    assert!(covers("", "pods/binding", &["CREATE"]));
    for claim in CLAIM_KINDS {
        assert!(
            covers(RESOURCE_GROUP, claim.resource, &["CREATE"]),
            "{} is missing from the rules",
            claim.kind
        );
    }
    for workload in WORKLOADS {
        assert!(
            covers(workload.group, workload.resource, &["CREATE", "UPDATE"]),
            "{} is missing from the rules",
            workload.kind
        );
    }
    let resources: usize = rules
        .iter()
        .map(|rule| rule["resources"].as_sequence().unwrap().len())
        .sum();
    assert_eq!(
        resources,
        WORKLOADS.len() + CLAIM_KINDS.len() + 2,
        "a rule lists a kind the policy ignores"
    );
}

/// Node and summary access, the DRA objects a claim's check and a DRA
/// pod's read, and the binding check's Pod and NodeResourceTopology, are
/// declared where Kubewarden and Artifact Hub read them, and are what the
/// policy lists and gets.
#[test]
fn context_aware_resources_declare_node_and_summary_access() {
    let metadata = load("policy-metadata.yml");
    let package = load("artifacthub-pkg.yml");
    let expected = yaml(
        "[{apiVersion: v1, kind: Node}, {apiVersion: v1, kind: ConfigMap},
          {apiVersion: resource.k8s.io/v1, kind: DeviceClass},
          {apiVersion: resource.k8s.io/v1, kind: ResourceSlice},
          {apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate},
          {apiVersion: resource.k8s.io/v1, kind: ResourceClaim},
          {apiVersion: v1, kind: Pod},
          {apiVersion: topology.node.k8s.io/v1alpha2, kind: NodeResourceTopology}]",
    );
    assert_eq!(metadata["contextAwareResources"], expected);
    let annotated = yaml(text(
        &package["annotations"],
        "kubewarden/contextAwareResources",
    ));
    assert_eq!(annotated, sorted_resources(&expected));
    let request = node_list_request(&gpu_topology::LabelPrefix::default());
    assert_eq!(
        (request.api_version.as_str(), request.kind.as_str()),
        ("v1", "Node")
    );
    let request = summary_request(&FleetSummarySettings::default());
    assert_eq!(
        (request.api_version.as_str(), request.kind.as_str()),
        ("v1", "ConfigMap")
    );
    for request in [device_class_request(), resource_slice_request()] {
        assert_eq!(request.api_version, RESOURCE_API_VERSION);
    }
    for claim in &CLAIM_KINDS {
        let request = claim_request(
            &PodClaim {
                name: "gpus".into(),
                kind: claim,
                source: "x".into(),
            },
            "default",
        );
        assert_eq!(
            (request.api_version.as_str(), request.kind.as_str()),
            (RESOURCE_API_VERSION, claim.kind)
        );
    }
    let request = pod_request("ml", "train-0");
    assert_eq!(
        (request.api_version.as_str(), request.kind.as_str()),
        ("v1", "Pod")
    );
    let request = topology_request("gpu-7");
    assert_eq!(
        (request.api_version.as_str(), request.kind.as_str()),
        ("topology.node.k8s.io/v1alpha2", "NodeResourceTopology")
    );
}

/// The operations of the host's `kubernetes` namespace (policy-evaluator
/// `host_capabilities.rs`, `CAPABILITY_TREE`).
const KUBERNETES_OPERATIONS: [&str; 4] = [
    "list_resources_by_namespace",
    "list_resources_all",
    "get_resource",
    "can_i",
];

/// Every file under `dir`, its folders included (the policy's modules are
/// grouped in folders by pipeline stage).
fn rust_sources(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_sources(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// What the policy's sources call: every `host_call` must go to the
/// `kubewarden` binding's `kubernetes` namespace, or be the log line of the
/// binding check (`tracing/log`, which no host gates and the metadata's
/// comment says is not declared), and the operations are the `kubernetes`
/// operation names written as string literals in those files (as kwctl
/// detects them in the module's data: the name as a string).
fn capabilities_called_by_the_sources() -> BTreeSet<String> {
    const HOST_CALL: &str = "host_call(";
    const KUBERNETES_HOST_CALL: &str = r#"host_call("kubewarden", "kubernetes","#;
    const LOG_HOST_CALL: &str = r#"host_call("kubewarden", "tracing", "log","#;
    let mut called = BTreeSet::new();
    for path in rust_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) {
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        let calls = source.matches(HOST_CALL).count();
        if calls == 0 {
            continue;
        }
        assert_eq!(
            source.matches(KUBERNETES_HOST_CALL).count() + source.matches(LOG_HOST_CALL).count(),
            calls,
            "{}: a host_call outside kubewarden/kubernetes and tracing/log; declare it in hostCapabilities and teach this test",
            path.display()
        );
        for operation in KUBERNETES_OPERATIONS {
            if source.contains(&format!("\"{operation}\"")) {
                called.insert(format!("kubernetes/{operation}"));
            }
        }
    }
    called
}

#[test]
fn host_capabilities_declare_exactly_what_the_sources_call() {
    let metadata = load("policy-metadata.yml");
    let declared: BTreeSet<String> = metadata["hostCapabilities"]
        .as_sequence()
        .expect("policy-metadata.yml declares hostCapabilities")
        .iter()
        .map(|pattern| pattern.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        declared,
        capabilities_called_by_the_sources(),
        "hostCapabilities (left) and the host calls in src/ (right) differ"
    );
}

/// Every settings key, its default and meaning, for operators.
const SETTINGS_REFERENCE: &str = "docs/settings.md";

/// The settings keys of the Settings reference table, in order.
fn reference_settings_keys() -> Vec<String> {
    let reference = repo_file(SETTINGS_REFERENCE);
    let section = reference
        .split_once("# Settings reference")
        .expect("docs/settings.md is the Settings reference")
        .1;
    section
        .lines()
        .skip_while(|line| !line.starts_with("| `"))
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.strip_prefix("| `")?.split_once('`'))
        .map(|(key, _)| key.to_owned())
        .collect()
}

/// Every question, depth first, with whether it groups subquestions.
fn questions(list: &Value, out: &mut Vec<(String, bool)>) {
    for question in list.as_sequence().unwrap() {
        let subquestions = &question["subquestions"];
        out.push((
            text(question, "variable").to_owned(),
            !subquestions.is_null(),
        ));
        if !subquestions.is_null() {
            questions(subquestions, out);
        }
    }
}

/// The description shown at the top of the form; not a setting.
const DESCRIPTION_VARIABLE: &str = "description";

#[test]
fn questions_ui_asks_every_setting_of_the_reference_and_nothing_else() {
    let table = reference_settings_keys();
    assert!(
        table.len() > 10,
        "{SETTINGS_REFERENCE} table not found: {table:?}"
    );
    let mut asked = Vec::new();
    questions(&load("questions-ui.yml")["questions"], &mut asked);
    let asked_keys: BTreeSet<&str> = asked.iter().map(|(key, _)| key.as_str()).collect();
    let missing: Vec<&String> = table
        .iter()
        .filter(|key| !asked_keys.contains(key.as_str()))
        .collect();
    assert!(missing.is_empty(), "not in questions-ui.yml: {missing:?}");
    // A question that is not a reference key must be the form's description or
    // a group (qos, topology) whose subquestions are.
    let extra: Vec<&String> = asked
        .iter()
        .filter(|(key, groups)| !table.contains(key) && key != DESCRIPTION_VARIABLE && !groups)
        .map(|(key, _)| key)
        .collect();
    assert!(
        extra.is_empty(),
        "not in the {SETTINGS_REFERENCE} table: {extra:?}"
    );
    assert_eq!(
        asked_keys.len(),
        asked.len(),
        "a variable is asked twice: {asked:?}"
    );
}

/// `value` under the dotted `path` of `settings`, creating the objects on it.
fn set_path(settings: &mut serde_json::Value, path: &str, value: serde_json::Value) {
    let mut node = settings;
    let mut keys = path.split('.').peekable();
    while let Some(key) = keys.next() {
        let object = node.as_object_mut().unwrap();
        if keys.peek().is_none() {
            object.insert(key.to_owned(), value);
            return;
        }
        node = object
            .entry(key.to_owned())
            .or_insert_with(|| serde_json::json!({}));
    }
}

/// The settings a form left at its defaults submits, as modelled here: each
/// question's `default` (when it has one that is not null) written at its
/// variable's path; a question without a default writes nothing.
fn settings_from_defaults(list: &Value, settings: &mut serde_json::Value) {
    for question in list.as_sequence().unwrap() {
        let variable = text(question, "variable");
        let default = &question["default"];
        if variable != DESCRIPTION_VARIABLE && !default.is_null() {
            let value = serde_json::to_value(default).unwrap();
            set_path(settings, variable, value);
        }
        if !question["subquestions"].is_null() {
            settings_from_defaults(&question["subquestions"], settings);
        }
    }
}

#[test]
fn questions_ui_defaults_are_the_policy_defaults() {
    let mut settings = serde_json::json!({});
    settings_from_defaults(&load("questions-ui.yml")["questions"], &mut settings);
    let config = settings_from_value(settings.clone())
        .and_then(|settings| settings.config())
        .unwrap_or_else(|e| panic!("the form's defaults {settings} are refused: {e}"));
    assert_eq!(config, Config::default(), "from {settings}");
}

/// Every enum question offers exactly the words the policy accepts: each
/// option is valid at its key, and a word outside them is refused there.
#[test]
fn questions_ui_enum_options_are_accepted_by_the_policy() {
    let mut asked = Vec::new();
    collect_enums(&load("questions-ui.yml")["questions"], &mut asked);
    assert!(asked.len() >= 5, "{asked:?}");
    for (variable, options) in asked {
        for option in options.iter().map(String::as_str).chain(["not-a-word"]) {
            let mut settings = serde_json::json!({});
            set_path(&mut settings, &variable, serde_json::Value::from(option));
            let parsed = settings_from_value(settings.clone());
            assert_eq!(
                parsed.is_ok(),
                option != "not-a-word",
                "{variable}: {option}: {parsed:?}"
            );
        }
    }
}

fn collect_enums(list: &Value, out: &mut Vec<(String, Vec<String>)>) {
    for question in list.as_sequence().unwrap() {
        if question["type"].as_str() == Some("enum") {
            let options = question["options"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap().to_owned())
                .collect();
            out.push((text(question, "variable").to_owned(), options));
        }
        if !question["subquestions"].is_null() {
            collect_enums(&question["subquestions"], out);
        }
    }
}
