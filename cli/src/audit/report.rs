//! The audit as a versioned document (`-o json|yaml`, cli/README.md "Audit
//! report schema"): `apiVersion: gpu-topology.io/v1alpha1`, `kind:
//! AuditReport`. Fields are only ever added within a version.

use super::checks::{Outcome, PodAudit};
use super::failed::FailedAudit;
use crate::binding::BindingView;
use gpu_topology::format_heartbeat;
use serde::Serialize;

pub const API_VERSION: &str = "gpu-topology.io/v1alpha1";
pub const KIND: &str = "AuditReport";

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport<'a> {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The time the labels' age was judged at (RFC 3339).
    pub judged_at: String,
    pub stale_after_seconds: u64,
    pub summary: Summary,
    pub pods: Vec<PodEntry<'a>>,
    /// The pods that failed at the kubelet's admission.
    pub failed_pods: Vec<FailedEntry<'a>>,
}

/// Checks by outcome, and pods with at least one finding.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub pods: usize,
    pub pods_with_findings: usize,
    pub pass: usize,
    pub warn: usize,
    pub fail: usize,
    pub skip: usize,
    /// Pods that failed at the kubelet's admission (each a finding).
    pub failed_pods: usize,
    /// Of those, the pods whose binding the binding check refuses now.
    pub failed_pods_refused_now: usize,
}

impl Summary {
    pub fn of(audits: &[PodAudit], failed: &[FailedAudit]) -> Self {
        let refused = failed
            .iter()
            .filter(|failed| failed.view().is_some_and(|view| view.refused()))
            .count();
        let mut summary = Summary {
            pods: audits.len(),
            failed_pods: failed.len(),
            failed_pods_refused_now: refused,
            ..Summary::default()
        };
        for audit in audits {
            if audit.outcome().is_finding() {
                summary.pods_with_findings += 1;
            }
            for check in &audit.checks {
                match check.outcome() {
                    Outcome::Pass => summary.pass += 1,
                    Outcome::Warn => summary.warn += 1,
                    Outcome::Fail => summary.fail += 1,
                    Outcome::Skip => summary.skip += 1,
                }
            }
        }
        summary
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodEntry<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: Option<&'a str>,
    /// `null` while pending.
    pub node: Option<&'a str>,
    pub gpus: u32,
    /// The worst result of its checks.
    pub result: Outcome,
    pub checks: Vec<CheckEntry>,
}

/// A pod that failed at the kubelet's admission.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedEntry<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: Option<&'a str>,
    /// The node that refused it (`spec.nodeName`).
    pub node: Option<&'a str>,
    /// `status.reason`: `TopologyAffinityError`, `SMTAlignmentError` or
    /// `UnexpectedAdmissionError`.
    pub reason: &'a str,
    /// `status.message`: the kubelet's words.
    pub message: Option<&'a str>,
    /// Always `fail`.
    pub result: Outcome,
    /// The binding check of the pod to its node, on the node's occupancy
    /// now (`null` when it names no node).
    pub binding: Option<BindingView>,
}

#[derive(Debug, Serialize)]
pub struct CheckEntry {
    pub rule: &'static str,
    pub result: Outcome,
    pub message: String,
}

impl<'a> AuditReport<'a> {
    pub fn new(
        audits: &'a [PodAudit],
        failed: &'a [FailedAudit],
        judged_at: u64,
        stale_after_seconds: u64,
    ) -> Self {
        AuditReport {
            api_version: API_VERSION,
            kind: KIND,
            judged_at: format_heartbeat(judged_at),
            stale_after_seconds,
            summary: Summary::of(audits, failed),
            pods: audits
                .iter()
                .map(|audit| PodEntry {
                    namespace: &audit.pod.namespace,
                    name: &audit.pod.name,
                    uid: audit.pod.uid.as_deref(),
                    node: audit.pod.node.as_deref(),
                    gpus: audit.gpus,
                    result: audit.outcome(),
                    checks: audit
                        .checks
                        .iter()
                        .map(|check| CheckEntry {
                            rule: check.rule(),
                            result: check.outcome(),
                            message: check.message(),
                        })
                        .collect(),
                })
                .collect(),
            failed_pods: failed
                .iter()
                .map(|failed| FailedEntry {
                    namespace: &failed.pod.namespace,
                    name: &failed.pod.name,
                    uid: failed.pod.uid.as_deref(),
                    node: failed.pod.node.as_deref(),
                    reason: &failed.pod.reason,
                    message: failed.pod.message.as_deref(),
                    result: failed.outcome(),
                    binding: failed.view(),
                })
                .collect(),
        }
    }
}
