//! What the docs and manifests reference is what a release publishes, and the
//! files that name the fleet summary agree on where it is:
//!
//! - every `ghcr.io/gpu-topology-policy/...` reference in the repository is
//!   one of the three artifacts the release workflow pushes, tagged with the
//!   crates' version (Cargo.toml's `workspace.package.version`): the module
//!   `gpu-topology-policy:vX.Y.Z` (`kwctl push` to the metadata's ociUrl at
//!   the git tag), the labeler image `gpu-topology-labeler:X.Y.Z` and the
//!   tool's image `gpu-topology:X.Y.Z` (examples/cli/audit-cronjob.yaml);
//! - the release workflow refuses a git tag that is not `v` + that version,
//!   and the policy metadata says the same version;
//! - the summary ConfigMap's namespace and name are the same in the
//!   summarizer's flags, its Role, the policy-server's Role, the policy's
//!   settings (examples/policy.yaml, examples/gpu-topology.yaml when present,
//!   the settings' defaults) and every `namespace/name` the docs write.

// The repository walk the e2e-tests' documentation tests use, included
// rather than depended on: e2e-tests' library would bring wasmtime into
// this crate's test build, and e2e-tests already dev-depends on this crate.
#[path = "../e2e-tests/src/repo_files.rs"]
mod repo_files;

use gpu_topology_policy::settings::{DEFAULT_SUMMARY_NAME, DEFAULT_SUMMARY_NAMESPACE};
use repo_files::repo_files;
use serde_yaml::Value;
use std::path::Path;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const OWNER: &str = "ghcr.io/gpu-topology-policy/";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// (file, line, artifact, tag) of every reference under OWNER.
fn references() -> Vec<(String, usize, String, Option<String>)> {
    let files = repo_files(repo(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut found = Vec::new();
    for relative in files {
        let Ok(text) = std::fs::read_to_string(repo().join(&relative)) else {
            continue; // not UTF-8: no reference we write
        };
        let file = relative.to_string_lossy().into_owned();
        for (index, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find(OWNER) {
                rest = &rest[at + OWNER.len()..];
                let name_end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                    .unwrap_or(rest.len());
                let artifact = rest[..name_end].to_owned();
                let tag = rest[name_end..].strip_prefix(':').map(|t| {
                    let end = t
                        .find(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
                        .unwrap_or(t.len());
                    t[..end].to_owned()
                });
                found.push((file.clone(), index + 1, artifact, tag));
            }
        }
    }
    found
}

#[test]
fn every_published_artifact_reference_carries_the_crates_version() {
    let references = references();
    let mut wrong = Vec::new();
    for (file, line, artifact, tag) in &references {
        let expected = match artifact.as_str() {
            // The registry prefix alone (a `sed` that rewrites it).
            "" => continue,
            "gpu-topology-policy" => format!("v{VERSION}"),
            "gpu-topology-labeler" => VERSION.to_owned(),
            "gpu-topology" => VERSION.to_owned(),
            // The repository's own URL (github.com/gpu-topology-policy/...)
            // does not match OWNER; anything else under ghcr.io is an
            // artifact no release publishes.
            other => {
                wrong.push(format!(
                    "{file}:{line}: {OWNER}{other} is not published by the release"
                ));
                continue;
            }
        };
        match tag {
            // An untagged name (the metadata's ociUrl, the workflow's image
            // name) takes its tag elsewhere.
            None => {}
            Some(tag) if *tag == expected => {}
            // The release docs' placeholder for "the version".
            Some(tag) if tag == "vX.Y.Z" || tag == "X.Y.Z" => {}
            Some(tag) => wrong.push(format!(
                "{file}:{line}: {OWNER}{artifact}:{tag}, but the crates' version makes it :{expected}"
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The references the quick start, the labeler manifests and the audit
    // CronJob need exist.
    for artifact in [
        "gpu-topology-policy",
        "gpu-topology-labeler",
        "gpu-topology",
    ] {
        assert!(
            references
                .iter()
                .any(|(_, _, a, tag)| a == artifact && tag.is_some()),
            "no tagged reference to {artifact}"
        );
    }
}

/// The tool's image is referenced, tagged with the crates' version, where it
/// runs: the audit CronJob's container (the line scan above also sees it,
/// but not that it is the container's image).
#[test]
fn the_audit_cronjob_runs_the_released_tool_image() {
    let docs = load_all("examples/cli/audit-cronjob.yaml");
    let cronjob = docs
        .iter()
        .find(|d| d["kind"] == "CronJob")
        .expect("examples/cli/audit-cronjob.yaml: a CronJob");
    let containers = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        .as_sequence()
        .unwrap();
    assert_eq!(containers.len(), 1);
    assert_eq!(
        containers[0]["image"].as_str(),
        Some(format!("{OWNER}gpu-topology:{VERSION}").as_str())
    );
}

fn load(file: &str) -> Value {
    let path = repo().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn load_all(file: &str) -> Vec<Value> {
    let path = repo().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{file}: {e}")))
        .collect()
}

#[test]
fn policy_metadata_and_release_workflow_take_the_crates_version() {
    let metadata = load("policy-metadata.yml");
    assert_eq!(
        metadata["annotations"]["io.kubewarden.policy.version"].as_str(),
        Some(VERSION)
    );
    let release = load(".github/workflows/release.yml");
    let script: String = release["jobs"]["version"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    // The tag is compared with the crates' version (cargo metadata) and the
    // metadata's; the other jobs take the version from this job's output.
    for needed in [
        "cargo metadata",
        "gpu-topology-policy",
        "gpu-topology-labeler",
        "gpu-topology-cli",
        "policy-metadata.yml",
        "GITHUB_REF_NAME",
    ] {
        assert!(script.contains(needed), "the version job lacks {needed}");
    }
}

/// (namespace, name) of the summary that the summarizer in `file` writes,
/// checked against its own ServiceAccount's, Deployment's and Role's.
fn summarizer_location(file: &str) -> (String, String) {
    let docs = load_all(file);
    let deployment = docs
        .iter()
        .find(|d| {
            d["kind"] == "Deployment" && d["metadata"]["name"] == "gpu-topology-fleet-summary"
        })
        .unwrap_or_else(|| panic!("{file}: no summarizer Deployment"));
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let flag = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("{file}: the summarizer has no --{name}"))
            .to_owned()
    };
    let (namespace, name) = (flag("summary-namespace"), flag("summary-name"));
    for doc in docs.iter().filter(|d| {
        d["metadata"]["name"] == "gpu-topology-fleet-summary"
            && ["ServiceAccount", "Deployment", "Role", "RoleBinding"]
                .contains(&d["kind"].as_str().unwrap())
    }) {
        assert_eq!(
            doc["metadata"]["namespace"].as_str(),
            Some(namespace.as_str()),
            "{file}: {:?}",
            doc["kind"]
        );
    }
    let role = docs
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "gpu-topology-fleet-summary")
        .unwrap();
    assert_eq!(
        role["rules"][0]["resourceNames"][0].as_str(),
        Some(name.as_str()),
        "{file}: the summarizer's Role"
    );
    (namespace, name)
}

/// Where the policy's settings in a ClusterAdmissionPolicy look for the summary.
fn policy_location(policy: &Value) -> (String, String) {
    let summary = &policy["spec"]["settings"]["capacity"]["fleetSummary"];
    (
        summary["namespace"]
            .as_str()
            .unwrap_or(DEFAULT_SUMMARY_NAMESPACE)
            .to_owned(),
        summary["name"]
            .as_str()
            .unwrap_or(DEFAULT_SUMMARY_NAME)
            .to_owned(),
    )
}

#[test]
fn the_summary_namespace_and_name_agree_across_files() {
    let expected = summarizer_location("examples/labeler/fleet-summary.yaml");
    let mut manifests: Vec<String> = Vec::new();
    for dir in ["examples/labeler", "examples/deploy"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".yaml") && name != "fleet-summary.yaml" {
                manifests.push(format!("{dir}/{name}"));
            }
        }
    }
    assert!(manifests.len() >= 3, "{manifests:?}");
    for file in &manifests {
        assert_eq!(summarizer_location(file), expected, "{file}");
    }

    // The policy-server reads it: its Role and RoleBinding.
    let rbac = load_all("examples/policy-server-rbac.yaml");
    let reader = rbac
        .iter()
        .find(|d| d["kind"] == "Role")
        .expect("policy-server Role");
    assert_eq!(
        (
            reader["metadata"]["namespace"].as_str().unwrap().to_owned(),
            reader["rules"][0]["resourceNames"][0]
                .as_str()
                .unwrap()
                .to_owned()
        ),
        expected,
        "examples/policy-server-rbac.yaml's Role"
    );
    let binding = rbac.iter().find(|d| d["kind"] == "RoleBinding").unwrap();
    assert_eq!(
        binding["metadata"]["namespace"].as_str(),
        Some(expected.0.as_str())
    );

    // The policy's settings, where they are shipped.
    assert_eq!(
        (
            DEFAULT_SUMMARY_NAMESPACE.to_owned(),
            DEFAULT_SUMMARY_NAME.to_owned()
        ),
        expected,
        "the settings' defaults"
    );
    for file in ["examples/policy.yaml", "examples/gpu-topology.yaml"] {
        if !repo().join(file).exists() {
            continue; // examples/gpu-topology.yaml: once the quick start ships it
        }
        for policy in load_all(file)
            .iter()
            .filter(|d| d["kind"] == "ClusterAdmissionPolicy")
        {
            assert_eq!(policy_location(policy), expected, "{file}");
        }
    }

    // The docs: every `<namespace>/<name>` and `-n <namespace> <name>`.
    let files = repo_files(repo(), &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut wrong = Vec::new();
    for relative in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = std::fs::read_to_string(repo().join(relative)).unwrap();
        let file = relative.display().to_string();
        for (index, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices(&expected.1) {
                let after = &line[at + expected.1.len()..];
                if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-') {
                    continue; // gpu-topology-fleet-summary and the like
                }
                let before = &line[..at];
                let namespace = if let Some(prefix) = before.strip_suffix('/') {
                    prefix
                        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                        .next()
                } else if let Some(prefix) = before.strip_suffix(' ') {
                    let words: Vec<&str> = prefix.split_whitespace().collect();
                    match words.as_slice() {
                        [.., "-n", namespace] | [.., "--namespace", namespace] => Some(*namespace),
                        _ => None,
                    }
                } else {
                    None
                };
                if let Some(namespace) = namespace {
                    if namespace != expected.0 {
                        wrong.push(format!(
                            "{file}:{}: {namespace}/{} but the summarizer writes {}/{}",
                            index + 1,
                            expected.1,
                            expected.0,
                            expected.1
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
