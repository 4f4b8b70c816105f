//! JSON-RPC correlation on one connection: every request of the harness is answered exactly
//! once (TRANSPORT-003), no response answers anything else (TRANSPORT-004), and the host's
//! own requests to the client are ones it may send, on `ahp-root://`, after whose `-32601` it
//! keeps serving the connection (TRANSPORT-012). The frame checker feeds it ids and tallies
//! what it judged.

use super::words::ASKED_INVALID;
use super::{FastMap, FastSet, Rule, Skips, Violation};
use crate::tape::{Node, ScannedId};

/// The methods a host may send to a client as requests (PROTOCOL §8.1: the resource
/// commands are bidirectional).
pub const HOST_REQUEST_METHODS: &[&str] = &[
    "resourceRead",
    "resourceWrite",
    "resourceList",
    "resourceCopy",
    "resourceMove",
    "resourceDelete",
    "resourceResolve",
    "resourceMkdir",
    "resourceRequest",
    "createResourceWatch",
];

/// Why TRANSPORT-003 could not judge a request that got no response.
pub const CLOSED_TOO_SOON: &str =
    "the connection ended less than the timeout after the request was sent";
/// Why TRANSPORT-012 could not judge whether the host kept serving the connection.
pub const NOTHING_ASKED_AFTER: &str =
    "the harness asked nothing more after answering the host's request";
/// Why TRANSPORT-004 could not judge a response whose id names no request of the harness.
pub const ID_UNREADABLE: &str =
    "it may answer a frame of the harness whose id the harness could not read";

/// A frame the harness sent that is no valid request or notification (or that it could not
/// parse at all), with its id as far as the harness can tell: an error with `id: null` may
/// answer each once, and a response carrying the id answers it.
#[derive(Debug, Clone, PartialEq)]
enum Unidentified {
    /// Its id, read (as JSON text).
    Id(String),
    /// It carries no usable id (not an object, no `id` member, or one that is no string or
    /// number).
    NoId,
    /// Its id could not be read (the frame is cut off, or too odd to scan): a response with
    /// an id the harness does not know may be its answer.
    Unreadable,
}

/// A request of the harness that is not answered yet.
#[derive(Debug, Clone)]
struct Pending {
    method: String,
    /// When it was sent (ms since the connection opened).
    sent_at_ms: f64,
    /// How many requests the harness had sent with it.
    ordinal: u64,
    /// Sent invalid: whether it is answered is the rule it tests' matter.
    invalid: bool,
}

/// What a response with a given id answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// The harness request of this method.
    Request(String),
    /// A request answered before (TRANSPORT-003).
    Again(Violation),
    /// No request: `None` for an error with `id: null` that answers a frame the harness
    /// sent without a usable id; otherwise the TRANSPORT-004 violation.
    Nothing(Option<Violation>),
}

/// The request and response history of one connection.
#[derive(Debug, Default)]
pub struct Correlation {
    /// Request id (as JSON text) → the request, for requests not yet answered.
    pending: FastMap<String, Pending>,
    /// Ids of the requests answered so far.
    answered: FastSet<String>,
    /// How many requests the harness has sent.
    requests_sent: u64,
    /// Frames the harness sent that are no valid request or notification, oldest first:
    /// an error with `id: null` may answer each once (JSON-RPC answers what it cannot
    /// identify with a null id), and one whose id was read may be answered with that id.
    unidentified: Vec<Unidentified>,
    /// Host-to-client request id (as JSON text) → method, until the harness answers it.
    host_requests: FastMap<String, String>,
    /// A host request the harness answered, and how many requests the harness had sent
    /// then: the host must still answer a request sent after that (TRANSPORT-012).
    served_after: Option<(String, u64)>,
    /// Whether the connection's end was seen.
    ended: bool,
    /// What could not be judged, and why.
    skips: Skips,
}

impl Correlation {
    /// What the rules could not judge, and why.
    pub fn skips(&self) -> &Skips {
        &self.skips
    }

    /// Records a frame the harness sent at `at_ms` (`invalid` when it was sent invalid): a
    /// request is remembered until it is answered, an answer to a host request starts the
    /// wait for the host to go on serving.
    pub fn sent(&mut self, message: Node<'_>, at_ms: f64, invalid: bool) {
        let method = message.member("method");
        let id = message.member("id");
        let answer = message.member("result").exists() || message.member("error").exists();
        let readable_id =
            (id.is_string() || id.to_value().is_number()).then(|| id_key(id, String::new()));
        if id.exists() && !answer {
            self.requests_sent += 1;
            let pending = Pending {
                method: method.as_str().unwrap_or("(no method)").to_owned(),
                sent_at_ms: at_ms,
                ordinal: self.requests_sent,
                invalid,
            };
            self.pending.insert(id_key(id, String::new()), pending);
        }
        if answer {
            if let Some(method) = readable_id
                .as_ref()
                .and_then(|key| self.host_requests.remove(key))
            {
                self.served_after = Some((method, self.requests_sent));
            }
        }
        let well_formed = message.member("jsonrpc").as_str() == Some("2.0")
            && (method.is_string() || answer)
            && (!id.exists() || id.is_null() || readable_id.is_some());
        if !well_formed {
            self.unidentified
                .push(readable_id.map_or(Unidentified::NoId, Unidentified::Id));
        }
    }

    /// Records a frame the harness sent that it cannot parse: deliberately malformed
    /// input, or a request nested deeper than the harness's parser goes (which a host may
    /// well read and answer by its id). Its id is read without parsing the rest.
    pub fn sent_unparseable(&mut self, text: &str) {
        self.unidentified.push(scan_id(text));
    }

    /// Whether the unanswered request with id `key` (as JSON text) was sent invalid.
    pub fn asked_invalid(&self, key: &str) -> bool {
        self.pending.get(key).is_some_and(|pending| pending.invalid)
    }

    /// Judges a host-to-client request (TRANSPORT-012): a method the protocol lets the host
    /// send, on `ahp-root://`.
    pub fn host_request(&mut self, method: &str, message: Node<'_>) -> Vec<Violation> {
        let mut found = Vec::new();
        let key = id_key(message.member("id"), String::new());
        if !HOST_REQUEST_METHODS.contains(&method) {
            found.push(Violation::new(
                Rule::Transport012,
                "host-to-client requests only of resource* or createResourceWatch",
                format!("a {method} request (id {key})"),
            ));
        }
        let channel = message.member("params").member("channel");
        if channel.as_str() != Some("ahp-root://") {
            found.push(Violation::new(
                Rule::Transport012,
                format!("{method} (id {key}) with channel ahp-root://"),
                format!("channel {}", channel.to_value()),
            ));
        }
        self.host_requests.insert(key, method.to_owned());
        found
    }

    /// What a response with id `key` (as JSON text) answers.
    pub fn answer(&mut self, key: &str, is_error: bool) -> Answered {
        let answers_unidentified = key == "null" && is_error && !self.unidentified.is_empty();
        if self.answered.contains(key) && !answers_unidentified {
            return Answered::Again(Violation::new(
                Rule::Transport003,
                format!("one response to request {key}"),
                "a second response with the same id",
            ));
        }
        let Some((key, pending)) = self.pending.remove_entry(key) else {
            return Answered::Nothing(self.answer_to_nothing(key, is_error));
        };
        self.unidentified
            .retain(|sent| !matches!(sent, Unidentified::Id(id) if *id == key));
        if self
            .served_after
            .as_ref()
            .is_some_and(|(_, after)| pending.ordinal > *after)
        {
            self.served_after = None;
        }
        self.answered.insert(key);
        Answered::Request(pending.method)
    }

    /// TRANSPORT-004 for a response whose id names no outstanding request: an error with
    /// `id: null` answers the oldest frame the harness sent that had no usable id (and so
    /// settles the request it was, if its id was readable); a response with the id of an
    /// invalid or unparseable frame answers that frame; one with an id the harness knows
    /// nothing of may answer a frame whose id it could not read (not judged: a skip);
    /// anything else answers nothing that was asked — a notification, or no message at all.
    fn answer_to_nothing(&mut self, key: &str, is_error: bool) -> Option<Violation> {
        if key == "null" && is_error && !self.unidentified.is_empty() {
            if let Unidentified::Id(id) = self.unidentified.remove(0) {
                if self.pending.remove(&id).is_some() {
                    self.answered.insert(id);
                }
            }
            return None;
        }
        if key != "null" {
            let own = |sent: &Unidentified| matches!(sent, Unidentified::Id(id) if id == key);
            if let Some(at) = self.unidentified.iter().position(own) {
                self.unidentified.remove(at);
                self.answered.insert(key.to_owned());
                return None;
            }
            let unreadable = |sent: &Unidentified| *sent == Unidentified::Unreadable;
            if let Some(at) = self.unidentified.iter().position(unreadable) {
                self.unidentified.remove(at);
                self.skips.add(Rule::Transport004, ID_UNREADABLE, 1);
                return None;
            }
        }
        let kind = if is_error { "an error" } else { "a success" };
        let why = if key == "null" {
            ": the harness had sent nothing unparseable or invalid to answer (a reply to a notification?)"
        } else {
            ", which answers no request"
        };
        Some(Violation::new(
            Rule::Transport004,
            "responses only to requests",
            format!("{kind} response with id {key}{why}"),
        ))
    }

    /// The connection ended at `at_ms` (closed by the host when `by_host`): every request
    /// still unanswered after `timeout_ms` breaks TRANSPORT-003; one the connection ended on
    /// sooner, or one sent invalid (its rule judges whether it is answered), is skipped. A host that closed the connection after its own request was
    /// answered, before answering anything asked after that, breaks TRANSPORT-012. Returns
    /// the violations and how many unanswered requests were judged.
    pub fn end(&mut self, at_ms: f64, timeout_ms: f64, by_host: bool) -> (Vec<Violation>, usize) {
        if std::mem::replace(&mut self.ended, true) {
            return (Vec::new(), 0);
        }
        let mut found = Vec::new();
        let mut unanswered: Vec<(String, Pending)> = self.pending.drain().collect();
        unanswered.sort_by_key(|(_, pending)| pending.ordinal);
        let mut judged = 0;
        for (key, pending) in unanswered {
            let waited = at_ms - pending.sent_at_ms;
            if pending.invalid {
                self.skips.add(Rule::Transport003, ASKED_INVALID, 1);
            } else if waited >= timeout_ms {
                judged += 1;
                found.push(Violation::new(
                    Rule::Transport003,
                    format!("a response to request {key} ({})", pending.method),
                    format!("none in {waited:.0} ms, until the connection ended"),
                ));
            } else {
                self.skips.add(Rule::Transport003, CLOSED_TOO_SOON, 1);
            }
        }
        if let Some((method, _)) = self.served_after.take() {
            if by_host {
                found.push(Violation::new(
                    Rule::Transport012,
                    format!("the connection still served after the harness answered {method} with -32601"),
                    "the host closed it before answering the next request",
                ));
            } else {
                self.skips.add(Rule::Transport012, NOTHING_ASKED_AFTER, 1);
            }
        }
        (found, judged)
    }
}

/// What the harness can tell of the id of a frame it could not parse.
fn scan_id(text: &str) -> Unidentified {
    match crate::tape::scan_id(text) {
        ScannedId::Found(id) if id.is_string() || id.is_number() => {
            Unidentified::Id(value_key(&id))
        }
        ScannedId::Found(_) | ScannedId::Absent => Unidentified::NoId,
        ScannedId::Unreadable => Unidentified::Unreadable,
    }
}

/// An id value as a map key, as [`id_key`] writes it.
fn value_key(id: &serde_json::Value) -> String {
    match (id.as_u64(), id.as_i64()) {
        (Some(n), _) => n.to_string(),
        (None, Some(n)) => n.to_string(),
        _ => id.to_string(),
    }
}

/// A request id as a map key: its JSON text, written into `into` (cleared first) without
/// building a `Value` for the integer ids harnesses use.
pub fn id_key(id: Node<'_>, mut into: String) -> String {
    use std::fmt::Write as _;
    into.clear();
    let written = match (id.as_u64(), id.as_i64()) {
        (Some(n), _) => write!(into, "{n}"),
        (None, Some(n)) => write!(into, "{n}"),
        _ => write!(into, "{}", id.to_value()),
    };
    debug_assert!(written.is_ok(), "writing to a String does not fail");
    into
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    fn sent(rpc: &mut Correlation, text: &str, at_ms: f64) {
        let mut tape = Tape::default();
        match tape.parse(text) {
            Ok(message) => rpc.sent(message, at_ms, false),
            Err(_) => rpc.sent_unparseable(text),
        }
    }

    fn host_request(rpc: &mut Correlation, text: &str) -> Vec<Rule> {
        let mut tape = Tape::default();
        let message = tape.parse(text).expect("a JSON request");
        let method = message.member("method").as_str().unwrap_or_default();
        rpc.host_request(method, message)
            .iter()
            .map(|v| v.rule)
            .collect()
    }

    fn ids(found: &[Violation]) -> Vec<Rule> {
        found.iter().map(|v| v.rule).collect()
    }

    fn nothing_rule(answered: Answered) -> Option<Rule> {
        match answered {
            Answered::Nothing(violation) => violation.map(|v| v.rule),
            other => panic!("expected an answer to nothing, got {other:?}"),
        }
    }

    const PING: &str =
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}}"#;

    #[test]
    fn a_request_unanswered_for_the_timeout_fails_and_one_closed_sooner_is_skipped() {
        let mut patient = Correlation::default();
        sent(&mut patient, PING, 10.0);
        let (found, judged) = patient.end(5_010.0, 5_000.0, false);
        assert_eq!((ids(&found), judged), (vec![Rule::Transport003], 1));
        assert!(patient.skips().of(Rule::Transport003).is_empty());

        let mut hasty = Correlation::default();
        sent(&mut hasty, PING, 10.0);
        let (found, judged) = hasty.end(20.0, 5_000.0, false);
        assert!(found.is_empty());
        assert_eq!(judged, 0, "not counted as checked");
        assert_eq!(
            hasty.skips().of(Rule::Transport003),
            vec![(CLOSED_TOO_SOON, 1)]
        );

        let mut answered = Correlation::default();
        sent(&mut answered, PING, 10.0);
        assert_eq!(
            answered.answer("1", false),
            Answered::Request("ping".into())
        );
        assert!(matches!(answered.answer("1", false), Answered::Again(_)));
        assert_eq!(answered.end(60_000.0, 5_000.0, true), (Vec::new(), 0));
        assert!(answered.skips().of(Rule::Transport003).is_empty());
    }

    #[test]
    fn responses_that_answer_nothing_break_transport_004_errors_included() {
        let mut rpc = Correlation::default();
        sent(
            &mut rpc,
            r#"{"jsonrpc":"2.0","method":"unsubscribe","params":{"channel":"ahp-session:/s"}}"#,
            0.0,
        );
        assert_eq!(
            nothing_rule(rpc.answer("null", true)),
            Some(Rule::Transport004)
        );
        assert_eq!(
            nothing_rule(rpc.answer("77", true)),
            Some(Rule::Transport004)
        );
        assert_eq!(
            nothing_rule(rpc.answer("null", false)),
            Some(Rule::Transport004)
        );
        // Malformed input may be answered with an id-null error, once.
        sent(&mut rpc, r#"{"jsonrpc":"2.0","#, 0.0);
        assert_eq!(nothing_rule(rpc.answer("null", true)), None);
        assert_eq!(
            nothing_rule(rpc.answer("null", true)),
            Some(Rule::Transport004)
        );
        // A request without jsonrpc may be answered with its id or with null; either
        // settles it.
        sent(
            &mut rpc,
            r#"{"id":9,"method":"ping","params":{"channel":"ahp-root://"}}"#,
            0.0,
        );
        assert_eq!(nothing_rule(rpc.answer("null", true)), None);
        assert_eq!(rpc.end(60_000.0, 5_000.0, false), (Vec::new(), 0));
    }

    #[test]
    fn a_request_too_deep_to_parse_is_answered_by_its_id_without_blame() {
        let mut rpc = Correlation::default();
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7000000,"method":"listSessions","params":{}{}}}"#,
            "[".repeat(4000),
            "]".repeat(4000)
        );
        sent(&mut rpc, &deep, 0.0);
        assert_eq!(nothing_rule(rpc.answer("7000000", true)), None);
        assert!(
            matches!(rpc.answer("7000000", true), Answered::Again(_)),
            "answered once only"
        );
        // Or with a null id, as a parser with a nesting limit does.
        sent(&mut rpc, &deep.replace("7000000", "7000001"), 0.0);
        assert_eq!(nothing_rule(rpc.answer("null", true)), None);
        assert_eq!(
            nothing_rule(rpc.answer("7000001", true)),
            Some(Rule::Transport004),
            "the frame was answered already"
        );
        // A frame whose id the harness cannot read: a response with an unknown id may be
        // its answer (skipped, not judged), once.
        sent(&mut rpc, r#"{"jsonrpc":"2.0","i"#, 0.0);
        assert_eq!(nothing_rule(rpc.answer("55", true)), None);
        assert_eq!(rpc.skips().of(Rule::Transport004), vec![(ID_UNREADABLE, 1)]);
        assert_eq!(
            nothing_rule(rpc.answer("56", true)),
            Some(Rule::Transport004)
        );
        assert_eq!(rpc.end(60_000.0, 5_000.0, false), (Vec::new(), 0));
    }

    #[test]
    fn host_requests_use_the_root_channel_and_the_connection_stays_served() {
        let read = |id: u32, channel: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":"h{id}","method":"resourceRead","params":{{"channel":"{channel}","uri":"x:/y"}}}}"#
            )
        };
        let answer = |id: u32| {
            format!(r#"{{"jsonrpc":"2.0","id":"h{id}","error":{{"code":-32601,"message":"no"}}}}"#)
        };
        let mut rpc = Correlation::default();
        assert!(host_request(&mut rpc, &read(1, "ahp-root://")).is_empty());
        assert_eq!(
            host_request(&mut rpc, &read(2, "ahp-session:/s")),
            vec![Rule::Transport012]
        );
        let odd =
            r#"{"jsonrpc":"2.0","id":3,"method":"sampling","params":{"channel":"ahp-root://"}}"#;
        assert_eq!(host_request(&mut rpc, odd), vec![Rule::Transport012]);

        // Answered, then a later request answered: still served.
        sent(&mut rpc, &answer(1), 0.0);
        sent(&mut rpc, PING, 0.0);
        assert_eq!(rpc.answer("1", false), Answered::Request("ping".into()));
        assert_eq!(rpc.end(10.0, 5_000.0, true), (Vec::new(), 0));

        // Answered, then the host closes before answering anything else.
        let mut dropped = Correlation::default();
        host_request(&mut dropped, &read(1, "ahp-root://"));
        sent(&mut dropped, &answer(1), 0.0);
        let (found, _) = dropped.end(10.0, 5_000.0, true);
        assert_eq!(ids(&found), vec![Rule::Transport012]);

        // Answered, then the harness closes without asking anything: not judged.
        let mut quiet = Correlation::default();
        host_request(&mut quiet, &read(1, "ahp-root://"));
        sent(&mut quiet, &answer(1), 0.0);
        assert_eq!(quiet.end(10.0, 5_000.0, false), (Vec::new(), 0));
        assert_eq!(
            quiet.skips().of(Rule::Transport012),
            vec![(NOTHING_ASKED_AFTER, 1)]
        );
    }
}
