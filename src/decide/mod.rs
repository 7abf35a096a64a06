//! The decision for one admission request: accept, mutate or reject. Pure:
//! request and settings in, decision out, so it is tested natively.
//!
//! This file is the pipeline, and the only caller of a GPU pod's stages;
//! the types every stage shares sit below them: the answer ([`answer`])
//! and the pod's input ([`input`]).
//!
//! A Pod goes through the stages once each: its input is read ([`PodInput`]:
//! the GPU demand, computed once, and the node it is pinned to), the
//! cluster view is read ([`fit::look`]), the QoS plan is made for that
//! fleet ([`qos`], [`lowering`]), the kubelet model answers for every node
//! group on the planned pod ([`model`]), and those verdicts decide the fit
//! and write the affinity ([`fit::place`], [`affinity`]), with messages
//! from the verdicts ([`explain`]). A Pod that names DRA claims then goes
//! through the DRA stage ([`claim::add_pod_stage`]), on the same tree the
//! GPU stages read. Workloads ([`workload`]) go through the same GPU stages
//! and keep the verdict only. The record of it all ([`record`]) is made only
//! for the operator's tool ([`explain_with`]).

pub mod adjustment;
pub mod affinity;
pub mod answer;
pub mod binding;
pub(crate) mod capacity;
pub mod claim;
pub mod demand;
pub mod explain;
pub(crate) mod extended_by_dra;
pub mod fit;
pub mod input;
pub(crate) mod lowering;
pub mod model;
pub(crate) mod plan;
pub mod qos;
pub mod record;
pub mod rejection;
pub(crate) mod rounding;
#[cfg(test)]
pub(crate) mod testing;
pub mod workload;

use crate::cluster::host::{ClusterReader, KubewardenHost};
use crate::request::pod::{Pinned, PinnedBy};
use crate::request::pod_text::PodText;
use crate::request::AdmissionRequest;
use crate::settings::{AffinityMode, Config, QosConfig, QosMode};
use adjustment::{Adjustment, SearchCapped};
use affinity::AffinityRequirement;
pub use answer::{Decision, MutatedObject, Verdict};
use claim::RequestNames;
use demand::PodDevices;
pub use input::PodInput;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::Resource;
use model::GroupVerdict;
use plan::{Notes, PodPlan, QosNote};
use qos::QosPlan;
use record::{Explained, PodRecord};
use rejection::Rejection;
use serde_json::Value;

/// The most containers (init, sidecar and app together) of one pod the
/// kubelet model is asked about: each answer walks them in the kubelet's
/// order, once per node shape, so the work is their product. Real GPU pods
/// have a handful; a pod past this gets the count-based affinity and a
/// warning, never a refusal for it.
pub const MAX_CONTAINERS: usize = 64;

/// The admission operation the policy mutates on.
pub const CREATE: &str = "CREATE";
/// Workloads are also validated when their pod template changes.
pub const UPDATE: &str = "UPDATE";

/// Decides on an admission request, reading the cluster view through the
/// Kubewarden host.
pub fn evaluate(request: &AdmissionRequest, config: &Config) -> Decision {
    evaluate_with(request, config, &KubewardenHost)
}

/// Decides on an admission request, reading the cluster through `cluster`. In a
/// non-exempt namespace, Pod CREATE is mutated and workload CREATE/UPDATE is
/// validated; everything else is accepted untouched.
pub fn evaluate_with(
    request: &AdmissionRequest,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Decision {
    decide_request::<AnswerOnly>(request, config, cluster).decision
}

/// Decides on `request` as [`evaluate_with`] does and returns the record
/// of the decision with the answer (what `gpu-topology explain` shows).
pub fn explain_with(
    request: &AdmissionRequest,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Explained {
    decide_request::<WithRecord>(request, config, cluster)
}

/// What the caller wants of a decision, as a type: the policy answers
/// only ([`AnswerOnly`]), and its module is built without the record; the
/// operator's tool also reads the record ([`WithRecord`]), which the
/// pipeline puts together from its plan while the cluster view the plan
/// borrows is still held.
pub(crate) trait Wanted {
    /// Whether the record is made.
    const RECORD: bool;

    /// The record `make` puts together, when it is wanted.
    fn record(make: impl FnOnce() -> PodRecord) -> Option<PodRecord> {
        Self::RECORD.then(make)
    }
}

/// The answer only: what the policy wants.
pub(crate) enum AnswerOnly {}

impl Wanted for AnswerOnly {
    const RECORD: bool = false;
}

/// The answer and the record: what the operator's tool wants.
pub(crate) enum WithRecord {}

impl Wanted for WithRecord {
    const RECORD: bool = true;
}

/// [`evaluate_with`], with the record of the GPU pod decided when `W`
/// wants it ([`WithRecord`]).
fn decide_request<W: Wanted>(
    request: &AdmissionRequest,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Explained {
    if config
        .exempt_namespaces
        .contains(request.namespace.as_ref())
    {
        return Decision::accept().into();
    }
    if !request.sub_resource.is_empty() {
        return decide_subresource(request, config, cluster).into();
    }
    let (group, kind) = (request.kind.group.as_ref(), request.kind.kind.as_ref());
    let operation = request.operation.as_ref();
    if (group, kind) == (Pod::GROUP, Pod::KIND) {
        return match operation {
            CREATE => decide_pod::<W>(
                request.pod_text(),
                request.object_text(),
                RequestNames::of(request),
                config,
                cluster,
            ),
            _ => Decision::accept().into(),
        };
    }
    if let Some(claim_kind) = crate::request::claim::find(group, kind) {
        return match request.kind.version.as_ref() {
            crate::request::claim::RESOURCE_VERSION => {
                claim::evaluate(request, claim_kind, config, cluster).into()
            }
            _ => Decision::accept().into(),
        };
    }
    match (workload::find(group, kind), operation) {
        (Some(workload), CREATE | UPDATE) => {
            workload::evaluate::<W>(request, workload, config, cluster)
        }
        _ => Decision::accept().into(),
    }
}

/// A subresource request: the binding check for a `pods/binding` CREATE
/// ([`binding`]); every other subresource is accepted untouched.
fn decide_subresource(
    request: &AdmissionRequest,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Decision {
    let is_binding = request.sub_resource == crate::request::binding::BINDING_SUBRESOURCE
        && request.kind.kind == crate::request::binding::BINDING_KIND
        && request.operation == CREATE;
    if !is_binding {
        return Decision::accept();
    }
    let binding = crate::request::binding::Binding::read(
        request.object_text(),
        request.name.clone(),
        request.namespace.clone(),
    );
    let decision = match binding {
        Ok(Some(binding)) => binding::evaluate(
            &binding,
            config,
            cluster,
            crate::cluster::fleet_summary::now(),
        ),
        Ok(None) => Decision::accept(),
        // A Binding the API server accepted is never malformed; if one is,
        // the kubelet is the judge, as without this policy.
        Err(problem) => Decision {
            warnings: vec![format!("the binding was not checked: {problem}")],
            ..Decision::accept()
        },
    };
    for warning in &decision.warnings {
        cluster.log_warning(warning);
    }
    decision
}

/// Decides on a Pod, given as the JSON text of the request, being created:
/// the GPU stages, then the DRA stage of a pod that names claims, which
/// reads them from the cluster and names the pod by its metadata.
///
/// The decision is made on the few fields the policy reads ([`PodText`]) and
/// a mutation rewrites only the values it changes, so every other byte of
/// the pod is answered as it came. A pod text that reader does not handle is
/// decided on its whole JSON tree instead, with the same outcome.
pub fn evaluate_pod_text(text: &str, config: &Config, cluster: &dyn ClusterReader) -> Decision {
    decide_pod::<AnswerOnly>(
        PodText::read(text),
        text,
        RequestNames::default(),
        config,
        cluster,
    )
    .decision
}

/// [`evaluate_pod_text`] with the pod already read (`None`: the reader does
/// not handle it). The GPU stages decide on the reduced pod, or on the
/// whole tree when the reduced pod's answer cannot be written into the
/// text; the DRA stage then runs once, on the tree that decided.
fn decide_pod<W: Wanted>(
    pod: Option<PodText>,
    text: &str,
    names: RequestNames,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Explained {
    if let Some(pod) = pod {
        let decided = decide_gpu_pod::<W>(pod.reduced(), config, cluster);
        let decision = decided
            .decision
            .try_map(|changed| pod.rewrite(&changed).map(MutatedObject));
        if let Ok(decision) = decision {
            let decided = Explained {
                decision,
                pod: decided.pod,
                dra: None,
            };
            return with_dra_stage(decided, pod.reduced(), names, config, cluster);
        }
    }
    let pod: Value = match serde_json::from_slice(text.as_bytes()) {
        Ok(pod) => pod,
        Err(error) => return Decision::reject(format!("the Pod cannot be read: {error}")).into(),
    };
    let decided = decide_gpu_pod::<W>(&pod, config, cluster);
    let decided = Explained {
        decision: decided
            .decision
            .try_map(|changed| MutatedObject::from_value(&changed))
            .unwrap_or_else(Decision::reject),
        pod: decided.pod,
        dra: None,
    };
    with_dra_stage(decided, &pod, names, config, cluster)
}

/// `decided` with the DRA stage of a pod that names claims
/// ([`claim::add_pod_stage`]), run on `pod`, the tree the GPU stages read:
/// its rejection replaces their answer unless they already reject, and its
/// warnings follow theirs.
fn with_dra_stage<Object>(
    mut decided: Explained<Object>,
    pod: &Value,
    names: RequestNames,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Explained<Object> {
    decided.dra = claim::add_pod_stage(&mut decided.decision, pod, names, config, cluster);
    decided
}

/// The scheduler a pod that names none is scheduled by.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// `topology.topologyAwareScheduler`: a GPU pod the policy steers (its
/// node affinity applies, and no `spec.nodeName` skips scheduling) that
/// asks for the default scheduler is handed to the named one, which sees
/// each node's NUMA occupancy (scheduler-plugins' NodeResourceTopologyMatch)
/// where the default scheduler counts only node totals. A pod that names a
/// scheduler of its own keeps it.
fn hand_to_topology_aware_scheduler(spec: &mut Value, input: &PodInput, config: &Config) {
    let Some(scheduler) = &config.topology_aware_scheduler else {
        return;
    };
    let by_node_name = matches!(
        input.pinned,
        Some(Pinned {
            by: PinnedBy::NodeName,
            ..
        })
    );
    if by_node_name || !fit::affinity_applies(config, input.pinned.is_some()) {
        return;
    }
    let asks_default = match spec.get("schedulerName") {
        None | Some(Value::Null) => true,
        Some(Value::String(name)) => name.is_empty() || name == DEFAULT_SCHEDULER,
        Some(_) => false,
    };
    if let (true, Some(fields)) = (asks_default, spec.as_object_mut()) {
        fields.insert("schedulerName".to_owned(), Value::String(scheduler.clone()));
    }
}

/// Decides on a Pod being created, given as a JSON tree (the whole pod, or
/// the reduced pod of [`PodText`]), as [`evaluate_pod_text`] does; a
/// mutation is the changed tree.
pub fn evaluate_pod(pod: &Value, config: &Config, cluster: &dyn ClusterReader) -> Decision<Value> {
    let decided = decide_gpu_pod::<AnswerOnly>(pod, config, cluster);
    with_dra_stage(decided, pod, RequestNames::default(), config, cluster).decision
}

/// The GPU stages of a pod, with the record of the pod's plan when `W`
/// wants it: the policy's answer is rendered from the plan here, the
/// tool's from the record made of the same plan ([`record`]).
fn decide_gpu_pod<W: Wanted>(
    pod: &Value,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Explained<Value> {
    let Some(spec) = pod.get("spec").filter(|spec| spec.is_object()) else {
        return Decision::accept().into();
    };
    let input = match PodInput::read(spec, config) {
        Ok(Some(input)) => input,
        Ok(None) => return Decision::accept().into(),
        Err(problem) => return Decision::reject(format!("GPU pod is malformed: {problem}")).into(),
    };
    let mut mutated = pod.clone();
    let Some(mutated_spec) = mutated.get_mut("spec") else {
        return Decision::accept().into();
    };
    let fit::Look { sight, warnings } = fit::look(input.pinned_node(), config, cluster);
    let mut plan = plan_pod(
        spec,
        mutated_spec,
        &input,
        config,
        (&sight, warnings),
        QosProblems::Reject,
    );
    if plan.rejection.is_none() {
        if let Err(problem) = affinity::merge(mutated_spec, &plan.requirement, &config.label_prefix)
        {
            plan.rejection = Some(Rejection::Malformed { problem });
        }
    }
    if plan.rejection.is_none() {
        hand_to_topology_aware_scheduler(mutated_spec, &input, config);
    }
    let decision = match &plan.rejection {
        Some(rejection) => Decision::reject(rejection.message(&config.label_prefix)),
        None => Decision {
            verdict: if mutated == *pod {
                Verdict::Accept
            } else {
                Verdict::Mutate(mutated)
            },
            warnings: plan.notes.warnings(&config.label_prefix),
        },
    };
    Explained {
        decision,
        pod: W::record(|| PodRecord::new(input.demand, plan, config)),
        dra: None,
    }
}

/// How a Guaranteed-QoS problem counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QosProblems {
    /// A Pod is rejected with it.
    Reject,
    /// A workload's template is warned about: a LimitRange or another
    /// webhook may still fill in its pods' resources before they come here.
    Warn,
}

/// The stages' results that borrow the cluster view.
struct Stages<'s> {
    verdicts: Vec<GroupVerdict<'s>>,
    qos_edits: Vec<qos::Edit>,
    notes: Notes,
    requirement: AffinityRequirement,
}

/// The pipeline for one GPU pod (PodSpec `spec`): on the cluster view its
/// caller read ([`fit::look`]: the sight and its warnings), the QoS plan
/// is made for that fleet ([`model::cpu_multiple`], [`lowering`],
/// [`rounding`]) and written into `planned` (a copy of `spec`), and the
/// kubelet model's verdict per node group, on the planned pod, decides the
/// fit and writes the affinity ([`fit::place`]). Without a view, the
/// static check and the count-based affinity stand in. Each stage runs
/// once and leaves its result in the plan, which borrows the view.
pub(crate) fn plan_pod<'s>(
    spec: &Value,
    planned: &mut Value,
    input: &PodInput,
    config: &Config,
    (sight, warnings): (&'s fit::Sight, Vec<fit::FitWarning>),
    qos_problems: QosProblems,
) -> PodPlan<'s> {
    let mut stages = Stages {
        verdicts: Vec::new(),
        qos_edits: Vec::new(),
        notes: Notes {
            look: warnings,
            ..Notes::default()
        },
        requirement: AffinityRequirement::default(),
    };
    let rejection = plan_stages(
        spec,
        planned,
        input,
        config,
        sight,
        qos_problems,
        &mut stages,
    )
    .err();
    let Stages {
        verdicts,
        qos_edits,
        notes,
        requirement,
    } = stages;
    PodPlan {
        verdicts,
        sight,
        qos_edits,
        notes,
        requirement,
        rejection,
    }
}

/// The stages after the look; `Err` is why the pod is rejected.
fn plan_stages<'s>(
    spec: &Value,
    planned: &mut Value,
    input: &PodInput,
    config: &Config,
    sight: &'s fit::Sight,
    qos_problems: QosProblems,
    stages: &mut Stages<'s>,
) -> Result<(), Rejection> {
    let containers = input.demand.pod.containers.len();
    let view = match sight {
        fit::Sight::View(view) if containers <= MAX_CONTAINERS => Some(view),
        fit::Sight::View(_) => {
            stages.notes.unchecked = Some(fit::FitWarning::TooManyContainers { containers });
            None
        }
        _ => None,
    };
    if view.is_none() && stages.notes.unchecked.is_none() {
        stages.notes.unchecked = fit::check_without_view(&input.demand, sight, config)?;
    }
    let multiple = view.map_or(1, |view| model::cpu_multiple(&view.fleet));
    let qos = write_qos(spec, planned, input, config, multiple, qos_problems)?;
    stages.qos_edits = qos.edits;
    stages.notes.qos = qos.warning;
    stages.notes.pinned = pinned_warning(input, config);
    let Some(view) = view else {
        stages.requirement = affinity_without_view(input, config);
        return Ok(());
    };
    let malformed = |problem| Rejection::Malformed { problem };
    // The fleet's verdicts are built once, here; an adjustment below only
    // answers them again for its plan.
    stages.verdicts = fit::verdicts(&view.fleet, planned, input, config).map_err(malformed)?;
    // The plans the searches below try whole are the ones the pipeline then
    // makes: their answers are asked once.
    let memo = model::AnswerMemo::default();
    // Each adjustment plans the pod anew with its QoS configuration, and the
    // verdicts on that plan are the ones the next stage reads. The warnings
    // of the first plan stand: an adjustment's own warning says what changed.
    let mut qos = config.qos.clone();
    let replan = |adjusted: QosConfig, planned: &mut Value, verdicts: &mut [GroupVerdict]| {
        *planned = spec.clone();
        let replanned = Config {
            qos: adjusted,
            ..config.clone()
        };
        let outcome = write_qos(spec, planned, input, &replanned, multiple, qos_problems)?;
        let pod = model::model_pod(planned, &input.demand.pod).map_err(malformed)?;
        model::answer_again(verdicts, &pod, &memo);
        Ok::<_, Rejection>(outcome.edits)
    };
    let capped =
        match lowering::lower_defaults(spec, input, config, multiple, &stages.verdicts, &memo) {
            Ok(Some(lowered)) => {
                stages.qos_edits = replan(lowered.qos.clone(), planned, &mut stages.verdicts)?;
                qos = lowered.qos;
                stages
                    .notes
                    .adjustments
                    .push(Adjustment::Lowered(lowered.defaults));
                None
            }
            Ok(None) => None,
            Err(capped) => {
                stages
                    .notes
                    .adjustments
                    .push(Adjustment::SearchCapped(capped));
                Some(capped)
            }
        };
    if let Some(rounded) =
        rounding::round_to_whole_cores(spec, input, config, &qos, multiple, &stages.verdicts, &memo)
    {
        stages.qos_edits = replan(rounded.qos, planned, &mut stages.verdicts)?;
        stages
            .notes
            .adjustments
            .push(Adjustment::Rounded(rounded.cpus));
    }
    let placement = match (fit::place(input, view, &stages.verdicts, config), capped) {
        (Err(message), Some(capped)) => capped_placement(message, capped, config)?,
        (placement, _) => placement?,
    };
    stages.notes.placement = placement.warnings;
    stages.notes.dra = extended_by_dra::warnings(&input.demand.pod, view);
    stages.requirement = placement.requirement;
    Ok(())
}

/// The placement of a pod that no node takes with its configured defaults
/// when the search for lower ones stopped at its cap: a lower default the
/// search did not reach might still let nodes take it, so under
/// `topology.affinity: preferred` the pod is admitted, without affinity,
/// with the refusal as a warning. Under `required` the refusal stands (the
/// policy selects only nodes known to host the pod) and says why.
fn capped_placement(
    refusal: Rejection,
    capped: SearchCapped,
    config: &Config,
) -> Result<fit::Placement, Rejection> {
    if config.topology.affinity == AffinityMode::Required {
        return Err(Rejection::SearchCapped {
            refusal: Box::new(refusal),
            capped,
        });
    }
    Ok(fit::Placement {
        warnings: vec![fit::FitWarning::AdmittedWithoutPlacement { refusal }],
        requirement: AffinityRequirement::default(),
    })
}

/// Plans Guaranteed QoS and writes the edits into `planned`; the edits and
/// warnings, or the rejection (a Pod's QoS problem, a malformed spec).
fn write_qos(
    spec: &Value,
    planned: &mut Value,
    input: &PodInput,
    config: &Config,
    multiple: u64,
    qos_problems: QosProblems,
) -> Result<QosOutcome, Rejection> {
    match plan_qos(spec, &input.demand.pod, config, multiple) {
        Ok(qos) => {
            qos::apply(planned, &qos.edits).map_err(|problem| Rejection::Malformed { problem })?;
            Ok(qos)
        }
        Err(message) if qos_problems == QosProblems::Reject => Err(message),
        Err(refusal) => Ok(QosOutcome {
            edits: Vec::new(),
            warning: Some(QosNote::TemplateRefused { refusal }),
        }),
    }
}

/// The count-based affinity, without a cluster view.
fn affinity_without_view(input: &PodInput, config: &Config) -> AffinityRequirement {
    if fit::affinity_applies(config, input.pinned.is_some()) {
        AffinityRequirement::without_view(input.demand.needs, &config.topology)
    } else {
        AffinityRequirement::default()
    }
}

/// Why a pinned pod gets no affinity under `preferred`.
fn pinned_warning(input: &PodInput, config: &Config) -> Option<fit::FitWarning> {
    if fit::affinity_applies(config, input.pinned.is_some()) {
        return None;
    }
    // Not applied under `preferred` only because the pod is pinned.
    match (config.topology.affinity, input.pinned) {
        (AffinityMode::Off, _) | (_, None) => None,
        (_, Some(Pinned { node, by })) => Some(fit::FitWarning::PinnedWithoutAffinity {
            by_affinity_to: (by == PinnedBy::NodeAffinity).then(|| node.to_owned()),
        }),
    }
}

/// The QoS the pod gets: the edits (none in `validate` mode) and warnings.
pub(crate) struct QosOutcome {
    pub edits: Vec<qos::Edit>,
    pub warning: Option<QosNote>,
}

/// The resource edits Guaranteed QoS needs, or the rejection;
/// `multiple` as [`qos::plan`] takes it.
pub(crate) fn plan_qos(
    spec: &Value,
    demand: &PodDevices,
    config: &Config,
    multiple: u64,
) -> Result<QosOutcome, Rejection> {
    let plan = match config.qos.mode {
        QosMode::Off => QosPlan::default(),
        // A spec whose containers cannot be read was refused with this
        // problem when its demand was read (`PodInput::read`).
        QosMode::Mutate | QosMode::Validate => qos::plan(spec, demand, &config.qos, multiple)
            .map_err(|problem| Rejection::Malformed { problem })?,
    };
    // Whatever the mode: exclusive CPUs next to the GPUs are what QoS is for.
    let warning =
        qos::unpinned_by_pod_level_resources(spec).then_some(QosNote::UnpinnedByPodLevelResources);
    if !plan.problems.is_empty() {
        return Err(Rejection::QosImpossible {
            problems: plan.problems,
        });
    }
    let edits = match config.qos.mode {
        QosMode::Validate if plan.violations().next().is_some() => {
            return Err(Rejection::NotGuaranteed {
                violations: plan.violations().cloned().collect(),
                whole_cpus: config.qos.whole_cpus,
            })
        }
        QosMode::Validate => Vec::new(),
        _ => plan.edits,
    };
    Ok(QosOutcome { edits, warning })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::testing::config;
    use serde_json::json;

    /// Past the search's cap, a pod no node takes with its configured
    /// defaults: admitted without affinity under `preferred`, refused
    /// with the cap named under `required`.
    #[rstest::rstest]
    #[case::preferred_admits_without_affinity(
        "preferred",
        Ok("GPU pod admitted without a placement: it needs 6 GPUs but the largest labeled GPU node has 4 (10 nodes). Request at most 4 GPUs per pod, or split the work across several pods.")
    )]
    #[case::required_refuses_naming_the_cap("required", Err("GPU pod cannot be placed: it needs 6 GPUs but the largest labeled GPU node has 4 (10 nodes). Request at most 4 GPUs per pod, or split the work across several pods. (qos.cpuPerGpu and qos.memoryPerGpu were not lowered for this pod: the search for lower defaults stopped at its cap of 4096 kubelet-model answers over 300 distinct node shapes; set the containers' cpu and memory, or lower the defaults)"))]
    fn past_the_cap_a_refusal_is_a_warning_under_preferred_only(
        #[case] affinity: &str,
        #[case] expected: Result<&str, &str>,
    ) {
        let config = config(json!({"topology": {"affinity": affinity}}));
        let refusal = Rejection::NoShapeTakes(explain::ShapesRefuse::TooFewGpus {
            demand: "6 GPUs".to_owned(),
            largest: 4,
            nodes: 10,
        });
        let placement = capped_placement(
            refusal,
            SearchCapped {
                distinct_facts: 300,
            },
            &config,
        );
        match (placement, expected) {
            (Ok(placement), Ok(warning)) => {
                assert_eq!(placement.words(), vec![warning.to_owned()]);
                assert_eq!(placement.requirement, AffinityRequirement::default());
            }
            (Err(rejection), Err(expected)) => {
                assert_eq!(rejection.message(&config.label_prefix), expected)
            }
            (placement, _) => panic!("{placement:?}"),
        }
    }
}

#[cfg(test)]
mod scheduler_tests {
    use super::*;
    use crate::decide::testing::{config, hgx, pod, view, Remembered};
    use rstest::rstest;
    use serde_json::json;

    /// The scheduler the pod asks for after the decision, by its pod text.
    fn scheduler_after(extra: Value, settings: Value) -> Option<String> {
        let mut spec = pod(4, 16);
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        let text = json!({"apiVersion": "v1", "kind": "Pod", "spec": spec}).to_string();
        let cluster = Remembered(view(vec![(hgx("single-numa-node"), 2)]));
        let decision = evaluate_pod_text(&text, &config(settings), &cluster);
        let object = match decision.verdict {
            Verdict::Mutate(object) => object.to_value().unwrap(),
            Verdict::Accept => serde_json::from_str(&text).unwrap(),
            Verdict::Reject(message) => panic!("rejected: {message}"),
        };
        object["spec"]["schedulerName"].as_str().map(str::to_owned)
    }

    const TOPO: &str = "topo-aware-scheduler";

    #[rstest]
    #[case::off_by_default(json!({}), json!({}), None)]
    #[case::no_scheduler_named(json!({}), json!({"topology": {"topologyAwareScheduler": TOPO}}), Some(TOPO))]
    #[case::the_default_scheduler_named(json!({"schedulerName": "default-scheduler"}), json!({"topology": {"topologyAwareScheduler": TOPO}}), Some(TOPO))]
    #[case::a_scheduler_of_its_own_kept(json!({"schedulerName": "volcano"}), json!({"topology": {"topologyAwareScheduler": TOPO}}), Some("volcano"))]
    #[case::not_steered_under_affinity_off(json!({}), json!({"topology": {"affinity": "off", "topologyAwareScheduler": TOPO}}), None)]
    #[case::no_scheduler_for_a_pod_with_a_node_name(json!({"nodeName": "gpu-1"}), json!({"topology": {"topologyAwareScheduler": TOPO}}), None)]
    fn gpu_pods_are_handed_to_the_topology_aware_scheduler(
        #[case] extra: Value,
        #[case] settings: Value,
        #[case] expected: Option<&str>,
    ) {
        assert_eq!(scheduler_after(extra, settings).as_deref(), expected);
    }

    #[test]
    fn a_scheduler_name_the_api_server_refuses_is_refused() {
        let error = crate::settings::settings_from_value(
            json!({"topology": {"topologyAwareScheduler": "Topo_Aware"}}),
        )
        .unwrap()
        .config()
        .unwrap_err();
        assert!(error.contains("topology.topologyAwareScheduler"), "{error}");
    }
}
