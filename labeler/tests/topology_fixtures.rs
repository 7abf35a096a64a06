//! Acceptance: every published `nvidia-smi topo` / `rocm-smi` fixture parses to
//! its ground truth and yields the labels that truth implies.

use crate::common;

use common::{labels_with_shape, topology_fixture, topology_fixtures, ROCM_SMI_FIXTURE};
use gpu_topology_labeler::model::{Groups, NumaReading, ToolReport};
use gpu_topology_labeler::parse::nvidia_smi::{self, NvlinkView};
use gpu_topology_labeler::parse::rocm_smi;
use rstest::rstest;
use serde_json::Value;
use std::collections::BTreeMap;

fn ground_truth(name: &str) -> Value {
    let text = std::fs::read_to_string(topology_fixtures().join("ground_truth.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    all.get(name)
        .unwrap_or_else(|| panic!("{name} has no ground truth"))
        .clone()
}

fn labels_of(report: ToolReport) -> BTreeMap<String, String> {
    common::labels_of_reports(vec![report])
}

/// The ground truth's NUMA cell: `N/A`, a node id, or `~n` (inferred from CPU
/// Affinity, which the labeler must never do: no NUMA column means no NUMA).
fn expected_numa(cell: &str) -> NumaReading {
    match cell {
        "N/A" => NumaReading::NotAvailable,
        inferred if inferred.starts_with('~') => NumaReading::NotReported,
        node => NumaReading::Node(node.parse().unwrap()),
    }
}

#[rstest]
#[case::dgx1_v100_driver_440_no_numa_column(
    "dgx1-v100-drv440.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("interconnect", "nvlink"), ("nvlink-group-max", "4")]
)]
#[case::dgx1_v100_hand_edited_whitespace(
    "dgx1-v100-drv470-handedited.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "4"), ("interconnect", "nvlink"), ("numa-nodes", "2"), ("nvlink-group-max", "4")]
)]
#[case::dgx1_topo_mp_hides_nvlink(
    "dgx1-v100-topo-mp-pcie-only.txt", NvlinkView::Hidden,
    &[("gpus", "8"), ("gpus-per-numa-max", "4"), ("numa-nodes", "2"), ("pcie-switch-group-max", "2")]
)]
#[case::dgx_a100_nps4(
    "dgx-a100-mlx5-nps4.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "2"), ("interconnect", "nvswitch"), ("numa-nodes", "4"), ("nvlink-group-max", "8")]
)]
#[case::a100_sxm_single_numa_17_nics(
    "a100-sxm-8gpu-17nic-1numa.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "8"), ("interconnect", "nvswitch"), ("numa-nodes", "1"), ("nvlink-group-max", "8")]
)]
#[case::a10_vm_all_sys_one_numa(
    "4x-a10-all-sys-1numa-vm.txt", NvlinkView::Shown,
    &[("gpus", "4"), ("gpus-per-numa-max", "4"), ("interconnect", "pcie"), ("numa-nodes", "1"), ("nvlink-group-max", "1"), ("pcie-switch-group-max", "1")]
)]
#[case::gtx1080ti_numa_not_available(
    "2x-gtx1080ti-phb-numa-na.txt", NvlinkView::Shown,
    &[("gpus", "2"), ("interconnect", "pcie"), ("nvlink-group-max", "1"), ("pcie-switch-group-max", "1")]
)]
#[case::h100_sxm_matrix_without_legend(
    "h100-sxm-8gpu-2numa.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "4"), ("interconnect", "nvswitch"), ("numa-nodes", "2"), ("nvlink-group-max", "8")]
)]
#[case::h100_topo_mp_container_cpuset(
    "8x-h100-topo-mp-12nic-container-cpuset.txt", NvlinkView::Hidden,
    &[("gpus", "8"), ("gpus-per-numa-max", "4"), ("numa-nodes", "2"), ("pcie-switch-group-max", "1")]
)]
#[case::a100_pcie_one_active_bridge(
    "4x-a100-pcie-nvlink-bridge-pairs.txt", NvlinkView::Shown,
    &[("gpus", "4"), ("gpus-per-numa-max", "2"), ("interconnect", "nvlink"), ("numa-nodes", "2"), ("nvlink-group-max", "2")]
)]
#[case::v100_hybrid_cube_mesh_driver_580(
    "8x-v100-sxm2-hybrid-cube-drv580-nic.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "4"), ("interconnect", "nvlink"), ("numa-nodes", "2"), ("nvlink-group-max", "4")]
)]
#[case::l40s_two_sockets(
    "4x-l40s-2numa-2nic.txt", NvlinkView::Shown,
    &[("gpus", "4"), ("gpus-per-numa-max", "2"), ("interconnect", "pcie"), ("numa-nodes", "2"), ("nvlink-group-max", "1"), ("pcie-switch-group-max", "1")]
)]
#[case::rtx5090_single_numa(
    "2x-rtx5090-phb-1numa.txt", NvlinkView::Shown,
    &[("gpus", "2"), ("gpus-per-numa-max", "2"), ("interconnect", "pcie"), ("numa-nodes", "1"), ("nvlink-group-max", "1"), ("pcie-switch-group-max", "1")]
)]
#[case::pcie_switch_excerpt_with_cut_legend(
    "8x-pcie-pix-pxb-old-driver-excerpt.txt", NvlinkView::Undetermined,
    &[("gpus", "8"), ("pcie-switch-group-max", "4")]
)]
// Derived fixtures (SOURCES.md): what the original gives, read despite the change.
#[case::slurm_cpuset_empties_cpu_affinity_of_half_the_gpus(
    "8x-v100-sxm2-hybrid-cube-drv580-nic-slurm-cpuset.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "4"), ("interconnect", "nvlink"), ("numa-nodes", "2"), ("nvlink-group-max", "4")]
)]
#[case::slurm_cpuset_in_the_format_without_gpu_numa_id(
    "dgx-a100-mlx5-nps4-slurm-cpuset.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("gpus-per-numa-max", "2"), ("interconnect", "nvswitch"), ("numa-nodes", "4"), ("nvlink-group-max", "8")]
)]
#[case::terminal_capture_with_an_underlined_header(
    "2x-rtx5090-phb-1numa-terminal-ansi.txt", NvlinkView::Shown,
    &[("gpus", "2"), ("gpus-per-numa-max", "2"), ("interconnect", "pcie"), ("numa-nodes", "1"), ("nvlink-group-max", "1"), ("pcie-switch-group-max", "1")]
)]
#[case::terminal_capture_of_a_space_aligned_old_driver(
    "dgx1-v100-drv440-terminal-ansi.txt", NvlinkView::Shown,
    &[("gpus", "8"), ("interconnect", "nvlink"), ("nvlink-group-max", "4")]
)]
fn nvidia_smi_fixture_matches_ground_truth(
    #[case] file: &str,
    #[case] view: NvlinkView,
    #[case] expected_labels: &[(&str, &str)],
) {
    let truth = ground_truth(file);
    let topo = nvidia_smi::parse(&topology_fixture(file)).unwrap();

    assert_eq!(
        topo.gpus.len() as u64,
        truth["gpus"].as_u64().unwrap(),
        "GPU count"
    );
    assert_eq!(
        topo.nics as u64,
        truth["nics"].as_u64().unwrap(),
        "NIC count"
    );
    assert_eq!(topo.view, view, "NVLink view");
    for gpu in &topo.gpus {
        let cell = truth["numa"][&gpu.name].as_str().unwrap();
        assert_eq!(gpu.numa, expected_numa(cell), "NUMA of {}", gpu.name);
    }

    let truth_cliques: Vec<Vec<String>> =
        serde_json::from_value(truth["nvlink_max_cliques"].clone()).unwrap();
    let mut truth_cliques: Vec<Vec<String>> = truth_cliques;
    truth_cliques.iter_mut().for_each(|c| c.sort());
    truth_cliques.sort();
    let report = topo.into_report(false);
    match report.links.fabric_cliques() {
        Some(Groups::Listed(cliques)) => {
            let mut named: Vec<Vec<String>> = cliques
                .iter()
                .map(|c| c.iter().map(|&i| report.gpus[i].name.clone()).collect())
                .collect();
            named.sort();
            assert_eq!(named, truth_cliques, "NVLink cliques");
        }
        Some(Groups::TooMany) => panic!("a real machine's NVLink groups are listed"),
        // A view that cannot show NVLinks must not contradict the truth: it shows none.
        None => assert!(
            truth_cliques.is_empty(),
            "hidden view, but the truth has cliques"
        ),
    }

    let labels = labels_of(report);
    let expected_per_numa = if truth["numa_inferred_from_cpu_affinity"].as_bool().unwrap() {
        None
    } else {
        truth["max_gpus_per_numa"].as_u64().map(|n| n.to_string())
    };
    assert_eq!(
        labels.get("gpu-topology.io/gpus-per-numa-max"),
        expected_per_numa.as_ref(),
        "gpus-per-numa-max"
    );
    assert_eq!(labels, common::labels_with_shape(expected_labels));
}

#[test]
fn every_fixture_in_the_folder_is_covered() {
    // A fixture added to tests/fixtures/topology/ without a case above must not go unnoticed.
    let covered = [
        "dgx1-v100-drv440.txt",
        "dgx1-v100-drv470-handedited.txt",
        "dgx1-v100-topo-mp-pcie-only.txt",
        "dgx-a100-mlx5-nps4.txt",
        "a100-sxm-8gpu-17nic-1numa.txt",
        "4x-a10-all-sys-1numa-vm.txt",
        "2x-gtx1080ti-phb-numa-na.txt",
        "h100-sxm-8gpu-2numa.txt",
        "8x-h100-topo-mp-12nic-container-cpuset.txt",
        "4x-a100-pcie-nvlink-bridge-pairs.txt",
        "8x-v100-sxm2-hybrid-cube-drv580-nic.txt",
        "4x-l40s-2numa-2nic.txt",
        "2x-rtx5090-phb-1numa.txt",
        "8x-pcie-pix-pxb-old-driver-excerpt.txt",
        "8x-v100-sxm2-hybrid-cube-drv580-nic-slurm-cpuset.txt",
        "dgx-a100-mlx5-nps4-slurm-cpuset.txt",
        "2x-rtx5090-phb-1numa-terminal-ansi.txt",
        "dgx1-v100-drv440-terminal-ansi.txt",
    ];
    assert_eq!(common::nvidia_smi_fixture_names(), {
        let mut names: Vec<String> = covered.iter().map(|s| (*s).to_owned()).collect();
        names.sort();
        names
    });
}

#[test]
fn running_topo_m_ourselves_settles_the_excerpt_view() {
    // The excerpt's legend is cut, so from a file the view is undetermined; output
    // of our own `nvidia-smi topo -m` always shows NVLinks, so no NV# cell means none.
    let topo =
        nvidia_smi::parse(&topology_fixture("8x-pcie-pix-pxb-old-driver-excerpt.txt")).unwrap();
    let labels = labels_of(topo.into_report(true));
    assert_eq!(labels["gpu-topology.io/nvlink-group-max"], "1");
    assert_eq!(labels["gpu-topology.io/interconnect"], "pcie");
}

#[test]
fn amd_rocm_smi_fixture_matches_its_sources_entry() {
    // SOURCES.md #19: NUMA 0,1,2,3 (one GPU per node), one XGMI clique of all four.
    let report = rocm_smi::parse(&topology_fixture(ROCM_SMI_FIXTURE)).unwrap();
    let numa: Vec<NumaReading> = report.gpus.iter().map(|g| g.numa).collect();
    assert_eq!(numa, (0..4).map(NumaReading::Node).collect::<Vec<_>>());
    assert_eq!(
        report.links.fabric_cliques(),
        Some(Groups::Listed(vec![vec![0, 1, 2, 3]]))
    );
    assert_eq!(
        labels_of(report),
        labels_with_shape(&[
            ("gpus", "4"),
            ("gpus-per-numa-max", "1"),
            ("interconnect", "xgmi"),
            ("numa-nodes", "4"),
            ("nvlink-group-max", "4")
        ])
    );
}

/// The first line of `text` whose first word is `GPU0`: the header row.
fn header_row(lines: &[String]) -> usize {
    lines
        .iter()
        .position(|line| line.split_whitespace().next() == Some("GPU0"))
        .unwrap()
}

/// SOURCES.md, "Derived fixtures": the `CPU Affinity` cell of `gpus` emptied.
fn empty_cpu_affinity(original: &str, gpus: &[&str]) -> String {
    let mut lines: Vec<String> = original.split('\n').map(str::to_owned).collect();
    let header = header_row(&lines);
    let width = lines[header]
        .split_whitespace()
        .take_while(|word| !matches!(*word, "CPU" | "NUMA"))
        .count();
    for line in &mut lines[header + 1..] {
        let mut cells: Vec<&str> = line.split('\t').collect();
        if gpus.contains(&cells[0]) {
            assert!(!cells[width + 1].is_empty(), "{line}");
            cells[width + 1] = "";
            *line = cells.join("\t");
        }
    }
    lines.join("\n")
}

/// SOURCES.md, "Derived fixtures": the header row underlined as a terminal shows it.
fn underline_header(original: &str) -> String {
    let mut lines: Vec<String> = original.split('\n').map(str::to_owned).collect();
    let header = header_row(&lines);
    lines[header] = format!("\u{1b}[4m{}\u{1b}[0m", lines[header]);
    lines.join("\n")
}

#[rstest]
#[case::slurm_drv580(
    "8x-v100-sxm2-hybrid-cube-drv580-nic-slurm-cpuset.txt",
    empty_cpu_affinity(&topology_fixture("8x-v100-sxm2-hybrid-cube-drv580-nic.txt"), &["GPU4", "GPU5", "GPU6", "GPU7"])
)]
#[case::slurm_dgx_a100(
    "dgx-a100-mlx5-nps4-slurm-cpuset.txt",
    empty_cpu_affinity(&topology_fixture("dgx-a100-mlx5-nps4.txt"), &["GPU2", "GPU3", "GPU4", "GPU5", "GPU6", "GPU7"])
)]
#[case::ansi_rtx5090(
    "2x-rtx5090-phb-1numa-terminal-ansi.txt",
    underline_header(&topology_fixture("2x-rtx5090-phb-1numa.txt"))
)]
#[case::ansi_drv440(
    "dgx1-v100-drv440-terminal-ansi.txt",
    underline_header(&topology_fixture("dgx1-v100-drv440.txt"))
)]
fn derived_fixtures_are_their_documented_transformation(
    #[case] derived: &str,
    #[case] expected: String,
) {
    assert_eq!(topology_fixture(derived), expected);
    let original = ground_truth(derived)["derived_from"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(
        topology_fixture(&original),
        expected,
        "the transformation changes something"
    );
}

/// The derived fixtures parse to exactly what their originals parse to.
#[rstest]
#[case("8x-v100-sxm2-hybrid-cube-drv580-nic-slurm-cpuset.txt")]
#[case("dgx-a100-mlx5-nps4-slurm-cpuset.txt")]
#[case("2x-rtx5090-phb-1numa-terminal-ansi.txt")]
#[case("dgx1-v100-drv440-terminal-ansi.txt")]
fn derived_fixtures_parse_as_their_originals(#[case] derived: &str) {
    let original = ground_truth(derived)["derived_from"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        nvidia_smi::parse(&topology_fixture(derived)).unwrap(),
        nvidia_smi::parse(&topology_fixture(&original)).unwrap()
    );
}
