//! `gpu-topology`: the operator's tool. It runs the policy's decision code
//! ([`gpu_topology_policy::decide`]) natively, with the policy's settings and
//! the cluster view read as policy-server reads it, to explain a decision,
//! try what-ifs and audit running pods.

pub mod args;
pub mod audit;
pub mod binding;
pub mod exit;
pub mod explain;
pub mod fleet;
pub mod input;
pub mod remembered;
pub mod render;
pub mod request;
pub mod run;
pub mod settings;
pub mod view;
pub mod what_if;

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
    let outcome = match &cli.command {
        args::Command::Explain(explain) => run::explain(explain),
        args::Command::WhatIf(what_if) => run::what_if(what_if),
        args::Command::Audit(audit) => audit::run(audit),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(run::UsageError(problem)) => {
            eprintln!("gpu-topology: {problem}");
            ExitCode::from(exit::USAGE)
        }
    }
}
