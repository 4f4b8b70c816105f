//! The steps that wait on a client: tool calls (confirmation, client-owned tools, result
//! confirmation) and input requests, and the random ids a real agent would make up.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::{emit, flow_of, strip_nulls, wait_for, with_turn, Flow, Turn, Waited};
use crate::host::faults::Fault;
use crate::host::script::{
    split_text, Confirmation, InputRequestStep, ToolCallStep, ToolResultStep, MAX_WAIT_MS,
};
use crate::host::world::to_value;
use crate::host::Shared;

/// The status of a tool call once it has left `from` (waits while it is in `from`).
async fn status_after(
    shared: &Shared,
    turn: &Turn,
    tool_call_id: &str,
    from: &[&str],
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_millis(MAX_WAIT_MS);
    let waited = wait_for(shared, turn, deadline, |world| {
        let status = world.tool_call(turn, tool_call_id)?["status"]
            .as_str()
            .map(str::to_owned)?;
        (!from.contains(&status.as_str())).then_some(status)
    })
    .await;
    match waited {
        Waited::Ready(status) => Some(status),
        Waited::TimedOut | Waited::Gone => None,
    }
}

/// Runs one scripted tool call: start and streamed input, `toolCallReady` and the
/// confirmations it waits for, progress, then the client's or the host's completion.
pub(super) async fn run_tool_call(shared: &Shared, turn: &Turn, call: &ToolCallStep) -> Flow {
    let id = call.id.clone().unwrap_or_else(|| random_id("call_"));
    let options = call.options.clone().map(with_option_ids);
    let ready = |confirmed: Option<&str>| {
        strip_nulls(
            json!({ "type": "chat/toolCallReady", "turnId": turn.turn_id, "toolCallId": id,
            "invocationMessage": format!("Running {}", call.name), "toolInput": call.input,
            "confirmed": confirmed, "options": options, "editable": call.editable }),
        )
    };
    if start_tool_call(shared, turn, call, &id).is_none() {
        return Flow::Stop;
    }
    let auto = call.confirmation == Confirmation::Auto;
    let maybe = call.result_confirmation
        && with_turn(shared, turn, |world| world.fault(Fault::ConfirmedMaybe)) == Some(true);
    let confirmed = if maybe {
        "maybe"
    } else {
        with_turn(shared, turn, |world| world.config.variants.auto_confirmed)
            .unwrap_or_default()
            .as_str()
    };
    if emit(shared, turn, ready(auto.then_some(confirmed))).is_none() {
        return Flow::Stop;
    }
    if !auto {
        if let Some(ended) = until_running(shared, turn, &id).await {
            return ended;
        }
    }
    if call.reconfirm {
        let mut again = ready(None);
        if let Some(Some(owner)) = with_turn(shared, turn, |world| world.reconfirm_contributor()) {
            again["contributor"] = owner;
        }
        if emit(shared, turn, again).is_none() {
            return Flow::Stop;
        }
        if let Some(ended) = until_running(shared, turn, &id).await {
            return ended;
        }
    }
    for update in 0..call.content_updates {
        let changed = json!({ "type": "chat/toolCallContentChanged", "turnId": turn.turn_id,
            "toolCallId": id, "content": [{ "type": "text", "text": format!("progress {}", update + 1) }] });
        if emit(shared, turn, changed).is_none() {
            return Flow::Stop;
        }
    }
    if call.client {
        return client_settles(shared, turn, &id).await;
    }
    if call.mcp_auth {
        match until_authenticated(shared, turn, &id).await {
            Some(Flow::Next) => {}
            Some(flow) => return flow,
            None => return Flow::Next,
        }
    }
    if host_completes(shared, turn, call, &id).is_none() {
        return Flow::Stop;
    }
    if with_turn(shared, turn, |world| {
        world.fault(Fault::ToolReadyAfterComplete)
    }) == Some(true)
        && emit(shared, turn, ready(Some("not-needed"))).is_none()
    {
        return Flow::Stop;
    }
    if with_turn(shared, turn, |world| {
        world.fault(Fault::AuthResolvedWrongTurn)
    }) == Some(true)
    {
        let stale = json!({ "type": "chat/toolCallAuthResolved",
            "turnId": format!("{}-stale", turn.turn_id), "toolCallId": id });
        if emit(shared, turn, stale).is_none() {
            return Flow::Stop;
        }
    }
    if call.result_confirmation {
        return flow_of(
            status_after(shared, turn, &id, &["pending-result-confirmation"])
                .await
                .map(drop),
        );
    }
    Flow::Next
}

/// `toolCallStart` and the streamed input deltas; `None` once the turn has ended.
fn start_tool_call(shared: &Shared, turn: &Turn, call: &ToolCallStep, id: &str) -> Option<()> {
    let owner = call.client_id.clone().or_else(|| turn.client_id.clone());
    let contributor = if call.client {
        json!({ "kind": "client", "clientId": owner })
    } else if call.mcp_auth {
        json!({ "kind": "mcp", "customizationId": crate::host::auth::MCP_CUSTOMIZATION })
    } else {
        Value::Null
    };
    let start = json!({ "type": "chat/toolCallStart", "turnId": turn.turn_id, "toolCallId": id,
        "toolName": call.name, "displayName": call.display_name.as_deref().unwrap_or(&call.name),
        "contributor": contributor });
    with_turn(shared, turn, |world| {
        world.early_tool_delta(&turn.chat, &turn.turn_id, id);
    });
    emit(shared, turn, strip_nulls(start))?;
    for chunk in split_text(call.input.as_deref().unwrap_or_default(), call.input_chunks) {
        let delta = json!({ "type": "chat/toolCallDelta", "turnId": turn.turn_id,
                            "toolCallId": id, "content": chunk });
        emit(shared, turn, delta)?;
    }
    Some(())
}

/// Waits for the user's confirmation: `None` when the call runs (go on), else how the
/// step ends (denied: next step; turn gone or no answer: stop).
async fn until_running(shared: &Shared, turn: &Turn, id: &str) -> Option<Flow> {
    match status_after(shared, turn, id, &["pending-confirmation"])
        .await
        .as_deref()
    {
        Some("running") => None,
        Some(_) => Some(Flow::Next),
        None => Some(Flow::Stop),
    }
}

/// Pauses a running MCP tool call for a token (`chat/toolCallAuthRequired`) and waits:
/// `Some(Flow::Next)` once resumed (go on and complete it), `None` when the client ended it
/// with a failed completion (the step is over), `Some(Flow::Stop)` when the turn is gone.
async fn until_authenticated(shared: &Shared, turn: &Turn, id: &str) -> Option<Flow> {
    let challenge = json!({ "type": "chat/toolCallAuthRequired", "turnId": turn.turn_id,
        "toolCallId": id, "auth": { "reason": "required",
        "resource": crate::host::auth::metadata(crate::host::auth::TOOL_RESOURCE) } });
    if emit(shared, turn, challenge).is_none() {
        return Some(Flow::Stop);
    }
    match status_after(shared, turn, id, &["auth-required"])
        .await
        .as_deref()
    {
        Some("running") => Some(Flow::Next),
        Some(_) => None,
        None => Some(Flow::Stop),
    }
}

/// The owning client completes a client tool; a result confirmation it asks for is the
/// user's business too.
async fn client_settles(shared: &Shared, turn: &Turn, id: &str) -> Flow {
    let settled = status_after(shared, turn, id, &["running"]).await;
    match settled.as_deref() {
        Some("pending-result-confirmation") => flow_of(
            status_after(shared, turn, id, &["pending-result-confirmation"])
                .await
                .map(drop),
        ),
        Some(_)
            if with_turn(shared, turn, |world| world.fault(Fault::ClientToolStalls))
                == Some(true) =>
        {
            Flow::Stop
        }
        Some(_) => Flow::Next,
        None => Flow::Stop,
    }
}

/// The host's own `toolCallComplete`; `None` once the turn has ended.
fn host_completes(shared: &Shared, turn: &Turn, call: &ToolCallStep, id: &str) -> Option<()> {
    let result = call.result.clone().unwrap_or(ToolResultStep {
        success: true,
        message: None,
        text: None,
    });
    let content = result
        .text
        .as_ref()
        .map(|text| json!([{ "type": "text", "text": text }]));
    let message = result.message.clone().unwrap_or_else(|| {
        if result.success {
            format!("Ran {}", call.name)
        } else {
            format!("{} failed", call.name)
        }
    });
    let complete = strip_nulls(
        json!({ "type": "chat/toolCallComplete", "turnId": turn.turn_id,
        "toolCallId": id, "requiresResultConfirmation": call.result_confirmation.then_some(true),
        "result": { "success": result.success, "pastTenseMessage": message, "content": content } }),
    );
    emit(shared, turn, complete)
}

pub(super) async fn run_input_request(
    shared: &Shared,
    turn: &Turn,
    step: &InputRequestStep,
) -> Flow {
    let id = step.id.clone().unwrap_or_else(|| random_id("req_"));
    let questions = step.questions.clone().map(with_question_ids);
    let request = strip_nulls(json!({ "type": "chat/inputRequested",
        "request": { "id": id, "message": step.message, "url": step.url, "questions": questions } }));
    if emit(shared, turn, request).is_none() {
        return Flow::Stop;
    }
    let deadline = Instant::now() + Duration::from_millis(MAX_WAIT_MS);
    let answered = wait_for(shared, turn, deadline, |world| {
        let active = world.chats.get(&turn.chat)?.state.active_turn.as_ref()?;
        let parts = to_value(&active.response_parts);
        parts.as_array()?.iter().find_map(|part| {
            let resolved = part["kind"] == "inputRequest"
                && part["request"]["id"] == id.as_str()
                && part.get("response").is_some_and(|r| !r.is_null());
            resolved.then(|| part["response"].clone())
        })
    })
    .await;
    match answered {
        Waited::Ready(response) => {
            let ended = with_turn(shared, turn, |world| {
                if world.fault(Fault::InputStatusWrong) {
                    world.force_activity(&turn.chat, 24);
                }
                let end_now = response == "accept" && world.fault(Fault::EndsTurnAfterAccept);
                if end_now {
                    world.complete_turn(turn);
                }
                end_now
            });
            if ended == Some(false) {
                Flow::Next
            } else {
                Flow::Stop
            }
        }
        Waited::TimedOut => Flow::Next,
        Waited::Gone => Flow::Stop,
    }
}

/// An id the way a real agent makes one up: unpredictable, so that a client (or a test)
/// can only learn it from the stream. The standard library's per-instance random hash keys
/// are the randomness; the counter keeps ids of one instant apart.
fn random_id(prefix: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static MADE: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(MADE.fetch_add(1, Ordering::Relaxed));
    format!("{prefix}{:016x}", hasher.finish())
}

/// Gives every object in `items` without an `id` a random one (confirmation options,
/// select options).
fn with_ids(items: Vec<Value>, prefix: &str) -> Vec<Value> {
    items
        .into_iter()
        .map(|mut item| {
            if let Some(object) = item.as_object_mut() {
                object
                    .entry("id")
                    .or_insert_with(|| Value::String(random_id(prefix)));
            }
            item
        })
        .collect()
}

fn with_option_ids(options: Vec<Value>) -> Vec<Value> {
    with_ids(options, "opt_")
}

/// Questions (and the options of select questions) without ids get random ones.
fn with_question_ids(questions: Vec<Value>) -> Vec<Value> {
    with_ids(questions, "q_")
        .into_iter()
        .map(|mut question| {
            if let Some(Value::Array(options)) = question.get_mut("options") {
                let items = std::mem::take(options);
                *options = with_option_ids(items);
            }
            question
        })
        .collect()
}
