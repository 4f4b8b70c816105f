//! The snapshot invariants as pure functions: each part of INV-SESSION-1 and INV-CHAT-5 on
//! a state that breaks only it, and nothing on a state that breaks none. (The fault tests
//! show the same checks failing against a faulty host; these pin the parts no fault
//! reaches.)

use ahpspec::checks::invariants::{chat_state, session_state};
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
        .map(|v| (v.rule, v.expected.as_str()))
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
    assert_eq!(found[0].rule, "INV-CHAT-5");
    assert!(found[0].actual.contains("\"q1\""), "{found:?}");
    // `[]` counts as absent (the reducer drops the list with its last entry).
    assert_eq!(rules_of(&chat_state(&chat(json!([])))), vec![]);
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
            if rule == "STATUS-003" {
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
