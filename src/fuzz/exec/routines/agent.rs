//! The routine about state the agent changes beside its turns' output (issue 29), through
//! turns of the run's own chat started with the profile's behaviours (each part only where
//! the profile has its behaviour): a chat's activity announced to the session's catalog
//! (CHAT-004), background work still listed after the turn that started it (CHAT-009), the
//! session's `_meta` replaced whole (SESSION-016), and an agent described anew announced
//! with root/agentsChanged (ROOT-013).

use serde_json::Value;

use super::{finding, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::ROOT;
use crate::fuzz::exec::{Failure, Run};
use crate::fuzz::ops::{Behaviour, Op};

impl Run<'_> {
    /// Starts a `behaviour` turn on client `client` (judged like every dispatch; the model
    /// waits for its end) when the profile has it: the first client's frame count before
    /// it, `None` without the behaviour.
    async fn agent_turn(
        &mut self,
        index: usize,
        client: usize,
        behaviour: Behaviour,
    ) -> Result<Option<usize>, Failure> {
        if self.cfg.profile.behaviour(behaviour.key()).is_none() {
            return Ok(None);
        }
        let from = self.conns[0].frame_count();
        let start = Op::StartTurn {
            client: client as u8,
            behaviour,
        };
        if let Some(failure) = self.dispatch(index, &[&start]).await {
            return Err(failure);
        }
        // Folds what came into the first client's mirror (its violations kept for the checks).
        self.catch_up(true).await;
        Ok(Some(from))
    }

    /// The actions of type `kind` on `channel` the first client received since frame `from`.
    fn heard(&self, from: usize, channel: &str, kind: &str) -> Vec<Value> {
        self.conns[0]
            .received_since(from)
            .filter(|m| {
                m["method"] == "action"
                    && m["params"]["channel"] == channel
                    && m["params"]["action"]["type"] == kind
            })
            .map(|m| m["params"]["action"].clone())
            .collect()
    }

    /// Whether the run's chat has no active turn (as the first client sees it).
    fn chat_idle(&self) -> bool {
        self.conns[0]
            .mirror()
            .state(&self.chat)
            .is_some_and(|c| c.get("activeTurn").is_none_or(Value::is_null))
    }

    pub(super) async fn agent_state(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        if !self.chat_idle() {
            return Ok(None);
        }
        let (chat, session) = (self.chat.clone(), self.session.clone());
        if let Some(from) = self.agent_turn(index, client, Behaviour::Activity).await? {
            // The catalog entry shows the chat's last activity (announced now, or before
            // when the turn set the same one again: an unchanged entry needs no update).
            if let Some(last) = self.heard(from, &chat, "chat/activityChanged").pop() {
                let catalog = self.conns[0]
                    .mirror()
                    .state(&session)
                    .unwrap_or(Value::Null);
                let entry = catalog["chats"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["resource"] == chat.as_str())
                    .cloned()
                    .unwrap_or(Value::Null);
                let shown = entry.get("activity").unwrap_or(&Value::Null);
                if *shown != last["activity"] {
                    return Ok(finding(
                        Rule::Chat004,
                        &format!(
                            "session/chatUpdated carrying the chat's activity {}: the catalog entry shows it",
                            last["activity"]
                        ),
                        format!("the catalog entry's activity {shown}"),
                    ));
                }
            }
        }
        if let Some(from) = self
            .agent_turn(index, client, Behaviour::Background)
            .await?
        {
            let started = self.heard(from, &chat, "chat/backgroundWorkSet");
            let state = self.conns[0].mirror().state(&chat).unwrap_or(Value::Null);
            let listed = |id: &Value| {
                state["backgroundWork"]
                    .as_array()
                    .is_some_and(|w| w.iter().any(|w| w["id"] == *id))
            };
            if let Some(work) = started.iter().find(|a| !listed(&a["work"]["id"])) {
                return Ok(finding(
                    Rule::Chat009,
                    "background work the turn started still listed once the turn ended",
                    format!(
                        "{} gone: {}",
                        work["work"]["id"],
                        clip(&state["backgroundWork"].to_string())
                    ),
                ));
            }
            self.agent_turn(index, client, Behaviour::BackgroundDone)
                .await?;
        }
        if let Some(found) = self.meta_replaced(index, client).await? {
            return Ok(Some(found));
        }
        self.agents_announced(index, client).await
    }

    /// A `meta` and a `meta-again` turn: the session's `_meta` (a fresh snapshot) holds no
    /// key the last session/metaChanged left out (SESSION-016).
    async fn meta_replaced(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        let Some(from) = self.agent_turn(index, client, Behaviour::Meta).await? else {
            return Ok(None);
        };
        self.agent_turn(index, client, Behaviour::MetaAgain).await?;
        let session = self.session.clone();
        let Some(last) = self.heard(from, &session, "session/metaChanged").pop() else {
            return Ok(None);
        };
        let Some(state) = self.fresh(&session).await else {
            return Ok(None);
        };
        let meta = state["_meta"].as_object();
        let extra: Vec<&String> = meta
            .into_iter()
            .flatten()
            .map(|(key, _)| key)
            .filter(|key| last["_meta"].get(key.as_str()).is_none())
            .collect();
        if !extra.is_empty() {
            return Ok(finding(
                Rule::Session016,
                &format!("the session's _meta replaced whole by {}", last["_meta"]),
                format!("_meta {} (also {extra:?})", state["_meta"]),
            ));
        }
        Ok(None)
    }

    /// An `agent-description` turn: the agents of a fresh root snapshot are the ones the
    /// root subscriber's mirror folded (ROOT-013: a change is announced with
    /// root/agentsChanged).
    async fn agents_announced(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        let described = self
            .agent_turn(index, client, Behaviour::AgentDescription)
            .await?;
        if described.is_none() {
            return Ok(None);
        }
        let folded = self.conns[0].mirror().state(ROOT).unwrap_or(Value::Null);
        let Some(fresh) = self.fresh(ROOT).await else {
            return Ok(None);
        };
        if fresh["agents"] != folded["agents"] {
            return Ok(finding(
                Rule::Root013,
                "root/agentsChanged for an agent that changed: the root subscriber's agents match a fresh snapshot's",
                format!(
                    "folded {}, fresh {}",
                    clip(&folded["agents"].to_string()),
                    clip(&fresh["agents"].to_string())
                ),
            ));
        }
        Ok(None)
    }
}
