//! The kubelet's own table-driven tests, translated to JSON under
//! `tests/kubelet_cases/` (each file names its Go source and what it
//! skipped), run against the model's lower-level pieces. Every failing case
//! is reported by its Go name.

use gpu_topology::kubelet::cpu::{cpu_topology_hints, CpuAllocError, CpuOptions, CpuState};
use gpu_topology::kubelet::device::{allocate_gpus, gpu_hints, GpuState};
use gpu_topology::kubelet::memory::{pod_request, MemoryState, MemoryTable, NumaMemory};
use gpu_topology::kubelet::merge::{best_non_preferred_affinity_count, filter_single_numa_hints};
use gpu_topology::kubelet::{
    compare, policy_merge, AllocationFailure, ContainerDemand, ContainerKind, HintSet, Kept,
    NumaInfo, NumaMask, NumaNodeFacts, ResourceHints, TopologyHint,
};
use gpu_topology::TopologyManagerPolicy;
use serde::Deserialize;
use std::collections::BTreeMap;

fn load<T: for<'de> Deserialize<'de>>(file: &str) -> T {
    let path = format!("{}/tests/kubelet_cases/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Collects failures and panics with all of them at the end.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn check<T: PartialEq + std::fmt::Debug>(
        &mut self,
        name: &str,
        actual: T,
        expected: T,
    ) -> bool {
        if actual != expected {
            self.0
                .push(format!("{name}: expected {expected:?}, got {actual:?}"));
            return false;
        }
        true
    }

    fn assert_none(self, ran: usize) {
        assert!(ran > 0, "no case ran");
        assert!(
            self.0.is_empty(),
            "{} of {ran} cases fail:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

/// A mask in a case file: node ids, "all" (the default affinity) or null.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum NumaField {
    Nodes(Vec<usize>),
    All(String),
}

#[derive(Debug, Clone, Deserialize)]
struct HintJson {
    numa: Option<NumaField>,
    preferred: bool,
}

impl HintJson {
    fn hint(&self, nodes: usize) -> TopologyHint {
        let mask = self.numa.as_ref().map(|numa| match numa {
            NumaField::Nodes(ids) => NumaMask::from_nodes(ids).expect("node id below the cap"),
            NumaField::All(word) => {
                assert_eq!(word, "all", "a mask is node ids, \"all\" or null");
                NumaMask::all(nodes)
            }
        });
        TopologyHint {
            mask,
            preferred: self.preferred,
        }
    }
}

fn hint_set(nodes: usize, hints: &[HintJson]) -> HintSet {
    let hints: Vec<TopologyHint> = hints.iter().map(|h| h.hint(nodes)).collect();
    HintSet::from_hints(nodes, &hints)
}

/// `null` (empty list) or the expected hints, as a set.
fn expected_set(nodes: usize, expected: &Option<Vec<HintJson>>) -> HintSet {
    match expected {
        None => HintSet::empty(nodes),
        Some(hints) => hint_set(nodes, hints),
    }
}

fn listed(hints: ResourceHints, nodes: usize) -> HintSet {
    match hints {
        ResourceHints::List(set) => set,
        ResourceHints::DontCare => HintSet::any(nodes, true),
    }
}

// ------------------------------------------------------------ topologymanager

type ProviderJson = Option<BTreeMap<String, Option<Vec<HintJson>>>>;

#[derive(Deserialize)]
struct MergeCase {
    name: String,
    providers: Vec<ProviderJson>,
    expected: HintJson,
}

#[derive(Deserialize)]
struct Suite {
    test: String,
    policy: String,
    numa_nodes: usize,
    prefer_closest: bool,
    distances: Option<Vec<Vec<u32>>>,
    groups: Vec<String>,
}

#[derive(Deserialize)]
struct CompareCase {
    name: String,
    best_non_preferred_affinity_count: i64,
    current: Option<HintJson>,
    candidate: HintJson,
    expected: String,
}

#[derive(Deserialize)]
struct MaxOfMinCase {
    name: String,
    hints: Vec<Vec<HintJson>>,
    expected: u32,
}

#[derive(Deserialize)]
struct FilterCase {
    name: String,
    hints: Vec<Vec<HintJson>>,
    expected: Vec<Vec<HintJson>>,
}

#[derive(Deserialize)]
struct PolicyFile {
    suites: Vec<Suite>,
    groups: BTreeMap<String, Vec<MergeCase>>,
    compare: Vec<CompareCase>,
    max_of_min_affinity_counts: Vec<MaxOfMinCase>,
    filter_single_numa_hints: Vec<FilterCase>,
}

fn policy(name: &str) -> TopologyManagerPolicy {
    name.parse()
        .unwrap_or_else(|_| panic!("unknown policy {name}"))
}

fn providers(nodes: usize, json: &[ProviderJson]) -> Vec<Vec<ResourceHints>> {
    json.iter()
        .map(|provider| match provider {
            None => Vec::new(),
            Some(resources) => resources
                .values()
                .map(|list| match list {
                    None => ResourceHints::DontCare,
                    Some(hints) => ResourceHints::List(hint_set(nodes, hints)),
                })
                .collect(),
        })
        .collect()
}

#[test]
fn topology_manager_policy_merge_cases() {
    let file: PolicyFile = load("topologymanager_policy.json");
    let mut failures = Failures::default();
    let mut ran = 0;
    for suite in &file.suites {
        let policy = policy(&suite.policy);
        let numa = NumaInfo {
            nodes: suite.numa_nodes,
            distances: suite.distances.clone(),
            machine_nodes: suite.numa_nodes,
        };
        for group in &suite.groups {
            for case in &file.groups[group] {
                ran += 1;
                let name = format!("{} {group}: {}", suite.test, case.name);
                let merged = policy_merge(
                    policy,
                    &numa,
                    suite.prefer_closest,
                    &providers(numa.nodes, &case.providers),
                )
                .expect("small merges fit the budget");
                let expected = case.expected.hint(numa.nodes);
                failures.check(&name, merged.hint, expected);
                let admit = policy == TopologyManagerPolicy::BestEffort || expected.preferred;
                failures.check(&format!("{name} (admit)"), merged.admit, admit);
            }
        }
    }
    failures.assert_none(ran);
}

#[test]
fn topology_manager_compare_cases() {
    let file: PolicyFile = load("topologymanager_policy.json");
    let mut failures = Failures::default();
    for case in &file.compare {
        // -1 never matches a count; as u32 it compares like "larger than all".
        let best = u32::try_from(case.best_non_preferred_affinity_count).unwrap_or(u32::MAX);
        let kept = compare(
            best,
            case.current.as_ref().map(|h| h.hint(4)),
            case.candidate.hint(4),
        );
        let expected = if case.expected == "current" {
            Kept::Current
        } else {
            Kept::Candidate
        };
        failures.check(&case.name, kept, expected);
    }
    failures.assert_none(file.compare.len());
}

#[test]
fn topology_manager_max_of_min_affinity_counts_cases() {
    let file: PolicyFile = load("topologymanager_policy.json");
    let mut failures = Failures::default();
    for case in &file.max_of_min_affinity_counts {
        let lists: Vec<HintSet> = case.hints.iter().map(|h| hint_set(4, h)).collect();
        failures.check(
            &case.name,
            best_non_preferred_affinity_count(&lists),
            case.expected,
        );
    }
    failures.assert_none(file.max_of_min_affinity_counts.len());
}

#[test]
fn topology_manager_filter_single_numa_hints_cases() {
    let file: PolicyFile = load("topologymanager_policy.json");
    let mut failures = Failures::default();
    for case in &file.filter_single_numa_hints {
        let lists: Vec<HintSet> = case.hints.iter().map(|h| hint_set(4, h)).collect();
        let expected: Vec<HintSet> = case.expected.iter().map(|h| hint_set(4, h)).collect();
        failures.check(&case.name, filter_single_numa_hints(&lists), expected);
    }
    failures.assert_none(file.filter_single_numa_hints.len());
}

// ------------------------------------------------------------ devicemanager

#[derive(Deserialize)]
struct DeviceHintCase {
    name: String,
    devices: Vec<u32>,
    allocated: Vec<u32>,
    request: u32,
    expected: Option<Vec<HintJson>>,
}

#[derive(Deserialize)]
struct DeviceAllocationCase {
    name: String,
    devices: Vec<u32>,
    request: u32,
    hint: Vec<usize>,
    expected_per_numa: Vec<u32>,
}

#[derive(Deserialize)]
struct DeviceFile {
    hints: Vec<DeviceHintCase>,
    allocation: Vec<DeviceAllocationCase>,
}

#[test]
fn device_manager_cases() {
    let file: DeviceFile = load("devicemanager_topology_hints.json");
    let mut failures = Failures::default();
    for case in &file.hints {
        let nodes = case.devices.len();
        let mut state = GpuState::new(case.devices.clone());
        for (free, taken) in state.free.iter_mut().zip(&case.allocated) {
            *free -= taken;
        }
        let (hints, _) = gpu_hints(&state, case.request, true)
            .expect("fresh state")
            .expect("devices registered");
        failures.check(
            &case.name,
            listed(hints, nodes),
            expected_set(nodes, &case.expected),
        );
    }
    for case in &file.allocation {
        let mut state = GpuState::new(case.devices.clone());
        let hint = NumaMask::from_nodes(&case.hint);
        let result = allocate_gpus(&mut state, ContainerKind::App, case.request, hint);
        let taken: Vec<u32> = case
            .devices
            .iter()
            .zip(&state.free)
            .map(|(total, free)| total - free)
            .collect();
        if failures.check(&format!("{} (allocates)", case.name), result, Ok(true)) {
            failures.check(&case.name, taken, case.expected_per_numa.clone());
        }
    }
    failures.assert_none(file.hints.len() + file.allocation.len());
}

// --------------------------------------------------------------- cpumanager

#[derive(Deserialize)]
struct CpuHintCase {
    name: String,
    capacity: Vec<u32>,
    free: Vec<u32>,
    request: u32,
    expected: Option<Vec<HintJson>>,
}

#[derive(Deserialize)]
struct Machine {
    cpus: Vec<u32>,
    sockets: Vec<u32>,
    threads_per_core: u32,
}

#[derive(Deserialize)]
struct CpuContainer {
    kind: String,
    cpus: u32,
    hint: Option<Vec<usize>>,
}

#[derive(Deserialize, Debug, PartialEq)]
struct SmtJson {
    requested: u32,
    cpus_per_core: u32,
    available_physical_cpus: Option<u32>,
}

#[derive(Deserialize)]
struct CpuExpectedError {
    smt: SmtJson,
}

#[derive(Deserialize)]
struct CpuAllocationCase {
    name: String,
    machine: Machine,
    reserved: Vec<u32>,
    reserved_cores: Vec<u32>,
    full_pcpus_only: bool,
    containers: Vec<CpuContainer>,
    expected_free: Option<Vec<u32>>,
    expected_error: Option<CpuExpectedError>,
}

#[derive(Deserialize)]
struct CpuFile {
    hints: Vec<CpuHintCase>,
    allocations: Vec<CpuAllocationCase>,
}

fn kind(name: &str) -> ContainerKind {
    match name {
        "init" => ContainerKind::Init,
        "sidecar" => ContainerKind::Sidecar,
        _ => ContainerKind::App,
    }
}

fn run_cpu_allocation(case: &CpuAllocationCase) -> Result<Option<Vec<u32>>, CpuAllocError> {
    let numas: Vec<NumaNodeFacts> = (0..case.machine.cpus.len())
        .map(|i| NumaNodeFacts {
            cpus: Some(case.machine.cpus[i]),
            reserved_cpus: Some(case.reserved[i]),
            reserved_cores: Some(case.reserved_cores[i]),
            socket: Some(case.machine.sockets[i]),
            ..NumaNodeFacts::default()
        })
        .collect();
    let options = CpuOptions {
        full_pcpus_only: case.full_pcpus_only,
        ..CpuOptions::default()
    };
    let mut state = CpuState::new(&numas, case.machine.threads_per_core, options)
        .expect("facts agree")
        .expect("facts complete");
    for (i, c) in case.containers.iter().enumerate() {
        let hint = c.hint.as_ref().and_then(|ids| NumaMask::from_nodes(ids));
        state.allocate_container(i, kind(&c.kind), c.cpus, hint)?;
    }
    Ok(state.free_per_numa())
}

#[test]
fn cpu_manager_cases() {
    let file: CpuFile = load("cpumanager.json");
    let mut failures = Failures::default();
    for case in &file.hints {
        let nodes = case.capacity.len();
        let (hints, _) =
            cpu_topology_hints(&case.capacity, &case.free, &vec![0; nodes], case.request);
        failures.check(
            &case.name,
            listed(hints, nodes),
            expected_set(nodes, &case.expected),
        );
    }
    for case in &file.allocations {
        match (
            run_cpu_allocation(case),
            &case.expected_error,
            &case.expected_free,
        ) {
            (Ok(free), None, expected) => {
                // No expected split: the model must say it does not know it.
                failures.check(&case.name, free, expected.clone());
            }
            (
                Err(CpuAllocError::Smt {
                    requested,
                    cpus_per_core,
                    available_physical_cpus,
                }),
                Some(expected),
                _,
            ) => {
                let actual = SmtJson {
                    requested,
                    cpus_per_core,
                    available_physical_cpus,
                };
                failures.check(&case.name, actual, SmtJson { ..expected.smt });
            }
            (other, _, _) => failures
                .0
                .push(format!("{}: unexpected {other:?}", case.name)),
        }
    }
    failures.assert_none(file.hints.len() + file.allocations.len());
}

// ------------------------------------------------------------ memorymanager

#[derive(Deserialize)]
struct NumaState {
    memory: [u64; 2],
    hugepages_2mi: Option<[u64; 2]>,
    hugepages_1gi: Option<[u64; 2]>,
    cells: Vec<usize>,
    assignments: u32,
}

#[derive(Deserialize)]
struct Request {
    memory: u64,
    #[serde(default)]
    hugepages_2mi: u64,
    #[serde(default)]
    hugepages_1gi: u64,
}

#[derive(Deserialize)]
struct MemoryHintCase {
    name: String,
    machine: Vec<NumaState>,
    request: Request,
    expected: Vec<HintJson>,
}

#[derive(Deserialize)]
struct MemoryAllocationCase {
    name: String,
    machine: Vec<NumaState>,
    request: Request,
    hint: HintJson,
    expected_free: Option<Vec<[u64; 2]>>,
    expected_error: Option<String>,
}

#[derive(Deserialize)]
struct PodRequestCase {
    name: String,
    /// (kind, memory GiB, hugepages-1Gi GiB) per container.
    containers: Vec<(String, u64, u64)>,
    expected: [u64; 2],
}

#[derive(Deserialize)]
struct MemoryFile {
    hints: Vec<MemoryHintCase>,
    allocations: Vec<MemoryAllocationCase>,
    pod_requests: Vec<PodRequestCase>,
}

const GIB: u64 = 1 << 30;

fn memory_state(machine: &[NumaState]) -> MemoryState {
    let table = |pair: Option<[u64; 2]>| {
        let [allocatable, free] = pair.unwrap_or([0, 0]);
        MemoryTable { allocatable, free }
    };
    MemoryState {
        numas: machine
            .iter()
            .map(|n| NumaMemory {
                tables: [
                    table(Some(n.memory)),
                    table(n.hugepages_2mi),
                    table(n.hugepages_1gi),
                ],
                cells: NumaMask::from_nodes(&n.cells).expect("small ids"),
                assignments: n.assignments,
            })
            .collect(),
        reusable: Vec::new(),
        groups_unknown: NumaMask::EMPTY,
        placed_by_guess: false,
    }
}

fn amounts(r: &Request) -> [u64; 3] {
    [r.memory, r.hugepages_2mi, r.hugepages_1gi]
}

fn failure(name: &str) -> AllocationFailure {
    match name {
        "NoMemoryAffinity" => AllocationFailure::NoMemoryAffinity,
        "NoExtendedMemoryAffinity" => AllocationFailure::NoExtendedMemoryAffinity,
        "MemoryHintNotPreferred" => AllocationFailure::MemoryHintNotPreferred,
        "MemoryViolatesNumaAllocation" => AllocationFailure::MemoryViolatesNumaAllocation,
        other => panic!("unknown failure {other}"),
    }
}

#[test]
fn memory_manager_cases() {
    let file: MemoryFile = load("memorymanager_policy_static.json");
    let mut failures = Failures::default();
    for case in &file.hints {
        let state = memory_state(&case.machine);
        let nodes = case.machine.len();
        let actual = state
            .calculate_hints(&amounts(&case.request))
            .map(|(set, _)| set)
            .unwrap_or_else(|| HintSet::empty(nodes));
        failures.check(&case.name, actual, hint_set(nodes, &case.expected));
    }
    for case in &file.allocations {
        let mut state = memory_state(&case.machine);
        let hint = case.hint.hint(case.machine.len());
        let result = state.allocate(ContainerKind::App, &amounts(&case.request), hint);
        match (&case.expected_error, &case.expected_free) {
            (Some(error), _) => {
                failures.check(&case.name, result, Err(failure(error)));
            }
            (None, Some(expected)) => {
                let free: Vec<[u64; 2]> =
                    state.free_per_numa().iter().map(|f| [f[0], f[2]]).collect();
                if failures.check(&format!("{} (allocates)", case.name), result, Ok(())) {
                    failures.check(&case.name, free, expected.clone());
                }
            }
            (None, None) => failures.0.push(format!("{}: no expectation", case.name)),
        }
    }
    for case in &file.pod_requests {
        let containers: Vec<ContainerDemand> = case
            .containers
            .iter()
            .map(|(k, memory, huge)| ContainerDemand {
                kind: kind(k),
                memory_bytes: memory * GIB,
                hugepages_1gi_bytes: huge * GIB,
                ..ContainerDemand::default()
            })
            .collect();
        let total = pod_request(&containers);
        failures.check(
            &case.name,
            [total[0], total[2]],
            [case.expected[0] * GIB, case.expected[1] * GIB],
        );
    }
    failures.assert_none(file.hints.len() + file.allocations.len() + file.pod_requests.len());
}
