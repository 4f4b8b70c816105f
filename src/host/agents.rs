//! The agents this host offers, as advertised in its root state.

use ahp_types::state::RootState;
use serde_json::{json, Value};

/// Which agent runs a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// The scripted test agent (`ahpspec-scripted`).
    Scripted,
    /// An agent whose sessions always fail to initialise (`ahpspec-unavailable`).
    Unavailable,
    /// The scripted agent behind a protected resource (`ahpspec-protected`): its sessions
    /// need a token (issue 25, authentication; see the auth module).
    Protected,
}

/// Provider id of the scripted test agent (the opt-in contract documented in docs/profiles.md).
pub const SCRIPTED_PROVIDER: &str = "ahpspec-scripted";
/// Provider id of an agent whose sessions always fail to initialise.
pub const UNAVAILABLE_PROVIDER: &str = "ahpspec-unavailable";

// Issue 25, authentication (i25c): the protected agent and resources (the auth module
// keeps the tokens).
/// Provider id of the agent whose sessions need a token (opt-in: a client chooses it with
/// `createSession.provider`; the default catalog run's profile names it).
pub const PROTECTED_PROVIDER: &str = "ahpspec-protected";
/// The protected resource the [`PROTECTED_PROVIDER`] agent advertises.
pub const AGENT_RESOURCE: &str = "https://agent.ahpspec.test/";
/// The protected resource the scripted agent's MCP-contributed tool calls ask a token for.
pub const TOOL_RESOURCE: &str = "https://mcp.ahpspec.test/";

/// RFC 9728 metadata of one of this host's protected resources.
pub fn metadata(resource: &str) -> Value {
    let name = if resource == TOOL_RESOURCE {
        "ahpspec MCP tools"
    } else {
        "ahpspec protected agent"
    };
    json!({
        "resource": resource,
        "resource_name": name,
        "authorization_servers": ["https://auth.ahpspec.test/"],
        "scopes_supported": ["ahpspec"],
        "bearer_methods_supported": ["header"],
        "required": true,
    })
}

/// Resolves a `createSession.provider` (absent = the scripted agent).
pub fn agent_for(provider: Option<&str>) -> Option<AgentKind> {
    match provider {
        None | Some(SCRIPTED_PROVIDER) => Some(AgentKind::Scripted),
        Some(UNAVAILABLE_PROVIDER) => Some(AgentKind::Unavailable),
        Some(PROTECTED_PROVIDER) => Some(AgentKind::Protected),
        Some(_) => None,
    }
}

pub fn provider_name(agent: AgentKind) -> &'static str {
    match agent {
        AgentKind::Scripted => SCRIPTED_PROVIDER,
        AgentKind::Unavailable => UNAVAILABLE_PROVIDER,
        AgentKind::Protected => PROTECTED_PROVIDER,
    }
}

/// The root state the host starts with (without the protected agent under the
/// no-protected-agent variant).
pub fn root_state(without_protected: bool) -> RootState {
    let mut value = json!({
        "agents": [
            {
                "provider": SCRIPTED_PROVIDER,
                "displayName": "ahpspec scripted agent",
                "description": "Deterministic test agent: a user message starting with `ahpspec-script:` carries a JSON script of the turn (see schemas/agent-script.schema.json).",
                "models": [{ "id": "scripted-1", "provider": SCRIPTED_PROVIDER, "name": "Scripted" }],
                "capabilities": { "multipleChats": { "fork": true, "sideChat": true }, "multipleWorkingDirectories": { "primaryReplacement": true } }
            },
            {
                "provider": UNAVAILABLE_PROVIDER,
                "displayName": "ahpspec unavailable agent",
                "description": "Every session of this agent fails to initialise (session/creationFailed).",
                "models": []
            },
            {
                "provider": PROTECTED_PROVIDER,
                "displayName": "ahpspec protected agent",
                "description": "The scripted agent behind a protected resource: creating a session needs a token pushed with authenticate first.",
                "models": [{ "id": "scripted-1", "provider": PROTECTED_PROVIDER, "name": "Scripted" }],
                "protectedResources": [metadata(AGENT_RESOURCE)],
                "capabilities": { "multipleChats": { "fork": true, "sideChat": true }, "multipleWorkingDirectories": { "primaryReplacement": true } }
            }
        ],
        "activeSessions": 0,
        // Terminal support (issue 25): the list is there, empty until one is created.
        "terminals": [],
        // The host's own settings, which clients change with root/configChanged (ROOT-012).
        "config": {
            "schema": { "type": "object", "properties": {
                "telemetryLevel": { "type": "string", "title": "Telemetry level",
                                    "enum": ["off", "errors", "all"], "default": "errors" },
                "autoUpdate": { "type": "boolean", "title": "Update agents automatically",
                                "default": true },
            } },
            "values": { "telemetryLevel": "errors", "autoUpdate": true },
        }
    });
    if without_protected {
        if let Some(agents) = value["agents"].as_array_mut() {
            agents.retain(|agent| agent["provider"] != PROTECTED_PROVIDER);
        }
    }
    // The literal above is a valid RootState; a decoding failure would be a bug caught by
    // every test, so fall back to an empty root rather than panic.
    serde_json::from_value(value).unwrap_or(RootState {
        agents: vec![],
        active_sessions: None,
        terminals: None,
        config: None,
        meta: None,
    })
}
