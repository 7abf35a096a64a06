//! The GitHub workflows cannot run here; these tests check what can be
//! checked without GitHub: CI runs the README's test command through
//! `.ci/run`, a release is gated on CI and signs what it publishes, the
//! labeler image is built for amd64 and arm64, and every third-party action is
//! pinned to a commit (as the official Kubewarden policies pin theirs).

use serde_yaml::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(file: &str) -> Value {
    let path = repo().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn jobs(workflow: &Value) -> impl Iterator<Item = (&str, &Value)> {
    workflow["jobs"]
        .as_mapping()
        .expect("jobs")
        .iter()
        .map(|(name, job)| (name.as_str().unwrap(), job))
}

/// The `run:` scripts of a job's steps.
fn scripts(job: &Value) -> Vec<&str> {
    job["steps"]
        .as_sequence()
        .map(|steps| steps.iter().filter_map(|s| s["run"].as_str()).collect())
        .unwrap_or_default()
}

fn all_scripts(workflow: &Value) -> String {
    jobs(workflow)
        .flat_map(|(_, job)| scripts(job))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn ci_runs_the_ci_entry_point_on_every_change() {
    let ci = load(".github/workflows/ci.yml");
    let triggers = ci["on"].as_mapping().expect("on:");
    for trigger in ["push", "pull_request", "workflow_call"] {
        assert!(triggers.contains_key(trigger), "ci.yml lacks on.{trigger}");
    }
    let runners: Vec<&str> = jobs(&ci)
        .filter(|(_, job)| scripts(job).iter().any(|s| s.trim() == ".ci/run"))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(runners.len(), 1, "one ci.yml job runs .ci/run: {runners:?}");
}

/// `.ci/run` prepares a fresh Debian machine and runs the README's command.
#[test]
fn ci_entry_point_installs_its_tools_and_runs_make_test() {
    let script = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    for needed in [
        "wasm32-wasip1",
        "rustfmt",
        "clippy",
        "(binaryen)",
        "(jq)",
        "(bats)",
        "python3-venv",
    ] {
        assert!(script.contains(needed), ".ci/run does not install {needed}");
    }
    assert_eq!(
        script.lines().rev().find(|line| !line.starts_with('#')),
        Some("make test")
    );
}

#[test]
fn release_is_gated_on_ci_and_signs_what_it_publishes() {
    let release = load(".github/workflows/release.yml");
    assert_eq!(
        release["on"]["push"]["tags"],
        serde_yaml::from_str::<Value>("[\"v*\"]").unwrap()
    );
    assert_eq!(
        release["jobs"]["ci"]["uses"].as_str(),
        Some("./.github/workflows/ci.yml")
    );
    let policy = &release["jobs"]["policy"];
    let needs: Vec<&str> = policy["needs"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(needs.contains(&"ci"), "policy job needs ci: {needs:?}");
    assert_eq!(policy["permissions"]["id-token"].as_str(), Some("write"));
    let scripts = all_scripts(&release);
    for step in [
        "install -y --no-install-recommends binaryen",
        "make annotated-policy.wasm",
        "kwctl push",
        "cosign sign --yes \"${immutable_ref}\"",
        "cosign verify",
        "cosign sign-blob",
        "gh release create",
        "docker buildx imagetools create",
    ] {
        assert!(scripts.contains(step), "release.yml never runs {step:?}");
    }
}

#[test]
fn labeler_image_is_built_for_amd64_and_arm64() {
    let release = load(".github/workflows/release.yml");
    let job = &release["jobs"]["labeler-image"];
    let arches: BTreeSet<&str> = job["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|entry| entry["arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, BTreeSet::from(["amd64", "arm64"]));
    let build = job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|step| {
            step["uses"]
                .as_str()
                .is_some_and(|uses| uses.starts_with("docker/build-push-action@"))
        })
        .expect("a docker/build-push-action step");
    let dockerfile = build["with"]["file"].as_str().unwrap();
    assert!(repo().join(dockerfile).is_file(), "{dockerfile}");
}

/// Every YAML file under `.github/`.
fn github_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            github_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(path);
        }
    }
}

/// `uses: owner/repo@<40 hex digits>`; local actions (`./...`) need no pin.
fn is_pinned(uses: &str) -> bool {
    uses.starts_with("./")
        || uses
            .split_once('@')
            .is_some_and(|(_, rev)| rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[test]
fn third_party_actions_are_pinned_to_commits() {
    let mut files = Vec::new();
    github_files(&repo().join(".github"), &mut files);
    assert!(files.len() >= 3, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            let Some(uses) = line.trim().trim_start_matches("- ").strip_prefix("uses:") else {
                continue;
            };
            let uses = uses.split('#').next().unwrap().trim();
            assert!(is_pinned(uses), "{}: {uses} is not pinned", file.display());
        }
    }
}

/// The release attaches the binaries of every package in the binaries job's
/// BINARIES list (the labeler today; the gpu-topology CLI is one more line),
/// built natively for x86_64 and aarch64, and one signed SHA256SUMS over all
/// release assets.
#[test]
fn release_attaches_binaries_and_signed_checksums() {
    let release = load(".github/workflows/release.yml");
    let job = &release["jobs"]["binaries"];
    let targets: BTreeSet<&str> = job["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|entry| entry["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        BTreeSet::from(["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"])
    );
    let binaries: Vec<Vec<&str>> = job["env"]["BINARIES"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|fields: &Vec<&str>| !fields.is_empty())
        .collect();
    assert!(
        binaries.contains(&vec![
            "gpu-topology-labeler",
            "gpu-topology-labeler",
            "nvml"
        ]),
        "{binaries:?}"
    );
    // Each listed package is a crate of the repository (its Cargo.toml at the
    // root or one directory down) that names that binary.
    let manifests: Vec<String> = std::iter::once(repo().join("Cargo.toml"))
        .chain(
            std::fs::read_dir(repo())
                .unwrap()
                .map(|e| e.unwrap().path().join("Cargo.toml")),
        )
        .filter(|p| p.is_file())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for fields in &binaries {
        let [package, binary, _features] = fields.as_slice() else {
            panic!("BINARIES line {fields:?} is not `package binary features`");
        };
        assert!(
            manifests
                .iter()
                .any(|m| m.contains(&format!("name = \"{package}\""))
                    && m.contains(&format!("name = \"{binary}\""))),
            "no crate {package} with a binary {binary}"
        );
    }
    let checksums = scripts(&release["jobs"]["checksums"]).join("\n");
    for step in [
        "sha256sum",
        "cosign sign-blob",
        "gh release download",
        "gh release upload",
    ] {
        assert!(
            checksums.contains(step),
            "the checksums job never runs {step:?}"
        );
    }
    let needs = release["jobs"]["checksums"]["needs"].as_sequence().unwrap();
    for job in ["policy", "binaries"] {
        assert!(needs.iter().any(|n| n == job), "checksums needs {job}");
    }
}
