//! The commands, from parsed arguments to an exit code ([`crate::exit`]):
//! each reads its input, runs the decision code and hands the records to
//! the renderers ([`crate::render`]).

use crate::args::{BindingArgs, ExplainArgs, ExplainCommand, WhatIfArgs};
use crate::binding::{check_pod, BindingView, CheckResult};
use crate::exit;
use crate::explain::{explain_object, Explanation};
use crate::fleet::files::FileCluster;
use crate::fleet::{self, Layered};
use crate::input::{self, Document};
use crate::remembered::Remembering;
use crate::render;
use crate::request::unsendable;
use crate::settings::{self, PolicySettings};
use crate::view::shapes::NodeNames;
use crate::what_if::change::FleetChange;
use crate::what_if::cluster::ChangedCluster;
use crate::what_if::compare::compare;
use crate::what_if::record::{Outcome, Tried};
use gpu_topology_policy::cluster::host::ClusterReader;
use gpu_topology_policy::settings::Config;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};

/// More objects than this show a progress bar (on a terminal).
const PROGRESS_FROM: usize = 100;

/// A failure that stops the command: bad input or usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl<E: std::error::Error> From<E> for UsageError {
    fn from(error: E) -> Self {
        UsageError(error.to_string())
    }
}

/// `explain`: the report on standard output; 0 when every object is
/// admitted (and, with `--node`, every binding allowed), 1 when one is
/// rejected (or a binding refused).
pub fn explain(command: &ExplainCommand) -> Result<u8, UsageError> {
    let (report, code) = explain_report_with(&command.explain, &command.binding)?;
    let mut stdout = anstream::stdout();
    // A closed pipe (`| head`) is not an error of the decision.
    let _ = stdout.write_all(report.as_bytes());
    let _ = stdout.flush();
    Ok(code)
}

/// What `explain` prints and its exit code: the whole command but the
/// printing (what the benchmark of 1,000 manifests measures).
pub fn explain_report(args: &ExplainArgs) -> Result<(String, u8), UsageError> {
    explain_report_with(args, &BindingArgs::default())
}

/// [`explain_report`], with the binding check of `--node`.
pub fn explain_report_with(
    args: &ExplainArgs,
    binding: &BindingArgs,
) -> Result<(String, u8), UsageError> {
    if binding.node.is_some() && args.fleet.summary.is_some() && args.fleet.nodes.is_none() {
        return Err(UsageError(
            "--node checks the binding against that Node, read by name, and --summary counts node shapes, not nodes by name: give --nodes FILE as well, or neither to read the cluster live".to_owned(),
        ));
    }
    let settings = settings::load(args.policy.settings.as_deref())?;
    let documents = input::read_documents(&args.objects)?;
    if documents.is_empty() {
        return Err(UsageError(
            "no objects to explain: the inputs hold no document".to_owned(),
        ));
    }
    let fleet = fleet::open(&args.fleet)?;
    let topology = binding
        .topology
        .as_deref()
        .map(|path| FileCluster::default().with_topology(path))
        .transpose()?;
    // One fleet for the whole run: the policy's cluster read is made once.
    let cluster = Remembering::new(fleet.reader());
    let names = NodeNames::read(fleet.nodes(), &settings.config.label_prefix);
    let mut explanations = explain_all(&documents, &settings, &cluster, &names)?;
    if let Some(node) = &binding.node {
        // The NodeResourceTopology from --topology, the rest as the fleet
        // answers it (files or live).
        let layered = topology.as_ref().map(|files| Layered {
            files,
            rest: Some(fleet.reader()),
        });
        let reader: &dyn ClusterReader = match &layered {
            Some(layered) => layered,
            None => fleet.reader(),
        };
        let now = u64::try_from(jiff::Timestamp::now().as_second()).ok();
        for (document, explanation) in documents.iter().zip(&mut explanations) {
            let view = binding_view(document, explanation, node, &settings.config, reader, now)
                .map_err(|problem| UsageError(format!("{}: {problem}", document.source)))?;
            explanation.binding = Some(view);
        }
    }
    let report =
        render::explain_report(&explanations, args.output, args.verbose).map_err(UsageError)?;
    let findings = explanations
        .iter()
        .any(|e| !e.outcome.allowed() || e.binding.as_ref().is_some_and(BindingView::refused));
    Ok((report, if findings { exit::FINDINGS } else { exit::OK }))
}

/// The binding check of `document`'s pod, as the API server would store it
/// (the policy's patch applied), bound to `node`; a note for an object that
/// is no Pod, or a pod the policy rejects.
pub fn binding_view(
    document: &Document,
    explanation: &Explanation,
    node: &str,
    config: &Config,
    cluster: &dyn ClusterReader,
    now: Option<u64>,
) -> Result<BindingView, String> {
    let object = &explanation.object;
    if (object.api_version.as_str(), object.kind.as_str()) != ("v1", "Pod") {
        return Ok(BindingView::none(node, CheckResult::NotAPod));
    }
    if !explanation.outcome.allowed() {
        return Ok(BindingView::none(node, CheckResult::PodRejected));
    }
    let mut pod = document.object.clone();
    json_patch::patch(&mut pod, &explanation.patch.0)
        .map_err(|error| format!("the policy's patch does not apply: {error}"))?;
    let record = check_pod(
        &pod,
        &object.namespace,
        &object.name,
        node,
        config,
        cluster,
        now,
    );
    Ok(BindingView::of(&record))
}

/// Explains every document, in order, with a progress bar on a terminal
/// for long runs.
pub fn explain_all(
    documents: &[Document],
    settings: &PolicySettings,
    cluster: &dyn ClusterReader,
    names: &NodeNames,
) -> Result<Vec<Explanation>, UsageError> {
    let progress = progress_bar(documents.len(), PROGRESS_FROM, "objects");
    let mut explanations = Vec::with_capacity(documents.len());
    for document in documents {
        if let Some(problem) = unsendable(&document.object) {
            return Err(UsageError(format!("{}: {problem}", document.source)));
        }
        let mut explanation = explain_object(&document.object, settings, cluster, names)
            .map_err(|problem| UsageError(format!("{}: {problem}", document.source)))?;
        explanation.source = Some(document.source.clone());
        explanations.push(explanation);
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(explanations)
}

/// A progress bar on standard error for `count` items called `what`, shown
/// on a terminal from more than `from` items on (hidden otherwise).
pub fn progress_bar(count: usize, from: usize, what: &str) -> ProgressBar {
    if count <= from || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(count as u64), ProgressDrawTarget::stderr());
    let template = format!("{{bar:40}} {{pos}}/{{len}} {what} ({{eta}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// `what-if`: the report on standard output; 0 when every object is
/// admitted after the change, 1 when one is rejected after it.
pub fn what_if(args: &WhatIfArgs) -> Result<u8, UsageError> {
    let change = FleetChange::parse(&args.set, &args.shapes).map_err(UsageError)?;
    if change.settings.is_empty() && !change.shapes.is_empty() {
        return Err(UsageError(
            "--shape chooses the shapes --set changes: give --set KEY=VALUE too".to_owned(),
        ));
    }
    if change.is_empty() && args.new_settings.is_none() {
        return Err(UsageError(
            "nothing to try: give --set KEY=VALUE (kubelet settings) or --new-settings FILE (the policy's)".to_owned(),
        ));
    }
    let explain = &args.explain;
    let before_settings = settings::load(explain.policy.settings.as_deref())?;
    let after_settings = match &args.new_settings {
        Some(path) => settings::load(Some(path))?,
        None => before_settings.clone(),
    };
    let documents = input::read_documents(&explain.objects)?;
    if documents.is_empty() {
        return Err(UsageError(
            "no objects to try: the inputs hold no document".to_owned(),
        ));
    }
    let fleet = fleet::open(&explain.fleet)?;
    // The labels are the cluster's: the change is made under the prefix
    // the cluster's labeler writes, the one of the settings in force.
    let prefix = &before_settings.config.label_prefix;
    let changed = ChangedCluster {
        base: fleet.reader(),
        change: &change,
        prefix,
    };
    let before_names = NodeNames::read(fleet.nodes(), prefix);
    let after_names = NodeNames::read(
        &changed.relabel_nodes(fleet.nodes()),
        &after_settings.config.label_prefix,
    );
    let before = explain_all(
        &documents,
        &before_settings,
        &Remembering::new(fleet.reader()),
        &before_names,
    )?;
    let after = explain_all(
        &documents,
        &after_settings,
        &Remembering::new(&changed),
        &after_names,
    )?;
    let outcomes: Vec<Outcome> = before
        .into_iter()
        .zip(after)
        .map(|(before, after)| {
            let shapes = match (&before.pod, &after.pod) {
                (Some(b), Some(a)) => compare(b, a, &change, prefix),
                _ => Vec::new(),
            };
            Outcome {
                before,
                after,
                shapes,
            }
        })
        .collect();
    let tried = Tried {
        fleet: change.clone(),
        new_settings: args.new_settings.is_some(),
    };
    let report = render::what_if::report(&tried, &outcomes, explain.output).map_err(UsageError)?;
    let mut stdout = anstream::stdout();
    // A closed pipe (`| head`) is not an error of the decision.
    let _ = stdout.write_all(report.as_bytes());
    let _ = stdout.flush();
    let rejected = outcomes.iter().any(|o| !o.after.outcome.allowed());
    Ok(if rejected { exit::FINDINGS } else { exit::OK })
}
