//! The HTTP/1.1 client of the AAP harness (hyper, one connection per request, TLS through
//! the process's rustls set-up for `https://`). Every request and everything that comes
//! back — status line, body, each SSE event, how a stream ended — is recorded into the same
//! transcript rows the WebSocket runner reports ([`ReportedFrame`]).

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

mod reader;

pub use reader::BadReader;

use super::sse::{self, SseRead, StreamEnd};
use crate::capture::aap::{
    AapEvent, AapExchange, AapPayload, AapRecorder, AapRequest, AapResponseHead, AapStreamEnd,
};
use crate::verdict::ReportedFrame;

/// Largest non-streamed body the harness reads.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Why a request got no response. No verdict about the server is implied by the type.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("not an http:// or https:// URL: {0}")]
    BadUrl(String),
    #[error("cannot connect to {0}: {1}")]
    Connect(String, String),
    #[error("timed out after {0:?} waiting for the server")]
    Timeout(Duration),
    #[error("the exchange failed: {0}")]
    Exchange(String),
}

/// Where the server lives: scheme, authority and the base path every endpoint is under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// `""` or `/v1` (no trailing slash).
    pub base_path: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, HttpError> {
        let bad = || HttpError::BadUrl(crate::redact::url(url).into_owned());
        let (tls, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else {
            return Err(bad());
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
                (host, port.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        if host.is_empty() || path.contains(['?', '#']) {
            return Err(bad());
        }
        Ok(Target {
            tls,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            base_path: path.trim_end_matches('/').to_owned(),
        })
    }

    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Which `Authorization` header a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Auth {
    /// The configured key, when there is one.
    #[default]
    Configured,
    /// None at all.
    Omitted,
    /// A key the server cannot know.
    Wrong,
}

/// One request, relative to the base URL.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// Path and query, e.g. `/sessions?after=x`.
    pub path: String,
    pub body: Option<Vec<u8>>,
    /// Defaults to `application/json` when there is a body.
    pub content_type: Option<String>,
    pub auth: Auth,
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Empty,
    Json(Value),
    /// Not JSON (or not UTF-8, shown lossily).
    Text(String),
    Events(SseRead),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Body,
}

impl Response {
    pub fn json(&self) -> Option<&Value> {
        match &self.body {
            Body::Json(value) => Some(value),
            _ => None,
        }
    }

    pub fn events(&self) -> Option<&SseRead> {
        match &self.body {
            Body::Events(read) => Some(read),
            _ => None,
        }
    }

    /// Whether the declared media type (parameters ignored) is `media`.
    pub fn is_media(&self, media: &str) -> bool {
        self.content_type.as_deref().is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(media))
        })
    }
}

/// A client for one case: the target, the key, and the case's transcript.
#[derive(Debug)]
pub struct Client {
    target: Target,
    token: Option<String>,
    timeout: Duration,
    opened: Instant,
    transcript: Vec<ReportedFrame>,
    /// Where every exchange is recorded (`--record`), if anywhere.
    recorder: Option<AapRecorder>,
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

impl Client {
    pub fn new(target: Target, token: Option<String>, timeout: Duration) -> Client {
        if let Some(token) = &token {
            crate::redact::learn_value(token);
        }
        Client {
            target,
            token,
            timeout,
            opened: Instant::now(),
            transcript: Vec::new(),
            recorder: None,
        }
    }

    /// The client, recording every exchange into `recorder` (when given).
    pub fn recording(self, recorder: Option<AapRecorder>) -> Client {
        Client { recorder, ..self }
    }

    pub fn transcript(&self) -> &[ReportedFrame] {
        &self.transcript
    }

    /// Whether an API key is configured (`--token`, or an `Authorization` `--header`).
    pub fn has_token(&self) -> bool {
        self.token.is_some()
            || crate::transport::headers::extra()
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    fn record(&mut self, direction: &str, text: String) {
        self.transcript.push(ReportedFrame {
            conn: "http".to_owned(),
            direction: direction.to_owned(),
            at_ms: self.opened.elapsed().as_secs_f64() * 1000.0,
            text,
        });
    }

    /// Sends `request` and reads the whole response (an SSE body to its end).
    pub async fn send(&mut self, request: &Request) -> Result<Response, HttpError> {
        let capture = self.sending(request);
        let result = self.exchange(request, capture.as_ref()).await;
        if let Err(error) = &result {
            self.record("received", format!("<no response: {error}>"));
            if let Some(capture) = &capture {
                capture.record(AapPayload::Failed(error.to_string()));
            }
        }
        result
    }

    /// Records `request` in the transcript, and in a new exchange of the capture when
    /// recording (that exchange).
    fn sending(&mut self, request: &Request) -> Option<AapExchange> {
        let body_text = request
            .body
            .as_deref()
            .map(|b| format!("\n{}", String::from_utf8_lossy(b)))
            .unwrap_or_default();
        self.record(
            "sent",
            format!("{} {}{body_text}", request.method, request.path),
        );
        self.capture_request(request)
    }

    /// A new exchange of the capture, its request recorded (`None` when not recording).
    fn capture_request(&self, request: &Request) -> Option<AapExchange> {
        let capture = self.recorder.as_ref()?.exchange();
        capture.record(AapPayload::Request(AapRequest {
            method: request.method.clone(),
            path: request.path.clone(),
            content_type: request.body.is_some().then(|| {
                request
                    .content_type
                    .as_deref()
                    .unwrap_or("application/json")
                    .to_owned()
            }),
            body: request
                .body
                .as_deref()
                .map(|b| crate::redact::text(&String::from_utf8_lossy(b)).into_owned()),
        }));
        Some(capture)
    }

    async fn connect(&self) -> Result<Box<dyn Io>, HttpError> {
        let authority = self.target.authority();
        let connect_error = |e: String| HttpError::Connect(authority.clone(), e);
        let tcp = tokio::time::timeout(
            self.timeout,
            TcpStream::connect((self.target.host.as_str(), self.target.port)),
        )
        .await
        .map_err(|_| HttpError::Timeout(self.timeout))?
        .map_err(|e| connect_error(e.to_string()))?;
        if !self.target.tls {
            return Ok(Box::new(tcp));
        }
        let config =
            crate::transport::tls::client_config().map_err(|e| connect_error(e.to_string()))?;
        let name = rustls_pki_types::ServerName::try_from(self.target.host.clone())
            .map_err(|e| connect_error(e.to_string()))?;
        let tls = tokio::time::timeout(
            self.timeout,
            tokio_rustls::TlsConnector::from(config).connect(name, tcp),
        )
        .await
        .map_err(|_| HttpError::Timeout(self.timeout))?
        .map_err(|e| connect_error(e.to_string()))?;
        Ok(Box::new(tls))
    }

    async fn exchange(
        &mut self,
        request: &Request,
        capture: Option<&AapExchange>,
    ) -> Result<Response, HttpError> {
        let io = self.connect().await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| HttpError::Exchange(e.to_string()))?;
        // The connection task ends with the response (one request per connection).
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let http_request = self.build(request)?;
        let response = tokio::time::timeout(self.timeout, sender.send_request(http_request))
            .await
            .map_err(|_| HttpError::Timeout(self.timeout))?
            .map_err(|e| HttpError::Exchange(e.to_string()))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let head = format!(
            "{status} {}{}",
            response.status().canonical_reason().unwrap_or(""),
            content_type
                .as_deref()
                .map(|ct| format!(" ({ct})"))
                .unwrap_or_default()
        );
        if let Some(capture) = capture {
            capture.record(AapPayload::Response(AapResponseHead {
                status,
                content_type: content_type.clone(),
            }));
        }
        let mut result = Response {
            status,
            content_type,
            body: Body::Empty,
        };
        if result.is_media("text/event-stream") {
            self.record("received", head);
            let chunks = response.into_body().into_data_stream();
            let mut read = sse::read(chunks, self.timeout, |event| {
                if let Some(capture) = capture {
                    capture.record(AapPayload::Event(AapEvent {
                        name: event.name.clone(),
                        data: crate::redact::text(&event.data).into_owned(),
                    }));
                }
            })
            .await;
            if let Some(capture) = capture {
                capture.record(AapPayload::End(stream_end(&read)));
            }
            name_from_data(&mut read.events);
            for event in &read.events {
                self.record(
                    "received",
                    format!("event: {}\ndata: {}", event.name, event.data),
                );
            }
            self.record("received", describe_end(&read));
            result.body = Body::Events(read);
            return Ok(result);
        }
        let bytes = tokio::time::timeout(
            self.timeout,
            Limited::new(response.into_body(), MAX_BODY_BYTES).collect(),
        )
        .await
        .map_err(|_| HttpError::Timeout(self.timeout))?
        .map_err(|e| HttpError::Exchange(format!("reading the body: {e}")))?
        .to_bytes();
        if let (Some(capture), false) = (capture, bytes.is_empty()) {
            capture.record(AapPayload::Body(
                crate::redact::text(&String::from_utf8_lossy(&bytes)).into_owned(),
            ));
        }
        result.body = if bytes.is_empty() {
            Body::Empty
        } else {
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(value) => Body::Json(value),
                Err(_) => Body::Text(String::from_utf8_lossy(&bytes).into_owned()),
            }
        };
        let shown = if bytes.is_empty() {
            String::new()
        } else {
            format!("\n{}", String::from_utf8_lossy(&bytes))
        };
        self.record("received", format!("{head}{shown}"));
        Ok(result)
    }

    fn build(&self, request: &Request) -> Result<hyper::Request<Full<Bytes>>, HttpError> {
        let uri = format!("{}{}", self.target.base_path, request.path);
        let mut builder = hyper::Request::builder()
            .method(request.method.as_str())
            .uri(&uri)
            .header(HOST, self.target.authority());
        // The `--header`s first: a configured key (`--token`) replaces theirs, and the
        // requests that go without a key, or with a wrong one, drop theirs.
        if let Some(headers) = builder.headers_mut() {
            crate::transport::headers::apply(headers);
            if request.auth != Auth::Configured {
                headers.remove(AUTHORIZATION);
            }
        }
        let bearer = match request.auth {
            Auth::Configured => self.token.clone(),
            Auth::Omitted => None,
            Auth::Wrong => Some("ahpspec-wrong-key".to_owned()),
        };
        if let Some(token) = bearer {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|e| HttpError::Exchange(format!("unusable API key: {e}")))?;
            if let Some(headers) = builder.headers_mut() {
                headers.insert(AUTHORIZATION, value);
            }
        }
        if request.body.is_some() {
            let content_type = request
                .content_type
                .as_deref()
                .unwrap_or("application/json");
            builder = builder.header(CONTENT_TYPE, content_type);
        }
        let body = Full::new(Bytes::from(request.body.clone().unwrap_or_default()));
        builder
            .body(body)
            .map_err(|e| HttpError::Exchange(format!("cannot build {uri}: {e}")))
    }
}

/// An event without an `event:` line that names its type inside its data (the schema's
/// SSEEvent objects carry `event`) is read as that type.
pub fn name_from_data(events: &mut [super::sse::SseEvent]) {
    for event in events.iter_mut().filter(|e| e.name == "message") {
        let named = serde_json::from_str::<Value>(&event.data)
            .ok()
            .and_then(|d| d.get("event").and_then(Value::as_str).map(str::to_owned));
        if let Some(name) = named {
            event.name = name;
        }
    }
}

/// How a stream ended, as a capture records it.
fn stream_end(read: &SseRead) -> AapStreamEnd {
    let (how, detail) = match &read.end {
        StreamEnd::Closed => ("closed", None),
        StreamEnd::TimedOut(after) => ("timedOut", Some(after.as_millis().to_string())),
        StreamEnd::Broken(why) => ("broken", Some(why.clone())),
    };
    AapStreamEnd {
        how: how.to_owned(),
        detail,
        unterminated: read.unterminated,
    }
}

fn describe_end(read: &SseRead) -> String {
    let cut = if read.unterminated {
        ", after an event cut off before its blank line"
    } else {
        ""
    };
    match &read.end {
        StreamEnd::Closed => format!("<end of stream{cut}>"),
        StreamEnd::TimedOut(after) => format!("<stream still open after {after:?}>"),
        StreamEnd::Broken(why) => format!("<stream broke off: {why}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unnamed_event_takes_its_name_from_its_data() {
        let event = |name: &str, data: &str| super::super::sse::SseEvent {
            name: name.into(),
            data: data.into(),
        };
        let mut events = vec![
            event("message", r#"{"event":"turn_start"}"#),
            event("message", "{}"),
            event("text", r#"{"event":"thinking","text":"x"}"#),
        ];
        name_from_data(&mut events);
        let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["turn_start", "message", "text"]);
    }

    #[test]
    fn targets_parse_with_and_without_base_path() {
        let t = Target::parse("http://127.0.0.1:8080/v1/").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.base_path.as_str()),
            (false, "127.0.0.1", 8080, "/v1")
        );
        let t = Target::parse("https://example.com").unwrap();
        assert_eq!((t.tls, t.port, t.base_path.as_str()), (true, 443, ""));
        let t = Target::parse("http://[::1]:9/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 9));
        assert!(Target::parse("ws://x").is_err());
        assert!(Target::parse("http://:80").is_err());
        assert!(Target::parse("http://h:notaport").is_err());
    }
}
