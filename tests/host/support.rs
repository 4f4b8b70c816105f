//! A small AHP client for the host's integration tests, on the harness's own transport.

use std::time::Duration;

use ahpspec::host::{self, Fault, HostConfig, HostHandle};
use ahpspec::transport::{Connection, Incoming};
use serde_json::{json, Value};

pub const T: Duration = Duration::from_secs(5);

pub async fn host(fault: Option<Fault>) -> HostHandle {
    host_with(HostConfig::with_fault(fault)).await
}

pub async fn host_with(config: HostConfig) -> HostHandle {
    host::spawn(config).await.expect("host starts on loopback")
}

/// Asserts the host produced no action it could not apply itself, then shuts it down.
pub async fn finish(host: HostHandle) {
    let errors = host.internal_errors();
    assert!(errors.is_empty(), "host internal errors: {errors:#?}");
    host.shutdown().await;
}

pub fn user_message(text: &str) -> Value {
    json!({ "text": text, "origin": { "kind": "user" } })
}

pub fn script(steps: Value) -> String {
    format!("ahpspec-script:{}", json!({ "steps": steps }))
}

pub fn now() -> String {
    format!("{:.3}", jiff::Timestamp::now())
}

pub struct Client {
    pub conn: Connection,
    pub client_id: String,
    seq: i64,
}

impl Client {
    pub async fn connect(url: &str, client_id: &str) -> Client {
        let conn = Connection::connect(url, T).await.expect("connects");
        Client {
            conn,
            client_id: client_id.to_owned(),
            seq: 0,
        }
    }

    /// Connects and initialises offering 1.0.0, subscribed to the root channel.
    pub async fn init(url: &str, client_id: &str) -> Client {
        let mut client = Client::connect(url, client_id).await;
        let result = client
            .ok(
                "initialize",
                json!({ "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": client_id,
                        "initialSubscriptions": ["ahp-root://"] }),
            )
            .await;
        assert_eq!(result["protocolVersion"], "1.0.0");
        client
    }

    /// Sends a request and returns the whole response object.
    pub async fn req(&mut self, method: &str, params: Value) -> Value {
        self.conn
            .request(method, params, T)
            .await
            .unwrap_or_else(|e| panic!("{method}: no response: {e}"))
    }

    /// Sends a request that must succeed and returns its result.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.req(method, params).await;
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// Sends a request that must fail and returns the error code.
    pub async fn err(&mut self, method: &str, params: Value) -> i64 {
        let response = self.req(method, params).await;
        response["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{method} should fail: {response}"))
    }

    pub async fn subscribe(&mut self, uri: &str) -> Value {
        let result = self
            .ok(
                "subscribe",
                json!({ "channel": uri, "delivery": { "maxLatencyMs": 0 } }),
            )
            .await;
        result["snapshot"].clone()
    }

    pub async fn dispatch(&mut self, channel: &str, action: Value) -> i64 {
        self.seq += 1;
        let seq = self.seq;
        self.conn
            .send_notification(
                "dispatchAction",
                json!({ "channel": channel, "clientSeq": seq, "action": action }),
            )
            .await
            .expect("dispatch sent");
        seq
    }

    /// Dispatches and waits for the echo; returns the echoed envelope.
    pub async fn dispatch_echo(&mut self, channel: &str, action: Value) -> Value {
        let seq = self.dispatch(channel, action).await;
        self.echo(seq).await
    }

    pub async fn echo(&mut self, client_seq: i64) -> Value {
        let client_id = self.client_id.clone();
        self.message(|m| {
            m["method"] == "action"
                && m["params"]["origin"]["clientId"] == client_id.as_str()
                && m["params"]["origin"]["clientSeq"] == client_seq
        })
        .await["params"]
            .clone()
    }

    /// Waits for an action envelope of `action_type` on `channel`.
    pub async fn action(&mut self, channel: &str, action_type: &str) -> Value {
        self.message(|m| {
            m["method"] == "action"
                && m["params"]["channel"] == channel
                && m["params"]["action"]["type"] == action_type
        })
        .await["params"]
            .clone()
    }

    /// Waits for a notification with `method`; returns its params.
    pub async fn notification(&mut self, method: &str) -> Value {
        self.message(|m| m["method"] == method).await["params"].clone()
    }

    pub async fn message(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Value {
        match self
            .conn
            .wait_for(T, |item| matches!(item, Incoming::Message(m) if pred(m)))
            .await
        {
            Ok(Incoming::Message(message)) => message,
            other => panic!(
                "expected message not received: {other:?}\nbacklog: {:#?}",
                self.conn.backlog().collect::<Vec<_>>()
            ),
        }
    }

    /// Whether a matching message arrives within `quiet`.
    pub async fn sees_within(
        &mut self,
        quiet: Duration,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> bool {
        self.conn
            .wait_for(
                quiet,
                |item| matches!(item, Incoming::Message(m) if pred(m)),
            )
            .await
            .is_ok()
    }

    /// Creates a session, subscribes to it and its default chat, and waits until it is
    /// ready. Returns (session URI, chat URI).
    pub async fn ready_session(&mut self, name: &str) -> (String, String) {
        let session = format!("ahp-session:/{name}");
        self.ok("createSession", json!({ "channel": session }))
            .await;
        let snapshot = self.subscribe(&session).await;
        if snapshot["state"]["lifecycle"] != "ready" {
            self.action(&session, "session/ready").await;
        }
        let chat = snapshot["state"]["defaultChat"]
            .as_str()
            .expect("session names its default chat")
            .to_owned();
        self.subscribe(&chat).await;
        (session, chat)
    }

    /// Starts a turn with `text` and returns its turn id.
    pub async fn start_turn(&mut self, chat: &str, turn_id: &str, text: &str) -> Value {
        self.dispatch_echo(
            chat,
            json!({ "type": "chat/turnStarted", "turnId": turn_id, "startedAt": now(),
                    "message": user_message(text) }),
        )
        .await
    }

    /// Current state of a channel, through a fresh subscription on this connection.
    pub async fn state(&mut self, uri: &str) -> Value {
        self.ok("subscribe", json!({ "channel": uri })).await["snapshot"]["state"].clone()
    }
}
