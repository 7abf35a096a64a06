//! The fleets of the session files of `scenarios/sessions/` ([`session_files`]):
//! the Node lists and fleet summaries, the host's errors, and the DRA
//! fleets the scenarios replay, each with the comment its file starts
//! with. Split from `fleets.rs` so each file stays short (issue #36).

use super::bench::cramped_hgx;
use super::machines::{
    a100_pcie, four_pcie, g5_2xlarge, gb200_tray, gb200_tray_unversioned, gh200, hgx_a100,
    mi300x_cpx, mig_mixed, mig_single, old_labeler, p5, with_devices, Kubelet,
};
use super::{
    confirmed, nodes, reporting, ListAnswer, Nodes, SessionFile, SummaryAnswer,
    STALE_SUMMARY_WRITTEN_AT, SUMMARY_WRITTEN_AT,
};
use gpu_topology::TopologyManagerPolicy::{BestEffort, Restricted, SingleNumaNode};
use gpu_topology::TopologyManagerScope::{Container, Pod};
use gpu_topology::{KubeletVersion, MemoryManagerPolicy, TopologyManagerPolicy};

const CONNECTION_REFUSED_SUMMARY: &str = "Cannot get v1/ConfigMap kube-system/gpu-topology-fleet: error trying to connect: tcp connect error: Connection refused (os error 111)";
const CONNECTION_REFUSED_LIST: &str =
    "Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111)";
/// The host's errors as kwctl hands them over under `RUST_BACKTRACE=1`: an
/// anyhow error's `{:?}`, its causes and a stack backtrace after the first
/// line (issue #26). The summary's first line is the API server's RBAC
/// refusal, longer than a warning quotes (`host::HOST_ERROR_MAX_CHARS`).
const FORBIDDEN_SUMMARY_WITH_BACKTRACE: &str = "configmaps \"gpu-topology-fleet\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-system\": RBAC: role.rbac.authorization.k8s.io \"gpu-topology-fleet-reader\" not found

Caused by:
    ApiError: configmaps \"gpu-topology-fleet\" is forbidden: Forbidden (ErrorResponse { status: \"Failure\", reason: \"Forbidden\", code: 403 })

Stack backtrace:
   0: anyhow::error::<impl anyhow::Error>::msg
             at /usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f/anyhow-1.0.86/src/error.rs:83:36
   1: policy_evaluator::callback_handler::kubernetes::get_resource::{{closure}}
             at /usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f/policy-evaluator-0.19.0/src/callback_handler/kubernetes.rs:163:9
   2: tokio::runtime::task::core::Core<T,S>::poll
";
const CONNECTION_REFUSED_LIST_WITH_BACKTRACE: &str = "Cannot list v1/Node resources: error trying to connect: tcp connect error: Connection refused (os error 111)

Caused by:
    0: error trying to connect: tcp connect error: Connection refused (os error 111)
    1: tcp connect error: Connection refused (os error 111)
    2: Connection refused (os error 111)

Stack backtrace:
   0: anyhow::error::<impl anyhow::Error>::msg
             at /usr/local/cargo/registry/src/index.crates.io-6f17d22bba15001f/anyhow-1.0.86/src/error.rs:83:36
   1: policy_evaluator::callback_handler::kubernetes::list_all_resources::{{closure}}
   2: tokio::runtime::task::core::Core<T,S>::poll
";
const CONFIG_MAP_REFUSED: &str =
    "Policy has not been granted access to Kubernetes v1/ConfigMap resources.";

/// The mixed fleet several scenarios share: 2 p5 on single-numa-node, 1 p5
/// on best-effort, 2 L4 nodes without managers, and a p5 hand-labeled
/// with the kubelet's own spelling of the policy, which the contract refuses.
fn hgx_mixed() -> Vec<Nodes> {
    vec![
        nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
        nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 1),
        nodes(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE), 2),
        Nodes {
            overrides: vec![("gpu-topology.io/topology-manager-policy", "SingleNUMANode")],
            ..nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 1)
        },
    ]
}

fn full_pcpus_only(policy: TopologyManagerPolicy) -> Kubelet {
    Kubelet {
        full_pcpus_only: true,
        ..Kubelet::cpu_static(policy, Pod)
    }
}

fn memory_static(policy: TopologyManagerPolicy) -> Kubelet {
    Kubelet {
        memory: MemoryManagerPolicy::Static,
        ..Kubelet::cpu_static(policy, Pod)
    }
}

/// Every session file of `scenarios/sessions/`.
pub fn session_files() -> Vec<SessionFile> {
    use ListAnswer as L;
    use SummaryAnswer as S;
    vec![
        SessionFile {
            name: "a100-pcie-nvlink-bridge-fleet",
            about: "2 A100 PCIe nodes: 4 GPUs over 2 NUMA nodes, NVLink bridges joining pairs (largest NVLink group: 2).\nThe cluster has no fleet summary: the policy reads it first (404), then lists the Nodes.",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(a100_pcie(Kubelet::cpu_static(BestEffort, Pod)), 2)]),
        },
        SessionFile {
            name: "fleet-summary-absent",
            about: "A cluster without the fleet summary ConfigMap (the summarizer is not deployed), for\ncapacity.source: summary: the host answers with the API server's 404 and no Node is listed.",
            summary: S::Absent,
            list: L::NotAsked,
        },
        SessionFile {
            name: "fleet-summary-hgx-mixed",
            about: "The fleet summary `gpu-topology-labeler summarize` writes for the fleet of hgx-mixed-fleet.yml:\n3 shapes, 5 nodes, and the hand-labeled node counted as malformed. No Node is listed.",
            summary: S::Of(hgx_mixed(), SUMMARY_WRITTEN_AT),
            list: L::NotAsked,
        },
        SessionFile {
            name: "fleet-summary-distinct-shapes",
            about: "A fresh fleet summary of 1,000 nodes of one machine type, every one a shape of its own: each\nNUMA node's memory a few MiB off the others', labeled in exact MiB (labelers before the\nwhole-GiB contract). 12 and 14 free CPUs per NUMA node, single-numa-node, container scope.",
            summary: S::Of(
                (0..1_000).map(|jitter| nodes(cramped_hgx(jitter), 1)).collect(),
                SUMMARY_WRITTEN_AT,
            ),
            list: L::NotAsked,
        },
        SessionFile {
            name: "fleet-summary-refused",
            about: "The host refuses the fleet summary ConfigMap (the policy-server may not read it), so the\npolicy lists the Nodes instead: 2 p5 (HGX H100) nodes whose kubelets run single-numa-node.",
            summary: S::Error(CONFIG_MAP_REFUSED),
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 2)]),
        },
        SessionFile {
            name: "fleet-summary-stale",
            about: "A fleet summary written in 2020 (its summarizer stopped): too old to trust, so the policy\nlists the Nodes instead: a p5 on best-effort and a 4 x L4 node.",
            summary: S::Of(vec![nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 40)], STALE_SUMMARY_WRITTEN_AT),
            list: L::Nodes(vec![
                nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 1),
                nodes(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE), 1),
            ]),
        },
        SessionFile {
            name: "fleet-summary-empty",
            about: "A fresh fleet summary that lists no shape: the labels expired (the labeler stopped and its\nNodeFeature objects were garbage-collected) or the autoscaled pool is at zero.",
            summary: S::OfTheList(SUMMARY_WRITTEN_AT),
            list: L::NotAsked,
        },
        SessionFile {
            name: "four-gpu-pcie-fleet",
            about: "3 g5.12xlarge nodes: 4 A10G GPUs each on PCIe, one NUMA node, no NVLink, the kubelet's\ndefault managers. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(four_pcie("g5.12xlarge", "NVIDIA-A10G", Kubelet::NONE), 3)]),
        },
        SessionFile {
            name: "hgx-mixed-fleet",
            about: "Mixed fleet: 2 p5 (HGX H100) nodes whose kubelets run single-numa-node, 1 p5 on best-effort,\n2 L4 nodes, and 1 node hand-labeled with the kubelet's own spelling (SingleNUMANode), which the\ncontract refuses. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(hgx_mixed()),
        },
        SessionFile {
            name: "hgx-single-numa-node-fleet",
            about: "3 p5 (HGX H100) nodes (8 GPUs, 4 per NUMA node, 96 CPUs per NUMA node) whose kubelets all\nrun topologyManagerPolicy single-numa-node. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 3)]),
        },
        SessionFile {
            name: "host-error",
            about: "The host reaches neither the fleet summary nor the Node list (API server unreachable from\nthe policy-server).",
            summary: S::Error(CONNECTION_REFUSED_SUMMARY),
            list: L::Error(CONNECTION_REFUSED_LIST),
        },
        SessionFile {
            name: "host-error-backtrace",
            about: "As host-error, with the host's errors as kwctl hands them over under RUST_BACKTRACE=1: each goes\non after its first line with its causes and a stack backtrace. The summary is refused by RBAC.",
            summary: S::Error(FORBIDDEN_SUMMARY_WITH_BACKTRACE),
            list: L::Error(CONNECTION_REFUSED_LIST_WITH_BACKTRACE),
        },
        SessionFile {
            name: "no-labeled-nodes",
            about: "A cluster where no node publishes gpu-topology.io labels (the labeler is not deployed, or the\nautoscaled GPU pool is at zero). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(Vec::new()),
        },
        SessionFile {
            name: "nodes-only-two-hgx",
            about: "Two p5 (HGX H100) nodes whose kubelets run best-effort, for capacity.source: nodes: the\npolicy lists the Nodes only and never asks for the fleet summary.",
            summary: S::NotAsked,
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2)]),
        },
        SessionFile {
            name: "hgx-restricted-fleet",
            about: "4 HGX A100 nodes (8 GPUs, 4 + 4 per NUMA node, 56 CPUs per NUMA node, 2 of them reserved on\nnode 0) whose kubelets run topologyManagerPolicy restricted, scope pod, the static CPU Manager.\nNo fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 4)]),
        },
        SessionFile {
            name: "hgx-single-numa-node-56-cpu-fleet",
            about: "8 HGX A100 nodes, gpu-node-00 to gpu-node-07 (4 GPUs and 56 CPUs per NUMA node), whose\nkubelets run single-numa-node with the static CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 8)]),
        },
        SessionFile {
            name: "hgx-full-pcpus-only-fleet",
            about: "2 p5 (HGX H100, SMT-2) nodes whose static CPU Manager runs with full-pcpus-only: exclusive\nCPUs come in whole cores of 2 threads. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(p5(full_pcpus_only(BestEffort)), 2)]),
        },
        SessionFile {
            name: "hgx-container-scope-fleet",
            about: "3 HGX A100 nodes (4 + 4 GPUs) whose kubelets run restricted with topologyManagerScope\ncontainer: each container is aligned on its own. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Container)), 3)]),
        },
        SessionFile {
            name: "hgx-memory-manager-fleet",
            about: "2 HGX A100 nodes (about 503 GiB per NUMA node) whose kubelets run single-numa-node with the\nstatic CPU and Memory Managers: a container's memory is pinned to its GPUs' NUMA node.\nNo fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(memory_static(SingleNumaNode)), 2)]),
        },
        SessionFile {
            name: "hgx-memory-manager-best-effort-fleet",
            about: "2 HGX A100 nodes (about 503 GiB per NUMA node) whose kubelets run best-effort with\ntopologyManagerScope container and the static CPU and Memory Managers: the Topology Manager\nadmits every container, the Memory Manager's Allocate may still fail. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(
                hgx_a100(Kubelet {
                    memory: MemoryManagerPolicy::Static,
                    ..Kubelet::cpu_static(BestEffort, Container)
                }),
                2,
            )]),
        },
        SessionFile {
            name: "half-labeled-fleet",
            about: "A half-labeled fleet: 2 p5 nodes on best-effort carry gpu-topology.io labels; the other GPU\nnodes (a new node pool whose labeler has not run yet) carry none, so the listing, which selects\ngpu-topology.io/gpus, does not return them. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2)]),
        },
        SessionFile {
            name: "steering-fleet",
            about: "A fleet the model steers through: 2 HGX A100 on restricted, 2 HGX A100 on single-numa-node,\n2 A100 PCIe on best-effort (2 GPUs per NUMA node) and 3 g5.2xlarge (1 GPU). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 2),
                nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
                nodes(a100_pcie(Kubelet::cpu_static(BestEffort, Pod)), 2),
                nodes(g5_2xlarge(Kubelet::NONE), 3),
            ]),
        },
        SessionFile {
            name: "hgx-restricted-and-single-gpu-fleet",
            about: "2 HGX A100 nodes (4 + 4 GPUs, 56 CPUs per NUMA node) whose kubelets run restricted, and 3\ng5.2xlarge nodes (1 A10G GPU, the kubelet's default managers). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 2),
                nodes(g5_2xlarge(Kubelet::NONE), 3),
            ]),
        },
        SessionFile {
            name: "old-labeler-single-numa-node-fleet",
            about: "3 p5 (HGX H100) nodes whose kubelets run single-numa-node, still labeled by a labeler older\nthan the shape label: gpus 8, gpus-per-numa-max 4 and the manager policies, no per-NUMA-node\nlists, no options, no shape. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(old_labeler(p5(Kubelet::cpu_static(SingleNumaNode, Pod))), 3)]),
        },
        SessionFile {
            name: "one-hgx-restricted-node",
            about: "A one-node GPU fleet: 1 HGX A100 node (4 + 4 GPUs, 56 CPUs per NUMA node) whose kubelet runs\nrestricted, scope pod, the static CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 1)]),
        },
        SessionFile {
            name: "hgx-rdma-fleet",
            about: "GPUDirect RDMA nodes: 2 HGX A100 (4 + 4 GPUs) whose 8 InfiniBand HCAs (rdma/ib) sit 4 + 4 next\nto the GPUs, and 2 whose HCAs all sit on socket 0 (8 + 0); kubelets on restricted, scope pod, the\nstatic CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(with_devices(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), &[("rdma/ib", &[4, 4])]), 2),
                nodes(with_devices(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), &[("rdma/ib", &[8, 0])]), 2),
            ]),
        },
        SessionFile {
            name: "hgx-rdma-one-socket-fleet",
            about: "3 HGX A100 nodes (4 + 4 GPUs) whose 8 InfiniBand HCAs (rdma/ib) all sit on socket 0 (8 + 0);\nkubelets on restricted, scope pod, the static CPU Manager. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(
                with_devices(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), &[("rdma/ib", &[8, 0])]),
                3,
            )]),
        },
        SessionFile {
            name: "hgx-rdma-unpublished-fleet",
            about: "2 HGX A100 nodes on restricted whose labeler is not configured for rdma/ib: the HCAs are\nnot published, so the kubelet's answer for a pod that asks for them is unknown. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(hgx_a100(Kubelet::cpu_static(Restricted, Pod)), 2)]),
        },
        SessionFile {
            name: "mig-mixed-a100-fleet",
            about: "MIG under the device plugin's mixed strategy: 2 HGX A100 80GB nodes whose 8 GPUs are each cut\ninto 7 nvidia.com/mig-1g.10gb slices (28 + 28 per NUMA node, no whole nvidia.com/gpu left), and\n2 HGX A100 nodes without MIG; kubelets on single-numa-node, the static CPU Manager. No fleet\nsummary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(mig_mixed(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), "1g.10gb", 7), 2),
                nodes(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
            ]),
        },
        SessionFile {
            name: "mig-single-h100-fleet",
            about: "MIG under the device plugin's single strategy: 2 p5 (8 H100 80GB) nodes whose GPUs are each\ncut into 7 1g.10gb slices, offered as nvidia.com/gpu (28 + 28 per NUMA node, product\nNVIDIA-H100-80GB-HBM3-MIG-1g.10gb); kubelets on single-numa-node, the static CPU Manager. No\nfleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(
                mig_single(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", 7),
                2,
            )]),
        },
        SessionFile {
            name: "grace-fleet",
            about: "Grace machines: 2 GB200 trays (34 NUMA nodes, 2 with CPUs) on kubelet 1.36 with\nmax-allowable-numa-nodes 34, 2 such trays on kubelet 1.35, 2 on 1.36 whose kubelets keep the\ndefault max-allowable-numa-nodes 8, and 1 GH200 (9 NUMA nodes) on 1.36; single-numa-node, scope\npod, the static CPU Manager. Labels as the labeler writes them for its gb200-tray and gh200\ntrees. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(gb200_tray(KubeletVersion::new(1, 36), 34), 2),
                nodes(gb200_tray(KubeletVersion::new(1, 35), 34), 2),
                nodes(gb200_tray(KubeletVersion::new(1, 36), 8), 2),
                nodes(gh200(KubeletVersion::new(1, 36), 34), 1),
            ]),
        },
        SessionFile {
            name: "gb200-default-max-numa-and-hgx-fleet",
            about: "2 GB200 trays (34 NUMA nodes) whose kubelets keep the default max-allowable-numa-nodes 8 with\nsingle-numa-node (their Topology Manager does not start, nor the kubelet), and 2 p5 (HGX H100)\non single-numa-node. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(gb200_tray(KubeletVersion::new(1, 36), 8), 2),
                nodes(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 2),
            ]),
        },
        SessionFile {
            name: "gb200-default-max-numa-fleet",
            about: "2 GB200 trays (34 NUMA nodes) whose kubelets keep the default max-allowable-numa-nodes 8 with\nsingle-numa-node: their Topology Manager does not start, nor the kubelet. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(gb200_tray(KubeletVersion::new(1, 36), 8), 2)]),
        },
        SessionFile {
            name: "gb200-kubelet-versions-fleet",
            about: "4 GB200 trays (34 NUMA nodes) with max-allowable-numa-nodes 34 and single-numa-node: 2 on\nkubelet 1.35, whose device hints range over every NUMA node, and 2 on 1.36, whose device hints\nrange over the GPUs' NUMA nodes only. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(gb200_tray(KubeletVersion::new(1, 35), 34), 2),
                nodes(gb200_tray(KubeletVersion::new(1, 36), 34), 2),
            ]),
        },
        SessionFile {
            name: "hgx-stale-labeler-fleet",
            about: "4 p5 (HGX H100) on single-numa-node, labeled by the kubernetes sink: the heartbeats of 3 are\ndated 2099 (fresh whenever the session is replayed: a heartbeat ahead of the clock is taken as\nfresh), that of ip-10-0-0-3.ec2.internal 2025-11-01 (its labeler stopped). No fleet summary\n(404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 3, "2099-12-03T11:55:00Z"),
                confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 1, "2025-11-01T00:00:00Z"),
            ]),
        },
        SessionFile {
            name: "fleet-summary-stale-labeler",
            about: "The fleet summary the summarizer writes for the fleet of hgx-stale-labeler-fleet.yml, with the\nlabelers' oldest heartbeats: ip-10-0-0-3.ec2.internal last confirmed on 2025-11-01. No Node is\nlisted.",
            summary: S::Of(
                vec![
                    confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 3, "2099-12-03T11:55:00Z"),
                    confirmed(p5(Kubelet::cpu_static(SingleNumaNode, Pod)), 1, "2025-11-01T00:00:00Z"),
                ],
                SUMMARY_WRITTEN_AT,
            ),
            list: L::NotAsked,
        },
        SessionFile {
            name: "gb200-reported-versions-fleet",
            about: "4 GB200 trays (34 NUMA nodes) with max-allowable-numa-nodes 34 and single-numa-node, labeled\nwithout a kubelet-version label (the nodefeature sink, no --kubelet-version), so one shape label:\ntheir Nodes report kubelet v1.36.2 on 2 and v1.35.4 on 2 (a kubelet upgrade half done). No fleet\nsummary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                reporting(gb200_tray_unversioned(34), 2, "v1.36.2"),
                reporting(gb200_tray_unversioned(34), 2, "v1.35.4"),
            ]),
        },
        SessionFile {
            name: "gb200-reported-1-36-fleet",
            about: "3 GB200 trays (34 NUMA nodes) with max-allowable-numa-nodes 34 and single-numa-node, labeled\nwithout a kubelet-version label (the nodefeature sink, no --kubelet-version); their Nodes report\nkubelet v1.36.2. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![reporting(gb200_tray_unversioned(34), 3, "v1.36.2")]),
        },
        SessionFile {
            name: "gb200-kubelet-1-35-fleet",
            about: "3 GB200 trays (34 NUMA nodes) on kubelet 1.35 with max-allowable-numa-nodes 34 and\nsingle-numa-node: every GPU pod's hint search walks 2^34 NUMA masks. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(gb200_tray(KubeletVersion::new(1, 35), 34), 3)]),
        },
        SessionFile {
            name: "mi300x-cpx-fleet",
            about: "2 nodes of 8 AMD MI300X in CPX/NPS4 (64 logical amd.com/gpu, 16 per NUMA node, 4 NUMA nodes\nof 96 CPUs) whose kubelets run single-numa-node, scope pod, the static CPU Manager. Labels as the\nlabeler writes them for its mi300x-cpx-nps4 tree, with the kubelet's. No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![nodes(mi300x_cpx(Kubelet::cpu_static(SingleNumaNode, Pod)), 2)]),
        },
        SessionFile {
            name: "old-labeler-fleet",
            about: "A fleet half upgraded: 2 p5 (HGX H100) nodes on best-effort labeled by the current labeler, and\n3 HGX A100 nodes on best-effort still labeled by a labeler older than the shape label (counts\nand manager policies only: no per-NUMA-node lists, no options, no shape). No fleet summary (404).",
            summary: S::Absent,
            list: L::Nodes(vec![
                nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2),
                nodes(old_labeler(hgx_a100(Kubelet::cpu_static(BestEffort, Pod))), 3),
            ]),
        },
        SessionFile {
            name: "dra-hgx-h100-fleet",
            about: "A DRA fleet for claims: the NVIDIA DRA driver's and dranet's DeviceClasses, and 2 HGX H100 nodes\nwhose ResourceSlices publish 8 GPUs (4 per NUMA node, resource.kubernetes.io/numaNode) and 8 RDMA\nNICs (4 per NUMA node, also dra.net/numaNode). The policy lists the classes, then the slices.",
            summary: S::Absent,
            list: L::Dra(dra_hgx_fleet(Vec::new())),
        },
        SessionFile {
            name: "dra-hgx-h100-summary",
            about: "The DRA fleet of dra-hgx-h100-fleet.yml read from the fleet summary: the DeviceClasses are listed,\nthen the summarizer's ConfigMap holds the nodes' devices grouped (draDevices), so no ResourceSlice\nis listed.",
            summary: S::OfTheList(SUMMARY_WRITTEN_AT),
            list: L::Dra(dra_hgx_fleet(Vec::new())),
        },
        dra_pod_session(
            "dra-pod-double-gpu-fleet",
            "For a Pod naming the NVIDIA quick start's ResourceClaimTemplate gpu-test1/double-gpu (2 GPUs):\nthe template as get_resource answers it, then the DRA fleet of dra-hgx-h100-fleet.yml.",
            ("gpu-test1", "double-gpu"),
            r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}]}"#,
        ),
        dra_pod_session(
            "dra-pod-sixteen-gpus-fleet",
            "For a Pod naming ResourceClaimTemplate research/sixteen-gpus (16 GPUs, more than any node\npublishes): the template, then the DRA fleet of dra-hgx-h100-fleet.yml.",
            ("research", "sixteen-gpus"),
            r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":16}}]}"#,
        ),
        dra_pod_session(
            "dra-pod-single-gpu-twice-fleet",
            "For the NVIDIA quick start's Pod whose two containers each get a claim from ResourceClaimTemplate\ngpu-test1/single-gpu (1 GPU; v1beta1 in the demo, answered as v1): the template once, then the DRA\nfleet of dra-hgx-h100-fleet.yml.",
            ("gpu-test1", "single-gpu"),
            r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com"}}]}"#,
        ),
        SessionFile {
            name: "dra-cpu-generated-claim-fleet",
            about: "For the ResourceClaim the controller generated from gpu-test1/double-gpu for Pod\ngpu-test1/trainer-0: 2 HGX H100 nodes publishing 8 GPUs and 8 RDMA NICs, and dra-driver-cpu's\ngrouped CPUs (56 per NUMA node). No fleet summary (404): the classes, the slices, then the owner\npod (uncached: its uid and containers' resources).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(
                Vec::new(),
                vec![crate::dra_fleets::DraPod {
                    namespace: "gpu-test1",
                    name: "trainer-0",
                    uid: "5f0c5d1e-8a7b-4c3d-9e2f-1a2b3c4d5e6f",
                    spec: TRAINER_POD_SPEC,
                }],
                (2, 0),
            )),
        },
        SessionFile {
            name: "dra-cpu-generated-claim-no-pod-fleet",
            about: "The fleet of dra-cpu-generated-claim-fleet.yml for a policy that may not read Pods: the classes\nand the slices, and no owner pod (the host refuses it before any exchange).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(Vec::new(), Vec::new(), (2, 0))),
        },
        SessionFile {
            name: "dra-cpu-pod-double-gpu-fleet",
            about: "For a Pod naming ResourceClaimTemplate gpu-test1/double-gpu (2 GPUs on one NUMA node): the\ntemplate, then 2 HGX H100 nodes whose dra-driver-cpu publishes grouped CPUs (56 per NUMA node).\nNo fleet summary (404).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(vec![double_gpu_get()], Vec::new(), (2, 0))),
        },
        SessionFile {
            name: "dra-cpu-half-fleet",
            about: "For a Pod naming ResourceClaimTemplate gpu-test1/double-gpu: the template, then 4 HGX H100\nnodes, 2 of which run dra-driver-cpu (grouped CPUs, 56 per NUMA node). No fleet summary (404).",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(dra_cpu_fleet(vec![double_gpu_get()], Vec::new(), (2, 2))),
        },
        SessionFile {
            name: "dra-vfio-fleet",
            about: "A DRA fleet of VFIO passthrough GPUs: 2 HGX H100 nodes whose NVIDIA DRA driver publishes\n8 VFIO devices (4 per NUMA node) with the Fabric Manager's partitions (partition1/2/4/8,\nFabricManagerPartitioning). No fleet summary (404): the classes, then the slices.",
            summary: SummaryAnswer::Absent,
            list: ListAnswer::Dra(crate::dra_fleets::DraFleet {
                gets: Vec::new(),
                pods: Vec::new(),
                class_files: &["nvidia.yaml"],
                nodes: vec![crate::dra_fleets::DraNodes {
                    gpus_as: crate::dra_fleets::GpuDevices::Vfio,
                    nics_per_numa: &[],
                    ..dra_hgx_nodes("dra-hgx-vfio", 2, &[])
                }],
            }),
        },
        SessionFile {
            name: "fleet-summary-dra-extended-resource",
            about: "2 p5 (HGX H100) nodes on best-effort, in a fresh fleet summary written with --dra: DeviceClass\ngpu.nvidia.com maps nvidia.com/gpu (extendedResourceName, KEP-5004), and 2 more HGX H100 nodes\npublish its devices through the NVIDIA DRA driver.",
            summary: SummaryAnswer::OfWithDra(
                vec![nodes(p5(Kubelet::cpu_static(BestEffort, Pod)), 2)],
                SUMMARY_WRITTEN_AT,
                dra_hgx_fleet(Vec::new()),
            ),
            list: ListAnswer::NotAsked,
        },
    ]
    .into_iter()
    .chain(crate::binding_sessions::session_files())
    .collect()
}

/// A session for a Pod naming one ResourceClaimTemplate (`namespace`,
/// `name`) whose `devices` are given as JSON: the template as get_resource
/// answers it, the summary's 404, then the DRA fleet of
/// `dra-hgx-h100-fleet`.
fn dra_pod_session(
    name: &'static str,
    about: &'static str,
    (namespace, template): (&'static str, &'static str),
    devices: &'static str,
) -> SessionFile {
    SessionFile {
        name,
        about,
        summary: SummaryAnswer::Absent,
        list: ListAnswer::Dra(dra_hgx_fleet(vec![crate::dra_fleets::DraGet {
            kind: "ResourceClaimTemplate",
            namespace,
            name: template,
            devices,
        }])),
    }
}

/// The template `gpu-test1/double-gpu` (completed), for a pod naming it.
fn double_gpu_get() -> crate::dra_fleets::DraGet {
    crate::dra_fleets::DraGet {
        kind: "ResourceClaimTemplate",
        namespace: "gpu-test1",
        name: "double-gpu",
        devices: DOUBLE_GPU_COMPLETED,
    }
}

/// The DRA fleet of `dra-hgx-h100-fleet`, after `gets`.
fn dra_hgx_fleet(gets: Vec<crate::dra_fleets::DraGet>) -> crate::dra_fleets::DraFleet {
    crate::dra_fleets::DraFleet {
        gets,
        pods: Vec::new(),
        class_files: &["nvidia.yaml", "nics.yaml"],
        nodes: vec![dra_hgx_nodes("dra-hgx", 2, &[])],
    }
}

/// `count` HGX H100 nodes publishing 8 full GPUs and 8 RDMA NICs (4 + 4
/// each), and dra-driver-cpu's grouped CPUs `cpus_per_numa` (none: it does
/// not run there).
fn dra_hgx_nodes(
    prefix: &'static str,
    count: usize,
    cpus_per_numa: &'static [usize],
) -> crate::dra_fleets::DraNodes {
    crate::dra_fleets::DraNodes {
        prefix,
        count,
        product: "NVIDIA H100 80GB HBM3",
        gpus_per_numa: &[4, 4],
        gpus_as: crate::dra_fleets::GpuDevices::Full,
        nics_per_numa: &[4, 4],
        cpus_per_numa,
    }
}

/// The template `gpu-test1/double-gpu` as the policy admitted it (its two
/// GPUs constrained to one NUMA node), as get_resource answers it.
const DOUBLE_GPU_COMPLETED: &str = r#"{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","count":2}}],"constraints":[{"requests":["gpu"],"matchAttribute":"resource.kubernetes.io/numaNode"}]}"#;

/// The pod `gpu-test1/trainer-0` that owns the claim generated from
/// `double-gpu`: one container using the whole claim, with 16 whole CPUs.
const TRAINER_POD_SPEC: &str = r#"{"containers":[{"name":"trainer","resources":{"claims":[{"name":"gpus"}],"limits":{"cpu":"16","memory":"64Gi"},"requests":{"cpu":"16","memory":"64Gi"}}}]}"#;

/// A DRA fleet where dra-driver-cpu runs on `with_cpus` of the HGX nodes
/// (grouped, 56 CPUs per NUMA node) and not on `without`.
fn dra_cpu_fleet(
    gets: Vec<crate::dra_fleets::DraGet>,
    pods: Vec<crate::dra_fleets::DraPod>,
    (with_cpus, without): (usize, usize),
) -> crate::dra_fleets::DraFleet {
    let mut nodes = vec![dra_hgx_nodes("dra-hgx-cpu", with_cpus, &[56, 56])];
    if without > 0 {
        nodes.push(dra_hgx_nodes("dra-hgx", without, &[]));
    }
    crate::dra_fleets::DraFleet {
        gets,
        pods,
        class_files: &["nvidia.yaml", "nics.yaml", "dra-cpu.yaml"],
        nodes,
    }
}
