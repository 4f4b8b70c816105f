//! The whole catalog against the built-in reference host: every case must pass (but the few
//! rightly not applicable to it, tests/common/builtin.rs), with the
//! scripted profile and with the profile whose scripts give no ids (the agent then makes up
//! random ones, as real agents do). Cases whose requirement allows more than one conforming
//! answer pass each answer.

#[path = "common/allocator.rs"]
mod allocator;

use std::path::{Path, PathBuf};

#[path = "common/builtin.rs"]
mod builtin;

use ahpspec::catalog::Selection;
use ahpspec::certify::{certify, Options};
use ahpspec::host::variants::{AutoConfirmed, Variants};
use ahpspec::host::{self, HostConfig};
use ahpspec::rows::Quiet;
use ahpspec::verdict::{RunReport, Verdict};

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

async fn run(options: &Options) -> RunReport {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    certify(options, &mut Quiet, rx)
        .await
        .expect("harness starts")
}

/// Every case of the report passed; otherwise the failures with their first finding.
fn assert_all_pass(report: &RunReport) {
    let mut problems = Vec::new();
    for case in &report.cases {
        let expected = builtin::expected_verdict(&case.info.id);
        if case.verdict != expected {
            let finding = case
                .findings
                .first()
                .map(|f| {
                    format!(
                        "\n      expected: {}\n      actual:   {}\n      at {:?}",
                        f.expected, f.actual, f.step
                    )
                })
                .unwrap_or_default();
            problems.push(format!(
                "{} [{}] {}{}",
                case.info.id,
                case.verdict.as_str(),
                case.summary,
                finding
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} cases did not pass:\n{}",
        problems.len(),
        report.cases.len(),
        problems.join("\n")
    );
}

/// Whether some received frame of `case` contains `text`.
fn received(report: &RunReport, case: &str, text: &str) -> bool {
    report
        .cases
        .iter()
        .filter(|c| c.info.id == case)
        .flat_map(|c| &c.transcript)
        .any(|frame| frame.direction == "received" && frame.text.contains(text))
}

fn only(ids: &[&str]) -> Selection {
    Selection {
        filter: ids.iter().map(|id| (*id).to_owned()).collect(),
        ..Selection::default()
    }
}

#[tokio::test]
async fn every_case_passes_against_the_reference_host() {
    let report = run(&Options::default()).await;
    assert_all_pass(&report);
    assert!(report.cases.len() >= 10);
}

/// No case depends on an id the server's agent chooses: with scripts that name no tool
/// call, option, request or question, the built-in agent makes up random ids, and the
/// cases must learn them from the stream.
#[tokio::test]
async fn every_case_passes_when_the_agent_picks_random_ids() {
    let profile = crate_root().join("profiles/ahpspec-random-ids.toml");
    let report = run(&Options {
        profile: Some(profile),
        ..Options::default()
    })
    .await;
    assert_all_pass(&report);
    assert!(report.cases.len() >= 10);
    // The ids really were the agent's own: none of the scripted profile's.
    for case in &report.cases {
        for frame in case.transcript.iter().filter(|f| f.direction == "received") {
            assert!(
                !frame.text.contains("\"tc-1\"") && !frame.text.contains("\"r-1\""),
                "{}: a scripted id in {}",
                case.info.id,
                frame.text
            );
        }
    }
    assert!(received(&report, "TOOL-003", "\"toolCallId\":\"call_"));
    assert!(received(&report, "INPUT-003", "\"id\":\"q_"));
}

/// A host whose replay buffer holds nothing answers every `reconnect` with the snapshot
/// form, which the protocol allows as much as the replay form.
#[tokio::test]
async fn reconnect_cases_accept_the_snapshot_form() {
    let host = host::spawn(HostConfig {
        replay_capacity: 0,
        ..HostConfig::default()
    })
    .await
    .expect("host starts");
    let report = run(&Options {
        url: Some(host.url().to_owned()),
        selection: only(&["RECONNECT-002", "RECONNECT-004"]),
        ..Options::default()
    })
    .await;
    host.shutdown().await;
    assert_eq!(report.cases.len(), 2);
    assert_all_pass(&report);
    for case in ["RECONNECT-002", "RECONNECT-004"] {
        assert!(
            received(&report, case, "\"type\":\"snapshot\""),
            "{case} got no snapshot-form answer"
        );
    }
}

/// `view.turns` is advisory: a host that answers with every turn is conforming. The cases
/// about windows then have nothing to look at (not applicable, never a failure or a pass),
/// and TURN-010 fetches without a cursor.
#[tokio::test]
async fn window_cases_accept_a_host_that_ignores_views() {
    let host = host::spawn(HostConfig {
        turn_windows: false,
        ..HostConfig::default()
    })
    .await
    .expect("host starts");
    let report = run(&Options {
        url: Some(host.url().to_owned()),
        selection: only(&["SUB-008", "TURN-010", "TURN-011", "TURN-013"]),
        ..Options::default()
    })
    .await;
    host.shutdown().await;
    let mut verdicts: Vec<(&str, Verdict)> = report
        .cases
        .iter()
        .map(|c| (c.info.id.as_str(), c.verdict))
        .collect();
    verdicts.sort_by_key(|(id, _)| *id);
    assert_eq!(
        verdicts,
        [
            ("SUB-008", Verdict::NotApplicable),
            ("TURN-010", Verdict::Pass),
            ("TURN-011", Verdict::NotApplicable),
            ("TURN-013", Verdict::NotApplicable),
        ],
        "{:#?}",
        report
            .cases
            .iter()
            .map(|c| format!("{}: {}", c.info.id, c.summary))
            .collect::<Vec<_>>()
    );
}

/// LIFECYCLE-006 allows a session whose creation fails (`session/creationFailed`) as much
/// as a -32002 error: the case runs against a provider the built-in host fails that way.
#[tokio::test]
async fn lifecycle_006_accepts_a_creation_that_fails() {
    let dir = std::env::temp_dir().join(format!("ahpspec-lifecycle-006-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let suite = std::fs::read_to_string(crate_root().join("suites/lifecycle.toml"))
        .expect("lifecycle suite");
    let failing = suite.replace(
        "provider = \"no-such-agent\"",
        "provider = \"ahpspec-unavailable\"",
    );
    assert_ne!(
        suite, failing,
        "LIFECYCLE-006 no longer names no-such-agent"
    );
    std::fs::write(dir.join("lifecycle.toml"), failing).expect("write suite");
    let report = run(&Options {
        suites: Some(dir.clone()),
        selection: only(&["LIFECYCLE-006"]),
        ..Options::default()
    })
    .await;
    remove(&dir);
    assert_eq!(report.cases.len(), 1);
    assert_all_pass(&report);
    assert!(received(&report, "LIFECYCLE-006", "session/creationFailed"));
}

fn remove(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs `options` against a built-in host that makes the conforming choices `variants`,
/// with the short client grace period the built-in target uses (RECONNECT-009).
async fn run_against(variants: Variants, options: Options) -> RunReport {
    let host = host::spawn(HostConfig {
        client_grace: std::time::Duration::from_millis(300),
        variants,
        ..HostConfig::default()
    })
    .await
    .expect("host starts");
    let report = run(&Options {
        url: Some(host.url().to_owned()),
        // A URL run knows the host's workspace only when told: the resource cases need it.
        workspace: Some(host.workspace_uri()),
        ..options
    })
    .await;
    host.shutdown().await;
    report
}

/// The built-in profile with `edit` applied to its TOML table, written to a file of its
/// own (removed by the caller with `remove`).
fn profile_with(name: &str, edit: impl FnOnce(&mut toml::Table)) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("ahpspec-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(crate_root().join("profiles/ahpspec-scripted.toml"))
        .expect("built-in profile");
    let mut profile: toml::Table = toml::from_str(&text).expect("built-in profile parses");
    edit(&mut profile);
    let file = dir.join("profile.toml");
    std::fs::write(
        &file,
        toml::to_string(&profile).expect("profile serialises"),
    )
    .expect("write");
    (dir, file)
}

fn set_behaviour(profile: &mut toml::Table, name: &str, behaviour: toml::Value) {
    profile
        .get_mut("behaviours")
        .and_then(toml::Value::as_table_mut)
        .expect("behaviours")
        .insert(name.to_owned(), behaviour);
}

/// Each case's verdict, by case ID.
fn verdicts(report: &RunReport) -> std::collections::BTreeMap<String, Verdict> {
    report
        .cases
        .iter()
        .map(|c| (c.info.id.clone(), c.verdict))
        .collect()
}

/// Every case of the report passed but `exceptions`, which got the verdict named.
fn assert_all_pass_but(report: &RunReport, exceptions: &[(&str, Verdict)], what: &str) {
    let mut expected = verdicts(report);
    for (case, verdict) in expected.iter_mut() {
        *verdict = builtin::expected_verdict(case);
    }
    for (case, verdict) in exceptions {
        expected.insert((*case).to_owned(), *verdict);
    }
    let summaries: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| format!("{} [{}] {}", c.info.id, c.verdict.as_str(), c.summary))
        .collect();
    assert_eq!(verdicts(report), expected, "{what}: {summaries:#?}");
}

/// `confirmed` of an auto-approved tool call may be "not-needed", "user-action" or
/// "setting" (ToolCallConfirmationReason): hosts recording either of the other two are
/// conforming variants, and the whole catalog passes against them.
#[tokio::test]
async fn auto_confirmation_recorded_as_setting_or_user_action_passes_the_catalog() {
    for recorded in [AutoConfirmed::Setting, AutoConfirmed::UserAction] {
        let variants = Variants {
            auto_confirmed: recorded,
            ..Variants::default()
        };
        let report = run_against(variants, Options::default()).await;
        assert_all_pass(&report);
        let confirmed = format!("\"confirmed\":\"{}\"", recorded.as_str());
        assert!(
            received(&report, "TOOL-001", &confirmed),
            "TOOL-001 saw no tool call recorded {confirmed}"
        );
    }
}

/// What a tool-ask call offers beyond asking is what the profile promises: without
/// `editable` and `options` promised, TOOL-004 and TOOL-005 are not testable; promised
/// but not done by the agent, they are not testable either — never a failure of the
/// server, never a harness error. The other tool-ask cases pass.
#[tokio::test]
async fn tool_ask_cases_read_only_what_the_profile_promises() {
    let plain_ask = r#"ahpspec-script:{"steps":[{"toolCall":{"name":"write_file","input":"{\"path\":\"a.txt\"}","confirmation":"ask"}},{"markdown":{"text":"after the tool"}}]}"#;
    let tool_cases = only(&["TOOL-*", "CHAT-VALIDATE-010"]);
    // The agent's call is neither editable nor offers options, and the profile says so.
    let (dir, unpromised) = profile_with("tool-ask-unpromised", |profile| {
        set_behaviour(
            profile,
            "tool-ask",
            toml::Value::String(plain_ask.to_owned()),
        );
    });
    // The profile promises both, but the agent does neither.
    let (dir2, broken_promise) = profile_with("tool-ask-broken-promise", |profile| {
        let mut ask = toml::Table::new();
        ask.insert("message".into(), toml::Value::String(plain_ask.to_owned()));
        ask.insert(
            "promises".into(),
            toml::Value::Array(vec!["editable".into(), "options".into()]),
        );
        set_behaviour(profile, "tool-ask", toml::Value::Table(ask));
    });
    for profile in [unpromised, broken_promise] {
        let report = run(&Options {
            profile: Some(profile.clone()),
            selection: tool_cases.clone(),
            ..Options::default()
        })
        .await;
        assert_all_pass_but(
            &report,
            &[
                ("TOOL-004", Verdict::NotTestable),
                ("TOOL-005", Verdict::NotTestable),
            ],
            &profile.display().to_string(),
        );
        assert!(report.cases.len() >= 10);
    }
    remove(&dir);
    remove(&dir2);
}

/// `long` promises only that the turn runs until cancelled: a case that needs a response
/// part first (TURN-007) says so (`long.part-first`) and is not testable without it, while
/// the other long-turn cases wait for no part and pass.
#[tokio::test]
async fn long_turn_cases_wait_for_no_part_long_did_not_promise() {
    let silent_long = r#"ahpspec-script:{"steps":[{"waitForCancel":{}}]}"#;
    let long_cases = only(&[
        "TURN-001",
        "TURN-007",
        "TURN-012",
        "STATUS-003/turn",
        "PENDING-002",
        "PENDING-006",
        "CHAT-VALIDATE-013",
    ]);
    let (dir, unpromised) = profile_with("long-unpromised", |profile| {
        set_behaviour(profile, "long", toml::Value::String(silent_long.to_owned()));
    });
    let (dir2, broken_promise) = profile_with("long-broken-promise", |profile| {
        let mut long = toml::Table::new();
        long.insert(
            "message".into(),
            toml::Value::String(silent_long.to_owned()),
        );
        long.insert(
            "promises".into(),
            toml::Value::Array(vec!["part-first".into()]),
        );
        set_behaviour(profile, "long", toml::Value::Table(long));
    });
    for profile in [unpromised, broken_promise] {
        let report = run(&Options {
            profile: Some(profile.clone()),
            selection: long_cases.clone(),
            // A long turn that streams nothing is waited for only by TURN-007's part.
            timeout: std::time::Duration::from_secs(2),
            ..Options::default()
        })
        .await;
        assert_all_pass_but(
            &report,
            &[("TURN-007", Verdict::NotTestable)],
            &profile.display().to_string(),
        );
        assert_eq!(report.cases.len(), 7);
    }
    remove(&dir);
    remove(&dir2);
}

/// A host may refuse working directories it does not know (-32602): the cases that create
/// sessions in directories take them from the target profile, so with a profile naming
/// two the host knows the whole catalog passes; with a profile naming none they are not
/// testable.
#[tokio::test]
async fn a_host_that_refuses_unknown_directories_passes_with_the_profiles_directories() {
    let known = ["file:///srv/known-a", "file:///srv/known-b"];
    let variants = || Variants {
        known_directories: Some(known.iter().map(|d| (*d).to_owned()).collect()),
        ..Variants::default()
    };
    let (dir, knowing) = profile_with("known-directories", |profile| {
        profile.insert(
            "working_directories".into(),
            toml::Value::Array(known.iter().map(|d| (*d).into()).collect()),
        );
    });
    let report = run_against(
        variants(),
        Options {
            profile: Some(knowing),
            ..Options::default()
        },
    )
    .await;
    assert_all_pass(&report);
    let directory_cases = ["CHAT-007", "CHAT-VALIDATE-011", "CHAT-MOVE-001"];
    for case in directory_cases {
        assert!(
            report.cases.iter().any(|c| c.info.id == case),
            "{case} did not run"
        );
    }
    let (dir2, without) = profile_with("no-directories", |profile| {
        profile.remove("working_directories");
    });
    let report = run_against(
        variants(),
        Options {
            profile: Some(without),
            selection: only(&directory_cases),
            ..Options::default()
        },
    )
    .await;
    assert_all_pass_but(
        &report,
        &directory_cases.map(|case| (case, Verdict::NotTestable)),
        "a profile without working directories",
    );
    // The selection names rules, so their sub-cases run too (CHAT-MOVE-001/destination,
    // which needs no directory and passes); each directory case ran once.
    for case in directory_cases {
        let runs = report.cases.iter().filter(|c| c.info.id == case).count();
        assert_eq!(runs, 1, "{case} ran {runs} times");
    }
    remove(&dir);
    remove(&dir2);
}

/// "An unknown turnId changes nothing": a host that rejects such a truncation changes
/// nothing either, and TURN-012 passes it.
#[tokio::test]
async fn a_rejected_unknown_truncation_changes_nothing() {
    let variants = Variants {
        rejects_unknown_truncation: true,
        ..Variants::default()
    };
    let report = run_against(
        variants,
        Options {
            selection: only(&["TURN-*", "PENDING-*"]),
            ..Options::default()
        },
    )
    .await;
    assert_all_pass(&report);
    assert!(received(
        &report,
        "TURN-012",
        "\"rejectionReason\":\"turnId names no turn of this chat\""
    ));
}

/// `SessionSummary.chats` is optional: a host whose summaries carry no chats list has no
/// chats[].status to project a chat's status into, and CHAT-005 does not apply to it.
#[tokio::test]
async fn chat_status_projection_does_not_apply_without_summary_chats() {
    let variants = Variants {
        summaries_without_chats: true,
        ..Variants::default()
    };
    let report = run_against(
        variants,
        Options {
            selection: only(&["CHAT-*"]),
            ..Options::default()
        },
    )
    .await;
    assert_all_pass_but(
        &report,
        &[("CHAT-005", Verdict::NotApplicable)],
        "summaries without chats",
    );
}

/// The host watches its workspace for automations' event triggers only while an automation
/// whose triggers are live has one. AUTOMATION-016 creates such an automation (its pass
/// shows the watch fired), disables it and removes it: afterwards nothing is watched.
#[tokio::test]
async fn the_workspace_is_watched_for_events_only_while_an_automation_listens() {
    let host = host::spawn(HostConfig::default())
        .await
        .expect("host starts");
    assert!(!host.watches_for_events(), "watched before any automation");
    let report = run(&Options {
        url: Some(host.url().to_owned()),
        workspace: Some(host.workspace_uri()),
        selection: only(&["AUTOMATION-016"]),
        ..Options::default()
    })
    .await;
    let watched = host.watches_for_events();
    host.shutdown().await;
    assert_all_pass(&report);
    assert_eq!(report.cases.len(), 1);
    assert!(
        !watched,
        "the workspace is still watched after the last listening automation went"
    );
}
