//! One catalog run against the built-in host reaches all of AHP 1.0.0 that part 1 of "the
//! whole protocol" (issue 25) covers, counted from the run's own recorded frames:
//!
//! - every command of the official 1.0.0 schemas (`schemas/ahp/official-1.0.0`, not a list
//!   kept here) answered successfully at least once;
//! - every error path the brief (docs/ahp/PROTOCOL.md §8.1, §8.2, §9) names for part 1's
//!   commands taken, and the success paths of their options (write modes, encodings, …);
//! - every action type of the official schemas seen from the host, accepted;
//! - part 1's host notifications (telemetry, `auth/required` with both reasons).
//!
//! What belongs to part 2 (issue 29) and the host lacks is listed in one place,
//! `tests/catalog_reach/part2.toml`; an entry the run reaches is stale and fails the test too.
//! Each miss is named; one assertion reports them all.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use ahpspec::capture::{Payload, Peer};
use serde_json::Value;

mod run_support;
use run_support::{recorded_catalog_run, TempDir};

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `$defs` of one official 1.0.0 schema file.
fn official_defs(file: &str) -> serde_json::Map<String, Value> {
    let path = crate_root().join("schemas/ahp/official-1.0.0").join(file);
    let text = std::fs::read_to_string(&path).expect("official schema");
    let schema: Value = serde_json::from_str(&text).expect("official schema parses");
    schema["$defs"].as_object().cloned().expect("$defs")
}

/// The commands of 1.0.0: every `XParams` that extends `BaseParams` (a `channel` and a
/// `_meta`), named `x…`. `BaseParams` itself is the shape they share, not a command;
/// `PaginatedParams` (a mixin) has no channel, and the client notifications
/// (`dispatchAction`, `unsubscribe`) take no `_meta`.
fn schema_commands() -> BTreeSet<String> {
    official_defs("commands.schema.json")
        .iter()
        .filter(|(name, def)| {
            let members = &def["properties"];
            name.ends_with("Params")
                && *name != "BaseParams"
                && members.get("channel").is_some()
                && members.get("_meta").is_some()
        })
        .map(|(name, _)| {
            let bare = name.trim_end_matches("Params");
            let mut chars = bare.chars();
            chars
                .next()
                .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The action types of 1.0.0: the `type` constant of every `XAction` definition (the
/// official file splits `chat/toolCallConfirmed` in two definitions: one type).
fn schema_action_types() -> BTreeSet<String> {
    official_defs("actions.schema.json")
        .iter()
        .filter(|(name, _)| name.ends_with("Action"))
        .filter_map(|(_, def)| {
            def["properties"]["type"]["const"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The part 2 exclusion: (commands, action types), each with why.
fn part2() -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let text = std::fs::read_to_string(crate_root().join("tests/catalog_reach/part2.toml"))
        .expect("part2.toml");
    let table: toml::Table = toml::from_str(&text).expect("part2.toml parses");
    let section = |name: &str| -> BTreeMap<String, String> {
        table
            .get(name)
            .and_then(toml::Value::as_table)
            .map(|t| {
                t.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    (section("commands"), section("actions"))
}

/// One request of the run and its answer.
struct Exchange {
    method: String,
    params: Value,
    answer: Value,
}

impl Exchange {
    fn ok(&self) -> Option<&Value> {
        self.answer.get("result")
    }

    fn code(&self) -> Option<i64> {
        self.answer["error"]["code"].as_i64()
    }
}

/// What the run's frames show: every answered request, the accepted action types, and the
/// host's other notifications as (method, reason).
#[derive(Default)]
struct Reach {
    exchanges: Vec<Exchange>,
    actions: BTreeSet<String>,
    notifications: BTreeSet<(String, Option<String>)>,
}

fn reach_of(capture: &Path) -> Reach {
    let mut reach = Reach::default();
    let mut asked: HashMap<(String, String), (String, Value)> = HashMap::new();
    ahpspec::capture::read(capture, |record| {
        let Payload::Text(text) = &record.payload else {
            return;
        };
        let Ok(message) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let key = |id: &Value| (record.conn.clone(), id.to_string());
        match record.from {
            Some(Peer::Client) => {
                if let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) {
                    asked.insert(key(id), (method.to_owned(), message["params"].clone()));
                }
            }
            Some(Peer::Server) => {
                if message["method"] == "action" {
                    let envelope = &message["params"];
                    if envelope.get("rejectionReason").is_none_or(Value::is_null) {
                        if let Some(kind) = envelope["action"]["type"].as_str() {
                            reach.actions.insert(kind.to_owned());
                        }
                    }
                } else if let (Some(method), None) = (message["method"].as_str(), message.get("id"))
                {
                    let reason = message["params"]["reason"].as_str().map(str::to_owned);
                    reach.notifications.insert((method.to_owned(), reason));
                } else if let Some((method, params)) =
                    message.get("id").and_then(|id| asked.remove(&key(id)))
                {
                    reach.exchanges.push(Exchange {
                        method,
                        params,
                        answer: message,
                    });
                }
            }
            None => {}
        }
    })
    .expect("capture read");
    reach
}

type Pick = dyn Fn(&Exchange) -> bool;

/// The success paths of part 1's commands the brief names beyond "answered once": (what,
/// which answered request shows it).
fn success_paths() -> Vec<(&'static str, Box<Pick>)> {
    let ok = |method: &'static str, pick: fn(&Value, &Value) -> bool| -> Box<Pick> {
        Box::new(move |e: &Exchange| {
            e.method == method && e.ok().is_some_and(|r| pick(&e.params, r))
        })
    };
    vec![
        (
            "resourceWrite mode truncate",
            ok("resourceWrite", |p, _| p["mode"] == "truncate"),
        ),
        (
            "resourceWrite mode append",
            ok("resourceWrite", |p, _| p["mode"] == "append"),
        ),
        (
            "resourceWrite mode insert",
            ok("resourceWrite", |p, _| p["mode"] == "insert"),
        ),
        (
            "resourceWrite createOnly creating a file",
            ok("resourceWrite", |p, _| p["createOnly"] == true),
        ),
        (
            "resourceWrite with a current ifMatch",
            ok("resourceWrite", |p, _| p.get("ifMatch").is_some()),
        ),
        (
            "resourceDelete recursive",
            ok("resourceDelete", |p, _| p["recursive"] == true),
        ),
        (
            "resourceRead answered in base64",
            ok("resourceRead", |_, r| r["encoding"] == "base64"),
        ),
        (
            "resourceRead answered in utf-8",
            ok("resourceRead", |_, r| r["encoding"] == "utf-8"),
        ),
        (
            "resourceRead falling back from utf-8 to base64",
            ok("resourceRead", |p, r| {
                p["encoding"] == "utf-8" && r["encoding"] == "base64"
            }),
        ),
        (
            "resourceResolve of a file",
            ok("resourceResolve", |_, r| r["type"] == "file"),
        ),
        (
            "resourceResolve of a directory",
            ok("resourceResolve", |_, r| r["type"] == "directory"),
        ),
        (
            "createResourceWatch recursive",
            ok("createResourceWatch", |p, _| p["recursive"] == true),
        ),
        (
            "createResourceWatch with includes",
            ok("createResourceWatch", |p, _| p.get("includes").is_some()),
        ),
        (
            "createResourceWatch with excludes",
            ok("createResourceWatch", |p, _| p.get("excludes").is_some()),
        ),
        (
            "authenticate with expiresIn",
            ok("authenticate", |p, _| p.get("expiresIn").is_some()),
        ),
        (
            "createSession of an agent that needs a token, once authenticated",
            ok("createSession", |p, _| p["provider"] == "ahpspec-protected"),
        ),
    ]
}

/// The error paths the brief names for part 1's commands: (what, which answer shows it).
fn error_paths() -> Vec<(&'static str, Box<Pick>)> {
    let refused =
        |method: &'static str, code: Option<i64>, pick: fn(&Value, &Value) -> bool| -> Box<Pick> {
            Box::new(move |e: &Exchange| {
                e.method == method
                    && e.answer.get("error").is_some()
                    && code.is_none_or(|c| e.code() == Some(c))
                    && pick(&e.params, &e.answer["error"])
            })
        };
    let any = |_: &Value, _: &Value| true;
    vec![
        ("resourceWrite createOnly on an existing file (-32010)", refused("resourceWrite", Some(-32010), |p, _| p["createOnly"] == true)),
        ("resourceWrite with a stale ifMatch (-32011)", refused("resourceWrite", Some(-32011), |p, _| p.get("ifMatch").is_some())),
        ("resourceMkdir on a file (-32010)", refused("resourceMkdir", Some(-32010), any)),
        ("resourceResolve of a missing path (-32008)", refused("resourceResolve", Some(-32008), any)),
        ("resourceRequest denied (-32009)", refused("resourceRequest", Some(-32009), any)),
        ("resourceRead outside the workspace (-32009 with data.request)", refused("resourceRead", Some(-32009), |_, e| e["data"]["request"]["uri"].is_string())),
        ("resourceList of a file or a missing path", refused("resourceList", None, any)),
        ("resourceDelete of a non-empty directory without recursive", refused("resourceDelete", None, |p, _| p["recursive"] != true)),
        ("resourceCopy onto an existing file with failIfExists (-32010)", refused("resourceCopy", Some(-32010), |p, _| p["failIfExists"] == true)),
        ("resourceMove onto an existing file with failIfExists (-32010)", refused("resourceMove", Some(-32010), |p, _| p["failIfExists"] == true)),
        ("createResourceWatch denied (-32009 with data.request)", refused("createResourceWatch", Some(-32009), |_, e| e["data"]["request"]["uri"].is_string())),
        ("authenticate for an unknown resource", refused("authenticate", None, |p, _| !p["resource"].as_str().is_some_and(|r| r.ends_with(".ahpspec.test/")))),
        ("authenticate with a token the host does not accept", refused("authenticate", None, |p, _| p["resource"] == "https://agent.ahpspec.test/")),
        ("createSession of an agent that needs a token, without one (-32007 with data.resources)", refused("createSession", Some(-32007), |_, e| e["data"]["resources"][0]["resource"].is_string())),
    ]
}

/// Part 1's host notifications: (method, reason).
const NOTIFICATIONS: &[(&str, Option<&str>)] = &[
    ("otlp/exportLogs", None),
    ("auth/required", Some("required")),
    ("auth/required", Some("expired")),
];

#[test]
fn the_schema_command_list_is_the_protocols() {
    // The structural rule above against the derived index's list of commands and client
    // notifications (schemas/ahp/1.0.0/index.json, generated from the 1.0.0 crate).
    let commands = schema_commands();
    let text =
        std::fs::read_to_string(crate_root().join("schemas/ahp/1.0.0/index.json")).expect("index");
    let index: Value = serde_json::from_str(&text).expect("index parses");
    let derived = index["commands"].as_object().expect("commands");
    for method in derived.keys() {
        assert!(
            commands.contains(method),
            "{method} is no command of the official schemas"
        );
    }
    for method in index["clientNotifications"]
        .as_object()
        .expect("notifications")
        .keys()
    {
        assert!(
            !commands.contains(method),
            "{method} is a notification, not a command"
        );
    }
    for method in ["initialize", "ping", "reconnect", "subscribe"] {
        assert!(
            commands.contains(method),
            "{method} missing from {commands:?}"
        );
    }
    let derived_actions = index["actions"].as_object().expect("actions");
    let official_actions = schema_action_types();
    for kind in derived_actions.keys() {
        assert!(
            official_actions.contains(kind),
            "{kind} is no action type of the official schemas"
        );
    }
    assert_eq!(
        official_actions.len(),
        derived_actions.len(),
        "{official_actions:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_catalog_run_reaches_every_command_error_path_and_action_type() {
    let dir = TempDir::new("catalog-reach");
    let (report, capture) = recorded_catalog_run(&dir).await;
    assert!(
        report.conforming(),
        "the catalog run does not pass: {:?}",
        report.unexpected_failures
    );
    let reach = reach_of(&capture);
    let commands = schema_commands();
    let action_types = schema_action_types();
    let (part2_commands, part2_actions) = part2();
    let mut missing: Vec<String> = Vec::new();

    let answered = |method: &str| {
        reach
            .exchanges
            .iter()
            .any(|e| e.method == method && e.ok().is_some())
    };
    for method in &commands {
        match (answered(method), part2_commands.contains_key(method)) {
            (false, false) => missing.push(format!("command {method} answered successfully")),
            (true, true) => missing.push(format!(
                "part2.toml lists command {method}, which the run answered: remove it"
            )),
            _ => {}
        }
    }
    for method in part2_commands.keys() {
        if !commands.contains(method) {
            missing.push(format!("part2.toml lists {method}, no command of 1.0.0"));
        }
    }
    for (what, pick) in success_paths().into_iter().chain(error_paths()) {
        if !reach.exchanges.iter().any(&pick) {
            missing.push(what.to_owned());
        }
    }
    for kind in &action_types {
        match (
            reach.actions.contains(kind),
            part2_actions.contains_key(kind),
        ) {
            (false, false) => missing.push(format!("action {kind} seen from the host")),
            (true, true) => missing.push(format!(
                "part2.toml lists action {kind}, which the run saw: remove it"
            )),
            _ => {}
        }
    }
    for kind in part2_actions.keys() {
        if !action_types.contains(kind) {
            missing.push(format!("part2.toml lists {kind}, no action type of 1.0.0"));
        }
    }
    for (method, reason) in NOTIFICATIONS {
        let heard = reach
            .notifications
            .iter()
            .any(|(m, r)| m == method && r.as_deref() == *reason);
        if !heard {
            missing.push(format!("notification {method} (reason {reason:?})"));
        }
    }
    assert!(
        missing.is_empty(),
        "the catalog run never took ({} of {} commands and {} of {} action types are part 2's):\n  {}",
        part2_commands.len(),
        commands.len(),
        part2_actions.len(),
        action_types.len(),
        missing.join("\n  ")
    );
}
