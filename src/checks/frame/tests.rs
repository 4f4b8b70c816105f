//! The frame checker's own tests.

use super::*;

fn schemas() -> Schemas {
    Schemas::load(None).expect("embedded schemas compile")
}

fn rules(checker: &mut FrameChecker, text: &str) -> Vec<Rule> {
    checker
        .on_text(&mut Tape::default(), text, &schemas(), "me")
        .found
        .iter()
        .map(|v| v.rule)
        .collect()
}

fn sent(checker: &mut FrameChecker, text: &str, at_ms: f64) {
    let mut tape = Tape::default();
    match tape.parse(text) {
        Ok(message) => checker.on_sent(message, at_ms, false, "client-1"),
        Err(_) => checker.on_sent_unparseable(text),
    }
}

fn count(checker: &FrameChecker, rule: Rule) -> usize {
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
    assert_eq!(
        count(&checker, Rule::Sub002),
        0,
        "no snapshot to compare with"
    );
    sent(
        &mut checker,
        r#"{"jsonrpc":"2.0","id":7,"method":"subscribe","params":{"channel":"ahp-session:/s"}}"#,
        0.0,
    );
    let snapshot = r#"{"jsonrpc":"2.0","id":7,"result":{"snapshot":{"resource":"ahp-session:/s","fromSeq":4,"state":{}}}}"#;
    rules(&mut checker, snapshot);
    assert!(rules(&mut checker, &envelope(5)).is_empty());
    assert_eq!(count(&checker, Rule::Sub002), 1);
}

#[test]
fn a_snapshot_past_the_results_server_seq_is_not_charged_to_sub_002() {
    // The root snapshot says fromSeq 9 while the result's serverSeq is 5: INIT-004's break.
    // An envelope at 6 follows the host's counter and owes nothing to the inflated fromSeq.
    let mut checker = FrameChecker::default();
    sent(
        &mut checker,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":["1.0.0"],"clientId":"c","initialSubscriptions":["ahp-root://"]}}"#,
        0.0,
    );
    let result = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1.0.0","serverSeq":5,"snapshots":[{"resource":"ahp-root://","fromSeq":9,"state":{}}]}}"#;
    rules(&mut checker, result);
    let envelope = |seq: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"ahp-root://","serverSeq":{seq},"action":{{"type":"root/activeSessionsChanged","activeSessions":1}}}}}}"#
        )
    };
    assert!(!rules(&mut checker, &envelope(6)).contains(&Rule::Sub002));
    assert!(
        rules(&mut checker, &envelope(5)).contains(&Rule::Sub002),
        "an envelope at or before the result's serverSeq still is"
    );
}

#[test]
fn envelopes_are_checked_member_by_member_and_by_action_type() {
    let mut checker = FrameChecker::default();
    let good = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":3,"action":{"type":"session/titleChanged","title":"t"}}}"#;
    assert!(rules(&mut checker, good).is_empty());
    let missing_title = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":4,"action":{"type":"session/titleChanged"}}}"#;
    assert_eq!(rules(&mut checker, missing_title), vec![Rule::InvSchema1]);
    let bad_seq = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":-1,"action":{"type":"session/titleChanged","title":"t"}}}"#;
    assert!(rules(&mut checker, bad_seq).contains(&Rule::InvSchema1));
    let future = r#"{"jsonrpc":"2.0","method":"action","params":{"channel":"ahp-session:/s","serverSeq":5,"action":{"type":"session/fromTheFuture","x":1}}}"#;
    assert!(
        rules(&mut checker, future).is_empty(),
        "unknown action types are accepted"
    );
}
