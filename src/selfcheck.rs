//! Oracles over the harness's own input handling, run by the cargo-fuzz targets in `fuzz/`
//! (see FUZZING.md) and by the regression tests in `tests/selfcheck.rs`. Each takes
//! untrusted input and returns `Err` with a description when the harness misjudges it
//! (a panic is a finding too: the fuzzer catches it).
//!
//! Not a stable API: it exists so that the fuzz targets and their regression tests share
//! one definition of "correct".

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checks::frame::{SchemaMap, Schemas};
use crate::checks::stream::StreamChecks;
use crate::schema::SchemaSet;
use crate::tape::{Node, Tape};

/// serde_json (without `float_roundtrip`) may round a float's last bit differently from a
/// correctly rounded parse; everything else must be identical, member order included.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || ((x - y) / x.abs().max(y.abs())).abs() < 1e-15
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, v), (l, w))| k == l && same_value(v, w))
        }
        _ => a == b,
    }
}

/// The tape parser against serde_json on `text`: same accept/reject, the same `Value`, and
/// the same verdicts of typed decoding (states and actions, as the mirror decodes them).
pub fn tape_matches_serde(text: &str) -> Result<(), String> {
    let mut tape = Tape::default();
    let ours = tape.parse(text);
    let theirs = serde_json::from_str::<Value>(text);
    let (node, value) = match (ours, theirs) {
        (Ok(node), Ok(value)) => (node, value),
        (Err(_), Err(_)) => return Ok(()),
        (ours, theirs) => {
            return Err(format!(
                "accept/reject differs: tape {:?}, serde_json {:?}",
                ours.map(|n| n.to_value()),
                theirs
            ))
        }
    };
    let converted = node.to_value();
    if !same_value(&converted, &value) {
        return Err(format!("tape gives {converted}, serde_json {value}"));
    }
    if !node.equals(&value) && value_has_no_float(&value) {
        return Err(format!("Node::equals says the tape differs from {value}"));
    }
    typed_decoding_agrees(node, &value)
}

/// Floats may differ in the last bit (see [`same_value`]), so `Node::equals` is only held
/// to exactness where there are none.
fn value_has_no_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => !n.is_f64(),
        Value::Array(items) => items.iter().all(value_has_no_float),
        Value::Object(members) => members.values().all(value_has_no_float),
        _ => true,
    }
}

fn typed_decoding_agrees(node: Node<'_>, value: &Value) -> Result<(), String> {
    use ahp_types::state::{ChatState, RootState, SessionState};
    decoded_alike::<RootState>("RootState", node, value)?;
    decoded_alike::<SessionState>("SessionState", node, value)?;
    decoded_alike::<ChatState>("ChatState", node, value)?;
    let fast = crate::checks::action_decode::decode_action(node);
    let derived = ahp_types::actions::StateAction::deserialize(value);
    compare_decoded("StateAction", fast, derived)
}

fn decoded_alike<T: DeserializeOwned + Serialize>(
    name: &str,
    node: Node<'_>,
    value: &Value,
) -> Result<(), String> {
    compare_decoded(name, T::deserialize(node), T::deserialize(value))
}

fn compare_decoded<T: Serialize, E: std::fmt::Display>(
    name: &str,
    from_tape: Result<T, E>,
    from_value: Result<T, serde_json::Error>,
) -> Result<(), String> {
    let encode = |t: &T| serde_json::to_value(t).map_err(|e| e.to_string());
    match (&from_tape, &from_value) {
        (Ok(a), Ok(b)) if encode(a) == encode(b) => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        _ => Err(format!(
            "{name} decodes differently: tape {:?}, value {:?}",
            from_tape.as_ref().map(encode).map_err(ToString::to_string),
            from_value.as_ref().map(encode).map_err(ToString::to_string),
        )),
    }
}

/// The embedded schemas, loaded once per process.
pub fn embedded_schemas() -> &'static Schemas {
    static SCHEMAS: std::sync::OnceLock<Schemas> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas {
        set: std::sync::Arc::new(SchemaSet::embedded().expect("the embedded schemas compile")),
        map: std::sync::Arc::new(SchemaMap::embedded()),
    })
}

/// Validation of `text` as an instance of `def` on a tape against validation of the equal
/// `Value`: the same verdict and the same number of errors. Texts that are not JSON and
/// defs that do not compile are not judged.
pub fn tape_schema_matches_value(def: &str, text: &str) -> Result<(), String> {
    let set = &embedded_schemas().set;
    let (Ok(on_tape), Ok(on_value)) = (set.tape_validator(def), set.validator(def)) else {
        return Ok(());
    };
    let mut tape = Tape::default();
    let (Ok(node), Ok(value)) = (tape.parse(text), serde_json::from_str::<Value>(text)) else {
        return Ok(());
    };
    let (tape_valid, value_valid) = (on_tape.is_valid(node), on_value.is_valid(&value));
    if tape_valid != value_valid {
        return Err(format!(
            "{def}: valid on the tape {tape_valid}, on the value {value_valid}"
        ));
    }
    let (tape_errors, value_errors) = (
        on_tape.iter_errors(node).count(),
        on_value.iter_errors(&value).count(),
    );
    if tape_errors != value_errors {
        return Err(format!(
            "{def}: {tape_errors} errors on the tape, {value_errors} on the value"
        ));
    }
    Ok(())
}

/// Feeds a frame sequence to one connection's always-on checks and ends the connection.
/// `frames` is one frame per line: `>` first for a frame the harness sent, anything else
/// (an optional `<` first) for one the host sent. The checks must not panic; what they find
/// is their business: the count of violations comes back.
pub fn stream_checks_survive(frames: &str) -> usize {
    let schemas = embedded_schemas();
    let mut checks = StreamChecks::new("ahpspec-selfcheck");
    let mut found = 0;
    for (index, line) in frames.split('\n').enumerate() {
        let at_ms = index as f64;
        match line.strip_prefix('>') {
            Some(sent) => checks.sent(index, at_ms, sent, schemas),
            None => {
                let received = line.strip_prefix('<').unwrap_or(line);
                found += checks.received(received, schemas).len();
            }
        }
    }
    found + checks.ended(frames.len() as f64, 1000.0, true).len()
}

/// Which loader [`loaders_survive`] feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    Suite,
    Profile,
    Baseline,
    Trace,
}

impl Loader {
    pub const ALL: [Loader; 4] = [
        Loader::Suite,
        Loader::Profile,
        Loader::Baseline,
        Loader::Trace,
    ];
}

/// A loader on untrusted text: an error or a value, never a panic. What loads is used the
/// way the CLI uses it next (a trace becomes a regression case), so that a value the loader
/// lets through cannot break its first user either.
pub fn loader_survives(loader: Loader, text: &str) -> Result<(), String> {
    match loader {
        Loader::Suite => {
            if let Ok(cases) = crate::suite::Catalog::parse_suite("fuzz.toml", text) {
                for case in &cases {
                    if case.info.id.is_empty() {
                        return Err("a suite case loaded without an id".into());
                    }
                }
            }
        }
        Loader::Profile => {
            let _ = crate::client::profile::Profile::parse("fuzz.toml", text);
        }
        Loader::Baseline => {
            let baseline = crate::rows::baseline::Baseline::parse(text);
            let ids = text
                .lines()
                .map(|line| line.split('#').next().unwrap_or_default().trim());
            if let Some(missing) = ids
                .filter(|id| !id.is_empty())
                .find(|id| !baseline.lists(id))
            {
                return Err(format!("baseline line {missing:?} is not listed"));
            }
        }
        Loader::Trace => {
            if let Ok(trace) = serde_json::from_str::<crate::fuzz::trace::Trace>(text) {
                // `replay --to-case` output is appended to a suite file, under its `page`.
                let case = format!("page = \"regressions\"\n{}", trace.to_case());
                if let Err(error) = crate::suite::Catalog::parse_suite("regression.toml", &case) {
                    return Err(format!(
                        "a loaded trace makes a case that does not load: {error}\n{case}"
                    ));
                }
            }
        }
    }
    Ok(())
}
