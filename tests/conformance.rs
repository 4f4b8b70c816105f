//! The whole catalog against the built-in reference host: every case must pass, with the
//! scripted profile and with the profile whose scripts give no ids (the agent then makes up
//! random ones, as real agents do). Cases whose requirement allows more than one conforming
//! answer pass each answer.

use std::path::{Path, PathBuf};

use ahpspec::certify::{certify, Options};
use ahpspec::engine::{Quiet, Selection};
use ahpspec::host::{self, HostConfig};
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
        if case.verdict != Verdict::Pass {
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
