//! The human report: per object a heading, the decision, the message, the
//! warnings and the changed fields; a summary line at the end. Styles are
//! anstyle's and reach the terminal through anstream, which drops them
//! when standard output is not a terminal or NO_COLOR is set.

use crate::explain::{Explanation, Outcome};
use anstyle::{AnsiColor, Style};
use std::fmt::Write;

const HEADING: Style = Style::new().bold();
const ACCEPTED: Style = AnsiColor::Green.on_default();
const MUTATED: Style = AnsiColor::Cyan.on_default();
const REJECTED: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default();

fn styled(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// The report for `explanations`, styled (anstream strips the styles
/// where they are not wanted).
pub fn render(explanations: &[Explanation]) -> String {
    let mut out = String::new();
    for explanation in explanations {
        render_one(explanation, &mut out);
        out.push('\n');
    }
    let count = |outcome| explanations.iter().filter(|e| e.outcome == outcome).count();
    let _ = writeln!(
        out,
        "{} objects: {} accepted, {} mutated, {} rejected",
        explanations.len(),
        count(Outcome::Accepted),
        count(Outcome::Mutated),
        count(Outcome::Rejected)
    );
    out
}

fn render_one(explanation: &Explanation, out: &mut String) {
    let source = explanation
        .source
        .as_ref()
        .map(|source| format!(" ({source})"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}{source}",
        styled(HEADING, &explanation.object.to_string())
    );
    let decision = match explanation.outcome {
        Outcome::Accepted => styled(ACCEPTED, "accepted"),
        Outcome::Mutated => {
            let n = explanation.changes.len();
            let fields = if n == 1 { "field" } else { "fields" };
            styled(MUTATED, &format!("mutated ({n} {fields})"))
        }
        Outcome::Rejected => styled(REJECTED, "REJECTED"),
    };
    let _ = writeln!(out, "  decision: {decision}");
    if let Some(message) = &explanation.message {
        let _ = writeln!(out, "  message:  {message}");
    }
    for warning in &explanation.warnings {
        let _ = writeln!(out, "  {}  {warning}", styled(WARNING, "warning:"));
    }
    if !explanation.changes.is_empty() {
        let _ = writeln!(out, "  changes:");
        for change in &explanation.changes {
            let _ = writeln!(out, "    {change}");
        }
    }
}
