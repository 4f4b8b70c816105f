//! The routines about sessions and their turns: a disposed session no longer listed,
//! followed page by page (LIFECYCLE-009), and a windowed subscription's cursor and the turns
//! it fetches (SUB-008, TURN-011).

use serde_json::{json, Value};

use super::{finding, ok, shown, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{Conn, DEFAULT_OFFER, ROOT};
use crate::fuzz::exec::{Failure, Run};
use crate::fuzz::ops::{Behaviour, Op};
use crate::transport::{is_response_to, Incoming, TransportError};

impl Run<'_> {
    /// A side session (with a turn run in it when `turn`) disposed by this client: its
    /// `listSessions` no longer lists it.
    pub(super) async fn dispose_then_list(
        &mut self,
        index: usize,
        client: usize,
        turn: bool,
    ) -> Option<Finding> {
        let uri = self.missing("gone", index);
        let timeout = self.cfg.timeout;
        let params = self.create_params(&uri);
        let conn = &mut self.conns[client];
        let created = conn.create_session(params, timeout).await;
        if !ok(&created) {
            // Creating sessions is the side-session probe's matter (ROOT-005).
            return None;
        }
        self.exec.operations += 1;
        if turn && self.cfg.profile.behaviour("echo").is_some() {
            self.turn_in_side_session(client, &uri).await;
        }
        // Two sessions at least: the pages of one are followed (TRANSPORT-003).
        if let Err(found) = self.list_sessions(client).await {
            return Some(found);
        }
        let conn = &mut self.conns[client];
        let disposed = conn.dispose_session(&uri, timeout).await;
        if !ok(&disposed) {
            return finding(
                Rule::Lifecycle009,
                "disposeSession of a live session succeeds",
                shown(&disposed),
            );
        }
        let listed = match self.list_sessions(client).await {
            Ok(listed) => listed,
            Err(found) => return Some(found),
        };
        let item = listed
            .iter()
            .find(|item| item["resource"] == uri.as_str())?;
        finding(
            Rule::Lifecycle009,
            "listSessions no longer lists a session this connection disposed",
            format!("listed: {}", clip(&item.to_string())),
        )
    }

    /// Every session client `client`'s listSessions gives, a page of one at a time (so the
    /// host's cursors are followed): a page request left unanswered breaks TRANSPORT-003.
    async fn list_sessions(&mut self, client: usize) -> Result<Vec<Value>, Finding> {
        let timeout = self.cfg.timeout;
        let mut cursor: Option<String> = None;
        let mut listed = Vec::new();
        // A fresh host per sequence holds a handful of sessions.
        for _ in 0..16 {
            let mut params = json!({ "channel": ROOT, "limit": 1 });
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let page = self.conns[client]
                .request("listSessions", params, timeout)
                .await;
            self.exec.operations += 1;
            let page = match page {
                Ok(page) => page,
                Err(TransportError::Timeout(_)) => {
                    return Err((
                        Rule::Transport003,
                        "a response to every request".to_owned(),
                        format!(
                            "no response to listSessions (cursor {cursor:?}) within {} ms",
                            timeout.as_millis()
                        ),
                    ))
                }
                Err(_) => return Ok(listed),
            };
            listed.extend(
                page.pointer("/result/items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
            cursor = page
                .pointer("/result/nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(listed)
    }

    /// Subscribes client `client` to the side session `uri`, runs an echo turn in its
    /// default chat to its end, and unsubscribes again (what goes wrong on the way is the
    /// always-on checks' to judge; the routine only needs the session to have run a turn).
    async fn turn_in_side_session(&mut self, client: usize, uri: &str) {
        let timeout = self.cfg.timeout;
        let text = self
            .cfg
            .profile
            .behaviour("echo")
            .unwrap_or("hello")
            .to_owned();
        let now = self.tick();
        let conn = &mut self.conns[client];
        let Ok(subscribed) = conn.subscribe_immediate(uri, timeout).await else {
            return;
        };
        let state = subscribed
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null);
        if state["lifecycle"] == "creating" {
            let owned = uri.to_owned();
            let _ = conn
                .wait_for(timeout, |item| {
                    matches!(item, Incoming::Message(m) if m["method"] == "action"
                        && m["params"]["channel"] == owned.as_str()
                        && m["params"]["action"]["type"] == "session/ready")
                })
                .await;
        }
        let Some(chat) = conn
            .live_state(uri)
            .and_then(|s| s["defaultChat"].as_str().map(str::to_owned))
            .or_else(|| state["defaultChat"].as_str().map(str::to_owned))
        else {
            let _ = conn.unsubscribe(uri).await;
            return;
        };
        if conn.subscribe_immediate(&chat, timeout).await.is_ok() {
            let action = json!({ "type": "chat/turnStarted", "turnId": "fz-side-turn", "startedAt": now,
                                 "message": { "text": text, "origin": { "kind": "user" } } });
            if conn.dispatch(&chat, &action).await.is_ok() {
                self.exec.operations += 1;
                let _ = conn
                    .wait_for(timeout, |item| {
                        matches!(item, Incoming::Message(m) if m["method"] == "action"
                            && m["params"]["channel"] == chat.as_str()
                            && matches!(m["params"]["action"]["type"].as_str(),
                                Some("chat/turnComplete" | "chat/error" | "chat/turnCancelled")))
                    })
                    .await;
            }
            let _ = conn.unsubscribe(&chat).await;
        }
        let _ = conn.unsubscribe(uri).await;
        let _ = conn.ping(timeout).await;
    }

    /// Runs echo turns (each to its end, judged like every dispatch) until the chat holds
    /// `wanted` ended turns, while no turn is active and the profile has `echo`.
    pub(super) async fn ended_turns(
        &mut self,
        index: usize,
        client: usize,
        wanted: usize,
    ) -> Result<(), Failure> {
        if self.cfg.profile.behaviour(Behaviour::Echo.key()).is_none() {
            return Ok(());
        }
        for _ in 0..wanted {
            let chat = self.conns[0]
                .mirror()
                .state(&self.chat)
                .unwrap_or(Value::Null);
            let ended = chat["turns"].as_array().map_or(0, Vec::len);
            if ended >= wanted || chat.get("activeTurn").is_some_and(|t| !t.is_null()) {
                break;
            }
            let start = Op::StartTurn {
                client: client as u8,
                behaviour: Behaviour::Echo,
            };
            if let Some(failure) = self.dispatch(index, &[&start]).await {
                return Err(failure);
            }
        }
        Ok(())
    }

    /// A new connection subscribes to the chat with a one-turn window: a snapshot that
    /// leaves turns out carries `turnsNextCursor` (SUB-008); the turns it fetches with it
    /// are older than the window, oldest first, none twice (TURN-011).
    pub(super) async fn window(&mut self) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let known: Vec<Value> = self.conns[0]
            .mirror()
            .state(&self.chat)
            .and_then(|c| c["turns"].as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|t| t["id"].clone())
            .collect();
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        let found = self.window_on(&mut link, &known, timeout).await;
        link.close().await;
        found
    }

    async fn window_on(
        &mut self,
        link: &mut Conn,
        known: &[Value],
        timeout: std::time::Duration,
    ) -> Option<Finding> {
        let windowed = link
            .request(
                "subscribe",
                json!({ "channel": self.chat, "view": { "turns": 1 }, "delivery": { "maxLatencyMs": 0 } }),
                timeout,
            )
            .await;
        self.exec.operations += 1;
        let state = windowed
            .as_ref()
            .ok()?
            .pointer("/result/snapshot/state")?
            .clone();
        let window: Vec<Value> = state["turns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["id"].clone())
            .collect();
        // Turns ended before the subscription that the window left out.
        let omitted = known.iter().filter(|id| !window.contains(id)).count();
        let cursor = state["turnsNextCursor"].as_str().map(str::to_owned);
        let Some(cursor) = cursor else {
            if omitted > 0 {
                return finding(
                    Rule::Sub008,
                    "turnsNextCursor in a chat snapshot that leaves older turns out",
                    format!(
                        "{} of {} turns, no cursor",
                        window.len(),
                        window.len() + omitted
                    ),
                );
            }
            return None;
        };
        let id = link
            .send_request(
                "fetchTurns",
                json!({ "channel": self.chat, "cursor": cursor }),
            )
            .await
            .ok()?;
        self.exec.operations += 1;
        let chat = self.chat.clone();
        let mut loaded: Vec<Value> = Vec::new();
        loop {
            let next = link
                .wait_for(timeout, |item| match item {
                    Incoming::Message(m) => {
                        is_response_to(m, id)
                            || (m["method"] == "action"
                                && m["params"]["channel"] == chat.as_str()
                                && m["params"]["action"]["type"] == "chat/turnsLoaded")
                    }
                    _ => false,
                })
                .await;
            match next {
                Ok(Incoming::Message(m)) if m["method"] == "action" => loaded.extend(
                    m["params"]["action"]["turns"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|t| t["id"].clone()),
                ),
                // The response (or nothing): what was loaded is judged.
                _ => break,
            }
        }
        let positions: Vec<Option<usize>> = loaded
            .iter()
            .map(|id| known.iter().position(|k| k == id))
            .collect();
        let oldest_first = positions.windows(2).all(|p| match (p[0], p[1]) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        });
        let twice = loaded.iter().any(|id| window.contains(id));
        if !oldest_first || twice {
            return finding(
                Rule::Turn011,
                "chat/turnsLoaded turns older than the window, oldest first, none already loaded",
                format!(
                    "turns {} loaded beside the window {}, the chat's turns being {}",
                    Value::from(loaded.clone()),
                    Value::from(window),
                    Value::from(known.to_vec())
                ),
            );
        }
        None
    }
}
