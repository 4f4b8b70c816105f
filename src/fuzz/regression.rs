//! A shrunk trace as suite steps: the dispatches it made with the answers a correct host
//! gives, and each protocol probe as the steps that expect what the probe checks. The
//! steps are the suite's own typed [`Step`]s, which `--to-case` writes out with serde.

use serde_json::{json, Value};

use super::exec::Performed;
use super::model::{Channel, Expect};
use super::ops::Probe;
use crate::client::ROOT;
use crate::suite::{
    Asserting, Assertions, Connect, Dispatch, ExpectAction, ExpectClosed, ExpectEcho,
    ExpectNotification, ExpectResponse, ExpectSilence, ExpectState, Initialize, MakeSession,
    Notify, Request, Sleep, Step,
};

fn on(conn: &str) -> Option<String> {
    Some(conn.to_owned())
}

fn request(conn: Option<String>, method: &str, params: Value, name: &str) -> Step {
    Step::Request(Request {
        on: conn,
        method: method.to_owned(),
        params: Some(params),
        name: Some(name.to_owned()),
        ..Request::default()
    })
}

/// A response step to request `to`: a success when `ok`, else an error with one of `codes`.
fn response(conn: Option<String>, to: &str, ok: bool, codes: &[i64]) -> ExpectResponse {
    ExpectResponse {
        on: conn,
        to: Some(to.to_owned()),
        ok: Some(ok),
        codes: (!codes.is_empty()).then(|| codes.to_vec()),
        ..ExpectResponse::default()
    }
}

fn plain(step: ExpectResponse) -> Step {
    asserting(step, Assertions::default())
}

fn asserting(step: ExpectResponse, assert: Assertions) -> Step {
    Step::Response(Asserting { step, assert })
}

fn initialize(conn: &str) -> Step {
    Step::Initialize(Initialize {
        on: on(conn),
        ..Initialize::default()
    })
}

/// A JSON value a suite file can hold: TOML has no null, so nulls inside are dropped and a
/// null on its own becomes an empty string.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Null => json!(""),
        Value::Array(items) => items
            .iter()
            .filter(|v| !v.is_null())
            .map(without_nulls)
            .collect(),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The other clients of a run join the session and its chat, as in the run: some dispatch,
/// and all of them observe (a missing broadcast shows on them).
pub(super) fn client_joins(client: usize) -> Vec<Step> {
    let conn = format!("c{}", client + 1);
    let mut steps = vec![initialize(&conn)];
    for (channel, tag) in [("${S}", "s"), ("${S.chat}", "c")] {
        let name = format!("{conn}{tag}");
        let params = json!({ "channel": channel, "delivery": { "maxLatencyMs": 0 } });
        steps.push(request(on(&conn), "subscribe", params, &name));
        steps.push(plain(response(on(&conn), &name, true, &[])));
    }
    steps
}

/// The steps that replay one dispatch (the `index`th) and expect what the model judged.
pub(super) fn dispatch_steps(index: usize, performed: &Performed) -> Vec<Step> {
    let channel = match performed.planned.channel {
        Channel::Session => "${S}",
        Channel::Chat => "${S.chat}",
    };
    let name = format!("d{index}");
    // Each dispatch on the connection of the client that made it.
    let conn = (performed.client > 0).then(|| format!("c{}", performed.client + 1));
    let mut steps = vec![Step::Dispatch(Dispatch {
        on: conn,
        channel: channel.to_owned(),
        action: without_nulls(&performed.planned.action),
        name: Some(name.clone()),
        ..Dispatch::default()
    })];
    let echo = |accepted: bool, or_ignored: bool| {
        Step::Echo(ExpectEcho {
            of: name.clone(),
            accepted,
            or_ignored,
            ..ExpectEcho::default()
        })
    };
    match performed.planned.expect {
        Expect::Accept => steps.push(echo(true, false)),
        Expect::Reject => steps.push(echo(false, false)),
        Expect::RejectOrIgnore => steps.push(echo(false, true)),
        Expect::Either => {}
    }
    steps.push(Step::Sleep(Sleep { ms: 20 }));
    steps
}

// Kept whole (over the ~80-line aim): one arm per probe, each the steps of what it checks.
/// The steps that repeat a protocol probe (the `n`th operation) with the same expectation.
pub(super) fn probe_steps(n: usize, probe: Probe) -> Vec<Step> {
    let p = format!("p{n}");
    match probe {
        Probe::SubscribeUnknown => vec![
            request(
                None,
                "subscribe",
                json!({ "channel": format!("ahp-session:/${{run}}-nope-{n}") }),
                &p,
            ),
            plain(response(None, &p, false, &[])),
        ],
        Probe::DispatchToMissing => {
            let channel = format!("ahp-session:/${{run}}-nope-{n}");
            vec![
                Step::Dispatch(Dispatch {
                    channel: channel.clone(),
                    action: json!({ "type": "session/titleChanged", "title": "nowhere" }),
                    ..Dispatch::default()
                }),
                Step::Silence(ExpectSilence {
                    for_ms: 200,
                    method: Some("action".into()),
                    matching: [("/params/channel".to_owned(), json!(channel))].into(),
                    ..ExpectSilence::default()
                }),
            ]
        }
        Probe::SideSession => {
            let x = format!("X{n}");
            let uri = format!("${{{x}}}");
            let heard = |method: &str, pointer: &str| {
                Step::Notification(ExpectNotification {
                    method: method.to_owned(),
                    matching: [(pointer.to_owned(), json!(uri))].into(),
                    ..ExpectNotification::default()
                })
            };
            vec![
                Step::Session(MakeSession {
                    name: x.clone(),
                    wait_ready: Some(false),
                    ..MakeSession::default()
                }),
                heard("root/sessionAdded", "/summary/resource"),
                request(None, "disposeSession", json!({ "channel": uri }), &p),
                plain(response(None, &p, true, &[])),
                heard("root/sessionRemoved", "/session"),
            ]
        }
        Probe::DuplicateSession => vec![
            request(None, "createSession", json!({ "channel": "${S}" }), &p),
            plain(response(None, &p, false, &[-32003])),
        ],
        Probe::UnknownProvider => vec![
            request(
                None,
                "createSession",
                json!({ "channel": format!("ahp-session:/${{run}}-provider-{n}"),
                        "provider": "fz-no-such-agent" }),
                &p,
            ),
            plain(response(None, &p, false, &[-32002])),
        ],
        Probe::PingBeforeInitialize => {
            let ping = format!("ping{n}");
            vec![
                Step::Connect(Connect { on: on(&p) }),
                request(on(&p), "ping", json!({ "channel": ROOT }), &ping),
                plain(response(on(&p), &ping, true, &[])),
            ]
        }
        Probe::MixedVersions => {
            let v = format!("v{n}");
            let chosen = ExpectResponse {
                on: on(&v),
                to: Some(format!("{v}.init")),
                ..ExpectResponse::default()
            };
            let assert = Assertions {
                equals: [("/result/protocolVersion".to_owned(), json!("1.2.0"))].into(),
                ..Assertions::default()
            };
            vec![
                Step::Initialize(Initialize {
                    on: on(&v),
                    versions: Some(vec!["0.9.0".into(), "1.2.0".into()]),
                    ..Initialize::default()
                }),
                asserting(chosen, assert),
            ]
        }
        Probe::UnsupportedVersion => {
            let v = format!("v{n}");
            let assert = Assertions {
                has: vec!["/error/data/supportedVersions/0".into()],
                ..Assertions::default()
            };
            vec![
                Step::Initialize(Initialize {
                    on: on(&v),
                    versions: Some(vec!["2.0.0".into()]),
                    send_only: true,
                    ..Initialize::default()
                }),
                asserting(
                    response(on(&v), &format!("{v}.init"), false, &[-32005]),
                    assert,
                ),
                Step::Closed(ExpectClosed {
                    on: on(&v),
                    within_ms: Some(2000),
                    ..ExpectClosed::default()
                }),
            ]
        }
        Probe::Unsubscribe => {
            let u = format!("u{n}");
            let (sub, sync, title) = (format!("{u}sub"), format!("{u}sync"), format!("{u}title"));
            vec![
                initialize(&u),
                request(on(&u), "subscribe", json!({ "channel": "${S}" }), &sub),
                plain(response(on(&u), &sub, true, &[])),
                Step::Notify(Notify {
                    on: on(&u),
                    method: "unsubscribe".into(),
                    params: Some(json!({ "channel": "${S}" })),
                    ..Notify::default()
                }),
                request(on(&u), "ping", json!({ "channel": ROOT }), &sync),
                plain(response(on(&u), &sync, true, &[])),
                Step::Dispatch(Dispatch {
                    channel: "${S}".into(),
                    action: json!({ "type": "session/titleChanged", "title": format!("unsub-{n}") }),
                    name: Some(title.clone()),
                    ..Dispatch::default()
                }),
                Step::Echo(ExpectEcho {
                    of: title,
                    accepted: true,
                    ..ExpectEcho::default()
                }),
                Step::Silence(ExpectSilence {
                    on: on(&u),
                    for_ms: 150,
                    channel: Some("${S}".into()),
                    ..ExpectSilence::default()
                }),
            ]
        }
        // The fuzzer's turns happened on c1 before: a one-turn window leaves a cursor.
        Probe::FetchTurns => {
            let f = format!("f{n}");
            let (sub, bad, fetch) = (format!("{f}sub"), format!("{f}bad"), format!("{f}fetch"));
            let windowed = json!({ "channel": "${S.chat}", "view": { "turns": 1 },
                                   "delivery": { "maxLatencyMs": 0 } });
            let cursor = Assertions {
                has: vec!["/result/snapshot/state/turnsNextCursor".into()],
                ..Assertions::default()
            };
            vec![
                initialize(&f),
                request(on(&f), "subscribe", windowed, &sub),
                asserting(response(on(&f), &sub, true, &[]), cursor),
                request(
                    on(&f),
                    "fetchTurns",
                    json!({ "channel": "${S.chat}", "cursor": format!("fz-bogus-{n}") }),
                    &bad,
                ),
                plain(response(on(&f), &bad, false, &[-32602])),
                request(
                    on(&f),
                    "fetchTurns",
                    json!({ "channel": "${S.chat}",
                            "cursor": format!("${{{sub}/result/snapshot/state/turnsNextCursor}}") }),
                    &fetch,
                ),
                Step::Action(ExpectAction {
                    on: on(&f),
                    channel: "${S.chat}".into(),
                    action_type: "chat/turnsLoaded".into(),
                    ..ExpectAction::default()
                }),
                Step::Silence(ExpectSilence {
                    on: on(&f),
                    for_ms: 0,
                    responses: true,
                    ..ExpectSilence::default()
                }),
                plain(response(on(&f), &fetch, true, &[])),
            ]
        }
        Probe::Telemetry => {
            let l = format!("l{n}");
            let sub = format!("{l}sub");
            let logs = json!({ "channel": format!("${{{l}.init/result/telemetry/logs}}") });
            let stateless = Assertions {
                lacks: vec!["/result/snapshot".into()],
                ..Assertions::default()
            };
            vec![
                initialize(&l),
                request(on(&l), "subscribe", logs, &sub),
                asserting(response(on(&l), &sub, true, &[]), stateless),
            ]
        }
        Probe::SessionConfig => {
            let (a, c) = (format!("{p}a"), format!("{p}c"));
            let values = format!("${{{p}/result/values}}");
            let settled = Assertions {
                equals: [("/result/values".to_owned(), json!(values))].into(),
                ..Assertions::default()
            };
            vec![
                request(None, "resolveSessionConfig", json!({ "channel": ROOT }), &p),
                plain(response(None, &p, true, &[])),
                request(
                    None,
                    "resolveSessionConfig",
                    json!({ "channel": ROOT, "config": values }),
                    &a,
                ),
                asserting(response(None, &a, true, &[]), settled),
                request(
                    None,
                    "completions",
                    json!({ "channel": "${S.chat}", "kind": "userMessage",
                            "text": "\u{1F642} see @C", "offset": 9 }),
                    &c,
                ),
                plain(response(None, &c, true, &[])),
            ]
        }
        Probe::Terminal => {
            let terminal = format!("ahp-terminal:/${{run}}-term-{n}");
            let d = format!("{p}d");
            let listed = |contains: bool| {
                let entry: crate::suite::Matches = [(
                    "/action/terminals".to_owned(),
                    json!({ "resource": terminal }),
                )]
                .into();
                let (where_contains, where_excludes) = if contains {
                    (entry, Default::default())
                } else {
                    (Default::default(), entry)
                };
                Step::Action(ExpectAction {
                    channel: ROOT.into(),
                    action_type: "root/terminalsChanged".into(),
                    where_contains,
                    where_excludes,
                    ..ExpectAction::default()
                })
            };
            let claim = json!({ "kind": "client", "clientId": "${c1.clientId}" });
            vec![
                request(
                    None,
                    "createTerminal",
                    json!({ "channel": terminal, "claim": claim }),
                    &p,
                ),
                plain(response(None, &p, true, &[])),
                listed(true),
                Step::State(Asserting {
                    step: ExpectState {
                        channel: terminal.clone(),
                        ..ExpectState::default()
                    },
                    assert: Assertions {
                        has: vec!["/lifecycle".into()],
                        ..Assertions::default()
                    },
                }),
                Step::Dispatch(Dispatch {
                    channel: terminal.clone(),
                    action: json!({ "type": "terminal/input", "data": "true\nexit 0\n" }),
                    ..Dispatch::default()
                }),
                Step::Action(ExpectAction {
                    channel: terminal.clone(),
                    action_type: "terminal/exited".into(),
                    ..ExpectAction::default()
                }),
                request(None, "disposeTerminal", json!({ "channel": terminal }), &d),
                plain(response(None, &d, true, &[])),
                listed(false),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every probe's steps survive being written as TOML and read back as suite steps.
    #[test]
    fn each_probes_steps_read_back_as_written() {
        #[derive(serde::Deserialize)]
        struct Line {
            step: Step,
        }
        for probe in Probe::ALL {
            let steps = probe_steps(3, probe);
            assert!(!steps.is_empty(), "{probe:?}");
            for step in steps {
                let mut line = String::new();
                serde::Serialize::serialize(&step, toml::ser::ValueSerializer::new(&mut line))
                    .expect("writes");
                let back: Line = toml::from_str(&format!("step = {line}"))
                    .unwrap_or_else(|e| panic!("{probe:?}: {line}: {e}"));
                assert_eq!(back.step, step, "{probe:?}: {line}");
            }
        }
    }
}
