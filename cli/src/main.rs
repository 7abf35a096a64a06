use std::process::ExitCode;

fn main() -> ExitCode {
    gpu_topology_cli::main()
}
