//! The kubelet model on a busy node ([`admit_on_busy_node`]): the kubelet's
//! own test cases that allocate from a partly used machine, run end to end
//! (node facts, pod, what other pods hold) and checked against the verdict
//! the kubelet reaches.
//!
//! The cases are in `tests/busy_node/cases.json`, each citing the Go test
//! it mirrors (`pkg/kubelet/cm/`: `cpumanager/policy_static_test.go`
//! `TestStaticPolicyAdd`, `cpumanager/topology_hints_test.go`,
//! `devicemanager/topology_hints_test.go`, `devicemanager/manager_test.go`,
//! `memorymanager/policy_static_test.go`). The Go tests drive one manager
//! with a fake Topology Manager hint; here the whole admission runs, so
//! each case names the kubelet settings under which the Go test's state
//! decides the verdict. Where the model cannot see what the kubelet sees
//! (which CPUs, which memory groups), the case says what the kubelet does
//! and what the model answers instead (`kubelet` in the file).
//!
//! Every case of the file is an rstest case below, by the same name
//! (`every_case_in_the_file_is_run` keeps the two lists equal).

use gpu_topology::kubelet::{
    admit_on_busy_node, AllocationFailure, ContainerDemand, ContainerKind, CountedUnit,
    CpuManagerConfig, DeviceName, HugePages, Indeterminate, InputError, KubeletVersion,
    MemoryManagerPolicy, NodeFacts, NumaMask, NumaNodeFacts, NumaOccupancy, Occupancy, PodDemand,
    Refusal, Resource, TopologyManagerConfig, Unknown, Verdict,
};
use gpu_topology::{CpuManagerPolicy, TopologyManagerPolicy, TopologyManagerScope};
use rstest::rstest;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

const MIB: u64 = 1 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[allow(dead_code)]
    source: String,
    #[allow(dead_code)]
    notes: Vec<String>,
    #[allow(dead_code)]
    skipped: Vec<String>,
    machines: BTreeMap<String, Machine>,
    cases: Vec<Case>,
}

/// A machine: its NUMA nodes, as the labels publish them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Machine {
    #[allow(dead_code)]
    about: String,
    threads_per_core: u32,
    numa: Vec<Numa>,
    /// Other device-plugin resources, devices per NUMA node.
    #[serde(default)]
    devices: BTreeMap<String, Vec<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Numa {
    #[serde(default)]
    gpus: u32,
    cpus: u32,
    #[serde(default)]
    reserved_cpus: u32,
    #[serde(default)]
    reserved_cores: u32,
    socket: u32,
    memory_mib: u64,
    #[serde(default)]
    reserved_memory_mib: u64,
    /// 2Mi pages on the node.
    #[serde(default)]
    hugepages_2mi: u64,
    /// 1Gi pages on the node.
    #[serde(default)]
    hugepages_1gi: u64,
}

/// The kubelet's settings.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Kubelet {
    topology: String,
    #[serde(default = "pod_scope")]
    scope: String,
    #[serde(default = "static_cpu")]
    cpu: String,
    #[serde(default)]
    full_pcpus_only: bool,
    #[serde(default = "no_memory_manager")]
    memory: String,
    /// `major.minor`; unset, the model follows both device-hint rules.
    #[serde(default)]
    version: Option<String>,
}

fn pod_scope() -> String {
    "pod".into()
}

fn static_cpu() -> String {
    "static".into()
}

fn no_memory_manager() -> String {
    "none".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Pod {
    #[serde(default = "yes")]
    guaranteed: bool,
    #[serde(default)]
    devices: Vec<String>,
    containers: Vec<Container>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Container {
    #[serde(default = "app")]
    kind: String,
    #[serde(default)]
    gpus: Option<u32>,
    cpu_millis: u64,
    memory_mib: u64,
    #[serde(default)]
    hugepages_2mi_mib: u64,
    #[serde(default)]
    hugepages_1gi_mib: u64,
    /// Limits of the pod's `devices`, by index.
    #[serde(default)]
    devices: Vec<Option<u32>>,
}

fn app() -> String {
    "app".into()
}

/// What other pods hold on one NUMA node.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Held {
    #[serde(default)]
    gpus: u32,
    #[serde(default)]
    cpus: u32,
    #[serde(default)]
    memory_mib: u64,
    #[serde(default)]
    hugepages_2mi_mib: u64,
    #[serde(default)]
    hugepages_1gi_mib: u64,
    #[serde(default)]
    devices: BTreeMap<String, u32>,
}

/// The model's verdict a case expects.
#[derive(Deserialize, Debug)]
#[serde(tag = "verdict", rename_all = "snake_case", deny_unknown_fields)]
enum Expected {
    Admit {
        aligned: bool,
    },
    TopologyAffinity {
        container: Option<usize>,
    },
    SmtAlignment {
        container: usize,
        requested: u32,
        cpus_per_core: u32,
        available_physical_cpus: Option<u32>,
    },
    /// A manager's `Allocate` fails: `resource` is `gpu`, `cpu`, `memory`
    /// or a device resource's name; `failure` `not_enough` (with the
    /// counts) or one of the Memory Manager's.
    AllocationFailed {
        container: usize,
        resource: String,
        failure: String,
        #[serde(default)]
        requested: u64,
        #[serde(default)]
        available: u64,
    },
    BusyCores {
        numa: usize,
    },
    MemoryGroups,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// The Go test it mirrors: file, function and case description.
    mirrors: String,
    why: String,
    /// What the real kubelet does where the model's answer is not its
    /// verdict (an unknown where the kubelet decides on facts not published).
    #[serde(default)]
    kubelet: Option<String>,
    machine: String,
    settings: Kubelet,
    pod: Pod,
    /// Per NUMA node; absent: nothing held.
    #[serde(default)]
    held: Option<Vec<Held>>,
    expected: Expected,
    /// The last unit's hint, NUMA node ids.
    #[serde(default)]
    hint: Option<Vec<usize>>,
    /// What an admission leaves free, where the model knows it.
    #[serde(default)]
    remaining_gpus: Option<Vec<u32>>,
    #[serde(default)]
    remaining_cpus: Option<Vec<u32>>,
}

fn case_file() -> &'static CaseFile {
    static FILE: OnceLock<CaseFile> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/busy_node/cases.json");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    })
}

fn parse<T: std::str::FromStr>(what: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {value:?} is not one"))
}

fn node_facts(machine: &Machine, kubelet: &Kubelet) -> NodeFacts {
    let numa_nodes = machine
        .numa
        .iter()
        .map(|n| NumaNodeFacts {
            gpus: Some(n.gpus),
            cpus: Some(n.cpus),
            reserved_cpus: Some(n.reserved_cpus),
            reserved_cores: Some(n.reserved_cores),
            socket: Some(n.socket),
            memory_mib: Some(n.memory_mib),
            reserved_memory_mib: Some(n.reserved_memory_mib),
            hugepages_2mi: Some(HugePages {
                pages: n.hugepages_2mi,
                reserved_pages: 0,
            }),
            hugepages_1gi: Some(HugePages {
                pages: n.hugepages_1gi,
                reserved_pages: 0,
            }),
            distances: None,
        })
        .collect();
    let version = kubelet.version.as_deref().map(|v| {
        let (major, minor) = v.split_once('.').expect("a version is major.minor");
        KubeletVersion::new(parse("major", major), parse("minor", minor))
    });
    NodeFacts {
        gpus: None,
        gpus_per_numa_max: None,
        numa_nodes: Some(numa_nodes),
        threads_per_core: Some(machine.threads_per_core),
        topology_manager: TopologyManagerConfig {
            policy: Some(parse::<TopologyManagerPolicy>(
                "topology manager policy",
                &kubelet.topology,
            )),
            scope: Some(parse::<TopologyManagerScope>("scope", &kubelet.scope)),
            prefer_closest_numa_nodes: Some(false),
            max_allowable_numa_nodes: Some(8),
        },
        cpu_manager: CpuManagerConfig {
            policy: Some(parse::<CpuManagerPolicy>(
                "cpu manager policy",
                &kubelet.cpu,
            )),
            full_pcpus_only: Some(kubelet.full_pcpus_only),
            distribute_cpus_across_numa: Some(false),
            align_by_socket: Some(false),
        },
        memory_manager: Some(parse::<MemoryManagerPolicy>(
            "memory manager policy",
            &kubelet.memory,
        )),
        devices: machine.devices.clone(),
        machine_numa_nodes: None,
        kubelet_version: version,
        // The Go tests give whole MiB.
        memory_rounding_mib: 1,
    }
}

fn pod_demand(pod: &Pod) -> PodDemand {
    let kind = |k: &str| match k {
        "init" => ContainerKind::Init,
        "sidecar" => ContainerKind::Sidecar,
        "app" => ContainerKind::App,
        other => panic!("container kind {other:?}"),
    };
    PodDemand {
        containers: pod
            .containers
            .iter()
            .map(|c| ContainerDemand {
                kind: kind(&c.kind),
                gpus: c.gpus,
                cpu_millis: c.cpu_millis,
                memory_bytes: c.memory_mib * MIB,
                hugepages_2mi_bytes: c.hugepages_2mi_mib * MIB,
                hugepages_1gi_bytes: c.hugepages_1gi_mib * MIB,
                devices: c.devices.clone(),
            })
            .collect(),
        guaranteed: pod.guaranteed,
        pod_level_resources: false,
        devices: pod.devices.clone(),
    }
}

fn occupancy(held: &Option<Vec<Held>>, numa_nodes: usize) -> Occupancy {
    let default = || (0..numa_nodes).map(|_| Held::default()).collect::<Vec<_>>();
    let owned;
    let held = match held {
        Some(held) => held,
        None => {
            owned = default();
            &owned
        }
    };
    Occupancy {
        numa_nodes: held
            .iter()
            .map(|h| NumaOccupancy {
                gpus: h.gpus,
                cpus: h.cpus,
                memory: [
                    h.memory_mib * MIB,
                    h.hugepages_2mi_mib * MIB,
                    h.hugepages_1gi_mib * MIB,
                ],
                devices: h.devices.clone().into_iter().collect(),
            })
            .collect(),
    }
}

fn resource(name: &str) -> Resource {
    match name {
        "gpu" => Resource::Gpu,
        "cpu" => Resource::Cpu,
        "memory" => Resource::Memory,
        "hugepages-2Mi" => Resource::HugePages2Mi,
        "hugepages-1Gi" => Resource::HugePages1Gi,
        device => Resource::Device(DeviceName::new(device)),
    }
}

fn verdict(expected: &Expected) -> Verdict {
    match *expected {
        Expected::Admit { aligned } => Verdict::Admit { aligned },
        Expected::TopologyAffinity { container } => {
            Verdict::Refuse(Refusal::TopologyAffinity { container })
        }
        Expected::SmtAlignment {
            container,
            requested,
            cpus_per_core,
            available_physical_cpus,
        } => Verdict::Refuse(Refusal::SmtAlignment {
            container,
            requested,
            cpus_per_core,
            available_physical_cpus,
        }),
        Expected::AllocationFailed {
            container,
            resource: ref name,
            ref failure,
            requested,
            available,
        } => Verdict::Refuse(Refusal::AllocationFailed {
            container,
            resource: resource(name),
            failure: match failure.as_str() {
                "not_enough" => AllocationFailure::NotEnough {
                    requested,
                    available,
                },
                "no_memory_affinity" => AllocationFailure::NoMemoryAffinity,
                "no_extended_memory_affinity" => AllocationFailure::NoExtendedMemoryAffinity,
                "memory_hint_not_preferred" => AllocationFailure::MemoryHintNotPreferred,
                "memory_violates_numa_allocation" => {
                    AllocationFailure::MemoryViolatesNumaAllocation
                }
                other => panic!("allocation failure {other:?}"),
            },
        }),
        Expected::BusyCores { numa } => {
            Verdict::Unknown(Unknown::Indeterminate(Indeterminate::BusyCores { numa }))
        }
        Expected::MemoryGroups => {
            Verdict::Unknown(Unknown::Indeterminate(Indeterminate::MemoryGroups))
        }
    }
}

/// Runs the case of the file named `name`.
fn run(name: &str) {
    let file = case_file();
    let case = file
        .cases
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name:?} in cases.json"));
    assert!(
        !case.mirrors.is_empty() && !case.why.is_empty(),
        "{name}: cite the Go test and say why"
    );
    let machine = file
        .machines
        .get(&case.machine)
        .unwrap_or_else(|| panic!("{name}: no machine {:?}", case.machine));
    let node = node_facts(machine, &case.settings);
    let pod = pod_demand(&case.pod);
    let held = occupancy(&case.held, machine.numa.len());
    let answer = admit_on_busy_node(&node, &pod, &held)
        .unwrap_or_else(|e| panic!("{name}: input error {e}"));
    let context = || {
        format!(
            "{name} (mirrors {}; {}{})\nanswer: {answer:#?}",
            case.mirrors,
            case.why,
            case.kubelet
                .as_deref()
                .map(|k| format!("; the kubelet: {k}"))
                .unwrap_or_default()
        )
    };
    assert_eq!(answer.verdict, verdict(&case.expected), "{}", context());
    if matches!(answer.verdict, Verdict::Unknown(_)) {
        assert!(
            case.kubelet.is_some(),
            "{name}: an unknown says what the kubelet does"
        );
    }
    if let Some(ids) = &case.hint {
        let unit = answer.units.last().expect("a unit was merged");
        let mask = NumaMask::from_nodes(ids).expect("node ids below the cap");
        assert_eq!(unit.hint.and_then(|h| h.mask), Some(mask), "{}", context());
    }
    if let Some(gpus) = &case.remaining_gpus {
        assert_eq!(answer.remaining.gpus.as_ref(), Some(gpus), "{}", context());
    }
    if let Some(cpus) = &case.remaining_cpus {
        assert_eq!(answer.remaining.cpus.as_ref(), Some(cpus), "{}", context());
    }
}

/// The rstest cases and the list of their names, from one list.
macro_rules! busy_node_cases {
    ($($name:ident,)*) => {
        const CASE_NAMES: &[&str] = &[$(stringify!($name)),*];

        #[rstest]
        $(#[case::$name(stringify!($name))])*
        fn busy_node(#[case] name: &str) {
            run(name);
        }
    };
}

busy_node_cases! {
    // Device Manager (devicemanager/topology_hints_test.go).
    headline_four_gpus_two_held_on_each_numa_single_numa_node_refused,
    headline_four_gpus_nothing_held_single_numa_node_aligned,
    four_gpus_held_on_numa_0_land_on_numa_1,
    two_devices_one_held_per_numa_restricted_refused,
    two_devices_one_held_per_numa_single_numa_node_refused,
    two_devices_one_held_per_numa_best_effort_unaligned,
    more_devices_requested_than_free_best_effort_allocation_fails,
    nic_held_on_numa_0_pod_lands_on_numa_1,
    nic_free_only_where_every_gpu_is_held_refused,
    // CPU Manager hints (cpumanager/topology_hints_test.go).
    two_cpus_four_and_six_free_aligned_on_numa_0,
    five_cpus_four_and_six_free_aligned_on_numa_1,
    seven_cpus_four_and_six_free_restricted_unaligned,
    eleven_cpus_ten_free_best_effort_not_enough,
    five_cpus_four_free_on_each_numa_single_numa_node_refused,
    hgx_48_cpus_20_held_on_each_numa_single_numa_node_refused,
    // CPU Manager allocation (cpumanager/policy_static_test.go TestStaticPolicyAdd).
    single_socket_ht_two_cpus_beside_two_held_cores,
    single_socket_ht_two_cpus_beside_two_held_cores_full_pcpus_only,
    single_socket_ht_two_cpus_with_one_free_not_enough,
    dual_socket_ht_six_cpus_take_the_free_socket,
    dual_socket_ht_six_cpus_full_pcpus_only_busy_cores_unknown,
    dual_socket_ht_six_cpus_beside_a_held_core,
    dual_socket_ht_eight_cpus_a_socket_and_a_core,
    dual_socket_ht_ten_cpus_eight_free_not_enough,
    dual_socket_no_ht_four_cpus_take_the_free_socket,
    dual_socket_no_ht_four_cpus_from_both_sockets,
    // SMT alignment (full-pcpus-only) with CPUs already taken.
    dual_socket_ht_eight_cpus_two_cores_held_smt_refused,
    single_socket_ht_one_cpu_full_pcpus_only_refused,
    hgx_odd_cpus_held_full_pcpus_only_without_half_reserved_cores_admitted,
    // Scopes, init containers' resources reused.
    container_scope_init_gpus_reused_by_the_app_container,
    container_scope_init_on_the_half_busy_numa_leaves_the_app_no_numa_node,
    container_scope_more_held_moves_the_init_container_and_admits,
    pod_scope_two_containers_two_held_on_each_numa_refused,
    pod_scope_two_containers_land_together_on_the_free_numa,
    // Memory Manager (memorymanager/policy_static_test.go).
    memory_new_hints_avoid_the_used_numa_nodes,
    memory_only_a_cross_numa_group_fits_memory_groups_unknown,
    memory_default_hint_fails_on_a_full_numa_node,
    memory_held_on_a_one_numa_machine_is_in_its_only_group,
    memory_no_single_numa_node_has_room_single_numa_node_refused,
    memory_across_used_numa_nodes_best_effort_memory_groups_unknown,
    memory_extension_onto_a_grouped_node_memory_groups_unknown,
}

#[test]
fn every_case_in_the_file_is_run() {
    let in_file: BTreeSet<&str> = case_file().cases.iter().map(|c| c.name.as_str()).collect();
    let run: BTreeSet<&str> = CASE_NAMES.iter().copied().collect();
    assert_eq!(
        case_file().cases.len(),
        in_file.len(),
        "case names are unique"
    );
    assert_eq!(
        in_file, run,
        "cases.json and the rstest cases list the same names"
    );
}

/// Holdings that contradict the node are the caller's error, not a verdict.
#[rstest]
#[case::a_numa_node_missing(
    vec![NumaOccupancy::default()],
    InputError::OccupancyNumaNodes { listed: 1, numa_nodes: 2 }
)]
#[case::more_gpus_held_than_the_numa_node_has(
    vec![NumaOccupancy { gpus: 5, ..NumaOccupancy::default() }, NumaOccupancy::default()],
    InputError::OccupancyExceeds { numa: 0, unit: CountedUnit::Gpus }
)]
#[case::more_cpus_held_than_the_numa_node_has_free(
    vec![NumaOccupancy::default(), NumaOccupancy { cpus: 57, ..NumaOccupancy::default() }],
    InputError::OccupancyExceeds { numa: 1, unit: CountedUnit::Cpus }
)]
#[case::more_memory_held_than_allocatable(
    vec![NumaOccupancy { memory: [512 << 30, 0, 0], ..NumaOccupancy::default() }, NumaOccupancy::default()],
    InputError::OccupancyExceeds { numa: 0, unit: CountedUnit::Memory(0) }
)]
fn holdings_the_node_cannot_have_are_input_errors(
    #[case] held: Vec<NumaOccupancy>,
    #[case] expected: InputError,
) {
    let file = case_file();
    let settings = Kubelet {
        topology: "single-numa-node".into(),
        scope: pod_scope(),
        cpu: static_cpu(),
        full_pcpus_only: false,
        memory: "static".into(),
        version: None,
    };
    let node = node_facts(&file.machines["hgx"], &settings);
    let pod = PodDemand {
        containers: vec![ContainerDemand {
            gpus: Some(1),
            cpu_millis: 4000,
            memory_bytes: 16 << 30,
            ..ContainerDemand::default()
        }],
        guaranteed: true,
        pod_level_resources: false,
        devices: Vec::new(),
    };
    let held = Occupancy { numa_nodes: held };
    assert_eq!(admit_on_busy_node(&node, &pod, &held), Err(expected));
}
