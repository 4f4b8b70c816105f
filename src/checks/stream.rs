//! The always-on checks over one connection's frames, in transcript order: frame checks,
//! reducer mirror, the echo of every dispatch and the invariants of every snapshot.
//! Fed by the engine as frames arrive and by the offline re-check from a recording; it
//! knows nothing about sockets.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::compare::Kind;
use super::error_data;
use super::frame::{parse_version, snapshots_in, Counts, FrameChecker, Received, Schemas, Version};
use super::invariants;
use super::malformed::Malformed;
use super::mirror::Mirror;
use super::resnapshot::Resnapshots;
use super::toolcalls::ToolCalls;
use super::words::{EarlierDispatches, Says, ANSWERS_INVALID, ECHOES_INVALID};
use super::{FastMap, Rule, Skips, Violation};
use crate::tape::{Node, Tape};

/// Why a mirror stopped knowing its channel's state after an echo.
pub const ACCEPTED_INVALID: &str =
    "the host accepted an action dispatched invalid, which the reducers cannot fold";

/// One connection's check state.
#[derive(Debug, Default)]
pub struct StreamChecks {
    /// The clientId the connection's dispatches carry (echoes name it).
    pub client_id: String,
    pub checker: FrameChecker,
    pub mirror: Mirror,
    /// Every tool call's status, from the raw JSON (INV-TOOL-1, INV-TOOL-2, TOOL-007).
    pub tool_calls: ToolCalls,
    /// What the connection saw of each terminal (TERM-002, INV-TERM-1).
    pub terminals: super::terminals::Terminals,
    /// Schema violations in frames the harness sent without declaring them invalid.
    pub harness_errors: Vec<String>,
    /// Frames sent deliberately invalid (transcript indices) — not schema-checked.
    pub intended_invalid: Vec<usize>,
    /// Every dispatch sent: clientSeq → action.
    pub dispatched: HashMap<i64, Value>,
    /// An observed client's dispatches on all its connections (set by a proxy or a capture's
    /// check): an echo of one sent on an earlier connection is judged against it.
    pub earlier: Option<EarlierDispatches>,
    /// States and turns the snapshot invariants looked at.
    pub invariant_counts: Counts,
    /// clientSeqs of dispatches whose echo's pre-state is wanted (the fuzzer judges each
    /// dispatch against the state the host had when it took it).
    pub watched: HashSet<i64>,
    /// clientSeq → the mirrored state of the echo's channel just before the echo.
    pub prestates: HashMap<i64, Value>,
    /// The protocol version the host selected for this connection (from its initialize
    /// result): action types introduced after it are not in its schema.
    pub negotiated: Option<Version>,
    /// Echoes DISPATCH-001 left to the rule their dispatch tests.
    echo_skips: Skips,
    /// Dispatches looked at ahead of the checks ([`StreamChecks::foresee_sent`]):
    /// transcript index → what makes it invalid, if anything.
    foreseen: FastMap<usize, Option<String>>,
    /// The malformed dispatches and requests of a client the harness did not write (a
    /// proxy's, a capture's), whose echoes and answers DISPATCH-007 and TRANSPORT-009
    /// judge: set by [`StreamChecks::observing`]. The harness's own malformed messages are
    /// deliberate, judged by their cases.
    pub malformed: Option<Malformed>,
    /// Snapshots such a client asked for again of a channel it folds, compared with the
    /// fold (INV-FOLD-1: observed traffic has no checkpoints); set with `malformed`.
    resnapshots: Option<Resnapshots>,
    /// The parse buffer every frame is read into.
    tape: Tape,
}

impl StreamChecks {
    /// Whether `client` is this connection's client and dispatched `seq` on it.
    pub fn dispatched_here(&self, client: &str, seq: i64) -> bool {
        client == self.client_id && self.dispatched.contains_key(&seq)
    }

    pub fn new(client_id: &str) -> StreamChecks {
        StreamChecks {
            client_id: client_id.to_owned(),
            ..StreamChecks::default()
        }
    }

    /// The checks of a connection whose client the harness did not write (a proxy's, a
    /// capture's): what it sends comes through [`StreamChecks::observed_sent`]; the host
    /// applying an action it dispatched malformed breaks DISPATCH-007, answering a request
    /// whose params have the wrong shape with a success, or never, TRANSPORT-009; and a
    /// snapshot it asks for again of a channel it folds is compared with the fold
    /// (INV-FOLD-1: such traffic has no checkpoints; see [`Resnapshots`]).
    pub fn observing() -> StreamChecks {
        StreamChecks {
            malformed: Some(Malformed::default()),
            resnapshots: Some(Resnapshots::default()),
            ..StreamChecks::default()
        }
    }

    /// The checks of a connection that resumes `old` (reconnect): same client, and they
    /// carry on the old one's mirror, sequence history and dispatches.
    pub fn resuming(old: &StreamChecks) -> StreamChecks {
        // `foreseen` is not carried on: it holds indices into the old transcript.
        let mut checks = StreamChecks::new(&old.client_id);
        checks.mirror = old.mirror.clone();
        checks.tool_calls = old.tool_calls.clone();
        checks.terminals = old.terminals.clone();
        checks.checker.resume_from(&old.checker);
        checks.dispatched = old.dispatched.clone();
        checks.negotiated = old.negotiated;
        checks
    }

    /// Looks at a frame the harness sent (transcript index `index`, `at_ms` after the
    /// connection opened).
    pub fn sent(&mut self, index: usize, at_ms: f64, text: &str, schemas: &Schemas) {
        let mut tape = std::mem::take(&mut self.tape);
        match tape.parse(text) {
            Ok(message) => self.check_sent(index, at_ms, message, schemas),
            Err(_) => self.checker.on_sent_unparseable(text),
        }
        self.tape = tape;
    }

    /// Looks at a dispatch the harness sent (transcript `index`) before the checks reach it
    /// in order: one sent invalid is made known at once to the other connections of the
    /// runner ([`crate::checks::words::InvalidDispatches`]), so the copy of its echo they
    /// get is the runner's words whichever connection's frames are checked first. The
    /// verdict on the frame is kept for [`StreamChecks::sent`].
    pub fn foresee_sent(&mut self, index: usize, text: &str, schemas: &Schemas) {
        if self.foreseen.contains_key(&index) || !text.contains("\"dispatchAction\"") {
            return;
        }
        let mut tape = std::mem::take(&mut self.tape);
        if let Ok(message) = tape.parse(text) {
            let params = message.member("params");
            if let (Some("dispatchAction"), Some(seq), Some(channel)) = (
                message.member("method").as_str(),
                params.member("clientSeq").as_i64(),
                params.member("channel").as_str(),
            ) {
                let (deliberate, problem) = self.sent_verdict(index, message, schemas);
                if (deliberate || problem.is_some()) && !self.client_id.is_empty() {
                    let runner = self.checker.words.runner();
                    runner.record(&self.client_id, seq, channel);
                }
                // Before the initialize answer is read, the version a dispatch is judged
                // against is not known yet: the checks judge the frame again when they reach it.
                if self.negotiated.is_some() {
                    self.foreseen.insert(index, problem);
                }
            }
        }
        self.tape = tape;
    }

    /// Looks at a frame a client sent that the harness did not write (a proxy's traffic, a
    /// capture): learns the connection's clientId from its initialize or reconnect and
    /// remembers each dispatch for its echo (DISPATCH-001), as the runner's own connections
    /// do when they send them, then checks it like [`StreamChecks::sent`].
    pub fn observed_sent(&mut self, index: usize, at_ms: f64, text: &str, schemas: &Schemas) {
        let mut tape = std::mem::take(&mut self.tape);
        if let Ok(message) = tape.parse(text) {
            let params = message.member("params");
            match message.member("method").as_str() {
                Some("initialize" | "reconnect") => {
                    if let Some(client_id) = params.member("clientId").as_str() {
                        client_id.clone_into(&mut self.client_id);
                    }
                }
                Some("dispatchAction") => {
                    if let Some(seq) = params.member("clientSeq").as_i64() {
                        let action = params.member("action").to_value();
                        if let Some(earlier) = &self.earlier {
                            earlier.record(&self.client_id, seq, action.clone());
                        }
                        self.dispatched.insert(seq, action);
                    }
                }
                _ => {}
            }
            // A message of an older version may be well formed there and not in 1.0.0, the
            // schemas' version.
            let schemas_version = self.negotiated.is_some_and(|v| v >= (1, 0, 0));
            if let (Some(malformed), true) = (self.malformed.as_mut(), schemas_version) {
                malformed.sent(message, at_ms, &mut self.checker, schemas);
            }
        }
        self.tape = tape;
        self.sent(index, at_ms, text, schemas);
    }

    /// Adds what every always-on rule looked at on this connection to `counts`, and what it
    /// could not judge to `skipped`.
    pub fn tally(&self, counts: &mut Counts, skipped: &mut crate::checks::Skips) {
        skipped.merge(&self.checker.skips());
        skipped.merge(&self.mirror.skips);
        skipped.merge(&self.echo_skips);
        for (rule, n) in self.checker.counts() {
            *counts.entry(rule).or_insert(0) += n;
        }
        *counts.entry(Rule::Turn003).or_insert(0) += self.mirror.deltas_checked;
        *counts.entry(Rule::Turn005).or_insert(0) += self.mirror.parts_checked;
        *counts.entry(Rule::Turn004).or_insert(0) += self.mirror.turn_ids_checked;
        *counts.entry(Rule::Pending003).or_insert(0) += self.mirror.queue_consumptions;
        *counts.entry(Rule::Term002).or_insert(0) += self.terminals.data_checked;
        *counts.entry(Rule::InvTerm1).or_insert(0) += self.terminals.states_checked;
        for (rule, n) in &self.invariant_counts {
            *counts.entry(*rule).or_insert(0) += n;
        }
        if let Some(malformed) = &self.malformed {
            malformed.tally(counts, skipped);
        }
        if let Some(resnapshots) = &self.resnapshots {
            *counts.entry(Rule::InvFold1).or_insert(0) += resnapshots.compared;
            skipped.merge(&resnapshots.skips);
        }
    }

    /// The connection ended at `at_ms` (by the host when `by_host`); the checks that wait
    /// for something judge what never came (see [`FrameChecker::on_end`]).
    pub fn ended(&mut self, at_ms: f64, timeout_ms: f64, by_host: bool) -> Vec<Violation> {
        let mut found = self.checker.on_end(at_ms, timeout_ms, by_host);
        if let Some(malformed) = self.malformed.as_mut() {
            found.extend(malformed.ended(at_ms, timeout_ms));
        }
        if let Some(resnapshots) = self.resnapshots.as_mut() {
            found.extend(resnapshots.ended());
        }
        found
    }

    /// Takes in a frame the harness (or an observed client) sent: it is invalid when sent
    /// deliberately so, or when the schemas (or the 1.0.0 URI schemes) find it so, and what
    /// answers or echoes an invalid frame is then judged by the rule it tests, not again by
    /// the always-on checks. An invalid frame not declared deliberate is a harness error (a
    /// client's problem, behind a proxy).
    fn check_sent(&mut self, index: usize, at_ms: f64, message: Node<'_>, schemas: &Schemas) {
        let (deliberate, problem) = match self.foreseen.remove(&index) {
            Some(problem) => (self.intended_invalid.contains(&index), problem),
            None => self.sent_verdict(index, message, schemas),
        };
        let invalid = deliberate || problem.is_some();
        self.checker
            .on_sent(message, at_ms, invalid, &self.client_id);
        let method = message.member("method").as_str();
        if method == Some("unsubscribe") {
            if let Some(channel) = message.member("params").member("channel").as_str() {
                self.mirror.forget(channel);
                self.tool_calls.forget(channel);
                self.terminals.forget(channel);
            }
        }
        if let (Some(problem), Some(method)) = (problem, method) {
            self.harness_errors.push(format!(
                "the harness sent an invalid {method} (not declared deliberate): {problem}"
            ));
        }
    }

    /// Whether frame `index` was declared sent invalid, and else what makes it invalid.
    fn sent_verdict(
        &mut self,
        index: usize,
        message: Node<'_>,
        schemas: &Schemas,
    ) -> (bool, Option<String>) {
        if self.intended_invalid.contains(&index) {
            return (true, None);
        }
        (false, self.sent_problem(message, schemas))
    }

    /// What is wrong with a frame sent, if anything: its params against the method's schema
    /// (a dispatch's by parts), or a channel it names in a legacy scheme.
    fn sent_problem(&mut self, message: Node<'_>, schemas: &Schemas) -> Option<String> {
        let method = message.member("method").as_str()?;
        let params = message.member("params");
        if let Some(channel) = params
            .member("channel")
            .as_str()
            .filter(|c| super::words::is_legacy(c))
        {
            return Some(format!(
                "/channel: {channel} is a legacy URI, not one of the 1.0.0 schemes"
            ));
        }
        if method == "dispatchAction" {
            if let Some(newer) = self.newer_than_negotiated(params.member("action"), schemas) {
                return Some(format!("/action/type: {newer}"));
            }
            if self.dispatch_is_valid(params, schemas) {
                return None;
            }
        }
        let def = schemas.map.params.get(method)?;
        match self.checker.validate_node(schemas, def, params) {
            Some(Err(errors)) => Some(
                errors
                    .first()
                    .map(|e| format!("{}: {}", e.instance_path, e.message))
                    .unwrap_or_default(),
            ),
            _ => None,
        }
    }

    /// Whether dispatchAction params are valid, decided by parts: `DispatchActionParams`
    /// is a string channel, an integer clientSeq and a `StateAction`, whose union picks the
    /// definition of the action's own type (any object with a string type of a type it
    /// does not list). The union tries all hundred-odd types in turn, and the harness checks
    /// every dispatch it sends; `false` leaves the verdict (and its wording) to the full
    /// schema.
    fn dispatch_is_valid(&mut self, params: Node<'_>, schemas: &Schemas) -> bool {
        let action = params.member("action");
        let Some(kind) = action.member("type").as_str() else {
            return false;
        };
        let parts = params.member("channel").is_string() && params.member("clientSeq").is_i64();
        parts
            && schemas
                .map
                .actions
                .get(kind)
                .is_none_or(|def| self.checker.validate_node(schemas, def, action) == Some(Ok(())))
    }

    /// Checks a frame the host sent; returns the rules it broke.
    pub fn received(&mut self, text: &str, schemas: &Schemas) -> Vec<Violation> {
        if text.starts_with("<binary") {
            return self.checker.on_binary();
        }
        if text.starts_with('<') && text.ends_with('>') {
            // Close or connection-lost markers.
            return Vec::new();
        }
        let mut tape = std::mem::take(&mut self.tape);
        let Received {
            message,
            says,
            mut found,
        } = self
            .checker
            .on_text(&mut tape, text, schemas, &self.client_id);
        if let Some(message) = message {
            if let Some(malformed) = self.malformed.as_mut() {
                found.extend(malformed.received(message, &self.client_id));
            }
            self.error_data(message, says, schemas, &mut found);
            if !says.echoes_invalid() {
                self.newer_actions(message, schemas, &mut found);
            }
            self.follow(message, says, &mut found);
        }
        self.tape = tape;
        found
    }

    /// INV-SCHEMA-1 for the negotiated version: notes the version an initialize result
    /// selects, and flags an action envelope whose type that version does not have (it was
    /// introduced later).
    fn newer_actions(&mut self, message: Node<'_>, schemas: &Schemas, found: &mut Vec<Violation>) {
        // Most frames are action envelopes: only a response (no method) can select a version.
        match message.member("method").as_str() {
            Some("action") => {}
            Some(_) => return,
            None => {
                let selected = message.member("result").member("protocolVersion");
                if let Some(version) = selected.as_str().and_then(parse_version) {
                    self.negotiated = Some(version);
                }
                return;
            }
        }
        let action = message.member("params").member("action");
        if let (Some(newer), Some((a, b, c))) =
            (self.newer_than_negotiated(action, schemas), self.negotiated)
        {
            found.push(Violation::new(
                Rule::InvSchema1,
                format!("only action types of the negotiated version {a}.{b}.{c}"),
                newer,
            ));
        }
    }

    /// The type of `action` and the version that introduced it, when that is later than
    /// the version negotiated on this connection (the action is not in its schema).
    fn newer_than_negotiated(&self, action: Node<'_>, schemas: &Schemas) -> Option<String> {
        let negotiated = self.negotiated?;
        let kind = action.member("type").as_str()?;
        let introduced = *schemas.map.introduced_in.get(kind)?;
        let show = |(a, b, c): Version| format!("{a}.{b}.{c}");
        (introduced > negotiated).then(|| {
            format!(
                "{kind}, introduced in {}, is not in the negotiated version {}",
                show(introduced),
                show(negotiated)
            )
        })
    }

    /// ERR-002 and ERR-003 on an error response with code -32007 or -32009. A -32009
    /// answering a request sent invalid may repeat that request in `data.request`: its
    /// shape is then checked, not its members' content, which are the client's words.
    fn error_data(
        &mut self,
        message: Node<'_>,
        says: Says,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let error = message.member("error");
        let (rule, verdict) = match error.member("code").as_i64() {
            Some(error_data::AUTH_REQUIRED) => (
                Rule::Err002,
                error_data::auth_required(error.member("data")),
            ),
            Some(error_data::PERMISSION_DENIED) => {
                let checker = &mut self.checker;
                let verdict = error_data::permission_denied(error.member("data"), |request| {
                    if says == Says::AnswerToInvalid {
                        checker.skip(Rule::Err003, ANSWERS_INVALID);
                        return Ok(());
                    }
                    let def = schemas.map.params.get("resourceRequest");
                    match def.and_then(|def| checker.validate_node(schemas, def, request)) {
                        Some(Err(errors)) => Err(errors.first().map_or_else(String::new, |e| {
                            format!("data.request{}: {}", e.instance_path, e.message)
                        })),
                        _ => Ok(()),
                    }
                });
                (Rule::Err003, verdict)
            }
            _ => return,
        };
        *self.invariant_counts.entry(rule).or_insert(0) += 1;
        if let Err(why) = verdict {
            let expected = if rule == Rule::Err002 {
                "-32007 data carries resources: protected-resource metadata with snake_case keys and a resource"
            } else {
                "-32009 data, when present, is {request?: resourceRequest params}"
            };
            found.push(Violation::new(rule, expected, why));
        }
    }

    /// The mirror, the echo check and the snapshot invariants over one parsed host message.
    /// The echo of an action dispatched invalid is not judged (its rule judges it): the
    /// mirror of its channel, when it was accepted, no longer knows the state until the
    /// channel's next snapshot. The result of a request sent invalid is not taken in.
    fn follow(&mut self, message: Node<'_>, says: Says, found: &mut Vec<Violation>) {
        if message.member("method").as_str() == Some("action") {
            let envelope = message.member("params");
            if says.echoes_invalid() {
                self.echo_skips.add(Rule::Dispatch001, ECHOES_INVALID, 1);
                let channel = envelope.member("channel").as_str().unwrap_or_default();
                // The state the host took this client's invalid dispatch in is wanted too
                // (the fuzzer judges which rule its acceptance breaks in that state).
                let origin = envelope.member("origin");
                let own = origin.member("clientId").as_str() == Some(self.client_id.as_str());
                if let Some(seq) = origin
                    .member("clientSeq")
                    .as_i64()
                    .filter(|seq| own && self.watched.remove(seq))
                {
                    let before = self.mirror.state(channel).unwrap_or(Value::Null);
                    self.prestates.insert(seq, before);
                }
                if envelope.member("rejectionReason").is_null() {
                    self.settle(envelope, found);
                    self.mirror.unknown(channel, ACCEPTED_INVALID);
                }
                return;
            }
            let (echo_violations, faithful) = self.check_echo(envelope);
            // Only a faithful echo (its clientSeq names this very action) marks the state.
            if let Some(seq) = faithful.filter(|seq| self.watched.remove(seq)) {
                let channel = envelope.member("channel").as_str().unwrap_or_default();
                let before = self.mirror.state(channel).unwrap_or(Value::Null);
                self.prestates.insert(seq, before);
            }
            found.extend(echo_violations);
            self.envelope(envelope, found);
            return;
        }
        let result = message.member("result");
        if !result.exists() || says == Says::AnswerToInvalid {
            return;
        }
        for snapshot in snapshots_in(result) {
            let resource = snapshot.member("resource").as_str().unwrap_or_default();
            let state = snapshot.member("state").to_value();
            let counts = &mut self.invariant_counts;
            found.extend(invariants::snapshot(resource, &state, &mut |rule, n| {
                *counts.entry(rule).or_insert(0) += n;
            }));
            if Kind::infer(resource, &state) == Some(Kind::Chat) {
                self.tool_calls.snapshot(resource, &state, counts, found);
            } else if super::terminals::is_terminal(resource, &state) {
                self.terminals.snapshot(resource, &state, found);
            }
            // Observed traffic has no checkpoints: a client subscribing again makes one.
            if let Some(resnapshots) = self.resnapshots.as_mut() {
                let from = snapshot.member("fromSeq").as_u64();
                found.extend(resnapshots.snapshot(&self.mirror, resource, &state, from));
            }
            self.mirror.load_snapshot(snapshot);
        }
        if result.member("type").as_str() == Some("replay") {
            for envelope in result.member("actions").elements() {
                self.envelope(envelope, found);
            }
        }
    }

    /// One envelope through the reducer mirror and, when accepted on a chat channel, the
    /// tool-call tracker.
    fn envelope(&mut self, envelope: Node<'_>, found: &mut Vec<Violation>) {
        found.extend(self.mirror.apply(envelope));
        if !envelope.member("rejectionReason").is_null() {
            return;
        }
        self.settle(envelope, found);
        self.terminals.action(envelope, found);
        if let Some(chat) = envelope
            .member("channel")
            .as_str()
            .filter(|channel| self.mirror.is_chat(channel))
        {
            let host = envelope.member("origin").is_null();
            let action = envelope.member("action");
            let counts = &mut self.invariant_counts;
            self.tool_calls.action(chat, action, host, counts, found);
        }
    }

    /// An accepted envelope settles its channel's waiting re-subscribe comparison, if any.
    fn settle(&mut self, envelope: Node<'_>, found: &mut Vec<Violation>) {
        if let (Some(resnapshots), Some(channel)) = (
            self.resnapshots.as_mut(),
            envelope.member("channel").as_str(),
        ) {
            let seq = envelope.member("serverSeq").as_u64();
            found.extend(resnapshots.envelope(channel, seq));
        }
    }

    /// DISPATCH-001: an envelope naming this client as origin echoes one of its dispatches,
    /// with that dispatch's clientSeq and action.
    /// Also returns the clientSeq of a faithful echo (one that carries the very action of
    /// that dispatch).
    fn check_echo(&mut self, envelope: Node<'_>) -> (Vec<Violation>, Option<i64>) {
        let origin = envelope.member("origin");
        if origin.member("clientId").as_str() != Some(self.client_id.as_str()) {
            return (Vec::new(), None);
        }
        *self.invariant_counts.entry(Rule::Dispatch001).or_insert(0) += 1;
        let seq = origin.member("clientSeq").as_i64().unwrap_or(-1);
        let echoed = envelope.member("action");
        let earlier = match self.dispatched.get(&seq) {
            Some(_) => None,
            None => self
                .earlier
                .as_ref()
                .and_then(|earlier| earlier.get(&self.client_id, seq)),
        };
        let violations = match self.dispatched.get(&seq).or(earlier.as_ref()) {
            // The echo of a dispatch of this connection (a faithful one has its pre-state);
            // one from the client's earlier connection is judged, with no pre-state here.
            Some(action) if echoed.equals(action) => {
                return (Vec::new(), earlier.is_none().then_some(seq));
            }
            Some(action) => vec![Violation::new(
                Rule::Dispatch001,
                format!(
                    "the echo of clientSeq {seq} carries the dispatched {}",
                    action["type"]
                ),
                format!(
                    "{} {}",
                    echoed.member("type").to_value(),
                    super::frame::clip(&echoed.to_value().to_string())
                ),
            )],
            None => vec![Violation::new(
                Rule::Dispatch001,
                format!(
                    "origin.clientSeq of one of this client's dispatches (1..={})",
                    self.dispatched.keys().max().copied().unwrap_or(0)
                ),
                format!(
                    "clientSeq {seq} on an echo of {}",
                    echoed.member("type").to_value()
                ),
            )],
        };
        (violations, None)
    }
}
