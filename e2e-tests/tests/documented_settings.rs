//! Every settings block the repository shows an operator is accepted by the
//! built module's `validate_settings`, as kwctl reads it and as kubectl
//! hands it to the cluster: a refused block would stop the policy-server
//! of whoever applies it (issue #26). The blocks are found wherever they
//! are (e2e-tests/src/documented_settings.rs), so docs that move keep being
//! checked; a refused one fails with its file and line.
//!
//! Needs `make policy.wasm` (or POLICY_WASM), as the scenario runner does.

use e2e_tests::documented_settings::{find_all, find_in_file, SettingsBlock};
use e2e_tests::{repo_root, shared_module, HostCapabilities};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The finder's own test inputs (skipped by the search of the repository,
/// as every `fixtures` folder is).
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/documented-settings")
}

/// What `validate_settings` of the built module refuses among `blocks`:
/// `location: message` under each reading that is refused.
fn refused(blocks: &[SettingsBlock]) -> Vec<String> {
    let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
    let policy = module
        .instantiate(Arc::new(HostCapabilities::none()))
        .unwrap();
    let mut refusals = Vec::new();
    for block in blocks {
        let readings = [
            ("", &block.settings),
            (" as kubectl reads it", &block.as_kubectl_reads_them),
        ];
        for (reading, settings) in readings {
            let answer = policy
                .validate_settings(settings)
                .unwrap_or_else(|e| panic!("{}: {e:#}", block.location()));
            if !answer.valid {
                refusals.push(format!(
                    "{}{reading}: {}",
                    block.location(),
                    answer.message.unwrap_or_default()
                ));
            }
            if block.settings == block.as_kubectl_reads_them {
                break;
            }
        }
    }
    refusals
}

#[test]
fn every_documented_settings_block_is_accepted() {
    let blocks = find_all(&repo_root()).unwrap_or_else(|e| panic!("{e:#}"));
    // The finder must see the policies the docs tell operators to apply,
    // or an empty search would pass.
    for file in [
        "examples/gpu-topology.yaml",
        "examples/policy.yaml",
        "examples/settings.yaml",
    ] {
        assert!(
            blocks.iter().any(|b| b.file == Path::new(file)),
            "no settings found in {file}: {blocks:#?}"
        );
    }
    let refusals = refused(&blocks);
    assert!(
        refusals.is_empty(),
        "{} of the {} settings blocks in the docs and examples are refused by validate_settings:\n{}",
        refusals.len(),
        blocks.len(),
        refusals.join("\n")
    );
}

/// (fixture file, the blocks found there: line, what): every form the
/// finder reads, and none of what it must leave alone (another policy's
/// manifest, a kubelet config, a text block).
#[test]
fn the_finder_finds_every_form_and_nothing_else() {
    let blocks = find_all(&fixtures()).unwrap_or_else(|e| panic!("{e:#}"));
    let found: Vec<(String, usize, &str)> = blocks
        .iter()
        .map(|b| (b.file.display().to_string(), b.line, b.what.as_str()))
        .collect();
    let expected = [
        ("guide.md", 12, "ClusterAdmissionPolicy gpu-topology"),
        ("guide.md", 21, "a spec's settings"),
        ("guide.md", 32, "settings file or fragment"),
        ("guide.md", 64, "kwctl run --settings-json"),
        ("policies.yaml", 1, "AdmissionPolicy no-settings"),
        ("policies.yaml", 17, "ClusterAdmissionPolicy mode-off"),
        (
            "policies.yaml",
            33,
            "ClusterAdmissionPolicyGroup grouped, policy gpu",
        ),
    ]
    .map(|(file, line, what)| (file.to_owned(), line, what));
    assert_eq!(found, expected);
    // kubectl's reading: the unquoted `off` is a boolean there.
    assert_eq!(
        blocks[0].as_kubectl_reads_them["topology"]["affinity"],
        serde_json::Value::Bool(false)
    );
    assert_eq!(blocks[0].settings["topology"]["affinity"], "off");
    assert_eq!(blocks[4].settings, serde_json::Value::Null);
}

/// A refused block is reported with its file, line and the module's reason.
#[test]
fn refused_blocks_are_named_by_file_and_line() {
    let blocks = find_all(&fixtures()).unwrap_or_else(|e| panic!("{e:#}"));
    let refusals = refused(&blocks);
    let expected = [
        "guide.md:21 (a spec's settings): topology.preferredWeight: 101 is out of range",
        "guide.md:32 (settings file or fragment): qos.cpuPerGPU: unknown field `cpuPerGPU`",
        "guide.md:64 (kwctl run --settings-json): qos.mode: unknown variant `sometimes`",
        "policies.yaml:17 (ClusterAdmissionPolicy mode-off): capacity.source: static needs capacity.maxGpusPerNode",
        "policies.yaml:17 (ClusterAdmissionPolicy mode-off) as kubectl reads it: capacity.source: static needs capacity.maxGpusPerNode",
        "policies.yaml:33 (ClusterAdmissionPolicyGroup grouped, policy gpu): labelPrefix: invalid label prefix",
    ];
    assert_eq!(refusals.len(), expected.len(), "refused: {refusals:#?}");
    for (refusal, start) in refusals.iter().zip(expected) {
        assert!(
            refusal.starts_with(start),
            "{refusal:?} is not {start:?}..."
        );
    }
}

/// A Markdown code block left open is an error naming the file and the
/// block's fence, not a block whose settings go unchecked.
#[test]
fn an_unclosed_code_block_is_named_by_file_and_line() {
    let text = "# Settings\n\n```yaml\ntopology:\n  affinity: required\n";
    let error = find_in_file(Path::new("docs/guide.md"), text).unwrap_err();
    assert_eq!(
        error.to_string(),
        "docs/guide.md: line 3: an unclosed code block"
    );
}
