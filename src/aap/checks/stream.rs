//! The always-on checks of one turn's SSE stream: event shapes, `turn_start` first,
//! `turn_stop` last and final, the mode's event kinds, and tool-call bookkeeping.

use std::collections::HashSet;

use serde_json::Value;

use super::{ending, Observer, Seen};
use crate::aap::http::Body;
use crate::aap::sse::StreamEnd;
use crate::checks::Rule;

/// Event names a turn stream may carry.
const KNOWN: &[&str] = &[
    "session_start",
    "turn_start",
    "text_delta",
    "thinking_delta",
    "text",
    "thinking",
    "tool_call",
    "tool_result",
    "turn_stop",
];

/// The events of a stream as (name, data); data that is not a JSON object becomes `Null`.
pub fn decoded(seen: &Seen<'_>) -> Vec<(String, Value)> {
    let Body::Events(read) = &seen.response.body else {
        return Vec::new();
    };
    read.events
        .iter()
        .map(|e| {
            let data = serde_json::from_str::<Value>(&e.data)
                .ok()
                .filter(Value::is_object)
                .unwrap_or(Value::Null);
            (e.name.clone(), data)
        })
        .collect()
}

/// Checks one turn stream. `creation`: the stream answers a version 1 or 2 session
/// creation, which opens with `session_start` (AAP-SSE-009) before its turn.
pub fn check_stream(observer: &mut Observer, seen: &Seen<'_>, creation: bool) {
    let Body::Events(read) = &seen.response.body else {
        return;
    };
    let what = format!("{} {}", seen.method, seen.path);
    for event in &read.events {
        check_event(observer, &event.name, &event.data, &what);
    }
    let mut names: Vec<&str> = read.events.iter().map(|e| e.name.as_str()).collect();
    if creation {
        check_session_start(
            observer,
            &names,
            read.events.first().map(|e| e.data.as_str()),
        );
        if names.first() == Some(&"session_start") {
            names.remove(0);
        }
    }
    let listed = names.join(", ");

    observer.count(Rule::AapSse002);
    let starts = names.iter().filter(|n| **n == "turn_start").count();
    if names.first() != Some(&"turn_start") || starts != 1 {
        observer.violate(
            Rule::AapSse002,
            "turn_start first, once",
            format!("events [{listed}]"),
        );
    }

    observer.count(Rule::AapSse003);
    let stops = names.iter().filter(|n| **n == "turn_stop").count();
    if names.last() != Some(&"turn_stop") || stops != 1 {
        observer.violate(
            Rule::AapSse003,
            "turn_stop last, once",
            format!(
                "events [{listed}]; {}",
                ending(&read.end, read.unterminated)
            ),
        );
    } else if read.end != StreamEnd::Closed || read.unterminated {
        observer.violate(
            Rule::AapSse003,
            "the response ends after turn_stop",
            ending(&read.end, read.unterminated),
        );
    }

    observer.count(Rule::AapSse006);
    if names.contains(&"session_start") {
        observer.violate(
            Rule::AapSse006,
            "no session_start in a turn stream",
            format!("events [{listed}]"),
        );
    }

    let mode = seen
        .request
        .and_then(|r| r.get("stream"))
        .and_then(Value::as_str);
    let (rule, forbidden): (Rule, &[&str]) = match mode {
        Some("delta") => (Rule::AapSse004, &["text", "thinking"]),
        Some("message") => (Rule::AapSse005, &["text_delta", "thinking_delta"]),
        _ => return check_tools(observer, seen),
    };
    observer.count(rule);
    if let Some(bad) = names.iter().find(|n| forbidden.contains(n)) {
        observer.violate(
            rule,
            format!("no {bad} events in {} mode", mode.unwrap_or_default()),
            format!("events [{listed}]"),
        );
    }
    check_tools(observer, seen);
}

/// AAP-SSE-009 (versions 1 and 2): a creation stream opens with one `session_start`
/// carrying a non-empty `sessionId`.
fn check_session_start(observer: &mut Observer, names: &[&str], first_data: Option<&str>) {
    observer.count(Rule::AapSse009);
    let starts = names.iter().filter(|n| **n == "session_start").count();
    let id = first_data
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .and_then(|d| {
            d.get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .filter(|id| !id.is_empty());
    if names.first() != Some(&"session_start") || starts != 1 || id.is_none() {
        observer.violate(
            Rule::AapSse009,
            "session_start {sessionId} first, once, before turn_start",
            format!("events [{}]", names.join(", ")),
        );
    }
}

fn check_event(observer: &mut Observer, name: &str, data: &str, what: &str) {
    observer.count(Rule::AapSse001);
    if !KNOWN.contains(&name) {
        observer.violate(
            Rule::AapSse001,
            "a known event type",
            format!("event {name:?} on {what}"),
        );
        return;
    }
    let Ok(value) = serde_json::from_str::<Value>(data) else {
        observer.violate(
            Rule::AapSse001,
            format!("{name}: data is JSON"),
            format!("data {data:?}"),
        );
        return;
    };
    if let Some(inner) = value.get("event") {
        if inner.as_str() != Some(name) {
            observer.violate(
                Rule::AapSse001,
                format!("data.event, when present, equals {name}"),
                format!("data.event {inner}"),
            );
            return;
        }
    }
    if let Err(errors) = observer_schema(observer, name, &value) {
        observer.violate(
            Rule::AapSse001,
            format!("{name} data to match its schema"),
            errors,
        );
    }
}

fn observer_schema(observer: &mut Observer, name: &str, value: &Value) -> Result<(), String> {
    observer.validate_quiet(&format!("event:{name}"), value)
}

/// toolCallIds unique in the stream; every tool_result answers a server-side call of this
/// stream or a permission this request granted.
fn check_tools(observer: &mut Observer, seen: &Seen<'_>) {
    let events = decoded(seen);
    let field = |data: &Value, key: &str| {
        data.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let calls: Vec<(String, String)> = events
        .iter()
        .filter(|(n, _)| n == "tool_call")
        .map(|(_, d)| (field(d, "toolCallId"), field(d, "name")))
        .collect();
    let results: Vec<String> = events
        .iter()
        .filter(|(n, _)| n == "tool_result")
        .map(|(_, d)| field(d, "toolCallId"))
        .collect();
    if calls.is_empty() && results.is_empty() {
        return;
    }
    observer.count(Rule::AapTool008);
    let mut ids = HashSet::new();
    if let Some((dup, _)) = calls.iter().find(|(id, _)| !ids.insert(id.clone())) {
        observer.violate(
            Rule::AapTool008,
            "toolCallIds unique within a turn",
            format!("{dup} called twice"),
        );
    }
    let granted: HashSet<String> = seen
        .request
        .and_then(|r| r.get("messages"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| {
            m.get("role").and_then(Value::as_str) == Some("tool_permission")
                && m.get("granted") == Some(&Value::Bool(true))
        })
        .map(|m| field(m, "toolCallId"))
        .collect();
    for id in &results {
        let call = calls.iter().find(|(call, _)| call == id);
        let answers = match call {
            Some((_, name)) => !seen.client_tools.contains(name),
            None => granted.contains(id),
        };
        if !answers {
            observer.violate(
                Rule::AapTool008,
                "tool_result only for a server tool call of this turn or a permission granted now",
                format!("tool_result for {id}"),
            );
        }
    }
}

impl Observer {
    /// Validates without counting (the caller counted the item).
    pub fn validate_quiet(&mut self, def: &str, value: &Value) -> Result<(), String> {
        self.schemas()
            .validate(def, value)
            .map_err(|errors| errors.first().map(ToString::to_string).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::aap::http::Response;
    use crate::aap::sse::{SseEvent, SseRead};

    fn stream(mode: &str, events: &[(&str, Value)], end: StreamEnd) -> Vec<Rule> {
        let response = Response {
            status: 200,
            content_type: Some("text/event-stream".into()),
            body: Body::Events(SseRead {
                events: events
                    .iter()
                    .map(|(name, data)| SseEvent {
                        name: (*name).to_owned(),
                        data: data.to_string(),
                    })
                    .collect(),
                end,
                unterminated: false,
            }),
        };
        let request = json!({"stream": mode, "messages": []});
        let tools: HashSet<String> = HashSet::from(["client_tool".to_owned()]);
        let schemas = Arc::new(crate::aap::checks::schemas().expect("schemas"));
        let mut observer = Observer::new(schemas);
        observer.observe(&Seen {
            method: "POST",
            path: "/sessions/s/turns",
            request: Some(&request),
            response: &response,
            client_tools: &tools,
        });
        observer.violations.iter().map(|v| v.rule).collect()
    }

    fn start() -> (&'static str, Value) {
        ("turn_start", json!({}))
    }

    fn stop() -> (&'static str, Value) {
        ("turn_stop", json!({"stopReason": "end_turn"}))
    }

    #[test]
    fn a_well_formed_delta_stream_has_no_violation() {
        let events = [start(), ("text_delta", json!({"delta": "a"})), stop()];
        assert_eq!(
            stream("delta", &events, StreamEnd::Closed),
            Vec::<Rule>::new()
        );
    }

    #[test]
    fn a_missing_or_early_turn_stop_breaks_sse_003() {
        let dropped = [start(), ("text_delta", json!({"delta": "a"}))];
        assert_eq!(
            stream("delta", &dropped, StreamEnd::Closed),
            vec![Rule::AapSse003]
        );
        let after = [start(), stop(), ("text", json!({"text": "late"}))];
        assert_eq!(
            stream("message", &after, StreamEnd::Closed),
            vec![Rule::AapSse003]
        );
        let open = [start(), stop()];
        assert_eq!(
            stream(
                "delta",
                &open,
                StreamEnd::TimedOut(std::time::Duration::from_millis(1))
            ),
            vec![Rule::AapSse003]
        );
    }

    #[test]
    fn turn_start_must_come_first() {
        let events = [("text", json!({"text": "x"})), start(), stop()];
        assert_eq!(
            stream("message", &events, StreamEnd::Closed),
            vec![Rule::AapSse002]
        );
    }

    #[test]
    fn event_kinds_follow_the_mode() {
        let whole = [start(), ("text", json!({"text": "x"})), stop()];
        assert_eq!(
            stream("delta", &whole, StreamEnd::Closed),
            vec![Rule::AapSse004]
        );
        let delta = [start(), ("thinking_delta", json!({"delta": "x"})), stop()];
        assert_eq!(
            stream("message", &delta, StreamEnd::Closed),
            vec![Rule::AapSse005]
        );
        let session = [
            start(),
            ("session_start", json!({"sessionId": "s"})),
            stop(),
        ];
        assert_eq!(
            stream("message", &session, StreamEnd::Closed),
            vec![Rule::AapSse006]
        );
    }

    #[test]
    fn event_data_is_checked_against_its_name() {
        let bad = [start(), ("text_delta", json!({"text": "x"})), stop()];
        assert_eq!(
            stream("delta", &bad, StreamEnd::Closed),
            vec![Rule::AapSse001]
        );
        let renamed = [
            start(),
            ("text", json!({"event": "thinking", "text": "x"})),
            stop(),
        ];
        assert_eq!(
            stream("message", &renamed, StreamEnd::Closed),
            vec![Rule::AapSse001]
        );
        let unknown = [start(), ("message_start", json!({})), stop()];
        assert_eq!(
            stream("delta", &unknown, StreamEnd::Closed),
            vec![Rule::AapSse001]
        );
    }

    #[test]
    fn tool_results_answer_server_calls_only() {
        let client = [
            start(),
            (
                "tool_call",
                json!({"toolCallId": "c1", "name": "client_tool", "input": {}}),
            ),
            ("tool_result", json!({"toolCallId": "c1", "content": "x"})),
            stop(),
        ];
        assert_eq!(
            stream("delta", &client, StreamEnd::Closed),
            vec![Rule::AapTool008]
        );
        let twice = [
            start(),
            (
                "tool_call",
                json!({"toolCallId": "c1", "name": "server", "input": {}}),
            ),
            (
                "tool_call",
                json!({"toolCallId": "c1", "name": "server", "input": {}}),
            ),
            stop(),
        ];
        assert_eq!(
            stream("delta", &twice, StreamEnd::Closed),
            vec![Rule::AapTool008]
        );
        let unasked = [
            start(),
            ("tool_result", json!({"toolCallId": "zz", "content": "x"})),
            stop(),
        ];
        assert_eq!(
            stream("delta", &unasked, StreamEnd::Closed),
            vec![Rule::AapTool008]
        );
    }
}
