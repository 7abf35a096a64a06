//! The NFD feature file: exact bytes, atomic replacement, refresh before expiry.

use crate::common;

use common::{labels, scratch_dir};
use gpu_topology_labeler::sinks::nfd::{render, write_atomically, NfdSink};
use gpu_topology_labeler::sinks::PublishError;
use jiff::Timestamp;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

fn at(rfc3339: &str) -> Timestamp {
    rfc3339.parse().unwrap()
}

#[test]
fn renders_the_expiry_comment_then_sorted_labels() {
    let labels = labels(&[
        ("nvlink-group-max", "8"),
        ("gpus", "8"),
        ("interconnect", "nvswitch"),
    ]);
    assert_eq!(
        render(&labels, at("2025-03-01T12:30:00.75Z")),
        "# +expiry-time=2025-03-01T12:30:01Z\n\
         gpu-topology.io/gpus=8\n\
         gpu-topology.io/interconnect=nvswitch\n\
         gpu-topology.io/nvlink-group-max=8\n"
    );
}

#[test]
fn publish_writes_the_file_with_expiry_after_the_ttl() {
    let dir = scratch_dir("nfd-publish");
    let mut sink = NfdSink::new(
        dir.clone(),
        "gpu-topology".to_owned(),
        Duration::from_secs(3600),
    );
    sink.publish(&labels(&[("gpus", "4")]), at("2025-03-01T12:00:00Z"))
        .unwrap();
    let written = std::fs::read(dir.join("gpu-topology")).unwrap();
    assert_eq!(
        written,
        b"# +expiry-time=2025-03-01T13:00:00Z\ngpu-topology.io/gpus=4\n"
    );
}

#[test]
fn replacement_is_atomic_a_reader_keeps_the_old_file_whole() {
    let dir = scratch_dir("nfd-atomic");
    write_atomically(&dir, "gpu-topology", "old=1\n").unwrap();
    let path = dir.join("gpu-topology");
    let old_inode = std::fs::metadata(&path).unwrap().ino();
    let mut reader = std::fs::File::open(&path).unwrap();

    write_atomically(&dir, "gpu-topology", "new=2\n").unwrap();

    // The open reader still sees the complete old file: it was replaced, not rewritten.
    let mut old = String::new();
    reader.read_to_string(&mut old).unwrap();
    assert_eq!(old, "old=1\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new=2\n");
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), old_inode);
    // Only the target remains: the staging dot-file was renamed away.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["gpu-topology"]);
}

#[test]
fn a_missing_directory_is_a_publish_error_naming_the_file() {
    let dir = scratch_dir("nfd-missing").join("absent");
    let mut sink = NfdSink::new(dir, "gpu-topology".to_owned(), Duration::from_secs(60));
    let error = sink.publish(&labels(&[]), Timestamp::now()).unwrap_err();
    assert!(matches!(error, PublishError::Nfd { .. }));
    assert!(error.to_string().contains("absent/gpu-topology"), "{error}");
}

#[test]
fn unchanged_labels_are_rewritten_once_half_the_ttl_has_passed() {
    let dir = scratch_dir("nfd-refresh");
    let mut sink = NfdSink::new(dir, "gpu-topology".to_owned(), Duration::from_secs(3600));
    assert!(
        sink.needs_refresh(at("2025-03-01T12:00:00Z")),
        "nothing written yet"
    );
    sink.publish(&labels(&[("gpus", "2")]), at("2025-03-01T12:00:00Z"))
        .unwrap();
    assert!(!sink.needs_refresh(at("2025-03-01T12:29:59Z")));
    assert!(sink.needs_refresh(at("2025-03-01T12:30:00Z")));
}
