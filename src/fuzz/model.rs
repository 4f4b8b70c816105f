//! The pure model: given what the clients observed (the reducer mirror of the chat), what
//! concrete action an operation becomes and how a correct host must answer it.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::ops::{Behaviour, Op, PendingKind};
use crate::engine::profile::Profile;

/// How a correct host answers a dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Echoed without rejectionReason.
    Accept,
    /// Echoed with rejectionReason.
    Reject,
    /// Rejected, or ignored without an echo.
    RejectOrIgnore,
    /// Either answer is allowed (the spec leaves it open).
    Either,
}

/// Which channel a planned action goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Session,
    Chat,
}

/// A concrete dispatch: the action, where it goes, what a correct host does, and the rule
/// that says so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    pub channel: Channel,
    pub action: Value,
    pub expect: Expect,
    pub rule: String,
}

fn user(text: &str) -> Value {
    json!({ "text": text, "origin": { "kind": "user" } })
}

fn active(chat: &Value) -> Option<&Value> {
    chat.get("activeTurn").filter(|t| !t.is_null())
}

fn tool_calls(turn: &Value) -> impl Iterator<Item = &Value> {
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["kind"] == "toolCall")
        .map(|p| &p["toolCall"])
}

fn open_request(turn: &Value) -> Option<&Value> {
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["kind"] == "inputRequest" && p.get("response").is_none_or(Value::is_null))
        .map(|p| &p["request"])
}

fn planned(channel: Channel, action: Value, expect: Expect, rule: &str) -> Option<Planned> {
    Some(Planned {
        channel,
        action,
        expect,
        rule: rule.to_owned(),
    })
}

/// How settled a chat is, as far as the model can tell from its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rest {
    /// The agent is still working: more actions follow without any client acting.
    Busy,
    /// Nothing more happens until a client acts: an active turn waits for the client (a
    /// tool call to confirm or complete, an open input request), or a `long` turn has said
    /// its first words, or the chat is idle with nothing queued.
    Quiet,
    /// Idle with queued messages: the host starts one when a turn completes or one is
    /// queued while idle, in the same breath as what it answers — so this is at rest once a
    /// round trip shows nothing followed (after a truncation the queue simply waits).
    Idle,
}

/// How settled `chat` is, given the behaviour each turn was started with (`None`: a turn
/// the host started from a queued message, which the fuzzer always makes a `long` one). A
/// pending steering message during a turn is busy: the agent takes it in at its next step.
pub fn rest(chat: &Value, behaviour_of: impl Fn(&str) -> Option<Behaviour>) -> Rest {
    let Some(turn) = active(chat) else {
        let queued = chat["queuedMessages"]
            .as_array()
            .is_some_and(|queue| !queue.is_empty());
        return if queued { Rest::Idle } else { Rest::Quiet };
    };
    if chat.get("steeringMessage").is_some_and(|m| !m.is_null()) {
        return Rest::Busy;
    }
    let waits_for_client = tool_calls(turn).any(|call| {
        matches!(
            call["status"].as_str(),
            Some("pending-confirmation" | "pending-result-confirmation")
        ) || (call["status"] == "running" && call["contributor"]["kind"] == "client")
    }) || open_request(turn).is_some();
    let long = turn["id"]
        .as_str()
        .and_then(behaviour_of)
        .is_none_or(|b| b == Behaviour::Long);
    let spoke = turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|p| p["kind"] == "markdown");
    if waits_for_client || (long && spoke) {
        Rest::Quiet
    } else {
        Rest::Busy
    }
}

/// The concrete dispatch for `op`, or `None` when the operation does not apply now (e.g.
/// starting a turn while one is active, which the spec leaves open).
pub fn plan(
    op: &Op,
    chat: &Value,
    client_id: &str,
    fresh_turn_id: &str,
    now: &str,
    profile: &Profile,
) -> Option<Planned> {
    let turn = active(chat);
    let turn_id = turn.and_then(|t| t["id"].as_str()).unwrap_or("fz-none");
    match op {
        Op::StartTurn { behaviour, .. } => {
            if turn.is_some() {
                return None;
            }
            let text = profile.behaviour(behaviour.key())?;
            planned(
                Channel::Chat,
                json!({ "type": "chat/turnStarted", "turnId": fresh_turn_id, "startedAt": now, "message": user(text) }),
                Expect::Accept,
                "TURN-001",
            )
        }
        Op::Cancel { stale, .. } => match (turn, stale) {
            (Some(_), false) => planned(
                Channel::Chat,
                json!({ "type": "chat/turnCancelled", "turnId": turn_id, "duration": 1 }),
                Expect::Accept,
                "TURN-007",
            ),
            (Some(_), true) => planned(
                Channel::Chat,
                json!({ "type": "chat/turnCancelled", "turnId": "fz-stale", "duration": 1 }),
                Expect::Either,
                "CHAT-VALIDATE-003",
            ),
            (None, _) => planned(
                Channel::Chat,
                json!({ "type": "chat/turnCancelled", "turnId": "fz-stale", "duration": 1 }),
                Expect::Reject,
                "CHAT-VALIDATE-003",
            ),
        },
        Op::Confirm { approve, stale, .. } => {
            let calls: Vec<&Value> = turn.map(|t| tool_calls(t).collect()).unwrap_or_default();
            let pending = calls.iter().find(|c| c["status"] == "pending-confirmation");
            let not_pending = calls.iter().find(|c| c["status"] != "pending-confirmation");
            let (id, expect, rule) = match (pending, stale) {
                (Some(call), false) => (call["toolCallId"].clone(), Expect::Accept, "TOOL-003"),
                _ => match not_pending {
                    Some(call) => (
                        call["toolCallId"].clone(),
                        Expect::Reject,
                        "CHAT-VALIDATE-002",
                    ),
                    None => (
                        json!("fz-no-such-tool"),
                        Expect::Reject,
                        "CHAT-VALIDATE-002",
                    ),
                },
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": id, "approved": approve }),
                expect,
                rule,
            )
        }
        Op::ConfirmResult { approve, .. } => {
            let call = turn
                .and_then(|t| tool_calls(t).find(|c| c["status"] == "pending-result-confirmation"));
            let (id, expect) = match call {
                Some(call) => (call["toolCallId"].clone(), Expect::Accept),
                None => (json!("fz-no-such-tool"), Expect::Either),
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/toolCallResultConfirmed", "turnId": turn_id, "toolCallId": id, "approved": approve }),
                expect,
                "TOOL-006",
            )
        }
        Op::CompleteClientTool { .. } => {
            let call = turn.and_then(|t| {
                tool_calls(t)
                    .find(|c| c["status"] == "running" && c["contributor"]["kind"] == "client")
            })?;
            let (expect, rule) = if call["contributor"]["clientId"] == client_id {
                (Expect::Accept, "TOOL-008")
            } else {
                (Expect::Reject, "CHAT-VALIDATE-010")
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/toolCallComplete", "turnId": turn_id, "toolCallId": call["toolCallId"],
                        "result": { "success": true, "pastTenseMessage": "done by the fuzzer" } }),
                expect,
                rule,
            )
        }
        Op::Answer { valid, .. } => {
            let request = turn.and_then(open_request);
            let request_id = request.map_or(json!("fz-no-such-request"), |r| r["id"].clone());
            let question = request
                .and_then(|r| r["questions"].as_array())
                .and_then(|q| q.iter().find(|q| q["kind"] == "text"))
                .map_or(json!("q-name"), |q| q["id"].clone());
            let answer = if *valid {
                json!({ "state": "draft", "value": { "kind": "text", "value": "fuzz" } })
            } else {
                json!({ "state": "submitted" })
            };
            let (expect, rule) = match (request, valid) {
                (Some(_), true) => (Expect::Accept, "INPUT-003"),
                (Some(_), false) => (Expect::Reject, "CHAT-VALIDATE-006"),
                (None, _) => (Expect::Reject, "CHAT-VALIDATE-005"),
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/inputAnswerChanged", "requestId": request_id, "questionId": question, "answer": answer }),
                expect,
                rule,
            )
        }
        Op::CompleteInput { accept, .. } => {
            let request = turn.and_then(open_request);
            let request_id = request.map_or(json!("fz-no-such-request"), |r| r["id"].clone());
            let mut answers = serde_json::Map::new();
            for question in request
                .and_then(|r| r["questions"].as_array())
                .into_iter()
                .flatten()
            {
                if question["kind"] == "text" {
                    if let Some(id) = question["id"].as_str() {
                        answers.insert(id.to_owned(), json!({ "state": "submitted", "value": { "kind": "text", "value": "fuzz" } }));
                    }
                }
            }
            let mut action = json!({ "type": "chat/inputCompleted", "requestId": request_id,
                                     "response": if *accept { "accept" } else { "decline" } });
            if *accept {
                action["answers"] = Value::Object(answers);
            }
            let (expect, rule) = match request {
                Some(_) => (Expect::Accept, "INPUT-004"),
                None => (Expect::Reject, "CHAT-VALIDATE-007"),
            };
            planned(Channel::Chat, action, expect, rule)
        }
        Op::SetPending { kind, id, .. } => {
            // Queued messages become turns: make them long ones so the state stays put.
            let text = profile.behaviour("long").unwrap_or("hello");
            let (kind, prefix) = match kind {
                PendingKind::Queued => ("queued", "q"),
                PendingKind::Steering => ("steering", "s"),
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/pendingMessageSet", "kind": kind, "id": format!("{prefix}{id}"), "message": user(text) }),
                Expect::Accept,
                "DISPATCH-008",
            )
        }
        Op::RemovePending { kind, id, .. } => {
            let (kind, wanted) = match kind {
                PendingKind::Queued => ("queued", format!("q{id}")),
                PendingKind::Steering => ("steering", format!("s{id}")),
            };
            let exists = match kind {
                "queued" => chat["queuedMessages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m["id"] == wanted.as_str()),
                _ => chat["steeringMessage"]["id"] == wanted.as_str(),
            };
            let (expect, rule) = if exists {
                (Expect::Accept, "DISPATCH-008")
            } else {
                (Expect::Reject, "CHAT-VALIDATE-009")
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/pendingMessageRemoved", "kind": kind, "id": wanted }),
                expect,
                rule,
            )
        }
        Op::Reorder { .. } => {
            let mut order: Vec<Value> = chat["queuedMessages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| m["id"].clone())
                .collect();
            order.reverse();
            order.push(json!("fz-unknown"));
            planned(
                Channel::Chat,
                json!({ "type": "chat/queuedMessagesReordered", "order": order }),
                Expect::Accept,
                "PENDING-006",
            )
        }
        Op::Draft { .. } => planned(
            Channel::Chat,
            json!({ "type": "chat/draftChanged", "draft": user("draft") }),
            Expect::Accept,
            "DISPATCH-008",
        ),
        Op::Rename { .. } => planned(
            Channel::Session,
            json!({ "type": "session/titleChanged", "title": fresh_turn_id }),
            Expect::Accept,
            "DISPATCH-008",
        ),
        Op::Truncate { keep_first, .. } => {
            let first = chat["turns"]
                .as_array()
                .and_then(|t| t.first())
                .map(|t| t["id"].clone());
            let action = match (keep_first, first) {
                (true, Some(id)) => json!({ "type": "chat/truncated", "turnId": id }),
                _ => json!({ "type": "chat/truncated" }),
            };
            planned(Channel::Chat, action, Expect::Accept, "TURN-012")
        }
        Op::Resume { .. } => {
            let last = chat["turns"].as_array().and_then(|t| t.last());
            let resumable = turn.is_none()
                && last.is_some_and(|t| {
                    t["state"] == "error"
                        && t["responseParts"]
                            .as_array()
                            .and_then(|p| p.last())
                            .is_some_and(|p| p["kind"] == "error" && p["resumable"] == true)
                });
            let id = last.map_or(json!("fz-none"), |t| t["id"].clone());
            let (expect, rule) = if resumable {
                (Expect::Accept, "TURN-008")
            } else {
                (Expect::Reject, "CHAT-VALIDATE-004")
            };
            planned(
                Channel::Chat,
                json!({ "type": "chat/turnResume", "turnId": id }),
                expect,
                rule,
            )
        }
        Op::ServerOnly { .. } => planned(
            Channel::Chat,
            json!({ "type": "chat/turnComplete", "turnId": turn_id, "duration": 1 }),
            Expect::RejectOrIgnore,
            "DISPATCH-006",
        ),
        Op::Reconnect { .. } | Op::Checkpoint => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile::scripted().expect("built-in profile")
    }

    #[test]
    fn cancel_on_an_idle_chat_must_be_rejected() {
        let chat = json!({ "turns": [] });
        let plan = plan(
            &Op::Cancel {
                client: 0,
                stale: false,
            },
            &chat,
            "c",
            "t",
            "now",
            &profile(),
        );
        assert_eq!(plan.map(|p| p.expect), Some(Expect::Reject));
    }

    #[test]
    fn confirming_a_pending_tool_is_accepted_and_a_running_one_rejected() {
        let chat = json!({ "activeTurn": { "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "a", "status": "pending-confirmation" } },
            { "kind": "toolCall", "toolCall": { "toolCallId": "b", "status": "running" } } ] } });
        let ok = plan(
            &Op::Confirm {
                client: 0,
                approve: true,
                stale: false,
            },
            &chat,
            "c",
            "t",
            "now",
            &profile(),
        )
        .expect("planned");
        assert_eq!(
            (ok.expect, ok.action["toolCallId"].clone()),
            (Expect::Accept, json!("a"))
        );
        let bad = plan(
            &Op::Confirm {
                client: 0,
                approve: true,
                stale: true,
            },
            &chat,
            "c",
            "t",
            "now",
            &profile(),
        )
        .expect("planned");
        assert_eq!(
            (bad.expect, bad.action["toolCallId"].clone()),
            (Expect::Reject, json!("b"))
        );
    }

    #[test]
    fn starting_a_turn_during_a_turn_is_not_planned() {
        let chat = json!({ "activeTurn": { "id": "t1", "responseParts": [] } });
        assert!(plan(
            &Op::StartTurn {
                client: 0,
                behaviour: Behaviour::Echo
            },
            &chat,
            "c",
            "t",
            "now",
            &profile()
        )
        .is_none());
    }

    #[test]
    fn a_chat_is_at_rest_only_when_nothing_more_happens_without_a_client() {
        let none = |_: &str| None;
        let echo = |_: &str| Some(Behaviour::Echo);
        assert_eq!(rest(&json!({ "turns": [] }), none), Rest::Quiet);
        let queued = json!({ "queuedMessages": [{ "id": "q1" }] });
        assert_eq!(rest(&queued, none), Rest::Idle);
        let streaming =
            json!({ "activeTurn": { "id": "t1", "responseParts": [{ "kind": "markdown" }] } });
        assert_eq!(
            rest(&streaming, echo),
            Rest::Busy,
            "an echo turn still completes"
        );
        assert_eq!(
            rest(&streaming, none),
            Rest::Quiet,
            "a long turn waits after its first words"
        );
        let mut steered = streaming.clone();
        steered["steeringMessage"] = json!({ "id": "s1" });
        assert_eq!(rest(&steered, none), Rest::Busy);
        let asking = json!({ "activeTurn": { "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "a", "status": "pending-confirmation" } } ] } });
        assert_eq!(rest(&asking, echo), Rest::Quiet);
        let running = json!({ "activeTurn": { "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "a", "status": "running", "contributor": { "kind": "agent" } } } ] } });
        assert_eq!(rest(&running, echo), Rest::Busy);
    }
}
