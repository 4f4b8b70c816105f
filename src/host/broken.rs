//! Fault injection for the checks of quiescent and tool-call state: session and chat
//! snapshots and `listSessions` entries that the host's state and actions contradict
//! (INV-SESSION-1/2/3, INV-SUMMARY-2/3 at checkpoints), and state changed behind the
//! reducers' back at a turn's end (TOOL-001, TOOL-007, INV-CHAT-6); and for the chat channel: rows
//! of its validation table skipped (CHAT-VALIDATE-*), a delta after a cancellation
//! (TURN-007), createChat answered before its actions (CHAT-001).

use ahp_types::state::{
    ResponsePart, ToolCallCancellationReason, ToolCallCancelledState, ToolCallState, Turn,
};
use serde_json::{json, Value};

use super::commands::{AfterReply, Reply};
use super::dispatch::open_request;
use super::faults::Fault;
use super::world::{ConnId, World};

/// A directory no session has: what the stray-directory fault adds.
const STRAY_DIRECTORY: &str = "file:///ahpspec-stray-directory";

impl World {
    /// Fault injection into a chat snapshot's ended turns.
    pub(super) fn break_turns(&self, state: &mut Value) {
        let negative = self.fault(Fault::NegativeDuration);
        let drop_error = self.fault(Fault::ErrorPartDropped);
        let call_twice = self.fault(Fault::ToolCallListedTwice);
        let Some(turns) = state.get_mut("turns").and_then(Value::as_array_mut) else {
            return;
        };
        if let (true, Some(newest)) = (negative, turns.last_mut()) {
            newest["duration"] = json!(-1);
        }
        for parts in turns
            .iter_mut()
            .filter(|_| call_twice)
            .filter_map(|t| t.get_mut("responseParts").and_then(Value::as_array_mut))
        {
            if let Some(call) = parts.iter().find(|p| p["kind"] == "toolCall").cloned() {
                parts.push(call);
            }
        }
        for turn in turns
            .iter_mut()
            .filter(|t| drop_error && t["state"] == "error")
        {
            if let Some(parts) = turn.get_mut("responseParts").and_then(Value::as_array_mut) {
                if parts.last().is_some_and(|p| p["kind"] == "error") {
                    parts.pop();
                }
            }
        }
    }

    /// Whether the active fault answers a dispatch to `channel`, which does not exist,
    /// with a rejection echo instead of ignoring it.
    pub(super) fn echoes_missing_channel(&self, channel: &str) -> bool {
        (self.fault(Fault::EchoMissingChannel) && channel.starts_with("ahp-session:"))
            || (self.fault(Fault::EchoMissingChat) && channel.starts_with("ahp-chat:"))
    }

    /// Whether the active fault accepts this chat action without the row of the
    /// validation table that would reject it (`active` is the chat's active turn).
    pub(super) fn accepts_invalid_chat_action(
        &self,
        type_name: &str,
        action: &Value,
        active: Option<&Value>,
    ) -> bool {
        let unknown_request = || open_request(active, &action["requestId"]).is_err();
        match type_name {
            "chat/turnResume" => self.fault(Fault::ResumeNotResumable) && active.is_none(),
            "chat/inputAnswerChanged" => {
                self.fault(Fault::AnswerUnknownRequest) && unknown_request()
            }
            "chat/inputCompleted" => {
                (self.fault(Fault::CompleteUnknownRequest) && unknown_request())
                    || (self.fault(Fault::ResolvedRequestCompletable)
                        && resolved_request(active, &action["requestId"]))
            }
            "chat/workingDirectorySet" => self.fault(Fault::OutsideDirectoryAccepted),
            _ => false,
        }
    }

    /// Fault injection: an answer of a kind this host does not take (number, selected-many)
    /// or a skipped one, refused though valid.
    pub(in crate::host) fn refuses_answer_kind(&self, answer: &Value) -> Result<(), String> {
        let narrow_kind = matches!(
            answer["value"]["kind"].as_str(),
            Some("number" | "selected-many")
        );
        if self.fault(Fault::AnswerKindsNarrow) && (narrow_kind || answer["state"] == "skipped") {
            return Err("this host takes text, boolean and selected answers only".into());
        }
        Ok(())
    }

    /// Moves the chat's modifiedAt one second past what its turn's end set, behind the
    /// reducers' back; the session catalog follows (fault injection only).
    pub(super) fn shift_modified_at(&mut self, chat: &str) {
        let session = if let Some(entry) = self.chats.get_mut(chat) {
            let Ok(at) = entry.state.modified_at.parse::<jiff::Timestamp>() else {
                return;
            };
            let later = at.as_millisecond() + 1000;
            let Ok(later) = jiff::Timestamp::from_millisecond(later) else {
                return;
            };
            entry.state.modified_at = format!("{later:.3}");
            entry.session.clone()
        } else {
            return;
        };
        self.sync_projections(&session);
    }

    /// `createChat` answered before the actions creating the chat are sent: they are held
    /// while it runs and go out after the answer (fault injection only).
    pub(super) fn create_chat_announced_late(&mut self, conn: ConnId, params: &Value) -> Reply {
        self.held_frames = Some(Vec::new());
        let result = self.create_chat(conn, params);
        let held = self.held_frames.take().unwrap_or_default();
        let after: AfterReply = Box::new(move |world: &mut World| {
            for (id, frame) in held {
                if let Some(conn) = world.conns.get(&id) {
                    conn.send_text(frame);
                }
            }
        });
        Reply {
            result,
            close_after: false,
            after: Some(after),
        }
    }

    /// Whether `chat` is the default chat of `session`.
    pub(super) fn is_default_chat(&self, session: &str, chat: &str) -> bool {
        self.sessions
            .get(session)
            .and_then(|entry| entry.state.default_chat.as_deref())
            .is_some_and(|default| default == chat)
    }

    /// Fault injection: a chunk the agent had in flight when its turn was cancelled is
    /// streamed anyway, into the last markdown part of the turn `before` held.
    pub(super) fn delta_after_cancel(&mut self, chat: &str, before: Option<&Value>) {
        let Some(turn) = before.map(|b| &b["activeTurn"]).filter(|t| !t.is_null()) else {
            return;
        };
        let part = turn["responseParts"]
            .as_array()
            .into_iter()
            .flatten()
            .rev()
            .find(|part| part["kind"] == "markdown");
        if let Some(part) = part {
            let delta = json!({ "type": "chat/delta", "turnId": turn["id"],
                                "partId": part["id"], "content": " (late)" });
            self.emit_chat(chat, delta);
        }
    }

    /// Fault injection: a cancelled turn's usage, and its ending once more, after the
    /// client's accepted cancellation.
    pub(super) fn ended_again_after_cancel(&mut self, chat: &str, before: Option<&Value>) {
        let Some(turn) = before.map(|b| &b["activeTurn"]).filter(|t| !t.is_null()) else {
            return;
        };
        let usage = json!({ "type": "chat/usage", "turnId": turn["id"],
                            "usage": { "inputTokens": 1, "outputTokens": 1 } });
        self.emit_chat(chat, usage);
        let again = json!({ "type": "chat/turnCancelled", "turnId": turn["id"], "duration": 1 });
        self.emit_chat(chat, again);
    }

    /// The chat's newest ended turn, to change behind the reducers' back.
    fn last_turn_mut(&mut self, chat: &str) -> Option<&mut Turn> {
        self.chats
            .get_mut(chat)
            .and_then(|entry| entry.state.turns.last_mut())
    }

    /// Fault injection: the tool calls the end of the last turn skipped read as denied.
    pub(super) fn skipped_as_denied(&mut self, chat: &str) {
        let Some(turn) = self.last_turn_mut(chat) else {
            return;
        };
        for part in &mut turn.response_parts {
            if let ResponsePart::ToolCall(part) = part {
                if let ToolCallState::Cancelled(call) = &mut part.tool_call {
                    if call.reason == ToolCallCancellationReason::Skipped {
                        call.reason = ToolCallCancellationReason::Denied;
                    }
                }
            }
        }
    }

    /// Fault injection: a completed host tool call with input that is the only response
    /// part of the turn that just ended reads as cancelled (skipped), as if the turn's end
    /// had skipped it.
    pub(super) fn skip_completed_tool_call(&mut self, chat: &str) {
        let Some(turn) = self.last_turn_mut(chat) else {
            return;
        };
        if let [ResponsePart::ToolCall(part)] = turn.response_parts.as_mut_slice() {
            let ToolCallState::Completed(call) = &part.tool_call else {
                return;
            };
            if call.tool_input.is_none() || call.contributor.is_some() {
                return;
            }
            let call = call.clone();
            part.tool_call = ToolCallState::Cancelled(ToolCallCancelledState {
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                display_name: call.display_name,
                intention: call.intention,
                contributor: call.contributor,
                meta: call.meta,
                invocation_message: call.invocation_message,
                tool_input: call.tool_input,
                reason: ToolCallCancellationReason::Skipped,
                reason_message: None,
                user_suggestion: None,
                selected_option: call.selected_option,
            });
        }
    }

    /// Breaks an action envelope on its way out, after the reducers applied the action:
    /// `fractional-duration` gives a turn's end half a millisecond more than its (integer)
    /// duration; `client-seq-as-string` writes the clientSeq of a title change's origin as a string.
    pub(super) fn break_envelope(&self, envelope: &mut serde_json::Map<String, Value>) {
        let kind = envelope["action"]["type"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if self.fault(Fault::FractionalDuration) && kind == "chat/turnComplete" {
            if let Some(duration) = envelope["action"]["duration"].as_i64() {
                envelope["action"]["duration"] = json!(duration as f64 + 0.5);
            }
        }
        if self.fault(Fault::ClientSeqAsString) && kind == "session/titleChanged" {
            if let Some(origin) = envelope.get_mut("origin") {
                origin["clientSeq"] = Value::String(origin["clientSeq"].to_string());
            }
        }
    }

    /// Breaks a session snapshot as the active fault says.
    pub(super) fn break_session_snapshot(&self, state: &mut Value) {
        let with_directories = state["workingDirectories"]
            .as_array()
            .is_some_and(|dirs| !dirs.is_empty());
        if self.fault(Fault::DefaultChatUnlisted) && with_directories {
            let default = state["defaultChat"].clone();
            if let Some(chats) = state["chats"].as_array_mut() {
                chats.retain(|chat| chat["resource"] != default);
            }
        }
        if self.fault(Fault::InputNeededChatUnlisted) {
            for entry in state["inputNeeded"].as_array_mut().into_iter().flatten() {
                if let Some(chat) = entry["chat"].as_str() {
                    entry["chat"] = Value::String(format!("{chat}-gone"));
                }
            }
        }
        if self.fault(Fault::ChatDirectoryStray) && with_directories {
            for chat in state["chats"].as_array_mut().into_iter().flatten() {
                add_stray_directory(chat);
            }
        }
    }

    /// Breaks a `listSessions` entry as the active fault says.
    pub(super) fn break_listed_summary(&self, entry: &mut Value) {
        if self.fault(Fault::ListedTitleStale) {
            entry["title"] = Value::String("a stale title".to_owned());
        }
        if self.fault(Fault::ListedChatTitleStale) {
            for chat in entry["chats"].as_array_mut().into_iter().flatten() {
                chat["title"] = Value::String("a stale chat title".to_owned());
            }
        }
    }

    /// Breaks the snapshot of chat `uri` as the active fault says.
    pub(super) fn break_chat_snapshot(&self, uri: &str, state: &mut Value) {
        let session_has_directories = self
            .chats
            .get(uri)
            .and_then(|chat| self.sessions.get(&chat.session))
            .and_then(|session| session.state.working_directories.as_ref())
            .is_some_and(|dirs| !dirs.is_empty());
        if self.fault(Fault::ChatDirectoryStray) && session_has_directories {
            add_stray_directory(state);
        }
        if self.fault(Fault::ChatSnapshotElsewhere) {
            state["resource"] = Value::String(format!("{uri}-elsewhere"));
        }
        if self.fault(Fault::PendingShownRunning) {
            let parts = state
                .pointer_mut("/activeTurn/responseParts")
                .and_then(Value::as_array_mut);
            for call in parts
                .into_iter()
                .flatten()
                .filter_map(|p| p.get_mut("toolCall"))
            {
                show_running(call);
            }
        }
    }
}

/// A tool call waiting for confirmation, as a running one would read (fault injection).
fn show_running(call: &mut Value) {
    if call["status"] != "pending-confirmation" {
        return;
    }
    let running = [
        "toolCallId",
        "toolName",
        "displayName",
        "intention",
        "contributor",
        "_meta",
        "toolInput",
        "invocationMessage",
    ];
    if let Some(fields) = call.as_object_mut() {
        fields.retain(|key, _| running.contains(&key.as_str()));
        fields.insert("status".into(), json!("running"));
        fields.insert("confirmed".into(), json!("not-needed"));
    }
}

/// Adds [`STRAY_DIRECTORY`] to a chat's `workingDirectories` (or its catalog entry's, so
/// the two still agree).
fn add_stray_directory(holder: &mut Value) {
    if let Some(holder) = holder.as_object_mut() {
        let dirs = holder
            .entry("workingDirectories")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(dirs) = dirs.as_array_mut() {
            dirs.push(Value::String(STRAY_DIRECTORY.to_owned()));
        } else {
            *dirs = Value::Array(vec![Value::String(STRAY_DIRECTORY.to_owned())]);
        }
    }
}

/// Whether the active turn holds the input request `request_id` already resolved.
fn resolved_request(active: Option<&Value>, request_id: &Value) -> bool {
    active
        .and_then(|turn| turn["responseParts"].as_array())
        .into_iter()
        .flatten()
        .any(|part| {
            part["kind"] == "inputRequest"
                && part["request"]["id"] == *request_id
                && part.get("response").is_some_and(|r| !r.is_null())
        })
}
