//! What the DRA stage of a pod ([`super::pod::dra_stage`]) adds to the
//! pod's answer, as data: the rejection ([`DraRejection`]) and the warnings
//! ([`DraWarning`]) with the figures they were decided on. The stage keeps
//! them in its record ([`super::pod::DraStage`]); they name the claims'
//! records by their index there (the figures of a claim, such as its fit
//! and its CPUs, are kept once, in its record), and are worded here, once,
//! when the answer is made.

use crate::decide::claim::explain::{cpu_plan_note, no_fit_text};
use crate::decide::claim::fit::ClaimFit;
use crate::decide::claim::pod::{ClaimOutcome, ClaimRecord, DraStage};

/// Why the DRA stage rejects a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraRejection {
    /// No node's devices can allocate the claim generated from the
    /// template of this claim record: the pod would stay Pending. The
    /// record's fit has each group of nodes and what it lacks.
    TemplateCannotFit { record: usize },
}

/// What the DRA stage warns a pod about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraWarning {
    /// The source of this claim record could not be read (the record says
    /// why): whether it claims GPUs is not known. Granting the policy
    /// access is the fix only where access may be what failed.
    Unreadable { record: usize, access_may_fix: bool },
    /// GPUs come from several claims (named), which the scheduler
    /// allocates one by one.
    SeveralGpuClaims { claims: Vec<String> },
    /// The claims' fit would pass the work cap: none was checked (the
    /// problem names the cap).
    FitCapped { problem: String },
    /// dra-driver-cpu's CPUs for the claim generated from the GPU template
    /// of this claim record: what it gets, or why none (the record's plan).
    Cpus { record: usize },
    /// Containers (named) get exclusive CPUs from the static CPU Manager
    /// beside DRA GPUs, which the kubelet never aligns; the fix depends on
    /// whether the cluster runs dra-driver-cpu.
    UnalignedExclusiveCpus {
        containers: Vec<String>,
        runs_dra_cpu: bool,
    },
}

impl DraRejection {
    /// The rejection message for the pod of `stage`.
    pub fn message(&self, stage: &DraStage) -> String {
        let (pod, namespace) = (&stage.pod, &stage.namespace);
        match self {
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
                // The stage records the claim's fit with the rejection, so
                // this is not reached; the rejection stands all the same.
                _ => format!("Pod {pod} cannot be scheduled: a claim template of it cannot be allocated on any node"),
            },
        }
    }
}

impl DraWarning {
    /// The warning for the pod of `stage`; `None` for a CPU plan that does
    /// not apply (nothing to say).
    pub fn words(&self, stage: &DraStage) -> Option<String> {
        let (pod, namespace) = (&stage.pod, &stage.namespace);
        Some(match self {
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
}

/// The fix for exclusive CPUs beside DRA GPUs.
fn cpu_fix(runs_dra_cpu: bool) -> &'static str {
    if runs_dra_cpu {
        "the cluster runs dra-driver-cpu: request the CPUs in the GPU claim (device class dra.cpu) under one matchAttribute constraint on resource.kubernetes.io/numaNode with the GPUs, on nodes whose kubelet runs cpuManagerPolicy: none"
    } else {
        "only device-plugin GPUs (extended resources) are aligned with exclusive CPUs by the kubelet; or run dra-driver-cpu and request the CPUs in the GPU claim"
    }
}
