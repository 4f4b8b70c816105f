//! The endpoints of docs/endpoints.md: routing, the bearer check, and one handler per
//! method and path. The session store is locked only between awaits.

use std::sync::{Mutex, MutexGuard, PoisonError};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use super::http::{self, Body, Refusal};
use super::messages;
use super::meta;
use super::sessions::{self, Settings, Store};
use super::turn::{self, StreamMode, TurnDone};
use super::AapHostConfig;

/// One server's configuration and sessions.
pub struct Server {
    pub config: AapHostConfig,
    store: Mutex<Store>,
}

/// A path of the API (relative to the base path).
#[derive(Debug, Clone, Copy)]
enum Route<'p> {
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
        }
    }

    fn store(&self) -> MutexGuard<'_, Store> {
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
        let path = request.uri().path().to_owned();
        let query = request.uri().query().map(str::to_owned);
        let route = self
            .route(&path)
            .ok_or_else(|| Refusal::not_found(format!("no endpoint at {path}")))?;
        // GET /meta stays public for capability discovery (endpoints.md, Authentication).
        if let (Some(token), false) = (&self.config.token, matches!(route, Route::Meta)) {
            if !http::has_bearer(&request, token) {
                return Err(Refusal::new(
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong Authorization: Bearer token",
                ));
            }
        }
        let limit = self.config.max_body_bytes;
        match (route, request.method().clone()) {
            (Route::Meta, Method::GET) => Ok(http::json_response(
                StatusCode::OK,
                &meta::meta_body(&self.config),
            )),
            (Route::Sessions, Method::GET) => self.list(query.as_deref()),
            (Route::Sessions, Method::POST) => self.create(&http::read_json(request, limit).await?),
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

    fn list(&self, query: Option<&str>) -> Result<Response<Body>, Refusal> {
        let store = self.store();
        let cursor = http::query_param(query, "after");
        let (page, next) = store.page(cursor, self.config.page_size)?;
        let sessions: Vec<Value> = page
            .into_iter()
            .map(|session| sessions::session_body(session, false))
            .collect();
        let mut body = json!({"sessions": sessions});
        if let Some(next) = next {
            body["next"] = json!(next);
        }
        Ok(http::json_response(StatusCode::OK, &body))
    }

    fn create(&self, body: &Value) -> Result<Response<Body>, Refusal> {
        let agent = body
            .get("agent")
            .ok_or_else(|| Refusal::bad_request("agent is required"))?;
        match agent.get("name").and_then(Value::as_str) {
            Some(meta::AGENT_NAME) => {}
            Some(other) => return Err(Refusal::bad_request(format!("no agent named {other:?}"))),
            None => return Err(Refusal::bad_request("agent.name is required")),
        }
        let mut settings = Settings::default();
        settings.apply(Some(agent), body.get("tools"))?;
        let seed = match body.get("messages") {
            None => Vec::new(),
            Some(Value::Array(seed)) => seed.clone(),
            Some(_) => return Err(Refusal::bad_request("messages must be an array")),
        };
        for (index, message) in seed.iter().enumerate() {
            messages::check_history_message(message, &format!("messages[{index}]"))
                .map_err(Refusal::bad_request)?;
        }
        let mut store = self.store();
        let id = store.create(settings, seed).id.clone();
        let mut response = http::json_response(StatusCode::CREATED, &json!({"sessionId": id}));
        let location = format!(
            "{}/sessions/{id}",
            self.config.base_path.trim_end_matches('/')
        );
        if let Ok(location) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(LOCATION, location);
        }
        Ok(response)
    }

    fn get(&self, id: &str) -> Result<Response<Body>, Refusal> {
        let store = self.store();
        let session = store.get(id).ok_or_else(|| unknown_session(id))?;
        Ok(http::json_response(
            StatusCode::OK,
            &sessions::session_body(session, false),
        ))
    }

    fn delete(&self, id: &str) -> Result<Response<Body>, Refusal> {
        if self.store().remove(id) {
            Ok(http::empty_response(StatusCode::NO_CONTENT))
        } else {
            Err(unknown_session(id))
        }
    }

    fn history(&self, id: &str, query: Option<&str>) -> Result<Response<Body>, Refusal> {
        let store = self.store();
        let session = store.get(id).ok_or_else(|| unknown_session(id))?;
        let kind = http::query_param(query, "type")
            .ok_or_else(|| Refusal::bad_request("type is required: compacted or full"))?;
        let declared = match kind {
            "compacted" => self.config.history.compacted,
            "full" => self.config.history.full,
            other => {
                return Err(Refusal::bad_request(format!(
                    "type {other:?} is neither compacted nor full"
                )))
            }
        };
        if !declared {
            return Err(Refusal::not_found(format!(
                "{kind} history is not declared in capabilities.history"
            )));
        }
        // This agent never compacts: its compacted history is the full one.
        let body = json!({"history": {kind: session.history}});
        Ok(http::json_response(StatusCode::OK, &body))
    }

    fn turn(&self, id: &str, body: &Value) -> Result<Response<Body>, Refusal> {
        let done = {
            let mut store = self.store();
            let session = store.get_mut(id).ok_or_else(|| unknown_session(id))?;
            turn::run_turn(session, body)?
        };
        Ok(self.render(&done))
    }

    /// The response of a turn in its mode (response.md).
    fn render(&self, done: &TurnDone) -> Response<Body> {
        if done.mode == StreamMode::None {
            return http::json_response(StatusCode::OK, &turn::none_body(done));
        }
        let frames = turn::sse_events(done)
            .iter()
            .map(|(name, data)| http::sse_frame(name, data))
            .collect();
        http::sse_response(frames)
    }
}

fn unknown_session(id: &str) -> Refusal {
    Refusal::not_found(format!("no session {id:?}"))
}
