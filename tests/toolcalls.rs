//! The tool-call lifecycle tracker (INV-TOOL-1, INV-TOOL-2 on actions, TOOL-007) and the
//! error-data shapes (ERR-002, ERR-003) as pure functions: each rule fails on the one
//! thing that breaks it and on nothing a correct host sends.

use ahpspec::checks::error_data::{auth_required, permission_denied};
use ahpspec::checks::frame::Counts;
use ahpspec::checks::toolcalls::{Status, ToolCalls};
use ahpspec::checks::{Rule, Violation};
use ahpspec::tape::Tape;
use serde_json::{json, Value};

const CHAT: &str = "ahp-chat:/a";

/// Feeds actions (host ones unless `"origin"` is set) and returns what was found.
fn feed(tracker: &mut ToolCalls, actions: &[Value]) -> (Vec<Violation>, Counts) {
    let mut found = Vec::new();
    let mut counts = Counts::default();
    let mut tape = Tape::default();
    for action in actions {
        let host = action.get("origin").is_none();
        let text = action.to_string();
        let node = tape.parse(&text).expect("valid JSON");
        tracker.action(CHAT, node, host, &mut counts, &mut found);
    }
    (found, counts)
}

fn act(kind: &str, extra: Value) -> Value {
    let mut action = json!({ "type": kind, "turnId": "t1", "toolCallId": "tc" });
    if let (Some(action), Some(extra)) = (action.as_object_mut(), extra.as_object()) {
        action.extend(extra.clone());
    }
    action
}

fn rules(found: &[Violation]) -> Vec<&'static str> {
    found.iter().map(|v| v.rule.id()).collect()
}

#[test]
fn the_lifecycle_graph_is_the_protocol_table() {
    use Status::*;
    assert!(Streaming.reaches(Completed));
    assert!(Streaming.reaches(AuthRequired));
    assert!(Running.reaches(PendingConfirmation));
    assert!(AuthRequired.reaches(Running));
    assert!(PendingResultConfirmation.reaches(Cancelled));
    assert!(!PendingResultConfirmation.reaches(Running));
    assert!(!Running.reaches(Streaming));
    assert!(!Completed.reaches(Running));
    assert!(!Cancelled.reaches(Cancelled));
    assert_eq!(Status::parse("auth-required"), Some(AuthRequired));
    assert_eq!(Status::parse("paused"), None);
}

#[test]
fn a_correct_lifecycle_breaks_nothing_and_is_counted() {
    let mut tracker = ToolCalls::default();
    let (found, counts) = feed(
        &mut tracker,
        &[
            json!({ "type": "chat/turnStarted", "turnId": "t1" }),
            act(
                "chat/toolCallStart",
                json!({ "toolName": "t", "displayName": "T" }),
            ),
            act("chat/toolCallDelta", json!({ "content": "x" })),
            act("chat/toolCallReady", json!({})),
            act(
                "chat/toolCallConfirmed",
                json!({ "approved": true, "origin": { "clientId": "c1", "clientSeq": 1 } }),
            ),
            act("chat/toolCallContentChanged", json!({ "content": [] })),
            act("chat/toolCallReady", json!({})),
            act(
                "chat/toolCallConfirmed",
                json!({ "approved": true, "confirmed": "user-action" }),
            ),
            act(
                "chat/toolCallComplete",
                json!({ "requiresResultConfirmation": true }),
            ),
            act("chat/toolCallResultConfirmed", json!({ "approved": true })),
            json!({ "type": "chat/turnComplete", "turnId": "t1", "duration": 1 }),
        ],
    );
    assert_eq!(rules(&found), Vec::<&str>::new(), "{found:?}");
    // Every host action on a started call (the start itself and client echoes are not judged).
    assert_eq!(counts.get(&Rule::InvTool1), Some(&7));
    assert_eq!(counts.get(&Rule::InvTool2), Some(&1));
}

#[test]
fn inv_tool_1_fails_after_a_terminal_status_and_off_the_graph() {
    let start = act(
        "chat/toolCallStart",
        json!({ "toolName": "t", "displayName": "T" }),
    );
    let ready = act("chat/toolCallReady", json!({ "confirmed": "not-needed" }));
    let complete = act(
        "chat/toolCallComplete",
        json!({ "result": { "success": true } }),
    );
    let to_result = act(
        "chat/toolCallComplete",
        json!({ "requiresResultConfirmation": true }),
    );
    for (actions, expected) in [
        (
            vec![
                start.clone(),
                ready.clone(),
                complete.clone(),
                ready.clone(),
            ],
            "nothing after",
        ),
        (
            vec![start.clone(), ready.clone(), to_result, ready.clone()],
            "only along",
        ),
        (
            vec![start.clone(), ready.clone(), start.clone()],
            "only along",
        ),
    ] {
        let (found, _) = feed(&mut ToolCalls::default(), &actions);
        assert_eq!(rules(&found), vec!["INV-TOOL-1"], "{actions:?}");
        assert!(found[0].expected.contains(expected), "{found:?}");
    }
    // A client echo the host accepted moves the call only as the reducers would, and is
    // not judged (the CHAT-VALIDATE rules are).
    let late_confirm = act(
        "chat/toolCallConfirmed",
        json!({ "approved": true, "origin": { "clientId": "c1", "clientSeq": 1 } }),
    );
    let (found, _) = feed(
        &mut ToolCalls::default(),
        &[start, ready, complete, late_confirm],
    );
    assert_eq!(rules(&found), Vec::<&str>::new());
}

#[test]
fn inv_tool_1_compares_a_later_snapshot_with_what_was_seen() {
    let mut tracker = ToolCalls::default();
    feed(
        &mut tracker,
        &[
            act(
                "chat/toolCallStart",
                json!({ "toolName": "t", "displayName": "T" }),
            ),
            act("chat/toolCallReady", json!({ "confirmed": "not-needed" })),
            act(
                "chat/toolCallComplete",
                json!({ "result": { "success": true } }),
            ),
        ],
    );
    let snapshot = |status: &str| {
        json!({ "activeTurn": { "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "tc", "status": status } }
        ] } })
    };
    let mut counts = Counts::default();
    let mut found = Vec::new();
    tracker.snapshot(CHAT, &snapshot("completed"), &mut counts, &mut found);
    assert_eq!(rules(&found), Vec::<&str>::new());
    tracker.snapshot(CHAT, &snapshot("running"), &mut counts, &mut found);
    assert_eq!(rules(&found), vec!["INV-TOOL-1"]);
}

#[test]
fn inv_tool_2_fails_on_open_values_and_auth_for_a_non_mcp_call() {
    let start = act(
        "chat/toolCallStart",
        json!({ "toolName": "t", "displayName": "T" }),
    );
    for (action, expected) in [
        (
            act("chat/toolCallReady", json!({ "confirmed": "maybe" })),
            "chat/toolCallReady.confirmed",
        ),
        (
            act(
                "chat/toolCallConfirmed",
                json!({ "approved": false, "reason": "bored" }),
            ),
            "chat/toolCallConfirmed.reason",
        ),
        (
            act("chat/toolCallAuthRequired", json!({ "auth": {} })),
            "MCP",
        ),
    ] {
        let mut tracker = ToolCalls::default();
        let ready = act("chat/toolCallReady", json!({ "confirmed": "not-needed" }));
        let setup = if expected == "MCP" {
            vec![start.clone(), ready]
        } else {
            vec![start.clone()]
        };
        feed(&mut tracker, &setup);
        let (found, _) = feed(&mut tracker, &[action]);
        assert_eq!(rules(&found), vec!["INV-TOOL-2"]);
        assert!(found[0].expected.contains(expected), "{found:?}");
    }
}

#[test]
fn tool_007_wants_reason_skipped_for_calls_a_turn_end_left_open() {
    let snapshot = |reason: &str| {
        json!({ "turns": [{ "id": "t1", "state": "cancelled", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "tc", "status": "cancelled", "reason": reason } }
        ] }] })
    };
    for (reason, expected) in [("skipped", vec![]), ("denied", vec!["TOOL-007"])] {
        let mut tracker = ToolCalls::default();
        feed(
            &mut tracker,
            &[
                act(
                    "chat/toolCallStart",
                    json!({ "toolName": "t", "displayName": "T" }),
                ),
                act("chat/toolCallReady", json!({})),
                json!({ "type": "chat/turnCancelled", "turnId": "t1" }),
            ],
        );
        let mut counts = Counts::default();
        let mut found = Vec::new();
        tracker.snapshot(CHAT, &snapshot(reason), &mut counts, &mut found);
        assert_eq!(rules(&found), expected, "{reason}");
        assert_eq!(counts.get(&Rule::Tool007), Some(&1));
    }
}

fn check<T>(json: Value, judge: impl FnOnce(ahpspec::tape::Node<'_>) -> T) -> T {
    let text = json.to_string();
    let mut tape = Tape::default();
    let node = tape.parse(&text).expect("valid JSON");
    judge(node.member("data"))
}

#[test]
fn err_002_and_err_003_check_the_data_shapes() {
    let good =
        json!({ "data": { "resources": [{ "resource": "https://r", "scopes_supported": [] }] } });
    assert_eq!(check(good, auth_required), Ok(()));
    assert_eq!(
        check(json!({ "data": { "resources": [] } }), auth_required),
        Ok(())
    );
    for bad in [
        json!({}),
        json!({ "data": { "resources": [{ "scopes_supported": [] }] } }),
        json!({ "data": { "resources": [{ "resource": "https://r", "scopesSupported": [] }] } }),
    ] {
        assert!(check(bad.clone(), auth_required).is_err(), "{bad}");
    }
    let accept = |_: ahpspec::tape::Node<'_>| Ok(());
    assert_eq!(check(json!({}), |d| permission_denied(d, accept)), Ok(()));
    assert_eq!(
        check(json!({ "data": {} }), |d| permission_denied(d, accept)),
        Ok(())
    );
    for bad in [
        json!({ "data": "no" }),
        json!({ "data": { "request": "file:///x" } }),
    ] {
        assert!(
            check(bad.clone(), |d| permission_denied(d, accept)).is_err(),
            "{bad}"
        );
    }
    let reject = |_: ahpspec::tape::Node<'_>| Err("invalid".to_owned());
    let request =
        json!({ "data": { "request": { "channel": "ahp-root://", "uri": "file:///x" } } });
    assert!(check(request, |d| permission_denied(d, reject)).is_err());
}

#[test]
fn a_turn_id_that_comes_back_with_another_start_is_another_turn() {
    let mut tracker = ToolCalls::default();
    feed(
        &mut tracker,
        &[
            json!({ "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00Z" }),
            act(
                "chat/toolCallStart",
                json!({ "toolName": "t", "displayName": "T" }),
            ),
            act("chat/toolCallReady", json!({ "confirmed": "not-needed" })),
            act(
                "chat/toolCallComplete",
                json!({ "result": { "success": true } }),
            ),
        ],
    );
    let snapshot = |started_at: &str| {
        json!({ "activeTurn": { "id": "t1", "startedAt": started_at, "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "tc", "status": "streaming" } }
        ] } })
    };
    let mut counts = Counts::default();
    let mut found = Vec::new();
    // The same instant written another way is the same turn: streaming after completed.
    tracker.snapshot(
        CHAT,
        &snapshot("2026-01-01T00:00:00.000Z"),
        &mut counts,
        &mut found,
    );
    assert_eq!(rules(&found), vec!["INV-TOOL-1"]);
    found.clear();
    // A later start is a new turn (the id was reused after a truncation the client missed).
    tracker.snapshot(
        CHAT,
        &snapshot("2026-01-01T00:05:00Z"),
        &mut counts,
        &mut found,
    );
    assert_eq!(rules(&found), Vec::<&str>::new());
}
