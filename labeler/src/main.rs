use clap::Parser;
use gpu_topology_labeler::app::{exit, run_daemon, run_once, Publisher};
use gpu_topology_labeler::cli::{Cli, Command, LogLevel, SummarizeArgs};
use gpu_topology_labeler::health::{self, Health};
use gpu_topology_labeler::sinks::api;
use gpu_topology_labeler::summarize::kubernetes::{self as summarizer, Summarizer};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut cli = match Cli::try_parse() {
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
    if let Some(Command::Summarize(args)) = cli.command.take() {
        return ExitCode::from(summarize(args));
    }
    init_logs(cli.log_level);
    if let Some(warning) = cli.once_warning() {
        tracing::warn!("{warning}");
    }
    let config = match cli.into_config() {
        Ok(config) => config,
        Err(message) => {
            tracing::error!("{message}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let Some(runtime) = runtime() else {
        return ExitCode::from(exit::USAGE);
    };
    let code = runtime.block_on(async {
        let mut publisher = match Publisher::from_config(&config.sink, &config.prefix).await {
            Ok(publisher) => publisher,
            Err(error) => {
                tracing::error!(%error, "cannot build the Kubernetes client");
                return exit::USAGE;
            }
        };
        let result = if config.once {
            run_once(&config, &mut publisher).await
        } else {
            let health = Health::new(config.sink.name(), config.interval);
            if let Some(address) = config.metrics_address {
                match tokio::net::TcpListener::bind(address).await {
                    Ok(listener) => {
                        let address = listener.local_addr().unwrap_or(address);
                        tracing::info!(%address, "serving /livez, /readyz and /metrics");
                        tokio::spawn(health::serve(listener, health.clone()));
                    }
                    Err(error) => {
                        tracing::error!(%error, %address, "cannot listen on --metrics-address");
                        return exit::USAGE;
                    }
                }
            }
            run_daemon(&config, &mut publisher, &health).await
        };
        match result {
            Ok(()) => exit::OK,
            Err(error) => {
                tracing::error!(%error, "nothing published");
                error.exit_code()
            }
        }
    });
    // An NVML call stuck in a hung driver must not hold the exit: the
    // runtime would otherwise wait for its thread.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    ExitCode::from(code)
}

/// How long the exit waits for blocking calls still running.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// `gpu-topology-labeler summarize`: the fleet summary ConfigMap.
fn summarize(args: SummarizeArgs) -> u8 {
    init_logs(args.log_level);
    if let Some(warning) = args.interval_warning() {
        tracing::warn!("{warning}");
    }
    let config = match args.into_config() {
        Ok(config) => config,
        Err(message) => {
            tracing::error!("{message}");
            return exit::USAGE;
        }
    };
    let Some(runtime) = runtime() else {
        return exit::USAGE;
    };
    runtime.block_on(async {
        let client = match api::client(config.request_timeout).await {
            Ok(client) => client,
            Err(error) => {
                tracing::error!(%error, "cannot build the Kubernetes client");
                return exit::USAGE;
            }
        };
        let summarizer = Summarizer::new(client, &config);
        match summarizer::run(&summarizer, config.interval, config.once).await {
            Ok(()) => exit::OK,
            Err(error) => {
                tracing::error!(%error, "no fleet summary written");
                error.exit_code()
            }
        }
    })
}

/// Logs go to stderr so that stdout carries only the labels.
fn init_logs(level: LogLevel) {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level.filter())
        .init();
}

fn runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(error) => {
            tracing::error!(%error, "cannot start the async runtime");
            None
        }
    }
}
