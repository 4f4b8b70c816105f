//! Delivery across connections: an accepted envelope one connection received on a channel
//! reached every other connection subscribed to that channel since before it (SUB-003; for
//! a client's dispatch, DISPATCH-002: broadcast to all subscribers). A pure function over
//! what each connection's frame checks hold, meant for a point where every connection has
//! read up to a ping answered after the envelopes (a checkpoint's catch-up).

use super::frame::FrameChecker;
use super::{Rule, Violation};

/// Every connection (by name) that missed an envelope another one received, with the
/// violation: one per connection and channel, naming the newest envelope it lacks (a miss
/// amid later envelopes included, as far back as both remember).
/// Channels the host may hold back for a connection (coalesced subscriptions) are not
/// judged for it; on a connection that resumed another by `reconnect`, only envelopes up
/// to the point it resumed from are (a later gap may be the replay's, RECONNECT-002's
/// matter).
pub fn missed(held: &[(&str, &FrameChecker)]) -> Vec<(String, Violation)> {
    let mut found = Vec::new();
    for (name, checker) in held {
        let judged_to = checker.resumed_at().unwrap_or(u64::MAX);
        let mut channels: Vec<&str> = checker.subscribed().collect();
        channels.sort_unstable();
        for channel in channels {
            let mine = checker.delivery(channel);
            let Some(from) = mine.from.filter(|_| !mine.coalescable) else {
                continue;
            };
            // The newest envelope of another connection, after this one's snapshot, that
            // this one did not get (and would remember getting).
            let lacked = held
                .iter()
                .filter(|(other, _)| other != name)
                .filter_map(|(other, c)| {
                    c.delivery(channel)
                        .seqs
                        .iter()
                        .rev()
                        .take_while(|(seq, _)| *seq > from)
                        .find(|(seq, _)| *seq <= judged_to && mine.seqs.has(*seq) == Some(false))
                        .map(|lacked| (*other, lacked))
                })
                .max_by_key(|(_, (seq, _))| *seq);
            let Some((other, (seq, dispatched))) = lacked else {
                continue;
            };
            let (rule, what) = if dispatched {
                (Rule::Dispatch002, "a client's dispatch")
            } else {
                (Rule::Sub003, "an action")
            };
            let violation = Violation::new(
                rule,
                format!(
                    "the envelope serverSeq {seq} on {channel} ({what} {other} received), on every connection subscribed since fromSeq {from}"
                ),
                match mine.last() {
                    Some((last, _)) if last > seq => format!(
                        "{name} did not receive it (its envelopes on {channel} go on to serverSeq {last})"
                    ),
                    Some((last, _)) => format!("{name}'s newest envelope on {channel} is serverSeq {last}"),
                    None => format!("{name} received no envelope on {channel}"),
                },
            );
            found.push((name.to_string(), violation));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::frame::Schemas;
    use crate::tape::Tape;

    const S: &str = "ahp-session:/s";

    fn schemas() -> Schemas {
        Schemas::load(None).expect("embedded schemas compile")
    }

    /// A connection subscribed to S at fromSeq 4 (immediately or not), then handed the
    /// envelopes `seqs` (`true`: a client's dispatch, with an origin).
    fn subscribed(immediate: bool, seqs: &[(u64, bool)]) -> FrameChecker {
        let schemas = schemas();
        let mut checker = FrameChecker::default();
        let latency = if immediate { 0 } else { 50 };
        let subscribe = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"subscribe","params":{{"channel":"{S}","delivery":{{"maxLatencyMs":{latency}}}}}}}"#
        );
        let mut tape = Tape::default();
        let message = tape.parse(&subscribe).expect("json");
        checker.on_sent(message, 0.0, false, "client-1");
        let snapshot = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"snapshot":{{"resource":"{S}","fromSeq":4,"state":{{}}}}}}}}"#
        );
        checker.on_text(&mut Tape::default(), &snapshot, &schemas, "me");
        for (seq, dispatched) in seqs {
            let origin = if *dispatched {
                r#","origin":{"clientId":"other","clientSeq":1}"#
            } else {
                ""
            };
            let envelope = format!(
                r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"{S}","serverSeq":{seq}{origin},"action":{{"type":"session/titleChanged","title":"t"}}}}}}"#
            );
            checker.on_text(&mut Tape::default(), &envelope, &schemas, "me");
        }
        checker
    }

    fn rules(held: &[(&str, &FrameChecker)]) -> Vec<(String, Rule)> {
        missed(held)
            .into_iter()
            .map(|(conn, v)| (conn, v.rule))
            .collect()
    }

    #[test]
    fn an_envelope_one_subscriber_lacks_is_named_on_that_subscriber() {
        let a = subscribed(true, &[(5, true), (6, false)]);
        let all = subscribed(true, &[(5, true), (6, false)]);
        let short = subscribed(true, &[(5, true)]);
        assert!(rules(&[("a", &a), ("b", &all)]).is_empty());
        assert_eq!(
            rules(&[("a", &a), ("b", &short)]),
            vec![("b".to_owned(), Rule::Sub003)],
            "the host's own action 6 never reached b"
        );
        // A miss amid later envelopes: b got 5 and 7 but not a's dispatch 6.
        let a = subscribed(true, &[(5, false), (6, true), (7, false)]);
        let gap = subscribed(true, &[(5, false), (7, false)]);
        assert_eq!(
            rules(&[("a", &a), ("b", &gap)]),
            vec![("b".to_owned(), Rule::Dispatch002)]
        );
        let dispatch = subscribed(true, &[(5, true)]);
        let nothing = subscribed(true, &[]);
        assert_eq!(
            rules(&[("a", &dispatch), ("b", &nothing)]),
            vec![("b".to_owned(), Rule::Dispatch002)],
            "a client's dispatch 5 was not broadcast to b"
        );
    }

    #[test]
    fn held_back_and_resumed_subscriptions_and_older_envelopes_are_not_judged() {
        let a = subscribed(true, &[(5, true), (6, false)]);
        let coalesced = subscribed(false, &[]);
        assert!(rules(&[("a", &a), ("b", &coalesced)]).is_empty());
        // After a reconnect, a gap past the point it resumed from may be the replay's.
        let mut resumed = FrameChecker::default();
        resumed.resume_from(&subscribed(true, &[]));
        assert!(rules(&[("a", &a), ("b", &resumed)]).is_empty());
        // Before it, the old connection's miss is still delivery's: b resumed from 7
        // without a's dispatch 6.
        let mut resumed = FrameChecker::default();
        resumed.resume_from(&subscribed(true, &[(5, false), (7, false)]));
        let a = subscribed(true, &[(5, false), (6, true), (7, false), (8, false)]);
        assert_eq!(
            rules(&[("a", &a), ("b", &resumed)]),
            vec![("b".to_owned(), Rule::Dispatch002)]
        );
        // Envelopes at or before b's fromSeq were never b's to get.
        let old = subscribed(true, &[(3, false), (4, true)]);
        let late = subscribed(true, &[]);
        assert!(rules(&[("a", &old), ("b", &late)]).is_empty());
    }
}
