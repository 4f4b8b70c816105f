//! Automation runs (issue 29, i29c): a run's lifecycle follows the session it started.
//!
//! Once the run's session is ready, its default chat gets the automation's message as a
//! host-started turn (origin kind automation) and the scripted agent works on it; the turn's
//! end ends the run (complete: completed, cancelled: cancelled, error: failed), and a
//! session that fails to start fails it. `automationRun/cancelRequested` cancels the turn
//! (or, before it started, the run). Disposing a linked session unlinks it
//! (`automationRun/sessionRemoved`); a run that loses its session before it ended fails.
//! Every change of a run is also published in its automation's entry (`automation/set`); when
//! a run ends, the automation's oldest pending run starts.

use ahp_types::state::{AutomationRunLifecycle, TurnState};
use serde_json::{json, Value};

use crate::host::faults::Fault;
use crate::host::world::{now_iso, to_value, World};

/// How a run ends.
enum End {
    Completed,
    Failed(Value),
    Cancelled,
}

/// Whether a run is still pending or running.
pub fn active(lifecycle: &AutomationRunLifecycle) -> bool {
    matches!(
        lifecycle,
        AutomationRunLifecycle::Pending(_) | AutomationRunLifecycle::Running(_)
    )
}

fn terminal(lifecycle: &AutomationRunLifecycle) -> bool {
    !active(lifecycle)
}

impl World {
    /// Moves the run `session` belongs to along with it (called whenever the session's
    /// projections are refreshed: after its `ready`, after each turn's end).
    pub(in crate::host) fn follow_automation_run(&mut self, session: &str) {
        let Some(run) = self.automations.by_session.get(session).cloned() else {
            return;
        };
        let Some(entry) = self.automations.runs.get(&run) else {
            return;
        };
        if terminal(&entry.state.lifecycle) {
            return;
        }
        let turn = entry.turn.clone();
        let Some(state) = self.sessions.get(session).map(|s| &s.state) else {
            return;
        };
        match to_value(&state.lifecycle).as_str() {
            Some("ready") => {}
            Some("creating") => return,
            _ => {
                let error = state.creation_error.as_ref().map_or_else(
                    || json!({ "errorType": "SessionFailed", "message": "the run's session failed" }),
                    to_value,
                );
                return self.end_run(&run, End::Failed(error));
            }
        }
        let Some((chat, turn_id)) = turn else {
            let chat = state.default_chat.clone().unwrap_or_default();
            return self.start_run_turn(&run, &chat);
        };
        let ended = self
            .chats
            .get(&chat)
            .and_then(|entry| entry.state.turns.iter().find(|t| t.id == turn_id))
            .map(|turn| turn.state);
        match ended {
            Some(TurnState::Complete) if self.fault(Fault::AutomationRunNeverCompletes) => {}
            Some(TurnState::Complete) => self.end_run(&run, End::Completed),
            Some(TurnState::Cancelled) => self.end_run(&run, End::Cancelled),
            Some(TurnState::Error) => self.end_run(
                &run,
                End::Failed(json!({ "errorType": "TurnFailed",
                                    "message": "the run's turn ended in an error" })),
            ),
            None => {}
        }
    }

    /// Starts the turn that sends the run's message in `chat`.
    fn start_run_turn(&mut self, run: &str, chat: &str) {
        let turn_id = self.fresh_id("turn-");
        let Some(entry) = self.automations.runs.get_mut(run) else {
            return;
        };
        // Recorded first: the turn's own actions refresh the session's projections again.
        entry.turn = Some((chat.to_owned(), turn_id.clone()));
        let message = entry.message.clone();
        let text = message["text"].as_str().unwrap_or_default().to_owned();
        let started = json!({ "type": "chat/turnStarted", "turnId": turn_id,
                              "startedAt": now_iso(), "message": message });
        if self.emit_chat(chat, started).is_some() {
            self.run_message(chat, &turn_id, &text, None);
        }
    }

    /// Ends a run: its final lifecycle, published in its automation's entry too.
    fn end_run(&mut self, run: &str, end: End) {
        let Some(entry) = self.automations.runs.get(run) else {
            return;
        };
        let automation = entry.state.automation.clone();
        let before = to_value(&entry.state.lifecycle);
        let mut lifecycle = json!({ "createdAt": before["createdAt"], "completedAt": now_iso() });
        if let Some(started) = before.get("startedAt") {
            lifecycle["startedAt"] = started.clone();
        }
        match end {
            End::Completed => lifecycle["status"] = json!("completed"),
            End::Cancelled => lifecycle["status"] = json!("cancelled"),
            End::Failed(error) => {
                lifecycle["status"] = json!("failed");
                lifecycle["error"] = error;
            }
        }
        self.emit_unless_unannounced(
            run,
            json!({ "type": "automationRun/lifecycleChanged", "lifecycle": lifecycle }),
        );
        self.publish_automation(&automation);
        // The automation's next requested run may start now.
        if let Some(next) = self.next_pending_run(&automation) {
            self.start_run_session(&next);
        }
    }

    /// Fails a run that could not start its session (before execution began).
    pub(in crate::host) fn fail_run_start(&mut self, run: &str, message: String) {
        let error = json!({ "errorType": "RunNotStarted", "message": message });
        self.end_run(run, End::Failed(error));
    }

    /// Marks a run running, linked to the session it started (its primary session).
    pub(in crate::host) fn run_started(&mut self, run: &str, session: &str) {
        let Some(entry) = self.automations.runs.get(run) else {
            return;
        };
        let automation = entry.state.automation.clone();
        let created = to_value(&entry.state.lifecycle)["createdAt"].clone();
        let actions = [
            json!({ "type": "automationRun/lifecycleChanged",
                    "lifecycle": { "status": "running", "createdAt": created, "startedAt": now_iso() } }),
            json!({ "type": "automationRun/sessionSet", "session": session }),
            json!({ "type": "automationRun/primarySessionChanged", "primarySession": session }),
        ];
        for action in actions {
            self.emit_logged(run, action);
        }
        self.publish_automation(&automation);
    }

    /// Cancels a run a client asked to cancel (its cancel request was accepted).
    pub(in crate::host) fn cancel_run(&mut self, run: &str) {
        if self.fault(Fault::AutomationCancelIgnored) {
            return;
        }
        let Some(entry) = self.automations.runs.get(run) else {
            return;
        };
        let Some((chat, turn_id)) = entry.turn.clone() else {
            return self.end_run(run, End::Cancelled);
        };
        let active = self
            .chats
            .get(&chat)
            .and_then(|entry| entry.state.active_turn.as_ref())
            .is_some_and(|active| active.id == turn_id);
        if active {
            let duration = self.turn_duration(&chat);
            self.emit_chat(
                &chat,
                json!({ "type": "chat/turnCancelled", "turnId": turn_id, "duration": duration }),
            );
            self.stop_agent(&chat);
        }
        // The turn may have ended on its own before: the run follows what it became.
        if let Some(session) = self.chats.get(&chat).map(|entry| entry.session.clone()) {
            self.follow_automation_run(&session);
        }
    }

    /// Unlinks a disposed session from its run.
    pub(in crate::host) fn unlink_run_session(&mut self, session: &str) {
        if self.fault(Fault::AutomationSessionLinkKept) {
            return;
        }
        let Some(run) = self.automations.by_session.remove(session) else {
            return;
        };
        let Some(entry) = self.automations.runs.get(&run) else {
            return;
        };
        let ended = terminal(&entry.state.lifecycle) && !self.fault(Fault::EndedRunFailedOnDispose);
        let automation = entry.state.automation.clone();
        self.emit_logged(
            &run,
            json!({ "type": "automationRun/sessionRemoved", "session": session }),
        );
        if ended {
            self.publish_automation(&automation);
        } else {
            let error = json!({ "errorType": "SessionDisposed",
                                "message": "the run's session was disposed before it ended" });
            self.end_run(&run, End::Failed(error));
        }
    }
}
