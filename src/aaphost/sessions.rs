//! Sessions of the built-in AAP server: what a client configured (server tools with trust,
//! options merged by key, client tools), the history, and the calls a turn left pending.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::http::Refusal;
use super::meta;
use super::script::Script;
use super::{AapFault, AapFaultSet};

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

/// A call a turn left for the client to answer.
#[derive(Debug, Clone)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub kind: ToolKind,
}

/// The calls of the last turn awaiting answers, and what the agent does once answered.
#[derive(Debug, Clone)]
pub struct Pending {
    pub calls: Vec<PendingCall>,
    pub then: Option<Script>,
}

#[derive(Debug)]
pub struct Session {
    pub id: String,
    /// The agent's name (fixed at creation, but for the `agent-renamed` fault).
    pub agent_name: String,
    pub settings: Settings,
    /// The full history (seed, user messages, agent output, tool results; never
    /// `tool_permission` messages).
    pub history: Vec<Value>,
    /// Turns run so far (numbers the default tool call IDs).
    pub turns: u32,
    pub pending: Option<Pending>,
}

/// The sessions of one server, in creation order (the order `GET /sessions` pages).
#[derive(Debug, Default)]
pub struct Store {
    sessions: BTreeMap<u64, Session>,
    created: u64,
}

impl Store {
    /// Creates a session; IDs are `sess_N` and never reused.
    pub fn create(&mut self, settings: Settings, history: Vec<Value>) -> &Session {
        self.created += 1;
        let seq = self.created;
        self.sessions.entry(seq).or_insert(Session {
            id: format!("sess_{seq}"),
            agent_name: meta::AGENT_NAME.to_owned(),
            settings,
            history,
            turns: 0,
            pending: None,
        })
    }

    fn seq_of(id: &str) -> Option<u64> {
        id.strip_prefix("sess_")?.parse().ok()
    }

    pub fn get(&self, id: &str) -> Option<&Session> {
        self.sessions.get(&Self::seq_of(id)?)
    }

    pub fn get_mut(&mut self, id: &str) -> Option<&mut Session> {
        self.sessions.get_mut(&Self::seq_of(id)?)
    }

    /// Whether `id` names a session this store created (live or deleted).
    pub fn was_created(&self, id: &str) -> bool {
        Self::seq_of(id).is_some_and(|seq| (1..=self.created).contains(&seq))
    }

    pub fn remove(&mut self, id: &str) -> bool {
        Self::seq_of(id).is_some_and(|seq| self.sessions.remove(&seq).is_some())
    }

    /// One page of at most `size` sessions after `cursor` (a `next` value of an earlier
    /// page: opaque to clients, `pN` = after the session created N-th), and the cursor of
    /// the following page when there is one. `overlap` (a fault's seam) points the cursor
    /// one session early, so the last session of a page opens the next one too.
    pub fn page(
        &self,
        cursor: Option<&str>,
        size: usize,
        overlap: bool,
    ) -> Result<(Vec<&Session>, Option<String>), Refusal> {
        let after = match cursor {
            None => 0,
            Some(cursor) => cursor
                .strip_prefix('p')
                .and_then(|seq| seq.parse::<u64>().ok())
                .ok_or_else(|| {
                    Refusal::bad_request(format!(
                        "after: {cursor:?} is not a cursor of this server"
                    ))
                })?,
        };
        let mut rest = self.sessions.range(after + 1..);
        let page: Vec<(&u64, &Session)> = rest.by_ref().take(size.max(1)).collect();
        let next = match (page.last(), rest.next()) {
            (Some((seq, _)), Some(_)) if overlap && page.len() > 1 => {
                Some(format!("p{}", *seq - 1))
            }
            (Some((seq, _)), Some(_)) => Some(format!("p{seq}")),
            _ => None,
        };
        Ok((page.into_iter().map(|(_, session)| session).collect(), next))
    }
}

/// The SessionResponse of `session`: secret option values as `"***"` (endpoints.md,
/// GET /sessions/:id), fields the client never set left out.
pub fn session_body(session: &Session, faults: &AapFaultSet) -> Value {
    let mut agent = json!({"name": session.agent_name});
    if let Some(tools) = &session.settings.agent_tools {
        let mut tools = tools.clone();
        if faults.contains(AapFault::TrustDropped) {
            tools
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(|tool| {
                    tool.remove("trust");
                });
        }
        agent["tools"] = json!(tools);
    }
    let options: Map<String, Value> = session
        .settings
        .options
        .iter()
        .filter_map(|(name, value)| {
            if !meta::is_secret_option(name) || faults.contains(AapFault::SecretPlaintext) {
                Some((name.clone(), value.clone()))
            } else if faults.contains(AapFault::SecretDropped) {
                None
            } else if faults.contains(AapFault::SecretBlanked) {
                Some((name.clone(), json!("")))
            } else {
                Some((name.clone(), json!("***")))
            }
        })
        .collect();
    if !options.is_empty() {
        agent["options"] = Value::Object(options);
    }
    let mut body = json!({"sessionId": session.id, "agent": agent});
    match &session.settings.client_tools {
        Some(tools) if !faults.contains(AapFault::GetDropsClientTools) => {
            body["tools"] = json!(tools)
        }
        _ => {}
    }
    body
}
