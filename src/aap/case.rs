//! Running one AAP case: its steps in order on one HTTP client, every exchange through the
//! always-on checks, and the session models that the history check compares against.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::checks::{Observer, Seen};
use super::expect::{check_expect, Miss};
use super::http::{Auth, BadReader, Client, Request, Response};
use super::model::Item;
use super::suite::{AapCase, AuthText, HttpStep, LocatedStep, SessionStep, Step, TurnStep};

mod bad_reader;
mod list;
mod track;
use super::agent::Agent;
use crate::checks::Rule;
use crate::verdict::{rule_of, CaseResult, Finding, Level, ReportedFrame, Verdict};
use track::SessionModel;
pub use track::{created_id, session_of};

/// Everything a case needs from the run.
pub struct CaseContext {
    pub client: Client,
    pub agent: Arc<Agent>,
    pub vars: HashMap<String, String>,
    pub observer: Observer,
    pub rerun: String,
}

/// A turn as the cross-mode check needs it.
#[derive(Debug, Clone)]
pub struct TurnRecord {
    /// The session's creation and every turn request so far, without `stream`.
    pub key: String,
    pub mode: String,
    pub items: Vec<Item>,
    pub stop: Option<String>,
    pub case: String,
}

/// What a case leaves behind.
pub struct CaseOutcome {
    pub result: CaseResult,
    pub observer: Observer,
    pub turns: Vec<TurnRecord>,
}

pub(super) struct Run<'a> {
    case: &'a AapCase,
    ctx: CaseContext,
    stored: HashMap<String, Response>,
    sessions: HashMap<String, SessionModel>,
    findings: Vec<Finding>,
    blocked_by: Option<String>,
    turns: Vec<TurnRecord>,
    requests: usize,
    /// Set once the steps are done: the history check's requests judge no prerequisite.
    after_steps: bool,
    /// The request being exchanged is one the case expects refused (a later `expect` of
    /// it wants a 4xx): the case's own expectation is judged first, so an answer in the
    /// shape of a success is its failure, not another rule's prerequisite.
    refusal_expected: bool,
}

/// Why a step could not go on.
pub(super) enum Stop {
    /// The case's own rule (or a `relies_on` rule) failed; the finding is recorded.
    Failed,
    /// The harness could not do the step (bad suite reference).
    Harness(String),
    /// What the case judges could not be seen (why): not testable.
    Unseen(String),
}

pub async fn run_case(case: &AapCase, ctx: CaseContext) -> CaseOutcome {
    let started = Instant::now();
    let mut run = Run {
        case,
        ctx,
        stored: HashMap::new(),
        sessions: HashMap::new(),
        findings: Vec::new(),
        blocked_by: None,
        turns: Vec::new(),
        requests: 0,
        after_steps: false,
        refusal_expected: false,
    };
    let mut harness = None;
    let mut unseen = None;
    for step in &case.steps {
        match run.step(step).await {
            Ok(()) => {}
            Err(Stop::Failed) => break,
            Err(Stop::Harness(why)) => {
                harness = Some(why);
                break;
            }
            Err(Stop::Unseen(why)) => {
                unseen = Some(why);
                break;
            }
        }
    }
    run.after_steps = true;
    run.check_histories().await;
    let own_findings = run.findings.iter().any(|f| f.rule == case.info.id);
    let verdict = match (&harness, &run.blocked_by) {
        (Some(_), _) => Verdict::HarnessError,
        (None, Some(_)) => Verdict::Blocked,
        _ if unseen.is_some() && !own_findings => Verdict::NotTestable,
        _ => run
            .findings
            .iter()
            .filter(|f| f.rule == case.info.id)
            .fold(Verdict::Pass, |v, f| v.worst(f.verdict)),
    };
    let summary = match (&harness, run.findings.first()) {
        (Some(why), _) => format!("harness error: {why}"),
        (None, _) if verdict == Verdict::NotTestable => {
            format!("not testable: {}", unseen.unwrap_or_default())
        }
        (None, Some(f)) if verdict != Verdict::Pass => {
            format!("expected {}; got {}", f.expected, f.actual)
        }
        _ => format!("{} requests; every expectation held", run.requests),
    };
    let transcript = run.ctx.client.transcript().to_vec();
    CaseOutcome {
        result: CaseResult {
            info: case.info.clone(),
            verdict,
            summary,
            findings: run.findings,
            blocked_by: run.blocked_by,
            protocol_version: None,
            transcript,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            rerun: run.ctx.rerun,
        },
        observer: run.ctx.observer,
        turns: run.turns,
    }
}

impl Run<'_> {
    async fn step(&mut self, located: &LocatedStep) -> Result<(), Stop> {
        match &located.step {
            Step::Http(step) => self.http(step, located).await,
            Step::Session(step) => self.session(step, located).await,
            Step::Turn(step) => self.turn(step, located).await,
            Step::List(step) => list::walk(self, step, located).await,
            Step::Expect(expect) => {
                let Some(response) = self.stored.get(&expect.of) else {
                    return Err(Stop::Harness(format!(
                        "{}: nothing stored as {:?}",
                        located.at, expect.of
                    )));
                };
                let mut misses = check_expect(expect, response, &self.ctx.vars);
                let captured = super::expect::captures(expect, response);
                match captured {
                    Ok(values) => self.ctx.vars.extend(values),
                    Err(miss) => misses.push(miss),
                }
                self.misses(
                    misses,
                    expect.level,
                    expect.relies_on.as_deref(),
                    &located.at,
                )
            }
        }
    }

    /// Records the misses of one step; stops the case when one is at the case's level.
    /// `wire` got no response (`error` says why): charged to the rule the first expectation
    /// of the response stored as `name` relies on, or to the case's own.
    fn unanswered(
        &mut self,
        wire: &Request,
        error: &dyn std::fmt::Display,
        name: Option<&str>,
        at: &str,
    ) -> Stop {
        let miss = Miss::new(
            format!("a response to {} {}", wire.method, wire.path),
            format!("none: {error}"),
        );
        let relied = name.and_then(|n| self.relied_on(n));
        match self.misses(vec![miss], None, relied.as_deref(), at) {
            Err(stop) => stop,
            Ok(()) => Stop::Failed,
        }
    }

    fn misses(
        &mut self,
        misses: Vec<Miss>,
        level: Option<Level>,
        relies_on: Option<&str>,
        at: &str,
    ) -> Result<(), Stop> {
        if misses.is_empty() {
            return Ok(());
        }
        let level = level.unwrap_or(self.case.info.level);
        // A rule relied on that is the case's own (its ID without the slug) is judged as
        // the case's; any other one blocks the case.
        let own = relies_on.is_none_or(|r| r == rule_of(&self.case.info.id));
        let rule = match relies_on {
            Some(other) if !own => other.to_owned(),
            _ => self.case.info.id.clone(),
        };
        let context = last_frames(self.ctx.client.transcript());
        for miss in misses {
            self.findings.push(Finding {
                rule: rule.clone(),
                verdict: if own { level.broken() } else { Verdict::Fail },
                expected: miss.expected,
                actual: miss.actual,
                step: Some(at.to_owned()),
                context: context.clone(),
            });
        }
        if !own {
            self.blocked_by = Some(rule);
            return Err(Stop::Failed);
        }
        if level < self.case.info.level {
            return Ok(());
        }
        Err(Stop::Failed)
    }

    fn subst(&self, text: &str) -> Result<String, Stop> {
        super::vars::substitute(text, &self.ctx.vars).map_err(Stop::Harness)
    }

    fn subst_value(&self, value: &Value) -> Result<Value, Stop> {
        super::vars::substitute_value(value, &self.ctx.vars).map_err(Stop::Harness)
    }

    /// `request` (written with version 3's endpoints) as it goes on the wire at the
    /// version under test; counted as one request of the case.
    fn on_wire(&mut self, request: &Request) -> Request {
        self.requests += 1;
        let (method, path) = self
            .ctx
            .observer
            .version
            .wire(&request.method, &request.path);
        Request {
            method,
            path,
            ..request.clone()
        }
    }

    /// Sends a request, runs the always-on checks, and stores the response.
    pub(super) async fn exchange(
        &mut self,
        request: Request,
        json_body: Option<&Value>,
        name: Option<&str>,
        at: &str,
    ) -> Result<Response, Stop> {
        let wire = self.on_wire(&request);
        let response = match self.ctx.client.send(&wire).await {
            Ok(response) => response,
            // Whether the server answered before it closed could not be seen.
            Err(error @ super::http::HttpError::ClosedWhileSending(_)) => {
                return Err(Stop::Unseen(format!(
                    "{} {}: {error}",
                    wire.method, wire.path
                )))
            }
            Err(error) => return Err(self.unanswered(&wire, &error, name, at)),
        };
        let session = session_of(&request.path);
        let no_tools = HashSet::new();
        let client_tools = session
            .and_then(|id| self.sessions.get(id))
            .map_or(&no_tools, |s| &s.client_tools);
        let before = self.ctx.observer.violations.len();
        self.ctx.observer.observe(&Seen {
            method: &request.method,
            path: &request.path,
            request: json_body,
            response: &response,
            client_tools,
        });
        let fresh = &self.ctx.observer.violations[before..];
        let clean = fresh.is_empty();
        let broke = fresh.iter().find(|v| is_framing(v.rule)).cloned();
        self.follow(&request, json_body, &response, clean);
        if let Some(name) = name {
            self.stored.insert(name.to_owned(), response.clone());
        }
        if let Some((miss, rule)) = self.prerequisite(&request, json_body, &response, broke) {
            self.misses(vec![miss], None, Some(rule.id()), at)?;
        }
        Ok(response)
    }

    /// What the case needs from an exchange before it can judge its own rule: the key
    /// accepted, no always-on rule broken by it, and a successful turn answered in the
    /// shape of its mode. A miss blocks the case (or is its own failure, for its own rule).
    fn prerequisite(
        &self,
        request: &Request,
        body: Option<&Value>,
        response: &Response,
        broke: Option<crate::checks::Violation>,
    ) -> Option<(Miss, Rule)> {
        if self.after_steps {
            return None;
        }
        let what = format!("{} {}", request.method, request.path);
        if request.auth == Auth::Configured
            && self.ctx.client.has_token()
            && matches!(response.status, 401 | 403)
        {
            let miss = Miss::new(
                format!("{what} served with the configured key"),
                response.status.to_string(),
            );
            return Some((miss, Rule::AapAuth001));
        }
        if self.refusal_expected {
            return None;
        }
        if let Some(violation) = broke.filter(|v| v.rule.id() != rule_of(&self.case.info.id)) {
            let miss = Miss::new(format!("{what}: {}", violation.expected), violation.actual);
            return Some((miss, violation.rule));
        }
        let turn = super::checks::Endpoint::of(&request.method, &request.path)
            == Some(super::checks::Endpoint::Turn);
        if !turn || !(200..300).contains(&response.status) {
            return None;
        }
        let mode = body.and_then(|b| b.get("stream")).and_then(Value::as_str);
        let (rule, media) = match mode {
            Some("delta") => (Rule::AapTurn003, "text/event-stream"),
            Some("message") => (Rule::AapTurn004, "text/event-stream"),
            // Without `stream`, a stream answer breaks the default; any other shape is the
            // none mode's.
            None if response.is_media("text/event-stream") => {
                (Rule::AapTurn002, "application/json")
            }
            _ => (Rule::AapTurn001, "application/json"),
        };
        (response.status != 200 || !response.is_media(media)).then(|| {
            let miss = Miss::new(
                format!("{what}: 200 with {media}"),
                format!("{} {:?}", response.status, response.content_type),
            );
            (miss, rule)
        })
    }

    async fn http(&mut self, step: &HttpStep, located: &LocatedStep) -> Result<(), Stop> {
        let body = step
            .body
            .as_ref()
            .map(|b| self.subst_value(b))
            .transpose()?;
        let bytes = match (&body, &step.raw) {
            (_, Some(raw)) => Some(self.subst(raw)?.into_bytes()),
            (Some(value), None) => Some(value.to_string().into_bytes()),
            (None, None) => None,
        };
        let request = Request {
            method: step.method.clone(),
            path: self.subst(&step.path)?,
            body: bytes,
            content_type: step.content_type.clone(),
            auth: match step.auth {
                AuthText::Configured => Auth::Configured,
                AuthText::Omitted => Auth::Omitted,
                AuthText::Wrong => Auth::Wrong,
            },
        };
        self.refusal_expected = step
            .name
            .as_deref()
            .is_some_and(|name| self.expects_refusal(name));
        let exchanged = self
            .exchange(request, body.as_ref(), step.name.as_deref(), &located.at)
            .await;
        self.refusal_expected = false;
        exchanged.map(|_| ())
    }

    /// Whether an `expect` step of the case wants the response stored as `name` refused
    /// (a 4xx status or class).
    fn expects_refusal(&self, name: &str) -> bool {
        let client_error = |status: u16| (400..500).contains(&status);
        self.case.steps.iter().any(|located| match &located.step {
            Step::Expect(expect) if expect.of == name => {
                expect.class.as_deref() == Some("4xx")
                    || expect.status.is_some_and(client_error)
                    || expect
                        .status_in
                        .as_ref()
                        .is_some_and(|all| !all.is_empty() && all.iter().copied().all(client_error))
            }
            _ => false,
        })
    }

    async fn session(&mut self, step: &SessionStep, located: &LocatedStep) -> Result<(), Stop> {
        let mut agent = json!({ "name": self.ctx.agent.name });
        if let Some(options) = &step.options {
            agent["options"] = self.subst_value(options)?;
        }
        if let Some(tools) = &step.agent_tools {
            agent["tools"] = self.subst_value(tools)?;
        }
        let mut body = json!({ "agent": agent });
        if let Some(tools) = &step.tools {
            body["tools"] = self.subst_value(tools)?;
        }
        if let Some(messages) = &step.messages {
            body["messages"] = self.subst_value(messages)?;
        }
        let version = self.ctx.observer.version;
        if version.creation_runs_turn() {
            // Versions 1 and 2 create with a first turn: the seed ends with a user message
            // the agent answers (`PUT /session`, none mode).
            let opening = json!({ "role": "user", "content": self.opening_message() });
            match body.get_mut("messages").and_then(Value::as_array_mut) {
                Some(seed) => seed.push(opening),
                None => body["messages"] = json!([opening]),
            }
        }
        let request = Request {
            method: "POST".into(),
            path: "/sessions".into(),
            body: Some(body.to_string().into_bytes()),
            ..Request::default()
        };
        let response = self
            .exchange(request, Some(&body), Some(&step.name), &located.at)
            .await?;
        let (rule, wanted) = if version.creation_runs_turn() {
            (Rule::AapSession010, "2xx with a sessionId")
        } else {
            (Rule::AapSession001, "201 with a sessionId")
        };
        let status_ok = if version.creation_runs_turn() {
            (200..300).contains(&response.status)
        } else {
            response.status == 201
        };
        let id = track::created_id(&response).filter(|id| status_ok && !id.is_empty());
        let Some(id) = id else {
            let miss = Miss::new(wanted, format!("{} {:?}", response.status, response.json()));
            let relies = (rule_of(&self.case.info.id) != rule.id()).then_some(rule.id());
            self.misses(vec![miss], None, relies, &located.at)?;
            return Err(Stop::Failed);
        };
        self.ctx.vars.insert(step.name.clone(), id);
        Ok(())
    }

    /// The user message a version 1 or 2 creation ends with: a one-text script for the
    /// scripted agent, a plain greeting for any other.
    fn opening_message(&self) -> String {
        if self.ctx.agent.scripted() {
            let script = json!({ "steps": [{ "text": "ahpspec session ready" }] });
            format!("ahpspec-script:{script}")
        } else {
            "ahpspec: hello".to_owned()
        }
    }

    async fn turn(&mut self, step: &TurnStep, located: &LocatedStep) -> Result<(), Stop> {
        let session = self.ctx.vars.get(&step.session).cloned().ok_or_else(|| {
            Stop::Harness(format!("{}: no session {:?}", located.at, step.session))
        })?;
        let messages = match (&step.script, &step.text, &step.messages) {
            (Some(script), _, _) => {
                let script = self.subst_value(script)?;
                json!([{ "role": "user", "content": format!("ahpspec-script:{script}") }])
            }
            (None, Some(text), _) => json!([{ "role": "user", "content": self.subst(text)? }]),
            (None, None, Some(messages)) => self.subst_value(messages)?,
            (None, None, None) => {
                return Err(Stop::Harness(format!(
                    "{}: a turn needs script, text or messages",
                    located.at
                )))
            }
        };
        let mut body = json!({ "messages": messages });
        if let Some(stream) = &step.stream {
            body["stream"] = json!(stream);
        }
        if let Some(agent) = &step.agent {
            body["agent"] = self.subst_value(agent)?;
        }
        if let Some(tools) = &step.tools {
            body["tools"] = self.subst_value(tools)?;
        }
        let request = Request {
            method: "POST".into(),
            path: format!("/sessions/{session}/turns"),
            body: Some(body.to_string().into_bytes()),
            ..Request::default()
        };
        if let Some(reader) = &step.reader {
            let reader = BadReader::parse(reader).ok_or_else(|| {
                Stop::Harness(format!("{}: unknown reader {reader:?}", located.at))
            })?;
            let name = step.name.as_deref();
            return self
                .turn_read_badly(request, &body, reader, name, &located.at)
                .await;
        }
        self.exchange(request, Some(&body), step.name.as_deref(), &located.at)
            .await
            .map(|_| ())
    }
}

impl Run<'_> {
    pub(super) async fn get(&mut self, path: String, at: &str) -> Result<Response, Stop> {
        let request = Request {
            method: "GET".into(),
            path,
            ..Request::default()
        };
        self.exchange(request, None, None, at).await
    }

    pub(super) fn var(&self, name: &str) -> Option<&String> {
        self.ctx.vars.get(name)
    }

    pub(super) fn fail(
        &mut self,
        miss: Miss,
        relies_on: Option<Rule>,
        at: &str,
    ) -> Result<(), Stop> {
        self.misses(vec![miss], None, relies_on.map(Rule::id), at)
    }
}

/// The frames a finding shows: the last few of the case's transcript.
pub fn last_frames(transcript: &[ReportedFrame]) -> Vec<ReportedFrame> {
    const SHOWN: usize = 6;
    transcript[transcript.len().saturating_sub(SHOWN)..].to_vec()
}

/// Framing rules (body schema and type, status, stream shape) decide whether a response can
/// be read at all; the semantic ones (tool bookkeeping, secrets, history) leave a case able
/// to judge its own rule.
fn is_framing(rule: Rule) -> bool {
    rule.always_on()
        .is_some_and(|row| row.area == "aap/sse" || row.area == "aap/http")
}
