//! The machine-readable index ([`super::INDEX_FILE`]) and the check that the format tables
//! name only types the inventory defines.

use serde_json::{json, Map, Value};

use super::*;

/// State def per channel kind (reducer name → def), where the inventory defines it.
const STATE_KINDS: &[(&str, &str)] = &[
    ("root", "RootState"),
    ("session", "SessionState"),
    ("chat", "ChatState"),
    ("terminal", "TerminalState"),
    ("changeset", "ChangesetState"),
    ("annotations", "AnnotationsState"),
    ("resourceWatch", "ResourceWatchState"),
    ("canvas", "CanvasState"),
    ("automation", "AutomationState"),
    ("automationRun", "AutomationRunState"),
];

/// Host→client notification methods and their params def.
const HOST_NOTIFICATIONS: &[(&str, &str)] = &[
    ("action", "ActionNotificationParams"),
    ("root/sessionAdded", "SessionAddedParams"),
    ("root/sessionRemoved", "SessionRemovedParams"),
    ("root/sessionSummaryChanged", "SessionSummaryChangedParams"),
    ("root/progress", "ProgressParams"),
    ("auth/required", "AuthRequiredParams"),
    ("otlp/exportLogs", "OtlpExportLogsParams"),
    ("otlp/exportTraces", "OtlpExportTracesParams"),
    ("otlp/exportMetrics", "OtlpExportMetricsParams"),
];

/// Command params types that are client→host notifications (no response).
const CLIENT_NOTIFICATIONS: &[&str] = &["dispatchAction", "unsubscribe"];

pub(super) fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_ascii_lowercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

/// Each action type → the def validating its `StateAction` variant, with
/// `clientDispatchable` and `introducedIn` from the inventory.
fn action_index(inv: &Value, types: &Types<'_>) -> Result<Map<String, Value>> {
    let state_action = types
        .by_name
        .get("StateAction")
        .ok_or_else(|| malformed("$.taggedUnions.StateAction", "object"))?;
    let variants = get_obj(state_action.body, "variants", "$.taggedUnions.StateAction")?;
    let actions_meta = get_obj(inv, "actions", "$")?;
    let mut actions = Map::new();
    for (ty, payload) in variants {
        let def = payload.as_str().ok_or_else(|| {
            malformed(
                format!("$.taggedUnions.StateAction.variants.{ty}"),
                "string",
            )
        })?;
        let meta = actions_meta
            .get(ty)
            .ok_or_else(|| SchemaGenError::ActionMismatch(ty.clone()))?;
        let mpath = format!("$.actions.{ty}");
        let mut entry = Map::new();
        entry.insert("def".into(), json!(def));
        entry.insert(
            "file".into(),
            json!(types
                .file_of(def)
                .ok_or_else(|| SchemaGenError::UnknownType {
                    path: format!("$.taggedUnions.StateAction.variants.{ty}"),
                    name: def.to_string(),
                })?),
        );
        entry.insert(
            "clientDispatchable".into(),
            json!(get_bool(meta, "clientDispatchable", &mpath)?),
        );
        entry.insert(
            "introducedIn".into(),
            json!(get_str(meta, "introducedIn", &mpath)?),
        );
        actions.insert(ty.clone(), Value::Object(entry));
    }
    for ty in actions_meta.keys() {
        if !variants.contains_key(ty) {
            return Err(SchemaGenError::ActionMismatch(ty.clone()));
        }
    }
    Ok(actions)
}

pub(super) fn build_index(inv: &Value, types: &Types<'_>) -> Result<Value> {
    let def_ref = |name: &str| -> Value {
        match types.file_of(name) {
            Some(file) => json!({"def": name, "file": file}),
            None => Value::Null,
        }
    };
    let mut defs = Map::new();
    for (name, e) in &types.by_name {
        defs.insert(name.clone(), json!(file_name(&e.module)));
    }

    let actions = action_index(inv, types)?;

    // Commands: every `…Params` struct of the commands module.
    let mut methods = Map::new();
    let mut client_notifications = Map::new();
    for (name, e) in &types.by_name {
        if e.module != "commands" || e.kind != Kind::Struct {
            continue;
        }
        let Some(stem) = name.strip_suffix("Params") else {
            continue;
        };
        let method = lower_first(stem);
        if CLIENT_NOTIFICATIONS.contains(&method.as_str()) {
            client_notifications.insert(method, json!({"params": def_ref(name)}));
        } else {
            methods.insert(
                method,
                json!({"params": def_ref(name), "result": def_ref(&format!("{stem}Result"))}),
            );
        }
    }
    let mut notifications = Map::new();
    for (method, params) in HOST_NOTIFICATIONS {
        notifications.insert(method.to_string(), json!({"params": def_ref(params)}));
    }
    let mut states = Map::new();
    for (kind, def) in STATE_KINDS {
        if types.by_name.contains_key(*def) {
            states.insert(kind.to_string(), def_ref(def));
        }
    }
    let protocol = inv.get("protocol").cloned().unwrap_or(Value::Null);
    Ok(json!({
        "$comment": "Generated by ahpspec-schemagen from the AHP 1.0.0 type inventory; do not edit.",
        "protocol": protocol,
        "baseUri": SCHEMA_BASE_URI,
        "notes": {
            "commands": "method -> params/result defs, derived from the commands module's XParams/XResult types; result null = the inventory has no result type for it",
            "states": "channel kind (reducer name) -> state def",
            "actions": "action type -> def validating that StateAction variant, with clientDispatchable and introducedIn from the inventory",
        },
        "files": Value::Array(Vec::new()),
        "entryPoints": {
            "StateAction": def_ref("StateAction"),
            "ActionEnvelope": def_ref("ActionEnvelope"),
            "Snapshot": def_ref("Snapshot"),
            "JsonRpcMessage": def_ref("JsonRpcMessage"),
        },
        "states": states,
        "actions": actions,
        "commands": methods,
        "clientNotifications": client_notifications,
        "hostNotifications": notifications,
        "defs": defs,
    }))
}

/// Checks that every member a format table names is a member of that type with the type
/// the table expects (a renamed member must not silently lose its format).
pub(super) fn check_format_tables(types: &Types<'_>) -> Result<()> {
    let member_type = |owner: &str, member: &str| -> Option<&str> {
        let entry = types.by_name.get(owner)?;
        let fields = entry.body.get("fields")?.as_array()?;
        fields
            .iter()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(member))?
            .get("type")?
            .as_str()
    };
    for (table, expected) in [(TIMESTAMP_MEMBERS, "string"), (NOT_URI_MEMBERS, "Uri")] {
        for (owner, member) in table {
            if member_type(owner, member) != Some(expected) {
                return Err(SchemaGenError::UnknownMember {
                    owner: (*owner).to_string(),
                    member: (*member).to_string(),
                    expected,
                });
            }
        }
    }
    for (alias, _) in ALIAS_FORMATS {
        if types.by_name.get(*alias).map(|e| e.kind) != Some(Kind::Alias) {
            return Err(SchemaGenError::UnknownType {
                path: "ALIAS_FORMATS".into(),
                name: (*alias).to_string(),
            });
        }
    }
    Ok(())
}
