//! Script steps that change the session beside the chat (issue 29, i29d): its
//! customizations (`session/customizationUpdated`, `customizationRemoved`,
//! `customizationsChanged`), its activity (`session/activityChanged`) and the chat's
//! canvases (`chat/canvasesChanged`, `canvas/stateChanged`).

use serde_json::json;

use crate::host::customizations::plugin;
use crate::host::faults::Fault;
use crate::host::script::Step;
use crate::host::world::World;

impl World {
    /// Runs one session-state step of the turn running in `chat`.
    pub(super) fn session_step(&mut self, chat: &str, turn_id: &str, step: &Step) {
        let Some(session) = self.chats.get(chat).map(|entry| entry.session.clone()) else {
            return;
        };
        match step {
            Step::Plugin(p) => self.agent_customization_change(
                &session,
                json!({ "type": "session/customizationUpdated",
                        "customization": plugin(&p.id, &p.name) }),
            ),
            Step::CustomizationRemoved(removed) => self.agent_customization_change(
                &session,
                json!({ "type": "session/customizationRemoved", "id": removed.id }),
            ),
            Step::Customizations(_) => self.agent_customization_change(
                &session,
                json!({ "type": "session/customizationsChanged" }),
            ),
            Step::SessionActivity(activity) => {
                let stuck = activity.text.is_none() && self.fault(Fault::SessionActivityStuck);
                let before = self
                    .sessions
                    .get(&session)
                    .and_then(|entry| entry.state.activity.clone());
                let mut action = json!({ "type": "session/activityChanged" });
                if let Some(text) = &activity.text {
                    action["activity"] = json!(text);
                }
                self.emit_logged(&session, action);
                if let (true, Some(entry)) = (stuck, self.sessions.get_mut(&session)) {
                    // The old activity stays behind the reducer's back.
                    entry.state.activity = before;
                }
            }
            Step::Canvas(canvas) => self.agent_canvas(
                chat,
                &canvas.id,
                canvas.title.as_deref(),
                canvas.status.as_deref(),
            ),
            Step::Subagent(sub) => self.agent_subagent(chat, turn_id, &sub.title, &sub.task),
            _ => {}
        }
    }

    /// A sub-agent tool call in the turn `turn_id` of `chat`: started and ready, a worker
    /// chat spawned for it, and completed with a `subagent` content naming the worker.
    fn agent_subagent(&mut self, chat: &str, turn_id: &str, title: &str, task: &str) {
        let id = self.fresh_id("call-subagent-");
        self.emit_chat(
            chat,
            json!({ "type": "chat/toolCallStart", "turnId": turn_id, "toolCallId": id,
                    "toolName": "runSubagent", "displayName": "Sub-agent" }),
        );
        self.emit_chat(
            chat,
            json!({ "type": "chat/toolCallReady", "turnId": turn_id, "toolCallId": id,
                    "invocationMessage": format!("Delegating: {title}"),
                    "confirmed": "not-needed" }),
        );
        let Some(worker) = self.spawn_worker_chat(chat, &id, title, task) else {
            return;
        };
        let mut content = vec![
            json!({ "type": "subagent", "resource": worker, "title": title,
                                       "description": task }),
        ];
        if self.fault(Fault::SubagentResultUnnamed) {
            content = vec![json!({ "type": "text", "text": format!("delegated to {title}") })];
        }
        self.emit_chat(
            chat,
            json!({ "type": "chat/toolCallComplete", "turnId": turn_id, "toolCallId": id,
                    "result": { "success": true, "pastTenseMessage": format!("Delegated: {title}"),
                                "content": content } }),
        );
    }
}
