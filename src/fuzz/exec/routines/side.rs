//! What the issue 29 routines share: a session of a routine's own on a connection of its
//! own (its frames are not the run's, so the run's clients keep their one session), a turn
//! run to its end there, a fresh snapshot of any channel, and the capabilities of the
//! profile's agent.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{ask, Finding};
use crate::client::{Conn, DEFAULT_OFFER, ROOT};
use crate::fuzz::exec::Run;
use crate::transport::Incoming;

/// A session a routine made on its own connection, subscribed to it and its default chat.
pub(super) struct Side {
    pub link: Conn,
    pub session: String,
    pub chat: String,
}

/// The action types that end a turn.
const TURN_ENDS: [&str; 3] = ["chat/turnComplete", "chat/error", "chat/turnCancelled"];

/// Starts turn `turn` in `chat` on `link` with `text` and waits for its end: the type of the
/// action that ended it (`None`: refused, or no end within `timeout`).
pub(super) async fn turn_to_end(
    link: &mut Conn,
    chat: &str,
    (turn, text, now): (&str, &str, String),
    timeout: Duration,
) -> Option<String> {
    let action = json!({ "type": "chat/turnStarted", "turnId": turn, "startedAt": now,
                         "message": { "text": text, "origin": { "kind": "user" } } });
    link.dispatch(chat, &action).await.ok()?;
    let ended = link
        .wait_for(timeout, |item| {
            matches!(item, Incoming::Message(m) if m["method"] == "action"
                && m["params"]["channel"] == chat
                && m["params"]["action"]["turnId"] == turn
                && (TURN_ENDS.contains(&m["params"]["action"]["type"].as_str().unwrap_or_default())
                    || m["params"].get("rejectionReason").is_some_and(|r| !r.is_null())))
        })
        .await;
    match ended {
        Ok(Incoming::Message(m)) if m["params"]["action"]["type"] != "chat/turnStarted" => {
            m["params"]["action"]["type"].as_str().map(str::to_owned)
        }
        _ => None,
    }
}

/// Whether an action of type `kind` on `channel` reaches `link` within `timeout`.
pub(super) async fn heard_on(
    link: &mut Conn,
    channel: &str,
    kind: &str,
    timeout: Duration,
) -> bool {
    link.wait_for(timeout, |item| {
        matches!(item, Incoming::Message(m) if m["method"] == "action"
            && m["params"]["channel"] == channel
            && m["params"]["action"]["type"] == kind)
    })
    .await
    .is_ok()
}

/// subscribe params for `channel`, every envelope at once.
pub(super) fn immediate(channel: &str) -> Value {
    json!({ "channel": channel, "delivery": { "maxLatencyMs": 0 } })
}

/// The state in a subscribe answer.
pub(super) fn snapshot_state(answer: &Value) -> Option<Value> {
    answer.pointer("/result/snapshot/state").cloned()
}

impl Run<'_> {
    /// The capabilities of the agent the run's sessions are made with (the profile's
    /// provider, or the first agent), as the first client's root state lists them.
    pub(super) fn agent_capabilities(&self) -> Value {
        let root = self.conns[0].mirror().state(ROOT).unwrap_or(Value::Null);
        let provider = self.cfg.profile.provider.as_deref();
        root["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| provider.is_none_or(|p| a["provider"] == p))
            .map(|a| a["capabilities"].clone())
            .unwrap_or(Value::Null)
    }

    /// Whether the agent advertises the capability at `pointer` (e.g.
    /// `/multipleChats/fork`): present and not `false`.
    pub(super) fn capable(&self, pointer: &str) -> bool {
        self.agent_capabilities()
            .pointer(pointer)
            .is_some_and(|c| !c.is_null() && *c != Value::Bool(false))
    }

    /// A fresh snapshot of `channel`, read on a new connection (`None`: refused).
    pub(super) async fn fresh(&mut self, channel: &str) -> Option<Value> {
        let mut link = self.side(DEFAULT_OFFER).await.ok()?;
        let answer = link.subscribe_immediate(channel, self.cfg.timeout).await;
        link.close().await;
        self.exec.operations += 1;
        snapshot_state(&answer.ok()?)
    }

    /// Fresh snapshots of `channel` until `done` holds of one or the run's timeout passes:
    /// the last one read.
    pub(super) async fn fresh_until(
        &mut self,
        channel: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + self.cfg.timeout;
        loop {
            let state = self.fresh(channel).await?;
            if done(&state) || Instant::now() >= deadline {
                return Some(state);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A session of the routine's own (`tag`, operation `index`) on a new connection, in
    /// `directories` when given (else the profile's first), subscribed to it and its default
    /// chat once ready. `Err(None)`: the host made none (creating sessions is other rules').
    pub(super) async fn side_session(
        &mut self,
        tag: &str,
        index: usize,
        directories: Option<Vec<String>>,
    ) -> Result<Side, Option<Finding>> {
        let timeout = self.cfg.timeout;
        let mut link = self.side(DEFAULT_OFFER).await.map_err(Some)?;
        let session = self.missing(tag, index);
        let mut params = self.create_params(&session);
        if let Some(directories) = directories {
            params["workingDirectories"] = json!(directories);
        }
        self.exec.operations += 2;
        let created = ask(&mut link, "createSession", params, timeout).await?;
        let subscribed = match created.get("result") {
            Some(_) => ask(&mut link, "subscribe", immediate(&session), timeout).await?,
            None => return Err(None),
        };
        let mut state = snapshot_state(&subscribed).ok_or(None)?;
        if state["lifecycle"] == "creating" {
            if !heard_on(&mut link, &session, "session/ready", timeout).await {
                return Err(None);
            }
            state = link.live_state(&session).unwrap_or(state);
        }
        let chat = state["defaultChat"].as_str().ok_or(None)?.to_owned();
        self.exec.operations += 1;
        ask(&mut link, "subscribe", immediate(&chat), timeout).await?;
        Ok(Side {
            link,
            session,
            chat,
        })
    }

    /// Disposes a routine's session and closes its connection.
    pub(super) async fn drop_side(&mut self, mut side: Side) {
        let _ = side
            .link
            .dispose_session(&side.session, self.cfg.timeout)
            .await;
        side.link.close().await;
    }

    /// The profile's message for `behaviour`, a fresh turn id for routine `tag` and the
    /// timestamp to start it with; `None` without the behaviour.
    pub(super) fn turn_of(
        &mut self,
        behaviour: &str,
        tag: &str,
        index: usize,
    ) -> Option<(String, String, String)> {
        let text = self.cfg.profile.behaviour(behaviour)?.to_owned();
        let turn = format!("fz-{tag}-{index}-{}", self.next_turn);
        self.next_turn += 1;
        Some((turn, text, self.tick()))
    }
}
