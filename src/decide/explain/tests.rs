//! Unit tests of the messages built from the verdicts: each sentence and
//! fix, in number, on the shared node shapes of `decide::testing`. Kept
//! apart from `explain.rs` so the production code stays short (issue #36).

use super::*;
use crate::decide::demand::PodDevices;
use crate::decide::input::PodInput;
use crate::decide::testing::{config, hgx, node, pod, view, HGX, KUBELET};
use gpu_topology::kubelet::{facts_from_topology, HintReport, ResourceReport};
use rstest::rstest;
use serde_json::{json, Value};

// The tables below cover every counted noun of these messages (nodes,
// node shapes, GPUs, CPUs, NUMA nodes) for 0, 1 and several (issue #23:
// "Every message sentence is tested for 0, 1 and several nodes or
// shapes"); where a number cannot occur, a comment says why.

#[rstest]
#[case::two_sockets(&[4, 4], "4+4")]
#[case::eight_numa_nodes_spelled_out(&[0, 2, 0, 2, 0, 2, 0, 2], "0+2+0+2+0+2+0+2")]
#[case::gb200_tray_runs(&[2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "2+2+0×32")]
#[case::gh200_runs(&[72, 0, 0, 0, 0, 0, 0, 0, 0], "72+0×8")]
#[case::short_runs_spelled_out(&[1, 1, 2, 2, 3, 3, 4, 4, 5], "1+1+2+2+3+3+4+4+5")]
fn per_numa_counts_stay_readable_on_many_numa_nodes(#[case] list: &[u32], #[case] words: &str) {
    assert_eq!(joined(list), words);
}

#[rstest]
#[case::too_many_numa_nodes(
    StartupError::TooManyNumaNodes { numa_nodes: 34, max_allowable: 8 },
    "Set topologyManagerPolicyOptions max-allowable-numa-nodes to at least 34"
)]
#[case::align_by_socket(
    StartupError::AlignBySocketWithSingleNumaNode,
    "Fix the kubelet configuration"
)]
fn a_kubelet_that_does_not_start_is_told_what_to_set(
    #[case] error: StartupError,
    #[case] fix_starts: &str,
) {
    assert!(
        startup_fix(error).starts_with(fix_starts),
        "{}",
        startup_fix(error)
    );
}

/// One container with `gpus` GPUs, `cpu` and `memory` as limits.
fn pod_with(gpus: u32, cpu: &str, memory: &str) -> Value {
    json!({"containers": [{"name": "train", "resources": {"limits": {
        "nvidia.com/gpu": gpus.to_string(), "cpu": cpu, "memory": memory}}}]})
}

/// An HGX node (4 + 4 GPUs, 56 CPUs and about 1007Gi per NUMA node)
/// whose kubelet runs the static Memory Manager.
fn hgx_memory_static(policy: &str) -> NodeTopology {
    let kubelet = KUBELET.replace("memory-manager-policy=none", "memory-manager-policy=static");
    node(&format!("{HGX} {kubelet} topology-manager-policy={policy}"))
}

/// Why and fix for the pod `spec` on one node of `topology`, from the
/// model's verdict.
fn why_fix_on(spec: &Value, topology: NodeTopology, settings: Value) -> (String, String) {
    let config = config(settings);
    let view = view(vec![(topology, 1)]);
    let input = PodInput::read(spec, &config).unwrap().unwrap();
    let verdicts = crate::decide::fit::verdicts(&view.fleet, spec, &input, &config).unwrap();
    why_and_fix(&input.demand, Need::for_pod(&config), &verdicts[0]).clone()
}

fn demand_of(spec: &Value) -> Demand {
    let pod = PodDevices::from_pod_spec(spec, &["nvidia.com/gpu".to_owned()]).unwrap();
    Demand::new(pod, TopologyManagerScope::Pod)
}

/// A slow hint search names its numbers, and its fix by the kubelet's
/// version: an upgrade to 1.36 before it (device hints then range over
/// the devices' NUMA nodes), fewer aligned resources from it.
#[rstest]
#[case::before_1_36(Some((1, 35)), "Upgrade the kubelet to 1.36")]
#[case::version_unknown(None, "Upgrade the kubelet to 1.36")]
#[case::from_1_36(Some((1, 36)), "Set topologyManagerPolicy none there")]
fn a_slow_hint_search_names_its_work_and_fix(
    #[case] version: Option<(u32, u32)>,
    #[case] fix_starts: &str,
) {
    let demand = demand_of(&pod_with(2, "8", "64Gi"));
    let facts = NodeFacts {
        kubelet_version: version
            .map(|(major, minor)| gpu_topology::KubeletVersion::new(major, minor)),
        ..NodeFacts::default()
    };
    let refusal = Refusal::HintSearchTooSlow {
        container: Some(0),
        masks: 17_179_869_186,
        permutations: 38_654_705_664,
    };
    let (why, fix) = refused(&refusal, &demand, &facts, &[], TopologyManagerScope::Pod);
    assert!(
        why.contains("walks 17179869186 NUMA masks and at least 38654705664 hint permutations"),
        "{why}"
    );
    assert!(why.contains("the pod stays Pending"), "{why}");
    assert!(fix.starts_with(fix_starts), "{fix}");
}

/// The node shapes left unexplained: 0 says nothing.
#[rstest]
#[case::zero_shapes(0, None)]
#[case::one_shape(1, Some("(1 more node shape not shown.)"))]
#[case::several_shapes(4, Some("(4 more node shapes not shown.)"))]
fn shapes_not_shown(#[case] rest: usize, #[case] words: Option<&str>) {
    assert_eq!(not_shown_words(rest), words.map(str::to_owned));
}

/// A group's nodes. Zero is unreachable: a group exists because a node
/// carries its shape.
#[rstest]
#[case::one_node(1, "the node")]
#[case::several_nodes(10, "the 10 nodes")]
fn a_groups_nodes(#[case] count: u32, #[case] words: &str) {
    assert_eq!(the_nodes(count), words);
}

/// The shape in words: GPUs and CPUs per NUMA node in number.
#[rstest]
#[case::zero_gpus(0, vec![56, 56], "0 GPUs, 4+4 per NUMA node, 56 CPUs per NUMA node, topologyManagerPolicy restricted")]
#[case::one_gpu_one_cpu_per_numa_node(1, vec![1, 1], "1 GPU, 4+4 per NUMA node, 1 CPU per NUMA node, topologyManagerPolicy restricted")]
#[case::several_gpus_uneven_cpus(8, vec![56, 48], "8 GPUs, 4+4 per NUMA node, 56+48 CPUs per NUMA node, topologyManagerPolicy restricted")]
fn shape_words_agree_in_number(#[case] gpus: u32, #[case] cpus: Vec<u32>, #[case] words: &str) {
    let mut topology = hgx("restricted");
    topology.gpus = Some(gpus);
    topology.numa_cpus = Some(cpus);
    assert_eq!(
        shape_words(
            &topology,
            TopologyManagerScope::Pod,
            TopologyManagerScope::Pod
        ),
        words
    );
}

/// SMTAlignmentError: the CPUs asked and the CPUs free on whole cores.
/// (requested, cpus per core, free on whole cores, why, fix). A count
/// of 0 exclusive CPUs never reaches the CPU Manager; the threads per
/// core are at least 2 (every count is a multiple of 1).
#[rstest]
#[case::one_cpu_not_a_multiple(1, 2, None,
    "container \"train\"'s 1 exclusive CPU is not a multiple of the 2 threads per core that cpuManagerPolicyOptions full-pcpus-only allocates: the kubelet refuses it with SMTAlignmentError",
    "Request a multiple of 2 CPUs (2), or a fractional CPU amount (shared pool)")]
#[case::several_cpus_not_a_multiple(3, 2, None,
    "container \"train\"'s 3 exclusive CPUs are not a multiple of the 2 threads per core that cpuManagerPolicyOptions full-pcpus-only allocates: the kubelet refuses it with SMTAlignmentError",
    "Request a multiple of 2 CPUs (4), or a fractional CPU amount (shared pool)")]
#[case::several_cpus_none_free(4, 2, Some(0),
    "container \"train\"'s 4 exclusive CPUs are more than the 0 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
    "Request at most 0 CPUs")]
#[case::several_cpus_one_free(2, 1, Some(1),
    "container \"train\"'s 2 exclusive CPUs are more than the 1 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
    "Request at most 1 CPU")]
#[case::one_cpu_none_free(1, 1, Some(0),
    "container \"train\"'s 1 exclusive CPU is more than the 0 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
    "Request at most 0 CPUs")]
#[case::several_cpus_several_free(8, 2, Some(6),
    "container \"train\"'s 8 exclusive CPUs are more than the 6 free on whole cores (full-pcpus-only): the kubelet refuses it with SMTAlignmentError",
    "Request at most 6 CPUs")]
fn smt_alignment_in_number(
    #[case] requested: u32,
    #[case] cpus_per_core: u32,
    #[case] available_physical_cpus: Option<u32>,
    #[case] why: &str,
    #[case] fix: &str,
) {
    let refusal = Refusal::SmtAlignment {
        container: 0,
        requested,
        cpus_per_core,
        available_physical_cpus,
    };
    let demand = demand_of(&pod(1, requested));
    assert_eq!(
        refused(
            &refusal,
            &demand,
            &NodeFacts::default(),
            &[],
            TopologyManagerScope::Pod
        ),
        (why.to_owned(), fix.to_owned())
    );
}

/// TopologyAffinityError through the model, for one and several GPUs,
/// CPUs and NUMA nodes, and memory (a measured noun, in the singular).
/// No GPU or CPU on its own needs more than one NUMA node, so `the 1 GPU
/// needs 2 NUMA nodes` cannot occur; nor can a mask of 0 NUMA nodes.
#[rstest]
#[case::several_gpus_several_cpus_restricted(pod(8, 32), hgx("restricted"),
    "the GPUs' narrowest NUMA mask is 2 nodes but the 32 exclusive CPUs' is 1 node: the kubelet refuses it with TopologyAffinityError",
    "Request 57 to 110 CPUs so that they span 2 NUMA nodes as the GPUs do, a fractional CPU amount (shared pool), or at most 4 GPUs")]
#[case::several_gpus_one_cpu_restricted(pod(8, 1), hgx("restricted"),
    "the GPUs' narrowest NUMA mask is 2 nodes but the 1 exclusive CPU's is 1 node: the kubelet refuses it with TopologyAffinityError",
    "Request 57 to 110 CPUs so that they span 2 NUMA nodes as the GPUs do, a fractional CPU amount (shared pool), or at most 4 GPUs")]
#[case::one_gpu_several_cpus_restricted(pod(1, 96), hgx("restricted"),
    "the GPU's narrowest NUMA mask is 1 node but the 96 exclusive CPUs' is 2 nodes: the kubelet refuses it with TopologyAffinityError",
    "Request at most 56 exclusive CPUs so that the 96 exclusive CPUs fit 1 NUMA node as the GPU does")]
#[case::several_gpus_on_one_numa_node_several_cpus_restricted(pod(2, 96), hgx("restricted"),
    "the GPUs' narrowest NUMA mask is 1 node but the 96 exclusive CPUs' is 2 nodes: the kubelet refuses it with TopologyAffinityError",
    "Request at most 56 exclusive CPUs so that the 96 exclusive CPUs fit 1 NUMA node as the GPUs do")]
#[case::several_gpus_memory_restricted(pod_with(8, "2500m", "64Gi"), hgx_memory_static("restricted"),
    "the GPUs' narrowest NUMA mask is 2 nodes but the 64Gi of memory's is 1 node: the kubelet refuses it with TopologyAffinityError",
    "Request more than 1007Gi of memory so that it spans 2 NUMA nodes as the GPUs do, or at most 4 GPUs")]
#[case::several_gpus_single_numa_node(pod(8, 16), hgx("single-numa-node"),
    "the 8 GPUs need 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError",
    "Request at most 4 GPUs per pod")]
#[case::several_gpus_and_cpus_single_numa_node(pod(8, 96), hgx("single-numa-node"),
    "the 8 GPUs need 2 NUMA nodes and the 96 exclusive CPUs need 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError",
    "Request at most 4 GPUs per pod, or at most 56 exclusive CPUs, or a fractional CPU amount (shared pool)")]
#[case::memory_single_numa_node(pod_with(4, "16", "1100Gi"), hgx_memory_static("single-numa-node"),
    "the 1100Gi of memory needs 2 NUMA nodes, but single-numa-node admits only one: the kubelet refuses it with TopologyAffinityError",
    "Request at most 1007Gi of memory")]
fn topology_affinity_in_number(
    #[case] spec: Value,
    #[case] topology: NodeTopology,
    #[case] why: &str,
    #[case] fix: &str,
) {
    assert_eq!(
        why_fix_on(&spec, topology, json!({})),
        (why.to_owned(), fix.to_owned())
    );
}

/// A resource that fits its narrowest mask by capacity but not what
/// earlier containers left (scope container), as plain data: counted
/// GPUs in the plural, measured memory in the singular. One GPU or CPU
/// always finds one NUMA node with room if any has room; then it has
/// no hint at all and the message is not this one.
#[rstest]
#[case::several_gpus(Resource::Gpu, 2,
    "the 2 GPUs of container \"train\" fit 1 node by capacity, but after the containers before it the fewest NUMA nodes with room for them are 2 nodes: the kubelet refuses it with TopologyAffinityError")]
#[case::memory(Resource::Memory, 600 << 30,
    "the 600Gi of memory of container \"train\" fits 1 node by capacity, but after the containers before it the fewest NUMA nodes with room for it are 2 nodes: the kubelet refuses it with TopologyAffinityError")]
fn fits_by_capacity_not_after_the_containers_before(
    #[case] resource: Resource,
    #[case] request: u64,
    #[case] why: &str,
) {
    let unit = UnitReport {
        container: Some(0),
        resources: vec![ResourceReport {
            resource,
            request,
            hints: HintReport::Hints {
                narrowest_capacity: 1,
                narrowest_available: 2,
                preferred_masks: 0,
            },
        }],
        hint: None,
        aligned: false,
    };
    let facts = facts_from_topology(&hgx("restricted"), TopologyManagerScope::Container);
    let (words, _) = topology_affinity(
        &demand_of(&pod(2, 4)),
        &facts,
        Some(&unit),
        Some(0),
        TopologyManagerScope::Container,
    );
    assert_eq!(words, why);
}

/// Devices narrower than the GPUs, as plain data: the device count in
/// number. Zero devices give no hint, so no such sentence.
#[rstest]
#[case::one_device(1,
    "the GPUs' narrowest NUMA mask is 2 nodes but the 1 rdma/ib's is 1 node: the kubelet refuses it with TopologyAffinityError",
    "Request at most 4 GPUs so that they fit 1 NUMA node as the 1 rdma/ib does")]
#[case::several_devices(8,
    "the GPUs' narrowest NUMA mask is 2 nodes but the 8 rdma/ib's is 1 node: the kubelet refuses it with TopologyAffinityError",
    "Request at most 4 GPUs so that they fit 1 NUMA node as the 8 rdma/ib do")]
fn devices_narrower_than_the_gpus(#[case] devices: u64, #[case] why: &str, #[case] fix: &str) {
    let report = |resource, request, narrowest| ResourceReport {
        resource,
        request,
        hints: HintReport::Hints {
            narrowest_capacity: narrowest,
            narrowest_available: narrowest,
            preferred_masks: 1,
        },
    };
    let unit = UnitReport {
        container: None,
        resources: vec![
            report(Resource::Gpu, 8, 2),
            report(
                Resource::Device(gpu_topology::kubelet::DeviceName::new("rdma/ib")),
                devices,
                1,
            ),
        ],
        hint: None,
        aligned: false,
    };
    let facts = facts_from_topology(&hgx("restricted"), TopologyManagerScope::Pod);
    assert_eq!(
        topology_affinity(
            &demand_of(&pod(8, 8)),
            &facts,
            Some(&unit),
            None,
            TopologyManagerScope::Pod
        ),
        (why.to_owned(), fix.to_owned())
    );
}

/// Admitted, not aligned (`required` with `numa`): the widest resource
/// in number. A machine of one NUMA node is always aligned, so `1 NUMA
/// node` never follows `topologyManagerPolicy none`.
#[rstest]
#[case::several_gpus(pod(8, 8), hgx("best-effort"),
    "the kubelet admits it unaligned: the 8 GPUs' narrowest NUMA mask is 2 nodes",
    "Request at most 4 GPUs per pod, or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
#[case::several_cpus(pod(1, 96), hgx("best-effort"),
    "the kubelet admits it unaligned: the 96 exclusive CPUs' narrowest NUMA mask is 2 nodes",
    "Request at most 56 exclusive CPUs, or a fractional CPU amount (shared pool), or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
#[case::memory(pod_with(1, "2500m", "1100Gi"), hgx_memory_static("best-effort"),
    "the kubelet admits it unaligned: the 1100Gi of memory's narrowest NUMA mask is 2 nodes",
    "Request at most 1007Gi of memory, or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
#[case::several_numa_nodes_policy_none(pod(1, 8), hgx("none"),
    "the kubelet admits it unaligned: topologyManagerPolicy none aligns nothing on a machine of 2 NUMA nodes",
    "Run the Topology Manager there (best-effort, restricted or single-numa-node), or set topology.affinity: preferred so the GPUs may span NUMA nodes")]
fn unaligned_in_number(
    #[case] spec: Value,
    #[case] topology: NodeTopology,
    #[case] why: &str,
    #[case] fix: &str,
) {
    let settings = json!({"topology": {"affinity": "required", "alignment": "numa"}});
    assert_eq!(
        why_fix_on(&spec, topology, settings),
        (why.to_owned(), fix.to_owned())
    );
}

/// The pod's GPUs above every group's: the largest and its nodes in
/// number. Zero groups never get here (an empty view is answered
/// before, "no node publishes ... labels"); a labeled GPU node has at
/// least one GPU.
#[rstest]
#[case::one_node(vec![(hgx("best-effort"), 1)],
    "GPU pod cannot be placed: it needs 16 GPUs (container \"train\": 16 nvidia.com/gpu) but the largest labeled GPU node has 8 (1 node). Request at most 8 GPUs per pod, or split the work across several pods.")]
#[case::several_nodes_of_several_shapes(vec![(hgx("best-effort"), 2), (hgx("restricted"), 3)],
    "GPU pod cannot be placed: it needs 16 GPUs (container \"train\": 16 nvidia.com/gpu) but the largest labeled GPU node has 8 (5 nodes). Request at most 8 GPUs per pod, or split the work across several pods.")]
fn too_few_gpus_on_every_node(#[case] groups: Vec<(NodeTopology, u32)>, #[case] message: &str) {
    let spec = pod(16, 8);
    let config = config(json!({}));
    let view = view(groups);
    let input = PodInput::read(&spec, &config).unwrap().unwrap();
    let verdicts = crate::decide::fit::verdicts(&view.fleet, &spec, &input, &config).unwrap();
    let need = Need::for_pod(&config);
    let refuse = no_group_takes_it(&input.demand, need, &verdicts, &config.topology);
    assert!(
        matches!(refuse, ShapesRefuse::TooFewGpus { .. }),
        "{refuse:?}"
    );
    assert_eq!(refuse.message(), message);
    assert_eq!(too_few_gpus_everywhere(&[]), None);
}

/// Every number of nodes keeps the negation (issue #23 item 5: the
/// singular once read "the kubelet of the only labeled GPU node admits it").
#[rstest]
#[case::no_node(
    0,
    "the kubelet of no labeled GPU node admits it",
    "no labeled GPU node hosts it so"
)]
#[case::one_node(
    1,
    "the kubelet of the only labeled GPU node does not admit it",
    "the only labeled GPU node does not host it so"
)]
#[case::several_nodes(
    5,
    "the kubelet of none of the 5 labeled GPU nodes admits it",
    "none of the 5 labeled GPU nodes hosts it so"
)]
fn no_node_takes_it_in_every_number(#[case] nodes: u32, #[case] admits: &str, #[case] hosts: &str) {
    assert_eq!(no_kubelet_admits(nodes), admits);
    assert_eq!(no_node_hosts(nodes), hosts);
}

/// (resource, requested, capacity, reserved, why, fix)
#[rstest]
#[case::cpus_none_reserved(Resource::Cpu, 80_000, 64_000, 0,
    "the pod requests 80 CPUs, more than a node there can allocate (64 CPUs): the scheduler never places it there (Insufficient cpu)",
    "Request at most 64 CPUs per pod, or split the work across several pods")]
#[case::cpus_one_reserved(Resource::Cpu, 1500, 1_000, 1_000,
    "the pod requests 1500m CPU, more than a node there can allocate (1 CPU, 1 of them reserved by the kubelet): the scheduler never places it there (Insufficient cpu)",
    "Request at most 0 CPUs per pod, or split the work across several pods")]
#[case::cpus_several_reserved(Resource::Cpu, 112_000, 112_000, 2_000,
    "the pod requests 112 CPUs, more than a node there can allocate (112 CPUs, 2 of them reserved by the kubelet): the scheduler never places it there (Insufficient cpu)",
    "Request at most 110 CPUs per pod, or split the work across several pods")]
#[case::memory(Resource::Memory, 600 << 30, (512 << 30) + (2 << 20), 0,
    "the pod requests 600Gi of memory, more than a node there can allocate (at most 512Gi of memory): the scheduler never places it there (Insufficient memory)",
    "Request at most 512Gi of memory per pod, or split the work across several pods")]
fn node_size_refusals_say_the_numbers(
    #[case] resource: Resource,
    #[case] requested: u64,
    #[case] capacity: u64,
    #[case] reserved: u64,
    #[case] why: &str,
    #[case] fix: &str,
) {
    assert_eq!(
        node_too_small(resource, requested, capacity, reserved),
        (why.to_owned(), fix.to_owned())
    );
}

#[rstest]
#[case::one_gpu(1, Resource::Gpu, "1 GPU")]
#[case::gpus(8, Resource::Gpu, "8 GPUs")]
#[case::one_cpu(1, Resource::Cpu, "1 exclusive CPU")]
#[case::cpus(0, Resource::Cpu, "0 exclusive CPUs")]
fn amounts_agree_in_number(#[case] count: u64, #[case] resource: Resource, #[case] words: &str) {
    assert_eq!(amount(count, resource), words);
}
