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
use super::script::{split_text, ErrorStep, Step, TextStep, MAX_WAIT_MS};
use super::world::{now_iso, ResumePoint, TurnRunner, World};
use super::Shared;

mod interactive;
// Issue 29 (i29b): session metadata and agent changes from a script.
mod state_steps;
// Issue 29 (i29d): customizations, session activity, canvases from a script.
mod session_steps;

use interactive::{run_input_request, run_tool_call};

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
        // A producer's clock may go backwards: the reducer clamps what it reports to 0.
        let duration = match self.fault(Fault::NegativeTurnDuration) {
            true => -1,
            false => self.turn_duration(&turn.chat),
        };
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
        if self.fault(Fault::CompletedToolSkipped) {
            self.skip_completed_tool_call(&turn.chat);
        }
        if self.fault(Fault::ForkOriginForgotten) {
            self.forget_origin(&turn.chat);
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
    // Background work the background-work-ends-with-turn fault removes at the turn's end.
    let mut ended_work: Vec<String> = Vec::new();
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
            Step::Activity(activity) => flow_of(emit(
                &shared,
                &turn,
                json!({ "type": "chat/activityChanged", "activity": activity.text }),
            )),
            Step::BackgroundWork(work) => {
                let ends_with_turn = with_turn(&shared, &turn, |world| {
                    world.fault(Fault::BackgroundWorkEndsWithTurn)
                })
                .unwrap_or(false);
                if ends_with_turn {
                    ended_work.push(work.id.clone());
                }
                flow_of(emit(
                    &shared,
                    &turn,
                    json!({ "type": "chat/backgroundWorkSet", "work": { "kind": "shell",
                        "id": work.id, "label": work.label, "startedAt": now_iso(),
                        "command": work.command } }),
                ))
            }
            Step::BackgroundWorkDone(work) => flow_of(emit(
                &shared,
                &turn,
                json!({ "type": "chat/backgroundWorkRemoved", "id": work.id }),
            )),
            Step::SessionMeta(meta) => flow_of(with_turn(&shared, &turn, |world| {
                world.set_session_meta(&turn.chat, &meta.meta);
            })),
            Step::AgentDescription(text) => flow_of(with_turn(&shared, &turn, |world| {
                world.describe_agent(&turn.chat, &text.text);
            })),
            step @ (Step::Plugin(_)
            | Step::CustomizationRemoved(_)
            | Step::Customizations(_)
            | Step::SessionActivity(_)
            | Step::Canvas(_)
            | Step::Subagent(_)) => flow_of(with_turn(&shared, &turn, |world| {
                world.session_step(&turn.chat, &turn.turn_id, step);
            })),
            Step::EditFile(edit) => {
                let outcome = with_turn(&shared, &turn, |world| {
                    world.agent_edit(&turn.chat, &edit.path, &edit.text)
                });
                match outcome {
                    Some(Ok(())) => Flow::Next,
                    Some(Err(why)) => {
                        let error = ErrorStep {
                            message: format!("editFile: {why}"),
                            error_type: None,
                            resumable: false,
                        };
                        fail_turn(&shared, &turn, &error, &[]);
                        Flow::Stop
                    }
                    None => Flow::Stop,
                }
            }
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
    with_turn(&shared, &turn, |world| {
        for id in ended_work {
            world.emit_chat(
                &turn.chat,
                json!({ "type": "chat/backgroundWorkRemoved", "id": id }),
            );
        }
        world.complete_turn(&turn)
    });
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
