//! One WebSocket connection: frame classification (JSON-RPC 2.0 shape checks), request
//! routing, and the writer task that drains the connection's outbound queue.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};

/// Bytes tungstenite reads from the socket at a time.
const READ_BUFFER_BYTES: usize = 8 * 1024;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

use super::commands::{RpcError, INVALID_REQUEST, METHOD_NOT_FOUND};
use super::faults::Fault;
use super::world::{ConnEntry, ConnId, Outbound, World};
use super::Shared;

const PARSE_ERROR: i64 = -32700;

/// Whether the reader keeps going after a frame.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    Continue,
    Close,
}

/// Serves one accepted TCP connection until either side closes or the host shuts down.
pub async fn serve(
    shared: Arc<Shared>,
    stream: TcpStream,
    conn: ConnId,
    mut shutdown: watch::Receiver<bool>,
) {
    // A small read buffer: tungstenite zero-fills it before every read, and AHP frames
    // are small (a big one just takes several reads).
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(shared.config.max_message_bytes))
        .max_frame_size(Some(shared.config.max_message_bytes));
    let Ok(socket) = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await else {
        return;
    };
    let (sink, mut source) = socket.split();
    let (tx, rx) = mpsc::unbounded_channel::<Outbound>();
    {
        let mut world = shared.lock();
        let leaks_state_channel = world.fault(Fault::StateChannelUnstripped);
        world.conns.insert(
            conn,
            ConnEntry {
                tx: tx.clone(),
                client_id: None,
                version: None,
                subscriptions: HashSet::new(),
                coalesced: HashSet::new(),
                shows_mcp_apps: false,
                leaks_state_channel,
            },
        );
    }
    let writer = tokio::spawn(write_outbound(sink, rx));
    let mut dead = false;
    loop {
        let frame = tokio::select! {
            frame = source.next() => frame,
            _ = shutdown.changed() => {
                let _ = tx.send(Outbound::Close(1001, "host shutting down"));
                break;
            }
        };
        let next = match frame {
            Some(Ok(Message::Text(text))) if !dead => {
                let (next, now_dead) = handle_text(&shared, conn, text.as_str());
                dead = now_dead;
                next
            }
            Some(Ok(Message::Binary(_))) if !dead => {
                shared.lock().wedge_sibling_connections(conn);
                reply_error(&shared, conn, Value::Null, RpcError::new(
                    INVALID_REQUEST,
                    "binary frames are not used by AHP; send one JSON-RPC object per text frame",
                ));
                Next::Continue
            }
            Some(Ok(Message::Close(_))) | None => break,
            Some(Ok(_)) => Next::Continue,
            Some(Err(WsError::Capacity(_))) => {
                let _ = tx.send(Outbound::Close(1009, "message too big"));
                break;
            }
            Some(Err(_)) => break,
        };
        if next == Next::Close {
            break;
        }
    }
    let client_id = {
        let mut world = shared.lock();
        let client_id = world.conns.remove(&conn).and_then(|entry| entry.client_id);
        world.release_watches();
        world.auth_grants.forget(conn);
        client_id
    };
    drop(tx);
    // Give the writer a moment to flush queued frames and the close frame.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    if let Some(client_id) = client_id {
        forget_client_later(&shared, client_id);
    }
}

/// The writer task: sends the connection's queued frames until a close or a send fails.
async fn write_outbound(
    mut sink: SplitSink<WebSocketStream<TcpStream>, Message>,
    mut rx: mpsc::UnboundedReceiver<Outbound>,
) {
    while let Some(out) = rx.recv().await {
        match out {
            Outbound::Text(text) => {
                if sink.send(Message::Text(text)).await.is_err() {
                    break;
                }
            }
            Outbound::Binary(bytes) => {
                if sink.send(Message::binary(bytes)).await.is_err() {
                    break;
                }
            }
            Outbound::Close(code, reason) => {
                let frame = CloseFrame {
                    code: CloseCode::from(code),
                    reason: reason.into(),
                };
                let _ = sink.send(Message::Close(Some(frame))).await;
                break;
            }
        }
    }
    let _ = sink.close().await;
}

/// After a grace period without a reconnect, removes the client from every session's
/// `activeClients`.
fn forget_client_later(shared: &Arc<Shared>, client_id: String) {
    let shared = Arc::clone(shared);
    let grace = shared.config.client_grace;
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        let mut world = shared.lock();
        let back = world
            .conns
            .values()
            .any(|c| c.client_id.as_deref() == Some(client_id.as_str()));
        let forget = !back || world.fault(Fault::ReturnedClientForgotten);
        if forget && !world.fault(Fault::NeverForgetsClient) {
            world.drop_active_client_outside(&client_id, &HashSet::new());
        }
    });
}

fn reply_error(shared: &Shared, conn: ConnId, id: Value, error: RpcError) {
    let world = shared.lock();
    world.send_to(conn, &error_response(id, &error));
}

fn result_response(id: Value, result: &Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn error_response(id: Value, error: &RpcError) -> Value {
    let mut body = json!({ "code": error.code, "message": error.message });
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": body })
}

/// Handles one text frame. Returns whether to keep reading, and whether the connection is
/// now "dead" (the `dies-on-malformed` fault).
fn handle_text(shared: &Shared, conn: ConnId, text: &str) -> (Next, bool) {
    let mut world = shared.lock();
    if world.wedge_on_deep_frame(conn, text) {
        return (Next::Continue, false);
    }
    let message: Value = match serde_json::from_str(text) {
        Ok(message) => message,
        Err(error) => {
            if world.fault(Fault::DiesOnMalformed) {
                return (Next::Continue, true);
            }
            let error = RpcError::new(PARSE_ERROR, format!("parse error: {error}"));
            world.send_to(conn, &error_response(Value::Null, &error));
            return (Next::Continue, false);
        }
    };
    let Some(object) = message.as_object() else {
        if message.is_array() && world.fault(Fault::ArrayUnanswered) {
            return (Next::Continue, false);
        }
        let error = RpcError::new(INVALID_REQUEST, "a message must be one JSON-RPC object");
        world.send_to(conn, &error_response(Value::Null, &error));
        if world.fault(Fault::BatchDispatchApplied) {
            apply_batch_dispatches(&mut world, conn, &message);
        }
        return (Next::Continue, false);
    };
    let id = object.get("id").cloned();
    let id_ok = world.fault(Fault::ObjectIdAnswered)
        || id
            .as_ref()
            .is_none_or(|id| id.is_number() || id.is_string() || id.is_null());
    let version_ok = object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        || (world.fault(Fault::AcceptsMissingJsonrpc) && !object.contains_key("jsonrpc"));
    let method = object.get("method");
    let answer_id = if id_ok {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    if !version_ok || !id_ok || method.is_some_and(|m| !m.is_string()) {
        let error = RpcError::new(
            INVALID_REQUEST,
            "not a JSON-RPC 2.0 request or notification",
        );
        world.send_to(conn, &error_response(answer_id, &error));
        return (Next::Continue, false);
    }
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    match (method.and_then(Value::as_str), id) {
        (Some(method), Some(id)) => {
            let mcp_channel = super::mcp_apps::requested_channel(&message, &params);
            request(&mut world, conn, (id, mcp_channel), method, &params)
        }
        (Some(method), None) => {
            notification(&mut world, conn, method, &params);
            (Next::Continue, false)
        }
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            // A response to a host→client request; this host sends none, so nothing waits.
            (Next::Continue, false)
        }
        (None, _) => {
            if world.fault(Fault::NotRequestAccepted) {
                world.send_to(
                    conn,
                    &json!({ "jsonrpc": "2.0", "id": answer_id, "result": null }),
                );
            } else {
                let error = RpcError::new(INVALID_REQUEST, "a request needs a method");
                world.send_to(conn, &error_response(answer_id, &error));
            }
            (Next::Continue, false)
        }
    }
}

/// Answers one request (`id`, and the `mcp://` channel it names, if any).
fn request(
    world: &mut World,
    conn: ConnId,
    (id, mcp_channel): (Value, Option<&str>),
    method: &str,
    params: &Value,
) -> (Next, bool) {
    if id.as_i64().is_some_and(|n| n < 0) && world.fault(Fault::NegativeIdUnanswered) {
        return (Next::Continue, false);
    }
    if world.wedged_by_sibling(conn) {
        return (Next::Continue, false);
    }
    if let Some(channel) = mcp_channel {
        // MCP verbatim on its side-channel: none of the AHP methods below.
        let response = match world.mcp_request(channel, method, params) {
            Ok(result) => result_response(id, &result),
            Err(error) => error_response(id, &error),
        };
        world.send_to(conn, &response);
        return (Next::Continue, false);
    }
    if method == "ping" {
        let initialized = world
            .conns
            .get(&conn)
            .is_some_and(|c| c.client_id.is_some());
        if world.fault(Fault::NoPing) {
            let error = RpcError::new(METHOD_NOT_FOUND, "unknown method ping");
            world.send_to(conn, &error_response(id, &error));
            return (Next::Continue, false);
        }
        if !initialized && world.fault(Fault::PingNeedsInit) {
            let error = RpcError::new(INVALID_REQUEST, "initialize first");
            world.send_to(conn, &error_response(id, &error));
            return (Next::Continue, false);
        }
        let mut response = json!({ "jsonrpc": "2.0", "id": id, "result": null });
        if world.fault(Fault::NoJsonrpcMember) {
            if let Some(object) = response.as_object_mut() {
                object.remove("jsonrpc");
            }
        }
        world.send_to(conn, &response);
        if world.fault(Fault::DuplicateResponse) {
            world.send_to(conn, &response);
        }
        return (Next::Continue, false);
    }
    let reply = world.handle_request(conn, method, params);
    let later_page = method == "listSessions" && params.get("cursor").is_some();
    if later_page && reply.result.is_ok() && world.fault(Fault::UnansweredRequest) {
        return (Next::Continue, false);
    }
    let response = match &reply.result {
        Ok(result) => result_response(id, result),
        Err(error) => {
            let mut response = error_response(id, error);
            if error.code == -32601 && world.fault(Fault::ResultAndError) {
                response["result"] = Value::Null;
            }
            response
        }
    };
    world.send_to(conn, &response);
    if let Some(after) = reply.after {
        after(world);
    }
    if reply.close_after {
        if let Some(entry) = world.conns.get(&conn) {
            let _ = entry
                .tx
                .send(Outbound::Close(1000, "unsupported protocol version"));
        }
        return (Next::Close, false);
    }
    (Next::Continue, false)
}

/// Under `batch-dispatch-applied`: the dispatchAction notifications of a batch the host
/// refused, applied all the same.
fn apply_batch_dispatches(world: &mut World, conn: ConnId, batch: &Value) {
    for message in batch.as_array().into_iter().flatten() {
        if message.get("method").and_then(Value::as_str) == Some("dispatchAction") {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            notification(world, conn, "dispatchAction", &params);
        }
    }
}

fn notification(world: &mut World, conn: ConnId, method: &str, params: &Value) {
    match method {
        "dispatchAction" => world.client_dispatch(conn, params),
        "unsubscribe" => {
            world.unsubscribe(conn, params);
            if world.fault(Fault::AnswersNotifications) {
                world.send_to(
                    conn,
                    &json!({ "jsonrpc": "2.0", "id": null, "result": null }),
                );
            }
            if world.fault(Fault::ErrorsOnNotifications) {
                let error = RpcError::new(INVALID_REQUEST, "unsubscribe is not a request");
                world.send_to(conn, &error_response(Value::Null, &error));
            }
        }
        // Unknown notifications are ignored, as JSON-RPC requires.
        _ => {}
    }
}
