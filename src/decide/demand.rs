//! GPU demand: how many GPUs each container asks for, and how many the pod
//! needs on one node under the kubelet's Topology Manager scope. Computed
//! once per request ([`Demand`]); every later stage and message reads it.
//!
//! Besides the GPUs (`gpuResources`), a container's device-plugin resources
//! of `migResources` and `deviceResources` are read ([`DeviceCount`]): MIG
//! slices count as GPU demand (a pod with one is a GPU pod, and gets
//! `qos.cpuPerGpu` per slice), and all of them are aligned by the kubelet
//! with the GPUs, each as its own Device Manager resource. The count-based
//! fit terms read the GPUs alone: a MIG slice is no `nvidia.com/gpu`.
//!
//! [`PodDevices`] is what the pod asks for by resource name, as written,
//! before any QoS edit: the policy's own reading. The kubelet model's
//! `gpu_topology::kubelet::PodDemand` is the pod as the kubelet's managers
//! see it once planned (CPUs, memory and hugepages as requested, each
//! device resource by index), and [`model_pod`](crate::decide::model::model_pod)
//! makes it from this and the planned spec.

use crate::request::pod::{containers, Container, ContainerKind, ContainerRef, Section};
use crate::request::quantity::Quantity;
use crate::settings::devices::{DeviceKind, DeviceResources};
use gpu_topology::{GpuDemand, TopologyManagerScope};
use serde_json::Value;

/// The GPUs, MIG slices and aligned devices one container asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerDevices {
    pub container: ContainerRef,
    /// GPUs per configured resource the container asks for (non-zero only).
    pub resources: Vec<(String, u32)>,
    /// A configured GPU resource is listed, `0` included: the kubelet's
    /// Device Manager gives hints for an explicit zero too.
    pub lists_gpu: bool,
    /// The container's MIG slices and aligned device resources, as listed
    /// (`0` included), in the order the container lists them.
    pub devices: Vec<DeviceCount>,
}

/// One device resource of a container besides its GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCount {
    pub resource: String,
    pub count: u32,
    pub kind: DeviceKind,
}

impl ContainerDevices {
    /// GPUs of `gpuResources` (what the count-based fit terms compare).
    pub fn gpus(&self) -> u32 {
        self.resources
            .iter()
            .fold(0_u32, |sum, (_, count)| sum.saturating_add(*count))
    }

    /// MIG slices (`migResources`).
    pub fn slices(&self) -> u32 {
        self.devices
            .iter()
            .filter(|d| d.kind == DeviceKind::MigSlice)
            .fold(0_u32, |sum, d| sum.saturating_add(d.count))
    }

    /// GPUs and MIG slices: the GPU demand the QoS plan sizes per GPU.
    pub(crate) fn gpu_units(&self) -> u32 {
        self.gpus().saturating_add(self.slices())
    }

    /// `container "trainer": 4 nvidia.com/gpu`, `container "infer": 1 nvidia.com/mig-1g.10gb`
    pub fn describe(&self) -> String {
        let slices = self
            .devices
            .iter()
            .filter(|d| d.kind == DeviceKind::MigSlice && d.count > 0)
            .map(|d| (&d.resource, d.count));
        let counts: Vec<String> = self
            .resources
            .iter()
            .map(|(resource, count)| (resource, *count))
            .chain(slices)
            .map(|(resource, count)| format!("{count} {resource}"))
            .collect();
        format!("{}: {}", self.container, counts.join(" + "))
    }
}

/// The devices every container of a PodSpec asks for, init containers first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodDevices {
    pub containers: Vec<ContainerDevices>,
}

impl PodDevices {
    /// Reads the demand of a PodSpec (of a Pod or of a pod template)
    /// without device resources: the unit tests' shorthand.
    #[cfg(test)]
    pub(crate) fn from_pod_spec(spec: &Value, gpu_resources: &[String]) -> Result<Self, String> {
        Self::from_pod_spec_with(spec, gpu_resources, &DeviceResources::default())
    }

    /// Reads the demand of a PodSpec (of a Pod or of a pod template), the
    /// device resources `devices` names as well.
    pub fn from_pod_spec_with(
        spec: &Value,
        gpu_resources: &[String],
        devices: &DeviceResources,
    ) -> Result<Self, String> {
        let containers = containers(spec)?
            .iter()
            .map(|container| container_demand(container, gpu_resources, devices))
            .collect::<Result<_, _>>()?;
        Ok(PodDevices { containers })
    }

    /// GPUs or MIG slices are asked for.
    pub fn is_gpu_pod(&self) -> bool {
        self.containers.iter().any(|c| c.gpu_units() > 0)
    }

    /// GPUs and MIG slices of the container at `id` ([`ContainerDevices::gpu_units`]);
    /// 0 when it asks for none.
    pub(crate) fn gpus_of(&self, id: &ContainerRef) -> u32 {
        self.containers
            .iter()
            .find(|c| &c.container == id)
            .map_or(0, ContainerDevices::gpu_units)
    }

    /// The device resources (MIG slices and aligned ones) any container
    /// lists, each once, in the order first listed.
    pub(crate) fn device_resources(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for device in self.containers.iter().flat_map(|c| &c.devices) {
            if !names.contains(&device.resource.as_str()) {
                names.push(&device.resource);
            }
        }
        names
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
                .map(ContainerDevices::gpus)
                .max()
                .unwrap_or(0),
            TopologyManagerScope::Pod => self.effective_pod_request(),
        }
    }

    /// What a node must offer: the pod's effective request on the node, and
    /// the unit aligned under `scope` ([`PodDevices::gpus`]).
    pub(crate) fn gpu_demand(&self, scope: TopologyManagerScope) -> GpuDemand {
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

    /// [`PodDevices::describe`] of `n`, the count already computed for
    /// `scope`: every GPU container for `pod` scope, the (first) largest one
    /// for `container` scope.
    fn describe_count(&self, n: u32, scope: TopologyManagerScope) -> String {
        if n == 0 {
            return self.describe_slices();
        }
        let with_gpus = self.containers.iter().filter(|c| c.gpus() > 0);
        let counted: Vec<&ContainerDevices> = match scope {
            TopologyManagerScope::Pod => with_gpus.collect(),
            TopologyManagerScope::Container => {
                with_gpus.filter(|c| c.gpus() == n).take(1).collect()
            }
        };
        let parts: Vec<String> = counted
            .into_iter()
            .map(ContainerDevices::describe)
            .collect();
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

impl PodDevices {
    /// A pod of MIG slices without GPUs: `1 MIG slice (container "infer": 1 nvidia.com/mig-1g.10gb)`.
    fn describe_slices(&self) -> String {
        let with_slices: Vec<String> = self
            .containers
            .iter()
            .filter(|c| c.slices() > 0)
            .map(ContainerDevices::describe)
            .collect();
        let n = self
            .containers
            .iter()
            .fold(0_u32, |sum, c| sum.saturating_add(c.slices()));
        format!(
            "{n} MIG slice{s} ({})",
            with_slices.join("; "),
            s = if n == 1 { "" } else { "s" }
        )
    }
}

/// A GPU pod's demand under the configured Topology Manager scope, computed
/// once: what the node must offer, and the words messages use for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    pub pod: PodDevices,
    pub scope: TopologyManagerScope,
    /// The pod's effective request on a node, and the unit aligned under
    /// `scope` ([`PodDevices::gpu_demand`]).
    pub needs: GpuDemand,
}

impl Demand {
    pub fn new(pod: PodDevices, scope: TopologyManagerScope) -> Self {
        let needs = pod.gpu_demand(scope);
        Demand { pod, scope, needs }
    }

    /// GPUs or MIG slices are asked for.
    pub fn is_gpu_pod(&self) -> bool {
        self.needs.total > 0 || self.pod.is_gpu_pod()
    }

    /// The aligned unit in words: [`PodDevices::describe`] under the scope.
    pub fn describe_unit(&self) -> String {
        self.pod.describe_count(self.needs.aligned, self.scope)
    }

    /// The pod's total in words: [`PodDevices::describe`] under `pod` scope.
    pub(crate) fn describe_total(&self) -> String {
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
    devices: &DeviceResources,
) -> Result<ContainerDevices, String> {
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
        let count = whole_count(container, section, resource, &text, "GPUs")?;
        if count > 0 {
            resources.push((resource.clone(), count));
        }
    }
    Ok(ContainerDevices {
        container: container.id.clone(),
        resources,
        lists_gpu,
        devices: device_counts(container, gpu_resources, devices)?,
    })
}

/// The count an extended resource's quantity `text` asks for: a whole
/// number of `units` (extended resources are whole: the API server
/// refuses a fraction of one) that fits in 32 bits, else the message
/// naming the field.
fn whole_count(
    container: &Container<'_>,
    section: Section,
    resource: &str,
    text: &str,
    units: &str,
) -> Result<u32, String> {
    Quantity::parse(text)
        .ok()
        .and_then(|quantity| quantity.whole_units())
        .and_then(|whole| u32::try_from(whole).ok())
        .ok_or_else(|| {
            format!(
                "{}: resources.{}.{resource} {text:?} is not a whole number of {units}; set a whole number such as \"1\"",
                container.id,
                section.field()
            )
        })
}

/// The container's resources that `devices` names (and `gpuResources` does
/// not), limits first, else requests, as for GPUs.
fn device_counts(
    container: &Container<'_>,
    gpu_resources: &[String],
    devices: &DeviceResources,
) -> Result<Vec<DeviceCount>, String> {
    if devices.is_empty() {
        return Ok(Vec::new());
    }
    let mut counts: Vec<DeviceCount> = Vec::new();
    for section in [Section::Limits, Section::Requests] {
        for resource in container.resource_names(section) {
            if gpu_resources.iter().any(|gpu| gpu == resource)
                || counts.iter().any(|d| d.resource == resource)
            {
                continue;
            }
            let Some(kind) = devices.kind_of(resource) else {
                continue;
            };
            let Some(text) = container.resource(section, resource) else {
                continue;
            };
            let count = whole_count(container, section, resource, &text, "devices")?;
            counts.push(DeviceCount {
                resource: resource.to_owned(),
                count,
                kind,
            });
        }
    }
    Ok(counts)
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
        let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
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
        let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
        assert_eq!(demand.gpus(TopologyManagerScope::Pod), expected);
    }

    /// (GPUs, MIG slices, device resources listed) under the default
    /// `migResources` and `deviceResources`.
    #[rstest]
    #[case::mig_slice_is_gpu_demand(
        json!({"limits": {"nvidia.com/mig-1g.10gb": "2"}}), 0, 2, vec!["nvidia.com/mig-1g.10gb"])]
    #[case::gpus_with_rdma(
        json!({"limits": {"nvidia.com/gpu": "4", "rdma/ib": "4"}}), 4, 0, vec!["rdma/ib"])]
    #[case::requests_only_device(
        json!({"requests": {"nvidia.com/gpu": "1", "openshift.io/sriov_netdevice": "1"}}), 1, 0, vec!["openshift.io/sriov_netdevice"])]
    #[case::unconfigured_resource_is_not_read(
        json!({"limits": {"nvidia.com/gpu": "1", "example.com/license": "1"}}), 1, 0, vec![])]
    #[case::explicit_zero_is_listed(
        json!({"limits": {"nvidia.com/gpu": "1", "rdma/ib": "0"}}), 1, 0, vec!["rdma/ib"])]
    fn device_resources_are_read(
        #[case] resources: Value,
        #[case] gpus: u32,
        #[case] slices: u32,
        #[case] listed: Vec<&str>,
    ) {
        let spec = json!({"containers": [{"name": "c", "resources": resources}]});
        let demand =
            PodDevices::from_pod_spec_with(&spec, &gpu_resources(), &DeviceResources::defaults())
                .unwrap();
        let container = &demand.containers[0];
        assert_eq!((container.gpus(), container.slices()), (gpus, slices));
        assert_eq!(demand.device_resources(), listed);
        assert_eq!(demand.is_gpu_pod(), gpus + slices > 0);
    }

    #[test]
    fn a_fractional_device_count_names_the_container() {
        let spec = json!({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1", "rdma/ib": "0.5"}}}]});
        let error =
            PodDevices::from_pod_spec_with(&spec, &gpu_resources(), &DeviceResources::defaults())
                .unwrap_err();
        assert!(
            error.contains("container \"c\": resources.limits.rdma/ib \"0.5\" is not a whole number of devices"),
            "{error}"
        );
    }

    /// The demand in words for 0, 1 and several GPUs (issue #23): 0 GPUs
    /// is a pod of MIG slices, described by them, 1 or several.
    #[rstest]
    #[case::zero_gpus_one_slice(json!({"nvidia.com/mig-1g.10gb": "1"}), TopologyManagerScope::Pod,
        "1 MIG slice (container \"c\": 1 nvidia.com/mig-1g.10gb)")]
    #[case::zero_gpus_several_slices(json!({"nvidia.com/mig-1g.10gb": "7"}), TopologyManagerScope::Pod,
        "7 MIG slices (container \"c\": 7 nvidia.com/mig-1g.10gb)")]
    #[case::one_gpu(json!({"nvidia.com/gpu": "1"}), TopologyManagerScope::Pod,
        "1 GPU (container \"c\": 1 nvidia.com/gpu)")]
    #[case::one_gpu_in_one_container(json!({"nvidia.com/gpu": "1"}), TopologyManagerScope::Container,
        "1 GPU in one container (container \"c\": 1 nvidia.com/gpu)")]
    #[case::several_gpus(json!({"nvidia.com/gpu": "8"}), TopologyManagerScope::Pod,
        "8 GPUs (container \"c\": 8 nvidia.com/gpu)")]
    fn the_demand_in_number(
        #[case] limits: Value,
        #[case] scope: TopologyManagerScope,
        #[case] words: &str,
    ) {
        let spec = json!({"containers": [{"name": "c", "resources": {"limits": limits}}]});
        let demand =
            PodDevices::from_pod_spec_with(&spec, &gpu_resources(), &DeviceResources::defaults())
                .unwrap();
        assert_eq!(demand.describe(scope), words);
    }

    #[test]
    fn a_mig_pod_is_described_by_its_slices() {
        let spec = json!({"containers": [{"name": "infer", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "1"}}}]});
        let demand =
            PodDevices::from_pod_spec_with(&spec, &gpu_resources(), &DeviceResources::defaults())
                .unwrap();
        assert_eq!(
            demand.describe(TopologyManagerScope::Pod),
            "1 MIG slice (container \"infer\": 1 nvidia.com/mig-1g.10gb)"
        );
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
        let error = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap_err();
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
        let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
        assert_eq!(demand.describe(scope), expected);
    }
}
