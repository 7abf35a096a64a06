//! The deployment examples in examples/labeler/ must stay hardened and minimal:
//! parsed here so that docs cannot drift from what is safe.
//!
//! Every labeler manifest (`daemonset-*.yaml`) ends with the summarizer's
//! documents, a verbatim copy of `fleet-summary.yaml` after [`SUMMARIZER_MARKER`],
//! so that one `kubectl apply -f` deploys both. The copies are checked to be
//! identical; `UPDATE_EXAMPLES=1` rewrites them from `fleet-summary.yaml`.

use clap::Parser;
use gpu_topology_labeler::cli::{Cli, Command};
use rstest::rstest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The labeler manifests, each of which ships the summarizer.
const LABELER_MANIFESTS: [&str; 3] = [
    "daemonset-nfd.yaml",
    "daemonset-kubernetes.yaml",
    "daemonset-nodefeature.yaml",
];
/// The summarizer on its own.
const FLEET_SUMMARY: &str = "fleet-summary.yaml";
/// The comment line that starts the copy of `fleet-summary.yaml` in a labeler
/// manifest (right after a `---`).
const SUMMARIZER_MARKER: &str =
    "# ---- The fleet summarizer: a verbatim copy of fleet-summary.yaml ----";

fn example_path(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/labeler")
        .join(file)
}

fn text(file: &str) -> String {
    let path = example_path(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).unwrap()
}

/// Every document of `file`.
fn documents(file: &str) -> Vec<Value> {
    parse(&text(file))
}

/// A labeler manifest's text, split into its own documents and the
/// summarizer's copy (None when there is no marker).
fn split_manifest(text: &str) -> (&str, Option<&str>) {
    let separator = format!("---\n{SUMMARIZER_MARKER}\n");
    match text.split_once(&separator) {
        Some((labeler, summarizer)) => (labeler, Some(summarizer)),
        None => (text, None),
    }
}

/// The documents of `file` that are not the summarizer's.
fn labeler_documents(file: &str) -> Vec<Value> {
    parse(split_manifest(&text(file)).0)
}

/// The summarizer's documents of `file` (all of fleet-summary.yaml).
fn summarizer_documents(file: &str) -> Vec<Value> {
    if file == FLEET_SUMMARY {
        return documents(file);
    }
    let text = text(file);
    let copy = split_manifest(&text)
        .1
        .unwrap_or_else(|| panic!("{file} does not ship the summarizer"));
    parse(copy)
}

/// `labeler` followed by the summarizer's documents.
fn with_summarizer(labeler: &str, fleet_summary: &str) -> String {
    format!("{labeler}---\n{SUMMARIZER_MARKER}\n{fleet_summary}")
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn only<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found = of_kind(docs, kind);
    assert_eq!(found.len(), 1, "expected exactly one {kind}");
    found[0]
}

fn args(container: &Value) -> Vec<&str> {
    container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// Mount paths that are writable (not `readOnly: true`).
fn writable_mounts(container: &Value) -> Vec<&str> {
    container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["readOnly"] != true)
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect()
}

/// The pod-level and container-level hardening every example shares; returns
/// the pod's only container.
fn hardened_container(pod: &Value) -> &Value {
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let security = &container["securityContext"];
    assert!(security["privileged"].is_null() || security["privileged"] == false);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert!(
        security["capabilities"]["add"].is_null(),
        "no capability is added"
    );
    container
}

#[rstest]
#[case::nfd_sink("daemonset-nfd.yaml", "--sink=nfd", &["/etc/kubernetes/node-feature-discovery/features.d"])]
#[case::kubernetes_sink("daemonset-kubernetes.yaml", "--sink=kubernetes", &[])]
#[case::nodefeature_sink("daemonset-nodefeature.yaml", "--sink=nodefeature", &[])]
fn daemonset_is_hardened(#[case] file: &str, #[case] sink_arg: &str, #[case] writable: &[&str]) {
    let docs = documents(file);
    let pod = &only(&docs, "DaemonSet")["spec"]["template"]["spec"];
    for host_namespace in ["hostNetwork", "hostPID", "hostIPC"] {
        assert!(
            pod[host_namespace].is_null() || pod[host_namespace] == false,
            "{host_namespace}"
        );
    }
    let node_selector = pod["nodeSelector"]
        .as_object()
        .is_some_and(|s| !s.is_empty());
    let required_affinity = pod["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array()
        .is_some_and(|terms| !terms.is_empty());
    // GPU nodes where a label says which (NFD's); every Linux node otherwise.
    assert!(node_selector || required_affinity, "no node selection");
    let container = hardened_container(pod);
    assert!(args(container).contains(&sink_arg));
    assert_eq!(writable_mounts(container), writable);
    // Every volume is a hostPath the container reads (or the features.d it writes).
    for volume in pod["volumes"].as_array().unwrap() {
        assert!(volume["hostPath"]["path"].is_string(), "{volume}");
    }
}

/// The flags each DaemonSet passes, with its downward-API variables set to
/// sample values, are a valid labeler configuration.
#[rstest]
#[case::nfd_sink("daemonset-nfd.yaml")]
#[case::kubernetes_sink("daemonset-kubernetes.yaml")]
#[case::nodefeature_sink("daemonset-nodefeature.yaml")]
fn daemonset_flags_are_accepted_by_the_labeler(#[case] file: &str) {
    let docs = documents(file);
    let container = &only(&docs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0];
    let mut argv = vec!["gpu-topology-labeler".to_owned()];
    argv.extend(args(container).into_iter().map(str::to_owned));
    for variable in container["env"].as_array().unwrap() {
        if variable["valueFrom"]["fieldRef"].is_null() {
            continue;
        }
        let (flag, sample) = match variable["name"].as_str().unwrap() {
            "NODE_NAME" => ("--node-name", "gpu-node-1"),
            "POD_NAME" => ("--pod-name", "gpu-topology-labeler-x7k2p"),
            "POD_NAMESPACE" => ("--namespace", "gpu-topology-labeler"),
            other => panic!("{other}: no flag known for this variable"),
        };
        argv.extend([flag.to_owned(), sample.to_owned()]);
    }
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    cli.into_config()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
}

#[test]
fn nfd_daemonset_needs_no_credentials() {
    let docs = labeler_documents("daemonset-nfd.yaml");
    let pod = &only(&docs, "DaemonSet")["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert!(of_kind(&docs, "ClusterRole").is_empty() && of_kind(&docs, "Role").is_empty());
}

#[test]
fn kubernetes_daemonset_runs_as_non_root_with_patch_on_nodes_only() {
    let docs = labeler_documents("daemonset-kubernetes.yaml");
    let pod = &only(&docs, "DaemonSet")["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let account = only(&docs, "ServiceAccount");
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);

    let role = only(&docs, "ClusterRole");
    assert_eq!(
        role["rules"],
        json!([{ "apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"] }])
    );
    let binding = only(&docs, "ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"],
        json!([{ "kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"] }])
    );
    // The node name comes from the downward API.
    assert_eq!(downward_api_field(pod, "NODE_NAME"), "spec.nodeName");
}

/// The pod field the container's environment variable `name` comes from.
fn downward_api_field<'a>(pod: &'a Value, name: &str) -> &'a str {
    let env = pod["containers"][0]["env"].as_array().unwrap();
    let variable = env
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("{name} env"));
    variable["valueFrom"]["fieldRef"]["fieldPath"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} is not from the downward API"))
}

#[test]
fn nodefeature_daemonset_runs_as_non_root_with_a_role_in_its_own_namespace() {
    let docs = labeler_documents("daemonset-nodefeature.yaml");
    let namespace = only(&docs, "Namespace")["metadata"]["name"]
        .as_str()
        .unwrap();
    // hostPath mounts (read-only) are beyond the baseline Pod Security level.
    assert_eq!(
        only(&docs, "Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "privileged"
    );
    for doc in &docs {
        if doc["kind"] != "Namespace" {
            assert_eq!(doc["metadata"]["namespace"], namespace, "{}", doc["kind"]);
        }
    }
    let daemonset = only(&docs, "DaemonSet");
    let pod = &daemonset["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_ne!(
        pod["automountServiceAccountToken"], false,
        "it needs its token"
    );
    let account = only(&docs, "ServiceAccount");
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);

    // Nothing cluster-wide: a Role for its NodeFeatures and for reading its pod.
    assert!(
        of_kind(&docs, "ClusterRole").is_empty() && of_kind(&docs, "ClusterRoleBinding").is_empty()
    );
    let role = only(&docs, "Role");
    assert_eq!(
        role["rules"],
        json!([
            { "apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"], "verbs": ["create", "patch"] },
            { "apiGroups": [""], "resources": ["pods"], "verbs": ["get"] },
        ])
    );
    let binding = only(&docs, "RoleBinding");
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"],
        json!([{ "kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": namespace }])
    );

    // The node, the object's namespace and its owner's pod: all from the downward API.
    assert_eq!(downward_api_field(pod, "NODE_NAME"), "spec.nodeName");
    assert_eq!(
        downward_api_field(pod, "POD_NAMESPACE"),
        "metadata.namespace"
    );
    assert_eq!(downward_api_field(pod, "POD_NAME"), "metadata.name");
}

/// Each labeler manifest ends with fleet-summary.yaml, byte for byte.
#[rstest]
#[case::nfd_sink("daemonset-nfd.yaml")]
#[case::kubernetes_sink("daemonset-kubernetes.yaml")]
#[case::nodefeature_sink("daemonset-nodefeature.yaml")]
fn labeler_manifest_ships_the_summarizer_verbatim(#[case] file: &str) {
    let fleet_summary = text(FLEET_SUMMARY);
    let current = text(file);
    let (labeler, _) = split_manifest(&current);
    let expected = with_summarizer(labeler, &fleet_summary);
    if current == expected {
        return;
    }
    if std::env::var_os("UPDATE_EXAMPLES").is_some() {
        std::fs::write(example_path(file), &expected).unwrap();
        return;
    }
    panic!(
        "examples/labeler/{file} must end with a verbatim copy of {FLEET_SUMMARY} after \
         \"---\\n{SUMMARIZER_MARKER}\"; rewrite it with \
         UPDATE_EXAMPLES=1 cargo test -p gpu-topology-labeler --test examples"
    );
}

/// The summarizer's flags, parsed as the binary parses them.
fn summarizer_config(
    container: &Value,
) -> gpu_topology_labeler::summarize::kubernetes::SummarizerConfig {
    let mut argv = vec!["gpu-topology-labeler"];
    argv.extend(args(container));
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Some(Command::Summarize(summarize)) = cli.command else {
        panic!("{argv:?} is not the summarize subcommand");
    };
    assert_eq!(summarize.interval_warning(), None, "{argv:?}");
    summarize
        .into_config()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
}

#[rstest]
#[case::on_its_own(FLEET_SUMMARY)]
#[case::with_the_nfd_sink("daemonset-nfd.yaml")]
#[case::with_the_kubernetes_sink("daemonset-kubernetes.yaml")]
#[case::with_the_nodefeature_sink("daemonset-nodefeature.yaml")]
fn fleet_summary_deployment_is_hardened_and_least_privileged(#[case] file: &str) {
    let docs = summarizer_documents(file);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment"
        ]
    );
    let deployment = only(&docs, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(
        deployment["spec"]["strategy"]["type"], "Recreate",
        "one writer at a time"
    );
    let pod = &deployment["spec"]["template"]["spec"];
    for host_namespace in ["hostNetwork", "hostPID", "hostIPC"] {
        assert!(
            pod[host_namespace].is_null() || pod[host_namespace] == false,
            "{host_namespace}"
        );
    }
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    let container = hardened_container(pod);
    // The flags are a valid summarizer configuration, within the policy's
    // default staleness limit.
    let config = summarizer_config(container);
    assert!(!config.once, "a Deployment runs the loop");
    // No volumes at all, so no hostPath: it only talks to the API server.
    assert!(pod["volumes"].is_null(), "{}", pod["volumes"]);
    assert!(container["volumeMounts"].is_null());
    let resources = &container["resources"];
    for (kind, resource) in [
        ("requests", "cpu"),
        ("requests", "memory"),
        ("limits", "memory"),
    ] {
        assert!(resources[kind][resource].is_string(), "{kind}.{resource}");
    }

    let account = only(&docs, "ServiceAccount");
    let namespace = account["metadata"]["namespace"].as_str().unwrap();
    assert_eq!(deployment["metadata"]["namespace"], namespace);
    assert_eq!(pod["serviceAccountName"], account["metadata"]["name"]);
    let subjects = json!([{ "kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": namespace }]);

    // Nodes: list only; with --dra, DeviceClasses and ResourceSlices: list
    // only, and without it nothing of resource.k8s.io.
    let cluster_role = only(&docs, "ClusterRole");
    let mut rules = vec![json!({ "apiGroups": [""], "resources": ["nodes"], "verbs": ["list"] })];
    if config.dra {
        rules.push(json!({ "apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses", "resourceslices"], "verbs": ["list"] }));
    }
    // With --nodefeature-heartbeats, the labeler's NodeFeatures: list only.
    if config.nodefeature_heartbeats {
        rules.push(json!({ "apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"], "verbs": ["list"] }));
    }
    assert_eq!(cluster_role["rules"], Value::Array(rules));
    let cluster_binding = only(&docs, "ClusterRoleBinding");
    assert_eq!(cluster_binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(
        cluster_binding["roleRef"]["name"],
        cluster_role["metadata"]["name"]
    );
    assert_eq!(cluster_binding["subjects"], subjects);

    // The summary ConfigMap: create (first apply) and patch, on that name only,
    // in the namespace the container writes to.
    let role = only(&docs, "Role");
    assert_eq!(role["metadata"]["namespace"], config.namespace.as_str());
    assert_eq!(
        role["rules"],
        json!([{ "apiGroups": [""], "resources": ["configmaps"], "resourceNames": [config.name], "verbs": ["create", "patch"] }])
    );
    let binding = only(&docs, "RoleBinding");
    assert_eq!(binding["metadata"]["namespace"], config.namespace.as_str());
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"], subjects);
}

/// In a manifest that ships both, each ServiceAccount is bound to its own
/// roles only: the labeler gets nothing of the summarizer's, and the other
/// way round.
#[rstest]
#[case::nfd_sink("daemonset-nfd.yaml")]
#[case::kubernetes_sink("daemonset-kubernetes.yaml")]
#[case::nodefeature_sink("daemonset-nodefeature.yaml")]
fn the_labeler_and_the_summarizer_hold_separate_permissions(#[case] file: &str) {
    let account_of = |docs: &[Value], kind: &str| -> Value {
        let pod = &only(docs, kind)["spec"]["template"]["spec"];
        let namespace = &only(docs, kind)["metadata"]["namespace"];
        json!({"name": pod["serviceAccountName"].as_str().unwrap_or("default"), "namespace": namespace})
    };
    let labeler = labeler_documents(file);
    let summarizer = summarizer_documents(file);
    let labeler_account = account_of(&labeler, "DaemonSet");
    let summarizer_account = account_of(&summarizer, "Deployment");
    assert_ne!(labeler_account, summarizer_account);
    for (docs, account) in [
        (&labeler, &labeler_account),
        (&summarizer, &summarizer_account),
    ] {
        for binding in docs
            .iter()
            .filter(|d| d["kind"] == "RoleBinding" || d["kind"] == "ClusterRoleBinding")
        {
            for subject in binding["subjects"].as_array().unwrap() {
                assert_eq!(
                    json!({"name": subject["name"], "namespace": subject["namespace"]}),
                    *account,
                    "{file}: {}",
                    binding["metadata"]["name"]
                );
            }
        }
    }
    // No object of one is also an object of the other.
    let names = |docs: &[Value]| -> Vec<(Value, Value, Value)> {
        docs.iter()
            .map(|d| {
                (
                    d["kind"].clone(),
                    d["metadata"]["namespace"].clone(),
                    d["metadata"]["name"].clone(),
                )
            })
            .collect()
    };
    let labeler_objects = names(&labeler);
    for object in names(&summarizer) {
        assert!(
            !labeler_objects.contains(&object),
            "{file}: {object:?} twice"
        );
    }
}

#[test]
fn dockerfile_is_multi_stage_and_non_root() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/labeler/Dockerfile");
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("FROM ")).count(), 2);
    assert!(text.lines().any(|l| l.trim() == "USER 65532:65532"));
}

/// A workload's selector must not match another example's pods in the same
/// namespace, or two controllers would claim the same pods. The summarizer's
/// Deployment is in several files; it is one object (same kind, namespace and
/// name), and identical wherever it is.
#[test]
fn no_workload_selects_another_examples_pods() {
    let mut workloads: Vec<(String, Value)> = Vec::new();
    for file in LABELER_MANIFESTS.into_iter().chain([FLEET_SUMMARY]) {
        for workload in documents(file)
            .into_iter()
            .filter(|d| d["kind"] == "DaemonSet" || d["kind"] == "Deployment")
        {
            // The labeler DaemonSets are alternatives (one per cluster), and
            // two of them share a namespace and a name; their component label
            // tells them apart.
            let same = |other: &Value| {
                ["kind", "namespace", "name", "component"]
                    .iter()
                    .all(|key| {
                        let field = |w: &Value| match *key {
                            "kind" => w["kind"].clone(),
                            "component" => {
                                w["metadata"]["labels"]["app.kubernetes.io/component"].clone()
                            }
                            _ => w["metadata"][key].clone(),
                        };
                        field(other) == field(&workload)
                    })
            };
            match workloads.iter().find(|(_, seen)| same(seen)) {
                Some((seen_in, seen)) => assert_eq!(*seen, workload, "{file} and {seen_in} differ"),
                None => workloads.push((file.to_owned(), workload)),
            }
        }
    }
    assert_eq!(workloads.len(), 4, "three labelers and the summarizer");
    let selects = |selector: &Value, labels: &Value| {
        selector["matchLabels"]
            .as_object()
            .unwrap()
            .iter()
            .all(|(key, value)| labels[key] == *value)
    };
    for (index, (file, workload)) in workloads.iter().enumerate() {
        let own_labels = &workload["spec"]["template"]["metadata"]["labels"];
        assert!(
            selects(&workload["spec"]["selector"], own_labels),
            "{file} does not select its own pods"
        );
        for (other_index, (other_file, other)) in workloads.iter().enumerate() {
            if index == other_index
                || workload["metadata"]["namespace"] != other["metadata"]["namespace"]
            {
                continue;
            }
            assert!(
                !selects(
                    &workload["spec"]["selector"],
                    &other["spec"]["template"]["metadata"]["labels"]
                ),
                "{file}'s selector matches the pods of {other_file}"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Health and metrics: the probes, the scrape and the alerts

/// The PodMonitor and the alerts for the Prometheus Operator.
const POD_MONITOR: &str = "monitoring/podmonitor.yaml";
const ALERTS: &str = "monitoring/alerts.yaml";

/// The port of the container's `--metrics-address`.
fn metrics_port(container: &Value) -> u16 {
    let address = args(container)
        .into_iter()
        .find_map(|a| a.strip_prefix("--metrics-address="))
        .expect("--metrics-address=IP:PORT");
    gpu_topology_labeler::cli::parse_metrics_address(address)
        .unwrap()
        .port()
}

/// Each DaemonSet serves the endpoint on its pod's IP, names the port
/// `metrics`, probes it, and says where to scrape it.
#[rstest]
#[case::nfd_sink("daemonset-nfd.yaml")]
#[case::kubernetes_sink("daemonset-kubernetes.yaml")]
#[case::nodefeature_sink("daemonset-nodefeature.yaml")]
fn daemonset_serves_probes_and_metrics(#[case] file: &str) {
    let docs = documents(file);
    let template = &only(&docs, "DaemonSet")["spec"]["template"];
    let container = &template["spec"]["containers"][0];
    let port = metrics_port(container);
    assert!(
        args(container).contains(&"--metrics-address=0.0.0.0:8080"),
        "every interface (the kubelet probes the pod's IP), the default port"
    );
    assert_eq!(
        container["ports"],
        json!([{"name": "metrics", "containerPort": port, "protocol": "TCP"}]),
        "one port, no hostPort"
    );
    assert_eq!(
        container["readinessProbe"]["httpGet"],
        json!({"path": "/readyz", "port": "metrics"})
    );
    assert_eq!(
        container["livenessProbe"]["httpGet"],
        json!({"path": "/livez", "port": "metrics"})
    );
    // A restart only after the loop has not answered for a while: at least
    // two minutes of failed probes.
    let liveness = &container["livenessProbe"];
    let tolerated = liveness["periodSeconds"].as_u64().unwrap()
        * liveness["failureThreshold"].as_u64().unwrap();
    assert!(tolerated >= 120, "{liveness}");
    assert_eq!(
        template["metadata"]["annotations"],
        json!({
            "prometheus.io/scrape": "true",
            "prometheus.io/port": port.to_string(),
            "prometheus.io/path": "/metrics",
        })
    );
}

/// The label selector of `selector` matches `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let exact = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(key, value)| labels[key] == *value);
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|expression| {
            let value = &labels[expression["key"].as_str().unwrap()];
            let listed = expression["values"].as_array().unwrap().contains(value);
            match expression["operator"].as_str().unwrap() {
                "In" => listed,
                "NotIn" => !listed,
                other => panic!("operator {other} not modelled"),
            }
        });
    exact && expressions
}

/// The PodMonitor scrapes the `metrics` port of every labeler DaemonSet's
/// pods, in their namespaces, and not the summarizer's; its job is the one
/// the alerts select `up` by.
#[test]
fn the_pod_monitor_scrapes_every_labeler_and_no_summarizer() {
    let monitor = only(&documents(POD_MONITOR), "PodMonitor").clone();
    let spec = &monitor["spec"];
    let endpoints = spec["podMetricsEndpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0]["port"], "metrics");
    assert_eq!(endpoints[0]["path"], "/metrics");
    let namespaces = spec["namespaceSelector"]["matchNames"].as_array().unwrap();
    for file in LABELER_MANIFESTS {
        let docs = documents(file);
        let daemonset = only(&docs, "DaemonSet");
        let template = &daemonset["spec"]["template"];
        assert!(
            namespaces.contains(&daemonset["metadata"]["namespace"]),
            "{file}: its namespace is not scraped"
        );
        assert!(
            selects(&spec["selector"], &template["metadata"]["labels"]),
            "{file}: its pods are not selected"
        );
        let job = &template["metadata"]["labels"][spec["jobLabel"].as_str().unwrap()];
        assert_eq!(
            *job, "gpu-topology-labeler",
            "{file}: the job the alerts select"
        );
        let ports = template["spec"]["containers"][0]["ports"]
            .as_array()
            .unwrap();
        assert!(ports.iter().any(|p| p["name"] == "metrics"), "{file}");
    }
    let summarizer = only(&documents(FLEET_SUMMARY), "Deployment").clone();
    assert!(!selects(
        &spec["selector"],
        &summarizer["spec"]["template"]["metadata"]["labels"]
    ));
}

/// The alert rules of alerts.yaml: (name, rule).
fn alert_rules() -> Vec<(String, Value)> {
    let rule = only(&documents(ALERTS), "PrometheusRule").clone();
    rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|group| group["rules"].as_array().unwrap().clone())
        .map(|rule| (rule["alert"].as_str().unwrap().to_owned(), rule))
        .collect()
}

fn alert(name: &str) -> Value {
    alert_rules()
        .into_iter()
        .find(|(alert, _)| alert == name)
        .unwrap_or_else(|| panic!("no alert {name}"))
        .1
}

#[test]
fn every_alert_says_how_bad_and_what_happened() {
    let names: Vec<String> = alert_rules().into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        [
            "GpuTopologyLabelerStale",
            "GpuTopologyLabelerDown",
            "GpuTopologyLabelerAbsent",
            "GpuTopologyLabelerDiscoveryErrors",
            "GpuTopologyLabelerPublishErrors",
        ]
    );
    for (name, rule) in alert_rules() {
        assert!(
            ["warning", "critical"].contains(&rule["labels"]["severity"].as_str().unwrap()),
            "{name}"
        );
        gpu_topology::duration::parse_duration(rule["for"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for annotation in ["summary", "description"] {
            assert!(rule["annotations"][annotation].is_string(), "{name}");
        }
    }
    // `up` of the job the PodMonitor sets.
    for name in ["GpuTopologyLabelerDown", "GpuTopologyLabelerAbsent"] {
        assert!(
            alert(name)["expr"]
                .as_str()
                .unwrap()
                .contains("up{job=\"gpu-topology-labeler\"}"),
            "{name}"
        );
    }
}

/// GpuTopologyLabelerStale fires before readers take a stopped labeler's
/// labels for stale, and never for a healthy one: its threshold exceeds the
/// longest a healthy labeler goes without publishing (the API sinks'
/// re-apply, the nfd sink's refresh at half its default expiry, plus a
/// round), and its threshold plus its `for` stay below the earliest time,
/// after the last publish, at which `gpu-topology audit` takes the labels
/// for stale (the heartbeat's stale age, less the heartbeat interval by
/// which the heartbeat sent may be older than the publish) or NFD drops the
/// nfd sink's (its default expiry).
#[test]
fn the_stale_alert_fires_before_readers_take_the_labels_for_stale() {
    use gpu_topology::{DEFAULT_STALE_AFTER_SECONDS, HEARTBEAT_INTERVAL_SECONDS};
    use gpu_topology_labeler::sinks::api::REAPPLY_INTERVAL;
    let rule = alert("GpuTopologyLabelerStale");
    let threshold: u64 = rule["expr"]
        .as_str()
        .unwrap()
        .strip_prefix("time() - gpu_topology_labeler_last_publish_timestamp_seconds > ")
        .expect("time() - gpu_topology_labeler_last_publish_timestamp_seconds > SECONDS")
        .trim()
        .parse()
        .unwrap();
    let pending = gpu_topology::duration::parse_duration(rule["for"].as_str().unwrap())
        .unwrap()
        .as_secs();
    let defaults = Cli::try_parse_from(["gpu-topology-labeler"]).unwrap();
    let round = defaults.interval.as_secs();
    let longest_quiet = (REAPPLY_INTERVAL.as_secs() as u64).max(defaults.nfd_expiry.as_secs() / 2);
    assert!(
        threshold > longest_quiet + round,
        "{threshold}s: a healthy labeler may go {longest_quiet}s and a round without publishing"
    );
    let earliest_stale = (DEFAULT_STALE_AFTER_SECONDS - HEARTBEAT_INTERVAL_SECONDS)
        .min(defaults.nfd_expiry.as_secs());
    assert!(
        threshold + pending < earliest_stale,
        "{threshold}s + for {pending}s: readers take the labels for stale {earliest_stale}s after the last publish"
    );
}
