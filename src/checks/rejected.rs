//! A rejected dispatch changes nothing (DISPATCH-003): a pure judgement over the
//! dispatching client's fold, which leaves the rejected action out, and a fresh snapshot
//! taken after it, with the client read up to then. The host applied (some of) what it
//! rejected when the two differ only in members the action sets.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::compare::{comparable, first_difference, Kind};
use super::mirror::Mirror;
use super::{Rule, Violation};
use crate::tape::Tape;

/// The DISPATCH-003 violation when a fresh snapshot of `channel` differs from `folded` (the
/// client's state, without the rejected `action`) and only in top-level members that
/// folding `action` in would change. A difference elsewhere (the host moved on, or broke
/// another rule) makes no claim of this rule: INV-FOLD-1 sees it at the next checkpoint.
pub fn applied_anyway(
    channel: &str,
    folded: &Value,
    fresh: &Value,
    action: &Value,
) -> Option<Violation> {
    let kind = Kind::infer(channel, fresh)?;
    let before = comparable(kind, folded);
    let now = comparable(kind, fresh);
    let changed = differing(&before, &now);
    if changed.is_empty() {
        return None;
    }
    let applied = comparable(kind, &apply(channel, folded, action)?);
    let sets = differing(&before, &applied);
    // And they show what the action carried, not some other value.
    let shown_there: String = changed.iter().map(|key| now[*key].to_string()).collect();
    let carried = carried(action);
    if !changed.is_subset(&sets) || !carried.iter().any(|v| shown_there.contains(v.as_str())) {
        return None;
    }
    let kind_name = action["type"].as_str().unwrap_or("the action");
    let shown = first_difference(&before, &now, String::new()).unwrap_or_default();
    Some(Violation::new(
        Rule::Dispatch003,
        format!("the rejected {kind_name} changes nothing in {channel}"),
        format!("a fresh snapshot differs from the fold only where the action sets: {shown}"),
    ))
}

/// The scalar values an action carries (its `type` aside), as JSON text.
fn carried(action: &Value) -> Vec<String> {
    fn walk(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::String(_) | Value::Number(_) => out.push(value.to_string()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(map) = action.as_object() {
        map.iter()
            .filter(|(key, _)| *key != "type")
            .for_each(|(_, v)| walk(v, &mut out));
    }
    out
}

/// The top-level members in which two states differ.
fn differing<'a>(a: &'a Value, b: &'a Value) -> BTreeSet<&'a str> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return BTreeSet::new();
    };
    a.keys()
        .chain(b.keys())
        .filter(|key| a.get(*key) != b.get(*key))
        .map(String::as_str)
        .collect()
}

/// `state` with `action` folded in by the reference reducers, as an accepted envelope.
fn apply(channel: &str, state: &Value, action: &Value) -> Option<Value> {
    let mut mirror = Mirror::default();
    let snapshot = json!({ "resource": channel, "state": state, "fromSeq": 0 }).to_string();
    let mut tape = Tape::default();
    mirror.load_snapshot(tape.parse(&snapshot).ok()?);
    let envelope = json!({
        "channel": channel,
        "serverSeq": 1,
        "action": action,
        "origin": { "clientId": "ahpspec-rejected", "clientSeq": 1 },
    })
    .to_string();
    let mut tape = Tape::default();
    mirror.apply(tape.parse(&envelope).ok()?);
    mirror.state(channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = "ahp-chat:/c";

    fn chat(directory: Option<&str>, status: u64) -> Value {
        let mut state = json!({
            "resource": CHAT,
            "title": "Chat",
            "status": status,
            "modifiedAt": "2026-01-01T00:00:00.000Z",
            "turns": [],
        });
        if let Some(directory) = directory {
            state["workingDirectories"] = json!([directory]);
        }
        state
    }

    #[test]
    fn the_rejected_actions_effect_in_a_fresh_snapshot_is_dispatch_003() {
        let action = json!({ "type": "chat/workingDirectorySet", "directory": "file:///outside" });
        let folded = chat(None, 1);
        let applied = chat(Some("file:///outside"), 1);
        let found = applied_anyway(CHAT, &folded, &applied, &action).expect("a violation");
        assert_eq!(found.rule, Rule::Dispatch003);
        assert!(
            found.actual.contains("/workingDirectories"),
            "{}",
            found.actual
        );
        // Nothing changed: no claim.
        assert!(applied_anyway(CHAT, &folded, &folded, &action).is_none());
        // Set otherwise than the reducer would (a replaced list): still where the action
        // sets, still this rule's.
        let replaced = chat(Some("file:///elsewhere"), 1);
        let mut started = folded.clone();
        started["workingDirectories"] = json!(["file:///a"]);
        let mut swapped = started.clone();
        swapped["workingDirectories"] = json!(["file:///outside"]);
        assert!(applied_anyway(CHAT, &started, &swapped, &action).is_some());
        // Where the action sets, but not what it carried: not shown to be the action's.
        assert!(applied_anyway(CHAT, &folded, &replaced, &action).is_none());
        // A difference the action does not explain is not this rule's.
        let busy = chat(None, 8);
        assert!(applied_anyway(CHAT, &folded, &busy, &action).is_none());
        let both = chat(Some("file:///outside"), 8);
        assert!(applied_anyway(CHAT, &folded, &both, &action).is_none());
    }
}
