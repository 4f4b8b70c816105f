//! Case variables and `${…}` substitution in suite values.
//!
//! `${name}` is replaced by the variable's value (a whole-string reference keeps the value's
//! JSON type); `${name/json/pointer}` reads inside it. Built-ins: `${run}` (unique per case
//! run), `${now}` (RFC 3339 timestamp), `${provider}` (the target profile's provider, when it
//! names one). `$${` writes a literal `${`. A whole-string reference
//! ending in `?` (`${sub/result/cursor?}`) is optional: when what it names is absent or
//! null, the object member holding it is left out (elsewhere it becomes `null`). Object keys
//! are substituted too (answers keyed by an id the server chose).

use std::collections::HashMap;

use serde_json::Value;

/// The current time as the RFC 3339 timestamps clients send (`startedAt`), in ms.
pub fn now_iso() -> String {
    format!("{:.3}", jiff::Timestamp::now())
}

#[derive(Debug, Clone)]
pub struct Vars {
    values: HashMap<String, Value>,
}

/// A reference that cannot be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownVar {
    /// No variable of that name: the suite is wrong (a harness error).
    #[error("unknown variable ${{{0}}}")]
    Name(String),
    /// The variable holds what the server sent, and that lacks the member the reference
    /// reads: the case cannot go on with what the server gave (not testable, unless a step
    /// asserted the member first).
    #[error("the server's {name} has no {pointer}, which the case reads (${{{name}{pointer}}})")]
    Member { name: String, pointer: String },
}

impl Vars {
    pub fn new(token: &str) -> Vars {
        let mut values = HashMap::new();
        values.insert("run".to_owned(), Value::String(token.to_owned()));
        Vars { values }
    }

    /// Variables of a case run: `${run}` plus `${behaviour.NAME}` for every behaviour of the
    /// target profile.
    pub fn with_profile(token: &str, profile: &crate::client::Profile) -> Vars {
        let mut vars = Vars::new(token);
        for (name, behaviour) in &profile.behaviours {
            vars.set(
                &format!("behaviour.{name}"),
                Value::String(behaviour.message().to_owned()),
            );
        }
        if let Some(provider) = &profile.provider {
            vars.set("provider", Value::String(provider.clone()));
        }
        for (at, directory) in profile.working_directories.iter().enumerate() {
            vars.set(&format!("directory.{at}"), Value::String(directory.clone()));
        }
        if let Some(config) = &profile.session_config {
            vars.set(
                "config.property",
                Value::String(config.dynamic_property.clone()),
            );
            vars.set("config.query", Value::String(config.query.clone()));
        }
        if let Some(completions) = &profile.completions {
            let length = completions.text.encode_utf16().count();
            vars.set("completions.text", Value::String(completions.text.clone()));
            vars.set("completions.length", Value::from(length));
        }
        if let Some(root) = &profile.root_config {
            vars.set("root_config.property", Value::String(root.property.clone()));
            vars.set("root_config.value", root.value.clone());
        }
        if let Some(auth) = &profile.auth {
            vars.set("auth.provider", Value::String(auth.provider.clone()));
            vars.set("auth.resource", Value::String(auth.resource.clone()));
            vars.set("auth.token", Value::String(auth.token.clone()));
        }
        if let Some(trigger) = &profile.event_trigger {
            vars.set("event_trigger.type", Value::String(trigger.kind.clone()));
            vars.set("event_trigger.event", Value::String(trigger.event.clone()));
        }
        if let Some(workspace) = &profile.workspace {
            let workspace = workspace.trim_end_matches('/');
            vars.set("workspace", Value::String(workspace.to_owned()));
        }
        vars
    }

    pub fn set(&mut self, name: &str, value: Value) {
        self.values.insert(name.to_owned(), value);
    }

    fn resolve(&self, reference: &str) -> Result<Value, UnknownVar> {
        if reference == "null" {
            return Ok(Value::Null);
        }
        if reference == "pad1m" {
            return Ok(Value::String("x".repeat(1 << 20)));
        }
        if reference == "now" {
            return Ok(Value::String(now_iso()));
        }
        let (name, pointer) = match reference.find('/') {
            Some(at) => (&reference[..at], &reference[at..]),
            None => (reference, ""),
        };
        let value = self
            .values
            .get(name)
            .ok_or_else(|| UnknownVar::Name(reference.to_owned()))?;
        if pointer.is_empty() {
            Ok(value.clone())
        } else {
            value
                .pointer(pointer)
                .cloned()
                .ok_or_else(|| UnknownVar::Member {
                    name: name.to_owned(),
                    pointer: pointer.to_owned(),
                })
        }
    }

    /// Substitutes every reference in `value` (recursively).
    pub fn substitute(&self, value: &Value) -> Result<Value, UnknownVar> {
        Ok(match value {
            Value::String(text) => self.substitute_str(text)?,
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.substitute(v))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                for (key, member) in map {
                    let key = match self.substitute_str(key)? {
                        Value::String(text) => text,
                        other => other.to_string(),
                    };
                    match self.optional(member) {
                        Some(None) => {}
                        Some(Some(value)) => {
                            out.insert(key, value);
                        }
                        None => {
                            out.insert(key, self.substitute(member)?);
                        }
                    }
                }
                Value::Object(out)
            }
            other => other.clone(),
        })
    }

    /// `Some(value or None when absent)` for an optional whole-string reference (`${…?}`);
    /// `None` when `value` is not one.
    fn optional(&self, value: &Value) -> Option<Option<Value>> {
        let inner = value
            .as_str()?
            .strip_prefix("${")?
            .strip_suffix("?}")
            .filter(|inner| !inner.contains('}') && !inner.contains("${"))?;
        Some(self.resolve(inner).ok().filter(|v| !v.is_null()))
    }

    /// `text` with every reference nested in another one's path (`${a/x/${b}}`) replaced by
    /// its text first, so that the outer one reads the key the inner one names.
    fn expand_nested(&self, text: &str) -> Result<String, UnknownVar> {
        let mut text = text.to_owned();
        'expand: loop {
            let mut from = 0;
            while let Some(open) = text[from..].find("${").map(|at| from + at) {
                let body = open + 2;
                let Some(close) = text[body..].find('}').map(|at| body + at) else {
                    return Ok(text);
                };
                // The innermost reference before the first close is a whole one.
                if let Some(inner) = text[body..close].rfind("${").map(|at| body + at) {
                    let value = match self.resolve(&text[inner + 2..close])? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    text.replace_range(inner..=close, &value);
                    continue 'expand;
                }
                from = body;
            }
            return Ok(text);
        }
    }

    fn substitute_str(&self, text: &str) -> Result<Value, UnknownVar> {
        let expanded;
        let text = if text.contains("${") && text.matches("${").count() > 1 {
            expanded = self.expand_nested(text)?;
            expanded.as_str()
        } else {
            text
        };
        if let Some(resolved) = self.optional(&Value::String(text.to_owned())) {
            return Ok(resolved.unwrap_or(Value::Null));
        }
        if let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
            if !inner.contains('}') && !inner.contains("${") {
                return self.resolve(inner);
            }
        }
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            if rest[..start].ends_with('$') {
                out.push_str(&rest[..start - 1]);
                out.push_str("${");
                rest = &rest[start + 2..];
                continue;
            }
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| UnknownVar::Name(after.to_owned()))?;
            match self.resolve(&after[..end])? {
                Value::String(s) => out.push_str(&s),
                other => out.push_str(&other.to_string()),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(Value::String(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reference_nested_in_a_path_is_read_first() {
        let mut vars = Vars::new("r");
        vars.set("key", json!("b"));
        vars.set("doc", json!({ "a": { "b": 7 } }));
        assert_eq!(
            vars.substitute(&json!("${doc/a/${key}}")).ok(),
            Some(json!(7))
        );
        assert_eq!(
            vars.substitute(&json!("x ${key} ${doc/a/${key}}")).ok(),
            Some(json!("x b 7"))
        );
    }

    #[test]
    fn substitutes_whole_values_pointers_and_inline_text() {
        let mut vars = Vars::new("r1");
        vars.set("S", json!("ahp-session:/x"));
        vars.set("init", json!({ "result": { "serverSeq": 7 } }));
        assert_eq!(
            vars.substitute(&json!("${init/result/serverSeq}")).ok(),
            Some(json!(7))
        );
        assert_eq!(
            vars.substitute(&json!("chan ${S} in ${run}")).ok(),
            Some(json!("chan ahp-session:/x in r1"))
        );
        assert_eq!(
            vars.substitute(&json!({ "a": ["${S}"] })).ok(),
            Some(json!({ "a": ["ahp-session:/x"] }))
        );
        assert_eq!(vars.substitute(&json!("$${S}")).ok(), Some(json!("${S}")));
        assert!(vars.substitute(&json!("${nope}")).is_err());
    }

    #[test]
    fn optional_references_leave_absent_members_out_and_keys_are_substituted() {
        let mut vars = Vars::new("r1");
        vars.set("sub", json!({ "cursor": "c-7", "empty": null }));
        vars.set("q", json!("q-9"));
        assert_eq!(
            vars.substitute(&json!({ "channel": "x", "cursor": "${sub/cursor?}" }))
                .ok(),
            Some(json!({ "channel": "x", "cursor": "c-7" }))
        );
        assert_eq!(
            vars.substitute(
                &json!({ "channel": "x", "cursor": "${sub/nothing?}", "e": "${sub/empty?}" })
            )
            .ok(),
            Some(json!({ "channel": "x" }))
        );
        assert_eq!(
            vars.substitute(&json!(["${sub/nothing?}"])).ok(),
            Some(json!([null]))
        );
        assert_eq!(
            vars.substitute(&json!({ "${q}": { "state": "draft" } }))
                .ok(),
            Some(json!({ "q-9": { "state": "draft" } }))
        );
        // Only the pointer may be absent: an unknown variable stays an error elsewhere.
        assert!(vars.substitute(&json!("${nope}")).is_err());
    }
}
