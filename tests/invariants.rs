//! The snapshot invariants as pure functions: each part of INV-SESSION-1, INV-CHAT-4 and
//! INV-CHAT-5 on a state that breaks only it, and nothing on a state that breaks none.
//! (The fault tests show the same checks failing against a faulty host; these pin the
//! parts no fault reaches.)

use ahpspec::checks::compare::summary_matches;
use ahpspec::checks::invariants::{chat_state, session_at_rest, session_state};
use serde_json::{json, Value};

fn session() -> Value {
    json!({
        "lifecycle": "ready",
        "defaultChat": "ahp-chat:/a",
        "chats": [
            { "resource": "ahp-chat:/a", "title": "A", "status": 1, "movable": false },
            { "resource": "ahp-chat:/b", "title": "B", "status": 1, "movable": true }
        ]
    })
}

fn rules_of(found: &[ahpspec::checks::Violation]) -> Vec<(&str, &str)> {
    found
        .iter()
        .map(|v| (v.rule.id(), v.expected.as_str()))
        .collect()
}

#[test]
fn a_consistent_session_breaks_nothing() {
    assert_eq!(
        rules_of(&session_state("ahp-session:/s", &session())),
        vec![]
    );
    let mut failed = session();
    failed["lifecycle"] = json!("failed");
    failed["creationError"] = json!({ "errorType": "X", "message": "no" });
    assert_eq!(rules_of(&session_state("ahp-session:/s", &failed)), vec![]);
}

#[test]
fn each_part_of_inv_session_1_fails_on_its_own() {
    let mut twice = session();
    let first = twice["chats"][0].clone();
    twice["chats"].as_array_mut().expect("chats").push(first);
    let mut movable = session();
    movable["chats"][0]["movable"] = json!(true);
    let mut failed_without_error = session();
    failed_without_error["lifecycle"] = json!("failed");
    let mut error_while_ready = session();
    error_while_ready["creationError"] = json!({ "errorType": "X", "message": "no" });
    for (state, expected) in [
        (twice, "each chat listed once in the session's catalog"),
        (movable, "the default chat is not movable"),
        (
            failed_without_error,
            "lifecycle failed exactly when creationError is present",
        ),
        (
            error_while_ready,
            "lifecycle failed exactly when creationError is present",
        ),
    ] {
        let found = session_state("ahp-session:/s", &state);
        assert_eq!(
            rules_of(&found),
            vec![("INV-SESSION-1", expected)],
            "{state}"
        );
        assert!(found[0].actual.contains("ahp-session:/s"), "{found:?}");
    }
}

#[test]
fn inv_session_2_fails_on_a_repeated_client_or_input_id() {
    let client = json!({ "clientId": "c1", "tools": [] });
    let request = json!({ "kind": "chatInput", "id": "r1", "chat": "ahp-chat:/a" });
    let mut unique = session();
    unique["activeClients"] = json!([client, { "clientId": "c2", "tools": [] }]);
    unique["inputNeeded"] =
        json!([request, { "kind": "chatInput", "id": "r2", "chat": "ahp-chat:/a" }]);
    assert_eq!(rules_of(&session_state("ahp-session:/s", &unique)), vec![]);
    for (list, entry, expected) in [
        ("activeClients", &client, "activeClients[].clientId unique"),
        ("inputNeeded", &request, "inputNeeded[].id unique"),
    ] {
        let mut twice = session();
        twice[list] = json!([entry, entry]);
        assert_eq!(
            rules_of(&session_state("ahp-session:/s", &twice)),
            vec![("INV-SESSION-2", expected)],
            "{twice}"
        );
    }
}

#[test]
fn a_default_chat_not_listed_yet_is_not_a_violation() {
    let mut early = session();
    early["defaultChat"] = json!("ahp-chat:/not-added-yet");
    assert_eq!(rules_of(&session_state("ahp-session:/s", &early)), vec![]);
}

fn chat(queue: Value) -> Value {
    json!({
        "resource": "ahp-chat:/a",
        "status": 1,
        "turns": [],
        "queuedMessages": queue
    })
}

#[test]
fn inv_chat_5_fails_on_a_repeated_queued_id_only() {
    let message = json!({ "text": "hi", "origin": { "kind": "user" } });
    let good =
        chat(json!([{ "id": "q1", "message": message }, { "id": "q2", "message": message }]));
    assert_eq!(rules_of(&chat_state(&good)), vec![]);
    let repeated =
        chat(json!([{ "id": "q1", "message": message }, { "id": "q1", "message": message }]));
    let found = chat_state(&repeated);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule.id(), "INV-CHAT-5");
    assert!(found[0].actual.contains("\"q1\""), "{found:?}");
    // `[]` counts as absent (the reducer drops the list with its last entry).
    assert_eq!(rules_of(&chat_state(&chat(json!([])))), vec![]);
}

fn input_request(id: &str, response: Option<&str>) -> Value {
    let mut part = json!({ "kind": "inputRequest", "request": { "id": id, "message": "?" } });
    if let Some(response) = response {
        part["response"] = json!(response);
    }
    part
}

/// INV-CHAT-4: two open requests of one id in the active turn fail; an answered one beside
/// an open one of the same id, and unanswered parts left in ended turns, do not.
#[test]
fn inv_chat_4_fails_on_an_open_request_id_twice_in_the_active_turn_only() {
    let with = |active: Vec<Value>, ended: Vec<Value>| {
        json!({
            "resource": "ahp-chat:/a",
            "status": 24,
            "turns": [{ "id": "t0", "state": "cancelled", "responseParts": ended }],
            "activeTurn": { "id": "t1", "responseParts": active }
        })
    };
    let open = |id| input_request(id, None);
    let distinct = with(vec![open("r1"), open("r2")], vec![open("r1"), open("r1")]);
    assert_eq!(rules_of(&chat_state(&distinct)), vec![]);
    let answered = with(
        vec![input_request("r1", Some("accept")), open("r1")],
        vec![],
    );
    assert_eq!(rules_of(&chat_state(&answered)), vec![]);
    let twice = with(vec![open("r1"), open("r2"), open("r1")], vec![]);
    let found = chat_state(&twice);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule.id(), "INV-CHAT-4");
    assert!(found[0].actual.contains("\"r1\""), "{found:?}");
}

fn chat_with_turn(turn: Value) -> Value {
    json!({ "resource": "ahp-chat:/a", "status": 1, "turns": [turn] })
}

fn part(kind: &str) -> Value {
    json!({ "kind": kind, "id": format!("p-{kind}") })
}

#[test]
fn inv_chat_1_and_3_judge_ended_turns() {
    let ok = [
        json!({ "id": "t1", "state": "complete", "duration": 0, "responseParts": [part("markdown")] }),
        // An earlier error part is legal (a resumed turn keeps it) as long as an errored
        // turn ends with one.
        json!({ "id": "t2", "state": "error", "responseParts": [part("error"), part("markdown"), part("error")] }),
        json!({ "id": "t3", "state": "complete", "responseParts": [part("error"), part("markdown")] }),
    ];
    for turn in ok {
        assert_eq!(
            rules_of(&chat_state(&chat_with_turn(turn.clone()))),
            vec![],
            "{turn}"
        );
    }
    let broken = [
        (
            json!({ "id": "t1", "state": "running", "responseParts": [] }),
            (
                "INV-CHAT-1",
                "an ended turn's state is complete, cancelled or error",
            ),
        ),
        (
            json!({ "id": "t1", "state": "cancelled", "duration": -5, "responseParts": [] }),
            ("INV-CHAT-1", "an ended turn's duration is not negative"),
        ),
        (
            json!({ "id": "t1", "state": "error", "responseParts": [part("error"), part("markdown")] }),
            ("INV-CHAT-3", "an errored turn ends with an error part"),
        ),
        (
            json!({ "id": "t1", "state": "error", "responseParts": [] }),
            ("INV-CHAT-3", "an errored turn ends with an error part"),
        ),
    ];
    for (turn, expected) in broken {
        assert_eq!(
            rules_of(&chat_state(&chat_with_turn(turn.clone()))),
            vec![expected],
            "{turn}"
        );
    }
}

#[test]
fn inv_session_3_fails_on_a_repeated_working_directory() {
    let mut unique = session();
    unique["workingDirectories"] = json!(["file:///a", "file:///b"]);
    assert_eq!(rules_of(&session_state("ahp-session:/s", &unique)), vec![]);
    let mut twice = session();
    twice["workingDirectories"] = json!(["file:///a", "file:///a"]);
    assert_eq!(
        rules_of(&session_state("ahp-session:/s", &twice)),
        vec![("INV-SESSION-3", "workingDirectories without duplicates")]
    );
    let mut chat_twice = chat(json!([]));
    chat_twice["workingDirectories"] = json!(["file:///a", "file:///a"]);
    assert_eq!(
        rules_of(&chat_state(&chat_twice)),
        vec![("INV-SESSION-3", "workingDirectories without duplicates")]
    );
}

/// "checked N" counts only what was looked at: STATUS-003 judges a chat's status, so a chat
/// state without one is not counted.
#[test]
fn status_003_counts_only_chat_states_with_a_status() {
    let count = |state: &Value| {
        let mut statuses = 0;
        ahpspec::checks::invariants::snapshot("ahp-chat:/c", state, &mut |rule, n| {
            if rule.id() == "STATUS-003" {
                statuses += n;
            }
        });
        statuses
    };
    assert_eq!(
        count(&json!({"resource": "ahp-chat:/c", "status": 1, "turns": []})),
        1
    );
    assert_eq!(count(&json!({"resource": "ahp-chat:/c", "turns": []})), 0);
}

fn tool_call(id: &str, status: &str) -> Value {
    let mut call = json!({
        "toolCallId": id, "toolName": "t", "displayName": "T",
        "invocationMessage": "Running t", "status": status
    });
    match status {
        "running" | "completed" | "pending-result-confirmation" => {
            call["confirmed"] = json!("not-needed")
        }
        "cancelled" => call["reason"] = json!("skipped"),
        "auth-required" => call["contributor"] = json!({ "kind": "mcp", "customizationId": "m" }),
        _ => {}
    }
    call
}

fn chat_with_calls(ended: &[Value], active: Option<&[Value]>) -> Value {
    let parts = |calls: &[Value]| -> Vec<Value> {
        calls
            .iter()
            .map(|call| json!({ "kind": "toolCall", "toolCall": call }))
            .collect()
    };
    let mut state = json!({
        "resource": "ahp-chat:/a",
        "status": 1,
        "turns": [{ "id": "t1", "state": "complete", "responseParts": parts(ended) }]
    });
    if let Some(calls) = active {
        let blocking = calls.iter().any(|call| call["status"] == "auth-required");
        state["status"] = json!(if blocking { 24 } else { 8 });
        state["activeTurn"] = json!({ "id": "t2", "responseParts": parts(calls) });
    }
    state
}

#[test]
fn each_part_of_inv_chat_2_and_inv_tool_2_fails_on_its_own() {
    let fine = chat_with_calls(
        &[tool_call("a", "completed"), tool_call("b", "cancelled")],
        Some(&[tool_call("a", "running"), tool_call("c", "auth-required")]),
    );
    assert_eq!(rules_of(&chat_state(&fine)), vec![]);
    let mut maybe = tool_call("a", "completed");
    maybe["confirmed"] = json!("maybe");
    let mut unconfirmed = tool_call("a", "running");
    unconfirmed.as_object_mut().map(|c| c.remove("confirmed"));
    let mut refused = tool_call("a", "cancelled");
    refused["reason"] = json!("refused");
    let mut client_auth = tool_call("a", "auth-required");
    client_auth["contributor"] = json!({ "kind": "client", "clientId": "c1" });
    let cases = [
        (
            vec![tool_call("a", "completed"), tool_call("a", "cancelled")],
            ("INV-CHAT-2", "tool-call ids unique within a turn"),
        ),
        (
            vec![tool_call("a", "paused")],
            ("INV-CHAT-2", "a tool call's status is one of the seven"),
        ),
        (
            vec![tool_call("a", "pending-confirmation")],
            (
                "INV-CHAT-2",
                "tool calls of ended turns are completed or cancelled",
            ),
        ),
        (
            vec![maybe],
            (
                "INV-TOOL-2",
                "a completed tool call's confirmed is one of [\"not-needed\", \"user-action\", \"setting\"]",
            ),
        ),
        (
            vec![refused],
            (
                "INV-TOOL-2",
                "a cancelled tool call's reason is one of [\"denied\", \"skipped\", \"result-denied\"]",
            ),
        ),
    ];
    for (calls, expected) in cases {
        let state = chat_with_calls(&calls, None);
        assert_eq!(rules_of(&chat_state(&state)), vec![expected], "{state}");
    }
    // In the active turn: a missing confirmed, and auth-required for a client tool.
    for (call, expected) in [
        (
            unconfirmed,
            "a running tool call's confirmed is one of [\"not-needed\", \"user-action\", \"setting\"]",
        ),
        (
            client_auth,
            "auth-required only for a call an MCP server contributed",
        ),
    ] {
        let state = chat_with_calls(&[], Some(&[call]));
        assert_eq!(
            rules_of(&chat_state(&state)),
            vec![("INV-TOOL-2", expected)],
            "{state}"
        );
    }
}

#[test]
fn the_quiescence_parts_of_inv_session_1_2_3_fail_on_their_own() {
    let mut state = session();
    state["workingDirectories"] = json!(["file:///w"]);
    state["inputNeeded"] = json!([{ "kind": "chatInput", "id": "r1", "chat": "ahp-chat:/b" }]);
    let inside = json!({ "workingDirectories": ["file:///w"] });
    let chats = [("ahp-chat:/a", &inside)];
    let mut looked_at = Vec::new();
    let found = session_at_rest("ahp-session:/s", &state, &chats, &mut |rule, n| {
        looked_at.push((rule.id(), n))
    });
    assert_eq!(rules_of(&found), vec![]);
    assert_eq!(
        looked_at,
        vec![
            ("INV-SESSION-1", 1),
            ("INV-SESSION-2", 1),
            ("INV-SESSION-3", 1)
        ]
    );
    let mut unlisted_default = state.clone();
    unlisted_default["defaultChat"] = json!("ahp-chat:/gone");
    let mut unlisted_input = state.clone();
    unlisted_input["inputNeeded"][0]["chat"] = json!("ahp-chat:/gone");
    for (broken, expected) in [
        (
            unlisted_default,
            (
                "INV-SESSION-1",
                "the default chat is listed in the session's chats (at quiescence)",
            ),
        ),
        (
            unlisted_input,
            (
                "INV-SESSION-2",
                "each inputNeeded entry's chat is listed in the session's chats (at quiescence)",
            ),
        ),
    ] {
        let found = session_at_rest("ahp-session:/s", &broken, &chats, &mut |_, _| {});
        assert_eq!(rules_of(&found), vec![expected], "{broken}");
    }
    let stray = json!({ "workingDirectories": ["file:///w", "file:///elsewhere"] });
    let found = session_at_rest(
        "ahp-session:/s",
        &state,
        &[("ahp-chat:/a", &stray)],
        &mut |_, _| {},
    );
    assert_eq!(
        rules_of(&found),
        vec![(
            "INV-SESSION-3",
            "a chat's workingDirectories are among its session's (at quiescence)"
        )]
    );
}

#[test]
fn inv_summary_2_and_3_compare_the_listing_with_the_session() {
    let mut state = session();
    state["provider"] = json!("p");
    state["status"] = json!(1 | 32);
    let listed = || {
        json!({
            "resource": "ahp-session:/s", "provider": "p", "title": null, "status": 8 | 32,
            "activity": "working",
            "chats": [
                { "resource": "ahp-chat:/a", "title": "A", "status": 1 },
                { "resource": "ahp-chat:/b", "title": "B" }
            ]
        })
    };
    let mut looked_at = Vec::new();
    let found = summary_matches("ahp-session:/s", &listed(), &state, &mut |rule, n| {
        looked_at.push((rule.id(), n))
    });
    // Activity bits and activity are not compared; an absent chat status is "unknown".
    assert_eq!(rules_of(&found), vec![]);
    assert_eq!(looked_at, vec![("INV-SUMMARY-3", 1), ("INV-SUMMARY-2", 1)]);
    let mut flags = listed();
    flags["status"] = json!(8 | 64);
    let mut title = listed();
    title["title"] = json!("other");
    let mut order = listed();
    order["chats"].as_array_mut().expect("chats").reverse();
    let mut chat_title = listed();
    chat_title["chats"][1]["title"] = json!("other");
    let mut chat_status = listed();
    chat_status["chats"][0]["status"] = json!(2);
    for (entry, rule) in [
        (flags, "INV-SUMMARY-3"),
        (title, "INV-SUMMARY-3"),
        (order, "INV-SUMMARY-2"),
        (chat_title, "INV-SUMMARY-2"),
        (chat_status, "INV-SUMMARY-2"),
    ] {
        let found = summary_matches("ahp-session:/s", &entry, &state, &mut |_, _| {});
        let rules: Vec<&str> = found.iter().map(|v| v.rule.id()).collect();
        assert_eq!(rules, vec![rule], "{entry}");
    }
}
