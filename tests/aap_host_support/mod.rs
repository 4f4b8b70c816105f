//! A plain HTTP/1.1 client for the AAP server tests: one TCP connection per request on
//! 127.0.0.1, the whole body read, SSE bodies split into `(event, data)` pairs. Kept
//! independent of the harness's AAP client so the tests check the server on their own.

#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpStream;

use ahpspec::aaphost::{self, AapFaultSet, AapHostConfig, AapHostHandle};

/// A response, read whole.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Reply {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The SSE events of the body: `event:` name and `data:` JSON of each block.
    pub fn events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut name = String::new();
                let mut data = Value::Null;
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event: ") {
                        name = value.to_owned();
                    } else if let Some(value) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(value).unwrap_or(Value::Null);
                    }
                }
                (name, data)
            })
            .collect()
    }

    pub fn event_names(&self) -> Vec<String> {
        self.events().into_iter().map(|(name, _)| name).collect()
    }

    /// The stop reason, from a JSON body or the stream's `turn_stop`.
    pub fn stop_reason(&self) -> Option<String> {
        let from_json = self.json()["stopReason"].as_str().map(str::to_owned);
        from_json.or_else(|| {
            self.events()
                .into_iter()
                .find(|(name, _)| name == "turn_stop")
                .and_then(|(_, data)| data["stopReason"].as_str().map(str::to_owned))
        })
    }

    /// The text of a turn: joined deltas or texts (SSE), or the text blocks of the
    /// assistant messages (JSON).
    pub fn text(&self) -> String {
        if self.content_type.starts_with("text/event-stream") {
            return self
                .events()
                .into_iter()
                .filter_map(|(name, data)| match name.as_str() {
                    "text_delta" => data["delta"].as_str().map(str::to_owned),
                    "text" => data["text"].as_str().map(str::to_owned),
                    _ => None,
                })
                .collect();
        }
        let messages = self.json()["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .iter()
            .filter(|message| message["role"] == "assistant")
            .flat_map(|message| match &message["content"] {
                Value::String(text) => vec![text.clone()],
                Value::Array(blocks) => blocks
                    .iter()
                    .filter(|block| block["type"] == "text")
                    .filter_map(|block| block["text"].as_str().map(str::to_owned))
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }
}

/// A client of one server: its base URL's address and path, and the key it sends.
#[derive(Debug, Clone)]
pub struct Client {
    pub addr: std::net::SocketAddr,
    pub base_path: String,
    pub token: Option<String>,
}

impl Client {
    pub fn of(handle: &AapHostHandle, token: Option<&str>) -> Client {
        let base = handle.base_url();
        let path = base
            .splitn(4, '/')
            .nth(3)
            .map(|rest| format!("/{rest}"))
            .unwrap_or_default();
        Client {
            addr: handle.local_addr(),
            base_path: path,
            token: token.map(str::to_owned),
        }
    }

    /// Sends one request; `body` is `(content type, bytes)`.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, String)>,
        token: Option<&str>,
    ) -> Reply {
        let stream = TcpStream::connect(self.addr).await.expect("connect");
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base_path))
            .header("host", self.addr.to_string());
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let payload = match body {
            Some((content_type, bytes)) => {
                request = request.header("content-type", content_type);
                Bytes::from(bytes)
            }
            None => Bytes::new(),
        };
        let request = request.body(Full::new(payload)).expect("request");
        let response = sender.send_request(request).await.expect("response");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let content_type = headers
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        Reply {
            status,
            content_type,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// Sends a delta turn on session `id` and leaves once the first event arrived (the
    /// connection dropped mid-stream).
    pub async fn leave_after_first_event(&self, id: &str) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = r#"{"stream":"delta","messages":[{"role":"user","content":"hello"}]}"#;
        let mut stream = TcpStream::connect(self.addr).await.expect("connect");
        let request = format!(
            "POST {}/sessions/{id}/turns HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            self.base_path,
            self.addr,
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut seen = Vec::new();
        let mut chunk = [0u8; 64];
        while !String::from_utf8_lossy(&seen).contains("turn_start") {
            let n = stream.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the stream ended before turn_start");
            seen.extend_from_slice(&chunk[..n]);
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send("GET", path, None, self.token.as_deref()).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send("DELETE", path, None, self.token.as_deref()).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        let body = Some(("application/json", body.to_string()));
        self.send("POST", path, body, self.token.as_deref()).await
    }

    /// `POST /sessions` for the scripted agent with `extra` merged into the body (an
    /// `agent` in `extra` is merged into the agent object).
    pub async fn create_with(&self, extra: Value) -> Reply {
        let mut body = json!({"agent": {"name": aaphost::AGENT_NAME}});
        if let Value::Object(extra) = extra {
            for (key, value) in extra {
                match (key.as_str(), value) {
                    ("agent", Value::Object(agent)) => {
                        for (field, value) in agent {
                            body["agent"][field] = value;
                        }
                    }
                    (_, value) => body[key] = value,
                }
            }
        }
        self.post("/sessions", &body).await
    }

    /// A new session's ID.
    pub async fn session_with(&self, extra: Value) -> String {
        let reply = self.create_with(extra).await;
        reply.json()["sessionId"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no sessionId in {reply:?}"))
    }

    pub async fn session(&self) -> String {
        self.session_with(json!({})).await
    }

    pub async fn turn(&self, id: &str, body: Value) -> Reply {
        self.post(&format!("/sessions/{id}/turns"), &body).await
    }

    /// A turn of one user message scripting `script`, in `mode`.
    pub async fn script(&self, id: &str, mode: &str, script: Value) -> Reply {
        let text = format!("{}{script}", aaphost::SCRIPT_PREFIX);
        let body = json!({"stream": mode, "messages": [{"role": "user", "content": text}]});
        self.turn(id, body).await
    }

    pub async fn history(&self, id: &str) -> Vec<Value> {
        let reply = self.get(&format!("/sessions/{id}/history?type=full")).await;
        reply.json()["history"]["full"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// A server with `faults` on 127.0.0.1 port 0 (and `token` required when given).
pub async fn serve(faults: AapFaultSet, token: Option<&str>) -> (AapHostHandle, Client) {
    let handle = aaphost::spawn(AapHostConfig {
        faults,
        token: token.map(str::to_owned),
        ..AapHostConfig::default()
    })
    .await
    .expect("bind 127.0.0.1:0");
    let client = Client::of(&handle, token);
    (handle, client)
}
