//! Protocol-level probes the fuzzer mixes into its sequences: requests and connections
//! around the chat (unknown subscriptions, dispatches to missing sessions, side sessions,
//! duplicate and unproviderable creations, handshakes, unsubscribing), each checked
//! against the rule it exercises while the rest of the sequence runs on.

use serde_json::{json, Value};

use super::{ping_if, Failure, Run};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{Conn, HandshakeError, Offer};
use crate::fuzz::ops::Probe;
use crate::transport::{Incoming, TransportError};

/// What a probe found wrong: the rule, what a correct host does, what this one did.
type Finding = (Rule, String, String);

fn finding(rule: Rule, expected: &str, actual: impl Into<String>) -> Option<Finding> {
    Some((rule, expected.to_owned(), actual.into()))
}

fn shown(answer: &Result<Value, TransportError>) -> String {
    match answer {
        Ok(message) => clip(&message.to_string()),
        Err(error) => error.to_string(),
    }
}

fn error_code(answer: &Result<Value, TransportError>) -> Option<i64> {
    answer
        .as_ref()
        .ok()
        .and_then(|m| m.pointer("/error/code"))
        .and_then(Value::as_i64)
}

impl Run<'_> {
    /// Runs `probe` on client `client`; a failure names the rule it broke.
    pub(super) async fn probe(
        &mut self,
        index: usize,
        client: usize,
        probe: Probe,
    ) -> Option<Failure> {
        let found = match probe {
            Probe::SubscribeUnknown => self.subscribe_unknown(index, client).await,
            Probe::DispatchToMissing => self.dispatch_to_missing(index, client).await,
            Probe::SideSession => self.side_session(index, client).await,
            Probe::DuplicateSession => self.duplicate_session(client).await,
            Probe::UnknownProvider => self.unknown_provider(index, client).await,
            Probe::PingBeforeInitialize => self.ping_before_initialize().await,
            Probe::MixedVersions => self.mixed_versions().await,
            Probe::UnsupportedVersion => self.unsupported_version().await,
            Probe::Unsubscribe => self.unsubscribe(index, client).await,
            Probe::FetchTurns => self.fetch_turns().await,
            Probe::Terminal => self.terminal(index, client).await,
            Probe::SessionConfig => self.session_config(client).await,
            Probe::Telemetry => self.telemetry().await,
        };
        if let Some((rule, expected, actual)) = found {
            return Some(Failure {
                rule,
                expected,
                actual,
                op_index: Some(index),
            });
        }
        self.settle().await;
        self.checks(Some(index))
    }

    /// A URI in this run's namespace that names nothing.
    pub(super) fn missing(&self, what: &str, index: usize) -> String {
        format!("ahp-session:/{}-{what}-{index}", self.token)
    }

    async fn subscribe_unknown(&mut self, index: usize, client: usize) -> Option<Finding> {
        let channel = self.missing("nope", index);
        let timeout = self.cfg.timeout;
        let answer = self.conns[client].subscribe(&channel, timeout).await;
        match &answer {
            Ok(message) if message.get("error").is_some() => None,
            _ => finding(
                Rule::Sub011,
                "a JSON-RPC error for subscribe to a session that does not exist",
                shown(&answer),
            ),
        }
    }

    async fn dispatch_to_missing(&mut self, index: usize, client: usize) -> Option<Finding> {
        let channel = self.missing("nope", index);
        let timeout = self.cfg.timeout;
        let conn = &mut self.conns[client];
        let action = json!({ "type": "session/titleChanged", "title": "nowhere" });
        let client_id = conn.client_id().to_owned();
        let sent = conn.dispatch(&channel, &action).await;
        let seq = conn.last_seq();
        let ping = match sent {
            Ok(_) => conn.send_ping().await.ok(),
            Err(_) => None,
        };
        // The host answers the ping after whatever it did with the dispatch.
        let first = conn
            .wait_for(timeout, |item| match item {
                Incoming::Message(m) => {
                    (m["method"] == "action"
                        && m["params"]["origin"]["clientId"] == client_id.as_str()
                        && m["params"]["origin"]["clientSeq"] == seq)
                        || ping.is_some_and(|id| crate::transport::is_response_to(m, id))
                }
                _ => false,
            })
            .await;
        match first {
            Ok(Incoming::Message(m)) if m["method"] == "action" => finding(
                Rule::Dispatch004,
                "a dispatch to a session that does not exist is ignored (no echo)",
                format!("an echo: {}", clip(&m.to_string())),
            ),
            _ => None,
        }
    }

    async fn side_session(&mut self, index: usize, client: usize) -> Option<Finding> {
        let uri = self.missing("side", index);
        let timeout = self.cfg.timeout;
        let params = self.create_params(&uri);
        let created = self.conns[client].create_session(params, timeout).await;
        if !matches!(&created, Ok(m) if m.get("result").is_some()) {
            return finding(
                Rule::Root005,
                "createSession for a fresh URI succeeds",
                shown(&created),
            );
        }
        let added = self
            .root_hears(
                Rule::Root005,
                "root/sessionAdded",
                "/summary/resource",
                &uri,
            )
            .await;
        if let Err(none) = added {
            return finding(
                Rule::Root005,
                "root/sessionAdded for the new session on the root subscriber",
                none,
            );
        }
        let disposed = self.conns[client].dispose_session(&uri, timeout).await;
        if !matches!(&disposed, Ok(m) if m.get("result").is_some()) {
            return finding(
                Rule::Lifecycle009,
                "disposeSession of a live session succeeds",
                shown(&disposed),
            );
        }
        let removed = self
            .root_hears(Rule::Root006, "root/sessionRemoved", "/session", &uri)
            .await;
        let none = removed.err()?;
        finding(
            Rule::Root006,
            "root/sessionRemoved for the disposed session on the root subscriber",
            none,
        )
    }

    /// Whether the first client (subscribed to the root channel at initialize) gets the
    /// root notification `method` whose params at `pointer` name `uri`; if not, what was
    /// seen instead.
    async fn root_hears(
        &mut self,
        rule: Rule,
        method: &str,
        pointer: &str,
        uri: &str,
    ) -> Result<(), String> {
        self.wait_or_ping(0, rule, |m| {
            m["method"] == method && m["params"].pointer(pointer).is_some_and(|v| v == uri)
        })
        .await
        .map(drop)
    }

    /// Waits on client `client` for the first message `wanted` matches, for the timeout —
    /// or, when missing it could only be a failure of a settled `rule` (known to fail, or
    /// not judged), until the host answers a ping sent now: the fuzzer does not wait again
    /// for what it knows will not come. The message, or what was seen instead.
    pub(super) async fn wait_or_ping(
        &mut self,
        client: usize,
        rule: Rule,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        let settled = self.cfg.settled(rule);
        let conn = &mut self.conns[client];
        let ping = ping_if(conn, settled).await;
        let seen = conn
            .wait_for(self.cfg.timeout, |item| match item {
                Incoming::Message(m) => {
                    wanted(m) || ping.is_some_and(|id| crate::transport::is_response_to(m, id))
                }
                _ => false,
            })
            .await;
        match seen {
            Ok(Incoming::Message(m)) if wanted(&m) => Ok(m),
            Ok(_) => Err("none before the answer to a ping sent after it".into()),
            Err(error) => Err(format!("none ({error})")),
        }
    }

    async fn duplicate_session(&mut self, client: usize) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let params = self.create_params(&self.session);
        let answer = self.conns[client].create_session(params, timeout).await;
        match error_code(&answer) {
            Some(-32003) => None,
            _ => finding(
                Rule::Lifecycle001,
                "error -32003 for createSession on a URI in use",
                shown(&answer),
            ),
        }
    }

    async fn unknown_provider(&mut self, index: usize, client: usize) -> Option<Finding> {
        let uri = self.missing("provider", index);
        let timeout = self.cfg.timeout;
        let conn = &mut self.conns[client];
        let answer = conn
            .create_session(
                json!({ "channel": uri, "provider": "fz-no-such-agent" }),
                timeout,
            )
            .await;
        if error_code(&answer) == Some(-32002) {
            return None;
        }
        if !matches!(&answer, Ok(m) if m.get("result").is_some()) {
            return finding(
                Rule::Lifecycle006,
                "error -32002 (or a session whose creation fails) for an unknown provider",
                shown(&answer),
            );
        }
        // Created: it must fail, never become ready. (Its end reaches this client as an
        // envelope only while subscribed, so look at a fresh snapshot.)
        let deadline = tokio::time::Instant::now() + timeout;
        let lifecycle = loop {
            let state = conn.subscribe(&uri, timeout).await;
            let lifecycle = state
                .as_ref()
                .ok()
                .and_then(|m| m.pointer("/result/snapshot/state/lifecycle"))
                .and_then(Value::as_str)
                .unwrap_or("(none)")
                .to_owned();
            let _ = conn.unsubscribe(&uri).await;
            if lifecycle != "creating" || tokio::time::Instant::now() > deadline {
                break lifecycle;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        };
        let _ = conn.dispose_session(&uri, timeout).await;
        if lifecycle == "ready" {
            finding(
                Rule::Lifecycle006,
                "an unknown provider's session never becomes ready",
                "lifecycle ready",
            )
        } else {
            None
        }
    }

    /// A new connection of the probe's own (not one of the clients: its frames are the
    /// probe's to judge).
    async fn side_connection(&self) -> Result<Conn, Finding> {
        let client_id = format!("ahpspec-{}-handshake", self.token);
        Conn::connect(&self.url, self.cfg.timeout, "side", &client_id)
            .await
            .map_err(|e| (Rule::Fuzz001, "a new connection".to_owned(), e.to_string()))
    }

    async fn ping_before_initialize(&mut self) -> Option<Finding> {
        let mut link = match self.side_connection().await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        let answer = link.ping(self.cfg.timeout).await;
        link.close().await;
        match &answer {
            Ok(m) if m.get("result").is_some() => None,
            _ => finding(
                Rule::Transport010,
                "ping answered with a success before initialize",
                shown(&answer),
            ),
        }
    }

    /// `initialize` on a new connection offering `versions`.
    pub(super) async fn handshake(
        &mut self,
        versions: &[&str],
    ) -> Result<(Conn, Result<Value, TransportError>), Finding> {
        let mut link = self.side_connection().await?;
        let answer = match link
            .initialize(&Offer::of(versions.iter().copied()), self.cfg.timeout)
            .await
        {
            Ok(result) => Ok(result),
            Err(HandshakeError::Refused(answer)) => Ok(answer),
            Err(HandshakeError::Transport(error)) => Err(error),
        };
        Ok((link, answer))
    }

    async fn mixed_versions(&mut self) -> Option<Finding> {
        // 1.2.0 is a compatible minor of 1.0.0 (as in the VERSION-002 case): the host
        // answers with it, never with a version nobody offered or the lower one.
        let offered = ["0.9.0", "1.2.0"];
        let (mut link, answer) = match self.handshake(&offered).await {
            Ok(done) => done,
            Err(found) => return Some(found),
        };
        link.close().await;
        let chosen = answer
            .as_ref()
            .ok()
            .and_then(|m| m.pointer("/result/protocolVersion"))
            .and_then(Value::as_str);
        match chosen {
            Some("1.2.0") => None,
            Some(version) if offered.contains(&version) => finding(
                Rule::Version002,
                "the highest compatible offered version (1.2.0)",
                format!("protocolVersion {version}"),
            ),
            _ => finding(
                Rule::Version001,
                "a protocolVersion among those offered (0.9.0, 1.2.0)",
                shown(&answer),
            ),
        }
    }

    async fn unsupported_version(&mut self) -> Option<Finding> {
        let (mut link, answer) = match self.handshake(&["2.0.0"]).await {
            Ok(done) => done,
            Err(found) => return Some(found),
        };
        let supported = answer
            .as_ref()
            .ok()
            .and_then(|m| m.pointer("/error/data/supportedVersions"))
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty() && v.iter().all(Value::is_string));
        if error_code(&answer) != Some(-32005) || !supported {
            link.close().await;
            return finding(
                Rule::Version005,
                "error -32005 with data.supportedVersions (non-empty strings)",
                shown(&answer),
            );
        }
        // The host closes the connection after the error. Once VERSION-006 is settled, a
        // ping it answers ends the wait: the connection is still open.
        let ping = ping_if(&mut link, self.cfg.settled(Rule::Version006)).await;
        let closed = link
            .wait_for(self.cfg.timeout, |item| match item {
                Incoming::Closed { .. } => true,
                Incoming::Message(m) => {
                    ping.is_some_and(|id| crate::transport::is_response_to(m, id))
                }
                _ => false,
            })
            .await;
        link.close().await;
        match closed {
            Ok(Incoming::Closed { .. }) | Err(TransportError::Closed) => None,
            Ok(_) => finding(
                Rule::Version006,
                "the host closes the connection after -32005",
                "still open: it answered a ping sent after the error",
            ),
            Err(error) => finding(
                Rule::Version006,
                "the host closes the connection after -32005",
                format!("still open ({error})"),
            ),
        }
    }

    async fn unsubscribe(&mut self, index: usize, client: usize) -> Option<Finding> {
        // The first client stays subscribed: the model plans from its mirror.
        let client = if client == 0 { 1 } else { client };
        if client >= self.conns.len() {
            return None;
        }
        let timeout = self.cfg.timeout;
        let session = self.session.clone();
        let conn = &mut self.conns[client];
        let left = conn.unsubscribe(&session).await;
        // Whatever the host sent before it took the unsubscribe arrives before this pong.
        let synced = conn.ping(timeout).await;
        if left.is_err() || synced.is_err() {
            return finding(Rule::Fuzz001, "the connection stays open", shown(&synced));
        }
        let from = conn.frame_count();
        // The session moves: a title change by the first client.
        let first = &mut self.conns[0];
        let action = json!({ "type": "session/titleChanged", "title": format!("unsub-{index}") });
        let client_id = first.client_id().to_owned();
        let _ = first.dispatch(&session, &action).await;
        let seq = first.last_seq();
        // Without its echo the probe cannot tell when the host has taken the change: the
        // echo's rule (DISPATCH-001) is what failed.
        let echoed = self
            .wait_or_ping(0, Rule::Dispatch001, |m| {
                m["method"] == "action"
                    && m["params"]["origin"]["clientId"] == client_id.as_str()
                    && m["params"]["origin"]["clientSeq"] == seq
            })
            .await;
        if let Err(none) = echoed {
            return finding(
                Rule::Dispatch001,
                "an echo of session/titleChanged to its dispatcher",
                none,
            );
        }
        let conn = &mut self.conns[client];
        let _ = conn.ping(timeout).await;
        let leaked = conn
            .received_since(from)
            .find(|m| m["method"] == "action" && m["params"]["channel"] == session.as_str());
        if let Some(message) = leaked {
            return finding(
                Rule::Sub004,
                "no envelopes of a channel after unsubscribing from it",
                clip(&message.to_string()),
            );
        }
        let again = conn.subscribe_immediate(&session, timeout).await;
        match &again {
            Ok(m) if m.get("result").is_some() => None,
            _ => finding(
                Rule::Sub001,
                "subscribing again answers with a snapshot",
                shown(&again),
            ),
        }
    }

    async fn fetch_turns(&mut self) -> Option<Finding> {
        let (mut link, answer) = match self.handshake(&["1.0.0"]).await {
            Ok(done) => done,
            Err(found) => return Some(found),
        };
        let found = self.fetch_turns_on(&mut link, answer).await;
        link.close().await;
        found
    }

    async fn fetch_turns_on(
        &self,
        link: &mut Conn,
        init: Result<Value, TransportError>,
    ) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        if !matches!(&init, Ok(m) if m.get("result").is_some()) {
            return finding(Rule::Init001, "a result to initialize", shown(&init));
        }
        let windowed = link
            .request(
                "subscribe",
                json!({ "channel": self.chat, "view": { "turns": 1 }, "delivery": { "maxLatencyMs": 0 } }),
                timeout,
            )
            .await;
        let cursor = windowed
            .as_ref()
            .ok()
            .and_then(|m| m.pointer("/result/snapshot/state/turnsNextCursor"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        // Fewer than two turns: nothing older to fetch.
        let cursor = cursor?;
        let bogus = link
            .request(
                "fetchTurns",
                json!({ "channel": self.chat, "cursor": format!("fz-bogus-{cursor}") }),
                timeout,
            )
            .await;
        if error_code(&bogus) != Some(-32602) {
            return finding(
                Rule::Turn010,
                "error -32602 for an unknown cursor",
                shown(&bogus),
            );
        }
        let id = match link
            .send_request(
                "fetchTurns",
                json!({ "channel": self.chat, "cursor": cursor }),
            )
            .await
        {
            Ok(id) => id,
            Err(error) => {
                return finding(
                    Rule::Fuzz001,
                    "the connection stays open",
                    error.to_string(),
                )
            }
        };
        let chat = self.chat.clone();
        let first = link
            .wait_for(timeout, |item| match item {
                Incoming::Message(m) => {
                    crate::transport::is_response_to(m, id)
                        || (m["method"] == "action"
                            && m["params"]["channel"] == chat.as_str()
                            && m["params"]["action"]["type"] == "chat/turnsLoaded")
                }
                _ => false,
            })
            .await;
        match first {
            Ok(Incoming::Message(m)) if m["method"] == "action" => None,
            other => finding(
                Rule::Turn010,
                "chat/turnsLoaded on the chat before the fetchTurns response",
                match other {
                    Ok(Incoming::Message(m)) => {
                        format!("first the response: {}", clip(&m.to_string()))
                    }
                    Ok(_) => "the connection closed".to_owned(),
                    Err(error) => error.to_string(),
                },
            ),
        }
    }
}
