//! Quirky hosts: the built-in host behind a small proxy on 127.0.0.1 that changes one thing
//! about it ([`Quirk`]). Some quirks are conforming (answers out of order, a parser without
//! a nesting limit), and a harness must pass them; the others break the host in a way no
//! fault of the built-in host can (the whole server dies on a frame), or break one rule
//! everywhere (initialize refused, no echo ever).
#![allow(dead_code)]

use std::time::Duration;

use ahpspec::host::{HostConfig, HostHandle};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// What the proxy changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quirk {
    /// Conforming: holds the host's responses and releases them newest first when no other
    /// response follows within [`HOLD`] (JSON-RPC lets a server answer in any order). A
    /// notification first releases the responses held before it, so the order of each
    /// response against the notifications around it stays the host's.
    ReverseAnswers,
    /// Conforming: reads requests nested deeper than serde_json goes (as a parser without a
    /// nesting limit does) and answers them `-32602` by their id.
    ReadsDeepIds,
    /// Deviating, the way an independent host did: names every session in a scheme of its
    /// own (`pi:/ID` for the client's `ahp-session:/ID`) in all it sends, and takes that
    /// spelling back in requests. SUB-001, ROOT-005 and ENV-004 (the URI the client chose)
    /// are broken; nothing else is.
    OwnSessionScheme,
    /// The whole server dies on the first client frame containing this text: every
    /// connection dropped without a close, and new connections refused.
    CrashesOn(&'static str),
    /// Answers every `initialize` with an error.
    RefusesInitialize,
    /// Never echoes a client's dispatch: action envelopes with an origin are dropped (the
    /// host still applies the actions).
    NeverEchoes,
}

/// How long [`Quirk::ReverseAnswers`] holds a response for a later one to overtake it.
pub const HOLD: Duration = Duration::from_millis(15);

/// A running quirky host; stops when dropped.
pub struct Quirky {
    pub url: String,
    /// The `file:` URI of the directory the host behind it serves.
    pub workspace: String,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
    host: Option<HostHandle>,
}

impl Quirky {
    /// Whether the server has died ([`Quirk::CrashesOn`]).
    pub fn crashed(&self) -> bool {
        *self.stop.borrow()
    }

    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(host) = self.host.take() {
            host.shutdown().await;
        }
    }
}

impl Drop for Quirky {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.accept.abort();
    }
}

/// The built-in host (correct) behind a proxy with `quirk`.
pub async fn quirky(quirk: Quirk) -> Quirky {
    quirky_on(quirk, HostConfig::default()).await
}

/// A quirky host in front of a built-in host with `config`.
pub async fn quirky_on(quirk: Quirk, config: HostConfig) -> Quirky {
    let host = ahpspec::host::spawn(config)
        .await
        .expect("the built-in host starts");
    let upstream = host.url().to_owned();
    let workspace = host.workspace_uri();
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds loopback");
    let url = format!("ws://{}", listener.local_addr().expect("local address"));
    let (stop, stopped) = watch::channel(false);
    let crash = stop.clone();
    let accept = tokio::spawn(async move {
        let mut stopped_accepting = stopped.clone();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let proxied = proxy(quirk, stream, upstream.clone(), crash.clone(), stopped.clone());
                    tokio::spawn(proxied);
                }
                // Dropping the listener refuses every later connection.
                _ = stopped_accepting.changed() => return,
            }
        }
    });
    Quirky {
        url,
        workspace,
        stop,
        accept,
        host: Some(host),
    }
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(64 << 20))
        .max_frame_size(Some(64 << 20))
}

/// One client connection, proxied to its own connection to the host until either ends or
/// the server dies.
async fn proxy(
    quirk: Quirk,
    stream: TcpStream,
    upstream: String,
    crash: watch::Sender<bool>,
    mut stopped: watch::Receiver<bool>,
) {
    let Ok(client) = tokio_tungstenite::accept_async_with_config(stream, Some(ws_config())).await
    else {
        return;
    };
    let Ok((host, _)) =
        tokio_tungstenite::connect_async_with_config(upstream, Some(ws_config()), true).await
    else {
        return;
    };
    let (mut client_sink, mut client_source) = client.split();
    let (mut host_sink, mut host_source) = host.split();
    // Everything for the client goes through one queue: the proxy answers some frames itself.
    let (to_client, mut client_queue) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(async move {
        while let Some(message) = client_queue.recv().await {
            if client_sink.send(message).await.is_err() {
                return;
            }
        }
    });
    let answers = to_client.clone();
    let upward = async move {
        while let Some(Ok(message)) = client_source.next().await {
            let message = match (&message, quirk) {
                (Message::Text(text), Quirk::OwnSessionScheme) => {
                    Message::text(text.as_str().replace(r#""pi:/"#, r#""ahp-session:/"#))
                }
                _ => message,
            };
            if let Message::Text(text) = &message {
                match from_client(quirk, text.as_str()) {
                    FromClient::Forward => {}
                    FromClient::Answer(answer) => {
                        let _ = answers.send(Message::text(answer.to_string()));
                        continue;
                    }
                    FromClient::Crash => {
                        let _ = crash.send(true);
                        return;
                    }
                }
            }
            let close = matches!(message, Message::Close(_));
            if host_sink.send(message).await.is_err() || close {
                return;
            }
        }
    };
    let downward = async move {
        let mut held: Vec<Message> = Vec::new();
        loop {
            let next = if held.is_empty() {
                host_source.next().await
            } else {
                match tokio::time::timeout(HOLD, host_source.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        release(&mut held, &to_client);
                        continue;
                    }
                }
            };
            let Some(Ok(message)) = next else {
                release(&mut held, &to_client);
                return;
            };
            let text = match &message {
                Message::Text(text) => serde_json::from_str::<Value>(text.as_str()).ok(),
                _ => None,
            };
            if quirk == Quirk::NeverEchoes && text.as_ref().is_some_and(is_echo) {
                continue;
            }
            let message = match (&message, quirk) {
                (Message::Text(text), Quirk::OwnSessionScheme) => {
                    Message::text(text.as_str().replace(r#""ahp-session:/"#, r#""pi:/"#))
                }
                _ => message,
            };
            if quirk == Quirk::ReverseAnswers && text.as_ref().is_some_and(is_response) {
                held.push(message);
                continue;
            }
            release(&mut held, &to_client);
            if to_client.send(message).is_err() {
                return;
            }
        }
    };
    tokio::select! {
        _ = upward => {}
        _ = downward => {}
        _ = stopped.wait_for(|dead| *dead) => {}
    }
    let died = *stopped.borrow();
    // Both queues' senders are gone: the writer sends what is queued (a host's last words
    // before its close) and ends; a server that died says nothing more.
    if died {
        writer.abort();
    } else {
        let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    }
}

/// Sends the held responses, newest first.
fn release(held: &mut Vec<Message>, to_client: &mpsc::UnboundedSender<Message>) {
    while let Some(message) = held.pop() {
        let _ = to_client.send(message);
    }
}

fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
        && (message.get("result").is_some() || message.get("error").is_some())
}

fn is_echo(message: &Value) -> bool {
    message["method"] == "action" && !message["params"]["origin"].is_null()
}

/// What the proxy does with a text frame from the client.
enum FromClient {
    Forward,
    /// Answer it in the host's stead.
    Answer(Value),
    Crash,
}

fn from_client(quirk: Quirk, text: &str) -> FromClient {
    match quirk {
        Quirk::CrashesOn(needle) if text.contains(needle) => FromClient::Crash,
        Quirk::RefusesInitialize => {
            let request = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
            if request["method"] == "initialize" {
                FromClient::Answer(json!({ "jsonrpc": "2.0", "id": request["id"],
                    "error": { "code": -32603, "message": "this host refuses every client" } }))
            } else {
                FromClient::Forward
            }
        }
        Quirk::ReadsDeepIds => match serde_json::from_str::<Value>(text) {
            Err(error) if error.to_string().contains("recursion limit") => {
                match deep_request_id(text) {
                    Some(id) => FromClient::Answer(json!({ "jsonrpc": "2.0", "id": id,
                        "error": { "code": -32602, "message": "params nested too deep" } })),
                    None => FromClient::Forward,
                }
            }
            _ => FromClient::Forward,
        },
        _ => FromClient::Forward,
    }
}

/// The id of a request whose `id` member comes before its deep one (as the fuzzer writes
/// them): the members before the first nested value, parsed.
fn deep_request_id(text: &str) -> Option<Value> {
    let first_nested = 1 + text.get(1..)?.find(['[', '{'])?;
    let head = &text[..first_nested];
    let members = &head[..head.rfind(',')?];
    let object: Value = serde_json::from_str(&format!("{members}}}")).ok()?;
    object.get("id").cloned()
}
