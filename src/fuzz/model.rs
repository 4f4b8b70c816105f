//! The pure model: given what the clients observed (the reducer mirror of the chat), what
//! concrete action an operation becomes and how a correct host must answer it.

use crate::checks::invariants::{open_input_requests, tool_calls};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::ops::{Behaviour, Op, PendingKind};
use crate::checks::Rule;
use crate::client::profile::Profile;

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
    pub rule: Rule,
}

/// A working directory outside the session's set: the profile's second (sessions are made in
/// its first only), or a made-up one.
pub(crate) fn outside_directory(profile: &Profile) -> String {
    let second = profile.working_directories.get(1);
    second.map_or_else(|| "file:///ahpspec-fuzz-outside".to_owned(), String::clone)
}

fn user(text: &str) -> Value {
    json!({ "text": text, "origin": { "kind": "user" } })
}

fn active(chat: &Value) -> Option<&Value> {
    chat.get("activeTurn").filter(|t| !t.is_null())
}

/// The input requests of the turn no one has answered yet.
fn open_requests(turn: &Value) -> impl Iterator<Item = &Value> {
    open_input_requests(turn).map(|p| &p["request"])
}

fn open_request(turn: &Value) -> Option<&Value> {
    open_requests(turn).next()
}

/// How settled a chat is, as far as the model can tell from its state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rest {
    /// The agent is still working: more actions follow without any client acting.
    Busy,
    /// Nothing more happens until a client acts: an active turn waits for the client (a
    /// tool call to confirm or complete, an open input request), or a turn that waits for
    /// a cancel got going (`long` said its first words, `input-then-wait` asked), or the
    /// chat is idle with nothing queued.
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
    let behaviour = turn["id"].as_str().and_then(behaviour_of);
    let has = |kind: &str| {
        turn["responseParts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["kind"] == kind)
    };
    // Turns that wait for a cancel once they got going.
    let parked = match behaviour {
        None | Some(Behaviour::Long) => has("markdown"),
        Some(Behaviour::InputThenWait) => has("inputRequest"),
        Some(_) => false,
    };
    if waits_for_client || parked {
        Rest::Quiet
    } else {
        Rest::Busy
    }
}

/// The open input request `id` of the active turn.
fn open_request_with<'a>(turn: &'a Value, id: &Value) -> Option<&'a Value> {
    open_requests(turn).find(|r| r["id"] == *id)
}

/// Whether `turn_id` names the latest turn, ended in a resumable error, with none active.
fn resumable(chat: &Value, turn_id: &Value) -> bool {
    let last = chat["turns"].as_array().and_then(|t| t.last());
    active(chat).is_none()
        && last.is_some_and(|t| {
            t["id"] == *turn_id
                && t["state"] == "error"
                && t["responseParts"]
                    .as_array()
                    .and_then(|p| p.last())
                    .is_some_and(|p| p["kind"] == "error" && p["resumable"] == true)
        })
}

/// How a correct host answers `action` from `client_id` when the chat is in state `chat`
/// as it processes it, and the rule that says so. The fuzzer judges every dispatch against
/// the state its own connection folded just before the echo, so whatever order concurrent
/// dispatches (and the agent) took, the verdict follows the order the host chose.
pub fn judge(action: &Value, chat: &Value, client_id: &str) -> (Expect, Rule) {
    judge_in(action, chat, &Value::Null, client_id)
}

/// [`judge`], knowing the state of the chat's session too (`Null`: not known), for the
/// actions whose answer depends on it: a chat's working directory must be one of its
/// session's (CHAT-VALIDATE-011).
pub fn judge_in(action: &Value, chat: &Value, session: &Value, client_id: &str) -> (Expect, Rule) {
    if action["type"] == "chat/workingDirectorySet" {
        return match session["workingDirectories"].as_array() {
            Some(dirs) if dirs.contains(&action["directory"]) => {
                (Expect::Accept, Rule::Dispatch008)
            }
            Some(_) => (Expect::Reject, Rule::ChatValidate011),
            // A session without directories (or not known): the spec leaves the chat's open.
            None if session.is_null() => (Expect::Either, Rule::ChatValidate011),
            None => (Expect::Reject, Rule::ChatValidate011),
        };
    }
    let turn = active(chat);
    let call = || {
        turn.filter(|t| t["id"] == action["turnId"])
            .and_then(|t| tool_calls(t).find(|c| c["toolCallId"] == action["toolCallId"]))
    };
    match action["type"].as_str().unwrap_or_default() {
        "chat/turnStarted" if turn.is_some() => (Expect::Either, Rule::ChatValidate013),
        "chat/turnStarted" => (Expect::Accept, Rule::Turn001),
        "chat/turnCancelled" => match turn {
            None => (Expect::Reject, Rule::ChatValidate003),
            Some(t) if t["id"] == action["turnId"] => (Expect::Accept, Rule::Turn007),
            // A stale turn id while another turn runs: the spec does not say.
            Some(_) => (Expect::Either, Rule::ChatValidate003),
        },
        "chat/toolCallConfirmed" => match call() {
            Some(c) if c["status"] == "pending-confirmation" => (Expect::Accept, Rule::Tool003),
            _ => (Expect::Reject, Rule::ChatValidate002),
        },
        "chat/toolCallResultConfirmed" => match call() {
            Some(c) if c["status"] == "pending-result-confirmation" => {
                (Expect::Accept, Rule::Tool006)
            }
            _ => (Expect::Either, Rule::ChatValidate014),
        },
        "chat/toolCallComplete" => match call() {
            Some(c) if c["status"] == "running" && c["contributor"]["kind"] == "client" => {
                if c["contributor"]["clientId"] == client_id {
                    (Expect::Accept, Rule::Tool008)
                } else {
                    (Expect::Reject, Rule::ChatValidate010)
                }
            }
            // Completed meanwhile (by its own client): the spec has no rule for it.
            _ => (Expect::Either, Rule::Tool008),
        },
        "chat/inputAnswerChanged" => {
            let answer = &action["answer"];
            let open = turn.and_then(|t| open_request_with(t, &action["requestId"]));
            let valueless = answer["state"] == "submitted" && answer["value"].is_null();
            match (open, valueless) {
                (Some(_), false) => (Expect::Accept, Rule::Input003),
                (Some(_), true) => (Expect::Reject, Rule::ChatValidate006),
                (None, _) => (Expect::Reject, Rule::ChatValidate005),
            }
        }
        "chat/inputCompleted" => {
            match turn.and_then(|t| open_request_with(t, &action["requestId"])) {
                Some(_) => (Expect::Accept, Rule::Input004),
                None => (Expect::Reject, Rule::ChatValidate007),
            }
        }
        "chat/pendingMessageRemoved" => {
            let exists = match action["kind"].as_str() {
                Some("queued") => chat["queuedMessages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m["id"] == action["id"]),
                _ => chat["steeringMessage"]["id"] == action["id"],
            };
            if exists {
                (Expect::Accept, Rule::Dispatch008)
            } else {
                (Expect::Reject, Rule::ChatValidate009)
            }
        }
        "chat/queuedMessagesReordered" => (Expect::Accept, Rule::Pending006),
        "chat/truncated" => {
            let known = action["turnId"].is_null()
                || chat["turns"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|t| t["id"] == action["turnId"]);
            if known {
                (Expect::Accept, Rule::Turn012)
            } else {
                // Truncated away meanwhile: the spec does not say.
                (Expect::Either, Rule::Turn012)
            }
        }
        "chat/turnResume" if resumable(chat, &action["turnId"]) => (Expect::Accept, Rule::Turn008),
        "chat/turnResume" => (Expect::Reject, Rule::ChatValidate004),
        "chat/turnComplete" => (Expect::RejectOrIgnore, Rule::Dispatch006),
        "chat/pendingMessageSet" | "chat/draftChanged" | "session/titleChanged" => {
            (Expect::Accept, Rule::Dispatch008)
        }
        _ => (Expect::Either, Rule::Dispatch008),
    }
}

/// The concrete dispatch for `op` in the observed `chat`, or `None` when the operation does
/// not apply now (e.g. starting a turn while one is active, which the spec leaves open).
/// What a correct host answers is [`judge`]'s.
pub fn plan(
    op: &Op,
    chat: &Value,
    client_id: &str,
    fresh_turn_id: &str,
    now: &str,
    profile: &Profile,
) -> Option<Planned> {
    let (channel, action) = plan_action(op, chat, fresh_turn_id, now, profile)?;
    let (expect, rule) = judge(&action, chat, client_id);
    Some(Planned {
        channel,
        action,
        expect,
        rule,
    })
}

// Kept whole (over the ~80-line aim): one match arm per operation, each the action it dispatches.
fn plan_action(
    op: &Op,
    chat: &Value,
    fresh_turn_id: &str,
    now: &str,
    profile: &Profile,
) -> Option<(Channel, Value)> {
    let turn = active(chat);
    let turn_id = turn.and_then(|t| t["id"].as_str()).unwrap_or("fz-none");
    let in_chat = |action: Value| Some((Channel::Chat, action));
    match op {
        Op::StartTurn { behaviour, .. } => {
            if turn.is_some() {
                return None;
            }
            let text = profile.behaviour(behaviour.key())?;
            in_chat(
                json!({ "type": "chat/turnStarted", "turnId": fresh_turn_id, "startedAt": now, "message": user(text) }),
            )
        }
        Op::Cancel { stale, .. } => {
            let id = if turn.is_some() && !stale {
                turn_id
            } else {
                "fz-stale"
            };
            in_chat(json!({ "type": "chat/turnCancelled", "turnId": id, "duration": 1 }))
        }
        Op::Confirm { approve, stale, .. } => {
            let calls: Vec<&Value> = turn.map(|t| tool_calls(t).collect()).unwrap_or_default();
            let pending = calls.iter().find(|c| c["status"] == "pending-confirmation");
            let not_pending = calls.iter().find(|c| c["status"] != "pending-confirmation");
            let id = match (pending, stale, not_pending) {
                (Some(call), false, _) | (_, _, Some(call)) => call["toolCallId"].clone(),
                _ => json!("fz-no-such-tool"),
            };
            let mut confirm = json!({ "type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": id, "approved": approve });
            // The official 1.0.0 schemas ask an approval for `confirmed`, a denial for `reason`.
            if *approve {
                confirm["confirmed"] = json!("user-action");
            } else {
                confirm["reason"] = json!("denied");
            }
            in_chat(confirm)
        }
        Op::ConfirmResult { approve, .. } => {
            let id = turn
                .and_then(|t| tool_calls(t).find(|c| c["status"] == "pending-result-confirmation"))
                .map_or(json!("fz-no-such-tool"), |c| c["toolCallId"].clone());
            in_chat(
                json!({ "type": "chat/toolCallResultConfirmed", "turnId": turn_id, "toolCallId": id, "approved": approve }),
            )
        }
        Op::CompleteClientTool { .. } => {
            let call = turn.and_then(|t| {
                tool_calls(t)
                    .find(|c| c["status"] == "running" && c["contributor"]["kind"] == "client")
            })?;
            in_chat(
                json!({ "type": "chat/toolCallComplete", "turnId": turn_id, "toolCallId": call["toolCallId"],
                        "result": { "success": true, "pastTenseMessage": "done by the fuzzer" } }),
            )
        }
        Op::Answer { valid, .. } => {
            let request = turn.and_then(open_request);
            let request_id = request.map_or(json!("fz-no-such-request"), |r| r["id"].clone());
            let question = request
                .and_then(|r| r["questions"].as_array())
                .and_then(|q| q.iter().find(|q| q["kind"] == "text"))
                .map_or(json!("q-name"), |q| q["id"].clone());
            // A valueless answer only to an open request: to an unknown one it would break
            // CHAT-VALIDATE-005 and -006 at once, and its acceptance could not say which.
            let answer = if *valid || request.is_none() {
                json!({ "state": "draft", "value": { "kind": "text", "value": "fuzz" } })
            } else {
                json!({ "state": "submitted" })
            };
            in_chat(
                json!({ "type": "chat/inputAnswerChanged", "requestId": request_id, "questionId": question, "answer": answer }),
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
            in_chat(action)
        }
        Op::SetPending { kind, id, .. } => {
            // Queued messages become turns: make them long ones so the state stays put.
            let text = profile.behaviour("long").unwrap_or("hello");
            let (kind, prefix) = match kind {
                PendingKind::Queued => ("queued", "q"),
                PendingKind::Steering => ("steering", "s"),
            };
            in_chat(
                json!({ "type": "chat/pendingMessageSet", "kind": kind, "id": format!("{prefix}{id}"), "message": user(text) }),
            )
        }
        Op::RemovePending { kind, id, .. } => {
            let (kind, id) = match kind {
                PendingKind::Queued => ("queued", format!("q{id}")),
                PendingKind::Steering => ("steering", format!("s{id}")),
            };
            in_chat(json!({ "type": "chat/pendingMessageRemoved", "kind": kind, "id": id }))
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
            in_chat(json!({ "type": "chat/queuedMessagesReordered", "order": order }))
        }
        Op::Draft { .. } => in_chat(json!({ "type": "chat/draftChanged", "draft": user("draft") })),
        Op::SetDirectory { inside, .. } => {
            let directory = match (inside, profile.working_directories.first()) {
                (true, Some(dir)) => dir.clone(),
                (true, None) => return None,
                (false, _) => outside_directory(profile),
            };
            in_chat(json!({ "type": "chat/workingDirectorySet", "directory": directory }))
        }
        Op::Rename { .. } => Some((
            Channel::Session,
            json!({ "type": "session/titleChanged", "title": fresh_turn_id }),
        )),
        Op::Truncate { keep_first, .. } => {
            let first = chat["turns"]
                .as_array()
                .and_then(|t| t.first())
                .map(|t| t["id"].clone());
            in_chat(match (keep_first, first) {
                (true, Some(id)) => json!({ "type": "chat/truncated", "turnId": id }),
                _ => json!({ "type": "chat/truncated" }),
            })
        }
        Op::Resume { .. } => {
            let last = chat["turns"].as_array().and_then(|t| t.last());
            let id = last.map_or(json!("fz-none"), |t| t["id"].clone());
            in_chat(json!({ "type": "chat/turnResume", "turnId": id }))
        }
        Op::ServerOnly { .. } => {
            in_chat(json!({ "type": "chat/turnComplete", "turnId": turn_id, "duration": 1 }))
        }
        Op::Reconnect { .. }
        | Op::Checkpoint
        | Op::Together { .. }
        | Op::Probe { .. }
        | Op::Routine { .. }
        | Op::Case { .. } => None,
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
    #[test]
    fn judging_follows_the_state_the_host_had() {
        let pending = json!({ "activeTurn": { "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "a", "status": "pending-confirmation" } } ] } });
        let running = json!({ "activeTurn": { "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "a", "status": "running" } } ] } });
        let confirm = json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "a", "approved": true });
        assert_eq!(
            judge(&confirm, &pending, "c"),
            (Expect::Accept, Rule::Tool003)
        );
        assert_eq!(
            judge(&confirm, &running, "c"),
            (Expect::Reject, Rule::ChatValidate002)
        );
        let cancel = json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 1 });
        assert_eq!(judge(&cancel, &running, "c").0, Expect::Accept);
        assert_eq!(
            judge(&cancel, &json!({ "turns": [] }), "c").0,
            Expect::Reject
        );
        let start = json!({ "type": "chat/turnStarted", "turnId": "t2" });
        assert_eq!(judge(&start, &running, "c").0, Expect::Either);
        let remove = json!({ "type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1" });
        assert_eq!(
            judge(&remove, &json!({ "queuedMessages": [{ "id": "q1" }] }), "c").0,
            Expect::Accept
        );
        assert_eq!(judge(&remove, &json!({}), "c").0, Expect::Reject);
    }
}
