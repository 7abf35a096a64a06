//! A claim's plan as the policy's answer: accept, complete (the constraint
//! to add; the caller writes it into the object), or reject, with the
//! numbers of the fit and the fix in every message.

use crate::cluster::dra::{partition_size, PARTITION_ATTRIBUTE_PREFIX, STANDARD_NUMA_ATTRIBUTE};
use crate::cluster::host::quote_host_error;
use crate::decide::answer::{Decision, Verdict};
use crate::decide::claim::completion::{CannotAlign, Completion};
use crate::decide::claim::cpus::{self, CannotAddCpus, CpuPlan};
use crate::decide::claim::fit::{ClaimFit, Nodes, Shortfall, Unknown};
use crate::decide::claim::patch::constraint_json;
use crate::decide::claim::pod::{ClaimOutcome, ClaimRecord, DraStage};
use crate::decide::claim::pod_notes::{DraRejection, DraWarning};
use crate::decide::claim::ClaimPlan;
use crate::request::claim::{ClaimKind, ConstraintRule, DeviceConstraint};
use crate::request::quantity::Quantity;
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
            let place = Place::of(constraint);
            let problem = format!(
                "its requests {} cannot share {} on any node: {}",
                quoted_list(&constraint.requests),
                place.one(),
                describe_groups(groups)
            );
            if config.topology.affinity == AffinityMode::Required {
                Verdict::Reject(format!(
                    "{what} cannot be aligned (topology.affinity: required): {problem}. {}; or split the devices into one claim per {}",
                    what_fits(groups),
                    place.unit()
                ))
            } else {
                warnings.push(format!(
                    "{what} was left without {}: {problem}; the scheduler may place its devices on different {}s",
                    place.constraint(),
                    place.unit()
                ));
                Verdict::Accept
            }
        }
        (Completion::Add(constraint), _) if config.qos.mode == QosMode::Validate => {
            Verdict::Reject(format!(
                "{what} does not align its requests {} on {} (qos.mode: validate): add {} to {}.constraints",
                quoted_list(&constraint.requests),
                Place::of(constraint).one(),
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

/// Where a completion constraint puts a claim's devices, as messages say it.
enum Place {
    NumaNode,
    NvlinkPartition,
}

impl Place {
    fn of(constraint: &DeviceConstraint) -> Self {
        match &constraint.rule {
            ConstraintRule::MatchAttribute(name) if partition_size(name).is_some() => {
                Place::NvlinkPartition
            }
            _ => Place::NumaNode,
        }
    }

    fn unit(&self) -> &'static str {
        match self {
            Place::NumaNode => "NUMA node",
            Place::NvlinkPartition => "NVLink partition",
        }
    }

    fn one(&self) -> String {
        format!("one {}", self.unit())
    }

    fn constraint(&self) -> &'static str {
        match self {
            Place::NumaNode => "a NUMA constraint",
            Place::NvlinkPartition => "an NVLink partition constraint",
        }
    }
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
#[inline(never)]
pub(crate) fn unread_claim(kind: &ClaimKind, name: &str, problem: &str) -> Decision {
    Decision {
        verdict: Verdict::Accept,
        warnings: vec![format!(
            "{} {name} was not checked or aligned: {problem}",
            kind.kind
        )],
    }
}

/// The accepted answer when the devices cannot be read.
pub(crate) fn no_inventory(kind: &ClaimKind, name: &str, problem: &str) -> Decision {
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
        Shortfall::Capacity {
            request,
            class,
            capacity,
            needed,
            most,
            within,
        } => {
            let scope = match within {
                Some((attribute, _)) => format!(" at one value of {attribute}"),
                None => String::new(),
            };
            let offered = match (most, within) {
                (None, _) => "no device offers it".to_owned(),
                (Some(most), Some((attribute, Some(at)))) => {
                    format!("the most one offers is {most} ({attribute} {at})")
                }
                (Some(most), _) => format!("the most one offers is {most}"),
            };
            format!(
                "request {request:?} needs {needed} of {capacity} from one device of class {class}{scope} and {offered}"
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
    let mut capacity: Vec<(String, String, String, Option<Quantity>)> = Vec::new();
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
            Shortfall::Capacity {
                class,
                capacity: name,
                most,
                within,
                ..
            } => {
                let scope = within
                    .as_ref()
                    .map(|(attribute, _)| format!(" with one {attribute}"))
                    .unwrap_or_default();
                match capacity
                    .iter_mut()
                    .find(|(c, n, s, _)| c == class && n == name && *s == scope)
                {
                    Some(entry) => entry.3 = entry.3.max(*most),
                    None => capacity.push((class.clone(), name.clone(), scope, *most)),
                }
                continue;
            }
        };
        match best.iter_mut().find(|(c, s, _)| c == class && *s == scope) {
            Some(entry) => entry.2 = entry.2.max(most),
            None => best.push((class.clone(), scope, most)),
        }
    }
    let fits: Vec<String> = best
        .into_iter()
        .map(|(class, scope, most)| format!("at most {} of class {class} {scope}", devices(most)))
        .chain(
            capacity
                .into_iter()
                .map(|(class, name, scope, most)| match most {
                    Some(most) => {
                        format!("at most {most} of {name} from one device of class {class}{scope}")
                    }
                    None => format!("no {name} from a device of class {class}{scope}"),
                }),
        )
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
        CannotAlign::NoInterconnectAttribute { classes, gpus } => format!(
            "topology.alignment is nvlink, and not every device of {} publishes an NVLink partition of {gpus} GPUs or more (the NVIDIA DRA driver publishes {PARTITION_ATTRIBUTE_PREFIX}<N> on VFIO devices under FabricManagerPartitioning; full GPUs and MIG devices carry no NVLink attribute); set topology.alignment: numa to constrain GPU claims on {STANDARD_NUMA_ATTRIBUTE}",
            match classes.as_slice() {
                [one] => format!("class {one}"),
                many => format!("classes {}", many.join(", ")),
            }
        ),
    }
}

/// What pod `pod` is told about dra-driver-cpu's CPUs for its claim
/// `claim` from ResourceClaimTemplate `namespace/template`; nothing where
/// the plan does not apply.
pub(crate) fn cpu_plan_note(
    pod: &str,
    claim: &str,
    namespace: &str,
    template: &str,
    plan: &CpuPlan,
) -> Option<String> {
    let generated = format!(
        "the ResourceClaim generated for its claim {claim:?} from ResourceClaimTemplate {namespace}/{template}"
    );
    match plan {
        CpuPlan::NotApplicable => None,
        CpuPlan::Add(add) => Some(format!(
            "Pod {pod}: {generated} gets {} of device class {} (request {:?}) under one matchAttribute constraint on {} with its {}, which dra-driver-cpu gives to {}; dra-driver-cpu needs cpuManagerPolicy: none on its nodes",
            cpus_text(add.request.cpus),
            add.request.class,
            add.request.name,
            cpus::constraint_attribute(add),
            plural_requests(&add.constraint.requests[..add.constraint.requests.len().saturating_sub(1)]),
            add.container
        )),
        CpuPlan::Cannot(cannot) => Some(format!(
            "Pod {pod}: {generated} gets no CPUs from dra-driver-cpu on its GPUs' NUMA node: {}",
            cannot_add_cpus(cannot)
        )),
    }
}

fn cpus_text(count: u64) -> String {
    match count {
        1 => "1 CPU".to_owned(),
        n => format!("{n} CPUs"),
    }
}

fn cannot_add_cpus(cannot: &CannotAddCpus) -> String {
    match cannot {
        CannotAddCpus::NoContainer => {
            "no container names the claim in resources.claims, so no container would get the CPUs".to_owned()
        }
        CannotAddCpus::SharedBy(containers) => format!(
            "{} share it, and a dra-driver-cpu claim serves one container; give each container a claim of its own",
            containers.iter().map(ToString::to_string).collect::<Vec<_>>().join(" and ")
        ),
        CannotAddCpus::OneRequestOnly { container, request } => format!(
            "{container} takes only its request {request:?} (resources.claims[].request), so CPUs added to the claim would not reach it; name the claim without request"
        ),
        CannotAddCpus::PodLevelResources => {
            "the pod sets pod-level resources, which the claim's CPUs cannot mirror per container".to_owned()
        }
        CannotAddCpus::NoWholeCpus { container, cpu } => match cpu {
            Some(cpu) => format!(
                "{container} requests cpu {cpu:?}, not a whole number of CPUs; request whole CPUs (the claim's CPUs mirror the container's cpu request)"
            ),
            None => format!(
                "{container} requests no cpu; request whole CPUs (the claim's CPUs mirror the container's cpu request)"
            ),
        },
        CannotAddCpus::MixedModes => {
            "dra-driver-cpu publishes CPUs grouped on some nodes and one by one on others (--cpu-device-mode), and one request cannot take both".to_owned()
        }
        CannotAddCpus::TooManyDevices { devices: count } => format!(
            "one device per CPU would give the claim {count} devices, more than the {} a claim may have; run dra-driver-cpu in grouped mode, or request fewer CPUs",
            cpus::MAX_CLAIM_DEVICES
        ),
        CannotAddCpus::AllocatesAll(request) => format!(
            "its request {request:?} takes every matching device (allocationMode: All), so whether the CPUs would take the claim past the {} devices a claim may have is not known",
            cpus::MAX_CLAIM_DEVICES
        ),
        CannotAddCpus::ClaimFull => format!(
            "the claim has the {} requests or constraints a claim may have",
            cpus::MAX_CLAIM_ENTRIES
        ),
        CannotAddCpus::UnknownMode => format!(
            "dra-driver-cpu's shared CPU devices publish no {} capacity the policy can read (a fleet summary written by an older summarizer keeps none), so how to ask N of their CPUs is not known; upgrade the summarizer",
            cpus::CPU_CAPACITY
        ),
        CannotAddCpus::DistinctOverAll(attribute) => format!(
            "its distinctAttribute constraint on {attribute} covers every request, the CPUs too, and the scheduler never allocates a device that lacks the attribute; name the requests it is meant for"
        ),
        CannotAddCpus::NoNumaAttribute(cannot) => cannot_align(cannot),
        CannotAddCpus::NoFit(groups) => format!(
            "no node could allocate it with the CPUs on its GPUs' NUMA node: {}. {}",
            describe_groups(groups),
            what_fits(groups)
        ),
        CannotAddCpus::NotKnown(unknown) => format!(
            "whether a node could allocate it with the CPUs is not known: {}",
            unknown_text(unknown)
        ),
        CannotAddCpus::Narrows(groups) => format!(
            "{} could allocate it but not with the CPUs ({}), and under topology.affinity: preferred the policy never keeps a pod off a node it could run on; run dra-driver-cpu on those nodes, or set topology.affinity: required",
            lost_nodes(groups),
            describe_groups(groups)
        ),
    }
}

/// `3 nodes` (or `node a`) in all.
fn lost_nodes(groups: &[(Nodes, Shortfall)]) -> String {
    let count: u64 = groups.iter().map(|(nodes, _)| u64::from(nodes.count)).sum();
    match groups {
        [(one, _)] => nodes(one),
        _ => format!("{count} nodes"),
    }
}

fn unknown_text(unknown: &Unknown) -> String {
    match unknown {
        Unknown::UnreadClass(class) => format!(
            "the DeviceClass {class} is not in the cluster's DeviceClass list, or its selectors name no device.driver the policy reads"
        ),
        Unknown::PoolUpdating(driver) => {
            format!("a ResourceSlice pool of driver {driver} is being updated")
        }
        Unknown::SharedPool(class) => format!(
            "devices of class {class} are offered to nodes through a node selector, which the policy does not read"
        ),
    }
}

/// The message of the DRA stage's rejection, if it rejects the pod.
pub(crate) fn dra_rejection(stage: &DraStage) -> Option<String> {
    let (pod, namespace) = (&stage.pod, &stage.namespace);
    Some(match stage.rejection.as_ref()? {
        DraRejection::TemplateCannotFit { record } => match stage.claims.get(*record) {
            Some(ClaimRecord {
                claim,
                outcome:
                    ClaimOutcome::Gpus {
                        fit: Some(ClaimFit::NoFit(groups)),
                        ..
                    },
            }) => format!(
                "Pod {pod} cannot be scheduled: its claim {:?} comes from ResourceClaimTemplate {namespace}/{}, which {}",
                claim.name,
                claim.source,
                no_fit_text(groups)
            ),
            // The stage records the claim's fit with the rejection, so this
            // is not reached; the rejection stands all the same.
            _ => format!(
                "Pod {pod} cannot be scheduled: a claim template of it cannot be allocated on any node"
            ),
        },
    })
}

/// The DRA stage's warnings, in words, in the order it made them.
pub(crate) fn dra_warnings(stage: &DraStage) -> Vec<String> {
    (stage.warnings.iter())
        .filter_map(|warning| dra_warning(warning, stage))
        .collect()
}

/// One warning for the pod of `stage`; `None` for a CPU plan that does
/// not apply (nothing to say).
fn dra_warning(warning: &DraWarning, stage: &DraStage) -> Option<String> {
    let (pod, namespace) = (&stage.pod, &stage.namespace);
    Some(match warning {
        DraWarning::Unreadable {
            record,
            access_may_fix,
        } => {
            let record = stage.claims.get(*record)?;
            let (claim, ClaimOutcome::Unreadable(problem)) = (&record.claim, &record.outcome)
            else {
                return None;
            };
            let grant = if *access_may_fix {
                format!(
                    "; grant the policy resource.k8s.io/v1 {} in contextAwareResources",
                    claim.kind.kind
                )
            } else {
                String::new()
            };
            format!(
                "Pod {pod}: the {} {namespace}/{} of its claim {:?} cannot be read ({problem}), so whether it claims GPUs, and whether they fit, is not known{grant}",
                claim.kind.kind, claim.source, claim.name
            )
        }
        DraWarning::SeveralGpuClaims { claims } => {
            let names: Vec<String> = claims.iter().map(|name| format!("{name:?}")).collect();
            format!(
                "Pod {pod} gets GPUs from {} claims ({}), which the scheduler allocates one by one: a claim's constraints never span another claim, so their GPUs may sit on different NUMA nodes; request the GPUs in one claim to align them",
                claims.len(),
                names.join(", ")
            )
        }
        DraWarning::FitCapped { problem } => problem.clone(),
        DraWarning::Cpus { record } => {
            let record = stage.claims.get(*record)?;
            let ClaimOutcome::Gpus {
                cpus: Some(plan), ..
            } = &record.outcome
            else {
                return None;
            };
            let claim = &record.claim;
            return cpu_plan_note(pod, &claim.name, namespace, &claim.source, plan);
        }
        DraWarning::UnalignedExclusiveCpus {
            containers,
            runs_dra_cpu,
        } => format!(
            "Pod {pod} gets GPUs through DRA and {} exclusive CPUs from the static CPU Manager on nodes that run it, but the kubelet never aligns the two (DRA devices give the Topology Manager no hints), so those CPUs may sit on another NUMA node than the GPUs; {}",
            containers.join(", "),
            cpu_fix(*runs_dra_cpu)
        ),
    })
}

/// The fix for exclusive CPUs beside DRA GPUs.
fn cpu_fix(runs_dra_cpu: bool) -> &'static str {
    if runs_dra_cpu {
        "the cluster runs dra-driver-cpu: request the CPUs in the GPU claim (device class dra.cpu) under one matchAttribute constraint on resource.kubernetes.io/numaNode with the GPUs, on nodes whose kubelet runs cpuManagerPolicy: none"
    } else {
        "only device-plugin GPUs (extended resources) are aligned with exclusive CPUs by the kubelet; or run dra-driver-cpu and request the CPUs in the GPU claim"
    }
}
