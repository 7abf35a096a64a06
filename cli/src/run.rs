//! The commands, from parsed arguments to an exit code ([`crate::exit`]).

use crate::args::ExplainArgs;
use crate::exit;
use crate::explain::{explain_object, Explanation};
use crate::fleet;
use crate::input::{self, Document};
use crate::remembered::Remembering;
use crate::render;
use crate::render::shapes::NodeNames;
use crate::request::unsendable;
use crate::settings::{self, PolicySettings};
use gpu_topology_policy::cluster::host::ClusterReader;
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
/// admitted, 1 when one is rejected.
pub fn explain(args: &ExplainArgs) -> Result<u8, UsageError> {
    let (report, code) = explain_report(args)?;
    let mut stdout = anstream::stdout();
    // A closed pipe (`| head`) is not an error of the decision.
    let _ = stdout.write_all(report.as_bytes());
    let _ = stdout.flush();
    Ok(code)
}

/// What `explain` prints and its exit code: the whole command but the
/// printing (what the benchmark of 1,000 manifests measures).
pub fn explain_report(args: &ExplainArgs) -> Result<(String, u8), UsageError> {
    let settings = settings::load(args.policy.settings.as_deref())?;
    let documents = input::read_documents(&args.objects)?;
    if documents.is_empty() {
        return Err(UsageError(
            "no objects to explain: the inputs hold no document".to_owned(),
        ));
    }
    let fleet = fleet::open(&args.fleet)?;
    // One fleet for the whole run: the policy's cluster read is made once.
    let cluster = Remembering::new(fleet.reader());
    let names = NodeNames::read(fleet.nodes(), &settings.config.label_prefix);
    let explanations = explain_all(&documents, &settings, &cluster, &names)?;
    let report =
        render::explain_report(&explanations, args.output, args.verbose).map_err(UsageError)?;
    let rejected = explanations.iter().any(|e| !e.outcome.allowed());
    Ok((report, if rejected { exit::FINDINGS } else { exit::OK }))
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
