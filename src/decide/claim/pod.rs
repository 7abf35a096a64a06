//! A Pod whose GPUs come through DRA claims (`spec.resourceClaims`): what
//! the policy can check at the pod's admission, and what it must say.
//!
//! - The pod's claims are read with `get_resource`: a ResourceClaimTemplate
//!   (the ResourceClaim controller creates the pod's claim from it after the
//!   pod exists) or a ResourceClaim, in the pod's namespace. A claim with a
//!   request of a GPU DeviceClass makes the pod a DRA GPU pod.
//! - A template no node's devices can allocate rejects the pod, with the
//!   claim's numbers: its pods would stay Pending. A ResourceClaim is not
//!   checked here: it may be allocated already (it was checked at its own
//!   CREATE).
//! - Exclusive CPUs are never aligned with DRA devices: the kubelet's DRA
//!   manager gives the Topology Manager no hint (`pkg/kubelet/cm/dra`
//!   `GetTopologyHints` and `GetPodTopologyHints` return `nil` for every
//!   resource), so the static CPU Manager picks a Guaranteed container's
//!   whole CPUs without regard to its DRA GPUs. Such a pod is warned.
//! - Constraints span one claim (the allocator allocates each claim on its
//!   own), so GPUs from several claims are not aligned with each other.
//! - Where the cluster runs dra-driver-cpu, the claim generated from a GPU
//!   template gets the CPUs of the container that uses it ([`cpus`]): the
//!   pod is told what its claim will get, or why it gets no CPUs.
//!
//! The pod itself is not changed: its QoS and affinity are the extended
//! resource path's, and a DRA claim's alignment is the claim's.

use crate::cluster::dra::{self, DraInventory};
use crate::cluster::host::{access_may_fix, quote_host_error, ClusterReader};
use crate::decide::claim::completion::{aligned_requests, Aligned};
use crate::decide::claim::cpus::{self, CpuPlan, DRA_CPU_DRIVER};
use crate::decide::claim::fit::{claim_fit, within_work_cap, ClaimFit};
use crate::decide::claim::pod_notes::{DraRejection, DraWarning};
use crate::request::claim::{
    ClaimKind, DeviceClaim, RESOURCE_API_VERSION, RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE,
};
use crate::request::pod::{containers, ContainerRef, Section};
use crate::request::quantity::Quantity;
use crate::settings::Config;
use kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest;
use serde_json::Value;

/// One entry of `spec.resourceClaims`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodClaim {
    /// The name containers use in `resources.claims`.
    pub name: String,
    pub kind: &'static ClaimKind,
    /// The template's or claim's name.
    pub source: String,
}

/// The pod's claims; entries that name neither source are left out (the
/// API server refuses them).
pub fn pod_claims(spec: &Value) -> Vec<PodClaim> {
    let Some(claims) = spec.get("resourceClaims").and_then(Value::as_array) else {
        return Vec::new();
    };
    claims
        .iter()
        .filter_map(|claim| {
            let name = claim.get("name")?.as_str()?.to_owned();
            let (kind, source) = match (
                claim
                    .get("resourceClaimTemplateName")
                    .and_then(Value::as_str),
                claim.get("resourceClaimName").and_then(Value::as_str),
            ) {
                (Some(template), None) => (&RESOURCE_CLAIM_TEMPLATE, template),
                (None, Some(claim)) => (&RESOURCE_CLAIM, claim),
                _ => return None,
            };
            Some(PodClaim {
                name,
                kind,
                source: source.to_owned(),
            })
        })
        .collect()
}

/// The `get_resource` request for a pod claim's source.
pub fn claim_request(claim: &PodClaim, namespace: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: RESOURCE_API_VERSION.to_owned(),
        kind: claim.kind.kind.to_owned(),
        name: claim.source.clone(),
        namespace: Some(namespace.to_owned()),
        disable_cache: false,
        field_masks: Some([claim.kind.devices_path.join(".")].into()),
    }
}

/// What the DRA stage decided about a pod: what it adds to the pod's
/// answer, as data, and the record of each claim it read (the tool shows
/// both).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraStage {
    /// The pod as the messages name it (`namespace/name`), and its
    /// namespace.
    pub pod: String,
    pub namespace: String,
    pub rejection: Option<DraRejection>,
    pub warnings: Vec<DraWarning>,
    /// One record per entry of `spec.resourceClaims`, in its order.
    pub claims: Vec<ClaimRecord>,
    /// Why the published devices (summary or ResourceSlices) were not read,
    /// when a GPU claim needed them: no claim was checked against them.
    pub devices_unread: Option<String>,
}

/// One of the pod's claims and what the DRA stage found about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRecord {
    pub claim: PodClaim,
    pub outcome: ClaimOutcome,
}

/// What a pod claim's source claims, as far as the stage read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The source could not be read (why): whether it claims GPUs is not
    /// known.
    Unreadable(String),
    /// It claims no GPUs: the stage leaves it alone.
    NoGpus,
    /// It claims GPUs.
    Gpus {
        /// The GPU requests, in the claim's order.
        gpu_requests: Vec<String>,
        /// The fewest devices its aligned requests take together.
        devices: u32,
        /// Its fit against the published devices. `None`: not checked,
        /// because it is a ResourceClaim (checked at its own CREATE), the
        /// devices were not read ([`DraStage::devices_unread`]), or an
        /// earlier claim already rejected the pod.
        fit: Option<ClaimFit>,
        /// dra-driver-cpu's CPUs for the claim generated from the template
        /// (`None`: not planned, for the same reasons as `fit`).
        cpus: Option<CpuPlan>,
    },
}

/// A pod claim read, with its aligned requests (`None`: no GPU claim).
struct ReadClaim<'c> {
    claim: &'c PodClaim,
    devices: DeviceClaim,
    aligned: Option<Aligned>,
    /// Its record's index in [`DraStage::claims`].
    record: usize,
}

/// The DRA stage of pod `name` (`namespace/name`) with PodSpec `spec`.
pub(crate) fn dra_stage(
    spec: &Value,
    namespace: &str,
    name: &str,
    config: &Config,
    cluster: &dyn ClusterReader,
) -> DraStage {
    let claims = pod_claims(spec);
    let mut stage = DraStage {
        pod: name.to_owned(),
        namespace: namespace.to_owned(),
        ..DraStage::default()
    };
    if claims.is_empty() {
        return stage;
    }
    let mut read = Vec::new();
    // A template named by several claims (one per container) is read once.
    let mut answers: Vec<(&PodClaim, Result<DeviceClaim, String>)> = Vec::new();
    for claim in &claims {
        let known = answers
            .iter()
            .find(|(other, _)| other.kind.kind == claim.kind.kind && other.source == claim.source)
            .map(|(_, answer)| answer.clone());
        let answer = known.unwrap_or_else(|| {
            let answer = read_claim(claim, namespace, cluster);
            if let Err(unread) = &answer {
                // Granting access is the fix only where access may be what
                // failed: not for a source that is not there yet, or one
                // the API server would not have stored.
                stage.warnings.push(DraWarning::Unreadable {
                    record: stage.claims.len(),
                    access_may_fix: unread.access_may_fix,
                });
            }
            answer.map_err(|unread| unread.problem)
        });
        answers.push((claim, answer.clone()));
        let record = stage.claims.len();
        let outcome = match answer {
            Err(problem) => ClaimOutcome::Unreadable(problem),
            Ok(devices) => {
                let aligned = aligned_requests(&devices, &config.dra);
                let outcome = match &aligned {
                    None => ClaimOutcome::NoGpus,
                    Some(aligned) => ClaimOutcome::Gpus {
                        gpu_requests: aligned.gpu_requests.clone(),
                        devices: aligned.devices,
                        fit: None,
                        cpus: None,
                    },
                };
                read.push(ReadClaim {
                    claim,
                    devices,
                    aligned,
                    record,
                });
                outcome
            }
        };
        stage.claims.push(ClaimRecord {
            claim: claim.clone(),
            outcome,
        });
    }
    let gpu_claims: Vec<&ReadClaim> = read.iter().filter(|c| c.aligned.is_some()).collect();
    if gpu_claims.is_empty() {
        return stage;
    }
    if gpu_claims.len() > 1 {
        stage.warnings.push(DraWarning::SeveralGpuClaims {
            claims: gpu_claims.iter().map(|c| c.claim.name.clone()).collect(),
        });
    }
    let mut inventory = dra::read_inventory(cluster, &config.sources);
    // Past the fit's cap no claim is checked: the pod is warned, never
    // refused for it.
    if let Ok(read) = &inventory {
        if let Some(problem) = gpu_claims
            .iter()
            .find_map(|c| within_work_cap(&c.devices, read).err())
        {
            stage.warnings.push(DraWarning::FitCapped {
                problem: problem.clone(),
            });
            inventory = Err(problem);
        }
    }
    if let Err(problem) = &inventory {
        stage.devices_unread = Some(problem.clone());
    }
    if let Ok(inventory) = &inventory {
        for claim in gpu_claims
            .iter()
            .filter(|c| c.claim.kind.kind == RESOURCE_CLAIM_TEMPLATE.kind)
        {
            let fit = claim_fit(&claim.devices, inventory);
            if let ClaimFit::NoFit(_) = &fit {
                stage.rejection = Some(DraRejection::TemplateCannotFit {
                    record: claim.record,
                });
            }
            stage.claims[claim.record].set_fit(fit);
            if stage.rejection.is_some() {
                return stage;
            }
        }
    }
    // dra-driver-cpu's CPUs for the claims generated from GPU templates.
    let mut given_cpus = Vec::new();
    if let Ok(inventory) = &inventory {
        for claim in gpu_claims
            .iter()
            .filter(|c| c.claim.kind.kind == RESOURCE_CLAIM_TEMPLATE.kind)
        {
            let Some(aligned) = &claim.aligned else {
                continue;
            };
            let plan = cpus::cpu_plan(
                &claim.devices,
                aligned,
                spec,
                &claim.claim.name,
                config,
                inventory,
            );
            if let CpuPlan::Add(add) = &plan {
                given_cpus.push(add.container.clone());
            }
            if !matches!(plan, CpuPlan::NotApplicable) {
                stage.warnings.push(DraWarning::Cpus {
                    record: claim.record,
                });
            }
            stage.claims[claim.record].set_cpus(plan);
        }
    }
    let gpu_claim_names: Vec<&str> = gpu_claims.iter().map(|c| c.claim.name.as_str()).collect();
    let pinned: Vec<String> = exclusive_cpu_containers(spec, &gpu_claim_names)
        .into_iter()
        .filter(|container| !given_cpus.contains(container))
        .map(|container| container.to_string())
        .collect();
    if !pinned.is_empty() {
        stage.warnings.push(DraWarning::UnalignedExclusiveCpus {
            containers: pinned,
            runs_dra_cpu: runs_dra_cpu(inventory.as_ref().ok()),
        });
    }
    stage
}

impl ClaimRecord {
    fn set_fit(&mut self, checked: ClaimFit) {
        if let ClaimOutcome::Gpus { fit, .. } = &mut self.outcome {
            *fit = Some(checked);
        }
    }

    fn set_cpus(&mut self, plan: CpuPlan) {
        if let ClaimOutcome::Gpus { cpus, .. } = &mut self.outcome {
            *cpus = Some(plan);
        }
    }
}

/// The devices a pod claim's source claims, or why it cannot be read.
fn read_claim(
    claim: &PodClaim,
    namespace: &str,
    cluster: &dyn ClusterReader,
) -> Result<DeviceClaim, Unread> {
    let bytes = cluster
        .get_resource(&claim_request(claim, namespace))
        .map_err(|error| Unread {
            access_may_fix: access_may_fix(&error),
            problem: quote_host_error(&error),
        })?;
    let unreadable = |problem| Unread {
        problem,
        access_may_fix: false,
    };
    let object: Value = serde_json::from_slice(&bytes)
        .map_err(|error| unreadable(format!("the answer is not JSON: {error}")))?;
    DeviceClaim::of_object(&object, claim.kind).map_err(unreadable)
}

/// Why a claim's source was not read, and whether granting the policy
/// access to its kind could be the fix: the host refused it, or failed in
/// words the policy cannot read.
struct Unread {
    problem: String,
    access_may_fix: bool,
}

/// Whether the devices read show dra-driver-cpu running in the cluster.
fn runs_dra_cpu(inventory: Option<&DraInventory>) -> bool {
    inventory.is_some_and(|inventory| {
        inventory
            .all_devices()
            .any(|device| device.driver == DRA_CPU_DRIVER)
    })
}

/// The containers using one of `gpu_claims` that the static CPU Manager
/// would give exclusive CPUs: in a Guaranteed pod (every container's CPU
/// and memory limited, requests equal to limits), a whole CPU count
/// (`cpumanager` `policy_static.go` `guaranteedCPUs`).
fn exclusive_cpu_containers(spec: &Value, gpu_claims: &[&str]) -> Vec<ContainerRef> {
    let Ok(all) = containers(spec) else {
        return Vec::new();
    };
    if spec.get("resources").is_some_and(|r| !r.is_null()) {
        // Pod-level resources: the kubelet's exclusive CPUs then follow
        // rules this check does not model; say nothing rather than guess.
        return Vec::new();
    }
    let quantity = |container: &crate::request::pod::Container, section, resource| {
        container
            .resource(section, resource)
            .and_then(|text| Quantity::parse(&text).ok())
    };
    let guaranteed = all.iter().all(|container| {
        ["cpu", "memory"].iter().all(|resource| {
            let limit = quantity(container, Section::Limits, resource);
            let request = quantity(container, Section::Requests, resource);
            limit.is_some() && (request.is_none() || request == limit)
        })
    });
    if !guaranteed {
        return Vec::new();
    }
    all.iter()
        .filter(|container| {
            let uses_gpu_claim = container
                .json
                .get("resources")
                .and_then(|r| r.get("claims"))
                .and_then(Value::as_array)
                .is_some_and(|claims| {
                    claims.iter().any(|claim| {
                        claim
                            .get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|name| gpu_claims.contains(&name))
                    })
                });
            uses_gpu_claim
                && quantity(container, Section::Limits, "cpu").is_some_and(|cpu| cpu.is_whole())
        })
        .map(|container| container.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::testing::config;
    use crate::request::claim::MAX_REQUESTS;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;
    use rstest::rstest;
    use serde_json::json;

    /// A cluster whose read of the pod's claim template answers `answer`.
    struct Template(Result<Value, &'static str>);

    impl ClusterReader for Template {
        fn list_all_resources(&self, _: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
            Err("not listed here".to_owned())
        }

        fn get_resource(&self, _: &GetResourceRequest) -> Result<Vec<u8>, String> {
            self.0
                .clone()
                .map(|template| template.to_string().into_bytes())
                .map_err(str::to_owned)
        }
    }

    fn template_of(requests: usize) -> Value {
        let request = |i| json!({"name": format!("gpu-{i}"), "exactly": {"deviceClassName": "gpu.nvidia.com"}});
        json!({"spec": {"spec": {"devices": {"requests": (0..requests).map(request).collect::<Vec<_>>()}}}})
    }

    /// Access is named as the fix only where the host refused the read or
    /// said nothing readable: not for a template that is not there (yet),
    /// an API server out of reach, or a template past the API's caps.
    #[rstest]
    #[case::access_denied(
        Err(
            "resourceclaimtemplates.resource.k8s.io \"gpu\" is forbidden: User cannot get resource"
        ),
        true
    )]
    #[case::not_granted_by_kubewarden(Err("Callback evaluation failure: resource.k8s.io/v1 ResourceClaimTemplate has not been granted access"), true)]
    #[case::unreadable_words(Err("something went wrong"), true)]
    #[case::not_found(Err("ApiError: resourceclaimtemplates.resource.k8s.io \"gpu\" not found: NotFound (ErrorResponse { status: \"Failure\", reason: \"NotFound\", code: 404 })"), false)]
    #[case::unreachable(
        Err("error trying to connect: tcp connect error: Connection refused (os error 111)"),
        false
    )]
    #[case::past_the_api_cap(Ok(template_of(MAX_REQUESTS + 1)), false)]
    fn an_unread_claim_names_access_only_where_access_may_fix_it(
        #[case] answer: Result<Value, &'static str>,
        #[case] grant: bool,
    ) {
        let spec = json!({
            "containers": [{"name": "train", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
        });
        let stage = dra_stage(
            &spec,
            "ml",
            "ml/train",
            &config(json!({})),
            &Template(answer),
        );
        let words = crate::decide::claim::explain::dra_warnings(&stage);
        let [warning] = words.as_slice() else {
            panic!("one warning: {words:?}");
        };
        assert!(
            warning.starts_with("Pod ml/train: the ResourceClaimTemplate ml/gpu of its claim \"gpu\" cannot be read ("),
            "{warning}"
        );
        assert_eq!(warning.contains("; grant the policy resource.k8s.io/v1 ResourceClaimTemplate in contextAwareResources"), grant, "{warning}");
        assert!(matches!(
            stage.claims.as_slice(),
            [ClaimRecord {
                outcome: ClaimOutcome::Unreadable(_),
                ..
            }]
        ));
    }

    /// The DRA stage reads the tree the GPU stages read (the reduced pod
    /// of its text, or its whole tree) and names the pod alike either way:
    /// by the request's names, else its own (a generated name with `*`).
    /// (request's name and namespace, the pod's name in the warning)
    #[rstest]
    #[case::named_by_its_metadata(None, "Pod ml/train-*")]
    #[case::named_by_the_request(Some(("train-x7", "ml")), "Pod ml/train-x7")]
    fn the_pod_stage_reads_the_pod_the_gpu_stages_read(
        #[case] request: Option<(&str, &str)>,
        #[case] named: &str,
    ) {
        use crate::decide::{evaluate_pod, evaluate_pod_text, evaluate_with};
        use crate::request::AdmissionRequest;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "train-", "namespace": "ml", "annotations": {"a": "b"}},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                "containers": [{"name": "train", "resources": {"claims": [{"name": "gpu"}]}}]}});
        let (config, cluster) = (config(json!({})), Template(Err("forbidden")));
        fn accepted<Object>(verdict: &crate::decide::Verdict<Object>) -> bool {
            matches!(verdict, crate::decide::Verdict::Accept)
        }
        let answers = match request {
            None => {
                let from_text = evaluate_pod_text(&pod.to_string(), &config, &cluster);
                let from_tree = evaluate_pod(&pod, &config, &cluster);
                vec![
                    (accepted(&from_text.verdict), from_text.warnings),
                    (accepted(&from_tree.verdict), from_tree.warnings),
                ]
            }
            Some((name, namespace)) => {
                let request = json!({"uid": "1", "name": name, "namespace": namespace,
                    "operation": "CREATE", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"}, "object": pod})
                .to_string();
                let request = AdmissionRequest::parse(&request).unwrap();
                let decision = evaluate_with(&request, &config, &cluster);
                vec![(accepted(&decision.verdict), decision.warnings)]
            }
        };
        for (accepted, warnings) in answers {
            assert!(accepted);
            let [warning] = warnings.as_slice() else {
                panic!("one warning: {warnings:?}");
            };
            assert!(
                warning.starts_with(&format!("{named}: the ResourceClaimTemplate ml/gpu")),
                "{warning}"
            );
        }
    }

    /// A rejection whose claim record is not there (the stage never makes
    /// one) still rejects, in words that name no figure.
    #[test]
    fn a_rejection_without_its_record_still_rejects() {
        let stage = DraStage {
            pod: "ml/train".to_owned(),
            namespace: "ml".to_owned(),
            rejection: Some(DraRejection::TemplateCannotFit { record: 3 }),
            ..DraStage::default()
        };
        assert_eq!(
            crate::decide::claim::explain::dra_rejection(&stage).as_deref(),
            Some("Pod ml/train cannot be scheduled: a claim template of it cannot be allocated on any node")
        );
    }
}
