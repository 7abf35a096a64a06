//! docs/support-matrix.md is true, and what it promises is tested.
//!
//! Every Kubernetes object the repository ships (examples/, docs/) or quotes
//! (any `*.md`) validates against the Kubernetes OpenAPI schemas of the oldest
//! and the newest supported version, in strict mode, and against the vendored
//! Kubewarden and NFD CRDs: `tests/schemas/validate.py` with the pinned
//! packages of `tests/schemas/requirements.txt` (`make schema-venv`). The
//! versions come from docs/support-matrix.md, which the tests below hold
//! to the files that pin them. The rule for what is an object, and what
//! is skipped, is the script's docstring and the matrix's "What validated
//! means".

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The validator's Python: `SCHEMA_PYTHON`, else the venv `make schema-venv`
/// creates.
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("SCHEMA_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = repo().join("target/schema-venv/bin/python3");
    assert!(
        venv.is_file(),
        "{} is missing: run `make schema-venv` (python3 -m venv + pip install -r \
         tests/schemas/requirements.txt), or set SCHEMA_PYTHON to a Python that has them",
        venv.display()
    );
    venv
}

#[test]
fn every_object_validates_against_the_oldest_and_newest_kubernetes_and_the_crds() {
    let (oldest, newest) = kubernetes_range();
    let output = Command::new(python())
        .arg(repo().join("tests/schemas/validate.py"))
        .args(["--kubernetes", &oldest, "--kubernetes", &newest])
        .arg(repo())
        .output()
        .expect("run tests/schemas/validate.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "schema validation failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // It looked at the manifests: at least the labeler's, the policy's and
    // the rendered per-cluster files.
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("schemas: ") && l.contains("objects in"))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    let objects: usize = summary["schemas: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(objects >= 40, "{summary}");
    assert!(
        summary.contains(&format!("Kubernetes {oldest}, {newest} (strict")),
        "{summary}"
    );
}

// ---- docs/support-matrix.md's table ----

pub fn matrix_text() -> String {
    let path = repo().join("docs/support-matrix.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The "Supported" cell of the row whose first cell starts with `component`.
pub fn supported(component: &str) -> String {
    let text = matrix_text();
    let row = text
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
        .find(|cells| cells.get(1).is_some_and(|c| c.starts_with(component)))
        .unwrap_or_else(|| panic!("docs/support-matrix.md has no row for {component}"));
    row[2].to_owned()
}

/// The Kubernetes row's "A to B" as (A, B).
pub fn kubernetes_range() -> (String, String) {
    let cell = supported("Kubernetes");
    let (oldest, newest) = cell
        .split_once(" to ")
        .unwrap_or_else(|| panic!("Kubernetes row: {cell:?} is not \"1.X to 1.Y\""));
    (oldest.trim().to_owned(), newest.trim().to_owned())
}

fn repo_file(file: &str) -> String {
    let path = repo().join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The one `v1_NN` feature of the `k8s-openapi` dependency line of a Cargo.toml.
fn k8s_openapi_feature(cargo_toml: &str) -> String {
    let text = repo_file(cargo_toml);
    let line = text
        .lines()
        .find(|l| l.starts_with("k8s-openapi"))
        .unwrap_or_else(|| panic!("{cargo_toml}: no k8s-openapi dependency"));
    let start = line
        .find("\"v1_")
        .unwrap_or_else(|| panic!("{cargo_toml}: {line}"));
    let feature = &line[start + 1..];
    feature[..feature.find('"').unwrap()].to_owned()
}

/// `name==version` of tests/schemas/requirements.txt.
fn pinned(package: &str) -> String {
    let text = repo_file("tests/schemas/requirements.txt");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{package}==")))
        .unwrap_or_else(|| panic!("requirements.txt does not pin {package}"))
        .trim()
        .to_owned()
}

#[test]
fn oldest_kubernetes_is_the_k8s_openapi_feature_of_the_policy_and_the_labeler() {
    let (oldest, _) = kubernetes_range();
    let feature = format!("v{}", oldest.replace('.', "_"));
    for cargo_toml in ["Cargo.toml", "labeler/Cargo.toml"] {
        assert_eq!(k8s_openapi_feature(cargo_toml), feature, "{cargo_toml}");
    }
}

#[test]
fn newest_kubernetes_is_the_newest_schema_of_the_pinned_kubernetes_validate() {
    let (_, newest) = kubernetes_range();
    let version = pinned("kubernetes-validate");
    // kubernetes-validate X.Y.Z ships the schemas up to Kubernetes X.Y.
    let major_minor: Vec<&str> = version.split('.').take(2).collect();
    assert_eq!(
        major_minor.join("."),
        newest,
        "kubernetes-validate=={version}"
    );
    assert!(
        supported("Kubernetes").contains(&newest)
            && matrix_text().contains(&format!("kubernetes-validate` {version}")),
        "the matrix names kubernetes-validate {version}"
    );
}

#[test]
fn kwctl_is_the_version_ci_and_the_release_install() {
    let action = repo_file(".github/actions/install-release-tools/action.yml");
    let pinned = action
        .lines()
        .find_map(|l| l.trim().strip_prefix("KWCTL_VERSION=\"v"))
        .and_then(|v| v.strip_suffix('"'))
        .expect("KWCTL_VERSION in install-release-tools");
    assert_eq!(supported("kwctl"), pinned);
}

/// "vX.Y.Z or later" / "X.Y or later" of a row.
fn minimum(component: &str) -> String {
    let cell = supported(component);
    cell.strip_suffix(" or later")
        .unwrap_or_else(|| panic!("{component}: {cell:?} is not \"... or later\""))
        .to_owned()
}

#[test]
fn nfd_minimum_is_what_the_nfd_manifests_require() {
    let nfd = minimum("Node Feature Discovery");
    let short = nfd.trim_end_matches(".0");
    for manifest in [
        "examples/labeler/daemonset-nodefeature.yaml",
        "examples/labeler/daemonset-nfd.yaml",
    ] {
        let header: String = repo_file(manifest)
            .lines()
            .take_while(|l| l.starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            header.contains(&format!("NFD {nfd} or later"))
                || header.contains(&format!("NFD {short} or later")),
            "{manifest}'s header does not require NFD {nfd} or later"
        );
    }
    assert!(repo_file("labeler/README.md").contains(&format!("NFD {short} or later")));
}

#[test]
fn gpu_operator_minimum_is_the_first_release_bundling_that_nfd() {
    let operator = minimum("NVIDIA GPU Operator");
    let nfd = minimum("Node Feature Discovery");
    let short = nfd.trim_end_matches(".0");
    // labeler/README.md's GPU Operator table: "| 23.9 and later | v0.14 or later |".
    let readme = repo_file("labeler/README.md");
    assert!(
        readme.contains(&format!("| {operator} and later | {short} or later |")),
        "labeler/README.md's GPU Operator table does not map {operator} to NFD {short}"
    );
}

#[test]
fn kubewarden_minimum_is_what_the_readme_says_field_masks_need() {
    let kubewarden = minimum("Kubewarden");
    // The README or a page under docs/ (where wip/docs may move it) says why.
    let mut texts = vec![repo_file("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            texts.push(std::fs::read_to_string(&path).unwrap());
        }
    }
    let claim = format!("Kubewarden {kubewarden} and later");
    assert!(
        texts.iter().any(|t| t.contains(&claim)),
        "neither README.md nor docs/*.md says \"{claim}\""
    );
}

/// `make test` (and so CI) creates the validator's venv before the suite.
#[test]
fn make_test_installs_the_pinned_validator_first() {
    let makefile = repo_file("Makefile");
    let prerequisites = |target: &str| -> Vec<String> {
        let line = makefile
            .lines()
            .find(|l| l.starts_with(&format!("{target}:")))
            .unwrap_or_else(|| panic!("Makefile has no {target} target"));
        line[target.len() + 1..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    for target in ["test", "unit-tests"] {
        assert!(
            prerequisites(target).contains(&"schema-venv".to_owned()),
            "make {target} does not depend on schema-venv"
        );
    }
    assert!(makefile.contains("-r tests/schemas/requirements.txt"));
    // Every requirement is pinned to one version.
    for line in repo_file("tests/schemas/requirements.txt").lines() {
        let line = line.trim();
        if !line.is_empty() && !line.starts_with('#') {
            assert!(
                line.split_once("==").is_some_and(|(_, v)| !v.is_empty()),
                "{line} is not pinned"
            );
        }
    }
}
