//! What a conversation holds, independent of how it travelled: a none-mode `messages`
//! array, a delta or message SSE stream and a history array all reduce to the same list of
//! [`Item`]s. Assistant message boundaries are dropped and adjacent text (thinking) is
//! joined, because delta mode cannot show where one assistant message ends and the next
//! begins; runs of `tool` messages are ordered by `toolCallId`, because the spec does not
//! order the results of one submission.

use serde_json::{json, Value};

/// One piece of conversation content.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    System(String),
    /// A user message's content, as blocks.
    User(Value),
    Text(String),
    Thinking(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    Image(String),
    /// A tool message; `content: None` = any content (a denial whose wording the server
    /// chooses).
    Tool {
        id: String,
        content: Option<Value>,
    },
}

impl Item {
    pub fn describe(&self) -> String {
        match self {
            Item::System(text) => format!("system {text:?}"),
            Item::User(content) => format!("user {content}"),
            Item::Text(text) => format!("text {text:?}"),
            Item::Thinking(text) => format!("thinking {text:?}"),
            Item::ToolUse { id, name, input } => format!("tool_use {id} {name} {input}"),
            Item::Image(url) => format!("image {url}"),
            Item::Tool {
                id,
                content: Some(c),
            } => format!("tool {id} {c}"),
            Item::Tool { id, content: None } => format!("tool {id} (any content)"),
        }
    }

    /// Equality where an expected `Tool` without content matches any content.
    fn matches(&self, actual: &Item) -> bool {
        match (self, actual) {
            (Item::Tool { id, content: None }, Item::Tool { id: other, .. }) => id == other,
            _ => self == actual,
        }
    }
}

/// A message's content as blocks (a string is one text block).
pub fn blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        other => vec![other.clone()],
    }
}

fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn block_item(block: &Value) -> Item {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => Item::Text(text_of(block, "text")),
        Some("thinking") => Item::Thinking(text_of(block, "thinking")),
        Some("tool_use") => Item::ToolUse {
            id: text_of(block, "toolCallId"),
            name: text_of(block, "name"),
            input: block.get("input").cloned().unwrap_or(Value::Null),
        },
        Some("image") => Item::Image(text_of(block, "url")),
        _ => Item::Text(block.to_string()),
    }
}

/// The items of history-shaped messages (history, none-mode `messages`, a create's seed).
pub fn items_of_messages(messages: &[Value]) -> Vec<Item> {
    let mut items = Vec::new();
    for message in messages {
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        match message.get("role").and_then(Value::as_str) {
            Some("system") => items.push(Item::System(
                content.as_str().unwrap_or_default().to_owned(),
            )),
            Some("user") => items.push(Item::User(Value::Array(blocks(&content)))),
            Some("assistant") => items.extend(blocks(&content).iter().map(block_item)),
            Some("tool") => items.push(Item::Tool {
                id: text_of(message, "toolCallId"),
                content: Some(Value::Array(blocks(&content))),
            }),
            // tool_permission and unknown roles carry no conversation content.
            _ => {}
        }
    }
    normalize(items)
}

/// The items of a turn's SSE events (name, data), and its stop reason.
pub fn items_of_events(events: &[(String, Value)]) -> (Vec<Item>, Option<String>) {
    let mut items = Vec::new();
    let mut stop = None;
    for (name, data) in events {
        match name.as_str() {
            "text_delta" => items.push(Item::Text(text_of(data, "delta"))),
            "thinking_delta" => items.push(Item::Thinking(text_of(data, "delta"))),
            "text" => items.push(Item::Text(text_of(data, "text"))),
            "thinking" => items.push(Item::Thinking(text_of(data, "thinking"))),
            "tool_call" => items.push(Item::ToolUse {
                id: text_of(data, "toolCallId"),
                name: text_of(data, "name"),
                input: data.get("input").cloned().unwrap_or(Value::Null),
            }),
            "tool_result" => items.push(Item::Tool {
                id: text_of(data, "toolCallId"),
                content: Some(Value::Array(blocks(
                    data.get("content").unwrap_or(&Value::Null),
                ))),
            }),
            "turn_stop" => {
                stop = data
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }
            _ => {}
        }
    }
    (normalize(items), stop)
}

/// The items a turn request contributes to history before the agent runs: the user
/// message, tool results, and for each denied permission a tool message of any content.
pub fn items_of_request(messages: &[Value]) -> Vec<Item> {
    let mut items = Vec::new();
    for message in messages {
        match message.get("role").and_then(Value::as_str) {
            Some("tool_permission") => {
                if message.get("granted") == Some(&Value::Bool(false)) {
                    items.push(Item::Tool {
                        id: text_of(message, "toolCallId"),
                        content: None,
                    });
                }
            }
            _ => items.extend(items_of_messages(std::slice::from_ref(message))),
        }
    }
    items
}

/// Drops empty text and thinking, joins adjacent text (and adjacent thinking) and orders
/// each run of tool messages. Empties go first, so a thinking block, an empty text and a
/// thinking block join as two adjacent thinking blocks do: normalizing twice changes
/// nothing (the fuzzer's AAP-HISTORY-004 on the correct server came from a second pass
/// joining what the first had left apart).
pub fn normalize(items: Vec<Item>) -> Vec<Item> {
    let mut joined: Vec<Item> = Vec::with_capacity(items.len());
    let kept = items
        .into_iter()
        .filter(|item| !matches!(item, Item::Text(t) | Item::Thinking(t) if t.is_empty()));
    for item in kept {
        match (joined.last_mut(), item) {
            (Some(Item::Text(before)), Item::Text(more)) => before.push_str(&more),
            (Some(Item::Thinking(before)), Item::Thinking(more)) => before.push_str(&more),
            (_, item) => joined.push(item),
        }
    }
    let mut start = 0;
    while start < joined.len() {
        let mut end = start;
        while end < joined.len() && matches!(joined[end], Item::Tool { .. }) {
            end += 1;
        }
        if end > start {
            joined[start..end].sort_by(|a, b| tool_id(a).cmp(tool_id(b)));
            start = end;
        } else {
            start += 1;
        }
    }
    joined
}

fn tool_id(item: &Item) -> &str {
    match item {
        Item::Tool { id, .. } => id,
        _ => "",
    }
}

/// The first place `actual` departs from `expected`, described, or `None` when they agree.
pub fn first_difference(expected: &[Item], actual: &[Item]) -> Option<(String, String)> {
    let normalized = normalize(expected.to_vec());
    for (index, want) in normalized.iter().enumerate() {
        match actual.get(index) {
            Some(got) if want.matches(got) => {}
            Some(got) => {
                return Some((format!("item {index}: {}", want.describe()), got.describe()))
            }
            None => {
                return Some((
                    format!("item {index}: {}", want.describe()),
                    format!("the list ends after {} items", actual.len()),
                ))
            }
        }
    }
    actual.get(normalized.len()).map(|extra| {
        (
            format!("{} items", normalized.len()),
            format!("an extra item {}: {}", normalized.len(), extra.describe()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_messages_and_none_mode_reduce_to_the_same_items() {
        let deltas = vec![
            ("turn_start".to_owned(), json!({})),
            ("text_delta".to_owned(), json!({"delta": "Hel"})),
            ("text_delta".to_owned(), json!({"delta": "lo"})),
            (
                "tool_call".to_owned(),
                json!({"toolCallId": "c", "name": "n", "input": {}}),
            ),
            (
                "tool_result".to_owned(),
                json!({"toolCallId": "c", "content": "r"}),
            ),
            ("turn_stop".to_owned(), json!({"stopReason": "end_turn"})),
        ];
        let (from_events, stop) = items_of_events(&deltas);
        let none = vec![
            json!({"role": "assistant", "content": [{"type": "text", "text": "Hello"}, {"type": "tool_use", "toolCallId": "c", "name": "n", "input": {}}]}),
            json!({"role": "tool", "toolCallId": "c", "content": "r"}),
        ];
        assert_eq!(from_events, items_of_messages(&none));
        assert_eq!(stop.as_deref(), Some("end_turn"));
    }

    /// The fuzzer's shrunk AAP-HISTORY-004 on the correct server: a none-mode answer of
    /// thinking, empty text, thinking, and a history holding the same message.
    #[test]
    fn a_history_equal_to_the_answer_differs_in_nothing() {
        let answer = vec![json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "e\nf"},
            {"type": "text", "text": ""},
            {"type": "thinking", "thinking": "quote\" "},
        ]})];
        let items = items_of_messages(&answer);
        assert_eq!(
            normalize(items.clone()),
            items,
            "normalizing twice changes nothing"
        );
        assert_eq!(first_difference(&items, &items_of_messages(&answer)), None);
    }

    #[test]
    fn a_denial_matches_any_content_and_tool_runs_are_unordered() {
        let expected = items_of_request(&[
            json!({"role": "tool_permission", "toolCallId": "b", "granted": false}),
            json!({"role": "tool", "toolCallId": "a", "content": "x"}),
        ]);
        let actual = items_of_messages(&[
            json!({"role": "tool", "toolCallId": "a", "content": "x"}),
            json!({"role": "tool", "toolCallId": "b", "content": "Tool call denied"}),
        ]);
        assert_eq!(first_difference(&expected, &actual), None);
        let missing =
            items_of_messages(&[json!({"role": "tool", "toolCallId": "a", "content": "x"})]);
        assert!(first_difference(&expected, &missing).is_some());
    }

    #[test]
    fn a_changed_text_is_a_difference() {
        let a = items_of_messages(&[json!({"role": "assistant", "content": "one"})]);
        let b = items_of_messages(&[json!({"role": "assistant", "content": "two"})]);
        assert!(first_difference(&a, &b).is_some());
    }
}
