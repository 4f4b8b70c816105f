//! Routines for the reach misses benches/README.md lists (issue 24): handshakes offering a
//! later 1.x minor (VERSION-003) and a 0.9.x client beside a turn that emits a newer action
//! (VERSION-009); the lifecycle of a session whose creation failed (LIFECYCLE-004); a
//! malformed title change on the live session (DISPATCH-007); a message queued on an idle
//! chat (PENDING-004); and a host tool call's stream and its inputNeeded entry (TOOL-002,
//! SESSION-008).

use serde_json::{json, Value};

use super::side::{heard_on, immediate, snapshot_state, turn_to_end};
use super::{ask, echo_before_ping, finding, Finding};
use crate::checks::frame::{clip, parse_version};
use crate::checks::invariants::tool_calls;
use crate::checks::Rule;
use crate::client::{Conn, Offer, DEFAULT_OFFER};
use crate::fuzz::exec::{Failure, Run};
use crate::fuzz::ops::{Behaviour, Op, PendingKind};

/// A version of 1.x later than any the protocol has published, which a 1.x host accepts.
const LATER_MINOR: &str = "1.7.0";
/// A 0.9.x version, older than the actions issue 29 added.
const OLD_VERSION: &str = "0.9.0";

impl Run<'_> {
    /// A new connection offering only a later 1.x minor is initialized (VERSION-003); a
    /// 0.9.x connection subscribed to a routine session's chat while a `canvases` turn runs
    /// there receives no action introduced after the version it negotiated (VERSION-009).
    pub(super) async fn versions(&mut self, index: usize) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let client_id = format!("ahpspec-{}-later", self.token);
        let mut link = match Conn::connect(&self.url, timeout, "later", &client_id).await {
            Ok(link) => link.sharing(&self.invalid),
            Err(error) => return finding(Rule::Fuzz001, "a new connection", error.to_string()),
        };
        let answer = link.initialize(&Offer::of([LATER_MINOR]), timeout).await;
        link.close().await;
        self.exec.operations += 1;
        if let Err(error) = answer {
            return finding(
                Rule::Version003,
                &format!("a result to initialize offering {LATER_MINOR} (any >=1.0.0 <2.0.0)"),
                format!("{error:?}"),
            );
        }
        self.old_client_beside(index).await
    }

    async fn old_client_beside(&mut self, index: usize) -> Option<Finding> {
        let (turn, text, now) = self.turn_of("canvases", "canvases", index)?;
        let timeout = self.cfg.timeout;
        let mut side = match self.side_session("old", index, None).await {
            Ok(side) => side,
            Err(found) => return found,
        };
        // A host that does not speak 0.9.x has nothing to judge here.
        let old = self.side(OLD_VERSION).await.ok();
        let mut found = None;
        if let Some(mut old) = old {
            let negotiated = old.frame_count();
            self.exec.operations += 2;
            let subscribed = ask(&mut old, "subscribe", immediate(&side.chat), timeout).await;
            if subscribed.is_ok_and(|a| snapshot_state(&a).is_some()) {
                let ended = turn_to_end(&mut side.link, &side.chat, (&turn, &text, now), timeout);
                if ended.await.is_some() {
                    let _ = old.ping(timeout).await;
                    found = self.newer_than(&old, negotiated);
                }
            }
            old.close().await;
        }
        self.drop_side(side).await;
        found
    }

    /// An action `old` received that its negotiated version does not have (the schemas' map
    /// of the version each action type was introduced in).
    fn newer_than(&self, old: &Conn, from: usize) -> Option<Finding> {
        let mut received = old.received_since(0);
        let negotiated = received
            .find_map(|m| m.pointer("/result/protocolVersion").cloned())
            .and_then(|v| v.as_str().and_then(parse_version))?;
        let introduced = &self.cfg.schemas.map.introduced_in;
        let newer = old.received_since(from).find(|m| {
            m["method"] == "action"
                && m["params"]["action"]["type"]
                    .as_str()
                    .and_then(|kind| introduced.get(kind))
                    .is_some_and(|v| *v > negotiated)
        })?;
        let (a, b, c) = negotiated;
        finding(
            Rule::Version009,
            &format!("only action types of the negotiated version {a}.{b}.{c}"),
            clip(&newer.to_string()),
        )
    }

    /// A session made with the profile's failing provider: its snapshot's lifecycle, once
    /// creation failed, is `failed` (LIFECYCLE-004). Nothing without `failing-provider`.
    pub(super) async fn failed_lifecycle(&mut self, index: usize) -> Option<Finding> {
        let provider = self.cfg.profile.behaviour("failing-provider")?.to_owned();
        let timeout = self.cfg.timeout;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        let session = self.missing("failing", index);
        let params = json!({ "channel": session, "provider": provider });
        self.exec.operations += 2;
        let created = ask(&mut link, "createSession", params, timeout).await;
        let state = match created {
            // Refused at once (-32002) is the other form LIFECYCLE-006 allows: no snapshot.
            Ok(answer) if answer.get("result").is_some() => {
                let subscribed = ask(&mut link, "subscribe", immediate(&session), timeout).await;
                let state = subscribed.ok().as_ref().and_then(snapshot_state);
                match state {
                    Some(state) if state["lifecycle"] == "creating" => {
                        heard_on(&mut link, &session, "session/creationFailed", timeout).await;
                        self.fresh(&session).await
                    }
                    other => other,
                }
            }
            _ => None,
        };
        link.close().await;
        let lifecycle = state?["lifecycle"].clone();
        if !matches!(lifecycle.as_str(), Some("creating" | "ready" | "failed")) {
            return finding(
                Rule::Lifecycle004,
                "a lifecycle of creating, ready or failed in the snapshot of a session whose creation failed",
                format!("lifecycle {lifecycle}"),
            );
        }
        None
    }

    /// session/titleChanged with a title that is no string, dispatched to the live session
    /// on a connection of its own: it is not applied — its echo is a rejection, and the
    /// session's title (a fresh snapshot) is unchanged (DISPATCH-007). The sequence's clients
    /// are told the dispatch was sent invalid: an accepted echo they get of it is this
    /// rule's, not the schema check's.
    pub(super) async fn malformed_title(&mut self) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let session = self.session.clone();
        let before = self.fresh(&session).await?["title"].clone();
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        self.exec.operations += 2;
        let subscribed = ask(&mut link, "subscribe", immediate(&session), timeout).await;
        let mut applied = None;
        if subscribed.is_ok_and(|a| snapshot_state(&a).is_some()) {
            let action =
                json!({ "type": "session/titleChanged", "title": { "text": "fz-malformed" } });
            let echo = echo_before_ping(&mut link, &session, &action, timeout).await;
            link.foresee(&self.cfg.schemas);
            // An echo without rejectionReason tells every subscriber to apply it.
            applied = echo.filter(|m| m["params"]["rejectionReason"].is_null());
        }
        link.close().await;
        if let Some(echo) = applied {
            return finding(
                Rule::Dispatch007,
                "a malformed session/titleChanged rejected (its echo with rejectionReason)",
                clip(&echo.to_string()),
            );
        }
        let after = self.fresh(&session).await?["title"].clone();
        if after != before {
            return finding(
                Rule::Dispatch007,
                &format!("a malformed session/titleChanged not applied: the title still {before}"),
                format!("title {after}"),
            );
        }
        None
    }

    /// A message queued while the chat is idle (no turn, no queue): the host takes it at
    /// once — no longer queued, or a turn running — by the end of a round trip (PENDING-004).
    /// Only where the profile has `long` (queued messages start long turns).
    pub(super) async fn queue_on_idle(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        let chat = self.conns[0]
            .mirror()
            .state(&self.chat)
            .unwrap_or(Value::Null);
        let queued = |c: &Value| c["queuedMessages"].as_array().map_or(0, Vec::len);
        let idle = chat.get("activeTurn").is_none_or(Value::is_null) && queued(&chat) == 0;
        if !idle || self.cfg.profile.behaviour(Behaviour::Long.key()).is_none() {
            return Ok(None);
        }
        let queue = Op::SetPending {
            client: client as u8,
            kind: PendingKind::Queued,
            id: 0,
        };
        if let Some(failure) = self.dispatch(index, &[&queue]).await {
            return Err(failure);
        }
        self.catch_up(true).await;
        let chat = self.conns[0]
            .mirror()
            .state(&self.chat)
            .unwrap_or(Value::Null);
        let running = chat.get("activeTurn").is_some_and(|t| !t.is_null());
        if !running && queued(&chat) > 0 {
            return Ok(finding(
                Rule::Pending004,
                "a message queued on an idle chat taken at once: removed from the queue, its turn started",
                clip(&chat["queuedMessages"].to_string()),
            ));
        }
        Ok(None)
    }

    /// A `tool-ask` turn started when the chat is idle: no chat/toolCallDelta for a tool
    /// call before its chat/toolCallStart, in everything the first client received
    /// (TOOL-002); the session's toolConfirmation entry names the chat's active turn
    /// (SESSION-008).
    pub(super) async fn tool_order(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        let chat = self.conns[0]
            .mirror()
            .state(&self.chat)
            .unwrap_or(Value::Null);
        let idle = chat.get("activeTurn").is_none_or(Value::is_null);
        if idle
            && self
                .cfg
                .profile
                .behaviour(Behaviour::ToolAsk.key())
                .is_some()
        {
            let start = Op::StartTurn {
                client: client as u8,
                behaviour: Behaviour::ToolAsk,
            };
            if let Some(failure) = self.dispatch(index, &[&start]).await {
                return Err(failure);
            }
        }
        if let Some(found) = self.delta_before_start() {
            return Ok(Some(found));
        }
        Ok(self.entries_name_the_active_turn())
    }

    /// TOOL-002 over the first client's frames of the run's chat: the tool-call actions of
    /// turns whose start those frames hold (a reconnected client's frames begin mid-turn),
    /// rejected ones left out (a stale confirmation names a call that never started).
    fn delta_before_start(&self) -> Option<Finding> {
        let mut turns = std::collections::HashSet::new();
        let mut started = std::collections::HashSet::new();
        for m in self.conns[0].received_since(0) {
            let rejected = m["params"]
                .get("rejectionReason")
                .is_some_and(|r| !r.is_null());
            if m["method"] != "action" || m["params"]["channel"] != self.chat.as_str() || rejected {
                continue;
            }
            let action = &m["params"]["action"];
            let turn = action["turnId"].to_string();
            let key = (turn.clone(), action["toolCallId"].to_string());
            match action["type"].as_str() {
                Some("chat/turnStarted") => {
                    turns.insert(turn);
                }
                Some("chat/toolCallStart") => {
                    started.insert(key);
                }
                Some(kind)
                    if kind.starts_with("chat/toolCall")
                        && turns.contains(&turn)
                        && !started.contains(&key) =>
                {
                    return finding(
                        Rule::Tool002,
                        "chat/toolCallStart before any other action for its toolCallId",
                        format!("first {}", clip(&m.to_string())),
                    );
                }
                _ => {}
            }
        }
        None
    }

    /// SESSION-008 for the toolConfirmation entries of the run's chat, as the first client
    /// sees the session and the chat.
    fn entries_name_the_active_turn(&self) -> Option<Finding> {
        let mirror = self.conns[0].mirror();
        let (session, chat) = (mirror.state(&self.session)?, mirror.state(&self.chat)?);
        let turn = chat.get("activeTurn").filter(|t| !t.is_null())?;
        let waiting: Vec<&Value> = tool_calls(turn)
            .filter(|c| c["status"] == "pending-confirmation")
            .map(|c| &c["toolCallId"])
            .collect();
        let stale = session["inputNeeded"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["kind"] == "toolConfirmation" && e["chat"] == self.chat.as_str())
            .filter(|e| waiting.contains(&&e["toolCall"]["toolCallId"]))
            .find(|e| e["turnId"] != turn["id"])?;
        finding(
            Rule::Session008,
            &format!(
                "the toolConfirmation entry naming the chat's active turn {}",
                turn["id"]
            ),
            clip(&stale.to_string()),
        )
    }
}
