//! The caps on a claim's decision (issue #35): a claim whose lists are
//! past the API's caps (`request::claim::MAX_REQUESTS` and the others) is
//! not read, and a claim whose fit would pass over more devices than
//! [`MAX_FIT_WORK`] is not checked; both are admitted as written with a
//! warning naming the cap, under `preferred` and `required` alike, never
//! refused for the cap alone.

use super::fit::MAX_FIT_WORK;
use crate::cluster::host::ClusterReader;
use crate::decide::testing::config;
use crate::decide::{evaluate_with, Decision, Verdict};
use crate::request::claim::{MAX_CONSTRAINTS, MAX_FIRST_AVAILABLE, MAX_REQUESTS, MAX_SELECTORS};
use crate::request::AdmissionRequest;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use proptest::prelude::*;
use rstest::rstest;
use serde_json::{json, Value};

const NUMA: &str = "resource.kubernetes.io/numaNode";

/// One node publishing `gpus` GPUs of the NVIDIA DRA driver, each on a
/// NUMA node of its own (so each a distinct device entry), through the
/// ResourceSlice list, each `copies` times; no fleet summary. A pod's
/// claim template reads as `template`.
struct OneNode {
    gpus: usize,
    copies: usize,
    template: Value,
}

impl ClusterReader for OneNode {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let list = match request.kind.as_str() {
            "DeviceClass" => json!({"items": [{"metadata": {"name": "gpu.nvidia.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}]}),
            _ => json!({"items": [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "a",
                "pool": {"name": "a", "generation": 1, "resourceSliceCount": 1},
                "devices": (0..self.gpus * self.copies).map(|gpu| json!({"name": format!("gpu-{gpu}"),
                    "attributes": {NUMA: {"int": gpu % self.gpus}}})).collect::<Vec<_>>()}}]}),
        };
        Ok(list.to_string().into_bytes())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        match request.kind.as_str() {
            "ResourceClaimTemplate" => Ok(self.template.to_string().into_bytes()),
            _ => Err("configmaps \"gpu-topology-fleet\" not found".to_owned()),
        }
    }
}

/// A ResourceClaim of `requests` GPU requests, each of `choices`
/// `firstAvailable` subrequests (an `exactly` request when 0) with
/// `selectors` selectors, and `constraints` NUMA constraints each naming
/// `named` requests.
fn claim(
    requests: usize,
    choices: usize,
    selectors: usize,
    constraints: usize,
    named: usize,
) -> Value {
    let choice = |name: Option<String>| {
        let mut choice = json!({"deviceClassName": "gpu.nvidia.com"});
        if let Some(name) = name {
            choice["name"] = name.into();
        }
        if selectors > 0 {
            choice["selectors"] = vec![json!({"cel": {"expression": "true"}}); selectors].into();
        }
        choice
    };
    let requests: Vec<Value> = (0..requests)
        .map(|r| match choices {
            0 => json!({"name": format!("r{r}"), "exactly": choice(None)}),
            _ => json!({"name": format!("r{r}"),
                "firstAvailable": (0..choices).map(|s| choice(Some(format!("s{s}")))).collect::<Vec<_>>()}),
        })
        .collect();
    let names: Vec<String> = (0..named).map(|r| format!("r{r}")).collect();
    let constraints = vec![json!({"requests": names, "matchAttribute": NUMA}); constraints];
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "big", "namespace": "research"},
        "spec": {"devices": {"requests": requests, "constraints": constraints}}})
}

fn decide(object: Value, affinity: &str, cluster: &dyn ClusterReader) -> Decision {
    let (group, kind, resource) = match object["kind"].as_str() {
        Some("Pod") => ("", "Pod", "pods"),
        _ => ("resource.k8s.io", "ResourceClaim", "resourceclaims"),
    };
    let request = json!({
        "uid": "1", "name": "big", "namespace": "research", "operation": "CREATE",
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": resource},
        "object": object,
    })
    .to_string();
    let config = config(json!({"topology": {"affinity": affinity}}));
    evaluate_with(
        &AdmissionRequest::parse(&request).unwrap(),
        &config,
        cluster,
    )
}

/// The passes over the devices of the largest claim the API allows:
/// 32 requests of 8 choices, 32 constraints (`fit::within_work_cap`).
const MOST_PASSES: usize = MAX_REQUESTS * MAX_FIRST_AVAILABLE * (MAX_CONSTRAINTS + 3);
/// The most GPUs on one node that the largest claim is still checked
/// against: the node's entry and its devices, `MOST_PASSES` times each.
const MOST_GPUS: usize = MAX_FIT_WORK / MOST_PASSES - 1;

const CAPPED: &str = "was not checked or aligned";

/// (the claim, the GPUs of the one node, the warning past a cap)
#[rstest]
#[case::requests_at_the_cap(claim(MAX_REQUESTS, 0, 0, 0, 0), 8, None)]
#[case::requests_past_the_cap(
    claim(MAX_REQUESTS + 1, 0, 0, 0, 0), 8,
    Some("ResourceClaim research/big was not checked or aligned: spec.devices.requests has 33 entries, more than the 32 the API allows")
)]
#[case::first_available_at_the_cap(claim(1, MAX_FIRST_AVAILABLE, 0, 0, 0), 8, None)]
#[case::first_available_past_the_cap(
    claim(1, MAX_FIRST_AVAILABLE + 1, 0, 0, 0), 8,
    Some("ResourceClaim research/big was not checked or aligned: spec.devices.requests[0].firstAvailable has 9 entries, more than the 8 the API allows")
)]
#[case::selectors_at_the_cap(claim(1, 0, MAX_SELECTORS, 0, 0), 8, None)]
#[case::selectors_past_the_cap(
    claim(1, 0, MAX_SELECTORS + 1, 0, 0), 8,
    Some("ResourceClaim research/big was not checked or aligned: spec.devices.requests[0].exactly.selectors has 33 entries, more than the 32 the API allows")
)]
#[case::constraints_at_the_cap(claim(1, 0, 0, MAX_CONSTRAINTS, 1), 8, None)]
#[case::constraints_past_the_cap(
    claim(1, 0, 0, MAX_CONSTRAINTS + 1, 1), 8,
    Some("ResourceClaim research/big was not checked or aligned: spec.devices.constraints has 33 entries, more than the 32 the API allows")
)]
#[case::constraint_requests_at_the_cap(claim(MAX_REQUESTS, 0, 0, 1, MAX_REQUESTS), 8, None)]
#[case::constraint_requests_past_the_cap(
    claim(MAX_REQUESTS, 0, 0, 1, MAX_REQUESTS + 1), 8,
    Some("ResourceClaim research/big was not checked or aligned: spec.devices.constraints[0].requests has 33 entries, more than the 32 the API allows")
)]
#[case::fit_work_at_the_cap(
    claim(MAX_REQUESTS, MAX_FIRST_AVAILABLE, 0, MAX_CONSTRAINTS, 1),
    MOST_GPUS,
    None
)]
#[case::fit_work_past_the_cap(
    claim(MAX_REQUESTS, MAX_FIRST_AVAILABLE, 0, MAX_CONSTRAINTS, 1), MOST_GPUS + 1,
    Some("ResourceClaim research/big was not checked or aligned: the DRA claim's fit would pass 8960 times over the 469 device entries of 1 groups of nodes: more than the 4194304 device checks (or 10000 groups) one admission makes, so it is not checked")
)]
fn past_a_cap_the_claim_is_admitted_with_a_warning_that_names_it(
    #[case] object: Value,
    #[case] gpus: usize,
    #[case] warning: Option<&str>,
) {
    for affinity in ["preferred", "required"] {
        let decision = decide(
            object.clone(),
            affinity,
            &OneNode {
                gpus,
                copies: 1,
                template: Value::Null,
            },
        );
        let capped: Vec<&String> = decision
            .warnings
            .iter()
            .filter(|w| w.contains(CAPPED))
            .collect();
        match warning {
            Some(warning) => {
                assert_eq!(decision.verdict, Verdict::Accept, "{affinity}");
                assert_eq!(decision.warnings, [warning], "{affinity}");
            }
            None => assert!(capped.is_empty(), "{affinity}: {capped:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Claims with lists on both sides of the API's caps always get an
    /// answer; one past a cap is admitted as written, with a warning that
    /// names the cap.
    #[test]
    fn every_claim_size_gets_an_answer(
        requests in 1usize..(MAX_REQUESTS + 8),
        choices in 0usize..(MAX_FIRST_AVAILABLE + 4),
        selectors in 0usize..(MAX_SELECTORS + 8),
        constraints in 0usize..(MAX_CONSTRAINTS + 8),
        named in 0usize..(MAX_REQUESTS + 8),
        gpus in 1usize..16,
        required in any::<bool>(),
    ) {
        let affinity = if required { "required" } else { "preferred" };
        let decision = decide(
            claim(requests, choices, selectors, constraints, named),
            affinity,
            &OneNode { gpus, copies: 1, template: Value::Null },
        );
        let past = requests > MAX_REQUESTS
            || choices > MAX_FIRST_AVAILABLE
            || selectors > MAX_SELECTORS
            || constraints > MAX_CONSTRAINTS
            || (constraints > 0 && named > MAX_REQUESTS);
        if past {
            prop_assert_eq!(&decision.verdict, &Verdict::Accept);
            prop_assert!(
                decision.warnings.iter().any(|w| w.contains("the API allows")),
                "{:?}", decision.warnings
            );
        }
    }
}

/// A pod whose one container uses a claim from template `big`.
fn pod_with_template() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "research"},
        "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "big"}],
            "containers": [{"name": "train", "image": "train", "resources": {"claims": [{"name": "gpus"}]}}]}})
}

/// The pod's template: the largest claim the API allows.
fn largest_template() -> Value {
    let claim = claim(MAX_REQUESTS, MAX_FIRST_AVAILABLE, 0, MAX_CONSTRAINTS, 1);
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "big", "namespace": "research"}, "spec": {"spec": claim["spec"]}})
}

/// (the GPUs of the one node, whether the pod's claim is checked)
#[rstest]
#[case::fit_work_at_the_cap(MOST_GPUS, true)]
#[case::fit_work_past_the_cap(MOST_GPUS + 1, false)]
fn past_the_fit_cap_a_pods_claims_are_not_checked_and_the_pod_is_warned(
    #[case] gpus: usize,
    #[case] checked: bool,
) {
    let cluster = OneNode {
        gpus,
        copies: 1,
        template: largest_template(),
    };
    for affinity in ["preferred", "required"] {
        let decision = decide(pod_with_template(), affinity, &cluster);
        let warned = decision.warnings.iter().any(|w| {
            w.starts_with(
                "the DRA claim's fit would pass 8960 times over the 469 device entries of 1 groups",
            )
        });
        assert_eq!(warned, !checked, "{affinity}: {:?}", decision.warnings);
        if !checked {
            assert!(
                !matches!(decision.verdict, Verdict::Reject(_)),
                "{affinity}: {decision:?}"
            );
        }
    }
}

/// (copies of the node's one GPU, the warning past the cap): the devices of
/// one group read from the ResourceSlice list are held to the summary's cap.
#[rstest]
#[case::group_devices_at_the_cap(1 << 16, None)]
#[case::group_devices_past_the_cap(
    (1 << 16) + 1,
    Some("ResourceClaim research/big was not checked or aligned: 65537 devices in one group of nodes, more than the 65536 read per group")
)]
fn past_the_group_cap_the_claim_is_admitted_with_a_warning_that_names_it(
    #[case] copies: usize,
    #[case] warning: Option<&str>,
) {
    let cluster = OneNode {
        gpus: 1,
        copies,
        template: Value::Null,
    };
    // `required` only: reading 65,536 devices is slow unoptimized, and the
    // cap must never be a refusal there above all.
    let decision = decide(claim(2, 0, 0, 0, 0), "required", &cluster);
    match warning {
        Some(warning) => {
            assert_eq!(decision.verdict, Verdict::Accept);
            assert_eq!(decision.warnings, [warning]);
        }
        None => assert!(
            !decision.warnings.iter().any(|w| w.contains(CAPPED)),
            "{decision:?}"
        ),
    }
}
