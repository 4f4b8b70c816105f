//! Every fault of the built-in AAP server changes the behaviour it claims: for each fault,
//! a probe of its rule (plain HTTP requests on 127.0.0.1) holds against the correct server
//! and fails against the faulty one. The probes are the server's own view of each rule,
//! independent of the harness's checks.

mod aap_host_support;

use aap_host_support::{serve, Client, Reply};
use ahpspec::aaphost::{AapFault, AapFaultSet};
use serde_json::{json, Value};

const TOKEN: &str = "ahpspec-test-key";

#[tokio::test(flavor = "current_thread")]
async fn every_fault_breaks_its_rule_and_the_correct_server_keeps_it() {
    let mut wrong = Vec::new();
    // The faults of versions 1 and 2 alone are probed by tests/aap_versions.rs.
    for fault in AapFault::ALL.iter().filter(|f| f.acts_at(3)) {
        let token = fault.rule().starts_with("AAP-AUTH-").then_some(TOKEN);
        let (_correct, correct) = serve(AapFaultSet::default(), token).await;
        let (_faulty, faulty) = serve(AapFaultSet::from(*fault), token).await;
        if !rule_holds(fault.rule(), &correct).await {
            wrong.push(format!("{}: the correct server breaks it", fault.rule()));
        }
        if rule_holds(fault.rule(), &faulty).await {
            wrong.push(format!("{fault}: {} still holds", fault.rule()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The two stream cuts seen in the wild, exactly: a delta stream that loses only its final
/// `turn_stop`, and a message stream that stops right after `turn_start`.
#[tokio::test(flavor = "current_thread")]
async fn the_truncated_stream_faults_cut_exactly_where_they_claim() {
    let script = json!({"steps": [{"text": "one two"}]});
    let (_correct, c) = serve(AapFaultSet::default(), None).await;
    let id = c.session().await;
    let whole = c.script(&id, "delta", script.clone()).await.event_names();
    assert_eq!(
        whole,
        ["turn_start", "text_delta", "text_delta", "turn_stop"]
    );

    let (_delta, c) = serve(AapFaultSet::from(AapFault::DeltaDropsTurnStop), None).await;
    let id = c.session().await;
    let cut = c.script(&id, "delta", script.clone()).await;
    assert_eq!((cut.status, cut.event_names()), (200, whole[..3].to_vec()));
    let message = c.script(&id, "message", script.clone()).await.event_names();
    assert_eq!(
        message,
        ["turn_start", "text", "turn_stop"],
        "message mode is untouched"
    );

    let (_message, c) = serve(
        AapFaultSet::from(AapFault::MessageDropsAfterTurnStart),
        None,
    )
    .await;
    let id = c.session().await;
    let cut = c.script(&id, "message", script.clone()).await;
    assert_eq!(
        (cut.status, cut.event_names()),
        (200, vec!["turn_start".to_owned()])
    );
    assert_eq!(
        c.script(&id, "delta", script).await.event_names(),
        whole,
        "delta mode is untouched"
    );
}

/// Whether the server keeps `rule`, as far as one probe sees.
async fn rule_holds(rule: &str, c: &Client) -> bool {
    let area = rule.split('-').nth(1).unwrap_or_default();
    match area {
        "HTTP" | "AUTH" => http_rule(rule, c).await,
        "META" => meta_rule(rule, c).await,
        "SESSION" => session_rule(rule, c).await,
        "OPTION" => option_rule(rule, c).await,
        "TURN" => turn_rule(rule, c).await,
        "SSE" => sse_rule(rule, c).await,
        "TOOL" => tool_rule(rule, c).await,
        "HISTORY" => history_rule(rule, c).await,
        _ => panic!("no probe for {rule}"),
    }
}

fn is_4xx(status: u16) -> bool {
    (400..500).contains(&status)
}

async fn http_rule(rule: &str, c: &Client) -> bool {
    let agent = json!({"agent": {"name": ahpspec::aaphost::AGENT_NAME}}).to_string();
    match rule {
        "AAP-HTTP-001" => c.get("/meta").await.json()["agents"][0]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().all(|tool| tool["description"].is_string())),
        "AAP-HTTP-002" => c.get("/sessions").await.content_type == "application/json",
        "AAP-HTTP-003" => {
            let body = Some(("application/json", "{\"agent\":".to_owned()));
            is_4xx(c.send("POST", "/sessions", body, None).await.status)
        }
        "AAP-HTTP-004" => {
            let id = c.session().await;
            let body =
                json!({"stream": "sideways", "messages": [{"role": "user", "content": "hi"}]});
            is_4xx(c.turn(&id, body).await.status)
        }
        "AAP-HTTP-005" => {
            let status = c
                .send("POST", "/sessions", Some(("text/plain", agent)), None)
                .await
                .status;
            [201, 400, 415].contains(&status)
        }
        "AAP-HTTP-006" => c.get("/no-such-endpoint").await.status == 404,
        "AAP-HTTP-007" => {
            let id = c.session().await;
            c.delete(&format!("/sessions/{id}")).await;
            c.delete(&format!("/sessions/{id}")).await.status < 500
        }
        "AAP-HTTP-008" => {
            let id = c.session().await;
            c.leave_after_first_event(&id).await;
            // The server notices the drop when its next writes fail.
            tokio::time::sleep(std::time::Duration::from_millis(400)).await;
            let plain = json!({"messages": [{"role": "user", "content": "still there?"}]});
            c.turn(&id, plain).await.status == 200
        }
        "AAP-HTTP-009" => {
            let id = c.session().await;
            let extra =
                json!({"messages": [{"role": "user", "content": "hi"}], "ahpspec_unknown": 1});
            c.turn(&id, extra).await.status == 200
        }
        "AAP-AUTH-001" => c.send("GET", "/sessions", None, Some(TOKEN)).await.status == 200,
        "AAP-AUTH-002" => {
            let omitted = c.send("GET", "/sessions", None, None).await.status;
            let wrong = c.send("GET", "/sessions", None, Some("wrong")).await.status;
            omitted == 401 && wrong == 401
        }
        _ => panic!("no probe for {rule}"),
    }
}

async fn meta_rule(rule: &str, c: &Client) -> bool {
    let meta = c.get("/meta").await.json();
    let agents = meta["agents"].as_array().cloned().unwrap_or_default();
    match rule {
        "AAP-META-001" => meta["version"] == 3,
        "AAP-META-003" => {
            let mut names: Vec<&str> = agents.iter().filter_map(|a| a["name"].as_str()).collect();
            let all = names.len();
            names.dedup();
            names.len() == all
        }
        "AAP-META-004" => agents.iter().all(|agent| {
            let parts: Vec<&str> = agent["version"]
                .as_str()
                .unwrap_or_default()
                .split('.')
                .collect();
            parts.len() == 3 && parts.iter().all(|part| part.parse::<u64>().is_ok())
        }),
        "AAP-META-005" => agents
            .iter()
            .flat_map(|agent| agent["options"].as_array().cloned().unwrap_or_default())
            .filter(|option| option["type"] == "select")
            .all(|option| {
                option["options"]
                    .as_array()
                    .is_some_and(|values| values.contains(&option["default"]))
            }),
        _ => panic!("no probe for {rule}"),
    }
}

/// Walks `GET /sessions` from the first page: the IDs in order, and whether the walk
/// ended (no `next`) within 20 pages.
async fn walk(c: &Client) -> (Vec<String>, bool) {
    let mut ids = Vec::new();
    let mut path = "/sessions".to_owned();
    for _ in 0..20 {
        let page = c.get(&path).await.json();
        let listed = page["sessions"].as_array().cloned().unwrap_or_default();
        ids.extend(
            listed
                .iter()
                .filter_map(|s| s["sessionId"].as_str().map(str::to_owned)),
        );
        match page["next"].as_str() {
            Some(next) => path = format!("/sessions?after={next}"),
            None => return (ids, true),
        }
    }
    (ids, false)
}

async fn session_rule(rule: &str, c: &Client) -> bool {
    let tool = json!({"name": "probe", "description": "d", "inputSchema": {"type": "object"}});
    match rule {
        "AAP-SESSION-001" => {
            let reply = c.create_with(json!({})).await;
            reply.status == 201
                && reply.json()["sessionId"]
                    .as_str()
                    .is_some_and(|id| !id.is_empty())
        }
        "AAP-SESSION-002" => {
            let seed = json!([{"role": "user", "content": "hi"}]);
            let id = c.session_with(json!({"messages": seed})).await;
            Value::Array(c.history(&id).await) == seed
        }
        "AAP-SESSION-003" => {
            let id = c.session_with(json!({"tools": [tool]})).await;
            c.get(&format!("/sessions/{id}")).await.json()["tools"] == json!([tool])
        }
        "AAP-SESSION-004" => c.get("/sessions/sess_999").await.status == 404,
        "AAP-SESSION-005" => {
            let id = c.session().await;
            let deleted = c.delete(&format!("/sessions/{id}")).await.status == 204;
            deleted && c.get(&format!("/sessions/{id}")).await.status == 404
        }
        "AAP-SESSION-006" => {
            let mut made = Vec::new();
            for _ in 0..3 {
                made.push(c.session().await);
            }
            let (listed, _) = walk(c).await;
            made.iter().all(|id| listed.contains(id))
        }
        "AAP-SESSION-007" => {
            for _ in 0..5 {
                c.session().await;
            }
            let (mut listed, ended) = walk(c).await;
            let all = listed.len();
            listed.sort();
            listed.dedup();
            ended && listed.len() == all
        }
        "AAP-SESSION-008" => is_4xx(
            c.create_with(json!({"agent": {"name": "nobody"}}))
                .await
                .status,
        ),
        "AAP-SESSION-009" => {
            let tools = json!([{"name": "lookup", "trust": true}]);
            let id = c.session_with(json!({"agent": {"tools": tools}})).await;
            c.get(&format!("/sessions/{id}")).await.json()["agent"]["tools"] == tools
        }
        _ => panic!("no probe for {rule}"),
    }
}

async fn option_rule(rule: &str, c: &Client) -> bool {
    let secret = "ahpspec-secret-xyz";
    let options = json!({"language": "Japanese", "model": "scripted-large", "api_key": secret});
    let id = c
        .session_with(
            json!({"agent": {"options": options, "tools": [{"name": "lookup"}]},
        "tools": [{"name": "a"}]}),
        )
        .await;
    let echo = json!({"role": "user", "content": "hi"});
    let session = |c: &Client| {
        let path = format!("/sessions/{id}");
        let c = c.clone();
        async move { c.get(&path).await.json() }
    };
    match rule {
        "AAP-OPTION-001" => session(c).await["agent"]["options"]["language"] == "Japanese",
        "AAP-OPTION-002" => {
            c.turn(
                &id,
                json!({"agent": {"options": {"language": "French"}}, "messages": [echo]}),
            )
            .await;
            let options = &session(c).await["agent"]["options"];
            options["language"] == "French" && options["model"] == "scripted-large"
        }
        "AAP-OPTION-003" => {
            let one = c.get(&format!("/sessions/{id}")).await.body;
            let list = c.get("/sessions").await.body;
            !one.contains(secret) && !list.contains(secret)
        }
        // Present, with a placeholder: a non-empty string other than the secret.
        "AAP-OPTION-004" => session(c).await["agent"]["options"]["api_key"]
            .as_str()
            .is_some_and(|shown| !shown.is_empty() && shown != secret),
        "AAP-OPTION-005" => {
            let tools = json!([{"name": "publish"}]);
            c.turn(&id, json!({"agent": {"tools": tools}, "messages": [echo]}))
                .await;
            session(c).await["agent"]["tools"] == tools
        }
        "AAP-OPTION-006" => {
            c.turn(&id, json!({"tools": [{"name": "b"}], "messages": [echo]}))
                .await;
            session(c).await["tools"] == json!([{"name": "b"}])
        }
        "AAP-OPTION-007" => {
            c.turn(&id, json!({"agent": {"name": "other"}, "messages": [echo]}))
                .await;
            session(c).await["agent"]["name"] == ahpspec::aaphost::AGENT_NAME
        }
        _ => panic!("no probe for {rule}"),
    }
}

async fn turn_rule(rule: &str, c: &Client) -> bool {
    let id = c.session().await;
    let say = |mode: Option<&str>| {
        let mut body = json!({"messages": [{"role": "user", "content": "hi there"}]});
        if let Some(mode) = mode {
            body["stream"] = json!(mode);
        }
        body
    };
    match rule {
        "AAP-TURN-001" => {
            let reply = c.turn(&id, say(Some("none"))).await;
            let body = reply.json();
            reply.status == 200 && body["stopReason"].is_string() && body["messages"].is_array()
        }
        "AAP-TURN-002" => c.turn(&id, say(None)).await.content_type == "application/json",
        "AAP-TURN-003" => c.turn(&id, say(Some("delta"))).await.content_type == "text/event-stream",
        "AAP-TURN-004" => {
            c.turn(&id, say(Some("message"))).await.content_type == "text/event-stream"
        }
        "AAP-TURN-005" => c.turn("sess_999", say(None)).await.status == 404,
        "AAP-TURN-006" => {
            let script = json!({"steps": [], "stop": "refusal"});
            c.script(&id, "none", script).await.stop_reason().as_deref() == Some("refusal")
        }
        "AAP-TURN-007" => {
            let messages = c.turn(&id, say(Some("none"))).await.json()["messages"].clone();
            messages
                .as_array()
                .is_some_and(|m| m.iter().all(|m| m["role"] != "user"))
        }
        _ => panic!("no probe for {rule}"),
    }
}

async fn sse_rule(rule: &str, c: &Client) -> bool {
    let id = c.session().await;
    let script = json!({"steps": [{"thinking": "hm"}, {"text": "a b"}, {"text": "c d"}]});
    let plain =
        |mode: &str| json!({"stream": mode, "messages": [{"role": "user", "content": "hi there"}]});
    // Stream shape is probed on a scripted and on a plain (echoed) turn in each mode.
    let delta = [
        c.script(&id, "delta", script.clone()).await,
        c.turn(&id, plain("delta")).await,
    ];
    let message = [
        c.script(&id, "message", script.clone()).await,
        c.turn(&id, plain("message")).await,
    ];
    let all_names = |replies: &[Reply]| replies.iter().map(Reply::event_names).collect::<Vec<_>>();
    let once_at = |names: &[String], event: &str, at_end: bool| {
        let place = if at_end { names.last() } else { names.first() };
        place.map(String::as_str) == Some(event)
            && names.iter().filter(|n| *n == event).count() == 1
    };
    match rule {
        "AAP-SSE-001" => delta.iter().chain(&message).all(|reply| {
            reply
                .events()
                .iter()
                .all(|(name, data)| data["event"] == name.as_str())
        }),
        "AAP-SSE-002" => all_names(&delta)
            .iter()
            .chain(&all_names(&message))
            .all(|names| once_at(names, "turn_start", false)),
        "AAP-SSE-003" => all_names(&delta)
            .iter()
            .chain(&all_names(&message))
            .all(|names| once_at(names, "turn_stop", true)),
        "AAP-SSE-004" => all_names(&delta)
            .concat()
            .iter()
            .all(|name| name != "text" && name != "thinking"),
        "AAP-SSE-005" => all_names(&message)
            .concat()
            .iter()
            .all(|name| !name.ends_with("_delta")),
        "AAP-SSE-006" => all_names(&delta)
            .concat()
            .iter()
            .all(|name| name != "session_start"),
        "AAP-SSE-007" => {
            let none = c.script(&id, "none", script).await;
            delta[0].text() == none.text() && message[0].text() == none.text()
        }
        "AAP-SSE-008" => {
            message[0]
                .event_names()
                .iter()
                .filter(|name| *name == "text")
                .count()
                == 2
        }
        _ => panic!("no probe for {rule}"),
    }
}

/// A session with client tool `probe`, server tools `lookup` (trusted) and `publish`.
async fn tool_session(c: &Client) -> String {
    c.session_with(json!({
        "agent": {"tools": [{"name": "lookup", "trust": true}, {"name": "publish"}]},
        "tools": [{"name": "probe"}],
    }))
    .await
}

fn call(name: &str, id: &str) -> Value {
    json!({"steps": [{"tool_call": {"name": name, "id": id, "input": {"q": 1}}}]})
}

fn tool_result_ids(reply: &Reply) -> Vec<String> {
    let events = reply
        .events()
        .into_iter()
        .filter(|(name, _)| name == "tool_result");
    events
        .filter_map(|(_, data)| data["toolCallId"].as_str().map(str::to_owned))
        .collect()
}

async fn tool_rule(rule: &str, c: &Client) -> bool {
    let id = tool_session(c).await;
    let answer = |message: Value| json!({"stream": "delta", "messages": [message]});
    let permission =
        |granted: bool| json!({"role": "tool_permission", "toolCallId": "p", "granted": granted});
    match rule {
        "AAP-TOOL-001" => {
            c.script(&id, "none", call("probe", "c"))
                .await
                .stop_reason()
                .as_deref()
                == Some("tool_use")
        }
        "AAP-TOOL-002" => {
            c.script(&id, "none", call("probe", "c")).await;
            let reply = c
                .turn(
                    &id,
                    answer(json!({"role": "tool", "toolCallId": "c", "content": "42"})),
                )
                .await;
            reply.status == 200 && reply.stop_reason().as_deref() == Some("end_turn")
        }
        "AAP-TOOL-003" => {
            tool_result_ids(&c.script(&id, "delta", call("lookup", "t")).await) == ["t"]
        }
        "AAP-TOOL-004" => {
            let reply = c.script(&id, "delta", call("publish", "p")).await;
            reply.stop_reason().as_deref() == Some("tool_use") && tool_result_ids(&reply).is_empty()
        }
        "AAP-TOOL-005" => {
            c.script(&id, "delta", call("publish", "p")).await;
            tool_result_ids(&c.turn(&id, answer(permission(true))).await) == ["p"]
        }
        "AAP-TOOL-006" => {
            c.script(&id, "delta", call("publish", "p")).await;
            let ran = !tool_result_ids(&c.turn(&id, answer(permission(false))).await).is_empty();
            let history = c.history(&id).await;
            !ran && history
                .iter()
                .any(|m| m["role"] == "tool" && m["toolCallId"] == "p")
        }
        "AAP-TOOL-007" => {
            c.script(&id, "delta", call("lookup", "t"))
                .await
                .stop_reason()
                .as_deref()
                != Some("tool_use")
        }
        "AAP-TOOL-008" => {
            c.script(&id, "delta", call("probe", "c")).await;
            let reply = c
                .turn(
                    &id,
                    answer(json!({"role": "tool", "toolCallId": "c", "content": "42"})),
                )
                .await;
            reply.status == 200 && tool_result_ids(&reply).is_empty()
        }
        _ => panic!("no probe for {rule}"),
    }
}

async fn history_rule(rule: &str, c: &Client) -> bool {
    let id = tool_session(c).await;
    let path = |query: &str| format!("/sessions/{id}/history{query}");
    match rule {
        "AAP-HISTORY-001" => {
            let history = c.get(&path("?type=full")).await.json()["history"].clone();
            history["full"].is_array() && history.as_object().is_some_and(|h| h.len() == 1)
        }
        "AAP-HISTORY-002" => c.get(&path("?type=compacted")).await.status == 404,
        "AAP-HISTORY-003" => c.get("/sessions/sess_999/history?type=full").await.status == 404,
        "AAP-HISTORY-004" => {
            let user = json!({"role": "user", "content": "hi"});
            let reply = c.turn(&id, json!({"messages": [user]})).await;
            let mut expected = vec![user];
            expected.extend(
                reply.json()["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            c.history(&id).await == expected
        }
        "AAP-HISTORY-005" => {
            c.script(&id, "none", call("publish", "p")).await;
            let grant = json!({"role": "tool_permission", "toolCallId": "p", "granted": true});
            c.turn(&id, json!({"messages": [grant]})).await;
            c.history(&id)
                .await
                .iter()
                .all(|m| m["role"] != "tool_permission")
        }
        "AAP-HISTORY-006" => {
            is_4xx(c.get(&path("")).await.status)
                && is_4xx(c.get(&path("?type=bogus")).await.status)
        }
        _ => panic!("no probe for {rule}"),
    }
}
