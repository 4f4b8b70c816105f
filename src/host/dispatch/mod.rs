//! Client dispatches (`dispatchAction`): the server validation tables of the chat and
//! session channels, then the side effects an accepted action has (starting or stopping
//! the agent, consuming queued messages).

use serde_json::{json, Value};

use super::faults::Fault;
use super::world::{action_type, notification, to_value, ConnId, World, ROOT};

// Issue 25, root configuration (i25b).
mod root_config;
mod validate;

pub(super) use validate::open_request;

/// Why a dispatch was refused; becomes the echo's `rejectionReason`.
type Rejection = String;

/// How the rejection of an action that does not decode begins.
const MALFORMED: &str = "malformed ";

impl World {
    /// Handles one `dispatchAction` notification from `conn`.
    pub fn client_dispatch(&mut self, conn: ConnId, params: &Value) {
        if self.fault(Fault::EchoOrderSwapped) {
            self.dispatch_swapped(conn, params);
        } else {
            self.apply_dispatch(conn, params);
        }
    }

    /// Validates one client dispatch and applies or rejects it.
    pub fn apply_dispatch(&mut self, conn: ConnId, params: &Value) {
        let client_id = match self.conns.get(&conn).and_then(|c| c.client_id.clone()) {
            Some(client_id) => client_id,
            None if self.fault(Fault::AnonymousDispatchApplied) => "anonymous".to_owned(),
            // Never apply actions from a connection that has not initialised.
            None => return,
        };
        let (Some(channel), Some(client_seq), Some(action)) = (
            params.get("channel").and_then(Value::as_str),
            params.get("clientSeq").and_then(Value::as_i64),
            params.get("action").filter(|a| a.is_object()),
        ) else {
            return;
        };
        let Some(kind) = self.channel_kind(channel) else {
            if self.echoes_missing_channel(channel) {
                self.reject(
                    conn,
                    channel,
                    action,
                    &client_id,
                    client_seq,
                    "no such channel".into(),
                );
            }
            return;
        };
        let checked = if self.rejects_unsubscribed(conn, channel) {
            Err("subscribe to the chat before dispatching to it".into())
        } else {
            self.check_dispatch(kind, channel, action, &client_id)
        };
        match checked {
            Ok(()) => {
                self.accept(channel, action.clone(), &client_id, client_seq);
                self.read_attachments(conn, channel, action);
            }
            Err(reason)
                if reason.starts_with(MALFORMED) && self.fault(Fault::MalformedAccepted) =>
            {
                self.accept_malformed(channel, action, &client_id, client_seq);
            }
            Err(reason) => {
                self.reject(conn, channel, action, &client_id, client_seq, reason);
                self.apply_rejected(channel, action);
            }
        }
    }

    /// Echoes a client's malformed action as accepted, as it was sent (the
    /// `malformed-accepted` fault): a turn start without a usable `startedAt` starts now and
    /// runs; anything else changes nothing.
    fn accept_malformed(
        &mut self,
        channel: &str,
        action: &Value,
        client_id: &str,
        client_seq: i64,
    ) {
        let mut repaired = action.clone();
        if action["type"] == "chat/turnStarted" && !action["startedAt"].is_string() {
            repaired["startedAt"] = json!(super::world::now_iso());
        }
        let decoded = serde_json::from_value(repaired.clone())
            .unwrap_or(ahp_types::actions::StateAction::Unknown(Value::Null));
        let before = self.chats.get(channel).map(|entry| to_value(&entry.state));
        let origin = Some((client_id, client_seq));
        if self
            .emit_shown(channel, &decoded, action.clone(), origin)
            .is_err()
        {
            return;
        }
        if !matches!(decoded, ahp_types::actions::StateAction::Unknown(_)) {
            let type_name = action_type(action).unwrap_or_default().to_owned();
            self.after_accept(channel, &type_name, &repaired, before.as_ref(), client_id);
        }
    }

    /// Asks the client that started a turn for the resources its message attaches: this
    /// host serves no resources, so a resource attachment is the client's to serve, read
    /// with a host-to-client `resourceRead` (PROTOCOL §8.1). The answer is not waited for
    /// (the agent works from the message text), and a -32601 changes nothing.
    fn read_attachments(&mut self, conn: ConnId, chat: &str, action: &Value) {
        if action["type"] != "chat/turnStarted" {
            return;
        }
        let channel = match self.chats.get(chat) {
            Some(entry) if self.fault(Fault::HostRequestWrongChannel) => entry.session.clone(),
            _ => ROOT.to_owned(),
        };
        let attachments = action["message"]["attachments"].as_array();
        for attachment in attachments.into_iter().flatten() {
            let Some(uri) = attachment["uri"]
                .as_str()
                .filter(|_| attachment["type"] == "resource")
            else {
                continue;
            };
            let id = self.fresh_id("read");
            let request = json!({ "jsonrpc": "2.0", "id": id, "method": "resourceRead",
                                  "params": { "channel": channel, "uri": uri } });
            self.send_to(conn, &request);
        }
    }

    fn reject(
        &self,
        conn: ConnId,
        channel: &str,
        action: &Value,
        client_id: &str,
        client_seq: i64,
        reason: Rejection,
    ) {
        let envelope = json!({
            "channel": channel, "action": action, "serverSeq": self.seq,
            "origin": { "clientId": client_id, "clientSeq": client_seq },
            "rejectionReason": reason,
        });
        self.send_to(conn, &notification("action", envelope));
    }

    /// Applies an accepted client action, echoes it, and runs its side effects.
    fn accept(&mut self, channel: &str, action: Value, client_id: &str, client_seq: i64) {
        let type_name = action_type(&action).unwrap_or_default().to_owned();
        let before = self.chats.get(channel).map(|entry| to_value(&entry.state));
        let root_values = (channel == ROOT)
            .then(|| {
                self.root
                    .config
                    .as_ref()
                    .map(|config| to_value(&config.values))
            })
            .flatten();
        let names_turn = action.get("turnId").is_some_and(|t| !t.is_null());
        if type_name == "chat/truncated" && names_turn && !self.fault(Fault::TruncateUnloaded) {
            self.load_all_turns(channel);
        }
        if type_name == "chat/turnCancelled" && self.fault(Fault::InputCancelledWithTurn) {
            self.cancel_open_requests(channel);
        }
        if let Err(error) = self.emit(channel, action.clone(), Some((client_id, client_seq))) {
            self.internal_errors
                .push(format!("accepted {type_name} failed: {error}"));
            return;
        }
        self.after_accept(channel, &type_name, &action, before.as_ref(), client_id);
        if self.terminals.contains_key(channel) {
            self.after_terminal_accept(channel, &action);
        }
        if channel == ROOT {
            self.break_root_config_merge(&action);
            self.break_root_config_replace(&action, root_values.as_ref());
        }
        let session = match self.chats.get(channel) {
            Some(entry) => Some(entry.session.clone()),
            // The session's summary counts its annotations.
            None => match self.annotations.get(channel) {
                Some(entry) => Some(entry.session.clone()),
                None => self
                    .sessions
                    .contains_key(channel)
                    .then(|| channel.to_owned()),
            },
        };
        if let Some(session) = session {
            self.sync_projections(&session);
        }
    }

    fn after_accept(
        &mut self,
        chat: &str,
        type_name: &str,
        action: &Value,
        before: Option<&Value>,
        client_id: &str,
    ) {
        self.break_after_accept(chat, type_name, action, before);
        match type_name {
            "chat/turnStarted" => {
                let turn_id = action["turnId"].as_str().unwrap_or_default();
                let text = action["message"]["text"].as_str().unwrap_or_default();
                self.run_message(chat, turn_id, text, Some(client_id.to_owned()));
            }
            "chat/turnCancelled" => {
                self.stop_agent(chat);
                if self.fault(Fault::CancelKeepsStreaming) {
                    self.delta_after_cancel(chat, before);
                }
                if self.fault(Fault::CancelEndsTwice) {
                    self.ended_again_after_cancel(chat, before);
                }
                if self.fault(Fault::NoSkipOnTurnEnd) {
                    self.restore_last_turn_parts(chat, before);
                }
                if self.fault(Fault::SkipAsDenied) {
                    self.skipped_as_denied(chat);
                }
                self.consume_queue(chat);
            }
            "chat/truncated" => {
                if self.fault(Fault::TruncateKeepsActive) {
                    if let (Some(entry), Some(turn)) = (
                        self.chats.get_mut(chat),
                        before
                            .and_then(|b| b.get("activeTurn"))
                            .filter(|t| !t.is_null()),
                    ) {
                        entry.state.active_turn = serde_json::from_value(turn.clone()).ok();
                        entry.state.status = (entry.state.status & !31) | 8;
                        return;
                    }
                }
                let idle = self
                    .chats
                    .get(chat)
                    .is_some_and(|entry| entry.state.active_turn.is_none());
                if idle {
                    self.stop_agent(chat);
                }
                // Resumable turns the truncation kept stay resumable.
                if let Some(entry) = self.chats.get_mut(chat) {
                    let turns = &entry.state.turns;
                    entry
                        .resumes
                        .retain(|id, _| turns.iter().any(|turn| turn.id == *id));
                }
            }
            "chat/turnResume" => {
                let turn_id = action["turnId"].as_str().unwrap_or_default();
                if let Some(point) = self
                    .chats
                    .get_mut(chat)
                    .and_then(|e| e.resumes.remove(turn_id))
                {
                    self.start_agent(chat, &point.turn_id, point.steps, point.client_id);
                }
            }
            "session/mcpServerStartRequested"
            | "session/mcpServerStopRequested"
            | "session/mcpServerBackgroundRequested" => {
                self.after_mcp_request(chat, type_name, action);
            }
            "chat/toolCallConfirmed" | "chat/toolCallResultConfirmed" => {
                self.break_confirmed_call(chat, action, before);
            }
            "chat/workingDirectoryRemoved" if self.fault(Fault::ChatDirectoryRemovalCascades) => {
                if let Some(session) = self.chats.get(chat).map(|entry| entry.session.clone()) {
                    let removed = json!({ "type": "session/workingDirectoryRemoved",
                                          "directory": action["directory"] });
                    self.emit_logged(&session, removed);
                    self.sync_projections(&session);
                }
            }
            "chat/pendingMessageSet" if action["kind"] == "queued" => {
                if self.fault(Fault::QueuedUpdateAppends) {
                    self.append_duplicate_queued(chat, before, action);
                }
                if !self.fault(Fault::QueuedIdleKept) {
                    self.consume_queue(chat);
                }
            }
            _ if type_name.starts_with("automation") => {
                self.after_automation_accept(chat, action);
            }
            _ => {}
        }
    }

    /// Sends every turn of the chat with `chat/turnsLoaded`, so subscribers holding a
    /// windowed snapshot have the whole history before an action refers to an old turn.
    pub fn load_all_turns(&mut self, chat: &str) {
        let Some(entry) = self.chats.get(chat) else {
            return;
        };
        if !entry.windowed {
            return;
        }
        let turns = to_value(&entry.state.turns);
        self.emit_logged(chat, json!({ "type": "chat/turnsLoaded", "turns": turns }));
        if let Some(entry) = self.chats.get_mut(chat) {
            entry.windowed = false;
        }
    }

    /// Fault injection: puts back the tool calls a cancelled turn had, un-skipped.
    fn restore_last_turn_parts(&mut self, chat: &str, before: Option<&Value>) {
        let Some(parts) = before
            .and_then(|b| b.get("activeTurn"))
            .and_then(|t| t.get("responseParts"))
            .and_then(|p| serde_json::from_value(p.clone()).ok())
        else {
            return;
        };
        if let Some(turn) = self
            .chats
            .get_mut(chat)
            .and_then(|entry| entry.state.turns.last_mut())
        {
            turn.response_parts = parts;
        }
    }

    /// Fault injection: a queued set with an id that was already queued appends a second
    /// entry instead of replacing the first.
    fn append_duplicate_queued(&mut self, chat: &str, before: Option<&Value>, action: &Value) {
        let existed = before
            .and_then(|b| b["queuedMessages"].as_array())
            .is_some_and(|queue| queue.iter().any(|m| m["id"] == action["id"]));
        let Some(entry) = self.chats.get_mut(chat) else {
            return;
        };
        if !existed {
            return;
        }
        let message = json!({ "id": action["id"], "message": action["message"] });
        if let (Some(queue), Ok(message)) = (
            entry.state.queued_messages.as_mut(),
            serde_json::from_value(message),
        ) {
            queue.push(message);
        }
    }
}
