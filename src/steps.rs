//! The step interpreter: runs a case's typed steps on its connections, judges each
//! expectation, and collects what the always-on checks found along the way. One
//! interpreter below the runners: the AHP runner runs suite cases with it, the fuzzer its
//! protocol probes, and a regression case replays through it like any suite case.

mod alternatives;
mod document;
mod expect;
mod outcome;
mod progress;
mod send;
mod setup;
pub(crate) mod vars;

pub use expect::ping_if;

use document::{describe, matches_all};
use outcome::own_rule;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::checks::frame::{Counts, Schemas};
use crate::checks::words::InvalidDispatches;
use crate::checks::Rule;
use crate::client::Profile;
use crate::client::{json_equal as json_eq, Conn, Located, ROOT};
use crate::suite::*;
use crate::transport::{Incoming, TransportError};
use crate::verdict::{CaseResult, Finding, Level, ReportedFrame, Verdict};
use vars::Vars;

/// Why the run could not read the agents' capabilities from the server's root state.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentsUnread {
    /// The server failed the run's `initialize` (INIT-001) with a wrong answer.
    Server(String),
    /// The server failed the run's `initialize` (INIT-001) by not answering at all: it was
    /// silent until the timeout, sent only what is no answer, or closed the connection.
    Unanswered(String),
    /// The root snapshot of the run's `initialize` has no `agents` array (INIT-003): what
    /// the agents advertise is unknown, not absent.
    NoAgents(String),
    /// The harness could not ask (connection, size limit, interrupted).
    Harness(String),
}

/// What the run read of the agents from the server's root state.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentsRead {
    /// `capabilities` of the agent the profile uses (`{}` when it lists none).
    pub capabilities: Value,
    /// Whether some agent advertises a protected resource (issue 25, authentication): the
    /// auth cases are not applicable to a server whose agents protect nothing.
    pub protects_resources: bool,
}

/// What the root state in an `initialize` answer `init` advertises of the agents: the
/// capabilities of the agent serving `provider` (the first agent when none does or none is
/// named), or why that cannot be told (no agents array: INIT-003).
pub fn agents_in(init: &Value, provider: Option<&str>) -> Result<AgentsRead, AgentsUnread> {
    let Some(agents) = init
        .pointer("/result/snapshots/0/state/agents")
        .and_then(Value::as_array)
        .cloned()
    else {
        return Err(AgentsUnread::NoAgents(format!(
            "initialize answered a root snapshot without an agents array: {}",
            crate::checks::frame::clip(&init.to_string())
        )));
    };
    let agent = agents
        .iter()
        .find(|a| provider.is_some_and(|p| a["provider"] == p))
        .or_else(|| agents.first());
    let protects_resources = agents.iter().any(|a| {
        a["protectedResources"]
            .as_array()
            .is_some_and(|resources| !resources.is_empty())
    });
    Ok(AgentsRead {
        capabilities: agent
            .and_then(|a| a.get("capabilities"))
            .cloned()
            .unwrap_or_else(|| json!({})),
        protects_resources,
    })
}

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
    pub agent_capabilities: Result<AgentsRead, AgentsUnread>,
    /// Levels of the rules steps may rely on (every case's rule and always-on check).
    pub rule_levels: Arc<HashMap<String, Level>>,
    /// The protocol version connections offer unless a step names its own (`--protocol-version`).
    pub offer: String,
    /// Rules whose failure can tell the caller nothing new (the fuzzer's rules known to
    /// fail, or not judged): a wait that can only end in such a failure ends at the answer
    /// to a ping sent when it starts, instead of at the timeout. Empty for suite runs.
    pub settled: BTreeSet<String>,
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
    /// Sessions the host made for the case outside its namespace (a chat moved to a new
    /// session), for a run that disposes what it made.
    pub made_sessions: Vec<String>,
}

/// Why a step stopped the case.
enum Stop {
    /// An expectation failed at the case's own level.
    Broken(Box<Finding>),
    /// A step that rests on another rule (its `relies_on`, or a setup step such as
    /// initialize or session creation) failed because of the server: that rule is broken
    /// and the case is blocked by it.
    Prerequisite(Box<Finding>),
    /// Such a step failed after every step that asserts the case's own rule had passed (a
    /// clean-up such as a truncation ending a turn): the rule it rests on is broken, the
    /// case's own verdict stands.
    AfterClaims(Box<Finding>),
    NotTestable(String),
    NotApplicable(String),
    Harness(String),
}

type StepResult = Result<(), Stop>;

const DEFAULT_CONN: &str = "c1";
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
    /// What the steps so far named (request methods, dispatched action types), for the
    /// rules a step's parts exercise (`suite::charge`).
    names: Names,
    /// Connections lent by the caller, each with the length of its transcript when lent:
    /// they stay open, and the case's transcript holds only their frames from then on.
    lent: BTreeMap<String, usize>,
    /// The dispatches the case's connections sent invalid (the lender's registry, when
    /// connections are lent: the case is one of its runner's operations).
    invalid: InvalidDispatches,
}

/// Runs `case` on connections of its own, closed at its end.
pub async fn run_case(case: &Case, ctx: &CaseContext) -> CaseOutcome {
    run_lent(case, ctx, BTreeMap::new(), Vec::new()).await.0
}

/// Runs `case` on the connections `lent` (by name; steps open any other they name, and
/// close those at the end) with the variables `preset` set beforehand: for a caller whose
/// connections live on after the steps (the fuzzer's clients, running a probe). Returns
/// the outcome and the lent connections, open unless a step closed them.
pub async fn run_lent(
    case: &Case,
    ctx: &CaseContext,
    lent: BTreeMap<String, Conn>,
    preset: Vec<(String, Value)>,
) -> (CaseOutcome, BTreeMap<String, Conn>) {
    let started = Instant::now();
    let mut vars = Vars::with_profile(&ctx.token, &ctx.profile);
    for (name, value) in preset {
        vars.set(&name, value);
    }
    let invalid = lent
        .values()
        .next()
        .map(|conn| conn.invalid_dispatches().clone())
        .unwrap_or_default();
    let mut runner = Runner {
        case,
        ctx,
        invalid,
        lent: lent
            .iter()
            .map(|(name, conn)| (name.clone(), conn.frame_count()))
            .collect(),
        conns: lent,
        vars,
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
        names: Names::default(),
    };
    let mut stop = runner.not_runnable();
    let last_claim = case.last_claim();
    if stop.is_none() {
        for (at, located) in case.steps.iter().enumerate() {
            runner.at = located.at.clone();
            runner.relies_on = located.step.relies_on().map(str::to_owned);
            runner.names.note(&located.step);
            let outcome = runner.step(&located.step).await;
            runner.process_all();
            if let Err(reason) = outcome {
                stop = Some(match reason {
                    Stop::Prerequisite(finding) if last_claim.is_some_and(|last| at > last) => {
                        Stop::AfterClaims(finding)
                    }
                    reason => reason,
                });
                break;
            }
        }
    }
    for (name, conn) in runner.conns.iter_mut() {
        if !runner.lent.contains_key(name) {
            conn.close().await;
        }
    }
    runner.process_all();
    runner.finish(stop)
}

impl Runner<'_> {
    /// Why the case cannot run here, checked before its first step: a capability the agent
    /// does not advertise (or that could not be read), a rule younger than the offered
    /// version, an unknown probe, a behaviour the target profile cannot trigger.
    fn not_runnable(&mut self) -> Option<Stop> {
        let mut stop = None;
        for capability in &self.case.capabilities {
            if stop.is_some() {
                break;
            }
            match &self.ctx.agent_capabilities {
                Err(AgentsUnread::Server(why) | AgentsUnread::Unanswered(why)) => {
                    stop = Some(self.prerequisite(
                        Rule::Init001,
                        &None,
                        format!("an initialize result listing the agents (to read capabilities.{capability})"),
                        why.clone(),
                    ));
                }
                Err(AgentsUnread::NoAgents(why)) => {
                    stop = Some(self.prerequisite(
                        Rule::Init003,
                        &None,
                        format!(
                            "a root snapshot listing the agents (to read capabilities.{capability})"
                        ),
                        why.clone(),
                    ));
                }
                Err(AgentsUnread::Harness(why)) => {
                    stop = Some(Stop::Harness(format!(
                        "needs capabilities.{capability}, which could not be read: {why}"
                    )));
                }
                Ok(read) => {
                    let caps = &read.capabilities;
                    // `a.b` reads a member of a capability; `!a.b` gates a rule about agents
                    // that do not advertise it.
                    let (without, path) = match capability.strip_prefix('!') {
                        Some(path) => (true, path),
                        None => (false, capability.as_str()),
                    };
                    let pointer = format!("/{}", path.replace('.', "/"));
                    let advertised = caps
                        .pointer(&pointer)
                        .is_some_and(|v| !v.is_null() && *v != Value::Bool(false));
                    if advertised == without {
                        stop = Some(Stop::NotApplicable(if without {
                            format!("the agent advertises capabilities.{path}: the rule is about agents without it")
                        } else {
                            format!("the agent does not advertise capabilities.{path}")
                        }));
                    }
                }
            }
        }
        // A rule younger than the version this run offers does not apply to it.
        let parse = crate::checks::frame::parse_version;
        if let (Some(since), Some(offer)) = (
            self.case.since.as_deref().and_then(parse),
            parse(&self.ctx.offer),
        ) {
            if stop.is_none() && offer < since {
                stop = Some(Stop::NotApplicable(format!(
                    "the rule exists since protocol {}; this run offers {}",
                    self.case.since.as_deref().unwrap_or_default(),
                    self.ctx.offer
                )));
            }
        }
        if let Some(probe) = &self.case.probe {
            stop = Some(Stop::Harness(format!("unknown probe {probe:?}")));
        }
        for need in &self.case.needs {
            // Issue 25, authentication: a server whose agents protect nothing is not
            // applicable, whatever the profile says.
            if stop.is_none() && need == crate::client::profile::AUTH {
                if let Ok(read) = &self.ctx.agent_capabilities {
                    if !read.protects_resources {
                        stop = Some(Stop::NotApplicable(
                            "the server's agents advertise no protected resources".to_owned(),
                        ));
                    }
                }
            }
            if stop.is_none() && !self.ctx.profile.provides(need) {
                stop = Some(Stop::NotTestable(
                    if need == crate::client::profile::DIRECTORIES {
                        "the target profile names no two working directories the server accepts (working_directories)".to_owned()
                    } else if need == crate::client::profile::SESSION_CONFIG {
                        "the target profile names no dynamic session-configuration property (session_config)".to_owned()
                    } else if need == crate::client::profile::COMPLETIONS {
                        "the target profile names no text to complete (completions)".to_owned()
                    } else if need == crate::client::profile::ROOT_CONFIG {
                        "the target profile names no root-configuration property to set (root_config)".to_owned()
                    } else if need == crate::client::profile::AUTH {
                        "the target profile names no agent, protected resource and token the server accepts (auth)".to_owned()
                    } else if need == crate::client::profile::WORKSPACE {
                        "the target profile names no directory the server serves for writing (workspace)".to_owned()
                    } else if need == crate::client::profile::EVENT_TRIGGER {
                        "the target profile names no event trigger the harness can cause by writing a file (event_trigger)".to_owned()
                    } else if need == crate::client::profile::SCHEDULE_WAITS {
                        "the target profile does not allow a wait of up to a minute for a schedule trigger to fire (schedule_waits)".to_owned()
                    } else if need.contains('.') {
                        format!("the target profile does not promise {need:?}")
                    } else {
                        format!("the target profile has no trigger for behaviour {need:?}")
                    },
                ));
            }
        }
        stop
    }

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
            conn.foresee(&self.ctx.schemas);
        }
        for conn in self.conns.values_mut() {
            for located in conn.process(&self.ctx.schemas) {
                let context = context_frames(conn, located.frame + 1);
                found.push((located, context));
            }
        }
        let ours =
            |client: &str, seq: i64| self.conns.values().any(|c| c.dispatched_here(client, seq));
        found.retain(|(located, _)| !located.violation.is_own_echo(ours));
        self.always_on.extend(found);
    }

    fn subst(&self, value: &Value) -> Result<Value, Stop> {
        self.vars.substitute(value).map_err(|e| match e {
            vars::UnknownVar::Name(_) => Stop::Harness(format!("{}: {e}", self.at)),
            vars::UnknownVar::Member { .. } => Stop::NotTestable(format!("{}: {e}", self.at)),
        })
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
            Step::Request(s) => self.send_request(s).await,
            Step::Notify(s) => self.send_notify(s).await,
            Step::Raw(s) => self.send_raw(s).await,
            Step::Binary(s) => self.send_binary(s).await,
            Step::Dispatch(s) => self.send_dispatch(s).await,
            Step::Response(s) => self.expect_response(s).await,
            Step::Echo(s) => self.expect_echo(s).await,
            Step::Action(s) => self.expect_action(s).await,
            Step::Notification(s) => self.expect_notification(s).await,
            Step::Silence(s) => self.expect_silence(s).await,
            Step::Closed(s) => self.expect_closed(s).await,
            Step::State(s) => self.expect_state(s).await,
            Step::Session(s) => self.make_session(s).await,
            Step::Turn(s) => self.start_turn(s).await,
            Step::Disconnect(s) => {
                let conn = self.conn(&s.on)?;
                conn.close().await;
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

    fn subst_matches(&self, matching: &Matches) -> Result<Matches, Stop> {
        matching
            .iter()
            .map(|(k, v)| Ok((self.subst_str(k)?, self.subst(v)?)))
            .collect()
    }
}

/// The frames just before transcript position `end` on a connection.
fn context_frames(conn: &Conn, end: usize) -> Vec<ReportedFrame> {
    let end = end.min(conn.frame_count());
    conn.reported(end.saturating_sub(CONTEXT_FRAMES), end)
}
