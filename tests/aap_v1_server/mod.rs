//! A small AAP version 1 server written from the `v1` tag's pages alone (endpoints.md,
//! schema.md, response.md, history.md) — independent of src/aaphost, sharing none of its
//! code. Plain HTTP/1.1 over tokio, one request per connection. One agent, `echo-v1`,
//! answers a user message with `echo: <its text>` in any of the three modes, keeps full
//! history, and accepts application tools. `Break` variants each get one thing wrong.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One deliberate mistake of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// A stream answering `PUT /session` starts with `turn_start` (no `session_start`).
    NoSessionStart,
    /// `GET /sessions` lists session objects (version 2's shape), not ids.
    ListObjects,
    /// `?history=compacted` is served although only `full` is declared.
    ServesCompacted,
    /// Full history leaves out the agent's replies.
    HistoryWithoutReplies,
}

#[derive(Default)]
struct Session {
    agent: Value,
    tools: Option<Value>,
    history: Vec<Value>,
}

#[derive(Default)]
struct State {
    next: u64,
    sessions: BTreeMap<String, Session>,
}

struct Server {
    broken: Option<Break>,
    state: Mutex<State>,
}

/// Starts the server on 127.0.0.1; returns its base URL. It lives as long as the runtime.
pub async fn start(broken: Option<Break>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let server = Arc::new(Server {
        broken,
        state: Mutex::new(State::default()),
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let server = Arc::clone(&server);
            tokio::spawn(async move { server.connection(stream).await });
        }
    });
    url
}

/// What a handler answers.
enum Reply {
    Json(u16, Value),
    Empty(u16),
    Events(Vec<(&'static str, Value)>),
}

fn error(status: u16, message: &str) -> Reply {
    Reply::Json(status, json!({ "error": message }))
}

impl Server {
    async fn connection(&self, mut stream: TcpStream) {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
        let mut lines = head.lines();
        let mut request_line = lines.next().unwrap_or_default().split(' ');
        let method = request_line.next().unwrap_or_default().to_owned();
        let target = request_line.next().unwrap_or_default().to_owned();
        let mut length = 0;
        let mut content_type = String::new();
        for line in lines {
            if let Some((name, value)) = line.split_once(':') {
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap_or(0),
                    "content-type" => content_type = value.trim().to_ascii_lowercase(),
                    _ => {}
                }
            }
        }
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body = &buffer[head_end..buffer.len().min(head_end + length)];
        let reply = self.handle(&method, &target, &content_type, body);
        let _ = stream.write_all(&render(reply)).await;
        let _ = stream.shutdown().await;
    }

    fn handle(&self, method: &str, target: &str, content_type: &str, body: &[u8]) -> Reply {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let json_body = || -> Result<Value, Reply> {
            if !content_type.starts_with("application/json") {
                return Err(error(415, "send application/json"));
            }
            serde_json::from_slice::<Value>(body)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| error(400, "the body is no JSON object"))
        };
        let answer = match (method, parts.as_slice()) {
            ("GET", ["meta"]) => Ok(Reply::Json(200, meta())),
            ("GET", ["sessions"]) => Ok(self.list(query)),
            ("PUT", ["session"]) => json_body().map(|b| self.create(&b)),
            ("GET", ["session", id]) => Ok(self.get(id, query)),
            ("POST", ["session", id]) => json_body().map(|b| self.turn(id, &b)),
            ("DELETE", ["session", id]) => Ok(self.delete(id)),
            _ => Ok(error(404, "no such endpoint")),
        };
        answer.unwrap_or_else(|refusal| refusal)
    }

    fn list(&self, query: &str) -> Reply {
        let state = self.state.lock().expect("state");
        let after = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("after="))
            .unwrap_or("");
        let ids: Vec<&String> = state
            .sessions
            .keys()
            .filter(|id| after.is_empty() || id.as_str() > after)
            .collect();
        let page: Vec<&String> = ids.iter().take(2).copied().collect();
        let items: Vec<Value> = page
            .iter()
            .map(|id| match self.broken {
                Some(Break::ListObjects) => session_object(id, &state.sessions[*id]),
                _ => json!(id),
            })
            .collect();
        let mut body = json!({ "sessions": items });
        if ids.len() > 2 {
            body["next"] = json!(page[1]);
        }
        Reply::Json(200, body)
    }

    fn create(&self, body: &Value) -> Reply {
        let Some(agent) = body.get("agent").filter(|a| a.is_object()) else {
            return error(400, "agent is required");
        };
        if agent.get("name").and_then(Value::as_str) != Some("echo-v1") {
            return error(400, "unknown agent");
        }
        let Some(messages) = body.get("messages").and_then(Value::as_array) else {
            return error(400, "messages is required");
        };
        if messages.iter().any(|m| !history_message(m)) {
            return error(400, "a message is no history message");
        }
        let Some(last) = messages.last().filter(|m| m["role"] == "user") else {
            return error(400, "the last message must be a user message");
        };
        let Some(mode) = mode_of(body) else {
            return error(400, "unknown stream mode");
        };
        let mut state = self.state.lock().expect("state");
        state.next += 1;
        let id = format!("v1-{:04}", state.next);
        let mut stored = json!({ "name": "echo-v1" });
        if let Some(tools) = agent.get("tools") {
            stored["tools"] = tools.clone();
        }
        let reply = reply_to(last);
        let session = Session {
            agent: stored,
            tools: body.get("tools").cloned(),
            history: messages.clone(),
        };
        state.sessions.insert(id.clone(), session);
        self.remember(&mut state, &id, &reply);
        drop(state);
        respond(mode, &reply, Some(&id), self.broken)
    }

    fn get(&self, id: &str, query: &str) -> Reply {
        let state = self.state.lock().expect("state");
        let Some(session) = state.sessions.get(id) else {
            return error(404, "no such session");
        };
        let mut body = session_object(id, session);
        match query.split('&').find_map(|p| p.strip_prefix("history=")) {
            None => {}
            Some("full") => body["history"] = json!({ "full": session.history }),
            Some("compacted") if self.broken == Some(Break::ServesCompacted) => {
                body["history"] = json!({ "compacted": session.history });
            }
            // Compacted history is not declared: none is returned.
            Some("compacted") => {}
            Some(_) => return error(400, "history is compacted or full"),
        }
        Reply::Json(200, body)
    }

    fn turn(&self, id: &str, body: &Value) -> Reply {
        let Some(mode) = mode_of(body) else {
            return error(400, "unknown stream mode");
        };
        let Some(messages) = body.get("messages").and_then(Value::as_array) else {
            return error(400, "messages is required");
        };
        let allowed = |m: &Value| matches!(m["role"].as_str(), Some("user" | "tool"));
        if messages.is_empty() || !messages.iter().all(|m| allowed(m) && history_message(m)) {
            return error(400, "a turn sends user or tool messages");
        }
        let mut state = self.state.lock().expect("state");
        let Some(session) = state.sessions.get_mut(id) else {
            return error(404, "no such session");
        };
        if let Some(tools) = body.get("tools") {
            session.tools = Some(tools.clone());
        }
        if let Some(tools) = body.pointer("/agent/tools") {
            session.agent["tools"] = tools.clone();
        }
        session.history.extend(messages.iter().cloned());
        let reply = messages.last().map(reply_to).unwrap_or_default();
        self.remember(&mut state, id, &reply);
        drop(state);
        respond(mode, &reply, None, self.broken)
    }

    fn remember(&self, state: &mut State, id: &str, reply: &str) {
        if self.broken == Some(Break::HistoryWithoutReplies) {
            return;
        }
        if let Some(session) = state.sessions.get_mut(id) {
            session
                .history
                .push(json!({ "role": "assistant", "content": reply }));
        }
    }

    fn delete(&self, id: &str) -> Reply {
        match self.state.lock().expect("state").sessions.remove(id) {
            Some(_) => Reply::Empty(204),
            None => error(404, "no such session"),
        }
    }
}

fn meta() -> Value {
    json!({
        "version": 1,
        "agents": [{
            "name": "echo-v1",
            "version": "1.0.0",
            "description": "Echoes the user's text.",
            "capabilities": {
                "history": { "full": {} },
                "stream": { "delta": {}, "message": {}, "none": {} },
                "application": { "tools": {} }
            }
        }]
    })
}

fn session_object(id: &str, session: &Session) -> Value {
    let mut body = json!({ "sessionId": id, "agent": session.agent });
    if let Some(tools) = &session.tools {
        body["tools"] = tools.clone();
    }
    body
}

fn mode_of(body: &Value) -> Option<&str> {
    match body.get("stream") {
        None => Some("none"),
        Some(mode) => mode
            .as_str()
            .filter(|m| matches!(*m, "none" | "delta" | "message")),
    }
}

fn history_message(message: &Value) -> bool {
    let content = message.get("content");
    let content_ok = content.is_some_and(|c| c.is_string() || c.is_array());
    match message.get("role").and_then(Value::as_str) {
        Some("system" | "user" | "assistant") => content_ok,
        Some("tool") => content_ok && message.get("toolCallId").is_some_and(Value::is_string),
        _ => false,
    }
}

fn reply_to(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) if message["role"] == "user" => format!("echo: {text}"),
        _ => "ok".to_owned(),
    }
}

/// A turn's answer in its mode; `created`: the id a `PUT /session` answer carries.
fn respond(mode: &str, reply: &str, created: Option<&str>, broken: Option<Break>) -> Reply {
    if mode == "none" {
        let mut body = json!({
            "stopReason": "end_turn",
            "messages": [{ "role": "assistant", "content": reply }]
        });
        if let Some(id) = created {
            body["sessionId"] = json!(id);
        }
        return Reply::Json(200, body);
    }
    let mut events = Vec::new();
    if let Some(id) = created.filter(|_| broken != Some(Break::NoSessionStart)) {
        events.push(("session_start", json!({ "sessionId": id })));
    }
    events.push(("turn_start", json!({})));
    if mode == "delta" {
        let (head, tail) = reply.split_at(reply.len() / 2);
        for piece in [head, tail].into_iter().filter(|p| !p.is_empty()) {
            events.push(("text_delta", json!({ "delta": piece })));
        }
    } else {
        events.push(("text", json!({ "text": reply })));
    }
    events.push(("turn_stop", json!({ "stopReason": "end_turn" })));
    Reply::Events(events)
}

fn render(reply: Reply) -> Vec<u8> {
    let reason = |status: u16| match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Unsupported Media Type",
    };
    match reply {
        Reply::Json(status, body) => {
            let text = body.to_string();
            format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                reason(status),
                text.len()
            )
            .into_bytes()
        }
        Reply::Empty(status) => format!(
            "HTTP/1.1 {status} {}\r\nconnection: close\r\n\r\n",
            reason(status)
        )
        .into_bytes(),
        Reply::Events(events) => {
            let mut text = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n".to_owned();
            for (name, data) in events {
                text.push_str(&format!("event: {name}\ndata: {data}\n\n"));
            }
            text.into_bytes()
        }
    }
}
