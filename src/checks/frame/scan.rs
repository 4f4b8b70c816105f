//! Per-frame scans that need no history: an envelope's own members, legacy URIs and status
//! bits in every string, and the text helpers of violation messages.

use serde_json::Value;

use super::tally::Tally;
use super::Envelope;
use crate::checks::words::{is_legacy, ClientWords};
use crate::checks::{Rule, Violation};
use crate::tape::{Node, Scanned};

/// What is wrong with an envelope's own members (`channel` and `action.type` when they are
/// the host's to answer for, not an echo's of what the client sent invalid; `serverSeq`,
/// `origin`, `rejectionReason`), if anything.
pub(super) fn envelope_shape(envelope: &Envelope<'_>, hosts: bool) -> Option<String> {
    if !envelope.params.is_object() {
        return Some("(root): not an object".into());
    }
    if hosts && !envelope.channel.is_string() {
        return Some("/channel: a string is required".into());
    }
    if hosts && (!envelope.action.is_object() || !envelope.kind.is_string()) {
        return Some("/action: an object with a string type is required".into());
    }
    if envelope.server_seq.as_u64().is_none() {
        return Some("/serverSeq: a non-negative integer is required".into());
    }
    let origin = envelope.origin;
    let origin_ok = origin.is_null()
        || (origin.member("clientId").is_string() && origin.member("clientSeq").is_i64());
    if !origin_ok {
        return Some("/origin: {clientId: string, clientSeq: integer} or absent".into());
    }
    let reason = envelope.rejection_reason;
    if !reason.is_null() && !reason.is_string() {
        return Some("/rejectionReason: a string or absent".into());
    }
    None
}

pub(super) fn pointer_or_root(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

/// The channel scheme an action type's prefix belongs to.
pub(super) fn expected_scheme(action_type: &str) -> Option<&'static str> {
    match action_type.split('/').next()? {
        "root" => Some("ahp-root://"),
        "session" => Some("ahp-session:"),
        "chat" => Some("ahp-chat:"),
        "terminal" => Some("ahp-terminal:"),
        "changeset" => Some("ahp-changeset:"),
        "resourceWatch" => Some("ahp-resource-watch:"),
        "canvas" => Some("ahp-canvas:"),
        "automation" => Some("ahp-automations://"),
        "automationRun" => Some("ahp-automation-run:"),
        _ => None,
    }
}

/// SUB-012 (no legacy URIs anywhere in a host message, but those the client spelled
/// itself) and STATUS-001 (every integer `status` member holds exactly one activity value):
/// both look at every member of every frame, which on a tape is a pass over its entries; a
/// path is built only for a violation.
pub(super) fn scan_strings_and_status(
    message: Node<'_>,
    words: &ClientWords,
    found: &mut Vec<Violation>,
    tally: &mut Tally,
) {
    // SUB-012's violation goes before STATUS-001's ones.
    let first_status = found.len();
    let mut legacy = None;
    let mut statuses = 0;
    for item in message.scan("status") {
        match item {
            Scanned::String { text, .. }
                if legacy.is_none() && is_legacy(text) && !words.spelled(text) =>
            {
                legacy = Some(text);
            }
            Scanned::Member { value } => {
                let Some(status) = value.as_u64() else {
                    continue;
                };
                statuses += 1;
                if ![1, 2, 8, 24].contains(&(status & 31)) {
                    found.push(Violation::new(
                        Rule::Status001,
                        "status & 31 ∈ {1, 2, 8, 24}",
                        format!("{} = {status}", message.pointer_to(value.index())),
                    ));
                }
            }
            _ => {}
        }
    }
    tally.bump(Rule::Sub012);
    if let Some(uri) = legacy {
        found.insert(
            first_status,
            Violation::new(
                Rule::Sub012,
                "1.0.0 channel URIs (ahp-…)",
                format!("legacy URI {uri}"),
            ),
        );
    }
    tally.add(Rule::Status001, statuses);
}

pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

pub(super) fn present(yes: bool) -> &'static str {
    if yes {
        "present"
    } else {
        "absent"
    }
}

/// Shortens long text for messages.
pub fn clip(text: &str) -> String {
    const MAX: usize = 300;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}…")
    }
}
