//! examples/cli/audit-cronjob.yaml, the hourly `gpu-topology audit`, is
//! least privilege and restricted:
//!
//! - its ServiceAccount is bound to one ClusterRole that grants exactly the
//!   reads of live `audit` (docs/cli.md, "Live mode and its RBAC": `list` on
//!   nodes, pods and NFD's nodefeatures), no verb that writes, no wildcard,
//!   and no Role besides (audit reads no ConfigMap);
//! - its pod meets the Pod Security Standards' "restricted" profile: non-root,
//!   no privilege escalation, every capability dropped, RuntimeDefault
//!   seccomp, a read-only root filesystem, no host namespaces or host
//!   volumes;
//! - it runs live `audit` (no file inputs), and a finding (exit code 1)
//!   fails the Job without a retry.
//!
//! The image tag is checked by release_references.rs, the objects' schemas
//! by tests/schemas/validate.py (support_matrix.rs), which validates every
//! manifest under examples/.

use serde_yaml::Value;
use std::collections::BTreeSet;
use std::path::Path;

const FILE: &str = "examples/cli/audit-cronjob.yaml";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn documents(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|d: &Value| !d.is_null())
        .collect()
}

fn manifest() -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join(FILE)).unwrap();
    documents(&text)
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "{FILE}: one {kind}");
    found[0]
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("not a list: {value:?}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// (apiGroup, resource, verb) of every rule.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_sequence().unwrap() {
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    out.insert((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    out
}

fn pod_spec(docs: &[Value]) -> &Value {
    &one(docs, "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
}

/// The ClusterRole docs/cli.md gives the tool (its yaml blocks).
fn documented_cluster_role() -> Value {
    let text = std::fs::read_to_string(repo().join("docs/cli.md")).unwrap();
    let mut blocks = text.split("```yaml\n").skip(1);
    blocks
        .find_map(|block| {
            let body = &block[..block.find("\n```").unwrap()];
            documents(body)
                .into_iter()
                .find(|d| d["kind"] == "ClusterRole")
        })
        .expect("docs/cli.md: a ClusterRole")
}

#[test]
fn the_cluster_role_grants_exactly_the_reads_of_live_audit() {
    let docs = manifest();
    let role = one(&docs, "ClusterRole");
    let expected: BTreeSet<(String, String, String)> = [
        ("", "nodes", "list"),
        ("", "pods", "list"),
        ("nfd.k8s-sigs.io", "nodefeatures", "list"),
        ("topology.node.k8s.io", "noderesourcetopologies", "get"),
    ]
    .into_iter()
    .map(|(g, r, v)| (g.to_owned(), r.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(grants(role), expected);
    // docs/cli.md's ClusterRole for the tool: every `list` it grants is one
    // of these (a read the docs add must be added here too); the rest are
    // the writes of `kubectl apply` of reports, which this CronJob does not.
    let documented = grants(&documented_cluster_role());
    let with_verb = |grants: &BTreeSet<(String, String, String)>, wanted: &str| -> BTreeSet<_> {
        grants
            .iter()
            .filter(|(_, _, verb)| verb == wanted)
            .cloned()
            .collect()
    };
    assert_eq!(
        with_verb(&documented, "list"),
        with_verb(&expected, "list"),
        "docs/cli.md's ClusterRole"
    );
    // Its `get`s serve explain too (Nodes, the summary): the audit's are among them.
    assert!(
        with_verb(&expected, "get").is_subset(&with_verb(&documented, "get")),
        "docs/cli.md's ClusterRole lacks a get of live audit"
    );
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "Role" || d["kind"] == "RoleBinding"),
        "{FILE}: audit reads no ConfigMap, so no Role"
    );
}

#[test]
fn the_service_account_of_the_pod_is_the_one_bound() {
    let docs = manifest();
    let account = one(&docs, "ServiceAccount");
    let cronjob = one(&docs, "CronJob");
    let binding = one(&docs, "ClusterRoleBinding");
    let namespace = &cronjob["metadata"]["namespace"];
    assert_eq!(&account["metadata"]["namespace"], namespace);
    assert_eq!(
        pod_spec(&docs)["serviceAccountName"],
        account["metadata"]["name"]
    );
    assert_eq!(
        binding["roleRef"]["name"],
        one(&docs, "ClusterRole")["metadata"]["name"]
    );
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    let subjects = binding["subjects"].as_sequence().unwrap();
    assert_eq!(subjects.len(), 1);
    assert_eq!(subjects[0]["kind"], "ServiceAccount");
    assert_eq!(subjects[0]["name"], account["metadata"]["name"]);
    assert_eq!(&subjects[0]["namespace"], namespace);
}

#[test]
fn the_pod_is_restricted() {
    let docs = manifest();
    let spec = pod_spec(&docs);
    let pod = &spec["securityContext"];
    assert_eq!(pod["runAsNonRoot"].as_bool(), Some(true));
    assert!(pod["runAsUser"].as_u64().is_some_and(|uid| uid > 0));
    assert_eq!(pod["seccompProfile"]["type"], "RuntimeDefault");
    for host in ["hostNetwork", "hostPID", "hostIPC"] {
        assert!(spec[host].is_null(), "{host}");
    }
    // At most the settings' ConfigMap the manifest's header shows.
    for volume in spec["volumes"].as_sequence().into_iter().flatten() {
        assert!(
            !volume["configMap"].is_null(),
            "{FILE}: a volume that is not a ConfigMap: {volume:?}"
        );
    }
    let containers = spec["containers"].as_sequence().unwrap();
    assert!(spec["initContainers"].is_null());
    for container in containers {
        let context = &container["securityContext"];
        assert_eq!(context["allowPrivilegeEscalation"].as_bool(), Some(false));
        assert_eq!(context["readOnlyRootFilesystem"].as_bool(), Some(true));
        assert_eq!(context["privileged"].as_bool(), Some(false));
        assert_eq!(
            strings(&context["capabilities"]["drop"]),
            BTreeSet::from(["ALL".to_owned()])
        );
        assert!(context["capabilities"]["add"].is_null());
        assert!(container["resources"]["limits"]["memory"].is_string());
    }
}

#[test]
fn it_audits_live_and_a_finding_fails_the_job_without_a_retry() {
    let docs = manifest();
    let cronjob = one(&docs, "CronJob");
    assert_eq!(cronjob["spec"]["concurrencyPolicy"], "Forbid");
    let job = &cronjob["spec"]["jobTemplate"]["spec"];
    let spec = pod_spec(&docs);
    assert_eq!(spec["restartPolicy"], "Never");
    let container = &spec["containers"][0];
    let args = strings(&container["args"]);
    assert!(
        container["args"][0] == "audit",
        "{FILE}: runs `gpu-topology audit`"
    );
    for file_input in ["--pods", "--nodes", "--summary"] {
        assert!(
            !args.iter().any(|a| a.starts_with(file_input)),
            "{FILE}: {file_input} is not live mode"
        );
    }
    // cli/src/exit.rs: FINDINGS is 1.
    let exit = std::fs::read_to_string(repo().join("cli/src/exit.rs")).unwrap();
    assert!(exit.contains("pub const FINDINGS: u8 = 1;"));
    let rules = job["podFailurePolicy"]["rules"].as_sequence().unwrap();
    assert!(
        rules.iter().any(|rule| rule["action"] == "FailJob"
            && rule["onExitCodes"]["containerName"] == container["name"]
            && rule["onExitCodes"]["operator"] == "In"
            && rule["onExitCodes"]["values"]
                .as_sequence()
                .is_some_and(|v| v.len() == 1 && v[0].as_u64() == Some(1))),
        "{FILE}: exit code 1 (findings) must fail the Job at once"
    );
}
