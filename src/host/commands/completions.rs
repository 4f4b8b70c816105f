//! Session configuration (`resolveSessionConfig`, `sessionConfigCompletions`) and message
//! completions (`completions`) — issue 25, i25b. A user message's `@` word completes to the
//! chats of the message's session by title, each with a chat attachment; offsets and ranges
//! are UTF-16 code units.

use ahp_types::commands::{
    CompletionsParams, ResolveSessionConfigParams, SessionConfigCompletionsParams,
};
use serde_json::{json, Value};

use super::{parse, RpcError, INVALID_PARAMS, PROVIDER_NOT_FOUND};
use crate::host::agents::agent_for;
use crate::host::faults::Fault;
use crate::host::session_config;
use crate::host::world::World;

/// The UTF-16 offset of each char boundary of `text`, in order (the last is its length).
fn utf16_boundaries(text: &str) -> Vec<(usize, usize)> {
    let mut at16 = 0;
    let mut out = Vec::with_capacity(text.len() + 1);
    for (byte, c) in text.char_indices() {
        out.push((at16, byte));
        at16 += c.len_utf16();
    }
    out.push((at16, text.len()));
    out
}

impl World {
    pub(super) fn resolve_session_config(&self, params: &Value) -> Result<Value, RpcError> {
        let params: ResolveSessionConfigParams = parse(params)?;
        if agent_for(params.provider.as_deref()).is_none() {
            return Err(RpcError::new(PROVIDER_NOT_FOUND, "unknown provider"));
        }
        let mut given = params.config.clone();
        if let Some(sandbox) = given
            .as_mut()
            .and_then(|g| g.get_mut("sandbox"))
            .filter(|_| self.fault(Fault::ResolveNotSettled))
        {
            *sandbox = Value::Bool(sandbox != &Value::Bool(true));
        }
        let values = session_config::resolve(given.as_ref());
        Ok(json!({ "schema": session_config::schema(&values), "values": values }))
    }

    pub(super) fn session_config_completions(&self, params: &Value) -> Result<Value, RpcError> {
        let params: SessionConfigCompletionsParams = parse(params)?;
        if agent_for(params.provider.as_deref()).is_none() {
            return Err(RpcError::new(PROVIDER_NOT_FOUND, "unknown provider"));
        }
        if params.property != session_config::DYNAMIC_PROPERTY {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{} is no enumDynamic property", params.property),
            ));
        }
        let mut items = session_config::branch_values(params.query.as_deref());
        if self.fault(Fault::CompletionValuesUnaccepted) {
            for item in &mut items {
                let upper = item["value"].as_str().unwrap_or_default().to_uppercase();
                item["value"] = json!(upper);
            }
        }
        Ok(json!({ "items": items }))
    }

    /// `completions` for a user message: the `@` word before the cursor completes to the
    /// chats of the session whose title starts with it.
    pub(super) fn completions(&self, params: &Value) -> Result<Value, RpcError> {
        let chat = self.existing_chat(params)?;
        let params: CompletionsParams = parse(params)?;
        if serde_json::to_value(&params.kind).ok() != Some(json!("userMessage")) {
            return Err(RpcError::new(INVALID_PARAMS, "unknown completion kind"));
        }
        let boundaries = utf16_boundaries(&params.text);
        let length = boundaries.last().map_or(0, |(at16, _)| *at16);
        let offset = usize::try_from(params.offset)
            .ok()
            .filter(|o| *o <= length)
            .ok_or_else(|| {
                RpcError::new(
                    INVALID_PARAMS,
                    format!("offset must be 0..={length} (UTF-16 code units)"),
                )
            })?;
        // The cursor inside a surrogate pair is no character position.
        let Some(&(_, cursor)) = boundaries.iter().find(|(at16, _)| *at16 == offset) else {
            return Err(RpcError::new(INVALID_PARAMS, "offset splits a character"));
        };
        let before = &params.text[..cursor];
        let word_start = before.rfind(char::is_whitespace).map_or(0, |at| {
            at + before[at..].chars().next().map_or(1, char::len_utf8)
        });
        let Some(prefix) = before[word_start..].strip_prefix('@') else {
            return Ok(json!({ "items": [] }));
        };
        let in_bytes = self.fault(Fault::CompletionRangesInBytes);
        let range_start = if in_bytes {
            word_start
        } else {
            boundaries
                .iter()
                .find(|(_, byte)| *byte == word_start)
                .map_or(0, |(at16, _)| *at16)
        };
        let range_end = if in_bytes { cursor } else { offset };
        let session = self.chats.get(&chat).map(|entry| entry.session.clone());
        let prefix = prefix.to_lowercase();
        let items: Vec<Value> = session
            .map(|session| self.session_chats(&session))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|uri| {
                let title = self.chats.get(&uri)?.state.title.clone();
                title.to_lowercase().starts_with(&prefix).then(|| {
                    json!({
                        "insertText": format!("@{title}"),
                        "rangeStart": range_start, "rangeEnd": range_end,
                        "attachment": { "type": "chat", "label": title, "resource": uri,
                                        "displayKind": "document",
                                        "_meta": { "ahpspec/completion": "chat" } },
                    })
                })
            })
            .collect();
        Ok(json!({ "items": items }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_count_utf16_code_units() {
        let boundaries = utf16_boundaries("🙂 @C");
        assert_eq!(boundaries.last(), Some(&(5, 7)));
        assert_eq!(boundaries[1], (2, 4));
    }
}
