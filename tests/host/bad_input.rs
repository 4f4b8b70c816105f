use std::time::Duration;

use ahpspec::host::HostConfig;
use ahpspec::transport::{Incoming, TransportError};
use serde_json::json;

use super::support::*;

#[tokio::test]
async fn malformed_frames_get_json_rpc_errors_and_the_connection_keeps_serving() {
    let host = host(None).await;
    let mut c = Client::init(host.url(), "c1").await;
    let cases: Vec<(&str, i64)> = vec![
        (r#"{"jsonrpc":"2.0","#, -32700),
        ("[1,2]", -32600),
        ("42", -32600),
        (r#"{"jsonrpc":"2.0","id":9}"#, -32600),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"ping","params":{"channel":"ahp-root://"}}"#,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#, -32600),
    ];
    for (frame, code) in cases {
        c.conn.send_raw(frame).await.expect("sent");
        let error = c.message(|m| m.get("error").is_some()).await;
        assert_eq!(error["error"]["code"], code, "frame {frame}: {error}");
        assert_eq!(
            c.ok("ping", json!({ "channel": "ahp-root://" })).await,
            serde_json::Value::Null
        );
    }
    c.conn.send_binary(vec![1, 2, 3]).await.expect("sent");
    let error = c.message(|m| m.get("error").is_some()).await;
    assert_eq!(error["error"]["code"], -32600);
    assert_eq!(
        c.err("noSuchMethod", json!({ "channel": "ahp-root://" }))
            .await,
        -32601
    );
    assert_eq!(
        c.err(
            "listSessions",
            json!({ "channel": "ahp-root://", "limit": "x" })
        )
        .await,
        -32602
    );
    assert_eq!(c.err("subscribe", json!({})).await, -32602);
    assert_eq!(
        c.err("subscribe", json!({ "channel": "ahp-session:/nope" }))
            .await,
        -32001
    );
    // Unknown keys and _meta are tolerated.
    c.ok(
        "listSessions",
        json!({ "channel": "ahp-root://", "_meta": { "x.y": 1 }, "extra": true }),
    )
    .await;
    // A dispatch to a channel that does not exist is ignored silently.
    c.dispatch(
        "ahp-chat:/nope",
        json!({ "type": "chat/turnCancelled", "turnId": "t", "duration": 0 }),
    )
    .await;
    assert!(
        !c.sees_within(Duration::from_millis(100), |m| m["method"] == "action")
            .await
    );
    finish(host).await;
}

#[tokio::test]
async fn an_oversized_frame_closes_only_that_connection() {
    let host = host_with(HostConfig {
        max_message_bytes: 64 * 1024,
        ..HostConfig::default()
    })
    .await;
    let mut victim = Client::init(host.url(), "big").await;
    let mut other = Client::init(host.url(), "other").await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"channel":"ahp-root://","pad":"{}"}}}}"#,
        "x".repeat(100 * 1024)
    );
    victim.conn.send_raw(&huge).await.expect("sent");
    let closed = victim
        .conn
        .wait_for(T, |i| matches!(i, Incoming::Closed { .. }))
        .await;
    match closed {
        Ok(Incoming::Closed { code, .. }) => {
            assert!(code == Some(1009) || code.is_none(), "close code {code:?}")
        }
        Err(TransportError::Closed) => {}
        other => panic!("expected a close, got {other:?}"),
    }
    assert_eq!(
        other.ok("ping", json!({ "channel": "ahp-root://" })).await,
        serde_json::Value::Null
    );
    finish(host).await;
}

#[tokio::test]
async fn a_client_leaving_mid_turn_does_not_disturb_others() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (_, chat) = a.ready_session("s-leave").await;
    let mut b = Client::init(host.url(), "b").await;
    b.subscribe(&chat).await;
    a.start_turn(
        &chat,
        "t1",
        &script(json!([{ "wait": { "ms": 100 } }, { "markdown": { "text": "done" } }])),
    )
    .await;
    a.conn.close().await;
    drop(a);
    let complete = b.action(&chat, "chat/turnComplete").await;
    assert_eq!(complete["action"]["turnId"], "t1");
    assert_eq!(
        b.ok("ping", json!({ "channel": "ahp-root://" })).await,
        serde_json::Value::Null
    );
    finish(host).await;
}

#[tokio::test]
async fn dispatches_before_initialize_are_never_applied() {
    let host = host(None).await;
    let mut a = Client::init(host.url(), "a").await;
    let (session, _) = a.ready_session("s-anon").await;
    let mut anon = Client::connect(host.url(), "anon").await;
    anon.dispatch(
        &session,
        json!({ "type": "session/titleChanged", "title": "hijacked" }),
    )
    .await;
    anon.conn
        .send_request("ping", json!({ "channel": "ahp-root://" }))
        .await
        .expect("sent");
    anon.message(|m| m.get("result").is_some()).await;
    assert_eq!(a.state(&session).await["title"], "New session");
    finish(host).await;
}

/// Found by `fuzz --mode frames` (structure-aware frames): a resourceRequest whose params
/// are not ResourceRequestParams was denied with -32009 echoing them as `data.request`,
/// which then broke ERR-003. Params of the wrong shape are invalid params; well-formed ones
/// are still denied with the request echoed.
#[tokio::test]
async fn resource_request_with_malformed_params_is_invalid_params() {
    let host = host(None).await;
    let mut c = Client::init(host.url(), "c1").await;
    for params in [
        json!({ "channel": [], "uri": "file:///x" }),
        json!({ "channel": "ahp-root://", "uri": "" }),
        json!({ "channel": "ahp-root://", "uri": "file:///a b" }),
        json!({ "channel": "ahp-root://", "uri": "https://h:port/" }),
        json!({ "channel": "ahp-root://", "uri": "file:///x", "read": "yes" }),
    ] {
        assert_eq!(
            c.err("resourceRequest", params.clone()).await,
            -32602,
            "{params}"
        );
    }
    assert_eq!(
        c.err(
            "resourceRequest",
            json!({ "channel": "ahp-root://", "uri": "file:///x%20y?q#f", "read": true })
        )
        .await,
        -32009
    );
}
