//! A shrunk trace as suite steps: the clients joining the session and the dispatches it
//! made with the answers a correct host gives (its protocol probes are the steps they ran:
//! [`super::probes`]). The steps are the suite's own typed [`Step`]s, which `--to-case`
//! writes out with serde.

use serde_json::{json, Value};

use super::exec::Performed;
use super::model::{Channel, Expect};
use super::probes::{initialize, on, plain, request, response};
use crate::suite::{Dispatch, ExpectEcho, Sleep, Step};

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
