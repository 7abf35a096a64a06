//! The host capabilities policy-metadata.yml declares (`hostCapabilities`)
//! are exactly the ones the built module uses, seen two ways:
//!
//! - at run time: every scenario through the harness, which records each host
//!   call the guest makes (`HostCapabilities::calls`, e2e-tests/src/host.rs);
//! - statically, the way `kwctl annotate` finds them (kwctl `wasm_scanner.rs`,
//!   `scan`): the capability's namespace and operation names appear in the
//!   module's data segments. kwctl warns about capabilities used but not
//!   declared, and declared but not used; this test fails on either.
//!
//! Needs policy.wasm (`make policy.wasm`; `make test` builds it first).

use e2e_tests::{repo_root, shared_module, Scenario};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// `hostCapabilities` of policy-metadata.yml.
fn declared_capabilities() -> BTreeSet<String> {
    let path = repo_root().join("policy-metadata.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    let metadata: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    metadata["hostCapabilities"]
        .as_sequence()
        .expect("policy-metadata.yml declares hostCapabilities")
        .iter()
        .map(|pattern| pattern.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn scenarios_call_exactly_the_declared_capabilities() {
    let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
    // capability -> the first scenario that called it, for the message.
    let mut called: BTreeMap<String, String> = BTreeMap::new();
    for scenario in Scenario::load_all(&scenario_dir()).unwrap_or_else(|e| panic!("{e:#}")) {
        let capabilities = e2e_tests::HostCapabilities::new(
            scenario.file.context_aware_resources.clone(),
            scenario.session.as_ref(),
        );
        let policy = module
            .instantiate(std::sync::Arc::new(capabilities))
            .unwrap();
        if policy.validate_settings(&scenario.settings).unwrap().valid {
            policy
                .validate(&scenario.request, &scenario.settings)
                .unwrap_or_else(|e| panic!("{}: {e:#}", scenario.name));
        }
        for call in policy.capabilities().calls() {
            called
                .entry(format!("{}/{}", call.namespace, call.operation))
                .or_insert_with(|| scenario.name.clone());
        }
    }
    let used: BTreeSet<String> = called.keys().cloned().collect();
    assert_eq!(
        used,
        declared_capabilities(),
        "called by the scenarios (left, first caller: {called:?}) vs hostCapabilities (right)"
    );
}

/// Every operation Kubewarden's host offers, by namespace (policy-evaluator
/// `host_capabilities.rs`, `CAPABILITY_TREE`): what kwctl looks for.
const HOST_OPERATIONS: [(&str, &str); 11] = [
    ("oci", "v1/verify"),
    ("oci", "v1/manifest_digest"),
    ("oci", "v1/oci_manifest"),
    ("oci", "v1/oci_manifest_config"),
    ("oci", "v2/verify"),
    ("net", "v1/dns_lookup_host"),
    ("crypto", "v1/is_certificate_trusted"),
    ("kubernetes", "list_resources_by_namespace"),
    ("kubernetes", "list_resources_all"),
    ("kubernetes", "get_resource"),
    ("kubernetes", "can_i"),
];

/// Wasm section id of the data section.
const DATA_SECTION: u8 = 11;
/// Separates segments, as kwctl does, so no name is matched across two.
const SEGMENT_SEPARATOR: u8 = 0xFF;

/// An unsigned LEB128 number at `bytes[*at..]`.
fn read_leb(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or("LEB128 number runs past the end")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("LEB128 number too long".to_owned())
}

fn read_len(bytes: &[u8], at: &mut usize) -> Result<usize, String> {
    usize::try_from(read_leb(bytes, at)?).map_err(|e| e.to_string())
}

/// Skips a data segment's constant offset expression (`i32.const`,
/// `i64.const` or `global.get`, then `end`).
fn skip_offset(bytes: &[u8], at: &mut usize) -> Result<(), String> {
    const I32_CONST: u8 = 0x41;
    const I64_CONST: u8 = 0x42;
    const GLOBAL_GET: u8 = 0x23;
    const END: u8 = 0x0b;
    match bytes.get(*at).copied() {
        Some(I32_CONST | I64_CONST | GLOBAL_GET) => {
            *at += 1;
            // Signed and unsigned LEB128 have the same length.
            read_leb(bytes, at)?;
        }
        other => return Err(format!("unexpected offset instruction {other:?}")),
    }
    match bytes.get(*at) {
        Some(&END) => {
            *at += 1;
            Ok(())
        }
        other => Err(format!("offset expression not ended: {other:?}")),
    }
}

/// The bytes of every data segment of `module`, joined by the separator.
fn data_segments(module: &[u8]) -> Result<Vec<u8>, String> {
    const HEADER: usize = 8; // magic and version
    let mut data = Vec::new();
    let mut at = HEADER;
    while at < module.len() {
        let id = module[at];
        at += 1;
        let size = read_len(module, &mut at)?;
        let body = module
            .get(at..at + size)
            .ok_or("section runs past the end")?;
        at += size;
        if id != DATA_SECTION {
            continue;
        }
        let mut cursor = 0;
        for _ in 0..read_len(body, &mut cursor)? {
            match read_leb(body, &mut cursor)? {
                0 => skip_offset(body, &mut cursor)?,
                1 => {}
                2 => {
                    read_leb(body, &mut cursor)?; // memory index
                    skip_offset(body, &mut cursor)?;
                }
                kind => return Err(format!("unknown data segment kind {kind}")),
            }
            let len = read_len(body, &mut cursor)?;
            let bytes = body
                .get(cursor..cursor + len)
                .ok_or("segment runs past the end")?;
            cursor += len;
            data.extend_from_slice(bytes);
            data.push(SEGMENT_SEPARATOR);
        }
    }
    Ok(data)
}

fn positions<'a>(haystack: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    haystack
        .windows(needle.len())
        .enumerate()
        .filter(move |(_, window)| *window == needle)
        .map(|(at, _)| at)
}

/// kwctl's rule (`is_operation_present`): the namespace name appears, and
/// the operation name appears other than as the start of a longer operation
/// name (`v1/oci_manifest` inside `v1/oci_manifest_config` does not count).
fn uses(data: &[u8], namespace: &str, operation: &str) -> bool {
    if positions(data, namespace.as_bytes()).next().is_none() {
        return false;
    }
    let longer: Vec<&str> = HOST_OPERATIONS
        .iter()
        .map(|(_, other)| *other)
        .filter(|other| *other != operation && other.starts_with(operation))
        .collect();
    positions(data, operation.as_bytes()).any(|at| {
        longer
            .iter()
            .all(|other| !data[at..].starts_with(other.as_bytes()))
    })
}

#[test]
fn kwctl_would_detect_exactly_the_declared_capabilities_in_the_module() {
    let path = e2e_tests::policy_wasm_path();
    let module = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run `make policy.wasm`)", path.display()));
    let data = data_segments(&module).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let detected: BTreeSet<String> = HOST_OPERATIONS
        .iter()
        .filter(|(namespace, operation)| uses(&data, namespace, operation))
        .map(|(namespace, operation)| format!("{namespace}/{operation}"))
        .collect();
    assert_eq!(
        detected,
        declared_capabilities(),
        "detected in {} (left) vs hostCapabilities (right)",
        path.display()
    );
}

/// The scanner itself, on a tiny module with one data segment at offset 11
/// (whose `i32.const` immediate is the `end` opcode's byte value).
#[test]
fn the_scanner_reads_data_segments_and_prefers_the_longer_name() {
    let strings = b"kubewarden\0oci\0v1/oci_manifest_config\0";
    let mut segment = vec![0x00, 0x41, 11, 0x0b, strings.len() as u8];
    segment.extend_from_slice(strings);
    let mut body = vec![1];
    body.extend_from_slice(&segment);
    let mut module = b"\0asm\x01\0\0\0".to_vec();
    module.push(DATA_SECTION);
    module.push(body.len() as u8);
    module.extend_from_slice(&body);
    let data = data_segments(&module).unwrap();
    assert_eq!(&data[..strings.len()], strings);
    assert!(uses(&data, "oci", "v1/oci_manifest_config"));
    assert!(!uses(&data, "oci", "v1/oci_manifest"));
    assert!(!uses(&data, "kubernetes", "get_resource"));
    assert!(data_segments(&module[..module.len() - 1]).is_err());
}

/// How many characters of a host error's text a warning keeps, its end
/// (src/cluster/host.rs, `HOST_ERROR_TAIL_CHARS`).
const HOST_ERROR_TAIL_CHARS: usize = 120;

/// A host error reaches a warning or message as one bounded line (issue
/// #26): on every scenario whose session answers an error, through the
/// built module, no answer has a line break, none quotes a line of the
/// error after its first, and none quotes more of a longer first line than
/// its last characters, within the bound, after an ellipsis.
#[test]
fn host_errors_reach_answers_as_one_bounded_line() {
    use e2e_tests::session::Response;
    let module = shared_module().unwrap_or_else(|e| panic!("{e:#}"));
    let (mut multi_line, mut long) = (0, 0);
    for scenario in Scenario::load_all(&scenario_dir()).unwrap_or_else(|e| panic!("{e:#}")) {
        let Some(session) = &scenario.session else {
            continue;
        };
        let errors: Vec<&str> = session
            .exchanges()
            .iter()
            .filter_map(|exchange| match &exchange.response {
                Response::Error { message } => Some(message.as_str()),
                Response::Success { .. } => None,
            })
            .collect();
        if errors.is_empty() {
            continue;
        }
        let capabilities = e2e_tests::HostCapabilities::new(
            scenario.file.context_aware_resources.clone(),
            Some(session),
        );
        let policy = module
            .instantiate(std::sync::Arc::new(capabilities))
            .unwrap();
        if !policy.validate_settings(&scenario.settings).unwrap().valid {
            continue;
        }
        let outcome = policy
            .validate(&scenario.request, &scenario.settings)
            .unwrap_or_else(|e| panic!("{}: {e:#}", scenario.name));
        let answers: Vec<&str> = outcome
            .warnings
            .iter()
            .map(String::as_str)
            .chain(outcome.message.as_deref())
            .collect();
        for answer in &answers {
            assert!(
                !answer.contains(['\n', '\r']),
                "{}: an answer of several lines: {answer:?}",
                scenario.name
            );
        }
        for error in errors {
            let mut lines = error.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or_default();
            for later in lines {
                multi_line += 1;
                assert!(
                    answers.iter().all(|answer| !answer.contains(later)),
                    "{}: an answer quotes {later:?}, past the host error's first line: {answers:?}",
                    scenario.name
                );
            }
            let chars = first.chars().count();
            if chars > HOST_ERROR_TAIL_CHARS {
                // The line's start is past the tail: no answer quotes it.
                let start: String = first.chars().take(40).collect();
                assert!(
                    answers.iter().all(|answer| !answer.contains(&start)),
                    "{}: an answer quotes the start of a long host error: {answers:?}",
                    scenario.name
                );
                // The status sits at the end of the line: a quote is found
                // by the line's last characters, and must start with the
                // ellipsis within the bound. (A rejection may quote none.)
                let end: String = first.chars().skip(chars - 40).collect();
                let Some((answer, at)) = answers
                    .iter()
                    .find_map(|answer| answer.find(&end).map(|at| (answer, at + end.len())))
                else {
                    continue;
                };
                long += 1;
                let quoted = answer[..at]
                    .rfind('…')
                    .map(|from| &answer[from..at])
                    .unwrap_or_else(|| {
                        panic!(
                            "{}: the long host error is quoted whole: {answer:?}",
                            scenario.name
                        )
                    });
                assert!(
                    quoted.chars().count() <= HOST_ERROR_TAIL_CHARS
                        && first.ends_with(quoted.trim_start_matches('…').trim_start()),
                    "{}: a long host error is not quoted by its last {HOST_ERROR_TAIL_CHARS} characters: {quoted:?}",
                    scenario.name
                );
            }
        }
    }
    assert!(
        multi_line > 0 && long > 0,
        "no scenario replays a host error of several lines ({multi_line}) or a long one ({long})"
    );
}
