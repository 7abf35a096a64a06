//! `gpu-topology what-if`: the decision for each object before and after
//! changed kubelet settings (on some shapes or all) or changed policy
//! settings, each side decided by the policy's own code through the same
//! pipeline as `explain`: the after-side reads the cluster as the labeler
//! would publish it after the change ([`cluster::ChangedCluster`]).
//!
//! The dependencies run one way: this pipeline ([`run`]) computes the
//! plain data of [`record`] (with [`change`], [`cluster`] and
//! [`compare`](mod@compare)) and hands it to the renderer
//! ([`crate::render::what_if`]), which reads [`record`] and
//! [`compare`](mod@compare) and never this pipeline.

pub mod change;
pub mod cluster;
pub mod compare;
pub mod record;

use crate::args::WhatIfArgs;
use crate::remembered::Remembering;
use crate::render::shapes::NodeNames;
use crate::run::{explain_all, UsageError};
use crate::{exit, fleet, input, render, settings};
use change::FleetChange;
use cluster::ChangedCluster;
use compare::compare;
use record::{Outcome, Tried};
use std::io::Write;

/// `what-if`: the report on standard output; 0 when every object is
/// admitted after the change, 1 when one is rejected after it.
pub fn run(args: &WhatIfArgs) -> Result<u8, UsageError> {
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
