//! policy-metadata.yml and artifacthub-pkg.yml describe the same policy.

use gpu_topology_policy::cluster::fleet_summary::summary_request;
use gpu_topology_policy::cluster::nodes::node_list_request;
use gpu_topology_policy::decide::workload::WORKLOADS;
use gpu_topology_policy::settings::FleetSummarySettings;
use serde_yaml::Value;

fn load(file: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn artifacthub_package_matches_the_policy_metadata() {
    let metadata = load("policy-metadata.yml");
    let package = load("artifacthub-pkg.yml");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(package["version"].as_str(), Some(version));
    assert_eq!(
        metadata["annotations"]["io.kubewarden.policy.version"].as_str(),
        Some(version)
    );
    let rules: Value =
        serde_yaml::from_str(package["annotations"]["kubewarden/rules"].as_str().unwrap()).unwrap();
    assert_eq!(rules, metadata["rules"]);
    assert_eq!(metadata["mutating"].as_bool(), Some(true));
    assert_eq!(
        package["annotations"]["kubewarden/mutation"].as_str(),
        Some("true")
    );
    assert_eq!(
        package["annotations"]["kubewarden/resources"],
        metadata["annotations"]["io.artifacthub.resources"]
    );
    assert_eq!(metadata["executionMode"].as_str(), Some("kubewarden-wapc"));
    // `kwctl scaffold artifacthub` reads the maintainers from the author
    // annotation, as "name <email>".
    let maintainer = &package["maintainers"][0];
    let author = format!(
        "{} <{}>",
        maintainer["name"].as_str().unwrap(),
        maintainer["email"].as_str().unwrap()
    );
    assert_eq!(
        metadata["annotations"]["io.kubewarden.policy.author"].as_str(),
        Some(author.as_str())
    );
}

/// The deployment example runs the released module with the metadata's rules.
#[test]
fn cluster_admission_policy_example_matches_the_metadata() {
    let metadata = load("policy-metadata.yml");
    let policy = load("examples/policy.yaml");
    let annotations = &metadata["annotations"];
    let module = format!(
        "registry://{}:v{}",
        annotations["io.kubewarden.policy.ociUrl"].as_str().unwrap(),
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(policy["spec"]["module"].as_str(), Some(module.as_str()));
    assert_eq!(policy["spec"]["rules"], metadata["rules"]);
    assert_eq!(policy["spec"]["mutating"], metadata["mutating"]);
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

/// The rules send the policy exactly what it evaluates: Pod CREATE, and
/// CREATE/UPDATE of every workload kind it validates.
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
        WORKLOADS.len() + 1,
        "a rule lists a kind the policy ignores"
    );
}

/// Node access is declared where Kubewarden and Artifact Hub read it, and is
/// what the policy lists.
#[test]
fn context_aware_resources_declare_node_and_summary_access() {
    let metadata = load("policy-metadata.yml");
    let package = load("artifacthub-pkg.yml");
    let expected: Value =
        serde_yaml::from_str("[{apiVersion: v1, kind: Node}, {apiVersion: v1, kind: ConfigMap}]")
            .unwrap();
    assert_eq!(metadata["contextAwareResources"], expected);
    let annotated: Value = serde_yaml::from_str(
        package["annotations"]["kubewarden/contextAwareResources"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(annotated, expected);
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
}
