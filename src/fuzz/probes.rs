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

mod build;
mod features;
mod own_connection;

pub(super) use build::{initialize, on, plain, request, response};

use serde_json::json;

use super::ops::Probe;
use crate::checks::Rule;
use crate::client::ROOT;
use crate::suite::{
    AnyOf, Asserting, Assertions, Connect, Dispatch, ExpectEcho, ExpectNotification, ExpectSilence,
    Notify, Step,
};
use build::{answered, check, has, id, judged, succeeds, synced};
use features::{session_config, terminal};
use own_connection::{fetch_turns, mixed_versions, telemetry, unsupported_version};

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

    /// Every probe's steps, as the case `--to-case` writes around them, load as a suite: the
    /// rules they rely on are rules a run reports on, and the case claims its own.
    #[test]
    fn each_probes_steps_load_as_a_regression_case() {
        for probe in Probe::ALL {
            let probed = probe_steps(probe, 3, 1, 2);
            let mut steps = String::new();
            for step in &probed.steps {
                let mut line = String::new();
                serde::Serialize::serialize(step, toml::ser::ValueSerializer::new(&mut line))
                    .expect("writes");
                steps.push_str(&format!("  {line},\n"));
            }
            let text = format!(
                "page = \"fuzz\"\n[[case]]\nid = \"{}/fuzz-3\"\nlevel = \"MUST\"\n\
                 spec = \"found by the fuzzer\"\nrequirement = \"r\"\ndoes = \"d\"\n\
                 steps = [\n{steps}]\n",
                probed.rule
            );
            let loaded = crate::suite::Catalog::from_texts([("fuzz.toml".to_owned(), text)]);
            assert!(loaded.is_ok(), "{probe:?}: {:?}", loaded.err());
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
