//! Always-on checks over the frames of one connection: JSON-RPC shape and correlation
//! (every request answered once, no response to anything else), host-to-client requests,
//! notification routing members, schema validity, and `serverSeq` order.

use std::sync::Arc;

use serde_json::Value;

use super::rpc::{id_key, Answered, Correlation};
use super::{FastMap, FastSet, Skips, Violation};
use jsonschema::Validator;

use crate::schema::{check, unusable, SchemaSet, SchemaViolation};
use crate::tape::{Node, Scanned, Tape, TapeJson};

/// Which schema definition validates what, from the schema index.
#[derive(Debug, Clone, Default)]
pub struct SchemaMap {
    /// method → def of its result.
    pub results: FastMap<String, String>,
    /// host notification method → def of its params.
    pub notifications: FastMap<String, String>,
    /// method → def of its params (requests and client notifications).
    pub params: FastMap<String, String>,
    /// action type → whether a client may dispatch it.
    pub client_dispatchable: FastMap<String, bool>,
    /// action type → def of that action.
    pub actions: FastMap<String, String>,
    /// action type → the protocol version that introduced it.
    pub introduced_in: FastMap<String, Version>,
}

/// A protocol version, `MAJOR.MINOR.PATCH`, ordered.
pub type Version = (u64, u64, u64);

/// Reads a strict `MAJOR.MINOR.PATCH` version: three decimal numbers without leading zeros,
/// no pre-release or build suffix.
pub fn parse_version(text: &str) -> Option<Version> {
    let number = |part: &str| {
        let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        let canonical = part.len() == 1 || !part.starts_with('0');
        (digits && canonical)
            .then(|| part.parse::<u64>().ok())
            .flatten()
    };
    let mut parts = text.split('.').map(number);
    let version = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(version)
}

impl SchemaMap {
    /// Reads `index.json` as written by `ahpspec-schemagen`.
    pub fn from_index(index: &Value) -> SchemaMap {
        let def = |entry: &Value| entry.get("def").and_then(Value::as_str).map(str::to_owned);
        let mut map = SchemaMap::default();
        for (method, entry) in index["commands"].as_object().into_iter().flatten() {
            if let Some(result) = def(&entry["result"]) {
                map.results.insert(method.clone(), result);
            }
            if let Some(params) = def(&entry["params"]) {
                map.params.insert(method.clone(), params);
            }
        }
        for (method, entry) in index["clientNotifications"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if let Some(params) = def(&entry["params"]) {
                map.params.insert(method.clone(), params);
            }
        }
        for (method, entry) in index["hostNotifications"].as_object().into_iter().flatten() {
            if let Some(params) = def(&entry["params"]) {
                map.notifications.insert(method.clone(), params);
            }
        }
        for (kind, entry) in index["actions"].as_object().into_iter().flatten() {
            let dispatchable = entry["clientDispatchable"].as_bool().unwrap_or(false);
            map.client_dispatchable.insert(kind.clone(), dispatchable);
            if let Some(action) = def(entry) {
                map.actions.insert(kind.clone(), action);
            }
            if let Some(version) = entry["introducedIn"].as_str().and_then(parse_version) {
                map.introduced_in.insert(kind.clone(), version);
            }
        }
        map
    }

    /// The embedded 1.0.0 index.
    pub fn embedded() -> SchemaMap {
        serde_json::from_str(crate::schema::EMBEDDED_INDEX)
            .map(|index: Value| SchemaMap::from_index(&index))
            .unwrap_or_default()
    }
}

/// Schemas plus the map of which def applies where.
#[derive(Clone)]
pub struct Schemas {
    pub set: Arc<SchemaSet>,
    pub map: Arc<SchemaMap>,
}

impl Schemas {
    /// The schemas in `dir` (a `--schemas` directory), or the built-in ones.
    pub fn load(dir: Option<&std::path::Path>) -> Result<Schemas, crate::schema::SchemaError> {
        let set = match dir {
            Some(dir) => crate::schema::SchemaSet::from_dir(dir)?,
            None => crate::schema::SchemaSet::embedded()?,
        };
        Ok(Schemas {
            set: Arc::new(set),
            map: Arc::new(SchemaMap::embedded()),
        })
    }
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schemas")
    }
}

/// How many things each rule looked at.
pub type Counts = FastMap<&'static str, usize>;

/// The rules the frame checks count, one slot each in [`Tally`].
#[derive(Debug, Clone, Copy)]
enum Rule {
    Transport001,
    Transport002,
    Transport003,
    Transport004,
    Transport005,
    Transport011,
    Transport012,
    Sub002,
    Sub012,
    Status001,
    InvSchema1,
    Env002,
    Env003,
    Env004,
    Env005,
}

impl Rule {
    const ALL: [Rule; 15] = [
        Rule::Transport001,
        Rule::Transport002,
        Rule::Transport003,
        Rule::Transport004,
        Rule::Transport005,
        Rule::Transport011,
        Rule::Transport012,
        Rule::Sub002,
        Rule::Sub012,
        Rule::Status001,
        Rule::InvSchema1,
        Rule::Env002,
        Rule::Env003,
        Rule::Env004,
        Rule::Env005,
    ];

    fn id(self) -> &'static str {
        match self {
            Rule::Transport001 => "TRANSPORT-001",
            Rule::Transport002 => "TRANSPORT-002",
            Rule::Transport003 => "TRANSPORT-003",
            Rule::Transport004 => "TRANSPORT-004",
            Rule::Transport005 => "TRANSPORT-005",
            Rule::Transport011 => "TRANSPORT-011",
            Rule::Transport012 => "TRANSPORT-012",
            Rule::Sub002 => "SUB-002",
            Rule::Sub012 => "SUB-012",
            Rule::Status001 => "STATUS-001",
            Rule::InvSchema1 => "INV-SCHEMA-1",
            Rule::Env002 => "ENV-002",
            Rule::Env003 => "ENV-003",
            Rule::Env004 => "ENV-004",
            Rule::Env005 => "ENV-005",
        }
    }
}

/// How many things each frame rule looked at: a fixed slot per rule instead of a map entry,
/// because a dozen counters move on every frame. `None` = the rule never ran (it then has
/// no entry in [`FrameChecker::counts`], as a map would have had none); `Some(0)` = it ran
/// and looked at nothing (STATUS-001 on a frame without a status member).
#[derive(Debug, Default, Clone)]
struct Tally([Option<usize>; Rule::ALL.len()]);

impl Tally {
    fn add(&mut self, rule: Rule, n: usize) {
        let slot = &mut self.0[rule as usize];
        *slot = Some(slot.unwrap_or(0) + n);
    }

    fn bump(&mut self, rule: Rule) {
        self.add(rule, 1);
    }
}

/// Tape validators by def name, fetched from the shared set once per checker (a lookup
/// there takes a lock and walks a tree of def names). `None`: no such def; an error: the
/// def does not compile.
#[derive(Default)]
struct Validators(FastMap<String, Option<Fetched>>);

/// A def's tape validator, or why it cannot validate.
type Fetched = Result<Arc<Validator<TapeJson>>, SchemaViolation>;

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} validators", self.0.len())
    }
}

/// Per-connection history the frame checks need.
#[derive(Debug, Default)]
pub struct FrameChecker {
    validators: Validators,
    /// Requests and responses (TRANSPORT-003/004/012).
    rpc: Correlation,
    /// Reused for the id of every response (looked up, not stored).
    id_buffer: String,
    last_seq: FastMap<String, u64>,
    from_seq: FastMap<String, u64>,
    /// Channels subscribed without asking for immediate delivery (`delivery.maxLatencyMs:
    /// 0`; `initialSubscriptions` and `reconnect` cannot ask): the host may hold their
    /// envelopes back, so ENV-002 leaves them out. The immediate ones still arrive in
    /// emission order relative to each other.
    coalescable: FastSet<String>,
    /// The highest accepted `serverSeq` among immediate subscriptions, and its channel.
    last_on_connection: Option<(u64, String)>,
    tally: Tally,
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
    pub fn counts(&self) -> impl Iterator<Item = (&'static str, usize)> + '_ {
        Rule::ALL
            .iter()
            .zip(self.tally.0.iter())
            .filter_map(|(rule, n)| n.map(|n| (rule.id(), n)))
    }

    /// What the rules could not judge, and why.
    pub fn skips(&self) -> &Skips {
        self.rpc.skips()
    }

    /// Records a frame the harness sent at `at_ms` (requests are remembered for
    /// correlation, answers to host requests for TRANSPORT-012).
    pub fn on_sent(&mut self, message: Node<'_>, at_ms: f64) {
        self.rpc.sent(message, at_ms);
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

    /// Records a frame the harness sent that is not JSON (deliberately malformed input).
    pub fn on_sent_unparseable(&mut self) {
        self.rpc.sent_unparseable();
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
            "TRANSPORT-001",
            "text frames only",
            "a binary frame",
        )]
    }

    /// Checks one text frame from the host, parsed into `tape`; returns the parsed message
    /// (when it is JSON) and any violations. `method` of the answered request is returned
    /// alongside for responses.
    pub fn on_text<'t>(
        &mut self,
        tape: &'t mut Tape,
        text: &'t str,
        schemas: &Schemas,
    ) -> (Option<Node<'t>>, Option<String>, Vec<Violation>) {
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
                    "TRANSPORT-001",
                    "one JSON object per text frame",
                    format!("not JSON ({reason}): {}", clip(text)),
                ));
                return (None, None, found);
            }
        };
        if !message.is_object() {
            found.push(Violation::new(
                "TRANSPORT-001",
                "one JSON object per text frame",
                format!("a JSON {}", kind_of(&message.to_value())),
            ));
            return (Some(message), None, found);
        }
        self.tally.bump(Rule::Transport002);
        let jsonrpc = message.member("jsonrpc");
        if jsonrpc.as_str() != Some("2.0") {
            found.push(Violation::new(
                "TRANSPORT-002",
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
        scan_strings_and_status(message, &mut found, &mut self.tally);
        let mut answered_method = None;
        if let Some(method) = message.member("method").as_str() {
            if message.member("id").exists() {
                self.tally.bump(Rule::Transport012);
                found.extend(self.rpc.host_request(method, message));
            } else {
                let params = message.member("params");
                self.check_notification(method, params, schemas, &mut found);
            }
        } else {
            answered_method = self.check_response(message, schemas, &mut found);
        }
        (Some(message), answered_method, found)
    }

    fn check_response(
        &mut self,
        message: Node<'_>,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) -> Option<String> {
        let key = id_key(message.member("id"), std::mem::take(&mut self.id_buffer));
        let outcome = self.check_answer(message, &key, schemas, found);
        self.id_buffer = key;
        outcome
    }

    fn check_answer(
        &mut self,
        message: Node<'_>,
        key: &str,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) -> Option<String> {
        let result = message.member("result");
        let error = message.member("error");
        let (has_result, has_error) = (result.exists(), error.exists());
        self.tally.bump(Rule::Transport005);
        if has_result == has_error {
            found.push(Violation::new(
                "TRANSPORT-005",
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
                "TRANSPORT-005",
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
                return None;
            }
            Answered::Nothing(violation) => {
                found.extend(violation);
                return None;
            }
        };
        if has_result && !has_error {
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
        Some(method)
    }

    /// Remembers `fromSeq` of every snapshot in a result.
    fn record_snapshots(&mut self, result: Node<'_>) {
        for snapshot in snapshots_in(result) {
            if let (Some(resource), Some(from)) = (
                snapshot.member("resource").as_str(),
                snapshot.member("fromSeq").as_u64(),
            ) {
                self.from_seq.insert(resource.to_owned(), from);
            }
        }
    }

    fn check_notification(
        &mut self,
        method: &str,
        params: Node<'_>,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        self.tally.bump(Rule::Transport011);
        let envelope = Envelope::of(params);
        if !envelope.channel.is_string() {
            found.push(Violation::new(
                "TRANSPORT-011",
                "params.channel (string)",
                format!("{method} without a string channel"),
            ));
        }
        let is_action = method == "action";
        // A rejected echo carries the client's own action back, valid or not: the host only
        // vouches for the members it added.
        let rejected = is_action && envelope.rejected();
        if is_action && !rejected {
            // The envelope's own members directly, the action against its own type's
            // definition: the same verdict as the ActionEnvelope schema (whose action union
            // tries every type in turn), at a fraction of the cost on every envelope.
            if let Some(problem) = envelope_shape(&envelope) {
                found.push(Violation::new(
                    "INV-SCHEMA-1",
                    "action params valid against ActionEnvelope",
                    problem,
                ));
            }
            let kind = envelope.kind.as_str().unwrap_or_default();
            match schemas.map.actions.get(kind) {
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
            self.check_envelope(&envelope, schemas, found);
        }
    }

    fn check_envelope(
        &mut self,
        envelope: &Envelope<'_>,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let channel = envelope.channel.as_str().unwrap_or_default();
        let action_type = envelope.kind.as_str().unwrap_or_default();
        self.tally.bump(Rule::Env004);
        if let Some(prefix) = expected_scheme(action_type) {
            if !channel.starts_with(prefix) {
                found.push(Violation::new(
                    "ENV-004",
                    format!("{action_type} on a {prefix} channel"),
                    format!("channel {channel}"),
                ));
            }
        }
        let rejected = envelope.rejected();
        self.tally.bump(Rule::Env005);
        let host_only = schemas.map.client_dispatchable.get(action_type) == Some(&false);
        if host_only && !rejected && !envelope.origin.is_null() {
            let mut violation = Violation::new(
                "ENV-005",
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
        let last = self.last_seq.get_mut(channel);
        let in_channel_order = last.as_deref().is_none_or(|last| seq > *last);
        if let (false, Some(last)) = (in_channel_order, last.as_deref()) {
            found.push(Violation::new(
                "ENV-003",
                format!("serverSeq > {last} (the previous envelope on {channel})"),
                format!("serverSeq {seq} for {action_type}"),
            ));
        }
        match last {
            Some(last) => *last = seq.max(*last),
            None => {
                self.last_seq.insert(channel.to_owned(), seq);
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
                    "SUB-002",
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
                    "ENV-002",
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

    /// Validates `instance` against `def` with this checker's validators (fetched from the
    /// shared set on first use); `None` when no schema document defines `def`.
    pub fn validate_node(
        &mut self,
        schemas: &Schemas,
        def: &str,
        instance: Node<'_>,
    ) -> Option<Result<(), Vec<SchemaViolation>>> {
        let validator = match self.validators.0.get(def) {
            Some(known) => known,
            None => {
                let fetched = schemas.set.has_def(def).then(|| {
                    schemas
                        .set
                        .tape_validator(def)
                        .map_err(|e| unusable(def, &e))
                });
                self.validators.0.entry(def.to_owned()).or_insert(fetched)
            }
        };
        Some(match validator.as_ref()? {
            Ok(validator) => check(validator, instance),
            Err(unusable) => Err(vec![unusable.clone()]),
        })
    }

    /// Takes over the sequence history of the connection this one resumes (reconnect): the
    /// per-channel order continues across the new socket.
    pub fn resume_from(&mut self, old: &FrameChecker) {
        self.last_seq = old.last_seq.clone();
        self.from_seq = old.from_seq.clone();
    }

    /// Highest accepted `serverSeq` seen on any channel.
    pub fn highest_seq(&self) -> u64 {
        self.last_seq.values().copied().max().unwrap_or(0)
    }
}

/// Every snapshot a result carries (`snapshot`, `snapshots[]`).
pub fn snapshots_in(result: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    let single = Some(result.member("snapshot")).filter(Node::is_object);
    single
        .into_iter()
        .chain(result.member("snapshots").elements())
}

/// Validates `instance` against `def`; `what` names it in a violation (formatted only
/// then: this runs on every envelope).
fn validate(
    schemas: &Schemas,
    def: &str,
    instance: Node<'_>,
    what: std::fmt::Arguments<'_>,
    found: &mut Vec<Violation>,
    checker: &mut FrameChecker,
) {
    checker.tally.bump(Rule::InvSchema1);
    let Some(outcome) = checker.validate_node(schemas, def, instance) else {
        return;
    };
    if let Err(errors) = outcome {
        let listed: Vec<String> = errors
            .iter()
            .take(3)
            .map(|e| format!("{}: {}", pointer_or_root(&e.instance_path), e.message))
            .collect();
        found.push(Violation::new(
            "INV-SCHEMA-1",
            format!("{what} valid against {def}"),
            listed.join("; "),
        ));
    }
}

/// What is wrong with an envelope's own members (`channel`, `action.type`, `serverSeq`,
/// `origin`, `rejectionReason`), if anything.
fn envelope_shape(envelope: &Envelope<'_>) -> Option<String> {
    if !envelope.params.is_object() {
        return Some("(root): not an object".into());
    }
    if !envelope.channel.is_string() {
        return Some("/channel: a string is required".into());
    }
    if !envelope.action.is_object() || !envelope.kind.is_string() {
        return Some("/action: an object with a string type is required".into());
    }
    if envelope.server_seq.as_u64().is_none() {
        return Some("/serverSeq: a non-negative integer is required".into());
    }
    let origin = envelope.origin;
    let origin_ok = origin.is_null()
        || (origin.member("clientId").is_string() && origin.member("clientSeq").is_i64());
    if !origin_ok {
        return Some("/origin: {clientId: string, clientSeq: integer} or absent".into());
    }
    let reason = envelope.rejection_reason;
    if !reason.is_null() && !reason.is_string() {
        return Some("/rejectionReason: a string or absent".into());
    }
    None
}

fn pointer_or_root(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

/// The channel scheme an action type's prefix belongs to.
fn expected_scheme(action_type: &str) -> Option<&'static str> {
    match action_type.split('/').next()? {
        "root" => Some("ahp-root://"),
        "session" => Some("ahp-session:"),
        "chat" => Some("ahp-chat:"),
        "terminal" => Some("ahp-terminal:"),
        "changeset" => Some("ahp-changeset:"),
        "resourceWatch" => Some("ahp-resource-watch:"),
        "canvas" => Some("ahp-canvas:"),
        "automation" => Some("ahp-automations://"),
        "automationRun" => Some("ahp-automation-run:"),
        _ => None,
    }
}

const LEGACY_PREFIXES: &[&str] = &["agenthost:", "copilot:"];

/// SUB-012 (no legacy URIs anywhere in a host message) and STATUS-001 (every integer
/// `status` member holds exactly one activity value): both look at every member of every
/// frame, which on a tape is a pass over its entries; a path is built only for a violation.
fn scan_strings_and_status(message: Node<'_>, found: &mut Vec<Violation>, tally: &mut Tally) {
    // SUB-012's violation goes before STATUS-001's ones.
    let first_status = found.len();
    let mut legacy = None;
    let mut statuses = 0;
    for item in message.scan("status") {
        match item {
            // First bytes before prefixes: this looks at every string of every frame.
            Scanned::String { text, .. }
                if legacy.is_none()
                    && matches!(text.as_bytes().first(), Some(b'a' | b'c'))
                    && LEGACY_PREFIXES.iter().any(|p| text.starts_with(p)) =>
            {
                legacy = Some(text);
            }
            Scanned::Member { value } => {
                let Some(status) = value.as_u64() else {
                    continue;
                };
                statuses += 1;
                if ![1, 2, 8, 24].contains(&(status & 31)) {
                    found.push(Violation::new(
                        "STATUS-001",
                        "status & 31 ∈ {1, 2, 8, 24}",
                        format!("{} = {status}", message.pointer_to(value.index())),
                    ));
                }
            }
            _ => {}
        }
    }
    tally.bump(Rule::Sub012);
    if let Some(uri) = legacy {
        found.insert(
            first_status,
            Violation::new(
                "SUB-012",
                "1.0.0 channel URIs (ahp-…)",
                format!("legacy URI {uri}"),
            ),
        );
    }
    tally.add(Rule::Status001, statuses);
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn present(yes: bool) -> &'static str {
    if yes {
        "present"
    } else {
        "absent"
    }
}

/// Shortens long text for messages.
pub fn clip(text: &str) -> String {
    const MAX: usize = 300;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemas() -> Schemas {
        Schemas {
            set: Arc::new(SchemaSet::embedded().expect("embedded schemas compile")),
            map: Arc::new(SchemaMap::embedded()),
        }
    }

    fn rules(checker: &mut FrameChecker, text: &str) -> Vec<&'static str> {
        checker
            .on_text(&mut Tape::default(), text, &schemas())
            .2
            .iter()
            .map(|v| v.rule)
            .collect()
    }

    fn sent(checker: &mut FrameChecker, text: &str, at_ms: f64) {
        let mut tape = Tape::default();
        match tape.parse(text) {
            Ok(message) => checker.on_sent(message, at_ms),
            Err(_) => checker.on_sent_unparseable(),
        }
    }

    fn count(checker: &FrameChecker, rule: &str) -> usize {
        checker
            .counts()
            .find(|(id, _)| *id == rule)
            .map_or(0, |(_, n)| n)
    }

    #[test]
    fn sub_002_counts_only_envelopes_of_a_channel_whose_snapshot_was_seen() {
        let mut checker = FrameChecker::default();
        let envelope = |seq: u64| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"ahp-session:/s","serverSeq":{seq},"action":{{"type":"session/titleChanged","title":"t"}}}}}}"#
            )
        };
        assert!(rules(&mut checker, &envelope(1)).is_empty());
        assert_eq!(count(&checker, "SUB-002"), 0, "no snapshot to compare with");
        sent(
            &mut checker,
            r#"{"jsonrpc":"2.0","id":7,"method":"subscribe","params":{"channel":"ahp-session:/s"}}"#,
            0.0,
        );
        let snapshot = r#"{"jsonrpc":"2.0","id":7,"result":{"snapshot":{"resource":"ahp-session:/s","fromSeq":4,"state":{}}}}"#;
        rules(&mut checker, snapshot);
        assert!(rules(&mut checker, &envelope(5)).is_empty());
        assert_eq!(count(&checker, "SUB-002"), 1);
    }

    #[test]
    fn envelopes_are_checked_member_by_member_and_by_action_type() {
        let mut checker = FrameChecker::default();
        let good = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":3,"action":{"type":"session/titleChanged","title":"t"}}}"#;
        assert!(rules(&mut checker, good).is_empty());
        let missing_title = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":4,"action":{"type":"session/titleChanged"}}}"#;
        assert_eq!(rules(&mut checker, missing_title), vec!["INV-SCHEMA-1"]);
        let bad_seq = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":-1,"action":{"type":"session/titleChanged","title":"t"}}}"#;
        assert!(rules(&mut checker, bad_seq).contains(&"INV-SCHEMA-1"));
        let future = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":5,"action":{"type":"session/fromTheFuture","x":1}}}"#;
        assert!(
            rules(&mut checker, future).is_empty(),
            "unknown action types are accepted"
        );
    }
}
