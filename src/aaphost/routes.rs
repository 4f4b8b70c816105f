//! The endpoints of docs/endpoints.md: routing, the bearer check, and one handler per
//! method and path. The session store is locked only between awaits.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use super::http::{self, Body, Refusal};
use super::messages;
use super::meta;
use super::sessions::{self, Store};
use super::settings::Settings;
use super::turn::{self, StreamMode, TurnDone};
use super::{AapFault, AapHostConfig};

/// One server's configuration and sessions.
pub struct Server {
    pub config: AapHostConfig,
    store: Mutex<Store>,
    /// Sessions whose stream a client left mid-turn (the `abandoned-stream-wedges` fault).
    wedged: Arc<Mutex<HashSet<String>>>,
}

/// A path of the API (relative to the base path).
#[derive(Debug, Clone, Copy)]
pub(super) enum Route<'p> {
    Meta,
    Sessions,
    Session(&'p str),
    History(&'p str),
    Turns(&'p str),
}

impl Route<'_> {
    /// The methods the path has (the `Allow` of a 405).
    fn allow(self) -> &'static str {
        match self {
            Route::Meta | Route::History(_) => "GET",
            Route::Sessions => "GET, POST",
            Route::Session(_) => "GET, DELETE",
            Route::Turns(_) => "POST",
        }
    }
}

impl Server {
    pub fn new(config: AapHostConfig) -> Server {
        Server {
            config,
            store: Mutex::new(Store::default()),
            wedged: Arc::default(),
        }
    }

    /// Whether `fault` is injected and acts at the version the server speaks.
    pub(super) fn has(&self, fault: AapFault) -> bool {
        self.config.faults.contains(fault) && fault.acts_at(self.config.version)
    }

    pub(super) fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers one request; every refusal becomes its error response.
    pub async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        match self.respond(request).await {
            Ok(response) => response,
            Err(refusal) => http::refusal_response(&refusal),
        }
    }

    fn route<'p>(&self, path: &'p str) -> Option<Route<'p>> {
        let relative = path.strip_prefix(self.config.base_path.trim_end_matches('/'))?;
        let segments: Vec<&str> = relative.strip_prefix('/')?.split('/').collect();
        match segments.as_slice() {
            ["meta"] => Some(Route::Meta),
            ["sessions"] => Some(Route::Sessions),
            ["sessions", id] if !id.is_empty() => Some(Route::Session(id)),
            ["sessions", id, "history"] if !id.is_empty() => Some(Route::History(id)),
            ["sessions", id, "turns"] if !id.is_empty() => Some(Route::Turns(id)),
            _ => None,
        }
    }

    async fn respond(&self, request: Request<Incoming>) -> Result<Response<Body>, Refusal> {
        if self.config.version < 3 {
            return self.respond_before_3(request).await;
        }
        let path = request.uri().path().to_owned();
        let query = request.uri().query().map(str::to_owned);
        let Some(route) = self.route(&path) else {
            let status = if self.has(AapFault::UnknownPath400) {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::NOT_FOUND
            };
            return Err(Refusal::new(status, format!("no endpoint at {path}")));
        };
        self.authorize(&request, route)?;
        let limit = self.config.max_body_bytes;
        match (route, request.method().clone()) {
            (Route::Meta, Method::GET) => Ok(http::json_response(
                StatusCode::OK,
                &meta::meta_body(&self.config),
            )),
            (Route::Sessions, Method::GET) => self.list(query.as_deref()),
            (Route::Sessions, Method::POST) => self.create_request(request).await,
            (Route::Session(id), Method::GET) => self.get(id),
            (Route::Session(id), Method::DELETE) => self.delete(id),
            (Route::History(id), Method::GET) => self.history(id, query.as_deref()),
            (Route::Turns(id), Method::POST) => {
                let body = http::read_json(request, limit).await?;
                self.turn(id, &body)
            }
            (route, method) => Err(Refusal {
                allow: Some(route.allow()),
                ..Refusal::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    format!("{method} is not allowed on {path}"),
                )
            }),
        }
    }

    /// The bearer check of a configured token; GET /meta stays public for capability
    /// discovery (endpoints.md, Authentication).
    pub(super) fn authorize(
        &self,
        request: &Request<Incoming>,
        route: Route<'_>,
    ) -> Result<(), Refusal> {
        let Some(token) = &self.config.token else {
            return Ok(());
        };
        let listing = matches!(route, Route::Sessions) && request.method() == Method::GET;
        let allowed = match route {
            Route::Meta => true,
            _ if listing && self.has(AapFault::ListWithoutKey) => true,
            _ if listing && self.has(AapFault::ListRefusesBearer) => false,
            _ => http::has_bearer(request, token),
        };
        if allowed {
            Ok(())
        } else {
            Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong Authorization: Bearer token",
            ))
        }
    }

    /// `POST /sessions`: the body read as JSON (the seams of the faults that take a body
    /// that is not JSON, or not sent as JSON), then [`Server::create`].
    async fn create_request(&self, request: Request<Incoming>) -> Result<Response<Body>, Refusal> {
        let limit = self.config.max_body_bytes;
        let plain_ok = !http::is_json_request(&request) && self.has(AapFault::TextPlainOk200);
        let body = if plain_ok {
            http::read_json_any_type(request, limit).await?
        } else {
            match http::read_json(request, limit).await {
                Err(refusal)
                    if refusal.status == StatusCode::BAD_REQUEST
                        && self.has(AapFault::MalformedJsonCreates) =>
                {
                    json!({"agent": {"name": meta::AGENT_NAME}})
                }
                read => read?,
            }
        };
        let mut response = self.create(&body)?;
        if plain_ok {
            *response.status_mut() = StatusCode::OK;
        }
        Ok(response)
    }

    pub(super) fn list(&self, query: Option<&str>) -> Result<Response<Body>, Refusal> {
        let body = self.list_body(query, false)?;
        Ok(self.list_response(&body))
    }

    /// One page of `GET /sessions`: session objects, or (`ids`) their ids.
    pub(super) fn list_body(&self, query: Option<&str>, ids: bool) -> Result<Value, Refusal> {
        let store = self.store();
        let cursor = http::query_param(query, "after");
        let (page, next) = store.page(
            cursor,
            self.config.page_size,
            self.has(AapFault::PagesOverlap),
        )?;
        let sessions: Vec<Value> = page
            .into_iter()
            .filter(|session| !(self.has(AapFault::ListSkipsTurnless) && session.turns == 0))
            .map(|session| match ids {
                true => json!(session.id),
                false => sessions::session_body(session, &self.config.faults),
            })
            .collect();
        let mut body = json!({"sessions": sessions});
        if let Some(next) = next {
            body["next"] = json!(next);
        }
        Ok(body)
    }

    pub(super) fn list_response(&self, body: &Value) -> Response<Body> {
        let mut response = http::json_response(StatusCode::OK, body);
        if self.has(AapFault::ListTextPlain) {
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        }
        response
    }

    fn create(&self, body: &Value) -> Result<Response<Body>, Refusal> {
        let id = self.create_session(body)?;
        let status = if self.has(AapFault::CreateAnswers200) {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        };
        let mut response = http::json_response(status, &json!({"sessionId": id}));
        let location = format!(
            "{}/sessions/{id}",
            self.config.base_path.trim_end_matches('/')
        );
        if let Ok(location) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(LOCATION, location);
        }
        Ok(response)
    }

    /// Checks a creation body and stores the new session (its seed as given): its id.
    pub(super) fn create_session(&self, body: &Value) -> Result<String, Refusal> {
        let agent = body
            .get("agent")
            .ok_or_else(|| Refusal::bad_request("agent is required"))?;
        match agent.get("name").and_then(Value::as_str) {
            Some(meta::AGENT_NAME) => {}
            Some(_) if self.has(AapFault::UnknownAgentAccepted) => {}
            Some(other) => return Err(Refusal::bad_request(format!("no agent named {other:?}"))),
            None => return Err(Refusal::bad_request("agent.name is required")),
        }
        let mut settings = Settings::default();
        settings.apply(Some(agent), body.get("tools"))?;
        if self.has(AapFault::CreateOptionsDropped) {
            settings
                .options
                .retain(|name, _| !meta::is_text_option(name));
        }
        let seed = match body.get("messages") {
            None => Vec::new(),
            Some(Value::Array(seed)) => seed.clone(),
            Some(_) => return Err(Refusal::bad_request("messages must be an array")),
        };
        for (index, message) in seed.iter().enumerate() {
            messages::check_history_message(message, &format!("messages[{index}]"))
                .map_err(Refusal::bad_request)?;
        }
        let mut seed = seed;
        if self.has(AapFault::CreateRunsAgent) {
            if let Some(user) = seed.iter().rev().find(|message| message["role"] == "user") {
                let echo = format!("echo: {}", messages::user_text(user));
                seed.push(json!({"role": "assistant", "content": echo}));
            }
        }
        let mut store = self.store();
        Ok(store.create(settings, seed).id.clone())
    }

    pub(super) fn get(&self, id: &str) -> Result<Response<Body>, Refusal> {
        let store = self.store();
        let body = match store.get(id) {
            Some(session) => sessions::session_body(session, &self.config.faults),
            None if self.has(AapFault::UnknownSessionMadeUp) && !store.was_created(id) => {
                json!({"sessionId": id, "agent": {"name": meta::AGENT_NAME}})
            }
            None => return Err(unknown_session(id)),
        };
        Ok(http::json_response(StatusCode::OK, &body))
    }

    pub(super) fn delete(&self, id: &str) -> Result<Response<Body>, Refusal> {
        let mut store = self.store();
        let known = if self.has(AapFault::DeleteKeepsSession) {
            store.get(id).is_some()
        } else {
            store.remove(id)
        };
        match known {
            true => Ok(http::empty_response(StatusCode::NO_CONTENT)),
            false if self.has(AapFault::Redelete500) && store.was_created(id) => Err(Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the session is gone",
            )),
            false => Err(unknown_session(id)),
        }
    }

    pub(super) fn history(&self, id: &str, query: Option<&str>) -> Result<Response<Body>, Refusal> {
        let store = self.store();
        let Some(session) = store.get(id) else {
            if self.has(AapFault::HistoryUnknownSession200) && !store.was_created(id) {
                let body = json!({"history": {"full": []}});
                return Ok(http::json_response(StatusCode::OK, &body));
            }
            return Err(unknown_session(id));
        };
        let kind = match http::query_param(query, "type") {
            Some(kind @ ("compacted" | "full")) => kind,
            _ if self.has(AapFault::HistoryDefaultFull) => "full",
            None => return Err(Refusal::bad_request("type is required: compacted or full")),
            Some(other) => {
                return Err(Refusal::bad_request(format!(
                    "type {other:?} is neither compacted nor full"
                )))
            }
        };
        let declared = match kind {
            "compacted" => self.config.history.compacted,
            _ => self.config.history.full,
        };
        let served_anyway = self.has(AapFault::UndeclaredHistoryServed)
            || self.has(AapFault::UndeclaredHistoryInline);
        if !declared && !served_anyway {
            return Err(Refusal::not_found(format!(
                "{kind} history is not declared in capabilities.history"
            )));
        }
        // This agent never compacts: its compacted history is the full one.
        let mut history = session.history.clone();
        if self.has(AapFault::HistoryDropsLast) {
            history.pop();
        }
        let key = if self.has(AapFault::HistoryWrongKind) && kind == "full" {
            "compacted"
        } else {
            kind
        };
        Ok(http::json_response(
            StatusCode::OK,
            &json!({"history": {key: history}}),
        ))
    }

    pub(super) fn turn(&self, id: &str, body: &Value) -> Result<Response<Body>, Refusal> {
        self.turn_faults(id, body)?;
        let done = {
            let mut store = self.store();
            let Some(session) = store.get_mut(id) else {
                let never = !store.was_created(id);
                return Err(match never && self.has(AapFault::TurnUnknownSession400) {
                    true => Refusal::bad_request(format!("no session {id:?}")),
                    false => unknown_session(id),
                });
            };
            turn::run_turn(session, body, &self.config.faults)?
        };
        Ok(self.render(&done))
    }

    /// The response of a turn in its mode (response.md).
    pub(super) fn render(&self, done: &TurnDone) -> Response<Body> {
        let faults = &self.config.faults;
        if done.mode == StreamMode::None {
            let mut response = http::json_response(StatusCode::OK, &turn::none_body(done, faults));
            if done.plain && done.explicit_mode && self.has(AapFault::NoneAnswers202) {
                *response.status_mut() = StatusCode::ACCEPTED;
            }
            return response;
        }
        let frames = turn::sse_events(done, faults)
            .iter()
            .map(|(name, data)| http::sse_frame(name, data))
            .collect();
        let mut response = if self.has(AapFault::AbandonedStreamWedges) {
            let wedged = Arc::clone(&self.wedged);
            let id = done.session_id.clone();
            http::paced_sse_response(frames, Duration::from_millis(40), move || {
                wedged
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(id);
            })
        } else {
            http::sse_response(frames)
        };
        let wrong_type = done.plain
            && match done.mode {
                StreamMode::Delta => self.has(AapFault::DeltaWrongContentType),
                _ => self.has(AapFault::MessageWrongContentType),
            };
        if wrong_type {
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        }
        response
    }
}

impl Server {
    /// The refusals of the turn faults that look at the request alone: a session a client
    /// left mid-stream stays busy (`abandoned-stream-wedges`); a body with a field the
    /// schema does not name is refused (`unknown-field-refused`).
    fn turn_faults(&self, id: &str, body: &Value) -> Result<(), Refusal> {
        let busy = self
            .wedged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(id);
        if busy && self.has(AapFault::AbandonedStreamWedges) {
            return Err(Refusal::new(
                StatusCode::CONFLICT,
                format!("a turn of session {id:?} is still running"),
            ));
        }
        let known = ["agent", "stream", "messages", "tools"];
        let unknown = body
            .as_object()
            .and_then(|fields| fields.keys().find(|k| !known.contains(&k.as_str())));
        match unknown {
            Some(field) if self.has(AapFault::UnknownFieldRefused) => Err(Refusal::bad_request(
                format!("unknown field {field:?} in the turn request"),
            )),
            _ => Ok(()),
        }
    }
}

pub(super) fn unknown_session(id: &str) -> Refusal {
    Refusal::not_found(format!("no session {id:?}"))
}
