//! One catalog run against the built-in host reaches every command and action type of
//! issue 25's terminals / configuration / telemetry part (helper i25b): counted from the run's
//! recorded frames, each command answered successfully at least once, each error path the
//! brief names taken, each action type of the part's channels and each of its notifications
//! seen from the host.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ahpspec::capture::{Payload, Peer};
use serde_json::Value;

mod run_support;
use run_support::{recorded_catalog_run, TempDir};

/// The part's commands, each to be answered with a result at least once.
const COMMANDS: &[&str] = &[
    "createTerminal",
    "disposeTerminal",
    "resolveSessionConfig",
    "sessionConfigCompletions",
    "completions",
];

/// (command, error code) pairs the brief names, each to be answered at least once.
const ERROR_PATHS: &[(&str, i64)] = &[];

/// The part's action types, each to arrive from the host at least once.
const ACTION_TYPES: &[&str] = &[
    "root/configChanged",
    "root/terminalsChanged",
    "terminal/data",
    "terminal/input",
    "terminal/resized",
    "terminal/claimed",
    "terminal/titleChanged",
    "terminal/cwdChanged",
    "terminal/exited",
    "terminal/cleared",
    "terminal/commandExecuted",
    "terminal/commandFinished",
    "terminal/commandDetectionAvailable",
];

/// The part's host notifications (the telemetry channel's), each to arrive at least once.
const NOTIFICATIONS: &[&str] = &["otlp/exportLogs"];

/// What one catalog run's frames show: successes and errors by method, action types, the
/// methods of the host's other notifications.
#[derive(Debug, Default)]
struct Reach {
    answered: BTreeMap<String, usize>,
    errors: BTreeSet<(String, i64)>,
    actions: BTreeSet<String>,
    notifications: BTreeSet<String>,
}

fn reach_of(capture: &std::path::Path) -> Reach {
    let mut reach = Reach::default();
    // (connection, request id) → method, for the answers.
    let mut asked: HashMap<(String, String), String> = HashMap::new();
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
                    asked.insert(key(id), method.to_owned());
                }
            }
            Some(Peer::Server) => {
                if message["method"] == "action" {
                    let envelope = &message["params"];
                    if envelope.get("rejectionReason").is_none() {
                        if let Some(kind) = envelope["action"]["type"].as_str() {
                            reach.actions.insert(kind.to_owned());
                        }
                    }
                    return;
                }
                if let (Some(method), None) = (message["method"].as_str(), message.get("id")) {
                    reach.notifications.insert(method.to_owned());
                    return;
                }
                let Some(method) = message.get("id").and_then(|id| asked.get(&key(id))) else {
                    return;
                };
                if message.get("result").is_some() {
                    *reach.answered.entry(method.clone()).or_insert(0) += 1;
                } else if let Some(code) = message["error"]["code"].as_i64() {
                    reach.errors.insert((method.clone(), code));
                }
            }
            None => {}
        }
    })
    .expect("capture read");
    reach
}

/// The names of `wanted` that `seen` lacks.
fn missing<'a>(wanted: &[&'a str], seen: &BTreeSet<String>) -> Vec<&'a str> {
    wanted
        .iter()
        .copied()
        .filter(|name| !seen.contains(*name))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_run_reaches_every_command_and_action_of_the_part() {
    let dir = TempDir::new("reach-25b");
    let (report, capture) = recorded_catalog_run(&dir).await;
    assert!(
        report.conforming(),
        "the catalog run does not pass: {:?}",
        report.unexpected_failures
    );
    let reach = reach_of(&capture);
    let unanswered: Vec<&str> = COMMANDS
        .iter()
        .copied()
        .filter(|method| !reach.answered.contains_key(*method))
        .collect();
    assert!(
        unanswered.is_empty(),
        "commands never answered successfully: {unanswered:?} (answered: {:?})",
        reach.answered
    );
    let untaken: Vec<&(&str, i64)> = ERROR_PATHS
        .iter()
        .filter(|(method, code)| !reach.errors.contains(&((*method).to_owned(), *code)))
        .collect();
    assert!(
        untaken.is_empty(),
        "error paths never taken: {untaken:?} (taken: {:?})",
        reach.errors
    );
    let unseen = missing(ACTION_TYPES, &reach.actions);
    assert!(unseen.is_empty(), "action types never seen: {unseen:?}");
    let unheard = missing(NOTIFICATIONS, &reach.notifications);
    assert!(unheard.is_empty(), "notifications never sent: {unheard:?}");
}
