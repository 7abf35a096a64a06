//! Live mode: the cluster read from the API server, as policy-server reads it
//! for the policy (cli/README.md, "Live mode").
//!
//! [`LiveCluster`] is a [`ClusterReader`]: the policy's own readers
//! ([`gpu_topology_policy::cluster`]) take its answers exactly as they take
//! the Kubewarden host's. So a list is answered as one raw JSON list, every
//! object pruned to the request's field masks (policy-server prunes the
//! objects it caches and hands out to the masked fields, [`super::masks`]),
//! and a refused read
//! is the `Err` text the policy quotes in its warnings: the API server's own
//! words (`nodes is forbidden: ...`, `configmaps "x" not found`).
//!
//! An API server that cannot be reached at all is not a refusal but bad
//! input for the tool: [`LiveCluster::connect`] asks it for `/version` once
//! and fails naming the server, rather than quoting connection errors into
//! warnings as if the cluster had answered.
//!
//! The trait is synchronous; the reader owns a current-thread tokio runtime
//! and blocks on each request. It must not be used from inside another
//! runtime (the tool has none).

use super::files::host_error;
use super::masks::prune;
use gpu_topology_policy::cluster::host::ClusterReader;
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::params::{GetParams, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, Request};
use kube::Resource;
use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Objects asked for per page of a list: small enough that one answer of
/// full Nodes stays a few MB, large enough that 5,000 nodes take 10 requests.
pub const PAGE_SIZE: u32 = 500;
/// Longest wait for one answer; a list page of full Nodes is read in well
/// under a second on a healthy API server.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait to connect: an unreachable server is reported promptly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where live mode's credentials come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// `--kubeconfig`; `None`: `$KUBECONFIG`, `~/.kube/config`, or in-cluster.
    pub kubeconfig: Option<PathBuf>,
    /// `--context`; `None`: the kubeconfig's current context.
    pub context: Option<String>,
}

/// Why live mode cannot start: bad input for the tool (exit 2).
#[derive(Debug)]
pub enum ConnectError {
    /// No usable kubeconfig or in-cluster configuration.
    Config(String),
    /// The API server did not answer `/version`.
    Unreachable { server: String, reason: String },
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Config(reason) => write!(f, "live mode has no cluster: {reason}"),
            ConnectError::Unreachable { server, reason } => {
                write!(f, "the API server {server} cannot be reached: {reason}")
            }
        }
    }
}

impl std::error::Error for ConnectError {}

/// The cluster read live; see the module documentation.
pub struct LiveCluster {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    server: String,
    page_size: u32,
}

impl LiveCluster {
    /// Builds the client from `credentials` and checks that the API server
    /// answers (`GET /version`).
    pub fn connect(credentials: &Credentials) -> Result<Self, ConnectError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| ConnectError::Config(format!("no async runtime: {error}")))?;
        let config = runtime.block_on(config(credentials))?;
        let server = config.cluster_url.to_string();
        // The client spawns its request buffer on the runtime it is built in.
        let client = {
            let _entered = runtime.enter();
            kube::Client::try_from(config)
        }
        .map_err(|error| ConnectError::Config(format!("no client for {server}: {error}")))?;
        match runtime.block_on(client.apiserver_version()) {
            // An answer, even a refusal, means the server is there.
            Ok(_) | Err(kube::Error::Api(_)) => {}
            Err(other) => {
                return Err(ConnectError::Unreachable {
                    server,
                    reason: error_chain(&other),
                })
            }
        }
        Ok(Self {
            runtime,
            client,
            server,
            page_size: PAGE_SIZE,
        })
    }

    /// This reader asking for `page_size` objects per page.
    pub fn with_page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// The API server's address, as the messages name it.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Every object of a list, page by page (`limit` and `continue`),
    /// each pruned to `masks`.
    pub fn list(
        &self,
        resource: &ApiResource,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<Value>, String> {
        let request = Request::new(DynamicObject::url_path(resource, None));
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let params = ListParams {
                label_selector: label_selector.map(str::to_owned),
                field_selector: field_selector.map(str::to_owned),
                limit: Some(self.page_size),
                continue_token: token.take(),
                ..ListParams::default()
            };
            let page = request.list(&params).map_err(|error| error.to_string())?;
            let mut page = self.read_json(page)?;
            let Some(Value::Array(objects)) = page.get_mut("items").map(Value::take) else {
                return Err(format!(
                    "the {} list from {} has no items",
                    resource.kind, self.server
                ));
            };
            items.extend(objects.iter().map(|object| prune(object, masks)));
            token = page
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|token| !token.is_empty())
                .map(str::to_owned);
            if token.is_none() {
                return Ok(items);
            }
        }
    }

    /// Whether the API server serves `resource` (a plural, e.g. `reports`)
    /// in the API group/version `api_version` (e.g.
    /// `openreports.io/v1alpha1`): API discovery, `GET /apis/<api_version>`,
    /// which lists the group/version's resources once their CRD is
    /// installed and answers 404 when none is. Discovery is open to every
    /// authenticated user by default (`system:discovery`): no RBAC to add.
    pub fn serves(&self, api_version: &str, resource: &str) -> Result<bool, String> {
        let request = http::Request::get(format!("/apis/{api_version}"))
            .body(Vec::new())
            .map_err(|error| error.to_string())?;
        let (code, body) = self.send(request)?;
        if code == 404 {
            return Ok(false);
        }
        if !(200..300).contains(&code) {
            return Err(format!(
                "the API server {} answered {code} to /apis/{api_version}: {}",
                self.server,
                status_message(&body)
            ));
        }
        let list: Value = serde_json::from_slice(&body).map_err(|error| {
            format!(
                "the API server {} answered {code} to /apis/{api_version} with a body that is not JSON: {error}",
                self.server
            )
        })?;
        Ok(list
            .get("resources")
            .and_then(Value::as_array)
            .is_some_and(|resources| {
                resources
                    .iter()
                    .any(|entry| entry.get("name").and_then(Value::as_str) == Some(resource))
            }))
    }

    /// Sends `request`; the answer's status code and body, or why there
    /// was none.
    fn send(&self, request: http::Request<Vec<u8>>) -> Result<(u16, Vec<u8>), String> {
        self.runtime.block_on(async {
            let response = self
                .client
                .send(request.map(Body::from))
                .await
                .map_err(|error| self.no_answer(&error))?;
            let code = response.status().as_u16();
            let body = response
                .into_body()
                .collect_bytes()
                .await
                .map_err(|error| self.no_answer(&error))?;
            Ok((code, body.to_vec()))
        })
    }

    /// Sends `request`; the JSON of a 2xx answer, or the API server's words.
    fn read_json(&self, request: http::Request<Vec<u8>>) -> Result<Value, String> {
        let (code, body) = self.send(request)?;
        if !(200..300).contains(&code) {
            return Err(refusal(code, &body));
        }
        serde_json::from_slice(&body).map_err(|error| {
            format!(
                "the API server {} answered {code} with a body that is not JSON: {error}",
                self.server
            )
        })
    }

    fn no_answer(&self, error: &kube::Error) -> String {
        format!(
            "no answer from the API server {}: {}",
            self.server,
            error_chain(error)
        )
    }
}

impl ClusterReader for LiveCluster {
    fn list_all_resources(&self, request: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let resource = api_resource(&request.api_version, &request.kind);
        let items = self.list(
            &resource,
            request.label_selector.as_deref(),
            request.field_selector.as_deref(),
            request.field_masks.as_ref(),
        )?;
        let list = serde_json::json!({
            "apiVersion": request.api_version,
            "kind": format!("{}List", request.kind),
            "metadata": {},
            "items": items,
        });
        serde_json::to_vec(&list).map_err(|error| error.to_string())
    }

    fn get_resource(&self, request: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let resource = api_resource(&request.api_version, &request.kind);
        let url = DynamicObject::url_path(&resource, request.namespace.as_deref());
        let get = Request::new(url)
            .get(&request.name, &GetParams::default())
            .map_err(|error| error.to_string())?;
        let object = self.read_json(get)?;
        serde_json::to_vec(&prune(&object, request.field_masks.as_ref()))
            .map_err(|error| error.to_string())
    }
}

/// The API resource of `api_version` (`v1`, `group/version`) and `kind`;
/// its plural as the API server's RESTMapper guesses it (`Node` → `nodes`).
pub fn api_resource(api_version: &str, kind: &str) -> ApiResource {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

/// What a refused request means, in the words policy-server hands the
/// policy: kube-rs' `ApiError` display of the API server's `Status` (as the
/// e2e sessions recorded it, `ApiError: configmaps "x" not found: NotFound
/// (ErrorResponse { status: "Failure", message: ..., reason: "NotFound",
/// code: 404 })`), behind wapc-guest's `Host error: ` ([`host_error`]). A
/// body that is not a `Status` is kept as its text, as kube-rs keeps it
/// ("Failed to parse error data").
pub fn refusal(code: u16, body: &[u8]) -> String {
    let status = serde_json::from_slice::<Value>(body)
        .ok()
        .filter(|status| status.get("kind").and_then(Value::as_str) == Some("Status"));
    let field = |name: &str| {
        status
            .as_ref()
            .and_then(|status| status.get(name)?.as_str())
            .map(str::to_owned)
    };
    let response = match field("message") {
        Some(message) => ErrorResponse {
            status: field("status").unwrap_or_default(),
            message,
            reason: field("reason").unwrap_or_default(),
            code,
        },
        None => ErrorResponse {
            status: code.to_string(),
            message: String::from_utf8_lossy(body).trim().to_owned(),
            reason: "Failed to parse error data".to_owned(),
            code,
        },
    };
    host_error(&format!(
        "ApiError: {}: {} ({response:?})",
        response.message, response.reason
    ))
}

/// The `message` of a `Status` answer, else the body's text.
fn status_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|status| status.get("message")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned())
}

/// kube-rs' `ErrorResponse`, whose `Debug` text the `ApiError` display ends
/// with (field order and names as kube-rs declares them); only printed.
#[derive(Debug)]
#[allow(dead_code)]
struct ErrorResponse {
    status: String,
    message: String,
    reason: String,
    code: u16,
}

/// An error with its causes, one after the other: kube's own text
/// (`client error (Connect)`) hides the reason (`Connection refused`).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The client configuration of `credentials`.
async fn config(credentials: &Credentials) -> Result<kube::Config, ConnectError> {
    let options = KubeConfigOptions {
        context: credentials.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match (&credentials.kubeconfig, &credentials.context) {
        (Some(path), _) => {
            let kubeconfig = read_kubeconfig(path)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|error| {
                    ConnectError::Config(format!("{}: {}", path.display(), error_chain(&error)))
                })?
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|error| ConnectError::Config(error_chain(&error)))?,
        (None, None) => kube::Config::infer()
            .await
            .map_err(|error| ConnectError::Config(error_chain(&error)))?,
    };
    let mut config = config;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    Ok(config)
}

fn read_kubeconfig(path: &Path) -> Result<Kubeconfig, ConnectError> {
    Kubeconfig::read_from(path).map_err(|error| {
        ConnectError::Config(format!("{}: {}", path.display(), error_chain(&error)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::not_found(404,
        br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps \"gpu-topology-fleet\" not found","reason":"NotFound","code":404}"#.as_slice(),
        // As e2e-tests/scenarios/sessions recorded policy-server's answer.
        r#"Host error: ApiError: configmaps "gpu-topology-fleet" not found: NotFound (ErrorResponse { status: "Failure", message: "configmaps \"gpu-topology-fleet\" not found", reason: "NotFound", code: 404 })"#)]
    #[case::forbidden(403,
        br#"{"kind":"Status","status":"Failure","message":"nodes is forbidden: no","reason":"Forbidden","code":403}"#.as_slice(),
        r#"Host error: ApiError: nodes is forbidden: no: Forbidden (ErrorResponse { status: "Failure", message: "nodes is forbidden: no", reason: "Forbidden", code: 403 })"#)]
    #[case::plain_text(429, b"Too many requests\n".as_slice(),
        r#"Host error: ApiError: Too many requests: Failed to parse error data (ErrorResponse { status: "429", message: "Too many requests", reason: "Failed to parse error data", code: 429 })"#)]
    fn refusals_are_in_policy_servers_words(
        #[case] code: u16,
        #[case] body: &[u8],
        #[case] said: &str,
    ) {
        assert_eq!(refusal(code, body), said);
    }

    #[rstest]
    #[case::core("v1", "Node", "/api/v1/nodes")]
    #[case::grouped(
        "nfd.k8s-sigs.io/v1alpha1",
        "NodeFeature",
        "/apis/nfd.k8s-sigs.io/v1alpha1/nodefeatures"
    )]
    fn resources_are_found_by_version_and_kind(
        #[case] api_version: &str,
        #[case] kind: &str,
        #[case] path: &str,
    ) {
        assert_eq!(
            DynamicObject::url_path(&api_resource(api_version, kind), None),
            path
        );
    }
}
