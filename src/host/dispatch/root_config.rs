//! The root channel's one client action, `root/configChanged` (ROOT-012; issue 25, i25b):
//! accepted when every value it sets is one the root configuration's schema allows.

use serde_json::{json, Value};

use super::Rejection;
use crate::host::faults::Fault;
use crate::host::world::{to_value, World, ROOT};

/// Whether `value` is one `property` (a property schema, as JSON) allows: its type, and
/// one of its `enum` values when it lists them.
fn allowed(property: &Value, value: &Value) -> bool {
    let typed = match property["type"].as_str() {
        Some("string") => value.is_string(),
        Some("boolean") => value.is_boolean(),
        Some("number") => value.is_number(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("array") => value.is_array(),
        Some("object") => value.is_object(),
        _ => false,
    };
    typed
        && property["enum"]
            .as_array()
            .is_none_or(|choices| choices.contains(value))
}

impl World {
    /// ROOT-012's validation: the host has a configuration, and every value set is allowed
    /// by its schema (a replacement may leave properties unset: they take their defaults).
    pub(super) fn check_root_config(&self, action: &Value) -> Result<(), Rejection> {
        let Some(config) = self.root.config.as_ref() else {
            return Err("this host has no root configuration".into());
        };
        let schema = to_value(&config.schema);
        for (key, value) in action["config"].as_object().into_iter().flatten() {
            match schema["properties"].get(key) {
                Some(property) if allowed(property, value) => {}
                Some(_) => return Err(format!("{value} is no value of {key}")),
                None => return Err(format!("{key} is no property of the root configuration")),
            }
        }
        Ok(())
    }

    /// Fault injection: the merge a client asked for is followed by the host's own
    /// replacement with only the values it set (the other values are lost).
    pub(super) fn break_root_config_merge(&mut self, action: &Value) {
        let merge = action["type"] == "root/configChanged" && action["replace"] != true;
        if merge && self.fault(Fault::ConfigMergeReplaces) {
            let replacement = json!({ "type": "root/configChanged", "config": action["config"],
                                      "replace": true });
            self.emit_logged(ROOT, replacement);
        }
    }

    /// Fault injection (issue 25, i25c: ROOT-012's replace form): a replacement a client
    /// asked for is followed by the host's own merge of the values it dropped, as a host
    /// that merges every root/configChanged would leave them.
    pub(super) fn break_root_config_replace(&mut self, action: &Value, before: Option<&Value>) {
        let replace = action["type"] == "root/configChanged" && action["replace"] == true;
        if !replace || !self.fault(Fault::ConfigReplaceMerges) {
            return;
        }
        let Some(before) = before.and_then(Value::as_object) else {
            return;
        };
        let dropped: serde_json::Map<String, Value> = before
            .iter()
            .filter(|(key, _)| action["config"].get(key.as_str()).is_none())
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if !dropped.is_empty() {
            self.emit_logged(
                ROOT,
                json!({ "type": "root/configChanged", "config": dropped }),
            );
        }
    }
}
