use clap::Parser;
use gpu_topology_labeler::app::{exit, run_daemon, run_once, Publisher};
use gpu_topology_labeler::cli::Cli;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
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
    // Logs go to stderr so that stdout carries only the labels.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(cli.log_level.filter())
        .init();
    let config = match cli.into_config() {
        Ok(config) => config,
        Err(message) => {
            tracing::error!("{message}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "cannot start the async runtime");
            return ExitCode::from(exit::USAGE);
        }
    };
    ExitCode::from(runtime.block_on(async {
        let mut publisher = match Publisher::from_config(&config.sink).await {
            Ok(publisher) => publisher,
            Err(error) => {
                tracing::error!(%error, "cannot build the Kubernetes client");
                return exit::USAGE;
            }
        };
        let result = if config.once {
            run_once(&config, &mut publisher).await
        } else {
            run_daemon(&config, &mut publisher).await
        };
        match result {
            Ok(()) => exit::OK,
            Err(error) => {
                tracing::error!(%error, "nothing published");
                error.exit_code()
            }
        }
    }))
}
