//! The server validation tables of the chat and session channels: why a client dispatch
//! is refused (its `rejectionReason`), or nothing when it is accepted.

use ahp_types::actions::StateAction;
use serde_json::Value;

use super::Rejection;
use crate::host::catalog::action_info;
use crate::host::faults::Fault;
use crate::host::world::{action_type, to_value, ChannelKind, ChatEntry, World};

/// What the chat rules look at besides the action: the chat, its state as JSON, its
/// active turn and who dispatched.
#[derive(Clone, Copy)]
struct ChatContext<'a> {
    entry: &'a ChatEntry,
    state: &'a Value,
    active: Option<&'a Value>,
    client_id: &'a str,
}

impl World {
    pub(super) fn check_dispatch(
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
            .map_err(|e| format!("{}{type_name} action: {e}", super::MALFORMED))?;
        if matches!(decoded, StateAction::Unknown(_)) {
            return Err(format!("{}{type_name} action", super::MALFORMED));
        }
        // Each fault accepts its own kind of host-only action: the changeset channel's
        // (CHANGESET-001), a run's (AUTOMATION-019) or the others (DISPATCH-006).
        let accepted_anyway = if type_name.starts_with("changeset/") {
            self.fault(Fault::ChangesetServerActionAccepted)
        } else if type_name.starts_with("automationRun/") {
            self.fault(Fault::RunActionsAccepted)
        } else {
            self.fault(Fault::ServerOnlyAccepted)
        };
        if !info.client_dispatchable && !accepted_anyway {
            return Err(format!("{type_name} may only be dispatched by the host"));
        }
        let scope = match type_name.split('/').next() {
            Some("root") => ChannelKind::Root,
            Some("session") => ChannelKind::Session,
            Some("chat") => ChannelKind::Chat,
            Some("terminal") => ChannelKind::Terminal,
            Some("changeset") => ChannelKind::Changeset,
            Some("annotations") => ChannelKind::Annotations,
            Some("canvas") => ChannelKind::Canvas,
            Some("automation") => ChannelKind::Automations,
            Some("automationRun") => ChannelKind::AutomationRun,
            _ => return Err(format!("this host has no channel for {type_name}")),
        };
        if scope != kind {
            return Err(format!("{type_name} does not belong on {channel}"));
        }
        if !info.client_dispatchable {
            return Ok(());
        }
        match kind {
            ChannelKind::Root => self.check_root_config(action),
            ChannelKind::Session => {
                self.check_session_action(channel, type_name, action, client_id)
            }
            ChannelKind::Chat => self.check_chat_action(channel, type_name, action, client_id),
            // TERM-003: only the claim's holder hands the terminal on.
            ChannelKind::Terminal
                if type_name == "terminal/claimed"
                    && !self.holds_terminal_claim(channel, client_id) =>
            {
                Err(format!("{client_id} does not hold the terminal's claim"))
            }
            ChannelKind::Terminal => Ok(()),
            ChannelKind::ResourceWatch => Err("resource watches take no client actions".into()),
            // CHANGESET-001: the review toggle is the one client changeset action (every
            // changeset of this host advertises review).
            ChannelKind::Changeset if self.fault(Fault::ChangesetReviewRefused) => {
                Err("this host takes no review changes".into())
            }
            ChannelKind::Changeset => Ok(()),
            ChannelKind::Annotations => self.check_annotation(channel, &decoded),
            ChannelKind::Canvas => Err("canvases take no client actions".into()),
            ChannelKind::Automations | ChannelKind::AutomationRun => {
                self.check_automation(channel, &decoded)
            }
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
            "session/customizationToggled"
            | "session/mcpServerStartRequested"
            | "session/mcpServerStopRequested"
            | "session/mcpServerBackgroundRequested" => {
                self.check_customization_action(session, type_name, action)
            }
            "session/workingDirectoryRemoved"
                if self.removes_primary(session, action)
                    && !self.fault(Fault::PrimaryRemovalAccepted) =>
            {
                Err("the primary working directory can be replaced, never removed".into())
            }
            "session/configChanged" if self.fault(Fault::ConfigChangeAccepted) => Ok(()),
            "session/configChanged" if self.fault(Fault::MutableConfigRefused) => {
                Err("this host takes no configuration changes".into())
            }
            "session/configChanged" => self.config_change(session, action),
            _ => Ok(()),
        }
    }

    /// Whether the action removes the session's first working directory while its agent
    /// protects it (SESSION-012).
    fn removes_primary(&self, session: &str, action: &Value) -> bool {
        let first = self
            .sessions
            .get(session)
            .and_then(|entry| entry.state.working_directories.as_ref())
            .and_then(|dirs| dirs.first());
        self.primary_is_protected(session)
            && first.is_some_and(|first| action["directory"] == first.as_str())
    }

    /// A configuration change may only touch properties the session's schema marks
    /// session-mutable (SESSION-014).
    fn config_change(&self, session: &str, action: &Value) -> Result<(), Rejection> {
        let Some(config) = self
            .sessions
            .get(session)
            .and_then(|entry| entry.state.config.as_ref())
        else {
            return Err("this session has no configuration".into());
        };
        let changes = action["config"].as_object().into_iter().flatten();
        for (key, _) in changes {
            let mutable = config
                .schema
                .properties
                .get(key)
                .is_some_and(|property| property.session_mutable == Some(true));
            if !mutable {
                return Err(format!("{key} is not a session-mutable property"));
            }
        }
        Ok(())
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
        let context = ChatContext {
            entry,
            state: &state,
            active,
            client_id,
        };
        match type_name {
            "chat/turnStarted" if self.fault(Fault::RejectsTurnStart) => {
                Err("turns are not accepted (injected fault)".into())
            }
            "chat/turnStarted" => self.turn_started(&context, action),
            "chat/turnCancelled" => self.turn_cancelled(&context, action),
            "chat/turnResume" => self.turn_resume(&context, action),
            "chat/toolCallConfirmed" => self.tool_call_confirmed(&context, action),
            "chat/toolCallResultConfirmed" => self.tool_call_result_confirmed(&context, action),
            "chat/toolCallComplete" | "chat/toolCallContentChanged" => {
                self.client_tool_update(&context, action)
            }
            "chat/inputAnswerChanged" => self.input_answer_changed(&context, action),
            "chat/inputCompleted" => self.input_completed(&context, action),
            "chat/truncated" if self.fault(Fault::RejectsTruncation) => {
                Err("truncation is not supported (injected fault)".into())
            }
            "chat/truncated" if self.rejects_truncation(context.state, action) => {
                Err("turnId names no turn of this chat".into())
            }
            "chat/pendingMessageSet" if self.steering_slot_taken(context.state, action) => {
                Err("a steering message is already set".into())
            }
            "chat/pendingMessageSet" => require_user_message(&action["message"]),
            "chat/draftChanged" => match action.get("draft").filter(|d| !d.is_null()) {
                Some(draft) => require_user_message(draft),
                None => Ok(()),
            },
            "chat/pendingMessageRemoved" => self.pending_message_removed(&context, action),
            "chat/isArchivedChanged" if self.fault(Fault::ArchiveChatRejected) => {
                Err("this host keeps every chat in view".into())
            }
            "chat/workingDirectorySet" => self.working_directory_set(&context, action),
            _ => Ok(()),
        }
    }

    /// A new turn needs a ready session, no active turn, a user message and a fresh id.
    fn turn_started(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext {
            entry,
            state,
            active,
            ..
        } = *context;
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

    /// Only the active turn can be cancelled.
    fn turn_cancelled(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext { active, .. } = *context;
        if self.fault(Fault::CancelIdleAccepted) {
            return Ok(());
        }
        match active {
            Some(turn) if turn["id"] == action["turnId"] => Ok(()),
            Some(_) => Err("turnId is not the active turn".into()),
            None => Err("no turn is active".into()),
        }
    }

    /// Only the latest turn, ended in a resumable error the agent can pick up, resumes.
    fn turn_resume(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext {
            entry,
            state,
            active,
            ..
        } = *context;
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
                    .is_some_and(|part| part["kind"] == "error" && part["resumable"] == true)
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

    /// A confirmation answers a call pending confirmation, with one of its options.
    fn tool_call_confirmed(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext { active, .. } = *context;
        let call = tool_call(active, action)?;
        if call["status"] != "pending-confirmation" && !self.fault(Fault::ConfirmNotPending) {
            return Err("the tool call is not pending confirmation".into());
        }
        if let Some(option) = action["selectedOptionId"].as_str() {
            let known = call["options"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|o| (o["id"] == option) != self.fault(Fault::OnlyOptionUnknown));
            if !known {
                return Err(format!("no confirmation option {option}"));
            }
        }
        Ok(())
    }

    /// A result confirmation answers a call pending result confirmation.
    fn tool_call_result_confirmed(
        &self,
        context: &ChatContext,
        action: &Value,
    ) -> Result<(), Rejection> {
        let ChatContext { active, .. } = *context;
        let call = tool_call(active, action)?;
        if call["status"] != "pending-result-confirmation" {
            return Err("the tool call is not pending result confirmation".into());
        }
        Ok(())
    }

    /// A client completes or updates only its own running client tool.
    fn client_tool_update(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext {
            active, client_id, ..
        } = *context;
        let call = tool_call(active, action)?;
        // Issue 25, authentication (i25c): any client may give up on a call waiting for a
        // token with a failed result (the schema's ToolCallAuthRequiredState).
        if call["status"] == "auth-required" && action["type"] == "chat/toolCallComplete" {
            return match action["result"]["success"].as_bool() {
                Some(false) => Ok(()),
                _ => Err("a tool call waiting for a token ends only with a failed result".into()),
            };
        }
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

    /// A draft answer names a question of an open request and carries a valid value.
    fn input_answer_changed(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext { active, .. } = *context;
        let request = open_request(active, &action["requestId"])?;
        let question = action["questionId"].as_str().unwrap_or_default();
        if let Some(questions) = request["questions"].as_array() {
            let inverted = self.fault(Fault::OnlyQuestionUnknown);
            if !questions.iter().any(|q| (q["id"] == question) != inverted) {
                return Err(format!("no question {question} in this request"));
            }
        }
        match action.get("answer").filter(|a| !a.is_null()) {
            Some(_) if self.fault(Fault::AnswerWithoutValue) => Ok(()),
            Some(answer) => check_answer(answer).and_then(|()| self.refuses_answer_kind(answer)),
            None => Ok(()),
        }
    }

    /// Completing a request: valid answers, and every required one submitted on accept.
    fn input_completed(&self, context: &ChatContext, action: &Value) -> Result<(), Rejection> {
        let ChatContext { active, .. } = *context;
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

    /// Removing a pending message names one that is there.
    fn pending_message_removed(
        &self,
        context: &ChatContext,
        action: &Value,
    ) -> Result<(), Rejection> {
        let ChatContext { state, .. } = *context;
        if self.fault(Fault::RemoveMissingPending) {
            return Ok(());
        }
        let id = &action["id"];
        // `removes-any-pending` asks only whether a message of the kind is pending.
        let any = self.fault(Fault::RemovesAnyPending);
        let found = match action["kind"].as_str() {
            Some("steering") => {
                state["steeringMessage"]["id"] == *id || any && state["steeringMessage"].is_object()
            }
            Some("queued") => state["queuedMessages"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["id"] == *id || any),
            _ => false,
        };
        if found && self.fault(Fault::PendingRemovalRefused) {
            return Err("pending messages are not removed on request".into());
        }
        if found {
            Ok(())
        } else {
            Err("no pending message with that kind and id".into())
        }
    }

    /// A chat's directory must be one of its session's.
    fn working_directory_set(
        &self,
        context: &ChatContext,
        action: &Value,
    ) -> Result<(), Rejection> {
        let ChatContext { entry, .. } = *context;
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
                let retained = chat.state.turns.iter().any(|turn| turn.id == end);
                if !retained || self.fault(Fault::EndTurnAttachmentRefused) {
                    return Err(format!(
                        "chat attachment endTurn {end} is not a retained completed turn of {uri}"
                    ));
                }
            }
        }
        Ok(())
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
pub(in crate::host) fn open_request<'a>(
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
