//! `checks::action_decode::decode_action` must give exactly what the derived
//! `StateAction::deserialize` gives (the mirror relies on it): on every action of the upstream
//! reducer vectors, and on broken copies of them (each member removed, each member given a
//! value of the wrong JSON type, an unknown tag, a non-object), where the derived decoder falls
//! back to `StateAction::Unknown`.
//!
//! The vectors are part of the repository (`upstream/ahp/0.8.0-dev/`); if they are missing the
//! test fails rather than checking nothing.
mod common;

use std::path::PathBuf;

use ahp_types::actions::StateAction;
use ahpspec::checks::action_decode::decode_action;
use ahpspec::tape::Tape;
use serde::Deserialize;
use serde_json::{json, Value};

fn vectors() -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("upstream/ahp/0.8.0-dev/test-cases/reducers");
    let mut actions = Vec::new();
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reducer vectors not found at {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        let text = std::fs::read_to_string(&path).expect("readable vector");
        let vector: Value = serde_json::from_str(&text).expect("vector is JSON");
        actions.extend(vector["actions"].as_array().into_iter().flatten().cloned());
    }
    assert!(actions.len() >= 190, "found only {} actions", actions.len());
    actions
}

/// The action and broken copies of it.
fn variations(action: &Value) -> Vec<Value> {
    let mut out = vec![action.clone()];
    let Some(map) = action.as_object() else {
        return out;
    };
    for key in map.keys().filter(|k| *k != "type") {
        let mut without = map.clone();
        without.remove(key);
        out.push(Value::Object(without));
        for wrong in common::wrong_typed() {
            let mut changed = map.clone();
            changed.insert(key.clone(), wrong);
            out.push(Value::Object(changed));
        }
    }
    let mut unknown = map.clone();
    unknown.insert("type".into(), json!("chat/fromTheFuture"));
    out.push(Value::Object(unknown));
    let mut untyped = map.clone();
    untyped.remove("type");
    out.push(Value::Object(untyped));
    out
}

/// `decode_action` of the action's text, parsed into a tape.
fn decode_text(action: &Value) -> Result<StateAction, String> {
    let text = action.to_string();
    let mut tape = Tape::default();
    let node = tape.parse(&text).map_err(|e| e.to_string())?;
    decode_action(node).map_err(|e| e.to_string())
}

#[test]
fn decode_action_agrees_with_the_derived_decoder() {
    let mut checked = 0;
    let mut types = std::collections::BTreeSet::new();
    for action in vectors() {
        if let Some(kind) = action["type"].as_str() {
            types.insert(kind.to_owned());
        }
        for variant in variations(&action) {
            let derived = StateAction::deserialize(&variant).map_err(|e| e.to_string());
            let fast = decode_text(&variant);
            assert_eq!(fast, derived, "decoding {variant}");
            checked += 1;
        }
    }
    for odd in [json!(null), json!("chat/delta"), json!([1, 2]), json!({})] {
        let derived = StateAction::deserialize(&odd).map_err(|e| e.to_string());
        assert_eq!(decode_text(&odd), derived);
    }
    assert!(
        types.len() >= 85,
        "only {} action types covered",
        types.len()
    );
    assert!(checked > 1000);
}

#[test]
fn a_repeated_member_decodes_as_its_last_value() {
    let text = r#"{"type":"session/titleChanged","title":"first","title":"last"}"#;
    let mut tape = Tape::default();
    let node = tape.parse(text).expect("parses");
    let value: Value = serde_json::from_str(text).expect("parses");
    assert_eq!(
        decode_action(node).map_err(|e| e.to_string()),
        StateAction::deserialize(&value).map_err(|e| e.to_string())
    );
}
