//! WebSocket client transport: connect, send typed or raw frames, receive with deadlines,
//! and record every frame (both directions, timestamped) into a [`Transcript`].
//!
//! It knows JSON-RPC only as far as correlating a response to a request id; AHP meaning is
//! left to the layers above.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{FutureExt, SinkExt, StreamExt};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub mod headers;

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Largest message the harness accepts from a server (the official SDK's default).
pub const MAX_INBOUND_BYTES: usize = 64 * 1024 * 1024;

/// Direction of a recorded frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Sent,
    Received,
}

/// One recorded frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frame {
    pub direction: Direction,
    /// Time since the connection opened.
    #[serde(rename = "atMs")]
    pub at_ms: f64,
    /// The frame's text (binary frames are shown as `<binary N bytes>`, closes as
    /// `<close CODE reason>`).
    pub text: String,
}

/// Every frame of one connection, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transcript {
    pub frames: Vec<Frame>,
}

/// What arrived from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A text frame holding one JSON value.
    Message(Value),
    /// A text frame that is not JSON.
    NotJson(String),
    /// A binary frame.
    Binary(usize),
    /// The server closed the connection.
    Closed { code: Option<u16>, reason: String },
}

/// Transport failures: no verdict about the server is implied by the type itself.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("cannot connect to {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: WsError,
    },
    #[error("timed out after {0:?} waiting for the server")]
    Timeout(Duration),
    #[error("the connection is closed")]
    Closed,
    #[error("the server sent a message larger than {MAX_INBOUND_BYTES} bytes")]
    Oversized,
    #[error("websocket error: {0}")]
    WebSocket(#[from] WsError),
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    #[error("cannot use {path} as a CA certificate: {reason}")]
    CaCertificate { path: String, reason: String },
}

/// One client connection.
pub struct Connection {
    sink: SplitSink<Socket, Message>,
    source: SplitStream<Socket>,
    opened: Instant,
    transcript: Transcript,
    backlog: VecDeque<Incoming>,
    /// Open [`BacklogMark`]s, innermost last.
    marks: Vec<BacklogMark>,
    next_id: u64,
    closed: bool,
    /// The run's timeout, given at connect: how long a request may go unanswered.
    timeout: Duration,
    /// Answers to host-to-client requests not sent yet (they are read where no sending is
    /// possible; see [`Connection::answer_host_requests`]).
    host_request_answers: Vec<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("frames", &self.transcript.frames.len())
            .field("closed", &self.closed)
            .finish()
    }
}

impl Connection {
    /// Opens a WebSocket connection to `url` within `timeout`.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, TransportError> {
        // A small read buffer: tungstenite zero-fills it before every read, and AHP frames
        // are small (a big one just takes several reads).
        let config = WebSocketConfig::default()
            .read_buffer_size(8 * 1024)
            .max_message_size(Some(MAX_INBOUND_BYTES))
            .max_frame_size(Some(MAX_INBOUND_BYTES));
        // wss:// trusts the system's roots plus any `--ca-cert`; ws:// needs no TLS set-up.
        let connector = if url.starts_with("wss://") {
            Some(tls::connector()?)
        } else {
            None
        };
        // A credential in the URL is a secret from now on: no report or log line shows it.
        crate::redact::learn_url(url);
        let failed = |source| TransportError::Connect {
            url: crate::redact::url(url).into_owned(),
            source,
        };
        let mut request = url.into_client_request().map_err(failed)?;
        headers::apply(request.headers_mut());
        let connecting = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(config),
            true,
            connector,
        );
        let (socket, _) = tokio::time::timeout(timeout, connecting)
            .await
            .map_err(|_| TransportError::Timeout(timeout))?
            .map_err(failed)?;
        let (sink, source) = socket.split();
        Ok(Connection {
            sink,
            source,
            opened: Instant::now(),
            transcript: Transcript::default(),
            backlog: VecDeque::new(),
            marks: Vec::new(),
            next_id: 0,
            closed: false,
            timeout,
            host_request_answers: Vec::new(),
        })
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The timeout the connection was opened with (the run's).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn record(&mut self, direction: Direction, text: String) {
        let at_ms = self.opened.elapsed().as_secs_f64() * 1000.0;
        // Secrets never reach a transcript (and so a report).
        let text = match (direction, crate::redact::frame(&text)) {
            (Direction::Sent, std::borrow::Cow::Owned(redacted)) => redacted,
            _ => text,
        };
        self.transcript.frames.push(Frame {
            direction,
            at_ms,
            text,
        });
    }

    /// A fresh request id for this connection.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Sends one text frame as is.
    pub async fn send_raw(&mut self, text: &str) -> Result<(), TransportError> {
        self.answer_host_requests().await?;
        self.send_text(text).await
    }

    async fn send_text(&mut self, text: &str) -> Result<(), TransportError> {
        self.record(Direction::Sent, text.to_owned());
        self.sink.send(Message::text(text)).await?;
        Ok(())
    }

    /// Sends the answers to the host-to-client requests read so far: the harness implements
    /// none of them, so each gets `-32601` (PROTOCOL §14: a fair client answers them).
    pub async fn answer_host_requests(&mut self) -> Result<(), TransportError> {
        if self.closed {
            self.host_request_answers.clear();
        }
        for answer in std::mem::take(&mut self.host_request_answers) {
            self.send_text(&answer).await?;
        }
        Ok(())
    }

    /// Sends one binary frame.
    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), TransportError> {
        self.record(Direction::Sent, format!("<binary {} bytes>", bytes.len()));
        self.sink.send(Message::binary(bytes)).await?;
        Ok(())
    }

    pub async fn send_json(&mut self, value: &Value) -> Result<(), TransportError> {
        self.send_raw(&value.to_string()).await
    }

    /// Sends a request and returns its id.
    pub async fn send_request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<u64, TransportError> {
        let id = self.next_id();
        self.send_json(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        Ok(id)
    }

    pub async fn send_notification(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(), TransportError> {
        self.send_json(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await
    }

    /// Closes the connection from the client side.
    pub async fn close(&mut self) {
        if !self.closed {
            self.record(Direction::Sent, "<close 1000>".to_owned());
            let _ = self.sink.close().await;
            self.closed = true;
        }
    }

    /// The next frame from the wire (not from the backlog), within `timeout`.
    async fn read(&mut self, timeout: Duration) -> Result<Incoming, TransportError> {
        if self.closed {
            return Err(TransportError::Closed);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, self.source.next())
                .await
                .map_err(|_| TransportError::Timeout(timeout))?;
            let incoming = self.record_incoming(next)?;
            if let Some(item) = &incoming {
                for mark in &mut self.marks {
                    mark.read.push(item.clone());
                }
            }
            // A failed answer means a broken socket, which the next read or send reports.
            let _ = self.answer_host_requests().await;
            if let Some(incoming) = incoming {
                return Ok(incoming);
            }
        }
    }

    /// Records one item of the WebSocket stream; `None` for control frames the caller
    /// skips.
    fn record_incoming(
        &mut self,
        next: Option<Result<Message, WsError>>,
    ) -> Result<Option<Incoming>, TransportError> {
        let incoming = match next {
            Some(Ok(Message::Text(text))) => {
                let parsed = serde_json::from_str(text.as_str());
                let text = text.as_str().to_owned();
                let incoming = match parsed {
                    Ok(value) => Incoming::Message(value),
                    Err(_) => Incoming::NotJson(text.clone()),
                };
                self.record(Direction::Received, text);
                if let Incoming::Message(message) = &incoming {
                    if let Some(answer) = host_request_answer(message) {
                        self.host_request_answers.push(answer);
                    }
                }
                incoming
            }
            Some(Ok(Message::Binary(bytes))) => {
                self.record(
                    Direction::Received,
                    format!("<binary {} bytes>", bytes.len()),
                );
                Incoming::Binary(bytes.len())
            }
            Some(Ok(Message::Close(frame))) => {
                let (code, reason) = frame
                    .map(|f| (Some(u16::from(f.code)), f.reason.as_str().to_owned()))
                    .unwrap_or((None, String::new()));
                self.record(
                    Direction::Received,
                    format!(
                        "<close {} {}>",
                        code.map_or("-".into(), |c| c.to_string()),
                        reason
                    ),
                );
                self.closed = true;
                Incoming::Closed { code, reason }
            }
            Some(Ok(_)) => return Ok(None),
            Some(Err(WsError::Capacity(error))) => {
                self.record(Direction::Received, format!("<message dropped: {error}>"));
                self.closed = true;
                return Err(TransportError::Oversized);
            }
            Some(Err(
                WsError::ConnectionClosed
                | WsError::AlreadyClosed
                | WsError::Protocol(_)
                | WsError::Io(_),
            ))
            | None => {
                self.record(Direction::Received, "<connection lost>".to_owned());
                self.closed = true;
                Incoming::Closed {
                    code: None,
                    reason: String::new(),
                }
            }
            Some(Err(error)) => return Err(error.into()),
        };
        Ok(Some(incoming))
    }

    /// The next incoming item (backlog first), within `timeout`.
    pub async fn recv(&mut self, timeout: Duration) -> Result<Incoming, TransportError> {
        if let Some(item) = self.backlog.pop_front() {
            return Ok(item);
        }
        self.read(timeout).await
    }

    /// Waits for the first item matching `pred` within `timeout`; items that do not match
    /// stay in the backlog, in order, for later calls.
    pub async fn wait_for(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&Incoming) -> bool,
    ) -> Result<Incoming, TransportError> {
        if let Some(index) = self.backlog.iter().position(&mut pred) {
            if let Some(item) = self.backlog.remove(index) {
                return Ok(item);
            }
        }
        self.wait_for_new(timeout, pred).await
    }

    /// Like [`Connection::wait_for`], but the item found stays in the backlog for later steps.
    pub async fn wait_keeping(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&Incoming) -> bool,
    ) -> Result<Incoming, TransportError> {
        if let Some(item) = self.backlog.iter().find(|item| pred(item)) {
            return Ok(item.clone());
        }
        let item = self.wait_for_new(timeout, pred).await?;
        self.backlog.push_back(item.clone());
        Ok(item)
    }

    /// Like [`Connection::wait_for`], but only frames that arrive from now on count.
    pub async fn wait_for_new(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&Incoming) -> bool,
    ) -> Result<Incoming, TransportError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TransportError::Timeout(timeout));
            }
            let item = self.read(left).await.map_err(|e| match e {
                TransportError::Timeout(_) => TransportError::Timeout(timeout),
                other => other,
            })?;
            if pred(&item) {
                return Ok(item);
            }
            let closed = matches!(item, Incoming::Closed { .. });
            self.backlog.push_back(item);
            if closed {
                return Err(TransportError::Closed);
            }
        }
    }

    /// Waits for the response to request `id`.
    pub async fn response(&mut self, id: u64, timeout: Duration) -> Result<Value, TransportError> {
        let item = self
            .wait_for(timeout, |item| match item {
                Incoming::Message(message) => is_response_to(message, id),
                _ => false,
            })
            .await?;
        match item {
            Incoming::Message(message) => Ok(message),
            _ => Err(TransportError::Closed),
        }
    }

    /// Sends a request and waits for its response.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        let id = self.send_request(method, params).await?;
        self.response(id, timeout).await
    }

    /// The JSON messages received from transcript frame `from` on (frames that are not
    /// JSON are skipped).
    pub fn received_since(&self, from: usize) -> impl Iterator<Item = Value> + '_ {
        self.transcript
            .frames
            .get(from..)
            .unwrap_or_default()
            .iter()
            .filter(|f| f.direction == Direction::Received)
            .filter_map(|f| serde_json::from_str(&f.text).ok())
    }

    /// Everything received but not yet consumed.
    pub fn backlog(&self) -> impl Iterator<Item = &Incoming> {
        self.backlog.iter()
    }

    /// Reads whatever arrives within `quiet` and keeps it in the backlog.
    pub async fn drain(&mut self, quiet: Duration) {
        while let Ok(item) = self.read(quiet).await {
            let closed = matches!(item, Incoming::Closed { .. });
            self.backlog.push_back(item);
            if closed {
                break;
            }
        }
    }

    /// Reads at most one item into the backlog, waiting up to `timeout` for it; whether one
    /// came.
    pub async fn pull(&mut self, timeout: Duration) -> bool {
        match self.read(timeout).await {
            Ok(item) => {
                self.backlog.push_back(item);
                true
            }
            Err(_) => false,
        }
    }

    /// Moves everything that has already arrived into the backlog without waiting (a zero
    /// timeout would still wait for the timer's next tick, about a millisecond).
    pub fn take_arrived(&mut self) {
        while !self.closed {
            let Some(next) = self.source.next().now_or_never() else {
                return;
            };
            match self.record_incoming(next) {
                Ok(Some(item)) => self.backlog.push_back(item),
                Ok(None) => {}
                Err(_) => return,
            }
        }
    }

    /// Removes and returns the whole backlog.
    pub fn take_backlog(&mut self) -> Vec<Incoming> {
        self.backlog.drain(..).collect()
    }

    /// Remembers the backlog, and from now on every item read, so that
    /// [`Connection::rewind`] can put back what later calls consume. Marks nest; each ends
    /// with one `rewind` or `release`.
    pub fn mark(&mut self) {
        self.marks.push(BacklogMark {
            backlog: self.backlog.clone(),
            read: Vec::new(),
        });
    }

    /// Ends the innermost mark and puts the backlog back as if nothing had been consumed
    /// since: what it held then, followed by every item read since, in order.
    pub fn rewind(&mut self) {
        if let Some(mark) = self.marks.pop() {
            let mut backlog = mark.backlog;
            backlog.extend(mark.read);
            self.backlog = backlog;
        }
    }

    /// Ends the innermost mark, keeping what was consumed since.
    pub fn release(&mut self) {
        self.marks.pop();
    }
}

/// The backlog at a point, and the items read since (see [`Connection::mark`]).
#[derive(Debug)]
struct BacklogMark {
    backlog: VecDeque<Incoming>,
    read: Vec<Incoming>,
}

/// The answer to `message` when it is a host-to-client request (a method and an id):
/// `-32601`, since the harness serves no resources.
fn host_request_answer(message: &Value) -> Option<String> {
    let method = message.get("method")?.as_str()?;
    let id = message.get("id")?;
    let answer = json!({ "jsonrpc": "2.0", "id": id, "error": {
        "code": -32601,
        "message": format!("the ahpspec harness does not implement {method}"),
    }});
    Some(answer.to_string())
}

/// Whether `message` is a response (result or error) to request `id`.
pub fn is_response_to(message: &Value, id: u64) -> bool {
    message.get("id").and_then(Value::as_u64) == Some(id)
        && message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// TLS for `wss://` servers: the system's root certificates plus the ones named with
/// `--ca-cert` (a server with a self-signed certificate, or a private CA).
pub mod tls {
    use std::sync::{Arc, Mutex};

    use rustls::{ClientConfig, RootCertStore};
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    use tokio_tungstenite::Connector;

    use super::TransportError;

    /// Certificates added with [`trust_ca_file`], and the client set-up built from them and
    /// the system's roots (rebuilt after each addition; reading the system's roots takes
    /// milliseconds, so it is not redone per connection).
    struct Trust {
        extra: Vec<CertificateDer<'static>>,
        config: Option<Arc<ClientConfig>>,
    }

    static TRUST: Mutex<Trust> = Mutex::new(Trust {
        extra: Vec::new(),
        config: None,
    });

    /// Trusts every certificate in the PEM file at `path` for `wss://` connections of this
    /// process; returns how many it held.
    pub fn trust_ca_file(path: &std::path::Path) -> Result<usize, TransportError> {
        let failed = |reason: String| TransportError::CaCertificate {
            path: path.display().to_string(),
            reason,
        };
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| failed(e.to_string()))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(e.to_string()))?;
        if certs.is_empty() {
            return Err(failed("no PEM certificate in it".into()));
        }
        // Each one must be usable as a trust anchor, or the mistake would only show as a
        // failed handshake later.
        let mut check = RootCertStore::empty();
        for cert in &certs {
            check.add(cert.clone()).map_err(|e| failed(e.to_string()))?;
        }
        let count = certs.len();
        let mut trust = TRUST
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        trust.extra.extend(certs);
        trust.config = None;
        Ok(count)
    }

    /// The connector for `wss://` connections.
    pub(crate) fn connector() -> Result<Connector, TransportError> {
        client_config().map(Connector::Rustls)
    }

    /// The TLS client set-up every `wss://` and `https://` connection of this process uses.
    pub fn client_config() -> Result<Arc<ClientConfig>, TransportError> {
        let mut trust = TRUST
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Trust { extra, config } = &mut *trust;
        if let Some(config) = config {
            return Ok(Arc::clone(config));
        }
        let mut roots = RootCertStore::empty();
        // Unreadable system certificates leave only the extra ones: a handshake with a
        // server they do not vouch for then fails with the TLS error.
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        roots.add_parsable_certificates(extra.iter().cloned());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let built = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TransportError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let built = Arc::new(built);
        *config = Some(Arc::clone(&built));
        Ok(built)
    }
}
