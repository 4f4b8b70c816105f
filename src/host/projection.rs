//! Host-produced projections of chat state: the session's chat catalog
//! (`session/chatUpdated`), the session's aggregated `inputNeeded` list
//! (`session/inputNeededSet/Removed`) and the root catalog summary
//! (`root/sessionSummaryChanged`). Each is recomputed from the chats and diffed against
//! what was last published, so no code path can forget an update.

use serde_json::{json, Map, Value};

use super::faults::Fault;
use ahp_types::state::{ChatState, ResponsePart};

use super::world::{to_value, World, ROOT};

/// Inlined summary members a `ChatState` shares with its `ChatSummary`.
const CHAT_SUMMARY_FIELDS: &[&str] = &[
    "resource",
    "title",
    "status",
    "activity",
    "modifiedAt",
    "changes",
    "origin",
    "movable",
    "interactivity",
    "workingDirectories",
];

/// Summary members that never appear in `root/sessionSummaryChanged`.
const IDENTITY_FIELDS: &[&str] = &["resource", "provider", "createdAt"];

const ACTIVITY_MASK: u64 = 31;
const INPUT_NEEDED: u64 = 24;
const ERROR: u64 = 2;

impl World {
    /// Brings every projection of `session` in line with its chats.
    pub fn sync_projections(&mut self, session: &str) {
        // Each chat is encoded once for both projections (the summary updates this emits
        // change the session, not the chats).
        let chats: Vec<(String, Value)> = self
            .session_chats(session)
            .into_iter()
            .filter_map(|chat| self.live_chat_json(&chat).map(|json| (chat, json)))
            .collect();
        for (chat, state) in &chats {
            self.sync_chat_summary(session, chat, state);
        }
        self.sync_input_needed(session, &chats);
        self.sync_root_summary(session);
        self.follow_automation_run(session);
    }

    /// The chat's state as JSON without what no projection reads (see also
    /// [`changes_projections`]): its finished turns and
    /// the active turn's parts other than tool calls and input requests (summaries read
    /// top-level fields, `inputNeeded` those two kinds of part). This runs after nearly
    /// every action, when a long turn's text would be most of the encoding.
    fn live_chat_json(&mut self, chat: &str) -> Option<Value> {
        let entry = self.chats.get_mut(chat)?;
        let turns = std::mem::take(&mut entry.state.turns);
        let parts = entry.state.active_turn.as_mut().map(|turn| {
            let all = std::mem::take(&mut turn.response_parts);
            turn.response_parts = all
                .iter()
                .filter(|part| {
                    matches!(
                        part,
                        ResponsePart::ToolCall(_) | ResponsePart::InputRequest(_)
                    )
                })
                .cloned()
                .collect();
            all
        });
        let json = to_value(&entry.state);
        if let (Some(turn), Some(parts)) = (entry.state.active_turn.as_mut(), parts) {
            turn.response_parts = parts;
        }
        entry.state.turns = turns;
        Some(json)
    }

    fn sync_chat_summary(&mut self, session: &str, chat: &str, state: &Value) {
        let current = chat_summary(state);
        let Some(session_entry) = self.sessions.get(session) else {
            return;
        };
        let published = session_entry
            .state
            .chats
            .iter()
            .find(|summary| summary.resource == chat)
            .map(to_value)
            .unwrap_or(Value::Null);
        let drift = self.fault(Fault::SummaryDrift);
        let read_only = self.fault(Fault::ReadNotProjected);
        let mut changes = Map::new();
        for (key, value) in &current {
            let busy_unannounced = self.fault(Fault::BusyUnannounced)
                && key == "status"
                && value.as_u64().is_some_and(|s| s & ACTIVITY_MASK == 8);
            let activity_unannounced = key == "activity" && self.fault(Fault::ActivityUnannounced);
            if key == "resource"
                || (drift && key == "modifiedAt")
                || busy_unannounced
                || activity_unannounced
            {
                continue;
            }
            if read_only && key == "status" && only_read_flag_differs(&published[key], value) {
                continue;
            }
            if published.get(key) != Some(value) {
                changes.insert(key.clone(), value.clone());
            }
        }
        if changes.is_empty() {
            return;
        }
        self.emit_logged(
            session,
            json!({ "type": "session/chatUpdated", "chat": chat, "changes": changes }),
        );
    }

    fn sync_input_needed(&mut self, session: &str, chats: &[(String, Value)]) {
        let wanted: Vec<Value> = chats
            .iter()
            .flat_map(|(chat, state)| input_needed_entries(chat, state))
            .filter(|entry| !self.entry_unmirrored(entry))
            .map(|entry| self.break_input_entry(entry))
            .collect();
        let Some(session_entry) = self.sessions.get(session) else {
            return;
        };
        let current: Vec<Value> = session_entry
            .state
            .input_needed
            .iter()
            .flatten()
            .map(to_value)
            .collect();
        let id_of = |entry: &Value| entry.get("id").cloned().unwrap_or(Value::Null);
        for old in &current {
            if self.keeps_resolved_entry(old, chats) {
                continue;
            }
            let kept = self.fault(Fault::ToolInputNeededKept) && old["kind"] == "toolConfirmation";
            let dropped = self.fault(Fault::InputEntryDroppedEarly);
            if !kept && (dropped || !wanted.iter().any(|new| id_of(new) == id_of(old))) {
                self.emit_logged(
                    session,
                    json!({ "type": "session/inputNeededRemoved", "id": id_of(old) }),
                );
            }
        }
        for new in wanted {
            if !current.contains(&new) {
                self.emit_logged(
                    session,
                    json!({ "type": "session/inputNeededSet", "request": new }),
                );
            }
        }
        if self.fault(Fault::SessionNotInputNeeded) {
            self.hide_session_input_needed(session);
        }
    }

    fn sync_root_summary(&mut self, session: &str) {
        let Some(summary) = self.session_summary(session) else {
            return;
        };
        let Some(entry) = self.sessions.get_mut(session) else {
            return;
        };
        let mut changes = Map::new();
        if let Some(fields) = summary.as_object() {
            for (key, value) in fields {
                let identity = IDENTITY_FIELDS.contains(&key.as_str());
                let repeated =
                    identity && self.config.faults.contains(Fault::SummaryChangeIdentity);
                if (!identity && entry.published_summary.get(key) != Some(value)) || repeated {
                    changes.insert(key.clone(), value.clone());
                }
            }
        }
        entry.published_summary = summary;
        if self.fault(Fault::RootChatsUnpublished) {
            changes.remove("chats");
        }
        if changes
            .keys()
            .all(|key| IDENTITY_FIELDS.contains(&key.as_str()))
        {
            return;
        }
        self.break_summary_changes(&mut changes);
        if self.fault(Fault::SummaryStatusBits) {
            if let Some(status) = changes
                .get("status")
                .and_then(Value::as_u64)
                .filter(|s| s & 31 == 8)
            {
                changes.insert("status".into(), json!(status | 1));
            }
        }
        self.notify_subscribers(
            ROOT,
            "root/sessionSummaryChanged",
            json!({ "channel": ROOT, "session": session, "changes": changes }),
        );
    }

    /// The session's root catalog entry, aggregated from its chats.
    pub fn session_summary(&self, session: &str) -> Option<Value> {
        let entry = self.sessions.get(session)?;
        let state = &entry.state;
        // Read from the typed chat states: encoding each whole (every turn) for a handful
        // of top-level members was most of a `listSessions`.
        let chats: Vec<&ChatState> = state
            .chats
            .iter()
            .filter_map(|summary| self.chats.get(&summary.resource))
            .map(|chat| &chat.state)
            .collect();
        let supplier = state
            .default_chat
            .as_ref()
            .filter(|_| !self.fault(Fault::SummaryFromLatestChat))
            .and_then(|uri| chats.iter().find(|c| c.resource == *uri))
            .or_else(|| chats.iter().max_by_key(|c| instant_of(&c.modified_at)));
        // InputNeeded, else Error, of any chat wins over the supplier's activity bits; the
        // activity text comes from the chat that gave the bits, the supplier when it has them
        // itself (session-channel.md § Chat aggregation).
        let bits = |c: &&ChatState| u64::from(c.status) & ACTIVITY_MASK;
        let promoted = [INPUT_NEEDED, ERROR]
            .into_iter()
            .find_map(|wanted| chats.iter().find(|c| bits(c) == wanted));
        let activity = promoted.or(supplier).map_or(1, bits);
        let contributor = match promoted {
            Some(chat)
                if (supplier.map(bits) != Some(bits(chat))
                    || self.fault(Fault::PromotingChatActivity))
                    && !self.fault(Fault::PromotedActivityIgnored) =>
            {
                Some(chat)
            }
            _ => supplier,
        };
        let flags = u64::from(state.status) & !ACTIVITY_MASK;
        let modified_at = chats
            .iter()
            .map(|c| c.modified_at.as_str())
            .max_by_key(|text| instant_of(text))
            .unwrap_or(&entry.created_at)
            .to_owned();
        let mut summary = Map::new();
        summary.insert("resource".into(), json!(session));
        summary.insert("provider".into(), json!(state.provider));
        summary.insert("title".into(), json!(state.title));
        summary.insert("status".into(), json!(activity | flags));
        if let Some(text) = contributor
            .and_then(|c| c.activity.as_ref())
            .filter(|_| !self.fault(Fault::SummaryActivityDropped))
        {
            summary.insert("activity".into(), json!(text));
        }
        if let Some(dirs) = &state.working_directories {
            summary.insert("workingDirectories".into(), json!(dirs));
        }
        if let Some(annotations) = &state.annotations {
            summary.insert("annotations".into(), to_value(annotations));
        }
        // An automation run's session (issue 29, i29c).
        if let Some(origin) = &state.origin {
            summary.insert("origin".into(), to_value(origin));
        }
        let created_at = if self.fault(Fault::BadTimestamp) {
            "sometime last week"
        } else {
            entry.created_at.as_str()
        };
        summary.insert("createdAt".into(), json!(created_at));
        summary.insert("modifiedAt".into(), json!(modified_at));
        let compact: Vec<Value> = chats.iter().map(|c| compact_chat(c)).collect();
        if !self.config.variants.summaries_without_chats {
            summary.insert("chats".into(), Value::Array(compact));
        }
        if let Some(default_chat) = &state.default_chat {
            summary.insert("defaultChat".into(), json!(default_chat));
        }
        Some(Value::Object(summary))
    }
}

/// A chat's entry in its session's root summary: the members of `chat` a root catalog
/// lists, in the order the summary gives them.
fn compact_chat(chat: &ChatState) -> Value {
    let mut item = Map::new();
    item.insert("resource".into(), json!(chat.resource));
    item.insert("title".into(), json!(chat.title));
    if let Some(origin) = &chat.origin {
        item.insert("origin".into(), to_value(origin));
    }
    if let Some(interactivity) = &chat.interactivity {
        item.insert("interactivity".into(), to_value(interactivity));
    }
    item.insert("status".into(), json!(chat.status));
    if let Some(changes) = &chat.changes {
        item.insert("changes".into(), to_value(changes));
    }
    Value::Object(item)
}

/// The instant a timestamp names, for ordering (an unreadable one first).
fn instant_of(text: &str) -> i128 {
    text.parse::<jiff::Timestamp>()
        .map_or(i128::MIN, |ts| ts.as_nanosecond())
}

/// The summary members of a chat state.
pub(super) fn chat_summary(chat: &Value) -> Map<String, Value> {
    CHAT_SUMMARY_FIELDS
        .iter()
        .filter_map(|key| {
            chat.get(*key)
                .filter(|value| !value.is_null())
                .map(|value| ((*key).to_owned(), value.clone()))
        })
        .collect()
}

/// The `inputNeeded` entries one chat contributes: open input requests, tool calls awaiting
/// confirmation, and client tools running on their owner.
fn input_needed_entries(chat: &str, state: &Value) -> Vec<Value> {
    let mut entries = Vec::new();
    let Some(turn) = state.get("activeTurn").filter(|t| !t.is_null()) else {
        return entries;
    };
    let turn_id = turn["id"].clone();
    for part in turn["responseParts"].as_array().into_iter().flatten() {
        match part["kind"].as_str() {
            Some("inputRequest") if part.get("response").is_none_or(Value::is_null) => {
                let request_id = part["request"]["id"].as_str().unwrap_or_default();
                entries.push(json!({
                    "kind": "chatInput",
                    "id": format!("{chat}#input/{request_id}"),
                    "chat": chat,
                    "request": part["request"],
                }));
            }
            Some("toolCall") => {
                let call = &part["toolCall"];
                let call_id = call["toolCallId"].as_str().unwrap_or_default();
                let id = format!("{chat}#tool/{call_id}");
                match call["status"].as_str() {
                    Some("pending-confirmation" | "pending-result-confirmation") => {
                        entries.push(json!({
                            "kind": "toolConfirmation", "id": id, "chat": chat,
                            "turnId": turn_id, "toolCall": call,
                        }));
                    }
                    // Issue 25, authentication (i25c): a call waiting for a token.
                    Some("auth-required") => {
                        entries.push(json!({
                            "kind": "toolAuthentication", "id": id, "chat": chat,
                            "turnId": turn_id, "toolCall": call,
                        }));
                    }
                    Some("running") if call["contributor"]["kind"] == "client" => {
                        entries.push(json!({
                            "kind": "toolClientExecution", "id": id, "chat": chat,
                            "turnId": turn_id,
                            "clientId": call["contributor"]["clientId"],
                            "toolCall": call,
                        }));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    entries
}

/// Whether two status values differ in the IsRead flag (32) alone.
fn only_read_flag_differs(published: &Value, current: &Value) -> bool {
    match (published.as_u64(), current.as_u64()) {
        (Some(old), Some(new)) => old ^ new == 32,
        _ => false,
    }
}

/// Orders RFC 3339 timestamps as instants (unparsable ones first).
pub fn instant_key(value: &Value) -> i128 {
    value.as_str().map_or(i128::MIN, instant_of)
}
