//! The fleet from files: a [`ClusterReader`] that answers the policy's host
//! calls the way policy-server answers them from a cluster holding these
//! Nodes and this fleet-summary ConfigMap.
//!
//! - `list_all_resources` for v1 Node: the Nodes the request's label
//!   selector matches, each pruned to the request's field masks (the
//!   policy asks for `metadata.labels` and `metadata.name`), as a NodeList.
//! - `get_resource`: the summary ConfigMap when name and namespace match; a
//!   v1 Node by name from the Node file, and a NodeResourceTopology by name
//!   from the `--topology` file (what the binding check reads); each pruned
//!   to the request's masks. Any other object is not found, in the words
//!   the API server's 404 reaches the policy in (kube-rs' `ApiError`).
//! - Without a Node file the list is refused as policy-server refuses a
//!   resource the policy was not granted, so that the policy's own
//!   degrade-to-warning path runs. Without a Node file or a topology file,
//!   a GET of a Node or a NodeResourceTopology is answered with a host
//!   error that names the missing flag: no cluster was asked, so "not
//!   found" would be untrue.

use crate::fleet::masks::prune;
use crate::fleet::selector::Selector;
use crate::input::{read_file, read_object, Document, InputError};
use gpu_topology::nrt;
use gpu_topology_policy::cluster::host::ClusterReader;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::{json, Value};
use std::fmt;
use std::path::Path;

/// A host error as the policy reads it in Wasm: wapc-guest hands the host's
/// message over as `Host error: <message>` (its `ErrorKind::HostError`
/// display), which the policy's `KubewardenHost` passes on; native readers
/// answer in the same words, so that warnings read the same.
pub fn host_error(message: &str) -> String {
    format!("Host error: {message}")
}

/// policy-evaluator's answer to a call for a resource the policy was not
/// granted (the harness and kwctl use the same words).
pub fn not_granted(api_version: &str, kind: &str) -> String {
    format!(
        "Policy has not been granted access to Kubernetes {api_version}/{kind} resources. \
         The violation has been reported."
    )
}

/// The API server's 404 as policy-server hands it to the policy: kube-rs'
/// `ApiError` display (recorded in e2e-tests/scenarios/sessions), for a
/// core (`v1`) `kind`.
pub fn not_found(kind: &str, name: &str) -> String {
    not_found_resource(&format!("{}s", kind.to_lowercase()), name)
}

/// The resource the API server names in a 404 of `api_version`/`kind`:
/// its plural (as kube's RESTMapper guesses it), qualified by its group
/// outside the core group (`noderesourcetopologies.topology.node.k8s.io`),
/// as the API server's `NewNotFound` writes the qualified resource.
pub fn qualified_resource(api_version: &str, kind: &str) -> String {
    let resource = super::live::api_resource(api_version, kind);
    if resource.group.is_empty() {
        resource.plural
    } else {
        format!("{}.{}", resource.plural, resource.group)
    }
}

/// [`not_found`] of a qualified `resource` ([`qualified_resource`]).
pub fn not_found_resource(resource: &str, name: &str) -> String {
    format!(
        "ApiError: {resource} \"{name}\" not found: NotFound (ErrorResponse {{ status: \"Failure\", \
         message: \"{resource} \\\"{name}\\\" not found\", reason: \"NotFound\", code: 404 }})"
    )
}

/// A fleet file that cannot be used, naming the file, document and item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetFileError {
    Input(InputError),
    /// An object of the Node file that is not a Node.
    NotANode {
        place: String,
        kind: String,
    },
    /// A Node without `metadata` (a Node list printed without its fields).
    NoMetadata {
        place: String,
    },
    /// The summary file is not a ConfigMap with a name.
    NotAConfigMap {
        place: String,
        kind: String,
    },
    /// An object of the topology file that is not a NodeResourceTopology
    /// with a name.
    NotATopology {
        place: String,
        kind: String,
    },
}

impl fmt::Display for FleetFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetFileError::Input(error) => error.fmt(f),
            FleetFileError::NotANode { place, kind } => {
                write!(f, "{place}: is a {kind}, not a Node (--nodes takes what `kubectl get nodes -o yaml` prints)")
            }
            FleetFileError::NoMetadata { place } => write!(
                f,
                "{place}: the Node has no `metadata` (its labels and name): not a Node as the API prints it"
            ),
            FleetFileError::NotAConfigMap { place, kind } => write!(
                f,
                "{place}: is a {kind}, not the fleet-summary ConfigMap with a metadata.name"
            ),
            FleetFileError::NotATopology { place, kind } => write!(
                f,
                "{place}: is a {kind}, not a NodeResourceTopology with a metadata.name (--topology takes what `kubectl get noderesourcetopologies -o yaml` prints)"
            ),
        }
    }
}

impl std::error::Error for FleetFileError {}

impl From<InputError> for FleetFileError {
    fn from(error: InputError) -> Self {
        FleetFileError::Input(error)
    }
}

/// The fleet-summary ConfigMap and where it is.
#[derive(Debug, Clone)]
struct Summary {
    name: String,
    /// `None` when the file does not say: it then answers any namespace.
    namespace: Option<String>,
    object: Value,
}

/// A cluster made of files.
#[derive(Debug, Clone, Default)]
pub struct FileCluster {
    /// The Nodes, each with a `metadata` mapping; `None`: no Node file.
    nodes: Option<Vec<Value>>,
    summary: Option<Summary>,
    /// The NodeResourceTopology objects, each with a name; `None`: no
    /// topology file.
    topology: Option<Vec<Value>>,
}

impl FileCluster {
    /// Reads `--nodes` and `--summary`.
    pub fn load(nodes: Option<&Path>, summary: Option<&Path>) -> Result<Self, FleetFileError> {
        let nodes = nodes
            .map(|path| read_file(path).map_err(FleetFileError::from))
            .transpose()?
            .map(nodes_of)
            .transpose()?;
        let summary = summary
            .map(read_object)
            .transpose()?
            .map(summary_of)
            .transpose()?;
        Ok(FileCluster {
            nodes,
            summary,
            topology: None,
        })
    }

    /// A cluster of these Node objects, as the API server printed them
    /// (live mode's list, to answer the binding check's Node GETs from).
    pub fn from_node_objects(nodes: Vec<Value>) -> Self {
        FileCluster {
            nodes: Some(nodes),
            ..FileCluster::default()
        }
    }

    /// This cluster with the NodeResourceTopology objects of `path`
    /// (`--topology`: YAML or JSON, multi-document, List objects).
    pub fn with_topology(self, path: &Path) -> Result<Self, FleetFileError> {
        let documents = read_file(path)?;
        self.with_topology_objects(documents)
    }

    /// This cluster with the NodeResourceTopology objects of `documents`.
    pub fn with_topology_objects(
        mut self,
        documents: Vec<Document>,
    ) -> Result<Self, FleetFileError> {
        self.topology = Some(topology_of(documents)?);
        Ok(self)
    }

    /// Whether this cluster's files hold the objects of `api_version` and
    /// `kind` (the others are for a live cluster to answer, where there is
    /// one: [`super::Layered`]).
    pub fn holds(&self, api_version: &str, kind: &str) -> bool {
        match (api_version, kind) {
            ("v1", "Node") => self.nodes.is_some(),
            ("v1", "ConfigMap") => self.summary.is_some(),
            (nrt::API_VERSION, nrt::KIND) => self.topology.is_some(),
            _ => false,
        }
    }

    /// A cluster of these Nodes (`None`: no Node file) and summary
    /// ConfigMap: the objects as the API prints them.
    pub fn from_objects(
        nodes: Option<Vec<Document>>,
        summary: Option<Document>,
    ) -> Result<Self, FleetFileError> {
        Ok(FileCluster {
            nodes: nodes.map(nodes_of).transpose()?,
            summary: summary.map(summary_of).transpose()?,
            topology: None,
        })
    }

    /// How many Nodes the Node file holds (`None`: there is none).
    pub fn node_count(&self) -> Option<usize> {
        self.nodes.as_ref().map(Vec::len)
    }

    /// The Nodes as the file holds them (for naming nodes per shape).
    pub fn nodes(&self) -> &[Value] {
        self.nodes.as_deref().unwrap_or_default()
    }
}

fn nodes_of(documents: Vec<Document>) -> Result<Vec<Value>, FleetFileError> {
    documents
        .into_iter()
        .map(|document| {
            let place = document.source.to_string();
            if document.kind() != "Node" {
                return Err(FleetFileError::NotANode {
                    place,
                    kind: document.kind().to_owned(),
                });
            }
            if !document
                .object
                .get("metadata")
                .is_some_and(Value::is_object)
            {
                return Err(FleetFileError::NoMetadata { place });
            }
            Ok(document.object)
        })
        .collect()
}

fn topology_of(documents: Vec<Document>) -> Result<Vec<Value>, FleetFileError> {
    documents
        .into_iter()
        .map(|document| {
            let named = document
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|name| !name.is_empty());
            if document.kind() != nrt::KIND || !named {
                return Err(FleetFileError::NotATopology {
                    place: document.source.to_string(),
                    kind: document.kind().to_owned(),
                });
            }
            Ok(document.object)
        })
        .collect()
}

/// The object of `objects` named `name`.
fn named<'v>(objects: &'v [Value], name: &str) -> Option<&'v Value> {
    objects
        .iter()
        .find(|object| object.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
}

fn summary_of(document: Document) -> Result<Summary, FleetFileError> {
    let text = |pointer: &str| {
        document
            .object
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match (document.kind(), text("/metadata/name")) {
        ("ConfigMap", Some(name)) => Ok(Summary {
            name,
            namespace: text("/metadata/namespace"),
            object: document.object,
        }),
        (kind, _) => Err(FleetFileError::NotAConfigMap {
            place: document.source.to_string(),
            kind: kind.to_owned(),
        }),
    }
}

impl ClusterReader for FileCluster {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let (api_version, kind) = (request.api_version.as_str(), request.kind.as_str());
        let nodes = match &self.nodes {
            Some(nodes) if (api_version, kind) == ("v1", "Node") => nodes,
            _ => return Err(host_error(&not_granted(api_version, kind))),
        };
        if let Some(fields) = &request.field_selector {
            return Err(host_error(&format!(
                "the Node file cannot answer a field selector ({fields:?}): only label selectors"
            )));
        }
        let selector = Selector::parse(request.label_selector.as_deref().unwrap_or_default())
            .map_err(|problem| host_error(&problem))?;
        let items: Vec<Value> = nodes
            .iter()
            .filter(|node| selector.matches(node.pointer("/metadata/labels")))
            .map(|node| prune(node, request.field_masks.as_ref()))
            .collect();
        let list = json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items});
        serde_json::to_vec(&list).map_err(|error| error.to_string())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let (api_version, kind) = (request.api_version.as_str(), request.kind.as_str());
        let by_name = match (api_version, kind) {
            ("v1", "Node") => Some((&self.nodes, "--nodes")),
            (nrt::API_VERSION, nrt::KIND) => Some((&self.topology, "--topology")),
            _ => None,
        };
        if let Some((objects, flag)) = by_name {
            let Some(objects) = objects else {
                return Err(host_error(&format!(
                    "no {kind} was read: it is read from {flag} FILE, which was not given"
                )));
            };
            return match named(objects, &request.name) {
                Some(object) => serde_json::to_vec(&prune(object, request.field_masks.as_ref()))
                    .map_err(|error| error.to_string()),
                None => Err(host_error(&not_found_resource(
                    &qualified_resource(api_version, kind),
                    &request.name,
                ))),
            };
        }
        let found = self.summary.as_ref().filter(|summary| {
            (request.api_version.as_str(), request.kind.as_str()) == ("v1", "ConfigMap")
                && summary.name == request.name
                && summary
                    .namespace
                    .as_ref()
                    .is_none_or(|namespace| Some(namespace) == request.namespace.as_ref())
        });
        match found {
            Some(summary) => {
                serde_json::to_vec(&prune(&summary.object, request.field_masks.as_ref()))
                    .map_err(|error| error.to_string())
            }
            None => Err(host_error(&not_found_resource(
                &qualified_resource(api_version, kind),
                &request.name,
            ))),
        }
    }
}
