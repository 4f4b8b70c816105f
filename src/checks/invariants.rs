//! Invariants over one channel state (snapshots from the host).

use serde_json::Value;

use super::Violation;

const BLOCKING_TOOL_STATUSES: &[&str] = &[
    "pending-confirmation",
    "pending-result-confirmation",
    "auth-required",
];
const TERMINAL_TOOL_STATUSES: &[&str] = &["completed", "cancelled"];

/// Invariants of a chat state: STATUS-003 (activity matches content) and TOOL-007
/// (completed turns hold only terminal tool calls).
pub fn chat_state(state: &Value) -> Vec<Violation> {
    let mut found = Vec::new();
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
                "STATUS-003",
                format!("activity {expected:?} for {what}"),
                format!(
                    "status {status} (activity {activity}) on {}",
                    state["resource"].as_str().unwrap_or("?")
                ),
            ));
        }
    }
    for turn in state["turns"].as_array().into_iter().flatten() {
        for call in tool_calls(turn) {
            let status = call["status"].as_str().unwrap_or_default();
            if !TERMINAL_TOOL_STATUSES.contains(&status) {
                found.push(Violation::new(
                    "TOOL-007",
                    "tool calls of ended turns are completed or cancelled (skipped)",
                    format!(
                        "tool call {} of turn {} is {status}",
                        call["toolCallId"], turn["id"]
                    ),
                ));
            }
        }
    }
    found
}

fn tool_calls(turn: &Value) -> impl Iterator<Item = &Value> {
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
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|part| match part["kind"].as_str() {
            Some("inputRequest") => part.get("response").is_none_or(Value::is_null),
            Some("toolCall") => BLOCKING_TOOL_STATUSES
                .contains(&part["toolCall"]["status"].as_str().unwrap_or_default()),
            _ => false,
        })
}
