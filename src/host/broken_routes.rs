//! Fault injection for delivery, subscriptions and the tool-call lifecycle (issue 12,
//! faults-d): who receives a channel's frames, what a `subscribe` answers, and tool-call
//! actions the scripted agent sends out of order or never sends. Nothing here runs for the
//! correct host.

use serde_json::{json, Value};

use super::faults::Fault;
use super::world::{to_value, ConnEntry, ConnId, World, ROOT};

impl World {
    /// Whether a connection that did not subscribe to `channel` still gets an envelope
    /// with `origin` on it: the `session-actions-to-all` fault sends client-dispatched
    /// session actions to every connection on the root channel.
    pub(super) fn leaks_to(
        &self,
        subscriptions: &std::collections::HashSet<String>,
        channel: &str,
        dispatched: bool,
    ) -> bool {
        self.fault(Fault::SessionActionsToAll)
            && dispatched
            && channel.starts_with("ahp-session:")
            && subscriptions.contains(ROOT)
    }

    /// Breaks the snapshot a `subscribe` answers as the active fault says; `windowed`:
    /// the request asked for a turn window.
    pub(super) fn break_subscribe_snapshot(&self, snapshot: &mut Value, windowed: bool) {
        if self.fault(Fault::RootSnapshotMisnamed) && snapshot["resource"] == ROOT {
            snapshot["resource"] = json!("ahp-root:/");
        }
        let turns = snapshot["state"]["turns"].as_array().map_or(0, Vec::len);
        if self.fault(Fault::CursorWithoutWindow) && !windowed && turns >= 3 {
            let first = snapshot["state"]["turns"][0]["id"]
                .as_str()
                .unwrap_or_default();
            snapshot["state"]["turnsNextCursor"] = json!(format!("before:{first}"));
        }
        if self.fault(Fault::WindowWithoutCursor) && windowed {
            if let Some(state) = snapshot["state"].as_object_mut() {
                state.remove("turnsNextCursor");
            }
        }
    }

    /// Breaks the `changes` of a `root/sessionSummaryChanged` as the active fault says.
    pub(super) fn break_summary_changes(&self, changes: &mut serde_json::Map<String, Value>) {
        if !self.fault(Fault::SummaryChatsPartial) {
            return;
        }
        if let Some(chats) = changes.get_mut("chats").and_then(Value::as_array_mut) {
            if chats.len() > 1 {
                chats.drain(..chats.len() - 1);
            }
        }
    }

    /// The contributor the `reconfirm-changes-owner` fault gives a tool call with its
    /// re-confirmation (none for the correct host).
    pub(super) fn reconfirm_contributor(&self) -> Option<Value> {
        self.fault(Fault::ReconfirmChangesOwner)
            .then(|| json!({ "kind": "mcp", "customizationId": "ahpspec-mcp" }))
    }

    /// Breaks a replay's actions as the active fault says; returns the envelope the
    /// `replay-tail-later` fault sends after the response instead (only a replay of one:
    /// the client's mirror is then still at its last seen serverSeq, and the late envelope
    /// breaks RECONNECT-003 alone, not the order of the channel).
    pub(super) fn break_replay(&self, actions: &mut Vec<Value>) -> Option<Value> {
        if self.fault(Fault::ReplayDropsDeltas) {
            actions.retain(|envelope| envelope["action"]["type"] != "chat/delta");
        }
        if self.fault(Fault::ReplayTailLater) && actions.len() == 1 {
            return actions.pop();
        }
        None
    }

    /// Whether the `root-subscribe-refused` fault refuses this `subscribe`: one to the root
    /// channel from a connection that did not subscribe to it at initialize.
    pub(super) fn refuses_root_subscribe(&self, conn: ConnId, channel: &str) -> bool {
        self.fault(Fault::RootSubscribeRefused)
            && channel == ROOT
            && self
                .conns
                .get(&conn)
                .is_some_and(|entry| !entry.subscriptions.contains(ROOT))
    }

    /// The `type` of a replay response: `current` for an empty one under the
    /// `empty-replay-renamed` fault.
    pub(super) fn replay_kind(&self, actions: &[Value], missing: &[String]) -> &'static str {
        if self.fault(Fault::EmptyReplayRenamed) && actions.is_empty() && missing.is_empty() {
            "current"
        } else {
            "replay"
        }
    }

    /// Applies part of a rejected client action behind the reducers' back, as the active
    /// fault says.
    pub(super) fn apply_rejected(&mut self, channel: &str, action: &Value) {
        let session = match action["type"].as_str() {
            Some("chat/workingDirectorySet") if self.fault(Fault::RejectedStillApplied) => {
                let (Some(entry), Some(directory)) =
                    (self.chats.get_mut(channel), action["directory"].as_str())
                else {
                    return;
                };
                entry.state.working_directories = Some(vec![directory.to_owned()]);
                entry.session.clone()
            }
            Some("session/titleChanged")
                if self.fault(Fault::MalformedTitleApplied) && !action["title"].is_string() =>
            {
                let Some(entry) = self.sessions.get_mut(channel) else {
                    return;
                };
                entry.state.title = action["title"].to_string();
                channel.to_owned()
            }
            _ => return,
        };
        self.sync_projections(&session);
    }

    /// Changes the tool call a client just confirmed (or whose result it confirmed) behind
    /// the reducers' back, as the active fault says; `before`: the chat before the action.
    pub(super) fn break_confirmed_call(
        &mut self,
        chat: &str,
        action: &Value,
        before: Option<&Value>,
    ) {
        let result = action["type"] == "chat/toolCallResultConfirmed";
        let denied = action["approved"] == false;
        let restore_input =
            self.fault(Fault::EditedInputIgnored) && action.get("editedToolInput").is_some();
        let drop_option =
            self.fault(Fault::SelectedOptionDropped) && action.get("selectedOptionId").is_some();
        let relabel = match (result, denied) {
            (false, true) if self.fault(Fault::DenialAsSkip) => Some(("denied", "skipped")),
            (true, true) if self.fault(Fault::ResultDenialAsDenial) => {
                Some(("result-denied", "denied"))
            }
            _ => None,
        };
        if !restore_input && !drop_option && relabel.is_none() {
            return;
        }
        let id = &action["toolCallId"];
        let original_input = before
            .and_then(|before| active_tool_call(before, id))
            .map(|call| call["toolInput"].clone());
        let Some(entry) = self.chats.get_mut(chat) else {
            return;
        };
        let mut state = to_value(&entry.state);
        let Some(call) = active_tool_call_mut(&mut state, id) else {
            return;
        };
        if let (true, Some(input)) = (restore_input, original_input) {
            call["toolInput"] = input;
        }
        if let (true, Some(call)) = (drop_option, call.as_object_mut()) {
            call.remove("selectedOption");
        }
        if let Some((_, to)) = relabel.filter(|(from, _)| call["reason"] == *from) {
            call["reason"] = json!(to);
        }
        if let Ok(state) = serde_json::from_value(state) {
            entry.state = state;
        }
    }

    /// The root state of root snapshots; the `root-lists-sessions` fault adds the session
    /// list that belongs to `listSessions`.
    pub(super) fn root_state_json(&self) -> Value {
        let mut state = to_value(&self.root);
        if self.fault(Fault::RootListsSessions) {
            state["sessions"] = json!(self.sessions.keys().collect::<Vec<_>>());
        }
        state
    }

    /// Called before the agent of a turn `starter` started in `chat` acts on the world:
    /// the `turn-stream-to-starter-only` fault restricts who receives what it emits (until
    /// the agent lets go of the world, which resets `turn_audience`).
    pub(super) fn enter_turn(&mut self, chat: &str, starter: Option<&str>) {
        let session = self.chats.get(chat).map(|entry| entry.session.clone());
        let restricted =
            self.fault(Fault::TurnStreamToStarterOnly) || self.fault(Fault::TurnEndElsewhere);
        if let (true, Some(starter), Some(session)) = (restricted, starter, session) {
            self.turn_audience = Some((starter.to_owned(), session));
        }
    }

    /// Whether `conn` may receive the envelope of `kind` being emitted on `channel` (always,
    /// unless the `turn-stream-to-starter-only` or `turn-end-elsewhere` fault restricts it).
    pub(super) fn in_turn_audience(&self, conn: &ConnEntry, channel: &str, kind: &str) -> bool {
        let Some((starter, session)) = &self.turn_audience else {
            return true;
        };
        let starts = conn.client_id.as_deref() == Some(starter.as_str());
        // With both faults, the starter-only one decides: withholding the end from the
        // starter too would leave nobody but the session's subscribers a turn end, a
        // failure (TURN-002) neither fault makes alone.
        if self.fault(Fault::TurnStreamToStarterOnly) {
            return starts || conn.subscriptions.contains(session);
        }
        let ending = matches!(
            kind,
            "chat/turnComplete" | "chat/turnCancelled" | "chat/error"
        );
        let elsewhere = self.conns.values().any(|other| {
            other.client_id.as_deref() != Some(starter.as_str())
                && other.subscriptions.contains(channel)
        });
        !(ending && starts && elsewhere)
    }

    /// The `tool-delta-before-start` fault: a first input delta for a tool call the chat
    /// does not have yet (the reducers ignore it).
    pub(super) fn early_tool_delta(&mut self, chat: &str, turn_id: &str, tool_call_id: &str) {
        if self.fault(Fault::ToolDeltaBeforeStart) {
            self.emit_chat(
                chat,
                json!({ "type": "chat/toolCallDelta", "turnId": turn_id,
                        "toolCallId": tool_call_id, "content": "" }),
            );
        }
    }
}

/// The tool call `id` of the chat's active turn (chat state as JSON).
fn active_tool_call<'a>(state: &'a Value, id: &Value) -> Option<&'a Value> {
    state["activeTurn"]["responseParts"]
        .as_array()?
        .iter()
        .map(|part| &part["toolCall"])
        .find(|call| call["toolCallId"] == *id)
}

fn active_tool_call_mut<'a>(state: &'a mut Value, id: &Value) -> Option<&'a mut Value> {
    state
        .pointer_mut("/activeTurn/responseParts")?
        .as_array_mut()?
        .iter_mut()
        .map(|part| &mut part["toolCall"])
        .find(|call| call["toolCallId"] == *id)
}
