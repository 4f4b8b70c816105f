//! The probes of issue 25's features on the run's clients: terminals, session configuration
//! and completions.

use serde_json::json;

use super::build::{answered, check, id, judged, lacks, on, only_if, request, response, succeeds};
use crate::checks::Rule;
use crate::client::ROOT;
use crate::suite::{AnyOf, Assertions, Dispatch, ExpectAction, Step};

/// A terminal the client creates and claims, watches, runs `true` and `exit` in (its end:
/// TERM-006) and disposes: the root subscriber sees it listed, then dropped. Not probed
/// where the root lists no terminals.
pub(super) fn terminal(k: &str, n: usize) -> Vec<Step> {
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
pub(super) fn session_config(k: &str, n: usize) -> Vec<Step> {
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
