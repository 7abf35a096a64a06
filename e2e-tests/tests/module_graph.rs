//! The crates' top-level modules depend on each other one way (issue #36:
//! "there are no circles"): within each crate, the graph of which module
//! names which through `crate::` is acyclic. A circle makes two modules one
//! in all but name, so a change to either can break the other; this test
//! names the circle when one comes back.
//!
//! The edges are read from the production sources: every `crate::NAME` in
//! a line that is not a comment, in files outside `tests/` folders and
//! `tests.rs` files, up to a file's `#[cfg(test)]` module.

use e2e_tests::repo_root;
use rstest::rstest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the other top-level modules of its crate it names.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level module a source file belongs to (`decide` for
/// `src/decide/fit.rs`, `lib` for `src/lib.rs`).
fn top_module(relative: &Path) -> String {
    let first = relative.components().next().expect("a file under src");
    let name = first.as_os_str().to_string_lossy();
    name.strip_suffix(".rs").unwrap_or(&name).to_owned()
}

/// The module names that follow `crate::` in `code`, a braced group
/// (`use crate::{exit, fleet};`) read name by name.
fn crate_paths(code: &str) -> Vec<&str> {
    let word_end = |text: &str| {
        text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(text.len())
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // `gpu_topology_policy::...` or `$crate::` are not this crate.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let item = item.trim_start();
                names.push(&item[..word_end(item)]);
            }
        } else {
            names.push(&rest[..word_end(rest)]);
        }
    }
    names.retain(|name| !name.is_empty());
    names
}

fn is_production(relative: &Path) -> bool {
    let test_file = relative.file_name().is_some_and(|name| name == "tests.rs");
    let test_folder = relative.components().any(|c| c.as_os_str() == "tests");
    !test_file && !test_folder
}

fn collect(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

fn module_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    collect(src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("under src");
        if !is_production(relative) {
            continue;
        }
        let from = top_module(relative);
        let text = std::fs::read_to_string(&file).expect("a source file");
        let code: String = text
            .lines()
            .map(str::trim_start)
            .take_while(|line| !line.starts_with("#[cfg(test)]"))
            .filter(|line| !line.starts_with("//"))
            .flat_map(|line| [line, "\n"])
            .collect();
        let edges = graph.entry(from.clone()).or_default();
        edges.extend(
            crate_paths(&code)
                .into_iter()
                .filter(|to| *to != from)
                .map(str::to_owned),
        );
    }
    // Items the crate root re-exports (`crate::NodeTopology`) are not
    // modules: only edges to the crate's modules count.
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for edges in graph.values_mut() {
        edges.retain(|to| modules.contains(to));
    }
    graph
}

/// A circle of the graph, as the modules along it, if there is one.
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|n| n == node).expect("on the path");
                let mut circle = path[start..].to_vec();
                circle.push(node.to_owned());
                return Some(circle);
            }
            None => {}
        }
        marks.insert(node.to_owned(), Mark::Open);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, marks, path) {
                return Some(circle);
            }
        }
        path.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

#[rstest]
#[case::the_policy("src")]
#[case::the_shared_crate("topology/src")]
#[case::the_labeler("labeler/src")]
#[case::the_tool("cli/src")]
fn top_level_modules_form_no_circle(#[case] src: &str) {
    let graph = module_graph(&repo_root().join(src));
    assert!(graph.len() > 3, "{src}: too few modules read: {graph:?}");
    if let Some(circle) = find_circle(&graph) {
        panic!("{src}: the modules {} form a circle", circle.join(" -> "));
    }
}

#[test]
fn a_circle_is_found_and_named() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")]
        .into_iter()
        .fold(Graph::new(), |mut graph, (from, to)| {
            graph.entry(from.into()).or_default().insert(to.into());
            graph
        });
    assert_eq!(
        find_circle(&graph),
        Some(["a", "b", "c", "a"].map(String::from).to_vec())
    );
    let acyclic: Graph = [("a", "b"), ("a", "c"), ("b", "c")].into_iter().fold(
        Graph::new(),
        |mut graph, (from, to)| {
            graph.entry(from.into()).or_default().insert(to.into());
            graph
        },
    );
    assert_eq!(find_circle(&acyclic), None);
}

#[rstest]
#[case::a_use_line("use crate::decide::fit::Sight;", vec!["decide"])]
#[case::two_paths("let x = crate::json::write::a(crate::cluster::MAX);", vec!["json", "cluster"])]
#[case::another_crates_path("use gpu_topology_policy::decide::Verdict;", vec![])]
#[case::a_macros_crate("$crate::labels::Key", vec![])]
#[case::a_braced_group("use crate::{exit, fleet::Fleet,\n  render};", vec!["exit", "fleet", "render"])]
fn crate_paths_are_read_from_code(#[case] code: &str, #[case] modules: Vec<&str>) {
    assert_eq!(crate_paths(code), modules);
}
