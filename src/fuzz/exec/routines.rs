//! Routines: short runs of requests and dispatches the generator could not reach one
//! operation at a time (issue 24), each judged by the one rule its outcome proves — echoes
//! of a burst in dispatch order (DISPATCH-005), a disposed session no longer listed
//! (LIFECYCLE-009), a windowed subscription's cursor and the turns it fetches (SUB-008,
//! TURN-011), a created chat announced before the answer and listed whole in the next
//! summary change (CHAT-001, ROOT-008), and an input request answered by a connection
//! subscribed only to the session (SESSION-010), and the snapshots of a handshake (INIT-002).
//! A routine brings about the state it needs
//! (turns run, an input request opened) through ordinary dispatches, judged as usual.

use serde_json::{json, Value};

use super::{Failure, Run};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{Conn, Offer, DEFAULT_OFFER, ROOT};
use crate::fuzz::ops::{Behaviour, Op, Routine};
use crate::transport::{is_response_to, Incoming, TransportError};

/// What a routine found wrong: the rule, what a correct host does, what this one did.
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

fn ok(answer: &Result<Value, TransportError>) -> bool {
    matches!(answer, Ok(m) if m.get("result").is_some())
}

impl Run<'_> {
    /// Runs `routine` on client `client`; a failure names the rule it broke.
    pub(super) async fn routine(
        &mut self,
        index: usize,
        client: usize,
        routine: Routine,
    ) -> Option<Failure> {
        let found = match routine {
            Routine::Burst { n } => self.burst(client, n).await,
            Routine::DisposeThenList { turn } => self.dispose_then_list(index, client, turn).await,
            Routine::Window => match self.ended_turns(index, client, 3).await {
                Err(failure) => return Some(failure),
                Ok(()) => self.window().await,
            },
            Routine::CreateChat => self.create_chat(index, client).await,
            Routine::Handshake { root } => self.handshake_snapshots(root).await,
            Routine::AnswerUnsubscribed => match self.open_input(index, client).await {
                Err(failure) => return Some(failure),
                Ok(None) => None,
                Ok(Some(request)) => self.answer_unsubscribed(&request).await,
            },
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

    /// `n` title changes dispatched back to back: their echoes come in dispatch order.
    async fn burst(&mut self, client: usize, n: u8) -> Option<Finding> {
        let session = self.session.clone();
        let conn = &mut self.conns[client];
        let mut seqs = Vec::new();
        for k in 0..n.max(2) {
            let title = format!("fz-burst-{}-{k}", conn.last_seq() + 1);
            let action = json!({ "type": "session/titleChanged", "title": title });
            match conn.dispatch(&session, &action).await {
                Ok(seq) => seqs.push(seq),
                Err(error) => {
                    return finding(
                        Rule::Fuzz001,
                        "the connection stays open",
                        error.to_string(),
                    )
                }
            }
            self.exec.operations += 1;
        }
        let client_id = conn.client_id().to_owned();
        let mut order = Vec::new();
        while order.len() < seqs.len() {
            let echo = conn
                .wait_for(self.cfg.timeout, |item| {
                    matches!(item, Incoming::Message(m) if m["method"] == "action"
                        && m["params"]["origin"]["clientId"] == client_id.as_str()
                        && m["params"]["origin"]["clientSeq"].as_i64().is_some_and(|s| seqs.contains(&s) && !order.contains(&s)))
                })
                .await;
            match echo {
                Ok(Incoming::Message(m)) => {
                    order.push(m["params"]["origin"]["clientSeq"].as_i64().unwrap_or(-1))
                }
                // A missing echo is DISPATCH-001's (the always-on checks and the next
                // operations see it); the order of what came is still judged.
                _ => break,
            }
        }
        let sent: Vec<i64> = seqs.iter().copied().filter(|s| order.contains(s)).collect();
        if order != sent {
            return finding(
                Rule::Dispatch005,
                &format!("the echoes of clientSeq {sent:?} in that order"),
                format!("in the order {order:?}"),
            );
        }
        None
    }

    /// A side session (with a turn run in it when `turn`) disposed by this client: its
    /// `listSessions` no longer lists it.
    async fn dispose_then_list(
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
    async fn ended_turns(
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
    async fn window(&mut self) -> Option<Finding> {
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

    /// A new connection initializes asking for the root channel (`root`) or for nothing:
    /// its result holds exactly one snapshot of each channel asked for, of that resource,
    /// and none of any other (INIT-002).
    async fn handshake_snapshots(&mut self, root: bool) -> Option<Finding> {
        let client_id = format!("ahpspec-{}-routine", self.token);
        let timeout = self.cfg.timeout;
        let mut link = match Conn::connect(&self.url, timeout, "routine", &client_id).await {
            Ok(link) => link,
            Err(error) => return finding(Rule::Fuzz001, "a new connection", error.to_string()),
        };
        let asked: &[&str] = if root { &[ROOT] } else { &[] };
        let offer = Offer::of([DEFAULT_OFFER]).subscribing(asked.iter().copied());
        let answer = link.initialize(&offer, timeout).await;
        link.close().await;
        self.exec.operations += 1;
        // A refused initialize is INIT-001's matter, seen by every sequence's set-up.
        let result = answer.ok()?;
        let snapshots: Vec<&Value> = result
            .pointer("/result/snapshots")
            .or_else(|| result.get("snapshots"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let resources: Vec<String> = snapshots
            .iter()
            .map(|s| s["resource"].as_str().unwrap_or("(none)").to_owned())
            .collect();
        if resources != asked {
            return finding(
                Rule::Init002,
                &format!("one snapshot per channel asked for, of that resource: {asked:?}"),
                format!("snapshots of {resources:?}"),
            );
        }
        None
    }

    /// A new connection, initialized with `version`, for a routine's own requests.
    async fn side(&self, version: &str) -> Result<Conn, Finding> {
        let client_id = format!("ahpspec-{}-routine", self.token);
        let mut link = Conn::connect(&self.url, self.cfg.timeout, "routine", &client_id)
            .await
            .map_err(|e| (Rule::Fuzz001, "a new connection".to_owned(), e.to_string()))?;
        match link
            .initialize(&Offer::of([version]), self.cfg.timeout)
            .await
        {
            Ok(_) => Ok(link),
            Err(error) => Err((
                Rule::Init001,
                "a result to initialize".to_owned(),
                format!("{error:?}"),
            )),
        }
    }

    /// createChat in the session: `session/chatAdded` reaches the creating client, subscribed
    /// to the session, before the response (CHAT-001); the next root summary change that
    /// lists chats lists every chat of the session (ROOT-008). Only where the agent
    /// advertises `multipleChats`.
    async fn create_chat(&mut self, index: usize, client: usize) -> Option<Finding> {
        let root = self.conns[0].mirror().state(ROOT).unwrap_or(Value::Null);
        let multiple = root["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a.pointer("/capabilities/multipleChats").is_some());
        if !multiple {
            return None;
        }
        let timeout = self.cfg.timeout;
        let chat = format!("ahp-chat:/{}-chat-{index}", self.token);
        let session = self.session.clone();
        let from = self.conns[0].frame_count();
        let conn = &mut self.conns[client];
        let id = conn
            .send_request("createChat", json!({ "channel": session, "chat": chat }))
            .await
            .ok()?;
        self.exec.operations += 1;
        let first = conn
            .wait_for(timeout, |item| match item {
                Incoming::Message(m) => {
                    is_response_to(m, id)
                        || (m["method"] == "action"
                            && m["params"]["channel"] == session.as_str()
                            && m["params"]["action"]["type"] == "session/chatAdded"
                            && m["params"]["action"]["summary"]["resource"] == chat.as_str())
                }
                _ => false,
            })
            .await;
        match &first {
            Ok(Incoming::Message(m)) if m["method"] == "action" => {}
            // Refused: whether it must be is not this routine's matter.
            Ok(Incoming::Message(m)) if m.get("error").is_some() => return None,
            other => {
                return finding(
                    Rule::Chat001,
                    "session/chatAdded for the new chat before the createChat response",
                    match other {
                        Ok(Incoming::Message(m)) => {
                            format!("first the response: {}", clip(&m.to_string()))
                        }
                        Ok(_) => "the connection closed".to_owned(),
                        Err(error) => error.to_string(),
                    },
                )
            }
        }
        let _ = conn.response(id, timeout).await;
        self.summary_lists_every_chat(from, &chat).await
    }

    /// The root subscriber's root/sessionSummaryChanged notifications for the session that
    /// list chats, after its session/chatAdded of `chat` and up to the answer of a ping sent
    /// now, list both chats at least (the session never loses one in a sequence).
    async fn summary_lists_every_chat(&mut self, from: usize, chat: &str) -> Option<Finding> {
        let session = self.session.clone();
        let root_conn = &mut self.conns[0];
        let _ = root_conn.ping(self.cfg.timeout).await;
        let mut added = false;
        for message in root_conn.received_since(from) {
            if message["method"] == "action"
                && message["params"]["action"]["type"] == "session/chatAdded"
                && message["params"]["action"]["summary"]["resource"] == chat
            {
                added = true;
            }
            let listed = message["params"]["changes"]["chats"]
                .as_array()
                .map(Vec::len);
            let summary = message["method"] == "root/sessionSummaryChanged"
                && message["params"]["session"] == session.as_str();
            if let (true, true, Some(listed)) = (added, summary, listed) {
                if listed < 2 {
                    return finding(
                        Rule::Root008,
                        "changes.chats listing every chat of the session (two at least)",
                        clip(&message.to_string()),
                    );
                }
            }
        }
        None
    }

    /// An open input request of the chat's active turn, opened by starting an `input` turn
    /// when the chat is idle and the profile has the behaviour; `None` otherwise.
    async fn open_input(&mut self, index: usize, client: usize) -> Result<Option<Value>, Failure> {
        let open = |run: &Run<'_>| {
            let chat = run.conns[0]
                .mirror()
                .state(&run.chat)
                .unwrap_or(Value::Null);
            let active = chat.get("activeTurn").filter(|t| !t.is_null()).cloned();
            let request = active.as_ref().and_then(|turn| {
                turn["responseParts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|p| {
                        p["kind"] == "inputRequest" && p.get("response").is_none_or(Value::is_null)
                    })
            });
            (active.is_some(), request.map(|p| p["request"].clone()))
        };
        let (busy, request) = open(self);
        if request.is_some() || busy || self.cfg.profile.behaviour(Behaviour::Input.key()).is_none()
        {
            return Ok(request);
        }
        let start = Op::StartTurn {
            client: client as u8,
            behaviour: Behaviour::Input,
        };
        if let Some(failure) = self.dispatch(index, &[&start]).await {
            return Err(failure);
        }
        Ok(open(self).1)
    }

    /// A new connection subscribed only to the session declines `request` by dispatching to
    /// the chat: the host takes it (SESSION-010). The answer shows as the chat's echo to the
    /// other clients, or as the entry's removal on the session; a rejection echo breaks it.
    async fn answer_unsubscribed(&mut self, request: &Value) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        let session = self.session.clone();
        if !ok(&link.subscribe_immediate(&session, timeout).await) {
            link.close().await;
            return None;
        }
        let action = json!({ "type": "chat/inputCompleted", "requestId": request["id"], "response": "decline" });
        let seq = link.dispatch(&self.chat, &action).await.ok();
        self.exec.operations += 1;
        let client_id = link.client_id().to_owned();
        // A rejection reaches the dispatcher; the host answers a ping sent after the
        // dispatch after whatever it did with it.
        let ping = link.send_ping().await.ok();
        let answer = link
            .wait_for(timeout, |item| match item {
                Incoming::Message(m) => {
                    (m["method"] == "action"
                        && m["params"]["origin"]["clientId"] == client_id.as_str()
                        && seq.is_some_and(|s| m["params"]["origin"]["clientSeq"] == s))
                        || ping.is_some_and(|id| is_response_to(m, id))
                }
                _ => false,
            })
            .await;
        link.close().await;
        match answer {
            Ok(Incoming::Message(m))
                if m["params"]
                    .get("rejectionReason")
                    .is_some_and(|r| !r.is_null()) =>
            {
                finding(
                    Rule::Session010,
                    "a chat action from a connection subscribed only to the session is taken",
                    format!("rejected: {}", clip(&m.to_string())),
                )
            }
            _ => None,
        }
    }
}
