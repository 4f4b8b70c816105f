//! Customizations and MCP servers (issue 29). Every session of this host starts with three
//! customizations in its state: a plugin ([`PLUGIN`], loaded, with one skill child) and two
//! MCP servers, stopped. Their lifecycle is the host's: a client asks to start or stop a
//! server (`session/mcpServerStartRequested` / `StopRequested`, folded optimistically by the
//! reducer), and the host reports the outcome with `session/mcpServerStateChanged`:
//!
//! - [`ECHO_SERVER`] starts at once: `ready`, and its tool joins the session's
//!   `serverTools` (`session/serverToolsChanged`);
//! - [`SLOW_SERVER`] keeps starting and reports its start as blocking (`starting`,
//!   `blocking: true`; the host does not actually hold turns back), until a client backgrounds it
//!   (`session/mcpServerBackgroundRequested`): the host then finishes the start (`ready`, its
//!   tool joins).
//!
//! A stopped server's tools leave `serverTools`. A client's `session/customizationToggled`
//! on a customization the session lists is applied; the scripted agent changes the list
//! itself (script steps `plugin`, `customizationRemoved`, `customizations`).

use serde_json::{json, Value};

use super::faults::Fault;
use super::world::{to_value, World};

/// The MCP server that is ready as soon as it starts.
pub const ECHO_SERVER: &str = "ahpspec-echo";
/// The MCP server whose start blocks until a client backgrounds it.
pub const SLOW_SERVER: &str = "ahpspec-slow";
/// The plugin container every session starts with.
pub const PLUGIN: &str = "ahpspec-tools";

/// The customizations a new session starts with (`SessionState.customizations`).
pub fn initial() -> Value {
    json!([
        mcp_server(ECHO_SERVER),
        mcp_server(SLOW_SERVER),
        plugin(PLUGIN, "ahpspec tools")
    ])
}

fn mcp_server(id: &str) -> Value {
    let mut server = json!({ "type": "mcpServer", "id": id,
            "uri": format!("file:///ahpspec/mcp/{id}.json"), "name": id,
            "state": { "kind": "stopped" } });
    if id == ECHO_SERVER {
        server["mcpApp"] = super::mcp_apps::echo_app();
    }
    server
}

/// A loaded plugin container with one skill child (`<id>/review`).
pub fn plugin(id: &str, name: &str) -> Value {
    json!({ "type": "plugin", "id": id, "uri": format!("file:///ahpspec/plugins/{id}"),
            "name": name, "load": { "kind": "loaded" },
            "children": [{ "type": "skill", "id": format!("{id}/review"),
                           "uri": format!("file:///ahpspec/plugins/{id}/review.md"),
                           "name": "review" }] })
}

/// The tool a ready MCP server contributes to the session's `serverTools`.
fn server_tool(server: &str) -> Value {
    json!({ "name": format!("{server}/echo"), "title": format!("Echo ({server})"),
            "description": "Answers with its input.",
            "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } } } })
}

impl World {
    /// The session's top-level customizations as JSON (empty when it has none).
    fn customizations_json(&self, session: &str) -> Vec<Value> {
        self.sessions
            .get(session)
            .and_then(|entry| entry.state.customizations.as_ref())
            .map(|list| list.iter().map(to_value).collect())
            .unwrap_or_default()
    }

    /// The top-level customization `id` of `session`, as JSON.
    pub(super) fn customization(&self, session: &str, id: &str) -> Option<Value> {
        self.customizations_json(session)
            .into_iter()
            .find(|c| c["id"] == id)
    }

    /// Why a client's customization or MCP server action on `session` is refused: it names
    /// nothing the session lists (a toggle may name a container's child).
    pub(super) fn check_customization_action(
        &self,
        session: &str,
        type_name: &str,
        action: &Value,
    ) -> Result<(), String> {
        let id = action["id"].as_str().unwrap_or_default();
        let list = self.customizations_json(session);
        if type_name == "session/customizationToggled" {
            if self.fault(Fault::CustomizationToggleRefused) {
                return Err("customizations cannot be toggled here".into());
            }
            let child = |c: &Value| {
                c["children"]
                    .as_array()
                    .is_some_and(|kids| kids.iter().any(|k| k["id"] == id))
            };
            let toggles =
                |c: &Value| !self.fault(Fault::OnlyServersToggle) || c["type"] == "mcpServer";
            return match list
                .iter()
                .any(|c| (c["id"] == id || child(c)) && toggles(c))
            {
                true => Ok(()),
                false => Err("no such customization".into()),
            };
        }
        match list
            .iter()
            .any(|c| c["id"] == id && c["type"] == "mcpServer")
        {
            true => Ok(()),
            false => Err("no such MCP server".into()),
        }
    }

    /// The host's authoritative answer to an accepted MCP server request: the state the
    /// server reached, and the tools it contributes.
    pub(super) fn after_mcp_request(&mut self, session: &str, type_name: &str, action: &Value) {
        let id = action["id"].as_str().unwrap_or_default().to_owned();
        let state = match type_name {
            "session/mcpServerStartRequested" if self.fault(Fault::McpStartUnconfirmed) => None,
            "session/mcpServerStartRequested" if id == SLOW_SERVER => {
                Some(json!({ "kind": "starting", "blocking": true }))
            }
            "session/mcpServerStartRequested" => Some(json!({ "kind": "ready" })),
            // Backgrounded, the slow server finishes its start.
            "session/mcpServerBackgroundRequested" => {
                let starting = self
                    .customization(session, &id)
                    .is_some_and(|c| c["state"]["kind"] == "starting");
                starting.then(|| json!({ "kind": "ready" }))
            }
            _ => None,
        };
        if let Some(state) = state {
            let mut changed =
                json!({ "type": "session/mcpServerStateChanged", "id": id, "state": state });
            // Ready, the echo server's MCP App gets its side-channel.
            if id == ECHO_SERVER && changed["state"]["kind"] == "ready" {
                changed["channel"] = json!(super::mcp_apps::channel_of(session, &id));
            }
            self.emit_logged(session, changed);
        }
        self.publish_server_tools(session);
    }

    /// Publishes the session's `serverTools` (the tools of its ready MCP servers) when they
    /// changed.
    fn publish_server_tools(&mut self, session: &str) {
        let tools: Vec<Value> = self
            .customizations_json(session)
            .iter()
            .filter(|c| c["type"] == "mcpServer" && c["state"]["kind"] == "ready")
            .filter_map(|c| c["id"].as_str().map(server_tool))
            .collect();
        let current = self
            .sessions
            .get(session)
            .and_then(|entry| entry.state.server_tools.as_ref())
            .map(to_value)
            .unwrap_or(json!([]));
        if current != json!(tools) {
            self.emit_logged(
                session,
                json!({ "type": "session/serverToolsChanged", "tools": tools }),
            );
        }
    }

    /// A script step's change of the session's customizations: a plugin upserted, a
    /// customization removed, or the list replaced by the session's own three (what the
    /// agent added is dropped; the MCP servers keep their state).
    pub(in crate::host) fn agent_customization_change(&mut self, session: &str, action: Value) {
        let action = match action["type"].as_str() {
            Some("session/customizationsChanged") => {
                let own = [ECHO_SERVER, SLOW_SERVER, PLUGIN];
                let kept: Vec<Value> = self
                    .customizations_json(session)
                    .into_iter()
                    .filter(|c| own.iter().any(|id| c["id"] == *id))
                    .collect();
                json!({ "type": "session/customizationsChanged", "customizations": kept })
            }
            _ => action,
        };
        let removed = (action["type"] == "session/customizationRemoved")
            .then(|| self.customization(session, action["id"].as_str().unwrap_or_default()))
            .flatten();
        self.emit_logged(session, action);
        if let (true, Some(entry), Some(removed)) = (
            self.fault(Fault::CustomizationRemovedKept),
            self.sessions.get_mut(session),
            removed.and_then(|c| serde_json::from_value(c).ok()),
        ) {
            // The entry stays behind the reducer's back.
            entry
                .state
                .customizations
                .get_or_insert_with(Vec::new)
                .push(removed);
        }
        self.publish_server_tools(session);
    }
}
