//! Runs one case: executes its steps on its own connections, judges each expectation, and
//! collects what the always-on checks found along the way.

mod alternatives;
mod progress;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::conn::{json_equal as json_eq, Conn, Located};
use super::profile::Profile;
use super::vars::Vars;
use crate::checks::frame::{Counts, Schemas};
use crate::suite::*;
use crate::transport::{Connection, Incoming, TransportError};
use crate::verdict::{CaseResult, Finding, Level, ReportedFrame, Verdict};

/// Everything a case needs from the run.
#[derive(Debug, Clone)]
pub struct CaseContext {
    pub url: String,
    pub schemas: Schemas,
    pub profile: Profile,
    pub timeout: Duration,
    /// Unique per case run, for URIs and client ids.
    pub token: String,
    pub rerun: String,
    /// `capabilities` of the agent the profile uses (from the root state), or why the server
    /// could not tell (its `initialize` failed: INIT-001).
    pub agent_capabilities: Result<Value, super::AgentsUnread>,
    /// Levels of the rules steps may rely on (every case's rule and always-on check).
    pub rule_levels: Arc<HashMap<String, Level>>,
}

impl CaseContext {
    /// The level of a rule a step relies on (MUST when the catalog does not know it).
    fn rule_level(&self, rule: &str) -> Level {
        self.rule_levels.get(rule).copied().unwrap_or(Level::Must)
    }
}

/// A case's result plus the always-on findings made while it ran.
#[derive(Debug)]
pub struct CaseOutcome {
    pub result: CaseResult,
    pub always_on: Vec<(Located, Vec<ReportedFrame>)>,
    pub counts: Counts,
    /// The failure of another rule that blocked the case (also in `result.findings`).
    pub prerequisite: Option<Finding>,
    /// What the always-on rules could not judge, and why.
    pub skipped: crate::checks::Skips,
}

/// Why a step stopped the case.
enum Stop {
    /// An expectation failed at the case's own level.
    Broken(Box<Finding>),
    /// A step that rests on another rule (its `relies_on`, or a setup step such as
    /// initialize or session creation) failed because of the server: that rule is broken
    /// and the case is blocked by it.
    Prerequisite(Box<Finding>),
    NotTestable(String),
    NotApplicable(String),
    Harness(String),
}

type StepResult = Result<(), Stop>;

const DEFAULT_CONN: &str = "c1";
const ROOT: &str = "ahp-root://";
const CONTEXT_FRAMES: usize = 8;

struct Runner<'a> {
    case: &'a Case,
    ctx: &'a CaseContext,
    conns: BTreeMap<String, Conn>,
    vars: Vars,
    /// name → (conn, request id)
    requests: HashMap<String, (String, u64)>,
    /// name → (conn, clientSeq)
    dispatches: HashMap<String, (String, i64)>,
    /// Responses already consumed by a step (initialize), by request name.
    received: HashMap<String, Value>,
    findings: Vec<Finding>,
    always_on: Vec<(Located, Vec<ReportedFrame>)>,
    at: String,
    /// Things checked outside the frame checker (checkpoints, catalog entries).
    counts: Counts,
    /// Comparisons checkpoints had to skip.
    skipped: crate::checks::Skips,
    started: Instant,
    next_client: usize,
    /// The `relies_on` rule of the step being run.
    relies_on: Option<String>,
}

pub async fn run_case(case: &Case, ctx: &CaseContext) -> CaseOutcome {
    let started = Instant::now();
    let mut runner = Runner {
        case,
        ctx,
        conns: BTreeMap::new(),
        vars: Vars::with_profile(&ctx.token, &ctx.profile),
        requests: HashMap::new(),
        dispatches: HashMap::new(),
        received: HashMap::new(),
        findings: Vec::new(),
        always_on: Vec::new(),
        at: case.info.source.clone(),
        counts: Counts::default(),
        skipped: crate::checks::Skips::default(),
        started,
        next_client: 0,
        relies_on: None,
    };
    let mut stop = None;
    for capability in &case.capabilities {
        if stop.is_some() {
            break;
        }
        match &ctx.agent_capabilities {
            Err(super::AgentsUnread::Server(why)) => {
                stop = Some(runner.prerequisite(
                    "INIT-001",
                    &None,
                    format!("an initialize result listing the agents (to read capabilities.{capability})"),
                    why.clone(),
                ));
            }
            Err(super::AgentsUnread::NoAgents(why)) => {
                stop = Some(runner.prerequisite(
                    "INIT-003",
                    &None,
                    format!(
                        "a root snapshot listing the agents (to read capabilities.{capability})"
                    ),
                    why.clone(),
                ));
            }
            Err(super::AgentsUnread::Harness(why)) => {
                stop = Some(Stop::Harness(format!(
                    "needs capabilities.{capability}, which could not be read: {why}"
                )));
            }
            Ok(caps) if caps.get(capability).is_none_or(Value::is_null) => {
                stop = Some(Stop::NotApplicable(format!(
                    "the agent does not advertise capabilities.{capability}"
                )));
            }
            Ok(_) => {}
        }
    }
    if let Some(probe) = &case.probe {
        stop = Some(Stop::Harness(format!("unknown probe {probe:?}")));
    }
    for need in &case.needs {
        if stop.is_none() && ctx.profile.behaviour(need).is_none() {
            stop = Some(Stop::NotTestable(format!(
                "the target profile has no trigger for behaviour {need:?}"
            )));
        }
    }
    if stop.is_none() {
        for located in &case.steps {
            runner.at = located.at.clone();
            runner.relies_on = located.step.relies_on().map(str::to_owned);
            let outcome = runner.step(&located.step).await;
            runner.process_all();
            if let Err(reason) = outcome {
                stop = Some(reason);
                break;
            }
        }
    }
    for conn in runner.conns.values_mut() {
        conn.link.close().await;
    }
    runner.process_all();
    runner.finish(stop)
}

impl Runner<'_> {
    fn level(&self) -> Level {
        self.case.info.level
    }

    fn conn_name(on: &Option<String>) -> String {
        on.clone().unwrap_or_else(|| DEFAULT_CONN.to_owned())
    }

    fn conn(&mut self, on: &Option<String>) -> Result<&mut Conn, Stop> {
        let name = Self::conn_name(on);
        self.conns.get_mut(&name).ok_or_else(|| {
            Stop::Harness(format!(
                "{}: no connection named {name} (connect or initialize it first)",
                self.at
            ))
        })
    }

    fn process_all(&mut self) {
        let mut found = Vec::new();
        for conn in self.conns.values_mut() {
            for located in conn.process(&self.ctx.schemas) {
                let context = context_frames(conn, located.frame + 1);
                found.push((located, context));
            }
        }
        // An origin on a host-only action type that echoes one of our own dispatches is the
        // dispatch's business (DISPATCH-006), not a host action carrying an origin.
        let ours = |origin: &Option<(String, i64)>| {
            origin.as_ref().is_some_and(|(client, seq)| {
                self.conns
                    .values()
                    .any(|c| &c.checks.client_id == client && c.checks.dispatched.contains_key(seq))
            })
        };
        found.retain(|(located, _)| {
            !(located.violation.rule == "ENV-005" && ours(&located.violation.origin))
        });
        self.always_on.extend(found);
    }

    /// A failed expectation: stops the case at its own level, or is recorded at a lower
    /// step level and the case goes on.
    fn broken(
        &mut self,
        level: &Option<String>,
        on: &Option<String>,
        expected: String,
        actual: String,
    ) -> StepResult {
        let step_level = match level.as_deref() {
            Some("SHOULD") => Level::Should,
            Some("MAY") => Level::May,
            _ => self.level(),
        };
        let name = Self::conn_name(on);
        let context = self
            .conns
            .get(&name)
            .map(|conn| context_frames(conn, conn.link.transcript().frames.len()))
            .unwrap_or_default();
        if let Some(rule) = self.relies_on.clone() {
            if rule != crate::suite::rule_of(&self.case.info.id) {
                return Err(self.prerequisite(&rule, on, expected, actual));
            }
        }
        let finding = Finding {
            rule: self.case.info.id.clone(),
            verdict: step_level.broken(),
            expected,
            actual,
            step: Some(self.at.clone()),
            context,
        };
        if level.is_some() && step_level > self.level() {
            self.findings.push(finding);
            Ok(())
        } else {
            Err(Stop::Broken(Box::new(finding)))
        }
    }

    /// A step that rests on `rule` (or on the step's own `relies_on`, which takes
    /// precedence) failed because of the server. When that rule is the case's own, this is
    /// the case's failure; otherwise the case is blocked by it.
    fn prerequisite(
        &self,
        rule: &str,
        on: &Option<String>,
        expected: String,
        actual: String,
    ) -> Stop {
        let rule = self.relies_on.as_deref().unwrap_or(rule);
        let context = self
            .conns
            .get(&Self::conn_name(on))
            .map(|conn| context_frames(conn, conn.link.transcript().frames.len()))
            .unwrap_or_default();
        let own = rule == crate::suite::rule_of(&self.case.info.id);
        let finding = Finding {
            rule: if own {
                self.case.info.id.clone()
            } else {
                rule.to_owned()
            },
            verdict: if own {
                self.level().broken()
            } else {
                self.ctx.rule_level(rule).broken()
            },
            expected,
            actual,
            step: Some(self.at.clone()),
            context,
        };
        if own {
            Stop::Broken(Box::new(finding))
        } else {
            Stop::Prerequisite(Box::new(finding))
        }
    }

    /// A request a step relies on got no response. Silence and a closed connection are the
    /// server's doing (the rule's failure); a message over the harness's size limit is the
    /// harness's (AHP sets no limit), and so is a connection or TLS failure.
    fn transport_failure(
        &self,
        error: TransportError,
        rule: &str,
        on: &Option<String>,
        expected: String,
    ) -> Stop {
        match error {
            TransportError::Timeout(_) | TransportError::Closed | TransportError::WebSocket(_) => {
                self.prerequisite(rule, on, expected, error.to_string())
            }
            TransportError::Oversized
            | TransportError::Connect { .. }
            | TransportError::Tls(_)
            | TransportError::CaCertificate { .. } => {
                Stop::Harness(format!("{}: {expected}: {error}", self.at))
            }
        }
    }

    async fn open(&mut self, name: &str) -> Result<(), Stop> {
        if self.conns.contains_key(name) {
            return Ok(());
        }
        let link = Connection::connect(&self.ctx.url, self.ctx.timeout)
            .await
            .map_err(|e| Stop::Harness(format!("{}: {e}", self.at)))?;
        self.next_client += 1;
        let client_id = format!("ahpspec-{}-{name}", self.ctx.token);
        self.vars.set(&format!("{name}.clientId"), json!(client_id));
        self.conns
            .insert(name.to_owned(), Conn::new(name, &client_id, link));
        Ok(())
    }

    fn subst(&self, value: &Value) -> Result<Value, Stop> {
        self.vars
            .substitute(value)
            .map_err(|e| Stop::Harness(format!("{}: {e}", self.at)))
    }

    fn subst_str(&self, text: &str) -> Result<String, Stop> {
        match self.subst(&Value::String(text.to_owned()))? {
            Value::String(s) => Ok(s),
            other => Ok(other.to_string()),
        }
    }

    async fn step(&mut self, step: &Step) -> StepResult {
        match step {
            Step::Connect(s) => self.open(&Self::conn_name(&s.on)).await,
            Step::Initialize(s) => self.initialize(s).await,
            Step::Reconnect(s) => self.reconnect(s).await,
            Step::Request(s) => {
                let params = match &s.params {
                    Some(p) => Some(self.subst(p)?),
                    None => None,
                };
                let conn = self.conn(&s.on)?;
                let id = conn.link.next_id();
                let mut message = json!({ "jsonrpc": "2.0", "id": id, "method": s.method });
                if let Some(params) = params {
                    message["params"] = params;
                }
                if s.intent.is_some() {
                    conn.checks
                        .intended_invalid
                        .push(conn.link.transcript().frames.len());
                }
                conn.link
                    .send_json(&message)
                    .await
                    .map_err(|e| Stop::Harness(e.to_string()))?;
                let name = s.name.clone().unwrap_or_else(|| s.method.clone());
                self.requests.insert(name, (Self::conn_name(&s.on), id));
                Ok(())
            }
            Step::Notify(s) => {
                let params = match &s.params {
                    Some(p) => self.subst(p)?,
                    None => Value::Null,
                };
                let conn = self.conn(&s.on)?;
                if s.intent.is_some() {
                    conn.checks
                        .intended_invalid
                        .push(conn.link.transcript().frames.len());
                }
                let mut message = json!({ "jsonrpc": "2.0", "method": s.method });
                if !params.is_null() {
                    message["params"] = params;
                }
                conn.link
                    .send_json(&message)
                    .await
                    .map_err(|e| Stop::Harness(e.to_string()))
            }
            Step::Raw(s) => {
                let text = self.subst_str(&s.text)?;
                let conn = self.conn(&s.on)?;
                conn.checks
                    .intended_invalid
                    .push(conn.link.transcript().frames.len());
                conn.link
                    .send_raw(&text)
                    .await
                    .map_err(|e| Stop::Harness(e.to_string()))
            }
            Step::Binary(s) => {
                let conn = self.conn(&s.on)?;
                conn.link
                    .send_binary(vec![0u8; s.bytes])
                    .await
                    .map_err(|e| Stop::Harness(e.to_string()))
            }
            Step::Dispatch(s) => {
                let channel = self.subst_str(&s.channel)?;
                let action = self.subst(&s.action)?;
                let name = s.name.clone();
                let seq = self
                    .dispatch(&s.on, &channel, action, s.intent.is_some())
                    .await?;
                if let Some(name) = name {
                    self.dispatches.insert(name, (Self::conn_name(&s.on), seq));
                }
                Ok(())
            }
            Step::Response(s) => self.expect_response(s).await,
            Step::Echo(s) => self.expect_echo(s).await,
            Step::Action(s) => {
                let channel = self.subst_str(&s.channel)?;
                let matching = self.subst_matches(&s.matching)?;
                let kind = s.action_type.clone();
                let within = s.within_ms.map_or(self.ctx.timeout, Duration::from_millis);
                let next = s.next;
                let found = self
                    .wait_message(&s.on, within, |m| {
                        m["method"] == "action"
                            && m["params"]["channel"] == channel.as_str()
                            && m["params"]["action"]["type"] == kind.as_str()
                            && (next || matches_all(&m["params"], &matching))
                    })
                    .await?;
                match found {
                    Some(message) if next && !matches_all(&message["params"], &matching) => self
                        .broken(
                            &s.level,
                            &s.on,
                            format!("the next {kind} on {channel}{}", describe(&matching)),
                            crate::checks::frame::clip(&message["params"].to_string()),
                        ),
                    found => self.store_or_missing(
                        found,
                        &s.name,
                        &s.level,
                        &s.on,
                        format!("a {kind} action on {channel}{}", describe(&matching)),
                        within,
                    ),
                }
            }
            Step::Notification(s) => {
                let matching = self.subst_matches(&s.matching)?;
                let method = s.method.clone();
                let within = s.within_ms.map_or(self.ctx.timeout, Duration::from_millis);
                let found = self
                    .wait_message(&s.on, within, |m| {
                        m["method"] == method.as_str()
                            && m.get("id").is_some() == s.request
                            && matches_all(&m["params"], &matching)
                    })
                    .await?;
                self.store_or_missing(
                    found,
                    &s.name,
                    &s.level,
                    &s.on,
                    format!("a {method} notification{}", describe(&matching)),
                    within,
                )
            }
            Step::Silence(s) => self.expect_silence(s).await,
            Step::Closed(s) => {
                let within = s.within_ms.map_or(self.ctx.timeout, Duration::from_millis);
                let conn = self.conn(&s.on)?;
                let closed = if conn.link.is_closed() {
                    true
                } else {
                    match conn
                        .link
                        .wait_for(within, |i| matches!(i, Incoming::Closed { .. }))
                        .await
                    {
                        Ok(_) | Err(TransportError::Closed) | Err(TransportError::Oversized) => {
                            true
                        }
                        Err(TransportError::Timeout(_)) => false,
                        Err(error) => return Err(Stop::Harness(error.to_string())),
                    }
                };
                if closed {
                    Ok(())
                } else {
                    self.broken(
                        &s.level,
                        &s.on,
                        "the server closes the connection".into(),
                        format!("still open after {} ms", within.as_millis()),
                    )
                }
            }
            Step::State(s) => self.expect_state(s).await,
            Step::Session(s) => self.make_session(s).await,
            Step::Turn(s) => self.start_turn(s).await,
            Step::Disconnect(s) => {
                let conn = self.conn(&s.on)?;
                conn.link.close().await;
                Ok(())
            }
            Step::Sleep(s) => {
                tokio::time::sleep(Duration::from_millis(s.ms)).await;
                Ok(())
            }
            Step::Checkpoint(s) => self.checkpoint(s).await,
            Step::Check(s) => self.expect_check(s),
            Step::AnyOf(s) => self.any_of(&s.alternatives).await,
            Step::Progress(s) => self.expect_progress(s).await,
            Step::NotApplicable(s) => Err(Stop::NotApplicable(self.subst_str(&s.why)?)),
        }
    }

    /// An awaited message arrived (its params are stored under `name`), or it did not.
    fn store_or_missing(
        &mut self,
        found: Option<Value>,
        name: &Option<String>,
        level: &Option<String>,
        on: &Option<String>,
        expected: String,
        within: Duration,
    ) -> StepResult {
        match found {
            Some(message) => {
                if let Some(name) = name {
                    self.vars.set(name, message["params"].clone());
                }
                Ok(())
            }
            None => self.broken(
                level,
                on,
                expected,
                format!("nothing within {} ms", within.as_millis()),
            ),
        }
    }

    fn subst_matches(&self, matching: &Matches) -> Result<Matches, Stop> {
        matching
            .iter()
            .map(|(k, v)| Ok((self.subst_str(k)?, self.subst(v)?)))
            .collect()
    }

    async fn dispatch(
        &mut self,
        on: &Option<String>,
        channel: &str,
        action: Value,
        invalid: bool,
    ) -> Result<i64, Stop> {
        let conn = self.conn(on)?;
        if invalid {
            conn.checks
                .intended_invalid
                .push(conn.link.transcript().frames.len());
        }
        conn.dispatch(channel, &action)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))
    }

    /// Waits for a message on a connection; `None` on timeout or close.
    async fn wait_message(
        &mut self,
        on: &Option<String>,
        within: Duration,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Result<Option<Value>, Stop> {
        let conn = self.conn(on)?;
        match conn
            .link
            .wait_for(
                within,
                |item| matches!(item, Incoming::Message(m) if pred(m)),
            )
            .await
        {
            Ok(Incoming::Message(message)) => Ok(Some(message)),
            Ok(_)
            | Err(TransportError::Timeout(_))
            | Err(TransportError::Closed)
            | Err(TransportError::Oversized) => Ok(None),
            Err(error) => Err(Stop::Harness(error.to_string())),
        }
    }

    async fn initialize(&mut self, s: &Initialize) -> StepResult {
        let name = Self::conn_name(&s.on);
        self.open(&name).await?;
        let versions = s
            .versions
            .clone()
            .unwrap_or_else(|| vec!["1.0.0".to_owned()]);
        let subscriptions = s
            .subscriptions
            .clone()
            .unwrap_or_else(|| vec![ROOT.to_owned()]);
        let subscriptions: Vec<String> = subscriptions
            .iter()
            .map(|u| self.subst_str(u))
            .collect::<Result<_, _>>()?;
        let client_id = match &s.client_id {
            Some(id) => {
                let id = self.subst_str(id)?;
                self.vars.set(&format!("{name}.clientId"), json!(id));
                id
            }
            None => self
                .conns
                .get(&name)
                .map(|c| c.checks.client_id.clone())
                .unwrap_or_default(),
        };
        let conn = self.conn(&s.on)?;
        conn.checks.client_id = client_id.clone();
        let params = json!({ "channel": ROOT, "protocolVersions": versions, "clientId": client_id,
                             "clientInfo": { "name": "ahpspec", "version": env!("CARGO_PKG_VERSION") },
                             "initialSubscriptions": subscriptions });
        let id = conn
            .link
            .send_request("initialize", params)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))?;
        let key = s.name.clone().unwrap_or_else(|| format!("{name}.init"));
        self.requests.insert(key.clone(), (name.clone(), id));
        if s.send_only {
            return Ok(());
        }
        let timeout = self.ctx.timeout;
        let response = self.conn(&s.on)?.link.response(id, timeout).await;
        match response {
            Ok(response) if response.get("result").is_some() => {
                self.vars.set(&key, response.clone());
                self.received.insert(key, response);
                Ok(())
            }
            Ok(response) if s.refused_means_not_applicable => Err(Stop::NotApplicable(format!(
                "the server does not accept {versions:?}: {}",
                crate::checks::frame::clip(&response["error"].to_string())
            ))),
            // A case that chooses the versions it offers is about version negotiation: a
            // refusal is its own failure. With the default offer, every case relies on
            // INIT-001 (an initialize result for 1.0.0).
            Ok(response) => Err(self.prerequisite(
                if s.versions.is_some() {
                    own_rule(self.case)
                } else {
                    "INIT-001"
                },
                &s.on,
                format!("an initialize result for {versions:?}"),
                crate::checks::frame::clip(&response.to_string()),
            )),
            Err(error) => Err(self.transport_failure(
                error,
                if s.versions.is_some() {
                    own_rule(self.case)
                } else {
                    "INIT-001"
                },
                &s.on,
                format!("a response to initialize offering {versions:?}"),
            )),
        }
    }

    async fn reconnect(&mut self, s: &Reconnect) -> StepResult {
        let name = Self::conn_name(&s.on);
        let mut old = self
            .conns
            .remove(&name)
            .ok_or_else(|| Stop::Harness(format!("{}: no connection {name} to resume", self.at)))?;
        old.link.close().await;
        for located in old.process(&self.ctx.schemas) {
            let context = context_frames(&old, located.frame + 1);
            self.always_on.push((located, context));
        }
        let last_seen = match &s.last_seen {
            Some(value) => self.subst(value)?,
            None => json!(old.checks.checker.highest_seq()),
        };
        let subscriptions: Vec<String> = s
            .subscriptions
            .iter()
            .map(|u| self.subst_str(u))
            .collect::<Result<_, _>>()?;
        let link = Connection::connect(&self.ctx.url, self.ctx.timeout)
            .await
            .map_err(|e| Stop::Harness(format!("{}: {e}", self.at)))?;
        let mut conn = Conn::resuming(&old, link);
        let params = json!({ "channel": ROOT, "clientId": old.checks.client_id, "lastSeenServerSeq": last_seen,
                             "subscriptions": subscriptions });
        let id = conn
            .link
            .send_request("reconnect", params)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))?;
        // Keep the old transcript in the case's report under its own name.
        self.conns
            .insert(format!("{name}~{}", self.conns.len()), old);
        self.conns.insert(name.clone(), conn);
        self.requests.insert(s.name.clone(), (name, id));
        Ok(())
    }

    async fn expect_response(&mut self, s: &ExpectResponse) -> StepResult {
        let on_name = Self::conn_name(&s.on);
        let (conn_name, id) = match &s.to {
            Some(to) => self
                .requests
                .get(to)
                .cloned()
                .ok_or_else(|| Stop::Harness(format!("{}: no request named {to}", self.at)))?,
            None => (on_name.clone(), 0),
        };
        let literal_id = s.id.clone().unwrap_or(Value::Null);
        let already = s.to.as_ref().and_then(|to| self.received.get(to).cloned());
        let on = Some(conn_name.clone());
        let timeout = self.ctx.timeout;
        let conn = self.conn(&on)?;
        let waited = if let Some(response) = already {
            Ok(response)
        } else if s.to.is_some() {
            conn.link.response(id, timeout).await
        } else {
            conn.link
                .wait_for(timeout, |item| matches!(item, Incoming::Message(m) if m.get("id") == Some(&literal_id) && m.get("method").is_none()))
                .await
                .and_then(|item| match item {
                    Incoming::Message(m) => Ok(m),
                    _ => Err(TransportError::Closed),
                })
        };
        let what = s.to.clone().unwrap_or_else(|| match &s.id {
            Some(id) => format!("the frame with id {id}"),
            None => "the unparseable frame".into(),
        });
        let response = match waited {
            Ok(response) => response,
            Err(TransportError::Closed) | Err(TransportError::Oversized) if s.or_close => {
                return Ok(())
            }
            Err(TransportError::Closed) => {
                return self.broken(
                    &s.level,
                    &on,
                    format!("a response to {what}"),
                    "the connection closed".into(),
                );
            }
            Err(TransportError::Timeout(t)) => {
                return self.broken(
                    &s.level,
                    &on,
                    format!("a response to {what}"),
                    format!("nothing within {} ms", t.as_millis()),
                );
            }
            Err(error) => return Err(Stop::Harness(error.to_string())),
        };
        if let Some(to) = &s.to {
            self.vars.set(to, response.clone());
        }
        if let Some(name) = &s.name {
            self.vars.set(name, response.clone());
        }
        let is_error = response.get("error").is_some();
        if let Some(ok) = s.ok {
            if ok && is_error {
                return self.broken(
                    &s.level,
                    &on,
                    format!("{what} succeeds"),
                    format!("error {}", response["error"]),
                );
            }
            if !ok && !is_error {
                return self.broken(
                    &s.level,
                    &on,
                    format!("{what} fails with an error"),
                    format!(
                        "success {}",
                        crate::checks::frame::clip(&response.to_string())
                    ),
                );
            }
        }
        if let Some(codes) = &s.codes {
            let code = response["error"]["code"].as_i64();
            if !code.is_some_and(|c| codes.contains(&c)) {
                return self.broken(
                    &s.level,
                    &on,
                    format!("error code in {codes:?}"),
                    crate::checks::frame::clip(&response.to_string()),
                );
            }
        }
        let no_len = BTreeMap::new();
        let no_bits = BTreeMap::new();
        for (pointer, member) in &s.sorted_desc {
            let keys: Vec<Value> = response
                .pointer(pointer)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            crate::checks::compare::instant(
                                item.pointer(member).unwrap_or(&Value::Null),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !keys.windows(2).all(|w| sort_key(&w[0]) >= sort_key(&w[1])) {
                return self.broken(
                    &s.level,
                    &on,
                    format!("{pointer} sorted by {member}, newest first"),
                    format!("order {}", Value::Array(keys)),
                );
            }
        }
        for (array, members) in &s.timestamps {
            if let Some((at, value)) = crate::schema::first_non_timestamp(&response, array, members)
            {
                let expected = format!("{at} an ISO 8601 timestamp with a UTC offset");
                return self.broken(&s.level, &on, expected, format!("{at} = {value}"));
            }
        }
        let checks = DocChecks {
            has: &s.has,
            lacks: &s.lacks,
            equals: &s.equals,
            one_of: &s.one_of,
            len: &no_len,
            bits_set: &no_bits,
            bits_clear: &no_bits,
            at_most: &s.at_most,
            contains: &s.contains,
            excludes: &s.excludes,
        };
        self.judge_document(&response, &checks, &s.level, &on)
    }

    fn judge_document(
        &mut self,
        document: &Value,
        checks: &DocChecks<'_>,
        level: &Option<String>,
        on: &Option<String>,
    ) -> StepResult {
        match self.evaluate(document, checks)? {
            Ok(()) => Ok(()),
            Err((expected, actual)) => self.broken(level, on, expected, actual),
        }
    }

    fn evaluate(
        &self,
        document: &Value,
        checks: &DocChecks<'_>,
    ) -> Result<Result<(), (String, String)>, Stop> {
        let DocChecks {
            has,
            lacks,
            equals,
            one_of,
            len,
            bits_set,
            bits_clear,
            at_most,
            contains,
            excludes,
        } = *checks;
        for (pointer, bits) in bits_set {
            let actual = document.pointer(pointer).and_then(Value::as_u64);
            if actual.is_none_or(|a| a & bits != *bits) {
                return Ok(Err((
                    format!("{pointer} has bits {bits} set"),
                    format!(
                        "{pointer} = {}",
                        document.pointer(pointer).unwrap_or(&Value::Null)
                    ),
                )));
            }
        }
        for (pointer, bits) in bits_clear {
            let actual = document.pointer(pointer).and_then(Value::as_u64);
            if actual.is_none_or(|a| a & bits != 0) {
                return Ok(Err((
                    format!("{pointer} has bits {bits} clear"),
                    format!(
                        "{pointer} = {}",
                        document.pointer(pointer).unwrap_or(&Value::Null)
                    ),
                )));
            }
        }
        for (pointer, bound) in self.subst_matches(at_most)? {
            let actual = document.pointer(&pointer).and_then(Value::as_f64);
            if !actual.is_some_and(|a| bound.as_f64().is_some_and(|b| a <= b)) {
                return Ok(Err((
                    format!("{pointer} <= {bound}"),
                    format!(
                        "{pointer} = {}",
                        document.pointer(&pointer).unwrap_or(&Value::Null)
                    ),
                )));
            }
        }
        for (pointer, element) in self.subst_matches(contains)? {
            let found = document
                .pointer(&pointer)
                .and_then(Value::as_array)
                .is_some_and(|items| items.iter().any(|i| partial_match(i, &element)));
            if !found {
                return Ok(Err((
                    format!("{pointer} contains {element}"),
                    crate::checks::frame::clip(
                        &document
                            .pointer(&pointer)
                            .unwrap_or(&Value::Null)
                            .to_string(),
                    ),
                )));
            }
        }
        for (pointer, element) in self.subst_matches(excludes)? {
            let found = document
                .pointer(&pointer)
                .and_then(Value::as_array)
                .is_some_and(|items| items.iter().any(|i| partial_match(i, &element)));
            if found {
                return Ok(Err((
                    format!("{pointer} has no element like {element}"),
                    crate::checks::frame::clip(
                        &document
                            .pointer(&pointer)
                            .unwrap_or(&Value::Null)
                            .to_string(),
                    ),
                )));
            }
        }
        for pointer in has {
            let pointer = self.subst_str(pointer)?;
            if document.pointer(&pointer).is_none_or(Value::is_null) {
                return Ok(Err((
                    format!("{pointer} present"),
                    format!(
                        "absent in {}",
                        crate::checks::frame::clip(&document.to_string())
                    ),
                )));
            }
        }
        for pointer in lacks {
            let pointer = self.subst_str(pointer)?;
            if let Some(value) = document.pointer(&pointer).filter(|v| !v.is_null()) {
                return Ok(Err((
                    format!("{pointer} absent"),
                    format!(
                        "{pointer} = {}",
                        crate::checks::frame::clip(&value.to_string())
                    ),
                )));
            }
        }
        for (pointer, expected) in self.subst_matches(equals)? {
            let actual = document.pointer(&pointer).cloned().unwrap_or(Value::Null);
            if !json_eq(&actual, &expected) {
                return Ok(Err((
                    format!("{pointer} = {expected}"),
                    format!(
                        "{pointer} = {}",
                        crate::checks::frame::clip(&actual.to_string())
                    ),
                )));
            }
        }
        for (pointer, allowed) in one_of {
            let actual = document.pointer(pointer).cloned().unwrap_or(Value::Null);
            let allowed: Vec<Value> = allowed
                .iter()
                .map(|v| self.subst(v))
                .collect::<Result<_, _>>()?;
            if !allowed.iter().any(|v| json_eq(&actual, v)) {
                return Ok(Err((
                    format!("{pointer} one of {}", Value::Array(allowed.clone())),
                    format!("{pointer} = {actual}"),
                )));
            }
        }
        for (pointer, expected) in len {
            let actual = document
                .pointer(pointer)
                .and_then(Value::as_array)
                .map(Vec::len);
            if actual != Some(*expected) {
                return Ok(Err((
                    format!("{pointer} has {expected} items"),
                    actual.map_or("no array".into(), |n| format!("{n} items")),
                )));
            }
        }
        Ok(Ok(()))
    }

    async fn expect_echo(&mut self, s: &ExpectEcho) -> StepResult {
        let (conn_name, seq) = self
            .dispatches
            .get(&s.of)
            .cloned()
            .ok_or_else(|| Stop::Harness(format!("{}: no dispatch named {}", self.at, s.of)))?;
        let on = Some(conn_name.clone());
        let conn = self.conn(&on)?;
        let client_id = conn.checks.client_id.clone();
        let dispatched = conn
            .checks
            .dispatched
            .get(&seq)
            .cloned()
            .unwrap_or(Value::Null);
        let timeout = if s.or_ignored && !s.accepted {
            Duration::from_millis(300).min(self.ctx.timeout)
        } else {
            self.ctx.timeout
        };
        let echo = self
            .wait_message(&on, timeout, |m| {
                // The echo of this dispatch carries its action (a wrong clientSeq is
                // DISPATCH-001's business, checked on every echo).
                m["method"] == "action"
                    && m["params"]["origin"]["clientId"] == client_id.as_str()
                    && json_eq(&m["params"]["action"], &dispatched)
            })
            .await?;
        let Some(echo) = echo else {
            if s.or_ignored && !s.accepted {
                return Ok(());
            }
            return self.broken(
                &s.level,
                &on,
                format!("an echo of {} (clientSeq {seq})", s.of),
                format!("nothing within {} ms", timeout.as_millis()),
            );
        };
        if let Some(name) = &s.name {
            self.vars.set(name, echo["params"].clone());
        }
        let reason = echo["params"]
            .get("rejectionReason")
            .filter(|r| !r.is_null());
        match (s.accepted, reason) {
            (true, Some(reason)) => self.broken(
                &s.level,
                &on,
                format!("{} accepted", s.of),
                format!("rejected: {reason}"),
            ),
            (false, None) => self.broken(
                &s.level,
                &on,
                format!("{} rejected (echo with rejectionReason)", s.of),
                "accepted (echo without rejectionReason)".into(),
            ),
            (false, Some(reason)) if reason.as_str().is_none_or(str::is_empty) => self.broken(
                &s.level,
                &on,
                "a non-empty rejectionReason".into(),
                format!("rejectionReason {reason}"),
            ),
            _ => Ok(()),
        }
    }

    async fn expect_silence(&mut self, s: &ExpectSilence) -> StepResult {
        let method = s.method.clone();
        let channel = match &s.channel {
            Some(c) => Some(self.subst_str(c)?),
            None => None,
        };
        let kind = s.action_type.clone();
        let matching = self.subst_matches(&s.matching)?;
        let conn = self.conn(&s.on)?;
        let responses = s.responses;
        let pred = |m: &Value| {
            (!responses || m.get("method").is_none())
                && method.as_ref().is_none_or(|x| m["method"] == x.as_str())
                && channel
                    .as_ref()
                    .is_none_or(|c| m["params"]["channel"] == c.as_str())
                && kind
                    .as_ref()
                    .is_none_or(|k| m["params"]["action"]["type"] == k.as_str())
                && matches_all(m, &matching)
        };
        let within = Duration::from_millis(s.for_ms);
        let waited = if s.fresh {
            conn.link
                .wait_for_new(within, |i| matches!(i, Incoming::Message(m) if pred(m)))
                .await
        } else {
            conn.link
                .wait_for(within, |i| matches!(i, Incoming::Message(m) if pred(m)))
                .await
        };
        match waited {
            Ok(Incoming::Message(message)) => self.broken(
                &s.level,
                &s.on,
                format!("nothing matching for {} ms", s.for_ms),
                crate::checks::frame::clip(&message.to_string()),
            ),
            _ => Ok(()),
        }
    }

    async fn subscribe_state(&mut self, on: &Option<String>, channel: &str) -> Result<Value, Stop> {
        let timeout = self.ctx.timeout;
        let conn = self.conn(on)?;
        let response = conn
            .link
            .request(
                "subscribe",
                json!({ "channel": channel, "delivery": { "maxLatencyMs": 0 } }),
                timeout,
            )
            .await;
        match response {
            Ok(response) if response.pointer("/result/snapshot/state").is_some() => Ok(response),
            Ok(response) => Err(self.prerequisite(
                "SUB-001",
                on,
                format!("a snapshot of {channel}"),
                crate::checks::frame::clip(&response.to_string()),
            )),
            Err(error) => Err(self.transport_failure(
                error,
                "SUB-001",
                on,
                format!("a response to subscribe {channel}"),
            )),
        }
    }

    async fn expect_state(&mut self, s: &ExpectState) -> StepResult {
        let channel = self.subst_str(&s.channel)?;
        let no_bounds = Matches::new();
        let checks = DocChecks {
            has: &s.has,
            lacks: &s.lacks,
            equals: &s.equals,
            one_of: &s.one_of,
            len: &s.len,
            bits_set: &s.bits_set,
            bits_clear: &s.bits_clear,
            at_most: &no_bounds,
            contains: &s.contains,
            excludes: &s.excludes,
        };
        let deadline = Instant::now() + Duration::from_millis(s.within_ms.unwrap_or(0));
        loop {
            let response = self.subscribe_state(&s.on, &channel).await?;
            let Some(state) = response.pointer("/result/snapshot/state").cloned() else {
                return self.broken(
                    &s.level,
                    &s.on,
                    format!("a snapshot of {channel}"),
                    crate::checks::frame::clip(&response.to_string()),
                );
            };
            if let Some(name) = &s.name {
                self.vars.set(name, state.clone());
            }
            match self.evaluate(&state, &checks)? {
                Ok(()) => return Ok(()),
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(25)).await
                }
                Err((expected, actual)) => return self.broken(&s.level, &s.on, expected, actual),
            }
        }
    }

    async fn make_session(&mut self, s: &MakeSession) -> StepResult {
        let uri = format!("ahp-session:/{}-{}", self.ctx.token, s.name);
        let mut params = json!({ "channel": uri });
        if let Some(provider) = s
            .provider
            .clone()
            .or_else(|| self.ctx.profile.provider.clone())
        {
            params["provider"] = json!(provider);
        }
        if let Some(dirs) = &s.working_directories {
            params["workingDirectories"] = self.subst(&json!(dirs))?;
        }
        let timeout = self.ctx.timeout;
        let conn = self.conn(&s.on)?;
        let created = conn.link.request("createSession", params, timeout).await;
        // After createSession the session exists (creating, ready or failed): LIFECYCLE-002.
        match created {
            Ok(created) if created.get("error").is_none() => {}
            Ok(created) => {
                return Err(self.prerequisite(
                    "LIFECYCLE-002",
                    &s.on,
                    format!("createSession {uri} succeeds"),
                    crate::checks::frame::clip(&created.to_string()),
                ))
            }
            Err(error) => {
                return Err(self.transport_failure(
                    error,
                    "LIFECYCLE-002",
                    &s.on,
                    format!("a response to createSession {uri}"),
                ))
            }
        }
        let snapshot = self.subscribe_state(&s.on, &uri).await?;
        let mut state = snapshot
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null);
        if s.wait_ready.unwrap_or(true) && state["lifecycle"] != "ready" {
            let uri_for = uri.clone();
            let found = self
                .wait_message(&s.on, timeout, |m| {
                    m["method"] == "action"
                        && m["params"]["channel"] == uri_for.as_str()
                        && (m["params"]["action"]["type"] == "session/ready"
                            || m["params"]["action"]["type"] == "session/creationFailed")
                })
                .await?;
            match found {
                Some(m) if m["params"]["action"]["type"] == "session/ready" => {}
                // A provider the target profile names (or the server's first agent) that
                // cannot create sessions leaves nothing to test; LIFECYCLE-003 is the rule a
                // session's creation ends by.
                Some(m) => {
                    return Err(self.prerequisite(
                        "LIFECYCLE-003",
                        &s.on,
                        format!("session/ready for {uri} (the target profile's provider)"),
                        format!(
                            "session/creationFailed {}",
                            crate::checks::frame::clip(&m["params"]["action"]["error"].to_string())
                        ),
                    ))
                }
                None => {
                    return Err(self.prerequisite(
                        "LIFECYCLE-003",
                        &s.on,
                        format!("session/ready or session/creationFailed for {uri}"),
                        format!("neither within {} ms", timeout.as_millis()),
                    ))
                }
            }
            state = self
                .subscribe_state(&s.on, &uri)
                .await?
                .pointer("/result/snapshot/state")
                .cloned()
                .unwrap_or(Value::Null);
        }
        let chat = state["defaultChat"]
            .as_str()
            .or_else(|| state["chats"][0]["resource"].as_str())
            .map(str::to_owned);
        self.vars.set(&s.name, json!(uri));
        if let Some(chat) = chat {
            self.subscribe_state(&s.on, &chat).await?;
            self.vars.set(&format!("{}.chat", s.name), json!(chat));
        }
        Ok(())
    }

    async fn start_turn(&mut self, s: &StartTurn) -> StepResult {
        let behaviour = s.behaviour.clone().unwrap_or_else(|| "echo".to_owned());
        let Some(text) = self.ctx.profile.behaviour(&behaviour).map(str::to_owned) else {
            return Err(Stop::NotTestable(format!(
                "the target profile has no trigger for behaviour {behaviour:?}"
            )));
        };
        let chat = self.subst_str(&s.chat)?;
        let turn_id = s.id.clone().unwrap_or_else(|| "t1".to_owned());
        let message = json!({ "text": text, "origin": { "kind": "user" } });
        let action = match &s.pending {
            Some(kind) => json!({ "type": "chat/pendingMessageSet", "kind": kind,
                                  "id": s.message_id.clone().unwrap_or_else(|| turn_id.clone()), "message": message }),
            None => {
                json!({ "type": "chat/turnStarted", "turnId": turn_id, "startedAt": super::vars::now_iso(), "message": message })
            }
        };
        let seq = self.dispatch(&s.on, &chat, action, false).await?;
        self.dispatches.insert(
            s.name.clone().unwrap_or_else(|| turn_id.clone()),
            (Self::conn_name(&s.on), seq),
        );
        if s.wait_end {
            let within = self.ctx.timeout * 4;
            let ended = self
                .wait_message(&s.on, within, |m| {
                    m["method"] == "action"
                        && m["params"]["channel"] == chat.as_str()
                        && m["params"]["action"]["turnId"] == turn_id.as_str()
                        && matches!(
                            m["params"]["action"]["type"].as_str(),
                            Some("chat/turnComplete" | "chat/turnCancelled" | "chat/error")
                        )
                })
                .await?;
            if ended.is_none() {
                // Every started turn ends (TURN-002); a case that waits for one relies on it.
                return Err(self.prerequisite(
                    "TURN-002",
                    &s.on,
                    format!("turn {turn_id} ends"),
                    format!("no end within {} ms", within.as_millis()),
                ));
            }
        }
        Ok(())
    }

    /// Compares every mirror with a fresh snapshot from a separate observer connection,
    /// and every session catalog with its chats.
    async fn checkpoint(&mut self, s: &Checkpoint) -> StepResult {
        // Let in-flight frames land first.
        for conn in self.conns.values_mut() {
            if !conn.link.is_closed() {
                conn.link.drain(Duration::from_millis(20)).await;
            }
        }
        self.process_all();
        let channels: Vec<String> = match &s.channels {
            Some(list) => list
                .iter()
                .map(|c| self.subst_str(c))
                .collect::<Result<_, _>>()?,
            None => super::checkpoint::mirrored_channels(self.conns.values()),
        };
        let mut conns: Vec<&mut Conn> = self.conns.values_mut().collect();
        let client_id = format!("ahpspec-{}-observer", self.ctx.token);
        let checked = super::checkpoint::compare_once(
            &mut conns,
            channels,
            &self.ctx.url,
            self.ctx.timeout,
            &client_id,
        )
        .await
        .map_err(Stop::Harness)?;
        *self.counts.entry("INV-FOLD-1").or_insert(0) += checked.folds;
        self.skipped.merge(&checked.skipped);
        *self.counts.entry("CHAT-003").or_insert(0) += checked.catalog_entries;
        for (rule, n) in checked.invariant_counts {
            *self.counts.entry(rule).or_insert(0) += n;
        }
        for (name, violation) in checked.violations {
            let context = self
                .conns
                .get(&name)
                .map(|c| context_frames(c, c.link.transcript().frames.len()))
                .unwrap_or_default();
            self.always_on.push((
                Located {
                    violation,
                    conn: name,
                    frame: 0,
                },
                context,
            ));
        }
        Ok(())
    }

    fn finish(self, stop: Option<Stop>) -> CaseOutcome {
        let mut counts = self.counts.clone();
        let mut skipped = self.skipped.clone();
        for conn in self.conns.values() {
            skipped.merge(conn.checks.checker.skips());
            for (rule, n) in conn.checks.checker.counts() {
                *counts.entry(rule).or_insert(0) += n;
            }
            *counts.entry("TURN-003").or_insert(0) += conn.checks.mirror.deltas_checked;
            *counts.entry("TURN-005").or_insert(0) += conn.checks.mirror.parts_checked;
            *counts.entry("TURN-004").or_insert(0) += conn.checks.mirror.turn_ids_checked;
            *counts.entry("PENDING-003").or_insert(0) += conn.checks.mirror.queue_consumptions;
            for (rule, n) in &conn.checks.invariant_counts {
                *counts.entry(rule).or_insert(0) += n;
            }
        }
        let harness: Vec<String> = self
            .conns
            .values()
            .flat_map(|c| c.checks.harness_errors.clone())
            .collect();
        let mut findings = self.findings;
        let mut blocked_by = None;
        let mut prerequisite = None;
        let (mut verdict, mut summary) = match stop {
            None => (
                Verdict::Pass,
                format!("{} steps passed", self.case.steps.len()),
            ),
            Some(Stop::Broken(finding)) => {
                let finding = *finding;
                let summary = format!("expected {}; got {}", finding.expected, finding.actual);
                let verdict = finding.verdict;
                findings.push(finding);
                (verdict, summary)
            }
            Some(Stop::Prerequisite(finding)) => {
                let finding = *finding;
                let summary = format!(
                    "Blocked by {}: expected {}; got {}",
                    finding.rule, finding.expected, finding.actual
                );
                blocked_by = Some(finding.rule.clone());
                prerequisite = Some(finding.clone());
                findings.push(finding);
                (Verdict::Blocked, summary)
            }
            Some(Stop::NotTestable(why)) => (Verdict::NotTestable, format!("Not testable: {why}")),
            Some(Stop::NotApplicable(why)) => (Verdict::NotApplicable, why),
            Some(Stop::Harness(why)) => (Verdict::HarnessError, why),
        };
        // A blocked case's own findings are recorded, but its verdict stays "blocked": the
        // prerequisite's failure is reported on that rule's row.
        for finding in findings
            .iter()
            .filter(|f| blocked_by.as_ref() != Some(&f.rule))
        {
            verdict = verdict.worst(finding.verdict);
        }
        if verdict == Verdict::Pass && !findings.is_empty() {
            summary = format!("{} (with notes)", summary);
        }
        if let Some(first) = harness.first() {
            if matches!(verdict, Verdict::Pass) {
                verdict = Verdict::HarnessError;
                summary = first.clone();
            }
        }
        let mut transcript: Vec<ReportedFrame> = self
            .conns
            .values()
            .flat_map(|conn| conn.reported_all())
            .collect();
        transcript.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        let elapsed = self.started.elapsed();
        let result = CaseResult {
            info: self.case.info.clone(),
            verdict,
            summary,
            findings,
            blocked_by: if verdict == Verdict::Blocked {
                blocked_by
            } else {
                None
            },
            transcript,
            duration_ms: elapsed.as_secs_f64() * 1000.0,
            rerun: self.ctx.rerun.clone(),
        };
        CaseOutcome {
            result,
            always_on: self.always_on,
            counts,
            prerequisite,
            skipped,
        }
    }
}

/// The rule a case proves (its ID without the `/slug`).
fn own_rule(case: &Case) -> &str {
    crate::suite::rule_of(&case.info.id)
}

/// Orders normalized values: instants (`@nanos`) and numbers numerically, else as text.
fn sort_key(value: &Value) -> (i128, String) {
    match value {
        Value::String(text) => match text.strip_prefix('@').and_then(|n| n.parse::<i128>().ok()) {
            Some(nanos) => (nanos, String::new()),
            None => (i128::MIN, text.clone()),
        },
        Value::Number(n) => (n.as_f64().map_or(i128::MIN, |f| f as i128), String::new()),
        _ => (i128::MIN, String::new()),
    }
}

/// The document checks shared by `response` and `state` steps.
#[derive(Clone, Copy)]
struct DocChecks<'a> {
    has: &'a [String],
    lacks: &'a [String],
    equals: &'a Matches,
    one_of: &'a BTreeMap<String, Vec<Value>>,
    len: &'a BTreeMap<String, usize>,
    bits_set: &'a BTreeMap<String, u64>,
    bits_clear: &'a BTreeMap<String, u64>,
    at_most: &'a Matches,
    contains: &'a Matches,
    excludes: &'a Matches,
}

/// Whether `item` has every member of `partial` (recursively for objects).
fn partial_match(item: &Value, partial: &Value) -> bool {
    match (item, partial) {
        (Value::Object(a), Value::Object(b)) => b
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|x| partial_match(x, v))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| partial_match(x, y))
        }
        _ => json_eq(item, partial),
    }
}

fn describe(matching: &Matches) -> String {
    if matching.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = matching.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        format!(" with {}", parts.join(", "))
    }
}

/// Whether every pointer of `matching` holds its value in `document`.
pub fn matches_all(document: &Value, matching: &Matches) -> bool {
    matching.iter().all(|(pointer, expected)| {
        json_eq(document.pointer(pointer).unwrap_or(&Value::Null), expected)
    })
}

/// The frames just before transcript position `end` on a connection.
fn context_frames(conn: &Conn, end: usize) -> Vec<ReportedFrame> {
    let end = end.min(conn.link.transcript().frames.len());
    conn.reported(end.saturating_sub(CONTEXT_FRAMES), end)
}
