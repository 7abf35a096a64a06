//! A ResourceClaim's or ResourceClaimTemplate's device requests
//! (`resource.k8s.io/v1`), as the policy reads them: a small typed view over
//! the JSON tree, since `k8s-openapi`'s `v1_32` feature has no
//! `resource.k8s.io/v1` types and typed structs would drop unknown fields.
//!
//! The schema is the API's (`k8s.io/api/resource/v1/types.go`: `DeviceClaim`,
//! `DeviceRequest`, `ExactDeviceRequest`, `DeviceSubRequest`,
//! `DeviceConstraint`). Only what allocation reads is kept; every field this
//! view does not name is left alone in the object, which a mutation edits as
//! text (`decide::claim::patch`).

use crate::request::quantity::Quantity;
use serde_json::Value;

/// Where a claim kind keeps its `DeviceClaim`: a JSON pointer from the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimKind {
    pub kind: &'static str,
    /// The resource name in admission rules.
    pub resource: &'static str,
    /// The keys from the object to its `devices`.
    pub devices_path: &'static [&'static str],
}

/// The API group of ResourceClaims, ResourceClaimTemplates, DeviceClasses
/// and ResourceSlices.
pub const RESOURCE_GROUP: &str = "resource.k8s.io";
/// The version the policy registers for. With the webhook's default
/// `matchPolicy: Equivalent` the API server converts a `v1beta1` or
/// `v1beta2` object to it before the policy sees it.
pub(crate) const RESOURCE_VERSION: &str = "v1";
/// `resource.k8s.io/v1`, as host capability requests spell it.
pub const RESOURCE_API_VERSION: &str = "resource.k8s.io/v1";

pub(crate) const RESOURCE_CLAIM: ClaimKind = ClaimKind {
    kind: "ResourceClaim",
    resource: "resourceclaims",
    devices_path: &["spec", "devices"],
};

pub const RESOURCE_CLAIM_TEMPLATE: ClaimKind = ClaimKind {
    kind: "ResourceClaimTemplate",
    resource: "resourceclaimtemplates",
    devices_path: &["spec", "spec", "devices"],
};

/// The claim kinds the policy completes and checks.
pub const CLAIM_KINDS: [ClaimKind; 2] = [RESOURCE_CLAIM_TEMPLATE, RESOURCE_CLAIM];

/// The claim kind of an API group and kind, if the policy handles it.
pub fn find(group: &str, kind: &str) -> Option<&'static ClaimKind> {
    (group == RESOURCE_GROUP)
        .then(|| CLAIM_KINDS.iter().find(|claim| claim.kind == kind))
        .flatten()
}

/// The annotation the scheduler sets on the claim it creates for a pod's
/// extended-resource requests backed by DRA (KEP-5004, types.go
/// `ExtendedResourceClaimAnnotation`). Its allocation was computed before the
/// claim was written: its spec must stay as it is.
pub(crate) const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";
/// The annotation the ResourceClaim controller sets on a claim it generates
/// from a pod's template (types.go `PodResourceClaimAnnotation`); its spec is
/// the template's, which the policy decided on at the template's CREATE.
pub(crate) const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// At most this many requests in a claim, and request names in a
/// constraint: types.go `DeviceRequestsMaxSize` (`AllocationResultsMaxSize`,
/// 32), which the API server's validation holds `requests` and
/// `constraints[].requests` to.
pub(crate) const MAX_REQUESTS: usize = 32;
/// At most this many `firstAvailable` subrequests in a request: types.go
/// `FirstAvailableDeviceRequestMaxSize`.
pub(crate) const MAX_FIRST_AVAILABLE: usize = 8;
/// At most this many constraints in a claim: types.go
/// `DeviceConstraintsMaxSize`.
pub(crate) const MAX_CONSTRAINTS: usize = 32;
/// At most this many CEL selectors in a request or subrequest: types.go
/// `DeviceSelectorsMaxSize`.
pub(crate) const MAX_SELECTORS: usize = 32;

/// `allocationMode` of a request (types.go `DeviceAllocationMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocationMode {
    /// `count` devices (default 1).
    ExactCount(u32),
    /// Every matching device of the node's pools.
    All,
}

/// One way of satisfying a request: an `exactly` request, or one of its
/// `firstAvailable` subrequests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceChoice {
    /// The subrequest's name; `None` for `exactly`.
    pub subrequest: Option<String>,
    pub device_class: String,
    pub mode: AllocationMode,
    /// Whether CEL selectors narrow the class's devices further. The policy
    /// does not evaluate CEL: the class's devices are then an upper bound.
    pub selected: bool,
    /// `capacity.requests`: what each device allocated for it must still
    /// offer of a consumable capacity (`dra.cpu/cpu: "8"`), names as written.
    pub capacity: Vec<(String, Quantity)>,
}

/// A request of the claim (`spec.devices.requests[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRequest {
    pub name: String,
    /// One choice for `exactly`; the subrequests in order for
    /// `firstAvailable` (the scheduler uses the first it can satisfy).
    pub choices: Vec<DeviceChoice>,
}

impl DeviceRequest {
    pub(crate) fn is_first_available(&self) -> bool {
        self.choices
            .first()
            .is_some_and(|choice| choice.subrequest.is_some())
    }
}

/// What a constraint requires of the devices of its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstraintRule {
    /// `matchAttribute`: every device has the attribute, with one value.
    MatchAttribute(String),
    /// `distinctAttribute`: every device has a different value.
    DistinctAttribute(String),
}

/// `spec.devices.constraints[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceConstraint {
    /// The requests (or `<request>/<subrequest>`s) it covers; empty: all.
    pub requests: Vec<String>,
    pub rule: ConstraintRule,
}

impl DeviceConstraint {
    /// Whether the constraint applies to the devices of `request` (any of
    /// its subrequests included), as the allocator's
    /// `matchAttributeConstraint.matches` reads `requests`.
    pub fn covers(&self, request: &str) -> bool {
        self.requests.is_empty()
            || self.requests.iter().any(|named| {
                named == request
                    || named
                        .strip_prefix(request)
                        .is_some_and(|rest| rest.starts_with('/'))
            })
    }
}

/// A claim's `devices`: its requests and constraints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceClaim {
    pub requests: Vec<DeviceRequest>,
    pub constraints: Vec<DeviceConstraint>,
}

impl DeviceClaim {
    /// Reads the claim of `object`, a `kind` object; an object without
    /// `devices` claims nothing. `Err` names the field that is not as the
    /// API defines it.
    pub fn of_object(object: &Value, kind: &ClaimKind) -> Result<Self, String> {
        let mut devices = object;
        let mut place = String::new();
        for key in kind.devices_path {
            place = if place.is_empty() {
                (*key).to_owned()
            } else {
                format!("{place}.{key}")
            };
            devices = match devices.get(key) {
                None | Some(Value::Null) => return Ok(DeviceClaim::default()),
                Some(value) if value.is_object() => value,
                Some(_) => return Err(format!("{place} is not an object")),
            };
        }
        Self::read(devices, &place)
    }

    /// A list past the API's cap (`MAX_REQUESTS` and the others) is an
    /// `Err` before any entry is read: the API server refuses that claim,
    /// so its length never sets this policy's work (issue #35).
    fn read(devices: &Value, place: &str) -> Result<Self, String> {
        let requests = array(devices, "requests", place, MAX_REQUESTS)?
            .iter()
            .enumerate()
            .map(|(index, request)| read_request(request, &format!("{place}.requests[{index}]")))
            .collect::<Result<_, _>>()?;
        let constraints = array(devices, "constraints", place, MAX_CONSTRAINTS)?
            .iter()
            .enumerate()
            .map(|(index, constraint)| {
                read_constraint(constraint, &format!("{place}.constraints[{index}]"))
            })
            .collect::<Result<_, _>>()?;
        Ok(DeviceClaim {
            requests,
            constraints,
        })
    }
}

/// `object[key]` as an array of at most `max` entries (the API's cap);
/// absent or `null` is empty. Not inlined: its message is built once.
#[inline(never)]
fn array<'v>(object: &'v Value, key: &str, place: &str, max: usize) -> Result<&'v [Value], String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) if items.len() <= max => Ok(items),
        Some(Value::Array(items)) => Err(format!(
            "{place}.{key} has {} entries, more than the {max} the API allows",
            items.len()
        )),
        Some(_) => Err(format!("{place}.{key} is not an array")),
    }
}

fn string<'v>(object: &'v Value, key: &str, place: &str) -> Result<Option<&'v str>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("{place}.{key} is not a string")),
    }
}

fn required_string<'v>(object: &'v Value, key: &str, place: &str) -> Result<&'v str, String> {
    string(object, key, place)?.ok_or_else(|| format!("{place}.{key} is missing"))
}

fn read_request(request: &Value, place: &str) -> Result<DeviceRequest, String> {
    if !request.is_object() {
        return Err(format!("{place} is not an object"));
    }
    let name = required_string(request, "name", place)?.to_owned();
    let exactly = request.get("exactly").filter(|value| !value.is_null());
    let first_available = array(request, "firstAvailable", place, MAX_FIRST_AVAILABLE)?;
    let choices = match (exactly, first_available.is_empty()) {
        (Some(exactly), true) => vec![read_choice(exactly, None, &format!("{place}.exactly"))?],
        (None, false) => first_available
            .iter()
            .enumerate()
            .map(|(index, sub)| {
                let place = format!("{place}.firstAvailable[{index}]");
                let name = required_string(sub, "name", &place)?;
                read_choice(sub, Some(name.to_owned()), &place)
            })
            .collect::<Result<_, _>>()?,
        (Some(_), false) => {
            return Err(format!(
                "{place} sets both exactly and firstAvailable; the API allows one"
            ))
        }
        (None, true) => {
            return Err(format!(
                "{place} sets neither exactly nor firstAvailable (a v1beta1 request under resource.k8s.io/v1?)"
            ))
        }
    };
    Ok(DeviceRequest { name, choices })
}

fn read_choice(
    choice: &Value,
    subrequest: Option<String>,
    place: &str,
) -> Result<DeviceChoice, String> {
    if !choice.is_object() {
        return Err(format!("{place} is not an object"));
    }
    let device_class = required_string(choice, "deviceClassName", place)?.to_owned();
    let mode = match string(choice, "allocationMode", place)? {
        None | Some("ExactCount") => AllocationMode::ExactCount(count(choice, place)?),
        Some("All") => AllocationMode::All,
        // types.go: "Clients must refuse to handle requests with unknown modes."
        Some(other) => {
            return Err(format!(
                "{place}.allocationMode {other:?} is not a mode this policy knows (ExactCount, All)"
            ))
        }
    };
    let selected = !array(choice, "selectors", place, MAX_SELECTORS)?.is_empty();
    let capacity = capacity_requests(choice, place)?;
    Ok(DeviceChoice {
        subrequest,
        device_class,
        mode,
        selected,
        capacity,
    })
}

/// `capacity.requests` (types.go `CapacityRequirements`): quantities by
/// capacity name.
fn capacity_requests(choice: &Value, place: &str) -> Result<Vec<(String, Quantity)>, String> {
    let requests = match choice.get("capacity") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(capacity) if capacity.is_object() => match capacity.get("requests") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Object(requests)) => requests,
            Some(_) => return Err(format!("{place}.capacity.requests is not an object")),
        },
        Some(_) => return Err(format!("{place}.capacity is not an object")),
    };
    requests
        .iter()
        .map(|(name, value)| {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(number) => number.to_string(),
                _ => {
                    return Err(format!(
                        "{place}.capacity.requests.{name} is not a quantity"
                    ))
                }
            };
            Quantity::parse(&text)
                .map(|quantity| (name.clone(), quantity))
                .map_err(|error| format!("{place}.capacity.requests.{name} {text:?} {error}"))
        })
        .collect()
}

/// `count`, 1 when not set; the API allows 1 to 128 (types.go
/// `AllocationResultsMaxSize` bounds a whole claim).
fn count(choice: &Value, place: &str) -> Result<u32, String> {
    match choice.get("count") {
        None | Some(Value::Null) => Ok(1),
        Some(value) => value
            .as_u64()
            .filter(|count| (1..=u64::from(u32::MAX)).contains(count))
            .map(|count| count as u32)
            .ok_or_else(|| format!("{place}.count {value} is not a positive whole number")),
    }
}

fn read_constraint(constraint: &Value, place: &str) -> Result<DeviceConstraint, String> {
    if !constraint.is_object() {
        return Err(format!("{place} is not an object"));
    }
    let requests = array(constraint, "requests", place, MAX_REQUESTS)?
        .iter()
        .enumerate()
        .map(|(index, name)| {
            name.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{place}.requests[{index}] is not a string"))
        })
        .collect::<Result<_, _>>()?;
    let rule = match (
        string(constraint, "matchAttribute", place)?,
        string(constraint, "distinctAttribute", place)?,
    ) {
        (Some(name), None) => ConstraintRule::MatchAttribute(name.to_owned()),
        (None, Some(name)) => ConstraintRule::DistinctAttribute(name.to_owned()),
        _ => {
            return Err(format!(
                "{place} must set exactly one of matchAttribute and distinctAttribute"
            ))
        }
    };
    Ok(DeviceConstraint { requests, rule })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[test]
    fn a_template_reads_exact_and_first_available_requests_and_constraints() {
        let template = json!({"spec": {"spec": {"devices": {
            "requests": [
                {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}},
                {"name": "nic", "firstAvailable": [
                    {"name": "rdma", "deviceClassName": "rdma-net", "selectors": [{"cel": {"expression": "true"}}]},
                    {"name": "any", "deviceClassName": "dranet.net", "allocationMode": "All"}
                ]}
            ],
            "constraints": [{"requests": ["gpus", "nic/rdma"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
        }}}});
        let claim = DeviceClaim::of_object(&template, &RESOURCE_CLAIM_TEMPLATE).unwrap();
        assert_eq!(claim.requests.len(), 2);
        assert_eq!(
            claim.requests[0].choices,
            vec![DeviceChoice {
                subrequest: None,
                device_class: "gpu.nvidia.com".into(),
                mode: AllocationMode::ExactCount(2),
                selected: false,
                capacity: Vec::new(),
            }]
        );
        assert!(claim.requests[1].is_first_available());
        assert!(claim.requests[1].choices[0].selected);
        assert_eq!(claim.requests[1].choices[1].mode, AllocationMode::All);
        assert!(claim.constraints[0].covers("gpus"));
        assert!(claim.constraints[0].covers("nic"));
        assert!(!claim.constraints[0].covers("gp"));
    }

    #[test]
    fn a_grouped_cpu_request_reads_its_capacity() {
        // claims/dra-cpu-grouped-claim-and-pod.yaml
        let claim = json!({"spec": {"devices": {"requests": [{"name": "req-cpu-slice", "exactly": {
            "deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "10"}}}}]}}});
        let claim = DeviceClaim::of_object(&claim, &RESOURCE_CLAIM).unwrap();
        assert_eq!(
            claim.requests[0].choices[0].capacity,
            vec![("dra.cpu/cpu".to_owned(), Quantity::parse("10").unwrap())]
        );
    }

    #[test]
    fn a_claim_without_devices_claims_nothing() {
        let claim = DeviceClaim::of_object(&json!({"spec": {}}), &RESOURCE_CLAIM).unwrap();
        assert_eq!(claim, DeviceClaim::default());
    }

    #[rstest]
    #[case::devices_not_an_object(json!({"spec": {"devices": []}}), "spec.devices is not an object")]
    #[case::request_without_name(
        json!({"spec": {"devices": {"requests": [{"exactly": {"deviceClassName": "c"}}]}}}),
        "spec.devices.requests[0].name is missing"
    )]
    #[case::v1beta1_request(
        json!({"spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "c"}]}}}),
        "spec.devices.requests[0] sets neither exactly nor firstAvailable"
    )]
    #[case::unknown_mode(
        json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c", "allocationMode": "Some"}}]}}}),
        "spec.devices.requests[0].exactly.allocationMode \"Some\" is not a mode"
    )]
    #[case::zero_count(
        json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c", "count": 0}}]}}}),
        "spec.devices.requests[0].exactly.count 0 is not a positive whole number"
    )]
    #[case::capacity_not_a_quantity(
        json!({"spec": {"devices": {"requests": [{"name": "cpu", "exactly": {"deviceClassName": "dra.cpu", "capacity": {"requests": {"dra.cpu/cpu": "ten"}}}}]}}}),
        "spec.devices.requests[0].exactly.capacity.requests.dra.cpu/cpu \"ten\" is not a Kubernetes quantity"
    )]
    #[case::constraint_with_both_rules(
        json!({"spec": {"devices": {"constraints": [{"matchAttribute": "a/b", "distinctAttribute": "a/c"}]}}}),
        "spec.devices.constraints[0] must set exactly one of matchAttribute and distinctAttribute"
    )]
    fn a_malformed_claim_is_refused_naming_the_field(#[case] object: Value, #[case] message: &str) {
        let error = DeviceClaim::of_object(&object, &RESOURCE_CLAIM).unwrap_err();
        assert!(error.starts_with(message), "{error}");
    }

    /// A claim whose `list` holds `entries` entries, the rest minimal.
    fn claim_listing(list: &str, entries: usize) -> Value {
        let many = |entry: &dyn Fn(usize) -> Value| (0..entries).map(entry).collect::<Vec<_>>();
        let exactly = json!({"deviceClassName": "gpu.nvidia.com"});
        let gpu = json!([{"name": "gpu", "exactly": exactly}]);
        let numa = |_| json!({"matchAttribute": STANDARD_NUMA});
        let devices = match list {
            "requests" => {
                json!({"requests": many(&|i| json!({"name": format!("r{i}"), "exactly": exactly}))})
            }
            "firstAvailable" => json!({"requests": [{"name": "gpu", "firstAvailable":
                many(&|i| json!({"name": format!("s{i}"), "deviceClassName": "gpu.nvidia.com"}))}]}),
            "selectors" => {
                json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                "selectors": many(&|_| json!({"cel": {"expression": "true"}}))}}]})
            }
            "constraints" => json!({"requests": gpu, "constraints": many(&numa)}),
            _ => json!({"requests": gpu, "constraints": [{"matchAttribute": STANDARD_NUMA,
                "requests": many(&|i| json!(format!("r{i}")))}]}),
        };
        json!({"spec": {"devices": devices}})
    }

    const STANDARD_NUMA: &str = "resource.kubernetes.io/numaNode";

    // Issue #35: each list the API caps is read up to its cap, and past it
    // not read at all, the cap and the count named.
    #[rstest]
    #[case::requests_at_the_cap("requests", MAX_REQUESTS, None)]
    #[case::requests_past_the_cap(
        "requests", MAX_REQUESTS + 1,
        Some("spec.devices.requests has 33 entries, more than the 32 the API allows")
    )]
    #[case::first_available_at_the_cap("firstAvailable", MAX_FIRST_AVAILABLE, None)]
    #[case::first_available_past_the_cap(
        "firstAvailable", MAX_FIRST_AVAILABLE + 1,
        Some("spec.devices.requests[0].firstAvailable has 9 entries, more than the 8 the API allows")
    )]
    #[case::selectors_at_the_cap("selectors", MAX_SELECTORS, None)]
    #[case::selectors_past_the_cap(
        "selectors", MAX_SELECTORS + 1,
        Some("spec.devices.requests[0].exactly.selectors has 33 entries, more than the 32 the API allows")
    )]
    #[case::constraints_at_the_cap("constraints", MAX_CONSTRAINTS, None)]
    #[case::constraints_past_the_cap(
        "constraints", MAX_CONSTRAINTS + 1,
        Some("spec.devices.constraints has 33 entries, more than the 32 the API allows")
    )]
    #[case::constraint_requests_at_the_cap("constraint requests", MAX_REQUESTS, None)]
    #[case::constraint_requests_past_the_cap(
        "constraint requests", MAX_REQUESTS + 1,
        Some("spec.devices.constraints[0].requests has 33 entries, more than the 32 the API allows")
    )]
    fn a_list_past_the_api_cap_is_not_read(
        #[case] list: &str,
        #[case] entries: usize,
        #[case] problem: Option<&str>,
    ) {
        let read = DeviceClaim::of_object(&claim_listing(list, entries), &RESOURCE_CLAIM);
        assert_eq!(read.as_ref().err().map(String::as_str), problem, "{read:?}");
    }
}
