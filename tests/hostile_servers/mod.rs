//! The hostile servers: tiny WebSocket servers on 127.0.0.1 that complete the handshake and
//! then misbehave, one way each ([`Mode`]). Shared by `tests/hostile.rs` (the library's
//! verdicts) and `tests/hostile_cli.rs` (the binary's exit codes and reports).
#![allow(dead_code)]

use std::sync::OnceLock;
use std::time::Duration;

use ahpspec::transport::MAX_INBOUND_BYTES;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// How a hostile server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Accepts the WebSocket and never sends anything.
    Silent,
    /// Answers every frame with non-JSON text, a binary frame and a JSON array.
    Garbage,
    /// Answers the first frame with one text message bigger than the harness accepts.
    Oversized,
    /// Answers `ping` correctly, but only after 2 s; ignores everything else.
    Slow,
    /// Drops the TCP connection right after the WebSocket handshake.
    Hangup,
    /// Answers every request at once with a success carrying another id.
    WrongIds,
    /// Answers every frame with a notification nested 200,000 arrays deep.
    DeepNesting,
    /// Answers the first frame with a 40 MB notification (under the harness's limit), then
    /// stays silent.
    Big,
    /// Answers every request with a success (`initialize` with a protocol version), but
    /// only after 20 s: long after any timeout of the run.
    Late,
    /// Answers every request with a success as above, at once, in a binary frame.
    Binary,
}

/// How late [`Mode::Late`] answers.
pub const LATE: Duration = Duration::from_secs(20);

/// A hostile server; stops accepting when dropped.
pub struct Hostile {
    pub url: String,
    task: JoinHandle<()>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn hostile(mode: Mode) -> Hostile {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds loopback");
    let url = format!("ws://{}", listener.local_addr().expect("local address"));
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(mode, stream));
        }
    });
    Hostile { url, task }
}

/// The oversized message, built once: a JSON-RPC notification padded past the limit.
fn oversized_message() -> Utf8Bytes {
    static MESSAGE: OnceLock<Utf8Bytes> = OnceLock::new();
    MESSAGE
        .get_or_init(|| {
            let size = 70 * 1024 * 1024;
            assert!(size > MAX_INBOUND_BYTES);
            let head = r#"{"jsonrpc":"2.0","method":"pad","params":{"pad":""#;
            let tail = r#""}}"#;
            let mut text = String::with_capacity(size);
            text.push_str(head);
            text.push_str(&"x".repeat(size - head.len() - tail.len()));
            text.push_str(tail);
            Utf8Bytes::from(text)
        })
        .clone()
}

/// A notification whose params hold `depth` nested arrays.
pub fn deep_message(depth: usize) -> String {
    let head = r#"{"jsonrpc":"2.0","method":"deep","params":{"channel":"ahp-root://","v":"#;
    format!("{head}{}{}}}}}", "[".repeat(depth), "]".repeat(depth))
}

/// A valid 40 MB notification.
fn big_message() -> Utf8Bytes {
    static MESSAGE: OnceLock<Utf8Bytes> = OnceLock::new();
    MESSAGE
        .get_or_init(|| {
            let size = 40 * 1000 * 1000;
            assert!(size < MAX_INBOUND_BYTES);
            let head =
                r#"{"jsonrpc":"2.0","method":"pad","params":{"channel":"ahp-root://","pad":""#;
            let tail = r#""}}"#;
            let mut text = String::with_capacity(size);
            text.push_str(head);
            text.push_str(&"x".repeat(size - head.len() - tail.len()));
            text.push_str(tail);
            Utf8Bytes::from(text)
        })
        .clone()
}

/// Answers every text frame with what `reply` makes of it (nothing for `None`).
async fn answer_each(
    ws: tokio_tungstenite::WebSocketStream<TcpStream>,
    reply: impl Fn(&str) -> Option<Message>,
) {
    let (mut sink, mut source) = ws.split();
    while let Some(Ok(message)) = source.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        if let Some(answer) = reply(text.as_str()) {
            if sink.send(answer).await.is_err() {
                return;
            }
        }
    }
}

async fn serve(mode: Mode, stream: TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    match mode {
        Mode::Silent => {
            // Keep the socket open, never read or write.
            let _ws = ws;
            std::future::pending::<()>().await;
        }
        Mode::Hangup => drop(ws),
        Mode::WrongIds => {
            answer_each(ws, |text| {
                let request = serde_json::from_str::<Value>(text).ok()?;
                let id = request.get("id")?.as_i64()?;
                let response = json!({ "jsonrpc": "2.0", "id": id + 1000, "result": null });
                Some(Message::text(response.to_string()))
            })
            .await
        }
        Mode::DeepNesting => {
            let deep = deep_message(200_000);
            answer_each(ws, |_| Some(Message::text(deep.clone()))).await
        }
        Mode::Big => {
            let (mut sink, mut source) = ws.split();
            if let Some(Ok(_)) = source.next().await {
                let _ = sink.send(Message::Text(big_message())).await;
            }
            while let Some(Ok(_)) = source.next().await {}
        }
        Mode::Garbage => {
            let (mut sink, mut source) = ws.split();
            while let Some(Ok(message)) = source.next().await {
                if !matches!(message, Message::Text(_) | Message::Binary(_)) {
                    continue;
                }
                let replies = [
                    Message::text("this is not JSON {"),
                    Message::binary(vec![0xde, 0xad, 0xbe, 0xef]),
                    Message::text("[1,2,3]"),
                    Message::text(r#"{"jsonrpc":"2.0","id":"#),
                ];
                for reply in replies {
                    if sink.send(reply).await.is_err() {
                        return;
                    }
                }
            }
        }
        Mode::Oversized => {
            let (mut sink, mut source) = ws.split();
            if let Some(Ok(_)) = source.next().await {
                let _ = sink.send(Message::Text(oversized_message())).await;
            }
            // Keep reading (and discarding) until the harness goes away.
            while let Some(Ok(_)) = source.next().await {}
        }
        Mode::Slow => {
            answer_after(ws, Duration::from_secs(2), |request| {
                (request["method"] == "ping").then(|| success(request))
            })
            .await
        }
        Mode::Late => answer_after(ws, LATE, |request| Some(success(request))).await,
        Mode::Binary => {
            answer_each(ws, |text| {
                let request = serde_json::from_str::<Value>(text).ok()?;
                request.get("id")?;
                Some(Message::binary(success(&request).to_string().into_bytes()))
            })
            .await
        }
    }
}

/// A success response to `request`: `initialize` gets the version the harness offers
/// first, everything else `null`.
fn success(request: &Value) -> Value {
    let result = if request["method"] == "initialize" {
        json!({ "protocolVersion": request["params"]["protocolVersions"][0] })
    } else {
        Value::Null
    };
    json!({ "jsonrpc": "2.0", "id": request["id"], "result": result })
}

/// Answers each request `reply` has an answer for, `delay` after it came, without
/// holding up the requests behind it.
async fn answer_after(
    ws: tokio_tungstenite::WebSocketStream<TcpStream>,
    delay: Duration,
    reply: impl Fn(&Value) -> Option<Value>,
) {
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(text) = rx.recv().await {
            if sink.send(Message::text(text)).await.is_err() {
                return;
            }
        }
    });
    while let Some(Ok(message)) = source.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(request) = serde_json::from_str::<Value>(text.as_str()) else {
            continue;
        };
        if request.get("id").is_none() {
            continue;
        }
        if let Some(response) = reply(&request) {
            let tx = tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = tx.send(response.to_string());
            });
        }
    }
    drop(tx);
    let _ = writer.await;
}
