//! Keeps the documentation whole (issue #26, item 9):
//!
//! - the README is short and for operators: what it does, prerequisites,
//!   deployment, how to see it work, an index of docs/, and the two
//!   developer commands CI runs, verbatim, near the end;
//! - every operator document has a Chinese edition at parity: the same
//!   headings, code blocks, code spans (settings keys, labels, commands,
//!   file paths, quoted messages), links and named keys; the Chinese
//!   README says which documents are English only;
//! - every relative link of every Markdown file resolves, anchors included,
//!   and every repository path an operator document names exists;
//! - the pod the README's "See it work" creates is answered as it says.
//!
//! The policy-message tables of the guide are checked by guide.rs.

use e2e_tests::host::ContextAwareResource;
use e2e_tests::markdown::{
    anchors, code_blocks, code_spans, first_line, headings, links, named_keys, shell_blocks,
};
use e2e_tests::repo_files::repo_files;
use e2e_tests::{repo_root, shared_module, HostCapabilities, Session};
use rstest::rstest;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const README: &str = "README.md";
const CHINESE_README: &str = "README.zh-CN.md";
/// What a Chinese edition's file name adds to its English one's.
const CHINESE_SUFFIX: &str = ".zh-CN.md";
/// The first line of a shell block that cannot run without a cluster.
const NEEDS_CLUSTER: &str = "# needs a cluster";
/// The first line of a shell block that guide.rs runs.
const RUN_IN_GUIDE_TEST: &str = "# runs in e2e-tests/tests/guide.rs";
/// The first line of a shell block of docs/cli.md (and its Chinese edition)
/// that cli/tests/documented.rs runs, checking its output and exit code.
const RUN_IN_CLI_TEST: &str = "# runs in cli/tests/documented.rs";
/// The documents whose blocks cli/tests/documented.rs runs.
const CLI_DOCS: [&str; 2] = ["docs/cli.md", "docs/cli.zh-CN.md"];
/// docs/ files for developers, English only (the Chinese README says so).
const ENGLISH_ONLY: [&str; 4] = [
    "docs/development.md",
    "docs/how-it-works.md",
    "docs/release.md",
    "docs/support-matrix.md",
];
/// The README's sections, in order: the first screen is the operator's.
const README_SECTIONS: [&str; 7] = [
    "What it does",
    "Prerequisites",
    "Deploy",
    "See it work",
    "Documentation",
    "Development",
    "License",
];
/// The README is embedded in the module and shown on Artifact Hub.
const README_MAX_LINES: usize = 160;
/// The README's two commands, which CI (`.ci/run`) and a newcomer run.
const DEVELOPER_COMMANDS: [&str; 2] = [
    "rustup target add wasm32-wasip1 && make demo",
    "rustup target add wasm32-wasip1 && rustup component add rustfmt clippy && make test",
];
/// The README's command that shows the policy at work on a cluster.
const DRY_RUN: &str = "kubectl create --dry-run=server -o yaml -f ";

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The Chinese edition of an English document.
fn chinese_edition(english: &str) -> String {
    format!("{}{CHINESE_SUFFIX}", english.trim_end_matches(".md"))
}

/// Every Markdown file of the repository, relative to its root (build
/// output, VCS data and hidden folders and files left out).
fn markdown_files() -> Vec<String> {
    let root = repo_root();
    let hidden = |path: &Path| {
        path.components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
    };
    repo_files(&root, &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|path| path.extension().is_some_and(|e| e == "md") && !hidden(path))
        .map(|path| path.to_string_lossy().into_owned())
        .collect()
}

/// The operator documents that have a Chinese edition: the README and
/// every docs/*.md not for developers only.
fn translated() -> Vec<String> {
    let mut docs = vec![README.to_owned()];
    docs.extend(
        markdown_files()
            .into_iter()
            .filter(|f| f.starts_with("docs/") && !f.ends_with(CHINESE_SUFFIX))
            .filter(|f| !ENGLISH_ONLY.contains(&f.as_str())),
    );
    docs
}

#[test]
fn every_operator_document_has_a_chinese_edition_and_no_other_does() {
    let english = translated();
    assert!(
        english.len() >= 8,
        "too few operator documents: {english:?}"
    );
    let expected: BTreeSet<String> = english.iter().map(|e| chinese_edition(e)).collect();
    let found: BTreeSet<String> = markdown_files()
        .into_iter()
        .filter(|f| f.ends_with(CHINESE_SUFFIX))
        .collect();
    assert_eq!(
        found, expected,
        "Chinese editions (left) and operator docs (right)"
    );
    for doc in ENGLISH_ONLY {
        assert!(
            repo_root().join(doc).is_file(),
            "{doc} is listed but missing"
        );
    }
}

/// The Chinese README says, before its first section, which documents it
/// links to are English only.
#[test]
fn the_chinese_readme_names_the_documents_that_are_english_only() {
    let text = read(CHINESE_README);
    let note = &text[..text.find("\n## ").expect("a section")];
    let english_only: BTreeSet<String> = links(&text)
        .into_iter()
        .map(|l| l.split('#').next().unwrap().to_owned())
        .filter(|l| l.ends_with(".md") && !l.ends_with(CHINESE_SUFFIX) && l != README)
        .collect();
    assert!(!english_only.is_empty());
    for doc in &english_only {
        assert!(
            note.contains(&format!("]({doc})")),
            "{CHINESE_README} links {doc}, English only, without saying so at the top"
        );
    }
}

/// A link target as both languages should have it: a Chinese edition
/// stands for its English document, the link between the two editions and
/// anchors (which are in each language's words) dropped.
fn normalized_links(doc: &str, text: &str) -> BTreeSet<String> {
    let own = Path::new(doc).file_name().unwrap().to_string_lossy();
    let own_english = own.replace(CHINESE_SUFFIX, ".md");
    links(text)
        .into_iter()
        .map(|l| l.split('#').next().unwrap().replace(CHINESE_SUFFIX, ".md"))
        .filter(|l| !l.is_empty() && *l != own_english)
        .collect()
}

#[rstest]
fn the_chinese_edition_is_at_parity(
    #[values(
        "README.md",
        "docs/guide.md",
        "docs/settings.md",
        "docs/labels.md",
        "docs/cluster-view.md",
        "docs/workload-controllers.md",
        "docs/kubelet-model.md",
        "docs/known-limits.md",
        "docs/cli.md",
        "docs/binding-check.md"
    )]
    english: &str,
    #[values("headings", "code blocks", "code spans", "links", "named keys")] aspect: &str,
) {
    let chinese = chinese_edition(english);
    let (en, zh) = (read(english), read(&chinese));
    let (left, right): (Vec<String>, Vec<String>) = match aspect {
        "headings" => {
            let levels = |t: &str| headings(t).iter().map(|(l, _)| l.to_string()).collect();
            (levels(&en), levels(&zh))
        }
        "code blocks" => {
            let blocks = |t: &str| {
                code_blocks(t)
                    .into_iter()
                    .map(|b| format!("```{}\n{}", b.lang, b.body))
                    .collect()
            };
            (blocks(&en), blocks(&zh))
        }
        "code spans" => {
            let spans = |t: &str| code_spans(t).into_iter().collect::<BTreeSet<_>>();
            (
                spans(&en).into_iter().collect(),
                spans(&zh).into_iter().collect(),
            )
        }
        "links" => (
            normalized_links(english, &en).into_iter().collect(),
            normalized_links(&chinese, &zh).into_iter().collect(),
        ),
        "named keys" => (
            named_keys(&en).into_iter().collect(),
            named_keys(&zh).into_iter().collect(),
        ),
        _ => unreachable!(),
    };
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        a.iter().filter(|x| !b.contains(x)).cloned().collect()
    };
    assert!(
        left == right,
        "{aspect} of {english} and {chinese} differ\nonly in {english}: {:?}\nonly in {chinese}: {:?}",
        only(&left, &right),
        only(&right, &left)
    );
}

/// Every relative link of every Markdown file names a file or folder that
/// exists, and an anchor that is a heading of the document it points to.
#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = read(&file);
        let dir = Path::new(&file).parent().unwrap().to_path_buf();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match link.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (link.as_str(), None),
            };
            let target: PathBuf = if path.is_empty() {
                PathBuf::from(&file)
            } else {
                normalize(&dir.join(path))
            };
            let absolute = repo_root().join(&target);
            if !absolute.exists() {
                broken.push(format!("{file}: {link}: no {}", target.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let is_markdown = target.extension().is_some_and(|e| e == "md");
                let known = is_markdown
                    && anchors(&std::fs::read_to_string(&absolute).unwrap()).contains(anchor);
                if !known {
                    broken.push(format!("{file}: {link}: no heading #{anchor}"));
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `a/b/../c` as `a/c`, so that a link may climb out of its folder.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The repository paths a text names (in code spans and code blocks):
/// tokens under a top-level folder of the repository.
fn named_paths(text: &str) -> BTreeSet<String> {
    const ROOTS: [&str; 7] = [
        "examples/",
        "docs/",
        "labeler/",
        "topology/",
        "src/",
        "e2e-tests/",
        "tests/",
    ];
    let blocks = code_blocks(text).into_iter().map(|b| b.body);
    code_spans(text)
        .into_iter()
        .chain(blocks)
        .flat_map(|code| {
            code.split(|c: char| c.is_whitespace() || "'\"=,;:()[]{}".contains(c))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .map(|token| token.trim_end_matches('.').to_owned())
        .filter(|token| ROOTS.iter().any(|root| token.starts_with(root)))
        .filter(|token| !token.contains(['<', '*', '$']))
        .collect()
}

#[test]
fn every_path_an_operator_document_names_exists() {
    let mut missing = Vec::new();
    for english in translated() {
        for doc in [english.clone(), chinese_edition(&english)] {
            for path in named_paths(&read(&doc)) {
                if !repo_root().join(&path).exists() {
                    missing.push(format!("{doc}: {path}"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but missing:\n{}",
        missing.join("\n")
    );
}

/// The shell blocks of the operator documents say how they run; the guide's
/// run-here blocks are run by guide.rs, docs/cli.md's by the cli crate's
/// tests/documented.rs, and the README's developer commands
/// are checked below.
#[test]
fn every_operator_shell_block_is_marked() {
    let developer_block = readme_developer_block();
    for english in translated() {
        for doc in [english.clone(), chinese_edition(&english)] {
            for block in shell_blocks(&read(&doc)) {
                let marked = matches!(
                    first_line(&block),
                    NEEDS_CLUSTER | RUN_IN_GUIDE_TEST | RUN_IN_CLI_TEST
                );
                let developer = block.body == developer_block;
                assert!(
                    marked || developer,
                    "{doc}:{}: a shell block must start with `{NEEDS_CLUSTER}`:\n{}",
                    block.line,
                    block.body
                );
                // documented.rs reads only the CLI's documents: a block
                // marked so elsewhere would be run by nothing.
                assert!(
                    first_line(&block) != RUN_IN_CLI_TEST || CLI_DOCS.contains(&doc.as_str()),
                    "{doc}:{}: `{RUN_IN_CLI_TEST}` runs only blocks of {CLI_DOCS:?}",
                    block.line
                );
            }
        }
    }
}

/// The README's sections, each with its text.
fn readme_sections() -> Vec<(String, String)> {
    let text = read(README);
    text.split("\n## ")
        .skip(1)
        .map(|section| {
            let (title, body) = section.split_once('\n').unwrap_or((section, ""));
            (title.trim().to_owned(), body.to_owned())
        })
        .collect()
}

/// The body of the shell block of the README's Development section.
fn readme_developer_block() -> String {
    let sections = readme_sections();
    let (_, body) = sections
        .iter()
        .find(|(title, _)| title == "Development")
        .expect("the README has a Development section");
    let blocks = shell_blocks(body);
    assert_eq!(blocks.len(), 1, "one shell block in Development");
    blocks[0].body.clone()
}

#[test]
fn the_readme_is_short_and_for_operators_first() {
    let text = read(README);
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "{README} has {lines} lines, more than {README_MAX_LINES}: move the detail to docs/"
    );
    let titles: Vec<String> = readme_sections().into_iter().map(|(t, _)| t).collect();
    assert_eq!(titles, README_SECTIONS);
}

/// CI runs the README's test command; both commands stay in the README as
/// they are, each on its own line of the Development block.
#[test]
fn the_readme_keeps_the_developer_commands_verbatim() {
    let block = readme_developer_block();
    let commands: Vec<&str> = block.lines().filter(|l| !l.starts_with('#')).collect();
    let commands: Vec<&str> = commands.into_iter().filter(|l| !l.is_empty()).collect();
    assert_eq!(commands, DEVELOPER_COMMANDS);
    // .ci/run ends with `make test` (tests/ci_workflows.rs).
    assert!(DEVELOPER_COMMANDS[1].ends_with("&& make test"));
}

/// Every document under docs/ is in the README's index.
#[test]
fn the_readme_indexes_every_document() {
    let sections = readme_sections();
    let (_, index) = sections
        .iter()
        .find(|(title, _)| title == "Documentation")
        .unwrap();
    let indexed: BTreeSet<String> = links(index).into_iter().collect();
    for doc in markdown_files() {
        if doc.starts_with("docs/") && !doc.ends_with(CHINESE_SUFFIX) {
            assert!(indexed.contains(&doc), "{doc} is not in the README's index");
        }
    }
}

/// The README's dry run, offline: the pod it names, with the settings and
/// grants of the policy it deploys, against the demo's replayed fleet, is
/// admitted Guaranteed (whole CPUs for the GPU container) with node
/// affinity on the shape label, as the README says.
#[test]
fn the_see_it_work_pod_is_answered_as_the_readme_says() {
    let readme = read(README);
    let pod_file = readme
        .lines()
        .find_map(|l| l.strip_prefix(DRY_RUN))
        .expect("the README shows the dry run")
        .trim();
    let pod: Value = serde_yaml::from_str(&read(pod_file)).unwrap();
    let policy: Value = serde_yaml::from_str(&read("examples/gpu-topology.yaml")).unwrap();
    assert!(
        readme.contains("kubectl apply -f examples/gpu-topology.yaml"),
        "the README deploys examples/gpu-topology.yaml"
    );
    let settings = policy["spec"]["settings"].clone();
    let granted: BTreeSet<ContextAwareResource> =
        serde_json::from_value(policy["spec"]["contextAwareResources"].clone()).unwrap();
    let session = Session::load(&repo_root().join("examples/cluster/fleet.yml")).unwrap();
    let request = json!({
        "uid": "see-it-work",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "default",
        "name": pod["metadata"]["name"],
        "userInfo": {"username": "someone"},
        "object": pod,
    });
    let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
    let capabilities = Arc::new(HostCapabilities::new(granted, Some(&session)));
    let outcome = module
        .instantiate(capabilities)
        .unwrap()
        .validate(&request, &settings)
        .unwrap();
    assert!(outcome.allowed, "{:?}", outcome.message);
    let admitted = outcome.patched_object.expect("the pod is mutated");
    for container in admitted["spec"]["containers"].as_array().unwrap() {
        let resources = &container["resources"];
        for resource in ["cpu", "memory"] {
            assert_eq!(
                resources["requests"][resource], resources["limits"][resource],
                "{resource} of {container}"
            );
            assert!(resources["limits"][resource].is_string(), "{container}");
        }
        if !resources["limits"]["nvidia.com/gpu"].is_null() {
            let cpu = resources["limits"]["cpu"].as_str().unwrap();
            assert!(cpu.parse::<u32>().is_ok(), "whole CPUs, not {cpu}");
        }
    }
    let affinity = admitted["spec"]["affinity"]["nodeAffinity"].to_string();
    assert!(
        affinity.contains("gpu-topology.io/shape"),
        "no shape affinity: {affinity}"
    );
}
