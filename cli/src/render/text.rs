//! The human report: per object a heading, the decision, the message, the
//! warnings and the changed fields; a summary line at the end. Styles are
//! anstyle's and reach the terminal through anstream, which drops them
//! when standard output is not a terminal or NO_COLOR is set.

use crate::binding::{BindingView, CheckResult};
use crate::explain::{Explanation, Outcome};
use crate::view::claims::{ClaimStatus, ClaimsView};
use crate::view::shapes::{RecordView, ShapeRow, NAMES_SHOWN};
use anstyle::{AnsiColor, Style};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};
use gpu_topology_policy::decide::record::ViewRecord;
use std::fmt::Write;

pub(crate) const HEADING: Style = Style::new().bold();
pub(crate) const ACCEPTED: Style = AnsiColor::Green.on_default();
pub(crate) const MUTATED: Style = AnsiColor::Cyan.on_default();
pub(crate) const REJECTED: Style = AnsiColor::Red.on_default().bold();
pub(crate) const WARNING: Style = AnsiColor::Yellow.on_default();

pub(crate) fn styled(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// The report for `explanations`, styled (anstream strips the styles
/// where they are not wanted).
/// With `verbose`, each shape's figures per NUMA node and per alignment unit.
pub fn render(explanations: &[Explanation], verbose: bool) -> String {
    let mut out = String::new();
    for explanation in explanations {
        render_one(explanation, verbose, &mut out);
        out.push('\n');
    }
    let count = |outcome| explanations.iter().filter(|e| e.outcome == outcome).count();
    let _ = write!(
        out,
        "{}: {} accepted, {} mutated, {} rejected",
        counted(explanations.len(), "object"),
        count(Outcome::Accepted),
        count(Outcome::Mutated),
        count(Outcome::Rejected)
    );
    let bindings: Vec<&BindingView> = explanations
        .iter()
        .filter_map(|e| e.binding.as_ref())
        .filter(|b| b.allowed.is_some())
        .collect();
    if let Some(first) = bindings.first() {
        let refused = bindings.iter().filter(|b| b.refused()).count();
        let _ = write!(
            out,
            "; {} to {}: {} allowed, {refused} refused",
            counted(bindings.len(), "binding"),
            first.node,
            bindings.len() - refused
        );
    }
    out.push('\n');
    out
}

/// `1 object`, `2 objects`: a count and its noun, in number.
pub(crate) fn counted(count: usize, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        _ => format!("{count} {noun}s"),
    }
}

fn render_one(explanation: &Explanation, verbose: bool, out: &mut String) {
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
    let _ = writeln!(out, "  decision: {}", decision_cell(explanation));
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
    if let Some(record) = &explanation.record {
        render_record(record, verbose, out);
    }
    if let Some(claims) = &explanation.claims {
        render_claims(claims, out);
    }
    if let Some(binding) = &explanation.binding {
        render_binding(binding, out);
    }
}

/// The DRA stage: one line per claim of the pod, with its status, and the
/// words behind a status that is not plain.
fn render_claims(claims: &ClaimsView, out: &mut String) {
    let _ = writeln!(out, "  DRA claims:");
    if let Some(problem) = &claims.devices_unread {
        let _ = writeln!(
            out,
            "    {}  the published devices were not read: {problem}",
            styled(WARNING, "warning:")
        );
    }
    for claim in &claims.claims {
        let status = match claim.status {
            ClaimStatus::NoFit => styled(REJECTED, claim.status.as_str()),
            ClaimStatus::Fits | ClaimStatus::NoGpus => styled(ACCEPTED, claim.status.as_str()),
            _ => styled(WARNING, claim.status.as_str()),
        };
        let devices = match (claim.devices, claim.gpu_requests.as_slice()) {
            (Some(devices), [_, ..]) => format!(
                ", {} for GPU requests {}",
                counted(devices as usize, "device"),
                claim.gpu_requests.join(", ")
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "    {:?} from {} {}: {status}{devices}",
            claim.name, claim.source_kind, claim.source
        );
        if let Some(detail) = &claim.detail {
            let _ = writeln!(out, "      {detail}");
        }
        if let Some(cpus) = &claim.cpus {
            let _ = writeln!(out, "      CPUs: {cpus}");
        }
    }
}

/// `explain --node`: the binding check, as the policy would answer the
/// scheduler's binding of the pod to that node.
fn render_binding(binding: &BindingView, out: &mut String) {
    let _ = writeln!(out, "  Binding to {}:", binding.node);
    let decision = match (binding.check, binding.allowed) {
        (_, None) => None,
        (CheckResult::Refused, _) => Some(styled(REJECTED, "REFUSED")),
        (CheckResult::NotChecked, _) => Some(styled(WARNING, "allowed, not checked")),
        (CheckResult::Unknown, _) => Some(styled(WARNING, "allowed, unknown")),
        _ => Some(styled(ACCEPTED, "allowed")),
    };
    match decision {
        Some(decision) => {
            let _ = writeln!(out, "    decision: {decision}");
            if let Some(message) = &binding.message {
                let _ = writeln!(out, "    message:  {message}");
            }
        }
        None => {
            if let Some(message) = &binding.message {
                let _ = writeln!(out, "    note:     {message}");
            }
        }
    }
    for warning in &binding.warnings {
        let _ = writeln!(out, "    {}  {warning}", styled(WARNING, "warning:"));
    }
}

fn render_record(record: &RecordView, verbose: bool, out: &mut String) {
    let _ = writeln!(out, "  demand:   {}", record.demand);
    let view = match &record.view {
        ViewRecord::NodeList {
            nodes,
            malformed: 0,
        } => format!("the Node list: {nodes} labeled GPU nodes"),
        ViewRecord::NodeList { nodes, malformed } => {
            format!("the Node list: {nodes} labeled GPU nodes, {malformed} left out for malformed labels")
        }
        ViewRecord::Summary { nodes } => {
            format!(
                "the fleet summary: {nodes} GPU nodes (a summary counts shapes; it names no nodes)"
            )
        }
        ViewRecord::Static => {
            "the static limits (capacity.source: static): the cluster is not read".to_owned()
        }
        ViewRecord::Unavailable { reason } => format!("none: {reason}"),
    };
    let _ = writeln!(out, "  fleet:    {view}");
    for adjustment in &record.adjustments {
        let _ = writeln!(out, "  adjusted: {adjustment}");
    }
    if record.shapes.is_empty() {
        return;
    }
    let _ = writeln!(out, "{}", shape_table(record));
    for shape in &record.shapes {
        let id = shape.shape.as_deref().unwrap_or("(no shape label)");
        if let (Some(why), Some(fix)) = (&shape.why, &shape.fix) {
            let _ = writeln!(out, "  shape {id}: {why}");
            let _ = writeln!(out, "    fix: {fix}");
        }
        if verbose {
            render_figures(id, shape, out);
        }
    }
}

/// The decision in a word, styled: accepted, mutated (N fields), REJECTED.
pub(crate) fn decision_cell(explanation: &Explanation) -> String {
    match explanation.outcome {
        Outcome::Accepted => styled(ACCEPTED, "accepted"),
        Outcome::Mutated => {
            let n = explanation.changes.len();
            let fields = if n == 1 { "field" } else { "fields" };
            styled(MUTATED, &format!("mutated ({n} {fields})"))
        }
        Outcome::Rejected => styled(REJECTED, "REJECTED"),
    }
}

/// The first few node names of a shape and how many more there are.
pub(crate) fn names_cell(shape: &ShapeRow) -> String {
    match &shape.node_names {
        None => "-".to_owned(),
        Some(names) => {
            let shown = &names[..names.len().min(NAMES_SHOWN)];
            let more = (shape.nodes as usize).saturating_sub(shown.len());
            match more {
                0 => shown.join(", "),
                more => format!("{} +{more} more", shown.join(", ")),
            }
        }
    }
}

pub(crate) fn yes(flag: bool) -> &'static str {
    if flag {
        "yes"
    } else {
        "no"
    }
}

fn or_unknown(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("?")
}

fn shape_table(record: &RecordView) -> Table {
    let shapes = &record.shapes;
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header([
            "SHAPE",
            "GPUS",
            "NODES",
            "NODE NAMES",
            "TOPOLOGY MANAGER",
            "CPU MANAGER",
            "MEMORY MANAGER",
            "VERDICT",
            "TAKES",
            "AFFINITY",
        ]);
    for shape in shapes {
        let names = names_cell(shape);
        let kubelet = &shape.kubelet;
        // The scope the verdict assumes is said only where the labels do
        // not publish it (the settings' scope is assumed there).
        let topology_manager = match &kubelet.topology_manager_scope {
            Some(scope) if *scope == shape.scope => {
                format!(
                    "{}, {scope} scope",
                    or_unknown(&kubelet.topology_manager_policy)
                )
            }
            _ => format!(
                "{}, {} scope assumed",
                or_unknown(&kubelet.topology_manager_policy),
                shape.scope
            ),
        };
        let cpu_manager = match kubelet.full_pcpus_only {
            Some(true) => format!(
                "{}, full-pcpus-only",
                or_unknown(&kubelet.cpu_manager_policy)
            ),
            _ => or_unknown(&kubelet.cpu_manager_policy).to_owned(),
        };
        let affinity = match (
            record.adds_required_affinity,
            shape.selected,
            shape.preferred,
        ) {
            (false, _, false) if !record.adds_preferred_affinity => "none added",
            (false, _, true) => "preferred",
            (false, _, false) => "not preferred",
            (true, true, true) => "selected, preferred",
            (true, true, false) => "selected",
            (true, false, _) => "excluded",
        };
        table.add_row([
            shape.shape.clone().unwrap_or_else(|| "-".to_owned()),
            shape
                .gpus
                .map_or_else(|| "?".to_owned(), |gpus| gpus.to_string()),
            shape.nodes.to_string(),
            names,
            topology_manager,
            cpu_manager,
            or_unknown(&kubelet.memory_manager_policy).to_owned(),
            shape.verdict.to_owned(),
            yes(shape.takes).to_owned(),
            affinity.to_owned(),
        ]);
    }
    table
}

/// `-v`: what each NUMA node offers and how each unit's hints merged.
fn render_figures(id: &str, shape: &ShapeRow, out: &mut String) {
    let _ = writeln!(out, "  shape {id}, per NUMA node:");
    let figure = |value: Option<u32>| value.map_or_else(|| "?".to_owned(), |v| v.to_string());
    for numa in &shape.numa {
        let _ = writeln!(
            out,
            "    NUMA {}: {} GPUs, {} CPUs ({} reserved), {} MiB memory",
            numa.node,
            figure(numa.gpus),
            figure(numa.cpus),
            figure(numa.reserved_cpus),
            figure(numa.memory_mib)
        );
    }
    for unit in &shape.units {
        let hint = unit
            .hint
            .as_deref()
            .unwrap_or("none (Topology Manager policy none)");
        let aligned = if unit.aligned {
            "aligned"
        } else {
            "not aligned"
        };
        let _ = writeln!(out, "    {}: merged hint {hint}, {aligned}", unit.unit);
        for resource in &unit.resources {
            let _ = writeln!(out, "      {resource}");
        }
    }
}
