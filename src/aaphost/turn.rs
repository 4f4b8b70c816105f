//! `POST /sessions/:id/turns`: validate the whole request against the session, plan the
//! turn, then commit (settings, history, pending calls) — a refused request changes
//! nothing. Answers to pending calls run the continuation (tool-call.md, "Tool call
//! resolving").

use serde_json::{json, Value};

use super::http::Refusal;
use super::messages::{self, group_messages};
use super::script::{self, Output, Plan};
use super::sessions::{Pending, Session};
use super::settings::{Settings, ToolKind};
use super::{AapFault, AapFaultSet};
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
    pub session_id: String,
    /// Whether the turn answered a plain (unscripted) user message: the seam that keeps
    /// some faults to the harness's plain-message cases, so each breaks one rule.
    pub plain: bool,
    /// Whether the request named its `stream` mode.
    pub explicit_mode: bool,
    /// The request's user message (none when it answered tool calls).
    pub submitted: Vec<Value>,
    /// Client results sent back as `tool_result` events (the `client-result-echoed` fault).
    pub echoed: Vec<Output>,
}

/// Runs one turn request against `session`.
pub fn run_turn(
    session: &mut Session,
    body: &Value,
    faults: &AapFaultSet,
) -> Result<TurnDone, Refusal> {
    let body = body
        .as_object()
        .ok_or_else(|| Refusal::bad_request("the body must be a JSON object"))?;
    let mode = stream_mode(body.get("stream"), faults)?;
    let (settings, renamed) = turn_settings(session, body, faults)?;
    let sent = match body.get("messages") {
        Some(Value::Array(sent)) if !sent.is_empty() => sent,
        _ => return Err(Refusal::bad_request("messages must be a non-empty array")),
    };
    let turn = session.turns + 1;
    let first_role = messages::role_of(&sent[0], "messages[0]").map_err(Refusal::bad_request)?;
    let plain =
        first_role == "user" && !messages::user_text(&sent[0]).starts_with(script::SCRIPT_PREFIX);
    let (stored, mut plan) = if first_role == "user" {
        user_turn(session, &settings, sent, turn, faults)?
    } else {
        answer_turn(session, &settings, sent, turn, faults)?
    };
    if mode == StreamMode::Delta && faults.contains(AapFault::DeltaDropsLastPiece) {
        if let Some(Output::Text(pieces)) = plan
            .outputs
            .iter_mut()
            .rev()
            .find(|output| matches!(output, Output::Text(_)))
        {
            if pieces.len() > 1 {
                pieces.pop();
            }
        }
    }
    let echoed = if faults.contains(AapFault::ClientResultEchoed) {
        client_results(sent)
    } else {
        Vec::new()
    };
    if let Some(name) = renamed {
        session.agent_name = name;
    }
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
        session_id: session.id.clone(),
        plain,
        explicit_mode: body.contains_key("stream"),
        submitted: sent
            .iter()
            .filter(|message| message["role"] == "user")
            .cloned()
            .collect(),
        echoed,
    })
}

/// The settings a turn runs with: the session's, with the request's agent options and
/// tools applied; and the new agent name when a fault lets the request rename it.
fn turn_settings(
    session: &Session,
    body: &serde_json::Map<String, Value>,
    faults: &AapFaultSet,
) -> Result<(Settings, Option<String>), Refusal> {
    let mut agent = body.get("agent").cloned();
    let mut renamed = None;
    if let Some(name) = agent.as_ref().and_then(|agent| agent.get("name")) {
        match name.as_str() {
            Some(name) if faults.contains(AapFault::AgentRenamed) => {
                renamed = Some(name.to_owned())
            }
            Some(name) if name == session.agent_name => {}
            _ => {
                return Err(Refusal::bad_request(
                    "agent.name cannot change after session creation",
                ))
            }
        }
    }
    let mut settings = session.settings.clone();
    if let Some(Value::Object(agent)) = &mut agent {
        if faults.contains(AapFault::TurnAgentToolsIgnored) {
            agent.remove("tools");
        }
        if faults.contains(AapFault::OptionsReplaced) && agent.contains_key("options") {
            settings.options.clear();
        }
    }
    let tools = body
        .get("tools")
        .filter(|_| !faults.contains(AapFault::TurnToolsIgnored));
    settings.apply(agent.as_ref(), tools)?;
    Ok((settings, renamed))
}

/// The `stream` of a request (response.md): absent is `none`.
fn stream_mode(stream: Option<&Value>, faults: &AapFaultSet) -> Result<StreamMode, Refusal> {
    let Some(value) = stream else {
        return Ok(if faults.contains(AapFault::DefaultStreamDelta) {
            StreamMode::Delta
        } else {
            StreamMode::None
        });
    };
    match value.as_str() {
        Some("none") => Ok(StreamMode::None),
        Some("delta") => Ok(StreamMode::Delta),
        Some("message") => Ok(StreamMode::Message),
        _ if faults.contains(AapFault::UnknownStreamAsNone) => Ok(StreamMode::None),
        _ if faults.contains(AapFault::UnknownStreamAsDelta) => Ok(StreamMode::Delta),
        _ => Err(Refusal::bad_request(format!(
            "stream: {value} is not delta, message or none"
        ))),
    }
}

/// The client's tool results of a request, as tool results (the `client-result-echoed`
/// fault's seam).
fn client_results(sent: &[Value]) -> Vec<Output> {
    sent.iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| Output::ToolResult {
            id: message["toolCallId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            content: messages::user_text(message),
        })
        .collect()
}

/// A single user message: the echo, or its script. Returns the messages to store before
/// the agent's output, and the plan.
fn user_turn(
    session: &Session,
    settings: &Settings,
    sent: &[Value],
    turn: u32,
    faults: &AapFaultSet,
) -> Result<(Vec<Value>, Plan), Refusal> {
    if sent.len() != 1 {
        return Err(Refusal::bad_request(
            "a user turn is exactly one user message",
        ));
    }
    // The client answers every waiting call in one request (response.md § tool_call); a new
    // user message meanwhile is refused as a conflict rather than dropping the calls (the
    // spec does not say; our choice).
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
        Some(script) => {
            script::plan(&script, settings, turn, faults).map_err(Refusal::bad_request)?
        }
        None => script::echo_plan(&text),
    };
    Ok((vec![message.clone()], plan))
}

/// Tool results and permissions answering every pending call exactly once. Stored first:
/// the tool messages as sent and the denials (tool-call.md step 4); granted calls run and
/// open the continuation's output.
fn answer_turn(
    session: &Session,
    settings: &Settings,
    sent: &[Value],
    turn: u32,
    faults: &AapFaultSet,
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
        if expected == ToolKind::Client && faults.contains(AapFault::ToolResultRefused) {
            return Err(Refusal::bad_request(format!(
                "{at}: tool results are not accepted"
            )));
        }
        if role == "tool_permission" && faults.contains(AapFault::HistoryKeepsPermission) {
            stored.push(message.clone());
        }
        let granted = match message["granted"].as_bool() {
            Some(true) => !faults.contains(AapFault::GrantNotRun),
            _ => faults.contains(AapFault::DenialRunsTool),
        };
        match (expected, granted) {
            (ToolKind::Client, _) => stored.push(message.clone()),
            (_, true) => results.push(Output::ToolResult {
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
        Some(then) => script::plan(then, settings, turn, faults).map_err(Refusal::bad_request)?,
        None => {
            let ids: Vec<&str> = pending.calls.iter().map(|call| call.id.as_str()).collect();
            script::text_plan(&format!("tool results received: {}", ids.join(", ")))
        }
    };
    results.append(&mut plan.outputs);
    plan.outputs = results;
    Ok((stored, plan))
}

/// The tool message a denied permission leaves in history (tool-call.md, step 4). No
/// `tool_result` event reports it: response.md emits `tool_result` "after the server
/// executes a server-side tool", and a denied tool never runs (our reading).
fn denial(id: &str, reason: Option<&str>) -> Value {
    let content = match reason {
        Some(reason) => format!("Tool call denied: {reason}"),
        None => "Tool call denied".to_owned(),
    };
    json!({"role": "tool", "toolCallId": id, "content": content})
}

/// The SSE events of a turn, in order (response.md): `turn_start`, the outputs (deltas in
/// delta mode, whole texts in message mode), `turn_stop`. Each is `(name, data)`, the data
/// carrying its `event` member as schema.md's SSEEvent does. The spec is split here:
/// response.md's examples leave `event` out of `data`, schema.txt calls the union with it
/// "SSE event data"; keeping it satisfies the schema and costs a name-keyed reader nothing.
pub fn sse_events(done: &TurnDone, faults: &AapFaultSet) -> Vec<(&'static str, Value)> {
    let plain_fault = |fault| done.plain && faults.contains(fault);
    let text_mode = match done.mode {
        StreamMode::Delta if plain_fault(AapFault::DeltaSendsText) => StreamMode::Message,
        StreamMode::Message if plain_fault(AapFault::MessageSendsDeltas) => StreamMode::Delta,
        mode => mode,
    };
    let mut outputs = done.outputs.clone();
    if done.mode == StreamMode::Message && faults.contains(AapFault::MessageJoinsTexts) {
        outputs = join_texts(outputs);
    }
    let mut events = vec![("turn_start", json!({"event": "turn_start"}))];
    if plain_fault(AapFault::SessionStartInTurn) {
        events.push((
            "session_start",
            json!({"event": "session_start", "sessionId": done.session_id}),
        ));
    }
    for output in done.echoed.iter().chain(&outputs) {
        output_events(output, text_mode, &mut events);
    }
    events.push((
        "turn_stop",
        json!({"event": "turn_stop", "stopReason": done.stop.as_str()}),
    ));
    if faults.contains(AapFault::SseEventNameMismatch) {
        for (name, data) in &mut events {
            if *name == "text_delta" {
                data["event"] = json!("text");
            }
        }
    }
    if plain_fault(AapFault::TurnStartLate) && events.len() > 2 {
        events.swap(0, 1);
    }
    match done.mode {
        StreamMode::Delta if faults.contains(AapFault::DeltaDropsTurnStop) => {
            events.pop();
        }
        StreamMode::Message if faults.contains(AapFault::MessageDropsAfterTurnStart) => {
            events.truncate(1);
        }
        _ => {}
    }
    events
}

/// The events of one output: text and thinking as deltas (delta mode) or whole.
fn output_events(output: &Output, text_mode: StreamMode, events: &mut Vec<(&'static str, Value)>) {
    let delta = text_mode == StreamMode::Delta;
    match output {
        Output::Thinking(pieces) if delta => events.extend(pieces.iter().map(|piece| {
            (
                "thinking_delta",
                json!({"event": "thinking_delta", "delta": piece}),
            )
        })),
        Output::Text(pieces) if delta => events.extend(
            pieces
                .iter()
                .map(|piece| ("text_delta", json!({"event": "text_delta", "delta": piece}))),
        ),
        Output::Thinking(pieces) => events.push((
            "thinking",
            json!({"event": "thinking", "thinking": pieces.concat()}),
        )),
        Output::Text(pieces) => {
            events.push(("text", json!({"event": "text", "text": pieces.concat()})));
        }
        Output::ToolCall { id, name, input } => events.push((
            "tool_call",
            json!({"event": "tool_call", "toolCallId": id, "name": name, "input": input}),
        )),
        Output::ToolResult { id, content } => events.push((
            "tool_result",
            json!({"event": "tool_result", "toolCallId": id, "content": content}),
        )),
    }
}

/// Consecutive texts as one (the `message-joins-texts` fault).
fn join_texts(outputs: Vec<Output>) -> Vec<Output> {
    let mut joined: Vec<Output> = Vec::new();
    for output in outputs {
        match (joined.last_mut(), output) {
            (Some(Output::Text(before)), Output::Text(more)) => before.extend(more),
            (_, output) => joined.push(output),
        }
    }
    joined
}

/// The `none`-mode body (schema.md, AgentResponse).
pub fn none_body(done: &TurnDone, faults: &AapFaultSet) -> Value {
    let mut messages = group_messages(&done.outputs);
    if faults.contains(AapFault::NoneEchoesRequest) {
        messages.splice(0..0, done.submitted.iter().cloned());
    }
    json!({"stopReason": done.stop.as_str(), "messages": messages})
}
