//! Script steps that change state outside the chat (issue 29): the session's `_meta`
//! (`session/metaChanged`) and the agent's own description in the root state
//! (`root/agentsChanged`, the whole agent list).

use serde_json::{json, Map, Value};

use crate::host::faults::Fault;
use crate::host::world::{to_value, World, ROOT};

impl World {
    /// Replaces the `_meta` of the session that owns `chat`.
    pub(super) fn set_session_meta(&mut self, chat: &str, meta: &Map<String, Value>) {
        let Some(session) = self.chats.get(chat).map(|entry| entry.session.clone()) else {
            return;
        };
        let before = self
            .sessions
            .get(&session)
            .and_then(|entry| entry.state.meta.clone());
        self.emit_logged(
            &session,
            json!({ "type": "session/metaChanged", "_meta": meta }),
        );
        if self.fault(Fault::SessionMetaMerged) {
            // The old keys stay behind the reducer's back: a merge, not a replacement.
            if let (Some(entry), Some(before)) = (self.sessions.get_mut(&session), before) {
                let merged = entry.state.meta.get_or_insert_with(Default::default);
                for (key, value) in before {
                    merged.entry(key).or_insert(value);
                }
            }
        }
    }

    /// Sets the description of the agent behind `chat`'s session and announces the agent
    /// list to root subscribers.
    pub(super) fn describe_agent(&mut self, chat: &str, text: &str) {
        let provider = self
            .chats
            .get(chat)
            .and_then(|entry| self.sessions.get(&entry.session))
            .map(|entry| entry.state.provider.clone());
        let Some(provider) = provider else {
            return;
        };
        if self.fault(Fault::AgentsChangedUnannounced) {
            for agent in self
                .root
                .agents
                .iter_mut()
                .filter(|a| a.provider == provider)
            {
                agent.description = text.to_owned();
            }
            return;
        }
        let mut agents = to_value(&self.root.agents);
        let wrong_agent = self.fault(Fault::WrongAgentDescribed);
        for agent in agents.as_array_mut().into_iter().flatten() {
            if (agent["provider"] == provider.as_str()) != wrong_agent {
                agent["description"] = json!(text);
            }
        }
        self.break_root_agents(&mut agents);
        self.emit_logged(
            ROOT,
            json!({ "type": "root/agentsChanged", "agents": agents }),
        );
    }
}
