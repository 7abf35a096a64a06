//! The policy's JSON scanner must accept exactly the texts serde_json
//! accepts: every fixture, and every fixture broken one byte at a time
//! (a byte deleted, the text cut short, a structural or special byte put in
//! or swapped in), compact and pretty-printed.

use gpu_topology_policy::json_scan::validate;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::path::Path;

/// Bytes that break JSON in interesting ways when put anywhere.
const INTERESTING: &[u8] = b"\"\\,:{}[]0-.eE nt\x01\x7f";
/// Places broken per fixture text, spread evenly over it.
const PLACES_PER_TEXT: usize = 60;

fn serde_accepts(text: &str) -> bool {
    serde_json::from_str::<IgnoredAny>(text).is_ok()
}

fn variants(text: &[u8]) -> Vec<Vec<u8>> {
    let step = (text.len() / PLACES_PER_TEXT).max(1);
    let mut out = Vec::new();
    for at in (0..text.len()).step_by(step) {
        let mut deleted = text.to_vec();
        deleted.remove(at);
        out.push(deleted);
        out.push(text[..at].to_vec());
        for &byte in INTERESTING {
            let mut inserted = text.to_vec();
            inserted.insert(at, byte);
            out.push(inserted);
            let mut replaced = text.to_vec();
            replaced[at] = byte;
            out.push(replaced);
        }
    }
    out
}

#[test]
fn the_scanner_accepts_exactly_what_serde_json_accepts() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = 0;
    let mut refused = 0;
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        let value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for text in [
            serde_json::to_vec(&value).unwrap(),
            serde_json::to_vec_pretty(&value).unwrap(),
        ] {
            for variant in variants(&text) {
                let Ok(variant) = String::from_utf8(variant) else {
                    continue;
                };
                let scanned = validate(&variant);
                assert_eq!(
                    scanned.is_ok(),
                    serde_accepts(&variant),
                    "{}: scanner says {scanned:?} for\n{variant}",
                    path.display()
                );
                checked += 1;
                refused += usize::from(scanned.is_err());
            }
        }
    }
    // Many variants are broken; many (a byte put inside a string) are not.
    assert!(
        checked > 10_000 && refused > checked / 3,
        "{checked} checked, {refused} refused"
    );
}
