//! Upstream reducer test vectors replayed through the protocol 1.0.0 reducers.
//!
//! The reference host folds every action through `ahp::reducers` (crate `ahp` 1.0.0). This
//! test proves those reducers reproduce the upstream 0.8.0-dev reducer vectors that
//! `upstream/ahp/1.0.0/fixture-compat.json` classifies as valid for 1.0.0:
//!
//! * `pass` — the re-encoded state must equal `expected` once `null` members are dropped
//!   (and integral floats are written as integers: `3.0` ≡ `3`, see [`normalise`]);
//! * `pass-except-modifiedAt` — same, except the value of every `modifiedAt` member is
//!   ignored (presence still has to agree): the 1.0.0 reducers are clock-free, the 0.8.0-dev
//!   runners stamped a mocked wall clock;
//! * `stale-shape` — the vector uses a pre-1.0.0 wire shape; it is skipped but counted.
//!
//! It also replays the upstream round-trip corpus (decode with the named `ahp-types` type,
//! re-encode, compare with the canonical output under the same normalisation) for every
//! vector the compat file does not list as failing under 1.0.0.
//!
//! The data is part of the repository (`upstream/ahp/`, with its SOURCE.md files). If it is
//! missing the test fails: a conformance check that silently exercises nothing is worse
//! than none.
//!
//! Kept whole (about 870 lines, over the ~600 aim): one pipeline — load the compat file,
//! fold, normalise, compare — whose self-tests at the end break each stage in turn.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use ahp::reducers::{
    apply_action_to_annotations, apply_action_to_automation, apply_action_to_automation_run,
    apply_action_to_canvas, apply_action_to_changeset, apply_action_to_chat,
    apply_action_to_resource_watch, apply_action_to_root, apply_action_to_session,
    apply_action_to_terminal, ReduceOutcome,
};
use ahp_types::actions::{ActionEnvelope, StateAction};
use ahp_types::commands::{ChangesetOperationTarget, ChatSource, Implementation, InitializeResult};
use ahp_types::common::StringOrMarkdown;
use ahp_types::messages::JsonRpcMessage;
use ahp_types::notifications::{PartialSessionSummary, SessionAddedParams};
use ahp_types::state::{
    AnnotationsState, AutomationRunState, AutomationState, CanvasState, ChangesetState,
    ChatInputQuestion, ChatState, Customization, ResourceWatchState, RootState, SessionState,
    SessionStatus, SessionSummary, TerminalState,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

// ─── Locating and loading the data ──────────────────────────────────────────

/// `upstream/ahp/` of the repository.
fn upstream_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("upstream/ahp")
}

const COMPAT_FILE: &str = "1.0.0/fixture-compat.json";
const TEST_CASES_DIR: &str = "0.8.0-dev/test-cases";

fn read_json(path: &Path) -> Result<Value, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
}

/// Sorted `*.json` file names directly inside `dir`.
fn json_files_in(dir: &Path) -> Result<Vec<String>, String> {
    let entries = fs::read_dir(dir).map_err(|e| {
        format!(
            "cannot list {} ({e}); the upstream vectors are part of the repository \
             (upstream/ahp/)",
            dir.display()
        )
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

// ─── The compat file ────────────────────────────────────────────────────────

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    Pass,
    PassExceptModifiedAt,
    StaleShape,
}

impl Status {
    fn parse(raw: &str) -> Result<Self, String> {
        match raw {
            "pass" => Ok(Self::Pass),
            "pass-except-modifiedAt" => Ok(Self::PassExceptModifiedAt),
            "stale-shape" => Ok(Self::StaleShape),
            other => Err(format!("unknown compat status `{other}`")),
        }
    }

    fn wire(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::PassExceptModifiedAt => "pass-except-modifiedAt",
            Self::StaleShape => "stale-shape",
        }
    }

    fn usable(self) -> bool {
        !matches!(self, Self::StaleShape)
    }
}

#[derive(Debug, Deserialize)]
struct RawCompat {
    counts: BTreeMap<String, usize>,
    fixtures: Vec<RawCompatEntry>,
    #[serde(rename = "roundTrips")]
    round_trips: Option<RawRoundTrips>,
}

#[derive(Debug, Deserialize)]
struct RawCompatEntry {
    file: String,
    reducer: String,
    actions: Vec<String>,
    status: String,
}

#[derive(Debug, Deserialize)]
struct RawRoundTrips {
    total: usize,
    passed: usize,
    failed: Vec<RawRoundTripFailure>,
}

#[derive(Debug, Deserialize)]
struct RawRoundTripFailure {
    file: String,
}

#[derive(Debug)]
struct CompatEntry {
    /// Path relative to the test-cases directory, e.g. `reducers/001-….json`.
    file: String,
    reducer: ReducerKind,
    actions: Vec<String>,
    status: Status,
}

#[derive(Debug)]
struct Compat {
    entries: Vec<CompatEntry>,
    /// Number of reducer vectors the compat file declares usable (from `counts`).
    declared_usable: usize,
    round_trips: Option<RawRoundTrips>,
}

fn load_compat(upstream: &Path) -> Result<Compat, String> {
    let path = upstream.join(COMPAT_FILE);
    let raw: RawCompat = serde_json::from_value(read_json(&path)?)
        .map_err(|e| format!("{} has an unexpected shape: {e}", path.display()))?;

    let mut entries = Vec::with_capacity(raw.fixtures.len());
    let mut tally: BTreeMap<Status, usize> = BTreeMap::new();
    for entry in raw.fixtures {
        let status = Status::parse(&entry.status).map_err(|e| format!("{}: {e}", entry.file))?;
        let reducer =
            ReducerKind::parse(&entry.reducer).map_err(|e| format!("{}: {e}", entry.file))?;
        *tally.entry(status).or_default() += 1;
        entries.push(CompatEntry {
            file: entry.file,
            reducer,
            actions: entry.actions,
            status,
        });
    }

    // The per-status counts must agree with the entries, and every status must be known.
    let mut declared_usable = 0;
    for (name, &count) in &raw.counts {
        let status = Status::parse(name).map_err(|e| format!("{}: counts: {e}", path.display()))?;
        let listed = tally.get(&status).copied().unwrap_or(0);
        if listed != count {
            return Err(format!(
                "{}: counts.{name} = {count} but {listed} fixtures carry that status",
                path.display()
            ));
        }
        if status.usable() {
            declared_usable += count;
        }
    }
    for (status, listed) in &tally {
        if !raw.counts.contains_key(status.wire()) {
            return Err(format!(
                "{}: {listed} fixtures have status `{}` but counts does not mention it",
                path.display(),
                status.wire()
            ));
        }
    }
    if declared_usable == 0 {
        return Err(format!(
            "{} declares no usable reducer vectors",
            path.display()
        ));
    }

    Ok(Compat {
        entries,
        declared_usable,
        round_trips: raw.round_trips,
    })
}

// ─── Reducer dispatch ───────────────────────────────────────────────────────

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReducerKind {
    Root,
    Session,
    Chat,
    Terminal,
    Changeset,
    Annotations,
    ResourceWatch,
    Canvas,
    Automation,
    AutomationRun,
}

impl ReducerKind {
    fn parse(raw: &str) -> Result<Self, String> {
        Ok(match raw {
            "root" => Self::Root,
            "session" => Self::Session,
            "chat" => Self::Chat,
            "terminal" => Self::Terminal,
            "changeset" => Self::Changeset,
            "annotations" => Self::Annotations,
            "resourceWatch" => Self::ResourceWatch,
            "canvas" => Self::Canvas,
            "automation" => Self::Automation,
            "automationRun" => Self::AutomationRun,
            other => return Err(format!("unknown reducer kind `{other}`")),
        })
    }

    /// Decode `initial` into this kind's state, fold `actions`, and re-encode.
    fn fold(self, initial: &Value, actions: &[StateAction]) -> Result<Folded, String> {
        match self {
            Self::Root => fold_with::<RootState>(initial, actions, apply_action_to_root),
            Self::Session => fold_with::<SessionState>(initial, actions, apply_action_to_session),
            Self::Chat => fold_with::<ChatState>(initial, actions, apply_action_to_chat),
            Self::Terminal => {
                fold_with::<TerminalState>(initial, actions, apply_action_to_terminal)
            }
            Self::Changeset => {
                fold_with::<ChangesetState>(initial, actions, apply_action_to_changeset)
            }
            Self::Annotations => {
                fold_with::<AnnotationsState>(initial, actions, apply_action_to_annotations)
            }
            Self::ResourceWatch => {
                fold_with::<ResourceWatchState>(initial, actions, apply_action_to_resource_watch)
            }
            Self::Canvas => fold_with::<CanvasState>(initial, actions, apply_action_to_canvas),
            Self::Automation => {
                fold_with::<AutomationState>(initial, actions, apply_action_to_automation)
            }
            Self::AutomationRun => {
                fold_with::<AutomationRunState>(initial, actions, apply_action_to_automation_run)
            }
        }
    }
}

/// Result of folding one vector: the re-encoded final state and each action's outcome.
struct Folded {
    state: Value,
    outcomes: Vec<ReduceOutcome>,
}

fn fold_with<S>(
    initial: &Value,
    actions: &[StateAction],
    reduce: fn(&mut S, &StateAction) -> ReduceOutcome,
) -> Result<Folded, String>
where
    S: DeserializeOwned + Serialize,
{
    let mut state: S = serde_json::from_value(initial.clone()).map_err(|e| {
        format!(
            "initial state does not decode as {}: {e}",
            std::any::type_name::<S>()
        )
    })?;
    let outcomes = actions
        .iter()
        .map(|action| reduce(&mut state, action))
        .collect();
    let state = serde_json::to_value(&state).map_err(|e| format!("cannot re-encode state: {e}"))?;
    Ok(Folded { state, outcomes })
}

// ─── Normalisation and diff ─────────────────────────────────────────────────

/// Drop `null` object members at any depth and write integral floats as integers, so
/// that `"x": null` ≡ absent and `1.0` ≡ `1` (encoders disagree on both; neither is a
/// reducer behaviour).
fn normalise(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), normalise(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                // Exactly representable, so the cast is lossless.
                Value::from(f as i64)
            }
            _ => value.clone(),
        },
        other => other.clone(),
    }
}

const MODIFIED_AT: &str = "modifiedAt";
const IGNORED: &str = "<modifiedAt ignored>";

/// Replace the value of every `modifiedAt` member with a placeholder, keeping presence.
fn mask_modified_at(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for (key, member) in members.iter_mut() {
                if key == MODIFIED_AT {
                    *member = Value::String(IGNORED.to_owned());
                } else {
                    mask_modified_at(member);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_modified_at),
        _ => {}
    }
}

/// The first point where two JSON values disagree.
#[derive(Debug, PartialEq)]
struct Difference {
    /// RFC 6901 pointer; empty for the document root.
    pointer: String,
    expected: Option<Value>,
    actual: Option<Value>,
}

fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn first_difference(expected: &Value, actual: &Value) -> Option<Difference> {
    diff_at(expected, actual, String::new())
}

fn diff_at(expected: &Value, actual: &Value, pointer: String) -> Option<Difference> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            // Walk expected's member order first, then members only `actual` has.
            let keys = e.keys().chain(a.keys().filter(|k| !e.contains_key(*k)));
            for key in keys {
                let here = format!("{pointer}/{}", escape_pointer_token(key));
                match (e.get(key), a.get(key)) {
                    (Some(ev), Some(av)) => {
                        if let Some(d) = diff_at(ev, av, here) {
                            return Some(d);
                        }
                    }
                    (ev, av) => {
                        return Some(Difference {
                            pointer: here,
                            expected: ev.cloned(),
                            actual: av.cloned(),
                        })
                    }
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            for (index, (ev, av)) in e.iter().zip(a).enumerate() {
                if let Some(d) = diff_at(ev, av, format!("{pointer}/{index}")) {
                    return Some(d);
                }
            }
            let common = e.len().min(a.len());
            (e.len() != a.len()).then(|| Difference {
                pointer: format!("{pointer}/{common}"),
                expected: e.get(common).cloned(),
                actual: a.get(common).cloned(),
            })
        }
        _ => (expected != actual).then(|| Difference {
            pointer,
            expected: Some(expected.clone()),
            actual: Some(actual.clone()),
        }),
    }
}

fn show(value: Option<&Value>) -> String {
    const LIMIT: usize = 400;
    let Some(value) = value else {
        return "<absent>".to_owned();
    };
    let text = value.to_string();
    if text.chars().count() > LIMIT {
        let cut: String = text.chars().take(LIMIT).collect();
        format!("{cut}… ({} chars)", text.len())
    } else {
        text
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(
            f,
            "first difference at {pointer}\n      expected: {}\n      actual:   {}",
            show(self.expected.as_ref()),
            show(self.actual.as_ref())
        )
    }
}

/// Compare a re-encoded state with the vector's expectation under `status`'s rules.
fn compare_states(expected: &Value, actual: &Value, status: Status) -> Option<Difference> {
    let mut expected = normalise(expected);
    let mut actual = normalise(actual);
    if status == Status::PassExceptModifiedAt {
        mask_modified_at(&mut expected);
        mask_modified_at(&mut actual);
    }
    first_difference(&expected, &actual)
}

// ─── Reducer vectors ────────────────────────────────────────────────────────

#[derive(Debug, Deserialize)]
struct ReducerVector {
    reducer: String,
    initial: Value,
    actions: Vec<Value>,
    expected: Value,
}

fn load_vector(path: &Path) -> Result<ReducerVector, String> {
    serde_json::from_value(read_json(path)?)
        .map_err(|e| format!("not a reducer vector (initial/actions/expected/reducer): {e}"))
}

fn decode_actions(raw: &[Value]) -> Result<Vec<StateAction>, String> {
    raw.iter()
        .enumerate()
        .map(|(index, action)| {
            serde_json::from_value(action.clone())
                .map_err(|e| format!("action #{index} does not decode as StateAction: {e}"))
        })
        .collect()
}

/// Cross-check the vector against its compat entry (reducer kind and action sequence).
fn check_vector_matches_entry(vector: &ReducerVector, entry: &CompatEntry) -> Result<(), String> {
    if ReducerKind::parse(&vector.reducer)? != entry.reducer {
        return Err(format!(
            "vector names reducer `{}` but the compat entry says {:?}",
            vector.reducer, entry.reducer
        ));
    }
    let types: Vec<&str> = vector
        .actions
        .iter()
        .map(|a| a.get("type").and_then(Value::as_str).unwrap_or("<no type>"))
        .collect();
    if types != entry.actions {
        return Err(format!(
            "vector actions {types:?} differ from the compat entry's {:?}",
            entry.actions
        ));
    }
    Ok(())
}

fn describe_outcomes(outcomes: &[ReduceOutcome]) -> String {
    outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| format!("#{i}: {o:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Run one usable vector. `Ok(true)` if `modifiedAt` was actually masked away (i.e. it
/// differed and only the masking made the vector pass).
fn run_vector(path: &Path, entry: &CompatEntry) -> Result<bool, String> {
    let vector = load_vector(path)?;
    check_vector_matches_entry(&vector, entry)?;
    let actions = decode_actions(&vector.actions)?;
    let folded = entry.reducer.fold(&vector.initial, &actions)?;
    if let Some(diff) = compare_states(&vector.expected, &folded.state, entry.status) {
        let last = actions.len().checked_sub(1);
        return Err(format!(
            "state after the last action (index {}, {} action(s) folded; outcomes {}) \
             does not match `expected`:\n    {diff}",
            last.map_or_else(|| "none".to_owned(), |i| i.to_string()),
            actions.len(),
            describe_outcomes(&folded.outcomes),
        ));
    }
    let masked_difference = entry.status == Status::PassExceptModifiedAt
        && compare_states(&vector.expected, &folded.state, Status::Pass).is_some();
    Ok(masked_difference)
}

#[derive(Debug, Default)]
struct ReducerReport {
    passed: BTreeMap<Status, usize>,
    skipped_stale: usize,
    modified_at_really_differed: usize,
    failures: Vec<String>,
}

impl ReducerReport {
    fn exercised(&self) -> usize {
        self.passed.values().sum::<usize>() + self.failures.len()
    }
}

/// Replay every vector the compat file lists. Errors that make the run meaningless (missing
/// directory, unreadable compat file) are `Err`; per-vector problems go into the report.
fn run_reducer_vectors(upstream: &Path) -> Result<(Compat, ReducerReport), String> {
    let compat = load_compat(upstream)?;
    let cases = upstream.join(TEST_CASES_DIR);
    let on_disk = json_files_in(&cases.join("reducers"))?;
    let mut report = ReducerReport::default();

    for name in &on_disk {
        let rel = format!("reducers/{name}");
        if !compat.entries.iter().any(|e| e.file == rel) {
            report.failures.push(format!(
                "{rel}: present on disk but not classified by {COMPAT_FILE}"
            ));
        }
    }

    for entry in &compat.entries {
        if !entry.status.usable() {
            report.skipped_stale += 1;
            continue;
        }
        match run_vector(&cases.join(&entry.file), entry) {
            Ok(masked) => {
                *report.passed.entry(entry.status).or_default() += 1;
                if masked {
                    report.modified_at_really_differed += 1;
                }
            }
            Err(why) => {
                report
                    .failures
                    .push(format!("{} [{}]: {why}", entry.file, entry.status.wire()))
            }
        }
    }
    Ok((compat, report))
}

#[test]
fn upstream_reducer_vectors_hold_for_1_0_0() {
    let upstream = upstream_dir();
    let (compat, report) = run_reducer_vectors(&upstream).unwrap_or_else(|e| {
        panic!(
            "upstream reducer vectors unavailable under {}: {e}",
            upstream.display()
        )
    });

    let passed = |s: Status| report.passed.get(&s).copied().unwrap_or(0);
    println!(
        "reducer vectors: {} exercised ({} pass, {} pass-except-modifiedAt of which {} really \
         differed only in modifiedAt), {} stale-shape skipped, {} failed",
        report.exercised(),
        passed(Status::Pass),
        passed(Status::PassExceptModifiedAt),
        report.modified_at_really_differed,
        report.skipped_stale,
        report.failures.len()
    );

    assert!(
        report.failures.is_empty(),
        "{} reducer vector(s) failed:\n\n{}",
        report.failures.len(),
        report.failures.join("\n\n")
    );
    assert_eq!(
        report.exercised(),
        compat.declared_usable,
        "number of reducer vectors exercised differs from the compat file's usable count"
    );
    assert_eq!(
        report.exercised() + report.skipped_stale,
        compat.entries.len(),
        "every compat entry must be either exercised or counted as skipped"
    );
}

// ─── Round-trip vectors ─────────────────────────────────────────────────────

#[derive(Debug, Deserialize)]
struct RoundTripVector {
    #[serde(rename = "type")]
    type_name: String,
    input: Value,
    #[serde(rename = "acceptableOutputs")]
    acceptable_outputs: Vec<Value>,
}

fn reencode<T: DeserializeOwned + Serialize>(input: &Value) -> Result<Value, String> {
    let decoded: T = serde_json::from_value(input.clone())
        .map_err(|e| format!("does not decode as {}: {e}", std::any::type_name::<T>()))?;
    serde_json::to_value(&decoded).map_err(|e| format!("cannot re-encode: {e}"))
}

/// Decode `input` with the `ahp-types` type the vector names and re-encode it.
fn round_trip(type_name: &str, input: &Value) -> Result<Value, String> {
    match type_name {
        "ActionEnvelope" => reencode::<ActionEnvelope>(input),
        "StateAction" => reencode::<StateAction>(input),
        "Customization" => reencode::<Customization>(input),
        "SessionStatus" => reencode::<SessionStatus>(input),
        "StringOrMarkdown" => reencode::<StringOrMarkdown>(input),
        "JsonRpcMessage" => reencode::<JsonRpcMessage>(input),
        "ChangesetOperationTarget" => reencode::<ChangesetOperationTarget>(input),
        "ChatInputQuestion" => reencode::<ChatInputQuestion>(input),
        "SessionSummary" => reencode::<SessionSummary>(input),
        "SessionAddedParams" => reencode::<SessionAddedParams>(input),
        "PartialSessionSummary" => reencode::<PartialSessionSummary>(input),
        "Implementation" => reencode::<Implementation>(input),
        "InitializeResult" => reencode::<InitializeResult>(input),
        "ChatSource" => reencode::<ChatSource>(input),
        other => Err(format!(
            "no ahp-types mapping for round-trip type `{other}`"
        )),
    }
}

/// `Ok(strict)` on a match after [`normalise`]; `strict` says whether it matched without it.
fn run_round_trip(path: &Path) -> Result<bool, String> {
    let vector: RoundTripVector = serde_json::from_value(read_json(path)?)
        .map_err(|e| format!("not a round-trip vector: {e}"))?;
    let [canonical] = vector.acceptable_outputs.as_slice() else {
        return Err(format!(
            "expected exactly one acceptableOutputs entry, found {}",
            vector.acceptable_outputs.len()
        ));
    };
    let actual = round_trip(&vector.type_name, &vector.input)?;
    if let Some(diff) = first_difference(&normalise(canonical), &normalise(&actual)) {
        return Err(format!(
            "{} re-encoding differs:\n    {diff}",
            vector.type_name
        ));
    }
    Ok(canonical == &actual)
}

#[derive(Debug, Default)]
struct RoundTripReport {
    passed: usize,
    passed_strictly: usize,
    skipped_known_failing: usize,
    declared_usable: usize,
    failures: Vec<String>,
}

fn run_round_trip_vectors(upstream: &Path) -> Result<RoundTripReport, String> {
    let compat = load_compat(upstream)?;
    let summary = compat.round_trips.ok_or_else(|| {
        format!("{COMPAT_FILE} has no `roundTrips` section saying which vectors are usable")
    })?;
    let dir = upstream.join(TEST_CASES_DIR).join("round-trips");
    let on_disk = json_files_in(&dir)?;
    if on_disk.len() != summary.total {
        return Err(format!(
            "{COMPAT_FILE} covers {} round-trip vectors but {} are on disk in {}",
            summary.total,
            on_disk.len(),
            dir.display()
        ));
    }
    let known_failing: Vec<&str> = summary
        .failed
        .iter()
        .map(|f| f.file.strip_prefix("round-trips/").unwrap_or(&f.file))
        .collect();
    if let Some(missing) = known_failing
        .iter()
        .find(|f| !on_disk.iter().any(|n| n == *f))
    {
        return Err(format!(
            "{COMPAT_FILE} lists round-trip failure {missing} which is not on disk"
        ));
    }

    let mut report = RoundTripReport {
        declared_usable: summary.passed,
        ..RoundTripReport::default()
    };
    for name in &on_disk {
        if known_failing.contains(&name.as_str()) {
            report.skipped_known_failing += 1;
            continue;
        }
        match run_round_trip(&dir.join(name)) {
            Ok(strict) => {
                report.passed += 1;
                if strict {
                    report.passed_strictly += 1;
                }
            }
            Err(why) => report.failures.push(format!("round-trips/{name}: {why}")),
        }
    }
    Ok(report)
}

#[test]
fn upstream_round_trip_vectors_hold_for_1_0_0() {
    let upstream = upstream_dir();
    let report = run_round_trip_vectors(&upstream).unwrap_or_else(|e| {
        panic!(
            "upstream round-trip vectors unavailable under {}: {e}",
            upstream.display()
        )
    });
    println!(
        "round-trip vectors: {} passed after normalisation ({} also without any normalisation), {} \
         known-failing skipped, {} failed",
        report.passed,
        report.passed_strictly,
        report.skipped_known_failing,
        report.failures.len()
    );
    assert!(
        report.failures.is_empty(),
        "{} round-trip vector(s) failed:\n\n{}",
        report.failures.len(),
        report.failures.join("\n\n")
    );
    assert_eq!(
        report.passed, report.declared_usable,
        "number of round-trip vectors exercised differs from the compat file's `passed` count"
    );
}

// ─── Self-tests: the comparison must be able to fail ────────────────────────

/// Folding a vector with one action left out must be reported as a difference.
#[test]
fn leaving_out_an_action_is_detected() {
    let upstream = upstream_dir();
    let compat = load_compat(&upstream).expect("compat file must load for the self-test");
    let cases = upstream.join(TEST_CASES_DIR);

    // For every usable vector whose last action changes the state, folding without that
    // action must be reported as a mismatch against `expected`.
    let mut checked = 0;
    for entry in compat.entries.iter().filter(|e| e.status.usable()) {
        let path = cases.join(&entry.file);
        let vector = load_vector(&path).expect("usable vector must load");
        let actions = decode_actions(&vector.actions).expect("usable vector's actions decode");
        let Some((_, prefix)) = actions.split_last() else {
            continue; // no actions at all
        };
        let full = entry
            .reducer
            .fold(&vector.initial, &actions)
            .expect("full fold succeeds");
        let truncated = entry
            .reducer
            .fold(&vector.initial, prefix)
            .expect("truncated fold succeeds");
        if normalise(&full.state) == normalise(&truncated.state) {
            // The last action is a no-op here (e.g. a stale event); nothing to detect.
            continue;
        }
        let diff = compare_states(&vector.expected, &truncated.state, entry.status);
        assert!(
            diff.is_some(),
            "{}: leaving out the last action still compared equal",
            entry.file
        );
        checked += 1;
    }
    assert!(
        checked > 0,
        "no vector was usable for the negative self-test"
    );
}

#[test]
fn comparison_reports_first_differing_member() {
    let expected = serde_json::json!({
        "a": 1,
        "gone": null,
        "list": [{"x": "same"}, {"x/y": "old"}],
        "modifiedAt": "t1"
    });
    let actual = serde_json::json!({
        "a": 1.0,
        "list": [{"x": "same"}, {"x/y": "new"}],
        "modifiedAt": "t2",
        "extra": null
    });
    let diff = compare_states(&expected, &actual, Status::Pass).expect("must differ");
    assert_eq!(diff.pointer, "/list/1/x~1y");
    assert_eq!(diff.expected, Some(Value::from("old")));
    assert_eq!(diff.actual, Some(Value::from("new")));

    // A missing array element is reported at its index.
    let diff = first_difference(&serde_json::json!([1, 2]), &serde_json::json!([1]))
        .expect("length differs");
    assert_eq!(diff.pointer, "/1");
    assert_eq!(diff.actual, None);

    // modifiedAt values are ignored only under pass-except-modifiedAt, presence is not.
    let just_time = |t: &str| serde_json::json!({"modifiedAt": t});
    assert!(compare_states(&just_time("a"), &just_time("b"), Status::Pass).is_some());
    assert!(compare_states(
        &just_time("a"),
        &just_time("b"),
        Status::PassExceptModifiedAt
    )
    .is_none());
    assert!(compare_states(
        &just_time("a"),
        &serde_json::json!({}),
        Status::PassExceptModifiedAt
    )
    .is_some());
}

#[test]
fn missing_data_is_an_error_not_a_pass() {
    let nowhere = Path::new(env!("CARGO_MANIFEST_DIR")).join("no-such-upstream-dir");
    assert!(run_reducer_vectors(&nowhere).is_err());
    assert!(run_round_trip_vectors(&nowhere).is_err());
}
