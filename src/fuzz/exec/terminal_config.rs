//! The probes of issue 25's terminals and session configuration (i25b). The terminal
//! probe: a client creates a terminal it claims, watches it, runs `true` and `exit` in it
//! (a command, so the shell prints its integration after the subscription), waits for its end
//! (TERM-006) and disposes it; the root subscriber must see it listed on creation and
//! dropped on disposal (TERM-001), the always-on checks judge what it printed (TERM-002,
//! INV-TERM-1). A host whose root state lists no terminals offers none: nothing to probe.

use serde_json::{json, Value};

use super::Run;
use crate::checks::Rule;
use crate::client::ROOT;
use crate::transport::TransportError;

/// What the probe found wrong: the rule, what a correct host does, what this one did.
type Finding = (Rule, String, String);

/// Whether `message` is a root/terminalsChanged whose list holds `uri` (`listed`) or not.
fn terminals_changed(message: &Value, uri: &str, listed: bool) -> bool {
    message["method"] == "action"
        && message["params"]["channel"] == ROOT
        && message["params"]["action"]["type"] == "root/terminalsChanged"
        && message["params"]["action"]["terminals"]
            .as_array()
            .is_some_and(|list| list.iter().any(|t| t["resource"] == uri) == listed)
}

fn succeeded(answer: &Result<Value, TransportError>) -> bool {
    matches!(answer, Ok(m) if m.get("result").is_some())
}

fn shown(answer: &Result<Value, TransportError>) -> String {
    match answer {
        Ok(message) => crate::checks::frame::clip(&message.to_string()),
        Err(error) => error.to_string(),
    }
}

impl Run<'_> {
    pub(super) async fn terminal(&mut self, index: usize, client: usize) -> Option<Finding> {
        let offered = self.conns[0]
            .mirror()
            .state(ROOT)
            .is_some_and(|root| root.get("terminals").is_some_and(Value::is_array));
        if !offered {
            return None;
        }
        let uri = format!("ahp-terminal:/{}-term-{index}", self.token);
        let timeout = self.cfg.timeout;
        let client_id = self.conns[client].client_id().to_owned();
        let params =
            json!({ "channel": uri, "claim": { "kind": "client", "clientId": client_id } });
        let conn = &mut self.conns[client];
        let created = conn.request("createTerminal", params, timeout).await;
        if !succeeded(&created) {
            let expected = "createTerminal for a fresh ahp-terminal: URI succeeds";
            return Some((Rule::Term001, expected.to_owned(), shown(&created)));
        }
        let watched = conn.subscribe(&uri, timeout).await;
        if succeeded(&watched) {
            let input = json!({ "type": "terminal/input", "data": "true\nexit 0\n" });
            // The echo is judged by the always-on DISPATCH-001; its absence by nothing here.
            let _ = conn.dispatch(&uri, &input).await;
            // What the shell prints comes before its end: wait for it (TERM-006).
            let exited = |m: &Value| {
                m["method"] == "action"
                    && m["params"]["channel"] == uri.as_str()
                    && m["params"]["action"]["type"] == "terminal/exited"
            };
            if let Err(none) = self.wait_or_ping(client, Rule::Term006, exited).await {
                let expected = "terminal/exited once the shell ran `exit`";
                return Some((Rule::Term006, expected.to_owned(), none));
            }
        }
        if let Err(none) = self
            .wait_or_ping(0, Rule::Term001, |m| terminals_changed(m, &uri, true))
            .await
        {
            let expected = "root/terminalsChanged listing the new terminal on the root subscriber";
            return Some((Rule::Term001, expected.to_owned(), none));
        }
        let disposed = self.conns[client]
            .request("disposeTerminal", json!({ "channel": uri }), timeout)
            .await;
        if !succeeded(&disposed) {
            let expected = "disposeTerminal of a terminal it created succeeds";
            return Some((Rule::Term001, expected.to_owned(), shown(&disposed)));
        }
        let dropped = self
            .wait_or_ping(0, Rule::Term001, |m| terminals_changed(m, &uri, false))
            .await;
        let none = dropped.err()?;
        let expected = "root/terminalsChanged without the disposed terminal on the root subscriber";
        Some((Rule::Term001, expected.to_owned(), none))
    }
}

/// The text the completions probe types (a character outside the BMP, then an `@` word).
const COMPLETION_TEXT: &str = "🙂 see @C";

impl Run<'_> {
    /// The configuration probe: resolving the values `resolveSessionConfig` answered gives
    /// them back (CONFIG-001), and the completions of a text with a character outside the
    /// BMP stay within its UTF-16 length (COMPLETIONS-001).
    pub(super) async fn session_config(&mut self, client: usize) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let chat = self.chat.clone();
        let link = &mut self.conns[client];
        let first = link
            .request("resolveSessionConfig", json!({ "channel": ROOT }), timeout)
            .await;
        let values = first
            .as_ref()
            .ok()
            .and_then(|m| m.pointer("/result/values"));
        if let Some(values) = values.cloned() {
            let params = json!({ "channel": ROOT, "config": values });
            let again = link.request("resolveSessionConfig", params, timeout).await;
            let settled = again
                .as_ref()
                .ok()
                .and_then(|m| m.pointer("/result/values"));
            if settled != Some(&values) {
                let expected = "resolving the resolved values answers the same values";
                return Some((Rule::Config001, expected.to_owned(), shown(&again)));
            }
        }
        let length = COMPLETION_TEXT.encode_utf16().count();
        let params = json!({ "channel": chat, "kind": "userMessage", "text": COMPLETION_TEXT,
                             "offset": length });
        let done = link.request("completions", params, timeout).await;
        let items = done.as_ref().ok().and_then(|m| m.pointer("/result/items"));
        let outside = items
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|item| {
                item["rangeEnd"]
                    .as_u64()
                    .is_some_and(|end| end > length as u64)
            });
        outside.then(|| {
            let expected = format!("completion ranges within the text's {length} UTF-16 units");
            (Rule::Completions001, expected, shown(&done))
        })
    }
}

impl Run<'_> {
    /// The telemetry probe: a new connection subscribes to the logs channel its initialize
    /// result advertises, if any: the answer carries no snapshot (SUB-006).
    pub(super) async fn telemetry(&mut self) -> Option<Finding> {
        let (mut link, answer) = match self.handshake(&["1.0.0"]).await {
            Ok(done) => done,
            Err((rule, expected, actual)) => return Some((rule, expected, actual)),
        };
        let logs = answer
            .as_ref()
            .ok()
            .and_then(|m| m.pointer("/result/telemetry/logs"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let found = match logs {
            Some(logs) => {
                let answer = link.subscribe(&logs, self.cfg.timeout).await;
                let snapshot = answer
                    .as_ref()
                    .ok()
                    .and_then(|m| m.pointer("/result/snapshot"));
                (!succeeded(&answer) || snapshot.is_some()).then(|| {
                    let expected = "a result without a snapshot to subscribe to the logs channel";
                    (Rule::Sub006, expected.to_owned(), shown(&answer))
                })
            }
            None => None,
        };
        link.close().await;
        found
    }
}
