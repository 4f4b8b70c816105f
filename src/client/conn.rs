//! A client connection: the transport plus the always-on checks
//! ([`crate::checks::stream`]), fed with every frame the transport recorded since the last
//! look. The transport and the checks are the client layer's own: runners drive a
//! connection through its typed requests ([`super::commands`]) and read what the checks
//! folded through the accessors below, so every frame they send is one the checks see.

use serde_json::Value;

use crate::checks::frame::Counts;
use crate::checks::frame::Schemas;
use crate::checks::mirror::Mirror;
use crate::checks::stream::StreamChecks;
use crate::checks::words::InvalidDispatches;
use crate::checks::{Skips, Violation};
use crate::transport::{Connection, Direction};

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
    pub(super) link: Connection,
    /// The always-on checks over this connection's frames (and the clientId they expect
    /// echoes to carry).
    pub(super) checks: StreamChecks,
    /// Transcript frames already looked at.
    seen: usize,
    /// Transcript frames already looked at ahead ([`Conn::foresee`]).
    foreseen: usize,
    /// clientSeq of the last dispatch.
    pub(super) client_seq: i64,
    /// The schemas of the last [`Conn::process`] call.
    schemas: Option<Schemas>,
}

impl Conn {
    pub fn new(name: &str, client_id: &str, link: Connection) -> Conn {
        Conn {
            name: name.to_owned(),
            link,
            checks: StreamChecks::new(client_id),
            seen: 0,
            foreseen: 0,
            client_seq: 0,
            schemas: None,
        }
    }

    /// Like [`Conn::process`] with the schemas this connection last used.
    pub fn process_collect(&mut self) -> Vec<Located> {
        match self.schemas.clone() {
            Some(schemas) => self.process(&schemas),
            None => Vec::new(),
        }
    }

    /// The connection that resumes `old` (reconnect) on a new socket to `url`: same name
    /// and client id, and it carries on the old one's checks (mirror, sequence history,
    /// dispatches).
    pub async fn resume(
        old: &Conn,
        url: &str,
        timeout: std::time::Duration,
    ) -> Result<Conn, crate::transport::TransportError> {
        let link = Connection::connect(url, timeout).await?;
        Ok(Conn::resuming(old, link))
    }

    /// [`Conn::resume`] on a socket opened before: for a caller that connects first and
    /// carries the old checks on only once the old connection's last frames are checked.
    pub fn resuming(old: &Conn, link: Connection) -> Conn {
        let mut conn = Conn::new(&old.name, &old.checks.client_id, link);
        conn.checks = StreamChecks::resuming(&old.checks);
        conn.client_seq = old.client_seq;
        conn
    }

    /// Makes the dispatches this connection sent invalid since the last look known to the
    /// runner's other connections before any connection's checks run
    /// ([`StreamChecks::foresee_sent`]). A runner that checks several connections calls it
    /// on each of them first.
    pub fn foresee(&mut self, schemas: &Schemas) {
        let frames = self.link.transcript().frames.len();
        for index in self.seen.max(self.foreseen)..frames {
            let frame = &self.link.transcript().frames[index];
            if frame.direction == Direction::Sent && !end_marker(&frame.text) {
                self.checks.foresee_sent(index, &frame.text, schemas);
            }
        }
        self.foreseen = frames;
    }

    /// Runs the always-on checks over every frame recorded since the last call.
    pub fn process(&mut self, schemas: &Schemas) -> Vec<Located> {
        self.schemas = Some(schemas.clone());
        let mut found = Vec::new();
        let frames = self.link.transcript().frames.len();
        let timeout_ms = self.link.timeout().as_secs_f64() * 1000.0;
        while self.seen < frames {
            let index = self.seen;
            self.seen += 1;
            let frame = &self.link.transcript().frames[index];
            let violations = match (frame.direction, end_marker(&frame.text)) {
                (direction, true) => {
                    let by_host = direction == Direction::Received;
                    self.checks.ended(frame.at_ms, timeout_ms, by_host)
                }
                (Direction::Sent, false) => {
                    self.checks.sent(index, frame.at_ms, &frame.text, schemas);
                    Vec::new()
                }
                (Direction::Received, false) => self.checks.received(&frame.text, schemas),
            };
            found.extend(violations.into_iter().map(|violation| Located {
                violation,
                conn: self.name.clone(),
                frame: index,
            }));
        }
        found
    }
}

/// What the checks know of the connection.
impl Conn {
    /// The clientId this connection's dispatches carry (echoes name it).
    pub fn client_id(&self) -> &str {
        &self.checks.client_id
    }

    /// Sets the clientId the next `initialize` announces and echoes are expected to carry
    /// (a case may choose its own).
    pub fn set_client_id(&mut self, client_id: &str) {
        client_id.clone_into(&mut self.checks.client_id);
    }

    /// The channel states this connection folded from its snapshots and envelopes.
    pub fn mirror(&self) -> &Mirror {
        &self.checks.mirror
    }

    /// The folded state of `channel`, with what the checks leave pending applied first.
    pub fn live_state(&mut self, channel: &str) -> Option<Value> {
        self.checks.mirror.live_state(channel)
    }

    /// The frame checks' history of this connection (what it was sent, per channel).
    pub fn frame_checker(&self) -> &crate::checks::frame::FrameChecker {
        &self.checks.checker
    }

    /// The highest serverSeq this connection has seen (what `reconnect` resumes after).
    pub fn highest_seq(&self) -> u64 {
        self.checks.checker.highest_seq()
    }

    /// clientSeq of the last dispatch.
    pub fn last_seq(&self) -> i64 {
        self.client_seq
    }

    /// Whether `client` is this connection's client and dispatched `seq` on it.
    pub fn dispatched_here(&self, client: &str, seq: i64) -> bool {
        self.checks.dispatched_here(client, seq)
    }

    /// The action dispatched with clientSeq `seq`.
    pub fn dispatched(&self, seq: i64) -> Option<&Value> {
        self.checks.dispatched.get(&seq)
    }

    /// Asks the checks to keep the state the echo of dispatch `seq` was folded onto.
    pub fn watch_echo(&mut self, seq: i64) {
        self.checks.watched.insert(seq);
    }

    /// The state the echo of watched dispatch `seq` was folded onto (`None` before it came),
    /// and stops watching it.
    pub fn echo_prestate(&mut self, seq: i64) -> Option<Value> {
        self.checks.watched.remove(&seq);
        self.checks.prestates.remove(&seq)
    }

    /// The connection, sharing `runner`'s registry of invalid dispatches with the runner's
    /// other connections: the copy of one of their invalid dispatches echoed here is the
    /// runner's words, as the sender's own echo is. Called before the connection sends.
    pub fn sharing(mut self, runner: &InvalidDispatches) -> Conn {
        self.checks.checker.words.share(runner);
        self
    }

    /// The registry of invalid dispatches this connection shares with its runner's others.
    pub fn invalid_dispatches(&self) -> &InvalidDispatches {
        self.checks.checker.words.runner()
    }

    /// Declares the next frame sent deliberately invalid: it is not schema-checked as the
    /// harness's own.
    pub fn next_frame_invalid(&mut self) {
        self.checks
            .intended_invalid
            .push(self.link.transcript().frames.len());
    }

    /// Adds what the checks looked at and skipped to `counts` and `skipped`.
    pub fn tally(&self, counts: &mut Counts, skipped: &mut Skips) {
        self.checks.tally(counts, skipped);
    }

    /// Schema violations in frames the harness sent without declaring them invalid.
    pub fn harness_errors(&self) -> &[String] {
        &self.checks.harness_errors
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

/// Whether a transcript entry marks the end of the connection (a close either way, a lost
/// connection, or a message too large to take, after which the harness drops it).
fn end_marker(text: &str) -> bool {
    ["<close", "<connection lost>", "<message dropped"]
        .iter()
        .any(|marker| text.starts_with(marker))
}

/// JSON equality where integers and floats of equal value match.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    json_equal_with(a, b, &|x, y| x == y)
}

/// `json_equal` with strings compared by `same_string`.
pub(super) fn json_equal_with(
    a: &Value,
    b: &Value,
    same_string: &dyn Fn(&str, &str) -> bool,
) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => same_string(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| json_equal_with(p, q, same_string))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal_with(v, w, same_string)))
        }
        _ => a == b,
    }
}
