//! `gpu-topology audit`: the running GPU pods against their nodes' current
//! facts (cli/README.md, "Audit"). For each pod: Guaranteed QoS, exclusive
//! CPUs where the static CPU Manager would give them, whether its node's
//! kubelet would admit it now, aligned, as the node's labels describe that
//! kubelet today (label drift after a kubelet change shows here), and
//! whether those labels are fresh (the labeler's heartbeat).
//!
//! It also lists the pods that already failed at the kubelet's admission
//! (`TopologyAffinityError`, `SMTAlignmentError`,
//! `UnexpectedAdmissionError`), each with whether the policy's binding
//! check would refuse its binding to that node now ([`failed`]).
//!
//! [`checks`] and [`failed`] compute the findings once, as data, with the
//! policy's own code; [`report`], [`table`] and [`policyreport`] render
//! them.

pub mod checks;
pub mod failed;
pub mod nodes;
pub mod pods;
pub mod policyreport;
pub mod report;
pub mod table;

use crate::args::{AuditArgs, Output, ReportApi};
use crate::binding::OncePerObject;
use crate::exit;
use crate::fleet::files::FileCluster;
use crate::fleet::live::LiveCluster;
use crate::fleet::{credentials, FleetError, Layered};
use crate::run::{progress_bar, UsageError};
use crate::settings;
use checks::{audit_pod, Judge, PodAudit};
use failed::{audit_failed, FailedAudit};
use gpu_topology::LabelPrefix;
use gpu_topology_policy::cluster::host::ClusterReader;
use nodes::Nodes;
use pods::{Pods, RunningPod};
use serde_json::Value;
use std::io::Write;

/// More pods than this show a progress bar (on a terminal).
const PROGRESS_FROM: usize = 1000;

/// `audit`: the report on standard output; 0 without a finding, 1 with one.
pub fn run(args: &AuditArgs) -> Result<u8, UsageError> {
    let settings = settings::load(args.policy.settings.as_deref())?;
    let config = &settings.config;
    let now = match &args.at {
        Some(at) => at.as_second(),
        None => jiff::Timestamp::now().as_second(),
    };
    let judge = Judge {
        config,
        now: u64::try_from(now).unwrap_or(0),
        stale_after_seconds: args.stale_after.as_secs(),
    };
    if args.fleet.summary.is_some() {
        return Err(UsageError(
            "--summary counts node shapes, not nodes by name: audit reads the nodes (--nodes FILE, or live)".to_owned(),
        ));
    }
    // Live only for what no file gives; the API server is probed once.
    let live = if args.pods.is_none() || args.fleet.nodes.is_none() {
        Some(
            LiveCluster::connect(&credentials(&args.fleet))
                .map_err(|error| UsageError(FleetError::Live(error).to_string()))?,
        )
    } else {
        None
    };
    let pods = match (&args.pods, &live) {
        (Some(path), _) => pods::read_dump(path).map_err(UsageError)?,
        (None, Some(live)) => Pods {
            running: pods::from_cluster(live).map_err(UsageError)?,
            failed: pods::failed_from_cluster(live).map_err(UsageError)?,
        },
        (None, None) => return Err(UsageError("no pods to audit".to_owned())),
    };
    // The nodes by name for the checks, and as objects for the binding
    // check's Node reads: one list live, no GET per node.
    let (files, nodes) = match (&args.fleet.nodes, &live) {
        (Some(path), _) => {
            let files =
                FileCluster::load(Some(path), None).map_err(|e| UsageError(e.to_string()))?;
            let nodes = nodes::from_objects(files.nodes(), &config.label_prefix);
            (files, nodes)
        }
        (None, Some(live)) => {
            let (objects, nodes) = read_live_nodes(live, &config.label_prefix)?;
            (FileCluster::from_node_objects(objects), nodes)
        }
        (None, None) => return Err(UsageError("no nodes to audit against".to_owned())),
    };
    let files = match &args.topology {
        Some(path) => files
            .with_topology(path)
            .map_err(|e| UsageError(e.to_string()))?,
        None => files,
    };
    let audits = audit_all(&pods.running, &nodes, &judge);
    // The NodeResourceTopology from --topology, else live, else none.
    let layered = Layered {
        files: &files,
        rest: live.as_ref().map(|live| live as &dyn ClusterReader),
    };
    let failed = audit_failed(
        &pods.failed,
        config,
        &OncePerObject::new(&layered),
        judge.now,
    );
    let report_api = report_api(args, live.as_ref());
    let text = render_all(
        &audits,
        &failed,
        args.output,
        report_api,
        judge.now,
        judge.stale_after_seconds,
    )
    .map_err(UsageError)?;
    let mut stdout = anstream::stdout();
    // A closed pipe (`| head`) is not an error of the audit.
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    let found = audits.iter().any(|audit| audit.outcome().is_finding())
        || failed.iter().any(|failed| failed.outcome().is_finding());
    Ok(if found { exit::FINDINGS } else { exit::OK })
}

/// The API of `-o policyreport`'s reports: `--report-api`; without it,
/// live, the one the API server serves ([`policyreport::choose`], its
/// warnings on standard error); from files alone, OpenReports.
fn report_api(args: &AuditArgs, live: Option<&LiveCluster>) -> ReportApi {
    match (args.report_api, args.output, live) {
        (Some(api), _, _) => api,
        (None, Output::Policyreport, Some(live)) => {
            let choice = policyreport::choose(|api| live.serves(api.api_version(), api.plural()));
            for warning in &choice.warnings {
                eprintln!("gpu-topology: {warning}");
            }
            choice.api
        }
        (None, _, _) => ReportApi::Openreports,
    }
}

fn read_live_nodes(
    live: &LiveCluster,
    prefix: &LabelPrefix,
) -> Result<(Vec<Value>, Nodes), UsageError> {
    let (objects, nodes, nodefeatures) =
        nodes::from_cluster_objects(live, prefix).map_err(UsageError)?;
    if let Some(problem) = nodefeatures {
        eprintln!(
            "gpu-topology: the labeler's NodeFeature objects were not read, so the heartbeat of nodes labeled through them is unknown: {problem}"
        );
    }
    Ok((objects, nodes))
}

/// The audit of every GPU pod, in the order given, with a progress bar on
/// a terminal for long runs.
pub fn audit_all(pods: &[RunningPod], nodes: &Nodes, judge: &Judge<'_>) -> Vec<PodAudit> {
    let progress = progress_bar(pods.len(), PROGRESS_FROM, "pods");
    let mut audits = Vec::new();
    for pod in pods {
        let node = pod.node.as_ref().and_then(|name| nodes.get(name));
        audits.extend(audit_pod(pod, node, judge));
        progress.inc(1);
    }
    progress.finish_and_clear();
    audits
}

/// The audit of running pods in `format`; `-o policyreport`'s reports in
/// `report_api`.
pub fn render(
    audits: &[PodAudit],
    format: Output,
    report_api: ReportApi,
    judged_at: u64,
    stale_after_seconds: u64,
) -> Result<String, String> {
    render_all(
        audits,
        &[],
        format,
        report_api,
        judged_at,
        stale_after_seconds,
    )
}

/// The audit of running and failed pods in `format`.
pub fn render_all(
    audits: &[PodAudit],
    failed: &[FailedAudit],
    format: Output,
    report_api: ReportApi,
    judged_at: u64,
    stale_after_seconds: u64,
) -> Result<String, String> {
    let document = || report::AuditReport::new(audits, failed, judged_at, stale_after_seconds);
    match format {
        Output::Table => Ok(table::render(audits, failed)),
        Output::Json => serde_json::to_string_pretty(&document())
            .map(|json| json + "\n")
            .map_err(|error| error.to_string()),
        Output::Yaml => serde_saphyr::to_string(&document()).map_err(|error| error.to_string()),
        Output::Policyreport => {
            let mut out = String::new();
            for report in policyreport::reports(audits, failed, judged_at, report_api) {
                out.push_str("---\n");
                out.push_str(&serde_saphyr::to_string(&report).map_err(|error| error.to_string())?);
            }
            Ok(out)
        }
    }
}
