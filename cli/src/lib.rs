//! `gpu-topology`: the operator's tool. It runs the policy's decision code
//! ([`gpu_topology_policy::decide`]) natively, with the policy's settings and
//! the cluster view read as policy-server reads it, to explain a decision,
//! try what-ifs and audit running pods.

pub mod args;
pub mod exit;
pub mod fleet;

use clap::Parser;
use std::process::ExitCode;

/// The binary's entry point: parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            // --help and --version are not errors.
            return ExitCode::from(if error.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    match cli.command {
        args::Command::Explain(_) | args::Command::WhatIf(_) | args::Command::Audit(_) => {
            eprintln!("gpu-topology: this command is not built yet");
            ExitCode::from(exit::USAGE)
        }
    }
}
