//! The HTTP/1.1 client of the AAP harness (hyper, one connection per request, TLS through
//! the process's rustls set-up for `https://`). Every request and everything that comes
//! back — status line, body, each SSE event, how a stream ended — is recorded into the same
//! transcript rows the WebSocket runner reports ([`ReportedFrame`]).

use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Limited};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

mod body;
pub mod exchange;
mod reader;
mod recording;

pub use reader::BadReader;
pub use recording::ExchangeSink;

use super::sse::{self, SseRead, StreamEnd};
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
    /// The server closed the connection while the request body was still being sent: it
    /// may have answered first (a 413 to an oversized body, say), which the client could
    /// not read.
    #[error("the server closed the connection while the request body was being sent ({0})")]
    ClosedWhileSending(String),
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

    /// `host:port` (IPv6 hosts in brackets).
    pub fn authority(&self) -> String {
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
    /// Where every exchange goes when it ends (`--record`), if anywhere.
    recorder: Option<ExchangeSink>,
}

/// A connection to the server, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Opens a connection to `target` (TLS for `https://`), within `timeout` for each step.
pub async fn connect(target: &Target, timeout: Duration) -> Result<Box<dyn Io>, HttpError> {
    let authority = target.authority();
    let connect_error = |e: String| HttpError::Connect(authority.clone(), e);
    let tcp = tokio::time::timeout(
        timeout,
        TcpStream::connect((target.host.as_str(), target.port)),
    )
    .await
    .map_err(|_| HttpError::Timeout(timeout))?
    .map_err(|e| connect_error(e.to_string()))?;
    if !target.tls {
        return Ok(Box::new(tcp));
    }
    let config =
        crate::transport::tls::client_config().map_err(|e| connect_error(e.to_string()))?;
    let name = rustls_pki_types::ServerName::try_from(target.host.clone())
        .map_err(|e| connect_error(e.to_string()))?;
    let tls = tokio::time::timeout(
        timeout,
        tokio_rustls::TlsConnector::from(config).connect(name, tcp),
    )
    .await
    .map_err(|_| HttpError::Timeout(timeout))?
    .map_err(|e| connect_error(e.to_string()))?;
    Ok(Box::new(tls))
}

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

    /// The client, handing every exchange to `recorder` when it ends (when given).
    pub fn recording(self, recorder: Option<ExchangeSink>) -> Client {
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
        self.sending(request);
        let mut raw = self.recorder.as_ref().map(|_| Vec::new());
        let result = self.exchange(request, raw.as_mut()).await;
        if let Err(error) = &result {
            self.record("received", format!("<no response: {error}>"));
        }
        if let Some(recorder) = &self.recorder {
            recorder.take(recording::exchange(
                request,
                &result,
                raw.as_deref().unwrap_or_default(),
            ));
        }
        result
    }

    /// Records `request` in the transcript.
    fn sending(&mut self, request: &Request) {
        let body_text = request
            .body
            .as_deref()
            .map(|b| format!("\n{}", String::from_utf8_lossy(b)))
            .unwrap_or_default();
        self.record(
            "sent",
            format!("{} {}{body_text}", request.method, request.path),
        );
    }

    /// One exchange; when `raw` is given, every byte of the response body read goes into
    /// it too (the copy a recording keeps).
    async fn exchange(
        &mut self,
        request: &Request,
        mut raw: Option<&mut Vec<u8>>,
    ) -> Result<Response, HttpError> {
        let io = connect(&self.target, self.timeout).await?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| HttpError::Exchange(e.to_string()))?;
        // The connection task ends with the response (one request per connection).
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let (http_request, taken) = self.build(request)?;
        let response = tokio::time::timeout(self.timeout, sender.send_request(http_request))
            .await
            .map_err(|_| HttpError::Timeout(self.timeout))?
            .map_err(|e| {
                // hyper says a body write failed so ("error writing a body to connection")
                // and no other way; a failure before the body was all taken is one too (the
                // slices not taken were never sent).
                let said = e.to_string();
                if said.starts_with("error writing a body") || !taken.all() {
                    HttpError::ClosedWhileSending(said)
                } else {
                    HttpError::Exchange(said)
                }
            })?;
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
        let mut result = Response {
            status,
            content_type,
            body: Body::Empty,
        };
        if result.is_media("text/event-stream") {
            self.record("received", head);
            use futures_util::StreamExt as _;
            let chunks = response.into_body().into_data_stream().inspect(|chunk| {
                if let (Some(raw), Ok(bytes)) = (raw.as_deref_mut(), chunk) {
                    raw.extend_from_slice(bytes);
                }
            });
            let mut read = sse::read(chunks, self.timeout, |_| {}).await;
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
        if let Some(raw) = raw {
            raw.extend_from_slice(&bytes);
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

    /// The hyper request, and what says when its body was all taken.
    fn build(
        &self,
        request: &Request,
    ) -> Result<(hyper::Request<body::SentBody>, body::Taken), HttpError> {
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
        let (body, taken) = body::SentBody::new(request.body.clone().unwrap_or_default());
        builder
            .body(body)
            .map(|built| (built, taken))
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

    /// A server that reads the start of each request (all of it when `read_all`) and then
    /// closes without an answer.
    async fn closing_server(read_all: bool) -> u16 {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buffer = vec![0u8; 64 * 1024];
                // All of it: until the client sends nothing more for a while (it waits
                // for an answer once its body is sent).
                let quiet = Duration::from_millis(300);
                while let Ok(Ok(1..)) = tokio::time::timeout(quiet, socket.read(&mut buffer)).await
                {
                    if !read_all {
                        break;
                    }
                }
                drop(socket);
            }
        });
        port
    }

    async fn post_to(port: u16, bytes: usize) -> Result<Response, HttpError> {
        let target = Target::parse(&format!("http://127.0.0.1:{port}")).expect("url");
        let mut client = Client::new(target, None, Duration::from_secs(5));
        let request = Request {
            method: "POST".into(),
            path: "/sessions".into(),
            body: Some(vec![b'x'; bytes]),
            ..Request::default()
        };
        client.send(&request).await
    }

    /// A server that closes while the body is still being sent: the client says so
    /// (whether an answer went first cannot be seen; a 413 sent before the close is lost
    /// the same way) rather than calling the request unanswered. Its twin: a server that
    /// read the whole body and closed without an answer left the request unanswered.
    #[tokio::test]
    async fn a_server_that_closes_while_the_body_is_sent_is_said_so() {
        let early = closing_server(false).await;
        for _ in 0..3 {
            match post_to(early, 8 * 1024 * 1024).await {
                Err(HttpError::ClosedWhileSending(_)) => {}
                other => panic!("not said so: {other:?}"),
            }
        }
        let late = closing_server(true).await;
        match post_to(late, 1024 * 1024).await {
            Err(HttpError::Exchange(_)) => {}
            other => panic!("an unanswered request: {other:?}"),
        }
    }

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
