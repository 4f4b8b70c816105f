//! AAP messages: validating what clients send (schema.md, Message and ContentBlock) and
//! grouping what the agent produced into assistant and tool messages (the `none`-mode
//! response and the history).

use serde_json::{json, Value};

use super::script::Output;

/// Checks a seed message of `POST /sessions`: a HistoryMessage (system, user, assistant or
/// tool) with well-formed content.
pub fn check_history_message(message: &Value, at: &str) -> Result<(), String> {
    let role = role_of(message, at)?;
    match role {
        "system" => match message.get("content") {
            Some(Value::String(_)) => Ok(()),
            _ => Err(format!("{at}: a system message's content must be a string")),
        },
        "user" | "assistant" => check_content(message.get("content"), at),
        "tool" => check_tool_message(message, at),
        other => Err(format!("{at}: role {other:?} cannot be in history")),
    }
}

/// The role of a message object.
pub fn role_of<'m>(message: &'m Value, at: &str) -> Result<&'m str, String> {
    message
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{at}: a message needs a string role"))
}

/// A ToolMessage: a string `toolCallId` and content.
pub fn check_tool_message(message: &Value, at: &str) -> Result<(), String> {
    if !message.get("toolCallId").is_some_and(Value::is_string) {
        return Err(format!("{at}: a tool message needs a string toolCallId"));
    }
    check_content(message.get("content"), at)
}

/// A ToolPermissionMessage: a string `toolCallId`, a boolean `granted`, an optional string
/// `reason`.
pub fn check_permission_message(message: &Value, at: &str) -> Result<(), String> {
    if !message.get("toolCallId").is_some_and(Value::is_string) {
        return Err(format!(
            "{at}: a tool_permission message needs a string toolCallId"
        ));
    }
    if !message.get("granted").is_some_and(Value::is_boolean) {
        return Err(format!(
            "{at}: a tool_permission message needs a boolean granted"
        ));
    }
    if message
        .get("reason")
        .is_some_and(|reason| !reason.is_string())
    {
        return Err(format!("{at}: reason must be a string"));
    }
    Ok(())
}

/// Content: a string or an array of ContentBlocks.
pub fn check_content(content: Option<&Value>, at: &str) -> Result<(), String> {
    match content {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .try_for_each(|(index, block)| check_block(block, &format!("{at}.content[{index}]"))),
        _ => Err(format!(
            "{at}: content must be a string or an array of blocks"
        )),
    }
}

fn check_block(block: &Value, at: &str) -> Result<(), String> {
    let is_string = |key: &str| block.get(key).is_some_and(Value::is_string);
    let well_formed = match block.get("type").and_then(Value::as_str) {
        Some("text") => is_string("text"),
        Some("thinking") => is_string("thinking"),
        Some("tool_use") => {
            is_string("toolCallId")
                && is_string("name")
                && block.get("input").is_some_and(Value::is_object)
        }
        // The agent declares both image capabilities: https:// URLs and data: URIs.
        Some("image") => block
            .get("url")
            .and_then(Value::as_str)
            .is_some_and(|url| url.starts_with("https://") || url.starts_with("data:")),
        _ => false,
    };
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "{at}: not a well-formed text, thinking, tool_use or image block"
        ))
    }
}

/// The text of a user message: a string content, or its text blocks joined.
pub fn user_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The messages a turn's outputs make (SCRIPTED-AGENT.md, "Message grouping"): blocks
/// gather into one assistant message until a tool result closes it; an assistant message
/// of exactly one text block has string content.
pub fn group_messages(outputs: &[Output]) -> Vec<Value> {
    let mut messages = Vec::new();
    let mut blocks: Vec<Value> = Vec::new();
    for output in outputs {
        match output {
            Output::Thinking(pieces) => {
                blocks.push(json!({"type": "thinking", "thinking": pieces.concat()}));
            }
            Output::Text(pieces) => blocks.push(json!({"type": "text", "text": pieces.concat()})),
            Output::ToolCall { id, name, input } => blocks
                .push(json!({"type": "tool_use", "toolCallId": id, "name": name, "input": input})),
            Output::ToolResult { id, content } => {
                close_assistant(&mut messages, &mut blocks);
                messages.push(json!({"role": "tool", "toolCallId": id, "content": content}));
            }
        }
    }
    close_assistant(&mut messages, &mut blocks);
    messages
}

fn close_assistant(messages: &mut Vec<Value>, blocks: &mut Vec<Value>) {
    let content = match blocks.as_slice() {
        [] => return,
        [only] if only["type"] == "text" => only["text"].clone(),
        _ => Value::Array(std::mem::take(blocks)),
    };
    blocks.clear();
    messages.push(json!({"role": "assistant", "content": content}));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_blocks_until_a_tool_result() {
        let outputs = [
            Output::Thinking(vec!["t".into()]),
            Output::ToolCall {
                id: "c".into(),
                name: "lookup".into(),
                input: json!({}),
            },
            Output::ToolResult {
                id: "c".into(),
                content: "r".into(),
            },
            Output::Text(vec!["a ".into(), "b".into()]),
        ];
        let messages = group_messages(&outputs);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["content"][1]["type"], "tool_use");
        assert_eq!(
            messages[1],
            json!({"role": "tool", "toolCallId": "c", "content": "r"})
        );
        assert_eq!(messages[2], json!({"role": "assistant", "content": "a b"}));
        assert!(group_messages(&[]).is_empty());
    }

    #[test]
    fn validates_content_blocks() {
        let ok = json!({"role": "user", "content": [{"type": "image", "url": "data:image/png;base64,AA"}]});
        assert!(check_history_message(&ok, "m").is_ok());
        let bad = json!({"role": "user", "content": [{"type": "image", "url": "ftp://x"}]});
        assert!(check_history_message(&bad, "m").is_err());
        assert!(check_history_message(&json!({"role": "tool_permission"}), "m").is_err());
    }
}
