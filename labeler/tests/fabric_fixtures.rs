//! The `Fabric` sections of recorded `nvidia-smi -q` output
//! (tests/fixtures/fabric/, provenance in its SOURCES.md) through the real
//! parser: which GPUs are attached to a multi-node NVLink clique.

use crate::common;

use common::local_fixture;
use gpu_topology::GpuClique;
use gpu_topology_labeler::parse::nvidia_smi_query::{parse, Attachment, GpuFabric};
use rstest::rstest;
use std::collections::BTreeSet;

fn fabrics(file: &str) -> Vec<GpuFabric> {
    let text = std::fs::read_to_string(local_fixture(&format!("fabric/{file}"))).unwrap();
    parse(&text).unwrap()
}

fn not_attached(gpu: &str, why: &str) -> GpuFabric {
    GpuFabric {
        gpu: gpu.to_owned(),
        attachment: Attachment::NotAttached(why.to_owned()),
    }
}

#[rstest]
// The whole output of a GPU without fabric info: its many nested sections
// (Clocks, ECC Errors, Fabric's own Health) are not read as the fabric's.
#[case::whole_output_of_an_a10("a10-drv550-nvidia-smi-q.txt",
    vec![not_attached("GPU 00000000:06:00.0", "State N/A")])]
#[case::gb200_in_a_clique("gb200-completed-grep-c3.txt", vec![GpuFabric {
    gpu: "Fabric section 1".to_owned(),
    attachment: Attachment::Attached(
        GpuClique::new("dc6e40c4-d722-4357-9ba6-5291dd461278", 2).unwrap(),
    ),
}])]
// Completed but failed: go-nvlib's IsFabricAttached checks the status.
#[case::completed_with_insufficient_resources("insufficient-resources-zero-uuid.txt",
    vec![not_attached("Fabric section 1", "Status Insufficient Resources")])]
fn fabric_sections_say_which_gpus_are_attached(
    #[case] file: &str,
    #[case] expected: Vec<GpuFabric>,
) {
    assert_eq!(fabrics(file), expected);
}

/// The real outputs cut or changed one way: an error naming what is wrong.
#[rstest]
#[case::cut_after_the_header("a10-drv550-nvidia-smi-q.txt", |t: &str| t.split("GPU 0000").next().unwrap_or("").to_owned(), "Attached GPUs says 1 but 0")]
#[case::state_line_lost("gb200-completed-grep-c3.txt", |t: &str| t.replace("        State                             : Completed\n", ""), "no State")]
#[case::clique_id_not_a_number("gb200-completed-grep-c3.txt", |t: &str| t.replace(": 2\n", ": 0x2\n"), "CliqueId \"0x2\"")]
#[case::uuid_cut_short("gb200-completed-grep-c3.txt", |t: &str| t.replace("5291dd461278", "5291dd46"), "not a UUID")]
fn malformed_fabric_sections_are_errors_saying_why(
    #[case] file: &str,
    #[case] change: fn(&str) -> String,
    #[case] expected: &str,
) {
    let text = std::fs::read_to_string(local_fixture(&format!("fabric/{file}"))).unwrap();
    let message = parse(&change(&text)).unwrap_err().to_string();
    assert!(message.contains(expected), "{message}");
}

/// The cliques the attached GPUs of `fabrics` name.
fn cliques(fabrics: &[GpuFabric]) -> BTreeSet<GpuClique> {
    fabrics
        .iter()
        .filter_map(|f| match &f.attachment {
            Attachment::Attached(clique) => Some(clique.clone()),
            Attachment::NotAttached(_) => None,
        })
        .collect()
}

/// Output cut short at any character: an error, or cliques among the
/// whole output's: never a clique the GPUs are not in.
#[rstest]
fn truncated_fabric_output_names_no_wrong_clique(
    #[values(
        "a10-drv550-nvidia-smi-q.txt",
        "gb200-completed-grep-c3.txt",
        "insufficient-resources-zero-uuid.txt"
    )]
    file: &str,
) {
    let text = std::fs::read_to_string(local_fixture(&format!("fabric/{file}"))).unwrap();
    let whole = cliques(&parse(&text).unwrap());
    for end in (0..text.len()).filter(|&end| text.is_char_boundary(end)) {
        if let Ok(fabrics) = parse(&text[..end]) {
            assert!(
                cliques(&fabrics).is_subset(&whole),
                "cut at {end}: {fabrics:?}"
            );
        }
    }
}
