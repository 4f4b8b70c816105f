//! The session models of a case: what each session's full history must hold after the
//! turns the case ran (AAP-HISTORY-004), and the turn records the cross-mode comparison
//! reads (AAP-SSE-007).

use std::collections::HashSet;

use serde_json::Value;

use super::{Run, TurnRecord};
use crate::aap::checks::Endpoint;
use crate::aap::http::{Body, Request, Response};
use crate::aap::model::{self, Item};
use crate::aap::sse::StreamEnd;
use crate::checks::Rule;

/// What the harness expects a session's full history to be.
#[derive(Debug, Clone, Default)]
pub(super) struct SessionModel {
    history: Vec<Item>,
    /// False once a turn's output could not be read completely.
    exact: bool,
    deleted: bool,
    key: String,
    pub(super) client_tools: HashSet<String>,
}

impl SessionModel {
    /// The session's history can no longer be predicted (a turn's output was not read).
    pub(super) fn lose_track(&mut self) {
        self.exact = false;
    }
}

impl Run<'_> {
    /// Updates the session models after an exchange (creation, turns, deletion).
    pub(super) fn follow(
        &mut self,
        request: &Request,
        body: Option<&Value>,
        response: &Response,
        clean: bool,
    ) {
        let endpoint = Endpoint::of(&request.method, &request.path);
        let ok = (200..300).contains(&response.status);
        match (endpoint, ok) {
            (Some(Endpoint::Create), true) => {
                let Some(id) = created_id(response) else {
                    return;
                };
                let body = body.cloned().unwrap_or(Value::Null);
                let seed = body
                    .get("messages")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                self.sessions.insert(
                    id.clone(),
                    SessionModel {
                        history: model::items_of_messages(&seed),
                        exact: true,
                        deleted: false,
                        key: String::new(),
                        client_tools: tool_names(body.get("tools")),
                    },
                );
                if self.ctx.observer.version.creation_runs_turn() {
                    // Versions 1 and 2: the last seed message was the first turn.
                    self.record_output(&id, &body, response, clean);
                } else if let Some(model) = self.sessions.get_mut(&id) {
                    model.key = canonical_without_stream(&body);
                }
            }
            (Some(Endpoint::Delete), true) => {
                if let Some(model) =
                    session_of(&request.path).and_then(|id| self.sessions.get_mut(id))
                {
                    model.deleted = true;
                }
            }
            (Some(Endpoint::Turn), true) => self.follow_turn(request, body, response, clean),
            _ => {}
        }
    }

    fn follow_turn(
        &mut self,
        request: &Request,
        body: Option<&Value>,
        response: &Response,
        clean: bool,
    ) {
        let Some(model) = session_of(&request.path).and_then(|id| self.sessions.get_mut(id)) else {
            return;
        };
        let body = body.cloned().unwrap_or(Value::Null);
        if body.get("tools").is_some() {
            model.client_tools = tool_names(body.get("tools"));
        }
        let submitted = body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        model.history.extend(model::items_of_request(&submitted));
        if let Some(id) = session_of(&request.path).map(str::to_owned) {
            self.record_output(&id, &body, response, clean);
        }
    }

    /// Adds what a turn produced (its `messages`, or the messages its events describe) to
    /// the model of session `id`, and records the turn for the cross-mode comparison.
    fn record_output(&mut self, id: &str, body: &Value, response: &Response, clean: bool) {
        let Some(model) = self.sessions.get_mut(id) else {
            return;
        };
        let mode = body
            .get("stream")
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned();
        let (items, stop, complete) = match &response.body {
            Body::Json(value) => {
                let messages = value
                    .get("messages")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let stop = value
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (model::items_of_messages(&messages), stop, true)
            }
            Body::Events(read) => {
                let events: Vec<(String, Value)> = read
                    .events
                    .iter()
                    .filter(|e| e.name != "session_start")
                    .map(|e| {
                        (
                            e.name.clone(),
                            serde_json::from_str(&e.data).unwrap_or(Value::Null),
                        )
                    })
                    .collect();
                let (items, stop) = model::items_of_events(&events);
                let complete = stop.is_some() && read.end == StreamEnd::Closed;
                (items, stop, complete)
            }
            _ => (Vec::new(), None, false),
        };
        // A response that broke another rule is not judged again by the history and
        // cross-mode checks (they skip it, counted).
        let complete = complete && clean;
        model.exact &= complete;
        model.history.extend(items.iter().cloned());
        model.key = format!("{}|{}", model.key, canonical_without_stream(body));
        if !complete {
            self.ctx.observer.skips.add(
                Rule::AapSse007,
                "a turn's response broke another rule or was incomplete",
                1,
            );
        } else {
            self.turns.push(TurnRecord {
                key: model.key.clone(),
                mode,
                items,
                stop,
                case: self.case.info.id.clone(),
            });
        }
    }

    /// AAP-HISTORY-004: every live session's full history against its model.
    pub(super) async fn check_histories(&mut self) {
        if !self.ctx.agent.declares("history.full") {
            return;
        }
        let mut ids: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, m)| !m.deleted)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        for id in ids {
            let exact = self.sessions.get(&id).is_some_and(|m| m.exact);
            if !exact {
                self.ctx.observer.skips.add(
                    Rule::AapHistory004,
                    "a turn's response broke another rule or was incomplete",
                    1,
                );
                continue;
            }
            let request = Request {
                method: "GET".into(),
                path: format!("/sessions/{id}/history?type=full"),
                ..Request::default()
            };
            let Ok(response) = self.exchange(request, None, None, "history check").await else {
                continue;
            };
            let Some(full) = response
                .json()
                .and_then(|b| b.pointer("/history/full"))
                .and_then(Value::as_array)
            else {
                self.ctx
                    .observer
                    .skips
                    .add(Rule::AapHistory004, "no full history returned", 1);
                continue;
            };
            let actual = model::items_of_messages(full);
            let expected = self
                .sessions
                .get(&id)
                .map(|m| m.history.clone())
                .unwrap_or_default();
            self.ctx.observer.count(Rule::AapHistory004);
            if let Some((want, got)) = model::first_difference(&expected, &actual) {
                self.ctx
                    .observer
                    .violate(Rule::AapHistory004, format!("session {id} {want}"), got);
            }
        }
    }
}

/// The id a creation answered with: `sessionId` of its JSON body, or (versions 1 and 2 in a
/// stream mode) of its opening `session_start` event.
pub fn created_id(response: &Response) -> Option<String> {
    if let Some(id) = response.json().and_then(|b| b.get("sessionId")) {
        return id.as_str().map(str::to_owned);
    }
    let first = response.events()?.events.first()?;
    (first.name == "session_start")
        .then(|| serde_json::from_str::<Value>(&first.data).ok())
        .flatten()?
        .get("sessionId")?
        .as_str()
        .map(str::to_owned)
}

/// The session id in `/sessions/:id…`.
pub fn session_of(path: &str) -> Option<&str> {
    let path = path.split('?').next()?;
    let mut parts = path.trim_matches('/').split('/');
    (parts.next() == Some("sessions"))
        .then(|| parts.next())
        .flatten()
}

fn tool_names(tools: Option<&Value>) -> HashSet<String> {
    tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

fn canonical_without_stream(body: &Value) -> String {
    let mut body = body.clone();
    if let Some(object) = body.as_object_mut() {
        object.remove("stream");
    }
    body.to_string()
}
