//! The fuzzer's protocol probes as typed suite steps: what each probe does and expects,
//! written once. The executor runs these steps with the one step interpreter
//! ([`crate::steps`]) on the run's own clients, and `--to-case` writes the steps that ran
//! into the regression case, where the suite engine runs them the same way.
//!
//! Built in Rust rather than read from a TOML fragment: each probe's steps depend on the
//! operation (its index names the probe's URIs and requests, its client the connection it
//! runs on, the number of clients whether there is one to unsubscribe), and a fragment
//! would need those spliced in as text — the hand formatting the typed steps replace.
//!
//! The names the steps use are those of a regression case: `c1` (subscribed to the root
//! channel), `c2`… (the other clients), `${S}` and `${S.chat}` (the run's session and its
//! chat), `${run}` (unique per run), `${cN.clientId}`, `${c1.init}` (the first client's
//! initialize answer), `${provider?}` (the target profile's provider, when it names one).
//! Each expectation names the rule it checks (`relies_on`); the case's own rule is the
//! probe's first.

use serde_json::{json, Value};

use super::ops::Probe;
use crate::checks::Rule;
use crate::client::ROOT;
use crate::suite::{
    AnyOf, Asserting, Assertions, Connect, Dispatch, ExpectAction, ExpectCheck, ExpectClosed,
    ExpectEcho, ExpectNotification, ExpectResponse, ExpectSilence, Initialize, NotApplicable,
    Notify, Request, Step,
};

/// A connection name, as a step's `on`.
pub(super) fn on(conn: &str) -> Option<String> {
    Some(conn.to_owned())
}

/// A request on `conn`, stored as `name`.
pub(super) fn request(conn: Option<String>, method: &str, params: Value, name: &str) -> Step {
    Step::Request(Request {
        on: conn,
        method: method.to_owned(),
        params: Some(params),
        name: Some(name.to_owned()),
        ..Request::default()
    })
}

/// A response step to request `to`: a success when `ok`, else an error with one of `codes`.
pub(super) fn response(conn: Option<String>, to: &str, ok: bool, codes: &[i64]) -> ExpectResponse {
    ExpectResponse {
        on: conn,
        to: Some(to.to_owned()),
        ok: Some(ok),
        codes: (!codes.is_empty()).then(|| codes.to_vec()),
        ..ExpectResponse::default()
    }
}

pub(super) fn plain(step: ExpectResponse) -> Step {
    asserting(step, Assertions::default())
}

pub(super) fn asserting(step: ExpectResponse, assert: Assertions) -> Step {
    Step::Response(Asserting { step, assert })
}

/// `initialize` on `conn` with the default offer.
pub(super) fn initialize(conn: &str) -> Step {
    Step::Initialize(Initialize {
        on: on(conn),
        ..Initialize::default()
    })
}

/// The id a step writes for `rule` (its `relies_on`).
fn id(rule: Rule) -> Option<String> {
    Some(rule.id().to_owned())
}

/// A response to `to` on `conn` whatever it is (a success or an error), checked for `rule`
/// (a missing answer is that rule's failure).
fn answered(conn: &str, to: &str, rule: Rule) -> Step {
    plain(ExpectResponse {
        on: on(conn),
        to: Some(to.to_owned()),
        relies_on: id(rule),
        ..ExpectResponse::default()
    })
}

/// A response to `to` on `conn` that must succeed, for `rule`.
fn succeeds(conn: &str, to: &str, rule: Rule) -> Step {
    judged(
        response(on(conn), to, true, &[]),
        rule,
        Assertions::default(),
    )
}

/// A response step checked for `rule` (its failure is that rule's, whichever part of it
/// misses), with `assert`.
fn judged(step: ExpectResponse, rule: Rule, assert: Assertions) -> Step {
    asserting(
        ExpectResponse {
            relies_on: id(rule),
            ..step
        },
        assert,
    )
}

/// A `check` of the stored value `value` (a `${…}` reference), on the case's own rule.
fn check(value: &str, assert: Assertions) -> Step {
    Step::Check(Asserting {
        step: ExpectCheck {
            value: value.to_owned(),
            ..ExpectCheck::default()
        },
        assert,
    })
}

fn has(pointer: &str) -> Assertions {
    Assertions {
        has: vec![pointer.to_owned()],
        ..Assertions::default()
    }
}

fn lacks(pointer: &str) -> Assertions {
    Assertions {
        lacks: vec![pointer.to_owned()],
        ..Assertions::default()
    }
}

/// Ends the probe as not applicable (`why`) unless the stored `value` has `pointer`: what
/// the host does not offer is not probed.
fn only_if(value: &str, pointer: &str, why: &str) -> Step {
    Step::AnyOf(AnyOf {
        alternatives: vec![
            vec![
                check(value, lacks(pointer)),
                Step::NotApplicable(NotApplicable {
                    why: why.to_owned(),
                }),
            ],
            vec![check(value, has(pointer))],
        ],
    })
}

/// A `ping` request on `conn` and its answer: whatever the host did with what came before
/// on that connection, it did before answering (FUZZ-001: the host keeps serving).
fn synced(conn: &str, name: &str) -> [Step; 2] {
    [
        request(on(conn), "ping", json!({ "channel": ROOT }), name),
        answered(conn, name, Rule::Fuzz001),
    ]
}

/// One probe, as the fuzzer runs it and the regression case repeats it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSteps {
    /// The rule the probe is about (the case's own); its steps name the others they check.
    pub rule: Rule,
    pub steps: Vec<Step>,
}

/// The steps of `probe` as the `n`th operation, on client `client` (0-based) of a run with
/// `clients` clients.
pub fn probe_steps(probe: Probe, n: usize, client: usize, clients: usize) -> ProbeSteps {
    let conn = format!("c{}", client + 1);
    let k = conn.as_str();
    let p = format!("p{n}");
    let (rule, steps) = match probe {
        Probe::SubscribeUnknown => (
            Rule::Sub011,
            vec![
                request(
                    on(k),
                    "subscribe",
                    json!({ "channel": format!("ahp-session:/${{run}}-nope-{n}") }),
                    &p,
                ),
                judged(
                    response(on(k), &p, false, &[]),
                    Rule::Sub011,
                    Assertions::default(),
                ),
            ],
        ),
        Probe::DispatchToMissing => (Rule::Dispatch004, dispatch_to_missing(k, n)),
        Probe::SideSession => (Rule::Root005, side_session(k, n)),
        Probe::DuplicateSession => (
            Rule::Lifecycle001,
            vec![
                request(
                    on(k),
                    "createSession",
                    json!({ "channel": "${S}", "provider": "${provider?}" }),
                    &p,
                ),
                judged(
                    response(on(k), &p, false, &[-32003]),
                    Rule::Lifecycle001,
                    Assertions::default(),
                ),
            ],
        ),
        Probe::UnknownProvider => (Rule::Lifecycle006, unknown_provider(k, n)),
        Probe::PingBeforeInitialize => {
            let (h, ping) = (format!("h{n}"), format!("h{n}ping"));
            (
                Rule::Transport010,
                vec![
                    Step::Connect(Connect { on: on(&h) }),
                    request(on(&h), "ping", json!({ "channel": ROOT }), &ping),
                    succeeds(&h, &ping, Rule::Transport010),
                ],
            )
        }
        Probe::MixedVersions => (Rule::Version002, mixed_versions(n)),
        Probe::UnsupportedVersion => (Rule::Version005, unsupported_version(n)),
        Probe::Unsubscribe => (Rule::Sub004, unsubscribe(n, client, clients)),
        Probe::FetchTurns => (Rule::Turn010, fetch_turns(n)),
        Probe::Terminal => (Rule::Term001, terminal(k, n)),
        Probe::SessionConfig => (Rule::Completions001, session_config(k, n)),
        Probe::Telemetry => (Rule::Sub006, telemetry(n)),
    };
    ProbeSteps { rule, steps }
}

/// A dispatch to a session that does not exist is ignored: no echo by the time the host
/// answers a ping sent after it.
fn dispatch_to_missing(k: &str, n: usize) -> Vec<Step> {
    let channel = format!("ahp-session:/${{run}}-nope-{n}");
    let mut steps = vec![Step::Dispatch(Dispatch {
        on: on(k),
        channel: channel.clone(),
        action: json!({ "type": "session/titleChanged", "title": "nowhere" }),
        ..Dispatch::default()
    })];
    steps.extend(synced(k, &format!("p{n}")));
    steps.push(Step::Silence(ExpectSilence {
        on: on(k),
        for_ms: 0,
        method: Some("action".into()),
        matching: [("/params/channel".to_owned(), json!(channel))].into(),
        ..ExpectSilence::default()
    }));
    steps
}

/// A second session, created and disposed: the root subscriber hears both.
fn side_session(k: &str, n: usize) -> Vec<Step> {
    let uri = format!("ahp-session:/${{run}}-side-{n}");
    let (p, d) = (format!("p{n}"), format!("p{n}d"));
    let heard = |method: &str, pointer: &str, rule: Rule| {
        Step::Notification(ExpectNotification {
            on: on("c1"),
            relies_on: id(rule),
            method: method.to_owned(),
            matching: [(pointer.to_owned(), json!(uri))].into(),
            ..ExpectNotification::default()
        })
    };
    vec![
        request(
            on(k),
            "createSession",
            json!({ "channel": uri, "provider": "${provider?}" }),
            &p,
        ),
        succeeds(k, &p, Rule::Root005),
        heard("root/sessionAdded", "/summary/resource", Rule::Root005),
        request(on(k), "disposeSession", json!({ "channel": uri }), &d),
        succeeds(k, &d, Rule::Lifecycle009),
        heard("root/sessionRemoved", "/session", Rule::Root006),
    ]
}

/// An unknown provider: error -32002, or a session whose creation does not make it ready
/// (seen in a fresh snapshot, then disposed).
fn unknown_provider(k: &str, n: usize) -> Vec<Step> {
    let uri = format!("ahp-session:/${{run}}-provider-{n}");
    let p = format!("p{n}");
    let answer = format!("${{{p}}}");
    let not_ready = Step::State(Asserting {
        step: crate::suite::ExpectState {
            on: on(k),
            channel: uri.clone(),
            ..crate::suite::ExpectState::default()
        },
        assert: Assertions {
            differs: [("/lifecycle".to_owned(), json!("ready"))].into(),
            ..Assertions::default()
        },
    });
    let refused = Assertions {
        equals: [("/error/code".to_owned(), json!(-32002))].into(),
        ..Assertions::default()
    };
    vec![
        request(
            on(k),
            "createSession",
            json!({ "channel": uri, "provider": "fz-no-such-agent" }),
            &p,
        ),
        answered(k, &p, Rule::Lifecycle006),
        Step::AnyOf(AnyOf {
            alternatives: vec![
                vec![check(&answer, refused)],
                vec![
                    check(&answer, has("/result")),
                    not_ready,
                    Step::Notify(Notify {
                        on: on(k),
                        method: "unsubscribe".into(),
                        params: Some(json!({ "channel": uri })),
                        ..Notify::default()
                    }),
                    request(
                        on(k),
                        "disposeSession",
                        json!({ "channel": uri }),
                        &format!("{p}d"),
                    ),
                ],
            ],
        }),
    ]
}

/// A new connection offers 0.9.0 and 1.2.0 (a compatible minor of 1.0.0, as in the
/// VERSION-002 case): the host answers with 1.2.0, never a version nobody offered.
fn mixed_versions(n: usize) -> Vec<Step> {
    let v = format!("v{n}");
    let init = format!("{v}.init");
    let offered = Assertions {
        one_of: [(
            "/result/protocolVersion".to_owned(),
            vec![json!("0.9.0"), json!("1.2.0")],
        )]
        .into(),
        ..Assertions::default()
    };
    let highest = Assertions {
        equals: [("/result/protocolVersion".to_owned(), json!("1.2.0"))].into(),
        ..Assertions::default()
    };
    vec![
        Step::Initialize(Initialize {
            on: on(&v),
            versions: Some(vec!["0.9.0".into(), "1.2.0".into()]),
            subscriptions: Some(Vec::new()),
            send_only: true,
            ..Initialize::default()
        }),
        judged(
            ExpectResponse {
                on: on(&v),
                to: Some(init.clone()),
                ..ExpectResponse::default()
            },
            Rule::Version001,
            offered,
        ),
        check(&format!("${{{init}}}"), highest),
    ]
}

/// A new connection offers only 2.0.0: -32005 with the supported versions, then the host
/// closes the connection.
fn unsupported_version(n: usize) -> Vec<Step> {
    let v = format!("v{n}");
    let first = "/error/data/supportedVersions/0";
    let listed = Assertions {
        types: [(first.to_owned(), crate::suite::JsonType::String)].into(),
        ..Assertions::default()
    };
    vec![
        Step::Initialize(Initialize {
            on: on(&v),
            versions: Some(vec!["2.0.0".into()]),
            subscriptions: Some(Vec::new()),
            send_only: true,
            ..Initialize::default()
        }),
        judged(
            response(on(&v), &format!("{v}.init"), false, &[-32005]),
            Rule::Version005,
            listed,
        ),
        Step::Closed(ExpectClosed {
            on: on(&v),
            relies_on: id(Rule::Version006),
            ..ExpectClosed::default()
        }),
    ]
}

/// A client other than the first (the model plans from its mirror) unsubscribes from the
/// session; the first changes the session's title: the client hears nothing of it, and
/// subscribing again answers with a snapshot. Nothing to probe with one client.
fn unsubscribe(n: usize, client: usize, clients: usize) -> Vec<Step> {
    let client = if client == 0 { 1 } else { client };
    if client >= clients {
        return Vec::new();
    }
    let u = format!("c{}", client + 1);
    let title = format!("unsub-{n}");
    let (changed, again) = (format!("u{n}title"), format!("u{n}again"));
    let mut steps = vec![Step::Notify(Notify {
        on: on(&u),
        method: "unsubscribe".into(),
        params: Some(json!({ "channel": "${S}" })),
        ..Notify::default()
    })];
    // Whatever the host sent before it took the unsubscribe arrives before this answer.
    steps.extend(synced(&u, &format!("u{n}sync")));
    steps.extend([
        Step::Dispatch(Dispatch {
            channel: "${S}".into(),
            action: json!({ "type": "session/titleChanged", "title": title }),
            name: Some(changed.clone()),
            ..Dispatch::default()
        }),
        // Without its echo the probe cannot tell when the host took the change.
        Step::Echo(ExpectEcho {
            relies_on: id(Rule::Dispatch001),
            of: changed,
            accepted: true,
            ..ExpectEcho::default()
        }),
    ]);
    steps.extend(synced(&u, &format!("u{n}seen")));
    steps.extend([
        Step::Silence(ExpectSilence {
            on: on(&u),
            for_ms: 0,
            method: Some("action".into()),
            channel: Some("${S}".into()),
            matching: [("/params/action/title".to_owned(), json!(title))].into(),
            ..ExpectSilence::default()
        }),
        request(
            on(&u),
            "subscribe",
            json!({ "channel": "${S}", "delivery": { "maxLatencyMs": 0 } }),
            &again,
        ),
        succeeds(&u, &again, Rule::Sub001),
    ]);
    steps
}

/// A new connection subscribes to the chat with a one-turn window and fetches the older
/// turns: a bogus cursor gets -32602; the real one, chat/turnsLoaded before the response.
/// Fewer than two turns leave nothing older to fetch.
fn fetch_turns(n: usize) -> Vec<Step> {
    let f = format!("f{n}");
    let (sub, bad, fetch) = (format!("{f}sub"), format!("{f}bad"), format!("{f}fetch"));
    let cursor_at = "/result/snapshot/state/turnsNextCursor";
    let cursor = format!("${{{sub}{cursor_at}}}");
    let windowed = json!({ "channel": "${S.chat}", "view": { "turns": 1 },
                           "delivery": { "maxLatencyMs": 0 } });
    vec![
        Step::Initialize(Initialize {
            on: on(&f),
            subscriptions: Some(Vec::new()),
            ..Initialize::default()
        }),
        request(on(&f), "subscribe", windowed, &sub),
        answered(&f, &sub, Rule::Turn010),
        only_if(
            &format!("${{{sub}}}"),
            cursor_at,
            "fewer than two turns: nothing older to fetch",
        ),
        request(
            on(&f),
            "fetchTurns",
            json!({ "channel": "${S.chat}", "cursor": format!("fz-bogus-{cursor}") }),
            &bad,
        ),
        judged(
            response(on(&f), &bad, false, &[-32602]),
            Rule::Turn010,
            Assertions::default(),
        ),
        request(
            on(&f),
            "fetchTurns",
            json!({ "channel": "${S.chat}", "cursor": cursor }),
            &fetch,
        ),
        Step::Action(ExpectAction {
            on: on(&f),
            channel: "${S.chat}".into(),
            action_type: "chat/turnsLoaded".into(),
            ..ExpectAction::default()
        }),
        // The response has not come before it.
        Step::Silence(ExpectSilence {
            on: on(&f),
            for_ms: 0,
            responses: true,
            ..ExpectSilence::default()
        }),
        succeeds(&f, &fetch, Rule::Turn010),
    ]
}

/// A terminal the client creates and claims, watches, runs `true` and `exit` in (its end:
/// TERM-006) and disposes: the root subscriber sees it listed, then dropped. Not probed
/// where the root lists no terminals.
fn terminal(k: &str, n: usize) -> Vec<Step> {
    let uri = format!("ahp-terminal:/${{run}}-term-{n}");
    let (p, w, d) = (format!("p{n}"), format!("p{n}w"), format!("p{n}d"));
    let listed = |contains: bool| {
        let entry: crate::suite::Matches =
            [("/action/terminals".to_owned(), json!({ "resource": uri }))].into();
        let (where_contains, where_excludes) = if contains {
            (entry, Default::default())
        } else {
            (Default::default(), entry)
        };
        Step::Action(ExpectAction {
            on: on("c1"),
            channel: ROOT.into(),
            action_type: "root/terminalsChanged".into(),
            where_contains,
            where_excludes,
            ..ExpectAction::default()
        })
    };
    let claim = json!({ "kind": "client", "clientId": format!("${{{k}.clientId}}") });
    vec![
        only_if(
            "${c1.init}",
            "/result/snapshots/0/state/terminals",
            "the root state lists no terminals",
        ),
        request(
            on(k),
            "createTerminal",
            json!({ "channel": uri, "claim": claim }),
            &p,
        ),
        succeeds(k, &p, Rule::Term001),
        request(
            on(k),
            "subscribe",
            json!({ "channel": uri, "delivery": { "maxLatencyMs": 0 } }),
            &w,
        ),
        succeeds(k, &w, Rule::Sub001),
        // The echo is judged by the always-on DISPATCH-001.
        Step::Dispatch(Dispatch {
            on: on(k),
            channel: uri.clone(),
            action: json!({ "type": "terminal/input", "data": "true\nexit 0\n" }),
            ..Dispatch::default()
        }),
        Step::Action(ExpectAction {
            on: on(k),
            relies_on: id(Rule::Term006),
            channel: uri.clone(),
            action_type: "terminal/exited".into(),
            ..ExpectAction::default()
        }),
        listed(true),
        request(on(k), "disposeTerminal", json!({ "channel": uri }), &d),
        succeeds(k, &d, Rule::Term001),
        listed(false),
    ]
}

/// The text the completions probe types (a character outside the BMP, then an `@` word).
const COMPLETION_TEXT: &str = "🙂 see @C";

/// Completions of a text with a character outside the BMP stay within its UTF-16 length;
/// resolving the values `resolveSessionConfig` answered gives them back (CONFIG-001), where
/// it answers values.
fn session_config(k: &str, n: usize) -> Vec<Step> {
    let (p, a, c) = (format!("p{n}"), format!("p{n}a"), format!("p{n}c"));
    let length = COMPLETION_TEXT.encode_utf16().count();
    let first_end = "/result/items/0/rangeEnd";
    let within = Assertions {
        at_most: [(first_end.to_owned(), json!(length))].into(),
        ..Assertions::default()
    };
    let values = format!("${{{p}/result/values}}");
    let settled = Assertions {
        equals: [("/result/values".to_owned(), json!(values))].into(),
        ..Assertions::default()
    };
    vec![
        request(
            on(k),
            "completions",
            json!({ "channel": "${S.chat}", "kind": "userMessage", "text": COMPLETION_TEXT,
                    "offset": length }),
            &c,
        ),
        answered(k, &c, Rule::Completions001),
        Step::AnyOf(AnyOf {
            alternatives: vec![
                vec![check(&format!("${{{c}}}"), lacks(first_end))],
                vec![check(&format!("${{{c}}}"), within)],
            ],
        }),
        request(
            on(k),
            "resolveSessionConfig",
            json!({ "channel": ROOT }),
            &p,
        ),
        answered(k, &p, Rule::Config001),
        only_if(
            &format!("${{{p}}}"),
            "/result/values",
            "resolveSessionConfig answered no values",
        ),
        request(
            on(k),
            "resolveSessionConfig",
            json!({ "channel": ROOT, "config": values }),
            &a,
        ),
        judged(response(on(k), &a, true, &[]), Rule::Config001, settled),
    ]
}

/// A new connection subscribes to the logs channel its initialize answer advertises: the
/// answer carries no snapshot. Nothing to probe where none is advertised.
fn telemetry(n: usize) -> Vec<Step> {
    let l = format!("l{n}");
    let (init, sub) = (format!("{l}.init"), format!("{l}sub"));
    let logs = "/result/telemetry/logs";
    vec![
        Step::Initialize(Initialize {
            on: on(&l),
            subscriptions: Some(Vec::new()),
            ..Initialize::default()
        }),
        only_if(
            &format!("${{{init}}}"),
            logs,
            "initialize advertises no logs channel",
        ),
        request(
            on(&l),
            "subscribe",
            json!({ "channel": format!("${{{init}{logs}}}") }),
            &sub,
        ),
        judged(
            response(on(&l), &sub, true, &[]),
            Rule::Sub006,
            lacks("/result/snapshot"),
        ),
    ]
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
            let probed = probe_steps(probe, 3, 1, 2);
            assert!(!probed.steps.is_empty(), "{probe:?}");
            for step in probed.steps {
                let mut line = String::new();
                serde::Serialize::serialize(&step, toml::ser::ValueSerializer::new(&mut line))
                    .expect("writes");
                let back: Line = toml::from_str(&format!("step = {line}"))
                    .unwrap_or_else(|e| panic!("{probe:?}: {line}: {e}"));
                assert_eq!(back.step, step, "{probe:?}: {line}");
            }
        }
    }

    /// With one client there is no other to unsubscribe: the probe has no steps.
    #[test]
    fn unsubscribing_needs_a_second_client() {
        assert!(probe_steps(Probe::Unsubscribe, 3, 0, 1).steps.is_empty());
        let steps = probe_steps(Probe::Unsubscribe, 3, 0, 2).steps;
        assert!(steps
            .iter()
            .any(|s| matches!(s, Step::Notify(n) if n.on.as_deref() == Some("c2"))));
    }
}
