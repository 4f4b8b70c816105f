//! Always-on checks over the frames of one connection: JSON-RPC shape and correlation,
//! notification routing members, schema validity, and `serverSeq` order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::Violation;
use crate::schema::SchemaSet;

/// Which schema definition validates what, from the schema index.
#[derive(Debug, Clone, Default)]
pub struct SchemaMap {
    /// method → def of its result.
    pub results: HashMap<String, String>,
    /// host notification method → def of its params.
    pub notifications: HashMap<String, String>,
    /// method → def of its params (requests and client notifications).
    pub params: HashMap<String, String>,
    /// action type → whether a client may dispatch it.
    pub client_dispatchable: HashMap<String, bool>,
    /// action type → def of that action.
    pub actions: HashMap<String, String>,
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

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schemas")
    }
}

/// How many things each rule looked at.
pub type Counts = HashMap<&'static str, usize, std::hash::BuildHasherDefault<RuleHasher>>;

/// FNV-1a for the rule-id keys of [`Counts`]: a dozen counters move on every frame, and
/// the default SipHash showed up in profiles. (The keys are the harness's own rule ids.)
#[derive(Debug, Clone, Copy)]
pub struct RuleHasher(u64);

impl Default for RuleHasher {
    fn default() -> Self {
        RuleHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for RuleHasher {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Per-connection history the frame checks need.
#[derive(Debug, Default)]
pub struct FrameChecker {
    /// Request id (as JSON text) → method, for requests not yet answered.
    pending: HashMap<String, String>,
    answered: HashSet<String>,
    last_seq: HashMap<String, u64>,
    from_seq: HashMap<String, u64>,
    pub counts: Counts,
}

fn bump(counts: &mut Counts, rule: &'static str) {
    *counts.entry(rule).or_insert(0) += 1;
}

impl FrameChecker {
    /// Records a frame the harness sent (requests are remembered for correlation).
    pub fn on_sent(&mut self, message: &Value) {
        if let Some(id) = message
            .get("id")
            .filter(|_| message.get("result").is_none() && message.get("error").is_none())
        {
            let method = message["method"].as_str().unwrap_or("(no method)");
            self.pending.insert(id.to_string(), method.to_owned());
        }
        if message["method"] == "unsubscribe" {
            if let Some(channel) = message["params"]["channel"].as_str() {
                self.from_seq.remove(channel);
            }
        }
    }

    /// Checks a binary frame from the host.
    pub fn on_binary(&mut self) -> Vec<Violation> {
        bump(&mut self.counts, "TRANSPORT-001");
        vec![Violation::new(
            "TRANSPORT-001",
            "text frames only",
            "a binary frame",
        )]
    }

    /// Checks one text frame from the host; returns its JSON (when it is JSON) and any
    /// violations. `method` of the answered request is returned alongside for responses.
    pub fn on_text(
        &mut self,
        text: &str,
        schemas: &Schemas,
    ) -> (Option<Value>, Option<String>, Vec<Violation>) {
        let mut found = Vec::new();
        bump(&mut self.counts, "TRANSPORT-001");
        let message: Value = match serde_json::from_str(text) {
            Ok(message) => message,
            Err(error) => {
                found.push(Violation::new(
                    "TRANSPORT-001",
                    "one JSON object per text frame",
                    format!("not JSON ({error}): {}", clip(text)),
                ));
                return (None, None, found);
            }
        };
        if !message.is_object() {
            found.push(Violation::new(
                "TRANSPORT-001",
                "one JSON object per text frame",
                format!("a JSON {}", kind_of(&message)),
            ));
            return (Some(message), None, found);
        }
        bump(&mut self.counts, "TRANSPORT-002");
        if message["jsonrpc"] != "2.0" {
            found.push(Violation::new(
                "TRANSPORT-002",
                "\"jsonrpc\": \"2.0\"",
                format!(
                    "jsonrpc = {}",
                    message
                        .get("jsonrpc")
                        .map_or("absent".into(), Value::to_string)
                ),
            ));
        }
        scan_legacy_uris(&message, &mut found, &mut self.counts);
        scan_status(&message, &mut found, &mut self.counts);
        let mut answered_method = None;
        if let Some(method) = message["method"].as_str() {
            if message.get("id").is_none() {
                self.check_notification(method, &message, schemas, &mut found);
            }
        } else {
            answered_method = self.check_response(&message, schemas, &mut found);
        }
        (Some(message), answered_method, found)
    }

    fn check_response(
        &mut self,
        message: &Value,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) -> Option<String> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let key = id.to_string();
        let has_result = message.get("result").is_some();
        let has_error = message.get("error").is_some();
        bump(&mut self.counts, "TRANSPORT-005");
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
        } else if has_error {
            let error = &message["error"];
            if !error["code"].is_i64() || !error["message"].is_string() {
                found.push(Violation::new(
                    "TRANSPORT-005",
                    "error with an integer code and a string message",
                    clip(&error.to_string()),
                ));
            }
        }
        bump(&mut self.counts, "TRANSPORT-003");
        bump(&mut self.counts, "TRANSPORT-004");
        if self.answered.contains(&key) {
            found.push(Violation::new(
                "TRANSPORT-003",
                format!("one response to request {key}"),
                "a second response with the same id",
            ));
            return None;
        }
        let Some(method) = self.pending.remove(&key) else {
            if has_result {
                found.push(Violation::new(
                    "TRANSPORT-004",
                    "responses only to requests",
                    format!("a success response with id {key}, which answers no request"),
                ));
            }
            return None;
        };
        self.answered.insert(key);
        if has_result && !has_error {
            let result = &message["result"];
            self.record_snapshots(result);
            if let Some(def) = schemas.map.results.get(&method) {
                validate(
                    schemas,
                    def,
                    result,
                    &format!("{method} result"),
                    found,
                    &mut self.counts,
                );
            }
        }
        Some(method)
    }

    /// Remembers `fromSeq` of every snapshot in a result.
    fn record_snapshots(&mut self, result: &Value) {
        let mut remember = |snapshot: &Value| {
            if let (Some(resource), Some(from)) =
                (snapshot["resource"].as_str(), snapshot["fromSeq"].as_u64())
            {
                self.from_seq.insert(resource.to_owned(), from);
            }
        };
        if result["snapshot"].is_object() {
            remember(&result["snapshot"]);
        }
        for snapshot in result["snapshots"].as_array().into_iter().flatten() {
            remember(snapshot);
        }
    }

    fn check_notification(
        &mut self,
        method: &str,
        message: &Value,
        schemas: &Schemas,
        found: &mut Vec<Violation>,
    ) {
        let params = &message["params"];
        bump(&mut self.counts, "TRANSPORT-011");
        if !params["channel"].is_string() {
            found.push(Violation::new(
                "TRANSPORT-011",
                "params.channel (string)",
                format!("{method} without a string channel"),
            ));
        }
        // A rejected echo carries the client's own action back, valid or not: the host only
        // vouches for the members it added.
        let rejected =
            method == "action" && params.get("rejectionReason").is_some_and(|r| !r.is_null());
        if method == "action" && !rejected {
            // The envelope's own members directly, the action against its own type's
            // definition: the same verdict as the ActionEnvelope schema (whose action union
            // tries every type in turn), at a fraction of the cost on every envelope.
            if let Some(problem) = envelope_shape(params) {
                found.push(Violation::new(
                    "INV-SCHEMA-1",
                    "action params valid against ActionEnvelope",
                    problem,
                ));
            }
            let kind = params["action"]["type"].as_str().unwrap_or_default();
            match schemas.map.actions.get(kind) {
                Some(def) => validate(
                    schemas,
                    def,
                    &params["action"],
                    &format!("{kind} action"),
                    found,
                    &mut self.counts,
                ),
                // An action type this version does not know is accepted (forward compatibility).
                None => bump(&mut self.counts, "INV-SCHEMA-1"),
            }
        } else if let Some(def) = schemas.map.notifications.get(method).filter(|_| !rejected) {
            validate(
                schemas,
                def,
                params,
                &format!("{method} params"),
                found,
                &mut self.counts,
            );
        }
        if method == "action" {
            self.check_envelope(params, schemas, found);
        }
    }

    fn check_envelope(&mut self, envelope: &Value, schemas: &Schemas, found: &mut Vec<Violation>) {
        let channel = envelope["channel"].as_str().unwrap_or_default();
        let action_type = envelope["action"]["type"].as_str().unwrap_or_default();
        bump(&mut self.counts, "ENV-004");
        if let Some(prefix) = expected_scheme(action_type) {
            if !channel.starts_with(prefix) {
                found.push(Violation::new(
                    "ENV-004",
                    format!("{action_type} on a {prefix} channel"),
                    format!("channel {channel}"),
                ));
            }
        }
        let rejected = envelope
            .get("rejectionReason")
            .is_some_and(|r| !r.is_null());
        bump(&mut self.counts, "ENV-005");
        let host_only = schemas.map.client_dispatchable.get(action_type) == Some(&false);
        if host_only && !rejected && envelope.get("origin").is_some_and(|o| !o.is_null()) {
            let mut violation = Violation::new(
                "ENV-005",
                format!("host-originated {action_type} without origin"),
                format!("origin {}", envelope["origin"]),
            );
            if let (Some(client), Some(seq)) = (
                envelope["origin"]["clientId"].as_str(),
                envelope["origin"]["clientSeq"].as_i64(),
            ) {
                violation.origin = Some((client.to_owned(), seq));
            }
            found.push(violation);
        }
        if envelope
            .get("rejectionReason")
            .is_some_and(|r| !r.is_null())
        {
            return;
        }
        let Some(seq) = envelope["serverSeq"].as_u64() else {
            return;
        };
        bump(&mut self.counts, "ENV-003");
        if let Some(last) = self.last_seq.get(channel) {
            if seq <= *last {
                found.push(Violation::new(
                    "ENV-003",
                    format!("serverSeq > {last} (the previous envelope on {channel})"),
                    format!("serverSeq {seq} for {action_type}"),
                ));
            }
        }
        bump(&mut self.counts, "SUB-002");
        if let Some(from) = self.from_seq.get(channel) {
            if seq <= *from {
                found.push(Violation::new(
                    "SUB-002",
                    format!("serverSeq > snapshot fromSeq {from} on {channel}"),
                    format!("serverSeq {seq} for {action_type}"),
                ));
            }
        }
        match self.last_seq.get_mut(channel) {
            Some(last) => *last = seq.max(*last),
            None => {
                self.last_seq.insert(channel.to_owned(), seq);
            }
        }
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

fn validate(
    schemas: &Schemas,
    def: &str,
    instance: &Value,
    what: &str,
    found: &mut Vec<Violation>,
    counts: &mut Counts,
) {
    bump(counts, "INV-SCHEMA-1");
    if !schemas.set.has_def(def) {
        return;
    }
    if let Err(errors) = schemas.set.validate(def, instance) {
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
fn envelope_shape(envelope: &Value) -> Option<String> {
    if !envelope.is_object() {
        return Some("(root): not an object".into());
    }
    if !envelope["channel"].is_string() {
        return Some("/channel: a string is required".into());
    }
    if !envelope["action"].is_object() || !envelope["action"]["type"].is_string() {
        return Some("/action: an object with a string type is required".into());
    }
    if envelope["serverSeq"].as_u64().is_none() {
        return Some("/serverSeq: a non-negative integer is required".into());
    }
    let origin = &envelope["origin"];
    let origin_ok =
        origin.is_null() || (origin["clientId"].is_string() && origin["clientSeq"].is_i64());
    if !origin_ok {
        return Some("/origin: {clientId: string, clientSeq: integer} or absent".into());
    }
    let reason = &envelope["rejectionReason"];
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

/// SUB-012: no legacy URIs anywhere in a host message.
fn scan_legacy_uris(message: &Value, found: &mut Vec<Violation>, counts: &mut Counts) {
    bump(counts, "SUB-012");
    let mut legacy = None;
    walk_strings(message, &mut |text| {
        if legacy.is_none() && LEGACY_PREFIXES.iter().any(|p| text.starts_with(p)) {
            legacy = Some(text.to_owned());
        }
    });
    if let Some(uri) = legacy {
        found.push(Violation::new(
            "SUB-012",
            "1.0.0 channel URIs (ahp-…)",
            format!("legacy URI {uri}"),
        ));
    }
}

fn walk_strings(value: &Value, visit: &mut impl FnMut(&str)) {
    match value {
        Value::String(text) => visit(text),
        Value::Array(items) => items.iter().for_each(|v| walk_strings(v, visit)),
        Value::Object(map) => map.values().for_each(|v| walk_strings(v, visit)),
        _ => {}
    }
}

/// STATUS-001: every integer `status` member holds exactly one activity value.
fn scan_status(message: &Value, found: &mut Vec<Violation>, counts: &mut Counts) {
    /// Path segments borrowed from the document; a pointer string is built only for a
    /// violation (this runs on every frame).
    enum Segment<'a> {
        Key(&'a str),
        Index(usize),
    }
    fn walk<'a>(
        value: &'a Value,
        path: &mut Vec<Segment<'a>>,
        checked: &mut usize,
        found: &mut Vec<Violation>,
    ) {
        match value {
            Value::Object(map) => {
                for (key, member) in map {
                    if key == "status" {
                        if let Some(status) = member.as_u64() {
                            *checked += 1;
                            if ![1, 2, 8, 24].contains(&(status & 31)) {
                                let mut pointer = String::new();
                                for segment in path.iter() {
                                    match segment {
                                        Segment::Key(k) => pointer.push_str(&format!("/{k}")),
                                        Segment::Index(i) => pointer.push_str(&format!("/{i}")),
                                    }
                                }
                                found.push(Violation::new(
                                    "STATUS-001",
                                    "status & 31 ∈ {1, 2, 8, 24}",
                                    format!("{pointer}/status = {status}"),
                                ));
                            }
                        }
                    }
                    path.push(Segment::Key(key));
                    walk(member, path, checked, found);
                    path.pop();
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    path.push(Segment::Index(index));
                    walk(item, path, checked, found);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut checked = 0;
    walk(message, &mut Vec::new(), &mut checked, found);
    *counts.entry("STATUS-001").or_insert(0) += checked;
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
            .on_text(text, &schemas())
            .2
            .iter()
            .map(|v| v.rule)
            .collect()
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
