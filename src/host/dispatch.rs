//! Client dispatches (`dispatchAction`): the server validation tables of the chat and
//! session channels, then the side effects an accepted action has (starting or stopping
//! the agent, consuming queued messages).

use ahp_types::actions::StateAction;
use serde_json::{json, Value};

use super::catalog::action_info;
use super::faults::Fault;
use super::world::{action_type, notification, to_value, ChannelKind, ConnId, World, ROOT};

/// Why a dispatch was refused; becomes the echo's `rejectionReason`.
type Rejection = String;

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
            Err(reason) => {
                self.reject(conn, channel, action, &client_id, client_seq, reason);
                self.apply_rejected(channel, action);
            }
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

    fn check_dispatch(
        &self,
        kind: ChannelKind,
        channel: &str,
        action: &Value,
        client_id: &str,
    ) -> Result<(), Rejection> {
        let type_name = action_type(action).ok_or("action has no type")?;
        let info =
            action_info(type_name).ok_or_else(|| format!("unknown action type {type_name}"))?;
        let decoded: StateAction = serde_json::from_value(action.clone())
            .map_err(|e| format!("malformed {type_name} action: {e}"))?;
        if matches!(decoded, StateAction::Unknown(_)) {
            return Err(format!("malformed {type_name} action"));
        }
        if !info.client_dispatchable && !self.fault(Fault::ServerOnlyAccepted) {
            return Err(format!("{type_name} may only be dispatched by the host"));
        }
        let scope = match type_name.split('/').next() {
            Some("root") => ChannelKind::Root,
            Some("session") => ChannelKind::Session,
            Some("chat") => ChannelKind::Chat,
            _ => return Err(format!("this host has no channel for {type_name}")),
        };
        if scope != kind {
            return Err(format!("{type_name} does not belong on {channel}"));
        }
        if !info.client_dispatchable {
            return Ok(());
        }
        match kind {
            ChannelKind::Root => Err("this host has no root configuration".into()),
            ChannelKind::Session => {
                self.check_session_action(channel, type_name, action, client_id)
            }
            ChannelKind::Chat => self.check_chat_action(channel, type_name, action, client_id),
        }
    }

    fn check_session_action(
        &self,
        session: &str,
        type_name: &str,
        action: &Value,
        client_id: &str,
    ) -> Result<(), Rejection> {
        match type_name {
            "session/activeClientSet" if action["activeClient"]["clientId"] != client_id => {
                Err("activeClient.clientId must be the dispatching client's id".into())
            }
            "session/activeClientSet" if self.other_client_active(session, client_id) => {
                Err("another client is already active".into())
            }
            "session/customizationToggled" => Err("no such customization".into()),
            "session/mcpServerStartRequested"
            | "session/mcpServerStopRequested"
            | "session/mcpServerBackgroundRequested" => Err("no such MCP server".into()),
            "session/configChanged" if self.fault(Fault::ConfigChangeAccepted) => Ok(()),
            "session/configChanged" => {
                Err("this session has no session-mutable configuration".into())
            }
            _ => Ok(()),
        }
    }

    fn check_chat_action(
        &self,
        chat: &str,
        type_name: &str,
        action: &Value,
        client_id: &str,
    ) -> Result<(), Rejection> {
        let entry = self.chats.get(chat).ok_or("no such chat")?;
        let state = to_value(&entry.state);
        let active = state.get("activeTurn").filter(|t| !t.is_null());
        if self.accepts_invalid_chat_action(type_name, action, active) {
            return Ok(());
        }
        match type_name {
            "chat/turnStarted" if self.fault(Fault::RejectsTurnStart) => {
                Err("turns are not accepted (injected fault)".into())
            }
            "chat/turnStarted" => {
                let session_ready = self
                    .sessions
                    .get(&entry.session)
                    .is_some_and(|s| to_value(&s.state.lifecycle) == "ready");
                if !session_ready && !self.fault(Fault::TurnBeforeReady) {
                    return Err("the session is not ready".into());
                }
                if active.is_some() {
                    return Err("a turn is already active (TurnInProgress)".into());
                }
                require_user_message(&action["message"])?;
                if !self.fault(Fault::UnknownChatAttached) {
                    self.check_chat_attachments(&action["message"])?;
                }
                let turn_id = action["turnId"].as_str().unwrap_or_default();
                if turn_id.is_empty() {
                    return Err("turnId must not be empty".into());
                }
                let reused = state["turns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|turn| turn["id"] == turn_id);
                if reused {
                    return Err(format!("turn id {turn_id} is already used in this chat"));
                }
                let started = action["startedAt"].as_str().unwrap_or_default();
                if started.parse::<jiff::Timestamp>().is_err() {
                    return Err("startedAt is not an RFC 3339 timestamp".into());
                }
                Ok(())
            }
            "chat/turnCancelled" => {
                if self.fault(Fault::CancelIdleAccepted) {
                    return Ok(());
                }
                match active {
                    Some(turn) if turn["id"] == action["turnId"] => Ok(()),
                    Some(_) => Err("turnId is not the active turn".into()),
                    None => Err("no turn is active".into()),
                }
            }
            "chat/turnResume" => {
                if active.is_some() {
                    return Err("a turn is active".into());
                }
                let last = state["turns"].as_array().and_then(|turns| turns.last());
                let resumable = last.is_some_and(|turn| {
                    turn["id"] == action["turnId"]
                        && turn["state"] == "error"
                        && turn["responseParts"]
                            .as_array()
                            .and_then(|parts| parts.last())
                            .is_some_and(|part| {
                                part["kind"] == "error" && part["resumable"] == true
                            })
                });
                let has_work = action["turnId"]
                    .as_str()
                    .is_some_and(|id| entry.resumes.contains_key(id));
                if resumable && has_work && !self.fault(Fault::ResumeRejected) {
                    Ok(())
                } else {
                    Err("turnId is not the latest turn ending in a resumable error".into())
                }
            }
            "chat/toolCallConfirmed" => {
                let call = tool_call(active, action)?;
                if call["status"] != "pending-confirmation" && !self.fault(Fault::ConfirmNotPending)
                {
                    return Err("the tool call is not pending confirmation".into());
                }
                if let Some(option) = action["selectedOptionId"].as_str() {
                    let known = call["options"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|o| o["id"] == option);
                    if !known {
                        return Err(format!("no confirmation option {option}"));
                    }
                }
                Ok(())
            }
            "chat/toolCallResultConfirmed" => {
                let call = tool_call(active, action)?;
                if call["status"] != "pending-result-confirmation" {
                    return Err("the tool call is not pending result confirmation".into());
                }
                Ok(())
            }
            "chat/toolCallComplete" | "chat/toolCallContentChanged" => {
                let call = tool_call(active, action)?;
                if call["contributor"]["kind"] != "client" {
                    return Err("only the host completes or updates its own tools".into());
                }
                if call["contributor"]["clientId"] != client_id
                    && !self.fault(Fault::ForeignClientCompletes)
                {
                    return Err("the tool belongs to another client".into());
                }
                if call["status"] != "running" {
                    return Err("the tool call is not running".into());
                }
                Ok(())
            }
            "chat/inputAnswerChanged" => {
                let request = open_request(active, &action["requestId"])?;
                let question = action["questionId"].as_str().unwrap_or_default();
                if let Some(questions) = request["questions"].as_array() {
                    if !questions.iter().any(|q| q["id"] == question) {
                        return Err(format!("no question {question} in this request"));
                    }
                }
                match action.get("answer").filter(|a| !a.is_null()) {
                    Some(_) if self.fault(Fault::AnswerWithoutValue) => Ok(()),
                    Some(answer) => check_answer(answer),
                    None => Ok(()),
                }
            }
            "chat/inputCompleted" => {
                let request = open_request(active, &action["requestId"])?;
                if let Some(answers) = action["answers"].as_object() {
                    answers.values().try_for_each(check_answer)?;
                }
                if action["response"] == "accept" && !self.fault(Fault::AcceptUnanswered) {
                    for question in request["questions"].as_array().into_iter().flatten() {
                        if question["required"] != true {
                            continue;
                        }
                        let id = question["id"].as_str().unwrap_or_default();
                        let answer = action["answers"]
                            .get(id)
                            .or_else(|| request["answers"].get(id));
                        if answer.is_none_or(|a| a["state"] != "submitted") {
                            return Err(format!("required question {id} has no submitted answer"));
                        }
                    }
                }
                Ok(())
            }
            "chat/truncated" if self.fault(Fault::RejectsTruncation) => {
                Err("truncation is not supported (injected fault)".into())
            }
            "chat/pendingMessageSet" if self.steering_slot_taken(&state, action) => {
                Err("a steering message is already set".into())
            }
            "chat/pendingMessageSet" => require_user_message(&action["message"]),
            "chat/draftChanged" => match action.get("draft").filter(|d| !d.is_null()) {
                Some(draft) => require_user_message(draft),
                None => Ok(()),
            },
            "chat/pendingMessageRemoved" => {
                if self.fault(Fault::RemoveMissingPending) {
                    return Ok(());
                }
                let id = &action["id"];
                let found = match action["kind"].as_str() {
                    Some("steering") => state["steeringMessage"]["id"] == *id,
                    Some("queued") => state["queuedMessages"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|m| m["id"] == *id),
                    _ => false,
                };
                if found {
                    Ok(())
                } else {
                    Err("no pending message with that kind and id".into())
                }
            }
            "chat/isArchivedChanged" if self.fault(Fault::ArchiveChatRejected) => {
                Err("this host keeps every chat in view".into())
            }
            "chat/workingDirectorySet" => {
                let allowed = self
                    .sessions
                    .get(&entry.session)
                    .and_then(|s| s.state.working_directories.as_ref())
                    .is_some_and(|dirs| dirs.iter().any(|d| action["directory"] == d.as_str()));
                if allowed {
                    Ok(())
                } else {
                    Err("the directory is not one of the session's working directories".into())
                }
            }
            _ => Ok(()),
        }
    }

    /// A `chat` attachment must name an existing chat and, when it pins `endTurn`, a
    /// completed turn that chat still retains (an empty transcript is fine).
    fn check_chat_attachments(&self, message: &Value) -> Result<(), Rejection> {
        for attachment in message["attachments"].as_array().into_iter().flatten() {
            if attachment["type"] != "chat" {
                continue;
            }
            let uri = attachment["resource"].as_str().unwrap_or_default();
            let chat = self
                .chats
                .get(uri)
                .ok_or_else(|| format!("chat attachment names unknown chat {uri}"))?;
            if let Some(end) = attachment["endTurn"].as_str() {
                if !chat.state.turns.iter().any(|turn| turn.id == end) {
                    return Err(format!(
                        "chat attachment endTurn {end} is not a retained completed turn of {uri}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Applies an accepted client action, echoes it, and runs its side effects.
    fn accept(&mut self, channel: &str, action: Value, client_id: &str, client_seq: i64) {
        let type_name = action_type(&action).unwrap_or_default().to_owned();
        let before = self.chats.get(channel).map(|entry| to_value(&entry.state));
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
        let session = match self.chats.get(channel) {
            Some(entry) => Some(entry.session.clone()),
            None => self
                .sessions
                .contains_key(channel)
                .then(|| channel.to_owned()),
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
            "chat/toolCallConfirmed" | "chat/toolCallResultConfirmed" => {
                self.break_confirmed_call(chat, action, before);
            }
            "chat/pendingMessageSet" if action["kind"] == "queued" => {
                if self.fault(Fault::QueuedUpdateAppends) {
                    self.append_duplicate_queued(chat, before, action);
                }
                self.consume_queue(chat);
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

fn require_user_message(message: &Value) -> Result<(), Rejection> {
    if message["origin"]["kind"] == "user" {
        Ok(())
    } else {
        Err("clients may only send messages with origin.kind \"user\"".into())
    }
}

/// The tool call an action names, in the active turn it names.
fn tool_call<'a>(active: Option<&'a Value>, action: &Value) -> Result<&'a Value, Rejection> {
    let turn = active.ok_or("no turn is active")?;
    if turn["id"] != action["turnId"] {
        return Err("turnId is not the active turn".into());
    }
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("toolCall"))
        .find(|call| call["toolCallId"] == action["toolCallId"])
        .ok_or_else(|| "no such tool call in the active turn".into())
}

/// The unresolved input request with `request_id` in the active turn.
pub(super) fn open_request<'a>(
    active: Option<&'a Value>,
    request_id: &Value,
) -> Result<&'a Value, Rejection> {
    active
        .and_then(|turn| turn["responseParts"].as_array())
        .into_iter()
        .flatten()
        .filter(|part| {
            part["kind"] == "inputRequest" && part.get("response").is_none_or(Value::is_null)
        })
        .map(|part| &part["request"])
        .find(|request| request["id"] == *request_id)
        .ok_or_else(|| "no open input request with that requestId".into())
}

/// An answer whose state needs a value must carry one of a known kind with its payload.
fn check_answer(answer: &Value) -> Result<(), Rejection> {
    match answer["state"].as_str() {
        Some("skipped") => Ok(()),
        Some("draft" | "submitted") => {
            let value = &answer["value"];
            let payload_ok = match value["kind"].as_str() {
                Some("text" | "selected") => value["value"].is_string(),
                Some("number") => value["value"].is_number(),
                Some("boolean") => value["value"].is_boolean(),
                Some("selected-many") => value["value"].is_array(),
                _ => false,
            };
            if payload_ok {
                Ok(())
            } else {
                Err("the answer's value is missing or lacks its payload".into())
            }
        }
        _ => Err("unknown answer state".into()),
    }
}
