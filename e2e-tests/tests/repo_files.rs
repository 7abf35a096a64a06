//! The repository walk every whole-repository test uses
//! (e2e-tests/src/repo_files.rs): links not followed, build output,
//! version control and `.gitignore`d folders left out, paths sorted.

use e2e_tests::repo_files::repo_files;
use e2e_tests::repo_root;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A scratch tree with every kind of entry the walk tells apart.
fn scratch_tree() -> PathBuf {
    let root = std::env::temp_dir().join(format!("repo-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let files = [
        ("README.md", ""),
        (
            ".gitignore",
            "# build output\n/build\n/cache/\n*.log\n/docs/deep\n",
        ),
        ("docs/b.md", ""),
        ("docs/a.md", ""),
        ("docs/deep/kept.md", ""), // a nested entry is no folder of this one
        ("docs/target/debug.md", ""), // cargo output, wherever it is
        ("build/out.md", ""),
        ("cache/out.md", ""),
        ("target/out.md", ""),
        (".git/HEAD", ""),
        ("node_modules/m/README.md", ""),
        ("corpus/input.md", ""), // the caller's own skip
        ("sub/.gitignore", "/local\n"),
        ("sub/local/out.md", ""),
        ("sub/kept.md", ""),
        ("worktree/.git", "gitdir: /elsewhere\n"), // a worktree's pointer
        ("worktree/kept.md", ""),
    ];
    for (file, text) in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // A cycle (as the labeler's sysfs fixtures have), a linked folder and a
    // linked file: none is followed or listed.
    symlink("..", root.join("docs/up")).unwrap();
    symlink("docs", root.join("docs-link")).unwrap();
    symlink("README.md", root.join("README-link.md")).unwrap();
    root
}

#[test]
fn the_walk_lists_regular_files_outside_build_output_sorted() {
    let root = scratch_tree();
    let files = repo_files(&root, &["corpus"]).unwrap();
    std::fs::remove_dir_all(&root).unwrap();
    let expected: Vec<PathBuf> = [
        ".gitignore",
        "README.md",
        "docs/a.md",
        "docs/b.md",
        "docs/deep/kept.md",
        "sub/.gitignore",
        "sub/kept.md",
        "worktree/kept.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    assert_eq!(files, expected);
}

#[test]
fn a_folder_that_cannot_be_listed_is_named() {
    let missing = Path::new("/nonexistent/repo-files");
    let error = repo_files(missing, &[]).unwrap_err().to_string();
    assert!(error.contains("/nonexistent/repo-files"), "{error}");
}

/// The repository itself: the sysfs fixtures' link cycles end the walk, and
/// no build output or version control is listed.
#[test]
fn the_repository_walk_leaves_out_links_and_build_output() {
    let root = repo_root();
    let files = repo_files(&root, &[]).unwrap();
    assert!(files.contains(&PathBuf::from("Cargo.toml")));
    assert!(files.is_sorted());
    for file in &files {
        let first = file.components().next().unwrap().as_os_str();
        assert!(first != "target", "{}", file.display());
        assert!(!file.ends_with(".git"), "{}", file.display());
        let kind = root.join(file).symlink_metadata().unwrap().file_type();
        assert!(kind.is_file(), "{} is no regular file", file.display());
    }
    assert!(files
        .iter()
        .any(|f| f.starts_with("labeler/tests/fixtures/sysfs/hgx-rdma-sriov")));
}
