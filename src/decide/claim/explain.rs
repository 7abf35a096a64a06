//! A claim's plan as the policy's answer: accept, complete (the constraint
//! to add; the caller writes it into the object), or reject, with the
//! numbers of the fit and the fix in every message.

use crate::cluster::dra::STANDARD_NUMA_ATTRIBUTE;
use crate::cluster::host::quote_host_error;
use crate::decide::claim::completion::{CannotAlign, Completion};
use crate::decide::claim::fit::{ClaimFit, Nodes, Shortfall};
use crate::decide::claim::patch::constraint_json;
use crate::decide::claim::ClaimPlan;
use crate::decide::{Decision, Verdict};
use crate::request::claim::{ClaimKind, DeviceConstraint};
use crate::settings::{AffinityMode, Config, QosMode};

/// At most this many groups of nodes are described in a rejection.
const GROUPS_SHOWN: usize = 3;

/// The answer for `plan`: `Mutate` carries the constraint to add.
pub fn decision(
    kind: &ClaimKind,
    name: &str,
    plan: &ClaimPlan,
    config: &Config,
) -> Decision<DeviceConstraint> {
    let what = format!("{} {name}", kind.kind);
    let mut warnings = Vec::new();
    match &plan.written {
        ClaimFit::NoFit(groups) => {
            return Decision::reject(format!("{what} {}", no_fit_text(groups)))
        }
        ClaimFit::NoDevices(classes) => warnings.push(format!(
            "{what}: no ResourceSlice publishes a device of class {}: its pods stay Pending until a DRA driver publishes one; the claim was not checked or aligned",
            classes.join(", ")
        )),
        ClaimFit::Fits | ClaimFit::Unknown(_) => {}
    }
    let verdict = match (&plan.completion, &plan.completed) {
        (Completion::Add(constraint), Some(ClaimFit::NoFit(groups))) => {
            let problem = format!(
                "its requests {} cannot share one NUMA node on any node: {}",
                quoted_list(&constraint.requests),
                describe_groups(groups)
            );
            if config.topology.affinity == AffinityMode::Required {
                Verdict::Reject(format!(
                    "{what} cannot be aligned (topology.affinity: required): {problem}. {}; or split the devices into one claim per NUMA node",
                    what_fits(groups)
                ))
            } else {
                warnings.push(format!(
                    "{what} was left without a NUMA constraint: {problem}; the scheduler may place its devices on different NUMA nodes"
                ));
                Verdict::Accept
            }
        }
        (Completion::Add(constraint), _) if config.qos.mode == QosMode::Validate => {
            Verdict::Reject(format!(
                "{what} does not align its requests {} on one NUMA node (qos.mode: validate): add {} to {}.constraints",
                quoted_list(&constraint.requests),
                constraint_json(constraint),
                devices_field(kind)
            ))
        }
        (Completion::Add(constraint), _) => Verdict::Mutate(constraint.clone()),
        (Completion::Cannot(cannot), _) if !matches!(plan.written, ClaimFit::NoDevices(_)) => {
            warnings.push(format!(
                "{what} was left without an alignment constraint: {}",
                cannot_align(cannot)
            ));
            Verdict::Accept
        }
        _ => Verdict::Accept,
    };
    Decision { verdict, warnings }
}

/// Why no node can allocate a claim, and what would fit.
pub fn no_fit_text(groups: &[(Nodes, Shortfall)]) -> String {
    format!(
        "cannot be allocated on any node: {}. {}",
        describe_groups(groups),
        what_fits(groups)
    )
}

/// The accepted answer when the claim is not read as this policy expects.
pub fn unread_claim(kind: &ClaimKind, name: &str, problem: &str) -> Decision {
    Decision {
        verdict: Verdict::Accept,
        warnings: vec![format!(
            "{} {name} was not checked or aligned: {problem}",
            kind.kind
        )],
    }
}

/// The accepted answer when the devices cannot be read.
pub fn no_inventory(kind: &ClaimKind, name: &str, problem: &str) -> Decision {
    Decision {
        verdict: Verdict::Accept,
        warnings: vec![format!(
            "{} {name} was not checked or aligned: {}; grant the policy resource.k8s.io/v1 DeviceClass and ResourceSlice in contextAwareResources",
            kind.kind,
            quote_host_error(problem)
        )],
    }
}

/// Where a kind's constraints are, for the fix.
fn devices_field(kind: &ClaimKind) -> String {
    kind.devices_path.join(".")
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `node a`, `nodes a and b`, `node a and 3 more nodes`, `4 nodes`.
fn nodes(nodes: &Nodes) -> String {
    let more = nodes.count.saturating_sub(1);
    match (nodes.examples.as_slice(), nodes.count) {
        ([one], 1) => format!("node {one}"),
        ([one, two, ..], 2) => format!("nodes {one} and {two}"),
        ([one, ..], _) => format!("node {one} and {more} more nodes"),
        ([], count) => format!("{count} nodes"),
    }
}

fn describe_groups(groups: &[(Nodes, Shortfall)]) -> String {
    let mut parts: Vec<String> = groups
        .iter()
        .take(GROUPS_SHOWN)
        .map(|(group, shortfall)| format!("on {}, {}", nodes(group), shortfall_text(shortfall)))
        .collect();
    if groups.len() > GROUPS_SHOWN {
        let more: u64 = groups[GROUPS_SHOWN..]
            .iter()
            .map(|(n, _)| u64::from(n.count))
            .sum();
        parts.push(format!("and {more} more nodes fall short as well"));
    }
    parts.join("; ")
}

fn devices(count: u32) -> String {
    match count {
        1 => "1 device".to_owned(),
        n => format!("{n} devices"),
    }
}

fn shortfall_text(shortfall: &Shortfall) -> String {
    match shortfall {
        Shortfall::Devices {
            requests,
            class,
            needed,
            published,
        } => format!(
            "{} {} {} of class {class} and the node's ResourceSlices publish {published}",
            plural_requests(requests),
            if requests.len() == 1 { "needs" } else { "need" },
            devices(*needed)
        ),
        Shortfall::OneValue {
            attribute,
            requests,
            class,
            needed,
            most,
            at,
        } => {
            let at = at
                .as_ref()
                .map(|value| format!(" ({attribute} {value})"))
                .unwrap_or_default();
            format!(
                "{} {} {} of class {class} with one {attribute} and the most that share one value is {most}{at}",
                plural_requests(requests),
                if requests.len() == 1 { "needs" } else { "need" },
                devices(*needed)
            )
        }
    }
}

fn plural_requests(requests: &[String]) -> String {
    match requests {
        [one] => format!("request {one:?}"),
        many => format!("requests {}", quoted_list(many)),
    }
}

/// What would fit: per class, the most any node offers.
fn what_fits(groups: &[(Nodes, Shortfall)]) -> String {
    let mut best: Vec<(String, String, u32)> = Vec::new();
    for (_, shortfall) in groups {
        let (class, scope, most) = match shortfall {
            Shortfall::Devices {
                class, published, ..
            } => (class, "on one node".to_owned(), *published),
            Shortfall::OneValue {
                class,
                attribute,
                most,
                ..
            } => (class, format!("with one {attribute}"), *most),
        };
        match best.iter_mut().find(|(c, s, _)| c == class && *s == scope) {
            Some(entry) => entry.2 = entry.2.max(most),
            None => best.push((class.clone(), scope, most)),
        }
    }
    let fits: Vec<String> = best
        .into_iter()
        .map(|(class, scope, most)| format!("at most {} of class {class} {scope}", devices(most)))
        .collect();
    format!("What would fit: {}", fits.join(", "))
}

fn cannot_align(cannot: &CannotAlign) -> String {
    match cannot {
        CannotAlign::UnreadClasses(classes) => format!(
            "the DeviceClass {} is not in the cluster's DeviceClass list, or its selectors name no device.driver the policy reads, so which devices it selects is not known",
            classes.join(", ")
        ),
        CannotAlign::Unpublished(classes) => format!(
            "no ResourceSlice publishes a device of class {} yet, so which NUMA attribute its devices carry is not known",
            classes.join(", ")
        ),
        CannotAlign::NoCommonAttribute {
            class,
            devices: count,
            attribute,
        } => format!(
            "{} of class {class} publish no {attribute} (nor their driver's numaNode), and the scheduler never allocates a device that lacks a constrained attribute; constrain the claim on an attribute all its devices publish, such as {}",
            devices(*count as u32),
            crate::cluster::dra::STANDARD_PCIE_ROOT_ATTRIBUTE
        ),
        CannotAlign::Selected(requests) => format!(
            "{} {} devices by CEL selectors, which the policy does not evaluate, so whether the selected devices can share one NUMA node is not known; if they can, add {{\"requests\":[...],\"matchAttribute\":\"{STANDARD_NUMA_ATTRIBUTE}\"}} to the claim's constraints",
            plural_requests(requests),
            if requests.len() == 1 { "chooses its" } else { "choose their" }
        ),
        CannotAlign::NoInterconnectAttribute => format!(
            "topology.alignment is nvlink, and the DRA drivers publish no NVLink attribute for full GPUs or MIG devices; set topology.alignment: numa to constrain GPU claims on {STANDARD_NUMA_ATTRIBUTE}"
        ),
    }
}
