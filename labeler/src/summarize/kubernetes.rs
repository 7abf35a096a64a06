//! The summarizer's Kubernetes I/O, a thin adapter around [`SummaryBuilder`]:
//! list the Nodes that carry `<prefix>/gpus` ([`PAGE_SIZE`] per page), then
//! server-side apply the fleet summary ConfigMap. Every pass writes, so
//! `generatedAt` advances and the policy knows the summary is fresh.
//!
//! The list asks for the server-side Table of Nodes with each row's object
//! as metadata ([`TABLE_ACCEPT`], `includeObject=Metadata`): the labels,
//! and the `Version` column, which the API server fills from
//! `status.nodeInfo.kubeletVersion` (`printNode` in kubernetes
//! `pkg/printers/internalversion/printers.go`, the columns `kubectl get
//! nodes` shows). That is the kubelet version the policy takes over the
//! labels ([`gpu_topology::NodeTopology::take_reported_kubelet_version`]) without the
//! whole Node: a full Node carries its images, conditions and managed
//! fields, many times the metadata, and the summarizer lists every GPU node
//! each interval. A server that answers with a plain `NodeList` or
//! `PartialObjectMetadataList` instead (the Accept header's fallbacks) is
//! read too: `status.nodeInfo` where the list has it.
//!
//! Memory stays flat whatever the fleet: one page is in memory at a time
//! (its body, and of each node only the name, labels and version:
//! `read_page`), and it is folded into the builder and dropped before the
//! next is asked for.
//!
//! Requests go through [`api::send`], as the API sinks' do, so error answers
//! keep their `Retry-After`; transient failures (5xx, 429, no answer, a body
//! cut off) are retried with [`RetryPolicy`]; a 403 names the RBAC rule that
//! is missing. No API answer panics: an unreadable answer is an error of the
//! pass, never a summary of half a list.

use super::{Summarized, SummaryBuilder};
use crate::sinks::api::{self, Answer, ApiError};
use crate::sinks::retry::{with_retries, Exhausted, RetryPolicy};
use gpu_topology::dra::{
    parse_classes, DraBuilder, DraDevices, SliceItem, DRA_DEVICES_KEY, DRA_EXTENDED_RESOURCES_KEY,
};
use gpu_topology::{FleetSummary, KubeletVersion, LabelKey, LabelPrefix};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{ListParams, PatchParams};
use kube::{Client, Resource};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the summary goes unless told otherwise; the policy's
/// `capacity.fleetSummary` defaults to the same place.
pub const DEFAULT_SUMMARY_NAMESPACE: &str = "kube-system";
pub const DEFAULT_SUMMARY_NAME: &str = "gpu-topology-fleet";
/// The policy's default `capacity.fleetSummary.maxAgeSeconds`: an older
/// summary is ignored. The interval must stay well below it.
pub const POLICY_DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);
/// Nodes per list request: client-go's pager default (`defaultPageSize` in
/// `staging/src/k8s.io/client-go/tools/pager/pager.go`); 5,000 nodes are 10
/// pages, and one page of realistic metadata is about 3 MB.
pub const PAGE_SIZE: u32 = 500;
/// A listing longer than this (5 million nodes) is an API server that never
/// stops sending continue tokens.
pub const MAX_PAGES: u32 = 10_000;
/// Times a listing starts over when its continue token expired (410 Gone).
pub const MAX_RESTARTS: u32 = 3;
/// Labels of the ConfigMap.
pub const APP_NAME: &str = "gpu-topology-labeler";
pub const COMPONENT: &str = "fleet-summary";

/// Everything the summarizer needs, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarizerConfig {
    pub prefix: LabelPrefix,
    pub namespace: String,
    pub name: String,
    pub field_manager: String,
    pub retry: RetryPolicy,
    /// Longest wait for one API answer.
    pub request_timeout: Duration,
    pub interval: Duration,
    pub once: bool,
    /// Also list DeviceClasses and ResourceSlices into the summary's
    /// `draDevices` (`--dra`).
    pub dra: bool,
    /// Also read the heartbeats on the labeler's NodeFeature objects
    /// (`--nodefeature-heartbeats`).
    pub nodefeature_heartbeats: bool,
}

/// Why a pass wrote no summary.
#[derive(Debug, thiserror::Error)]
pub enum SummarizeError {
    #[error(
        "listing Nodes is forbidden (403): the summarizer's service account needs `list` on nodes \
         (ClusterRole rule: apiGroups [\"\"], resources [nodes], verbs [list]); the API server said: {message}"
    )]
    ListForbidden { message: String },
    #[error("listing Nodes failed after {attempts} attempt(s): {source}")]
    List {
        attempts: u32,
        #[source]
        source: Box<ApiError>,
    },
    #[error("listing Nodes: the API server still sent a continue token after {pages} pages")]
    EndlessList { pages: u32 },
    #[error(
        "server-side apply of ConfigMap {namespace}/{name} is forbidden (403): the summarizer's service \
         account needs `patch` (and `create`, for the first write) on that ConfigMap (Role in {namespace}, \
         rule: apiGroups [\"\"], resources [configmaps], resourceNames [{name}], verbs [create, patch]); \
         the API server said: {message}"
    )]
    ApplyForbidden {
        namespace: String,
        name: String,
        message: String,
    },
    #[error("server-side apply of ConfigMap {namespace}/{name} failed after {attempts} attempt(s): {source}")]
    Apply {
        namespace: String,
        name: String,
        attempts: u32,
        #[source]
        source: Box<ApiError>,
    },
}

/// What one successful pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassReport {
    pub summarized: Summarized,
    /// List requests that succeeded (pages), over all restarts.
    pub pages: u32,
    /// Under `--dra`, why the DRA devices were left out of this pass's
    /// summary (also logged as a warning).
    pub dra_left_out: Option<String>,
}

/// The apply body: only the fields the summarizer owns. With `dra`, the
/// DRA devices and their classes go in `draDevices`, and the extended
/// resources the classes map (KEP-5004) with the nodes that publish them in
/// `draExtendedResources`; without, both entries are left out and the policy
/// lists DeviceClasses and ResourceSlices itself (server-side apply removes
/// an entry this manager wrote before and no longer sends).
pub fn apply_body(
    namespace: &str,
    name: &str,
    summary: &FleetSummary,
    dra: Option<&DraDevices>,
) -> Value {
    let mut data = summary.to_data();
    if let Some(dra) = dra {
        data.insert(DRA_DEVICES_KEY.to_owned(), dra.to_summary_text());
        data.insert(
            DRA_EXTENDED_RESOURCES_KEY.to_owned(),
            dra.extended_resources().to_summary_text(),
        );
    }
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": APP_NAME,
                "app.kubernetes.io/component": COMPONENT,
            },
        },
        "data": data,
    })
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// The Accept header of the Node list: the Table of `meta.k8s.io/v1`, else
/// (a server or proxy that cannot convert) metadata only, else the plain
/// list. kubectl asks for tables the same way.
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,\
    application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json";
/// Each table row carries its Node's metadata (labels and name).
const INCLUDE_METADATA: (&str, &str) = ("includeObject", "Metadata");
/// The Table column the API server fills with `status.nodeInfo.kubeletVersion`.
const VERSION_COLUMN: &str = "Version";

/// The kinds the Node list may come as: the Table asked for, or the
/// fallbacks of [`TABLE_ACCEPT`] (which have `items[].metadata`).
const NODE_LIST_KINDS: [&str; 3] = ["Table", "PartialObjectMetadataList", "NodeList"];

/// One page of a Node list, decoded only as far as the summary reads it:
/// each node's name, labels and kubelet version. Everything else of the
/// page (annotations, managedFields, the other cells and the rest of a
/// status) is skipped by the parser without being kept.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodePage {
    kind: String,
    #[serde(default)]
    metadata: PageMetadata,
    /// A list's Nodes; `null` or absent in an empty list.
    #[serde(default)]
    items: Option<Vec<NodeLabels>>,
    /// A Table's columns: which cell is the version.
    #[serde(default)]
    column_definitions: Option<Vec<Column>>,
    /// A Table's rows; `null` or absent in an empty table.
    #[serde(default)]
    rows: Option<Vec<Row>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct Column {
    #[serde(default)]
    name: String,
}

/// A Table row: its cells, and its Node's metadata (`includeObject`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct Row {
    #[serde(default)]
    cells: Vec<Value>,
    #[serde(default)]
    object: NodeLabels,
}

/// A node as a page gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PageNode<'p> {
    name: &'p str,
    labels: Option<&'p BTreeMap<String, String>>,
    annotations: Option<&'p BTreeMap<String, String>>,
    kubelet_version: Option<KubeletVersion>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct PageMetadata {
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

/// A node's name and labels, and its `status.nodeInfo` where a plain list
/// carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct NodeLabels {
    #[serde(default)]
    metadata: NodeMetadata,
    #[serde(default)]
    status: Option<NodeStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeStatus {
    #[serde(default)]
    node_info: Option<NodeInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeInfo {
    /// Any JSON: what does not read as a version is none.
    #[serde(default)]
    kubelet_version: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct NodeMetadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    /// For the kubernetes sink's heartbeat.
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

impl NodePage {
    /// The continue token of a page that is not the last.
    fn next(&self) -> Option<&str> {
        self.metadata
            .continue_token
            .as_deref()
            .filter(|token| !token.is_empty())
    }

    /// The page's nodes: a Table's rows, else a list's items. A version
    /// that does not read (`v1.36.2`, [`KubeletVersion::parse_node_info`])
    /// is none: the node still counts, by its labels.
    fn nodes(&self) -> impl Iterator<Item = PageNode<'_>> {
        let version_cell = self
            .column_definitions
            .iter()
            .flatten()
            .position(|column| column.name == VERSION_COLUMN);
        let from_rows = self.rows.iter().flatten().map(move |row| {
            let version = version_cell.and_then(|cell| row.cells.get(cell));
            page_node(&row.object, version)
        });
        let from_items = self.items.iter().flatten().map(|item| {
            let version = item
                .status
                .as_ref()
                .and_then(|status| status.node_info.as_ref())
                .and_then(|info| info.kubelet_version.as_ref());
            page_node(item, version)
        });
        from_rows.chain(from_items)
    }
}

fn page_node<'p>(node: &'p NodeLabels, version: Option<&Value>) -> PageNode<'p> {
    PageNode {
        // A node without a name is still counted (the API server never
        // sends one).
        name: node.metadata.name.as_deref().unwrap_or("<unnamed>"),
        labels: node.metadata.labels.as_ref(),
        annotations: node.metadata.annotations.as_ref(),
        kubelet_version: version
            .and_then(Value::as_str)
            .and_then(KubeletVersion::parse_node_info),
    }
}

/// Reads a list answer as a page of Nodes. A body that is not a Node list
/// (a proxy's page, `{}`, a wrong type anywhere on the way to the labels)
/// is an error: taking it for an empty page would write a summary of
/// nothing, and the policy would find no node for any GPU pod.
fn read_page(answer: &Answer) -> Result<NodePage, ApiError> {
    let unexpected = |detail: String| ApiError::Unexpected {
        code: answer.code,
        detail,
    };
    let page: NodePage = serde_json::from_slice(&answer.body)
        .map_err(|error| unexpected(format!("not a Node list ({error})")))?;
    if NODE_LIST_KINDS.contains(&page.kind.as_str()) {
        Ok(page)
    } else {
        Err(unexpected(format!(
            "kind {:?}, expected one of {NODE_LIST_KINDS:?}",
            page.kind
        )))
    }
}

/// Lists the labeled Nodes and writes the fleet summary.
#[derive(Clone)]
pub struct Summarizer {
    client: Client,
    /// `/api/v1/nodes`
    nodes: String,
    /// `/api/v1/namespaces/<namespace>/configmaps`
    config_maps: String,
    prefix: LabelPrefix,
    namespace: String,
    name: String,
    params: PatchParams,
    retry: RetryPolicy,
    dra: bool,
    nodefeature_heartbeats: bool,
}

/// One cluster-wide list: where, what, and which objects.
#[derive(Clone, Copy)]
struct Listing<'a> {
    path: &'a str,
    /// The API group, for the RBAC rule a 403 names, and its version.
    group: &'a str,
    version: &'a str,
    resource: &'a str,
    list_kind: &'a str,
    selector: Option<&'a str>,
    /// Who serves the collection, for a 404.
    served_by: &'static str,
}

impl<'a> Listing<'a> {
    fn dra(path: &'a str, resource: &'a str, list_kind: &'a str) -> Self {
        Listing {
            path,
            group: "resource.k8s.io",
            version: "v1",
            resource,
            list_kind,
            selector: None,
            served_by: "Kubernetes 1.34 and later do",
        }
    }

    /// The labeler's NodeFeature objects, which carry the nodefeature
    /// sink's heartbeat (nfd-master copies no annotation to the Node).
    fn labeler_node_features() -> Self {
        Listing {
            path: NODE_FEATURES_PATH,
            group: crate::sinks::nodefeature::GROUP,
            version: crate::sinks::nodefeature::VERSION,
            resource: crate::sinks::nodefeature::PLURAL,
            list_kind: "NodeFeatureList",
            selector: Some(NODE_FEATURE_SELECTOR),
            served_by: "NFD's CRDs: the nodefeature sink is not in use",
        }
    }
}

/// The NodeFeature collection in every namespace.
pub const NODE_FEATURES_PATH: &str = "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures";
/// The labeler's NodeFeature objects (`sinks::nodefeature::APP_LABEL`).
const NODE_FEATURE_SELECTOR: &str = "app.kubernetes.io/name=gpu-topology-labeler";

/// A NodeFeature as the heartbeat reader needs it: its node and annotations.
#[derive(Debug, Deserialize)]
struct NodeFeatureItem {
    #[serde(default)]
    metadata: FeatureMetadata,
}

#[derive(Debug, Default, Deserialize)]
struct FeatureMetadata {
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

/// The DRA objects' collection paths (`resource.k8s.io/v1`).
pub const DEVICE_CLASSES_PATH: &str = "/apis/resource.k8s.io/v1/deviceclasses";
pub const RESOURCE_SLICES_PATH: &str = "/apis/resource.k8s.io/v1/resourceslices";

/// One page of a DRA list: its items as the shared reader takes them.
#[derive(Debug, Deserialize)]
struct DraPage<T> {
    /// `DeviceClassList` or `ResourceSliceList`: checked, so that a 200
    /// that is no such list (a proxy's page, `{}`) is not read as empty.
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: PageMetadata,
    /// `null` or absent in an empty list.
    #[serde(default = "Option::default")]
    items: Option<Vec<T>>,
}

impl Summarizer {
    /// `client` should come from [`api::client`] (or [`api::configure`]):
    /// with kube's own retry layer on, `config.retry` would not be the whole
    /// story (kube retries 429/503/504 up to 15 times inside each attempt).
    pub fn new(client: Client, config: &SummarizerConfig) -> Self {
        Self {
            client,
            nodes: Node::url_path(&(), None),
            config_maps: ConfigMap::url_path(&(), Some(&config.namespace)),
            prefix: config.prefix.clone(),
            namespace: config.namespace.clone(),
            name: config.name.clone(),
            params: PatchParams::apply(&config.field_manager).force(),
            retry: config.retry,
            dra: config.dra,
            nodefeature_heartbeats: config.nodefeature_heartbeats,
        }
    }

    /// One pass: list, summarize, apply. Logs the malformed nodes (the first
    /// few by name) and, on success, what was written.
    pub async fn pass(&self) -> Result<PassReport, SummarizeError> {
        let started = Instant::now();
        // The listing's start: the summary is at least this fresh.
        let generated_at = unix_now();
        let (mut builder, pages) = self.list().await?;
        if self.nodefeature_heartbeats {
            self.node_feature_heartbeats(&mut builder).await;
        }
        let summarized = builder.finish(generated_at);
        for problem in &summarized.problems {
            tracing::warn!(node = %problem.node, error = %problem.error, "malformed topology labels; node left out of the summary");
        }
        let unnamed =
            (summarized.summary.malformed as usize).saturating_sub(summarized.problems.len());
        if unnamed > 0 {
            tracing::warn!(
                count = unnamed,
                "more nodes with malformed topology labels (not named)"
            );
        }
        // A DRA listing that fails leaves the devices out of this pass's
        // summary (the policy then lists the slices itself): the Nodes'
        // summary, which every GPU pod's fit reads, is still written.
        let (dra, dra_left_out) = match self.dra {
            false => (None, None),
            true => match self.dra_devices().await {
                Ok(devices) => {
                    tracing::info!(
                        groups = devices.groups.len(),
                        nodes = devices.node_count(),
                        "DRA devices summarized"
                    );
                    (Some(devices), None)
                }
                // A cluster older than 1.34 has no DRA to summarize: not a fault.
                Err((Some(NOT_FOUND), problem)) => {
                    tracing::info!(reason = %problem, "DRA devices left out of this pass's summary");
                    (None, Some(problem))
                }
                Err((_, problem)) => {
                    tracing::warn!(error = %problem, "DRA devices left out of this pass's summary");
                    (None, Some(problem))
                }
            },
        };
        self.apply(&summarized.summary, dra.as_ref()).await?;
        tracing::info!(
            nodes = summarized.summary.fleet.nodes(),
            groups = summarized.summary.fleet.groups().len(),
            malformed = summarized.summary.malformed,
            skipped = summarized.skipped,
            pages,
            elapsed_ms = started.elapsed().as_millis() as u64,
            configmap = %format_args!("{}/{}", self.namespace, self.name),
            "fleet summary written"
        );
        Ok(PassReport {
            summarized,
            pages,
            dra_left_out,
        })
    }

    /// Adds the heartbeats the nodefeature sink writes on the labeler's
    /// NodeFeature objects. Without NFD's CRDs (404) there are none; a
    /// refused or failed listing leaves them out with a warning: the
    /// summary is still written, and the policy then knows the freshness
    /// of those nodes no more than before.
    async fn node_feature_heartbeats(&self, builder: &mut SummaryBuilder) {
        let key = self.prefix.heartbeat_key();
        let listed = self
            .list_all::<NodeFeatureItem>(Listing::labeler_node_features(), |page| {
                for feature in page {
                    let metadata = &feature.metadata;
                    let node = metadata
                        .labels
                        .as_ref()
                        .and_then(|labels| labels.get(crate::sinks::nodefeature::NODE_NAME_LABEL));
                    let heartbeat = metadata.annotations.as_ref().and_then(|a| a.get(&key));
                    if let (Some(node), Some(heartbeat)) = (node, heartbeat) {
                        builder.add_heartbeat(node, heartbeat);
                    }
                }
            })
            .await;
        match listed {
            Ok(()) => {}
            Err((Some(NOT_FOUND), problem)) => {
                tracing::debug!(reason = %problem, "no NodeFeature heartbeats");
            }
            Err((_, problem)) => {
                tracing::warn!(error = %problem, "NodeFeature heartbeats left out of this pass's summary");
            }
        }
    }

    /// Lists every Node with `<prefix>/gpus`, page by page, into a builder.
    /// Each page is dropped once folded in, before the next is asked for.
    async fn list(&self) -> Result<(SummaryBuilder, u32), SummarizeError> {
        let mut pages = 0_u32;
        let mut restarts = 0_u32;
        let heartbeat_key = self.prefix.heartbeat_key();
        'listing: loop {
            let mut builder = SummaryBuilder::new(self.prefix.clone());
            let mut token: Option<String> = None;
            let mut listing_pages = 0_u32;
            loop {
                if listing_pages >= MAX_PAGES {
                    return Err(SummarizeError::EndlessList {
                        pages: listing_pages,
                    });
                }
                let page = match self.fetch_page(token.as_deref()).await {
                    Ok(page) => page,
                    Err(failed)
                        if token.is_some()
                            && failed.error.refused_code() == Some(GONE)
                            && restarts < MAX_RESTARTS =>
                    {
                        restarts += 1;
                        tracing::warn!(error = %failed.error, restarts, "the list's continue token expired; listing from the start");
                        continue 'listing;
                    }
                    Err(failed) => return Err(list_error(failed)),
                };
                pages += 1;
                listing_pages += 1;
                add_page(&mut builder, &page, &heartbeat_key);
                token = page.next().map(str::to_owned);
                if token.is_none() {
                    return Ok((builder, pages));
                }
            }
        }
    }

    /// One page of the labeled Nodes' table, from `token` on (retried).
    async fn fetch_page(&self, token: Option<&str>) -> Result<NodePage, Exhausted<ApiError>> {
        let params = ListParams {
            label_selector: Some(self.prefix.key(LabelKey::Gpus)),
            limit: Some(PAGE_SIZE),
            continue_token: token.map(str::to_owned),
            ..ListParams::default()
        };
        with_retries(&self.retry, "list nodes", || async {
            let request = table_request(&self.nodes, &params)?;
            read_page(&api::send(&self.client, request).await?)
        })
        .await
    }

    /// The DeviceClasses, then the ResourceSlices page by page, grouped by
    /// the shared reader (`gpu_topology::dra`) exactly as the policy groups a
    /// slice list. `Err` says what failed, naming the RBAC rule on a 403,
    /// with the API's refusal code if it refused.
    async fn dra_devices(&self) -> Result<DraDevices, (Option<u16>, String)> {
        let mut classes = Vec::new();
        self.list_all::<Value>(
            Listing::dra(DEVICE_CLASSES_PATH, "deviceclasses", "DeviceClassList"),
            |page| classes.extend(page),
        )
        .await?;
        let classes = parse_classes(json!({ "items": classes }).to_string().as_bytes())
            .map_err(|problem| (None, problem))?;
        let mut builder = DraBuilder::new(&classes);
        // The first slice that does not read; the listing still ends.
        let mut unreadable = None;
        self.list_all::<SliceItem>(
            Listing::dra(RESOURCE_SLICES_PATH, "resourceslices", "ResourceSliceList"),
            |page| {
                for slice in page {
                    if let Err(problem) = builder.add(slice) {
                        unreadable.get_or_insert(problem);
                    }
                }
            },
        )
        .await?;
        match unreadable {
            Some(problem) => Err((None, format!("a ResourceSlice cannot be read: {problem}"))),
            None => Ok(builder.finish()),
        }
    }

    /// Every item of a cluster-scoped list at `path`, [`PAGE_SIZE`] per page.
    async fn list_all<T: serde::de::DeserializeOwned>(
        &self,
        listing: Listing<'_>,
        mut fold: impl FnMut(Vec<T>),
    ) -> Result<(), (Option<u16>, String)> {
        let Listing {
            path,
            group,
            version,
            resource,
            list_kind,
            selector,
            served_by,
        } = listing;
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = ListParams {
                label_selector: selector.map(str::to_owned),
                limit: Some(PAGE_SIZE),
                continue_token: token.clone(),
                ..ListParams::default()
            };
            let page: DraPage<T> = with_retries(&self.retry, "list objects", || async {
                let request = kube::core::Request::new(path)
                    .list(&params)
                    .map_err(ApiError::Request)?;
                let answer = api::send(&self.client, request).await?;
                let unexpected = |detail: String| ApiError::Unexpected {
                    code: answer.code,
                    detail,
                };
                let page: DraPage<T> = serde_json::from_slice(&answer.body)
                    .map_err(|error| unexpected(format!("not a {resource} list ({error})")))?;
                if page.kind != list_kind {
                    return Err(unexpected(format!(
                        "kind {:?}, expected {list_kind:?}",
                        page.kind
                    )));
                }
                Ok(page)
            })
            .await
            .map_err(|failed| (failed.error.refused_code(), failed))
            .map_err(|(code, failed)| (code, match code {
                Some(FORBIDDEN) => format!(
                    "listing {resource} is forbidden (403): the summarizer's service account needs `list` on {resource} (ClusterRole rule: apiGroups [{group}], resources [{resource}], verbs [list]); the API server said: {}",
                    failed.error.refused_message()
                ),
                Some(NOT_FOUND) => format!(
                    "the API server does not serve {group}/{version} {resource} ({served_by}): {}",
                    failed.error.refused_message()
                ),
                _ => format!(
                    "listing {resource} failed after {} attempt(s): {}",
                    failed.attempts, failed.error
                ),
            }))?;
            token = page
                .metadata
                .continue_token
                .clone()
                .filter(|token| !token.is_empty());
            fold(page.items.unwrap_or_default());
            if token.is_none() {
                return Ok(());
            }
        }
        Err((
            None,
            format!(
                "listing {resource}: the API server still sent a continue token after {MAX_PAGES} pages"
            ),
        ))
    }

    async fn apply(
        &self,
        summary: &FleetSummary,
        dra: Option<&DraDevices>,
    ) -> Result<(), SummarizeError> {
        let body = apply_body(&self.namespace, &self.name, summary, dra);
        with_retries(&self.retry, "apply the fleet summary", || {
            api::apply(
                &self.client,
                &self.config_maps,
                &self.name,
                &self.params,
                &body,
            )
        })
        .await
        .map_err(|failed| {
            if failed.error.refused_code() == Some(FORBIDDEN) {
                SummarizeError::ApplyForbidden {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                    message: failed.error.refused_message().to_owned(),
                }
            } else {
                SummarizeError::Apply {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                    attempts: failed.attempts,
                    source: Box::new(failed.error),
                }
            }
        })
    }
}

/// The status of a list whose continue token expired (API conventions,
/// "410 StatusGone").
const GONE: u16 = 410;
const FORBIDDEN: u16 = 403;
const NOT_FOUND: u16 = 404;

/// The list request of `nodes` (`/api/v1/nodes`) as a Table whose rows
/// carry their Node's metadata: kube's metadata list with the Accept header
/// and the query of a table.
fn table_request(nodes: &str, params: &ListParams) -> Result<http::Request<Vec<u8>>, ApiError> {
    let mut request = kube::core::Request::new(nodes)
        .list_metadata(params)
        .map_err(ApiError::Request)?;
    let (key, value) = INCLUDE_METADATA;
    let uri = format!("{}&{key}={value}", request.uri());
    *request.uri_mut() =
        uri.parse()
            .map_err(|error: http::uri::InvalidUri| ApiError::Unexpected {
                code: 0,
                detail: format!("the Node list's URI {uri:?} does not parse: {error}"),
            })?;
    request.headers_mut().insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(TABLE_ACCEPT),
    );
    Ok(request)
}

/// Folds a page's nodes into `builder`, each with the kubelet version its
/// Node reports and the heartbeat (`heartbeat_key`) it carries.
fn add_page(builder: &mut SummaryBuilder, page: &NodePage, heartbeat_key: &str) {
    for node in page.nodes() {
        let labels = node
            .labels
            .into_iter()
            .flatten()
            .map(|(key, value)| (key.as_str(), value.as_str()));
        builder.add_reported(node.name, labels, node.kubelet_version);
        if let Some(heartbeat) = node.annotations.and_then(|a| a.get(heartbeat_key)) {
            builder.add_heartbeat(node.name, heartbeat);
        }
    }
}

fn list_error(failed: Exhausted<ApiError>) -> SummarizeError {
    if failed.error.refused_code() == Some(FORBIDDEN) {
        SummarizeError::ListForbidden {
            message: failed.error.refused_message().to_owned(),
        }
    } else {
        SummarizeError::List {
            attempts: failed.attempts,
            source: Box::new(failed.error),
        }
    }
}

/// Runs one pass (`once`), or a pass every `interval` until SIGTERM/SIGINT.
/// In the loop a failed pass is logged and the next tick tries again; with
/// `once` its error is returned.
pub async fn run(summarizer: &Summarizer, interval: Duration, once: bool) -> Result<(), RunError> {
    if once {
        summarizer.pass().await?;
        return Ok(());
    }
    let mut shutdown = std::pin::pin!(crate::app::shutdown_signal().map_err(RunError::Signals)?);
    loop {
        // Fixed rate: the next pass starts `interval` after this one started,
        // so generatedAt advances every interval even when a pass is slow.
        let next = tokio::time::Instant::now().checked_add(interval);
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            result = summarizer.pass() => {
                if let Err(error) = result {
                    tracing::error!(%error, "no fleet summary written this pass; retrying next interval");
                }
            }
        }
        let wait = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            () = wait => {}
        }
    }
    tracing::info!("stopping on signal");
    Ok(())
}

/// Why `summarize` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Pass(#[from] SummarizeError),
    #[error("waiting for signals: {0}")]
    Signals(#[source] std::io::Error),
}

impl RunError {
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Pass(_) => crate::app::exit::PUBLISH,
            RunError::Signals(_) => crate::app::exit::USAGE,
        }
    }
}

#[cfg(test)]
mod tests;
