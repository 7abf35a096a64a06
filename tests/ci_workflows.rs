//! The GitHub workflows cannot run here; these tests check what can be
//! checked without GitHub: CI runs the README's test command through
//! `.ci/run`, a release is gated on CI and signs what it publishes, the
//! labeler's and the tool's images are built for amd64 and arm64 from
//! Dockerfiles that exist, merged and signed, their binaries are built,
//! attached and checksummed, and every third-party action is pinned to a
//! commit (as the official Kubewarden policies pin theirs).

use rstest::rstest;
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

/// The step of `job` that uses the action `uses` (`owner/repo@`).
fn step<'a>(job: &'a Value, uses: &str) -> &'a Value {
    job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|step| step["uses"].as_str().is_some_and(|u| u.starts_with(uses)))
        .unwrap_or_else(|| panic!("no {uses} step"))
}

/// A GitHub artifact name pattern with `*` wildcards only, as the release
/// writes them.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            name.starts_with(head)
                && (head.len()..=name.len())
                    .any(|at| name.is_char_boundary(at) && glob_matches(tail, &name[at..]))
        }
    }
}

/// `${{ matrix.KEY }}` of `text` replaced by `entry`'s values.
fn expand(text: &str, entry: &Value) -> String {
    let mut out = text.to_owned();
    for (key, value) in entry.as_mapping().unwrap() {
        let key = key.as_str().unwrap();
        out = out.replace(&format!("${{{{ matrix.{key} }}}}"), value.as_str().unwrap());
    }
    out
}

/// Each published image is built by the `images` job from a Dockerfile
/// that exists, natively on amd64 and arm64 (one runner each, no QEMU),
/// pushed and signed by digest; the `image-manifests` job merges the two
/// digests into one tag of the crates' version, signs it and verifies the
/// signature. docs/release.md lists both images.
#[rstest]
#[case::labeler("gpu-topology-labeler", "examples/labeler/Dockerfile")]
#[case::tool("gpu-topology", "examples/cli/Dockerfile")]
fn release_builds_signs_and_merges_the_image(#[case] image: &str, #[case] dockerfile: &str) {
    let release = load(".github/workflows/release.yml");
    let job = &release["jobs"]["images"];
    let matrix = job["strategy"]["matrix"]["include"].as_sequence().unwrap();
    let entries: Vec<&Value> = matrix.iter().filter(|e| e["image"] == image).collect();
    let arches: BTreeSet<(&str, &str)> = entries
        .iter()
        .map(|e| (e["arch"].as_str().unwrap(), e["runner"].as_str().unwrap()))
        .collect();
    assert_eq!(
        arches,
        BTreeSet::from([("amd64", "ubuntu-24.04"), ("arm64", "ubuntu-24.04-arm")]),
        "{image}"
    );
    for entry in &entries {
        assert_eq!(entry["dockerfile"].as_str(), Some(dockerfile), "{image}");
    }
    assert!(repo().join(dockerfile).is_file(), "{dockerfile}");
    assert_eq!(job["runs-on"].as_str(), Some("${{ matrix.runner }}"));
    assert_eq!(job["permissions"]["id-token"].as_str(), Some("write"));
    assert_eq!(job["permissions"]["packages"].as_str(), Some("write"));

    let build = &step(job, "docker/build-push-action@")["with"];
    for entry in &entries {
        let arch = entry["arch"].as_str().unwrap();
        assert_eq!(expand(build["file"].as_str().unwrap(), entry), dockerfile);
        assert_eq!(
            expand(build["platforms"].as_str().unwrap(), entry),
            format!("linux/{arch}")
        );
        let outputs = expand(build["outputs"].as_str().unwrap(), entry);
        assert!(
            outputs.contains(&format!(
                "name=ghcr.io/${{{{ github.repository_owner }}}}/{image},push-by-digest=true"
            )) && outputs.contains("push=true"),
            "{outputs}"
        );
    }
    let signing = expand(&scripts(job).join("\n"), entries[0]);
    assert!(
        signing.contains("cosign sign --yes")
            && signing.contains(&format!("/{image}@${{{{ steps.build.outputs.digest }}}}")),
        "the images job does not sign {image} by digest:\n{signing}"
    );

    // The merge: this image's two digests, and no other image's.
    let manifests = &release["jobs"]["image-manifests"];
    let needs = manifests["needs"].as_sequence().unwrap();
    assert!(needs.iter().any(|n| n == "images") && needs.iter().any(|n| n == "version"));
    let images = manifests["strategy"]["matrix"]["image"]
        .as_sequence()
        .unwrap();
    assert!(
        images.iter().any(|i| i == image),
        "image-manifests lacks {image}"
    );
    let this = serde_yaml::from_str::<Value>(&format!("image: {image}")).unwrap();
    let pattern = expand(
        step(manifests, "actions/download-artifact@")["with"]["pattern"]
            .as_str()
            .unwrap(),
        &this,
    );
    let uploaded = step(job, "actions/upload-artifact@")["with"]["name"]
        .as_str()
        .unwrap();
    for entry in matrix {
        let name = expand(uploaded, entry);
        assert_eq!(
            glob_matches(&pattern, &name),
            entry["image"] == image,
            "{image}'s merge downloads {pattern}: {name}"
        );
    }
    assert_eq!(
        expand(manifests["env"]["IMAGE"].as_str().unwrap(), &this),
        format!("ghcr.io/${{{{ github.repository_owner }}}}/{image}")
    );
    let merge = scripts(manifests).join("\n");
    for needed in [
        "tag=\"${IMAGE}:${{ needs.version.outputs.version }}\"",
        "for arch in amd64 arm64",
        "docker buildx imagetools create -t \"${tag}\"",
        "cosign sign --yes \"${IMAGE}@${digest}\"",
        "cosign verify",
    ] {
        assert!(
            merge.contains(needed),
            "image-manifests never runs {needed:?}"
        );
    }
    let table = std::fs::read_to_string(repo().join("docs/release.md")).unwrap();
    assert!(
        table.contains(&format!("`ghcr.io/gpu-topology-policy/{image}:X.Y.Z`"))
            && table.contains(&format!("`{dockerfile}`")),
        "docs/release.md does not list {image} and {dockerfile}"
    );
}

/// The images' Dockerfiles: a Rust build stage that builds exactly the
/// binary the image runs, and a distroless runtime (no shell, no package
/// manager) that runs as the non-root uid 65532.
#[rstest]
#[case::labeler(
    "examples/labeler/Dockerfile",
    "gpu-topology-labeler",
    "gpu-topology-labeler"
)]
#[case::tool("examples/cli/Dockerfile", "gpu-topology-cli", "gpu-topology")]
fn dockerfile_builds_the_binary_and_runs_it_as_non_root(
    #[case] dockerfile: &str,
    #[case] package: &str,
    #[case] binary: &str,
) {
    let text = std::fs::read_to_string(repo().join(dockerfile)).unwrap();
    let from: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(from.len(), 2, "{dockerfile}: {from:?}");
    assert!(from[0].starts_with("FROM rust:") && from[0].ends_with(" AS build"));
    assert_eq!(from[1], "FROM gcr.io/distroless/cc-debian12:nonroot");
    assert!(
        text.contains(&format!("cargo build --release --locked -p {package}")),
        "{dockerfile} does not build {package}"
    );
    assert!(text.contains(&format!("target/release/{binary} ")));
    assert!(text.lines().any(|l| l.trim() == "USER 65532:65532"));
    assert_eq!(
        text.lines().rfind(|l| l.starts_with("ENTRYPOINT ")),
        Some(format!("ENTRYPOINT [\"/usr/local/bin/{binary}\"]").as_str())
    );
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

/// `package binary features` of each line of the binaries job's BINARIES.
fn binaries(release: &Value) -> Vec<Vec<String>> {
    release["jobs"]["binaries"]["env"]["BINARIES"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .filter(|fields: &Vec<String>| !fields.is_empty())
        .collect()
}

/// The release attaches the binaries of every package in the binaries job's
/// BINARIES list, built natively for x86_64 and aarch64, and one signed
/// SHA256SUMS over all release assets.
#[test]
fn release_attaches_binaries_and_signed_checksums() {
    let release = load(".github/workflows/release.yml");
    let job = &release["jobs"]["binaries"];
    let targets: BTreeSet<(&str, &str)> = job["strategy"]["matrix"]["include"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["target"].as_str().unwrap(),
                entry["runner"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        targets,
        BTreeSet::from([
            ("x86_64-unknown-linux-gnu", "ubuntu-24.04"),
            ("aarch64-unknown-linux-gnu", "ubuntu-24.04-arm")
        ])
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
    for fields in &binaries(&release) {
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

/// Each binary the release ships: built by the binaries job on each target
/// as `<binary>-<version>-<target>`, uploaded as that target's artifact,
/// and attached to the release by the checksums job, which lists it in the
/// signed SHA256SUMS. docs/release.md lists it.
#[rstest]
#[case::labeler("gpu-topology-labeler", "gpu-topology-labeler", "nvml")]
#[case::tool("gpu-topology-cli", "gpu-topology", "-")]
fn release_builds_uploads_and_checksums_the_binary(
    #[case] package: &str,
    #[case] binary: &str,
    #[case] features: &str,
) {
    let release = load(".github/workflows/release.yml");
    assert!(
        binaries(&release).contains(&vec![
            package.to_owned(),
            binary.to_owned(),
            features.to_owned()
        ]),
        "BINARIES lacks `{package} {binary} {features}`: {:?}",
        binaries(&release)
    );
    let job = &release["jobs"]["binaries"];
    let build = scripts(job).join("\n");
    for needed in [
        "cargo build --release --locked -p \"${package}\" --bin \"${binary}\"",
        "install -m 0755 \"target/release/${binary}\"",
        "\"${RUNNER_TEMP}/binaries/${binary}-${{ needs.version.outputs.version }}-${{ matrix.target }}\"",
        "done <<< \"${BINARIES}\"",
    ] {
        assert!(build.contains(needed), "the binaries job lacks {needed:?}");
    }
    let upload = &step(job, "actions/upload-artifact@")["with"];
    assert_eq!(
        upload["name"].as_str(),
        Some("binaries-${{ matrix.target }}")
    );
    assert_eq!(
        upload["path"].as_str(),
        Some("${{ runner.temp }}/binaries/*")
    );
    let checksums = &release["jobs"]["checksums"];
    let download = &step(checksums, "actions/download-artifact@")["with"];
    assert_eq!(download["pattern"].as_str(), Some("binaries-*"));
    assert_eq!(download["merge-multiple"].as_bool(), Some(true));
    let attach = scripts(checksums).join("\n");
    for needed in [
        "binaries=(*)",
        "sha256sum -- * > SHA256SUMS",
        "cosign sign-blob --yes --bundle SHA256SUMS.sigstore.json SHA256SUMS",
        "\"${binaries[@]}\" SHA256SUMS SHA256SUMS.sigstore.json",
    ] {
        assert!(
            attach.contains(needed),
            "the checksums job lacks {needed:?}"
        );
    }
    let table = std::fs::read_to_string(repo().join("docs/release.md")).unwrap();
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        assert!(
            table.contains(&format!("`{binary}-X.Y.Z-{target}`")),
            "docs/release.md does not list {binary}-X.Y.Z-{target}"
        );
    }
}
