//! Invariants over one channel state (snapshots from the host).

use std::collections::HashSet;

use serde_json::Value;

use super::toolcalls::{Status, CANCEL_REASONS, CONFIRMED_VALUES};
use super::{Rule, Violation};

const BLOCKING_TOOL_STATUSES: &[&str] = &[
    "pending-confirmation",
    "pending-result-confirmation",
    "auth-required",
];

/// The invariants of one channel snapshot, chosen by the channel's kind (chat and session
/// states have some, other channels none); `tally` hears how much each rule looked at.
pub fn snapshot(
    resource: &str,
    state: &Value,
    tally: &mut dyn FnMut(Rule, usize),
) -> Vec<Violation> {
    let kind = super::compare::Kind::infer(resource, state);
    if kind == Some(super::compare::Kind::Chat) {
        let turns = state["turns"].as_array().map_or(0, Vec::len);
        // STATUS-003 reads the activity bits: a state without a status gives it nothing.
        let statuses = usize::from(state["status"].is_u64());
        let active = state.get("activeTurn").filter(|turn| !turn.is_null());
        let calls = all_turns(state).flat_map(tool_calls).count();
        let open_requests = active.is_some_and(|turn| open_input_requests(turn).next().is_some());
        for (rule, n) in [
            (Rule::Status003, statuses),
            (Rule::InvChat5, 1),
            (Rule::InvSession3, 1),
            (Rule::InvChat1, turns),
            (Rule::InvChat2, turns + usize::from(active.is_some())),
            (Rule::InvTool2, calls),
            (Rule::InvChat3, turns),
            (Rule::InvChat4, usize::from(open_requests)),
        ] {
            tally(rule, n);
        }
        chat_state(state)
    } else if kind == Some(super::compare::Kind::Session) {
        tally(Rule::InvSession1, 1);
        tally(Rule::InvSession2, 1);
        tally(Rule::InvSession3, 1);
        session_state(resource, state)
    } else {
        Vec::new()
    }
}

/// Invariants of a chat state: STATUS-003 (activity matches content), INV-CHAT-1 and
/// INV-CHAT-3 (ended turns), INV-CHAT-2 and INV-TOOL-2 (tool calls), INV-CHAT-4 (open
/// input requests) and INV-CHAT-5 (the queue's shape).
pub fn chat_state(state: &Value) -> Vec<Violation> {
    let mut found = Vec::new();
    queue_shape(state, &mut found);
    open_requests_once(state, &mut found);
    directories_once(state["resource"].as_str().unwrap_or("?"), state, &mut found);
    for turn in state["turns"].as_array().into_iter().flatten() {
        ended_turn(turn, &mut found);
    }
    if let Some(status) = state["status"].as_u64() {
        let activity = status & 31;
        let active = state.get("activeTurn").filter(|t| !t.is_null());
        let expected: &[u64] = match active {
            Some(turn) if has_blocking_part(turn) => &[24],
            Some(_) => &[8],
            None => &[1, 2],
        };
        if !expected.contains(&activity) {
            let what = match active {
                Some(turn) if has_blocking_part(turn) => "an active turn with a blocking part",
                Some(_) => "an active turn with no blocking part",
                None => "no active turn",
            };
            found.push(Violation::new(
                Rule::Status003,
                format!("activity {expected:?} for {what}"),
                format!(
                    "status {status} (activity {activity}) on {}",
                    state["resource"].as_str().unwrap_or("?")
                ),
            ));
        }
    }
    for turn in state["turns"].as_array().into_iter().flatten() {
        turn_tool_calls(turn, true, &mut found);
    }
    if let Some(active) = state.get("activeTurn").filter(|turn| !turn.is_null()) {
        turn_tool_calls(active, false, &mut found);
    }
    found
}

/// INV-CHAT-2: a turn's tool-call ids are unique, every status is one of the seven, and an
/// ended turn holds only terminal calls. INV-TOOL-2: `confirmed` and `reason` are from
/// their closed sets (the schema leaves `confirmed` open) and only an MCP-contributed call
/// is `auth-required`.
fn turn_tool_calls(turn: &Value, ended: bool, found: &mut Vec<Violation>) {
    let id = &turn["id"];
    if let Some(call) = first_repeat(tool_calls(turn).map(|call| &call["toolCallId"])) {
        found.push(Violation::new(
            Rule::InvChat2,
            "tool-call ids unique within a turn",
            format!("tool call {call} appears more than once in turn {id}"),
        ));
    }
    for call in tool_calls(turn) {
        let call_id = &call["toolCallId"];
        let Some(status) = call["status"].as_str().and_then(Status::parse) else {
            found.push(Violation::new(
                Rule::InvChat2,
                "a tool call's status is one of the seven",
                format!(
                    "tool call {call_id} of turn {id} has status {}",
                    call["status"]
                ),
            ));
            continue;
        };
        if ended && !status.is_terminal() {
            found.push(Violation::new(
                Rule::InvChat2,
                "tool calls of ended turns are completed or cancelled",
                format!("tool call {call_id} of turn {id} is {}", status.name()),
            ));
        }
        let (member, allowed) = match status {
            Status::Running | Status::PendingResultConfirmation | Status::Completed => {
                ("confirmed", CONFIRMED_VALUES)
            }
            Status::Cancelled => ("reason", CANCEL_REASONS),
            Status::AuthRequired if call["contributor"]["kind"] != "mcp" => {
                found.push(Violation::new(
                    Rule::InvTool2,
                    "auth-required only for a call an MCP server contributed",
                    format!(
                        "tool call {call_id} of turn {id} is auth-required with contributor {}",
                        call["contributor"]
                    ),
                ));
                continue;
            }
            _ => continue,
        };
        if !call[member].as_str().is_some_and(|v| allowed.contains(&v)) {
            found.push(Violation::new(
                Rule::InvTool2,
                format!(
                    "a {} tool call's {member} is one of {allowed:?}",
                    status.name()
                ),
                format!(
                    "tool call {call_id} of turn {id} has {member} {}",
                    call[member]
                ),
            ));
        }
    }
}

/// A chat state's ended turns and its active turn.
fn all_turns(state: &Value) -> impl Iterator<Item = &Value> {
    let active = state.get("activeTurn").filter(|turn| !turn.is_null());
    state["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(active)
}

/// INV-CHAT-1: an ended turn's `state` is complete, cancelled or error and its `duration`
/// (when present) is not negative (the reducer clamps a negative one). Turn ids are
/// client-chosen and no rule makes a host reject a reused one, so their uniqueness is not a
/// MUST this row could carry. INV-CHAT-3: an errored turn ends with the error part
/// `chat/error` appended (earlier error parts anywhere are legal: a resumed turn keeps them).
fn ended_turn(turn: &Value, found: &mut Vec<Violation>) {
    let id = &turn["id"];
    let state = turn["state"].as_str().unwrap_or_default();
    if !["complete", "cancelled", "error"].contains(&state) {
        found.push(Violation::new(
            Rule::InvChat1,
            "an ended turn's state is complete, cancelled or error",
            format!("turn {id} has state {}", turn["state"]),
        ));
    }
    if let Some(duration) = turn["duration"].as_f64().filter(|d| *d < 0.0) {
        found.push(Violation::new(
            Rule::InvChat1,
            "an ended turn's duration is not negative",
            format!("turn {id} has duration {duration}"),
        ));
    }
    let last_kind = turn["responseParts"]
        .as_array()
        .and_then(|parts| parts.last())
        .map(|part| &part["kind"]);
    if state == "error" && last_kind.is_none_or(|kind| kind != "error") {
        found.push(Violation::new(
            Rule::InvChat3,
            "an errored turn ends with an error part",
            format!(
                "turn {id} has state error and its last part is {}",
                last_kind.map_or("absent (no parts)".to_owned(), |k| format!("of kind {k}"))
            ),
        ));
    }
}

/// INV-CHAT-5: `queuedMessages` is absent or non-empty (the reducer drops the list with its
/// last entry; `[]` counts as absent), and holds each id once (set upserts by id).
fn queue_shape(state: &Value, found: &mut Vec<Violation>) {
    let Some(queue) = state["queuedMessages"].as_array() else {
        return;
    };
    let chat = state["resource"].as_str().unwrap_or("?");
    if let Some(id) = first_repeat(queue.iter().map(|m| &m["id"])) {
        found.push(Violation::new(
            Rule::InvChat5,
            "queued message ids unique (chat/pendingMessageSet updates an entry in place)",
            format!("queued message {id} listed more than once in {chat}"),
        ));
    }
}

/// INV-CHAT-4: within the active turn, the unresolved input requests carry distinct ids
/// (`chat/inputRequested` replaces the open part with the same id). Ended turns may keep
/// unanswered parts of any id: not checked here.
fn open_requests_once(state: &Value, found: &mut Vec<Violation>) {
    let Some(active) = state.get("activeTurn").filter(|turn| !turn.is_null()) else {
        return;
    };
    let ids = open_input_requests(active).map(|part| &part["request"]["id"]);
    if let Some(id) = first_repeat(ids) {
        found.push(Violation::new(
            Rule::InvChat4,
            "the open input requests of the active turn carry distinct ids (chat/inputRequested replaces the open part with the same id)",
            format!(
                "input request {id} is open more than once in active turn {} of {}",
                active["id"],
                state["resource"].as_str().unwrap_or("?")
            ),
        ));
    }
}

/// A turn's `inputRequest` parts without a response.
pub fn open_input_requests(turn: &Value) -> impl Iterator<Item = &Value> {
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| {
            part["kind"] == "inputRequest" && part.get("response").is_none_or(Value::is_null)
        })
}

/// Invariants of a session state. INV-SESSION-1: each chat is listed once, the default
/// chat is not movable, and `lifecycle` is `failed` exactly when `creationError` is set.
/// INV-SESSION-2: active clients and input-needed entries are listed once each.
/// INV-SESSION-3: working directories are listed once each.
/// Whether `defaultChat` is listed at all is left to quiescence (a host may name the
/// default before its `session/chatAdded`): [`session_at_rest`].
pub fn session_state(session: &str, state: &Value) -> Vec<Violation> {
    let mut found = Vec::new();
    let chats = state["chats"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(chat) = first_repeat(chats.iter().map(|c| &c["resource"])) {
        found.push(Violation::new(
            Rule::InvSession1,
            "each chat listed once in the session's catalog",
            format!("chat {chat} listed more than once in {session}"),
        ));
    }
    let default = &state["defaultChat"];
    let movable_default = chats
        .iter()
        .find(|c| !default.is_null() && c["resource"] == *default)
        .is_some_and(|c| c["movable"] == true);
    if movable_default {
        found.push(Violation::new(
            Rule::InvSession1,
            "the default chat is not movable",
            format!("default chat {default} of {session} has movable: true"),
        ));
    }
    // INV-SESSION-2: both lists are upserted by id. (Whether each inputNeeded entry's
    // chat is listed is left to quiescence, [`session_at_rest`]: the two are removed by
    // separate actions.)
    for (list, id, what) in [
        ("activeClients", "clientId", "active client"),
        ("inputNeeded", "id", "input-needed entry"),
    ] {
        let entries = state[list]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if let Some(repeated) = first_repeat(entries.iter().map(|entry| &entry[id])) {
            found.push(Violation::new(
                Rule::InvSession2,
                format!("{list}[].{id} unique"),
                format!("{what} {repeated} listed more than once in {session}"),
            ));
        }
    }
    directories_once(session, state, &mut found);
    let failed = state["lifecycle"] == "failed";
    let error = !state["creationError"].is_null();
    if failed != error {
        found.push(Violation::new(
            Rule::InvSession1,
            "lifecycle failed exactly when creationError is present",
            format!(
                "lifecycle {} with creationError {} on {session}",
                state["lifecycle"],
                if error { "present" } else { "absent" }
            ),
        ));
    }
    found
}

/// INV-SESSION-3, on a session or chat state: `workingDirectories` lists each directory
/// once (set and replace dedupe). Whether a chat's are among its session's is left to
/// quiescence ([`session_at_rest`]): the two travel on different channels.
fn directories_once(channel: &str, state: &Value, found: &mut Vec<Violation>) {
    let directories = state["workingDirectories"].as_array().map(Vec::as_slice);
    if let Some(directory) = first_repeat(directories.unwrap_or_default().iter()) {
        found.push(Violation::new(
            Rule::InvSession3,
            "workingDirectories without duplicates",
            format!("{directory} listed more than once in {channel}"),
        ));
    }
}

/// The first value met twice.
fn first_repeat<'a>(values: impl Iterator<Item = &'a Value>) -> Option<&'a Value> {
    let mut seen = HashSet::new();
    values
        .into_iter()
        .find(|value| !seen.insert(value.to_string()))
}

/// The tool calls among a turn's response parts.
pub fn tool_calls(turn: &Value) -> impl Iterator<Item = &Value> {
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| part["kind"] == "toolCall")
        .map(|part| &part["toolCall"])
}

/// Whether an active turn holds a part that needs the user: an open input request or a
/// tool call awaiting confirmation or authentication.
pub fn has_blocking_part(turn: &Value) -> bool {
    open_input_requests(turn).next().is_some()
        || tool_calls(turn).any(|call| {
            BLOCKING_TOOL_STATUSES.contains(&call["status"].as_str().unwrap_or_default())
        })
}

/// The parts of INV-SESSION-1/2/3 that hold only at quiescence (a checkpoint), over a fresh
/// session state and the fresh states of its chats: the default chat is listed
/// (INV-SESSION-1), every inputNeeded entry's chat is listed (INV-SESSION-2), and every
/// chat's working directories are among the session's (INV-SESSION-3). `tally` hears how
/// much each rule looked at.
pub fn session_at_rest(
    session: &str,
    state: &Value,
    chats: &[(&str, &Value)],
    tally: &mut dyn FnMut(Rule, usize),
) -> Vec<Violation> {
    let mut found = Vec::new();
    let listed = |chat: &Value| {
        state["chats"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|entry| entry["resource"] == *chat)
    };
    let default = &state["defaultChat"];
    if !default.is_null() {
        tally(Rule::InvSession1, 1);
        if !listed(default) {
            found.push(Violation::new(
                Rule::InvSession1,
                "the default chat is listed in the session's chats (at quiescence)",
                format!("defaultChat {default} of {session} is not among its chats"),
            ));
        }
    }
    let needed = state["inputNeeded"].as_array().map(Vec::as_slice);
    tally(Rule::InvSession2, 1);
    for entry in needed.unwrap_or_default() {
        if !listed(&entry["chat"]) {
            found.push(Violation::new(
                Rule::InvSession2,
                "each inputNeeded entry's chat is listed in the session's chats (at quiescence)",
                format!(
                    "inputNeeded entry {} of {session} names chat {}, which is not listed",
                    entry["id"], entry["chat"]
                ),
            ));
        }
    }
    let own = state["workingDirectories"].as_array().map(Vec::as_slice);
    for (chat, chat_state) in chats {
        tally(Rule::InvSession3, 1);
        let theirs = chat_state["workingDirectories"]
            .as_array()
            .map(Vec::as_slice);
        let stray = theirs
            .unwrap_or_default()
            .iter()
            .find(|directory| !own.unwrap_or_default().contains(directory));
        if let Some(directory) = stray {
            found.push(Violation::new(
                Rule::InvSession3,
                "a chat's workingDirectories are among its session's (at quiescence)",
                format!("chat {chat} lists {directory}, which {session} does not"),
            ));
        }
    }
    found
}
