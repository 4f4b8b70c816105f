//! `POST /sessions/:id/turns`: validate the whole request against the session, plan the
//! turn, then commit (settings, history, pending calls) — a refused request changes
//! nothing. Answers to pending calls run the continuation (tool-call.md, "Tool call
//! resolving").

use serde_json::{json, Value};

use super::http::Refusal;
use super::messages::{self, group_messages};
use super::meta;
use super::script::{self, Output, Plan};
use super::sessions::{Pending, Session, ToolKind};
use hyper::StatusCode;

/// The response mode of a turn (response.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMode {
    None,
    Delta,
    Message,
}

/// A turn that ran: how to answer, what it produced, why it stopped.
#[derive(Debug)]
pub struct TurnDone {
    pub mode: StreamMode,
    pub outputs: Vec<Output>,
    pub stop: script::StopReason,
}

/// Runs one turn request against `session`.
pub fn run_turn(session: &mut Session, body: &Value) -> Result<TurnDone, Refusal> {
    let body = body
        .as_object()
        .ok_or_else(|| Refusal::bad_request("the body must be a JSON object"))?;
    let mode = match body.get("stream") {
        None => StreamMode::None,
        Some(value) => match value.as_str() {
            Some("none") => StreamMode::None,
            Some("delta") => StreamMode::Delta,
            Some("message") => StreamMode::Message,
            _ => {
                return Err(Refusal::bad_request(format!(
                    "stream: {value} is not delta, message or none"
                )))
            }
        },
    };
    let agent = body.get("agent");
    if let Some(name) = agent.and_then(|agent| agent.get("name")) {
        if name != meta::AGENT_NAME {
            return Err(Refusal::bad_request(
                "agent.name cannot change after session creation",
            ));
        }
    }
    let mut settings = session.settings.clone();
    settings.apply(agent, body.get("tools"))?;
    let sent = match body.get("messages") {
        Some(Value::Array(sent)) if !sent.is_empty() => sent,
        _ => return Err(Refusal::bad_request("messages must be a non-empty array")),
    };
    let turn = session.turns + 1;
    let first_role = messages::role_of(&sent[0], "messages[0]").map_err(Refusal::bad_request)?;
    let (stored, plan) = if first_role == "user" {
        user_turn(session, &settings, sent, turn)?
    } else {
        answer_turn(session, &settings, sent, turn)?
    };
    session.settings = settings;
    session.turns = turn;
    session.history.extend(stored);
    session.history.extend(group_messages(&plan.outputs));
    session.pending = (!plan.pending.is_empty()).then(|| Pending {
        calls: plan.pending,
        then: plan.then,
    });
    Ok(TurnDone {
        mode,
        outputs: plan.outputs,
        stop: plan.stop,
    })
}

/// A single user message: the echo, or its script. Returns the messages to store before
/// the agent's output, and the plan.
fn user_turn(
    session: &Session,
    settings: &super::sessions::Settings,
    sent: &[Value],
    turn: u32,
) -> Result<(Vec<Value>, Plan), Refusal> {
    if sent.len() != 1 {
        return Err(Refusal::bad_request(
            "a user turn is exactly one user message",
        ));
    }
    if let Some(pending) = &session.pending {
        let ids: Vec<&str> = pending.calls.iter().map(|call| call.id.as_str()).collect();
        return Err(Refusal::new(
            StatusCode::CONFLICT,
            format!("the session awaits answers to tool calls {ids:?}"),
        ));
    }
    let message = &sent[0];
    messages::check_content(message.get("content"), "messages[0]").map_err(Refusal::bad_request)?;
    let text = messages::user_text(message);
    let plan = match script::parse_user_text(&text).map_err(Refusal::bad_request)? {
        Some(script) => script::plan(&script, settings, turn).map_err(Refusal::bad_request)?,
        None => script::echo_plan(&text),
    };
    Ok((vec![message.clone()], plan))
}

/// Tool results and permissions answering every pending call exactly once. Stored first:
/// the tool messages as sent and the denials (tool-call.md step 4); granted calls run and
/// open the continuation's output.
fn answer_turn(
    session: &Session,
    settings: &super::sessions::Settings,
    sent: &[Value],
    turn: u32,
) -> Result<(Vec<Value>, Plan), Refusal> {
    let Some(pending) = &session.pending else {
        return Err(Refusal::bad_request(
            "no tool calls await answers in this session",
        ));
    };
    let mut answered: Vec<&str> = Vec::new();
    let mut stored = Vec::new();
    let mut results = Vec::new();
    for (index, message) in sent.iter().enumerate() {
        let at = format!("messages[{index}]");
        let role = messages::role_of(message, &at).map_err(Refusal::bad_request)?;
        let expected = match role {
            "tool" => ToolKind::Client,
            "tool_permission" => ToolKind::Server { trusted: false },
            _ => {
                return Err(Refusal::bad_request(format!(
                    "{at}: answers are tool and tool_permission messages, not {role:?}"
                )))
            }
        };
        let checked = match expected {
            ToolKind::Client => messages::check_tool_message(message, &at),
            ToolKind::Server { .. } => messages::check_permission_message(message, &at),
        };
        checked.map_err(Refusal::bad_request)?;
        let id = message["toolCallId"].as_str().unwrap_or_default();
        let call = pending
            .calls
            .iter()
            .find(|call| call.id == id && call.kind == expected)
            .ok_or_else(|| Refusal::bad_request(format!("{at}: no pending {role} call {id:?}")))?;
        if answered.contains(&id) {
            return Err(Refusal::bad_request(format!(
                "{at}: call {id:?} answered twice"
            )));
        }
        answered.push(id);
        match (expected, message["granted"].as_bool()) {
            (ToolKind::Client, _) => stored.push(message.clone()),
            (_, Some(true)) => results.push(Output::ToolResult {
                id: id.to_owned(),
                content: script::run_server_tool(&call.name, &call.input),
            }),
            _ => stored.push(denial(id, message.get("reason").and_then(Value::as_str))),
        }
    }
    if answered.len() != pending.calls.len() {
        let missing: Vec<&str> = pending
            .calls
            .iter()
            .map(|call| call.id.as_str())
            .filter(|id| !answered.contains(id))
            .collect();
        return Err(Refusal::bad_request(format!(
            "every pending call must be answered in one request; missing {missing:?}"
        )));
    }
    let mut plan = match &pending.then {
        Some(then) => script::plan(then, settings, turn).map_err(Refusal::bad_request)?,
        None => {
            let ids: Vec<&str> = pending.calls.iter().map(|call| call.id.as_str()).collect();
            script::text_plan(&format!("tool results received: {}", ids.join(", ")))
        }
    };
    results.append(&mut plan.outputs);
    plan.outputs = results;
    Ok((stored, plan))
}

/// The tool message a denied permission leaves in history (tool-call.md, step 4).
fn denial(id: &str, reason: Option<&str>) -> Value {
    let content = match reason {
        Some(reason) => format!("Tool call denied: {reason}"),
        None => "Tool call denied".to_owned(),
    };
    json!({"role": "tool", "toolCallId": id, "content": content})
}

/// The SSE events of a turn, in order (response.md): `turn_start`, the outputs (deltas in
/// delta mode, whole texts in message mode), `turn_stop`. Each is `(name, data)`, the data
/// carrying its `event` member as schema.md's SSEEvent does.
pub fn sse_events(done: &TurnDone) -> Vec<(&'static str, Value)> {
    let mut events = vec![("turn_start", json!({"event": "turn_start"}))];
    for output in &done.outputs {
        match (output, done.mode) {
            (Output::Thinking(pieces), StreamMode::Delta) => {
                events.extend(pieces.iter().map(|delta| {
                    (
                        "thinking_delta",
                        json!({"event": "thinking_delta", "delta": delta}),
                    )
                }))
            }
            (Output::Text(pieces), StreamMode::Delta) => events.extend(
                pieces
                    .iter()
                    .map(|delta| ("text_delta", json!({"event": "text_delta", "delta": delta}))),
            ),
            (Output::Thinking(pieces), _) => events.push((
                "thinking",
                json!({"event": "thinking", "thinking": pieces.concat()}),
            )),
            (Output::Text(pieces), _) => {
                events.push(("text", json!({"event": "text", "text": pieces.concat()})));
            }
            (Output::ToolCall { id, name, input }, _) => events.push((
                "tool_call",
                json!({"event": "tool_call", "toolCallId": id, "name": name, "input": input}),
            )),
            (Output::ToolResult { id, content }, _) => events.push((
                "tool_result",
                json!({"event": "tool_result", "toolCallId": id, "content": content}),
            )),
        }
    }
    events.push((
        "turn_stop",
        json!({"event": "turn_stop", "stopReason": done.stop.as_str()}),
    ));
    events
}

/// The `none`-mode body (schema.md, AgentResponse).
pub fn none_body(done: &TurnDone) -> Value {
    json!({"stopReason": done.stop.as_str(), "messages": group_messages(&done.outputs)})
}
