//! The operator document's examples are the tool's real output: every
//! `console` block of docs/cli.md and docs/cli.zh-CN.md whose first line is
//! `# runs in cli/tests/documented.rs` is run here, so the documents can
//! never drift from the code.
//!
//! In such a block each line starting with `$ gpu-topology ` is a command,
//! split on whitespace (no shell: no pipes, quotes or variables) and run
//! with the built binary in the repository root, with `NO_COLOR=1`. The
//! lines after it, up to the next `$ ` line or the block's end, are its
//! exact standard output; a last line `# exit N` is instead its exit code,
//! which is 0 when the block does not say. Blocks that need a cluster (live
//! mode) start with `# needs a cluster` and are not run (docs.rs accepts
//! both markers).

#[path = "../../e2e-tests/src/markdown.rs"]
#[allow(dead_code)]
mod markdown;

use markdown::{code_blocks, first_line, Block};
use rstest::rstest;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The first line of a block this test runs.
const RUN_HERE: &str = "# runs in cli/tests/documented.rs";
/// What starts a command line of such a block.
const COMMAND: &str = "$ gpu-topology ";
/// What starts any command line: one that is not the tool's is an error.
const PROMPT: &str = "$ ";
/// What starts the line that gives a command's exit code.
const EXIT: &str = "# exit ";

/// One command of a block: its arguments after `gpu-topology`, the exact
/// standard output it must print and the exit code it must end with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    /// The 1-based line of the document the command is on.
    line: usize,
    args: Vec<String>,
    stdout: String,
    exit: i32,
}

/// The commands of a block marked `RUN_HERE`, or what is wrong with it
/// (named by its document line).
fn steps(block: &Block) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut exit_given = false;
    let lines = block.body.lines().enumerate().skip(1);
    for (index, text) in lines {
        let line = block.body_line() + index;
        if let Some(command) = text.strip_prefix(COMMAND) {
            steps.push(Step {
                line,
                args: command.split_whitespace().map(str::to_owned).collect(),
                stdout: String::new(),
                exit: 0,
            });
            exit_given = false;
            continue;
        }
        if text.starts_with(PROMPT) {
            return Err(format!(
                "line {line}: only `{COMMAND}...` commands run here, not {text:?}"
            ));
        }
        let Some(step) = steps.last_mut() else {
            return Err(format!(
                "line {line}: {text:?} comes before the first `{COMMAND}...` command"
            ));
        };
        if exit_given {
            return Err(format!(
                "line {line}: {text:?} follows the `{EXIT}N` line, which ends a command's output"
            ));
        }
        match text.strip_prefix(EXIT) {
            Some(code) => {
                step.exit = code
                    .trim()
                    .parse()
                    .map_err(|_| format!("line {line}: {text:?} is not `{EXIT}N`"))?;
                exit_given = true;
            }
            None => {
                step.stdout.push_str(text);
                step.stdout.push('\n');
            }
        }
    }
    Ok(steps)
}

/// The repository root: where the documents' relative paths start.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate is in the repository")
        .to_path_buf()
}

/// The blocks of `doc` this test runs.
fn runnable_blocks(doc: &str) -> Vec<Block> {
    let path = repo_root().join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    code_blocks(&text)
        .into_iter()
        .filter(|block| first_line(block) == RUN_HERE)
        .collect()
}

#[rstest]
#[case::english("docs/cli.md")]
#[case::chinese("docs/cli.zh-CN.md")]
fn every_documented_command_prints_what_the_document_shows(#[case] doc: &str) {
    let blocks = runnable_blocks(doc);
    assert!(
        blocks.len() >= 3,
        "{doc}: only {} blocks marked `{RUN_HERE}`: explain, what-if and audit are shown",
        blocks.len()
    );
    let mut failures = Vec::new();
    let mut commands = 0;
    for block in &blocks {
        assert_eq!(
            block.lang, "console",
            "{doc}:{}: not a console block",
            block.line
        );
        let steps = steps(block).unwrap_or_else(|e| panic!("{doc}: {e}"));
        assert!(!steps.is_empty(), "{doc}:{}: no command", block.line);
        for step in steps {
            commands += 1;
            let output = Command::new(env!("CARGO_BIN_EXE_gpu-topology"))
                .args(&step.args)
                .current_dir(repo_root())
                .env("NO_COLOR", "1")
                .output()
                .unwrap_or_else(|e| panic!("{doc}:{}: {e}", step.line));
            let stdout = String::from_utf8_lossy(&output.stdout);
            let code = output.status.code();
            if stdout != step.stdout || code != Some(step.exit) {
                failures.push(format!(
                    "{doc}:{}: gpu-topology {}\nexit {code:?}, documented {}\n--- documented\n{}--- printed\n{stdout}--- standard error\n{}",
                    step.line,
                    step.args.join(" "),
                    step.exit,
                    step.stdout,
                    String::from_utf8_lossy(&output.stderr),
                ));
            }
        }
    }
    assert!(commands >= 3, "{doc}: only {commands} commands run");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A block's steps as (line, arguments, standard output, exit code), or
/// how the error reading it starts.
type ExpectedSteps = Result<Vec<(usize, Vec<&'static str>, &'static str, i32)>, &'static str>;

/// How a marked block is read: commands, their output and exit codes, and
/// each mistake named by its line.
#[rstest]
#[case::one_command_exit_zero_by_default(
    "$ gpu-topology explain a.yaml\nout 1\nout 2\n",
    Ok(vec![(3, vec!["explain", "a.yaml"], "out 1\nout 2\n", 0)])
)]
#[case::an_exit_code_after_the_output(
    "$ gpu-topology explain a.yaml  -v\nrejected\n# exit 1\n$ gpu-topology audit\n",
    Ok(vec![
        (3, vec!["explain", "a.yaml", "-v"], "rejected\n", 1),
        (6, vec!["audit"], "", 0),
    ])
)]
#[case::blank_lines_are_output(
    "$ gpu-topology audit\n\nsummary\n",
    Ok(vec![(3, vec!["audit"], "\nsummary\n", 0)])
)]
#[case::another_program("$ kubectl get nodes\n", Err("line 3: only"))]
#[case::output_before_any_command("text\n", Err("line 3: \"text\" comes before"))]
#[case::output_after_the_exit_code(
    "$ gpu-topology audit\n# exit 1\nmore\n",
    Err("line 5: \"more\" follows")
)]
#[case::an_exit_code_that_is_no_number(
    "$ gpu-topology audit\n# exit one\n",
    Err("line 4: \"# exit one\" is not")
)]
fn a_marked_block_is_read_as_commands_and_their_output(
    #[case] body: &str,
    #[case] expected: ExpectedSteps,
) {
    let block = Block {
        lang: "console".to_owned(),
        body: format!("{RUN_HERE}\n{body}"),
        line: 1,
    };
    match (steps(&block), expected) {
        (Ok(steps), Ok(expected)) => {
            let expected: Vec<Step> = expected
                .into_iter()
                .map(|(line, args, stdout, exit)| Step {
                    line,
                    args: args.into_iter().map(str::to_owned).collect(),
                    stdout: stdout.to_owned(),
                    exit,
                })
                .collect();
            assert_eq!(steps, expected);
        }
        (Err(error), Err(start)) => assert!(error.starts_with(start), "{error}"),
        (got, expected) => panic!("got {got:?}, expected {expected:?}"),
    }
}
