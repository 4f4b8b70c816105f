//! The tape parser against serde_json: it accepts exactly the texts `serde_json::from_str`
//! accepts and yields the same `Value`, and it is a conforming `jsonschema` representation.

mod common;

use ahpspec::tape::{Tape, TapeJson};
use proptest::prelude::*;
use serde_json::{json, Value};

/// serde_json's float parsing (without `float_roundtrip`) may differ from the correctly
/// rounded one in the last bit; everything else must be identical.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || ((x - y) / x.abs().max(y.abs())).abs() < 1e-15
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((k, v), (l, w))| k == l && same(v, w))
        }
        _ => a == b,
    }
}

/// Parses `text` both ways and says how they differ, if they do.
fn differs(text: &str) -> Option<String> {
    let mut tape = Tape::default();
    let ours = tape.parse(text).map(|node| node.to_value());
    let theirs = serde_json::from_str::<Value>(text);
    match (ours, theirs) {
        (Ok(a), Ok(b)) if same(&a, &b) => None,
        (Err(_), Err(_)) => None,
        (a, b) => Some(format!("{text:?}: tape {a:?}, serde_json {b:?}")),
    }
}

#[test]
fn edge_cases_parse_as_serde_json_parses_them() {
    let deep_ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
    let too_deep = format!("{}{}", "[".repeat(128), "]".repeat(128));
    let cases = [
        "",
        " ",
        "null",
        "nul",
        "true",
        "tru",
        "false",
        "0",
        "-0",
        "-",
        "01",
        "1.",
        "1.5e",
        "1e400",
        "-1e400",
        "1e-400",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "1.0",
        "1E+2",
        "2e-3",
        "[1,]",
        "[,1]",
        "{}",
        "[]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"b\":2,\"a\":3}",
        "{\"a\":{\"x\":1,\"x\":2},\"a\":[{\"y\":1,\"y\":[2]}],\"b\":{\"a\":1}}",
        "\"\\u0041\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\ud800x\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"a\nb\"",
        "\"tab\tin\"",
        "\"\\/\\b\\f\\n\\r\\t\\\\\\\"\"",
        "\"é😀\"",
        " [ 1 , { \"k\" : [ ] } ] ",
        "[1] x",
        "[1]]",
        "{\"a\":[1,2,{\"b\":null}]}",
        "\"unterminated",
        "[\"a\",",
        "{\"a\"",
        "{\"a\":",
        "-a",
        "+1",
        ".5",
        "1e",
        "1e+",
        "0x10",
        "NaN",
        "Infinity",
        "[1 2]",
        "\u{feff}1",
        "\"\\u00e9\"",
        "\"\\uD834\\uDD1E\"",
    ];
    let mut failures: Vec<String> = cases.iter().filter_map(|case| differs(case)).collect();
    failures.extend(differs(&deep_ok));
    failures.extend(differs(&too_deep));
    // Every position of a special byte within and across the eight-byte steps of the
    // string scan.
    for before in 0..20 {
        for special in [
            "\"", "\\", "\\n", "\u{1}", "\u{1f}", " ", "é", "\u{7f}", "~",
        ] {
            let text = format!("\"{}{special}{}\"", "a".repeat(before), "b".repeat(9));
            failures.extend(differs(&text));
        }
    }
    let mut keys: Vec<String> = (0..40).map(|i| format!("\"k{}\":{i}", i % 25)).collect();
    keys.push("\"k3\":\"last\"".into());
    failures.extend(differs(&format!("{{{}}}", keys.join(","))));
    assert!(failures.is_empty(), "{failures:#?}");
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        "[a-z\"\\\\/\u{0}-\u{1f}é😀]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-c]{0,2}", inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// What a mutation does at a position.
#[derive(Debug, Clone)]
enum Edit {
    Delete,
    Insert(char),
    Replace(char),
}

fn edit() -> impl Strategy<Value = Edit> {
    let byte = prop::sample::select(vec![
        '"', '\\', '{', '}', '[', ']', ',', ':', ' ', '0', '1', '-', '.', 'e', 'u', 'n', 'a', '\n',
        '\u{1}', 'é',
    ]);
    prop_oneof![
        Just(Edit::Delete),
        byte.clone().prop_map(Edit::Insert),
        byte.prop_map(Edit::Replace),
    ]
}

fn mutate(text: &str, edits: &[(usize, Edit)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for (at, edit) in edits {
        if chars.is_empty() {
            break;
        }
        let at = at % chars.len();
        match edit {
            Edit::Delete => {
                chars.remove(at);
            }
            Edit::Insert(c) => chars.insert(at, *c),
            Edit::Replace(c) => chars[at] = *c,
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn generated_documents_round_trip(value in any_json()) {
        for text in [value.to_string(), serde_json::to_string_pretty(&value).unwrap_or_default()] {
            let mut tape = Tape::default();
            let parsed = tape.parse(&text).map(|node| node.to_value());
            prop_assert!(parsed.as_ref().is_ok_and(|parsed| same(parsed, &value)), "{text}: {parsed:?}");
        }
    }

    #[test]
    fn mutated_documents_are_judged_as_serde_json_judges_them(
        value in any_json(),
        edits in prop::collection::vec((any::<usize>(), edit()), 1..4),
    ) {
        let text = mutate(&value.to_string(), &edits);
        prop_assert!(differs(&text).is_none(), "{}", differs(&text).unwrap_or_default());
    }
}

#[test]
fn a_tape_node_is_a_conforming_jsonschema_representation() {
    let text = jsonschema::json::conformance::document().to_string();
    let mut tape = Tape::default();
    let root = tape.parse(&text).expect("the conformance document parses");
    jsonschema::json::conformance::assert_conformance::<TapeJson>(&root);
}

#[test]
fn schemas_judge_a_tape_as_they_judge_the_value() {
    let schema = json!({
        "type": "object",
        "required": ["type", "n"],
        "properties": {
            "type": {"const": "chat/delta"},
            "n": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": true},
            "nested": {"oneOf": [{"type": "string"}, {"type": "object", "additionalProperties": false}]}
        },
        "propertyNames": {"maxLength": 6}
    });
    let on_tape = jsonschema::options_for::<TapeJson>()
        .build(&schema)
        .expect("schema compiles for tapes");
    let on_value = jsonschema::validator_for(&schema).expect("schema compiles");
    let instances = [
        r#"{"type":"chat/delta","n":1}"#,
        r#"{"type":"chat/delta","n":0}"#,
        r#"{"type":"chat/delta","n":1.0}"#,
        r#"{"type":"chat/other","n":2}"#,
        r#"{"type":"chat/delta"}"#,
        r#"{"type":"chat/delta","n":2,"tags":["a","b"]}"#,
        r#"{"type":"chat/delta","n":2,"tags":["a","a"]}"#,
        r#"{"type":"chat/delta","n":2,"tags":["c"]}"#,
        r#"{"type":"chat/delta","n":2,"nested":"s"}"#,
        r#"{"type":"chat/delta","n":2,"nested":{}}"#,
        r#"{"type":"chat/delta","n":2,"nested":{"x":1}}"#,
        r#"{"type":"chat/delta","n":2,"toolong":1}"#,
        r#"{"type":"chat/d\u0065lta","n":3}"#,
        r#"[1]"#,
    ];
    let mut tape = Tape::default();
    for text in instances {
        let value: Value = serde_json::from_str(text).expect("instance parses");
        let node = tape.parse(text).expect("instance parses on a tape");
        assert_eq!(on_tape.is_valid(node), on_value.is_valid(&value), "{text}");
        assert_eq!(
            on_tape.iter_errors(node).count(),
            on_value.iter_errors(&value).count(),
            "{text}"
        );
    }
}

/// `T` decoded from a tape and from the `Value`, re-encoded for comparison.
fn decoded_both_ways<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: &Value,
) -> (Result<Value, String>, Result<Value, String>) {
    let text = value.to_string();
    let mut tape = Tape::default();
    let node = tape.parse(&text).expect("a Value's text parses");
    let encode = |decoded: Result<T, serde_json::Error>| {
        decoded
            .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
            .map_err(|e| e.to_string())
    };
    (
        encode(T::deserialize(node)),
        encode(serde_json::from_value(value.clone())),
    )
}

#[test]
fn states_decode_from_a_tape_as_from_the_value() {
    use ahp_types::state::{ChatState, RootState, SessionState};
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("upstream/ahp/0.8.0-dev/test-cases/reducers");
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).expect("reducer vectors in upstream/ahp/") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("readable");
        let vector: Value = serde_json::from_str(&text).expect("JSON");
        for state in [&vector["initial"], &vector["expected"]] {
            // Broken copies too: each member given a value of the wrong type.
            let mut variants = vec![state.clone()];
            for key in state.as_object().into_iter().flat_map(|m| m.keys()) {
                for wrong in common::wrong_typed() {
                    let mut changed = state.clone();
                    changed[key] = wrong;
                    variants.push(changed);
                }
            }
            for variant in &variants {
                let (tape, value) = match vector["reducer"].as_str() {
                    Some("root") => decoded_both_ways::<RootState>(variant),
                    Some("session") => decoded_both_ways::<SessionState>(variant),
                    Some("chat") => decoded_both_ways::<ChatState>(variant),
                    _ => continue,
                };
                assert_eq!(
                    tape.is_ok(),
                    value.is_ok(),
                    "{variant}: {tape:?} vs {value:?}"
                );
                if let (Ok(a), Ok(b)) = (tape, value) {
                    assert_eq!(a, b, "{variant}");
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 500, "only {compared} states compared");
}

/// Formats are asserted on a tape exactly as on the value: the always-on checks validate
/// tapes, the case steps and the offline tools values.
#[test]
fn formats_judge_a_tape_as_they_judge_the_value() {
    let set = ahpspec::schema::SchemaSet::embedded().expect("embedded schemas load");
    let on_tape = set
        .tape_validator("SessionSummary")
        .expect("compiles for tapes");
    let on_value = set.validator("SessionSummary").expect("compiles");
    let instances = [
        r#"{"resource":"ahp-session:/x","provider":"p","title":"t","status":1,"createdAt":"2025-03-10T18:42:03.123Z","modifiedAt":"2025-03-10T18:42:03Z"}"#,
        r#"{"resource":"ahp-session:/x","provider":"p","title":"t","status":1,"createdAt":"sometime last week","modifiedAt":"2025-03-10T18:42:03Z"}"#,
        r#"{"resource":"ahp-session:/x","provider":"p","title":"t","status":1,"createdAt":"2025-03-10T18:42:03","modifiedAt":"2025-03-10"}"#,
        r#"{"resource":"ahp-session:/x","provider":"p","title":"t","status":1,"createdAt":"20250310T184203\u005a","modifiedAt":"2025-03-10T18:42:03+0100"}"#,
        r#"{"resource":"no uri","provider":"p","title":"t","status":1,"createdAt":"2025-03-10T18:42:03Z","modifiedAt":"2025-03-10T18:42:03Z"}"#,
        r#"{"resource":"ahp-session:/\u0078","provider":"p","title":"t","status":1,"createdAt":"2025-03-10T18:42:03Z","modifiedAt":"2025-03-10T18:42:03Z","workingDirectories":["file:///w","a b"]}"#,
    ];
    let mut tape = Tape::default();
    let mut invalid = 0;
    for text in instances {
        let value: Value = serde_json::from_str(text).expect("instance parses");
        let node = tape.parse(text).expect("instance parses on a tape");
        let valid = on_value.is_valid(&value);
        invalid += usize::from(!valid);
        assert_eq!(on_tape.is_valid(node), valid, "{text}");
        assert_eq!(
            on_tape.iter_errors(node).count(),
            on_value.iter_errors(&value).count(),
            "{text}"
        );
    }
    assert_eq!(invalid, 4, "four instances break a format");
}
