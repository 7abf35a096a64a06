//! The command line (docs/cli.md).

use clap::{Args, Parser, Subcommand, ValueEnum};
use gpu_topology::duration::parse_duration;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "gpu-topology",
    version,
    about = "Explain, try and audit the GPU topology policy's decisions with its own code"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The decision for each object: message, warnings, change and the verdict of every node shape.
    Explain(ExplainCommand),
    /// The decision for each object before and after changed kubelet or policy settings.
    WhatIf(WhatIfArgs),
    /// Running GPU pods against their nodes' current facts.
    Audit(AuditArgs),
}

/// Where the fleet comes from: files, or a live cluster.
#[derive(Debug, Args)]
pub struct FleetArgs {
    /// What `kubectl get nodes -o yaml|json` prints. Without it and
    /// without --summary the cluster is read live.
    #[arg(long, value_name = "FILE")]
    pub nodes: Option<PathBuf>,
    /// The fleet-summary ConfigMap (YAML or JSON).
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// The kubeconfig of live mode (default: $KUBECONFIG, ~/.kube/config, in-cluster).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context of live mode.
    #[arg(long)]
    pub context: Option<String>,
}

#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// The policy's settings, or a ClusterAdmissionPolicy/AdmissionPolicy manifest whose spec.settings are used.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Output {
    /// Aligned tables, coloured on a terminal.
    #[default]
    Table,
    Json,
    Yaml,
    /// Policy reports for `kubectl apply`: OpenReports `Report` objects, or
    /// wgpolicyk8s.io `PolicyReport` objects (see --report-api); audit only.
    Policyreport,
}

/// The API of the policy reports `audit -o policyreport` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportApi {
    /// `openreports.io/v1alpha1` `Report` (CRD reports.openreports.io).
    Openreports,
    /// `wgpolicyk8s.io/v1alpha2` `PolicyReport` (CRD policyreports.wgpolicyk8s.io).
    Wgpolicyk8s,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Files or directories of Pods and workloads (YAML or JSON, multi-document, List objects); `-` reads standard input.
    #[arg(required = true, value_name = "PATH")]
    pub objects: Vec<PathBuf>,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[arg(short, long, value_enum, default_value_t)]
    pub output: Output,
    /// The arithmetic per NUMA node, the hints and the smallest change that fits.
    #[arg(short, long)]
    pub verbose: bool,
}

/// `explain`'s arguments: those `what-if` shares, and the binding check.
#[derive(Debug, Args)]
pub struct ExplainCommand {
    #[command(flatten)]
    pub explain: ExplainArgs,
    #[command(flatten)]
    pub binding: BindingArgs,
}

/// The binding check of `explain --node`.
#[derive(Debug, Args, Default)]
pub struct BindingArgs {
    /// Also check each Pod's binding to this node, as the policy's binding check
    /// would: on the node's NUMA occupancy now (its NodeResourceTopology).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// NodeResourceTopology objects (`kubectl get noderesourcetopologies -o yaml`)
    /// to read the node's occupancy from, instead of the cluster; needs --node.
    #[arg(long, value_name = "FILE", requires = "node")]
    pub topology: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WhatIfArgs {
    #[command(flatten)]
    pub explain: ExplainArgs,
    /// A kubelet setting to change, e.g. `topologyManagerPolicy=restricted` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The node shapes --set changes (repeatable; default: every shape).
    #[arg(long = "shape", value_name = "ID")]
    pub shapes: Vec<String>,
    /// The policy's settings after the change (default: unchanged).
    #[arg(long, value_name = "FILE")]
    pub new_settings: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// What `kubectl get pods -A -o json` prints; without it the pods are read live.
    #[arg(long, value_name = "FILE")]
    pub pods: Option<PathBuf>,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[arg(short, long, value_enum, default_value_t)]
    pub output: Output,
    /// Labels whose heartbeat is older than this are stale (e.g. 90m, 3h; default: three of the labeler's heartbeats).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "90m")]
    pub stale_after: std::time::Duration,
    /// Judge the labels' age at this time (RFC 3339; default: now), e.g. for a dump taken earlier.
    #[arg(long, value_name = "TIME")]
    pub at: Option<jiff::Timestamp>,
    /// The API of -o policyreport's reports (default: live, the one the cluster serves,
    /// OpenReports first; from files, openreports).
    #[arg(long, value_enum, value_name = "API")]
    pub report_api: Option<ReportApi>,
    /// NodeResourceTopology objects (`kubectl get noderesourcetopologies -o yaml`) for
    /// the binding check of pods that failed at the kubelet (default: live; from
    /// files alone, not checked).
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn the_default_staleness_is_the_contracts() {
        let args = Cli::try_parse_from(["gpu-topology", "audit"]).unwrap();
        let Command::Audit(audit) = args.command else {
            panic!("not audit");
        };
        assert_eq!(
            audit.stale_after.as_secs(),
            gpu_topology::DEFAULT_STALE_AFTER_SECONDS
        );
    }

    #[rstest]
    #[case::not_given(&[], Ok(None))]
    #[case::openreports(&["--report-api", "openreports"], Ok(Some(ReportApi::Openreports)))]
    #[case::wgpolicyk8s(&["--report-api", "wgpolicyk8s"], Ok(Some(ReportApi::Wgpolicyk8s)))]
    #[case::with_output(&["-o", "policyreport", "--report-api=wgpolicyk8s"], Ok(Some(ReportApi::Wgpolicyk8s)))]
    #[case::unknown_api(&["--report-api", "policyreport"], Err("[possible values: openreports, wgpolicyk8s]"))]
    #[case::the_api_version_is_no_value(&["--report-api", "openreports.io/v1alpha1"], Err("invalid value 'openreports.io/v1alpha1' for '--report-api <API>'"))]
    fn the_report_api_is_one_of_two(
        #[case] flags: &[&str],
        #[case] expected: Result<Option<ReportApi>, &str>,
    ) {
        let args = std::iter::once("gpu-topology")
            .chain(std::iter::once("audit"))
            .chain(flags.iter().copied());
        match (Cli::try_parse_from(args), expected) {
            (Ok(cli), Ok(api)) => {
                let Command::Audit(audit) = cli.command else {
                    panic!("not audit");
                };
                assert_eq!(audit.report_api, api);
            }
            (Err(error), Err(words)) => {
                assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
                let text = error.to_string();
                assert!(text.contains(words), "{words:?} not in {text}");
            }
            (got, expected) => panic!("got {got:?}, expected {expected:?}"),
        }
    }

    #[rstest]
    #[case::minutes("90m", Some(5400))]
    #[case::hours_and_minutes("1h 30m", Some(5400))]
    #[case::seconds("5400s", Some(5400))]
    #[case::zero("0s", None)]
    #[case::negative("-5m", None)]
    #[case::words("soon", None)]
    fn durations_are_read_as_jiff_reads_them(#[case] text: &str, #[case] seconds: Option<u64>) {
        assert_eq!(parse_duration(text).ok().map(|d| d.as_secs()), seconds);
    }
}
