//! The scripted test agent: runs one turn's [`Step`]s as host-originated chat actions.
//!
//! A turn runs as its own task. It touches the world only under the lock and only while
//! its turn is still the chat's active turn; cancelling, truncating or disposing aborts
//! the task, and any step that finds its turn gone simply stops.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::faults::Fault;
use super::script::{
    split_text, Confirmation, ErrorStep, InputRequestStep, Step, TextStep, ToolCallStep,
    MAX_WAIT_MS,
};
use super::world::{now_iso, ResumePoint, TurnRunner, World};
use super::Shared;

/// Who and what a running turn is.
#[derive(Debug, Clone)]
struct Turn {
    chat: String,
    turn_id: String,
    client_id: Option<String>,
}

/// How a step ended.
enum Flow {
    Next,
    /// The turn ended (by the step itself or from outside): stop the task.
    Stop,
}

/// What a bounded wait observed.
enum Waited<T> {
    Ready(T),
    TimedOut,
    Gone,
}

impl World {
    /// Starts the agent on the chat's active turn `turn_id`.
    pub fn start_agent(
        &mut self,
        chat: &str,
        turn_id: &str,
        steps: Vec<Step>,
        client_id: Option<String>,
    ) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let Some(entry) = self.chats.get_mut(chat) else {
            return;
        };
        if let Some(old) = entry.runner.take() {
            old.abort.abort();
        }
        let turn = Turn {
            chat: chat.to_owned(),
            turn_id: turn_id.to_owned(),
            client_id,
        };
        let task = tokio::spawn(run_turn(shared, turn, steps));
        entry.runner = Some(TurnRunner {
            abort: task.abort_handle(),
        });
    }

    /// Stops the agent of a chat whose turn ended from outside (cancel, truncate, dispose).
    pub fn stop_agent(&mut self, chat: &str) {
        if let Some(runner) = self
            .chats
            .get_mut(chat)
            .and_then(|entry| entry.runner.take())
        {
            runner.abort.abort();
        }
    }

    /// Starts a host-dispatched turn with `message` (e.g. from the queue).
    pub fn start_host_turn(&mut self, chat: &str, message: Value, queued_message_id: &str) {
        let turn_id = self.fresh_id("turn-");
        let text = message["text"].as_str().unwrap_or_default().to_owned();
        let mut action = json!({
            "type": "chat/turnStarted", "turnId": turn_id, "startedAt": now_iso(),
            "message": message, "queuedMessageId": queued_message_id,
        });
        if self.fault(Fault::QueuedTurnUnreferenced) {
            if let Some(turn) = action.as_object_mut() {
                turn.remove("queuedMessageId");
            }
        }
        if self.emit_chat(chat, action).is_some() {
            self.run_message(chat, &turn_id, &text, None);
        }
    }

    /// Plans the agent's work for a freshly started turn and starts it.
    pub fn run_message(
        &mut self,
        chat: &str,
        turn_id: &str,
        text: &str,
        client_id: Option<String>,
    ) {
        match super::script::plan_for_message(text) {
            Ok(steps) => self.start_agent(chat, turn_id, steps, client_id),
            Err(error) => {
                let error = json!({ "errorType": "InvalidScript", "message": error.to_string() });
                let duration = self.turn_duration(chat);
                self.emit_chat(
                    chat,
                    json!({ "type": "chat/error", "turnId": turn_id, "duration": duration,
                            "part": { "kind": "error", "error": error } }),
                );
            }
        }
    }

    /// If the chat is idle and has queued messages, consumes the next one: removes it from
    /// the queue, then starts a turn with it.
    pub fn consume_queue(&mut self, chat: &str) {
        let lifo = self.fault(Fault::QueueLifo);
        let Some(entry) = self.chats.get(chat) else {
            return;
        };
        if entry.state.active_turn.is_some() {
            return;
        }
        let queue = entry.state.queued_messages.as_deref().unwrap_or_default();
        let next = if lifo { queue.last() } else { queue.first() };
        let Some(next) = next else {
            return;
        };
        let id = next.id.clone();
        let message = super::world::to_value(&next.message);
        self.emit_chat(
            chat,
            json!({ "type": "chat/pendingMessageRemoved", "kind": "queued", "id": id }),
        );
        self.start_host_turn(chat, message, &id);
    }

    /// Milliseconds since the active turn's `startedAt` (0 when unknown or in the future).
    pub fn turn_duration(&self, chat: &str) -> i64 {
        let started = self
            .chats
            .get(chat)
            .and_then(|entry| entry.state.active_turn.as_ref())
            .and_then(|turn| turn.started_at.parse::<jiff::Timestamp>().ok());
        started.map_or(0, |started| {
            let elapsed = jiff::Timestamp::now().as_millisecond() - started.as_millisecond();
            elapsed.max(0)
        })
    }

    /// Consumes a steering message, if one is set, into the running turn.
    fn consume_steering(&mut self, turn: &Turn) {
        let Some(steering) = self
            .chats
            .get(&turn.chat)
            .and_then(|entry| entry.state.steering_message.clone())
        else {
            return;
        };
        self.emit_chat(
            &turn.chat,
            json!({ "type": "chat/pendingMessageRemoved", "kind": "steering", "id": steering.id }),
        );
        let part_id = self.fresh_id("steer-");
        self.emit_chat(
            &turn.chat,
            json!({ "type": "chat/responsePart", "turnId": turn.turn_id,
                    "part": { "kind": "markdown", "id": part_id,
                              "content": format!("Steering received: {}", steering.message.text) } }),
        );
    }

    fn turn_alive(&self, turn: &Turn) -> bool {
        self.chats
            .get(&turn.chat)
            .and_then(|entry| entry.state.active_turn.as_ref())
            .is_some_and(|active| active.id == turn.turn_id)
    }

    /// The JSON of a tool call in the active turn.
    fn tool_call(&self, turn: &Turn, tool_call_id: &str) -> Option<Value> {
        let active = self.chats.get(&turn.chat)?.state.active_turn.as_ref()?;
        let parts = super::world::to_value(&active.response_parts);
        parts.as_array()?.iter().find_map(|part| {
            let call = part.get("toolCall")?;
            (call["toolCallId"] == tool_call_id).then(|| call.clone())
        })
    }

    /// Ends the turn with `chat/turnComplete` and moves on to the queue.
    fn complete_turn(&mut self, turn: &Turn) {
        let duration = self.turn_duration(&turn.chat);
        let complete =
            json!({ "type": "chat/turnComplete", "turnId": turn.turn_id, "duration": duration });
        self.emit_chat(&turn.chat, complete.clone());
        if self.fault(Fault::TurnCompletedTwice) {
            // The turn is no longer active: the reducers ignore the second ending.
            self.emit_chat(&turn.chat, complete);
        }
        if self.fault(Fault::InProgressStuck) {
            self.force_activity(&turn.chat, 8);
        }
        if self.fault(Fault::ModifiedAtLate) {
            self.shift_modified_at(&turn.chat);
        }
        if let Some(entry) = self.chats.get_mut(&turn.chat) {
            entry.runner = None;
        }
        self.consume_queue(&turn.chat);
    }

    /// Overwrites the chat's activity bits behind the reducers' back (fault injection only).
    fn force_activity(&mut self, chat: &str, activity: u32) {
        let session = if let Some(entry) = self.chats.get_mut(chat) {
            entry.state.status = (entry.state.status & !31) | activity;
            entry.session.clone()
        } else {
            return;
        };
        self.sync_projections(&session);
    }
}

/// Runs `f` while the turn is still active; `None` once it has ended.
fn with_turn<R>(shared: &Shared, turn: &Turn, f: impl FnOnce(&mut World) -> R) -> Option<R> {
    let mut world = shared.lock();
    if !world.turn_alive(turn) {
        return None;
    }
    world.enter_turn(&turn.chat, turn.client_id.as_deref());
    let result = f(&mut world);
    world.turn_audience = None;
    Some(result)
}

/// Emits one host chat action on the live turn; `None` once the turn has ended.
fn emit(shared: &Shared, turn: &Turn, action: Value) -> Option<()> {
    with_turn(shared, turn, |world| {
        world.emit_chat(&turn.chat, action);
    })
}

/// Waits until `check` yields a value, the deadline passes, or the turn ends. Steering
/// messages that arrive meanwhile are consumed.
async fn wait_for<T>(
    shared: &Shared,
    turn: &Turn,
    deadline: Instant,
    mut check: impl FnMut(&World) -> Option<T>,
) -> Waited<T> {
    loop {
        let changed = {
            let mut world = shared.lock();
            if !world.turn_alive(turn) {
                return Waited::Gone;
            }
            world.consume_steering(turn);
            if let Some(value) = check(&world) {
                return Waited::Ready(value);
            }
            match world.chats.get(&turn.chat) {
                Some(entry) => Arc::clone(&entry.changed),
                None => return Waited::Gone,
            }
        };
        tokio::select! {
            () = changed.notified() => {}
            () = tokio::time::sleep_until(deadline) => return Waited::TimedOut,
        }
    }
}

async fn run_turn(shared: Arc<Shared>, turn: Turn, steps: Vec<Step>) {
    for (index, step) in steps.iter().enumerate() {
        if with_turn(&shared, &turn, |world| world.consume_steering(&turn)).is_none() {
            return;
        }
        let flow = match step {
            Step::Markdown(text) => stream_text(&shared, &turn, text, "markdown", "chat/delta"),
            Step::Reasoning(text) => {
                stream_text(&shared, &turn, text, "reasoning", "chat/reasoning")
            }
            Step::ToolCall(call) => run_tool_call(&shared, &turn, call).await,
            Step::InputRequest(request) => run_input_request(&shared, &turn, request).await,
            Step::Wait(wait) => {
                let deadline = Instant::now() + Duration::from_millis(wait.ms);
                match wait_for(&shared, &turn, deadline, |_| None::<()>).await {
                    Waited::Gone => Flow::Stop,
                    _ => Flow::Next,
                }
            }
            Step::WaitForCancel(_) => {
                let deadline = Instant::now() + Duration::from_millis(MAX_WAIT_MS);
                match wait_for(&shared, &turn, deadline, |_| None::<()>).await {
                    Waited::Gone => Flow::Stop,
                    _ => Flow::Next,
                }
            }
            Step::Usage(usage) => {
                let stale = with_turn(&shared, &turn, |world| world.fault(Fault::UsageWrongTurn))
                    .unwrap_or(false);
                let turn_id = if stale {
                    format!("{}-stale", turn.turn_id)
                } else {
                    turn.turn_id.clone()
                };
                let action = json!({ "type": "chat/usage", "turnId": turn_id,
                    "usage": { "inputTokens": usage.input_tokens,
                               "outputTokens": usage.output_tokens, "model": usage.model } });
                flow_of(emit(&shared, &turn, strip_nulls(action)))
            }
            Step::Canvases(_) => flow_of(emit(
                &shared,
                &turn,
                json!({ "type": "chat/canvasesChanged", "canvases": [] }),
            )),
            Step::Error(error) => {
                fail_turn(&shared, &turn, error, &steps[index + 1..]);
                Flow::Stop
            }
            Step::Complete(_) => break,
        };
        if let Flow::Stop = flow {
            return;
        }
        tokio::task::yield_now().await;
    }
    with_turn(&shared, &turn, |world| world.complete_turn(&turn));
}

fn flow_of(emitted: Option<()>) -> Flow {
    match emitted {
        Some(()) => Flow::Next,
        None => Flow::Stop,
    }
}

fn stream_text(shared: &Shared, turn: &Turn, text: &TextStep, kind: &str, delta: &str) -> Flow {
    let emitted = with_turn(shared, turn, |world| {
        if kind == "markdown" && world.fault(Fault::DeltaBeforePart) {
            let ghost = world.fresh_id("ghost-");
            world.emit_chat(
                &turn.chat,
                json!({ "type": delta, "turnId": turn.turn_id, "partId": ghost, "content": "?" }),
            );
        }
        let part_id = world.fresh_id("part-");
        world.emit_chat(
            &turn.chat,
            json!({ "type": "chat/responsePart", "turnId": turn.turn_id,
                    "part": { "kind": kind, "id": part_id, "content": "" } }),
        );
        for chunk in split_text(&text.text, text.chunks) {
            world.emit_chat(
                &turn.chat,
                json!({ "type": delta, "turnId": turn.turn_id, "partId": part_id, "content": chunk }),
            );
        }
    });
    flow_of(emitted)
}

fn fail_turn(shared: &Shared, turn: &Turn, error: &ErrorStep, rest: &[Step]) {
    with_turn(shared, turn, |world| {
        let part = json!({
            "kind": "error",
            "error": { "errorType": error.error_type.as_deref().unwrap_or("ScriptedError"),
                       "message": error.message },
            "resumable": error.resumable,
        });
        if world.fault(Fault::ErrorAsResponsePart) {
            world.emit_chat(
                &turn.chat,
                json!({ "type": "chat/responsePart", "turnId": turn.turn_id, "part": part }),
            );
        }
        let duration = world.turn_duration(&turn.chat);
        world.emit_chat(
            &turn.chat,
            json!({ "type": "chat/error", "turnId": turn.turn_id, "duration": duration, "part": part }),
        );
        if world.fault(Fault::ErrorStatusCleared) {
            world.force_activity(&turn.chat, 1);
        }
        if let Some(entry) = world.chats.get_mut(&turn.chat) {
            entry.runner = None;
            if error.resumable {
                entry.resumes.insert(
                    turn.turn_id.clone(),
                    ResumePoint {
                        turn_id: turn.turn_id.clone(),
                        steps: rest.to_vec(),
                        client_id: turn.client_id.clone(),
                    },
                );
            }
        }
    });
}

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

async fn run_tool_call(shared: &Shared, turn: &Turn, call: &ToolCallStep) -> Flow {
    let id = call.id.clone().unwrap_or_else(|| random_id("call_"));
    let options = call.options.clone().map(with_option_ids);
    let owner = call.client_id.clone().or_else(|| turn.client_id.clone());
    let contributor = if call.client {
        json!({ "kind": "client", "clientId": owner })
    } else {
        Value::Null
    };
    let start = json!({ "type": "chat/toolCallStart", "turnId": turn.turn_id, "toolCallId": id,
        "toolName": call.name, "displayName": call.display_name.as_deref().unwrap_or(&call.name),
        "contributor": contributor });
    with_turn(shared, turn, |world| {
        world.early_tool_delta(&turn.chat, &turn.turn_id, &id);
    });
    if emit(shared, turn, strip_nulls(start)).is_none() {
        return Flow::Stop;
    }
    for chunk in split_text(call.input.as_deref().unwrap_or_default(), call.input_chunks) {
        let delta = json!({ "type": "chat/toolCallDelta", "turnId": turn.turn_id,
                            "toolCallId": id, "content": chunk });
        if emit(shared, turn, delta).is_none() {
            return Flow::Stop;
        }
    }
    let ready = |confirmed: Option<&str>| {
        strip_nulls(
            json!({ "type": "chat/toolCallReady", "turnId": turn.turn_id, "toolCallId": id,
            "invocationMessage": format!("Running {}", call.name), "toolInput": call.input,
            "confirmed": confirmed, "options": options, "editable": call.editable }),
        )
    };
    let auto = call.confirmation == Confirmation::Auto;
    let maybe = call.result_confirmation
        && with_turn(shared, turn, |world| world.fault(Fault::ConfirmedMaybe)) == Some(true);
    let confirmed = if maybe { "maybe" } else { "not-needed" };
    if emit(shared, turn, ready(auto.then_some(confirmed))).is_none() {
        return Flow::Stop;
    }
    if !auto {
        match status_after(shared, turn, &id, &["pending-confirmation"])
            .await
            .as_deref()
        {
            Some("running") => {}
            Some(_) => return Flow::Next,
            None => return Flow::Stop,
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
        match status_after(shared, turn, &id, &["pending-confirmation"])
            .await
            .as_deref()
        {
            Some("running") => {}
            Some(_) => return Flow::Next,
            None => return Flow::Stop,
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
        // The owning client completes the call; a result confirmation it asks for is the
        // user's business too.
        let settled = status_after(shared, turn, &id, &["running"]).await;
        return match settled.as_deref() {
            Some("pending-result-confirmation") => flow_of(
                status_after(shared, turn, &id, &["pending-result-confirmation"])
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
        };
    }
    let result = call
        .result
        .clone()
        .unwrap_or(super::script::ToolResultStep {
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
    let withheld = auto
        && call.input.is_some()
        && with_turn(shared, turn, |world| {
            world.fault(Fault::AutoToolNeverCompletes)
        }) == Some(true);
    if !withheld && emit(shared, turn, complete).is_none() {
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

async fn run_input_request(shared: &Shared, turn: &Turn, step: &InputRequestStep) -> Flow {
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
        let parts = super::world::to_value(&active.response_parts);
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

/// Drops `null` members (top level and one level down) so optional fields stay absent.
fn strip_nulls(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.retain(|_, member| !member.is_null());
        for member in object.values_mut() {
            if let Some(inner) = member.as_object_mut() {
                inner.retain(|_, v| !v.is_null());
            }
        }
    }
    value
}
