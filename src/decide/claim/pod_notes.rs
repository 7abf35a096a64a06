//! What the DRA stage of a pod ([`super::pod::dra_stage`]) adds to the
//! pod's answer, as data: the rejection ([`DraRejection`]) and the warnings
//! ([`DraWarning`]) with the figures they were decided on. The stage keeps
//! them in its record ([`super::pod::DraStage`]); they name the claims'
//! records by their index there (the figures of a claim, such as its fit
//! and its CPUs, are kept once, in its record), and are worded once, when
//! the answer is made ([`super::explain::dra_rejection`],
//! [`super::explain::dra_warnings`]).

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
