//! Keeps the operator's guide (docs/guide.md) and its Chinese edition
//! (docs/guide.zh-CN.md) true to the code:
//!
//! - every shell block is marked as needing a cluster, or is run here;
//! - every policy message the troubleshooting table quotes is what the
//!   built policy.wasm answers on some e2e scenario, and every message
//!   kind the scenarios make the policy give is in the table;
//! - both languages name the same settings keys, labels, kubelet keys,
//!   commands and messages.
//!
//! Needs `make policy.wasm` (or POLICY_WASM), as the scenario runner does.

use e2e_tests::markdown::{code_blocks, first_line, named_keys, shell_blocks, Block};
use e2e_tests::{repo_root, shared_module, HostCapabilities, Scenario};
use rstest::rstest;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

const GUIDE: &str = "docs/guide.md";
const CHINESE: &str = "docs/guide.zh-CN.md";
/// The first line of a shell block that cannot run without a cluster.
const NEEDS_CLUSTER: &str = "# needs a cluster";
/// The first line of a shell block that a test below runs.
const RUN_HERE: &str = "# runs in e2e-tests/tests/guide.rs";
/// The comment before the table of the policy's messages.
const MESSAGES_MARKER: &str = "<!-- policy-messages:";
/// The guide's kubelet configuration, shown in full in the guide.
const KUBELET_CONFIG: &str = "docs/kubelet-config.yaml";
/// A node's configz and Node object, as saved by the guide's step 2.
const CONFIGZ: &str = "docs/examples/configz.json";
const NODE: &str = "docs/examples/node.json";
/// A quoted message needs this much literal text, so that a pattern made
/// mostly of placeholders cannot match everything.
const MIN_LITERAL: usize = 12;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The shell blocks a test runs, by what they run.
fn block_running(text: &str, command: &str) -> Block {
    let mut found: Vec<Block> = shell_blocks(text)
        .into_iter()
        .filter(|b| first_line(b) == RUN_HERE && b.body.contains(command))
        .collect();
    assert_eq!(found.len(), 1, "one `{RUN_HERE}` block running {command:?}");
    found.remove(0)
}

/// The commands the tests below run; every `RUN_HERE` block runs one.
const RUN_COMMANDS: [&str; 3] = ["gpu-topology-labeler", "make demo", "configz.json"];

/// Runs a block's text with bash in `dir`; stdout, or the failure.
fn run_block(block: &Block, dir: &Path) -> String {
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block.body])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("bash: {e}"));
    assert!(
        output.status.success(),
        "the block at line {} failed ({}):\n{}\n{}",
        block.line,
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[rstest]
#[case::english(GUIDE)]
#[case::chinese(CHINESE)]
fn every_shell_block_is_marked_as_needing_a_cluster_or_run_here(#[case] doc: &str) {
    let text = read(doc);
    let blocks = shell_blocks(&text);
    assert!(!blocks.is_empty(), "{doc} has no shell block");
    for block in &blocks {
        match first_line(block) {
            NEEDS_CLUSTER => {}
            RUN_HERE => assert!(
                RUN_COMMANDS.iter().any(|c| block.body.contains(c)),
                "{doc}:{}: marked `{RUN_HERE}`, but no test here runs it:\n{}",
                block.line,
                block.body
            ),
            other => panic!(
                "{doc}:{}: a shell block must start with `{NEEDS_CLUSTER}` or `{RUN_HERE}`, not {other:?}",
                block.line
            ),
        }
    }
}

/// Both languages show the same commands, word for word.
#[test]
fn both_languages_show_the_same_shell_blocks() {
    let bodies = |doc| -> BTreeSet<String> {
        shell_blocks(&read(doc))
            .into_iter()
            .map(|b| b.body)
            .collect()
    };
    assert_eq!(bodies(GUIDE), bodies(CHINESE));
}

#[rstest]
#[case::english(GUIDE)]
#[case::chinese(CHINESE)]
fn the_kubelet_config_shown_is_the_file(#[case] doc: &str) {
    let file = read(KUBELET_CONFIG);
    let shown = code_blocks(&read(doc))
        .into_iter()
        .filter(|b| b.lang == "yaml" && b.body.contains("kind: KubeletConfiguration"))
        .map(|b| b.body)
        .collect::<Vec<_>>();
    assert_eq!(
        shown,
        vec![file],
        "{doc} must show {KUBELET_CONFIG} as it is"
    );
}

/// The labeler reads the guide's kubelet config as the kubelet would (it
/// refuses what the kubelet refuses) and publishes its settings.
#[test]
fn the_labeler_preview_publishes_the_guides_kubelet_settings() {
    let block = block_running(&read(GUIDE), "gpu-topology-labeler");
    let stdout = run_block(&block, &repo_root());
    let labels: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    for (label, value) in [
        ("topology-manager-policy", "restricted"),
        ("topology-manager-scope", "pod"),
        ("cpu-manager-policy", "static"),
        ("memory-manager-policy", "static"),
        // CPUs 0 and 104: one core of NUMA node 0.
        ("numa-reserved-cpus", "2.0"),
        ("gpus", "8"),
    ] {
        let key = format!("gpu-topology.io/{label}");
        assert_eq!(labels[&key], value, "{key} in {stdout}");
    }
    assert!(labels["gpu-topology.io/shape"].is_string(), "{stdout}");
    // The saved Node of the guide's step 2 carries these same labels.
    let node: Value = serde_json::from_str(&read(NODE)).unwrap();
    assert_eq!(
        &node["metadata"]["labels"], &labels,
        "{NODE} is not what the labeler publishes"
    );
}

/// The comparison prints nothing when configz and labels agree, and names
/// exactly the setting that differs when one does.
#[rstest]
#[case::in_step(None, "")]
#[case::label_differs(
    Some(("gpu-topology.io/topology-manager-policy", Some("best-effort"))),
    "topology-manager-policy: kubelet restricted, label best-effort\n"
)]
#[case::label_absent(
    Some(("gpu-topology.io/cpu-manager-full-pcpus-only", None)),
    "cpu-manager-full-pcpus-only: kubelet false, label absent\n"
)]
fn the_configz_comparison_names_what_differs(
    #[case] edit: Option<(&str, Option<&str>)>,
    #[case] expected: &str,
) {
    let block = block_running(&read(GUIDE), "configz.json");
    let dir = std::env::temp_dir().join(format!(
        "guide-configz-{}-{}",
        std::process::id(),
        expected.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut node: Value = serde_json::from_str(&read(NODE)).unwrap();
    if let Some((label, value)) = edit {
        let labels = node["metadata"]["labels"].as_object_mut().unwrap();
        match value {
            Some(value) => labels.insert(label.to_owned(), value.into()),
            None => labels.remove(label),
        };
    }
    std::fs::write(dir.join("configz.json"), read(CONFIGZ)).unwrap();
    std::fs::write(dir.join("node.json"), node.to_string()).unwrap();
    let stdout = run_block(&block, &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(stdout, expected);
}

#[test]
fn make_demo_runs() {
    let block = block_running(&read(GUIDE), "make demo");
    let stdout = run_block(&block, &repo_root());
    assert!(stdout.contains("decision:"), "{stdout}");
}

/// One piece of a quoted message.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// `<N>`: a whole number.
    Number,
    /// Any other `<...>`: any text.
    Any,
}

/// A quote with placeholders (`<N>`, `<...>`, `<node>`) as pieces.
fn pattern(quote: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut rest = quote;
    while let Some(start) = rest.find('<') {
        let Some(len) = rest[start..].find('>') else {
            break;
        };
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_owned()));
        }
        pieces.push(match &rest[start..start + len + 1] {
            "<N>" => Piece::Number,
            _ => Piece::Any,
        });
        rest = &rest[start + len + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_owned()));
    }
    pieces
}

/// Whether `pieces` match `text` from its start (the rest may follow).
fn matches_at(pieces: &[Piece], text: &str) -> bool {
    match pieces.split_first() {
        None => true,
        Some((Piece::Text(t), rest)) => text
            .strip_prefix(t.as_str())
            .is_some_and(|after| matches_at(rest, after)),
        Some((Piece::Number, rest)) => {
            let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            (1..=digits).rev().any(|n| matches_at(rest, &text[n..]))
        }
        Some((Piece::Any, rest)) => text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .skip(1)
            .any(|i| matches_at(rest, &text[i..])),
    }
}

/// Whether the quote occurs anywhere in `text`, placeholders as wildcards.
fn occurs_in(quote: &[Piece], text: &str) -> bool {
    text.char_indices()
        .map(|(i, _)| i)
        .any(|i| matches_at(quote, &text[i..]))
}

/// The first code span of each row of the policy's message table.
fn quoted_messages(doc: &str) -> Vec<String> {
    let text = read(doc);
    let start = text
        .find(MESSAGES_MARKER)
        .unwrap_or_else(|| panic!("{doc}: no `{MESSAGES_MARKER}` table"));
    let rows: Vec<&str> = text[start..]
        .lines()
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .collect();
    assert!(!rows.is_empty(), "{doc}: the message table is empty");
    rows.iter()
        .map(|row| {
            let cell = row.split(" | ").next().unwrap_or_default();
            let span = cell.split('`').nth(1);
            span.unwrap_or_else(|| panic!("{doc}: a row without a quoted message: {row}"))
                .to_owned()
        })
        .collect()
}

/// Message kinds no e2e scenario shows, made from a scenario by setting one
/// value of its request: (scenario, JSON pointer, value).
const GPU_LIMIT: &str = "resources/limits/nvidia.com~1gpu";
fn extra_cases() -> [(&'static str, String, Value); 2] {
    [
        // A GPU count that is not whole, in a Pod and in a workload's template.
        (
            "gpus-1-qos-mutate",
            format!("/object/spec/containers/0/{GPU_LIMIT}"),
            "1.5".into(),
        ),
        (
            "cluster-deployment-possible-not-mutated",
            format!("/object/spec/template/spec/containers/0/{GPU_LIMIT}"),
            "1.5".into(),
        ),
    ]
}

/// The e2e scenarios with valid settings, and the extra cases made from them.
fn cases() -> Vec<Scenario> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut scenarios = Scenario::load_all(&dir).unwrap_or_else(|e| panic!("{e:#}"));
    scenarios.retain(|s| s.file.expect.settings_valid);
    for (base, pointer, value) in extra_cases() {
        let scenario = scenarios.iter().find(|s| s.name == base);
        let mut case = Scenario::load(&dir.join(format!("{base}.json")))
            .unwrap_or_else(|e| panic!("{base}: {e:#}"));
        assert!(scenario.is_some(), "no scenario {base}");
        let field = case.request.pointer_mut(&pointer);
        *field.unwrap_or_else(|| panic!("{base}: no {pointer}")) = value.clone();
        case.name = format!("{base} with {pointer} = {value}");
        scenarios.push(case);
    }
    scenarios
}

/// What the policy answers on every case: (case, the rejection message or
/// a warning), for every one given.
fn policy_messages() -> &'static [(String, String)] {
    static MESSAGES: OnceLock<Vec<(String, String)>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
        let mut messages = Vec::new();
        for scenario in &cases() {
            let capabilities = Arc::new(HostCapabilities::new(
                scenario.file.context_aware_resources.clone(),
                scenario.session.as_ref(),
            ));
            let policy = module.instantiate(capabilities).unwrap();
            let outcome = policy
                .validate(&scenario.request, &scenario.settings)
                .unwrap();
            let said = outcome.message.into_iter().chain(outcome.warnings);
            messages.extend(said.map(|m| (scenario.name.clone(), m)));
        }
        assert!(
            !messages.is_empty(),
            "no scenario made the policy say anything"
        );
        messages
    })
}

#[rstest]
#[case::english(GUIDE)]
#[case::chinese(CHINESE)]
fn every_quoted_message_is_what_the_policy_says(#[case] doc: &str) {
    let said = policy_messages();
    let unsaid: Vec<String> = quoted_messages(doc)
        .into_iter()
        .filter(|quote| {
            let pieces = pattern(quote);
            let literal: usize = pieces
                .iter()
                .map(|p| match p {
                    Piece::Text(t) => t.len(),
                    _ => 0,
                })
                .sum();
            assert!(
                literal >= MIN_LITERAL,
                "{doc}: {quote:?} quotes too little text"
            );
            !said.iter().any(|(_, m)| occurs_in(&pieces, m))
        })
        .collect();
    assert!(
        unsaid.is_empty(),
        "{doc} quotes messages no e2e scenario makes the policy give:\n{}",
        unsaid.join("\n")
    );
}

#[rstest]
#[case::english(GUIDE)]
#[case::chinese(CHINESE)]
fn every_message_the_policy_gives_is_in_the_table(#[case] doc: &str) {
    let quotes: Vec<Vec<Piece>> = quoted_messages(doc).iter().map(|q| pattern(q)).collect();
    let missing: Vec<String> = policy_messages()
        .iter()
        .filter(|(_, message)| !quotes.iter().any(|q| occurs_in(q, message)))
        .map(|(scenario, message)| format!("{scenario}: {message}"))
        .collect();
    assert!(
        missing.is_empty(),
        "{doc}'s troubleshooting table has no row for:\n{}",
        missing.join("\n")
    );
}

#[test]
fn both_languages_quote_the_same_messages() {
    assert_eq!(quoted_messages(GUIDE), quoted_messages(CHINESE));
}

#[test]
fn both_languages_name_the_same_keys_and_labels() {
    let english = named_keys(&read(GUIDE));
    let chinese = named_keys(&read(CHINESE));
    let only_english: Vec<&String> = english.difference(&chinese).collect();
    let only_chinese: Vec<&String> = chinese.difference(&english).collect();
    assert!(
        only_english.is_empty() && only_chinese.is_empty(),
        "named only in {GUIDE}: {only_english:?}; only in {CHINESE}: {only_chinese:?}"
    );
    for label in [
        "gpu-topology.io/topology-manager-policy",
        "gpu-topology.io/shape",
    ] {
        assert!(english.contains(label), "{label}");
    }
    for key in [
        "topologyManagerScope",
        "cpuManagerPolicy",
        "reservedSystemCPUs",
        "topology.affinity",
    ] {
        assert!(english.contains(key), "{key}");
    }
}

/// The placeholder matcher itself.
#[rstest]
#[case::literal(
    "is the labeler deployed?",
    "GPU fit not checked: no node ... is the labeler deployed?",
    true
)]
#[case::number("has <N> GPUs", "the node has 16 GPUs", true)]
#[case::number_needs_digits("has <N> GPUs", "the node has many GPUs", false)]
#[case::any(
    "pinned to node \"<node>\" (<...>), which",
    "pinned to node \"gpu-7\" (spec.nodeName), which",
    true
)]
#[case::order_matters("b <...> a", "a then b", false)]
fn placeholders_are_wildcards(#[case] quote: &str, #[case] text: &str, #[case] expected: bool) {
    assert_eq!(occurs_in(&pattern(quote), text), expected);
}
