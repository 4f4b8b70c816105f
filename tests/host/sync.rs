use ahp::reducers::{apply_action_to_chat, apply_action_to_session};
use ahp_types::actions::StateAction;
use ahp_types::state::{ChatState, SessionState};
use ahpspec::host::HostConfig;
use ahpspec::transport::Direction;
use serde_json::{json, Value};

use super::support::*;

/// Drops null members recursively so "absent" and "null" compare equal.
fn normal(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), normal(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normal).collect()),
        other => other.clone(),
    }
}

/// Folds the accepted envelopes of `channel` received by `client` into `snapshot`.
fn fold_chat(snapshot: &Value, received: &[Value], channel: &str) -> Value {
    let mut state: ChatState =
        serde_json::from_value(snapshot.clone()).expect("chat snapshot decodes");
    for envelope in received
        .iter()
        .filter(|e| e["channel"] == channel && e.get("rejectionReason").is_none())
    {
        let action: StateAction =
            serde_json::from_value(envelope["action"].clone()).expect("action decodes");
        apply_action_to_chat(&mut state, &action);
    }
    normal(&serde_json::to_value(&state).expect("encodes"))
}

fn fold_session(snapshot: &Value, received: &[Value], channel: &str) -> Value {
    let mut state: SessionState =
        serde_json::from_value(snapshot.clone()).expect("session snapshot decodes");
    for envelope in received
        .iter()
        .filter(|e| e["channel"] == channel && e.get("rejectionReason").is_none())
    {
        let action: StateAction =
            serde_json::from_value(envelope["action"].clone()).expect("action decodes");
        apply_action_to_session(&mut state, &action);
    }
    normal(&serde_json::to_value(&state).expect("encodes"))
}

/// Every action envelope the client received after transcript frame `from`.
fn envelopes(client: &Client, from: usize) -> Vec<Value> {
    client.conn.transcript().frames[from..]
        .iter()
        .filter(|frame| frame.direction == Direction::Received)
        .filter_map(|frame| serde_json::from_str::<Value>(&frame.text).ok())
        .filter(|m| m["method"] == "action")
        .map(|m| m["params"].clone())
        .collect()
}

#[tokio::test]
async fn two_clients_watching_one_chat_converge_with_the_host() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, chat) = a.ready_session("s-converge").await;
    let mut b = Client::init(host.url(), "b").await;
    let session_snapshot = b.subscribe(&session).await;
    let chat_snapshot = b.subscribe(&chat).await;
    let a_chat = a.state(&chat).await;
    let a_session = a.state(&session).await;
    let a_from = a.conn.transcript().frames.len();
    let b_from = b.conn.transcript().frames.len();
    let steps = json!([{ "markdown": { "text": "streamed in pieces", "chunks": 4 } },
        { "toolCall": { "id": "k", "name": "t", "confirmation": "ask" } },
        { "reasoning": { "text": "hmm", "chunks": 2 } }, { "usage": { "inputTokens": 3, "outputTokens": 5 } }]);
    a.start_turn(&chat, "t1", &script(steps)).await;
    a.action(&chat, "chat/toolCallReady").await;
    b.dispatch_echo(&chat, json!({ "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "k", "approved": true })).await;
    b.dispatch_echo(
        &chat,
        json!({ "type": "chat/draftChanged", "draft": user_message("next") }),
    )
    .await;
    b.dispatch_echo(
        &session,
        json!({ "type": "session/titleChanged", "title": "renamed" }),
    )
    .await;
    a.action(&chat, "chat/turnComplete").await;
    b.action(&chat, "chat/turnComplete").await;
    a.action(&session, "session/titleChanged").await;
    let mut fresh = Client::init(host.url(), "fresh").await;
    let host_chat = normal(&fresh.state(&chat).await);
    let host_session = normal(&fresh.state(&session).await);
    let a_seen = envelopes(&a, a_from);
    let b_seen = envelopes(&b, b_from);
    assert_eq!(
        fold_chat(&a_chat, &a_seen, &chat),
        host_chat,
        "client a's chat mirror"
    );
    assert_eq!(
        fold_chat(&chat_snapshot["state"], &b_seen, &chat),
        host_chat,
        "client b's chat mirror"
    );
    assert_eq!(
        fold_session(&a_session, &a_seen, &session),
        host_session,
        "client a's session mirror"
    );
    assert_eq!(
        fold_session(&session_snapshot["state"], &b_seen, &session),
        host_session,
        "client b's session mirror"
    );
    // serverSeq strictly increases on each connection.
    for seen in [&a_seen, &b_seen] {
        let seqs: Vec<u64> = seen
            .iter()
            .filter(|e| e.get("rejectionReason").is_none())
            .filter_map(|e| e["serverSeq"].as_u64())
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    }
    finish(host).await;
}

#[tokio::test]
async fn reconnect_replays_exactly_the_missed_envelopes() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, _) = a.ready_session("s-replay").await;
    let echo = a
        .dispatch_echo(
            &session,
            json!({ "type": "session/titleChanged", "title": "before" }),
        )
        .await;
    let last_seen = echo["serverSeq"].as_u64().expect("serverSeq");
    a.conn.close().await;
    let mut b = Client::init(host.url(), "b").await;
    b.subscribe(&session).await;
    let mut missed = Vec::new();
    for title in ["x", "y", "z"] {
        missed.push(
            b.dispatch_echo(
                &session,
                json!({ "type": "session/titleChanged", "title": title }),
            )
            .await,
        );
    }
    b.ok(
        "createSession",
        json!({ "channel": "ahp-session:/while-away" }),
    )
    .await;
    let mut back = Client::connect(host.url(), "a").await;
    let result = back
        .ok(
            "reconnect",
            json!({ "channel": "ahp-root://", "clientId": "a", "lastSeenServerSeq": last_seen,
            "subscriptions": [session, "ahp-session:/gone"] }),
        )
        .await;
    assert_eq!(result["type"], "replay", "{result}");
    let replayed: Vec<Value> = result["actions"].as_array().cloned().unwrap_or_default();
    let on_session: Vec<&Value> = replayed
        .iter()
        .filter(|e| e["channel"] == session.as_str())
        .collect();
    assert_eq!(
        on_session,
        missed.iter().collect::<Vec<_>>(),
        "exactly the missed envelopes, in order"
    );
    assert!(replayed
        .iter()
        .all(|e| e["serverSeq"].as_u64() > Some(last_seen)));
    assert_eq!(result["missing"], json!(["ahp-session:/gone"]));
    assert!(
        !back
            .sees_within(std::time::Duration::from_millis(100), |m| m["method"]
                == "root/sessionAdded")
            .await,
        "notifications are not replayed"
    );
    // Live traffic continues after the replay.
    b.dispatch_echo(
        &session,
        json!({ "type": "session/titleChanged", "title": "live" }),
    )
    .await;
    let live = back.action(&session, "session/titleChanged").await;
    assert_eq!(live["action"]["title"], "live");
    finish(host).await;
}

#[tokio::test]
async fn reconnect_past_the_replay_buffer_gets_snapshots() {
    let host = host_with(HostConfig {
        replay_capacity: 2,
        ..HostConfig::default()
    })
    .await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, _) = a.ready_session("s-snap").await;
    for title in ["1", "2", "3", "4"] {
        a.dispatch_echo(
            &session,
            json!({ "type": "session/titleChanged", "title": title }),
        )
        .await;
    }
    let mut back = Client::connect(host.url(), "a").await;
    let result = back
        .ok("reconnect", json!({ "channel": "ahp-root://", "clientId": "a", "lastSeenServerSeq": 0, "subscriptions": [session] }))
        .await;
    assert_eq!(result["type"], "snapshot", "{result}");
    let snapshot = &result["snapshots"][0];
    assert_eq!(snapshot["resource"], session.as_str());
    assert_eq!(snapshot["state"]["title"], "4");
    finish(host).await;
}
