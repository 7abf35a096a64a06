//! The audit for people: one row per pod (its node, GPUs and each check in
//! a word), then every finding in a sentence, then the totals. The table
//! is comfy-table's, plain; the results below are coloured through anstyle,
//! which anstream drops when standard output is no terminal or NO_COLOR is
//! set (the explain report's colour policy).

use super::checks::{Check, Outcome, PodAudit};
use super::failed::FailedAudit;
use super::report::Summary;
use anstyle::{AnsiColor, Style};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};

const HEADER: [&str; 8] = [
    "POD",
    "NODE",
    "GPUS",
    "QOS",
    "CPUS",
    "KUBELET NOW",
    "LABELS",
    "RESULT",
];

fn style(outcome: Outcome) -> Style {
    match outcome {
        Outcome::Pass => AnsiColor::Green.on_default(),
        Outcome::Warn => AnsiColor::Yellow.on_default(),
        Outcome::Fail => AnsiColor::Red.on_default().bold(),
        Outcome::Skip => Style::new().dimmed(),
    }
}

fn styled(outcome: Outcome, text: &str) -> String {
    let style = style(outcome);
    format!("{style}{text}{style:#}")
}

/// The check of `rule` in a word, `-` when the pod has none.
fn cell(audit: &PodAudit, rule: &str) -> String {
    audit
        .checks
        .iter()
        .find(|check| check.rule() == rule)
        .map_or_else(|| "-".to_owned(), Check::short)
}

pub fn render(audits: &[PodAudit], failed: &[FailedAudit]) -> String {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(HEADER);
    for audit in audits {
        let admission = if audit.pod.node.is_none() {
            "pending".to_owned()
        } else {
            cell(audit, "kubelet-admission")
        };
        table.add_row(vec![
            format!("{}/{}", audit.pod.namespace, audit.pod.name),
            audit.pod.node.clone().unwrap_or_else(|| "-".to_owned()),
            audit.gpus.to_string(),
            cell(audit, "guaranteed-qos"),
            cell(audit, "exclusive-cpus"),
            admission,
            cell(audit, "node-labels"),
            audit.outcome().as_str().to_owned(),
        ]);
    }
    let mut out = table.to_string();
    out.push('\n');
    let findings: Vec<String> = audits
        .iter()
        .flat_map(|audit| {
            audit
                .checks
                .iter()
                .filter(|check| check.outcome() != Outcome::Pass)
                .map(move |check| {
                    format!(
                        "{}/{} {} {}: {}",
                        audit.pod.namespace,
                        audit.pod.name,
                        check.rule(),
                        styled(check.outcome(), check.outcome().as_str()),
                        check.message()
                    )
                })
        })
        .collect();
    if !findings.is_empty() {
        out.push('\n');
        for finding in findings {
            out.push_str(&finding);
            out.push('\n');
        }
    }
    if !failed.is_empty() {
        render_failed(failed, &mut out);
    }
    let summary = Summary::of(audits, failed);
    out.push_str(&format!(
        "\n{} GPU pods, {} with findings: {} fail, {} warn, {} pass, {} skipped checks\n",
        summary.pods,
        summary.pods_with_findings,
        styled(Outcome::Fail, &summary.fail.to_string()),
        styled(Outcome::Warn, &summary.warn.to_string()),
        styled(Outcome::Pass, &summary.pass.to_string()),
        summary.skip
    ));
    if summary.failed_pods > 0 {
        out.push_str(&format!(
            "{} failed at the kubelet: the binding check refuses {} of their bindings now\n",
            match summary.failed_pods {
                1 => "1 pod".to_owned(),
                n => format!("{n} pods"),
            },
            styled(Outcome::Fail, &summary.failed_pods_refused_now.to_string()),
        ));
    }
    out
}

/// The pods that failed at the kubelet: one row each (its node, the
/// kubelet's reason, what the binding check says now), then each in full.
fn render_failed(failed: &[FailedAudit], out: &mut String) {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(["FAILED POD", "NODE", "REASON", "BINDING CHECK NOW"]);
    for failed in failed {
        table.add_row(vec![
            format!("{}/{}", failed.pod.namespace, failed.pod.name),
            failed.pod.node.clone().unwrap_or_else(|| "-".to_owned()),
            failed.pod.reason.clone(),
            failed.short().to_owned(),
        ]);
    }
    out.push_str("\nPods that failed at the kubelet's admission; the binding check answers on each node's occupancy now, which a failed pod holds no part of:\n");
    out.push_str(&table.to_string());
    out.push_str("\n\n");
    for failed in failed {
        out.push_str(&format!(
            "{}/{} {}: {}\n  {}\n",
            failed.pod.namespace,
            failed.pod.name,
            styled(failed.outcome(), failed.outcome().as_str()),
            failed.failure(),
            failed.check_words()
        ));
    }
}
