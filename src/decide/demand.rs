//! GPU demand: how many GPUs each container asks for, and how many the pod
//! needs on one node under the kubelet's Topology Manager scope. Computed
//! once per request ([`Demand`]); every later stage and message reads it.

use crate::request::pod::{containers, Container, ContainerKind, ContainerRef, Section};
use crate::request::quantity::Quantity;
use gpu_topology::{GpuDemand, TopologyManagerScope};
use serde_json::Value;

/// One container's GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerDemand {
    pub container: ContainerRef,
    /// GPUs per configured resource the container asks for (non-zero only).
    pub resources: Vec<(String, u32)>,
    /// A configured GPU resource is listed, `0` included: the kubelet's
    /// Device Manager gives hints for an explicit zero too.
    pub lists_gpu: bool,
}

impl ContainerDemand {
    pub fn gpus(&self) -> u32 {
        self.resources
            .iter()
            .fold(0_u32, |sum, (_, count)| sum.saturating_add(*count))
    }

    /// `container "trainer": 4 nvidia.com/gpu`
    pub fn describe(&self) -> String {
        let counts: Vec<String> = self
            .resources
            .iter()
            .map(|(resource, count)| format!("{count} {resource}"))
            .collect();
        format!("{}: {}", self.container, counts.join(" + "))
    }
}

/// The GPU demand of every container of a PodSpec, init containers first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodDemand {
    pub containers: Vec<ContainerDemand>,
}

impl PodDemand {
    /// Reads the demand of a PodSpec (of a Pod or of a pod template).
    pub fn from_pod_spec(spec: &Value, gpu_resources: &[String]) -> Result<Self, String> {
        let containers = containers(spec)?
            .iter()
            .map(|container| container_demand(container, gpu_resources))
            .collect::<Result<_, _>>()?;
        Ok(PodDemand { containers })
    }

    pub fn is_gpu_pod(&self) -> bool {
        self.containers.iter().any(|c| c.gpus() > 0)
    }

    /// GPUs of the container at `id`; 0 when it asks for none.
    pub fn gpus_of(&self, id: &ContainerRef) -> u32 {
        self.containers
            .iter()
            .find(|c| &c.container == id)
            .map_or(0, ContainerDemand::gpus)
    }

    /// GPUs the Topology Manager aligns as one unit under `scope`:
    /// - `pod`: the pod's effective request, as the kubelet and scheduler
    ///   compute it: app containers plus sidecars, or the largest regular init
    ///   container plus the sidecars started before it, whichever is more;
    /// - `container`: the largest single container.
    pub fn gpus(&self, scope: TopologyManagerScope) -> u32 {
        match scope {
            TopologyManagerScope::Container => self
                .containers
                .iter()
                .map(ContainerDemand::gpus)
                .max()
                .unwrap_or(0),
            TopologyManagerScope::Pod => self.effective_pod_request(),
        }
    }

    /// What a node must offer: the pod's effective request on the node, and
    /// the unit aligned under `scope` ([`PodDemand::gpus`]).
    pub fn gpu_demand(&self, scope: TopologyManagerScope) -> GpuDemand {
        let total = self.effective_pod_request();
        let aligned = match scope {
            TopologyManagerScope::Pod => total,
            TopologyManagerScope::Container => self.gpus(scope),
        };
        GpuDemand::new(total, aligned)
    }

    fn effective_pod_request(&self) -> u32 {
        let (mut sidecars, mut init_peak, mut apps) = (0_u32, 0_u32, 0_u32);
        for demand in &self.containers {
            let gpus = demand.gpus();
            match demand.container.kind {
                ContainerKind::Sidecar => {
                    sidecars = sidecars.saturating_add(gpus);
                    init_peak = init_peak.max(sidecars);
                }
                ContainerKind::Init => init_peak = init_peak.max(sidecars.saturating_add(gpus)),
                ContainerKind::App => apps = apps.saturating_add(gpus),
            }
        }
        init_peak.max(apps.saturating_add(sidecars))
    }

    /// `8 GPUs (container "a": 4 nvidia.com/gpu; container "b": 4 nvidia.com/gpu)`,
    /// for rejection messages.
    pub fn describe(&self, scope: TopologyManagerScope) -> String {
        self.describe_count(self.gpus(scope), scope)
    }

    /// [`PodDemand::describe`] of `n`, the count already computed for
    /// `scope`: every GPU container for `pod` scope, the (first) largest one
    /// for `container` scope.
    fn describe_count(&self, n: u32, scope: TopologyManagerScope) -> String {
        let with_gpus = self.containers.iter().filter(|c| c.gpus() > 0);
        let counted: Vec<&ContainerDemand> = match scope {
            TopologyManagerScope::Pod => with_gpus.collect(),
            TopologyManagerScope::Container => {
                with_gpus.filter(|c| c.gpus() == n).take(1).collect()
            }
        };
        let parts: Vec<String> = counted.into_iter().map(ContainerDemand::describe).collect();
        let scope_words = match scope {
            TopologyManagerScope::Pod => "",
            TopologyManagerScope::Container => " in one container",
        };
        format!(
            "{n} GPU{s}{scope_words} ({})",
            parts.join("; "),
            s = if n == 1 { "" } else { "s" }
        )
    }
}

/// A GPU pod's demand under the configured Topology Manager scope, computed
/// once: what the node must offer, and the words messages use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    pub pod: PodDemand,
    pub scope: TopologyManagerScope,
    /// The pod's effective request on a node, and the unit aligned under
    /// `scope` ([`PodDemand::gpu_demand`]).
    pub needs: GpuDemand,
}

impl Demand {
    pub fn new(pod: PodDemand, scope: TopologyManagerScope) -> Self {
        let needs = pod.gpu_demand(scope);
        Demand { pod, scope, needs }
    }

    pub fn is_gpu_pod(&self) -> bool {
        self.needs.total > 0
    }

    /// The aligned unit in words: [`PodDemand::describe`] under the scope.
    pub fn describe_unit(&self) -> String {
        self.pod.describe_count(self.needs.aligned, self.scope)
    }

    /// The pod's total in words: [`PodDemand::describe`] under `pod` scope.
    pub fn describe_total(&self) -> String {
        self.pod
            .describe_count(self.needs.total, TopologyManagerScope::Pod)
    }
}

/// GPUs a container asks for per configured resource. Extended resources
/// cannot overcommit (requests equal limits, or limits alone), so limits
/// count, else requests.
fn container_demand(
    container: &Container<'_>,
    gpu_resources: &[String],
) -> Result<ContainerDemand, String> {
    let mut resources = Vec::new();
    let mut lists_gpu = false;
    for resource in gpu_resources {
        let in_section = |section| Some(section).zip(container.resource(section, resource));
        let Some((section, text)) =
            in_section(Section::Limits).or_else(|| in_section(Section::Requests))
        else {
            continue;
        };
        lists_gpu = true;
        let count = Quantity::parse(&text)
            .ok()
            .and_then(|quantity| quantity.whole_units())
            .and_then(|units| u32::try_from(units).ok())
            .ok_or_else(|| {
                format!(
                    "{}: resources.{}.{resource} {text:?} is not a whole number of GPUs; set a whole number such as \"1\"",
                    container.id,
                    section.field()
                )
            })?;
        if count > 0 {
            resources.push((resource.clone(), count));
        }
    }
    Ok(ContainerDemand {
        container: container.id.clone(),
        resources,
        lists_gpu,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn gpu_resources() -> Vec<String> {
        vec!["nvidia.com/gpu".to_owned(), "amd.com/gpu".to_owned()]
    }

    fn gpus(count: u32) -> Value {
        json!({"resources": {"limits": {"nvidia.com/gpu": count.to_string()}}})
    }

    fn named(mut container: Value, name: &str) -> Value {
        container["name"] = json!(name);
        container
    }

    fn sidecar(count: u32) -> Value {
        let mut container = gpus(count);
        container["restartPolicy"] = json!("Always");
        container
    }

    /// (pod scope, container scope)
    #[rstest]
    #[case::no_gpus(json!({"containers": [{}]}), 0, 0)]
    #[case::two_app_containers_add_up(json!({"containers": [gpus(2), gpus(2)]}), 4, 2)]
    #[case::init_larger_than_apps(json!({"initContainers": [gpus(8)], "containers": [gpus(2)]}), 8, 8)]
    #[case::init_smaller_than_apps(json!({"initContainers": [gpus(1)], "containers": [gpus(4)]}), 4, 4)]
    #[case::sidecar_adds_to_apps(json!({"initContainers": [sidecar(1)], "containers": [gpus(4)]}), 5, 4)]
    #[case::init_after_sidecar_stacks(
        json!({"initContainers": [sidecar(2), gpus(4)], "containers": [gpus(1)]}), 6, 4)]
    #[case::init_before_sidecar_does_not_stack(
        json!({"initContainers": [gpus(4), sidecar(2)], "containers": [gpus(1)]}), 4, 4)]
    #[case::both_vendors_count(
        json!({"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1", "amd.com/gpu": "1"}}}]}), 2, 2)]
    fn pod_demand_follows_the_kubelet(
        #[case] spec: Value,
        #[case] pod_scope: u32,
        #[case] container_scope: u32,
    ) {
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        assert_eq!(demand.gpus(TopologyManagerScope::Pod), pod_scope);
        assert_eq!(
            demand.gpus(TopologyManagerScope::Container),
            container_scope
        );
        assert_eq!(demand.is_gpu_pod(), pod_scope > 0);
    }

    #[rstest]
    #[case::limits_only(json!({"limits": {"nvidia.com/gpu": "2"}}), 2)]
    #[case::requests_only(json!({"requests": {"nvidia.com/gpu": "2"}}), 2)]
    #[case::limits_win(json!({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "3"}}), 3)]
    #[case::number_value(json!({"limits": {"nvidia.com/gpu": 4}}), 4)]
    #[case::zero(json!({"limits": {"nvidia.com/gpu": "0"}}), 0)]
    #[case::mig_profile_is_not_a_configured_gpu(json!({"limits": {"nvidia.com/mig-1g.10gb": "1"}}), 0)]
    fn container_counts(#[case] resources: Value, #[case] expected: u32) {
        let spec = json!({"containers": [{"name": "c", "resources": resources}]});
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        assert_eq!(demand.gpus(TopologyManagerScope::Pod), expected);
    }

    #[rstest]
    #[case::fractional(
        "0.5",
        "container \"c\": resources.limits.nvidia.com/gpu \"0.5\" is not a whole number of GPUs"
    )]
    #[case::garbage(
        "lots",
        "resources.limits.nvidia.com/gpu \"lots\" is not a whole number"
    )]
    #[case::too_many("99999999999", "\"99999999999\" is not a whole number")]
    fn bad_gpu_counts_are_errors_naming_the_container(#[case] value: &str, #[case] expected: &str) {
        let spec = json!({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": value}}}]});
        let error = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap_err();
        assert!(error.contains(expected), "{error}");
    }

    #[rstest]
    #[case::pod_scope(
        TopologyManagerScope::Pod,
        "6 GPUs (sidecar container \"s\": 2 nvidia.com/gpu; container \"a\": 4 nvidia.com/gpu)"
    )]
    #[case::container_scope(
        TopologyManagerScope::Container,
        "4 GPUs in one container (container \"a\": 4 nvidia.com/gpu)"
    )]
    fn describes_the_counted_containers(
        #[case] scope: TopologyManagerScope,
        #[case] expected: &str,
    ) {
        let spec = json!({
            "initContainers": [named(sidecar(2), "s"), named(json!({}), "setup")],
            "containers": [named(gpus(4), "a"), named(json!({}), "log")]
        });
        let demand = PodDemand::from_pod_spec(&spec, &gpu_resources()).unwrap();
        assert_eq!(demand.describe(scope), expected);
    }
}
