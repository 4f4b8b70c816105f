//! Always-on AAP checks: run on every response and every SSE event of every case, each
//! reported as one row under its own rule ID with the number of things it looked at. No
//! I/O here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

// The checks of GET /meta and of SSE streams, written apart.
mod meta;
mod stream;

use super::http::{Body, Response};
use super::sse::StreamEnd;
use super::version::AapVersion;
pub use crate::checks::AAP_ALWAYS_ON;
use crate::checks::{AlwaysOnRule, Rule, Skips, Violation};
use crate::schema::{SchemaError, SchemaSet};

/// The AAP 3 schemas, compiled into the binary.
pub const SCHEMA: &str = include_str!("../../schemas/aap/aap.schema.json");
/// The AAP 1 and 2 schemas: the same `$defs` names, each with its version's shapes.
pub const SCHEMA_V1: &str = include_str!("../../schemas/aap/aap-v1.schema.json");
pub const SCHEMA_V2: &str = include_str!("../../schemas/aap/aap-v2.schema.json");

/// The embedded AAP 3 schema set responses and events are checked against.
pub fn schemas() -> Result<SchemaSet, SchemaError> {
    schemas_for(AapVersion::V3)
}

/// The embedded schema set of one AAP version.
pub fn schemas_for(version: AapVersion) -> Result<SchemaSet, SchemaError> {
    let (name, text) = match version {
        AapVersion::V1 => ("aap-v1.schema.json", SCHEMA_V1),
        AapVersion::V2 => ("aap-v2.schema.json", SCHEMA_V2),
        AapVersion::V3 => ("aap.schema.json", SCHEMA),
    };
    let value = serde_json::from_str(text).map_err(|source| SchemaError::Parse {
        name: name.into(),
        source,
    })?;
    SchemaSet::from_documents([(name.to_owned(), value)])
}

/// The prefix of every secret option value the harness sets: none may come back.
pub const SECRET_PREFIX: &str = "ahpspec-secret-";

/// Looks an always-on AAP rule up.
pub fn rule(id: &str) -> Option<&'static AlwaysOnRule> {
    AAP_ALWAYS_ON.iter().find(|r| r.id == id)
}

/// The endpoint a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Meta,
    List,
    Create,
    Get,
    Delete,
    History,
    Turn,
}

impl Endpoint {
    /// Classifies `method` + `path` (relative to the base, query allowed).
    pub fn of(method: &str, path: &str) -> Option<Endpoint> {
        let path = path.split('?').next().unwrap_or_default();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (method, parts.as_slice()) {
            ("GET", ["meta"]) => Some(Endpoint::Meta),
            ("GET", ["sessions"]) => Some(Endpoint::List),
            ("POST", ["sessions"]) => Some(Endpoint::Create),
            ("GET", ["sessions", _]) => Some(Endpoint::Get),
            ("DELETE", ["sessions", _]) => Some(Endpoint::Delete),
            ("GET", ["sessions", _, "history"]) => Some(Endpoint::History),
            ("POST", ["sessions", _, "turns"]) => Some(Endpoint::Turn),
            _ => None,
        }
    }

    /// The schema `$defs` entry of this endpoint's JSON success body.
    fn success_def(self) -> Option<&'static str> {
        match self {
            Endpoint::Meta => Some("MetaResponse"),
            Endpoint::List => Some("SessionListResponse"),
            Endpoint::Create => Some("CreateSessionResponse"),
            Endpoint::Get => Some("SessionResponse"),
            Endpoint::History => Some("SessionHistoryResponse"),
            Endpoint::Turn => Some("AgentResponse"),
            Endpoint::Delete => None,
        }
    }
}

/// Whether an always-on rule holds at `version` (aap/RULES.md: AAP-SSE-009 is a rule of
/// versions 1 and 2, whose creation answers a turn).
pub fn always_on_holds_at(rule: Rule, version: AapVersion) -> bool {
    match rule {
        Rule::AapSse009 => version.creation_runs_turn(),
        _ => true,
    }
}

/// One exchange, as the checks see it. `method` and `path` are in version 3's terms
/// (`POST /sessions`, `/sessions/:id/turns`) whatever version went on the wire
/// ([`AapVersion::wire`]).
pub struct Seen<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub request: Option<&'a Value>,
    pub response: &'a Response,
    /// Client tool names of the session a turn went to.
    pub client_tools: &'a HashSet<String>,
}

/// Accumulates violations, counts and skips over a case.
pub struct Observer {
    schemas: Arc<SchemaSet>,
    /// The version under test: in 1 and 2 a creation answers a turn.
    pub version: AapVersion,
    pub violations: Vec<Violation>,
    pub counts: HashMap<Rule, usize>,
    pub skips: Skips,
}

impl Observer {
    pub fn new(schemas: Arc<SchemaSet>) -> Observer {
        Observer {
            schemas,
            version: AapVersion::LATEST,
            violations: Vec::new(),
            counts: HashMap::new(),
            skips: Skips::default(),
        }
    }

    /// An observer of a run at `version`, with that version's schemas.
    pub fn at(schemas: Arc<SchemaSet>, version: AapVersion) -> Observer {
        Observer {
            version,
            ..Observer::new(schemas)
        }
    }

    pub fn schemas(&self) -> &SchemaSet {
        &self.schemas
    }

    pub fn count(&mut self, rule: Rule) {
        *self.counts.entry(rule).or_insert(0) += 1;
    }

    pub fn violate(&mut self, rule: Rule, expected: impl Into<String>, actual: impl Into<String>) {
        self.violations.push(Violation::new(rule, expected, actual));
    }

    /// Runs every per-exchange check on `seen`.
    pub fn observe(&mut self, seen: &Seen<'_>) {
        let response = seen.response;
        let endpoint = Endpoint::of(seen.method, seen.path);
        self.count(Rule::AapHttp007);
        if response.status >= 500 {
            self.violate(
                Rule::AapHttp007,
                "no 5xx status",
                format!("{} to {} {}", response.status, seen.method, seen.path),
            );
        }
        self.check_secrets(response);
        if let Body::Json(body) = &response.body {
            if (200..300).contains(&response.status) {
                self.check_json(endpoint, body, response, seen);
            }
            if endpoint == Some(Endpoint::Meta) && response.status == 200 {
                meta::check_meta(self, body);
            }
            if endpoint == Some(Endpoint::History) {
                self.check_no_permissions(body);
            }
        }
        let creation_turn = self.version.creation_runs_turn();
        match (&response.body, endpoint) {
            (Body::Events(_), Some(Endpoint::Turn)) => stream::check_stream(self, seen, false),
            (Body::Events(_), Some(Endpoint::Create)) if creation_turn => {
                stream::check_stream(self, seen, true)
            }
            _ => {}
        }
    }

    fn check_json(
        &mut self,
        endpoint: Option<Endpoint>,
        body: &Value,
        response: &Response,
        seen: &Seen<'_>,
    ) {
        self.count(Rule::AapHttp002);
        if !response.is_media("application/json") {
            self.violate(
                Rule::AapHttp002,
                "Content-Type: application/json",
                format!(
                    "{:?} on {} {}",
                    response.content_type, seen.method, seen.path
                ),
            );
        }
        let Some(def) = endpoint.and_then(Endpoint::success_def) else {
            self.skips.add(Rule::AapHttp001, "no AAP endpoint", 1);
            return;
        };
        self.validate(
            Rule::AapHttp001,
            def,
            body,
            &format!("{} {}", seen.method, seen.path),
        );
    }

    /// Validates `value` against `def`, reporting a violation of `rule`.
    pub fn validate(&mut self, rule: Rule, def: &str, value: &Value, what: &str) {
        self.count(rule);
        if let Err(errors) = self.schemas.validate(def, value) {
            let first = errors.first().map(ToString::to_string).unwrap_or_default();
            self.violate(rule, format!("{what} to match {def}"), first);
        }
    }

    fn check_secrets(&mut self, response: &Response) {
        let text = match &response.body {
            Body::Json(value) => value.to_string(),
            Body::Text(text) => text.clone(),
            Body::Events(read) => read
                .events
                .iter()
                .map(|e| e.data.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            Body::Empty => return,
        };
        self.count(Rule::AapOption003);
        if let Some(at) = text.find(SECRET_PREFIX) {
            let shown: String = text[at..].chars().take(40).collect();
            self.violate(
                Rule::AapOption003,
                "no secret value in any response",
                format!("the body holds {shown}…"),
            );
        }
    }

    fn check_no_permissions(&mut self, body: &Value) {
        let Some(history) = body.get("history").and_then(Value::as_object) else {
            return;
        };
        for (kind, messages) in history {
            self.count(Rule::AapHistory005);
            let stored = messages
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool_permission"))
                .count();
            if stored > 0 {
                self.violate(
                    Rule::AapHistory005,
                    format!("no tool_permission message in {kind} history"),
                    format!("{stored} stored"),
                );
            }
        }
    }
}

/// Describes how a stream ended, for findings.
pub fn ending(end: &StreamEnd, unterminated: bool) -> String {
    match end {
        StreamEnd::Closed if unterminated => {
            "the body ended inside an unterminated event".to_owned()
        }
        StreamEnd::Closed => "the body ended".to_owned(),
        StreamEnd::TimedOut(after) => format!("the body stayed open for {after:?}"),
        StreamEnd::Broken(why) => format!("the body broke off ({why})"),
    }
}
