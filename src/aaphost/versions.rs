//! Versions 1 and 2 of the endpoints (the `v1` and `v2` tags of docs/endpoints.md):
//! `PUT /session` creates a session and runs its first turn on the last seed message (the
//! session id in the JSON body, or in a `session_start` event opening the stream),
//! `POST /session/:id` sends a turn, `GET|DELETE /session/:id`; version 1 returns history
//! inside the session object (`?history=compacted|full`) and lists session ids, version 2
//! has `GET /session/:id/history?type=` and lists session objects. The handlers behind
//! them are version 3's.

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use super::http::{self, Body, Refusal};
use super::routes::{unknown_session, Route, Server};
use super::turn::{self, StreamMode, TurnDone};
use super::AapFault;

/// A path of versions 1 and 2 (relative to the base path).
#[derive(Debug, Clone, Copy)]
enum OldRoute<'p> {
    Meta,
    Sessions,
    Create,
    Session(&'p str),
    /// Version 2 only.
    History(&'p str),
}

impl Server {
    fn old_route<'p>(&self, path: &'p str) -> Option<OldRoute<'p>> {
        let relative = path.strip_prefix(self.config.base_path.trim_end_matches('/'))?;
        let segments: Vec<&str> = relative.strip_prefix('/')?.split('/').collect();
        match segments.as_slice() {
            ["meta"] => Some(OldRoute::Meta),
            ["sessions"] => Some(OldRoute::Sessions),
            ["session"] => Some(OldRoute::Create),
            ["session", id] if !id.is_empty() => Some(OldRoute::Session(id)),
            ["session", id, "history"] if !id.is_empty() && self.config.version == 2 => {
                Some(OldRoute::History(id))
            }
            _ => None,
        }
    }

    /// Answers a request of a version 1 or 2 server.
    pub(super) async fn respond_before_3(
        &self,
        request: Request<Incoming>,
    ) -> Result<Response<Body>, Refusal> {
        let path = request.uri().path().to_owned();
        let query = request.uri().query().map(str::to_owned);
        let Some(route) = self.old_route(&path) else {
            return Err(Refusal::not_found(format!("no endpoint at {path}")));
        };
        // The bearer check is version 3's: only GET /meta is public.
        let as_route = match route {
            OldRoute::Meta => Route::Meta,
            OldRoute::Sessions | OldRoute::Create => Route::Sessions,
            OldRoute::Session(id) => Route::Session(id),
            OldRoute::History(id) => Route::History(id),
        };
        self.authorize(&request, as_route)?;
        let limit = self.config.max_body_bytes;
        match (route, request.method().clone()) {
            (OldRoute::Meta, Method::GET) => Ok(http::json_response(
                StatusCode::OK,
                &super::meta::meta_body(&self.config),
            )),
            (OldRoute::Sessions, Method::GET) => self.old_list(query.as_deref()),
            (OldRoute::Create, Method::PUT) => {
                let body = http::read_json(request, limit).await?;
                self.create_with_turn(&body)
            }
            (OldRoute::Session(id), Method::GET) => self.old_get(id, query.as_deref()),
            (OldRoute::Session(id), Method::POST) => {
                let body = http::read_json(request, limit).await?;
                self.turn(id, &body)
            }
            (OldRoute::Session(id), Method::DELETE) => self.delete(id),
            (OldRoute::History(id), Method::GET) => {
                if self.has(AapFault::HistoryInlineOnly) {
                    return Err(Refusal::not_found("history is only served inline"));
                }
                self.history(id, query.as_deref())
            }
            (route, method) => {
                let allow = match route {
                    OldRoute::Meta | OldRoute::History(_) => "GET",
                    OldRoute::Sessions => "GET",
                    OldRoute::Create => "PUT",
                    OldRoute::Session(_) => "GET, POST, DELETE",
                };
                Err(Refusal {
                    allow: Some(allow),
                    ..Refusal::new(
                        StatusCode::METHOD_NOT_ALLOWED,
                        format!("{method} is not allowed on {path}"),
                    )
                })
            }
        }
    }

    /// `GET /sessions`: version 1 lists ids, version 2 session objects.
    fn old_list(&self, query: Option<&str>) -> Result<Response<Body>, Refusal> {
        let ids = match self.config.version {
            1 => !self.has(AapFault::ListObjects),
            _ => self.has(AapFault::ListIds),
        };
        let body = self.list_body(query, ids)?;
        Ok(self.list_response(&body))
    }

    /// `GET /session/:id`; at version 1 with `?history=compacted|full` the session object
    /// carries that history when the agent declares it (and none when it does not).
    fn old_get(&self, id: &str, query: Option<&str>) -> Result<Response<Body>, Refusal> {
        let kind = match http::query_param(query, "history") {
            None => None,
            Some(_) if self.config.version != 1 => None,
            Some(kind @ ("compacted" | "full")) => Some(kind),
            Some(other) => {
                return Err(Refusal::bad_request(format!(
                    "history {other:?} is neither compacted nor full"
                )))
            }
        };
        let store = self.store();
        let Some(session) = store.get(id) else {
            return Err(unknown_session(id));
        };
        let mut body = super::sessions::session_body(session, &self.config.faults);
        if let Some(kind) = kind {
            let declared = match kind {
                "compacted" => self.config.history.compacted,
                _ => self.config.history.full,
            };
            if declared || self.has(AapFault::UndeclaredHistoryInline) {
                // This agent never compacts: its compacted history is the full one.
                body["history"] = json!({ kind: session.history });
            }
        }
        Ok(http::json_response(StatusCode::OK, &body))
    }

    /// `PUT /session`: the seed up to its last message is stored, and the last (a user
    /// message) is the first turn, answered in the request's mode with the session id.
    fn create_with_turn(&self, body: &Value) -> Result<Response<Body>, Refusal> {
        let Some(seed) = body.get("messages").and_then(Value::as_array) else {
            return Err(Refusal::bad_request("messages is required"));
        };
        let Some((last, earlier)) = seed.split_last() else {
            return Err(Refusal::bad_request("messages must not be empty"));
        };
        if last.get("role").and_then(Value::as_str) != Some("user") {
            return Err(Refusal::bad_request(
                "the last message must be a user message",
            ));
        }
        let mut stored = body.clone();
        stored["messages"] = json!(earlier);
        let id = self.create_session(&stored)?;
        let mut first = json!({ "messages": [last] });
        if let Some(stream) = body.get("stream") {
            first["stream"] = stream.clone();
        }
        let done = {
            let mut store = self.store();
            let Some(session) = store.get_mut(&id) else {
                return Err(unknown_session(&id));
            };
            match turn::run_turn(session, &first, &self.config.faults) {
                Ok(done) => done,
                Err(refusal) => {
                    // A refused first turn creates nothing.
                    store.remove(&id);
                    return Err(refusal);
                }
            }
        };
        Ok(self.render_created(&done, &id))
    }

    fn render_created(&self, done: &TurnDone, id: &str) -> Response<Body> {
        let faults = &self.config.faults;
        if done.mode == StreamMode::None {
            let mut body = turn::none_body(done, faults);
            if !self.has(AapFault::CreateNoSessionId) {
                body["sessionId"] = json!(id);
            }
            return http::json_response(StatusCode::OK, &body);
        }
        let mut frames = Vec::new();
        if !self.has(AapFault::CreateNoSessionStart) {
            frames.push(http::sse_frame(
                "session_start",
                &json!({ "sessionId": id }),
            ));
        }
        frames.extend(
            turn::sse_events(done, faults)
                .iter()
                .map(|(name, data)| http::sse_frame(name, data)),
        );
        http::sse_response(frames)
    }
}
