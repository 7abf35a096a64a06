//! A ResourceClaim the ResourceClaim controller generated from a pod's
//! template (annotation `resource.kubernetes.io/pod-claim-name`, owner the
//! pod). Its spec is the template's, which was decided at the template's
//! CREATE; what only the pod tells is its CPU count, so the one thing
//! decided here is dra-driver-cpu's CPUs ([`cpus`]). A generated claim is
//! never refused: its pod already exists, and a refusal would leave it
//! Pending while the controller retried.

use crate::cluster::dra;
use crate::cluster::host::{access_may_fix, quote_host_error, ClusterReader};
use crate::decide::answer::{Decision, MutatedObject, Verdict};
use crate::decide::claim::completion::aligned_requests;
use crate::decide::claim::cpus::{self, CpuPlan};
use crate::decide::claim::fit::within_work_cap;
use crate::decide::claim::patch;
use crate::request::claim::{DeviceClaim, RESOURCE_CLAIM};
use crate::settings::Config;
use kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest;
use serde_json::Value;

/// The pod that owns a generated claim (its controlling owner reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerPod<'a> {
    pub name: &'a str,
    pub uid: &'a str,
}

/// The claim's controlling owner, when it is a Pod.
pub fn owner_pod(object: &Value) -> Option<OwnerPod<'_>> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|owner| {
            owner["kind"] == "Pod" && owner["apiVersion"] == "v1" && owner["controller"] == true
        })
        .and_then(|owner| {
            Some(OwnerPod {
                name: owner["name"].as_str()?,
                uid: owner["uid"].as_str()?,
            })
        })
}

/// The `get_resource` request for the owner pod: its uid and what the CPU
/// plan reads of its containers. Uncached: a pod of a StatefulSet comes
/// back under the same name, maybe with other resources.
pub fn pod_request(owner: &OwnerPod, namespace: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: "v1".to_owned(),
        kind: "Pod".to_owned(),
        name: owner.name.to_owned(),
        namespace: Some(namespace.to_owned()),
        disable_cache: true,
        field_masks: Some(
            [
                "metadata.uid",
                "spec.containers.name",
                "spec.containers.resources",
                "spec.initContainers.name",
                "spec.initContainers.resources",
                "spec.initContainers.restartPolicy",
                "spec.resources",
            ]
            .map(str::to_owned)
            .into(),
        ),
    }
}

/// Decides on a generated claim (`object`, as `text`) named `name`, of pod
/// claim `pod_claim`, in `namespace`.
pub fn evaluate(
    text: &str,
    object: &Value,
    pod_claim: &str,
    (namespace, name): (&str, &str),
    config: &Config,
    cluster: &dyn ClusterReader,
) -> Decision {
    if !cpus::completes_claims(config) {
        return Decision::accept();
    }
    let Some(owner) = owner_pod(object) else {
        return Decision::accept();
    };
    let Ok(claim) = DeviceClaim::of_object(object, &RESOURCE_CLAIM) else {
        return Decision::accept();
    };
    let Some(aligned) = aligned_requests(&claim, &config.dra) else {
        return Decision::accept();
    };
    let not_completed = |problem: String| Decision {
        verdict: Verdict::Accept,
        warnings: vec![format!(
            "ResourceClaim {name} was not given dra-driver-cpu CPUs: {problem}"
        )],
    };
    let inventory = match dra::read_inventory(cluster, &config.sources) {
        Ok(inventory) => inventory,
        Err(problem) => return not_completed(quote_host_error(&problem)),
    };
    if cpus::cpu_class(config, &inventory).is_none() {
        return Decision::accept();
    }
    // Past the fit's cap the claim is not completed, with a warning.
    if let Err(problem) = within_work_cap(&claim, &inventory) {
        return not_completed(problem);
    }
    let pod = match read_pod(cluster, &owner, namespace) {
        Ok(pod) => pod,
        Err(problem) => return not_completed(problem),
    };
    if pod["metadata"]["uid"].as_str() != Some(owner.uid) {
        return not_completed(format!(
            "Pod {namespace}/{} is no longer the pod it was generated for (uid {})",
            owner.name, owner.uid
        ));
    }
    let CpuPlan::Add(add) = cpus::cpu_plan(
        &claim,
        &aligned,
        &pod["spec"],
        pod_claim,
        config,
        &inventory,
    ) else {
        // The pod's admission said why, to the pod's author.
        return Decision::accept();
    };
    patch::add_request(text, &RESOURCE_CLAIM, &add.request.to_json())
        .and_then(|added| patch::add_constraint(&added, &RESOURCE_CLAIM, &add.constraint))
        .map(|completed| Verdict::Mutate(MutatedObject(completed)).into())
        .unwrap_or_else(not_completed)
}

/// The owner pod, or why it cannot be read.
fn read_pod(
    cluster: &dyn ClusterReader,
    owner: &OwnerPod,
    namespace: &str,
) -> Result<Value, String> {
    let bytes = cluster
        .get_resource(&pod_request(owner, namespace))
        .map_err(|error| {
            // A pod deleted before its claim came, or an API server out of
            // reach, is not fixed by granting access.
            let grant = match access_may_fix(&error) {
                true => "; grant the policy v1 Pod in contextAwareResources",
                false => "",
            };
            format!(
                "Pod {namespace}/{} cannot be read ({}){grant}",
                owner.name,
                quote_host_error(&error)
            )
        })?;
    serde_json::from_slice(&bytes)
        .map_err(|error| format!("Pod {namespace}/{} is not JSON: {error}", owner.name))
}
