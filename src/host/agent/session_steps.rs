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
    pub(super) fn session_step(&mut self, chat: &str, step: &Step) {
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
            _ => {}
        }
    }
}
