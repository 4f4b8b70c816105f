//! Runs one operation sequence against a server: several clients on one session and its
//! default chat; after every step the always-on checks of the runner, the expected
//! acceptance or rejection, and at checkpoints every mirror against fresh snapshots.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::model::{judge, plan, rest, Channel, Expect, Planned, Rest};
use super::ops::{Behaviour, Op};
use crate::checks::frame::Schemas;
use crate::client::checkpoint;
use crate::client::{
    immediate_subscribe_params, initialize, initialize_params, reconnect_params, Conn,
    HandshakeError, Located, DEFAULT_OFFER, ROOT,
};
use crate::engine::profile::Profile;
pub use crate::target::Target;
use crate::transport::{Connection, Incoming};
use crate::verdict::ReportedFrame;

mod probes;

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
}

/// A rule the server broke, at the operation that revealed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub rule: String,
    pub expected: String,
    pub actual: String,
    /// Index of the operation after which it was found (`None`: during set-up or at the end).
    pub op_index: Option<usize>,
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
    /// Client operations that reached the server: dispatches (operations that did not
    /// apply in the observed state are not counted) and protocol probes.
    pub operations: usize,
    pub performed: Vec<Performed>,
    pub frames: Vec<ReportedFrame>,
}

/// The harness itself could not run the sequence.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start the built-in host: {0}")]
    Host(std::io::Error),
    #[error("{0}")]
    Setup(String),
}

impl ExecError {
    /// A failed `initialize` of a sequence's client: the sequence cannot start.
    pub(super) fn initialize(error: HandshakeError) -> ExecError {
        match error {
            HandshakeError::Refused(init) => ExecError::Setup(format!("initialize failed: {init}")),
            HandshakeError::Transport(e) => ExecError::Setup(format!("initialize: {e}")),
        }
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
    /// The last timestamp the fuzzer dispatched.
    clock: Option<jiff::Timestamp>,
    /// The behaviour each turn the fuzzer started was started with.
    behaviours: HashMap<String, Behaviour>,
    /// The connection that takes checkpoint snapshots (opened at the first checkpoint).
    observer: Option<Connection>,
    /// Violations found while catching up, reported by the next [`Run::checks`].
    pending: Vec<Located>,
    exec: Execution,
}

/// Runs `ops` once.
pub async fn execute(
    ops: &[Op],
    target: &Target,
    cfg: &ExecConfig,
) -> Result<Execution, ExecError> {
    let (url, builtin) = target.start().await.map_err(ExecError::Host)?;
    let token = crate::client::unique_token("fz");
    let mut run = Run {
        cfg,
        url,
        token,
        conns: Vec::new(),
        session: String::new(),
        chat: String::new(),
        next_turn: 0,
        clock: None,
        behaviours: HashMap::new(),
        observer: None,
        pending: Vec::new(),
        exec: Execution::default(),
    };
    let outcome = run.go(ops).await;
    for conn in &mut run.conns {
        conn.link.close().await;
    }
    if let Some(observer) = &mut run.observer {
        observer.close().await;
    }
    run.exec.frames = run.conns.iter().flat_map(Conn::reported_all).collect();
    run.exec.frames.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    if let Some(host) = builtin {
        host.shutdown().await;
    }
    outcome?;
    Ok(run.exec)
}

impl Run<'_> {
    async fn go(&mut self, ops: &[Op]) -> Result<(), ExecError> {
        self.setup().await?;
        // Violations of excluded rules are dropped where they are found (the always-on
        // checks, echoes, checkpoints) and the sequence goes on; any other failure ends it,
        // without a verdict when its rule is excluded.
        let cfg = self.cfg;
        let exclude = &cfg.exclude;
        for (index, op) in ops.iter().enumerate() {
            if let Some(failure) = self.step(index, op).await {
                self.exec.failure = exclude.judged(Some(failure));
                return Ok(());
            }
            if (index + 1) % self.cfg.checkpoint_every.max(1) == 0 {
                if let Some(failure) = self.checkpoint(Some(index)).await {
                    self.exec.failure = exclude.judged(Some(failure));
                    return Ok(());
                }
            }
        }
        let mut failure = self.checkpoint(None).await;
        if failure.is_none() {
            failure = self.alive().await;
        }
        self.exec.failure = exclude.judged(failure);
        Ok(())
    }

    async fn connect(&self, index: usize) -> Result<Conn, ExecError> {
        let link = Connection::connect(&self.url, self.cfg.timeout)
            .await
            .map_err(|e| ExecError::Setup(e.to_string()))?;
        Ok(Conn::new(
            &format!("c{}", index + 1),
            &format!("ahpspec-{}-c{}", self.token, index + 1),
            link,
        ))
    }

    /// A timestamp for the next dispatch: a second ahead of the wall clock and at least a
    /// millisecond after the previous one, so every turn the fuzzer starts changes the
    /// chat's modifiedAt (at millisecond resolution a fast sequence would otherwise leave
    /// it unchanged, and whether a missing announcement shows would depend on timing).
    fn tick(&mut self) -> String {
        let ahead = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_secs(1))
            .unwrap_or_else(|_| jiff::Timestamp::now());
        let next = match self.clock {
            Some(last) => last
                .checked_add(jiff::SignedDuration::from_millis(1))
                .map_or(ahead, |after| after.max(ahead)),
            None => ahead,
        };
        self.clock = Some(next);
        format!("{next:.3}")
    }

    /// createSession params for `uri` with the target profile's provider.
    fn create_params(&self, uri: &str) -> Value {
        let mut params = json!({ "channel": uri });
        if let Some(provider) = &self.cfg.profile.provider {
            params["provider"] = json!(provider);
        }
        params
    }

    async fn open_client(&mut self, index: usize) -> Result<(), ExecError> {
        let mut conn = self.connect(index).await?;
        let mut params = initialize_params([DEFAULT_OFFER], &conn.checks.client_id);
        params["initialSubscriptions"] = if index == 0 { json!([ROOT]) } else { json!([]) };
        initialize(&mut conn.link, params, self.cfg.timeout)
            .await
            .map_err(ExecError::initialize)?;
        self.conns.push(conn);
        Ok(())
    }

    async fn setup(&mut self) -> Result<(), ExecError> {
        self.open_client(0).await?;
        self.session = format!("ahp-session:/{}", self.token);
        let params = self.create_params(&self.session);
        let timeout = self.cfg.timeout;
        // Subscribing in the same breath sees the session while it is still `creating`, so
        // the envelope that ends it is checked too.
        let link = &mut self.conns[0].link;
        let setup = |e: crate::transport::TransportError| ExecError::Setup(e.to_string());
        let create = link
            .send_request("createSession", params)
            .await
            .map_err(setup)?;
        let subscribe = link
            .send_request("subscribe", immediate_subscribe_params(&self.session))
            .await
            .map_err(setup)?;
        let created = link.response(create, timeout).await.map_err(setup)?;
        if created.get("error").is_some() {
            return Err(ExecError::Setup(format!("createSession failed: {created}")));
        }
        let subscribed = link.response(subscribe, timeout).await.map_err(setup)?;
        let state = subscribed
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null);
        // The other clients connect while the session initialises.
        for index in 1..self.cfg.clients.max(1) {
            self.open_client(index).await?;
        }
        // A session may still be `creating`: wait for the envelope that ends it.
        if state["lifecycle"] == "creating" {
            let session = self.session.clone();
            let ended = self.conns[0]
                .link
                .wait_for(timeout, |item| {
                    matches!(item, Incoming::Message(m) if m["method"] == "action"
                        && m["params"]["channel"] == session.as_str()
                        && matches!(m["params"]["action"]["type"].as_str(),
                                    Some("session/ready" | "session/creationFailed")))
                })
                .await;
            match ended {
                Ok(Incoming::Message(m)) if m["params"]["action"]["type"] == "session/ready" => {}
                other => {
                    return Err(ExecError::Setup(format!(
                        "the session did not become ready: {other:?}"
                    )))
                }
            }
        } else if state["lifecycle"] != "ready" {
            return Err(ExecError::Setup(format!(
                "the session did not become ready: {}",
                state["lifecycle"]
            )));
        }
        self.chat = state["defaultChat"].as_str().unwrap_or_default().to_owned();
        for index in 0..self.conns.len() {
            let (session, chat) = (self.session.clone(), self.chat.clone());
            if index > 0 {
                self.subscribe(index, &session).await?;
            }
            self.subscribe(index, &chat).await?;
        }
        self.settle().await;
        Ok(())
    }

    async fn subscribe(&mut self, index: usize, channel: &str) -> Result<Value, ExecError> {
        let timeout = self.cfg.timeout;
        let response = self.conns[index]
            .link
            .request("subscribe", immediate_subscribe_params(channel), timeout)
            .await
            .map_err(|e| ExecError::Setup(format!("subscribe {channel}: {e}")))?;
        Ok(response
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// Brings every client up to date: a ping round trip on each flushes whatever the host
    /// queued for it before, then the first client catches up with the agent.
    async fn settle(&mut self) {
        for conn in &mut self.conns {
            if !conn.link.is_closed() {
                let _ = conn
                    .link
                    .request("ping", json!({ "channel": ROOT }), self.cfg.timeout)
                    .await;
            }
        }
        self.catch_up(false).await;
    }

    /// Brings the first client (the model plans from its mirror) up to date: with `ping`, a
    /// round trip flushes what the host sent it before; then it reads on while the chat is
    /// not at rest, so the agent's next steps land before the model looks at the state. A
    /// server that stays busy longer than the model expects costs the settle time per look,
    /// never a verdict: every state change is still checked when it arrives.
    async fn catch_up(&mut self, ping: bool) {
        let timeout = self.cfg.timeout;
        let Some(first) = self.conns.first_mut().filter(|c| !c.link.is_closed()) else {
            return;
        };
        if ping {
            let _ = first
                .link
                .request("ping", json!({ "channel": ROOT }), timeout)
                .await;
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
            let chat = first
                .checks
                .mirror
                .live_state(&self.chat)
                .unwrap_or(Value::Null);
            let behaviours = &self.behaviours;
            match rest(&chat, |id| behaviours.get(id).copied()) {
                Rest::Busy => {
                    if !first.link.pull(self.cfg.settle).await {
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
                    let _ = first
                        .link
                        .request("ping", json!({ "channel": ROOT }), timeout)
                        .await;
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
            found.extend(conn.process(&schemas));
            conn.link.take_backlog();
        }
        let exclude = &self.cfg.exclude;
        found
            .into_iter()
            .find(|located| exclude.judges(located.violation.rule))
            .map(|located| Failure {
                rule: located.violation.rule.to_owned(),
                expected: located.violation.expected,
                actual: format!("{} (on {})", located.violation.actual, located.conn),
                op_index: index,
            })
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
                self.probe(index, client, *probe).await
            }
            single => self.dispatch(index, &[single]).await,
        }
    }

    /// Plans `ops` on the state the first client observed, sends them all at once (each on
    /// its client), then judges each against the state its client folded just before the
    /// echo — the order the host chose.
    async fn dispatch(&mut self, index: usize, ops: &[&Op]) -> Option<Failure> {
        let chat = self.conns[0]
            .checks
            .mirror
            .state(&self.chat)
            .unwrap_or(Value::Null);
        let mut sent = Vec::new();
        for op in ops {
            let client = op.client() % self.conns.len();
            self.next_turn += 1;
            let fresh = format!("fz-{}", self.next_turn);
            let now = self.tick();
            let client_id = self.conns[client].checks.client_id.clone();
            let Some(planned) = plan(op, &chat, &client_id, &fresh, &now, &self.cfg.profile) else {
                continue;
            };
            if let Op::StartTurn { behaviour, .. } = op {
                self.behaviours.insert(fresh.clone(), *behaviour);
            }
            let channel = match planned.channel {
                Channel::Session => self.session.clone(),
                Channel::Chat => self.chat.clone(),
            };
            let conn = &mut self.conns[client];
            let seq = match conn.dispatch(&channel, &planned.action).await {
                Ok(seq) => seq,
                Err(error) => {
                    return Some(Failure {
                        rule: "FUZZ-001".into(),
                        expected: "the connection stays open".into(),
                        actual: error.to_string(),
                        op_index: Some(index),
                    })
                }
            };
            // The echo has not been read yet: its pre-state is recorded when it is.
            conn.checks.watched.insert(seq);
            // A dispatch the host may ignore is followed by a ping: the host answers it
            // after whatever it does with the dispatch, so the pong ends the wait.
            let ping = match planned.expect {
                Expect::RejectOrIgnore => conn
                    .link
                    .send_request("ping", json!({ "channel": ROOT }))
                    .await
                    .ok(),
                _ => None,
            };
            self.exec.operations += 1;
            sent.push((self.exec.performed.len(), seq, ping));
            self.exec.performed.push(Performed {
                op_index: index,
                client,
                planned,
            });
        }
        if sent.is_empty() {
            return None;
        }
        for (done, (slot, seq, ping)) in sent.iter().enumerate() {
            if let Some(failure) = self.judge_echo(index, *slot, *seq, *ping).await {
                // Dispatches the run stopped before judging keep no claim about their answer
                // (a regression case then expects nothing of them).
                for (later, _, _) in &sent[done + 1..] {
                    self.exec.performed[*later].planned.expect = Expect::Either;
                }
                return Some(failure);
            }
        }
        // The first client is caught up if it dispatched (the echo it read flushed it);
        // the others' frames are checked as they come.
        let pinged = sent
            .iter()
            .any(|(slot, _, _)| self.exec.performed[*slot].client != 0);
        self.catch_up(pinged).await;
        for conn in self.conns.iter_mut().skip(1) {
            conn.link.take_arrived();
        }
        self.checks(Some(index))
    }

    /// Waits for the echo of the dispatch recorded in `performed[slot]` and judges it
    /// against the state its client had folded just before it (or, when the host ignored
    /// it, the state now).
    async fn judge_echo(
        &mut self,
        index: usize,
        slot: usize,
        seq: i64,
        ping: Option<u64>,
    ) -> Option<Failure> {
        let performed = &self.exec.performed[slot];
        let (client, action) = (performed.client, performed.planned.action.clone());
        let channel = match performed.planned.channel {
            Channel::Session => self.session.clone(),
            Channel::Chat => self.chat.clone(),
        };
        let schemas = self.cfg.schemas.clone();
        let wait = self.cfg.timeout;
        let conn = &mut self.conns[client];
        let client_id = conn.checks.client_id.clone();
        let echo = conn
            .link
            .wait_for(wait, |item| match item {
                Incoming::Message(m) => {
                    (m["method"] == "action"
                        && m["params"]["origin"]["clientId"] == client_id.as_str()
                        && crate::client::json_equal(&m["params"]["action"], &action))
                        || ping.is_some_and(|id| crate::transport::is_response_to(m, id))
                }
                _ => false,
            })
            .await;
        let rejected = match &echo {
            Ok(Incoming::Message(m)) if m["method"] == "action" => Some(
                m["params"]
                    .get("rejectionReason")
                    .is_some_and(|r| !r.is_null()),
            ),
            _ => None,
        };
        // Folding up to the echo records the state the host judged it in.
        let found = conn.process(&schemas);
        let before = conn.checks.prestates.remove(&seq);
        conn.checks.watched.remove(&seq);
        let before =
            before.unwrap_or_else(|| conn.checks.mirror.state(&channel).unwrap_or(Value::Null));
        let (expect, rule) = judge(&action, &before, &client_id);
        let planned = &mut self.exec.performed[slot].planned;
        (planned.expect, planned.rule) = (expect, rule.to_owned());
        // A broken always-on rule is the better explanation of anything that follows
        // (unless every one found is excluded: then the echo is judged as usual).
        if !found.is_empty() {
            self.pending.extend(found);
            if let Some(failure) = self.checks(Some(index)) {
                return Some(failure);
            }
        }
        let kind = action["type"].as_str().unwrap_or("?").to_owned();
        let failure = match (expect, rejected) {
            (Expect::Accept, Some(false))
            | (Expect::Reject, Some(true))
            | (Expect::Either, Some(_))
            | (Expect::RejectOrIgnore, Some(true) | None) => None,
            (Expect::Accept, Some(true)) => {
                Some(("accepted".to_owned(), format!("{kind} rejected")))
            }
            (Expect::Reject | Expect::RejectOrIgnore, Some(false)) => {
                Some(("rejected".to_owned(), format!("{kind} accepted")))
            }
            (_, None) => Some((
                format!("an echo of {kind}"),
                format!("nothing within {} ms", wait.as_millis()),
            )),
        };
        failure
            .filter(|_| self.cfg.exclude.judges(rule))
            .map(|(expected, actual)| Failure {
                rule: rule.to_owned(),
                expected: format!("{kind} {expected}"),
                actual,
                op_index: Some(index),
            })
    }

    async fn reconnect(&mut self, index: usize, client: usize) -> Option<Failure> {
        let link = match Connection::connect(&self.url, self.cfg.timeout).await {
            Ok(link) => link,
            Err(error) => {
                return Some(Failure {
                    rule: "FUZZ-001".into(),
                    expected: "a new connection for reconnect".into(),
                    actual: error.to_string(),
                    op_index: Some(index),
                })
            }
        };
        self.conns[client].link.close().await;
        // The old connection's last frames are judged like every other frame.
        if let Some(failure) = self.checks(Some(index)) {
            return Some(failure);
        }
        // While the root subscriber is away, another client creates a session: its
        // root/sessionAdded must not be replayed (RECONNECT-006).
        let uri = self.missing("away", index);
        let params = self.create_params(&uri);
        let away = match (client, self.conns.get_mut(1)) {
            (0, Some(other)) => {
                let created = other
                    .link
                    .request("createSession", params, self.cfg.timeout)
                    .await;
                created
                    .is_ok_and(|m| m.get("result").is_some())
                    .then_some(uri)
            }
            _ => None,
        };
        let resumed = Conn::resuming(&self.conns[client], link);
        let old = std::mem::replace(&mut self.conns[client], resumed);
        let conn = &mut self.conns[client];
        // The first client also listens to the root channel (it subscribed at initialize).
        let mut channels = vec![self.session.clone(), self.chat.clone()];
        if client == 0 {
            channels.insert(0, ROOT.to_owned());
        }
        let params = reconnect_params(
            &old.checks.client_id,
            old.checks.checker.highest_seq(),
            channels,
        );
        let timeout = self.cfg.timeout;
        let answer = conn.link.request("reconnect", params, timeout).await;
        match answer {
            Ok(response) if response.get("result").is_some() => {}
            Ok(response) => {
                return Some(Failure {
                    rule: "RECONNECT-001".into(),
                    expected: "a reconnect result".into(),
                    actual: response.to_string(),
                    op_index: Some(index),
                })
            }
            Err(error) => {
                return Some(Failure {
                    rule: "RECONNECT-001".into(),
                    expected: "a reconnect result".into(),
                    actual: error.to_string(),
                    op_index: Some(index),
                })
            }
        }
        self.settle().await;
        if let Some(uri) = away {
            // The new connection's transcript starts at the reconnect.
            let replayed = self.conns[0].link.received_since(0).find(|m| {
                m["method"] == "root/sessionAdded"
                    && m["params"]["summary"]["resource"] == uri.as_str()
            });
            if let Some(message) = replayed {
                return Some(Failure {
                    rule: "RECONNECT-006".into(),
                    expected: "no root/sessionAdded replayed for a session created while away"
                        .into(),
                    actual: crate::checks::frame::clip(&message.to_string()),
                    op_index: Some(index),
                });
            }
            let _ = self.conns[1]
                .link
                .request(
                    "disposeSession",
                    json!({ "channel": uri }),
                    self.cfg.timeout,
                )
                .await;
        }
        self.checks(Some(index))
    }

    async fn checkpoint(&mut self, index: Option<usize>) -> Option<Failure> {
        self.settle().await;
        if let Some(failure) = self.checks(index) {
            return Some(failure);
        }
        if self.observer.is_none() {
            let client_id = format!("ahpspec-{}-observer", self.token);
            match checkpoint::observer(&self.url, self.cfg.timeout, &client_id, DEFAULT_OFFER).await
            {
                Ok(observer) => self.observer = Some(observer),
                Err(error) => {
                    return Some(Failure {
                        rule: "FUZZ-001".into(),
                        expected: "an observer connection for checkpoints".into(),
                        actual: error,
                        op_index: index,
                    })
                }
            }
        }
        let observer = self.observer.as_mut()?;
        let mut conns: Vec<&mut Conn> = self.conns.iter_mut().collect();
        let channels = vec![self.session.clone(), self.chat.clone()];
        match checkpoint::compare(&mut conns, channels, observer, self.cfg.timeout).await {
            Ok(checked) => checked
                .violations
                .into_iter()
                .find(|(_, violation)| self.cfg.exclude.judges(violation.rule))
                .map(|(on, violation)| Failure {
                    rule: violation.rule.to_owned(),
                    expected: violation.expected,
                    actual: format!("{} (on {on})", violation.actual),
                    op_index: index,
                }),
            Err(error) => Some(Failure {
                rule: "FUZZ-001".into(),
                expected: "fresh snapshots at a checkpoint".into(),
                actual: error,
                op_index: index,
            }),
        }
    }

    /// Every client still gets an answer to ping (the server did not die or hang).
    async fn alive(&mut self) -> Option<Failure> {
        for conn in &mut self.conns {
            let pong = conn
                .link
                .request("ping", json!({ "channel": ROOT }), self.cfg.timeout)
                .await;
            if !matches!(&pong, Ok(response) if response.get("result").is_some()) {
                return Some(Failure {
                    rule: "FUZZ-001".into(),
                    expected: format!("ping answered on {}", conn.name),
                    actual: format!("{pong:?}"),
                    op_index: None,
                });
            }
        }
        None
    }
}
