use serde_json::json;

use super::support::*;
use ahpspec::transport::Incoming;

#[tokio::test]
async fn ping_is_answered_before_and_after_initialize() {
    let host = host(None).await;
    let mut c = Client::connect(host.url(), "c1").await;
    let pong = c.req("ping", json!({ "channel": "ahp-root://" })).await;
    assert_eq!(pong["jsonrpc"], "2.0");
    assert!(
        pong["result"].is_null() && pong.get("result").is_some(),
        "{pong}"
    );
    let code = c
        .err("listSessions", json!({ "channel": "ahp-root://" }))
        .await;
    assert_eq!(code, -32600, "requests before initialize are refused");
    let init = c
        .ok(
            "initialize",
            json!({ "channel": "ahp-root://", "protocolVersions": ["1.0.0"],
            "clientId": "c1", "initialSubscriptions": ["ahp-root://", "ahp-session:/missing"] }),
        )
        .await;
    assert_eq!(init["protocolVersion"], "1.0.0");
    assert!(init["serverSeq"].as_u64().is_some());
    let snapshots = init["snapshots"].as_array().expect("snapshots");
    assert_eq!(
        snapshots.len(),
        1,
        "one snapshot per existing subscription: {init}"
    );
    assert_eq!(snapshots[0]["resource"], "ahp-root://");
    assert!(snapshots[0]["state"]["agents"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    assert!(snapshots[0]["fromSeq"].as_u64() <= init["serverSeq"].as_u64());
    assert_eq!(
        c.ok("ping", json!({ "channel": "ahp-root://" })).await,
        serde_json::Value::Null
    );
    assert_eq!(
        c.err(
            "initialize",
            json!({ "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "c1" })
        )
        .await,
        -32600,
        "a second initialize is refused"
    );
    finish(host).await;
}

async fn negotiate(url: &str, offered: serde_json::Value) -> serde_json::Value {
    let mut c = Client::connect(url, "v").await;
    c.req(
        "initialize",
        json!({ "channel": "ahp-root://", "protocolVersions": offered, "clientId": "v" }),
    )
    .await
}

#[tokio::test]
async fn version_negotiation_follows_the_caret_rules() {
    let host = host(None).await;
    for (offered, selected) in [
        (json!(["1.0.0"]), "1.0.0"),
        (json!(["0.9.0", "1.0.0"]), "1.0.0"),
        (json!(["1.0.0", "1.2.0"]), "1.2.0"),
        (json!(["1.3.7"]), "1.3.7"),
        (json!(["0.9.4"]), "0.9.4"),
    ] {
        let response = negotiate(host.url(), offered.clone()).await;
        assert_eq!(
            response["result"]["protocolVersion"], selected,
            "offered {offered}: {response}"
        );
    }
    for offered in [
        json!(["0.10.0"]),
        json!(["0.8.0"]),
        json!(["2.0.0"]),
        json!([]),
    ] {
        let mut c = Client::connect(host.url(), "v").await;
        let response = c
            .req(
                "initialize",
                json!({ "channel": "ahp-root://", "protocolVersions": offered, "clientId": "v" }),
            )
            .await;
        assert_eq!(
            response["error"]["code"], -32005,
            "offered {offered}: {response}"
        );
        let supported = response["error"]["data"]["supportedVersions"].as_array();
        assert!(supported.is_some_and(|s| !s.is_empty()), "{response}");
        let closed = c
            .conn
            .wait_for(T, |i| matches!(i, Incoming::Closed { .. }))
            .await;
        assert!(closed.is_ok(), "the host closes after -32005");
    }
    for offered in [
        json!(["1.0"]),
        json!(["01.0.0"]),
        json!(["1.0.0-rc.1", "1.0.0"]),
        json!(["1.0.0", "v1.0.0"]),
    ] {
        let response = negotiate(host.url(), offered.clone()).await;
        assert!(
            response.get("error").is_some(),
            "malformed {offered} must fail: {response}"
        );
    }
    finish(host).await;
}

#[tokio::test]
async fn a_0_9_connection_never_receives_later_actions() {
    let host = host(None).await;
    let mut new = Client::init(host.url(), "new").await;
    let (_, chat) = new.ready_session("s-canvas").await;
    let mut old = Client::connect(host.url(), "old").await;
    let init = old
        .ok(
            "initialize",
            json!({ "channel": "ahp-root://", "protocolVersions": ["0.9.0"], "clientId": "old" }),
        )
        .await;
    assert_eq!(init["protocolVersion"], "0.9.0");
    old.subscribe(&chat).await;
    new.start_turn(&chat, "t1", &script(json!([{ "canvases": {} }])))
        .await;
    new.action(&chat, "chat/canvasesChanged").await;
    new.action(&chat, "chat/turnComplete").await;
    old.action(&chat, "chat/turnComplete").await;
    let leaked = old.conn.backlog().any(|i| matches!(i, Incoming::Message(m) if m["params"]["action"]["type"] == "chat/canvasesChanged"));
    assert!(!leaked, "0.9 connection received chat/canvasesChanged");
    assert!(
        !old.sees_within(std::time::Duration::from_millis(50), |m| m["params"]
            ["action"]["type"]
            == "chat/canvasesChanged")
            .await
    );
    finish(host).await;
}
