//! Malformed and truncated inputs: a clear error or a subset of the true
//! labels — never a wrong label, never a panic.

use crate::common;

use common::{nvidia_smi_fixture_names, topology_fixture, ROCM_SMI_FIXTURE};
use gpu_topology::quantity::Quantity;
use gpu_topology_labeler::model::ToolReport;
use gpu_topology_labeler::parse::{
    amd_partitions, kubelet, nvidia_smi, nvidia_smi_query, rocm_smi, sysfs, ParseError,
};
use rstest::rstest;
use std::collections::BTreeMap;

type Parser = fn(&str) -> Result<ToolReport, ParseError>;

fn nvidia_smi_file(text: &str) -> Result<ToolReport, ParseError> {
    nvidia_smi::parse(text).map(|t| t.into_report(false))
}

fn labels_of(report: ToolReport) -> BTreeMap<String, String> {
    common::labels_of_reports(vec![report])
}

const SHAPE: &str = "gpu-topology.io/shape";

/// `labels` with the shape recomputed from their facts.
fn shaped(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let facts: Vec<(&str, &str)> = labels
        .iter()
        .filter(|(key, _)| *key != SHAPE)
        .map(|(key, value)| (key.trim_start_matches("gpu-topology.io/"), value.as_str()))
        .collect();
    if facts.is_empty() {
        BTreeMap::new()
    } else {
        common::labels_with_shape(&facts)
    }
}

/// Every prefix of `text` that ends on a character boundary.
fn truncations(text: &str) -> impl Iterator<Item = &str> {
    (0..text.len())
        .filter(|&end| text.is_char_boundary(end))
        .map(move |end| &text[..end])
}

/// Labels from a truncated output must be among the full output's labels, with
/// the same values: leaving a label out is fine, changing one is not. The
/// shape digests the facts published, so fewer facts have their own shape:
/// it must be the digest of exactly those.
fn assert_truncations_publish_no_wrong_label(name: &str, parse: Parser) {
    let text = topology_fixture(name);
    let full = labels_of(parse(&text).unwrap());
    let mut errors = 0;
    for cut in truncations(&text) {
        match parse(cut) {
            Err(error) => {
                errors += 1;
                assert!(!error.message.is_empty());
            }
            Ok(report) => {
                let labels = labels_of(report);
                assert_eq!(labels, shaped(&labels), "{name} cut at byte {}", cut.len());
                for (key, value) in labels.into_iter().filter(|(key, _)| key != SHAPE) {
                    assert_eq!(
                        full.get(&key),
                        Some(&value),
                        "{name} cut at byte {}: {key}={value} is not a label of the full output",
                        cut.len()
                    );
                }
            }
        }
    }
    assert!(errors > 0, "{name}: no truncation was detected at all");
}

#[test]
fn truncated_nvidia_smi_outputs_publish_no_wrong_label() {
    for name in nvidia_smi_fixture_names() {
        assert_truncations_publish_no_wrong_label(&name, nvidia_smi_file);
    }
}

#[test]
fn truncated_rocm_smi_output_publishes_no_wrong_label() {
    assert_truncations_publish_no_wrong_label(ROCM_SMI_FIXTURE, rocm_smi::parse);
}

#[test]
fn a_matrix_cut_mid_row_is_an_error_naming_the_row() {
    let text = topology_fixture("dgx-a100-mlx5-nps4.txt");
    let cut = &text[..text.find("\nGPU5\t").unwrap() + 20];
    let message = nvidia_smi::parse(cut).unwrap_err().to_string();
    assert!(message.contains("GPU5"), "{message}");
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that matter to the parsers, so mutations reach deep code paths.
const ALPHABET: &[&str] = &[
    "X",
    " ",
    "\t",
    "\n",
    "NV",
    "1",
    "-",
    "N/A",
    "GPU",
    "SYS",
    ":",
    "=",
    "é",
    "-1",
    "0x",
    "Mi",
    ".",
    "e",
    ",",
    "\u{1b}[4m",
    "\u{9b}",
];

#[rstest]
#[case::nvidia_smi(nvidia_smi_file as Parser)]
#[case::rocm_smi(rocm_smi::parse as Parser)]
fn mutated_and_random_inputs_never_panic(#[case] parse: Parser) {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let mut sources: Vec<String> = nvidia_smi_fixture_names()
        .iter()
        .map(|n| topology_fixture(n))
        .collect();
    sources.push(topology_fixture(ROCM_SMI_FIXTURE));
    for text in &sources {
        for _ in 0..300 {
            let mut mutated = text.clone();
            for _ in 0..1 + random.below(4) {
                let mut at = random.below(mutated.len().max(1));
                while !mutated.is_char_boundary(at) {
                    at -= 1;
                }
                let end = (at + random.below(6)).min(mutated.len());
                let end = (end..=mutated.len())
                    .find(|&e| mutated.is_char_boundary(e))
                    .unwrap();
                mutated.replace_range(at..end, ALPHABET[random.below(ALPHABET.len())]);
            }
            let _ = parse(&mutated).map(labels_of);
        }
    }
    for _ in 0..2000 {
        let garbage: String = (0..random.below(200))
            .map(|_| ALPHABET[random.below(ALPHABET.len())])
            .collect();
        let _ = parse(&garbage).map(labels_of);
    }
}

#[test]
fn other_parsers_never_panic_on_garbage() {
    let mut random = Random(42);
    for _ in 0..3000 {
        let garbage: String = (0..random.below(60))
            .map(|_| ALPHABET[random.below(ALPHABET.len())])
            .collect();
        let _ = sysfs::parse_cpulist(&garbage);
        let _ = sysfs::parse_hex_attribute(&garbage);
        let _ = sysfs::parse_numa_node(&garbage);
        let _ = sysfs::parse_meminfo_total_kib(&garbage, 0);
        let _ = sysfs::parse_id_list(&garbage);
        let _ = sysfs::parse_hugepages_dir_name(&garbage);
        let _ = sysfs::parse_decimal_attribute(&garbage, "nr_hugepages");
        let _ = Quantity::parse(&garbage).map(|q| (q.ceil_whole_units(), q.whole_units()));
        let _ = kubelet::parse_file(&garbage);
        let _ = amd_partitions::parse_drm_dev(&garbage);
        let _ = amd_partitions::parse_kfd_render_minor(&garbage);
        let _ = amd_partitions::render_node_minor(&garbage);
        let _ = nvidia_smi_query::parse(&garbage);
    }
    for name in [
        "single-numa-node.yaml",
        "static-managers.yaml",
        "counted-reservation.yaml",
    ] {
        let config =
            std::fs::read_to_string(common::local_fixture(&format!("kubelet/{name}"))).unwrap();
        for cut in truncations(&config) {
            let _ = kubelet::parse_file(cut)
                .map(|file| kubelet::settings(&kubelet::MergedConfig::new(file, [])));
        }
    }
}
