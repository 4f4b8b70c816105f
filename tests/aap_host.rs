//! The built-in AAP server over real HTTP on 127.0.0.1 (port 0): endpoints, the scripted
//! agent in every stream mode, tool calls with trust and permissions, options, history,
//! authentication and error bodies — checked with plain requests, not the harness. The CLI
//! (`serve --protocol aap`) runs as a real process.

mod aap_host_support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use aap_host_support::{serve, Client};
use ahpspec::aaphost::{self, AapFaultSet, AapHostConfig, HistoryKinds};
use serde_json::{json, Value};

async fn correct() -> (aaphost::AapHostHandle, Client) {
    serve(AapFaultSet::default(), None).await
}

#[tokio::test(flavor = "current_thread")]
async fn meta_declares_version_3_the_agent_and_its_capabilities() {
    let (_server, c) = correct().await;
    let reply = c.get("/meta").await;
    assert_eq!(
        (reply.status, reply.content_type.as_str()),
        (200, "application/json")
    );
    let meta = reply.json();
    assert_eq!(meta["version"], 3);
    let agent = &meta["agents"][0];
    assert_eq!(agent["name"], aaphost::AGENT_NAME);
    assert_eq!(
        agent["capabilities"]["stream"],
        json!({"delta": {}, "message": {}, "none": {}})
    );
    assert_eq!(agent["capabilities"]["history"], json!({"full": {}}));
    let kinds: Vec<&str> = agent["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|option| option["type"].as_str())
        .collect();
    assert_eq!(kinds, ["select", "text", "secret"]);
}

#[tokio::test(flavor = "current_thread")]
async fn sessions_are_created_listed_in_pages_and_deleted() {
    let (_server, c) = correct().await;
    let reply = c.create_with(json!({})).await;
    assert_eq!(reply.status, 201, "{reply:?}");
    let first = reply.json()["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    assert_eq!(
        reply.headers["location"],
        format!("/sessions/{first}").as_str()
    );
    for _ in 0..4 {
        c.session().await;
    }
    let page = c.get("/sessions").await.json();
    assert_eq!(
        page["sessions"].as_array().map(Vec::len),
        Some(2),
        "page size 2"
    );
    assert_eq!(page["sessions"][0]["sessionId"], first.as_str());
    let next = page["next"].as_str().expect("a next page");
    let last = c.get(&format!("/sessions?after={next}")).await.json();
    let last = c
        .get(&format!(
            "/sessions?after={}",
            last["next"].as_str().expect("third page")
        ))
        .await
        .json();
    assert_eq!(last["sessions"].as_array().map(Vec::len), Some(1));
    assert!(
        last.get("next").is_none(),
        "no next on the last page: {last}"
    );
    assert_eq!(c.get("/sessions?after=garbage").await.status, 400);

    let path = format!("/sessions/{first}");
    let deleted = c.delete(&path).await;
    assert_eq!((deleted.status, deleted.body.as_str()), (204, ""));
    assert_eq!(c.get(&path).await.status, 404);
    assert_eq!(
        c.get(&format!("{path}/history?type=full")).await.status,
        404
    );
    let hello = json!({"messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(c.turn(&first, hello).await.status, 404);
    assert_eq!(c.delete(&path).await.status, 404);
    let error = c.get("/sessions/sess_12345").await;
    assert_eq!(
        (error.status, error.content_type.as_str()),
        (404, "application/json")
    );
    assert!(error.json()["error"].is_string(), "{error:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn one_script_carries_the_same_content_in_every_mode() {
    let (_server, c) = correct().await;
    let id = c.session().await;
    let script = json!({"steps": [{"thinking": "let me see"}, {"text": ["Hel", "lo"]}, {"text": " world"}], "stop": "max_tokens"});
    let delta = c.script(&id, "delta", script.clone()).await;
    assert_eq!(delta.content_type, "text/event-stream");
    assert_eq!(
        delta.event_names(),
        [
            "turn_start",
            "thinking_delta",
            "thinking_delta",
            "thinking_delta",
            "text_delta",
            "text_delta",
            "text_delta",
            "text_delta",
            "turn_stop"
        ]
    );
    let message = c.script(&id, "message", script.clone()).await;
    assert_eq!(
        message.event_names(),
        ["turn_start", "thinking", "text", "text", "turn_stop"]
    );
    let none = c.script(&id, "none", script).await;
    assert_eq!(none.content_type, "application/json");
    assert_eq!(
        none.json(),
        json!({"stopReason": "max_tokens", "messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": "let me see"},
            {"type": "text", "text": "Hello"},
            {"type": "text", "text": " world"},
        ]}]})
    );
    for reply in [&delta, &message, &none] {
        assert_eq!(reply.text(), "Hello world");
        assert_eq!(reply.stop_reason().as_deref(), Some("max_tokens"));
    }
    let echo = c
        .turn(
            &id,
            json!({"messages": [{"role": "user", "content": "hi there"}]}),
        )
        .await;
    assert_eq!(
        echo.json(),
        json!({"stopReason": "end_turn", "messages": [{"role": "assistant", "content": "echo: hi there"}]})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn client_and_server_tools_stop_run_inline_and_resume() {
    let (_server, c) = correct().await;
    let id = c
        .session_with(json!({
            "agent": {"tools": [{"name": "lookup", "trust": true}, {"name": "publish"}]},
            "tools": [{"name": "probe"}],
        }))
        .await;
    let script = json!({"steps": [
        {"tool_call": {"name": "lookup", "input": {"q": "x"}}},
        {"tool_call": {"name": "publish", "id": "p"}},
        {"tool_call": {"name": "probe", "id": "c"}},
    ], "then": {"steps": [{"text": "done"}]}});
    let first = c.script(&id, "delta", script).await;
    assert_eq!(
        first.event_names(),
        [
            "turn_start",
            "tool_call",
            "tool_result",
            "tool_call",
            "tool_call",
            "turn_stop"
        ]
    );
    assert_eq!(first.events()[2].1["toolCallId"], "call_1_1");
    assert_eq!(first.stop_reason().as_deref(), Some("tool_use"));
    let hello = json!({"messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(
        c.turn(&id, hello).await.status,
        409,
        "a user message while calls wait"
    );
    let result = json!({"role": "tool", "toolCallId": "c", "content": "42"});
    let partial = c.turn(&id, json!({"messages": [result]})).await;
    assert_eq!(
        partial.status, 400,
        "every waiting call is answered at once"
    );
    let deny =
        json!({"role": "tool_permission", "toolCallId": "p", "granted": false, "reason": "no"});
    let next = c
        .turn(&id, json!({"stream": "none", "messages": [result, deny]}))
        .await;
    assert_eq!(
        next.json(),
        json!({"stopReason": "end_turn", "messages": [{"role": "assistant", "content": "done"}]})
    );
    let history = c.history(&id).await;
    assert!(history
        .iter()
        .all(|message| message["role"] != "tool_permission"));
    assert!(history
        .contains(&json!({"role": "tool", "toolCallId": "p", "content": "Tool call denied: no"})));
    assert!(history.contains(&result));
}

#[tokio::test(flavor = "current_thread")]
async fn a_granted_permission_runs_the_tool_and_unknown_tools_are_refused() {
    let (_server, c) = correct().await;
    let id = c
        .session_with(json!({"agent": {"tools": [{"name": "publish"}]}}))
        .await;
    let again = c
        .script(
            &id,
            "none",
            json!({"steps": [{"tool_call": {"name": "publish", "id": "q"}}]}),
        )
        .await;
    assert_eq!(again.stop_reason().as_deref(), Some("tool_use"));
    let grant = json!({"role": "tool_permission", "toolCallId": "q", "granted": true});
    let ran = c
        .turn(&id, json!({"stream": "message", "messages": [grant]}))
        .await;
    assert_eq!(
        ran.event_names(),
        ["turn_start", "tool_result", "text", "turn_stop"]
    );
    assert_eq!(ran.events()[1].1["content"], "publish ran with {}");
    let unknown = c
        .script(
            &id,
            "none",
            json!({"steps": [{"tool_call": {"name": "nope"}}]}),
        )
        .await;
    assert_eq!(
        unknown.status, 400,
        "a script calling no tool of the session is refused"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn options_merge_by_key_persist_and_never_show_secrets() {
    let (_server, c) = correct().await;
    let secret = "ahpspec-secret-123";
    let id = c
        .session_with(json!({"agent": {"options": {"language": "Japanese", "api_key": secret}}}))
        .await;
    let turn = json!({
        "agent": {"options": {"model": "scripted-large"}, "tools": [{"name": "lookup"}]},
        "tools": [{"name": "probe"}],
        "messages": [{"role": "user", "content": "hi"}],
    });
    assert_eq!(c.turn(&id, turn).await.status, 200);
    let session = c.get(&format!("/sessions/{id}")).await;
    assert_eq!(
        session.json(),
        json!({"sessionId": id, "agent": {"name": aaphost::AGENT_NAME, "tools": [{"name": "lookup"}],
            "options": {"language": "Japanese", "api_key": "***", "model": "scripted-large"}},
            "tools": [{"name": "probe"}]})
    );
    assert!(!c.get("/sessions").await.body.contains(secret));
    let bad_select = c
        .create_with(json!({"agent": {"options": {"model": "gpt"}}}))
        .await;
    assert_eq!(bad_select.status, 400);
    let rename =
        json!({"agent": {"name": "other"}, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(c.turn(&id, rename).await.status, 400);
    let clash = c
        .create_with(
            json!({"agent": {"tools": [{"name": "lookup"}]}, "tools": [{"name": "lookup"}]}),
        )
        .await;
    assert_eq!(
        clash.status, 400,
        "tool names are unique across client and server tools"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn history_is_exact_and_served_only_for_declared_kinds() {
    let (_server, c) = correct().await;
    let seed = json!([{"role": "system", "content": "be brief"}]);
    let id = c.session_with(json!({"messages": seed})).await;
    let reply = c
        .turn(
            &id,
            json!({"messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    let mut expected = vec![seed[0].clone(), json!({"role": "user", "content": "hi"})];
    expected.extend(
        reply.json()["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    assert_eq!(c.history(&id).await, expected);
    assert_eq!(
        c.get(&format!("/sessions/{id}/history?type=compacted"))
            .await
            .status,
        404
    );
    assert_eq!(c.get(&format!("/sessions/{id}/history")).await.status, 400);

    let both = aaphost::spawn(AapHostConfig {
        history: HistoryKinds {
            compacted: true,
            full: true,
        },
        base_path: "/v1".into(),
        ..AapHostConfig::default()
    })
    .await
    .expect("bind");
    assert!(both.base_url().ends_with("/v1"));
    let c = Client::of(&both, None);
    let id = c.session().await;
    let compacted = c
        .get(&format!("/sessions/{id}/history?type=compacted"))
        .await
        .json();
    assert_eq!(compacted, json!({"history": {"compacted": []}}));
    assert_eq!(
        c.get("/meta").await.json()["agents"][0]["capabilities"]["history"],
        json!({"compacted": {}, "full": {}})
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_token_guards_everything_but_meta() {
    let (_server, c) = serve(AapFaultSet::default(), Some("k")).await;
    assert_eq!(c.send("GET", "/meta", None, None).await.status, 200);
    let refused = c.send("GET", "/sessions", None, None).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.headers["www-authenticate"], "Bearer");
    assert_eq!(
        c.send("GET", "/sessions", None, Some("wrong")).await.status,
        401
    );
    assert_eq!(c.get("/sessions").await.status, 200);
}

#[tokio::test(flavor = "current_thread")]
async fn bad_requests_get_json_errors_and_change_nothing() {
    let (_server, c) = correct().await;
    let not_json = c
        .send(
            "POST",
            "/sessions",
            Some(("application/json", "{\"agent\":".into())),
            None,
        )
        .await;
    assert_eq!(not_json.status, 400);
    assert!(not_json.json()["error"].is_string());
    let plain = c
        .send("POST", "/sessions", Some(("text/plain", "{}".into())), None)
        .await;
    assert_eq!(plain.status, 415);
    assert_eq!(c.get("/nowhere").await.status, 404);
    let wrong_method = c.send("PUT", "/sessions", None, None).await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(wrong_method.headers["allow"], "GET, POST");
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(2 * 1024 * 1024));
    assert_eq!(
        c.send("POST", "/sessions", Some(("application/json", huge)), None)
            .await
            .status,
        413
    );
    let id = c.session().await;
    for body in [
        json!({"stream": "sideways", "messages": [{"role": "user", "content": "hi"}]}),
        json!({"messages": [{"role": "robot", "content": "hi"}]}),
        json!({"messages": []}),
        json!({"messages": [{"role": "user", "content": "ahpspec-script: {\"steps\": 3}"}]}),
        json!({"messages": [{"role": "user", "content": "ahpspec-script: {\"steps\": [], \"stop\": \"tool_use\"}"}]}),
        json!({"messages": [{"role": "user", "content": [{"type": "image", "url": "ftp://x"}]}]}),
    ] {
        assert_eq!(c.turn(&id, body.clone()).await.status, 400, "{body}");
    }
    assert_eq!(
        c.history(&id).await,
        Vec::<Value>::new(),
        "refused turns change nothing"
    );
    let listed = c.get("/sessions").await.json();
    assert_eq!(
        listed["sessions"].as_array().map(Vec::len),
        Some(1),
        "no session from refused creates"
    );
}

#[test]
fn the_cli_serves_aap_and_lists_its_faults() {
    let binary = env!("CARGO_BIN_EXE_ahpspec");
    let list = Command::new(binary)
        .args(["serve", "--protocol", "aap", "--fault", "list"])
        .output()
        .expect("run ahpspec");
    assert!(list.status.success());
    let listed = String::from_utf8_lossy(&list.stdout);
    assert_eq!(listed.lines().count(), aaphost::AapFault::ALL.len());
    assert!(listed.contains("delta-drops-turn-stop\tAAP-SSE-003"));
    let typo = Command::new(binary)
        .args(["serve", "--protocol", "aap", "--fault", "nope"])
        .output()
        .expect("run ahpspec");
    assert_eq!(typo.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&typo.stderr).lines().count(), 1);

    let mut server = Command::new(binary)
        .args([
            "serve",
            "--protocol",
            "aap",
            "--port",
            "0",
            "--fault",
            "meta-version-2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ahpspec serve");
    let mut url = String::new();
    let stdout = server.stdout.take().expect("stdout");
    BufReader::new(stdout)
        .read_line(&mut url)
        .expect("the base URL line");
    let addr: std::net::SocketAddr = url
        .trim()
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let meta = runtime.block_on(async {
        let c = Client {
            addr,
            base_path: String::new(),
            token: None,
        };
        c.get("/meta").await.json()
    });
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(
        meta["version"], 2,
        "the fault given on the command line is served"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn garbage_on_the_socket_ends_only_that_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (_server, c) = correct().await;
    for junk in [
        &b"\x00\xff\x13garbage\r\n\r\n"[..],
        b"GET /meta HTTP/9.9\r\n\r\n",
        b"POST /sessions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
    ] {
        let mut stream = tokio::net::TcpStream::connect(c.addr)
            .await
            .expect("connect");
        stream.write_all(junk).await.expect("write");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 4"),
            "{answer}"
        );
    }
    assert_eq!(c.get("/meta").await.status, 200, "the server still answers");
}
