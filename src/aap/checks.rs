//! Always-on AAP checks: run on every response and every SSE event of every case, each
//! reported as one row under its own rule ID with the number of things it looked at. No
//! I/O here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::http::{Body, Response};
use super::sse::StreamEnd;
use crate::checks::{AlwaysOnRule, Skips, Violation};
use crate::schema::SchemaSet;
use crate::verdict::Level;

/// The prefix of every secret option value the harness sets: none may come back.
pub const SECRET_PREFIX: &str = "ahpspec-secret-";

macro_rules! aap_rules {
    ($( ($id:literal, $level:ident, $area:literal, $spec:literal, $unit:literal, $req:literal), )*) => {
        /// Every always-on AAP rule, in report order.
        pub const AAP_ALWAYS_ON: &[AlwaysOnRule] = &[
            $( AlwaysOnRule { id: $id, level: Level::$level, area: $area, spec: $spec, unit: $unit, requirement: $req }, )*
        ];
    };
}

aap_rules! {
    ("AAP-HTTP-001", Must, "aap/http", "docs/schema.md", "JSON bodies",
        "Every JSON success body matches the schema of its endpoint."),
    ("AAP-HTTP-002", Must, "aap/http", "docs/response.md § stream: \"none\"", "JSON bodies",
        "A JSON body is sent as application/json."),
    ("AAP-HTTP-007", Must, "aap/http", "HTTP semantics (derived, MUST*)", "responses",
        "No request of the harness makes the server answer 5xx."),
    ("AAP-META-003", Must, "aap/meta", "docs/endpoints.md § GET /meta (Agent fields: name)", "meta responses",
        "Agent names are unique on the server."),
    ("AAP-META-004", Must, "aap/meta", "docs/endpoints.md § GET /meta (Agent fields: version)", "agents",
        "An agent's version is a semantic version."),
    ("AAP-META-005", Must, "aap/meta", "docs/endpoints.md § GET /meta (Option fields) (derived, MUST*)", "agents",
        "Option names are unique within an agent; a select option's default is one of its options."),
    ("AAP-OPTION-003", Must, "aap/options", "docs/endpoints.md § GET /sessions/:id", "response bodies",
        "A secret option's value is never returned in plaintext."),
    ("AAP-SSE-001", Must, "aap/sse", "docs/response.md § SSE Events; docs/schema.md § SSEEvent", "events",
        "Every SSE event names a known type and carries a JSON object with that type's fields."),
    ("AAP-SSE-002", Must, "aap/sse", "docs/response.md § turn_start", "streams",
        "turn_start is the first event of every turn stream, once."),
    ("AAP-SSE-003", Must, "aap/sse", "docs/response.md § turn_stop", "streams",
        "turn_stop is the final event of every stream: present, once, nothing after it, and the response ends."),
    ("AAP-SSE-004", Must, "aap/sse", "docs/response.md § text_delta, thinking_delta", "delta streams",
        "Delta mode sends text and thinking only as deltas."),
    ("AAP-SSE-005", Must, "aap/sse", "docs/response.md § text, thinking", "message streams",
        "Message mode sends text and thinking only as whole text/thinking events."),
    ("AAP-SSE-006", Must, "aap/sse", "docs/schema.md § SSEEvent (derived, MUST*)", "streams",
        "session_start never appears in a turn stream."),
    ("AAP-SSE-007", Must, "aap/sse", "docs/response.md § Response Modes", "turns run in several modes",
        "The same scripted turn carries the same content in delta, message and none mode."),
    ("AAP-TOOL-008", Must, "aap/tool-calls", "docs/tool-call.md § Tool call resolving (derived, MUST*)", "streams with tool events",
        "toolCallIds are unique within a turn; each tool_result answers a server tool call of this turn or a permission granted in this request."),
    ("AAP-HISTORY-004", Must, "aap/history", "docs/history.md § Server History", "full histories",
        "Full history is exactly the seed, the submitted messages and what each turn produced."),
    ("AAP-HISTORY-005", Must, "aap/history", "docs/response.md § Tool permission message", "histories",
        "tool_permission messages are never stored in history."),
}

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

/// One exchange, as the checks see it.
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
    pub violations: Vec<Violation>,
    pub counts: HashMap<&'static str, usize>,
    pub skips: Skips,
}

impl Observer {
    pub fn new(schemas: Arc<SchemaSet>) -> Observer {
        Observer {
            schemas,
            violations: Vec::new(),
            counts: HashMap::new(),
            skips: Skips::default(),
        }
    }

    pub fn schemas(&self) -> &SchemaSet {
        &self.schemas
    }

    pub fn count(&mut self, rule: &'static str) {
        *self.counts.entry(rule).or_insert(0) += 1;
    }

    pub fn violate(
        &mut self,
        rule: &'static str,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) {
        self.violations.push(Violation::new(rule, expected, actual));
    }

    /// Runs every per-exchange check on `seen`.
    pub fn observe(&mut self, seen: &Seen<'_>) {
        let response = seen.response;
        let endpoint = Endpoint::of(seen.method, seen.path);
        self.count("AAP-HTTP-007");
        if response.status >= 500 {
            self.violate(
                "AAP-HTTP-007",
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
                super::meta::check_meta(self, body);
            }
            if endpoint == Some(Endpoint::History) {
                self.check_no_permissions(body);
            }
        }
        if let (Body::Events(_), Some(Endpoint::Turn)) = (&response.body, endpoint) {
            super::stream::check_stream(self, seen);
        }
    }

    fn check_json(
        &mut self,
        endpoint: Option<Endpoint>,
        body: &Value,
        response: &Response,
        seen: &Seen<'_>,
    ) {
        self.count("AAP-HTTP-002");
        if !response.is_media("application/json") {
            self.violate(
                "AAP-HTTP-002",
                "Content-Type: application/json",
                format!(
                    "{:?} on {} {}",
                    response.content_type, seen.method, seen.path
                ),
            );
        }
        let Some(def) = endpoint.and_then(Endpoint::success_def) else {
            self.skips.add("AAP-HTTP-001", "no AAP endpoint", 1);
            return;
        };
        self.validate(
            "AAP-HTTP-001",
            def,
            body,
            &format!("{} {}", seen.method, seen.path),
        );
    }

    /// Validates `value` against `def`, reporting a violation of `rule`.
    pub fn validate(&mut self, rule: &'static str, def: &str, value: &Value, what: &str) {
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
        self.count("AAP-OPTION-003");
        if let Some(at) = text.find(SECRET_PREFIX) {
            let shown: String = text[at..].chars().take(40).collect();
            self.violate(
                "AAP-OPTION-003",
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
            self.count("AAP-HISTORY-005");
            let stored = messages
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool_permission"))
                .count();
            if stored > 0 {
                self.violate(
                    "AAP-HISTORY-005",
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
