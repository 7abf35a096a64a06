//! The DRA stage's record of a Pod's claims, as `explain` shows it: each
//! entry of `spec.resourceClaims`, whether its source claims GPUs, and its
//! fit against the published devices. The figures are the policy's record
//! ([`DraStage`]); the words for a claim that does not fit are the
//! policy's own ([`no_fit_text`]).

use gpu_topology_policy::decide::claim::cpus::CpuPlan;
use gpu_topology_policy::decide::claim::explain::no_fit_text;
use gpu_topology_policy::decide::claim::fit::{ClaimFit, Unknown};
use gpu_topology_policy::decide::claim::pod::{ClaimOutcome, ClaimRecord, DraStage};
use serde::Serialize;

/// The DRA stage of one Pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimsView {
    /// The stage rejected the pod: a claim template no node can allocate
    /// (the answer's message is the stage's).
    pub rejects: bool,
    /// Why the published devices were not read; no claim was checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices_unread: Option<String>,
    pub claims: Vec<ClaimView>,
}

/// One entry of the pod's `spec.resourceClaims`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimView {
    /// The name containers use in `resources.claims`.
    pub name: String,
    /// `ResourceClaimTemplate` or `ResourceClaim`.
    pub source_kind: &'static str,
    pub source: String,
    pub status: ClaimStatus,
    /// The GPU requests of the claim, in its order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpu_requests: Vec<String>,
    /// The fewest devices its aligned requests take together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<u32>,
    /// The status in words: why it does not fit, is not known or was not
    /// read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// dra-driver-cpu's CPUs for the claim generated from the template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
}

/// Where a claim stands after the DRA stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ClaimStatus {
    /// Its source could not be read.
    Unreadable,
    /// It claims no GPUs.
    NoGpus,
    /// Some group of nodes can allocate it.
    Fits,
    /// No group of nodes can allocate it: the pod is rejected.
    NoFit,
    /// Whether it fits cannot be told from what is published.
    Unknown,
    /// No node publishes devices of its classes yet.
    NoDevices,
    /// Not checked: a ResourceClaim (checked at its own CREATE), the
    /// devices not read, or the pod already rejected for another claim.
    NotChecked,
}

impl ClaimStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Unreadable => "unreadable",
            ClaimStatus::NoGpus => "no GPUs",
            ClaimStatus::Fits => "fits",
            ClaimStatus::NoFit => "no fit",
            ClaimStatus::Unknown => "unknown",
            ClaimStatus::NoDevices => "no devices published",
            ClaimStatus::NotChecked => "not checked",
        }
    }
}

impl ClaimsView {
    pub fn new(stage: &DraStage) -> Self {
        ClaimsView {
            rejects: stage.rejection.is_some(),
            devices_unread: stage.devices_unread.clone(),
            claims: stage.claims.iter().map(ClaimView::new).collect(),
        }
    }
}

impl ClaimView {
    fn new(record: &ClaimRecord) -> Self {
        let mut view = ClaimView {
            name: record.claim.name.clone(),
            source_kind: record.claim.kind.kind,
            source: record.claim.source.clone(),
            status: ClaimStatus::NotChecked,
            gpu_requests: Vec::new(),
            devices: None,
            detail: None,
            cpus: None,
        };
        match &record.outcome {
            ClaimOutcome::Unreadable(problem) => {
                view.status = ClaimStatus::Unreadable;
                view.detail = Some(problem.clone());
            }
            ClaimOutcome::NoGpus => view.status = ClaimStatus::NoGpus,
            ClaimOutcome::Gpus {
                gpu_requests,
                devices,
                fit,
                cpus,
            } => {
                view.gpu_requests = gpu_requests.clone();
                view.devices = Some(*devices);
                (view.status, view.detail) = match fit {
                    None => (ClaimStatus::NotChecked, None),
                    Some(ClaimFit::Fits) => (ClaimStatus::Fits, None),
                    Some(ClaimFit::NoFit(groups)) => {
                        (ClaimStatus::NoFit, Some(no_fit_text(groups)))
                    }
                    Some(ClaimFit::NoDevices(classes)) => (
                        ClaimStatus::NoDevices,
                        Some(format!(
                            "no node publishes a device of {}",
                            classes.join(", ")
                        )),
                    ),
                    Some(ClaimFit::Unknown(unknown)) => {
                        (ClaimStatus::Unknown, Some(unknown_words(unknown)))
                    }
                };
                view.cpus = cpus.as_ref().and_then(cpu_plan_words);
            }
        }
        view
    }
}

fn unknown_words(unknown: &Unknown) -> String {
    match unknown {
        Unknown::UnreadClass(class) => format!("DeviceClass {class} is not read"),
        Unknown::PoolUpdating(nodes) => format!("a pool is mid-update on {nodes}"),
        Unknown::SharedPool(nodes) => {
            format!("devices are offered through a node selector on {nodes}")
        }
    }
}

/// What dra-driver-cpu's plan gives the generated claim (`None`: it does
/// not apply). Why none is added is the policy's warning, listed with the
/// answer; it is not restated here.
fn cpu_plan_words(plan: &CpuPlan) -> Option<String> {
    match plan {
        CpuPlan::NotApplicable => None,
        CpuPlan::Add(add) => Some(format!(
            "{} CPUs of device class {} for {}",
            add.request.cpus, add.request.class, add.container
        )),
        CpuPlan::Cannot(_) => Some("none added (see the warnings)".to_owned()),
    }
}
