//! The per-cluster manifests in examples/deploy/: each is one of the labeler
//! manifests of examples/labeler/ (with its summarizer) with what a cluster
//! type changes, rendered here and checked to be what is checked in, so an
//! operator applies one file and never edits YAML. `UPDATE_EXAMPLES=1 cargo
//! test -p gpu-topology-labeler --test deploy` rewrites them after an edit of
//! a base manifest or of [`VARIANTS`]. examples/deploy/README.md says which
//! file is for which cluster, and how each differs from its base.
//!
//! What a cluster type changes, from the distributions' own sources:
//! - the kubelet config file the labeler reads (hostPath, `type: File`, so a
//!   wrong path shows as ContainerCreating, never as defaults published):
//!   kubeadm writes /var/lib/kubelet/config.yaml (kubeadm's
//!   `kubeletConfigFileName`); EKS AL2023's nodeadm writes
//!   /etc/kubernetes/kubelet/config.json and drop-ins in
//!   /etc/kubernetes/kubelet/config.json.d (awslabs/amazon-eks-ami nodeadm
//!   tests: `assert::json-files-equal /etc/kubernetes/kubelet/config.json`,
//!   `config.json.d/40-nodeadm.conf`); GKE runs the kubelet with
//!   `--config /home/kubernetes/kubelet-config.yaml` (GKE's kubelet command
//!   line; kube-bench's GKE config); AKS's AgentBaker writes
//!   /etc/default/kubeletconfig.json (`KUBELET_CONFIG_FILE_FLAGS="--config
//!   /etc/default/kubeletconfig.json"`); OpenShift's MCO starts the kubelet
//!   with `--config=/etc/kubernetes/kubelet.conf`. The labeler's parser reads
//!   YAML, and so JSON (a subset), so every one of these parses;
//! - which nodes to run on: NFD's PCI labels where NFD runs (the base's
//!   affinity), the platform's own GPU label where there is one and no NFD;
//! - `runtimeClassName: nvidia` where the GPU Operator creates that
//!   RuntimeClass; none where the NVIDIA runtime is the node's default;
//! - OpenShift: `delete` on the NodeFeatures (OwnerReferencesPermissionEnforcement)
//!   and `use` of the SecurityContextConstraints the pods need.

use clap::Parser;
use gpu_topology_labeler::cli::Cli;
use rstest::rstest;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Where the pod sees the kubelet's drop-in directory, when there is one.
const DROP_IN_MOUNT: &str = "/host/kubelet/config.d";

/// Which nodes the labeler runs on.
#[derive(Clone, Copy)]
enum Nodes {
    /// The base manifest's choice (NFD's PCI labels; every Linux node for the
    /// kubernetes sink).
    Base,
    /// `nodeSelector: {key: value}` instead.
    Selector(&'static str, &'static str),
    /// A required node affinity `key Exists` instead.
    Exists(&'static str),
}

/// What the NVIDIA runtime is, for nvidia-smi/NVML to be injected.
#[derive(Clone, Copy, PartialEq)]
enum Runtime {
    /// The base's `runtimeClassName: nvidia` (the GPU Operator's RuntimeClass).
    GpuOperator,
    /// None: the node's default runtime is NVIDIA's.
    NodeDefault,
}

struct Variant {
    /// The file under examples/deploy/.
    file: &'static str,
    /// The manifest under examples/labeler/ it is made from.
    base: &'static str,
    /// One line for the file's header: the cluster it is for.
    cluster: &'static str,
    kubelet_config: &'static str,
    kubelet_config_dir: Option<&'static str>,
    nodes: Nodes,
    runtime: Runtime,
    openshift: bool,
}

const NODEFEATURE: &str = "daemonset-nodefeature.yaml";
const NFD_FILE: &str = "daemonset-nfd.yaml";
const KUBERNETES: &str = "daemonset-kubernetes.yaml";

const KUBEADM_CONFIG: &str = "/var/lib/kubelet/config.yaml";
const EKS_CONFIG: &str = "/etc/kubernetes/kubelet/config.json";
const EKS_CONFIG_DIR: &str = "/etc/kubernetes/kubelet/config.json.d";
const GKE_CONFIG: &str = "/home/kubernetes/kubelet-config.yaml";
const AKS_CONFIG: &str = "/etc/default/kubeletconfig.json";
const OPENSHIFT_CONFIG: &str = "/etc/kubernetes/kubelet.conf";

const VARIANTS: &[Variant] = &[
    Variant {
        file: "kubeadm-gpu-operator.yaml",
        base: NODEFEATURE,
        cluster: "kubeadm nodes with the NVIDIA GPU Operator 23.9+ and the NFD it bundles",
        kubelet_config: KUBEADM_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::GpuOperator,
        openshift: false,
    },
    Variant {
        file: "kubeadm-nfd.yaml",
        base: NODEFEATURE,
        cluster: "kubeadm nodes with a standalone NFD v0.14+ and the NVIDIA runtime as containerd's default",
        kubelet_config: KUBEADM_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::NodeDefault,
        openshift: false,
    },
    Variant {
        file: "kubeadm-nfd-file.yaml",
        base: NFD_FILE,
        cluster: "kubeadm nodes with NFD v0.14+ whose NodeFeature API is off (features.d file), NVIDIA runtime as default",
        kubelet_config: KUBEADM_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::NodeDefault,
        openshift: false,
    },
    Variant {
        file: "kubeadm-no-nfd.yaml",
        base: KUBERNETES,
        cluster: "kubeadm nodes without NFD (every Linux node; NVIDIA runtime as default on GPU nodes)",
        kubelet_config: KUBEADM_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::NodeDefault,
        openshift: false,
    },
    Variant {
        file: "eks-gpu-operator.yaml",
        base: NODEFEATURE,
        cluster: "EKS, Amazon Linux 2023 nodes (nodeadm), with the NVIDIA GPU Operator and its NFD",
        kubelet_config: EKS_CONFIG,
        kubelet_config_dir: Some(EKS_CONFIG_DIR),
        nodes: Nodes::Base,
        runtime: Runtime::GpuOperator,
        openshift: false,
    },
    Variant {
        file: "eks-no-nfd.yaml",
        base: KUBERNETES,
        cluster: "EKS, Amazon Linux 2023 accelerated AMIs (NVIDIA runtime as default), no NFD",
        kubelet_config: EKS_CONFIG,
        kubelet_config_dir: Some(EKS_CONFIG_DIR),
        nodes: Nodes::Base,
        runtime: Runtime::NodeDefault,
        openshift: false,
    },
    Variant {
        file: "gke-gpu-operator.yaml",
        base: NODEFEATURE,
        cluster: "GKE nodes with the NVIDIA GPU Operator and its NFD",
        kubelet_config: GKE_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::GpuOperator,
        openshift: false,
    },
    Variant {
        file: "gke-no-nfd.yaml",
        base: KUBERNETES,
        cluster: "GKE GPU node pools with Google's driver installer and device plugin, no NFD",
        kubelet_config: GKE_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Exists("cloud.google.com/gke-accelerator"),
        runtime: Runtime::NodeDefault,
        openshift: false,
    },
    Variant {
        file: "aks-gpu-operator.yaml",
        base: NODEFEATURE,
        cluster: "AKS node pools with the NVIDIA GPU Operator and its NFD",
        kubelet_config: AKS_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::GpuOperator,
        openshift: false,
    },
    Variant {
        file: "aks-no-nfd.yaml",
        base: KUBERNETES,
        cluster: "AKS GPU node pools (AKS's NVIDIA runtime as default), no NFD",
        kubelet_config: AKS_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Selector("kubernetes.azure.com/accelerator", "nvidia"),
        runtime: Runtime::NodeDefault,
        openshift: false,
    },
    Variant {
        file: "openshift.yaml",
        base: NODEFEATURE,
        cluster: "OpenShift with the NFD Operator and the NVIDIA GPU Operator",
        kubelet_config: OPENSHIFT_CONFIG,
        kubelet_config_dir: None,
        nodes: Nodes::Base,
        runtime: Runtime::GpuOperator,
        openshift: true,
    },
];

/// OpenShift's SecurityContextConstraints each pod needs. The labeler mounts
/// hostPath volumes, which only `hostmount-anyuid`, `hostaccess` and
/// `privileged` of the built-in SCCs allow; the first two list no seccomp
/// profiles, and an SCC without any refuses a pod that sets one ("seccomp may
/// not be set", openshift/apiserver-library-go's seccomp strategy), as ours
/// do (RuntimeDefault). So the OpenShift file creates its own SCC, which
/// allows exactly what the labeler pod asks for ([`labeler_scc`]). The
/// summarizer runs as uid 65532, outside a namespace's allocated range:
/// `nonroot-v2` allows any non-root uid with RuntimeDefault seccomp and every
/// capability dropped.
const LABELER_SCC: &str = "gpu-topology-labeler";
const SUMMARIZER_SCC: &str = "nonroot-v2";

/// The labeler's own SCC on OpenShift: hostPath and the projected token,
/// uid 65532 only, no capability, no privilege escalation, read-only root
/// filesystem, RuntimeDefault seccomp; SELinux as the namespace assigns.
/// Granted by RBAC (`use`), to no user or group directly.
fn labeler_scc() -> Value {
    json!({
        "apiVersion": "security.openshift.io/v1",
        "kind": "SecurityContextConstraints",
        "metadata": {"name": LABELER_SCC},
        "allowHostDirVolumePlugin": true,
        "allowHostIPC": false,
        "allowHostNetwork": false,
        "allowHostPID": false,
        "allowHostPorts": false,
        "allowPrivilegeEscalation": false,
        "allowPrivilegedContainer": false,
        "allowedCapabilities": [],
        "defaultAddCapabilities": [],
        "requiredDropCapabilities": ["ALL"],
        "fsGroup": {"type": "RunAsAny"},
        "supplementalGroups": {"type": "RunAsAny"},
        "runAsUser": {"type": "MustRunAs", "uid": 65532},
        "seLinuxContext": {"type": "MustRunAs"},
        "seccompProfiles": ["runtime/default"],
        "readOnlyRootFilesystem": true,
        "priority": null,
        "users": [],
        "groups": [],
        "volumes": ["hostPath", "projected"],
    })
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).unwrap()
}

fn set_volume_path(pod: &mut Value, volume: &str, path: &str) {
    let volumes = pod["volumes"].as_array_mut().unwrap();
    let found = volumes
        .iter_mut()
        .find(|v| v["name"] == volume)
        .unwrap_or_else(|| panic!("no volume {volume}"));
    found["hostPath"]["path"] = json!(path);
}

/// `use` of one SecurityContextConstraints, for OpenShift.
fn scc_rule(scc: &str) -> Value {
    json!({
        "apiGroups": ["security.openshift.io"],
        "resources": ["securitycontextconstraints"],
        "resourceNames": [scc],
        "verbs": ["use"],
    })
}

/// The base's documents with the variant's changes.
fn rendered_documents(variant: &Variant) -> Vec<Value> {
    let mut docs = documents(&read(&repo().join("examples/labeler").join(variant.base)));
    for doc in &mut docs {
        let kind = doc["kind"].as_str().unwrap().to_owned();
        let name = doc["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if kind == "DaemonSet" {
            let pod = &mut doc["spec"]["template"]["spec"];
            set_volume_path(pod, "kubelet-config", variant.kubelet_config);
            if let Some(dir) = variant.kubelet_config_dir {
                pod["volumes"].as_array_mut().unwrap().push(json!({
                    "name": "kubelet-config-dir",
                    "hostPath": {"path": dir, "type": "Directory"},
                }));
                let container = &mut pod["containers"][0];
                container["volumeMounts"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({
                        "name": "kubelet-config-dir",
                        "mountPath": DROP_IN_MOUNT,
                        "readOnly": true,
                    }));
                container["args"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!(format!("--kubelet-config-dir={DROP_IN_MOUNT}")));
            }
            let spec = pod.as_object_mut().unwrap();
            match variant.nodes {
                Nodes::Base => {}
                Nodes::Selector(key, value) => {
                    spec.remove("affinity");
                    spec.insert("nodeSelector".into(), json!({ key: value }));
                }
                Nodes::Exists(key) => {
                    spec.remove("nodeSelector");
                    spec.insert(
                        "affinity".into(),
                        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "Exists"}]}]
                        }}}),
                    );
                }
            }
            match variant.runtime {
                Runtime::GpuOperator => {
                    spec.insert("runtimeClassName".into(), json!("nvidia"));
                }
                Runtime::NodeDefault => {
                    spec.remove("runtimeClassName");
                }
            }
        }
        if variant.openshift && kind == "Role" {
            let rules = doc["rules"].as_array_mut().unwrap();
            if name == "gpu-topology-labeler" {
                // OwnerReferencesPermissionEnforcement: setting
                // ownerReferences needs delete on the object.
                for rule in rules.iter_mut() {
                    if rule["resources"] == json!(["nodefeatures"]) {
                        rule["verbs"].as_array_mut().unwrap().push(json!("delete"));
                    }
                }
                rules.push(scc_rule(LABELER_SCC));
            } else if name == "gpu-topology-fleet-summary" {
                rules.push(scc_rule(SUMMARIZER_SCC));
            }
        }
    }
    if variant.openshift {
        let namespace = docs.iter().position(|d| d["kind"] == "Namespace").unwrap();
        docs.insert(namespace + 1, labeler_scc());
    }
    docs
}

fn header(variant: &Variant) -> String {
    format!(
        "# {cluster}.\n\
         # Generated from examples/labeler/{base} by labeler/tests/deploy.rs: do not edit;\n\
         # change the base or the variant there and run\n\
         #   UPDATE_EXAMPLES=1 cargo test -p gpu-topology-labeler --test deploy\n\
         # What differs from the base, and why: examples/deploy/README.md. The base's\n\
         # comments explain every field.\n\
         # kubelet config: {config}{dir}\n",
        cluster = variant.cluster,
        base = variant.base,
        config = variant.kubelet_config,
        dir = variant
            .kubelet_config_dir
            .map(|d| format!(" (drop-ins: {d})"))
            .unwrap_or_default(),
    )
}

fn render(variant: &Variant) -> String {
    let mut out = header(variant);
    for (index, doc) in rendered_documents(variant).iter().enumerate() {
        if index > 0 {
            out.push_str("---\n");
        }
        out.push_str(&serde_saphyr::to_string(doc).unwrap());
    }
    out
}

fn deploy_path(file: &str) -> PathBuf {
    repo().join("examples/deploy").join(file)
}

#[test]
fn every_rendered_manifest_is_checked_in_and_nothing_else() {
    let mut stale = Vec::new();
    for variant in VARIANTS {
        let expected = render(variant);
        let path = deploy_path(variant.file);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(expected.as_str()) {
            continue;
        }
        if std::env::var_os("UPDATE_EXAMPLES").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &expected).unwrap();
        } else {
            stale.push(variant.file);
        }
    }
    assert!(
        stale.is_empty(),
        "examples/deploy/{stale:?} differ from what labeler/tests/deploy.rs renders; \
         rewrite them with UPDATE_EXAMPLES=1 cargo test -p gpu-topology-labeler --test deploy"
    );
    let mut on_disk: Vec<String> = std::fs::read_dir(repo().join("examples/deploy"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = VARIANTS.iter().map(|v| v.file.to_owned()).collect();
    expected.sort();
    assert_eq!(
        on_disk, expected,
        "a file in examples/deploy/ no variant renders"
    );
}

/// The README of examples/deploy names every file, with the cluster it is for.
#[test]
fn the_deploy_readme_names_every_file() {
    let readme = read(&deploy_path("README.md"));
    for variant in VARIANTS {
        assert!(
            readme.contains(&format!("`{}`", variant.file)),
            "examples/deploy/README.md does not name {}",
            variant.file
        );
    }
}

fn daemonset(docs: &[Value]) -> &Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "DaemonSet").collect();
    assert_eq!(found.len(), 1);
    found[0]
}

fn args(container: &Value) -> Vec<String> {
    container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect()
}

/// The checked-in file, parsed (not the rendering), so that what is checked
/// is what an operator applies.
fn checked_in(variant: &Variant) -> Vec<Value> {
    documents(&read(&deploy_path(variant.file)))
}

fn variant(file: &str) -> &'static Variant {
    VARIANTS.iter().find(|v| v.file == file).unwrap()
}

/// Every cluster's checked-in manifest, by each check below.
#[rstest]
#[case::kubeadm_gpu_operator("kubeadm-gpu-operator.yaml")]
#[case::kubeadm_nfd("kubeadm-nfd.yaml")]
#[case::kubeadm_nfd_file("kubeadm-nfd-file.yaml")]
#[case::kubeadm_no_nfd("kubeadm-no-nfd.yaml")]
#[case::eks_gpu_operator("eks-gpu-operator.yaml")]
#[case::eks_no_nfd("eks-no-nfd.yaml")]
#[case::gke_gpu_operator("gke-gpu-operator.yaml")]
#[case::gke_no_nfd("gke-no-nfd.yaml")]
#[case::aks_gpu_operator("aks-gpu-operator.yaml")]
#[case::aks_no_nfd("aks-no-nfd.yaml")]
#[case::openshift("openshift.yaml")]
fn rendered_manifest(
    #[case] file: &str,
    #[values(
        reads_the_distributions_kubelet_config,
        selects_nodes_the_cluster_labels_and_its_runtime,
        keeps_the_bases_rbac_and_labels_the_namespaces_it_creates,
        keeps_the_bases_probes_and_metrics
    )]
    check: fn(&Variant, Vec<Value>),
) {
    let variant = variant(file);
    check(variant, checked_in(variant));
}

fn reads_the_distributions_kubelet_config(variant: &Variant, docs: Vec<Value>) {
    let pod = &daemonset(&docs)["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let volume = |name: &str| {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .cloned()
    };
    let config = volume("kubelet-config").expect("kubelet-config volume");
    assert_eq!(
        config["hostPath"],
        json!({"path": variant.kubelet_config, "type": "File"})
    );
    let args = args(container);
    match variant.kubelet_config_dir {
        Some(dir) => {
            assert_eq!(
                volume("kubelet-config-dir").unwrap()["hostPath"],
                json!({"path": dir, "type": "Directory"})
            );
            assert!(args.contains(&format!("--kubelet-config-dir={DROP_IN_MOUNT}")));
        }
        None => {
            assert!(volume("kubelet-config-dir").is_none());
            assert!(!args.iter().any(|a| a.starts_with("--kubelet-config-dir")));
        }
    }
    // Every mount but NFD's features.d is read-only.
    for mount in container["volumeMounts"].as_array().unwrap() {
        if mount["name"] != "features-d" {
            assert_eq!(mount["readOnly"], true, "{mount}");
        }
    }
    // The flags, with sample downward-API values, are a valid configuration.
    let mut argv = vec!["gpu-topology-labeler".to_owned()];
    argv.extend(args);
    for (variable, flag, sample) in [
        ("NODE_NAME", "--node-name", "gpu-node-1"),
        ("POD_NAME", "--pod-name", "gpu-topology-labeler-x7k2p"),
        ("POD_NAMESPACE", "--namespace", "gpu-topology-labeler"),
    ] {
        let env = container["env"].as_array().unwrap();
        if env.iter().any(|e| e["name"] == variable) {
            argv.extend([flag.to_owned(), sample.to_owned()]);
        }
    }
    let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    cli.into_config()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
}

fn selects_nodes_the_cluster_labels_and_its_runtime(variant: &Variant, docs: Vec<Value>) {
    let pod = &daemonset(&docs)["spec"]["template"]["spec"];
    let terms = &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    let affinity_keys: Vec<&str> = terms
        .as_array()
        .map(|terms| {
            terms
                .iter()
                .flat_map(|t| t["matchExpressions"].as_array().unwrap())
                .map(|e| e["key"].as_str().unwrap())
                .collect()
        })
        .unwrap_or_default();
    match (variant.nodes, variant.base) {
        // NFD's PCI labels: stock NFD's class+vendor and the GPU Operator's
        // vendor-only form, either of which NFD sets on an NVIDIA node.
        (Nodes::Base, NODEFEATURE | NFD_FILE) => {
            assert!(pod["nodeSelector"].is_null());
            assert_eq!(
                affinity_keys,
                [
                    "feature.node.kubernetes.io/pci-0302_10de.present",
                    "feature.node.kubernetes.io/pci-0300_10de.present",
                    "feature.node.kubernetes.io/pci-10de.present",
                ]
            );
        }
        // No NFD and no platform label: a label every node has.
        (Nodes::Base, _) => {
            assert_eq!(pod["nodeSelector"], json!({"kubernetes.io/os": "linux"}));
            assert!(affinity_keys.is_empty());
        }
        (Nodes::Selector(key, value), _) => {
            assert_eq!(pod["nodeSelector"], json!({ key: value }));
            assert!(affinity_keys.is_empty());
        }
        (Nodes::Exists(key), _) => {
            assert!(pod["nodeSelector"].is_null());
            assert_eq!(affinity_keys, [key]);
        }
    }
    // No label the labeler itself publishes: it must run before they exist.
    assert!(!affinity_keys
        .iter()
        .any(|k| k.starts_with("gpu-topology.io/")));
    match variant.runtime {
        Runtime::GpuOperator => assert_eq!(pod["runtimeClassName"], "nvidia"),
        Runtime::NodeDefault => assert!(pod["runtimeClassName"].is_null()),
    }
    // The runtime injects nvidia-smi and NVML for all GPUs, allocating none.
    let env = &pod["containers"][0]["env"];
    for (name, value) in [
        ("NVIDIA_VISIBLE_DEVICES", "all"),
        ("NVIDIA_DRIVER_CAPABILITIES", "utility"),
    ] {
        assert!(
            env.as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == name && e["value"] == value),
            "{name}={value}"
        );
    }
}

fn keeps_the_bases_rbac_and_labels_the_namespaces_it_creates(variant: &Variant, docs: Vec<Value>) {
    let base = documents(&read(&repo().join("examples/labeler").join(variant.base)));
    // The same objects as the base, in the same order.
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
    // OpenShift's adds the labeler's SCC (checked below).
    let docs: Vec<Value> = docs
        .into_iter()
        .filter(|d| d["kind"] != "SecurityContextConstraints")
        .collect();
    assert_eq!(names(&docs), names(&base));
    // A namespace a manifest creates says its Pod Security level: the
    // labeler's hostPath mounts need `privileged`.
    for namespace in docs.iter().filter(|d| d["kind"] == "Namespace") {
        assert_eq!(
            namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "privileged"
        );
    }
    // Every object is in a namespace the file creates, or in kube-system
    // (exempt from Pod Security on kubeadm and the managed distributions).
    let created: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == "Namespace")
        .map(|d| &d["metadata"]["name"])
        .collect();
    for doc in &docs {
        let namespace = &doc["metadata"]["namespace"];
        assert!(
            namespace.is_null() || namespace == "kube-system" || created.contains(&namespace),
            "{}/{} in {namespace}",
            doc["kind"],
            doc["metadata"]["name"]
        );
    }
    // RBAC: the base's rules, plus on OpenShift exactly the SCC `use` and the
    // NodeFeatures' `delete`, nothing else.
    for (doc, base_doc) in docs.iter().zip(&base) {
        if !["Role", "ClusterRole"].contains(&doc["kind"].as_str().unwrap()) {
            assert_eq!(doc.get("rules"), base_doc.get("rules"), "{}", doc["kind"]);
            continue;
        }
        let mut expected = base_doc["rules"].clone();
        if variant.openshift && doc["kind"] == "Role" {
            let rules = expected.as_array_mut().unwrap();
            if doc["metadata"]["name"] == "gpu-topology-labeler" {
                rules[0]["verbs"] = json!(["create", "patch", "delete"]);
                rules.push(scc_rule(LABELER_SCC));
            } else {
                rules.push(scc_rule(SUMMARIZER_SCC));
            }
        }
        assert_eq!(doc["rules"], expected, "{}", doc["metadata"]["name"]);
    }
}

/// The health endpoint as the base serves it (labeler/tests/examples.rs
/// checks the base): the same `--metrics-address`, port, probes and scrape
/// annotations.
fn keeps_the_bases_probes_and_metrics(variant: &Variant, docs: Vec<Value>) {
    let base = documents(&read(&repo().join("examples/labeler").join(variant.base)));
    let template = &daemonset(&docs)["spec"]["template"];
    let base_template = &daemonset(&base)["spec"]["template"];
    assert_eq!(
        template["metadata"]["annotations"],
        base_template["metadata"]["annotations"]
    );
    let container = &template["spec"]["containers"][0];
    let base_container = &base_template["spec"]["containers"][0];
    for field in ["ports", "readinessProbe", "livenessProbe"] {
        assert!(
            container[field].is_array() || container[field].is_object(),
            "{field}"
        );
        assert_eq!(container[field], base_container[field], "{field}");
    }
    let metrics_address = |container: &Value| -> Vec<String> {
        args(container)
            .into_iter()
            .filter(|a| a.starts_with("--metrics-address"))
            .collect()
    };
    assert_eq!(
        metrics_address(container),
        ["--metrics-address=0.0.0.0:8080"]
    );
    assert_eq!(metrics_address(container), metrics_address(base_container));
}

/// On OpenShift, the labeler's SCC admits its pod and nothing more: the pod's
/// uid, its volume types, its seccomp profile, no capability.
#[test]
fn openshift_scc_admits_exactly_the_labeler_pod() {
    let docs = checked_in(variant("openshift.yaml"));
    let scc = docs
        .iter()
        .find(|d| d["kind"] == "SecurityContextConstraints")
        .expect("the labeler's SCC");
    assert_eq!(*scc, labeler_scc());
    let pod = &daemonset(&docs)["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsUser"], scc["runAsUser"]["uid"]);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    for volume in pod["volumes"].as_array().unwrap() {
        assert!(
            volume["hostPath"].is_object(),
            "{volume}: not allowed by the SCC"
        );
    }
    let container = &pod["containers"][0]["securityContext"];
    assert_eq!(container["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(container["allowPrivilegeEscalation"], false);
    assert_eq!(container["readOnlyRootFilesystem"], true);
    // Only the labeler's ServiceAccount may use it, through its Role.
    let role = docs
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "gpu-topology-labeler")
        .unwrap();
    assert!(role["rules"]
        .as_array()
        .unwrap()
        .contains(&scc_rule(LABELER_SCC)));
    assert_eq!(scc["users"], json!([]));
    assert_eq!(scc["groups"], json!([]));
}
