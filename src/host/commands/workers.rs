//! Worker chats (issue 29, i29d): a chat the scripted agent spawns from a tool call (a
//! sub-agent), with origin `{kind: "tool", chat, toolCallId}` naming the spawning call. It
//! joins the session's catalog (`session/chatAdded`) and runs its task as a turn of its own.

use serde_json::json;

use super::chats::new_chat;
use crate::host::faults::Fault;
use crate::host::world::{now_iso, to_value, World};

impl World {
    /// Spawns a worker chat in the session of `chat` for its tool call `tool_call_id`, and
    /// starts a turn there with `task` as the message; the worker's URI, or `None` when
    /// `chat` is gone.
    pub(in crate::host) fn spawn_worker_chat(
        &mut self,
        chat: &str,
        tool_call_id: &str,
        title: &str,
        task: &str,
    ) -> Option<String> {
        let session = self.chats.get(chat)?.session.clone();
        let worker = self.fresh_id("ahp-chat:/worker-");
        let mut state = to_value(&new_chat(&worker, title, &now_iso(), None).ok()?);
        state["origin"] = if self.fault(Fault::WorkerOriginUser) {
            json!({ "kind": "user" })
        } else {
            json!({ "kind": "tool", "chat": chat, "toolCallId": tool_call_id })
        };
        let state = serde_json::from_value(state).ok()?;
        self.add_chat(&session, state, Some(json!({ "text": task })), None);
        Some(worker)
    }
}
