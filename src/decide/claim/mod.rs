//! ResourceClaims and ResourceClaimTemplates (`resource.k8s.io/v1`) being
//! created: a GPU claim is checked against the devices the DRA drivers
//! publish, and completed with the NUMA constraint it lacks.
//!
//! The stages, once each: the claim is read ([`DeviceClaim`]); its GPU and
//! aligned requests are found ([`completion::aligned_requests`]; a claim
//! without GPU requests is accepted without any host call); the cluster's
//! DeviceClasses and ResourceSlices are read ([`dra::read_inventory`]); the
//! plan is made ([`plan`]: the written claim's fit, the constraint it
//! lacks, the completed claim's fit), and rendered ([`explain`]) as the
//! answer. Specs are immutable (types.go), so only CREATE is decided.

#[cfg(test)]
mod caps;
pub mod completion;
pub mod cpus;
pub mod explain;
pub mod fit;
pub mod generated;
pub mod patch;
pub mod pod;
pub mod pod_notes;

use crate::cluster::dra::{self, DraInventory};
use crate::cluster::host::ClusterReader;
use crate::decide::answer::{Decision, MutatedObject, Verdict};
use crate::decide::CREATE;
use crate::request::claim::{
    ClaimKind, DeviceClaim, EXTENDED_RESOURCE_CLAIM_ANNOTATION, POD_CLAIM_NAME_ANNOTATION,
    RESOURCE_CLAIM,
};
use crate::request::pod::names_resource_claims;
use crate::request::AdmissionRequest;
use crate::settings::{AffinityMode, Config, QosMode};
use completion::{Aligned, Completion};
use fit::ClaimFit;
use gpu_topology::Alignment;
use serde_json::Value;

/// What the policy decided for a GPU claim, before it is worded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimPlan {
    pub aligned: Aligned,
    /// The claim as written, against the published devices.
    pub written: ClaimFit,
    pub completion: Completion,
    /// The claim with the added constraint, when one is to be added.
    pub completed: Option<ClaimFit>,
}

/// The claim's plan: pure, over the claim, the settings and the devices.
pub fn plan(
    claim: &DeviceClaim,
    aligned: Aligned,
    config: &Config,
    inventory: &DraInventory,
) -> ClaimPlan {
    let written = fit::claim_fit(claim, inventory);
    let topology = config.topology;
    let completion = match (topology.affinity, topology.alignment) {
        (AffinityMode::Off, _) | (_, Alignment::Node) => Completion::NotNeeded,
        _ if config.qos.mode == QosMode::Off => Completion::NotNeeded,
        (_, Alignment::Numa) => completion::numa_completion(claim, &aligned, inventory),
        (_, Alignment::Nvlink) => completion::nvlink_completion(claim, &aligned, inventory),
    };
    let completed = match &completion {
        Completion::Add(constraint) => Some(fit::claim_fit(
            &completion::with_constraint(claim, constraint),
            inventory,
        )),
        _ => None,
    };
    ClaimPlan {
        aligned,
        written,
        completion,
        completed,
    }
}

/// The names a request gives its object (empty where it gives none, or
/// where a pod is decided without its request): messages name the object
/// by them first, else by its own metadata.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RequestNames<'r> {
    pub name: &'r str,
    pub namespace: &'r str,
}

impl<'r> RequestNames<'r> {
    pub(crate) fn of(request: &'r AdmissionRequest) -> Self {
        RequestNames {
            name: request.name.as_ref(),
            namespace: request.namespace.as_ref(),
        }
    }
}

/// Adds the DRA stage ([`pod::dra_stage`]) to the answer for a Pod being
/// created whose spec names `resourceClaims` (`pod` is the tree the GPU
/// stages read: the whole pod, or the reduced pod, which keeps the claims
/// and the names): a rejection when a GPU claim template cannot be
/// allocated, and warnings. `None` when the stage does not run.
pub(crate) fn add_pod_stage<Object>(
    decision: &mut Decision<Object>,
    pod: &Value,
    names: RequestNames,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Option<pod::DraStage> {
    let spec = pod.get("spec").filter(|spec| spec.is_object())?;
    if !names_resource_claims(spec.get("resourceClaims")) || !config.sources.reads_cluster() {
        return None;
    }
    let name = display_name(names, pod);
    let stage = pod::dra_stage(spec, namespace(names, pod), &name, config, cluster);
    if let Some(message) = explain::dra_rejection(&stage) {
        if !matches!(decision.verdict, Verdict::Reject(_)) {
            decision.verdict = Verdict::Reject(message);
        }
    }
    decision.warnings.extend(explain::dra_warnings(&stage));
    Some(stage)
}

/// The object's name as its messages say it: `namespace/name`, or the
/// `generateName` prefix with `*`.
fn display_name(names: RequestNames, object: &Value) -> String {
    let metadata = &object["metadata"];
    let name = [names.name, metadata["name"].as_str().unwrap_or_default()]
        .into_iter()
        .find(|name| !name.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{}*", metadata["generateName"].as_str().unwrap_or_default()));
    format!("{}/{name}", namespace(names, object))
}

/// The object's namespace: the request's, else its own metadata's.
fn namespace<'a>(names: RequestNames<'a>, object: &'a Value) -> &'a str {
    match names.namespace {
        "" => object["metadata"]["namespace"].as_str().unwrap_or_default(),
        namespace => namespace,
    }
}

/// Decides on a claim or claim template being created.
pub(crate) fn evaluate(
    request: &AdmissionRequest,
    kind: &ClaimKind,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Decision {
    if request.operation != CREATE {
        return Decision::accept();
    }
    let text = request.object_text();
    let object: Value = match serde_json::from_slice(text.as_bytes()) {
        Ok(object) => object,
        Err(error) => {
            return Decision::reject(format!("the {} cannot be read: {error}", kind.kind))
        }
    };
    let annotations = &object["metadata"]["annotations"];
    if annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION].as_str() == Some("true") {
        return Decision::accept();
    }
    let names = RequestNames::of(request);
    let name = display_name(names, &object);
    if let Some(pod_claim) = annotations[POD_CLAIM_NAME_ANNOTATION].as_str() {
        return match kind.kind == RESOURCE_CLAIM.kind {
            true => generated::evaluate(
                text,
                &object,
                pod_claim,
                (namespace(names, &object), &name),
                config,
                cluster,
            ),
            false => Decision::accept(),
        };
    }
    let claim = match DeviceClaim::of_object(&object, kind) {
        Ok(claim) => claim,
        // The API server validates the claim; a field this policy reads
        // differently must not block it.
        Err(problem) => return explain::unread_claim(kind, &name, &problem),
    };
    let Some(aligned) = completion::aligned_requests(&claim, &config.dra) else {
        return Decision::accept();
    };
    if !config.sources.reads_cluster() {
        return Decision::accept();
    }
    let inventory = match dra::read_inventory(cluster, &config.sources) {
        Ok(inventory) => inventory,
        Err(problem) => return explain::no_inventory(kind, &name, &problem),
    };
    if let Err(problem) = fit::within_work_cap(&claim, &inventory) {
        return explain::unread_claim(kind, &name, &problem);
    }
    let plan = plan(&claim, aligned, config, &inventory);
    let decision = explain::decision(kind, &name, &plan, config);
    let warnings = decision.warnings.clone();
    decision
        .try_map(|constraint| patch::add_constraint(text, kind, &constraint).map(MutatedObject))
        // The claim is valid to the API server: a text this policy cannot
        // edit safely is admitted as written, never refused.
        .unwrap_or_else(|problem| Decision {
            verdict: Verdict::Accept,
            warnings: warnings
                .into_iter()
                .chain([format!("{} {name} was not completed: {problem}", kind.kind)])
                .collect(),
        })
}
