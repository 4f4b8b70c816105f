//! Always-on checks over the frames of one connection: JSON-RPC shape and correlation
//! (every request answered once, no response to anything else), host-to-client requests,
//! notification routing members, schema validity, and `serverSeq` order.

use super::rpc::{id_key, Answered, Correlation};
use super::words::{ClientWords, Says, ANSWERS_INVALID, CLIENT_CHANNEL, ECHOES_INVALID};
use super::{FastMap, FastSet, Rule, Skips, Violation};

use crate::tape::{Node, Tape};

mod scan;
mod schemas;
mod seqs;
mod tally;

pub use scan::clip;
use scan::{envelope_shape, expected_scheme, kind_of, present, scan_strings_and_status};
pub use schemas::{parse_version, SchemaMap, Schemas, Version};
use schemas::{validate, Validators};
pub use seqs::{ChannelSeqs, Delivery};
pub use tally::Counts;
use tally::Tally;

/// Per-connection history the frame checks need.
#[derive(Debug, Default)]
pub struct FrameChecker {
    validators: Validators,
    /// Requests and responses (TRANSPORT-003/004/012).
    rpc: Correlation,
    /// Reused for the id of every response (looked up, not stored).
    id_buffer: String,
    /// Per channel, the accepted envelopes received, newest last.
    last_seq: FastMap<String, ChannelSeqs>,
    from_seq: FastMap<String, u64>,
    /// Channels subscribed without asking for immediate delivery (`delivery.maxLatencyMs:
    /// 0`; `initialSubscriptions` and `reconnect` cannot ask): the host may hold their
    /// envelopes back, so ENV-002 leaves them out. The immediate ones still arrive in
    /// emission order relative to each other.
    coalescable: FastSet<String>,
    /// The highest accepted `serverSeq` among immediate subscriptions, and its channel.
    last_on_connection: Option<(u64, String)>,
    /// The highest `serverSeq` the connection this one resumed by `reconnect` had seen
    /// (what it asked the replay to start after); `None` when it resumed none.
    resumed_at: Option<u64>,
    /// What the client said that the host's frames may repeat (whose words a frame carries).
    pub words: ClientWords,
    /// What the frame rules could not judge, and why (besides the correlation's).
    skips: Skips,
    tally: Tally,
}

/// A host text frame as the frame checks took it: the parsed message (when it is JSON),
/// whose content it carries, and what it broke.
pub struct Received<'t> {
    pub message: Option<Node<'t>>,
    pub says: Says,
    pub found: Vec<Violation>,
}

/// The members of an action envelope the checks read, each looked up once.
struct Envelope<'a> {
    params: Node<'a>,
    channel: Node<'a>,
    action: Node<'a>,
    /// `action.type` (absent when missing or when `action` is not an object).
    kind: Node<'a>,
    server_seq: Node<'a>,
    origin: Node<'a>,
    rejection_reason: Node<'a>,
}

impl<'a> Envelope<'a> {
    fn of(params: Node<'a>) -> Envelope<'a> {
        let action = params.member("action");
        Envelope {
            params,
            channel: params.member("channel"),
            action,
            kind: action.member("type"),
            server_seq: params.member("serverSeq"),
            origin: params.member("origin"),
            rejection_reason: params.member("rejectionReason"),
        }
    }

    fn rejected(&self) -> bool {
        !self.rejection_reason.is_null()
    }
}

impl FrameChecker {
    /// How many things each frame rule looked at (rules that never ran are absent).
    pub fn counts(&self) -> impl Iterator<Item = (Rule, usize)> + '_ {
        Rule::ALWAYS_ON
            .iter()
            .zip(self.tally.0.iter())
            .filter_map(|(rule, n)| n.map(|n| (*rule, n)))
    }

    /// Notes that `rule` left one thing unjudged, and why.
    pub fn skip(&mut self, rule: Rule, why: &'static str) {
        self.skips.add(rule, why, 1);
    }

    /// What the rules could not judge, and why.
    pub fn skips(&self) -> Skips {
        let mut all = self.rpc.skips().clone();
        all.merge(&self.skips);
        all
    }

    /// Records a frame the harness (as client `client_id`) sent at `at_ms` (requests are
    /// remembered for correlation, answers to host requests for TRANSPORT-012); `invalid`
    /// when it was sent invalid (what answers or echoes it is then judged by the rule it
    /// tests).
    pub fn on_sent(&mut self, message: Node<'_>, at_ms: f64, invalid: bool, client_id: &str) {
        self.rpc.sent(message, at_ms, invalid);
        self.words.said(message, invalid, client_id);
        let method = message.member("method");
        let params = message.member("params");
        match method.as_str() {
            Some("unsubscribe") => {
                if let Some(channel) = params.member("channel").as_str() {
                    self.from_seq.remove(channel);
                    self.coalescable.remove(channel);
                }
            }
            Some("subscribe") => {
                if let Some(channel) = params.member("channel").as_str() {
                    let latency = params.member("delivery").member("maxLatencyMs");
                    if latency.as_u64() == Some(0) {
                        self.coalescable.remove(channel);
                    } else {
                        self.coalescable.insert(channel.to_owned());
                    }
                }
            }
            Some(method @ ("initialize" | "reconnect")) => {
                let list = if method == "initialize" {
                    "initialSubscriptions"
                } else {
                    "subscriptions"
                };
                for channel in params.member(list).elements().filter_map(|c| c.as_str()) {
                    self.coalescable.insert(channel.to_owned());
                }
            }
            _ => {}
        }
    }

    /// Records a frame the harness sent that it cannot parse (deliberately malformed
    /// input, or nested deeper than its parser goes).
    pub fn on_sent_unparseable(&mut self, text: &str) {
        self.rpc.sent_unparseable(text);
    }

    /// The connection ended at `at_ms` (closed by the host when `by_host`): what never
    /// came is judged (see [`Correlation::end`]).
    pub fn on_end(&mut self, at_ms: f64, timeout_ms: f64, by_host: bool) -> Vec<Violation> {
        let (found, judged) = self.rpc.end(at_ms, timeout_ms, by_host);
        self.tally.add(Rule::Transport003, judged);
        found
    }

    /// Checks a binary frame from the host.
    pub fn on_binary(&mut self) -> Vec<Violation> {
        self.tally.bump(Rule::Transport001);
        vec![Violation::new(
            Rule::Transport001,
            "text frames only",
            "a binary frame",
        )]
    }

    /// Checks one text frame from the host, parsed into `tape`, on the connection of client
    /// `client_id` (its echoes name it): the parsed message (when it is JSON), whose content
    /// it carries, and any violations.
    pub fn on_text<'t>(
        &mut self,
        tape: &'t mut Tape,
        text: &'t str,
        schemas: &Schemas,
        client_id: &str,
    ) -> Received<'t> {
        let mut found = Vec::new();
        self.tally.bump(Rule::Transport001);
        let message = match tape.parse(text) {
            Ok(message) => message,
            Err(error) => {
                // serde_json's wording, as reports have always shown it.
                let reason = serde_json::from_str::<serde::de::IgnoredAny>(text)
                    .err()
                    .map_or_else(|| error.to_string(), |e| e.to_string());
                found.push(Violation::new(
                    Rule::Transport001,
                    "one JSON object per text frame",
                    format!("not JSON ({reason}): {}", clip(text)),
                ));
                return Received {
                    message: None,
                    says: Says::Host,
                    found,
                };
            }
        };
        if !message.is_object() {
            found.push(Violation::new(
                Rule::Transport001,
                "one JSON object per text frame",
                format!("a JSON {}", kind_of(&message.to_value())),
            ));
            return Received {
                message: Some(message),
                says: Says::Host,
                found,
            };
        }
        self.tally.bump(Rule::Transport002);
        let jsonrpc = message.member("jsonrpc");
        if jsonrpc.as_str() != Some("2.0") {
            found.push(Violation::new(
                Rule::Transport002,
                "\"jsonrpc\": \"2.0\"",
                format!(
                    "jsonrpc = {}",
                    if jsonrpc.exists() {
                        jsonrpc.to_value().to_string()
                    } else {
                        "absent".into()
                    }
                ),
            ));
        }
        let method = message.member("method").as_str();
        let says = match method {
            Some("action") => self.words.envelope(message.member("params"), client_id),
            Some(_) => Says::Host,
            None => {
                let key = id_key(message.member("id"), std::mem::take(&mut self.id_buffer));
                let says = if self.rpc.asked_invalid(&key) {
                    Says::AnswerToInvalid
                } else {
                    Says::Host
                };
                self.id_buffer = key;
                says
            }
        };
        if says.echoes_invalid() {
            // The echoed action is the client's words, and so is the channel it chose.
            self.skips.add(Rule::Sub012, ECHOES_INVALID, 1);
        } else {
            scan_strings_and_status(message, &self.words, &mut found, &mut self.tally);
        }
        if let Some(method) = method {
            if message.member("id").exists() {
                self.tally.bump(Rule::Transport012);
                found.extend(self.rpc.host_request(method, message));
            } else {
                let params = message.member("params");
                self.check_notification(method, params, says, schemas, &mut found);
            }
        } else {
            self.check_response(message, says, schemas, &mut found);
        }
        Received {
            message: Some(message),
            says,
            found,
        }
    }

    fn check_response(
        &mut self,
        message: Node<'_>,
        says: Says,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let key = id_key(message.member("id"), std::mem::take(&mut self.id_buffer));
        self.check_answer(message, &key, says, schemas, found);
        self.id_buffer = key;
    }

    /// The form of a response (TRANSPORT-005), what it answers (TRANSPORT-003/004) and its
    /// result's schema. The result of a request sent invalid is the content the rule that
    /// request tests judges: not judged again here.
    fn check_answer(
        &mut self,
        message: Node<'_>,
        key: &str,
        says: Says,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let result = message.member("result");
        let error = message.member("error");
        let (has_result, has_error) = (result.exists(), error.exists());
        self.tally.bump(Rule::Transport005);
        if has_result == has_error {
            found.push(Violation::new(
                Rule::Transport005,
                "exactly one of result or error",
                format!(
                    "result {}, error {}",
                    present(has_result),
                    present(has_error)
                ),
            ));
        } else if has_error
            && (!error.member("code").is_i64() || !error.member("message").is_string())
        {
            found.push(Violation::new(
                Rule::Transport005,
                "error with an integer code and a string message",
                clip(&error.to_value().to_string()),
            ));
        }
        self.tally.bump(Rule::Transport003);
        self.tally.bump(Rule::Transport004);
        let method = match self.rpc.answer(key, has_error) {
            Answered::Request(method) => method,
            Answered::Again(violation) => {
                found.push(violation);
                return;
            }
            Answered::Nothing(violation) => {
                found.extend(violation);
                return;
            }
        };
        if has_result && !has_error && says == Says::AnswerToInvalid {
            self.skips.add(Rule::InvSchema1, ANSWERS_INVALID, 1);
        } else if has_result && !has_error {
            self.record_snapshots(result);
            if let Some(def) = schemas.map.results.get(&method) {
                validate(
                    schemas,
                    def,
                    result,
                    format_args!("{method} result"),
                    found,
                    self,
                );
            }
        }
    }

    /// Remembers `fromSeq` of every snapshot in a result. A snapshot of an initialize (or
    /// reconnect) result whose `fromSeq` is past the result's `serverSeq` breaks INIT-004, not
    /// SUB-002: its `fromSeq` counts as that `serverSeq`, so the envelopes in between are not
    /// charged to SUB-002 for a number the snapshot should never have carried.
    fn record_snapshots(&mut self, result: Node<'_>) {
        let server_seq = result.member("serverSeq").as_u64();
        for snapshot in snapshots_in(result) {
            if let (Some(resource), Some(from)) = (
                snapshot.member("resource").as_str(),
                snapshot.member("fromSeq").as_u64(),
            ) {
                let from = server_seq.map_or(from, |seq| from.min(seq));
                self.from_seq.insert(resource.to_owned(), from);
            }
        }
    }

    fn check_notification(
        &mut self,
        method: &str,
        params: Node<'_>,
        says: Says,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let envelope = Envelope::of(params);
        // The echo of an action dispatched invalid carries the client's words back (its
        // action, and the channel it named): the host vouches for the members it added, the
        // rest is the rule's the dispatch tests.
        let echoes_invalid = says.echoes_invalid();
        if echoes_invalid {
            self.skips.add(Rule::Transport011, ECHOES_INVALID, 1);
        } else {
            self.tally.bump(Rule::Transport011);
            if !envelope.channel.is_string() {
                found.push(Violation::new(
                    Rule::Transport011,
                    "params.channel (string)",
                    format!("{method} without a string channel"),
                ));
            }
        }
        let is_action = method == "action";
        // A rejected echo carries the client's own action back, valid or not: the host only
        // vouches for the members it added.
        let rejected = is_action && envelope.rejected();
        if is_action && !rejected {
            // The envelope's own members directly, the action against its own type's
            // definition: the same verdict as the ActionEnvelope schema (whose action union
            // tries every type in turn), at a fraction of the cost on every envelope.
            if let Some(problem) = envelope_shape(&envelope, !echoes_invalid) {
                found.push(Violation::new(
                    Rule::InvSchema1,
                    "action params valid against ActionEnvelope",
                    problem,
                ));
            }
            let kind = envelope.kind.as_str().unwrap_or_default();
            match schemas.map.actions.get(kind) {
                _ if echoes_invalid => self.skips.add(Rule::InvSchema1, ECHOES_INVALID, 1),
                Some(def) => validate(
                    schemas,
                    def,
                    envelope.action,
                    format_args!("{kind} action"),
                    found,
                    self,
                ),
                // An action type this version does not know is accepted (forward compatibility).
                None => self.tally.bump(Rule::InvSchema1),
            }
        } else if let Some(def) = schemas.map.notifications.get(method).filter(|_| !rejected) {
            validate(
                schemas,
                def,
                params,
                format_args!("{method} params"),
                found,
                self,
            );
        }
        if is_action {
            self.check_envelope(&envelope, says, schemas, found);
        }
    }

    fn check_envelope(
        &mut self,
        envelope: &Envelope<'_>,
        says: Says,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let channel = envelope.channel.as_str().unwrap_or_default();
        let action_type = envelope.kind.as_str().unwrap_or_default();
        match expected_scheme(action_type) {
            Some(prefix) if !channel.starts_with(prefix) => {
                // A channel the client chose (the one it dispatched to, or one it spelled
                // its own way) is the client's: the host only answers on it.
                let clients = matches!(
                    says,
                    Says::Echo {
                        same_channel: true,
                        ..
                    }
                ) || self.words.spelled(channel);
                if clients {
                    self.skips.add(Rule::Env004, CLIENT_CHANNEL, 1);
                } else {
                    self.tally.bump(Rule::Env004);
                    found.push(Violation::new(
                        Rule::Env004,
                        format!("{action_type} on a {prefix} channel"),
                        format!("channel {channel}"),
                    ));
                }
            }
            _ => self.tally.bump(Rule::Env004),
        }
        let rejected = envelope.rejected();
        self.tally.bump(Rule::Env005);
        let host_only = schemas.map.client_dispatchable.get(action_type) == Some(&false);
        if host_only && !rejected && !envelope.origin.is_null() {
            let mut violation = Violation::new(
                Rule::Env005,
                format!("host-originated {action_type} without origin"),
                format!("origin {}", envelope.origin.to_value()),
            );
            if let (Some(client), Some(seq)) = (
                envelope.origin.member("clientId").as_str(),
                envelope.origin.member("clientSeq").as_i64(),
            ) {
                violation.origin = Some((client.to_owned(), seq));
            }
            found.push(violation);
        }
        if rejected {
            return;
        }
        let Some(seq) = envelope.server_seq.as_u64() else {
            return;
        };
        self.tally.bump(Rule::Env003);
        let seqs = self.last_seq.get_mut(channel);
        let last = seqs.as_deref().and_then(ChannelSeqs::last);
        let in_channel_order = last.is_none_or(|(last, _)| seq > last);
        if let (false, Some((last, _))) = (in_channel_order, last) {
            found.push(Violation::new(
                Rule::Env003,
                format!("serverSeq > {last} (the previous envelope on {channel})"),
                format!("serverSeq {seq} for {action_type}"),
            ));
        }
        let dispatched = envelope.origin.is_object();
        match seqs {
            Some(seqs) if in_channel_order => seqs.push(seq, dispatched),
            Some(_) => {}
            None => {
                let mut seqs = ChannelSeqs::default();
                seqs.push(seq, dispatched);
                self.last_seq.insert(channel.to_owned(), seqs);
            }
        }
        if in_channel_order {
            self.check_connection_order(seq, channel, action_type, found);
        }
        if let Some(from) = self.from_seq.get(channel) {
            // Only envelopes of a channel whose snapshot was seen can be compared with it.
            self.tally.bump(Rule::Sub002);
            if seq <= *from {
                found.push(Violation::new(
                    Rule::Sub002,
                    format!("serverSeq > snapshot fromSeq {from} on {channel}"),
                    format!("serverSeq {seq} for {action_type}"),
                ));
            }
        }
    }

    /// ENV-002: accepted envelopes of the subscriptions that asked for immediate delivery
    /// arrive in `serverSeq` order across channels (one counter per host). An envelope out
    /// of order on its own channel is ENV-003's alone.
    fn check_connection_order(
        &mut self,
        seq: u64,
        channel: &str,
        action_type: &str,
        found: &mut Vec<Violation>,
    ) {
        if self.coalescable.contains(channel) {
            return;
        }
        self.tally.bump(Rule::Env002);
        match &mut self.last_on_connection {
            Some((last, last_channel)) if seq <= *last => {
                found.push(Violation::new(
                    Rule::Env002,
                    format!("serverSeq > {last} (the previous accepted envelope on this connection, on {last_channel})"),
                    format!("serverSeq {seq} for {action_type} on {channel}"),
                ));
            }
            Some((last, last_channel)) => {
                *last = seq;
                if last_channel != channel {
                    last_channel.clear();
                    last_channel.push_str(channel);
                }
            }
            None => self.last_on_connection = Some((seq, channel.to_owned())),
        }
    }

    /// Takes over the sequence history of the connection this one resumes (reconnect): the
    /// per-channel order continues across the new socket.
    pub fn resume_from(&mut self, old: &FrameChecker) {
        self.last_seq = old.last_seq.clone();
        self.from_seq = old.from_seq.clone();
        self.resumed_at = Some(old.highest_seq());
        self.words.resume_from(&old.words);
    }

    /// Highest accepted `serverSeq` seen on any channel.
    pub fn highest_seq(&self) -> u64 {
        self.last_seq
            .values()
            .filter_map(|seqs| seqs.last().map(|(seq, _)| seq))
            .max()
            .unwrap_or(0)
    }

    /// What this connection holds of `channel` ([`Delivery`]).
    pub fn delivery(&self, channel: &str) -> Delivery<'_> {
        static NONE: ChannelSeqs = ChannelSeqs::EMPTY;
        Delivery {
            from: self.from_seq.get(channel).copied(),
            seqs: self.last_seq.get(channel).unwrap_or(&NONE),
            coalescable: self.coalescable.contains(channel),
        }
    }

    /// The highest `serverSeq` seen before this connection resumed another by `reconnect`
    /// (its history goes on from the old one's); `None` when it resumed none.
    pub fn resumed_at(&self) -> Option<u64> {
        self.resumed_at
    }

    /// The channels this connection is subscribed to with a snapshot seen.
    pub fn subscribed(&self) -> impl Iterator<Item = &str> {
        self.from_seq.keys().map(String::as_str)
    }
}

/// Every snapshot a result carries (`snapshot`, `snapshots[]`).
pub fn snapshots_in(result: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    let single = Some(result.member("snapshot")).filter(Node::is_object);
    single
        .into_iter()
        .chain(result.member("snapshots").elements())
}

#[cfg(test)]
mod tests;
