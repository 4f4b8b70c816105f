//! DISPATCH-007 over traffic the harness did not drive (a proxy's clients, a capture's): an
//! action a client dispatched malformed — no `type`, or not valid against its own type's
//! definition — is not applied. In a run the harness sends such actions only deliberately,
//! and the case that sends one judges what became of it; a client nobody scripted has no
//! case, so its sender's echo is judged here: an echo without `rejectionReason` tells every
//! subscriber to apply the action.

use super::{FastMap, Rule, Skips, Violation};
use crate::tape::Node;

/// Why DISPATCH-007 left a malformed dispatch unjudged.
pub const NO_ECHO: &str =
    "no echo of it was seen on its connection (dropped, or the connection was not subscribed)";

/// The malformed dispatches of one observed connection and what their echoes showed.
#[derive(Debug, Default, Clone)]
pub struct MalformedDispatches {
    /// clientSeq → the action's type, until the echo of that dispatch comes.
    waiting: FastMap<i64, String>,
    /// Echoes judged.
    echoes: usize,
}

impl MalformedDispatches {
    /// Notes dispatch `seq`, whose action `kind` was found malformed.
    pub fn sent(&mut self, seq: i64, kind: &str) {
        self.waiting.insert(seq, kind.to_owned());
    }

    /// Judges an `action` notification's params when they echo one of this connection's
    /// malformed dispatches (its origin names `client_id`): each such dispatch once.
    pub fn echoed(&mut self, params: Node<'_>, client_id: &str) -> Option<Violation> {
        if self.waiting.is_empty() {
            return None;
        }
        let origin = params.member("origin");
        if client_id.is_empty() || origin.member("clientId").as_str() != Some(client_id) {
            return None;
        }
        let seq = origin.member("clientSeq").as_i64()?;
        let kind = self.waiting.remove(&seq)?;
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

    /// Adds the echoes judged to `counts`, and the dispatches whose echo never came to
    /// `skipped`.
    pub fn tally(&self, counts: &mut super::frame::Counts, skipped: &mut Skips) {
        if self.echoes > 0 {
            *counts.entry(Rule::Dispatch007).or_insert(0) += self.echoes;
        }
        skipped.add(Rule::Dispatch007, NO_ECHO, self.waiting.len());
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
            r#"{{"channel":"ahp-session:/s","serverSeq":3,"origin":{{"clientId":"{client}","clientSeq":{seq}}}{reason},"action":{{"type":"session/titleChanged","title":7}}}}"#
        )
    }

    fn judge(malformed: &mut MalformedDispatches, text: &str) -> Option<Violation> {
        let mut tape = Tape::default();
        malformed.echoed(tape.parse(text).expect("JSON"), "me")
    }

    #[test]
    fn an_accepted_echo_of_a_malformed_dispatch_breaks_dispatch_007_once() {
        let mut malformed = MalformedDispatches::default();
        malformed.sent(4, "session/titleChanged");
        assert_eq!(judge(&mut malformed, &echo("other", 4, false)), None);
        assert_eq!(judge(&mut malformed, &echo("me", 5, false)), None);
        let found = judge(&mut malformed, &echo("me", 4, false)).expect("a violation");
        assert_eq!(found.rule, Rule::Dispatch007);
        assert!(found.expected.contains("clientSeq 4"), "{}", found.expected);
        // The same dispatch is judged once.
        assert_eq!(judge(&mut malformed, &echo("me", 4, false)), None);
        let (mut counts, mut skipped) = (Default::default(), Skips::default());
        malformed.tally(&mut counts, &mut skipped);
        assert_eq!(counts.get(&Rule::Dispatch007), Some(&1));
        assert!(skipped.of(Rule::Dispatch007).is_empty());
    }

    #[test]
    fn a_rejected_echo_passes_and_a_missing_one_is_skipped() {
        let mut malformed = MalformedDispatches::default();
        malformed.sent(1, "session/titleChanged");
        malformed.sent(2, "chat/draftChanged");
        assert_eq!(judge(&mut malformed, &echo("me", 1, true)), None);
        let (mut counts, mut skipped) = (Default::default(), Skips::default());
        malformed.tally(&mut counts, &mut skipped);
        assert_eq!(counts.get(&Rule::Dispatch007), Some(&1));
        assert_eq!(skipped.of(Rule::Dispatch007), vec![(NO_ECHO, 1)]);
    }
}
