//! The routines about issue 29's chat features, each only where the profile's agent
//! advertises what it needs (a host without it gives nothing, never a finding): chats
//! created from another chat — a source of a kind no agent supports (CHAT-FORK-001), a fork
//! from another session's chat (CHAT-FORK-002), a fork's history (CHAT-FORK-003), a side
//! chat's (CHAT-FORK-004), their origin after a turn (CHAT-FORK-005) —; moveChat — of a chat
//! that is not movable (CHAT-MOVE-001), within the session (SESSION-005) and to a new session
//! (CHAT-MOVE-002) —; the default a host promotes (SESSION-004); and working-directory
//! removals (SESSION-012, CHAT-008).

use serde_json::{json, Value};

use super::side::{immediate, turn_to_end};
use super::{ask, echo_before_ping, finding, refused, rejected, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::fuzz::exec::{Failure, Run};

/// A `createChat` source.
fn source(kind: &str, chat: &str, turn: &Value) -> Value {
    json!({ "kind": kind, "chat": chat, "turnId": turn })
}

impl Run<'_> {
    /// createChat in the run's session from `source` on client `client`: the answer.
    async fn create_from(
        &mut self,
        client: usize,
        chat: &str,
        source: Value,
    ) -> Result<Value, Option<Finding>> {
        let params = json!({ "channel": self.session, "chat": chat, "source": source });
        self.exec.operations += 1;
        ask(
            &mut self.conns[client],
            "createChat",
            params,
            self.cfg.timeout,
        )
        .await
    }

    /// Chats made from the run's chat's first ended turn (two ended at least, echo turns run
    /// when the chat is idle): a source of an unknown kind refused (CHAT-FORK-001); a fork
    /// holding that turn only, its origin recorded (CHAT-FORK-003); a side chat with no turns
    /// (CHAT-FORK-004); the fork's origin unchanged after a turn of its own (CHAT-FORK-005);
    /// a fork from another session's chat refused (CHAT-FORK-002).
    pub(super) async fn chat_sources(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        if !self.capable("/multipleChats") {
            return Ok(None);
        }
        self.ended_turns(index, client, 2).await?;
        let chat = self.conns[0].mirror().state(&self.chat);
        let turns = chat.and_then(|c| c["turns"].as_array().cloned());
        let Some(first) = turns.filter(|t| t.len() >= 2).map(|t| t[0].clone()) else {
            return Ok(None);
        };
        Ok(self
            .sourced_chats(index, client, &first)
            .await
            .err()
            .flatten())
    }

    async fn sourced_chats(
        &mut self,
        index: usize,
        client: usize,
        first: &Value,
    ) -> Result<(), Option<Finding>> {
        let (source_chat, turn) = (self.chat.clone(), first["id"].clone());
        let name = |what: &str| format!("ahp-chat:/{}-{what}-{index}", self.token);
        let (clone, fork, side) = (name("clone"), name("fork"), name("side"));
        let unknown = source("ahpspec-clone", &source_chat, &turn);
        let answer = self.create_from(client, &clone, unknown).await?;
        if !refused(&answer) {
            return Err(finding(
                Rule::ChatFork001,
                "an error to createChat with a source of a kind the agent does not support",
                clip(&answer.to_string()),
            ));
        }
        let origin = |kind: &str| json!({ "kind": kind, "chat": source_chat, "turnId": turn });
        let mut forked = false;
        if self.capable("/multipleChats/fork") {
            let answer = self
                .create_from(client, &fork, source("fork", &source_chat, &turn))
                .await?;
            forked = !refused(&answer);
            let state = match forked {
                true => self.fresh(&fork).await.unwrap_or(Value::Null),
                false => Value::Null,
            };
            let copied = state["turns"].as_array().map(Vec::as_slice);
            let whole = copied.is_some_and(|t| {
                t.len() == 1 && t[0]["message"]["text"] == first["message"]["text"]
            });
            if forked && !state.is_null() && (!whole || state["origin"] != origin("fork")) {
                return Err(finding(
                    Rule::ChatFork003,
                    &format!(
                        "a fork at the chat's first turn holding that turn only, origin {}",
                        origin("fork")
                    ),
                    format!(
                        "{} turns, origin {}",
                        copied.map_or(0, <[Value]>::len),
                        state["origin"]
                    ),
                ));
            }
        }
        if self.capable("/multipleChats/sideChat") {
            let mut side_source = source("sideChat", &source_chat, &turn);
            side_source["selection"] = json!({ "text": "  picked\ntext  " });
            let answer = self.create_from(client, &side, side_source).await?;
            let state = match refused(&answer) {
                false => self.fresh(&side).await.unwrap_or(Value::Null),
                true => Value::Null,
            };
            let turns = state["turns"].as_array().map_or(0, Vec::len);
            let empty = turns == 0 && state.get("activeTurn").is_none_or(Value::is_null);
            if !state.is_null() && (!empty || state["origin"]["kind"] != "sideChat") {
                return Err(finding(
                    Rule::ChatFork004,
                    "a side chat with no turns, its origin of kind sideChat",
                    format!("{turns} turns, origin {}", state["origin"]),
                ));
            }
        }
        if forked {
            self.origin_kept(index, &fork, origin("fork")).await?;
        }
        self.foreign_fork(index, client).await
    }

    /// A turn run in chat `chat` (on a connection of its own) leaves its origin as it was
    /// created, in the chat and in the session's catalog (CHAT-FORK-005).
    async fn origin_kept(
        &mut self,
        index: usize,
        chat: &str,
        origin: Value,
    ) -> Result<(), Option<Finding>> {
        let Some(turn) = self.turn_of("echo", "fork", index) else {
            return Ok(());
        };
        let timeout = self.cfg.timeout;
        let mut link = self
            .side(crate::client::DEFAULT_OFFER)
            .await
            .map_err(Some)?;
        self.exec.operations += 2;
        let ended = match ask(&mut link, "subscribe", immediate(chat), timeout).await {
            Ok(answer) if !refused(&answer) => {
                let (id, text, now) = &turn;
                turn_to_end(&mut link, chat, (id, text, now.clone()), timeout).await
            }
            _ => None,
        };
        link.close().await;
        if ended.is_none() {
            return Ok(());
        }
        let state = self.fresh(chat).await.unwrap_or(Value::Null);
        let session = self.session.clone();
        let listed = self.fresh(&session).await.unwrap_or(Value::Null);
        let entry = listed["chats"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["resource"] == chat);
        let kept = state["origin"] == origin && entry.is_none_or(|e| e["origin"] == origin);
        if !state.is_null() && !kept {
            return Err(finding(
                Rule::ChatFork005,
                &format!("the fork's origin {origin} unchanged after a turn of its own, in the chat and the catalog"),
                format!(
                    "chat origin {}, catalog entry {}",
                    state["origin"],
                    entry.map_or(Value::Null, |e| e["origin"].clone())
                ),
            ));
        }
        Ok(())
    }

    /// A fork into the run's session from the default chat of a session of the routine's
    /// own, at a turn run there: refused (CHAT-FORK-002).
    async fn foreign_fork(&mut self, index: usize, client: usize) -> Result<(), Option<Finding>> {
        if !self.capable("/multipleChats/fork") {
            return Ok(());
        }
        let Some((turn, text, now)) = self.turn_of("echo", "foreign", index) else {
            return Ok(());
        };
        let mut other = self.side_session("foreign", index, None).await?;
        let timeout = self.cfg.timeout;
        let ended = turn_to_end(&mut other.link, &other.chat, (&turn, &text, now), timeout).await;
        self.exec.operations += 1;
        let chat = format!("ahp-chat:/{}-foreign-{index}", self.token);
        let answer = match ended {
            Some(_) => Some(
                self.create_from(client, &chat, source("fork", &other.chat, &json!(turn)))
                    .await,
            ),
            None => None,
        };
        self.drop_side(other).await;
        match answer {
            Some(Ok(answer)) if !refused(&answer) => Err(finding(
                Rule::ChatFork002,
                "an error to createChat forking a chat of another session",
                clip(&answer.to_string()),
            )),
            Some(Err(found)) => Err(found),
            _ => Ok(()),
        }
    }

    /// moveChat: of the run's default chat when it is not movable, refused (CHAT-MOVE-001);
    /// of a created movable chat to the front of the session, followed by a
    /// session/chatsReordered listing every chat of the session (SESSION-005); of another to
    /// a new session, answered with that session (CHAT-MOVE-002).
    pub(super) async fn move_chat(&mut self, index: usize, client: usize) -> Option<Finding> {
        if !self.capable("/multipleChats") {
            return None;
        }
        let timeout = self.cfg.timeout;
        let default = self.conns[0].mirror().state(&self.chat)?;
        if default["movable"] != true {
            let params = json!({ "channel": self.chat, "destination": { "kind": "newSession" } });
            self.exec.operations += 1;
            match ask(&mut self.conns[client], "moveChat", params, timeout).await {
                Ok(answer) if !refused(&answer) => return finding(
                    Rule::ChatMove001,
                    "an error to moveChat of a chat that is not movable (the session's default)",
                    clip(&answer.to_string()),
                ),
                Err(found) => return found,
                Ok(_) => {}
            }
        }
        let name = |what: &str| format!("ahp-chat:/{}-{what}-{index}", self.token);
        let (front, away) = (name("front"), name("away"));
        for chat in [&front, &away] {
            let params = json!({ "channel": self.session, "chat": chat });
            self.exec.operations += 1;
            match ask(&mut self.conns[client], "createChat", params, timeout).await {
                Ok(answer) if !refused(&answer) => {}
                Ok(_) => return None,
                Err(found) => return found,
            }
        }
        if let Some(found) = self.reorder_by_move(client, &front).await {
            return Some(found);
        }
        let session = self.session.clone();
        let movable = |run: &Run<'_>, chat: &str| {
            run.conns[0].mirror().state(&session).is_some_and(|s| {
                s["chats"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["resource"] == chat && c["movable"] == true)
            })
        };
        if !movable(self, &away) {
            return None;
        }
        let params = json!({ "channel": away, "destination": { "kind": "newSession" } });
        self.exec.operations += 1;
        let answer = match ask(&mut self.conns[client], "moveChat", params, timeout).await {
            Ok(answer) => answer,
            Err(found) => return found,
        };
        let named = answer.pointer("/result/session");
        if !refused(&answer) && named.is_none_or(|s| !s.is_string() || *s == session.as_str()) {
            return finding(
                Rule::ChatMove002,
                "moveChat to a new session answered with the new session, not the one the chat left",
                clip(&answer.to_string()),
            );
        }
        None
    }

    /// moveChat of movable chat `chat` within the run's session (to its front): the
    /// session/chatsReordered the first client hears lists exactly the session's chats
    /// (SESSION-005).
    async fn reorder_by_move(&mut self, client: usize, chat: &str) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        self.settle().await;
        let session = self.session.clone();
        let before = self.conns[0].mirror().state(&session)?;
        let chats = before["chats"].as_array()?;
        let entry = chats.iter().find(|c| c["resource"] == chat)?;
        if entry["movable"] != true {
            return None;
        }
        let mut listed: Vec<String> = chats
            .iter()
            .filter_map(|c| c["resource"].as_str().map(str::to_owned))
            .collect();
        listed.sort();
        let from = self.conns[0].frame_count();
        let params =
            json!({ "channel": chat, "destination": { "kind": "session", "session": session } });
        self.exec.operations += 1;
        match ask(&mut self.conns[client], "moveChat", params, timeout).await {
            Ok(answer) if !refused(&answer) => {}
            Ok(_) => return None,
            Err(found) => return found,
        }
        let _ = self.conns[0].ping(timeout).await;
        let reorders: Vec<Value> = self.conns[0]
            .received_since(from)
            .filter(|m| {
                m["method"] == "action"
                    && m["params"]["channel"] == session.as_str()
                    && m["params"]["action"]["type"] == "session/chatsReordered"
            })
            .collect();
        for reorder in reorders {
            let mut order: Vec<String> = reorder["params"]["action"]["chats"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect();
            order.sort();
            if order != listed {
                return finding(
                    Rule::Session005,
                    &format!(
                        "session/chatsReordered listing exactly the session's chats {listed:?}"
                    ),
                    clip(&reorder.to_string()),
                );
            }
        }
        None
    }

    /// In a session of the routine's own with a second chat, the default chat disposed: a
    /// chat the host then makes the default is not movable, in its state and its catalog
    /// entry (SESSION-004).
    pub(super) async fn promote_default(&mut self, index: usize) -> Option<Finding> {
        if !self.capable("/multipleChats") {
            return None;
        }
        let timeout = self.cfg.timeout;
        let mut side = match self.side_session("promote", index, None).await {
            Ok(side) => side,
            Err(found) => return found,
        };
        let next = format!("ahp-chat:/{}-next-{index}", self.token);
        let params = json!({ "channel": side.session, "chat": next });
        self.exec.operations += 2;
        let created = ask(&mut side.link, "createChat", params, timeout).await;
        let disposed = match created {
            Ok(answer) if !refused(&answer) => {
                let params = json!({ "channel": side.chat });
                ask(&mut side.link, "disposeChat", params, timeout).await
            }
            other => other,
        };
        let _ = side.link.ping(timeout).await;
        let session = side.session.clone();
        let state = match disposed {
            Ok(answer) if !refused(&answer) => self.fresh(&session).await,
            _ => None,
        };
        let chat = match &state {
            Some(state) if state["defaultChat"] == next.as_str() => self.fresh(&next).await,
            _ => None,
        };
        self.drop_side(side).await;
        let (state, chat) = (state?, chat?);
        let entry = state["chats"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["resource"] == next.as_str());
        if chat["movable"] == true || entry.is_some_and(|e| e["movable"] == true) {
            return finding(
                Rule::Session004,
                "a chat the host made the session's default not movable, nor its catalog entry",
                format!(
                    "chat movable {}, catalog entry {}",
                    chat["movable"],
                    entry.map_or(Value::Null, Value::clone)
                ),
            );
        }
        None
    }

    /// In a session of the routine's own in the profile's two directories: a chat made in
    /// both loses the second by chat/workingDirectoryRemoved, the session keeping it
    /// (CHAT-008); session/workingDirectoryRemoved of the first, a replaceable primary, is
    /// rejected (SESSION-012).
    pub(super) async fn remove_directory(&mut self, index: usize) -> Option<Finding> {
        let directories = self.cfg.profile.working_directories.clone();
        if directories.len() < 2 || !self.capable("/multipleWorkingDirectories") {
            return None;
        }
        let both = directories[..2].to_vec();
        let mut side = match self.side_session("dirs", index, Some(both.clone())).await {
            Ok(side) => side,
            Err(found) => return found,
        };
        let found = self.removals(index, &mut side, &both).await;
        self.drop_side(side).await;
        found
    }

    async fn removals(
        &mut self,
        index: usize,
        side: &mut super::side::Side,
        both: &[String],
    ) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        if self.capable("/multipleChats") {
            let chat = format!("ahp-chat:/{}-dirs-{index}", self.token);
            let params =
                json!({ "channel": side.session, "chat": chat, "workingDirectories": both });
            self.exec.operations += 3;
            let made = ask(&mut side.link, "createChat", params, timeout).await;
            let subscribed = match made {
                Ok(answer) if !refused(&answer) => {
                    ask(&mut side.link, "subscribe", immediate(&chat), timeout).await
                }
                other => other,
            };
            let action = json!({ "type": "chat/workingDirectoryRemoved", "directory": both[1] });
            let echo = match subscribed {
                Ok(answer) if !refused(&answer) => {
                    echo_before_ping(&mut side.link, &chat, &action, timeout).await
                }
                _ => None,
            };
            if echo.as_ref().is_some_and(|e| !rejected(e)) {
                let _ = side.link.ping(timeout).await;
                let session = side.session.clone();
                let state = self.fresh(&session).await?;
                let kept = state["workingDirectories"]
                    .as_array()
                    .is_some_and(|d| d.contains(&json!(both[1])));
                if !kept {
                    return finding(
                        Rule::Chat008,
                        "the session keeps a directory a chat's chat/workingDirectoryRemoved took from the chat",
                        format!("the session's directories: {}", state["workingDirectories"]),
                    );
                }
            }
        }
        if !self.capable("/multipleWorkingDirectories/primaryReplacement") {
            return None;
        }
        let action = json!({ "type": "session/workingDirectoryRemoved", "directory": both[0] });
        let session = side.session.clone();
        let echo = echo_before_ping(&mut side.link, &session, &action, timeout).await;
        self.exec.operations += 1;
        match echo {
            Some(echo) if !rejected(&echo) => finding(
                Rule::Session012,
                "session/workingDirectoryRemoved of the first directory, a replaceable primary, rejected",
                format!("accepted: {}", clip(&echo.to_string())),
            ),
            _ => None,
        }
    }
}
