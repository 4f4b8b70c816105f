//! `${name}` references in AAP suite strings and JSON values.

use std::collections::HashMap;

use serde_json::Value;

/// Replaces every `${name}` in `text`; an unknown name is an error naming it.
pub fn substitute(text: &str, vars: &HashMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
        let name = &after[..end];
        let value = vars
            .get(name)
            .ok_or_else(|| format!("unknown variable ${{{name}}}"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// [`substitute`] in every string (keys included) of a JSON value.
pub fn substitute_value(value: &Value, vars: &HashMap<String, String>) -> Result<Value, String> {
    Ok(match value {
        Value::String(text) => Value::String(substitute(text, vars)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| substitute_value(v, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, v) in map {
                out.insert(substitute(key, vars)?, substitute_value(v, vars)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_replaced_and_unknown_ones_named() {
        let vars = HashMap::from([("s".to_owned(), "sess_1".to_owned())]);
        assert_eq!(
            substitute("/sessions/${s}/turns", &vars).unwrap(),
            "/sessions/sess_1/turns"
        );
        assert!(substitute("${nope}", &vars).unwrap_err().contains("nope"));
        let value = serde_json::json!({"${s}": ["${s}", 1]});
        assert_eq!(
            substitute_value(&value, &vars).unwrap(),
            serde_json::json!({"sess_1": ["sess_1", 1]})
        );
    }
}
