//! The probes that open a connection of their own: version negotiation, a windowed chat
//! and its older turns, the logs channel.

use serde_json::json;

use super::build::{answered, check, id, judged, lacks, on, only_if, request, response, succeeds};
use crate::checks::Rule;
use crate::suite::{
    Assertions, ExpectAction, ExpectClosed, ExpectResponse, ExpectSilence, Initialize, Step,
};

/// A new connection offers 0.9.0 and 1.2.0 (a compatible minor of 1.0.0, as in the
/// VERSION-002 case): the host answers with 1.2.0, never a version nobody offered.
pub(super) fn mixed_versions(n: usize) -> Vec<Step> {
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
pub(super) fn unsupported_version(n: usize) -> Vec<Step> {
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

/// A new connection subscribes to the chat with a one-turn window and fetches the older
/// turns: a bogus cursor gets -32602; the real one, chat/turnsLoaded before the response.
/// Fewer than two turns leave nothing older to fetch.
pub(super) fn fetch_turns(n: usize) -> Vec<Step> {
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

/// A new connection subscribes to the logs channel its initialize answer advertises: the
/// answer carries no snapshot. Nothing to probe where none is advertised.
pub(super) fn telemetry(n: usize) -> Vec<Step> {
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
