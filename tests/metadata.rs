//! policy-metadata.yml and artifacthub-pkg.yml describe the same policy.

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
}
