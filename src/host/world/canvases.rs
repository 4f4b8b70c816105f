//! Canvases (issue 29, i29d): live presentation surfaces a chat lists in `canvases`
//! (`chat/canvasesChanged`), each its own `ahp-canvas:` channel whose whole state
//! `canvas/stateChanged` replaces. The scripted agent's `canvas` step opens one (the first
//! time an id is used in a chat) or gives it a new state.

use std::collections::BTreeMap;

use ahp::reducers::apply_action_to_canvas;
use ahp_types::actions::StateAction;
use ahp_types::state::CanvasState;
use serde_json::{json, Value};

use super::{to_value, World};
use crate::host::faults::Fault;

/// One canvas channel.
#[derive(Debug)]
pub struct CanvasEntry {
    /// The chat that lists it.
    pub chat: String,
    pub state: CanvasState,
}

/// Canvas channels by URI.
pub type Canvases = BTreeMap<String, CanvasEntry>;

impl World {
    /// Folds an action into a canvas channel.
    pub(super) fn apply_canvas(&mut self, uri: &str, action: &StateAction) {
        if let Some(entry) = self.canvases.get_mut(uri) {
            apply_action_to_canvas(&mut entry.state, action);
        }
    }

    /// Opens canvas `id` in `chat` (listed with `chat/canvasesChanged`), or replaces its
    /// state (`canvas/stateChanged`) when the chat already lists it.
    pub(in crate::host) fn agent_canvas(
        &mut self,
        chat: &str,
        id: &str,
        title: Option<&str>,
        status: Option<&str>,
    ) {
        let mut state = json!({ "instanceId": id, "extensionId": "ahpspec",
                                "extensionName": "ahpspec scripted agent",
                                "canvasId": "ahpspec-board" });
        if let Some(title) = title {
            state["title"] = json!(title);
        }
        if let Some(status) = status {
            state["status"] = json!(status);
        }
        let Ok(decoded) = serde_json::from_value::<CanvasState>(state.clone()) else {
            return;
        };
        let existing = self
            .canvases
            .iter()
            .find(|(_, entry)| entry.chat == chat && entry.state.instance_id == id)
            .map(|(uri, entry)| (uri.clone(), entry.state.title.clone()));
        let Some((uri, old_title)) = existing else {
            let uri = self.fresh_id("ahp-canvas:/canvas-");
            self.canvases.insert(
                uri,
                CanvasEntry {
                    chat: chat.to_owned(),
                    state: decoded,
                },
            );
            let listed: Vec<Value> = self
                .canvases
                .iter()
                .filter(|(_, entry)| entry.chat == chat)
                .map(|(uri, _)| json!({ "resource": uri }))
                .collect();
            self.emit_chat(
                chat,
                json!({ "type": "chat/canvasesChanged", "canvases": listed }),
            );
            return;
        };
        self.emit_logged(
            &uri,
            json!({ "type": "canvas/stateChanged", "canvas": state }),
        );
        if let (true, Some(entry)) = (
            self.fault(Fault::CanvasStateMerged),
            self.canvases.get_mut(&uri),
        ) {
            // The old title stays behind the reducer's back: a merge, not a replacement.
            if entry.state.title.is_none() {
                entry.state.title = old_title;
            }
        }
    }

    /// Drops the canvases of a chat that is gone.
    pub(in crate::host) fn drop_canvases(&mut self, chat: &str) {
        if self.fault(Fault::DisposedCanvasesKept) {
            return;
        }
        let gone: Vec<String> = self
            .canvases
            .iter()
            .filter(|(_, entry)| entry.chat == chat)
            .map(|(uri, _)| uri.clone())
            .collect();
        for uri in gone {
            self.canvases.remove(&uri);
            for conn in self.conns.values_mut() {
                conn.subscriptions.remove(&uri);
            }
        }
    }

    /// The snapshot state of a canvas channel.
    pub(in crate::host) fn canvas_state(&self, uri: &str) -> Option<Value> {
        Some(to_value(&self.canvases.get(uri)?.state))
    }
}
