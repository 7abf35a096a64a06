//! The built `policy.wasm` (waPC on wasmtime, as Kubewarden runs it) and
//! the policy built natively answer byte for byte the same: over generated
//! GPU pods and settings (`tests/strategies`, shared with the policy's
//! property tests), and over the committed fuzz corpus of `validate`.
//! The generated settings read the fit from static limits. A corpus payload
//! may read the cluster: the Wasm host then refuses with its words, and
//! natively no host answers, with none; those words are all that may
//! differ. Needs `make policy.wasm`.

#[path = "../../tests/strategies/mod.rs"]
mod strategies;

use e2e_tests::{repo_root, shared_module, HostCapabilities, Policy};
use proptest::prelude::*;
use std::sync::Arc;
use strategies::{payload, pod, settings};

/// Wasm calls cost far more than native ones: fewer cases than the
/// properties of the native build.
const CASES: u32 = 96;
/// Corpus inputs replayed through both builds.
const CORPUS_INPUTS: usize = 200;
/// How the harness's host (policy-evaluator's wording) refuses a cluster
/// read to a policy without context access, after wapc-guest's `Host
/// error:`; the trailing full stop is trimmed by the policy's message.
/// Natively the host's error is empty, and the policy quotes it trimmed
/// (`host::quote_host_error`): the space before the words goes with them.
const HOST_REFUSALS: [&str; 2] = [
    " Policy has not been granted access to Kubernetes v1/ConfigMap resources. The violation has been reported",
    " Policy has not been granted access to Kubernetes v1/Node resources. The violation has been reported",
];

/// What the policy says such a refusal means, before it quotes the host
/// (`host::quote_host_error`); natively there are no words to read.
const ACCESS_DENIED: &str = "access denied (host: Host error:";

/// The answer with the host's refusals, and what the policy read in them,
/// taken out.
fn without_host_refusals(answer: Option<Vec<u8>>) -> Option<String> {
    let text = String::from_utf8(answer?).expect("answers are UTF-8");
    Some(HOST_REFUSALS.iter().fold(text, |text, refusal| {
        text.replace(&format!("{ACCESS_DENIED}{refusal}.)"), "Host error:")
            .replace(&format!("{ACCESS_DENIED}{refusal})"), "Host error:")
            .replace(refusal, "")
    }))
}

fn instance() -> Policy {
    shared_module()
        .expect("policy.wasm: run `make policy.wasm`")
        .instantiate(Arc::new(HostCapabilities::none()))
        .expect("the module instantiates")
}

/// Both builds' answers to `operation`: the response bytes, or that the
/// call failed (the guest's error, which the host turns into a rejection).
fn answers(policy: &Policy, operation: &str, payload: &[u8]) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let native = match operation {
        "validate" => gpu_topology_policy::validate(payload),
        _ => gpu_topology_policy::validate_settings(payload),
    };
    (native.ok(), policy.call(operation, payload).ok())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn wasm_and_native_answer_alike(
        (settings, pod) in settings(false).prop_flat_map(|settings| {
            let prefix = if settings["labelPrefix"].is_string() {
                strategies::OTHER_PREFIX
            } else {
                gpu_topology::DEFAULT_LABEL_PREFIX
            };
            (Just(settings), pod(prefix))
        })
    ) {
        let policy = instance();
        let settings_text = serde_json::to_vec(&settings).unwrap();
        let (native, wasm) = answers(&policy, "validate_settings", &settings_text);
        prop_assert_eq!(native, wasm, "validate_settings");
        let (native, wasm) = answers(&policy, "validate", &payload(&pod, &settings));
        prop_assert!(native.is_some(), "natively refused");
        prop_assert_eq!(
            native.as_deref().map(String::from_utf8_lossy),
            wasm.as_deref().map(String::from_utf8_lossy)
        );
    }
}

/// The committed `validate` corpus: malformed payloads too.
#[test]
fn wasm_and_native_answer_the_fuzz_corpus_alike() {
    let policy = instance();
    let mut paths: Vec<_> = std::fs::read_dir(repo_root().join("fuzz/corpus/validate"))
        .expect("the committed corpus")
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    let mut answered = 0;
    for path in paths.iter().take(CORPUS_INPUTS) {
        let payload = std::fs::read(path).unwrap();
        let (native, wasm) = answers(&policy, "validate", &payload);
        let native = without_host_refusals(native);
        assert_eq!(native, without_host_refusals(wasm), "{}", path.display());
        answered += usize::from(native.is_some());
    }
    assert!(answered > 0, "no corpus payload was answered");
}
