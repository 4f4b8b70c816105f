//! Judging an `expect` step against a stored response.

use std::collections::HashMap;

use serde_json::Value;

use super::http::{Body, Response};
use super::suite::Expect;
use super::vars::{substitute, substitute_value};

/// One expectation that did not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub expected: String,
    pub actual: String,
}

impl Miss {
    pub fn new(expected: impl Into<String>, actual: impl Into<String>) -> Miss {
        Miss {
            expected: expected.into(),
            actual: actual.into(),
        }
    }
}

fn shown(response: &Response) -> String {
    match &response.body {
        Body::Json(value) => {
            let text = value.to_string();
            text.chars().take(200).collect()
        }
        Body::Text(text) => format!("text {:?}", text.chars().take(120).collect::<String>()),
        Body::Events(read) => format!("{} SSE events", read.events.len()),
        Body::Empty => "no body".to_owned(),
    }
}

/// The stop reason of a JSON turn response or of an SSE stream's `turn_stop`.
pub fn stop_reason(response: &Response) -> Option<String> {
    match &response.body {
        Body::Json(value) => value
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        Body::Events(read) => read
            .events
            .iter()
            .rev()
            .find(|e| e.name == "turn_stop")
            .and_then(|e| serde_json::from_str::<Value>(&e.data).ok())
            .and_then(|d| {
                d.get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }),
        _ => None,
    }
}

/// Every miss of `expect` on `response` (variables substituted in pointers and values).
pub fn check_expect(
    expect: &Expect,
    response: &Response,
    vars: &HashMap<String, String>,
) -> Vec<Miss> {
    let mut misses = status_misses(expect, response);
    if let Some(media) = &expect.content_type {
        if !response.is_media(media) {
            misses.push(Miss::new(
                format!("Content-Type {media}"),
                format!("{:?}", response.content_type),
            ));
        }
    }
    if expect.empty_body && response.body != Body::Empty {
        misses.push(Miss::new("no body", shown(response)));
    }
    let body = response.json();
    let needs_json = !expect.json.is_empty()
        || !expect.present.is_empty()
        || !expect.differs.is_empty()
        || !expect.non_empty.is_empty();
    if needs_json && body.is_none() {
        misses.push(Miss::new("a JSON body", shown(response)));
    }
    if let Some(body) = body {
        json_misses(expect, body, vars, &mut misses);
    }
    event_misses(expect, response, &mut misses);
    if let Some(want) = &expect.stop_reason {
        let got = stop_reason(response);
        if got.as_deref() != Some(want.as_str()) {
            misses.push(Miss::new(format!("stop reason {want}"), format!("{got:?}")));
        }
    }
    misses
}

/// What `expect` says of the status: exact, one of a list, or a class (`2xx`).
fn status_misses(expect: &Expect, response: &Response) -> Vec<Miss> {
    let mut misses = Vec::new();
    let status = response.status;
    if let Some(want) = expect.status {
        if status != want {
            misses.push(Miss::new(
                format!("status {want}"),
                format!("{status}: {}", shown(response)),
            ));
        }
    }
    if let Some(list) = &expect.status_in {
        if !list.contains(&status) {
            misses.push(Miss::new(
                format!("a status in {list:?}"),
                format!("{status}: {}", shown(response)),
            ));
        }
    }
    if let Some(class) = &expect.class {
        let first = class
            .chars()
            .next()
            .and_then(|c| c.to_digit(10))
            .unwrap_or(0) as u16;
        if status / 100 != first {
            misses.push(Miss::new(
                format!("a {class} status"),
                format!("{status}: {}", shown(response)),
            ));
        }
    }
    misses
}

/// What `expect` says of the SSE event names, all of them and the tool ones.
fn event_misses(expect: &Expect, response: &Response, misses: &mut Vec<Miss>) {
    if let Some(names) = &expect.events {
        let got: Vec<&str> = response
            .events()
            .map(|r| r.events.iter().map(|e| e.name.as_str()).collect())
            .unwrap_or_default();
        if got != names.iter().map(String::as_str).collect::<Vec<_>>() {
            misses.push(Miss::new(
                format!("events [{}]", names.join(", ")),
                format!("[{}] ({})", got.join(", "), shown(response)),
            ));
        }
    }
    if let Some(names) = &expect.tool_events {
        let got: Vec<&str> = response
            .events()
            .map(|r| {
                r.events
                    .iter()
                    .map(|e| e.name.as_str())
                    .filter(|n| n.starts_with("tool_"))
                    .collect()
            })
            .unwrap_or_default();
        if got != names.iter().map(String::as_str).collect::<Vec<_>>() {
            misses.push(Miss::new(
                format!("tool events [{}]", names.join(", ")),
                format!("[{}] ({})", got.join(", "), shown(response)),
            ));
        }
    }
}

fn json_misses(
    expect: &Expect,
    body: &Value,
    vars: &HashMap<String, String>,
    misses: &mut Vec<Miss>,
) {
    let resolve = |pointer: &str| substitute(pointer, vars).unwrap_or_else(|_| pointer.to_owned());
    let value_of = |value: &Value| substitute_value(value, vars).unwrap_or_else(|_| value.clone());
    for (pointer, want) in &expect.json {
        let pointer = resolve(pointer);
        let want = value_of(want);
        match body.pointer(&pointer) {
            Some(got) if *got == want => {}
            got => misses.push(Miss::new(
                format!("{pointer} = {want}"),
                got.map_or("absent".to_owned(), Value::to_string),
            )),
        }
    }
    for pointer in &expect.present {
        let pointer = resolve(pointer);
        if body.pointer(&pointer).is_none() {
            misses.push(Miss::new(format!("{pointer} present"), "absent"));
        }
    }
    for pointer in &expect.absent {
        let pointer = resolve(pointer);
        if let Some(got) = body.pointer(&pointer) {
            misses.push(Miss::new(format!("{pointer} absent"), got.to_string()));
        }
    }
    for pointer in &expect.non_empty {
        let pointer = resolve(pointer);
        match body.pointer(&pointer) {
            Some(Value::String(text)) if !text.is_empty() => {}
            got => misses.push(Miss::new(
                format!("{pointer} a non-empty string"),
                got.map_or("absent".to_owned(), Value::to_string),
            )),
        }
    }
    for (pointer, not) in &expect.differs {
        let pointer = resolve(pointer);
        let not = value_of(not);
        if body.pointer(&pointer) == Some(&not) {
            misses.push(Miss::new(
                format!("{pointer} other than {not}"),
                not.to_string(),
            ));
        }
    }
}

/// The `capture` values of `expect`: variable → string at the pointer.
pub fn captures(expect: &Expect, response: &Response) -> Result<Vec<(String, String)>, Miss> {
    let mut out = Vec::new();
    for (name, pointer) in &expect.capture {
        let value = response.json().and_then(|b| b.pointer(pointer));
        match value {
            Some(Value::String(text)) => out.push((name.clone(), text.clone())),
            Some(other) => out.push((name.clone(), other.to_string())),
            None => {
                return Err(Miss::new(
                    format!("{pointer} present (to capture as {name})"),
                    shown(response),
                ))
            }
        }
    }
    Ok(out)
}
