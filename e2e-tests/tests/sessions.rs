//! The checked-in session files (`scenarios/sessions/*.yml`) are exactly
//! what the generator writes from the fleet descriptions (`src/fleets/`),
//! each parses as kwctl's replay format, and each fleet's summary groups are
//! the fleet its Node list holds.

use e2e_tests::fleets::{
    first_contract, render, session_files, summarize, ListAnswer, SummaryAnswer,
};
use e2e_tests::session::Session;
use gpu_topology::LabelPrefix;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn sessions_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/sessions")
}

#[test]
fn checked_in_sessions_are_what_the_generator_writes() {
    let mut stale = Vec::new();
    for file in session_files() {
        let path = sessions_dir().join(format!("{}.yml", file.name));
        let written = render(&file).unwrap();
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        if written != checked_in {
            stale.push(file.name);
        }
        Session::parse(&written).unwrap_or_else(|e| panic!("{}: {e:#}", file.name));
    }
    assert!(
        stale.is_empty(),
        "regenerate with `cargo run -p e2e-tests --bin sessions`: {stale:?}"
    );
}

#[test]
fn every_session_file_comes_from_a_fleet_description() {
    let generated: BTreeSet<String> = session_files()
        .iter()
        .map(|file| format!("{}.yml", file.name))
        .collect();
    let present: BTreeSet<String> = std::fs::read_dir(sessions_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(present, generated);
}

/// Every labeled node carries a shape and the facts the model reads, but
/// the nodes of a labeler older than the shape label, which carry exactly
/// the first label contract's facts ([`first_contract`]).
#[test]
fn generated_nodes_carry_their_shape_and_facts() {
    let prefix = LabelPrefix::default();
    for file in session_files() {
        let groups = match (&file.list, &file.summary) {
            (ListAnswer::Nodes(groups), _) | (_, SummaryAnswer::Of(groups, _)) => groups,
            _ => continue,
        };
        for group in groups.iter().filter(|g| g.overrides.is_empty()) {
            let t = &group.machine.topology;
            if t.shape.is_none() {
                assert_eq!(*t, first_contract(t), "{}: a shapeless node", file.name);
                continue;
            }
            assert_eq!(t.shape, Some(t.shape_id()), "{}", file.name);
            assert!(t.numa_gpus.is_some() && t.numa_cpus.is_some() && t.numa_sockets.is_some());
        }
        let items = e2e_tests::fleets::node_items(groups, &prefix);
        let (fleet, _) = summarize(&items, &prefix);
        assert!(fleet.nodes() as usize <= items.len(), "{}", file.name);
    }
}
