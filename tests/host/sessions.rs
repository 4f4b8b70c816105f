use std::time::Duration;

use serde_json::json;

use super::support::*;

#[tokio::test]
async fn session_lifecycle_is_announced_and_errors_are_right() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let mut watcher = Client::init(host.url(), "w").await;
    a.ok(
        "createSession",
        json!({ "channel": "ahp-session:/s1", "progressToken": "p1" }),
    )
    .await;
    let added = watcher.notification("root/sessionAdded").await;
    assert_eq!(added["summary"]["resource"], "ahp-session:/s1");
    assert_eq!(added["summary"]["provider"], "ahpspec-scripted");
    let snapshot = a.subscribe("ahp-session:/s1").await;
    let lifecycle = snapshot["state"]["lifecycle"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        lifecycle == "creating" || lifecycle == "ready",
        "{snapshot}"
    );
    if lifecycle == "creating" {
        let ready = a.action("ahp-session:/s1", "session/ready").await;
        assert!(
            ready.get("origin").is_none(),
            "host actions carry no origin"
        );
    }
    // Progress starts at 0 of 1 on creation and ends at 1 of 1 once the session is ready.
    let first = a.notification("root/progress").await;
    assert_eq!(
        (first["progress"].as_i64(), first["total"].as_i64()),
        (Some(0), Some(1))
    );
    let last = a.notification("root/progress").await;
    assert_eq!(last["progress"], last["total"]);
    let chats = snapshot["state"]["chats"].as_array().expect("chats");
    assert_eq!(chats.len(), 1, "a session starts with its default chat");
    assert_eq!(snapshot["state"]["defaultChat"], chats[0]["resource"]);

    assert_eq!(
        a.err("createSession", json!({ "channel": "ahp-session:/s1" }))
            .await,
        -32003
    );
    assert_eq!(
        a.err(
            "createSession",
            json!({ "channel": "ahp-session:/s2", "provider": "nope" })
        )
        .await,
        -32002
    );
    assert_eq!(
        a.err("createSession", json!({ "channel": "not-a-session" }))
            .await,
        -32602
    );
    assert_eq!(
        a.err(
            "createSession",
            json!({ "channel": "ahp-session:/s3",
            "activeClient": { "clientId": "someone-else", "tools": [] } })
        )
        .await,
        -32602
    );

    a.ok(
        "createSession",
        json!({ "channel": "ahp-session:/broken", "provider": "ahpspec-unavailable" }),
    )
    .await;
    let failed_snapshot = a.subscribe("ahp-session:/broken").await;
    if failed_snapshot["state"]["lifecycle"] != "failed" {
        a.action("ahp-session:/broken", "session/creationFailed")
            .await;
    }
    let failed = a.state("ahp-session:/broken").await;
    assert_eq!(failed["lifecycle"], "failed");
    assert!(failed["creationError"]["message"].is_string());
    let broken_chat = failed["defaultChat"]
        .as_str()
        .expect("default chat")
        .to_owned();
    a.subscribe(&broken_chat).await;
    let seq = a
        .dispatch(
            &broken_chat,
            json!({ "type": "chat/turnStarted", "turnId": "t", "startedAt": now(),
            "message": user_message("hi") }),
        )
        .await;
    assert!(
        a.echo(seq).await["rejectionReason"].is_string(),
        "a failed session takes no turns"
    );

    let listed = a
        .ok("listSessions", json!({ "channel": "ahp-root://" }))
        .await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(2));

    a.ok("disposeSession", json!({ "channel": "ahp-session:/s1" }))
        .await;
    let removed = watcher.notification("root/sessionRemoved").await;
    assert_eq!(removed["session"], "ahp-session:/s1");
    assert_eq!(
        a.err("subscribe", json!({ "channel": "ahp-session:/s1" }))
            .await,
        -32001
    );
    assert_eq!(
        a.err("disposeSession", json!({ "channel": "ahp-session:/s1" }))
            .await,
        -32001
    );
    let listed = a
        .ok("listSessions", json!({ "channel": "ahp-root://" }))
        .await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1));
    finish(host).await;
}

#[tokio::test]
async fn list_sessions_pages_through_every_session_once() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    for n in 0..5 {
        a.ok(
            "createSession",
            json!({ "channel": format!("ahp-session:/p{n}") }),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut cursor = serde_json::Value::Null;
    loop {
        let mut params = json!({ "channel": "ahp-root://", "limit": 2 });
        if !cursor.is_null() {
            params["cursor"] = cursor.clone();
        }
        let page = a.ok("listSessions", params).await;
        let items = page["items"].as_array().expect("items");
        assert!(items.len() <= 2);
        seen.extend(
            items
                .iter()
                .map(|i| i["resource"].as_str().unwrap_or_default().to_owned()),
        );
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        (0..5)
            .map(|n| format!("ahp-session:/p{n}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        a.err(
            "listSessions",
            json!({ "channel": "ahp-root://", "cursor": "garbage" })
        )
        .await,
        -32602
    );
    finish(host).await;
}

#[tokio::test]
async fn chats_are_added_before_the_response_and_removed_on_dispose() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, _) = a.ready_session("s-chats").await;
    let id = a
        .conn
        .send_request(
            "createChat",
            json!({ "channel": session, "chat": "ahp-chat:/extra" }),
        )
        .await
        .expect("sent");
    let first = a
        .message(|m| m["params"]["action"]["type"] == "session/chatAdded" || m["id"] == id)
        .await;
    assert_eq!(
        first["params"]["action"]["summary"]["resource"], "ahp-chat:/extra",
        "chatAdded precedes the response"
    );
    a.conn.response(id, T).await.expect("createChat answered");
    let chat = a.subscribe("ahp-chat:/extra").await;
    assert_eq!(chat["resource"], "ahp-chat:/extra");
    assert_eq!(
        a.err(
            "createChat",
            json!({ "channel": session, "chat": "ahp-chat:/extra" })
        )
        .await,
        -32010
    );
    assert_eq!(
        a.err(
            "createChat",
            json!({ "channel": session, "chat": "ahp-chat:/fork",
            "source": { "kind": "fork", "chat": "ahp-chat:/extra", "turnId": "t" } })
        )
        .await,
        -32602
    );
    assert_eq!(
        a.err(
            "createChat",
            json!({ "channel": "ahp-session:/nope", "chat": "ahp-chat:/x" })
        )
        .await,
        -32001
    );
    a.ok("disposeChat", json!({ "channel": "ahp-chat:/extra" }))
        .await;
    let removed = a.action(&session, "session/chatRemoved").await;
    assert_eq!(removed["action"]["chat"], "ahp-chat:/extra");
    assert_eq!(
        a.err("subscribe", json!({ "channel": "ahp-chat:/extra" }))
            .await,
        -32008
    );
    finish(host).await;
}

#[tokio::test]
async fn subscriptions_deliver_to_subscribers_only_and_stop_on_unsubscribe() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, _) = a.ready_session("s-subs").await;
    let mut b = Client::init(host.url(), "b").await;
    let mut root_only = Client::init(host.url(), "r").await;
    b.subscribe(&session).await;
    a.dispatch_echo(
        &session,
        json!({ "type": "session/activeClientSet",
        "activeClient": { "clientId": "a", "tools": [] } }),
    )
    .await;
    let echo = a
        .dispatch_echo(
            &session,
            json!({ "type": "session/titleChanged", "title": "one" }),
        )
        .await;
    assert!(echo.get("rejectionReason").is_none());
    let seen = b.action(&session, "session/titleChanged").await;
    assert_eq!(seen, echo, "other subscribers get the identical envelope");
    assert!(
        !root_only
            .sees_within(Duration::from_millis(50), |m| m["params"]["channel"]
                == session.as_str())
            .await
    );
    // Unsubscribing removes the client from activeClients, and delivery stops.
    a.conn
        .send_notification("unsubscribe", json!({ "channel": session }))
        .await
        .expect("sent");
    let removed = b.action(&session, "session/activeClientRemoved").await;
    assert_eq!(removed["action"]["clientId"], "a");
    b.dispatch_echo(
        &session,
        json!({ "type": "session/titleChanged", "title": "two" }),
    )
    .await;
    assert!(
        !a.sees_within(Duration::from_millis(100), |m| m["params"]["action"]
            ["title"]
            == "two")
            .await
    );
    finish(host).await;
}

#[tokio::test]
async fn validation_rejects_what_the_tables_say_and_changes_nothing() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, chat) = a.ready_session("s-valid").await;
    let before = a.state(&chat).await;
    for (channel, action) in [
        (
            &chat,
            json!({ "type": "chat/turnCancelled", "turnId": "t", "duration": 0 }),
        ),
        (
            &chat,
            json!({ "type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "x", "approved": true }),
        ),
        (&chat, json!({ "type": "chat/turnResume", "turnId": "t" })),
        (
            &chat,
            json!({ "type": "chat/inputAnswerChanged", "requestId": "r", "questionId": "q" }),
        ),
        (
            &chat,
            json!({ "type": "chat/inputCompleted", "requestId": "r", "response": "accept" }),
        ),
        (
            &chat,
            json!({ "type": "chat/pendingMessageRemoved", "kind": "queued", "id": "nope" }),
        ),
        (
            &chat,
            json!({ "type": "chat/workingDirectorySet", "directory": "file:///elsewhere" }),
        ),
        (
            &chat,
            json!({ "type": "chat/delta", "turnId": "t", "partId": "p", "content": "x" }),
        ),
        (
            &chat,
            json!({ "type": "chat/turnComplete", "turnId": "t", "duration": 0 }),
        ),
        (&chat, json!({ "type": "chat/noSuchAction" })),
        (
            &chat,
            json!({ "type": "chat/draftChanged", "draft": { "text": "x", "origin": { "kind": "agent" } } }),
        ),
        (
            &chat,
            json!({ "type": "session/titleChanged", "title": "wrong channel" }),
        ),
        (&session, json!({ "type": "session/ready" })),
        (
            &session,
            json!({ "type": "session/activityChanged", "activity": "x" }),
        ),
        (
            &session,
            json!({ "type": "session/activeClientSet", "activeClient": { "clientId": "other", "tools": [] } }),
        ),
    ] {
        let seq = a.dispatch(channel, action.clone()).await;
        let echo = a.echo(seq).await;
        let reason = echo["rejectionReason"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "{action} must be rejected: {echo}");
    }
    assert_eq!(a.state(&chat).await, before, "rejections change nothing");
    assert_eq!(a.state(&session).await["title"], "New session");
    finish(host).await;
}
