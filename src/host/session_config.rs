//! The scripted agent's session configuration (issue 25): its schema, how a client's values
//! resolve against it (`resolveSessionConfig`, and `createSession.config`), and the values
//! of its dynamic property (`sessionConfigCompletions`). Pure data and functions: the
//! commands that answer with them live with the other commands.
//!
//! Properties: `mode` (`ask` / `auto`, the only one a client may change during the
//! session), `sandbox` (a boolean, read-only and forced on in `auto` mode: the schema
//! depends on the values, which is why clients resolve iteratively) and `branch`
//! (`enumDynamic`: the branches the agent knows, offered by query).

use serde_json::{json, Map, Value};

/// The branches the agent offers for `branch` (the first is its default).
pub const BRANCHES: &[&str] = &[
    "main",
    "develop",
    "release/1.0",
    "feature/terminals",
    "feature/session-config",
    "fix/utf16-offsets",
];

/// The property whose values come from `sessionConfigCompletions`.
pub const DYNAMIC_PROPERTY: &str = "branch";

/// The schema for the values `values` (already resolved).
pub fn schema(values: &Map<String, Value>) -> Value {
    let auto = values.get("mode").and_then(Value::as_str) == Some("auto");
    json!({
        "type": "object",
        "properties": {
            "mode": { "type": "string", "title": "Mode", "enum": ["ask", "auto"],
                      "enumLabels": ["Ask before acting", "Act on its own"],
                      "default": "ask", "sessionMutable": true },
            "sandbox": { "type": "boolean", "title": "Sandbox", "default": true,
                         "readOnly": auto },
            DYNAMIC_PROPERTY: { "type": "string", "title": "Branch", "enum": [BRANCHES[0]],
                                "default": BRANCHES[0], "enumDynamic": true },
        },
    })
}

/// The resolved values for what a client filled in: every property gets a value (its
/// default where the client gave none, or one the property does not allow); properties the
/// schema does not have are dropped.
pub fn resolve(config: Option<&Map<String, Value>>) -> Map<String, Value> {
    let given = |key: &str| config.and_then(|c| c.get(key));
    let mode = given("mode")
        .and_then(Value::as_str)
        .filter(|mode| matches!(*mode, "ask" | "auto"))
        .unwrap_or("ask");
    let sandbox = mode == "auto" || given("sandbox").and_then(Value::as_bool).unwrap_or(true);
    let branch = given(DYNAMIC_PROPERTY)
        .and_then(Value::as_str)
        .filter(|b| BRANCHES.contains(b))
        .unwrap_or(BRANCHES[0]);
    let mut values = Map::new();
    values.insert("mode".into(), json!(mode));
    values.insert("sandbox".into(), json!(sandbox));
    values.insert(DYNAMIC_PROPERTY.into(), json!(branch));
    values
}

/// The values of `branch` matching `query` (case-insensitive substring; all of them for an
/// empty or absent query).
pub fn branch_values(query: Option<&str>) -> Vec<Value> {
    let query = query.unwrap_or_default().to_lowercase();
    BRANCHES
        .iter()
        .filter(|branch| branch.to_lowercase().contains(&query))
        .map(|branch| json!({ "value": branch, "label": branch, "description": "a branch the agent knows" }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolved_values_resolve_to_themselves_and_auto_forces_the_sandbox() {
        let defaults = resolve(None);
        assert_eq!(defaults["branch"], "main");
        assert_eq!(resolve(Some(&defaults)), defaults);
        let mut asked = Map::new();
        asked.insert("mode".into(), json!("auto"));
        asked.insert("sandbox".into(), json!(false));
        asked.insert("unknown".into(), json!(1));
        let auto = resolve(Some(&asked));
        assert_eq!(auto["sandbox"], true);
        assert!(!auto.contains_key("unknown"));
        assert_eq!(schema(&auto)["properties"]["sandbox"]["readOnly"], true);
        assert_eq!(branch_values(Some("FEAT")).len(), 2);
    }
}
