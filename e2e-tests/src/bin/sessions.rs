//! Writes the kwctl session files `e2e-tests/scenarios/sessions/*.yml`, the
//! demo's fleet (`examples/cluster/fleet.yml`) and its Nodes as kubectl
//! prints them (`examples/cluster/nodes.json`) from the fleet
//! descriptions in `src/fleets/`. With `--check`, writes nothing and fails
//! when a checked-in file differs (what `tests/sessions.rs` checks).

use anyhow::{bail, Context, Result};
use e2e_tests::fleets::{
    demo_nodes_file, demo_session_file, render, session_files, DEMO_NODES_PATH, DEMO_SESSION_PATH,
};
use e2e_tests::repo_root;
use std::path::PathBuf;

fn main() -> Result<()> {
    let check = std::env::args().skip(1).any(|arg| arg == "--check");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/sessions");
    let mut files: Vec<(PathBuf, String)> = session_files()
        .into_iter()
        .map(|file| Ok((dir.join(format!("{}.yml", file.name)), render(&file)?)))
        .collect::<Result<_>>()?;
    files.push((
        repo_root().join(DEMO_SESSION_PATH),
        render(&demo_session_file())?,
    ));
    files.push((repo_root().join(DEMO_NODES_PATH), demo_nodes_file()?));
    let mut differing = Vec::new();
    for (path, text) in files {
        if check {
            let current = std::fs::read_to_string(&path).unwrap_or_default();
            if current != text {
                differing.push(path.display().to_string());
            }
        } else {
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("wrote {}", path.display());
        }
    }
    if !differing.is_empty() {
        bail!("not what the generator writes: {}", differing.join(", "));
    }
    Ok(())
}
