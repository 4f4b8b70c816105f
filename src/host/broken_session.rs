//! Fault injection for the session, status, pending-message and input-request rules
//! (issue 12): actions a correct host never sends, and state changed behind the reducers'
//! back, each reached only under its fault.

use ahp_types::state::ResponsePart;
use serde_json::{json, Value};

use super::faults::Fault;
use super::world::{to_value, ChannelKind, ConnId, World};

/// The IsRead status flag.
const IS_READ: u32 = 32;

impl World {
    /// The side effects the active fault adds to an accepted client action on `channel`
    /// (`before`: the chat's state before it, as JSON), run before the correct ones.
    pub(super) fn break_after_accept(
        &mut self,
        channel: &str,
        type_name: &str,
        action: &Value,
        before: Option<&Value>,
    ) {
        match type_name {
            "chat/turnStarted" if self.fault(Fault::TurnKeepsRead) => {
                self.restore_read_flag(channel, before);
            }
            "chat/isReadChanged" if self.fault(Fault::ReadUnapplied) => {
                self.keep_read_flag(channel, before);
            }
            "chat/pendingMessageSet"
                if action["kind"] == "queued" && self.fault(Fault::QueuedIdleNotRemoved) =>
            {
                self.consume_queue_unannounced(channel);
            }
            "chat/pendingMessageSet"
                if action["kind"] == "steering" && self.fault(Fault::SteeringConsumedIdle) =>
            {
                self.consume_idle_steering(channel);
            }
            "chat/inputCompleted" if self.fault(Fault::InputAnswersDropped) => {
                self.drop_final_answers(channel, action);
            }
            "chat/queuedMessagesReordered" if self.fault(Fault::ReorderDrops) => {
                self.drop_unordered_queued(channel, action);
            }
            "chat/inputAnswerChanged" if self.fault(Fault::DraftsOverwritten) => {
                self.clear_other_answers(channel, action);
            }
            "session/isArchivedChanged" if self.fault(Fault::ArchiveMarksRead) => {
                self.mark_archived_read(channel, action);
            }
            _ => {}
        }
    }

    /// The response parts of the chat's active turn, as JSON (`None` without one).
    fn active_parts(&self, chat: &str) -> Option<Value> {
        let turn = self.chats.get(chat)?.state.active_turn.as_ref()?;
        Some(to_value(&turn.response_parts))
    }

    /// Resolves every open input request of the chat's active turn with `cancel`, as a
    /// host that cleans requests up before a turn ends would (INPUT-005 wants them left
    /// unanswered in the ended turn).
    pub(super) fn cancel_open_requests(&mut self, chat: &str) {
        let Some(parts) = self.active_parts(chat) else {
            return;
        };
        let open: Vec<Value> = parts
            .as_array()
            .into_iter()
            .flatten()
            .filter(|part| {
                part["kind"] == "inputRequest" && part.get("response").is_none_or(Value::is_null)
            })
            .map(|part| part["request"]["id"].clone())
            .collect();
        for request_id in open {
            self.emit_chat(
                chat,
                json!({ "type": "chat/inputCompleted", "requestId": request_id,
                        "response": "cancel" }),
            );
        }
    }

    /// Clears, with host `chat/inputAnswerChanged` actions, every answer of the request
    /// other than the question the accepted client action `answered` just set.
    pub(super) fn clear_other_answers(&mut self, chat: &str, answered: &Value) {
        let Some(parts) = self.active_parts(chat) else {
            return;
        };
        let request = parts
            .as_array()
            .into_iter()
            .flatten()
            .map(|part| &part["request"])
            .find(|request| request["id"] == answered["requestId"]);
        let others: Vec<String> = request
            .and_then(|request| request["answers"].as_object())
            .into_iter()
            .flat_map(|answers| answers.keys())
            .filter(|question| answered["questionId"] != question.as_str())
            .cloned()
            .collect();
        for question in others {
            self.emit_chat(
                chat,
                json!({ "type": "chat/inputAnswerChanged", "requestId": answered["requestId"],
                        "questionId": question }),
            );
        }
    }

    /// Starts the next queued message of an idle chat with `chat/turnStarted` alone (the
    /// reducer drops it from the queue), skipping the `chat/pendingMessageRemoved` first
    /// step PENDING-004 asks for.
    pub(super) fn consume_queue_unannounced(&mut self, chat: &str) {
        let Some(entry) = self.chats.get(chat) else {
            return;
        };
        if entry.state.active_turn.is_some() {
            return;
        }
        let Some(next) = entry
            .state
            .queued_messages
            .as_deref()
            .and_then(|q| q.first())
        else {
            return;
        };
        let id = next.id.clone();
        let message = to_value(&next.message);
        self.start_host_turn(chat, message, &id);
    }

    /// Sets the chat's IsRead flag again when it was set in `before` (a chat state as
    /// JSON), behind the reducers' back.
    pub(super) fn restore_read_flag(&mut self, chat: &str, before: Option<&Value>) {
        let was_read = before
            .and_then(|state| state["status"].as_u64())
            .is_some_and(|status| status & u64::from(IS_READ) != 0);
        if let (true, Some(entry)) = (was_read, self.chats.get_mut(chat)) {
            entry.state.status |= IS_READ;
        }
    }

    /// Puts the chat's IsRead flag back to what it was in `before` (a chat state as JSON),
    /// behind the reducers' back.
    pub(super) fn keep_read_flag(&mut self, chat: &str, before: Option<&Value>) {
        let was = before
            .and_then(|state| state["status"].as_u64())
            .map_or(0, |status| status & u64::from(IS_READ));
        if let Some(entry) = self.chats.get_mut(chat) {
            entry.state.status = (entry.state.status & !IS_READ) | u32::try_from(was).unwrap_or(0);
        }
    }

    /// The session/isReadChanged a host that marks archived sessions read sends.
    pub(super) fn mark_archived_read(&mut self, session: &str, action: &Value) {
        if action["isArchived"] == true {
            self.emit_logged(
                session,
                json!({ "type": "session/isReadChanged", "isRead": true }),
            );
        }
    }

    /// Points the session's defaultChat back at `chat`, which was just disposed.
    pub(super) fn restore_default_chat(&mut self, session: &str, chat: &str) {
        self.emit_logged(
            session,
            json!({ "type": "session/defaultChatChanged", "defaultChat": chat }),
        );
    }

    /// Keeps the session's activity at InProgress while its inputNeeded asks for the user.
    pub(super) fn hide_session_input_needed(&mut self, session: &str) {
        if let Some(entry) = self.sessions.get_mut(session) {
            if entry.state.status & 31 == 24 {
                entry.state.status = (entry.state.status & !31) | 8;
            }
        }
    }

    /// Breaks an `inputNeeded` entry the host is about to publish as the active fault says.
    pub(super) fn break_input_entry(&self, mut entry: Value) -> Value {
        if self.fault(Fault::InputEntryStaleTurn) && entry["kind"] == "toolConfirmation" {
            if let Some(turn) = entry["turnId"].as_str() {
                entry["turnId"] = Value::String(format!("{turn}-stale"));
            }
        }
        entry
    }

    /// Whether the active fault keeps an `inputNeeded` entry out of the session: a client
    /// tool's run or a tool call's wait for a token.
    pub(super) fn entry_unmirrored(&self, entry: &Value) -> bool {
        match entry["kind"].as_str() {
            Some("toolClientExecution") => self.fault(Fault::ClientToolUnmirrored),
            Some("toolAuthentication") => self.fault(Fault::AuthWaitUnmirrored),
            _ => false,
        }
    }

    /// Whether a steering `chat/pendingMessageSet` finds the slot taken by another
    /// message (the fault then refuses to replace it).
    pub(super) fn steering_slot_taken(&self, state: &Value, action: &Value) -> bool {
        self.fault(Fault::SteeringSlotKept)
            && action["kind"] == "steering"
            && state["steeringMessage"]
                .get("id")
                .is_some_and(|id| *id != action["id"])
    }

    /// Whether the fault refuses a dispatch from `conn` to the chat `channel` because the
    /// connection is not subscribed to it.
    pub(super) fn rejects_unsubscribed(&self, conn: ConnId, channel: &str) -> bool {
        self.fault(Fault::UnsubscribedDispatchRejected)
            && self.channel_kind(channel) == Some(ChannelKind::Chat)
            && self
                .conns
                .get(&conn)
                .is_some_and(|c| !c.subscriptions.contains(channel))
    }

    /// Whether another client than `client_id` is active in the session (the fault then
    /// refuses a second active client).
    pub(super) fn other_client_active(&self, session: &str, client_id: &str) -> bool {
        self.fault(Fault::OneActiveClient)
            && self.sessions.get(session).is_some_and(|entry| {
                entry
                    .state
                    .active_clients
                    .iter()
                    .any(|client| client.client_id != client_id)
            })
    }

    /// Takes the answers off the input request part an accepted `chat/inputCompleted`
    /// just resolved.
    pub(super) fn drop_final_answers(&mut self, chat: &str, completed: &Value) {
        let Some(turn) = self
            .chats
            .get_mut(chat)
            .and_then(|entry| entry.state.active_turn.as_mut())
        else {
            return;
        };
        for part in &mut turn.response_parts {
            if let ResponsePart::InputRequest(input) = part {
                if completed["requestId"] == input.request.id.as_str() {
                    input.request.answers = None;
                }
            }
        }
    }

    /// Drops the queued messages a reorder did not name.
    pub(super) fn drop_unordered_queued(&mut self, chat: &str, reorder: &Value) {
        let named: Vec<&str> = reorder["order"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(queue) = self
            .chats
            .get_mut(chat)
            .and_then(|entry| entry.state.queued_messages.as_mut())
        {
            queue.retain(|message| named.contains(&message.id.as_str()));
        }
    }

    /// Removes the steering message of an idle chat right away.
    pub(super) fn consume_idle_steering(&mut self, chat: &str) {
        let Some(id) = self
            .chats
            .get(chat)
            .filter(|entry| entry.state.active_turn.is_none())
            .and_then(|entry| entry.state.steering_message.as_ref())
            .map(|steering| steering.id.clone())
        else {
            return;
        };
        self.emit_chat(
            chat,
            json!({ "type": "chat/pendingMessageRemoved", "kind": "steering", "id": id }),
        );
    }

    /// Lists the newest chat of a session snapshot with several chats twice.
    pub(super) fn break_session_catalog(&self, state: &mut Value) {
        if !self.fault(Fault::NewestChatListedTwice) {
            return;
        }
        if let Some(chats) = state["chats"].as_array_mut().filter(|c| c.len() > 1) {
            if let Some(newest) = chats.last().cloned() {
                chats.push(newest);
            }
        }
    }

    /// Whether the published inputNeeded entry `old` stays although its request resolved:
    /// under the fault, a chat input entry lasts while its chat's turn is active.
    pub(super) fn keeps_resolved_entry(&self, old: &Value, chats: &[(String, Value)]) -> bool {
        self.fault(Fault::InputEntryKeptUntilTurnEnd)
            && old["kind"] == "chatInput"
            && chats.iter().any(|(chat, state)| {
                old["chat"] == chat.as_str()
                    && state.get("activeTurn").is_some_and(|turn| !turn.is_null())
            })
    }

    /// Breaks the status and open input requests of a chat snapshot as the active fault
    /// says (shown resolved, or listed twice).
    pub(super) fn break_chat_status(&self, state: &mut Value) {
        if self.fault(Fault::InputNeededWithoutInProgress) {
            if let Some(status) = state["status"].as_u64().filter(|s| s & 31 == 24) {
                state["status"] = json!(status & !8);
            }
        }
        if self.fault(Fault::InputRequestListedTwice) {
            let parts = state
                .get_mut("activeTurn")
                .and_then(|turn| turn.get_mut("responseParts"))
                .and_then(Value::as_array_mut);
            if let Some(parts) = parts {
                let open: Vec<Value> = parts
                    .iter()
                    .filter(|part| {
                        part["kind"] == "inputRequest"
                            && part.get("response").is_none_or(Value::is_null)
                    })
                    .cloned()
                    .collect();
                parts.extend(open);
            }
        }
        if self.fault(Fault::InputShownResolved) {
            let parts = state
                .get_mut("activeTurn")
                .and_then(|turn| turn.get_mut("responseParts"))
                .and_then(Value::as_array_mut);
            for part in parts.into_iter().flatten() {
                if part["kind"] == "inputRequest" && part.get("response").is_none_or(Value::is_null)
                {
                    part["response"] = json!("decline");
                }
            }
        }
    }
}
