//! A case's connection: the transport plus the always-on checks and the reducer mirror,
//! fed with every frame the transport recorded since the last look.

use serde_json::Value;

use crate::checks::frame::{FrameChecker, Schemas};
use crate::checks::invariants;
use crate::checks::mirror::Mirror;
use crate::checks::Violation;
use crate::tape::{Node, Tape};
use crate::transport::{Connection, Direction, TransportError};

/// A violation with the transcript position it was found at.
#[derive(Debug, Clone)]
pub struct Located {
    pub violation: Violation,
    pub conn: String,
    pub frame: usize,
}

#[derive(Debug)]
pub struct Conn {
    pub name: String,
    pub client_id: String,
    pub link: Connection,
    pub checker: FrameChecker,
    pub mirror: Mirror,
    /// Transcript frames already looked at.
    seen: usize,
    /// Schema violations in frames the harness sent without declaring them invalid.
    pub harness_errors: Vec<String>,
    /// Frames sent deliberately invalid (transcript indices) — not schema-checked.
    pub intended_invalid: Vec<usize>,
    /// clientSeq of the last dispatch.
    pub client_seq: i64,
    /// Every dispatch sent: clientSeq → action.
    pub dispatched: std::collections::HashMap<i64, Value>,
    /// States and turns the snapshot invariants looked at.
    pub invariant_counts: crate::checks::frame::Counts,
    /// The schemas of the last [`Conn::process`] call.
    schemas: Option<Schemas>,
    /// clientSeqs of dispatches whose echo's pre-state is wanted (the fuzzer judges each
    /// dispatch against the state the host had when it took it).
    pub watched: std::collections::HashSet<i64>,
    /// clientSeq → the mirrored state of the echo's channel just before the echo.
    pub prestates: std::collections::HashMap<i64, Value>,
    /// The parse buffer every frame is read into.
    tape: Tape,
}

impl Conn {
    pub fn new(name: &str, client_id: &str, link: Connection) -> Conn {
        Conn {
            name: name.to_owned(),
            client_id: client_id.to_owned(),
            link,
            checker: FrameChecker::default(),
            mirror: Mirror::default(),
            seen: 0,
            harness_errors: Vec::new(),
            intended_invalid: Vec::new(),
            client_seq: 0,
            dispatched: Default::default(),
            invariant_counts: Default::default(),
            schemas: None,
            watched: Default::default(),
            prestates: Default::default(),
            tape: Tape::default(),
        }
    }

    /// Like [`Conn::process`] with the schemas this connection last used.
    pub fn process_collect(&mut self) -> Vec<Located> {
        match self.schemas.clone() {
            Some(schemas) => self.process(&schemas),
            None => Vec::new(),
        }
    }

    /// The connection that resumes `old` (reconnect) on a new socket: same name and client
    /// id, and it carries on the old one's mirror, sequence history and dispatches.
    pub fn resuming(old: &Conn, link: Connection) -> Conn {
        let mut conn = Conn::new(&old.name, &old.client_id, link);
        conn.mirror = old.mirror.clone();
        conn.checker.resume_from(&old.checker);
        conn.dispatched = old.dispatched.clone();
        conn.client_seq = old.client_seq;
        conn
    }

    /// Sends `action` to `channel` with this connection's next clientSeq, remembered so
    /// its echo can be checked (DISPATCH-001); returns that clientSeq.
    pub async fn dispatch(&mut self, channel: &str, action: &Value) -> Result<i64, TransportError> {
        self.client_seq += 1;
        let seq = self.client_seq;
        self.dispatched.insert(seq, action.clone());
        self.link
            .send_notification(
                "dispatchAction",
                serde_json::json!({ "channel": channel, "clientSeq": seq, "action": action }),
            )
            .await?;
        Ok(seq)
    }

    /// Runs the always-on checks over every frame recorded since the last call.
    pub fn process(&mut self, schemas: &Schemas) -> Vec<Located> {
        self.schemas = Some(schemas.clone());
        let mut found = Vec::new();
        let frames = self.link.transcript().frames.len();
        while self.seen < frames {
            let index = self.seen;
            self.seen += 1;
            let frame = &self.link.transcript().frames[index];
            let text = frame.text.clone();
            match frame.direction {
                Direction::Sent => self.on_sent(index, &text, schemas),
                Direction::Received => {
                    for violation in self.on_received(&text, schemas) {
                        found.push(Located {
                            violation,
                            conn: self.name.clone(),
                            frame: index,
                        });
                    }
                }
            }
        }
        found
    }

    fn on_sent(&mut self, index: usize, text: &str, schemas: &Schemas) {
        let mut tape = std::mem::take(&mut self.tape);
        if let Ok(message) = tape.parse(text) {
            self.check_sent(index, message, schemas);
        }
        self.tape = tape;
    }

    fn check_sent(&mut self, index: usize, message: Node<'_>, schemas: &Schemas) {
        self.checker.on_sent(message);
        let method = message.member("method").as_str();
        if method == Some("unsubscribe") {
            if let Some(channel) = message.member("params").member("channel").as_str() {
                self.mirror.forget(channel);
            }
        }
        if self.intended_invalid.contains(&index) {
            return;
        }
        let Some(method) = method else {
            return;
        };
        if let Some(def) = schemas.map.params.get(method) {
            if schemas.set.has_def(def) {
                if let Err(errors) = schemas.set.validate_node(def, message.member("params")) {
                    let first = errors
                        .first()
                        .map(|e| format!("{}: {}", e.instance_path, e.message));
                    self.harness_errors.push(format!(
                        "the harness sent an invalid {method} (not declared deliberate): {}",
                        first.unwrap_or_default()
                    ));
                }
            }
        }
    }

    fn on_received(&mut self, text: &str, schemas: &Schemas) -> Vec<Violation> {
        if text.starts_with("<binary") {
            return self.checker.on_binary();
        }
        if text.starts_with('<') && text.ends_with('>') {
            // Close or connection-lost markers.
            return Vec::new();
        }
        let mut tape = std::mem::take(&mut self.tape);
        let (message, _method, mut found) = self.checker.on_text(&mut tape, text, schemas);
        if let Some(message) = message {
            self.follow(message, &mut found);
        }
        self.tape = tape;
        found
    }

    /// The mirror, the echo check and the snapshot invariants over one parsed host message.
    fn follow(&mut self, message: Node<'_>, found: &mut Vec<Violation>) {
        if message.member("method").as_str() == Some("action") {
            let envelope = message.member("params");
            let origin = envelope.member("origin");
            // Only a faithful echo (its clientSeq names this very action) marks the state.
            if let Some(seq) = origin.member("clientSeq").as_i64().filter(|seq| {
                origin.member("clientId").as_str() == Some(self.client_id.as_str())
                    && self
                        .dispatched
                        .get(seq)
                        .is_some_and(|sent| envelope.member("action").equals(sent))
                    && self.watched.remove(seq)
            }) {
                let channel = envelope.member("channel").as_str().unwrap_or_default();
                let before = self.mirror.state(channel).unwrap_or(Value::Null);
                self.prestates.insert(seq, before);
            }
            found.extend(self.check_echo(envelope));
            found.extend(self.mirror.apply(envelope));
            return;
        }
        let result = message.member("result");
        if !result.exists() {
            return;
        }
        for snapshot in crate::checks::frame::snapshots_in(result) {
            if snapshot
                .member("resource")
                .as_str()
                .is_some_and(|r| r.starts_with("ahp-chat:"))
            {
                let state = snapshot.member("state").to_value();
                *self.invariant_counts.entry("STATUS-003").or_insert(0) += 1;
                let turns = state["turns"].as_array().map_or(0, Vec::len);
                *self.invariant_counts.entry("TOOL-007").or_insert(0) += turns;
                found.extend(invariants::chat_state(&state));
            }
            self.mirror.load_snapshot(snapshot);
        }
        if result.member("type").as_str() == Some("replay") {
            for envelope in result.member("actions").elements() {
                found.extend(self.mirror.apply(envelope));
            }
        }
    }

    /// DISPATCH-001: an envelope naming this client as origin echoes one of its dispatches,
    /// with that dispatch's clientSeq and action.
    fn check_echo(&mut self, envelope: Node<'_>) -> Vec<Violation> {
        let origin = envelope.member("origin");
        if origin.member("clientId").as_str() != Some(self.client_id.as_str()) {
            return Vec::new();
        }
        *self.invariant_counts.entry("DISPATCH-001").or_insert(0) += 1;
        let seq = origin.member("clientSeq").as_i64().unwrap_or(-1);
        let echoed = envelope.member("action");
        match self.dispatched.get(&seq) {
            Some(action) if echoed.equals(action) => Vec::new(),
            Some(action) => vec![Violation::new(
                "DISPATCH-001",
                format!(
                    "the echo of clientSeq {seq} carries the dispatched {}",
                    action["type"]
                ),
                format!(
                    "{} {}",
                    echoed.member("type").to_value(),
                    crate::checks::frame::clip(&echoed.to_value().to_string())
                ),
            )],
            None => vec![Violation::new(
                "DISPATCH-001",
                format!(
                    "origin.clientSeq of one of this client's dispatches (1..={})",
                    self.client_seq
                ),
                format!(
                    "clientSeq {seq} on an echo of {}",
                    echoed.member("type").to_value()
                ),
            )],
        }
    }
}

impl Conn {
    /// Transcript frames `from..to` of this connection, as reported.
    pub fn reported(&self, from: usize, to: usize) -> Vec<crate::verdict::ReportedFrame> {
        let frames = &self.link.transcript().frames;
        let to = to.min(frames.len());
        frames[from.min(to)..to]
            .iter()
            .map(|frame| crate::verdict::ReportedFrame {
                conn: self.name.clone(),
                direction: match frame.direction {
                    Direction::Sent => "sent".into(),
                    Direction::Received => "received".into(),
                },
                at_ms: frame.at_ms,
                text: frame.text.clone(),
            })
            .collect()
    }

    /// Every frame of this connection, as reported.
    pub fn reported_all(&self) -> Vec<crate::verdict::ReportedFrame> {
        self.reported(0, usize::MAX)
    }
}

/// JSON equality where integers and floats of equal value match.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}
