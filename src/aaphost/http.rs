//! HTTP plumbing of the built-in AAP server: response bodies (JSON, errors, SSE), reading a
//! JSON request body under a size limit, the bearer check and query strings.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};

/// Every response body: a whole buffer or an SSE stream of chunks.
pub type Body = BoxBody<Bytes, Infallible>;

/// A refused request: the status and a one-line reason for the `{"error": …}` body.
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub message: String,
    /// `Allow` for 405 (the methods the path has).
    pub allow: Option<&'static str>,
}

impl Refusal {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
            allow: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Refusal {
        Refusal::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Refusal {
        Refusal::new(StatusCode::NOT_FOUND, message)
    }
}

/// A JSON response with `status`.
pub fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An empty response (204 No Content).
pub fn empty_response(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

/// The error response of a refusal: `{"error": message}` (the spec leaves error bodies
/// open; this is the shape API.md promises), plus `WWW-Authenticate` on 401 and `Allow` on
/// 405 as HTTP asks.
pub fn refusal_response(refusal: &Refusal) -> Response<Body> {
    let mut response = json_response(refusal.status, &json!({"error": refusal.message}));
    if refusal.status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(allow) = refusal.allow {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    response
}

/// One SSE event as written on the wire: `event: NAME` and one `data:` line holding the
/// payload (compact JSON never contains a newline).
pub fn sse_frame(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// A `text/event-stream` response whose body is `frames`, each sent as its own chunk.
pub fn sse_response(frames: Vec<Bytes>) -> Response<Body> {
    let chunks = futures_util::stream::iter(
        frames
            .into_iter()
            .map(|frame| Ok::<_, Infallible>(Frame::data(frame))),
    );
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(chunks)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Runs its action when dropped before it was disarmed: a body dropped before its last
/// frame was polled means the client left mid-stream.
struct Unfinished(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(action) = self.0.take() {
            action();
        }
    }
}

/// A `text/event-stream` response whose frames go out `pace` apart; `abandoned` runs when
/// the client leaves before the stream ended (the `abandoned-stream-wedges` fault's seam).
pub fn paced_sse_response(
    frames: Vec<Bytes>,
    pace: std::time::Duration,
    abandoned: impl FnOnce() + Send + Sync + 'static,
) -> Response<Body> {
    let guard = Unfinished(Some(Box::new(abandoned)));
    let state = (frames.into_iter(), guard, true);
    let chunks =
        futures_util::stream::unfold(state, move |(mut frames, mut guard, first)| async move {
            if !first {
                tokio::time::sleep(pace).await;
            }
            match frames.next() {
                Some(frame) => Some((
                    Ok::<_, Infallible>(Frame::data(frame)),
                    (frames, guard, false),
                )),
                None => {
                    // Every frame was taken: the stream ended, nobody left early.
                    let _disarmed = guard.0.take();
                    None
                }
            }
        });
    let mut response = sse_response(Vec::new());
    *response.body_mut() = BodyExt::boxed(StreamBody::new(chunks));
    response
}

/// Whether the request says `Content-Type: application/json` (parameters allowed).
pub fn is_json_request(request: &Request<Incoming>) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

/// Reads a POST body as JSON: `Content-Type: application/json` or 415, then as
/// [`read_json_any_type`].
pub async fn read_json(request: Request<Incoming>, limit: usize) -> Result<Value, Refusal> {
    if !is_json_request(&request) {
        return Err(Refusal::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the request body must be Content-Type: application/json",
        ));
    }
    read_json_any_type(request, limit).await
}

/// Reads a body of at most `limit` bytes (else 413) that must be valid JSON (else 400),
/// whatever its `Content-Type`.
pub async fn read_json_any_type(
    request: Request<Incoming>,
    limit: usize,
) -> Result<Value, Refusal> {
    let bytes = match Limited::new(request.into_body(), limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => {
            return Err(Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is larger than {limit} bytes"),
            ))
        }
        Err(error) => {
            return Err(Refusal::bad_request(format!(
                "cannot read the request body: {error}"
            )))
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|error| Refusal::bad_request(format!("the body is not valid JSON: {error}")))
}

/// Whether the request carries `Authorization: Bearer <token>` (the scheme name is
/// case-insensitive, RFC 9110 §11.1).
pub fn has_bearer(request: &Request<Incoming>, token: &str) -> bool {
    request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
        .is_some_and(|(scheme, given)| scheme.eq_ignore_ascii_case("bearer") && given == token)
}

/// The value of query parameter `name` (first occurrence, not percent-decoded: the
/// values this server reads, cursors and history kinds, are plain ASCII words).
pub fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}
