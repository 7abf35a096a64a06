//! Every integration test file runs. The policy, the labeler and e2e-tests
//! build the files of their `tests/` as modules of one test binary
//! (`tests/integration.rs`, `autotests = false`), so cargo no longer finds
//! a new file by itself: a file that is neither declared there nor a
//! `[[test]]` of its own would silently never run.

use e2e_tests::repo_root;
use rstest::rstest;

#[rstest]
#[case::the_policy(".")]
#[case::the_labeler("labeler")]
#[case::e2e_tests("e2e-tests")]
fn every_file_of_tests_is_a_module_or_a_binary(#[case] crate_dir: &str) {
    let root = repo_root().join(crate_dir);
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("\nautotests = false\n"),
        "{crate_dir}: the manifest no longer turns autotests off; drop this test or the merge"
    );
    let integration = std::fs::read_to_string(root.join("tests/integration.rs")).unwrap();
    let mut orphans = Vec::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let path = entry.unwrap().path();
        let (Some(stem), Some("rs")) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|e| e.to_str()),
        ) else {
            continue;
        };
        let module = integration
            .lines()
            .any(|line| line == format!("mod {stem};"));
        let binary = manifest.contains(&format!("path = \"tests/{stem}.rs\""));
        if !module && !binary {
            orphans.push(stem.to_owned());
        }
    }
    orphans.sort();
    assert!(
        orphans.is_empty(),
        "{crate_dir}/tests: {orphans:?} run nowhere: add `mod NAME;` to tests/integration.rs"
    );
}
