//! What the QoS plan of one pod was adjusted by before its fit was
//! decided, as data ([`Adjustment`]): per-GPU defaults lowered
//! ([`super::lowering`]), the search for them stopped at its cap, or the
//! CPUs its author wrote rounded up to whole cores ([`super::rounding`]).
//! The stages fill it in with figures; the policy's warning and the tool's
//! record both read the words of [`Adjustment::warning`], made here only.

use crate::decide::explain::{kubelets_take_it, nodes};
use crate::decide::qos::{ComputeResource, Target};
use crate::request::quantity::Quantity;

/// The most kubelet-model answers the search for lower defaults may ask in
/// one admission, both resources together. About 40 answers search one set
/// of facts for memory (three bisections over up to 2^14 MiB), so this
/// covers a fleet of about 100 distinct shapes that all refuse; each
/// answer costs tens of thousands of instructions, so the search stays
/// within a few milliseconds of policy-server's 2 s timeout whatever the
/// fleet (BENCHMARKS.md).
pub const MAX_SEARCH_ANSWERS: usize = 4_096;

/// One adjustment of a pod's QoS plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adjustment {
    /// Per-GPU defaults lowered for this pod, because more nodes take it
    /// with the lower ones.
    Lowered(LoweredDefaults),
    /// The search for lower defaults stopped at its cap before it lowered
    /// any: the pod is decided on the defaults it had.
    SearchCapped(SearchCapped),
    /// The CPUs its author wrote rounded up to whole cores, because no node
    /// takes them as written and some node takes them rounded.
    Rounded(RoundedCpus),
}

impl Adjustment {
    /// The warning that tells the pod's author what was changed and why.
    pub fn warning(&self) -> String {
        match self {
            Adjustment::Lowered(lowered) => lowered.warning(),
            Adjustment::SearchCapped(capped) => capped.warning(),
            Adjustment::Rounded(rounded) => rounded.warning(),
        }
    }
}

/// The per-GPU defaults lowered for this pod (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredDefaults {
    /// In the order the search lowered them: CPU, then memory.
    pub lowered: Vec<LoweredDefault>,
    /// The resource whose search stopped at the cap after another default
    /// was lowered, left at the default it had.
    pub not_lowered: Option<(ComputeResource, SearchCapped)>,
}

/// One per-GPU default lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredDefault {
    pub resource: ComputeResource,
    pub from: Quantity,
    pub to: Quantity,
    /// The nodes whose kubelets take the pod with `from`.
    pub nodes_before: u32,
    /// The nodes whose kubelets take it with `to`.
    pub nodes_after: u32,
    /// Where the search stopped at its cap: the nodes of the shapes it
    /// covered (the largest first), and all the nodes.
    pub covered: Option<(u32, u32)>,
}

/// The search for lower defaults stopped at [`MAX_SEARCH_ANSWERS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchCapped {
    /// The distinct sets of node facts the search had to cover.
    pub distinct_facts: usize,
}

/// The written CPUs rounded up to whole cores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundedCpus {
    /// Each value rounded, in the pod's order.
    pub values: Vec<RoundedValue>,
    /// The threads per core of the fleet's `full-pcpus-only` kubelets
    /// ([`super::model::cpu_multiple`]).
    pub multiple: u64,
    /// The nodes whose kubelets take the pod rounded.
    pub nodes_after: u32,
}

/// One container's (or the pod's) CPUs rounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundedValue {
    pub target: Target,
    pub value: Quantity,
    pub rounded: Quantity,
}

/// The setting a per-GPU default comes from.
fn setting(resource: ComputeResource) -> &'static str {
    match resource {
        ComputeResource::Cpu => "qos.cpuPerGpu",
        ComputeResource::Memory => "qos.memoryPerGpu",
    }
}

impl LoweredDefaults {
    fn warning(&self) -> String {
        let mut words: Vec<String> = (self.lowered.iter())
            .map(|lowered| {
                let covered = lowered.covered.map_or_else(String::new, |(covered, all)| {
                    format!(
                        " (the search stopped at its cap of {MAX_SEARCH_ANSWERS} kubelet-model answers after the shapes of {covered} of the {all} nodes, the largest first)"
                    )
                });
                format!(
                    "{} lowered from {} to {} per GPU for this pod: with {}, {}; with {}, {}{covered}",
                    setting(lowered.resource),
                    lowered.from,
                    lowered.to,
                    lowered.from,
                    kubelets_take_it(lowered.nodes_before),
                    lowered.to,
                    nodes(lowered.nodes_after)
                )
            })
            .collect();
        if let Some((resource, capped)) = &self.not_lowered {
            words.push(capped.not_lowered(*resource));
        }
        words.join("; ")
    }
}

impl SearchCapped {
    /// The clause that names `resource`'s default as not lowered, at the
    /// cap, after another one was.
    fn not_lowered(&self, resource: ComputeResource) -> String {
        format!(
            "{} was not lowered for this pod: the search stopped at its cap of {MAX_SEARCH_ANSWERS} kubelet-model answers over {} distinct node shapes",
            setting(resource),
            self.distinct_facts
        )
    }

    /// The warning that names the cap and what to do.
    pub fn warning(&self) -> String {
        format!(
            "qos.cpuPerGpu and qos.memoryPerGpu were not lowered for this pod: the search for lower defaults stopped at its cap of {MAX_SEARCH_ANSWERS} kubelet-model answers over {} distinct node shapes; set the containers' cpu and memory, or lower the defaults",
            self.distinct_facts
        )
    }
}

impl RoundedCpus {
    fn warning(&self) -> String {
        let values: Vec<String> = (self.values.iter())
            .map(|v| format!("{}'s {} to {}", v.target, v.value, v.rounded))
            .collect();
        format!(
            "CPUs rounded up to whole cores for this pod (qos.roundToWholeCores): {}. As written, the kubelets of no node take it: those with cpuManagerPolicyOptions full-pcpus-only allocate exclusive CPUs in multiples of {} only (SMTAlignmentError); rounded, {}. Set qos.roundToWholeCores: false to have such pods refused instead",
            values.join(", "),
            self.multiple,
            kubelets_take_it(self.nodes_after)
        )
    }
}
