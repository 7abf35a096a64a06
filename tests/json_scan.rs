//! The policy's JSON scanner must accept exactly the texts serde_json
//! accepts: every fixture, and every fixture broken one byte at a time
//! (a byte deleted, the text cut short, a structural or special byte put in
//! or swapped in), compact and pretty-printed. The payload reader built on
//! it must then read what serde_json reads from the same broken payloads.

use gpu_topology_policy::json::scan::validate;
use gpu_topology_policy::request::Payload;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::path::Path;

/// Bytes that break JSON in interesting ways when put anywhere.
const INTERESTING: &[u8] = b"\"\\,:{}[]0-.eE nt\x01\x7f";
/// Places broken per fixture text, spread evenly over it.
const PLACES_PER_TEXT: usize = 60;

/// Places broken per payload (each is read twice, so fewer).
const PLACES_PER_PAYLOAD: usize = 25;

fn serde_accepts(text: &str) -> bool {
    serde_json::from_str::<IgnoredAny>(text).is_ok()
}

fn variants(text: &[u8], places: usize) -> Vec<Vec<u8>> {
    let step = (text.len() / places).max(1);
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
            for variant in variants(&text, PLACES_PER_TEXT) {
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

fn fixtures() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        out.push((path.display().to_string(), value));
    }
    out
}

/// Where serde_json reads a broken payload, the reader reads the same
/// request fields and object (or refuses a field whose type is wrong);
/// where serde_json refuses it, so does the reader. Never a panic.
#[test]
fn the_payload_reader_reads_what_serde_json_reads() {
    let mut read = 0;
    for (name, review) in fixtures() {
        let payload = serde_json::json!({"settings": {"qos": {"mode": "mutate"}}, "request": review["request"]});
        let text = serde_json::to_vec(&payload).unwrap();
        for variant in variants(&text, PLACES_PER_PAYLOAD) {
            let Ok(variant) = String::from_utf8(variant) else {
                continue;
            };
            let tree = serde_json::from_str::<Value>(&variant);
            let scanned = Payload::parse(variant.as_bytes());
            let (Ok(tree), Ok(scanned)) = (&tree, &scanned) else {
                assert!(
                    tree.is_ok() || scanned.is_err(),
                    "{name}: read invalid JSON\n{variant}"
                );
                continue;
            };
            let request = &tree["request"];
            let field = |key: &str| request.get(key).and_then(Value::as_str).unwrap_or_default();
            let scanned_request = &scanned.request;
            assert_eq!(
                scanned_request.namespace,
                field("namespace"),
                "{name}\n{variant}"
            );
            assert_eq!(
                scanned_request.operation,
                field("operation"),
                "{name}\n{variant}"
            );
            assert_eq!(
                scanned_request.kind.kind,
                request["kind"]["kind"].as_str().unwrap_or_default(),
                "{name}\n{variant}"
            );
            let object: Value = serde_json::from_str(scanned_request.object_text()).unwrap();
            assert_eq!(
                object,
                request.get("object").cloned().unwrap_or(Value::Null),
                "{name}\n{variant}"
            );
            read += 1;
        }
    }
    assert!(
        read > 1_000,
        "only {read} broken payloads were still readable"
    );
}
