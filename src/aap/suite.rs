//! AAP suite files (suites/aap/*.toml, schema: schemas/aap-suite.schema.json): the case
//! header every suite has ([`crate::catalog`]) with HTTP step kinds. Nothing here runs
//! anything.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::SuiteFormat;
use crate::checks::{AlwaysOnRule, AAP_ALWAYS_ON};
use crate::verdict::Level;

/// The AAP suites compiled into the binary.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("meta.toml", include_str!("../../suites/aap/meta.toml")),
    (
        "sessions.toml",
        include_str!("../../suites/aap/sessions.toml"),
    ),
    (
        "options.toml",
        include_str!("../../suites/aap/options.toml"),
    ),
    (
        "history.toml",
        include_str!("../../suites/aap/history.toml"),
    ),
    ("turns.toml", include_str!("../../suites/aap/turns.toml")),
    (
        "tool-calls.toml",
        include_str!("../../suites/aap/tool-calls.toml"),
    ),
    ("errors.toml", include_str!("../../suites/aap/errors.toml")),
];

/// One step: a table with exactly one key, the step kind.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Any request.
    Http(HttpStep),
    /// `POST /sessions` for the agent under test; 201 + `sessionId` or the case is blocked.
    Session(SessionStep),
    /// `POST /sessions/:id/turns`.
    Turn(TurnStep),
    /// Walk `GET /sessions` page by page.
    List(ListStep),
    /// Assert on a stored response.
    Expect(Expect),
}

/// `skip_serializing_if` for collections.
fn is_empty<T>(collection: &T) -> bool
where
    for<'a> &'a T: IntoIterator,
{
    collection.into_iter().next().is_none()
}

impl AuthText {
    fn is_configured(&self) -> bool {
        *self == AuthText::Configured
    }
}

/// Which `Authorization` header a step sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AuthText {
    #[default]
    Configured,
    Omitted,
    Wrong,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpStep {
    pub method: String,
    /// Relative to the base URL; may hold `${var}`.
    pub path: String,
    /// A JSON body (a TOML table or array).
    pub body: Option<Value>,
    /// A body sent verbatim (deliberately broken input).
    pub raw: Option<String>,
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "AuthText::is_configured")]
    pub auth: AuthText,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStep {
    /// The variable (and stored response) the session id goes to.
    #[serde(rename = "as")]
    pub name: String,
    /// `agent.options`.
    pub options: Option<Value>,
    /// `agent.tools` (server tools to enable).
    pub agent_tools: Option<Value>,
    /// Client tools.
    pub tools: Option<Value>,
    /// Seed history.
    pub messages: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TurnStep {
    /// The session variable.
    pub session: String,
    pub stream: Option<String>,
    /// A scripted-agent script: sent as one user message `ahpspec-script:<JSON>`.
    pub script: Option<Value>,
    /// A plain user message.
    pub text: Option<String>,
    /// The request's messages verbatim (tool results, permissions).
    pub messages: Option<Value>,
    pub agent: Option<Value>,
    pub tools: Option<Value>,
    /// A client that reads the streamed answer badly: `drop` (leaves after the first
    /// event), `slow` (one byte at a time, then leaves), `stall` (stops reading, then
    /// leaves). Only the status of such a turn is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<String>,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ListStep {
    /// Session variables that must be listed.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub contains: Vec<String>,
    /// Session variables that must not be listed.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub lacks: Vec<String>,
}

/// What a stored response must show. Every field is optional; all given must hold.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The stored response (`as` of an earlier step).
    pub of: String,
    pub status: Option<u16>,
    /// A status class: `2xx`, `4xx`.
    pub class: Option<String>,
    /// One of these statuses.
    pub status_in: Option<Vec<u16>>,
    /// Media type without parameters.
    pub content_type: Option<String>,
    /// JSON pointer → value the body must hold there.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub json: BTreeMap<String, Value>,
    /// JSON pointers that must exist.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub present: Vec<String>,
    /// JSON pointers that must not exist.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub absent: Vec<String>,
    /// JSON pointer → value the body must NOT hold there (e.g. a secret).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub differs: BTreeMap<String, Value>,
    /// JSON pointers that must hold a non-empty string (e.g. a placeholder in place of a
    /// secret: present, and not blanked).
    #[serde(default, skip_serializing_if = "is_empty")]
    pub non_empty: Vec<String>,
    /// The response has no body at all.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub empty_body: bool,
    /// The SSE event names, exactly, in order.
    pub events: Option<Vec<String>>,
    /// The `tool_call`/`tool_result` events alone, in order (what a tool rule is about,
    /// whatever text comes around them).
    pub tool_events: Option<Vec<String>>,
    /// The stop reason (JSON `stopReason` or the `turn_stop` event's).
    pub stop_reason: Option<String>,
    /// `${var}` ← value at JSON pointer.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub capture: BTreeMap<String, String>,
    /// Report a miss at this lower level and go on.
    pub level: Option<Level>,
    /// A miss is that rule's failure and blocks the case.
    pub relies_on: Option<String>,
}

/// An AAP step with where it stands.
pub type LocatedStep = crate::catalog::Located<Step>;
/// A parsed AAP case (no probes, no `since`: AAP has one version).
pub type AapCase = crate::catalog::Case<Step>;
/// Every loaded AAP case, in file order.
pub type AapCatalog = crate::catalog::Catalog<Step>;

/// AAP's suites: its steps, its files (areas under `aap/`), its always-on rules.
impl SuiteFormat for Step {
    const EMBEDDED: &'static [(&'static str, &'static str)] = EMBEDDED;
    const AREA_PREFIX: &'static str = "aap/";
    const PROBES_AND_VERSIONS: bool = false;
    const ALWAYS_ON: &'static [AlwaysOnRule] = AAP_ALWAYS_ON;
    const ALWAYS_ON_OVER: &'static str = "response of every case";

    fn embedded_once() -> &'static std::sync::OnceLock<AapCatalog> {
        static ONCE: std::sync::OnceLock<AapCatalog> = std::sync::OnceLock::new();
        &ONCE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::SuiteError;

    #[test]
    fn embedded_suites_parse() {
        let cases = AapCatalog::embedded()
            .expect("embedded AAP suites parse")
            .cases;
        assert!(cases.len() > 20, "{} cases", cases.len());
    }

    #[test]
    fn unknown_step_fields_are_rejected_with_a_line() {
        let text = "page = \"docs/endpoints.md\"\n[[case]]\nid = \"X\"\nlevel = \"MUST\"\nspec = \"§ a\"\nrequirement = \"r\"\ndoes = \"d\"\nsteps = [\n  { http = { method = \"GET\", path = \"/meta\", bogus = 1 } },\n]\n";
        match AapCatalog::parse_suite("t.toml", text) {
            Err(SuiteError::Parse { line, .. }) => assert!(line >= 8, "line {line}"),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }
}
