//! API requests as the kubernetes and nodefeature sinks make them: the client
//! settings, one request read to its end, and what its failure means.
//!
//! The requests go through [`kube::Client::send`] rather than [`kube::Api`] so
//! that an error answer keeps its `Retry-After` header: the API server's
//! rate limiters answer 429 with that header and a plain-text body
//! (`staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go`,
//! `tooManyRequests`), which `kube::Api` turns into a `Status` without it.

use super::retry::{status_retry_after, Transient};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Patch, PatchParams};
use kube::client::Body;
use kube::Client;
use serde_json::Value;
use std::time::Duration;

pub const DEFAULT_FIELD_MANAGER: &str = "gpu-topology-labeler";

/// How long one API answer may take (`--request-timeout`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long unchanged labels go without being applied again: a label someone
/// removed or edited by hand comes back within this time, and an apply that
/// changes nothing is cheap (the API server writes nothing to etcd).
pub const REAPPLY_INTERVAL: SignedDuration = SignedDuration::from_mins(10);

/// Whether labels last applied at `last_applied` are due to be applied again.
pub fn reapply_due(last_applied: Option<Timestamp>, now: Timestamp) -> bool {
    last_applied.is_none_or(|applied| {
        applied
            .checked_add(REAPPLY_INTERVAL)
            .map_or(true, |due| now >= due)
    })
}

/// The header of 429 and 503 answers that says how long to wait.
const RETRY_AFTER: &str = "retry-after";

/// The labeler's client settings over `config`. kube's own retry layer is
/// turned off: it would retry 429/503/504 up to 15 times with pauses growing to
/// 1000 s inside each of our attempts (`kube-client` `RetryPolicy::server_retry`),
/// so `--api-attempts` and the documented backoff would not hold. Every read
/// waits at most `timeout`, so a stalled API server fails the attempt instead
/// of hanging the labeler.
pub fn configure(mut config: kube::Config, timeout: Duration) -> kube::Config {
    config.default_retry = false;
    config.read_timeout = Some(timeout);
    config
}

/// In-cluster credentials (or a kubeconfig) with [`configure`]'s settings.
pub async fn client(timeout: Duration) -> Result<Client, kube::Error> {
    let config = kube::Config::infer()
        .await
        .map_err(kube::Error::InferConfig)?;
    Client::try_from(configure(config, timeout))
}

/// Why one API request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No answer: the connection was refused, reset or closed before an
    /// answer, or the answer did not come within the request timeout.
    #[error("no answer from the API server: {0}")]
    Transport(#[source] kube::Error),
    /// The answer's status line and headers came, its body did not.
    #[error("the API server's {code} answer was cut off: {source}")]
    Cut {
        code: u16,
        #[source]
        source: kube::Error,
    },
    /// The API server answered with an error status.
    #[error("the API server answered {code}{}: {message}", reason_suffix(.reason))]
    Refused {
        code: u16,
        /// The `Status` reason (`Forbidden`, `Invalid`, ...); empty when the
        /// body is not a `Status`.
        reason: String,
        message: String,
        /// `Retry-After` header, else `details.retryAfterSeconds`.
        retry_after: Option<Duration>,
    },
    /// A success whose body is not the object asked for (e.g. a proxy's page).
    #[error("the API server's {code} answer is not the expected object: {detail}")]
    Unexpected { code: u16, detail: String },
    /// The request could not be built (an invalid object name).
    #[error("cannot build the request: {0}")]
    Request(#[source] kube::core::request::Error),
}

fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(" ({reason})")
    }
}

impl ApiError {
    /// The HTTP status of an error answer.
    pub fn refused_code(&self) -> Option<u16> {
        match self {
            ApiError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The message of an error answer ("" for other failures).
    pub fn refused_message(&self) -> &str {
        match self {
            ApiError::Refused { message, .. } => message,
            _ => "",
        }
    }
}

impl Transient for ApiError {
    /// Transport failures, cut answers, 409, 429 and 5xx. Retrying a request
    /// whose answer was lost is safe because every request the sinks send is
    /// idempotent (a server-side apply of the whole intent, or a GET). A 409 on
    /// a forced apply is an optimistic-concurrency conflict the API server
    /// already retried `MaxRetryWhenPatchConflicts` (5) times
    /// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`): the
    /// same apply is the "updated request" the conventions ask to retry with.
    fn is_transient(&self) -> bool {
        match self {
            ApiError::Transport(error) => super::retry::is_retryable(error),
            ApiError::Cut { .. } => true,
            ApiError::Refused { code, .. } => *code == 409 || *code == 429 || *code >= 500,
            ApiError::Unexpected { .. } | ApiError::Request(_) => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Refused { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// `Retry-After` in delta-seconds, the form the API server sends. The HTTP-date
/// form is not used by Kubernetes and reads as absent.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The error an answer with status `code` and `body` means. A `Status` body
/// gives reason and message; any other body (the rate limiters' plain text) is
/// the message. The header's `Retry-After` wins over the `Status` details, as
/// the conventions say ("Response Status Kind").
pub fn refusal(code: u16, body: &[u8], retry_after_header: Option<Duration>) -> ApiError {
    let (reason, message, details_retry_after) =
        match serde_json::from_slice::<kube::core::Status>(body) {
            Ok(status) if status.code != 0 || !status.message.is_empty() => {
                let retry_after = status_retry_after(&status);
                (status.reason, status.message, retry_after)
            }
            _ => (
                String::new(),
                String::from_utf8_lossy(body).trim().to_owned(),
                None,
            ),
        };
    ApiError::Refused {
        code,
        reason,
        message,
        retry_after: retry_after_header.or(details_retry_after),
    }
}

/// Sends `request` and reads its whole answer: the body of a 2xx answer, or
/// the error.
pub async fn send(client: &Client, request: http::Request<Vec<u8>>) -> Result<Answer, ApiError> {
    let response = client
        .send(request.map(Body::from))
        .await
        .map_err(ApiError::Transport)?;
    let code = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(parse_retry_after);
    let body = response
        .into_body()
        .collect_bytes()
        .await
        .map_err(|source| ApiError::Cut { code, source })?;
    if (200..300).contains(&code) {
        Ok(Answer {
            code,
            body: body.to_vec(),
        })
    } else {
        Err(refusal(code, &body, retry_after))
    }
}

/// A 2xx answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub code: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The answer's object metadata; it must be the object named `name`.
    pub fn metadata_of(&self, name: &str) -> Result<ObjectMeta, ApiError> {
        let unexpected = |detail: String| ApiError::Unexpected {
            code: self.code,
            detail,
        };
        let object: Value = serde_json::from_slice(&self.body)
            .map_err(|error| unexpected(format!("not JSON ({error})")))?;
        let metadata = object
            .get("metadata")
            .ok_or_else(|| unexpected("no metadata".to_owned()))?;
        let metadata: ObjectMeta = serde_json::from_value(metadata.clone())
            .map_err(|error| unexpected(format!("unreadable metadata ({error})")))?;
        match metadata.name.as_deref() {
            Some(found) if found == name => Ok(metadata),
            found => Err(unexpected(format!(
                "metadata.name is {found:?}, expected {name:?}"
            ))),
        }
    }
}

/// Server-side applies `body` as the object `name` of the collection at
/// `collection` (e.g. `/api/v1/nodes`). The answer must be that object.
pub async fn apply(
    client: &Client,
    collection: &str,
    name: &str,
    params: &PatchParams,
    body: &Value,
) -> Result<(), ApiError> {
    apply_answer(client, collection, name, params, body)
        .await
        .map(|_| ())
}

/// [`apply`], giving back the object the server answered with: the
/// whole object after the apply, status included.
pub async fn apply_answer(
    client: &Client,
    collection: &str,
    name: &str,
    params: &PatchParams,
    body: &Value,
) -> Result<Value, ApiError> {
    let request = kube::core::Request::new(collection)
        .patch(name, params, &Patch::Apply(body))
        .map_err(ApiError::Request)?;
    let answer = send(client, request).await?;
    answer.metadata_of(name)?;
    // metadata_of has read the body as JSON already.
    Ok(serde_json::from_slice(&answer.body).unwrap_or(Value::Null))
}

/// The metadata of the object `name` of the collection at `collection`
/// (`Accept: ...;as=PartialObjectMetadata`: no spec or status is sent).
pub async fn get_metadata(
    client: &Client,
    collection: &str,
    name: &str,
) -> Result<ObjectMeta, ApiError> {
    let request = kube::core::Request::new(collection)
        .get_metadata(name, &Default::default())
        .map_err(ApiError::Request)?;
    send(client, request).await?.metadata_of(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::never_applied(None, "2025-03-01T12:00:00Z", true)]
    #[case::just_applied(Some("2025-03-01T12:00:00Z"), "2025-03-01T12:01:00Z", false)]
    #[case::one_second_early(Some("2025-03-01T12:00:00Z"), "2025-03-01T12:09:59Z", false)]
    #[case::ten_minutes_later(Some("2025-03-01T12:00:00Z"), "2025-03-01T12:10:00Z", true)]
    #[case::at_the_end_of_time(Some("9999-12-30T21:55:00Z"), "9999-12-30T21:56:00Z", true)]
    fn unchanged_labels_are_applied_again_every_ten_minutes(
        #[case] last_applied: Option<&str>,
        #[case] now: &str,
        #[case] due: bool,
    ) {
        let at = |text: &str| text.parse::<Timestamp>().unwrap();
        assert_eq!(reapply_due(last_applied.map(at), at(now)), due);
    }

    #[rstest]
    #[case::seconds("1", Some(1))]
    #[case::padded(" 30 ", Some(30))]
    #[case::zero("0", Some(0))]
    #[case::http_date("Wed, 21 Oct 2015 07:28:00 GMT", None)]
    #[case::negative("-1", None)]
    #[case::fraction("1.5", None)]
    #[case::empty("", None)]
    fn retry_after_is_read_in_seconds(#[case] value: &str, #[case] seconds: Option<u64>) {
        assert_eq!(parse_retry_after(value), seconds.map(Duration::from_secs));
    }

    #[rstest]
    #[case::status_with_details(
        422,
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"spec.labels: Invalid value","reason":"Invalid","code":422}"#,
        None,
        ("Invalid", "spec.labels: Invalid value", None)
    )]
    #[case::status_retry_after(
        429,
        r#"{"kind":"Status","status":"Failure","message":"slow down","reason":"TooManyRequests","details":{"retryAfterSeconds":3},"code":429}"#,
        None,
        ("TooManyRequests", "slow down", Some(3))
    )]
    #[case::header_wins_over_details(
        429,
        r#"{"kind":"Status","message":"slow down","details":{"retryAfterSeconds":3},"code":429}"#,
        Some(7),
        ("", "slow down", Some(7))
    )]
    #[case::plain_text_rate_limit(
        429,
        "Too many requests, please try again later.\n",
        Some(1),
        ("", "Too many requests, please try again later.", Some(1))
    )]
    #[case::html_from_a_proxy(502, "<html>Bad Gateway</html>", None, ("", "<html>Bad Gateway</html>", None))]
    #[case::empty_json_object(503, "{}", None, ("", "{}", None))]
    fn error_answers_keep_reason_message_and_retry_after(
        #[case] code: u16,
        #[case] body: &str,
        #[case] header_seconds: Option<u64>,
        #[case] expected: (&str, &str, Option<u64>),
    ) {
        let error = refusal(
            code,
            body.as_bytes(),
            header_seconds.map(Duration::from_secs),
        );
        let ApiError::Refused {
            code: got_code,
            reason,
            message,
            retry_after,
        } = error
        else {
            panic!("not a refusal: {error}");
        };
        assert_eq!(got_code, code);
        assert_eq!(
            (reason.as_str(), message.as_str(), retry_after),
            (expected.0, expected.1, expected.2.map(Duration::from_secs))
        );
    }

    #[rstest]
    #[case::conflict(409, true)]
    #[case::too_many_requests(429, true)]
    #[case::internal(500, true)]
    #[case::bad_gateway(502, true)]
    #[case::unavailable(503, true)]
    #[case::gateway_timeout(504, true)]
    #[case::bad_request(400, false)]
    #[case::unauthorized(401, false)]
    #[case::forbidden(403, false)]
    #[case::not_found(404, false)]
    #[case::invalid(422, false)]
    fn which_answers_are_retried(#[case] code: u16, #[case] retried: bool) {
        assert_eq!(refusal(code, b"", None).is_transient(), retried);
    }

    #[rstest]
    #[case::the_object(r#"{"metadata":{"name":"n1","uid":"u"}}"#, Ok(()))]
    #[case::another_object(r#"{"metadata":{"name":"n2"}}"#, Err("\"n2\""))]
    #[case::no_metadata(r#"{"kind":"Status"}"#, Err("no metadata"))]
    #[case::not_json("<html>OK</html>", Err("not JSON"))]
    #[case::wrong_metadata_type(r#"{"metadata":{"name":7}}"#, Err("unreadable metadata"))]
    fn a_success_must_be_the_object_asked_for(
        #[case] body: &str,
        #[case] expected: Result<(), &str>,
    ) {
        let answer = Answer {
            code: 200,
            body: body.as_bytes().to_vec(),
        };
        match (answer.metadata_of("n1"), expected) {
            (Ok(_), Ok(())) => {}
            (Err(error), Err(part)) => {
                assert!(!error.is_transient());
                assert!(error.to_string().contains(part), "{error}");
            }
            (got, expected) => panic!("got {got:?}, expected {expected:?}"),
        }
    }
}
