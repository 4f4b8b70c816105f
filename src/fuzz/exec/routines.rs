//! Routines: short runs of requests and dispatches the generator could not reach one
//! operation at a time (issue 24), each judged by the one rule its outcome proves — echoes
//! of a burst in dispatch order (DISPATCH-005), a disposed session no longer listed
//! (LIFECYCLE-009), a windowed subscription's cursor and the turns it fetches (SUB-008,
//! TURN-011), a created chat announced before the answer and listed whole in the next
//! summary change (CHAT-001, ROOT-008), and an input request answered by a connection
//! subscribed only to the session (SESSION-010), the snapshots of a handshake (INIT-002),
//! and messages queued during a turn taken first in, first out (PENDING-003).
//! A routine brings about the state it needs
//! (turns run, an input request opened) through ordinary dispatches, judged as usual.

use serde_json::{json, Value};

use super::{Failure, Performed, Run};

mod agent;
mod changes;
mod chats;
mod clients;
mod config;
mod features;
mod misses;
mod sessions;
mod side;
mod tree;
mod watches;
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{Conn, Offer, DEFAULT_OFFER, ROOT};
use crate::fuzz::model::{Channel, Expect, Planned};
use crate::fuzz::ops::{Behaviour, Op, PendingKind, Routine};
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

/// An answer with an error (a refusal) rather than a result.
fn refused(answer: &Value) -> bool {
    answer.get("result").is_none()
}

fn ok(answer: &Result<Value, TransportError>) -> bool {
    matches!(answer, Ok(m) if m.get("result").is_some())
}

/// Sends request `method` on `conn` and waits for its answer: a request left unanswered
/// breaks TRANSPORT-003 (`Err(Some(…))`); a connection lost is no finding of the routine's
/// (`Err(None)`: the run's checks see it).
async fn ask(
    conn: &mut Conn,
    method: &str,
    params: Value,
    timeout: std::time::Duration,
) -> Result<Value, Option<Finding>> {
    match conn.request(method, params, timeout).await {
        Ok(answer) => Ok(answer),
        Err(TransportError::Timeout(_)) => Err(finding(
            Rule::Transport003,
            "a response to every request",
            format!("no response to {method} within {} ms", timeout.as_millis()),
        )),
        Err(_) => Err(None),
    }
}

/// Dispatches `action` to `channel` on `link`, then pings: the action's echo when it comes
/// before the ping's answer (a rejection reaches the dispatcher; the host answers a ping
/// sent after the dispatch after whatever it did with it), `None` otherwise.
async fn echo_before_ping(
    link: &mut Conn,
    channel: &str,
    action: &Value,
    timeout: std::time::Duration,
) -> Option<Value> {
    let seq = link.dispatch(channel, action).await.ok()?;
    let client_id = link.client_id().to_owned();
    let ping = link.send_ping().await.ok();
    let answer = link
        .wait_for(timeout, |item| match item {
            Incoming::Message(m) => {
                // The echo of this dispatch: its origin, channel and action. An echo that
                // names it by a wrong clientSeq is DISPATCH-001's (the always-on checks), not
                // an answer to this dispatch or to another one of the same clientSeq.
                (m["method"] == "action"
                    && m["params"]["origin"]["clientId"] == client_id.as_str()
                    && m["params"]["origin"]["clientSeq"] == seq
                    && m["params"]["channel"] == channel
                    && crate::client::json_equal(&m["params"]["action"], action))
                    || ping.is_some_and(|id| is_response_to(m, id))
            }
            _ => false,
        })
        .await;
    match answer {
        Ok(Incoming::Message(m)) if m["method"] == "action" => Some(m),
        _ => None,
    }
}

/// Whether an echo carries a rejection.
fn rejected(echo: &Value) -> bool {
    echo["params"]
        .get("rejectionReason")
        .is_some_and(|r| !r.is_null())
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
            Routine::Burst { n } => self.burst(index, client, n).await,
            Routine::DisposeThenList { turn } => self.dispose_then_list(index, client, turn).await,
            Routine::Window => match self.ended_turns(index, client, 3).await {
                Err(failure) => return Some(failure),
                Ok(()) => self.window().await,
            },
            Routine::CreateChat => self.create_chat(index, client).await,
            Routine::Handshake { root } => self.handshake_snapshots(root).await,
            Routine::Queue { n } => match self.queue(index, client, n).await {
                Some(failure) => return Some(failure),
                None => None,
            },
            Routine::Resources => self.resources(index, client).await,
            Routine::Watch => self.watch(index, client).await,
            Routine::Tree => self.tree(index, client).await,
            Routine::Config => self.config().await,
            Routine::StealTerminal => self.steal_terminal(index, client).await,
            Routine::Authenticate => self.authenticate().await,
            Routine::SubscribeRoot => self.subscribe_root().await,
            Routine::ChatOutside => self.chat_outside(index, client).await,
            Routine::ChooseOption => match self.choose_option(index, client).await {
                Err(failure) => return Some(failure),
                Ok(found) => found,
            },
            Routine::LeaveOnReconnect => self.leave_on_reconnect(index).await,
            Routine::ChatSources => match self.chat_sources(index, client).await {
                Err(failure) => return Some(failure),
                Ok(found) => found,
            },
            Routine::MoveChat => self.move_chat(index, client).await,
            Routine::PromoteDefault => self.promote_default(index).await,
            Routine::RemoveDirectory => self.remove_directory(index).await,
            Routine::Changeset => self.changeset(index, client).await,
            Routine::Annotations => self.annotations(index).await,
            Routine::AgentState => match self.agent_state(index, client).await {
                Err(failure) => return Some(failure),
                Ok(found) => found,
            },
            Routine::Versions => self.versions(index).await,
            Routine::FailedLifecycle => self.failed_lifecycle(index).await,
            Routine::MalformedTitle => self.malformed_title().await,
            Routine::QueueOnIdle => match self.queue_on_idle(index, client).await {
                Err(failure) => return Some(failure),
                Ok(found) => found,
            },
            Routine::ToolOrder => match self.tool_order(index, client).await {
                Err(failure) => return Some(failure),
                Ok(found) => found,
            },
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
    /// The dispatches are recorded as performed, so a regression case replays them (one
    /// at a time: the case does not judge their order).
    async fn burst(&mut self, index: usize, client: usize, n: u8) -> Option<Finding> {
        let session = self.session.clone();
        let conn = &mut self.conns[client];
        let mut seqs = Vec::new();
        for k in 0..n.max(2) {
            let title = format!("fz-burst-{}-{k}", conn.last_seq() + 1);
            let action = json!({ "type": "session/titleChanged", "title": title });
            match conn.dispatch(&session, &action).await {
                Ok(seq) => {
                    seqs.push(seq);
                    self.exec.performed.push(Performed {
                        op_index: index,
                        client,
                        planned: Planned {
                            channel: Channel::Session,
                            action,
                            expect: Expect::Accept,
                            rule: Rule::Dispatch005,
                        },
                    });
                }
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

    /// A new connection initializes asking for the root channel (`root`) or for nothing:
    /// its result holds exactly one snapshot of each channel asked for, of that resource,
    /// and none of any other (INIT-002).
    async fn handshake_snapshots(&mut self, root: bool) -> Option<Finding> {
        let client_id = self.side_client_id();
        let timeout = self.cfg.timeout;
        let mut link = match Conn::connect(&self.url, timeout, "routine", &client_id).await {
            Ok(link) => link.sharing(&self.invalid),
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

    /// A clientId for a new connection of a routine, unlike any other connection's.
    fn side_client_id(&mut self) -> String {
        self.side_links += 1;
        format!("ahpspec-{}-routine-{}", self.token, self.side_links)
    }

    /// A new connection, initialized with `version`, for a routine's own requests.
    async fn side(&mut self, version: &str) -> Result<Conn, Finding> {
        let client_id = self.side_client_id();
        let mut link = Conn::connect(&self.url, self.cfg.timeout, "routine", &client_id)
            .await
            .map_err(|e| (Rule::Fuzz001, "a new connection".to_owned(), e.to_string()))?
            .sharing(&self.invalid);
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
        let echo = echo_before_ping(&mut link, &self.chat, &action, timeout).await;
        self.exec.operations += 1;
        link.close().await;
        match echo {
            Some(m) if rejected(&m) => finding(
                Rule::Session010,
                "a chat action from a connection subscribed only to the session is taken",
                format!("rejected: {}", clip(&m.to_string())),
            ),
            _ => None,
        }
    }

    /// Starts a `long` turn when the chat is idle, queues `n` messages (two at least) while
    /// it runs, sets the first one again (an update) and cancels the turn: the host then
    /// takes the first queued message. The order is
    /// the always-on mirror check's to judge (PENDING-003) as the host removes the message;
    /// the routine only brings the state about, with ordinary dispatches judged as usual.
    /// Nothing is done where the profile has no `long` behaviour.
    async fn queue(&mut self, index: usize, client: usize, n: u8) -> Option<Failure> {
        self.cfg.profile.behaviour(Behaviour::Long.key())?;
        let client = client as u8;
        let idle = self.conns[0]
            .mirror()
            .state(&self.chat)
            .is_some_and(|chat| chat.get("activeTurn").is_none_or(Value::is_null));
        if idle {
            let start = Op::StartTurn {
                client,
                behaviour: Behaviour::Long,
            };
            if let Some(failure) = self.dispatch(index, &[&start]).await {
                return Some(failure);
            }
        }
        // The first message set again at the end: an update in place, not a new entry
        // (its id listed once: INV-CHAT-5), before the queue is taken.
        for id in (0..n.max(2)).chain([0]) {
            let kind = PendingKind::Queued;
            let queued = Op::SetPending { client, kind, id };
            if let Some(failure) = self.dispatch(index, &[&queued]).await {
                return Some(failure);
            }
        }
        let cancel = Op::Cancel {
            client,
            stale: false,
        };
        self.dispatch(index, &[&cancel]).await
    }
}
