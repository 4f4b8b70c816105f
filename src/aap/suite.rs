//! AAP suite files (suites/aap/*.toml, schema: schemas/aap-suite.schema.json): the same
//! case header as the AHP suites (id, level, spec, requirement, does, needs, capabilities)
//! with HTTP step kinds. Parsing rejects unknown fields and reports `file:line`; nothing
//! here runs anything.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use crate::suite::SuiteError;
use crate::verdict::{CaseInfo, Level};

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    area: Option<String>,
    page: String,
    #[serde(default, rename = "case")]
    cases: Vec<Spanned<CaseFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    id: String,
    level: String,
    spec: String,
    requirement: String,
    does: String,
    #[serde(default)]
    needs: Vec<String>,
    #[serde(default)]
    capabilities: Vec<String>,
    steps: Vec<Spanned<Step>>,
}

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
    pub level: Option<String>,
    /// A miss is that rule's failure and blocks the case.
    pub relies_on: Option<String>,
}

/// A step with where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedStep {
    pub step: Step,
    pub at: String,
}

/// A parsed AAP case.
#[derive(Debug, Clone)]
pub struct AapCase {
    pub info: CaseInfo,
    /// Agent behaviours: `scripted`, `server_tool`, `secret_option`, `text_option`,
    /// `select_option`, `token`.
    pub needs: Vec<String>,
    /// Capability paths (`stream.delta`); `!history.compacted` = must be undeclared.
    pub capabilities: Vec<String>,
    pub steps: Vec<LocatedStep>,
}

pub fn parse_level(text: &str) -> Option<Level> {
    match text.trim_end_matches('*') {
        "MUST" => Some(Level::Must),
        "SHOULD" => Some(Level::Should),
        "MAY" => Some(Level::May),
        _ => None,
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |head| head.matches('\n').count() + 1)
}

/// Parses one suite file.
pub fn parse_suite(file: &str, text: &str) -> Result<Vec<AapCase>, SuiteError> {
    let error = |line: usize, message: String| SuiteError::Parse {
        file: file.to_owned(),
        line,
        message,
    };
    let parsed: SuiteFile = toml::from_str(text).map_err(|e| {
        error(
            e.span().map_or(1, |span| line_of(text, span.start)),
            e.message().to_owned(),
        )
    })?;
    let area = parsed.area.clone().unwrap_or_else(|| {
        Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_owned(), |s| s.to_string_lossy().into_owned())
    });
    let mut cases = Vec::new();
    for spanned in parsed.cases {
        let line = line_of(text, spanned.span().start);
        let case = spanned.into_inner();
        let level = parse_level(&case.level)
            .ok_or_else(|| error(line, format!("unknown level {:?}", case.level)))?;
        if case.steps.is_empty() {
            return Err(error(line, format!("case {} has no steps", case.id)));
        }
        let spec = if case.spec.contains(".md") {
            case.spec
        } else {
            format!("{} {}", parsed.page, case.spec)
        };
        let steps = case
            .steps
            .into_iter()
            .map(|s| LocatedStep {
                at: format!("{file}:{}", line_of(text, s.span().start)),
                step: s.into_inner(),
            })
            .collect();
        cases.push(AapCase {
            info: CaseInfo {
                id: case.id,
                level,
                area: format!("aap/{area}"),
                spec,
                requirement: case.requirement,
                does: case.does,
                source: format!("{file}:{line}"),
            },
            needs: case.needs,
            capabilities: case.capabilities,
            steps,
        });
    }
    Ok(cases)
}

/// Every embedded AAP case, ids unique across files.
pub fn embedded() -> Result<Vec<AapCase>, SuiteError> {
    let files = EMBEDDED
        .iter()
        .map(|(file, text)| (format!("suites/aap/{file}"), (*text).to_owned()));
    collect(files)
}

/// Every case of the `*.toml` files in `dir` (e.g. a fuzz trace), ids unique across files.
pub fn from_dir(dir: &Path) -> Result<Vec<AapCase>, SuiteError> {
    let io = |source| SuiteError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(SuiteError::Empty(dir.to_path_buf()));
    }
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|source| SuiteError::Io {
            path: path.clone(),
            source,
        })?;
        files.push((path.display().to_string(), text));
    }
    collect(files.into_iter())
}

fn collect(files: impl Iterator<Item = (String, String)>) -> Result<Vec<AapCase>, SuiteError> {
    let mut all = Vec::new();
    let mut seen = HashSet::new();
    for (name, text) in files {
        for case in parse_suite(&name, &text)? {
            if !seen.insert(case.info.id.clone()) {
                return Err(SuiteError::DuplicateId {
                    file: name.clone(),
                    line: 1,
                    id: case.info.id,
                });
            }
            all.push(case);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_suites_parse() {
        let cases = embedded().expect("embedded AAP suites parse");
        assert!(cases.len() > 20, "{} cases", cases.len());
    }

    #[test]
    fn unknown_step_fields_are_rejected_with_a_line() {
        let text = "page = \"docs/endpoints.md\"\n[[case]]\nid = \"X\"\nlevel = \"MUST\"\nspec = \"§ a\"\nrequirement = \"r\"\ndoes = \"d\"\nsteps = [\n  { http = { method = \"GET\", path = \"/meta\", bogus = 1 } },\n]\n";
        match parse_suite("t.toml", text) {
            Err(SuiteError::Parse { line, .. }) => assert!(line >= 8, "line {line}"),
            other => panic!("expected a parse error, got {other:?}"),
        }
    }
}
