//! Runs a topology tool (`nvidia-smi topo -m`, `rocm-smi --showtopo`) with a timeout.

use super::SourceError;
use std::io::ErrorKind;
use std::process::Stdio;
use std::time::Duration;

/// Longest stderr excerpt quoted in an error.
const STDERR_EXCERPT: usize = 300;

/// What running a tool gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutput {
    /// The program is not installed (normal on nodes of another vendor).
    NotInstalled,
    Stdout(String),
}

/// Runs `program args`, killing it after `timeout` (a wedged driver can hang nvidia-smi).
pub async fn run(
    program: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<CommandOutput, SourceError> {
    let origin = format!("{program} {}", args.join(" "));
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(CommandOutput::NotInstalled),
        Err(e) => return Err(SourceError::new(origin, e)),
    };
    let output = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| SourceError::new(&origin, format!("no answer within {timeout:?}")))?
        .map_err(|e| SourceError::new(&origin, e))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let excerpt: String = stderr.trim().chars().take(STDERR_EXCERPT).collect();
        return Err(SourceError::new(
            origin,
            format!("{}: {excerpt}", output.status),
        ));
    }
    String::from_utf8(output.stdout)
        .map(CommandOutput::Stdout)
        .map_err(|_| SourceError::new(origin, "output is not UTF-8"))
}
