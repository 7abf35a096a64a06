//! Runs a topology tool (`nvidia-smi topo -m`, `rocm-smi --showtopo`) with a timeout.

use super::SourceError;
use std::io::ErrorKind;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, ChildStdout};

/// Longest stderr excerpt quoted in an error.
const STDERR_EXCERPT: usize = 300;

/// What running a tool gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOutput {
    /// The program is not installed (normal on nodes of another vendor).
    NotInstalled,
    Stdout(String),
}

/// Runs topology tools, and remembers the runs it killed at their timeout
/// until they have exited. A process stuck in the kernel (nvidia-smi on a
/// wedged driver) survives SIGKILL: starting another every round would pile
/// them up, each holding memory, so no tool is started while an earlier run
/// of it lingers.
#[derive(Debug, Default)]
pub struct Runner {
    lingering: Vec<(String, Child)>,
}

impl Runner {
    /// Runs `program args`, killing it after `timeout`.
    pub async fn run(
        &mut self,
        program: &str,
        args: &[&str],
        timeout: Duration,
    ) -> Result<CommandOutput, SourceError> {
        let origin = format!("{program} {}", args.join(" "));
        // Forget the runs that have exited (or can no longer be asked).
        self.lingering
            .retain_mut(|(_, child)| matches!(child.try_wait(), Ok(None)));
        if self.lingering.iter().any(|(name, _)| name == program) {
            return Err(SourceError::new(
                origin,
                "an earlier run, killed at its timeout, has not exited yet (is the GPU driver hung?): not starting another",
            ));
        }
        let spawned = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(CommandOutput::NotInstalled),
            Err(e) => return Err(SourceError::new(origin, e)),
        };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(SourceError::new(origin, "its output pipes were not opened"));
        };
        let finished = tokio::time::timeout(timeout, collect(&mut child, stdout, stderr)).await;
        let Ok(finished) = finished else {
            // Killed, but reaped only once it has really exited.
            let _ = child.start_kill();
            self.linger(program, child);
            return Err(SourceError::new(
                origin,
                format!("no answer within {timeout:?}"),
            ));
        };
        let (status, stdout, stderr) = finished.map_err(|e| SourceError::new(&origin, e))?;
        if !status.success() {
            let stderr = String::from_utf8_lossy(&stderr);
            let excerpt: String = stderr.trim().chars().take(STDERR_EXCERPT).collect();
            return Err(SourceError::new(origin, format!("{status}: {excerpt}")));
        }
        String::from_utf8(stdout)
            .map(CommandOutput::Stdout)
            .map_err(|_| SourceError::new(origin, "output is not UTF-8"))
    }

    /// Counts `child` as an earlier run of `program` that was killed and may
    /// not have exited yet.
    pub fn linger(&mut self, program: &str, child: Child) {
        self.lingering.push((program.to_owned(), child));
    }
}

/// Waits for the exit status while reading both pipes (a full pipe would
/// otherwise stall the tool).
async fn collect(
    child: &mut Child,
    mut stdout: ChildStdout,
    mut stderr: ChildStderr,
) -> std::io::Result<(ExitStatus, Vec<u8>, Vec<u8>)> {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (status, read_out, read_err) = tokio::join!(
        child.wait(),
        stdout.read_to_end(&mut out),
        stderr.read_to_end(&mut err)
    );
    read_out?;
    read_err?;
    Ok((status?, out, err))
}
