//! `--dry-run` output: the labels (`key=value` lines, or one JSON object) and,
//! in text mode, a human-readable topology summary.

use super::Labels;
use crate::cliques::MAX_LISTED_CLIQUES;
use crate::model::{Groups, ToolReport};
use crate::reconcile::Outcome;
use std::fmt::Write;

/// Exactly one JSON object mapping each label key to its value, newline-terminated.
pub fn render_json(labels: &Labels) -> String {
    let mut text = serde_json::Value::from(
        labels
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
            .collect::<serde_json::Map<_, _>>(),
    )
    .to_string();
    text.push('\n');
    text
}

/// `key=value` lines, a blank line, then the topology summary.
pub fn render_text(labels: &Labels, outcome: &Outcome) -> String {
    let mut text = String::new();
    for (key, value) in labels {
        let _ = writeln!(text, "{key}={value}");
    }
    text.push('\n');
    text.push_str(&summary(outcome));
    text
}

/// GPUs with NUMA node and PCI address, the link matrix and the groups.
pub fn summary(outcome: &Outcome) -> String {
    let summary = &outcome.summary;
    let mut text = String::from("Topology\n");
    match summary.vendor {
        Some(vendor) => {
            let _ = writeln!(text, "  vendor: {vendor}");
        }
        None => text.push_str("  vendor: none selected\n"),
    }
    if !summary.sysfs_gpus.is_empty() {
        text.push_str("  GPUs (sysfs):\n");
        for gpu in &summary.sysfs_gpus {
            let numa = gpu.numa.map_or("unknown".to_owned(), |n| n.to_string());
            let _ = writeln!(
                text,
                "    {}  class 0x{:06x}  NUMA node {numa}",
                gpu.address, gpu.class
            );
        }
    }
    if let Some((source, placement)) = &summary.numa {
        let nodes: Vec<String> = placement
            .iter()
            .map(|(node, n)| format!("node {node}: {n}"))
            .collect();
        let _ = writeln!(
            text,
            "  GPUs per NUMA node ({source}): {}",
            nodes.join(", ")
        );
    }
    if let Some(report) = &summary.links {
        text.push_str(&links(report));
    }
    if !outcome.warnings.is_empty() {
        text.push_str("  Left out:\n");
        for warning in &outcome.warnings {
            let _ = writeln!(text, "    - {warning}");
        }
    }
    text
}

fn links(report: &ToolReport) -> String {
    let mut text = format!("  GPUs ({}):\n", report.tool);
    for gpu in &report.gpus {
        let address = gpu.pci_address.as_deref().unwrap_or("-");
        let _ = writeln!(text, "    {}  {address}  NUMA {}", gpu.name, gpu.numa);
    }
    let names: Vec<&str> = report.gpus.iter().map(|g| g.name.as_str()).collect();
    let _ = writeln!(text, "  Links ({}):", report.tool);
    let header: String = names.iter().map(|n| format!("{n:<6}")).collect();
    let _ = writeln!(text, "    {:<6}{}", "", header.trim_end());
    for (a, name) in names.iter().enumerate() {
        let cells: String = (0..names.len())
            .map(|b| {
                let cell = match report.links.get(a, b) {
                    _ if a == b => "X".to_owned(),
                    Some(link) => link.cell(),
                    None => "?".to_owned(),
                };
                format!("{cell:<6}")
            })
            .collect();
        let _ = writeln!(text, "    {name:<6}{}", cells.trim_end());
    }
    let group = |members: &Vec<usize>| {
        members
            .iter()
            .filter_map(|&i| names.get(i).copied())
            .collect::<Vec<_>>()
            .join(",")
    };
    let groups = |groups: &Groups| match groups {
        Groups::Listed(cliques) if cliques.is_empty() => "none".to_owned(),
        Groups::Listed(cliques) => cliques
            .iter()
            .map(|c| format!("{{{}}}", group(c)))
            .collect::<Vec<_>>()
            .join(" "),
        Groups::TooMany => format!("more than {MAX_LISTED_CLIQUES} (not listed)"),
    };
    match report.links.fabric_cliques() {
        Some(cliques) => {
            let _ = writeln!(text, "  NVLink/XGMI groups: {}", groups(&cliques));
        }
        None => text.push_str("  NVLink/XGMI groups: not shown by this source\n"),
    }
    let _ = writeln!(
        text,
        "  PCIe switch groups: {}",
        groups(&report.links.pcie_switch_groups())
    );
    text
}
