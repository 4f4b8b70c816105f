//! Comparing a folded mirror with a fresh snapshot (INV-FOLD-1) and a session's chat catalog
//! with its chats (CHAT-003), with the exclusions PROTOCOL §16 requires.

use serde_json::{Map, Value};

use super::{Rule, Violation};

/// Members no action of the channel can change: they may legitimately differ between a
/// fold and a fresh snapshot (PROTOCOL §12.3, §16.16).
const CHAT_OUT_OF_BAND: &[&str] = &["title", "changes", "interactivity", "origin", "_meta"];
const SESSION_OUT_OF_BAND: &[&str] = &["provider", "origin", "project", "annotations", "_meta"];
const TIMESTAMP_KEYS: &[&str] = &["modifiedAt", "startedAt", "createdAt"];

/// Which kind of channel a state belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Root,
    Session,
    Chat,
    /// An `ahp-changeset:` channel (issue 29).
    Changeset,
    /// A session's annotations channel (`SessionSummary.annotations.resource`, issue 29).
    Annotations,
    /// An `ahp-canvas:` channel (issue 29, i29d).
    Canvas,
    /// The `ahp-automations://` catalogue and an `ahp-automation-run:` channel (issue 29).
    Automations,
    AutomationRun,
}

impl Kind {
    pub fn of(uri: &str) -> Option<Kind> {
        if uri == "ahp-root://" {
            Some(Kind::Root)
        } else if uri.starts_with("ahp-changeset:") {
            Some(Kind::Changeset)
        } else if uri.starts_with("ahp-canvas:") {
            Some(Kind::Canvas)
        } else if uri == "ahp-automations://" {
            Some(Kind::Automations)
        } else if uri.starts_with("ahp-automation-run:") {
            Some(Kind::AutomationRun)
        } else if uri.starts_with("ahp-session:") && uri.ends_with("/annotations") {
            Some(Kind::Annotations)
        } else if uri.starts_with("ahp-session:") {
            Some(Kind::Session)
        } else if uri.starts_with("ahp-chat:") {
            Some(Kind::Chat)
        } else {
            None
        }
    }

    /// The kind of a channel from its URI, or, for a URI in a scheme the host chose itself
    /// (`pi:/x` for a session the client named `ahp-session:/x`: SUB-001/ROOT-005/ENV-004's
    /// matter, judged there), from the shape of its state, so that the state is still
    /// mirrored and judged.
    pub fn infer(uri: &str, state: &Value) -> Option<Kind> {
        Kind::of(uri).or_else(|| Kind::of_shape(|member| state.get(member).is_some()))
    }

    /// The kind a state has by its required members: a root state lists `agents`, a session
    /// state has a `lifecycle` and `chats`, a chat state `turns`.
    pub fn of_shape(has: impl Fn(&str) -> bool) -> Option<Kind> {
        if has("agents") {
            Some(Kind::Root)
        } else if has("lifecycle") && has("chats") {
            Some(Kind::Session)
        } else if has("turns") {
            Some(Kind::Chat)
        } else if has("files") && has("status") {
            Some(Kind::Changeset)
        } else if has("annotations") {
            Some(Kind::Annotations)
        } else if has("instanceId") && has("extensionId") && has("canvasId") {
            Some(Kind::Canvas)
        } else if has("entries") {
            Some(Kind::Automations)
        } else if has("lifecycle") && has("sessions") && has("automation") {
            Some(Kind::AutomationRun)
        } else {
            None
        }
    }
}

/// Drops null members and turns timestamps into comparable instants.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    let v = if TIMESTAMP_KEYS.contains(&k.as_str()) {
                        instant(v)
                    } else {
                        normalize(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// A timestamp as a comparable instant (`@nanoseconds`); other values unchanged.
pub fn instant(value: &Value) -> Value {
    value
        .as_str()
        .and_then(|text| text.parse::<jiff::Timestamp>().ok())
        .map_or_else(
            || value.clone(),
            |ts| Value::String(format!("@{}", ts.as_nanosecond())),
        )
}

/// `state` as folds and snapshots are compared: nulls dropped, timestamps as instants, the
/// members no action folds in left out.
pub fn comparable(kind: Kind, state: &Value) -> Value {
    let mut state = normalize(state);
    if let Some(object) = state.as_object_mut() {
        let drop: &[&str] = match kind {
            Kind::Chat => CHAT_OUT_OF_BAND,
            Kind::Session => SESSION_OUT_OF_BAND,
            Kind::Root => &["_meta"],
            Kind::Changeset
            | Kind::Annotations
            | Kind::Canvas
            | Kind::Automations
            | Kind::AutomationRun => &[],
        };
        for key in drop {
            object.remove(*key);
        }
        if kind == Kind::Session {
            // Session activity bits follow only inputNeeded actions (§16.4); keep the flags.
            if let Some(status) = object.get("status").and_then(Value::as_u64) {
                object.insert("status".into(), Value::from(status & !31));
            }
            if let Some(schema) = object.get_mut("config").and_then(Value::as_object_mut) {
                schema.remove("schema");
            }
            for chat in object
                .get_mut("chats")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(chat) = chat.as_object_mut() {
                    chat.remove("movable");
                    chat.remove("interactivity");
                }
            }
        }
    }
    state
}

/// INV-FOLD-1: the fold equals the fresh snapshot on the fields the version defines (a
/// chat difference one rule owns alone is that rule's: [`super::fold_owner`]).
pub fn fold_matches(channel: &str, kind: Kind, folded: &Value, fresh: &Value) -> Option<Violation> {
    // What is equal as it is stays equal once both are made comparable (the same function
    // of each): the copies are made only when the two differ somewhere.
    if folded == fresh {
        return None;
    }
    let (folded, fresh) = (comparable(kind, folded), comparable(kind, fresh));
    let difference = first_difference(&folded, &fresh, String::new())?;
    if kind == Kind::Chat {
        if let Some(violation) = super::fold_owner::owner(channel, &folded, &fresh) {
            return Some(violation);
        }
    }
    Some(Violation::new(
        Rule::InvFold1,
        format!("fold of {channel} == fresh snapshot"),
        difference,
    ))
}

/// JSON pointer of the first difference, with both values.
pub fn first_difference(left: &Value, right: &Value, at: String) -> Option<String> {
    // Nearly every checkpoint finds the two equal: one comparison instead of a path string
    // per member (equal values have no difference to point at).
    if left == right {
        return None;
    }
    match (left, right) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|key| {
                let path = format!("{at}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => first_difference(x, y, path),
                    (Some(x), None) => Some(format!(
                        "{path}: fold has {}, snapshot has nothing",
                        short(x)
                    )),
                    (None, Some(y)) => Some(format!(
                        "{path}: fold has nothing, snapshot has {}",
                        short(y)
                    )),
                    (None, None) => None,
                }
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, format!("{at}/{i}"))),
        _ => Some(format!(
            "{}: fold has {}, snapshot has {}",
            if at.is_empty() { "/" } else { &at },
            short(left),
            short(right)
        )),
    }
}

fn short(value: &Value) -> String {
    super::frame::clip(&value.to_string())
}

/// CHAT-003: each chat's inlined summary fields equal its catalog entry in the session.
pub fn catalog_matches(session: &Value, chat_states: &[(String, Value)]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (uri, chat) in chat_states {
        let Some(entry) = session["chats"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["resource"] == uri.as_str())
        else {
            continue;
        };
        let pick = |state: &Value| -> Value {
            let mut out = Map::new();
            for key in [
                "title",
                "status",
                "activity",
                "modifiedAt",
                "changes",
                "origin",
                "workingDirectories",
            ] {
                if let Some(v) = state.get(key).filter(|v| !v.is_null()) {
                    out.insert(key.into(), v.clone());
                }
            }
            out.insert(
                "movable".into(),
                state
                    .get("movable")
                    .filter(|v| !v.is_null())
                    .cloned()
                    .unwrap_or(Value::Bool(false)),
            );
            out.insert(
                "interactivity".into(),
                state
                    .get("interactivity")
                    .filter(|v| !v.is_null())
                    .cloned()
                    .unwrap_or(Value::String("full".into())),
            );
            normalize(&Value::Object(out))
        };
        // Members the chat itself lacks are a schema matter (INV-SCHEMA-1), not drift.
        let mut entry_fields = pick(entry);
        let chat_fields = pick(chat);
        if let (Some(fields), Some(present)) =
            (entry_fields.as_object_mut(), chat_fields.as_object())
        {
            fields.retain(|key, _| present.contains_key(key));
        }
        if let Some(difference) = first_difference(&entry_fields, &chat_fields, String::new()) {
            found.push(Violation::new(
                Rule::Chat003,
                format!("catalog entry of {uri} == the chat's inlined summary"),
                difference
                    .replace("fold", "catalog")
                    .replace("snapshot", "chat"),
            ));
        }
    }
    found
}

/// Session metadata a `listSessions` entry repeats (INV-SUMMARY-3); the status flags
/// (32, 64) are compared apart, activity bits and `activity` not at all.
const SUMMARY_METADATA: &[&str] = &[
    "provider",
    "title",
    "project",
    "workingDirectories",
    "annotations",
    "origin",
];
/// Status flags a session summary repeats (RULES.md INV-SUMMARY-3: 32 and 64).
const STATUS_FLAGS: u64 = 32 | 64;

/// INV-SUMMARY-3: a session's `listSessions` entry carries its metadata; INV-SUMMARY-2:
/// the entry's `chats`, when present, list the session's chats in the same order with the
/// same title, origin and interactivity (status and changes where the entry has them).
/// `tally` hears what was compared.
pub fn summary_matches(
    session: &str,
    entry: &Value,
    state: &Value,
    tally: &mut dyn FnMut(Rule, usize),
) -> Vec<Violation> {
    let mut found = Vec::new();
    tally(Rule::InvSummary3, 1);
    let mut differences: Vec<String> = SUMMARY_METADATA
        .iter()
        .filter_map(|key| {
            let listed = normalize(&entry[*key]);
            let own = normalize(&state[*key]);
            (listed != own).then(|| {
                format!(
                    "{key}: listSessions has {}, the session {}",
                    short(&listed),
                    short(&own)
                )
            })
        })
        .collect();
    let flags = |value: &Value| value["status"].as_u64().map(|s| s & STATUS_FLAGS);
    if flags(entry) != flags(state) {
        differences.push(format!(
            "status flags: listSessions has {:?}, the session {:?}",
            flags(entry),
            flags(state)
        ));
    }
    if let Some(first) = differences.first() {
        found.push(Violation::new(
            Rule::InvSummary3,
            format!("the listSessions entry of {session} carries its metadata"),
            first.clone(),
        ));
    }
    let Some(listed) = entry["chats"].as_array() else {
        return found;
    };
    tally(Rule::InvSummary2, 1);
    let own = state["chats"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let order = |chats: &[Value]| -> Vec<Value> {
        chats.iter().map(|chat| chat["resource"].clone()).collect()
    };
    if order(listed) != order(own) {
        found.push(Violation::new(
            Rule::InvSummary2,
            format!("the listSessions entry of {session} lists the session's chats in order"),
            format!(
                "listSessions lists {}, the session {}",
                short(&Value::Array(order(listed))),
                short(&Value::Array(order(own)))
            ),
        ));
        return found;
    }
    for (listed, own) in listed.iter().zip(own) {
        let optional = ["status", "changes"]
            .into_iter()
            .filter(|key| !listed[*key].is_null());
        let difference = ["title", "origin", "interactivity"]
            .into_iter()
            .chain(optional)
            .find_map(|key| {
                let (a, b) = (chat_member(listed, key), chat_member(own, key));
                (a != b).then(|| {
                    format!(
                        "chat {} {key}: listSessions has {}, the session {}",
                        own["resource"],
                        short(&a),
                        short(&b)
                    )
                })
            });
        if let Some(difference) = difference {
            found.push(Violation::new(
                Rule::InvSummary2,
                format!("the listSessions entry of {session} repeats its chats' summaries"),
                difference,
            ));
            break;
        }
    }
    found
}

/// A chat summary member for comparison: nulls dropped, an absent interactivity `full`.
fn chat_member(chat: &Value, key: &str) -> Value {
    match normalize(&chat[key]) {
        Value::Null if key == "interactivity" => Value::String("full".into()),
        value => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(folded: &Value, fresh: &Value) -> Option<Rule> {
        fold_matches("ahp-chat:/c", Kind::Chat, folded, fresh).map(|v| v.rule)
    }

    #[test]
    fn a_difference_a_rule_owns_alone_is_that_rules_and_any_other_inv_fold_1s() {
        let folded = json!({ "resource": "ahp-chat:/c", "status": 2, "turns": [] });
        let cleared = json!({ "resource": "ahp-chat:/c", "status": 1, "turns": [] });
        assert_eq!(rule(&folded, &cleared), Some(Rule::Status004));
        // Another member differs too: the fold comparison's.
        let more = json!({ "resource": "ahp-chat:/c", "status": 1, "turns": [{ "id": "t" }] });
        assert_eq!(rule(&folded, &more), Some(Rule::InvFold1));
        // The fold had no Error bit, or the snapshot kept it: not STATUS-004's.
        let idle = json!({ "resource": "ahp-chat:/c", "status": 1, "turns": [] });
        let busy = json!({ "resource": "ahp-chat:/c", "status": 8, "turns": [] });
        assert_eq!(rule(&idle, &busy), Some(Rule::InvFold1));
        let error_read = json!({ "resource": "ahp-chat:/c", "status": 34, "turns": [] });
        assert_eq!(rule(&folded, &error_read), Some(Rule::InvFold1));
        assert_eq!(rule(&folded, &folded.clone()), None);
    }
}
