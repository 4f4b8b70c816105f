//! Constructors of the typed steps the probes (and the regression case around them) are
//! made of: requests, the responses and checks that judge them, each for a named rule.

use serde_json::{json, Value};

use crate::checks::Rule;
use crate::client::ROOT;
use crate::suite::{
    AnyOf, Asserting, Assertions, ExpectCheck, ExpectResponse, Initialize, NotApplicable, Request,
    Step,
};

/// A connection name, as a step's `on`.
pub(crate) fn on(conn: &str) -> Option<String> {
    Some(conn.to_owned())
}

/// A request on `conn`, stored as `name`.
pub(crate) fn request(conn: Option<String>, method: &str, params: Value, name: &str) -> Step {
    Step::Request(Request {
        on: conn,
        method: method.to_owned(),
        params: Some(params),
        name: Some(name.to_owned()),
        ..Request::default()
    })
}

/// A response step to request `to`: a success when `ok`, else an error with one of `codes`.
pub(crate) fn response(conn: Option<String>, to: &str, ok: bool, codes: &[i64]) -> ExpectResponse {
    ExpectResponse {
        on: conn,
        to: Some(to.to_owned()),
        ok: Some(ok),
        codes: (!codes.is_empty()).then(|| codes.to_vec()),
        ..ExpectResponse::default()
    }
}

pub(crate) fn plain(step: ExpectResponse) -> Step {
    asserting(step, Assertions::default())
}

pub(crate) fn asserting(step: ExpectResponse, assert: Assertions) -> Step {
    Step::Response(Asserting { step, assert })
}

/// `initialize` on `conn` with the default offer.
pub(crate) fn initialize(conn: &str) -> Step {
    Step::Initialize(Initialize {
        on: on(conn),
        ..Initialize::default()
    })
}

/// The id a step writes for `rule` (its `relies_on`).
pub(crate) fn id(rule: Rule) -> Option<String> {
    Some(rule.id().to_owned())
}

/// A response to `to` on `conn` whatever it is (a success or an error), checked for `rule`
/// (a missing answer is that rule's failure).
pub(crate) fn answered(conn: &str, to: &str, rule: Rule) -> Step {
    plain(ExpectResponse {
        on: on(conn),
        to: Some(to.to_owned()),
        relies_on: id(rule),
        ..ExpectResponse::default()
    })
}

/// A response to `to` on `conn` that must succeed, for `rule`.
pub(crate) fn succeeds(conn: &str, to: &str, rule: Rule) -> Step {
    judged(
        response(on(conn), to, true, &[]),
        rule,
        Assertions::default(),
    )
}

/// A response step checked for `rule` (its failure is that rule's, whichever part of it
/// misses), with `assert`.
pub(crate) fn judged(step: ExpectResponse, rule: Rule, assert: Assertions) -> Step {
    asserting(
        ExpectResponse {
            relies_on: id(rule),
            ..step
        },
        assert,
    )
}

/// A `check` of the stored value `value` (a `${…}` reference), on the case's own rule.
pub(crate) fn check(value: &str, assert: Assertions) -> Step {
    Step::Check(Asserting {
        step: ExpectCheck {
            value: value.to_owned(),
            ..ExpectCheck::default()
        },
        assert,
    })
}

pub(crate) fn has(pointer: &str) -> Assertions {
    Assertions {
        has: vec![pointer.to_owned()],
        ..Assertions::default()
    }
}

pub(crate) fn lacks(pointer: &str) -> Assertions {
    Assertions {
        lacks: vec![pointer.to_owned()],
        ..Assertions::default()
    }
}

/// Ends the probe as not applicable (`why`) unless the stored `value` has `pointer`: what
/// the host does not offer is not probed.
pub(crate) fn only_if(value: &str, pointer: &str, why: &str) -> Step {
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
/// on that connection, it did before answering (TRANSPORT-003: a request is answered).
pub(crate) fn synced(conn: &str, name: &str) -> [Step; 2] {
    [
        request(on(conn), "ping", json!({ "channel": ROOT }), name),
        answered(conn, name, Rule::Transport003),
    ]
}
