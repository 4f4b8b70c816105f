use std::time::Duration;

use serde_json::{json, Value};

use super::support::*;

fn tool_call<'a>(state: &'a Value, id: &str) -> &'a Value {
    let turn = if state["activeTurn"].is_null() {
        state["turns"]
            .as_array()
            .and_then(|t| t.last())
            .unwrap_or(&Value::Null)
    } else {
        &state["activeTurn"]
    };
    turn["responseParts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| &p["toolCall"])
        .find(|c| c["toolCallId"] == id)
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn a_plain_turn_streams_completes_and_updates_the_catalogs() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, chat) = a.ready_session("s-turn").await;
    let echo = a.start_turn(&chat, "t1", "hello").await;
    assert!(echo.get("rejectionReason").is_none(), "{echo}");
    let part = a.action(&chat, "chat/responsePart").await;
    assert_eq!(part["action"]["turnId"], "t1");
    let delta = a.action(&chat, "chat/delta").await;
    assert_eq!(delta["action"]["partId"], part["action"]["part"]["id"]);
    let complete = a.action(&chat, "chat/turnComplete").await;
    assert!(complete["action"]["duration"]
        .as_i64()
        .is_some_and(|d| d >= 0));
    let busy = a.action(&session, "session/chatUpdated").await;
    assert_eq!(
        busy["action"]["changes"]["status"].as_u64().map(|s| s & 31),
        Some(8)
    );
    let summary = a.notification("root/sessionSummaryChanged").await;
    assert!(
        summary["changes"].get("resource").is_none()
            && summary["changes"].get("createdAt").is_none()
    );
    let state = a.state(&chat).await;
    assert_eq!(state["turns"][0]["state"], "complete");
    assert_eq!(
        state["turns"][0]["responseParts"][0]["content"],
        "You said: hello"
    );
    assert_eq!(state["status"].as_u64().map(|s| s & 31), Some(1));
    let session_state = a.state(&session).await;
    let entry = &session_state["chats"][0];
    for key in ["status", "modifiedAt", "title"] {
        assert_eq!(entry[key], state[key], "catalog {key} matches the chat");
    }
    finish(host).await;
}

#[tokio::test]
async fn tool_calls_walk_their_whole_lifecycle() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, chat) = a.ready_session("s-tools").await;
    let steps = json!([
        { "toolCall": { "id": "ask", "name": "write", "input": "{\"x\":1}", "inputChunks": 3,
                        "confirmation": "ask", "editable": true,
                        "options": [{ "id": "once", "label": "Allow once", "kind": "approve" }] } },
        { "toolCall": { "id": "deny", "name": "rm", "confirmation": "ask" } },
        { "toolCall": { "id": "result", "name": "read", "resultConfirmation": true,
                        "result": { "success": true, "text": "secret" } } },
        { "toolCall": { "id": "again", "name": "long", "reconfirm": true, "contentUpdates": 2 } },
        { "toolCall": { "id": "mine", "name": "client_tool", "client": true } }
    ]);
    a.start_turn(&chat, "t1", &script(steps)).await;
    let deltas = a.action(&chat, "chat/toolCallDelta").await;
    assert_eq!(deltas["action"]["toolCallId"], "ask");
    let ready = a.action(&chat, "chat/toolCallReady").await;
    assert!(ready["action"].get("confirmed").is_none());
    let needed = a.action(&session, "session/inputNeededSet").await;
    assert_eq!(needed["action"]["request"]["kind"], "toolConfirmation");
    let state = a.state(&chat).await;
    assert_eq!(tool_call(&state, "ask")["status"], "pending-confirmation");
    assert_eq!(tool_call(&state, "ask")["partialInput"], Value::Null);
    assert_eq!(state["status"].as_u64().map(|s| s & 31), Some(24));
    // Result confirmation on a call that is not pending it is rejected.
    let seq = a.dispatch(&chat, json!({ "type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": "ask", "approved": true })).await;
    assert!(a.echo(seq).await["rejectionReason"].is_string());
    let echo = a
        .dispatch_echo(
            &chat,
            json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "ask",
        "approved": true, "editedToolInput": "{\"x\":2}", "selectedOptionId": "once" }),
        )
        .await;
    assert!(echo.get("rejectionReason").is_none(), "{echo}");
    // Confirming again is rejected: it is no longer pending.
    let seq = a.dispatch(&chat, json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "ask", "approved": true })).await;
    assert!(a.echo(seq).await["rejectionReason"].is_string());
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/toolCallReady"
            && m["params"]["action"]["toolCallId"] == "deny"
    })
    .await;
    a.dispatch_echo(&chat, json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "deny", "approved": false })).await;
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/toolCallComplete"
            && m["params"]["action"]["toolCallId"] == "result"
    })
    .await;
    let state = a.state(&chat).await;
    assert_eq!(tool_call(&state, "ask")["status"], "completed");
    assert_eq!(tool_call(&state, "ask")["toolInput"], "{\"x\":2}");
    assert_eq!(tool_call(&state, "ask")["selectedOption"]["id"], "once");
    assert_eq!(tool_call(&state, "deny")["status"], "cancelled");
    assert_eq!(tool_call(&state, "deny")["reason"], "denied");
    assert_eq!(
        tool_call(&state, "result")["status"],
        "pending-result-confirmation"
    );
    a.dispatch_echo(&chat, json!({ "type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": "result", "approved": false })).await;
    // Mid-execution re-confirmation: running → pending-confirmation → running.
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/toolCallReady"
            && m["params"]["action"]["toolCallId"] == "again"
            && m["params"]["action"].get("confirmed").is_none()
    })
    .await;
    assert_eq!(
        tool_call(&a.state(&chat).await, "again")["status"],
        "pending-confirmation"
    );
    a.dispatch_echo(&chat, json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "again", "approved": true })).await;
    a.message(|m| m["params"]["action"]["type"] == "chat/toolCallContentChanged")
        .await;
    // Client tool: owned by "a"; another client may not complete it.
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/toolCallReady"
            && m["params"]["action"]["toolCallId"] == "mine"
    })
    .await;
    let running = a.state(&chat).await;
    assert_eq!(tool_call(&running, "mine")["status"], "running");
    assert_eq!(tool_call(&running, "mine")["contributor"]["clientId"], "a");
    let mut b = Client::init(host.url(), "b").await;
    b.subscribe(&chat).await;
    let complete = json!({ "type": "chat/toolCallComplete", "turnId": "t1", "toolCallId": "mine",
        "result": { "success": true, "pastTenseMessage": "done" } });
    let seq = b.dispatch(&chat, complete.clone()).await;
    assert!(
        b.echo(seq).await["rejectionReason"].is_string(),
        "only the owner completes a client tool"
    );
    let echo = a.dispatch_echo(&chat, complete).await;
    assert!(echo.get("rejectionReason").is_none(), "{echo}");
    a.action(&chat, "chat/turnComplete").await;
    let done = a.state(&chat).await;
    assert_eq!(tool_call(&done, "result")["reason"], "result-denied");
    assert_eq!(tool_call(&done, "again")["status"], "completed");
    assert_eq!(tool_call(&done, "mine")["status"], "completed");
    assert!(
        a.state(&session).await["inputNeeded"].is_null(),
        "aggregate entries are removed"
    );
    finish(host).await;
}

#[tokio::test]
async fn cancelling_a_turn_skips_pending_tools_and_stops_the_agent() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-cancel").await;
    a.start_turn(
        &chat,
        "t1",
        &script(
            json!([{ "toolCall": { "id": "p", "name": "x", "confirmation": "ask" } },
        { "markdown": { "text": "never" } }]),
        ),
    )
    .await;
    a.action(&chat, "chat/toolCallReady").await;
    let seq = a
        .dispatch(
            &chat,
            json!({ "type": "chat/turnCancelled", "turnId": "other", "duration": 1 }),
        )
        .await;
    assert!(
        a.echo(seq).await["rejectionReason"].is_string(),
        "cancel names the active turn"
    );
    a.dispatch_echo(
        &chat,
        json!({ "type": "chat/turnCancelled", "turnId": "t1", "duration": 5 }),
    )
    .await;
    // Everything before the echo is history; only what follows it counts.
    a.conn.take_backlog();
    let state = a.state(&chat).await;
    assert_eq!(state["turns"][0]["state"], "cancelled");
    assert_eq!(tool_call(&state, "p")["status"], "cancelled");
    assert_eq!(tool_call(&state, "p")["reason"], "skipped");
    assert!(
        !a.sees_within(Duration::from_millis(100), |m| m["params"]["action"]
            ["turnId"]
            == "t1"
            && m["params"]["origin"].is_null())
            .await,
        "no streaming after the cancel"
    );
    finish(host).await;
}

#[tokio::test]
async fn input_requests_merge_answers_and_resume_the_turn() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, chat) = a.ready_session("s-input").await;
    let mut b = Client::init(host.url(), "b").await;
    b.subscribe(&chat).await;
    let questions = json!([
        { "kind": "text", "id": "name", "message": "Name?", "required": true },
        { "kind": "boolean", "id": "ok", "message": "OK?" },
        { "kind": "single-select", "id": "pick", "message": "Pick", "options": [{ "id": "a", "label": "A" }] }
    ]);
    a.start_turn(&chat, "t1", &script(json!([{ "inputRequest": { "id": "r1", "message": "Need input", "questions": questions } },
        { "markdown": { "text": "thanks" } }]))).await;
    a.action(&chat, "chat/inputRequested").await;
    let needed = a.action(&session, "session/inputNeededSet").await;
    assert_eq!(needed["action"]["request"]["kind"], "chatInput");
    assert_eq!(
        a.state(&chat).await["status"].as_u64().map(|s| s & 31),
        Some(24)
    );
    a.dispatch_echo(
        &chat,
        json!({ "type": "chat/inputAnswerChanged", "requestId": "r1", "questionId": "name",
        "answer": { "state": "draft", "value": { "kind": "text", "value": "Ada" } } }),
    )
    .await;
    b.dispatch_echo(
        &chat,
        json!({ "type": "chat/inputAnswerChanged", "requestId": "r1", "questionId": "ok",
        "answer": { "state": "submitted", "value": { "kind": "boolean", "value": true } } }),
    )
    .await;
    let seq = a
        .dispatch(
            &chat,
            json!({ "type": "chat/inputAnswerChanged", "requestId": "r1", "questionId": "ok",
        "answer": { "state": "submitted" } }),
        )
        .await;
    assert!(
        a.echo(seq).await["rejectionReason"].is_string(),
        "a submitted answer needs a value"
    );
    let seq = a
        .dispatch(
            &chat,
            json!({ "type": "chat/inputCompleted", "requestId": "r1", "response": "accept" }),
        )
        .await;
    assert!(
        a.echo(seq).await["rejectionReason"].is_string(),
        "required question only has a draft"
    );
    let merged = a.state(&chat).await;
    let answers = &merged["activeTurn"]["responseParts"][0]["request"]["answers"];
    assert!(
        answers["name"].is_object() && answers["ok"].is_object(),
        "answers from both clients merge: {answers}"
    );
    a.dispatch_echo(&chat, json!({ "type": "chat/inputCompleted", "requestId": "r1", "response": "accept",
        "answers": { "name": { "state": "submitted", "value": { "kind": "text", "value": "Ada" } } } })).await;
    a.action(&chat, "chat/turnComplete").await;
    let state = a.state(&chat).await;
    let part = &state["turns"][0]["responseParts"][0];
    assert_eq!(
        part["kind"], "inputRequest",
        "the resolved part keeps its position"
    );
    assert_eq!(part["response"], "accept");
    assert_eq!(state["turns"][0]["responseParts"][1]["content"], "thanks");
    assert!(a.state(&session).await["inputNeeded"].is_null());
    finish(host).await;
}

#[tokio::test]
async fn queued_messages_run_fifo_and_steering_is_consumed_during_a_turn() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-queue").await;
    // Steering set while idle stays until a turn runs.
    a.dispatch_echo(&chat, json!({ "type": "chat/pendingMessageSet", "kind": "steering", "id": "s1", "message": user_message("steer") })).await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(a.state(&chat).await["steeringMessage"]["id"], "s1");
    a.start_turn(&chat, "t1", &script(json!([{ "wait": { "ms": 100 } }])))
        .await;
    let removed = a.action(&chat, "chat/pendingMessageRemoved").await;
    assert_eq!(removed["action"]["kind"], "steering");
    for id in ["q1", "q2"] {
        a.dispatch_echo(&chat, json!({ "type": "chat/pendingMessageSet", "kind": "queued", "id": id, "message": user_message(id) })).await;
    }
    a.dispatch_echo(
        &chat,
        json!({ "type": "chat/queuedMessagesReordered", "order": ["q2", "q1"] }),
    )
    .await;
    a.dispatch_echo(
        &chat,
        json!({ "type": "chat/queuedMessagesReordered", "order": ["q1", "nope"] }),
    )
    .await;
    let queued = a.state(&chat).await["queuedMessages"].clone();
    assert_eq!(
        queued.as_array().map(Vec::len),
        Some(2),
        "reorder never drops messages"
    );
    let mut consumed = Vec::new();
    for _ in 0..2 {
        let removed = a
            .message(|m| {
                m["params"]["action"]["type"] == "chat/pendingMessageRemoved"
                    && m["params"]["action"]["kind"] == "queued"
            })
            .await;
        let started = a
            .message(|m| {
                m["params"]["action"]["type"] == "chat/turnStarted"
                    && m["params"].get("origin").is_none()
            })
            .await;
        assert_eq!(
            started["params"]["action"]["queuedMessageId"],
            removed["params"]["action"]["id"]
        );
        consumed.push(
            removed["params"]["action"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    assert_eq!(consumed, ["q1", "q2"], "FIFO in the reordered order");
    // Queued while idle: consumed at once.
    a.action(&chat, "chat/turnComplete").await;
    a.action(&chat, "chat/turnComplete").await;
    a.dispatch_echo(&chat, json!({ "type": "chat/pendingMessageSet", "kind": "queued", "id": "q3", "message": user_message("q3") })).await;
    let started = a
        .message(|m| m["params"]["action"]["queuedMessageId"] == "q3")
        .await;
    assert_eq!(started["params"]["action"]["type"], "chat/turnStarted");
    finish(host).await;
}

#[tokio::test]
async fn truncation_keeps_the_right_turns_and_drops_the_active_one() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-trunc").await;
    for id in ["t1", "t2", "t3"] {
        a.start_turn(&chat, id, "hi").await;
        a.message(|m| {
            m["params"]["action"]["type"] == "chat/turnComplete"
                && m["params"]["action"]["turnId"] == id
        })
        .await;
    }
    a.start_turn(&chat, "t4", &script(json!([{ "waitForCancel": {} }])))
        .await;
    a.dispatch_echo(&chat, json!({ "type": "chat/truncated", "turnId": "nope" }))
        .await;
    assert_eq!(
        a.state(&chat).await["activeTurn"]["id"],
        "t4",
        "unknown turnId changes nothing"
    );
    a.dispatch_echo(&chat, json!({ "type": "chat/truncated", "turnId": "t2" }))
        .await;
    let state = a.state(&chat).await;
    let ids: Vec<&str> = state["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, ["t1", "t2"]);
    assert!(state["activeTurn"].is_null());
    assert_eq!(state["status"].as_u64().map(|s| s & 31), Some(1));
    a.dispatch_echo(&chat, json!({ "type": "chat/truncated" }))
        .await;
    assert_eq!(a.state(&chat).await["turns"], json!([]));
    finish(host).await;
}

#[tokio::test]
async fn windowed_snapshots_page_in_older_turns() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-page").await;
    for id in ["t1", "t2", "t3"] {
        a.start_turn(&chat, id, "hi").await;
        a.message(|m| {
            m["params"]["action"]["type"] == "chat/turnComplete"
                && m["params"]["action"]["turnId"] == id
        })
        .await;
    }
    let full = a.state(&chat).await;
    assert!(full["turnsNextCursor"].is_null(), "no view ⇒ all turns");
    let mut b = Client::init(host.url(), "b").await;
    let windowed = b
        .ok(
            "subscribe",
            json!({ "channel": chat, "view": { "turns": 1 } }),
        )
        .await;
    let cursor = windowed["snapshot"]["state"]["turnsNextCursor"].clone();
    assert_eq!(
        windowed["snapshot"]["state"]["turns"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert!(cursor.is_string());
    assert_eq!(
        b.err(
            "fetchTurns",
            json!({ "channel": chat, "cursor": "garbage" })
        )
        .await,
        -32602
    );
    let id = b
        .conn
        .send_request("fetchTurns", json!({ "channel": chat, "cursor": cursor }))
        .await
        .expect("sent");
    let first = b
        .message(|m| m["params"]["action"]["type"] == "chat/turnsLoaded" || m["id"] == id)
        .await;
    assert_eq!(
        first["params"]["action"]["type"], "chat/turnsLoaded",
        "turnsLoaded precedes the response"
    );
    let loaded: Vec<&str> = first["params"]["action"]["turns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(loaded, ["t1", "t2"]);
    finish(host).await;
}

#[tokio::test]
async fn script_errors_end_the_turn_and_resumable_errors_resume() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-err").await;
    a.start_turn(&chat, "bad", "ahpspec-script:{not json").await;
    let error = a.action(&chat, "chat/error").await;
    assert_eq!(
        error["action"]["part"]["error"]["errorType"],
        "InvalidScript"
    );
    a.start_turn(&chat, "t2", &script(json!([{ "markdown": { "text": "a" } }, { "error": { "message": "flaky", "resumable": true } },
        { "markdown": { "text": "resumed" } }]))).await;
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/error" && m["params"]["action"]["turnId"] == "t2"
    })
    .await;
    assert_eq!(
        a.state(&chat).await["status"].as_u64().map(|s| s & 31),
        Some(2)
    );
    let seq = a
        .dispatch(&chat, json!({ "type": "chat/turnResume", "turnId": "bad" }))
        .await;
    assert!(
        a.echo(seq).await["rejectionReason"].is_string(),
        "only the latest resumable turn resumes"
    );
    a.dispatch_echo(&chat, json!({ "type": "chat/turnResume", "turnId": "t2" }))
        .await;
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/turnComplete"
            && m["params"]["action"]["turnId"] == "t2"
    })
    .await;
    let state = a.state(&chat).await;
    let turn = &state["turns"][1];
    assert_eq!(turn["id"], "t2");
    assert_eq!(turn["state"], "complete");
    assert_eq!(
        turn["responseParts"]
            .as_array()
            .and_then(|p| p.last())
            .map(|p| p["content"].clone()),
        Some(json!("resumed"))
    );
    finish(host).await;
}

/// Found by the fuzzer: a resumable turn stays resumable when a later turn that failed is
/// truncated away (it is the latest errored turn again), and after a truncation that keeps it.
#[tokio::test]
async fn a_resumable_turn_made_latest_again_by_truncation_resumes() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-trunc-resume").await;
    let ends = |turn: &'static str| {
        move |m: &Value| {
            m["params"]["action"]["type"] == "chat/error" && m["params"]["action"]["turnId"] == turn
        }
    };
    a.start_turn(
        &chat,
        "t1",
        &script(
            json!([{ "error": { "message": "flaky", "resumable": true } },
        { "markdown": { "text": "resumed" } }]),
        ),
    )
    .await;
    a.message(ends("t1")).await;
    a.start_turn(
        &chat,
        "t2",
        &script(json!([{ "error": { "message": "fatal" } }])),
    )
    .await;
    a.message(ends("t2")).await;
    a.dispatch_echo(&chat, json!({ "type": "chat/truncated", "turnId": "t1" }))
        .await;
    let echo = a
        .dispatch_echo(&chat, json!({ "type": "chat/turnResume", "turnId": "t1" }))
        .await;
    assert!(echo["rejectionReason"].is_null(), "{echo}");
    a.message(|m| {
        m["params"]["action"]["type"] == "chat/turnComplete"
            && m["params"]["action"]["turnId"] == "t1"
    })
    .await;
    finish(host).await;
}
