//! The kubelet admission model in the decision (`gpu_topology::kubelet`):
//! the pod's request as the kubelet sees it (the planned pod, after the QoS
//! edits) and what the kubelet of each node group of the cluster view does
//! with it, computed once per distinct set of facts.

use crate::decide::demand::PodDevices;
use crate::request::pod::{containers, resources_value, Container, Section};
use crate::request::qos_class::{qos_class, QosClass};
use crate::request::quantity::Quantity;
use crate::settings::{AffinityMode, Config};
use gpu_topology::hashing::{FastMap, FirstEqual};
use gpu_topology::kubelet::{
    self, admit, facts_from_topology, Admission, ContainerDemand, InputError, NodeFacts, Refusal,
    Unknown, Verdict,
};
use gpu_topology::{
    Alignment, CpuManagerPolicy, Fleet, NodeGroup, NodeTopology, ShapeId, TopologyManagerScope,
};
use serde_json::Value;

/// The resources the kubelet's CPU and Memory Managers read.
const CPU: &str = "cpu";
const MEMORY: &str = "memory";
const HUGEPAGES_2MI: &str = "hugepages-2Mi";
const HUGEPAGES_1GI: &str = "hugepages-1Gi";
/// Pod-level resource names that keep the static CPU and Memory Managers
/// from pinning a pod (component-helpers `IsPodLevelResourcesSet`).
const HUGEPAGES_PREFIX: &str = "hugepages-";
/// The most threads per core the policy rounds CPUs for (POWER's SMT-8): a
/// label above it is no machine, and its nodes refuse what is not a
/// multiple on their own.
pub(crate) const MAX_THREADS_PER_CORE: u32 = 8;

/// The pod as the kubelet's managers see it, from the PodSpec `spec` as it
/// will be admitted (after the QoS edits) and its GPU demand: containers in
/// the kubelet's order (init containers, sidecars among them, then app
/// containers), requests after the API server's defaulting (a missing
/// request is the limit, `SetDefaults_Pod`), the QoS class as Kubernetes
/// computes it, and whether pod-level resources keep the pod unpinned.
pub fn model_pod(spec: &Value, demand: &PodDevices) -> Result<kubelet::PodDemand, String> {
    let all = containers(spec)?;
    if all.len() != demand.containers.len() {
        return Err("the containers changed while the pod was planned".to_owned());
    }
    let mut model = Vec::with_capacity(all.len());
    // Each device resource besides the GPUs is its own Device Manager
    // resource: the model indexes them in the order first listed.
    let device_names = demand.device_resources();
    for (container, gpus) in all.iter().zip(&demand.containers) {
        let request = |resource| container_request(container, resource);
        model.push(ContainerDemand {
            kind: container.id.kind,
            gpus: gpus.lists_gpu.then(|| gpus.gpus()),
            cpu_millis: request(CPU)?.map_or(0, |q| q.ceil_millis()),
            memory_bytes: request(MEMORY)?.map_or(0, |q| q.ceil_whole_units()),
            hugepages_2mi_bytes: request(HUGEPAGES_2MI)?.map_or(0, |q| q.ceil_whole_units()),
            hugepages_1gi_bytes: request(HUGEPAGES_1GI)?.map_or(0, |q| q.ceil_whole_units()),
            devices: device_names
                .iter()
                .map(|name| {
                    gpus.devices
                        .iter()
                        .find(|d| d.resource == *name)
                        .map(|d| d.count)
                })
                .collect(),
        });
    }
    Ok(kubelet::PodDemand {
        containers: model,
        guaranteed: qos_class(spec, &all)? == QosClass::Guaranteed,
        pod_level_resources: pod_level_resources_set(spec),
        devices: device_names.into_iter().map(str::to_owned).collect(),
    })
}

/// A container's request of `resource` after the API server's defaulting:
/// the request, else the limit.
fn container_request(
    container: &Container<'_>,
    resource: &str,
) -> Result<Option<Quantity>, String> {
    let resources = container.json.get("resources");
    let pick = resources_value(resources, Section::Requests, resource)
        .map(|text| (Section::Requests, text))
        .or_else(|| {
            resources_value(resources, Section::Limits, resource)
                .map(|text| (Section::Limits, text))
        });
    pick.map(|(section, text)| {
        Quantity::parse(&text).map_err(|error| {
            format!(
                "{}: resources.{}.{resource} {text:?} {error}",
                container.id,
                section.field()
            )
        })
    })
    .transpose()
}

/// Whether pod-level `spec.resources` names cpu, memory or hugepages, which
/// keeps the kubelet's static CPU and Memory Managers from pinning the pod
/// (Kubernetes 1.34 and 1.35; see `qos::unpinned_by_pod_level_resources`).
pub(crate) fn pod_level_resources_set(spec: &Value) -> bool {
    let Some(resources) = spec.get("resources") else {
        return false;
    };
    [Section::Requests, Section::Limits]
        .into_iter()
        .filter_map(|section| resources.get(section.field())?.as_object())
        .flat_map(|list| list.keys())
        .any(|name| name == CPU || name == MEMORY || name.starts_with(HUGEPAGES_PREFIX))
}

/// What the kubelet of a node group does with the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Admitted; `aligned`: every unit's resources on one NUMA node.
    Admit {
        aligned: bool,
    },
    Refuse(Refusal),
    /// The model cannot tell: a fact is missing, or an outcome depends on
    /// something it does not see.
    Unknown(Unknown),
    /// The group's labels contradict themselves (more reserved CPUs than
    /// CPUs, say): no answer can be trusted.
    Contradictory(InputError),
}

impl Answer {
    pub fn admits(&self) -> bool {
        matches!(self, Answer::Admit { .. })
    }

    pub fn refuses(&self) -> bool {
        matches!(self, Answer::Refuse(_))
    }

    pub(crate) fn is_unknown(&self) -> bool {
        matches!(self, Answer::Unknown(_) | Answer::Contradictory(_))
    }

    /// Whether node affinity treats nodes with these two answers alike:
    /// both admit at the same alignment, both refuse (for whatever
    /// reason), or both are unknown.
    pub(crate) fn selects_like(&self, other: &Answer) -> bool {
        match (self, other) {
            (Answer::Admit { aligned }, Answer::Admit { aligned: other }) => aligned == other,
            (Answer::Refuse(_), Answer::Refuse(_)) => true,
            _ => self.is_unknown() && other.is_unknown(),
        }
    }
}

/// What a node must do for the pod, as its affinity will demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Admit the pod and host its GPUs at this alignment (`affinity: required`).
    Host(Alignment),
    /// Admit the pod (the kubelet's own rule).
    Admit,
}

impl Need {
    /// The need of a pod under `config`.
    pub(crate) fn for_pod(config: &Config) -> Self {
        match config.topology.affinity {
            AffinityMode::Required => Need::Host(config.topology.alignment),
            AffinityMode::Preferred | AffinityMode::Off => Need::Admit,
        }
    }
}

/// One node group of the cluster view and the kubelet's answer there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupVerdict<'f> {
    pub group: &'f NodeGroup,
    /// The Topology Manager scope the answer assumes: the group's own
    /// label, else the `topology.scope` setting.
    pub scope: TopologyManagerScope,
    /// The facts the model read ([`facts_from_topology`]).
    pub facts: NodeFacts,
    pub answer: Answer,
    /// The model's units and hints behind the answer, for messages.
    pub admission: Option<Admission>,
    /// Its `shape` label is also carried by nodes the kubelet answers
    /// otherwise ([`mark_shared_shapes`]): node affinity, which selects by
    /// that label, can neither select nor exclude these nodes.
    pub shared_shape: bool,
    /// Why the nodes do not take the pod and what to change, in words
    /// ([`explain::why_and_fix`](crate::decide::explain::why_and_fix)):
    /// worded once per admission, by the first stage that needs it (the
    /// policy's message, or the tool's record), and read by the others.
    pub explained: Explained,
}

/// The words of a verdict, once made ([`GroupVerdict::explained`]).
pub type Explained = std::cell::OnceCell<(String, String)>;

impl<'f> GroupVerdict<'f> {
    /// Whether the nodes take the pod as `need` asks: under `required`,
    /// hosted at the alignment and selectable by their shape label; else
    /// not refused (an unknown answer stays eligible).
    pub fn takes(&self, need: Need, demand: &PodDevices) -> bool {
        match need {
            Need::Host(alignment) => {
                self.hosts(alignment, demand) && self.selector_shape().is_some()
            }
            Need::Admit => !self.answer.refuses(),
        }
    }
}

impl GroupVerdict<'_> {
    pub fn topology(&self) -> &NodeTopology {
        &self.group.topology
    }

    pub fn nodes(&self) -> u32 {
        self.group.nodes
    }

    pub fn shape(&self) -> Option<ShapeId> {
        self.group.topology.shape
    }

    /// The shape node affinity can select these nodes by: their `shape`
    /// label, unless nodes the kubelet answers otherwise carry it too.
    pub(crate) fn selector_shape(&self) -> Option<ShapeId> {
        self.shape().filter(|_| !self.shared_shape)
    }

    /// Whether nodes of the group host the pod as `affinity: required`
    /// demands at `alignment`: `numa`, admitted with every unit on one NUMA
    /// node; `nvlink`, admitted with the aligned unit (under the group's
    /// scope) within one NVLink group; `node`, admitted.
    pub fn hosts(&self, alignment: Alignment, demand: &PodDevices) -> bool {
        self.hosts_with(&self.answer, alignment, demand)
    }

    /// [`GroupVerdict::hosts`] for another answer on the same nodes.
    fn hosts_with(&self, answer: &Answer, alignment: Alignment, demand: &PodDevices) -> bool {
        match (answer, alignment) {
            (Answer::Admit { aligned }, Alignment::Numa) => *aligned,
            (Answer::Admit { .. }, Alignment::Nvlink) => {
                let unit = demand.gpu_demand(self.scope).aligned;
                self.group
                    .topology
                    .nvlink_group_max
                    .is_some_and(|group| group >= unit)
            }
            (Answer::Admit { .. }, Alignment::Node) => true,
            _ => false,
        }
    }

    /// Whether the nodes take the pod as `need` asks, were `answer` the
    /// kubelet's (admitted, or hosted at the alignment).
    pub(crate) fn takes_as(&self, answer: &Answer, need: Need, demand: &PodDevices) -> bool {
        match need {
            Need::Admit => answer.admits(),
            Need::Host(alignment) => self.hosts_with(answer, alignment, demand),
        }
    }
}

/// The kubelet's answer for every group of `fleet`, the model asked once
/// per distinct set of facts (groups that differ only in informational
/// labels share them). The facts are looked up by hash, so a fleet of
/// thousands of distinct shapes costs one model answer each, not a
/// comparison with every shape before it.
pub fn verdicts<'f>(
    fleet: &'f Fleet,
    pod: &kubelet::PodDemand,
    assumed_scope: TopologyManagerScope,
) -> Vec<GroupVerdict<'f>> {
    #[cfg(test)]
    crate::decide::testing::count(&crate::decide::testing::VERDICTS);
    let mut verdicts: Vec<GroupVerdict<'f>> = Vec::with_capacity(fleet.groups().len());
    let mut first_with = FirstEqual::default();
    for group in fleet.groups() {
        let facts = facts_from_topology(&group.topology, assumed_scope);
        let known = first_with.find_or_record(&facts, verdicts.len(), facts_at(&verdicts));
        let (answer, admission) = match known.and_then(|position| verdicts.get(position)) {
            Some(known) => (known.answer.clone(), known.admission.clone()),
            None => answer(&facts, pod),
        };
        verdicts.push(GroupVerdict::new(
            group,
            facts,
            assumed_scope,
            answer,
            admission,
        ));
    }
    mark_shared_shapes(&mut verdicts);
    verdicts
}

impl<'f> GroupVerdict<'f> {
    /// The verdict `answer` on `group`, whose facts the model read; not yet
    /// compared with other groups' ([`GroupVerdict::shared_shape`]).
    pub fn new(
        group: &'f NodeGroup,
        facts: NodeFacts,
        assumed_scope: TopologyManagerScope,
        answer: Answer,
        admission: Option<Admission>,
    ) -> Self {
        GroupVerdict {
            group,
            scope: facts.topology_manager.scope.unwrap_or(assumed_scope),
            facts,
            answer,
            admission,
            shared_shape: false,
            explained: Explained::new(),
        }
    }
}

/// The verdicts on the same fleet answered anew for another plan of the pod
/// (`pod`: the defaults lowered, the CPUs rounded). The facts each group's
/// verdict holds depend on its labels only, so they stay; each distinct set
/// is answered once, through `memo`, where the search that chose the plan
/// already asked about most of them.
pub(crate) fn answer_again(
    verdicts: &mut [GroupVerdict],
    pod: &kubelet::PodDemand,
    memo: &AnswerMemo,
) {
    let mut first_with = FirstEqual::default();
    for index in 0..verdicts.len() {
        let Some(facts) = verdicts.get(index).map(|v| &v.facts) else {
            break;
        };
        let known = first_with.find_or_record(facts, index, facts_at(verdicts));
        let (answer, admission) = match known.and_then(|position| verdicts.get(position)) {
            Some(known) => (known.answer.clone(), known.admission.clone()),
            None => memo.answer(pod, index, facts),
        };
        if let Some(verdict) = verdicts.get_mut(index) {
            verdict.answer = answer;
            verdict.admission = admission;
            verdict.explained = Explained::new();
        }
    }
    mark_shared_shapes(verdicts);
}

/// The facts of the verdict at a position, as [`FirstEqual`] looks them
/// up. Every lookup of equal facts among verdicts goes through this one
/// closure type, so the Wasm module holds one instantiation of the lookup.
pub(crate) fn facts_at<'v>(
    verdicts: &'v [GroupVerdict<'_>],
) -> impl Fn(usize) -> Option<&'v NodeFacts> + 'v {
    move |position| verdicts.get(position).map(|v| &v.facts)
}

/// Marks the groups whose `shape` label another group carries with another
/// answer. A shape label digests the labels the labeler published; the
/// policy also takes the kubelet version each Node reports
/// ([`NodeTopology::take_reported_kubelet_version`]), which the label does
/// not hold where the labeler did not know it. During a kubelet upgrade the
/// nodes of one shape then run two minor versions, and where the versions'
/// rules differ (the device hints of 1.36 on a GB200 tray) the kubelet
/// admits the pod on some and refuses it on others: a selector on the shape
/// cannot tell them apart, so neither is selected nor excluded. Shapes whose
/// groups all get answers affinity treats alike ([`Answer::selects_like`])
/// stay selectable. Two passes over the groups, each shape's first group
/// found by hash.
fn mark_shared_shapes(verdicts: &mut [GroupVerdict]) {
    // Each shape's first group, and whether a later one answers otherwise.
    let mut shapes: FastMap<ShapeId, (usize, bool)> = FastMap::default();
    for (position, verdict) in verdicts.iter().enumerate() {
        let Some(shape) = verdict.shape() else {
            continue;
        };
        let (first, shared) = shapes.entry(shape).or_insert((position, false));
        if let Some(first) = verdicts.get(*first) {
            *shared |= !first.answer.selects_like(&verdict.answer);
        }
    }
    for verdict in verdicts.iter_mut() {
        verdict.shared_shape = verdict
            .shape()
            .and_then(|shape| shapes.get(&shape))
            .is_some_and(|(_, shared)| *shared);
    }
}

/// The model's answers already asked in one admission: by pod (a few plans
/// at most: the first, and one per adjustment), then by the index of the
/// first group of the fleet with the facts asked about.
#[derive(Debug, Default)]
pub(crate) struct AnswerMemo {
    pods: std::cell::RefCell<Vec<(kubelet::PodDemand, MemoAnswers)>>,
}

type MemoAnswers = FastMap<usize, (Answer, Option<Admission>)>;

impl AnswerMemo {
    /// The answer for `pod` on `facts`, the facts of group `first` (the
    /// first of the fleet with them): kept, or asked and kept.
    pub(crate) fn answer(
        &self,
        pod: &kubelet::PodDemand,
        first: usize,
        facts: &NodeFacts,
    ) -> (Answer, Option<Admission>) {
        let mut pods = self.pods.borrow_mut();
        let position = match pods.iter().position(|(known, _)| known == pod) {
            Some(position) => position,
            None => {
                pods.push((pod.clone(), MemoAnswers::default()));
                pods.len() - 1
            }
        };
        let answers = &mut pods[position].1;
        answers
            .entry(first)
            .or_insert_with(|| answer(facts, pod))
            .clone()
    }
}

/// The model's answer for one node.
pub fn answer(facts: &NodeFacts, pod: &kubelet::PodDemand) -> (Answer, Option<Admission>) {
    match admit(facts, pod) {
        Ok(admission) => {
            let answer = match admission.verdict {
                Verdict::Admit { aligned } => Answer::Admit { aligned },
                Verdict::Refuse(refusal) => Answer::Refuse(refusal),
                Verdict::Unknown(unknown) => Answer::Unknown(unknown),
            };
            (answer, Some(admission))
        }
        Err(error) => (Answer::Contradictory(error), None),
    }
}

/// The multiple whole CPUs are rounded up to when the policy chooses them:
/// the least common multiple of the threads per core of the groups whose
/// static CPU Manager runs with `full-pcpus-only` (it refuses other counts
/// with `SMTAlignmentError`, `cpumanager/policy_static.go`
/// `Allocate`); 1 when none does. Threads per core above
/// [`MAX_THREADS_PER_CORE`] are left out.
pub(crate) fn cpu_multiple(fleet: &Fleet) -> u64 {
    fleet
        .groups()
        .iter()
        .map(|group| &group.topology)
        .filter(|t| {
            t.cpu_manager_policy == Some(CpuManagerPolicy::Static)
                && t.full_pcpus_only == Some(true)
        })
        .filter_map(|t| t.threads_per_core)
        .filter(|threads| (1..=MAX_THREADS_PER_CORE).contains(threads))
        .fold(1, |multiple, threads| lcm(multiple, u64::from(threads)))
}

fn lcm(a: u64, b: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    a / gcd(a, b) * b
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_topology::kubelet::ContainerKind as Kind;
    use rstest::rstest;
    use serde_json::json;

    fn gpu_resources() -> Vec<String> {
        vec!["nvidia.com/gpu".to_owned()]
    }

    fn model(spec: Value) -> kubelet::PodDemand {
        let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
        model_pod(&spec, &demand).unwrap()
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn containers_in_the_kubelets_order_with_defaulted_requests() {
        let pod = model(json!({
            "containers": [{"name": "app", "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2", "hugepages-1Gi": "2Gi"}}}],
            "initContainers": [
                {"name": "setup", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "0"}}},
                {"name": "proxy", "restartPolicy": "Always", "resources": {"limits": {"cpu": "250m", "memory": "256Mi"}}}
            ]
        }));
        let kinds: Vec<Kind> = pod.containers.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [Kind::Init, Kind::Sidecar, Kind::App]);
        // An explicit 0 GPUs is listed; a container without the resource is not.
        let gpus: Vec<Option<u32>> = pod.containers.iter().map(|c| c.gpus).collect();
        assert_eq!(gpus, [Some(0), None, Some(2)]);
        // Requests as written, else the limits.
        let cpus: Vec<u64> = pod.containers.iter().map(|c| c.cpu_millis).collect();
        assert_eq!(cpus, [1500, 250, 4000]);
        assert_eq!(pod.containers[2].memory_bytes, 16 * GIB);
        assert_eq!(pod.containers[2].hugepages_1gi_bytes, 2 * GIB);
        // setup's cpu requests differ from its limits: Burstable.
        assert!(!pod.guaranteed);
        assert!(!pod.pod_level_resources);
    }

    /// (PodSpec, Guaranteed as Kubernetes computes it, pod-level resources set)
    #[rstest]
    #[case::every_container_equal(json!({"containers": [
        {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}},
        {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}), true, false)]
    #[case::a_container_without_memory(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]}), false, false)]
    #[case::requests_below_limits(json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]}), false, false)]
    #[case::zero_limit_is_unset(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "0", "memory": "1Gi"}}}]}), false, false)]
    #[case::pod_level_decides(json!({"resources": {"limits": {"cpu": "4", "memory": "8Gi"}}, "containers": [{"name": "a"}]}), true, true)]
    #[case::pod_level_without_memory(json!({"resources": {"limits": {"cpu": "4"}}, "containers": [
        {"name": "a", "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}), false, true)]
    #[case::pod_level_other_resources_only(json!({"resources": {"limits": {"ephemeral-storage": "1Gi"}}, "containers": [
        {"name": "a", "resources": {"limits": {"cpu": "4", "memory": "8Gi"}}}]}), false, false)]
    fn the_qos_class_follows_kubernetes(
        #[case] spec: Value,
        #[case] guaranteed: bool,
        #[case] pod_level: bool,
    ) {
        let pod = model(spec);
        assert_eq!(pod.guaranteed, guaranteed);
        assert_eq!(pod.pod_level_resources, pod_level);
    }

    #[test]
    fn an_unreadable_quantity_names_the_container() {
        let spec =
            json!({"containers": [{"name": "a", "resources": {"limits": {"memory": "lots"}}}]});
        let demand = PodDevices::from_pod_spec(&spec, &gpu_resources()).unwrap();
        let error = model_pod(&spec, &demand).unwrap_err();
        assert!(
            error.contains("container \"a\": resources.limits.memory \"lots\""),
            "{error}"
        );
    }

    fn node(
        threads: Option<u32>,
        full_pcpus_only: Option<bool>,
        cpu: CpuManagerPolicy,
    ) -> NodeTopology {
        NodeTopology {
            gpus: Some(8),
            threads_per_core: threads,
            full_pcpus_only,
            cpu_manager_policy: Some(cpu),
            ..NodeTopology::default()
        }
    }

    /// (groups, multiple): only static full-pcpus-only groups count.
    #[rstest]
    #[case::none(vec![], 1)]
    #[case::smt2_full_pcpus_only(vec![node(Some(2), Some(true), CpuManagerPolicy::Static)], 2)]
    #[case::option_off(vec![node(Some(2), Some(false), CpuManagerPolicy::Static)], 1)]
    #[case::not_static(vec![node(Some(2), Some(true), CpuManagerPolicy::None)], 1)]
    #[case::smt2_and_smt4(vec![node(Some(2), Some(true), CpuManagerPolicy::Static), node(Some(4), Some(true), CpuManagerPolicy::Static)], 4)]
    #[case::odd_counts(vec![node(Some(2), Some(true), CpuManagerPolicy::Static), node(Some(3), Some(true), CpuManagerPolicy::Static)], 6)]
    #[case::no_machine_has_that_many(vec![node(Some(64), Some(true), CpuManagerPolicy::Static)], 1)]
    #[case::threads_unknown(vec![node(None, Some(true), CpuManagerPolicy::Static)], 1)]
    fn cpus_are_rounded_for_full_pcpus_only(
        #[case] groups: Vec<NodeTopology>,
        #[case] multiple: u64,
    ) {
        let mut fleet = Fleet::new();
        for topology in groups {
            fleet.add(topology);
        }
        assert_eq!(cpu_multiple(&fleet), multiple);
    }

    #[test]
    fn groups_with_the_same_facts_share_one_answer() {
        let facts = NodeTopology {
            gpus: Some(4),
            topology_manager_policy: Some(gpu_topology::TopologyManagerPolicy::SingleNumaNode),
            numa_gpus: Some(vec![4]),
            ..NodeTopology::default()
        };
        let mut fleet = Fleet::new();
        fleet.add(facts.clone());
        // The same facts, another interconnect: another group, the same answer.
        fleet.add(NodeTopology {
            interconnect: Some(gpu_topology::Interconnect::Pcie),
            ..facts
        });
        let pod = model(
            json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}),
        );
        let verdicts = verdicts(&fleet, &pod, TopologyManagerScope::Pod);
        assert_eq!(verdicts.len(), 2);
        assert_eq!(verdicts[0].answer, Answer::Admit { aligned: true });
        assert_eq!(verdicts[0].answer, verdicts[1].answer);
    }
}
