//! Runs one operation sequence against a server: several clients on one session and its
//! default chat; after every step the always-on checks of the runner, the expected
//! acceptance or rejection, and at checkpoints every mirror against fresh snapshots.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::model::{rest, Planned, Rest};
use super::ops::{Behaviour, Op};
use crate::checks::delivery;
use crate::checks::frame::{FrameChecker, Schemas};
use crate::checks::words::InvalidDispatches;
use crate::checks::Rule;
use crate::client::checkpoint;
use crate::client::profile::Profile;
use crate::client::{Conn, HandshakeError, Located, DEFAULT_OFFER};
pub use crate::server::Target;
use crate::transport::Connection;
use crate::verdict::ReportedFrame;

mod cases;
mod dispatch;
mod probes;
mod rejected;
mod truncated;
// Issue 24, reach: routines of several requests and dispatches.
mod routines;
mod setup;

pub use probes::Probed;

/// How a sequence runs.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    pub timeout: Duration,
    /// Quiet time after which a chat that is not at rest counts as caught up anyway (a
    /// server whose agent behaves differently from the model's expectation).
    pub settle: Duration,
    pub clients: usize,
    pub profile: Profile,
    pub schemas: Schemas,
    /// Operations between automatic checkpoints.
    pub checkpoint_every: usize,
    /// Rules not judged (`--exclude`).
    pub exclude: super::Excluded,
    /// Rules the campaign has seen failing (see [`super::Known`]).
    pub known: super::Known,
    /// The catalog whose cases sequences may run as operations (`case/<ID>`, on
    /// connections of their own amid the sequence's traffic), and a replay needs to run them
    /// again; `None`: no case operations.
    pub catalog: Option<std::sync::Arc<crate::suite::Catalog>>,
}

impl ExecConfig {
    /// The IDs of the catalog cases sequences may run as operations: every case of the
    /// catalog whose rule is judged and whose needs the profile provides (one it does not
    /// would only ever be not testable). A workspace is also provided when the target's
    /// servers bring their own (`target_workspaces`: the built-in host's, which a case gets
    /// as the routines do).
    pub fn case_ids(&self, target_workspaces: bool) -> Vec<String> {
        let provides = |need: &String| {
            (target_workspaces && need == crate::client::profile::WORKSPACE)
                || self.profile.provides(need)
        };
        self.catalog.as_deref().map_or_else(Vec::new, |catalog| {
            catalog
                .cases
                .iter()
                .filter(|case| self.exclude.judges(crate::verdict::rule_of(&case.info.id)))
                .filter(|case| case.needs.iter().all(provides))
                .map(|case| case.info.id.clone())
                .collect()
        })
    }

    /// Whether a failure of `rule` can tell the campaign nothing new (the rule is known to
    /// fail, or not judged): a wait that can only end in one ends at the host's next answer.
    pub fn settled(&self, rule: Rule) -> bool {
        !self.exclude.judges(rule) || self.known.contains(rule)
    }
}

/// A rule the server broke, at the operation that revealed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub rule: Rule,
    pub expected: String,
    pub actual: String,
    /// Index of the operation after which it was found (`None`: during set-up or at the end).
    pub op_index: Option<usize>,
}

impl Failure {
    /// A pure check's `violation`, found by the judge of operation `index`.
    pub(crate) fn after(index: usize, violation: crate::checks::Violation) -> Failure {
        Failure {
            rule: violation.rule,
            expected: violation.expected,
            actual: violation.actual,
            op_index: Some(index),
        }
    }
}

/// One dispatch that was made, for traces and regression cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Performed {
    pub op_index: usize,
    pub client: usize,
    pub planned: Planned,
}

/// The outcome of one execution.
#[derive(Debug, Clone, Default)]
pub struct Execution {
    pub failure: Option<Failure>,
    /// Whether the failure came in the set-up, before any operation (it does not depend on
    /// the sequence).
    pub at_setup: bool,
    /// Whether the campaign's deadline cut the sequence off (no verdict).
    pub cut_off: bool,
    /// Client operations that reached the server: dispatches (operations that did not
    /// apply in the observed state are not counted) and protocol probes.
    pub operations: usize,
    pub performed: Vec<Performed>,
    /// The steps each protocol probe ran, for `--to-case`.
    pub probed: Vec<Probed>,
    pub frames: Vec<ReportedFrame>,
    /// The states the operations met and the host's responses ([`super::guidance`]).
    pub seen: Vec<super::guidance::Seen>,
    /// Case operations that ran nothing, and why (a trace naming a case the catalog lacks).
    pub skipped_cases: Vec<String>,
}

/// The harness itself could not run the sequence.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start the built-in host: {0}")]
    Host(std::io::Error),
    /// The sequence's first connection was refused (or timed out): no server to fuzz.
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Setup(String),
}

/// Why an execution ended before its sequence did, inside the executor.
#[derive(Debug)]
pub(crate) enum Halt {
    /// The host broke a rule where the sequence could not go on past it (a refused
    /// `initialize`, a server gone): the sequence's failure.
    Finding(Failure),
    Error(ExecError),
}

impl From<ExecError> for Halt {
    fn from(error: ExecError) -> Halt {
        Halt::Error(error)
    }
}

impl Halt {
    /// A connection's `initialize` without a result: INIT-001's failure (at `op_index`).
    pub(crate) fn initialize(error: HandshakeError, op_index: Option<usize>) -> Halt {
        let actual = match error {
            HandshakeError::Refused(answer) => crate::checks::frame::clip(&answer.to_string()),
            HandshakeError::Transport(error) => error.to_string(),
        };
        Halt::Finding(Failure {
            rule: Rule::Init001,
            expected: "a result to initialize (protocolVersion, serverSeq, snapshots)".into(),
            actual,
            op_index,
        })
    }

    /// Puts what ended the execution into it: a finding becomes its failure (at set-up
    /// unless an operation had started); an error of the harness is returned.
    pub(crate) fn settle(
        outcome: Result<(), Halt>,
        execution: &mut Execution,
        exclude: &super::Excluded,
    ) -> Result<(), ExecError> {
        match outcome {
            Ok(()) => Ok(()),
            Err(Halt::Finding(failure)) => {
                execution.at_setup = failure.op_index.is_none();
                execution.failure = exclude.judged(Some(failure));
                Ok(())
            }
            Err(Halt::Error(error)) => Err(error),
        }
    }
}

/// What a failed connect is: for the sequence's first connection, no server to fuzz; for a
/// later one, a server that stopped taking connections during the set-up (FUZZ-001).
pub(crate) fn refused(first: bool, error: crate::transport::TransportError) -> Halt {
    if first {
        return ExecError::Unreachable(error.to_string()).into();
    }
    Halt::Finding(Failure {
        rule: Rule::Fuzz001,
        expected: "the server keeps accepting connections during the set-up".into(),
        actual: format!("a new connection: {error}"),
        op_index: None,
    })
}

/// A transport error in a set-up `step`: a connection the host ended is what was seen
/// (FUZZ-001, at set-up); anything else leaves the harness unable to go on.
pub(crate) fn in_setup(step: &str, error: crate::transport::TransportError) -> Halt {
    match error {
        crate::transport::TransportError::Closed => Halt::Finding(Failure {
            rule: Rule::Fuzz001,
            expected: format!("the host keeps serving the connection through {step}"),
            actual: "the connection ended".into(),
            op_index: None,
        }),
        other => ExecError::Setup(format!("{step}: {other}")).into(),
    }
}

struct Run<'a> {
    cfg: &'a ExecConfig,
    url: String,
    token: String,
    conns: Vec<Conn>,
    session: String,
    chat: String,
    next_turn: usize,
    /// How many connections routines opened for their own requests: each gets a clientId of
    /// its own, so no connection sees another's dispatch echoed under its clientId.
    side_links: usize,
    /// The last timestamp the fuzzer dispatched.
    clock: Option<jiff::Timestamp>,
    /// The behaviour each turn the fuzzer started was started with.
    behaviours: HashMap<String, Behaviour>,
    /// The connection that takes checkpoint snapshots (opened at the first checkpoint).
    observer: Option<Connection>,
    /// Sessions the host made for the run's cases and probes on connections of their own
    /// (a chat moved to a new session), disposed at its end on a server that outlives it.
    made: Vec<String>,
    /// Violations found while catching up, reported by the next [`Run::checks`].
    pending: Vec<Located>,
    /// The first client's initialize answer (`${c1.init}` to a probe's steps).
    first_init: Option<Value>,
    /// The directory the `resource*` commands serve: the profile's, or the built-in host's.
    workspace: Option<String>,
    /// The catalog's rule levels, for its cases run as operations (made at the first).
    case_levels: Option<std::sync::Arc<HashMap<String, crate::verdict::Level>>>,
    /// The dispatches the sequence's connections (routines' own among them) sent invalid.
    invalid: InvalidDispatches,
    exec: Execution,
}

/// Runs an execution's body until `deadline`: its outcome, and whether the deadline cut it
/// off first (then it ended without a verdict).
pub(crate) async fn until(
    deadline: Option<Instant>,
    body: impl std::future::Future<Output = Result<(), Halt>>,
) -> (Result<(), Halt>, bool) {
    let Some(deadline) = deadline else {
        return (body.await, false);
    };
    let deadline = tokio::time::Instant::from_std(deadline);
    match tokio::time::timeout_at(deadline, body).await {
        Ok(outcome) => (outcome, false),
        Err(_) => (Ok(()), true),
    }
}

/// A ping sent now when a wait could only end in a settled rule's failure (see
/// [`ExecConfig::settled`]): the step interpreter's, for the fuzzer's own waits too.
pub(crate) use crate::steps::ping_if;

/// Runs `ops` once.
pub async fn execute(
    ops: &[Op],
    target: &Target,
    cfg: &ExecConfig,
) -> Result<Execution, ExecError> {
    execute_until(ops, target, cfg, None).await
}

/// Runs `ops` once, cut off at `deadline` (the execution then says so and has no verdict).
pub async fn execute_until(
    ops: &[Op],
    target: &Target,
    cfg: &ExecConfig,
    deadline: Option<Instant>,
) -> Result<Execution, ExecError> {
    let server = target.for_sequence().await.map_err(ExecError::Host)?;
    let token = crate::client::unique_token("fz");
    let mut run = Run {
        cfg,
        url: server.url.clone(),
        token,
        conns: Vec::new(),
        session: String::new(),
        chat: String::new(),
        next_turn: 0,
        side_links: 0,
        invalid: InvalidDispatches::default(),
        clock: None,
        behaviours: HashMap::new(),
        observer: None,
        made: Vec::new(),
        pending: Vec::new(),
        first_init: None,
        workspace: cfg.profile.workspace.clone().or(server.workspace.clone()),
        case_levels: None,
        exec: Execution::default(),
    };
    let (outcome, cut_off) = until(deadline, Box::pin(run.go(ops))).await;
    run.exec.cut_off = cut_off;
    if target.url().is_some() {
        run.sweep().await;
    }
    for conn in &mut run.conns {
        conn.close().await;
    }
    if let Some(observer) = &mut run.observer {
        observer.close().await;
    }
    run.exec.frames = run.conns.iter().flat_map(Conn::reported_all).collect();
    run.exec.frames.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    server.stop().await;
    Halt::settle(outcome, &mut run.exec, &cfg.exclude)?;
    if run.exec.cut_off {
        run.exec.failure = None;
    }
    Ok(run.exec)
}

impl Run<'_> {
    /// A URI in this run's namespace that names nothing.
    fn missing(&self, what: &str, index: usize) -> String {
        format!("ahp-session:/{}-{what}-{index}", self.token)
    }

    async fn go(&mut self, ops: &[Op]) -> Result<(), Halt> {
        self.setup().await?;
        // Violations of excluded rules are dropped where they are found (the always-on
        // checks, echoes, checkpoints) and the sequence goes on; any other failure ends it,
        // without a verdict when its rule is excluded.
        let cfg = self.cfg;
        let exclude = &cfg.exclude;
        for (index, op) in ops.iter().enumerate() {
            // Each operation boxed, whatever its kind: in a debug build an operation's future
            // (a probe through the step interpreter, a routine) is large, and a campaign polled
            // on a 2 MiB thread (a test's, a tokio worker's) overflowed its stack with it inline.
            if let Some(failure) = Box::pin(self.step(index, op)).await {
                let failure = self.lost_during(Some(index), failure).await;
                self.exec.failure = exclude.judged(Some(failure));
                return Ok(());
            }
            if (index + 1) % self.cfg.checkpoint_every.max(1) == 0 {
                if let Some(failure) = self.checkpoint(Some(index)).await {
                    let failure = self.lost_during(Some(index), failure).await;
                    self.exec.failure = exclude.judged(Some(failure));
                    return Ok(());
                }
            }
        }
        let mut failure = self.checkpoint(None).await;
        if failure.is_none() {
            failure = self.alive().await;
        }
        if let Some(found) = failure {
            failure = Some(self.lost_during(None, found).await);
        }
        self.exec.failure = exclude.judged(failure);
        Ok(())
    }

    /// A step's failure when the host ended a client's connection: the end is what was seen,
    /// not the answer it cut off — FUZZ-001, saying whether the server still takes
    /// connections (a crash when it does not).
    async fn lost_during(&mut self, index: Option<usize>, failure: Failure) -> Failure {
        // A client that has read nothing since the failure cannot know its connection
        // ended (a case's or probe's own connections saw the host die, the sequence's did
        // not).
        self.read_up_to_now().await;
        let ended = |conn: &&Conn| {
            let last = conn.last_frame();
            conn.is_closed()
                && last.is_some_and(|f| {
                    f.direction == crate::transport::Direction::Received
                        && (f.text.starts_with("<close") || f.text == "<connection lost>")
                })
        };
        let Some(lost) = self.conns.iter().find(ended) else {
            return failure;
        };
        let end = lost.last_frame().map_or(String::new(), |f| f.text.clone());
        let name = lost.name.clone();
        let actual = match Connection::connect(&self.url, self.cfg.timeout).await {
            Ok(mut link) => {
                link.close().await;
                format!("{name}'s connection ended during the operation ({end})")
            }
            Err(error) => format!(
                "{name}'s connection ended during the operation ({end}) and the server no longer accepts connections: {error}"
            ),
        };
        Failure {
            rule: Rule::Fuzz001,
            expected: "the host keeps serving its clients".into(),
            actual,
            op_index: index,
        }
    }

    /// Brings every client up to date: a ping round trip on each flushes whatever the host
    /// queued for it before, then the first client catches up with the agent.
    async fn settle(&mut self) {
        self.read_up_to_now().await;
        self.catch_up(false).await;
    }

    /// Has every open client read all the host sent it before now: a ping round trip each.
    async fn read_up_to_now(&mut self) {
        for conn in &mut self.conns {
            if !conn.is_closed() {
                let _ = conn.ping(self.cfg.timeout).await;
            }
        }
    }

    /// Brings the first client (the model plans from its mirror) up to date: with `ping`, a
    /// round trip flushes what the host sent it before; then it reads on while the chat is
    /// not at rest, so the agent's next steps land before the model looks at the state. A
    /// server that stays busy longer than the model expects costs the settle time per look,
    /// never a verdict: every state change is still checked when it arrives.
    async fn catch_up(&mut self, ping: bool) {
        let timeout = self.cfg.timeout;
        let Some(first) = self.conns.first_mut().filter(|c| !c.is_closed()) else {
            return;
        };
        if ping {
            let _ = first.ping(timeout).await;
        }
        let deadline = Instant::now() + timeout;
        let schemas = self.cfg.schemas.clone();
        // Whether frames came after the first look, and whether a round trip completed
        // since the last frame (so nothing the host did before is still on its way).
        let (mut moved, mut confirmed) = (false, ping);
        loop {
            let first = &mut self.conns[0];
            // Folds what arrived into the mirror; violations stay recorded for `checks`.
            self.pending.extend(first.process(&schemas));
            if Instant::now() > deadline {
                return;
            }
            // `rest` reads the active turn and the queue only.
            let chat = first.live_state(&self.chat).unwrap_or(Value::Null);
            let behaviours = &self.behaviours;
            match rest(&chat, |id| behaviours.get(id).copied()) {
                Rest::Busy => {
                    if !first.pull(self.cfg.settle).await {
                        return;
                    }
                    (moved, confirmed) = (true, false);
                }
                Rest::Quiet if !moved || confirmed => return,
                Rest::Idle if confirmed => return,
                // The host may emit several actions at once (a turn ends, a queued message
                // leaves the queue, its turn starts): a ping proves the rest is not between
                // them.
                Rest::Quiet | Rest::Idle => {
                    let _ = first.ping(timeout).await;
                    confirmed = true;
                }
            }
        }
    }

    /// Runs the always-on checks over everything received; the first violation fails.
    fn checks(&mut self, index: Option<usize>) -> Option<Failure> {
        let schemas = self.cfg.schemas.clone();
        let mut found = std::mem::take(&mut self.pending);
        for conn in &mut self.conns {
            conn.foresee(&schemas);
        }
        for conn in &mut self.conns {
            found.extend(conn.process(&schemas));
            conn.take_backlog();
        }
        // The echo of a client's own dispatch of a host-only action type carries its origin:
        // that the host took the dispatch is DISPATCH-006's matter (judged by the operation),
        // not a host action with an origin (ENV-005).
        let conns = &self.conns;
        found.retain(|l| {
            !l.violation
                .is_own_echo(|client, seq| conns.iter().any(|c| c.dispatched_here(client, seq)))
        });
        let found = found.into_iter().map(|l| (l.conn, l.violation));
        self.cfg.exclude.first_failure(found, index)
    }

    async fn step(&mut self, index: usize, op: &Op) -> Option<Failure> {
        match op {
            Op::Checkpoint => self.checkpoint(Some(index)).await,
            Op::Reconnect { .. } => {
                let client = op.client() % self.conns.len();
                self.reconnect(index, client).await
            }
            Op::Together { first, second } => self.dispatch(index, &[first, second]).await,
            Op::Probe { probe, .. } => {
                self.exec.operations += 1;
                let client = op.client() % self.conns.len();
                let failure = self.probe(index, client, *probe).await;
                self.saw("probe", probe, "", &failure);
                failure
            }
            Op::Case { case } => {
                self.exec.operations += 1;
                let failure = self.case(index, case).await;
                self.saw("case", case, "", &failure);
                failure
            }
            Op::Routine { routine, .. } => {
                self.exec.operations += 1;
                let client = op.client() % self.conns.len();
                let failure = self.routine(index, client, *routine).await;
                self.saw("routine", routine, "routine", &failure);
                failure
            }
            single => self.dispatch(index, &[single]).await,
        }
    }

    /// Records a probe's or routine's outcome for the coverage map: `ok`, or the rule broken.
    fn saw(&mut self, prefix: &str, what: &impl Serialize, tag: &str, failure: &Option<Failure>) {
        use super::guidance::{kind_of, Seen, ANY};
        self.exec.seen.push(Seen {
            channel: "connection",
            state: ANY,
            operation: format!("{prefix}/{}", kind_of(what, tag)),
            response: failure
                .as_ref()
                .map_or_else(|| "ok".to_owned(), |f| f.rule.id().to_owned()),
        });
    }

    async fn checkpoint(&mut self, index: Option<usize>) -> Option<Failure> {
        self.settle().await;
        if let Some(failure) = self.checks(index) {
            return Some(failure);
        }
        if let Some(failure) = self.observer_ready(index).await {
            return Some(failure);
        }
        let observer = self.observer.as_mut()?;
        let mut conns: Vec<&mut Conn> = self.conns.iter_mut().collect();
        let channels = vec![self.session.clone(), self.chat.clone()];
        match checkpoint::compare(&mut conns, channels, observer, self.cfg.timeout).await {
            Ok(checked) => {
                // A fold that differs from a fresh snapshot is the symptom of whatever state
                // went wrong; a rule the snapshot itself breaks names what (an inputNeeded
                // entry of a missing chat, a status its content contradicts): it comes first.
                // An envelope a connection never got (every connection has read up to a
                // ping answered after the snapshots) explains its fold too: it comes first.
                let held: Vec<(&str, &FrameChecker)> = self
                    .conns
                    .iter()
                    .filter(|c| !c.is_closed())
                    .map(|c| (c.name.as_str(), c.frame_checker()))
                    .collect();
                let mut violations = delivery::missed(&held);
                violations.extend(checked.violations);
                violations.sort_by_key(|(_, violation)| violation.rule == Rule::InvFold1);
                self.cfg.exclude.first_failure(violations, index)
            }
            Err(error) => Some(Failure {
                rule: Rule::Fuzz001,
                expected: "fresh snapshots at a checkpoint".into(),
                actual: error,
                op_index: index,
            }),
        }
    }

    /// On a server that outlives the sequence, sweeps what the sequence made (`client::sweep`:
    /// the sessions named with its token, its cases' automations, the sessions the host named
    /// for it) on the observer, opened for it when no checkpoint did: what a sequence leaves
    /// behind would make every later checkpoint's session list longer. A failure here is no
    /// finding (the sequence's verdict is made), and a server that stopped answering costs it
    /// at most a second per request.
    async fn sweep(&mut self) {
        if self.session.is_empty() {
            return;
        }
        let timeout = self.cfg.timeout.min(Duration::from_secs(1));
        if self.observer.is_none() && self.observer_ready(None).await.is_some() {
            return;
        }
        let mut made = std::mem::take(&mut self.made);
        made.extend(self.conns.iter().flat_map(crate::client::sessions_made));
        if let Some(observer) = self.observer.as_mut() {
            crate::client::sweep(observer, &self.token, &made, timeout).await;
        }
    }

    /// Opens the observer connection (checkpoint snapshots, fresh states) unless it is
    /// open; its failure to open is FUZZ-001's finding.
    async fn observer_ready(&mut self, index: Option<usize>) -> Option<Failure> {
        if self.observer.is_some() {
            return None;
        }
        let client_id = format!("ahpspec-{}-observer", self.token);
        match checkpoint::observer(&self.url, self.cfg.timeout, &client_id, DEFAULT_OFFER).await {
            Ok(observer) => {
                self.observer = Some(observer);
                None
            }
            Err(error) => Some(Failure {
                rule: Rule::Fuzz001,
                expected: "an observer connection for checkpoints".into(),
                actual: error,
                op_index: index,
            }),
        }
    }

    /// Every client still gets an answer to ping (the server did not die or hang). Any
    /// answer will do: a host that refuses ping (TRANSPORT-010's matter, judged by its
    /// probe) still answers.
    async fn alive(&mut self) -> Option<Failure> {
        for conn in &mut self.conns {
            let pong = conn.ping(self.cfg.timeout).await;
            if let Err(error) = pong {
                return Some(Failure {
                    rule: Rule::Fuzz001,
                    expected: format!("ping answered on {}", conn.name),
                    actual: error.to_string(),
                    op_index: None,
                });
            }
        }
        None
    }
}
