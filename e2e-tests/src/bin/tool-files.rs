//! `tool-files SCENARIO.json DIR`: writes a scenario's object, settings and
//! fleet files into DIR and prints the `gpu-topology explain` arguments for
//! them, one per line, so that the kwctl bats suite compares the tool with
//! `kwctl run` (kwctl-helpers.bash). Exits 3, saying why, when the tool
//! cannot be given the scenario as files (an UPDATE, a refused read, no
//! session: see `e2e_tests::tool_files`).

use anyhow::{bail, Context, Result};
use e2e_tests::tool_files::{fleet_files, is_create_of_its_object};
use e2e_tests::Scenario;
use std::path::PathBuf;
use std::process::ExitCode;

/// The exit code of a scenario the tool cannot be given as files.
const NOT_AS_FILES: u8 = 3;

fn main() -> ExitCode {
    match run() {
        Ok(Some(args)) => {
            for arg in args {
                println!("{arg}");
            }
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::from(NOT_AS_FILES),
        Err(error) => {
            eprintln!("tool-files: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<Option<Vec<String>>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [scenario, dir] = &args[..] else {
        bail!("usage: tool-files SCENARIO.json DIR");
    };
    let (scenario, dir) = (
        Scenario::load(&PathBuf::from(scenario))?,
        PathBuf::from(dir),
    );
    if !is_create_of_its_object(&scenario.request) {
        eprintln!(
            "tool-files: {}: not the CREATE of its object",
            scenario.name
        );
        return Ok(None);
    }
    let Some(fleet) = fleet_files(&scenario, &dir)? else {
        eprintln!(
            "tool-files: {}: its cluster cannot be given as files",
            scenario.name
        );
        return Ok(None);
    };
    let write = |name: &str, value: &serde_json::Value| -> Result<String> {
        let path = dir.join(name);
        std::fs::write(&path, value.to_string())
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path.display().to_string())
    };
    let mut args = vec![
        write("object.json", &scenario.request["object"])?,
        "--settings".to_owned(),
        write("settings.json", &scenario.settings)?,
    ];
    for (flag, path) in [("--nodes", fleet.nodes), ("--summary", fleet.summary)] {
        if let Some(path) = path {
            args.extend([flag.to_owned(), path.display().to_string()]);
        }
    }
    Ok(Some(args))
}
