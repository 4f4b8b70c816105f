//! Sessions of the built-in AAP server: the settings a client configured
//! ([`super::settings`]), the history, and the calls a turn left pending.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::http::Refusal;
use super::meta;
use super::script::{PendingCall, Script};
use super::settings::Settings;
use super::{AapFault, AapFaultSet};

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
