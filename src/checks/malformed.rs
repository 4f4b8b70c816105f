//! What a host owes a client nobody scripted (a proxy's, a capture's) about the messages it
//! sent malformed. In a run the harness sends such messages only deliberately, and the case
//! that sends one judges what became of it; behind a proxy there is no case, and the
//! always-on rules leave the answer or echo of a malformed message alone (it carries the
//! client's words). Two case rules are judged here instead:
//! - DISPATCH-007: an action dispatched malformed — no `type`, or invalid against its own
//!   type's definition — is not applied: its sender's echo carries `rejectionReason`.
//! - TRANSPORT-009: a request whose params have the wrong shape (invalid against the
//!   method's params schema) gets -32602 — not a success, not a hang. Another error code is
//!   skipped (the case calls it informational).

use super::frame::{FrameChecker, Schemas};
use super::rpc::id_key;
use super::{FastMap, Rule, Skips, Violation};
use crate::tape::Node;

/// Why DISPATCH-007 left a malformed dispatch unjudged.
pub const NO_ECHO: &str =
    "no echo of it was seen on its connection (dropped, or the connection was not subscribed)";
/// Why TRANSPORT-009 left an answer unjudged.
pub const OTHER_CODE: &str =
    "answered with another error code than -32602 (informational: the case's verdict)";
/// Why TRANSPORT-009 left an unanswered request unjudged.
pub const ENDED_SOON: &str = "the connection ended before the timeout";

/// A request sent with params of the wrong shape, waiting for its answer.
#[derive(Debug, Clone)]
struct Asked {
    method: String,
    at_ms: f64,
}

/// The malformed messages of one observed connection and what became of them.
#[derive(Debug, Default, Clone)]
pub struct Malformed {
    /// clientSeq → the action's type, until the echo of that dispatch comes.
    dispatches: FastMap<i64, String>,
    /// Echoes judged (DISPATCH-007).
    echoes: usize,
    /// Request id (as [`id_key`] writes it) → the request, until its answer comes.
    requests: FastMap<String, Asked>,
    /// Answers and silences judged (TRANSPORT-009).
    answers: usize,
    skips: Skips,
}

impl Malformed {
    /// Takes in a message the client sent `at_ms`, on a connection that negotiated the
    /// schemas' version: notes a dispatch whose action is malformed — no string `type`, or
    /// invalid against its type's definition (an unknown type is not: forward
    /// compatibility) — and a request whose params the method's schema rejects (a method
    /// the schemas do not know is not judged). `checker` validates.
    pub fn sent(
        &mut self,
        message: Node<'_>,
        at_ms: f64,
        checker: &mut FrameChecker,
        schemas: &Schemas,
    ) {
        let Some(method) = message.member("method").as_str() else {
            return;
        };
        let params = message.member("params");
        let seq = params.member("clientSeq").as_i64();
        if let (Some(seq), "dispatchAction") = (seq, method) {
            let action = params.member("action");
            let kind = action.member("type").as_str();
            let malformed = match kind.and_then(|kind| schemas.map.actions.get(kind)) {
                Some(def) => matches!(checker.validate_node(schemas, def, action), Some(Err(_))),
                None => kind.is_none(),
            };
            if malformed {
                self.dispatched(seq, kind.unwrap_or("action without a type"));
            }
        }
        let id = message.member("id");
        let def = schemas
            .map
            .params
            .get(method)
            .filter(|_| id.exists() && params.exists());
        if let Some(def) = def {
            if matches!(checker.validate_node(schemas, def, params), Some(Err(_))) {
                self.asked(id, method, at_ms);
            }
        }
    }

    /// Notes dispatch `seq`, whose action `kind` was found malformed.
    fn dispatched(&mut self, seq: i64, kind: &str) {
        self.dispatches.insert(seq, kind.to_owned());
    }

    /// Notes request `id` (`method`, sent `at_ms`), whose params were found of the wrong
    /// shape.
    fn asked(&mut self, id: Node<'_>, method: &str, at_ms: f64) {
        let asked = Asked {
            method: method.to_owned(),
            at_ms,
        };
        self.requests.insert(id_key(id, String::new()), asked);
    }

    /// Judges a message from the host: the echo of one of this connection's malformed
    /// dispatches (an `action` notification whose origin names `client_id`), or the answer
    /// to one of its malformed requests; each once.
    pub fn received(&mut self, message: Node<'_>, client_id: &str) -> Option<Violation> {
        match message.member("method").as_str() {
            Some("action") if !self.dispatches.is_empty() => {
                self.echoed(message.member("params"), client_id)
            }
            None if !self.requests.is_empty() => self.answered(message),
            _ => None,
        }
    }

    fn echoed(&mut self, params: Node<'_>, client_id: &str) -> Option<Violation> {
        let origin = params.member("origin");
        if client_id.is_empty() || origin.member("clientId").as_str() != Some(client_id) {
            return None;
        }
        let seq = origin.member("clientSeq").as_i64()?;
        let kind = self.dispatches.remove(&seq)?;
        self.echoes += 1;
        if !params.member("rejectionReason").is_null() {
            return None;
        }
        Some(Violation::new(
            Rule::Dispatch007,
            format!("the malformed {kind} the client dispatched (clientSeq {seq}) not applied: its echo with rejectionReason"),
            "an echo without rejectionReason: the host applied it",
        ))
    }

    fn answered(&mut self, message: Node<'_>) -> Option<Violation> {
        let id = message.member("id");
        if !id.exists() {
            return None;
        }
        let asked = self.requests.remove(&id_key(id, String::new()))?;
        let error = message.member("error");
        match error.member("code").as_i64() {
            Some(-32602) => {
                self.answers += 1;
                None
            }
            Some(_) => {
                self.skips.add(Rule::Transport009, OTHER_CODE, 1);
                None
            }
            None => {
                self.answers += 1;
                let got = if error.exists() {
                    "an error without an integer code"
                } else {
                    "a success"
                };
                Some(Violation::new(
                    Rule::Transport009,
                    format!(
                        "-32602 for the {} whose params the client sent of the wrong shape",
                        asked.method
                    ),
                    got,
                ))
            }
        }
    }

    /// The connection ended at `at_ms`: a malformed request unanswered for `timeout_ms` or
    /// more hung (TRANSPORT-009: not a hang); a younger one is skipped.
    pub fn ended(&mut self, at_ms: f64, timeout_ms: f64) -> Vec<Violation> {
        let mut found = Vec::new();
        let mut left: Vec<(String, Asked)> = self.requests.drain().collect();
        left.sort_by(|a, b| a.1.at_ms.total_cmp(&b.1.at_ms));
        for (id, asked) in left {
            let waited = at_ms - asked.at_ms;
            if waited >= timeout_ms {
                self.answers += 1;
                found.push(Violation::new(
                    Rule::Transport009,
                    format!("-32602 for request {id} ({}), whose params the client sent of the wrong shape", asked.method),
                    format!("no answer in {waited:.0} ms, until the connection ended"),
                ));
            } else {
                self.skips.add(Rule::Transport009, ENDED_SOON, 1);
            }
        }
        found
    }

    /// Adds what was judged to `counts`, and what was not to `skipped`.
    pub fn tally(&self, counts: &mut super::frame::Counts, skipped: &mut Skips) {
        for (rule, n) in [
            (Rule::Dispatch007, self.echoes),
            (Rule::Transport009, self.answers),
        ] {
            if n > 0 {
                *counts.entry(rule).or_insert(0) += n;
            }
        }
        skipped.add(Rule::Dispatch007, NO_ECHO, self.dispatches.len());
        skipped.merge(&self.skips);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    fn echo(client: &str, seq: i64, rejected: bool) -> String {
        let reason = if rejected {
            r#","rejectionReason":"bad""#
        } else {
            ""
        };
        format!(
            r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"ahp-session:/s","serverSeq":3,"origin":{{"clientId":"{client}","clientSeq":{seq}}}{reason},"action":{{"type":"session/titleChanged","title":7}}}}}}"#
        )
    }

    fn judge(malformed: &mut Malformed, text: &str) -> Option<Violation> {
        let mut tape = Tape::default();
        malformed.received(tape.parse(text).expect("JSON"), "me")
    }

    fn ask(malformed: &mut Malformed, id: &str, at_ms: f64) {
        let mut tape = Tape::default();
        malformed.asked(tape.parse(id).expect("JSON"), "listSessions", at_ms);
    }

    fn tally(malformed: &Malformed) -> (crate::checks::frame::Counts, Skips) {
        let (mut counts, mut skipped) = (Default::default(), Skips::default());
        malformed.tally(&mut counts, &mut skipped);
        (counts, skipped)
    }

    #[test]
    fn an_accepted_echo_of_a_malformed_dispatch_breaks_dispatch_007_once() {
        let mut malformed = Malformed::default();
        malformed.dispatched(4, "session/titleChanged");
        assert_eq!(judge(&mut malformed, &echo("other", 4, false)), None);
        assert_eq!(judge(&mut malformed, &echo("me", 5, false)), None);
        let found = judge(&mut malformed, &echo("me", 4, false)).expect("a violation");
        assert_eq!(found.rule, Rule::Dispatch007);
        assert!(found.expected.contains("clientSeq 4"), "{}", found.expected);
        // The same dispatch is judged once.
        assert_eq!(judge(&mut malformed, &echo("me", 4, false)), None);
        let (counts, skipped) = tally(&malformed);
        assert_eq!(counts.get(&Rule::Dispatch007), Some(&1));
        assert!(skipped.of(Rule::Dispatch007).is_empty());
    }

    #[test]
    fn a_rejected_echo_passes_and_a_missing_one_is_skipped() {
        let mut malformed = Malformed::default();
        malformed.dispatched(1, "session/titleChanged");
        malformed.dispatched(2, "chat/draftChanged");
        assert_eq!(judge(&mut malformed, &echo("me", 1, true)), None);
        let (counts, skipped) = tally(&malformed);
        assert_eq!(counts.get(&Rule::Dispatch007), Some(&1));
        assert_eq!(skipped.of(Rule::Dispatch007), vec![(NO_ECHO, 1)]);
    }

    #[test]
    fn a_malformed_request_answered_by_a_success_or_never_breaks_transport_009() {
        let mut malformed = Malformed::default();
        for (id, at) in [
            ("1", 0.0),
            (r#""two""#, 0.0),
            ("3", 0.0),
            ("4", 0.0),
            ("5", 900.0),
        ] {
            ask(&mut malformed, id, at);
        }
        let answer = |id: &str, body: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#);
        let success = judge(&mut malformed, &answer("1", r#""result":{}"#));
        assert_eq!(
            success.map(|v| (v.rule, v.actual)),
            Some((Rule::Transport009, "a success".to_owned()))
        );
        let refused = answer(r#""two""#, r#""error":{"code":-32602,"message":"x"}"#);
        assert_eq!(judge(&mut malformed, &refused), None);
        let other = answer("3", r#""error":{"code":-32600,"message":"x"}"#);
        assert_eq!(judge(&mut malformed, &other), None);
        // An answer to no malformed request, and the same answer again, are not judged.
        assert_eq!(judge(&mut malformed, &answer("9", r#""result":{}"#)), None);
        assert_eq!(judge(&mut malformed, &answer("1", r#""result":{}"#)), None);
        let hung = malformed.ended(1000.0, 1000.0);
        assert_eq!(hung.len(), 1, "{hung:?}");
        assert!(
            hung[0].expected.contains("request 4"),
            "{}",
            hung[0].expected
        );
        let (counts, skipped) = tally(&malformed);
        assert_eq!(counts.get(&Rule::Transport009), Some(&3));
        assert_eq!(
            skipped.of(Rule::Transport009),
            vec![(OTHER_CODE, 1), (ENDED_SOON, 1)]
        );
    }
}
