//! The what-if report: per object the decision before and after, and the
//! shapes whose verdict the change turns; `-o json|yaml` as a versioned
//! WhatIfReport (cli/README.md, "The WhatIfReport schema"). It reads the
//! plain data the what-if pipeline computed ([`crate::what_if::record`],
//! [`crate::what_if::compare`](mod@crate::what_if::compare)); nothing of
//! the what-if side depends on it but the pipeline that calls [`report`].

use crate::args::Output;
use crate::explain::{ObjectRef, Outcome as Decision};
use crate::render::report::{source_ref, Answer, SourceRef};
use crate::render::text::{counted, decision_cell, names_cell, styled, yes, HEADING, WARNING};
use crate::view::shapes::{verdict, ShapeRow};
use crate::what_if::compare::ShapeChange;
use crate::what_if::record::{Outcome, Tried};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};
use serde::Serialize;
use std::fmt::Write;

pub const KIND: &str = "WhatIfReport";

/// The report in `format`.
pub fn report(tried: &Tried, outcomes: &[Outcome], format: Output) -> Result<String, String> {
    let report = WhatIfReport::new(tried, outcomes);
    match format {
        Output::Table => Ok(text(&report, outcomes)),
        Output::Json => serde_json::to_string_pretty(&report)
            .map(|json| json + "\n")
            .map_err(|error| error.to_string()),
        Output::Yaml => serde_saphyr::to_string(&report).map_err(|error| error.to_string()),
        Output::Policyreport => Err("-o policyreport is written by audit only".to_owned()),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIfReport<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub change: ChangeView,
    pub summary: Summary,
    pub items: Vec<Item<'a>>,
}

/// What was tried.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeView {
    /// `--set`, as `kubeletSetting=value`.
    pub kubelet: Vec<String>,
    /// `--shape`; empty: every GPU node.
    pub shapes: Vec<String>,
    /// `--new-settings` was given.
    pub policy_settings: bool,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub objects: usize,
    /// Objects whose answer (outcome, message, warnings or patch) differs.
    pub decisions_changed: usize,
    pub rejected_before: usize,
    pub rejected_after: usize,
    /// Shape rows whose verdict or take changed, summed over objects.
    pub shapes_changed: usize,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRef<'a>>,
    pub object: &'a ObjectRef,
    pub decision_changed: bool,
    pub before: Answer<'a>,
    pub after: Answer<'a>,
    pub shapes: Vec<ShapeItem<'a>>,
}

/// One node shape before the change and what became of it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShapeItem<'a> {
    pub shape_before: Option<String>,
    pub shape_after: Option<String>,
    pub nodes: u32,
    /// The first names of its nodes (from a Node file; `null` otherwise).
    pub node_names: Option<&'a [String]>,
    /// The change applies to these nodes.
    pub changed: bool,
    /// The verdict or the take differs.
    pub differs: bool,
    pub before: ShapeSide<'a>,
    /// `null`: the after-read has no such shape.
    pub after: Option<ShapeSide<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShapeSide<'a> {
    pub verdict: &'static str,
    pub takes: bool,
    pub why: Option<&'a str>,
}

impl<'a> WhatIfReport<'a> {
    pub fn new(tried: &Tried, outcomes: &'a [Outcome]) -> Self {
        let items: Vec<Item> = outcomes.iter().map(Item::of).collect();
        let summary = Summary {
            objects: outcomes.len(),
            decisions_changed: items.iter().filter(|i| i.decision_changed).count(),
            rejected_before: outcomes
                .iter()
                .filter(|o| o.before.outcome == Decision::Rejected)
                .count(),
            rejected_after: outcomes
                .iter()
                .filter(|o| o.after.outcome == Decision::Rejected)
                .count(),
            shapes_changed: items
                .iter()
                .map(|i| i.shapes.iter().filter(|s| s.differs).count())
                .sum(),
        };
        WhatIfReport {
            api_version: crate::render::report::API_VERSION,
            kind: KIND,
            change: ChangeView {
                kubelet: tried.fleet.settings.iter().map(|s| s.to_string()).collect(),
                shapes: tried.fleet.shapes.iter().map(|s| s.to_string()).collect(),
                policy_settings: tried.new_settings,
            },
            summary,
            items,
        }
    }
}

impl<'a> Item<'a> {
    fn of(outcome: &'a Outcome) -> Self {
        // The before-record's rows are in the order of its shapes, as the
        // comparison's are: they name the nodes.
        let rows: &[ShapeRow] = outcome
            .before
            .record
            .as_ref()
            .map_or(&[], |record| record.shapes.as_slice());
        Item {
            source: outcome.before.source.as_ref().map(source_ref),
            object: &outcome.before.object,
            decision_changed: outcome.decision_changed(),
            before: Answer::of(&outcome.before),
            after: Answer::of(&outcome.after),
            shapes: outcome
                .shapes
                .iter()
                .enumerate()
                .map(|(index, shape)| ShapeItem::of(shape, rows.get(index)))
                .collect(),
        }
    }
}

impl<'a> ShapeItem<'a> {
    fn of(shape: &'a ShapeChange, row: Option<&'a ShapeRow>) -> Self {
        ShapeItem {
            shape_before: shape.before_shape.map(|id| id.to_string()),
            shape_after: shape.after_shape.map(|id| id.to_string()),
            nodes: shape.nodes,
            node_names: row.and_then(|row| row.node_names.as_deref()),
            changed: shape.changed,
            differs: shape.differs(),
            before: ShapeSide {
                verdict: verdict(&shape.before.answer),
                takes: shape.before.takes,
                why: shape.before.why.as_deref(),
            },
            after: shape.after.as_ref().map(|after| ShapeSide {
                verdict: verdict(&after.answer),
                takes: after.takes,
                why: after.why.as_deref(),
            }),
        }
    }
}

/// The human report.
fn text(report: &WhatIfReport, outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let change = &report.change;
    let mut tried: Vec<String> = change.kubelet.clone();
    if !tried.is_empty() {
        let on = if change.shapes.is_empty() {
            "every GPU node".to_owned()
        } else {
            format!("shape {}", change.shapes.join(", "))
        };
        tried = vec![format!("{} on {on}", tried.join(", "))];
    }
    if change.policy_settings {
        tried.push("the policy's new settings".to_owned());
    }
    let _ = writeln!(out, "what if: {}\n", tried.join("; "));
    for (item, outcome) in report.items.iter().zip(outcomes) {
        render_item(item, outcome, &mut out);
        out.push('\n');
    }
    let summary = &report.summary;
    let _ = writeln!(
        out,
        "{}: {} changed; rejected {} before, {} after; {} changed",
        counted(summary.objects, "object"),
        counted(summary.decisions_changed, "decision"),
        summary.rejected_before,
        summary.rejected_after,
        counted(summary.shapes_changed, "shape verdict")
    );
    out
}

fn render_item(item: &Item, outcome: &Outcome, out: &mut String) {
    let source = outcome
        .before
        .source
        .as_ref()
        .map(|source| format!(" ({source})"))
        .unwrap_or_default();
    let _ = writeln!(out, "{}{source}", styled(HEADING, &item.object.to_string()));
    let (before, after) = (
        decision_cell(&outcome.before),
        decision_cell(&outcome.after),
    );
    if !item.decision_changed {
        let _ = writeln!(out, "  decision: {after} (unchanged)");
    } else {
        let _ = writeln!(out, "  decision: {before} -> {after}");
        if let Some(message) = &outcome.after.message {
            let _ = writeln!(out, "  message after:  {message}");
        }
        let (was, now) = (&outcome.before.changes, &outcome.after.changes);
        let dropped: Vec<_> = was.iter().filter(|c| !now.contains(c)).collect();
        let added: Vec<_> = now.iter().filter(|c| !was.contains(c)).collect();
        for change in dropped {
            let _ = writeln!(out, "  no longer: {change}");
        }
        for change in added {
            let _ = writeln!(out, "  now:       {change}");
        }
        for warning in outcome
            .after
            .warnings
            .iter()
            .filter(|w| !outcome.before.warnings.contains(w))
        {
            let _ = writeln!(out, "  {}  {warning}", styled(WARNING, "new warning:"));
        }
    }
    let changed: Vec<&ShapeItem> = item.shapes.iter().filter(|s| s.differs).collect();
    if changed.is_empty() {
        if !item.shapes.is_empty() {
            let _ = writeln!(out, "  no shape's verdict changes");
        }
        return;
    }
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(["SHAPE", "NODES", "NODE NAMES", "BEFORE", "AFTER"]);
    let rows = outcome.before.record.as_ref().map(|r| r.shapes.as_slice());
    for (index, shape) in item.shapes.iter().enumerate().filter(|(_, s)| s.differs) {
        let id = |id: &Option<String>| id.clone().unwrap_or_else(|| "-".to_owned());
        let shape_cell = if shape.changed {
            format!("{} -> {}", id(&shape.shape_before), id(&shape.shape_after))
        } else {
            id(&shape.shape_before)
        };
        let names = rows
            .and_then(|rows| rows.get(index))
            .map_or_else(|| "-".to_owned(), names_cell);
        let side = |side: &ShapeSide| format!("{}, takes: {}", side.verdict, yes(side.takes));
        let after = shape
            .after
            .as_ref()
            .map_or_else(|| "not in the fleet read after".to_owned(), side);
        table.add_row([
            shape_cell,
            shape.nodes.to_string(),
            names,
            side(&shape.before),
            after,
        ]);
    }
    let _ = writeln!(out, "{table}");
    for shape in changed {
        if let (Some(after), Some(id)) = (&shape.after, &shape.shape_after) {
            if let Some(why) = after.why.filter(|_| !after.takes) {
                let _ = writeln!(out, "  shape {id} after: {why}");
            }
        }
    }
}
