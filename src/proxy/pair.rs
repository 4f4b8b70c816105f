//! One proxied connection: the handshakes, the forwarding both ways, and its checks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{Sink, SinkExt, Stream, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::http::header::SEC_WEBSOCKET_PROTOCOL;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::handshake::{read_head, refusal, replay, upstream_request, HEAD_TIMEOUT};
use super::Shared;
use crate::capture::{Close, Payload, Peer, Record};
use crate::traffic::{ConnWatch, Found, Seen};

/// Frames queued for a connection's checks (each side waits when it is full).
const CHECK_QUEUE: usize = 64;
/// How long the other direction may take to finish once one has ended (its close reply).
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// A frame handed to the checks, or the end of one direction.
enum Item {
    Frame(Peer, f64, Message),
    Lost(Peer, f64),
}

fn ws_config() -> WebSocketConfig {
    // As large a message as the harness takes (the protocol sets no limit); a small read
    // buffer (AHP frames are small, and each connection holds one).
    WebSocketConfig::default()
        .read_buffer_size(8 * 1024)
        .max_message_size(Some(crate::transport::MAX_INBOUND_BYTES))
        .max_frame_size(Some(crate::transport::MAX_INBOUND_BYTES))
}

fn ms_since(opened: Instant) -> f64 {
    opened.elapsed().as_secs_f64() * 1000.0
}

type ClientSocket = tokio_tungstenite::WebSocketStream<
    tokio::io::Join<
        tokio::io::Chain<std::io::Cursor<Vec<u8>>, tokio::net::tcp::OwnedReadHalf>,
        tokio::net::tcp::OwnedWriteHalf,
    >,
>;
type UpstreamSocket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// Serves one client connection until either side ends it or the proxy stops.
pub(super) async fn serve(
    tcp: TcpStream,
    name: String,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let connected = tokio::select! {
        connected = connect(tcp, &name, &shared) => connected,
        _ = until_stopped(&mut stopped) => None,
    };
    let Some((client, upstream, target)) = connected else {
        return;
    };
    let opened = Instant::now();
    if let Some(recorder) = &shared.config.recorder {
        recorder.open(&name, &target, Some(&shared.config.upstream));
    }
    let (queue, queued) = mpsc::channel(CHECK_QUEUE);
    let checking = tokio::spawn(check(queued, name, Arc::clone(&shared), opened));
    let (client_sink, client_source) = client.split();
    let (upstream_sink, upstream_source) = upstream.split();
    let mut to_server = Box::pin(forward(
        client_source,
        upstream_sink,
        Peer::Client,
        opened,
        queue.clone(),
    ));
    let mut to_client = Box::pin(forward(
        upstream_source,
        client_sink,
        Peer::Server,
        opened,
        queue,
    ));
    // When one direction ends (a close, a broken peer), the other gets a grace period
    // for the close reply; a stopping proxy ends both at once.
    tokio::select! {
        _ = &mut to_server => { let _ = tokio::time::timeout(CLOSE_GRACE, &mut to_client).await; }
        _ = &mut to_client => { let _ = tokio::time::timeout(CLOSE_GRACE, &mut to_server).await; }
        _ = until_stopped(&mut stopped) => {}
    }
    // Dropping the forwarders drops the queue's senders (and both sockets): the checks
    // then end.
    drop(to_server);
    drop(to_client);
    let _ = checking.await;
}

/// Both handshakes: the client's request head, the same request upstream, then the
/// client's answer (the upstream's subprotocol, or its refusal). `None` when there is no
/// pair to serve (logged).
// tungstenite's handshake callback returns its error response by value.
#[allow(clippy::result_large_err)]
async fn connect(
    mut tcp: TcpStream,
    name: &str,
    shared: &Shared,
) -> Option<(ClientSocket, UpstreamSocket, String)> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut tcp)).await {
        Ok(Ok(head)) => head,
        Ok(Err(error)) => {
            shared.log(&format!("connection {name}: {error}"));
            return None;
        }
        Err(_) => {
            shared.log(&format!("connection {name}: no request head in time"));
            return None;
        }
    };
    let connected = connect_upstream(shared, &head).await;
    let (read_half, write_half) = tcp.into_split();
    let stream = tokio::io::join(replay(head.bytes, read_half), write_half);
    let (upstream, response) = match connected {
        Ok(pair) => pair,
        Err((status, why)) => {
            shared.log(&format!("connection {name}: upstream refused: {why}"));
            let answer = refusal(status, &why);
            let _ = tokio_tungstenite::accept_hdr_async(stream, move |_: &_, _| Err(answer)).await;
            return None;
        }
    };
    let protocol = response.headers().get(SEC_WEBSOCKET_PROTOCOL).cloned();
    let accepted = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        move |_: &_, mut ok: tokio_tungstenite::tungstenite::handshake::server::Response| {
            if let Some(protocol) = protocol {
                ok.headers_mut().insert(SEC_WEBSOCKET_PROTOCOL, protocol);
            }
            Ok(ok)
        },
        Some(ws_config()),
    )
    .await;
    match accepted {
        Ok(client) => Some((client, upstream, head.target)),
        Err(error) => {
            shared.log(&format!("connection {name}: client handshake: {error}"));
            None
        }
    }
}

type Refusal = (
    Option<(
        tokio_tungstenite::tungstenite::http::StatusCode,
        Option<Vec<u8>>,
    )>,
    String,
);

/// The client's request made upstream, within the timeout.
async fn connect_upstream(
    shared: &Shared,
    head: &super::handshake::ClientHead,
) -> Result<
    (
        UpstreamSocket,
        tokio_tungstenite::tungstenite::handshake::client::Response,
    ),
    Refusal,
> {
    let config = &shared.config;
    let request = upstream_request(&config.upstream, head).map_err(|e| (None, e.to_string()))?;
    let connector = match config.upstream.starts_with("wss://") {
        true => Some(crate::transport::tls::connector().map_err(|e| (None, e.to_string()))?),
        false => None,
    };
    let connecting = tokio_tungstenite::connect_async_tls_with_config(
        request,
        Some(ws_config()),
        true,
        connector,
    );
    match tokio::time::timeout(config.timeout, connecting).await {
        Ok(result) => result.map_err(upstream_refusal),
        Err(_) => Err((None, "the upstream did not answer in time".to_owned())),
    }
}

/// Resolves once the proxy stops.
async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// The upstream's refusal: its HTTP status and body when it answered one.
fn upstream_refusal(error: WsError) -> Refusal {
    let why = error.to_string();
    match error {
        WsError::Http(response) => {
            let status = response.status();
            (Some((status, response.into_body())), why)
        }
        _ => (None, why),
    }
}

/// Forwards every message `from` one peer to the other, unchanged, queueing each data or
/// close frame for the checks first. Ends when `from` ends; a broken side is reported to
/// the checks as lost and the other side is closed.
async fn forward<S, K>(
    mut from: S,
    mut to: K,
    peer: Peer,
    opened: Instant,
    queue: mpsc::Sender<Item>,
) where
    S: Stream<Item = Result<Message, WsError>> + Unpin,
    K: Sink<Message, Error = WsError> + Unpin,
{
    let mut closed = false;
    while let Some(Ok(message)) = from.next().await {
        let at_ms = ms_since(opened);
        closed |= matches!(message, Message::Close(_));
        if matches!(
            message,
            Message::Text(_) | Message::Binary(_) | Message::Close(_)
        ) {
            // The checks gone (the proxy stopping) never hold up forwarding.
            let _ = queue.send(Item::Frame(peer, at_ms, message.clone())).await;
        }
        if to.send(message).await.is_err() && !closed {
            // The other side is gone; its own direction reports it.
            return;
        }
    }
    if !closed {
        let _ = queue.send(Item::Lost(peer, ms_since(opened))).await;
        let _ = to.close().await;
    }
}

/// The checks of one connection: every queued frame in order, recorded when the proxy
/// records; at the end the connection is judged and handed to the shared traffic.
async fn check(
    mut queued: mpsc::Receiver<Item>,
    name: String,
    shared: Arc<Shared>,
    opened: Instant,
) {
    let config = &shared.config;
    let mut watch = ConnWatch::new(&name, config.timeout.as_secs_f64() * 1000.0)
        .sharing(&shared.invalid, &shared.earlier);
    while let Some(item) = queued.recv().await {
        let found = match &item {
            Item::Frame(peer, at_ms, message) => {
                observe(&mut watch, &shared, *peer, *at_ms, message)
            }
            Item::Lost(peer, at_ms) => {
                if let Some(recorder) = &config.recorder {
                    recorder.write(&Record {
                        conn: name.clone(),
                        from: Some(*peer),
                        at_ms: *at_ms,
                        time: None,
                        payload: Payload::Lost(true),
                    });
                }
                watch.frame(*peer, *at_ms, Seen::Lost, &config.schemas)
            }
        };
        report(&shared, found);
        let problems = watch.client_problems();
        for problem in &problems {
            shared.log(problem);
        }
        if !problems.is_empty() {
            shared.traffic(|t| t.client_problems(problems));
        }
    }
    let found = watch.end(ms_since(opened));
    report(&shared, found);
    shared.traffic(|t| t.close(watch));
}

/// Records and checks one forwarded message.
fn observe(
    watch: &mut ConnWatch,
    shared: &Shared,
    peer: Peer,
    at_ms: f64,
    message: &Message,
) -> Vec<Found> {
    let config = &shared.config;
    let conn = watch.name().to_owned();
    let (record, seen) = match message {
        Message::Text(text) => (
            Record::text(&conn, peer, at_ms, text.as_str()),
            Seen::Text(text.as_str()),
        ),
        Message::Binary(bytes) => (
            Record::binary(&conn, peer, at_ms, bytes),
            Seen::Binary(bytes.len()),
        ),
        Message::Close(frame) => {
            let (code, reason) = frame
                .as_ref()
                .map_or((None, ""), |f| (Some(u16::from(f.code)), f.reason.as_str()));
            let record = Record {
                conn: conn.clone(),
                from: Some(peer),
                at_ms,
                time: None,
                payload: Payload::Close(Close {
                    code,
                    reason: reason.to_owned(),
                }),
            };
            (record, Seen::Close { code, reason })
        }
        _ => return Vec::new(),
    };
    if let Some(recorder) = &config.recorder {
        recorder.write(&record);
    }
    watch.frame(peer, at_ms, seen, &config.schemas)
}

/// Prints each violation as it is found and adds it to the report.
fn report(shared: &Shared, found: Vec<Found>) {
    if found.is_empty() {
        return;
    }
    for one in &found {
        shared.log(&one.line());
    }
    shared.traffic(|t| {
        for one in found {
            t.found(one);
        }
    });
}
