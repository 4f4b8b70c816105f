//! What a client configured for a session of the built-in AAP server: server tools with
//! trust, options merged by key, client tools, each part validated as it is set.

use serde_json::{Map, Value};

use super::http::Refusal;
use super::meta;

/// What the client configured for a session (docs/endpoints.md, POST /sessions and turns).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `agent.tools` as last set (a turn's list replaces it); `None`: never set, so every
    /// server tool is disabled.
    pub agent_tools: Option<Vec<Value>>,
    /// The option keys the client set, merged by key across create and turns.
    pub options: Map<String, Value>,
    /// Client-side tools as last set.
    pub client_tools: Option<Vec<Value>>,
}

/// Who answers a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Client,
    Server { trusted: bool },
}

impl Settings {
    /// Applies a request's `agent` object (without its name, checked by the caller) and
    /// `tools`, validating every part; on error `self` is unchanged.
    pub fn apply(&mut self, agent: Option<&Value>, tools: Option<&Value>) -> Result<(), Refusal> {
        let mut next = self.clone();
        if let Some(agent) = agent {
            let agent = agent
                .as_object()
                .ok_or_else(|| Refusal::bad_request("agent must be an object"))?;
            if let Some(refs) = agent.get("tools") {
                next.agent_tools = Some(server_tool_refs(refs)?);
            }
            if let Some(options) = agent.get("options") {
                let options = options
                    .as_object()
                    .ok_or_else(|| Refusal::bad_request("agent.options must be an object"))?;
                for (name, value) in options {
                    meta::check_option(name, value).map_err(Refusal::bad_request)?;
                    next.options.insert(name.clone(), value.clone());
                }
            }
        }
        if let Some(tools) = tools {
            next.client_tools = Some(client_tools(tools)?);
        }
        next.check_unique_tool_names()?;
        *self = next;
        Ok(())
    }

    /// Tool names must be unique across client tools and enabled server tools
    /// (response.md, `tool_call`).
    fn check_unique_tool_names(&self) -> Result<(), Refusal> {
        for name in self.client_tool_names() {
            if self.server_tool(name).is_some() {
                return Err(Refusal::bad_request(format!(
                    "tool {name:?} is both a client tool and an enabled server tool"
                )));
            }
        }
        Ok(())
    }

    fn client_tool_names(&self) -> impl Iterator<Item = &str> {
        self.client_tools
            .iter()
            .flatten()
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
    }

    fn server_tool(&self, name: &str) -> Option<&Value> {
        self.agent_tools
            .iter()
            .flatten()
            .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
    }

    /// Whether a call of `name` goes to the client, runs on the server (trusted or not),
    /// or names no tool of this session.
    pub fn tool_kind(&self, name: &str) -> Option<ToolKind> {
        if self.client_tool_names().any(|tool| tool == name) {
            return Some(ToolKind::Client);
        }
        let trusted = self
            .server_tool(name)?
            .get("trust")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some(ToolKind::Server { trusted })
    }
}

/// `agent.tools`: ServerToolRef objects naming declared server tools, each once.
fn server_tool_refs(refs: &Value) -> Result<Vec<Value>, Refusal> {
    let refs = refs
        .as_array()
        .ok_or_else(|| Refusal::bad_request("agent.tools must be an array"))?;
    let mut seen = Vec::new();
    for tool in refs {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Refusal::bad_request("agent.tools[]: name must be a string"))?;
        if !meta::is_server_tool(name) {
            return Err(Refusal::bad_request(format!(
                "agent.tools: {name:?} is not a server tool of {}",
                meta::AGENT_NAME
            )));
        }
        if tool.get("trust").is_some_and(|trust| !trust.is_boolean()) {
            return Err(Refusal::bad_request(
                "agent.tools[].trust must be a boolean",
            ));
        }
        if seen.contains(&name) {
            return Err(Refusal::bad_request(format!("agent.tools: {name:?} twice")));
        }
        seen.push(name);
    }
    Ok(refs.clone())
}

/// `tools`: ToolSpec objects with distinct string names. Only `name` is required here:
/// endpoints.md's examples carry `parameters` where schema.md says `inputSchema`, so the
/// server stores the spec as sent rather than refuse either spelling.
fn client_tools(tools: &Value) -> Result<Vec<Value>, Refusal> {
    let tools = tools
        .as_array()
        .ok_or_else(|| Refusal::bad_request("tools must be an array"))?;
    let mut seen = Vec::new();
    for tool in tools {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Refusal::bad_request("tools[]: name must be a string"))?;
        if seen.contains(&name) {
            return Err(Refusal::bad_request(format!("tools: {name:?} twice")));
        }
        seen.push(name);
    }
    Ok(tools.clone())
}
