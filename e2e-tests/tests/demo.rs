//! `make demo`, the README's first command, shows a newcomer each outcome
//! against a replayed labeled fleet (a Pod accepted and steered, a Pod
//! rejected with its reason, a Deployment refused at apply time) and the
//! run without a cluster view; its fleet file is what the generator writes.
//!
//! The command is the Makefile's own: `make -n demo` prints the `evaluate`
//! arguments of its recipe, and this test runs the `evaluate` binary cargo
//! built for it with them (a nested `cargo run` would wait on the build
//! directory lock this test run holds).

use e2e_tests::fleets::{
    a100_pcie, demo_session_file, four_pcie, g5_2xlarge, hgx_a100, p5, render, Kubelet,
    DEMO_SESSION_PATH,
};
use e2e_tests::repo_root;
use e2e_tests::session::Session;
use gpu_topology::TopologyManagerPolicy::{BestEffort, Restricted, SingleNumaNode};
use gpu_topology::TopologyManagerScope::Pod;
use rstest::rstest;
use std::process::Command;
use std::sync::OnceLock;

/// What separates `make`'s recipe line from the `evaluate` arguments.
const EVALUATE_RUN: &str = "--bin evaluate -- ";

/// The `evaluate` arguments of the `demo` recipe, as `make -n` prints them
/// (continuation lines joined). KWCTL is removed from the environment: the
/// recipe differs with it, and the kwctl bats suite runs that form.
fn demo_arguments() -> String {
    let output = Command::new("make")
        .args(["--no-print-directory", "-n", "demo"])
        .current_dir(repo_root())
        .env_remove("KWCTL")
        .env_remove("MAKEFLAGS")
        .env_remove("MAKELEVEL")
        .output()
        .expect("make is needed to read the demo recipe");
    assert!(output.status.success(), "make -n demo failed: {output:?}");
    let recipe = String::from_utf8_lossy(&output.stdout).replace("\\\n", " ");
    let line = recipe
        .lines()
        .find(|line| line.contains(EVALUATE_RUN))
        .unwrap_or_else(|| panic!("the demo recipe runs no `evaluate`:\n{recipe}"));
    line.split_once(EVALUATE_RUN).unwrap().1.to_owned()
}

/// The demo's output, once for all tests: the recipe's arguments given to
/// the `evaluate` binary through the shell, as make does (globs, quotes).
fn demo_output() -> &'static str {
    static OUTPUT: OnceLock<String> = OnceLock::new();
    OUTPUT.get_or_init(|| {
        let arguments = demo_arguments();
        let output = Command::new("bash")
            .arg("-c")
            .arg(format!("exec \"$EVALUATE\" {arguments}"))
            .env("EVALUATE", env!("CARGO_BIN_EXE_evaluate"))
            .current_dir(repo_root())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "evaluate {arguments} failed: {}\n{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    })
}

/// The demo's runs, each from its `=== ` title line to the next.
fn runs() -> Vec<&'static str> {
    demo_output().split("\n=== ").skip(1).collect()
}

/// The report of `request` (a path under examples/) in run `run`: from its
/// first line to the blank line that ends it.
fn report(run: usize, request: &str) -> &'static str {
    let text = runs()[run];
    let start = text
        .find(&format!("\nexamples/{request}: "))
        .unwrap_or_else(|| panic!("run {run} has no report of {request}:\n{text}"));
    let rest = &text[start + 1..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

fn shape(machine: e2e_tests::fleets::Machine) -> String {
    machine.topology.shape_id().to_string()
}

#[test]
fn demo_fleet_is_what_the_generator_writes() {
    let written = render(&demo_session_file()).unwrap();
    let checked_in = std::fs::read_to_string(repo_root().join(DEMO_SESSION_PATH)).unwrap();
    assert!(
        written == checked_in,
        "regenerate with `cargo run -p e2e-tests --bin sessions`: {DEMO_SESSION_PATH}"
    );
    Session::parse(&written).unwrap();
}

#[test]
fn the_demo_says_first_what_it_replays() {
    let runs = runs();
    assert_eq!(runs.len(), 2, "{}", demo_output());
    let header = &runs[0][..runs[0].find("settings: ").unwrap()];
    assert!(header.starts_with("1/2. With a cluster view"), "{header}");
    assert!(
        header.contains("Replaying examples/cluster/fleet.yml"),
        "{header}"
    );
    assert!(
        header.contains("ConfigMap kube-system/gpu-topology-fleet: the host answers an error: ApiError: configmaps \"gpu-topology-fleet\" not found"),
        "{header}"
    );
    assert!(
        header.contains("the Node list: 11 labeled GPU nodes of 5 shapes"),
        "{header}"
    );
    for (digest, name, nodes) in [
        (
            shape(p5(Kubelet::cpu_static(Restricted, Pod))),
            "p5.48xlarge, restricted",
            2,
        ),
        (
            shape(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod))),
            "NVIDIA-A100-SXM4-80GB, single-numa-node",
            2,
        ),
        (
            shape(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE)),
            "g6.12xlarge, none",
            3,
        ),
        (
            shape(a100_pcie(Kubelet::cpu_static(BestEffort, Pod))),
            "Standard_NC96ads_A100_v4, best-effort",
            2,
        ),
        (shape(g5_2xlarge(Kubelet::NONE)), "g5.2xlarge, none", 2),
    ] {
        let line = format!("    {digest} {name}: {nodes} nodes, ");
        assert!(header.contains(&line), "no {line:?} in\n{header}");
    }
    assert!(runs[1].starts_with("2/2. No cluster view"), "{}", runs[1]);
    assert!(
        runs[1].contains("No cluster view: no session"),
        "{}",
        runs[1]
    );
}

#[rstest]
#[case::accepted_and_steered(0, "requests/training-pod.json", &[
    "Pod research/llm-finetune-worker-0 (CREATE)",
    "decision: accepted, mutated",
    "  node affinity after admission:\n    required: ",
    " AND gpu-topology.io/shape NotIn ",
    "(g5.2xlarge, none)",
    "    preferred (weight 100): gpu-topology.io/shape In ",
    "(p5.48xlarge, restricted)",
    "(NVIDIA-A100-SXM4-80GB, single-numa-node)",
])]
#[case::rejected_with_its_reason(0, "requests/eight-gpu-pod.json", &[
    "decision: REJECTED",
    "message:  GPU pod cannot be placed: it needs 8 GPUs",
    "topologyManagerPolicy restricted",
    "TopologyAffinityError",
])]
#[case::workload_refused_at_apply(0, "requests/llama-70b-deployment.json", &[
    "Deployment inference/llama-3-70b-instruct (CREATE)",
    "decision: REJECTED",
    "message:  Deployment \"llama-3-70b-instruct\": GPU pod cannot be placed",
])]
#[case::no_cluster_view_accepts_unchecked(1, "requests/eight-gpu-pod.json", &[
    "decision: accepted",
    "GPU fit not checked",
])]
#[case::no_cluster_view_workload_unchecked(1, "requests/llama-70b-deployment.json", &[
    "decision: accepted",
    "GPU fit not checked",
])]
fn the_demo_shows_each_outcome(
    #[case] run: usize,
    #[case] request: &str,
    #[case] fragments: &[&str],
) {
    let report = report(run, request);
    for fragment in fragments {
        assert!(report.contains(fragment), "no {fragment:?} in\n{report}");
    }
}

#[test]
fn steering_names_the_shapes_it_avoids_and_prefers() {
    let report = report(0, "requests/training-pod.json");
    // The 1-GPU nodes, and the L4 nodes whose 186 GiB cannot hold the
    // pod's 256Gi (the node's size is in the fit, issue #23 item 3).
    let too_small = shape(four_pcie("g6.12xlarge", "NVIDIA-L4", Kubelet::NONE));
    let too_few_gpus = shape(g5_2xlarge(Kubelet::NONE));
    assert!(
        report.contains(&format!(
            "NotIn {too_small} (g6.12xlarge, none), {too_few_gpus} (g5.2xlarge, none)"
        )),
        "{report}"
    );
    for preferred in [
        shape(p5(Kubelet::cpu_static(Restricted, Pod))),
        shape(hgx_a100(Kubelet::cpu_static(SingleNumaNode, Pod))),
    ] {
        assert!(report.contains(&preferred), "no {preferred} in\n{report}");
    }
}
